#!/usr/bin/python3
"""A stand-in for upstream PyPI, owned by the test suite.

Two HTTP servers in one process, as pypi.org and files.pythonhosted.org:

  index port   GET /simple/ and /simple/{project}/: PEP 691 JSON (api-version
               1.1: size, upload-time, versions) when the client asks for it by
               Accept, PEP 503 HTML otherwise (as pypi.org does); ETag,
               If-None-Match -> 304, Cache-Control: max-age=600, Last-Modified;
               301 to the normalised, slashed URL; 404 for unknown projects.
               GET /_counters, POST /_reset, POST /_control (see below).
  files port   GET/HEAD /packages/{sha[:2]}/{sha[2:4]}/{filename},
               {filename}.metadata and {filename}.provenance, with
               Content-Length and single Range.

File URLs on the pages are absolute: http://{files_host}:{files_port}/packages/...
so a cache has to trust a second host.

The distributions come from a directory (see wheels.py): every *.whl and
*.tar.gz; "{file}.metadata" beside one means it has PEP 658 metadata (served
and advertised), "{file}.provenance" a PEP 740 provenance object (served, and
its URL advertised as "provenance" and data-provenance, on a page that then
claims api-version 1.4), "{file}.yanked" holds a yank reason. The directory
is rescanned when it changes.

POST /_control takes a JSON object; every key is optional and replaces the
current setting:
  {"html_only": bool,            serve HTML whatever the Accept
   "corrupt": [filename, ...],   serve these with flipped bytes, same length
   "truncate": [filename, ...],  send half the body (full Content-Length), close
   "status": {path: code},       answer this path (or file name) with code
   "rate": bytes_per_sec|null,   throttle file bodies
   "delay": seconds,             sleep before answering any index page
   "json_metadata_keys": [key],  JSON keys for PEP 658 metadata (null: default,
                                 core-metadata and data-dist-info-metadata as
                                 pypi.org; add "dist-info-metadata" to play a
                                 pre-PEP 714 index that breaks pip < 23.1)
   "meta_no_hash": bool,         advertise PEP 658 metadata without its hash
                                 (JSON true, data-core-metadata="true")
   "sizes": {filename: n},       the size JSON pages advertise for a file
                                 (a page that lies about it)
   "ignore_range": bool,         answer file GETs with a Range 200 and the
                                 whole body (still counted in "ranges"),
                                 as a server without range support does
   "project_status": {project: {"status": s, "reason": r}},
                                 PEP 792 status of a project's page (api-version
                                 1.4, the project-status object or meta tags);
                                 a quarantined page lists no files, as
                                 pypi.org's, while the files stay downloadable
   "faults": [rule, ...]}        fault rules (null or []: none), see below

A fault rule is {"match": M, "kind": K, "times": N, ...}: it applies to a
request whose path is M ("/simple/x/") or whose last path segment is M (a
file name; "{file}.metadata" is its own name), to the next N such requests
only when "times" is given (then it is spent), else to every one. The first
rule that applies wins. Kinds and their parameters:
  "status"      answer "code" (503), with a Retry-After of "retry_after"
                seconds when given, and "body"
  "close"       close the connection without answering
  "stall"       sleep "seconds" (30) before answering, then answer normally
  "redirect"    answer "code" (302) with Location "location"
  "raw"         answer "code" (200) with "content_type" and the bytes of
                "body" (text), "body_b64" or "file" (a path), and "headers"
  "truncate"    full Content-Length, send "after" bytes (half), close
  "reset"       send "after" bytes (half), then reset the connection (RST)
  "stall_body"  send "after" bytes (half), sleep "seconds" (30), send the rest
  "corrupt"     flip 16 bytes in the middle (from byte "at" when given),
                same length
  "swap"        serve the bytes of "file" (a path: another build of the
                same size, say) in place of the file's, ranges and all
  "resize"      serve the body with "delta" bytes more (zeros) or fewer,
                Content-Length matching what is sent
  "retype"      serve the body as it is with Content-Type "content_type"
                (a page as text/plain, a file as text/html)
  "gzip_bomb"   answer "code" (200) with Content-Encoding: gzip and a gzip
                stream of "size" (64 MiB) zero bytes, as "content_type"
Files and pages take every kind; a page under a body fault is sent (and
spoilt) even to a request whose If-None-Match matches. GET /_counters adds
"ranges" ({file name: requests with a Range header}), "faults" (how often
each rule applied) and "pages_peak" (the most /simple/ requests it was
answering at once, "delay" included, since the last reset).

Run: python3 standin.py --wheels DIR --port P --files-port Q
        [--files-host localhost] [--public-files-port R] [--html-only]
        [--rate BYTES_PER_SEC]
Prints "READY index=P files=Q" once both servers listen (ports may be 0 to
pick free ones), then serves until SIGTERM.
"""

import argparse
import base64
import email.utils
import hashlib
import html
import io
import json
import os
import re
import signal
import socket
import struct
import sys
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from wheels import sha256_file  # the script's own directory is on sys.path

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
JSON_LATEST = "application/vnd.pypi.simple.latest+json"
HTML_LATEST = "application/vnd.pypi.simple.latest+html"
TEXT_HTML = "text/html"

CHUNK = 64 * 1024

# The keys pypi.org puts PEP 658 metadata under in JSON: the PEP 714 name, and
# the misspelt legacy one it has always sent. Never "dist-info-metadata": any
# value under that key (even false) makes pip 22.3 to 23.1 fail with
# "TypeError: unhashable type" (pip #12042, the reason for PEP 714), and
# Debian 12's python3-venv ships pip 23.0.1. A test can ask for it through
# /_control {"json_metadata_keys": [...]} to play an older index.
JSON_METADATA_KEYS = ("core-metadata", "data-dist-info-metadata")

# What a fault rule may do: answer instead of the real thing, or spoil the
# real body on its way out.
FAULT_ANSWERS = ("status", "close", "stall", "redirect", "raw", "gzip_bomb")
FAULT_BODIES = ("truncate", "reset", "stall_body", "corrupt", "resize", "retype",
                "swap")
_BOMBS = {}  # size -> its gzip stream, made once


def gzip_bomb(size):
    """A gzip stream of size zero bytes (made once per size)."""
    if size not in _BOMBS:
        import gzip
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as g:
            chunk = b"\0" * (1 << 20)
            left = size
            while left > 0:
                g.write(chunk[:min(left, len(chunk))])
                left -= len(chunk)
        _BOMBS[size] = out.getvalue()
    return _BOMBS[size]
FLIP = 16  # bytes a "corrupt" fault flips


def normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(v):
    parts = []
    for p in re.split(r"[.+-]", v):
        parts.append((0, int(p), "") if p.isdigit() else (1, 0, p))
    return parts


def choose_format(accept):
    """Returns JSON_V1, HTML_V1 or TEXT_HTML for an Accept value, as pypi.org:
    JSON only when the client names it, HTML otherwise (never a 406)."""
    if not accept:
        return TEXT_HTML
    ranges = []
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        mtype = parts[0].lower()
        if not mtype:
            continue
        q = 1.0
        for param in parts[1:]:
            if param.lower().startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        ranges.append((mtype, q))

    def q_for(offer, wildcards):
        best, spec = None, -1
        for mtype, q in ranges:
            if mtype == offer:
                s = 2
            elif wildcards and mtype == offer.split("/")[0] + "/*":
                s = 1
            elif wildcards and mtype == "*/*":
                s = 0
            else:
                continue
            if s > spec:
                best, spec = q, s
        return best or 0.0

    # Offers in preference order on a tie; JSON never matches a wildcard.
    offers = [
        (JSON_V1, max(q_for(JSON_V1, False), q_for(JSON_LATEST, False))),
        (HTML_V1, max(q_for(HTML_V1, False), q_for(HTML_LATEST, False))),
        (TEXT_HTML, q_for(TEXT_HTML, True)),
    ]
    best = max(offers, key=lambda o: o[1])
    if best[1] <= 0:
        return TEXT_HTML
    for offer, q in offers:
        if q == best[1]:
            return offer
    return TEXT_HTML


def _read_metadata(path):
    """The core metadata text of a wheel or sdist, or ""."""
    try:
        if path.endswith(".whl"):
            with zipfile.ZipFile(path) as zf:
                for n in zf.namelist():
                    if n.count("/") == 1 and n.endswith(".dist-info/METADATA"):
                        return zf.read(n).decode("utf-8", "replace")
        elif path.endswith(".tar.gz"):
            with tarfile.open(path) as tf:
                for m in tf.getmembers():
                    if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"):
                        return tf.extractfile(m).read().decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile, tarfile.TarError):
        pass
    return ""


def _header(meta, key):
    for line in meta.split("\n"):
        if not line.strip():
            break
        k, _, v = line.partition(":")
        if k.strip().lower() == key.lower():
            return v.strip()
    return None




class Catalog:
    """The distributions in a directory, rescanned when it changes."""

    def __init__(self, directory):
        self.dir = directory
        self.lock = threading.Lock()
        self.stamp = None
        self.files = {}      # filename -> dict
        self.projects = {}   # normalised -> {"name": display, "files": [dict]}
        self._sha_cache = {}
        self.refresh()

    def _dir_stamp(self):
        try:
            st = os.stat(self.dir)
            return (st.st_mtime_ns, len(os.listdir(self.dir)))
        except OSError:
            return None

    def refresh(self):
        with self.lock:
            stamp = self._dir_stamp()
            if stamp == self.stamp and self.stamp is not None:
                return
            files, projects = {}, {}
            for fn in sorted(os.listdir(self.dir)):
                if fn.endswith(".whl"):
                    dist, version = fn.split("-")[:2]
                elif fn.endswith(".tar.gz"):
                    dist, _, version = fn[:-len(".tar.gz")].rpartition("-")
                else:
                    continue
                path = os.path.join(self.dir, fn)
                st = os.stat(path)
                key = (fn, st.st_size, st.st_mtime_ns)
                if key not in self._sha_cache:
                    self._sha_cache[key] = (sha256_file(path), _read_metadata(path))
                sha, meta = self._sha_cache[key]
                mpath = path + ".metadata"
                msha = sha256_file(mpath) if os.path.exists(mpath) else None
                ppath = path + ".provenance"
                ypath = path + ".yanked"
                yanked = None
                if os.path.exists(ypath):
                    with open(ypath) as f:
                        yanked = f.read().strip()
                display = _header(meta, "Name") or dist
                info = {
                    "filename": fn,
                    "path": path,
                    "project": normalise(dist),
                    "display": display,
                    "version": _header(meta, "Version") or version,
                    "sha256": sha,
                    "size": st.st_size,
                    "mtime": st.st_mtime,
                    "upload_time": time.strftime(
                        "%Y-%m-%dT%H:%M:%S", time.gmtime(st.st_mtime))
                    + ".%06dZ" % (int(st.st_mtime * 1e6) % 1000000),
                    "requires_python": _header(meta, "Requires-Python"),
                    "metadata_sha256": msha,
                    "metadata_path": mpath if msha else None,
                    "provenance_path": ppath if os.path.exists(ppath) else None,
                    "yanked": yanked,
                }
                files[fn] = info
                p = projects.setdefault(info["project"],
                                        {"name": display, "files": []})
                p["files"].append(info)
            for p in projects.values():
                p["files"].sort(key=lambda i: (version_key(i["version"]),
                                               i["filename"]))
            self.files, self.projects, self.stamp = files, projects, stamp


class State:
    """Counters and injected faults, shared by both servers."""

    def __init__(self, html_only=False, rate=None):
        self.lock = threading.Lock()
        self.html_only = html_only
        self.rate = rate
        self.corrupt = set()
        self.truncate = set()
        self.status = {}
        self.delay = 0.0
        self.json_metadata_keys = list(JSON_METADATA_KEYS)
        self.sizes = {}
        self.meta_no_hash = False
        self.ignore_range = False
        self.project_status = {}
        self.faults = []     # rules, each with "left": requests it has left
        self.reset()

    def reset(self):
        with self.lock:
            self.requests = {}
            self.files = {}
            self.metadata = {}
            self.provenance = {}
            self.conditional = 0
            self.not_modified = 0
            self.ranges = {}
            self.fired = [0] * len(self.faults)
            self.pages_now = 0
            self.pages_peak = 0

    def count(self, table, key):
        with self.lock:
            table[key] = table.get(key, 0) + 1

    def snapshot(self):
        with self.lock:
            return {
                "requests": dict(self.requests),
                "files": dict(self.files),
                "metadata": dict(self.metadata),
                "provenance": dict(self.provenance),
                "conditional": self.conditional,
                "not_modified": self.not_modified,
                "ranges": dict(self.ranges),
                "faults": list(self.fired),
                "pages_peak": self.pages_peak,
            }

    def control(self, body):
        with self.lock:
            if "html_only" in body:
                self.html_only = bool(body["html_only"])
            if "corrupt" in body:
                self.corrupt = set(body["corrupt"] or [])
            if "truncate" in body:
                self.truncate = set(body["truncate"] or [])
            if "status" in body:
                self.status = {str(k): int(v) for k, v in (body["status"] or {}).items()}
            if "rate" in body:
                self.rate = float(body["rate"]) if body["rate"] else None
            if "delay" in body:
                self.delay = float(body["delay"] or 0)
            if "json_metadata_keys" in body:
                keys = body["json_metadata_keys"]
                self.json_metadata_keys = list(JSON_METADATA_KEYS if keys is None else keys)
            if "sizes" in body:
                self.sizes = {str(k): int(v) for k, v in (body["sizes"] or {}).items()}
            if "ignore_range" in body:
                self.ignore_range = bool(body["ignore_range"])
            if "meta_no_hash" in body:
                self.meta_no_hash = bool(body["meta_no_hash"])
            if "project_status" in body:
                self.project_status = {normalise(str(k)): dict(v) for k, v in
                                       (body["project_status"] or {}).items()}
            if "faults" in body:
                self.faults = [_fault_rule(r) for r in body["faults"] or []]
                self.fired = [0] * len(self.faults)
            return {
                "html_only": self.html_only,
                "corrupt": sorted(self.corrupt),
                "truncate": sorted(self.truncate),
                "status": dict(self.status),
                "rate": self.rate,
                "delay": self.delay,
                "json_metadata_keys": list(self.json_metadata_keys),
                "sizes": dict(self.sizes),
                "ignore_range": self.ignore_range,
                "meta_no_hash": self.meta_no_hash,
                "project_status": dict(self.project_status),
                "faults": [{k: v for k, v in r.items() if k != "left"}
                           for r in self.faults],
            }

    def take_fault(self, path):
        """The first fault rule that applies to path (spending one of its
        times), or None."""
        base = path.rsplit("/", 1)[-1]
        with self.lock:
            for i, rule in enumerate(self.faults):
                if rule["match"] not in (path, base):
                    continue
                if rule["left"] is not None:
                    if rule["left"] <= 0:
                        continue
                    rule["left"] -= 1
                self.fired[i] += 1
                return dict(rule)
        return None

    def injected(self, path):
        with self.lock:
            if path in self.status:
                return self.status[path]
            base = path.rsplit("/", 1)[-1]
            if base and base in self.status:
                return self.status[base]
        return None


def _fault_rule(r):
    """A checked copy of one fault rule from /_control."""
    if not isinstance(r, dict) or not isinstance(r.get("match"), str):
        raise ValueError("a fault rule needs a \"match\" string")
    kind = r.get("kind")
    if kind not in FAULT_ANSWERS + FAULT_BODIES:
        raise ValueError("unknown fault kind %r" % (kind,))
    rule = dict(r)
    times = rule.pop("times", None)
    rule["left"] = None if times is None else int(times)
    for key in ("code", "retry_after", "after", "delta", "at", "size"):
        if rule.get(key) is not None:
            rule[key] = int(rule[key])
    if rule.get("seconds") is not None:
        rule["seconds"] = float(rule["seconds"])
    return rule


def _spoil(data, rule):
    """data as a "corrupt" or "resize" rule serves it."""
    if rule["kind"] == "corrupt":
        buf = bytearray(data)
        lo = len(buf) // 2
        for i in range(lo, min(lo + FLIP, len(buf))):
            buf[i] ^= 0xFF
        return bytes(buf)
    if rule["kind"] == "resize":
        delta = rule.get("delta") or 0
        return data + b"\0" * delta if delta >= 0 else data[:max(0, len(data) + delta)]
    return data


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "larder-standin/1.0"
    # Headers and body go out in separate writes: with Nagle on, the body
    # waits for the client's delayed ACK (40 ms a response), which no real
    # index adds.
    disable_nagle_algorithm = True

    # set on the subclass: app (the Standin)

    def log_message(self, fmt, *args):
        if self.app.verbose:
            sys.stderr.write("standin %s %s\n" % (self.address_string(), fmt % args))

    def _send(self, code, body=b"", ctype="text/plain; charset=utf-8", headers=None,
              head=False):
        self.send_response(code)
        if code != 304:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body and not head and code != 304:
            self.wfile.write(body)

    def _count(self):
        path = urlsplit(self.path).path
        self.app.state.count(self.app.state.requests, "%s %s" % (self.command, path))
        return path

    def _reset_connection(self):
        """Ends the connection with a RST (SO_LINGER 0), as a crashed peer."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            os.close(self.connection.detach())
        except OSError:
            pass

    def _answer_fault(self, rule, head=False):
        """Applies a rule of FAULT_ANSWERS. Returns True when it answered the
        request (False: a "stall" is over, answer normally)."""
        kind = rule["kind"]
        if kind == "stall":
            time.sleep(rule.get("seconds") or 30)
            return False
        if kind == "close":
            self.close_connection = True
            return True
        if kind == "status":
            code = rule.get("code") or 503
            headers = {}
            if rule.get("retry_after") is not None:
                headers["Retry-After"] = str(rule["retry_after"])
            body = rule.get("body")
            body = ("injected %d\n" % code) if body is None else body
            self._send(code, body.encode(), headers=headers, head=head)
            return True
        if kind == "redirect":
            self._send(rule.get("code") or 302, b"",
                       headers={"Location": rule.get("location", "/")}, head=head)
            return True
        if kind == "gzip_bomb":
            body = gzip_bomb(rule.get("size") or 64 << 20)
            self._send(rule.get("code") or 200, body,
                       rule.get("content_type") or "application/octet-stream",
                       headers={"Content-Encoding": "gzip"}, head=head)
            return True
        if kind == "raw":
            if rule.get("file"):
                with open(rule["file"], "rb") as f:
                    body = f.read()
            elif rule.get("body_b64") is not None:
                body = base64.b64decode(rule["body_b64"])
            else:
                body = (rule.get("body") or "").encode("utf-8", "surrogateescape")
            self._send(rule.get("code") or 200, body,
                       rule.get("content_type") or "application/octet-stream",
                       headers=rule.get("headers"), head=head)
            return True
        return False

    def _send_spoiled(self, code, body, ctype, headers, rule, head=False):
        """Sends body as a rule of FAULT_BODIES (or None) has it."""
        body = _spoil(body, rule) if rule else body
        kind = rule["kind"] if rule else None
        if kind == "retype":
            ctype = rule.get("content_type") or "text/plain"
        cut = len(body)
        if kind in ("truncate", "reset", "stall_body"):
            cut = rule.get("after")
            cut = len(body) // 2 if cut is None else min(cut, len(body))
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if kind == "truncate":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if head:
            return
        try:
            self.wfile.write(body[:cut])
            if kind == "reset":
                self._reset_connection()
                return
            if kind == "stall_body":
                time.sleep(rule.get("seconds") or 30)
            if kind != "truncate":
                self.wfile.write(body[cut:])
        except OSError:
            self.close_connection = True

    def _fault(self, path, head=False):
        code = self.app.state.injected(path)
        if code is None:
            return False
        self._send(code, ("injected %d\n" % code).encode(), head=head)
        return True


class IndexHandler(_Handler):
    def do_GET(self):
        self._page(head=False)

    def do_HEAD(self):
        self._page(head=True)

    def do_POST(self):
        path = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        state = self.app.state
        if path == "/_reset":
            state.reset()
            self._send(200, b'{"ok": true}\n', "application/json")
        elif path == "/_control":
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
                now = state.control(body)
            except (ValueError, TypeError) as e:
                self._send(400, ("bad control: %s\n" % e).encode())
                return
            self._send(200, (json.dumps(now) + "\n").encode(), "application/json")
        else:
            self._count()
            self._send(405, b"method not allowed\n", headers={"Allow": "GET, HEAD"})

    def _page(self, head):
        if not urlsplit(self.path).path.startswith("/simple"):
            self._page_answer(head)
            return
        state = self.app.state
        with state.lock:
            state.pages_now += 1
            state.pages_peak = max(state.pages_peak, state.pages_now)
        try:
            self._page_answer(head)
        finally:
            with state.lock:
                state.pages_now -= 1

    def _page_answer(self, head):
        split = urlsplit(self.path)
        path = split.path
        query = ("?" + split.query) if split.query else ""
        state = self.app.state
        if path == "/_counters":
            self._send(200, (json.dumps(state.snapshot(), sort_keys=True) + "\n").encode(),
                       "application/json", head=head)
            return
        self._count()
        if self.headers.get("If-None-Match") is not None:
            with state.lock:
                state.conditional += 1
        self.rule = state.take_fault(path)
        if self.rule and self.rule["kind"] in FAULT_ANSWERS:
            if self._answer_fault(self.rule, head):
                return
            self.rule = None
        if self._fault(path, head):
            return
        if state.delay:
            time.sleep(state.delay)
        self.app.catalog.refresh()
        if path == "/simple":
            self._send(301, b"", headers={"Location": "/simple/" + query}, head=head)
            return
        if path == "/simple/":
            self._serve_page(None, head)
            return
        m = re.fullmatch(r"/simple/([^/]+)(/?)", path)
        if not m:
            self._send(404, b"not found\n", head=head)
            return
        name, slash = m.group(1), m.group(2)
        norm = normalise(name)
        if norm not in self.app.catalog.projects:
            self._send(404, b"no such project\n", head=head)
            return
        if name != norm or not slash:
            self._send(301, b"", headers={"Location": "/simple/%s/%s" % (norm, query)},
                       head=head)
            return
        self._serve_page(norm, head)

    def _serve_page(self, project, head):
        state = self.app.state
        fmt = TEXT_HTML if state.html_only else choose_format(self.headers.get("Accept"))
        if project is None:
            body, last = self.app.render_list(fmt)
        else:
            body, last = self.app.render_project(project, fmt)
        etag = '"%s"' % hashlib.sha256(body).hexdigest()[:40]
        headers = {
            "ETag": etag,
            "Cache-Control": "max-age=600, public",
            "Last-Modified": email.utils.formatdate(last, usegmt=True),
            "Vary": "Accept, Accept-Encoding",
        }
        rule = getattr(self, "rule", None)
        inm = self.headers.get("If-None-Match")
        if rule and rule["kind"] in FAULT_BODIES:
            inm = None  # a body to spoil, even for a client that has the page
        if inm is not None:
            tags = [t.strip() for t in inm.split(",")]
            if "*" in tags or etag in tags or ("W/" + etag) in tags:
                with state.lock:
                    state.not_modified += 1
                self._send(304, headers=headers)
                return
        if rule and rule["kind"] in FAULT_BODIES:
            self._send_spoiled(200, body, fmt, headers, rule, head)
            return
        self._send(200, body, fmt, headers=headers, head=head)


class FilesHandler(_Handler):
    def do_GET(self):
        self._file(head=False)

    def do_HEAD(self):
        self._file(head=True)

    def _file(self, head):
        path = self._count()
        state = self.app.state
        m = re.fullmatch(r"/packages/([0-9a-f]{2})/([0-9a-f]{2})/([^/]+)", path)
        info = None
        metadata = prov = False
        if m:
            fn = m.group(3)
            if fn.endswith(".metadata"):
                fn, metadata = fn[:-len(".metadata")], True
            elif fn.endswith(".provenance"):
                fn, prov = fn[:-len(".provenance")], True
            if not head:
                table = (state.metadata if metadata else
                         state.provenance if prov else state.files)
                state.count(table, fn)
            self.app.catalog.refresh()
            info = self.app.catalog.files.get(fn)
            if info and not info["sha256"].startswith(m.group(1) + m.group(2)):
                info = None
            if info and metadata and not info["metadata_path"]:
                info = None
            if info and prov and not info["provenance_path"]:
                info = None
        rule = state.take_fault(path)
        if rule and rule["kind"] in FAULT_ANSWERS:
            if self._answer_fault(rule, head):
                return
            rule = None
        if self._fault(path, head):
            return
        if info is None:
            self._send(404, b"not found\n", head=head)
            return
        fpath = (info["metadata_path"] if metadata else
                 info["provenance_path"] if prov else info["path"])
        if rule and rule["kind"] == "swap" and rule.get("file"):
            fpath = rule["file"]
        name = info["filename"] + (".metadata" if metadata else
                                   ".provenance" if prov else "")
        try:
            f = open(fpath, "rb")
        except OSError:
            self._send(404, b"gone\n", head=head)
            return
        with f:
            real = os.fstat(f.fileno()).st_size
            size = real
            if rule and rule["kind"] == "resize":
                size = max(0, real + (rule.get("delta") or 0))
            start, end = 0, size - 1
            code = 200
            rng = self.headers.get("Range")
            if rng:
                state.count(state.ranges, name)
            if rng and not state.ignore_range:
                r = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
                ok = False
                if r and (r.group(1) or r.group(2)):
                    if r.group(1):
                        start = int(r.group(1))
                        end = int(r.group(2)) if r.group(2) else size - 1
                    else:
                        start = max(0, size - int(r.group(2)))
                    end = min(end, size - 1)
                    ok = start <= end and start < size
                if not ok:
                    self._send(416, b"", headers={"Content-Range": "bytes */%d" % size},
                               head=head)
                    return
                code = 206
            length = end - start + 1
            with state.lock:
                corrupt = name in state.corrupt or info["filename"] in state.corrupt
                truncate = name in state.truncate or info["filename"] in state.truncate
                rate = state.rate
            kind = rule["kind"] if rule else None
            corrupt = corrupt or kind == "corrupt"
            cut_kind = "truncate" if truncate else kind
            if cut_kind not in ("truncate", "reset", "stall_body"):
                cut_kind = None
            self.send_response(code)
            if kind == "retype":
                self.send_header("Content-Type", rule.get("content_type") or "text/html")
            else:
                self.send_header("Content-Type", "text/plain; charset=utf-8"
                                 if metadata else "application/json" if prov
                                 else "application/octet-stream")
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", '"%s"' % info["sha256"][:32])
            self.send_header("Last-Modified", email.utils.formatdate(info["mtime"], usegmt=True))
            self.send_header("Cache-Control", "max-age=365000000, immutable, public")
            if code == 206:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            if cut_kind == "truncate":
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if head:
                return
            f.seek(min(start, real))
            remaining = length
            cut = None  # body bytes sent before the fault strikes
            if cut_kind:
                cut = length // 2
                if rule and rule.get("after") is not None and not truncate:
                    cut = min(rule["after"], length)
                if cut_kind == "truncate":
                    remaining = cut
            flip_lo = size // 2
            if rule and kind == "corrupt" and rule.get("at") is not None:
                flip_lo = rule["at"]
            flip_hi = flip_lo + FLIP
            sent = 0
            t0 = time.monotonic()
            pos = start
            while True:
                if cut is not None and sent == cut and cut_kind != "truncate":
                    if cut_kind == "reset":
                        self._reset_connection()
                        return
                    time.sleep(rule.get("seconds") or 30)
                    cut = None
                if remaining <= 0:
                    break
                want = min(CHUNK, remaining)
                if cut is not None and sent < cut:
                    want = min(want, cut - sent)
                data = f.read(max(0, min(want, real - pos))) if pos < real else b""
                if len(data) < want and pos + len(data) < size:
                    data += b"\0" * min(want - len(data), size - pos - len(data))
                if not data:
                    break
                if corrupt and pos < flip_hi and pos + len(data) > flip_lo:
                    buf = bytearray(data)
                    for i in range(max(flip_lo, pos), min(flip_hi, pos + len(data))):
                        buf[i - pos] ^= 0xFF
                    data = bytes(buf)
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    return
                pos += len(data)
                sent += len(data)
                remaining -= len(data)
                if rate:
                    ahead = sent / rate - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            if cut_kind == "truncate":
                try:
                    self.wfile.flush()
                except OSError:
                    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class Standin:
    """The stand-in, in process: Standin(...).start(), .stop()."""

    def __init__(self, wheels, port=0, files_port=0, files_host="localhost",
                 html_only=False, rate=None, host="127.0.0.1", verbose=True,
                 public_files_port=None):
        self.catalog = Catalog(wheels)
        self.state = State(html_only=html_only, rate=rate)
        self.files_host = files_host
        self.host = host
        self.verbose = verbose
        app = self
        self.index = _Server((host, port), type("IH", (IndexHandler,), {"app": app}))
        self.files = _Server((host, files_port), type("FH", (FilesHandler,), {"app": app}))
        self.port = self.index.server_address[1]
        self.files_port = self.files.server_address[1]
        # The port written in file URLs: the files port, or a relay's in
        # front of it (contrib/bench/wan.py).
        self.public_files_port = public_files_port or self.files_port
        self.threads = []

    def file_url(self, info):
        sha = info["sha256"]
        return "http://%s:%d/packages/%s/%s/%s" % (
            self.files_host, self.public_files_port, sha[:2], sha[2:4], info["filename"])

    def render_list(self, fmt):
        projects = self.catalog.projects
        last = max((i["mtime"] for p in projects.values() for i in p["files"]), default=0)
        names = sorted(projects)
        if fmt == JSON_V1:
            doc = {"meta": {"api-version": "1.1"},
                   "projects": [{"name": projects[n]["name"]} for n in names]}
            return (json.dumps(doc, indent=None) + "\n").encode(), last
        out = io.StringIO()
        out.write('<!DOCTYPE html>\n<html>\n  <head>\n'
                  '    <meta name="pypi:repository-version" content="1.0">\n'
                  '    <title>Simple index</title>\n  </head>\n  <body>\n')
        for n in names:
            out.write('    <a href="/simple/%s/">%s</a>\n'
                      % (html.escape(n), html.escape(projects[n]["name"])))
        out.write("  </body>\n</html>\n")
        return out.getvalue().encode(), last

    def project_status(self, project):
        """The PEP 792 status a test set for project, or None."""
        with self.state.lock:
            st = self.state.project_status.get(project)
        return dict(st) if st else None

    def api_version(self, project):
        """1.4 for a page with a status or a provenance (PEP 792, 740),
        else 1.1 as before."""
        p = self.catalog.projects[project]
        if self.project_status(project) or any(i["provenance_path"] for i in p["files"]):
            return "1.4"
        return "1.1"

    def listed(self, project):
        """The files project's page lists: none when quarantined."""
        st = self.project_status(project)
        if st and st.get("status") == "quarantined":
            return []
        return self.catalog.projects[project]["files"]

    def project_json(self, project):
        p = self.catalog.projects[project]
        files = []
        versions = []
        for i in p["files"]:
            if i["version"] not in versions:
                versions.append(i["version"])
        for i in self.listed(project):
            if i["version"] not in versions:
                versions.append(i["version"])
            meta = {"sha256": i["metadata_sha256"]} if i["metadata_sha256"] else False
            if meta and self.state.meta_no_hash:
                meta = True
            files.append({
                "filename": i["filename"],
                "url": self.file_url(i),
                "hashes": {"sha256": i["sha256"]},
                "requires-python": i["requires_python"],
                "size": self.state.sizes.get(i["filename"], i["size"]),
                "upload-time": i["upload_time"],
                "yanked": i["yanked"] if i["yanked"] is not None else False,
            })
            for key in self.state.json_metadata_keys:
                files[-1][key] = meta
            if i["provenance_path"]:
                files[-1]["provenance"] = self.file_url(i) + ".provenance"
        doc = {"meta": {"api-version": self.api_version(project),
                        "_last-serial": 1000 + len(files)},
               "name": project, "versions": versions, "files": files}
        st = self.project_status(project)
        if st:
            doc["project-status"] = st
        return doc

    def render_project(self, project, fmt):
        p = self.catalog.projects[project]
        last = max(i["mtime"] for i in p["files"])
        if fmt == JSON_V1:
            return (json.dumps(self.project_json(project)) + "\n").encode(), last
        out = io.StringIO()
        st = self.project_status(project)
        version = self.api_version(project)
        out.write('<!DOCTYPE html>\n<html>\n  <head>\n'
                  '    <meta name="pypi:repository-version" content="%s">\n'
                  % ("1.0" if version == "1.1" else version))
        if st:
            out.write('    <meta name="pypi:project-status" content="%s">\n'
                      % html.escape(st.get("status", "")))
            if st.get("reason") is not None:
                out.write('    <meta name="pypi:project-status-reason" content="%s">\n'
                          % html.escape(st["reason"]))
        out.write('    <title>Links for %s</title>\n  </head>\n  <body>\n'
                  '    <h1>Links for %s</h1>\n' % (html.escape(project), html.escape(project)))
        for i in self.listed(project):
            attrs = ['href="%s#sha256=%s"' % (html.escape(self.file_url(i)), i["sha256"])]
            if i["requires_python"]:
                attrs.append('data-requires-python="%s"' % html.escape(i["requires_python"]))
            if i["metadata_sha256"] and self.state.meta_no_hash:
                attrs.append('data-dist-info-metadata="true"')
                attrs.append('data-core-metadata="true"')
            elif i["metadata_sha256"]:
                attrs.append('data-dist-info-metadata="sha256=%s"' % i["metadata_sha256"])
                attrs.append('data-core-metadata="sha256=%s"' % i["metadata_sha256"])
            if i["yanked"] is not None:
                attrs.append('data-yanked="%s"' % html.escape(i["yanked"]))
            if i["provenance_path"]:
                attrs.append('data-provenance="%s"'
                             % html.escape(self.file_url(i) + ".provenance"))
            out.write("    <a %s>%s</a><br />\n" % (" ".join(attrs), html.escape(i["filename"])))
        out.write("  </body>\n</html>\n<!--SERIAL %d-->\n" % (1000 + len(p["files"])))
        return out.getvalue().encode(), last

    def start(self):
        for srv in (self.index, self.files):
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                                 daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self):
        for srv in (self.index, self.files):
            srv.shutdown()
            srv.server_close()


def main(argv=None):
    ap = argparse.ArgumentParser(description="stand-in upstream PyPI for larder's tests")
    ap.add_argument("--wheels", required=True, help="directory of distributions")
    ap.add_argument("--port", type=int, default=0, help="index port (0: any)")
    ap.add_argument("--files-port", type=int, default=0, help="files port (0: any)")
    ap.add_argument("--files-host", default="localhost",
                    help="host name written in file URLs")
    ap.add_argument("--public-files-port", type=int, default=None,
                    help="port written in file URLs (a relay's; default: the files port)")
    ap.add_argument("--html-only", action="store_true", help="always serve PEP 503 HTML")
    ap.add_argument("--rate", type=float, default=None,
                    help="throttle file bodies to this many bytes per second")
    ap.add_argument("--quiet", action="store_true", help="no request log on stderr")
    args = ap.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    s = Standin(args.wheels, args.port, args.files_port, args.files_host,
                args.html_only, args.rate, verbose=not args.quiet,
                public_files_port=args.public_files_port).start()
    sys.stdout.write("READY index=%d files=%d\n" % (s.port, s.files_port))
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
