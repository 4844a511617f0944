"""Pushing images to a hosted registry ([registry] type = hosted) behind
nginx (docs/oci.md): skopeo pushes and pulls back byte-identical images
and a multi-arch index; the blob upload API driven from Python (chunks
with Content-Range, out of order, streamed, monolithic, mounts, status,
cancel); tokens with the registry actions (401 with a Basic challenge
without credentials, 403 DENIED without the action); ten concurrent
pushes sharing layers store one copy of each; and hostile input, each
refused with the spec's error code and nothing changed on disk."""

import base64
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import threading

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

[registry "other"]
type = hosted
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


def errcode(r):
    try:
        return json.loads(r.body)["errors"][0]["code"]
    except (ValueError, KeyError, IndexError):
        return None


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
    tags listed; without credentials a 401 with the Basic challenge."""
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
    assert r.headers.get("www-authenticate") == 'Basic realm="larder"'
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
