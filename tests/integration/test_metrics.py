"""Metrics, the status page and the log (docs/operations.md).

Every metric is read before and after the requests that should move it,
through nginx, from GET /metrics (Prometheus text) and GET /+stats (JSON),
which must agree. The status page is rendered by headless Chromium
(Debian's `chromium`), its screenshot kept as tests/out/status.png. The log
file test moves the file, sends SIGUSR1 and checks that new lines land in a
new file and none are lost.
"""

import json
import os
import re
import signal
import struct
import subprocess
import time
import zlib

import pytest

import stack as stackmod
from stack import PIP_ACCEPT, http
from wheels import A10, A11

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "out")
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
FAST = {"fetch_retries": 0, "connect_timeout": 2, "first_byte_timeout": 2,
        "fetch_timeout": 2}

SAMPLE = re.compile(r'^(larder_[a-z_]+)(?:\{([^}]*)\})? (-?[0-9]+)$')


def metrics(st):
    """{(name, ((label, value), ...)): value} of GET /metrics; checks the
    exposition format on the way (HELP and TYPE before each family)."""
    r = st.get("/metrics")
    assert r.status == 200, r
    assert r.header("Cache-Control") == "no-store", dict(r.headers)
    assert r.header("Content-Type").startswith("text/plain; version=0.0.4"), dict(r.headers)
    out, typed = {}, set()
    for line in r.body.decode().splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge"), line
            typed.add(name)
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        name, labels, value = m.groups()
        assert name in typed, "%s has no TYPE line before it" % name
        key = tuple(sorted(tuple(kv.split("=", 1)) for kv in labels.split(","))) \
            if labels else ()
        out[(name, tuple((k, v.strip('"')) for k, v in key))] = int(value)
    return out


def req(m, kind, outcome):
    return m[("larder_requests_total", (("kind", kind), ("outcome", outcome)))]


def up_err(m, kind):
    return m[("larder_upstream_errors_total", (("kind", kind),))]


def scalar(m, name):
    return m[(name, ())]


def delta(before, after):
    """{key: after - before} of what moved."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def stats(st):
    r = st.get("/+stats")
    assert r.status == 200, r
    assert r.header("Cache-Control") == "no-store", dict(r.headers)
    assert r.header("Content-Type") == "application/json", dict(r.headers)
    return r.json()


def agree(m, j):
    """/+stats (j) says what /metrics (m, scraped after it) says: the same,
    but for the request for /+stats itself."""
    for kind, outcomes in j["requests"].items():
        for outcome, n in outcomes.items():
            itself = 1 if (kind, outcome) == ("other", "none") else 0
            assert req(m, kind, outcome) == n + itself, (kind, outcome)
    for kind, n in j["upstream_errors"].items():
        assert up_err(m, kind) == n, kind
    assert scalar(m, "larder_served_bytes_total") == j["served_bytes"]
    assert scalar(m, "larder_fetched_bytes_total") == j["fetched_bytes"]
    assert scalar(m, "larder_evicted_blobs_total") == j["evicted_blobs"]
    assert scalar(m, "larder_evicted_bytes_total") == j["evicted_bytes"]
    assert scalar(m, "larder_fetches_in_flight") == j["fetches_in_flight"]
    assert scalar(m, "larder_stats_start_time_seconds") == j["since"]
    assert scalar(m, "larder_store_bytes") == j["store"]["bytes"]
    assert scalar(m, "larder_store_blobs") == j["store"]["blobs"]
    assert m.get(("larder_store_limit_bytes", ()), 0) == j["store"]["limit"]
    n = sum(1 for k in m if k[0] == "larder_requests_total")
    assert n == 6 * 6, n


def page(st, project, accept=PIP_ACCEPT):
    return st.get("/root/pypi/simple/%s/" % project, accept=accept)


def file_url(st, d, metadata=False):
    return "/root/pypi/files/%s/%s%s" % (d.sha256, d.filename, ".metadata" if metadata else "")


def moved(st, before):
    """The metrics now, and what moved since before (the scrapes of
    /metrics and /+stats themselves are requests of kind other)."""
    after = metrics(st)
    d = delta(before, after)
    return after, {k: v for k, v in d.items()
                   if not (k[0] == "larder_requests_total" and ("kind", "other") in k[1])}


def test_requests_bytes_and_errors(stack, dists):
    st = stack
    a10 = dists[A10]
    m0 = metrics(st)

    # a page: a miss, then a hit served from the store
    r = page(st, "larder-demo-a")
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
    # counted when its worker is done, after the answer: the page's gzip'd
    # copies are made in between
    stackmod.wait_for(lambda: req(metrics(st), "page", "miss") - req(m0, "page", "miss") == 1)
    m1, d = moved(st, m0)
    assert req(m1, "page", "miss") - req(m0, "page", "miss") == 1, d
    assert d[("larder_fetched_bytes_total", ())] > 0, d
    assert ("larder_served_bytes_total", ()) not in d, d
    # (nginx keeps fresh pages, conf/nginx.conf: another Accept is another
    # key of its cache, so this one comes to larder)
    r = page(st, "larder-demo-a", accept=JSON_ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
    m2, d = moved(st, m1)
    assert d == {("larder_requests_total", (("kind", "page"), ("outcome", "hit"))): 1,
                 ("larder_served_bytes_total", ()): len(r.body)}, d

    # a file: a miss fetches exactly its bytes, a hit serves them
    r = st.get(file_url(st, a10))
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
    m3, d = moved(st, m2)
    assert d == {("larder_requests_total", (("kind", "file"), ("outcome", "miss"))): 1,
                 ("larder_fetched_bytes_total", ()): a10.size,
                 ("larder_store_bytes", ()): a10.size,
                 ("larder_store_blobs", ()): 1}, d
    r = st.get(file_url(st, a10))
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
    assert r.body == a10.data
    m4, d = moved(st, m3)
    assert d == {("larder_requests_total", (("kind", "file"), ("outcome", "hit"))): 1,
                 ("larder_served_bytes_total", ()): a10.size}, d
    # the hit went out by X-Accel-Redirect: the log names its bytes
    line = st.larder.find_log("GET", file_url(st, a10), 200)
    hits = [l for l in st.larder.log_lines() if file_url(st, a10) in l and " HIT " in l]
    assert hits and (" 200 HIT %dB " % a10.size) in hits[-1], (line, hits)
    # a range of it: the bytes of the range
    r = st.get(file_url(st, a10), headers={"Range": "bytes=0-99"})
    assert r.status == 206 and len(r.body) == 100, r
    m4, d = moved(st, m4)
    assert d[("larder_served_bytes_total", ())] == 100, d

    # its .metadata
    r = st.get(file_url(st, a10, metadata=True))
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
    r = st.get(file_url(st, a10, metadata=True))
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
    m5, d = moved(st, m4)
    assert req(m5, "metadata", "miss") - req(m4, "metadata", "miss") == 1, d
    assert req(m5, "metadata", "hit") - req(m4, "metadata", "hit") == 1, d
    assert d[("larder_fetched_bytes_total", ())] == len(a10.metadata), d
    assert d[("larder_served_bytes_total", ())] == len(a10.metadata), d
    assert d[("larder_store_bytes", ())] == len(a10.metadata), d
    assert d[("larder_store_blobs", ())] == 1, d
    assert ("larder_store_limit_bytes", ()) not in m5  # no max_size

    # an upstream 404 and an upstream 5xx, counted by kind
    r = page(st, "no-such-project")
    assert r.status == 404, r
    st.standin.control(status={"/simple/larder-demo-c/": 503})
    r = page(st, "larder-demo-c")
    assert r.status == 502, r
    m6, d = moved(st, m5)
    assert up_err(m6, "http_4xx") - up_err(m5, "http_4xx") == 1, d
    assert up_err(m6, "http_5xx") - up_err(m5, "http_5xx") == 1, d
    assert req(m6, "page", "error") - req(m5, "page", "error") == 2, d

    # the upstream gone: a connection error
    st.standin.stop()
    r = page(st, "larder-demo-nometa")
    assert r.status == 502, r
    m7, d = moved(st, m6)
    assert up_err(m7, "connect") - up_err(m6, "connect") == 1, d
    assert scalar(m7, "larder_fetches_in_flight") == 0

    # the JSON says the same, and lists the project asked for most
    j = stats(st)
    agree(metrics(st), j)
    assert j["top_projects"][0]["name"] == "larder-demo-a", j["top_projects"]
    assert j["top_projects"][0]["count"] == 2, j["top_projects"]
    assert len(j["hours"]) == 8 * 24
    # a fresh store: the history holds all there is
    assert sum(h["served_bytes"] for h in j["hours"]) == j["served_bytes"]
    assert sum(h["fetched_bytes"] for h in j["hours"]) == j["fetched_bytes"]


@pytest.mark.stack(cache_ttl=1, larder_extra=FAST)
def test_revalidated_and_stale(stack):
    st = stack
    r = page(st, "larder-demo-a")
    assert r.status == 200, r
    m0 = metrics(st)
    time.sleep(2)
    # each with an Accept of its own, past the page cache of nginx
    r = page(st, "larder-demo-a", accept=JSON_ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") == "REVALIDATED", r
    m1, d = moved(st, m0)
    assert req(m1, "page", "revalidated") - req(m0, "page", "revalidated") == 1, d
    assert d[("larder_served_bytes_total", ())] == len(r.body), d
    time.sleep(2)
    st.standin.stop()
    r = page(st, "larder-demo-a", accept="text/html")
    assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", r
    m2, d = moved(st, m1)
    assert req(m2, "page", "stale") - req(m1, "page", "stale") == 1, d
    assert up_err(m2, "connect") - up_err(m1, "connect") == 1, d
    assert d[("larder_served_bytes_total", ())] == len(r.body), d
    j = stats(st)
    agree(metrics(st), j)


def test_counters_survive_a_restart(stack):
    st = stack
    assert page(st, "larder-demo-a").status == 200
    # counted when its worker is done, after the page's gzip'd copies
    stackmod.wait_for(lambda: req(metrics(st), "page", "miss") == 1)
    before = req(metrics(st), "page", "miss")
    st.larder.stop()
    st.larder.start()
    assert req(metrics(st), "page", "miss") == before == 1


# ---------------------------------------------------------------- OCI

@pytest.fixture
def oci(tmp_path):
    import ociup
    from oci_images import build_image
    why = ociup.missing_reason() or stackmod.missing_reason()
    if why:
        pytest.skip(why)
    img = build_image(str(tmp_path / "img"), [4 * 1024, 300 * 1024], seed="metrics",
                      tag="1.0")
    reg = ociup.Registry(str(tmp_path / "registry")).start()
    made = []
    try:
        ociup.push(img.layout, img.tag, "%s/small:1.0" % reg.host, creds=reg.creds)
        pushed = ociup.pushed_info(reg.client(), "small", "1.0", img)
        st = ociup.OciStack(str(tmp_path / "oci"), reg.port)
        made.append(st)
        st.start()
        yield st, pushed
    finally:
        for st in made:
            st.stop()
        reg.stop()


def test_oci_manifest_and_blob(oci):
    from ociup import ACCEPT_ALL
    st, pushed = oci
    m0 = metrics(st)
    # a GET (the miss), a HEAD (larder's hit, kept by nginx under a key of
    # its own), a GET again: nginx's hit, which larder never sees
    for method, want in (("GET", "MISS"), ("HEAD", "HIT"), ("GET", "HIT")):
        r = st.get(st.path("small", "manifests", "1.0"), accept=ACCEPT_ALL, method=method)
        assert r.status == 200 and r.header("X-Larder-Cache") == want, r
    m1, d = moved(st, m0)
    assert req(m1, "manifest", "miss") - req(m0, "manifest", "miss") == 1, d
    assert req(m1, "manifest", "hit") - req(m0, "manifest", "hit") == 1, d
    digest, size = max(pushed.blobs.items(), key=lambda kv: kv[1])
    r = st.get(st.path("small", "blobs", digest))
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
    m2, d = moved(st, m1)
    assert req(m2, "blob", "miss") - req(m1, "blob", "miss") == 1, d
    assert d[("larder_fetched_bytes_total", ())] == size, d
    r = st.get(st.path("small", "blobs", digest))
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT" and len(r.body) == size, r
    m3, d = moved(st, m2)
    assert d == {("larder_requests_total", (("kind", "blob"), ("outcome", "hit"))): 1,
                 ("larder_served_bytes_total", ()): size}, d
    j = stats(st)
    agree(metrics(st), j)
    assert j["top_images"] and j["top_images"][0]["name"] == "test/small", j["top_images"]


# ---------------------------------------------------------------- the page

def png_size_and_colours(path):
    """(width, height, distinct colours of a sample of pixels) of an 8-bit
    RGB or RGBA PNG, read with zlib alone."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = ihdr[:4]
    assert depth == 8 and ctype in (2, 6), ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(h):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        ftype, cur = line[0], bytearray(line[1:])
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                cur[i] = (cur[i] + a) & 255
            elif ftype == 2:
                cur[i] = (cur[i] + b) & 255
            elif ftype == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 8 == 0:
            for x in range(0, w, 8):
                colours.add(bytes(cur[x * bpp:x * bpp + 3]))
        prev = cur
    return w, h, colours


def chromium():
    for name in ("chromium", "chromium-browser"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            p = os.path.join(d, name)
            if os.access(p, os.X_OK):
                return p
    return None


@pytest.mark.stack(larder_extra={"max_size": "1G"})
def test_status_page(stack, dists):
    st = stack
    # a miss and two hits (each Accept its own key in nginx's page
    # cache), a file missed then hit, another page
    for accept in (PIP_ACCEPT, JSON_ACCEPT, "text/html"):
        assert page(st, "larder-demo-a", accept=accept).status == 200
    assert page(st, "larder-demo-c", accept=JSON_ACCEPT).status == 200
    for _ in range(2):
        assert st.get(file_url(st, dists[A11])).status == 200
    r = st.get("/+status")
    assert r.status == 200, r
    assert r.header("Cache-Control") == "no-store", dict(r.headers)
    assert r.header("Content-Type") == "text/html; charset=utf-8", dict(r.headers)
    html = r.body.decode()
    assert "<script" not in html.lower()
    assert html.count("<svg") == 5, html.count("<svg")   # day and week twice, store
    assert html.count('<rect class="bar"') >= 4
    assert "larder-demo-a" in html and "Projects" in html and "Images" in html
    assert "Upstreams" in html and "127.0.0.1:%d" % st.standin.port in html
    assert ">ok<" in html
    assert "of 1.0 GiB (0 %)" in html and 'class="gauge"' in html
    assert scalar(metrics(st), "larder_store_limit_bytes") == 1 << 30
    browser = chromium()
    if not browser:
        pytest.skip("no chromium (Debian's chromium package) to render the status page")
    os.makedirs(OUT, exist_ok=True)
    shot = os.path.join(OUT, "status.png")
    if os.path.exists(shot):
        os.unlink(shot)
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--screenshot=%s" % shot,
                        "--window-size=1200,1600", st.base + "/+status"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                       env=dict(os.environ, HOME=str(st.dir)))
    assert os.path.exists(shot), p.stdout.decode(errors="replace")[-3000:]
    w, h, colours = png_size_and_colours(shot)
    assert (w, h) == (1200, 1600), (w, h)
    # text, the bars' blue and the grid: far from one blank colour
    assert len(colours) >= 3, colours
    assert any(c[2] > 150 and c[0] < 120 for c in colours), "no bar colour in the screenshot"
    # the browser asked for it like anyone: a request of kind other
    assert st.larder.find_log("GET", "/+status", 200)


def upstream_row(html, what="index pypi"):
    m = re.search(r"<tr><td>%s</td>.*?</tr>" % re.escape(what), html)
    assert m, html
    return m.group(0)


@pytest.mark.stack(cache_ttl=1, larder_extra={"error_ttl": 1})
def test_status_page_shows_a_dead_upstream_after_error_ttl(stack):
    """The upstreams table says what the last attempt did, with the last
    answer and the last failure, not the breaker's memory: an upstream
    still down after error_ttl is not "ok" while pages are served stale."""
    st = stack
    row = upstream_row(st.get("/+status").body.decode())
    assert "not asked yet" in row and row.count(">never<") == 2, row
    assert page(st, "larder-demo-a").status == 200
    row = upstream_row(st.get("/+status").body.decode())
    assert 'class="ok">ok<' in row, row
    assert re.search(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(\d+ s ago\)</td><td>never</td></tr>", row), row
    st.standin.kill()
    time.sleep(1.2)
    r = page(st, "larder-demo-a")
    assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", r
    row = upstream_row(st.get("/+status").body.decode())
    assert "failing: " in row, row
    time.sleep(1.5)   # error_ttl passes; the upstream is still down
    row = upstream_row(st.get("/+status").body.decode())
    assert ">ok<" not in row, row
    assert 'class="bad">last attempt failed: ' in row, row
    assert row.count(">never<") == 0, row
    # back: the next answer says so
    st.standin.start()
    time.sleep(1.2)
    assert page(st, "larder-demo-a").status == 200
    row = upstream_row(st.get("/+status").body.decode())
    assert 'class="ok">ok<' in row and row.count(">never<") == 0, row


# ---------------------------------------------------------------- the log

def test_log_file_reopened_on_sigusr1(tmp_path, wheel_dir):
    why = stackmod.missing_reason()
    if why:
        pytest.skip(why)
    log = str(tmp_path / "access.log")
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, larder_extra={"log_file": log})
    st.start()
    try:
        n = 20
        for i in range(n):
            r = st.get("/+health?i=%d" % i)
            assert r.status == 200, r
        lines = stackmod.wait_for(lambda: open(log).read().count("GET /+health?... 200") >= n)
        assert lines, open(log).read()[-2000:]
        # a line a machine can parse
        text = open(log).read()
        m = re.search(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) larder\[(\d+)\]: "
                      r"GET /\+health\?\.\.\. 200 - (\d+)B (\d+)ms$", text, re.M)
        assert m, text[-2000:]
        assert int(m.group(3)) == len(r.body), (m.group(0), r.body)
        # nothing of the requests went to the old stderr log
        assert "GET /+health" not in st.larder.log_text()
        os.rename(log, log + ".1")
        st.larder.proc.send_signal(signal.SIGUSR1)
        assert stackmod.wait_for(lambda: os.path.exists(log)), "no new log file"
        # the workers wait in epoll_pwait with SIGUSR1 let in: they reopen
        # at once
        time.sleep(0.5)
        for i in range(n):
            assert st.get("/+health?j=%d" % i).status == 200
        assert stackmod.wait_for(lambda: open(log).read().count("GET /+health?... 200") >= n)
        assert st.larder.running, "larder died on SIGUSR1"
        old, new = open(log + ".1").read(), open(log).read()
        # none lost, none twice: 2n request lines over the two files
        total = (old + new).count("GET /+health?... 200")
        assert total == 2 * n, (old[-1500:], new[-1500:])
        assert old.count("GET /+health?... 200") == n, old[-1500:]
        assert new.count("GET /+health?... 200") == n, new[-1500:]
        pids = set(re.findall(r"larder\[(\d+)\]: GET", new))
        assert pids, new
    finally:
        st.stop()


def test_log_file_that_cannot_be_opened_is_refused(tmp_path):
    why = stackmod.missing_reason()
    if why:
        pytest.skip(why)
    bad = str(tmp_path / "no-such-dir" / "larder.log")
    lr = stackmod.Larder(str(tmp_path / "larder"), stackmod.free_port(),
                         extra={"log_file": bad})
    p = subprocess.run([lr.binary, "serve", "-c", lr.conf, "--listen", lr.listen]
                       + stackmod.serve_user_args(lr.binary),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                       env=stackmod.clean_env())
    assert p.returncode == 1, p
    out = p.stdout.decode(errors="replace")
    assert "%s: opening the log file: No such file or directory" % bad in out, out
    assert not os.path.exists(bad)
