"""larder's own FastCGI transport, spoken to directly (issue 21 items 5-7,
issue 28 item 4) and through libfcgi's cgi-fcgi, the client of the library
larder does not use (the oracle).

`FcgiClient` below is a FastCGI client of a few lines: it sends what a web
server sends (BEGIN_REQUEST, PARAMS, STDIN) and reads the records back, so
a test can send what no web server would (a NUL in a value) or nothing at
all (a silent connection).
"""

import concurrent.futures
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

import stack as stackmod
import uploads

BEGIN, ABORT, END, PARAMS, STDIN, STDOUT, STDERR = 1, 2, 3, 4, 5, 6, 7


def _len(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def encode_params(pairs):
    """FCGI_PARAMS content for [(name, value)] (bytes or str; anything goes,
    NULs included)."""
    out = b""
    for name, value in pairs:
        name = name.encode() if isinstance(name, str) else name
        value = value.encode() if isinstance(value, str) else value
        out += _len(len(name)) + _len(len(value)) + name + value
    return out


def record(rtype, rid, content=b""):
    return struct.pack(">BBHHBx", 1, rtype, rid, len(content), 0) + content


def request_bytes(pairs, body=b"", rid=1, keep=False):
    """A whole request as a web server sends it."""
    out = record(BEGIN, rid, struct.pack(">HB5x", 1, 1 if keep else 0))
    params = encode_params(pairs)
    for i in range(0, len(params), 65535):
        out += record(PARAMS, rid, params[i:i + 65535])
    out += record(PARAMS, rid)
    for i in range(0, len(body), 65535):
        out += record(STDIN, rid, body[i:i + 65535])
    return out + record(STDIN, rid)


def cgi_params(path, method="GET", query="", headers=None, body=b"", port=80):
    """The variables nginx's fastcgi_params would send for a request."""
    pairs = [("REQUEST_METHOD", method), ("REQUEST_URI", path + ("?" + query if query else "")),
             ("SCRIPT_NAME", ""), ("PATH_INFO", ""), ("QUERY_STRING", query),
             ("SERVER_PROTOCOL", "HTTP/1.1"), ("SERVER_NAME", "localhost"),
             ("SERVER_PORT", str(port)), ("HTTP_HOST", "localhost:%d" % port),
             ("REMOTE_ADDR", "127.0.0.1"), ("CONTENT_LENGTH", str(len(body)) if body else "")]
    for k, v in (headers or {}).items():
        if k.lower() == "content-type":
            pairs.append(("CONTENT_TYPE", v))
        else:
            pairs.append(("HTTP_" + k.upper().replace("-", "_"), v))
    return pairs


class FcgiResponse:
    def __init__(self, raw, stderr, app_status):
        head, _, self.body = raw.partition(b"\r\n\r\n")
        self.headers = {}
        self.status = 200
        for line in head.decode("latin-1").split("\r\n"):
            if ":" not in line:
                continue
            k, v = line.split(":", 1)
            self.headers[k.strip().lower()] = v.strip()
        if "status" in self.headers:
            self.status = int(self.headers["status"].split()[0])
        self.stderr = stderr
        self.app_status = app_status

    def __repr__(self):
        return "<FcgiResponse %d %r>" % (self.status, self.body[:200])


def connect(addr, timeout=10.0):
    """A socket to larder's FastCGI listener: addr is a port or "unix:PATH"."""
    if isinstance(addr, str) and addr.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target = addr[5:]
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        target = ("127.0.0.1", int(addr))
    s.settimeout(timeout)
    s.connect(target)
    return s


def read_response(s, rid=1):
    """Reads records up to FCGI_END_REQUEST of request rid. Returns an
    FcgiResponse; raises EOFError when the connection ends before it."""
    buf = b""
    out, err = b"", b""

    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = s.recv(65536)
            if not chunk:
                raise EOFError("connection closed after %d bytes of response" % len(out))
            buf += chunk

    while True:
        need(8)
        ver, rtype, r, clen, plen = struct.unpack(">BBHHBx", buf[:8])
        if ver != 1:
            raise EOFError("not a FastCGI record: %r" % buf[:8])
        need(8 + clen + plen)
        content = buf[8:8 + clen]
        buf = buf[8 + clen + plen:]
        if rtype == STDOUT:
            out += content
        elif rtype == STDERR:
            err += content
        elif rtype == END and r == rid:
            return FcgiResponse(out, err, struct.unpack(">I", content[:4])[0])


def fcgi_request(addr, path, method="GET", pairs=None, body=b"", timeout=10.0, **kw):
    """One request on a connection of its own. Returns an FcgiResponse."""
    with connect(addr, timeout) as s:
        s.sendall(request_bytes(pairs if pairs is not None
                                else cgi_params(path, method, body=body, **kw), body))
        return read_response(s)


def children(pid):
    """The pids of pid's children."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


@pytest.fixture
def larder(tmp_path):
    """`larder serve --listen 127.0.0.1:PORT`, 2 workers, at most 4, and no
    upstream it needs (the requests here are larder's own pages)."""
    lr = stackmod.Larder(str(tmp_path / "larder"), stackmod.free_port(), workers=2,
                         extra={"max_workers": 4})
    lr.start()
    yield lr
    lr.stop()


# ------------------------------------------------- issue 21 item 5: silence

def test_silent_connections_stall_nothing(larder):
    """Six connections that never send a byte (two workers, at most four)
    cost a request on a seventh nothing it can notice: /+health answers
    within 2 s (it took 19.7 s, each worker waiting 10 s on a silent one
    before it would take another)."""
    silent = [connect(larder.port) for _ in range(6)]
    try:
        time.sleep(0.2)
        t0 = time.monotonic()
        r = fcgi_request(larder.port, "/+health", timeout=30)
        took = time.monotonic() - t0
        assert r.status == 200, r
        assert took < 2.0, "/+health took %.1f s behind 6 silent connections" % took
        # and the silent ones are still served once they speak
        silent[0].sendall(request_bytes(cgi_params("/+health")))
        assert read_response(silent[0]).status == 200
    finally:
        for s in silent:
            s.close()


# ------------------------------------------- issue 21 item 6: NUL injection

def test_nul_in_a_value_is_refused(larder):
    """A NUL in a parameter value would split it into two variables, the
    second of the sender's choosing: /nonexistent-path/zzz carrying
    HTTP_X_EVIL="a\\0REQUEST_URI=/+health" was answered as /+health. It is
    a 400 with a one-line reason, and the connection serves on."""
    base = cgi_params("/nonexistent-path/zzz")
    good = fcgi_request(larder.port, "", pairs=base)
    assert good.status == 404, good
    evil = base + [("HTTP_X_EVIL", b"a\0REQUEST_URI=/+health"), ("HTTP_X_LAST", "1")]
    with connect(larder.port) as s:
        s.sendall(request_bytes(evil, keep=True))
        r = read_response(s)
        assert r.status == 400, r
        assert b"NUL" in r.body and r.body.count(b"\n") <= 1, r.body
        # the connection is still good for the next request
        s.sendall(request_bytes(cgi_params("/+health"), keep=True))
        assert read_response(s).status == 200
    # a NUL in a name too, and a body that comes with a refused request
    for pairs, body in (([(b"HTTP_X\0EVIL", "a")], b""),
                        ([("HTTP_X_EVIL", b"\0")], b"x" * 100000)):
        r = fcgi_request(larder.port, "", pairs=base + pairs, body=body)
        assert r.status == 400, r
    assert "NUL byte in a FastCGI parameter value" in larder.log_text()


# --------------------------------------- issue 21 item 7: a lost SIGTERM

def test_a_new_worker_keeps_its_sigterm(larder):
    """A worker sent SIGTERM the moment it is forked (a second reload, or
    a stop, right after a reload) stops. One that got it before it had put
    in its own handler (the supervisor's took it, and it was lost) served
    on forever, with the old config.

    The window, from fork until the worker's handlers are in, is a few
    microseconds and cannot be hit from outside by timing alone; strace
    holds every new worker for 0.5 s at the end of each rt_sigprocmask it
    makes (where the old code unblocked the supervisor's handler), and the
    SIGTERM comes then. Before the fix both new workers ran on for good."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    sup = larder.proc.pid
    st = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null",
                           "-e", "trace=rt_sigprocmask",
                           "-e", "inject=rt_sigprocmask:delay_exit=500000",
                           "-p", str(sup)], stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)  # attached
        if st.poll() is not None:
            pytest.skip("strace cannot attach: %s" % st.stderr.read().decode()[-200:])
        before = set(children(sup))
        os.kill(sup, signal.SIGHUP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not set(children(sup)) - before:
            time.sleep(0.01)
        new = set(children(sup)) - before
        assert new, "no new worker after SIGHUP"
        time.sleep(0.1)  # the new ones are inside their first rt_sigprocmask
        for pid in new:  # as a reload or a stop would
            os.kill(pid, signal.SIGTERM)
        time.sleep(1.5)
    finally:
        st.terminate()
        st.wait()
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and set(children(sup)) & new:
        time.sleep(0.1)
    left = set(children(sup)) & new
    assert not left, "workers sent SIGTERM still run: %s" % sorted(left)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(children(sup)) != 2:
        time.sleep(0.1)
    assert len(children(sup)) == 2
    assert fcgi_request(larder.port, "/+health").status == 200


# ------------------------- issue 28 item 4: no reset under a streamed upload

def streamed_post(port, path, headers, body, pieces=4, pause=0.003):
    """A POST whose body goes out in pieces with pauses, so that nginx
    (fastcgi_request_buffering off) streams it to larder as it comes, on a
    kept connection. Returns (status, first bytes of the body)."""
    h = {"Host": "127.0.0.1:%d" % port, "Content-Length": str(len(body)),
         "Connection": "close"}
    h.update(headers)
    head = "POST %s HTTP/1.1\r\n%s\r\n" % (path, "".join("%s: %s\r\n" % kv for kv in h.items()))
    step = len(body) // pieces + 1
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(head.encode("latin-1"))
        try:
            for i in range(0, len(body), step):
                s.sendall(body[i:i + step])
                time.sleep(pause)
        except OSError:
            pass
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        except OSError:
            pass
    raw = b"".join(chunks)
    status = int(raw[9:12]) if raw[:5] == b"HTTP/" else 0
    return status, raw.partition(b"\r\n\r\n")[2][:200]


def churn(st, posts, threads=4):
    """Sends the streamed POSTs (headers, body) from threads clients while
    two more GET /+health and larder is sent SIGHUP every 0.3 s (a new
    generation of workers; the old one retires). Returns (POST results,
    GET statuses)."""
    done = threading.Event()

    def hup():
        while not done.wait(0.3):
            os.kill(st.larder.proc.pid, signal.SIGHUP)

    def getter(_):
        out = []
        while not done.is_set():
            out.append(stackmod.http(st.base + "/+health").status)
        return out

    def poster(k):
        return [streamed_post(st.nginx.port, "/root/private/", *posts[i])
                for i in range(k, len(posts), threads)]

    threading.Thread(target=hup, daemon=True).start()
    with concurrent.futures.ThreadPoolExecutor(threads + 2) as ex:
        gets = [ex.submit(getter, g) for g in range(2)]
        ups = [ex.submit(poster, k) for k in range(threads)]
        results = [r for f in ups for r in f.result()]
        done.set()
        statuses = [s for f in gets for s in f.result()]
    return results, statuses


def nginx_post_errors(st):
    return [l for l in st.nginx.error_text().splitlines()
            if "[error]" in l and '"POST ' in l]


def test_streamed_posts_survive_retiring_workers(tmp_path, wheel_dir):
    """Streamed POSTs behind nginx while workers retire all the time
    (max_requests = 3), a new generation replaces them every 0.3 s and GETs
    keep them busy. First on kept connections (nginx routed POSTs like
    everything else): a worker used to close its kept connections as it
    retired, and nginx, which had just sent a POST on one, answered 502 (a
    streamed body cannot be sent again). Unauthenticated uploads, refused
    before anything slow, must each get their 401. Then real uploads, as
    the shipped config routes them (on connections of their own): every
    one a 2xx and published."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, workers=2,
                        larder_extra={"max_requests": 3, "max_workers": 8},
                        larder_extra_text=uploads.HOSTED_CONF, root_pypi=uploads.ROOT_PYPI)
    st.start()
    try:
        tok = uploads.token_add(st.larder, "root/private", "upload,read")
        dist = tmp_path / "dist"
        dist.mkdir()
        posts = []
        for i in range(80):
            whl = uploads.padded_wheel(str(dist), "larder-keep-app", "1.%d" % i, 48 * 1024)
            ctype, body = uploads.upload_body(whl)
            posts.append(({"Content-Type": ctype}, body))

        # 1. POSTs on kept connections, as nginx sends every other request
        with open(st.nginx.conf) as f:
            text = f.read()
        assert "fastcgi_pass $larder_upstream;" in text
        with open(st.nginx.conf, "w") as f:
            f.write(text.replace("fastcgi_pass $larder_upstream;", "fastcgi_pass larder;"))
        os.kill(st.nginx.proc.pid, signal.SIGHUP)
        time.sleep(1.0)
        results, statuses = churn(st, posts)
        bad = [r for r in results if r[0] != 401]
        assert not bad, "%d of %d POSTs not answered 401: %s\nnginx: %s" % (
            len(bad), len(results), bad[:3], nginx_post_errors(st)[:3])
        assert all(s == 200 for s in statuses), sorted(set(statuses))
        assert not nginx_post_errors(st)

        # 2. uploads as the shipped config sends them
        with open(st.nginx.conf, "w") as f:
            f.write(text)
        os.kill(st.nginx.proc.pid, signal.SIGHUP)
        time.sleep(1.0)
        for h, _ in posts:
            h.update(uploads.basic(tok))
        results, statuses = churn(st, posts)
        bad = [r for r in results if not 200 <= r[0] < 300]
        assert not bad, "%d of %d uploads failed: %s\nnginx: %s" % (
            len(bad), len(results), bad[:3], nginx_post_errors(st)[:3])
        assert all(s == 200 for s in statuses), sorted(set(statuses))
        assert len(uploads.hosted_rows(st.data_dir, "root/private")) == len(posts)
        assert not nginx_post_errors(st)
        assert "unread" not in st.larder.log_text()
    finally:
        st.stop()


def test_a_reload_is_in_force_on_kept_connections(tmp_path, wheel_dir):
    """A reload that makes an index private (read = token) is in force at
    once, kept connections included: an old worker lets go of its idle
    kept connections as it retires on a new generation (nginx retries its
    GET on another connection), instead of answering one more request on
    each under the old config for as long as nginx keeps them (30 s).
    From 0.5 s after the SIGHUP every anonymous read is a 401, never the
    old 200. (nginx keeps no copies of pages here: page_cache=False.)"""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, workers=3,
                        larder_extra={"max_workers": 6}, page_cache=False)
    st.start()
    try:
        path = "/pypi/simple/larder-demo-a/"
        assert st.get(path).status == 200
        # nginx keeps connections to every worker: requests side by side,
        # answered in their body (a page here is an X-Accel-Redirect,
        # after which nginx does not keep the connection)
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            for _ in range(3):
                got = list(ex.map(lambda _: st.get("/+health").status, range(6)))
                assert got == [200] * 6, got
        with open(st.larder.conf) as f:
            text = f.read()
        head = '[index "pypi"]\ntype = cache\n'
        assert head in text, text
        with open(st.larder.conf, "w") as f:
            f.write(text.replace(head, head + "read = token\n", 1))
        os.kill(st.larder.proc.pid, signal.SIGHUP)
        time.sleep(0.5)
        seen = []
        for i in range(24):
            seen.append(st.get(path).status)
            if i % 3 == 2:
                time.sleep(0.1)
        assert seen == [401] * len(seen), seen
        # and so do requests side by side, on whatever nginx still keeps
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            got = list(ex.map(lambda _: st.get(path).status, range(12)))
        assert got == [401] * 12, got
        assert "[error]" not in st.nginx.error_text(), st.nginx.error_text()[-2000:]
    finally:
        st.stop()


# ------------------------------------------- libfcgi's cgi-fcgi as oracle

def cgi_fcgi(connect, path, method="GET", headers=None, body=b"", extra_env=None):
    """One request through libfcgi's cgi-fcgi -bind (a CGI program that
    relays its environment and stdin to a FastCGI application): what a
    client built on the library larder does not use makes of larder's
    answer. Returns an FcgiResponse."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update({k: v.decode() if isinstance(v, bytes) else v
                for k, v in cgi_params(path, method, headers=headers, body=body)
                if v != ""})
    env["GATEWAY_INTERFACE"] = "CGI/1.1"
    env.update(extra_env or {})
    p = subprocess.run(["cgi-fcgi", "-bind", "-connect", connect], env=env, input=body,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, (p.returncode, p.stderr[-500:])
    return FcgiResponse(p.stdout, p.stderr, p.returncode)


def _pids_with_env(marker):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if marker.encode() in f.read().split(b"\0"):
                    found.append(int(d))
        except OSError:
            continue
    return found


def test_cgi_fcgi_oracle(tmp_path, wheel_dir):
    """libfcgi's own client against `larder serve --listen` (TCP) and
    against larder started by `cgi-fcgi -start` on a unix socket of its own
    (a pool on fd 0, as a web server spawns it): a page, a file and an
    upload, each checked against what larder stores and serves."""
    if not shutil.which("cgi-fcgi"):
        pytest.skip("cgi-fcgi is not installed (Debian libfcgi-bin)")
    import hashlib
    import json
    from urllib.parse import urljoin

    sd = stackmod.Standin(wheel_dir, str(tmp_path / "standin"))
    sd.start()
    lr = stackmod.Larder(str(tmp_path / "larder"), sd.port, files_port=sd.files_port,
                         extra_text=uploads.HOSTED_CONF, root_pypi=uploads.ROOT_PYPI)
    with open(lr.conf) as f:
        text = f.read()
    with open(lr.conf, "w") as f:   # bytes in the response, not a redirect
        f.write(text.replace("sendfile = x-accel-redirect", "sendfile = stream"))
    spawned = None
    try:
        lr.start()
        tcp = "127.0.0.1:%d" % lr.port
        page_path = "/root/pypi/simple/larder-demo-a/"
        r = cgi_fcgi(tcp, page_path, headers={"Accept": stackmod.PIP_ACCEPT})
        assert r.status == 200, r
        assert r.headers["content-type"].startswith(stackmod.JSON_TYPE), r.headers
        doc = json.loads(r.body)
        assert doc["name"] == "larder-demo-a"
        wheel = [f for f in doc["files"] if f["filename"].endswith(".whl")][0]
        with open(os.path.join(wheel_dir, wheel["filename"]), "rb") as f:
            want = f.read()
        file_path = urljoin(page_path, wheel["url"]).split("#")[0]
        for _ in range(2):  # cold (fetched, verified, streamed), then warm
            r = cgi_fcgi(tcp, file_path)
            assert r.status == 200, r
            assert hashlib.sha256(r.body).hexdigest() == wheel["hashes"]["sha256"]
            assert r.body == want
        # an upload: a POST with its body on stdin
        tok = uploads.token_add(lr, "root/private", "upload,read")
        dist = tmp_path / "dist"
        dist.mkdir()
        whl = uploads.padded_wheel(str(dist), "larder-oracle-app", "1.0", 100 * 1024)
        ctype, body = uploads.upload_body(whl)
        h = {"Content-Type": ctype}
        h.update(uploads.basic(tok))
        r = cgi_fcgi(tcp, "/root/private/", method="POST", headers=h, body=body)
        assert 200 <= r.status < 300, r
        r = cgi_fcgi(tcp, "/root/private/simple/larder-oracle-app/",
                     headers={"Accept": stackmod.PIP_ACCEPT, "Authorization": h["Authorization"]})
        assert r.status == 200, r
        up = json.loads(r.body)["files"][0]
        r = cgi_fcgi(tcp, urljoin("/root/private/simple/larder-oracle-app/", up["url"]).split("#")[0],
                     headers={"Authorization": h["Authorization"]})
        assert r.status == 200, r
        with open(whl, "rb") as f:
            assert r.body == f.read()
        # refused: a 4xx with its one-line reason, through the library too
        r = cgi_fcgi(tcp, "/root/private/", method="POST", headers={"Content-Type": ctype},
                     body=body)
        assert r.status == 401, r

        # larder as the application cgi-fcgi starts, on a socket of its own
        sock = str(tmp_path / "spawned.sock")
        marker = "LARDER_CONFIG=" + lr.conf
        env = dict(os.environ, LARDER_CONFIG=lr.conf, LARDER_WORKERS="2")
        subprocess.run(["cgi-fcgi", "-start", "-connect", sock, lr.binary], env=env,
                       check=True, timeout=30, stdout=subprocess.DEVNULL)
        spawned = marker
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not os.path.exists(sock):
            time.sleep(0.05)
        r = cgi_fcgi(sock, "/+health")
        assert r.status == 200, r
        r = cgi_fcgi(sock, page_path, headers={"Accept": stackmod.PIP_ACCEPT})
        assert r.status == 200 and json.loads(r.body)["name"] == "larder-demo-a", r
        r = cgi_fcgi(sock, file_path)
        assert r.status == 200 and r.body == want, r
    finally:
        if spawned:
            for pid in _pids_with_env(spawned):
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
        lr.stop()
        sd.stop()


# ------------------------- kept connections after small warm files (issue 24)

def _peer_ports(port):
    """The other end's port of every IPv4 TCP connection to or from port,
    TIME_WAIT included: a connection closed within the last minute is
    still counted."""
    seen = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            local, remote, state = line.split()[1:4]
            lport, rport = int(local.split(":")[1], 16), int(remote.split(":")[1], 16)
            if state == "0A":  # LISTEN
                continue
            if lport == port:
                seen.add(rport)
            elif rport == port:
                seen.add(lport)
    return seen


def _small_dists_stack(tmp_path, wheel_dir):
    """The stand-in's dists that have .metadata (each a few KB), and a
    started nginx stack over them; skips where the stack cannot run."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    import wheels
    dists = [d for d in wheels.load_dists(wheel_dir).values() if d.metadata]
    assert dists and all(d.size < 8192 for d in dists), [d.size for d in dists]
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, workers=2)
    st.start()
    return dists, st

def test_small_warm_files_keep_the_fastcgi_connection(tmp_path, wheel_dir):
    """nginx ends its upstream request at an X-Accel-Redirect before it
    reads the FCGI_END_REQUEST, and so never keeps that connection: 20
    warm files and .metadata of a few KB, one after another, cost 20 new
    connections to larder when each is an X-Accel-Redirect. larder sends
    a small file itself, and nginx keeps its connection (a handful at
    most, for all 20)."""
    dists, st = _small_dists_stack(tmp_path, wheel_dir)
    try:
        urls = []
        for d in dists:
            base = "/root/pypi/files/%s/%s" % (d.sha256, d.filename)
            urls += [base, base + ".metadata"]
        for u in urls:  # the misses: fetched and stored
            r = st.get(u)
            assert r.status == 200, (u, r)
        before = _peer_ports(st.larder.port)
        for i in range(20):
            u = urls[i % len(urls)]
            r = st.get(u)
            assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", (u, r)
            d = dists[(i % len(urls)) // 2]
            assert r.body == (d.metadata if u.endswith(".metadata") else d.data), u
        new = _peer_ports(st.larder.port) - before
        assert len(new) <= 3, sorted(new)
        assert "[error]" not in st.nginx.error_text(), st.nginx.error_text()[-2000:]
    finally:
        st.stop()


# ------------------------------ small files kept by nginx's page cache (issue 24)

def _project(d):
    """The normalised project name of dist d."""
    return re.sub(r"[-_.]+", "-", d.filename.split("-")[0]).lower()

def test_nginx_keeps_small_warm_files(tmp_path, wheel_dir):
    """A small file and its .metadata are content-addressed: behind
    conf/nginx.conf, nginx keeps them as it keeps pages, so a warm one is
    answered by nginx alone (here: with larder stopped) while the page
    that listed it is fresh. A HEAD first never fills the GET's entry
    with an empty body; a range and an If-None-Match still reach larder
    (206, 416, 304)."""
    dists, st = _small_dists_stack(tmp_path, wheel_dir)
    try:
        d = dists[0]
        base = "/root/pypi/files/%s/%s" % (d.sha256, d.filename)
        meta = base + ".metadata"
        r = st.get("/root/pypi/simple/%s/" % _project(d))
        assert r.status == 200, r
        # a HEAD first: answered, kept by nobody
        r = st.get(base, method="HEAD")
        assert r.status == 200 and r.body == b"", r
        for u, body in ((base, d.data), (meta, d.metadata)):
            for _ in range(2):  # a miss (or the HEAD's), then a warm GET
                r = st.get(u)
                assert r.status == 200 and r.body == body, (u, r)
        # larder still answers what nginx's cache would not
        r = st.get(base, headers={"Range": "bytes=0-9"})
        assert r.status == 206 and r.body == d.data[:10], r
        r = st.get(base, headers={"Range": "bytes=9-0"})
        assert r.status == 416, r
        r = st.get(base, headers={"If-None-Match": '"%s"' % d.sha256})
        assert r.status == 304, r
        st.larder.stop()
        for u, body in ((base, d.data), (meta, d.metadata)):
            r = st.get(u)
            assert r.status == 200 and r.body == body, (u, r, st.larder.log_text()[-3000:])
            assert r.header("X-Larder-Cache") == "HIT", r.headers
            r = st.get(u, method="HEAD")
            assert r.status == 200 and r.body == b"", r
            assert r.header("Content-Length") == str(len(body)), r.headers
        # a range is never answered from the kept copy
        r = st.get(base, headers={"Range": "bytes=0-9"})
        assert r.status == 502, r
    finally:
        st.stop()


def test_nginx_keeps_a_file_no_longer_than_its_page(tmp_path, wheel_dir):
    """nginx keeps a small file only while the page that listed it is
    fresh in larder (cache_ttl here): what a policy, a quarantine or a
    cooldown decides when the page is rendered again shows for the file
    then too. Past it, the file comes from larder again."""
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    import wheels
    dists = [d for d in wheels.load_dists(wheel_dir).values() if d.metadata]
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, workers=2, cache_ttl=3)
    st.start()
    try:
        d = dists[0]
        u = "/root/pypi/files/%s/%s.metadata" % (d.sha256, d.filename)
        r = st.get("/root/pypi/simple/%s/" % _project(d))
        assert r.status == 200, r
        for _ in range(2):  # a miss, then a warm GET nginx keeps
            r = st.get(u)
            assert r.status == 200 and r.body == d.metadata, r
        st.larder.stop()
        r = st.get(u)
        assert r.status == 200 and r.body == d.metadata, r
        time.sleep(4.5)
        r = st.get(u)
        assert r.status == 502, r
    finally:
        st.stop()
