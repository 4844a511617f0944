"""Runs the larder binary as a CGI program, the way a web server does (the
request in the environment, the response on stdout), without one: for the
tests of what only the CGI mode does (the detached child that owns a
fetch), and for the ones that make a system call fail in that process
(faultlib.c, an LD_PRELOAD library built here with cc).
"""

import os
import shutil
import subprocess

import stack as stackmod

HERE = os.path.dirname(os.path.abspath(__file__))


def faultlib(build_dir, malloc=True):
    """Builds faultlib.so in build_dir (once); returns its path, or None
    when there is no C compiler. Without malloc, it leaves malloc alone (a
    sanitizer build brings its own)."""
    out = os.path.join(build_dir, "faultlib%s.so" % ("" if malloc else "-nomalloc"))
    if os.path.exists(out):
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", out] +
                   ([] if malloc else ["-DNO_MALLOC"]) +
                   [os.path.join(HERE, "faultlib.c"), "-ldl"], check=True)
    return out


def asan_build(binary):
    """Whether binary links the address sanitizer (which must come first in
    the library list and brings its own malloc)."""
    try:
        p = subprocess.run(["ldd", binary], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"libasan" in p.stdout


class Response:
    def __init__(self, raw, returncode, stderr):
        head, _, self.body = raw.partition(b"\r\n\r\n")
        self.headers = {}
        self.status = 200
        for line in head.decode("latin-1").split("\r\n"):
            k, _, v = line.partition(":")
            if k.lower() == "status":
                self.status = int(v.split()[0])
            elif k:
                self.headers[k.strip().lower()] = v.strip()
        self.returncode = returncode
        self.stderr = stderr.decode(errors="replace")

    @property
    def complete(self):
        n = self.headers.get("content-length")
        return n is not None and int(n) == len(self.body)

    def __repr__(self):
        return "<CGI %s, %d bytes, exit %s>" % (self.status, len(self.body),
                                                self.returncode)


def run(conf, path, accept=None, preload=None, extra_env=None, timeout=60,
        wait=True):
    """Runs larder as a CGI program for GET path with the config file conf.
    Returns a Response, or the Popen when wait is False."""
    binary = stackmod.larder_bin()
    env = stackmod.clean_env({
        "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET",
        "REQUEST_URI": path, "SCRIPT_NAME": "", "PATH_INFO": path,
        "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1", "LARDER_CONFIG": conf,
    })
    if accept:
        env["HTTP_ACCEPT"] = accept
    if preload:
        env["LD_PRELOAD"] = preload
        if asan_build(binary):
            env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                                   ":verify_asan_link_order=0").lstrip(":")
    env.update(extra_env or {})
    proc = subprocess.Popen([binary], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=timeout)
    return Response(out, proc.returncode, err)


def stream_conf(st):
    """A copy of the stack's larder.conf with sendfile = stream (a CGI
    program has no web server to hand a file to); returns its path."""
    with open(st.larder.conf) as f:
        text = f.read()
    path = os.path.join(st.dir, "larder-cgi.conf")
    with open(path, "w") as f:
        f.write(text.replace("sendfile = x-accel-redirect", "sendfile = stream"))
    return path
