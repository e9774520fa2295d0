#!/usr/bin/env bash
# bench/tpch/run.sh: the TPC-H benchmark.  Runs the 22 TPC-H queries on a
# local 3-member rdma_exchange cluster and on one plain PostgreSQL server
# (test/cluster.sh single: the same settings, no extension) on the same
# machine, and compares them:
#
#   time      wall time of the query (psql's \timing, ms)
#   CPU       CPU seconds of every server process of the instance during
#             the run (postmaster, backends, parallel workers, the
#             transport worker; for the cluster the sum over its 3
#             members), read from /proc
#   bytes     bytes the transport sent between the members during the run
#             (bytes_sent of rdma_exchange.transport_stats(), summed over
#             the members)
#   answer    the cluster's answer against the single server's, compared
#             as bench/tpch/check.sh does (rows sorted, numbers rounded)
#
#   bash bench/tpch/run.sh [SF] [RUNS]        (defaults: 1 3)
#
# The cluster gets one schema per layout of bench/tpch/load.sh (tpch_a,
# tpch_b), the single server schema tpch (layout local).  A schema that
# already holds scale factor SF (load.sh records what it loaded in the
# schema's comment) is not loaded again; servers already running in
# RX_BENCH_DIR are reused (destroy them with test/cluster.sh destroy
# DIR/cluster and DIR/single).  For each layout and query: RUNS runs on
# each side, interleaved (cluster, single, cluster, single, ...), each
# through a fresh psql connection; then one EXPLAIN (ANALYZE, VERBOSE) on
# the cluster and one EXPLAIN ANALYZE on the single server.  A query that
# fails or exceeds the timeout is recorded as such; after a timeout the
# remaining runs of that query on that side are skipped.
#
# Writes, under RESULTS/sf<SF>/: raw.jsonl (every measurement, one JSON
# object a line; rewritten by each run), report.md and tpch.png
# (bench/tpch/report.py), load_<schema>.log and .json, and per layout <layout>/
# qNN.explain.txt, qNN_single.explain.txt and, for an answer that differs,
# qNN.diff.txt.
#
# Runs as the test user (rdmax when started as root, see test/common.sh);
# the extension must be installed (make test or make demo do that).  The
# machine's cores are shared by the 3 members and by the single server:
# the ratios show what distribution costs or saves on one machine, not
# the speed-up of 3 machines.
#
# Environment:
#   RX_BENCH_DIR      directory of the servers (default /tmp/rdma_exchange_tpch):
#                     DIR/cluster and DIR/single
#   RX_BENCH_PORT     cluster ports PORT..PORT+2 (fabric PORT+100..PORT+102),
#                     single server PORT+10 (default 27500); servers already
#                     in RX_BENCH_DIR keep their ports
#   RX_BENCH_LAYOUTS  cluster layouts to run (default "a b")
#   RX_BENCH_RESULTS  results directory (default bench/tpch/results)
#   RX_BENCH_TIMEOUT  statement_timeout of each query, seconds (default 900)
#   RX_QUERIES        queries to run (default all 22), e.g. "q01 q17"
#   RX_QUERY_DIR      directory of the qNN.sql files (default bench/tpch/queries)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"

# Debian's python3, which has python3-matplotlib (test/install-deps.sh)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

die() {
	echo "run.sh: $*" >&2
	exit 1
}

sf=${1:-1}
runs=${2:-3}
[[ $sf =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SF must be a number, not '$sf'"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive number, not '$runs'"
dir=${RX_BENCH_DIR:-/tmp/rdma_exchange_tpch}
base=${RX_BENCH_PORT:-27500}
layouts=${RX_BENCH_LAYOUTS:-a b}
timeout_s=${RX_BENCH_TIMEOUT:-900}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "RX_BENCH_TIMEOUT must be a number of seconds"
results=${RX_BENCH_RESULTS:-$here/results}
qdir=${RX_QUERY_DIR:-$here/queries}
queries=${RX_QUERIES:-$(cd "$qdir" && ls q*.sql | sed 's/\.sql$//')}
for l in $layouts; do
	case $l in a|b) ;; *) die "RX_BENCH_LAYOUTS: layouts are a and b, not '$l'" ;; esac
done
for qn in $queries; do
	[ -f "$qdir/$qn.sql" ] || die "no query $qdir/$qn.sql"
done

rx_pgbin
rx_check_user
mkdir -p "$dir"
case "$results" in /*) ;; *) results="$(pwd)/$results" ;; esac
out=$results/sf$sf
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
tick=$(getconf CLK_TCK)

# the servers: reuse those of RX_BENCH_DIR (with their ports) or start them
cport=$base
sport=$((base + 10))
[ -f "$dir/cluster/cluster.env" ] && cport=$(bash "$top/test/cluster.sh" ports "$dir/cluster" | head -1)
[ -f "$dir/single/cluster.env" ] && sport=$(bash "$top/test/cluster.sh" ports "$dir/single" | head -1)
bash "$top/test/cluster.sh" start "$dir/cluster" 3 "$cport" tpch >&2
bash "$top/test/cluster.sh" single "$dir/single" "$sport" tpch >&2
cports=("$cport" $((cport + 1)) $((cport + 2)))

# every psql (ours and load.sh's) reaches the servers over loopback as the
# test user
export PGHOST=127.0.0.1 PGDATABASE=tpch PGUSER=$RX_TEST_USER
q() {
	local port=$1
	shift
	PGPORT=$port psql -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# jstr S: S as a JSON string (control characters become spaces)
jstr() {
	local s
	s=$(printf '%s' "$1" | tr '\000-\037' ' ')
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

# ---- machine and settings ----
{
	printf '{"kind": "machine", "sf": %s, "runs": %d, "timeout_s": %d' "$(jstr "$sf")" "$runs" "$timeout_s"
	printf ', "date": %s' "$(jstr "$(date -u '+%Y-%m-%d %H:%M UTC')")"
	printf ', "nproc": %d' "$(nproc)"
	printf ', "mem_kb": %d' "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
	printf ', "cpu": %s' "$(jstr "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)")"
	printf ', "kernel": %s' "$(jstr "$(uname -r)")"
	printf ', "pg_version": %s' "$(jstr "$(q "$sport" -c 'SELECT version()')")"
	printf ', "cluster_pg_version": %s' "$(jstr "$(q "$cport" -c 'SELECT version()')")"
	printf ', "transport": %s' "$(jstr "$(q "$cport" -c 'SHOW rdma_exchange.fabric_provider')")"
	printf ', "extension": %s' "$(jstr "$(q "$cport" -c "SELECT extversion FROM pg_extension WHERE extname = 'rdma_exchange'")")"
	printf ', "commit": %s' "$(jstr "$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)")"
	printf ', "settings": %s' "$(jstr "$(q "$sport" -F '=' -c "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'max_parallel_workers_per_gather', 'jit') ORDER BY name" | paste -sd ' ')")"
	printf ', "layouts": %s, "queries": %s}\n' "$(jstr "$layouts")" "$(jstr "$(echo "$queries" | paste -sd ' ')")"
} >>"$raw"

# ---- loading ----

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# load TARGET PORT LAYOUT SCHEMA: loads SCHEMA with load.sh unless it
# already holds SF (load.sh with RX_LOAD_KEEP=1 decides); one "load" line
# in raw.jsonl either way, with the times of the load that made the data
# (kept in load_SCHEMA.json next to its log)
load() {
	local target=$1 port=$2 layout=$3 schema=$4 meta t0 t1 log where=cluster
	[ "$target" = single ] && where='single server'
	log=$out/load_$schema.log
	echo "loading SF $sf, layout $layout, into schema $schema on the $where" >&2
	t0=$(date +%s%N)
	if ! RX_LOAD_KEEP=1 PGPORT=$port bash "$here/load.sh" "$sf" "$layout" "$schema" 2>&1 |
		tee "$tmp/load.log" >&2; then
		die "load.sh $sf $layout $schema on the $where failed"
	fi
	t1=$(date +%s%N)
	if grep -q ': kept$' "$tmp/load.log"; then
		reused=true
		meta=$(cat "$out/load_$schema.json" 2>/dev/null) || meta="{\"sf\": \"$sf\"}"
	else
		reused=false
		cp "$tmp/load.log" "$log"
		meta=$("$py" - "$log" "$sf" "$(((t1 - t0) / 1000000))" <<'PY'
import json, re, sys, time
log, sf, ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
tables, total = {}, None
for line in open(log):
    m = re.match(r"\s+(\w+)\s+(\d+) rows\s+([\d.]+) s", line)
    if m:
        tables[m.group(1)] = {"rows": int(m.group(2)), "seconds": float(m.group(3))}
    m = re.match(r"\s+loaded and analyzed in ([\d.]+) s", line)
    if m:
        total = float(m.group(1))
print(json.dumps({"sf": sf, "seconds": ms / 1000, "load_seconds": total, "tables": tables,
                  "loaded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}))
PY
)
		echo "$meta" >"$out/load_$schema.json"
	fi
	"$py" -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps(dict(kind="load", target=sys.argv[2], layout=sys.argv[3], schema=sys.argv[4], reused=sys.argv[5] == "true", **d)))' \
		"$meta" "$target" "$layout" "$schema" "$reused" >>"$raw"
}

for l in $layouts; do
	load cluster "$cport" "$l" "tpch_$l"
done
load single "$sport" local tpch

# ---- measuring ----

# cpu_ticks DATADIR...: CPU clock ticks of the server processes of these
# data directories: each postmaster's own and reaped children's time
# (utime stime cutime cstime), plus utime stime of its live children
# (backends that exit are reaped by the postmaster: their time moves to
# its cutime/cstime)
cpu_ticks() {
	local pids='' d
	for d in "$@"; do
		pids="$pids $(head -1 "$d/postmaster.pid")"
	done
	# fields after "pid (comm) ": 1 state, 2 ppid, 12 utime, 13 stime,
	# 14 cutime, 15 cstime
	# (processes that exit meanwhile make cat fail: not an error)
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pids="$pids" '
		BEGIN { n = split(pids, a, " "); for (i = 1; i <= n; i++) pm[a[i]] = 1 }
		{
			pid = $1
			line = $0
			sub(/^.*\) /, "", line)
			split(line, f, " ")
			if (pid in pm)
				t += f[12] + f[13] + f[14] + f[15]
			else if (f[2] in pm)
				t += f[12] + f[13]
		}
		END { printf "%d\n", t }'
}
cluster_dirs=("$dir/cluster/m0" "$dir/cluster/m1" "$dir/cluster/m2")
single_dirs=("$dir/single/m0")

# bytes_sent: the transport's bytes_sent summed over the members, each
# read through a fresh connection
bytes_sent() {
	local p v s=0
	for p in "${cports[@]}"; do
		v=$(q "$p" -c "SELECT value FROM rdma_exchange.transport_stats() WHERE name = 'bytes_sent'") || return 1
		s=$((s + v))
	done
	echo "$s"
}

# normalize FILE: an answer as check.sh compares it: rows sorted, numbers
# with more than 2 decimals rounded to 2
normalize() {
	awk -F'|' -v OFS='|' -f "$here/normalize.awk" "$1" | LC_ALL=C sort
}


# run_query SIDE(cluster|single) SCHEMA FILE: one run through a fresh
# psql; sets status (ok, error, timeout), ms, wall_ms, cpu_s, bytes,
# rows, md5, err; the normalized answer is in $tmp/SIDE.ans
run_query() {
	local side=$1 schema=$2 file=$3 port b0='' b1='' c0 c1 t0 t1 rc
	local -a dirs
	if [ "$side" = cluster ]; then
		port=$cport
		dirs=("${cluster_dirs[@]}")
		b0=$(bytes_sent) || b0=''
	else
		port=$sport
		dirs=("${single_dirs[@]}")
	fi
	c0=$(cpu_ticks "${dirs[@]}")
	t0=$(date +%s%N)
	rc=0
	{
		echo "SET search_path = $schema;"
		echo "SET statement_timeout = '${timeout_s}s';"
		printf '%s\n' '\timing on'
		cat "$file"
	} | PGPORT=$port timeout -k 10 $((timeout_s + 60)) psql -X -q -At -v ON_ERROR_STOP=1 \
		>"$tmp/$side.out" 2>"$tmp/$side.err" || rc=$?
	t1=$(date +%s%N)
	c1=$(cpu_ticks "${dirs[@]}")
	if [ "$side" = cluster ]; then
		b1=$(bytes_sent) || b1=''
	fi
	wall_ms=$(((t1 - t0) / 1000000))
	cpu_s=$(awk -v a="$c0" -v b="$c1" -v t="$tick" 'BEGIN { printf "%.2f", (b - a) / t }')
	bytes=null
	[ -n "$b0" ] && [ -n "$b1" ] && bytes=$((b1 - b0))
	ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$tmp/$side.out" | tail -1)
	[ -n "$ms" ] || ms=null
	err=''
	if [ $rc = 0 ]; then
		status=ok
		grep -v '^Time: ' "$tmp/$side.out" >"$tmp/$side.rows" || true
		normalize "$tmp/$side.rows" >"$tmp/$side.ans"
		rows=$(wc -l <"$tmp/$side.ans")
		md5=$(md5sum <"$tmp/$side.ans" | cut -c1-32)
	else
		err=$(head -c 2000 "$tmp/$side.err")
		if [ $rc = 124 ] || [ $rc = 137 ] || grep -q 'statement timeout' "$tmp/$side.err"; then
			status=timeout
		else
			status=error
		fi
		[ -n "$err" ] || err="psql exited with status $rc"
		rows=null
		md5=''
		: >"$tmp/$side.ans"
	fi
}

# keep P: copies the results of the last run_query to P_status, P_ms, ...
keep() {
	local v
	for v in status ms wall_ms cpu_s bytes rows md5 err; do
		printf -v "${1}_$v" '%s' "${!v}"
	done
}

# record LAYOUT QUERY RUN SIDE P [SAME]: the run kept as P as a JSON line
record() {
	local layout=$1 query=$2 run=$3 side=$4 p=$5 same=${6:-null}
	local status=${p}_status ms=${p}_ms wall_ms=${p}_wall_ms cpu_s=${p}_cpu_s bytes=${p}_bytes
	local rows=${p}_rows md5=${p}_md5 err=${p}_err
	printf '{"kind": "query", "layout": "%s", "query": "%s", "run": %d, "side": "%s", "status": "%s", "ms": %s, "wall_ms": %d, "cpu_s": %s, "bytes": %s, "rows": %s, "answer_md5": %s, "same": %s, "error": %s}\n' \
		"$layout" "$query" "$run" "$side" "${!status}" "${!ms}" "${!wall_ms}" "${!cpu_s}" "${!bytes}" "${!rows}" \
		"$(jstr "${!md5}")" "$same" "$(jstr "${!err}")" >>"$raw"
}

# skipped LAYOUT QUERY RUN SIDE: a run left out after a timeout
skipped() {
	printf '{"kind": "query", "layout": "%s", "query": "%s", "run": %d, "side": "%s", "status": "skipped", "ms": null, "wall_ms": null, "cpu_s": null, "bytes": null, "rows": null, "answer_md5": "", "same": null, "error": "skipped after a timeout"}\n' \
		"$1" "$2" "$3" "$4" >>"$raw"
}

# explain SIDE SCHEMA FILE OUT OPTIONS: EXPLAIN (OPTIONS) of the query
explain() {
	local side=$1 schema=$2 file=$3 dest=$4 opts=$5 port=$cport
	[ "$side" = single ] && port=$sport
	case $opts in
		*ANALYZE*) : >"$dest" ;;
		*) echo "-- EXPLAIN ($opts) without ANALYZE: the query timed out" >"$dest" ;;
	esac
	{
		echo "SET search_path = $schema;"
		echo "SET statement_timeout = '${timeout_s}s';"
		echo "EXPLAIN ($opts)"
		grep -v '^--' "$file"
	} | PGPORT=$port timeout -k 10 $((timeout_s + 60)) psql -X -q -At -v ON_ERROR_STOP=1 >>"$dest" 2>&1 || true
}

# shellcheck disable=SC2154  # c_* and s_* are set by keep
for l in $layouts; do
	mkdir -p "$out/$l"
	rm -f "$out/$l"/q*.explain.txt "$out/$l"/q*.diff.txt
	for qn in $queries; do
		file=$qdir/$qn.sql
		c_out=0 s_out=0		# set after a timeout: skip that side's runs
		line="$qn layout $l:"
		for r in $(seq 1 "$runs"); do
			# cluster, then single server
			c_status=skipped s_status=skipped
			if [ $c_out = 0 ]; then
				run_query cluster "tpch_$l" "$file"
				keep c
				[ "$c_status" = timeout ] && c_out=1
				cp "$tmp/cluster.ans" "$tmp/c.ans"
			fi
			if [ $s_out = 0 ]; then
				run_query single tpch "$file"
				keep s
				[ "$s_status" = timeout ] && s_out=1
			fi
			same=null
			if [ "$c_status" = ok ] && [ "$s_status" = ok ]; then
				if [ "$c_md5" = "$s_md5" ]; then
					same=true
				else
					same=false
					[ -f "$out/$l/$qn.diff.txt" ] ||
						diff "$tmp/c.ans" "$tmp/single.ans" | head -40 >"$out/$l/$qn.diff.txt" || true
				fi
			fi
			if [ "$c_status" = skipped ]; then
				skipped "$l" "$qn" "$r" cluster
			else
				record "$l" "$qn" "$r" cluster c "$same"
			fi
			if [ "$s_status" = skipped ]; then
				skipped "$l" "$qn" "$r" single
			else
				record "$l" "$qn" "$r" single s
			fi
			cs=$c_status ss=$s_status
			[ "$c_status" = ok ] && cs="${c_ms%.*}ms"
			[ "$s_status" = ok ] && ss="${s_ms%.*}ms"
			[ "$same" = false ] && cs="$cs(DIFFERENT)"
			line="$line $cs/$ss"
		done
		echo "$line" >&2
		# the plans, from one more run each (without ANALYZE after a timeout)
		if [ $c_out = 0 ]; then
			explain cluster "tpch_$l" "$file" "$out/$l/$qn.explain.txt" 'ANALYZE, VERBOSE'
		else
			explain cluster "tpch_$l" "$file" "$out/$l/$qn.explain.txt" 'VERBOSE'
		fi
		if [ $s_out = 0 ]; then
			explain single tpch "$file" "$out/$l/${qn}_single.explain.txt" 'ANALYZE'
		else
			explain single tpch "$file" "$out/$l/${qn}_single.explain.txt" 'VERBOSE'
		fi
	done
done

"$py" "$here/report.py" "$raw" "$out"
echo "report: $out/report.md" >&2
