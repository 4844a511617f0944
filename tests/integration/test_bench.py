"""The benchmark harness, as CI and a fresh clone run it (defect 18 of issue
8): it measures the larder binary it is given, wherever it is started, and
says so when a party is missing instead of crashing.
"""

import json
import os
import subprocess

import pytest

import stack as stackmod

# runs the benchmark: nothing for ASan to find that the others miss
pytestmark = pytest.mark.one_build("release")

BENCH = os.path.join(stackmod.REPO, "contrib", "bench", "bench.py")


def _run(tmp_path, *args):
    """bench.py --smoke run from an empty directory with no $LARDER_BIN,
    as on a fresh clone; returns (exit status, stderr, report or None)."""
    env = {k: v for k, v in stackmod.clean_env().items() if k != "LARDER_BIN"}
    out = str(tmp_path / "report.json")
    p = subprocess.run([stackmod.PYTHON, BENCH, "--smoke", "--json", out,
                        "--work", str(tmp_path / "work")] + list(args),
                       cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=900)
    report = None
    if os.path.exists(out):
        with open(out) as f:
            report = json.load(f)
    return p.returncode, p.stderr.decode(errors="replace"), report


def _missing(reason):
    if reason:
        pytest.skip(reason)


def test_bench_measures_the_binary_it_is_given(tmp_path):
    _missing(stackmod.missing_reason())
    rc, err, report = _run(tmp_path, "--larder", stackmod.larder_bin(),
                           "--parties", "nginx-static,larder-nginx",
                           "--workloads", "swarm")
    assert rc == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    parties = {p["name"]: p for p in report["parties"]}
    assert parties["larder-nginx"]["present"], parties["larder-nginx"]
    assert any(r["party"] == "larder-nginx"
               for w in report["workloads"] for r in w["results"]), report["workloads"]


def test_bench_says_so_when_no_cache_is_there(tmp_path):
    _missing(stackmod.missing_reason())
    rc, err, report = _run(tmp_path, "--larder", stackmod.larder_bin(),
                           "--parties", "nginx-static", "--workloads", "swarm")
    assert "Traceback" not in err, err[-3000:]
    assert rc == 0, err[-3000:]
    assert report is not None
