"""The JSON API (/{index}/pypi/{project}[/{version}]/json, as pypi.org
lays it out), /+api, and the landing pages at / and /{index}/.

The cached project's documents are compared with the wheel's METADATA and
with the simple page larder serves; a hosted project's with what was
uploaded; a virtual index's with its layers'. File URLs are absolute, made
from the request's Host: two names for larder give two documents.
"""

import hashlib
import html.parser
import json
import os
import subprocess

import sqlite3
import pytest

import stack as stackmod
import uploads as up
import wheels
from stack import JSON_TYPE, PIP_ACCEPT, http
from wheels import A10, A11, C10, C20, C20_SDIST, NOMETA

# hostile input and API matrices: run once, under ASan, where a memory error would show
pytestmark = pytest.mark.one_build("asan")


def api(st, path, headers=None):
    return st.get(path, headers=headers)


def doc(st, path, headers=None):
    r = api(st, path, headers)
    assert r.status == 200, "%s: %r %s" % (path, r, r.body[:300])
    assert r.header("Content-Type") == "application/json", r.header("Content-Type")
    return r.json()


def simple_files(st, index, project):
    r = st.get("/%s/simple/%s/" % (index, project), accept=PIP_ACCEPT)
    assert r.status == 200, r
    return {f["filename"]: f for f in r.json()["files"]}


def meta_headers(data):
    """The headers of core metadata, as (name, value) pairs."""
    text = data.decode()
    head = text.split("\n\n", 1)[0]
    return [tuple(s.strip() for s in line.split(":", 1)) for line in head.splitlines()]


def upstream_total(st):
    c = st.standin.counters()
    return sum(c["requests"].values()), sum(c["files"].values()), sum(c["metadata"].values())


def test_project_json_cached(stack, dists):
    d = doc(stack, "/pypi/pypi/larder-demo-a/json")
    assert set(d) == {"info", "releases", "urls"}, sorted(d)
    info = d["info"]
    meta = dict(meta_headers(dists[A11].metadata))
    # the latest release, from its wheel's METADATA
    assert info["name"] == meta["Name"] == "larder-demo-a"
    assert info["version"] == "1.1"
    assert info["summary"] == meta["Summary"]
    assert info["author"] == meta["Author"] == "larder tests"
    assert info["license"] == "MIT"
    assert info["requires_python"] == ">=3.7,<4"
    assert info["requires_dist"] == ["larder_demo.b>=1.0"]
    assert info["description"] == "Built for larder's integration tests.\n"
    assert info["classifiers"] == [] and info["maintainer"] is None
    assert info["yanked"] is False and info["yanked_reason"] is None
    assert info["release_url"] == stack.base + "/pypi/pypi/larder-demo-a/1.1/json"
    assert info["project_url"] == stack.base + "/pypi/simple/larder-demo-a/"
    assert sorted(d["releases"]) == ["1.0", "1.1"]
    # files as the page lists them, with larder's own absolute URLs
    page = simple_files(stack, "pypi", "larder-demo-a")
    assert [f["filename"] for f in d["urls"]] == [A11]
    for version, fn in (("1.0", A10), ("1.1", A11)):
        (f,) = d["releases"][version]
        assert f["filename"] == fn
        assert f["digests"]["sha256"] == dists[fn].sha256 == page[fn]["hashes"]["sha256"]
        assert f["size"] == dists[fn].size == page[fn]["size"]
        assert f["upload_time_iso_8601"] == page[fn]["upload-time"]
        assert f["upload_time"] == page[fn]["upload-time"][:19]
        assert f["requires_python"] == page[fn]["requires-python"]
        assert f["packagetype"] == "bdist_wheel" and f["python_version"] == "py3"
        assert f["yanked"] is False and f["yanked_reason"] is None
        assert f["url"] == "%s/pypi/files/%s/%s" % (stack.base, dists[fn].sha256, fn)
    assert d["urls"][0] == d["releases"]["1.1"][0]
    r = http(d["urls"][0]["url"])
    assert r.status == 200 and hashlib.sha256(r.body).hexdigest() == dists[A11].sha256


def test_version_json_yanked_and_sdist(stack, dists):
    d = doc(stack, "/pypi/pypi/larder-demo-c/1.0/json")
    assert "releases" not in d
    assert d["info"]["version"] == "1.0"
    assert d["info"]["yanked"] is True and d["info"]["yanked_reason"] == "broken"
    assert [f["filename"] for f in d["urls"]] == [C10]
    assert d["urls"][0]["yanked"] is True and d["urls"][0]["yanked_reason"] == "broken"
    # the project's info is its latest release that is not yanked
    d = doc(stack, "/pypi/pypi/larder-demo-c/json")
    assert d["info"]["version"] == "2.0"
    files = {f["filename"]: f for f in d["urls"]}
    assert set(files) == {C20, C20_SDIST}
    assert files[C20_SDIST]["packagetype"] == "sdist"
    assert files[C20_SDIST]["python_version"] == "source"
    # a version spelt otherwise is the same release
    assert doc(stack, "/pypi/pypi/larder-demo-c/2.0.0/json")["info"]["version"] == "2.0"


def test_no_metadata_info_from_the_page(stack):
    d = doc(stack, "/pypi/pypi/larder-demo-nometa/json")
    assert d["info"]["name"] == "larder-demo-nometa"
    assert d["info"]["version"] == "1.0"
    assert d["info"]["requires_python"] == ">=3.7"
    assert [f["filename"] for f in d["urls"]] == [NOMETA]


def test_not_found_and_redirects(stack):
    for path in ("/pypi/pypi/no-such-project/json", "/pypi/pypi/larder-demo-a/9.9/json",
                 "/pypi/pypi/larder-demo-a/not.a.version!/json",
                 "/root/pypi/pypi/no-such-project/1.0/json"):
        r = api(stack, path)
        assert r.status == 404, (path, r)
        assert r.header("Content-Type") == "application/json"
        assert r.json() == {"message": "Not Found"}
    r = api(stack, "/pypi/pypi/Larder_Demo.A/1.0/json")
    assert r.status == 301
    assert r.header("Location") == stack.base + "/pypi/pypi/larder-demo-a/1.0/json"
    r = api(stack, "/pypi/pypi/larder-demo-a/json/")
    assert r.status == 404


def test_cached_like_a_page(stack):
    path = "/root/pypi/pypi/larder-demo-a/json"
    first = api(stack, path)
    assert first.status == 200
    etag = first.header("ETag")
    assert etag and first.header("Expires")
    before = upstream_total(stack)
    again = api(stack, path)
    assert again.status == 200 and again.body == first.body
    assert again.header("ETag") == etag
    assert upstream_total(stack) == before, "a warm JSON document asked the upstream"
    assert stack.larder.find_log("GET", path, 200), "no access line"
    hit = [l for l in stack.larder.log_lines() if ("GET %s 200 HIT" % path) in l]
    assert hit, "the second request was not a HIT"
    r = api(stack, path, headers={"If-None-Match": etag})
    assert r.status == 304 and r.body == b""
    # handed to nginx like a page, not streamed by larder
    assert int(again.header("Content-Length")) == len(first.body)


def test_two_names_two_documents(stack):
    path = "/pypi/pypi/larder-demo-a/json"
    a = doc(stack, path)
    port = stack.nginx.base.rsplit(":", 1)[1]
    b = doc(stack, path, headers={"Host": "localhost:%s" % port})
    assert a["urls"][0]["url"].startswith(stack.base + "/pypi/files/")
    assert b["urls"][0]["url"].startswith("http://localhost:%s/pypi/files/" % port)
    assert a["urls"][0]["url"] != b["urls"][0]["url"]
    # and each stays itself once cached
    assert doc(stack, path) == a


def test_made_up_hosts_are_not_stored(stack):
    """A document is kept for four base URLs at most: clients making up
    Host values get a right answer, and nothing more is stored."""
    path = "/pypi/pypi/larder-demo-a/json"
    for i in range(7):
        r = api(stack, path, headers={"Host": "made-up-%d.example" % i})
        assert r.status == 200, r
        d = r.json()
        assert d["urls"][0]["url"].startswith("http://made-up-%d.example" % i), d["urls"][0]["url"]
        if i >= 4:
            assert r.header("Cache-Control") == "no-store", r.headers
    db = sqlite3.connect(os.path.join(stack.larder.data_dir, "larder.db"))
    try:
        (rows,) = db.execute("SELECT count(*) FROM pages WHERE idx = 'pypi/+json'"
                             " AND project LIKE 'larder-demo-a/json %'").fetchone()
    finally:
        db.close()
    assert rows == 4, rows


# ---------------------------------------------------------------- hosted, virtual

@pytest.fixture
def hosted(request, tmp_path, wheel_dir):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir,
                        larder_extra_text=up.HOSTED_CONF, root_pypi=up.ROOT_PYPI)
    st.start()
    try:
        yield st
    finally:
        st.stop()


def test_hosted_and_virtual(hosted, tmp_path):
    st = hosted
    tok = up.token_add(st.larder, "root/private", "upload")
    dist = str(tmp_path / "dist")
    os.makedirs(dist)
    whl = up.build_wheel(dist, "corp-lib", "1.0", ["requests>=2"], ">=3.9")
    assert up.upload(st.base, "root/private", whl, tok).status == 200
    meta = dict(meta_headers(up.wheel_metadata(whl)))
    for index in ("root/private", "root/pypi", "root/hosted"):
        d = doc(st, "/%s/pypi/corp-lib/json" % index)
        assert d["info"]["name"] == meta["Name"]
        assert d["info"]["version"] == "1.0"
        assert d["info"]["requires_dist"] == ["requests>=2"]
        assert d["info"]["requires_python"] == ">=3.9"
        (f,) = d["urls"]
        assert f["filename"] == os.path.basename(whl)
        assert f["url"].startswith("%s/%s/files/" % (st.base, index))
        assert f["upload_time"] and f["size"] == os.path.getsize(whl)
        r = http(f["url"])
        assert r.status == 200 and hashlib.sha256(r.body).hexdigest() == f["digests"]["sha256"]
    # a new upload is in the next document at once
    whl2 = up.build_wheel(dist, "corp-lib", "1.1")
    assert up.upload(st.base, "root/private", whl2, tok).status == 200
    d = doc(st, "/root/pypi/pypi/corp-lib/json")
    assert d["info"]["version"] == "1.1" and sorted(d["releases"]) == ["1.0", "1.1"]
    assert doc(st, "/root/private/pypi/corp-lib/1.0/json")["info"]["version"] == "1.0"
    # the virtual index's cache layer, through it
    d = doc(st, "/root/pypi/pypi/larder-demo-a/json")
    assert d["info"]["version"] == "1.1"
    assert d["urls"][0]["url"].startswith(st.base + "/root/pypi/files/")
    assert api(st, "/root/private/pypi/larder-demo-a/json").status == 404
    # the documents' rows are pages fsck understands: nothing dangling,
    # nothing unreferenced (the replaced document is noted as garbage)
    p = subprocess.run([st.larder.binary, "fsck", "-c", st.larder.conf],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       env=stackmod.clean_env())
    assert p.returncode == 0, p.stdout
    assert b" 0 unreferenced" in p.stdout and b"dangling page" not in p.stdout, p.stdout


# ---------------------------------------------------------------- /+api, landing pages

class Page(html.parser.HTMLParser):
    """Checks that tags nest and collects the text and the links."""

    VOID = {"meta", "br", "link", "img", "hr", "input"}

    def __init__(self):
        super().__init__()
        self.open, self.text, self.links, self.errors = [], [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs).get("href"))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append("</%s> closes %s" % (tag, self.open[-1:]))
        else:
            self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_html(r):
    assert r.status == 200, r
    assert r.header("Content-Type") == "text/html; charset=utf-8"
    body = r.body.decode("utf-8")
    assert body.startswith("<!DOCTYPE html>")
    p = Page()
    p.feed(body)
    p.close()
    assert not p.errors and not p.open, (p.errors, p.open)
    p.body = "".join(p.text)
    return p


def test_api_listing(hosted):
    st = hosted
    d = doc(st, "/+api")
    assert d["larder"]["version"] and d["larder"]["url"] == st.base
    ix = {i["name"]: i for i in d["indexes"]}
    assert {"pypi", "root/pypi", "root/private", "root/scratch"} <= set(ix)
    assert ix["pypi"]["type"] == "cache"
    assert ix["pypi"]["upstream"] == "http://127.0.0.1:%d/simple/" % st.standin.port
    assert ix["pypi"]["simple_url"] == st.base + "/pypi/simple/"
    assert "upload_url" not in ix["pypi"]
    assert ix["root/private"]["type"] == "hosted"
    assert ix["root/private"]["upload_url"] == st.base + "/root/private/"
    assert ix["root/pypi"]["type"] == "virtual"
    assert ix["root/pypi"]["layers"] == ["root/private", "pypi"]
    assert ix["root/pypi"]["policy"] == "private-first"
    assert ix["root/pypi"]["upload_url"] == st.base + "/root/pypi/"
    for i in d["indexes"]:
        assert api(st, i["simple_url"][len(st.base):], headers={"Accept": "text/html"}).status == 200
    assert isinstance(d["registries"], list)
    for rg in d["registries"]:
        assert set(rg) >= {"name", "upstream", "default"}


def test_landing_pages(hosted):
    st = hosted
    home = parse_html(api(st, "/"))
    names = [i["name"] for i in doc(st, "/+api")["indexes"]]
    for n in names:
        assert st.base + "/" + n + "/" in home.links, n
    for n in names:
        page = parse_html(api(st, "/%s/" % n))
        url = "%s/%s/simple/" % (st.base, n)
        assert "index-url = " + url in page.body
        # the template's mark is not the URL in PIP_INDEX_URL
        assert "(or PIP_INDEX_URL=%s)" % url in page.body
        assert "(or UV_DEFAULT_INDEX=%s)" % url in page.body
        assert 'url = "%s"' % url in page.body
        assert "pdm config pypi.url " + url in page.body
        assert "poetry source add --priority=primary larder " + url in page.body
        if n in ("root/private", "root/pypi", "root/scratch"):
            assert "repository = %s/%s/" % (st.base, n) in page.body
        if n == "pypi":
            assert ".pypirc" not in page.body
    r = api(st, "/root/pypi")
    assert r.status == 301 and r.header("Location") == st.base + "/root/pypi/"
    assert api(st, "/", headers={"Host": "<x>"}).status == 200
    # escaped: an upstream URL's user:password is not shown at all
    assert "@" not in api(st, "/+api").body.decode()


TOKEN_CONF = """
[index "team/pypi"]
type = virtual
layers = pypi
read = token
"""


@pytest.mark.stack(larder_extra_text=TOKEN_CONF)
def test_read_token_index(stack):
    path = "/team/pypi/pypi/larder-demo-a/json"
    before = upstream_total(stack)
    r = api(stack, path)
    assert r.status == 401, r
    assert upstream_total(stack) == before, "a refused client made larder fetch"
    tok = up.token_add(stack.larder, "team/pypi", "read", projects=["larder-demo-*"])
    d = doc(stack, path, headers=up.basic(tok))
    assert d["info"]["version"] == "1.1"
    r = api(stack, path, headers=up.basic(tok))
    assert "private" in r.header("Cache-Control", ""), r.header("Cache-Control")
    # a token for some projects reads no others
    r = api(stack, "/team/pypi/pypi/larder-demo-c/json", headers=up.basic(tok))
    assert r.status == 200
    tok2 = up.token_add(stack.larder, "team/pypi", "read", projects=["other-*"])
    assert api(stack, path, headers=up.basic(tok2)).status in (401, 403)
    # the listing shows the index, and nothing it holds
    ix = {i["name"]: i for i in doc(stack, "/+api")["indexes"]}
    assert ix["team/pypi"]["read"] == "token"
    assert "larder-demo" not in api(stack, "/team/pypi/").body.decode()


@pytest.mark.stack(larder_extra={"exclude_newer": "2024-01-02T03:30:00Z"})
def test_cooldown_holds_back_here_too(stack):
    """A file the cooldown leaves out of the page (A11, an hour after A10)
    is not in the JSON API either, nor is its release the latest."""
    r = api(stack, "/pypi/pypi/larder-demo-a/json")
    assert r.status == 200, r
    page = stack.get("/pypi/simple/larder-demo-a/", accept=PIP_ACCEPT)
    assert r.header("X-Larder-Held-Back") == page.header("X-Larder-Held-Back") == "1"
    for d in (r.json(), doc(stack, "/root/pypi/pypi/larder-demo-a/json")):
        assert d["info"]["version"] == "1.0"
        assert [f["filename"] for f in d["urls"]] == [A10]
        assert d["releases"].get("1.1", []) == []
    d = r.json()
    assert d["info"]["version"] == "1.0"
    assert [f["filename"] for f in d["urls"]] == [A10]
    assert d["releases"].get("1.1", []) == []
    r = api(stack, "/root/pypi/pypi/larder-demo-a/1.1/json")
    assert r.status == 404 or r.json()["urls"] == [], r


REGISTRY_CONF = """
[registry "hub"]
upstream = http://127.0.0.1:9/
default = yes
"""


@pytest.mark.stack(larder_extra={"trust_forwarded": "yes"},
                   larder_extra_text=REGISTRY_CONF)
def test_landing_registry_snippets_fit_the_scheme(stack):
    """The skopeo and docker lines on / work as shown: over plain http
    they say --src-tls-verify=false and list the host among docker's
    insecure-registries; over https they say neither."""
    host = stack.base.split("://", 1)[1]
    page = api(stack, "/").body.decode()
    assert "skopeo copy --src-tls-verify=false docker://%s/hub/library/alpine:latest" % host in page
    assert "&quot;insecure-registries&quot;: [&quot;%s&quot;]" % host in page
    assert "&quot;registry-mirrors&quot;: [&quot;%s&quot;]" % stack.base in page
    page = api(stack, "/", headers={"X-Forwarded-Proto": "https"}).body.decode()
    assert "skopeo copy docker://%s/hub/library/alpine:latest" % host in page
    assert "tls-verify" not in page and "insecure-registries" not in page
    assert "&quot;registry-mirrors&quot;: [&quot;https://%s&quot;]" % host in page
