"""Every web server larder runs behind, started for a test from the configs
shipped in conf/. Standard library only; builds on stack.py.

    fe = make_frontend("apache-fcgid", workdir, standin.port).start()
    http(fe.base + "/root/pypi/simple/larder-demo-a/")
    fe.stop()

Kinds:

    nginx              stack.Nginx in front of `larder serve` (X-Accel-Redirect)
    lighttpd-fcgi      lighttpd spawning larder (bin-path), X-Sendfile
                       (conf/lighttpd.conf)
    apache-fcgid       Apache mod_fcgid spawning larder, mod_xsendfile
                       (conf/apache-fcgid.conf)
    apache-proxy-fcgi  Apache mod_proxy_fcgi in front of `larder serve`,
                       mod_xsendfile (conf/apache-proxy-fcgi.conf)
    lighttpd-cgi       lighttpd mod_cgi, X-Sendfile (conf/lighttpd-cgi.conf)
    apache-cgi         Apache mod_cgid with the shared-hosting .htaccess,
                       sendfile = stream (conf/htaccess-cgi)

Each config is the shipped file with its example paths (/usr/bin/larder,
/etc/larder/larder.conf, /var/lib/larder, pypi.example.org, port 80, ...)
replaced by the test's own, and wrapped in a minimal server config of the
test's; a replacement that finds nothing to replace is an error, so the
shipped files and these tests cannot drift apart unnoticed.

Everything a front end writes (config, pid, logs, sockets, mutexes, the data
directory) stays in its workdir, and it listens on 127.0.0.1 on a free port.
Run as root, the servers run their workers as www-data, as Debian does: the
workdir must then be reachable by www-data (not under pytest's 0700 tmp
dir; see new_workdir()), the data directory is handed to www-data, and the
larder binary is copied into the workdir when www-data cannot reach it
where it is.
"""

import grp
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import stack as stackmod
from flighthelp import fetcher_pids  # noqa: F401 (frontends.fetcher_pids)

REPO = stackmod.REPO
CONF_DIR = os.path.join(REPO, "conf")
LIGHTTPD = shutil.which("lighttpd") or "/usr/sbin/lighttpd"
LIGHTTPD_MODULES = "/usr/lib/lighttpd"
APACHE = "/usr/sbin/apache2"
APACHE_MODULES = "/usr/lib/apache2/modules"

KINDS = ("nginx", "lighttpd-fcgi", "apache-fcgid", "apache-proxy-fcgi",
         "lighttpd-cgi", "apache-cgi")
CGI_KINDS = ("lighttpd-cgi", "apache-cgi")

# How larder hands cached files to each server.
SENDFILE = {
    "nginx": "x-accel-redirect",
    "lighttpd-fcgi": "x-sendfile",
    "apache-fcgid": "x-sendfile",
    "apache-proxy-fcgi": "x-sendfile",
    "lighttpd-cgi": "x-sendfile",
    "apache-cgi": "stream",
}

# The shipped config each kind is made from.
SHIPPED = {
    "nginx": None,  # stack.nginx_conf() mirrors conf/nginx.conf
    "lighttpd-fcgi": "lighttpd.conf",
    "apache-fcgid": "apache-fcgid.conf",
    "apache-proxy-fcgi": "apache-proxy-fcgi.conf",
    "lighttpd-cgi": "lighttpd-cgi.conf",
    "apache-cgi": "htaccess-cgi",
}

# The Apache modules each kind loads (besides the MPM), by file.
APACHE_MODS = {
    "apache-fcgid": ["authz_core", "mime", "alias", "env", "setenvif", "fcgid",
                     "xsendfile"],
    "apache-proxy-fcgi": ["authz_core", "mime", "alias", "env", "setenvif", "proxy",
                          "proxy_fcgi", "xsendfile"],
    "apache-cgi": ["authz_core", "mime", "alias", "env", "setenvif", "dir", "rewrite",
                   "cgid"],
}

# Who the servers' workers run as when the tests run as root.
WORKER_USER = "www-data"


def worker_ids():
    """(uid, gid) the servers' workers will run as, or None when the tests
    do not run as root (the servers then stay the current user)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(WORKER_USER)
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def missing_reason(kind, binary=None):
    """Why kind cannot run here with the larder binary given (default
    stack.larder_bin()), or None."""
    if kind not in KINDS:
        return "unknown front end %r" % kind
    b = binary or stackmod.larder_bin()
    if kind == "nginx":
        return stackmod.missing_reason(b)
    if not os.path.isfile(b) or not os.access(b, os.X_OK):
        return "larder binary not found at %s (build it, or set $LARDER_BIN)" % b
    if os.geteuid() == 0 and worker_ids() is None:
        return "running as root, but there is no %s user for the workers" % WORKER_USER
    if kind.startswith("lighttpd"):
        if not os.path.exists(LIGHTTPD):
            return "lighttpd not installed (apt-get install lighttpd)"
        if kind == "lighttpd-cgi" and not os.path.exists(
                os.path.join(LIGHTTPD_MODULES, "mod_cgi.so")):
            return "lighttpd's mod_cgi not found in %s" % LIGHTTPD_MODULES
        return None
    if not os.path.exists(APACHE):
        return "Apache not installed (apt-get install apache2)"
    packages = {"fcgid": "libapache2-mod-fcgid", "xsendfile": "libapache2-mod-xsendfile"}
    for mod in ["mpm_event"] + APACHE_MODS[kind]:
        if mod in _apache_builtin():
            continue
        so = os.path.join(APACHE_MODULES, "mod_%s.so" % mod)
        if not os.path.exists(so):
            return "Apache module mod_%s not installed (%s)" % (
                mod, "apt-get install " + packages.get(mod, "apache2"))
    return None


_builtin = None


def _apache_builtin():
    """Modules compiled into Apache (`apache2 -l`), by short name."""
    global _builtin
    if _builtin is None:
        try:
            out = subprocess.run([APACHE, "-l"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=10,
                                 env=stackmod.clean_env()).stdout.decode()
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _builtin = set(re.findall(r"mod_(\w+)\.c", out))
    return _builtin


def new_workdir(prefix="larder-fe-"):
    """A fresh directory under /tmp (or $TMPDIR) that the servers' workers
    can reach: mode 0755. The caller removes it."""
    d = os.path.realpath(tempfile.mkdtemp(prefix=prefix))
    os.chmod(d, 0o755)
    return d


def _reachable(path, ids):
    """Whether uid/gid ids can traverse every directory above path and read
    (and, for a file, execute) path itself."""
    if ids is None:
        return True
    uid, gid = ids

    def can(st, bits):
        if st.st_uid == uid:
            return st.st_mode & (bits << 6) == bits << 6
        if st.st_gid == gid:
            return st.st_mode & (bits << 3) == bits << 3
        return st.st_mode & bits == bits

    path = os.path.realpath(path)
    parts = path.split("/")
    for i in range(2, len(parts)):
        d = "/".join(parts[:i]) or "/"
        if not can(os.stat(d), 1):
            return False
    return can(os.stat(path), 5)


def _chown_tree(top, ids):
    if ids is None:
        return
    uid, gid = ids
    os.chown(top, uid, gid)
    for root, dirs, files in os.walk(top):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), uid, gid)


def shipped(name, replacements):
    """The text of conf/NAME with each (old, new) of replacements applied
    in order. Raises RuntimeError when an old string is not in the file:
    the shipped config changed and the test must follow it."""
    path = os.path.join(CONF_DIR, name)
    with open(path) as f:
        text = f.read()
    for old, new in replacements:
        if old not in text:
            raise RuntimeError("%s no longer contains %r; update frontends.py" % (path, old))
        text = text.replace(old, new)
    return text


def _set_sendfile(text, mode):
    """larder.conf text with its sendfile key set to mode."""
    out, n = re.subn(r"(?m)^sendfile = .*$", "sendfile = %s" % mode, text)
    if n != 1:
        raise RuntimeError("cannot find the sendfile key in stack.larder_conf()")
    return out


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def reap_fetchers(data_dir, grace=5.0):
    """Waits up to grace seconds for the owners of fetches of data_dir (the
    detached children of CGI processes, say) to finish, then SIGKILLs those
    left, by pid. Returns how many were killed."""
    deadline = time.monotonic() + grace
    while fetcher_pids(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    killed = 0
    for pid in fetcher_pids(data_dir):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


class Frontend:
    """A web server with larder behind it, everything under workdir.

    base        http://127.0.0.1:PORT
    url         the index URL pip is given (.../root/pypi/simple/)
    data_dir    larder's data directory
    larder_conf the larder.conf in use
    """

    kind = None

    def __init__(self, workdir, upstream_port, data_dir=None, cache_ttl=300,
                 workers=4, binary=None, larder_extra=None, port=None, files_port=None,
                 larder_extra_text="", root_pypi=None):
        self.dir = os.path.realpath(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.ids = worker_ids()
        self.port = port or stackmod.free_port()
        self.upstream_port = upstream_port
        self.files_port = files_port
        self.data_dir = os.path.realpath(data_dir or os.path.join(self.dir, "data"))
        self.larder_conf = os.path.join(self.dir, "larder.conf")
        self.cache_ttl = cache_ttl
        self.workers = workers
        self.binary = binary or stackmod.larder_bin()
        self.larder_extra = larder_extra
        self.larder_extra_text = larder_extra_text
        self.root_pypi = root_pypi
        self.proc = None
        self.logs = []          # (label, path) for log_text()

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def index_url(self, route="root/pypi"):
        return "%s/%s/simple/" % (self.base, route)

    @property
    def url(self):
        return self.index_url()

    def write_larder_conf(self, path=None):
        text = stackmod.larder_conf(self.data_dir, self.upstream_port,
                                    cache_ttl=self.cache_ttl, extra=self.larder_extra,
                                    extra_text=self.larder_extra_text,
                                    files_port=self.files_port, root_pypi=self.root_pypi)
        with open(path or self.larder_conf, "w") as f:
            f.write(_set_sendfile(text, SENDFILE[self.kind]))
        os.chmod(path or self.larder_conf, 0o644)

    def worker_binary(self):
        """The larder binary as the workers can run it: the one given, or a
        copy in workdir/bin when www-data cannot reach it."""
        if _reachable(self.binary, self.ids):
            return os.path.realpath(self.binary)
        d = os.path.join(self.dir, "bin")
        os.makedirs(d, exist_ok=True)
        dst = os.path.join(d, "larder")
        shutil.copy2(self.binary, dst)
        os.chmod(dst, 0o755)
        return dst

    def prepare_data_dir(self):
        """Makes the data dir, owned by the workers' user."""
        os.makedirs(self.data_dir, exist_ok=True)
        os.chmod(self.data_dir, 0o755)
        _chown_tree(self.data_dir, self.ids)
        if not _reachable(self.data_dir, self.ids):
            raise RuntimeError("%s is not reachable by %s: put the workdir where it "
                               "can be (frontends.new_workdir())" % (self.data_dir, WORKER_USER))

    def _popen(self, cmd, out_path):
        out = open(out_path, "ab")
        try:
            return subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                    cwd=self.dir, env=stackmod.clean_env(),
                                    start_new_session=True)
        finally:
            out.close()

    def start(self, timeout=20):
        raise NotImplementedError

    def stop(self):
        """Stops the server (SIGTERM, then SIGKILL), and the detached
        fetchers it left working in the data dir."""
        if self.proc is not None:
            stackmod._stop_process(self.proc)
        reap_fetchers(self.data_dir, grace=2.0)

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        """Every log of the front end and of larder, each under a title."""
        parts = []
        for label, path in self.logs + [("fetch.log", os.path.join(self.data_dir,
                                                                     "fetch.log"))]:
            text = _read(path)
            if text:
                parts.append("--- %s (%s) ---\n%s" % (label, path, text))
        return "\n".join(parts)

    def _wait(self, timeout, what, log):
        try:
            stackmod.wait_port(self.port, timeout, self.proc, what, log)
        except RuntimeError as e:
            self.stop()
            raise RuntimeError("%s\n%s" % (e, self.log_text()[-4000:])) from None


# ---------------------------------------------------------------- nginx

class NginxFrontend(Frontend):
    """stack.Nginx in front of stack.Larder (`larder serve`)."""

    kind = "nginx"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.larder = stackmod.Larder(os.path.join(self.dir, "larder"), self.upstream_port,
                                      cache_ttl=self.cache_ttl, workers=self.workers,
                                      binary=self.binary)
        self.larder.data_dir = self.data_dir
        self.larder_conf = self.larder.conf
        self.write_larder_conf()
        os.makedirs(self.data_dir, exist_ok=True)
        self.nginx = stackmod.Nginx(os.path.join(self.dir, "nginx"), self.larder.port,
                                    self.data_dir, port=self.port)
        self.logs = [("larder", self.larder.log), ("nginx error log", self.nginx.error_log)]

    def start(self, timeout=20):
        self.larder.start(timeout)
        try:
            self.nginx.start(timeout)
        except BaseException:
            self.larder.stop()
            raise
        self.proc = self.nginx.proc
        return self

    def stop(self):
        for piece in (self.nginx, self.larder):
            try:
                piece.stop()
            except Exception:  # keep stopping the other
                pass
        reap_fetchers(self.data_dir, grace=2.0)


# ---------------------------------------------------------------- lighttpd

LIGHTTPD_MAIN = """\
# written by tests/integration/frontends.py: the server around {shipped}
server.port = {port}
server.bind = "127.0.0.1"
server.document-root = "{dir}/htdocs"
server.errorlog = "{dir}/error.log"
server.upload-dirs = ( "{dir}/tmp" )
server.modules = ( "mod_accesslog" )
accesslog.filename = "{dir}/access.log"
{user}
# --- conf/{shipped}, with the test's paths ---
{text}
"""


class LighttpdFrontend(Frontend):
    """lighttpd -D with the shipped lighttpd.conf or lighttpd-cgi.conf."""

    def __init__(self, kind, *a, **kw):
        self.kind = kind
        super().__init__(*a, **kw)
        self.sdir = os.path.join(self.dir, "lighttpd")
        self.conf = os.path.join(self.sdir, "lighttpd.conf")
        self.error_log = os.path.join(self.sdir, "error.log")
        self.logs = [("lighttpd error log", self.error_log)]

    def write_config(self):
        for sub in ("htdocs", "tmp", "sockets"):
            os.makedirs(os.path.join(self.sdir, sub), exist_ok=True)
        # lighttpd opens its logs, and its workers make their sockets, after
        # it has become www-data
        _chown_tree(self.sdir, self.ids)
        binary = self.worker_binary()
        reps = [
            ('"pypi.example.org"', '"127.0.0.1:%d"' % self.port),
            ("/usr/bin/larder", binary),
            ("/etc/larder/larder.conf", self.larder_conf),
            ("/var/lib/larder", self.data_dir),
        ]
        if self.kind == "lighttpd-fcgi":
            reps.append(("/run/lighttpd/larder.socket",
                         os.path.join(self.sdir, "sockets", "larder.socket")))
        name = SHIPPED[self.kind]
        user = ""
        if self.ids is not None:
            user = 'server.username = "%s"\nserver.groupname = "%s"' % (
                WORKER_USER, grp.getgrgid(self.ids[1]).gr_name)
        with open(self.conf, "w") as f:
            f.write(LIGHTTPD_MAIN.format(shipped=name, port=self.port, dir=self.sdir,
                                         user=user, text=shipped(name, reps)))

    def start(self, timeout=20):
        self.write_larder_conf()
        self.prepare_data_dir()
        self.write_config()
        out = os.path.join(self.sdir, "lighttpd.out")
        if ("lighttpd stdout/stderr", out) not in self.logs:
            self.logs.append(("lighttpd stdout/stderr", out))
        self.proc = self._popen([LIGHTTPD, "-D", "-f", self.conf], out)
        self._wait(timeout, "lighttpd", self.error_log)
        return self


# ---------------------------------------------------------------- Apache

APACHE_MAIN = """\
# written by tests/integration/frontends.py: the server around {shipped}
ServerRoot "{dir}"
Listen 127.0.0.1:{port}
ServerName 127.0.0.1
PidFile {dir}/httpd.pid
DefaultRuntimeDir {dir}/run
Mutex file:{dir}/run default
ErrorLog {dir}/error.log
LogLevel {loglevel}
{loadmodules}
{user}
StartServers 1
ServerLimit 4
ThreadsPerChild 32
MaxRequestWorkers 128
KeepAliveTimeout 30
TypesConfig /etc/mime.types
LogFormat "%h %l %u %t \\"%r\\" %>s %b %D" common
CustomLog {dir}/access.log common
<Directory />
    AllowOverride None
    Require all denied
</Directory>
{extra}
# --- {shipped}, with the test's paths ---
{text}
"""


class ApacheFrontend(Frontend):
    """apache2 -DFOREGROUND with a minimal httpd.conf around the shipped
    site config (or, for apache-cgi, a shared-hosting-like vhost whose web
    root holds the shipped .htaccess and larder.cgi)."""

    def __init__(self, kind, *a, **kw):
        self.kind = kind
        super().__init__(*a, **kw)
        self.sdir = os.path.join(self.dir, "apache")
        self.conf = os.path.join(self.sdir, "httpd.conf")
        self.error_log = os.path.join(self.sdir, "error.log")
        self.logs = [("apache error log", self.error_log),
                     ("apache vhost error log", os.path.join(self.sdir, "larder-error.log"))]
        self.larder = None
        if kind == "apache-proxy-fcgi":
            self.larder = stackmod.Larder(os.path.join(self.dir, "larder"),
                                          self.upstream_port, cache_ttl=self.cache_ttl,
                                          workers=self.workers, binary=self.binary)
            self.larder.data_dir = self.data_dir
            self.larder_conf = self.larder.conf
            self.logs.append(("larder", self.larder.log))

    def _loadmodules(self):
        lines = []
        for mod in ["mpm_event"] + APACHE_MODS[self.kind]:
            if mod in _apache_builtin():
                continue
            lines.append("LoadModule %s_module %s/mod_%s.so" % (mod, APACHE_MODULES, mod))
        return "\n".join(lines)

    def _site(self):
        """The shipped text with the test's values, and extra global lines."""
        name = SHIPPED[self.kind]
        common = [("*:80", "*:%d" % self.port), ("${APACHE_LOG_DIR}", self.sdir)]
        if self.kind == "apache-fcgid":
            extra = ("FcgidIPCDir {d}/fcgid\nFcgidProcessTableFile {d}/fcgid/shm\n"
                     .format(d=self.sdir))
            return shipped(name, common + [
                ("/usr/bin/larder", self.worker_binary()),
                ("/etc/larder/larder.conf", self.larder_conf),
                ("/var/lib/larder", self.data_dir),
            ]), extra
        if self.kind == "apache-proxy-fcgi":
            return shipped(name, common + [
                ("unix:/run/larder/larder.sock|fcgi://localhost/",
                 "fcgi://127.0.0.1:%d/" % self.larder.port),
                ("/var/lib/larder", self.data_dir),
            ]), ""
        # apache-cgi: the host's vhost; the user's .htaccess and larder.cgi
        www = os.path.join(self.sdir, "www")
        os.makedirs(www, exist_ok=True)
        htaccess = shipped(name, [
            ("/home/USER/larder/larder.conf", self.larder_conf),
            ("/home/USER/larder/data", self.data_dir),
        ])
        with open(os.path.join(www, ".htaccess"), "w") as f:
            f.write(htaccess)
        cgi = os.path.join(www, "larder.cgi")
        shutil.copy2(self.binary, cgi)
        os.chmod(cgi, 0o755)
        os.chmod(os.path.join(www, ".htaccess"), 0o644)
        extra = "ScriptSock {d}/run/cgid.sock\n".format(d=self.sdir)
        vhost = """\
# A shared host's vhost: the user's web root, .htaccess allowed.
<VirtualHost *:{port}>
    DocumentRoot {www}
    <Directory {www}>
        AllowOverride All
        Require all granted
    </Directory>
</VirtualHost>
# The user's {www}/.htaccess is conf/htaccess-cgi with the test's paths.
""".format(port=self.port, www=www)
        return vhost, extra

    def write_config(self):
        for sub in ("run", "fcgid"):
            os.makedirs(os.path.join(self.sdir, sub), exist_ok=True)
        _chown_tree(os.path.join(self.sdir, "fcgid"), self.ids)
        text, extra = self._site()
        user = ""
        if self.ids is not None:
            user = "User %s\nGroup %s" % (WORKER_USER, grp.getgrgid(self.ids[1]).gr_name)
        with open(self.conf, "w") as f:
            f.write(APACHE_MAIN.format(
                shipped=("conf/" + SHIPPED[self.kind]), dir=self.sdir, port=self.port,
                loglevel="warn", loadmodules=self._loadmodules(), user=user,
                extra=extra, text=text))

    def start(self, timeout=20):
        if self.larder is not None:
            self.write_larder_conf(self.larder.conf)
            self.prepare_data_dir()
            self.larder.start(timeout)
        else:
            self.write_larder_conf()
            self.prepare_data_dir()
        try:
            self.write_config()
            out = os.path.join(self.sdir, "apache.out")
            if ("apache stdout/stderr", out) not in self.logs:
                self.logs.append(("apache stdout/stderr", out))
            self.proc = self._popen([APACHE, "-f", self.conf, "-DFOREGROUND"], out)
            self._wait(timeout, "apache", self.error_log)
        except BaseException:
            if self.larder is not None:
                self.larder.stop()
            raise
        return self

    def stop(self):
        if self.proc is not None:
            stackmod._stop_process(self.proc, grace=8.0)
        if self.larder is not None:
            self.larder.stop()
        reap_fetchers(self.data_dir, grace=2.0)


def make_frontend(kind, workdir, upstream_port, data_dir=None, cache_ttl=300, workers=4,
                  binary=None, larder_extra=None, port=None, files_port=None,
                  larder_extra_text="", root_pypi=None):
    """A front end of kind (see KINDS) in workdir, with larder's data in
    data_dir (default workdir/data) and its upstream the stand-in on
    upstream_port, its files on files_port; larder_extra_text and root_pypi
    as stack.larder_conf() takes them. Not started: call .start()."""
    kw = dict(data_dir=data_dir, cache_ttl=cache_ttl, workers=workers, binary=binary,
              larder_extra=larder_extra, port=port, files_port=files_port,
              larder_extra_text=larder_extra_text, root_pypi=root_pypi)
    if kind == "nginx":
        return NginxFrontend(workdir, upstream_port, **kw)
    if kind in ("lighttpd-fcgi", "lighttpd-cgi"):
        return LighttpdFrontend(kind, workdir, upstream_port, **kw)
    if kind in ("apache-fcgid", "apache-proxy-fcgi", "apache-cgi"):
        return ApacheFrontend(kind, workdir, upstream_port, **kw)
    raise ValueError("unknown front end %r (one of %s)" % (kind, ", ".join(KINDS)))
