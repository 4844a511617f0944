"""What a newcomer trips on (issue 26): the small messages of the commands
and the log, the quick start's config and its `larder warm`, ... each
checked where no other file fits better."""

import os
import subprocess

import stack as stackmod


def larder(*args, cwd=None, env=None):
    """Runs the larder binary with args; returns (rc, stdout, stderr)."""
    p = subprocess.run([stackmod.larder_bin()] + list(args), capture_output=True,
                       text=True, timeout=60, cwd=cwd,
                       env=stackmod.clean_env(env or {}))
    return p.returncode, p.stdout, p.stderr


def test_unknown_command_says_so():
    rc, out, err = larder("frobnicate")
    assert rc == 2 and out == "", (rc, out)
    first = err.splitlines()[0]
    assert first == 'larder: unknown command "frobnicate"', err
    assert "usage: larder serve" in err


def test_414_is_logged_with_the_paths_first_bytes(stack):
    path = "/pypi/simple/" + "a" * 3000 + "/"
    r = stack.get(path)
    assert r.status == 414, r
    head = "/pypi/simple/" + "a" * (200 - len("/pypi/simple/")) + "..."
    line = stack.larder.find_log("GET", head, 414)
    assert line, stack.larder.log_text()[-2000:]
