"""Prefetch of dependency pages (issue 24, prefetch_max): once larder has
answered a wheel's .metadata, it fetches the pages of the projects the
metadata's Requires-Dist names, so that the installer's next requests find
them here. One level deep, pages only (never a file, unless
prefetch_wheel_size: then each prefetched page's likeliest wheel too), none
that only an extra asks for, nothing for an offline index, at most
prefetch_max at once across the workers, counted on /metrics.

The wheels are this module's own (wheels.build_wheel): a chain pf-a ->
pf-b -> pf-c, pf-a also requiring pf-d only with the extra "x" and pf-e
under a marker larder cannot decide (kept: when in doubt, the page is
fetched); and pf-many-0..5, each requiring 30 projects of its own that the
stand-in does not have (their pages are 404s, which cost the upstream as
much as any page).
"""

import os
import re
import threading
import time

import pytest

import stack as stackmod
import wheels

JSON = "application/vnd.pypi.simple.v1+json"
MANY = 6
MANY_DEPS = 30


@pytest.fixture(scope="module")
def pf_wheels(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("pf-wheels"))
    wheels.build_wheel(d, "pf-a", "1.0",
                       ["pf_B>=1.0", 'pf-d; extra == "x"',
                        'pf-e; python_version < "3.1"'])
    wheels.build_wheel(d, "pf-b", "1.0", ["pf-c"])
    wheels.build_wheel(d, "pf-c", "1.0")
    wheels.build_wheel(d, "pf-d", "1.0")
    wheels.build_wheel(d, "pf-e", "1.0")
    for k in range(MANY):
        wheels.build_wheel(d, "pf-many-%d" % k, "1.0",
                           ["pf-dep-%d-%02d" % (k, i) for i in range(MANY_DEPS)])
    return d


def start(tmp_path, pf_wheels, **keys):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    workers = keys.pop("workers", 2)
    extra = {"prefetch_max": 4}
    extra.update(keys)
    return stackmod.Stack(str(tmp_path / "stack"), pf_wheels, workers=workers,
                          larder_extra=extra).start()


def files_of(st, project):
    r = st.get("/root/pypi/simple/%s/" % project, accept=JSON)
    assert r.status == 200, r
    return r.json()["files"]


def metadata_path(f):
    return "/root/pypi/files/" + f["url"].split("files/", 1)[1] + ".metadata"


def metric(st, name):
    m = re.search(r"(?m)^larder_%s (\d+)$" % re.escape(name),
                  st.get("/metrics").body.decode())
    assert m, name
    return int(m.group(1))


def page_gets(counters, project):
    return counters["requests"].get("GET /simple/%s/" % project, 0)


def larder_get(st, path):
    """GET path from larder itself: nginx keeps a warm .metadata
    (conf/nginx.conf) and answers it without larder, which then prefetches
    nothing; a conditional request that matches nothing passes nginx's
    cache, and larder answers it whole."""
    return st.get(path, headers={"If-None-Match": '"not-this-one"'})


def settled(st, total, timeout=20.0):
    """Waits until the prefetches have dealt with total pages (fetched or
    skipped); returns (fetched, skipped)."""
    stackmod.wait_for(lambda: metric(st, "prefetch_pages_total") +
                      metric(st, "prefetch_skipped_total") >= total, timeout)
    return metric(st, "prefetch_pages_total"), metric(st, "prefetch_skipped_total")


def file_path(f):
    return "/root/pypi/files/" + f["url"].split("files/", 1)[1]


def test_wheels_with_prefetch_wheel_size(tmp_path, pf_wheels):
    """With prefetch_wheel_size, a prefetched page's likeliest wheel is
    fetched after it: A's .metadata answered, B's and E's pages and wheels
    come from upstream before anyone asks, C's and D's do not (one level;
    D only for an extra). B's wheel asked for then is a HIT that costs the
    upstream nothing, and, stored a moment ago by the prefetch, it
    prefetches C's page and wheel as a cold wheel's request would: the
    chain goes on at the installer's pace, one level per request."""
    st = start(tmp_path, pf_wheels, prefetch_metadata="no", prefetch_wheel_size="1M")
    try:
        (fa,) = files_of(st, "pf-a")
        st.standin.reset()
        assert larder_get(st, metadata_path(fa)).status == 200
        settled(st, 2)
        assert stackmod.wait_for(lambda: metric(st, "prefetch_wheels_total") == 2, 20)
        c = st.standin.counters()
        assert sorted(c["files"]) == ["pf_b-1.0-py3-none-any.whl",
                                      "pf_e-1.0-py3-none-any.whl"], c["files"]
        assert page_gets(c, "pf-c") == 0 and page_gets(c, "pf-d") == 0, c
        (fb,) = files_of(st, "pf-b")
        r = larder_get(st, file_path(fb))
        assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
        with open(os.path.join(pf_wheels, fb["filename"]), "rb") as f:
            assert r.body == f.read()
        assert stackmod.wait_for(lambda: metric(st, "prefetch_wheels_total") == 3, 20)
        c = st.standin.counters()
        assert page_gets(c, "pf-c") == 1 and page_gets(c, "pf-d") == 0, c
        assert c["files"] == {"pf_b-1.0-py3-none-any.whl": 1,
                              "pf_c-1.0-py3-none-any.whl": 1,
                              "pf_e-1.0-py3-none-any.whl": 1}, c["files"]
    finally:
        st.stop()


def test_no_wheel_over_prefetch_wheel_size(tmp_path, pf_wheels):
    """A likely wheel bigger than prefetch_wheel_size is left for the
    installer to ask for; by default (0) no wheel is prefetched at all."""
    for size in ("100", None):
        keys = {"prefetch_metadata": "no"}
        if size:
            keys["prefetch_wheel_size"] = size
        st = start(tmp_path / ("s%s" % size), pf_wheels, **keys)
        try:
            (fa,) = files_of(st, "pf-a")
            st.standin.reset()
            assert larder_get(st, metadata_path(fa)).status == 200
            assert settled(st, 2) == (2, 0)
            time.sleep(0.5)
            assert st.standin.counters()["files"] == {}
            assert metric(st, "prefetch_wheels_total") == 0
        finally:
            st.stop()


def test_chain_depth_one(tmp_path, pf_wheels):
    """A's .metadata answered: B's and E's pages come from upstream before
    anyone asks for them, C's (B's dependency) and D's (an extra's) do not,
    no file is fetched, and no metadata of the prefetched pages either
    (prefetch_metadata on: a prefetched page hints at nothing)."""
    st = start(tmp_path, pf_wheels, prefetch_metadata="yes")
    try:
        (fa,) = files_of(st, "pf-a")
        # the page's hint fetched A's metadata; let it end first
        stackmod.wait_for(lambda: st.standin.counters()["metadata"], 10)
        st.standin.reset()
        r = st.get(metadata_path(fa))
        assert r.status == 200 and b"Requires-Dist: pf_B" in r.body
        assert settled(st, 2) == (2, 0)
        time.sleep(0.5)
        c = st.standin.counters()
        assert page_gets(c, "pf-b") == 1 and page_gets(c, "pf-e") == 1, c
        assert page_gets(c, "pf-c") == 0 and page_gets(c, "pf-d") == 0, c
        assert c["files"] == {} and c["metadata"] == {}, c
        assert metric(st, "prefetch_used_total") == 0
        # B asked for now: from the cache, and the prefetch counted as used,
        # once
        r = st.get("/root/pypi/simple/pf-b/", accept=JSON)
        assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
        assert st.get("/root/pypi/simple/pf-b/", accept=JSON).status == 200
        assert page_gets(st.standin.counters(), "pf-b") == 1
        assert metric(st, "prefetch_used_total") == 1
        # E, unasked for, is not "unused" before 10 minutes have gone
        assert metric(st, "prefetch_unused_pages") == 0
        # A's metadata again: B and E are fresh, so skipped (counted)
        assert larder_get(st, metadata_path(fa)).status == 200
        assert settled(st, 4) == (2, 2)
        assert page_gets(st.standin.counters(), "pf-e") == 1
    finally:
        st.stop()


def test_a_prefetch_keeps_no_connection_a_warm_request_would_wait_on(tmp_path, pf_wheels):
    """A cold .metadata is small, and a small file's fetch ends its answer
    early keeping the FastCGI connection; nginx reuses its latest kept
    connection first. With a prefetch to follow, that connection must go:
    a warm request sent right after answers at once, not after the
    prefetch's slow pages."""
    st = start(tmp_path, pf_wheels)
    try:
        (fa,) = files_of(st, "pf-a")
        (fc,) = files_of(st, "pf-c")
        warm = "/root/pypi/files/" + fc["url"].split("files/", 1)[1]
        assert st.get(warm).status == 200  # now in the store
        st.standin.control(delay=2.0)  # every upstream page from now on
        r = st.get(metadata_path(fa))
        assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
        t0 = time.monotonic()
        r = st.get(warm)
        took = time.monotonic() - t0
        assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
        assert took < 1.0, "a warm file waited %.2f s behind a prefetch" % took
        assert settled(st, 2, timeout=30) == (2, 0)
    finally:
        st.standin.control(delay=0)
        st.stop()


def test_pip_joins_the_prefetch(tmp_path, pf_wheels, new_venv):
    """pip installs the chain through larder on a slow upstream: each page
    is fetched from upstream once, whether pip's request for it came before,
    during or after the prefetch of it (single flight), the files are
    fetched once each, by pip, and each page is counted once: prefetched
    (and then used, or not), or skipped."""
    st = start(tmp_path, pf_wheels)
    try:
        st.standin.control(delay=0.3)
        rc, out = stackmod.pip_install(new_venv(), st.url, ["pf-a"])
        assert rc == 0, out
        c = st.standin.counters()
        for p in ("pf-a", "pf-b", "pf-c", "pf-e"):
            assert page_gets(c, p) == 1, (p, c)
        assert page_gets(c, "pf-d") == 0, c
        assert all(n == 1 for n in c["files"].values()), c
        assert sorted(c["files"]) == sorted(
            f for f in os.listdir(pf_wheels) if f.endswith(".whl") and
            f.split("-")[0] in ("pf_a", "pf_b", "pf_c")), c
        # pf-e pip never asks for: the prefetch fetched it. pf-b and pf-c
        # are each a race between pip and the prefetch its wheel set off
        # (CI's ASan build lost both): one the prefetch led is counted
        # used when pip asks (it joined or came after); one pip led is a
        # skipped prefetch (it joined pip, or found the page fresh)
        fetched, skipped = settled(st, 3)
        used = metric(st, "prefetch_used_total")
        assert (fetched, used + skipped) == (1 + used, 2), \
            (fetched, used, skipped)
    finally:
        st.stop()


def test_wheel_fetched_prefetches(tmp_path, pf_wheels):
    """A wheel fetched and verified (no .metadata asked for, as an older
    pip does) prefetches its dependencies' pages too; the same wheel from
    the store (a HIT) looks at nothing."""
    st = start(tmp_path, pf_wheels)
    try:
        (fa,) = files_of(st, "pf-a")
        st.standin.reset()
        r = st.get(metadata_path(fa)[:-len(".metadata")])
        assert r.status == 200 and r.header("X-Larder-Cache") == "MISS", r
        assert settled(st, 2) == (2, 0)
        c = st.standin.counters()
        assert page_gets(c, "pf-b") == 1 and page_gets(c, "pf-e") == 1, c
        assert page_gets(c, "pf-d") == 0, c
        assert list(c["files"].values()) == [1] and c["metadata"] == {}, c
        r = st.get(metadata_path(fa)[:-len(".metadata")])
        assert r.status == 200 and r.header("X-Larder-Cache") == "HIT", r
        time.sleep(0.5)
        assert (metric(st, "prefetch_pages_total"),
                metric(st, "prefetch_skipped_total")) == (2, 0)
    finally:
        st.stop()


def test_prefetch_max_zero_is_off(tmp_path, pf_wheels):
    st = start(tmp_path, pf_wheels, prefetch_max=0)
    try:
        (fa,) = files_of(st, "pf-a")
        st.standin.reset()
        assert st.get(metadata_path(fa)).status == 200
        time.sleep(1.5)
        c = st.standin.counters()
        assert page_gets(c, "pf-b") == 0 and page_gets(c, "pf-e") == 0, c
        assert metric(st, "prefetch_pages_total") == 0
        assert metric(st, "prefetch_skipped_total") == 0
        assert not os.path.exists(os.path.join(st.data_dir, "prefetch"))
    finally:
        st.stop()


def restart(st, **keys):
    """larder again on the same data directory and port, with keys."""
    st.larder.stop()
    extra = {"prefetch_max": 4}
    extra.update(keys)
    with open(st.larder.conf, "w") as f:
        f.write(stackmod.larder_conf(st.larder.data_dir, st.standin.port, 300, 86400,
                                     extra, "", st.standin.files_port))
    st.larder.start()


def test_offline_prefetches_nothing(tmp_path, pf_wheels):
    """With the index offline, answering A's metadata asks the upstream for
    nothing; the same larder online again prefetches B."""
    st = start(tmp_path, pf_wheels, prefetch_max=0)
    try:
        (fa,) = files_of(st, "pf-a")
        assert st.get(metadata_path(fa)).status == 200
        restart(st, offline="yes")
        st.standin.reset()
        r = larder_get(st, metadata_path(fa))
        assert r.status == 200 and r.header("X-Larder-Cache") == "HIT"
        time.sleep(1.5)
        c = st.standin.counters()
        assert c["requests"] == {} and c["files"] == {}, c
        assert metric(st, "prefetch_pages_total") == 0
        assert metric(st, "prefetch_skipped_total") == 0
        # the control: online, the same request prefetches
        restart(st)
        assert larder_get(st, metadata_path(fa)).status == 200
        assert settled(st, 2) == (2, 0)
        assert page_gets(st.standin.counters(), "pf-b") == 1
    finally:
        st.stop()


@pytest.mark.one_build("release")
def test_storm_stays_under_its_cap(tmp_path, pf_wheels):
    """Six workers answer the metadata of six projects of 30 dependencies
    each at once, on an upstream that takes 0.3 s a page: the stand-in never
    answers more than prefetch_max (2) pages at once, each answer prefetches
    16 pages at most, and what found no slot was skipped and counted."""
    st = start(tmp_path, pf_wheels, prefetch_max=2, workers=MANY)
    try:
        paths = [metadata_path(files_of(st, "pf-many-%d" % k)[0]) for k in range(MANY)]
        st.standin.reset()
        st.standin.control(delay=0.3)
        results = []

        def one(p):
            results.append(st.get(p).status)

        threads = [threading.Thread(target=one, args=(p,)) for p in paths]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [200] * MANY
        fetched, skipped = settled(st, MANY * 16, timeout=120)
        assert fetched + skipped == MANY * 16
        c = st.standin.counters()
        assert c["pages_peak"] <= 2, c["pages_peak"]
        assert fetched >= 2 and skipped >= 1, (fetched, skipped)
        asked = [k for k in c["requests"] if k.startswith("GET /simple/pf-dep-")]
        assert len(asked) == fetched
        # 16 of each project's 30, in the order its metadata names them
        assert not any(int(k.rstrip("/").rsplit("-", 1)[1]) >= 16 for k in asked), asked
        assert c["files"] == {}
    finally:
        st.stop()
