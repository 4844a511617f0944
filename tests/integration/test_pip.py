"""pip installs through larder behind nginx, against the stand-in upstream.

Every test gets its own stand-in, larder (`larder serve`) and nginx (the
`stack` fixture); pip runs from fresh virtualenvs with --no-cache-dir, so
every byte it gets comes through larder.
"""

import hashlib
import html.parser
import os
import re
import subprocess
import time
import zipfile
from urllib.parse import urljoin, urlsplit

import pytest

import flighthelp as fh
import stack as stackmod
from stack import JSON_TYPE, HTML_TYPE, PIP_ACCEPT, http, raw_request

from wheels import A10, A11, B10, C10, C20, C20_SDIST, NOMETA  # noqa: F401

INSTALLED = {"larder-demo-a": "1.1", "larder-demo-b": "1.0", "larder-demo-c": "2.0"}
NEEDED = (A11, B10, C20)


# ---------------------------------------------------------------- helpers

def page_path(project, route="root/pypi"):
    return "/%s/simple/%s/" % (route, project)


def get_page(st, project, accept=PIP_ACCEPT, route="root/pypi"):
    return st.get(page_path(project, route), accept=accept)


def json_page(st, project, route="root/pypi"):
    r = get_page(st, project, PIP_ACCEPT, route)
    assert r.status == 200, r
    assert r.header("Content-Type", "").startswith(JSON_TYPE), r.header("Content-Type")
    return r.json()


def file_entry(doc, filename):
    for f in doc["files"]:
        if f["filename"] == filename:
            return f
    raise AssertionError("%s not on the page: %s" % (filename, [f["filename"] for f in doc["files"]]))


def file_path(st, project, filename, route="root/pypi"):
    """The path larder's page gives for filename, resolved against the page."""
    doc = json_page(st, project, route)
    url = urljoin(st.base + page_path(project, route), file_entry(doc, filename)["url"])
    return urlsplit(url).path


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def counts_upstream_pages(counters):
    return {k: v for k, v in counters["requests"].items() if k.startswith("GET /simple/")}


def assert_4xx(r, what):
    assert r.status is not None and 400 <= r.status <= 499, "%s: %r" % (what, r)


class Anchors(html.parser.HTMLParser):
    """The <a> elements of a PEP 503 page: [(attrs dict, text)], and the
    pypi:repository-version meta."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.anchors = []
        self.meta = {}
        self._cur = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._cur = (dict(attrs), [])
        elif tag == "meta":
            a = dict(attrs)
            if "name" in a:
                self.meta[a["name"]] = a.get("content")

    def handle_data(self, data):
        if self._cur is not None:
            self._cur[1].append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._cur is not None:
            self.anchors.append((self._cur[0], "".join(self._cur[1]).strip()))
            self._cur = None


def parse_html(body):
    p = Anchors()
    p.feed(body.decode("utf-8"))
    return p


# ---------------------------------------------------------------- pip

def test_cold_install(stack, new_venv, dists):
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED

    # Every download went through larder, none straight to the upstream.
    assert "localhost:%d" % stack.standin.files_port not in out, out
    for fn in NEEDED:
        assert "%s/root/pypi/files/%s/%s" % (stack.base, dists[fn].sha256, fn) in out, out

    c = stack.standin.counters()
    for fn in NEEDED:
        assert c["files"].get(fn) == 1, c
    assert all(n == 1 for n in c["files"].values()), c
    assert all(n == 1 for n in c["metadata"].values()), c

    fh.wait_settled(stack.data_dir)   # the last file may still be storing
    blobs = stackmod.blobs(stack.data_dir)
    for fn in NEEDED:
        assert "sha256/%s/%s/%s" % (dists[fn].sha256[:2], dists[fn].sha256[2:4],
                                    dists[fn].sha256) in blobs, sorted(blobs)
    assert stackmod.bad_blobs(stack.data_dir) == []

    for path in ("/root/pypi/simple/larder-demo-a/", "/root/pypi/simple/larder-demo-b/",
                 "/root/pypi/simple/larder-demo-c/",
                 "/root/pypi/files/%s/%s" % (dists[A11].sha256, A11)):
        assert stack.larder.find_log("GET", path, 200), \
            "no log line for GET %s 200" % path


def test_warm_install_fetches_nothing_upstream(stack, new_venv):
    rc, out = stackmod.pip_install(new_venv(), stack.url, ["larder-demo-a"])
    assert rc == 0, out
    stack.standin.reset()

    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED

    c = stack.standin.counters()
    assert c["files"] == {}, c
    assert c["metadata"] == {}, c
    assert counts_upstream_pages(c) == {}, "fresh pages were fetched again: %s" % c

    r = get_page(stack, "larder-demo-a")
    assert r.status == 200
    assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)


@pytest.mark.parametrize("stack", [{"cache_ttl": 300}, {"cache_ttl": 1}],
                         indirect=True, ids=["fresh-pages", "stale-pages"])
def test_install_with_upstream_stopped(stack, new_venv):
    rc, out = stackmod.pip_install(new_venv(), stack.url, ["larder-demo-a"])
    assert rc == 0, out
    stack.standin.kill()
    assert not stack.standin.running

    if stack.cache_ttl == 1:
        time.sleep(2)
        r = get_page(stack, "larder-demo-a")
        assert r.status == 200, r
        assert r.header("X-Larder-Cache") == "STALE", dict(r.headers)
        assert A11 in r.body.decode()

    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED


@pytest.mark.stack(cache_ttl=1)
def test_stale_page_served_when_upstream_errors(stack):
    r = get_page(stack, "larder-demo-a")
    assert r.status == 200, r
    stack.standin.control(status={"/simple/larder-demo-a/": 503})
    time.sleep(2)
    r2 = get_page(stack, "larder-demo-a")
    assert r2.status == 200, r2
    assert r2.header("X-Larder-Cache") == "STALE", dict(r2.headers)
    assert r2.json()["files"] == r.json()["files"]
    c = stack.standin.counters()
    assert c["requests"].get("GET /simple/larder-demo-a/", 0) >= 2, c


@pytest.mark.stack(html_only=True)
def test_html_only_upstream(stack, new_venv, dists):
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED

    doc = json_page(stack, "larder-demo-c")
    assert doc["meta"]["api-version"] == "1.0", doc["meta"]
    for fn in (C10, C20, C20_SDIST):
        f = file_entry(doc, fn)
        d = dists[fn]
        assert f["url"] == "../../files/%s/%s" % (d.sha256, fn), f
        assert f["hashes"] == {"sha256": d.sha256}, f
        assert f["requires-python"] == ">=3.7", f
        assert "dist-info-metadata" not in f, f
    assert file_entry(doc, C10)["yanked"] == "broken"
    assert not file_entry(doc, C20)["yanked"]
    assert file_entry(doc, C20)["core-metadata"] == {"sha256": sha256(dists[C20].metadata)}
    assert not file_entry(doc, C20_SDIST).get("core-metadata")

    doc = json_page(stack, "larder-demo-a")
    assert file_entry(doc, A11)["requires-python"] == ">=3.7,<4"  # unescaped from &lt;


# ---------------------------------------------------------------- pages

@pytest.mark.parametrize("accept,expect", [
    (PIP_ACCEPT, "json"),
    (JSON_TYPE, "json"),
    ("application/vnd.pypi.simple.latest+json", "json"),
    ("text/html", "html"),
    ("*/*", "html"),
    (None, "html"),
    (HTML_TYPE, "html"),
    ("text/html;q=0.5, application/vnd.pypi.simple.v1+json;q=0.9", "json"),
    ("application/vnd.pypi.simple.v1+json;q=0.2, text/html", "html"),
    ("application/vnd.pypi.simple.v1+json;q=0, */*", "html"),
    ("image/png", 406),
    ("application/json", 406),
    ("application/vnd.pypi.simple.v1+json;q=0", 406),
])
def test_negotiation(stack, accept, expect):
    r = get_page(stack, "larder-demo-a", accept=accept)
    ctype = r.header("Content-Type", "")
    if expect == 406:
        assert r.status == 406, r
        return
    assert r.status == 200, r
    assert "accept" in r.header("Vary", "").lower(), dict(r.headers)
    if expect == "json":
        assert ctype.startswith(JSON_TYPE), ctype
        assert r.json()["name"] == "larder-demo-a"
    else:
        if accept == HTML_TYPE:
            assert ctype.split(";")[0] in (HTML_TYPE, "text/html"), ctype
        else:
            assert ctype.split(";")[0] == "text/html", ctype
        assert b"<a " in r.body and A11.encode() in r.body


def test_json_page_keeps_upstream_fields(stack, dists):
    up = stack.standin.page("larder-demo-c").json()
    r = get_page(stack, "larder-demo-c")
    assert r.status == 200, r
    assert "accept" in r.header("Vary", "").lower()
    doc = r.json()
    assert doc["name"] == "larder-demo-c"
    assert doc["meta"]["api-version"] == up["meta"]["api-version"] == "1.1"
    assert doc["versions"] == up["versions"] == ["1.0", "2.0"]
    assert sorted(f["filename"] for f in doc["files"]) == sorted(f["filename"] for f in up["files"])
    page_url = stack.base + page_path("larder-demo-c")
    for u in up["files"]:
        f = file_entry(doc, u["filename"])
        for key in ("hashes", "requires-python", "yanked", "core-metadata", "size",
                    "upload-time"):
            assert f.get(key) == u[key], (u["filename"], key, f.get(key), u[key])
        sha = u["hashes"]["sha256"]
        assert f["url"] == "../../files/%s/%s" % (sha, u["filename"]), f["url"]
        assert urlsplit(urljoin(page_url, f["url"])).path == \
            "/root/pypi/files/%s/%s" % (sha, u["filename"])
        # PEP 714: never the old key in JSON; pip 22.3-23.0 (Debian 12's 23.0.1)
        # crashes on any value under it.
        assert "dist-info-metadata" not in f, f
    assert file_entry(doc, C10)["yanked"] == "broken"


def test_html_page_keeps_upstream_fields(stack, dists):
    r = get_page(stack, "larder-demo-a", accept="text/html")
    assert r.status == 200, r
    p = parse_html(r.body)
    page_url = stack.base + page_path("larder-demo-a")
    got = {text: attrs for attrs, text in p.anchors}
    assert sorted(got) == [A10, A11]
    for fn, rp in ((A10, ">=3.7"), (A11, ">=3.7,<4")):
        a = got[fn]
        d = dists[fn]
        url, _, frag = a["href"].partition("#")
        assert frag == "sha256=" + d.sha256, a
        assert urlsplit(urljoin(page_url, url)).path == "/root/pypi/files/%s/%s" % (d.sha256, fn)
        assert a.get("data-requires-python") == rp, a
        assert a.get("data-core-metadata") == "sha256=" + sha256(d.metadata), a
        if "data-dist-info-metadata" in a:
            assert a["data-dist-info-metadata"] == a["data-core-metadata"], a
        assert "data-yanked" not in a, a

    r = get_page(stack, "larder-demo-c", accept="text/html")
    got = {text: attrs for attrs, text in parse_html(r.body).anchors}
    assert got[C10].get("data-yanked") == "broken"
    assert "data-yanked" not in got[C20]


def test_legacy_metadata_key_not_passed_to_pip(stack, new_venv):
    """An upstream still on the pre-PEP 714 JSON key: larder serves it as
    core-metadata and pip (which would crash on the old key) installs."""
    stack.standin.control(json_metadata_keys=["dist-info-metadata"])
    doc = json_page(stack, "larder-demo-a")
    for f in doc["files"]:
        assert "dist-info-metadata" not in f, f
        assert f.get("core-metadata", {}).get("sha256"), f
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv) == INSTALLED


def test_project_list(stack):
    r = stack.get("/root/pypi/simple/", accept=PIP_ACCEPT)
    assert r.status == 200, r
    assert r.header("Content-Type", "").startswith(JSON_TYPE)
    names = {re.sub(r"[-_.]+", "-", p["name"]).lower() for p in r.json()["projects"]}
    assert {"larder-demo-a", "larder-demo-b", "larder-demo-c", "larder-demo-nometa"} <= names
    r = stack.get("/root/pypi/simple/", accept="text/html")
    assert r.status == 200, r
    assert r.header("Content-Type", "").startswith("text/html")
    p = parse_html(r.body)
    hrefs = {urlsplit(urljoin(stack.base + "/root/pypi/simple/", a["href"])).path
             for a, _ in p.anchors}
    assert "/root/pypi/simple/larder-demo-a/" in hrefs, hrefs


def test_normalisation_redirects(stack):
    for path, want in (
            ("/root/pypi/simple/Larder_Demo.B/?x=1", "/root/pypi/simple/larder-demo-b/?x=1"),
            ("/root/pypi/simple/larder-demo-b", "/root/pypi/simple/larder-demo-b/"),
            ("/root/pypi/simple/LARDER-DEMO-A", "/root/pypi/simple/larder-demo-a/"),
            ("/root/pypi/simple", "/root/pypi/simple/")):
        r = stack.get(path, accept=PIP_ACCEPT)
        assert r.status == 301, (path, r)
        loc = r.header("Location", "")
        assert loc.endswith(want), (path, loc)
        # Where the client ends up: the same server (nginx's port included;
        # Debian's fastcgi_params passes HTTP_HOST as $host, without it).
        target = urljoin(stack.base + path, loc)
        assert urlsplit(target).netloc == urlsplit(stack.base).netloc, (path, loc)

    loc = stack.get("/root/pypi/simple/Larder_Demo.B/", accept=PIP_ACCEPT).header("Location")
    r = http(urljoin(stack.base + "/root/pypi/simple/Larder_Demo.B/", loc),
             headers={"Accept": PIP_ACCEPT})
    assert r.status == 200, r
    assert r.json()["name"] == "larder-demo-b"
    assert file_entry(r.json(), B10)


def test_unknown_project_404_remembered(stack):
    r = get_page(stack, "no-such-project")
    assert r.status == 404, r
    r = get_page(stack, "no-such-project")
    assert r.status == 404, r
    c = stack.standin.counters()
    assert c["requests"].get("GET /simple/no-such-project/") == 1, c


# cache_ttl 2, not 1: the third request must find the revalidated copy
# fresh, and with 1 it went stale as soon as the clock's second turned
# (nginx keeps an answer through the second before its expiry)
@pytest.mark.stack(cache_ttl=2)
def test_revalidation(stack):
    r1 = get_page(stack, "larder-demo-a")
    assert r1.status == 200, r1
    assert r1.header("X-Larder-Cache") == "MISS", dict(r1.headers)
    time.sleep(3)
    stack.standin.reset()
    r2 = get_page(stack, "larder-demo-a")
    assert r2.status == 200, r2
    assert r2.header("X-Larder-Cache") == "REVALIDATED", dict(r2.headers)
    assert r2.body == r1.body
    c = stack.standin.counters()
    assert c["conditional"] == 1, c
    assert c["not_modified"] == 1, c
    r3 = get_page(stack, "larder-demo-a")
    assert r3.status == 200 and r3.header("X-Larder-Cache") == "HIT", dict(r3.headers)
    assert stack.standin.counters()["conditional"] == 1


# ---------------------------------------------------------------- files

def test_pep658_metadata(stack, dists):
    doc = json_page(stack, "larder-demo-a")
    page_url = stack.base + page_path("larder-demo-a")
    for fn in (A10, A11):
        f = file_entry(doc, fn)
        want = f["core-metadata"]["sha256"]
        assert want == sha256(dists[fn].metadata)
        r = http(urljoin(page_url, f["url"]) + ".metadata")
        assert r.status == 200, r
        assert r.body == dists[fn].metadata
        assert sha256(r.body) == want
    stack.standin.reset()
    r = http(urljoin(page_url, file_entry(doc, A11)["url"]) + ".metadata")
    assert r.status == 200 and r.body == dists[A11].metadata
    assert stack.standin.counters()["metadata"] == {}, "warm .metadata went upstream"

    # no metadata upstream: larder makes it from the wheel (range reads),
    # and says so without a hash until it knows one
    doc = json_page(stack, "larder-demo-nometa")
    f = file_entry(doc, NOMETA)
    assert f.get("core-metadata") is True and not f.get("dist-info-metadata"), f
    r = http(urljoin(stack.base + page_path("larder-demo-nometa"), f["url"]) + ".metadata")
    assert r.status == 200, r
    with zipfile.ZipFile(dists[NOMETA].path) as zf:
        want = zf.read("larder_demo_nometa-1.0.dist-info/METADATA")
    assert r.body == want, r.body

    doc = json_page(stack, "larder-demo-c")
    f = file_entry(doc, C20_SDIST)
    r = http(urljoin(stack.base + page_path("larder-demo-c"), f["url"]) + ".metadata")
    assert r.status == 404, r
    c = stack.standin.counters()
    assert NOMETA not in c["metadata"] and C20_SDIST not in c["metadata"], c


def test_files_warm_headers_and_range(stack, dists):
    d = dists[A11]
    path = file_path(stack, "larder-demo-a", A11)
    assert path == "/root/pypi/files/%s/%s" % (d.sha256, A11)
    r = stack.get(path)
    assert r.status == 200 and r.complete, r
    assert sha256(r.body) == d.sha256
    # the owner stores the file after its client has it; meanwhile a
    # request would follow the fetch (a MISS from the verified temp file)
    assert fh.wait_settled(stack.data_dir) == ([], {})

    r = stack.get(path)
    assert r.status == 200 and r.complete, r
    assert sha256(r.body) == d.sha256
    assert r.header("ETag") == '"%s"' % d.sha256, dict(r.headers)
    assert "immutable" in r.header("Cache-Control", ""), dict(r.headers)
    assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)

    with open(d.path, "rb") as f:
        first = f.read(10)
    r = stack.get(path, headers={"Range": "bytes=0-9"})
    assert r.status == 206, r
    assert r.body == first
    assert r.header("Content-Range") == "bytes 0-9/%d" % d.size

    r = stack.get(path, method="HEAD")
    assert r.status == 200, r
    assert int(r.header("Content-Length")) == d.size and r.body == b""

    assert stack.standin.counters()["files"] == {A11: 1}


def test_files_only_if_a_page_listed_them(stack, dists):
    json_page(stack, "larder-demo-a")
    stack.standin.reset()
    cases = [
        # a real hash with another file's name
        (dists[A11].sha256, A10),
        # made up
        ("0" * 64, "evil-1.0-py3-none-any.whl"),
        (dists[A11].sha256, "larder_demo_a-1.1-py3-none-any.whl.zip"),
    ]
    for sha, fn in cases:
        r = stack.get("/root/pypi/files/%s/%s" % (sha, fn))
        assert r.status == 404, (sha, fn, r)
        r = stack.get("/root/pypi/files/%s/%s.metadata" % (sha, fn))
        assert r.status == 404, (sha, fn, r)
    c = stack.standin.counters()
    assert c["files"] == {} and c["metadata"] == {}, c
    assert not any(k.startswith("GET /packages/") for k in c["requests"]), c

    # Listed upstream, but no page of this route was fetched that lists
    # it (another shard's was, docs/scaling.md): the page of the project
    # its name says is fetched, once, and lists it.
    for _ in range(2):
        r = stack.get("/root/pypi/files/%s/%s" % (dists[C20].sha256, C20))
        assert r.status == 200 and sha256(r.body) == dists[C20].sha256, r
    c = stack.standin.counters()
    assert c["requests"]["GET /simple/larder-demo-c/"] == 1, c["requests"]
    assert c["files"] == {C20: 1}, c


def _download_fails(r, d):
    """True when the client cannot mistake r for the file d."""
    return not (r.status == 200 and r.complete and len(r.body) == d.size)


@pytest.mark.parametrize("fault", ["corrupt", "truncate"])
def test_broken_upstream_file_commits_nothing(stack, dists, fault):
    d = dists[A11]
    path = file_path(stack, "larder-demo-a", A11)
    stack.standin.control(**{fault: [A11]})
    t0 = time.monotonic()
    r = http(stack.base + path, timeout=10)
    took = time.monotonic() - t0
    assert _download_fails(r, d), "a %s upstream file was served as good: %r" % (fault, r)
    # A graceful close of the FastCGI connection leaves nginx holding the
    # client's keep-alive connection open until keepalive_timeout; larder has
    # to reset it (SO_LINGER 0) so the client learns at once.
    assert took < 8, "the failed download took %.1f s to end (%r)" % (took, r)
    if r.status == 200 and r.complete:
        assert sha256(r.body) == d.sha256
    time.sleep(0.5)
    assert stackmod.bad_blobs(stack.data_dir) == []
    assert not any(os.path.basename(p) == d.sha256
                   for p in stackmod.blobs(stack.data_dir).values())

    stack.standin.control(**{fault: []})
    r = stack.get(path)
    assert r.status == 200 and r.complete, r
    assert sha256(r.body) == d.sha256
    assert stackmod.bad_blobs(stack.data_dir) == []
    r = stack.get(path)
    assert r.status == 200 and sha256(r.body) == d.sha256


# ---------------------------------------------------------------- operations

def _larder_version():
    try:
        p = subprocess.run([stackmod.larder_bin(), "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=10)
    except OSError:
        return None
    m = re.search(rb"\d+\.\d+(?:\.\d+)?\S*", p.stdout)
    return m.group(0).decode() if m else None


def test_health(stack):
    r = stack.get("/+health")
    assert r.status == 200, r
    version = _larder_version()
    assert version, "larder --version printed no version"
    assert version in r.body.decode(errors="replace"), (version, r.body)


def test_request_log(stack):
    stack.get("/root/pypi/simple/larder-demo-a/", accept=PIP_ACCEPT)
    # (asked another way: nginx answers a page it has from its own cache,
    # and larder would not see the request)
    stack.get("/root/pypi/simple/larder-demo-a/", accept="text/html")
    stack.get("/root/pypi/simple/no-such-project/", accept=PIP_ACCEPT)
    stack.get("/root/pypi/simple/larder-demo-a/", method="POST")
    stack.get("/+health")
    for method, path, status in (("GET", "/root/pypi/simple/larder-demo-a/", 200),
                                 ("GET", "/root/pypi/simple/no-such-project/", 404),
                                 ("POST", "/root/pypi/simple/larder-demo-a/", 405),
                                 ("GET", "/+health", 200)):
        assert stack.larder.find_log(method, path, status), \
            "no log line with %s %s %d in:\n%s" % (method, path, status,
                                                   stack.larder.log_text()[-3000:])
    # one MISS and one HIT: the miss's line may come second, and late, as a
    # cold page's worker logs it after making the page's gzip'd copies (the
    # HIT's line alone satisfied find_log above)
    def page_lines():
        return [l for l in stack.larder.log_lines()
                if re.search(r"(?<!\S)GET(?!\S).*?/root/pypi/simple/larder-demo-a/.*?\b200\b", l)]

    stackmod.wait_for(lambda: len(page_lines()) >= 2, 3.0)
    lines = page_lines()
    assert len(lines) >= 2, lines
    assert sorted(" miss " in l.lower() for l in lines[:2]) == [False, True], lines
    assert sum(" hit " in l.lower() for l in lines[:2]) == 1, lines


def test_hostile_paths(stack, dists):
    sha = dists[A11].sha256
    file_path(stack, "larder-demo-a", A11)
    assert stack.get("/root/pypi/files/%s/%s" % (sha, A11)).status == 200
    assert fh.wait_settled(stack.data_dir) == ([], {})
    before = stackmod.data_listing(stack.data_dir)
    stack.standin.reset()
    port = stack.nginx.port
    hex64 = "ab" * 32
    raw_paths = [
        "/root/pypi/simple/../../etc/passwd",
        "/root/pypi/simple/../../../../../etc/passwd",
        "/root/pypi/files/%s/..%%2f..%%2fetc%%2fpasswd" % hex64,
        "/root/pypi/files/%s/..%%2f..%%2f..%%2f..%%2fetc%%2fpasswd" % sha,
        "/root/pypi/files/%s/..%%5c..%%5cetc%%5cpasswd" % sha,
        "/root/pypi/simple/%2e%2e/%2e%2e/etc/passwd",
        "/root/pypi/simple/%2e%2e/",
        "/root/pypi/files/%2e%2e/%2e%2e/etc/passwd",
        "/root/pypi/files/%s/%%2e%%2e" % sha,
        "/root/pypi/simple/%252e%252e/%252e%252e/etc/passwd",
        "/root/pypi/simple/%252e%252e/",
        "/root/pypi/files/%s/%%252e%%252e%%252fetc%%252fpasswd" % sha,
        "/root/pypi/simple/larder-demo-a%00/",
        "/root/pypi/simple/larder%00demo-a/",
        "/root/pypi/files/%s/%s%%00.metadata" % (sha, A11),
        "/root/pypi/simple/larder-demo-a%0d%0aX-Injected:%201/",
        "/root/pypi/simple/x%0d%0aX-Injected:%201%0d%0a%0d%0a/",
        "/root/pypi/files/%s/x%%0d%%0aX-Injected:%%201.whl" % sha,
        "/root/pypi/simple/%s/" % ("a" * 300),
        "/root/pypi/files/%s/%s" % (sha[:63], A11),
        "/root/pypi/files/%sa/%s" % (sha, A11),
        "/root/pypi/files/%s/%s" % ("g" * 64, A11),
        "/root/pypi/files/%s/" % sha,
        "/root/pypi/files/%s/.." % sha,
        "/root/pypi/files/%s/%s/extra" % (sha, A11),
        "/root/pypi/files/%s/%s" % (sha, "a" * 300 + ".whl"),
        "/_larder/blobs/sha256/%s/%s/%s" % (sha[:2], sha[2:4], sha),
        "/_larder/",
        "/nosuchindex/simple/",
        "/nosuchindex/simple/larder-demo-a/",
        "/root/pypi/nosuchthing/",
        "/root/pypi/simple/larder-demo-a/?q=" + "x" * 8192,
    ]
    for p in raw_paths:
        r = raw_request(port, p)
        assert_4xx(r, p)
        assert r.header("X-Injected") is None, (p, dict(r.headers))

    r = raw_request(port, "/nosuchindex/simple/")
    assert r.status == 404, r
    for method in ("POST", "PUT", "DELETE"):
        r = raw_request(port, "/root/pypi/simple/larder-demo-a/", method=method, body=b"x=1")
        assert r.status == 405, (method, r)
    r = raw_request(port, "/root/pypi/files/%s/%s" % (sha, A11), method="POST", body=b"x")
    assert r.status == 405, r

    assert stackmod.data_listing(stack.data_dir) == before
    assert stackmod.bad_blobs(stack.data_dir) == []
    c = stack.standin.counters()
    assert c["files"] == {} and c["metadata"] == {}, c
    assert stack.get("/+health").status == 200
    assert stack.larder.running, "larder died:\n" + stack.larder.log_text()[-3000:]
