#!/usr/bin/env bash
# test/demo.sh: the demo behind `make demo`, TPC-H on a local cluster.
# Starts (or reuses) a local 3-member rdma_exchange cluster and one plain
# PostgreSQL server (the single-server baseline), loads the TPC-H tables
# into both with bench/tpch/load.sh (on the cluster in layout a,
# "distributed": lineitem and orders hashed on orderkey, part and partsupp
# on partkey, customer on custkey, supplier on suppkey, nation and region
# reference tables), runs the 22 TPC-H queries on both with
# bench/tpch/check.sh, compares the answers, keeps each distributed query's
# EXPLAIN ANALYZE, prints a report and how to connect.  Exits 1 when an
# answer differs or a query fails.
#
#   bash test/demo.sh
#
# Safe to run twice: running servers are kept, and so are TPC-H data of
# the scale factor asked for (bench/tpch/load.sh records what it loaded in
# the comment of schema tpch; another scale factor, or changed
# bench/tpch/schema.sql or generator, reloads).
# The extension must already be installed (make demo does that).
#
# Layout of RX_DEMO_DIR:
#   cluster/   the 3 members (test/cluster.sh start), database tpch
#   single/    the plain server (test/cluster.sh single), database tpch
#   results/   qNN.explain.txt (EXPLAIN (ANALYZE, VERBOSE) of each
#              distributed query), qNN.dist.out and qNN.local.out (both
#              answers), check.txt (the per-query lines)
#
# Environment:
#   PGBIN         PostgreSQL bindir (default: $(pg_config --bindir))
#   RX_DEMO_DIR   where the servers and results live (default
#                 /tmp/rdma_exchange_demo)
#   RX_DEMO_PORT  first port to try for member 0 (default 55432); members
#                 use PORT..PORT+2, their transport workers PORT+100..+102,
#                 the single server PORT+10.  A cluster already in
#                 RX_DEMO_DIR keeps its ports.
#   RX_DEMO_SF    TPC-H scale factor, 0.01 to 100 (default 0.1: lineitem
#                 has 600000 rows).  Another value reloads the data.
#   RX_TEST_USER  user the servers run as when started by root (rdmax)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=test/common.sh
. "$here/common.sh"

dir=${RX_DEMO_DIR:-/tmp/rdma_exchange_demo}
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
dir=${dir%/}
cdir=$dir/cluster
sdir=$dir/single
results=$dir/results
db=tpch
schema=tpch
nmembers=3
nqueries=22
port=
sport=

sf=${RX_DEMO_SF:-0.1}
if ! [[ $sf =~ ^[0-9]{1,3}(\.[0-9]{1,6})?$ ]] ||
	! awk -v s="$sf" 'BEGIN { exit !(s + 0 >= 0.01 && s + 0 <= 100) }'; then
	echo "demo.sh: RX_DEMO_SF must be a scale factor from 0.01 to 100 (e.g. 0.1 or 1), not '$sf'" >&2
	exit 2
fi
# one spelling per scale factor (0.10 and 0.1 are the same data)
sf=$(awk -v s="$sf" 'BEGIN { printf "%g\n", s + 0 }')

die() {
	echo "demo.sh: $*" >&2
	exit 1
}

# psql over TCP as the test user to port $1, database tpch; further args
# to psql
demo_psql() {
	local p=$1
	shift
	PGHOST=127.0.0.1 PGPORT=$p PGUSER=$RX_TEST_USER PGDATABASE=$db \
		"$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# Ports: those of the servers already in RX_DEMO_DIR, else the first base
# port from RX_DEMO_PORT on (steps of 10) whose member and transport ports
# are free and whose PORT+10 is free for the single server.
choose_ports() {
	# the first line of `cluster.sh ports` (not through head: with
	# pipefail, cluster.sh writing into a closed pipe would end this
	# script)
	local ports
	if [ -f "$cdir/cluster.env" ]; then
		ports=$(bash "$here/cluster.sh" ports "$cdir")
		port=${ports%%$'\n'*}
	fi
	if [ -f "$sdir/cluster.env" ]; then
		ports=$(bash "$here/cluster.sh" ports "$sdir")
		sport=${ports%%$'\n'*}
	fi
	if [ -z "$port" ]; then
		local p=${RX_DEMO_PORT:-55432}
		[[ $p =~ ^[0-9]+$ ]] && [ "$p" -ge 1024 ] && [ "$p" -le 65000 ] \
			|| die "RX_DEMO_PORT must be a port number from 1024 to 65000, not '$p'"
		while :; do
			p=$(rx_free_base "$nmembers" "$p") || die "no free ports from ${RX_DEMO_PORT:-55432} on"
			if [ -n "$sport" ] || [ "$(rx_free_base 1 $((p + 10)) || true)" = $((p + 10)) ]; then
				break
			fi
			p=$((p + 10))
		done
		port=$p
	fi
	if [ -z "$sport" ]; then
		sport=$(rx_free_base 1 $((port + 10))) || die "no free port for the single server from $((port + 10)) on"
	fi
}

start_servers() {
	# the earlier demo kept its cluster in RX_DEMO_DIR itself
	if [ -f "$dir/cluster.env" ]; then
		die "$dir holds the cluster of an earlier version of the demo; remove it with
  bash $here/cluster.sh destroy $dir
or set RX_DEMO_DIR to another directory"
	fi
	choose_ports
	echo "== servers: cluster of $nmembers members at port $port, single server at port $sport ($dir)" >&2
	bash "$here/cluster.sh" start "$cdir" "$nmembers" "$port" "$db" >&2
	bash "$here/cluster.sh" single "$sdir" "$sport" "$db" >&2
}

# load_tpch PORT LAYOUT NAME SERVERDIR: loads TPC-H at the scale factor
# asked for into the server at PORT, unless it already holds exactly that
# (load.sh with RX_LOAD_KEEP=1 keeps such data and says so)
load_tpch() {
	local p=$1 layout=$2 name=$3 srvdir=$4 t0 t1
	echo "== $name: TPC-H SF $sf, layout $layout" >&2
	t0=$(date +%s)
	RX_LOAD_KEEP=1 PATH="$PGBIN:$PATH" PGHOST=127.0.0.1 PGPORT=$p PGUSER=$RX_TEST_USER PGDATABASE=$db \
		bash "$top/bench/tpch/load.sh" "$sf" "$layout" "$schema" >/dev/null \
		|| die "loading TPC-H into the $name failed (server logs: $srvdir/m*.log)"
	t1=$(date +%s)
	echo "== $name: ready in $((t1 - t0)) s" >&2
}

# Runs the 22 queries on both sides (check.sh prints a line per query as it
# goes), then the summary.  Returns 1 when an answer differs or a query
# fails.
run_queries() {
	local rc=0 out
	mkdir -p "$results"
	# answers and plans of an earlier run must not pass for this one's
	rm -f "$results"/q[0-9]*.explain.txt "$results"/q[0-9]*.dist.out \
		"$results"/q[0-9]*.local.out "$results/check.txt"

	printf '\n===== TPC-H SF %s: %d queries, cluster (%d members, layout a) vs. single server =====\n' \
		"$sf" "$nqueries" "$nmembers"
	# all 22 queries of bench/tpch/queries, whatever RX_QUERIES says
	env -u RX_QUERIES -u RX_QUERY_DIR \
		PATH="$PGBIN:$PATH" PGHOST=127.0.0.1 PGPORT="$port" PGUSER="$RX_TEST_USER" PGDATABASE=$db \
		RX_LOCAL_PORT="$sport" RX_LOCAL_DB=$db \
		bash "$top/bench/tpch/check.sh" "$schema" "$schema" "$results" | tee "$results/check.txt" \
		|| rc=$?
	out=$(cat "$results/check.txt")

	# per-query lines: "q01  same  4 rows  cluster  123 ms  single  45 ms"
	# or "q01  FAILED on the cluster: ERROR: ..."
	local nsame nfailed ndiff times ndist ntimed csum ssum
	nsame=$(grep -c '^q[0-9]*  same ' <<<"$out" || true)
	ndiff=$(grep -c '^q[0-9]*  DIFFERENT ' <<<"$out" || true)
	nfailed=$(grep -c '^q[0-9]*  FAILED ' <<<"$out" || true)
	times=$(awk '$1 ~ /^q[0-9]+$/ && $5 == "cluster" && $8 == "single" { c += $6; s += $9; n++ }
		END { printf "%d %.1f %.1f", n, c / 1000, s / 1000 }' <<<"$out")
	read -r ntimed csum ssum <<<"$times"
	ndist=$( (grep -l 'RECEIVE' "$results"/q[0-9]*.explain.txt 2>/dev/null || true) | wc -l)

	echo
	echo "===== summary ====="
	echo "same answer as the single server: $nsame of $nqueries queries"
	[ "$ndiff" -eq 0 ] || echo "DIFFERENT answer:                 $ndiff ($(grep '^q[0-9]*  DIFFERENT ' <<<"$out" | awk '{ printf "%s%s", s, $1; s = " " }'))"
	[ "$nfailed" -eq 0 ] || echo "FAILED:                           $nfailed ($(grep '^q[0-9]*  FAILED ' <<<"$out" | awk '{ printf "%s%s", s, $1; s = " " }'))"
	echo "time of the $ntimed queries that ran on both: cluster $csum s, single server $ssum s"
	echo "  (wall time of each query through psql; the $nmembers members and the single"
	echo "   server share this machine's $(nproc) cores, so the times show what the"
	echo "   exchanges cost, not a speed-up)"
	echo "distributed plans (SHUFFLE/RECEIVE nodes): $ndist of $nqueries"
	echo "EXPLAIN (ANALYZE, VERBOSE) of each distributed query: $results/qNN.explain.txt"
	echo "answers: $results/qNN.dist.out (cluster), $results/qNN.local.out (single server)"

	if [ "$rc" -ne 0 ] || [ "$nsame" -ne "$nqueries" ]; then
		echo "demo.sh: a query failed or gave another answer than the single server (see above)" >&2
		return 1
	fi
}

print_connect_info() {
	local i
	cat <<EOF

The demo servers are running (data in $dir):
EOF
	for ((i = 0; i < nmembers; i++)); do
		echo "  member $i: 127.0.0.1:$((port + i)) (transport 127.0.0.1:$((port + 100 + i)))$([ "$i" = 0 ] && echo ', the coordinator')"
	done
	cat <<EOF
  single server: 127.0.0.1:$sport (plain PostgreSQL, no rdma_exchange)

Connect to the cluster (member 0), then SET search_path = tpch:
  psql -h 127.0.0.1 -p $port -U $RX_TEST_USER $db
Connect to the single server, then SET search_path = tpch:
  psql -h 127.0.0.1 -p $sport -U $RX_TEST_USER $db
Try:
  SET search_path = tpch;
  EXPLAIN ANALYZE SELECT o_orderpriority, count(*) FROM orders JOIN customer ON o_custkey = c_custkey GROUP BY 1 ORDER BY 1;
Stop them / remove them:
  bash $here/cluster.sh stop $cdir; bash $here/cluster.sh stop $sdir
  bash $here/cluster.sh destroy $cdir; bash $here/cluster.sh destroy $sdir
EOF
}

main() {
	local t0 rc=0
	t0=$(date +%s)
	rx_pgbin
	rx_check_user
	mkdir -p "$dir"
	start_servers
	load_tpch "$port" a "cluster" "$cdir"
	load_tpch "$sport" local "single server" "$sdir"
	run_queries || rc=$?
	print_connect_info
	echo "(demo took $(($(date +%s) - t0)) s)"
	return "$rc"
}

main "$@"
