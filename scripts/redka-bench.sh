#!/usr/bin/env bash
# redka-bench.sh: a Redis-protocol server beside redka in PostgreSQL mode
# (github.com/nalgeon/redka), under redis-benchmark SET and GET at 50
# clients, without pipelining (-P 1) and with 16 commands per round trip
# (-P 16), alternating the two servers run by run so that machine noise
# hits both alike (issue 30, "What must be shown"). Prints the median
# requests/s of each and the ratio server/redka.
#
#	scripts/redka-bench.sh ADDR POSTGRES_URL
#	ROUNDS=5 REQUESTS=200000 scripts/redka-bench.sh 127.0.0.1:6380 postgres://...
#
# ADDR is a running server, normally `gostore serve --db postgres://...`
# on the same PostgreSQL server as POSTGRES_URL (any RESP server will do:
# `gostore serve` on SQLite until the PostgreSQL engine lands). The
# script starts redka on POSTGRES_URL, a database redka may create its
# tables in (it leaves them there), and stops it at the end.
#
# redka is built from source in a temporary directory, never in the
# repository: `go install github.com/nalgeon/redka/cmd/redka@latest`
# (the newest version the Go module proxy serves) or, if the proxy does
# not serve it, a clone of REDKA_GIT (default its GitHub repository) at
# its newest tag. REDKA_BIN=/path/to/redka skips the build. Building
# needs cgo (redka's binary links mattn/go-sqlite3).
#
# Needs redis-benchmark and redis-cli (Debian: redis-tools); installs
# them with apt-get if missing.
set -euo pipefail

if [ $# -ne 2 ]; then
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
fi
ADDR=$1
PG_URL=$2
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-100000}
TESTS=${TESTS:-"set get"}
REDKA_PORT=${REDKA_PORT:-16390}
REDKA_GIT=${REDKA_GIT:-https://github.com/nalgeon/redka}
LABEL=${LABEL:-server}

case $PG_URL in
postgres://* | postgresql://*) ;;
*) echo "redka-bench: POSTGRES_URL must be a postgres:// URL, not $PG_URL" >&2; exit 2 ;;
esac
HOST=${ADDR%:*}
PORT=${ADDR##*:}

if ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-tools >/dev/null
fi

work=$(mktemp -d /tmp/redka-bench.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	chmod -R u+w "$work" 2>/dev/null || true # the module cache is read-only
	rm -rf "$work"
}
trap cleanup EXIT

redka=${REDKA_BIN:-}
if [ -z "$redka" ]; then
	if GOBIN="$work/bin" GOPATH="$work/gopath" CGO_ENABLED=1 \
		go install github.com/nalgeon/redka/cmd/redka@latest 2>"$work/install.log"; then
		redka="$work/bin/redka"
	else
		echo "redka-bench: the Go proxy does not serve redka ($(tail -1 "$work/install.log")); building $REDKA_GIT's newest tag" >&2
		git clone -q "$REDKA_GIT" "$work/src"
		tag=$(git -C "$work/src" tag --sort=-v:refname | head -1)
		git -C "$work/src" checkout -q "$tag"
		(cd "$work/src" && CGO_ENABLED=1 go build -o "$work/bin/redka" ./cmd/redka)
		redka="$work/bin/redka"
	fi
fi

# redka also serves pprof on localhost:6060 and does not start if that
# port is taken.
"$redka" -h 127.0.0.1 -p "$REDKA_PORT" "$PG_URL" >"$work/redka.log" 2>&1 &
pid=$!
up() { redis-cli -h "$1" -p "$2" ping 2>/dev/null | grep -q PONG; }
for _ in $(seq 100); do
	up 127.0.0.1 "$REDKA_PORT" && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/redka.log" >&2; exit 1; }
	sleep 0.1
done
up 127.0.0.1 "$REDKA_PORT" || { echo "redka-bench: redka did not answer" >&2; cat "$work/redka.log" >&2; exit 1; }
up "$HOST" "$PORT" || { echo "redka-bench: nothing answers PING at $ADDR" >&2; exit 1; }

# rps HOST PORT TEST CLIENTS PIPELINE: requests per second of one run.
# awk reads all of redis-benchmark's output: leaving early would kill it
# with SIGPIPE, which pipefail and set -e make the script's end.
rps() {
	redis-benchmark -h "$1" -p "$2" -t "$3" -n "$REQUESTS" -r 100000 -c "$4" -P "$5" -q --csv 2>/dev/null |
		awk -F'","' '!done && (NR>1 || $1 !~ /test/) { gsub(/"/, "", $2); print $2; done = 1 }'
}

median() { sort -g | awk '{a[NR]=$1} END { if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

printf '%-4s %3s %3s %14s %14s %8s\n' test c P "${LABEL}_rps" redka_rps ratio
for t in $TESTS; do
	for p in 1 16; do
		s=() r=()
		for _ in $(seq "$ROUNDS"); do
			s+=("$(rps "$HOST" "$PORT" "$t" 50 "$p")")
			r+=("$(rps 127.0.0.1 "$REDKA_PORT" "$t" 50 "$p")")
		done
		sm=$(printf '%s\n' "${s[@]}" | median)
		rm=$(printf '%s\n' "${r[@]}" | median)
		awk -v t="$t" -v p="$p" -v s="$sm" -v r="$rm" \
			'BEGIN { printf "%-4s %3s %3s %14.0f %14.0f %8.2f\n", t, 50, p, s, r, (r > 0 ? s / r : 0) }'
	done
done
