#!/bin/sh
# Runs the whole test suite and ends with one line "N passed, N failed":
#   1. installs what it needs (apt-get, contrib/deps.sh test), and checks
#      that every include runs the way the rooms allow (contrib/check-rooms);
#   2. builds larder twice, out of tree: build/ (release; any compiler
#      warning fails the run) and build-asan/ (--enable-debug: -Werror,
#      ASan, UBSan, leak checking);
#   3. on each build, the C unit tests (make check) and the integration
#      tests (real nginx, lighttpd, Apache, real pip, a stand-in upstream),
#      the two builds' passes at the same time (PASSES=serial: in turn);
#      any sanitizer report fails the run; a test marked one_build runs on
#      that build only: storms, waits and the benchmark on release (ASan
#      adds time, not findings); hostile-input and API matrices (test_liar,
#      test_faults, test_secrets, the JSON and index APIs, tokens, virtual
#      indexes, cooldown, metrics) on asan, where a memory error would show;
#      what users run (installs, front ends, registries, uploads) on both;
#   4. in the background: every benchmark once on tiny inputs (make
#      bench-smoke, from when the release pass ends), and every fuzz target
#      for FUZZ_SECONDS (default 15); while
#   5. the Debian package: built with dpkg-buildpackage in a copy of the
#      tree, lintian, installed with apt-get, run as the service would be
#      behind nginx for a pip install, purged (tests/integration/test_deb.py);
#   6. make distcheck.
#
#   contrib/run-tests.sh                  everything
#   contrib/run-tests.sh -k negotiation   integration tests matching a name
#   ASAN=0 FUZZ=0 BENCH=0 DEB=0 DISTCHECK=0 contrib/run-tests.sh   release build only
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out="$top/tests/out"
rm -rf "$out"
mkdir -p "$out"

fail_early() {
	echo "$1" >&2
	echo "0 passed, 1 failed"
	exit 1
}

"$top/contrib/deps.sh" test || fail_early "installing the test dependencies failed"

echo "== rooms: every include runs the way docs/design.md allows"
if "$top/contrib/check-rooms" >"$out/rooms.log" 2>&1; then
	echo "rooms: ok" >>"$out/rooms.log"
else
	cat "$out/rooms.log"
	echo "rooms: FAILED" >>"$out/rooms.log"
fi
[ -x configure ] || ./autogen.sh >"$out/autogen.log" 2>&1 ||
	fail_early "autogen.sh failed: see $out/autogen.log"

# build DIR [CONFIGURE-ARGS...]
build() {
	dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && { [ -f Makefile ] || "$top/configure" "$@"; } &&
		make -j2) >"$out/build-$(basename "$dir").log" 2>&1 || {
		tail -n 30 "$out/build-$(basename "$dir").log"
		fail_early "building in $dir failed"
	}
}

if [ -f "$top/config.status" ]; then
	# configured in the source tree by hand: out-of-tree builds are
	# refused by automake, so test that build alone
	echo "note: the source tree is configured in place; testing that build" \
		"only (make distclean for the sanitizer pass)" >&2
	make -j2 >"$out/build-intree.log" 2>&1 || fail_early "make failed"
	builds="intree:$top"
	ASAN=0
else
	build "$top/build"
	builds="release:$top/build"
	if [ "${ASAN:-1}" != 0 ]; then
		build "$top/build-asan" --enable-debug
		builds="$builds asan:$top/build-asan"
	fi
fi

mkdir -p "$out/sanitizer"
# One build's pass: its unit tests, then its integration tests, each
# with its own pytest basetemp (/tmp/larder-it-NAME: pytest empties it
# when it starts, and leaves it for a look afterwards; deleting it here
# took minutes of CI's time). The passes of the two builds run at the
# same time: the integration tests mostly wait on clocks (timeouts, TTLs,
# servers starting), not on the CPU, so two passes take little longer
# than one. PASSES=serial runs them one after the other.
one_pass() {
	name=$1
	dir=$2
	shift 2
	if [ "$name" = asan ]; then
		export ASAN_OPTIONS="detect_leaks=1:log_path=$out/sanitizer/asan"
		export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$out/sanitizer/ubsan"
	fi
	echo "== $name build: unit tests"
	(cd "$dir" && make -j2 check) >"$out/unit-$name.log" 2>&1 ||
		tail -n 30 "$out/unit-$name.log"
	cat "$dir"/tests/unit/*.log >"$out/unit-cases-$name.log" 2>/dev/null
	echo "== $name build: integration tests"
	LARDER_BUILD_KIND=$name LARDER_BIN="$dir/larder" \
		/usr/bin/python3 -m pytest -p no:cacheprovider \
		-q -rs --basetemp="/tmp/larder-it-$name" \
		--junitxml="$out/integration-$name.xml" \
		--ignore=tests/integration/test_deb.py tests/integration "$@"
	unset ASAN_OPTIONS UBSAN_OPTIONS
}

# The benchmark smoke run (every workload once on tiny inputs, no figures)
# in the background, on the first build: it mostly waits on the servers
# it starts, so it starts as soon as that build's pass is done, beside the
# other pass.
bench_pid=
start_bench() {
	[ "${BENCH:-1}" != 0 ] && [ $# -eq 0 ] && [ -z "$bench_pid" ] || return 0
	echo "== benchmark smoke run: they run, no figures (in the background)"
	benchdir=$(echo "$builds" | sed 's/^[a-z]*://; s/ .*//')
	(if make -C "$benchdir" bench-smoke >"$out/bench-smoke.log" 2>&1; then
		echo "bench-smoke: ok" >>"$out/bench-smoke.log"
	else
		echo "bench-smoke: FAILED" >>"$out/bench-smoke.log"
	fi) &
	bench_pid=$!
}

pass_pids=
for b in $builds; do
	name=${b%%:*}
	if [ "${PASSES:-parallel}" = serial ]; then
		one_pass "$name" "${b#*:}" "$@"
	else
		echo "== $name build: unit and integration tests (log: tests/out/pass-$name.log)"
		one_pass "$name" "${b#*:}" "$@" >"$out/pass-$name.log" 2>&1 &
		pass_pids="$pass_pids $!"
	fi
done
for p in $pass_pids; do
	wait "$p"
	start_bench "$@"
done
start_bench "$@"
if [ -n "$pass_pids" ]; then
	for b in $builds; do
		cat "$out/pass-${b%%:*}.log"
	done
fi

# The fuzzers run in the background while the Debian package and
# distcheck are made, as the benchmark smoke run may still (none of them
# times anything): the fuzzers' budget is time, not executions. They
# write under the build directory's fuzz-bin/, which make dist never
# copies.
fuzz_pid=
if [ "${FUZZ:-1}" != 0 ] && [ $# -eq 0 ]; then
	echo "== fuzzing, ${FUZZ_SECONDS:-15} s per target (in the background)"
	fuzzdir=$(echo "$builds" | sed 's/^[a-z]*://; s/ .*//')
	make -C "$fuzzdir" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-15}" \
		>"$out/fuzz.log" 2>&1 &
	fuzz_pid=$!
fi

if [ "${DEB:-1}" != 0 ] && [ $# -eq 0 ]; then
	echo "== Debian package: build, lintian, install, pip through it, purge"
	deb_start=$(date +%s)
	debdir=$(mktemp -d)
	# dpkg-buildpackage writes next to the tree: build in a copy of it
	# (what git knows of, committed or not; the whole tree without git)
	mkdir "$debdir/larder"
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$top" ls-files -co --exclude-standard | tar -cf - -T -
	else
		tar --exclude=./build --exclude=./build-asan --exclude=./run \
			--exclude=./tests/out -cf - .
	fi | tar -xf - -C "$debdir/larder"
	if (cd "$debdir/larder" && DEB_BUILD_OPTIONS=parallel=2 \
		dpkg-buildpackage -us -uc -b) >"$out/deb-build.log" 2>&1; then
		cp "$debdir"/*.deb "$out/"
		LARDER_DEB=$(ls "$debdir"/larder_*.deb) \
			LARDER_BIN="$(echo "$builds" | sed 's/^[a-z]*://; s/ .*//')/larder" \
			/usr/bin/python3 -m pytest \
			-p no:cacheprovider -q -rs \
			--junitxml="$out/integration-deb.xml" \
			tests/integration/test_deb.py
	else
		tail -n 30 "$out/deb-build.log"
		printf '<testsuite><testcase name="dpkg-buildpackage"><failure message="see tests/out/deb-build.log"/></testcase></testsuite>\n' \
			>"$out/integration-deb.xml"
	fi
	rm -rf "$debdir"
	echo "deb step: $(($(date +%s) - deb_start)) s"
fi

if [ "${DISTCHECK:-1}" != 0 ] && [ $# -eq 0 ]; then
	echo "== make distcheck (the tarball builds, checks, installs, uninstalls)"
	distdir=$(echo "$builds" | sed 's/^[a-z]*://; s/ .*//')
	if make -C "$distdir" -j2 distcheck >"$out/distcheck.log" 2>&1; then
		echo "distcheck: ok" | tee -a "$out/distcheck.log"
	else
		tail -n 30 "$out/distcheck.log"
		echo "distcheck: FAILED" | tee -a "$out/distcheck.log"
	fi
fi

if [ -n "$bench_pid" ]; then
	wait "$bench_pid"
	grep -q "^bench-smoke: ok" "$out/bench-smoke.log" ||
		tail -n 30 "$out/bench-smoke.log"
	tail -n 1 "$out/bench-smoke.log"
fi
if [ -n "$fuzz_pid" ]; then
	wait "$fuzz_pid"
	grep '^fuzz ' "$out/fuzz.log"
fi

/usr/bin/python3 - "$out" <<'PY'
import glob, os, re, sys, xml.etree.ElementTree as ET
out = sys.argv[1]
passed = failed = skipped = 0
for log in sorted(glob.glob(f"{out}/unit-cases-*.log")):
    n_ok = n_bad = 0
    for line in open(log, errors="replace"):
        if re.match(r"^ok \d+", line):
            n_ok += 1
        elif re.match(r"^not ok \d+", line):
            n_bad += 1
    name = log.rsplit("-", 1)[1][:-4]
    unit_log = open(f"{out}/unit-{name}.log", errors="replace").read()
    if n_bad == 0 and re.search(r"^# (FAIL|ERROR): +[1-9]", unit_log, re.M):
        n_bad = 1  # a unit test binary died before it could say "not ok"
    passed += n_ok
    failed += n_bad
for xml in sorted(glob.glob(f"{out}/integration-*.xml")):
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError:
        failed += 1
        continue
    for case in root.iter("testcase"):
        kinds = {c.tag for c in case}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
for log in sorted(glob.glob(f"{out}/build-*.log")):
    # a release build is warning-free too (the debug build has -Werror)
    warns = [l for l in open(log, errors="replace") if ": warning: " in l]
    for w in warns:
        print(f"{os.path.basename(log)}: {w.rstrip()}")
    if warns:
        failed += 1
    else:
        passed += 1
reports = sorted(glob.glob(f"{out}/sanitizer/*"))
for r in reports:
    print(f"sanitizer report {r}:")
    print("".join(open(r, errors="replace").readlines()[:30]))
failed += len(reports)
if os.path.exists(f"{out}/fuzz.log"):
    for line in open(f"{out}/fuzz.log", errors="replace"):
        if line.startswith("fuzz "):
            if ": ok," in line:
                passed += 1
            else:
                failed += 1
    if "FAILED" in open(f"{out}/fuzz.log", errors="replace").read() and failed == 0:
        failed += 1
if os.path.exists(f"{out}/rooms.log"):
    if "rooms: ok" in open(f"{out}/rooms.log", errors="replace").read():
        passed += 1
    else:
        failed += 1
if os.path.exists(f"{out}/distcheck.log"):
    if "distcheck: ok" in open(f"{out}/distcheck.log", errors="replace").read():
        passed += 1
    else:
        failed += 1
if os.path.exists(f"{out}/bench-smoke.log"):
    if "bench-smoke: ok" in open(f"{out}/bench-smoke.log", errors="replace").read():
        passed += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
PY
