"""The compressed-pages workloads of bench.py (issue 11), larder behind
nginx only (the shipped conf/nginx.conf, its page cache included):

  gzip-page    warm project pages, wrk with 32 connections and the
               installer Accept header, with and without
               "Accept-Encoding: gzip" in the same round, on the corpus's
               0.5 MB page and on a small page (req/s).
  gzip-bytes   the body bytes of one such answer, each way (bytes).

larder stores each page rendering's gzip beside it when it is stored, so a
gzip'd answer costs no compression per request: nginx's page cache keeps
one copy per Accept-Encoding and sends it as it does the plain one. Every
gzip'd body is checked to inflate to the plain one before the clock.

Goals: the 0.5 MB page's gzip'd answer is at most a fifth of its bytes,
and serving it costs nothing in req/s (at least 0.95 of the plain page's).
"""

import gzip
import time
from urllib.parse import urljoin

PARTY = "larder-nginx"
WORKLOADS = ["gzip-page", "gzip-bytes"]
ENCODINGS = (("identity", None), ("gzip", "Accept-Encoding: gzip"))


def _cases():
    return ["%s-%s" % (page, enc) for page in ("large-page", "small-page")
            for enc, _ in ENCODINGS]


def _goals(bench, b):
    r = bench.res
    out = []
    plain, zipped = (r.get("gzip-bytes", PARTY, "large-page-" + e) for e in ("identity", "gzip"))
    v = zipped / plain if plain and zipped is not None else None
    out.append({"text": "Warm 0.5 MB page: bytes gzip'd / plain",
                "value": b._r(v, 3) if v is not None else None, "target": "<= 0.2",
                "met": v <= 0.2 if v is not None else None,
                "why": None if v is not None else "not measured"})
    for page in ("large-page", "small-page"):
        plain, zipped = (r.get("gzip-page", PARTY, "%s-%s" % (page, e))
                         for e in ("identity", "gzip"))
        v = zipped / plain if plain and zipped is not None else None
        out.append({"text": "Warm %s, 32 connections: req/s gzip'd / plain" %
                            page.replace("-", " "),
                    "value": b._r(v, 3) if v is not None else None, "target": ">= 0.95",
                    "met": v >= 0.95 if v is not None else None,
                    "why": None if v is not None else "not measured"})
    return out


def run(bench, b):
    """Both workloads in one run (the bytes are measured on the answers the
    req/s figures are of)."""
    mid, small = bench.corpus["swarm_pages"]["mid"], bench.corpus["swarm_pages"]["small"]
    d = bench.args.duration
    cases = _cases()
    bench.res.workload(
        "gzip-page", "warm pages, gzip'd and plain", "req/s", "higher", None, cases,
        "wrk, closed loop, %d s per figure, 32 connections, installer Accept header, "
        "larder behind the shipped nginx config: the %s page (%s) and the %s page (%s), "
        "each with no Accept-Encoding and with Accept-Encoding: gzip, taking turns in "
        "every round." % (d, mid, "%PAGE_MID%", small, "%PAGE_SMALL%"))
    bench.res.workload(
        "gzip-bytes", "bytes per page answer, gzip'd and plain", "bytes", "lower", None,
        cases, "Content-Length of one warm answer of each of gzip-page's cases.")
    if not bench.present([PARTY]):
        return _goals(bench, b)
    p = bench.fresh(PARTY)
    try:
        client = b.Client()
        urls = {}
        for page, proj in (("large-page", mid), ("small-page", small)):
            url = urljoin(p.index_url, proj + "/")
            plain = None
            for enc, header in ENCODINGS:
                h = {"Accept": b.JSON_ACCEPT}
                if header:
                    k, v = header.split(": ", 1)
                    h[k] = v
                for _ in range(2):      # a miss (stored), then a hit
                    status, headers, body = client.get(url, h)
                # a cold page's gzip'd copy is made after its answer: give
                # it a moment before the rounds measure the warm answers
                deadline = time.monotonic() + 10
                while header and status == 200 and time.monotonic() < deadline and \
                        headers.get("content-encoding") != "gzip":
                    time.sleep(0.1)
                    status, headers, body = client.get(url, h)
                if status != 200:
                    raise b.Failure("gzip-page: %s: %d" % (url, status))
                if header is None:
                    plain = body
                elif headers.get("content-encoding") != "gzip" or \
                        gzip.decompress(body) != plain:
                    raise b.Failure("gzip-page: %s: no gzip'd answer of the page (%s)" % (
                        url, headers.get("content-encoding")))
                urls["%s-%s" % (page, enc)] = (url, header, len(body))
        client.close()
        for url, header, _ in urls.values():
            bench.wrk(url, 32, 2, headers=[header] if header else [])
        for rnd in range(bench.args.rounds):
            for case in bench.rotate(cases, rnd):
                url, header, size = urls[case]
                with b.Meter(p) as m:
                    rps, n, errors = bench.wrk(url, 32, d,
                                               headers=[header] if header else [])
                if errors:
                    bench.fail("gzip-page %s: %d errors" % (case, errors))
                bench.res.add("gzip-page", PARTY, case, rps, m, errors=errors,
                              extra={"url": url, "requests": n, "bytes": size})
                bench.res.add("gzip-bytes", PARTY, case, size)
                b.log("gzip-page round %d %-22s %9.0f req/s %9d bytes" % (
                    rnd + 1, case, rps, size))
    finally:
        bench.done(p)
    return _goals(bench, b)
