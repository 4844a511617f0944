"""Tokens: `larder token add|list|revoke` through the binary, and an index
with read = token behind nginx (and Apache mod_fcgid, which keeps the
Authorization header unless told to pass it): refused without a good
token, nothing fetched upstream for a refused client, served with one
(HTTP Basic or Bearer, and pip with credentials in the index URL), its
answers marked Cache-Control: private and never kept by nginx's page
cache for the next client."""

import base64
import os
import re
import shutil
import subprocess
import time

import pytest

import frontends
import stack as stackmod
from stack import PIP_ACCEPT, http

# team/pypi needs a token to read; other/pypi is a sibling over the same
# cache (a token for it is not one for team/pypi); root/pypi stays
# anonymous; team/private is hosted, read by token.
EXTRA = """
[index "team/pypi"]
type = virtual
layers = pypi
read = token

[index "other/pypi"]
type = virtual
layers = pypi

[index "team/private"]
type = hosted
read = token
"""

TOKEN_RE = re.compile(r"^lt_([0-9a-f]{16})_[0-9a-f]{64}$")
PAGE = "/team/pypi/simple/larder-demo-a/"

# (one_build: hostile input and API matrices: run once, under ASan, where a memory error would show)
pytestmark = [pytest.mark.stack(larder_extra_text=EXTRA),
              pytest.mark.one_build("asan")]


def larder_token(conf, *args):
    """Runs `larder token ARGS -c CONF`; returns (rc, stdout, stderr)."""
    p = subprocess.run([stackmod.larder_bin(), "token"] + list(args) + ["-c", conf],
                       capture_output=True, env=stackmod.clean_env(), timeout=30)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def new_token(conf, *args):
    """A new token made with `larder token add ARGS`; returns (token, id)."""
    rc, out, err = larder_token(conf, "add", *args)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 1, out
    m = TOKEN_RE.match(lines[0])
    assert m, out
    return lines[0], m.group(1)


def basic(token, user="__token__", password=None):
    pair = "%s:%s" % (user, token if password is None else password)
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


def bearer(token):
    return {"Authorization": "Bearer " + token}


def get(base, path, headers=None):
    h = {"Accept": PIP_ACCEPT}
    h.update(headers or {})
    return http(base + path, headers=h)


def upstream_requests(stack):
    return sum(stack.standin.counters()["requests"].values())


def test_token_commands(stack):
    conf = stack.larder.conf
    tok, tid = new_token(conf, "--index", "team/pypi", "--actions", "read",
                         "--projects", "Corp_*", "internal-?", "--projects", "x",
                         "--expires", "90d", "--note", "ci runner")
    tok2, tid2 = new_token(conf, "--index", "pypi", "--actions", "read")
    assert tid != tid2
    rc, out, err = larder_token(conf, "list")
    assert rc == 0, err
    rows = [l.split("\t") for l in out.splitlines()]
    # a header row names the columns, the two dates above all
    assert rows.pop(0) == ["ID", "INDEX", "ACTIONS", "PROJECTS", "CREATED",
                           "EXPIRES", "STATE", "NOTE"], out
    assert [r[0] for r in rows] == [tid, tid2]
    first = rows[0]
    assert first[1:4] == ["team/pypi", "read", "corp-* internal-? x"]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", first[4])
    assert first[5] != "never" and first[6:] == ["active", "ci runner"]
    assert rows[1][3] == "*" and rows[1][5] == "never" and rows[1][6] == "active"
    # the secret is never shown again, nor stored
    assert tok.split("_")[2] not in out
    with open(os.path.join(stack.data_dir, "larder.db"), "rb") as f:
        assert tok.split("_")[2].encode() not in f.read()

    rc, out, err = larder_token(conf, "revoke", tid2)
    assert rc == 0, err
    rc, out, err = larder_token(conf, "list")
    assert out.splitlines()[2].split("\t")[6] == "revoked"
    rc, out, err = larder_token(conf, "revoke", "0000000000000000")
    assert rc == 1 and "no token 0000000000000000" in err

    for args, why in [
            (["--index", "nope", "--actions", "read"], "no such index"),
            (["--index", "pypi", "--actions", "read,publish"], 'unknown action "publish"'),
            (["--index", "pypi", "--actions", "read", "--expires", "3w"], "expected a duration"),
            (["--index", "pypi", "--actions", "read", "--projects", "a/b"], "project glob"),
            (["--index", "pypi"], "required"),
            # a cache, and a virtual index over caches only, take no
            # uploads: a token to change them would only ever get 405s
            (["--index", "pypi", "--actions", "upload"], "takes no uploads"),
            (["--index", "team/pypi", "--actions", "read,yank"], "takes no uploads"),
            (["--index", "pypi", "--actions", "delete"], "takes no uploads")]:
        rc, out, err = larder_token(conf, "add", *args)
        assert rc == 2 and why in err and out == "", (args, err)


def test_read_token_refusals(stack):
    conf = stack.larder.conf
    before = upstream_requests(stack)

    r = get(stack.base, PAGE)
    assert r.status == 401
    assert r.header("WWW-Authenticate") == 'Basic realm="larder"'
    assert b"credentials required" in r.body
    for headers in [bearer("nonsense"), basic("lt_0_0"),
                    {"Authorization": "Basic !!!"},
                    {"Authorization": "Digest x"}]:
        r = get(stack.base, PAGE, headers)
        assert r.status == 401 and b"bad credentials" in r.body, headers
    # a real id with the wrong secret
    good, gid = new_token(conf, "--index", "team/pypi", "--actions", "read")
    wrong = good[:-1] + ("0" if good[-1] != "0" else "1")
    r = get(stack.base, PAGE, basic(wrong))
    assert r.status == 401 and b"bad credentials" in r.body

    revoked, rid = new_token(conf, "--index", "team/pypi", "--actions", "read")
    assert larder_token(conf, "revoke", rid)[0] == 0
    r = get(stack.base, PAGE, basic(revoked))
    assert r.status == 401 and b"token revoked" in r.body

    expired, _ = new_token(conf, "--index", "team/pypi", "--actions", "read",
                           "--expires", "1s")
    time.sleep(1.5)
    r = get(stack.base, PAGE, bearer(expired))
    assert r.status == 401 and b"token expired" in r.body
    assert larder_token(conf, "list")[1].count("\texpired\t") == 1

    # (a token to upload is made for an index that takes uploads)
    upload_only, _ = new_token(conf, "--index", "team/private", "--actions", "upload,yank")
    r = get(stack.base, "/team/private/simple/larder-demo-a/", basic(upload_only))
    assert r.status == 403 and b"lacks the read action" in r.body

    other, _ = new_token(conf, "--index", "other/pypi", "--actions", "read")
    r = get(stack.base, PAGE, basic(other))
    assert r.status == 403 and b"not team/pypi" in r.body

    corp, _ = new_token(conf, "--index", "team/pypi", "--actions", "read",
                        "--projects", "corp-*")
    r = get(stack.base, PAGE, basic(corp))
    assert r.status == 403 and b"does not cover project larder-demo-a" in r.body
    # the project list is any reader's
    r = get(stack.base, "/team/pypi/simple/", basic(corp))
    assert r.status == 200, r.body

    # nothing but that list was fetched for the refused clients
    assert upstream_requests(stack) - before <= 1
    # an anonymous index is as it was
    r = get(stack.base, "/root/pypi/simple/larder-demo-a/")
    assert r.status == 200 and "private" not in (r.header("Cache-Control") or "")


def test_read_token_serves(stack, dists):
    conf = stack.larder.conf
    tok, _ = new_token(conf, "--index", "team/pypi", "--actions", "read",
                       "--projects", "larder-demo-*")
    for headers in [basic(tok), basic(tok, user="anyone"),
                    basic("", user=tok, password=""), bearer(tok)]:
        r = get(stack.base, PAGE, headers)
        assert r.status == 200, (headers, r.status, r.body)
        assert r.header("Cache-Control") == "private", r.headers
    # nginx kept none of those for the next client
    r = get(stack.base, PAGE)
    assert r.status == 401
    # a read token for a layer does not read the index over it, which
    # would show it every other layer too
    layer_tok, _ = new_token(conf, "--index", "pypi", "--actions", "read")
    r = get(stack.base, PAGE, bearer(layer_tok))
    assert r.status == 403 and b"not team/pypi" in r.body, (r.status, r.body)

    page = get(stack.base, PAGE, bearer(tok)).json()
    f = next(f for f in page["files"] if f["filename"].endswith(".whl"))
    url = f["url"]
    path = url if url.startswith("/") else "/" + url.split("/", 3)[3]
    if not path.startswith("/team/"):
        path = "/team/pypi/simple/larder-demo-a/" + url  # relative
        path = os.path.normpath(path)
    assert get(stack.base, path).status == 401
    for attempt in range(2):  # a miss, then a hit through X-Accel-Redirect
        r = get(stack.base, path, bearer(tok))
        assert r.status == 200, r.body
        assert r.body == open(dists[f["filename"]].path, "rb").read()
        cc = r.header("Cache-Control")
        assert cc.startswith("private") and "public" not in cc, cc
    # a small file, which nginx keeps for a public index (conf/nginx.conf):
    # never for the next client here
    assert len(r.body) < 24 * 1024
    assert get(stack.base, path).status == 401
    # a token for other projects may not read its files either
    corp, _ = new_token(conf, "--index", "team/pypi", "--actions", "read",
                        "--projects", "corp-*")
    r = get(stack.base, path, bearer(corp))
    assert r.status == 403


def test_pip_with_credentials_in_url(stack, new_venv):
    tok, _ = new_token(stack.larder.conf, "--index", "team/pypi", "--actions", "read")
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.index_url("team/pypi"), ["larder-demo-a"])
    assert rc != 0, out
    assert stack.larder.find_log("GET", PAGE, 401)
    url = stack.index_url("team/pypi").replace("http://", "http://__token__:%s@" % tok)
    rc, out = stackmod.pip_install(venv, url, ["larder-demo-a"])
    assert rc == 0, out
    assert stackmod.installed(venv).get("larder-demo-a") == "1.1"


def test_apache_fcgid_passes_authorization(wheel_dir):
    """Apache keeps Authorization from FastCGI programs unless the config
    says CGIPassAuth On: the shipped one does."""
    kind = "apache-fcgid"
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    workdir = frontends.new_workdir()
    standin = stackmod.Standin(wheel_dir, os.path.join(workdir, "standin"))
    fe = None
    try:
        standin.start()
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), standin.port,
                                     workers=2, files_port=standin.files_port,
                                     larder_extra_text=EXTRA)
        fe.write_larder_conf()
        # the store the workers will use, made by the token command (run as
        # root it becomes the store's owner first)
        fe.prepare_data_dir()
        tok, _ = new_token(fe.larder_conf, "--index", "team/pypi", "--actions", "read")
        fe.start()
        assert get(fe.base, PAGE).status == 401
        r = get(fe.base, PAGE, basic(tok))
        assert r.status == 200, (r.body, fe.log_text()[-2000:])
        assert r.header("Cache-Control") == "private"
    finally:
        if fe is not None:
            fe.stop()
        standin.stop()
        shutil.rmtree(workdir, ignore_errors=True)
