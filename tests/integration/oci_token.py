"""A docker token server for the registry tests
(https://distribution.github.io/distribution/spec/auth/token/), run in a
thread of the test process: GET /token answers JWTs for repository scopes,
signed RS256 (ES256 for an EC key) with a key and self-signed certificate
the openssl CLI makes (make_token_key) and carrying that certificate in
the x5c header, which distribution 2.8 verifies against its
rootcertbundle; Basic auth for the users it knows (alice:secret),
anonymous pulls while allowed, requests counted per scope.
ociup.Registry(auth="token") starts one in front of its registry.
Standard library plus the openssl CLI; builds on stack.py.

    key, cert = make_token_key(workdir)
    ts = TokenServer(workdir, key, cert).start()    # ts.realm, ts.counts()
    ts.stop()
"""

import base64
import collections
import http.server as httpserver
import json
import os
import shutil
import ssl
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlsplit

from stack import clean_env

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"

TOKEN_SERVICE = "larder-test"
TOKEN_ISSUER = "larder-test-issuer"
USERS = {"alice": "secret"}


def make_token_key(workdir, kind="rsa"):
    """A key and a self-signed certificate for the token server (openssl
    CLI): (key_path, cert_path). kind "rsa" (RS256) or "ec" (ES256)."""
    os.makedirs(workdir, exist_ok=True)
    key = os.path.join(workdir, "token.key")
    cert = os.path.join(workdir, "token.crt")
    newkey = "rsa:2048" if kind == "rsa" else "ec"
    cmd = [OPENSSL, "req", "-x509", "-newkey", newkey, "-nodes", "-keyout", key,
           "-out", cert, "-days", "7", "-subj", "/CN=larder-test-token"]
    if kind == "ec":
        cmd[5:5] = ["-pkeyopt", "ec_paramgen_curve:prime256v1"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                       env=clean_env())
    if p.returncode != 0:
        raise RuntimeError("openssl req failed: %s" % p.stdout.decode(errors="replace"))
    return key, cert


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _der_ecdsa_to_raw(der, n=32):
    """An ECDSA signature as openssl writes it (DER SEQUENCE of two
    INTEGERs) in JWS form: r and s, n bytes each."""
    def read_int(b, i):
        assert b[i] == 0x02
        ln = b[i + 1]
        v = int.from_bytes(b[i + 2:i + 2 + ln], "big")
        return v, i + 2 + ln
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    r, i = read_int(der, i)
    s, _ = read_int(der, i)
    return r.to_bytes(n, "big") + s.to_bytes(n, "big")


class TokenServer:
    """The docker token protocol (https://distribution.github.io/distribution/spec/auth/token/):
    GET /token?service=S&scope=repository:NAME:pull[,push]&account=U, with
    Basic auth for users (a dict user -> password) or without for
    anonymous pulls (when allow_anonymous). Answers {"token", "access_token",
    "expires_in", "issued_at"}; the token a JWT signed RS256 (ES256 for an
    EC key) with the x5c header distribution 2.8 verifies against its
    rootcertbundle. Anonymous callers get pull at most; users what they
    ask of pull, push, delete. A wrong password, or no credentials when
    anonymous is off, is a 401.

    counts() is {scope: requests}; requests() [{"account", "user",
    "scopes", "status", "granted"}]; reset() clears both. allow_anonymous
    and users may be changed while it runs."""

    def __init__(self, workdir, key, cert, users=None, allow_anonymous=True,
                 service=TOKEN_SERVICE, issuer=TOKEN_ISSUER, port=None, expires_in=300):
        self.dir = workdir
        self.key = key
        self.cert = cert
        self.users = dict(USERS if users is None else users)
        self.allow_anonymous = allow_anonymous
        self.service = service
        self.issuer = issuer
        self.port = port or 0
        self.expires_in = expires_in
        self.httpd = None
        self.thread = None
        self.lock = threading.Lock()
        self._counts = collections.Counter()
        self._requests = []
        with open(cert) as f:
            pem = f.read()
        self.cert_der = ssl.PEM_cert_to_DER_cert(pem)
        with open(key) as f:
            self.alg = "ES256" if "EC PRIVATE KEY" in f.read() or self._is_ec() else "RS256"

    def _is_ec(self):
        p = subprocess.run([OPENSSL, "pkey", "-in", self.key, "-noout", "-text"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
        return b"ASN1 OID" in p.stdout or b"prime256v1" in p.stdout

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def realm(self):
        return self.base + "/token"

    def start(self):
        ts = self

        class Handler(httpserver.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                status, body, hdrs = ts._answer(self.path, self.headers.get("Authorization"))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

        self.httpd = httpserver.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.1})
        self.thread.start()
        return self

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def counts(self):
        with self.lock:
            return dict(self._counts)

    def requests(self):
        with self.lock:
            return list(self._requests)

    def reset(self):
        with self.lock:
            self._counts.clear()
            self._requests.clear()

    def _answer(self, target, authorization):
        u = urlsplit(target)
        q = parse_qs(u.query)
        scopes = []
        for s in q.get("scope", []):
            scopes += s.split(" ")
        account = (q.get("account") or [""])[0]
        rec = {"account": account, "user": None, "scopes": scopes, "status": None,
               "granted": None}
        with self.lock:
            for s in scopes or [""]:
                self._counts[s] += 1
            self._requests.append(rec)

        def fail(status, code, msg):
            rec["status"] = status
            body = json.dumps({"errors": [{"code": code, "message": msg}]}).encode()
            return status, body, {"WWW-Authenticate": 'Basic realm="larder-test"'}

        if u.path != "/token":
            return fail(404, "NOT_FOUND", "no such path")
        if (q.get("service") or [""])[0] != self.service:
            return fail(400, "DENIED", "unknown service")
        user = None
        if authorization:
            scheme, _, cred = authorization.partition(" ")
            if scheme.lower() != "basic":
                return fail(401, "UNAUTHORIZED", "Basic auth only")
            try:
                name, _, pw = base64.b64decode(cred.strip()).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return fail(401, "UNAUTHORIZED", "bad Basic credentials")
            if self.users.get(name) != pw:
                return fail(401, "UNAUTHORIZED", "wrong user name or password")
            user = name
        elif not self.allow_anonymous:
            return fail(401, "UNAUTHORIZED", "authentication required")
        rec["user"] = user
        allowed = {"pull", "push", "delete", "*"} if user else {"pull"}
        access = []
        for s in scopes:
            parts = s.split(":")
            if len(parts) < 3:
                continue
            typ, name, actions = parts[0], ":".join(parts[1:-1]), parts[-1].split(",")
            got = [a for a in actions if a in allowed]
            access.append({"type": typ, "name": name, "actions": got})
        rec["granted"] = access
        now = int(time.time())
        token = self.make_token(user or "", access, now)
        rec["status"] = 200
        body = json.dumps({"token": token, "access_token": token,
                           "expires_in": self.expires_in,
                           "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(now))}).encode()
        return 200, body, {}

    def make_token(self, sub, access, now=None):
        """A signed JWT for sub with access [{"type", "name", "actions"}]."""
        now = int(now or time.time())
        header = {"typ": "JWT", "alg": self.alg,
                  "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {"iss": self.issuer, "sub": sub, "aud": self.service,
                  "exp": now + self.expires_in, "nbf": now - 10, "iat": now,
                  "jti": os.urandom(12).hex(), "access": access}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        p = subprocess.run([OPENSSL, "dgst", "-sha256", "-sign", self.key],
                           input=signing_input.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        if p.returncode != 0:
            raise RuntimeError("openssl dgst -sign: %s" % p.stderr.decode(errors="replace"))
        sig = p.stdout
        if self.alg == "ES256":
            sig = _der_ecdsa_to_raw(sig)
        return signing_input + "." + b64url(sig)
