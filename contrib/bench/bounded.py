"""The `bounded` workload of bench.py: an install storm while larder's store
is held at its limit (max_size, docs/disk.md).

larder behind nginx runs twice, in the same run and against the same
upstream:

  unbounded  max_size = 0. N pip installs of the install set at once, cold;
             the store's size afterwards is the storm's working set W.
  bounded    a second larder behind nginx with max_size = 1.5 W, its store
             filled to 95% of it with old filler blobs before the storm
             (random bytes, mtime a day ago, taken into the inventory by
             `larder gc`): the storm's working set fits, but only once the
             filler is evicted. The same N installs, with the size of
             DATA/blobs sampled every 20 ms.

Both stay up; then wrk takes turns on the same warm URL of each, five
rounds, the order swapped each round; the warm ratio is the median of the
rounds' ratios (the machine may be shared with other work).

Reported: failed installs (goal 0), the highest store size seen over
max_size in % (goal <= 2%), warm req/s bounded / unbounded (goal >= 0.95),
and the storms' wall times.
"""

import hashlib
import os
import statistics
import subprocess
import threading
import time

import stack  # tests/integration, on the path bench.py set

PARTY = "larder-nginx"
FILLER_FILES = 64
WARM_ROUNDS = 5


def fill(data_dir, total):
    """Writes about total bytes of old blobs (named by their sha256, mtime
    a day ago) into the store; returns the bytes written."""
    each = max(1, total // FILLER_FILES)
    old = time.time() - 86400
    written = 0
    for i in range(FILLER_FILES):
        data = os.urandom(each)
        sha = hashlib.sha256(data).hexdigest()
        d = os.path.join(data_dir, "blobs", "sha256", sha[:2], sha[2:4])
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, sha)
        with open(path, "wb") as f:
            f.write(data)
        os.utime(path, (old, old))
        written += each
    return written


class Sampler:
    """The highest store size seen, every 20 ms, while it runs."""

    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()

    def _loop(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, stack.store_bytes(self.data_dir))
            self.samples += 1
            self._stop.wait(0.02)

    def __enter__(self):
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def warm_url(bench, b, p):
    """A warm URL larder answers from the store (send_blob): the PEP 658
    metadata of a wheel of the install set, else the wheel."""
    client = b.Client()
    files = b.page_files(client, p.index_url, bench.corpus["install_set"][0])
    wheel = sorted(u for fn, u in files.items() if fn.endswith(".whl"))[-1]
    status, _, _ = client.get(wheel + ".metadata")
    return wheel + ".metadata" if status == 200 else wheel


def run(bench, b):
    """Runs the workload on bench (a bench.Bench; b is the bench module);
    returns its goals."""
    r = bench.res
    n = min(bench.args.installs, 6)
    d = max(1, bench.args.duration // 2)
    r.workload("bounded-storm", "%d pip installs at once, store at its limit" % n, "s",
               "lower", PARTY, ["unbounded", "bounded"],
               "%d cold installs of the install set at once through larder behind nginx: "
               "with no limit, then with max_size = 1.5 x the storm's working set and the "
               "store pre-filled to 95%% of it with old filler blobs that must be evicted "
               "for the storm to fit. Failed installs are counted; the store (the files "
               "under DATA/blobs) is sampled every 20 ms." % n)
    r.workload("bounded-warm", "warm req/s, bounded vs unbounded", "req/s", "higher",
               PARTY, ["unbounded", "bounded"],
               "wrk, 32 connections, %d s, on the warm PEP 658 metadata of a wheel of the "
               "install set, after both storms, in %d rounds taking turns (the order "
               "swapped each round): the cost of recording use on the warm path (one "
               "atomic store per answer) and of a store at its limit. The goal's ratio "
               "is the median of the rounds' ratios." % (d, WARM_ROUNDS))
    if not bench.present([PARTY]):
        return []
    out = {}
    ratio = None
    parties = {}
    try:
        for case in ("unbounded", "bounded"):
            if case == "unbounded":
                p = bench.fresh(PARTY)
            else:
                # a second larder-nginx, alive beside the first, so that the
                # warm figures can be taken in turns
                limit = max(int(out["unbounded"]["working_set"] * 1.5), 1 << 20)
                p = b.partymod.make(PARTY, bench.work, bench.upstream, bench.args)
                p.dir_prefix = "bounded-"
                p.larder_extra = {"prefetch_metadata": "yes",
                                  "max_size": "%dk" % (limit // 1024)}
                p.start()
                bench.running.append(p)
                filler = fill(p.data_dir, limit * 95 // 100)
                g = subprocess.run([bench.args.larder, "gc", "-c", p.fe.conf],
                                   capture_output=True, text=True, timeout=120)
                if g.returncode != 0:
                    raise b.Failure("larder gc: %s" % (g.stdout + g.stderr))
            parties[case] = p
            with b.Meter(p) as m, Sampler(p.data_dir) as s:
                wall, bad = bench.pips(p, n, "bounded-%s" % case)
            time.sleep(0.5)   # the last collector run after the last commit
            extra = {"wall_s": wall, "failed_installs": bad, "store_bytes": stack.store_bytes(
                p.data_dir), "peak_bytes": s.peak, "samples": s.samples}
            if case == "unbounded":
                extra["working_set"] = extra["store_bytes"]
            else:
                extra.update(max_size=limit, filler_bytes=filler,
                             peak_over_pct=100.0 * (s.peak - limit) / limit)
            out[case] = extra
            r.add("bounded-storm", PARTY, case, wall, m, errors=bad, extra=extra)
            b.log("bounded %-9s storm %6.2f s, %d failed, store %d bytes (peak %d)%s" % (
                case, wall, bad, extra["store_bytes"], s.peak,
                ", %.2f%% over max_size %d" % (extra["peak_over_pct"], limit)
                if case == "bounded" else ""))
        urls = {case: warm_url(bench, b, p) for case, p in parties.items()}
        rates = {"unbounded": [], "bounded": []}
        # in turns, the order swapped each round, against a shared
        # machine's drift: the ratio is the median of the rounds' ratios
        for rnd in range(WARM_ROUNDS):
            for case in (("unbounded", "bounded") if rnd % 2 == 0
                         else ("bounded", "unbounded")):
                rps, reqs, errors = bench.wrk(urls[case], 32, d)
                rates[case].append(rps)
                r.add("bounded-warm", PARTY, case, rps, errors=errors,
                      extra={"url": urls[case], "requests": reqs})
                b.log("bounded %-9s warm %.0f req/s" % (case, rps))
        for case in rates:
            out[case]["rps"] = statistics.median(rates[case])
        ratio = statistics.median([
            b_ / u_ for b_, u_ in zip(rates["bounded"], rates["unbounded"]) if u_])
    finally:
        for p in parties.values():
            bench.done(p)
    failed = sum(x["failed_installs"] for x in out.values())
    over = out["bounded"]["peak_over_pct"]
    return [
        {"text": "bounded: failed installs during the storm at the store's limit",
         "value": failed, "target": "0", "met": failed == 0, "why": None},
        {"text": "bounded: highest store size over max_size during the storm (%)",
         "value": round(max(over, 0.0), 3), "target": "<= 2", "met": over <= 2.0,
         "why": "peak %d bytes, max_size %d" % (out["bounded"]["peak_bytes"],
                                                out["bounded"]["max_size"])},
        {"text": "bounded: warm req/s, bounded / unbounded",
         "value": round(ratio, 3) if ratio is not None else None, "target": ">= 0.95",
         "met": ratio >= 0.95 if ratio is not None else None, "why": None},
    ]
