#!/bin/sh
# Quick start: installs what is missing (apt-get), builds larder, and starts
# it behind nginx on 127.0.0.1:4433 with its data under ./run/.
#
#   contrib/quickstart.sh          install, build, start
#   contrib/quickstart.sh stop     stop nginx and larder
#
# LARDER_UPSTREAM points the "pypi" index elsewhere (default
# https://pypi.org/simple/), LARDER_TRUSTED_HOSTS names the hosts its pages
# link files on (default files.pythonhosted.org), LARDER_PORT changes the
# port. run/larder.conf is written once: run again, the script keeps it
# and changes only the upstream or trusted_hosts of [index "pypi"] that a
# variable names; sections of your own go in it or in run/conf.d/*.conf.
# It ends by writing run/env, which puts the larder it built on PATH, its
# config in $LARDER_CONFIG, its URL in $LARDER_URL (larder warm) and its
# man pages on MANPATH:
#
#   . run/env; larder config check; larder fsck; man larder
#
# LARDER_BIN uses a larder built already (no apt-get, no build) and
# LARDER_RUN_DIR another directory than run/ (the tests do both).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
run="${LARDER_RUN_DIR:-$top/run}"
port="${LARDER_PORT:-4433}"
upstream="${LARDER_UPSTREAM:-https://pypi.org/simple/}"
trusted="${LARDER_TRUSTED_HOSTS:-files.pythonhosted.org}"

# stop: ends the nginx and larder this script started, and waits until
# they are gone (10 s at most each), so that a start right after finds
# the port and the socket free
stop() {
	for p in nginx larder; do
		if [ -f "$run/$p.pid" ]; then
			pid=$(cat "$run/$p.pid")
			kill "$pid" 2>/dev/null || true
			i=0
			while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
				sleep 0.1
				i=$((i + 1))
			done
			rm -f "$run/$p.pid"
		fi
	done
	rm -f "$run/larder.sock"
}

if [ "${1:-}" = stop ]; then
	stop
	exit 0
fi

cd "$top"
mkdir -p "$run"
if [ -n "${LARDER_BIN:-}" ]; then
	larder=$LARDER_BIN
else
	"$top/contrib/deps.sh" build
	[ -x configure ] || ./autogen.sh >"$run/autogen.log" 2>&1 ||
		{ cat "$run/autogen.log" >&2; exit 1; }
	if [ -f config.status ]; then
		# configured in place by hand: use that build
		make -j2 >/dev/null
		larder="$top/larder"
	else
		mkdir -p build
		(cd build && { [ -f Makefile ] || ../configure --sysconfdir=/etc \
			--localstatedir=/var >/dev/null; } && make -j2 >/dev/null)
		larder="$top/build/larder"
	fi
fi
bindir=$(cd "$(dirname "$larder")" && pwd)

# set_pypi KEY VALUE: KEY's line in [index "pypi"] of run/larder.conf says
# VALUE, and nothing else in the file changes
set_pypi() {
	awk -v key="$1" -v val="$2" '
		/^[ \t]*\[/ { in_pypi = ($0 ~ /^[ \t]*\[index[ \t]+"pypi"\]/) }
		in_pypi && $0 ~ "^[ \t]*" key "[ \t]*=" {
			print key " = " val; next
		}
		{ print }' "$run/larder.conf" >"$run/larder.conf.new" &&
		mv "$run/larder.conf.new" "$run/larder.conf"
}

stop
mkdir -p "$run/data" "$run/nginx" "$run/conf.d"
if [ ! -f "$run/larder.conf" ]; then
	cat > "$run/larder.conf.new" <<CONF
# written by contrib/quickstart.sh, once: it is yours now. Running the
# quick start again keeps it, and changes only the upstream or the
# trusted_hosts of [index "pypi"] when LARDER_UPSTREAM or
# LARDER_TRUSTED_HOSTS says so.
[larder]
data_dir = $run/data
sendfile = x-accel-redirect
sendfile_prefix = /_larder/

[index "pypi"]
type = cache
upstream = $upstream
trusted_hosts = $trusted

[index "root/pypi"]
type = virtual
layers = pypi

# Sections of your own go here, or in files of conf.d/ beside this one,
# read in sorted order (man 5 larder.conf, "Including files").
include = conf.d/*.conf
CONF
	mv "$run/larder.conf.new" "$run/larder.conf"
else
	echo "keeping $run/larder.conf"
	[ -z "${LARDER_UPSTREAM:-}" ] || set_pypi upstream "$upstream"
	[ -z "${LARDER_TRUSTED_HOSTS:-}" ] || set_pypi trusted_hosts "$trusted"
fi
"$larder" config check -c "$run/larder.conf" >/dev/null

user_line=""
[ "$(id -u)" -eq 0 ] && user_line="user root;"
sed -e "s|@USER@|$user_line|" -e "s|@PREFIX@|$run/nginx|g" \
    -e "s|@LISTEN@|127.0.0.1:$port|" -e "s|@DATA@|$run/data|" \
    -e "s|@FASTCGI@|unix:$run/larder.sock|" \
    conf/nginx-standalone.conf > "$run/nginx/nginx.conf"

# larder refuses to run as root unless told which user to be: here, the
# one running this script (nginx's workers run as that user too)
nohup "$larder" serve -c "$run/larder.conf" --listen "unix:$run/larder.sock" \
	--workers 4 --user "$(id -un)" >"$run/larder.log" 2>&1 &
echo $! > "$run/larder.pid"
i=0
while [ ! -S "$run/larder.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
nginx -c "$run/nginx/nginx.conf" -p "$run/nginx" -g "pid $run/nginx.pid;"
i=0
until curl -fs "http://127.0.0.1:$port/+health" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 50 ]; then
		echo "larder did not come up; see $run/larder.log" >&2
		exit 1
	fi
	sleep 0.1
done
# the man pages where man finds them with run/env's MANPATH
mkdir -p "$run/man/man5" "$run/man/man8"
cp "$top/man/larder.8" "$run/man/man8/larder.8"
"$larder" config man >"$run/man/man5/larder.conf.5"
cat >"$run/env" <<ENV
# written by contrib/quickstart.sh: . run/env puts this larder on PATH,
# its config in LARDER_CONFIG (larder config check, larder fsck), its URL
# in LARDER_URL (larder warm) and its man pages on MANPATH (man larder,
# man 5 larder.conf)
PATH="$bindir:\$PATH"
LARDER_CONFIG="$run/larder.conf"
LARDER_URL="http://127.0.0.1:$port/"
MANPATH="$run/man:\${MANPATH:-}"
export PATH LARDER_CONFIG LARDER_URL MANPATH
ENV
echo "larder is up: pip install --index-url http://127.0.0.1:$port/root/pypi/simple/ PACKAGE"
echo "binary: $larder"
echo "config: $run/larder.conf (data: $run/data)"
echo "logs:   $run/larder.log, $run/nginx/"
echo "next:   . $run/env; larder config check; larder warm -r requirements.txt; man larder"
echo "stop:   contrib/quickstart.sh stop"
