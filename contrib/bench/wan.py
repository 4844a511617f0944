#!/usr/bin/python3
"""A TCP relay that makes a loopback upstream look like one across a WAN link.

This kernel has no netem, so the link is simulated in user space: a client
connects to the relay on 127.0.0.1, the relay connects to the real target and
forwards bytes both ways, delayed and rate-limited.

The model
  latency    Every chunk read from one side is timestamped and handed on to the
             other side one-way delay (latency_ms / 2) after it has crossed the
             link; chunks of a direction never overtake one another. A
             request/response exchange therefore costs one round trip
             (latency_ms), and a new connection costs one more: the client's
             local connect to the relay succeeds at once, but nothing moves
             either way until one round trip after the accept (the TCP
             handshake the client would have waited for). Forwarding is a
             pipeline (timers at due times, not a sleep per chunk), so the
             delay does not cut the throughput of a long transfer.
  bandwidth  A Link is a full-duplex line with the same rate each way. Each
             direction serialises the chunks of all connections of all the
             relays sharing it, taking turns between connections (deficit
             round robin, 256 KiB a turn), with no burst allowance: four
             concurrent downloads share the cap the way they would share a
             site's uplink, and a small request on an idle connection waits
             behind at most one turn of each busy connection, not behind
             their backlog.
  closing    A half-close (EOF) is passed on in order after the data before
             it; when both directions have passed their EOF both sockets are
             closed. A reset or error on one side resets the other (SO_LINGER
             0) one-way delay later, after the data already in flight; data
             still queued behind the link when the reset comes is dropped, as
             a sender's socket buffer would be.
  memory     A direction stops reading from its source (TCP backpressure)
             while it holds more than QUEUE_HIGH (4 MiB) plus what its link
             carries in one one-way delay (rate x delay: what is in flight
             on a busy line), and reads again once 1 MiB of that is gone.

Limits: no loss, no jitter, no reordering, no MTU or TCP congestion control
(the link is at full rate from the first byte: no slow start). Timers fire up
to ~1 ms late (epoll's resolution), so each one-way delay is a little longer
than asked. Without a bandwidth cap a direction holds at most QUEUE_HIGH bytes
in flight, so it cannot carry more than about QUEUE_HIGH / one-way delay
(400 MB/s at 20 ms round trip), a bit like a TCP window. A new connection's
first bytes are rate-limited during its handshake rather than after it (a
difference of at most the handshake's round trip on a long first write). All
relays of a process share one asyncio loop in one daemon thread, hence one
CPU: start, stop and stats may be called from any other thread.

In-process:
    link = wan.Link(50e6)                               # 400 Mbit/s each way
    index = wan.Relay(target=("127.0.0.1", 8001), latency_ms=20, link=link)
    files = wan.Relay(target=("127.0.0.1", 8002), latency_ms=20, link=link)
    index.start(); files.start()                        # .port is set
    ...; index.stats(); index.stop(); files.stop()

Command line (every listener shares one link; SIGUSR1 prints each relay's
stats as a JSON line; SIGTERM or SIGINT stops):
    wan.py --listen 0 --target 127.0.0.1:8001 [--listen 0 --target HOST:PORT]
           [--latency-ms 20] [--mbit 400]
prints `READY port=P[,P2]` once listening.
"""

import argparse
import asyncio
import collections
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

QUEUE_HIGH = 4 << 20
QUEUE_HYSTERESIS = 1 << 20
WRITE_BUFFER_HIGH = 1 << 20
QUANTUM = 256 << 10  # a link's round-robin turn, in bytes (>= one read)
CONNECT_TIMEOUT_S = 10.0
# A timer may run this much before its time (asyncio's clock resolution).
_EPSILON = time.get_clock_info("monotonic").resolution
_EOF = b""  # a queued EOF: data_received never hands over empty bytes

# ---------------------------------------------------------------- loop thread

_loop = None
_loop_lock = threading.Lock()


def shared_loop():
    """The one asyncio loop, in a daemon thread, that every Relay runs on."""
    global _loop
    with _loop_lock:
        if _loop is None:
            # glibc mmaps blocks over 128 KiB until one such block is freed,
            # then raises that threshold to its size: free an 8 MiB one now
            # so that the first transfer's 256 KiB chunks come from the heap
            # too (the first 100 MB otherwise runs ~5% slower).
            bytes(8 << 20)
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="wan-relay",
                             daemon=True).start()
            _loop = loop
        return _loop


def _in_loop(coro, timeout=None):
    """Run coro on the shared loop from another thread; return its result."""
    return asyncio.run_coroutine_threadsafe(coro, shared_loop()).result(timeout)


# ---------------------------------------------------------------- the link

class _Channel:
    """One direction of a Link: sends queued chunks of its pipes one after
    another at `rate` bytes/s, round-robin between pipes."""

    def __init__(self, rate):
        self.rate = rate
        self._loop = None
        self._busy_until = 0.0
        self._waiting = collections.deque()  # pipes with chunks to send
        self._timer = None

    def submit(self, pipe):
        """pipe has a new chunk in pipe.pending."""
        if not pipe.on_link:
            pipe.on_link = True
            pipe.credit = QUANTUM  # its first turn is due when it comes round
            self._waiting.append(pipe)
        if self._timer is None:
            # The line was idle: it starts sending now, not back then.
            self._loop = pipe.conn.loop
            self._busy_until = max(self._busy_until, self._loop.time())
            self._pump()

    def _pump(self):
        self._timer = None
        now = self._loop.time() + _EPSILON
        waiting = self._waiting
        while waiting and self._busy_until <= now:
            pipe = waiting[0]
            if pipe.pending and len(pipe.pending[0]) > pipe.credit:
                # Deficit round robin: its turn is over; next time it may
                # send QUANTUM bytes more, so that turns are fair in bytes
                # whatever the sizes of the chunks.
                pipe.credit += QUANTUM
                waiting.rotate(-1)
                continue
            if pipe.pending:
                data = pipe.pending.popleft()
                pipe.credit -= len(data)
                self._busy_until += len(data) / self.rate
                pipe.crossed(data, self._busy_until)
            if not pipe.pending:  # sent all, or emptied by a reset
                waiting.popleft()
                pipe.on_link = False
                pipe.credit = 0
        if waiting:
            self._timer = self._loop.call_at(self._busy_until, self._pump)


class Link:
    """A full-duplex line of bytes_per_sec each way (None: unlimited), shared
    by every connection of every Relay given it."""

    def __init__(self, bytes_per_sec=None):
        if bytes_per_sec is not None and bytes_per_sec <= 0:
            raise ValueError("bytes_per_sec must be positive or None")
        self.bytes_per_sec = bytes_per_sec
        self.up = _Channel(bytes_per_sec) if bytes_per_sec else None
        self.down = _Channel(bytes_per_sec) if bytes_per_sec else None


# ---------------------------------------------------------------- one direction

class _Pipe:
    """One direction of one connection: src's bytes to dst.

    pending: chunks waiting for the link; flight: (due, chunk) crossing it,
    in due order. queued counts the bytes of both."""

    def __init__(self, conn, src, dst, channel, counter):
        self.conn, self.src, self.dst = conn, src, dst
        self.channel, self.counter = channel, counter
        self.pending = collections.deque()
        self.flight = collections.deque()
        self.queued = 0
        in_flight = channel.rate * conn.one_way if channel else 0
        self.high = QUEUE_HIGH + int(in_flight)
        self.low = self.high - QUEUE_HYSTERESIS
        self.on_link = False
        self.credit = 0     # deficit round robin: bytes it may send this turn
        self.read_paused = False
        self.done = False   # EOF handed to dst
        self.dead = False   # dst is gone: drop everything
        self.reset_at = None
        self._timer = None

    # -- intake

    def push(self, data):
        if self.dead or self.reset_at is not None:
            return
        self.queued += len(data)
        if self.channel is None:
            self.crossed(data, self.conn.loop.time())
        else:
            self.pending.append(data)
            self.channel.submit(self)
        if self.queued > self.high and not self.read_paused:
            self.read_paused = True
            self.src.transport.pause_reading()

    def crossed(self, data, when):
        """data has left the line at `when`; it reaches dst one-way later,
        and not before the connection is established."""
        due = max(when, self.conn.ready_at) + self.conn.one_way
        self.flight.append((due, data))
        self.schedule()

    def reset(self, not_before=0.0):
        """src was reset: reset dst once what is in flight has arrived."""
        self.queued -= sum(len(d) for d in self.pending)
        self.pending.clear()
        last = self.flight[-1][0] if self.flight else 0.0
        self.reset_at = max(last, not_before,
                            self.conn.loop.time() + self.conn.one_way)
        self.schedule()

    def kill(self):
        """dst is gone."""
        self.dead = True
        self.pending.clear()
        self.flight.clear()
        self.queued = 0
        self.reset_at = None
        self.cancel()

    # -- output

    def _writable(self):
        d = self.dst
        return (d.transport is not None and not d.paused
                and not d.transport.is_closing())

    def schedule(self):
        if self.dead:
            return
        wake = self.reset_at
        if self.flight and self._writable():
            wake = self.flight[0][0]
        if wake is None:
            return
        if self._timer is not None:
            if self._timer.when() <= wake:
                return
            self._timer.cancel()
        self._timer = self.conn.loop.call_at(wake, self.flush)

    def cancel(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self):
        self._timer = None
        now = self.conn.loop.time() + _EPSILON
        while self.flight and self.flight[0][0] <= now and self._writable():
            self._deliver(self.flight.popleft()[1])
        if self.reset_at is not None and self.reset_at <= now:
            self.conn.reset(self.dst)
            return
        if self.read_paused and self.queued <= self.low and not self.src.lost:
            self.read_paused = False
            self.src.transport.resume_reading()
        self.schedule()

    def _deliver(self, data):
        if not data:  # _EOF
            self.done = True
            if self.dst.transport.can_write_eof():
                self.dst.transport.write_eof()
            self.conn.maybe_close()
            return
        self.queued -= len(data)
        self.dst.transport.write(data)
        self.conn.relay._stats[self.counter] += len(data)


# ---------------------------------------------------------------- one connection

class _Side(asyncio.Protocol):
    """One socket of a connection: the client's or the upstream's."""

    def __init__(self, on_made=None):
        self.transport = None
        self.paused = False   # its write buffer is full
        self.lost = False
        self.conn = None
        self.out = None       # pipe reading from this side
        self.into = None      # pipe writing to this side
        self._on_made = on_made

    def connection_made(self, transport):
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)
        if self._on_made is not None:
            self._on_made(self)

    def data_received(self, data):
        self.out.push(data)

    def eof_received(self):
        self.out.push(_EOF)
        return True  # keep our half open: the peer half-closed only

    def pause_writing(self):
        self.paused = True

    def resume_writing(self):
        self.paused = False
        self.into.schedule()

    def connection_lost(self, exc):
        self.lost = True
        self.conn.lost(self)


class _Conn:
    """A client connection and its upstream connection, two pipes between."""

    def __init__(self, relay, client):
        self.relay = relay
        self.loop = relay._loop
        self.one_way = relay.latency_ms / 2000.0
        # Nothing crosses before the handshake's round trip is over.
        self.ready_at = self.loop.time() + 2 * self.one_way
        self.closing = False
        self.finished = False
        self.client, self.upstream = client, _Side()
        link = relay.link
        self.up = _Pipe(self, client, self.upstream, link.up, "bytes_up")
        self.down = _Pipe(self, self.upstream, client, link.down, "bytes_down")
        for side, out, into in ((client, self.up, self.down),
                                (self.upstream, self.down, self.up)):
            side.conn, side.out, side.into = self, out, into
        host, port = relay.target
        self._connect_task = self.loop.create_task(asyncio.wait_for(
            self.loop.create_connection(lambda: self.upstream, host, port),
            CONNECT_TIMEOUT_S))
        self._connect_task.add_done_callback(self._connected)

    def _connected(self, task):
        self._connect_task = None
        if task.cancelled():
            pass
        elif task.exception() is not None:
            # Refused: the client learns it when the handshake would have.
            if not self.closing:
                self.down.reset(not_before=self.ready_at)
        elif self.closing:
            _abort(self.upstream.transport, rst=True)
        else:
            self.up.schedule()
        self._maybe_finish()

    def lost(self, side):
        """side's socket is closed: by us, or by an error or reset."""
        if not self.closing:
            side.into.kill()
            other = self.upstream if side is self.client else self.client
            if other.lost or other.transport is None:
                self.abort()
            else:
                side.out.reset()
        self._maybe_finish()

    def reset(self, side):
        """Reset side (its peer was reset) and so end the connection."""
        self.closing = True
        if side.transport is not None and not side.lost:
            _abort(side.transport, rst=True)
        self.abort()

    def maybe_close(self):
        """Both directions have passed their EOF: close both sockets."""
        if self.up.done and self.down.done and not self.closing:
            self.closing = True
            for side in (self.client, self.upstream):
                if not side.lost:
                    side.transport.close()

    def abort(self, rst=False):
        self.closing = True
        for pipe in (self.up, self.down):
            pipe.kill()
        if self._connect_task is not None:
            self._connect_task.cancel()
        for side in (self.client, self.upstream):
            if side.transport is not None and not side.lost:
                _abort(side.transport, rst)
        self._maybe_finish()

    def _maybe_finish(self):
        up = self.upstream
        if (self.client.lost and self._connect_task is None
                and (up.lost or up.transport is None) and not self.finished):
            self.finished = True
            self.up.kill()
            self.down.kill()
            self.relay._finished(self)


def _abort(transport, rst):
    """Close transport now; with rst, as a TCP reset."""
    if rst:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                struct.pack("ii", 1, 0))
            except OSError:
                pass
    transport.abort()


# ---------------------------------------------------------------- the relay

class Relay:
    """Listens on listen_host:listen_port (0: any free port, see .port) and
    relays each connection to target across a simulated WAN link of
    latency_ms round trip and bandwidth bytes/s (or the given shared Link)."""

    def __init__(self, listen_port=0, target=None, latency_ms=20.0,
                 bandwidth=None, link=None, listen_host="127.0.0.1"):
        if target is None:
            raise TypeError("Relay needs target=(host, port)")
        if link is not None and bandwidth is not None:
            raise ValueError("give bandwidth or link, not both")
        self.listen_port, self.listen_host = listen_port, listen_host
        self.target = (target[0], int(target[1]))
        self.latency_ms = float(latency_ms)
        self.link = link if link is not None else Link(bandwidth)
        self.port = None
        self._loop = shared_loop()
        self._server = None
        self._conns = set()
        self._idle = None
        self._stats = {"connections": 0, "accepted": 0,
                       "bytes_up": 0, "bytes_down": 0}

    def start(self):
        _in_loop(self._open())
        return self

    def stop(self):
        if self._server is not None:
            _in_loop(self._close(), timeout=30)

    def stats(self):
        """connections: open now; accepted: since start; bytes_up (client to
        target) and bytes_down: delivered."""
        return dict(self._stats)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    async def _open(self):
        self._idle = asyncio.Event()
        self._idle.set()
        self._server = await self._loop.create_server(
            lambda: _Side(self._accepted), self.listen_host, self.listen_port,
            backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self):
        self._server.close()
        for conn in list(self._conns):
            conn.abort()
        await self._server.wait_closed()
        await asyncio.wait_for(self._idle.wait(), 10)
        self._server = None

    def _accepted(self, client):
        self._conns.add(_Conn(self, client))
        self._idle.clear()
        self._stats["accepted"] += 1
        self._stats["connections"] = len(self._conns)

    def _finished(self, conn):
        self._conns.discard(conn)
        self._stats["connections"] = len(self._conns)
        if not self._conns:
            self._idle.set()


# ---------------------------------------------------------------- command line

def parse_target(text):
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError("want HOST:PORT, got %r" % text)
    return host.strip("[]") or "127.0.0.1", int(port)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Relay TCP connections across a simulated WAN link.")
    ap.add_argument("--listen", type=int, action="append", required=True,
                    metavar="PORT", help="port to listen on (0: any); repeatable")
    ap.add_argument("--target", type=parse_target, action="append",
                    required=True, metavar="HOST:PORT",
                    help="where the matching --listen relays to")
    ap.add_argument("--latency-ms", type=float, default=20.0,
                    help="round-trip time added (default 20)")
    ap.add_argument("--mbit", type=float, default=None,
                    help="link rate each way in Mbit/s, shared by every "
                         "connection of every listener (default: unlimited)")
    ap.add_argument("--bind", default="127.0.0.1", help="listen address")
    args = ap.parse_args(argv)
    if len(args.listen) != len(args.target):
        ap.error("give one --target per --listen")
    return args


def spawn(routes, latency_ms, mbit, log_path, python=sys.executable):
    """Starts this relay in a process of its own (its own session), one
    listening port per (listen_port, "host:port") of routes (0: any free
    port), and waits until it listens. Returns (the Popen, [the ports])."""
    cmd = [python, os.path.abspath(__file__)]
    for port, target in routes:
        cmd += ["--listen", str(port), "--target", target]
    cmd += ["--latency-ms", str(latency_ms or 0)]
    if mbit:
        cmd += ["--mbit", str(mbit)]
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=out,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    line = proc.stdout.readline().decode()
    if not line.startswith("READY port="):
        proc.kill()
        proc.wait()
        raise RuntimeError("wan.py did not start: %r" % line)
    return proc, [int(p) for p in line.split("=", 1)[1].split(",")]


def main(argv=None):
    args = parse_args(argv)
    # Block the signals before the loop thread exists so that it inherits
    # the mask and only sigwait() below sees them.
    sigs = {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    link = Link(args.mbit * 1e6 / 8 if args.mbit else None)
    relays = [Relay(port, target, args.latency_ms, link=link,
                    listen_host=args.bind).start()
              for port, target in zip(args.listen, args.target)]
    print("READY port=%s" % ",".join(str(r.port) for r in relays), flush=True)
    while signal.sigwait(sigs) == signal.SIGUSR1:
        for r in relays:
            print(json.dumps(dict(r.stats(), port=r.port)), flush=True)
    for r in relays:
        r.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
