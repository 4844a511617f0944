"""Search (issue 25, docs/search.md): /+search finds a hosted upload by the
words of its summary and keywords, a cached project once pip installed it
(its summary from the metadata larder stored), an image once it was pushed
or pulled through (registry, repository, tags); filters by index and
registry; an index with read = token is searched only for a token that may
read it; hostile query strings are a 400 with a one-line reason, never a
500; `larder search reindex` rebuilds the index from the store. Behind
nginx, and the upload and search round trip again behind lighttpd."""

import hashlib
import json
import os
import shutil
import sqlite3
import urllib.parse

import pytest

import frontends
import stack as stackmod
import uploads as up
from stack import PIP_ACCEPT, http

EXTRA = """
[index "root/private"]
type = hosted

[index "team/secret"]
type = hosted
read = token

[index "team/all"]
type = virtual
layers = root/private pypi

[registry "open"]
type = hosted

[registry "sealed"]
type = hosted
read = token
"""

pytestmark = pytest.mark.stack(larder_extra_text=EXTRA)

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def cli(st):
    return up.Cli(stackmod.larder_bin(), st.larder.conf)


def search(base, headers=None, **params):
    """GET /+search?params as JSON; returns the Response."""
    params.setdefault("format", "json")
    return http("%s/+search?%s" % (base, urllib.parse.urlencode(params)), headers=headers)


def hits(base, headers=None, **params):
    """The (kind, scope, name) of each result of a search that must
    succeed."""
    r = search(base, headers=headers, **params)
    assert r.status == 200, (r, r.body[:300])
    assert r.header("Content-Type", "").startswith("application/json"), r
    doc = r.json()
    return [(h["kind"], h.get("index") or h.get("registry"), h["name"])
            for h in doc["results"]]


def wheel_with(tmp, name, version, summary, keywords=None):
    """A wheel of name whose METADATA says summary (and keywords)."""
    src = up.build_wheel(str(tmp / "src"), name, version)
    meta = up.wheel_metadata(src).decode()
    head, body = meta.split("\n\n", 1)
    lines = [l for l in head.split("\n") if not l.startswith("Summary:")]
    lines.append("Summary: " + summary)
    if keywords:
        lines.append("Keywords: " + keywords)
    new = ("\n".join(lines) + "\n\n" + body).encode()
    os.makedirs(str(tmp / "out"), exist_ok=True)
    dst = str(tmp / "out" / os.path.basename(src))
    return up.rezip(src, dst, replace={".dist-info/METADATA": new})


def upload(st, index, path, tok):
    r = up.upload(st.nginx.base, index, path, tok)
    assert r.status == 200, (r, r.body[:300])


def push_image(base, tok, repo, tag):
    """A one-layer image pushed as repo:tag with the push API."""
    auth = up.basic(tok)
    config, layer = b'{"architecture":"amd64","os":"linux"}', os.urandom(2000)
    for blob in (config, layer):
        d = "sha256:" + hashlib.sha256(blob).hexdigest()
        r = http("%s/v2/%s/blobs/uploads/?digest=%s" % (base, repo, d), method="POST",
                 headers=dict(auth, **{"Content-Type": "application/octet-stream"}),
                 body=blob)
        assert r.status == 201, (r, r.body)
    m = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": "sha256:" + hashlib.sha256(layer).hexdigest(),
                    "size": len(layer)}]}, sort_keys=True).encode()
    r = http("%s/v2/%s/manifests/%s" % (base, repo, tag), method="PUT",
             headers=dict(auth, **{"Content-Type": OCI_MANIFEST}), body=m)
    assert r.status == 201, (r, r.body)


def test_hosted_upload_found_by_its_summary(stack, tmp_path):
    st = stack
    base = st.nginx.base
    assert hits(base, q="quantum") == []
    tok = up.token_add(cli(st), "root/private", "upload")
    upload(st, "root/private", wheel_with(tmp_path, "acme-widgets", "1.0",
                                          "Frobnicates quantum widgets",
                                          "gizmo, sprocket"), tok)
    want = [("project", "root/private", "acme-widgets")]
    assert hits(base, q="quantum") == want
    assert hits(base, q="Quantum WIDGETS") == want
    assert hits(base, q="sprocket") == want          # a keyword
    assert hits(base, q="frobnic*") == want          # a prefix
    assert hits(base, q="acme-widgets") == want      # the name
    assert hits(base, q="quantum nothere") == []     # every word must match
    # ranked: the exact name, then the words in a name, then elsewhere
    upload(st, "root/private", wheel_with(tmp_path / "q", "quantum", "1.0", "A plain name"), tok)
    upload(st, "root/private", wheel_with(tmp_path / "qs", "quantum-sim", "1.0", "Simulates"),
           tok)
    assert hits(base, q="quantum") == [("project", "root/private", "quantum"),
                                       ("project", "root/private", "quantum-sim")] + want
    for v, name in (("1.0", "quantum"), ("1.0", "quantum-sim")):
        p = up.larder_cli(cli(st), "remove", "--force", "root/private", name, v)
        assert p.returncode == 0, p.stderr
    assert hits(base, q="quantum") == want
    doc = search(base, q="quantum").json()
    assert doc["results"][0]["summary"] == "Frobnicates quantum widgets"
    assert doc["results"][0]["keywords"] == "gizmo, sprocket"
    # filters: the index, a virtual index over it, another index, a registry
    assert hits(base, q="quantum", index="root/private") == want
    assert hits(base, q="quantum", index="team/all") == want
    assert hits(base, q="quantum", index="pypi") == []
    assert hits(base, q="quantum", registry="open") == []
    # the HTML page links the project's page; the landing page links search
    r = http(base + "/+search?q=quantum")
    assert r.status == 200 and r.header("Content-Type").startswith("text/html"), r
    assert b'href="root/private/simple/acme-widgets/"' in r.body, r.body
    assert b"Frobnicates quantum widgets" in r.body
    r = http(base + "/+search?q=quantum", headers={"Accept": "application/json"})
    assert r.status == 200 and r.json()["results"][0]["name"] == "acme-widgets"
    assert b"/+search" in http(base + "/").body
    # a new upload's metadata replaces the summary; a removed release
    # leaves the results
    upload(st, "root/private", wheel_with(tmp_path / "2", "acme-widgets", "2.0",
                                          "Polishes classical widgets"), tok)
    assert hits(base, q="classical") == want
    assert hits(base, q="quantum") == []
    for v in ("1.0", "2.0"):
        p = up.larder_cli(cli(st), "remove", "--force", "root/private", "acme-widgets", v)
        assert p.returncode == 0, p.stderr
    assert hits(base, q="classical") == []


def test_cached_project_found_after_pip_installed_it(stack, tmp_path):
    st = stack
    base = st.nginx.base
    assert hits(base, q="larder-demo-a") == []
    venv = str(tmp_path / "venv")
    rc, out = stackmod.venv_install(venv, base + "/pypi/simple/", ["larder-demo-a"])
    assert rc == 0, out
    got = hits(base, q="larder-demo-a", index="pypi")
    assert got == [("project", "pypi", "larder-demo-a")], got
    # pip read the wheels, not their metadata: larder holds none, so the
    # name alone is indexed; its dependency, fetched by the same install,
    # too
    assert hits(base, q="larder-demo-c") == [("project", "pypi", "larder-demo-c")]
    assert hits(base, q="integration-test package") == []
    # a client that reads the PEP 658 metadata (uv, a newer pip) has
    # larder store it: its summary is found from then on
    r = http(base + "/pypi/simple/larder-demo-a/", headers={"Accept": PIP_ACCEPT})
    assert r.status == 200, r
    f = r.json()["files"][-1]
    meta = http(urllib.parse.urljoin(base + "/pypi/simple/larder-demo-a/", f["url"])
                .split("#")[0] + ".metadata")
    assert meta.status == 200, meta
    doc = search(base, q="integration-test package").json()
    names = {h["name"]: h["summary"] for h in doc["results"]}
    assert names == {"larder-demo-a": "larder integration-test package larder-demo-a"}, doc


def test_image_found_after_push(stack):
    st = stack
    base = st.nginx.base
    tok = _registry_token(st, "open")
    assert hits(base, q="toolbox") == []
    push_image(base, tok, "open/acme/toolbox", "v1.2")
    push_image(base, tok, "open/acme/toolbox", "stable")
    want = [("image", "open", "acme/toolbox")]
    assert hits(base, q="toolbox") == want
    assert hits(base, q="acme toolbox", registry="open") == want
    assert hits(base, q="stable") == want               # a tag
    assert hits(base, q="toolbox", index="root/private") == []
    doc = search(base, q="toolbox").json()
    assert sorted(doc["results"][0]["tags"]) == ["stable", "v1.2"], doc


def _registry_token(st, registry):
    p = up.larder_cli(cli(st), "token", "add", "--registry", registry,
                      "--actions", "pull,push")
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_read_protected_index(stack, tmp_path):
    st = stack
    base = st.nginx.base
    up_tok = up.token_add(cli(st), "team/secret", "upload")
    upload(st, "team/secret", wheel_with(tmp_path, "hush-box", "1.0",
                                         "Classified telemetry"), up_tok)
    want = [("project", "team/secret", "hush-box")]
    # anonymous: left out of a search of everything, refused when named
    assert hits(base, q="telemetry") == []
    r = search(base, q="telemetry", index="team/secret")
    assert r.status == 401, r
    # a token that may not read it: left out, refused when named
    other = up.token_add(cli(st), "root/private", "read")
    assert hits(base, q="telemetry", headers=up.basic(other)) == []
    assert search(base, q="telemetry", index="team/secret",
                  headers=up.basic(other)).status == 403
    assert hits(base, q="telemetry", headers=up.basic("lt_0000000000000000_" + "0" * 64)) == []
    # a read token of the index: shown, and not for a shared cache
    rd = up.token_add(cli(st), "team/secret", "read")
    assert hits(base, q="telemetry", headers=up.basic(rd)) == want
    assert hits(base, q="telemetry", index="team/secret", headers=up.basic(rd)) == want
    r = search(base, q="telemetry", headers=up.basic(rd))
    assert "private" in r.header("Cache-Control", ""), r.headers


def test_a_token_sees_only_its_projects(stack, tmp_path):
    """A token limited to some projects (--projects) or repositories
    (--repositories) finds only those in a scope that takes a token, as
    when it asks for one; the others' names, summaries and tags stay
    hidden."""
    st = stack
    base = st.nginx.base
    up_tok = up.token_add(cli(st), "team/secret", "upload")
    for name in ("quiet-box", "quiet-cam"):
        upload(st, "team/secret", wheel_with(tmp_path / name, name, "1.0",
                                             "Muffled telemetry"), up_tok)
    rd = up.token_add(cli(st), "team/secret", "read", projects=["quiet-box"])
    assert hits(base, q="muffled", headers=up.basic(rd)) == [
        ("project", "team/secret", "quiet-box")]
    full = up.token_add(cli(st), "team/secret", "read")
    assert sorted(hits(base, q="muffled", headers=up.basic(full))) == [
        ("project", "team/secret", "quiet-box"), ("project", "team/secret", "quiet-cam")]
    push = _registry_token(st, "sealed")
    push_image(base, push, "sealed/ci/app", "v1")
    push_image(base, push, "sealed/secret/payroll-app", "v1-internal")
    p = up.larder_cli(cli(st), "token", "add", "--registry", "sealed",
                      "--actions", "pull", "--repositories", "ci/*")
    assert p.returncode == 0, p.stderr
    scoped = up.basic(p.stdout.strip())
    r = http(base + "/v2/sealed/secret/payroll-app/manifests/v1-internal",
             headers=dict(scoped, Accept=OCI_MANIFEST))
    assert r.status == 403, r
    assert hits(base, q="app", headers=scoped) == [("image", "sealed", "ci/app")]
    r = search(base, q="internal", headers=scoped)
    assert r.status == 200 and b"payroll" not in r.body, r.body[:500]
    assert hits(base, q="app") == []


HOSTILE = [
    '"', '""', '*', '**', 'NEAR(a b)', 'a OR', 'AND', 'NOT', '"unterminated', '(((',
    ')', 'name:foo', 'scope : x', '^start', '-x', '+', 'a"b', "a'b", '{name summary}:x',
    'NEAR("a" "b", 2)', 'x*y', '*x', '\\', '%', ';DROP TABLE search_docs;--', "é", "日本",
]


def test_hostile_queries(stack, tmp_path):
    st = stack
    base = st.nginx.base
    tok = up.token_add(cli(st), "root/private", "upload")
    upload(st, "root/private", wheel_with(tmp_path, "near-thing", "1.0", "NEAR and far"), tok)
    for q in HOSTILE:
        r = search(base, q=q)
        assert r.status == 200, (q, r, r.body[:300])
        r = http(base + "/+search?" + urllib.parse.urlencode({"q": q}))
        assert r.status == 200, (q, r, r.body[:300])
    # operators are words: NEAR finds the summary that says it
    assert hits(base, q="NEAR") == [("project", "root/private", "near-thing")]
    assert hits(base, q='"near') == [("project", "root/private", "near-thing")]
    bad = {
        "q=" + "a" * 300: "query",
        "q=%ff%fe": "UTF-8",
        "q=a%01b": "control",
        "q=" + "+".join("w%d" % i for i in range(17)): "words",
        "q=%zz": "encoded",
        "q=a&format=xml": "format",
        "q=a&index=%": "query string",
    }
    for qs, word in bad.items():
        r = http(base + "/+search?" + qs)
        assert r.status == 400, (qs, r, r.body)
        assert word in up.one_line_reason(r), (qs, r.body)
    assert http(base + "/+search?q=a&index=nope").status == 404
    assert http(base + "/+search?q=a&registry=nope").status == 404
    assert http(base + "/+search", method="POST", body=b"q=a").status == 405
    # the index is intact after all that
    assert hits(base, q="far") == [("project", "root/private", "near-thing")]


def test_reindex_rebuilds_from_the_store(stack, tmp_path):
    """A store whose search index is empty (as one from schema 10 whose
    names the upgrade indexed, and no summaries): `larder search reindex`
    reads them back from the stored metadata."""
    st = stack
    base = st.nginx.base
    tok = up.token_add(cli(st), "root/private", "upload")
    upload(st, "root/private", wheel_with(tmp_path, "lost-widget", "1.0",
                                          "Recovered by reindex"), tok)
    db = sqlite3.connect(os.path.join(st.data_dir, "larder.db"))
    try:
        db.execute("DELETE FROM search_docs")
        db.execute("INSERT INTO search_docs (kind, scope, name) VALUES"
                   " ('pypi', 'root/private', 'gone-project')")
        db.commit()
    finally:
        db.close()
    assert hits(base, q="recovered") == []
    assert hits(base, q="gone-project") == []    # nothing holds it
    p = up.larder_cli(cli(st), "search", "reindex")
    assert p.returncode == 0, p.stderr
    assert "1 rows of what is gone dropped" in p.stdout, p.stdout
    assert hits(base, q="recovered") == [("project", "root/private", "lost-widget")]


def test_schema_10_store_indexed_on_upgrade(stack, tmp_path):
    """A store from before search (schema 10: no search tables) gets its
    projects indexed by name when larder opens it."""
    st = stack
    base = st.nginx.base
    tok = up.token_add(cli(st), "root/private", "upload")
    upload(st, "root/private", wheel_with(tmp_path, "old-timer", "1.0", "Vintage"), tok)
    st.larder.stop()
    db = sqlite3.connect(os.path.join(st.data_dir, "larder.db"))
    try:
        db.executescript("DROP TABLE search_fts; DROP TABLE search_names;"
                         " DROP TABLE search_docs;"
                         " PRAGMA user_version = 10;")
    finally:
        db.close()
    st.larder.start()
    assert hits(base, q="old-timer") == [("project", "root/private", "old-timer")]


def test_through_lighttpd(tmp_path):
    kind = "lighttpd-fcgi"
    why = frontends.missing_reason(kind) or stackmod.missing_reason()
    if why:
        pytest.skip(why)
    workdir = frontends.new_workdir("larder-search-fe-")
    fe = None
    try:
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), stackmod.free_port(),
                                     larder_extra_text=EXTRA)
        fe.write_larder_conf()
        os.makedirs(fe.data_dir, exist_ok=True)
        tok = up.token_add(up.Cli(stackmod.larder_bin(), fe.larder_conf), "root/private",
                           "upload")
        fe.start()
        path = wheel_with(tmp_path, "lighty-lamp", "1.0", "Illuminates search")
        r = up.upload(fe.base, "root/private", path, tok)
        assert r.status == 200, (r, r.body[:300], fe.log_text()[-3000:])
        assert hits(fe.base, q="illuminates") == [("project", "root/private", "lighty-lamp")]
        assert search(fe.base, q="a%01b").status == 200  # urlencoded: a literal %01
        assert http(fe.base + "/+search?q=a%01b").status == 400
    finally:
        if fe is not None:
            fe.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_image_found_after_a_pull_through(tmp_path, wheel_dir):
    """A cache registry: an image skopeo pulled through larder is found by
    its name and tag; one nobody pulled is not."""
    import ociup
    from oci_images import KB, build_image
    why = stackmod.missing_reason() or ociup.missing_reason()
    if why:
        pytest.skip(why)
    reg = ociup.Registry(str(tmp_path / "registry")).start()
    st = None
    try:
        img = build_image(str(tmp_path / "img"), [4 * KB], seed="search", tag="3.19")
        ociup.push(img.layout, "3.19", "%s/library/pebble:3.19" % reg.host)
        ociup.push(img.layout, "3.19", "%s/library/untouched:1" % reg.host)
        extra = EXTRA + ociup.registry_section("up", "http://%s/" % reg.host, default=False)
        st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, larder_extra_text=extra,
                            larder_extra=dict(ociup.OCI_LARDER_KEYS)).start()
        base = st.nginx.base
        assert hits(base, q="pebble") == []
        r = ociup.pull("%s/up/library/pebble:3.19" % base.split("://", 1)[1],
                       str(tmp_path / "out"))
        assert r.ok, r
        assert hits(base, q="pebble") == [("image", "up", "library/pebble")]
        assert hits(base, q="pebble", registry="up") == [("image", "up", "library/pebble")]
        doc = search(base, q="pebble").json()
        assert doc["results"][0]["tags"] == ["3.19"], doc
        assert hits(base, q="untouched") == []
    finally:
        if st is not None:
            st.stop()
        reg.stop()
