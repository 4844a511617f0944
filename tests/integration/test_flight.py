"""Single-flight and crashes: many readers of one miss, page bursts, and
the owner of a fetch, a follower's worker and the whole server killed
mid-download.

The worker that takes a miss owns its fetch: it downloads in its own
process and streams to its client; every other reader's worker follows the
owner's temp file. Killing the owner ends its client's transfer and leaves a
claim that the next reader takes over.

Every test runs its own stack (stand-in upstream, `larder serve`, nginx; see
conftest.py) over a wheel set that adds one large, incompressible wheel
(larder-demo-big, BIG_MB MiB) to the default one. The stand-in is throttled
with control(rate=...) so that one upstream transfer of the big wheel takes
about TRANSFER seconds: long enough to join a flight, or to kill something
in the middle of it.

What "broken" means here: the client can tell it did not get the file (an
error status, or a body shorter than its Content-Length, or a reset). What
must never happen: a 200 with a complete-looking body of the wrong bytes.
"""

import hashlib
import json
import os
import signal
import time
from urllib.parse import urljoin, urlsplit

import pytest

import flighthelp as fh
import stack as stackmod
import wheels
from stack import PIP_ACCEPT, JSON_TYPE

BIG_MB = 24
BIG = "larder_demo_big-1.0-py3-none-any.whl"
BIG_PROJECT = "larder-demo-big"
TRANSFER = 3.0          # seconds one throttled upstream transfer of BIG takes

from wheels import A10, A11, C10, C20, C20_SDIST  # noqa: E402,F401


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def wheel_dir(tmp_path_factory):
    """Overrides conftest's wheel_dir for this module: the default set plus
    the big wheel (conftest's stack fixture serves whatever this returns)."""
    d = str(tmp_path_factory.mktemp("wheels-flight"))
    wheels.build_default(d)
    wheels.build_big(d, BIG_MB)
    return d


class Dist:
    def __init__(self, path):
        self.filename = os.path.basename(path)
        self.path = path
        self.size = os.path.getsize(path)
        self.sha256 = stackmod.sha256_file(path)
        self.metadata = None
        if os.path.exists(path + ".metadata"):
            with open(path + ".metadata", "rb") as f:
                self.metadata = f.read()


@pytest.fixture(scope="session")
def fdists(wheel_dir):
    """{filename: Dist} of this module's wheel set."""
    return {fn: Dist(os.path.join(wheel_dir, fn)) for fn in sorted(os.listdir(wheel_dir))
            if fn.endswith((".whl", ".tar.gz"))}


@pytest.fixture(autouse=True)
def _no_stray_fetchers(stack):
    """After each test, kill whatever still owns a fetch for this test's
    data dir (nothing should: owners are workers of the stack)."""
    yield
    fh.kill_fetchers(stack.data_dir)


# ---------------------------------------------------------------- helpers

def page_path(project, route="root/pypi"):
    return "/%s/simple/%s/" % (route, project)


def file_url(st, project, filename, sha256=None, route="root/pypi"):
    """Fetches larder's JSON page for project (caching it) and returns the
    absolute URL it gives for filename; checks the sha256 the page
    advertises for it when one is given."""
    r = st.get(page_path(project, route), accept=PIP_ACCEPT)
    assert r.status == 200, r
    doc = r.json()
    for f in doc["files"]:
        if f["filename"] == filename:
            if sha256 is not None:
                assert f["hashes"] == {"sha256": sha256}, f
            return urljoin(st.base + page_path(project, route), f["url"])
    raise AssertionError("%s not on %s's page" % (filename, project))


def throttle(st, d, seconds=TRANSFER):
    """Throttles the stand-in so one transfer of d takes about seconds."""
    rate = d.size / seconds
    st.standin.control(rate=rate)
    return rate


def upstream_gets(st, filename):
    return st.standin.counters()["files"].get(filename, 0)


def assert_not_wrong(r, d):
    """r may be the right file or a visibly broken transfer, never a whole
    body of other bytes."""
    if r.status == 200 and r.complete:
        assert r.nbytes == d.size and r.sha256 == d.sha256, \
            "a complete-looking 200 with the wrong bytes: %r" % r
    if r.status == 200 and r.length is not None:
        assert r.length == d.size, r
        assert r.nbytes <= r.length, r


def assert_broken(r, d):
    """The client can tell it did not get the file."""
    assert not (r.status == 200 and r.complete), \
        "expected a broken transfer, got a complete 200: %r (right bytes: %s)" % (
            r, r.sha256 == d.sha256)
    if r.status == 200:
        assert r.length == d.size, r
        assert r.nbytes < r.length, r


def assert_correct(r, d):
    assert r.status == 200 and r.complete, r
    assert r.nbytes == d.size and r.sha256 == d.sha256, r


def owner_and_followers(st, d, n):
    """Once n workers read d's temp file: the pid of the one that owns the
    fetch, and the others'."""
    key = "blob:" + d.sha256
    tailing = fh.wait_for(lambda: fh.tailing_workers(st.larder.proc.pid, st.data_dir)
                          if len(fh.tailing_workers(st.larder.proc.pid, st.data_dir)) == n
                          else None, 10)
    assert tailing, fh.tailing_workers(st.larder.proc.pid, st.data_dir)
    owners = fh.fetcher_pids(st.data_dir, key)
    assert len(owners) == 1 and owners[0] in tailing, (owners, tailing)
    return owners[0], [p for p in tailing if p != owners[0]]


def get_file(url, timeout=30):
    """One streamed GET, as a finished Reader."""
    return fh.burst([url], timeout=timeout)[0]


def assert_clean_store(st, expect_blob=None, absent_blob=None, timeout=15.0):
    """Once things settle: no flights row, no temp file, every blob hashes
    to its name; expect_blob is there, absent_blob is not."""
    rows, parts = fh.wait_settled(st.data_dir, timeout)
    assert rows == [], "flights rows left: %r" % rows
    # Only a temp file somebody still holds locked may stay (a live fetch).
    assert [p for p, locked in parts.items() if not locked] == [], \
        "unlocked temp files left: %r" % parts
    assert stackmod.bad_blobs(st.data_dir) == []
    names = {os.path.basename(p) for p in stackmod.blobs(st.data_dir).values()}
    if expect_blob:
        assert expect_blob in names, "blob %s not committed" % expect_blob
    if absent_blob:
        assert absent_blob not in names, "blob %s was committed" % absent_blob


# ---------------------------------------------------------------- 1. the burst

@pytest.mark.stack(workers=6)
def test_four_readers_one_upstream_fetch(stack, fdists):
    d = fdists[BIG]
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    assert urlsplit(url).path == "/root/pypi/files/%s/%s" % (d.sha256, BIG)
    rate = throttle(stack, d)
    upstream_time = d.size / rate

    readers = fh.burst([url] * 4, timeout=60)

    for r in readers:
        assert_correct(r, d)
        assert r.header("ETag") == '"%s"' % d.sha256, dict(r.resp_headers)
    assert len({r.sha256 for r in readers}) == 1
    assert upstream_gets(stack, BIG) == 1, stack.standin.counters()
    firsts = [r.t_first for r in readers]
    assert max(firsts) < upstream_time / 2, \
        "first bytes at %s s; the upstream transfer takes %.1f s" % (
            ["%.2f" % t for t in firsts], upstream_time)
    # They finish together, in about the time one download takes.
    ends = [r.t_end for r in readers]
    assert max(ends) < upstream_time * 1.5 + 1.0, (ends, upstream_time)
    assert max(ends) - min(ends) < 1.0, ends
    assert_clean_store(stack, expect_blob=d.sha256)

    # Warm: from the store, upstream not asked again.
    stack.standin.control(rate=None)
    assert_correct(get_file(url), d)
    assert upstream_gets(stack, BIG) == 1


# ---------------------------------------------------------------- 2. pages

# As many workers as requests: all ten are in larder at once (more would
# queue in the listen backlog and arrive after the refresh).
@pytest.mark.stack(workers=10)
def test_page_burst_one_upstream_request(stack):
    # A slow upstream page, so that every request arrives while it is fetched.
    stack.standin.control(delay=0.5)
    url = stack.base + page_path("larder-demo-a")
    readers = fh.burst([url] * 10, timeout=30, headers={"Accept": PIP_ACCEPT}, keep=True)
    for r in readers:
        assert r.status == 200 and r.complete, r
        assert r.header("Content-Type", "").startswith(JSON_TYPE), r
    assert len({r.body for r in readers}) == 1
    assert json.loads(readers[0].body)["name"] == "larder-demo-a"
    c = stack.standin.counters()
    assert c["requests"].get("GET /simple/larder-demo-a/") == 1, c
    assert_clean_store(stack)


@pytest.mark.stack(workers=6)
def test_page_waiters_wake_when_the_fetch_ends(stack):
    """Requests for a page another worker is fetching are answered when
    that fetch ends, not at the waiter's next look: waiters polled the
    claim at 2, 6, 14, 30, 62 ms and every 50 ms after, and came a median
    25 ms after the owner (20 to 60 ms here). Five cold pages, each
    fetched once for three readers, the upstream taking 65, 115, ... 265
    ms, so that each fetch ends just after a look of the old polling (at
    62, 112, ... 262 ms) and its waiters, polling, came 30 to 50 ms late;
    the median gap between the first reader done and the last must be
    under 25 ms (the waiters' own work, a few ms, and a loaded machine's
    scheduling: CI runs two passes at once)."""
    gaps = []
    projects = ["larder-demo-a", "larder-demo-b", "larder-demo-c",
                "larder-demo-nometa", "larder-demo-big"]
    for i, project in enumerate(projects):
        stack.standin.control(delay=0.065 + 0.05 * i)
        url = stack.base + page_path(project)
        readers = fh.burst([url] * 3, timeout=30, headers={"Accept": PIP_ACCEPT}, keep=True)
        for r in readers:
            assert r.status == 200 and r.complete, r
        c = stack.standin.counters()
        assert c["requests"].get("GET /simple/%s/" % project) == 1, c
        ends = sorted(r.t_end for r in readers)
        gaps.append(ends[-1] - ends[0])
    gaps.sort()
    assert gaps[len(gaps) // 2] < 0.025, \
        "the waiters came %s ms after the owner" % ["%.0f" % (g * 1000) for g in gaps]


@pytest.mark.stack(workers=10, cache_ttl=1)
def test_stale_page_burst_one_upstream_request(stack):
    url = stack.base + page_path("larder-demo-a")
    r = stackmod.http(url, headers={"Accept": PIP_ACCEPT})
    assert r.status == 200, r
    time.sleep(2)
    stack.standin.reset()
    stack.standin.control(delay=0.5)

    # Start at .7 s past a second (larder's clock counts whole seconds), so
    # the refresh ends in the next second and the page it leaves, with its
    # one-second TTL, is stale again when the waiters look: they must take
    # it anyway rather than refresh once more.
    time.sleep((0.7 - time.time() % 1.0) % 1.0)
    readers = fh.burst([url] * 10, timeout=30, headers={"Accept": PIP_ACCEPT}, keep=True)
    for x in readers:
        assert x.status == 200 and x.complete, x
    assert len({x.body for x in readers}) == 1
    assert readers[0].body == r.body
    c = stack.standin.counters()
    assert c["requests"].get("GET /simple/larder-demo-a/") == 1, c
    assert c["conditional"] == 1, c
    assert_clean_store(stack)


# ---------------------------------------------------------------- 3. fetcher killed

@pytest.mark.stack(workers=4)
def test_fetcher_killed_mid_download(stack, fdists):
    d = fdists[BIG]
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    throttle(stack, d)
    readers = fh.start_readers([url] * 2, timeout=60, mark=d.size // 5)
    assert readers[0].progress.wait(15), readers
    pids = fh.fetcher_pids(stack.data_dir, "blob:" + d.sha256)
    assert len(pids) == 1, "fetchers: %r" % pids
    # The fetch that takes over goes at full speed.
    stack.standin.control(rate=None)
    fh.kill(pids[0])

    fh.join_all(readers, 60)
    for r in readers:
        assert r.nbytes >= 1, r
        assert_not_wrong(r, d)

    t = time.monotonic()
    r = get_file(url, timeout=15)
    took = time.monotonic() - t
    assert_correct(r, d)
    assert took < 10, "the request after the crash took %.1f s" % took
    assert_clean_store(stack, expect_blob=d.sha256)
    # The crash costs at most one more upstream fetch.
    assert upstream_gets(stack, BIG) <= 2, stack.standin.counters()
    assert not fh.fetcher_pids(stack.data_dir)


@pytest.mark.stack(workers=2)
def test_fetcher_killed_after_bad_bytes(stack, fdists):
    """The dead owner's upstream had sent wrong bytes, which the follower
    passed on (they are only checked at the end). The fetch the follower
    takes over gets good bytes and commits them; it must not append their
    rest to the bad start it already sent, so its client sees a broken
    transfer, not a complete 200 of wrong bytes."""
    d = fdists[BIG]
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    throttle(stack, d)
    # The stand-in flips 16 bytes at size // 2.
    stack.standin.control(corrupt=[BIG])
    readers = fh.start_readers([url] * 2, timeout=60, mark=d.size // 2 + (1 << 20))
    for r in readers:
        assert r.progress.wait(15), readers
    owner, followers = owner_and_followers(stack, d, 2)
    stack.standin.control(corrupt=[], rate=None)
    fh.kill(owner)

    fh.join_all(readers, 30)
    for r in readers:
        assert_broken(r, d)
        assert r.t_end < TRANSFER + 5, r

    r = get_file(url, timeout=15)
    assert_correct(r, d)
    assert_clean_store(stack, expect_blob=d.sha256)
    assert upstream_gets(stack, BIG) == 2, stack.standin.counters()


@pytest.mark.parametrize("bad_bytes,restart", [
    (False, "running"), (False, "finished"), (True, "finished")],
    ids=["follows-running-restart", "takes-committed-blob", "bad-bytes-sent"])
@pytest.mark.stack(workers=3)
def test_late_tailer_after_a_restart(stack, fdists, bad_bytes, restart):
    """The owner and two followers; the owner dies while one follower is
    stopped (SIGSTOP), so the other restarts the fetch first. When the late
    one wakes, the row names another temp file (restart="running": it
    follows that fetch), or the blob is already committed ("finished": it
    sends the rest from the blob). Either way it may only complete when the
    new bytes start with the ones it already sent: with bad_bytes, the dead
    owner had passed on wrong bytes (the stand-in flips 16 bytes at
    size // 2), and every client must see a broken transfer."""
    d = fdists[BIG]
    key = "blob:" + d.sha256
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    throttle(stack, d)
    if bad_bytes:
        stack.standin.control(corrupt=[BIG])
    mark = d.size // 2 + (1 << 20) if bad_bytes else d.size // 5
    readers = fh.start_readers([url] * 3, timeout=60, mark=mark)
    for r in readers:
        assert r.progress.wait(15), readers
    fetcher, followers = owner_and_followers(stack, d, 3)
    (old_row,) = fh.flights(stack.data_dir)
    late = followers[1]
    os.kill(late, signal.SIGSTOP)
    try:
        stack.standin.control(corrupt=[])
        if restart == "finished":
            stack.standin.control(rate=None)
        fh.kill(fetcher)
        # The other tailer takes over: a new row, a new temp file...
        new = fh.wait_for(lambda: [r for r in fh.flights(stack.data_dir)
                                   if r[1] != old_row[1]], 10)
        assert new or os.path.exists(fh.blob_file(stack.data_dir, d.sha256)), \
            fh.flights(stack.data_dir)
        if restart == "finished":
            # ... and commits the blob before the late one looks.
            assert stackmod.wait_stored(stack.data_dir, d.sha256, 15)
    finally:
        os.kill(late, signal.SIGCONT)
    fh.join_all(readers, 30)
    # The owner's client went with the owner; the followers' clients are
    # finished by the fetch that took over, unless it brought other bytes.
    broken = [r for r in readers if not (r.status == 200 and r.complete)]
    for r in readers:
        if r in broken:
            assert_broken(r, d)
        else:
            assert_correct(r, d)
    assert len(broken) == (3 if bad_bytes else 1), readers
    assert_clean_store(stack, expect_blob=d.sha256)
    assert upstream_gets(stack, BIG) == 2, stack.standin.counters()
    r = get_file(url)
    assert_correct(r, d)


# ---------------------------------------------------------------- 4. worker killed

@pytest.mark.stack(workers=2)
def test_worker_killed_mid_response(stack, fdists):
    """A follower's worker killed: its client learns at once, the owner goes
    on and finishes its own client, and nothing is fetched twice."""
    d = fdists[BIG]
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    throttle(stack, d)
    sup = stack.larder.proc.pid
    readers = fh.start_readers([url] * 2, timeout=60, mark=d.size // 10)
    for r in readers:
        assert r.progress.wait(15), readers
    owner, (follower,) = owner_and_followers(stack, d, 2)
    killed_at = time.monotonic()
    fh.kill(follower)

    fh.join_all(readers, 30)
    broken = [r for r in readers if not (r.status == 200 and r.complete)]
    assert len(broken) == 1, readers
    assert_broken(broken[0], d)
    assert broken[0].t0 + broken[0].t_end - killed_at < 5, \
        "the client learnt of the dead worker after %.1f s" % (
            broken[0].t0 + broken[0].t_end - killed_at)
    (done,) = [r for r in readers if r is not broken[0]]
    assert_correct(done, d)
    assert stackmod.wait_stored(stack.data_dir, d.sha256, 10)
    assert upstream_gets(stack, BIG) == 1, stack.standin.counters()
    assert_clean_store(stack, expect_blob=d.sha256)

    # The supervisor replaced the worker, and the next request is a hit.
    assert fh.wait_for(lambda: len(fh.children(sup)) >= 2 and follower not in
                       fh.children(sup), 10), fh.children(sup)
    r = stackmod.http(url)
    assert r.status == 200 and r.complete, r
    assert hashlib.sha256(r.body).hexdigest() == d.sha256
    assert r.header("X-Larder-Cache") == "HIT", dict(r.headers)
    assert upstream_gets(stack, BIG) == 1


@pytest.mark.stack(workers=3)
def test_worker_killed_mid_page_refresh(stack):
    """A page is refreshed by the worker that claimed it, in its own
    process. Killed in the middle, it leaves a row whose lock is free: the
    request waiting on it takes over at once, instead of waiting out the
    flight."""
    stack.standin.control(delay=3)
    url = stack.base + page_path("larder-demo-a")
    key = "page:pypi:larder-demo-a"
    (first,) = fh.start_readers([url], timeout=30, headers={"Accept": PIP_ACCEPT})
    rows = fh.wait_for(lambda: [r for r in fh.flights(stack.data_dir) if r[0] == key], 5)
    assert rows, fh.flights(stack.data_dir)
    owner = [p for p in fh.children(stack.larder.proc.pid)
             if rows[0][1] in fh.open_parts(p, stack.data_dir)]
    assert len(owner) == 1, (rows, owner)
    (waiter,) = fh.start_readers([url], timeout=30, headers={"Accept": PIP_ACCEPT},
                                 keep=True)
    time.sleep(0.3)  # the waiter is waiting on the flight
    stack.standin.control(delay=0)
    killed_at = time.monotonic()
    fh.kill(owner[0])

    fh.join_all([first, waiter], 20)
    assert first.status == 502 or not first.complete, first
    assert waiter.status == 200 and waiter.complete, waiter
    assert json.loads(waiter.body)["name"] == "larder-demo-a"
    assert waiter.t0 + waiter.t_end - killed_at < 3, waiter
    rows, parts = fh.wait_settled(stack.data_dir, 5)
    assert rows == [] and parts == {}, (rows, parts)
    c = stack.standin.counters()
    assert c["requests"].get("GET /simple/larder-demo-a/") == 2, c


# ---------------------------------------------------------------- 5. hash mismatch

@pytest.mark.stack(workers=6)
def test_hash_mismatch_during_burst(stack, fdists):
    d = fdists[BIG]
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    throttle(stack, d, seconds=2.0)
    stack.standin.control(corrupt=[BIG])

    readers = fh.burst([url] * 4, timeout=60)
    for r in readers:
        assert_broken(r, d)
        # they stop when the fetch fails, not at some timeout
        assert r.t_end < 2.0 * 1.5 + 3, r
    assert upstream_gets(stack, BIG) == 1, stack.standin.counters()
    assert "sha256 mismatch" in stack.larder.log_text()
    assert_clean_store(stack, absent_blob=d.sha256)

    stack.standin.control(corrupt=[], rate=None)
    r = get_file(url)
    assert_correct(r, d)
    assert_clean_store(stack, expect_blob=d.sha256)
    assert upstream_gets(stack, BIG) == 2


# ---------------------------------------------------------------- 6. server killed

@pytest.mark.parametrize("how", ["group", "supervisor"])
@pytest.mark.stack(workers=2)
def test_server_killed_and_restarted(stack, fdists, how):
    """The whole server killed (its process group, or the supervisor alone:
    the workers go with it) mid-download: the owner's fetch dies with it,
    and the restarted server's first worker sweeps what it left."""
    d = fdists[BIG]
    key = "blob:" + d.sha256
    url = file_url(stack, BIG_PROJECT, BIG, d.sha256)
    throttle(stack, d)
    (reader,) = fh.start_readers([url], timeout=60, mark=d.size // 10)
    assert reader.progress.wait(15), reader
    fetchers = fh.fetcher_pids(stack.data_dir, key)
    assert len(fetchers) == 1, fetchers

    lar = stack.larder
    if how == "group":
        os.killpg(lar.proc.pid, signal.SIGKILL)
    else:
        os.kill(lar.proc.pid, signal.SIGKILL)
    lar.proc.wait(10)
    assert fh.wait_for(lambda: not fh.alive(fetchers[0]), 5), \
        "the owning worker outlived its supervisor"
    stack.standin.control(rate=None)
    # What the crash left: a row whose temp file nobody locks.
    rows = fh.flights(stack.data_dir)
    assert [r[0] for r in rows] == [key], rows
    assert fh.is_locked(rows[0][1]) is False, rows

    fh.join_all([reader], 30)
    assert_broken(reader, d)

    lar.start()
    # The first worker up sweeps: the dead owner's row and temp file go
    # before anyone asks for the file.
    rows, parts = fh.wait_settled(stack.data_dir, 5)
    assert rows == [] and parts == {}, (rows, parts)

    t = time.monotonic()
    r = get_file(url, timeout=30)
    took = time.monotonic() - t
    assert_correct(r, d)
    assert took < TRANSFER + 5, took
    assert_clean_store(stack, expect_blob=d.sha256)
    assert upstream_gets(stack, BIG) == 2, stack.standin.counters()


# ---------------------------------------------------------------- contention

@pytest.mark.stack(workers=2)
def test_no_5xx_under_contention(stack, fdists):
    # Pages of a and c are known, so their files can be asked for; the
    # other projects' pages are misses too.
    urls = {fn: file_url(stack, proj, fn)
            for proj, fns in (("larder-demo-a", (A10, A11)),
                              ("larder-demo-c", (C10, C20, C20_SDIST)))
            for fn in fns}
    stack.standin.reset()
    stack.standin.control(delay=0.3)
    want = []
    for proj in ("larder-demo-b", "larder-demo-nometa", BIG_PROJECT):
        for accept in (PIP_ACCEPT, "text/html"):
            want.append((stack.base + page_path(proj), accept, None))
    for fn in (A10, A11, C10, C20, C20_SDIST):
        want += [(urls[fn], None, fn)] * 2
    for fn in (A10, A11):
        want += [(urls[fn] + ".metadata", None, fn + ".metadata")]
    want.append((stack.base + "/root/pypi/simple/", PIP_ACCEPT, None))
    want.append((stack.base + page_path("larder-demo-b"), PIP_ACCEPT, None))
    assert len(want) == 20

    readers = fh.join_all(fh.start_readers(
        [u for u, _, _ in want], timeout=60, keep=True,
        headers=[{"Accept": a} if a else {} for _, a, _ in want]), 90)

    bad = [r for r in readers if r.status != 200 or not r.complete]
    assert not bad, bad
    for (u, accept, what), r in zip(want, readers):
        if what is None:
            continue
        if what.endswith(".metadata"):
            assert r.body == fdists[what[:-len(".metadata")]].metadata, u
        else:
            assert hashlib.sha256(r.body).hexdigest() == fdists[what].sha256, u
    c = stack.standin.counters()
    for fn in (A10, A11, C10, C20, C20_SDIST):
        assert c["files"].get(fn) == 1, c
    for proj in ("larder-demo-b", "larder-demo-nometa", BIG_PROJECT):
        # JSON and HTML are both rendered from one upstream fetch
        assert c["requests"].get("GET /simple/%s/" % proj) == 1, c
    assert_clean_store(stack)
