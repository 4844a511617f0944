"""larder behind Apache during a storm of slow cold downloads (issue 27).

Each slow miss holds what serves it until its download is done: a thread
of Apache and a worker of `larder serve` behind mod_proxy_fcgi, a whole
process behind mod_fcgid. A warm page or file asked for meanwhile must
not wait behind them. Behind mod_proxy_fcgi the pool of `larder serve`
grows as its last idle worker takes a request, and the warm request
answers in milliseconds. mod_fcgid (2.3.9) sleeps a whole second in
handle_request() whenever it finds no idle process while one is busy,
before it even asks for a new one, and no directive changes that: a warm
request that arrives while every process holds a miss waits at least that
second. docs/apache.md recommends mod_proxy_fcgi for that reason; the
mod_fcgid case is kept here as a strict xfail, so that it shows up the day
it stops being true.

`larder serve` runs with `workers` sized for the storm, as docs/apache.md
advises for bursts: with 4, a request that arrives in the storm's first
instant waits in the socket's queue behind the misses while the pool
grows one worker at a time (a few hundred ms under ASan).
"""

import hashlib
import os
import shutil
import threading
import time

import pytest

import frontends
import stack as stackmod
import standin
import wheels
from stack import PIP_ACCEPT, http

STORM = 20                 # slow cold downloads at once
STORM_KIB = 256            # each wheel's size
STORM_SECONDS = 6.0        # how long the upstream takes to send each
BOUND_S = 1.0              # generous: ASan on a loaded 2-core machine
WARM_ROUNDS = 5            # warm page + warm file, one after another
STORM_PROJECT = "larder-storm"
WARM_PROJECT = "larder-demo-a"
WARM_FILE = wheels.A11


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_path(d):
    return "/root/pypi/files/%s/%s" % (d["sha256"], d["filename"])


@pytest.fixture(scope="module")
def storm_wheels(tmp_path_factory):
    """The default wheels plus STORM distinct wheels of STORM_KIB KiB, one
    project: (dir, {filename: info})."""
    d = str(tmp_path_factory.mktemp("storm-wheels"))
    wheels.build_default(d)
    storm = []
    for i in range(STORM):
        p = wheels.build_big(d, STORM_KIB / 1024.0, name=STORM_PROJECT,
                             version="1.%d" % i)
        storm.append(os.path.basename(p))
    info = {}
    for fn in os.listdir(d):
        if fn.endswith(".whl"):
            with open(os.path.join(d, fn), "rb") as f:
                data = f.read()
            info[fn] = {"filename": fn, "sha256": sha256(data), "size": len(data)}
    return d, info, storm


def _storm_rate(size):
    """Bytes/s per response so that a file of size takes STORM_SECONDS: the
    stand-in writes standin.CHUNK at a time, the first at once."""
    writes = -(-size // standin.CHUNK)
    return max(writes - 1, 1) * standin.CHUNK / STORM_SECONDS


@pytest.mark.parametrize("kind", [
    "apache-proxy-fcgi",
    pytest.param("apache-fcgid", marks=pytest.mark.xfail(
        strict=True, reason="mod_fcgid sleeps 1 s when every process is busy "
        "(docs/apache.md)")),
])
def test_warm_requests_during_slow_miss_storm(kind, storm_wheels):
    """STORM cold downloads the upstream sends slowly, started at once;
    meanwhile a warm page and a warm file, WARM_ROUNDS times each, each on
    a new connection, every one within BOUND_S. Every download completes
    with the right bytes, fetched upstream once."""
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    wheel_dir, info, storm = storm_wheels
    workdir = frontends.new_workdir()
    up = stackmod.Standin(wheel_dir, os.path.join(workdir, "standin"))
    fe = None
    try:
        up.start()
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), up.port,
                                     workers=STORM + 4,
                                     files_port=up.files_port).start()
        page = fe.base + "/root/pypi/simple/%s/" % WARM_PROJECT
        warm = info[WARM_FILE]
        for _ in range(2):          # a miss, then a hit
            r = http(page, headers={"Accept": PIP_ACCEPT})
            assert r.status == 200, r
            page_body = r.body
            r = http(fe.base + file_path(warm))
            assert r.status == 200 and sha256(r.body) == warm["sha256"], r.status
        r = http(fe.base + "/root/pypi/simple/%s/" % STORM_PROJECT,
                 headers={"Accept": PIP_ACCEPT})
        assert r.status == 200, r

        up.control(rate=_storm_rate(info[storm[0]]["size"]))
        results = {}

        def download(fn):
            results[fn] = http(fe.base + file_path(info[fn]), timeout=120)

        threads = [threading.Thread(target=download, args=(fn,)) for fn in storm]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.3)
        slowest = []
        for _ in range(WARM_ROUNDS):
            for url, hdrs in ((page, {"Accept": PIP_ACCEPT}),
                              (fe.base + file_path(warm), {})):
                t1 = time.monotonic()
                r = http(url, headers=hdrs)
                ms = (time.monotonic() - t1) * 1000
                assert r.status == 200, (url, r.status)
                slowest.append((ms, url))
        during = time.monotonic() - t0
        storming = sum(1 for t in threads if t.is_alive())
        for t in threads:
            t.join(150)
        up.control(rate=None)
        assert page_body == http(page, headers={"Accept": PIP_ACCEPT}).body
        for fn in storm:
            r = results.get(fn)
            assert r is not None and r.status == 200, (fn, r and r.status)
            assert sha256(r.body) == info[fn]["sha256"], fn
        files = up.counters()["files"]
        assert all(files.get(fn) == 1 for fn in storm), files
        # measured during the storm, not after it
        assert storming > 0, "the warm requests took %.1f s: the storm was over" % during
        worst = max(slowest)
        assert worst[0] < BOUND_S * 1000, \
            "warm request %s took %.0f ms during %d slow misses (all: %s)\n%s" % (
                worst[1], worst[0], STORM, ["%.0f" % ms for ms, _ in slowest],
                fe.log_text()[-3000:])
    finally:
        try:
            up.control(rate=None)
        except Exception:
            pass
        if fe is not None:
            fe.stop()
        up.stop()
        shutil.rmtree(workdir, ignore_errors=True)
