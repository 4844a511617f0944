#!/usr/bin/python3
"""The benchmark corpus: a realistic upstream for larder's benchmarks.

build(outdir, smoke=False) writes, under outdir:

  wheels/       the distributions, as tests/integration/standin.py serves them
                (a "{file}.metadata" sibling = PEP 658 metadata, "{file}.yanked"
                = a yank reason)
  corpus.json   what build() returns (below)

and is idempotent: when outdir/corpus.json exists with the same "params" (the
corpus format and a hash of the tables in this file) and its files are all
there, it is reused; otherwise the corpus is built in a temporary directory
beside outdir and renamed into place. Everything is deterministic (fixed
mtimes, payloads from SHAKE-256 of the name and version), so a rebuild gives
the same sha256s.

The full corpus (11-16 s on 2 CPUs, 178 MB, 37 projects, 9476 files):

  * 33 projects that `pip install --only-binary :all: <install_set>`
    installs, a DAG up to four levels deep: a web stack (bench-web ->
    bench-http -> charset/idna/urllib/certifi-like leaves, templates,
    routing, markup), a data stack (bench-frames, bench-plot, bench-stats on
    bench-numeric, dateutil -> six, ...), a CLI stack (bench-tool -> bench-cli,
    bench-rich -> bench-markdown-it -> bench-mdurl, ...). Each has a few
    versions; Requires-Dist bounds (bench-http>=2,<3, bench-idna<4,
    bench-rich<14, ...), a yanked newest bench-urllib and pre-releases make
    pip pick something other than the newest upload in places. Two projects
    are only named by dependencies under markers that are false on Linux
    with Python >= 3.8 (bench-colors, bench-typing-ext): pip skips them.
    Wheels are py3-none-any with an incompressible payload stored
    uncompressed: 20 KiB to 2 MiB, bench-stats 6 MiB, bench-numeric 8 MiB.
    Every version also has an sdist (pip skips it under --only-binary).
  * Page projects: bench-numeric's PEP 691 page is about 2.5 MB, those of
    bench-frames, bench-stats and bench-pillow about 0.5 MB: a long release
    history of tiny platform wheels (cpXY-cpXY-manylinux/musllinux/macosx/win)
    pip skips as incompatible, with only the newest final version carrying a
    py3-none-any wheel (and, there, no linux x86_64 wheel pip might prefer).
  * bench-big: one 90 MiB wheel, not installed (the throughput workload).
  * bench-slow: 50 wheels of one size (250 KiB, versions 1.10.0 .. 1.59.0,
    no sdists, no PEP 658 siblings), not installed: the slow-misses
    workload throttles the upstream so that each takes a set time. They
    add about 13 MB and well under a second to the build.
  * PEP 658 siblings on the installable wheels of every project but
    bench-six, bench-kiwi and bench-cycler (as on PyPI, a few have none),
    and on bench-big's; never on the platform filler wheels.

The smoke corpus (smoke=True, 0.5 s, 3 MB): the same shape in small,
bench-app -> bench-http -> bench-charset/bench-idna and bench-numeric (a ~50 KB
page; other pages 2-5 KB), a 2 MiB bench-big, 16 wheels with PEP 658 siblings,
and 5 bench-slow wheels of 250 KiB.

corpus.json / the returned dict:
  params           {"format", "smoke", "spec_sha256"}: what reuse compares
  wheel_dir        absolute path of wheels/
  projects, files  number of projects, of distribution files (.whl, .tar.gz)
  install_set      the top-level requirements to pip install
  install_closure  every project pip installs (breadth-first from install_set)
  install_versions {project: the version pip picks}
  big_wheel        {project, filename, size, sha256, path}
  slow_files       the bench-slow wheels, [{project, filename, size, sha256}],
                   all of one size (to the byte or nearly), oldest first
  metadata_wheels  every wheel with a .metadata sibling, {project, filename,
                   sha256, metadata_sha256}; the ones pip installs first
  pages            {project: bytes of its PEP 691 JSON page}, measured on an
                   in-process stand-in (files host "localhost", a 5-digit port)
  swarm_projects   warm pages for the swarm: a ~0.5 MB one, a small one and
                   the largest
  swarm_pages      the same as {"mid": ..., "small": ..., "large": ...}
  largest_page_kib, big_wheel_mib

The closure is computed by resolving the tables the way pip does (newest
version, not yanked nor a pre-release, with a py3-none-any wheel, meeting
every specifier of the dependents; markers evaluated for Linux and Python
3.11). With these tables pip 23.0.1 (Debian 12's) installs exactly that,
fetching the 33 pages and the 33 wheels and nothing else (no backtracking).

Usage: contrib/bench/corpus.py OUTDIR [--smoke]   prints corpus.json's content
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import wheels  # noqa: E402

FORMAT = 3  # bump when the layout or the meaning of corpus.json changes
KIB = 1024
MIB = 1024 * 1024
JSON_TYPE = "application/vnd.pypi.simple.v1+json"

normalise = wheels.normalise  # PEP 503 names, for the users of the corpus

# ---------------------------------------------------------------- the tables
#
# A project: name -> {
#   "versions": [oldest, ..., newest]  versions with a py3-none-any wheel
#   "size":     bytes of the newest one (older ones a few % smaller)
#   "requires": Requires-Dist of every version
#   "meta":     PEP 658 sibling on its py3 wheels (default True)
#   "yanked":   {version: reason}
#   "page":     for a page project: its release history of platform wheels,
#               {"newest": final version, "count": versions in the history,
#                "rcs": [pre-releases after newest], "py": [lo, hi] the
#                CPython minors the history spans, "window": minors per
#                version}; only versions[-1] (== newest) gets a py3 wheel.
# }

_WIN = 'platform_system == "Windows"'
_OLD_PY = 'python_version < "3.8"'

FULL = {
    "install_set": ["bench-web", "bench-tool", "bench-frames", "bench-plot",
                    "bench-stats"],
    "big": {"project": "bench-big", "version": "1.0", "mib": 90},
    "slow": {"project": "bench-slow", "count": 50, "size": 250 * KIB},
    "swarm": ["bench-frames", "bench-markup", "bench-numeric"],
    "targets": {"bench-numeric": [2.3e6, 2.8e6], "bench-frames": [0.4e6, 0.6e6],
                "bench-stats": [0.4e6, 0.6e6], "bench-pillow": [0.4e6, 0.6e6]},
    "projects": {
        # -- the web stack
        "bench-web": {"versions": ["2.2.5", "2.3.3", "3.0.3"], "size": 101 * KIB,
                      "requires": ["bench-http>=2,<3", "bench-templates>=3.1.2",
                                   "bench-routing>=3.0.0", "bench-signals>=1.6.2",
                                   "bench-cli>=8.1.3", "bench-markup>=2.1.1"]},
        "bench-http": {"versions": ["2.28.2", "2.31.0", "2.32.3", "3.0.0"],
                       "size": 63 * KIB,
                       "requires": ["bench-charset>=2,<4", "bench-idna>=2.5,<4",
                                    "bench-urllib>=1.21.1,<3",
                                    "bench-certifi>=2017.4.17"]},
        "bench-charset": {"versions": ["3.1.0", "3.2.0", "3.3.2"], "size": 120 * KIB,
                          "requires": []},
        "bench-idna": {"versions": ["3.4", "3.6", "3.7", "4.0"], "size": 65 * KIB,
                       "requires": []},
        "bench-urllib": {"versions": ["1.26.18", "2.0.7", "2.1.0", "2.2.0"],
                         "size": 121 * KIB, "requires": [],
                         "yanked": {"2.2.0": "broken release, use 2.1.0"}},
        "bench-certifi": {"versions": ["2023.7.22", "2023.11.17", "2024.2.2"],
                          "size": 160 * KIB, "requires": []},
        "bench-templates": {"versions": ["3.1.2", "3.1.3", "3.1.4"], "size": 133 * KIB,
                            "requires": ["bench-markup>=2.0"]},
        "bench-markup": {"versions": ["2.1.3", "2.1.5"], "size": 21 * KIB,
                         "requires": []},
        "bench-routing": {"versions": ["2.3.8", "3.0.1", "3.0.3"], "size": 227 * KIB,
                          "requires": ["bench-markup>=2.1.1"]},
        "bench-signals": {"versions": ["1.6.3", "1.7.0", "1.8.2"], "size": 20 * KIB,
                          "requires": []},
        # -- the CLI stack
        "bench-cli": {"versions": ["8.1.6", "8.1.7"], "size": 97 * KIB,
                      "requires": ["bench-colors; " + _WIN]},
        "bench-colors": {"versions": ["0.4.5", "0.4.6"], "size": 25 * KIB,
                         "requires": []},
        "bench-tool": {"versions": ["0.9.0", "0.11.0", "0.12.3"], "size": 47 * KIB,
                       "requires": ["bench-cli>=8.0.0,<9", "bench-rich>=10.11.0,<14",
                                    "bench-config>=2.0.1", "bench-platformdirs>=3",
                                    "bench-typing-ext>=3.7.4.3; " + _OLD_PY]},
        "bench-rich": {"versions": ["13.5.3", "13.6.0", "13.7.1", "14.0.0"],
                       "size": 240 * KIB,
                       "requires": ["bench-markdown-it>=2.2.0",
                                    "bench-pygments>=2.13.0,<3.0.0"]},
        "bench-markdown-it": {"versions": ["2.2.0", "3.0.0"], "size": 87 * KIB,
                              "requires": ["bench-mdurl~=0.1"]},
        "bench-mdurl": {"versions": ["0.1.0", "0.1.2"], "size": 20 * KIB,
                        "requires": []},
        "bench-pygments": {"versions": ["2.16.1", "2.17.2", "2.18.0"],
                           "size": 1200 * KIB, "requires": []},
        "bench-config": {"versions": ["2.0.1"], "size": 20 * KIB, "requires": []},
        "bench-platformdirs": {"versions": ["3.11.0", "4.1.0", "4.2.2"],
                               "size": 20 * KIB, "requires": []},
        "bench-typing-ext": {"versions": ["4.9.0", "4.12.2"], "size": 37 * KIB,
                             "requires": []},
        # -- the data stack
        "bench-numeric": {"versions": ["1.26.4"], "size": 8 * MIB, "requires": [],
                          "page": {"newest": "1.26.4", "count": 117,
                                   "rcs": ["2.0.0rc1", "2.0.0rc2"],
                                   "py": [5, 13], "window": 5}},
        "bench-frames": {"versions": ["2.2.2"], "size": 1900 * KIB,
                         "requires": ["bench-numeric>=1.22.4", "bench-dateutil>=2.8.2",
                                      "bench-tz>=2020.1", "bench-tzdata>=2022.7"],
                         "page": {"newest": "2.2.2", "count": 29, "rcs": ["3.0.0rc0"],
                                  "py": [6, 13], "window": 4}},
        "bench-stats": {"versions": ["1.13.0"], "size": 6 * MIB,
                        "requires": ["bench-numeric>=1.22.4,<2.3"],
                        "page": {"newest": "1.13.0", "count": 29, "rcs": ["1.14.0rc1"],
                                 "py": [6, 13], "window": 4}},
        "bench-pillow": {"versions": ["10.3.0"], "size": 1500 * KIB, "requires": [],
                         "page": {"newest": "10.3.0", "count": 24, "rcs": [],
                                  "py": [5, 13], "window": 5}},
        "bench-dateutil": {"versions": ["2.8.1", "2.8.2", "2.9.0"], "size": 224 * KIB,
                           "requires": ["bench-six>=1.5"]},
        "bench-six": {"versions": ["1.15.0", "1.16.0"], "size": 20 * KIB,
                      "requires": [], "meta": False},
        "bench-tz": {"versions": ["2023.3", "2023.4", "2024.1"], "size": 492 * KIB,
                     "requires": []},
        "bench-tzdata": {"versions": ["2023.4", "2024.1"], "size": 338 * KIB,
                         "requires": []},
        "bench-plot": {"versions": ["3.7.5", "3.8.3", "3.8.4"], "size": 1950 * KIB,
                       "requires": ["bench-contour>=1.0.1", "bench-cycler>=0.10",
                                    "bench-fonttools>=4.22.0", "bench-kiwi>=1.3.1",
                                    "bench-numeric>=1.21,<2", "bench-packaging>=20.0",
                                    "bench-pillow>=8", "bench-parsing>=2.3.1",
                                    "bench-dateutil>=2.7"]},
        "bench-kiwi": {"versions": ["1.4.4", "1.4.5"], "size": 56 * KIB,
                       "requires": [], "meta": False},
        "bench-cycler": {"versions": ["0.11.0", "0.12.1"], "size": 20 * KIB,
                         "requires": [], "meta": False},
        "bench-fonttools": {"versions": ["4.47.2", "4.50.0", "4.51.0"],
                            "size": 1080 * KIB, "requires": []},
        "bench-parsing": {"versions": ["3.1.1", "3.1.2"], "size": 103 * KIB,
                          "requires": []},
        "bench-packaging": {"versions": ["23.2", "24.0"], "size": 53 * KIB,
                            "requires": []},
        "bench-contour": {"versions": ["1.2.0", "1.2.1"], "size": 250 * KIB,
                          "requires": ["bench-numeric>=1.20"]},
    },
}

SMOKE = {
    "install_set": ["bench-app"],
    "big": {"project": "bench-big", "version": "1.0", "mib": 2},
    "slow": {"project": "bench-slow", "count": 5, "size": 250 * KIB},
    "swarm": ["bench-http", "bench-idna", "bench-numeric"],
    "targets": {"bench-numeric": [35e3, 65e3]},
    "projects": {
        "bench-app": {"versions": ["0.9", "1.0", "1.1", "1.2"], "size": 12 * KIB,
                      "requires": ["bench-http>=2,<3", "bench-numeric>=1.2"]},
        "bench-http": {"versions": ["1.0", "2.0", "2.1", "2.2", "3.0"], "size": 8 * KIB,
                       "requires": ["bench-charset>=3", "bench-idna>=2,<4"]},
        "bench-charset": {"versions": ["2.9", "3.0", "3.1", "3.2"], "size": 6 * KIB,
                          "requires": []},
        "bench-idna": {"versions": ["3.0", "3.1", "4.0"], "size": 4 * KIB,
                       "requires": [], "meta": False},
        "bench-numeric": {"versions": ["1.2.0", "1.2.1"], "size": 30 * KIB,
                          "requires": [],
                          "page": {"newest": "1.2.1", "count": 3, "rcs": ["1.3.0rc1"],
                                   "py": [8, 13], "window": 3}},
    },
}

# Platforms of the tiny filler wheels: the older half of a history, the newer.
_PLATS_OLD = [
    "manylinux1_x86_64", "manylinux1_i686", "macosx_10_9_x86_64",
    "macosx_10_9_intel", "win32", "win_amd64",
]
_PLATS_NEW = [
    "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "manylinux_2_17_aarch64.manylinux2014_aarch64",
    "manylinux_2_17_ppc64le.manylinux2014_ppc64le",
    "manylinux_2_17_s390x.manylinux2014_s390x",
    "manylinux_2_5_i686.manylinux1_i686",
    "musllinux_1_1_x86_64", "musllinux_1_1_aarch64",
    "macosx_10_9_x86_64", "macosx_11_0_arm64", "macosx_14_0_arm64",
    "win32", "win_amd64", "win_arm64",
]

# The environment markers are evaluated in (the benchmark's client).
MARKER_ENV = {"platform_system": "Linux", "sys_platform": "linux",
              "os_name": "posix", "python_version": "3.11"}


# ---------------------------------------------------------------- versions

_VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?")


def vkey(v):
    """A sort key for the (PEP 440 subset of) versions in the tables."""
    m = _VERSION.fullmatch(v)
    if not m:
        raise ValueError("unsupported version %r" % v)
    rel = [int(x) for x in m.group(1).split(".")]
    while len(rel) > 1 and rel[-1] == 0:
        rel.pop()
    pre = (0, "abrc".index(m.group(2)), int(m.group(3))) if m.group(2) else (1,)
    return (tuple(rel), pre)


def is_pre(v):
    return _VERSION.fullmatch(v).group(2) is not None


def _matches(v, spec):
    m = re.fullmatch(r"\s*(~=|==|!=|<=|>=|<|>)\s*([0-9][0-9a-z.]*)\s*", spec)
    if not m:
        raise ValueError("unsupported specifier %r" % spec)
    op, ref = m.groups()
    a, b = vkey(v), vkey(ref)
    if op == "~=":
        prefix = [int(x) for x in ref.split(".")[:-1]]
        rel = [int(x) for x in _VERSION.fullmatch(v).group(1).split(".")]
        rel += [0] * (len(prefix) - len(rel))
        return a >= b and rel[:len(prefix)] == prefix
    return {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b,
            "<": a < b, ">": a > b}[op]


def parse_req(req):
    """"name>=1,<2; marker" -> (name, [specifiers], applies)."""
    m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*([^;]*?)\s*(?:;\s*(.*))?",
                     req)
    if not m:
        raise ValueError("unsupported requirement %r" % req)
    name, specs, marker = m.groups()
    applies = True
    if marker:
        mm = re.fullmatch(r'(\w+)\s*(==|!=|<|<=|>|>=)\s*"([^"]*)"\s*', marker)
        if not mm or mm.group(1) not in MARKER_ENV:
            raise ValueError("unsupported marker %r" % marker)
        var, op, val = mm.groups()
        have = MARKER_ENV[var]
        if var == "python_version":
            applies = _matches(have, op + val)
        else:
            applies = {"==": have == val, "!=": have != val}[op]
    return name, [s for s in specs.split(",") if s.strip()], applies


def resolve(table):
    """{project: version} pip installs for table["install_set"], and the
    closure in breadth-first order."""
    projects = table["projects"]

    def candidates(name):
        p = projects[name]
        return [v for v in p["versions"]
                if not is_pre(v) and v not in p.get("yanked", {})]

    pins = {}
    for _ in range(100):
        wants = {n: [] for n in table["install_set"]}
        for name, version in pins.items():
            for req in projects[name]["requires"]:
                dep, specs, applies = parse_req(req)
                if applies:
                    wants.setdefault(dep, []).extend(specs)
        new = {}
        for name, specs in wants.items():
            ok = [v for v in candidates(name) if all(_matches(v, s) for s in specs)]
            if not ok:
                raise ValueError("nothing of %s meets %s" % (name, specs))
            new[name] = max(ok, key=vkey)
        if new == pins:
            break
        pins = new
    else:
        raise ValueError("the tables do not resolve")
    order, seen = [], set()
    queue = list(table["install_set"])
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        order.append(name)
        for req in projects[name]["requires"]:
            dep, _, applies = parse_req(req)
            if applies:
                queue.append(dep)
    return pins, order


def history(page):
    """[(version, [tag, ...])] of a page project's filler wheels, oldest
    first: page["count"] final versions ending with page["newest"], then the
    pre-releases."""
    major, minor, patch = (int(x) for x in (page["newest"].split(".") + ["0"])[:3])
    finals = []
    while len(finals) < page["count"]:
        if major < 0:
            raise ValueError("history too long for %s" % page["newest"])
        finals.append("%d.%d.%d" % (major, minor, patch))
        if patch > 0:
            patch -= 1
        else:
            minor -= 1
            if minor < 0:
                major, minor = major - 1, 9
            patch = (major * 7 + minor * 3) % 5 + 1  # patches of that minor
    finals.reverse()
    versions = finals + list(page["rcs"])
    lo_py, hi_py = page["py"]
    window = page["window"]
    n = len(versions)
    out = []
    for j, version in enumerate(versions):
        lo = min(lo_py + (hi_py - lo_py) * j // max(1, n - 1), hi_py - window + 1)
        plats = _PLATS_OLD if j < n // 2 else _PLATS_NEW
        tags = []
        for py in range(lo, lo + window):
            for plat in plats:
                if version == page["newest"] and "linux" in plat and "x86_64" in plat:
                    continue  # pip on linux x86_64 would prefer it to py3-none-any
                tags.append("cp3%d-cp3%d-%s" % (py, py, plat))
        out.append((version, tags))
    return out


# ---------------------------------------------------------------- building

_DAY = 86400


def _payload(name, version, size):
    """size incompressible, deterministic bytes."""
    seed = ("larder-bench %s %s" % (name, version)).encode()
    return hashlib.shake_256(seed).digest(max(0, size))


def _requires_python(j, n):
    return ">=3.%d" % (7 + (j * 2) // max(1, n - 1)) if n > 1 else ">=3.8"


def _build_project(wheel_dir, name, p, index):
    """Builds every file of one project; returns [(version, path)] of its
    py3-none-any wheels."""
    mod = wheels.module_name(name)
    base = wheels._EPOCH_TS - 400 * _DAY + index * 3600
    built = []
    page = p.get("page")
    if page:
        hist = history(page)
        n = len(hist)
        for j, (version, tags) in enumerate(hist):
            mtime = base - (n - j) * 9 * _DAY
            lo, hi = page["py"]
            rp = ">=3.%d" % (lo + (hi - lo) * j // max(1, n - 1))
            for k, tag in enumerate(tags):
                wheels.build_wheel(wheel_dir, name, version, p["requires"], rp,
                                   metadata_sibling=False, tag=tag,
                                   mtime=mtime + 60 * (k + 1))
            wheels.build_sdist(wheel_dir, name, version, p["requires"], rp,
                               mtime=mtime)
    versions = p["versions"]
    n = len(versions)
    for j, version in enumerate(versions):
        mtime = base - (n - 1 - j) * 37 * _DAY
        rp = _requires_python(j, n)
        size = int(p["size"] * (1 - 0.03 * (n - 1 - j)))
        extra = {"%s/_blob.bin" % mod: _payload(name, version, size - 1400)}
        path = wheels.build_wheel(
            wheel_dir, name, version, p["requires"], rp, extra_files=extra,
            metadata_sibling=p.get("meta", True),
            yanked=p.get("yanked", {}).get(version), mtime=mtime + 30)
        built.append((version, path))
        if not page:
            wheels.build_sdist(wheel_dir, name, version, p["requires"], rp,
                               mtime=mtime)
    return built


def _build_slow(wheel_dir, slow, index):
    """The bench-slow wheels: slow["count"] py3 wheels of slow["size"] bytes
    (versions 1.10.0 on, all of one length so the archives are too); no
    sdists, no PEP 658 siblings. Returns their paths, oldest first."""
    name = slow["project"]
    mod = wheels.module_name(name)
    base = wheels._EPOCH_TS - 400 * _DAY + index * 3600
    if slow["count"] > 90:
        raise ValueError("too many bench-slow versions")
    out = []
    for j in range(slow["count"]):
        version = "1.%d.0" % (10 + j)
        extra = {"%s/_blob.bin" % mod: _payload(name, version, slow["size"] - 1400)}
        out.append(wheels.build_wheel(wheel_dir, name, version, [], ">=3.8",
                                      extra_files=extra, metadata_sibling=False,
                                      mtime=base + j * _DAY))
    return out


def measure_pages(wheel_dir, projects):
    """{project: bytes of its PEP 691 JSON page} from an in-process stand-in;
    also {project: the page document}."""
    import standin
    s = standin.Standin(wheel_dir, verbose=False).start()
    try:
        sizes, docs = {}, {}
        for name in projects:
            req = urllib.request.Request(
                "http://127.0.0.1:%d/simple/%s/" % (s.port, name),
                headers={"Accept": JSON_TYPE})
            with urllib.request.urlopen(req, timeout=60) as r:
                body = r.read()
            sizes[name] = len(body)
            docs[name] = json.loads(body)
        return sizes, docs
    finally:
        s.stop()


def _params(smoke):
    table = SMOKE if smoke else FULL
    spec = json.dumps([table, _PLATS_OLD, _PLATS_NEW, MARKER_ENV],
                      sort_keys=True).encode()
    return {"format": FORMAT, "smoke": bool(smoke),
            "spec_sha256": hashlib.sha256(spec).hexdigest()}


def _build_into(root, final_wheel_dir, smoke, log):
    table = SMOKE if smoke else FULL
    wheel_dir = os.path.join(root, "wheels")
    os.makedirs(wheel_dir)
    pins, closure = resolve(table)

    t0 = time.monotonic()
    py3 = {}
    for i, (name, p) in enumerate(sorted(table["projects"].items())):
        py3[name] = _build_project(wheel_dir, name, p, i)
    big = table["big"]
    big_path = wheels.build_big(wheel_dir, big["mib"], name=big["project"],
                                version=big["version"])
    slow = table["slow"]
    slow_paths = _build_slow(wheel_dir, slow, len(table["projects"]))
    log("built the files in %.1f s" % (time.monotonic() - t0))

    names = sorted(list(table["projects"]) + [big["project"], slow["project"]])
    t0 = time.monotonic()
    pages, docs = measure_pages(wheel_dir, names)
    log("measured the pages in %.1f s" % (time.monotonic() - t0))

    # The wheels with a PEP 658 sibling: those pip installs first.
    picked = {(n, pins[n]) for n in closure}
    meta = []
    for name in names:
        paths = py3.get(name, []) + ([(big["version"], big_path)]
                                     if name == big["project"] else [])
        for version, path in paths:
            if os.path.exists(path + ".metadata"):
                meta.append(((name, version) not in picked, name, vkey(version), {
                    "project": name,
                    "filename": os.path.basename(path),
                    "sha256": wheels.sha256_file(path),
                    "metadata_sha256": wheels.sha256_file(path + ".metadata"),
                }))
    meta.sort(key=lambda m: m[:3])
    meta = [m[3] for m in meta]

    # Cross-check against what the stand-in advertises.
    for m in meta:
        entry = [f for f in docs[m["project"]]["files"]
                 if f["filename"] == m["filename"]]
        if (len(entry) != 1 or entry[0]["hashes"]["sha256"] != m["sha256"]
                or entry[0]["core-metadata"] != {"sha256": m["metadata_sha256"]}):
            raise RuntimeError("the stand-in disagrees about %s" % m["filename"])
    for name in closure:
        want = "%s-%s-py3-none-any.whl" % (name.replace("-", "_"), pins[name])
        if not any(f["filename"] == want for f in docs[name]["files"]):
            raise RuntimeError("%s is not on its page" % want)
    slow_files = [{"project": slow["project"], "filename": os.path.basename(path),
                   "size": os.path.getsize(path), "sha256": wheels.sha256_file(path)}
                  for path in slow_paths]
    for sf in slow_files:
        entry = [f for f in docs[slow["project"]]["files"]
                 if f["filename"] == sf["filename"]]
        if len(entry) != 1 or entry[0]["hashes"]["sha256"] != sf["sha256"]:
            raise RuntimeError("the stand-in disagrees about %s" % sf["filename"])
    if len(meta) < 16:
        raise RuntimeError("only %d wheels with PEP 658 metadata" % len(meta))
    for name, (lo, hi) in table["targets"].items():
        if not lo <= pages[name] <= hi:
            log("warning: %s's page is %d bytes, outside %d..%d"
                % (name, pages[name], lo, hi))

    files = sorted(fn for fn in os.listdir(wheel_dir)
                   if fn.endswith((".whl", ".tar.gz")))
    big_size = os.path.getsize(big_path)
    return {
        "params": _params(smoke),
        "wheel_dir": final_wheel_dir,
        "projects": len(names),
        "files": len(files),
        "install_set": list(table["install_set"]),
        "install_closure": closure,
        "install_versions": {n: pins[n] for n in closure},
        "big_wheel": {"project": big["project"],
                      "filename": os.path.basename(big_path),
                      "size": big_size, "sha256": wheels.sha256_file(big_path),
                      "path": os.path.join(final_wheel_dir,
                                           os.path.basename(big_path))},
        "metadata_wheels": meta,
        "slow_files": slow_files,
        "pages": pages,
        "swarm_projects": list(table["swarm"]),
        "swarm_pages": dict(zip(("mid", "small", "large"), table["swarm"])),
        "largest_page_kib": round(max(pages.values()) / KIB, 1),
        "big_wheel_mib": round(big_size / MIB, 1),
    }


def _load(outdir, params):
    """The saved corpus in outdir if it was built with params and its files
    are there, else None."""
    try:
        with open(os.path.join(outdir, "corpus.json")) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if doc.get("params") != params:
        return None
    wheel_dir = os.path.join(outdir, "wheels")
    try:
        have = sum(1 for fn in os.listdir(wheel_dir)
                   if fn.endswith((".whl", ".tar.gz")))
        big = doc["big_wheel"]
        big_ok = os.path.getsize(os.path.join(wheel_dir, big["filename"])) == big["size"]
    except (OSError, KeyError, TypeError):
        return None
    if have != doc.get("files") or not big_ok:
        return None
    doc["wheel_dir"] = wheel_dir  # the directory may have moved
    doc["big_wheel"]["path"] = os.path.join(wheel_dir, doc["big_wheel"]["filename"])
    return doc


def build(outdir, smoke=False, log=None):
    """Builds the corpus in outdir (or reuses the one there); returns its
    description (see the module docstring)."""
    log = log or (lambda msg: sys.stderr.write("corpus: %s\n" % msg))
    outdir = os.path.abspath(outdir)
    params = _params(smoke)
    doc = _load(outdir, params)
    if doc is not None:
        log("reusing %s" % outdir)
        return doc
    if os.path.exists(outdir) and os.listdir(outdir) and not os.path.exists(
            os.path.join(outdir, "corpus.json")):
        raise RuntimeError("%s exists and is not a corpus; not replacing it" % outdir)

    parent = os.path.dirname(outdir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".%s.tmp-" % os.path.basename(outdir), dir=parent)
    t0 = time.monotonic()
    try:
        doc = _build_into(tmp, os.path.join(outdir, "wheels"), smoke, log)
        with open(os.path.join(tmp, "corpus.json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        if os.path.exists(outdir):  # an older corpus (or an empty directory)
            old = tempfile.mkdtemp(prefix=".%s.old-" % os.path.basename(outdir),
                                   dir=parent)
            os.rename(outdir, os.path.join(old, "c"))
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(tmp, outdir)
        except OSError:
            # Someone else put a corpus there meanwhile: use theirs if it fits.
            theirs = _load(outdir, params)
            if theirs is None:
                raise
            doc = theirs
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    log("built %s in %.1f s: %d projects, %d files, largest page %.1f KiB"
        % (outdir, time.monotonic() - t0, doc["projects"], doc["files"],
           doc["largest_page_kib"]))
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--smoke", action="store_true", help="the tiny corpus (CI)")
    args = ap.parse_args(argv)
    doc = build(args.outdir, smoke=args.smoke)
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
