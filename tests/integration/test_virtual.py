"""Virtual indexes that merge their layers, under a policy (docs/hosting.md).

Two stand-in upstreams, each the upstream of a cache index ("pypi", the
stack's own, and "second"), under virtual indexes with different policies:

    both      fallback       every layer, merged
    guarded   fallback       protected_names = larder-demo-c
    private   no-fallback    hosted layers only (there are none)

The second upstream has what the first lacks (larder-demo-a 2.0 and a
project of its own) and a larder_demo_c-2.0 wheel under the same file name
as the first's but with other bytes, so which layer won is visible.
"""

import os
import shutil
import time
from urllib.parse import urljoin, urlsplit

import pytest

import flighthelp as fh
import stack as stackmod
import wheels
from stack import HTML_TYPE, JSON_TYPE, PIP_ACCEPT, http
from wheels import A10, A11, C20

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")

A20 = "larder_demo_a-2.0-py3-none-any.whl"
ONLY = "larder_demo_only-1.0-py3-none-any.whl"

CONF = '''
[index "second"]
type = cache
upstream = http://127.0.0.1:%(port)d/simple/
trusted_hosts = localhost:%(files_port)d

[index "both"]
type = virtual
layers = pypi second
policy = fallback

[index "guarded"]
type = virtual
layers = root/pypi second
policy = fallback
protected_names = larder-demo-c other-*

[index "private"]
type = virtual
layers = pypi second
policy = no-fallback
'''


def build_second(d):
    """The second upstream's distributions; returns {filename: Dist}."""
    wheels.build_wheel(d, "larder-demo-a", "2.0", ["larder_demo.b>=1.0"])
    wheels.build_wheel(d, "larder-demo-only", "1.0")
    # same file name as the first upstream's, other bytes
    wheels.build_wheel(d, "larder-demo-c", "2.0",
                       extra_files={"larder_demo_c/second.txt": b"second\n"})
    return wheels.load_dists(d)


@pytest.fixture
def two(tmp_path, wheel_dir):
    """(stack, second stand-in, second's dists)."""
    if stackmod.missing_reason():
        pytest.skip(stackmod.missing_reason())
    second_dir = str(tmp_path / "second-wheels")
    second_dists = build_second(second_dir)
    second = stackmod.Standin(second_dir, str(tmp_path / "second")).start()
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir,
                        larder_extra_text=CONF % {"port": second.port,
                                                  "files_port": second.files_port})
    try:
        st.start()
    except BaseException:
        second.stop()
        raise
    try:
        yield st, second, second_dists
    finally:
        st.stop()
        second.stop()


def page_path(index, project):
    """The page of project, or the project list for ""."""
    return "/%s/simple/%s" % (index, project + "/" if project else "")


def json_page(st, index, project, accept=PIP_ACCEPT):
    r = st.get(page_path(index, project), accept=accept)
    assert r.status == 200, r
    assert r.header("Content-Type", "").startswith(JSON_TYPE), r.header("Content-Type")
    return r.json()


def files_of(doc):
    return {f["filename"]: f for f in doc["files"]}


def file_path(st, index, project, filename):
    doc = json_page(st, index, project)
    url = urljoin(st.base + page_path(index, project), files_of(doc)[filename]["url"])
    return urlsplit(url).path


def page_row(st, index, project):
    con = fh.sqlite3.connect(fh.db_path(st.data_dir), timeout=10)
    try:
        return con.execute("SELECT etag, fetched_at, ttl, json_sha, html_sha FROM pages"
                           " WHERE idx = ? AND project = ?", (index, project)).fetchone()
    finally:
        con.close()


def upstream_pages(standin):
    return {k: v for k, v in standin.counters()["requests"].items()
            if k.startswith("GET /simple/")}


def test_fallback_merges_and_pip_installs(two, new_venv, dists):
    st, second, sd = two
    doc = json_page(st, "both", "larder-demo-a")
    got = files_of(doc)
    assert set(got) == {A10, A11, A20}, sorted(got)
    assert got[A20]["hashes"]["sha256"] == sd[A20].sha256
    assert got[A11]["hashes"]["sha256"] == dists[A11].sha256
    assert "2.0" in doc.get("versions", []) and "1.0" in doc["versions"], doc

    r = st.get(page_path("both", "larder-demo-a"), accept="text/html")
    assert r.status == 200 and r.header("Content-Type", "").startswith("text/html"), r
    html = r.body.decode()
    for fn in (A10, A11, A20):
        assert fn in html, html

    # a project only the second upstream has: its page as it is
    assert set(files_of(json_page(st, "both", "larder-demo-only"))) == {ONLY}

    venv = new_venv()
    rc, out = stackmod.pip_install(venv, st.index_url("both"),
                                   ["larder-demo-a", "larder-demo-only"])
    assert rc == 0, out
    assert stackmod.installed(venv) == {"larder-demo-a": "2.0", "larder-demo-b": "1.0",
                                        "larder-demo-c": "2.0", "larder-demo-only": "1.0"}
    # every byte through larder, a 2.0 from the second upstream, the rest
    # from the first
    assert "localhost:%d" % second.files_port not in out, out
    assert "%s/both/files/%s/%s" % (st.base, sd[A20].sha256, A20) in out, out
    assert "%s/both/files/%s/%s" % (st.base, dists[C20].sha256, C20) in out, out
    assert second.counters()["files"].get(A20) == 1
    assert st.standin.counters()["files"].get(C20) == 1


def test_same_filename_first_layer_wins(two, dists):
    st, second, sd = two
    assert sd[C20].sha256 != dists[C20].sha256
    doc = json_page(st, "both", "larder-demo-c")
    got = files_of(doc)
    assert got[C20]["hashes"]["sha256"] == dists[C20].sha256, got[C20]
    assert "../../files/%s/%s" % (dists[C20].sha256, C20) == got[C20]["url"]
    assert sum(1 for f in doc["files"] if f["filename"] == C20) == 1
    html = st.get(page_path("both", "larder-demo-c"), accept=HTML_TYPE).body.decode()
    assert dists[C20].sha256 in html and sd[C20].sha256 not in html, html
    r = st.get(file_path(st, "both", "larder-demo-c", C20))
    assert r.status == 200 and r.body == dists[C20].data, r


def test_protected_names_never_from_cache(two, dists):
    st, second, sd = two
    # through a fallback virtual index that does not protect it, c is there
    path = file_path(st, "both", "larder-demo-c", C20)
    st.standin.reset()
    second.reset()
    r = st.get(page_path("guarded", "larder-demo-c"), accept=PIP_ACCEPT)
    assert r.status == 404, r
    r = st.get(page_path("guarded", "larder-demo-c"), accept="text/html")
    assert r.status == 404, r
    # neither upstream was even asked
    assert upstream_pages(st.standin) == {} and upstream_pages(second) == {}
    # and a file another index listed is not served through this one
    r = st.get(path.replace("/both/", "/guarded/"))
    assert r.status == 404, r
    r = st.get(path.replace("/both/", "/guarded/"), method="HEAD")
    assert r.status == 404, r
    # what is not protected merges (root/pypi, a virtual layer, gives pypi)
    assert set(files_of(json_page(st, "guarded", "larder-demo-a"))) == {A10, A11, A20}
    # the project list: the union, without the protected names
    doc = json_page(st, "guarded", "")
    names = [p["name"] for p in doc["projects"]]
    assert "larder-demo-a" in names and "larder-demo-only" in names, names
    assert not [n for n in names if stackmod_norm(n) == "larder-demo-c"], names
    assert names == sorted(names, key=stackmod_norm), names
    r = st.get(page_path("guarded", ""), accept="text/html")
    assert r.status == 200 and b"larder-demo-only" in r.body and b"larder-demo-c" not in \
        r.body.replace(b"_", b"-"), r.body


def stackmod_norm(name):
    return wheels.normalise(name)


def test_no_fallback_without_hosted_layer_is_404(two, dists):
    st, second, sd = two
    path = file_path(st, "both", "larder-demo-a", A11)
    st.standin.reset()
    second.reset()
    for project in ("larder-demo-a", "larder-demo-only", ""):
        for accept in (PIP_ACCEPT, "text/html"):
            r = st.get(page_path("private", project), accept=accept)
            assert r.status == 404, (project, r)
    r = st.get(path.replace("/both/", "/private/"))
    assert r.status == 404, r
    assert upstream_pages(st.standin) == {} and upstream_pages(second) == {}


def test_warm_virtual_page_is_the_merged_row(two):
    st, second, sd = two
    project = "larder-demo-a"
    json_page(st, "both", project)
    row = page_row(st, "both", project)
    assert row is not None and row[0].startswith("v:"), row
    # mark the row: a later merge would write it again
    con = fh.sqlite3.connect(fh.db_path(st.data_dir), timeout=10)
    with con:
        con.execute("UPDATE pages SET fetched_at = fetched_at - 7 WHERE idx = 'both'"
                    " AND project = ?", (project,))
    con.close()
    marked = page_row(st, "both", project)
    st.standin.reset()
    second.reset()
    # another Accept each time: nginx's page cache does not answer for larder
    for accept in (JSON_TYPE, JSON_TYPE + ", text/html;q=0.1", "text/html",
                   HTML_TYPE, PIP_ACCEPT + ", */*;q=0.01"):
        r = st.get(page_path("both", project), accept=accept)
        assert r.status == 200, r
        assert r.header("X-Larder-Cache") in (None, "HIT"), r.header("X-Larder-Cache")
        # fresh as long as its sources, which are fresh for cache_ttl
        assert r.header("Expires") and r.header("Expires") != \
            "Thu, 01 Jan 1970 00:00:01 GMT", r.header("Expires")
    assert page_row(st, "both", project) == marked
    assert upstream_pages(st.standin) == {} and upstream_pages(second) == {}


@pytest.fixture
def two_short(tmp_path, wheel_dir):
    """As two, with pages fresh for a second."""
    if stackmod.missing_reason():
        pytest.skip(stackmod.missing_reason())
    second_dir = str(tmp_path / "second-wheels")
    sd = build_second(second_dir)
    second = stackmod.Standin(second_dir, str(tmp_path / "second")).start()
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, cache_ttl=1,
                        larder_extra_text=CONF % {"port": second.port,
                                                  "files_port": second.files_port})
    try:
        st.start()
    except BaseException:
        second.stop()
        raise
    try:
        yield st, second, second_dir
    finally:
        st.stop()
        second.stop()


def test_merge_follows_its_sources(two_short):
    """A source that changes makes a new merge; the old renderings are
    noted as garbage."""
    st, second, second_dir = two_short
    project = "larder-demo-a"
    assert A20 in files_of(json_page(st, "both", project))
    before = page_row(st, "both", project)
    wheels.build_wheel(second_dir, "larder-demo-a", "3.0", ["larder_demo.b>=1.0"])
    time.sleep(1.2)
    doc = json_page(st, "both", project, accept=JSON_TYPE)
    assert "larder_demo_a-3.0-py3-none-any.whl" in files_of(doc), sorted(files_of(doc))
    after = page_row(st, "both", project)
    assert after[0] != before[0] and after[3] != before[3], (before, after)
    con = fh.sqlite3.connect(fh.db_path(st.data_dir), timeout=10)
    try:
        noted = {r[0] for r in con.execute("SELECT * FROM garbage")}
    finally:
        con.close()
    assert before[3] in noted and before[4] in noted, noted


def test_one_source_is_served_as_is(two):
    """A project only one layer has costs no merge: the leaf's own row."""
    st, second, sd = two
    doc = json_page(st, "both", "larder-demo-only")
    assert set(files_of(doc)) == {ONLY}
    assert page_row(st, "both", "larder-demo-only") is None
    leaf = page_row(st, "second", "larder-demo-only")
    r = st.get(page_path("both", "larder-demo-only"), accept="text/html")
    assert r.status == 200
    with open(fh.blob_file(st.data_dir, leaf[4]), "rb") as f:
        assert r.body == f.read()


def test_failing_layer_leaves_the_others(two):
    """The second upstream fails with no stale copy: the page is what the
    first has, stale at once (so nobody keeps it), and the failure is in
    the log."""
    st, second, sd = two
    second.control(status={"/simple/larder-demo-a/": 503})
    r = st.get(page_path("both", "larder-demo-a"), accept=PIP_ACCEPT)
    assert r.status == 200, r
    assert set(files_of(r.json())) == {A10, A11}
    assert r.header("Expires") == "Thu, 01 Jan 1970 00:00:01 GMT", r.header("Expires")
    assert "serving what the other layers have" in st.larder.log_text()
    # every allowed layer failing is the first failure, as before
    st.standin.control(status={"/simple/larder-demo-a/": 503})
    r = st.get(page_path("private", "larder-demo-a"), accept=PIP_ACCEPT)
    assert r.status == 404, r
