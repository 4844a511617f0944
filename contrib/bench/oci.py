"""The container-image half of the benchmark: larder's registry cache (/v2/)
against the field, in the same run and the same report as the PyPI half.

The upstream is Debian's docker-registry (distribution 2.8) holding six
images the harness builds (tests/integration/ociup.py's build_image: gzip'd
tar layers of random bytes, from 2 KB to 30 MB; four share one 8 MB base
layer and two a 3 MB one, as python, nginx, redis and postgres share
debian's and node is made on alpine), behind the same simulated WAN as the
PyPI stand-in (wan.py: --latency-ms, --mbit). Its access log counts every
request that crosses the link.

The parties (each cold case a fresh one, with an empty state):

  direct        skopeo against the upstream itself, across the WAN
  oci-layout    skopeo copying the same images from their oci: layouts on
                local disk: what the client costs with no registry at all,
                the floor under every pull (oci-pull, oci-fleet)
  distribution  docker-registry as a pull-through cache (proxy: remoteurl:
                the WAN relay), Debian's config otherwise, its own storage
  larder-nginx  conf/nginx.conf as shipped in front of `larder serve`, as
                parties.py runs it for PyPI, with [registry "bench"]
                (upstream the WAN relay, default = yes,
                library_prefix = no): docker://HOST/bench/NAME:TAG
  nginx-static  nginx serving the same bytes as files: the reference for a
                warm layer and for every warm endpoint

The workloads (bench.py --workloads picks them like the others):

  oci-pull       skopeo copy of the six images, one after another, to fresh
                 oci: directories: cold, then warm (s; every blob hashed)
  oci-layer      the warm 30 MB layer, 1 and 8 curl readers at once, each
                 reading it --layer-reps times on one connection (MB/s)
  oci-fleet      ten skopeo pulls of one image at once, cold and warm, and
                 one cold pull alone (s); upstream requests per blob and
                 manifest counted
  oci-endpoints  req/s with 32 connections (wrk; ab for HEAD, which wrk
                 cannot send) of a warm manifest by digest, by tag (GET,
                 HEAD), tags/list, a blob HEAD and /v2/
  oci-burst      50 concurrent tags/list requests (cold, then stale) and 50
                 concurrent GETs of a stale tag: the upstream requests they
                 cost (larder with cache_ttl = 1 s)
  oci-push       push of a single-layer image of --push-mb MB (100; 1 in the
                 smoke run) driven from Python (POST a session, PUT the
                 layer streamed from its file PUSH_BUFFER bytes at a time, the
                 config the same way, PUT the manifest) to a hosted registry
                 of larder behind nginx and to docker-registry (a plain one,
                 no proxy) taking turns (MB/s of layer, the whole push timed;
                 the largest larder worker's RSS meanwhile); then the pushed
                 layer read back by curl from larder and from nginx static
                 serving the same bytes (oci-push-pull, MB/s). It needs no
                 upstream and builds no images.

Used by bench.py as

    oci = OciBench(bench, helpers)      # helpers: bench.py's module
    oci.run("oci-pull")                 # starts the upstream the first time
    oci.goals(); oci.info(); oci.party_infos(); oci.stop()

When docker-registry or skopeo is missing every workload is skipped and
info()["skipped"] says why.
"""

import base64
import collections
import hashlib
import http.client
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import ociup  # noqa: E402
import parties as partymod  # noqa: E402
import stack  # noqa: E402
import wan as wanmod  # noqa: E402

WORKLOADS = ["oci-pull", "oci-layer", "oci-fleet", "oci-endpoints", "oci-burst", "oci-push"]
PARTIES = ["direct", "oci-layout", "distribution", "nginx-static", "larder-nginx"]
ONLY_OCI = ["oci-layout", "distribution"]   # parties the PyPI half does not know
SECTION = "Container images"
REGISTRY = "bench"               # larder's [registry] section
LABELS = {
    "direct": "direct (the upstream, across the simulated WAN)",
    "oci-layout": "skopeo copying from an oci: layout on local disk: the client alone, "
                  "no registry",
    "distribution": "docker-registry (distribution) as a pull-through cache",
    "nginx-static": "nginx serving the same bytes as static files",
    "larder-nginx": "larder behind nginx (X-Accel-Redirect)",
}
MB = 1e6
KB = 1e3
CLK_TCK = os.sysconf("SC_CLK_TCK")
BURST = 50
FLEET = 10
FLEET_IMAGE = "node"
LAYER_IMAGE = "python"          # its first own layer is the 30 MB one
TAGS_IMAGE = "python"           # the repository with many tags
EXTRA_TAGS = 40

# name -> layers of random bytes; an image names its base, whose layers
# come first (the same bytes, so the images share them).
BASES = {"debian": [8 * MB], "alpine-base": [3 * MB]}
IMAGES = [
    ("python", "debian", [30 * MB, 3 * MB, 250 * KB, 4 * KB]),
    ("node", "alpine-base", [12 * MB, 1.5 * MB, 4 * KB]),
    ("alpine", "alpine-base", [2 * KB]),
    ("nginx", "debian", [5 * MB, 30 * KB, 4 * KB]),
    ("redis", "debian", [6 * MB, 400 * KB, 8 * KB]),
    ("postgres", "debian", [14 * MB, 2 * MB, 60 * KB, 4 * KB]),
]
TAG = "1.0"

# oci-push: larder's hosted registry, the image's repository, the client's
# buffer (the layer is sent from its file this many bytes at a time)
PUSH_REGISTRY = "pushed"
PUSH_SECTION = """
[registry "%s"]
type = hosted
max_upload_size = 2G
""" % PUSH_REGISTRY
PUSH_REPO = "push/app"
PUSH_BUFFER = 4 << 20


def registry_version():
    """docker-registry's version, as "docker-registry 2.8.2+ds1"."""
    v = partymod._version([ociup.REGISTRY_BIN, "--version"])
    return "docker-registry " + v.split()[-1] if v else None


def missing_reason():
    """Why the OCI workloads cannot run here, or None."""
    if not os.access(ociup.REGISTRY_BIN, os.X_OK):
        return "%s not found (apt-get install docker-registry)" % ociup.REGISTRY_BIN
    if not os.access(ociup.SKOPEO, os.X_OK):
        return "skopeo not found (apt-get install skopeo)"
    return None


def _sizes(sizes, smoke):
    """Layer sizes in bytes; a hundredth (at least 1 KB) for --smoke."""
    return [int(max(1000, s / 100)) if smoke else int(s) for s in sizes]


def spec(smoke):
    """What build_images makes, as JSON-able data (the cache's key)."""
    return {"version": 1, "tag": TAG,
            "bases": {k: _sizes(v, smoke) for k, v in BASES.items()},
            "images": [[n, b, _sizes(s, smoke)] for n, b, s in IMAGES]}


def build_images(cache_dir, smoke):
    """The six images as OCI layouts in cache_dir/NAME, built once and kept
    (images.json records them, with the spec they were built from).
    Returns {name: image record}: name, tag, layout, digest (of the
    manifest), manifest_size, config, layers [[digest, size]], blobs
    {digest: size} (config and layers), base."""
    want = spec(smoke)
    marker = os.path.join(cache_dir, "images.json")
    try:
        with open(marker) as f:
            got = json.load(f)
        if got["spec"] == want and all(_layout_ok(i) for i in got["images"].values()):
            return got["images"]
    except (OSError, ValueError, KeyError):
        pass
    if os.path.isdir(cache_dir):
        # only a cache of ours, or an empty directory, is started again
        if os.listdir(cache_dir) and not os.path.exists(marker):
            raise RuntimeError("%s is not empty and holds no images.json: not "
                               "an image cache of the benchmark's" % cache_dir)
        shutil.rmtree(cache_dir)
    os.makedirs(cache_dir)
    bases = {}
    for name, sizes in want["bases"].items():
        bases[name] = ociup.build_image(os.path.join(cache_dir, "_" + name), sizes,
                                        seed="bench-" + name, tag=TAG)
    out = {}
    for name, base, sizes in want["images"]:
        img = ociup.build_image(os.path.join(cache_dir, name), sizes, base=bases[base],
                                seed="bench-" + name, tag=TAG)
        out[name] = {"name": name, "tag": TAG, "layout": img.layout, "digest": img.digest,
                     "manifest_size": img.size, "config": img.config_digest,
                     "layers": [[l.digest, l.size] for l in img.layers],
                     "blobs": dict(img.blobs), "base": base,
                     "base_layers": len(bases[base].layers)}
    with open(marker + ".tmp", "w") as f:
        json.dump({"spec": want, "images": out}, f, indent=1)
    os.replace(marker + ".tmp", marker)
    return out


def _blob_path(layout, digest):
    return os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[1])


def _layout_ok(img):
    """Whether an image record's layout still holds its manifest and every
    blob at its size."""
    want = dict(img["blobs"], **{img["digest"]: img["manifest_size"]})
    for d, size in want.items():
        path = _blob_path(img["layout"], d)
        if not os.path.isfile(path) or os.path.getsize(path) != size:
            return False
    return True


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def check_pulled(dest, img):
    """None when the oci: layout skopeo wrote at dest holds img whole (its
    manifest in index.json, every blob there and hashing to its digest),
    else what is wrong."""
    try:
        with open(os.path.join(dest, "index.json")) as f:
            listed = [m["digest"] for m in json.load(f).get("manifests", [])]
    except (OSError, ValueError, KeyError) as e:
        return "%s: index.json: %s" % (dest, e)
    if img["digest"] not in listed:
        return "%s: index.json lists %s, not %s" % (dest, listed, img["digest"])
    for d, size in list(img["blobs"].items()) + [(img["digest"], img["manifest_size"])]:
        p = _blob_path(dest, d)
        if not os.path.exists(p):
            return "%s: %s missing" % (dest, d)
        if os.path.getsize(p) != size or _sha256_file(p) != d.split(":", 1)[1]:
            return "%s: %s is not its bytes" % (dest, d)
    return None


# ---------------------------------------------------------------- skopeo

class Skopeo:
    """skopeo copy SRC oci:DIR as a client of its own: each client slot
    has a home (so no saved credentials, registries.conf mirrors or a
    shared blob-info cache get in), plain http, no retries, digests
    preserved."""

    def __init__(self, work):
        self.work = work
        self.retry = None
        self.version = partymod._version([ociup.SKOPEO, "--version"])

    def env(self, slot):
        home = os.path.join(self.work, "skopeo-home-%d" % slot)
        os.makedirs(os.path.join(home, ".config"), exist_ok=True)
        os.chmod(home, 0o700)
        return stack.clean_env({"HOME": home, "XDG_RUNTIME_DIR": home,
                                "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                                "REGISTRY_AUTH_FILE": os.path.join(home, "auth.json")})

    def cmd(self, src, dest):
        if self.retry is None:
            h = subprocess.run([ociup.SKOPEO, "copy", "--help"], capture_output=True,
                               text=True)
            self.retry = "--retry-times" in h.stdout
        cmd = [ociup.SKOPEO, "--insecure-policy", "copy", "--src-tls-verify=false",
               "--preserve-digests"]
        if self.retry:
            cmd += ["--retry-times", "0"]
        return cmd + [src, "oci:" + dest]

    def start(self, src, dest, slot=0):
        """skopeo copy SRC (docker://REF or oci:LAYOUT:TAG) oci:DEST."""
        if os.path.exists(dest):
            shutil.rmtree(dest)
        err = open(dest + ".log", "wb")
        try:
            return subprocess.Popen(self.cmd(src, dest), stdout=err, stderr=err,
                                    stdin=subprocess.DEVNULL, env=self.env(slot),
                                    start_new_session=True)
        finally:
            err.close()

    @staticmethod
    def wait(proc, dest, timeout=600):
        """(exit status, "" or the tail of its log) of a start()ed copy."""
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        if proc.returncode == 0:
            return 0, ""
        with open(dest + ".log", errors="replace") as f:
            return proc.returncode, f.read()[-800:]


# ---------------------------------------------------------------- upstream

_ACCESS = re.compile(r'^\S+ - \S+ \[[^\]]*\] "([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3}) (\d+|-)',
                     re.M)


class Counts:
    """Upstream requests between two marks: requests {(method, path):
    n} (path without the query), bytes (bodies sent)."""

    def __init__(self, text):
        self.requests = collections.Counter()
        self.bytes = 0
        for m in _ACCESS.finditer(text):
            self.requests[(m.group(1), m.group(2).split("?")[0])] += 1
            self.bytes += int(m.group(4)) if m.group(4) != "-" else 0

    @property
    def total(self):
        return sum(self.requests.values())

    def per(self, kind, methods=("GET",)):
        """{path: requests} of blob ("blobs") or manifest ("manifests")
        paths with one of methods."""
        out = collections.Counter()
        for (m, p), n in self.requests.items():
            if m in methods and "/%s/" % kind in p:
                out[p] += n
        return out

    def most(self, kind, methods=("GET",)):
        return max(self.per(kind, methods).values(), default=0)

    def matching(self, rx):
        rx = re.compile(rx)
        return sum(n for (_, p), n in self.requests.items() if rx.search(p))

    def kinds(self):
        """{"METHOD kind": requests}, kind one of blobs, manifests, tags,
        v2 (the /v2/ check) and other."""
        out = collections.Counter()
        for (m, p), n in self.requests.items():
            kind = "other"
            if p in ("/v2", "/v2/"):
                kind = "v2"
            else:
                for k in ("blobs", "manifests", "tags"):
                    if "/%s/" % k in p:
                        kind = k
            out["%s %s" % (m, kind)] += n
        return dict(sorted(out.items()))

    def summary(self):
        return {"requests": self.total, "bytes": self.bytes, "by_kind": self.kinds(),
                "blob_gets": sum(self.per("blobs").values()),
                "blob_heads": sum(self.per("blobs", ("HEAD",)).values()),
                "max_gets_per_blob": self.most("blobs"),
                "manifest_requests": sum(self.per("manifests", ("GET", "HEAD")).values()),
                "max_requests_per_manifest": self.most("manifests", ("GET", "HEAD"))}


class Upstream:
    """docker-registry holding the images, and wan.py in front of it
    (without --latency-ms and --mbit, the registry itself)."""

    def __init__(self, work, images, latency_ms, mbit, smoke):
        self.work = work
        self.images = images
        self.latency_ms = latency_ms
        self.mbit = mbit
        self.smoke = smoke
        self.registry = self.relay = None
        self.tags = {}

    def start(self):
        self.registry = ociup.Registry(os.path.join(self.work, "upstream")).start()
        client = self.registry.client()
        for name, img in self.images.items():
            ociup.push(img["layout"], img["tag"], "%s/%s:%s" % (self.registry.host, name,
                                                                 img["tag"]))
            r = client.get_manifest(name, img["tag"])
            if r.status != 200 or r.header("Docker-Content-Digest") != img["digest"]:
                raise RuntimeError("the registry serves %s:%s as %s, not %s" % (
                    name, img["tag"], r.header("Docker-Content-Digest"), img["digest"]))
            self.tags[name] = [img["tag"]]
        img = self.images[TAGS_IMAGE]
        with open(_blob_path(img["layout"], img["digest"]), "rb") as f:
            manifest = f.read()
        for i in range(5 if self.smoke else EXTRA_TAGS):
            tag = "3.%d-slim" % i
            client.put_manifest(TAGS_IMAGE, tag, manifest, ociup.OCI_MANIFEST)
            self.tags[TAGS_IMAGE].append(tag)
        mark = self.mark()
        client.request("GET", "/v2/")
        if not self.since(mark).total:
            raise RuntimeError("%s logs no access lines: the upstream requests cannot "
                               "be counted" % self.registry.log)
        self.version = registry_version()
        self.port = self.registry.port
        if self.latency_ms or self.mbit:
            self.relay, (self.port,) = wanmod.spawn(
                [(0, "127.0.0.1:%d" % self.registry.port)], self.latency_ms, self.mbit,
                os.path.join(self.work, "wan.log"), python=stack.PYTHON)
        return self

    @property
    def host(self):
        """Where the parties reach the upstream: the WAN relay."""
        return "127.0.0.1:%d" % self.port

    def mark(self):
        try:
            return os.path.getsize(self.registry.log)
        except OSError:
            return 0

    def since(self, mark):
        """Counts of the requests logged after mark (once the log has
        stopped growing: a line is written when its answer is sent)."""
        last, still = -1, 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            n = self.mark()
            still = still + 1 if n == last else 0
            if still >= 2:
                break
            last = n
            time.sleep(0.1)
        with open(self.registry.log, "rb") as f:
            f.seek(mark)
            return Counts(f.read().decode(errors="replace"))

    def cpu(self):
        """CPU seconds the registry and the relay have used so far."""
        ticks = 0
        for proc in (self.registry.proc, self.relay):
            try:
                with open("/proc/%d/stat" % proc.pid) as f:
                    rest = f.read().rsplit(")", 1)[1].split()
                ticks += int(rest[11]) + int(rest[12])
            except (AttributeError, OSError, IndexError, ValueError):
                pass
        return ticks / CLK_TCK

    def stop(self):
        if self.relay is not None:
            stack._stop_process(self.relay)
        if self.registry is not None:
            self.registry.stop()

    def describe(self):
        if not self.relay:
            return None
        return {"latency_ms": self.latency_ms, "bandwidth_mbit": self.mbit or None}


# ---------------------------------------------------------------- parties

class _Party(partymod.Party):
    """A party of the OCI workloads: ref() names an image for skopeo, url()
    a /v2/ path for HTTP clients."""

    prefix = ""

    def __init__(self, name, work, upstream, args):
        self.name = name
        self.label = LABELS[name]
        self.work = work
        self.upstream = upstream
        self.args = args
        self.present = True
        self.reason = self.version = self.dir = self.server = None
        self.runs = 0

    def ref(self, repo, tag=TAG):
        return "%s/%s%s:%s" % (self.host, self.prefix, repo, tag)

    def source(self, repo, tag=TAG):
        """What skopeo copies the image from."""
        return "docker://" + self.ref(repo, tag)

    def url(self, repo, *rest):
        return "http://%s/v2/%s%s/%s" % (self.host, self.prefix, repo, "/".join(rest))

    # keeps these apart from the PyPI parties' directories
    dir_prefix = "oci-"


class Direct(_Party):
    kind = "direct"

    def start(self):
        return self

    @property
    def host(self):
        return self.upstream.host


class LocalLayout(_Party):
    """No registry: skopeo copies each image from the layout it was built
    in (the client's own cost, the floor under every pull)."""

    kind = "client-floor"
    images = None

    def start(self):
        self.version = None
        return self

    def source(self, repo, tag=TAG):
        return "oci:%s:%s" % (self.images[repo]["layout"], tag)


DISTRIBUTION_CONF = """\
version: 0.1
log:
  fields:
    service: registry
storage:
  cache:
    blobdescriptor: inmemory
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
  secret: larder-bench-not-a-secret
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: true
    interval: 10s
    threshold: 3
"""
DISTRIBUTION_PROXY = """\
proxy:
  remoteurl: http://{remote}
"""


class Distribution(_Party):
    """docker-registry as a pull-through cache: Debian's config
    (/etc/docker/registry/config.yml) without its htpasswd auth, with its
    storage in the party's directory and proxy: remoteurl: the upstream."""

    kind = "pull-through-cache"
    proxy = True                    # a cache; False: a plain registry that takes
                                    # pushes (oci-push), for the next start() only

    def start(self):
        d = self._new_dir()
        proxy, self.proxy = self.proxy, Distribution.proxy
        self.port = stack.free_port()
        conf = os.path.join(d, "config.yml")
        with open(conf, "w") as f:
            f.write(DISTRIBUTION_CONF.format(storage=os.path.join(d, "storage"),
                                             port=self.port))
            if proxy:
                f.write(DISTRIBUTION_PROXY.format(remote=self.upstream.host))
        self.server = partymod._Server(d, self.port)
        self.server.start([ociup.REGISTRY_BIN, "serve", conf], "docker-registry",
                          os.path.join(d, "docker-registry.out"))
        self.version = registry_version()
        return self

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port


class _LarderNginx(partymod.LarderNginx):
    """parties.LarderNginx (conf/nginx.conf as shipped, `larder serve` on
    a unix socket) with a [registry] section whose upstream is the OCI
    upstream; the PyPI index points at a port nothing listens on."""

    def __init__(self, workdir, upstream_url, args, cache_ttl, larder_extra, extra_text=""):
        dead = stack.free_port()
        super().__init__(workdir, dead, args, None, larder_extra)
        section = ociup.registry_section(REGISTRY, upstream_url, cache_ttl=cache_ttl,
                                         default=True, library_prefix="no") + extra_text
        with open(self.conf, "w") as f:
            f.write(stack.larder_conf(self.data_dir, dead, cache_ttl=3600,
                                      extra=larder_extra, extra_text="\n" + section))


class Larder(_Party, partymod.Larder):
    kind = "larder"
    prefix = REGISTRY + "/"
    cache_ttl = 300                 # the registry's, for the next start() only
    hosted = False                  # with PUSH_REGISTRY too, for the next start() only
    token = None                    # a pull,push token of PUSH_REGISTRY when hosted

    def start(self):
        d = self._new_dir()
        ttl, self.cache_ttl = self.cache_ttl, Larder.cache_ttl
        hosted, self.hosted = self.hosted, Larder.hosted
        keys = dict(kv.split("=", 1) for kv in self.args.larder_set)
        # oci-push runs without the OCI upstream: its cache registry points
        # at a port nothing listens on
        up = self.upstream.host if self.upstream else "127.0.0.1:%d" % stack.free_port()
        self.fe = _LarderNginx(d, "http://%s/" % up, self.args, ttl, keys,
                               extra_text=PUSH_SECTION if hosted else "")
        try:
            self.fe.start(timeout=30)
        except RuntimeError as e:
            raise partymod.PartyError("%s did not start: %s" % (self.name, e)) from None
        self.version = partymod._version([self.args.larder, "--version"])
        self.token = None
        if hosted:
            p = subprocess.run([self.args.larder, "token", "add", "--registry", PUSH_REGISTRY,
                                "--actions", "pull,push", "-c", self.fe.conf],
                               capture_output=True, text=True, env=stack.clean_env(),
                               timeout=30)
            if p.returncode != 0:
                self.fe.stop()
                raise partymod.PartyError("%s: token add: %s" % (self.name, p.stderr.strip()))
            self.token = p.stdout.strip()
        return self

    @property
    def host(self):
        return "127.0.0.1:%d" % self.fe.port


class NginxStatic(_Party, partymod.NginxStatic):
    kind = "nginx-static"

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port


# ---------------------------------------------------------------- HTTP

def _fsync(path):
    """Writes path's pages out now (a copy just made is dirty in the page
    cache, and its writeback would land in whichever figure runs then)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _just_after_a_second():
    """Sleeps until 20 ms past the next whole second. larder keeps when it
    fetched a row in whole seconds, so a 1 s freshness ends on a second's
    boundary: a burst that straddles one after its refresh would see the
    new copy stale already and refresh it again, as it should. Released
    just after a boundary, the burst is over long before the next."""
    time.sleep(1.02 - time.time() % 1)


def _children_cpu():
    """CPU seconds of this process's reaped children (the clients)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def burst(url, n, method="GET", headers=None, timeout=60):
    """n requests at once, each on a connection of its own opened first:
    (wall seconds from the release, [(status or None, headers, body)])."""
    u = http.client.urlsplit(url)
    path = u.path + ("?" + u.query if u.query else "")
    gate = threading.Barrier(n + 1)
    out = [None] * n

    def one(i):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        try:
            try:
                conn.connect()
            finally:
                gate.wait()
            conn.request(method, path, headers=headers or {})
            r = conn.getresponse()
            body = r.read()
            out[i] = (r.status, {k.lower(): v for k, v in r.getheaders()}, body)
        except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as e:
            out[i] = (None, {}, str(e).encode())
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.monotonic()
    for t in threads:
        t.join(timeout + 10)
    return time.monotonic() - t0, out


def get(url, method="GET", headers=None, timeout=120):
    """(status, headers lower-cased, body) of one request."""
    u = http.client.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request(method, u.path + ("?" + u.query if u.query else ""),
                     headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


# Blobs a light client fetches at once: go-containerregistry's default
# (crane pull --jobs).
LIGHT_JOBS = 4


def _light_blob(conn, path, digest, size):
    """GETs path on the kept connection conn, hashing the body as it comes
    (a layer is never held whole); None when it is digest's size and bytes,
    else what is wrong."""
    conn.request("GET", path)
    r = conn.getresponse()
    if r.status != 200:
        r.read()
        return "%s: %d" % (path, r.status)
    h, got = hashlib.sha256(), 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        h.update(b)
        got += len(b)
    if got != size or "sha256:" + h.hexdigest() != digest:
        return "%s: %d bytes, not its %d" % (path, got, size)
    return None


def light_pull(p, imgs):
    """The images imgs pulled through p one after another by an in-process
    client, as crane pulls (the published comparisons' client): the
    manifest by tag, checked against its digest, then its config and layers
    LIGHT_JOBS at a time, each hashed as it streams and thrown away, on
    connections kept for the whole pull. Returns the failures' reasons."""
    host, port = p.host.rsplit(":", 1)
    conns = [http.client.HTTPConnection(host, int(port), timeout=120)
             for _ in range(LIGHT_JOBS)]
    bad = []
    try:
        for img in imgs:
            prefix = "/v2/%s%s/" % (p.prefix, img["name"])
            conns[0].request("GET", prefix + "manifests/" + TAG,
                             headers={"Accept": ociup.ACCEPT_ALL})
            r = conns[0].getresponse()
            body = r.read()
            if r.status != 200 or \
                    "sha256:" + hashlib.sha256(body).hexdigest() != img["digest"]:
                bad.append("%s: manifest %d, not %s" % (img["name"], r.status,
                                                        img["digest"]))
                continue
            m = json.loads(body)
            blobs = [(d["digest"], d["size"]) for d in [m["config"]] + m["layers"]]
            errs = [None] * len(blobs)

            def fetch(slot):
                for i in range(slot, len(blobs), LIGHT_JOBS):
                    d, size = blobs[i]
                    try:
                        errs[i] = _light_blob(conns[slot], prefix + "blobs/" + d, d, size)
                    except (OSError, http.client.HTTPException) as e:
                        errs[i] = "%s: %s" % (d, e)
            threads = [threading.Thread(target=fetch, args=(j,))
                       for j in range(min(LIGHT_JOBS, len(blobs)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            bad += ["%s: %s" % (img["name"], e) for e in errs if e]
    except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
        bad.append("%s: %s" % (p.name, e))
    finally:
        for c in conns:
            c.close()
    return bad


def ab_head(url, conns, seconds, accept):
    """ApacheBench HEAD requests (wrk 4.1 cannot: it waits for the body a
    HEAD answer's Content-Length announces): (req/s, requests, errors)."""
    cmd = ["ab", "-q", "-i", "-k", "-c", str(conns), "-t", str(seconds), "-n", "100000000",
           "-s", "10", "-H", "Accept: " + accept, url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = re.search(r"Requests per second:\s+([\d.]+)", out)
    done = re.search(r"Complete requests:\s+(\d+)", out)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    if not rps or not done:
        raise RuntimeError("ab printed no figures for %s:\n%s" % (url, out))
    errors = (int(failed.group(1)) if failed else 0) + (int(non2xx.group(1)) if non2xx
                                                        else 0)
    return float(rps.group(1)), int(done.group(1)), errors


def _target(loc, digest=None):
    """The request target of a Location (absolute or not), ?digest= added."""
    u = http.client.urlsplit(loc)
    q = u.query
    if digest:
        q = (q + "&" if q else "") + "digest=" + digest
    return u.path + ("?" + q if q else "")


def push_image(host, repo, tag, path, digest, size, auth):
    """Pushes a one-layer image to http://host/v2/repo as a client would, on
    one connection (http.client opens another if the server closes it):
    the layer (POST, then PUT ?digest= streamed from path PUSH_BUFFER bytes
    at a time), a config blob, the manifest by tag. Returns (seconds, None)
    or (seconds, what went wrong)."""
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "rootfs": {"type": "layers", "diff_ids": [digest]}},
                        sort_keys=True, separators=(",", ":")).encode()
    cdigest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": cdigest, "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": digest, "size": size}]},
        sort_keys=True, separators=(",", ":")).encode()
    hostname, port = host.rsplit(":", 1)
    conn = http.client.HTTPConnection(hostname, int(port), timeout=600,
                                      blocksize=PUSH_BUFFER)

    def req(method, target, body, headers, want):
        conn.request(method, target, body=body, headers=dict(auth, **headers))
        r = conn.getresponse()
        text = r.read()
        if r.status != want:
            raise RuntimeError("%s %s: %d %s" % (method, target, r.status, text[:200]))
        return r

    t0 = time.monotonic()
    try:
        for blob, d, n in ((path, digest, size), (config, cdigest, len(config))):
            r = req("POST", "/v2/%s/blobs/uploads/" % repo, b"", {"Content-Length": "0"}, 202)
            loc = r.getheader("Location")
            if isinstance(blob, bytes):
                req("PUT", _target(loc, d), blob, {"Content-Type": "application/octet-stream"},
                    201)
            else:
                with open(blob, "rb") as f:
                    req("PUT", _target(loc, d), f, {"Content-Type": "application/octet-stream",
                                                    "Content-Length": str(n)}, 201)
        req("PUT", "/v2/%s/manifests/%s" % (repo, tag), manifest,
            {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}, 201)
    except (RuntimeError, OSError, http.client.HTTPException) as e:
        return time.monotonic() - t0, str(e)
    finally:
        conn.close()
    return time.monotonic() - t0, None


# ---------------------------------------------------------------- the run

class OciBench:
    """The OCI workloads of one bench.py run (bench: its Bench; h: the
    bench.py module, for Meter, curl_readers, Failure and log)."""

    def __init__(self, bench, h):
        self.b = bench
        self.h = h
        self.args = bench.args
        self.res = bench.res
        self.work = os.path.join(bench.work, "oci")
        self.reason = missing_reason()
        self.upstream = None
        self.images = None
        self.parties = {}
        self.ran = []
        self.started = False
        self.skopeo = None
        names = self.args.parties.split(",")
        for name in PARTIES:
            if name in names:
                cls = {"direct": Direct, "oci-layout": LocalLayout,
                       "distribution": Distribution,
                       "nginx-static": NginxStatic, "larder-nginx": Larder}[name]
                p = cls(name, self.work, None, self.args)
                if self.reason:
                    p.present, p.reason = False, self.reason
                elif name in ("larder-nginx", "nginx-static"):
                    why = stack.missing_reason(self.args.larder)
                    if why:
                        p.present, p.reason = False, why
                self.parties[name] = p

    # -- setup

    def _setup(self):
        if self.started:
            return
        self.started = True
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o755)
        cdir = self.args.oci_images or os.path.join(
            "/var/tmp", "larder-bench-oci-images" + ("-smoke" if self.args.smoke else ""))
        t0 = time.monotonic()
        try:
            self.images = build_images(cdir, self.args.smoke)
        except RuntimeError as e:
            raise self.h.Failure(str(e)) from None
        self.h.log("oci: %d images, %.1f MB of unique blobs, in %s (%.1f s)" % (
            len(self.images), self.unique_bytes() / MB, cdir, time.monotonic() - t0))
        self.skopeo = Skopeo(self.work)
        self.upstream = Upstream(self.work, self.images, self.args.latency_ms,
                                 self.args.mbit, self.args.smoke)
        try:
            self.upstream.start()
        except RuntimeError as e:
            raise self.h.Failure("the OCI upstream did not start: %s" % e) from None
        for p in self.parties.values():
            p.upstream = self.upstream
            p.images = self.images
        self.h.log("oci: upstream %s at %s" % (self.upstream.version, self.upstream.host))

    def unique_bytes(self):
        blobs = {}
        for img in self.images.values():
            blobs.update(img["blobs"])
        return sum(blobs.values())

    def stop(self):
        if self.upstream is not None:
            self.upstream.stop()

    def run(self, workload):
        if self.reason:
            self.h.log("%s skipped: %s" % (workload, self.reason))
            return
        if workload == "oci-push":
            self.ran.append(workload)
            os.makedirs(self.work, exist_ok=True)
            os.chmod(self.work, 0o755)
            self.w_push()
            return
        self._setup()
        self.ran.append(workload)
        {"oci-pull": self.w_pull, "oci-layer": self.w_layer, "oci-fleet": self.w_fleet,
         "oci-endpoints": self.w_endpoints, "oci-burst": self.w_burst}[workload]()

    # -- helpers

    def present(self, names):
        return [n for n in names if n in self.parties and self.parties[n].present]

    def fresh(self, name, cache_ttl=None):
        p = self.parties[name]
        if cache_ttl is not None:
            p.cache_ttl = cache_ttl
        try:
            p.start()
        except RuntimeError as e:   # a _Server that did not come up
            raise partymod.PartyError("%s did not start: %s" % (name, e)) from None
        self.b.running.append(p)
        return p

    def workload(self, name, title, unit, better, reference, cases, description):
        self.res.workload(name, title, unit, better, reference, cases, description)
        self.res.meta[name]["section"] = SECTION

    def pulls(self, p, refs, tag):
        """skopeo copies of refs [(ref, image)], at once when concurrent;
        returns (wall, failures). Every pulled layout is checked."""
        base = os.path.join(self.work, "pulls")
        os.makedirs(base, exist_ok=True)
        dests = [os.path.join(base, "%s-%d" % (tag, i)) for i in range(len(refs))]
        cpu = _children_cpu()
        t0 = time.monotonic()
        procs = [self.skopeo.start(src, d, slot=i)
                 for i, ((src, _), d) in enumerate(zip(refs, dests))]
        rows = [Skopeo.wait(proc, d) for proc, d in zip(procs, dests)]
        wall = time.monotonic() - t0
        self.client_cpu = _children_cpu() - cpu
        return wall, self._checked(p, refs, dests, rows, tag)

    def pulls_in_turn(self, p, refs, tag):
        """skopeo copies of refs one after another; (wall, failures)."""
        base = os.path.join(self.work, "pulls")
        os.makedirs(base, exist_ok=True)
        dests = [os.path.join(base, "%s-%d" % (tag, i)) for i in range(len(refs))]
        rows = []
        cpu = _children_cpu()
        t0 = time.monotonic()
        for (src, _), d in zip(refs, dests):
            rows.append(Skopeo.wait(self.skopeo.start(src, d), d))
        wall = time.monotonic() - t0
        self.client_cpu = _children_cpu() - cpu
        return wall, self._checked(p, refs, dests, rows, tag)

    def pull_failed(self, p, what):
        """A pull through p went wrong: a failure of the run when p is
        larder; when p is a reference (distribution as a pull-through cache
        answers 500s under ten cold pulls at once, now and then), logged and
        counted in its results, as the report shows errors."""
        if isinstance(p, Larder):
            self.b.fail(what)
        else:
            self.h.log("a reference failed (counted in its results, not a failure "
                       "of the run): " + what)

    def _checked(self, p, refs, dests, rows, tag):
        bad = 0
        for (ref, img), d, (rc, err) in zip(refs, dests, rows):
            why = ("skopeo exit %s: %s" % (rc, err.strip())) if rc else check_pulled(d, img)
            if why:
                bad += 1
                self.pull_failed(p, "%s %s: %s: %s" % (p.name, tag, ref, why))
            shutil.rmtree(d, ignore_errors=True)
            try:
                os.unlink(d + ".log")
            except OSError:
                pass
        return bad

    # -- oci-pull

    def measure_pulls(self, workload, p, case, rnd, pull):
        """One timed pull(tag) through p, recorded as case: pull is one of
        pulls(), pulls_in_turn() and light_pulls() with its images bound,
        returning (wall, failures) and leaving its clients' CPU in
        self.client_cpu."""
        mark = self.upstream.mark()
        up_cpu = self.upstream.cpu()
        with self.h.Meter(p) as m:
            wall, bad = pull("%s-%s" % (workload, case))
        up = self.upstream.since(mark).summary()
        extra = dict(up, wall_s=wall, client_cpu_s=self.client_cpu,
                     upstream_cpu_s=self.upstream.cpu() - up_cpu)
        # direct and oci-layout run nothing of their own to measure
        self.res.add(workload, p.name, case, wall, m if m.first else None, errors=bad,
                     extra=extra)
        self.h.log("%s round %d %-14s %-16s %6.2f s  cpu %.2f s, clients %.2f s  upstream "
                   "%d requests, %.1f MB: <= %d GETs per blob, <= %d per manifest %s" % (
                       workload, rnd + 1, p.name, case, wall, m.cpu_s, self.client_cpu,
                       up["requests"], up["bytes"] / MB, up["max_gets_per_blob"],
                       up["max_requests_per_manifest"], up["by_kind"]))

    def light_pulls(self, p, imgs, tag):
        """light_pull() of imgs through p, as pulls_in_turn() returns: (wall,
        failures); the client's CPU is this process's."""
        cpu = time.process_time()
        t0 = time.monotonic()
        bad = light_pull(p, imgs)
        wall = time.monotonic() - t0
        self.client_cpu = time.process_time() - cpu
        for why in bad:
            self.pull_failed(p, "%s %s: %s" % (p.name, tag, why))
        return wall, len(bad)

    def pull_notes(self, workload, names, cases):
        """A note per party and case: what it cost the upstream and the
        clients (medians over the rounds; the most GETs of one blob)."""
        for pname in names:
            for case in cases:
                ex = self.res.extras(workload, pname, case)
                if not ex:
                    continue
                text = "clients' CPU %.2f s" % statistics.median(e["client_cpu_s"]
                                                                   for e in ex)
                if pname != "oci-layout":
                    most = max(e["max_gets_per_blob"] for e in ex)
                    text = "upstream %d requests, %.1f MB, at most %d GET%s of one blob; " \
                        "%s" % (statistics.median(e["requests"] for e in ex),
                                statistics.median(e["bytes"] for e in ex) / MB,
                                most, "" if most == 1 else "s", text)
                self.res.add(workload, pname, case, None, note=text)

    def w_pull(self):
        imgs = [self.images[n] for n, _, _ in IMAGES]
        self.workload(
            "oci-pull", "pulling %d images" % len(imgs), "s", "lower", "direct",
            ["cold", "warm", "warm-light"],
            "`skopeo copy docker://… oci:DIR` of the %d images (%s; %.0f MB of unique "
            "blobs, four sharing one base layer and two another) one after another, "
            "each into a fresh directory, every blob hashed after: cold against a "
            "party with an empty state, then warm. oci-layout is skopeo copying the "
            "same images from their layouts on local disk, no registry: the floor. "
            "Upstream requests and bytes are counted at the upstream's access log; the "
            "clients' CPU is skopeo's. warm-light: the same images pulled again by an "
            "in-process client as crane pulls them (manifest by tag, then config and "
            "layers %d at a time on kept connections, each hashed as it streams, "
            "nothing written; the published registry comparisons use crane)." % (
                len(imgs), ", ".join(i["name"] for i in imgs), self.unique_bytes() / MB,
                LIGHT_JOBS))
        names = self.present(["direct", "oci-layout", "distribution", "larder-nginx"])
        for rnd in range(self.args.rounds):
            for pname in self.b.rotate(names, rnd):
                p = self.fresh(pname)
                try:
                    refs = [(p.source(i["name"]), i) for i in imgs]
                    for case in ("cold", "warm"):
                        self.measure_pulls("oci-pull", p, case, rnd,
                                           lambda tag: self.pulls_in_turn(p, refs, tag))
                    if pname != "oci-layout":  # (no registry to ask)
                        self.measure_pulls("oci-pull", p, "warm-light", rnd,
                                           lambda tag: self.light_pulls(p, imgs, tag))
                finally:
                    self.b.done(p)
        self.pull_notes("oci-pull", names, ["cold", "warm"])

    # -- oci-layer

    def layer(self):
        img = self.images[LAYER_IMAGE]
        digest, size = img["layers"][img["base_layers"]]
        return img, digest, size

    def warm_blob(self, p, url, size):
        """GETs url until the party answers it from its cache (larder says
        HIT; the others after one whole GET)."""
        for attempt in range(50):
            status, hdrs, body = get(url)
            if status != 200 or len(body) != size:
                raise self.h.Failure("%s: warming %s: %s, %d bytes" % (p.name, url, status,
                                                                       len(body)))
            if not isinstance(p, Larder) and attempt:
                return
            if hdrs.get("x-larder-cache", "").upper() == "HIT":
                return
            time.sleep(0.1)
        raise self.h.Failure("%s: %s is still not cached" % (p.name, url))

    def w_layer(self):
        img, digest, size = self.layer()
        reps = self.args.layer_reps
        self.workload(
            "oci-layer", "a warm %.3g MB layer" % (size / MB), "MB/s", "higher",
            "nginx-static", ["1-reader", "8-readers"],
            "The %.3g MB layer of the %s image, in the party's cache (fetched whole "
            "first), read by curl processes started at once, each reading it %s over "
            "one connection from /v2/…/blobs/sha256:…; MB/s of all the bytes. The "
            "reference is nginx sending the same file from disk." % (
                size / MB, LAYER_IMAGE, "once" if reps == 1 else "%d times" % reps))
        names = self.present(["nginx-static", "larder-nginx", "distribution"])
        running = {}
        urls = {}
        try:
            for pname in names:
                p = self.fresh(pname)
                running[pname] = p
                if pname == "nginx-static":
                    urls[pname] = p.put("v2/%s/blobs/%s" % (LAYER_IMAGE, digest),
                                        src=_blob_path(img["layout"], digest))
                    _fsync(os.path.join(p.root, "v2", LAYER_IMAGE, "blobs", digest))
                else:
                    urls[pname] = p.url(LAYER_IMAGE, "blobs", digest)
                    self.warm_blob(p, urls[pname], size)
            # every copy read once, untimed: all in the page cache, and
            # none still being written back while another is measured
            for pname in names:
                self.h.curl_readers([urls[pname]])
            for rnd in range(self.args.rounds):
                for pname in self.b.rotate(names, rnd):
                    p = running[pname]
                    for case, n in (("1-reader", 1), ("8-readers", 8)):
                        with self.h.Meter(p) as m:
                            wall, rd = self.h.curl_readers([urls[pname]] * n, reps=reps)
                        bad = sum(1 for x in rd if x[0] != 200 or x[1] != reps * size)
                        if bad:
                            self.b.fail("%s oci-layer %s: %r" % (pname, case, rd))
                        rate = n * reps * size / MB / wall
                        self.res.add("oci-layer", pname, case, rate, m, errors=bad,
                                     extra={"wall_s": wall, "bytes": n * reps * size})
                        self.h.log("oci-layer round %d %-14s %-9s %8.1f MB/s  cpu %.2f s"
                                   % (rnd + 1, pname, case, rate, m.cpu_s))
        finally:
            for p in running.values():
                self.b.done(p)

    # -- oci-fleet

    def w_fleet(self):
        img = self.images[FLEET_IMAGE]
        total = sum(img["blobs"].values())
        cold, warm = "%d-clients-cold" % FLEET, "%d-clients-warm" % FLEET
        self.workload(
            "oci-fleet", "%d pulls of one image at once" % FLEET, "s", "lower", "direct",
            ["1-client-cold", cold, warm],
            "%d `skopeo copy` processes of the %s image (%d blobs, %.1f MB) started at "
            "the same moment, each into a fresh directory with a home of its own; wall "
            "time until the last ends: cold against a party with an empty state, then "
            "warm. 1-client-cold is one cold pull alone, the yardstick of the fleet; "
            "oci-layout the same copies from the image's layout on local disk (the "
            "clients alone). Upstream requests per blob and per manifest are counted (a "
            "cache should make one)." % (FLEET, FLEET_IMAGE, len(img["blobs"]), total / MB))
        names = self.present(["direct", "oci-layout", "distribution", "larder-nginx"])
        for rnd in range(self.args.rounds):
            for pname in self.b.rotate(names, rnd):
                for cases in (["1-client-cold"], [cold, warm]):
                    p = self.fresh(pname)
                    try:
                        for case in cases:
                            refs = [(p.source(FLEET_IMAGE), img)] * (
                                1 if case == "1-client-cold" else FLEET)
                            self.measure_pulls("oci-fleet", p, case, rnd,
                                               lambda tag: self.pulls(p, refs, tag))
                    finally:
                        self.b.done(p)
        self.pull_notes("oci-fleet", names, ["1-client-cold", cold, warm])

    # -- oci-endpoints

    CASES = [
        # case, method, what
        ("manifest-by-digest", "GET", "manifest by digest"),
        ("manifest-by-tag", "GET", "manifest by tag"),
        ("manifest-by-tag-HEAD", "HEAD", "manifest by tag, HEAD"),
        ("tags-list", "GET", "tags/list"),
        ("blob-HEAD", "HEAD", "blob HEAD"),
        ("v2", "GET", "/v2/"),
    ]

    def endpoint_urls(self, p, img, layer, files):
        """{case: URL} of the party; nginx-static gets files {case: bytes}
        published at the same paths."""
        name = img["name"]
        paths = {
            "manifest-by-digest": ("manifests", img["digest"]),
            "manifest-by-tag": ("manifests", img["tag"]),
            "manifest-by-tag-HEAD": ("manifests", img["tag"]),
            "tags-list": ("tags", "list"),
            "blob-HEAD": ("blobs", layer),
        }
        out = {}
        for case, _, _ in self.CASES:
            if isinstance(p, NginxStatic):
                if case == "v2":
                    out[case] = p.put("v2/index.html", files[case])[:-len("index.html")]
                elif case == "blob-HEAD":
                    out[case] = p.put("v2/%s/blobs/%s" % (name, layer), src=files[case])
                else:
                    out[case] = p.put("v2/%s/%s" % (name, "/".join(paths[case])),
                                      files[case.replace("-HEAD", "")])
            elif case == "v2":
                out[case] = "http://%s/v2/" % p.host
            else:
                out[case] = p.url(name, *paths[case])
        return out

    def w_endpoints(self):
        img, layer, _ = self.layer()
        d = self.args.duration
        accept = ociup.ACCEPT_ALL
        self.workload(
            "oci-endpoints", "warm registry endpoints, 32 connections", "req/s", "higher",
            "nginx-static", [c for c, _, _ in self.CASES],
            "Closed loop, 32 connections, %d s per figure, against a party that has "
            "served each URL before (the %s image's manifest by digest and by tag, its "
            "tags/list of %d tags, a HEAD of its %s layer, which the party holds, /v2/), "
            "with the Accept header "
            "of a client that reads every manifest kind: wrk for GET, ApacheBench (ab "
            "-k) for HEAD, which wrk cannot send. The reference is nginx sending the "
            "same bytes as static files from the same paths. A tag and a tag list are "
            "fresh in larder for its cache_ttl (5 min); distribution asks its upstream "
            "for them on every request." % (
                d, img["name"], len(self.upstream.tags[img["name"]]),
                layer[:19] + "…"))
        names = self.present(["nginx-static", "larder-nginx", "distribution"])
        running, urls, files = {}, {}, {}
        try:
            for pname in [n for n in names if n != "nginx-static"] + \
                    [n for n in names if n == "nginx-static"]:
                p = self.fresh(pname)
                running[pname] = p
                if pname == "nginx-static":
                    if not files:
                        src = Direct("direct", self.work, self.upstream, self.args)
                        self._endpoint_bytes(src, img, layer, accept, files)
                    files["blob-HEAD"] = _blob_path(img["layout"], layer)
                urls[pname] = self.endpoint_urls(p, img, layer, files)
                if pname != "nginx-static":
                    self._endpoint_bytes(p, img, layer, accept, files)
                if not self.args.smoke:
                    self.b.wrk(urls[pname]["manifest-by-digest"], 32, 2, accept=accept)
            for rnd in range(self.args.rounds):
                for pname in self.b.rotate(names, rnd):
                    p = running[pname]
                    for case, method, _ in self.CASES:
                        mark = self.upstream.mark()
                        with self.h.Meter(p) as m:
                            if method == "HEAD":
                                rps, n, errors = ab_head(urls[pname][case], 32, d, accept)
                            else:
                                rps, n, errors = self.b.wrk(urls[pname][case], 32, d,
                                                            accept=accept)
                        if errors:
                            self.b.fail("%s oci-endpoints %s: %d errors of %d requests"
                                        % (pname, case, errors, n))
                        up = self.upstream.since(mark)
                        self.res.add("oci-endpoints", pname, case, rps, m, errors=errors,
                                     extra={"requests": n, "upstream": up.summary()})
                        self.h.log("oci-endpoints round %d %-14s %-22s %9.0f req/s  "
                                   "cpu/1000 %.3f s  upstream %d requests %s"
                                   % (rnd + 1, pname, case, rps, m.cpu_s / max(n, 1) * 1000,
                                      up.total, up.kinds()))
        finally:
            for p in running.values():
                self.b.done(p)

    def _endpoint_bytes(self, p, img, layer, accept, files):
        """Requests each endpoint of p twice (a miss, then a hit), checks
        the answers and keeps the first party's bytes in files. The layer
        is fetched whole first: its HEAD is one of a blob the party holds."""
        name = img["name"]
        want_tags = sorted(self.upstream.tags[name])
        if not isinstance(p, Direct):
            self.warm_blob(p, p.url(name, "blobs", layer), dict(img["layers"])[layer])
        for case, method, what in self.CASES:
            url = {"manifest-by-digest": p.url(name, "manifests", img["digest"]),
                   "manifest-by-tag": p.url(name, "manifests", img["tag"]),
                   "manifest-by-tag-HEAD": p.url(name, "manifests", img["tag"]),
                   "tags-list": p.url(name, "tags", "list"),
                   "blob-HEAD": p.url(name, "blobs", layer),
                   "v2": "http://%s/v2/" % p.host}[case]
            for _ in range(2):
                status, hdrs, body = get(url, method, {"Accept": accept})
            ok = status == 200
            if ok and case.startswith("manifest"):
                ok = hdrs.get("docker-content-digest") == img["digest"]
                if method == "GET":
                    ok = ok and "sha256:" + hashlib.sha256(body).hexdigest() == img["digest"]
            if ok and case == "tags-list":
                try:
                    ok = sorted(json.loads(body)["tags"]) == want_tags
                except (ValueError, KeyError, TypeError):
                    ok = False
            if not ok:
                raise self.h.Failure("%s: %s %s: %s %r" % (p.name, what, url, status,
                                                           body[:200]))
            if method == "GET":
                files.setdefault(case, body)

    # -- oci-burst

    def w_burst(self):
        name = TAGS_IMAGE
        img = self.images[name]
        ttl = 1
        self.workload(
            "oci-burst", "%d concurrent requests for a tag list and a stale tag" % BURST,
            "upstream requests", "lower", "direct",
            ["tags-list-cold", "tags-list-stale", "tag-stale"],
            "%d requests released at the same moment, each on a connection of its "
            "own, against a party that just started: GET of the %s tags/list (cold), "
            "the same again once it is stale (%d s later; larder runs with cache_ttl = "
            "%d s for this), then a GET of the manifest by tag once, and %d GETs of it "
            "when it is stale. Each burst starts just after a whole second (larder "
            "keeps fetch times in whole seconds: a 1 s freshness ends on a second's "
            "boundary). The figure is the requests the burst cost the upstream (its "
            "access log); every answer is checked. direct is what the clients send."
            % (BURST, name, ttl + 1, ttl, BURST))
        want_tags = sorted(self.upstream.tags[name])
        accept = {"Accept": ociup.ACCEPT_ALL}
        names = self.present(["direct", "distribution", "larder-nginx"])

        def tags_ok(r):
            try:
                return r[0] == 200 and sorted(json.loads(r[2])["tags"]) == want_tags
            except (ValueError, KeyError, TypeError):
                return False

        def tag_ok(r):
            return r[0] == 200 and r[1].get("docker-content-digest") == img["digest"]

        for rnd in range(self.args.rounds):
            for pname in self.b.rotate(names, rnd):
                p = self.fresh(pname, cache_ttl=ttl)
                try:
                    tags_url = p.url(name, "tags", "list")
                    tag_url = p.url(name, "manifests", img["tag"])
                    for case, url, ok, path in (
                            ("tags-list-cold", tags_url, tags_ok, r"/tags/list$"),
                            ("tags-list-stale", tags_url, tags_ok, r"/tags/list$"),
                            ("tag-stale", tag_url, tag_ok, r"/manifests/")):
                        if case == "tag-stale":
                            r = get(tag_url, headers=accept)
                            if not tag_ok(r):
                                raise self.h.Failure("%s: %s: %s" % (pname, tag_url, r[0]))
                        if case != "tags-list-cold" and pname != "direct":
                            time.sleep(ttl + 1)     # (direct has nothing to go stale)
                        _just_after_a_second()
                        mark = self.upstream.mark()
                        wall, rows = burst(url, BURST, headers=accept)
                        up = self.upstream.since(mark)
                        n = up.matching(path)
                        bad = sum(1 for r in rows if not ok(r))
                        if bad:
                            self.b.fail("%s oci-burst %s: %d of %d answers wrong, e.g. %r"
                                        % (pname, case, bad, BURST,
                                           [r for r in rows if not ok(r)][0][:1]))
                        self.res.add("oci-burst", pname, case, n, errors=bad,
                                     extra={"wall_s": wall, "upstream": up.summary(),
                                            "statuses": sorted(collections.Counter(
                                                r[0] for r in rows).items(),
                                                key=lambda kv: str(kv[0]))})
                        self.h.log("oci-burst round %d %-14s %-15s %2d upstream requests "
                                   "(%s), %.0f ms" % (rnd + 1, pname, case, n, up.kinds(),
                                                      wall * 1000))
                finally:
                    self.b.done(p)
        for pname in names:
            for case in ("tags-list-cold", "tags-list-stale", "tag-stale"):
                ex = self.res.extras("oci-burst", pname, case)
                if ex:
                    self.res.add("oci-burst", pname, case, None, note="all %d answered in "
                                 "%.0f ms" % (BURST, statistics.median(e["wall_s"]
                                                                     for e in ex) * 1000))

    # -- oci-push

    def push_layer(self):
        """The layer file of oci-push (incompressible bytes, made once per
        run): (path, digest, size)."""
        size = int(self.args.push_mb * MB)
        path = os.path.join(self.work, "push-layer")
        if not os.path.exists(path):
            h = hashlib.sha256()
            with open(path, "wb") as f:
                left = size
                while left:
                    chunk = os.urandom(min(left, PUSH_BUFFER))
                    h.update(chunk)
                    f.write(chunk)
                    left -= len(chunk)
            with open(path + ".sha256", "w") as f:
                f.write(h.hexdigest())
        with open(path + ".sha256") as f:
            return path, "sha256:" + f.read().strip(), size

    def w_push(self):
        path, digest, size = self.push_layer()
        self.workload(
            "oci-push", "push of a %.3g MB single-layer image" % (size / MB), "MB/s",
            "higher", "distribution", ["push"],
            "An image of one %.3g MB layer of incompressible bytes pushed as a client "
            "does, from Python on one kept-alive connection: POST of an upload session, "
            "PUT ?digest= of the layer streamed from its file %d MiB at a time, the "
            "config the same way, PUT of the manifest by tag; MB/s of layer over the "
            "whole push. larder takes it into a hosted registry behind the shipped "
            "nginx config, docker-registry (distribution, no proxy, its filesystem "
            "storage) as it comes; a new tag each round, the same layer." % (
                size / MB, PUSH_BUFFER >> 20))
        self.workload(
            "oci-push-pull", "the pushed %.3g MB layer, read back" % (size / MB), "MB/s",
            "higher", "nginx-static", ["1-reader"],
            "The layer oci-push pushed, GET /v2/…/blobs/sha256:… by one curl reading it "
            "%s over one connection (--layer-reps) from larder behind nginx "
            "(X-Accel-Redirect), against nginx sending the same bytes as a static file; "
            "each copy read once untimed first; MB/s of all the bytes." % (
                "once" if self.args.layer_reps == 1 else "%d times" % self.args.layer_reps))
        names = self.present(["larder-nginx", "distribution"])
        running = {}
        try:
            for pname in names:
                p = self.parties[pname]
                if pname == "larder-nginx":
                    p.hosted = True
                else:
                    p.proxy = False
                running[pname] = self.fresh(pname)
            for rnd in range(self.args.rounds):
                for pname in self.b.rotate(names, rnd):
                    p = running[pname]
                    repo = (PUSH_REGISTRY + "/" if pname == "larder-nginx" else "") + PUSH_REPO
                    auth = {}
                    if getattr(p, "token", None):
                        auth = {"Authorization": "Basic " + base64.b64encode(
                            ("__token__:" + p.token).encode()).decode()}
                    with self.h.Meter(p) as m:
                        wall, err = push_image(p.host, repo, "r%d" % rnd, path, digest,
                                               size, auth)
                    if err:
                        self.b.fail("%s oci-push round %d: %s" % (pname, rnd + 1, err))
                        self.res.add("oci-push", pname, "push", None, m, errors=1)
                        continue
                    rate = size / MB / wall
                    self.res.add("oci-push", pname, "push", rate, m,
                                 extra={"wall_s": wall, "bytes": size,
                                        "worker_peak_mib": m.worker_peak_mib})
                    self.h.log("oci-push round %d %-14s %8.1f MB/s (%.2f s)  cpu %.2f s  "
                               "largest worker %.1f MiB" % (rnd + 1, pname, rate, wall,
                                                           m.cpu_s, m.worker_peak_mib))
            if "larder-nginx" in running and self.present(["nginx-static"]):
                self.push_pull(running["larder-nginx"], path, digest, size)
        finally:
            for p in running.values():
                self.b.done(p)

    def push_pull(self, p, path, digest, size):
        """oci-push-pull: the pushed layer from larder and from nginx static."""
        ref = self.fresh("nginx-static")
        reps = self.args.layer_reps
        try:
            urls = {"larder-nginx": "http://%s/v2/%s/%s/blobs/%s" % (
                        p.host, PUSH_REGISTRY, PUSH_REPO, digest),
                    "nginx-static": ref.put("v2/%s/blobs/%s" % (PUSH_REPO, digest), src=path)}
            # both copies written out now: larder's was just pushed (five
            # times), and its writeback must not land in a figure
            os.sync()
            parties = {"larder-nginx": p, "nginx-static": ref}
            for pname in urls:
                self.h.curl_readers([urls[pname]])
            for rnd in range(self.args.rounds):
                for pname in self.b.rotate(list(urls), rnd):
                    with self.h.Meter(parties[pname]) as m:
                        wall, rd = self.h.curl_readers([urls[pname]], reps=reps)
                    bad = sum(1 for x in rd if x[0] != 200 or x[1] != reps * size)
                    if bad:
                        self.b.fail("%s oci-push-pull: %r" % (pname, rd))
                    rate = reps * size / MB / wall
                    self.res.add("oci-push-pull", pname, "1-reader", rate, m, errors=bad,
                                 extra={"wall_s": wall, "bytes": reps * size})
                    self.h.log("oci-push-pull round %d %-14s %8.1f MB/s  cpu %.2f s"
                               % (rnd + 1, pname, rate, m.cpu_s))
        finally:
            self.b.done(ref)

    # -- the report

    def goals(self):
        r = self.res
        g = []
        why_skipped = self.reason

        def goal(text, value, target, ok, why=None):
            if value is None:
                why = why_skipped or why or "not measured"
            g.append({"text": text, "value": self.h._r(value, 3) if value is not None
                      else None, "target": target,
                      "met": ok if value is not None else None, "why": why,
                      "section": SECTION})

        def ratio(w, a, b, case):
            x, y = r.get(w, a, case), r.get(w, b, case)
            return x / y if x is not None and y else None

        def fig(w, party, case, unit=""):
            v = r.get(w, party, case)
            if v is None:
                return "-"
            text = "{:,.0f}".format(v) if v >= 1000 else "%.3g" % v
            return text + (" " + unit if unit else "")

        v = ratio("oci-pull", "larder-nginx", "distribution", "warm-light")
        goal("Warm pull of the images, light client: larder behind nginx / distribution",
             v, "<= 0.25", v is not None and v <= 0.25,
             "larder %s, distribution %s, the upstream itself across the WAN %s" % (
                 fig("oci-pull", "larder-nginx", "warm-light", "s"),
                 fig("oci-pull", "distribution", "warm-light", "s"),
                 fig("oci-pull", "direct", "warm-light", "s")))
        v = ratio("oci-pull", "larder-nginx", "distribution", "warm")
        goal("Warm pull of the images, skopeo: larder behind nginx / distribution", v,
             "<= 0.25", v is not None and v <= 0.25,
             "larder %s, distribution %s; skopeo copying them from local disk, no "
             "registry: %s" % (fig("oci-pull", "larder-nginx", "warm", "s"),
                               fig("oci-pull", "distribution", "warm", "s"),
                               fig("oci-pull", "oci-layout", "warm", "s")))
        v = ratio("oci-pull", "larder-nginx", "direct", "cold")
        dv = ratio("oci-pull", "distribution", "direct", "cold")
        goal("Cold pull of the images: larder behind nginx / direct", v, "<= 1.05",
             v is not None and v <= 1.05,
             "distribution / direct: %s" % ("%.3g" % dv if dv is not None else "-"))
        size = self.layer()[2] if self.images else 30 * MB
        for case, target in (("1-reader", 0.9), ("8-readers", 0.95)):
            v = ratio("oci-layer", "larder-nginx", "nginx-static", case)
            goal("Warm %.3g MB layer, %s: larder behind nginx / nginx static"
                 % (size / MB, case.replace("-", " ")), v, ">= %g" % target,
                 v is not None and v >= target,
                 "larder %s, nginx static %s" % (
                     fig("oci-layer", "larder-nginx", case, "MB/s"),
                     fig("oci-layer", "nginx-static", case, "MB/s")))
        cold = "%d-clients-cold" % FLEET
        fleet = [e["wall_s"] for e in r.extras("oci-fleet", "larder-nginx", cold)]
        one = [e["wall_s"] for e in r.extras("oci-fleet", "direct", "1-client-cold")]
        ex = r.extras("oci-fleet", "larder-nginx", cold)
        blobs = max((e["max_gets_per_blob"] for e in ex), default=None)
        mans = max((e["max_requests_per_manifest"] for e in ex), default=None)
        v = statistics.median(fleet) / statistics.median(one) if fleet and one else None
        goal("%d cold pulls at once through larder: wall / one direct cold pull" % FLEET,
             v, "<= 1.3, 1 upstream request per blob and manifest",
             v is not None and v <= 1.3 and blobs == 1 and mans == 1,
             "most upstream GETs of one blob: %s, requests of one manifest: %s; larder warm "
             "%s; the same %d copies from local disk, no registry: %s; distribution cold %s"
             % (blobs, mans, fig("oci-fleet", "larder-nginx", "%d-clients-warm" % FLEET, "s"),
                FLEET, fig("oci-fleet", "oci-layout", cold, "s"),
                fig("oci-fleet", "distribution", cold, "s")))
        v = ratio("oci-endpoints", "larder-nginx", "nginx-static", "manifest-by-digest")
        goal("Cached manifest by digest, 32 connections: larder behind nginx / nginx "
             "static", v, ">= 0.8", v is not None and v >= 0.8,
             "larder %s, nginx static %s" % (
                 fig("oci-endpoints", "larder-nginx", "manifest-by-digest", "req/s"),
                 fig("oci-endpoints", "nginx-static", "manifest-by-digest", "req/s")))
        for case, what in (("blob-HEAD", "Blob HEAD"), ("manifest-by-tag", "Manifest by tag")):
            v = ratio("oci-endpoints", "larder-nginx", "nginx-static", case)
            goal("%s, 32 connections: larder behind nginx / nginx static" % what, v,
                 ">= 0.5", v is not None and v >= 0.5,
                 "larder %s, nginx static %s" % (
                     fig("oci-endpoints", "larder-nginx", case, "req/s"),
                     fig("oci-endpoints", "nginx-static", case, "req/s")))
        for cases, what in ((("tags-list-cold", "tags-list-stale"), "tags/list requests"),
                            (("tag-stale",), "GETs of a stale tag")):
            vals = [x for c in cases
                    for x in r.samples.get(("oci-burst", "larder-nginx", c),
                                           {}).get("values", [])]
            v = max(vals) if vals else None
            goal("%d concurrent %s through larder: upstream requests" % (BURST, what), v,
                 "1", v == 1,
                 "; ".join("%s: distribution %s" % (c, fig("oci-burst", "distribution", c))
                           for c in cases))
        v = ratio("oci-push", "larder-nginx", "distribution", "push")
        mb = self.args.push_mb
        goal("Push of a %.3g MB single-layer image: larder behind nginx / docker-registry"
             % mb, v, ">= 0.8", v is not None and v >= 0.8,
             "larder %s, docker-registry %s" % (fig("oci-push", "larder-nginx", "push", "MB/s"),
                                                fig("oci-push", "distribution", "push", "MB/s")))
        peaks = [e["worker_peak_mib"] for e in r.extras("oci-push", "larder-nginx", "push")]
        v = max(peaks) if peaks else None
        goal("Largest larder worker's RSS during the push (MiB)", v, "<= 16",
             v is not None and v <= 16)
        v = ratio("oci-push-pull", "larder-nginx", "nginx-static", "1-reader")
        goal("The pushed %.3g MB layer, 1 reader: larder behind nginx / nginx static" % mb,
             v, ">= 0.9", v is not None and v >= 0.9,
             "larder %s, nginx static %s" % (
                 fig("oci-push-pull", "larder-nginx", "1-reader", "MB/s"),
                 fig("oci-push-pull", "nginx-static", "1-reader", "MB/s")))
        return g

    def info(self):
        """The report's "oci" block."""
        out = {"skipped": self.reason, "workloads": list(self.ran)}
        if self.images:
            out["images"] = [{"name": i["name"], "tag": i["tag"], "base": i["base"],
                              "layers": len(i["layers"]),
                              "bytes": sum(i["blobs"].values()),
                              "largest_layer": max(n for _, n in i["layers"])}
                             for i in (self.images[n] for n, _, _ in IMAGES)]
            out["unique_bytes"] = self.unique_bytes()
        if self.upstream is not None:
            out["upstream"] = self.upstream.version
            out["wan"] = self.upstream.describe()
            out["tags"] = {k: len(v) for k, v in self.upstream.tags.items()}
        if self.skopeo is not None:
            out["client"] = self.skopeo.version
        return out

    def party_infos(self):
        return [p.info() for p in self.parties.values()]
