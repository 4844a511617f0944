"""Policies on registries ([registry] policies = ..., docs/policy.md,
"Registries"), behind nginx and lighttpd with the shipped configs: skopeo
copies an allowed image through a cache registry; a denied image:tag
fails with skopeo's error naming the policy, and nothing is asked of the
upstream or stored for it; the denied tag is left out of tags/list; a
pull by digest of a denied tag's manifest (pushed to a hosted registry a
virtual one with the policy serves) is refused; a push of a denied tag to
a hosted registry is refused; and `larder config check` refuses an image
rule that does not parse, naming its line."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest

import cgi as cgimod
import frontends
import ociup
import stack as stackmod
from oci_images import KB, build_image, compare_layouts
from stack import http

pytestmark = pytest.mark.one_build("asan")

POLICY = """
[policy "images"]
deny = app:1.*, blocked, *:latest
"""


def extra(upstream_host):
    """The registries: "up" caches the stand-in under the policy; "team"
    is hosted under it; "store" is hosted with none, and "gate" a virtual
    registry over store with the policy."""
    return ociup.registry_section("up", "http://%s/" % upstream_host, default=False,
                                  policies="images") + """
[registry "team"]
type = hosted
policies = images

[registry "store"]
type = hosted

[registry "gate"]
type = virtual
layers = store
policies = images
""" + POLICY


def token(fe, registry):
    p = subprocess.run([stackmod.larder_bin(), "token", "add", "--registry", registry,
                        "--actions", "pull,push", "-c", fe.larder_conf],
                       capture_output=True, env=stackmod.clean_env(), timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    frontends._chown_tree(fe.data_dir, fe.ids)
    return "u:" + p.stdout.decode().strip()


def rows(fe):
    db = sqlite3.connect(os.path.join(fe.data_dir, "larder.db"))
    try:
        return sorted(db.execute("SELECT registry, name, ref, sha256 FROM oci_refs")
                      .fetchall())
    finally:
        db.close()


def blob_files(fe):
    out = []
    for root, _, names in os.walk(os.path.join(fe.data_dir, "blobs")):
        out += names
    return sorted(out)


def denied(r, rule):
    """r is a 403 with the OCI DENIED body naming the policy and rule."""
    assert r.status == 403, (r.status, r.body[:300])
    body = json.loads(r.body)
    assert body["errors"][0]["code"] == "DENIED", body
    assert body["errors"][0]["message"] == 'denied by policy "images": deny = %s' % rule, body


@pytest.mark.parametrize("kind", ["nginx", "lighttpd-fcgi"])
def test_registry_policy(kind, tmp_path):
    why = frontends.missing_reason(kind) or ociup.missing_reason()
    if why:
        pytest.skip(why)
    reg = ociup.Registry(str(tmp_path / "registry")).start()
    workdir = frontends.new_workdir("larder-ocipol-")
    fe = None
    try:
        a = build_image(str(tmp_path / "a"), [8 * KB], seed="pol-a", tag="2.0")
        b = build_image(str(tmp_path / "b"), [9 * KB], seed="pol-b", tag="1.0")
        ociup.push(a.layout, "2.0", "%s/app:2.0" % reg.host)
        ociup.push(b.layout, "1.0", "%s/app:1.0" % reg.host)
        ociup.push(a.layout, "2.0", "%s/blocked:2.0" % reg.host)
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), stackmod.free_port(),
                                     larder_extra=dict(ociup.OCI_LARDER_KEYS),
                                     larder_extra_text=extra(reg.host))
        fe.start()
        host = "127.0.0.1:%d" % fe.port

        # allowed: skopeo copies it whole
        out = str(tmp_path / "ok")
        r = ociup.pull("%s/up/app:2.0" % host, out)
        assert r.ok, r
        assert not compare_layouts(out, a.layout)

        # denied by tag, by repository: skopeo's error names the policy;
        # nothing asked upstream, nothing stored
        before, blobs_before, asked = rows(fe), blob_files(fe), len(reg_log(reg))
        r = ociup.pull("%s/up/app:1.0" % host, str(tmp_path / "no1"))
        assert not r.ok
        assert 'denied by policy \\"images\\": deny = app:1.*' in r.err or \
            'denied by policy "images": deny = app:1.*' in r.err, r.err
        for path in ("/v2/up/app/manifests/1.0", "/v2/up/blocked/manifests/2.0",
                     "/v2/up/app/manifests/latest"):
            for method in ("GET", "HEAD"):
                resp = http(fe.base + path, method=method,
                            headers={"Accept": ociup.ACCEPT_ALL})
                assert resp.status == 403, (path, method, resp.status)
        denied(http(fe.base + "/v2/up/blocked/manifests/2.0"), "blocked")
        denied(http(fe.base + "/v2/up/blocked/manifests/" + a.digest), "blocked")
        denied(http(fe.base + "/v2/up/app/manifests/latest"), "*:latest")
        assert rows(fe) == before
        assert blob_files(fe) == blobs_before
        assert not [l for l in reg_log(reg)[asked:]
                    if "/manifests/1.0" in l or "/blocked/" in l], reg_log(reg)[asked:]

        # the denied tag is not listed
        r, tags = ociup.list_tags("%s/up/app" % host)
        assert r.ok, r
        assert tags == ["2.0"], tags

        # hosted: a push of a denied tag is refused, an allowed one taken
        tok = token(fe, "team")
        ociup.push(a.layout, "2.0", "%s/team/app:2.0" % host, creds=tok)
        with pytest.raises(RuntimeError) as e:
            ociup.push(b.layout, "1.0", "%s/team/app:1.0" % host, creds=tok)
        assert 'denied by policy' in str(e.value) and "app:1.*" in str(e.value), e.value
        with pytest.raises(RuntimeError):
            ociup.push(a.layout, "2.0", "%s/team/app:latest" % host, creds=tok)
        r, tags = ociup.list_tags("%s/team/app" % host)
        assert tags == ["2.0"], (r, tags)
        assert not [x for x in rows(fe) if x[0] == "team" and x[2] in ("1.0", "latest")]

        # a virtual registry under the policy over a hosted one without:
        # the denied tag, and the digest it points at, are refused
        stok = token(fe, "store")
        ociup.push(b.layout, "1.0", "%s/store/app:1.0" % host, creds=stok)
        ociup.push(a.layout, "2.0", "%s/store/app:2.0" % host, creds=stok)
        r = ociup.pull("%s/store/app:1.0" % host, str(tmp_path / "s1"))
        assert r.ok, r
        r = ociup.pull("%s/gate/app:1.0" % host, str(tmp_path / "g1"))
        assert not r.ok and "denied by policy" in r.err, r
        dig = [x[3] for x in rows(fe) if x[0] == "store" and x[2] == "1.0"][0]
        denied(http(fe.base + "/v2/gate/app/manifests/sha256:" + dig,
                    headers={"Accept": ociup.ACCEPT_ALL}), "app:1.*")
        r = ociup.pull("%s/gate/app@sha256:%s" % (host, dig), str(tmp_path / "g2"))
        assert not r.ok and "denied by policy" in r.err, r
        r = ociup.pull("%s/gate/app:2.0" % host, str(tmp_path / "g3"))
        assert r.ok, r
        r, tags = ociup.list_tags("%s/gate/app" % host)
        assert tags == ["2.0"], (r, tags)
        r, tags = ociup.list_tags("%s/store/app" % host)
        assert tags == ["1.0", "2.0"], (r, tags)

        # counted in /metrics, listed on /+status
        m = http(fe.base + "/metrics").body.decode()
        n = [l for l in m.splitlines()
             if l.startswith("larder_policy_refused_manifests_total ")]
        assert n and int(float(n[0].split()[1])) >= 8, n
        s = http(fe.base + "/+status").body.decode()
        assert "Registry policies" in s and "<td>gate</td><td>images</td>" in s, s
    finally:
        if fe:
            fe.stop()
        reg.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def reg_log(reg):
    """The stand-in registry's access log lines."""
    with open(reg.log, errors="replace") as f:
        return f.read().splitlines()


def test_config_check_refuses_bad_image_rule(tmp_path):
    """A PyPI-only part, or an upper-case repository glob, in a policy a
    registry names: `larder config check` names the line and why."""
    conf = tmp_path / "larder.conf"
    conf.write_text("[larder]\ndata_dir = %s\n\n"
                    "[registry \"hub\"]\nupstream = https://registry.example/\n"
                    "policies = images\n\n"
                    "[policy \"images\"]\nallow = team/*\n"
                    "deny = requests <2.20\n" % (tmp_path / "data"))
    p = subprocess.run([stackmod.larder_bin(), "config", "check", "-c", str(conf)],
                       capture_output=True, env=stackmod.clean_env(), timeout=30)
    assert p.returncode != 0
    err = p.stderr.decode() + p.stdout.decode()
    assert "larder.conf:10:" in err and "PyPI-only" in err, err
    conf.write_text(conf.read_text().replace("requests <2.20", "Library/nginx"))
    p = subprocess.run([stackmod.larder_bin(), "config", "check", "-c", str(conf)],
                       capture_output=True, env=stackmod.clean_env(), timeout=30)
    err = p.stderr.decode() + p.stdout.decode()
    assert p.returncode != 0 and "larder.conf:10:" in err and "lower case" in err, err
    conf.write_text(conf.read_text().replace("Library/nginx", "library/nginx:1.*"))
    p = subprocess.run([stackmod.larder_bin(), "config", "check", "-c", str(conf)],
                       capture_output=True, env=stackmod.clean_env(), timeout=30)
    assert p.returncode == 0, p.stderr.decode()


def test_policy_check_command(tmp_path):
    """`larder policy check REGISTRY IMAGE[:TAG]` says what each rule
    decides; exit 1 when denied, 0 when allowed, 2 for a bad image."""
    conf = tmp_path / "larder.conf"
    conf.write_text("[larder]\ndata_dir = %s\n\n"
                    "[registry \"hub\"]\nupstream = https://registry.example/\n"
                    "policies = images\n\n"
                    "[policy \"images\"]\nallow = team/*\n"
                    "deny = library/nginx:1.*, */*:latest\n" % (tmp_path / "data"))

    def check(image):
        p = subprocess.run([stackmod.larder_bin(), "policy", "check", "-c", str(conf),
                            "hub", image], capture_output=True, env=stackmod.clean_env(),
                           timeout=30)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    rc, out, _ = check("library/nginx:1.25")
    assert rc == 1, out
    assert "    allow = team/*: does not match\n" \
           "    deny = library/nginx:1.*: matches: denies\n" \
           "    deny = */*:latest: not reached\n" in out, out
    assert 'denied by policy "images": deny = library/nginx:1.*' in out, out
    rc, out, _ = check("team/app:latest")
    assert rc == 0 and 'allowed by policy "images": allow = team/*' in out, out
    rc, out, _ = check("library/alpine:latest")
    assert rc == 1 and "deny = */*:latest: matches: denies" in out, out
    rc, _, err = check("Bad:x")
    assert rc == 2 and "not an image name" in err, err


def nginx_front_end(prefix, text):
    """An nginx front end (not started) with the registries of text, and
    its work directory."""
    workdir = frontends.new_workdir(prefix)
    fe = frontends.make_frontend("nginx", os.path.join(workdir, "fe"), stackmod.free_port(),
                                 larder_extra=dict(ociup.OCI_LARDER_KEYS),
                                 larder_extra_text=text)
    return fe, workdir


def push_app(fe, tmp_path, seed):
    """Pushes a one-layer image as store/app:1.0 through fe; returns the
    digest larder holds for that tag."""
    b = build_image(str(tmp_path / "b"), [9 * KB], seed=seed, tag="1.0")
    ociup.push(b.layout, "1.0", "127.0.0.1:%d/store/app:1.0" % fe.port,
               creds=token(fe, "store"))
    return [x[3] for x in rows(fe) if x[0] == "store" and x[2] == "1.0"][0]


def test_digest_refused_when_its_tags_cannot_be_read(tmp_path):
    """A pull by digest is judged by the tags that point at it: when they
    cannot be read (the database fails), the answer is a 503 that says so,
    never the manifest of a tag the policy denies."""
    why = frontends.missing_reason("nginx") or ociup.missing_reason()
    if why:
        pytest.skip(why)
    lib = cgimod.faultlib(str(tmp_path), malloc=False)
    if not lib:
        pytest.skip("no C compiler for faultlib.c")
    fe, workdir = nginx_front_end("larder-ocipol-db-", '\n[registry "store"]\ntype = hosted\n'
                                  '\n[registry "gate"]\ntype = virtual\nlayers = store\n'
                                  'policies = images\n' + POLICY)
    try:
        fe.start()
        dig = push_app(fe, tmp_path, "pol-db")
        path = "/v2/gate/app/manifests/sha256:" + dig
        denied(http(fe.base + path, headers={"Accept": ociup.ACCEPT_ALL}), "app:1.*")
        fe.stop()
        # the same request as a CGI program whose query of a digest's tags
        # fails (faultlib.c)
        fault = {"FAULT_SQL": "SELECT ref FROM oci_refs WHERE sha256 = ?3"}
        r = cgimod.run(fe.larder_conf, path, accept=ociup.ACCEPT_ALL, preload=lib,
                       extra_env=fault, timeout=30)
        assert r.status == 503, (r, r.body[:300], r.stderr[-2000:])
        body = json.loads(r.body)
        assert body["errors"][0]["code"] == "UNAVAILABLE", body
        assert "tags" in body["errors"][0]["message"], body
        r = cgimod.run(fe.larder_conf, path, accept=ociup.ACCEPT_ALL, timeout=30)
        assert r.status == 403, (r, r.body[:300], r.stderr[-2000:])
    finally:
        fe.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_nginx_keeps_no_denied_digest(tmp_path):
    """nginx's page cache keeps a manifest by digest (conf/nginx.conf) for
    the registry's cache_ttl, not a year: a policy a reload adds denies a
    digest nginx held within cache_ttl (docs/policy.md, "How soon a
    change shows")."""
    why = frontends.missing_reason("nginx") or ociup.missing_reason()
    if why:
        pytest.skip(why)
    fe, workdir = nginx_front_end("larder-ocipol-ng-", '\n[registry "store"]\ntype = hosted\n'
                                  'cache_ttl = 2\n' + POLICY)
    try:
        fe.start()
        dig = push_app(fe, tmp_path, "pol-ng")
        path = "/v2/store/app/manifests/sha256:" + dig
        assert http(fe.base + path).status == 200
        again = http(fe.base + path)
        assert again.status == 200 and again.header("X-Larder-Cache") == "HIT", again.headers
        with open(fe.larder_conf) as f:
            conf = f.read()
        assert 'type = hosted\ncache_ttl = 2\n' in conf
        with open(fe.larder_conf, "w") as f:
            f.write(conf.replace('type = hosted\ncache_ttl = 2\n',
                                 'type = hosted\ncache_ttl = 2\npolicies = images\n'))
        fe.larder.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 8
        r = http(fe.base + path)
        while r.status == 200 and time.monotonic() < deadline:
            time.sleep(0.25)
            r = http(fe.base + path)
        denied(r, "app:1.*")
    finally:
        fe.stop()
        shutil.rmtree(workdir, ignore_errors=True)
