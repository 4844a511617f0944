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
