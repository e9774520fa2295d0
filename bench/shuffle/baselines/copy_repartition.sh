#!/usr/bin/env bash
# bench/shuffle/baselines/copy_repartition.sh: the libpq COPY baseline of
# the shuffle benchmark: repartitioning a table across N plain PostgreSQL
# 15 servers (no rdma_exchange) the way Citus' repartition joins do it,
# with COPY ... TO STDOUT on the sending server piped into COPY ... FROM
# STDIN on the receiving one, over TCP on 127.0.0.1.
#
#   bash bench/shuffle/baselines/copy_repartition.sh N ROWS ROW DIR PORT
#
#   N     number of servers (members)
#   ROWS  rows in all; member i holds ROWS/N of them in table src
#   ROW   narrow    (k bigint, v bigint): 16-byte rows, like the paper's
#         lineitem  the 16 columns of TPC-H lineitem with their real types,
#                   repartitioned by l_orderkey
#   DIR   directory for the servers: member i in DIR/m<i> (test/cluster.sh
#         single); members left in DIR by an earlier run are destroyed
#         and made anew
#   PORT  member i listens on 127.0.0.1:PORT+i
#
# One run: TRUNCATE dst on every member, then for every pair (i, j),
# i = j included (a repartition also moves the local share through the
# same path), all N*N at once:
#
#   psql -p PORT+i -c "COPY (SELECT * FROM src
#                            WHERE abs(hashint8(key)::bigint) % N = j) TO STDOUT" |
#   psql -p PORT+j -c "COPY dst FROM STDIN"
#
# timed from the start of the first pipeline to the end of the last.  dst
# is UNLOGGED.  After each run (untimed) every member's dst must hold
# exactly its own partition and all ROWS rows.  (hashint8 is cast to
# bigint before abs(): abs() of the int4 minimum would overflow.)  Three
# runs; one JSON line per run on stdout:
#
#   {"kind":"copy_repartition","nmembers":N,"row":"narrow|lineitem",
#    "rows":ROWS,"run":R,"seconds":S,"rows_per_s":ROWS/S}
#
# The servers run as the test user (rdmax when started as root, see
# test/common.sh) and are all destroyed when the script exits, whatever
# the way.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"

usage() {
	echo "usage: copy_repartition.sh N ROWS narrow|lineitem DIR PORT" >&2
	exit 2
}

[ $# -eq 5 ] || usage
n=$1 rows=$2 row=$3 dir=${4%/} port=$5
if ! [[ $n =~ ^[1-9][0-9]*$ && $rows =~ ^[1-9][0-9]*$ && $port =~ ^[0-9]+$ ]]; then
	usage
fi
case "$row" in
	narrow) key=k ;;
	lineitem) key=l_orderkey ;;
	*) usage ;;
esac
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
runs=3
cluster=(bash "$top/test/cluster.sh")
rx_pgbin
rx_check_user

destroy_members() {
	local m
	for m in "$dir"/m[0-9]*; do
		[ -d "$m" ] && "${cluster[@]}" destroy "$m"
	done
	return 0
}

cleanup() {
	local running
	mapfile -t running < <(jobs -p)
	[ ${#running[@]} -eq 0 ] || kill "${running[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	destroy_members >/dev/null
	rmdir "$dir" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

rx_mkdir_for_user "$dir"
destroy_members >/dev/null
for ((i = 0; i < n; i++)); do
	"${cluster[@]}" single "$dir/m$i" $((port + i)) bench >/dev/null
done

# psql over TCP to member $1, as the servers' superuser
psqlm() {
	local i=$1
	shift
	"$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $((port + i)) \
		-U "$RX_TEST_USER" -d bench "$@"
}

# shellcheck source=bench/shuffle/rows.sh
. "$here/../rows.sh"
if [ "$row" = narrow ]; then
	columns=$RX_N16_COLS select=$RX_N16_SELECT
else
	columns=$RX_LI_COLS select=$RX_LI_SELECT
fi

# waits for the background jobs $pids, fails when one failed
wait_all() {
	local pid
	for pid in "${pids[@]}"; do
		wait "$pid" || { echo "copy_repartition: $1 failed" >&2; exit 1; }
	done
}

echo "copy_repartition: loading $rows $row rows on $n members" >&2
pids=()
for ((i = 0; i < n; i++)); do
	psqlm "$i" <<SQL &
SET client_min_messages = warning;
DROP TABLE IF EXISTS src, dst;
CREATE TABLE src ($columns);
CREATE UNLOGGED TABLE dst ($columns);
INSERT INTO src SELECT $select
  FROM generate_series($((i * rows / n + 1))::bigint, $(((i + 1) * rows / n))::bigint) g;
VACUUM ANALYZE src;
SQL
	pids+=($!)
done
wait_all "loading src"
echo "copy_repartition: $(psqlm 0 -c "SELECT round(avg(pg_column_size(s.*))) || ' bytes per row on disk, '
	|| round(avg(octet_length(s::text)) - 1) || ' in COPY text' FROM src s")" >&2
key_sum=$(for ((i = 0; i < n; i++)); do psqlm "$i" -c "SELECT sum($key) FROM src"; done \
	| awk '{ s += $1 } END { printf "%.0f\n", s }')

for ((r = 1; r <= runs; r++)); do
	for ((j = 0; j < n; j++)); do
		psqlm "$j" -c 'TRUNCATE dst'
	done
	pids=()
	start=$(date +%s.%N)
	for ((i = 0; i < n; i++)); do
		for ((j = 0; j < n; j++)); do
			psqlm "$i" -c "COPY (SELECT * FROM src WHERE abs(hashint8($key)::bigint) % $n = $j) TO STDOUT" \
				| psqlm "$j" -c 'COPY dst FROM STDIN' &
			pids+=($!)
		done
	done
	wait_all "a COPY pipeline"
	end=$(date +%s.%N)

	moved=0 sum=0
	for ((j = 0; j < n; j++)); do
		read -r count wrong part_sum < <(psqlm "$j" -F ' ' -c \
			"SELECT count(*), count(*) FILTER (WHERE abs(hashint8($key)::bigint) % $n <> $j), coalesce(sum($key), 0) FROM dst")
		[ "$wrong" = 0 ] || { echo "copy_repartition: member $j received $wrong rows of other members" >&2; exit 1; }
		moved=$((moved + count))
		sum=$(awk -v a="$sum" -v b="$part_sum" 'BEGIN { printf "%.0f\n", a + b }')
	done
	if [ "$moved" != "$rows" ] || [ "$sum" != "$key_sum" ]; then
		echo "copy_repartition: dst holds $moved rows (key sum $sum), src $rows (key sum $key_sum)" >&2
		exit 1
	fi

	awk -v n="$n" -v row="$row" -v rows="$rows" -v r="$r" -v s="$start" -v e="$end" 'BEGIN {
		t = e - s
		printf "{\"kind\":\"copy_repartition\",\"nmembers\":%d,\"row\":\"%s\",\"rows\":%d,\"run\":%d,\"seconds\":%.3f,\"rows_per_s\":%.0f}\n",
			n, row, rows, r, t, rows / t
	}'
done
