#!/usr/bin/env bash
# bench/shuffle/run.sh: repartition a table of N rows across a local
# 3-member cluster, next to the baselines of DESIGN.md section 6 measured
# in the same run:
#
#   repartition  distributed join that shuffles every row of one side by
#                its join key (t x JOIN t y ON x.b = y.a, t distributed by
#                a): the SHUFFLE counters give rows and bytes per member
#   parallel     the same join on one server, parallel query (2 workers)
#   gather       the same rows through PostgreSQL's own Gather between the
#                processes of one server (SELECT * of the local copy, 2
#                workers, Gather only: the tuples/s of shm_mq)
#   transport    the raw data plane over the same libfabric provider,
#                without the executor: rdma_exchange.transport_selftest()
#                all-to-all between the 3 members, full-size messages
#
#   bash bench/shuffle/run.sh [ROWS] [RUNS]      (defaults: 1000000 5)
#
# Writes bench/shuffle/results/report.md, shuffle.png and raw.jsonl.  The
# runs of all kinds are interleaved; the report keeps every raw number and
# shows medians.  Timings on a shared 2-core machine are noisy: compare
# the ratios of one run, not absolute numbers across runs.  The three
# members share the machine's cores, so the distributed query cannot be
# faster than one server here; the numbers show the cost of the exchange.
#
# Runs as the test user (rdmax when started as root, see test/common.sh);
# the extension must be installed (make test or make demo do that).
#
# Environment: RX_BENCH_DIR (cluster directory, default
# /tmp/rdma_exchange_bench), RX_BENCH_PORT (first port to try, default
# 55400).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"

# Debian's python3, which has python3-matplotlib (test/install-deps.sh),
# even when another python3 comes first in PATH
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

rows=${1:-1000000}
runs=${2:-5}
dir=${RX_BENCH_DIR:-/tmp/rdma_exchange_bench}
out="$here/results"
mkdir -p "$out"
rx_pgbin

if [ -f "$dir/cluster.env" ]; then
	port=$(bash "$top/test/cluster.sh" ports "$dir" | head -1)
else
	port=$(rx_free_base 3 "${RX_BENCH_PORT:-55400}")
fi
bash "$top/test/cluster.sh" start "$dir" 3 "$port" bench >/dev/null
psqlm() {
	local i=$1
	shift
	bash "$top/test/cluster.sh" psql "$dir" "$i" -X -q -At -v ON_ERROR_STOP=1 -d bench "$@"
}

echo "loading $rows rows" >&2
psqlm 0 <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS t, t_local;
-- b is a permutation of a: joining x.b = y.a moves every row of x whose
-- b belongs to another member than its a (two thirds of them)
CREATE TABLE t (a int, b int, c bigint, d text);
INSERT INTO t SELECT i, ((i::bigint * 7919) % $rows)::int + 1, i * 3, md5(i::text)
  FROM generate_series(1, $rows) i;
CREATE TABLE t_local AS SELECT * FROM t;
SELECT rdma_exchange.create_distributed_table('t', 'a');
SQL
for i in 0 1 2; do psqlm "$i" -c 'VACUUM ANALYZE t'; done
psqlm 0 -c 'VACUUM ANALYZE t_local'

# the distributed and the single-server join must agree
dist_answer=$(psqlm 0 -c 'SELECT count(*), sum(x.c) FROM t x JOIN t y ON x.b = y.a')
local_answer=$(psqlm 0 -c 'SELECT count(*), sum(x.c) FROM t_local x JOIN t_local y ON x.b = y.a')
if [ "$dist_answer" != "$local_answer" ]; then
	echo "run.sh: distributed answer $dist_answer differs from one server's $local_answer" >&2
	exit 1
fi

# one EXPLAIN ANALYZE (no per-node timing: it would cost more than the
# rows), as one JSON line tagged with kind and run
explain_json() {
	local kind=$1 run=$2 query=$3
	psqlm 0 -c "SET max_parallel_workers_per_gather = 2" \
		-c "SET parallel_setup_cost = 0" -c "SET parallel_tuple_cost = 0" \
		-c "SET min_parallel_table_scan_size = 0" \
		-c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) $query" |
		"$py" -c 'import json,sys; print(json.dumps({"kind": sys.argv[1], "run": int(sys.argv[2]), "plan": json.load(sys.stdin)[0]}))' "$kind" "$run"
}

# transport_selftest all-to-all: each member sends $msgs full-size
# messages to each of the two others and receives theirs; one JSON line
# per member
transport_run() {
	local run=$1 msgs=$2 i pids=() qid token addrs
	qid=$(( (RANDOM << 30) | (RANDOM << 15) | RANDOM ))
	token=$(( (RANDOM << 30) | (RANDOM << 15) | RANDOM ))
	addrs="{127.0.0.1:$((port + 100)),127.0.0.1:$((port + 101)),127.0.0.1:$((port + 102))}"
	for i in 0 1 2; do
		local others
		others=$(printf '%s\n' 0 1 2 | grep -vx "$i" | paste -sd,)
		psqlm "$i" -c "SELECT row_to_json(s) FROM rdma_exchange.transport_selftest($qid, $token, $i, '$addrs', $msgs, 1000000, '{$others}', '{$others}') s" \
			> "$out/.transport.$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in 0 1 2; do
		"$py" -c 'import json,sys; print(json.dumps({"kind": "transport", "run": int(sys.argv[1]), "member": int(sys.argv[2]), "result": json.loads(open(sys.argv[3]).read())}))' \
			"$run" "$i" "$out/.transport.$i"
		rm -f "$out/.transport.$i"
	done
}

raw="$out/raw.jsonl"
: > "$raw"
# messages per destination: about as many bytes as the repartition moves
msgs=$(( rows / 40 + 100 ))
for run in $(seq 1 "$runs"); do
	echo "run $run/$runs" >&2
	explain_json repartition "$run" 'SELECT count(*), sum(x.c) FROM t x JOIN t y ON x.b = y.a' >> "$raw"
	explain_json parallel "$run" 'SELECT count(*), sum(x.c) FROM t_local x JOIN t_local y ON x.b = y.a' >> "$raw"
	explain_json gather "$run" 'SELECT * FROM t_local' >> "$raw"
	transport_run "$run" "$msgs" >> "$raw"
done

"$py" "$here/report.py" "$raw" "$rows" "$out" "$(nproc)"
echo "report: $out/report.md" >&2
