#!/usr/bin/python3
"""Builds the small, real distributions the integration tests install.

Every wheel is a proper wheel (PEP 427): a tiny importable module, and a
.dist-info directory with METADATA (Metadata-Version 2.1), WHEEL and a RECORD
holding a sha256 for every other file. Beside each wheel that should have PEP
658 metadata, the exact METADATA bytes are written as "{wheel}.metadata"; the
stand-in upstream advertises metadata for a file exactly when that sibling
exists. A "{file}.yanked" sibling holds a yank reason.

The default set is a dependency chain, with a mixed-spelling project name to
exercise PEP 503 normalisation:

    larder-demo-a 1.0, 1.1   Requires-Dist: larder_demo.b>=1.0
    larder_demo.b 1.0        Requires-Dist: larder-demo-c   (file name keeps the dot)
    larder-demo-c 1.0, 2.0   no dependencies; 1.0 is yanked ("broken"); 2.0 also
                             has an sdist
    larder-demo-nometa 1.0   no .metadata sibling

a's requirement spells b exactly as b's METADATA does: pip 22.3 to 23.0
(Debian 12 ships 23.0.1) compares the raw Name of PEP 658 metadata with the
requirement as written and rejects "larder_demo.b" for "larder-demo-b".

Usage: python3 wheels.py OUTDIR [--big-mb N]
"""

import argparse
import collections
import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import zipfile

# A fixed date, so builds are reproducible: same inputs, same bytes, same sha256.
_EPOCH = (2024, 1, 2, 3, 4, 5)
_EPOCH_TS = 1704164645  # 2024-01-02T03:04:05Z


def normalise(name):
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def module_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata_text(name, version, requires=(), requires_python=">=3.7",
                  summary=None, extra_meta=()):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % name,
        "Version: %s" % version,
        "Summary: %s" % (summary or "larder integration-test package %s" % name),
        "Author: larder tests",
        "License: MIT",
    ] + list(extra_meta)
    if requires_python:
        lines.append("Requires-Python: %s" % requires_python)
    for r in requires:
        lines.append("Requires-Dist: %s" % r)
    return ("\n".join(lines) + "\n\n" + "Built for larder's integration tests.\n").encode()


def _zip_add(zf, path, data, compress=True):
    info = zipfile.ZipInfo(path, date_time=_EPOCH)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    zf.writestr(info, data)


def build_wheel(outdir, name, version, requires=(), requires_python=">=3.7",
                file_name=None, extra_files=None, metadata_sibling=True,
                yanked=None, mtime=None, tag="py3-none-any", extra_meta=()):
    """Builds one wheel in outdir; returns its path.

    name is written as given in METADATA; the file name uses file_name (the
    distribution part) or name with '-' turned into '_'. extra_files maps
    archive paths to bytes (stored uncompressed). metadata_sibling writes
    "{wheel}.metadata"; yanked writes "{wheel}.yanked" with the reason. tag
    is the wheel's (possibly compressed) tag set, e.g.
    "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"; a platform
    other than "any" makes it a platlib wheel. extra_meta are more header
    lines for METADATA ("License-Expression: MIT")."""
    dist = file_name or name.replace("-", "_")
    mod = module_name(name)
    wheel_name = "%s-%s-%s.whl" % (dist, version, tag)
    pys, abis, plats = (t.split(".") for t in tag.split("-"))
    tag_lines = "".join("Tag: %s-%s-%s\n" % (py, abi, plat)
                        for py in pys for abi in abis for plat in plats)
    distinfo = "%s-%s.dist-info" % (dist, version)
    meta = metadata_text(name, version, requires, requires_python,
                         extra_meta=extra_meta)
    files = [
        ("%s/__init__.py" % mod,
         ('"""%s, built for larder\'s tests."""\n__version__ = "%s"\n'
          % (name, version)).encode(), True),
    ]
    for path, data in sorted((extra_files or {}).items()):
        files.append((path, data, False))
    files += [
        ("%s/METADATA" % distinfo, meta, True),
        ("%s/WHEEL" % distinfo,
         ("Wheel-Version: 1.0\nGenerator: larder-tests (1.0)\n"
          "Root-Is-Purelib: %s\n%s" % ("true" if plats == ["any"] else "false",
                                       tag_lines)).encode(), True),
        ("%s/top_level.txt" % distinfo, (mod + "\n").encode(), True),
    ]
    record = io.StringIO()
    for path, data, _ in files:
        record.write("%s,%s,%d\n" % (path, _record_hash(data), len(data)))
    record.write("%s/RECORD,,\n" % distinfo)
    files.append(("%s/RECORD" % distinfo, record.getvalue().encode(), True))

    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, wheel_name)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for p, data, compress in files:
            _zip_add(zf, p, data, compress)
    os.replace(tmp, path)
    _sidecars(path, meta if metadata_sibling else None, yanked, mtime)
    return path


def build_sdist(outdir, name, version, requires=(), requires_python=">=3.7",
                mtime=None):
    """Builds a minimal sdist (PKG-INFO, pyproject.toml, the module); returns
    its path. It has no .metadata sibling, as on PyPI."""
    dist = name.replace("-", "_")
    mod = module_name(name)
    base = "%s-%s" % (dist, version)
    meta = metadata_text(name, version, requires, requires_python)
    members = {
        "PKG-INFO": meta,
        "pyproject.toml": ('[build-system]\nrequires = ["setuptools"]\n'
                           'build-backend = "setuptools.build_meta"\n\n'
                           '[project]\nname = "%s"\nversion = "%s"\n'
                           % (name, version)).encode(),
        "%s/__init__.py" % mod: ('__version__ = "%s"\n' % version).encode(),
    }
    path = os.path.join(outdir, base + ".tar.gz")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for member, data in sorted(members.items()):
            ti = tarfile.TarInfo("%s/%s" % (base, member))
            ti.size = len(data)
            ti.mtime = _EPOCH_TS
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
    import gzip
    with open(path + ".tmp", "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=_EPOCH_TS, filename="") as gz:
            gz.write(raw.getvalue())
    os.replace(path + ".tmp", path)
    _sidecars(path, None, None, mtime)
    return path


def _sidecars(path, meta, yanked, mtime):
    for suffix in (".metadata", ".yanked"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    if meta is not None:
        with open(path + ".metadata", "wb") as f:
            f.write(meta)
    if yanked is not None:
        with open(path + ".yanked", "w") as f:
            f.write(yanked)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


# (name as written in METADATA, version, requires, requires-python, options)
DEFAULT_SET = [
    ("larder-demo-a", "1.0", ["larder_demo.b>=1.0"], ">=3.7", {}),
    ("larder-demo-a", "1.1", ["larder_demo.b>=1.0"], ">=3.7,<4", {}),
    ("larder_demo.b", "1.0", ["larder-demo-c"], ">=3.7", {"file_name": "larder_demo.b"}),
    ("larder-demo-c", "1.0", [], ">=3.7", {"yanked": "broken"}),
    ("larder-demo-c", "2.0", [], ">=3.7", {"sdist": True}),
    ("larder-demo-nometa", "1.0", [], ">=3.7", {"metadata_sibling": False}),
]


def build_default(outdir):
    """Builds the default set into outdir; returns {filename: path}."""
    out = {}
    for i, (name, version, requires, rp, opts) in enumerate(DEFAULT_SET):
        opts = dict(opts)
        mtime = _EPOCH_TS + 3600 * i
        sdist = opts.pop("sdist", False)
        p = build_wheel(outdir, name, version, requires, rp, mtime=mtime, **opts)
        out[os.path.basename(p)] = p
        if sdist:
            p = build_sdist(outdir, name, version, requires, rp, mtime=mtime + 60)
            out[os.path.basename(p)] = p
    return out


def build_big(outdir, mb, name="larder-demo-big", version="1.0"):
    """Builds one wheel carrying mb MiB of incompressible bytes (stored, not
    deflated), with a .metadata sibling; returns its path."""
    size = int(mb * 1024 * 1024)
    # Deterministic but incompressible: a SHA-256 counter stream.
    chunks = []
    counter = 0
    produced = 0
    seed = hashlib.sha256(("%s-%s" % (name, version)).encode()).digest()
    while produced < size:
        block = hashlib.sha256(seed + counter.to_bytes(8, "big")).digest()
        chunks.append(block)
        produced += len(block)
        counter += 1
    blob = b"".join(chunks)[:size]
    mod = module_name(name)
    return build_wheel(outdir, name, version, (), ">=3.7",
                       extra_files={"%s/payload.bin" % mod: blob},
                       mtime=_EPOCH_TS + 86400)


# The file names of the default set (build_default), for the tests.
A10 = "larder_demo_a-1.0-py3-none-any.whl"
A11 = "larder_demo_a-1.1-py3-none-any.whl"
B10 = "larder_demo.b-1.0-py3-none-any.whl"
C10 = "larder_demo_c-1.0-py3-none-any.whl"
C20 = "larder_demo_c-2.0-py3-none-any.whl"
C20_SDIST = "larder_demo_c-2.0.tar.gz"
NOMETA = "larder_demo_nometa-1.0-py3-none-any.whl"

Dist = collections.namedtuple("Dist", "filename path sha256 size data metadata")


def load_dists(wheel_dir):
    """{filename: Dist} of the wheels and sdists in wheel_dir, with their
    bytes and their .metadata sibling's bytes (or None)."""
    out = {}
    for fn in sorted(os.listdir(wheel_dir)):
        if not fn.endswith((".whl", ".tar.gz")):
            continue
        path = os.path.join(wheel_dir, fn)
        with open(path, "rb") as f:
            data = f.read()
        meta = None
        if os.path.exists(path + ".metadata"):
            with open(path + ".metadata", "rb") as f:
                meta = f.read()
        out[fn] = Dist(fn, path, hashlib.sha256(data).hexdigest(), len(data),
                       data, meta)
    return out


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--big-mb", type=float, default=0,
                    help="also build larder-demo-big with this many MiB")
    ap.add_argument("--no-default", action="store_true",
                    help="skip the default set")
    args = ap.parse_args(argv)
    built = {} if args.no_default else build_default(args.outdir)
    if args.big_mb:
        p = build_big(args.outdir, args.big_mb)
        built[os.path.basename(p)] = p
    for fn in sorted(built):
        print("%s %s" % (sha256_file(built[fn]), fn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
