#!/usr/bin/env bash
# bench/tpch/check.sh: runs the 22 TPC-H queries on the cluster and on a
# single server and compares the answers.
#
#   bash bench/tpch/check.sh DIST_SCHEMA LOCAL_SCHEMA [OUTDIR]
#
# DIST_SCHEMA holds the distributed tables (bench/tpch/load.sh with layout
# a or b) on the server libpq's environment names (PGHOST, PGPORT,
# PGDATABASE, PGUSER); LOCAL_SCHEMA the same data as plain tables (layout
# local) on the server of RX_LOCAL_PORT and RX_LOCAL_DB (default: the same
# server and database).  Queries: the q*.sql files of RX_QUERY_DIR (default
# bench/tpch/queries), or those named by RX_QUERIES (e.g. "q02 q17").
#
# Answers are compared as a user would: rows sorted, numbers with more
# decimals than a TPC-H report prints rounded to 2 (the sums and averages
# are numeric and come out exact anyway).  With OUTDIR, each query's
# distributed EXPLAIN (ANALYZE, VERBOSE) goes to OUTDIR/qNN.explain.txt
# and both answers to OUTDIR/qNN.{dist,local}.out.
#
# With RX_LOCAL_ANSWERS (a directory), the single server's answers are
# kept there and taken from there on the next run with the same queries
# (test/t/050_tpch.pl runs the cluster with one transport design after
# the other against the same single server).
#
# Prints a line per query; exits 1 when an answer differs or a query
# fails.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -ge 2 ] && [ $# -le 3 ] || { sed -n '5,7p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; exit 2; }
dist=$1 local=$2 outdir=${3:-}
local_port=${RX_LOCAL_PORT:-${PGPORT:-5432}}
local_db=${RX_LOCAL_DB:-${PGDATABASE:-}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -z "$outdir" ] || mkdir -p "$outdir"

qdir=${RX_QUERY_DIR:-$here/queries}
queries=${RX_QUERIES:-$(cd "$qdir" && ls q*.sql | sed 's/\.sql$//')}

# run_query SCHEMA PORT DB FILE OUT: the answer, rows sorted and numbers
# rounded; the first line of OUT is the wall time in ms
run_query() {
	local schema=$1 port=$2 db=$3 file=$4 out=$5 t0 t1
	t0=$(date +%s%N)
	if ! { echo "SET search_path = $schema;"; cat "$file"; } |
		PGPORT=$port PGDATABASE=$db psql -X -q -At -v ON_ERROR_STOP=1 >"$out.raw" 2>"$out.err"; then
		return 1
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >"$out"
	awk -F'|' -v OFS='|' -f "$here/normalize.awk" "$out.raw" | LC_ALL=C sort >>"$out"
}

failed=0
for q in $queries; do
	file=$qdir/$q.sql
	if ! run_query "$dist" "${PGPORT:-5432}" "${PGDATABASE:-}" "$file" "$tmp/dist"; then
		printf '%s  FAILED on the cluster: %s\n' "$q" "$(tr '\n' ' ' <"$tmp/dist.err")"
		failed=1
		continue
	fi
	kept=${RX_LOCAL_ANSWERS:+$RX_LOCAL_ANSWERS/$q.local}
	if [ -n "$kept" ] && [ -f "$kept" ]; then
		cp "$kept" "$tmp/local"
	elif ! run_query "$local" "$local_port" "$local_db" "$file" "$tmp/local"; then
		printf '%s  FAILED on the single server: %s\n' "$q" "$(tr '\n' ' ' <"$tmp/local.err")"
		failed=1
		continue
	elif [ -n "$kept" ]; then
		mkdir -p "$RX_LOCAL_ANSWERS" && cp "$tmp/local" "$kept"
	fi
	rows=$(($(wc -l <"$tmp/dist") - 1))
	if diff -q <(tail -n +2 "$tmp/dist") <(tail -n +2 "$tmp/local") >/dev/null; then
		verdict=same
	else
		verdict=DIFFERENT
		failed=1
	fi
	printf '%s  %-9s %6d rows  cluster %7d ms  single %7d ms\n' "$q" "$verdict" "$rows" \
		"$(head -1 "$tmp/dist")" "$(head -1 "$tmp/local")"
	if [ -n "$outdir" ]; then
		tail -n +2 "$tmp/dist" >"$outdir/$q.dist.out"
		tail -n +2 "$tmp/local" >"$outdir/$q.local.out"
		{ echo "SET search_path = $dist;"; echo "EXPLAIN (ANALYZE, VERBOSE)"; grep -v '^--' "$file"; } |
			psql -X -q -At >"$outdir/$q.explain.txt" 2>&1
	fi
	if [ $verdict = DIFFERENT ]; then
		diff <(tail -n +2 "$tmp/dist") <(tail -n +2 "$tmp/local") | head -10 | sed 's/^/    /'
	fi
done
exit $failed
