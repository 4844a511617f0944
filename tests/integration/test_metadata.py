"""PEP 658 metadata larder makes when the upstream advertises none (issue 11):
from range reads of the upstream wheel, from the stored wheel, from the whole
file for an upstream that ignores Range, from a stored sdist's PKG-INFO (2.2
or later); pages that advertise it only where it can be served; pip, pdm and
poetry against such an upstream; and a Range on a file larder does not have.
Metadata read by range requests is provisional until the whole wheel is
verified (issue 21): never immutable, never with a strong ETag, never
advertised with a hash; synthesize_metadata = verified and = no.

Every test runs against a copy of the default wheels with every
"{file}.metadata" sibling removed, so the stand-in advertises no metadata at
all. The stand-in's counters tell range GETs ("ranges") from whole ones
("files" counts both).
"""

import glob
import gzip
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import tarfile
import threading
import time
import zipfile

import pytest

import stack as stackmod
import wheels

JSON = "application/vnd.pypi.simple.v1+json"


def bare_stack(tmp_path, wheel_dir, extra=None):
    """A started stack whose upstream advertises no metadata for anything;
    extra: more [larder] keys."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    d = str(tmp_path / "bare-wheels")
    shutil.copytree(wheel_dir, d)
    for p in glob.glob(os.path.join(d, "*.metadata")):
        os.unlink(p)
    st = stackmod.Stack(str(tmp_path / "stack"), d, cache_ttl=1,
                        larder_extra=extra)
    st.wheels = d
    st.start()
    return st


@pytest.fixture
def bare(tmp_path, wheel_dir):
    """A stack whose upstream advertises no metadata for anything."""
    st = bare_stack(tmp_path, wheel_dir)
    try:
        yield st
    finally:
        st.stop()


@pytest.fixture
def bare_verified(tmp_path, wheel_dir):
    """bare, with synthesize_metadata = verified."""
    st = bare_stack(tmp_path, wheel_dir, {"synthesize_metadata": "verified"})
    try:
        yield st
    finally:
        st.stop()


@pytest.fixture
def bare_no(tmp_path, wheel_dir):
    """bare, with synthesize_metadata = no."""
    st = bare_stack(tmp_path, wheel_dir, {"synthesize_metadata": "no"})
    try:
        yield st
    finally:
        st.stop()


def wheel_metadata(path):
    with zipfile.ZipFile(path) as zf:
        for n in zf.namelist():
            if n.count("/") == 1 and n.endswith(".dist-info/METADATA"):
                return zf.read(n)
    raise AssertionError("no METADATA in %s" % path)


def page(st, project, accept=JSON):
    r = st.get("/root/pypi/simple/%s/" % project, accept=accept)
    assert r.status == 200, r
    return r


def files_of(st, project):
    return {f["filename"]: f for f in page(st, project).json()["files"]}


def file_path(st, f, suffix=""):
    """/root/pypi/files/SHA/NAME[suffix] of a JSON page entry."""
    return "/root/pypi/files/" + f["url"].split("files/", 1)[1] + suffix


def full_gets(counters, name):
    """GETs of name that were not range requests."""
    return counters["files"].get(name, 0) - counters["ranges"].get(name, 0)


def store(st):
    """The hashes of the blobs in the store."""
    return {os.path.basename(p) for p in stackmod.blobs(st.data_dir)}


def add_dist(st, path_or_bytes, name):
    """Puts a distribution into the stand-in's directory."""
    dest = os.path.join(st.wheels, name)
    if isinstance(path_or_bytes, bytes):
        with open(dest, "wb") as f:
            f.write(path_or_bytes)
    else:
        shutil.copy(path_or_bytes, dest)
    return dest


def test_pages_advertise_what_can_be_served(bare):
    files = files_of(bare, "larder-demo-c")
    whl = files["larder_demo_c-2.0-py3-none-any.whl"]
    sdist = files["larder_demo_c-2.0.tar.gz"]
    # a wheel: larder can make it, but no hash is known yet
    assert whl["core-metadata"] is True
    # an sdist that is not stored: nothing to read PKG-INFO from
    assert sdist["core-metadata"] is False
    html = page(bare, "larder-demo-c", accept="text/html").body.decode()
    line = [l for l in html.splitlines() if "2.0-py3-none-any.whl<" in l][0]
    assert 'data-core-metadata="true"' in line
    assert 'data-dist-info-metadata="true"' in line
    line = [l for l in html.splitlines() if "2.0.tar.gz<" in l][0]
    assert "core-metadata" not in line


def test_made_by_range_reads_exactly(bare, dists):
    bare.standin.reset()
    made = {}
    for project in ("larder-demo-a", "larder-demo-b", "larder-demo-c"):
        for name, f in files_of(bare, project).items():
            if not name.endswith(".whl"):
                continue
            r = bare.get(file_path(bare, f, ".metadata"))
            assert r.status == 200, (name, r.status, r.body)
            assert r.body == wheel_metadata(dists[name].path), name
            assert r.header("Content-Type").startswith("text/plain")
            made[name] = hashlib.sha256(r.body).hexdigest()
    c = bare.standin.counters()
    for name in made:
        # one range GET (the tail holds a small wheel's METADATA), no
        # whole download
        assert c["ranges"].get(name) == 1, (name, c)
        assert full_gets(c, name) == 0, (name, c)
    # again: a lookup
    bare.standin.reset()
    f = files_of(bare, "larder-demo-c")["larder_demo_c-2.0-py3-none-any.whl"]
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT"
    assert bare.standin.counters()["files"] == {}
    # made from bytes nobody verified: the page never says its hash
    time.sleep(1.2)
    for project in ("larder-demo-a", "larder-demo-c"):
        for name, f in files_of(bare, project).items():
            if name in made:
                assert f["core-metadata"] is True, (name, f)
    # once the wheel is stored (verified), the page says the hash
    name = "larder_demo_c-2.0-py3-none-any.whl"
    f = files_of(bare, "larder-demo-c")[name]
    assert bare.get(file_path(bare, f)).status == 200
    time.sleep(1.2)
    assert files_of(bare, "larder-demo-c")[name]["core-metadata"] == {
        "sha256": made[name]}
    html = page(bare, "larder-demo-c", accept="text/html").body.decode()
    assert 'data-core-metadata="sha256=%s"' % made[name] in html


def test_ten_concurrent_requests_one_set_of_reads(bare, dists):
    name = "larder_demo_c-2.0-py3-none-any.whl"
    path = file_path(bare, files_of(bare, "larder-demo-c")[name], ".metadata")
    # each range read waits a little, so the ten overlap
    bare.standin.control(faults=[{"match": name, "kind": "stall",
                                  "seconds": 0.5}])
    bare.standin.reset()
    out = [None] * 10

    def get(i):
        out[i] = bare.get(path)

    ts = [threading.Thread(target=get, args=(i,)) for i in range(10)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    want = wheel_metadata(dists[name].path)
    assert all(r.status == 200 and r.body == want for r in out), out
    c = bare.standin.counters()
    assert c["ranges"].get(name) == 1, c
    assert full_gets(c, name) == 0, c


def test_from_the_stored_wheel(bare, dists):
    name = "larder_demo_c-2.0-py3-none-any.whl"
    f = files_of(bare, "larder-demo-c")[name]
    r = bare.get(file_path(bare, f))
    assert r.status == 200 and r.body == open(dists[name].path, "rb").read()
    bare.standin.reset()
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.body == wheel_metadata(dists[name].path)
    assert bare.standin.counters()["files"] == {}


def test_upstream_ignoring_range(bare, tmp_path):
    # wheels bigger than the tail larder asks for: a 200 with all of a
    # small one answers the range read as well as a 206 would
    names = []
    for v in ("1.0", "2.0"):
        p = wheels.build_wheel(str(tmp_path), "larder-demo-big", v,
                               metadata_sibling=False,
                               extra_files={"larder_demo_big/b.bin":
                                            os.urandom(300000)})
        add_dist(bare, p, os.path.basename(p))
        names.append((os.path.basename(p), p))
    bare.standin.control(ignore_range=True)
    files = files_of(bare, "larder-demo-big")
    (name, path), (other, other_path) = names
    bare.standin.reset()
    r = bare.get(file_path(bare, files[name], ".metadata"))
    assert r.status == 200 and r.body == wheel_metadata(path)
    c = bare.standin.counters()
    # the range GET was answered whole, cut at once, then one download
    assert c["ranges"].get(name) == 1 and c["files"].get(name) == 2, c
    assert files[name]["hashes"]["sha256"] in store(bare)
    assert "ignores Range" in bare.larder.log_text()
    # the install takes the stored file: no further download
    r = bare.get(file_path(bare, files[name]))
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT"
    # the host is remembered: another wheel goes straight to the download
    r = bare.get(file_path(bare, files[other], ".metadata"))
    assert r.status == 200 and r.body == wheel_metadata(other_path)
    c = bare.standin.counters()
    assert c["ranges"].get(other, 0) == 0 and c["files"].get(other) == 1, c


def big_metadata_wheel(tmp_path):
    """A wheel whose METADATA is over 16 MiB (stored, so it takes that many
    bytes to read)."""
    p = wheels.build_wheel(str(tmp_path), "larder-demo-huge", "1.0",
                           metadata_sibling=False)
    out = str(tmp_path / "huge.whl")
    desc = b"Description: " + b"x" * (17 << 20) + b"\n"
    with zipfile.ZipFile(p) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/METADATA"):
                data = data.replace(b"License: MIT\n", b"License: MIT\n" + desc)
                info.compress_type = zipfile.ZIP_STORED
            dst.writestr(info, data)
    return out, os.path.basename(p)


def test_wheel_over_the_cap(bare, tmp_path):
    path, name = big_metadata_wheel(tmp_path)
    add_dist(bare, path, name)
    f = files_of(bare, "larder-demo-huge")[name]
    before = store(bare)
    bare.standin.reset()
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 502, r
    assert b"larger than" in r.body
    c = bare.standin.counters()
    assert full_gets(c, name) == 0, c
    assert store(bare) == before


def lying_wheel(tmp_path):
    """A wheel whose central directory points METADATA's entry at the first
    file's local header (overlapping entries)."""
    p = wheels.build_wheel(str(tmp_path), "larder-demo-liar", "1.0",
                           metadata_sibling=False)
    data = bytearray(open(p, "rb").read())
    pos = data.rfind(b"PK\x05\x06")
    cd = struct.unpack_from("<I", data, pos + 16)[0]
    while data[cd:cd + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack_from("<HHH", data, cd + 28)
        if data[cd + 46:cd + 46 + n].endswith(b".dist-info/METADATA"):
            struct.pack_into("<I", data, cd + 42, 0)
        cd += 46 + n + m + k
    return bytes(data), os.path.basename(p)


def test_hostile_wheel_is_a_502(bare, tmp_path):
    data, name = lying_wheel(tmp_path)
    add_dist(bare, data, name)
    f = files_of(bare, "larder-demo-liar")[name]
    before = store(bare)
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 502, r
    assert b"overlap" in r.body or b"another local name" in r.body, r.body
    assert store(bare) == before


def sdist_bytes(name, version, metadata_version):
    base = "%s-%s" % (name.replace("-", "_"), version)
    meta = ("Metadata-Version: %s\nName: %s\nVersion: %s\n"
            "Summary: an sdist\n" % (metadata_version, name, version)).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for member, body in (("PKG-INFO", meta),
                             ("pyproject.toml", b"[project]\n")):
            ti = tarfile.TarInfo("%s/%s" % (base, member))
            ti.size = len(body)
            ti.mtime = 1704164645
            tf.addfile(ti, io.BytesIO(body))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=1704164645) as gz:
        gz.write(raw.getvalue())
    return out.getvalue(), base + ".tar.gz", meta


def test_sdist_metadata_from_a_stored_sdist(bare):
    new, new_name, new_meta = sdist_bytes("larder-demo-sd", "1.0", "2.2")
    old, old_name, _ = sdist_bytes("larder-demo-sd", "0.9", "2.1")
    add_dist(bare, new, new_name)
    add_dist(bare, old, old_name)
    files = files_of(bare, "larder-demo-sd")
    assert files[new_name]["core-metadata"] is False
    r = bare.get(file_path(bare, files[new_name], ".metadata"))
    assert r.status == 404, r  # not stored: nothing to read it from
    for n in (new_name, old_name):
        assert bare.get(file_path(bare, files[n])).status == 200
    time.sleep(1.2)
    files = files_of(bare, "larder-demo-sd")
    want = hashlib.sha256(new_meta).hexdigest()
    assert files[new_name]["core-metadata"] == {"sha256": want}
    # 2.1 may leave fields to the build: not advertised, not served
    assert files[old_name]["core-metadata"] is False
    bare.standin.reset()
    r = bare.get(file_path(bare, files[new_name], ".metadata"))
    assert r.status == 200 and r.body == new_meta
    r = bare.get(file_path(bare, files[old_name], ".metadata"))
    assert r.status == 404 and b"Metadata-Version 2.1" in r.body
    assert bare.standin.counters()["files"] == {}


def assert_fetches(st, installed):
    """At most one whole download per file, and none of a file that was
    not installed: what the resolver read came by range reads."""
    c = st.standin.counters()
    for name in set(c["files"]) | set(c["ranges"]):
        if name.endswith(".metadata"):
            continue
        assert full_gets(c, name) <= 1, (name, c)
        if full_gets(c, name) and installed is not None:
            assert name in installed, (name, c)
    return c


def test_pip_install(bare, new_venv):
    venv = new_venv()
    bare.standin.reset()
    rc, out = stackmod.pip_install(venv, bare.url, ["larder-demo-a"])
    assert rc == 0, out
    got = stackmod.installed(venv)
    assert got == {"larder-demo-a": "1.1", "larder-demo-b": "1.0",
                   "larder-demo-c": "2.0"}, got
    assert_fetches(bare, {"larder_demo_a-1.1-py3-none-any.whl",
                          "larder_demo.b-1.0-py3-none-any.whl",
                          "larder_demo_c-2.0-py3-none-any.whl"})
    # pip 23.0.1 (Debian 12's) reads PEP 658 metadata from HTML pages
    # only (in JSON it knows only the pre-PEP 714 key, which larder does
    # not send): what it asked for, it got
    assert ".metadata 50" not in bare.larder.log_text()
    assert ".metadata 40" not in bare.larder.log_text()


# What pip 23.0.1 (Debian 12's) sends for a page: JSON first, HTML at q=0.1.
PIP23_ACCEPT = ("application/vnd.pypi.simple.v1+json, "
                "application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01")


def served(st, pattern):
    """The paths of the GETs nginx answered 200 matching pattern (a regex
    of the path's end)."""
    with open(st.nginx.access_log, errors="replace") as f:
        return re.findall(r'"GET (\S*%s) HTTP/1\.[01]" 200 ' % pattern,
                          f.read())


def test_pip23_downloads_each_wheel_once(stack, new_venv):
    """pip 22.3 to 23.1 read PEP 658 metadata only from HTML pages and from
    the pre-PEP 714 JSON key, and, given it, download every wheel they
    install twice (pip #11847, fixed with the key's parsing in 23.2; see
    docs/performance.md). pypi.org keeps it from them (its JSON names the
    legacy key "data-dist-info-metadata", which they do not read); larder
    does too: Debian 12's pip 23.0.1 gets the JSON page, asks for no
    .metadata and fetches each wheel from larder once."""
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-demo-a"])
    assert rc == 0, out
    wheels_got = served(stack, r"\.whl")
    assert len(wheels_got) == 3 == len(set(wheels_got)), wheels_got
    assert served(stack, r"\.metadata") == []
    r = stack.get("/root/pypi/simple/larder-demo-a/", accept=PIP23_ACCEPT,
                  headers={"User-Agent": "pip/23.0.1 {}"})
    assert r.header("Content-Type") == JSON, r.headers
    for f in r.json()["files"]:
        assert "dist-info-metadata" not in f, f
        assert f["core-metadata"]["sha256"], f


def tool_env(tmp_path):
    home = str(tmp_path / "home")
    os.makedirs(home, exist_ok=True)
    env = stackmod.clean_env({
        "HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "PDM_CHECK_UPDATE": "false", "NO_COLOR": "1",
        "POETRY_CONFIG_DIR": os.path.join(home, "poetry-config"),
        "POETRY_CACHE_DIR": os.path.join(home, "poetry-cache"),
        "POETRY_VIRTUALENVS_IN_PROJECT": "true",
    })
    return env


def run(cmd, env, cwd, timeout=240):
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def need(tool):
    path = shutil.which(tool)
    if not path:
        pytest.skip("%s is not installed (contrib/deps.sh test)" % tool)
    return path


def test_pdm_install(bare, tmp_path):
    pdm = need("pdm")
    root = str(tmp_path / "proj")
    os.makedirs(root)
    with open(os.path.join(root, "pyproject.toml"), "w") as f:
        f.write('[project]\nname = "consumer"\nversion = "0.1"\n'
                'requires-python = ">=3.7"\n'
                'dependencies = ["larder-demo-a"]\n\n'
                '[[tool.pdm.source]]\nname = "pypi"\nurl = "%s"\n'
                'verify_ssl = false\n' % bare.url)
    env = tool_env(tmp_path)
    bare.standin.reset()
    rc, out = run([pdm, "lock"], env, root)
    assert rc == 0, out
    lock = open(os.path.join(root, "pdm.lock")).read()
    for n in ("larder-demo-a", "larder-demo-b", "larder-demo-c"):
        assert n.replace("-b", ".b") in lock or n in lock, lock
    rc, out = run([pdm, "sync", "--no-self"], env, root)
    assert rc == 0, out
    assert_fetches(bare, {"larder_demo_a-1.1-py3-none-any.whl",
                          "larder_demo.b-1.0-py3-none-any.whl",
                          "larder_demo_c-2.0-py3-none-any.whl",
                          "larder_demo_c-2.0.tar.gz"})


def test_poetry_install(bare, tmp_path):
    poetry = need("poetry")
    root = str(tmp_path / "proj")
    os.makedirs(os.path.join(root, "consumer"))
    open(os.path.join(root, "consumer", "__init__.py"), "w").close()
    with open(os.path.join(root, "pyproject.toml"), "w") as f:
        f.write('[tool.poetry]\nname = "consumer"\nversion = "0.1"\n'
                'description = ""\nauthors = ["t <t@example.org>"]\n\n'
                '[tool.poetry.dependencies]\npython = ">=3.7"\n'
                'larder-demo-a = "*"\n\n'
                '[[tool.poetry.source]]\nname = "larder"\nurl = "%s"\n'
                'default = true\n\n'
                '[build-system]\nrequires = ["poetry-core"]\n'
                'build-backend = "poetry.core.masonry.api"\n' % bare.url)
    env = tool_env(tmp_path)
    bare.standin.reset()
    rc, out = run([poetry, "lock", "-n"], env, root)
    assert rc == 0, out
    rc, out = run([poetry, "install", "-n", "--no-root"], env, root)
    assert rc == 0, out
    # poetry 1.3 reads no PEP 658 metadata: it downloads candidates to
    # inspect them (a 1.0 it does not install, too), each once upstream
    assert_fetches(bare, None)


def big_wheel(st, tmp_path, version="1.0", size=300000):
    p = wheels.build_wheel(str(tmp_path), "larder-demo-rng", version,
                           metadata_sibling=False,
                           extra_files={"larder_demo_rng/b.bin":
                                        os.urandom(size)})
    add_dist(st, p, os.path.basename(p))
    return os.path.basename(p), open(p, "rb").read()


def test_range_on_a_cold_file(bare, tmp_path):
    name, data = big_wheel(bare, tmp_path)
    f = files_of(bare, "larder-demo-rng")[name]
    bare.standin.reset()
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=-2000"})
    assert r.status == 206, r
    assert r.body == data[-2000:]
    assert r.header("Content-Range") == "bytes %d-%d/%d" % (
        len(data) - 2000, len(data) - 1, len(data))
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=100-1099"})
    assert r.status == 206 and r.body == data[100:1100], r
    c = bare.standin.counters()
    assert c["ranges"].get(name) == 2 and full_gets(c, name) == 0, c
    assert f["hashes"]["sha256"] not in store(bare)
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=%d-" % len(data)})
    assert r.status == 416, r
    assert r.header("Content-Range") == "bytes */%d" % len(data)
    # the whole file still installs, downloaded once
    r = bare.get(file_path(bare, f))
    assert r.status == 200 and r.body == data
    assert full_gets(bare.standin.counters(), name) == 1


def test_range_during_a_download(bare, tmp_path):
    name, data = big_wheel(bare, tmp_path)
    f = files_of(bare, "larder-demo-rng")[name]
    bare.standin.control(rate=150000)  # two seconds for the whole file
    bare.standin.reset()
    whole = []
    t = threading.Thread(target=lambda: whole.append(bare.get(file_path(bare, f))))
    t.start()
    time.sleep(0.5)
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=0-9999"})
    t.join()
    assert r.status == 206 and r.body == data[:10000], r
    assert whole[0].status == 200 and whole[0].body == data
    c = bare.standin.counters()
    # served from the temp file: no range GET, one download
    assert c["ranges"].get(name, 0) == 0 and full_gets(c, name) == 1, c


def test_range_from_an_upstream_ignoring_range(bare, tmp_path):
    name, data = big_wheel(bare, tmp_path)
    f = files_of(bare, "larder-demo-rng")[name]
    bare.standin.control(ignore_range=True)
    bare.standin.reset()
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=-2000"})
    assert r.status == 206 and r.body == data[-2000:], r
    c = bare.standin.counters()
    # the relayed range came back whole and was cut; then one download
    assert c["files"].get(name) == 2 and c["ranges"].get(name) == 1, c
    assert f["hashes"]["sha256"] in store(bare)


# Issue 21: what larder vouches for.

def same_size_builds(tmp_path):
    """Two builds of metapkg 1.0 of the same size (every entry stored):
    the genuine one requires goodpkg, the other evilpkg. Returns their
    paths and the wheel's name."""
    p = wheels.build_wheel(str(tmp_path / "src"), "metapkg", "1.0",
                           requires=["goodpkg"], metadata_sibling=False)
    out = {}
    for which, dep in (("genuine", b"goodpkg"), ("evil", b"evilpkg")):
        dest = str(tmp_path / which / os.path.basename(p))
        os.makedirs(os.path.dirname(dest))
        with zipfile.ZipFile(p) as src, zipfile.ZipFile(dest, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename.endswith("/METADATA"):
                    data = data.replace(b"goodpkg", dep)
                info.compress_type = zipfile.ZIP_STORED
                dst.writestr(info, data)
        out[which] = dest
    assert os.path.getsize(out["genuine"]) == os.path.getsize(out["evil"])
    return out["genuine"], out["evil"], os.path.basename(p)


def metric(st, name):
    r = st.get("/metrics")
    assert r.status == 200, r
    for line in r.body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no %s in /metrics" % name)


def assert_not_vouched(r, sha=None):
    """r carries nothing that says its bytes are verified."""
    cc = r.header("Cache-Control") or ""
    etag = r.header("ETag")
    assert "immutable" not in cc, cc
    assert etag is None or etag.startswith("W/"), etag
    if sha:
        assert sha not in (etag or ""), etag


def test_metadata_from_a_lying_files_host(bare, tmp_path):
    genuine, evil, name = same_size_builds(tmp_path)
    add_dist(bare, genuine, name)
    f = files_of(bare, "metapkg")[name]
    sha = f["hashes"]["sha256"]
    assert f["core-metadata"] is True
    # the files host serves the other build, same size, for the wheel
    bare.standin.control(faults=[{"match": name, "kind": "swap",
                                  "file": evil}])
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200, r
    assert b"Requires-Dist: evilpkg" in r.body
    # provisional: marked, short-lived, no validator, never immutable
    assert_not_vouched(r)
    assert r.header("X-Larder-Metadata") == "provisional"
    cc = r.header("Cache-Control")
    assert "max-age=1" in cc and "no-store" not in cc, cc
    # a page never advertises the hash of unverified metadata
    time.sleep(1.2)
    assert files_of(bare, "metapkg")[name]["core-metadata"] is True
    html = page(bare, "metapkg", accept="text/html").body.decode()
    assert "sha256=" + hashlib.sha256(r.body).hexdigest() not in html
    # the wheel itself is refused
    before = store(bare)
    r = bare.get(file_path(bare, f))
    assert r.status == 502 or not r.complete, r
    assert sha not in store(bare)
    assert metric(bare, "larder_metadata_mismatch_total") == 0
    # the host tells the truth: the wheel is fetched and verified, and
    # the metadata read again from it replaces the provisional one
    bare.standin.control(faults=[])
    r = bare.get(file_path(bare, f))
    assert r.status == 200 and r.body == open(genuine, "rb").read(), r
    # the client can have the last byte before the fill has published the
    # wheel and read its metadata again (a loaded machine shows it)
    assert stackmod.wait_for(lambda: sha in store(bare))
    assert stackmod.wait_for(
        lambda: metric(bare, "larder_metadata_mismatch_total") == 1)
    log = bare.larder.log_text()
    assert "METADATA MISMATCH" in log and name in log, log[-2000:]
    want = wheel_metadata(genuine)
    want_sha = hashlib.sha256(want).hexdigest()
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.body == want, r
    assert b"evilpkg" not in r.body
    # now verified: served as any verified file is
    assert "immutable" in r.header("Cache-Control"), r.header("Cache-Control")
    assert r.header("ETag") == '"%s"' % want_sha
    assert r.header("X-Larder-Metadata") != "provisional"
    # and the page says its hash
    time.sleep(1.2)
    assert files_of(bare, "metapkg")[name]["core-metadata"] == {
        "sha256": want_sha}
    assert metric(bare, "larder_metadata_mismatch_total") == 1
    del before


def test_synthesize_metadata_verified(bare_verified, dists, tmp_path):
    st = bare_verified
    name = "larder_demo_c-2.0-py3-none-any.whl"
    f = files_of(st, "larder-demo-c")[name]
    assert f["core-metadata"] is True
    st.standin.reset()
    r = st.get(file_path(st, f, ".metadata"))
    assert r.status == 200 and r.body == wheel_metadata(dists[name].path), r
    # read from the whole wheel, fetched and verified: no range reads
    c = st.standin.counters()
    assert c["ranges"].get(name, 0) == 0 and full_gets(c, name) == 1, c
    assert f["hashes"]["sha256"] in store(st)
    assert "immutable" in r.header("Cache-Control")
    assert r.header("ETag") == '"%s"' % hashlib.sha256(r.body).hexdigest()
    # a lying files host: no metadata at all, nothing stored
    genuine, evil, mname = same_size_builds(tmp_path)
    add_dist(st, genuine, mname)
    mf = files_of(st, "metapkg")[mname]
    st.standin.control(faults=[{"match": mname, "kind": "swap",
                                "file": evil}])
    before = store(st)
    r = st.get(file_path(st, mf, ".metadata"))
    assert r.status == 502, r
    assert b"evilpkg" not in r.body
    assert store(st) == before


def test_synthesize_metadata_no(bare_no, dists):
    st = bare_no
    name = "larder_demo_c-2.0-py3-none-any.whl"
    f = files_of(st, "larder-demo-c")[name]
    # nothing advertised, a 404 as PyPI answers, and upstream not asked
    assert f["core-metadata"] is False, f
    html = page(st, "larder-demo-c", accept="text/html").body.decode()
    line = [l for l in html.splitlines() if "2.0-py3-none-any.whl<" in l][0]
    assert "core-metadata" not in line
    st.standin.reset()
    r = st.get(file_path(st, f, ".metadata"))
    assert r.status == 404, r
    assert b"synthesize_metadata" in r.body
    assert st.standin.counters()["files"] == {}
    # not even from the stored wheel
    assert st.get(file_path(st, f)).status == 200
    r = st.get(file_path(st, f, ".metadata"))
    assert r.status == 404, r


def test_range_of_a_cold_file_is_not_vouched_for(bare, tmp_path):
    name, data = big_wheel(bare, tmp_path)
    f = files_of(bare, "larder-demo-rng")[name]
    sha = f["hashes"]["sha256"]
    bare.standin.control(faults=[{"match": name, "kind": "corrupt",
                                  "at": 0}])
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=0-63"})
    assert r.status == 206, r
    assert r.body != data[:64]  # relayed as the host sent them
    assert_not_vouched(r, sha)
    assert "no-store" in r.header("Cache-Control")
    # the whole file as a range: verified first, so a 502, nothing stored
    before = store(bare)
    r = bare.get(file_path(bare, f),
                 headers={"Range": "bytes=0-%d" % (len(data) - 1)})
    assert r.status == 502, r
    assert store(bare) == before and sha not in store(bare)
    # the host tells the truth: a whole-file range is the verified file
    bare.standin.control(faults=[])
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=0-"})
    assert r.status in (200, 206) and r.body == data, r
    assert sha in store(bare)


def test_provisional_metadata_read_again_when_asked(bare, tmp_path):
    """The wheel stored by a path that does not read its metadata again (a
    Range over all of it): the next request for the metadata does."""
    genuine, evil, name = same_size_builds(tmp_path)
    add_dist(bare, genuine, name)
    f = files_of(bare, "metapkg")[name]
    bare.standin.control(faults=[{"match": name, "kind": "swap",
                                  "file": evil}])
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and b"evilpkg" in r.body, r
    assert r.header("X-Larder-Metadata") == "provisional"
    bare.standin.control(faults=[])
    data = open(genuine, "rb").read()
    r = bare.get(file_path(bare, f), headers={"Range": "bytes=0-"})
    assert r.status in (200, 206) and r.body == data, r
    assert f["hashes"]["sha256"] in store(bare)
    assert metric(bare, "larder_metadata_mismatch_total") == 0
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.body == wheel_metadata(genuine), r
    assert "immutable" in r.header("Cache-Control")
    assert r.header("ETag") == '"%s"' % hashlib.sha256(r.body).hexdigest()
    assert metric(bare, "larder_metadata_mismatch_total") == 1
    assert "METADATA MISMATCH" in bare.larder.log_text()


def test_failed_range_reads_do_not_outlive_the_verified_wheel(bare, tmp_path):
    """Range reads of a lying host that fail (other bytes of the same size,
    no zip at all) are a 502; once the verified wheel is stored, the
    metadata is read from it, not refused for good."""
    genuine, _, name = same_size_builds(tmp_path)
    junk = str(tmp_path / "junk.bin")
    with open(junk, "wb") as out:
        out.write(b"\0" * os.path.getsize(genuine))
    add_dist(bare, genuine, name)
    f = files_of(bare, "metapkg")[name]
    bare.standin.control(faults=[{"match": name, "kind": "swap",
                                  "file": junk}])
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 502, r
    bare.standin.control(faults=[])
    r = bare.get(file_path(bare, f))
    assert r.status == 200 and r.body == open(genuine, "rb").read(), r
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.body == wheel_metadata(genuine), r
    assert "immutable" in r.header("Cache-Control")


def lying_metadata_sibling(st, tmp_path):
    """metapkg 1.0 (the genuine build) with a .metadata beside it that says
    evilpkg, advertised with no hash. Returns the wheel's path and name,
    the lie and the wheel's true METADATA."""
    genuine, _, name = same_size_builds(tmp_path)
    want = wheel_metadata(genuine)
    lie = want.replace(b"goodpkg", b"evilpkg")
    assert lie != want
    add_dist(st, genuine, name)
    add_dist(st, lie, name + ".metadata")
    st.standin.control(meta_no_hash=True)
    return genuine, name, lie, want


def assert_provisional(r):
    assert_not_vouched(r)
    assert r.header("X-Larder-Metadata") == "provisional", r.headers
    cc = r.header("Cache-Control") or ""
    assert "max-age=1" in cc and "no-store" not in cc, cc


def test_upstream_metadata_without_a_hash_is_provisional(bare, tmp_path):
    """The upstream advertises metadata with no hash (core-metadata: true)
    and serves a .metadata that lies about the wheel: larder passes it on as
    provisional until the verified wheel says what its metadata is."""
    genuine, name, lie, want = lying_metadata_sibling(bare, tmp_path)
    f = files_of(bare, "metapkg")[name]
    assert f["core-metadata"] is True, f
    # from the upstream, then from the store: provisional both times
    for _ in range(2):
        r = bare.get(file_path(bare, f, ".metadata"))
        assert r.status == 200 and r.body == lie, r
        assert_provisional(r)
    assert bare.standin.counters()["metadata"].get(name) == 1
    # no page advertises its hash
    time.sleep(1.2)
    assert files_of(bare, "metapkg")[name]["core-metadata"] is True
    html = page(bare, "metapkg", accept="text/html").body.decode()
    assert hashlib.sha256(lie).hexdigest() not in html
    assert metric(bare, "larder_metadata_mismatch_total") == 0
    # the wheel is fetched and verified: its METADATA replaces the lie
    r = bare.get(file_path(bare, f))
    assert r.status == 200 and r.body == open(genuine, "rb").read(), r
    assert metric(bare, "larder_metadata_mismatch_total") == 1
    log = bare.larder.log_text()
    assert "METADATA MISMATCH" in log and name in log, log[-2000:]
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.body == want, r
    assert "immutable" in r.header("Cache-Control"), r.headers
    assert r.header("ETag") == '"%s"' % hashlib.sha256(want).hexdigest()
    assert r.header("X-Larder-Metadata") != "provisional"
    assert bare.standin.counters()["metadata"].get(name) == 1
    assert metric(bare, "larder_metadata_mismatch_total") == 1


def test_upstream_metadata_with_its_hash_stays_verified(bare, tmp_path):
    """The same .metadata advertised with its hash, as PyPI does: the page
    vouched for it, so it is served as verified from the first answer."""
    genuine, name, lie, want = lying_metadata_sibling(bare, tmp_path)
    bare.standin.control(meta_no_hash=False)
    f = files_of(bare, "metapkg")[name]
    lie_sha = hashlib.sha256(lie).hexdigest()
    assert f["core-metadata"] == {"sha256": lie_sha}, f
    r = bare.get(file_path(bare, f, ".metadata"))
    assert r.status == 200 and r.body == lie, r
    assert "immutable" in (r.header("Cache-Control") or ""), r.headers
    assert r.header("X-Larder-Metadata") != "provisional"


def tier_in_front(st, workdir):
    """Larder A, behind nginx, whose upstream is larder st's root/pypi.
    Returns (larder, nginx), started."""
    a = stackmod.Larder(os.path.join(workdir, "larder"), st.standin.port,
                        files_port=st.standin.files_port, cache_ttl=1)
    with open(a.conf) as f:
        text = f.read()
    text = re.sub(r"(?m)^upstream = .*$",
                  "upstream = " + st.index_url(), text, count=1)
    with open(a.conf, "w") as f:
        f.write(text)
    n = stackmod.Nginx(os.path.join(workdir, "nginx"), a.port, a.data_dir)
    try:
        a.start()
        n.start()
    except BaseException:
        stackmod.stop_all(n, a)
        raise
    return a, n


def test_tier_passes_provisional_metadata_on_as_provisional(bare, tmp_path):
    """A -> B -> a files host that lies: B's metadata made from range reads
    is provisional, and so it is at A, until A's own verified wheel."""
    genuine, evil, name = same_size_builds(tmp_path)
    add_dist(bare, genuine, name)
    a, n = tier_in_front(bare, str(tmp_path / "a"))
    try:
        bare.standin.control(faults=[{"match": name, "kind": "swap",
                                      "file": evil}])
        r = stackmod.http("%s/root/pypi/simple/metapkg/" % n.base,
                          headers={"Accept": JSON})
        assert r.status == 200, r
        f = {x["filename"]: x for x in r.json()["files"]}[name]
        assert f["core-metadata"] is True, f
        path = file_path(bare, f, ".metadata")
        for _ in range(2):
            r = stackmod.http(n.base + path)
            assert r.status == 200 and b"Requires-Dist: evilpkg" in r.body, r
            assert_provisional(r)
        bare.standin.control(faults=[])
        r = stackmod.http(n.base + file_path(bare, f))
        assert r.status == 200 and r.body == open(genuine, "rb").read(), r
        want = wheel_metadata(genuine)
        r = stackmod.http(n.base + path)
        assert r.status == 200 and r.body == want, r
        assert "immutable" in r.header("Cache-Control"), r.headers
        assert r.header("ETag") == '"%s"' % hashlib.sha256(want).hexdigest()
        assert "METADATA MISMATCH" in a.log_text()
    finally:
        stackmod.stop_all(n, a)
