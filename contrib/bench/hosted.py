"""The hosted-index workloads of bench.py (issue 10), larder behind nginx
only (the shipped conf/nginx.conf), with the indexes of the upload tests
(tests/integration/uploads.py: root/private hosted, root/scratch hosted and
volatile, root/pypi private-first and root/fallback over root/private and
the upstream):

  upload        a wheel of --upload-mb MB (50; 2 in the smoke run) POSTed
                as twine does (multipart/form-data, the same body every
                round, made once) by curl -T to root/scratch, against nginx
                receiving the same body into a file (nginx-static's DAV PUT
                location); MB/s. The release is removed between rounds (not
                timed), so every round is a whole upload: streamed in,
                hashed, checked, published.
  hosted-page   the warm page of a hosted project (HOSTED_FILES files
                uploaded), wrk with 1 and 32 connections and the installer
                Accept header, against nginx serving the same bytes as a
                static file (req/s), as the swarm workload measures cache
                pages.
  virtual-page  the same for a virtual index: through root/pypi
                (private-first, the project only hosted) and through
                root/fallback where the hosted project's name is also an
                upstream project (a merged page).

Each returns its goals: upload >= 0.8 of nginx; warm pages >= 0.7 of nginx
static (the small-page goal of the cache pages).
"""

import hashlib
import http.client
import json
import os
import subprocess
import time
from urllib.parse import urljoin, urlsplit

import uploads  # tests/integration, on the path bench.py set
import wheels

PARTY = "larder-nginx"
REF = "nginx-static"
HOSTED_PROJECT = "larder-bench-hosted"
HOSTED_FILES = 12
UPLOAD_PROJECT = "larder-bench-upload"
WORKLOADS = ["upload", "hosted-page", "virtual-page"]


def _larder(bench, extra=None):
    """larder behind nginx with the hosted indexes, fresh."""
    p = bench.parties[PARTY]
    p.larder_extra_text = uploads.HOSTED_CONF.replace(
        "type = hosted\nvolatile = yes\n",
        "type = hosted\nvolatile = yes\nmax_upload_size = 1G\n")
    p.root_pypi = uploads.ROOT_PYPI
    return bench.fresh(PARTY, extra)


def _cli(p):
    return uploads.Cli(p.fe.binary if hasattr(p.fe, "binary") else p.args.larder,
                       getattr(p.fe, "larder_conf", None) or p.fe.conf)


def _curl(method, url, path, headers):
    """curl -T path (the body streamed from the file) with method; returns
    (http code, seconds). The request target is url's path as it is (curl
    would append the file's name to a URL ending in a slash)."""
    u = urlsplit(url)
    cmd = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
           "-X", method, "-T", path, "-H", "Expect:", "--request-target", u.path]
    for k, v in headers.items():
        cmd += ["-H", "%s: %s" % (k, v)]
    out = subprocess.run(cmd + ["%s://%s/" % (u.scheme, u.netloc)], capture_output=True,
                         text=True, timeout=900)
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 2:
        return 0, None
    return int(parts[0]), float(parts[1])


def _upload_goal(bench, b):
    r = bench.res
    v = None
    a, ref = r.get("upload", PARTY, "wheel"), r.get("upload", REF, "wheel")
    if a is not None and ref:
        v = a / ref
    return [{"text": "Upload of a %d MB wheel: larder behind nginx / nginx writing the body "
                     "to a file" % bench.args.upload_mb,
             "value": b._r(v, 3) if v is not None else None, "target": ">= 0.8",
             "met": v >= 0.8 if v is not None else None,
             "why": None if v is not None else "not measured"}]


def run_upload(bench, b):
    mb = bench.args.upload_mb
    r = bench.res
    r.workload("upload", "upload of a %d MB wheel" % mb, "MB/s", "higher", REF,
               ["wheel"],
               "curl -T of the same multipart/form-data body (twine's fields and a "
               "%d MB wheel of incompressible bytes) POSTed to a volatile hosted index "
               "through the shipped nginx config, one upload at a time, the release "
               "removed between rounds; the reference is nginx receiving the same body "
               "into a file (the DAV module's PUT). MB/s of request body." % mb)
    if not bench.present([PARTY, REF]):
        return _upload_goal(bench, b)
    work = os.path.join(bench.work, "upload")
    os.makedirs(work, exist_ok=True)
    whl = wheels.build_big(work, mb * 1e6 / (1 << 20), name=UPLOAD_PROJECT)
    ctype, body = uploads.upload_body(whl)
    body_path = os.path.join(work, "body")
    with open(body_path, "wb") as f:
        f.write(body)
    del body
    size = os.path.getsize(body_path)
    p = _larder(bench)
    ref = bench.fresh(REF)
    try:
        tok = uploads.token_add(_cli(p), "root/scratch", "upload,delete")
        url = "%s/root/scratch/" % p.fe.base
        drop = "%s/root/scratch/+release/%s/1.0" % (p.fe.base, UPLOAD_PROJECT)
        auth = uploads.basic(tok)
        for rnd in range(bench.args.rounds):
            for name in bench.rotate([PARTY, REF], rnd):
                if name == PARTY:
                    with b.Meter(p) as m:
                        code, secs = _curl("POST", url, body_path,
                                           dict(auth, **{"Content-Type": ctype}))
                    ok = code == 200
                    if ok:
                        st = http.client.HTTPConnection("127.0.0.1", p.fe.port, timeout=60)
                        st.request("DELETE", urlsplit(drop).path, headers=auth)
                        gone = st.getresponse()
                        gone.read()
                        st.close()
                        if gone.status != 200:
                            bench.fail("upload: removing the release: %d" % gone.status)
                    party = p
                else:
                    target = "http://127.0.0.1:%d/put/body-%d" % (ref.port, rnd)
                    with b.Meter(ref) as m:
                        code, secs = _curl("PUT", target, body_path,
                                           {"Content-Type": ctype})
                    ok = code in (200, 201, 204)
                    try:
                        os.unlink(os.path.join(ref.root, "put", "body-%d" % rnd))
                    except OSError:
                        pass
                    party = ref
                if not ok or not secs:
                    bench.fail("upload %s round %d: HTTP %d" % (name, rnd + 1, code))
                    r.add("upload", name, "wheel", None, m, errors=1)
                    continue
                r.add("upload", name, "wheel", size / secs / b.MB, m,
                      extra={"seconds": secs, "bytes": size})
                b.log("upload round %d %-14s %8.1f MB/s (%.2f s)" % (
                    rnd + 1, party.name, size / secs / b.MB, secs))
    finally:
        bench.done(p)
        bench.done(ref)
    return _upload_goal(bench, b)


def _page_goals(bench, b, workload, cases):
    out = []
    for case in cases:
        a, ref = bench.res.get(workload, PARTY, case), bench.res.get(workload, REF, case)
        v = a / ref if a is not None and ref else None
        out.append({"text": "Warm %s, %s: larder behind nginx / nginx static" % (
            workload.replace("-", " "), case),
            "value": b._r(v, 3) if v is not None else None, "target": ">= 0.7",
            "met": v >= 0.7 if v is not None else None,
            "why": None if v is not None else "not measured"})
    return out


def _fill_hosted(bench, b, p, tok, work, names):
    """Uploads HOSTED_FILES small wheels of each project in names to
    root/private."""
    for name in names:
        for i in range(HOSTED_FILES):
            whl = uploads.build_wheel(work, name, "0.%d" % i, (), ">=3.8")
            resp = uploads.upload(p.fe.base, "root/private", whl, tok, timeout=120)
            if resp.status != 200:
                raise b.Failure("upload of %s: %r %s" % (
                    os.path.basename(whl), resp, resp.body[:200]))


def _swarm(bench, b, workload, p, ref, routes, check=None):
    """Warm page req/s on each (case, conns, URL) of routes, and nginx
    static on the same bytes, taking turns. check(case, body) may raise
    b.Failure for a page that is not what the case measures."""
    client = b.Client()
    urls = {}
    for case, conns, url in routes:
        for _ in range(2):      # the first request renders or merges
            status, _, body = client.get(url, {"Accept": b.JSON_ACCEPT})
        if status != 200:
            raise b.Failure("%s: %s: %d" % (workload, url, status))
        if check is not None:
            check(case, body)
        digest = hashlib.sha256(body).hexdigest()[:12]
        urls[(PARTY, case)] = url
        urls[(REF, case)] = ref.put("pages/%s-%s.json" % (case, digest), body)
    client.close()
    d = bench.args.duration
    for (name, case), url in sorted(urls.items()):
        bench.wrk(url, 32, 1)   # every worker started before the clock
    for rnd in range(bench.args.rounds):
        for name in bench.rotate([PARTY, REF], rnd):
            party = p if name == PARTY else ref
            for case, conns, _ in routes:
                with b.Meter(party) as m:
                    rps, n, errors = bench.wrk(urls[(name, case)], conns, d)
                if errors:
                    bench.fail("%s %s %s: %d errors" % (workload, name, case, errors))
                bench.res.add(workload, name, case, rps, m, errors=errors,
                              extra={"url": urls[(name, case)], "requests": n})
                b.log("%s round %d %-14s %-24s %9.0f req/s" % (workload, rnd + 1, name,
                                                               case, rps))


def run_hosted_page(bench, b):
    cases = ["1-client", "32-clients"]
    bench.res.workload(
        "hosted-page", "warm hosted project page", "req/s", "higher", REF, cases,
        "wrk, closed loop, %d s per figure, installer Accept header, on the page of a "
        "hosted project with %d uploaded wheels (root/private): 1 and 32 connections. "
        "The reference is nginx sending the same page bytes as a static file."
        % (bench.args.duration, HOSTED_FILES))
    if not bench.present([PARTY, REF]):
        return _page_goals(bench, b, "hosted-page", ["32-clients"])
    p = _larder(bench)
    ref = bench.fresh(REF)
    try:
        tok = uploads.token_add(_cli(p), "root/private", "upload")
        work = os.path.join(bench.work, "hosted-page-%d" % time.monotonic_ns())
        _fill_hosted(bench, b, p, tok, work, [HOSTED_PROJECT])
        url = urljoin(p.fe.index_url("root/private"), HOSTED_PROJECT + "/")
        _swarm(bench, b, "hosted-page", p, ref,
               [("1-client", 1, url), ("32-clients", 32, url)])
    finally:
        bench.done(p)
        bench.done(ref)
    return _page_goals(bench, b, "hosted-page", ["32-clients"])


def run_virtual_page(bench, b):
    cases = ["32-clients-private-first", "32-clients-merged"]
    small = bench.corpus["swarm_pages"]["small"]
    bench.res.workload(
        "virtual-page", "warm virtual index page", "req/s", "higher", REF, cases,
        "wrk, closed loop, %d s per figure, 32 connections, installer Accept header: the "
        "page of a hosted project (%d wheels) through root/pypi (private-first: the "
        "hosted layer's page), and through root/fallback the page of %s, %d wheels "
        "uploaded under the name of an upstream project merged with the upstream's "
        "page. The reference is nginx sending the same bytes as a static file."
        % (bench.args.duration, HOSTED_FILES, small, HOSTED_FILES))
    if not bench.present([PARTY, REF]):
        return _page_goals(bench, b, "virtual-page", cases)
    p = _larder(bench)
    ref = bench.fresh(REF)
    try:
        tok = uploads.token_add(_cli(p), "root/private", "upload")
        work = os.path.join(bench.work, "virtual-page-%d" % time.monotonic_ns())
        _fill_hosted(bench, b, p, tok, work, [HOSTED_PROJECT, small])
        def check(case, body):
            names = [f["filename"] for f in json.loads(body)["files"]]
            hosted = [n for n in names if "-0." in n]
            if len(hosted) != HOSTED_FILES or (case.endswith("merged") and
                                               len(names) == HOSTED_FILES):
                raise b.Failure("virtual-page %s: not the page it measures: %s" % (
                    case, names))

        _swarm(bench, b, "virtual-page", p, ref, [
            ("32-clients-private-first", 32,
             urljoin(p.fe.index_url("root/pypi"), HOSTED_PROJECT + "/")),
            ("32-clients-merged", 32,
             urljoin(p.fe.index_url("root/fallback"), small + "/"))], check)
    finally:
        bench.done(p)
        bench.done(ref)
    return _page_goals(bench, b, "virtual-page", cases)
