"""[policy] sections (docs/policy.md) with real pip, through larder behind
nginx and lighttpd (FastCGI) against the stand-in upstream: a denied
version makes pip take the next allowed one, a project denied outright
cannot be installed and says which policy and rule refused it, and an OSV
advisory built here holds back the range it names. Also larder policy
check, /metrics and /+status.

The cache index "safe" applies the policy; root/pypi is a virtual index
over it, the URL pip is given.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from urllib.parse import urljoin

import pytest

import frontends
import stack as stackmod
import wheels
from stack import PIP_ACCEPT, http
from wheels import A10, A11, NOMETA

FRONT_ENDS = ("nginx", "lighttpd-fcgi")
# short, so that what an OSV import changes shows once the copies a front
# end's cache holds go stale
CACHE_TTL = 2

POLICY = """
[index "safe"]
type = cache
upstream = http://127.0.0.1:{port}/simple/
trusted_hosts = localhost:{files_port}
policies = strict

[policy "strict"]
deny = larder-demo-a ==1.1, larder-demo-nometa
deny_vulnerable = yes
"""


@pytest.fixture
def fe(request, wheel_dir):
    """A front end of the kind given (indirect parametrisation), its
    stand-in, and the policy above; yields the started front end."""
    yield from front_end(request.param, wheel_dir, POLICY)


def front_end(kind, wheel_dir, policy):
    """Starts a front end of kind, with a stand-in serving wheel_dir and
    the config text policy; yields it, then stops both."""
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    workdir = frontends.new_workdir()
    standin = stackmod.Standin(wheel_dir, os.path.join(workdir, "standin"))
    front = None
    try:
        standin.start()
        text = policy.format(port=standin.port, files_port=standin.files_port)
        front = frontends.make_frontend(kind, os.path.join(workdir, "fe"), standin.port,
                                        workers=2, files_port=standin.files_port,
                                        cache_ttl=CACHE_TTL,
                                        larder_extra_text=text, root_pypi="layers = safe\n")
        front.start()
        front.standin = standin
        yield front
    finally:
        if front is not None:
            front.stop()
        standin.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def each_front_end(f):
    return pytest.mark.parametrize("fe", FRONT_ENDS, indirect=True)(f)


def larder(conf, *args):
    """Runs `larder ARGS -c CONF`; returns (rc, stdout, stderr)."""
    p = subprocess.run([stackmod.larder_bin()] + list(args) + ["-c", conf],
                       capture_output=True, env=stackmod.clean_env(), timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def page(fe, project, route="root/pypi"):
    r = http("%s/%s/simple/%s/" % (fe.base, route, project),
             headers={"Accept": PIP_ACCEPT})
    assert r.status == 200, r
    return r, [f["filename"] for f in r.json()["files"]]


def file_path(wheel_dir, fn, route="root/pypi"):
    with open(os.path.join(wheel_dir, fn), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return "/%s/files/%s/%s" % (route, sha, fn)


@each_front_end
def test_denied_version_pip_takes_the_next(fe, wheel_dir, new_venv):
    r, names = page(fe, "larder-demo-a")
    assert A10 in names and A11 not in names, names
    assert r.header("X-Larder-Held-Back") == "1", r.headers
    # the cache index's own page says the same
    r, names = page(fe, "larder-demo-a", route="safe")
    assert A11 not in names and r.header("X-Larder-Held-Back") == "1"
    venv = new_venv()
    code, out = stackmod.pip_install(venv, fe.url, ["larder-demo-a"])
    assert code == 0, out
    assert stackmod.installed(venv)["larder-demo-a"] == "1.0"
    # a direct request: a 403 whose one line names the policy and the rule
    for route in ("root/pypi", "safe"):
        r = http(fe.base + file_path(wheel_dir, A11, route))
        assert r.status == 403, r
        assert b'denied by policy "strict": deny = larder-demo-a ==1.1' in r.body, r.body
    r = http(fe.base + file_path(wheel_dir, A11) + ".metadata")
    assert r.status == 403, r
    # what allowed files get is unchanged
    assert http(fe.base + file_path(wheel_dir, A10)).status == 200
    # counted in /metrics, listed on /+status
    m = http(fe.base + "/metrics").body.decode()
    assert re.search(r"^larder_policy_denied_files_total [1-9]", m, re.M), m
    assert re.search(r"^larder_policy_refused_total [1-9]", m, re.M), m
    s = http(fe.base + "/+status").body.decode()
    assert "<h2>Policies</h2>" in s and A11 in s, s
    # larder policy check says what each rule decides
    rc, out, err = larder(fe.larder_conf, "policy", "check", "safe", "larder-demo-a", "1.1")
    assert rc == 1, (out, err)
    assert "deny = larder-demo-a ==1.1: matches: denies" in out, out
    assert 'when the page was rendered: denied by policy "strict"' in out, out
    rc, out, err = larder(fe.larder_conf, "policy", "check", "safe", "larder-demo-a", "1.0")
    assert rc == 0, (out, err)
    assert "deny = larder-demo-a ==1.1: does not match" in out, out


@each_front_end
def test_project_denied_outright(fe, wheel_dir, new_venv):
    r, names = page(fe, "larder-demo-nometa")
    assert names == [], names
    assert r.header("X-Larder-Held-Back") == "1", r.headers
    # the page says why, the PEP 792 way: an installer that reads project
    # statuses (pip 23 does not) can name the policy
    reason = 'denied by policy "strict": deny = larder-demo-nometa'
    assert r.json()["meta"]["api-version"] == "1.4", r.json()
    assert r.json()["project-status"] == {"status": "quarantined",
                                          "reason": reason}, r.json()
    h = http("%s/root/pypi/simple/larder-demo-nometa/" % fe.base,
             headers={"Accept": "text/html"})
    assert h.status == 200, h
    assert b'<meta name="pypi:project-status" content="quarantined">' in h.body, h.body
    assert (b'<meta name="pypi:project-status-reason" content="denied by '
            b'policy &quot;strict&quot;: deny = larder-demo-nometa">') in h.body, h.body
    # a project with a file left is not marked
    r, names = page(fe, "larder-demo-a")
    assert names and "project-status" not in r.json(), r.json()
    venv = new_venv()
    code, out = stackmod.pip_install(venv, fe.url, ["larder-demo-nometa"])
    assert code != 0, out
    assert "larder-demo-nometa" in out and "from versions: none" in out, out
    # the file, asked for by its URL as a lock file has it, names the rule
    venv = new_venv()
    url = fe.base + file_path(wheel_dir, NOMETA)
    code, out = stackmod.pip_install(venv, fe.url, [url])
    assert code != 0, out
    assert "403" in out, out
    r = http(url)
    assert r.status == 403
    assert r.body.strip() == \
        b'403 Forbidden: denied by policy "strict": deny = larder-demo-nometa', r.body
    rc, out, err = larder(fe.larder_conf, "policy", "check", "safe", "larder-demo-nometa")
    assert rc == 1, (out, err)
    assert "deny = larder-demo-nometa: matches: denies" in out, out


LICENSE_POLICY = POLICY.replace("deny_vulnerable = yes\n", "").replace(
    "larder-demo-nometa\n", "larder-demo-nometa, * license=GPL*, * yanked\n") + """
[index "mitonly"]
type = cache
upstream = http://127.0.0.1:{port}/simple/
trusted_hosts = localhost:{files_port}
policies = mit

[policy "mit"]
allow = * license=*MIT*
default = deny
"""
LIC10 = "larder_demo_lic-1.0-py3-none-any.whl"
LIC20 = "larder_demo_lic-2.0-py3-none-any.whl"
LIC30 = "larder_demo_lic-3.0-py3-none-any.whl"


@pytest.fixture
def fe_license(request, tmp_path_factory):
    """As fe, with a project whose 1.0 is MIT (a classifier), whose 2.0
    is GPL-3.0-only (License-Expression) and whose 3.0 is MIT and yanked,
    and a policy that denies GPL and yanked files."""
    d = str(tmp_path_factory.mktemp("license-wheels"))
    mit = ["Classifier: License :: OSI Approved :: MIT License"]
    wheels.build_wheel(d, "larder-demo-lic", "1.0", extra_meta=mit)
    wheels.build_wheel(d, "larder-demo-lic", "2.0", extra_meta=[
        "License-Expression: GPL-3.0-only"])
    wheels.build_wheel(d, "larder-demo-lic", "3.0", extra_meta=mit,
                       yanked="broken")
    yield from front_end(request.param, d, LICENSE_POLICY)


def lic_url(fe, route, filename):
    return fe.base + "/%s/files/%s/%s" % (
        route, wheels.sha256_file(os.path.join(fe.standin.wheels, filename)), filename)


@pytest.mark.parametrize("fe_license", FRONT_ENDS, indirect=True)
def test_license_denied_once_metadata_is_held(fe_license, new_venv):
    """A license= rule knows a file's license once larder holds its
    metadata. The first page is rendered before larder holds any, so it
    lists 2.0 (GPL); pip's request for that wheel makes larder fetch its
    .metadata first (pip 23.0 asks for none), and the wheel is refused
    naming the rule, before any of its bytes go out. The page, rendered
    again, leaves 2.0 out, and pip takes 1.0 (MIT)."""
    fe = fe_license
    rule = b'denied by policy "strict": deny = * license=GPL*'
    # an allow list of licenses: a file whose license is not known yet is
    # left out of the page, and let through once its metadata says MIT
    r, names = page(fe, "larder-demo-lic", route="mitonly")
    assert names == [], names
    got = http(lic_url(fe, "mitonly", LIC10))
    assert got.status == 200, (got, got.body[:300])
    deadline = time.monotonic() + 15  # (nginx keeps the page cache_ttl)
    while not names and time.monotonic() < deadline:
        time.sleep(0.5)
        r, names = page(fe, "larder-demo-lic", route="mitonly")
    assert names == [LIC10], names
    r, names = page(fe, "larder-demo-lic")
    assert sorted(names) == [LIC10, LIC20], names  # no metadata held yet
    # decided again at the request, a file is still judged whole: its
    # license allows the yanked 3.0, the yanked rule does not
    got = http(lic_url(fe, "safe", LIC30))
    assert got.status == 403 and b"deny = * yanked" in got.body, (got, got.body)
    code, out = stackmod.pip_install(new_venv(), fe.url, ["larder-demo-lic"])
    assert code != 0 and "403" in out, out
    wheel = [f for f in r.json()["files"] if f["filename"] == LIC20][0]
    got = http(urljoin("%s/root/pypi/simple/larder-demo-lic/" % fe.base, wheel["url"]))
    assert got.status == 403 and rule in got.body, (got, got.body)
    counts = fe.standin.counters()
    assert LIC20 not in counts["files"], counts  # never fetched
    assert counts["metadata"].get(LIC20) == 1, counts
    deadline = time.monotonic() + 15  # (nginx keeps the page cache_ttl)
    while LIC20 in names and time.monotonic() < deadline:
        time.sleep(0.5)
        r, names = page(fe, "larder-demo-lic")
    assert names == [LIC10], names
    assert r.header("X-Larder-Held-Back") == "2", r.headers
    venv = new_venv()
    code, out = stackmod.pip_install(venv, fe.url, ["larder-demo-lic"])
    assert code == 0, out
    assert stackmod.installed(venv)["larder-demo-lic"] == "1.0"
    rc, out, err = larder(fe.larder_conf, "policy", "check", "safe", "larder-demo-lic")
    assert rc == 1, (out, err)
    assert "license: GPL-3.0-only" in out, out
    assert "license: License :: OSI Approved :: MIT License" in out, out
    assert "deny = * license=GPL*: matches: denies" in out, out


@pytest.mark.parametrize("fe_license", ["nginx"], indirect=True)
def test_license_read_from_the_wheel_when_no_metadata_is_vouched_for(fe_license):
    """An upstream that gives no hash for its .metadata vouches for none:
    larder does not judge a license by it. A request for the wheel fetches
    the whole wheel first, reads the license from its verified bytes, and
    refuses it; the next request decides the same without asking upstream
    again, and the page leaves it out."""
    fe = fe_license
    fe.standin.control(meta_no_hash=True)
    r, names = page(fe, "larder-demo-lic")
    assert sorted(names) == [LIC10, LIC20], names
    for _ in range(2):
        got = http(lic_url(fe, "safe", LIC20))
        assert got.status == 403, (got, got.body)
        assert b'deny = * license=GPL*' in got.body, got.body
    counts = fe.standin.counters()
    assert counts["files"].get(LIC20) == 1, counts  # stored, never sent
    deadline = time.monotonic() + 15  # (nginx keeps the page cache_ttl)
    while LIC20 in names and time.monotonic() < deadline:
        time.sleep(0.5)
        r, names = page(fe, "larder-demo-lic")
    assert names == [LIC10], names


def osv_advisory(path, project, introduced, fixed=None):
    """Writes one OSV advisory (the form of osv.dev's PyPI dump) to path."""
    events = [{"introduced": introduced}]
    if fixed:
        events.append({"fixed": fixed})
    doc = {"schema_version": "1.6.0", "id": "GHSA-test-0001-0001",
           "modified": "2026-01-01T00:00:00Z", "aliases": ["CVE-2026-0001"],
           "summary": "a test advisory",
           "affected": [{"package": {"ecosystem": "PyPI", "name": project},
                         "ranges": [{"type": "ECOSYSTEM", "events": events}]}]}
    with open(path, "w") as f:
        json.dump(doc, f)


@each_front_end
def test_osv_holds_back_the_affected_range(fe, wheel_dir, new_venv, tmp_path):
    # before: larder-demo-c 2.0 is what pip takes
    r, names = page(fe, "larder-demo-c")
    assert any("2.0" in n for n in names), names
    adv = str(tmp_path / "GHSA-test.json")
    osv_advisory(adv, "Larder_Demo.C", "1.5")
    bad = str(tmp_path / "broken.json")
    with open(bad, "w") as f:
        f.write('{"id": "X", "affected": [')
    rc, out, err = larder(fe.larder_conf, "policy", "import-osv", adv, bad)
    assert rc == 1, (out, err)
    assert "broken.json" in err and "nothing of it loaded" in err, err
    assert "loaded 1 advisories (1 PyPI ranges); 1 held" in out, out
    # the import made larder's page stale: it is rendered again, by the
    # advisory, once the copy the front end holds is stale too
    time.sleep(CACHE_TTL + 0.5)
    r, names = page(fe, "larder-demo-c")
    assert not any("2.0" in n for n in names), names
    assert r.header("X-Larder-Held-Back") == "2", r.headers  # the wheel and the sdist
    venv = new_venv()
    # 1.0 is yanked: pip takes it only when pinned
    code, out = stackmod.pip_install(venv, fe.url, ["larder-demo-c==1.0"])
    assert code == 0, out
    code, out = stackmod.pip_install(new_venv(), fe.url, ["larder-demo-c>=2"])
    assert code != 0 and "from versions:" in out, out
    r = http(fe.base + file_path(wheel_dir, "larder_demo_c-2.0-py3-none-any.whl"))
    assert r.status == 403
    assert b"deny_vulnerable = yes: GHSA-test-0001-0001 affects larder-demo-c 2.0" in r.body, \
        r.body
    s = http(fe.base + "/+status").body.decode()
    assert "1 OSV advisories loaded" in s, s


def test_bad_policy_is_refused(tmp_path):
    """A rule that does not parse stops larder config check, naming the
    line; nothing is served with a policy half read."""
    conf = tmp_path / "larder.conf"
    conf.write_text('[larder]\ndata_dir = %s\n[policy "p"]\ndeny = requests <banana\n'
                    % (tmp_path / "data"))
    p = subprocess.run([stackmod.larder_bin(), "config", "check", "-c", str(conf)],
                       capture_output=True, env=stackmod.clean_env(), timeout=30)
    assert p.returncode != 0
    assert b"larder.conf:4:" in p.stderr and b"PEP 440" in p.stderr, p.stderr
