"""Uploads to hosted indexes (issue 10), end to end: real publishers (twine,
`pdm publish`, `poetry publish`) and a twine-like client of the tests' own
(uploads.py) against larder behind nginx, then pip through the virtual
indexes over the hosted one and the stand-in upstream.

Every test gets its own stand-in, larder and nginx (the `stack` fixture
below: the suite's stack with the indexes of uploads.HOSTED_CONF, root/pypi
private-first over root/private and pypi). The stand-in serves the default
wheels plus corp-lib 99.0, the public package that must never shadow a
private corp-lib (dependency confusion). Uploads through the other web
servers (frontends.py) are at the end.
"""

import calendar
import concurrent.futures
import hashlib
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import time
from urllib.parse import urljoin, urlsplit

import pytest

import flighthelp as fh
import frontends
import stack as stackmod
import uploads as up
import wheels
from stack import JSON_TYPE, PIP_ACCEPT, http

CORP_PUBLIC = "corp_lib-99.0-py3-none-any.whl"
APP = "larder-up-app"
APP10 = "larder_up_app-1.0-py3-none-any.whl"
PYTHON = stackmod.PYTHON


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def up_wheels(tmp_path_factory):
    """The stand-in's files: the default set, and the public corp-lib 99.0."""
    d = str(tmp_path_factory.mktemp("up-wheels"))
    wheels.build_default(d)
    wheels.build_wheel(d, "corp-lib", "99.0", (), ">=3.7")
    return d


@pytest.fixture
def stack(request, tmp_path, up_wheels):
    """stand-in + larder (the hosted and virtual indexes) + nginx.
    @pytest.mark.stack(...) options as conftest's fixture takes them."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    opts = {"larder_extra_text": up.HOSTED_CONF, "root_pypi": up.ROOT_PYPI}
    marker = request.node.get_closest_marker("stack")
    if marker is not None:
        opts.update(marker.kwargs)
    st = stackmod.Stack(str(tmp_path / "stack"), up_wheels, **opts)
    st.start()
    try:
        yield st
    finally:
        st.stop()


@pytest.fixture
def dist(tmp_path):
    d = tmp_path / "dist"
    d.mkdir()
    return str(d)


@pytest.fixture
def uploader(stack):
    """A token for root/private with every action."""
    return up.token_add(stack.larder, "root/private", "upload,yank,delete,read",
                        note="uploader")


# ---------------------------------------------------------------- helpers

def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def page(st, project, route, accept=PIP_ACCEPT, headers=None):
    return st.get("/%s/simple/%s/" % (route, project), accept=accept, headers=headers)


def json_page(st, project, route="root/private"):
    r = page(st, project, route)
    assert r.status == 200, "%s %s: %r %s" % (route, project, r, r.body[:300])
    assert r.header("Content-Type", "").startswith(JSON_TYPE), r.header("Content-Type")
    return r.json()


def filenames(doc):
    return sorted(f["filename"] for f in doc["files"])


def entry(doc, filename):
    for f in doc["files"]:
        if f["filename"] == filename:
            return f
    raise AssertionError("%s not on the page: %s" % (filename, filenames(doc)))


def file_url(st, project, filename, route="root/private"):
    doc = json_page(st, project, route)
    return urljoin("%s/%s/simple/%s/" % (st.base, route, project),
                   entry(doc, filename)["url"]).split("#")[0]


def assert_serves(st, project, path, route="root/private"):
    """The file on route's page of project is served with path's bytes."""
    data = read(path)
    r = http(file_url(st, project, os.path.basename(path), route))
    assert r.status == 200 and r.complete, r
    assert sha256(r.body) == sha256(data), "served bytes differ from the upload"


# How long nginx and clients may keep a hosted page (fcgi/pypi/hosted.h
# HOSTED_FRESH): to the end of the second it was sent in, the Expires one
# second on.
HOSTED_FRESH = 1


def after_change():
    """Waits out the freshness of the pages sent before a change (an
    upload, yank or removal): to the next second, and a little."""
    time.sleep(HOSTED_FRESH - time.time() % 1 + 0.1)


def eventually(check, timeout=HOSTED_FRESH + 1.0):
    """check() until it stops raising AssertionError, timeout seconds at
    most (then its error)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def upstream_pages(st):
    return {k: v for k, v in st.standin.counters()["requests"].items()
            if k.startswith("GET /simple/")}


def publisher_env(tmp_path, extra=None):
    """An environment for twine, pdm and poetry: a HOME and config dirs of
    the test's own (the machine's config untouched), no keyring, no
    update check, no proxies."""
    home = os.path.join(str(tmp_path), "home")
    os.makedirs(home, exist_ok=True)
    env = stackmod.clean_env({
        "HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "TWINE_NON_INTERACTIVE": "1", "PDM_CHECK_UPDATE": "false",
        "POETRY_CONFIG_DIR": os.path.join(home, "poetry-config"),
        "POETRY_CACHE_DIR": os.path.join(home, "poetry-cache"),
        "POETRY_VIRTUALENVS_CREATE": "false", "NO_COLOR": "1",
    })
    for k in ("TWINE_USERNAME", "TWINE_PASSWORD", "TWINE_REPOSITORY_URL",
              "PDM_PUBLISH_USERNAME", "PDM_PUBLISH_PASSWORD", "PDM_PUBLISH_REPO"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def run(cmd, env, cwd=None, timeout=180):
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def setuptools_project(root, name, version, requires=()):
    """A tiny setuptools project (pyproject.toml, src layout) built with
    `python3 -m build --no-isolation` (no network: Debian's setuptools and
    wheel). Returns (wheel path, sdist path)."""
    mod = wheels.module_name(name)
    os.makedirs(os.path.join(root, "src", mod))
    with open(os.path.join(root, "pyproject.toml"), "w") as f:
        f.write('[build-system]\nrequires = ["setuptools>=61"]\n'
                'build-backend = "setuptools.build_meta"\n\n'
                '[project]\nname = "%s"\nversion = "%s"\ndescription = "larder test"\n'
                'requires-python = ">=3.7"\ndependencies = [%s]\n'
                % (name, version, ", ".join('"%s"' % r for r in requires)))
    with open(os.path.join(root, "src", mod, "__init__.py"), "w") as f:
        f.write('__version__ = "%s"\n' % version)
    rc, out = run([PYTHON, "-m", "build", "--no-isolation", root],
                  publisher_env(os.path.dirname(root)))
    if rc != 0 and "No module named build" in out:
        pytest.fail("python3-build is missing (contrib/deps.sh test installs it)")
    assert rc == 0, out
    built = sorted(os.listdir(os.path.join(root, "dist")))
    whl = [os.path.join(root, "dist", n) for n in built if n.endswith(".whl")]
    sdist = [os.path.join(root, "dist", n) for n in built if n.endswith(".tar.gz")]
    assert len(whl) == 1 and len(sdist) == 1, built
    return whl[0], sdist[0]


def need(tool):
    path = shutil.which(tool)
    if path is None:
        pytest.fail("%s is not installed (contrib/deps.sh test installs it)" % tool)
    return path


class SlowUpload:
    """An upload over a raw socket, sent in steps: the headers and the body
    as the caller pushes it, then the answer (or a close mid-body)."""

    def __init__(self, port, path, headers, body):
        self.body = body
        self.sent = 0
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        h = {"Host": "127.0.0.1:%d" % port, "Content-Length": str(len(body)),
             "Connection": "close"}
        h.update(headers)
        head = "POST %s HTTP/1.1\r\n%s\r\n" % (path, "".join("%s: %s\r\n" % kv
                                                          for kv in h.items()))
        self.sock.sendall(head.encode("latin-1"))

    def push(self, n):
        chunk = self.body[self.sent:self.sent + n]
        self.sock.sendall(chunk)
        self.sent += len(chunk)

    def push_slowly(self, upto, seconds):
        step = max(1, (upto - self.sent) // 20)
        while self.sent < upto:
            self.push(min(step, upto - self.sent))
            time.sleep(seconds / 20)

    def abort(self):
        self.sock.close()

    def finish(self):
        """Sends the rest and reads the answer: (status, body)."""
        try:
            self.push(len(self.body) - self.sent)
        except OSError:
            pass
        chunks = []
        try:
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    break
                chunks.append(data)
        except OSError:
            pass
        self.sock.close()
        raw = b"".join(chunks)
        m = re.match(rb"HTTP/1\.\d (\d{3})", raw)
        return (int(m.group(1)) if m else 0), raw.partition(b"\r\n\r\n")[2]


def slow_upload(st_port, index, path, tok, fields=None):
    ctype, body = up.upload_body(path, fields=fields)
    h = {"Content-Type": ctype}
    h.update(up.basic(tok))
    return SlowUpload(st_port, "/%s/" % index, h, body)


def assert_fsck_clean(larder):
    p = subprocess.run([larder.binary, "fsck", "-c", larder.conf], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120, env=stackmod.clean_env())
    assert p.returncode == 0, "larder fsck:\n" + p.stdout.decode(errors="replace")


# ================================================================ 1. the shipped config

def test_shipped_nginx_config_takes_uploads():
    """conf/nginx.conf lets a max_upload_size body through (nginx's own cap
    is 1 MB; larder's default max_upload_size 100M) and streams it to
    larder rather than spooling it first; the tests' nginx sets these
    directives as it does."""
    d = stackmod.shipped_body_directives()
    size = d.get("client_max_body_size")
    assert size is not None, "conf/nginx.conf sets no client_max_body_size: nginx " \
        "refuses any upload over 1 MB"
    m = re.match(r"^(\d+)([kKmMgG]?)$", size)
    assert m, size
    n = int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    assert n == 0 or n >= 100 * (1 << 20), "client_max_body_size %s < 100M" % size
    assert d.get("fastcgi_request_buffering") == "off", \
        "conf/nginx.conf spools every upload to nginx's disk before larder reads it " \
        "(fastcgi_request_buffering is %r)" % d.get("fastcgi_request_buffering")
    tests = stackmod.nginx_conf("/p", 1, 2, "/d")
    for k, v in d.items():
        assert re.search(r"(?m)^\s*%s\s+%s;" % (re.escape(k), re.escape(v)), tests), \
            "stack.nginx_conf() does not set %s %s as conf/nginx.conf does" % (k, v)


# ================================================================ 2. publishers

def test_twine_upload_then_pip_install(stack, tmp_path, new_venv):
    """twine uploads a wheel and an sdist built by `python3 -m build`; the
    same again with --skip-existing, and without it (identical bytes: 200),
    change nothing; pip installs the project from root/pypi with its
    dependency from the upstream."""
    twine = need("twine")
    tok = up.token_add(stack.larder, "root/private", "upload")
    whl, sdist = setuptools_project(str(tmp_path / "proj"), "larder-up-twine", "1.0",
                                    requires=["larder-demo-c"])
    env = publisher_env(tmp_path)
    url = "%s/root/private/" % stack.base
    rc, out = run([twine, "upload", "--disable-progress-bar", "--repository-url", url,
                   "-u", "__token__", "-p", tok, whl, sdist], env)
    assert rc == 0, out
    rows = up.hosted_rows(stack.data_dir, "root/private")
    assert sorted(r["filename"] for r in rows) == sorted(
        os.path.basename(p) for p in (whl, sdist)), rows
    for r, p in zip(sorted(rows, key=lambda r: r["filename"]),
                    sorted((whl, sdist), key=os.path.basename)):
        assert r["sha256"] == sha256(read(p)) and r["size"] == os.path.getsize(p), r
        assert r["project"] == "larder-up-twine" and r["version"] == "1.0", r
    doc = json_page(stack, "larder-up-twine")
    assert filenames(doc) == sorted(os.path.basename(p) for p in (whl, sdist)), doc
    assert_serves(stack, "larder-up-twine", whl)
    assert_serves(stack, "larder-up-twine", sdist)
    etag = page(stack, "larder-up-twine", "root/private").header("ETag")
    state = up.store_state(stack.data_dir)

    for extra in (["--skip-existing"], []):
        rc, out = run([twine, "upload", "--disable-progress-bar", "--repository-url", url,
                       "-u", "__token__", "-p", tok] + extra + [whl, sdist], env)
        assert rc == 0, "twine upload %s of the same files again:\n%s" % (extra, out)
        assert up.store_state(stack.data_dir) == state
        assert page(stack, "larder-up-twine", "root/private").header("ETag") == etag

    venv = new_venv()
    stack.standin.reset()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-up-twine"])
    assert rc == 0, out
    got = stackmod.installed(venv)
    assert got == {"larder-up-twine": "1.0", "larder-demo-c": "2.0"}, got
    # private-first: the hosted project's page is never asked of the upstream
    assert "GET /simple/larder-up-twine/" not in upstream_pages(stack), upstream_pages(stack)
    assert "GET /simple/larder-demo-c/" in upstream_pages(stack), upstream_pages(stack)


def test_pdm_publish(stack, tmp_path, new_venv):
    """`pdm publish --no-build -r URL -u __token__ -P TOKEN` (Debian's pdm
    2.2) of a project's dist/; pip installs it from root/pypi."""
    pdm = need("pdm")
    tok = up.token_add(stack.larder, "root/private", "upload", projects=["larder-up-pdm"])
    root = str(tmp_path / "proj")
    whl, sdist = setuptools_project(root, "larder-up-pdm", "0.3", requires=["larder-demo-c"])
    rc, out = run([pdm, "publish", "--no-build", "-r", "%s/root/private/" % stack.base,
                   "-u", "__token__", "-P", tok], publisher_env(tmp_path), cwd=root)
    assert rc == 0, out
    doc = json_page(stack, "larder-up-pdm")
    assert filenames(doc) == sorted(os.path.basename(p) for p in (whl, sdist)), doc
    assert_serves(stack, "larder-up-pdm", whl)
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-up-pdm"])
    assert rc == 0, out
    assert stackmod.installed(venv) == {"larder-up-pdm": "0.3", "larder-demo-c": "2.0"}


def test_poetry_publish(stack, tmp_path, new_venv):
    """`poetry build` then `poetry publish -r larder -u __token__ -p TOKEN`
    (Debian's poetry 1.3) with the repository in a config dir of the
    test's own; pip installs it from root/pypi."""
    poetry = need("poetry")
    tok = up.token_add(stack.larder, "root/private", "upload", projects=["larder-up-*"])
    root = str(tmp_path / "proj")
    os.makedirs(os.path.join(root, "larder_up_poetry"))
    with open(os.path.join(root, "pyproject.toml"), "w") as f:
        f.write('[tool.poetry]\nname = "larder-up-poetry"\nversion = "2.1"\n'
                'description = "larder test"\nauthors = ["larder tests <t@example.invalid>"]\n'
                'packages = [{include = "larder_up_poetry"}]\n\n'
                '[tool.poetry.dependencies]\npython = ">=3.7"\nlarder-demo-c = "*"\n\n'
                '[build-system]\nrequires = ["poetry-core"]\n'
                'build-backend = "poetry.core.masonry.api"\n')
    with open(os.path.join(root, "larder_up_poetry", "__init__.py"), "w") as f:
        f.write('__version__ = "2.1"\n')
    env = publisher_env(tmp_path)
    rc, out = run([poetry, "build", "-n"], env, cwd=root)
    assert rc == 0, out
    rc, out = run([poetry, "config", "repositories.larder",
                   "%s/root/private/" % stack.base], env, cwd=root)
    assert rc == 0, out
    rc, out = run([poetry, "publish", "-n", "-r", "larder", "-u", "__token__", "-p", tok],
                  env, cwd=root)
    assert rc == 0, out
    built = sorted(os.listdir(os.path.join(root, "dist")))
    doc = json_page(stack, "larder-up-poetry")
    assert filenames(doc) == built, doc
    for n in built:
        assert_serves(stack, "larder-up-poetry", os.path.join(root, "dist", n))
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder-up-poetry"])
    assert rc == 0, out
    assert stackmod.installed(venv) == {"larder-up-poetry": "2.1", "larder-demo-c": "2.0"}


# ================================================================ 3. hosted pages

def test_hosted_pages_json_and_html(stack, dist, uploader):
    """A hosted page is a page like a cache page: PEP 691 JSON and PEP 503
    HTML, sha256, requires-python, size, upload-time, core-metadata whose
    .metadata URL serves the wheel's METADATA bytes exactly, ETag and 304;
    the project list lists it."""
    whl = up.build_wheel(dist, APP, "1.0", ["larder-demo-c"], ">=3.8,<4")
    sdist = up.build_sdist(dist, APP, "1.0", ["larder-demo-c"], ">=3.8,<4")
    t0 = time.time()
    for p in (whl, sdist):
        r = up.upload(stack.base, "root/private", p, uploader)
        assert r.status == 200, (r, r.body)
    doc = json_page(stack, APP)
    # 1.4: hosted pages claim what 1.2 to 1.4 add, all optional
    assert doc["meta"]["api-version"] == "1.4", doc["meta"]
    assert doc["name"] == APP, doc["name"]
    assert filenames(doc) == sorted(os.path.basename(p) for p in (whl, sdist))
    meta = up.wheel_metadata(whl)
    for p in (whl, sdist):
        f = entry(doc, os.path.basename(p))
        data = read(p)
        assert f["hashes"] == {"sha256": sha256(data)}, f
        assert f["requires-python"] == ">=3.8,<4", f
        assert f.get("yanked", False) is False, f
        if doc["meta"]["api-version"] == "1.1":
            assert f["size"] == len(data), f
            ts = f["upload-time"]
            assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", ts), ts
            t = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S"))
            assert t0 - 5 <= t <= time.time() + 5, (ts, t0)
        url = urljoin("%s/root/private/simple/%s/" % (stack.base, APP), f["url"])
        assert urlsplit(url).netloc == urlsplit(stack.base).netloc, url
        r = http(url.split("#")[0])
        assert r.status == 200 and r.body == data, r
    fw = entry(doc, os.path.basename(whl))
    assert fw["core-metadata"] == {"sha256": sha256(meta)}, fw
    r = http(urljoin("%s/root/private/simple/%s/" % (stack.base, APP),
                     fw["url"]).split("#")[0] + ".metadata")
    assert r.status == 200 and r.body == meta, (r, r.body[:200])
    if "versions" in doc:
        assert doc["versions"] == ["1.0"], doc["versions"]

    # HTML, for the clients that ask for it
    r = page(stack, APP, "root/private", accept="text/html")
    assert r.status == 200 and "html" in r.header("Content-Type", ""), r
    text = r.body.decode()
    for p in (whl, sdist):
        fn = os.path.basename(p)
        m = re.search(r'<a [^>]*href="([^"]*%s#sha256=%s)"[^>]*>%s</a>'
                      % (re.escape(fn), sha256(read(p)), re.escape(fn)), text)
        assert m, "no anchor for %s with its hash:\n%s" % (fn, text)
        assert 'data-requires-python="&gt;=3.8,&lt;4"' in m.group(0), m.group(0)
        assert "data-yanked" not in m.group(0), m.group(0)
    a = re.search(r'<a [^>]*>%s</a>' % re.escape(os.path.basename(whl)), text).group(0)
    assert 'data-core-metadata="sha256=%s"' % sha256(meta) in a or \
        'data-dist-info-metadata="sha256=%s"' % sha256(meta) in a, a

    # validators, as cache pages
    for accept in (PIP_ACCEPT, "text/html"):
        r = page(stack, APP, "root/private", accept=accept)
        etag = r.header("ETag")
        assert etag, dict(r.headers)
        r2 = page(stack, APP, "root/private", accept=accept, headers={"If-None-Match": etag})
        assert r2.status == 304, r2

    # the project list
    r = stack.get("/root/private/simple/", accept=PIP_ACCEPT)
    assert r.status == 200, r
    assert [p["name"] for p in r.json()["projects"]] == [APP], r.json()
    assert page(stack, "nothing-here", "root/private").status == 404


def test_page_follows_each_change(stack, dist, uploader):
    """A warm hosted page (in nginx's page cache too) shows the next upload
    and a yank within HOSTED_FRESH (a second), through the hosted index and
    through root/pypi."""
    whl10 = up.build_wheel(dist, APP, "1.0")
    whl11 = up.build_wheel(dist, APP, "1.1")
    assert up.upload(stack.base, "root/private", whl10, uploader).status == 200
    for route in ("root/private", "root/pypi"):
        for _ in range(2):
            assert filenames(json_page(stack, APP, route)) == [APP10]
            assert page(stack, APP, route, accept="text/html").status == 200
    r = up.upload(stack.base, "root/private", whl11, uploader)
    assert r.status == 200, (r, r.body)

    def uploaded():
        for route in ("root/private", "root/pypi"):
            assert filenames(json_page(stack, APP, route)) == sorted(
                [APP10, os.path.basename(whl11)]), route
            assert os.path.basename(whl11) in page(
                stack, APP, route, accept="text/html").body.decode(), route

    eventually(uploaded)
    r = stack.get("/root/private/+yank/%s/1.1?reason=bad" % APP, method="POST",
                  headers=up.basic(uploader))
    assert r.status == 200, (r, r.body)

    def yanked():
        for route in ("root/private", "root/pypi"):
            assert entry(json_page(stack, APP, route),
                         os.path.basename(whl11))["yanked"] == "bad", route
            assert 'data-yanked="bad"' in page(stack, APP, route,
                                               accept="text/html").body.decode(), route

    eventually(yanked)


def test_names_are_normalised(stack, dist, uploader, new_venv):
    """A project uploaded under a mixed spelling (Larder.Up_Mixed, its wheel
    named with the dot) is one project: its page is at the normalised
    name, and pip finds it by any spelling through root/pypi."""
    whl = up.build_wheel(dist, "Larder.Up_Mixed", "1.0", file_name="Larder.Up_Mixed")
    r = up.upload(stack.base, "root/private", whl, uploader, name="Larder.Up_Mixed")
    assert r.status == 200, (r, r.body)
    doc = json_page(stack, "larder-up-mixed")
    assert filenames(doc) == [os.path.basename(whl)], doc
    assert [x["project"] for x in up.hosted_rows(stack.data_dir)] == ["larder-up-mixed"]
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["larder_up.MIXED"])
    assert rc == 0, out
    assert stackmod.installed(venv) == {"larder-up-mixed": "1.0"}


# ================================================================ 4. dependency confusion

def test_private_first_beats_a_higher_public_version(stack, dist, uploader, new_venv):
    """corp-lib 1.0 uploaded, corp-lib 99.0 on the upstream: through
    root/pypi (private-first) pip installs 1.0, and the upstream is never
    asked for corp-lib; the public file is not served through it either."""
    whl = up.build_wheel(dist, "corp-lib", "1.0")
    assert up.upload(stack.base, "root/private", whl, uploader).status == 200
    stack.standin.reset()
    doc = json_page(stack, "corp-lib", "root/pypi")
    assert filenames(doc) == ["corp_lib-1.0-py3-none-any.whl"], doc
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, ["corp-lib"])
    assert rc == 0, out
    assert stackmod.installed(venv) == {"corp-lib": "1.0"}
    assert "GET /simple/corp-lib/" not in upstream_pages(stack), upstream_pages(stack)
    # the public file, known to larder through the fallback index, is still
    # not served through root/pypi
    pub = file_url(stack, "corp-lib", CORP_PUBLIC, "root/fallback")
    path = urlsplit(pub).path.replace("/root/fallback/", "/root/pypi/", 1)
    r = stack.get(path)
    assert r.status == 404, "root/pypi served the public corp-lib: %r" % r


def test_fallback_lists_both(stack, dist, uploader, new_venv):
    """Through a fallback virtual index the page lists the private 1.0 and
    the public 99.0 (and pip, asking for the newest, gets 99.0)."""
    whl = up.build_wheel(dist, "corp-lib", "1.0")
    assert up.upload(stack.base, "root/private", whl, uploader).status == 200
    for accept in (PIP_ACCEPT, "text/html"):
        r = page(stack, "corp-lib", "root/fallback", accept=accept)
        assert r.status == 200, r
        text = r.body.decode()
        assert "corp_lib-1.0-py3-none-any.whl" in text and CORP_PUBLIC in text, text
    doc = json_page(stack, "corp-lib", "root/fallback")
    assert filenames(doc) == ["corp_lib-1.0-py3-none-any.whl", CORP_PUBLIC], doc
    assert_serves(stack, "corp-lib", whl, "root/fallback")
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.index_url("root/fallback"), ["corp-lib"])
    assert rc == 0, out
    assert stackmod.installed(venv) == {"corp-lib": "99.0"}


def test_protected_names_before_any_upload(stack, new_venv):
    """Nothing uploaded: root/guarded protects corp-*, so corp-lib 99.0 of
    the upstream is not listed, not installable and not served (404), while
    the same index serves the upstream's other projects."""
    r = page(stack, "corp-lib", "root/guarded")
    assert r.status == 404, (r, r.body[:300])
    r = page(stack, "corp-lib", "root/guarded", accept="text/html")
    assert r.status == 404, r
    assert filenames(json_page(stack, "larder-demo-c", "root/guarded")) == [
        wheels.C10, wheels.C20, wheels.C20_SDIST]
    rc, out = stackmod.pip_install(new_venv(), stack.index_url("root/guarded"), ["corp-lib"])
    assert rc != 0, out
    pub = file_url(stack, "corp-lib", CORP_PUBLIC, "root/fallback")
    path = urlsplit(pub).path.replace("/root/fallback/", "/root/guarded/", 1)
    assert stack.get(path).status == 404
    lst = stack.get("/root/guarded/simple/", accept=PIP_ACCEPT)
    if lst.status == 200:
        assert "corp-lib" not in [p["name"] for p in lst.json()["projects"]], lst.json()


def test_no_fallback_is_hosted_only(stack, dist, uploader):
    """root/hosted (no-fallback): the upstream's projects are 404, the
    upstream never asked; the uploaded one is there."""
    stack.standin.reset()
    assert page(stack, "larder-demo-c", "root/hosted").status == 404
    assert upstream_pages(stack) == {}, upstream_pages(stack)
    whl = up.build_wheel(dist, APP, "1.0")
    assert up.upload(stack.base, "root/private", whl, uploader).status == 200
    assert filenames(json_page(stack, APP, "root/hosted")) == [APP10]
    assert_serves(stack, APP, whl, "root/hosted")


# ================================================================ 5. rejections

def _bad_dists(d):
    """{case: (path, filename sent, fields)} of uploads that must be refused
    with a 400, and what the reason must mention."""
    good = up.build_wheel(d, APP, "1.0")
    sdist = up.build_sdist(d, APP, "1.0")
    meta = up.wheel_metadata(good)
    other = os.path.join(d, "other")
    os.makedirs(other)
    cases = {}
    cases["filename-grammar"] = (good, "larder_up_app-1.0.whl", {}, "")
    cases["filename-extension"] = (good, "larder_up_app-1.0-py3-none-any.egg", {}, "")
    cases["sdist-filename-grammar"] = (sdist, "larder_up_app.tar.gz", {}, "")
    cases["name-mismatch"] = (good, APP10, {"name": "larder-up-other"}, "name")
    cases["version-mismatch"] = (good, APP10, {"version": "2.0"}, "version")
    for digest in ("md5_digest", "sha256_digest", "blake2_256_digest"):
        wrong = hashlib.sha256(b"not it").hexdigest()
        # md5 and BLAKE2b are checked when no sha256_digest came first
        # (else the sha256 protects the bytes: test_a_right_sha256_*)
        fields = {digest: wrong[:32] if digest == "md5_digest" else wrong}
        if digest != "sha256_digest":
            fields["sha256_digest"] = None
        cases["wrong-" + digest] = (good, APP10, fields, digest.split("_")[0])
    junk = os.path.join(d, "junk.whl")
    with open(junk, "wb") as f:
        f.write(hashlib.sha256(b"junk").digest() * 200)
    cases["wheel-not-a-zip"] = (junk, APP10, {}, "")
    cases["wheel-without-metadata"] = (up.rezip(good, os.path.join(d, "nometa.whl"),
                                                drop=("/METADATA",)), APP10, {}, "METADATA")
    cases["metadata-other-name"] = (
        up.build_wheel(other, "larder-up-other", "1.0", file_name="larder_up_app"),
        APP10, {}, "")
    cases["metadata-other-version"] = (
        up.rezip(good, os.path.join(d, "otherver.whl"),
                 replace={"/METADATA": meta.replace(b"Version: 1.0", b"Version: 1.5")}),
        APP10, {}, "")
    cases["sdist-without-pkg-info"] = (up.retar(sdist, os.path.join(d, "nopkginfo.tar.gz"),
                                                drop=("/PKG-INFO",)),
                                       "larder_up_app-1.0.tar.gz", {}, "PKG-INFO")
    cases["sdist-pkg-info-other-name"] = (
        up.retar(sdist, os.path.join(d, "othername.tar.gz"),
                 replace={"/PKG-INFO": meta.replace(b"Name: larder-up-app",
                                                    b"Name: larder-up-other")}),
        "larder_up_app-1.0.tar.gz", {}, "")
    cases["not-file-upload"] = (good, APP10, {":action": "submit"}, "")
    cases["no-name-field"] = (good, APP10, {"name": None}, "")
    return cases


def test_a_right_sha256_first_is_what_protects_the_bytes(stack, dist, uploader):
    """A sha256_digest sent before the file (twine, uv, poetry and pdm send
    every digest before it) protects the bytes: larder computes the sha256
    alone, and an md5_digest or blake2_256_digest beside it is not checked
    (issue 24: md5 and BLAKE2b were two thirds of an upload's CPU). A
    sha256_digest that comes only after the file leaves the other digests
    checked: a wrong md5 is still a 400."""
    good = up.build_wheel(dist, APP, "1.0")
    data = read(good)
    wrong = hashlib.sha256(b"not it").hexdigest()
    # the sha256 only after the file: md5 checked
    form = up.dist_fields(APP10, data=data)
    form["md5_digest"], form["sha256_digest"] = wrong[:32], None
    ctype, body = up.multipart(form, APP10, data)
    boundary = ctype.split("boundary=")[1].encode()
    late = (b"--%s\r\nContent-Disposition: form-data; name=\"sha256_digest\"\r\n\r\n%s\r\n"
            % (boundary, sha256(data).encode()))
    end = b"--%s--\r\n" % boundary
    assert body.endswith(end)
    body = body[:-len(end)] + late + end
    h = dict({"Content-Type": ctype}, **up.basic(uploader))
    r = http("%s/root/private/" % stack.base, method="POST", headers=h, body=body)
    assert r.status == 400 and "md5" in up.one_line_reason(r).lower(), (r, r.body[:200])
    # the sha256 first: md5 and BLAKE2b not computed, the upload goes in
    form = up.dist_fields(APP10, data=data)
    form["md5_digest"], form["blake2_256_digest"] = wrong[:32], wrong
    ctype, body = up.multipart(form, APP10, data)
    h = dict({"Content-Type": ctype}, **up.basic(uploader))
    r = http("%s/root/private/" % stack.base, method="POST", headers=h, body=body)
    assert r.status == 200, (r, r.body[:200])
    assert_serves(stack, APP, good)


def test_every_rejection_is_a_400_that_stores_nothing(stack, dist, uploader):
    """Each bad upload is a 400 with a one-line reason, and leaves no row,
    no blob, no temp file and no page behind; a good one then goes in."""
    before = up.store_state(stack.data_dir)
    failures = []
    for case, (path, filename, fields, word) in sorted(_bad_dists(dist).items()):
        data = read(path)
        form = up.dist_fields(filename, data=data)
        form["name"], form["version"] = APP, "1.0"
        form.update(fields)
        ctype, body = up.multipart(form, filename, data)
        h = {"Content-Type": ctype}
        h.update(up.basic(uploader))
        r = http("%s/root/private/" % stack.base, method="POST", headers=h, body=body)
        if r.status != 400:
            failures.append("%s: %r %r" % (case, r, r.body[:200]))
            before = up.store_state(stack.data_dir)
            continue
        try:
            reason = up.one_line_reason(r)
        except AssertionError as e:
            failures.append("%s: %s" % (case, e))
            continue
        if word and word.lower() not in reason.lower():
            failures.append("%s: the reason %r does not name %s" % (case, reason, word))
        now = up.store_state(stack.data_dir)
        diff = up.state_diff(before, now, {sha256(data): "the refused file"})
        if diff:
            failures.append("%s: the store changed:\n  %s" % (case, diff.replace(
                "\n", "\n  ")))
            before = now
    # no file part, and a body that is not multipart at all
    ctype, body = up.multipart(up.dist_fields(APP10), None, b"")
    for what, h, b in (("no-content-part", {"Content-Type": ctype}, body),
                       ("not-multipart", {"Content-Type": "application/json"}, b"{}"),
                       ("no-boundary", {"Content-Type": "multipart/form-data"}, body)):
        h = dict(h, **up.basic(uploader))
        r = http("%s/root/private/" % stack.base, method="POST", headers=h, body=b)
        if r.status != 400:
            failures.append("%s: %r %r" % (what, r, r.body[:200]))
    assert not failures, "\n".join(failures)
    assert page(stack, APP, "root/private").status == 404
    assert up.hosted_rows(stack.data_dir) == []
    assert fh.flights(stack.data_dir) == []
    r = up.upload(stack.base, "root/private", os.path.join(dist, APP10), uploader)
    assert r.status == 200, (r, r.body)


def test_a_filename_with_a_path_is_refused_or_its_base_name(stack, dist, uploader):
    """A content part's filename with directories in it ("../x.whl",
    "a/b/x.whl", "a\\x.whl"): refused, or taken as its last component
    (RFC 7578 4.2); never a file outside the store, never a row or a page
    entry with a slash in its name."""
    whl = up.build_wheel(dist, APP, "1.0")
    outside = os.path.dirname(stack.data_dir)
    listing = sorted(os.listdir(outside))
    for sent in ("../" + APP10, "a/b/" + APP10, "..\\" + APP10, "/" + APP10):
        r = up.upload(stack.base, "root/private", whl, uploader, filename=sent)
        assert r.status in (200, 400), (sent, r, r.body)
        for row in up.hosted_rows(stack.data_dir):
            assert row["filename"] == APP10, (sent, row)
    assert sorted(os.listdir(outside)) == listing
    doc = page(stack, APP, "root/private")
    if doc.status == 200:
        assert filenames(doc.json()) == [APP10]


def test_over_max_upload_size_is_a_413_that_stores_nothing(stack, dist, uploader):
    """root/private takes 1M at most: a 2 MB wheel is a 413 from larder
    (not nginx's cap) and leaves nothing; the same file goes into
    root/scratch (100M)."""
    big = up.padded_wheel(dist, APP, "1.0", 2 * 1024 * 1024)
    before = up.store_state(stack.data_dir)
    r = up.upload(stack.base, "root/private", big, uploader)
    assert r.status == 413, (r, r.body[:300])
    assert b"nginx" not in r.body, "nginx refused the body, not larder: %r" % r.body[:300]
    assert stack.larder.find_log("POST", "/root/private/", 413), \
        "larder did not answer the 413 itself"
    up.one_line_reason(r)
    assert up.wait_for(lambda: up.store_state(stack.data_dir) == before, 5), \
        (before, up.store_state(stack.data_dir))
    assert page(stack, APP, "root/private").status == 404
    # the same body chunked, with no Content-Length to refuse it by: a 413
    # (or a 411, length required), nothing stored either way
    ctype, body = up.upload_body(big)
    h = {"Content-Type": ctype}
    h.update(up.basic(uploader))
    r = chunked_post(stack.nginx.port, "/root/private/", h, body)
    assert r[0] in (411, 413), r
    assert up.wait_for(lambda: up.store_state(stack.data_dir) == before, 5), \
        up.state_diff(before, up.store_state(stack.data_dir))
    tok = up.token_add(stack.larder, "root/scratch", "upload")
    r = up.upload(stack.base, "root/scratch", big, tok)
    assert r.status == 200, (r, r.body[:300])
    assert_serves(stack, APP, big, "root/scratch")


def chunked_post(port, path, headers, body, chunk=64 * 1024):
    """A POST with Transfer-Encoding: chunked over a raw socket: (status,
    body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    h = {"Host": "127.0.0.1:%d" % port, "Transfer-Encoding": "chunked",
         "Connection": "close"}
    h.update(headers)
    s.sendall(("POST %s HTTP/1.1\r\n%s\r\n" % (path, "".join(
        "%s: %s\r\n" % kv for kv in h.items()))).encode("latin-1"))
    try:
        for i in range(0, len(body), chunk):
            part = body[i:i + chunk]
            s.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass    # refused before the end: the answer is there to read
    chunks = []
    try:
        while True:
            data = s.recv(1 << 16)
            if not data:
                break
            chunks.append(data)
    except OSError:
        pass
    s.close()
    raw = b"".join(chunks)
    m = re.match(rb"HTTP/1\.\d (\d{3})", raw)
    return (int(m.group(1)) if m else 0), raw.partition(b"\r\n\r\n")[2][:300]


def test_chunked_upload_and_fields_after_the_file(stack, dist, uploader):
    """A body sent chunked (no Content-Length) is read to its end, and the
    file part may come before the fields (RFC 7578 fixes no order)."""
    whl = up.padded_wheel(dist, APP, "1.0", 200 * 1024)   # past nginx's first buffer
    ctype, body = up.upload_body(whl)
    h = {"Content-Type": ctype}
    h.update(up.basic(uploader))
    status, text = chunked_post(stack.nginx.port, "/root/private/", h, body, chunk=16384)
    assert status in (200, 411), (status, text)
    if status == 411:
        assert up.hosted_rows(stack.data_dir) == []
    else:
        assert_serves(stack, APP, whl)
    whl11 = up.build_wheel(dist, "larder-up-order", "1.1")
    data = read(whl11)
    boundary = "b0undary"
    form = up.dist_fields(os.path.basename(whl11), data=data)
    _, fields = up.multipart(form, None, b"", boundary=boundary)
    _, filepart = up.multipart({}, os.path.basename(whl11), data, boundary=boundary)
    body = filepart[:-len("--%s--\r\n" % boundary)] + fields
    h = {"Content-Type": "multipart/form-data; boundary=%s" % boundary}
    h.update(up.basic(uploader))
    r = http("%s/root/private/" % stack.base, method="POST", headers=h, body=body)
    assert r.status == 200, (r, r.body)
    assert_serves(stack, "larder-up-order", whl11)


def _hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


@pytest.mark.stack(workers=1)
def test_an_upload_is_not_held_in_memory(stack, dist):
    """A 24 MB upload streams to disk: no worker's peak memory grows by
    anything like the upload's size."""
    size = 24 * 1024 * 1024
    big = up.padded_wheel(dist, APP, "1.0", size)
    tok = up.token_add(stack.larder, "root/scratch", "upload")
    # a first upload, so the worker has done everything once
    assert up.upload(stack.base, "root/scratch", up.build_wheel(
        os.path.join(dist, "s"), APP, "0.1"), tok).status == 200
    supervisor = stack.larder.proc.pid
    before = {p: _hwm_kb(p) for p in fh.children(supervisor)}
    r = up.upload(stack.base, "root/scratch", big, tok, timeout=120)
    assert r.status == 200, (r, r.body)
    after = {p: _hwm_kb(p) for p in fh.children(supervisor)}
    growth = {p: (after[p] or 0) - (before.get(p) or 0) for p in after}
    assert growth and max(growth.values()) < 8 * 1024, \
        "workers' peak RSS grew by %s kB for a %d kB upload" % (growth, size // 1024)
    assert_serves(stack, APP, big, "root/scratch")


def test_same_filename_other_bytes(stack, dist, uploader):
    """Non-volatile: the same file again is a 200 that changes nothing,
    other bytes under its name a 409 that changes nothing. Volatile: other
    bytes replace the file (200)."""
    whl = up.build_wheel(dist, APP, "1.0")
    other_dir = os.path.join(dist, "b")
    whl2 = up.build_wheel(other_dir, APP, "1.0", requires=["larder-demo-c"])
    assert read(whl) != read(whl2)
    assert up.upload(stack.base, "root/private", whl, uploader).status == 200
    state = up.store_state(stack.data_dir)
    etag = page(stack, APP, "root/private").header("ETag")
    labels = {sha256(read(whl2)): "the refused wheel",
              sha256(up.wheel_metadata(whl2)): "the refused wheel's METADATA"}
    r = up.upload(stack.base, "root/private", whl, uploader)
    assert r.status == 200, (r, r.body)
    up.assert_unchanged(stack.data_dir, state, labels, "an identical re-upload changed it")
    r = up.upload(stack.base, "root/private", whl2, uploader)
    assert r.status == 409, (r, r.body)
    up.assert_unchanged(stack.data_dir, state, labels, "a refused upload (409) changed it")
    up.one_line_reason(r)
    assert page(stack, APP, "root/private").header("ETag") == etag
    assert_serves(stack, APP, whl)

    tok = up.token_add(stack.larder, "root/scratch", "upload")
    assert up.upload(stack.base, "root/scratch", whl, tok).status == 200
    assert_serves(stack, APP, whl, "root/scratch")
    r = up.upload(stack.base, "root/scratch", whl2, tok)
    assert r.status == 200, (r, r.body)
    after_change()
    rows = up.hosted_rows(stack.data_dir, "root/scratch")
    assert [x["sha256"] for x in rows] == [sha256(read(whl2))], rows
    assert entry(json_page(stack, APP, "root/scratch"), APP10)["hashes"]["sha256"] == \
        sha256(read(whl2))
    assert_serves(stack, APP, whl2, "root/scratch")


def expiring_token(lar, data_dir):
    """A token that expired a moment ago: `--expires 1s` and a wait, or, if
    the CLI takes no seconds (the spec names 30m, 12h, 90d), one of 30m
    whose expiry is moved into the past in the database (said as a
    warning)."""
    p = up.larder_cli(lar, "token", "add", "--index", "root/private", "--actions",
                      "upload", "--expires", "1s", "--note", "expiring")
    if p.returncode == 0:
        tok = p.stdout.strip()
        assert up.TOKEN_RE.match(tok), p.stdout
        time.sleep(2.1)
        return tok
    import warnings
    warnings.warn("larder token add --expires 1s refused (%s): expiring a 30m token "
                  "in the database instead" % p.stderr.strip())
    tok = up.token_add(lar, "root/private", "upload", expires="30m", note="expiring")
    con = sqlite3.connect(os.path.join(data_dir, "larder.db"), timeout=10)
    try:
        with con:
            n = con.execute("UPDATE tokens SET expires = ? WHERE id = ?",
                            (int(time.time()) - 5, up.token_id(tok))).rowcount
    finally:
        con.close()
    assert n == 1, "no tokens row with id %s" % up.token_id(tok)
    return tok


def test_credentials(stack, dist):
    """401 with WWW-Authenticate for no, unknown, malformed, expired and
    revoked tokens (each with its reason); 403 for a token without the
    action, the project or the index; Basic with any user and Bearer work;
    a root/private token uploads through root/pypi (its first hosted layer)."""
    whl = up.build_wheel(dist, APP, "1.0")
    lar = stack.larder
    good = up.token_add(lar, "root/private", "upload", projects=["larder-up-*"],
                        note="good")
    cases = []
    cases.append(("no credentials", None, 401, "credentials required"))
    cases.append(("unknown token", "lt_%s_%s" % ("0" * 16, "1" * 64), 401, "bad credentials"))
    cases.append(("malformed token", "not-a-token", 401, "bad credentials"))
    secret_wrong = good[:-4] + ("0000" if not good.endswith("0000") else "1111")
    cases.append(("right id, wrong secret", secret_wrong, 401, "bad credentials"))
    cases.append(("project glob", up.token_add(lar, "root/private", "upload",
                                               projects=["corp-*"]), 403, ""))
    cases.append(("action", up.token_add(lar, "root/private", "yank,delete,read"), 403, ""))
    cases.append(("index", up.token_add(lar, "root/scratch", "upload"), 403, ""))
    revoked = up.token_add(lar, "root/private", "upload", note="to-revoke")
    p = up.larder_cli(lar, "token", "revoke", up.token_id(revoked))
    assert p.returncode == 0, p.stdout + p.stderr
    cases.append(("revoked", revoked, 401, "token revoked"))
    expired = expiring_token(lar, stack.data_dir)
    cases.append(("expired", expired, 401, "token expired"))

    failures = []
    bodies = {}
    for what, tok, status, reason in cases:
        r = up.upload(stack.base, "root/private", whl, tok)
        bodies[what] = r.body
        if r.status != status:
            failures.append("%s: %r %r" % (what, r, r.body[:200]))
            continue
        if status == 401:
            www = r.header("WWW-Authenticate", "")
            if www != 'Basic realm="larder"':
                failures.append("%s: WWW-Authenticate %r" % (what, www))
        if reason and reason not in r.body.decode(errors="replace"):
            failures.append("%s: reason %r, not %r" % (what, r.body[:200], reason))
    # an unknown id and a known id with a wrong secret read the same, so a
    # guesser learns nothing of which ids exist (docs/hosting.md)
    if bodies["unknown token"] != bodies["right id, wrong secret"]:
        failures.append("unknown id %r, wrong secret %r" % (
            bodies["unknown token"], bodies["right id, wrong secret"]))
    # the token before the body: a POST that is not multipart at all,
    # without credentials or with bad ones, is a 401 too (docs/hosting.md)
    for what, h in (("no credentials, not multipart", {}),
                    ("unknown token, not multipart",
                     up.basic("lt_%s_%s" % ("0" * 16, "1" * 64)))):
        h = dict(h, **{"Content-Type": "application/json"})
        r = http("%s/root/private/" % stack.base, method="POST", headers=h, body=b"{}")
        if r.status != 401 or r.header("WWW-Authenticate", "") != 'Basic realm="larder"':
            failures.append("%s: %r %r" % (what, r, r.body[:200]))
    assert not failures, "\n".join(failures)
    assert up.hosted_rows(stack.data_dir) == []

    # the list: every token, states right, never a secret
    lines = up.token_list(lar)
    text = "\n".join(lines)
    for tok in (good, revoked, expired):
        assert up.TOKEN_RE.match(tok).group(2) not in text, "token list shows a secret"
        line = [l for l in lines if up.token_id(tok) in l]
        assert len(line) == 1, (tok, lines)
    assert "revoked" in [l for l in lines if up.token_id(revoked) in l][0]
    assert "expired" in [l for l in lines if up.token_id(expired) in l][0]
    assert "active" in [l for l in lines if up.token_id(good) in l][0]
    p = up.larder_cli(lar, "token", "revoke", "0123456789abcdef")
    assert p.returncode == 1 and p.stderr.strip(), (p.returncode, p.stderr)

    # what works: Basic as __token__ or any user, Bearer, through the virtual
    whl11 = up.build_wheel(dist, APP, "1.1")
    whl12 = up.build_wheel(dist, APP, "1.2")
    r = up.upload(stack.base, "root/private", whl, good)
    assert r.status == 200, (r, r.body)
    r = up.upload(stack.base, "root/private", whl11, None, headers=up.bearer(good))
    assert r.status == 200, (r, r.body)
    r = up.upload(stack.base, "root/pypi", whl12, None, headers=up.basic(good, "someone"))
    assert r.status == 200, (r, r.body)
    rows = up.hosted_rows(stack.data_dir)
    assert {(x["idx"], x["version"]) for x in rows} == {
        ("root/private", "1.0"), ("root/private", "1.1"), ("root/private", "1.2")}, rows


def test_upload_to_a_cache_index_is_a_405(stack, dist):
    whl = up.build_wheel(dist, APP, "1.0")
    # a token for it cannot be made (test_token.py): one for a hosted index
    tok = up.token_add(stack.larder, "root/private", "upload")
    r = up.upload(stack.base, "pypi", whl, tok)
    assert r.status == 405, (r, r.body)
    up.one_line_reason(r)
    assert up.hosted_rows(stack.data_dir) == []


# ================================================================ 6. interrupted uploads

def test_client_gone_mid_upload(stack, dist, uploader):
    """A client that sends half the body and disconnects: nothing of it is
    ever visible, its temp file goes, the store stays sound, and the same
    upload then goes in whole."""
    whl = up.padded_wheel(dist, APP, "1.0", 600 * 1024)
    assert page(stack, APP, "root/private").status == 404
    before = up.store_state(stack.data_dir)
    u = slow_upload(stack.nginx.port, "root/private", whl, uploader)
    u.push_slowly(len(u.body) // 2, 1.0)
    time.sleep(0.5)
    u.abort()
    time.sleep(0.5)
    assert page(stack, APP, "root/private").status == 404
    assert page(stack, APP, "root/pypi").status == 404
    assert up.wait_for(lambda: up.store_state(stack.data_dir) == before, 10), \
        "left behind: %s (before %s)" % (up.store_state(stack.data_dir), before)
    assert_fsck_clean(stack.larder)
    r = up.upload(stack.base, "root/private", whl, uploader)
    assert r.status == 200, (r, r.body)
    assert_serves(stack, APP, whl)
    assert stackmod.bad_blobs(stack.data_dir) == []


@pytest.mark.stack(workers=2)
def test_larder_killed_mid_upload(stack, dist, uploader):
    """larder's workers SIGKILLed while an upload streams in: the client
    gets an error, nothing partial is ever visible, and after the next
    upload and a restart (whose first worker sweeps) no temp file is left
    and `larder fsck` is clean."""
    whl = up.padded_wheel(dist, APP, "1.0", 800 * 1024)
    u = slow_upload(stack.nginx.port, "root/private", whl, uploader)
    u.push_slowly(len(u.body) * 3 // 4, 1.5)
    supervisor = stack.larder.proc.pid
    workers = fh.children(supervisor)
    assert workers, "no workers"
    holding = up.wait_for(lambda: [p for p in up.pids_with_files_under(stack.data_dir,
                                                                       up.upload_temps)
                                   if p in workers], 3)
    for pid in workers:
        fh.kill(pid)
    status, body = u.finish()
    if status == 200:   # a web server that held the body back sent it on later
        assert_serves(stack, APP, whl)
    else:
        assert page(stack, APP, "root/private").status == 404
        assert up.hosted_rows(stack.data_dir) == []
    assert holding, "no worker had the upload in a file when they were killed " \
        "(answer %d): the web server spooled it, and this test tested nothing" % status
    r = up.upload(stack.base, "root/private", whl, uploader)
    assert r.status == 200, (r, r.body)
    assert_serves(stack, APP, whl)
    stack.larder.stop()
    stack.larder.start()
    assert page(stack, APP, "root/private").status == 200
    left = up.wait_for(lambda: not up.upload_temps(stack.data_dir), 10)
    assert left, "temp files left: %s" % up.upload_temps(stack.data_dir)
    assert_fsck_clean(stack.larder)
    assert stackmod.bad_blobs(stack.data_dir) == []


def test_two_clients_upload_the_same_file_at_once(stack, dist, uploader):
    """Both 200 (the second as an identical re-upload), one row, one blob
    of the file."""
    whl = up.padded_wheel(dist, APP, "1.0", 300 * 1024)
    sha = sha256(read(whl))
    uploads = [slow_upload(stack.nginx.port, "root/private", whl, uploader)
               for _ in range(2)]
    for u in uploads:
        u.push(len(u.body) - 10)
    time.sleep(0.3)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda u: u.finish(), uploads))
    assert [s for s, _ in results] == [200, 200], results
    rows = up.hosted_rows(stack.data_dir)
    assert [(x["filename"], x["sha256"]) for x in rows] == [(APP10, sha)], rows
    assert os.path.exists(fh.blob_file(stack.data_dir, sha))
    assert up.wait_for(lambda: not up.upload_temps(stack.data_dir), 5), \
        up.upload_temps(stack.data_dir)
    assert stackmod.bad_blobs(stack.data_dir) == []
    assert_serves(stack, APP, whl)


# ================================================================ 7. yank, unyank, remove

def test_yank_and_unyank_over_http(stack, dist, uploader, new_venv):
    """+yank with a reason: the pages say so (JSON "yanked": reason, HTML
    data-yanked) and pip skips the version; +unyank undoes it; 404 for no
    such release; 403 without the yank action."""
    for v in ("1.0", "1.1"):
        assert up.upload(stack.base, "root/private", up.build_wheel(dist, APP, v),
                         uploader).status == 200
    f11 = "larder_up_app-1.1-py3-none-any.whl"
    auth = up.basic(uploader)
    # the reason in a form body
    r = http("%s/root/private/+yank/%s/1.1" % (stack.base, APP), method="POST",
             headers=dict(auth, **{"Content-Type": "application/x-www-form-urlencoded"}),
             body=b"reason=broken+build")
    assert r.status == 200, (r, r.body)
    after_change()
    doc = json_page(stack, APP, "root/pypi")
    assert entry(doc, f11)["yanked"] == "broken build", entry(doc, f11)
    assert entry(doc, APP10).get("yanked", False) is False
    html = page(stack, APP, "root/private", accept="text/html").body.decode()
    a = re.search(r"<a [^>]*>%s</a>" % re.escape(f11), html).group(0)
    assert 'data-yanked="broken build"' in a, a
    venv = new_venv()
    rc, out = stackmod.pip_install(venv, stack.url, [APP])
    assert rc == 0, out
    assert stackmod.installed(venv) == {APP: "1.0"}

    ro = up.token_add(stack.larder, "root/private", "upload,read")
    r = stack.get("/root/private/+unyank/%s/1.1" % APP, method="POST", headers=up.basic(ro))
    assert r.status == 403, r
    assert stack.get("/root/private/+yank/%s/1.1" % APP, method="POST").status == 401
    r = stack.get("/root/private/+yank/%s/7.0" % APP, method="POST", headers=auth)
    assert r.status == 404, r

    r = stack.get("/root/private/+unyank/%s/1.1" % APP, method="POST", headers=auth)
    assert r.status == 200, (r, r.body)
    after_change()
    assert entry(json_page(stack, APP, "root/private"), f11).get("yanked", False) is False
    rc, out = stackmod.pip_install(venv, stack.url, ["--upgrade", APP])
    assert rc == 0, out
    assert stackmod.installed(venv) == {APP: "1.1"}

    # a reason in the query string
    r = stack.get("/root/private/+yank/%s/1.0?reason=old" % APP, method="POST", headers=auth)
    assert r.status == 200, (r, r.body)
    after_change()
    assert entry(json_page(stack, APP, "root/private"), APP10)["yanked"] == "old"


def test_yank_and_unyank_on_the_command_line(stack, dist, uploader):
    assert up.upload(stack.base, "root/private", up.build_wheel(dist, APP, "1.0"),
                     uploader).status == 200
    json_page(stack, APP, "root/pypi")  # warm
    p = up.larder_cli(stack.larder, "yank", "root/private", APP, "1.0", "--reason",
                      "use 1.1")
    assert p.returncode == 0, p.stdout + p.stderr
    after_change()
    assert entry(json_page(stack, APP, "root/pypi"), APP10)["yanked"] == "use 1.1"
    assert 'data-yanked="use 1.1"' in page(stack, APP, "root/private",
                                           accept="text/html").body.decode()
    p = up.larder_cli(stack.larder, "unyank", "root/private", APP, "1.0")
    assert p.returncode == 0, p.stdout + p.stderr
    after_change()
    assert entry(json_page(stack, APP, "root/pypi"), APP10).get("yanked", False) is False
    p = up.larder_cli(stack.larder, "yank", "root/private", APP, "9.9")
    assert p.returncode != 0 and p.stderr.strip(), (p.returncode, p.stderr)


def test_remove_on_a_volatile_index(stack, dist):
    """DELETE of one file and of a whole release (HTTP), `larder remove`:
    gone from the page and the file route; refused (405 with a reason, a
    non-zero exit) on a non-volatile index, where --force removes."""
    tok = up.token_add(stack.larder, "root/scratch", "upload,delete")
    paths = {}
    for v in ("1.0", "1.1", "1.2"):
        paths[v] = [up.build_wheel(dist, APP, v), up.build_sdist(dist, APP, v)]
        for p in paths[v]:
            r = up.upload(stack.base, "root/scratch", p, tok)
            assert r.status == 200, (r, r.body)
    gone_url = file_url(stack, APP, APP10, "root/scratch")
    # a small file: nginx keeps it (conf/nginx.conf), for a hosted index's
    # for the second it is sent in, so a removal shows as soon as on pages
    for _ in range(2):
        assert http(gone_url).status == 200
    auth = up.basic(tok)
    r = stack.get("/root/scratch/+release/%s/1.0/%s" % (APP, APP10), method="DELETE",
                  headers=auth)
    assert r.status == 200, (r, r.body)
    after_change()
    names = filenames(json_page(stack, APP, "root/scratch"))
    assert APP10 not in names and "larder_up_app-1.0.tar.gz" in names, names
    assert http(gone_url).status == 404
    r = stack.get("/root/scratch/+release/%s/1.1" % APP, method="DELETE", headers=auth)
    assert r.status == 200, (r, r.body)
    after_change()
    names = filenames(json_page(stack, APP, "root/scratch"))
    assert not [n for n in names if "-1.1" in n], names
    assert stack.get("/root/scratch/+release/%s/1.1" % APP, method="DELETE",
                     headers=auth).status == 404
    p = up.larder_cli(stack.larder, "remove", "root/scratch", APP, "1.2")
    assert p.returncode == 0, p.stdout + p.stderr
    after_change()
    names = filenames(json_page(stack, APP, "root/scratch"))
    assert names == ["larder_up_app-1.0.tar.gz"], names
    p = up.larder_cli(stack.larder, "remove", "root/scratch", APP, "1.0",
                      "larder_up_app-1.0.tar.gz")
    assert p.returncode == 0, p.stdout + p.stderr
    after_change()
    assert page(stack, APP, "root/scratch").status == 404
    assert up.hosted_rows(stack.data_dir, "root/scratch") == []

    # non-volatile: refused, over HTTP and on the command line
    priv = up.token_add(stack.larder, "root/private", "upload,delete")
    whl = up.build_wheel(os.path.join(dist, "p"), APP, "1.0")
    assert up.upload(stack.base, "root/private", whl, priv).status == 200
    for path in ("/root/private/+release/%s/1.0" % APP,
                 "/root/private/+release/%s/1.0/%s" % (APP, APP10)):
        r = stack.get(path, method="DELETE", headers=up.basic(priv))
        assert r.status == 405, (path, r, r.body)
        up.one_line_reason(r)
    p = up.larder_cli(stack.larder, "remove", "root/private", APP, "1.0")
    assert p.returncode != 0 and p.stderr.strip(), (p.returncode, p.stderr)
    assert filenames(json_page(stack, APP, "root/private")) == [APP10]
    p = up.larder_cli(stack.larder, "remove", "root/private", APP, "1.0", "--force")
    assert p.returncode == 0, p.stdout + p.stderr
    after_change()
    assert page(stack, APP, "root/private").status == 404


# ================================================================ 8. through every web server

STREAM_MB = 4


def assert_streams(port, data_dir, index, path, tok):
    """Uploads path slowly: while three quarters of the body are in and the
    rest held back, larder must already hold most of it in a temp file in
    DATA (the web server streams the body rather than spooling it first);
    then the rest goes and the answer is a 200."""
    u = slow_upload(port, index, path, tok)
    u.push_slowly(len(u.body) * 3 // 4, 1.0)

    def received():
        best = max(up.upload_temps(data_dir).values(), default=0)
        return best >= len(u.body) // 2 and best

    got = up.wait_for(received, 5)
    status, body = u.finish()
    assert status == 200, (status, body[:300])
    assert got, "larder had received nothing of the upload's first %d bytes after 5 s: " \
        "the web server holds the body back until it has it all" % u.sent


@pytest.mark.stack(workers=2)
def test_nginx_streams_an_upload(stack, dist):
    big = up.padded_wheel(dist, APP, "1.0", STREAM_MB * 1024 * 1024)
    tok = up.token_add(stack.larder, "root/scratch", "upload")
    assert_streams(stack.nginx.port, stack.data_dir, "root/scratch", big, tok)
    assert_serves(stack, APP, big, "root/scratch")


# mod_fcgid reads a whole request before it hands it to the application
# (FcgidMaxRequestLen, FcgidMaxRequestInMem): it can let the body through,
# not stream it. Every other front end must stream.
FE_KINDS = ("lighttpd-fcgi", "apache-fcgid", "apache-proxy-fcgi", "lighttpd-cgi",
            "apache-cgi")
BUFFERS_BY_DESIGN = ("apache-fcgid",)


@pytest.mark.parametrize("kind", FE_KINDS)
def test_upload_through_frontend(kind, tmp_path, up_wheels):
    """One upload through the shipped config of each other web server (a
    body bigger than their default caps), streamed where the server can,
    then served back."""
    reason = frontends.missing_reason(kind)
    if reason:
        pytest.skip("%s: %s" % (kind, reason))
    workdir = frontends.new_workdir()
    standin = stackmod.Standin(up_wheels, os.path.join(workdir, "standin"))
    fe = None
    try:
        standin.start()
        fe = frontends.make_frontend(kind, os.path.join(workdir, "fe"), standin.port,
                                     files_port=standin.files_port,
                                     larder_extra_text=up.HOSTED_CONF,
                                     root_pypi=up.ROOT_PYPI)
        # the token first: start() hands the whole data dir to the
        # servers' user, the database the command made included
        fe.write_larder_conf()
        os.makedirs(fe.data_dir, exist_ok=True)
        tok = up.token_add(up.Cli(stackmod.larder_bin(), fe.larder_conf), "root/scratch",
                           "upload")
        fe.start()
        small = up.build_wheel(str(tmp_path / "s"), APP, "0.1")
        r = up.upload(fe.base, "root/scratch", small, tok)
        assert r.status == 200, (r, r.body[:300], fe.log_text()[-3000:])
        big = up.padded_wheel(str(tmp_path / "b"), APP, "1.0", STREAM_MB * 1024 * 1024)
        port = fe.port
        if kind in BUFFERS_BY_DESIGN:
            r = up.upload(fe.base, "root/scratch", big, tok)
            assert r.status == 200, (r, r.body[:300], fe.log_text()[-3000:])
        else:
            assert_streams(port, fe.data_dir, "root/scratch", big, tok)
        r = http("%s/root/scratch/simple/%s/" % (fe.base, APP), headers={"Accept": PIP_ACCEPT})
        assert r.status == 200, (r, fe.log_text()[-3000:])
        doc = r.json()
        assert filenames(doc) == sorted(os.path.basename(p) for p in (small, big)), doc
        for p in (small, big):
            url = urljoin("%s/root/scratch/simple/%s/" % (fe.base, APP),
                          entry(doc, os.path.basename(p))["url"]).split("#")[0]
            got = http(url)
            assert got.status == 200 and sha256(got.body) == sha256(read(p)), got
        no = up.upload(fe.base, "root/scratch", small, None)
        assert no.status == 401, no
        assert no.header("WWW-Authenticate") == 'Basic realm="larder"', dict(no.headers)
    finally:
        if fe is not None:
            fe.stop()
        standin.stop()
        shutil.rmtree(workdir, ignore_errors=True)
