"""What modern clients ask of an index besides pages and files (issue 11):
PEP 792 project status passed through and a quarantined project's files
refused, PEP 740 provenance passed through and cached, a 404 (never an
empty page) for a project no layer has, and HEAD of a file with no
download.

The stack's stand-in serves a copy of the default wheels with a
"{file}.provenance" beside larder-demo-a 1.1, so its pages claim
api-version 1.4; larder.conf adds a hosted index and a virtual index over
it and the cache index:

    root/private    hosted (empty)
    root/fallback   virtual over root/private and pypi, fallback

cache_ttl is 1, so a status the stand-in is told to give shows on the
next request after a second.
"""

import json
import os
import shutil
import time
from urllib.parse import urljoin, urlsplit

import pytest

import flighthelp as fh
import stack as stackmod
from stack import PIP_ACCEPT
from wheels import A10, A11

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")

CONF = """
[index "root/private"]
type = hosted

[index "root/fallback"]
type = virtual
layers = root/private pypi
policy = fallback
"""

# A provenance object as PEP 740 lays it out (larder passes it through
# unread, so any JSON would do).
PROVENANCE = json.dumps({"version": 1, "attestation_bundles": [
    {"publisher": {"kind": "GitHub", "claims": {}}, "attestations": []}]}).encode()


@pytest.fixture
def st(tmp_path, wheel_dir):
    if stackmod.missing_reason():
        pytest.skip(stackmod.missing_reason())
    d = str(tmp_path / "wheels")
    shutil.copytree(wheel_dir, d)
    with open(os.path.join(d, A11 + ".provenance"), "wb") as f:
        f.write(PROVENANCE)
    s = stackmod.Stack(str(tmp_path / "stack"), d, cache_ttl=1, larder_extra_text=CONF)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def page(st, index, project, accept=PIP_ACCEPT):
    return st.get("/%s/simple/%s/" % (index, project), accept=accept)


def files_of(doc):
    return {f["filename"]: f for f in doc["files"]}


def resolve(st, index, project, url):
    """The path a client fetches for a URL of a page."""
    return urlsplit(urljoin(st.base + "/%s/simple/%s/" % (index, project), url)).path


def file_path(st, index, project, filename):
    doc = page(st, index, project).json()
    return resolve(st, index, project, files_of(doc)[filename]["url"])


def upstream_file_requests(st):
    """Every request the stand-in's files port saw, HEAD included."""
    return {k: v for k, v in st.standin.counters()["requests"].items()
            if " /packages/" in k}


def set_status(st, status, reason=None):
    """Has the stand-in give larder-demo-a that status (None: none) and
    waits out larder's cache_ttl, so the next page request refreshes."""
    st.standin.control(project_status={"larder-demo-a": dict(
        {"status": status}, **({"reason": reason} if reason else {}))}
        if status else {})
    time.sleep(1.2)


@pytest.mark.parametrize("index", ["pypi", "root/pypi", "root/fallback"])
def test_provenance_passed_through_and_cached(st, dists, index):
    """A provenance the upstream lists is advertised as larder's own URL
    (JSON and HTML, api-version 1.4), fetched once from the URL the page
    gave and then served from the store; a file the upstream lists none
    for has none, and asking for one is a 404."""
    r = page(st, index, "larder-demo-a")
    assert r.status == 200, r
    doc = r.json()
    assert doc["meta"]["api-version"] == "1.4", doc["meta"]
    got = files_of(doc)
    prov = got[A11].get("provenance")
    assert prov == "../../files/%s/%s.provenance" % (dists[A11].sha256, A11), got[A11]
    assert "provenance" not in got[A10], got[A10]
    html = page(st, index, "larder-demo-a", accept="text/html").body.decode()
    assert '<meta name="pypi:repository-version" content="1.4">' in html, html
    assert 'data-provenance="%s"' % prov in html, html
    assert html.count("data-provenance") == 1, html
    assert "/packages/" not in html and "/packages/" not in r.body.decode()

    path = resolve(st, index, "larder-demo-a", prov)
    st.standin.reset()
    for n in range(3):
        r = st.get(path)
        assert r.status == 200, r
        assert r.body == PROVENANCE, r.body[:200]
        assert r.header("Content-Type", "").startswith("application/json"), dict(r.headers)
        assert "immutable" not in r.header("Cache-Control", ""), dict(r.headers)
        if n:
            assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)
    assert st.standin.counters()["provenance"] == {A11: 1}
    r = st.get(path, method="HEAD")
    assert r.status == 200 and r.header("Content-Length") == str(len(PROVENANCE)), r
    assert st.standin.counters()["provenance"] == {A11: 1}

    r = st.get("/%s/files/%s/%s.provenance" % (index, dists[A10].sha256, A10))
    assert r.status == 404 and b"no provenance" in r.body, r


def test_provenance_kept_across_refresh(st, dists):
    """A refresh that lists the same provenance URL keeps the fetched copy:
    no second fetch."""
    path = "/pypi/files/%s/%s.provenance" % (dists[A11].sha256, A11)
    assert page(st, "pypi", "larder-demo-a").status == 200
    assert st.get(path).body == PROVENANCE
    # the page changes (so it is stored again, not revalidated), its
    # provenance URL does not
    st.standin.control(sizes={A10: dists[A10].size + 1})
    time.sleep(1.2)
    r = page(st, "pypi", "larder-demo-a")
    assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", dict(r.headers)
    st.standin.reset()
    r = st.get(path)
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
    assert st.standin.counters()["provenance"] == {}


def test_project_status_passed_through(st):
    """archived and deprecated, with a reason, as PEP 792 writes them, in
    both formats and through a virtual index; the files stay on offer."""
    set_status(st, "archived", 'moved to "demo2" <soon>')
    for index in ("pypi", "root/pypi", "root/fallback"):
        doc = page(st, index, "larder-demo-a").json()
        assert doc["meta"]["api-version"] == "1.4", (index, doc["meta"])
        assert doc["project-status"] == {"status": "archived",
                                         "reason": 'moved to "demo2" <soon>'}, (index, doc)
        assert {A10, A11} <= set(files_of(doc)), (index, doc)
        html = page(st, index, "larder-demo-a", accept="text/html").body.decode()
        assert '<meta name="pypi:project-status" content="archived">' in html, html
        assert ('<meta name="pypi:project-status-reason" '
                'content="moved to &quot;demo2&quot; &lt;soon&gt;">') in html, html
        r = st.get(file_path(st, index, "larder-demo-a", A10))
        assert r.status == 200, (index, r)
    # a project with no status has no status object
    doc = page(st, "pypi", "larder-demo-b").json()
    assert "project-status" not in doc, doc

    # from an HTML upstream the same
    st.standin.control(html_only=True, project_status={
        "larder-demo-a": {"status": "deprecated"}})
    time.sleep(1.2)
    doc = page(st, "pypi", "larder-demo-a").json()
    assert doc["project-status"] == {"status": "deprecated"}, doc


def test_quarantined_files_refused(st, dists):
    """A quarantined project's page lists no files, and its files are a
    403, even those cached before; its metadata and provenance too, GET
    or HEAD, through every index. Nothing is fetched for them. Once the
    quarantine is lifted they are served again."""
    a10 = file_path(st, "pypi", "larder-demo-a", A10)
    prov = "/pypi/files/%s/%s.provenance" % (dists[A11].sha256, A11)
    assert st.get(a10).status == 200  # cached now
    set_status(st, "quarantined", "the project is haunted")
    for index in ("pypi", "root/pypi", "root/fallback"):
        doc = page(st, index, "larder-demo-a").json()
        assert doc["project-status"] == {"status": "quarantined",
                                         "reason": "the project is haunted"}, doc
        assert doc["files"] == [], doc
        html = page(st, index, "larder-demo-a", accept="text/html").body.decode()
        assert 'content="quarantined"' in html and "<a " not in html, html
    st.standin.reset()
    for index in ("pypi", "root/pypi", "root/fallback"):
        for fn in (A10, A11):
            base = "/%s/files/%s/%s" % (index, dists[fn].sha256, fn)
            for path in (base, base + ".metadata", base + ".provenance"):
                for method in ("GET", "HEAD"):
                    r = st.get(path, method=method)
                    assert r.status == 403, (method, path, r)
                    if method == "GET":
                        assert b"quarantined upstream (PEP 792)" in r.body, r.body
    assert upstream_file_requests(st) == {}, st.standin.counters()
    # another project of the same upstream is not touched
    r = st.get(file_path(st, "pypi", "larder-demo-b", "larder_demo.b-1.0-py3-none-any.whl"))
    assert r.status == 200, r

    set_status(st, None)
    doc = page(st, "pypi", "larder-demo-a").json()
    assert "project-status" not in doc and {A10, A11} <= set(files_of(doc)), doc
    assert st.get(a10).status == 200
    assert st.get(prov).body == PROVENANCE


@pytest.mark.parametrize("accept", [PIP_ACCEPT, "text/html"])
def test_no_layer_has_it_is_404(st, accept):
    """A project no layer has is a 404, not an empty page, from a cache, a
    hosted and a virtual index (so uv moves on to its next index); a
    virtual index one of whose layers fails is not a 404 or an empty page
    but the failure (it cannot know the project is not there)."""
    for index in ("pypi", "root/private", "root/pypi", "root/fallback"):
        r = page(st, index, "no-such-project", accept=accept)
        assert r.status == 404, (index, r)
        assert r.header("Vary", "").lower().find("accept") >= 0, (index, dict(r.headers))
    # the upstream fails for it, and the hosted layer has nothing
    st.standin.control(status={"/simple/broken-project/": 503})
    r = page(st, "root/fallback", "broken-project", accept=accept)
    assert r.status == 502, r
    assert b"503" in r.body, r.body


def test_head_downloads_nothing(st, dists):
    """HEAD of a file, cached or not, and of its metadata: Content-Length
    from the store or the page, and no upstream GET (an uncached
    metadata, whose size no page gives, takes an upstream HEAD)."""
    a10 = file_path(st, "root/fallback", "larder-demo-a", A10)
    a11 = file_path(st, "root/fallback", "larder-demo-a", A11)
    assert st.get(a10).status == 200
    assert st.get(a10 + ".metadata").status == 200
    st.standin.reset()
    # cached: from the store, the upstream not asked at all
    r = st.get(a10, method="HEAD")
    assert r.status == 200 and r.header("Content-Length") == str(dists[A10].size), r
    assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)
    r = st.get(a10 + ".metadata", method="HEAD")
    assert r.status == 200, r
    assert r.header("Content-Length") == str(len(dists[A10].metadata)), dict(r.headers)
    assert upstream_file_requests(st) == {}, st.standin.counters()
    # not cached: the page's size, the upstream not asked
    r = st.get(a11, method="HEAD")
    assert r.status == 200 and r.header("Content-Length") == str(dists[A11].size), r
    assert r.header("ETag") == '"%s"' % dists[A11].sha256, dict(r.headers)
    assert upstream_file_requests(st) == {}, st.standin.counters()
    # its metadata: an upstream HEAD, never a GET
    r = st.get(a11 + ".metadata", method="HEAD")
    assert r.status == 200, r
    assert r.header("Content-Length") == str(len(dists[A11].metadata)), dict(r.headers)
    got = upstream_file_requests(st)
    assert set(got) <= {"HEAD /packages/%s/%s/%s.metadata"
                        % (dists[A11].sha256[:2], dists[A11].sha256[2:4], A11)}, got
    assert not os.path.exists(fh.blob_file(st.data_dir, dists[A11].sha256))
