"""The disk budget (docs/disk.md): max_size, min_free, `larder gc`.

Each test runs its own stand-in, larder and nginx (stack.Stack) with a tiny
max_size; the OCI test uses test_oci.py's registry fixtures. What is
checked about the store's size is always the sum of the sizes of the files
under DATA/blobs, as a person running du would see it.
"""

import concurrent.futures
import hashlib
import os
import re
import sqlite3
import subprocess
import threading
import time

import pytest

import stack as stackmod
import wheels
from stack import JSON_TYPE, PIP_ACCEPT, blob_file
from wheels import A11

# test_oci.py's fixtures, for the registry test (imported: pytest finds
# them in this module's namespace)
from test_oci import oci_images, upstream, oci_stack, _missing as oci_missing  # noqa: F401

KIB = 1024


# ---------------------------------------------------------------- helpers

def larder_gc(larder, *args):
    p = subprocess.run([larder.binary, "gc", "-c", larder.conf] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                       env=stackmod.clean_env())
    return p.returncode, p.stdout.decode(errors="replace")


def larder_fsck(larder):
    p = subprocess.run([larder.binary, "fsck", "-c", larder.conf],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                       env=stackmod.clean_env())
    return p.returncode, p.stdout.decode(errors="replace")


def evicted_metrics(st):
    """(blobs, bytes) evicted, as GET /metrics says."""
    r = st.get("/metrics")
    assert r.status == 200, r
    values = dict(re.findall(r"^(larder_evicted_\w+_total) (\d+)$", r.body.decode(), re.M))
    return (int(values["larder_evicted_blobs_total"]),
            int(values["larder_evicted_bytes_total"]))


def db_rows(data_dir, sql):
    con = sqlite3.connect(os.path.join(data_dir, "larder.db"), timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def file_url(st, dists, fn, route="root/pypi"):
    return "/%s/files/%s/%s" % (route, dists[fn].sha256, fn)


def page_path(project):
    return "/root/pypi/simple/%s/" % project


def build_load(outdir, n, kib):
    """n standalone projects gcload-NNN 1.0, each a wheel carrying kib KiB
    of incompressible bytes and a .metadata sibling."""
    names = []
    for i in range(n):
        name = "gcload-%03d" % i
        blob = b"".join(hashlib.sha256(b"%s-%d" % (name.encode(), j)).digest()
                        for j in range(kib * KIB // 32))
        wheels.build_wheel(outdir, name, "1.0", (), ">=3.7",
                           extra_files={"gcload_%03d/payload.bin" % i: blob})
        names.append(name)
    return names


# ---------------------------------------------------------------- the storm

MAX = 1024 * KIB
LOAD_KIB = 8


@pytest.fixture
def load_stack(tmp_path):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    wd = str(tmp_path / "wheels")
    os.makedirs(wd)
    wheels.build_default(wd)
    names = build_load(wd, 140, LOAD_KIB)
    st = stackmod.Stack(str(tmp_path / "stack"), wd, workers=4,
                        larder_extra={"max_size": "%dk" % (MAX // KIB), "gc_grace": "1"})
    st.start()
    try:
        yield st, names
    finally:
        st.stop()


@pytest.mark.one_build("release")  # a storm
def test_install_storm_stays_within_budget(load_stack, new_venv):
    """Four pip processes at a time install 140 projects of 8 KiB wheels
    (1.2 MiB with their pages and metadata, more than max_size = 1 MiB),
    ten projects per pip. Checked: every install succeeds; the sum of
    DATA/blobs, sampled every 10 ms during the storm, is never more than
    2% over max_size (the collector runs after every commit that leaves
    the store over it, so only blobs committed at the same moment by
    several workers can add to it before it acts: here 20 KiB, under the
    2% of 1 MiB); after the storm the store is at most max_size; an
    evicted file is fetched again on the next request."""
    st, names = load_stack
    venvs = [new_venv() for _ in range(4)]
    groups = [names[i:i + 10] for i in range(0, len(names), 10)]
    samples = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append(stackmod.store_bytes(st.data_dir))
            time.sleep(0.01)

    def install(i):
        venv = venvs[i % len(venvs)]
        return stackmod.pip_install(venv, st.url, groups[i])

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            results = list(ex.map(install, range(len(groups))))
    finally:
        done.set()
        sampler.join()
    failed = [out for rc, out in results if rc != 0]
    assert not failed, failed[0][-3000:]
    assert len(samples) > 50, len(samples)
    peak = max(samples)
    assert peak <= MAX * 1.02, "store peaked at %d bytes, %.2f%% of max_size" % (
        peak, 100.0 * peak / MAX)
    assert stackmod.store_bytes(st.data_dir) <= MAX
    assert re.search(r"gc: evicted \d+ blobs", st.larder.log_text()), \
        "no eviction logged"

    # the oldest wheel went first: fetched again, right bytes
    first = [fn for fn in os.listdir(st.standin.wheels)
             if fn.startswith("gcload_000-") and fn.endswith(".whl")][0]
    dists = wheels.load_dists(st.standin.wheels)
    assert not os.path.exists(blob_file(st.data_dir, dists[first].sha256))
    before = st.standin.counters()["files"].get(first, 0)
    r = st.get(file_url(st, dists, first))
    assert r.status == 200, r
    assert hashlib.sha256(r.body).hexdigest() == dists[first].sha256
    assert st.standin.counters()["files"].get(first, 0) == before + 1
    rc, out = larder_fsck(st.larder)
    assert "0 inventory rows without blob" in out, out


# ---------------------------------------------------------------- by hand

@pytest.mark.stack(cache_ttl=1, larder_extra={"gc_grace": "1"})
def test_evicted_file_and_page_come_back(stack, dists):
    """`larder gc --max-size 1k` once the page is stale and nothing was
    used for gc_grace: the file, its metadata and the page's renderings
    go (the page row with them); the next requests fetch the file again
    and render the page again (200, not 500)."""
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).status == 200
    r = stack.get(file_url(stack, dists, A11))
    assert r.status == 200, r
    # (a miss is streamed to the client as it is stored: the blob is
    # published just after the answer ends, and the page's worker may be
    # making the page's gzip'd copies meanwhile)
    assert stackmod.wait_stored(stack.data_dir, dists[A11].sha256, 5)
    time.sleep(2.5)   # stale page, past gc_grace
    before = evicted_metrics(stack)
    rc, out = larder_gc(stack.larder, "--max-size", "1k")
    assert rc == 0, out
    m = re.search(r"^evicted ([1-9]\d*) blobs", out, re.M)
    assert m, out
    # what `larder gc' evicted is counted with what workers evict
    after = evicted_metrics(stack)
    assert after[0] - before[0] == int(m.group(1)), (before, after, out)
    assert after[1] - before[1] >= dists[A11].size, (before, after)
    assert not os.path.exists(blob_file(stack.data_dir, dists[A11].sha256)), out
    assert db_rows(stack.data_dir, "SELECT count(*) FROM pages WHERE project = "
                                   "'larder-demo-a'") == [(0,)]
    assert re.search(r"^after: \d+ bytes in \d+ blobs \([\d.]+% of max_size 1024\)",
                     out, re.M), out

    r = stack.get(file_url(stack, dists, A11))
    assert r.status == 200, r
    assert hashlib.sha256(r.body).hexdigest() == dists[A11].sha256
    assert stack.standin.counters()["files"].get(A11) == 2
    for accept in (PIP_ACCEPT, "text/html"):
        r = stack.get(page_path("larder-demo-a"), accept=accept)
        assert r.status == 200, r
        assert A11 in r.body.decode()
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).header(
        "Content-Type", "").startswith(JSON_TYPE)


@pytest.mark.stack(larder_extra={"gc_grace": "1"})
def test_fresh_pages_and_recent_use_are_kept(stack, dists):
    """A fresh page's renderings stay whatever the budget; so does a file
    used within gc_grace; the file goes once gc_grace has passed."""
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).status == 200
    assert stack.get(file_url(stack, dists, A11)).status == 200
    assert stackmod.wait_stored(stack.data_dir, dists[A11].sha256, 5)
    rc, out = larder_gc(stack.larder, "--max-size", "1k")
    assert rc == 0, out
    assert os.path.exists(blob_file(stack.data_dir, dists[A11].sha256)), out
    time.sleep(2.5)
    rc, out = larder_gc(stack.larder, "--max-size", "1k")
    assert rc == 0, out
    assert not os.path.exists(blob_file(stack.data_dir, dists[A11].sha256)), out
    (json_sha, html_sha), = db_rows(stack.data_dir, "SELECT json_sha, html_sha FROM pages"
                                                    " WHERE project = 'larder-demo-a'")
    assert os.path.exists(blob_file(stack.data_dir, json_sha))
    assert os.path.exists(blob_file(stack.data_dir, html_sha))
    r = stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT)
    assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r


@pytest.mark.stack(cache_ttl=1, larder_extra={"gc_grace": "1"})
def test_dry_run_changes_nothing(stack, dists):
    """--dry-run lists what it would evict and leaves the files (every
    file of the data directory but SQLite's) and the database as they
    were."""
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).status == 200
    assert stack.get(file_url(stack, dists, A11)).status == 200
    time.sleep(2.5)
    before = (stackmod.data_listing(stack.data_dir),
              db_rows(stack.data_dir, "SELECT * FROM blobs ORDER BY sha256"),
              db_rows(stack.data_dir, "SELECT * FROM pages ORDER BY idx, project"))
    rc, out = larder_gc(stack.larder, "--dry-run", "--max-size", "1k")
    assert rc == 0, out
    assert "would evict %s " % dists[A11].sha256 in out, out
    assert re.search(r"^would evict [1-9]\d* blobs", out, re.M), out
    after = (stackmod.data_listing(stack.data_dir),
             db_rows(stack.data_dir, "SELECT * FROM blobs ORDER BY sha256"),
             db_rows(stack.data_dir, "SELECT * FROM pages ORDER BY idx, project"))
    assert after == before


def test_bad_arguments(stack):
    # the option and its value, no line number of a file nobody wrote
    for bad in ("lots", "10XB"):
        rc, out = larder_gc(stack.larder, "--max-size", bad)
        assert rc == 2, out
        assert out == ('larder gc: --max-size "%s": expected a size in bytes '
                       '(65536, 512k, 64M, 1G)\n' % bad), out
    rc, out = larder_gc(stack.larder, "--frobnicate")
    assert rc == 2 and "usage:" in out, out


def test_store_from_before_the_inventory(stack, dists):
    """A store made before the inventory (rows missing) is reconciled by
    `larder gc`: rows added for every blob, with the file's mtime; a row
    whose file is gone is dropped."""
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).status == 200
    assert stack.get(file_url(stack, dists, A11)).status == 200
    stack.larder.stop()
    files = stackmod.blobs(stack.data_dir)
    con = sqlite3.connect(os.path.join(stack.data_dir, "larder.db"))
    con.execute("DELETE FROM blobs")
    con.execute("INSERT INTO blobs VALUES (?, 5, 0)", ("f" * 64,))
    con.commit()
    con.close()
    rc, out = larder_gc(stack.larder)
    assert rc == 0, out
    assert "inventory: %d added (blobs not in it), 1 dropped (file gone)" % len(files) in out, out
    rows = db_rows(stack.data_dir, "SELECT sha256, size, used_at FROM blobs")
    assert sorted(r[0] for r in rows) == sorted(os.path.basename(p) for p in files.values())
    for sha, size, used_at in rows:
        st = os.stat(blob_file(stack.data_dir, sha))
        gz = blob_file(stack.data_dir, sha) + ".gz"  # a page's copy counts
        gz = os.path.getsize(gz) if os.path.exists(gz) else 0
        assert size == st.st_size + gz and used_at == int(st.st_mtime)
    rc, out = larder_gc(stack.larder)
    assert "inventory: 0 added (blobs not in it), 0 dropped (file gone)" in out, out


# ---------------------------------------------------------------- registry

def test_evicted_oci_blob_is_fetched_again(oci_stack, upstream):
    """An image blob evicted by `larder gc` is fetched from the registry
    again on the next GET; the manifest a tag names stays."""
    st = oci_stack(larder_extra={"gc_grace": "1"})
    base = st.nginx.base
    r = stackmod.http(base + "/v2/test/small/manifests/1.0",
                      headers={"Accept": "application/vnd.oci.image.manifest.v1+json, "
                                         "application/vnd.docker.distribution.manifest.v2+json"})
    assert r.status == 200, r
    man_sha = r.header("Docker-Content-Digest")[7:]
    digest = sorted(upstream.blobs("small"))[0]
    r = stackmod.http(base + "/v2/test/small/blobs/" + digest)
    assert r.status == 200, r
    body = r.body
    gets = st.relay.count("GET", r"/blobs/%s$" % re.escape(digest))
    time.sleep(2.5)
    rc, out = larder_gc(st.larder, "--max-size", "1k")
    assert rc == 0, out
    assert not os.path.exists(blob_file(st.larder.data_dir, digest[7:])), out
    assert os.path.exists(blob_file(st.larder.data_dir, man_sha)), out
    r = stackmod.http(base + "/v2/test/small/blobs/" + digest)
    assert r.status == 200 and r.body == body, r
    assert st.relay.count("GET", r"/blobs/%s$" % re.escape(digest)) == gets + 1


@pytest.mark.stack(larder_extra={"gc_grace": "1", "min_free": "99%"})
def test_min_free(stack, dists):
    """With no max_size but min_free = 99% (more than any test machine has
    free), a run evicts what it may: the file used more than gc_grace
    ago, not the fresh page's renderings."""
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).status == 200
    assert stack.get(file_url(stack, dists, A11)).status == 200
    time.sleep(2.5)
    rc, out = larder_gc(stack.larder)
    assert rc == 0, out
    assert "(max_size 0: no limit)" in out and "(min_free 99%)" in out, out
    assert not os.path.exists(blob_file(stack.data_dir, dists[A11].sha256)), out
    (json_sha, html_sha), = db_rows(stack.data_dir, "SELECT json_sha, html_sha FROM pages"
                                                    " WHERE project = 'larder-demo-a'")
    assert os.path.exists(blob_file(stack.data_dir, json_sha))
    r = stack.get(file_url(stack, dists, A11))
    assert r.status == 200 and hashlib.sha256(r.body).hexdigest() == dists[A11].sha256


def test_root_runs_as_the_stores_owner(stack, tmp_path):
    """`larder gc' and `larder fsck' run by root on a store that belongs to
    another user (the service's) run as that user: what they make in the
    data directory stays the service's to open."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    import pwd
    nobody = pwd.getpwnam("nobody")
    stack.larder.stop()
    for root, dirs, files in os.walk(stack.data_dir):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), nobody.pw_uid, nobody.pw_gid)
    os.chown(stack.data_dir, nobody.pw_uid, nobody.pw_gid)
    for name in ("lru.shm", "stats.shm", "gc.lock"):
        try:
            os.unlink(os.path.join(stack.data_dir, name))
        except FileNotFoundError:
            pass
    # the config must be readable by the user the command becomes
    os.chmod(os.path.dirname(stack.larder.conf), 0o755)
    os.chmod(stack.larder.conf, 0o644)
    d = stack.data_dir
    while d != "/":
        os.chmod(d, os.stat(d).st_mode | 0o005)
        d = os.path.dirname(d)
    rc, out = larder_gc(stack.larder)
    assert rc == 0, out
    rc, out = larder_fsck(stack.larder)
    assert rc in (0, 1), out
    for root, dirs, files in os.walk(stack.data_dir):
        for n in dirs + files:
            st = os.lstat(os.path.join(root, n))
            assert st.st_uid == nobody.pw_uid, (os.path.join(root, n), out)


def make_blob_files(data_dir, n):
    """n small blob files written straight into the store (no inventory
    rows), as a store from before the inventory has them."""
    made = set()
    for i in range(n):
        body = b"reconcile %d\n" % i
        sha = hashlib.sha256(body).hexdigest()
        path = blob_file(data_dir, sha)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)
        made.add(sha)
    return made


def test_reconcile_holds_the_lock_in_short_batches(stack):
    """`larder gc` reconciles a store of 50,000 blob files the inventory
    lacks without holding the write lock for the walk (issue 28, item 3):
    a write transaction started meanwhile, as a worker's, never waits more
    than a second for the lock (a worker's busy timeout is 30 s; the walk
    of a large store takes longer than that). Before, the lock was held
    for the whole walk: 1.6 s of a 1.75 s run here."""
    n = 50000
    assert stack.get(page_path("larder-demo-a"), accept=PIP_ACCEPT).status == 200
    made = make_blob_files(stack.data_dir, n)
    waits, stop = [], threading.Event()

    def writer():
        # waits as a worker's busy handler does (storage/db/db.c busy_wait:
        # tries again after 200 us, doubling to 2 ms), not as Python's
        # sqlite3 does (sleeps of up to 100 ms, which miss every gap
        # between the collector's batches)
        con = sqlite3.connect(os.path.join(stack.data_dir, "larder.db"), timeout=0,
                              isolation_level=None)
        try:
            while not stop.is_set():
                t0, step = time.monotonic(), 0.0002
                while True:
                    try:
                        con.execute("BEGIN IMMEDIATE")
                        break
                    except sqlite3.OperationalError as e:
                        if "locked" not in str(e) and "busy" not in str(e):
                            raise
                        time.sleep(step)
                        step = min(step * 2, 0.002)
                waits.append(time.monotonic() - t0)
                con.execute("ROLLBACK")
                time.sleep(0.01)
        finally:
            con.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        t0 = time.monotonic()
        rc, out = larder_gc(stack.larder)
        took = time.monotonic() - t0
    finally:
        stop.set()
        t.join()
    assert rc == 0, out
    m = re.search(r"inventory: (\d+) added", out)
    assert m and int(m.group(1)) >= n, out
    rows = {r[0] for r in db_rows(stack.data_dir, "SELECT sha256 FROM blobs")}
    assert made <= rows
    assert len(waits) > 10, (took, len(waits))
    print("gc ran %.2f s; %d write transactions, the longest wait %.3f s"
          % (took, len(waits), max(waits)))
    # well under the run's length: before, the lock was held for nearly
    # all of it. A batch is short, but one fsync or checkpoint on a
    # loaded machine under ASan took 1.1 s (of a 2.8 s run): the bound
    # is half the run, and 3 s at most. (A poller with Python's 100 ms
    # sleeps waited 1.9 s in CI: the batches came back to back and it met
    # the lock at each try. With the pause between batches a worker's
    # poller waits 8 ms at most here, 0.15 s without.)
    assert max(waits) < min(3.0, took / 2), \
        "a writer waited %.2f s (gc ran %.2f s)" % (max(waits), took)
