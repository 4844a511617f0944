"""Signed webhooks (issue 25, docs/webhooks.md): a receiver of the test's
own (http.server in a thread) checks every delivery's signature, id and
timestamp; events of uploads, yanks, removals and registry pushes arrive in
order per index; a receiver that is down for a while gets them afterwards,
in order; a slow receiver does not slow uploads; redirects are not
followed; `larder webhook test` pings; /+status lists the tries. Behind
nginx (the stack) and lighttpd, as FastCGI (the pool's deliverer) and as
CGI (`larder webhook deliver`, as cron would run it).
"""

import hashlib
import hmac
import http.server as httpserver
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

import pytest

import frontends
import stack as stackmod
import test_oci_push as ocipush
import uploads as up
import wheels
from stack import http

SECRET = "s3cret-for-the-test"
APP = "hook-app"


class Receiver:
    """An HTTP receiver on 127.0.0.1:port that checks each POST the way
    docs/webhooks.md tells receivers to, and keeps what came, in order.
    delay: seconds it takes to answer; status: what it answers; a POST to
    /moved is answered 302 to /hook (which must never be followed)."""

    def __init__(self, secret=SECRET, port=None, delay=0.0, status=200):
        self.secret = secret.encode()
        self.port = port or stackmod.free_port()
        self.delay = delay
        self.status = status
        self.got = []           # dicts: path, headers, body, problems
        self.lock = threading.Lock()
        self.server = None

    @property
    def url(self):
        return "http://127.0.0.1:%d/hook" % self.port

    def start(self):
        rcv = self

        class Handler(httpserver.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                rcv.record(self.path, dict(self.headers), raw)
                if rcv.delay:
                    time.sleep(rcv.delay)
                if self.path == "/moved":
                    self.send_response(302)
                    self.send_header("Location", "/hook")
                else:
                    self.send_response(rcv.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = httpserver.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def record(self, path, headers, raw):
        problems = []
        want = "sha256=" + hmac.new(self.secret, raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(headers.get("X-Larder-Signature-256", ""), want):
            problems.append("bad signature")
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
            problems.append("not JSON")
        ts = headers.get("X-Larder-Timestamp", "")
        if str(body.get("timestamp")) != ts:
            problems.append("timestamp header %r, body %r" % (ts, body.get("timestamp")))
        elif abs(time.time() - int(ts)) > 300:
            problems.append("stale timestamp")
        if headers.get("X-Larder-Delivery") != body.get("id"):
            problems.append("delivery id")
        if headers.get("X-Larder-Event") != body.get("event"):
            problems.append("event header")
        with self.lock:
            self.got.append({"path": path, "headers": headers, "body": body,
                             "problems": problems, "at": time.time()})

    def bodies(self, path="/hook"):
        with self.lock:
            return [g["body"] for g in self.got if g["path"] == path]

    def wait(self, n, timeout=30, path="/hook"):
        end = time.time() + timeout
        while time.time() < end:
            if len(self.bodies(path)) >= n:
                return self.bodies(path)
            time.sleep(0.1)
        raise AssertionError("%d of %d deliveries after %ss: %r" %
                             (len(self.bodies(path)), n, timeout, self.bodies(path)))

    def assert_valid(self):
        with self.lock:
            bad = [(g["path"], g["problems"]) for g in self.got if g["problems"]]
        assert not bad, bad


def hook_conf(secret_file, rcv, name="ci", extra=""):
    return ("\n[webhook \"%s\"]\nurl = %s\nsecret_file = %s\n"
            "retry_min = 1s\nretry_max = 2s\n%s" % (name, rcv.url, secret_file, extra))


def write_secret(path, secret=SECRET):
    with open(path, "w") as f:
        f.write(secret + "\n")
    os.chmod(path, 0o644)
    return path


REGISTRY = """
[registry "open"]
type = hosted
"""


@pytest.fixture(scope="module")
def up_wheels(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("hook-wheels"))
    wheels.build_default(d)
    return d


def make_stack(tmp_path, up_wheels, rcv, extra_hooks=""):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    secret = write_secret(str(tmp_path / "secret"))
    text = up.HOSTED_CONF + REGISTRY + hook_conf(secret, rcv) + extra_hooks
    st = stackmod.Stack(str(tmp_path / "stack"), up_wheels, larder_extra_text=text,
                        root_pypi=up.ROOT_PYPI)
    st.start()
    return st


def outbox(data_dir):
    db = sqlite3.connect(os.path.join(data_dir, "larder.db"))
    try:
        return db.execute("SELECT hook, event, idx, project, version, state, attempts,"
                          " error FROM outbox ORDER BY id").fetchall()
    finally:
        db.close()


def events(bodies):
    return [(b["event"], b["index"], b["project"], b["version"]) for b in bodies]


# ------------------------------------------------------------------ tests

def test_signed_events_in_order(tmp_path, up_wheels):
    """Uploads, a yank and an unyank, a removal and a registry push each
    reach the receiver once, signed, in the order they were made; the
    push's queue is the registry's. The id is stable and unique."""
    rcv = Receiver().start()
    st = None
    try:
        st = make_stack(tmp_path, up_wheels, rcv)
        tok = up.token_add(st.larder, "root/scratch", "upload,yank,delete")
        w1 = up.build_wheel(str(tmp_path / "d1"), APP, "0.1")
        w2 = up.build_wheel(str(tmp_path / "d2"), APP, "0.2")
        for w in (w1, w2):
            r = up.upload(st.base, "root/scratch", w, tok)
            assert r.status == 200, (r, r.body[:300])
        for cmd in (("yank", "root/scratch", APP, "0.1", "--reason", "broken"),
                    ("unyank", "root/scratch", APP, "0.1"),
                    ("remove", "root/scratch", APP, "0.2")):
            p = up.larder_cli(st.larder, *cmd)
            assert p.returncode == 0, (cmd, p.stdout, p.stderr)
        ptok = ocipush.token(st, "--registry", "open", "--actions", "pull,push")
        api = ocipush.Api(st, ptok)
        config, layer = b'{"architecture":"amd64","os":"linux"}', os.urandom(3000)
        api.blob("open/app", config)
        api.blob("open/app", layer)
        m = ocipush.image_manifest(config, [layer])
        assert api.manifest("open/app", "v1", m).status == 201
        got = rcv.wait(6)
        time.sleep(1.5)  # nothing more comes: each event once
        got = rcv.bodies()
        rcv.assert_valid()
        name = APP
        scratch = [e for e in events(got) if e[1] == "root/scratch"]
        assert scratch == [("upload", "root/scratch", name, "0.1"),
                           ("upload", "root/scratch", name, "0.2"),
                           ("yank", "root/scratch", name, "0.1"),
                           ("yank", "root/scratch", name, "0.1"),
                           ("remove", "root/scratch", name, "0.2")], got
        assert [e for e in events(got) if e[1] == "open"] == [
            ("push", "open", "app", "v1")], got
        by = {(b["event"], b["version"], b.get("data", {}).get("yanked")): b for b in got}
        up1 = by[("upload", "0.1", None)]
        assert up1["data"]["filename"] == os.path.basename(w1)
        assert up1["data"]["sha256"] == hashlib.sha256(open(w1, "rb").read()).hexdigest()
        assert by[("yank", "0.1", True)]["data"]["reason"] == "broken"
        assert by[("yank", "0.1", False)]["data"]["yanked"] is False
        push = [b for b in got if b["event"] == "push"][0]
        assert push["data"]["digest"] == "sha256:" + hashlib.sha256(m).hexdigest()
        assert push["data"]["tag"] == "v1"
        ids = [b["id"] for b in got]
        assert len(set(ids)) == len(ids) and all(len(i) == 32 for i in ids)
        assert all(b["attempt"] == 1 and b["webhook"] == "ci" for b in got)
        # the rows say delivered; /+status lists them
        rows = outbox(st.data_dir)
        assert [r[5] for r in rows] == [1] * 6, rows
        page = http(st.base + "/+status")
        assert page.status == 200
        text = page.body.decode()
        assert "<h2>Webhooks</h2>" in text and "0 events waiting" in text, text[-3000:]
        assert "delivered" in text
    finally:
        if st is not None:
            st.stop()
        rcv.stop()


def test_receiver_down_then_back(tmp_path, up_wheels):
    """The receiver is down while three uploads and a yank happen: they
    wait in the outbox (tried, failing, on /+status) and arrive after it
    comes back, in order, each with its own id kept across tries."""
    rcv = Receiver()          # not started: its port refuses
    st = None
    try:
        st = make_stack(tmp_path, up_wheels, rcv)
        tok = up.token_add(st.larder, "root/scratch", "upload,yank")
        for v in ("1.0", "1.1", "1.2"):
            w = up.build_wheel(str(tmp_path / v), APP, v)
            assert up.upload(st.base, "root/scratch", w, tok).status == 200
        p = up.larder_cli(st.larder, "yank", "root/scratch", APP, "1.0")
        assert p.returncode == 0, p.stderr
        # tried and failed at least twice (retry_min 1s)
        end = time.time() + 20
        while time.time() < end:
            rows = outbox(st.data_dir)
            if rows and rows[0][6] >= 2:
                break
            time.sleep(0.2)
        rows = outbox(st.data_dir)
        assert len(rows) == 4 and all(r[5] == 0 for r in rows), rows
        assert rows[0][6] >= 2 and rows[0][7], rows
        # the later ones wait behind the first: never tried
        assert all(r[6] == 0 for r in rows[1:]), rows
        text = http(st.base + "/+status").body.decode()
        assert "4 events waiting" in text and "retrying" in text, text[-3000:]
        rcv.start()
        got = rcv.wait(4, timeout=20)
        rcv.assert_valid()
        assert events(got) == [("upload", "root/scratch", APP, "1.0"),
                               ("upload", "root/scratch", APP, "1.1"),
                               ("upload", "root/scratch", APP, "1.2"),
                               ("yank", "root/scratch", APP, "1.0")], got
        assert got[0]["attempt"] >= 3
        assert [r[5] for r in outbox(st.data_dir)] == [1] * 4
    finally:
        if st is not None:
            st.stop()
        rcv.stop()


def test_slow_receiver_does_not_slow_uploads(tmp_path, up_wheels):
    """A receiver that takes 4 s to answer: five uploads still take what
    they take without webhooks (well under one receiver delay each), and
    every event arrives afterwards."""
    delay = 4.0
    rcv = Receiver(delay=delay).start()
    st = None
    try:
        st = make_stack(tmp_path, up_wheels, rcv)
        tok = up.token_add(st.larder, "root/scratch", "upload")
        times = []
        for i in range(5):
            w = up.build_wheel(str(tmp_path / str(i)), APP, "2.%d" % i)
            t0 = time.monotonic()
            r = up.upload(st.base, "root/scratch", w, tok)
            times.append(time.monotonic() - t0)
            assert r.status == 200, r
        # the deliverer is busy with the first event for 4 s meanwhile
        assert max(times) < delay / 4, times
        got = rcv.wait(5, timeout=5 * delay + 15)
        rcv.assert_valid()
        assert [b["version"] for b in got] == ["2.%d" % i for i in range(5)]
        print("upload times (s) with a %.0f s receiver: %s" %
              (delay, ", ".join("%.3f" % t for t in times)))
    finally:
        if st is not None:
            st.stop()
        rcv.stop()


def test_redirect_not_followed_and_webhook_test(tmp_path, up_wheels):
    """`larder webhook test NAME` pings at once (exit 0) and an unknown
    name is a usage error (2); a receiver that answers 302 is a failed
    delivery, the place it points to is never asked, and the test command
    says so (exit 1); /+status shows the failure."""
    rcv = Receiver().start()
    st = None
    try:
        secret = str(tmp_path / "secret")
        moved = ("\n[webhook \"moved\"]\nurl = http://127.0.0.1:%d/moved\n"
                 "secret_file = %s\nevents = upload\nindexes = root/private\n"
                 % (rcv.port, secret))
        st = make_stack(tmp_path, up_wheels, rcv, extra_hooks=moved)
        p = up.larder_cli(st.larder, "webhook", "test", "ci")
        assert p.returncode == 0, (p.stdout, p.stderr)
        got = rcv.wait(1)
        assert got[0]["event"] == "ping" and got[0]["webhook"] == "ci", got
        p = up.larder_cli(st.larder, "webhook", "test", "nope")
        assert p.returncode == 2 and "nope" in p.stderr, p.stderr
        p = up.larder_cli(st.larder, "webhook", "test", "moved")
        assert p.returncode == 1 and "302" in p.stderr, (p.stdout, p.stderr)
        # again: the new ping is tried at once, not queued behind the
        # failed one (which is not due yet), and fails the same way
        p = up.larder_cli(st.larder, "webhook", "test", "moved")
        assert p.returncode == 1 and "302" in p.stderr, (p.stdout, p.stderr)
        time.sleep(1)
        assert len(rcv.bodies("/moved")) == 2
        assert len(rcv.bodies("/hook")) == 1, rcv.bodies("/hook")   # the first ping only
        rcv.assert_valid()
        text = http(st.base + "/+status").body.decode()
        assert "HTTP 302 (redirects are not followed)" in text, text[-3000:]
    finally:
        if st is not None:
            st.stop()
        rcv.stop()


@pytest.mark.parametrize("kind", ("lighttpd-fcgi", "lighttpd-cgi"))
def test_behind_lighttpd(kind, tmp_path, up_wheels):
    """Behind lighttpd: as FastCGI the pool lighttpd spawns delivers on its
    own; as CGI nothing runs between requests, so the events wait until
    `larder webhook deliver` (cron's job) sends them, and a second run has
    nothing to send."""
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    rcv = Receiver().start()
    workdir = frontends.new_workdir()
    standin = stackmod.Standin(up_wheels, os.path.join(workdir, "standin"))
    fe = None
    try:
        standin.start()
        secret = write_secret(os.path.join(workdir, "secret"))
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), standin.port,
                                     files_port=standin.files_port,
                                     larder_extra_text=up.HOSTED_CONF + hook_conf(secret, rcv),
                                     root_pypi=up.ROOT_PYPI)
        fe.write_larder_conf()
        os.makedirs(fe.data_dir, exist_ok=True)
        cli = up.Cli(stackmod.larder_bin(), fe.larder_conf)
        tok = up.token_add(cli, "root/scratch", "upload")
        fe.start()
        for v in ("3.0", "3.1"):
            w = up.build_wheel(str(tmp_path / v), APP, v)
            r = up.upload(fe.base, "root/scratch", w, tok)
            assert r.status == 200, (r, r.body[:300], fe.log_text()[-3000:])
        if kind == "lighttpd-cgi":
            time.sleep(2)
            assert rcv.bodies() == [], "a CGI setup has no deliverer of its own"
            p = up.larder_cli(cli, "webhook", "deliver")
            assert p.returncode == 0, (p.stdout, p.stderr)
            assert "2 delivered, 0 failed" in p.stdout, p.stdout
            p = up.larder_cli(cli, "webhook", "deliver")
            assert "0 delivered, 0 failed" in p.stdout, p.stdout
        got = rcv.wait(2, timeout=20)
        rcv.assert_valid()
        assert [b["version"] for b in got] == ["3.0", "3.1"], got
    finally:
        if fe is not None:
            fe.stop()
        standin.stop()
        rcv.stop()


def test_new_release_of_a_cached_project(tmp_path, up_wheels):
    """A cached page fetched again (cache_ttl 1s) that lists a version it
    did not list before is a new-release event for that version; the
    first fetch of a page and a refetch with nothing new are none; an
    extra file of a version already listed is none either."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    rcv = Receiver().start()
    wdir = str(tmp_path / "wheels")
    shutil.copytree(up_wheels, wdir)
    secret = write_secret(str(tmp_path / "secret"))
    text = hook_conf(secret, rcv, name="news", extra="events = new-release\nindexes = pypi\n")
    st = stackmod.Stack(str(tmp_path / "stack"), wdir, cache_ttl=1, larder_extra_text=text)
    page = "/pypi/simple/larder-demo-a/"
    try:
        st.start()
        assert http(st.base + page, headers={"Accept": stackmod.PIP_ACCEPT}).status == 200
        time.sleep(1.5)
        assert http(st.base + page, headers={"Accept": stackmod.PIP_ACCEPT}).status == 200
        # a new build of a version it lists (another platform tag): no
        # new release
        old = sorted(f for f in os.listdir(wdir) if f.startswith("larder_demo_a-"))[0]
        listed = old.split("-")[1]
        wheels.build_wheel(wdir, "larder-demo-a", listed, tag="py2-none-any")
        time.sleep(1.5)
        r = http(st.base + page, headers={"Accept": stackmod.PIP_ACCEPT})
        assert r.status == 200 and b"py2-none-any" in r.body, r.body[:500]
        wheels.build_wheel(wdir, "larder-demo-a", "9.0")
        time.sleep(1.5)
        r = http(st.base + page, headers={"Accept": stackmod.PIP_ACCEPT})
        assert r.status == 200 and b"9.0" in r.body, r.body[:500]
        got = rcv.wait(1)
        time.sleep(2)
        got = rcv.bodies()
        rcv.assert_valid()
        assert events(got) == [("new-release", "pypi", "larder-demo-a", "9.0")], got
    finally:
        st.stop()
        rcv.stop()


def test_policy_denied_once_per_file(tmp_path, up_wheels):
    """A cache index under a policy: each file the policy denies is one
    policy-denied event, naming the file and the rule, the first time a
    page leaves it out; the page rendered again (cache_ttl 1s) raises
    none."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    rcv = Receiver().start()
    secret = write_secret(str(tmp_path / "secret"))

    def text(standin):
        return ('\n[index "safe"]\ntype = cache\n'
                "upstream = http://127.0.0.1:%d/simple/\n"
                "trusted_hosts = localhost:%d\npolicies = strict\n"
                '\n[policy "strict"]\ndeny = larder-demo-a ==1.1\n'
                % (standin.port, standin.files_port)
                + hook_conf(secret, rcv, name="held",
                            extra="events = policy-denied\nindexes = safe\n"))

    st = stackmod.Stack(str(tmp_path / "stack"), up_wheels, cache_ttl=1,
                        larder_extra_text=text)
    page = "/safe/simple/larder-demo-a/"
    denied = sorted(f for f in os.listdir(up_wheels)
                    if f.startswith("larder_demo_a-1.1") and not f.endswith(".metadata"))
    assert denied
    try:
        st.start()
        for _ in range(2):
            r = http(st.base + page, headers={"Accept": stackmod.PIP_ACCEPT})
            assert r.status == 200 and r.header("X-Larder-Held-Back") == str(len(denied))
            time.sleep(1.5)
        assert rcv.wait(len(denied))
        time.sleep(2)
        got = rcv.bodies()
        rcv.assert_valid()
        assert events(got) == [("policy-denied", "safe", "larder-demo-a", "1.1")] * len(denied), got
        assert sorted(b["data"]["filename"] for b in got) == denied, got
        assert all('policy "strict"' in b["data"]["reason"] for b in got), got
    finally:
        st.stop()
        rcv.stop()


SEALED = """
[index "sealed"]
type = hosted
read = token
"""


def test_status_hides_what_a_token_may_read(tmp_path, up_wheels):
    """An upload to an index that takes a token to read, to a receiver
    that is down: anonymous /+status shows no row naming its project, and
    its failures only by kind, never the receiver's address."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    rcv = Receiver()  # never started: every delivery fails
    secret = write_secret(str(tmp_path / "secret"))
    down = "http://127.0.0.1:%d/hook" % stackmod.free_port()
    text = (up.HOSTED_CONF + SEALED
            + hook_conf(secret, rcv).replace(rcv.url, down))
    st = stackmod.Stack(str(tmp_path / "stack"), up_wheels, larder_extra_text=text,
                        root_pypi=up.ROOT_PYPI)
    st.start()
    try:
        tok = up.token_add(st.larder, "sealed", "upload,read")
        w = up.build_wheel(str(tmp_path / "d"), "secret-project-xyz", "4.2")
        assert up.upload(st.base, "sealed", w, tok).status == 200
        assert http(st.base + "/sealed/simple/secret-project-xyz/").status == 401
        assert stackmod.wait_for(lambda: any(r[6] for r in outbox(st.data_dir)), 15)
        rows = outbox(st.data_dir)
        assert rows[0][3] == "secret-project-xyz" and rows[0][7], rows
        assert "127.0.0.1" not in rows[0][7], rows
        page = http(st.base + "/+status").body.decode()
        assert "<h2>Webhooks</h2>" in page
        assert "secret-project-xyz" not in page, page[page.find("<h2>Webhooks"):][:1500]
        assert down.split("//")[1].split("/")[0] not in page
    finally:
        st.stop()


def test_reload_replaces_the_deliverer(tmp_path, up_wheels):
    """SIGHUP with the webhook's url changed: the pool's deliverer is
    started again with the new config, and the next event goes to the new
    receiver only."""
    old, new = Receiver().start(), Receiver().start()
    st = None
    try:
        st = make_stack(tmp_path, up_wheels, old)
        tok = up.token_add(st.larder, "root/scratch", "upload")
        w = up.build_wheel(str(tmp_path / "a"), APP, "4.0")
        assert up.upload(st.base, "root/scratch", w, tok).status == 200
        old.wait(1)
        with open(st.larder.conf) as f:
            text = f.read()
        with open(st.larder.conf, "w") as f:
            f.write(text.replace(old.url, new.url))
        os.kill(st.larder.proc.pid, signal.SIGHUP)
        time.sleep(3)
        w = up.build_wheel(str(tmp_path / "b"), APP, "4.1")
        assert up.upload(st.base, "root/scratch", w, tok).status == 200
        got = new.wait(1, timeout=20)
        assert [b["version"] for b in got] == ["4.1"], got
        assert [b["version"] for b in old.bodies()] == ["4.0"]
        new.assert_valid()
    finally:
        if st is not None:
            st.stop()
        old.stop()
        new.stop()


def _sockets(pid):
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:"):
            out.add(link)
    return out


def test_deliverer_holds_no_listening_socket(tmp_path, up_wheels):
    """The pool's deliverer is one more child of the supervisor, beside its
    workers, and the only one without the listening socket: a deliverer
    in a long POST never keeps the socket the web server talks to."""
    rcv = Receiver().start()
    st = None
    try:
        st = make_stack(tmp_path, up_wheels, rcv)
        sup = st.larder.proc.pid
        listening = _sockets(sup)
        assert listening, "the supervisor holds its listening socket"
        end = time.time() + 10
        kids = []
        while time.time() < end:
            with open("/proc/%d/task/%d/children" % (sup, sup)) as f:
                kids = [int(k) for k in f.read().split()]
            if len(kids) == st.larder.workers + 1:
                break
            time.sleep(0.2)
        assert len(kids) == st.larder.workers + 1, kids
        holders = [k for k in kids if _sockets(k) & listening]
        assert len(holders) == st.larder.workers, (kids, holders)
    finally:
        if st is not None:
            st.stop()
        rcv.stop()
