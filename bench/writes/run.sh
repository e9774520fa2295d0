#!/usr/bin/env bash
# bench/writes/run.sh: what one-phase and two-phase commit and the read
# barrier cost, measured with pgbench against a single server in the same
# run (DESIGN.md section 6).
#
#   bash bench/writes/run.sh [SECONDS] [RUNS]        (defaults: 10 3)
#
# A local 3-member cluster (test/cluster.sh) and a plain server
# (cluster.sh single, the same settings) hold the same tables: acct (id,
# bal) with 30000 accounts, hash-distributed on the cluster, and ev (id,
# v) for inserts; on the plain server both are ordinary tables.  A local
# table own (m, n, id) on member 0 and on the plain server lists, for each
# member m, the ids member m owns (rdma_exchange.member_index_of), so a
# script picks the members its rows live on.  Every script enters
# through member 0 (the coordinator) and runs C=2 pgbench clients for
# SECONDS; the configurations run interleaved in a random order within
# each run r = 1..RUNS, and the report shows medians:
#
#   insert_local    INSERT of one row member 0 owns (no other member)
#   insert_remote   INSERT of one row member 1 owns (one-phase commit there)
#   update_1phase   two UPDATEs of rows member 1 owns (one other member:
#                   one phase)
#   update_2phase   UPDATE a row member 0 owns and one member 1 owns (two
#                   members: two-phase commit with the read barrier)
#   update_3phase   UPDATE a row member 1 owns and one member 2 owns (two
#                   other members: two-phase, the decision record here)
#   sum_alone       SELECT sum(bal) FROM acct, rdma_exchange.consistent_reads
#                   on and off
#   sum_with_writes the same while 2 more clients run update_3phase through
#                   member 1 (their tps is recorded too)
#
# and the same scripts (the sums without the setting) on the plain server.
# Writes bench/writes/results/report.md, writes.png and raw.jsonl.
# Runs as the current user or, when started as root, the servers run as
# the test user (rdmax, test/common.sh).  The extension must be installed.
#
# Environment: RX_WRITES_PORT (P, default 26900): members on P..P+2 (fabric
# P+100..), the plain server on P+10; RX_WRITES_DIR (default
# /tmp/rx_writes_bench, removed at exit); RX_WRITES_OUT (default
# bench/writes/results).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"
rx_pgbin
rx_check_user

seconds=${1:-10}
runs=${2:-3}
port=${RX_WRITES_PORT:-26900}
dir=${RX_WRITES_DIR:-/tmp/rx_writes_bench}
out=${RX_WRITES_OUT:-$here/results}
db=bench
naccounts=30000

cleanup() {
	bash "$top/test/cluster.sh" destroy "$dir/cluster" >/dev/null 2>&1 || true
	bash "$top/test/cluster.sh" destroy "$dir/plain" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
rm -rf "$dir"
mkdir -p "$dir/scripts" "$out"
chmod 755 "$dir" "$dir/scripts"

echo "run.sh: starting a 3-member cluster and a plain server" >&2
bash "$top/test/cluster.sh" start "$dir/cluster" 3 "$port" "$db" >/dev/null
bash "$top/test/cluster.sh" single "$dir/plain" $((port + 10)) "$db" >/dev/null

psql_at() { rx_as_user "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -d "$db" "${@:2}"; }

schema="CREATE TABLE acct (id int PRIMARY KEY, bal bigint NOT NULL);
INSERT INTO acct SELECT i, 1000 FROM generate_series(1, $naccounts) i;
CREATE TABLE ev (id int NOT NULL, v int NOT NULL);"
psql_at "$port" -c "$schema" \
	-c "SELECT rdma_exchange.create_distributed_table('acct', 'id')" \
	-c "SELECT rdma_exchange.create_distributed_table('ev', 'id')" >/dev/null 2>&1
psql_at "$port" -c "CREATE TABLE own AS SELECT m, row_number() OVER (PARTITION BY m ORDER BY id)::int AS n, id
	FROM (SELECT i AS id, rdma_exchange.member_index_of(i) AS m FROM generate_series(1, $naccounts) i) s;
	CREATE UNIQUE INDEX ON own (m, n)" -c "VACUUM ANALYZE own" -c "VACUUM ANALYZE acct" >/dev/null
psql_at $((port + 10)) -c "$schema" >/dev/null
# the same lookups on member 1 (the concurrent writers enter there) and on
# the plain server
psql_at "$port" -Atc "COPY own TO STDOUT" > "$dir/own.copy"
for p in $((port + 1)) $((port + 10)); do
	psql_at "$p" -c "CREATE TABLE own (m int, n int, id int)" -c "\\copy own FROM '$dir/own.copy'" \
		-c "CREATE UNIQUE INDEX ON own (m, n)" -c "VACUUM ANALYZE own" -c "VACUUM ANALYZE acct" >/dev/null
done
per=$(psql_at "$port" -Atc "SELECT min(c) FROM (SELECT count(*) c FROM own GROUP BY m) s")

pick() {	# pick VAR MEMBER: one id member MEMBER owns, into :VAR
	printf '\\set k%s random(1, %d)\nSELECT id AS %s FROM own WHERE m = %d AND n = :k%s \\gset\n' \
		"$1" "$per" "$1" "$2" "$1"
}
{ pick a 0; echo 'INSERT INTO ev VALUES (:a, 1);'; } > "$dir/scripts/insert_local.sql"
{ pick a 1; echo 'INSERT INTO ev VALUES (:a, 1);'; } > "$dir/scripts/insert_remote.sql"
transfer() {	# transfer M1 M2
	pick a "$1"; pick b "$2"
	printf 'BEGIN;\nUPDATE acct SET bal = bal - 1 WHERE id = :a;\nUPDATE acct SET bal = bal + 1 WHERE id = :b;\nCOMMIT;\n'
}
transfer 1 1 > "$dir/scripts/update_1phase.sql"
transfer 0 1 > "$dir/scripts/update_2phase.sql"
transfer 1 2 > "$dir/scripts/update_3phase.sql"
echo 'SELECT sum(bal) FROM acct;' > "$dir/scripts/sum.sql"
chmod 644 "$dir"/scripts/*

# pgbench SCRIPT PORT [PGOPTIONS]: tps
bench() {
	rx_as_user env PGOPTIONS="${3:-}" "$PGBIN/pgbench" -n -c 2 -T "$seconds" \
		-f "$dir/scripts/$1.sql" -h 127.0.0.1 -p "$2" "$db" 2>&1 |
		sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}
# emit RUN TARGET SCRIPT KIND BARRIER TPS [WRITER_TPS]: one line of raw.jsonl
emit() {
	echo "{\"kind\": \"$4\", \"run\": $1, \"target\": \"$2\", \"script\": \"$3\", \"consistent_reads\": \"$5\", \"tps\": ${6:-null}, \"writer_tps\": ${7:-null}}" >> "$out/raw.jsonl"
}

: > "$out/raw.jsonl"
echo "{\"kind\": \"meta\", \"seconds\": $seconds, \"runs\": $runs, \"accounts\": $naccounts, \"clients\": 2, \"cpus\": $(nproc), \"date\": \"$(date -u +%FT%TZ)\"}" >> "$out/raw.jsonl"
jobs_list="cluster insert_local
cluster insert_remote
cluster update_1phase
cluster update_2phase
cluster update_3phase
plain insert_local
plain update_2phase
cluster sum_alone on
cluster sum_alone off
plain sum_alone
cluster sum_with_writes on
cluster sum_with_writes off
plain sum_with_writes"
for ((r = 1; r <= runs; r++)); do
	while read -r target job mode; do
		p=$port
		[ "$target" = plain ] && p=$((port + 10))
		opts=""
		[ -n "${mode:-}" ] && opts="-c rdma_exchange.consistent_reads=$mode"
		echo "run.sh: run $r: $target $job ${mode:-}" >&2
		case $job in
			sum_alone)
				emit "$r" "$target" sum alone "${mode:-}" "$(bench sum "$p" "$opts")" ;;
			sum_with_writes)
				# writers through member 1 (on the plain server: the same one)
				wp=$((port + 1))
				[ "$target" = plain ] && wp=$p
				wscript=update_3phase
				[ "$target" = plain ] && wscript=update_2phase
				bench "$wscript" "$wp" > "$dir/writer_tps" &
				rtps=$(bench sum "$p" "$opts")
				wait
				emit "$r" "$target" sum with_writes "${mode:-}" "$rtps" "$(cat "$dir/writer_tps")" ;;
			*)
				emit "$r" "$target" "$job" write "" "$(bench "$job" "$p")" ;;
		esac
	done < <(echo "$jobs_list" | shuf)
done
python3 "$here/report.py" "$out/raw.jsonl" "$out"
echo "run.sh: wrote $out/report.md" >&2
