"""The metadata-synthesis workload of bench.py (issue 11), larder behind
nginx only:

  metasynth   the PEP 658 metadata of the metadata workload's wheels,
              fetched cold one after another on a kept-alive connection
              (their pages first, untimed), from larder as shipped but with
              prefetch_metadata = no (every document a miss), in two cases
              in the same run against the same stand-in: "advertised", the
              upstream offering each wheel's .metadata, and "synthesised",
              the upstream's JSON pages carrying no metadata key at all
              (POST /_control {"json_metadata_keys": []}), so that larder
              makes every document with range reads of the upstream wheel.
              Each document's sha256 is checked against the wheel's own
              METADATA (the .metadata sibling is its exact bytes). docs/s.

Goal: synthesised >= 0.5 x advertised.
"""

import hashlib

PARTY = "larder-nginx"
WORKLOADS = ["metasynth"]
CASES = ["advertised", "synthesised"]


def _goal(bench, b):
    r = bench.res
    a = r.get("metasynth", PARTY, "synthesised")
    ref = r.get("metasynth", PARTY, "advertised")
    v = a / ref if a is not None and ref else None
    return [{"text": "Cold PEP 658 metadata made by range reads / fetched from an "
                     "upstream that advertises it (docs/s)",
             "value": b._r(v, 3) if v is not None else None, "target": ">= 0.5",
             "met": v >= 0.5 if v is not None else None,
             "why": None if v is not None else "not measured"}]


def _one(bench, b, rnd, metas, case):
    up = bench.upstream.standin
    up.control(json_metadata_keys=[] if case == "synthesised" else None)
    p = bench.fresh(PARTY, larder_extra={"prefetch_metadata": "no"})
    client = b.Client()
    try:
        urls, pages = [], {}
        for w in metas:
            if w["project"] not in pages:
                pages[w["project"]] = b.page_files(client, p.index_url, w["project"])
            urls.append((pages[w["project"]][w["filename"]] + ".metadata",
                         w["metadata_sha256"]))
        bad = 0
        with b.Meter(p) as m:
            for url, sha in urls:
                status, _, body = client.get(url)
                if status != 200 or hashlib.sha256(body).hexdigest() != sha:
                    bad += 1
        if bad:
            bench.fail("metasynth %s: %d bad documents" % (case, bad))
        rate = len(urls) / m.wall
        bench.res.add("metasynth", PARTY, case, rate, m, errors=bad)
        b.log("metasynth round %d %-12s %8.1f docs/s" % (rnd + 1, case, rate))
    finally:
        client.close()
        bench.done(p)
        up.control(json_metadata_keys=None)


def run(bench, b):
    metas = bench.corpus["metadata_wheels"][:16]
    bench.res.workload(
        "metasynth", "cold PEP 658 metadata of %d wheels, made or fetched" % len(metas),
        "docs/s", "higher", None, CASES,
        "The `.metadata` of %d wheels fetched cold one after another on a kept-alive "
        "connection (pages first, untimed; prefetch_metadata = no), from larder behind "
        "nginx: advertised, the upstream offering each .metadata; synthesised, the "
        "same upstream's JSON pages without any metadata key, so larder reads each "
        "wheel's METADATA with range reads. Each document's sha256 is checked."
        % len(metas))
    if not bench.present([PARTY]):
        return _goal(bench, b)
    for rnd in range(bench.args.rounds):
        for case in bench.rotate(CASES, rnd):
            _one(bench, b, rnd, metas, case)
    return _goal(bench, b)
