"""larder run as a service: socket activation as systemd does it, the
systemd units, `larder serve --user` dropping root, and SIGHUP resizing the
pool.

systemd cannot run here (it is not PID 1 in a container), so the socket
is passed the way systemd passes it: a launcher binds it, forks, puts it on
fd 3, sets LISTEN_PID to its own pid and LISTEN_FDS=1, and execs larder.
"""

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

import flighthelp as fh
import frontends
import stack as stackmod
from wheels import A11

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# fork (Popen), then in the child: the socket on fd 3, the variables
# systemd sets, exec. argv: FD PID_MODE LISTEN_FDS BINARY ARGS...
LAUNCHER = r"""
import os, sys
fd, pid_mode, nfds = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
pid = os.getpid() if pid_mode == "self" else os.getppid()
os.environ["LISTEN_PID"] = str(pid)
os.environ["LISTEN_FDS"] = nfds
os.environ["LISTEN_FDNAMES"] = "larder.socket"
os.execv(sys.argv[4], sys.argv[4:])
"""


def unix_listener(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o660)
    s.listen(128)
    return s


def activated(larder, sock, pid_mode="self", nfds="1", args=(), timeout=15):
    """Starts larder (a stack.Larder, not started) under the launcher with
    sock on fd 3; waits for its "serving on" log line unless it exits."""
    cmd = [sys.executable, "-c", LAUNCHER, str(sock.fileno()), pid_mode, nfds,
           larder.binary, "serve", "-c", larder.conf] + list(args)
    cmd += stackmod.serve_user_args(larder.binary)
    out = open(larder.log, "ab")
    try:
        larder.proc = subprocess.Popen(cmd, stdout=out, stderr=out,
                                       stdin=subprocess.DEVNULL, cwd=larder.dir,
                                       env=stackmod.clean_env(),
                                       pass_fds=(sock.fileno(),),
                                       start_new_session=True)
    finally:
        out.close()
    deadline = time.monotonic() + timeout
    while larder.proc.poll() is None and time.monotonic() < deadline:
        if "serving on" in larder.log_text():
            return larder
        time.sleep(0.05)
    return larder


@pytest.fixture
def upstream(tmp_path, wheel_dir):
    s = stackmod.Standin(wheel_dir, str(tmp_path / "standin"))
    s.start()
    yield s
    s.stop()


def pieces_for(tmp_path, upstream, **kw):
    return stackmod.Larder(str(tmp_path / "larder"), upstream.port,
                           files_port=upstream.files_port, **kw)


# ------------------------------------------------------- socket activation

def test_socket_activation_serves_the_socket_systemd_passes(tmp_path, upstream):
    """Without --listen, larder serves fd 3 when LISTEN_PID is its pid and
    LISTEN_FDS is 1; a request through nginx on that socket works, and the
    socket file stays (it is systemd's)."""
    larder = pieces_for(tmp_path, upstream)
    path = os.path.join(larder.dir, "activated.sock")
    sock = unix_listener(path)
    nginx = None
    try:
        activated(larder, sock, args=["--workers", "2"])
        sock.close()  # only larder holds it now, as with systemd
        assert larder.running, larder.log_text()
        assert "serving on the socket systemd passed" in larder.log_text()
        nginx = stackmod.Nginx(str(tmp_path / "nginx"), "unix:" + path, larder.data_dir)
        nginx.start()
        r = stackmod.http(nginx.base + "/+health")
        assert r.status == 200, r
        r = stackmod.http(nginx.base + "/root/pypi/simple/larder-demo-a/",
                          headers={"Accept": stackmod.JSON_TYPE})
        assert r.status == 200, r
        assert any(f["filename"] == A11 for f in r.json()["files"])
        assert fh.children(larder.proc.pid), "no workers"
    finally:
        stackmod.stop_all(nginx, larder)
    # the socket path was systemd's (here: the launcher's) to remove
    assert os.path.exists(path)


def test_socket_activation_ignores_another_process_s_socket(tmp_path, upstream):
    """LISTEN_PID naming another process (a parent's variables leaking
    through) is not for larder: with no --listen it stops with a reason,
    and with --listen it serves its own socket, not fd 3."""
    larder = pieces_for(tmp_path, upstream)
    path = os.path.join(larder.dir, "other.sock")
    sock = unix_listener(path)
    try:
        activated(larder, sock, pid_mode="parent")
        assert larder.proc.wait(10) == 2
        assert "no --listen, and no socket from systemd" in larder.log_text()
        own = os.path.join(larder.dir, "own.sock")
        activated(larder, sock, pid_mode="self", args=["--listen", "unix:" + own])
        assert larder.running, larder.log_text()
        assert "serving on unix:%s" % own in larder.log_text()
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(own)
    finally:
        stackmod.stop_all(larder)
        sock.close()


def test_socket_activation_wants_exactly_one_socket(tmp_path, upstream):
    """LISTEN_FDS=2 (two ListenStream= lines) is refused by name."""
    larder = pieces_for(tmp_path, upstream)
    sock = unix_listener(os.path.join(larder.dir, "two.sock"))
    try:
        activated(larder, sock, nfds="2")
        assert larder.proc.wait(10) == 1
        assert "LISTEN_FDS=2: larder takes exactly one socket" in larder.log_text()
    finally:
        stackmod.stop_all(larder)
        sock.close()


# ------------------------------------------------------------- the units

def units(tmp_path, binary):
    """contrib/larder.{service,socket}.in made into units for binary."""
    out = {}
    for name in ("larder.service", "larder.socket"):
        with open(os.path.join(REPO, "contrib", name + ".in")) as f:
            text = f.read()
        text = (text.replace("@sbindir@", os.path.dirname(os.path.abspath(binary)))
                .replace("@sysconfdir@", "/etc").replace("@localstatedir@", "/var"))
        out[name] = tmp_path / name
        out[name].write_text(text)
    return out


def test_systemd_units_verify(tmp_path):
    """systemd-analyze verify finds nothing wrong in the units; the socket
    is the one the docs name, reachable by the web server's group, and the
    service takes it (no --listen) and is sandboxed."""
    made = units(tmp_path, stackmod.larder_bin())
    service = made["larder.service"].read_text()
    sock = made["larder.socket"].read_text()
    assert "ListenStream=/run/larder/larder.sock" in sock
    assert "SocketMode=0660" in sock and "SocketGroup=www-data" in sock
    start = re.search(r"^ExecStart=(.*)$", service, re.M).group(1)
    assert "--listen" not in start and " serve " in start
    for directive in ("ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
                      "PrivateDevices=yes", "NoNewPrivileges=yes",
                      "RestrictAddressFamilies=", "SystemCallFilter=@system-service",
                      "CapabilityBoundingSet=", "ExecReload=/bin/kill -HUP $MAINPID"):
        assert directive in service, directive
    tool = shutil.which("systemd-analyze")
    if not tool:
        pytest.skip("systemd-analyze not installed (Debian package systemd)")
    r = subprocess.run([tool, "verify", "--man=no", str(made["larder.socket"]),
                        str(made["larder.service"])],
                       capture_output=True, text=True, timeout=60)
    # it exits 0 even on an unknown key or a bad value, which it only
    # prints: any line is a complaint
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr


# ------------------------------------------------------------- --user

@pytest.fixture
def system_user():
    """A system user made for the test (useradd), removed after."""
    if os.geteuid() != 0:
        pytest.skip("needs root: dropping privileges is tested as root")
    if not shutil.which("useradd"):
        pytest.skip("useradd not installed (Debian package passwd)")
    name = "lt%s" % uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                    "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False)


@pytest.fixture
def reachable():
    """A directory other users can reach (pytest's tmp_path is root's,
    0700), removed after."""
    d = frontends.new_workdir(prefix="larder-user-")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ids_of(pid):
    ids = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid", "Groups", "CapEff", "CapPrm"):
                ids[key] = value.split()
    return ids


def serve_cmd(larder, *args):
    return [larder.binary, "serve", "-c", larder.conf] + list(args)


def test_user_drops_root_after_binding(tmp_path, upstream, system_user, reachable):
    """Started as root with --user NAME, larder binds (the unix socket is
    then given to NAME), becomes NAME in every id (real, effective, saved;
    its own groups only, no capabilities) and serves from a data_dir
    NAME owns."""
    pw = system_user
    larder = stackmod.Larder(os.path.join(reachable, "larder"), upstream.port,
                             files_port=upstream.files_port, unix=True)
    # the socket's directory is NAME's too (as /run/larder would be), so
    # that NAME can remove the socket at exit
    os.chown(larder.dir, pw.pw_uid, pw.pw_gid)
    os.chown(larder.data_dir, pw.pw_uid, pw.pw_gid)
    os.chmod(larder.conf, 0o644)
    cmd = serve_cmd(larder, "--listen", larder.listen, "--workers", "2",
                    "--user", pw.pw_name)
    nginx = None
    try:
        stackmod.spawn_server(larder, cmd, larder.log, larder.log, "larder", 15,
                              ready=lambda: os.path.exists(larder.sock))
        st = os.stat(larder.sock)
        assert (st.st_uid, st.st_gid) == (pw.pw_uid, pw.pw_gid)
        assert "as user %s" % pw.pw_name in larder.log_text()
        nginx = stackmod.Nginx(str(tmp_path / "nginx"), larder.listen, larder.data_dir)
        nginx.start()
        r = stackmod.http(nginx.base + "/root/pypi/simple/larder-demo-a/",
                          headers={"Accept": stackmod.JSON_TYPE})
        assert r.status == 200, r
        procs = [larder.proc.pid] + fh.children(larder.proc.pid)
        assert len(procs) >= 3
        for p in procs:
            ids = ids_of(p)
            assert ids["Uid"] == [str(pw.pw_uid)] * 4, (p, ids)
            assert ids["Gid"] == [str(pw.pw_gid)] * 4, (p, ids)
            assert "0" not in ids["Groups"], (p, ids)
            assert int(ids["CapEff"][0], 16) == 0 and int(ids["CapPrm"][0], 16) == 0
        # what it wrote is its own
        db = os.path.join(larder.data_dir, "larder.db")
        assert os.stat(db).st_uid == pw.pw_uid
    finally:
        stackmod.stop_all(nginx, larder)
    assert larder.proc.returncode == 0
    # the socket, given to NAME, was removed by NAME at exit
    assert not os.path.exists(larder.sock)


def test_root_without_user_is_refused(tmp_path, upstream):
    """As root, `larder serve` without --user refuses, saying what to give,
    and binds nothing."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    larder = pieces_for(tmp_path, upstream, unix=True)
    r = subprocess.run(serve_cmd(larder, "--listen", larder.listen),
                       capture_output=True, text=True, timeout=30,
                       env=stackmod.clean_env())
    assert r.returncode == 2
    assert "refusing to run as root: give --user NAME" in r.stderr
    assert not os.path.exists(larder.sock)


def test_user_needs_a_writable_data_dir(upstream, system_user, reachable):
    """A data_dir the user cannot write is named in a one-line error, and
    larder stops before serving anything."""
    pw = system_user
    larder = stackmod.Larder(os.path.join(reachable, "larder"), upstream.port,
                             files_port=upstream.files_port, unix=True)
    os.chmod(larder.conf, 0o644)
    os.chmod(larder.data_dir, 0o755)  # root's
    r = subprocess.run(serve_cmd(larder, "--listen", larder.listen,
                                 "--user", pw.pw_name),
                       capture_output=True, text=True, timeout=30,
                       env=stackmod.clean_env())
    assert r.returncode == 1, r.stderr
    assert ("%s is not writable by user %s" % (larder.data_dir, pw.pw_name)
            in r.stderr), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = subprocess.run(serve_cmd(larder, "--listen", larder.listen,
                                 "--user", "no-such-user-here"),
                       capture_output=True, text=True, timeout=30,
                       env=stackmod.clean_env())
    assert r.returncode == 1
    assert "--user no-such-user-here: no such user" in r.stderr


# ------------------------------------------------------- SIGHUP and workers

def set_workers(larder, n):
    with open(larder.conf) as f:
        text = f.read()
    text = re.sub(r"^(workers|max_workers) = .*\n", "", text, flags=re.M)
    text = text.replace("[larder]\n", "[larder]\nworkers = %d\nmax_workers = %d\n" % (n, n), 1)
    with open(larder.conf, "w") as f:
        f.write(text)


def wait_workers(larder, n, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        got = fh.children(larder.proc.pid)
        if len(got) == n or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_sighup_follows_the_new_worker_count(tmp_path, upstream):
    """workers = 2, then 4 after a SIGHUP, then 2 again; a request is served
    at each size. --workers on the command line wins over the file."""
    larder = pieces_for(tmp_path, upstream)
    set_workers(larder, 2)
    cmd = serve_cmd(larder, "--listen", larder.listen) + stackmod.serve_user_args(larder.binary)
    nginx = None
    try:
        stackmod.spawn_server(larder, cmd, larder.log, larder.log, "larder", 15)
        nginx = stackmod.Nginx(str(tmp_path / "nginx"), larder.port, larder.data_dir)
        nginx.start()
        for n in (2, 4, 2):
            set_workers(larder, n)
            larder.proc.send_signal(signal.SIGHUP)
            got = wait_workers(larder, n)
            assert len(got) == n, (n, got, larder.log_text()[-2000:])
            r = stackmod.http(nginx.base + "/+health")
            assert r.status == 200, r
        assert "2 to 2 workers" in larder.log_text()
        assert "4 to 4 workers" in larder.log_text()
    finally:
        stackmod.stop_all(nginx, larder)

    larder2 = stackmod.Larder(str(tmp_path / "larder2"), upstream.port,
                              files_port=upstream.files_port)
    set_workers(larder2, 2)
    cmd = serve_cmd(larder2, "--listen", larder2.listen, "--workers", "3")
    cmd += stackmod.serve_user_args(larder2.binary)
    try:
        stackmod.spawn_server(larder2, cmd, larder2.log, larder2.log, "larder", 15)
        assert len(wait_workers(larder2, 3)) == 3
        set_workers(larder2, 1)
        larder2.proc.send_signal(signal.SIGHUP)
        # --workers 3 still wins: three, in the new generation
        time.sleep(1.5)
        assert len(wait_workers(larder2, 3)) == 3, larder2.log_text()
        assert "3 to 3 workers" in larder2.log_text()
    finally:
        stackmod.stop_all(larder2)
