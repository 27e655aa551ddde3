#!/usr/bin/env bash
# bench-redis.sh: throughput of `gostore serve` against a local redis-server
# with persistence off, measured by redis-benchmark, alternating the
# servers run by run so that machine noise hits all alike. Beside them run
# two floors (internal/cmd/respfloor): the network floor, the same RESP
# library answering from Go maps, and the SQLite floor, the same answering
# from a go-store database file through bare prepared statements and a
# group commit. Prints the median requests/s of each and the ratios
# gostore/redis, floor/redis, sqlite/redis, gostore/floor and
# gostore/sqlite.
#
#	scripts/bench-redis.sh            # 3 rounds, 100k requests per run
#	ROUNDS=5 REQUESTS=200000 scripts/bench-redis.sh
#
# Needs redis-server and redis-benchmark (Debian: redis-server, redis-tools);
# installs them with apt-get if missing. Everything listens on 127.0.0.1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-100000}
TESTS=${TESTS:-"set get hset incr"}
GOSTORE_PORT=${GOSTORE_PORT:-16380}
REDIS_PORT=${REDIS_PORT:-16379}
FLOOR_PORT=${FLOOR_PORT:-16381}
SQLITE_PORT=${SQLITE_PORT:-16382}

if ! command -v redis-benchmark >/dev/null || ! command -v redis-server >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/gostore" ./cmd/gostore
go build -o "$work/respfloor" ./internal/cmd/respfloor
"$work/gostore" serve --db "$work/bench.db" --addr "127.0.0.1:$GOSTORE_PORT" 2>"$work/gostore.log" &
pids+=($!)
"$work/respfloor" -addr "127.0.0.1:$FLOOR_PORT" 2>"$work/respfloor.log" &
pids+=($!)
"$work/respfloor" -addr "127.0.0.1:$SQLITE_PORT" -db "$work/floor.db" 2>"$work/sqlitefloor.log" &
pids+=($!)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)
for port in "$GOSTORE_PORT" "$FLOOR_PORT" "$SQLITE_PORT" "$REDIS_PORT"; do
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
done

# rps PORT TEST CLIENTS PIPELINE: requests per second of one run.
rps() {
	redis-benchmark -p "$1" -t "$2" -n "$REQUESTS" -r 100000 -c "$3" -P "$4" -q --csv 2>/dev/null |
		awk -F'","' 'NR>1 || $1 !~ /test/ { gsub(/"/, "", $2); print $2; exit }'
}

median() { sort -g | awk '{a[NR]=$1} END { if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

printf '%-6s %4s %3s %12s %12s %12s %12s %8s %8s %8s %8s %8s\n' \
	test c P gostore_rps floor_rps sqlite_rps redis_rps g/redis f/redis s/redis g/floor g/sqlite
for t in $TESTS; do
	for c in 1 50; do
		for p in 1 16; do
			g=() f=() s=() r=()
			for _ in $(seq "$ROUNDS"); do
				g+=("$(rps "$GOSTORE_PORT" "$t" "$c" "$p")")
				f+=("$(rps "$FLOOR_PORT" "$t" "$c" "$p")")
				s+=("$(rps "$SQLITE_PORT" "$t" "$c" "$p")")
				r+=("$(rps "$REDIS_PORT" "$t" "$c" "$p")")
			done
			gm=$(printf '%s\n' "${g[@]}" | median)
			fm=$(printf '%s\n' "${f[@]}" | median)
			sm=$(printf '%s\n' "${s[@]}" | median)
			rm=$(printf '%s\n' "${r[@]}" | median)
			awk -v t="$t" -v c="$c" -v p="$p" -v g="$gm" -v f="$fm" -v s="$sm" -v r="$rm" \
				'function ratio(a, b) { return b > 0 ? a / b : 0 }
				BEGIN { printf "%-6s %4s %3s %12.0f %12.0f %12.0f %12.0f %8.2f %8.2f %8.2f %8.2f %8.2f\n", t, c, p, g, f, s, r, ratio(g, r), ratio(f, r), ratio(s, r), ratio(g, f), ratio(g, s) }'
		done
	done
done
