"""Real container clients against larder behind nginx (docs/oci.md,
"Clients" and "What users trip on"): docker (dockerd from Debian's
docker.io, started here once per module), containerd's ctr and podman,
pulling through larder as a Docker Hub mirror and, for docker, pushing to
a hosted registry; and the 404s larder remembers (negative_ttl), counted
at the upstream.

One larder for the module: [registry "hub"] (default = yes) and "hub2"
cache Debian's docker-registry through an ociup.Relay that counts what
larder asks upstream; "team" is hosted. The images are built by
oci_images.py (no Docker Hub involved) and pushed to the upstream as
library/NAME, the names docker and containerd send for Docker Hub images.

Every client that could fall back to Docker Hub (dockerd, ctr, podman)
runs in a mount namespace of its own whose /etc/hosts points Docker Hub's
names at 127.0.0.1, where nothing listens on 443: a fallback fails here,
at once, naming registry-1.docker.io, and no request leaves the machine.

Each test skips, saying what to install, when its client is missing
(contrib/deps.sh test installs them all).
"""

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

import ociup
import stack as stackmod
from oci_images import KB, build_image, digest_of
from stack import clean_env, http

# real clients: where a request shape larder has not seen would break
# memory, ASan shows it
pytestmark = pytest.mark.one_build("asan")

DOCKERD = shutil.which("dockerd") or "/usr/sbin/dockerd"
# docker.io's client, the daemon's own version, before any other on PATH
DOCKER = "/usr/bin/docker" if os.access("/usr/bin/docker", os.X_OK) else shutil.which("docker")
CONTAINERD = shutil.which("containerd")
CTR = shutil.which("ctr")
PODMAN = shutil.which("podman")
UNSHARE = shutil.which("unshare")

# Docker Hub's names, as dockerd, containerd and podman know them.
HUB_NAMES = ("registry-1.docker.io", "index.docker.io", "auth.docker.io", "docker.io",
             "production.cloudflare.docker.com")
# larder by a name, not a loopback address (clients treat those as plain
# http by themselves); the guard's /etc/hosts points it at 127.0.0.1
LARDER_NAME = "larder.test"
NEG_TTL = 5          # negative_ttl of the module's larder, seconds
TOKEN_RE = re.compile(r"^lt_[0-9a-f]{16}_[0-9a-f]{64}$")
# the upstream's repositories (library/NAME): image name -> seed
UPSTREAM = {"dkmirror": "dk-mirror", "ctrimg": "ctr-img", "podimg": "pod-img"}
CTR_TAGS = ["c%d" % i for i in range(1, 9)]


def _missing():
    why = ociup.missing_reason() or stackmod.missing_reason()
    if why:
        return why
    if not UNSHARE or os.geteuid() != 0:
        return "the clients run as root in a mount namespace of their own (unshare)"
    return None


def guarded(cmd, hosts):
    """cmd in a new mount namespace whose /etc/hosts is the file hosts."""
    return [UNSHARE, "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
            hosts] + list(cmd)


def run(cmd, env=None, input=None, timeout=120):
    """Runs cmd; returns (rc, stdout, stderr) as text."""
    try:
        p = subprocess.run(cmd, input=input, capture_output=True, env=env or clean_env(),
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return -1, (e.stdout or b"").decode(errors="replace"), \
            "timed out after %s s: %s" % (timeout, (e.stderr or b"").decode(errors="replace"))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


class Env:
    """The module's upstream (reg), images {name: Image}, larder stacks
    (st, an OciStack named "hub" with "hub2" and the hosted "team";
    mirror, one with "hub" alone, what docker mirrors) and the hosts file
    of the guard."""

    def __init__(self, reg, imgs, st, mirror, hosts, workdir):
        self.reg = reg
        self.imgs = imgs
        self.st = st
        self.mirror = mirror
        self.hosts = hosts
        self.dir = workdir

    @property
    def host(self):
        return self.st.host

    def token(self, *args):
        p = subprocess.run([stackmod.larder_bin(), "token", "add"] + list(args) +
                           ["-c", self.st.larder.conf], capture_output=True,
                           env=clean_env(), timeout=30)
        assert p.returncode == 0, p.stderr.decode()
        tok = p.stdout.decode().strip()
        assert TOKEN_RE.match(tok), tok
        return tok

    def larder_saw(self, pattern):
        """Lines of larder's log matching the regex pattern."""
        rx = re.compile(pattern)
        return [l for l in self.st.larder.log_lines() if rx.search(l)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    why = _missing()
    if why:
        pytest.skip(why)
    d = str(tmp_path_factory.mktemp("oci-clients"))
    hosts = os.path.join(d, "hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n")
        f.write("".join("127.0.0.1 %s\n" % n for n in HUB_NAMES + (LARDER_NAME,)))
    imgs = {name: build_image(os.path.join(d, "img-" + name), [2 * KB, 40 * KB], seed=seed,
                              tag="1.0") for name, seed in UPSTREAM.items()}
    reg = ociup.Registry(os.path.join(d, "registry")).start()
    st = mirror = None
    try:
        for name, img in imgs.items():
            ociup.push(img.layout, "1.0", "%s/library/%s:1.0" % (reg.host, name))
        client = reg.client()
        for t in CTR_TAGS:
            client.put_manifest("library/ctrimg", t, imgs["ctrimg"].manifest,
                                imgs["ctrimg"].media_type)
        st = ociup.OciStack(os.path.join(d, "stack"), reg.port, name="hub", default=True,
                            larder_extra={"negative_ttl": NEG_TTL})
        st.extra_text = "\n" + ociup.registry_section(
            "hub2", st.relay.base + "/", default=False) + '\n[registry "team"]\ntype = hosted\n'
        st.start()
        mirror = ociup.OciStack(os.path.join(d, "mirror"), reg.port, name="hub",
                                default=True).start()
        yield Env(reg, imgs, st, mirror, hosts, d)
    finally:
        stackmod.stop_all(mirror, st)
        reg.stop()


# ================================================================ docker

DOCKERD_CONF = {
    "storage-driver": "vfs",
    "bridge": "none",
    "iptables": False,
    "ip6tables": False,
}


class Dockerd:
    """dockerd as root with a data root, exec root, pid file, socket and
    --config-file of its own (vfs, no bridge, no iptables; larder as
    insecure registry and mirror), in the guard's namespace. Sockets go
    under a short directory in /tmp (a unix socket path has 108 bytes)."""

    def __init__(self, workdir, hosts, conf):
        self.dir = workdir
        self.short = tempfile.mkdtemp(prefix="d23-", dir="/tmp")
        self.sock = os.path.join(self.short, "docker.sock")
        self.log = os.path.join(workdir, "dockerd.log")
        self.conf = os.path.join(workdir, "daemon.json")
        os.makedirs(workdir, exist_ok=True)
        self.hosts = hosts
        self.client_dir = os.path.join(workdir, "client")
        os.makedirs(self.client_dir, exist_ok=True)
        with open(self.conf, "w") as f:
            json.dump(conf, f)
        self.proc = None

    def cmd(self):
        return guarded([DOCKERD, "--config-file", self.conf,
                        "--data-root", os.path.join(self.dir, "data"),
                        "--exec-root", os.path.join(self.short, "x"),
                        "--pidfile", os.path.join(self.short, "docker.pid"),
                        "-H", "unix://" + self.sock], self.hosts)

    def ping(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(self.sock)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b"\r\n\r\nOK" in s.recv(4096)
        except OSError:
            return False
        finally:
            s.close()

    def start(self, timeout=240):
        out = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen(self.cmd(), stdout=out, stderr=out,
                                         stdin=subprocess.DEVNULL, env=clean_env(),
                                         start_new_session=True)
        finally:
            out.close()
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("dockerd did not come up:\n" + self.log_text()[-3000:])
            time.sleep(0.5)
        return self

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def docker(self, *args, input=None, timeout=180):
        """`docker ARGS` against this daemon, with a config dir of its own
        (where docker login keeps the token). Returns (rc, out, err)."""
        env = clean_env({"DOCKER_HOST": "unix://" + self.sock,
                         "DOCKER_CONFIG": self.client_dir, "HOME": self.client_dir})
        return run([DOCKER] + list(args), env=env,
                   input=input.encode() if input else None, timeout=timeout)

    def ok(self, *args, **kw):
        rc, out, err = self.docker(*args, **kw)
        assert rc == 0, ("docker", args, out[-2000:], err[-2000:])
        return out

    def stop(self):
        if self.proc is not None:
            stackmod._stop_process(self.proc, grace=30)
            self.proc = None
        shutil.rmtree(self.short, ignore_errors=True)


@pytest.fixture(scope="module")
def dockerd(env):
    if not os.access(DOCKERD, os.X_OK) or not DOCKER:
        pytest.skip("dockerd is not installed (apt-get install docker.io)")
    d = start_dockerd(os.path.join(env.dir, "dockerd"), env, env.mirror)
    yield d
    d.stop()


def start_dockerd(workdir, env, mirror):
    """A Dockerd whose registry-mirrors is http://MIRROR (a stack)."""
    conf = dict(DOCKERD_CONF)
    conf["insecure-registries"] = [env.host, mirror.host]
    conf["registry-mirrors"] = ["http://" + mirror.host]
    d = Dockerd(workdir, env.hosts, conf)
    try:
        d.start()
    except RuntimeError as e:
        pytest.fail(str(e))
    return d


def test_docker_push_pull(env, dockerd, tmp_path):
    """docker login with a registry token, docker load of an image skopeo
    made from an OCI layout, docker push to the hosted registry, docker
    rmi, docker pull back: the same image ID (the config's digest)."""
    tok = env.token("--registry", "team", "--actions", "pull,push")
    ref = "%s/team/dk/app:1" % env.host
    img = build_image(str(tmp_path / "img"), [8 * KB, 96 * KB], seed="dk-push", tag="1")
    archive = str(tmp_path / "img.tar")
    r = ociup.skopeo("copy", "oci:%s:1" % img.layout, "docker-archive:%s:%s" % (archive, ref))
    assert r.ok, r
    dockerd.ok("load", "-i", archive)
    iid = dockerd.ok("image", "inspect", "-f", "{{.Id}}", ref).strip()
    assert iid == img.config_digest
    # not logged in: larder's 401, and nothing pushed
    rc, out, err = dockerd.docker("push", ref)
    assert rc != 0, out
    auth = {"Authorization": "Basic " + base64.b64encode(("u:" + tok).encode()).decode()}
    assert http(env.st.base + "/v2/team/dk/app/manifests/1", headers=auth).status == 404
    dockerd.ok("login", env.host, "-u", "__token__", "--password-stdin", input=tok)
    dockerd.ok("push", ref)
    r = http(env.st.base + "/v2/team/dk/app/tags/list", headers=auth)
    assert r.status == 200 and json.loads(r.body)["tags"] == ["1"], r.body
    dockerd.ok("rmi", ref)
    rc, _, _ = dockerd.docker("image", "inspect", ref)
    assert rc != 0
    dockerd.ok("pull", ref)
    assert dockerd.ok("image", "inspect", "-f", "{{.Id}}", ref).strip() == iid
    # the manifest docker pushed is the one it pulled
    digests = json.loads(dockerd.ok("image", "inspect", "-f", "{{json .RepoDigests}}", ref))
    r = http(env.st.base + "/v2/team/dk/app/manifests/1",
             headers=dict(auth, Accept="application/vnd.docker.distribution.manifest.v2+json"))
    assert r.status == 200
    assert "%s/team/dk/app@%s" % (env.host, digest_of(r.body)) in digests, digests


def test_docker_mirror(env, dockerd):
    """docker pull of a Docker Hub name with larder as registry-mirrors: it
    arrives through larder (bare /v2/library/NAME, the default registry)
    with the upstream's config and manifest digests, each blob asked of
    the upstream once. A name larder's upstream lacks: larder says 404,
    docker falls back to Docker Hub and shows Docker Hub's error."""
    img = env.imgs["dkmirror"]
    m = env.mirror
    dockerd.ok("pull", "library/dkmirror:1.0")
    assert dockerd.ok("image", "inspect", "-f", "{{.Id}}", "dkmirror:1.0").strip() == \
        img.config_digest
    digests = json.loads(dockerd.ok("image", "inspect", "-f", "{{json .RepoDigests}}",
                                    "dkmirror:1.0"))
    assert "dkmirror@" + img.digest in digests, digests
    assert m.larder.find_log("HEAD", "/v2/library/dkmirror/manifests/1.0", 200)
    for d in img.blobs:
        assert m.relay.count("GET", "^/v2/library/dkmirror/blobs/%s$" % d) == 1, d
    # a 404 from the mirror: docker asks Docker Hub next
    rc, out, err = dockerd.docker("pull", "library/nothere:1.0", timeout=120)
    assert rc != 0
    assert "registry-1.docker.io" in err, err
    assert m.larder.find_log("HEAD", "/v2/library/nothere/manifests/1.0", 404)
    assert m.relay.count(None, "^/v2/library/nothere/manifests/1\\.0$") == 1


def test_docker_mirror_with_hosted(env, dockerd):
    """docker pull through a larder that also has a hosted registry: /v2/
    answers 401 with a Bearer challenge, dockerd (no credentials for a
    mirror) asks larder's token endpoint anonymously and pulls with the
    anonymous token. (With a Basic challenge it logged 'Head
    "http://HOST/v2/library/dkmirror/manifests/1.0": no basic auth
    credentials' and went on to Docker Hub.)"""
    img = env.imgs["dkmirror"]
    d = start_dockerd(os.path.join(env.dir, "dockerd-hosted"), env, env.st)
    try:
        rc, out, err = d.docker("pull", "library/dkmirror:1.0")
        assert rc == 0, err
        assert d.ok("image", "inspect", "-f", "{{.Id}}", "dkmirror:1.0").strip() == \
            img.config_digest
        assert env.st.larder.find_log("GET", "/v2/token", 200)
        assert env.st.larder.find_log("HEAD", "/v2/library/dkmirror/manifests/1.0", 200)
    finally:
        d.stop()


def test_docker_mirror_with_path(env, tmp_path):
    """registry-mirrors takes a host, not a path: dockerd refuses
    "http://HOST/hub" at start, so Docker Hub must be larder's default
    registry; and a mirror needs its scheme."""
    if not os.access(DOCKERD, os.X_OK):
        pytest.skip("dockerd is not installed (apt-get install docker.io)")
    for mirror, why in (("http://%s/hub" % env.host, "path"),
                        (env.host, "scheme")):
        conf = dict(DOCKERD_CONF, **{"registry-mirrors": [mirror]})
        d = Dockerd(str(tmp_path / why), env.hosts, conf)
        try:
            p = subprocess.run(d.cmd(), capture_output=True, env=clean_env(), timeout=60)
        finally:
            d.stop()
        err = (p.stdout + p.stderr).decode(errors="replace")
        assert p.returncode != 0, err
        assert "invalid mirror" in err, err


# ================================================================ containerd

CONTAINERD_CONF = """\
version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.overlayfs",
  "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
"""


class Containerd:
    """containerd with its own root, state and socket; ctr against it."""

    def __init__(self, workdir):
        self.dir = workdir
        self.short = tempfile.mkdtemp(prefix="c23-", dir="/tmp")
        self.sock = os.path.join(self.short, "c.sock")
        self.root = os.path.join(workdir, "root")
        self.conf = os.path.join(workdir, "config.toml")
        self.log = os.path.join(workdir, "containerd.log")
        os.makedirs(workdir, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(CONTAINERD_CONF.format(root=self.root, state=os.path.join(self.short, "s"),
                                           sock=self.sock))
        self.proc = None

    def start(self, timeout=60):
        out = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen([CONTAINERD, "--config", self.conf], stdout=out,
                                         stderr=out, stdin=subprocess.DEVNULL,
                                         env=clean_env(), start_new_session=True)
        finally:
            out.close()
        deadline = time.monotonic() + timeout
        while run([CTR, "--address", self.sock, "version"], timeout=10)[0] != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("containerd did not come up:\n" + open(self.log).read()[-3000:])
            time.sleep(0.2)
        return self

    def ctr(self, *args, hosts=None, timeout=120):
        cmd = [CTR, "--address", self.sock, "--namespace", "larder-test"] + list(args)
        return run(guarded(cmd, hosts) if hosts else cmd, timeout=timeout)

    def blob(self, digest):
        p = os.path.join(self.root, "io.containerd.content.v1.content", "blobs",
                         *digest.split(":", 1))
        with open(p, "rb") as f:
            return f.read()

    def stop(self):
        if self.proc is not None:
            stackmod._stop_process(self.proc, sig=signal.SIGTERM, grace=10)
            self.proc = None
        shutil.rmtree(self.short, ignore_errors=True)


@pytest.fixture(scope="module")
def containerd(env):
    if not CONTAINERD or not CTR:
        pytest.skip("containerd is not installed (apt-get install containerd)")
    c = Containerd(os.path.join(env.dir, "containerd"))
    try:
        c.start()
    except RuntimeError as e:
        pytest.fail(str(e))
    yield c
    c.stop()


def hosts_dir(base, dirname, text):
    """base/dirname/hosts.toml holding text; returns base."""
    os.makedirs(os.path.join(base, dirname), exist_ok=True)
    with open(os.path.join(base, dirname, "hosts.toml"), "w") as f:
        f.write(text)
    return base


def mirror_toml(key, override_path, server="https://registry-1.docker.io"):
    return ('server = "%s"\n\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n%s'
            % (server, key, "  override_path = true\n" if override_path else ""))


def test_ctr_pull(env, containerd, tmp_path):
    """ctr images pull --hosts-dir of a Docker Hub name through larder,
    byte for byte; and what users trip on, one tag each (so each is its
    own request in larder's log): the [host."..."] key needs http:// for
    plain http; a key with /v2/hub needs override_path (without it
    containerd asks /v2/hub/v2/...), a key without a path needs none;
    the directory is named host:port; a key that fails falls back to
    `server` (here Docker Hub, whose error the user sees)."""
    img = env.imgs["ctrimg"]
    h = env.host

    def pull(ref, hdir, plain=True):
        args = ["images", "pull", "--snapshotter", "native"]
        if hdir:
            args += ["--hosts-dir", hdir]
        if plain:
            args.append("--plain-http")
        return containerd.ctr(*(args + [ref]), hosts=env.hosts)

    def asked(path):
        return env.larder_saw(r" %s(?:[\s?]|$)" % re.escape(path))

    # the docs' hosts.toml, with http://: through /v2/hub, byte for byte
    d = hosts_dir(str(tmp_path / "ok"), "docker.io", mirror_toml("http://%s/v2/hub" % h, True))
    rc, out, err = pull("docker.io/library/ctrimg:1.0", d)
    assert rc == 0, err
    assert asked("/v2/hub/library/ctrimg/manifests/1.0")
    assert containerd.blob(img.digest) == img.manifest
    assert containerd.blob(img.config_digest) == img.config
    for layer in img.layers:
        assert containerd.blob(layer.digest) == layer.data
    # the same without --plain-http: the scheme in the key is what counts
    rc, out, err = pull("docker.io/library/ctrimg:c1", d, plain=False)
    assert rc == 0, err
    assert asked("/v2/hub/library/ctrimg/manifests/c1")
    # no http:// in the key: https, which larder here does not speak,
    # then Docker Hub (server), --plain-http or not
    d = hosts_dir(str(tmp_path / "nohttp"), "docker.io", mirror_toml("%s/v2/hub" % h, True))
    rc, out, err = pull("docker.io/library/ctrimg:c2", d)
    assert rc != 0 and "registry-1.docker.io" in err, err
    assert not asked("/v2/hub/library/ctrimg/manifests/c2")
    # /v2/hub without override_path: containerd adds /v2
    d = hosts_dir(str(tmp_path / "nooverride"), "docker.io",
                  mirror_toml("http://%s/v2/hub" % h, False))
    rc, out, err = pull("docker.io/library/ctrimg:c3", d)
    assert rc != 0 and "registry-1.docker.io" in err, err
    assert asked("/v2/hub/v2/library/ctrimg/manifests/c3")
    # no path, no override_path: bare names, the default registry
    d = hosts_dir(str(tmp_path / "bare"), "docker.io", mirror_toml("http://%s" % h, False))
    rc, out, err = pull("docker.io/library/ctrimg:c4", d)
    assert rc == 0, err
    assert asked("/v2/library/ctrimg/manifests/c4")
    # larder by a name of its own (not loopback, which ctr speaks plain
    # http to anyway): without a hosts directory, https unless
    # --plain-http; the directory is named host:port (or host_port_), and
    # without the port it is not read
    named = "%s:%d" % (LARDER_NAME, env.st.nginx.port)
    ref = named + "/hub/library/ctrimg:"
    rc, out, err = pull(ref + "c5", None, plain=False)
    assert rc != 0 and "HTTP response to HTTPS client" in err, err
    rc, out, err = pull(ref + "c5", None)
    assert rc == 0, err
    assert asked("/v2/hub/library/ctrimg/manifests/c5")
    text = mirror_toml("http://" + named, False, server="http://" + named)
    for dirname, tag, works in ((LARDER_NAME, "c6", False), (named, "c7", True),
                                (named.replace(":", "_") + "_", "c8", True)):
        d = hosts_dir(str(tmp_path / ("named-" + tag)), dirname, text)
        rc, out, err = pull(ref + tag, d, plain=False)
        assert (rc == 0) == works, (dirname, err)
        assert bool(asked("/v2/hub/library/ctrimg/manifests/" + tag)) == works
    # containerd 1.6 refuses a hosts.toml without a [host."..."] table,
    # and goes on as if there were none
    d = hosts_dir(str(tmp_path / "server-only"), named, 'server = "http://%s"\n' % named)
    rc, out, err = pull(ref + "c6", d, plain=False)
    if rc != 0:
        assert "failed to decode hosts.toml" in err, err
        assert "HTTP response to HTTPS client" in err, err


# ================================================================ podman

def test_podman_mirror(env, tmp_path):
    """podman pull of a Docker Hub name with larder/hub as its
    registries.conf mirror (insecure = true): the upstream's image, by
    config digest, through /v2/hub."""
    if not PODMAN:
        pytest.skip("podman is not installed (apt-get install podman)")
    img = env.imgs["podimg"]
    root = str(tmp_path / "podman")
    os.makedirs(root)
    conf = os.path.join(root, "registries.conf")
    with open(conf, "w") as f:
        f.write('unqualified-search-registries = []\n\n[[registry]]\nprefix = "docker.io"\n'
                'location = "docker.io"\n\n[[registry.mirror]]\nlocation = "%s/hub"\n'
                'insecure = true\n' % env.host)
    # podman refuses a runroot path longer than 50 characters
    runroot = tempfile.mkdtemp(prefix="p23-", dir="/tmp")
    auth = os.path.join(root, "auth.json")
    with open(auth, "w") as f:
        f.write('{"auths": {}}\n')
    penv = clean_env({"HOME": root, "XDG_RUNTIME_DIR": root, "REGISTRY_AUTH_FILE": auth,
                      "CONTAINERS_REGISTRIES_CONF": conf})
    base = [PODMAN, "--storage-driver", "vfs", "--root", os.path.join(root, "storage"),
            "--runroot", runroot]
    try:
        rc, out, err = run(guarded(base + ["pull", "-q", "docker.io/library/podimg:1.0"],
                                   env.hosts), env=penv, timeout=300)
        assert rc == 0, err
        assert out.split()[-1] == img.config_digest.split(":", 1)[1]
        assert env.larder_saw(r" /v2/hub/library/podimg/manifests/1\.0\b")
    finally:
        shutil.rmtree(runroot, ignore_errors=True)


# ================================================================ 404s

def test_negative_cache(env):
    """An upstream 404 of a manifest is remembered for negative_ttl, per
    registry, repository and reference, and the default registry's bare
    names share it with /v2/hub/...: the upstream is asked once, until
    the ttl is out, even when the image appears upstream meanwhile."""
    st = env.st

    def get(path, method="GET"):
        return http(st.base + path, method=method,
                    headers={"Accept": ociup.ACCEPT_ALL})

    def asked(repo, ref):
        return st.relay.count(None, "^/v2/library/%s/manifests/%s$" % (repo, re.escape(ref)))

    t0 = time.monotonic()
    r = get("/v2/hub/library/ghost/manifests/1")
    assert r.status == 404, r
    assert json.loads(r.body)["errors"][0]["code"] == "MANIFEST_UNKNOWN"
    assert r.header("X-Larder-Cache") == "MISS"
    assert asked("ghost", "1") == 1
    # another reference, another repository: asked for themselves
    assert get("/v2/hub/library/ghost/manifests/2").status == 404
    assert asked("ghost", "2") == 1
    assert get("/v2/hub/library/ghost2/manifests/1").status == 404
    assert asked("ghost2", "1") == 1
    # it appears upstream: still 404 until negative_ttl is out, for the
    # bare name of the default registry too (the same row)
    img = env.imgs["podimg"]
    ociup.push(img.layout, "1.0", "%s/library/ghost:1" % env.reg.host)
    r = get("/v2/library/ghost/manifests/1")
    assert r.status == 404 and r.header("X-Larder-Cache") == "HIT", r
    assert get("/v2/library/ghost/manifests/1", "HEAD").status == 404
    assert get("/v2/hub/library/ghost/manifests/1").status == 404
    assert asked("ghost", "1") == 1
    # another registry of the same upstream asks for itself, and has it
    r = get("/v2/hub2/library/ghost/manifests/1")
    assert r.status == 200 and r.body == img.manifest, r
    assert asked("ghost", "1") == 2
    assert time.monotonic() - t0 < NEG_TTL - 1.2, "too slow to tell the ttl from its end"
    time.sleep(NEG_TTL + 1.2 - (time.monotonic() - t0))
    r = get("/v2/library/ghost/manifests/1")
    assert r.status == 200 and r.body == img.manifest, r
    assert asked("ghost", "1") == 3
    r = get("/v2/hub/library/ghost/manifests/1")
    assert r.status == 200 and r.body == img.manifest
    assert asked("ghost", "1") == 3
