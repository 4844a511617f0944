"""larder behind every web server it ships a config for (frontends.py):
nginx, lighttpd (FastCGI and CGI), Apache mod_fcgid, Apache mod_proxy_fcgi,
and Apache CGI with the shared-hosting .htaccess.

Each test gets its own stand-in upstream and front end in a fresh directory
(frontends.new_workdir(): under /tmp, reachable by www-data, removed after
the test; the logs are copied to the test's tmp dir first) on free ports.
pip runs with --no-cache-dir from fresh virtualenvs: copies of one made per
module by `python3 -m venv`, with their scripts pointed at their new place
(a copy takes 0.1 s, `venv` 4 s), so ten installs at once stay cheap.
"""

import concurrent.futures
import hashlib
import os
import shutil
import socket
import struct
import time

import pytest

import frontends
import stack as stackmod
from stack import wait_for
import wheels
from stack import PIP_ACCEPT, http, raw_request

A11 = "larder_demo_a-1.1-py3-none-any.whl"
B10 = "larder_demo.b-1.0-py3-none-any.whl"
C20 = "larder_demo_c-2.0-py3-none-any.whl"
BIG = "larder_demo_big-1.0-py3-none-any.whl"
NEEDED = (A11, B10, C20)
INSTALLED = {"larder-demo-a": "1.1", "larder-demo-b": "1.0", "larder-demo-c": "2.0"}

BIG_MB = 1
BIG_RATE = 160 * 1024            # bytes/s: the big file takes ~6 s upstream
BURST = 10

ALL = frontends.KINDS
CGI = frontends.CGI_KINDS
BURST_KINDS = ("nginx", "lighttpd-fcgi", "apache-fcgid")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_path(d, filename=None):
    return "/root/pypi/files/%s/%s" % (d["sha256"], filename or d["filename"])



# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def fe_wheels(tmp_path_factory):
    """The default wheels plus a BIG_MB MiB one: (dir, {filename: info})."""
    d = str(tmp_path_factory.mktemp("fe-wheels"))
    wheels.build_default(d)
    wheels.build_big(d, BIG_MB)
    info = {}
    for fn in os.listdir(d):
        if fn.endswith((".whl", ".tar.gz")):
            with open(os.path.join(d, fn), "rb") as f:
                data = f.read()
            info[fn] = {"filename": fn, "sha256": sha256(data), "size": len(data),
                        "data": data}
    return d, info


@pytest.fixture(scope="module")
def template_venv(tmp_path_factory):
    return stackmod.make_venv(str(tmp_path_factory.mktemp("fe-venv") / "template"))



class Env:
    """One test's stand-in and front end."""

    def __init__(self, kind, workdir, tmp_path, wheels_dir, dists, template):
        self.kind = kind
        self.workdir = workdir
        self.tmp_path = tmp_path
        self.dists = dists
        self.template = template
        self.standin = stackmod.Standin(wheels_dir, os.path.join(workdir, "standin"))
        self.fe = None
        self.nvenv = 0

    def start(self):
        self.standin.start()
        self.fe = frontends.make_frontend(self.kind, os.path.join(self.workdir, "fe"),
                                          self.standin.port,
                                          files_port=self.standin.files_port)
        self.fe.start()
        return self

    def stop(self):
        if self.fe is not None:
            self.fe.stop()
        self.standin.stop()

    def venv(self):
        self.nvenv += 1
        return stackmod.clone_venv(self.template, str(self.tmp_path / ("venv%d" % self.nvenv)))

    def get(self, path, headers=None, accept=None):
        h = dict(headers or {})
        if accept:
            h["Accept"] = accept
        return http(self.fe.base + path, headers=h)

    def logs(self):
        text = self.fe.log_text() if self.fe is not None else ""
        return text + "\n--- stand-in ---\n" + frontends._read(self.standin.log)

    def keep_logs(self):
        """Copies the small text files of the workdir (configs, logs) to
        the test's tmp dir, which pytest keeps for a while."""
        dst = self.tmp_path / "frontend"
        skip = {"blobs", "tmp", "bin", "sockets", "run", "fcgid"}
        for root, dirs, files in os.walk(self.workdir):
            dirs[:] = [d for d in dirs if d not in skip]
            for n in files:
                p = os.path.join(root, n)
                if n == "larder.cgi" or n.startswith("larder.db") or os.path.islink(p):
                    continue
                try:
                    if os.path.getsize(p) > (1 << 20):
                        continue
                    rel = os.path.relpath(p, self.workdir)
                    os.makedirs(os.path.dirname(str(dst / rel)), exist_ok=True)
                    shutil.copyfile(p, str(dst / rel))
                except OSError:
                    pass


class _LogsOnFailure:
    """Attaches the front end's and larder's logs to a failed test's report
    (conftest.py does the same for its `stack` fixture)."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if rep.when != "call" or not rep.failed:
            return
        env = getattr(item, "funcargs", {}).get("fe_env")
        if isinstance(env, Env):
            lines = env.logs().splitlines()
            rep.sections.append(("%s logs" % env.kind, "\n".join(lines[-200:])))


@pytest.fixture(scope="module", autouse=True)
def _attach_logs(request):
    pm = request.config.pluginmanager
    if not pm.has_plugin("larder-frontend-logs"):
        pm.register(_LogsOnFailure(), "larder-frontend-logs")
    yield


@pytest.fixture
def fe_env(request, tmp_path, fe_wheels, template_venv):
    """Parametrised indirectly with a front-end kind."""
    kind = request.param
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    workdir = frontends.new_workdir()
    env = Env(kind, workdir, tmp_path, fe_wheels[0], fe_wheels[1], template_venv)
    try:
        env.start()
        yield env
    finally:
        try:
            env.stop()
        finally:
            env.keep_logs()
            shutil.rmtree(workdir, ignore_errors=True)


def kinds(names):
    return pytest.mark.parametrize("fe_env", names, indirect=True)


def page_and_file_counts(counters):
    pages = {k: v for k, v in counters["requests"].items() if k.startswith("GET /simple/")}
    return pages, counters["files"], counters["metadata"]


# ---------------------------------------------------------------- (a) pip

@kinds(ALL)
def test_pip_cold_then_warm(fe_env):
    env, fe = fe_env, fe_env.fe
    venv = env.venv()
    rc, out = stackmod.pip_install(venv, fe.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED
    # every download went through the front end
    assert "localhost:%d" % env.standin.files_port not in out, out
    cold = env.standin.counters()
    for fn in NEEDED:
        assert cold["files"].get(fn) == 1, cold
    assert stackmod.bad_blobs(fe.data_dir) == []

    venv = env.venv()
    rc, out = stackmod.pip_install(venv, fe.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED
    warm = env.standin.counters()
    assert warm["files"] == cold["files"], (cold, warm)
    assert warm["metadata"] == cold["metadata"], (cold, warm)
    assert page_and_file_counts(warm)[0] == page_and_file_counts(cold)[0], (cold, warm)

    # A warm file is a hit the web server ships (X-Sendfile,
    # X-Accel-Redirect) or larder streams: whole, and by Range.
    d = env.dists[A11]
    r = env.get(file_path(d))
    assert r.status == 200 and r.complete, r
    assert len(r.body) == d["size"] and sha256(r.body) == d["sha256"], r
    assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)
    assert r.header("ETag") == '"%s"' % d["sha256"], dict(r.headers)
    for h in ("X-Sendfile", "X-Accel-Redirect", "X-Lighttpd-Send-File"):
        assert r.header(h) is None, dict(r.headers)
    r = env.get(file_path(d), headers={"Range": "bytes=100-199"})
    assert r.status == 206, r
    assert r.body == d["data"][100:200], r
    assert r.header("Content-Range") == "bytes 100-199/%d" % d["size"], dict(r.headers)
    r = env.get(file_path(d), headers={"Range": "bytes=-10"})
    assert r.status == 206 and r.body == d["data"][-10:], r
    r = env.get(file_path(d), headers={"If-None-Match": '"%s"' % d["sha256"]})
    assert r.status == 304, r
    assert env.standin.counters()["files"] == cold["files"]


# ---------------------------------------------------------------- (b) URLs

@kinds(ALL)
def test_redirect_location(fe_env):
    env, fe = fe_env, fe_env.fe
    want = fe.base + "/root/pypi/simple/larder-demo-b/"
    for path in ("/root/pypi/simple/Larder_Demo.B/", "/root/pypi/simple/larder-demo-b"):
        r = env.get(path, accept=PIP_ACCEPT)
        assert r.status == 301, (path, r)
        assert r.header("Location") == want, (path, dict(r.headers))
    r = env.get("/root/pypi/simple/Larder_Demo.B/?format=text/html")
    assert r.status == 301, r
    assert r.header("Location") == want + "?format=text/html", dict(r.headers)
    r = env.get("/root/pypi/simple", accept=PIP_ACCEPT)
    assert r.status == 301 and r.header("Location") == fe.base + "/root/pypi/simple/", r
    # the target is served, by the index asked for
    r = env.get("/root/pypi/simple/larder-demo-b/", accept=PIP_ACCEPT)
    assert r.status == 200, r
    assert r.json()["name"] == "larder-demo-b", r.body[:200]
    r = env.get("/+health")
    assert r.status == 200 and r.body.startswith(b"ok larder"), r
    r = env.get("/nosuchindex/simple/")
    assert r.status == 404, r


@kinds(ALL)
def test_no_way_into_the_data_dir(fe_env):
    """Nothing on disk is reachable by URL: not the blobs the web server
    sends for larder, not the database, config or logs."""
    env, fe = fe_env, fe_env.fe
    d = env.dists[A11]
    assert env.get("/root/pypi/simple/larder-demo-a/", accept=PIP_ACCEPT).status == 200
    r = env.get(file_path(d))
    assert r.status == 200 and sha256(r.body) == d["sha256"], r
    rel = "blobs/sha256/%s/%s/%s" % (d["sha256"][:2], d["sha256"][2:4], d["sha256"])
    # (the client may have its verified bytes before the blob is renamed
    # into the store)
    assert wait_for(lambda: os.path.exists(os.path.join(fe.data_dir, rel)), 5)
    data_rel = os.path.relpath(fe.data_dir, fe.dir)
    probes = ["/_larder/" + rel, "/" + rel, "/%s/%s" % (data_rel, rel), "/larder.db",
              "/%s/larder.db" % data_rel, "/_larder/larder.db", "/larder.conf",
              "/fetch.log", "/.htaccess", "/larder.cgi/" + rel,
              "/root/pypi/files/%s/..%%2f..%%2flarder.db" % d["sha256"]]
    for p in probes:
        r = raw_request(fe.port, p)
        assert 400 <= r.status <= 499, (p, r, r.body[:200])
        assert d["data"][:64] not in r.body and b"SQLite format" not in r.body, p
    # the mount's root (a CGI's own URL) is larder's landing page, never
    # the script's bytes
    for p in ("/larder.cgi", "/larder.cgi/"):
        r = raw_request(fe.port, p)
        if r.status == 200:
            assert r.body.startswith(b"<!DOCTYPE html>"), (p, r.body[:100])
        else:
            assert 300 <= r.status <= 499, (p, r)


@kinds(ALL)
def test_miss_streams_through(fe_env):
    """A miss reaches the client while larder is still downloading it: the
    server passes it on (lighttpd's stream-response-body, mod_proxy_fcgi's
    flushpackets) instead of holding the whole body first."""
    env, fe = fe_env, fe_env.fe
    d = env.dists[BIG]
    assert env.get("/root/pypi/simple/larder-demo-big/", accept=PIP_ACCEPT).status == 200
    rate = 2 * BIG_RATE
    upstream_time = d["size"] / rate
    env.standin.control(rate=rate)
    t0 = time.monotonic()
    first = None
    got = b""
    with socket.create_connection(("127.0.0.1", fe.port), timeout=30) as s:
        s.sendall(("GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n"
                   % (file_path(d), fe.port)).encode())
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            got += chunk
            if first is None and len(got.partition(b"\r\n\r\n")[2]) > 0:
                first = time.monotonic() - t0
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") or head.startswith(b"HTTP/1.0 200"), head
    assert sha256(body) == d["sha256"], (len(body), head)
    assert first is not None and first < upstream_time / 2, \
        "first byte after %.1f s of a %.1f s upstream transfer" % (first, upstream_time)
    assert env.standin.counters()["files"].get(BIG) == 1


def _how_it_differs(body, d):
    """(length got, length of the file, first differing offsets, last bytes
    got and expected): what a wrong complete answer was made of."""
    diffs = [i for i in range(min(len(body), d["size"])) if body[i] != d["data"][i]]
    return len(body), d["size"], diffs[:5], body[-8:], d["data"][-8:]


@kinds(ALL)
def test_failed_download_ends_at_once(fe_env):
    """A download whose bytes turn out wrong once its headers are out
    (the stand-in flips bytes in the middle) reaches the client as a
    failure within a second of the upstream's last byte, on every front
    end and its transport (unix sockets, where a reset does not exist,
    included), never as a complete response."""
    env, fe = fe_env, fe_env.fe
    d = env.dists[BIG]
    assert env.get("/root/pypi/simple/larder-demo-big/", accept=PIP_ACCEPT).status == 200
    rate = 4 * BIG_RATE
    upstream_time = d["size"] / rate
    env.standin.control(rate=rate, corrupt=[BIG])
    t0 = time.monotonic()
    r = http(fe.base + file_path(d), timeout=60)
    took = time.monotonic() - t0
    assert not (r.status == 200 and r.complete), \
        (r, dict(r.headers or {}), sha256(r.body) == d["sha256"], _how_it_differs(r.body, d))
    if r.status == 200:
        assert len(r.body) < d["size"], r
    assert took < upstream_time + 1.0, \
        "the failed download ended %.1f s after a %.1f s upstream transfer" % (
            took, upstream_time)


# ---------------------------------------------------------------- (c) CGI

def cgi_pids(fe):
    """Pids of larder CGI processes of this front end (not the detached
    children that own their fetches)."""
    want = ("LARDER_CONFIG=%s" % fe.larder_conf).encode()
    owners = set(frontends.fetcher_pids(fe.data_dir))
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                environ = f.read().split(b"\0")
            with open("/proc/%s/cmdline" % name, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if want in environ and argv and int(name) not in owners:
            out.append(int(name))
    return out


@kinds(CGI)
def test_cgi_fetcher_outlives_request(fe_env):
    env, fe = fe_env, fe_env.fe
    d = env.dists[BIG]
    blob = os.path.join(fe.data_dir, "blobs", "sha256", d["sha256"][:2], d["sha256"][2:4],
                        d["sha256"])
    assert env.get("/root/pypi/simple/larder-demo-big/", accept=PIP_ACCEPT).status == 200
    env.standin.control(rate=BIG_RATE)

    # Ask for the file, take the first bytes, hang up.
    s = socket.create_connection(("127.0.0.1", fe.port), timeout=15)
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
               % (file_path(d), fe.port)).encode())
    got = b""
    while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < 1:
        chunk = s.recv(4096)
        assert chunk, "connection closed before the first byte: %r" % got
        got += chunk
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()

    # The CGI program goes; the fetcher is still at it.
    assert wait_for(lambda: not cgi_pids(fe), 15), "CGI still running: %s" % cgi_pids(fe)
    assert frontends.fetcher_pids(fe.data_dir), \
        "no fetcher left after the CGI program exited"
    assert not os.path.exists(blob), "finished before the CGI program was gone"

    # ... and finishes the download.
    assert wait_for(lambda: os.path.exists(blob), 30), "blob never committed"
    assert stackmod.sha256_file(blob) == d["sha256"]
    assert wait_for(lambda: not frontends.fetcher_pids(fe.data_dir), 10)
    assert env.standin.counters()["files"].get(BIG) == 1

    r = env.get(file_path(d))
    assert r.status == 200 and r.complete, r
    assert sha256(r.body) == d["sha256"]
    assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)
    assert env.standin.counters()["files"].get(BIG) == 1
    assert stackmod.bad_blobs(fe.data_dir) == []


# ---------------------------------------------------------------- (d) burst

@kinds(BURST_KINDS)
def test_ten_cold_installs_at_once(fe_env):
    env, fe = fe_env, fe_env.fe
    venvs = [env.venv() for _ in range(BURST)]
    with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
        results = list(pool.map(
            lambda v: stackmod.pip_install(v, fe.url, ["larder-demo-a"]), venvs))
    failed = [(i, out) for i, (rc, out) in enumerate(results) if rc != 0]
    assert not failed, "%d of %d installs failed; the first:\n%s" % (
        len(failed), BURST, failed[0][1])
    for v in venvs:
        assert stackmod.installed(v) == INSTALLED

    pages, files, metadata = page_and_file_counts(env.standin.counters())
    assert pages and all(n == 1 for n in pages.values()), pages
    for fn in NEEDED:
        assert fn in files, files
    assert all(n == 1 for n in files.values()), files
    assert all(n == 1 for n in metadata.values()), metadata
    assert stackmod.bad_blobs(fe.data_dir) == []


# ---------------------------------------------------------------- (f) recycling

@pytest.mark.parametrize("kind", BURST_KINDS)
def test_recycling_under_load_fails_nothing(kind, tmp_path, fe_wheels):
    """max_requests = 25 and 480 requests from 8 clients at once: `larder
    serve` recycles its workers (the supervisor keeps the socket, so nothing
    queued is lost), and a worker a web server spawned never exits on its
    own, since lighttpd queues connections on that worker's own socket and
    an exit would reset them (it answered 500s before). Every request is a
    200."""
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    workdir = frontends.new_workdir()
    standin = stackmod.Standin(fe_wheels[0], os.path.join(workdir, "standin"))
    fe = None
    try:
        standin.start()
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), standin.port,
                                     workers=2, larder_extra={"max_requests": 25},
                                     files_port=standin.files_port).start()
        page = "/root/pypi/simple/larder-demo-a/"
        assert http(fe.base + page, headers={"Accept": PIP_ACCEPT}).status == 200

        def client(_):
            return [http(fe.base + page, headers={"Accept": PIP_ACCEPT}).status
                    for _ in range(60)]

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            statuses = [s for batch in ex.map(client, range(8)) for s in batch]
        bad = [s for s in statuses if s != 200]
        assert not bad, "%d of %d failed: %s\n%s" % (len(bad), len(statuses),
                                                    sorted(set(bad)),
                                                    fe.log_text()[-3000:])
    finally:
        if fe is not None:
            fe.stop()
        standin.stop()
        shutil.rmtree(workdir, ignore_errors=True)
