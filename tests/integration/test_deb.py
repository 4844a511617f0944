"""The Debian package: lintian has no errors, and installed with apt-get it
is a working service: a larder system user, /var/lib/larder its own, the
config a conffile, the units enabled, the man pages; `larder config check`
passes; larder started from /usr/sbin as larder.service would start it
(as user larder, on the socket larder.socket makes, with
/etc/larder/larder.conf) serves a pip install behind nginx; purge takes it
all away again.

Skipped unless $LARDER_DEB names the .deb (contrib/run-tests.sh builds it
with dpkg-buildpackage in a copy of the tree; DEB=0 skips that). It
installs into this machine, so it needs root.
"""

import glob
import grp
import os
import pwd
import re
import shlex
import shutil
import stat
import subprocess
import sys

import pytest

import stack as stackmod

DEB = os.environ.get("LARDER_DEB")
UNITS = "/lib/systemd/system"
SOCK = "/run/larder/larder.sock"

pytestmark = pytest.mark.skipif(
    not DEB, reason="set LARDER_DEB=path/to/larder_*.deb (contrib/run-tests.sh builds it)")

# larder.service's User=/Group=, UMask= and larder.socket's socket, as
# systemd does them: bind (as root), fork, the socket on fd 3, LISTEN_PID
# and LISTEN_FDS, the umask, become the user, exec ExecStart. argv: SOCK
# USER UMASK CMD...
LAUNCHER = r"""
import grp, os, pwd, socket, sys
path, user, mask, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
pw = pwd.getpwnam(user)
os.chown(path, pw.pw_uid, grp.getgrnam("www-data").gr_gid)  # SocketUser/Group
os.chmod(path, 0o660)                                        # SocketMode
s.listen(128)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.umask(int(mask, 8))
os.initgroups(user, pw.pw_gid)
os.setgid(pw.pw_gid)
os.setuid(pw.pw_uid)
os.environ["LISTEN_PID"] = str(os.getpid())
os.environ["LISTEN_FDS"] = "1"
os.execv(cmd[0], cmd)
"""


def run(cmd, timeout=300, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout,
                       env=stackmod.clean_env({"DEBIAN_FRONTEND": "noninteractive"}))
    if check:
        assert r.returncode == 0, "%s: rc %d\n%s" % (" ".join(cmd), r.returncode, r.stdout)
    return r


def unit_value(text, key):
    m = re.search(r"^%s=(.*)$" % re.escape(key), text, re.M)
    return m.group(1).strip() if m else None


def test_lintian_has_no_errors():
    """lintian on the .deb: no E: lines (warnings are printed)."""
    if not shutil.which("lintian"):
        pytest.skip("lintian not installed (contrib/deps.sh test installs it)")
    r = run(["lintian", "--no-tag-display-limit", DEB], check=False)
    sys.stdout.write(r.stdout)
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    assert not errors, r.stdout


@pytest.fixture
def installed(tmp_path):
    """The package installed with apt-get; purged after, which must take
    the binary, the data, the config and the user away (an error of the
    test if not)."""
    if os.geteuid() != 0:
        pytest.skip("installs a package: needs root")
    if shutil.which("larder") or os.path.exists("/usr/sbin/larder"):
        pytest.skip("larder is already installed on this machine; not touching it")
    deb = os.path.abspath(DEB)
    try:
        run(["apt-get", "install", "-y", "-q", "--no-install-recommends", deb])
        yield
    finally:
        r = run(["apt-get", "purge", "-y", "-q", "larder"], check=False)
    assert r.returncode == 0, r.stdout
    for path in ("/usr/sbin/larder", "/var/lib/larder", "/etc/larder/larder.conf"):
        assert not os.path.exists(path), "left after purge: " + path
    with pytest.raises(KeyError):
        pwd.getpwnam("larder")


def test_deb_installs_a_working_service(installed, tmp_path, wheel_dir, new_venv):
    # what the package put in place
    pw = pwd.getpwnam("larder")
    assert pw.pw_dir == "/var/lib/larder" and pw.pw_uid < 1000
    assert grp.getgrgid(pw.pw_gid).gr_name == "larder"
    st = os.stat("/var/lib/larder")
    assert (st.st_uid, st.st_gid) == (pw.pw_uid, pw.pw_gid)
    # the store is larder's and its group's; the web server reads the
    # blobs as a member of that group
    assert stat.S_IMODE(st.st_mode) == 0o750, oct(st.st_mode)
    assert stat.S_IMODE(os.stat("/var/log/larder").st_mode) == 0o750
    assert "www-data" in grp.getgrnam("larder").gr_mem
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", "larder"]).stdout
    assert "/etc/larder/larder.conf" in conffiles
    for f in ("/usr/sbin/larder", "/usr/share/man/man8/larder.8.gz",
              "/usr/share/man/man5/larder.conf.5.gz",
              UNITS + "/larder.service", UNITS + "/larder.socket"):
        assert os.path.exists(f), f
    assert os.path.islink("/etc/systemd/system/sockets.target.wants/larder.socket")
    # the scrub: its timer enabled, the service it starts shipped
    for f in ("larder-scrub.service", "larder-scrub.timer"):
        assert os.path.exists(UNITS + "/" + f), f
    assert os.path.islink("/etc/systemd/system/timers.target.wants/larder-scrub.timer")
    with open(UNITS + "/larder-scrub.service") as f:
        scrub = f.read()
    assert "ExecStart=/usr/sbin/larder fsck -c /etc/larder/larder.conf --scrub" in scrub
    # it runs on the store with larder's own modes, never undoing them
    assert "UMask=0027" in scrub and "StateDirectoryMode=0750" in scrub, scrub
    # webhooks for CGI setups: shipped, left off (larder.service delivers)
    for f in ("larder-webhook.service", "larder-webhook.timer"):
        assert os.path.exists(UNITS + "/" + f), f
    assert not os.path.exists("/etc/systemd/system/timers.target.wants/larder-webhook.timer")
    with open(UNITS + "/larder-webhook.service") as f:
        assert "ExecStart=/usr/sbin/larder webhook deliver -c /etc/larder/larder.conf" in f.read()
    if shutil.which("man"):
        assert "larder.conf" in run(["man", "-P", "cat", "5", "larder.conf"]).stdout
    # as shipped, the config is good (the sample, on the defaults)
    r = run(["/usr/sbin/larder", "config", "check"])
    assert "/etc/larder/larder.conf" in r.stdout
    # and it reads the files of /etc/larder/conf.d/, which is shipped
    assert os.path.isdir("/etc/larder/conf.d")
    drop = "/etc/larder/conf.d/50-test.conf"
    with open(drop, "w") as f:
        f.write('[index "team/private"]\ntype = hosted\n')
    try:
        r = run(["/usr/sbin/larder", "config", "check"])
        assert '[index "team/private"]' in r.stdout, r.stdout
    finally:
        os.unlink(drop)

    # the stand-in upstream, and the config pointed at it
    upstream = stackmod.Standin(wheel_dir, str(tmp_path / "standin"))
    nginx = None
    server = None
    with open("/etc/larder/larder.conf") as f:
        shipped = f.read()
    try:
        upstream.start()
        with open("/etc/larder/larder.conf", "w") as f:
            f.write(stackmod.larder_conf("/var/lib/larder", upstream.port,
                                         files_port=upstream.files_port))
        run(["/usr/sbin/larder", "config", "check"])

        # larder.service's command line, started as systemd would
        with open(UNITS + "/larder.service") as f:
            service = f.read()
        cmd = shlex.split(unit_value(service, "ExecStart"))
        assert cmd[0] == "/usr/sbin/larder"
        user = unit_value(service, "User")
        umask = unit_value(service, "UMask")
        assert umask == "0027"  # nothing larder makes is world-readable
        server = stackmod.Larder(str(tmp_path / "larder"), upstream.port)
        server.data_dir = "/var/lib/larder"
        server.sock = SOCK
        stackmod.spawn_server(server, [sys.executable, "-c", LAUNCHER, SOCK, user, umask] + cmd,
                              server.log, server.log, "larder (as the service)", 20,
                              ready=lambda: "serving on" in server.log_text())
        assert "as user" not in server.log_text()  # systemd made it larder
        ids = open("/proc/%d/status" % server.proc.pid).read()
        assert re.search(r"^Uid:\s+%d\s+%d" % (pw.pw_uid, pw.pw_uid), ids, re.M), ids

        nginx = stackmod.Nginx(str(tmp_path / "nginx"), "unix:" + SOCK, "/var/lib/larder")
        nginx.start()
        venv = new_venv()
        rc, out = stackmod.pip_install(venv, nginx.base + "/root/pypi/simple/",
                                       ["larder-demo-a"])
        assert rc == 0, out + server.log_text()[-3000:]
        blobs = glob.glob("/var/lib/larder/blobs/sha256/**/*", recursive=True)
        assert any(os.path.isfile(b) and os.stat(b).st_uid == pw.pw_uid for b in blobs)
        # blobs: for larder's group (the web server), not the world
        for b in blobs:
            m = stat.S_IMODE(os.stat(b).st_mode)
            assert m == (0o640 if os.path.isfile(b) else 0o750), (b, oct(m))
        # the database holds registry tokens: larder's alone
        for f in ("larder.db", "larder.db-wal", "larder.db-shm"):
            p = os.path.join("/var/lib/larder", f)
            assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, (p, oct(os.stat(p).st_mode))
        # as larder: root would leave SQLite files the service cannot open
        run(["runuser", "-u", "larder", "--", "/usr/sbin/larder", "fsck"])
    finally:
        stackmod.stop_all(nginx, server, upstream)
        shutil.rmtree(os.path.dirname(SOCK), ignore_errors=True)  # systemd's
        with open("/etc/larder/larder.conf", "w") as f:
            f.write(shipped)
