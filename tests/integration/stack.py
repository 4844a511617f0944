"""Start and drive the pieces of an integration run: the stand-in upstream,
larder under `larder serve`, and nginx in front of it. Used by the tests and
by the benchmark harness; standard library only.

    st = Stack(workdir, wheels_dir).start()
    rc, out = pip_install(make_venv(path), st.url, ["larder-demo-a"])
    st.stop()

Each piece lives in its own directory (config, logs, pid and temp files) and
listens on 127.0.0.1 on a port of its own.
"""

import gzip
import hashlib
import http.client as httpclient
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

from wheels import sha256_file  # noqa: F401 (stack.sha256_file for users)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"          # Debian's, never a pyenv one first on PATH
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
STANDIN = os.path.join(HERE, "standin.py")

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
# What pip (22.2 and later) sends on simple pages.
PIP_ACCEPT = ("application/vnd.pypi.simple.v1+json, "
              "application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01")


def larder_bin():
    """The larder binary: $LARDER_BIN, else the repository root's ./larder."""
    return os.environ.get("LARDER_BIN") or os.path.join(REPO, "larder")


def missing_reason(binary=None):
    """Why a stack cannot start here (with the larder binary given, default
    larder_bin()), or None."""
    b = binary or larder_bin()
    if not os.path.isfile(b) or not os.access(b, os.X_OK):
        return ("larder binary not found at %s (build it, or set $LARDER_BIN)" % b)
    if not os.path.exists(NGINX):
        return "nginx not installed (apt-get install nginx-light)"
    if not os.path.exists(PYTHON):
        return "%s not found" % PYTHON
    return None


def clean_env(extra=None):
    """The environment for child processes: no proxies (libcurl and pip honour
    them) and no PIP_* settings (a PIP_FIND_LINKS would let pip bypass the
    index under test)."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env.update(extra or {})
    return env


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_port(port, timeout=15.0, proc=None, what="server", log=None):
    """Waits until port accepts connections; raises RuntimeError if proc dies
    first or time runs out (with the tail of log, a path, in the message)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("%s exited with status %s before listening on %d%s"
                               % (what, proc.returncode, port, _tail(log)))
        if port_open(port):
            return
        time.sleep(0.05)
    raise RuntimeError("%s not listening on %d after %.0f s%s"
                       % (what, port, timeout, _tail(log)))


def _tail(path, n=40):
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        lines = f.readlines()[-n:]
    return "\n--- %s (last %d lines) ---\n%s" % (path, len(lines), "".join(lines))


def _stop_process(proc, sig=signal.SIGTERM, grace=5.0):
    """Sends sig, waits grace seconds, then SIGKILLs. Returns the exit status.
    Afterwards kills whatever is left in the process group the child leads
    (it was started with start_new_session) and returns the number of such
    leftovers in proc.leftovers."""
    proc.leftovers = 0
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return proc.returncode
    proc.leftovers = 1
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.returncode


# ---------------------------------------------------------------- HTTP helpers

class Response:
    """status, headers (httpclient.HTTPMessage), body (bytes); complete is
    False when the body ended early (error says how)."""

    def __init__(self, status, reason, headers, body, complete=True, error=None):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.complete = complete
        self.error = error

    def header(self, name, default=None):
        return self.headers.get(name, default) if self.headers is not None else default

    def header_all(self, name):
        return self.headers.get_all(name) or [] if self.headers is not None else []

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<Response %s %s, %d bytes%s>" % (
            self.status, self.reason, len(self.body or b""),
            "" if self.complete else ", INCOMPLETE: %s" % self.error)


def http(url, method="GET", headers=None, body=None, timeout=30):
    """One request with http.client: no redirects followed, no proxies, the
    path sent as given. A body cut short is returned with complete=False."""
    u = urlsplit(url)
    conn = httpclient.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    try:
        conn.request(method, path, body=body, headers=headers or {})
        try:
            r = conn.getresponse()
        except (ConnectionError, httpclient.RemoteDisconnected) as e:
            # the server gave up on the request before its status line
            return Response(0, "no response", None, b"", False, repr(e))
        complete, error = True, None
        chunks = []
        try:
            while True:
                data = r.read(1 << 16)
                if not data:
                    break
                chunks.append(data)
        except httpclient.IncompleteRead as e:
            chunks.append(e.partial)
            complete, error = False, "IncompleteRead: %r" % e
        except (ConnectionError, socket.timeout, httpclient.HTTPException) as e:
            complete, error = False, repr(e)
        data = b"".join(chunks)
        length = r.getheader("Content-Length")
        if complete and method != "HEAD" and length is not None and r.status not in (204, 304):
            if len(data) != int(length):
                complete, error = False, "got %d of %s bytes" % (len(data), length)
        return Response(r.status, r.reason, r.headers, data, complete, error)
    finally:
        conn.close()


def raw_request(port, path, method="GET", headers=None, host="127.0.0.1", timeout=15,
                version="HTTP/1.0", body=b""):
    """Sends the request line and headers exactly as given over a socket (for
    paths a client library would clean up: "/../", "%00", ...), HTTP/1.0 so
    the body ends at close. Returns a Response."""
    hdrs = {"Host": "%s:%d" % (host, port), "Connection": "close"}
    hdrs.update(headers or {})
    if body:
        hdrs["Content-Length"] = str(len(body))
    req = "%s %s %s\r\n" % (method, path, version)
    req += "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n"
    raw = req.encode("latin-1") + (body or b"")
    chunks = []
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(raw)
        try:
            while True:
                data = s.recv(1 << 16)
                if not data:
                    break
                chunks.append(data)
        except ConnectionResetError:
            pass
    data = b"".join(chunks)
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return Response(0, "no response", None, data, complete=False, error="no header end")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/\d\.\d (\d{3}) ?(.*)", lines[0])
    if not m:
        return Response(0, lines[0], None, data, complete=False, error="bad status line")
    msg = httpclient.HTTPMessage()
    for line in lines[1:]:
        k, _, v = line.partition(":")
        msg[k.strip()] = v.strip()
    return Response(int(m.group(1)), m.group(2), msg, rest)


# ---------------------------------------------------------------- the pieces

class Standin:
    """standin.py as a subprocess. Restartable on the same ports."""

    def __init__(self, wheels, workdir, html_only=False, rate=None,
                 files_host="localhost", port=0, files_port=0, public_files_port=None,
                 quiet=False):
        self.wheels = wheels
        self.dir = workdir
        self.html_only = html_only
        self.rate = rate
        self.files_host = files_host
        self.port = port
        self.files_port = files_port
        self.public_files_port = public_files_port
        self.quiet = quiet
        self.proc = None
        self.log = os.path.join(workdir, "standin.log")
        os.makedirs(workdir, exist_ok=True)

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def url(self):
        return self.base + "/simple/"

    def start(self, timeout=15):
        cmd = [PYTHON, STANDIN, "--wheels", self.wheels, "--port", str(self.port),
               "--files-port", str(self.files_port), "--files-host", self.files_host]
        if self.html_only:
            cmd.append("--html-only")
        if self.rate:
            cmd += ["--rate", str(self.rate)]
        if self.public_files_port:
            cmd += ["--public-files-port", str(self.public_files_port)]
        if self.quiet:
            cmd.append("--quiet")
        logf = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=logf,
                                         stdin=subprocess.DEVNULL, env=clean_env(),
                                         start_new_session=True)
        finally:
            logf.close()
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                c = os.read(self.proc.stdout.fileno(), 1)
                if not c:
                    break
                line += c
            elif self.proc.poll() is not None:
                break
        m = re.match(rb"READY index=(\d+) files=(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError("stand-in did not start (got %r)%s" % (line, _tail(self.log)))
        self.port, self.files_port = int(m.group(1)), int(m.group(2))
        return self

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM (then SIGKILL after 5 s)."""
        if self.proc is not None:
            _stop_process(self.proc)
            if self.proc.stdout:
                self.proc.stdout.close()

    def kill(self):
        """SIGKILL, as a crash: the upstream is simply gone."""
        if self.proc is not None:
            _stop_process(self.proc, sig=signal.SIGKILL)
            if self.proc.stdout:
                self.proc.stdout.close()

    def _call(self, method, path, payload=None):
        body = json.dumps(payload).encode() if payload is not None else None
        r = http(self.base + path, method=method, body=body,
                 headers={"Content-Type": "application/json"} if body else {})
        if r.status != 200:
            raise RuntimeError("stand-in %s %s: %s %r" % (method, path, r.status, r.body))
        return json.loads(r.body)

    def counters(self):
        """{"requests": {"GET /simple/x/": n}, "files": {fn: n}, "metadata":
        {fn: n}, "conditional": n, "not_modified": n}"""
        return self._call("GET", "/_counters")

    def reset(self):
        self._call("POST", "/_reset")

    def control(self, **kw):
        """html_only=, corrupt=[...], truncate=[...], status={path: code},
        rate=, delay=, json_metadata_keys=[...]; returns the settings now."""
        return self._call("POST", "/_control", kw)

    def page(self, project, accept=JSON_TYPE):
        """The stand-in's own page for project (JSON by default)."""
        return http("%s/simple/%s/" % (self.base, project), headers={"Accept": accept})


LARDER_CONF = """\
[larder]
data_dir = {data_dir}
sendfile = x-accel-redirect
sendfile_prefix = /_larder/
{larder_keys}
[index "pypi"]
type = cache
upstream = http://127.0.0.1:{upstream_port}/simple/
trusted_hosts = {trusted}

[index "root/pypi"]
type = virtual
{root_pypi}{extra_text}"""


def larder_conf(data_dir, upstream_port, cache_ttl=300, max_stale=86400, extra=None,
                extra_text="", files_port=None, root_pypi=None):
    """The larder.conf the tests run with; extra adds or replaces [larder]
    keys, extra_text is appended as is (more sections), root_pypi replaces
    the keys of root/pypi after its type (default "layers = pypi\n").
    files_port is the port of the stand-in's files host (localhost), which
    the index trusts (a trusted host name without a port means the
    scheme's default)."""
    # Tests count upstream requests, and a prefetch is one nobody asked
    # for, made after the answer: off here, on in the tests of them
    # (test_cold.py, test_prefetch.py) and as shipped.
    keys = {"cache_ttl": cache_ttl, "max_stale": max_stale, "prefetch_metadata": "no",
            "prefetch_max": 0}
    keys.update(extra or {})
    return LARDER_CONF.format(
        data_dir=data_dir, upstream_port=upstream_port,
        trusted="localhost:%d" % files_port if files_port else "localhost",
        larder_keys="".join("%s = %s\n" % kv for kv in keys.items()),
        root_pypi=root_pypi or "layers = pypi\n", extra_text=extra_text)


def _unix_open(path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            s.connect(path)
            return True
    except OSError:
        return False


def spawn_server(server, cmd, out_path, log_path, what, timeout, ready=None):
    """Starts cmd in its own session in server.dir, output appended to
    out_path, as server.proc; waits for server.port (or until ready()
    says so), and stops the server (server.stop()) when it does not come
    up. Returns server."""
    out = open(out_path, "ab")
    try:
        server.proc = subprocess.Popen(cmd, stdout=out, stderr=out,
                                       stdin=subprocess.DEVNULL, cwd=server.dir,
                                       env=clean_env(), start_new_session=True)
    finally:
        out.close()
    try:
        if ready is None:
            wait_port(server.port, timeout, server.proc, what, log_path)
        else:
            deadline = time.monotonic() + timeout
            while not ready():
                if server.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("%s did not come up%s" % (what, _tail(log_path)))
                time.sleep(0.05)
    except RuntimeError:
        server.stop()
        raise
    return server


_USER_ARGS = {}


def serve_user_args(binary):
    """The arguments `larder serve` needs to run as the current user: as
    root, ["--user", "root"] (larder refuses root without --user), when
    binary knows --user (older builds, e.g. for contrib/bench/compare, do
    not); else []."""
    if os.geteuid() != 0:
        return []
    if binary not in _USER_ARGS:
        try:
            r = subprocess.run([binary, "--help"], capture_output=True,
                               timeout=10, env=clean_env())
            knows = b"--user" in r.stdout + r.stderr
        except OSError:
            knows = False
        _USER_ARGS[binary] = ["--user", "root"] if knows else []
    return _USER_ARGS[binary]


class Larder:
    """`larder serve` as a subprocess, with its config, data dir and log in
    workdir."""

    def __init__(self, workdir, upstream_port, cache_ttl=300, workers=2, extra=None,
                 extra_text="", port=None, binary=None, max_stale=86400, files_port=None,
                 unix=False, root_pypi=None):
        self.dir = workdir
        self.data_dir = os.path.join(workdir, "data")
        self.conf = os.path.join(workdir, "larder.conf")
        self.log = os.path.join(workdir, "larder.log")
        self.port = port or free_port()
        # the shipped nginx config's transport: a unix socket
        self.sock = os.path.join(workdir, "larder.sock") if unix else None
        self.workers = workers
        self.binary = binary or larder_bin()
        self.proc = None
        os.makedirs(self.data_dir, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(larder_conf(self.data_dir, upstream_port, cache_ttl, max_stale,
                                extra, extra_text, files_port, root_pypi))

    @property
    def listen(self):
        """The address `larder serve` listens on, as --listen takes it."""
        return "unix:" + self.sock if self.sock else "127.0.0.1:%d" % self.port

    def start(self, timeout=15):
        cmd = [self.binary, "serve", "-c", self.conf,
               "--listen", self.listen, "--workers", str(self.workers)]
        cmd += serve_user_args(self.binary)
        if self.sock:
            return spawn_server(self, cmd, self.log, self.log, "larder", timeout,
                                ready=lambda: _unix_open(self.sock))
        return spawn_server(self, cmd, self.log, self.log, "larder", timeout)

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace=5.0):
        """SIGTERM, then SIGKILL after grace seconds; returns the exit status.
        self.proc.leftovers says whether processes outlived the supervisor."""
        if self.proc is None:
            return None
        return _stop_process(self.proc, grace=grace)

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_lines(self):
        return self.log_text().splitlines()

    def find_log(self, method, path, status, timeout=3.0):
        """The first log line naming method, path (as a whole word) and status,
        waiting up to timeout for it; None if there is none."""
        pat = re.compile(r"(?<!\S)%s(?!\S).*?(?<![^\s\"'])%s(?:[\s\"'?]|$).*?\b%d\b"
                         % (re.escape(method), re.escape(path), status))
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_lines():
                if pat.search(line):
                    return line
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)


def nginx_main(prefix, http, workers=1, log_level="info"):
    """A whole nginx.conf around http (the inside of the http block): what
    Debian's nginx.conf sets that matters here (sendfile, keep-alive, an
    access log), everything nginx writes under prefix."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    return """\
{user}daemon off;
master_process on;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log {log_level};

events {{
    worker_connections 1024;
}}

http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/tmp/client_body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    default_type application/octet-stream;
    sendfile on;
    keepalive_timeout 30;
{http}
}}
""".format(user=user, workers=workers, prefix=prefix, log_level=log_level, http=http)


# The directives of conf/nginx.conf that decide what becomes of a request
# body (uploads): nginx_conf() must set them as the shipped file does
# (test_upload.py checks), or the tests upload through another nginx.
BODY_DIRECTIVES = ("client_max_body_size", "client_body_buffer_size",
                   "client_body_timeout", "fastcgi_request_buffering")


def shipped_body_directives(path=None):
    """{directive: value} of BODY_DIRECTIVES set in conf/nginx.conf (the
    first of each; comments skipped)."""
    path = path or os.path.join(REPO, "conf", "nginx.conf")
    out = {}
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return out
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"(\w+)\s+([^;]+);", line)
        if m and m.group(1) in BODY_DIRECTIVES:
            out.setdefault(m.group(1), m.group(2).strip())
    return out


# conf/nginx.conf's last lines of the locations that keep pages and
# manifests: revalidated, in buffers that hold them whole
NGINX_KEPT_PAGE = """\
fastcgi_cache_revalidate on;
            fastcgi_buffer_size 16k;
            fastcgi_buffers 8 16k;
            fastcgi_busy_buffers_size 32k;
            fastcgi_hide_header X-Larder-Cache;
            add_header X-Larder-Cache $larder_page_cache always;"""


# conf/nginx.conf's first lines of a location whose page cache keys a HEAD
# apart from a GET (a registry's blobs and manifests by tag)
NGINX_HEAD_KEYED = """\
include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_NAME "";
            fastcgi_param PATH_INFO "";
            fastcgi_param LARDER_PAGE_CACHE 1;
            fastcgi_param LARDER_HEAD_KEYED 1;
            fastcgi_keep_conn {keep};
            fastcgi_pass larder;
            fastcgi_cache larder_pages;
            fastcgi_cache_key "$request_method|$request_uri";"""


# conf/nginx.conf's lines that keep a content-addressed answer (a blob, a
# small file) by its key alone, a range or a conditional request passed on
NGINX_KEPT_BY_KEY = """\
fastcgi_ignore_headers Cache-Control Expires;
            fastcgi_cache_bypass $http_range$http_if_range$http_if_none_match;
            fastcgi_param HTTP_RANGE $http_range if_not_empty;
            fastcgi_param HTTP_IF_RANGE $http_if_range if_not_empty;
            fastcgi_param HTTP_IF_NONE_MATCH $http_if_none_match if_not_empty;
            fastcgi_no_cache $http_range$http_if_range$http_if_none_match;
            fastcgi_hide_header X-Larder-Cache;
            add_header X-Larder-Cache $larder_page_cache always;"""


def nginx_conf(prefix, port, fcgi_port, data_dir, workers=1, keep_conn=True,
               page_cache=True):
    """The nginx.conf for a test stack, as conf/nginx.conf has it: / goes
    to larder over FastCGI (fcgi_port a TCP port, or "unix:PATH"), on kept
    connections unless keep_conn is False; project pages go through nginx's
    cache of them; /_larder/ is the internal location X-Accel-Redirect
    answers come from (pages too, when page_cache is False: then nginx
    keeps no copies of them). The one place to change it."""
    server = ("127.0.0.1:%d" % fcgi_port if isinstance(fcgi_port, int)
              else fcgi_port)
    text = nginx_main(prefix, """\
    tcp_nopush on;

    # conf/nginx.conf's page cache
    fastcgi_cache_path {prefix}/cache levels=1:2 keys_zone=larder_pages:4m
                       max_size=64m inactive=1d use_temp_path=off;
    map $upstream_cache_status $larder_page_cache {{
        HIT         HIT;
        REVALIDATED REVALIDATED;
        default     $upstream_http_x_larder_cache;
    }}

    # conf/nginx.conf's ETag of a page's gzip'd copy
    map "$sent_http_content_encoding:$upstream_http_etag" $larder_etag {{
        '~^gzip:"(?<larder_etag_sha>[^"]+)"$' '"$larder_etag_sha-gz"';
        default $upstream_http_etag;
    }}

    upstream larder {{
        server {server};
        keepalive 8;
        keepalive_timeout 30s;
    }}

    # conf/nginx.conf's uploads: on connections of their own, never kept
    upstream larder_uploads {{
        server {server};
    }}
    map $request_method $larder_upstream {{
        POST    larder_uploads;
        PUT     larder_uploads;
        PATCH   larder_uploads;
        default larder;
    }}

    server {{
        listen 127.0.0.1:{port};
        server_name localhost;

        # X-Accel-Redirect answers. nginx keeps only a few of larder's headers
        # across the internal redirect (Content-Type, Cache-Control,
        # Content-Disposition) and puts its own "mtime-size" ETag on the
        # file, so larder's ETag, Vary and X-Larder-Cache are set again here.
        location /_larder/ {{
            internal;
            alias {data_dir}/;
            gzip_static on;
            gzip_proxied any;
            gzip_http_version 1.0;
            etag off;
            add_header ETag $larder_etag;
            add_header Vary $upstream_http_vary;
            add_header X-Larder-Cache $upstream_http_x_larder_cache;
            add_header X-Larder-Held-Back $upstream_http_x_larder_held_back;
            # registries: the digest, the API version and a tag list's next page
            add_header Docker-Content-Digest $upstream_http_docker_content_digest;
            add_header Docker-Distribution-API-Version
            	$upstream_http_docker_distribution_api_version;
            add_header Link $upstream_http_link;
        }}

        # conf/nginx.conf's registry answers that hold for every client
        location ~ ^/v2/.+/(manifests/sha256:|tags/list) {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_NAME "";
            fastcgi_param PATH_INFO "";
            fastcgi_param LARDER_PAGE_CACHE 1;
            fastcgi_keep_conn {keep};
            fastcgi_pass larder;
            fastcgi_cache larder_pages;
            fastcgi_cache_key "$request_uri";
            {kept_page}
            client_max_body_size 1g;
        }}

        # conf/nginx.conf's manifests by tag: a HEAD kept apart from a GET
        location ~ "^/v2/.+/manifests/[^/]+$" {{
            {head_keyed}
            {kept_page}
            client_max_body_size 1g;
        }}

        location ~ "^/(?!v2/).*/simple/" {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_NAME "";
            fastcgi_param PATH_INFO "";
            fastcgi_param LARDER_PAGE_CACHE 1;
            fastcgi_keep_conn {keep};
            fastcgi_pass larder;
            fastcgi_cache larder_pages;
            fastcgi_cache_key "$request_uri|$http_accept|$http_accept_encoding";
            tcp_nopush off;
            {kept_page}
        }}

        # conf/nginx.conf's registry blobs: a HEAD kept apart from a GET
        location ~ "^/v2/.+/blobs/sha256:[0-9a-f]{{64}}$" {{
            {head_keyed}
            {kept_by_key}
        }}

        # conf/nginx.conf's small files, kept like pages
        location ~ "^/(?!v2/).*/files/[0-9a-f]{{64}}/[^/]+$" {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_NAME "";
            fastcgi_param PATH_INFO "";
            fastcgi_param LARDER_PAGE_CACHE 1;
            fastcgi_keep_conn {keep};
            fastcgi_pass larder;
            fastcgi_cache larder_pages;
            fastcgi_cache_key "$request_uri";
            {kept_by_key}
        }}

        # uploads: up to a hosted index's max_upload_size, streamed to
        # larder as they arrive instead of spooled to a file first
        location / {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_NAME "";
            fastcgi_param PATH_INFO "";
            fastcgi_keep_conn {keep};
            fastcgi_pass $larder_upstream;
            client_max_body_size 1g;
            fastcgi_request_buffering off;
        }}
    }}""".format(port=port, server=server, keep="on" if keep_conn else "off",
                 prefix=prefix, data_dir=data_dir.rstrip("/"),
                 kept_by_key=NGINX_KEPT_BY_KEY, kept_page=NGINX_KEPT_PAGE,
                 head_keyed=NGINX_HEAD_KEYED.format(keep="on" if keep_conn else "off")),
        workers)
    if not page_cache:
        # (the files' location, after the pages', loses its cache too)
        head, sep, pages = text.partition('location ~ "^/(?!v2/).*/simple/"')
        pages = "\n".join(line for line in pages.split("\n")
                          if "LARDER_PAGE_CACHE" not in line
                          and "fastcgi_cache larder_pages;" not in line)
        text = head + sep + pages
    return text


class Nginx:
    """nginx in the foreground with everything under workdir."""

    def __init__(self, workdir, fcgi_port, data_dir, port=None, workers=1, keep_conn=True,
                 page_cache=True):
        self.dir = os.path.abspath(workdir)
        self.port = port or free_port()
        self.conf = os.path.join(self.dir, "nginx.conf")
        self.error_log = os.path.join(self.dir, "error.log")
        self.access_log = os.path.join(self.dir, "access.log")
        self.proc = None
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(nginx_conf(self.dir, self.port, fcgi_port, os.path.abspath(data_dir),
                               workers, keep_conn, page_cache))

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=15):
        cmd = [NGINX, "-c", self.conf, "-p", self.dir + "/", "-e", self.error_log]
        return spawn_server(self, cmd, os.path.join(self.dir, "nginx.out"),
                            self.error_log, "nginx", timeout)

    def stop(self):
        if self.proc is not None:
            _stop_process(self.proc)

    def error_text(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def stop_all(*pieces):
    """Stops each piece that was started (None: never made), in order,
    going on past one that fails to stop."""
    for piece in pieces:
        if piece is not None:
            try:
                piece.stop()
            except Exception as e:  # keep stopping the others
                sys.stderr.write("stopping %s: %r\n" % (type(piece).__name__, e))


class Stack:
    """stand-in + larder + nginx, each in a subdirectory of workdir."""

    def __init__(self, workdir, wheels, cache_ttl=300, html_only=False, workers=2,
                 larder_extra=None, larder_extra_text="", rate=None, nginx_workers=1,
                 max_stale=86400, unix=False, keep_conn=True, root_pypi=None,
                 page_cache=True):
        self.dir = workdir
        self.standin = Standin(wheels, os.path.join(workdir, "standin"),
                               html_only=html_only, rate=rate)
        self.cache_ttl = cache_ttl
        self.workers = workers
        self.larder_extra = larder_extra
        self.larder_extra_text = larder_extra_text
        self.nginx_workers = nginx_workers
        self.max_stale = max_stale
        self.unix = unix
        self.keep_conn = keep_conn
        self.root_pypi = root_pypi
        self.page_cache = page_cache
        self.larder = None
        self.nginx = None

    def start(self):
        try:
            self.standin.start()
            self.larder = Larder(os.path.join(self.dir, "larder"), self.standin.port,
                                 files_port=self.standin.files_port,
                                 cache_ttl=self.cache_ttl, workers=self.workers,
                                 extra=self.larder_extra,
                                 extra_text=(self.larder_extra_text(self.standin)
                                             if callable(self.larder_extra_text)
                                             else self.larder_extra_text),
                                 max_stale=self.max_stale, unix=self.unix,
                                 root_pypi=self.root_pypi)
            self.larder.start()
            self.nginx = Nginx(os.path.join(self.dir, "nginx"),
                               self.larder.listen if self.unix else self.larder.port,
                               self.larder.data_dir, workers=self.nginx_workers,
                               keep_conn=self.keep_conn, page_cache=self.page_cache)
            self.nginx.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        stop_all(self.nginx, self.larder, self.standin)

    @property
    def data_dir(self):
        return self.larder.data_dir

    @property
    def base(self):
        """http://127.0.0.1:NGINX"""
        return self.nginx.base

    def index_url(self, route="root/pypi"):
        return "%s/%s/simple/" % (self.nginx.base, route)

    @property
    def url(self):
        """The index URL pip is given: .../root/pypi/simple/"""
        return self.index_url()

    def get(self, path, accept=None, headers=None, method="GET"):
        """A request to nginx for path (which starts with '/')."""
        h = dict(headers or {})
        if accept is not None:
            h["Accept"] = accept
        return http(self.nginx.base + path, method=method, headers=h)


# ---------------------------------------------------------------- clients

def clone_venv(template, path):
    """A copy of the pristine venv template at path, its scripts' #! lines
    pointed at the copy: 0.1 s instead of the seconds a new venv takes.
    Returns path."""
    shutil.copytree(template, path, symlinks=True)
    old = ("#!" + os.path.join(template, "bin", "")).encode()
    new = ("#!" + os.path.join(path, "bin", "")).encode()
    bindir = os.path.join(path, "bin")
    for n in os.listdir(bindir):
        p = os.path.join(bindir, n)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        with open(p, "rb") as f:
            data = f.read()
        if data.startswith(old):
            with open(p, "wb") as f:
                f.write(new + data[len(old):])
    return path


def wait_for(pred, timeout=10.0, step=0.05):
    """Polls pred() until it returns something true; returns it, or the last
    (false) value after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def make_venv(path):
    """A fresh virtualenv made by Debian's python; returns its path."""
    subprocess.run([PYTHON, "-m", "venv", path], check=True, env=clean_env(),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    return path


def pip_install(venv, index_url, pkgs, extra_args=(), timeout=180):
    """VENV/bin/pip install --no-cache-dir ... --index-url URL PKGS; returns
    (returncode, combined output). No retries, so a failure shows at once."""
    cmd = [os.path.join(venv, "bin", "pip"), "install", "--no-cache-dir",
           "--disable-pip-version-check", "--no-input", "--retries", "0",
           "--timeout", "30", "--index-url", index_url] + list(extra_args) + list(pkgs)
    try:
        p = subprocess.run(cmd, env=clean_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return -1, "timed out after %s s\n%s" % (timeout, (e.output or b"").decode(errors="replace"))
    return p.returncode, p.stdout.decode(errors="replace")


def venv_install(path, index_url, pkgs, extra_args=()):
    """make_venv(path) then pip_install; returns (returncode, output)."""
    make_venv(path)
    return pip_install(path, index_url, pkgs, extra_args)


def installed(venv):
    """{normalised name: version} of what is installed in venv (pip and
    setuptools left out)."""
    code = ("import importlib.metadata as m, json, re\n"
            "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version"
            " for d in m.distributions()}))")
    p = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], env=clean_env(),
                       stdout=subprocess.PIPE, check=True, timeout=60)
    got = json.loads(p.stdout)
    for n in ("pip", "setuptools", "wheel"):
        got.pop(n, None)
    return got


# ---------------------------------------------------------------- the data dir

SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def store_bytes(data_dir):
    """The bytes of the files under DATA/blobs, as a person running du
    would count them (files evicted while it looks count as gone)."""
    total = 0
    for root, _, files in os.walk(os.path.join(data_dir, "blobs")):
        for n in files:
            try:
                total += os.stat(os.path.join(root, n)).st_size
            except FileNotFoundError:
                pass
    return total


def data_listing(data_dir):
    """Sorted relative paths of every file and directory under data_dir,
    without SQLite's -wal/-shm/-journal files, which come and go."""
    out = []
    for root, dirs, files in os.walk(data_dir):
        for n in dirs + files:
            if n.endswith(SQLITE_SIDECARS):
                continue
            out.append(os.path.relpath(os.path.join(root, n), data_dir))
    return sorted(out)




def blob_file(data_dir, sha):
    """Where the blob of that sha256 is stored."""
    return os.path.join(data_dir, "blobs", "sha256", sha[:2], sha[2:4], sha)


def wait_stored(data_dir, sha, timeout=10.0):
    """Waits until the blob of that sha256 is in the store (the owner of a
    streamed miss publishes it just after its answer ends); true once it is."""
    return wait_for(lambda: os.path.exists(blob_file(data_dir, sha)), timeout)


def blobs(data_dir):
    """{relative path: path} of every file under DATA/blobs but the gzip'd
    copies of pages (gz_copies)."""
    top = os.path.join(data_dir, "blobs")
    out = {}
    for root, _, files in os.walk(top):
        for n in files:
            if n.endswith(".gz"):
                continue
            p = os.path.join(root, n)
            out[os.path.relpath(p, top)] = p
    return out


def gz_copies(data_dir):
    """{sha256: path} of every page's gzip'd copy, DATA/blobs/.../<hex>.gz."""
    out = {}
    for root, _, files in os.walk(os.path.join(data_dir, "blobs")):
        for n in files:
            if n.endswith(".gz"):
                out[n[:-3]] = os.path.join(root, n)
    return out


def bad_blobs(data_dir):
    """Files under DATA/blobs whose content does not hash to their name (temp
    files left behind included), or a blob outside sha256/ab/cd/, or a
    gzip'd copy that does not inflate to its blob's bytes or has no blob:
    [(path, actual sha256)]."""
    bad = []
    for sha, path in gz_copies(data_dir).items():
        try:
            with gzip.open(path) as f:
                actual = hashlib.sha256(f.read()).hexdigest()
        except (OSError, EOFError) as e:
            actual = repr(e)
        beside = os.path.join(os.path.dirname(path), sha)
        if actual != sha or not os.path.exists(beside):
            bad.append((path, actual))
    for rel, path in blobs(data_dir).items():
        name = os.path.basename(path)
        actual = sha256_file(path)
        where = os.path.join("sha256", name[:2], name[2:4], name)
        if actual != name or rel != where:
            bad.append((path, actual))
    return bad
