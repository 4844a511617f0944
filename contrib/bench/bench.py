#!/usr/bin/python3
"""The benchmark harness: larder against the field, in one run.

Starts the stand-in upstream (tests/integration/standin.py) behind a
simulated wide-area link (wan.py: latency per round trip and one bandwidth
cap shared by every connection), serves it the corpus of corpus.py (about 30
packages with real dependency chains, pages of 0.5 and 2.5 MB, a 90 MB
wheel), and drives the same workloads through every party of parties.py
(direct, nginx static, larder behind nginx, lighttpd and Apache, nginx
proxy_cache, and devpi, proxpi and pypiserver when present), each cold (a
party with an empty state) and warm, in rounds whose party order rotates:

  install           pip install --no-cache-dir --only-binary :all: of the
                    install set into a fresh venv (s)
  parallel-install  ten such installs at once, each in its own venv (s;
                    every failure counted)
  throughput-cold   the 90 MB wheel through an empty cache, 1 reader and 4
                    readers at once (MB/s, all readers' bytes; upstream GETs
                    counted, bodies hashed)
  slow-misses       50 cold downloads the upstream sends slowly (about 4 s
                    each) at once; meanwhile the latency of a warm page and a
                    warm file, each request on a new connection (max ms), and
                    the memory each slow stream costs (MiB; larder parties
                    and nginx proxy_cache), and the processes and summed
                    RSS of each party's whole tree meanwhile
  throughput-hot    the cached wheel, 1 and 8 readers (curl) (MB/s)
  metadata          the PEP 658 metadata of 16 wheels, one after another on
                    a kept-alive connection as pip fetches them, cold and
                    hot (docs/s)
  cold-files        48 cold wheels one after another on a kept-alive
                    connection (files/s), and the CPU the larder processes
                    spend per file beyond hashing it (ms)
  cold-pages        the project page of every project pip installs, cold,
                    one after another with pip's headers (median and sum
                    of the latencies, ms)
  swarm             warm project pages with the installer Accept header:
                    wrk with 1 and 32 connections (closed loop, peak req/s),
                    on the 0.5 MB page and on a small page
  swarm-latency     p95 latency at 70% of the 32-connection peak, offered
                    open loop (openloop.c) (ms)
  swarm-cpu         CPU seconds of the party's whole process tree (web
                    server included) per 1,000 warm page requests
  memory            peak RSS during the swarm: the largest worker, and the
                    whole process tree (MiB)
  endpoints         every URL larder serves, one warm request each
                    (larder behind nginx only)
  bounded           an install storm while larder's store is held at its
                    max_size (bounded.py): failed installs, the highest
                    store size over the limit (%), warm req/s bounded vs
                    unbounded (larder behind nginx only)
  upload            a 50 MB wheel uploaded as twine does to a hosted index,
                    against nginx receiving the same body into a file
                    (MB/s; hosted.py, larder behind nginx only)
  hosted-page       warm page of a hosted project, 1 and 32 connections,
                    against nginx static on the same bytes (req/s)
  virtual-page      warm pages of a virtual index: private-first over the
                    hosted layer, and fallback merging hosted and cached
                    (req/s, 32 connections)
  cooldown-page     warm pages with and without min_release_age, taking
                    turns (req/s, 32 connections; cooldown.py, larder behind
                    nginx only)
  metasynth         cold PEP 658 metadata made by range reads (the upstream
                    advertising none) against the same upstream advertising
                    it (docs/s; metasynth.py, larder behind nginx only)
  gzip-page         warm pages with and without Accept-Encoding: gzip, the
                    0.5 MB page and a small one, 32 connections (req/s;
                    compressed.py, larder behind nginx only)
  gzip-bytes        the bytes of one such answer, each way

and, for container images (oci.py: skopeo, Debian's docker-registry as the
upstream and as a pull-through cache, larder's /v2/; skipped with the
reason when docker-registry or skopeo is missing):

  oci-pull          skopeo copy of six images one after another, cold and
                    warm (s)
  oci-layer         a warm 30 MB layer, 1 and 8 curl readers (MB/s)
  oci-fleet         ten skopeo pulls of one image at once, cold and warm (s;
                    upstream requests per blob and manifest counted)
  oci-endpoints     warm manifest by digest and by tag (GET, HEAD),
                    tags/list, blob HEAD, /v2/: 32 connections (req/s)
  oci-burst         50 concurrent tags/list requests and GETs of a stale
                    tag: the upstream requests they cost
  oci-push          push of a --push-mb MB single-layer image to a hosted
                    registry of larder and to docker-registry (MB/s; larder's
                    largest worker's RSS), then the pushed layer read back
                    against nginx static (oci-push-pull, MB/s)

Every result carries the CPU seconds of the party's process tree (web
server, larder workers, detached fetchers) and its peak RSS over the
measurement, but slow-misses' (a sampler would disturb its latencies); raw
figures per round (upstream GETs, medians, ...) go in its "extra". The JSON report (schema in report.py) goes to --json; report.py
renders it into docs/performance.md with one SVG chart per workload.

Usage (from anywhere; larder is --larder, else $LARDER_BIN, else ./larder):
  contrib/bench/bench.py [--rounds 3] [--json bench.json] [--doc docs/performance.md]
      [--parties a,b] [--workloads x,y] [--latency-ms 20] [--mbit 200]
      [--venv DIR]      # where devpi-server, proxpi or pypiserver live
  contrib/bench/bench.py --smoke    # every workload once on a tiny corpus (CI)
Needs nginx, lighttpd, apache2 with mod_fcgid, mod_proxy_fcgi and
mod_xsendfile (and its ab), wrk, curl, python3-venv, cc, skopeo and
docker-registry (contrib/deps.sh test installs them). Run it on a release
build: an --enable-debug (ASan) binary measures the sanitizers. Exit
status: 0 when every request and install succeeded (goals are reported,
never enforced), 1 when something failed, 2 when it cannot run here.
"""

import argparse
import hashlib
import http.client
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
import time
from urllib.parse import urljoin, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import bounded as boundedmod  # noqa: E402
import cooldown as cooldownmod  # noqa: E402
import compressed as compressedmod  # noqa: E402
import hosted as hostedmod  # noqa: E402
import metasynth as metasynthmod  # noqa: E402
import corpus as corpusmod  # noqa: E402
import oci as ocimod  # noqa: E402
import parties as partymod  # noqa: E402
import stack  # noqa: E402
import standin  # noqa: E402
import wan as wanmod  # noqa: E402
import wheels  # noqa: E402

JSON_ACCEPT = stack.PIP_ACCEPT
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
PYPI_WORKLOADS = ["install", "parallel-install", "throughput-cold", "slow-misses",
                  "throughput-hot", "metadata", "cold-files", "cold-pages", "swarm",
                  "small-files", "endpoints", "bounded"] + hostedmod.WORKLOADS + \
    cooldownmod.WORKLOADS + metasynthmod.WORKLOADS + compressedmod.WORKLOADS
WORKLOADS = PYPI_WORKLOADS + ocimod.WORKLOADS
EXTRA_WORKLOADS = []
MB = 1e6


class Failure(Exception):
    """Something failed that voids the run's figures."""


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


# ---------------------------------------------------------------- upstream

class Upstream:
    """The stand-in behind two WAN relays (index host, files host) sharing
    one link; without --latency-ms and --mbit the relays are left out."""

    def __init__(self, work, wheel_dir, latency_ms, mbit):
        self.work = work
        self.wheel_dir = wheel_dir
        self.latency_ms = latency_ms
        self.mbit = mbit
        self.relay = self.standin = None
        self.files_host = "localhost"

    def start(self):
        sport, sfport = stack.free_port(), stack.free_port()
        wan = bool(self.latency_ms or self.mbit)
        self.index_port = stack.free_port() if wan else sport
        self.files_port = stack.free_port() if wan else sfport
        self.standin = stack.Standin(self.wheel_dir, os.path.join(self.work, "standin"),
                                     port=sport, files_port=sfport,
                                     public_files_port=self.files_port, quiet=True)
        self.standin.start(timeout=120)
        if wan:
            try:
                self.relay, _ = wanmod.spawn(
                    [(self.index_port, "127.0.0.1:%d" % sport),
                     (self.files_port, "127.0.0.1:%d" % sfport)],
                    self.latency_ms, self.mbit, os.path.join(self.work, "wan.log"),
                    python=stack.PYTHON)
            except RuntimeError as e:
                raise Failure(str(e))
        return self

    @property
    def index_url(self):
        return "http://127.0.0.1:%d/simple/" % self.index_port

    def counters(self):
        return self.standin.counters()

    def stop(self):
        if self.relay is not None:
            stack._stop_process(self.relay)
        if self.standin is not None:
            self.standin.stop()

    def describe(self):
        if not self.relay:
            return None
        return {"latency_ms": self.latency_ms, "bandwidth_mbit": self.mbit or None}


def _delta(before, after, table, key):
    return after.get(table, {}).get(key, 0) - before.get(table, {}).get(key, 0)


def upstream_gets(before, after, filename):
    """Whole-file upstream GETs of filename between two counter snapshots.
    A GET with a Range (larder reads a wheel's METADATA from its tail when
    upstream offers none) moves a few KiB, not the file: the stand-in
    counts it among the file's GETs and apart in "ranges"; it is left out
    here."""
    return (_delta(before, after, "files", filename) -
            _delta(before, after, "ranges", filename))


_PAGE_GET = re.compile(r"GET /simple/[^/]+/$")


def upstream_max_gets(before, after):
    """The most upstream GETs of one whole file (upstream_gets), of one
    project page and of one PEP 658 document between two counter snapshots
    (0 when none)."""
    def most(table, keep=lambda k: True):
        a, b = before.get(table, {}), after.get(table, {})
        return max([b[k] - a.get(k, 0) for k in b if keep(k)] + [0])
    files = max([upstream_gets(before, after, k) for k in after.get("files", {})] + [0])
    return {"files": files, "metadata": most("metadata"),
            "pages": most("requests", _PAGE_GET.match)}


# ---------------------------------------------------------------- /proc

def _stat(pid):
    """(utime + stime ticks, start time) of pid, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12]), fields[19]


def _user_sys(pid):
    """(utime + cutime, stime + cstime) of pid in clock ticks, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    f = [int(x) for x in s[s.rindex(")") + 2:].split()[11:15]]
    return f[0] + f[2], f[1] + f[3]


def _schedstat_ns(pid):
    """The time pid has run on a CPU (/proc/PID/schedstat), ns, or None."""
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _private_kb(pid):
    """Private_Clean + Private_Dirty of pid (/proc/PID/smaps_rollup), kB."""
    total = 0
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1])
    except OSError:
        pass
    return total


def _status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Meter:
    """CPU seconds and peak memory of a party's process tree over one
    measurement, sampled every 0.2 s (a process that exits between samples
    takes its last ticks with it). worker_peak_mib is the largest RSS one of
    the party's workers (larder's, or the server's processes) had during
    the measurement; worker_hwm_mib the largest high-water mark (VmHWM) of
    their lifetime, which a cold page parsed earlier may have set."""

    def __init__(self, party):
        self.party = party

    def _sample(self):
        pids = self.party.processes()
        rss = 0
        for pid in pids:
            st = _stat(pid)
            if st is None:
                continue
            key = (pid, st[1])
            self.first.setdefault(key, st[0] if not self.started else 0)
            self.last[key] = st[0]
            rss += _status_kb(pid, "VmRSS")
        self.peak_kb = max(self.peak_kb, rss)
        for pid in self.party.workers():
            self.worker_kb = max(self.worker_kb, _status_kb(pid, "VmRSS"))
            self.worker_hwm_kb = max(self.worker_hwm_kb, _status_kb(pid, "VmHWM"))

    def _loop(self):
        while not self._stop.wait(0.2):
            self._sample()

    def __enter__(self):
        self.first, self.last = {}, {}
        self.peak_kb = self.worker_kb = self.worker_hwm_kb = 0
        self.started = False
        self._sample()
        self.started = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.wall = time.monotonic() - self.t0
        self._stop.set()
        self._thread.join()
        self._sample()
        self.cpu_s = sum(self.last[k] - self.first[k] for k in self.last) / CLK_TCK
        self.peak_mib = self.peak_kb / 1024.0
        self.worker_peak_mib = self.worker_kb / 1024.0
        self.worker_hwm_mib = self.worker_hwm_kb / 1024.0
        return False


# ---------------------------------------------------------------- results

class Results:
    """Samples per (workload, party, case), summarised into the report's
    workloads (medians, spread, ratio against the workload's reference)."""

    def __init__(self):
        self.samples = {}
        self.meta = {}
        self.order = []

    def workload(self, name, title, unit, better, reference, cases, description):
        self.meta[name] = dict(name=name, title=title, unit=unit, better=better,
                               reference=reference, cases=cases, description=description)
        if name not in self.order:
            self.order.append(name)

    def add(self, workload, party, case, value, meter=None, errors=0, note=None, extra=None):
        s = self.samples.setdefault((workload, party, case), {
            "values": [], "cpu": [], "rss": [], "errors": 0, "notes": [], "extra": []})
        if value is not None:
            s["values"].append(value)
        if meter is not None:
            s["cpu"].append(meter.cpu_s)
            s["rss"].append(meter.peak_mib)
        s["errors"] += errors
        if note and note not in s["notes"]:
            s["notes"].append(note)
        if extra is not None:
            s["extra"].append(extra)

    def get(self, workload, party, case):
        s = self.samples.get((workload, party, case))
        return statistics.median(s["values"]) if s and s["values"] else None

    def extras(self, workload, party, case):
        s = self.samples.get((workload, party, case))
        return s["extra"] if s else []

    def errors(self, workload, party):
        return sum(v["errors"] for (w, p, _), v in self.samples.items()
                   if w == workload and p == party)

    def build(self, party_order):
        out = []
        for name in self.order:
            m = dict(self.meta[name])
            m["results"] = []
            for party in party_order:
                for case in m["cases"]:
                    s = self.samples.get((name, party, case))
                    if s is None:
                        continue
                    vals = s["values"]
                    med = statistics.median(vals) if vals else None
                    ref = self.get(name, m["reference"], case)
                    m["results"].append({
                        "party": party, "case": case, "median": _r(med),
                        "min": _r(min(vals)) if vals else None,
                        "max": _r(max(vals)) if vals else None,
                        "samples": [_r(v) for v in vals],
                        "ratio": _r(med / ref) if med is not None and ref else None,
                        "cpu_s": _r(statistics.median(s["cpu"])) if s["cpu"] else None,
                        "peak_rss_mib": _r(max(s["rss"])) if s["rss"] else None,
                        "errors": s["errors"],
                        "note": "; ".join(s["notes"]) or None,
                        "extra": [_rx(e) for e in s["extra"]] or None})
            out.append(m)
        return out


def _r(v, digits=4):
    if v is None:
        return None
    return float("%.*g" % (digits, v))


def _rx(x):
    """An extra for the report: its floats rounded as _r does."""
    if isinstance(x, float):
        return _r(x)
    if isinstance(x, dict):
        return {k: _rx(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rx(v) for v in x]
    return x


# ---------------------------------------------------------------- clients

class Client:
    """Sequential HTTP/1.1 requests over kept-alive connections, one per
    host, as pip makes them."""

    def __init__(self, timeout=120):
        self.conns = {}
        self.timeout = timeout

    def get(self, url, headers=None, method="GET"):
        u = urlsplit(url)
        key = (u.hostname, u.port or 80)
        for attempt in (0, 1):
            conn = self.conns.get(key)
            if conn is None:
                conn = http.client.HTTPConnection(key[0], key[1], timeout=self.timeout)
                self.conns[key] = conn
            try:
                path = u.path + ("?" + u.query if u.query else "")
                conn.request(method, path, headers=headers or {})
                r = conn.getresponse()
                body = r.read()
                return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body
            except (http.client.HTTPException, OSError):
                conn.close()
                self.conns.pop(key, None)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}


def page_files(client, index_url, project):
    """{filename: absolute URL (no fragment)} from a party's project page
    (PEP 691 JSON when offered, else PEP 503 anchors)."""
    url = urljoin(index_url, project + "/")
    status, headers, body = client.get(url, {"Accept": JSON_ACCEPT})
    if status != 200:
        raise Failure("%s: %d" % (url, status))
    out = {}
    if "json" in headers.get("content-type", ""):
        for f in json.loads(body)["files"]:
            out[f["filename"]] = urljoin(url, f["url"]).split("#")[0]
    else:
        for href, name in re.findall(rb'<a[^>]*href="([^"]+)"[^>]*>([^<]+)</a>', body):
            out[name.decode().strip()] = urljoin(url, href.decode().replace("&amp;", "&")) \
                .split("#")[0]
    return out


def curl_readers(urls, outdir=None, reps=1, timeout=900):
    """Starts one curl per URL at the same moment, each fetching its URL reps
    times over one connection (into outdir/bodyN when given); returns (wall
    seconds, [(http code of the worst transfer, bytes of all transfers,
    seconds to the first byte, seconds, path or None)])."""
    t0 = time.monotonic()
    out = curl_wait(curl_start(urls, outdir, reps, timeout), reps, timeout)
    return time.monotonic() - t0, out


def curl_start(urls, outdir=None, reps=1, timeout=900):
    """The curl processes of curl_readers, started: [(Popen, path or None)]."""
    procs = []
    fmt = "%{http_code} %{size_download} %{time_starttransfer} %{time_total}\\n"
    for i, url in enumerate(urls):
        path = os.path.join(outdir, "body%d" % i) if outdir else None
        cmd = ["curl", "-sS", "--max-time", str(timeout), "-w", fmt]
        for _ in range(reps):
            cmd += ["-o", path or "/dev/null", url]
        procs.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE),
                      path))
    return procs


def curl_wait(procs, reps=1, timeout=900):
    """Waits for the curls of curl_start; their rows as curl_readers gives."""
    out = []
    for p, path in procs:
        try:
            so, _ = p.communicate(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            p.kill()
            so, _ = p.communicate()
        rows = [line.split() for line in so.decode().splitlines()]
        if p.returncode != 0 or len(rows) != reps or any(len(r) != 4 for r in rows):
            out.append((0, 0, None, None, path))
            continue
        code = max((int(r[0]) for r in rows), key=lambda c: c != 200)
        out.append((code, sum(int(r[1]) for r in rows), float(rows[0][2]),
                    sum(float(r[3]) for r in rows), path))
    return out


def store_cpu(data_dir, bodies):
    """CPU seconds this process spends storing bodies as larder's store
    does (blob.c): a temp file in DATA/tmp written 16 KiB at a time, fsync,
    the two shard levels made, rename, fsync of the directory; in a tree of
    its own beside the party's, removed after."""
    root = tempfile.mkdtemp(prefix="store-ref.", dir=data_dir)
    try:
        tmpdir = os.path.join(root, "tmp")
        os.mkdir(tmpdir)
        t = time.process_time()
        for i, body in enumerate(bodies):
            digest = hashlib.sha256(b"store-ref %d" % i).hexdigest()
            tmp = os.path.join(tmpdir, "%d.part" % i)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            view = memoryview(body)
            for off in range(0, len(body), 16384):
                os.write(fd, view[off:off + 16384])
            os.fsync(fd)
            os.close(fd)
            leaf = os.path.join(root, digest[:2], digest[2:4])
            os.makedirs(leaf, exist_ok=True)
            os.rename(tmp, os.path.join(leaf, digest))
            dfd = os.open(leaf, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(dfd)
            os.close(dfd)
        return time.process_time() - t
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fresh_get(url, headers=None, timeout=30):
    """One GET on a new connection, body read: (status, body, ms)."""
    u = urlsplit(url)
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        conn.request("GET", u.path + ("?" + u.query if u.query else ""),
                     headers=headers or {})
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    return r.status, body, (time.monotonic() - t0) * 1000


# ---------------------------------------------------------------- the run

class Bench:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.res = Results()
        self.failures = []
        self.running = []
        self.endpoints = []

    def rounds(self, workload):
        if workload == "parallel-install":
            return self.args.parallel_rounds
        return self.args.rounds

    # -- parties

    def fresh(self, name, larder_extra=None):
        """The party started with an empty state (a larder party with
        larder_extra's [larder] keys, when given)."""
        p = self.parties[name]
        if isinstance(p, partymod.Larder):
            # as shipped (the tests' config turns both prefetches off)
            keys = {"prefetch_metadata": "yes", "prefetch_max": "4"}
            keys.update(kv.split("=", 1) for kv in self.args.larder_set)
            keys.update(larder_extra or {})
            p.larder_extra = keys
        p.start()
        self.running.append(p)
        return p

    def done(self, p):
        p.stop()
        if p in self.running:
            self.running.remove(p)

    def present(self, names):
        return [n for n in names if n in self.parties and self.parties[n].present]

    def caches(self):
        """Every present party pip can use, direct included."""
        return self.present(["direct"] + [n for n in partymod.ALL
                                          if n not in ("direct", "nginx-static")])

    def rotate(self, names, rnd):
        k = rnd % len(names) if names else 0
        return names[k:] + names[:k]

    def fail(self, what):
        log("FAILED: " + what)
        self.failures.append(what)

    # -- pip

    def venv(self, tag):
        path = os.path.join(self.work, "venvs", tag)
        if os.path.exists(path):
            shutil.rmtree(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return stack.clone_venv(self.template, path)

    def pip_cmd(self, venv, index_url):
        return [os.path.join(venv, "bin", "pip"), "install", "--no-cache-dir",
                "--disable-pip-version-check", "--no-input", "--retries", "0",
                "--timeout", "60", "--only-binary", ":all:", "--index-url", index_url] \
            + list(self.corpus["install_set"])

    def pips(self, party, n, tag):
        """n pip installs at once through party; returns (wall, failures)."""
        venvs = [self.venv("%s-%d" % (tag, i)) for i in range(n)]
        procs = []
        t0 = time.monotonic()
        for i, v in enumerate(venvs):
            out = open(os.path.join(v, "pip.log"), "wb")
            procs.append(subprocess.Popen(self.pip_cmd(v, party.index_url), stdout=out,
                                          stderr=subprocess.STDOUT, env=stack.clean_env(),
                                          start_new_session=True))
            out.close()
        for p in procs:
            try:
                p.wait(timeout=900)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        wall = time.monotonic() - t0
        bad = 0
        want = {corpusmod.normalise(n) for n in self.corpus["install_closure"]}
        for p, v in zip(procs, venvs):
            got = set(stack.installed(v)) if p.returncode == 0 else set()
            if p.returncode != 0 or got != want:
                bad += 1
                with open(os.path.join(v, "pip.log"), errors="replace") as f:
                    tail = f.read()[-1500:]
                self.fail("%s %s: pip exit %s, installed %s\n%s" % (
                    party.name, tag, p.returncode, sorted(got ^ want), tail))
            shutil.rmtree(v, ignore_errors=True)
        return wall, bad

    # -- workloads

    def w_install(self):
        r = self.res
        r.workload("install", "pip install, %d packages" % len(self.corpus["install_closure"]),
                   "s", "lower", "direct", ["cold", "warm"],
                   "One `pip install --no-cache-dir --only-binary :all:` of the install set "
                   "into a fresh venv: cold against a party with an empty state, then warm "
                   "(a second fresh venv).")
        self._installs("install", 1)

    def w_parallel(self):
        n = self.args.installs
        self.res.workload(
            "parallel-install", "%d pip installs at once" % n, "s", "lower", "direct",
            ["cold", "warm"],
            "%d installs of the install set started at the same moment, each in its own "
            "fresh venv; wall time until the last ends. Every failed install is counted "
            "and voids the run; the most upstream GETs of one page and of one file are "
            "counted (a cache should make one of each, cold)." % n)
        self._installs("parallel-install", n)

    def _installs(self, name, n):
        for rnd in range(self.rounds(name)):
            for pname in self.rotate(self.caches(), rnd):
                p = self.fresh(pname)
                try:
                    for case in ("cold", "warm"):
                        c0 = self.upstream.counters()
                        with Meter(p) as m:
                            wall, bad = self.pips(p, n, "%s-%s-%s" % (name, pname, case))
                        c1 = self.upstream.counters()
                        most = upstream_max_gets(c0, c1)
                        extra = {
                            "wall_s": wall, "upstream_max_gets_per_file": most["files"],
                            "upstream_max_gets_per_page": most["pages"],
                            "upstream_max_gets_per_metadata": most["metadata"],
                            "upstream_wheels": sum(
                                1 for k in c1.get("files", {})
                                if k.endswith(".whl") and upstream_gets(c0, c1, k) > 0)}
                        if isinstance(p, partymod.Larder) and case == "cold":
                            extra.update(prefetch_counts(p))
                        self.res.add(name, pname, case, wall, m, errors=bad, extra=extra)
                        log("%s round %d %-18s %-4s %7.2f s  cpu %.2f s  upstream GETs per "
                            "page <= %d, per file <= %d%s" % (
                                name, rnd + 1, pname, case, wall, m.cpu_s, most["pages"],
                                most["files"], "  FAILED %d" % bad if bad else ""))
                finally:
                    self.done(p)

    def big_url(self, p, client):
        big = self.corpus["big_wheel"]
        files = page_files(client, p.index_url, big["project"])
        if big["filename"] not in files:
            raise Failure("%s: %s not on its page" % (p.name, big["filename"]))
        return files[big["filename"]]

    def w_throughput_cold(self):
        big = self.corpus["big_wheel"]
        self.res.workload(
            "throughput-cold", "the %.0f MB wheel through an empty cache" % (big["size"] / MB),
            "MB/s", "higher", "direct", ["1-reader", "4-readers"],
            "Readers released at the same moment against a party with an empty state, "
            "through the simulated WAN; MB/s of all readers' bytes over the wall time until "
            "the last has every byte. Each body's sha256 is checked; upstream GETs of the "
            "file are counted (a cache should make one).")
        for rnd in range(self.rounds("throughput-cold")):
            for pname in self.rotate(self.caches(), rnd):
                for case, n in (("1-reader", 1), ("4-readers", 4)):
                    p = self.fresh(pname)
                    client = Client()
                    try:
                        url = self.big_url(p, client)
                        outdir = tempfile.mkdtemp(dir=self.work, prefix="bodies-")
                        c0 = self.upstream.counters()
                        with Meter(p) as m:
                            wall, rd = curl_readers([url] * n, outdir)
                        gets = upstream_gets(c0, self.upstream.counters(), big["filename"])
                        bad = 0
                        for code, size, _, _, path in rd:
                            if code != 200 or size != big["size"] or \
                                    wheels.sha256_file(path) != big["sha256"]:
                                bad += 1
                                self.fail("%s cold %s: http %s, %s bytes" % (
                                    pname, case, code, size))
                        shutil.rmtree(outdir, ignore_errors=True)
                        first = max(x[2] or 0 for x in rd)
                        self.res.add("throughput-cold", pname, case,
                                     n * big["size"] / MB / wall, m, errors=bad,
                                     note="upstream GETs %d" % gets if pname != "direct"
                                     else None,
                                     extra={"wall_s": wall, "upstream_gets": gets,
                                            "first_byte_max_s": first})
                        log("throughput-cold round %d %-18s %-9s %6.2f s  %.1f MB/s  "
                            "first byte <= %.3f s  upstream GETs %d" % (
                                rnd + 1, pname, case, wall, n * big["size"] / MB / wall,
                                first, gets))
                    finally:
                        client.close()
                        self.done(p)

    # -- slow misses

    def w_slow_misses(self):
        n, secs = self.args.slow_files, self.args.slow_seconds
        slow = self.corpus["slow_files"][:n]
        if len(slow) < n:
            raise Failure("the corpus has %d slow files, %d wanted" % (len(slow), n))
        size = statistics.median(f["size"] for f in slow)
        # The stand-in sends a throttled body in CHUNK writes, the first at
        # once: the last leaves (writes - 1) * CHUNK / rate seconds in.
        writes = -(-int(size) // standin.CHUNK)
        rate = max(writes - 1, 1) * standin.CHUNK / secs
        small = self.corpus["swarm_pages"]["small"]
        names = self.present(list(partymod.LARDER_KINDS) + ["nginx-proxy-cache"])
        r = self.res
        r.workload(
            "slow-misses", "warm requests during %d slow cold downloads" % n, "ms",
            "lower", None, ["warm-page-max-ms", "warm-file-max-ms"],
            "A party with an empty state warms the %s project page (installer Accept "
            "header) and its smallest wheel (each fetched twice); then the upstream is "
            "throttled to %.0f KB/s per response, so that each of %d cold downloads of "
            "distinct %.0f KB wheels (bench-slow, files of one size added to the corpus "
            "for this) takes about %g s, and %d curl readers start them at once. From "
            "%g s in, while they run: 10 requests for the warm page and 10 for the warm "
            "file, one after another, each on a new connection; the figure is the "
            "slowest (the median is in the notes). Every body's sha256 is checked and "
            "upstream GETs per file are counted (a cache should make one)."
            % (small, rate / 1e3, n, size / 1e3, secs, n, min(1.0, secs / 4)))
        r.workload(
            "slow-misses-memory", "memory per slow cold download", "MiB", "lower", None,
            ["memory-per-stream"],
            "In the slow-misses workload, %g s after the %d downloads start: for larder, "
            "the private memory (Private_Clean + Private_Dirty of "
            "/proc/PID/smaps_rollup) of all its workers, less the same sum just before "
            "the downloads start, divided by %d (the workers the pool adds for them "
            "included); for nginx proxy_cache, the RSS of its whole process tree the "
            "same way." % (secs / 2, n, n))
        r.workload(
            "slow-misses-processes", "processes during %d slow cold downloads" % n,
            "processes", "lower", None, ["processes"],
            "In the slow-misses workload, %g s after the %d downloads start: the "
            "processes of the party's whole tree (web server, larder supervisor and "
            "workers, detached fetchers)." % (secs / 2, n))
        r.workload(
            "slow-misses-rss", "memory during %d slow cold downloads" % n, "MiB",
            "lower", None, ["all-processes"],
            "In the slow-misses workload, %g s after the %d downloads start: the RSS "
            "(VmRSS) of every process of the party's whole tree, summed (shared pages "
            "counted once per process, so an upper bound)." % (secs / 2, n))
        for rnd in range(self.rounds("slow-misses")):
            for pname in self.rotate(names, rnd):
                p = self.fresh(pname)
                try:
                    self._slow_misses(p, rnd, slow, rate, secs, small)
                finally:
                    try:
                        self.upstream.standin.control(rate=None)
                    finally:
                        self.done(p)
        for pname in names:
            for case, key in (("warm-page-max-ms", "page_ms"),
                              ("warm-file-max-ms", "file_ms")):
                ms = [x for e in r.extras("slow-misses", pname, case) for x in e[key]]
                if ms:
                    r.add("slow-misses", pname, case, None,
                          note="median %.2f ms of %d requests" % (statistics.median(ms),
                                                                  len(ms)))

    def _slow_memory_kb(self, p):
        """(kB, processes counted): larder's workers' private memory, else
        the RSS of the party's whole tree."""
        if isinstance(p, partymod.Larder):
            pids = p.workers()
            return sum(_private_kb(pid) for pid in pids), len(pids)
        pids = p.processes()
        return sum(_status_kb(pid, "VmRSS") for pid in pids), len(pids)

    def _slow_misses(self, p, rnd, slow, rate, secs, small):
        pname = p.name
        r = self.res
        wheel_dir = self.corpus["wheel_dir"]
        client = Client()
        try:
            page_url = urljoin(p.index_url, small + "/")
            for _ in range(2):
                status, _, page = client.get(page_url, {"Accept": JSON_ACCEPT})
            if status != 200:
                raise Failure("%s: warm page %s: %d" % (pname, page_url, status))
            page_sha = hashlib.sha256(page).hexdigest()
            files = page_files(client, p.index_url, small)
            wheels_on_page = sorted(
                (os.path.getsize(os.path.join(wheel_dir, fn)), fn) for fn in files
                if fn.endswith(".whl") and os.path.exists(os.path.join(wheel_dir, fn)))
            if not wheels_on_page:
                raise Failure("%s: no wheel on the %s page" % (pname, small))
            warm_name = wheels_on_page[0][1]
            warm_url = files[warm_name]
            warm_sha = wheels.sha256_file(os.path.join(wheel_dir, warm_name))
            for _ in range(2):
                status, _, body = client.get(warm_url)
            if status != 200 or hashlib.sha256(body).hexdigest() != warm_sha:
                raise Failure("%s: warm file %s: %d, %d bytes" % (pname, warm_url, status,
                                                                  len(body)))
            slow_urls = page_files(client, p.index_url, slow[0]["project"])
        finally:
            client.close()
        missing = [f["filename"] for f in slow if f["filename"] not in slow_urls]
        if missing:
            raise Failure("%s: %s not on the %s page" % (pname, missing[0],
                                                          slow[0]["project"]))
        outdir = tempfile.mkdtemp(dir=self.work, prefix="slow-")
        mem0, procs0 = self._slow_memory_kb(p)
        c0 = self.upstream.counters()
        self.upstream.standin.control(rate=rate)
        t0 = time.monotonic()
        readers = curl_start([slow_urls[f["filename"]] for f in slow], outdir, timeout=300)
        page_ms, file_ms = [], []
        page_bad = file_bad = 0
        try:
            time.sleep(max(0.0, t0 + min(1.0, secs / 4) - time.monotonic()))
            for i in range(10):
                for what, url, hdrs, want, times in (
                        ("page", page_url, {"Accept": JSON_ACCEPT}, page_sha, page_ms),
                        ("file", warm_url, {}, warm_sha, file_ms)):
                    try:
                        status, body, ms = fresh_get(url, hdrs)
                    except (http.client.HTTPException, OSError) as e:
                        status, body, ms = "%s" % e, b"", None
                    if ms is not None:
                        times.append(ms)
                    if status != 200 or hashlib.sha256(body).hexdigest() != want or \
                            ms is None or ms > 5000:
                        if what == "page":
                            page_bad += 1
                        else:
                            file_bad += 1
                        self.fail("%s slow-misses: warm %s %s: %s, %d bytes, %s ms" % (
                            pname, what, url, status, len(body),
                            "%.0f" % ms if ms is not None else "-"))
            warm_done = time.monotonic() - t0
            time.sleep(max(0.0, t0 + secs / 2 - time.monotonic()))
            mem1, procs1 = self._slow_memory_kb(p)
            tree = p.processes()
            tree_kb = sum(_status_kb(pid, "VmRSS") for pid in tree)
            running = sum(1 for proc, _ in readers if proc.poll() is None)
        finally:
            self.upstream.standin.control(rate=None)
            rows = curl_wait(readers, timeout=300)
        wall = time.monotonic() - t0
        c1 = self.upstream.counters()
        bad = 0
        for f, (code, got, _, _, path) in zip(slow, rows):
            if code != 200 or got != f["size"] or wheels.sha256_file(path) != f["sha256"]:
                bad += 1
                self.fail("%s slow-misses: %s: http %s, %s bytes" % (pname, f["filename"],
                                                                     code, got))
        shutil.rmtree(outdir, ignore_errors=True)
        gets = [upstream_gets(c0, c1, f["filename"]) for f in slow]
        n = len(slow)
        per_stream = (mem1 - mem0) / 1024.0 / n
        common = {"rate_bps": rate, "streams": n, "streams_wall_s": wall,
                  "streams_running_at_sample": running, "warm_requests_done_s": warm_done,
                  "upstream_gets_min": min(gets), "upstream_gets_max": max(gets)}
        note = None
        if set(gets) != {1}:
            note = "upstream GETs per file %d..%d" % (min(gets), max(gets))
        r.add("slow-misses", pname, "warm-page-max-ms", max(page_ms) if page_ms else None,
              errors=page_bad, note=note,
              extra=dict(common, page_ms=page_ms, median_ms=statistics.median(page_ms)
                         if page_ms else None))
        r.add("slow-misses", pname, "warm-file-max-ms", max(file_ms) if file_ms else None,
              errors=file_bad, note=note,
              extra=dict(common, file_ms=file_ms, median_ms=statistics.median(file_ms)
                         if file_ms else None))
        r.add("slow-misses-memory", pname, "memory-per-stream", per_stream, errors=bad,
              extra=dict(common, before_kib=mem0, during_kib=mem1,
                         processes_before=procs0, processes_during=procs1,
                         measure="private" if isinstance(p, partymod.Larder) else "rss"))
        r.add("slow-misses-processes", pname, "processes", len(tree), extra=common)
        r.add("slow-misses-rss", pname, "all-processes", tree_kb / 1024.0,
              extra=dict(common, processes=len(tree)))
        log("slow-misses round %d %-18s %d streams at %.0f KB/s, %.2f s: warm page max "
            "%.1f ms (median %.1f), warm file max %.1f ms (median %.1f); %s %d -> %d "
            "processes, %.1f -> %.1f MiB, %.2f MiB per stream (%d streams running then); "
            "upstream GETs per file %d..%d; the whole tree: %d processes, %.1f MiB RSS" % (
                rnd + 1, pname, n, rate / 1e3, wall, max(page_ms or [0]),
                statistics.median(page_ms or [0]), max(file_ms or [0]),
                statistics.median(file_ms or [0]),
                "private" if isinstance(p, partymod.Larder) else "RSS", procs0, procs1,
                mem0 / 1024.0, mem1 / 1024.0, per_stream, running, min(gets), max(gets),
                len(tree), tree_kb / 1024.0))

    def w_throughput_hot(self):
        big = self.corpus["big_wheel"]
        reps = self.args.wheel_reps
        self.res.workload(
            "throughput-hot", "the cached %.0f MB wheel" % (big["size"] / MB), "MB/s",
            "higher", "nginx-static", ["1-reader", "8-readers"],
            "curl processes started at once, each downloading the cached wheel %d times "
            "over one connection; MB/s of all bytes. The reference is nginx sending the "
            "same file from disk." % reps)
        names = [n for n in self.present(["nginx-static"]) + self.caches() if n != "direct"]
        running = {}
        try:
            for pname in names:
                p = self.fresh(pname)
                running[pname] = p
                if pname == "nginx-static":
                    running[pname].url = p.put("big/" + big["filename"],
                                               src=self.corpus["big_wheel"]["path"])
                    continue
                client = Client()
                p.url = self.big_url(p, client)
                client.close()
                _, rd = curl_readers([p.url])       # fills the cache
                if rd[0][0] != 200 or rd[0][1] != big["size"]:
                    self.fail("%s: warming the wheel: %r" % (pname, rd))
            for rnd in range(self.rounds("throughput-hot")):
                for pname in self.rotate(names, rnd):
                    p = running[pname]
                    for case, n in (("1-reader", 1), ("8-readers", 8)):
                        with Meter(p) as m:
                            wall, rd = curl_readers([p.url] * n, reps=reps)
                        bad = sum(1 for x in rd if x[0] != 200 or x[1] != reps * big["size"])
                        if bad:
                            self.fail("%s hot %s: %r" % (pname, case, rd))
                        rate = n * reps * big["size"] / MB / wall
                        self.res.add("throughput-hot", pname, case, rate, m, errors=bad)
                        log("throughput-hot round %d %-18s %-9s %8.1f MB/s  cpu %.2f s" % (
                            rnd + 1, pname, case, rate, m.cpu_s))
        finally:
            for p in running.values():
                self.done(p)

    def w_metadata(self):
        metas = self.corpus["metadata_wheels"][:16]
        reps = self.args.metadata_reps
        self.res.workload(
            "metadata", "PEP 658 metadata of %d wheels" % len(metas), "docs/s", "higher",
            "direct", ["cold", "cold-prefetched", "hot"],
            "The `.metadata` sibling of %d wheels fetched one after another on kept-alive "
            "connections, as pip does while resolving, their pages fetched first, "
            "untimed: cold, every document a miss (larder with prefetch_metadata = no); "
            "cold-prefetched, larder as shipped, which fetched the likeliest document of "
            "each page once the page was answered (the other parties as in cold); then "
            "hot (%d passes). Each document's sha256 is checked." % (len(metas), reps))
        for rnd in range(self.rounds("metadata")):
            for pname in self.rotate(self.caches(), rnd):
                for cold in ("cold", "cold-prefetched"):
                    self._metadata(pname, rnd, metas, cold, reps)

    def _metadata(self, pname, rnd, metas, cold, reps):
        if cold == "cold":
            p = self.fresh(pname, larder_extra={"prefetch_metadata": "no"})
        else:
            p = self.fresh(pname)
        client = Client()
        try:
            urls = []
            pages = {}
            for w in metas:
                if w["project"] not in pages:
                    pages[w["project"]] = page_files(client, p.index_url, w["project"])
                urls.append((pages[w["project"]][w["filename"]] + ".metadata",
                             w["metadata_sha256"]))
            for case, passes in ((cold, 1), ("hot", reps)):
                if case == "hot" and cold != "cold":
                    break
                bad = 0
                with Meter(p) as m:
                    for _ in range(passes):
                        for url, sha in urls:
                            status, _, body = client.get(url)
                            if status != 200 or \
                                    hashlib.sha256(body).hexdigest() != sha:
                                bad += 1
                if bad:
                    self.fail("%s metadata %s: %d bad documents" % (pname, case, bad))
                rate = passes * len(urls) / m.wall
                self.res.add("metadata", pname, case, rate, m, errors=bad)
                log("metadata round %d %-18s %-15s %8.1f docs/s" % (
                    rnd + 1, pname, case, rate))
        finally:
            client.close()
            self.done(p)

    def w_cold_files(self):
        n = self.args.cold_files
        big = self.corpus["big_wheel"]["filename"]
        files = [w for w in self.corpus["metadata_wheels"] if w["filename"] != big][:n]
        if len(files) < n:
            raise Failure("the corpus has %d wheels for cold-files, %d wanted"
                          % (len(files), n))
        wheel_dir = self.corpus["wheel_dir"]
        total = sum(os.path.getsize(os.path.join(wheel_dir, w["filename"])) for w in files)
        r = self.res
        r.workload(
            "cold-files", "%d cold wheels, one after another" % n, "files/s", "higher",
            "direct", ["cold"],
            "%d distinct wheels (%.1f MB; the ones pip installs first, as the metadata "
            "workload lists them, without the big wheel) fetched one after another on a "
            "kept-alive connection from a party with an empty state, their project pages "
            "fetched first, untimed. Each body's sha256 is checked." % (n, total / MB))
        r.workload(
            "cold-files-cpu", "larder's CPU per cold file, beyond hashing", "ms", "lower",
            None, ["cpu-ms-per-file", "beyond-storing"],
            "In the cold-files workload, the CPU time (utime + stime, and cutime + cstime "
            "so that workers which exit still count) of every process running the larder "
            "binary, the web server's left out, from before the first request to 0.5 s "
            "after the last answer; less the CPU time of SHA-256 over the same bodies "
            "(Python's hashlib, which is OpenSSL's EVP, as larder's), per file. "
            "beyond-storing also takes off what the kernel charges for storing the same "
            "bodies as any content-addressed cache must, measured right after in the "
            "party's own data directory: a new temp file written 16 KiB at a time, "
            "fsync, two new shard directories, rename, fsync of the directory (on a "
            "file system without a journal, ext4 scans for free inodes, and a VM pays "
            "for every write it submits).")
        for rnd in range(self.rounds("cold-files")):
            for pname in self.rotate(self.caches(), rnd):
                p = self.fresh(pname)
                client = Client()
                try:
                    self._cold_files(p, rnd, client, files)
                finally:
                    client.close()
                    self.done(p)

    def w_cold_pages(self):
        projects = sorted(self.corpus["install_closure"])
        self.res.workload(
            "cold-pages", "%d cold project pages, one after another" % len(projects), "ms",
            "lower", "direct", ["median", "total"],
            "The project page of every project pip installs (the install closure, the "
            "2.5 MB page included), fetched one after another with pip's Accept and "
            "Accept-Encoding on a kept-alive connection from a party with an empty "
            "state: the median of their latencies (request sent to body read) and their "
            "sum. Against direct, what a cache adds to a page miss on top of the "
            "upstream's answer across the WAN.")
        for rnd in range(self.rounds("cold-pages")):
            for pname in self.rotate(self.caches(), rnd):
                p = self.fresh(pname)
                client = Client()
                try:
                    self._cold_pages(p, rnd, client, projects)
                finally:
                    client.close()
                    self.done(p)

    def _cold_pages(self, p, rnd, client, projects):
        h = {"Accept": JSON_ACCEPT, "Accept-Encoding": "gzip, deflate"}
        times, bad = [], 0
        with Meter(p) as m:
            for project in projects:
                url = urljoin(p.index_url, project + "/")
                t = time.monotonic()
                status, _, body = client.get(url, h)
                times.append((time.monotonic() - t) * 1000)
                if status != 200 or not body:
                    bad += 1
                    self.fail("%s cold-pages: %s: %s" % (p.name, url, status))
        med, total = statistics.median(times), sum(times)
        extra = {"ms": [round(t, 1) for t in times], "max_ms": max(times)}
        self.res.add("cold-pages", p.name, "median", med, m, errors=bad, extra=extra)
        self.res.add("cold-pages", p.name, "total", total, m, errors=bad)
        log("cold-pages round %d %-18s %d pages: median %6.1f ms, max %6.1f ms, "
            "total %7.1f ms" % (rnd + 1, p.name, len(projects), med, max(times), total))

    def _larder_cpu(self, p):
        """CPU of the party's larder processes: (user ticks, system ticks),
        each with the children's (fields 14 to 17 of /proc/PID/stat: a worker
        that exits and is reaped by its supervisor still counts, in the
        supervisor's cutime), {pid: schedstat ns}, and the number of
        processes."""
        pids = p.larder_processes()
        user = system = 0
        sched = {}
        for pid in pids:
            us = _user_sys(pid)
            if us is not None:
                user += us[0]
                system += us[1]
            ns = _schedstat_ns(pid)
            if ns is not None:
                sched[pid] = ns
        return user, system, sched, len(pids)

    def _cold_files(self, p, rnd, client, files):
        pname = p.name
        pages, urls = {}, []
        for w in files:
            if w["project"] not in pages:
                pages[w["project"]] = page_files(client, p.index_url, w["project"])
            if w["filename"] not in pages[w["project"]]:
                raise Failure("%s: %s not on its page" % (pname, w["filename"]))
            urls.append(pages[w["project"]][w["filename"]])
        larder = isinstance(p, partymod.Larder)
        bodies, bad = [], 0
        if larder:
            user0, sys0, sched0, procs0 = self._larder_cpu(p)
        with Meter(p) as m:
            for w, url in zip(files, urls):
                status, _, body = client.get(url)
                bodies.append(body)
                if status != 200 or hashlib.sha256(body).hexdigest() != w["sha256"]:
                    bad += 1
                    self.fail("%s cold-files: %s: %s, %d bytes" % (pname, url, status,
                                                                   len(body)))
        n = len(files)
        rate = n / m.wall
        nbytes = sum(len(b) for b in bodies)
        self.res.add("cold-files", pname, "cold", rate, m, errors=bad,
                     extra={"wall_s": m.wall, "bytes": nbytes})
        line = "cold-files round %d %-18s %d files, %.1f MB: %7.1f files/s" % (
            rnd + 1, pname, n, nbytes / MB, rate)
        if larder:
            time.sleep(0.5)     # what a worker does after the last byte counts
            user1, sys1, sched1, procs1 = self._larder_cpu(p)
            larder_s = (user1 + sys1 - user0 - sys0) / CLK_TCK
            # A finer cross-check, blind to processes that came or went.
            sched_s = sum(sched1[k] - sched0[k] for k in sched1 if k in sched0) / 1e9
            hash_s = None
            for _ in range(3):
                t = time.process_time()
                for b in bodies:
                    hashlib.sha256(b).digest()
                d = time.process_time() - t
                hash_s = d if hash_s is None else min(hash_s, d)
            per_file = (larder_s - hash_s) / n * 1000
            store_s = store_cpu(p.data_dir, bodies)
            beyond = (larder_s - hash_s - store_s) / n * 1000
            self.res.add("cold-files-cpu", pname, "cpu-ms-per-file", per_file, errors=bad,
                         extra={"larder_cpu_ms_per_file": larder_s / n * 1000,
                                "store_cpu_s": store_s,
                                "store_ms_per_file": store_s / n * 1000,
                                "larder_cpu_s": larder_s,
                                "larder_user_s": (user1 - user0) / CLK_TCK,
                                "larder_sys_s": (sys1 - sys0) / CLK_TCK,
                                "larder_schedstat_s": sched_s, "hash_cpu_s": hash_s,
                                "hash_ms_per_file": hash_s / n * 1000, "bytes": nbytes,
                                "larder_processes": [procs0, procs1]})
            self.res.add("cold-files-cpu", pname, "beyond-storing", beyond, errors=bad)
            line += "; larder CPU %.0f ms (user %.0f, sys %.0f; schedstat %.0f ms; %.2f " \
                "ms/file; %d -> %d processes), hashing %.1f ms: %.2f ms/file beyond " \
                "hashing; storing %.2f ms/file: %.2f ms/file beyond hashing and storing" % (
                    larder_s * 1000, (user1 - user0) * 1000 / CLK_TCK,
                    (sys1 - sys0) * 1000 / CLK_TCK, sched_s * 1000,
                    larder_s / n * 1000, procs0, procs1, hash_s * 1000, per_file,
                    store_s / n * 1000, beyond)
        log(line)

    # -- swarm

    def wrk(self, url, conns, seconds, accept=JSON_ACCEPT, headers=()):
        threads = min(conns, 2)
        cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % seconds,
               "--timeout", "10s",
               "-H", "Accept: " + accept] + [a for h in headers for a in ("-H", h)] + [url]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        reqs = re.search(r"(\d+) requests in", out)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                         r"timeout (\d+)", out)
        errors = int(non2xx.group(1)) if non2xx else 0
        if sock:
            errors += sum(int(x) for x in sock.groups())
        if not m or not reqs:
            raise Failure("wrk printed no figures for %s:\n%s" % (url, out))
        return float(m.group(1)), int(reqs.group(1)), errors

    def openloop(self, url, rate, seconds, conns=32):
        out = subprocess.run([self.openloop_bin, "-c", str(conns), "-r", "%.0f" % rate,
                              "-d", str(seconds), "-H", "Accept: " + JSON_ACCEPT, url],
                             capture_output=True, text=True, timeout=seconds + 60)
        if out.returncode != 0:
            raise Failure("openloop %s: %s" % (url, out.stderr.strip()))
        return json.loads(out.stdout)

    def w_swarm(self):
        big, small = self.corpus["swarm_pages"]["mid"], self.corpus["swarm_pages"]["small"]
        d = self.args.duration
        r = self.res
        sizes = {}
        cases = ["1-client", "32-clients", "32-clients-small-page"]
        r.workload("swarm", "warm project pages", "req/s", "higher", "nginx-static", cases,
                   "wrk, closed loop, %d s per figure, with the installer Accept header: "
                   "1 and 32 connections on the %s page (%s), and 32 on the %s page "
                   "(%s). The reference is nginx sending the same page bytes as a static "
                   "file." % (d, big, "%PAGE_MID%", small, "%PAGE_SMALL%"))
        r.workload("swarm-latency", "p95 latency at 70% of the peak", "ms", "lower",
                   "nginx-static", ["32-clients"],
                   "openloop (contrib/bench/openloop.c): requests offered at a fixed rate, "
                   "70%% of the party's own 32-connection peak, over 32 connections for %d s; "
                   "latency counted from each request's scheduled time." % d)
        r.workload("swarm-cpu", "CPU per 1,000 warm page requests", "CPU s", "lower",
                   "nginx-static", ["32-clients"],
                   "CPU seconds of the party's whole process tree (web server and larder "
                   "workers) over the 32-connection wrk run, per 1,000 requests.")
        r.workload("memory", "memory during the swarm", "MiB", "lower", "nginx-static",
                   ["largest-worker", "largest-worker-lifetime", "all-processes"],
                   "During the 32-connection swarm, sampled every 0.2 s: the largest RSS of "
                   "a single worker (for larder a FastCGI worker), the largest high-water "
                   "mark (VmHWM) of a worker's whole life (it includes parsing the cold "
                   "pages before the swarm), and the whole process tree's RSS.")
        names = self.present(["nginx-static"]) + [n for n in self.caches() if n != "direct"]
        running, urls = {}, {}
        try:
            page_bytes = {}
            for pname in names:
                p = self.fresh(pname)
                running[pname] = p
                if pname == "nginx-static":
                    continue
                client = Client()
                for proj in (big, small):
                    url = urljoin(p.index_url, proj + "/")
                    for _ in range(2):      # a miss, then a hit
                        status, _, body = client.get(url, {"Accept": JSON_ACCEPT})
                    if status != 200:
                        self.fail("%s: %s: %d" % (pname, url, status))
                    urls[(pname, proj)] = url
                    page_bytes.setdefault(proj, body)
                client.close()
            if "nginx-static" in running:
                # with no cache present, the static reference serves the
                # upstream's own page bytes
                client = Client()
                for proj in (big, small):
                    if proj not in page_bytes:
                        status, _, body = client.get(
                            urljoin(self.upstream.index_url, proj + "/"),
                            {"Accept": JSON_ACCEPT})
                        if status != 200:
                            raise Failure("upstream page %s: %d" % (proj, status))
                        page_bytes[proj] = body
                    urls[("nginx-static", proj)] = running["nginx-static"].put(
                        "pages/%s.json" % proj, page_bytes[proj])
                client.close()
            for proj in (big, small):
                sizes[proj] = len(page_bytes.get(proj, b""))
            # Warm means warm: every server has started all the workers it
            # will use (mod_fcgid spawns them one at a time) before the clock.
            for (pname, proj), url in sorted(urls.items()):
                self.wrk(url, 32, 2)
            for rnd in range(self.rounds("swarm")):
                for pname in self.rotate(names, rnd):
                    p = running[pname]
                    for case, proj, conns in (("1-client", big, 1), ("32-clients", big, 32),
                                              ("32-clients-small-page", small, 32)):
                        with Meter(p) as m:
                            rps, n, errors = self.wrk(urls[(pname, proj)], conns, d)
                        if errors:
                            self.fail("%s swarm %s: %d errors" % (pname, case, errors))
                        r.add("swarm", pname, case, rps, m, errors=errors)
                        if case == "32-clients":
                            r.add("swarm-cpu", pname, case, m.cpu_s / n * 1000, m)
                            r.add("memory", pname, "largest-worker", m.worker_peak_mib)
                            r.add("memory", pname, "largest-worker-lifetime",
                                  m.worker_hwm_mib)
                            r.add("memory", pname, "all-processes", m.peak_mib)
                            peak = rps
                        log("swarm round %d %-18s %-22s %9.0f req/s  cpu/1000 %.3f s  "
                            "worker %.1f MiB" % (rnd + 1, pname, case, rps,
                                                 m.cpu_s / max(n, 1) * 1000,
                                                 m.worker_peak_mib))
                    with Meter(p) as m:
                        ol = self.openloop(urls[(pname, big)], 0.7 * peak, d)
                    # lost: dropped by a reset or a parse failure
                    lost = ol["scheduled"] - ol["completed"] - ol["timeouts"]
                    errors = ol["errors"] + ol["non2xx3xx"] + ol["timeouts"] + max(lost, 0)
                    if errors:
                        self.fail("%s open loop: %r" % (pname, ol))
                    r.add("swarm-latency", pname, "32-clients", ol["latency_ms"]["p95"], m,
                          errors=errors, extra=ol)
                    log("swarm round %d %-18s open loop %.0f req/s: p95 %.2f ms" % (
                        rnd + 1, pname, ol["achieved_rps"], ol["latency_ms"]["p95"]))
        finally:
            for p in running.values():
                self.done(p)
        m = r.meta["swarm"]
        m["description"] = m["description"].replace(
            "%PAGE_MID%", "%.0f KB" % (sizes.get(big, 0) / 1e3)).replace(
            "%PAGE_SMALL%", "%.1f KB" % (sizes.get(small, 0) / 1e3))

    # -- small-files

    def w_small_files(self):
        """Warm small files: a wheel's .metadata and the corpus's smallest
        wheel, 32 clients, against nginx sending the same bytes."""
        r = self.res
        d = self.args.duration
        metas = self.corpus["metadata_wheels"]
        wheel_dir = self.corpus["wheel_dir"]
        small = min(metas, key=lambda w: os.path.getsize(os.path.join(wheel_dir, w["filename"])))
        meta = metas[0]
        cases = ["32-clients-metadata", "32-clients-file"]
        r.workload("small-files", "warm small files", "req/s", "higher", "nginx-static", cases,
                   "wrk, closed loop, 32 connections, %d s per figure: a wheel's `.metadata` "
                   "(%s) and a small wheel (%s), both warm. The reference is nginx sending "
                   "the same bytes as a static file. Through nginx, larder sends a file "
                   "under 24 KiB itself rather than by X-Accel-Redirect, after which nginx "
                   "would close its FastCGI connection, and nginx keeps it in its page "
                   "cache while the page that listed it is fresh (conf/nginx.conf)."
                   % (d, "%META%", "%FILE%"))
        names = self.present(["nginx-static"]) + [n for n in self.caches() if n != "direct"]
        running, urls, data = {}, {}, {}
        try:
            for pname in names:
                p = self.fresh(pname)
                running[pname] = p
                if pname == "nginx-static":
                    continue
                client = Client()
                files = page_files(client, p.index_url, meta["project"])
                files.update(page_files(client, p.index_url, small["project"]))
                for case, url in (("32-clients-metadata", files[meta["filename"]] + ".metadata"),
                                  ("32-clients-file", files[small["filename"]])):
                    for _ in range(2):      # a miss, then a hit
                        status, _, body = client.get(url)
                    if status != 200:
                        self.fail("%s: %s: %d" % (pname, url, status))
                    urls[(pname, case)] = url
                    data.setdefault(case, body)
                client.close()
            if "nginx-static" in running:
                if "32-clients-file" not in data:
                    with open(os.path.join(wheel_dir, small["filename"]), "rb") as f:
                        data["32-clients-file"] = f.read()
                if "32-clients-metadata" not in data:
                    with open(os.path.join(wheel_dir, meta["filename"] + ".metadata"),
                              "rb") as f:
                        data["32-clients-metadata"] = f.read()
                for case in cases:
                    urls[("nginx-static", case)] = running["nginx-static"].put(
                        "small/%s" % case, data[case])
            for (pname, case), url in sorted(urls.items()):
                self.wrk(url, 32, 1)
            for rnd in range(self.rounds("small-files")):
                for pname in self.rotate(names, rnd):
                    p = running[pname]
                    for case in cases:
                        with Meter(p) as m:
                            rps, n, errors = self.wrk(urls[(pname, case)], 32, d)
                        if errors:
                            self.fail("%s small-files %s: %d errors" % (pname, case, errors))
                        r.add("small-files", pname, case, rps, m, errors=errors)
                        log("small-files round %d %-18s %-22s %9.0f req/s  cpu/1000 %.3f s" % (
                            rnd + 1, pname, case, rps, m.cpu_s / max(n, 1) * 1000))
        finally:
            for p in running.values():
                self.done(p)
        m = r.meta["small-files"]
        m["description"] = m["description"].replace(
            "%META%", "%.1f KB" % (len(data.get("32-clients-metadata", b"")) / 1e3)).replace(
            "%FILE%", "%.1f KB" % (len(data.get("32-clients-file", b"")) / 1e3))

    # -- endpoints

    def w_endpoints(self):
        if not self.present(["larder-nginx"]):
            return
        p = self.fresh("larder-nginx")
        client = Client()
        out = []
        try:
            base = p.fe.base
            proj = self.corpus["install_set"][0]
            w = self.corpus["metadata_wheels"][0]
            files = page_files(client, p.index_url, w["project"])
            furl = files[w["filename"]]
            fpath = urlsplit(furl).path
            for u in (furl, furl + ".metadata"):
                client.get(u)
            h = client.get(furl)[1]
            etag = h.get("etag", "")
            cases = [
                ("/root/pypi/simple/", JSON_ACCEPT, {}, "project list, JSON"),
                ("/root/pypi/simple/", "text/html", {}, "project list, HTML"),
                ("/root/pypi/simple/%s/" % proj, JSON_ACCEPT, {}, "project page, JSON"),
                ("/root/pypi/simple/%s/" % proj, "text/html", {}, "project page, HTML"),
                ("/pypi/simple/%s/" % proj, JSON_ACCEPT, {}, "cache index page, JSON"),
                ("/root/pypi/simple/%s" % proj.upper().replace("-", "_"), JSON_ACCEPT, {},
                 "non-normalised name (301)"),
                (fpath, None, {}, "file"),
                (fpath, None, {"Range": "bytes=0-1023"}, "file, Range"),
                (fpath, None, {"If-None-Match": etag}, "file, If-None-Match (304)"),
                (fpath + ".metadata", None, {}, "PEP 658 metadata"),
                ("/root/pypi/simple/no-such-project/", JSON_ACCEPT, {}, "unknown project"),
                ("/+health", None, {}, "health"),
                ("/metrics", None, {}, "Prometheus metrics"),
                ("/+stats", None, {}, "figures, JSON"),
                ("/+status", None, {}, "status page, HTML"),
            ]
            for path, accept, extra, what in cases:
                for _ in range(2):      # warm: the first may miss
                    client.get(base + path, dict(extra, **({"Accept": accept} if accept
                                                          else {})))
                times = []
                for _ in range(self.args.endpoint_reps):
                    t0 = time.monotonic()
                    status, _, body = client.get(
                        base + path, dict(extra, **({"Accept": accept} if accept else {})))
                    times.append((time.monotonic() - t0) * 1000)
                if status >= 500:
                    self.fail("endpoint %s: %d" % (path, status))
                out.append({"path": path, "what": what, "status": status, "bytes": len(body),
                            "ms": _r(statistics.median(times), 3)})
                log("endpoint %-60s %3d %8d bytes %.3f ms" % (path[:60], status, len(body),
                                                              out[-1]["ms"]))
        finally:
            client.close()
            self.done(p)
        self.endpoints = out

    # -- goals

    def goals(self):
        r = self.res
        g = []

        def goal(text, value, target, ok, why=None):
            g.append({"text": text, "value": _r(value, 3) if value is not None else None,
                      "target": target, "met": ok if value is not None else None,
                      "why": why if value is not None else (why or "not measured")})

        def ratio(w, a, b, case):
            x, y = r.get(w, a, case), r.get(w, b, case)
            return x / y if x is not None and y else None

        def worst(w, party, case):
            vals = [v for v in r.samples.get((w, party, case), {}).get("values", [])]
            return max(vals) if vals else None

        larders = self.present(list(partymod.LARDER_KINDS))

        # -- installs
        v = ratio("install", "larder-nginx", "direct", "cold")
        pc = ratio("install", "nginx-proxy-cache", "direct", "cold")
        goal("Cold install: larder behind nginx / direct", v,
             "<= 0.85, below nginx proxy_cache's",
             v is not None and v <= 0.85 and (pc is None or v < pc),
             "nginx proxy_cache / direct: %s" % ("%.3g" % pc if pc is not None
                                                 else "not measured"))
        pip = pip_version(getattr(self, "template", None))
        goal("Cold install with pip %s (Debian 12's): larder behind nginx / direct"
             % (pip or "?"), v, "<= 0.9", v is not None and v <= 0.9,
             "the figure above: the installs run this pip, the newest this offline "
             "machine has")
        ex = r.extras("install", "larder-nginx", "cold")
        pre = [e for e in ex if "prefetched" in e]
        made = sum(e["prefetched"] for e in pre)
        used = sum(e["prefetch_used"] for e in pre)
        goal("Pages prefetched during the cold installs, larder behind nginx: not asked "
             "for by the end of the install / prefetched", (made - used) / made
             if made else None, "reported", True if pre else None,
             "%d pages prefetched over %d cold installs, %d of them then asked for; the "
             "status page counts those unasked for 10 minutes on" % (made, len(pre), used)
             if pre else "larder's /metrics said nothing of prefetches")
        wheels = [e["upstream_wheels"] for e in ex if "upstream_wheels" in e]
        by_prefetch = [e["prefetched_wheels"] for e in ex if "prefetched_wheels" in e]
        want = len(self.corpus["install_closure"])
        goal("Wheels larder fetched during a cold install / the wheels pip installs",
             max(wheels) / want if wheels and want else None, "reported",
             True if wheels else None,
             "at most %d of %d over %d cold installs, %d of them fetched by a "
             "prefetch (prefetch_wheel_size)" % (
                 max(wheels), want, len(wheels), max(by_prefetch, default=0))
             if wheels else "not measured")
        v = ratio("install", "larder-nginx", "direct", "warm")
        goal("Warm install: larder behind nginx / direct", v, "<= 1.0",
             v is not None and v <= 1.0)
        n = self.args.installs
        v = ratio("parallel-install", "larder-nginx", "direct", "cold")
        ex = r.extras("parallel-install", "larder-nginx", "cold")
        pages = max((e["upstream_max_gets_per_page"] for e in ex), default=None)
        files = max((e["upstream_max_gets_per_file"] for e in ex), default=None)
        goal("%d parallel cold installs: larder behind nginx / direct, wall" % n, v,
             "<= 0.8, 1 upstream GET per page and file",
             v is not None and v <= 0.8 and pages == 1 and files == 1,
             "most upstream GETs of one page: %s, of one file: %s" % (pages, files))
        fails = sum(r.errors("parallel-install", name) for name in larders)
        measured = any(k[0] == "parallel-install" for k in r.samples)
        goal("%d parallel cold installs through larder (every front end): failures" % n,
             fails if measured else None, "0", fails == 0)

        # -- cold fetches
        # judged on the miss path: in this workload the prefetch has all
        # the time it wants between the pages and the documents, which an
        # installer does not give it
        v = ratio("metadata", "larder-nginx", "direct", "cold")
        pf = ratio("metadata", "larder-nginx", "direct", "cold-prefetched")
        goal("Cold metadata, every document a miss: larder behind nginx / direct, docs/s",
             v, ">= 1.0", v is not None and v >= 1.0,
             "as shipped, the likeliest document of each page prefetched: %s" % (
                 "%.3g" % pf if pf is not None else "not measured"))
        v = r.get("cold-files-cpu", "larder-nginx", "cpu-ms-per-file")
        ex = r.extras("cold-files-cpu", "larder-nginx", "cpu-ms-per-file")
        beyond = r.get("cold-files-cpu", "larder-nginx", "beyond-storing")
        goal("CPU per cold file fetch, larder processes, minus hashing (ms)", v, "<= 2",
             v is not None and v <= 2,
             "larder's CPU %s ms per file, hashing %s, storing the file (the kernel's "
             "share, measured alike) %s: %s ms beyond hashing and storing" % (
                 "%.3g" % statistics.median(e["larder_cpu_ms_per_file"] for e in ex),
                 "%.3g" % statistics.median(e["hash_ms_per_file"] for e in ex),
                 "%.3g" % statistics.median(e["store_ms_per_file"] for e in ex),
                 "%.3g" % beyond if beyond is not None else "-")
             if ex else None)
        burst = [e["wall_s"] for e in r.extras("throughput-cold", "larder-nginx", "4-readers")]
        one = [e["wall_s"] for e in r.extras("throughput-cold", "direct", "1-reader")]
        gets = [e["upstream_gets"] for e in
                r.extras("throughput-cold", "larder-nginx", "4-readers")]
        v = statistics.median(burst) / statistics.median(one) if burst and one else None
        goal("Cold 4-reader burst: wall time / one direct download", v,
             "<= 1.05, 1 upstream GET", v is not None and v <= 1.05 and set(gets) == {1},
             "upstream GETs per burst: %s" % gets)

        # -- warm serving
        v = ratio("throughput-hot", "larder-nginx", "nginx-static", "1-reader")
        goal("Hot single-stream wheel: larder behind nginx / nginx static", v, ">= 0.9",
             v is not None and v >= 0.9)
        v = ratio("swarm", "larder-nginx", "nginx-static", "32-clients-small-page")
        goal("Warm 4 KB page, 32 clients: larder behind nginx / nginx static", v, ">= 0.7",
             v is not None and v >= 0.7)
        v = ratio("swarm", "larder-nginx", "nginx-static", "32-clients")
        goal("Warm 0.5 MB page, 32 clients: larder behind nginx / nginx static", v,
             ">= 0.9", v is not None and v >= 0.9)
        for case, what in (("32-clients-file", "small file"),
                           ("32-clients-metadata", ".metadata")):
            v = ratio("small-files", "larder-nginx", "nginx-static", case)
            goal("Warm %s (a few KB), 32 clients: larder behind nginx / nginx static" % what,
                 v, ">= 0.8", v is not None and v >= 0.8)
        pys = self.present(["devpi", "proxpi", "pypiserver"])
        if pys:
            vals = [ratio("swarm", "larder-nginx", n, "32-clients") for n in pys]
            v = min(x for x in vals if x is not None) if any(vals) else None
            goal("Warm swarm, 32 clients: larder behind nginx / every Python cache present",
                 v, ">= 10", v is not None and v >= 10)
        else:
            g.append({"text": "Warm swarm, 32 clients: larder behind nginx / every Python "
                      "cache present", "value": None, "target": ">= 10", "met": None,
                      "why": "no Python cache present (devpi, proxpi, pypiserver absent)"})
        v = ratio("swarm-cpu", "larder-nginx", "nginx-static", "32-clients")
        goal("CPU per 1,000 warm page requests, larder + nginx / nginx static", v, "<= 2",
             v is not None and v <= 2)

        # -- slow misses
        def slow_max(name):
            vals = [worst("slow-misses", name, c)
                    for c in ("warm-page-max-ms", "warm-file-max-ms")]
            return vals, (max(vals) if None not in vals else None)

        why = []
        for name in larders:
            (pg, fl), _ = slow_max(name)
            if pg is not None or fl is not None:
                why.append("%s: page %s ms, file %s ms" % (
                    name, "%.4g" % pg if pg is not None else "-",
                    "%.4g" % fl if fl is not None else "-"))
        _, v = slow_max("larder-nginx")
        goal("%d slow cold downloads: warm page and warm file latency (max ms)"
             % self.args.slow_files, v, "< 50", v is not None and v < 50,
             "; ".join(why) or None)
        # Apache as shipped is mod_proxy_fcgi in front of `larder serve`
        # (docs/apache.md); mod_fcgid is kept for hosts that allow nothing
        # else, its figure reported beside it.
        _, v = slow_max("larder-apache-proxy")
        _, fcgid = slow_max("larder-apache")
        goal("%d slow cold downloads behind Apache mod_proxy_fcgi (max ms)"
             % self.args.slow_files, v, "<= 50", v is not None and v <= 50,
             "mod_fcgid: %s" % ("%.4g ms" % fcgid if fcgid is not None
                                else "not measured"))

        # -- memory
        v = r.get("slow-misses-memory", "larder-nginx", "memory-per-stream")
        goal("Memory per slow stream (MiB), larder behind nginx", v, "bounded",
             v is not None and v < 4,
             "met below 4 MiB; the worst round: %.3g MiB"
             % worst("slow-misses-memory", "larder-nginx", "memory-per-stream")
             if v is not None else None)
        workers = [r.get("memory", name, "largest-worker") for name in larders]
        workers = [w for w in workers if w is not None]
        v = max(workers) if workers else None
        goal("Largest larder worker's RSS during the swarm (MiB)", v, "< 16",
             v is not None and v < 16)
        return g


def prefetch_counts(p):
    """What larder party p's /metrics says of its prefetches so far:
    {"prefetched": pages, "prefetch_used": pages a client then asked for,
    "prefetched_wheels": wheels (when it counts them)}; {} when it says
    nothing of them."""
    base = p.index_url.split("/root/pypi/")[0]
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=30) as f:
            text = f.read().decode()
    except (OSError, ValueError):
        return {}
    got = dict(re.findall(r"^larder_(prefetch_pages_total|prefetch_used_total|"
                          r"prefetch_wheels_total) (\d+)$", text, re.M))
    if "prefetch_pages_total" not in got or "prefetch_used_total" not in got:
        return {}
    out = {"prefetched": int(got["prefetch_pages_total"]),
           "prefetch_used": int(got["prefetch_used_total"])}
    if "prefetch_wheels_total" in got:
        out["prefetched_wheels"] = int(got["prefetch_wheels_total"])
    return out


def pip_version(venv):
    """The version of the pip venv has (the installs' template), or None."""
    try:
        out = subprocess.run([os.path.join(venv, "bin", "pip"), "--version"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, TypeError):
        return None
    m = re.match(r"pip (\S+)", out)
    return m.group(1) if m else None


def machine():
    info = {"cpus": os.cpu_count(), "cpu_model": None, "mem_gib": None,
            "kernel": platform.release(), "os": None, "virt": None}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.+)", f.read())
            info["cpu_model"] = m.group(1).strip() if m else None
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / 1024 ** 2, 1)
        with open("/etc/os-release") as f:
            m = re.search(r'PRETTY_NAME="([^"]+)"', f.read())
            info["os"] = m.group(1) if m else None
    except OSError:
        pass
    try:
        v = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True).stdout
        info["virt"] = v.strip() if v.strip() not in ("", "none") else None
    except OSError:
        pass
    return info


def build_openloop(work):
    out = os.path.join(work, "openloop")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise Failure("no C compiler for contrib/bench/openloop.c")
    subprocess.run([cc, "-O2", "-o", out, os.path.join(HERE, "openloop.c"), "-lm"],
                   check=True)
    return out


def links_asan(binary):
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "libasan" in out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder", default=None, help="the larder binary ($LARDER_BIN, ./larder)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parallel-rounds", type=int, default=1,
                    help="rounds of the ten-installs workload (each takes minutes)")
    ap.add_argument("--installs", type=int, default=10)
    ap.add_argument("--duration", type=int, default=10, help="seconds per swarm figure")
    ap.add_argument("--wheel-reps", type=int, default=1)
    ap.add_argument("--metadata-reps", type=int, default=20)
    ap.add_argument("--endpoint-reps", type=int, default=20)
    ap.add_argument("--slow-files", type=int, default=50,
                    help="concurrent slow cold downloads (slow-misses)")
    ap.add_argument("--slow-seconds", type=float, default=4.0,
                    help="how long the upstream takes to send each (slow-misses)")
    ap.add_argument("--cold-files", type=int, default=48,
                    help="cold files fetched one after another (cold-files)")
    ap.add_argument("--latency-ms", type=float, default=20.0,
                    help="round-trip time added to the upstream (0: none)")
    ap.add_argument("--mbit", type=float, default=200.0,
                    help="the upstream link's bandwidth, shared (0: no cap)")
    ap.add_argument("--larder-workers", type=int, default=4)
    ap.add_argument("--upload-mb", type=int, default=50,
                    help="the size of the wheel the upload workload uploads (MB)")
    ap.add_argument("--push-mb", type=float, default=100,
                    help="the size of the layer the oci-push workload pushes (MB)")
    ap.add_argument("--larder-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a [larder] key for every larder party (repeatable), e.g. "
                    "prefetch_metadata=no")
    ap.add_argument("--parties", default=",".join(partymod.ALL + ocimod.ONLY_OCI))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--venv", default=None,
                    help="a virtualenv holding devpi-server, proxpi or pypiserver")
    ap.add_argument("--corpus-dir", default=None,
                    help="where the corpus is built and kept between runs")
    ap.add_argument("--oci-images", default=None,
                    help="where the OCI workloads' images are built and kept between runs")
    ap.add_argument("--layer-reps", type=int, default=30,
                    help="times each reader reads the warm layer (oci-layer, oci-push-pull)")
    ap.add_argument("--work", default=None, help="work dir (default: a new temp dir)")
    ap.add_argument("--json", default=None, help="write the report here")
    ap.add_argument("--doc", default=None,
                    help="render the report into this Markdown file (report.py)")
    ap.add_argument("--smoke", action="store_true",
                    help="every workload once, tiny corpus, short runs (CI)")
    args = ap.parse_args(argv)
    for kv in args.larder_set:
        if not re.match(r"^[a-z_]+=", kv):
            ap.error("--larder-set wants KEY=VALUE, got %r" % kv)
    if args.smoke:
        args.rounds = args.parallel_rounds = 1
        args.installs = 3
        args.duration = 1
        args.metadata_reps = 2
        args.endpoint_reps = 2
        args.slow_files = min(args.slow_files, 5)
        args.slow_seconds = min(args.slow_seconds, 1.0)
        args.cold_files = min(args.cold_files, 6)
        args.layer_reps = 1
        args.upload_mb = min(args.upload_mb, 2)
        args.push_mb = min(args.push_mb, 1)
        args.latency_ms = min(args.latency_ms, 2.0)
        # the shared link is still exercised, just not a bottleneck
        args.mbit = 2000.0 if args.mbit == 200.0 else args.mbit
    args.larder = os.path.abspath(args.larder or os.environ.get("LARDER_BIN")
                                  or os.path.join(os.getcwd(), "larder"))
    return args


def main(argv=None):
    args = parse_args(argv)
    selected = args.workloads.split(",")
    unknown = [w for w in selected if w not in WORKLOADS + EXTRA_WORKLOADS]
    if unknown:
        log("unknown workload %r (one of %s)" % (unknown[0], ", ".join(WORKLOADS)))
        return 2
    pypi = [w for w in selected if w in PYPI_WORKLOADS + EXTRA_WORKLOADS]
    command = " ".join(["contrib/bench/bench.py"] + (argv if argv is not None
                                                     else sys.argv[1:]))
    for tool in ("wrk", "curl"):
        if not shutil.which(tool):
            log("%s is missing (apt-get install %s)" % (tool, tool))
            return 2
    if not os.access(args.larder, os.X_OK):
        log("no larder binary at %s (--larder or $LARDER_BIN)" % args.larder)
        return 2
    notes = []
    if links_asan(args.larder):
        notes.append("larder was built with ASan (--enable-debug): its figures measure "
                     "the sanitizers, not larder")
        log("NOTE: " + notes[-1])
    work = args.work or tempfile.mkdtemp(prefix="larder-bench-", dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    t_start = time.time()
    bench = Bench(args, work)

    def on_term(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    upstream = oci = None
    extra_goals = []
    rc = 0
    try:
        if pypi:
            cdir = args.corpus_dir or os.path.join("/var/tmp", "larder-bench-corpus" +
                                                   ("-smoke" if args.smoke else ""))
            t0 = time.monotonic()
            bench.corpus = corpusmod.build(cdir, smoke=args.smoke)
            log("corpus: %d projects, %d files, in %s (%.1f s)" % (
                bench.corpus["projects"], bench.corpus["files"], cdir,
                time.monotonic() - t0))
            bench.openloop_bin = build_openloop(work)
            bench.template = stack.make_venv(os.path.join(work, "venv-template"))
            # assigned before start(): a relay that fails to start must not
            # leave the stand-in running
            upstream = bench.upstream = Upstream(work, bench.corpus["wheel_dir"],
                                                 args.latency_ms, args.mbit)
            upstream.start()
        bench.parties = {}
        for name in args.parties.split(","):
            if name in ocimod.ONLY_OCI:
                continue
            bench.parties[name] = partymod.make(name, work, upstream, args)
            p = bench.parties[name]
            log("party %-18s %s" % (name, "present" if p.present else "absent: " + p.reason))
        if len(pypi) < len(selected):
            oci = ocimod.OciBench(bench, sys.modules[__name__])
            for p in oci.parties.values():
                log("oci party %-14s %s" % (p.name, "present" if p.present
                                            else "absent: " + p.reason))
        for w in selected:
            fn = {"install": bench.w_install, "parallel-install": bench.w_parallel,
                  "throughput-cold": bench.w_throughput_cold,
                  "slow-misses": bench.w_slow_misses,
                  "throughput-hot": bench.w_throughput_hot, "metadata": bench.w_metadata,
                  "cold-files": bench.w_cold_files,
                  "cold-pages": bench.w_cold_pages,
                  "swarm": bench.w_swarm, "small-files": bench.w_small_files,
                  "endpoints": bench.w_endpoints,
                  "bounded": lambda: extra_goals.extend(
                      boundedmod.run(bench, sys.modules[__name__])),
                  "upload": lambda: extra_goals.extend(
                      hostedmod.run_upload(bench, sys.modules[__name__])),
                  "hosted-page": lambda: extra_goals.extend(
                      hostedmod.run_hosted_page(bench, sys.modules[__name__])),
                  "virtual-page": lambda: extra_goals.extend(
                      hostedmod.run_virtual_page(bench, sys.modules[__name__])),
                  "cooldown-page": lambda: extra_goals.extend(
                      cooldownmod.run(bench, sys.modules[__name__])),
                  "metasynth": lambda: extra_goals.extend(
                      metasynthmod.run(bench, sys.modules[__name__])),
                  # (one run measures both)
                  "gzip-page": lambda: extra_goals.extend(
                      compressedmod.run(bench, sys.modules[__name__])),
                  "gzip-bytes": lambda: None
                  if "gzip-page" in selected else extra_goals.extend(
                      compressedmod.run(bench, sys.modules[__name__]))}.get(w)
            log("== %s" % w)
            if fn is None:
                oci.run(w)
            else:
                fn()
    except (Failure, partymod.PartyError) as e:
        bench.fail(str(e))
    except KeyboardInterrupt:
        bench.fail("interrupted")
    finally:
        for p in list(bench.running):
            try:
                bench.done(p)
            except Exception as e:  # keep stopping the others
                log("stopping %s: %s" % (p.name, e))
        if upstream is not None:
            upstream.stop()
        if oci is not None:
            oci.stop()
        partymod.kill_leftovers(work)
    order = [n for n in partymod.ALL if n in getattr(bench, "parties", {})]
    infos = [bench.parties[n].info() for n in order]
    for info in oci.party_infos() if oci is not None else []:
        if info["name"] not in order:
            order.append(info["name"])
            infos.append(info)
        else:   # the same party in both halves: the version of whichever ran
            known = infos[order.index(info["name"])]
            known["version"] = known["version"] or info["version"]
    wan = {"latency_ms": args.latency_ms, "bandwidth_mbit": args.mbit or None} \
        if args.latency_ms or args.mbit else None
    report = {
        "schema": 1, "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
        "duration_s": round(time.time() - t_start, 1), "smoke": args.smoke,
        "machine": machine(),
        "setup": {
            "rounds": args.rounds,
            "wan": upstream.describe() if upstream else wan,
            "corpus": {k: bench.corpus.get(k) for k in (
                "projects", "files", "install_set", "big_wheel_mib", "largest_page_kib")}
            if hasattr(bench, "corpus") else None,
            "larder": {"binary": args.larder, "workers": args.larder_workers,
                       "version": partymod._version([args.larder, "--version"])},
            "notes": notes + ["parallel-install ran %d round(s)" % args.parallel_rounds,
                              "failures: %d" % len(bench.failures)]},
        "parties": infos,
        "workloads": bench.res.build(order),
        "goals": (bench.goals() if set(pypi) & set(PYPI_WORKLOADS) else []) +
        (oci.goals() if oci else []) + extra_goals,
        "endpoints": bench.endpoints,
        "failures": bench.failures,
    }
    if oci is not None:
        report["oci"] = oci.info()
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        os.replace(args.json + ".tmp", args.json)
        log("report: %s" % args.json)
    if args.doc:
        if not args.json:
            log("--doc needs --json")
            return 2
        if subprocess.run([stack.PYTHON, os.path.join(HERE, "report.py"), args.json,
                           "--doc", args.doc]).returncode != 0:
            log("report.py could not render %s into %s" % (args.json, args.doc))
            rc = 1
    for gl in report["goals"]:
        log("goal %-75s %-10s %s" % (gl["text"][:75], gl["value"],
                                     {True: "met", False: "MISSED", None: "n/a"}[gl["met"]]))
    if bench.failures:
        log("%d failure(s); first: %s" % (len(bench.failures), bench.failures[0][:500]))
        rc = 1
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
