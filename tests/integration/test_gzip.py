"""Compressed pages (issue 11): each page rendering is stored with its gzip
beside it, DATA/blobs/sha256/ab/cd/<hex>.gz (when that is smaller), and a
client that accepts gzip gets those bytes with Content-Encoding: gzip and
an ETag of their own ("<hex>-gz"); one that does not gets the plain bytes.
Every page answer says Vary: Accept, Accept-Encoding.

nginx picks the copy itself (gzip_static in the internal location) when
pages go out by X-Accel-Redirect, and larder sends it when nginx's page
cache is on; lighttpd is handed it by X-Sendfile; behind Apache (whose
mod_xsendfile drops Content-Encoding) and in stream mode larder sends it.
Checked for cache, hosted and virtual (merged) pages, JSON and HTML, and
the JSON API's documents (stored and sent alike), GET,
HEAD, 304 and Range; pip installs with it; the collector, eviction and
fsck treat a copy as part of its blob.
"""

import gzip
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import time

import pytest

import frontends
import stack as stackmod
import uploads as up
import wheels
from stack import HTML_TYPE, JSON_TYPE, PIP_ACCEPT, blob_file

# (Accept-Encoding, whether the copy is the answer)
ENCODINGS = [
    (None, False),
    ("gzip", True),
    ("gzip, deflate", True),            # pip (requests)
    ("gzip, deflate, br, zstd", True),  # uv
    ("br;q=1, gzip;q=0.5", True),
    ("*", False),                       # (as nginx's gzip_static has it)
    ("gzip;q=0", False),
    ("gzip;q=0, *", False),
    ("identity", False),
    ("br", False),
]

HOSTED_APP = "larder-gz-app"


# ---------------------------------------------------------------- helpers

def sha256(data):
    return hashlib.sha256(data).hexdigest()


def vary_of(r):
    return {v.strip().lower() for h in r.header_all("Vary") for v in h.split(",")}


def wait_copy(data_dir, sha, timeout=15):
    """The path of blob sha's gzip'd copy once it is made (after the
    answer that stored the page), or None."""
    deadline = time.monotonic() + timeout
    while True:
        copy = stackmod.gz_copies(data_dir).get(sha)
        if copy or time.monotonic() > deadline:
            return copy
        time.sleep(0.05)


def wait_counted(data_dir, sha, timeout=15):
    """Waits for blob sha's gzip'd copy and for its inventory row to count
    it (both made after the answer, the row just after the file); returns
    the copy's path."""
    deadline = time.monotonic() + timeout
    copy = wait_copy(data_dir, sha, timeout)
    want = os.path.getsize(blob_file(data_dir, sha)) + os.path.getsize(copy)
    while db_rows(data_dir, "SELECT size FROM blobs WHERE sha256 = ?", (sha,)) != [(want,)] \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    return copy


def check_page(get, path, accept, data_dir, vary=("accept", "accept-encoding")):
    """GETs path (a function get(path, headers, method)) with each of
    ENCODINGS, and HEAD, a 304 and a Range for each: the copy when the
    client takes gzip, the plain bytes otherwise, the same page either
    way. Returns the plain bytes."""
    plain = get(path, {"Accept": accept})
    assert plain.status == 200 and plain.complete, (path, plain)
    sha = sha256(plain.body)
    # (a cold page's copy is made once its answer is out)
    copy = wait_copy(data_dir, sha)
    assert copy, "no %s.gz beside the rendering of %s" % (sha, path)
    with open(copy, "rb") as f:
        stored = f.read()
    assert gzip.decompress(stored) == plain.body
    assert len(stored) < len(plain.body)
    for ae, zipped in ENCODINGS:
        h = {"Accept": accept}
        if ae is not None:
            h["Accept-Encoding"] = ae
        what = "%s, Accept-Encoding %r" % (path, ae)
        r = get(path, h)
        assert r.status == 200 and r.complete, (what, r)
        assert set(vary) <= vary_of(r), (what, r.headers)
        assert int(r.header("Content-Length")) == len(r.body), what
        assert r.header("Content-Type") == plain.header("Content-Type"), (what, r.headers)
        if zipped:
            assert r.header("Content-Encoding") == "gzip", (what, r.headers)
            assert r.body == stored, what
            assert r.header("ETag") == '"%s-gz"' % sha, (what, r.headers)
        else:
            assert r.header("Content-Encoding") is None, (what, r.headers)
            assert r.body == plain.body, what
            assert r.header("ETag") == '"%s"' % sha, (what, r.headers)
        head = get(path, h, "HEAD")
        assert head.status == 200 and head.body == b"", (what, head)
        for k in ("Content-Length", "Content-Encoding", "ETag"):
            assert head.header(k) == r.header(k), (what, k, head.headers)
        # a client revalidating what it holds keeps it
        nm = get(path, dict(h, **{"If-None-Match": r.header("ETag")}))
        assert nm.status == 304 and nm.body == b"", (what, nm)
        assert nm.header("ETag") == r.header("ETag"), (what, nm.headers)
        # a range is of the bytes the answer carries (or the whole answer)
        rg = get(path, dict(h, Range="bytes=0-9"))
        if rg.status == 206:
            assert rg.body == r.body[:10], what
            assert rg.header("Content-Range") == "bytes 0-9/%d" % len(r.body), what
            assert rg.header("Content-Encoding") == r.header("Content-Encoding"), what
        else:
            assert rg.status == 200 and rg.body == r.body, (what, rg)
    return plain.body


def getter(base):
    def get(path, headers, method="GET"):
        return stackmod.http(base + path, method=method, headers=headers)
    return get


def upload_app(st, dist_dir, base=None):
    """Publishes larder-gz-app 1.0 to root/private; returns its filename."""
    tok = up.token_add(st.larder, "root/private", "upload,read")
    path = up.build_wheel(dist_dir, HOSTED_APP, "1.0")
    r = up.upload(base or st.base, "root/private", path, tok)
    assert r.status == 200, (r, r.body[:300])
    return os.path.basename(path)


def db_rows(data_dir, sql, args=()):
    con = sqlite3.connect(os.path.join(data_dir, "larder.db"), timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def larder_cmd(larder, *args):
    p = subprocess.run([larder.binary] + list(args[:1]) + ["-c", larder.conf] + list(args[1:]),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                       env=stackmod.clean_env())
    return p.returncode, p.stdout.decode(errors="replace")


def page_rows(data_dir):
    return db_rows(data_dir, "SELECT idx, project, json_sha, html_sha FROM pages")


def access_bytes(access_log, path):
    """The body bytes nginx logged for each GET of path (combined format)."""
    with open(access_log, errors="replace") as f:
        return [int(m.group(1)) for m in
                re.finditer(r'"GET %s HTTP/1\.[01]" 200 (\d+) ' % re.escape(path), f.read())]


# ---------------------------------------------------------------- nginx

GZ_STACK = {"larder_extra_text": up.HOSTED_CONF, "root_pypi": up.ROOT_PYPI}


@pytest.mark.parametrize("stack", [dict(GZ_STACK, page_cache=True),
                                   dict(GZ_STACK, page_cache=False)],
                         indirect=True, ids=["page-cache", "x-accel"])
def test_nginx_pages(stack, tmp_path):
    """Cache, hosted and virtual (merged) pages, JSON and HTML, the
    project list too, through nginx: with its page cache (larder sends the
    copy, nginx keeps one answer per Accept-Encoding) and without it
    (X-Accel-Redirect: gzip_static picks the copy, the map gives its
    ETag)."""
    upload_app(stack, str(tmp_path))
    paths = ["/pypi/simple/larder-demo-a/",          # cache
             "/root/private/simple/%s/" % HOSTED_APP,  # hosted
             "/root/pypi/simple/larder-demo-a/",     # virtual, private-first
             "/root/fallback/simple/larder-demo-c/",  # virtual, merged
             "/pypi/simple/"]                        # a project list
    get = getter(stack.base)
    for path in paths:
        for accept in (JSON_TYPE, HTML_TYPE):
            check_page(get, path, accept, stack.data_dir)
    # the JSON API's documents are stored and sent the same way
    for path in ("/pypi/pypi/larder-demo-a/json", "/root/pypi/pypi/larder-demo-a/1.1/json"):
        check_page(get, path, "application/json", stack.data_dir, vary=("accept-encoding",))
    assert stackmod.bad_blobs(stack.data_dir) == []
    rc, out = larder_cmd(stack.larder, "fsck")
    assert rc == 0, out


@pytest.mark.parametrize("stack", [{"page_cache": True}, {"page_cache": False}],
                         indirect=True, ids=["page-cache", "x-accel"])
def test_cold_page_goes_out_before_its_copy(stack):
    """A cold page is answered before its renderings' gzip'd copies are
    made (deflating and syncing them held the answer): plain, even to a
    client that takes gzip, and not kept by nginx's page cache; the
    copies follow, each counted in its blob's size, and the next client
    that takes gzip gets one."""
    path = "/root/pypi/simple/larder-demo-a/"
    for accept in (JSON_TYPE, HTML_TYPE):
        h = {"Accept": accept, "Accept-Encoding": "gzip, deflate"}
        if accept == JSON_TYPE:
            cold = stackmod.http(stack.base + path, headers=h)
            assert cold.status == 200 and cold.complete, cold
            assert cold.header("X-Larder-Cache") == "MISS", cold.headers
            assert cold.header("Content-Encoding") is None, cold.headers
            assert b"larder-demo-a" in cold.body
            plain = cold.body
        else:
            plain = stackmod.http(stack.base + path, headers={"Accept": accept}).body
        sha = sha256(plain)
        copy = wait_copy(stack.data_dir, sha)
        assert copy, "no copy of %s made after the answer" % sha
        with open(copy, "rb") as f:
            stored = f.read()
        assert gzip.decompress(stored) == plain
        size = db_rows(stack.data_dir, "SELECT size FROM blobs WHERE sha256 = ?", (sha,))
        assert size == [(len(plain) + len(stored),)], (size, len(plain), len(stored))
        warm = stackmod.http(stack.base + path, headers=h)
        assert warm.status == 200 and warm.header("Content-Encoding") == "gzip", warm.headers
        assert warm.body == stored
    assert stackmod.bad_blobs(stack.data_dir) == []
    rc, out = larder_cmd(stack.larder, "fsck")
    assert rc == 0, out


def test_no_worker_lets_nginx_keep_a_plain_answer_for_gzip(stack):
    """While a page's copy is not there (its fetching worker makes it after
    the answer), any worker asked for it by a client that takes gzip
    answers plain and tells nginx's page cache not to keep that answer, or
    nginx would hand it to every gzip client until the page went stale.
    The copy's absence is made here by moving it aside."""
    path = "/root/pypi/simple/larder-demo-b/"
    plain_h = {"Accept": JSON_TYPE}
    gz_h = {"Accept": JSON_TYPE, "Accept-Encoding": "gzip"}
    plain = stackmod.http(stack.base + path, headers=plain_h).body
    copy = wait_copy(stack.data_dir, sha256(plain))
    assert copy
    os.rename(copy, copy + ".aside")
    try:
        r = stackmod.http(stack.base + path, headers=gz_h)
        assert r.status == 200 and r.header("Content-Encoding") is None, r.headers
    finally:
        os.rename(copy + ".aside", copy)
    r = stackmod.http(stack.base + path, headers=gz_h)
    assert r.status == 200 and r.header("Content-Encoding") == "gzip", r.headers
    assert gzip.decompress(r.body) == plain


def test_a_head_leaves_nginx_no_empty_page(stack):
    """nginx's page cache keys a page by its URL, not the method: a HEAD
    answered first must not leave it an empty answer for the GETs after
    it (X-Accel-Expires: 0 on a HEAD)."""
    for path in ("/pypi/simple/larder-demo-b/", "/pypi/simple/"):
        for accept in (JSON_TYPE, HTML_TYPE):
            h = {"Accept": accept}
            r = stackmod.http(stack.base + path, method="HEAD", headers=h)
            assert r.status == 200 and r.body == b"", r
            r = stackmod.http(stack.base + path, headers=h)
            assert r.status == 200 and len(r.body) > 20, (path, accept, r, r.body)


@pytest.mark.parametrize("stack", [{"page_cache": True}, {"page_cache": False}],
                         indirect=True, ids=["page-cache", "x-accel"])
def test_nginx_pip_install(stack, new_venv):
    """pip (which sends Accept-Encoding: gzip) installs from gzip'd pages:
    nginx's log shows each page went out as its copy, but the cold answer
    that stored it (made after that answer, test_cold_page_goes_out_before_
    its_copy)."""
    for _ in range(2):
        venv = new_venv()
        rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
        assert rc == 0, out
        assert stackmod.installed(venv)["larder-demo-a"] == "1.1"
    for project in ("larder-demo-a", "larder-demo-b", "larder-demo-c"):
        pages = [r[2] for r in page_rows(stack.data_dir) if r[1] == project]
        for sha in pages:
            assert wait_copy(stack.data_dir, sha), (project, sha)
    copies = {os.path.getsize(p) for p in stackmod.gz_copies(stack.data_dir).values()}
    for project in ("larder-demo-a", "larder-demo-b", "larder-demo-c"):
        sent = access_bytes(stack.nginx.access_log, "/root/pypi/simple/%s/" % project)
        assert len(sent) == 2 and sent[1] in copies, (project, sent, copies)


# ---------------------------------------------------------------- other front ends

OTHERS = [k for k in frontends.KINDS if k != "nginx"]


@pytest.fixture
def fe(request, wheel_dir):
    """A front end (parametrised indirectly with its kind) with the hosted
    and virtual indexes, and .token, one to upload to root/private."""
    kind = request.param
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    workdir = frontends.new_workdir()
    standin = stackmod.Standin(wheel_dir, os.path.join(workdir, "standin"))
    front = None
    try:
        standin.start()
        front = frontends.make_frontend(kind, os.path.join(workdir, "fe"), standin.port,
                                        files_port=standin.files_port,
                                        larder_extra_text=up.HOSTED_CONF,
                                        root_pypi=up.ROOT_PYPI)
        # the token first: start() hands the whole data dir to the
        # servers' user, the database the command made included
        front.write_larder_conf()
        os.makedirs(front.data_dir, exist_ok=True)
        front.token = up.token_add(up.Cli(stackmod.larder_bin(), front.larder_conf),
                                   "root/private", "upload,read")
        front.start()
        yield front
    finally:
        try:
            if front is not None:
                front.stop()
            standin.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("fe", OTHERS, indirect=True)
def test_frontend_pages(fe, tmp_path):
    """The same answers behind lighttpd (X-Sendfile of the copy), Apache
    (mod_fcgid and mod_proxy_fcgi: larder sends the copy, mod_xsendfile
    would drop its Content-Encoding) and CGI; pip installs."""
    path = up.build_wheel(str(tmp_path / "dist"), HOSTED_APP, "1.0")
    r = up.upload(fe.base, "root/private", path, fe.token)
    assert r.status == 200, (r, r.body[:300])
    get = getter(fe.base)
    for path in ("/pypi/simple/larder-demo-a/", "/root/private/simple/%s/" % HOSTED_APP,
                 "/root/fallback/simple/larder-demo-c/"):
        for accept in (JSON_TYPE, HTML_TYPE):
            check_page(get, path, accept, fe.data_dir)
    check_page(get, "/pypi/pypi/larder-demo-a/json", "application/json", fe.data_dir,
               vary=("accept-encoding",))
    venv = stackmod.make_venv(str(tmp_path / "venv"))
    rc, out = stackmod.pip_install(venv, fe.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv)["larder-demo-a"] == "1.1"
    assert stackmod.bad_blobs(fe.data_dir) == []


# ---------------------------------------------------------------- the store

@pytest.mark.stack(cache_ttl=1, larder_extra={"gc_grace": "1"})
def test_copies_counted_collected_and_evicted(stack):
    """A rendering's inventory row counts its copy (so max_size does); a
    refresh that replaces a rendering deletes its copy with it after
    gc_grace; eviction deletes a copy with its blob and counts its
    bytes."""
    path = "/pypi/simple/larder-demo-a/"
    r = stack.get(path, accept=PIP_ACCEPT)
    assert r.status == 200, r
    (_, _, js, hs), = page_rows(stack.data_dir)
    for sha in (js, hs):
        wait_counted(stack.data_dir, sha)
    copies = stackmod.gz_copies(stack.data_dir)
    for sha in (js, hs):
        assert sha in copies
        (size,), = db_rows(stack.data_dir, "SELECT size FROM blobs WHERE sha256 = ?", (sha,))
        assert size == os.path.getsize(blob_file(stack.data_dir, sha)) + \
            os.path.getsize(copies[sha])
    (total,), = db_rows(stack.data_dir, "SELECT sum(size) FROM blobs")
    assert total == stackmod.store_bytes(stack.data_dir)

    # a refresh with other bytes (a file's size: the JSON rendering
    # changes, the HTML one, which has no sizes, stays): the replaced one
    # and its copy go
    stack.standin.control(sizes={wheels.A11: 1234})
    time.sleep(1.2)
    r = stack.get(path, accept=JSON_TYPE)  # (another key of nginx's cache)
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
    time.sleep(2.2)  # (gc_grace, counted in whole seconds)
    stack.standin.control(sizes={wheels.A11: 4321})
    r = stack.get(path, accept=HTML_TYPE)
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
    (_, _, js2, hs2), = page_rows(stack.data_dir)
    wait_counted(stack.data_dir, js2)
    copies = stackmod.gz_copies(stack.data_dir)
    assert not os.path.exists(blob_file(stack.data_dir, js)) and js not in copies
    (_, _, js2, hs2), = page_rows(stack.data_dir)
    assert js2 != js and hs2 == hs
    js = js2
    assert js in copies and hs in copies
    assert stackmod.bad_blobs(stack.data_dir) == []

    # eviction: the page is stale and unused past gc_grace, max_size tiny
    time.sleep(3)
    (before,), = db_rows(stack.data_dir, "SELECT sum(size) FROM blobs")
    rc, out = larder_cmd(stack.larder, "gc", "--max-size", "1k")
    assert rc == 0, out
    for sha in (js, hs):
        assert "evicted %s " % sha in out, out
    assert not os.path.exists(blob_file(stack.data_dir, js))
    assert stackmod.gz_copies(stack.data_dir) == {}
    m = re.search(r"^evicted (\d+) blobs, (\d+) bytes$", out, re.M)
    assert m and int(m.group(2)) == before - stackmod.store_bytes(stack.data_dir), out
    rc, out = larder_cmd(stack.larder, "fsck")
    assert rc == 0, out


def test_fsck_and_copies(stack):
    """fsck counts the copies and finds nothing wrong with sound ones; a
    corrupt copy and one without its blob are reported, and --repair
    deletes them (the page then goes out plain until it is stored
    again)."""
    path = "/pypi/simple/larder-demo-a/"
    assert stack.get(path, accept=PIP_ACCEPT).status == 200
    for row in page_rows(stack.data_dir):
        for sha in row[2:]:
            wait_counted(stack.data_dir, sha)
    rc, out = larder_cmd(stack.larder, "fsck")
    assert rc == 0, out
    assert re.search(r"; 2 gzip'd copies$", out, re.M), out
    assert re.search(r"\b0 bad, 0 unreferenced;", out), out

    (_, _, js, _), = page_rows(stack.data_dir)
    copy = stackmod.gz_copies(stack.data_dir)[js]
    with open(copy, "r+b") as f:
        f.seek(20)
        b = f.read(1)
        f.seek(20)
        f.write(bytes([b[0] ^ 0xFF]))
    orphan = blob_file(stack.data_dir, "e" * 64) + ".gz"
    os.makedirs(os.path.dirname(orphan), exist_ok=True)
    with open(orphan, "wb") as f:
        f.write(gzip.compress(b"no blob"))
    rc, out = larder_cmd(stack.larder, "fsck")
    assert rc != 0, out
    assert "corrupt: %s" % copy in out, out
    assert "gzip'd copy without its blob: %s" % orphan in out, out
    rc, out = larder_cmd(stack.larder, "fsck", "--repair")
    assert "repaired: removed %s" % copy in out, out
    assert not os.path.exists(copy) and not os.path.exists(orphan)
    assert os.path.exists(blob_file(stack.data_dir, js))
    rc, out = larder_cmd(stack.larder, "fsck")
    assert rc == 0, out
    # without its copy, a page goes out plain to everyone
    r = stack.get(path, accept=JSON_TYPE, headers={"Accept-Encoding": "gzip"})
    assert r.status == 200 and r.header("Content-Encoding") is None, r.headers
    assert sha256(r.body) == js
