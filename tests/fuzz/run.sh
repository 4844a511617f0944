#!/bin/sh
# make fuzz: builds the libFuzzer targets and runs each for FUZZ_SECONDS.
# The common/ sources are compiled once (not once per target), each target
# links its own file against them, and FUZZ_JOBS targets (default 2, one
# per core here) build and run at a time. Prints one line per target, in
# the order given: "fuzz NAME: ok, N executions in S s" or "... FAILED".
# Exits 1 when a build or a target failed.
#
# From the Makefile's environment: FUZZ_CC, FUZZ_FLAGS, FUZZ_SECONDS,
# FUZZ_TARGETS, FUZZ_SRC (common/*.c), FUZZ_LIBS, FUZZ_JOBS, top_srcdir,
# top_builddir; run in the build directory.
set -u
# (not under tests/fuzz: that directory goes into the tarball whole, and
# make dist, run while the fuzzers write their corpora, would copy files
# that vanish under it)
bin=fuzz-bin
mkdir -p "$bin/obj"
jobs=${FUZZ_JOBS:-2}
cc=$FUZZ_CC
# objects are built for linking into a fuzzer, not as one
objflags=$(echo "$FUZZ_FLAGS" | sed 's/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,/')
incs="-I$top_srcdir -I$top_builddir"
export cc objflags incs bin top_srcdir

# 1. common/*.c, once
printf '%s\n' $FUZZ_SRC | xargs -P "$jobs" -I{} sh -c '
	src={}
	o="$bin/obj/$(echo "${src#"$top_srcdir"/}" | tr / _ | sed "s/\.c$/.o/")"
	[ "$o" -nt "$src" ] && exit 0
	$cc $objflags $incs -c -o "$o" "$src" 2>"$o.log" || { cat "$o.log"; exit 1; }
' || { echo "fuzz: building common/ failed"; exit 1; }

# 2. each target: link, then run for FUZZ_SECONDS (in parallel)
export FUZZ_FLAGS FUZZ_SECONDS FUZZ_LIBS
printf '%s\n' $FUZZ_TARGETS | xargs -P "$jobs" -I{} sh -c '
	t={}
	log="$bin/fuzz_$t.log"
	if [ "$t" = json_jansson ]; then
		objs="$bin/obj/common_buf.o" # json.c is included under other names
	else
		objs=$(ls "$bin"/obj/*.o)
	fi
	if ! $cc $FUZZ_FLAGS $incs -o "$bin/fuzz_$t" \
		"$top_srcdir/tests/fuzz/fuzz_$t.c" $objs $FUZZ_LIBS >"$log" 2>&1; then
		echo "fuzz $t: FAILED to build" >"$bin/fuzz_$t.result"
		exit 0
	fi
	mkdir -p "$bin/corpus_$t"
	"$bin/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
		-artifact_prefix="$bin/crash_$t-" "$bin/corpus_$t" \
		"$top_srcdir/tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	execs=$(sed -n "s/^stat::number_of_executed_units: *//p" "$log")
	if [ $rc -ne 0 ]; then
		echo "fuzz $t: FAILED after $execs executions" >"$bin/fuzz_$t.result"
	else
		echo "fuzz $t: ok, $execs executions in $FUZZ_SECONDS s" >"$bin/fuzz_$t.result"
	fi
'
rc=0
for t in $FUZZ_TARGETS; do
	r=$(cat "$bin/fuzz_$t.result" 2>/dev/null || echo "fuzz $t: FAILED (no result)")
	case $r in
	*": ok,"*) ;;
	*) tail -n 40 "$bin/fuzz_$t.log"; rc=1 ;;
	esac
	echo "$r"
	rm -f "$bin/fuzz_$t.result"
done
exit $rc
