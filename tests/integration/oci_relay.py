"""The relay each registry test puts between larder and the registry: a
threaded HTTP/1.1 relay on 127.0.0.1 that passes every request through
(keep-alive on both sides, bodies streamed, hop-by-hop headers dropped),
counts requests per (method, path) and injects faults chosen by path and
query regexes (truncate, corrupt, reset, stall, status, down, delay), all
from Python, so that a test can say what larder asked upstream and what
it did when upstream failed. Relay's docstring lists the faults.
Standard library only; builds on stack.py and oci_images.py.

    relay = Relay(registry_port).start()            # relay.base, relay.ref()
    relay.set_faults([{"fault": "truncate", "path": layer_digest, "times": 1}])
    n = relay.count("GET", "/blobs/"); relay.clear(); relay.stop()
"""

import collections
import http.client as httpclient
import http.server as httpserver
import re
import select
import socket
import struct
import threading
from urllib.parse import urlsplit

from oci_images import _ref, canonical
from stack import free_port

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
              "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate"}

FAULTS = ("truncate", "corrupt", "reset", "stall", "status", "down", "delay",
          "longer", "shorter", "digest", "retype", "redirect", "gzip_bomb",
          "error_page")
# lies that replace the upstream's answer, and lies told about it
MADE_UP = ("redirect", "gzip_bomb", "error_page")
TOLD = ("longer", "shorter", "digest", "retype")
ZERO_DIGEST = "sha256:" + "0" * 64


class _RelayHandler(httpserver.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        self.upstream = None
        self.server.relay._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        if self.upstream is not None:
            self.upstream.close()
        self.server.relay._track(self.connection, False)

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else None

    def _raw_send(self, data):
        self.connection.sendall(data)

    def _send_head(self, status, reason, headers):
        lines = ["HTTP/1.1 %d %s" % (status, reason)]
        lines += ["%s: %s" % kv for kv in headers]
        self._raw_send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _abort(self, rst=False):
        self.close_connection = True
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None
        try:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass

    def _handle(self):
        relay = self.server.relay
        method = self.command
        target = self.path
        u = urlsplit(target)
        path = u.path
        body = self._read_body()
        rule = relay._hit(method, path, u.query)
        fault = rule["fault"] if rule else None
        if fault == "down":
            self._abort()
            relay._log(method, target, 0, fault)
            return
        if fault == "delay":
            relay._sleep(rule.get("seconds", 1.0))
        if fault in MADE_UP:
            self._made_up(method, target, rule)
            return
        if fault == "status":
            code = int(rule.get("code", 500))
            payload = rule.get("body")
            if payload is None:
                payload = canonical({"errors": [{"code": rule.get("error_code", {
                    401: "UNAUTHORIZED", 403: "DENIED", 404: "NAME_UNKNOWN",
                    429: "TOOMANYREQUESTS"}.get(code, "UNKNOWN")),
                    "message": "relay fault: %d" % code, "detail": None}]})
            if isinstance(payload, str):
                payload = payload.encode()
            hdrs = [("Content-Type", "application/json"),
                    ("Content-Length", str(len(payload))),
                    ("Docker-Distribution-Api-Version", "registry/2.0")]
            hdrs += list((rule.get("headers") or {}).items())
            self._send_head(code, httpclient.responses.get(code, "Fault"), hdrs)
            if method != "HEAD":
                self._raw_send(payload)
            relay._log(method, target, code, fault)
            return
        # a list, not a dict: clients send some headers more than once
        # (skopeo gives each media type an Accept line of its own)
        hdrs = [("Host", "%s:%d" % (relay.upstream_host, relay.upstream_port))]
        for k, v in self.headers.items():
            if k.lower() in HOP_BY_HOP or k.lower() in ("host", "content-length"):
                continue
            hdrs.append((k, v))
        if body is not None or method in ("PUT", "POST", "PATCH"):
            hdrs.append(("Content-Length", str(len(body or b""))))
        resp = None
        for attempt in (0, 1):
            try:
                if self.upstream is None:
                    self.upstream = httpclient.HTTPConnection(
                        relay.upstream_host, relay.upstream_port, timeout=120)
                self.upstream.putrequest(method, target, skip_host=True,
                                         skip_accept_encoding=True)
                for k, v in hdrs:
                    self.upstream.putheader(k, v)
                self.upstream.endheaders(body)
                resp = self.upstream.getresponse()
                break
            except (OSError, httpclient.HTTPException) as e:
                if self.upstream is not None:
                    self.upstream.close()
                    self.upstream = None
                if attempt == 1:
                    msg = ("relay: upstream failed: %r" % e).encode()
                    self._send_head(502, "Bad Gateway", [("Content-Type", "text/plain"),
                                                         ("Content-Length", str(len(msg)))])
                    self._raw_send(msg)
                    relay._log(method, target, 502, fault)
                    return
        out_headers = []
        length = None
        for k, v in resp.getheaders():
            if k.lower() in HOP_BY_HOP:
                continue
            if k.lower() == "content-length":
                length = int(v)
            out_headers.append((k, v))
        no_body = method == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200
        chunked = not no_body and length is None
        if chunked:
            out_headers.append(("Transfer-Encoding", "chunked"))
        if resp.getheader("Connection", "").lower() == "close":
            out_headers.append(("Connection", "close"))
            self.close_connection = True
        if fault in TOLD:
            self._told(method, resp, out_headers, length, rule)
            relay._log(method, target, resp.status, fault)
            return
        relay._log(method, target, resp.status, fault)
        self._send_head(resp.status, resp.reason, out_headers)
        if no_body:
            resp.read()
            return
        total = length
        # where a body fault strikes: a fraction of the body, or an offset
        cut = None
        if fault in ("truncate", "corrupt", "reset", "stall"):
            if "offset" in rule:
                cut = int(rule["offset"])
            elif total is not None:
                cut = int(total * float(rule.get("fraction", 0.5)))
            else:
                cut = 1 << 16
        sent = 0
        fired = False
        while True:
            try:
                data = resp.read1(1 << 16)
            except (OSError, httpclient.HTTPException):
                self._abort()
                return
            if not data:
                break
            if cut is not None and not fired and sent + len(data) > cut:
                head, tail = data[:cut - sent], data[cut - sent:]
                if fault == "corrupt":
                    b = bytearray(data)
                    b[cut - sent] ^= 0xFF
                    data = bytes(b)
                    fired = True
                else:
                    fired = True
                    if not self._send_chunk(head, chunked):
                        return
                    sent += len(head)
                    if fault == "truncate":
                        self._abort()
                        return
                    if fault == "reset":
                        self._abort(rst=True)
                        return
                    # stall: wait, then go on with the rest
                    relay._sleep(rule.get("seconds", 5.0))
                    data = tail
            if not self._send_chunk(data, chunked):
                return
            sent += len(data)
        if chunked:
            self._send_chunk(b"", True)

    def _made_up(self, method, target, rule):
        """Answers with a lie of MADE_UP instead of asking upstream."""
        fault = rule["fault"]
        if fault == "redirect":
            code = int(rule.get("code", 307))
            hdrs = [("Location", rule["location"]), ("Content-Length", "0")]
            body = b""
        elif fault == "gzip_bomb":
            from standin import gzip_bomb
            code = 200
            body = gzip_bomb(int(rule.get("size", 64 << 20)))
            hdrs = [("Content-Type", rule.get("content_type",
                                              "application/octet-stream")),
                    ("Content-Encoding", "gzip"),
                    ("Content-Length", str(len(body)))]
        else:
            code = 200
            body = rule.get("body", "<html><body><h1>Service Unavailable"
                                    "</h1></body></html>\n")
            body = body.encode() if isinstance(body, str) else body
            hdrs = [("Content-Type", "text/html"),
                    ("Content-Length", str(len(body)))]
        self.server.relay._log(method, target, code, fault)
        self._send_head(code, httpclient.responses.get(code, "Lie"), hdrs)
        if method != "HEAD" and body:
            self._raw_send(body)

    def _told(self, method, resp, headers, length, rule):
        """Sends upstream's answer with a lie of TOLD in it."""
        fault = rule["fault"]
        body = resp.read()
        no_body = method == "HEAD" or resp.status in (204, 304)
        n = int(rule.get("bytes", 16))
        if fault == "longer" and not no_body:
            body += b"\0" * n
        elif fault == "shorter" and not no_body:
            body = body[:max(0, len(body) - n)]
        out = []
        for k, v in headers:
            kl = k.lower()
            if (kl == "content-length" and not no_body) or kl == "transfer-encoding":
                continue
            if kl == "docker-content-digest" and fault == "digest":
                v = rule.get("digest", ZERO_DIGEST)
            if kl == "content-type" and fault == "retype":
                v = rule.get("content_type", "text/html")
            out.append((k, v))
        if not no_body:
            out.append(("Content-Length", str(len(body))))
        elif fault in ("longer", "shorter") and length is not None:
            out = [(k, str(max(0, length + (n if fault == "longer" else -n))))
                   if k.lower() == "content-length" else (k, v) for k, v in out]
        self._send_head(resp.status, resp.reason, out)
        if not no_body and body:
            self._raw_send(body)

    def _send_chunk(self, data, chunked):
        try:
            if chunked:
                if data:
                    self._raw_send(b"%x\r\n" % len(data) + data + b"\r\n")
                else:
                    self._raw_send(b"0\r\n\r\n")
            elif data:
                self._raw_send(data)
            return True
        except OSError:
            self._abort()
            return False

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _handle


class _RelayServer:
    """What BaseHTTPRequestHandler wants of a server."""

    def __init__(self, relay):
        self.relay = relay
        self.server_name = "127.0.0.1"
        self.server_port = relay.port


class Relay:
    """A threaded HTTP/1.1 relay on 127.0.0.1 in front of
    upstream_host:upstream_port: keep-alive on both sides, bodies streamed,
    every header passed through but the hop-by-hop ones (Host rewritten
    to the upstream's). Counts requests per (method, path) and injects
    faults, each a dict:

        {"fault": F, "path": REGEX, "method": M, "times": N, ...}

    path (searched in the request path without the query; default any),
    query (searched in the query string; default any), method (default
    any) and times (default every time) pick the requests. Faults, checked in order, the first match firing:

        truncate  the body up to a point (fraction=0.5 of it, or offset=
                  bytes), then the connection closed
        corrupt   one byte at that point flipped, the length kept
        reset     the body up to that point, then an RST (SO_LINGER 0)
        stall     the body up to that point, then seconds= (5) of
                  silence, then the rest
        status    an answer of code= (500), headers= {..}, body= (the
                  registry's error JSON by default, error_code= its code)
        down      the connection closed unanswered; without a path (via
                  down()), the listening socket itself is closed so that
                  connections are refused
        delay     seconds= (1) of latency, then the request relayed

    Lies (the upstream's answer, or one made up, sent complete and
    well-framed; the body read whole first):

        longer    bytes= (16) zero bytes appended, Content-Length to match
        shorter   bytes= (16) taken off the end, Content-Length to match
        digest    Docker-Content-Digest replaced by digest= (one of zeros)
        retype    Content-Type replaced by content_type= (text/html)
        redirect  code= (307) to location= (another host), upstream not
                  asked
        gzip_bomb a 200 with Content-Encoding: gzip and a gzip stream of
                  size= (64 MiB) zero bytes, upstream not asked
        error_page a 200 text/html error page (body=), upstream not asked

    counts(), reset(), set_faults([...]), clear() (no faults, up again,
    stalls woken), down(), up(), log() [(method, target, status, fault)],
    fired() {fault: times}."""

    def __init__(self, upstream_port, upstream_host="127.0.0.1", port=None):
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self.lock = threading.Lock()
        self._counts = collections.Counter()
        self._log_lines = []
        self._fired = collections.Counter()
        self._faults = []
        self._conns = set()
        self._sock = None
        self._thread = None
        self._wake = threading.Event()
        self._stopped = False
        self.is_down = False

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    @property
    def base(self):
        return "http://" + self.host

    def ref(self, repo, tag=None, digest=None):
        return _ref(self.host, repo, tag, digest)

    # -- lifecycle

    def start(self):
        self._listen()
        return self

    def _listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self._sock = s
        self.is_down = False
        self._thread = threading.Thread(target=self._accept_loop, args=(s,), daemon=True)
        self._thread.start()

    def _accept_loop(self, s):
        server = _RelayServer(self)
        while True:
            try:
                r, _, _ = select.select([s], [], [], 0.2)
            except (OSError, ValueError):
                return
            if s.fileno() < 0 or self._sock is not s:
                return
            if not r:
                continue
            try:
                conn, addr = s.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn, addr, server),
                             daemon=True).start()

    def _serve(self, conn, addr, server):
        try:
            _RelayHandler(conn, addr, server)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _track(self, conn, add):
        with self.lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _close_listener(self):
        s, self._sock = self._sock, None
        if s is not None:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        if self._thread is not None:
            self._thread.join(2)

    def _drop_conns(self):
        with self.lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self):
        """Refuses connections (the listening socket closed) and drops the
        open ones."""
        self.is_down = True
        self._close_listener()
        self._drop_conns()

    def up(self):
        if self._sock is None and not self._stopped:
            self._listen()

    def stop(self):
        self._stopped = True
        self._wake.set()
        self._close_listener()
        self._drop_conns()

    # -- control

    def counts(self):
        """{(method, path): requests} since the last reset()."""
        with self.lock:
            return dict(self._counts)

    def count(self, method=None, path=None):
        """Requests whose method is method (any if None) and whose path
        matches the regex path (searched; any if None)."""
        rx = re.compile(path) if path else None
        return sum(n for (m, p), n in self.counts().items()
                   if (method is None or m == method) and (rx is None or rx.search(p)))

    def log(self):
        with self.lock:
            return list(self._log_lines)

    def fired(self):
        with self.lock:
            return dict(self._fired)

    def reset(self):
        with self.lock:
            self._counts.clear()
            self._log_lines.clear()
            self._fired.clear()

    def set_faults(self, faults):
        rules = []
        for f in faults:
            f = dict(f)
            if f.get("fault") not in FAULTS:
                raise ValueError("unknown fault %r" % f.get("fault"))
            f["_rx"] = re.compile(f.get("path") or "")
            f["_qrx"] = re.compile(f["query"]) if f.get("query") is not None else None
            rules.append(f)
        with self.lock:
            self._faults = rules
            self._wake.clear()
        if any(f["fault"] == "down" and not f.get("path") for f in rules):
            self.down()

    def clear(self):
        """No faults, listening again, stalled bodies sent on."""
        with self.lock:
            self._faults = []
        self._wake.set()
        self.up()

    def _sleep(self, seconds):
        self._wake.wait(float(seconds))

    def _hit(self, method, path, query):
        with self.lock:
            self._counts[(method, path)] += 1
            for f in self._faults:
                if f.get("method") and f["method"] != method:
                    continue
                if not f["_rx"].search(path):
                    continue
                if f.get("_qrx") is not None and not f["_qrx"].search(query):
                    continue
                if f.get("times") is not None:
                    if f["times"] <= 0:
                        continue
                    f["times"] -= 1
                self._fired[f["fault"]] += 1
                return f
        return None

    def _log(self, method, target, status, fault):
        with self.lock:
            self._log_lines.append((method, target, status, fault))
