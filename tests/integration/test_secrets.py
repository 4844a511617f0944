"""Secrets stay in: upstream credentials never become text, the files
that hold secrets are larder's alone, and a host that comes back is used
at once (issue 21, items 3, 4 and 8).

Each test runs a stack (stand-in + larder + nginx, stack.py) whose
larder.conf adds an index "corp" whose upstream carries a user and a
password in its URL, and a registry "corpreg" whose upstream does too.
The corp upstream is `AuthUpstream`, a small PEP 503 index of the test's own
that answers only requests with that user and password (HTTP Basic), and
counts them; "down" is its port with nothing listening.
"""

import base64
import hashlib
import http.server
import os
import re
import socketserver
import stat
import subprocess
import threading
import time
from urllib.parse import urljoin

import pytest

import flighthelp as fh
import stack as stackmod
from stack import PIP_ACCEPT

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")

USER, PASSWORD = "mirroruser", "s3cretpass"
REG_USER, REG_PASSWORD = "reguser", "r3gpass99"
SECRETS = (PASSWORD, REG_PASSWORD)
FILE_BYTES = b"corp-lib sdist bytes\n" * 100
FILE_NAME = "corp-lib-1.0.tar.gz"


class AuthUpstream:
    """A PEP 503 index on 127.0.0.1:port that wants HTTP Basic USER:PASSWORD:
    /simple/NAME/ lists FILE_NAME (relative link, with its sha256), and
    /files/FILE_NAME serves it; anything without the right Authorization
    is a 401. self.good and self.bad count the requests with and without
    it."""

    def __init__(self, port):
        self.port = port
        self.good = 0
        self.bad = 0
        self.server = None
        self.thread = None

    def start(self):
        up = self
        want = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
        digest = hashlib.sha256(FILE_BYTES).hexdigest()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.headers.get("Authorization") != want:
                    up.bad += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="corp"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                up.good += 1
                if self.path.startswith("/simple/"):
                    body = ('<!DOCTYPE html><html><body>'
                            '<a href="../../files/%s#sha256=%s">%s</a>'
                            '</body></html>' % (FILE_NAME, digest, FILE_NAME)).encode()
                    ctype = "text/html"
                elif self.path == "/files/" + FILE_NAME:
                    body, ctype = FILE_BYTES, "application/octet-stream"
                else:
                    body, ctype = b"not here", "text/plain"
                    self.send_response(404)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def corp_sections(port, reg_port):
    return ('\n[index "corp"]\ntype = cache\n'
            'upstream = http://%s:%s@127.0.0.1:%d/simple/\n'
            '\n[registry "corpreg"]\n'
            'upstream = http://%s:%s@127.0.0.1:%d/\n'
            'default = no\n' % (USER, PASSWORD, port, REG_USER, REG_PASSWORD, reg_port))


@pytest.fixture
def corp(tmp_path, wheel_dir):
    """(stack, AuthUpstream not started): error_ttl 60, so that only a
    probe gets a host that is back used before then."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    up = AuthUpstream(stackmod.free_port())
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir,
                        larder_extra={"error_ttl": 60, "connect_timeout": 2,
                                      "first_byte_timeout": 2, "fetch_timeout": 2,
                                      "fetch_retries": 1},
                        larder_extra_text=corp_sections(up.port, stackmod.free_port()))
    st.start()
    try:
        yield st, up
    finally:
        st.stop()
        up.stop()


def assert_no_secret(what, text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for s in SECRETS:
        assert s not in text, "%s shows a password: %s" % (what, text[:2000])


def config_check(st, conf=None):
    p = subprocess.run([st.larder.binary, "config", "check", "-c", conf or st.larder.conf],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       env=stackmod.clean_env(), timeout=30)
    return p.returncode, p.stdout.decode("utf-8", "replace")


# ================================================================ 3. credentials

def test_credentials_never_shown(corp, tmp_path):
    """Item 3: with both upstreams down, the 502s, /+status, /+stats,
    /metrics, the log and `larder config check` name the upstreams with
    their passwords masked."""
    st, up = corp
    r = st.get("/corp/simple/anything/", accept=PIP_ACCEPT)
    assert r.status == 502, r
    assert_no_secret("the 502", r.body)
    assert ("http://%s:***@127.0.0.1:%d/simple/anything/" % (USER, up.port)).encode() in r.body, \
        r.body
    # the host is remembered: the answer comes from the memory now
    r = st.get("/corp/simple/other/", accept=PIP_ACCEPT)
    assert r.status == 502, r
    assert_no_secret("the remembered 502", r.body)
    assert b"remembered" in r.body and b"/simple/other/" in r.body, r.body
    # a file listed nowhere, and the registry
    r = st.get("/v2/corpreg/lib/app/manifests/2")
    assert r.status in (502, 504), r
    assert_no_secret("the registry's error", r.body)
    r = st.get("/v2/corpreg/lib/app/manifests/3")
    assert r.status in (502, 504), r
    assert_no_secret("the registry's remembered error", r.body)

    for path in ("/+status", "/+stats", "/metrics", "/", "/+api", "/corp/"):
        r = st.get(path)
        assert r.status == 200, (path, r)
        assert_no_secret(path, r.body)
    r = st.get("/+status")
    assert b"failing" in r.body, r.body[:3000]  # the hosts are shown, masked

    log = st.larder.log_text()
    assert "127.0.0.1:%d" % up.port in log, log[-3000:]
    assert_no_secret("the log", log)
    assert_no_secret("nginx's error log", st.nginx.error_text())

    rc, out = config_check(st)
    assert rc == 0, out
    assert "upstream = http://%s:***@127.0.0.1:%d/simple/" % (USER, up.port) in out, out
    assert_no_secret("larder config check", out)
    # a config that is wrong says so without the password
    bad = str(tmp_path / "bad.conf")
    with open(st.larder.conf) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text.replace("@127.0.0.1:%d/simple/" % up.port, "@127.0.0.1:99999/simple/"))
    rc, out = config_check(st, bad)
    assert rc != 0 and "upstream" in out, out
    assert_no_secret("larder config check of a bad config", out)


def test_credentials_still_sent(corp):
    """Item 3: masked in text, the credentials still go to the upstream:
    the page and the file it lists come through larder, and nothing
    larder serves shows the password."""
    st, up = corp
    up.start()
    r = st.get("/corp/simple/corp-lib/", accept="text/html")
    assert r.status == 200, (r, st.larder.log_text()[-2000:])
    assert FILE_NAME.encode() in r.body
    assert_no_secret("the page", r.body)
    assert up.good >= 1 and up.bad == 0, (up.good, up.bad)
    href = re.search(rb'href="([^"]+)"', r.body).group(1).decode()
    url = urljoin(st.base + "/corp/simple/corp-lib/", href)
    r = stackmod.http(url.split("#")[0])
    assert r.status == 200 and r.body == FILE_BYTES, r
    assert up.bad == 0
    r = st.get("/corp/simple/corp-lib/", accept=PIP_ACCEPT)
    assert r.status == 200
    assert_no_secret("the JSON page", r.body)
    for path in ("/+status", "/+stats", "/metrics"):
        assert_no_secret(path, st.get(path).body)
    assert_no_secret("the log", st.larder.log_text())


# ================================================================ 8. a host that comes back

def test_host_back_is_used_at_once(corp):
    """Item 8: while the corp upstream is down, requests fail fast and each
    502 names its own URL, once in the log line too; once it is back, the
    first request succeeds, long before error_ttl (60 s) is out."""
    st, up = corp
    r = st.get("/corp/simple/first/", accept=PIP_ACCEPT)
    assert r.status == 502, r
    assert b"/simple/first/" in r.body
    for name in ("second", "third"):
        t0 = time.monotonic()
        r = st.get("/corp/simple/%s/" % name, accept=PIP_ACCEPT)
        took = time.monotonic() - t0
        assert r.status == 502, r
        assert took < 1.0, took  # remembered: not tried again at once
        assert ("/simple/%s/" % name).encode() in r.body, r.body
        assert b"/simple/first/" not in r.body, r.body
        assert b"remembered for" in r.body, r.body
    # a warning names its URL once
    lines = [l for l in st.larder.log_lines() if "/simple/first/" in l]
    assert lines, st.larder.log_text()[-3000:]
    for l in lines:
        assert l.count("/simple/first/") == 1, l

    # back, after the probe delay: the first request is answered
    time.sleep(2.2)
    up.start()
    t0 = time.monotonic()
    r = st.get("/corp/simple/first/", accept=PIP_ACCEPT)
    assert r.status == 200, (r, r.body[:500])
    assert time.monotonic() - t0 < 5
    # and the host is forgotten: the others too, at once
    r = st.get("/corp/simple/second/", accept=PIP_ACCEPT)
    assert r.status == 200, r
    assert b"failing" not in st.get("/+status").body


def test_one_probe_at_a_time(corp):
    """Item 8: while one request tries a host that does not answer (a
    listener that never accepts: connect succeeds, no answer), the others
    fail fast with their own URL instead of waiting on it too."""
    st, up = corp
    r = st.get("/corp/simple/a/", accept=PIP_ACCEPT)
    assert r.status == 502, r
    time.sleep(2.2)
    import socket
    silent = socket.socket()
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    silent.bind(("127.0.0.1", up.port))
    silent.listen(64)  # never accepted, never answered
    try:
        import flighthelp as fh
        readers = fh.burst([st.base + "/corp/simple/p%d/" % i for i in range(4)],
                           timeout=60, headers={"Accept": PIP_ACCEPT}, keep=True)
        ends = sorted(r.t_end for r in readers)
        for r in readers:
            assert r.status in (502, 504), r
        # one probe waits on the silent host; the others answer at once
        assert ends[2] < 1.5, ends
        bodies = [r.body for r in readers if b"remembered for" in r.body]
        assert len(bodies) >= 3, [r.body for r in readers]
        for r in readers:
            if r.status == 502:  # larder's (the probe may be nginx's 504)
                m = re.search(rb"/simple/(p\d)/", r.body)
                assert m and m.group(0) in r.url.encode(), (r.url, r.body)
    finally:
        silent.close()


# ================================================================ 4. file modes

def test_file_modes(stack):
    """Item 4: the database, its -wal and -shm (registry tokens) are 0600
    whatever the umask; a temp file (unverified bytes) is larder's alone;
    blobs are 0644 less the umask, and under the shipped unit's UMask=0027
    nothing larder makes is world-readable while blobs stay readable by
    its group (the web server reads them for X-Accel-Redirect)."""
    data = stack.data_dir

    def download(project):
        page = "/root/pypi/simple/%s/" % project
        r = stack.get(page, accept=PIP_ACCEPT)
        assert r.status == 200, r
        href = r.json()["files"][0]["url"]
        return urljoin(stack.base + page, href).split("#")[0]

    def modes():
        seen = {}
        for root, dirs, files in os.walk(data):
            for f in files + dirs:
                p = os.path.join(root, f)
                try:
                    seen[os.path.relpath(p, data)] = stat.S_IMODE(os.lstat(p).st_mode)
                except FileNotFoundError:  # a temp file published meanwhile
                    pass
        return seen

    # as the tests run larder (umask 0022)
    assert stackmod.http(download("larder-demo-a")).status == 200
    seen = modes()
    for f in ("larder.db", "larder.db-wal", "larder.db-shm"):
        assert seen.get(f) == 0o600, (f, oct(seen.get(f, 0)), seen)
    blobs = {p: m for p, m in seen.items()
             if p.startswith("blobs/") and os.path.isfile(os.path.join(data, p))}
    assert blobs and all(m == 0o644 for m in blobs.values()), blobs
    for p, m in seen.items():
        assert not m & (stat.S_IWGRP | stat.S_IWOTH), (p, oct(m))

    # a download in progress: its temp file (the one its flights row
    # names) is larder's alone. Other temp files come and go in DATA/tmp
    # (the page's gzip'd copies, made after its answer), each made 0600
    # and given the blob's mode just before it is published.
    url = download("larder-demo-c")
    stack.standin.control(faults=[{"match": url.rsplit("/", 1)[-1],
                                   "kind": "stall_body", "seconds": 3}])
    reader = threading.Thread(target=stackmod.http, args=(url,), daemon=True)
    reader.start()
    checked = []
    deadline = time.monotonic() + 15
    while not checked and time.monotonic() < deadline:
        for _, tmp, _ in fh.flights(data):
            try:
                checked.append((tmp, stat.S_IMODE(os.stat(tmp).st_mode)))
            except FileNotFoundError:  # not made yet, or published
                pass
        time.sleep(0.02)
    assert checked, "no download seen in flight"
    assert all(m == 0o600 for _, m in checked), [(t, oct(m)) for t, m in checked]
    reader.join(60)
    stack.standin.control(faults=[])

    # an old store's world-readable database is made private on start,
    # and under the unit's umask nothing is world-readable
    stack.larder.stop()
    for f in ("larder.db", "larder.db-wal", "larder.db-shm"):
        if os.path.exists(os.path.join(data, f)):
            os.chmod(os.path.join(data, f), 0o644)
    old = os.umask(0o027)
    try:
        stack.larder.start()
    finally:
        os.umask(old)
    before = set(modes())
    assert stackmod.http(download("larder-demo-b")).status == 200
    seen = modes()
    assert seen["larder.db"] == 0o600, oct(seen["larder.db"])
    new = {p: m for p, m in seen.items() if p not in before}
    assert any(p.startswith("blobs/") for p in new), new
    for p, m in new.items():
        assert not m & stat.S_IRWXO, (p, oct(m))
        if p.startswith("blobs/"):
            assert m & stat.S_IRGRP, (p, oct(m))
