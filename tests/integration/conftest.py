"""Fixtures for larder's integration tests.

    wheel_dir   (session) the default wheels, built once (wheels.py)
    dists       (session) {filename: Dist} for them: sha256, size, path, metadata
    stack       stand-in + larder + nginx, fresh for each test in its own tmp
                dir and ports, torn down even on failure. Options per test:
                    @pytest.mark.stack(cache_ttl=1, html_only=True, workers=2,
                                       larder_extra={...}, max_stale=...,
                                       unix=True, keep_conn=False)
                or indirect parametrisation:
                    @pytest.mark.parametrize("stack", [{"cache_ttl": 1}], indirect=True)
    new_venv    a function making a fresh virtualenv under the test's tmp dir

When a test fails, larder's log, nginx's error log and the stand-in's log are
attached to its report.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import stack as stackmod  # noqa: E402
import wheels  # noqa: E402

Dist = wheels.Dist


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "stack(**options): options for the stack fixture (cache_ttl, html_only, "
        "workers, larder_extra, max_stale, unix, keep_conn)")
    config.addinivalue_line(
        "markers",
        "one_build(kind): in the full suite (contrib/run-tests.sh, which sets "
        "LARDER_BUILD_KIND), run on the \"release\" or the \"asan\" build only")


def pytest_collection_modifyitems(config, items):
    """The full suite runs every test on two builds; a one_build test runs
    on the one named (storms and timing runs on release, where ASan adds
    nothing but time; hostile-input matrices on asan, where a memory error
    would show). Run alone (no LARDER_BUILD_KIND), every test runs."""
    kind = os.environ.get("LARDER_BUILD_KIND")
    if not kind:
        return
    keep, drop = [], []
    for item in items:
        m = item.get_closest_marker("one_build")
        (drop if m and m.args[0] != kind else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def wheel_dir(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("wheels"))
    wheels.build_default(d)
    return d


@pytest.fixture(scope="session")
def dists(wheel_dir):
    return wheels.load_dists(wheel_dir)


def _tail(text, n):
    lines = text.splitlines()
    return "\n".join(lines[-n:])


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed:
        return
    st = getattr(item, "funcargs", {}).get("stack")
    if not isinstance(st, stackmod.Stack):
        return
    if st.larder is not None:
        rep.sections.append(("larder log (%s)" % st.larder.log, _tail(st.larder.log_text(), 150)))
    if st.nginx is not None:
        errs = [l for l in st.nginx.error_text().splitlines()
                if "[notice]" not in l and "[info]" not in l]
        rep.sections.append(("nginx error log", "\n".join(errs[-60:])))
    try:
        with open(st.standin.log, errors="replace") as f:
            rep.sections.append(("stand-in log", _tail(f.read(), 60)))
    except OSError:
        pass


@pytest.fixture
def stack(request, tmp_path, wheel_dir):
    reason = stackmod.missing_reason()
    if reason:
        pytest.skip(reason)
    opts = {}
    marker = request.node.get_closest_marker("stack")
    if marker is not None:
        opts.update(marker.kwargs)
    opts.update(getattr(request, "param", None) or {})
    st = stackmod.Stack(str(tmp_path / "stack"), wheel_dir, **opts)
    st.start()
    try:
        yield st
    finally:
        st.stop()


@pytest.fixture
def new_venv(tmp_path):
    count = [0]

    def make(name=None):
        count[0] += 1
        path = str(tmp_path / (name or "venv%d" % count[0]))
        return stackmod.make_venv(path)

    return make
