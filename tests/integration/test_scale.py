"""Past one machine (issue 13, docs/scaling.md): shards behind HAProxy and
tiers of larder in front of larder.

Shards: three nodes, each `larder serve` behind its own nginx with its own
data dir, one stand-in upstream, and HAProxy in front running
conf/haproxy.cfg as shipped (only its addresses and the global section's
daemon/chroot/user/log replaced). Ten pip installs go through it while one
node's larder is killed: every install succeeds, and the stand-in sees a
file fetched at most once per node that was asked for it (a node asked for
a file whose page another node fetched fetches that page itself, once).

Tiers: pip -> larder A -> larder B -> stand-in, with the metadata prefetch
on in both (as shipped): a cold install costs the stand-in one fetch per
file, page and metadata, and A asks B once for each; with B gone, A serves
what it holds.

Skipped without haproxy (Debian's `haproxy`; contrib/deps.sh test installs
it) for the shard test; the tier test needs only nginx.
"""

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin

import pytest

import stack as stackmod
from stack import JSON_TYPE, PIP_ACCEPT

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
SHIPPED = os.path.join(stackmod.REPO, "conf", "haproxy.cfg")
PKGS = ["larder-demo-a"]                   # pulls larder_demo.b and larder-demo-c
PROJECTS = ["larder-demo-a", "larder-demo-b", "larder-demo-c"]
INDEX = "root/pypi"


# ---------------------------------------------------------------- pieces

class Node:
    """One shard or tier: larder + nginx in workdir, upstream at
    upstream_url (the stand-in's when None)."""

    def __init__(self, workdir, standin, upstream_url=None, extra=None):
        self.larder = stackmod.Larder(os.path.join(workdir, "larder"), standin.port,
                                      files_port=standin.files_port, extra=extra)
        if upstream_url:
            with open(self.larder.conf) as f:
                text = f.read()
            text = re.sub(r"(?m)^upstream = .*$", "upstream = " + upstream_url, text, count=1)
            with open(self.larder.conf, "w") as f:
                f.write(text)
        self.nginx = stackmod.Nginx(os.path.join(workdir, "nginx"), self.larder.port,
                                    self.larder.data_dir)

    def start(self):
        self.larder.start()
        self.nginx.start()
        return self

    def stop(self):
        stackmod.stop_all(self.nginx, self.larder)

    def kill_larder(self):
        """SIGKILL to every process of `larder serve` (the supervisor leads
        its own process group): the node's larder is gone at once, its
        nginx stays and answers 502."""
        os.killpg(self.larder.proc.pid, signal.SIGKILL)
        self.larder.proc.wait(10)

    @property
    def base(self):
        return self.nginx.base

    def access(self):
        """[(method, path, status)] from nginx's access log."""
        out = []
        try:
            with open(self.nginx.access_log, errors="replace") as f:
                for line in f:
                    m = re.search(r'"(\w+) (\S+) HTTP/[\d.]+" (\d{3})', line)
                    if m:
                        out.append((m.group(1), m.group(2), int(m.group(3))))
        except OSError:
            pass
        return out


def haproxy_conf(port, stats_port, servers, text=None):
    """conf/haproxy.cfg with its frontend bound to 127.0.0.1:port, its stats
    to stats_port, the shard backend's servers replaced by servers ([port]),
    and what a foreground run under a test user cannot have (daemon,
    chroot, user, group) left out, its log on stdout and its maxconn under
    a test user's open-file limit."""
    if text is None:
        with open(SHIPPED) as f:
            text = f.read()
    out, in_shards, done = [], False, False
    for line in text.splitlines():
        word = line.split()[0] if line.split() else ""
        if line.startswith(("backend", "frontend", "listen", "global", "defaults")):
            in_shards = line.split()[:2] == ["backend", "larder_shards"]
        if word in ("daemon", "chroot", "user", "group"):
            continue
        if line.strip() == "log /dev/log local0":
            line = "\tlog stdout format raw local0"
        elif word == "maxconn" and not in_shards:
            line = "\tmaxconn 1000"     # under a test user's open-file limit
        elif line.strip() == "bind :80":
            line = "\tbind 127.0.0.1:%d" % port
        elif line.strip() == "bind 127.0.0.1:8404":
            line = "\tbind 127.0.0.1:%d" % stats_port
        elif in_shards and word == "server":
            if done:
                continue
            line = "\n".join("\tserver node%d 127.0.0.1:%d" % (i + 1, p)
                             for i, p in enumerate(servers))
            done = True
        elif word == "server":          # the hosted backend: the first node
            line = re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "127.0.0.1:%d" % servers[0], line)
        out.append(line)
    assert done, "no server lines in the larder_shards backend of %s" % SHIPPED
    return "\n".join(out) + "\n"


class Haproxy:
    def __init__(self, workdir, servers):
        self.dir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.port = stackmod.free_port()
        self.stats_port = stackmod.free_port()
        self.conf = os.path.join(workdir, "haproxy.cfg")
        self.log = os.path.join(workdir, "haproxy.out")
        self.proc = None
        with open(self.conf, "w") as f:
            f.write(haproxy_conf(self.port, self.stats_port, servers))

    def start(self):
        subprocess.run([HAPROXY, "-c", "-q", "-f", self.conf], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return stackmod.spawn_server(self, [HAPROXY, "-db", "-f", self.conf],
                                     self.log, self.log, "haproxy", 15)

    def stop(self):
        if self.proc is not None:
            stackmod._stop_process(self.proc)

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def status(self):
        """{server name: "UP"/"DOWN"/...} of the shard backend."""
        r = stackmod.http("http://127.0.0.1:%d/;csv" % self.stats_port)
        lines = r.body.decode().splitlines()
        head = lines[0].lstrip("# ").split(",")
        out = {}
        for line in lines[1:]:
            row = dict(zip(head, line.split(",")))
            if row.get("pxname") == "larder_shards" and row.get("svname", "").startswith("node"):
                out[row["svname"]] = row["status"].split()[0]
        return out


@pytest.fixture
def standin(tmp_path, wheel_dir):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    s = stackmod.Standin(wheel_dir, str(tmp_path / "standin")).start()
    yield s
    s.stop()


@pytest.fixture
def template(tmp_path):
    return stackmod.make_venv(str(tmp_path / "template"))


def file_paths(node_base, projects):
    """{filename: path} of every file the pages of projects list, as read
    through node_base (the paths a client then asks for)."""
    out = {}
    for p in projects:
        page = "/%s/simple/%s/" % (INDEX, p)
        r = stackmod.http(node_base + page, headers={"Accept": JSON_TYPE})
        assert r.status == 200, (page, r)
        for f in r.json()["files"]:
            out[f["filename"]] = urljoin(page, f["url"])
    return out


def listed_paths(dists):
    """{filename: path} of the stand-in's files under INDEX, from their
    hashes (no request made)."""
    return {fn: "/%s/files/%s/%s" % (INDEX, d.sha256, fn) for fn, d in dists.items()}


def install(template, tmp_path, name, index_url):
    venv = stackmod.clone_venv(template, str(tmp_path / name))
    return stackmod.pip_install(venv, index_url, PKGS)


# ---------------------------------------------------------------- shards

@pytest.mark.skipif(not os.path.exists(HAPROXY),
                    reason="haproxy not installed (apt-get install haproxy, "
                           "or contrib/deps.sh test)")
def test_shards_survive_a_node(tmp_path, standin, template, dists):
    nodes, hap = [], None
    try:
        for i in range(3):
            nodes.append(Node(str(tmp_path / ("node%d" % (i + 1))), standin).start())
        hap = Haproxy(str(tmp_path / "haproxy"), [n.nginx.port for n in nodes]).start()
        assert stackmod.wait_for(lambda: set(hap.status().values()) == {"UP"}, 15), \
            hap.status()
        url = "%s/%s/simple/" % (hap.base, INDEX)
        results = {}

        def run(i):
            results[i] = install(template, tmp_path, "venv%d" % i, url)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(10)]
        for t in threads[:6]:
            t.start()
            time.sleep(0.5)
        assert stackmod.wait_for(lambda: results, 180), "no install finished"
        # the node that holds the first project's page: every later
        # install needs that page, from another node now
        page = "/%s/simple/%s/" % (INDEX, PKGS[0])
        victim = [i for i, n in enumerate(nodes)
                  if any(p == page for _, p, _ in n.access())]
        assert victim, "no node was asked for %s" % page
        victim = victim[0]
        nodes[victim].kill_larder()
        # before the health checks can see it (two failed checks a
        # second apart): the node's nginx answers 502 (an Accept its page
        # cache has no copy for), and HAProxy tries another node
        r = stackmod.http(hap.base + page, headers={"Accept": "text/html"})
        assert r.status == 200, r
        assert (("GET", page, 502) in nodes[victim].access() and
                hap.status()["node%d" % (victim + 1)] == "UP"), \
            "not retried on another node: %r %r" % (hap.status(), nodes[victim].access()[-3:])
        for t in threads[6:]:
            t.start()
            time.sleep(0.5)
        for t in threads:
            t.join(240)
        failed = {i: out[-3000:] for i, (rc, out) in results.items() if rc}
        assert len(results) == 10 and not failed, failed
        assert hap.status()["node%d" % (victim + 1)] == "DOWN", hap.status()

        # who was asked for what: a 200 from any node, and anything from
        # the killed one (a request it held as it died may have cost a
        # fetch, and its nginx answered 502 after)
        asked = {}
        for i, n in enumerate(nodes):
            for method, path, status in n.access():
                if method == "GET" and (status == 200 or i == victim):
                    asked.setdefault(path.split("?")[0], set()).add(i)
        assert len(asked.get(page, ())) >= 2, \
            "the page did not move off the killed node: %r" % asked.get(page)
        paths = listed_paths(dists)
        c = standin.counters()
        for fn, path in paths.items():
            for kind, p in (("files", path), ("metadata", path + ".metadata")):
                got = c[kind].get(fn, 0)
                if got:
                    assert got <= len(asked.get(p, ())), \
                        (kind, fn, got, sorted(asked.get(p, ())))
        # a page is fetched once by each node that was asked for it or
        # for a file it lists (a file's node fetches the page itself)
        for project in PROJECTS:
            page_p = "/%s/simple/%s/" % (INDEX, project)
            askers = set(asked.get(page_p, ()))
            for fn, path in paths.items():
                if fn.replace("_", "-").startswith(project + "-"):
                    askers |= asked.get(path, set()) | asked.get(path + ".metadata", set())
            got = c["requests"].get("GET /simple/%s/" % project, 0)
            assert 1 <= got <= len(askers), (project, got, sorted(askers))
    finally:
        stackmod.stop_all(hap, *nodes)


def test_file_listed_by_another_node(tmp_path, standin):
    """Without a balancer: a node asked for a file (and its .metadata) that
    only another node's page listed fetches the page itself, once, and
    serves the file; a file that page does not list stays a 404."""
    nodes = []
    try:
        for i in range(2):
            nodes.append(Node(str(tmp_path / ("node%d" % i)), standin).start())
        paths = file_paths(nodes[0].base, ["larder-demo-c"])
        fn, path = sorted(paths.items())[0]
        for p in (path + ".metadata", path, path + ".metadata", path):
            r = stackmod.http(nodes[1].base + p)
            assert r.status == 200 and r.complete, (p, r, r.body[:200])
        c = standin.counters()
        assert c["requests"]["GET /simple/larder-demo-c/"] == 2, c["requests"]
        assert c["files"][fn] == 1 and c["metadata"][fn] == 1, c
        # same project, a file its page does not list: no fetch, a 404
        other = path.replace("1.0", "9.9")
        r = stackmod.http(nodes[1].base + other)
        assert r.status == 404, r
        r = stackmod.http(nodes[1].base + path.replace(fn, "nosuch_x-1.0-py3-none-any.whl"))
        assert r.status == 404, r
        c = standin.counters()
        assert c["requests"]["GET /simple/larder-demo-c/"] == 2, c["requests"]
        assert c["requests"].get("GET /simple/nosuch-x/") == 1, c["requests"]
    finally:
        stackmod.stop_all(*nodes)


# ---------------------------------------------------------------- tiers

def test_tier(tmp_path, standin, template, dists):
    """pip -> A -> B -> stand-in, prefetch on in both; then B gone."""
    b = a = None
    try:
        b = Node(str(tmp_path / "b"), standin, extra={"prefetch_metadata": "yes"}).start()
        # A's pages go stale at once, so the warm install below asks B
        # again, and finds it gone
        a = Node(str(tmp_path / "a"), standin,
                 upstream_url="%s/%s/simple/" % (b.base, INDEX),
                 extra={"prefetch_metadata": "yes", "cache_ttl": 1}).start()
        rc, out = install(template, tmp_path, "cold", "%s/%s/simple/" % (a.base, INDEX))
        assert rc == 0, out
        # A's prefetches end after the answers that set them off
        time.sleep(1)
        paths = listed_paths(dists)
        installed = [fn for fn in paths if standin.counters()["files"].get(fn)]
        assert len(installed) == 3, standin.counters()
        # the core metadata comes from B's .metadata, whether A's prefetch
        # fetched it already or this request does
        for fn in installed:
            r = stackmod.http(a.base + paths[fn] + ".metadata")
            assert r.status == 200 and r.body == dists[fn].metadata, (fn, r)
        c = standin.counters()
        for fn in paths:
            assert c["files"].get(fn, 0) <= 1, (fn, c["files"])
            assert c["metadata"].get(fn, 0) <= 1, (fn, c["metadata"])
        for project in PROJECTS:
            assert c["requests"].get("GET /simple/%s/" % project) == 1, c["requests"]
        # A asked B once for each file and metadata it wanted
        seen = {}
        for method, path, status in b.access():
            if "/files/" in path:
                seen[path] = seen.get(path, 0) + 1
                assert status == 200, (path, status)
        assert seen and max(seen.values()) == 1, seen

        # B gone: A serves its stale pages and stored files
        b.stop()
        time.sleep(1.5)
        rc, out = install(template, tmp_path, "warm", "%s/%s/simple/" % (a.base, INDEX))
        assert rc == 0, out
        r = stackmod.http("%s/%s/simple/%s/" % (a.base, INDEX, PKGS[0]),
                          headers={"Accept": PIP_ACCEPT})
        assert r.status == 200 and r.header("X-Larder-Cache") == "STALE", (r, r.headers)
    finally:
        stackmod.stop_all(a, b)


def test_tier_keeps_no_page_longer_than_upstream_larder(tmp_path, standin):
    """B's page goes stale in 20 s (its Expires, no max-age): A, whose own
    cache_ttl is 300, keeps it fresh no longer than that."""
    b = a = None
    try:
        b = Node(str(tmp_path / "b"), standin, extra={"cache_ttl": 20}).start()
        a = Node(str(tmp_path / "a"), standin,
                 upstream_url="%s/%s/simple/" % (b.base, INDEX)).start()
        r = stackmod.http("%s/%s/simple/%s/" % (a.base, INDEX, PKGS[0]),
                          headers={"Accept": JSON_TYPE})
        assert r.status == 200, r
        left = (parsedate_to_datetime(r.header("Expires")) -
                parsedate_to_datetime(r.header("Date"))).total_seconds()
        assert 0 < left <= 20, (r.header("Date"), r.header("Expires"))
    finally:
        stackmod.stop_all(a, b)


def test_oci_tier(tmp_path):
    """skopeo -> larder A -> larder B -> registry: A's registry section has
    B as its upstream, whose default registry takes bare names. Two pulls
    at once sharing a base layer cost the registry one GET per blob, and A
    asks B once per blob; with B gone, A pulls what it holds."""
    import ociup
    why = ociup.missing_reason() or stackmod.missing_reason()
    if why:
        pytest.skip(why)
    imgs = ociup.standard_images(str(tmp_path / "images"), big_mb=1)
    reg = ociup.Registry(str(tmp_path / "registry")).start()
    b = a = None
    try:
        pushed = ociup.populate(reg, imgs, repos=["app1", "app2"])
        b = ociup.OciStack(str(tmp_path / "b"), reg.port).start()
        a = ociup.OciStack(str(tmp_path / "a"), b.nginx.port).start()
        direct = {}
        for repo in ("app1", "app2"):
            direct[repo] = str(tmp_path / ("direct-" + repo))
            assert ociup.pull(reg.ref(repo, "1.0"), direct[repo]).ok
        b.relay.reset()
        results = {}

        def run(repo, tag):
            results[(repo, tag)] = ociup.pull(a.ref(repo, "1.0"),
                                              str(tmp_path / ("%s-%s" % (repo, tag))))

        threads = [threading.Thread(target=run, args=(repo, "cold"))
                   for repo in ("app1", "app2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        for repo in ("app1", "app2"):
            r = results[(repo, "cold")]
            assert r.ok, r
            assert not ociup.compare_layouts(str(tmp_path / ("%s-cold" % repo)), direct[repo])
        blobs = set(pushed["app1"].blobs) | set(pushed["app2"].blobs)
        for relay, who in ((b.relay, "the registry"), (a.relay, "B")):
            gets = {}
            for (m, p), n in relay.counts().items():
                mm = re.match(r"^/v2/.+/blobs/(sha256:[0-9a-f]{64})$", p)
                if m == "GET" and mm:
                    gets[mm.group(1)] = gets.get(mm.group(1), 0) + n
            assert gets == {dg: 1 for dg in blobs}, (who, gets)

        b.stop()
        run("app1", "warm")
        r = results[("app1", "warm")]
        assert r.ok, r
        assert not ociup.compare_layouts(str(tmp_path / "app1-warm"), direct["app1"])
    finally:
        stackmod.stop_all(a, b, reg)
