"""Faults, hostile input and `larder fsck`: larder is never wrong and never
wedged, whatever the upstream, the client or the machine does.

Every test runs its own stand-in, larder (`larder serve`) and nginx (the
`stack` fixture, or a Stack built here when the data directory has to be a
tmpfs). Faults are injected by the stand-in's fault rules (POST /_control
{"faults": [...]}, see standin.py), by stopping it, by filling the data
directory's file system, and by SIGKILLs. After each fault the tests look
at what larder left: the client got a clear error (a 502 with a reason, a
transfer cut short, or the stale page), no blob under DATA/blobs hashes to
anything but its name, no blob stands for the bad file, no row is left in
the flights table and no *.part file in DATA/tmp once things settle, and
the next request after the fault clears succeeds.

The module keeps count of the faults it injects and the hostile inputs it
tries and prints both at the end (docs/reliability.md quotes them).
"""

import base64
import collections
import hashlib
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import traceback

import pytest

import flighthelp as fh
import stack as stackmod
import wheels
from stack import JSON_TYPE, PIP_ACCEPT, http, raw_request

from wheels import A10, A11, C10, C20, C20_SDIST  # noqa: E402

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")
BIG = "larder_demo_big-1.0-py3-none-any.whl"
BIG_MB = 2

# Short timeouts for the stall tests: a stalled attempt fails after about a
# second, three attempts (fetch_retries = 2) after about five.
# Short timeouts; and no memory of failures (error_ttl 0), since these tests
# count upstream attempts fault by fault and expect recovery at once when a
# fault clears (test_failure_memory_* cover error_ttl).
FAST = {"connect_timeout": 2, "first_byte_timeout": 1, "fetch_timeout": 1,
        "error_ttl": 0}

# One-wheel projects larder-demo-f01 ... for the fault groups, so that the
# faults of a group run at once, each on its own page and file.
FAULT_PROJECTS = 64

COUNTS = collections.Counter()
STORM = {}


def fproj(i):
    return "larder-demo-f%02d" % i


def ffile(i):
    return "larder_demo_f%02d-1.0-py3-none-any.whl" % i


def pfile(project):
    return "%s-1.0-py3-none-any.whl" % project.replace("-", "_")


def count(what, n=1):
    COUNTS[what] += n


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    yield
    line = ("test_faults: %d fault scenarios, %d faults injected (stand-in rule "
            "firings, killed processes, full disks, stopped upstreams), %d hostile "
            "inputs tried" % (COUNTS["scenarios"], COUNTS["injected"], COUNTS["hostile"]))
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line("")
        tr.write_line(line)
        if STORM:
            tr.write_line("test_faults: SIGKILL storm: %r" % STORM)
    out = os.environ.get("LARDER_FAULT_COUNTS")
    if out:
        with open(out, "w") as f:
            json.dump({"counts": dict(COUNTS), "storm": STORM}, f)


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory):
    """The default wheels and a BIG_MB MiB one (overrides conftest's)."""
    d = str(tmp_path_factory.mktemp("fault-wheels"))
    wheels.build_default(d)
    wheels.build_big(d, BIG_MB)
    for i in range(1, FAULT_PROJECTS + 1):
        wheels.build_wheel(d, fproj(i), "1.0")
    return d




@pytest.fixture(scope="module")
def fd(wheel_dir):
    """{filename: Dist} of the wheels."""
    return wheels.load_dists(wheel_dir)


@pytest.fixture(scope="module")
def pip_venv(tmp_path_factory):
    return stackmod.make_venv(str(tmp_path_factory.mktemp("fault-venv") / "venv"))


class Evil(threading.Thread):
    """A listener on 127.0.0.2 (loopback, but a host no index trusts) that
    records every connection made to it and answers a 200."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.2", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.stopping = False

    @property
    def base(self):
        return "http://127.0.0.2:%d" % self.port

    def run(self):
        while not self.stopping:
            try:
                c, addr = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            with c:
                c.settimeout(1)
                try:
                    first = c.recv(4096)
                except OSError:
                    first = b""
                self.seen.append((addr, first))
                try:
                    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nevil\n")
                except OSError:
                    pass

    def stop(self):
        self.stopping = True
        self.join(2)
        self.sock.close()


@pytest.fixture
def evil():
    e = Evil()
    e.start()
    yield e
    e.stop()


# ---------------------------------------------------------------- helpers

def sha256(data):
    return hashlib.sha256(data).hexdigest()


def page_path(project, route="root/pypi"):
    return "/%s/simple/%s/" % (route, project)


def file_path(d, route="root/pypi"):
    return "/%s/files/%s/%s" % (route, d.sha256, d.filename)


def warm_page(st, project, accept=PIP_ACCEPT):
    r = st.get(page_path(project), accept=accept)
    assert r.status == 200, r
    return r


def get(st, path, timeout=40, **kw):
    return http(st.base + path, timeout=timeout, **kw)


def inject(st, *rules, **other):
    """Sets the stand-in's fault rules (and other controls)."""
    count("scenarios")
    return st.standin.control(faults=list(rules), **other)


def serve_raw(st, *rules):
    """Sets the stand-in's rules for hostile pages (counted as hostile
    inputs by the caller, not as fault scenarios)."""
    return st.standin.control(faults=list(rules))


def clear(st):
    """Clears the fault rules; counts the times they applied."""
    fired = sum(st.standin.counters()["faults"])
    count("injected", fired)
    st.standin.control(faults=[], sizes={})
    return fired


def db(data_dir):
    conn = sqlite3.connect(os.path.join(data_dir, "larder.db"), timeout=30)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def rows(data_dir, sql, args=()):
    conn = db(data_dir)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def assert_settled(st, timeout=20.0):
    """No fetch runs nor left anything behind: the owner of a miss goes on
    storing the file after its client has it all."""
    rows, parts = fh.wait_settled(st.data_dir, timeout)
    assert not rows and not parts, "left behind after %.0f s: flights %s, temp files %s" % (
        timeout, rows, sorted(parts))


def assert_store_sound(st, absent=()):
    """No blob hashes to anything but its name; none of absent is stored."""
    assert stackmod.bad_blobs(st.data_dir) == []
    names = {os.path.basename(p) for p in stackmod.blobs(st.data_dir).values()}
    for sha in absent:
        assert sha not in names, "a blob for %s was committed" % sha


def has_blob(st, sha):
    return os.path.exists(os.path.join(st.data_dir, "blobs", "sha256", sha[:2], sha[2:4], sha))


def assert_good_file(r, d):
    assert r.status == 200 and r.complete, r
    assert len(r.body) == d.size and sha256(r.body) == d.sha256, r


def assert_stored(st, d):
    """Fetches d and waits until its owner has stored it."""
    assert_good_file(get(st, file_path(d)), d)
    assert_settled(st)
    assert has_blob(st, d.sha256)


def assert_failed_clearly(r, d=None):
    """A 502 with a reason, or a transfer visibly cut short: never a
    complete-looking answer."""
    if r.status == 502:
        assert r.body.startswith(b"502 ") and len(r.body) > 20, r.body
        return
    assert r.status == 200 and not r.complete, \
        "expected a 502 or a broken transfer, got %r" % (r,)
    if d is not None:
        assert len(r.body) < d.size or sha256(r.body) != d.sha256


def assert_page_502(r):
    assert r.status == 502, r
    assert r.body.startswith(b"502 Bad Gateway: ") and len(r.body) > 30, r.body
    assert r.header("Cache-Control") == "no-store", dict(r.headers)


def page_row(st, project, index="pypi"):
    got = rows(st.data_dir, "SELECT status, fetched_at, json_sha, html_sha FROM pages "
               "WHERE idx = ? AND project = ?", (index, project))
    return got[0] if got else None


def upstream_gets(st, path):
    return st.standin.counters()["requests"].get("GET " + path, 0)


def file_gets(st, fn):
    return st.standin.counters()["files"].get(fn, 0)


def upstream_file_path(d):
    return "/packages/%s/%s/%s" % (d.sha256[:2], d.sha256[2:4], d.filename)


def larder_fsck(st, *args, conf=None):
    p = subprocess.run([st.larder.binary, "fsck", "-c", conf or st.larder.conf] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                       env=stackmod.clean_env())
    return p.returncode, p.stdout.decode(errors="replace")


def request_lines(st):
    """(method, path, status) of larder's request log lines."""
    out = []
    for line in st.larder.log_lines():
        m = re.search(r"larder\[\d+\]: ([A-Z]+) (\S+) (\d{3}) ", line)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3))))
    return out


def listing_with_sizes(data_dir):
    """{relative path: size or 'dir'} of everything under data_dir, SQLite's
    -wal/-shm/-journal files left out."""
    out = {}
    for root, dirs, files in os.walk(data_dir):
        for n in dirs:
            out[os.path.relpath(os.path.join(root, n), data_dir)] = "dir"
        for n in files:
            if n.endswith(stackmod.SQLITE_SIDECARS):
                continue
            p = os.path.join(root, n)
            out[os.path.relpath(p, data_dir)] = os.path.getsize(p)
    return out


def db_content(data_dir):
    return {t: sorted(rows(data_dir, "SELECT * FROM %s" % t))
            for t in ("pages", "files", "flights", "outcomes")}


# ================================================================ 1. upstream faults: files

def run_cases(cases, fn):
    """Runs fn(case) for every case at once, each in a thread; fails with
    the failure of every case that failed (case[0] names it)."""
    errors = []

    def one(case):
        try:
            fn(case)
        except Exception:  # noqa: BLE001 - reported below, with the case
            errors.append("[%s] %s" % (case[0], traceback.format_exc(limit=3)))

    threads = [threading.Thread(target=one, args=(c,)) for c in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, "\n".join(errors)


Case = collections.namedtuple("Case", "id rule attempts dist project")


def attempts_ok(c, got):
    """Whether got upstream requests are what case c should cost. A
    connection closed without an answer may cost one more: upstream
    connections are kept alive, and libcurl sends a request once more when
    a reused connection closes before answering (it cannot tell that from
    an idle connection the server dropped)."""
    if c.rule["kind"] == "close":
        return c.attempts <= got <= 2 * c.attempts
    return got == c.attempts


def cases_for(faults, fd, first):
    """One Case per fault, each on its own project and wheel from first on."""
    return [Case(fid, rule, attempts, fd[ffile(first + i)], fproj(first + i))
            for i, (fid, rule, attempts) in enumerate(faults)]


def page_cases(faults, first):
    """One Case per page fault, each on its own project from first on."""
    return [Case(fid, rule, attempts, None, fproj(first + i))
            for i, (fid, rule, attempts) in enumerate(faults)]


def inject_cases(st, cases, match):
    """Sets one fault rule per case, for the path or file name match(case)
    gives; each counts as a scenario."""
    inject(st, *[dict(c.rule, match=match(c)) for c in cases])
    count("scenarios", len(cases) - 1)


def page_of(c):
    return "/simple/%s/" % c.project


def file_of(c):
    return c.dist.filename


# (id, rule, upstream attempts: a transient failure is tried 1 +
# fetch_retries times, bad bytes and a Retry-After over 10 s once)
STATUS_FAULTS = [
    ("500", {"kind": "status", "code": 500}, 3),
    ("502", {"kind": "status", "code": 502}, 3),
    ("503-retry-after-1", {"kind": "status", "code": 503, "retry_after": 1}, 3),
    ("504", {"kind": "status", "code": 504}, 3),
    ("429-retry-after-1", {"kind": "status", "code": 429, "retry_after": 1}, 3),
    ("429-retry-after-30", {"kind": "status", "code": 429, "retry_after": 30}, 1),
]

FILE_FAULTS = [
    ("truncated", {"kind": "truncate"}, 3),
    ("reset-mid-body", {"kind": "reset"}, 3),
    ("reset-before-body", {"kind": "reset", "after": 0}, 3),
    ("corrupt", {"kind": "corrupt"}, 1),
    ("longer-than-page", {"kind": "resize", "delta": 4096}, 1),
    ("shorter-than-page", {"kind": "resize", "delta": -100}, 1),
] + STATUS_FAULTS + [
    ("404", {"kind": "status", "code": 404}, 1),
    ("403", {"kind": "status", "code": 403}, 1),
    ("closed-without-answer", {"kind": "close"}, 3),
    ("stall-before-answer", {"kind": "stall", "seconds": 8}, 3),
    ("stall-mid-body", {"kind": "stall_body", "seconds": 8}, 3),
    ("wrong-answer-html", {"kind": "raw", "content_type": "text/html",
                           "body": "<html>a captive portal</html>"}, 1),
]


@pytest.mark.stack(larder_extra=FAST, workers=12)
def test_file_faults_commit_nothing(stack, fd):
    """A file upstream spoils on every attempt is never committed nor served
    as good: the client gets a 502 or a transfer cut short; transient
    failures were retried; nothing is left behind; each file downloads once
    upstream is well again."""
    cases = cases_for(FILE_FAULTS, fd, 1)
    for c in cases:
        warm_page(stack, c.project)
    inject_cases(stack, cases, file_of)

    def fails(c):
        t0 = time.monotonic()
        r = get(stack, file_path(c.dist))
        took = time.monotonic() - t0
        assert_failed_clearly(r, c.dist)
        assert took < 20, "the failed download took %.1f s (%r)" % (took, r)

    run_cases(cases, fails)
    assert_settled(stack)
    assert_store_sound(stack, absent=[c.dist.sha256 for c in cases])
    counters = stack.standin.counters()
    log = stack.larder.log_text()
    for c in cases:
        assert attempts_ok(c, counters["files"].get(c.dist.filename)), (c.id, counters)
        assert "error: blob:%s: " % c.dist.sha256 in log, (c.id, "no reason logged")
    clear(stack)
    run_cases(cases, lambda c: assert_good_file(get(stack, file_path(c.dist)), c.dist))
    assert_settled(stack)
    assert all(has_blob(stack, c.dist.sha256) for c in cases)
    assert_settled(stack)
    assert_store_sound(stack)


@pytest.mark.stack(larder_extra=FAST)
def test_metadata_faults_commit_nothing(stack, fd):
    """The same for PEP 658 .metadata files (their size is not on pages)."""
    faults = [("corrupt", {"kind": "corrupt"}, 1), ("reset", {"kind": "reset"}, 3),
              ("503", {"kind": "status", "code": 503}, 3)]
    cases = cases_for(faults, fd, 21)
    for c in cases:
        warm_page(stack, c.project)
    inject_cases(stack, cases, lambda c: c.dist.filename + ".metadata")
    run_cases(cases, lambda c: assert_failed_clearly(get(stack, file_path(c.dist) + ".metadata")))
    assert_settled(stack)
    assert_store_sound(stack, absent=[sha256(c.dist.metadata) for c in cases])
    counters = stack.standin.counters()
    for c in cases:
        assert attempts_ok(c, counters["metadata"].get(c.dist.filename)), (c.id, counters)
    clear(stack)

    def good(c):
        r = get(stack, file_path(c.dist) + ".metadata")
        assert r.status == 200 and r.complete and r.body == c.dist.metadata, r
    run_cases(cases, good)


HTML_FILE_FAULTS = [
    ("503", {"kind": "status", "code": 503}, 3),
    ("closed-without-answer", {"kind": "close"}, 3),
    ("stall-before-answer", {"kind": "stall", "seconds": 8}, 3),
    ("404", {"kind": "status", "code": 404}, 1),
]


@pytest.mark.stack(larder_extra=FAST, html_only=True, workers=6)
def test_file_fault_before_any_byte_is_a_502(stack, fd):
    """With an HTML upstream (no sizes on its pages) a fetch that fails
    before the first byte is a plain 502 that names the file and says why."""
    cases = cases_for(HTML_FILE_FAULTS, fd, 25)
    for c in cases:
        warm_page(stack, c.project)
    inject_cases(stack, cases, file_of)

    def fails(c):
        r = get(stack, file_path(c.dist))
        assert r.status == 502, r
        text = r.body.decode(errors="replace")
        assert c.dist.filename in text and re.search(
            r"upstream answered|Empty reply|no answer in time|too slow", text), text

    run_cases(cases, fails)
    assert_settled(stack)
    assert_store_sound(stack, absent=[c.dist.sha256 for c in cases])
    clear(stack)
    run_cases(cases, lambda c: assert_good_file(get(stack, file_path(c.dist)), c.dist))


TRANSIENT_FILE_FAULTS = [
    ("503-twice-retry-after-1", {"kind": "status", "code": 503, "retry_after": 1, "times": 2}, 3),
    ("429-once-retry-after-1", {"kind": "status", "code": 429, "retry_after": 1, "times": 1}, 2),
    ("502-twice", {"kind": "status", "code": 502, "times": 2}, 3),
    ("500-once", {"kind": "status", "code": 500, "times": 1}, 2),
    ("closed-once", {"kind": "close", "times": 1}, 2),
    ("stall-once", {"kind": "stall", "seconds": 6, "times": 1}, 2),
    ("reset-once", {"kind": "reset", "times": 1}, 2),
    ("reset-twice", {"kind": "reset", "times": 2, "after": 300}, 3),
    ("truncated-once", {"kind": "truncate", "times": 1}, 2),
    ("stall-mid-body-once", {"kind": "stall_body", "seconds": 6, "times": 1}, 2),
]


@pytest.mark.stack(larder_extra=FAST, workers=12)
def test_file_transient_faults_retried(stack, fd):
    """A fault that clears within fetch_retries costs the client nothing;
    Retry-After is honoured; an interrupted body is resumed with a Range
    request, not started over."""
    cases = cases_for(TRANSIENT_FILE_FAULTS, fd, 29)
    for c in cases:
        warm_page(stack, c.project)
    inject_cases(stack, cases, file_of)
    took = {}

    def ok(c):
        t0 = time.monotonic()
        assert_good_file(get(stack, file_path(c.dist)), c.dist)
        took[c.id] = time.monotonic() - t0

    run_cases(cases, ok)
    counters = stack.standin.counters()
    for i, c in enumerate(cases):
        fn = c.dist.filename
        assert counters["faults"][i] == c.rule["times"], (c.id, counters)
        assert counters["files"].get(fn) == c.attempts, (c.id, counters)
        if c.rule["kind"] in ("reset", "truncate", "stall_body"):
            assert counters["ranges"].get(fn) == c.attempts - 1, \
                "%s: an interrupted download was not resumed: %s" % (c.id, counters)
        if c.rule.get("retry_after"):
            assert took[c.id] >= c.rule["retry_after"] * c.rule["times"] - 0.1, \
                "%s: Retry-After not honoured (%.2f s)" % (c.id, took[c.id])
    clear(stack)
    assert_settled(stack)
    assert_store_sound(stack)


def test_page_size_smaller_than_file(stack, fd):
    """The page says the file is smaller than it is (hash right): the client
    must not get a complete-looking truncated file."""
    d = fd[A11]
    inject(stack, sizes={A11: d.size - 100})
    warm_page(stack, "larder-demo-a")
    r = get(stack, file_path(d))
    count("injected")
    assert r.status != 200 or not r.complete or sha256(r.body) == d.sha256, \
        "a complete-looking wrong file: %r" % r


def test_page_size_larger_than_file(stack, fd):
    """The page says the file is bigger than it is: the transfer is cut,
    and what is stored is only ever the right bytes."""
    d = fd[A11]
    inject(stack, sizes={A11: d.size + 100})
    warm_page(stack, "larder-demo-a")
    r = get(stack, file_path(d))
    count("injected")
    assert_failed_clearly(r, d)
    assert_settled(stack)
    assert_store_sound(stack)


@pytest.mark.stack(larder_extra=FAST)
def test_file_redirects(stack, fd, evil):
    """A redirect of a file to a trusted host is followed; to an untrusted
    one (or a non-http URL, or round in circles) refused, and nothing is
    fetched from there."""
    d = fd[A11]
    warm_page(stack, "larder-demo-a")
    up = upstream_file_path(d)
    trusted = "http://localhost:%d%s" % (stack.standin.files_port, up)
    inject(stack, {"match": A11, "kind": "redirect", "location": trusted, "times": 1})
    assert_good_file(get(stack, file_path(d)), d)
    assert file_gets(stack, A11) == 2
    clear(stack)

    d2 = fd[A10]
    for target in (evil.base + up, "http://127.0.0.2:%d/x.whl" % evil.port,
                   "file:///etc/passwd", "ftp://localhost/x", "gopher://localhost/x",
                   "http://localhost@127.0.0.2:%d/" % evil.port, "//127.0.0.2:%d/" % evil.port,
                   "http://[::1]:%d/" % evil.port, "http://0x7f000002:%d/" % evil.port):
        inject(stack, {"match": A10, "kind": "redirect", "location": target})
        count("hostile")
        r = get(stack, file_path(d2))
        assert_failed_clearly(r, d2)
        assert_settled(stack)
        assert_store_sound(stack, absent=[d2.sha256])
        clear(stack)
    inject(stack, {"match": A10, "kind": "redirect", "location": "http://localhost:%d%s"
                   % (stack.standin.files_port, upstream_file_path(d2))})
    count("hostile")
    assert_failed_clearly(get(stack, file_path(d2)), d2)
    assert "too many redirects" in stack.larder.log_text()
    clear(stack)
    assert evil.seen == [], "larder connected to an untrusted host: %r" % evil.seen
    assert "refusing redirect to untrusted" in stack.larder.log_text()
    assert_good_file(get(stack, file_path(d2)), d2)
    assert_settled(stack)
    assert_store_sound(stack)


# ================================================================ 1. upstream faults: pages

PAGE_FAULTS = [
] + STATUS_FAULTS + [
    ("403", {"kind": "status", "code": 403}, 1),
    ("closed-without-answer", {"kind": "close"}, 3),
    ("reset-mid-body", {"kind": "reset"}, 3),
    ("truncated", {"kind": "truncate"}, 3),
    ("stall-before-answer", {"kind": "stall", "seconds": 8}, 3),
    ("stall-mid-body", {"kind": "stall_body", "seconds": 8}, 3),
    ("invalid-json", {"kind": "raw", "content_type": JSON_TYPE, "body": '{"files": [{"url": '}, 1),
    ("json-not-an-object", {"kind": "raw", "content_type": JSON_TYPE, "body": "[]"}, 1),
    ("json-files-not-a-list", {"kind": "raw", "content_type": JSON_TYPE,
                               "body": '{"meta": {"api-version": "1.0"}, "files": 5}'}, 1),
    ("json-api-version-2", {"kind": "raw", "content_type": JSON_TYPE,
                            "body": '{"meta": {"api-version": "2.0"}, "files": []}'}, 1),
    ("json-not-utf8", {"kind": "raw", "content_type": JSON_TYPE,
                       "body_b64": base64.b64encode(b'{"name": "\xff\xfe", "files": []}').decode()},
     1),
    ("json-empty", {"kind": "raw", "content_type": JSON_TYPE, "body": ""}, 1),
    ("html-repository-version-2", {"kind": "raw", "content_type": "text/html",
                                   "body": '<meta name="pypi:repository-version" content="2.0">'},
     1),
    ("redirect-to-untrusted", {"kind": "redirect", "location": "http://127.0.0.2:9/simple/x/"}, 1),
    ("redirect-to-file", {"kind": "redirect", "location": "file:///etc/passwd"}, 1),
]


@pytest.mark.stack(larder_extra=FAST, workers=16)
def test_page_faults_uncached_are_502s(stack):
    """A page upstream cannot give (status, broken or stalled transfer, not
    a page, a redirect off the trusted hosts) is a 502 with the reason;
    nothing is stored; it is fetched once upstream is well again."""
    cases = page_cases(PAGE_FAULTS, 40)
    inject_cases(stack, cases, page_of)

    def fails(c):
        t0 = time.monotonic()
        r = stack.get(page_path(c.project), accept=PIP_ACCEPT)
        assert_page_502(r)
        assert time.monotonic() - t0 < 20

    run_cases(cases, fails)
    assert_settled(stack)
    assert_store_sound(stack)
    counters = stack.standin.counters()
    for c in cases:
        assert page_row(stack, c.project) is None, (c.id, "a page row was written")
        got = upstream_gets(stack, "/simple/%s/" % c.project)
        assert attempts_ok(c, got), (c.id, counters)
    clear(stack)

    def ok(c):
        r = stack.get(page_path(c.project), accept=PIP_ACCEPT)
        assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
        assert [f["filename"] for f in r.json()["files"]] == [pfile(c.project)]

    run_cases(cases, ok)
    assert_settled(stack)


STALE_PAGE_FAULTS = [
    ("503", {"kind": "status", "code": 503}, 3),
    ("429-retry-after-1", {"kind": "status", "code": 429, "retry_after": 1}, 3),
    ("reset-mid-body", {"kind": "reset"}, 3),
    ("truncated", {"kind": "truncate"}, 3),
    ("stall-before-answer", {"kind": "stall", "seconds": 8}, 3),
    ("invalid-json", {"kind": "raw", "content_type": JSON_TYPE, "body": "{not json"}, 1),
    ("json-api-version-2", {"kind": "raw", "content_type": JSON_TYPE,
                            "body": '{"meta": {"api-version": "2.0"}, "files": []}'}, 1),
    ("redirect-to-untrusted", {"kind": "redirect", "location": "http://127.0.0.2:9/"}, 1),
]


@pytest.mark.stack(larder_extra=FAST, cache_ttl=1, workers=12)
def test_page_faults_serve_stale(stack):
    """The same faults on a page larder has (stale): the cached page is
    served, marked STALE, and its row is left as it was."""
    cases = page_cases(STALE_PAGE_FAULTS, 1)
    first, before = {}, {}
    for c in cases:
        first[c.id] = warm_page(stack, c.project).body
        before[c.id] = page_row(stack, c.project)
    time.sleep(1.2)
    inject_cases(stack, cases, page_of)

    def stale(c):
        for accept in (PIP_ACCEPT, "text/html"):
            r = stack.get(page_path(c.project), accept=accept)
            assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", (accept, r)
            if accept == PIP_ACCEPT:
                assert r.body == first[c.id]
        assert page_row(stack, c.project) == before[c.id], "the stale page's row changed"

    run_cases(cases, stale)
    assert_settled(stack)
    assert_store_sound(stack)
    clear(stack)

    def ok(c):
        r = stack.get(page_path(c.project), accept=PIP_ACCEPT)
        assert r.status == 200 and r.header("X-Larder-Cache") in ("MISS", "REVALIDATED"), r
        assert r.body == first[c.id]
        assert page_row(stack, c.project)[1] > before[c.id][1], "the page was not refreshed"

    run_cases(cases, ok)


@pytest.mark.stack(cache_ttl=1)
def test_page_not_html_serves_stale(stack):
    project = "larder-demo-a"
    first = warm_page(stack, project)
    time.sleep(1.2)
    inject(stack, {"match": "/simple/%s/" % project, "kind": "raw",
                   "content_type": "application/octet-stream",
                   "body_b64": base64.b64encode(bytes(range(256)) * 16).decode()})
    r = stack.get(page_path(project), accept=PIP_ACCEPT)
    count("injected")
    assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", (r, r.body[:200])
    assert r.body == first.body


TRANSIENT_PAGE_FAULTS = [
    ("503-twice-retry-after-1", {"kind": "status", "code": 503, "retry_after": 1, "times": 2}, 3),
    ("429-once", {"kind": "status", "code": 429, "retry_after": 1, "times": 1}, 2),
    ("reset-once", {"kind": "reset", "times": 1}, 2),
    ("closed-once", {"kind": "close", "times": 1}, 2),
    ("stall-once", {"kind": "stall", "seconds": 6, "times": 1}, 2),
]


@pytest.mark.stack(larder_extra=FAST, workers=8)
def test_page_transient_faults_retried(stack):
    cases = page_cases(TRANSIENT_PAGE_FAULTS, 10)
    inject_cases(stack, cases, page_of)

    def ok(c):
        t0 = time.monotonic()
        r = stack.get(page_path(c.project), accept=PIP_ACCEPT)
        took = time.monotonic() - t0
        assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
        assert [f["filename"] for f in r.json()["files"]] == [pfile(c.project)]
        got = upstream_gets(stack, "/simple/%s/" % c.project)
        assert c.attempts <= got <= (c.attempts + 1 if c.rule["kind"] == "close" else c.attempts)
        if c.rule.get("retry_after"):
            assert took >= c.rule["retry_after"] * c.rule["times"] - 0.1, took

    run_cases(cases, ok)
    clear(stack)
    assert_settled(stack)


@pytest.mark.stack(cache_ttl=1, larder_extra={"error_ttl": 0})
def test_upstream_refused(stack, fd):
    """The upstream stops: an unknown page is a 502 at once, a cached one
    is served stale, a file not yet fetched fails clearly; all is well
    once it is back (at once: no failure is remembered here)."""
    warm = warm_page(stack, "larder-demo-a")
    stack.standin.kill()
    count("scenarios")
    count("injected")
    t0 = time.monotonic()
    r = stack.get(page_path("larder-demo-c"), accept=PIP_ACCEPT)
    assert_page_502(r)
    assert b"connect" in r.body.lower(), r.body
    assert time.monotonic() - t0 < 10
    r = get(stack, file_path(fd[A11]))
    assert_failed_clearly(r, fd[A11])
    time.sleep(1.2)
    r = stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", r
    assert r.body == warm.body
    assert_settled(stack)
    assert_store_sound(stack, absent=[fd[A11].sha256])
    assert page_row(stack, "larder-demo-c") is None

    stack.standin.start()
    r = stack.get(page_path("larder-demo-c"), accept=PIP_ACCEPT)
    assert r.status == 200, r
    assert_good_file(get(stack, file_path(fd[A11])), fd[A11])
    r = stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") in ("MISS", "REVALIDATED"), r
    assert_settled(stack)
    assert_store_sound(stack)


# ================================================================ 2. machine faults

def _mount_tmpfs(path, size):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        pytest.skip("mount -t tmpfs not permitted here: %s" % p.stdout.decode(errors="replace"))


def _umount(path):
    for args in (["umount", path], ["umount", "-l", path]):
        p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if p.returncode == 0:
            return


def _fill(path, leave):
    """Writes path until the file system has about leave bytes free (0: as
    full as it gets). Returns the bytes written."""
    st = os.statvfs(os.path.dirname(path))
    want = max(0, st.f_bavail * st.f_frsize - leave)
    written = 0
    block = b"\xa5" * (1 << 16)
    fdesc = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while written < want or leave == 0:
            n = min(len(block), want - written) if leave else len(block)
            try:
                w = os.write(fdesc, block[:n])
            except OSError:
                break
            if w <= 0:
                break
            written += w
    finally:
        os.close(fdesc)
    return written


def test_disk_full_while_writing_blob(tmp_path, wheel_dir, fd):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    workdir = str(tmp_path / "stack")
    data = os.path.join(workdir, "larder", "data")
    os.makedirs(data)
    _mount_tmpfs(data, "6m")
    st = stackmod.Stack(workdir, wheel_dir)
    try:
        st.start()
        big = fd[BIG]
        warm_page(st, "larder-demo-big")
        warm_page(st, "larder-demo-a")
        filler = os.path.join(data, "filler")
        _fill(filler, 512 * 1024)
        count("scenarios")
        count("injected")
        r = get(st, file_path(big))
        assert_failed_clearly(r, big)
        assert_settled(st)
        assert_store_sound(st, absent=[big.sha256])
        assert any("No space left on device" in l for l in st.larder.log_lines()), \
            "the reason is not in the log"
        rc, out = larder_fsck(st)
        assert rc == 0, out
        assert rows(data, "PRAGMA integrity_check") == [("ok",)]

        # Completely full: a page miss cannot be stored.
        filler2 = os.path.join(data, "filler2")
        _fill(filler2, 0)
        count("injected")
        r = st.get(page_path("larder-demo-c"), accept=PIP_ACCEPT)
        assert 500 <= r.status <= 599, r
        assert len(r.body) > 20, r.body
        assert_settled(st)
        rc, out = larder_fsck(st)
        assert rc == 0, out

        os.unlink(filler2)
        os.unlink(filler)
        r = st.get(page_path("larder-demo-c"), accept=PIP_ACCEPT)
        assert r.status == 200, r
        assert_good_file(get(st, file_path(big)), big)
        assert_good_file(get(st, file_path(fd[A11])), fd[A11])
        assert_settled(st)
        assert_store_sound(st)
        rc, out = larder_fsck(st)
        assert rc == 0, out
    finally:
        st.stop()
        _umount(data)


@pytest.mark.stack(workers=4, cache_ttl=1)
def test_forty_at_once_no_5xx_no_lock(stack, fd):
    """40 requests at once over four workers, pages and files, cold, warm
    and stale: every one a 200 with the right bytes, and no "database is
    locked" anywhere."""
    for p in ("larder-demo-a", "larder-demo-c"):
        warm_page(stack, p)
    files = [A10, A11, C10, C20, C20_SDIST]
    want = []
    for p in ("larder-demo-b", "larder-demo-nometa", "larder-demo-big", "larder-demo-a",
              "larder-demo-c"):
        want += [(page_path(p), PIP_ACCEPT, None), (page_path(p), "text/html", None)]
    want.append(("/root/pypi/simple/", PIP_ACCEPT, None))
    for fn in files:
        want += [(file_path(fd[fn]), None, fn)] * 5
    for fn in (A10, A11):
        want += [(file_path(fd[fn]) + ".metadata", None, fn + ".metadata")] * 2
    want = want[:40]
    assert len(want) == 40

    def burst():
        results = [None] * len(want)
        go = threading.Barrier(len(want))

        def one(i, path, accept):
            go.wait()
            results[i] = get(stack, path, timeout=60, headers={"Accept": accept} if accept else {})

        threads = [threading.Thread(target=one, args=(i, p, a)) for i, (p, a, _) in enumerate(want)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        for (path, _, what), r in zip(want, results):
            assert r is not None and r.status == 200 and r.complete, (path, r)
            if what and what.endswith(".metadata"):
                assert r.body == fd[what[:-9]].metadata
            elif what:
                assert sha256(r.body) == fd[what].sha256, path

    burst()        # cold pages and files
    time.sleep(1.2)
    burst()        # stale pages (revalidated), warm files
    burst()        # fresh pages
    bad = [l for l in request_lines(stack) if l[2] >= 500]
    assert not bad, bad
    text = stack.larder.log_text().lower()
    assert "database is locked" not in text and "sqlite_busy" not in text, text[-3000:]
    assert_settled(stack)
    assert_store_sound(stack)


# -- the SIGKILL storm

@pytest.mark.stack(workers=4, cache_ttl=1)
def test_sigkill_storm_leaves_a_clean_store(stack, fd, pip_venv, tmp_path):
    """Parallel installs while workers and fetchers are SIGKILLed at random:
    installs may fail, but afterwards (fetchers finished, larder restarted
    so that its first worker sweeps) the first plain `larder fsck` is clean
    and an install succeeds."""
    st = stack
    st.standin.control(rate=600_000)  # the big wheel takes over 3 s
    data_dir = st.data_dir
    supervisor = st.larder.proc.pid
    stop = threading.Event()
    kills = collections.Counter()

    def killer():
        rnd = random.Random(20240)
        while not stop.wait(rnd.uniform(0.15, 0.4)):
            workers = [("worker", p) for p in fh.children(supervisor)]
            fetchers = [("fetcher", p) for p in fh.fetcher_pids(data_dir)]
            victims = fetchers if fetchers and rnd.random() < 0.5 else workers
            if not victims:
                continue
            kind, pid = rnd.choice(victims)
            try:
                os.kill(pid, signal.SIGKILL)
                kills[kind] += 1
            except ProcessLookupError:
                pass

    results = []

    def install(i):
        rc, out = stackmod.pip_install(pip_venv, st.url, ["larder-demo-a", "larder-demo-big"],
                                       extra_args=["--target", str(tmp_path / ("t%d" % i))],
                                       timeout=120)
        results.append(rc)

    k = threading.Thread(target=killer, daemon=True)
    k.start()
    try:
        for wave in range(2):
            ts = [threading.Thread(target=install, args=(wave * 10 + i,)) for i in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(150)
            time.sleep(1.1)  # pages go stale: the next wave revalidates
    finally:
        stop.set()
        k.join(5)
    count("scenarios")
    count("injected", sum(kills.values()))
    assert kills["worker"] >= 3 and kills["fetcher"] >= 1, kills

    # settle: the fetchers nobody killed finish; then a restart sweeps
    deadline = time.monotonic() + 60
    while fh.fetcher_pids(data_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not fh.fetcher_pids(data_dir), "fetchers still running after 60 s"
    st.standin.control(rate=None)
    before_rc, before = larder_fsck(st)   # before the sweep: for the record
    STORM.update(kills=dict(kills), installs=list(results), before_sweep=before_rc,
                 before_lines=[l for l in before.splitlines() if not l[0].isdigit()])
    st.larder.stop()
    st.larder.start()
    left = fh.wait_settled(data_dir, 10)
    rc, out = larder_fsck(st)
    assert rc == 0, "first fsck after the storm (kills %s, installs %s, left %s):\n%s" % (
        dict(kills), results, left, out)
    assert_store_sound(st)

    rc, out = stackmod.pip_install(pip_venv, st.url, ["larder-demo-a", "larder-demo-big"],
                                   extra_args=["--target", str(tmp_path / "final")])
    assert rc == 0, out
    assert os.path.exists(str(tmp_path / "final" / "larder_demo_big" / "payload.bin"))
    with open(str(tmp_path / "final" / "larder_demo_big" / "payload.bin"), "rb") as f:
        payload = f.read()
    assert len(payload) == BIG_MB * 1024 * 1024
    assert_settled(st)
    assert_store_sound(st)
    rc, out = larder_fsck(st)
    assert rc == 0, out


# ================================================================ 3. larder fsck

def _corrupt(path):
    with open(path, "r+b") as f:
        f.seek(10)
        b = f.read(1)
        f.seek(10)
        f.write(bytes([b[0] ^ 0xFF]))


def _blob(st, sha):
    return os.path.join(st.data_dir, "blobs", "sha256", sha[:2], sha[2:4], sha)


def _problem(st, fd, kind):
    """Makes one kind of damage; returns (what fsck must say, check after
    repair)."""
    data = st.data_dir
    if kind == "corrupt-blob":
        d = fd[A11]
        assert_stored(st, d)
        _corrupt(_blob(st, d.sha256))

        def after():
            q = os.listdir(os.path.join(data, "quarantine"))
            assert any(n.startswith(d.sha256) for n in q), q
            assert not has_blob(st, d.sha256)
            before = file_gets(st, A11)
            assert_stored(st, d)  # fetched again
            assert file_gets(st, A11) == before + 1
        return r"corrupt: \S*%s hashes to" % d.sha256, after
    if kind == "misplaced-blob":
        d = fd[A10]
        assert_stored(st, d)
        wrong = os.path.join(data, "blobs", "sha256", "00", "00")
        os.makedirs(wrong, exist_ok=True)
        with open(_blob(st, d.sha256), "rb") as src:
            with open(os.path.join(wrong, d.sha256), "wb") as dst:
                dst.write(src.read())

        def after():
            assert not os.path.exists(os.path.join(wrong, d.sha256))
            q = os.listdir(os.path.join(data, "quarantine"))
            assert any(n.startswith(d.sha256) for n in q), q
            assert has_blob(st, d.sha256)
        return r"misplaced: \S*/00/00/%s" % d.sha256, after
    if kind == "dangling-page":
        row = page_row(st, "larder-demo-c")
        if row is None:
            warm_page(st, "larder-demo-c")
            row = page_row(st, "larder-demo-c")
        os.unlink(_blob(st, row[2]))

        def after():
            assert page_row(st, "larder-demo-c") is None
            before = upstream_gets(st, "/simple/larder-demo-c/")
            # (asked with another Accept than warm_page's, so that nginx's
            # page cache does not answer for larder)
            r = st.get(page_path("larder-demo-c"), accept=JSON_TYPE)
            assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
            assert upstream_gets(st, "/simple/larder-demo-c/") == before + 1
            assert C20 in {f["filename"] for f in r.json()["files"]}
        return r"dangling page: \[pypi\] larder-demo-c", after
    if kind == "dead-claim":
        d = fd[C10]
        tmp = os.path.join(data, "tmp", "999999.00000000deadbeef.part")
        with open(tmp, "wb") as f:
            f.write(d.data[:100])
        conn = db(data)
        with conn:
            conn.execute("INSERT INTO flights (key, tmp, pid, started, size)"
                         " VALUES (?, ?, ?, ?, ?)",
                         ("blob:" + d.sha256, tmp, 999999, int(time.time()) - 5, d.size))
        conn.close()

        def after():
            assert fh.flights(data) == [] and not os.path.exists(tmp)
            assert_stored(st, d)
        return r"dead claim: blob:%s \(%s\)" % (d.sha256, re.escape(tmp)), after
    if kind == "stray-temp":
        tmp = os.path.join(data, "tmp", "424242.0123456789abcdef.part")
        with open(tmp, "wb") as f:
            f.write(b"half a wheel")
        old = time.time() - 3600
        os.utime(tmp, (old, old))

        def after():
            assert not os.path.exists(tmp)
        return r"stray temp file: %s" % re.escape(tmp), after
    raise AssertionError(kind)


FSCK_PROBLEMS = ["corrupt-blob", "misplaced-blob", "dangling-page", "dead-claim", "stray-temp"]


def test_fsck_clean_store_and_errors(stack, fd):
    rc, out = larder_fsck(stack)
    assert rc == 0, out                       # an empty store
    warm_page(stack, "larder-demo-a")
    assert_good_file(get(stack, file_path(fd[A11])), fd[A11])
    assert stackmod.wait_stored(stack.data_dir, fd[A11].sha256, 5)
    rc, out = larder_fsck(stack)
    assert rc == 0, out
    assert out.startswith("checking %s\n" % stack.data_dir), out
    m = re.search(r"(\d+) blobs, 0 bad, 0 unreferenced; (\d+) pages, 0 dangling; 0 dead claims; "
                  r"0 stray temp files; database ok; 0 repaired", out)
    assert m and int(m.group(1)) >= 3 and int(m.group(2)) == 1, out
    rc, out = larder_fsck(stack, "--repair")
    assert rc == 0, out
    # usage and I/O errors are 2
    rc, out = larder_fsck(stack, conf="/nonexistent/larder.conf")
    assert rc == 2, out
    p = subprocess.run([stack.larder.binary, "fsck", "--bogus"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=stackmod.clean_env())
    assert p.returncode == 2, p.stdout


def test_fsck_never_makes_a_store(stack, tmp_path):
    """`larder fsck` inspects: pointed at a directory with no store (a
    config naming one, or the built-in defaults without -c), it says so,
    names the directory, fails with 2, and creates nothing there."""
    missing = str(tmp_path / "no-store-here")
    conf = str(tmp_path / "larder.conf")
    with open(conf, "w") as f:
        f.write("[larder]\ndata_dir = %s\n" % missing)
    rc, out = larder_fsck(stack, conf=conf)
    assert rc == 2 and missing in out, out
    assert not os.path.exists(missing), "fsck made %s" % missing

    # No -c, no $LARDER_CONFIG: the built-in defaults' data_dir.
    env = {k: v for k, v in stackmod.clean_env().items() if k != "LARDER_CONFIG"}
    p = subprocess.run([stack.larder.binary, "config", "check"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env)
    default = re.search(r"(?m)^data_dir = (\S+)", p.stdout.decode()).group(1)
    existed = os.path.exists(default)
    p = subprocess.run([stack.larder.binary, "fsck"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env)
    out = p.stdout.decode()
    if existed and os.path.exists(os.path.join(default, "larder.db")):
        pytest.skip("a real store lives in %s" % default)
    assert p.returncode == 2 and default in out, out
    assert os.path.exists(default) == existed, "fsck made %s" % default


@pytest.mark.parametrize("kind", FSCK_PROBLEMS)
def test_fsck_finds_and_repairs(stack, fd, kind):
    warm_page(stack, "larder-demo-a")
    warm_page(stack, "larder-demo-c")
    rc, out = larder_fsck(stack)
    assert rc == 0, out
    said, after = _problem(stack, fd, kind)
    count("scenarios")
    count("injected")
    rc, out = larder_fsck(stack)
    assert rc == 1, out
    assert re.search(said, out), out
    rc2, out2 = larder_fsck(stack)            # a plain fsck changes nothing
    assert rc2 == 1 and re.search(said, out2), out2
    rc, out = larder_fsck(stack, "--repair")
    assert rc == 0, out                       # it found something, and fixed all
    assert re.search(said, out), out
    assert "repaired: " in out and re.search(r"; [1-9]\d* repaired", out), out
    rc, out = larder_fsck(stack)
    assert rc == 0, out
    after()
    assert_settled(stack)
    assert_store_sound(stack)
    rc, out = larder_fsck(stack)
    assert rc == 0, out


def test_fsck_repairs_everything_at_once(stack, fd):
    warm_page(stack, "larder-demo-a")
    warm_page(stack, "larder-demo-c")
    checks = [_problem(stack, fd, k) for k in FSCK_PROBLEMS]
    count("scenarios")
    count("injected", len(checks))
    rc, out = larder_fsck(stack)
    assert rc == 1, out
    for said, _ in checks:
        assert re.search(said, out), (said, out)
    rc, out = larder_fsck(stack, "--repair")
    assert rc == 0, out                       # everything it found, repaired
    assert re.search(r"; [5-9] repaired", out), out
    rc, out = larder_fsck(stack)
    assert rc == 0, out
    for _, after in checks:
        after()
    rc, out = larder_fsck(stack)
    assert rc == 0, out


def _store_files(data):
    """Every file under DATA/blobs/sha256 (blobs and gzip'd copies)."""
    root = os.path.join(data, "blobs", "sha256")
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names)


def _metric(st, name):
    m = re.search(r"(?m)^%s (\d+)$" % re.escape(name), st.get("/metrics").body.decode())
    assert m, name
    return int(m.group(1))


def test_scrub_in_slices_quarantines_and_refetches(stack, fd):
    """`larder fsck --scrub --bytes 1` looks at one file a run, going on
    from where the last run stopped; a blob that rotted on disk is moved
    to quarantine/ (exit 0: nothing is left wrong) and the next request
    fetches it again; /metrics counts it all. Then a pass with a time
    budget does the whole store in one run."""
    warm_page(stack, "larder-demo-a")
    warm_page(stack, "larder-demo-c")
    d = fd[A11]
    assert_stored(stack, d)
    files = _store_files(stack.data_dir)
    assert len(files) >= 4, files
    _corrupt(_blob(stack, d.sha256))
    seen = []
    for run in range(len(files)):
        rc, out = larder_fsck(stack, "--scrub", "--bytes", "1")
        assert rc == 0, out
        m = re.search(r"scrub: (\d+) blobs \((\d+) bytes\)", out)
        assert m and m.group(1) == "1", out
        seen.append(out)
        if "the pass is done" in out:
            break
    assert len(seen) == len(files), seen       # one file a run, each once
    assert all("stopped at the budget" in o for o in seen[:-1]), seen
    bad = [o for o in seen if "corrupt: " in o]
    assert len(bad) == 1 and re.search(r"corrupt: \S*%s hashes to" % d.sha256, bad[0]), seen
    assert "repaired: moved" in bad[0], bad[0]
    q = os.listdir(os.path.join(stack.data_dir, "quarantine"))
    assert any(n.startswith(d.sha256) for n in q), q
    assert not has_blob(stack, d.sha256)
    assert _metric(stack, "larder_scrub_checked_blobs_total") == len(files)
    assert _metric(stack, "larder_scrub_quarantined_blobs_total") == 1
    assert _metric(stack, "larder_scrub_passes_total") == 1
    assert _metric(stack, "larder_scrub_last_run_seconds") >= int(time.time()) - 60
    # the next request fetches it again
    before = file_gets(stack, A11)
    assert_stored(stack, d)
    assert file_gets(stack, A11) == before + 1
    # a second pass, in one run: all sound
    rc, out = larder_fsck(stack, "--scrub", "--budget", "60s")
    assert rc == 0 and "the pass is done" in out and "corrupt" not in out, out
    assert _metric(stack, "larder_scrub_passes_total") == 2
    rc, out = larder_fsck(stack)
    assert rc == 0, out


def _holder(data_dir, name):
    """The pid of a process with DATA/tmp/name open, or None."""
    path = os.path.join(os.path.abspath(data_dir), "tmp", name)
    return next((p for p in fh._pids() if path in fh.open_parts(p, data_dir)), None)


@pytest.mark.stack(workers=2)
def test_fsck_leaves_a_live_temp_file_alone(stack, tmp_path):
    """fsck on a live store: a temp file a worker is writing right now
    (caught by stopping the worker) is not stray."""
    files = [_entry("http://localhost/p-%d-py3-none-any.whl" % i, "p-%d-py3-none-any.whl" % i,
                    "%064x" % i) for i in range(40000)]
    big = str(tmp_path / "big.json")
    with open(big, "w") as f:
        f.write(_json_doc(files))
    inject(stack, *[{"match": "/simple/big%d/" % i, "kind": "raw", "content_type": JSON_TYPE,
                     "file": big} for i in range(10)])
    tmpdir = os.path.join(stack.data_dir, "tmp")
    for i in range(10):
        done = []
        t = threading.Thread(target=lambda: done.append(
            stack.get(page_path("big%d" % i), accept=PIP_ACCEPT)))
        t.start()
        caught = None
        while t.is_alive() and not caught:
            for n in os.listdir(tmpdir):
                # the page's claim file stays empty; a rendering's grows
                try:
                    if not n.endswith(".part") or not os.path.getsize(os.path.join(tmpdir, n)):
                        continue
                except OSError:
                    continue
                pid = _holder(stack.data_dir, n)
                if pid is None:
                    continue
                os.kill(pid, signal.SIGSTOP)
                if os.path.exists(os.path.join(tmpdir, n)):
                    caught = (pid, n)
                else:
                    os.kill(pid, signal.SIGCONT)
                break
        if not caught:
            t.join(60)
            continue
        try:
            rc, out = larder_fsck(stack)
        finally:
            os.kill(caught[0], signal.SIGCONT)
        t.join(60)
        assert done and done[0].status == 200, done
        count("injected")
        assert rc == 0 and not re.search(r"(?m)^stray temp file: ", out), out
        return
    pytest.skip("no page store caught in the act in 10 tries")


# ================================================================ 4. hostile requests

def _hostile_paths(sha, fn):
    hex64 = "ab" * 32
    segs = {
        "plain": ["..", "."],
        "encoded": ["%2e%2e", "%2E%2E", ".%2e", "%2e.", "%2e"],
        "double": ["%252e%252e", "%25252e%25252e", "%252E%252E"],
        "slash": ["..%2f..%2fetc%2fpasswd", "..%5c..%5cetc%5cpasswd", "..%252f..%252fetc",
                  "%2f", "%5c"],
        "nul": ["%00", "..%00", "x%00.whl", "%2500"],
    }
    paths = []
    templates = [
        "/{s}/simple/larder-demo-a/",                       # the index segment
        "/root/{s}/simple/larder-demo-a/",
        "/root/pypi/{s}/larder-demo-a/",                    # simple
        "/root/pypi/simple/{s}/",                           # project
        "/root/pypi/simple/{s}/etc/passwd",
        "/root/pypi/simple/larder-demo-a/{s}",
        "/root/pypi/{s}/%s/%s" % (sha, fn),                 # files
        "/root/pypi/files/{s}/%s" % fn,                     # sha256
        "/root/pypi/files/%s/{s}" % sha,                    # file name
        "/root/pypi/files/%s/{s}/{s}/etc/passwd" % hex64,
        "/root/pypi/files/%s/%s{s}" % (sha, fn),
        "/root/pypi/files/%s/%s.metadata{s}" % (sha, fn),
        "/root/pypi/pypi/{s}/json",                         # JSON API
        "/root/pypi/pypi/larder-demo-a/{s}/json",
    ]
    for group in segs.values():
        for s in group:
            for t in templates:
                paths.append(t.replace("{s}", s))
    paths += [
        "/root/pypi/simple/../../../../../etc/passwd",
        "/root/pypi/files/%s/../../../../larder.db" % sha,
        "/root/pypi/files/%s/..%%2f..%%2f..%%2flarder.db" % sha,
        "/_larder/larder.db",
        "/_larder/../larder.db",
        "/_larder/blobs/sha256/%s/%s/%s" % (sha[:2], sha[2:4], sha),
        "/_larder/%2e%2e/%2e%2e/etc/passwd",
        "/_larder/",
        "//root/pypi/simple/larder-demo-a/",
        "/root/pypi//simple/larder-demo-a/",
        "/root/pypi/simple//larder-demo-a/",
        "/root/pypi/files/%s//%s" % (sha, fn),
        "/root/pypi/simple/larder-demo-a/;/../../etc/passwd",
        "/root/pypi/simple/larder-demo-a%5c..%5c..%5cetc%5cpasswd/",
    ]
    return paths


def _names(sha, fn):
    crlf = ["%0d%0aX-Injected:%201", "%0aX-Injected:%201", "%0dX-Injected:%201",
            "%0d%0aSet-Cookie:%20injected=1", "%0d%0a%0d%0a<html>injected",
            "%E5%98%8A%E5%98%8DX-Injected:%201"]   # U+560A U+560D ("\n", "\r" in Latin-1 bytes)
    non_utf8 = ["%ff%fe", "%c0%ae%c0%ae", "%e0%80%ae", "%ed%a0%80", "%f8%88%80%80%80", "%c3%28",
                "caf%e9", "%fe%ff", "%c0%af", "%e2%82"]
    long = ["a" * 201, "a" * 300, "a" * 1000, "a" * 4000, "a-" * 1500 + "a"]
    out = []
    for x in crlf + non_utf8 + long:
        out += ["/root/pypi/simple/%s/" % x,
                "/root/pypi/simple/larder-demo-a%s/" % x,
                "/root/pypi/files/%s/%s" % (sha, x + ".whl"),
                "/root/pypi/files/%s/%s%s" % (sha, fn, x),
                "/root/pypi/files/%s/%s.metadata" % (sha, x)]
    bad_sha = [sha[:63], sha + "a", sha.upper(), "g" * 64, "", "0x" + sha[2:], sha[:32],
               sha[:63] + "%00", sha[:63] + "%67", " " + sha[1:], sha[:62] + "%20a", "-" * 64,
               "%61" * 64, sha[:63] + "G", "0" * 65, "0" * 128]
    for s in bad_sha:
        out += ["/root/pypi/files/%s/%s" % (s, fn), "/root/pypi/files/%s/%s.metadata" % (s, fn)]
    # (/, /{index} and /{index}/ are landing pages now)
    unknown = ["/root", "/root/", "/root/pypi/nothing",
               "/root/pypi/simple/larder-demo-a/extra", "/root/pypi/simple/a/b/c/",
               "/root/pypi/files/", "/root/pypi/files/%s" % sha, "/root/pypi/files/%s/" % sha,
               "/root/pypi/files/%s/%s/extra" % (sha, fn), "/nosuch/simple/",
               "/nosuch/simple/larder-demo-a/", "/+health/x", "/root/pypi/+simple/",
               "/root/pypi/SIMPLE/larder-demo-a/", "/root/pypi/Files/%s/%s" % (sha, fn),
               "/.env", "/.git/config", "/larder.db", "/larder.conf", "/tmp/", "/blobs/",
               "/root/pypi/simple/larder-demo-a/index.html"]
    return out + unknown


def test_hostile_requests(stack, fd):
    """Every hostile request is a 4xx, injects no header, fetches nothing
    upstream and changes nothing on disk."""
    d = fd[A11]
    warm_page(stack, "larder-demo-a")
    assert_stored(stack, d)
    stack.standin.reset()
    before_files = listing_with_sizes(stack.data_dir)
    before_db = db_content(stack.data_dir)
    port = stack.nginx.port
    tried = 0
    bad = []

    def check(r, what):
        nonlocal tried
        tried += 1
        head = "\n".join("%s: %s" % kv for kv in (r.headers.items() if r.headers else []))
        if not (400 <= r.status <= 499):
            bad.append((what, r.status, r.body[:120]))
        if re.search(r"(?im)^(x-injected|set-cookie):", head):
            bad.append((what, "header injected", head))

    for p in _hostile_paths(d.sha256, A11) + _names(d.sha256, A11):
        check(raw_request(port, p), p)
    # raw bytes a client library would refuse to send
    for raw in (b"/root/pypi/simple/\xff\xfe/", b"/root/pypi/simple/caf\xe9/",
                b"/root/pypi/simple/a\x00b/", b"/root/pypi/simple/a\tb/",
                b"/root/pypi/files/%s/\xc0\xae\xc0\xae" % d.sha256.encode()):
        check(raw_request(port, raw.decode("latin-1")), raw)
    # methods other than GET and HEAD
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND", "MKCOL"):
        for p in (page_path("larder-demo-a"), file_path(d), "/root/pypi/simple/", "/+health"):
            r = raw_request(port, p, method=method, body=b"x=1")
            check(r, (method, p))
            if method in ("POST", "PUT", "DELETE", "PATCH"):
                assert r.status == 405, (method, p, r)
                assert r.header("Allow") == "GET, HEAD", (method, p, dict(r.headers))
    for method in ("TRACE", "CONNECT", "BREW", "GET\x00"):
        check(raw_request(port, page_path("larder-demo-a"), method=method), method)
    # huge query strings and headers (nginx's own 4xx is fine)
    for q in ("q=" + "x" * 65536, "format=" + "%41" * 20000, "a=1&" * 16000):
        check(raw_request(port, page_path("larder-demo-a") + "?" + q), "query %d" % len(q))
    for h in ({"X-Big": "x" * 65536}, {"Accept": "application/json;q=0.1, " * 6000},
              {"Cookie": "c=" + "y" * 65536}, {"Range": "bytes=" + "0-1," * 20000},
              dict(("X-H%d" % i, "v" * 100) for i in range(1000))):
        check(raw_request(port, file_path(d), headers=h), "header %d" % len(str(h)))
    # an Accept that names nothing larder serves
    check(raw_request(port, page_path("larder-demo-a"), headers={"Accept": "image/png"}),
          "accept")
    # A name that only needs normalising is a 301 (not a 4xx): the query it
    # carries along stays inert in the Location.
    for q in ("x=%0d%0aX-Injected:%201", 'x="><script>alert(1)</script>', "x=%00",
              "x=" + "a" * 2000, "next=http://127.0.0.2/"):
        r = raw_request(port, "/root/pypi/simple/Larder_Demo.A?" + q)
        tried += 1
        loc = r.header("Location", "")
        if r.status != 301 or not loc.startswith(
                "http://127.0.0.1:%d/root/pypi/simple/larder-demo-a/?" % port):
            bad.append((q, r.status, loc))
        if r.header("X-Injected") is not None:
            bad.append((q, "header injected", dict(r.headers)))
    count("hostile", tried)
    assert not bad, "\n".join(map(repr, bad))

    # the internal location, straight from outside: nginx's 404
    for p in ("/_larder/blobs/sha256/%s/%s/%s" % (d.sha256[:2], d.sha256[2:4], d.sha256),
              "/_larder/larder.db"):
        assert raw_request(port, p).status == 404
    assert listing_with_sizes(stack.data_dir) == before_files
    assert db_content(stack.data_dir) == before_db
    c = stack.standin.counters()
    assert c["requests"] == {} and c["files"] == {}, c
    assert stack.larder.running
    assert stack.get("/+health").status == 200


def test_long_query_on_redirect_is_not_a_5xx(stack):
    r = raw_request(stack.nginx.port, "/root/pypi/simple/Larder_Demo.A?x=" + "a" * 4000)
    count("hostile")
    assert r.status == 301 or 400 <= r.status <= 499, r


def _restart_with(st, **keys):
    """Restarts larder with [larder] keys replaced in its config."""
    st.larder.stop()
    with open(st.larder.conf) as f:
        text = f.read()
    for k, v in keys.items():
        text, n = re.subn(r"(?m)^%s = .*$" % re.escape(k), "%s = %s" % (k, v), text)
        assert n == 1, k
    with open(st.larder.conf, "w") as f:
        f.write(text)
    st.larder.start()


BOGUS_RANGES = ["bytes=z-", "bytes=5-1", "bytes=999999999-", "bytes=-0", "bytes=-", "bytes=",
                "bytes=--5", "bytes=1-2-3", "bytes=0-0,-1", "bytes=0-1,1-2,2-3,3-4,4-5,5-6",
                "bytes=%(size)d-", "bytes=18446744073709551616-", "bytes=-18446744073709551616",
                "bytes=0x10-0x20", "bytes=1e3-", "items=0-5", "bytes = 0-5", "bytes=0-5\x0b",
                "bytes=-99999999999", "bytes=9223372036854775807-", "0-5", "bytes=\xff-",
                "bytes=-9223372036854775808", "bytes=+5-", "bytes=5-+9", "bytes=\t5-9",
                "bytes=00000000000000000000000000005-9"]


@pytest.mark.parametrize("mode", ["x-accel-redirect", "stream"])
def test_bogus_ranges(stack, fd, mode):
    """Bogus Range headers on a warm file, a page and a file being fetched:
    a 416, the whole 200 or a right 206, never a 5xx. With x-accel-redirect
    nginx answers ranges; in stream mode larder's own parser does."""
    if mode == "stream":
        _restart_with(stack, sendfile="stream")
    d = fd[A11]
    warm_page(stack, "larder-demo-a")
    warm_page(stack, "larder-demo-c")
    assert_stored(stack, d)
    before = listing_with_sizes(stack.data_dir)
    for rng in BOGUS_RANGES:
        rng = rng % {"size": d.size} if "%" in rng else rng
        for path in (file_path(d), page_path("larder-demo-a")):
            r = raw_request(stack.nginx.port, path, headers={"Range": rng,
                                                             "Accept": PIP_ACCEPT})
            count("hostile")
            assert r.status in (200, 206, 416), (rng, path, r)
            if r.status == 200 and path == file_path(d):
                assert r.body == d.data, (rng, r)
            if r.status == 206 and path == file_path(d):
                cr = r.header("Content-Range", "")
                if cr:
                    m = re.match(r"bytes (\d+)-(\d+)/(\d+)", cr)
                    assert m and r.body == d.data[int(m.group(1)):int(m.group(2)) + 1], (rng, cr)
    if mode == "stream":
        # what larder's parser makes of the brief's examples
        # (a reversed range is unsatisfiable, as nginx's own would be
        # ignored: larder answers 416 before handing the file over)
        for rng, want in (("bytes=z-", 200), ("bytes=5-1", 416), ("bytes=999999999-", 416),
                          ("bytes=-0", 416), ("bytes=%d-" % d.size, 416), ("bytes=2-5", 206),
                          ("bytes=-5", 206), ("bytes=0-0,-1", 200)):
            r = raw_request(stack.nginx.port, file_path(d), headers={"Range": rng})
            assert r.status == want, (rng, r)
    assert listing_with_sizes(stack.data_dir) == before
    # a Range on a file not yet fetched: the whole file, or the right part
    c = fd[C20]
    r = raw_request(stack.nginx.port, file_path(c), headers={"Range": "bytes=z-"})
    count("hostile")
    assert r.status == 200 and r.body == c.data, r
    assert not [l for l in request_lines(stack) if l[2] >= 500]
    assert_settled(stack)


# ================================================================ 5. hostile upstream pages

def _entry(url, filename, sha, **extra):
    e = {"filename": filename, "url": url, "hashes": {"sha256": sha}}
    e.update(extra)
    return e


def _hostile_entries(st, fd, evil):
    """(JSON file entries, HTML links, the file names that may be listed)."""
    good = fd[A11]
    good_url = "http://localhost:%d%s" % (st.standin.files_port, upstream_file_path(good))
    sha = hashlib.sha256(b"evil").hexdigest()   # no file has it
    ep = evil.port
    bad_urls = [
        evil.base + "/x-1.0-py3-none-any.whl",
        "http://127.0.0.2:%d/packages/x-1.0-py3-none-any.whl" % ep,
        "http://[::1]:%d/x-1.0-py3-none-any.whl" % ep,
        "http://10.0.0.1/x-1.0-py3-none-any.whl",
        "http://192.168.1.1/x-1.0-py3-none-any.whl",
        "http://172.16.0.1/x-1.0-py3-none-any.whl",
        "http://169.254.169.254/latest/meta-data/x-1.0-py3-none-any.whl",
        "http://0x7f000002:%d/x-1.0-py3-none-any.whl" % ep,
        "http://2130706434:%d/x-1.0-py3-none-any.whl" % ep,
        "http://0177.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "http://localhost@127.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "http://localhost:%d@127.0.0.2:%d/x-1.0-py3-none-any.whl" % (st.standin.files_port, ep),
        "http://127.0.0.2:%d\\@localhost/x-1.0-py3-none-any.whl" % ep,
        "http://127.0.0.2:%d#@localhost/x-1.0-py3-none-any.whl" % ep,
        "http://localhost.:%d/x-1.0-py3-none-any.whl" % ep,
        "http://localhost.evil.example/x-1.0-py3-none-any.whl",
        "http://evil-localhost/x-1.0-py3-none-any.whl",
        "http://files.pythonhosted.org/x-1.0-py3-none-any.whl",
        "https://127.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "//127.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "///127.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "http:/127.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "http://127.0.0.2:%d/%%2e%%2e/x-1.0-py3-none-any.whl" % ep,
        "file:///etc/passwd",
        "file://localhost/etc/x-1.0-py3-none-any.whl",
        "javascript:alert(1)//x-1.0-py3-none-any.whl",
        "data:application/zip;base64,UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==",
        "ftp://localhost/x-1.0-py3-none-any.whl",
        "gopher://localhost:70/x-1.0-py3-none-any.whl",
        "ht\ttp://localhost/x-1.0-py3-none-any.whl",
        " http://127.0.0.2:%d/x-1.0-py3-none-any.whl" % ep,
        "http://127.0.0.2:%d/x-1.0-py3-none-any.whl\r\nX: y" % ep,
        "http://" + "a" * 300 + "/x-1.0-py3-none-any.whl",
        "http://localhost:99999/x-1.0-py3-none-any.whl",
        "http://localhost:%d/" % st.standin.files_port + "a" * 9000 + ".whl",
    ]
    entries, links, kinds = [], [], 0
    for u in bad_urls:
        entries.append(_entry(u, "x-1.0-py3-none-any.whl", sha))
        links.append((u + "#sha256=" + sha, "x-1.0-py3-none-any.whl"))
        kinds += 1
    # relative links: they resolve against the page and stay on its host
    for rel in ("../../../../../etc/passwd", "/../../etc/passwd", "..%2f..%2fetc%2fpasswd",
                "./../../../x-1.0-py3-none-any.whl", "%2e%2e/%2e%2e/x-1.0-py3-none-any.whl"):
        entries.append(_entry(rel, None, sha))
        links.append((rel + "#sha256=" + sha, None))
        kinds += 1
    # unsafe names and hashes
    for name in ("../../../etc/passwd", "..", ".hidden.whl", "a/b.whl", "a\\b.whl",
                 "x\r\nX-Injected: 1.whl", "\u00e9t\u00e9.whl", "a" * 300 + ".whl"):
        entries.append(_entry(good_url, name, sha))
        links.append((good_url + "#sha256=" + sha, name))
        kinds += 1
    for h in ({}, {"md5": "0" * 32}, {"sha256": "0" * 63}, {"sha256": "g" * 64},
              {"sha256": sha + "00"}, {"sha256": ""}, {"sha256": 5}):
        e = _entry(good_url, "y-1.0-py3-none-any.whl", sha)
        e["hashes"] = h
        entries.append(e)
        frag = "&".join("%s=%s" % kv for kv in h.items())
        links.append((good_url + ("#" + frag if frag else ""), "y-1.0-py3-none-any.whl"))
        kinds += 1
    # (a NUL in a JSON string fails the whole page: HTML only)
    links.append((good_url + "#sha256=" + sha, "x\x00.whl"))
    entries.append(_entry(good_url, A11, good.sha256, size=good.size))
    links.append((good_url + "#sha256=" + good.sha256, A11))
    return entries, links, kinds


def _html_page(links, name="hostile"):
    import html as htmlmod
    out = ['<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.0">'
           '<title>Links for %s</title></head><body>' % name]
    for href, text in links:
        out.append('<a href="%s">%s</a><br>' % (htmlmod.escape(href, quote=True),
                                                 htmlmod.escape(text or "")))
    out.append("</body></html>")
    return "\n".join(out)


def _assert_served_only(st, project, allowed, evil, fd):
    for accept in (PIP_ACCEPT, "text/html"):
        r = st.get(page_path(project), accept=accept)
        assert r.status == 200, (accept, r)
        if accept == PIP_ACCEPT:
            doc = json.loads(r.body.decode("utf-8"))
            names = {f["filename"] for f in doc["files"]}
            for f in doc["files"]:
                assert re.fullmatch(r"\.\./\.\./files/[0-9a-f]{64}/[A-Za-z0-9._+!~-]+", f["url"]), f
        else:
            r.body.decode("utf-8")
            names = set(re.findall(r'href="\.\./\.\./files/[0-9a-f]{64}/([^"#]+)#',
                                   r.body.decode()))
            assert "<script" not in r.body.decode().lower()
        assert names <= set(allowed), (accept, names)
        assert A11 in names
    for (url,) in rows(st.data_dir, "SELECT url FROM files WHERE idx = 'pypi'"):
        host = re.match(r"https?://([^/:]+)", url).group(1)
        assert host in ("localhost", "127.0.0.1"), url
    assert evil.seen == [], "larder connected to an untrusted host: %r" % evil.seen


@pytest.mark.parametrize("form", ["json", "html"])
def test_hostile_links_are_dropped(stack, fd, evil, form):
    entries, links, kinds = _hostile_entries(stack, fd, evil)
    project = "hostile-%s" % form
    if form == "json":
        body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": entries})
        ctype = JSON_TYPE
    else:
        body = _html_page(links, project)
        ctype = "text/html; charset=utf-8"
    serve_raw(stack, {"match": "/simple/%s/" % project, "kind": "raw", "content_type": ctype,
                   "body": body})
    count("hostile", kinds)
    # relative links resolve on the upstream's own host: "passwd" may be listed
    _assert_served_only(stack, project, {A11, "passwd", "x-1.0-py3-none-any.whl"}, evil, fd)
    assert any("left out" in l for l in stack.larder.log_lines()), "drops not logged"
    # The listed files go to the upstream's hosts only; the rest are 404s.
    stack.standin.reset()
    doc = stack.get(page_path(project), accept=PIP_ACCEPT).json()
    for f in doc["files"]:
        r = get(stack, "/root/pypi/files/%s/%s" % (f["hashes"]["sha256"], f["filename"]))
        count("hostile")
        if f["filename"] == A11:
            assert_good_file(r, fd[A11])
        else:
            assert_failed_clearly(r)
    for name in ("x-1.0-py3-none-any.whl", "y-1.0-py3-none-any.whl", "passwd"):
        r = get(stack, "/root/pypi/files/%s/%s" % ("0" * 64, name))
        assert r.status == 404, r
    assert evil.seen == [], evil.seen
    assert_settled(stack)
    assert_store_sound(stack)


def _json_doc(files):
    return json.dumps({"meta": {"api-version": "1.0"}, "name": "p", "files": files})


@pytest.mark.stack(larder_extra={"max_page_size": "64k"}, cache_ttl=1)
def test_page_over_max_page_size(stack, fd):
    # Under the cap: fine. Over it: a 502, or the stale copy.
    small = _json_doc([_entry("http://localhost:1/a-1.0-py3-none-any.whl",
                              "a-1.0-py3-none-any.whl", "a" * 64)] * 300)
    assert len(small) < 60000
    serve_raw(stack, {"match": "/simple/under/", "kind": "raw", "content_type": JSON_TYPE,
                   "body": small})
    assert stack.get(page_path("under"), accept=PIP_ACCEPT).status == 200
    big = " " * (100 * 1024) + small
    for ctype in (JSON_TYPE, "text/html"):
        serve_raw(stack, {"match": "/simple/over/", "kind": "raw", "content_type": ctype,
                       "body": big})
        count("hostile")
        r = stack.get(page_path("over"), accept=PIP_ACCEPT)
        assert_page_502(r)
        assert b"larger than" in r.body, r.body
        assert page_row(stack, "over") is None
    # a cached page that grows over the cap is served stale
    first = warm_page(stack, "larder-demo-a")
    time.sleep(1.2)
    serve_raw(stack, {"match": "/simple/larder-demo-a/", "kind": "raw", "content_type": JSON_TYPE,
                   "body": big})
    count("hostile")
    r = stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", r
    assert r.body == first.body
    serve_raw(stack)
    assert_settled(stack)
    assert stack.larder.running


def test_page_with_too_many_files(stack, tmp_path):
    """More entries than simple.h's cap (1,000,000) is a 502, as JSON and as
    HTML; larder stays up."""
    n = 1000001
    jpath = str(tmp_path / "many.json")
    with open(jpath, "w") as f:
        f.write('{"meta": {"api-version": "1.0"}, "name": "many", "files": [')
        f.write(",".join(["0"] * n))
        f.write("]}")
    hpath = str(tmp_path / "many.html")
    with open(hpath, "w") as f:
        f.write("<html><body>")
        f.write("<a href=x>x</a>" * n)
        f.write("</body></html>")
    serve_raw(stack, {"match": "/simple/many-json/", "kind": "raw", "content_type": JSON_TYPE,
                   "file": jpath},
           {"match": "/simple/many-html/", "kind": "raw", "content_type": "text/html",
            "file": hpath})
    def too_many(case):
        count("hostile")
        r = stack.get(page_path(case[0]), accept=PIP_ACCEPT)
        assert_page_502(r)
        assert re.search(rb"more than 1000000", r.body), r.body

    run_cases([("many-json",), ("many-html",)], too_many)
    assert stack.larder.running
    assert stack.get("/+health").status == 200
    assert_settled(stack)


def test_deeply_nested_and_tricky_json(stack):
    depth = 100000
    bodies = {
        "nested-arrays": '{"files": ' + "[" * depth + "]" * depth + "}",
        "nested-objects": '{"files": [' + '{"a":' * depth + "1" + "}" * depth + "]}",
        "nested-unclosed": "[" * depth,
        "nested-meta": '{"meta": ' + '{"m":' * depth + "0" + "}" * depth + ', "files": []}',
        "duplicate-files-key": '{"files": [], "files": [{"url": "http://127.0.0.2/x.whl"}]}',
        "duplicate-url-key": '{"files": [{"filename": "a-1.0-py3-none-any.whl", '
                             '"url": "http://localhost/a-1.0-py3-none-any.whl", '
                             '"url": "http://127.0.0.2/a-1.0-py3-none-any.whl", '
                             '"hashes": {"sha256": "%s"}}]}' % ("a" * 64),
        "nul-in-string": '{"name": "a\\u0000b", "files": []}',
        "lone-surrogate": '{"name": "\\ud800", "files": []}',
        "huge-number": '{"files": [], "x": ' + "9" * 5000 + "}",
        "trailing-garbage": '{"files": []} {"files": []}',
        "bom": "\ufeff{\"files\": []}",
    }
    rules = [{"match": "/simple/%s/" % k, "kind": "raw", "content_type": JSON_TYPE, "body": v}
             for k, v in bodies.items()]
    serve_raw(stack, *rules)
    for k in bodies:
        count("hostile")
        t0 = time.monotonic()
        r = stack.get(page_path(k), accept=PIP_ACCEPT)
        assert time.monotonic() - t0 < 10, k
        if r.status == 200:
            doc = r.json()           # dropped what it could not use
            assert all("127.0.0.2" not in json.dumps(f) for f in doc["files"]), (k, doc)
        else:
            assert_page_502(r)
    assert stack.larder.running
    assert stack.get("/+health").status == 200
    assert_settled(stack)


def test_html_tricks(stack, fd, evil):
    """Entity tricks, nesting and broken markup in a PEP 503 page: the good
    link survives, nothing bad is listed, the output is clean UTF-8."""
    good = fd[A11]
    url = "http://localhost:%d%s" % (stack.standin.files_port, upstream_file_path(good))
    sha = good.sha256
    ep = evil.port
    X = "x-1.0-py3-none-any.whl"
    tricks = [
        '<a href="%s#sha256=%s">x&#x0;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#0;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#99999999;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#x110000;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#xD800;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#x41-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&amp-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#x;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&nosuchentity;-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">&#x2e;&#x2e;&#x2f;x.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s">x&#x0d;&#x0a;X-Injected: 1.whl</a>' % (url, sha),
        '<a href="&#x68;ttp://127.0.0.2:%d/%s#sha256=%s">%s</a>' % (ep, X, sha, X),
        '<a href="http&#58;//127.0.0.2:%d/%s#sha256=%s">%s</a>' % (ep, X, sha, X),
        '<a href="http://127.0.0.2&#x3a;%d/%s#sha256=%s">%s</a>' % (ep, X, sha, X),
        '<a href="jav&#x61;script:alert(1)#sha256=%s">%s</a>' % (sha, X),
        '<a href="%s#sha256&#x3d;%s&#x0;">z-1.0-py3-none-any.whl</a>' % (url, sha),
        '<a href="%s#sha256=%s" data-yanked="&#x0;&#99999999;">yanked-1.0-py3-none-any.whl</a>'
        % (url, sha),
        '<a href="%s#sha256=%s" data-requires-python="&#xD800;&gt;=3">rp-1.0-py3-none-any.whl</a>'
        % (url, sha),
        '<a href="%s#sha256=%s" data-core-metadata="sha256=&#x0;">cm-1.0-py3-none-any.whl</a>'
        % (url, sha),
        '<a href=%s#sha256=%s>unquoted-1.0-py3-none-any.whl' % (url, sha),
        '<a href="%s#sha256=%s"><a href="http://127.0.0.2:%d/n.whl#sha256=%s">nested.whl</a></a>'
        % (url, sha, ep, sha),
        "<div>" * 20000 + "</div>" * 20000,
        "<a " + 'x="y" ' * 20000 + ">many-attrs.whl</a>",
        '<a href="' + "&#x41;" * 20000 + '#sha256=%s">ents.whl</a>' % sha,
        "<!-- unterminated comment <a href='%s#sha256=%s'>hidden.whl</a>" % (url, sha),
    ]
    good_link = '<a href="%s#sha256=%s" data-requires-python="&gt;=3.7">%s</a>' % (url, sha, A11)
    body = ('<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.0">'
            "<title>Links for tricky</title></head><body>\n" + good_link + "\n"
            + "\n".join(tricks[:-1]) + "\n" + tricks[-1])
    serve_raw(stack, {"match": "/simple/tricky/", "kind": "raw",
                   "content_type": "text/html; charset=utf-8", "body": body})
    count("hostile", len(tricks))
    allowed = {A11, "x-1.0-py3-none-any.whl", "z-1.0-py3-none-any.whl",
               "yanked-1.0-py3-none-any.whl", "rp-1.0-py3-none-any.whl",
               "cm-1.0-py3-none-any.whl", "unquoted-1.0-py3-none-any.whl", "nested.whl",
               "xA-1.0-py3-none-any.whl"}
    _assert_served_only(stack, "tricky", allowed, evil, fd)
    doc = stack.get(page_path("tricky"), accept=PIP_ACCEPT).json()
    text = json.dumps(doc, ensure_ascii=False)
    assert "\x00" not in text and "\r" not in text
    # (the nested <a> lists A11 a second time, from its URL)
    assert any(f.get("requires-python") == ">=3.7" for f in doc["files"] if f["filename"] == A11)
    assert evil.seen == []
    assert_settled(stack)
