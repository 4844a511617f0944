#!/bin/sh
# Installs, with apt-get, the Debian packages larder builds with and its
# test suite runs against; does nothing for packages already there.
#   contrib/deps.sh build    compiler, autotools, libraries
#   contrib/deps.sh test     build + web servers and clients for the tests
#                            (and Jansson, the JSON oracle of make fuzz)
#   contrib/deps.sh compare  test + the libraries older refs built with
#                            (libfcgi, Jansson: before 0.2), so that
#                            contrib/bench/compare can build them
set -eu
build="build-essential autoconf automake pkg-config
 libcurl4-openssl-dev libsqlite3-dev libssl-dev zlib1g-dev"
run="nginx-light"
test="python3 python3-venv python3-pytest curl wrk
 twine python3-pdm python3-poetry python3-build python3-setuptools python3-wheel
 lighttpd apache2 libapache2-mod-fcgid libapache2-mod-xsendfile
 skopeo podman docker-registry docker.io containerd openssl haproxy libfcgi-bin strace
 clang libclang-rt-14-dev chromium libjansson-dev
 debhelper dpkg-dev fakeroot lintian man-db systemd"
old="libfcgi-dev"

case "${1:-build}" in
build) want="$build $run" ;;
test) want="$build $run $test" ;;
compare) want="$build $run $test $old" ;;
*) echo "usage: $0 build|test|compare" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing >/dev/null
# Debian starts the servers it installs where it can; the tests start
# their own on their own ports, so stop the system ones.
for s in nginx apache2 lighttpd haproxy docker containerd; do
	$sudo service "$s" stop >/dev/null 2>&1 || true
done
