#!/usr/bin/python3
"""Cold bursts: many clients missing the same thing at once, against an empty
cache, each measured against its reference in the same run.

  burst     One large wheel of incompressible bytes (--size-mb, 90 MiB), the
            stand-in upstream throttled so that one download of it takes
            --transfer-s seconds (5). Reference: one direct download from the
            stand-in. Measured: 4 readers released at the same moment against
            larder (behind nginx) with an empty data dir. Reported: wall time
            until all four have every byte, each reader's time to its first
            body byte, the sha256 of each body, and how often the stand-in
            served the file. ratio = burst wall / direct time (goal <= 1.2,
            and one upstream GET).
  installs  --installs (10) pip installs started at once, each in its own
            fresh virtualenv (--no-cache-dir --only-binary :all:, through
            http://127.0.0.1:NGINX/root/pypi/simple/), of larder-bench-app:
            the demo chain larder-demo-a -> larder_demo.b -> larder-demo-c and
            six generated 256 KiB libraries of two versions each, against an
            empty cache. Reference: one install against an empty cache.
            ratio = ten / one (goal <= 1.5), failures (goal 0). For context,
            the ten installs again against the now-warm cache: ten pips
            sharing the CPUs cost that much with nothing to fetch, so
            cold-ten / warm-ten is what the empty cache adds on top.

Every measurement gets a fresh larder and nginx (new data dir); the stand-in
runs for the whole benchmark and its counters are read per measurement. Each
round runs the reference and the measured side of each workload, reference
first in even rounds and second in odd ones; the report gives medians over
the rounds with the min..max spread, ratio medians being medians of per-round
ratios. Virtualenvs are copied from one template before the clock starts.

Goals are reported, never enforced: the exit status is 1 only when something
failed (a wrong or incomplete body, a non-200 file answer, a failed install,
a 5xx from nginx, a bad blob in the store), 2 when it cannot run here.
Alongside each measurement: the load average when it started and the share
of the machine's CPU time that went to processes not of this benchmark.

Usage (from anywhere; larder is --larder, else $LARDER_BIN, else ./larder):
  contrib/bench/burst.py [--rounds 3] [--size-mb 90] [--json OUT]
  contrib/bench/burst.py --smoke    # 8 MiB, 2 s transfer, 4 installs, 1 round
Needs nginx and python3-venv (apt-get install nginx-light python3-venv).
Standard library only; the pieces come from tests/integration (stack.py,
wheels.py, flighthelp.py). Everything is torn down on exit, SIGTERM and ^C
included: process groups of the stack and of pip, and the detached
`larder _fetch` processes working in this run's data dirs.
"""

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urljoin

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import flighthelp as fh  # noqa: E402
import stack  # noqa: E402
import wheels  # noqa: E402

BIG_PROJECT = "larder-demo-big"
READERS = 4
BURST_GOAL = 1.2
INSTALL_GOAL = 1.5
APP = "larder-bench-app"
LIBS = ["larder-bench-lib%d" % i for i in range(1, 7)]
LIB_MIB = 0.25
EXPECTED = dict({"larder-demo-a": "1.1", "larder-demo-b": "1.0", "larder-demo-c": "2.0",
                 APP: "1.0"}, **{n: "1.1" for n in LIBS})
CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1

# What we started that must not outlive us.
_pieces = []          # stack.Standin / Larder / Nginx
_procs = set()        # pip processes (each leads its own process group)
_data_dirs = []       # larder data dirs, for their `larder _fetch` processes


class Failure(Exception):
    """Something went wrong that makes the run's figures void."""


def log(msg):
    sys.stderr.write("burst: %s\n" % msg)
    sys.stderr.flush()


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def summarise(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
            "max": round(max(values), 4), "all": [round(v, 4) for v in values]}


# ---------------------------------------------------------------- CPU

def _machine_ticks():
    """(busy, total) ticks over all CPUs since boot (iowait counts as idle)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 10
    total = sum(v[:8])
    return total - v[3] - v[4], total


def _proc_table():
    """{(pid, start time): (ppid, utime + stime ticks)} of every process."""
    out = {}
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % n) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        # fields[0] is field 3 (state): ppid 4, utime 14, stime 15, starttime 22
        out[(int(n), fields[19])] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return out


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


class CpuWatch:
    """How busy the machine was over one measurement, and how much of that
    was not ours. Ours: this process and its descendants (the stand-in,
    larder, nginx and their workers), the detached `larder _fetch`
    processes (their arguments lie under the work dir), sampled every
    0.25 s; the pip processes are taken from getrusage() when reaped and
    left out of the sampling. A process that exits between two samples takes
    its last ticks with it (counted as others'): an approximation."""

    def __init__(self, work):
        self.work = os.path.realpath(work).encode()
        self.me = os.getpid()
        self._base = {}
        self._last = {}

    def _sample(self, first=False):
        table = _proc_table()
        ppid = {k[0]: v[0] for k, v in table.items()}
        for key, (_, ticks) in table.items():
            pid, p, ours = key[0], key[0], False
            for _ in range(64):          # a descendant of ours?
                if p == self.me:
                    ours = True
                    break
                p = ppid.get(p)
                if p is None or p <= 1:
                    break
            argv = _cmdline(pid)
            if b"/bin/pip\0" in argv:
                # pip: counted through getrusage() when reaped (checked each
                # time: a child between fork and exec still looks like us)
                self._base.pop(key, None)
                self._last.pop(key, None)
                continue
            if not ours and self.work not in argv:
                continue
            if key not in self._base:
                self._base[key] = ticks if first else 0
            self._last[key] = ticks

    def _loop(self):
        while not self._stop.wait(0.25):
            self._sample()

    def start(self):
        self.load = loadavg()
        self.ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.m0 = _machine_ticks()
        self.t0 = time.monotonic()
        self._sample(first=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
        self._sample()
        wall = time.monotonic() - self.t0
        m1 = _machine_ticks()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        pips = (ru.ru_utime + ru.ru_stime) - (self.ru0.ru_utime + self.ru0.ru_stime)
        sampled = sum(self._last[k] - self._base[k] for k in self._last) / CLK_TCK
        busy = (m1[0] - self.m0[0]) / CLK_TCK
        total = (m1[1] - self.m0[1]) / CLK_TCK or 1e-9
        others = max(0.0, busy - sampled - pips)
        return {"load1": self.load[0], "load": self.load, "wall_s": round(wall, 3),
                "machine_busy": round(busy / total, 3),
                "ours_cpu_s": round(sampled, 2), "pip_cpu_s": round(pips, 2),
                "others_cpu_s": round(others, 2), "others_share": round(others / total, 3)}


# ---------------------------------------------------------------- the stack

def start_larder(args, work, name, upstream_port):
    """A fresh larder (empty data dir) and nginx in work/name."""
    d = os.path.join(work, name)
    lar = stack.Larder(os.path.join(d, "larder"), upstream_port, cache_ttl=3600,
                       workers=args.larder_workers, binary=args.larder)
    _data_dirs.append(lar.data_dir)
    _pieces.append(lar)
    lar.start()
    ngx = stack.Nginx(os.path.join(d, "nginx"), lar.port, lar.data_dir,
                      workers=args.nginx_workers)
    _pieces.append(ngx)
    ngx.start()
    return lar, ngx


def fetcher_pids(data_dir):
    """Live `larder _fetch` processes with an argument under data_dir."""
    prefix = os.path.realpath(data_dir).encode() + b"/"
    out = []
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        argv = _cmdline(int(n)).split(b"\0")
        if len(argv) > 2 and argv[1] == b"_fetch" and any(
                a.startswith(prefix) for a in argv[2:]) and fh.alive(int(n)):
            out.append(int(n))
    return out


def kill_fetchers(data_dir, grace=0.0):
    """Gives the fetchers of data_dir grace seconds, then SIGKILLs them by
    pid; returns how many were killed."""
    deadline = time.monotonic() + grace
    while grace and fetcher_pids(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    killed = 0
    for pid in fetcher_pids(data_dir):
        if fh.kill(pid):
            killed += 1
    return killed


def stop_larder(lar, ngx):
    for piece in (ngx, lar):
        if piece is None:
            continue
        try:
            piece.stop()
        except Exception as e:  # keep stopping the others
            log("stopping %s: %r" % (type(piece).__name__, e))
        if piece in _pieces:
            _pieces.remove(piece)
    if lar is not None:
        n = kill_fetchers(lar.data_dir, grace=2.0)
        if n:
            log("killed %d fetcher(s) left in %s" % (n, lar.data_dir))


def teardown():
    for p in list(_procs):
        _kill_group(p)
    for piece in reversed(list(_pieces)):
        try:
            piece.stop()
        except Exception as e:
            log("stopping %s: %r" % (type(piece).__name__, e))
    del _pieces[:]
    for d in _data_dirs:
        kill_fetchers(d)


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        pass
    _procs.discard(p)


_STATUS = re.compile(r'"[A-Z]+ (\S+) [^"]*" (\d{3}) ')


def access_statuses(ngx):
    """[(path, status)] from nginx's access log (combined format)."""
    try:
        with open(ngx.access_log, errors="replace") as f:
            return [(m.group(1), int(m.group(2))) for m in map(_STATUS.search, f) if m]
    except OSError:
        return []


def check_responses(ngx, what, failures):
    """Records a failure for every 5xx nginx sent; returns {status: n} of
    everything that was not 2xx/3xx."""
    odd = {}
    for path, status in access_statuses(ngx):
        if status >= 400:
            odd[status] = odd.get(status, 0) + 1
            if status >= 500:
                failures.append("%s: nginx answered %d for %s" % (what, status, path))
    return odd


def check_store(lar, what, failures, expect_blob=None):
    """After a measurement: no flight left, every blob hashes to its name."""
    rows, parts = fh.wait_settled(lar.data_dir, timeout=30)
    if rows or parts:
        failures.append("%s: flights %r / temp files %r left after 30 s" % (what, rows, parts))
    bad = stack.bad_blobs(lar.data_dir)
    if bad:
        failures.append("%s: blobs whose content does not match their name: %r" % (what, bad))
    if expect_blob:
        names = {os.path.basename(p) for p in stack.blobs(lar.data_dir).values()}
        if expect_blob not in names:
            failures.append("%s: blob %s not committed" % (what, expect_blob))


# ---------------------------------------------------------------- inputs

def build_inputs(wheel_dir, size_mb):
    wheels.build_default(wheel_dir)
    big = wheels.build_big(wheel_dir, size_mb, name=BIG_PROJECT)
    for n in LIBS:
        for v in ("1.0", "1.1"):
            wheels.build_big(wheel_dir, LIB_MIB, name=n, version=v)
    wheels.build_wheel(wheel_dir, APP, "1.0", ["larder-demo-a"] + LIBS)
    return big



# ---------------------------------------------------------------- 1. burst

def reader_info(r):
    return {"status": r.status, "bytes": r.nbytes, "sha256": r.sha256, "error": r.error,
            "t_headers": None if r.t_headers is None else round(r.t_headers, 4),
            "t_first": None if r.t_first is None else round(r.t_first, 4),
            "t_end": None if r.t_end is None else round(r.t_end, 4),
            "cache": r.header("X-Larder-Cache")}


def run_readers(urls, deadline_s):
    readers = fh.start_readers(urls, timeout=deadline_s)
    end = time.monotonic() + deadline_s + 10
    for r in readers:
        r.join(max(0.0, end - time.monotonic()))
    hung = [r for r in readers if r.is_alive()]
    if hung:
        raise Failure("readers still running after %.0f s: %r" % (deadline_s + 10, hung))
    return readers


def check_reader(r, size, sha, what, failures):
    if r.status != 200 or not r.complete or r.nbytes != size or r.sha256 != sha:
        failures.append("%s: %r (sha256 %s, expected %s)" % (what, r, r.sha256, sha))
        return False
    return True


def burst_direct(args, st, big, work, failures):
    fn, size, sha = big["filename"], big["size"], big["sha256"]
    url = "http://127.0.0.1:%d/packages/%s/%s/%s" % (st.files_port, sha[:2], sha[2:4], fn)
    before = st.counters()["files"].get(fn, 0)
    cpu = CpuWatch(work).start()
    (r,) = run_readers([url], args.deadline)
    cpu = cpu.stop()
    ok = check_reader(r, size, sha, "direct download", failures)
    return {"ok": ok, "seconds": r.t_end, "reader": reader_info(r), "cpu": cpu,
            "upstream_gets": st.counters()["files"].get(fn, 0) - before}


def burst_larder(args, st, big, work, name, failures):
    fn, size, sha = big["filename"], big["size"], big["sha256"]
    lar = ngx = None
    try:
        lar, ngx = start_larder(args, work, name, st.port)
        page = "/root/pypi/simple/%s/" % BIG_PROJECT
        r = stack.http(ngx.base + page, headers={"Accept": stack.PIP_ACCEPT})
        if r.status != 200:
            raise Failure("burst: page %s: %r" % (page, r))
        entry = [f for f in r.json()["files"] if f["filename"] == fn]
        if not entry or entry[0]["hashes"].get("sha256") != sha:
            raise Failure("burst: %s does not list %s with its sha256" % (page, fn))
        url = urljoin(ngx.base + page, entry[0]["url"])
        c0 = st.counters()
        cpu = CpuWatch(work).start()
        readers = run_readers([url] * READERS, args.deadline)
        cpu = cpu.stop()
        c1 = st.counters()
        oks = [check_reader(r, size, sha, "burst reader %d" % i, failures)
               for i, r in enumerate(readers)]
        if len({r.sha256 for r in readers}) != 1:
            failures.append("burst: readers got different bodies: %r"
                            % [r.sha256 for r in readers])
        check_store(lar, "burst", failures, expect_blob=sha)
        odd = check_responses(ngx, "burst", failures)
        return {
            "ok": all(oks), "seconds": max(r.t_end for r in readers),
            "readers": [reader_info(r) for r in readers],
            "first_byte_max": max(r.t_first if r.t_first is not None else float("inf")
                                  for r in readers),
            "upstream_gets": c1["files"].get(fn, 0) - c0["files"].get(fn, 0),
            "upstream_ranges": c1.get("ranges", {}).get(fn, 0) - c0.get("ranges", {}).get(fn, 0),
            "http_errors": odd, "cpu": cpu,
        }
    finally:
        stop_larder(lar, ngx)


def burst_round(i, args, st, big, work, failures):
    order = ("direct", "burst") if i % 2 == 0 else ("burst", "direct")
    st.control(rate=args.rate)
    res = {"order": list(order)}
    try:
        for side in order:
            if side == "direct":
                res["direct"] = burst_direct(args, st, big, work, failures)
            else:
                res["burst"] = burst_larder(args, st, big, work, "burst%d" % (i + 1), failures)
            m = res[side]
            log("round %d burst %-6s %6.2f s%s  load %.2f, others %2.0f%%" % (
                i + 1, side, m["seconds"],
                "  first bytes %s, upstream GETs %d" % (
                    "/".join("%.3f" % r["t_first"] if r["t_first"] is not None else "-"
                             for r in m["readers"]), m["upstream_gets"])
                if side == "burst" else "",
                m["cpu"]["load1"], m["cpu"]["others_share"] * 100))
    finally:
        st.control(rate=None)
    res["ratio"] = res["burst"]["seconds"] / res["direct"]["seconds"]
    return res


# ---------------------------------------------------------------- 2. installs

def pip_cmd(venv, index_url):
    """stack.pip_install's command, plus --only-binary :all:."""
    return [os.path.join(venv, "bin", "pip"), "install", "--no-cache-dir",
            "--disable-pip-version-check", "--no-input", "--retries", "0",
            "--timeout", "30", "--only-binary", ":all:", "--index-url", index_url, APP]


def run_pips(venvs, index_url, outdir, timeout):
    """Starts one pip per venv at the same moment (each in its own process
    group, output to a file); returns (wall, [(returncode, seconds, output
    path)]) once all have ended."""
    results = [None] * len(venvs)
    procs = []
    t0 = time.monotonic()
    for i, v in enumerate(venvs):
        out = os.path.join(outdir, "pip%d.log" % i)
        with open(out, "wb") as f:
            p = subprocess.Popen(pip_cmd(v, index_url), stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=stack.clean_env(),
                                 start_new_session=True)
        _procs.add(p)
        procs.append((p, out))

    def wait(i, p, out):
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(p)
            rc = "timeout"
        results[i] = (rc, time.monotonic() - t0, out)

    threads = [threading.Thread(target=wait, args=(i, p, out), daemon=True)
               for i, (p, out) in enumerate(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    for p, _ in procs:
        _procs.discard(p)
    return wall, results


def upstream_max(counters):
    """The most any one page, file or metadata file was fetched upstream."""
    pages = [v for k, v in counters["requests"].items() if k.startswith("GET /simple/")]
    counts = pages + list(counters["files"].values()) + list(counters["metadata"].values())
    return max(counts) if counts else 0, len(counts)


def installs(args, st, template, work, name, n, failures, warm=False):
    """n cold installs at once against a fresh larder; with warm, n more at
    once afterwards against the now-full cache. Returns the measurements."""
    d = os.path.join(work, name)
    os.makedirs(d)
    lar = ngx = None
    out = {}
    try:
        lar, ngx = start_larder(args, work, name + "-stack", st.port)
        passes = [("cold", n)] + ([("warm", n)] if warm else [])
        for label, count in passes:
            pd = os.path.join(d, label)
            os.makedirs(pd)
            venvs = [stack.clone_venv(template, os.path.join(pd, "venv%d" % i))
                     for i in range(count)]
            st.reset()
            cpu = CpuWatch(work).start()
            wall, results = run_pips(venvs, ngx.base + "/root/pypi/simple/", pd,
                                     args.pip_timeout)
            cpu = cpu.stop()
            counters = st.counters()
            fails = 0
            for v, (rc, _, log_path) in zip(venvs, results):
                got = stack.installed(v) if rc == 0 else None
                if rc != 0 or got != EXPECTED:
                    fails += 1
                    with open(log_path, errors="replace") as f:
                        tail = f.read()[-2000:]
                    failures.append("%s %s install in %s: rc %s, installed %r\n%s"
                                    % (name, label, v, rc, got, tail))
            most, things = upstream_max(counters)
            out[label] = {"seconds": wall, "installs": count, "failures": fails,
                          "each_s": [round(r[1], 3) for r in results],
                          "upstream_max_per_item": most, "upstream_items": things,
                          "upstream_file_gets": sum(counters["files"].values()),
                          "cpu": cpu}
            shutil.rmtree(pd, ignore_errors=True)
        check_store(lar, name, failures)
        out["http_errors"] = check_responses(ngx, name, failures)
    finally:
        stop_larder(lar, ngx)
    return out


def install_round(i, args, st, template, work, failures):
    order = ("one", "ten") if i % 2 == 0 else ("ten", "one")
    res = {"order": list(order)}
    for side in order:
        if side == "one":
            res["one"] = installs(args, st, template, work, "one%d" % (i + 1), 1,
                                  failures)["cold"]
            m = res["one"]
            log("round %d installs one  %6.2f s  upstream max %d per item  "
                "load %.2f, others %2.0f%%" % (i + 1, m["seconds"], m["upstream_max_per_item"],
                                               m["cpu"]["load1"],
                                               m["cpu"]["others_share"] * 100))
        else:
            r = installs(args, st, template, work, "ten%d" % (i + 1), args.installs, failures,
                         warm=not args.no_warm)
            res["ten"] = r["cold"]
            res["warm"] = r.get("warm")
            for label in ("ten", "warm"):
                m = res[label]
                if m is None:
                    continue
                log("round %d installs %-4s %6.2f s  failures %d, upstream max %d per item, "
                    "pip CPU %.1f s  load %.2f, others %2.0f%%" % (
                        i + 1, label, m["seconds"], m["failures"], m["upstream_max_per_item"],
                        m["cpu"]["pip_cpu_s"], m["cpu"]["load1"],
                        m["cpu"]["others_share"] * 100))
    res["ratio"] = res["ten"]["seconds"] / res["one"]["seconds"]
    if res.get("warm"):
        res["cold_over_warm"] = res["ten"]["seconds"] / res["warm"]["seconds"]
    return res


# ---------------------------------------------------------------- report

def summary(res):
    b = res.get("burst_rounds") or []
    i = res.get("install_rounds") or []
    s = {}
    if b:
        s["burst"] = {
            "seconds": summarise([r["burst"]["seconds"] for r in b]),
            "direct_seconds": summarise([r["direct"]["seconds"] for r in b]),
            "ratio": summarise([r["ratio"] for r in b]),
            "first_byte_max": summarise([r["burst"]["first_byte_max"] for r in b]),
            "first_byte_all": summarise([x["t_first"] for r in b for x in r["burst"]["readers"]]),
            "upstream_gets": summarise([r["burst"]["upstream_gets"] for r in b]),
            "load1": summarise([r[k]["cpu"]["load1"] for r in b for k in ("burst", "direct")]),
            "others_share": summarise([r[k]["cpu"]["others_share"]
                                       for r in b for k in ("burst", "direct")]),
        }
    if i:
        s["installs"] = {
            "ten_seconds": summarise([r["ten"]["seconds"] for r in i]),
            "one_seconds": summarise([r["one"]["seconds"] for r in i]),
            "ratio": summarise([r["ratio"] for r in i]),
            "failures": sum(r["ten"]["failures"] + r["one"]["failures"]
                            + (r["warm"]["failures"] if r.get("warm") else 0) for r in i),
            "upstream_max_per_item": max(r["ten"]["upstream_max_per_item"] for r in i),
            "ten_pip_cpu_s": summarise([r["ten"]["cpu"]["pip_cpu_s"] for r in i]),
            # The ratio the clients alone impose: ten pips' CPU time spread
            # over every CPU, against one install's wall time.
            "client_floor": summarise([max(r["one"]["seconds"], r["ten"]["cpu"]["pip_cpu_s"] / NCPU)
                                       / r["one"]["seconds"] for r in i]),
            "load1": summarise([r[k]["cpu"]["load1"] for r in i for k in ("one", "ten")]),
            "others_share": summarise([r[k]["cpu"]["others_share"]
                                       for r in i for k in ("one", "ten")]),
        }
        if all(r.get("warm") for r in i):
            s["installs"]["warm_seconds"] = summarise([r["warm"]["seconds"] for r in i])
            s["installs"]["cold_over_warm"] = summarise([r["cold_over_warm"] for r in i])
    return s


def cell(d, fmt="%.2f", unit=""):
    if d is None:
        return "-"
    return ((fmt + unit + " (" + fmt + ".." + fmt + ")")
            % (d["median"], d["min"], d["max"]))


def report(res, args):
    s = res["summary"]
    m = res["machine"]
    print()
    print("larder cold bursts: %d round(s), %d CPU(s), load average %s at the start%s"
          % (args.rounds, NCPU, " ".join("%.2f" % x for x in m["loadavg_start"]),
             ", SMOKE (figures mean nothing)" if args.smoke else ""))
    print("larder %s%s, %d workers; nginx %s, %d workers"
          % (m["larder"], " (SANITIZER BUILD)" if m["larder_sanitizers"] else "",
             args.larder_workers, m["nginx"], args.nginx_workers))
    rows = []
    goals = res["goals"]
    if "burst" in s:
        b = s["burst"]
        rows += [
            ("burst: %d readers, %.0f MiB, wall" % (READERS, res["big"]["size"] / 2**20),
             cell(b["seconds"], unit=" s"), "direct " + cell(b["direct_seconds"], unit=" s"),
             cell(b["ratio"]), "<= %.1f %s" % (BURST_GOAL, met(goals["burst_ratio_met"]))),
            ("  first byte, slowest reader", cell(b["first_byte_max"], "%.3f", " s"),
             "half the direct time %.2f s" % (b["direct_seconds"]["median"] / 2), "",
             "before it %s" % met(goals["first_byte_met"])),
            ("  upstream GETs of the file", cell(b["upstream_gets"], "%d"), "", "",
             "1 %s" % met(goals["one_fetch_met"])),
        ]
    if "installs" in s:
        n = s["installs"]
        rows += [
            ("installs: %d at once, cold, wall" % args.installs, cell(n["ten_seconds"], unit=" s"),
             "one cold " + cell(n["one_seconds"], unit=" s"), cell(n["ratio"]),
             "<= %.1f %s" % (INSTALL_GOAL, met(goals["install_ratio_met"]))),
            ("  failed installs", "%d" % n["failures"], "", "",
             "0 %s" % met(n["failures"] == 0)),
            ("  upstream fetches per page/file", "max %d" % n["upstream_max_per_item"], "", "",
             "1 %s" % met(n["upstream_max_per_item"] <= 1)),
        ]
        if "warm_seconds" in n:
            rows.append(("  context: %d at once, warm" % args.installs,
                         cell(n["warm_seconds"], unit=" s"), "cold / warm", cell(n["cold_over_warm"]),
                         ""))
        rows.append(("  context: pip CPU of the %d" % args.installs,
                     cell(n["ten_pip_cpu_s"], "%.1f", " s"),
                     "/ %d CPUs = %.1f s at best" % (NCPU, n["ten_pip_cpu_s"]["median"] / NCPU),
                     cell(n["client_floor"]), "(the clients' own floor)"))
    hdr = ("", "measured median (min..max)", "reference median (min..max)",
           "ratio (min..max)", "goal")
    table = [hdr] + rows
    widths = [max(len(r[c]) for r in table) for c in range(len(hdr))]
    print()
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print()
    print("per round: measured / reference; load: 1-minute load average at the start of the")
    print("measured / reference run; others: share of all CPUs' time that went to processes")
    print("not of this benchmark during them")
    for k, r in enumerate(res.get("burst_rounds") or []):
        print("  %d burst    %-14s %5.2f / %5.2f s = %.2f  first bytes %s s  GETs %d"
              "  load %.1f/%.1f  others %.0f%%/%.0f%%" % (
                  k + 1, "+".join(r["order"]), r["burst"]["seconds"], r["direct"]["seconds"],
                  r["ratio"], " ".join("%.3f" % x["t_first"] for x in r["burst"]["readers"]),
                  r["burst"]["upstream_gets"], r["burst"]["cpu"]["load1"],
                  r["direct"]["cpu"]["load1"], r["burst"]["cpu"]["others_share"] * 100,
                  r["direct"]["cpu"]["others_share"] * 100))
    for k, r in enumerate(res.get("install_rounds") or []):
        print("  %d installs %-14s %5.2f / %5.2f s = %.2f  failures %d  warm %s"
              "  load %.1f/%.1f  others %.0f%%/%.0f%%" % (
                  k + 1, "+".join(r["order"]), r["ten"]["seconds"], r["one"]["seconds"],
                  r["ratio"], r["ten"]["failures"] + r["one"]["failures"],
                  "%.2f s" % r["warm"]["seconds"] if r.get("warm") else "-",
                  r["ten"]["cpu"]["load1"], r["one"]["cpu"]["load1"],
                  r["ten"]["cpu"]["others_share"] * 100, r["one"]["cpu"]["others_share"] * 100))
    print("  load average at the end: %s" % " ".join("%.2f" % x for x in m["loadavg_end"]))
    if m["larder_sanitizers"]:
        print()
        print("NOTE: %s is a sanitizer (--enable-debug) build; its figures do not represent"
              " a release build." % m["larder"])
    if res["failures"]:
        print()
        print("FAILED (%d):" % len(res["failures"]))
        for f in res["failures"]:
            print("  " + f.replace("\n", "\n    "))


def met(flag):
    return "met" if flag else "MISSED"


def goals(s):
    g = {}
    if "burst" in s:
        b = s["burst"]
        g["burst_ratio_met"] = b["ratio"]["median"] <= BURST_GOAL
        g["first_byte_met"] = b["first_byte_max"]["max"] < b["direct_seconds"]["median"] / 2
        g["one_fetch_met"] = b["upstream_gets"]["max"] == 1
    if "installs" in s:
        n = s["installs"]
        g["install_ratio_met"] = n["ratio"]["median"] <= INSTALL_GOAL
        g["no_failures_met"] = n["failures"] == 0
        g["one_fetch_per_item_met"] = n["upstream_max_per_item"] <= 1
    return g


def machine_info(larder_bin):
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    nv = subprocess.run([stack.NGINX, "-v"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT).stdout.decode().strip()
    with open(larder_bin, "rb") as f:
        blob = f.read()
    return {"nproc": NCPU, "cpu": cpu, "kernel": platform.release(),
            "python": platform.python_version(),
            "nginx": nv.replace("nginx version: ", ""), "larder": larder_bin,
            "larder_sanitizers": b"libasan.so" in blob or b"__asan_init" in blob,
            "loadavg_start": loadavg()}


# ---------------------------------------------------------------- main

def run(args, work, res, failures):
    wheel_dir = os.path.join(work, "wheels")
    t = time.monotonic()
    big = build_inputs(wheel_dir, args.size_mb)
    res["big"] = {"filename": os.path.basename(big), "size": os.path.getsize(big),
                  "sha256": wheels.sha256_file(big)}
    args.rate = res["big"]["size"] / args.transfer_s
    res["rate_bytes_per_s"] = round(args.rate)
    log("built the wheels (%s: %.1f MiB) in %.1f s; stand-in rate %.1f MB/s for %.1f s"
        % (res["big"]["filename"], res["big"]["size"] / 2**20, time.monotonic() - t,
           args.rate / 1e6, args.transfer_s))
    template = None
    if "installs" in args.only:
        t = time.monotonic()
        template = stack.make_venv(os.path.join(work, "template-venv"))
        log("template venv in %.1f s" % (time.monotonic() - t))

    st = stack.Standin(wheel_dir, os.path.join(work, "standin"))
    _pieces.append(st)
    st.start()
    res["burst_rounds"], res["install_rounds"] = [], []
    for i in range(args.rounds):
        if "burst" in args.only:
            res["burst_rounds"].append(burst_round(i, args, st, res["big"], work, failures))
        if "installs" in args.only:
            res["install_rounds"].append(install_round(i, args, st, template, work, failures))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="larder's cold bursts against their references, measured in one run",
        epilog="Exit status 1 when something failed (a wrong body, a failed install, a 5xx);"
               " the goals are reported, never enforced.")
    ap.add_argument("--rounds", type=int, default=None, help="rounds, order alternating (3)")
    ap.add_argument("--size-mb", type=float, default=None, help="the large wheel, MiB (90)")
    ap.add_argument("--transfer-s", type=float, default=None,
                    help="seconds one throttled download of it takes (5)")
    ap.add_argument("--installs", type=int, default=None, help="installs at once (10)")
    ap.add_argument("--no-warm", action="store_true",
                    help="skip the warm installs (context, not a goal)")
    ap.add_argument("--only", choices=("burst", "installs"), action="append",
                    help="run one workload (repeatable; default both)")
    ap.add_argument("--smoke", action="store_true",
                    help="8 MiB, 2 s transfer, 4 installs, 1 round: proves it runs")
    ap.add_argument("--json", metavar="OUT", help="write every figure here")
    ap.add_argument("--larder", default=stack.larder_bin(),
                    help="the larder binary ($LARDER_BIN, else ./larder)")
    ap.add_argument("--larder-workers", type=int, default=12,
                    help="larder serve --workers (12: every client has one)")
    ap.add_argument("--nginx-workers", type=int, default=NCPU,
                    help="nginx worker_processes (the CPU count, as `auto`)")
    ap.add_argument("--pip-timeout", type=float, default=300, help="per install, s (300)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args(argv)
    smoke = {"rounds": 1, "size_mb": 8, "transfer_s": 2.0, "installs": 4}
    full = {"rounds": 3, "size_mb": 90, "transfer_s": 5.0, "installs": 10}
    for k, v in (smoke if args.smoke else full).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.only = args.only or ["burst", "installs"]
    args.larder = os.path.abspath(args.larder)
    args.deadline = max(60.0, 10 * args.transfer_s)

    why = stack.missing_reason()
    if not os.access(args.larder, os.X_OK):
        why = "larder binary not found at %s" % args.larder
    elif why and why.startswith("larder binary"):
        why = None
    if "installs" in args.only and subprocess.run(
            [stack.PYTHON, "-c", "import ensurepip, venv"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode != 0:
        why = why or "python3-venv not installed (apt-get install python3-venv)"
    if args.rounds < 1 or args.installs < 1 or args.size_mb <= 0 or args.transfer_s <= 0:
        why = why or "--rounds, --installs, --size-mb and --transfer-s must be positive"
    if why:
        sys.stderr.write("burst: cannot run: %s\n" % why)
        return 2

    def on_signal(sig, _frame):
        raise KeyboardInterrupt("signal %d" % sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    res = {"machine": machine_info(args.larder),
           "command": " ".join(["contrib/bench/burst.py"] + list(
               sys.argv[1:] if argv is None else argv))}
    failures = []
    work = tempfile.mkdtemp(prefix="larder-burst-")
    status = 0
    try:
        run(args, work, res, failures)
    except (Failure, RuntimeError, OSError, subprocess.CalledProcessError) as e:
        # RuntimeError: a piece of the stack would not start (stack.py).
        failures.append("aborted: %s" % e)
    except KeyboardInterrupt as e:
        failures.append("interrupted (%s)" % e)
        status = 130
    finally:
        teardown()
        if args.keep:
            log("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    res["machine"]["loadavg_end"] = loadavg()
    res["failures"] = failures
    res["ok"] = not failures
    res["settings"] = {k: getattr(args, k) for k in (
        "rounds", "size_mb", "transfer_s", "installs", "no_warm", "only", "smoke",
        "larder_workers", "nginx_workers")}
    complete = (len(res.get("burst_rounds") or []) == args.rounds or "burst" not in args.only) \
        and (len(res.get("install_rounds") or []) == args.rounds or "installs" not in args.only)
    if complete:
        res["summary"] = summary(res)
        res["goals"] = goals(res["summary"])
        sys.stderr.flush()
        report(res, args)
        sys.stdout.flush()
    else:
        for f in failures:
            sys.stderr.write("burst: FAILED: %s\n" % f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2, sort_keys=True)
            f.write("\n")
    if failures and not status:
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
