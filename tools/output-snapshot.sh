#!/usr/bin/env bash
# output-snapshot.sh - every reader's output on a fixed set of captures, to
# check that a change of the read side leaves them byte-identical.
#
#   tools/output-snapshot.sh BUILD CAPDIR OUTDIR
#
# The first run (CAPDIR missing) records the captures into CAPDIR with
# BUILD's cygprof, from copies of the example programs (so a rebuild does
# not change what they name).  Every run then writes into OUTDIR one file
# per command (its stdout, stderr and exit status) and per written file.
# Compare two builds:
#
#   tools/output-snapshot.sh build-old /tmp/caps /tmp/out-old
#   tools/output-snapshot.sh build     /tmp/caps /tmp/out-new
#   diff -r /tmp/out-old /tmp/out-new
#
# Nothing here is timed or random once the captures exist: a difference is
# a change of behaviour.
set -u
if [ $# -ne 3 ]; then
	echo "usage: $0 BUILD CAPDIR OUTDIR" >&2
	exit 2
fi
B=$(cd "$1" && pwd) || exit 1
C=$2
O=$3
CYG=$B/cli/cygprof
ANN=$B/cli/cygprof-annotate

if [ ! -d "$C" ]; then
	mkdir -p "$C/bin" || exit 1
	for e in tests/example-calls-O2 tests/example-calls-O0 tests/example-recursion-O2 \
		tests/example-threads-O2 tests/example-forkexec-O2 tests/example-exceptions-O2 \
		tests/memory/example-mem-basic-instr-O2 tests/memory/example-mem-threads-instr-O2 \
		tests/instruments/example-memgrow-O2 tests/example-memdump-O2 \
		tests/annotate/example-annotate-O2 tests/diff/diff-prog-O2 tests/sampling/sampling-prog-cyg; do
		cp "$B/$e" "$C/bin/" || exit 1
	done
	bin=$C/bin
	rec() { # name args...
		local n=$1
		shift
		(cd "$C" && "$CYG" record -q -o "$n.data" "$@" >"$n.rec-out" 2>&1)
	}
	rec calls -- "$bin/example-calls-O2"
	rec calls-O0 -- "$bin/example-calls-O0"
	rec calls-tl --timeline -- "$bin/example-calls-O2"
	rec recursion-tl --timeline -- "$bin/example-recursion-O2"
	rec threads --timeline -- "$bin/example-threads-O2" 2000
	rec forkexec -- "$bin/example-forkexec-O2"
	rec exceptions -- "$bin/example-exceptions-O2"
	rec annotate -- "$bin/example-annotate-O2"
	rec mem --memory --timeline -- "$bin/example-mem-basic-instr-O2"
	rec mem-threads --memory -- "$bin/example-mem-threads-instr-O2"
	rec counters -i counters,memory -- "$bin/example-memgrow-O2"
	cp -P "$B"/memdump/libcygprof-memdump.so "$B"/memdump/libcygprof-memdump.so.0 \
		"$B"/memdump/libcygprof-memdump.so.0.1.0 "$bin/"
	LD_LIBRARY_PATH=$bin rec memdump --memdump -- "$bin/example-memdump-O2"
	rec diff-a -- "$bin/diff-prog-O2" old
	rec diff-b -- "$bin/diff-prog-O2" new
	rec sample --sample -- "$bin/sampling-prog-cyg"
	# import-perf: a perf run of its own recording, kept as perf script text
	if command -v perf >/dev/null &&
		(cd "$C" && perf record -q -k CLOCK_MONOTONIC -g -o perf.data -- \
			"$CYG" record -q -o perf-rec.data -- "$bin/example-calls-O2" >/dev/null 2>&1); then
		(cd "$C" && perf script -i perf.data >perf.txt 2>/dev/null)
	fi
fi

rm -rf "$O"
mkdir -p "$O" || exit 1
cd "$C" || exit 1

out() { # name cmd...: stdout, stderr and status of cmd into OUTDIR/name
	local n=$1
	shift
	"$@" >"$O/$n.out" 2>"$O/$n.err" </dev/null
	echo "exit $?" >>"$O/$n.err"
}

for cap in *.data; do
	n=${cap%.data}
	out "$n.report" "$CYG" report "$cap"
	out "$n.report-flat-calls" "$CYG" report --flat --sort calls "$cap"
	out "$n.report-graph" "$CYG" report --graph "$cap"
	out "$n.report-tree" "$CYG" report --tree "$cap"
	out "$n.report-threads" "$CYG" report --threads "$cap"
	out "$n.report-json" "$CYG" report --format=json "$cap"
	out "$n.report-N" "$CYG" report -N 'c' --format=json "$cap"
	out "$n.info" "$CYG" info "$cap"
	out "$n.info-json" "$CYG" info --format=json "$cap"
	out "$n.replay" "$CYG" replay "$cap"
	out "$n.gprof" "$CYG" gprof "$cap"
	out "$n.gprof-b" "$CYG" gprof -b "$cap"
	out "$n.gmon" "$CYG" gprof --gmon-out "$O/$n.gmon.out" "$cap"
	out "$n.annotate" "$CYG" annotate "$cap"
	out "$n.annotate-json" "$ANN" --all --format=json "$cap"
	out "$n.memory" "$CYG" memory "$cap"
	out "$n.memory-json" "$CYG" memory --format=json "$cap"
	out "$n.memory-leaks" "$CYG" memory --leaks --peak --temporary "$cap"
	out "$n.memory-fn" "$CYG" memory --function main "$cap"
	out "$n.counters" "$CYG" counters "$cap"
	out "$n.counters-json" "$CYG" counters --format=json "$cap"
	out "$n.counters-csv" "$CYG" counters --format=csv "$cap"
	out "$n.counters-plot" "$CYG" counters --plot "$O/$n.svg" "$cap"
	out "$n.samples" "$CYG" samples "$cap"
	out "$n.samples-json" "$CYG" samples --format=json "$cap"
	for f in chrome folded callgrind pprof; do
		out "$n.export-$f" "$CYG" export --format=$f -o "$O/$n.$f" "$cap"
	done
	out "$n.export-gmon" "$CYG" export --format=gmon -o "$O/$n.export.gmon" "$cap"
	out "$n.export-folded-calls" "$CYG" export --format=folded --weight calls "$cap"
	out "$n.export-folded-samples" "$CYG" export --format=folded --weight samples "$cap"
	out "$n.export-folded-mem" "$CYG" export --format=folded --memory allocated "$cap"
	out "$n.export-pprof-mem" "$CYG" export --format=pprof --memory leaked -o "$O/$n.mem.pprof" "$cap"
	out "$n.export-chrome-alloc" "$CYG" export --format=chrome --allocations "$cap"
	out "$n.html" "$CYG" html -o "$O/$n.html" "$cap"
done
out diff "$CYG" diff diff-a.data diff-b.data
out diff-paths "$CYG" diff --paths diff-a.data diff-b.data
out diff-json "$CYG" diff --paths --format=json diff-a.data diff-b.data
out memory-diff "$CYG" memory --diff mem.data mem-threads.data
out memory-diff-json "$CYG" memory --diff mem.data mem-threads.data --format=json
out memory-diff-t "$CYG" memory --diff 0 1 mem.data
out replay-range "$CYG" replay --time-range 0,1ms calls-tl.data
if [ -f perf.txt ]; then
	cp perf-rec.data "$O/imported.data"
	out import-perf "$CYG" import-perf "$O/imported.data" <perf.txt
	out import-perf-report "$CYG" report "$O/imported.data"
	out import-perf-samples "$CYG" samples "$O/imported.data"
	rm -f "$O/imported.data"
fi
# file names written above appear in outputs: make them relative
sed -i "s#$O/##g" "$O"/*.out "$O"/*.err 2>/dev/null
echo "$(ls "$O" | wc -l) files in $O"
