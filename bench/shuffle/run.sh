#!/usr/bin/env bash
# bench/shuffle/run.sh: repartition a table of N rows across a local
# 3-member cluster and compare with PostgreSQL's own Gather moving the
# same rows between processes of one server.
#
#   bash bench/shuffle/run.sh [ROWS] [RUNS]      (defaults: 1000000 5)
#
# Writes bench/shuffle/results/report.md and shuffle.png.  Each query runs
# RUNS times, interleaved with its baseline; the report keeps every raw
# number and shows medians.  Timings on a shared 2-core machine are noisy:
# compare the ratios of one run, not absolute numbers across runs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rows=${1:-1000000}
runs=${2:-5}
dir=${RX_BENCH_DIR:-/tmp/rdma_exchange_bench}
port=${RX_BENCH_PORT:-55400}
out="$here/results"
mkdir -p "$out"

bash "$top/test/cluster.sh" start "$dir" 3 "$port" bench >/dev/null
psql0() { bash "$top/test/cluster.sh" psql "$dir" 0 -X -q -At -d bench "$@"; }

echo "loading $rows rows" >&2
psql0 <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS t, t_local;
-- b is a permutation of a: joining a.b = b.a moves every row of one side
CREATE TABLE t (a int, b int, c bigint, d text);
INSERT INTO t SELECT i, ((i::bigint * 7919) % $rows) + 1, i * 3, md5(i::text)
  FROM generate_series(1, $rows) i;
CREATE TABLE t_local AS SELECT * FROM t;
SELECT rdma_exchange.create_distributed_table('t', 'a');
ANALYZE t; ANALYZE t_local;
SQL

# one EXPLAIN ANALYZE: wall time (ms) and the JSON plan
explain_json() {
  psql0 -c "SET max_parallel_workers_per_gather = 2" \
        -c "SET parallel_setup_cost = 0" -c "SET parallel_tuple_cost = 0" \
        -c "SET min_parallel_table_scan_size = 0" \
        -c "EXPLAIN (ANALYZE, FORMAT JSON) $1"
}

raw="$out/raw.jsonl"
: > "$raw"
for i in $(seq 1 "$runs"); do
  echo "run $i/$runs" >&2
  # distributed repartition: every row of one side is shuffled by a.b
  explain_json "SELECT count(*) FROM t x JOIN t y ON x.b = y.a" |
    python3 -c 'import json,sys; p=json.load(sys.stdin)[0]; print(json.dumps({"kind":"repartition","run":'"$i"',"plan":p}))' >> "$raw"
  # baseline: the same rows through Gather between processes of one server
  explain_json "SELECT * FROM t_local" |
    python3 -c 'import json,sys; p=json.load(sys.stdin)[0]; print(json.dumps({"kind":"gather","run":'"$i"',"plan":p}))' >> "$raw"
done

python3 "$here/report.py" "$raw" "$rows" "$out"
echo "report: $out/report.md" >&2
