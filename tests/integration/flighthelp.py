"""Helpers for the single-flight and crash tests (test_flight.py), standard
library only: concurrent streaming readers that time their first body byte,
a look at the flights table and DATA/tmp, and the processes of a larder run
found through /proc (workers, the owners of fetches, and which process has
a temp file open).
"""

import errno
import fcntl
import hashlib
import http.client as httpclient
import os
import signal
import sqlite3
import threading
import time
from urllib.parse import urlsplit

from stack import blob_file, wait_for  # noqa: F401 (tests use fh.blob_file, fh.wait_for)


# ---------------------------------------------------------------- readers

class Reader(threading.Thread):
    """One GET of url in a thread, streamed: the body is hashed as it comes,
    never kept. Starts its request when go (a threading.Event) is set; times
    are seconds from t0, the moment go was set (reader.t0 must be set by the
    caller before go is set, see burst()).

    After join(): status, length (Content-Length or None), nbytes, sha256,
    error (None, or what cut the body short), t_headers, t_first (first body
    byte), t_end; complete is True when the body ended cleanly with
    Content-Length bytes. progress is an Event set once `mark` bytes came."""

    def __init__(self, url, go=None, headers=None, timeout=60, mark=1, keep=False):
        super().__init__(daemon=True)
        self.url = url
        self.go = go
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.mark = mark
        self.keep = keep
        self.progress = threading.Event()
        self.t0 = None
        self.status = None
        self.reason = None
        self.resp_headers = None
        self.length = None
        self.nbytes = 0
        self.sha256 = None
        self.body = b"" if keep else None
        self.error = None
        self.t_headers = self.t_first = self.t_end = None

    def _since(self):
        return time.monotonic() - self.t0

    def run(self):
        if self.go is not None:
            self.go.wait()
        if self.t0 is None:
            self.t0 = time.monotonic()
        u = urlsplit(self.url)
        path = u.path + ("?" + u.query if u.query else "")
        h = hashlib.sha256()
        chunks = []
        conn = httpclient.HTTPConnection(u.hostname, u.port or 80, timeout=self.timeout)
        try:
            conn.request("GET", path, headers=self.headers)
            r = conn.getresponse()
            self.t_headers = self._since()
            self.status, self.reason = r.status, r.reason
            self.resp_headers = r.headers
            cl = r.getheader("Content-Length")
            self.length = int(cl) if cl is not None else None
            while True:
                data = r.read1(1 << 16)
                if not data:
                    break
                if self.t_first is None:
                    self.t_first = self._since()
                h.update(data)
                if self.keep:
                    chunks.append(data)
                self.nbytes += len(data)
                if self.nbytes >= self.mark:
                    self.progress.set()
            if self.length is not None and self.nbytes != self.length:
                self.error = "body ended after %d of %d bytes" % (self.nbytes, self.length)
        except (OSError, httpclient.HTTPException) as e:
            self.error = repr(e)
        finally:
            conn.close()
            self.t_end = self._since()
            self.sha256 = h.hexdigest()
            if self.keep:
                self.body = b"".join(chunks)
            self.progress.set()  # never leave a waiter hanging

    @property
    def complete(self):
        return (self.error is None and self.status is not None
                and (self.length is None or self.nbytes == self.length))

    def header(self, name, default=None):
        if self.resp_headers is None:
            return default
        return self.resp_headers.get(name, default)

    def __repr__(self):
        return ("<Reader %s: status %s, %d/%s bytes, first byte %s s, end %s s%s>"
                % (urlsplit(self.url).path, self.status, self.nbytes, self.length,
                   _fmt(self.t_first), _fmt(self.t_end),
                   "" if self.error is None else ", error " + self.error))


def _fmt(t):
    return "-" if t is None else "%.3f" % t


def start_readers(urls, headers=None, **kw):
    """Starts one Reader per url, all released at the same moment; returns
    them (started, not joined). Their t0 is that moment. headers is one dict
    for all, or a list with one per url; kw goes to Reader."""
    go = threading.Event()
    if headers is None or isinstance(headers, dict):
        headers = [headers] * len(urls)
    readers = [Reader(u, go=go, headers=h, **kw) for u, h in zip(urls, headers)]
    for r in readers:
        r.start()
    time.sleep(0.05)  # let every thread reach go.wait()
    t0 = time.monotonic()
    for r in readers:
        r.t0 = t0
    go.set()
    return readers


def join_all(readers, timeout=60):
    """Joins readers, failing the test if one is still running after
    timeout seconds in all."""
    deadline = time.monotonic() + timeout
    for r in readers:
        r.join(max(0.0, deadline - time.monotonic()))
    hung = [r for r in readers if r.is_alive()]
    assert not hung, "readers still running after %s s: %r" % (timeout, hung)
    return readers


def burst(urls, timeout=60, **kw):
    """start_readers + join_all: timeout is each request's socket timeout,
    and the whole burst gets timeout + 10 seconds."""
    return join_all(start_readers(urls, timeout=timeout, **kw), timeout + 10)


# ---------------------------------------------------------------- the data dir

def db_path(data_dir):
    return os.path.join(data_dir, "larder.db")


def flights(data_dir):
    """[(key, tmp, pid)] of the flights table, [] when there is no database."""
    path = db_path(data_dir)
    if not os.path.exists(path):
        return []
    con = sqlite3.connect(path, timeout=10)
    try:
        return [tuple(r) for r in con.execute("SELECT key, tmp, pid FROM flights")]
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):  # larder is still creating it
            return []
        raise
    finally:
        con.close()


def is_locked(path):
    """True when some process holds a flock on path (checked as larder does,
    with a non-blocking shared lock on a fresh descriptor); None when the
    file is gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)  # drops the shared lock, if we got it
    return False


def part_files(data_dir):
    """{path: locked} of the *.part files in DATA/tmp."""
    top = os.path.join(data_dir, "tmp")
    out = {}
    try:
        names = os.listdir(top)
    except FileNotFoundError:
        return out
    for n in names:
        if n.endswith(".part"):
            p = os.path.join(top, n)
            locked = is_locked(p)
            if locked is not None:
                out[p] = locked
    return out


def leftovers(data_dir):
    """What would block or litter: flights rows, and unlocked *.part files.
    ([rows], [unlocked paths])."""
    rows = flights(data_dir)
    loose = sorted(p for p, locked in part_files(data_dir).items() if not locked)
    return rows, loose


def wait_settled(data_dir, timeout=15.0):
    """Waits until there is no flights row and no *.part file at all (locked
    or not); returns (rows, parts) as last seen, so the caller asserts."""
    deadline = time.monotonic() + timeout
    while True:
        rows = flights(data_dir)
        parts = part_files(data_dir)
        if (not rows and not parts) or time.monotonic() >= deadline:
            return rows, parts
        time.sleep(0.1)


# ---------------------------------------------------------------- processes

def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return None


def _pids():
    for n in os.listdir("/proc"):
        if n.isdigit():
            yield int(n)


def ppid_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses
    return int(stat.rsplit(")", 1)[1].split()[1])


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def fetcher_pids(data_dir, key=None):
    """Live processes that own a fetch for data_dir: the ones holding a
    DATA/tmp/*.part open read-write (the owner's claim; whoever follows a
    fetch, the owner included, reads it read-only). Optionally only the
    owner of flight key. A `larder serve` or web-server-spawned worker owns
    the fetches it started; under CGI, a detached child of the CGI
    process does."""
    tmpdir = os.path.join(os.path.abspath(data_dir), "tmp") + "/"
    wanted = None
    if key is not None:
        wanted = {tmp for k, tmp, _ in flights(data_dir) if k == key}
    out = []
    for pid in _pids():
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                if not target.startswith(tmpdir) or not target.endswith(".part"):
                    continue
                if wanted is not None and target not in wanted:
                    continue
                with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                    flags = next(int(l.split()[1], 8) for l in f if l.startswith("flags:"))
            except (OSError, StopIteration, ValueError):
                continue
            if flags & os.O_ACCMODE == os.O_RDWR and alive(pid):
                out.append(pid)
                break
    return sorted(out)


def children(pid):
    return sorted(p for p in _pids() if ppid_of(p) == pid and alive(p))


def open_parts(pid, data_dir):
    """The DATA/tmp/*.part files pid has open."""
    tmpdir = os.path.join(os.path.abspath(data_dir), "tmp") + "/"
    out = []
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith(tmpdir) and ".part" in target:
            out.append(target)
    return out


def tailing_workers(supervisor_pid, data_dir):
    """The workers of `larder serve` (children of supervisor_pid) that have
    a temp file open: the ones streaming a miss."""
    return [p for p in children(supervisor_pid) if open_parts(p, data_dir)]


def kill(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def kill_fetchers(data_dir):
    """SIGKILLs the fetchers still working for data_dir (a test's own, after
    it); returns their pids."""
    pids = fetcher_pids(data_dir)
    for p in pids:
        kill(p)
    return pids
