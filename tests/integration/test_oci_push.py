"""Pushing images to a hosted registry ([registry] type = hosted) behind
nginx (docs/oci.md): skopeo pushes and pulls back byte-identical images
and a multi-arch index; the blob upload API driven from Python (chunks
with Content-Range, out of order, streamed, monolithic, mounts, status,
cancel); tokens with the registry actions (401 with a Bearer challenge
naming larder's token endpoint without credentials, 403 DENIED without
the action), the token endpoint itself; ten concurrent
pushes sharing layers store one copy of each; and hostile input, each
refused with the spec's error code and nothing changed on disk."""

import base64
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.parse

import pytest

import ociup
import stack as stackmod
from oci_images import (KB, MB, OCI_CONFIG, OCI_LAYER, OCI_MANIFEST, build_image,
                        build_index, canonical, compare_layouts, make_layer)
from stack import http

# priv: hosted, pull by token too; open: hosted, anyone pulls; other: a
# second hosted registry (its tokens are no good for priv).
EXTRA = """
[registry "priv"]
type = hosted
read = token
max_upload_size = 8M

[registry "open"]
type = hosted
delete = yes

[registry "other"]
type = hosted
upload_ttl = 2s
"""

pytestmark = pytest.mark.stack(larder_extra_text=EXTRA)

TOKEN_RE = re.compile(r"^lt_[0-9a-f]{16}_[0-9a-f]{64}$")


def token(st, *args):
    """A new token: `larder token add ARGS`."""
    p = subprocess.run([stackmod.larder_bin(), "token", "add"] + list(args) +
                       ["-c", st.larder.conf], capture_output=True,
                       env=stackmod.clean_env(), timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    tok = p.stdout.decode().strip()
    assert TOKEN_RE.match(tok), tok
    return tok


def basic(tok, user="__token__"):
    return {"Authorization": "Basic " +
            base64.b64encode(("%s:%s" % (user, tok)).encode()).decode()}


def host(st):
    return st.nginx.base.split("://", 1)[1]


def challenge(st, name=None, actions=None):
    """larder's 401 challenge through nginx: its token endpoint as realm,
    and the scope when the path names a repository."""
    v = 'Bearer realm="%s/v2/token",service="larder"' % st.nginx.base
    if name:
        v += ',scope="repository:%s:%s"' % (name, actions)
    return v


def errcode(r):
    try:
        return json.loads(r.body)["errors"][0]["code"]
    except (ValueError, KeyError, IndexError):
        return None


def temps(st):
    """The temp files in DATA/tmp."""
    return [n for n in os.listdir(os.path.join(st.data_dir, "tmp")) if not n.startswith(".")]


def snapshot(st):
    """What a refused request must not change: the store's files (blobs and
    temp files) and the registry rows."""
    files = []
    for root, _, names in os.walk(st.data_dir):
        for n in names:
            if n.startswith("larder.db"):
                continue
            files.append(os.path.relpath(os.path.join(root, n), st.data_dir))
    db = sqlite3.connect(os.path.join(st.data_dir, "larder.db"))
    try:
        rows = [sorted(db.execute("SELECT * FROM %s" % t).fetchall())
                for t in ("oci_refs", "oci_blobs", "oci_uploads")]
    finally:
        db.close()
    return sorted(files), rows


def test_skopeo_push_pull(stack, tmp_path):
    """skopeo copy oci: docker://: an image and a multi-arch index pushed
    with a push token, pulled back byte-identical with a pull token;
    tags listed; without credentials a 401 with the Bearer challenge."""
    st = stack
    push_tok = token(st, "--registry", "priv", "--actions", "pull,push")
    img = build_image(str(tmp_path / "img"), [4 * KB, 300 * KB], seed="push1", tag="1.0")
    idx = build_index(str(tmp_path / "idx"), tag="multi", seed="pushm")
    ociup.push(img.layout, "1.0", "%s/priv/team/app:1.0" % host(st),
               creds="__token__:" + push_tok)
    ociup.push(idx.layout, "multi", "%s/priv/team/app:multi" % host(st), all=True,
               creds="anyone:" + push_tok)
    pull_tok = token(st, "--registry", "priv", "--actions", "pull")
    out = str(tmp_path / "back")
    r = ociup.pull("%s/priv/team/app:1.0" % host(st), out, creds="__token__:" + pull_tok)
    assert r.ok, r
    assert not compare_layouts(out, img.layout)
    out2 = str(tmp_path / "back2")
    r = ociup.pull("%s/priv/team/app:multi" % host(st), out2, all=True,
                   creds="__token__:" + pull_tok)
    assert r.ok, r
    assert not compare_layouts(out2, idx.layout)
    r, tags = ociup.list_tags("%s/priv/team/app" % host(st), creds="__token__:" + pull_tok)
    assert r.ok, r
    assert sorted(tags) == ["1.0", "multi"]
    # no credentials: the challenge docker, podman and skopeo answer
    r = st.get("/v2/priv/team/app/manifests/1.0")
    assert r.status == 401 and errcode(r) == "UNAUTHORIZED"
    assert r.headers.get("www-authenticate") == challenge(st, "priv/team/app", "pull")
    # a wrong secret, an unknown token: 401 too
    bad = push_tok[:-4] + "0000" if not push_tok.endswith("0000") else push_tok[:-4] + "1111"
    assert st.get("/v2/priv/team/app/manifests/1.0", headers=basic(bad)).status == 401
    # the pushed blobs come out of the web server like cached ones
    layer = img.layers[0]
    r = st.get("/v2/priv/team/app/blobs/" + layer.digest, headers=basic(pull_tok))
    assert r.status == 200 and r.body == layer.data
    assert r.headers.get("docker-content-digest") == layer.digest
    r = st.get("/v2/priv/team/app/blobs/" + layer.digest,
               headers=dict(basic(pull_tok), Range="bytes=0-9"))
    assert r.status == 206 and r.body == layer.data[:10]
    # the open registry pulls anonymously
    open_tok = token(st, "--registry", "open", "--actions", "push")
    ociup.push(img.layout, "1.0", "%s/open/app:1.0" % host(st), creds="x:" + open_tok)
    out3 = str(tmp_path / "back3")
    r = ociup.pull("%s/open/app:1.0" % host(st), out3)
    assert r.ok, r
    assert not compare_layouts(out3, img.layout)


class Api:
    """The push API from Python, through nginx, with a token."""

    def __init__(self, st, tok):
        self.st = st
        self.auth = basic(tok) if tok else {}

    def req(self, method, path, body=None, headers=None):
        h = dict(self.auth)
        h.update(headers or {})
        return http(self.st.nginx.base + path, method=method, headers=h, body=body)

    def start(self, repo):
        r = self.req("POST", "/v2/%s/blobs/uploads/" % repo)
        assert r.status == 202, (r, r.body)
        loc = r.header("Location")
        assert loc and loc.startswith("/v2/%s/blobs/uploads/" % repo), loc
        assert r.header("Docker-Upload-UUID") == loc.rsplit("/", 1)[1]
        return loc

    def patch(self, loc, data, crange=None):
        h = {"Content-Type": "application/octet-stream"}
        if crange:
            h["Content-Range"] = crange
        return self.req("PATCH", loc, body=data, headers=h)

    def blob(self, repo, data):
        """A whole blob, POST ?digest=; returns its digest."""
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        r = self.req("POST", "/v2/%s/blobs/uploads/?digest=%s" % (repo, d), body=data,
                     headers={"Content-Type": "application/octet-stream"})
        assert r.status == 201, (r, r.body)
        return d

    def manifest(self, repo, ref, body, media=OCI_MANIFEST):
        return self.req("PUT", "/v2/%s/manifests/%s" % (repo, ref), body=body,
                        headers={"Content-Type": media})


def image_manifest(config, layers):
    return canonical({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
                   "size": len(config)},
        "layers": [{"mediaType": OCI_LAYER, "digest": "sha256:" + hashlib.sha256(l).hexdigest(),
                    "size": len(l)} for l in layers]})


def test_chunked_upload(stack):
    """A session: chunks with Content-Range, a status GET, a streamed
    chunk without Content-Range, the last one with PUT ?digest=; out of
    order, overlapping, short and long chunks are refused (416, 400) and
    leave the session as it was; a wrong digest stores nothing; DELETE
    cancels and removes the temp file."""
    st = stack
    api = Api(st, token(st, "--registry", "open", "--actions", "pull,push"))
    data = os.urandom(300 * KB + 17)
    loc = api.start("open/team/chunky")
    r = api.patch(loc, data[:100 * KB], "0-%d" % (100 * KB - 1))
    assert r.status == 202, r.body
    assert r.header("Range") == "0-%d" % (100 * KB - 1)
    assert r.header("Location") == loc
    before = snapshot(st)
    for bad, status in (("%d-%d" % (100 * KB + 1, 100 * KB + 10), 416),   # a gap
                        ("%d-%d" % (50 * KB, 150 * KB - 1), 416),         # overlap
                        ("0-9", 416)):                                    # again
        r = api.patch(loc, data[:100 * KB][:10] if bad == "0-9" else b"x" * 10, bad)
        assert r.status == status, (bad, r, r.body)
        assert errcode(r) == "BLOB_UPLOAD_INVALID"
    # short and long chunks, and a malformed range
    r = api.patch(loc, data[100 * KB:150 * KB], "%d-%d" % (100 * KB, 200 * KB - 1))
    assert r.status == 400 and errcode(r) == "SIZE_INVALID", r.body
    r = api.patch(loc, data[100 * KB:250 * KB], "%d-%d" % (100 * KB, 200 * KB - 1))
    assert r.status == 400 and errcode(r) == "SIZE_INVALID", r.body
    r = api.patch(loc, b"abc", "bytes=0-2")
    assert r.status == 400, r.body
    assert snapshot(st) == before
    r = api.req("GET", loc)
    assert r.status == 204 and r.header("Range") == "0-%d" % (100 * KB - 1)
    # a streamed chunk (chunked transfer encoding, no Content-Range)
    def gen():
        for i in range(100 * KB, 200 * KB, 10 * KB):
            yield data[i:i + 10 * KB]
    r = api.patch(loc, gen())
    assert r.status == 202, r.body
    assert r.header("Range") == "0-%d" % (200 * KB - 1)
    # a wrong digest: nothing stored, the session as it was
    before = snapshot(st)
    wrong = "sha256:" + hashlib.sha256(b"other").hexdigest()
    r = api.req("PUT", loc + "?digest=" + wrong, body=data[200 * KB:],
                headers={"Content-Range": "%d-%d" % (200 * KB, len(data) - 1)})
    assert r.status == 400 and errcode(r) == "DIGEST_INVALID", r.body
    assert snapshot(st) == before
    # the right one
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    r = api.req("PUT", loc + "?digest=" + digest, body=data[200 * KB:],
                headers={"Content-Range": "%d-%d" % (200 * KB, len(data) - 1)})
    assert r.status == 201, r.body
    assert r.header("Docker-Content-Digest") == digest
    assert r.header("Location") == "/v2/open/team/chunky/blobs/" + digest
    r = api.req("GET", "/v2/open/team/chunky/blobs/" + digest)
    assert r.status == 200 and r.body == data
    assert not temps(st)
    # the session is gone
    assert api.req("GET", loc).status == 404
    # cancel
    loc = api.start("open/team/chunky")
    assert api.patch(loc, b"y" * 1000).status == 202
    assert len(temps(st)) == 1
    r = api.req("DELETE", loc)
    assert r.status == 204
    assert api.req("GET", loc).status == 404
    assert not temps(st)


def test_push_api(stack):
    """Monolithic uploads, mounts, manifests by tag and digest, the tag
    list; a manifest naming blobs the repository does not hold
    (MANIFEST_BLOB_UNKNOWN), of another registry too; names and tags past
    the spec's limits; bad JSON; the size limit."""
    st = stack
    tok = token(st, "--registry", "open", "--actions", "pull,push")
    api = Api(st, tok)
    config, layer = b'{"architecture":"amd64","os":"linux"}', os.urandom(5000)
    cd = api.blob("open/a/one", config)
    ld = api.blob("open/a/one", layer)
    m = image_manifest(config, [layer])
    md = "sha256:" + hashlib.sha256(m).hexdigest()
    r = api.manifest("open/a/one", "v1", m)
    assert r.status == 201, r.body
    assert r.header("Docker-Content-Digest") == md
    assert r.header("Location") == "/v2/open/a/one/manifests/" + md
    r = api.req("GET", "/v2/open/a/one/manifests/v1", headers={"Accept": OCI_MANIFEST})
    assert r.status == 200 and r.body == m
    assert r.header("Content-Type") == OCI_MANIFEST
    assert r.header("Docker-Content-Digest") == md
    r = api.req("HEAD", "/v2/open/a/one/manifests/" + md)
    assert r.status == 200 and r.header("Docker-Content-Digest") == md
    assert api.manifest("open/a/one", md, m).status == 201
    # a tag moves
    layer2 = os.urandom(3000)
    api.blob("open/a/one", layer2)
    m2 = image_manifest(config, [layer2])
    assert api.manifest("open/a/one", "v1", m2).status == 201
    assert api.req("GET", "/v2/open/a/one/manifests/v1").body == m2
    assert api.req("GET", "/v2/open/a/one/manifests/" + md).body == m
    assert api.manifest("open/a/one", "v2", m2).status == 201
    r = api.req("GET", "/v2/open/a/one/tags/list")
    assert r.status == 200 and json.loads(r.body) == {"name": "open/a/one", "tags": ["v1", "v2"]}
    r = api.req("GET", "/v2/open/a/one/tags/list?n=1")
    assert json.loads(r.body)["tags"] == ["v1"] and "last=v1" in r.header("Link")
    # mount: from a repository that has it (201), and from one that has not (202)
    r = api.req("POST", "/v2/open/a/two/blobs/uploads/?mount=%s&from=open/a/one" % ld)
    assert r.status == 201, r.body
    assert r.header("Location") == "/v2/open/a/two/blobs/" + ld
    assert api.req("HEAD", "/v2/open/a/two/blobs/" + ld).status == 200
    r = api.req("POST", "/v2/open/a/two/blobs/uploads/?mount=%s&from=open/a/none" % ld)
    assert r.status == 202 and "/blobs/uploads/" in r.header("Location")
    api.req("DELETE", r.header("Location"))
    before = snapshot(st)
    # a manifest whose blobs the repository does not hold
    r = api.manifest("open/a/three", "v1", m)
    assert r.status == 400 and errcode(r) == "MANIFEST_BLOB_UNKNOWN", r.body
    # nor does a blob of another registry count
    other = Api(st, token(st, "--registry", "other", "--actions", "push"))
    other.blob("other/a/three", config)
    other.blob("other/a/three", layer)
    before = snapshot(st)
    r = api.manifest("open/a/three", "v1", m)
    assert r.status == 400 and errcode(r) == "MANIFEST_BLOB_UNKNOWN", r.body
    # a manifest that is no manifest, a digest that is not its own
    r = api.manifest("open/a/one", "v3", b"{not json")
    assert r.status == 400 and errcode(r) == "MANIFEST_INVALID"
    r = api.manifest("open/a/one", "v3", m, media="application/vnd.oci.image.index.v1+json")
    assert r.status == 400 and errcode(r) == "MANIFEST_INVALID"
    r = api.manifest("open/a/one", "sha256:" + "0" * 64, m)
    assert r.status == 400 and errcode(r) == "DIGEST_INVALID"
    # a wrong digest on a monolithic upload
    r = api.req("POST", "/v2/open/a/one/blobs/uploads/?digest=sha256:" + "1" * 64, body=b"abc")
    assert r.status == 400 and errcode(r) == "DIGEST_INVALID"
    # names and tags: at the limits, and past them
    r = api.manifest("open/a/one", "t" * 129, m)
    assert r.status == 400 and errcode(r) == "TAG_INVALID"
    r = api.req("POST", "/v2/open/%s/blobs/uploads/" % ("n" * 256))
    assert r.status == 400 and errcode(r) == "NAME_INVALID"
    r = api.req("POST", "/v2/open/a/One/blobs/uploads/")
    assert r.status == 400 and errcode(r) == "NAME_INVALID"
    assert snapshot(st) == before
    assert api.manifest("open/a/one", "t" * 128, m).status == 201
    # a manifest of 3 MB by digest: through nginx's manifest location
    fat = json.loads(m)
    fat["annotations"] = {"x%d" % i: "a" * 1000 for i in range(3000)}
    fat = canonical(fat)
    r = api.manifest("open/a/one", "sha256:" + hashlib.sha256(fat).hexdigest(), fat)
    assert r.status == 201, (r, r.body[:300])


def test_a_claimed_digest_is_held_to_the_bytes_sent(stack):
    """A digest the store already holds (another repository's blob, or any
    blob larder keeps) is still only a claim: a push that names it with
    other bytes, monolithic or by session, is DIGEST_INVALID and links
    nothing, so no push reaches a blob its client could not read."""
    st = stack
    api = Api(st, token(st, "--registry", "open", "--actions", "pull,push"))
    secret = os.urandom(4000)
    sd = api.blob("open/a/private", secret)
    before = snapshot(st)
    for body in (b"", b"not the bytes"):
        r = api.req("POST", "/v2/open/b/thief/blobs/uploads/?digest=" + sd, body=body,
                    headers={"Content-Type": "application/octet-stream"})
        assert r.status == 400 and errcode(r) == "DIGEST_INVALID", (r, r.body)
    loc = api.start("open/b/thief")
    assert api.patch(loc, b"xyz", "0-2").status == 202
    sep = "&" if "?" in loc else "?"
    r = api.req("PUT", loc + sep + "digest=" + sd)
    assert r.status == 400 and errcode(r) == "DIGEST_INVALID", (r, r.body)
    api.req("DELETE", loc)
    assert api.req("HEAD", "/v2/open/b/thief/blobs/" + sd).status == 404
    r = api.req("GET", "/v2/open/b/thief/blobs/" + sd)
    assert r.status == 404 and secret not in r.body
    assert snapshot(st) == before


def test_referrers(stack):
    """A manifest with a subject answers OCI-Subject and is listed by the
    referrers API (artifactType filter applied by larder); a subject with
    no referrers gets an empty index."""
    st = stack
    api = Api(st, token(st, "--registry", "open", "--actions", "pull,push"))
    config, layer = b'{"os":"linux"}', os.urandom(2000)
    api.blob("open/r", config)
    api.blob("open/r", layer)
    m = image_manifest(config, [layer])
    md = "sha256:" + hashlib.sha256(m).hexdigest()
    assert api.manifest("open/r", "1", m).status == 201
    empty = b"{}"
    api.blob("open/r", empty)
    sigs = []
    for atype in ("application/vnd.dev.cosign.artifact.sig.v1+json",
                  "application/spdx+json"):
        a = canonical({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": atype,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                       "digest": "sha256:" + hashlib.sha256(empty).hexdigest(), "size": 2},
            "layers": [{"mediaType": OCI_LAYER,
                        "digest": "sha256:" + hashlib.sha256(layer).hexdigest(),
                        "size": len(layer)}],
            "subject": {"mediaType": OCI_MANIFEST, "digest": md, "size": len(m)}})
        ad = "sha256:" + hashlib.sha256(a).hexdigest()
        r = api.manifest("open/r", ad, a)
        assert r.status == 201, r.body
        assert r.header("OCI-Subject") == md
        sigs.append((ad, atype, len(a)))
    r = api.req("GET", "/v2/open/r/referrers/" + md)
    assert r.status == 200, r.body
    assert r.header("Content-Type") == "application/vnd.oci.image.index.v1+json"
    got = json.loads(r.body)
    assert got["schemaVersion"] == 2
    assert sorted((d["digest"], d["artifactType"], d["size"]) for d in got["manifests"]) == \
        sorted(sigs)
    r = api.req("GET", "/v2/open/r/referrers/%s?artifactType=application%%2Fspdx%%2Bjson" % md)
    assert r.header("OCI-Filters-Applied") == "artifactType"
    assert [d["digest"] for d in json.loads(r.body)["manifests"]] == [sigs[1][0]]
    r = api.req("GET", "/v2/open/r/referrers/sha256:" + "3" * 64)
    assert r.status == 200 and json.loads(r.body)["manifests"] == []
    # a referrer is no tag
    assert json.loads(api.req("GET", "/v2/open/r/tags/list").body)["tags"] == ["1"]


def test_delete(stack):
    """delete = yes: a tag, a manifest by digest (with the tags that name
    it), a blob; a token without delete gets 403 DENIED, a registry with
    delete = no 405 UNSUPPORTED, and what is not there 404."""
    st = stack
    api = Api(st, token(st, "--registry", "open", "--actions", "pull,push,delete"))
    config, layer = b'{"os":"linux"}', os.urandom(2000)
    api.blob("open/d", config)
    ld = api.blob("open/d", layer)
    m = image_manifest(config, [layer])
    md = "sha256:" + hashlib.sha256(m).hexdigest()
    for tag in ("a", "b", "c"):
        assert api.manifest("open/d", tag, m).status == 201
    nodel = Api(st, token(st, "--registry", "open", "--actions", "pull,push"))
    before = snapshot(st)
    r = nodel.req("DELETE", "/v2/open/d/manifests/a")
    assert r.status == 403 and errcode(r) == "DENIED"
    other = Api(st, token(st, "--registry", "other", "--actions", "pull,push,delete"))
    r = other.req("DELETE", "/v2/other/d/manifests/a")
    assert r.status == 405 and errcode(r) == "UNSUPPORTED"
    assert snapshot(st) == before
    r = api.req("DELETE", "/v2/open/d/manifests/a")
    assert r.status == 202, r.body
    assert api.req("GET", "/v2/open/d/manifests/a").status == 404
    assert json.loads(api.req("GET", "/v2/open/d/tags/list").body)["tags"] == ["b", "c"]
    assert api.req("DELETE", "/v2/open/d/manifests/a").status == 404
    r = api.req("DELETE", "/v2/open/d/manifests/" + md)
    assert r.status == 202, r.body
    for ref in ("b", "c", md):
        r = api.req("GET", "/v2/open/d/manifests/" + ref)
        assert r.status == 404 and errcode(r) == "MANIFEST_UNKNOWN"
    assert json.loads(api.req("GET", "/v2/open/d/tags/list").body)["tags"] == []
    assert api.req("DELETE", "/v2/open/d/blobs/" + ld).status == 202
    r = api.req("GET", "/v2/open/d/blobs/" + ld)
    assert r.status == 404 and errcode(r) == "BLOB_UNKNOWN"
    assert api.req("DELETE", "/v2/open/d/blobs/" + ld).status == 404


@pytest.mark.stack(larder_extra_text=EXTRA, larder_extra={"gc_grace": 0})
def test_gc_keeps_pushed_blobs(stack, tmp_path):
    """Pushed blobs are the only copy: `larder gc --max-size 1` evicts
    what it may (the cache's), never a hosted registry's layers or
    manifests; an image pushed before still pulls whole."""
    st = stack
    tok = token(st, "--registry", "open", "--actions", "pull,push")
    img = build_image(str(tmp_path / "img"), [64 * KB, 128 * KB], seed="gc", tag="1")
    ociup.push(img.layout, "1", "%s/open/gc/app:1" % host(st), creds="u:" + tok)
    time.sleep(1.1)
    p = subprocess.run([stackmod.larder_bin(), "gc", "--max-size", "1", "-c", st.larder.conf],
                       capture_output=True, env=stackmod.clean_env(), timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    out = str(tmp_path / "back")
    r = ociup.pull("%s/open/gc/app:1" % host(st), out)
    assert r.ok, r
    assert not compare_layouts(out, img.layout)


def test_sessions_expire(stack):
    """A session untouched for upload_ttl (2 s on "other") is unknown, and
    its temp file goes when the next session opens."""
    st = stack
    api = Api(st, token(st, "--registry", "other", "--actions", "push"))
    loc = api.start("other/e")
    assert api.patch(loc, b"q" * 500).status == 202
    assert len(temps(st)) == 1
    time.sleep(3.1)
    r = api.patch(loc, b"q" * 10)
    assert r.status == 404 and errcode(r) == "BLOB_UPLOAD_UNKNOWN"
    loc2 = api.start("other/e")
    assert len(temps(st)) == 1 and temps(st)[0].endswith(loc2.rsplit("/", 1)[1])
    assert api.req("GET", loc2).status == 204
    # larder gc collects them too
    time.sleep(3.1)
    p = subprocess.run([stackmod.larder_bin(), "gc", "-c", st.larder.conf],
                       capture_output=True, env=stackmod.clean_env(), timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert "removed expired upload sessions" in p.stdout.decode()
    assert not temps(st)
    assert api.req("GET", loc2).status == 404


def test_expiry_reaches_past_sessions_it_keeps(stack):
    """Sessions old by the shortest upload_ttl (2 s, "other") but young by
    their own registry's (an hour, "open") fill a whole batch of the
    expiry's query: the expired one behind them still goes."""
    st = stack
    keep = Api(st, token(st, "--registry", "open", "--actions", "push"))
    gone = Api(st, token(st, "--registry", "other", "--actions", "push"))
    kept = [keep.start("open/k%d" % i) for i in range(16)]
    time.sleep(0.05)
    loc = gone.start("other/x")
    time.sleep(3.1)
    gone.start("other/y")  # a session opening runs the expiry
    sid = loc.rsplit("/", 1)[1]
    assert not [t for t in temps(st) if t.endswith(sid)], temps(st)
    assert len(temps(st)) == 17  # the 16 kept and other/y's
    for k in kept:
        assert keep.req("GET", k).status == 204
        keep.req("DELETE", k)


def test_expiry_spares_a_session_being_written(stack):
    """A PATCH that outlasts upload_ttl while its body streams in keeps its
    session: the expiry another request runs meanwhile skips a session
    whose temp file a writer holds."""
    st = stack
    api = Api(st, token(st, "--registry", "other", "--actions", "push"))
    loc = api.start("other/slow")
    u = urllib.parse.urlsplit(st.nginx.base)
    sock = socket.create_connection((u.hostname, u.port), timeout=30)
    try:
        head = ("PATCH %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n"
                "Content-Type: application/octet-stream\r\nConnection: close\r\n"
                % (loc, u.netloc))
        for k, v in api.auth.items():
            head += "%s: %s\r\n" % (k, v)
        sock.sendall(head.encode() + b"\r\n" + b"a" * 10)
        time.sleep(3.1)  # past "other"'s upload_ttl, mid-body
        api.start("other/trigger")  # runs the expiry
        sock.sendall(b"a" * 90)
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 202"), answer[:300]
    r = api.req("GET", loc)
    assert r.status == 204 and r.header("Range") == "0-99", (r, r.header("Range"))


def test_token_cli(stack):
    """larder token add --registry: the registry must exist, its actions
    are pull, push, delete, --repositories (not --projects) takes globs of
    repository names; list shows registry:NAME."""
    st = stack

    def run(*args):
        p = subprocess.run([stackmod.larder_bin(), "token"] + list(args) + ["-c", st.larder.conf],
                           capture_output=True, env=stackmod.clean_env(), timeout=30)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    rc, out, err = run("add", "--registry", "nope", "--actions", "pull")
    assert rc == 2 and "no such registry" in err
    rc, out, err = run("add", "--registry", "open", "--actions", "upload")
    assert rc == 2 and "pull, push and delete" in err
    rc, out, err = run("add", "--index", "pypi", "--actions", "push")
    assert rc == 2
    rc, out, err = run("add", "--registry", "open", "--actions", "pull", "--projects", "x")
    assert rc == 2 and "--repositories" in err
    rc, out, err = run("add", "--registry", "open", "--actions", "pull",
                       "--repositories", "Team/*")
    assert rc == 2 and "repository glob" in err
    rc, out, err = run("add", "--registry", "open", "--actions", "pull,push",
                       "--repositories", "team/*", "ci/app")
    assert rc == 0, err
    rc, out, err = run("list")
    assert rc == 0
    assert "registry:open\tpush,pull\tteam/* ci/app\t" in out or \
        "registry:open\tpull,push\tteam/* ci/app\t" in out, out


def test_access(stack):
    """No credentials: 401 with the Bearer challenge; a wrong secret 401; a
    token of another registry, without push, or for other repositories:
    403 DENIED; a session of another repository is unknown; a blob over
    max_upload_size is 413. None of them changes anything on disk."""
    st = stack
    push = Api(st, token(st, "--registry", "priv", "--actions", "pull,push",
                         "--repositories", "team/*"))
    loc = push.start("priv/team/x")
    assert push.patch(loc, b"z" * 100).status == 202
    before = snapshot(st)
    for api, path, status in (
            (Api(st, None), "/v2/priv/team/x/blobs/uploads/", 401),
            (Api(st, "lt_0123456789abcdef_" + "0" * 64), "/v2/priv/team/x/blobs/uploads/", 401),
            (Api(st, token(st, "--registry", "other", "--actions", "pull,push")),
             "/v2/priv/team/x/blobs/uploads/", 403),
            (Api(st, token(st, "--registry", "priv", "--actions", "pull")),
             "/v2/priv/team/x/blobs/uploads/", 403),
            (push, "/v2/priv/elsewhere/blobs/uploads/", 403)):
        r = api.req("POST", path)
        assert r.status == status, (path, r, r.body)
        if status == 401:
            assert errcode(r) == "UNAUTHORIZED"
            assert r.header("WWW-Authenticate") == challenge(st, "priv/team/x",
                                                             "pull,push")
        else:
            assert errcode(r) == "DENIED"
    # pulls of a read = token registry need a token with pull
    assert Api(st, None).req("GET", "/v2/priv/team/x/tags/list").status == 401
    r = Api(st, token(st, "--registry", "priv", "--actions", "push")).req(
        "GET", "/v2/priv/team/x/tags/list")
    assert r.status == 403 and errcode(r) == "DENIED"
    # the session, through another repository's URL
    r = push.patch(loc.replace("/team/x/", "/team/y/"), b"w" * 10)
    assert r.status == 404 and errcode(r) == "BLOB_UPLOAD_UNKNOWN"
    r = push.req("PUT", loc.replace("/team/x/", "/team/y/") + "?digest=sha256:" + "2" * 64)
    assert r.status == 404
    # over max_upload_size (8M on priv): monolithic, then a chunk
    big = b"\0" * (8 * MB + 1)
    r = push.req("POST", "/v2/priv/team/x/blobs/uploads/?digest=sha256:" +
                 hashlib.sha256(big).hexdigest(), body=big)
    assert r.status == 413 and errcode(r) == "SIZE_INVALID"
    r = push.patch(loc, big)
    assert r.status == 413 and errcode(r) == "SIZE_INVALID"
    # pushes to a cache registry: 405
    r = push.req("POST", "/v2/hub/library/x/blobs/uploads/")
    assert r.status in (404, 405)
    assert snapshot(st) == before
    r = push.req("GET", loc)
    assert r.status == 204 and r.header("Range") == "0-99"


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def get_token(st, headers=None, query="service=larder&scope=repository:priv/team/t:pull"):
    """GET /v2/token through nginx: (response, its JSON or None)."""
    r = http(st.nginx.base + "/v2/token?" + query, headers=headers or {})
    try:
        return r, json.loads(r.body)
    except ValueError:
        return r, None


def anon_token(key, expires):
    """An anonymous token as larder makes one (common/oci/auth.h)."""
    import hmac
    exp = "%016x" % expires
    mac = hmac.new(key, b"larder-anonymous:" + exp.encode(), hashlib.sha256).hexdigest()
    return "la_%s_%s" % (exp, mac)


def test_token_endpoint(stack):
    """The registry token protocol, as dockerd asks it: /v2/ and a
    protected path answer 401 with a Bearer challenge naming /v2/token;
    anonymous, the endpoint gives a short-lived anonymous token that counts
    as no credentials (/v2/ and pulls of anonymous registries, 401 for the
    rest); with Basic credentials it gives the larder token back, whose
    rights are its own. A forged, tampered or expired anonymous token, a
    bad secret: 401 with a one-line reason. Nothing changes on disk but
    the key the first anonymous token makes (DATA/bearer.key)."""
    st = stack
    push_tok = token(st, "--registry", "priv", "--actions", "pull,push",
                     "--repositories", "team/*")
    open_tok = token(st, "--registry", "open", "--actions", "pull,push")
    r = http(st.nginx.base + "/v2/")
    assert r.status == 401 and errcode(r) == "UNAUTHORIZED", r
    assert r.header("WWW-Authenticate") == challenge(st)
    r = http(st.nginx.base + "/v2/priv/team/t/tags/list")
    assert r.status == 401
    assert r.header("WWW-Authenticate") == challenge(st, "priv/team/t", "pull")
    r = http(st.nginx.base + "/v2/open/team/t/blobs/uploads/", method="POST")
    assert r.status == 401
    assert r.header("WWW-Authenticate") == challenge(st, "open/team/t", "pull,push")

    # anonymous: a token that is no credentials
    r, j = get_token(st)
    assert r.status == 200, (r, r.body)
    assert r.header("Cache-Control") == "no-store"
    anon = j["token"]
    assert re.match(r"^la_[0-9a-f]{16}_[0-9a-f]{64}$", anon), anon
    assert j["access_token"] == anon and j["expires_in"] == 300, j
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", j["issued_at"]), j
    key_path = os.path.join(st.data_dir, "bearer.key")
    assert oct(os.stat(key_path).st_mode & 0o777) == "0o600"
    with open(key_path, "rb") as f:
        key = f.read()
    assert len(key) == 32
    assert 290 <= int(anon[3:19], 16) - time.time() <= 301
    before = snapshot(st)
    assert http(st.nginx.base + "/v2/", headers=bearer(anon)).status == 200
    # open pulls anonymously: a 404 for a name it lacks, not a 401
    r = http(st.nginx.base + "/v2/open/team/none/manifests/1", headers=bearer(anon))
    assert r.status == 404 and errcode(r) == "MANIFEST_UNKNOWN", (r, r.body)
    for method, path, scope in (
            ("GET", "/v2/priv/team/t/tags/list", ("priv/team/t", "pull")),
            ("POST", "/v2/open/team/t/blobs/uploads/", ("open/team/t", "pull,push"))):
        r = http(st.nginx.base + path, method=method, headers=bearer(anon))
        assert r.status == 401 and b"credentials required" in r.body, (path, r.body)
        assert r.header("WWW-Authenticate") == challenge(st, *scope)
    # a second anonymous token, from another worker maybe: the same key
    r, j = get_token(st, query="")
    assert r.status == 200 and j["token"].startswith("la_")
    assert http(st.nginx.base + "/v2/", headers=bearer(j["token"])).status == 200

    # forged, tampered, expired anonymous tokens; a bad secret
    for tok, why in ((anon_token(b"k" * 32, int(time.time()) + 100), b"bad credentials"),
                     (anon[:18] + ("0" if anon[18] != "0" else "1") + anon[19:],
                      b"bad credentials"),
                     (anon[:-1] + ("0" if anon[-1] != "0" else "1"), b"bad credentials"),
                     (anon + "0", b"bad credentials"),
                     (anon_token(key, int(time.time()) - 1), b"token expired")):
        for path in ("/v2/", "/v2/open/team/none/manifests/1", "/v2/token"):
            r = http(st.nginx.base + path, headers=bearer(tok))
            if path == "/v2/open/team/none/manifests/1":
                # anonymous pulls look at no credentials at all
                assert r.status == 404, (tok, r)
                continue
            assert r.status == 401 and why in r.body, (tok, path, r.body)
            assert b"\n" not in r.body.rstrip(b"\n"), r.body
    assert snapshot(st) == before
    # a token the key signs, expiring later, is good: the test's HMAC is larder's
    assert http(st.nginx.base + "/v2/",
                headers=bearer(anon_token(key, int(time.time()) + 60))).status == 200

    # Basic: the token back, its rights its own
    for user in ("__token__", "anyone"):
        r, j = get_token(st, basic(push_tok, user),
                         query="account=%s&client_id=docker&offline_token=true"
                               "&service=larder" % user)
        assert r.status == 200, (r, r.body)
        assert j["token"] == push_tok and j["access_token"] == push_tok
        assert j["expires_in"] == 3600 and "refresh_token" not in j, j
    assert http(st.nginx.base + "/v2/", headers=bearer(push_tok)).status == 200
    api = Api(st, None)
    api.auth = bearer(push_tok)
    assert api.req("POST", "/v2/priv/team/t/blobs/uploads/").status == 202
    # a token asked with another registry's scope is no wider for it
    r, j = get_token(st, basic(push_tok), query="scope=repository:open/x:pull,push")
    assert r.status == 200
    r = http(st.nginx.base + "/v2/open/x/blobs/uploads/", method="POST",
             headers=bearer(j["token"]))
    assert r.status == 403 and errcode(r) == "DENIED"
    r = http(st.nginx.base + "/v2/priv/elsewhere/blobs/uploads/", method="POST",
             headers=bearer(j["token"]))
    assert r.status == 403 and errcode(r) == "DENIED"
    r, j = get_token(st, basic(open_tok))
    assert r.status == 200 and j["token"] == open_tok
    # a wrong secret, an unknown token, a password that is no token: 401
    # with the Basic challenge the endpoint takes
    bad = push_tok[:-4] + ("0000" if not push_tok.endswith("0000") else "1111")
    for h in (basic(bad), basic("lt_0123456789abcdef_" + "0" * 64), basic("hunter2"),
              {"Authorization": "Basic !!"}):
        r, j = get_token(st, h)
        assert r.status == 401 and errcode(r) == "UNAUTHORIZED", (h, r.body)
        assert r.header("WWW-Authenticate") == 'Basic realm="larder"'
        assert push_tok.encode() not in r.body
    # containerd tries an OAuth POST first: 405, and it asks with GET
    r = http(st.nginx.base + "/v2/token", method="POST", body=b"grant_type=password",
             headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status == 405 and "GET" in r.header("Allow"), r


def test_concurrent_pushes(stack, tmp_path):
    """Ten skopeo pushes at once of images on one base layer store each
    blob once: the store holds one file per distinct digest, and no temp
    file is left."""
    st = stack
    tok = token(st, "--registry", "open", "--actions", "pull,push")
    base = build_image(str(tmp_path / "base"), [512 * KB], seed="cbase")
    imgs = [build_image(str(tmp_path / ("i%d" % i)), [20 * KB + i], base=base,
                        seed="c%d" % i) for i in range(10)]
    errors = []

    def one(i):
        try:
            ociup.push(imgs[i].layout, "latest", "%s/open/c/app%d:1" % (host(st), i),
                       creds="u:" + tok)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    digests = set()
    for img in imgs:
        digests.add(img.digest)
        digests.update(img.blobs)
    files = []
    for root, _, names in os.walk(os.path.join(st.data_dir, "blobs")):
        files += [n for n in names if not n.endswith(".gz")]
    assert sorted(files) == sorted(d.split(":", 1)[1] for d in digests)
    assert not temps(st)
    for i in (0, 9):
        out = str(tmp_path / ("back%d" % i))
        r = ociup.pull("%s/open/c/app%d:1" % (host(st), i), out)
        assert r.ok, r
        assert not compare_layouts(out, imgs[i].layout)


PODMAN = shutil.which("podman")


@pytest.mark.skipif(not PODMAN, reason="podman is not installed (apt-get install podman)")
def test_podman_push_pull(stack, tmp_path):
    """podman (vfs storage, as root) logs in, pushes an image it pulled
    from an OCI layout, and pulls it back from larder with the same
    digest."""
    st = stack
    tok = token(st, "--registry", "open", "--actions", "pull,push")
    img = build_image(str(tmp_path / "img"), [64 * KB], seed="podman", tag="1")
    root = str(tmp_path / "podman")
    env = stackmod.clean_env({"HOME": root, "XDG_RUNTIME_DIR": root,
                              "REGISTRY_AUTH_FILE": os.path.join(root, "auth.json")})
    # podman refuses a runroot path longer than 50 characters
    runroot = tempfile.mkdtemp(prefix="podman-", dir="/tmp")
    base = [PODMAN, "--storage-driver", "vfs", "--root", os.path.join(root, "storage"),
            "--runroot", runroot]
    ref = "%s/open/podman/app:1" % host(st)

    def run(*args):
        p = subprocess.run(base + list(args), capture_output=True, env=env, timeout=300)
        assert p.returncode == 0, (args, p.stderr.decode()[-2000:])
        return p.stdout.decode()

    try:
        run("login", "--tls-verify=false", "-u", "__token__", "-p", tok, host(st))
        iid = run("pull", "-q", "oci:%s:1" % img.layout).split()[-1]
        run("tag", iid, ref)
        run("push", "--tls-verify=false", ref)
        run("rmi", "-a", "-f")
        again = run("pull", "-q", "--tls-verify=false", ref).split()[-1]
        # the same image ID: the config's digest, so the same bytes
        assert again == iid
        out = run("images", "--format", "{{.Repository}}:{{.Tag}}")
        assert ref in out
    finally:
        shutil.rmtree(runroot, ignore_errors=True)


def test_lighttpd_round_trip(tmp_path):
    """A skopeo push and pull back through the shipped lighttpd.conf
    (FastCGI, streamed request bodies)."""
    import frontends
    why = frontends.missing_reason("lighttpd-fcgi") or ociup.missing_reason()
    if why:
        pytest.skip(why)
    workdir = frontends.new_workdir("larder-push-fe-")
    fe = frontends.make_frontend("lighttpd-fcgi", os.path.join(workdir, "fe"),
                                 stackmod.free_port(), larder_extra_text=EXTRA)
    try:
        fe.start()
        assert http(fe.base + "/v2/").status == 401
        p = subprocess.run([stackmod.larder_bin(), "token", "add", "--registry", "open",
                            "--actions", "pull,push", "-c", fe.larder_conf],
                           capture_output=True, env=stackmod.clean_env(), timeout=30)
        assert p.returncode == 0, p.stderr.decode()
        tok = p.stdout.decode().strip()
        frontends._chown_tree(fe.data_dir, fe.ids)
        img = build_image(str(tmp_path / "img"), [4 * KB, 1 * MB], seed="lighttpd", tag="1")
        ref = "127.0.0.1:%d/open/fe/app:1" % fe.port
        ociup.push(img.layout, "1", ref, creds="__token__:" + tok)
        out = str(tmp_path / "back")
        r = ociup.pull(ref, out)
        assert r.ok, r
        assert not compare_layouts(out, img.layout)
    finally:
        fe.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_virtual_registry(tmp_path, wheel_dir):
    """[registry "mix"] type = virtual over a hosted and a cache registry:
    a name only upstream pulls through; a pushed name (pushed to mix, so
    to its hosted layer) shadows the upstream's; a push needs a token of
    mix."""
    why = stackmod.missing_reason() or ociup.missing_reason()
    if why:
        pytest.skip(why)
    reg = ociup.Registry(str(tmp_path / "registry")).start()
    st = None
    try:
        up_img = build_image(str(tmp_path / "up"), [8 * KB], seed="upstream", tag="3")
        ociup.push(up_img.layout, "3", "%s/library/alpine:3" % reg.host)
        ociup.push(up_img.layout, "3", "%s/library/busybox:1" % reg.host)
        extra = EXTRA + ociup.registry_section("up", "http://%s/" % reg.host, default=False) + """
[registry "mix"]
type = virtual
layers = open up
"""
        st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, larder_extra_text=extra,
                            larder_extra=dict(ociup.OCI_LARDER_KEYS)).start()
        out = str(tmp_path / "p1")
        r = ociup.pull("%s/mix/library/alpine:3" % host(st), out)
        assert r.ok, r
        assert not compare_layouts(out, up_img.layout)
        mine = build_image(str(tmp_path / "mine"), [16 * KB], seed="mine", tag="3")
        tok = token(st, "--registry", "mix", "--actions", "pull,push")
        open_tok = token(st, "--registry", "open", "--actions", "pull,push")
        with pytest.raises(RuntimeError):
            ociup.push(mine.layout, "3", "%s/mix/library/alpine:3" % host(st),
                       creds="u:" + open_tok)
        ociup.push(mine.layout, "3", "%s/mix/library/alpine:3" % host(st), creds="u:" + tok)
        out = str(tmp_path / "p2")
        r = ociup.pull("%s/mix/library/alpine:3" % host(st), out)
        assert r.ok, r
        assert not compare_layouts(out, mine.layout)
        # it went to the hosted layer
        out = str(tmp_path / "p3")
        r = ociup.pull("%s/open/library/alpine:3" % host(st), out)
        assert r.ok, r
        assert not compare_layouts(out, mine.layout)
        # a HEAD of a cached manifest by digest first: nginx must not keep
        # its empty answer for the GET after it
        path = "/v2/up/library/busybox/manifests/" + up_img.digest
        r = st.get(path, method="HEAD", accept=OCI_MANIFEST)
        assert r.status == 200, r
        r = st.get(path, accept=OCI_MANIFEST)
        assert r.status == 200 and r.complete and r.body == up_img.manifest, r
        # a name only upstream still pulls through
        out = str(tmp_path / "p4")
        r = ociup.pull("%s/mix/library/busybox:1" % host(st), out)
        assert r.ok, r
        assert not compare_layouts(out, up_img.layout)
    finally:
        if st is not None:
            st.stop()
        reg.stop()
