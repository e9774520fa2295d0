#!/usr/bin/env bash
# bench/pgbench/run.sh: small queries (issue 18) with pgbench, on a plain
# server and on clusters of 1, 2 and 3 members, in one run on the same
# cores (DESIGN.md section 6).
#
#   bash bench/pgbench/run.sh [SCALE] [SECONDS] [RUNS]     (defaults: 10 5 1)
#
# Every instance gets pgbench's tables at SCALE (pgbench_accounts and
# pgbench_history hash-distributed on aid, branches and tellers reference
# tables on the clusters) and its own cores: the plain server and member 0
# on core 0, member i on core i mod nproc (taskset on the postmaster and
# what it forked; backends inherit it).  On this 2-core machine 2 members
# have a core each and 3 members share; pgbench itself is not pinned.
# Scripts (C clients, entering through member 0 unless "spread"):
#
#   point_1c       -b select-only, 1 client: a point lookup's latency
#   select_4c      -b select-only, 4 clients through member 0
#   select_spread  -b select-only, 4 clients spread over every member
#   simple_update  -b simple-update, 4 clients
#   tpcb           -b tpcb-like, 4 clients
#   minmax         SELECT min(aid), max(aid), 1 client
#   top10          ORDER BY aid DESC LIMIT 10, 1 client
#   range100       sum(abalance) over 100 consecutive aids, 1 client
#   in3            3 random aids in an IN list (spanning members), 1 client
#   new_session    a point lookup as a new session's first statement
#                  (pgbench -C), 1 client
#
# Per script and instance: tps, mean and 99th percentile latency (from
# pgbench's per-transaction log), median over RUNS.  Writes
# bench/pgbench/results/report.md, pgbench.png and raw.jsonl.  Runs as the
# current user or, started as root, as the test user (test/common.sh).
# The extension must be installed.
#
# Environment: RX_PGB_PORT (P, default 56700): the plain server on P,
# N-member clusters on P+10N..; RX_PGB_DIR (default /tmp/rx_pgbench_bench,
# removed at exit); RX_PGB_OUT (default bench/pgbench/results);
# RX_PGB_SIZES (default "1 2 3").
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"
rx_pgbin
rx_check_user

scale=${1:-10}
seconds=${2:-5}
runs=${3:-1}
base=${RX_PGB_PORT:-56700}
dir=${RX_PGB_DIR:-/tmp/rx_pgbench_bench}
out=${RX_PGB_OUT:-$here/results}
sizes=${RX_PGB_SIZES:-1 2 3}
ncpu=$(nproc)
db=bench

command -v taskset >/dev/null || { echo "run.sh: taskset (util-linux) is missing" >&2; exit 1; }

cleanup() {
	bash "$top/test/cluster.sh" destroy "$dir/plain" >/dev/null 2>&1 || true
	for n in $sizes; do
		bash "$top/test/cluster.sh" destroy "$dir/n$n" >/dev/null 2>&1 || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT
rm -rf "$dir"
mkdir -p "$dir/scripts" "$dir/logs" "$out"
chmod 777 "$dir" "$dir/scripts" "$dir/logs"

psql_at() { rx_as_user "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -d "$db" "${@:2}"; }
pgb() { rx_as_user "$PGBIN/pgbench" -h 127.0.0.1 "$@"; }

# pin DATADIR CORE: the instance's postmaster and what it forked so far
pin() {
	local pm p
	pm=$(head -1 "$1/postmaster.pid")
	for p in $pm $(pgrep -P "$pm"); do
		taskset -a -p -c "$2" "$p" >/dev/null 2>&1 || true
	done
}

accounts=$((scale * 100000))
cat > "$dir/scripts/minmax.sql" <<'EOF'
SELECT min(aid), max(aid) FROM pgbench_accounts;
EOF
cat > "$dir/scripts/top10.sql" <<'EOF'
SELECT aid, abalance FROM pgbench_accounts ORDER BY aid DESC LIMIT 10;
EOF
cat > "$dir/scripts/range100.sql" <<EOF
\\set aid random(1, $accounts - 100)
SELECT sum(abalance) FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + 100;
EOF
cat > "$dir/scripts/in3.sql" <<EOF
\\set a random(1, $accounts)
\\set b random(1, $accounts)
\\set c random(1, $accounts)
SELECT aid, abalance FROM pgbench_accounts WHERE aid IN (:a, :b, :c);
EOF
cat > "$dir/scripts/point.sql" <<EOF
\\set aid random(1, $accounts)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
EOF
chmod 644 "$dir"/scripts/*

# instance NAME N PORT: start it (N = 0: the plain server), pin, load
instance() {
	local name=$1 n=$2 port=$3
	echo "run.sh: $name: starting and loading scale $scale" >&2
	if [ "$n" = 0 ]; then
		bash "$top/test/cluster.sh" single "$dir/$name" "$port" "$db" >/dev/null
		pin "$dir/$name/m0" 0
		pgb -i -q -s "$scale" -p "$port" "$db" >/dev/null 2>&1
	else
		bash "$top/test/cluster.sh" start "$dir/$name" "$n" "$port" "$db" >/dev/null
		for ((i = 0; i < n; i++)); do
			pin "$dir/$name/m$i" $((i % ncpu))
		done
		pgb -i -q -s "$scale" -I dtp -p "$port" "$db" >/dev/null 2>&1
		psql_at "$port" -c "SELECT rdma_exchange.create_distributed_table('pgbench_accounts', 'aid')" \
			-c "SELECT rdma_exchange.create_distributed_table('pgbench_history', 'aid')" \
			-c "SELECT rdma_exchange.create_reference_table('pgbench_branches')" \
			-c "SELECT rdma_exchange.create_reference_table('pgbench_tellers')" >/dev/null
		pgb -i -q -s "$scale" -I g -p "$port" "$db" >/dev/null 2>&1
	fi
	psql_at "$port" -c "VACUUM ANALYZE" >/dev/null
}

# measure RUN NAME N PORT SCRIPT: one pgbench measurement into raw.jsonl
measure() {
	local r=$1 name=$2 n=$3 port=$4 script=$5 clients=1 spread=0 args=() tps=0 i pids=()
	case $script in
		point_1c) args=(-b select-only) ;;
		select_4c) args=(-b select-only); clients=4 ;;
		select_spread) args=(-b select-only); clients=4; spread=1 ;;
		simple_update) args=(-b simple-update); clients=4 ;;
		tpcb) args=(-b tpcb-like); clients=4 ;;
		new_session) args=(-C -f "$dir/scripts/point.sql") ;;
		*) args=(-f "$dir/scripts/$script.sql") ;;
	esac
	rm -f "$dir"/logs/*
	local procs=1
	[ "$spread" = 1 ] && [ "$n" -gt 1 ] && procs=$n
	for ((i = 0; i < procs; i++)); do
		local c=$((clients / procs + (i < clients % procs ? 1 : 0)))
		pgb -n "${args[@]}" -c "$c" -j "$c" -T "$seconds" -l --log-prefix="$dir/logs/p$i" \
			-p $((port + i)) "$db" > "$dir/out.$i" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || true; done
	for ((i = 0; i < procs; i++)); do
		local t
		t=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$dir/out.$i" | head -1)
		[ -n "$t" ] || { echo "run.sh: $name $script failed:" >&2; tail -3 "$dir/out.$i" >&2; t=0; }
		tps=$(python3 -c "print($tps + $t)")
	done
	# latencies (microseconds, third field of each transaction's line)
	local lat
	lat=$(cat "$dir"/logs/p* 2>/dev/null | awk '{ print $3 }' | python3 -c '
import statistics, sys
v = sorted(int(x) for x in sys.stdin if x.strip())
if not v:
    print("null null")
else:
    print(f"{statistics.mean(v) / 1000:.4f} {v[min(len(v) - 1, int(len(v) * 0.99))] / 1000:.4f}")')
	echo "{\"run\": $r, \"instance\": \"$name\", \"members\": $n, \"script\": \"$script\", \"clients\": $clients, \"spread\": $spread, \"tps\": $tps, \"mean_ms\": ${lat% *}, \"p99_ms\": ${lat#* }}" >> "$out/raw.jsonl"
	echo "run.sh: run $r $name $script: $tps tps, latency ${lat% *} ms mean, ${lat#* } ms p99" >&2
}

scripts="point_1c select_4c select_spread simple_update tpcb minmax top10 range100 in3 new_session"
: > "$out/raw.jsonl"
echo "{\"kind\": \"meta\", \"scale\": $scale, \"seconds\": $seconds, \"runs\": $runs, \"nproc\": $ncpu, \"sizes\": \"$sizes\", \"cpu\": \"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)\", \"date\": \"$(date -u '+%Y-%m-%d %H:%M UTC')\", \"commit\": \"$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)\"}" >> "$out/raw.jsonl"

instance plain 0 "$base"
for n in $sizes; do
	instance "n$n" "$n" $((base + 10 * n))
done
for ((r = 1; r <= runs; r++)); do
	for s in $scripts; do
		measure "$r" plain 0 "$base" "$s"
		for n in $sizes; do
			measure "$r" "n$n" "$n" $((base + 10 * n)) "$s"
		done
	done
done
# Debian's python3 has matplotlib (test/install-deps.sh); another first in PATH may not
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" "$here/report.py" "$out/raw.jsonl" "$out"
echo "run.sh: wrote $out/report.md" >&2
