"""larder as a pull-through cache of an OCI registry (docs/oci.md).

The upstream is Debian's docker-registry (distribution 2.8) started by
ociup.py, once per module, with the images of ociup.standard_images()
pushed to it by skopeo (built once per session, no docker involved). Each
test puts its own ociup.Relay in front of it, which counts what larder asks
upstream and injects faults, and its own larder (`larder serve`, a
[registry "test"] section with the relay as upstream, default = yes) and
nginx in front of larder (the `oci` fixture; `oci_stack(cache_ttl=...,
larder_extra={...}, ...)` for other options). The cross-front-end test
uses frontends.py's servers instead of nginx. Clients are skopeo
(`docker://127.0.0.1:NGINX/test/NAME:TAG`, plain http) and raw HTTP.

Every pull through larder is compared byte for byte with a pull of the same
reference straight from the registry. After faults the store is checked:
no blob under DATA/blobs that does not hash to its name, no loose temp
file, and `larder fsck` clean.

test_upstream_itself checks the stand-in (registry, relay, token server,
images) with no larder in the way; it must pass wherever the tools are
installed, whatever state larder is in.
"""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import threading
import signal
import time
from urllib.parse import parse_qs, urlsplit

import pytest

import flighthelp as fh
import frontends
import ociup
import stack as stackmod
from ociup import ACCEPT_ALL, DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from stack import http, raw_request

BIG_MB = 30
# What a client that reads every kind of manifest sends (skopeo sends each
# type on an Accept line of its own; one line is the same to larder).
ACCEPT = {"Accept": ACCEPT_ALL}
# Cache states larder may answer with (X-Larder-Cache).
CACHE_STATES = ("HIT", "MISS", "STALE", "REVALIDATED")
# The OCI distribution spec's error codes.
OCI_CODES = {"BLOB_UNKNOWN", "BLOB_UPLOAD_INVALID", "BLOB_UPLOAD_UNKNOWN", "DIGEST_INVALID",
             "MANIFEST_BLOB_UNKNOWN", "MANIFEST_INVALID", "MANIFEST_UNKNOWN", "NAME_INVALID",
             "NAME_UNKNOWN", "SIZE_INVALID", "UNAUTHORIZED", "DENIED", "UNSUPPORTED",
             "TOOMANYREQUESTS", "PAGINATION_NUMBER_INVALID", "TAG_INVALID", "UNKNOWN",
             "UNAVAILABLE"}

# The repositories pulled in test_pull_through_nginx: (repo, --all).
PULLS = [("small", False), ("app1", False), ("app2", False), ("multi", True),
         ("v2s2", False)]


def _missing():
    return ociup.missing_reason() or stackmod.missing_reason()


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def oci_images(tmp_path_factory):
    """The images of ociup.standard_images(), built once per session."""
    why = ociup.missing_reason()
    if why:
        pytest.skip(why)
    return ociup.standard_images(str(tmp_path_factory.mktemp("oci-images")), big_mb=BIG_MB)


class Upstream:
    """The module's registry: reg (ociup.Registry), pushed {repo: Pushed},
    client (ociup.RegistryClient), and direct(repo, all) the layout of a
    pull of repo:1.0 straight from it (made once)."""

    def __init__(self, reg, pushed, workdir):
        self.reg = reg
        self.pushed = pushed
        self.client = reg.client()
        self.dir = workdir
        self._direct = {}
        self._lock = threading.Lock()

    @property
    def port(self):
        return self.reg.port

    def direct(self, repo, all=False, tag="1.0", fresh=False):
        key = (repo, all, tag)
        with self._lock:
            if key not in self._direct or fresh:
                d = os.path.join(self.dir, "direct-%s-%s-%s-%d" % (
                    repo, tag, "all" if all else "one", len(self._direct)))
                r = ociup.pull(self.reg.ref(repo, tag), d, all=all, creds=self.reg.creds)
                assert r.ok, "pull straight from the registry failed: %s" % r
                self._direct[key] = d
            return self._direct[key]

    def blobs(self, repo):
        """{digest: size} of repo:1.0's blobs (an index's children's too)."""
        return self.pushed[repo].blobs


@pytest.fixture(scope="module")
def upstream(tmp_path_factory, oci_images):
    d = str(tmp_path_factory.mktemp("oci-registry"))
    reg = ociup.Registry(os.path.join(d, "registry")).start()
    try:
        pushed = ociup.populate(reg, oci_images)
        yield Upstream(reg, pushed, d)
    finally:
        reg.stop()


@pytest.fixture(scope="module")
def token_upstream(tmp_path_factory, oci_images):
    """A registry with auth: token, its TokenServer (reg.token) allowing
    anonymous pulls and alice:secret; small and app1 pushed as alice."""
    d = str(tmp_path_factory.mktemp("oci-token-registry"))
    reg = ociup.Registry(os.path.join(d, "registry"), auth="token").start()
    try:
        pushed = ociup.populate(reg, oci_images, repos=["small", "app1", "app2"])
        yield Upstream(reg, pushed, d)
    finally:
        reg.stop()


@pytest.fixture
def oci_stack(request, tmp_path, upstream):
    """make(**options) starts a fresh OciStack (relay + larder + nginx) in
    front of the module's registry (or of the registry on port=), each in
    its own directory; options are OciStack's (cache_ttl, max_stale,
    workers, larder_extra, registry_keys). All are stopped after the
    test."""
    why = _missing()
    if why:
        pytest.skip(why)
    made = []
    request.node._oci_stacks = made

    def make(port=None, **opts):
        st = ociup.OciStack(str(tmp_path / ("oci%d" % len(made))), port or upstream.port,
                            **opts)
        made.append(st)
        st.start()
        return st

    try:
        yield make
    finally:
        for st in made:
            st.stop()


@pytest.fixture
def oci(oci_stack):
    """An OciStack with the default options."""
    return oci_stack()


class _LogsOnFailure:
    """Attaches larder's log, nginx's error log and the relay's requests
    to a failed test's report."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if rep.when != "call" or not rep.failed:
            return
        args = getattr(item, "funcargs", {})
        for i, st in enumerate(getattr(item, "_oci_stacks", [])):
            key = "stack %d" % i
            if st.larder is not None:
                rep.sections.append(("%s: larder log" % key,
                                     "\n".join(st.larder.log_lines()[-150:])))
            if st.nginx is not None:
                errs = [l for l in st.nginx.error_text().splitlines()
                        if "[notice]" not in l and "[info]" not in l]
                rep.sections.append(("%s: nginx error log" % key, "\n".join(errs[-40:])))
            rep.sections.append(("%s: relay requests" % key, "\n".join(
                "%s %s %s %s" % l for l in st.relay.log()[-80:])))
        fe = args.get("oci_fe")
        if isinstance(fe, FeEnv) and fe.fe is not None:
            rep.sections.append(("%s logs" % fe.kind, fe.fe.log_text()[-8000:]))


@pytest.fixture(scope="module", autouse=True)
def _attach_logs(request):
    pm = request.config.pluginmanager
    if not pm.has_plugin("larder-oci-logs"):
        pm.register(_LogsOnFailure(), "larder-oci-logs")
    yield


# ---------------------------------------------------------------- helpers

def pull_ok(st, upstream, repo, dest, all=False, tag="1.0", **kw):
    """Pulls repo:tag through larder into dest and compares it with the
    pull straight from the registry."""
    r = ociup.pull(st.ref(repo, tag), dest, all=all, **kw)
    assert r.ok, "pull of %s through larder: %s" % (repo, r)
    diffs = ociup.compare_layouts(dest, upstream.direct(repo, all, tag))
    assert not diffs, "%s through larder differs from the registry's: %s" % (repo, diffs)
    return r


def blob_gets(relay):
    """{digest: GETs} the relay saw for blobs, summed over repositories."""
    out = {}
    for (m, p), n in relay.counts().items():
        mm = re.match(r"^/v2/.+/blobs/(sha256:[0-9a-f]{64})$", p)
        if m == "GET" and mm:
            out[mm.group(1)] = out.get(mm.group(1), 0) + n
    return out


def manifest_requests(relay, repo, method=None):
    return relay.count(method, r"^/v2/%s/manifests/" % re.escape(repo))


def oci_error(r, status=None, codes=None):
    """Asserts r is a 4xx/5xx (status if given) with the spec's JSON error
    body (a code among codes if given); returns the first code."""
    assert r.status and r.status >= 400, r
    if status is not None:
        assert r.status == status, (r, r.body[:300])
    try:
        doc = json.loads(r.body)
    except ValueError:
        raise AssertionError("error body is not JSON: %r %r" % (r, r.body[:300]))
    errs = doc.get("errors")
    assert isinstance(errs, list) and errs, doc
    code = errs[0].get("code")
    assert code in OCI_CODES, doc
    if codes is not None:
        assert code in codes, doc
    return code


def store_sound(data_dir):
    """No blob that does not hash to its name, no loose temp file, no
    flight left, once the fetches settle."""
    rows, parts = fh.wait_settled(data_dir, timeout=15)
    assert not rows and not parts, "after 15 s: flights %s, temp files %s" % (rows, parts)
    bad = stackmod.bad_blobs(data_dir)
    assert not bad, "blobs that are not what they are named: %s" % bad


def larder_fsck(larder):
    p = subprocess.run([larder.binary, "fsck", "-c", larder.conf], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120, env=stackmod.clean_env())
    return p.returncode, p.stdout.decode(errors="replace")


def fsck_clean(st):
    rc, out = larder_fsck(st.larder)
    assert rc == 0, "larder fsck: rc %d\n%s" % (rc, out)


def parallel(fn, args, workers=None):
    """fn(*a) for each a of args in threads released at once; the results
    in order (exceptions re-raised)."""
    args = list(args)
    go = threading.Barrier(len(args))

    def run(a):
        go.wait(30)
        return fn(*a)

    with concurrent.futures.ThreadPoolExecutor(workers or len(args)) as ex:
        return [f.result() for f in [ex.submit(run, a) for a in args]]


def never_wrong(r, digest):
    """A blob answer is either the right bytes, whole, or visibly not a
    success (an error status, or a body cut short)."""
    if r.status in (200, 206) and r.complete:
        assert ociup.digest_of(r.body) == digest, "larder served wrong bytes for %s" % digest


def link_next(link):
    """The target of a Link: <...>; rel="next" header, or None."""
    if not link:
        return None
    m = re.match(r'\s*<([^>]*)>\s*;\s*rel="?next"?', link)
    assert m, "not a next Link: %r" % link
    return m.group(1)


# ================================================================ 0. the stand-in

def test_upstream_itself(upstream, token_upstream, oci_images, tmp_path):
    """The stand-in without larder: skopeo pulls straight from the registry
    and through a relay are identical, the relay counts one GET per blob and
    injects each fault, a down relay refuses, the token registry gives
    anonymous pulls and alice's, and refuses anonymous ones when told to."""
    p = upstream.pushed
    assert p["small"].manifest == oci_images["small"].manifest
    assert p["multi"].media_type == OCI_INDEX and len(p["multi"].children) == 2
    assert {c.platform["architecture"] for c in p["multi"].children} == {"amd64", "arm64"}
    assert p["v2s2"].media_type == DOCKER_MANIFEST
    base = oci_images["base"].layers[0].digest
    assert base in p["app1"].blobs and base in p["app2"].blobs and base in p["big"].blobs
    tags, link = upstream.client.tags("many")
    assert sorted(tags) == ociup.MANY_TAGS and link is None
    relay = ociup.Relay(upstream.port).start()
    try:
        d = str(tmp_path / "via-relay")
        r = ociup.pull(relay.ref("small", "1.0"), d)
        assert r.ok, r
        assert not ociup.compare_layouts(d, upstream.direct("small"))
        assert blob_gets(relay) == {dg: 1 for dg in p["small"].blobs}
        layer = oci_images["app1"].layers[-1].digest
        for fault in ("truncate", "corrupt", "reset", "status"):
            relay.set_faults([{"fault": fault, "path": layer, "code": 503}])
            r = ociup.pull(relay.ref("app1", "1.0"), str(tmp_path / fault))
            assert not r.ok and relay.fired().get(fault), (fault, r)
        relay.set_faults([{"fault": "stall", "path": layer, "seconds": 0.5}])
        assert ociup.pull(relay.ref("app1", "1.0"), str(tmp_path / "stall")).ok
        relay.clear()
        relay.down()
        assert not ociup.pull(relay.ref("app1", "1.0"), str(tmp_path / "down")).ok
        relay.up()
        assert ociup.pull(relay.ref("app1", "1.0"), str(tmp_path / "up")).ok
    finally:
        relay.stop()
    treg = token_upstream.reg
    r = http(treg.base + "/v2/small/manifests/1.0", headers=ACCEPT)
    assert r.status == 401 and "Bearer" in r.header("WWW-Authenticate"), r
    treg.token.reset()
    d = str(tmp_path / "token-anon")
    r = ociup.pull(treg.ref("small", "1.0"), d)
    assert r.ok, r
    assert not ociup.compare_layouts(d, upstream.direct("small"))
    assert treg.token.counts() == {"repository:small:pull": 1}, treg.token.counts()
    treg.token.allow_anonymous = False
    try:
        assert not ociup.pull(treg.ref("small", "1.0"), str(tmp_path / "t2")).ok
        assert ociup.pull(treg.ref("small", "1.0"), str(tmp_path / "t3"),
                          creds=treg.creds).ok
    finally:
        treg.token.allow_anonymous = True


# ================================================================ 1. /v2/ and pushes

def test_base_and_pushes_refused(oci, upstream):
    """/v2/ answers 200 {} with the API version header; every kind of push
    is a 405 UNSUPPORTED with the JSON error body, and none reaches the
    upstream."""
    for method in ("GET", "HEAD"):
        r = oci.get("/v2/", method=method)
        assert r.status == 200, r
        assert r.header("Docker-Distribution-API-Version") == "registry/2.0", r.headers
        if method == "GET":
            assert r.json() == {}, r.body
        else:
            assert r.body == b""
    p = upstream.pushed["small"]
    cfg = next(iter(p.blobs))
    pushes = [
        ("PUT", oci.path("small", "manifests", "1.0"), p.manifest, OCI_MANIFEST),
        ("PUT", oci.path("small", "manifests", p.digest), p.manifest, OCI_MANIFEST),
        ("POST", oci.path("small", "blobs", "uploads", ""), b"", None),
        ("POST", oci.path("small", "blobs", "uploads", "") + "?mount=%s&from=app1" % cfg,
         b"", None),
        ("PATCH", oci.path("small", "blobs", "uploads", "0123-abcd"), b"x" * 100, None),
        ("PUT", oci.path("small", "blobs", "uploads", "0123-abcd") + "?digest=" + cfg,
         b"x", None),
        ("DELETE", oci.path("small", "manifests", p.digest), b"", None),
        ("DELETE", oci.path("small", "blobs", cfg), b"", None),
        ("POST", "/v2/", b"{}", "application/json"),
    ]
    oci.relay.reset()
    for method, path, body, ctype in pushes:
        h = {"Content-Type": ctype} if ctype else {}
        r = raw_request(oci.nginx.port, path, method=method, headers=h, body=body)
        oci_error(r, 405, {"UNSUPPORTED"})
    assert oci.relay.counts() == {}, "pushes reached the upstream: %s" % oci.relay.counts()


# ================================================================ 2. pulls behind nginx

def test_pull_through_nginx(oci, upstream, tmp_path):
    """skopeo pulls of small, app1, app2 (sharing a base layer), multi
    (--all: the index and both children) and a docker schema 2 image are
    byte for byte the registry's; the upstream saw each blob GET once over
    the whole test (the base layer once for both apps); a second round
    costs the upstream nothing; inspect and list-tags work through larder,
    and so do bare names (default = yes)."""
    for repo, all_ in PULLS:
        pull_ok(oci, upstream, repo, str(tmp_path / ("1-" + repo)), all=all_)
    gets = blob_gets(oci.relay)
    want = set()
    for repo, _ in PULLS:
        want |= set(upstream.blobs(repo))
    want -= {c.digest for c in upstream.pushed["multi"].children}   # manifests
    assert set(gets) == want, "blobs fetched upstream: %s, wanted %s" % (gets, want)
    assert all(n == 1 for n in gets.values()), "a blob fetched twice: %s" % gets
    base = upstream.pushed["app1"].image.layers[0].digest
    assert gets[base] == 1

    oci.relay.reset()
    for repo, all_ in PULLS:
        pull_ok(oci, upstream, repo, str(tmp_path / ("2-" + repo)), all=all_)
    assert oci.relay.counts() == {}, ("a warm pull of fresh tags went upstream: %s"
                                      % oci.relay.counts())

    for repo in ("small", "v2s2", "multi"):
        r = ociup.inspect_raw(oci.ref(repo, "1.0"))
        assert r.ok, r
        assert r.out.rstrip("\n").encode() == upstream.pushed[repo].manifest, repo
    r = ociup.skopeo("inspect", "docker://" + oci.ref("small", "1.0"))
    assert r.ok, r
    doc = json.loads(r.out)
    assert doc["Digest"] == upstream.pushed["small"].digest
    assert doc["Layers"] == [l.digest for l in upstream.pushed["small"].image.layers]
    for repo in ("small", "multi"):
        r, tags = ociup.list_tags(oci.ref(repo).rsplit(":", 1)[0])
        assert r.ok, r
        assert sorted(tags) == sorted(upstream.client.tags(repo)[0]), (repo, tags)
    r = ociup.inspect_raw(oci.ref("small", "1.0", prefix=False))
    assert r.ok, "a bare name through the default registry: %s" % r
    assert r.out.rstrip("\n").encode() == upstream.pushed["small"].manifest


def test_manifest_answers(oci, upstream):
    """A manifest answer carries the upstream's Content-Type, the digest,
    the length and an ETag, by tag and by digest; HEAD the same headers
    and no body; X-Larder-Cache says MISS, then HIT."""
    for repo in ("small", "v2s2", "multi"):
        p = upstream.pushed[repo]
        for ref in ("1.0", p.digest):
            path = oci.path(repo, "manifests", ref)
            r = oci.get(path, headers=ACCEPT)
            assert r.status == 200, (repo, ref, r, r.body[:300])
            assert r.body == p.manifest
            assert r.header("Content-Type").split(";")[0] == p.media_type
            assert r.header("Docker-Content-Digest") == p.digest
            assert int(r.header("Content-Length")) == len(p.manifest)
            assert r.header("ETag"), r.headers
            assert r.header("X-Larder-Cache") in CACHE_STATES, r.headers
            h = oci.get(path, headers=ACCEPT, method="HEAD")
            assert h.status == 200 and h.body == b"", h
            for k in ("Content-Type", "Docker-Content-Digest", "Content-Length"):
                assert h.header(k) == r.header(k), (k, h.headers, r.headers)
            again = oci.get(path, headers=ACCEPT)
            assert again.status == 200 and again.body == p.manifest
            assert again.header("X-Larder-Cache") == "HIT", again.headers
    p = upstream.pushed["small"]
    cfg = p.image.config_digest
    r = oci.get(oci.path("small", "blobs", cfg))
    assert r.status == 200 and r.body == p.image.config, r
    h = oci.get(oci.path("small", "blobs", cfg), method="HEAD")
    assert h.status == 200 and int(h.header("Content-Length")) == len(p.image.config), h


def test_blob_head_kept_by_nginx(oci, upstream):
    """A warm blob's HEAD is the same for every client allowed to read it:
    nginx keeps it (conf/nginx.conf), so the HEADs after the first cost
    larder nothing (nginx would otherwise close the FastCGI connection
    after each), and under a key of its own: a GET after it still has
    the body."""
    p = upstream.pushed["small"]
    cfg = p.image.config_digest
    path = oci.path("small", "blobs", cfg)
    r = oci.get(path)  # the miss: fetched and stored
    assert r.status == 200 and r.body == p.image.config, r
    for _ in range(3):
        h = oci.get(path, method="HEAD")
        assert h.status == 200 and h.body == b"", h
        assert int(h.header("Content-Length")) == len(p.image.config), h.headers
        assert h.header("Docker-Content-Digest") == cfg, h.headers
    for _ in range(2):
        r = oci.get(path)
        assert r.status == 200 and r.body == p.image.config, r
    time.sleep(0.3)  # (each log line is written after its answer)
    heads = [l for l in oci.larder.log_lines() if " HEAD " + path + " " in l]
    assert len(heads) == 1, heads


def test_tag_kept_by_nginx(oci, upstream):
    """A warm manifest by tag that is the same for every client (a plain
    manifest, of a cache registry) is kept by nginx while larder's tag is
    fresh (conf/nginx.conf): the GETs and HEADs after the first of each
    cost larder nothing, and a HEAD's kept answer never answers a GET. A
    tag that names an index is not kept: a client that cannot take one
    gets a child, whatever the client before it got."""
    p = upstream.pushed["small"]
    path = oci.path("small", "manifests", "1.0")

    def seen(method, path):
        return len([l for l in oci.larder.log_lines() if " %s %s " % (method, path) in l])

    before = {m: seen(m, path) for m in ("GET", "HEAD")}
    for _ in range(3):
        h = oci.get(path, headers=ACCEPT, method="HEAD")
        assert h.status == 200 and h.body == b"", h
        assert h.header("Docker-Content-Digest") == p.digest, h.headers
        r = oci.get(path, headers=ACCEPT)
        assert r.status == 200 and r.body == p.manifest, r
        assert r.header("Docker-Content-Digest") == p.digest, r.headers
    time.sleep(0.3)  # (each log line is written after its answer)
    for method in ("GET", "HEAD"):
        # (none when an earlier test's request is still kept)
        assert seen(method, path) - before[method] <= 1, (method, oci.larder.log_text()[-2000:])
    multi = upstream.pushed["multi"]
    amd64 = next(c for c in multi.children if c.platform["architecture"] == "amd64")
    path = oci.path("multi", "manifests", "1.0")
    before = seen("GET", path)
    for accept, want in ((ACCEPT_ALL, multi), (DOCKER_MANIFEST, amd64), (ACCEPT_ALL, multi)):
        r = oci.get(path, accept=accept)
        assert r.status == 200 and r.body == want.manifest, (accept, r)
    time.sleep(0.3)
    assert seen("GET", path) - before == 3, oci.larder.log_text()[-2000:]


def test_repo_named_like_a_pypi_route(oci, upstream):
    """A repository whose name holds "/simple/" or "/files/" is a registry's
    all the same: nginx's pages location, which keys no method, must not
    take its blobs (a warm blob's HEAD, its empty answer kept for the GETs
    after it; a cold one's GET kept for the year its Cache-Control says)
    nor its manifests by tag (an index's answer kept under the first
    Accept line alone, and handed to a client that cannot take one)."""
    config = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'
    # (the blob made warm under a plain name: larder keeps it by digest)
    cfg = upstream.client.put_blob("plain", config)
    r = oci.get(oci.path("plain", "blobs", cfg))
    assert r.status == 200 and r.body == config, r
    for repo in ("x/simple", "simple/files"):
        assert upstream.client.put_blob(repo, config) == cfg
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": cfg, "size": len(config)},
            "layers": []}).encode()
        child = upstream.client.put_manifest(repo, "amd64", manifest, OCI_MANIFEST)
        index = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_INDEX,
            "manifests": [{"mediaType": OCI_MANIFEST, "digest": child,
                           "size": len(manifest),
                           "platform": {"architecture": "amd64", "os": "linux"}}]}).encode()
        upstream.client.put_manifest(repo, "latest", index, OCI_INDEX)
        path = oci.path(repo, "blobs", cfg)
        h = oci.get(path, method="HEAD")
        assert h.status == 200 and h.body == b"", h
        for _ in range(2):
            r = oci.get(path)
            assert r.status == 200 and r.body == config, (repo, r, r.headers)
        # the same first Accept line, and a second that takes the index
        tag = oci.path(repo, "manifests", "latest")
        for lines, want in (((OCI_MANIFEST, OCI_INDEX), index), ((OCI_MANIFEST,), manifest),
                            ((OCI_MANIFEST, OCI_INDEX), index)):
            headers = {"Accept": lines[0]}
            if len(lines) > 1:
                headers["accept"] = lines[1]
            r = raw_request(oci.nginx.port, tag, headers=headers)
            assert r.status == 200 and r.body == want, (repo, lines, r)
        time.sleep(0.3)  # (each log line is written after its answer)
        gets = [l for l in oci.larder.log_lines() if " GET " + tag + " " in l]
        assert len(gets) == 3, (repo, gets)


def test_index_for_old_clients(oci, upstream):
    """A client that does not accept an index, asking a tag that is one,
    gets the linux/amd64 child; one that does gets the index, whether its
    Accept is one line or several."""
    p = upstream.pushed["multi"]
    amd64 = next(c for c in p.children if c.platform["architecture"] == "amd64")
    path = oci.path("multi", "manifests", "1.0")
    for accept in (DOCKER_MANIFEST, OCI_MANIFEST, "%s, %s" % (DOCKER_MANIFEST, OCI_MANIFEST)):
        r = oci.get(path, accept=accept)
        assert r.status == 200, (accept, r, r.body[:300])
        assert r.header("Docker-Content-Digest") == amd64.digest, (accept, r.headers)
        assert r.body == amd64.manifest, accept
    for accept in (OCI_INDEX, ACCEPT_ALL, "%s, %s" % (DOCKER_LIST, OCI_INDEX)):
        r = oci.get(path, accept=accept)
        assert r.status == 200 and r.body == p.manifest, (accept, r)
        assert r.header("Docker-Content-Digest") == p.digest
    # skopeo sends each type on an Accept line of its own: every line counts
    # (the two spellings of the name make two lines)
    for lines in ((OCI_INDEX, OCI_MANIFEST), (OCI_MANIFEST, OCI_INDEX)):
        r = raw_request(oci.nginx.port, path, headers={"Accept": lines[0], "accept": lines[1]})
        assert r.status == 200, (lines, r)
        assert r.header("Docker-Content-Digest") == p.digest, (
            "Accept lines %s: an index client got %s" % (lines, r.header("Docker-Content-Digest")))


# ================================================================ 3. other front ends

FE_KINDS = ("lighttpd-fcgi", "apache-fcgid", "apache-proxy-fcgi", "lighttpd-cgi",
            "apache-cgi")


class FeEnv:
    """A relay in front of the module's registry and a frontends.py server
    with larder behind it, its larder.conf carrying the [registry "test"]
    section."""

    def __init__(self, kind, workdir, upstream_port):
        self.kind = kind
        self.workdir = workdir
        self.relay = ociup.Relay(upstream_port)
        self.fe = None

    def start(self):
        self.relay.start()
        fe = frontends.make_frontend(self.kind, os.path.join(self.workdir, "fe"),
                                     self.relay.port, larder_extra=dict(ociup.OCI_LARDER_KEYS))
        section = "\n" + ociup.registry_section("test", self.relay.base + "/")
        plain = fe.write_larder_conf

        def write_larder_conf(path=None):
            plain(path)
            with open(path or fe.larder_conf, "a") as f:
                f.write(section)

        fe.write_larder_conf = write_larder_conf
        self.fe = fe
        fe.start()
        return self

    def stop(self):
        if self.fe is not None:
            self.fe.stop()
        self.relay.stop()

    @property
    def host(self):
        return "127.0.0.1:%d" % self.fe.port

    def ref(self, repo, tag="1.0"):
        return "%s/test/%s:%s" % (self.host, repo, tag)


@pytest.fixture
def oci_fe(request, upstream, tmp_path):
    kind = request.param
    why = _missing() or frontends.missing_reason(kind)
    if why:
        pytest.skip("%s: %s" % (kind, why))
    workdir = frontends.new_workdir("larder-oci-fe-")
    env = FeEnv(kind, workdir, upstream.port)
    try:
        env.start()
        yield env
    finally:
        try:
            env.stop()
        finally:
            for n in ("larder.conf",):
                p = os.path.join(workdir, "fe", n)
                if os.path.exists(p):
                    shutil.copy(p, str(tmp_path / n))
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("oci_fe", FE_KINDS, indirect=True)
def test_pull_through_frontend(oci_fe, upstream, tmp_path):
    """The pulls of test_pull_through_nginx (small, and multi with --all)
    behind lighttpd, Apache (mod_fcgid, mod_proxy_fcgi) and CGI: the same
    bytes as the registry's, each blob fetched upstream once, nothing
    fetched the second time."""
    env = oci_fe
    for repo, all_ in (("small", False), ("multi", True)):
        d = str(tmp_path / ("1-" + repo))
        r = ociup.pull(env.ref(repo), d, all=all_)
        assert r.ok, "%s through %s: %s" % (repo, env.kind, r)
        assert not ociup.compare_layouts(d, upstream.direct(repo, all_))
    gets = blob_gets(env.relay)
    assert gets and all(n == 1 for n in gets.values()), gets
    env.relay.reset()
    for repo, all_ in (("small", False), ("multi", True)):
        d = str(tmp_path / ("2-" + repo))
        r = ociup.pull(env.ref(repo), d, all=all_)
        assert r.ok, r
        assert not ociup.compare_layouts(d, upstream.direct(repo, all_))
    assert blob_gets(env.relay) == {}, env.relay.counts()
    r = http("http://%s/v2/" % env.host)
    assert r.status == 200 and r.header("Docker-Distribution-API-Version") == "registry/2.0"


# ================================================================ 4. ten cold pulls at once

def test_parallel_cold_pulls(oci, upstream, tmp_path):
    """Ten skopeo pulls of "big" (a 1 MB base and a 30 MB layer) at once,
    all cold: all succeed with the registry's bytes, and the upstream saw
    one GET per blob and one manifest GET."""
    dirs = [str(tmp_path / ("p%02d" % i)) for i in range(10)]
    results = parallel(lambda d: ociup.pull(oci.ref("big", "1.0"), d, timeout=240),
                       [(d,) for d in dirs])
    for r in results:
        assert r.ok, r
    direct = upstream.direct("big")
    for d in dirs:
        assert not ociup.compare_layouts(d, direct), d
    gets = blob_gets(oci.relay)
    assert gets == {d: 1 for d in upstream.blobs("big")}, gets
    assert manifest_requests(oci.relay, "big", "GET") == 1, oci.relay.counts()
    store_sound(oci.data_dir)
    for d in dirs:
        shutil.rmtree(d)


# ================================================================ 5. tag freshness

TTL = 2


def wait_stale():
    time.sleep(TTL + 0.5)


def test_tag_freshness(oci_stack, upstream, oci_images, tmp_path):
    """cache_ttl = 2: a tag past it is revalidated with a HEAD (no GET, no
    blob, when the digest is the same; X-Larder-Cache REVALIDATED); after
    the tag moves upstream, the next pull past the ttl gets the new image;
    50 concurrent GETs of a stale tag, and of a stale tag list, cost the
    upstream one request each."""
    oci = oci_stack(cache_ttl=TTL)
    reg = upstream.reg
    ociup.push(oci_images["fresh1"].layout, "1.0", reg.ref("fresh", "1.0"))
    first = upstream.direct("fresh", fresh=True)
    d = str(tmp_path / "warm")
    r = ociup.pull(oci.ref("fresh", "1.0"), d)
    assert r.ok, r
    assert not ociup.compare_layouts(d, first)
    mpath = oci.path("fresh", "manifests", "1.0")

    wait_stale()
    oci.relay.reset()
    r = oci.get(mpath, headers=ACCEPT)
    assert r.status == 200 and r.body == oci_images["fresh1"].manifest, r
    assert r.header("X-Larder-Cache") == "REVALIDATED", r.headers
    assert manifest_requests(oci.relay, "fresh", "HEAD") == 1, oci.relay.counts()
    assert manifest_requests(oci.relay, "fresh", "GET") == 0, oci.relay.counts()

    wait_stale()
    oci.relay.reset()
    d = str(tmp_path / "revalidated")
    r = ociup.pull(oci.ref("fresh", "1.0"), d)
    assert r.ok, r
    assert not ociup.compare_layouts(d, first)
    assert manifest_requests(oci.relay, "fresh", "HEAD") >= 1, oci.relay.counts()
    assert manifest_requests(oci.relay, "fresh", "GET") == 0, oci.relay.counts()
    assert blob_gets(oci.relay) == {}, oci.relay.counts()

    # the tag moves upstream
    ociup.push(oci_images["fresh2"].layout, "1.0", reg.ref("fresh", "1.0"))
    second = upstream.direct("fresh", fresh=True)
    wait_stale()
    oci.relay.reset()
    d = str(tmp_path / "moved")
    r = ociup.pull(oci.ref("fresh", "1.0"), d)
    assert r.ok, r
    diffs = ociup.compare_layouts(d, second)
    assert not diffs, "the moved tag: %s" % diffs
    assert manifest_requests(oci.relay, "fresh", "GET") == 1, oci.relay.counts()

    # a stampede on a stale tag
    wait_stale()
    oci.relay.reset()
    rs = parallel(lambda: oci.get(mpath, headers=ACCEPT), [()] * 50)
    assert all(r.status == 200 and r.body == oci_images["fresh2"].manifest for r in rs), \
        [r for r in rs if r.status != 200][:3]
    assert manifest_requests(oci.relay, "fresh") == 1, oci.relay.counts()

    # and on a stale tag list
    tpath = oci.path("fresh", "tags", "list")
    r = oci.get(tpath)
    assert r.status == 200 and r.json()["tags"] == ["1.0"], (r, r.body)
    wait_stale()
    oci.relay.reset()
    rs = parallel(lambda: oci.get(tpath), [()] * 50)
    assert all(r.status == 200 and r.json()["tags"] == ["1.0"] for r in rs), \
        [r for r in rs if r.status != 200][:3]
    assert oci.relay.count(None, r"^/v2/fresh/tags/list$") == 1, oci.relay.counts()


# ================================================================ 6. upstream down

def test_upstream_down_serves_stale(oci_stack, upstream, tmp_path):
    """With the upstream refusing connections, a tag within max_stale still
    pulls (X-Larder-Cache STALE), its tag list too; an image never seen
    fails cleanly with the JSON error, and larder keeps answering. With the
    upstream answering 429 (Retry-After), 401 (a Bearer challenge whose
    token service fails), 500 or 503 on manifests, the stale tag is served
    too. Once the upstream is back the image never seen pulls."""
    oci = oci_stack(cache_ttl=1, max_stale="7d")
    pull_ok(oci, upstream, "small", str(tmp_path / "warm"))
    mpath = oci.path("small", "manifests", "1.0")
    tpath = oci.path("small", "tags", "list")
    r = oci.get(tpath)
    assert r.status == 200, r
    tags = r.json()["tags"]
    time.sleep(1.5)

    oci.relay.down()
    pull_ok(oci, upstream, "small", str(tmp_path / "down"))
    r = oci.get(mpath, headers=ACCEPT)
    assert r.status == 200 and r.body == upstream.pushed["small"].manifest, r
    assert r.header("X-Larder-Cache") == "STALE", r.headers
    r = oci.get(tpath)
    assert r.status == 200 and r.json()["tags"] == tags, r
    assert r.header("X-Larder-Cache") == "STALE", r.headers
    t0 = time.monotonic()
    r = ociup.pull(oci.ref("app1", "1.0"), str(tmp_path / "uncached"))
    assert not r.ok, "an image never seen pulled with the upstream down"
    assert time.monotonic() - t0 < 60
    r = oci.get(oci.path("app1", "manifests", "1.0"), headers=ACCEPT)
    oci_error(r)
    r = oci.get(oci.path("app1", "blobs", upstream.pushed["app1"].image.config_digest))
    oci_error(r)
    r = oci.get("/v2/")
    assert r.status == 200, r
    assert oci.larder.running
    oci.relay.up()
    pull_ok(oci, upstream, "app1", str(tmp_path / "back"))

    # the 401 last: its challenge names a token service (which fails)
    challenge = 'Bearer realm="%s/token",service="larder-test",scope="repository:small:pull"' \
        % oci.relay.base
    for code, headers in ((429, {"Retry-After": "30"}), (500, {}), (503, {"Retry-After": "1"}),
                          (401, {"WWW-Authenticate": challenge})):
        oci.relay.set_faults([{"fault": "status", "path": r"^/v2/small/manifests/",
                               "code": code, "headers": headers},
                              {"fault": "status", "path": r"^/token", "code": 503}])
        oci.relay.reset()
        r = oci.get(mpath, headers=ACCEPT)
        assert r.status == 200 and r.body == upstream.pushed["small"].manifest, (code, r)
        assert r.header("X-Larder-Cache") == "STALE", (code, r.headers)
        assert oci.relay.fired().get("status"), "larder did not ask upstream (%d)" % code
        pull_ok(oci, upstream, "small", str(tmp_path / ("status%d" % code)))

    oci.relay.clear()
    pull_ok(oci, upstream, "small", str(tmp_path / "cleared"))
    store_sound(oci.data_dir)


def test_offline_registry(oci_stack, upstream, tmp_path):
    """offline = yes: an image pulled before pulls again with nothing asked
    of the upstream, whatever the age of its tag; one never pulled is a
    503 UNAVAILABLE that says the registry is offline."""
    oci = oci_stack(cache_ttl=1)
    pull_ok(oci, upstream, "small", str(tmp_path / "warm"))
    with open(oci.larder.conf) as f:
        text = f.read()
    with open(oci.larder.conf, "w") as f:
        f.write(text.replace("[larder]\n", "[larder]\noffline = yes\n", 1))
    oci.larder.proc.send_signal(signal.SIGHUP)
    time.sleep(1.5)  # the new workers took over, and every tag is stale
    oci.relay.reset()
    r = oci.get(oci.path("small", "manifests", "1.0"), headers=ACCEPT)
    assert r.status == 200 and r.body == upstream.pushed["small"].manifest, r
    assert r.header("X-Larder-Cache") == "STALE", r.headers
    r = ociup.pull(oci.ref("small", "1.0"), str(tmp_path / "offline"))
    assert r.ok, r
    for path in (oci.path("app1", "manifests", "1.0"),
                 oci.path("app1", "blobs", upstream.pushed["app1"].image.config_digest)):
        r = oci.get(path, headers=ACCEPT)
        assert r.status == 503 and b"is offline (offline = yes)" in r.body, r
        oci_error(r, 503, ["UNAVAILABLE"])
    assert oci.relay.count() == 0, oci.relay.counts()


# ================================================================ 7. faults on blobs

def test_blob_faults(oci_stack, upstream, tmp_path):
    """A blob the upstream truncates, corrupts or resets every time: the
    pull fails, larder never serves or stores wrong bytes; with the fault
    gone the next pull succeeds. A stall shorter than fetch_timeout (3 s)
    is waited out; a longer one fails the pull, and the next succeeds.
    After each, the store is sound and `larder fsck` clean."""
    oci = oci_stack(larder_extra={"fetch_timeout": 3, "fetch_retries": 0})
    for fault, repo in (("truncate", "ftruncate"), ("corrupt", "fcorrupt"),
                        ("reset", "freset")):
        layer = upstream.pushed[repo].image.layers[0].digest
        oci.relay.set_faults([{"fault": fault, "path": "/blobs/" + layer}])
        r = ociup.pull(oci.ref(repo, "1.0"), str(tmp_path / (fault + "-1")))
        assert not r.ok, "%s: the pull succeeded on a broken upstream" % fault
        assert oci.relay.fired().get(fault), oci.relay.fired()
        never_wrong(oci.get(oci.path(repo, "blobs", layer)), layer)
        store_sound(oci.data_dir)
        assert not os.path.exists(fh.blob_file(oci.data_dir, layer[7:])), \
            "%s: the bad blob was stored" % fault
        fsck_clean(oci)
        oci.relay.clear()
        pull_ok(oci, upstream, repo, str(tmp_path / (fault + "-2")))
        store_sound(oci.data_dir)
        fsck_clean(oci)

    layer = upstream.pushed["fstall"].image.layers[0].digest
    oci.relay.set_faults([{"fault": "stall", "path": "/blobs/" + layer, "seconds": 1}])
    pull_ok(oci, upstream, "fstall", str(tmp_path / "stall-short"))
    assert oci.relay.fired().get("stall")
    store_sound(oci.data_dir)

    layer = upstream.pushed["fstall2"].image.layers[0].digest
    oci.relay.set_faults([{"fault": "stall", "path": "/blobs/" + layer, "seconds": 8}])
    t0 = time.monotonic()
    r = ociup.pull(oci.ref("fstall2", "1.0"), str(tmp_path / "stall-long-1"), timeout=60)
    took = time.monotonic() - t0
    assert not r.ok, "a stall past fetch_timeout: the pull succeeded after %.1f s" % took
    assert took < 30, "the stalled pull took %.1f s" % took
    oci.relay.clear()
    store_sound(oci.data_dir)
    fsck_clean(oci)
    pull_ok(oci, upstream, "fstall2", str(tmp_path / "stall-long-2"))
    store_sound(oci.data_dir)
    fsck_clean(oci)


# ================================================================ 8. SIGKILL mid-blob

def test_sigkill_mid_blob(oci_stack, upstream, tmp_path):
    """A 30 MB blob stalled upstream a third of the way in; the larder
    workers streaming it are SIGKILLed; the next pull succeeds with the
    registry's bytes and the store is consistent."""
    oci = oci_stack(workers=2)
    layer = upstream.pushed["big"].image.layers[-1].digest
    oci.relay.set_faults([{"fault": "stall", "path": "/blobs/" + layer, "seconds": 60,
                           "fraction": 0.3}])
    res = {}
    t = threading.Thread(target=lambda: res.setdefault(
        "r", ociup.pull(oci.ref("big", "1.0"), str(tmp_path / "killed"), timeout=90)),
        daemon=True)
    t.start()
    sup = oci.larder.proc.pid
    victims = fh.wait_for(lambda: oci.relay.fired().get("stall") and (
        set(fh.fetcher_pids(oci.data_dir)) | set(fh.tailing_workers(sup, oci.data_dir))),
        timeout=30)
    assert victims, "no larder process is fetching the stalled blob (fired %s)" % (
        oci.relay.fired(),)
    time.sleep(0.3)
    killed = [pid for pid in victims if fh.kill(pid)]
    assert killed, victims
    t.join(90)
    assert not t.is_alive(), "the client of the killed worker hangs"
    # (else the kill did not strike mid-blob, and the test proves nothing)
    assert not res["r"].ok, "the pull survived the SIGKILL of %s" % killed
    oci.relay.clear()
    fh.wait_for(lambda: oci.get("/v2/").status == 200, 10)
    pull_ok(oci, upstream, "big", str(tmp_path / "again"), timeout=120)
    store_sound(oci.data_dir)
    fsck_clean(oci)


# ================================================================ 9. hostile input

LONG = "a" * 300

# Refused by larder before anything is asked upstream: (path, status, codes)
BAD = [
    ("/v2/UPPER/manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/UPPER/manifests/1.0", 400, {"NAME_INVALID"}),
    ("/v2/test/a/../manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/../manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/%2e%2e/manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/a//b/manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/-a/manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/a_-b/manifests/x", 400, {"NAME_INVALID"}),
    ("/v2/test/%s/manifests/x" % "/".join([LONG[:60]] * 5), 400, {"NAME_INVALID"}),
    ("/v2/test/%s/blobs/sha256:%s" % (LONG, "0" * 64), 400, {"NAME_INVALID"}),
    ("/v2/test/small/blobs/sha256:zz", 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/blobs/sha256:" + "0" * 63, 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/blobs/sha256:" + "0" * 65, 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/blobs/sha256:" + "A" * 64, 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/blobs/md5:" + "0" * 32, 400, {"DIGEST_INVALID", "UNSUPPORTED"}),
    ("/v2/test/small/blobs/sha256", 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/blobs/1.0", 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/manifests/sha256:zz", None, None),
    ("/v2/test/small/manifests/md5:" + "0" * 32, None, None),
    ("/v2/test/small/manifests/-x", None, None),
    ("/v2/test/small/manifests/.x", None, None),
    ("/v2/test/small/manifests/" + "t" * 200, None, None),
    ("/v2/test/small/manifests/a%20b", None, None),
    ("/v2/test/small/referrers/sha256:zz", 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/referrers/1.0", 400, {"DIGEST_INVALID"}),
    ("/v2/test/small/tags/list?n=-1", 400, None),
    ("/v2/test/small/tags/list?n=abc", 400, None),
    ("/v2/test/small/tags/list?last=-bad", 400, None),
    ("/v2/test/small/x/y", 404, None),
    ("/v2/test", 404, None),
    ("/v2/test/small/manifests/", None, None),
]
# nginx answers these itself (400, HTML) before larder sees them.
NGINX_OWN = ["/v2/test/a%00b/manifests/x"]
# Well-formed, so they go upstream (and are answered 404 from there).
UNKNOWN = [
    ("/v2/test/nosuchrepo/manifests/1.0", 404, {"MANIFEST_UNKNOWN", "NAME_UNKNOWN"}),
    ("/v2/test/small/manifests/nosuchtag", 404, {"MANIFEST_UNKNOWN"}),
    ("/v2/test/small/manifests/sha256:" + "0" * 64, 404, {"MANIFEST_UNKNOWN"}),
    ("/v2/test/small/blobs/sha256:" + "0" * 64, 404, {"BLOB_UNKNOWN"}),
    ("/v2/test/small/tags/list?n=99999999999999999999", None, None),
]


def _error_problem(r, status=None, codes=None):
    """What is wrong with r as an OCI error answer, or None."""
    try:
        oci_error(r, status, codes)
    except AssertionError as e:
        return str(e)
    return None


def test_hostile_inputs(oci, upstream, tmp_path):
    """Bad names, digests and tags are 4xx with the JSON error body (HEAD:
    no body), never 5xx, ask nothing upstream and change nothing in the
    store; unknown ones are clean 404s; Range on a warm blob: bytes=0-9 is
    a 206 with the right bytes, past the end a 416, garbage a 200 or 416.
    Every case is tried; the failures are listed together."""
    pull_ok(oci, upstream, "small", str(tmp_path / "warm"))
    store_sound(oci.data_dir)
    before = stackmod.data_listing(oci.data_dir)
    port = oci.nginx.port
    problems = []

    def bad(what, *detail):
        problems.append("%s: %s" % (what, " ".join(str(d)[:300] for d in detail)))

    oci.relay.reset()
    for path, status, codes in BAD:
        for method in ("GET", "HEAD"):
            r = raw_request(port, path, method=method, headers=ACCEPT)
            label = "%s %s" % (method, path[:90])
            if not (r.status and 400 <= r.status < 500):
                bad(label, "not a 4xx:", r, r.body[:200])
            elif status is not None and r.status != status:
                bad(label, "want %d, got" % status, r, r.body[:200])
            elif method == "GET":
                p = _error_problem(r, codes=codes)
                if p:
                    bad(label, p)
            elif r.body:
                bad(label, "HEAD with a body", r.body[:100])
    for path in NGINX_OWN:
        r = raw_request(port, path)
        if not (r.status and 400 <= r.status < 500):
            bad("GET " + path, r)
    if oci.relay.counts():
        bad("bad input went upstream", oci.relay.counts())
    if stackmod.data_listing(oci.data_dir) != before:
        bad("bad input changed the store",
            sorted(set(stackmod.data_listing(oci.data_dir)) ^ set(before)))

    for path, status, codes in UNKNOWN:
        r = raw_request(port, path, headers=ACCEPT)
        if not (r.status and r.status < 500):
            bad("GET " + path[:90], "want a 4xx, got", r, r.body[:200])
        elif status is not None and r.status != status:
            bad("GET " + path[:90], "want %d, got" % status, r, r.body[:200])
        elif status is not None:
            p = _error_problem(r, codes=codes)
            if p:
                bad("GET " + path[:90], p)
    r = raw_request(port, oci.path("small", "manifests", "1.0"),
                    headers={"Accept": "x" * 6000})
    if not (r.status and r.status < 500):
        bad("a 6000-byte Accept", r)

    layer = upstream.pushed["small"].image.layers[-1]
    bpath = oci.path("small", "blobs", layer.digest)
    r = raw_request(port, bpath, headers={"Range": "bytes=0-9"})
    if r.status != 206 or r.body != layer.data[:10] or \
            r.header("Content-Range") != "bytes 0-9/%d" % layer.size:
        bad("Range: bytes=0-9", r, r.header("Content-Range"))
    r = raw_request(port, bpath, headers={"Range": "bytes=-10"})
    if r.status != 206 or r.body != layer.data[-10:]:
        bad("Range: bytes=-10", r)
    # past the end, and reversed (which nginx alone would ignore, sending
    # the whole blob): 416, as for a pushed blob and from docker-registry
    for rng in ("bytes=999999999-", "bytes=5-2", "bytes=500-0"):
        r = raw_request(port, bpath, headers={"Range": rng})
        if r.status != 416 or r.header("Content-Range") != "bytes */%d" % layer.size:
            bad("Range: " + rng, r, r.header("Content-Range"))
    for rng in ("bytes=abc", "pages=0-1", "bytes=", "bytes=0-1,5-6,-",
                "bytes=" + "9" * 40 + "-"):
        r = raw_request(port, bpath, headers={"Range": rng})
        if r.status not in (200, 206, 416) or (r.status == 200 and r.body != layer.data):
            bad("Range: " + rng, r)
    r = raw_request(port, oci.path("small", "manifests", "1.0"),
                    headers=dict(ACCEPT, Range="bytes=0-9"))
    if r.status not in (200, 206):
        bad("Range on a manifest", r)

    if stackmod.bad_blobs(oci.data_dir):
        bad("bad blobs", stackmod.bad_blobs(oci.data_dir))
    blobs_before = {os.path.relpath(p, "blobs") for p in before
                    if p.startswith("blobs" + os.sep)
                    and os.path.isfile(os.path.join(oci.data_dir, p))}
    if set(stackmod.blobs(oci.data_dir)) != blobs_before:
        bad("the unknown-blob requests stored something",
            set(stackmod.blobs(oci.data_dir)) ^ blobs_before)
    if not oci.larder.running or oci.get("/v2/").status != 200:
        bad("larder stopped answering")
    assert not problems, "%d problems:\n  %s" % (len(problems), "\n  ".join(problems))


# ================================================================ 10. token registry

def test_token_registry(oci_stack, token_upstream, tmp_path):
    """In front of a registry with token auth: anonymous pulls through
    larder work, ten at once cost the token server one request for the
    repository's pull scope; with username and password_file configured and
    anonymous access off, pulls work, as alice, again one token request per
    repository scope for ten parallel pulls."""
    oci_token = oci_stack(port=token_upstream.port)
    pw = tmp_path / "password"
    user, secret = token_upstream.reg.creds.split(":", 1)
    pw.write_text(secret + "\n")    # as `echo secret > file` makes it: the first line
    os.chmod(str(pw), 0o600)
    oci_token_creds = oci_stack(port=token_upstream.port,
                                registry_keys={"username": user, "password_file": str(pw)})
    ts = token_upstream.reg.token
    direct = {repo: token_upstream.direct(repo) for repo in ("small", "app1")}  # before counting
    ts.reset()
    dirs = [str(tmp_path / ("anon%02d" % i)) for i in range(10)]
    results = parallel(lambda d: ociup.pull(oci_token.ref("small", "1.0"), d),
                       [(d,) for d in dirs])
    for r in results:
        assert r.ok, r
    for d in dirs:
        assert not ociup.compare_layouts(d, direct["small"])
    assert ts.counts() == {"repository:small:pull": 1}, ts.requests()
    assert all(q["user"] is None for q in ts.requests()), ts.requests()

    ts.allow_anonymous = False
    ts.reset()
    try:
        dirs = [str(tmp_path / ("creds%02d" % i)) for i in range(10)]
        results = parallel(lambda d: ociup.pull(oci_token_creds.ref("app1", "1.0"), d),
                           [(d,) for d in dirs])
        for r in results:
            assert r.ok, r
        for d in dirs:
            assert not ociup.compare_layouts(d, direct["app1"])
        assert ts.counts() == {"repository:app1:pull": 1}, ts.requests()
        assert [q["user"] for q in ts.requests()] == ["alice"], ts.requests()
        # the anonymous larder cannot get at it now, and says so cleanly
        r = oci_token.get(oci_token.path("app2", "manifests", "1.0"), headers=ACCEPT)
        oci_error(r)
        assert oci_token.get("/v2/").status == 200
    finally:
        ts.allow_anonymous = True


# ================================================================ 11. referrers

def test_referrers_fallback(oci, upstream):
    """distribution 2.8 has no referrers API: an artifact pushed with
    subject = small, and its entry in the sha256-<hex> tag's index (as ORAS
    and cosign push it), are listed by larder's referrers answer; a
    manifest nobody refers to gets an empty index."""
    small = upstream.pushed["small"]
    art, art_manifest, _ = ociup.push_referrer(upstream.client, "small", small)
    r = http(upstream.reg.base + "/v2/small/referrers/" + small.digest)
    assert r.status == 404, "the registry grew a referrers API: %r" % r

    path = oci.path("small", "referrers", small.digest)
    r = oci.get(path)
    assert r.status == 200, (r, r.body[:300])
    assert r.header("Content-Type").split(";")[0] == OCI_INDEX, r.headers
    doc = r.json()
    assert doc.get("mediaType") == OCI_INDEX and doc.get("schemaVersion") == 2, doc
    found = [m for m in doc["manifests"] if m["digest"] == art]
    assert found, doc
    assert found[0]["artifactType"] == "application/vnd.larder.test.sbom"
    assert found[0]["size"] == len(art_manifest)

    r = oci.get(path + "?artifactType=application/vnd.larder.test.sbom")
    assert r.status == 200 and any(m["digest"] == art for m in r.json()["manifests"]), r
    r = oci.get(path + "?artifactType=application/vnd.example.other")
    assert r.status == 200, r
    if r.header("OCI-Filters-Applied"):
        assert r.json()["manifests"] == [], r.body

    r = oci.get(oci.path("small", "manifests", art), accept=OCI_MANIFEST)
    assert r.status == 200 and r.body == art_manifest, r

    app1 = upstream.pushed["app1"]
    r = oci.get(oci.path("app1", "referrers", app1.digest))
    assert r.status == 200, (r, r.body[:300])
    assert r.json()["manifests"] == [], r.body
    r = oci.get(oci.path("small", "referrers", "sha256:zz"))
    oci_error(r, 400)


# ================================================================ 12. tag list paging

def fake_paged_upstream(relay, repo, tags, page):
    """Relay rules that make /v2/REPO/tags/list answer as a paging registry
    does (distribution 2.8 does not): page tags a time, in order, a Link
    to the next page by last=."""
    rules = []
    pages = [tags[i:i + page] for i in range(0, len(tags), page)]
    for i, chunk in enumerate(pages):
        hdrs = {}
        if i + 1 < len(pages):
            hdrs["Link"] = '</v2/%s/tags/list?last=%s&n=%d>; rel="next"' % (repo, chunk[-1],
                                                                           page)
        body = json.dumps({"name": repo, "tags": chunk})
        query = r"^(?!.*last=)" if i == 0 else r"(^|&)last=%s(&|$)" % re.escape(pages[i - 1][-1])
        rules.append({"fault": "status", "path": r"^/v2/%s/tags/list$" % re.escape(repo),
                      "query": query, "code": 200, "body": body, "headers": hdrs})
    return rules


def walk_pages(st, first):
    """Follows Link: rel="next" from first through larder: [(tags, link)]."""
    out = []
    url = first
    while url is not None and len(out) < 50:
        r = st.get(url)
        assert r.status == 200, (url, r, r.body[:300])
        link = r.header("Link")
        out.append((r.json()["tags"], link))
        url = link_next(link)
        if url is not None:
            u = urlsplit(url)
            assert u.path == urlsplit(first).path, "Link not larder's: %r" % link
            url = u.path + ("?" + u.query if u.query else "")
    return out


def test_tags_list_paging(oci, upstream):
    """tags/list of a 120-tag repository: whole, and with n and last, in
    lexical order, Link headers to larder's own path (/v2/test/...) that
    walk every tag once; skopeo list-tags gets them all. The upstream,
    distribution 2.8, ignores n and last, so the paging is larder's."""
    tags = ociup.MANY_TAGS
    base = oci.path("many", "tags", "list")
    r = oci.get(base)
    assert r.status == 200, r
    doc = r.json()
    assert doc.get("name") in ("many", "test/many"), doc
    assert sorted(doc["tags"]) == tags

    pages = walk_pages(oci, base + "?n=50")
    assert [len(t) for t, _ in pages] == [50, 50, 20], [(len(t), l) for t, l in pages]
    assert [t for p, _ in pages for t in p] == tags
    for _, link in pages[:-1]:
        q = parse_qs(urlsplit(link_next(link)).query)
        assert q.get("n") == ["50"], link
    assert pages[-1][1] is None

    r = oci.get(base + "?n=10&last=t050")
    assert r.status == 200 and r.json()["tags"] == tags[51:61], (r, r.body[:300])
    r = oci.get(base + "?last=t118")
    assert r.status == 200 and r.json()["tags"] == ["t119"], r.body[:300]

    r, got = ociup.list_tags(oci.ref("many").rsplit(":", 1)[0])
    assert r.ok, r
    assert sorted(got) == tags


def test_tags_list_upstream_link(oci):
    """An upstream that pages its tag list itself (faked by the relay:
    distribution 2.8 does not page): its Link, to /v2/paged/..., reaches
    the client as larder's own path, /v2/test/paged/..., and following it
    through larder, and skopeo list-tags, get every tag once, in order."""
    tags = ociup.MANY_TAGS
    oci.relay.set_faults(fake_paged_upstream(oci.relay, "paged", tags, 50))
    pages = walk_pages(oci, oci.path("paged", "tags", "list"))
    assert [t for p, _ in pages for t in p] == tags, pages
    for _, link in pages[:-1]:
        assert urlsplit(link_next(link)).path == "/v2/test/paged/tags/list", link
    r, got = ociup.list_tags(oci.ref("paged").rsplit(":", 1)[0])
    assert r.ok, r
    assert got == tags


# ================================================================ 13. token service faults

def _bearer_fault(path, realm, service=ociup.TOKEN_SERVICE):
    """A relay rule: requests whose path matches get a 401 whose challenge
    names realm."""
    return {"fault": "status", "path": path, "code": 401,
            "headers": {"WWW-Authenticate": 'Bearer realm="%s",service="%s"' % (realm, service)}}


def test_token_service_stalled(oci_stack, token_upstream, tmp_path):
    """A token service that stalls on one repository (the relay's 401 for
    app2 names a realm that takes connections and never answers) holds up
    only the requests that need that token: while it stalls, a pull of
    small (cached, fresh) and a manifest of app1 (whose token comes from
    the registry's own token service) answer; the app2 manifest request
    ends in a 504, not a 401, when its token fetch times out, and a
    request for app2's tag list, which waited for that fetch, after one
    more try of its own."""
    import socket

    fbt = 4
    st = oci_stack(port=token_upstream.port,
                   larder_extra={"connect_timeout": 1, "first_byte_timeout": fbt,
                                 "fetch_timeout": 2, "fetch_retries": 0})
    ts = token_upstream.reg.token
    r = ociup.pull(st.ref("small", "1.0"), str(tmp_path / "warm"))
    assert r.ok, r

    stall = socket.socket()
    stall.bind(("127.0.0.1", 0))
    stall.listen(16)
    held = []

    def hold():
        while True:
            try:
                c, _ = stall.accept()
            except OSError:
                return
            held.append(c)

    threading.Thread(target=hold, daemon=True).start()
    out = {}

    def get(what, *path):
        t = time.monotonic()
        out[what] = (st.get(st.path("app2", *path), headers=ACCEPT), time.monotonic() - t)

    try:
        st.relay.set_faults([_bearer_fault(r"^/v2/app2/",
                                           "http://127.0.0.1:%d/token" % stall.getsockname()[1])])
        ts.reset()
        first = threading.Thread(target=get, args=("manifest", "manifests", "1.0"))
        first.start()
        deadline = time.monotonic() + 5
        while not held and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held, "larder never asked the stalled realm"
        second = threading.Thread(target=get, args=("tags", "tags", "list"))
        second.start()
        time.sleep(0.3)

        r = ociup.pull(st.ref("small", "1.0"), str(tmp_path / "cached"))
        assert r.ok, r
        r = st.get(st.path("app1", "manifests", "1.0"), headers=ACCEPT)
        assert r.status == 200, (r, r.body[:300])
        assert first.is_alive(), "the others waited for the stalled token fetch"
        assert ts.counts() == {"repository:app1:pull": 1}, ts.requests()

        first.join(30)
        second.join(30)
        r, took = out["manifest"]
        oci_error(r, 504, {"UNKNOWN"})
        assert took < fbt + 3, took
        r, took = out["tags"]
        assert r.status in (502, 504), (r, r.body[:300])
        oci_error(r, codes={"UNKNOWN"})
        assert took < 2 * fbt + 4, took
        assert len(held) <= 2, "the stalled realm was asked %d times" % len(held)
    finally:
        st.relay.clear()
        stall.close()
        for c in held:
            c.close()


def test_token_realm_down(oci_stack, upstream):
    """A registry whose token service is down (its challenge names a
    realm nobody listens on): a tag larder holds, gone stale, is served
    STALE; one it does not hold is a 502 that says the token service
    failed, not a 401."""
    st = oci_stack(cache_ttl=1, larder_extra={"fetch_retries": 0})
    r = st.get(st.path("small", "manifests", "1.0"), headers=ACCEPT)
    assert r.status == 200, r
    dead = stackmod.free_port()
    st.relay.set_faults([_bearer_fault(r"^/v2/(small|app1)/",
                                       "http://127.0.0.1:%d/token" % dead)])
    time.sleep(1.5)
    r = st.get(st.path("small", "manifests", "1.0"), headers=ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", (r, r.headers)
    r = st.get(st.path("app1", "manifests", "1.0"), headers=ACCEPT)
    oci_error(r, 502, {"UNKNOWN"})
    assert b"token service" in r.body, r.body[:300]
    assert st.larder.running and st.get("/v2/").status == 200
