#!/bin/sh
# Runs the whole test suite: installs what it needs (apt-get), builds,
# runs the C unit tests and the integration tests (real nginx, real pip,
# a stand-in upstream), and ends with one line "N passed, N failed".
#
#   contrib/run-tests.sh                 the whole suite
#   contrib/run-tests.sh -k negotiation  integration tests matching a name
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

"$top/contrib/deps.sh" test || { echo "0 passed, 1 failed"; exit 1; }

out="$top/tests/out"
rm -rf "$out"
mkdir -p "$out"

build_failed=0
{
	[ -x configure ] || ./autogen.sh
	[ -f Makefile ] || ./configure
	make -j2
} >"$out/build.log" 2>&1 || build_failed=1
if [ $build_failed -ne 0 ]; then
	tail -n 40 "$out/build.log"
	echo "0 passed, 1 failed"
	exit 1
fi

make -j2 check >"$out/unit.log" 2>&1
unit_rc=$?
cat tests/unit/*.log > "$out/unit-cases.log" 2>/dev/null || true
[ $unit_rc -eq 0 ] || tail -n 40 "$out/unit.log"

LARDER_BIN="$top/larder" /usr/bin/python3 -m pytest -p no:cacheprovider \
	-q -rs --junitxml="$out/integration.xml" tests/integration "$@"

/usr/bin/python3 - "$out" "$unit_rc" <<'PY'
import re, sys, xml.etree.ElementTree as ET
out = sys.argv[1]
passed = failed = skipped = 0
for line in open(f"{out}/unit-cases.log", errors="replace"):
    if re.match(r"^ok \d+", line):
        passed += 1
    elif re.match(r"^not ok \d+", line):
        failed += 1
if sys.argv[2] != "0" and failed == 0:
    failed += 1  # a unit test binary died before it could say "not ok"
try:
    root = ET.parse(f"{out}/integration.xml").getroot()
    for case in root.iter("testcase"):
        kinds = {c.tag for c in case}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
except (OSError, ET.ParseError):
    failed += 1
print(f"unit and integration: {passed} passed, {failed} failed, {skipped} skipped")
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
PY
