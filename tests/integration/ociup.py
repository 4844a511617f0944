"""The stand-in OCI upstream for larder's registry tests: Debian's
docker-registry (distribution 2.8) on a free port, optionally behind a
docker token server of our own; a relay in front of it that counts what
larder asks upstream and injects faults; OCI images built without docker;
and skopeo to push and pull them. Standard library only (plus the openssl
CLI, skopeo and /usr/bin/docker-registry); builds on stack.py.

    reg = Registry(workdir).start()                 # or auth="token"
    imgs = standard_images(images_dir)             # built once per dir
    pushed = populate(reg, imgs)                    # {repo: Pushed}
    relay = Relay(reg.port).start()
    st = OciStack(workdir2, reg.port).start()       # relay + larder + nginx
    res = pull(st.ref("small", "1.0"), dest_dir)
    assert res.ok and not compare_layouts(dest_dir, direct_dir)

Pieces:

    Registry        docker-registry serve CONFIG, filesystem storage, deletes
                    on; auth="token" puts it behind a TokenServer
    TokenServer     GET /token: JWTs (RS256, x5c) for repository scopes,
                    Basic auth for the users it knows, anonymous pulls if
                    allowed; counts requests per scope
    Relay           HTTP/1.1 relay: counts (method, path), faults per path
                    regex (truncate, corrupt, reset, stall, status, down,
                    delay), all from Python
    RegistryClient  the registry HTTP API (token dance included) for what
                    skopeo is slow or unable at: tags by PUT, blob uploads
    build_image, build_index, standard_images, populate
                    OCI layouts with gzip'd tar layers of random bytes
    skopeo, pull, push, compare_layouts
    OciStack        relay + `larder serve` + nginx, larder's upstream the
                    relay

`python3 ociup.py selftest` runs the direct-to-registry checks (no larder).
"""

import atexit
import base64
import collections
import gzip
import hashlib
import http.client as httpclient
import http.server as httpserver
import io
import json
import os
import random
import re
import select
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import stack as stackmod  # noqa: E402
from stack import _stop_process, _tail, clean_env, free_port, http  # noqa: E402

REGISTRY_BIN = "/usr/bin/docker-registry"
SKOPEO = shutil.which("skopeo") or "/usr/bin/skopeo"
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
# What a client that knows every manifest type sends.
ACCEPT_ALL = ", ".join([OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST])

TOKEN_SERVICE = "larder-test"
TOKEN_ISSUER = "larder-test-issuer"
USERS = {"alice": "secret"}


def missing_reason():
    """Why the registry tests cannot run here, or None."""
    if not os.access(REGISTRY_BIN, os.X_OK):
        return "%s not found (apt-get install docker-registry)" % REGISTRY_BIN
    if not os.access(SKOPEO, os.X_OK):
        return "skopeo not found (apt-get install skopeo)"
    if not os.access(OPENSSL, os.X_OK):
        return "openssl not found (apt-get install openssl)"
    return None


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def digest_of(data):
    return "sha256:" + sha256(data)


def canonical(obj):
    """The bytes a manifest or config is written as."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


# ================================================================ skopeo

Result = collections.namedtuple("Result", "rc out err cmd")


def _result_str(self):
    return "rc=%s: %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        self.rc, " ".join(self.cmd), self.out[-3000:], self.err[-3000:])


Result.ok = property(lambda self: self.rc == 0)
Result.__str__ = _result_str

_flag_cache = {}
_skopeo_home = None
_skopeo_lock = threading.Lock()


def _has_flag(sub, flag):
    key = (sub, flag)
    if key not in _flag_cache:
        try:
            p = subprocess.run([SKOPEO, sub, "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30, env=clean_env())
            _flag_cache[key] = flag in p.stdout.decode(errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            _flag_cache[key] = False
    return _flag_cache[key]


def _skopeo_env():
    """clean_env() with an auth file and a home of skopeo's own (so that
    nobody's saved credentials or registries.conf mirrors get in)."""
    global _skopeo_home
    with _skopeo_lock:
        if _skopeo_home is None:
            _skopeo_home = tempfile.mkdtemp(prefix="larder-skopeo-")
            atexit.register(shutil.rmtree, _skopeo_home, True)
    return clean_env({"REGISTRY_AUTH_FILE": os.path.join(_skopeo_home, "auth.json"),
                      "HOME": _skopeo_home,
                      "XDG_RUNTIME_DIR": _skopeo_home,
                      "XDG_CONFIG_HOME": os.path.join(_skopeo_home, ".config")})


def skopeo(*args, timeout=180):
    """Runs `skopeo SUB ARGS...` with plain http allowed on both ends
    (--src-tls-verify=false --dest-tls-verify=false for copy,
    --tls-verify=false for inspect and list-tags), no retries
    (--retry-times 0 where this skopeo has it), no policy checks, a clean
    environment. Returns Result(rc, out, err, cmd); rc -1 on timeout."""
    sub, rest = args[0], list(args[1:])
    pre = []
    if sub == "copy":
        pre += ["--src-tls-verify=false", "--dest-tls-verify=false"]
    elif sub in ("inspect", "list-tags", "delete"):
        pre += ["--tls-verify=false"]
    if sub in ("copy", "inspect", "list-tags", "delete") and _has_flag(sub, "--retry-times"):
        pre += ["--retry-times", "0"]
    cmd = [SKOPEO, "--insecure-policy", sub] + pre + rest
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=_skopeo_env(), timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return Result(-1, (e.stdout or b"").decode(errors="replace"),
                      "timed out after %s s\n%s" % (timeout, (e.stderr or b"").decode(
                          errors="replace")), cmd)
    return Result(p.returncode, p.stdout.decode(errors="replace"),
                  p.stderr.decode(errors="replace"), cmd)


def pull(ref, dest_dir, all=False, creds=None, extra=(), timeout=180):
    """skopeo copy docker://REF oci:DEST_DIR (--all for every instance of
    an index; --preserve-digests, so a manifest skopeo would have to
    rewrite is an error, not a silent conversion). Returns a Result."""
    args = ["copy", "--preserve-digests"]
    if all:
        args.append("--all")
    if creds:
        args += ["--src-creds", creds]
    args += list(extra) + ["docker://" + ref, "oci:" + dest_dir]
    return skopeo(*args, timeout=timeout)


def push(layout, tag, dest_ref, all=False, fmt=None, creds=None, timeout=180):
    """skopeo copy oci:LAYOUT:TAG docker://DEST_REF; fmt "v2s2" converts
    to a docker schema 2 manifest (else the digests are preserved).
    Returns the Result; raises RuntimeError when the copy fails."""
    args = ["copy"]
    if all:
        args.append("--all")
    if fmt:
        args += ["--format", fmt]
    else:
        args.append("--preserve-digests")
    if creds:
        args += ["--dest-creds", creds]
    args += ["oci:%s:%s" % (layout, tag), "docker://" + dest_ref]
    r = skopeo(*args, timeout=timeout)
    if not r.ok:
        raise RuntimeError("push of %s:%s to %s failed: %s" % (layout, tag, dest_ref, r))
    return r


def inspect_raw(ref, creds=None):
    """skopeo inspect --raw docker://REF: the manifest bytes (Result.out)."""
    args = ["inspect", "--raw"] + (["--creds", creds] if creds else []) + ["docker://" + ref]
    return skopeo(*args)


def list_tags(ref, creds=None):
    """skopeo list-tags docker://REPO: (Result, [tags] or None)."""
    args = ["list-tags"] + (["--creds", creds] if creds else []) + ["docker://" + ref]
    r = skopeo(*args)
    tags = None
    if r.ok:
        try:
            tags = json.loads(r.out)["Tags"]
        except (ValueError, KeyError):
            pass
    return r, tags


# ================================================================ layouts

def layout_blobs(layout):
    """{digest: sha256 of the content} of every file in LAYOUT/blobs."""
    out = {}
    top = os.path.join(layout, "blobs")
    for root, _, files in os.walk(top):
        for n in files:
            p = os.path.join(root, n)
            alg = os.path.basename(root)
            with open(p, "rb") as f:
                out["%s:%s" % (alg, n)] = sha256(f.read())
    return out


def layout_manifests(layout):
    """The manifest digests index.json lists."""
    with open(os.path.join(layout, "index.json")) as f:
        idx = json.load(f)
    return sorted(m["digest"] for m in idx.get("manifests", []))


def compare_layouts(a, b):
    """Byte-for-byte comparison of two OCI layouts: the same blobs (names
    and contents, each matching its digest) and the same manifest digests
    in index.json. Returns a list of differences; [] when equal."""
    diffs = []
    ba, bb = layout_blobs(a), layout_blobs(b)
    for d in sorted(set(ba) | set(bb)):
        if d not in ba:
            diffs.append("%s only in %s" % (d, b))
        elif d not in bb:
            diffs.append("%s only in %s" % (d, a))
        elif ba[d] != bb[d]:
            diffs.append("%s differs" % d)
    for layout, blobs in ((a, ba), (b, bb)):
        for d, actual in blobs.items():
            if d.startswith("sha256:") and d[7:] != actual:
                diffs.append("%s in %s hashes to %s" % (d, layout, actual))
    ma, mb = layout_manifests(a), layout_manifests(b)
    if ma != mb:
        diffs.append("index.json manifests: %s vs %s" % (ma, mb))
    return diffs


# ================================================================ images

Layer = collections.namedtuple("Layer", "digest size diff_id data")

_layer_cache = {}


def make_layer(size, seed):
    """A gzip'd tar holding one file of size random bytes (seeded, so the
    same size and seed give the same bytes; random, so gzip keeps the
    size). Cached per process."""
    key = (size, seed)
    if key not in _layer_cache:
        data = random.Random("%s/%d" % (seed, size)).randbytes(size)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
            ti = tarfile.TarInfo("data/%s.bin" % re.sub(r"[^a-zA-Z0-9_.-]", "_", str(seed)))
            ti.size = size
            ti.mtime = 0
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
        raw = buf.getvalue()
        gz = gzip.compress(raw, compresslevel=1, mtime=0)
        _layer_cache[key] = Layer(digest_of(gz), len(gz), digest_of(raw), gz)
    return _layer_cache[key]


class Image:
    """One image manifest in an OCI layout.

    layout, tag, manifest (bytes), digest, media_type, config (bytes),
    config_digest, layers [Layer], platform {"architecture", "os",
    ["variant"]}, blobs {digest: size} (config and layers)."""

    media_type = OCI_MANIFEST

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def size(self):
        return len(self.manifest)

    def descriptor(self):
        d = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if getattr(self, "platform", None):
            d["platform"] = self.platform
        return d

    def __repr__(self):
        return "<Image %s:%s %s, %d layers>" % (self.layout, self.tag, self.digest[:19],
                                                 len(self.layers))


class Index:
    """An image index in an OCI layout: layout, tag, manifest, digest,
    media_type, children [Image], blobs {digest: size} (the children's
    manifests, configs and layers)."""

    media_type = OCI_INDEX

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def size(self):
        return len(self.manifest)

    def __repr__(self):
        return "<Index %s:%s %s, %d children>" % (self.layout, self.tag, self.digest[:19],
                                                   len(self.children))


def _write_blob(layout, data):
    d = digest_of(data)
    p = os.path.join(layout, "blobs", "sha256", d[7:])
    if not os.path.exists(p):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p + ".tmp", "wb") as f:
            f.write(data)
        os.replace(p + ".tmp", p)
    return d


def _write_layout_index(layout, descriptors):
    os.makedirs(layout, exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": descriptors}, f)


def build_image(layout_dir, layers, base=None, arch="amd64", variant=None, seed="img",
                tag="latest", write_index=True):
    """Writes an OCI image layout at layout_dir (oci-layout, index.json,
    blobs/sha256/...) with one image manifest: base's layers (an Image,
    the same bytes, so images made on it share them) then one gzip'd tar
    layer per size in layers, a config (architecture, os, rootfs.diff_ids)
    and an application/vnd.oci.image.manifest.v1+json manifest, named tag
    in index.json. Returns the Image."""
    ls = list(base.layers) if base is not None else []
    for i, size in enumerate(layers):
        ls.append(make_layer(size, "%s-%d" % (seed, i)))
    os.makedirs(layout_dir, exist_ok=True)
    for l in ls:
        _write_blob(layout_dir, l.data)
    platform = {"architecture": arch, "os": "linux"}
    if variant:
        platform["variant"] = variant
    config = dict(platform)
    config.update({
        "created": "1970-01-01T00:00:00Z",
        "config": {"Env": ["PATH=/usr/bin:/bin"], "Cmd": ["/bin/true"],
                   "Labels": {"larder.test.seed": str(seed)}},
        "rootfs": {"type": "layers", "diff_ids": [l.diff_id for l in ls]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "ociup layer %d" % i}
                    for i in range(len(ls))],
    })
    config_bytes = canonical(config)
    config_digest = _write_blob(layout_dir, config_bytes)
    manifest = canonical({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest,
                   "size": len(config_bytes)},
        "layers": [{"mediaType": OCI_LAYER, "digest": l.digest, "size": l.size}
                   for l in ls],
        "annotations": {"org.opencontainers.image.title": str(seed)},
    })
    digest = _write_blob(layout_dir, manifest)
    blobs = {config_digest: len(config_bytes)}
    blobs.update({l.digest: l.size for l in ls})
    img = Image(layout=layout_dir, tag=tag, manifest=manifest, digest=digest,
                config=config_bytes, config_digest=config_digest, layers=ls,
                platform=platform, blobs=blobs, seed=seed)
    if write_index:
        d = img.descriptor()
        d.pop("platform", None)
        d["annotations"] = {"org.opencontainers.image.ref.name": tag}
        _write_layout_index(layout_dir, [d])
    return img


def build_index(layout_dir, tag="latest", seed="multi",
                children=(("amd64", None, (64 * 1024, 8 * 1024)),
                          ("arm64", "v8", (64 * 1024, 8 * 1024))),
                base=None):
    """Writes an OCI layout with a multi-arch image index (linux/amd64 and
    linux/arm64 v8 children by default: (arch, variant, layer sizes)),
    named tag. Returns the Index."""
    imgs = []
    for arch, variant, sizes in children:
        imgs.append(build_image(layout_dir, list(sizes), base=base, arch=arch,
                                variant=variant, seed="%s-%s%s" % (seed, arch, variant or ""),
                                write_index=False))
    manifest = canonical({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [i.descriptor() for i in imgs],
    })
    digest = _write_blob(layout_dir, manifest)
    blobs = {}
    for i in imgs:
        blobs[i.digest] = i.size
        blobs.update(i.blobs)
    idx = Index(layout=layout_dir, tag=tag, manifest=manifest, digest=digest,
                children=imgs, blobs=blobs, seed=seed)
    _write_layout_index(layout_dir, [{
        "mediaType": OCI_INDEX, "digest": digest, "size": len(manifest),
        "annotations": {"org.opencontainers.image.ref.name": tag}}])
    return idx


KB = 1024
MB = 1024 * 1024

# The images the tests pull: name -> how it is built. The repositories
# they are pushed to are in REPOS.
FAULT_IMAGES = ("ftruncate", "fcorrupt", "freset", "fstall", "fstall2")


def standard_images(workdir, big_mb=30):
    """Builds, once per workdir and process (the result is cached), the
    images the tests use:

        small   3 layers: 4 KB, 300 KB, 2 MB
        base    one 1 MB layer that app1, app2 and big start with
        app1    base + 100 KB      app2    base + 150 KB
        big     base + one big_mb MB layer
        multi   an index: linux/amd64 and linux/arm64 v8 children
        v2s2    200 KB + 20 KB, pushed as docker schema 2
        tiny    one 1 KB layer (the 120 tags of "many")
        fresh1, fresh2   two tiny images for retagging
        ftruncate, fcorrupt, freset, fstall, fstall2
                one 512 KB layer each: a cold blob per fault

    Returns {name: Image or Index}."""
    key = (os.path.abspath(workdir), big_mb)
    if key in _images_cache:
        return _images_cache[key]
    os.makedirs(workdir, exist_ok=True)
    j = lambda n: os.path.join(workdir, n)  # noqa: E731
    imgs = {}
    imgs["small"] = build_image(j("small"), [4 * KB, 300 * KB, 2 * MB], seed="small", tag="1.0")
    base = build_image(j("base"), [1 * MB], seed="base", tag="1.0")
    imgs["base"] = base
    imgs["app1"] = build_image(j("app1"), [100 * KB], base=base, seed="app1", tag="1.0")
    imgs["app2"] = build_image(j("app2"), [150 * KB], base=base, seed="app2", tag="1.0")
    imgs["big"] = build_image(j("big"), [big_mb * MB], base=base, seed="big", tag="1.0")
    imgs["multi"] = build_index(j("multi"), tag="1.0", seed="multi", children=(
        ("amd64", None, (200 * KB, 10 * KB)), ("arm64", "v8", (210 * KB, 11 * KB))))
    imgs["v2s2"] = build_image(j("v2s2"), [200 * KB, 20 * KB], seed="v2s2", tag="1.0")
    imgs["tiny"] = build_image(j("tiny"), [1 * KB], seed="tiny", tag="1.0")
    imgs["fresh1"] = build_image(j("fresh1"), [3 * KB], seed="fresh1", tag="1.0")
    imgs["fresh2"] = build_image(j("fresh2"), [3 * KB], seed="fresh2", tag="1.0")
    for n in FAULT_IMAGES:
        imgs[n] = build_image(j(n), [512 * KB], seed=n, tag="1.0")
    _images_cache[key] = imgs
    return imgs


_images_cache = {}

MANY_TAGS = ["t%03d" % i for i in range(120)]


class Pushed:
    """What a repository holds after populate(): repo, tag, digest,
    media_type, manifest (the bytes the registry serves), blobs {digest:
    size} (for an index: the children's manifests and blobs too), image
    (the Image or Index it came from), children [Pushed] for an index."""

    def __init__(self, **kw):
        self.children = []
        self.__dict__.update(kw)

    def __repr__(self):
        return "<Pushed %s:%s %s %s>" % (self.repo, self.tag, self.media_type,
                                         self.digest[:19])


# repo -> (image, tag, push options)
REPOS = {
    "small": ("small", "1.0", {}),
    "app1": ("app1", "1.0", {}),
    "app2": ("app2", "1.0", {}),
    "big": ("big", "1.0", {}),
    "multi": ("multi", "1.0", {"all": True}),
    "v2s2": ("v2s2", "1.0", {"fmt": "v2s2"}),
    "many": ("tiny", MANY_TAGS[0], {}),
}
REPOS.update({n: (n, "1.0", {}) for n in FAULT_IMAGES})


def populate(registry, imgs, repos=None, creds=None):
    """Pushes the images of standard_images() to registry (with skopeo;
    the "many" repository gets its 120 tags by PUTs of the manifest), and
    reads back what the registry serves. repos picks some of REPOS.
    Returns {repo: Pushed}."""
    creds = creds or registry.creds
    client = registry.client()
    out = {}
    for repo in (repos or REPOS):
        name, tag, opts = REPOS[repo]
        img = imgs[name]
        push(img.layout, img.tag, "%s/%s:%s" % (registry.host, repo, tag), creds=creds, **opts)
        out[repo] = pushed_info(client, repo, tag, img)
        if repo == "many":
            for t in MANY_TAGS[1:]:
                client.put_manifest(repo, t, out[repo].manifest, out[repo].media_type)
    return out


def pushed_info(client, repo, tag, img):
    """A Pushed for repo:tag as the registry serves it."""
    r = client.request("GET", "/v2/%s/manifests/%s" % (repo, tag),
                       headers={"Accept": ACCEPT_ALL})
    if r.status != 200:
        raise RuntimeError("registry GET %s:%s: %r %r" % (repo, tag, r, r.body[:300]))
    ctype = r.header("Content-Type").split(";")[0].strip()
    p = Pushed(repo=repo, tag=tag, digest=r.header("Docker-Content-Digest"),
               media_type=ctype, manifest=r.body, image=img)
    assert p.digest == digest_of(r.body), (p.digest, digest_of(r.body))
    doc = json.loads(r.body)
    blobs = {}
    if ctype in (OCI_INDEX, DOCKER_LIST):
        for m in doc["manifests"]:
            child = pushed_info(client, repo, m["digest"], None)
            child.platform = m.get("platform")
            p.children.append(child)
            blobs[m["digest"]] = m["size"]
            blobs.update(child.blobs)
    else:
        blobs[doc["config"]["digest"]] = doc["config"]["size"]
        for l in doc["layers"]:
            blobs[l["digest"]] = l["size"]
    p.blobs = blobs
    return p


# ================================================================ token server

def make_token_key(workdir, kind="rsa"):
    """A key and a self-signed certificate for the token server (openssl
    CLI): (key_path, cert_path). kind "rsa" (RS256) or "ec" (ES256)."""
    os.makedirs(workdir, exist_ok=True)
    key = os.path.join(workdir, "token.key")
    cert = os.path.join(workdir, "token.crt")
    newkey = "rsa:2048" if kind == "rsa" else "ec"
    cmd = [OPENSSL, "req", "-x509", "-newkey", newkey, "-nodes", "-keyout", key,
           "-out", cert, "-days", "7", "-subj", "/CN=larder-test-token"]
    if kind == "ec":
        cmd[5:5] = ["-pkeyopt", "ec_paramgen_curve:prime256v1"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                       env=clean_env())
    if p.returncode != 0:
        raise RuntimeError("openssl req failed: %s" % p.stdout.decode(errors="replace"))
    return key, cert


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _der_ecdsa_to_raw(der, n=32):
    """An ECDSA signature as openssl writes it (DER SEQUENCE of two
    INTEGERs) in JWS form: r and s, n bytes each."""
    def read_int(b, i):
        assert b[i] == 0x02
        ln = b[i + 1]
        v = int.from_bytes(b[i + 2:i + 2 + ln], "big")
        return v, i + 2 + ln
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    r, i = read_int(der, i)
    s, _ = read_int(der, i)
    return r.to_bytes(n, "big") + s.to_bytes(n, "big")


class TokenServer:
    """The docker token protocol (https://distribution.github.io/distribution/spec/auth/token/):
    GET /token?service=S&scope=repository:NAME:pull[,push]&account=U, with
    Basic auth for users (a dict user -> password) or without for
    anonymous pulls (when allow_anonymous). Answers {"token", "access_token",
    "expires_in", "issued_at"}; the token a JWT signed RS256 (ES256 for an
    EC key) with the x5c header distribution 2.8 verifies against its
    rootcertbundle. Anonymous callers get pull at most; users what they
    ask of pull, push, delete. A wrong password, or no credentials when
    anonymous is off, is a 401.

    counts() is {scope: requests}; requests() [{"account", "user",
    "scopes", "status", "granted"}]; reset() clears both. allow_anonymous
    and users may be changed while it runs."""

    def __init__(self, workdir, key, cert, users=None, allow_anonymous=True,
                 service=TOKEN_SERVICE, issuer=TOKEN_ISSUER, port=None, expires_in=300):
        self.dir = workdir
        self.key = key
        self.cert = cert
        self.users = dict(USERS if users is None else users)
        self.allow_anonymous = allow_anonymous
        self.service = service
        self.issuer = issuer
        self.port = port or 0
        self.expires_in = expires_in
        self.httpd = None
        self.thread = None
        self.lock = threading.Lock()
        self._counts = collections.Counter()
        self._requests = []
        with open(cert) as f:
            pem = f.read()
        self.cert_der = ssl.PEM_cert_to_DER_cert(pem)
        with open(key) as f:
            self.alg = "ES256" if "EC PRIVATE KEY" in f.read() or self._is_ec() else "RS256"

    def _is_ec(self):
        p = subprocess.run([OPENSSL, "pkey", "-in", self.key, "-noout", "-text"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
        return b"ASN1 OID" in p.stdout or b"prime256v1" in p.stdout

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def realm(self):
        return self.base + "/token"

    def start(self):
        ts = self

        class Handler(httpserver.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                status, body, hdrs = ts._answer(self.path, self.headers.get("Authorization"))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

        self.httpd = httpserver.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.1})
        self.thread.start()
        return self

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def counts(self):
        with self.lock:
            return dict(self._counts)

    def requests(self):
        with self.lock:
            return list(self._requests)

    def reset(self):
        with self.lock:
            self._counts.clear()
            self._requests.clear()

    def _answer(self, target, authorization):
        u = urlsplit(target)
        q = parse_qs(u.query)
        scopes = []
        for s in q.get("scope", []):
            scopes += s.split(" ")
        account = (q.get("account") or [""])[0]
        rec = {"account": account, "user": None, "scopes": scopes, "status": None,
               "granted": None}
        with self.lock:
            for s in scopes or [""]:
                self._counts[s] += 1
            self._requests.append(rec)

        def fail(status, code, msg):
            rec["status"] = status
            body = json.dumps({"errors": [{"code": code, "message": msg}]}).encode()
            return status, body, {"WWW-Authenticate": 'Basic realm="larder-test"'}

        if u.path != "/token":
            return fail(404, "NOT_FOUND", "no such path")
        if (q.get("service") or [""])[0] != self.service:
            return fail(400, "DENIED", "unknown service")
        user = None
        if authorization:
            scheme, _, cred = authorization.partition(" ")
            if scheme.lower() != "basic":
                return fail(401, "UNAUTHORIZED", "Basic auth only")
            try:
                name, _, pw = base64.b64decode(cred.strip()).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return fail(401, "UNAUTHORIZED", "bad Basic credentials")
            if self.users.get(name) != pw:
                return fail(401, "UNAUTHORIZED", "wrong user name or password")
            user = name
        elif not self.allow_anonymous:
            return fail(401, "UNAUTHORIZED", "authentication required")
        rec["user"] = user
        allowed = {"pull", "push", "delete", "*"} if user else {"pull"}
        access = []
        for s in scopes:
            parts = s.split(":")
            if len(parts) < 3:
                continue
            typ, name, actions = parts[0], ":".join(parts[1:-1]), parts[-1].split(",")
            got = [a for a in actions if a in allowed]
            access.append({"type": typ, "name": name, "actions": got})
        rec["granted"] = access
        now = int(time.time())
        token = self.make_token(user or "", access, now)
        rec["status"] = 200
        body = json.dumps({"token": token, "access_token": token,
                           "expires_in": self.expires_in,
                           "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(now))}).encode()
        return 200, body, {}

    def make_token(self, sub, access, now=None):
        """A signed JWT for sub with access [{"type", "name", "actions"}]."""
        now = int(now or time.time())
        header = {"typ": "JWT", "alg": self.alg,
                  "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {"iss": self.issuer, "sub": sub, "aud": self.service,
                  "exp": now + self.expires_in, "nbf": now - 10, "iat": now,
                  "jti": os.urandom(12).hex(), "access": access}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        p = subprocess.run([OPENSSL, "dgst", "-sha256", "-sign", self.key],
                           input=signing_input.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        if p.returncode != 0:
            raise RuntimeError("openssl dgst -sign: %s" % p.stderr.decode(errors="replace"))
        sig = p.stdout
        if self.alg == "ES256":
            sig = _der_ecdsa_to_raw(sig)
        return signing_input + "." + b64url(sig)


# ================================================================ registry

REGISTRY_CONF = """\
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:{port}
  secret: larder-test-not-a-secret
{auth}"""

TOKEN_AUTH = """\
auth:
  token:
    realm: {realm}
    service: {service}
    issuer: {issuer}
    rootcertbundle: {cert}
"""


class Registry:
    """Debian's docker-registry (distribution 2.8) serving workdir/storage
    on 127.0.0.1:port, its log in workdir/registry.log. auth="token" makes
    a key, a certificate and a TokenServer (self.token) first and sets the
    registry's auth: token to it (service "larder-test"); self.creds is
    then "alice:secret", the user pushes are made as."""

    def __init__(self, workdir, auth=None, port=None, users=None, allow_anonymous=True,
                 key_kind="rsa"):
        if auth not in (None, "token"):
            raise ValueError("auth is None or 'token'")
        self.dir = os.path.abspath(workdir)
        self.storage = os.path.join(self.dir, "storage")
        self.conf = os.path.join(self.dir, "config.yml")
        self.log = os.path.join(self.dir, "registry.log")
        self.port = port or free_port()
        self.auth = auth
        self.proc = None
        self.token = None
        self.users = dict(USERS if users is None else users)
        self.creds = None
        os.makedirs(self.storage, exist_ok=True)
        if auth == "token":
            key, cert = make_token_key(os.path.join(self.dir, "token"), key_kind)
            self.token = TokenServer(os.path.join(self.dir, "token"), key, cert,
                                     users=self.users, allow_anonymous=allow_anonymous)
            user = sorted(self.users)[0]
            self.creds = "%s:%s" % (user, self.users[user])

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    @property
    def base(self):
        return "http://" + self.host

    def start(self, timeout=15):
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        auth = ""
        if self.token is not None:
            self.token.start()
            auth = TOKEN_AUTH.format(realm=self.token.realm, service=self.token.service,
                                     issuer=self.token.issuer, cert=self.token.cert)
        with open(self.conf, "w") as f:
            f.write(REGISTRY_CONF.format(storage=self.storage, port=self.port, auth=auth))
        try:
            stackmod.spawn_server(self, [REGISTRY_BIN, "serve", self.conf], self.log,
                                  self.log, "docker-registry", timeout)
        except BaseException:
            if self.token is not None:
                self.token.stop()
            raise
        return self

    def stop(self):
        if self.proc is not None:
            _stop_process(self.proc)
        if self.token is not None:
            self.token.stop()

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def client(self, creds="default"):
        """A RegistryClient for this registry (as self.creds by default)."""
        return RegistryClient(self.base, self.creds if creds == "default" else creds)

    def ref(self, repo, tag=None, digest=None):
        return _ref(self.host, repo, tag, digest)


def _ref(host, repo, tag=None, digest=None):
    if digest:
        return "%s/%s@%s" % (host, repo, digest)
    return "%s/%s:%s" % (host, repo, tag or "latest")


def parse_challenge(value):
    """{"scheme", param: value} of a WWW-Authenticate header."""
    scheme, _, rest = (value or "").strip().partition(" ")
    out = {"scheme": scheme.lower()}
    for m in re.finditer(r'(\w+)=(?:"([^"]*)"|([^,\s]*))', rest):
        out[m.group(1).lower()] = m.group(2) if m.group(2) is not None else m.group(3)
    return out


class RegistryClient:
    """The registry HTTP API over stack.http, with the Bearer token dance
    (tokens cached per scope) and Basic credentials creds ("user:pw") for
    the token server."""

    def __init__(self, base, creds=None):
        self.base = base.rstrip("/")
        self.creds = creds
        self.tokens = {}

    def _token(self, ch):
        q = {"service": ch.get("service", "")}
        if ch.get("scope"):
            q["scope"] = ch["scope"]
        hdrs = {}
        if self.creds:
            q["account"] = self.creds.split(":", 1)[0]
            hdrs["Authorization"] = "Basic " + base64.b64encode(self.creds.encode()).decode()
        sep = "&" if "?" in ch["realm"] else "?"
        r = http(ch["realm"] + sep + urlencode(q), headers=hdrs)
        if r.status != 200:
            raise RuntimeError("token server %s: %r %r" % (ch["realm"], r, r.body[:200]))
        doc = r.json()
        return doc.get("token") or doc.get("access_token")

    def request(self, method, path, body=None, headers=None, timeout=60):
        """A request to base + path (or an absolute URL); on a Bearer 401,
        gets a token and tries again. Returns a stack.Response."""
        url = path if path.startswith("http") else self.base + path
        hdrs = dict(headers or {})
        key = (method in ("GET", "HEAD"), re.sub(r"/(manifests|blobs|tags)/.*", "", urlsplit(url).path))
        if key in self.tokens:
            hdrs["Authorization"] = "Bearer " + self.tokens[key]
        r = http(url, method=method, headers=hdrs, body=body, timeout=timeout)
        if r.status == 401:
            ch = parse_challenge(r.header("WWW-Authenticate"))
            if ch.get("scheme") == "bearer" and ch.get("realm"):
                self.tokens[key] = self._token(ch)
                hdrs["Authorization"] = "Bearer " + self.tokens[key]
                r = http(url, method=method, headers=hdrs, body=body, timeout=timeout)
        return r

    def put_blob(self, repo, data):
        """Uploads data (POST then PUT ?digest=); returns its digest."""
        d = digest_of(data)
        r = self.request("HEAD", "/v2/%s/blobs/%s" % (repo, d))
        if r.status == 200:
            return d
        r = self.request("POST", "/v2/%s/blobs/uploads/" % repo, body=b"",
                         headers={"Content-Length": "0"})
        if r.status != 202:
            raise RuntimeError("upload start: %r %r" % (r, r.body[:300]))
        loc = urljoin(self.base + "/", r.header("Location"))
        loc += ("&" if "?" in loc else "?") + urlencode({"digest": d})
        r = self.request("PUT", loc, body=data,
                         headers={"Content-Type": "application/octet-stream"})
        if r.status != 201:
            raise RuntimeError("upload PUT: %r %r" % (r, r.body[:300]))
        return d

    def put_manifest(self, repo, ref, data, media_type):
        """PUT /v2/REPO/manifests/REF; returns the digest the registry gave."""
        r = self.request("PUT", "/v2/%s/manifests/%s" % (repo, ref), body=data,
                         headers={"Content-Type": media_type})
        if r.status != 201:
            raise RuntimeError("manifest PUT %s:%s: %r %r" % (repo, ref, r, r.body[:300]))
        return r.header("Docker-Content-Digest")

    def get_manifest(self, repo, ref, accept=ACCEPT_ALL, method="GET"):
        return self.request(method, "/v2/%s/manifests/%s" % (repo, ref),
                            headers={"Accept": accept})

    def get_blob(self, repo, digest, headers=None):
        return self.request("GET", "/v2/%s/blobs/%s" % (repo, digest), headers=headers)

    def tags(self, repo, n=None, last=None):
        """(tags, Link header or None) of one page."""
        q = {}
        if n is not None:
            q["n"] = n
        if last is not None:
            q["last"] = last
        r = self.request("GET", "/v2/%s/tags/list" % repo + ("?" + urlencode(q) if q else ""))
        if r.status != 200:
            raise RuntimeError("tags/list %s: %r %r" % (repo, r, r.body[:300]))
        return r.json().get("tags") or [], r.header("Link")

    def delete_manifest(self, repo, digest):
        return self.request("DELETE", "/v2/%s/manifests/%s" % (repo, digest))


def push_referrer(client, repo, subject, artifact_type="application/vnd.larder.test.sbom",
                  payload=b'{"spdxVersion":"SPDX-2.3"}', annotations=None):
    """Pushes an artifact (an OCI image manifest with artifactType, the
    empty config, one layer of payload, and subject = the descriptor of
    subject, a Pushed or Image) by digest, then the referrers tag schema's
    index under the tag sha256-<hex of subject> listing it, as ORAS and
    cosign do against a registry without the referrers API. Returns
    (artifact digest, artifact manifest bytes, index bytes)."""
    empty = b"{}"
    client.put_blob(repo, empty)
    layer = client.put_blob(repo, payload)
    ann = {"org.opencontainers.image.created": "2024-01-01T00:00:00Z"}
    ann.update(annotations or {})
    manifest = canonical({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {"mediaType": OCI_EMPTY, "digest": digest_of(empty), "size": len(empty)},
        "layers": [{"mediaType": "application/spdx+json", "digest": layer,
                    "size": len(payload)}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest,
                    "size": len(subject.manifest)},
        "annotations": ann,
    })
    digest = digest_of(manifest)
    got = client.put_manifest(repo, digest, manifest, OCI_MANIFEST)
    if got != digest:
        raise RuntimeError("registry made %s of the artifact %s" % (got, digest))
    tag = subject.digest.replace(":", "-")
    r = client.get_manifest(repo, tag, accept=OCI_INDEX)
    entries = []
    if r.status == 200:
        entries = [m for m in json.loads(r.body).get("manifests", []) if m["digest"] != digest]
    entries.append({"mediaType": OCI_MANIFEST, "digest": digest, "size": len(manifest),
                    "artifactType": artifact_type, "annotations": ann})
    index = canonical({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries})
    client.put_manifest(repo, tag, index, OCI_INDEX)
    return digest, manifest, index


# ================================================================ relay

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
              "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate"}

FAULTS = ("truncate", "corrupt", "reset", "stall", "status", "down", "delay")


class _RelayHandler(httpserver.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        self.upstream = None
        self.server.relay._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        if self.upstream is not None:
            self.upstream.close()
        self.server.relay._track(self.connection, False)

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else None

    def _raw_send(self, data):
        self.connection.sendall(data)

    def _send_head(self, status, reason, headers):
        lines = ["HTTP/1.1 %d %s" % (status, reason)]
        lines += ["%s: %s" % kv for kv in headers]
        self._raw_send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _abort(self, rst=False):
        self.close_connection = True
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None
        try:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass

    def _handle(self):
        relay = self.server.relay
        method = self.command
        target = self.path
        u = urlsplit(target)
        path = u.path
        body = self._read_body()
        rule = relay._hit(method, path, u.query)
        fault = rule["fault"] if rule else None
        if fault == "down":
            self._abort()
            relay._log(method, target, 0, fault)
            return
        if fault == "delay":
            relay._sleep(rule.get("seconds", 1.0))
        if fault == "status":
            code = int(rule.get("code", 500))
            payload = rule.get("body")
            if payload is None:
                payload = canonical({"errors": [{"code": rule.get("error_code", {
                    401: "UNAUTHORIZED", 403: "DENIED", 404: "NAME_UNKNOWN",
                    429: "TOOMANYREQUESTS"}.get(code, "UNKNOWN")),
                    "message": "relay fault: %d" % code, "detail": None}]})
            if isinstance(payload, str):
                payload = payload.encode()
            hdrs = [("Content-Type", "application/json"),
                    ("Content-Length", str(len(payload))),
                    ("Docker-Distribution-Api-Version", "registry/2.0")]
            hdrs += list((rule.get("headers") or {}).items())
            self._send_head(code, httpclient.responses.get(code, "Fault"), hdrs)
            if method != "HEAD":
                self._raw_send(payload)
            relay._log(method, target, code, fault)
            return
        # a list, not a dict: clients send some headers more than once
        # (skopeo gives each media type an Accept line of its own)
        hdrs = [("Host", "%s:%d" % (relay.upstream_host, relay.upstream_port))]
        for k, v in self.headers.items():
            if k.lower() in HOP_BY_HOP or k.lower() in ("host", "content-length"):
                continue
            hdrs.append((k, v))
        if body is not None or method in ("PUT", "POST", "PATCH"):
            hdrs.append(("Content-Length", str(len(body or b""))))
        resp = None
        for attempt in (0, 1):
            try:
                if self.upstream is None:
                    self.upstream = httpclient.HTTPConnection(
                        relay.upstream_host, relay.upstream_port, timeout=120)
                self.upstream.putrequest(method, target, skip_host=True,
                                         skip_accept_encoding=True)
                for k, v in hdrs:
                    self.upstream.putheader(k, v)
                self.upstream.endheaders(body)
                resp = self.upstream.getresponse()
                break
            except (OSError, httpclient.HTTPException) as e:
                if self.upstream is not None:
                    self.upstream.close()
                    self.upstream = None
                if attempt == 1:
                    msg = ("relay: upstream failed: %r" % e).encode()
                    self._send_head(502, "Bad Gateway", [("Content-Type", "text/plain"),
                                                         ("Content-Length", str(len(msg)))])
                    self._raw_send(msg)
                    relay._log(method, target, 502, fault)
                    return
        out_headers = []
        length = None
        for k, v in resp.getheaders():
            if k.lower() in HOP_BY_HOP:
                continue
            if k.lower() == "content-length":
                length = int(v)
            out_headers.append((k, v))
        no_body = method == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200
        chunked = not no_body and length is None
        if chunked:
            out_headers.append(("Transfer-Encoding", "chunked"))
        if resp.getheader("Connection", "").lower() == "close":
            out_headers.append(("Connection", "close"))
            self.close_connection = True
        relay._log(method, target, resp.status, fault)
        self._send_head(resp.status, resp.reason, out_headers)
        if no_body:
            resp.read()
            return
        total = length
        # where a body fault strikes: a fraction of the body, or an offset
        cut = None
        if fault in ("truncate", "corrupt", "reset", "stall"):
            if "offset" in rule:
                cut = int(rule["offset"])
            elif total is not None:
                cut = int(total * float(rule.get("fraction", 0.5)))
            else:
                cut = 1 << 16
        sent = 0
        fired = False
        while True:
            try:
                data = resp.read1(1 << 16)
            except (OSError, httpclient.HTTPException):
                self._abort()
                return
            if not data:
                break
            if cut is not None and not fired and sent + len(data) > cut:
                head, tail = data[:cut - sent], data[cut - sent:]
                if fault == "corrupt":
                    b = bytearray(data)
                    b[cut - sent] ^= 0xFF
                    data = bytes(b)
                    fired = True
                else:
                    fired = True
                    if not self._send_chunk(head, chunked):
                        return
                    sent += len(head)
                    if fault == "truncate":
                        self._abort()
                        return
                    if fault == "reset":
                        self._abort(rst=True)
                        return
                    # stall: wait, then go on with the rest
                    relay._sleep(rule.get("seconds", 5.0))
                    data = tail
            if not self._send_chunk(data, chunked):
                return
            sent += len(data)
        if chunked:
            self._send_chunk(b"", True)

    def _send_chunk(self, data, chunked):
        try:
            if chunked:
                if data:
                    self._raw_send(b"%x\r\n" % len(data) + data + b"\r\n")
                else:
                    self._raw_send(b"0\r\n\r\n")
            elif data:
                self._raw_send(data)
            return True
        except OSError:
            self._abort()
            return False

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _handle


class _RelayServer:
    """What BaseHTTPRequestHandler wants of a server."""

    def __init__(self, relay):
        self.relay = relay
        self.server_name = "127.0.0.1"
        self.server_port = relay.port


class Relay:
    """A threaded HTTP/1.1 relay on 127.0.0.1 in front of
    upstream_host:upstream_port: keep-alive on both sides, bodies streamed,
    every header passed through but the hop-by-hop ones (Host rewritten
    to the upstream's). Counts requests per (method, path) and injects
    faults, each a dict:

        {"fault": F, "path": REGEX, "method": M, "times": N, ...}

    path (searched in the request path without the query; default any),
    query (searched in the query string; default any), method (default
    any) and times (default every time) pick the requests. Faults, checked in order, the first match firing:

        truncate  the body up to a point (fraction=0.5 of it, or offset=
                  bytes), then the connection closed
        corrupt   one byte at that point flipped, the length kept
        reset     the body up to that point, then an RST (SO_LINGER 0)
        stall     the body up to that point, then seconds= (5) of
                  silence, then the rest
        status    an answer of code= (500), headers= {..}, body= (the
                  registry's error JSON by default, error_code= its code)
        down      the connection closed unanswered; without a path (via
                  down()), the listening socket itself is closed so that
                  connections are refused
        delay     seconds= (1) of latency, then the request relayed

    counts(), reset(), set_faults([...]), clear() (no faults, up again,
    stalls woken), down(), up(), log() [(method, target, status, fault)],
    fired() {fault: times}."""

    def __init__(self, upstream_port, upstream_host="127.0.0.1", port=None):
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self.lock = threading.Lock()
        self._counts = collections.Counter()
        self._log_lines = []
        self._fired = collections.Counter()
        self._faults = []
        self._conns = set()
        self._sock = None
        self._thread = None
        self._wake = threading.Event()
        self._stopped = False
        self.is_down = False

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    @property
    def base(self):
        return "http://" + self.host

    def ref(self, repo, tag=None, digest=None):
        return _ref(self.host, repo, tag, digest)

    # -- lifecycle

    def start(self):
        self._listen()
        return self

    def _listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self._sock = s
        self.is_down = False
        self._thread = threading.Thread(target=self._accept_loop, args=(s,), daemon=True)
        self._thread.start()

    def _accept_loop(self, s):
        server = _RelayServer(self)
        while True:
            try:
                r, _, _ = select.select([s], [], [], 0.2)
            except (OSError, ValueError):
                return
            if s.fileno() < 0 or self._sock is not s:
                return
            if not r:
                continue
            try:
                conn, addr = s.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn, addr, server),
                             daemon=True).start()

    def _serve(self, conn, addr, server):
        try:
            _RelayHandler(conn, addr, server)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _track(self, conn, add):
        with self.lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _close_listener(self):
        s, self._sock = self._sock, None
        if s is not None:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        if self._thread is not None:
            self._thread.join(2)

    def _drop_conns(self):
        with self.lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self):
        """Refuses connections (the listening socket closed) and drops the
        open ones."""
        self.is_down = True
        self._close_listener()
        self._drop_conns()

    def up(self):
        if self._sock is None and not self._stopped:
            self._listen()

    def stop(self):
        self._stopped = True
        self._wake.set()
        self._close_listener()
        self._drop_conns()

    # -- control

    def counts(self):
        """{(method, path): requests} since the last reset()."""
        with self.lock:
            return dict(self._counts)

    def count(self, method=None, path=None):
        """Requests whose method is method (any if None) and whose path
        matches the regex path (searched; any if None)."""
        rx = re.compile(path) if path else None
        return sum(n for (m, p), n in self.counts().items()
                   if (method is None or m == method) and (rx is None or rx.search(p)))

    def log(self):
        with self.lock:
            return list(self._log_lines)

    def fired(self):
        with self.lock:
            return dict(self._fired)

    def reset(self):
        with self.lock:
            self._counts.clear()
            self._log_lines.clear()
            self._fired.clear()

    def set_faults(self, faults):
        rules = []
        for f in faults:
            f = dict(f)
            if f.get("fault") not in FAULTS:
                raise ValueError("unknown fault %r" % f.get("fault"))
            f["_rx"] = re.compile(f.get("path") or "")
            f["_qrx"] = re.compile(f["query"]) if f.get("query") is not None else None
            rules.append(f)
        with self.lock:
            self._faults = rules
            self._wake.clear()
        if any(f["fault"] == "down" and not f.get("path") for f in rules):
            self.down()

    def clear(self):
        """No faults, listening again, stalled bodies sent on."""
        with self.lock:
            self._faults = []
        self._wake.set()
        self.up()

    def _sleep(self, seconds):
        self._wake.wait(float(seconds))

    def _hit(self, method, path, query):
        with self.lock:
            self._counts[(method, path)] += 1
            for f in self._faults:
                if f.get("method") and f["method"] != method:
                    continue
                if not f["_rx"].search(path):
                    continue
                if f.get("_qrx") is not None and not f["_qrx"].search(query):
                    continue
                if f.get("times") is not None:
                    if f["times"] <= 0:
                        continue
                    f["times"] -= 1
                self._fired[f["fault"]] += 1
                return f
        return None

    def _log(self, method, target, status, fault):
        with self.lock:
            self._log_lines.append((method, target, status, fault))


# ================================================================ larder in front

def registry_section(name, upstream, cache_ttl=300, max_stale="7d", default=True,
                     library_prefix="no", **keys):
    """The [registry "NAME"] section of larder.conf."""
    lines = ['[registry "%s"]' % name, "upstream = %s" % upstream,
             "cache_ttl = %s" % cache_ttl, "max_stale = %s" % max_stale,
             "default = %s" % ("yes" if default else "no"),
             "library_prefix = %s" % library_prefix]
    lines += ["%s = %s" % kv for kv in keys.items()]
    return "\n".join(lines) + "\n"


# [larder] keys the registry tests run with: no memory of failures (the
# tests expect recovery the moment a fault clears) and no prefetching.
OCI_LARDER_KEYS = {"error_ttl": 0}


class OciStack:
    """A Relay in front of the registry on upstream_port, `larder serve`
    with a [registry "NAME"] section whose upstream is the relay, and
    nginx in front of larder (stack.Larder and stack.Nginx, each in a
    subdirectory of workdir). registry_keys go into the registry section
    (username, password_file, ...), larder_extra into [larder]."""

    def __init__(self, workdir, upstream_port, name="test", cache_ttl=300, max_stale="7d",
                 workers=4, larder_extra=None, registry_keys=None, default=True,
                 binary=None, extra_text=""):
        self.dir = os.path.abspath(workdir)
        self.name = name
        self.relay = Relay(upstream_port)
        self.cache_ttl = cache_ttl
        self.max_stale = max_stale
        self.workers = workers
        self.larder_extra = dict(OCI_LARDER_KEYS)
        self.larder_extra.update(larder_extra or {})
        self.registry_keys = registry_keys or {}
        self.default = default
        self.binary = binary
        self.extra_text = extra_text
        self.larder = None
        self.nginx = None

    def section(self):
        return registry_section(self.name, self.relay.base + "/", self.cache_ttl,
                                self.max_stale, self.default, **self.registry_keys)

    def start(self):
        try:
            self.relay.start()
            self.larder = stackmod.Larder(os.path.join(self.dir, "larder"), self.relay.port,
                                          workers=self.workers, extra=self.larder_extra,
                                          extra_text="\n" + self.section() + self.extra_text,
                                          binary=self.binary)
            self.larder.start()
            self.nginx = stackmod.Nginx(os.path.join(self.dir, "nginx"), self.larder.port,
                                        self.larder.data_dir)
            self.nginx.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        for piece in (self.nginx, self.larder, self.relay):
            if piece is not None:
                try:
                    piece.stop()
                except Exception as e:  # keep stopping the others
                    sys.stderr.write("stopping %s: %r\n" % (type(piece).__name__, e))

    @property
    def data_dir(self):
        return self.larder.data_dir

    @property
    def host(self):
        return "127.0.0.1:%d" % self.nginx.port

    @property
    def base(self):
        return self.nginx.base

    def ref(self, repo, tag=None, digest=None, prefix=True):
        """127.0.0.1:NGINX/NAME/REPO:TAG (or @DIGEST); prefix=False leaves
        the registry name out (the default registry's bare names)."""
        return _ref(self.host, ("%s/%s" % (self.name, repo)) if prefix else repo, tag, digest)

    def path(self, repo, *rest):
        return "/v2/%s/%s/%s" % (self.name, repo, "/".join(rest))

    def get(self, path, headers=None, method="GET", accept=None, timeout=60):
        h = dict(headers or {})
        if accept:
            h["Accept"] = accept
        return http(self.nginx.base + path, method=method, headers=h, timeout=timeout)

    def upstream_path(self, repo, *rest):
        """The path larder asks the relay for (the registry's own name)."""
        return "/v2/%s/%s" % (repo, "/".join(rest))


# ================================================================ self test

def selftest(workdir, big_mb=30):
    """The infrastructure against the real registry, no larder: builds and
    pushes the images (plain and token registries), pulls them straight
    and through the relay, checks counts and faults. Raises on failure;
    prints what it did."""
    t0 = time.monotonic()
    say = lambda *a: print("[%5.1f s]" % (time.monotonic() - t0), *a, flush=True)  # noqa
    imgs = standard_images(os.path.join(workdir, "images"), big_mb=big_mb)
    say("built", len(imgs), "images")
    reg = Registry(os.path.join(workdir, "registry")).start()
    try:
        pushed = populate(reg, imgs)
        say("pushed", len(pushed), "repositories")
        assert pushed["v2s2"].media_type == DOCKER_MANIFEST, pushed["v2s2"]
        assert pushed["multi"].media_type == OCI_INDEX
        assert pushed["small"].manifest == imgs["small"].manifest
        # distribution 2.8 ignores n and last: every tag, in no order, no Link
        tags, link = reg.client().tags("many", n=50)
        assert sorted(tags) == MANY_TAGS and link is None, (tags, link)
        relay = Relay(reg.port).start()
        try:
            d1 = os.path.join(workdir, "pull-direct")
            d2 = os.path.join(workdir, "pull-relay")
            r = pull(reg.ref("small", "1.0"), d1)
            assert r.ok, r
            r = pull(relay.ref("small", "1.0"), d2)
            assert r.ok, r
            assert not compare_layouts(d1, d2), compare_layouts(d1, d2)
            gets = {p: n for (m, p), n in relay.counts().items() if m == "GET" and "/blobs/" in p}
            assert len(gets) == 4 and set(gets.values()) == {1}, gets
            say("pull through the relay ok:", relay.counts())
            layer = imgs["app1"].layers[-1].digest
            for fault in ("truncate", "corrupt", "reset", "stall", "status"):
                relay.reset()
                relay.set_faults([{"fault": fault, "path": layer, "seconds": 1,
                                   "code": 503}])
                d = os.path.join(workdir, "pull-" + fault)
                r = pull(relay.ref("app1", "1.0"), d)
                assert (r.ok if fault == "stall" else not r.ok), (fault, r)
                assert relay.fired().get(fault), (fault, relay.fired())
                say("fault", fault, "->", "ok" if r.ok else r.err.strip().splitlines()[-1][:160])
            relay.clear()
            relay.down()
            r = pull(relay.ref("app1", "1.0"), os.path.join(workdir, "pull-down"))
            assert not r.ok
            relay.up()
            r = pull(relay.ref("app1", "1.0"), os.path.join(workdir, "pull-up"))
            assert r.ok, r
            say("down/up ok")
        finally:
            relay.stop()
    finally:
        reg.stop()
    treg = Registry(os.path.join(workdir, "token-registry"), auth="token").start()
    try:
        populate(treg, imgs, repos=["small"])
        treg.token.reset()
        d = os.path.join(workdir, "token-pull")
        r = pull(treg.ref("small", "1.0"), d)
        assert r.ok, r
        assert not compare_layouts(d, os.path.join(workdir, "pull-direct"))
        say("token registry: anonymous pull ok, token requests", treg.token.counts())
        treg.token.allow_anonymous = False
        r = pull(treg.ref("small", "1.0"), os.path.join(workdir, "token-pull2"))
        assert not r.ok
        r = pull(treg.ref("small", "1.0"), os.path.join(workdir, "token-pull3"),
                 creds=treg.creds)
        assert r.ok, r
        say("token registry: anonymous refused, alice ok")
    finally:
        treg.stop()
    say("selftest passed")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["selftest", "images"])
    ap.add_argument("--dir", default=None)
    ap.add_argument("--big-mb", type=int, default=30)
    a = ap.parse_args()
    why = missing_reason()
    if why:
        sys.exit(why)
    d = a.dir or tempfile.mkdtemp(prefix="larder-oci-")
    if a.what == "images":
        for k, v in standard_images(d, a.big_mb).items():
            print(k, v)
    else:
        selftest(d, a.big_mb)
        print("workdir", d)
