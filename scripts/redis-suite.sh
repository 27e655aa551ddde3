#!/usr/bin/env bash
# redis-suite.sh: run Redis's own Tcl test suite, as shipped, against
# `gostore serve`, one unit at a time, each against a fresh in-memory
# server, and print the tests each unit passed, failed and skipped.
#
#	scripts/redis-suite.sh /path/to/redis-7.0.15            # the default units
#	scripts/redis-suite.sh /path/to/redis-7.0.15 unit/expire unit/type/hash
#
# The suite is not part of go-store: pass the directory of a Redis source
# tree (it needs its runtest and tests/; `git archive 7.0.15 runtest tests`
# of a clone of github.com/redis/redis is enough). The script never writes
# into it: it copies it to a temporary directory first. Needs tclsh (Debian:
# tcl); the units run in external-server mode (--host/--port), which skips
# the tests tagged external:skip, and with the tags below left out: they
# need replication, DEBUG, RDB saves or maxmemory, which gostore does not
# have (docs/redis.md), and with --ignore-encoding, as gostore keeps no
# encodings. Set TAGS, ARGS (the runtest options besides --host, --port,
# --single and --tags) or TIMEOUT (seconds a unit may take) to change
# them; the output of each unit is kept in $OUT (default
# /tmp/gostore-redis-suite).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ $# -lt 1 ] || [ ! -f "$1/runtest" ]; then
	echo "usage: $0 REDIS_SOURCE_DIR [unit ...]" >&2
	exit 2
fi
suite_src=$1
shift
units=("$@")
if [ ${#units[@]} -eq 0 ]; then
	units=(unit/printver unit/auth unit/protocol unit/keyspace unit/scan
		unit/info unit/info-command unit/type/string unit/type/incr
		unit/type/hash unit/expire unit/other unit/multi unit/quit
		unit/pubsub unit/slowlog unit/introspection unit/introspection-2
		unit/limits unit/querybuf unit/networking unit/functions
		unit/latency-monitor unit/tracking unit/scripting)
fi
TAGS=${TAGS:-"-needs:repl -needs:debug -needs:pfdebug -needs:config-maxmemory -needs:save"}
ARGS=${ARGS:-"--ignore-encoding"}
TIMEOUT=${TIMEOUT:-300}
OUT=${OUT:-/tmp/gostore-redis-suite}

if ! command -v tclsh >/dev/null; then
	echo "$0: tclsh not found (Debian: apt-get install tcl)" >&2
	exit 1
fi

work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/gostore" ./cmd/gostore
mkdir -p "$work/suite" "$OUT"
cp -r "$suite_src/runtest" "$suite_src/tests" "$work/suite/"
# The suite's helpers call src/redis-cli and src/redis-benchmark by path
# in some units; point them at the installed tools where there are some.
mkdir -p "$work/suite/src"
for t in redis-cli redis-benchmark redis-server; do
	if command -v "$t" >/dev/null; then ln -s "$(command -v "$t")" "$work/suite/src/$t"; fi
done

tot_ok=0 tot_err=0 tot_skip=0 units_ok=0
printf '%-28s %5s %5s %5s  %s\n' unit ok err skip result
for u in "${units[@]}"; do
	if [ ! -f "$work/suite/tests/$u.tcl" ]; then
		printf '%-28s %5s %5s %5s  %s\n' "$u" - - - "not in this suite"
		continue
	fi
	"$work/gostore" serve --db :memory: --addr 127.0.0.1:0 2>"$work/serve.err" &
	pid=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/serve.err" | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	log="$OUT/$(echo "$u" | tr / _).log"
	# shellcheck disable=SC2086
	(cd "$work/suite" && timeout "$TIMEOUT" ./runtest --host 127.0.0.1 --port "$port" \
		--single "$u" --tags "$TAGS" --timeout "$TIMEOUT" --clients 1 $ARGS) >"$log" 2>&1 || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	# Drop the colours the suite adds on a terminal.
	sed -i 's/\x1b\[[0-9;]*m//g' "$log"
	ok=$(grep -c '^\[ok\]' "$log" || true)
	err=$(grep -c '^\[err\]' "$log" || true)
	skip=$(grep -c '^\[skip\]\|^\[ignore\]' "$log" || true)
	if grep -q '^\[exception\]' "$log"; then
		result="exception: $(grep -A1 '^\[exception\]' "$log" | tail -1 | cut -c1-60)"
	elif grep -q 'All tests passed' "$log"; then
		result=passed
		if [ "$ok" -eq 0 ]; then result="passed (no test ran)"; fi
		units_ok=$((units_ok + 1))
	elif [ "$err" -gt 0 ]; then
		result=failures
	else
		result="did not finish (see $log)"
	fi
	printf '%-28s %5d %5d %5d  %s\n' "$u" "$ok" "$err" "$skip" "$result"
	tot_ok=$((tot_ok + ok)) tot_err=$((tot_err + err)) tot_skip=$((tot_skip + skip))
done
echo "units passed: $units_ok of ${#units[@]}; tests: $tot_ok ok, $tot_err failed, $tot_skip skipped (logs in $OUT)"
