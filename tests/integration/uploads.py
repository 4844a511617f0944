"""Helpers for the upload tests (test_upload.py) and the upload benchmark
(contrib/bench): a twine-like client of the legacy upload API, tokens made
with `larder token add`, the command line for releases, distributions with
something wrong in them, and a look at what a hosted index stored.
Standard library only.

    tok = token_add(st.larder, "root/private", "upload")
    r = upload(st.base, "root/private", wheel, tok)     # a stack.Response

The config the tests run with (HOSTED_CONF, ROOT_PYPI) declares:

    root/private    hosted, not volatile, max_upload_size 1M
    root/scratch    hosted, volatile (files may be replaced and removed)
    root/pypi       virtual over root/private and pypi, private-first
    root/fallback   virtual over the same, fallback
    root/guarded    virtual over the same, fallback, protected corp-*
    root/hosted     virtual over root/private only, no-fallback
"""

import base64
import collections
import gzip
import hashlib
import io
import os
import re
import sqlite3
import subprocess
import tarfile
import uuid
import zipfile

import stack as stackmod
import wheels
from stack import wait_for  # noqa: F401 (tests use up.wait_for)

MAX_UPLOAD = 1024 * 1024

HOSTED_CONF = """
[index "root/private"]
type = hosted
volatile = no
max_upload_size = 1M

[index "root/scratch"]
type = hosted
volatile = yes

[index "root/fallback"]
type = virtual
layers = root/private pypi
policy = fallback

[index "root/guarded"]
type = virtual
layers = root/private pypi
policy = fallback
protected_names = corp-* internal-*

[index "root/hosted"]
type = virtual
layers = root/private
policy = no-fallback
"""

ROOT_PYPI = "layers = root/private pypi\npolicy = private-first\n"

TOKEN_RE = re.compile(r"^lt_([0-9a-f]{16})_([0-9a-f]{64})$")

# What larder_cli() needs of a larder: its binary and config (a
# stack.Larder serves too).
Cli = collections.namedtuple("Cli", "binary conf")


# ---------------------------------------------------------------- the CLI

def larder_cli(larder, *args, timeout=60):
    """Runs `larder ARGS...` with the larder's config (-c after the command
    words, and $LARDER_CONFIG); returns the CompletedProcess (text)."""
    words = [a for a in args]
    n = 2 if words and words[0] == "token" else 1
    cmd = [larder.binary] + words[:n] + ["-c", larder.conf] + words[n:]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, text=True,
                          env=stackmod.clean_env({"LARDER_CONFIG": larder.conf}))


def token_add(larder, index, actions, projects=None, expires=None, note=None):
    """`larder token add`: the token it printed (checked: one line, the
    spec's form). projects is a list of globs (each a --projects)."""
    args = ["token", "add", "--index", index, "--actions", actions]
    for g in projects or ():
        args += ["--projects", g]
    if expires is not None:
        args += ["--expires", expires]
    if note is not None:
        args += ["--note", note]
    p = larder_cli(larder, *args)
    assert p.returncode == 0, "token add %s: exit %d\n%s%s" % (
        args, p.returncode, p.stdout, p.stderr)
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and TOKEN_RE.match(lines[0]), \
        "token add printed %r, not one token line" % p.stdout
    return lines[0]


def token_id(tok):
    return TOKEN_RE.match(tok).group(1)


def token_list(larder):
    """The lines of `larder token list`."""
    p = larder_cli(larder, "token", "list")
    assert p.returncode == 0, "token list: exit %d\n%s" % (p.returncode, p.stderr)
    return p.stdout.splitlines()


def basic(tok, user="__token__"):
    return {"Authorization": "Basic " +
            base64.b64encode(("%s:%s" % (user, tok)).encode()).decode()}


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


# ---------------------------------------------------------------- uploads

def digests(data):
    return {"md5_digest": hashlib.md5(data).hexdigest(),
            "sha256_digest": hashlib.sha256(data).hexdigest(),
            "blake2_256_digest": hashlib.blake2b(data, digest_size=32).hexdigest()}


def dist_fields(filename, name=None, version=None, data=b""):
    """The fields twine sends for a distribution file (name and version
    from the file name unless given), its digests of data included."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-") + ["", ""]
        n, v = parts[:2]
        filetype, pyversion = "bdist_wheel", (parts[-5] if len(parts) >= 7 else "py3")
    else:
        base = re.sub(r"\.(tar\.gz|zip)$", "", filename)
        n, _, v = base.rpartition("-")
        filetype, pyversion = "sdist", "source"
    fields = {
        ":action": "file_upload", "protocol_version": "1",
        "name": name or n, "version": version or v, "filetype": filetype,
        "pyversion": pyversion, "metadata_version": "2.1",
        "summary": "larder upload test", "requires_python": ">=3.7",
    }
    fields.update(digests(data))
    return fields


def multipart(fields, filename, data, boundary=None, content_name="content"):
    """(content type, body) of a multipart/form-data form as twine makes it:
    the fields (a value None leaves the field out; a list repeats it),
    then the file part (filename None: no file part)."""
    boundary = boundary or uuid.uuid4().hex
    out = []
    for k, v in fields.items():
        if v is None:
            continue
        for one in (v if isinstance(v, list) else [v]):
            out.append(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n"
                       % (boundary.encode(), k.encode(), str(one).encode()))
    if filename is not None:
        out.append(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
                   b"filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                   % (boundary.encode(), content_name.encode(), filename.encode()))
        out.append(data)
        out.append(b"\r\n")
    out.append(b"--%s--\r\n" % boundary.encode())
    return "multipart/form-data; boundary=%s" % boundary, b"".join(out)


def upload_body(path=None, data=None, filename=None, fields=None, name=None,
                version=None):
    """(content type, body) of an upload of path (or data as filename),
    fields overriding the usual ones (None: left out)."""
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    filename = filename or os.path.basename(path)
    form = dist_fields(filename, name, version, data)
    form.update(fields or {})
    return multipart(form, filename, data)


def upload(base, index, path=None, tok=None, data=None, filename=None, fields=None,
           headers=None, name=None, version=None, timeout=60):
    """POST {base}/{index}/ of one distribution file with HTTP Basic
    __token__:tok (no credentials when tok is None). Returns a
    stack.Response."""
    ctype, body = upload_body(path, data, filename, fields, name, version)
    h = {"Content-Type": ctype}
    if tok is not None:
        h.update(basic(tok))
    h.update(headers or {})
    return stackmod.http("%s/%s/" % (base, index), method="POST", headers=h, body=body,
                         timeout=timeout)


def one_line_reason(r):
    """The body of an error answer as text; asserts it is one short line."""
    text = r.body.decode("utf-8", "replace").strip()
    assert text, "%r has no reason in its body" % r
    assert "\n" not in text and len(text) < 500, "not a one-line reason: %r" % text
    assert not re.match(r"^\d{3} Unknown\b", text), "no reason phrase for the status: %r" % text
    return text


# ---------------------------------------------------------------- distributions

def build_wheel(outdir, name, version, requires=(), requires_python=">=3.7", **kw):
    """A proper wheel (wheels.build_wheel), no .metadata sibling; returns
    its path."""
    return wheels.build_wheel(outdir, name, version, requires, requires_python,
                              metadata_sibling=False, **kw)


def build_sdist(outdir, name, version, requires=(), requires_python=">=3.7"):
    return wheels.build_sdist(outdir, name, version, requires, requires_python)


def wheel_metadata(path):
    """The bytes of the wheel's .dist-info/METADATA."""
    with zipfile.ZipFile(path) as zf:
        for n in zf.namelist():
            if n.count("/") == 1 and n.endswith(".dist-info/METADATA"):
                return zf.read(n)
    raise AssertionError("%s has no METADATA" % path)


def rezip(src, dst, drop=(), replace=None):
    """A copy of the zip src at dst without the members whose name ends
    with one of drop, and with replace's {suffix: bytes} swapped in."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            if any(info.filename.endswith(s) for s in drop):
                continue
            data = zin.read(info.filename)
            for suffix, new in (replace or {}).items():
                if info.filename.endswith(suffix):
                    data = new
            zout.writestr(info, data)
    return dst


def retar(src, dst, drop=(), replace=None):
    """The same for a .tar.gz sdist."""
    with tarfile.open(src) as tin:
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tout:
            for m in tin.getmembers():
                if any(m.name.endswith(s) for s in drop):
                    continue
                data = tin.extractfile(m).read() if m.isfile() else None
                for suffix, new in (replace or {}).items():
                    if m.name.endswith(suffix):
                        data = new
                if data is not None:
                    m.size = len(data)
                    tout.addfile(m, io.BytesIO(data))
                else:
                    tout.addfile(m)
    with open(dst, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
            gz.write(raw.getvalue())
    return dst


def padded_wheel(outdir, name, version, size):
    """A wheel of about size bytes (an incompressible payload, stored)."""
    payload = b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(size // 32 + 1))
    return wheels.build_wheel(outdir, name, version, (), ">=3.7", metadata_sibling=False,
                              extra_files={"%s/payload.bin" % wheels.module_name(name):
                                           payload[:size]})


# ---------------------------------------------------------------- the store

def hosted_rows(data_dir, index=None):
    """[{column: value}] of the hosted table (of index, when given), by
    filename."""
    path = os.path.join(data_dir, "larder.db")
    if not os.path.exists(path):
        return []
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    con.row_factory = sqlite3.Row
    try:
        q = "SELECT * FROM hosted"
        rows = con.execute(q + (" WHERE idx = ?" if index else "") + " ORDER BY filename",
                           (index,) if index else ()).fetchall()
        return [dict(r) for r in rows]
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise
    finally:
        con.close()


# What lives in a data dir and is not an upload on its way in.
_STORE_FILES = re.compile(r"^(larder\.db.*|.*\.shm|.*\.lock|fetch\.log|\.swept)$")


def upload_temps(data_dir):
    """{relative path: size} of the files in data_dir outside DATA/blobs
    (and DATA/quarantine) that are not the database, the shared tables,
    locks or logs: temp files, where an upload streams to (DATA/tmp, or
    anywhere else larder puts them)."""
    out = {}
    for root, dirs, files in os.walk(data_dir):
        rel = os.path.relpath(root, data_dir)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in ("blobs", "quarantine")]
        for n in files:
            if _STORE_FILES.match(n):
                continue
            p = os.path.join(root, n)
            try:
                out[os.path.relpath(p, data_dir)] = os.path.getsize(p)
            except OSError:
                pass
    return out


def store_state(data_dir):
    """What an upload that must leave nothing behind could change: the
    hosted rows, the blobs, the temp files."""
    return {"hosted": hosted_rows(data_dir), "blobs": sorted(stackmod.blobs(data_dir)),
            "temps": sorted(upload_temps(data_dir))}


def state_diff(before, now, labels=None):
    """What changed between two store_state()s, as text ("" when nothing
    did); labels names blobs by sha256 ({sha: "the refused wheel"})."""
    out = []
    for key in ("hosted", "blobs", "temps"):
        b, n = before[key], now[key]
        if key == "hosted":
            b = [tuple(sorted(r.items())) for r in b]
            n = [tuple(sorted(r.items())) for r in n]
        for what, items in (("added", [x for x in n if x not in b]),
                            ("gone", [x for x in b if x not in n])):
            for x in items:
                name = os.path.basename(x) if key == "blobs" else x
                out.append("%s %s: %s%s" % (key, what, x, " (%s)" % labels[name]
                                             if labels and name in labels else ""))
    return "\n".join(out)


def assert_unchanged(data_dir, before, labels=None, what="the store changed"):
    now = store_state(data_dir)
    diff = state_diff(before, now, labels)
    assert not diff, "%s:\n%s" % (what, diff)


def pids_with_files_under(data_dir, which=upload_temps):
    """Pids that have one of which(data_dir)'s files open (any mode)."""
    top = os.path.abspath(data_dir)
    wanted = {os.path.join(top, p) for p in which(data_dir)}
    out = []
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            fds = os.listdir("/proc/%s/fd" % n)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%s/fd/%s" % (n, fd)) in wanted:
                    out.append(int(n))
                    break
            except OSError:
                continue
    return sorted(out)
