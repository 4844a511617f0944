"""Release cooldown (min_release_age, exclude_newer, release_age_exempt),
offline indexes and stale_while_revalidate, through larder behind nginx
against the stand-in upstream.

The stand-in gives each file's mtime as its PEP 700 upload-time, so a test
copies the session's wheels and sets the mtime of the ones it wants young.
"""

import concurrent.futures
import hashlib
import os
import re
import shutil
import signal
import time

import pytest

import stack as stackmod
from stack import PIP_ACCEPT, HTML_TYPE, http
from wheels import A10, A11

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")

DAY = 86400
PAGE = "/root/pypi/simple/larder-demo-a/"


def young_wheels(tmp_path, wheel_dir, ages):
    """A copy of the wheels, with files named in ages uploaded that many
    seconds ago (the rest keep their old mtimes)."""
    d = str(tmp_path / "wheels")
    shutil.copytree(wheel_dir, d)
    now = time.time()
    for fn, age in ages.items():
        os.utime(os.path.join(d, fn), (now - age, now - age))
    return d


def make_stack(tmp_path, wheels, **kw):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    st = stackmod.Stack(str(tmp_path / "stack"), wheels, **kw)
    st.start()
    return st


@pytest.fixture
def cleanup():
    stacks = []
    yield stacks.append
    for st in stacks:
        st.stop()


def filenames(st, path=PAGE):
    r = st.get(path, accept=PIP_ACCEPT)
    assert r.status == 200, r
    return r, [f["filename"] for f in r.json()["files"]]


def file_url(wheels, fn, route="root/pypi"):
    with open(os.path.join(wheels, fn), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return "/%s/files/%s/%s" % (route, sha, fn)


def page_gets(st, project="larder-demo-a"):
    return st.standin.counters()["requests"].get("GET /simple/%s/" % project, 0)


# ------------------------------------------------------------ the cooldown

def test_young_release_held_back(tmp_path, wheel_dir, new_venv, cleanup):
    wheels = young_wheels(tmp_path, wheel_dir, {A11: 2 * DAY})
    st = make_stack(tmp_path, wheels, larder_extra={"min_release_age": "7d"})
    cleanup(st)
    r, names = filenames(st)
    assert A10 in names and A11 not in names, names
    assert r.header("X-Larder-Held-Back") == "1", r.headers
    assert "1.1" not in r.json().get("versions", []), r.json()
    # the HTML rendering too
    h = st.get(PAGE, accept=HTML_TYPE)
    assert h.status == 200 and A10 in h.body.decode() and A11 not in h.body.decode()
    assert h.header("X-Larder-Held-Back") == "1"
    assert any(re.search(r"held back 1 of \d+ files \(min_release_age\)", l)
               for l in st.larder.log_lines()), st.larder.log_text()[-2000:]
    # pip takes the newest release that is old enough
    venv = new_venv()
    code, out = stackmod.pip_install(venv, st.url, ["larder-demo-a"])
    assert code == 0, out
    assert stackmod.installed(venv)["larder-demo-a"] == "1.0"
    # and the file itself is refused, with the key named
    files_before = dict(st.standin.counters()["files"])
    r = st.get(file_url(wheels, A11))
    assert r.status == 403, r
    assert b"min_release_age = 7d" in r.body and b"2 days ago" in r.body, r.body
    r = st.get(file_url(wheels, A11) + ".metadata")
    assert r.status == 403, r
    assert st.standin.counters()["files"].get(A11, 0) == files_before.get(A11, 0)


def test_exempt_project_moves_fast(tmp_path, wheel_dir, new_venv, cleanup):
    wheels = young_wheels(tmp_path, wheel_dir, {A11: 3600})
    st = make_stack(tmp_path, wheels, larder_extra={
        "min_release_age": "7d", "release_age_exempt": "Larder_Demo-A"})
    cleanup(st)
    r, names = filenames(st)
    assert A11 in names, names
    assert r.header("X-Larder-Held-Back") is None
    venv = new_venv()
    code, out = stackmod.pip_install(venv, st.url, ["larder-demo-a"])
    assert code == 0, out
    assert stackmod.installed(venv)["larder-demo-a"] == "1.1"


def test_exclude_newer(tmp_path, wheel_dir, cleanup):
    wheels = young_wheels(tmp_path, wheel_dir, {A11: 2 * DAY})
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3 * DAY))
    st = make_stack(tmp_path, wheels, larder_extra={"exclude_newer": cutoff})
    cleanup(st)
    r, names = filenames(st)
    assert A10 in names and A11 not in names, names
    assert r.header("X-Larder-Held-Back") == "1"
    r = st.get(file_url(wheels, A11))
    assert r.status == 403, r
    assert ("exclude_newer = %s" % cutoff).encode() in r.body, r.body


def test_held_file_matures(tmp_path, wheel_dir, cleanup):
    """The upstream page does not change, yet the held file shows up once
    it is old enough: the page's ttl ends then and it is fetched whole."""
    wheels = young_wheels(tmp_path, wheel_dir, {A11: 60 - 4})
    st = make_stack(tmp_path, wheels, larder_extra={"min_release_age": "1m"})
    cleanup(st)
    r, names = filenames(st)
    assert A11 not in names, names
    assert st.get(file_url(wheels, A11)).status == 403
    gets = page_gets(st)
    time.sleep(5)
    r, names = filenames(st)
    assert A11 in names, names
    assert r.header("X-Larder-Held-Back") is None
    assert page_gets(st) == gets + 1
    assert st.standin.counters()["not_modified"] == 0
    r = st.get(file_url(wheels, A11))
    assert r.status == 200, r


@pytest.mark.stack(html_only=True, larder_extra={"min_release_age": "7d"})
def test_html_upstream_fails_closed(stack):
    r, names = filenames(stack)
    assert names == [], names
    assert int(r.header("X-Larder-Held-Back")) >= 2
    assert any("an HTML page gives no upload times" in l
               for l in stack.larder.log_lines())


def test_virtual_shows_the_filtered_leaf(tmp_path, wheel_dir, cleanup):
    """A virtual index shows its cache layer's filtered page and its held
    count (the pypi cache index and root/pypi over it)."""
    wheels = young_wheels(tmp_path, wheel_dir, {A11: 2 * DAY})
    st = make_stack(tmp_path, wheels, larder_extra={"min_release_age": "7d"})
    cleanup(st)
    r, names = filenames(st, "/pypi/simple/larder-demo-a/")
    assert A11 not in names and r.header("X-Larder-Held-Back") == "1"
    r, names = filenames(st, PAGE)
    assert A11 not in names and r.header("X-Larder-Held-Back") == "1"


# ------------------------------------------------------------ offline

def set_larder_keys(st, **keys):
    """Adds [larder] keys to the running larder's config and reloads it."""
    with open(st.larder.conf) as f:
        text = f.read()
    add = "".join("%s = %s\n" % kv for kv in keys.items())
    text = text.replace("[larder]\n", "[larder]\n" + add, 1)
    with open(st.larder.conf, "w") as f:
        f.write(text)
    st.larder.proc.send_signal(signal.SIGHUP)
    time.sleep(1.5)  # the new generation of workers takes over


@pytest.mark.stack(cache_ttl=1)
def test_offline(stack, new_venv, wheel_dir):
    st = stack
    venv = new_venv()
    code, out = stackmod.pip_install(venv, st.url, ["larder-demo-a"])
    assert code == 0, out
    set_larder_keys(st, offline="yes")
    time.sleep(1.1)  # every page is stale now
    st.standin.reset()
    r, names = filenames(st)
    assert A11 in names
    assert r.header("X-Larder-Cache") == "STALE", r.headers
    # a cold page, a cold file and a cold HEAD: 503s that say why
    r = st.get("/root/pypi/simple/larder-demo-nometa/", accept=PIP_ACCEPT)
    assert r.status == 503 and b"offline" in r.body, r
    r = st.get(file_url(wheel_dir, A10))
    assert r.status == 503 and b"is offline (offline = yes)" in r.body, r
    r = st.get(file_url(wheel_dir, A10), method="HEAD")
    assert r.status == 503, r
    counters = st.standin.counters()
    assert counters["requests"] == {} and counters["files"] == {}, counters
    # with the upstream gone, the install works from the cache
    st.standin.stop()
    venv2 = new_venv()
    code, out = stackmod.pip_install(venv2, st.url, ["larder-demo-a"])
    assert code == 0, out
    assert stackmod.installed(venv2) == stackmod.installed(venv)


# ------------------------------------------------------------ stale_while_revalidate

@pytest.mark.stack(cache_ttl=1, larder_extra={"stale_while_revalidate": "60"},
                   workers=4)
def test_stale_while_revalidate_burst(stack):
    st = stack
    r, names = filenames(st)
    time.sleep(1.2)
    st.standin.reset()
    st.standin.control(delay=2)

    def one(_):
        t = time.monotonic()
        r = http(st.base + PAGE, headers={"Accept": PIP_ACCEPT})
        return r.status, r.header("X-Larder-Cache"), time.monotonic() - t

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(one, range(8)))
    for status, cache, took in got:
        assert status == 200 and cache == "STALE" and took < 1.5, got
    # one revalidation upstream, after the answers
    stackmod.wait_for(lambda: page_gets(st) >= 1, timeout=10)
    time.sleep(2.5)
    assert page_gets(st) == 1, st.standin.counters()
    # the revalidation renewed the page: fresh again for cache_ttl
    st.standin.control(delay=0)
    r = st.get(PAGE, accept=PIP_ACCEPT)
    assert r.status == 200
    assert page_gets(st) <= 2


@pytest.mark.stack(cache_ttl=1, larder_extra={"stale_while_revalidate": "1"})
def test_stale_past_the_window_waits(stack):
    """Past cache_ttl + stale_while_revalidate a page is refreshed before
    it is answered, as without the key."""
    st = stack
    filenames(st)
    time.sleep(2.3)
    st.standin.reset()
    r = st.get(PAGE, accept=PIP_ACCEPT)
    assert r.header("X-Larder-Cache") == "REVALIDATED", r.headers
    assert page_gets(st) == 1
