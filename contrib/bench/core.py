#!/usr/bin/python3
"""The core benchmark: larder's warm path against nginx serving the same bytes.

With the cache warm, in one run and on one nginx:

  page   wrk -t2 -c32 with the installer Accept header against a project page
         of about 500 KB through larder (nginx -> FastCGI -> larder ->
         X-Accel-Redirect -> nginx), and against the same bytes as a static
         file from a second location of that nginx.
  wheel  8 parallel curl processes, each downloading a cached 15 MiB wheel of
         incompressible bytes --wheel-reps times back to back, through larder's
         file URL and from the static location.

Each round measures both sides of both workloads, static first in even rounds
and larder first in odd ones; the report gives the median over the rounds,
the min..max spread, and ratio = larder / static (the median of the per-round
ratios). Goals: page ratio >= 0.7, wheel ratio >= 0.9. The goals are printed,
not enforced (a shared machine is noisy); any failed request (a non-2xx/3xx,
a socket error, a body of the wrong size or hash) makes the exit status 1.

Also reported, from /proc, per side: the CPU seconds burned by larder's
process group, nginx's and the client (wrk or curl) over the measurement, and
how busy the whole machine was, so the figures say where the time went.

Usage (from anywhere; the larder binary is $LARDER_BIN, else ./larder):
  contrib/bench/core.py [--duration 10] [--rounds 3] [--json OUT]
  contrib/bench/core.py --smoke          # 2 s, 1 round, small inputs (CI)
Needs wrk, curl and nginx (apt-get install wrk curl nginx-light).

The stand-in upstream, larder and nginx are started through
tests/integration/stack.py, whose nginx configuration this one mirrors with a
`location /static/` added; everything is torn down (process groups killed) at
the end, also on an error or SIGTERM.
"""

import argparse
import hashlib
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
import time
from urllib.parse import urljoin, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import stack  # noqa: E402
import wheels  # noqa: E402

PAGE_PROJECT = "bench-big-page"
WHEEL_PROJECT = "bench-big-wheel"
JSON_TYPE = stack.JSON_TYPE
PAGE_GOAL = 0.7
WHEEL_GOAL = 0.9
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Children of ours that are not pieces of the stack (wrk, curl): killed by
# process group on the way out.
_children = set()


class BenchError(Exception):
    """A failed request or a piece that would not start: the run is void."""


# ---------------------------------------------------------------- inputs

def build_inputs(outdir, page_files, big_mb):
    """page_files tiny wheels of PAGE_PROJECT (each with a PEP 658 sibling, as
    most of PyPI has) and one wheel of big_mb MiB of incompressible bytes.
    Returns the big wheel's path."""
    os.makedirs(outdir, exist_ok=True)
    for i in range(page_files):
        wheels.build_wheel(outdir, PAGE_PROJECT, "1.%d.%d" % (i // 100, i % 100),
                           mtime=wheels._EPOCH_TS + 60 * i)
    return wheels.build_big(outdir, big_mb, name=WHEEL_PROJECT)


# ---------------------------------------------------------------- nginx

STATIC_LOCATION = """\
        # The benchmark's baseline: the same bytes as plain files.
        location /static/ {{
            alias {static_dir}/;
        }}

"""


class BenchNginx(stack.Nginx):
    """stack.Nginx with its configuration (stack.nginx_conf, unchanged) plus a
    `location /static/` serving static_dir."""

    def __init__(self, workdir, fcgi_port, data_dir, static_dir, workers=1):
        super().__init__(workdir, fcgi_port, data_dir, workers=workers)
        conf = stack.nginx_conf(self.dir, self.port, fcgi_port,
                                os.path.abspath(data_dir), workers)
        anchor = "        location / {"
        if conf.count(anchor) != 1:
            raise BenchError("stack.nginx_conf changed shape: cannot find %r" % anchor)
        conf = conf.replace(anchor, STATIC_LOCATION.format(
            static_dir=os.path.abspath(static_dir).rstrip("/")) + anchor)
        with open(self.conf, "w") as f:
            f.write(conf)


# ---------------------------------------------------------------- /proc

def proc_ticks():
    """{pid: (pgrp, comm, utime + stime in clock ticks)} of every live process."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        # fields[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
        out[int(pid)] = (int(fields[2]), comm, int(fields[11]) + int(fields[12]))
    return out


def machine_ticks():
    """{user, system, softirq, idle, total} ticks over all CPUs since boot,
    from /proc/stat (nice counts as user, iowait as idle)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 10
    return {"user": v[0] + v[1], "system": v[2], "softirq": v[6] + v[5],
            "idle": v[3] + v[4], "total": sum(v[:8])}


class CpuMeter:
    """CPU seconds between start() and stop() of larder's and nginx's process
    groups, of our reaped children (the clients: wrk, curl), and of everything
    else alive on the machine ("other", with the busiest commands named), plus
    how the machine's CPUs spent the time. A process that exits in between
    (a larder worker reaching max_requests) takes its last ticks with it."""

    def __init__(self, larder_pgid, nginx_pgid, standin_pgid):
        self.groups = {"larder": larder_pgid, "nginx": nginx_pgid,
                       "standin": standin_pgid}

    def start(self):
        self.p0 = proc_ticks()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.c0 = ru.ru_utime + ru.ru_stime
        self.m0 = machine_ticks()

    def stop(self):
        p1 = proc_ticks()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        m1 = machine_ticks()
        out = {"larder": 0.0, "nginx": 0.0, "standin": 0.0, "other": 0.0}
        others = {}
        me = os.getpgrp()
        for pid, (pgrp, comm, ticks) in p1.items():
            before = self.p0.get(pid)
            used = (ticks - before[2] if before else ticks) / CLK_TCK
            who = [k for k, g in self.groups.items() if g == pgrp]
            if who:
                out[who[0]] += used
            elif pgrp != me and used > 0:
                out["other"] += used
                others[comm] = others.get(comm, 0.0) + used
        out["client"] = ru.ru_utime + ru.ru_stime - self.c0
        d = {k: m1[k] - self.m0[k] for k in m1}
        total = d.pop("total") or 1
        # Shares of all CPUs' time: what the machine as a whole did,
        # including the kernel's loopback work (softirq) that no process
        # is charged for, and whatever else runs on a shared machine.
        for k, v in d.items():
            out["machine_" + k] = v / total
        # Everything not ours, short-lived processes included: the user and
        # system time of all CPUs less what our three parties were charged.
        ours = out["larder"] + out["nginx"] + out["standin"] + out["client"]
        out["machine_other"] = max(0.0, (d["user"] + d["system"]) / CLK_TCK - ours) \
            * CLK_TCK / total
        res = {k: round(v, 3) for k, v in out.items()}
        res["other_top"] = sorted(((round(v, 2), k) for k, v in others.items()),
                                  reverse=True)[:3]
        return res


# ---------------------------------------------------------------- clients

def run_child(cmd, timeout):
    """Runs cmd in its own process group; returns (returncode, stdout, stderr)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=stack.clean_env(),
                         start_new_session=True)
    _children.add(p)
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        _kill_group(p)
        _children.discard(p)
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _kill_group(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


_UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def _scaled(num, unit):
    return float(num) * _UNITS[unit]


def parse_wrk(text):
    """The figures of one `wrk --latency` run."""
    def grab(pattern, conv=float, default=None):
        m = re.search(pattern, text, re.M)
        return conv(m.group(1)) if m else default

    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(\w+), ([\d.]+)(\w+) read", text, re.M)
    if not m:
        raise BenchError("cannot read wrk's output:\n" + text)
    secs = float(m.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(3)]
    r = {
        "requests": int(m.group(1)),
        "seconds": secs,
        "bytes_read": _scaled(m.group(4), m.group(5)),
        "req_per_s": grab(r"^Requests/sec:\s+([\d.]+)"),
        "non_2xx_3xx": grab(r"Non-2xx or 3xx responses: (\d+)", int, 0),
        "socket_errors": 0,
    }
    se = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if se:
        r["socket_errors"] = sum(int(x) for x in se.groups())
        r["socket_error_detail"] = se.group(0)
    lat = {}
    for pct, val, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M):
        lat["p" + pct + "_ms"] = float(val) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    r.update(lat)
    return r


def wrk_page(url, args, expect_bytes, meter):
    """One wrk run against url; raises BenchError on any failed request."""
    cmd = ["wrk", "-t%d" % args.threads, "-c%d" % args.connections,
           "-d%ds" % args.duration, "--latency", "-H", "Accept: " + JSON_TYPE, url]
    meter.start()
    rc, out, err = run_child(cmd, args.duration + 60)
    cpu = meter.stop()
    if rc != 0:
        raise BenchError("wrk exited %d: %s %s" % (rc, out, err))
    r = parse_wrk(out)
    r["cpu_s"] = cpu
    problems = []
    if r["non_2xx_3xx"]:
        problems.append("%d non-2xx/3xx responses" % r["non_2xx_3xx"])
    if r["socket_errors"]:
        problems.append(r["socket_error_detail"])
    if r["requests"] == 0:
        problems.append("no requests completed")
    else:
        # wrk does not check bodies; what it read per request must be the
        # response we checked by hand (body plus a few hundred header bytes).
        # wrk prints the total with 3 significant figures, hence the slack.
        per = r["bytes_read"] / r["requests"]
        r["bytes_per_request"] = round(per)
        if not (expect_bytes * 0.98 <= per <= expect_bytes * 1.02 + 2048):
            problems.append("read %.0f bytes per request, expected about %d"
                            % (per, expect_bytes))
    if problems:
        raise BenchError("wrk %s: %s\n%s" % (url, "; ".join(problems), out))
    return r


def curl_parallel(url, clients, reps, size, meter):
    """clients curl processes started at once, each downloading url reps times
    over one connection into /dev/null. Returns aggregate MB/s (10^6 bytes)
    from the start of the first to the end of the last; raises BenchError
    unless every transfer was a 200 of exactly size bytes."""
    cmd = ["curl", "-sS", "--no-progress-meter", "-w", "%{http_code} %{size_download}\\n"]
    for _ in range(reps):
        cmd += ["-o", "/dev/null", url]
    meter.start()
    t0 = time.monotonic()
    procs = []
    try:
        for _ in range(clients):
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, env=stack.clean_env(),
                                 start_new_session=True)
            _children.add(p)
            procs.append(p)
        outs = [p.communicate(timeout=300) for p in procs]
        elapsed = time.monotonic() - t0
    finally:
        for p in procs:
            _kill_group(p)
            _children.discard(p)
    cpu = meter.stop()
    bad = []
    for p, (out, err) in zip(procs, outs):
        lines = out.decode().split()
        got = list(zip(lines[0::2], lines[1::2]))
        if p.returncode != 0 or len(got) != reps or any(
                code != "200" or int(n) != size for code, n in got):
            bad.append("rc=%s %r %s" % (p.returncode, got[:3], err.decode(errors="replace")))
    if bad:
        raise BenchError("curl %s: %d of %d clients failed: %s"
                         % (url, len(bad), clients, bad[0]))
    total = clients * reps * size
    return {"seconds": round(elapsed, 4), "bytes": total,
            "mb_per_s": round(total / elapsed / 1e6, 1), "cpu_s": cpu}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def header_bytes(resp):
    """The size of resp's status line and headers as sent on the wire."""
    n = len("HTTP/1.1 %d %s\r\n" % (resp.status, resp.reason)) + 2
    for k, v in resp.headers.items():
        n += len(k) + len(v) + 4
    return n


def check(resp, what, sha=None, cache=None):
    if resp.status != 200 or not resp.complete:
        raise BenchError("%s: %r" % (what, resp))
    if sha is not None and sha256(resp.body) != sha:
        raise BenchError("%s: body hashes to %s, expected %s" % (what, sha256(resp.body), sha))
    if cache is not None and resp.header("X-Larder-Cache") not in cache:
        raise BenchError("%s: X-Larder-Cache %r, expected %s"
                         % (what, resp.header("X-Larder-Cache"), "/".join(cache)))
    return resp


# ---------------------------------------------------------------- the run

def machine_info(nginx_bin, larder_bin):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    nv = subprocess.run([nginx_bin, "-v"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT).stdout.decode().strip()
    wv = subprocess.run(["wrk", "--version"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT).stdout.decode().splitlines()
    with open(larder_bin, "rb") as f:
        blob = f.read()
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "nginx": nv.replace("nginx version: ", ""),
        "wrk": wv[0].split(" [")[0] if wv else "?",
        "larder": larder_bin,
        "larder_sanitizers": b"libasan.so" in blob or b"__asan_init" in blob,
        "loadavg_before": open("/proc/loadavg").read().split()[:3],
    }


def summarise(values):
    return {"median": round(statistics.median(values), 3),
            "min": round(min(values), 3), "max": round(max(values), 3),
            "all": [round(v, 3) for v in values]}


def bench(args, work):
    wheel_dir = os.path.join(work, "wheels")
    static_dir = os.path.join(work, "static")
    os.makedirs(static_dir)
    t = time.monotonic()
    big = build_inputs(wheel_dir, args.page_files, args.wheel_mb)
    big_sha, big_size = wheels.sha256_file(big), os.path.getsize(big)
    log("built %d page wheels and a %.1f MiB wheel in %.1f s"
        % (args.page_files, big_size / 2**20, time.monotonic() - t))

    st = stack.Standin(wheel_dir, os.path.join(work, "standin"))
    larder = ngx = None
    try:
        st.start()
        larder = stack.Larder(os.path.join(work, "larder"), st.port, cache_ttl=args.cache_ttl,
                              workers=args.larder_workers, binary=args.larder)
        larder.start()
        ngx = BenchNginx(os.path.join(work, "nginx"), larder.port, larder.data_dir,
                         static_dir, workers=args.nginx_workers)
        ngx.start()
        return measure(args, ngx, larder, st, static_dir, big, big_sha, big_size)
    except BaseException:
        # What larder and nginx said, for the report of a failed run.
        if larder is not None:
            tail = [ln for ln in larder.log_lines() if " HIT " not in ln][-30:]
            sys.stderr.write("--- larder log (last lines but hits) ---\n%s\n" % "\n".join(tail))
        if ngx is not None:
            tail = [ln for ln in ngx.error_text().splitlines() if "[error]" in ln or "[crit]" in ln]
            if tail:
                sys.stderr.write("--- nginx error log (errors) ---\n%s\n" % "\n".join(tail[-30:]))
        raise
    finally:
        for piece in (ngx, larder, st):
            if piece is None:
                continue
            try:
                piece.stop()
            except Exception as e:  # keep stopping the others
                sys.stderr.write("stopping %s: %r\n" % (type(piece).__name__, e))


def log(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


def measure(args, ngx, larder, st, static_dir, big, big_sha, big_size):
    base = ngx.base
    page_path = "/root/pypi/simple/%s/" % PAGE_PROJECT
    page_url = base + page_path
    accept = {"Accept": JSON_TYPE}

    # ---- warm the cache: the page (a miss, then a hit) ...
    check(stack.http(page_url, headers=accept), "first page fetch", cache=("MISS",))
    page = check(stack.http(page_url, headers=accept), "warm page fetch", cache=("HIT",))
    doc = page.json()
    if len(doc.get("files", [])) != args.page_files:
        raise BenchError("page lists %d files, expected %d"
                         % (len(doc.get("files", [])), args.page_files))
    page_body = page.body
    with open(os.path.join(static_dir, "page.json"), "wb") as f:
        f.write(page_body)
    static_page_url = base + "/static/page.json"
    check(stack.http(static_page_url, headers=accept), "static page", sha=sha256(page_body))
    page_expect = len(page_body) + header_bytes(page)
    log("page %s: %d files, %d bytes" % (page_path, args.page_files, len(page_body)))

    # ... and the wheel, its URL taken from its own page.
    wpage_url = base + "/root/pypi/simple/%s/" % WHEEL_PROJECT
    wdoc = check(stack.http(wpage_url, headers=accept), "wheel page").json()
    entry = [f for f in wdoc["files"] if f["filename"] == os.path.basename(big)]
    if not entry or entry[0]["hashes"].get("sha256") != big_sha:
        raise BenchError("wheel page does not list %s with its sha256: %r"
                         % (os.path.basename(big), wdoc["files"]))
    wheel_url = urljoin(wpage_url, entry[0]["url"])
    check(stack.http(wheel_url, timeout=120), "first wheel download", sha=big_sha,
          cache=("MISS",))
    check(stack.http(wheel_url, timeout=120), "warm wheel download", sha=big_sha,
          cache=("HIT",))
    shutil.copyfile(big, os.path.join(static_dir, os.path.basename(big)))
    static_wheel_url = base + "/static/" + os.path.basename(big)
    check(stack.http(static_wheel_url, timeout=120), "static wheel", sha=big_sha)
    log("wheel %s: %d bytes" % (urlsplit(wheel_url).path, big_size))
    upstream_before = st.counters()

    meter = CpuMeter(larder.proc.pid, ngx.proc.pid, st.proc.pid)
    rounds = []
    for i in range(args.rounds):
        order = ("static", "larder") if i % 2 == 0 else ("larder", "static")
        rnd = {"order": list(order), "page": {}, "wheel": {}}
        for side in order:
            url = page_url if side == "larder" else static_page_url
            rnd["page"][side] = wrk_page(url, args, page_expect, meter)
            log("round %d page %-6s %9.1f req/s" % (i + 1, side, rnd["page"][side]["req_per_s"]))
        for side in order:
            url = wheel_url if side == "larder" else static_wheel_url
            rnd["wheel"][side] = curl_parallel(url, args.clients, args.wheel_reps,
                                               big_size, meter)
            log("round %d wheel %-6s %9.1f MB/s" % (i + 1, side, rnd["wheel"][side]["mb_per_s"]))
        rnd["page"]["ratio"] = rnd["page"]["larder"]["req_per_s"] / rnd["page"]["static"]["req_per_s"]
        rnd["wheel"]["ratio"] = (rnd["wheel"]["larder"]["mb_per_s"]
                                 / rnd["wheel"]["static"]["mb_per_s"])
        rounds.append(rnd)

    # Still the right bytes at the end, and nothing went upstream meanwhile.
    check(stack.http(page_url, headers=accept), "page after the run", sha=sha256(page_body))
    check(stack.http(wheel_url, timeout=120), "wheel after the run", sha=big_sha)
    upstream_after = st.counters()
    if upstream_after["requests"] != upstream_before["requests"] or \
            upstream_after["files"] != upstream_before["files"]:
        raise BenchError("larder went upstream during the warm run: %r -> %r"
                         % (upstream_before, upstream_after))
    hits = sum(1 for line in larder.log_lines() if " HIT " in line)

    return {
        "page": {"path": page_path, "bytes": len(page_body), "files": args.page_files},
        "wheel": {"path": urlsplit(wheel_url).path, "bytes": big_size, "sha256": big_sha},
        "rounds": rounds,
        "larder_hits_logged": hits,
        "summary": {
            "page_larder_req_per_s": summarise([r["page"]["larder"]["req_per_s"] for r in rounds]),
            "page_static_req_per_s": summarise([r["page"]["static"]["req_per_s"] for r in rounds]),
            "page_ratio": summarise([r["page"]["ratio"] for r in rounds]),
            "wheel_larder_mb_per_s": summarise([r["wheel"]["larder"]["mb_per_s"] for r in rounds]),
            "wheel_static_mb_per_s": summarise([r["wheel"]["static"]["mb_per_s"] for r in rounds]),
            "wheel_ratio": summarise([r["wheel"]["ratio"] for r in rounds]),
        },
    }


def cpu_per_1000(rounds, workload, side, who):
    """CPU ms per 1000 requests (page) or per GB moved (wheel), median."""
    vals = []
    for r in rounds:
        m = r[workload][side]
        if workload == "page":
            vals.append(m["cpu_s"][who] * 1e6 / m["requests"])
        else:
            vals.append(m["cpu_s"][who] * 1e3 / (m["bytes"] / 1e9))
    return statistics.median(vals)


def report(res, args):
    s = res["summary"]

    def cell(d, fmt="%.0f"):
        return (fmt + " (" + fmt + ".." + fmt + ")") % (d["median"], d["min"], d["max"])

    print()
    print("larder core benchmark: %d round(s), page %d bytes (%d files), wheel %d bytes"
          % (args.rounds, res["page"]["bytes"], res["page"]["files"], res["wheel"]["bytes"]))
    print("page: wrk -t%d -c%d -d%ds, Accept: %s; wheel: %d parallel curl, %d downloads each"
          % (args.threads, args.connections, args.duration, JSON_TYPE, args.clients,
             args.wheel_reps))
    print()
    rows = [
        ("page req/s", cell(s["page_larder_req_per_s"]), cell(s["page_static_req_per_s"]),
         cell(s["page_ratio"], "%.2f"), PAGE_GOAL, s["page_ratio"]["median"]),
        ("wheel MB/s", cell(s["wheel_larder_mb_per_s"]), cell(s["wheel_static_mb_per_s"]),
         cell(s["wheel_ratio"], "%.2f"), WHEEL_GOAL, s["wheel_ratio"]["median"]),
    ]
    hdr = ("", "larder median (min..max)", "static median (min..max)",
           "ratio (min..max)", "goal")
    table = [hdr] + [(n, a, b, c, ">= %.1f %s" % (g, "met" if m >= g else "MISSED"))
                     for n, a, b, c, g, m in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(hdr))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print()
    print("per round (other: the largest share of the machine's CPU time that went to other")
    print("processes during one of the round's four measurements)")
    for i, r in enumerate(res["rounds"]):
        other = max(r[wl][side]["cpu_s"]["machine_other"]
                    for wl in ("page", "wheel") for side in ("larder", "static"))
        print("  %d  %-13s page %6.0f / %6.0f req/s = %.2f   wheel %6.0f / %6.0f MB/s = %.2f"
              "   other %2.0f%%" % (
                  i + 1, "+".join(r["order"]), r["page"]["larder"]["req_per_s"],
                  r["page"]["static"]["req_per_s"], r["page"]["ratio"],
                  r["wheel"]["larder"]["mb_per_s"], r["wheel"]["static"]["mb_per_s"],
                  r["wheel"]["ratio"], other * 100))
    print()
    print("CPU (median): page in ms per 1000 requests, wheel in ms per GB")
    for wl in ("page", "wheel"):
        for side in ("larder", "static"):
            parts = ["%s %.0f" % (who, cpu_per_1000(res["rounds"], wl, side, who))
                     for who in ("larder", "nginx", "client")]
            share = {k: statistics.median(r[wl][side]["cpu_s"]["machine_" + k]
                                          for r in res["rounds"]) * 100
                     for k in ("user", "system", "softirq", "idle")}
            print("  %-5s %-6s %s; machine: %.0f%% user, %.0f%% system, %.0f%% softirq, "
                  "%.0f%% idle" % (wl, side, ", ".join(parts), share["user"], share["system"],
                                   share["softirq"], share["idle"]))
    other = max(r[wl][side]["cpu_s"]["machine_other"] for r in res["rounds"]
                for wl in ("page", "wheel") for side in ("larder", "static"))
    res["max_other_share"] = round(other, 3)
    if other > 0.10:
        print()
        print("WARNING: up to %.0f%% of the machine's CPU time went to other processes during "
              "a measurement: the figures are suspect." % (other * 100))
    if res["machine"]["larder_sanitizers"]:
        print()
        print("NOTE: %s is a sanitizer (--enable-debug) build; its figures do not "
              "represent a release build." % res["machine"]["larder"])


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="larder's warm path against nginx serving the same bytes statically",
        epilog="Exit status 1 when a request failed; the goals are reported, not enforced.")
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run (10)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, order alternating (3)")
    ap.add_argument("--smoke", action="store_true",
                    help="2 s wrk runs, 1 round, a small page and wheel: proves it runs")
    ap.add_argument("--json", metavar="OUT", help="write the full results here")
    ap.add_argument("--larder", default=stack.larder_bin(),
                    help="the larder binary ($LARDER_BIN, else ./larder)")
    ap.add_argument("--page-files", type=int, default=None,
                    help="wheels on the big page (1100: about 500 KB of JSON)")
    ap.add_argument("--wheel-mb", type=float, default=None, help="big wheel size in MiB (15)")
    ap.add_argument("--wheel-reps", type=int, default=None,
                    help="downloads per curl client per measurement (10)")
    ap.add_argument("--clients", type=int, default=8, help="parallel curl clients (8)")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (2)")
    ap.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    ap.add_argument("--larder-workers", type=int, default=4, help="larder serve --workers (4, the config default)")
    ap.add_argument("--nginx-workers", type=int, default=os.cpu_count() or 1,
                    help="nginx worker_processes (the CPU count, as `auto`)")
    ap.add_argument("--cache-ttl", type=int, default=86400,
                    help="larder cache_ttl: longer than the run, so it stays warm")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args(argv)
    if args.smoke:
        args.duration, args.rounds = 2, 1
        defaults = {"page_files": 100, "wheel_mb": 2, "wheel_reps": 2}
    else:
        defaults = {"page_files": 1100, "wheel_mb": 15, "wheel_reps": 10}
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)

    why = stack.missing_reason() if args.larder == stack.larder_bin() else None
    for tool in ("wrk", "curl"):
        if not shutil.which(tool):
            why = why or "%s not installed (apt-get install %s)" % (tool, tool)
    if not os.access(args.larder, os.X_OK):
        why = why or "larder binary not found at %s" % args.larder
    if why:
        sys.stderr.write("bench: cannot run: %s\n" % why)
        return 2

    def on_signal(sig, _frame):
        raise KeyboardInterrupt("signal %d" % sig)
    signal.signal(signal.SIGTERM, on_signal)

    args.larder = os.path.abspath(args.larder)
    info = machine_info(stack.NGINX, args.larder)
    work = tempfile.mkdtemp(prefix="larder-bench-")
    status = 0
    try:
        res = bench(args, work)
        res["machine"] = info
        res["command"] = " ".join([os.path.relpath(__file__, REPO)] + (argv or sys.argv[1:]))
        res["settings"] = {k: getattr(args, k) for k in (
            "duration", "rounds", "smoke", "page_files", "wheel_mb", "wheel_reps", "clients",
            "threads", "connections", "larder_workers", "nginx_workers", "cache_ttl")}
        res["goals"] = {
            "page_ratio": PAGE_GOAL, "page_met": res["summary"]["page_ratio"]["median"] >= PAGE_GOAL,
            "wheel_ratio": WHEEL_GOAL,
            "wheel_met": res["summary"]["wheel_ratio"]["median"] >= WHEEL_GOAL,
        }
        res["ok"] = True
        report(res, args)
    except (BenchError, RuntimeError, OSError) as e:
        # RuntimeError: a piece of the stack would not start (stack.py).
        sys.stderr.write("bench: FAILED: %s\n" % e)
        res = {"ok": False, "error": str(e), "machine": info}
        status = 1
    except KeyboardInterrupt as e:
        sys.stderr.write("bench: interrupted (%s)\n" % e)
        res = {"ok": False, "error": "interrupted", "machine": info}
        status = 130
    finally:
        for p in list(_children):
            _kill_group(p)
        if args.keep:
            log("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2, sort_keys=True)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
