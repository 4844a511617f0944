"""A liar on every route (issue 21): every route of larder that yields bytes,
with a lying upstream behind it, for each lie that applies, against one
invariant:

    whatever larder serves with a strong validator (ETag), with
    `Cache-Control: immutable`, with a digest header (Docker-Content-Digest)
    or as a hash in a page is exactly the verified bytes, and nothing
    unverified is stored as if verified.

Routes (PyPI through root/pypi, a virtual index over the cache index pypi;
OCI through [registry "test"]):

    page_json      /root/pypi/simple/P/ as PEP 691 JSON
    page_html      the same page as PEP 503 HTML, from an HTML-only upstream
    file           /root/pypi/files/SHA/FN, cold
    range          the same with a Range in the middle of the file, cold
    head           HEAD of the file, cold
    meta_upstream  FN.metadata, the upstream's PEP 658 file
    meta_own       FN.metadata larder makes itself (no upstream metadata)
    json_api       /root/pypi/pypi/P/json
    manifest_tag   /v2/test/R/manifests/1.0
    manifest_digest  /v2/test/R/manifests/sha256:...
    blob           /v2/test/R/blobs/sha256:... (the layer)
    blob_head      HEAD of it
    tags           /v2/test/R/tags/list
    referrers      /v2/test/R/referrers/sha256:...
    token          a manifest through a bearer token the realm lies about

Lies (standin.py's fault rules for PyPI, oci_relay.Relay's for the registry;
the kinds this module needed were added to both, see their docstrings):

    same_size      other bytes of the same size: another build of the wheel
                   (a valid wheel whose METADATA says Requires-Dist: evilpkg,
                   "swap"), else bytes flipped ("corrupt")
    longer         16 more bytes, Content-Length to match
    shorter        16 fewer bytes, Content-Length to match
    wrong_length   a Content-Length the body does not reach (then closed)
    wrong_digest   a Docker-Content-Digest of zeros (registry routes only)
    wrong_type     the body under another Content-Type
    redirect       a redirect to an untrusted host (127.0.0.2) that serves
                   other bytes
    gzip_bomb      Content-Encoding: gzip over 64 MiB of zeros
    stall          nothing for 3 s (larder's timeouts here are 1 s)
    error_page     a 200 text/html "Service Unavailable" page

Each cell sets its lie on names of its own (a project, a wheel, a
repository per cell, so the cells share one stack per front end and cannot
see each other's state), makes its request through the front end, checks
the answer, lifts the lie, asks again where the route is content-addressed
(the truth must now be served: nothing wrong was kept), and inspects the
store: every blob under DATA/blobs hashes to its name, and the database
rows of the cell (files, oci_refs, oci_blobs, oci_tokens) name only the
genuine digests and token. The module runs behind nginx and lighttpd
(spawned FastCGI, X-Sendfile); $LIAR_FRONTENDS picks others
(frontends.KINDS). With $LIAR_TABLE=PATH it writes the outcome of every
cell to PATH as a Markdown table (docs/reliability.md holds one).
"""

import gzip
import hashlib
import http.server as httpserver
import json
import os
import re
import shutil
import sqlite3
import threading
import time
import zipfile
from urllib.parse import parse_qs, urlsplit

import pytest

import frontends
import ociup
import stack as stackmod
import wheels as wheelsmod
from stack import http

# hostile upstream bytes on every route: where a memory error would show
pytestmark = pytest.mark.one_build("asan")

FRONTENDS = (os.environ.get("LIAR_FRONTENDS") or "nginx lighttpd-fcgi").split()

PYPI_ROUTES = ("page_json", "page_html", "file", "range", "head", "meta_upstream",
               "meta_own", "json_api")
OCI_ROUTES = ("manifest_tag", "manifest_digest", "blob", "blob_head", "tags",
              "referrers", "token")
LIES = ("same_size", "longer", "shorter", "wrong_length", "wrong_digest", "wrong_type",
        "redirect", "gzip_bomb", "stall", "error_page")

STALL = 3.0       # seconds a stall lie holds back
BOMB = 64 << 20   # bytes a gzip bomb inflates to
ERROR_PAGE = "<html><body><h1>Service Unavailable</h1>try later</body></html>\n"

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_ACCEPT = ", ".join([OCI_MANIFEST, OCI_INDEX,
                        "application/vnd.docker.distribution.manifest.v2+json",
                        "application/vnd.docker.distribution.manifest.list.v2+json"])
ARTIFACT = "application/vnd.larder.liar.sbom"

# cells known to break the invariant, (route, lie) -> the reason; none now
# (issue 21 items 1 and 2 are fixed)
XFAIL = {}

OUTCOMES = {}     # (front end, route, lie) -> (answer, store)


def applicable(route, lie):
    return lie != "wrong_digest" or route in OCI_ROUTES


def cells(routes):
    out = []
    for r in routes:
        for lie in LIES:
            if not applicable(r, lie):
                continue
            marks = []
            if (r, lie) in XFAIL:
                marks.append(pytest.mark.xfail(strict=False, reason=XFAIL[(r, lie)]))
            out.append(pytest.param(r, lie, id="%s-%s" % (r, lie), marks=marks))
    return out


def sha(b):
    return hashlib.sha256(b).hexdigest()


def slug(route, lie):
    return ("liar-%s-%s" % (route, lie)).replace("_", "-")


def strong_etag(r):
    e = r.header("ETag")
    return e is not None and not e.startswith("W/")


def immutable(r):
    return "immutable" in (r.header("Cache-Control") or "")


# ---------------------------------------------------------------- PyPI's side

def build_wheels(d, evil_dir):
    """One project per PyPI cell: a wheel with upstream metadata (for
    meta_upstream), else without; and for each its evil twin of the same
    size in evil_dir. Returns {project: info}."""
    out = {}
    for route in PYPI_ROUTES:
        for lie in LIES:
            if not applicable(route, lie):
                continue
            name = slug(route, lie)
            meta = route == "meta_upstream"
            pad = 400
            p = wheelsmod.build_wheel(d, name, "1.0", requires=["larder-demo-c"],
                                      extra_files={"pad/pad.bin": b"p" * pad},
                                      metadata_sibling=meta)
            size = os.path.getsize(p)
            # the evil build: Requires-Dist: evilpkg, padded to the same size
            q = wheelsmod.build_wheel(evil_dir, name, "1.0", requires=["evilpkg"],
                                      extra_files={"pad/pad.bin": b"e" * (pad - 200)},
                                      metadata_sibling=False)
            short = size - os.path.getsize(q)
            assert short > 0
            with zipfile.ZipFile(q, "a") as zf:  # the rest in the zip's comment
                zf.comment = b"e" * short
            assert os.path.getsize(q) == size, "could not pad the evil twin"
            with open(p, "rb") as f:
                data = f.read()
            with open(q, "rb") as f:
                evil = f.read()
            assert evil != data
            meta_bytes = None
            if meta:
                with open(p + ".metadata", "rb") as f:
                    meta_bytes = f.read()
            out[name] = {"filename": os.path.basename(p), "path": p, "bytes": data,
                         "sha256": sha(data), "evil": q, "meta": meta_bytes,
                         "metadata": wheelsmod.metadata_text(name, "1.0",
                                                             ["larder-demo-c"])}
    return out


def pypi_rule(route, lie, w, evil_url):
    """The stand-in's fault rule for the cell's lie."""
    fn = w["filename"]
    project = slug(route, lie)
    if route in ("page_json", "page_html", "json_api"):
        match = "/simple/%s/" % project
    elif route == "meta_upstream":
        match = fn + ".metadata"
    else:
        match = fn
    is_file = match == fn
    rule = {"match": match}
    if lie == "same_size":
        rule.update(kind="swap", file=w["evil"]) if is_file else rule.update(kind="corrupt")
    elif lie == "longer":
        rule.update(kind="resize", delta=16)
    elif lie == "shorter":
        rule.update(kind="resize", delta=-16)
    elif lie == "wrong_length":
        rule.update(kind="truncate")
    elif lie == "wrong_type":
        rule.update(kind="retype", content_type="text/plain" if not is_file else "text/html")
    elif lie == "redirect":
        rule.update(kind="redirect", code=302, location=evil_url + "/" + match.strip("/"))
    elif lie == "gzip_bomb":
        rule.update(kind="gzip_bomb", size=BOMB,
                    content_type="application/vnd.pypi.simple.v1+json"
                    if not is_file else "application/octet-stream")
    elif lie == "stall":
        rule.update(kind="stall", seconds=STALL)
    elif lie == "error_page":
        rule.update(kind="raw", code=200, content_type="text/html", body=ERROR_PAGE)
    return rule


# ---------------------------------------------------------------- the registry

def _digest(b):
    return "sha256:" + sha(b)


def _canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


class Repo:
    """One repository of the stand-in registry: a layer, a config, an image
    manifest tagged 1.0 and 2.0, and a referrer (an artifact manifest whose
    subject is the image)."""

    def __init__(self, name):
        self.name = name
        seed = hashlib.sha256(name.encode()).digest()
        self.layer = b"".join(hashlib.sha256(seed + i.to_bytes(4, "big")).digest()
                              for i in range(512))  # 16 KiB
        self.config = _canon({"architecture": "amd64", "os": "linux",
                              "rootfs": {"type": "layers", "diff_ids": [_digest(self.layer)]},
                              "config": {"Labels": {"repo": name}}})
        self.manifest = _canon({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": _digest(self.config), "size": len(self.config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": _digest(self.layer), "size": len(self.layer)}]})
        empty = b"{}"
        self.referrer = _canon({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": ARTIFACT,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                       "digest": _digest(empty), "size": 2},
            "layers": [{"mediaType": "application/vnd.oci.empty.v1+json",
                        "digest": _digest(empty), "size": 2}],
            "subject": {"mediaType": OCI_MANIFEST, "digest": _digest(self.manifest),
                        "size": len(self.manifest)}})
        self.blobs = {_digest(self.layer): self.layer, _digest(self.config): self.config,
                      _digest(empty): empty}
        self.manifests = {"1.0": self.manifest, "2.0": self.manifest,
                          _digest(self.manifest): self.manifest,
                          _digest(self.referrer): self.referrer}
        self.referrers = _canon({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
            {"mediaType": OCI_MANIFEST, "digest": _digest(self.referrer),
             "size": len(self.referrer), "artifactType": ARTIFACT}]})
        self.token = "good-" + sha(name.encode())[:24]


class Registry:
    """The module's own registry stand-in (a few canned repositories, not
    docker-registry: every cell wants one of its own): bearer auth with a
    token per repository from GET /token, manifests by tag and digest,
    blobs, tag lists and the referrers API. realm is set once the relay in
    front of it is known, so that tokens are asked through the relay too."""

    def __init__(self, names):
        self.repos = {n: Repo(n) for n in names}
        self.realm = None
        reg = self

        class H(httpserver.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                reg.answer(self, head=False)

            def do_HEAD(self):
                reg.answer(self, head=True)

        self.srv = httpserver.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]

    def start(self):
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()

    def send(self, h, code, body=b"", ctype="application/json", headers=(), head=False):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Docker-Distribution-Api-Version", "registry/2.0")
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        try:
            if body and not head:
                h.wfile.write(body)
        except OSError:
            h.close_connection = True

    def answer(self, h, head):
        u = urlsplit(h.path)
        if u.path == "/token":
            q = parse_qs(u.query)
            m = re.fullmatch(r"repository:([^:]+):pull", (q.get("scope") or [""])[0])
            repo = self.repos.get(m.group(1)) if m else None
            if not repo:
                return self.send(h, 400, b'{"details":"bad scope"}', head=head)
            tok = {"token": repo.token, "access_token": repo.token, "expires_in": 300}
            return self.send(h, 200, json.dumps(tok).encode(), head=head)
        if u.path == "/v2/":
            return self.challenge(h, None, head)
        m = re.fullmatch(r"/v2/(.+)/(manifests|blobs|tags|referrers)/(.+)", u.path)
        repo = self.repos.get(m.group(1)) if m else None
        if not repo:
            return self.send(h, 404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', head=head)
        if h.headers.get("Authorization") != "Bearer " + repo.token:
            return self.challenge(h, repo.name, head)
        what, ref = m.group(2), m.group(3)
        if what == "manifests" and ref in repo.manifests:
            body = repo.manifests[ref]
            return self.send(h, 200, body, OCI_MANIFEST,
                             [("Docker-Content-Digest", _digest(body))], head)
        if what == "blobs" and ref in repo.blobs:
            body = repo.blobs[ref]
            return self.send(h, 200, body, "application/octet-stream",
                             [("Docker-Content-Digest", ref)], head)
        if what == "tags" and ref == "list":
            return self.send(h, 200, _canon({"name": repo.name, "tags": ["1.0", "2.0"]}),
                             head=head)
        if what == "referrers" and ref == _digest(repo.manifest):
            return self.send(h, 200, repo.referrers, OCI_INDEX, head=head)
        return self.send(h, 404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', head=head)

    def challenge(self, h, name, head):
        ch = 'Bearer realm="%s",service="liar"' % self.realm
        if name:
            ch += ',scope="repository:%s:pull"' % name
        self.send(h, 401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                  headers=[("WWW-Authenticate", ch)], head=head)


def oci_fault(route, lie, repo, evil_url):
    """The relay's fault rule for the cell's lie."""
    name = repo.name
    if route == "token":
        rule = {"path": "^/token$",
                "query": "repository(%%3A|:)%s(%%3A|:)" % re.escape(name)}
    elif route == "manifest_tag":
        rule = {"path": "^/v2/%s/manifests/1\\.0$" % re.escape(name)}
    elif route == "manifest_digest":
        rule = {"path": "^/v2/%s/manifests/sha256:" % re.escape(name)}
    elif route in ("blob", "blob_head"):
        rule = {"path": "^/v2/%s/blobs/" % re.escape(name)}
    elif route == "tags":
        rule = {"path": "^/v2/%s/tags/list$" % re.escape(name)}
    else:
        rule = {"path": "^/v2/%s/referrers/" % re.escape(name)}
    fault = {"same_size": "corrupt", "longer": "longer", "shorter": "shorter",
             "wrong_length": "truncate", "wrong_digest": "digest", "wrong_type": "retype",
             "redirect": "redirect", "gzip_bomb": "gzip_bomb", "stall": "stall",
             "error_page": "error_page"}[lie]
    rule["fault"] = fault
    if fault == "redirect":
        rule["location"] = evil_url + "/evil/" + name
    if fault == "gzip_bomb":
        rule["size"] = BOMB
    if fault == "stall":
        rule["seconds"] = STALL
    if fault == "error_page":
        rule["body"] = ERROR_PAGE
    return rule


# ---------------------------------------------------------------- the liar's host

class EvilHost:
    """An untrusted host (127.0.0.2) that answers every GET with other bytes."""

    BODY = b"evil bytes from an untrusted host\n" * 64

    def __init__(self):
        body = self.BODY

        class H(httpserver.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self, head=False):
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def do_HEAD(self):
                self.do_GET(head=True)

        try:
            self.srv = httpserver.ThreadingHTTPServer(("127.0.0.2", 0), H)
            host = "127.0.0.2"
        except OSError:
            self.srv = httpserver.ThreadingHTTPServer(("127.0.0.1", 0), H)
            host = "127.0.0.1"
        self.srv.daemon_threads = True
        self.url = "http://%s:%d" % (host, self.srv.server_address[1])
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


# ---------------------------------------------------------------- the stack

class Liar:
    """One front end with larder behind it, the stand-in PyPI, the registry
    stand-in behind a Relay, and the evil host."""

    def __init__(self, kind, workdir, wheel_info, wheel_dir):
        self.kind = kind
        self.wheels = wheel_info
        self.evil = EvilHost()
        self.standin = stackmod.Standin(wheel_dir, os.path.join(workdir, "standin"),
                                        quiet=True)
        names = [slug(r, lie) for r in OCI_ROUTES for lie in LIES]
        self.registry = Registry(names).start()
        self.relay = ociup.Relay(self.registry.port)
        self.registry.realm = self.relay.base + "/token"
        self.fe = None
        self.workdir = workdir

    def start(self):
        self.standin.start()
        self.relay.start()
        section = ociup.registry_section("test", self.relay.base + "/", cache_ttl=300)
        extra = {"error_ttl": 0, "fetch_retries": 0, "first_byte_timeout": 1,
                 "fetch_timeout": 1, "connect_timeout": 2}
        self.fe = frontends.make_frontend(self.kind, os.path.join(self.workdir, "fe"),
                                          self.standin.port, files_port=self.standin.files_port,
                                          larder_extra=extra, workers=2,
                                          larder_extra_text="\n" + section)
        self.fe.start()
        return self

    def stop(self):
        for piece in (self.fe, self.relay, self.standin):
            try:
                if piece is not None:
                    piece.stop()
            except Exception:
                pass
        self.registry.stop()
        self.evil.stop()

    @property
    def base(self):
        return self.fe.base

    def db(self):
        path = os.path.join(self.fe.data_dir, "larder.db")
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)

    def rows(self, sql, *args):
        for _ in range(20):
            try:
                with self.db() as c:
                    return c.execute(sql, args).fetchall()
            except sqlite3.OperationalError:
                time.sleep(0.1)
        raise AssertionError("database busy")


@pytest.fixture(scope="module")
def wheel_set(tmp_path_factory):
    d = frontends.new_workdir("larder-liar-wheels-")
    info = build_wheels(os.path.join(d, "wheels"), os.path.join(d, "evil"))
    yield d, info
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module", params=FRONTENDS)
def liar(request, wheel_set):
    why = stackmod.missing_reason() or frontends.missing_reason(request.param)
    if why:
        pytest.skip(why)
    workdir = frontends.new_workdir("larder-liar-")
    st = Liar(request.param, workdir, wheel_set[1], os.path.join(wheel_set[0], "wheels"))
    try:
        st.start()
    except BaseException:
        st.stop()
        raise
    yield st
    st.stop()
    logs = st.fe.log_text()
    shutil.rmtree(workdir, ignore_errors=True)
    # no lie may crash larder or trip a sanitizer (the ASan build in CI)
    bad = [l for l in logs.splitlines()
           if re.search(r"AddressSanitizer|LeakSanitizer|runtime error:", l)]
    assert not bad, "sanitizer reports:\n" + "\n".join(bad[:20])


def store_check(st, before):
    """New blobs that do not hash to their names since before."""
    bad = [p for p, _ in stackmod.bad_blobs(st.fe.data_dir) if p not in before]
    assert not bad, "unverified blobs stored: %r" % bad


def record(st, route, lie, answer, store):
    OUTCOMES[(st.kind, route, lie)] = (answer, store)


def describe(r, genuine):
    """What larder answered, in a few words."""
    if r.status is None or r.status == 0:
        return "no answer"
    if r.status >= 300:
        return "%d" % r.status
    v = []
    if strong_etag(r):
        v.append("strong ETag")
    if immutable(r):
        v.append("immutable")
    if r.header("Docker-Content-Digest"):
        v.append("digest")
    what = "genuine" if genuine else "OTHER bytes"
    return "%d %s%s" % (r.status, what, (" (" + ", ".join(v) + ")") if v else "")


# ---------------------------------------------------------------- PyPI cells

def page_hashes(body, is_json):
    """{filename: (sha256, metadata sha256 or None)} a page lists."""
    out = {}
    if is_json:
        doc = json.loads(body)
        for f in doc.get("files", []):
            cm = f.get("core-metadata")
            out[f["filename"]] = (f["hashes"].get("sha256"),
                                  cm.get("sha256") if isinstance(cm, dict) else None)
        return out, doc.get("name")
    text = body.decode("utf-8", "replace")
    for m in re.finditer(r'<a ([^>]*)>([^<]*)</a>', text):
        attrs, fn = m.group(1), m.group(2)
        h = re.search(r"#sha256=([0-9a-f]{64})", attrs)
        cm = re.search(r'data-core-metadata="sha256=([0-9a-f]{64})"', attrs)
        out[fn] = (h.group(1) if h else None, cm.group(1) if cm else None)
    t = re.search(r"<title>Links for ([^<]*)</title>", text)
    return out, t.group(1) if t else None


@pytest.mark.parametrize("route,lie", cells(PYPI_ROUTES))
def test_pypi_liar(liar, route, lie):
    st = liar
    project = slug(route, lie)
    w = st.wheels[project]
    fn, genuine = w["filename"], w["bytes"]
    meta_sha = sha(w["meta"]) if w["meta"] else None
    before = {p for p, _ in stackmod.bad_blobs(st.fe.data_dir)}
    page_url = "%s/root/pypi/simple/%s/" % (st.base, project)
    file_url = "%s/root/pypi/files/%s/%s" % (st.base, w["sha256"], fn)
    rule = pypi_rule(route, lie, w, st.evil.url)
    is_page = route in ("page_json", "page_html", "json_api")
    if not is_page:
        # the page, truthful, so that larder knows the file
        r = http(page_url, headers={"Accept": stackmod.JSON_TYPE})
        assert r.status == 200, r
    st.standin.control(faults=[rule], html_only=route == "page_html")
    try:
        if route in ("page_json", "page_html"):
            accept = stackmod.JSON_TYPE if route == "page_json" else "text/html"
            r = http(page_url, headers={"Accept": accept}, timeout=30)
            ok = True
            if r.status == 200:
                listed, name = page_hashes(r.body, route == "page_json")
                # a hash in a page is the file's (or no entry at all)
                for f, (h, mh) in listed.items():
                    assert f == fn and h == w["sha256"], (f, h)
                    assert mh is None or mh == meta_sha or route != "meta_upstream"
                if listed:
                    # issue 21 item 9: the normalised name, from HTML too
                    assert name == project, name
                ok = not listed or listed[fn][0] == w["sha256"]
            answer = describe(r, ok)
        elif route == "json_api":
            r = http("%s/root/pypi/pypi/%s/json" % (st.base, project), timeout=30)
            if r.status == 200:
                doc = json.loads(r.body)
                for u in doc.get("urls", []) + [x for v in doc.get("releases", {}).values()
                                                for x in v]:
                    assert u["filename"] == fn and u["digests"]["sha256"] == w["sha256"], u
            answer = describe(r, True)
        elif route in ("file", "head"):
            r = http(file_url, method="GET" if route == "file" else "HEAD", timeout=30)
            if route == "file" and r.status == 200:
                assert sha(r.body) == w["sha256"], "200 with other bytes"
            if r.status == 200 and r.header("Content-Length") is not None:
                assert int(r.header("Content-Length")) == len(genuine)
            if strong_etag(r):
                assert r.header("ETag") == '"%s"' % w["sha256"]
            answer = describe(r, route == "head" or sha(r.body) == w["sha256"])
        elif route == "range":
            lo, hi = len(genuine) // 4, 3 * len(genuine) // 4
            r = http(file_url, headers={"Range": "bytes=%d-%d" % (lo, hi)}, timeout=30)
            want = genuine[lo:hi + 1]
            good = (r.status == 206 and r.body == want) or (r.status == 200 and r.body == genuine)
            answer = describe(r, good)
            record(st, route, lie, answer, "-")
            if r.status in (200, 206):
                assert good or not (strong_etag(r) or immutable(r)), \
                    "unverified range bytes served as the file: %s" % answer
        elif route in ("meta_upstream", "meta_own"):
            r = http(file_url + ".metadata", timeout=30)
            if route == "meta_upstream":
                good = r.status == 200 and sha(r.body) == meta_sha
                answer = describe(r, good)
                if r.status == 200:
                    assert good, "metadata other than the page's hash"
            else:
                good = r.status == 200 and r.body.replace(b"\r\n", b"\n") == w["metadata"]
                good = good or (r.status == 200 and b"evilpkg" not in r.body and
                                b"larder-demo-c" in r.body)
                answer = describe(r, good)
                record(st, route, lie, answer, "-")
                if r.status == 200:
                    assert good or not (strong_etag(r) or immutable(r)), \
                        "metadata of unverified bytes served as verified: %s" % answer
    finally:
        st.standin.control(faults=[], html_only=False)
    stored = st.rows("SELECT count(*) FROM blobs WHERE sha256 = ?", w["sha256"])[0][0]
    store = "the verified file" if stored else "nothing"
    if is_page:
        n = st.rows("SELECT count(*) FROM files WHERE filename = ?", fn)[0][0]
        store = "the page, listing the file" if n else "no page listing the file"
    record(st, route, lie, answer, store)
    if is_page and lie == "error_page":
        # a 200 error page is no page: it must not stand for the project's
        assert r.status != 200 or fn in page_hashes(
            r.body, route != "page_html")[0] or route == "json_api", \
            "a 200 error page taken for the project's page"
    # the truth, now that upstream tells it
    if route in ("file", "range", "head", "meta_own"):
        r2 = http(file_url, timeout=30)
        assert r2.status == 200 and sha(r2.body) == w["sha256"], r2
    if route == "meta_upstream":
        r2 = http(file_url + ".metadata", timeout=30)
        assert r2.status == 200 and sha(r2.body) == meta_sha, r2
    if route == "meta_own":
        r2 = http(file_url + ".metadata", timeout=30)
        assert r2.status == 200 and b"evilpkg" not in r2.body, \
            "the metadata of the lie outlived it: %r" % r2.body[:200]
    store_check(st, before)
    rows = st.rows("SELECT sha256, meta_sha FROM files WHERE filename = ?", fn)
    for s, m in rows:
        assert s == w["sha256"], "a file row names another sha256: %s" % s
        if route == "meta_upstream":
            assert m in ("", meta_sha), "a file row names other metadata: %s" % m


def test_pep691_name_from_html(liar):
    """Issue 21 item 9: a PEP 691 page made from an HTML upstream page names
    the project by its normalised name (it was "" with no <title>, and the
    title's spelling otherwise)."""
    st = liar
    w = st.wheels[slug("file", "stall")]
    url = "http://localhost:%d/packages/%s/%s/%s" % (
        st.standin.files_port, w["sha256"][:2], w["sha256"][2:4], w["filename"])
    link = '<a href="%s#sha256=%s">%s</a>' % (url, w["sha256"], w["filename"])
    pages = {"liar-untitled": "<html><body>%s</body></html>" % link,
             "liar-spelt": "<html><head><title>Links for Liar_Spelt</title></head>"
                           "<body>%s</body></html>" % link}
    st.standin.control(faults=[{"match": "/simple/%s/" % p, "kind": "raw",
                                "content_type": "text/html", "body": body}
                               for p, body in pages.items()])
    try:
        for project in pages:
            r = http("%s/root/pypi/simple/%s/" % (st.base, project),
                     headers={"Accept": stackmod.JSON_TYPE})
            assert r.status == 200, r
            doc = json.loads(r.body)
            assert doc["name"] == project, doc["name"]
            assert [f["filename"] for f in doc["files"]] == [w["filename"]]
    finally:
        st.standin.control(faults=[])


# ---------------------------------------------------------------- registry cells

@pytest.mark.parametrize("route,lie", cells(OCI_ROUTES))
def test_oci_liar(liar, route, lie):
    st = liar
    name = slug(route, lie)
    repo = st.registry.repos[name]
    man_d = _digest(repo.manifest)
    layer_d = _digest(repo.layer)
    v2 = "%s/v2/test/%s" % (st.base, name)
    before = {p for p, _ in stackmod.bad_blobs(st.fe.data_dir)}
    rule = oci_fault(route, lie, repo, st.evil.url)
    if route in ("blob", "blob_head", "referrers"):
        # the token, truthful, first: the lie is the blob's or the list's
        r = http(v2 + "/manifests/" + man_d, headers={"Accept": OCI_ACCEPT})
        assert r.status == 200 and r.body == repo.manifest, r
    st.relay.set_faults([rule])
    try:
        good = None
        if route in ("manifest_tag", "manifest_digest", "token"):
            ref = man_d if route == "manifest_digest" else "1.0"
            r = http(v2 + "/manifests/" + ref, headers={"Accept": OCI_ACCEPT}, timeout=30)
            good = r.status == 200 and r.body == repo.manifest
            if r.status == 200:
                assert good, "a manifest other than the registry's"
                dcd = r.header("Docker-Content-Digest")
                assert dcd is None or dcd == man_d, dcd
        elif route in ("blob", "blob_head"):
            r = http(v2 + "/blobs/" + layer_d, timeout=30,
                     method="GET" if route == "blob" else "HEAD")
            good = r.status == 200 and (route == "blob_head" or r.body == repo.layer)
            if r.status == 200:
                assert good, "a blob other than its digest"
                dcd = r.header("Docker-Content-Digest")
                assert dcd is None or dcd == layer_d, dcd
                cl = r.header("Content-Length")
                assert cl is None or int(cl) == len(repo.layer), cl
        elif route == "tags":
            r = http(v2 + "/tags/list", timeout=30)
            good = r.status == 200
            if r.status == 200:
                assert json.loads(r.body)["tags"] == ["1.0", "2.0"], r.body[:200]
        else:
            r = http(v2 + "/referrers/" + man_d, timeout=30)
            good = r.status == 200
            if r.status == 200:
                doc = json.loads(r.body)
                got = [(m["digest"], m.get("artifactType")) for m in doc["manifests"]]
                assert got == [(_digest(repo.referrer), ARTIFACT)], got
        answer = describe(r, good)
    finally:
        st.relay.clear()
    n = st.rows("SELECT count(*) FROM oci_refs WHERE name = ? AND sha256 != ''", name)[0][0]
    n += st.rows("SELECT count(*) FROM oci_blobs WHERE name = ?", name)[0][0]
    record(st, route, lie, answer, "genuine rows only (%d)" % n if n else "nothing")
    # the truth, now that upstream tells it
    if route in ("manifest_digest", "blob", "blob_head", "token"):
        path = ("/blobs/" + layer_d) if route.startswith("blob") else ("/manifests/" + man_d)
        r2 = http(v2 + path, headers={"Accept": OCI_ACCEPT}, timeout=30)
        want = repo.layer if route.startswith("blob") else repo.manifest
        assert r2.status == 200 and r2.body == want, r2
    store_check(st, before)
    genuine = {sha(b) for b in list(repo.blobs.values()) + list(repo.manifests.values())}
    for ref, s in st.rows("SELECT ref, sha256 FROM oci_refs WHERE name = ? AND sha256 != ''",
                          name):
        if ref in ("1.0", "2.0") or ref.startswith("sha256:"):
            assert s in genuine, "a ref names another digest: %s" % s
        else:
            # a tag list or referrers list: larder's own copy, JSON
            with open(os.path.join(st.fe.data_dir, "blobs", "sha256", s[:2], s[2:4], s),
                      "rb") as f:
                doc = json.loads(f.read())
            if ref.startswith("/referrers/"):
                assert [m["digest"] for m in doc["manifests"]] == [_digest(repo.referrer)]
            else:
                assert doc["tags"] == ["1.0", "2.0"], doc
    for (s,) in st.rows("SELECT sha256 FROM oci_blobs WHERE name = ?", name):
        assert s in genuine, "a blob row names another digest: %s" % s
    for (v,) in st.rows("SELECT value FROM oci_tokens WHERE scope LIKE ?",
                        "%%repository:%s:%%" % name):
        assert v == repo.token, "a token the realm did not give: %r" % v[:60]


# ---------------------------------------------------------------- the table

# Short forms for the table's cells.
STORE_SHORT = {"nothing": "-", "the verified file": "file", "-": "-",
               "the page, listing the file": "page", "no page listing the file": "-"}


def short(answer, store):
    """One cell: the answer, then what was kept after it."""
    a = answer.replace("genuine", "ok").replace("OTHER bytes", "**OTHER BYTES**")
    a = a.replace("strong ETag", "ETag").replace(", digest", ", DCD").replace("(digest)",
                                                                           "(DCD)")
    if store.startswith("genuine rows only"):
        kept = "rows"
    else:
        kept = STORE_SHORT.get(store, store)
    return "%s; %s" % (a, kept)


def render_table(outcomes, kinds):
    """The route x lie table in Markdown, a row per route and a column per
    lie: per cell what larder answered and what it kept, for the first
    front end (another whose answer differs is named in the cell)."""
    lines = ["| route | " + " | ".join(LIES) + " |",
             "|---|" + "---|" * len(LIES)]
    for route in PYPI_ROUTES + OCI_ROUTES:
        row = []
        for lie in LIES:
            if not applicable(route, lie):
                row.append("n/a")
                continue
            got = [outcomes.get((k, route, lie)) for k in kinds]
            first = next((g for g in got if g), None)
            if not first:
                row.append("?")
                continue
            cell = short(*first)
            for k, g in zip(kinds[1:], got[1:]):
                if g and short(*g) != cell:
                    cell += " (%s: %s)" % (k, short(*g))
            if (route, lie) in XFAIL and "OTHER" in first[0]:
                cell += " [xfail]"
            row.append(cell)
        lines.append("| %s | %s |" % (route, " | ".join(row)))
    return "\n".join(lines) + "\n"


def teardown_module(module):
    path = os.environ.get("LIAR_TABLE")
    if path and OUTCOMES:
        kinds = [k for k in FRONTENDS if any(o[0] == k for o in OUTCOMES)]
        with open(path, "w") as f:
            f.write(render_table(OUTCOMES, kinds))
