"""The parties of the benchmark: every server a team could put between pip
and PyPI, started for real on this machine with an empty state.

    direct             no cache: pip talks to the (simulated wide-area)
                       upstream itself
    nginx-static       nginx serving files from a directory: the reference
                       for warm pages and hot wheels (not a PyPI cache)
    larder-nginx       nginx + `larder serve` (X-Accel-Redirect)
    larder-lighttpd    lighttpd spawning larder (X-Sendfile)
    larder-apache      Apache mod_fcgid spawning larder (mod_xsendfile)
    larder-apache-proxy  Apache mod_proxy_fcgi in front of `larder serve`
                       (mod_xsendfile)
    nginx-proxy-cache  the hand-made alternative: nginx proxy_cache with
                       Accept in the cache key and sub_filter rewriting the
                       file URLs on project pages to its own /files/
    devpi, proxpi,     when found on PATH or in --venv; otherwise reported
    pypiserver         absent, with the reason

A party is made by make(name, ...) and used as

    p = make("larder-nginx", work, upstream, args)
    p.start()          # a fresh, empty state (a cold cache)
    p.index_url        # what pip gets as --index-url
    p.processes()      # the pids of its whole process tree, fetchers included
    p.workers()        # the pids that answer requests (larder: its workers)
    p.larder_processes()   # larder parties: every process of the larder binary
    p.stop()

Each start() uses a new directory, so a cold case is a new party with
nothing cached, and a stopped party leaves nothing running.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import flighthelp as fh  # noqa: E402
import frontends  # noqa: E402
import stack  # noqa: E402

NGINX_WORKERS = 2

ALL = ["direct", "nginx-static", "larder-nginx", "larder-lighttpd", "larder-apache",
       "larder-apache-proxy",
       "nginx-proxy-cache", "devpi", "proxpi", "pypiserver"]
LARDER_KINDS = {"larder-nginx": "nginx", "larder-lighttpd": "lighttpd-fcgi",
                "larder-apache": "apache-fcgid", "larder-apache-proxy": "apache-proxy-fcgi"}
LABELS = {
    "direct": "direct (the upstream, across the simulated WAN)",
    "nginx-static": "nginx serving the same bytes as static files",
    "larder-nginx": "larder behind nginx (X-Accel-Redirect)",
    "larder-lighttpd": "larder behind lighttpd (X-Sendfile)",
    "larder-apache": "larder behind Apache mod_fcgid (mod_xsendfile)",
    "larder-apache-proxy": "larder serve behind Apache mod_proxy_fcgi (mod_xsendfile)",
    "nginx-proxy-cache": "nginx proxy_cache + sub_filter, Accept in the key",
    "devpi": "devpi-server, root/pypi-style mirror index",
    "proxpi": "proxpi (Flask)",
    "pypiserver": "pypiserver with --fallback-url (redirects, no cache)",
}


class PartyError(Exception):
    """A party that should be present did not start."""


def _pids_below(roots):
    """Every live pid that is one of roots or descends from one."""
    ppid = {p: fh.ppid_of(p) for p in fh._pids()}
    out = set()
    for pid in ppid:
        p = pid
        for _ in range(64):
            if p in roots:
                out.add(pid)
                break
            p = ppid.get(p)
            if not p or p <= 1:
                break
    return out


def _parents():
    """The pids that have a live (not zombie) child, from one pass over
    /proc."""
    out = set()
    for pid in fh._pids():
        try:
            with open("/proc/%d/stat" % pid) as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if rest and rest[0] not in ("Z", "X"):
            out.add(int(rest[1]))
    return out


def _pids_mentioning(text):
    """Live pids whose command line contains text (detached fetchers name
    their data dir in their arguments)."""
    return {p for p in fh._pids() if any(text in a for a in fh._cmdline(p) or ())}


def _version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (r.stdout + r.stderr).strip().splitlines()
    return text[0].strip() if text else None


class Party:
    name = None
    kind = None

    def __init__(self, name, work, upstream, args):
        self.name = name
        self.label = LABELS[name]
        self.work = work
        self.upstream = upstream
        self.args = args
        self.present = True
        self.reason = None
        self.version = None
        self.dir = None
        self.runs = 0
        self.server = None      # a _Server, for the parties that are one

    def info(self):
        return {"name": self.name, "label": self.label, "kind": self.kind,
                "present": self.present, "version": self.version, "reason": self.reason}

    dir_prefix = ""

    def _new_dir(self):
        self.runs += 1
        self.dir = os.path.join(self.work, "%s%s-%d" % (self.dir_prefix, self.name,
                                                       self.runs))
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        return self.dir

    def start(self):
        raise NotImplementedError

    def stop(self):
        if self.server is not None:
            self.server.stop()

    @property
    def index_url(self):
        raise NotImplementedError

    def roots(self):
        """The pids whose trees make up the party."""
        return self.server.roots() if self.server is not None else []

    def processes(self):
        pids = _pids_below(set(self.roots()))
        if self.dir:
            pids |= _pids_mentioning(self.dir)
        pids.discard(os.getpid())
        return pids

    def workers(self):
        """The pids that answer requests (for the per-worker memory goal)."""
        return self.processes()


class Direct(Party):
    kind = "direct"

    def start(self):
        return self

    @property
    def index_url(self):
        return self.upstream.index_url


def start_nginx(party, http):
    """Writes party.dir/nginx.conf around http (stack.nginx_main, as the
    tests' nginx) and starts nginx on party.port; returns its _Server."""
    d = party.dir
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(stack.nginx_main(d, http, NGINX_WORKERS, "warn"))
    server = _Server(d, party.port)
    server.start([stack.NGINX, "-c", conf, "-p", d + "/"], "nginx",
                 os.path.join(d, "error.log"))
    party.version = _version([stack.NGINX, "-v"])
    return server


class NginxStatic(Party):
    """nginx with one location: / aliased to a directory the harness fills
    (page bytes copied from a party's warm answer, the big wheel)."""

    kind = "nginx-static"
    # /put/: nginx receiving a request body into a file (the DAV module's
    # PUT: the body spooled to a temp file beside the target, renamed into
    # place), the reference for uploads
    HTTP = """\
    tcp_nopush on;
    types {{ application/vnd.pypi.simple.v1+json json; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{ root {root}; }}
        location /put/ {{
            root {root};
            dav_methods PUT;
            create_full_put_path on;
            client_max_body_size 0;
            client_body_temp_path {root}/.put-tmp;
        }}
    }}"""

    def start(self):
        d = self._new_dir()
        self.root = os.path.join(d, "www")
        os.makedirs(self.root)
        os.chmod(self.root, 0o755)
        self.port = stack.free_port()
        self.server = start_nginx(self, self.HTTP.format(port=self.port, root=self.root))
        return self

    def put(self, relpath, data=None, src=None):
        """Publishes bytes (or a copy of file src) at /relpath; returns its URL."""
        path = os.path.join(self.root, relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if src:
            shutil.copyfile(src, path)
        else:
            with open(path, "wb") as f:
                f.write(data)
        os.chmod(path, 0o644)
        return "http://127.0.0.1:%d/%s" % (self.port, relpath)

    @property
    def index_url(self):
        return None


class _Server:
    """One foreground server process in its own session."""

    def __init__(self, dir_, port):
        self.dir = dir_
        self.port = port
        self.proc = None

    def start(self, cmd, what, log, env=None, timeout=30):
        out = open(os.path.join(self.dir, "%s.out" % what), "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=out,
                                         stdin=subprocess.DEVNULL, cwd=self.dir,
                                         env=env or stack.clean_env(),
                                         start_new_session=True)
        finally:
            out.close()
        try:
            stack.wait_port(self.port, timeout, self.proc, what, log)
        except RuntimeError as e:
            self.stop()
            raise PartyError(str(e)) from None

    def stop(self):
        if self.proc is not None:
            stack._stop_process(self.proc)
            self.proc = None

    def roots(self):
        return [self.proc.pid] if self.proc else []


class Larder(Party):
    """larder behind one of the front ends the integration tests drive, from
    the configs shipped in conf/."""

    kind = "larder"
    larder_extra = None  # [larder] keys for the next start() only
    # more sections (index declarations) and root/pypi's keys after its
    # type (stack.larder_conf), for the next start() only
    larder_extra_text = None
    root_pypi = None

    def start(self):
        d = self._new_dir()
        extra, self.larder_extra = self.larder_extra, None
        text, self.larder_extra_text = self.larder_extra_text or "", None
        root, self.root_pypi = self.root_pypi, None
        if self.name == "larder-nginx":
            self.fe = LarderNginx(d, self.upstream.index_port, self.args,
                                  self.upstream.files_port, extra, text, root)
        else:
            self.fe = frontends.make_frontend(
                LARDER_KINDS[self.name], d, self.upstream.index_port, cache_ttl=3600,
                workers=self.args.larder_workers, binary=self.args.larder,
                files_port=self.upstream.files_port, larder_extra=extra,
                larder_extra_text=text, root_pypi=root)
        try:
            self.fe.start(timeout=30)
        except RuntimeError as e:
            raise PartyError("%s did not start: %s" % (self.name, e)) from None
        self.version = _version([self.args.larder, "--version"])
        return self

    def stop(self):
        if getattr(self, "fe", None):
            self.fe.stop()
            self.fe = None

    @property
    def index_url(self):
        return self.fe.index_url()

    @property
    def data_dir(self):
        return self.fe.data_dir

    def roots(self):
        fe = self.fe
        pids = []
        for piece in (fe, getattr(fe, "larder", None), getattr(fe, "nginx", None)):
            proc = getattr(piece, "proc", None)
            if proc is not None and proc.poll() is None:
                pids.append(proc.pid)
        return pids

    def larder_processes(self):
        """The pids of the party's processes that run the larder binary
        (--larder, or the copy a front end made in its directory for a
        worker user who cannot reach it): pools' supervisors and workers,
        not the web server."""
        binaries = {os.path.realpath(self.args.larder)}
        if self.dir:
            binaries.add(os.path.realpath(os.path.join(self.dir, "bin", "larder")))
        out = set()
        for pid in self.processes():
            try:
                exe = os.path.realpath("/proc/%d/exe" % pid)
            except OSError:
                continue
            if exe in binaries:
                out.add(pid)
        return out

    def workers(self):
        # A worker: the larder binary, and not a pool's supervisor (the
        # process whose children the workers are).
        return self.larder_processes() - _parents()


class LarderNginx:
    """conf/nginx.conf as shipped (its server block, with this run's paths
    and port) in front of `larder serve` on a unix socket, as
    contrib/larder.service runs it. Quacks like a frontends.Frontend."""

    kind = "nginx"

    def __init__(self, workdir, upstream_port, args, files_port, larder_extra=None,
                 extra_text="", root_pypi=None):
        self.dir = workdir
        self.port = stack.free_port()
        self.data_dir = os.path.join(workdir, "data")
        self.sock = os.path.join(workdir, "larder.sock")
        self.binary = args.larder
        self.workers = args.larder_workers
        self.conf = os.path.join(workdir, "larder.conf")
        os.makedirs(self.data_dir)
        with open(self.conf, "w") as f:
            f.write(stack.larder_conf(self.data_dir, upstream_port, cache_ttl=3600,
                                      files_port=files_port, extra=larder_extra,
                                      extra_text=extra_text, root_pypi=root_pypi))
        self.larder = self.nginx = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def index_url(self, route="root/pypi"):
        return "%s/%s/simple/" % (self.base, route)

    def start(self, timeout=30):
        self.larder = _Server(self.dir, None)
        self.larder.proc = subprocess.Popen(
            [self.binary, "serve", "-c", self.conf, "--listen", "unix:" + self.sock,
             "--workers", str(self.workers)] + stack.serve_user_args(self.binary),
            stdout=open(os.path.join(self.dir, "larder.log"), "ab"),
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.dir,
            env=stack.clean_env(), start_new_session=True)
        ok = stack.wait_for(lambda: self.larder.proc.poll() is not None or
                            _unix_connects(self.sock), timeout)
        if not ok or self.larder.proc.poll() is not None:
            self.stop()
            raise RuntimeError("larder serve did not listen on %s" % self.sock)
        server = frontends.shipped("nginx.conf", [
            ("unix:/run/larder/larder.sock", "unix:" + self.sock),
            ("listen 80;", "listen 127.0.0.1:%d;" % self.port),
            ("alias /var/lib/larder/;", "alias %s/;" % self.data_dir),
            ("/var/cache/nginx/larder", os.path.join(self.dir, "nginx-cache")),
            ("include fastcgi_params;", "include /etc/nginx/fastcgi_params;")])
        try:
            self.nginx = start_nginx(self, "    tcp_nopush on;\n" + server)
        except PartyError:
            self.stop()
            raise
        self.proc = self.nginx.proc
        return self

    def stop(self):
        for piece in (self.nginx, self.larder):
            if piece is not None:
                piece.stop()
        frontends.reap_fetchers(self.data_dir, grace=2.0)


def _unix_connects(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class ProxyCache(Party):
    """The cache people build by hand: nginx proxy_cache in front of the
    index and the files host. The project pages are cached per Accept (the
    key holds it), and sub_filter rewrites the files host's URLs on every
    answer to the proxy's own /files/, so the files come through the cache
    too. proxy_cache_lock makes concurrent misses of one file wait for the
    first fetch (they do not stream it)."""

    kind = "proxy-cache"
    HTTP = """\
    proxy_cache_path {dir}/cache levels=1:2 keys_zone=pypi:16m max_size=20g
                     inactive=30d use_temp_path=off;
    upstream index {{ server 127.0.0.1:{index_port}; keepalive 16; }}
    upstream files {{ server 127.0.0.1:{files_port}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_cache pypi;
        proxy_cache_lock on;
        proxy_cache_lock_timeout 600s;
        proxy_cache_lock_age 600s;
        proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
        proxy_cache_revalidate on;
        proxy_read_timeout 600s;

        location /simple/ {{
            proxy_pass http://index;
            proxy_set_header Host {files_host}:{index_port};
            # sub_filter needs the body uncompressed.
            proxy_set_header Accept-Encoding "";
            proxy_cache_key "$request_uri|$http_accept";
            proxy_cache_valid 200 301 10m;
            proxy_cache_valid 404 1m;
            sub_filter_types application/vnd.pypi.simple.v1+json
                             application/vnd.pypi.simple.v1+html;
            sub_filter "http://{files_host}:{files_port}/" "/files/";
            sub_filter_once off;
        }}
        location /files/ {{
            proxy_pass http://files/;
            proxy_set_header Host {files_host}:{files_port};
            proxy_cache_key "files$uri";
            proxy_cache_valid 200 365d;
        }}
    }}"""

    def start(self):
        d = self._new_dir()
        self.port = stack.free_port()
        # No tcp_nopush here: with it, sub_filter's chunked answers stall
        # 40 ms each on a kept-alive connection (the last chunk waits for a
        # delayed ACK), which would measure a misconfiguration.
        self.server = start_nginx(self, self.HTTP.format(
            dir=d, port=self.port, index_port=self.upstream.index_port,
            files_port=self.upstream.files_port, files_host=self.upstream.files_host))
        return self

    @property
    def index_url(self):
        return "http://127.0.0.1:%d/simple/" % self.port


def _find_tool(names, venv):
    """{name: path} of the executables found in venv/bin or on PATH."""
    out = {}
    for n in names:
        cands = [os.path.join(venv, "bin", n)] if venv else []
        cands.append(shutil.which(n))
        for c in cands:
            if c and os.access(c, os.X_OK):
                out[n] = c
                break
    return out


class PythonCache(Party):
    """devpi-server, proxpi or pypiserver, run from PATH or --venv. Nothing
    here installs them: this machine reaches no PyPI, so they are present
    only when someone provides them."""

    kind = "python-cache"
    NEEDS = {"devpi": ["devpi-init", "devpi-server", "devpi"],
             "proxpi": ["flask"],
             "pypiserver": ["pypi-server"]}

    def __init__(self, *a):
        super().__init__(*a)
        self.tools = _find_tool(self.NEEDS[self.name], self.args.venv)
        missing = [n for n in self.NEEDS[self.name] if n not in self.tools]
        if self.name == "proxpi" and not missing:
            py = os.path.join(os.path.dirname(self.tools["flask"]), "python")
            if subprocess.run([py, "-c", "import proxpi"], capture_output=True).returncode:
                missing.append("the proxpi module")
        if missing:
            self.present = False
            self.reason = "%s not found on PATH%s" % (
                ", ".join(missing), " or in %s/bin" % self.args.venv if self.args.venv
                else " (give --venv DIR)")

    def start(self):
        d = self._new_dir()
        self.port = stack.free_port()
        self.server = _Server(d, self.port)
        up = self.upstream.index_url
        env = stack.clean_env()
        log = os.path.join(d, "%s.out" % self.name)
        if self.name == "devpi":
            sd = os.path.join(d, "server")
            subprocess.run([self.tools["devpi-init"], "--serverdir", sd, "--root-passwd", ""],
                           check=True, capture_output=True, env=env)
            self.server.start([self.tools["devpi-server"], "--serverdir", sd, "--host",
                               "127.0.0.1", "--port", str(self.port)], self.name, log, env)
            cli = [self.tools["devpi"], "--clientdir", os.path.join(d, "client")]
            base = "http://127.0.0.1:%d" % self.port
            for cmd in (["use", base], ["login", "root", "--password", ""],
                        ["index", "-c", "root/bench", "type=mirror", "mirror_url=" + up]):
                subprocess.run(cli + cmd, check=True, capture_output=True, env=env)
            self._url = base + "/root/bench/+simple/"
            self.version = _version([self.tools["devpi-server"], "--version"])
        elif self.name == "proxpi":
            env.update({"PROXPI_INDEX_URL": up, "FLASK_APP": "proxpi.server",
                        "PROXPI_CACHE_DIR": os.path.join(d, "cache")})
            self.server.start([self.tools["flask"], "run", "--host", "127.0.0.1",
                               "--port", str(self.port)], self.name, log, env)
            self._url = "http://127.0.0.1:%d/index/" % self.port
        else:
            pkgs = os.path.join(d, "packages")
            os.makedirs(pkgs)
            self.server.start([self.tools["pypi-server"], "run", "-i", "127.0.0.1", "-p",
                               str(self.port), "--fallback-url", up, pkgs],
                              self.name, log, env)
            self._url = "http://127.0.0.1:%d/simple/" % self.port
            self.version = _version([self.tools["pypi-server"], "--version"])
        return self

    @property
    def index_url(self):
        return self._url


def make(name, work, upstream, args):
    if name == "direct":
        return Direct(name, work, upstream, args)
    if name == "nginx-static":
        return NginxStatic(name, work, upstream, args)
    if name in LARDER_KINDS:
        p = Larder(name, work, upstream, args)
        why = frontends.missing_reason(LARDER_KINDS[name], args.larder)
        if why:
            p.present, p.reason = False, why
        return p
    if name == "nginx-proxy-cache":
        return ProxyCache(name, work, upstream, args)
    if name in PythonCache.NEEDS:
        return PythonCache(name, work, upstream, args)
    raise ValueError("unknown party %r (one of %s)" % (name, ", ".join(ALL)))


def kill_leftovers(work):
    """SIGKILLs every process whose command line names the work dir."""
    for pid in _pids_mentioning(os.path.realpath(work)):
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    time.sleep(0.1)
