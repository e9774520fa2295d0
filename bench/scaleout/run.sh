#!/usr/bin/env bash
# bench/scaleout/run.sh: does a cluster of N members answer TPC-H faster
# than one server, when every member has cores of its own?
#
#   bash bench/scaleout/run.sh [SF] [RUNS]        (defaults: 1 3)
#
# For each N of RX_SCALE_N, a local cluster of N members where member i
# runs on cores i*C .. i*C+C-1 only (C = RX_SCALE_CORES), against one
# plain PostgreSQL server on cores 0 .. C-1, with the same settings
# (test/cluster.sh; max_parallel_workers_per_gather = C - 1 on every
# instance).  Every process of an instance stays on its cores: the
# postmaster is pinned with taskset right after it starts and everything
# it forks (backends, parallel workers, the transport worker) inherits
# that.  Cores are dedicated, never shared: N * C must not exceed the
# machine's cores.  N = 1 measures what running a query as fragments and
# gathering their rows costs (one member moves no rows between members).
#
# For each index set of RX_SCALE_INDEXES (bench/tpch/load.sh's
# RX_INDEX_SET: pk, fk) and each query: RUNS runs on the cluster and on
# the single server, interleaved, each through a fresh psql; the answers
# are compared (rows sorted, numbers rounded, as bench/tpch/check.sh).
# Per query: the median times, speed-up (single / cluster), efficiency
# (speed-up / N); geometric means per N and index set.
#
# Writes RESULTS/sf<SF>_c<C>/: raw.jsonl (every run), report.md and
# scaleout.png (bench/scaleout/report.py; speed-up per query and, when
# more than one N ran, the geometric mean over N), and load_*.log.
#
# Environment:
#   RX_SCALE_N        cluster sizes (default "1 2")
#   RX_SCALE_CORES    cores per member and of the single server (default 1)
#   RX_SCALE_WORKERS  rdma_exchange.workers_per_member values the cluster
#                     runs each query with (default "-1": as many parallel
#                     workers per member as max_parallel_workers_per_gather,
#                     C - 1; "-1 0" also measures one backend per member)
#   RX_SCALE_LAYOUT   layout of bench/tpch/load.sh, a or b (default a)
#   RX_SCALE_INDEXES  index sets (default "pk fk")
#   RX_QUERIES        queries (default all 22), e.g. "q01 q17"
#   RX_BENCH_TIMEOUT  statement_timeout of a query, seconds (default 600)
#   RX_BENCH_DIR      servers' directory (default /tmp/rdma_exchange_scaleout):
#                     DIR/single, DIR/n<N>; kept between runs (data too)
#   RX_BENCH_PORT     single server's port; cluster N uses PORT+10*N..
#                     (default 28500)
#   RX_SCALE_RESULTS  results directory (default bench/scaleout/results)
#   RX_SCALE_COMMIT   what the report names as the commit (default git
#                     describe; bench/device.sh sets it where there is no
#                     .git)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tpch=$top/bench/tpch
# shellcheck source=test/common.sh
. "$top/test/common.sh"
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

die() {
	echo "scaleout: $*" >&2
	exit 1
}

sf=${1:-1}
runs=${2:-3}
[[ $sf =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SF must be a number, not '$sf'"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive number, not '$runs'"
sizes=${RX_SCALE_N:-1 2}
cores=${RX_SCALE_CORES:-1}
workers=${RX_SCALE_WORKERS:--1}
layout=${RX_SCALE_LAYOUT:-a}
indexsets=${RX_SCALE_INDEXES:-pk fk}
timeout_s=${RX_BENCH_TIMEOUT:-600}
dir=${RX_BENCH_DIR:-/tmp/rdma_exchange_scaleout}
base=${RX_BENCH_PORT:-28500}
results=${RX_SCALE_RESULTS:-$here/results}
queries=${RX_QUERIES:-$(cd "$tpch/queries" && ls q*.sql | sed 's/\.sql$//')}
ncpu=$(nproc)
[[ $cores =~ ^[1-9][0-9]*$ ]] || die "RX_SCALE_CORES must be a positive number"
case $layout in a|b) ;; *) die "RX_SCALE_LAYOUT is a or b, not '$layout'" ;; esac
for n in $sizes; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || die "RX_SCALE_N: '$n' is not a cluster size"
	[ $((n * cores)) -le "$ncpu" ] ||
		die "$n members of $cores cores need $((n * cores)) cores, this machine has $ncpu"
done
for s in $indexsets; do
	case $s in pk|fk) ;; *) die "RX_SCALE_INDEXES: index sets are pk and fk, not '$s'" ;; esac
done
for w in $workers; do
	[[ $w =~ ^(-1|[0-9]+)$ ]] || die "RX_SCALE_WORKERS: '$w' is not a number of workers"
done
command -v taskset >/dev/null || die "taskset (util-linux) is missing"

rx_pgbin
rx_check_user
mkdir -p "$dir"
case "$results" in /*) ;; *) results="$(pwd)/$results" ;; esac
out=$results/sf${sf}_c$cores
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PGHOST=127.0.0.1 PGDATABASE=tpch PGUSER=$RX_TEST_USER

q() {
	local port=$1
	shift
	PGPORT=$port psql -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# pin DATADIR FIRST_CORE: the instance's postmaster and what it forked so
# far on cores FIRST_CORE .. FIRST_CORE+C-1; later children inherit it
pin() {
	local pm list p
	pm=$(head -1 "$1/postmaster.pid")
	list="$2-$(($2 + cores - 1))"
	for p in $pm $(pgrep -P "$pm"); do
		taskset -a -p -c "$list" "$p" >/dev/null 2>&1 || true
	done
}

# settings DATADIR PORT: max_parallel_workers_per_gather = C - 1
settings() {
	q "$2" -d postgres -c "ALTER SYSTEM SET max_parallel_workers_per_gather = $((cores - 1))" \
		-c "SELECT pg_reload_conf()" >/dev/null
}

# load PORT LAYOUT SCHEMA INDEXES
load() {
	echo "scaleout: SF $sf, layout $2, indexes $4 into $3 on port $1" >&2
	RX_LOAD_KEEP=1 RX_INDEX_SET=$4 PGPORT=$1 bash "$tpch/load.sh" "$sf" "$2" "$3" \
		>"$out/load_$1_$3.log" 2>&1 || { tail "$out/load_$1_$3.log" >&2; die "loading $3 on port $1 failed"; }
}

# run_query PORT SCHEMA QUERY SIDE [WORKERS]: one run through a fresh
# psql (the cluster's with rdma_exchange.workers_per_member = WORKERS);
# sets status and ms; the normalized answer goes to $tmp/SIDE.ans
run_query() {
	local port=$1 schema=$2 file=$tpch/queries/$3.sql side=$4 rc=0
	{
		echo "SET search_path = $schema;"
		[ -z "${5:-}" ] || echo "SET rdma_exchange.workers_per_member = $5;"
		echo "SET statement_timeout = '${timeout_s}s';"
		printf '%s\n' '\timing on'
		cat "$file"
	} | PGPORT=$port timeout -k 10 $((timeout_s + 60)) psql -X -q -At -v ON_ERROR_STOP=1 \
		>"$tmp/$side.out" 2>"$tmp/$side.err" || rc=$?
	ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$tmp/$side.out" | tail -1)
	if [ $rc = 0 ] && [ -n "$ms" ]; then
		status=ok
		grep -v '^Time: ' "$tmp/$side.out" |
			awk -F'|' -v OFS='|' -f "$tpch/normalize.awk" | LC_ALL=C sort >"$tmp/$side.ans"
	else
		status=error
		grep -q 'statement timeout' "$tmp/$side.err" && status=timeout
		ms=null
		: >"$tmp/$side.ans"
	fi
}

# the single server, on the first cores
sport=$base
bash "$top/test/cluster.sh" single "$dir/single" "$sport" tpch >&2
pin "$dir/single/m0" 0
settings "$dir/single/m0" "$sport"
for s in $indexsets; do
	load "$sport" local "tpch_$s" "$s"
done

printf '{"kind": "machine", "sf": "%s", "runs": %d, "cores": %d, "layout": "%s", "sizes": "%s", "workers": "%s", "indexes": "%s", "nproc": %d, "cpu": "%s", "date": "%s", "commit": "%s"}\n' \
	"$sf" "$runs" "$cores" "$layout" "$sizes" "$workers" "$indexsets" "$ncpu" \
	"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')" "${RX_SCALE_COMMIT:-$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)}" >>"$raw"

for n in $sizes; do
	cport=$((base + 10 * n))
	bash "$top/test/cluster.sh" start "$dir/n$n" "$n" "$cport" tpch >&2
	for ((i = 0; i < n; i++)); do
		pin "$dir/n$n/m$i" $((i * cores))
		settings "$dir/n$n/m$i" $((cport + i))
	done
	for s in $indexsets; do
		load "$cport" "$layout" "tpch_$s" "$s"
	done
	for s in $indexsets; do
		for qn in $queries; do
			for ((r = 1; r <= runs; r++)); do
				run_query "$sport" "tpch_$s" "$qn" single
				sstatus=$status sms=$ms
				for w in $workers; do
					run_query "$cport" "tpch_$s" "$qn" cluster "$w"
					same=false
					[ "$status" = ok ] && [ "$sstatus" = ok ] &&
						cmp -s "$tmp/cluster.ans" "$tmp/single.ans" && same=true
					printf '{"kind": "query", "n": %d, "workers": %d, "indexes": "%s", "query": "%s", "run": %d, "cluster_status": "%s", "cluster_ms": %s, "single_status": "%s", "single_ms": %s, "same": %s}\n' \
						"$n" "$w" "$s" "$qn" "$r" "$status" "$ms" "$sstatus" "$sms" "$same" >>"$raw"
					echo "scaleout: N=$n workers $w $s $qn run $r: cluster $ms ms ($status), single $sms ms ($sstatus), same answer: $same" >&2
				done
			done
		done
	done
	# the next size gets the cores
	bash "$top/test/cluster.sh" stop "$dir/n$n" >&2
done

"$py" "$here/report.py" "$raw" "$out"
echo "scaleout: report in $out/report.md" >&2
