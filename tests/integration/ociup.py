"""The stand-in OCI upstream for larder's registry tests: Debian's
docker-registry (distribution 2.8) on a free port, optionally behind a
docker token server of our own; a relay in front of it that counts what
larder asks upstream and injects faults; OCI images built without docker;
and skopeo to push and pull them. Standard library only (plus the openssl
CLI, skopeo and /usr/bin/docker-registry); builds on stack.py. The images
live in oci_images.py, the token server in oci_token.py and the relay in
oci_relay.py; what the tests and the benchmark use of those is imported
here too, so that ociup.X serves for all of it.

    reg = Registry(workdir).start()                 # or auth="token"
    imgs = standard_images(images_dir)             # built once per dir
    pushed = populate(reg, imgs)                    # {repo: Pushed}
    relay = Relay(reg.port).start()
    st = OciStack(workdir2, reg.port).start()       # relay + larder + nginx
    res = pull(st.ref("small", "1.0"), dest_dir)
    assert res.ok and not compare_layouts(dest_dir, direct_dir)

Pieces:

    Registry        docker-registry serve CONFIG, filesystem storage, deletes
                    on; auth="token" puts it behind a TokenServer
    TokenServer     (oci_token) GET /token: JWTs (RS256, x5c) for repository
                    scopes, Basic auth for the users it knows, anonymous
                    pulls if allowed; counts requests per scope
    Relay           (oci_relay) HTTP/1.1 relay: counts (method, path), faults
                    per path regex (truncate, corrupt, reset, stall, status,
                    down, delay), all from Python
    RegistryClient  the registry HTTP API (token dance included) for what
                    skopeo is slow or unable at: tags by PUT, blob uploads
    build_image, build_index, standard_images, compare_layouts
                    (oci_images) OCI layouts with gzip'd tar layers of random
                    bytes, and their comparison
    populate, push_referrer
                    the standard images pushed, an artifact referring to one
    skopeo, pull, push, inspect_raw, list_tags
    OciStack        relay + `larder serve` + nginx, larder's upstream the
                    relay

`python3 ociup.py selftest` runs the direct-to-registry checks (no larder).
"""

import atexit
import base64
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlencode, urljoin, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import stack as stackmod  # noqa: E402
from oci_images import (  # noqa: E402
    DOCKER_LIST, DOCKER_MANIFEST, FAULT_IMAGES, OCI_EMPTY, OCI_INDEX, OCI_MANIFEST, _ref,
    canonical, compare_layouts, digest_of, standard_images)
from oci_relay import Relay  # noqa: E402
from oci_token import OPENSSL, USERS, TokenServer, make_token_key  # noqa: E402
from stack import _stop_process, _tail, clean_env, free_port, http  # noqa: E402

# Not used here, but test_oci.py and contrib/bench/oci.py take them as
# ociup.X (the rest of what they use is imported above or defined here).
from oci_images import build_image  # noqa: E402,F401
from oci_token import TOKEN_SERVICE  # noqa: E402,F401

REGISTRY_BIN = "/usr/bin/docker-registry"
SKOPEO = shutil.which("skopeo") or "/usr/bin/skopeo"

# What a client that knows every manifest type sends.
ACCEPT_ALL = ", ".join([OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST])


def missing_reason():
    """Why the registry tests cannot run here, or None."""
    if not os.access(REGISTRY_BIN, os.X_OK):
        return "%s not found (apt-get install docker-registry)" % REGISTRY_BIN
    if not os.access(SKOPEO, os.X_OK):
        return "skopeo not found (apt-get install skopeo)"
    if not os.access(OPENSSL, os.X_OK):
        return "openssl not found (apt-get install openssl)"
    return None


# ================================================================ skopeo

Result = collections.namedtuple("Result", "rc out err cmd")


def _result_str(self):
    return "rc=%s: %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        self.rc, " ".join(self.cmd), self.out[-3000:], self.err[-3000:])


Result.ok = property(lambda self: self.rc == 0)
Result.__str__ = _result_str

_flag_cache = {}
_skopeo_home = None
_skopeo_lock = threading.Lock()


def _has_flag(sub, flag):
    key = (sub, flag)
    if key not in _flag_cache:
        try:
            p = subprocess.run([SKOPEO, sub, "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30, env=clean_env())
            _flag_cache[key] = flag in p.stdout.decode(errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            _flag_cache[key] = False
    return _flag_cache[key]


def _skopeo_env():
    """clean_env() with an auth file and a home of skopeo's own (so that
    nobody's saved credentials or registries.conf mirrors get in)."""
    global _skopeo_home
    with _skopeo_lock:
        if _skopeo_home is None:
            _skopeo_home = tempfile.mkdtemp(prefix="larder-skopeo-")
            atexit.register(shutil.rmtree, _skopeo_home, True)
    return clean_env({"REGISTRY_AUTH_FILE": os.path.join(_skopeo_home, "auth.json"),
                      "HOME": _skopeo_home,
                      "XDG_RUNTIME_DIR": _skopeo_home,
                      "XDG_CONFIG_HOME": os.path.join(_skopeo_home, ".config")})


def skopeo(*args, timeout=180):
    """Runs `skopeo SUB ARGS...` with plain http allowed on both ends
    (--src-tls-verify=false --dest-tls-verify=false for copy,
    --tls-verify=false for inspect and list-tags), no retries
    (--retry-times 0 where this skopeo has it), no policy checks, a clean
    environment. Returns Result(rc, out, err, cmd); rc -1 on timeout."""
    sub, rest = args[0], list(args[1:])
    pre = []
    if sub == "copy":
        pre += ["--src-tls-verify=false", "--dest-tls-verify=false"]
    elif sub in ("inspect", "list-tags", "delete"):
        pre += ["--tls-verify=false"]
    if sub in ("copy", "inspect", "list-tags", "delete") and _has_flag(sub, "--retry-times"):
        pre += ["--retry-times", "0"]
    cmd = [SKOPEO, "--insecure-policy", sub] + pre + rest
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=_skopeo_env(), timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return Result(-1, (e.stdout or b"").decode(errors="replace"),
                      "timed out after %s s\n%s" % (timeout, (e.stderr or b"").decode(
                          errors="replace")), cmd)
    return Result(p.returncode, p.stdout.decode(errors="replace"),
                  p.stderr.decode(errors="replace"), cmd)


def pull(ref, dest_dir, all=False, creds=None, extra=(), timeout=180):
    """skopeo copy docker://REF oci:DEST_DIR (--all for every instance of
    an index; --preserve-digests, so a manifest skopeo would have to
    rewrite is an error, not a silent conversion). Returns a Result."""
    args = ["copy", "--preserve-digests"]
    if all:
        args.append("--all")
    if creds:
        args += ["--src-creds", creds]
    args += list(extra) + ["docker://" + ref, "oci:" + dest_dir]
    return skopeo(*args, timeout=timeout)


def push(layout, tag, dest_ref, all=False, fmt=None, creds=None, timeout=180):
    """skopeo copy oci:LAYOUT:TAG docker://DEST_REF; fmt "v2s2" converts
    to a docker schema 2 manifest (else the digests are preserved).
    Returns the Result; raises RuntimeError when the copy fails."""
    args = ["copy"]
    if all:
        args.append("--all")
    if fmt:
        args += ["--format", fmt]
    else:
        args.append("--preserve-digests")
    if creds:
        args += ["--dest-creds", creds]
    args += ["oci:%s:%s" % (layout, tag), "docker://" + dest_ref]
    r = skopeo(*args, timeout=timeout)
    if not r.ok:
        raise RuntimeError("push of %s:%s to %s failed: %s" % (layout, tag, dest_ref, r))
    return r


def inspect_raw(ref, creds=None):
    """skopeo inspect --raw docker://REF: the manifest bytes (Result.out)."""
    args = ["inspect", "--raw"] + (["--creds", creds] if creds else []) + ["docker://" + ref]
    return skopeo(*args)


def list_tags(ref, creds=None):
    """skopeo list-tags docker://REPO: (Result, [tags] or None)."""
    args = ["list-tags"] + (["--creds", creds] if creds else []) + ["docker://" + ref]
    r = skopeo(*args)
    tags = None
    if r.ok:
        try:
            tags = json.loads(r.out)["Tags"]
        except (ValueError, KeyError):
            pass
    return r, tags


# ================================================================ pushed images

MANY_TAGS = ["t%03d" % i for i in range(120)]


class Pushed:
    """What a repository holds after populate(): repo, tag, digest,
    media_type, manifest (the bytes the registry serves), blobs {digest:
    size} (for an index: the children's manifests and blobs too), image
    (the Image or Index it came from), children [Pushed] for an index."""

    def __init__(self, **kw):
        self.children = []
        self.__dict__.update(kw)

    def __repr__(self):
        return "<Pushed %s:%s %s %s>" % (self.repo, self.tag, self.media_type,
                                         self.digest[:19])


# repo -> (image, tag, push options)
REPOS = {
    "small": ("small", "1.0", {}),
    "app1": ("app1", "1.0", {}),
    "app2": ("app2", "1.0", {}),
    "big": ("big", "1.0", {}),
    "multi": ("multi", "1.0", {"all": True}),
    "v2s2": ("v2s2", "1.0", {"fmt": "v2s2"}),
    "many": ("tiny", MANY_TAGS[0], {}),
}
REPOS.update({n: (n, "1.0", {}) for n in FAULT_IMAGES})


def populate(registry, imgs, repos=None, creds=None):
    """Pushes the images of standard_images() to registry (with skopeo;
    the "many" repository gets its 120 tags by PUTs of the manifest), and
    reads back what the registry serves. repos picks some of REPOS.
    Returns {repo: Pushed}."""
    creds = creds or registry.creds
    client = registry.client()
    out = {}
    for repo in (repos or REPOS):
        name, tag, opts = REPOS[repo]
        img = imgs[name]
        push(img.layout, img.tag, "%s/%s:%s" % (registry.host, repo, tag), creds=creds, **opts)
        out[repo] = pushed_info(client, repo, tag, img)
        if repo == "many":
            for t in MANY_TAGS[1:]:
                client.put_manifest(repo, t, out[repo].manifest, out[repo].media_type)
    return out


def pushed_info(client, repo, tag, img):
    """A Pushed for repo:tag as the registry serves it."""
    r = client.request("GET", "/v2/%s/manifests/%s" % (repo, tag),
                       headers={"Accept": ACCEPT_ALL})
    if r.status != 200:
        raise RuntimeError("registry GET %s:%s: %r %r" % (repo, tag, r, r.body[:300]))
    ctype = r.header("Content-Type").split(";")[0].strip()
    p = Pushed(repo=repo, tag=tag, digest=r.header("Docker-Content-Digest"),
               media_type=ctype, manifest=r.body, image=img)
    assert p.digest == digest_of(r.body), (p.digest, digest_of(r.body))
    doc = json.loads(r.body)
    blobs = {}
    if ctype in (OCI_INDEX, DOCKER_LIST):
        for m in doc["manifests"]:
            child = pushed_info(client, repo, m["digest"], None)
            child.platform = m.get("platform")
            p.children.append(child)
            blobs[m["digest"]] = m["size"]
            blobs.update(child.blobs)
    else:
        blobs[doc["config"]["digest"]] = doc["config"]["size"]
        for l in doc["layers"]:
            blobs[l["digest"]] = l["size"]
    p.blobs = blobs
    return p


# ================================================================ registry

REGISTRY_CONF = """\
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:{port}
  secret: larder-test-not-a-secret
{auth}"""

TOKEN_AUTH = """\
auth:
  token:
    realm: {realm}
    service: {service}
    issuer: {issuer}
    rootcertbundle: {cert}
"""


class Registry:
    """Debian's docker-registry (distribution 2.8) serving workdir/storage
    on 127.0.0.1:port, its log in workdir/registry.log. auth="token" makes
    a key, a certificate and a TokenServer (self.token) first and sets the
    registry's auth: token to it (service "larder-test"); self.creds is
    then "alice:secret", the user pushes are made as."""

    def __init__(self, workdir, auth=None, port=None, users=None, allow_anonymous=True,
                 key_kind="rsa"):
        if auth not in (None, "token"):
            raise ValueError("auth is None or 'token'")
        self.dir = os.path.abspath(workdir)
        self.storage = os.path.join(self.dir, "storage")
        self.conf = os.path.join(self.dir, "config.yml")
        self.log = os.path.join(self.dir, "registry.log")
        self.port = port or free_port()
        self.auth = auth
        self.proc = None
        self.token = None
        self.users = dict(USERS if users is None else users)
        self.creds = None
        os.makedirs(self.storage, exist_ok=True)
        if auth == "token":
            key, cert = make_token_key(os.path.join(self.dir, "token"), key_kind)
            self.token = TokenServer(os.path.join(self.dir, "token"), key, cert,
                                     users=self.users, allow_anonymous=allow_anonymous)
            user = sorted(self.users)[0]
            self.creds = "%s:%s" % (user, self.users[user])

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    @property
    def base(self):
        return "http://" + self.host

    def start(self, timeout=15):
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        auth = ""
        if self.token is not None:
            self.token.start()
            auth = TOKEN_AUTH.format(realm=self.token.realm, service=self.token.service,
                                     issuer=self.token.issuer, cert=self.token.cert)
        with open(self.conf, "w") as f:
            f.write(REGISTRY_CONF.format(storage=self.storage, port=self.port, auth=auth))
        try:
            stackmod.spawn_server(self, [REGISTRY_BIN, "serve", self.conf], self.log,
                                  self.log, "docker-registry", timeout)
        except BaseException:
            if self.token is not None:
                self.token.stop()
            raise
        return self

    def stop(self):
        if self.proc is not None:
            _stop_process(self.proc)
        if self.token is not None:
            self.token.stop()

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def client(self, creds="default"):
        """A RegistryClient for this registry (as self.creds by default)."""
        return RegistryClient(self.base, self.creds if creds == "default" else creds)

    def ref(self, repo, tag=None, digest=None):
        return _ref(self.host, repo, tag, digest)


def parse_challenge(value):
    """{"scheme", param: value} of a WWW-Authenticate header."""
    scheme, _, rest = (value or "").strip().partition(" ")
    out = {"scheme": scheme.lower()}
    for m in re.finditer(r'(\w+)=(?:"([^"]*)"|([^,\s]*))', rest):
        out[m.group(1).lower()] = m.group(2) if m.group(2) is not None else m.group(3)
    return out


class RegistryClient:
    """The registry HTTP API over stack.http, with the Bearer token dance
    (tokens cached per scope) and Basic credentials creds ("user:pw") for
    the token server."""

    def __init__(self, base, creds=None):
        self.base = base.rstrip("/")
        self.creds = creds
        self.tokens = {}

    def _token(self, ch):
        q = {"service": ch.get("service", "")}
        if ch.get("scope"):
            q["scope"] = ch["scope"]
        hdrs = {}
        if self.creds:
            q["account"] = self.creds.split(":", 1)[0]
            hdrs["Authorization"] = "Basic " + base64.b64encode(self.creds.encode()).decode()
        sep = "&" if "?" in ch["realm"] else "?"
        r = http(ch["realm"] + sep + urlencode(q), headers=hdrs)
        if r.status != 200:
            raise RuntimeError("token server %s: %r %r" % (ch["realm"], r, r.body[:200]))
        doc = r.json()
        return doc.get("token") or doc.get("access_token")

    def request(self, method, path, body=None, headers=None, timeout=60):
        """A request to base + path (or an absolute URL); on a Bearer 401,
        gets a token and tries again. Returns a stack.Response."""
        url = path if path.startswith("http") else self.base + path
        hdrs = dict(headers or {})
        key = (method in ("GET", "HEAD"), re.sub(r"/(manifests|blobs|tags)/.*", "", urlsplit(url).path))
        if key in self.tokens:
            hdrs["Authorization"] = "Bearer " + self.tokens[key]
        r = http(url, method=method, headers=hdrs, body=body, timeout=timeout)
        if r.status == 401:
            ch = parse_challenge(r.header("WWW-Authenticate"))
            if ch.get("scheme") == "bearer" and ch.get("realm"):
                self.tokens[key] = self._token(ch)
                hdrs["Authorization"] = "Bearer " + self.tokens[key]
                r = http(url, method=method, headers=hdrs, body=body, timeout=timeout)
        return r

    def put_blob(self, repo, data):
        """Uploads data (POST then PUT ?digest=); returns its digest."""
        d = digest_of(data)
        r = self.request("HEAD", "/v2/%s/blobs/%s" % (repo, d))
        if r.status == 200:
            return d
        r = self.request("POST", "/v2/%s/blobs/uploads/" % repo, body=b"",
                         headers={"Content-Length": "0"})
        if r.status != 202:
            raise RuntimeError("upload start: %r %r" % (r, r.body[:300]))
        loc = urljoin(self.base + "/", r.header("Location"))
        loc += ("&" if "?" in loc else "?") + urlencode({"digest": d})
        r = self.request("PUT", loc, body=data,
                         headers={"Content-Type": "application/octet-stream"})
        if r.status != 201:
            raise RuntimeError("upload PUT: %r %r" % (r, r.body[:300]))
        return d

    def put_manifest(self, repo, ref, data, media_type):
        """PUT /v2/REPO/manifests/REF; returns the digest the registry gave."""
        r = self.request("PUT", "/v2/%s/manifests/%s" % (repo, ref), body=data,
                         headers={"Content-Type": media_type})
        if r.status != 201:
            raise RuntimeError("manifest PUT %s:%s: %r %r" % (repo, ref, r, r.body[:300]))
        return r.header("Docker-Content-Digest")

    def get_manifest(self, repo, ref, accept=ACCEPT_ALL, method="GET"):
        return self.request(method, "/v2/%s/manifests/%s" % (repo, ref),
                            headers={"Accept": accept})

    def get_blob(self, repo, digest, headers=None):
        return self.request("GET", "/v2/%s/blobs/%s" % (repo, digest), headers=headers)

    def tags(self, repo, n=None, last=None):
        """(tags, Link header or None) of one page."""
        q = {}
        if n is not None:
            q["n"] = n
        if last is not None:
            q["last"] = last
        r = self.request("GET", "/v2/%s/tags/list" % repo + ("?" + urlencode(q) if q else ""))
        if r.status != 200:
            raise RuntimeError("tags/list %s: %r %r" % (repo, r, r.body[:300]))
        return r.json().get("tags") or [], r.header("Link")

    def delete_manifest(self, repo, digest):
        return self.request("DELETE", "/v2/%s/manifests/%s" % (repo, digest))


def push_referrer(client, repo, subject, artifact_type="application/vnd.larder.test.sbom",
                  payload=b'{"spdxVersion":"SPDX-2.3"}', annotations=None):
    """Pushes an artifact (an OCI image manifest with artifactType, the
    empty config, one layer of payload, and subject = the descriptor of
    subject, a Pushed or Image) by digest, then the referrers tag schema's
    index under the tag sha256-<hex of subject> listing it, as ORAS and
    cosign do against a registry without the referrers API. Returns
    (artifact digest, artifact manifest bytes, index bytes)."""
    empty = b"{}"
    client.put_blob(repo, empty)
    layer = client.put_blob(repo, payload)
    ann = {"org.opencontainers.image.created": "2024-01-01T00:00:00Z"}
    ann.update(annotations or {})
    manifest = canonical({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {"mediaType": OCI_EMPTY, "digest": digest_of(empty), "size": len(empty)},
        "layers": [{"mediaType": "application/spdx+json", "digest": layer,
                    "size": len(payload)}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest,
                    "size": len(subject.manifest)},
        "annotations": ann,
    })
    digest = digest_of(manifest)
    got = client.put_manifest(repo, digest, manifest, OCI_MANIFEST)
    if got != digest:
        raise RuntimeError("registry made %s of the artifact %s" % (got, digest))
    tag = subject.digest.replace(":", "-")
    r = client.get_manifest(repo, tag, accept=OCI_INDEX)
    entries = []
    if r.status == 200:
        entries = [m for m in json.loads(r.body).get("manifests", []) if m["digest"] != digest]
    entries.append({"mediaType": OCI_MANIFEST, "digest": digest, "size": len(manifest),
                    "artifactType": artifact_type, "annotations": ann})
    index = canonical({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries})
    client.put_manifest(repo, tag, index, OCI_INDEX)
    return digest, manifest, index


# ================================================================ larder in front

def registry_section(name, upstream, cache_ttl=300, max_stale="7d", default=True,
                     library_prefix="no", **keys):
    """The [registry "NAME"] section of larder.conf."""
    lines = ['[registry "%s"]' % name, "upstream = %s" % upstream,
             "cache_ttl = %s" % cache_ttl, "max_stale = %s" % max_stale,
             "default = %s" % ("yes" if default else "no"),
             "library_prefix = %s" % library_prefix]
    lines += ["%s = %s" % kv for kv in keys.items()]
    return "\n".join(lines) + "\n"


# [larder] keys the registry tests run with: no memory of failures (the
# tests expect recovery the moment a fault clears) and no prefetching.
OCI_LARDER_KEYS = {"error_ttl": 0}


class OciStack:
    """A Relay in front of the registry on upstream_port, `larder serve`
    with a [registry "NAME"] section whose upstream is the relay, and
    nginx in front of larder (stack.Larder and stack.Nginx, each in a
    subdirectory of workdir). registry_keys go into the registry section
    (username, password_file, ...), larder_extra into [larder]."""

    def __init__(self, workdir, upstream_port, name="test", cache_ttl=300, max_stale="7d",
                 workers=4, larder_extra=None, registry_keys=None, default=True,
                 binary=None, extra_text=""):
        self.dir = os.path.abspath(workdir)
        self.name = name
        self.relay = Relay(upstream_port)
        self.cache_ttl = cache_ttl
        self.max_stale = max_stale
        self.workers = workers
        self.larder_extra = dict(OCI_LARDER_KEYS)
        self.larder_extra.update(larder_extra or {})
        self.registry_keys = registry_keys or {}
        self.default = default
        self.binary = binary
        self.extra_text = extra_text
        self.larder = None
        self.nginx = None

    def section(self):
        return registry_section(self.name, self.relay.base + "/", self.cache_ttl,
                                self.max_stale, self.default, **self.registry_keys)

    def start(self):
        try:
            self.relay.start()
            self.larder = stackmod.Larder(os.path.join(self.dir, "larder"), self.relay.port,
                                          workers=self.workers, extra=self.larder_extra,
                                          extra_text="\n" + self.section() + self.extra_text,
                                          binary=self.binary)
            self.larder.start()
            self.nginx = stackmod.Nginx(os.path.join(self.dir, "nginx"), self.larder.port,
                                        self.larder.data_dir)
            self.nginx.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        stackmod.stop_all(self.nginx, self.larder, self.relay)

    @property
    def data_dir(self):
        return self.larder.data_dir

    @property
    def host(self):
        return "127.0.0.1:%d" % self.nginx.port

    @property
    def base(self):
        return self.nginx.base

    def ref(self, repo, tag=None, digest=None, prefix=True):
        """127.0.0.1:NGINX/NAME/REPO:TAG (or @DIGEST); prefix=False leaves
        the registry name out (the default registry's bare names)."""
        return _ref(self.host, ("%s/%s" % (self.name, repo)) if prefix else repo, tag, digest)

    def path(self, repo, *rest):
        return "/v2/%s/%s/%s" % (self.name, repo, "/".join(rest))

    def get(self, path, headers=None, method="GET", accept=None, timeout=60):
        h = dict(headers or {})
        if accept:
            h["Accept"] = accept
        return http(self.nginx.base + path, method=method, headers=h, timeout=timeout)

    def upstream_path(self, repo, *rest):
        """The path larder asks the relay for (the registry's own name)."""
        return "/v2/%s/%s" % (repo, "/".join(rest))


# ================================================================ self test

def selftest(workdir, big_mb=30):
    """The infrastructure against the real registry, no larder: builds and
    pushes the images (plain and token registries), pulls them straight
    and through the relay, checks counts and faults. Raises on failure;
    prints what it did."""
    t0 = time.monotonic()
    say = lambda *a: print("[%5.1f s]" % (time.monotonic() - t0), *a, flush=True)  # noqa
    imgs = standard_images(os.path.join(workdir, "images"), big_mb=big_mb)
    say("built", len(imgs), "images")
    reg = Registry(os.path.join(workdir, "registry")).start()
    try:
        pushed = populate(reg, imgs)
        say("pushed", len(pushed), "repositories")
        assert pushed["v2s2"].media_type == DOCKER_MANIFEST, pushed["v2s2"]
        assert pushed["multi"].media_type == OCI_INDEX
        assert pushed["small"].manifest == imgs["small"].manifest
        # distribution 2.8 ignores n and last: every tag, in no order, no Link
        tags, link = reg.client().tags("many", n=50)
        assert sorted(tags) == MANY_TAGS and link is None, (tags, link)
        relay = Relay(reg.port).start()
        try:
            d1 = os.path.join(workdir, "pull-direct")
            d2 = os.path.join(workdir, "pull-relay")
            r = pull(reg.ref("small", "1.0"), d1)
            assert r.ok, r
            r = pull(relay.ref("small", "1.0"), d2)
            assert r.ok, r
            assert not compare_layouts(d1, d2), compare_layouts(d1, d2)
            gets = {p: n for (m, p), n in relay.counts().items() if m == "GET" and "/blobs/" in p}
            assert len(gets) == 4 and set(gets.values()) == {1}, gets
            say("pull through the relay ok:", relay.counts())
            layer = imgs["app1"].layers[-1].digest
            for fault in ("truncate", "corrupt", "reset", "stall", "status"):
                relay.reset()
                relay.set_faults([{"fault": fault, "path": layer, "seconds": 1,
                                   "code": 503}])
                d = os.path.join(workdir, "pull-" + fault)
                r = pull(relay.ref("app1", "1.0"), d)
                assert (r.ok if fault == "stall" else not r.ok), (fault, r)
                assert relay.fired().get(fault), (fault, relay.fired())
                say("fault", fault, "->", "ok" if r.ok else r.err.strip().splitlines()[-1][:160])
            relay.clear()
            relay.down()
            r = pull(relay.ref("app1", "1.0"), os.path.join(workdir, "pull-down"))
            assert not r.ok
            relay.up()
            r = pull(relay.ref("app1", "1.0"), os.path.join(workdir, "pull-up"))
            assert r.ok, r
            say("down/up ok")
        finally:
            relay.stop()
    finally:
        reg.stop()
    treg = Registry(os.path.join(workdir, "token-registry"), auth="token").start()
    try:
        populate(treg, imgs, repos=["small"])
        treg.token.reset()
        d = os.path.join(workdir, "token-pull")
        r = pull(treg.ref("small", "1.0"), d)
        assert r.ok, r
        assert not compare_layouts(d, os.path.join(workdir, "pull-direct"))
        say("token registry: anonymous pull ok, token requests", treg.token.counts())
        treg.token.allow_anonymous = False
        r = pull(treg.ref("small", "1.0"), os.path.join(workdir, "token-pull2"))
        assert not r.ok
        r = pull(treg.ref("small", "1.0"), os.path.join(workdir, "token-pull3"),
                 creds=treg.creds)
        assert r.ok, r
        say("token registry: anonymous refused, alice ok")
    finally:
        treg.stop()
    say("selftest passed")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["selftest", "images"])
    ap.add_argument("--dir", default=None)
    ap.add_argument("--big-mb", type=int, default=30)
    a = ap.parse_args()
    why = missing_reason()
    if why:
        sys.exit(why)
    d = a.dir or tempfile.mkdtemp(prefix="larder-oci-")
    if a.what == "images":
        for k, v in standard_images(d, a.big_mb).items():
            print(k, v)
    else:
        selftest(d, a.big_mb)
        print("workdir", d)
