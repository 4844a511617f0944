"""The cooldown workload of bench.py (issue 11), larder behind nginx only:

  cooldown-page  warm project pages (the corpus's mid and small swarm
                 pages) with the installer Accept header, wrk with 32
                 connections, larder without a cooldown and larder with
                 min_release_age = 1d, each fresh, taking turns in the same
                 run (req/s). The cooldown runs when a page is stored, not
                 when it is answered, so the goal is no measurable cost:
                 with / without >= 0.98.
"""

from urllib.parse import urljoin

PARTY = "larder-nginx"
WORKLOADS = ["cooldown-page"]
CASES = ["mid-off", "mid-on", "small-off", "small-on"]
ON = {"min_release_age": "1d"}


def run(bench, b):
    pages = bench.corpus["swarm_pages"]
    bench.res.workload(
        "cooldown-page", "warm page, with and without a cooldown", "req/s", "higher",
        None, CASES,
        "wrk, closed loop, %d s per figure, 32 connections, installer Accept header, "
        "on the %s and %s pages: larder behind nginx fresh without a cooldown (off) "
        "and with min_release_age = 1d (on), taking turns."
        % (bench.args.duration, pages["mid"], pages["small"]))
    if not bench.present([PARTY]):
        return _goals(bench, b)
    d = bench.args.duration
    for rnd in range(bench.args.rounds):
        for mode in bench.rotate(["off", "on"], rnd):
            p = bench.fresh(PARTY, ON if mode == "on" else None)
            try:
                client = b.Client()
                urls = {}
                for size in ("mid", "small"):
                    url = urljoin(p.fe.index_url("root/pypi"), pages[size] + "/")
                    for _ in range(2):      # the first request fetches
                        status, _, _ = client.get(url, {"Accept": b.JSON_ACCEPT})
                    if status != 200:
                        raise b.Failure("cooldown-page %s: %s: %d" % (mode, url, status))
                    urls[size] = url
                client.close()
                for size, url in sorted(urls.items()):
                    bench.wrk(url, 32, 1)   # every worker started
                    case = "%s-%s" % (size, mode)
                    with b.Meter(p) as m:
                        rps, n, errors = bench.wrk(url, 32, d)
                    if errors:
                        bench.fail("cooldown-page %s: %d errors" % (case, errors))
                    bench.res.add("cooldown-page", PARTY, case, rps, m, errors=errors,
                                  extra={"url": url, "requests": n})
                    b.log("cooldown-page round %d %-10s %9.0f req/s" % (rnd + 1, case, rps))
            finally:
                bench.done(p)
    return _goals(bench, b)


def _goals(bench, b):
    out = []
    for size in ("mid", "small"):
        on = bench.res.get("cooldown-page", PARTY, size + "-on")
        off = bench.res.get("cooldown-page", PARTY, size + "-off")
        v = on / off if on is not None and off else None
        out.append({"text": "Warm %s page with min_release_age / without" % size,
                    "value": b._r(v, 3) if v is not None else None, "target": ">= 0.98",
                    "met": v >= 0.98 if v is not None else None,
                    "why": None if v is not None else "not measured"})
    return out
