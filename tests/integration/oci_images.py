"""OCI images for the registry tests, built without docker: OCI image
layouts (oci-layout, index.json, blobs/sha256/...) holding image manifests
whose layers are gzip'd tars of seeded random bytes, so that the same sizes
and seeds give the same digests in every run (build_image, make_layer);
multi-arch image indexes of such images (build_index); the set the tests
push (standard_images); and the media types, digest and canonical-JSON
helpers, and the byte-for-byte comparison of two layouts (compare_layouts)
every pull is checked with. Standard library only.

    imgs = standard_images(images_dir)              # {name: Image or Index}
    img = build_image(layout_dir, [4 * KB, 2 * MB], base=imgs["base"], seed="x")
    assert not compare_layouts(pulled_dir, direct_dir)
"""

import collections
import gzip
import hashlib
import io
import json
import os
import random
import re
import tarfile

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def digest_of(data):
    return "sha256:" + sha256(data)


def canonical(obj):
    """The bytes a manifest or config is written as."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def _ref(host, repo, tag=None, digest=None):
    """HOST/REPO:TAG (tag "latest" if None), or HOST/REPO@DIGEST."""
    if digest:
        return "%s/%s@%s" % (host, repo, digest)
    return "%s/%s:%s" % (host, repo, tag or "latest")


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
    # ("ociup layer": where this lived once; part of the config bytes, so of
    # every digest, kept so that the images stay the same)
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
# they are pushed to are in ociup.REPOS.
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
