#!/usr/bin/env python3
"""Writes tests/unit/zip_fixtures.h and tests/unit/tar_fixtures.h: real
zips, tars and gzipped sdists made with Python's zipfile and tarfile, and
hostile zips patched from them byte by byte. Run once; the output is
committed.  usage: gen_fixtures.py [OUTDIR]"""
import gzip
import io
import os
import struct
import sys
import tarfile
import warnings
import zipfile

warnings.simplefilter("ignore")  # zipfile warns of the duplicate name

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
DATE = (2024, 1, 1, 0, 0, 0)

METADATA = (b"Metadata-Version: 2.1\nName: corp-lib\nVersion: 1.0\n"
            b"Summary: A corporate library\nRequires-Python: >=3.8\n"
            b"\nThe description.\n")
PKG_INFO = (b"Metadata-Version: 2.1\nName: corp_lib\nVersion: 1.0\n"
            b"Requires-Python: >=3.9\n\nsdist description\n")


def zinfo(name, method=zipfile.ZIP_DEFLATED):
    zi = zipfile.ZipInfo(name, DATE)
    zi.compress_type = method
    return zi


def make_zip(files, comment=b"", method=zipfile.ZIP_DEFLATED, stream=False):
    buf = io.BytesIO()
    target = buf
    if stream:
        class Unseekable(io.RawIOBase):
            def writable(self):
                return True

            def write(self, b):
                return buf.write(b)

            def seekable(self):
                return False
        target = Unseekable()
    with zipfile.ZipFile(target, "w") as zf:
        for name, data in files:
            if stream:
                with zf.open(zinfo(name, method), "w") as f:
                    f.write(data)
            else:
                zf.writestr(zinfo(name, method), data)
        zf.comment = comment
    return buf.getvalue()


def make_zip64(files):
    saved = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 1  # every size and offset takes its zip64 form
    try:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", allowZip64=True) as zf:
            for name, data in files:
                with zf.open(zinfo(name), "w", force_zip64=True) as f:
                    f.write(data)
        return buf.getvalue()
    finally:
        zipfile.ZIP64_LIMIT = saved


WHEEL_FILES = [
    ("corp_lib/__init__.py", b"VERSION = '1.0'\n"),
    ("corp_lib-1.0.dist-info/METADATA", METADATA),
    ("corp_lib-1.0.dist-info/WHEEL",
     b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ("corp_lib-1.0.dist-info/RECORD", b""),
]


def eocd(z):
    return z.rindex(b"PK\x05\x06")


def central(z, i):
    """Offset of central directory entry i."""
    off = struct.unpack_from("<I", z, eocd(z) + 16)[0]
    for _ in range(i):
        n, m, k = struct.unpack_from("<HHH", z, off + 28)
        off += 46 + n + m + k
    return off


def patch(z, off, fmt, *v):
    b = bytearray(z)
    struct.pack_into(fmt, b, off, *v)
    return bytes(b)


def hostile(wheel):
    """Patches to zip_wheel, each a list of (offset, width, value)."""
    out = {}
    c1 = central(wheel, 1)  # the METADATA entry
    lho = struct.unpack_from("<I", wheel, c1 + 42)[0]
    usize = struct.unpack_from("<I", wheel, c1 + 24)[0]
    crc = struct.unpack_from("<I", wheel, c1 + 16)[0]
    e = eocd(wheel)
    # the uncompressed size lies, in both headers alike
    out["lying_size"] = [(c1 + 24, 4, usize - 5), (lho + 22, 4, usize - 5)]
    # the central size differs from the local one
    out["local_differs"] = [(c1 + 24, 4, usize + 7)]
    # the CRC lies (both headers)
    out["bad_crc"] = [(c1 + 16, 4, crc ^ 1), (lho + 14, 4, crc ^ 1)]
    # the METADATA entry points at the first entry's local header
    out["overlap"] = [(c1 + 42, 4, 0)]
    # an entry past the end of the file
    out["past_end"] = [(c1 + 42, 4, 0x7FFFFFF0)]
    # a compressed size running into the central directory
    out["csize_past"] = [(c1 + 20, 4, 0x00FFFFFF)]
    # the end record counts more entries than there are
    out["count_lies"] = [(e + 8, 2, 5), (e + 10, 2, 5)]
    # the end record puts the central directory at itself: a loop
    out["cd_loop"] = [(e + 16, 4, e)]
    # 0xFFFF entries but no zip64 records
    out["no_zip64"] = [(e + 8, 2, 0xFFFF), (e + 10, 2, 0xFFFF)]
    # a NUL in a name (central and local alike)
    out["nul_name"] = [(c1 + 46 + 3, 1, 0), (lho + 30 + 3, 1, 0)]
    # the local name differs from the central one
    out["local_name"] = [(lho + 30, 1, ord("X"))]
    # a comment length longer than the file holds
    out["comment_lies"] = [(e + 20, 2, 40)]
    # the METADATA entry's method is one zlib cannot read
    out["method"] = [(c1 + 10, 2, 12), (lho + 8, 2, 12)]
    # the METADATA entry is encrypted
    out["encrypted"] = [(c1 + 8, 2, 1), (lho + 6, 2, 1)]
    return out


def zip64_too_many(z):
    """The zip64 end record claims 200000 entries."""
    loc = z.rindex(b"PK\x06\x07")
    rec = struct.unpack_from("<Q", z, loc + 8)[0]
    z = patch(z, rec + 24, "<Q", 200000)
    return patch(z, rec + 32, "<Q", 200000)


def tar_bytes(entries, fmt):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for name, data in entries:
            if data is None:
                ti = tarfile.TarInfo(name)
                ti.type = tarfile.DIRTYPE
                ti.mtime = 1704067200
                tf.addfile(ti)
                continue
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1704067200
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def gz(data):
    return gzip.compress(data, mtime=0)


def c_array(name, data):
    """A string literal: printable bytes as they are, others in octal."""
    lines, cur = [], ""
    for b in data:
        ch = chr(b)
        if 0x20 <= b < 0x7F and ch not in "\\\"?":
            cur += ch
        else:
            cur += "\\%03o" % b
        if len(cur) >= 68:
            lines.append(cur)
            cur = ""
    if cur or not lines:
        lines.append(cur)
    body = "\n".join('\t"%s"' % l for l in lines)
    # one byte more for the literal's NUL: the data is sizeof - 1 bytes
    return ("static const unsigned char %s[%d] =\n%s;\n"
            % (name, len(data) + 1, body))


def c_patches(name, patches):
    rows = ",\n".join("\t{%d, %d, 0x%x}" % p for p in patches)
    return ("static const struct zip_patch %s[] = {\n%s,\n\t{0, 0, 0},\n};\n"
            % (name, rows))


def write(path, guard, arrays, patches=()):
    with open(path, "w") as f:
        f.write("/* Generated by tests/unit/gen_fixtures.py: do not edit. */\n")
        f.write("#ifndef %s\n#define %s\n\n" % (guard, guard))
        for name, data in arrays:
            f.write(c_array(name, data) + "\n")
        if patches:
            f.write("/* Hostile zips: each patches zip_wheel at offset, "
                    "width bytes (LE). */\n")
            f.write("struct zip_patch {\n\tsize_t off;\n\tint width;\n"
                    "\tunsigned long value;\n};\n\n")
        for name, p in patches:
            f.write(c_patches(name, p) + "\n")
        f.write("#endif\n")


def main():
    wheel = make_zip(WHEEL_FILES)
    zips = [
        ("zip_stored", make_zip([("a.txt", b"hello, stored\n"),
                                 ("dir/b.txt", b"")],
                                method=zipfile.ZIP_STORED)),
        ("zip_wheel", wheel),
        ("zip_stream", make_zip(WHEEL_FILES, stream=True)),
        ("zip_zip64", make_zip64(WHEEL_FILES)),
        ("zip_comment", make_zip(WHEEL_FILES, comment=b"PK\x05\x06 a comment"
                                 b" that holds an end signature")),
        ("zip_two_distinfo", make_zip([
            ("other-2.0.dist-info/METADATA",
             b"Metadata-Version: 2.1\nName: other\nVersion: 2.0\n"),
        ] + WHEEL_FILES)),
        ("zip_wrong_version", make_zip([
            ("corp_lib-1.0.dist-info/METADATA",
             METADATA.replace(b"Version: 1.0", b"Version: 1.1")),
        ])),
        ("zip_empty", make_zip([])),
        ("zip_dup", make_zip([("a.txt", b"one"), ("a.txt", b"two")])),
        ("zip_sdist", make_zip([
            ("corp_lib-1.0/setup.py", b"# setup\n"),
            ("corp_lib-1.0/PKG-INFO", PKG_INFO),
            ("corp_lib-1.0/src/corp_lib/PKG-INFO", b"not this one\n"),
        ])),
    ]
    zips.append(("zip_too_many", zip64_too_many(make_zip64(WHEEL_FILES))))
    patches = [("patch_" + k, v) for k, v in sorted(hostile(wheel).items())]
    write(os.path.join(OUT, "zip_fixtures.h"), "LARDER_ZIP_FIXTURES_H", zips,
          patches)

    sdist = [("corp_lib-1.0", None), ("corp_lib-1.0/setup.py", b"# setup\n"),
             ("corp_lib-1.0/PKG-INFO", PKG_INFO),
             ("corp_lib-1.0/src/corp_lib/__init__.py", b"x = 1\n" * 100)]
    longname = "corp_lib-1.0/" + "d" * 120 + "/file.txt"
    # the tars are kept gzipped (a tar is mostly zeros); the test inflates
    tars = [
        ("tgz_ustar", gz(tar_bytes(sdist, tarfile.USTAR_FORMAT))),
        ("tgz_gnu", gz(tar_bytes([(longname, b"long gnu\n")] + sdist,
                                 tarfile.GNU_FORMAT))),
        ("tgz_pax", gz(tar_bytes([(longname, b"long pax\n")] + sdist,
                                 tarfile.PAX_FORMAT))),
        ("tgz_sdist", gz(tar_bytes(sdist, tarfile.PAX_FORMAT))),
        ("tgz_no_pkginfo", gz(tar_bytes(sdist[:2], tarfile.PAX_FORMAT))),
        ("tgz_other_name", gz(tar_bytes(
            [("other-1.0/PKG-INFO",
              b"Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")],
            tarfile.PAX_FORMAT))),
    ]
    write(os.path.join(OUT, "tar_fixtures.h"), "LARDER_TAR_FIXTURES_H", tars)
    # seed corpora for the fuzz targets
    root = os.path.join(OUT, "..", "fuzz", "corpus")
    for target, name, data in [("zipdir", "wheel", wheel),
                               ("zipdir", "zip64", make_zip64(WHEEL_FILES)),
                               ("zipdir", "stream",
                                make_zip(WHEEL_FILES, stream=True)),
                               ("tarscan", "sdist",
                                gz(tar_bytes(sdist, tarfile.PAX_FORMAT))),
                               ("tarscan", "gnu",
                                gz(tar_bytes([(longname, b"x")] + sdist,
                                             tarfile.GNU_FORMAT)))]:
        os.makedirs(os.path.join(root, target), exist_ok=True)
        if target == "tarscan":
            data = b"\x09" + data  # fuzz_tarscan: the chunk size first
        with open(os.path.join(root, target, name), "wb") as f:
            f.write(data)


main()
