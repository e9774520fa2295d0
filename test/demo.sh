#!/usr/bin/env bash
# test/demo.sh: the demo behind `make demo`.  Starts (or reuses) a local
# 3-member rdma_exchange cluster with database `demo`, loads sample data
# (distributed tables in schema public, plain copies in schema local), runs
# distributed queries with EXPLAIN ANALYZE, checks every answer against the
# same query on the plain copies, prints a short report, and prints how to
# connect.  Exits non-zero when a distributed answer differs.
#
#   bash test/demo.sh
#
# Safe to run twice: a running cluster, its database and its members are
# kept, and so is sample data of the size asked for.  The extension must
# already be installed (make demo does that).
#
# Environment:
#   PGBIN         PostgreSQL bindir (default: $(pg_config --bindir))
#   RX_DEMO_DIR   where the cluster lives (default /tmp/rdma_exchange_demo)
#   RX_DEMO_PORT  first port to try for member 0 (default 55432); members
#                 use PORT..PORT+2, their transport workers PORT+100..+102
#   RX_DEMO_ROWS  rows of the orders table (default 1000000); customers
#                 get a tenth of that.  Another value reloads the data.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=test/common.sh
. "$here/common.sh"

dir=${RX_DEMO_DIR:-/tmp/rdma_exchange_demo}
db=demo
nmembers=3
port=
rows=${RX_DEMO_ROWS:-1000000}
if ! [[ $rows =~ ^[1-9][0-9]{0,8}$ ]]; then
	echo "demo.sh: RX_DEMO_ROWS must be a number of rows from 1 to 999999999, not '$rows'" >&2
	exit 2
fi

# psql to member $1 of the demo cluster, database demo; further args to psql
demo_psql() {
	local i=$1
	shift
	bash "$here/cluster.sh" psql "$dir" "$i" -X -v ON_ERROR_STOP=1 "$@"
}

start_cluster() {
	if [ -f "$dir/cluster.env" ]; then
		local ports
		ports=$(bash "$here/cluster.sh" ports "$dir")
		port=${ports%%$'\n'*}
	else
		port=$(rx_free_base "$nmembers" "${RX_DEMO_PORT:-55432}")
	fi
	bash "$here/cluster.sh" start "$dir" "$nmembers" "$port" "$db"
}

# Sample data: distributed and reference tables, and plain local copies to
# compare with.  Must be safe to run twice: when every table is there,
# distributed as intended and with the row count asked for, nothing is
# loaded again; otherwise the tables are dropped and made anew.
#
#   public.customers  rows/10 rows, distributed by c_id
#   public.orders     rows rows, distributed by o_id: joining on o_cust
#                     (not its distribution key) is a repartition join
#   public.nations    25 rows, a reference table (a copy on every member)
#   local.*           the same rows in plain tables on member 0 only
load_demo_data() {
	local ncust=$((rows / 10)) state
	[ "$ncust" -ge 1 ] || ncust=1

	# to_regclass() and not ::regclass: a missing table is an answer here,
	# not an error
	state=$(demo_psql 0 -q -At <<-SQL
		SELECT (SELECT count(*) FROM rdma_exchange.dist_table d
		        WHERE (d.relid = to_regclass('public.customers') AND d.method = 'h' AND d.dist_column = 'c_id')
		           OR (d.relid = to_regclass('public.orders') AND d.method = 'h' AND d.dist_column = 'o_id')
		           OR (d.relid = to_regclass('public.nations') AND d.method = 'r')) = 3
		   AND to_regclass('local.customers') IS NOT NULL
		   AND to_regclass('local.orders') IS NOT NULL
		   AND to_regclass('local.nations') IS NOT NULL;
	SQL
	)
	if [ "$state" = t ]; then
		# the distributed counts are distributed queries: they also show
		# that every member answers
		state=$(demo_psql 0 -q -At <<-SQL
			SELECT (SELECT count(*) FROM public.customers) = $ncust
			   AND (SELECT count(*) FROM local.customers) = $ncust
			   AND (SELECT count(*) FROM public.orders) = $rows
			   AND (SELECT count(*) FROM local.orders) = $rows
			   AND (SELECT count(*) FROM public.nations) = 25
			   AND (SELECT count(*) FROM local.nations) = 25;
		SQL
		)
		if [ "$state" = t ]; then
			echo "demo data already loaded ($rows orders, $ncust customers), kept" >&2
			return 0
		fi
	fi

	echo "loading demo data: $rows orders, $ncust customers, 25 nations" >&2
	# Dropped in a transaction of its own: dropping a distributed table
	# drops it on every member, and the load below then starts from no
	# table anywhere.  The local copies go with schema local.
	demo_psql 0 -q <<-'SQL'
		SET client_min_messages = warning;
		DROP TABLE IF EXISTS public.orders, public.customers, public.nations;
		DROP SCHEMA IF EXISTS local CASCADE;
	SQL

	# One transaction: a load that fails half-way leaves nothing behind,
	# and the next run starts again from the check above.  The rows are
	# generated into the local copies and copied from there, so that both
	# sides hold the same rows.  Some orders have no customer (NULL) or
	# one that does not exist (o_cust beyond ncust), as real data does.
	echo "  generating rows on member 0, then moving them to their owners" >&2
	demo_psql 0 -q <<-SQL
		BEGIN;
		SET client_min_messages = warning;
		CREATE SCHEMA local;
		$(demo_tables_ddl local)
		$(demo_tables_ddl public)
		INSERT INTO local.nations
		  SELECT i, 'nation ' || i FROM generate_series(0, 24) i;
		INSERT INTO local.customers
		  SELECT i, (i * 7) % 25, 'customer ' || i FROM generate_series(1, $ncust) i;
		INSERT INTO local.orders
		  SELECT i,
		         CASE WHEN i % 1000 = 0 THEN NULL
		              ELSE ((i::bigint * 7919) % ($ncust + $ncust / 100 + 1))::int + 1 END,
		         ((i::bigint * 104729) % 100000) / 100.0,
		         'note ' || (i % 13)
		  FROM generate_series(1, $rows) i;
		INSERT INTO public.nations SELECT * FROM local.nations;
		INSERT INTO public.customers SELECT * FROM local.customers;
		INSERT INTO public.orders SELECT * FROM local.orders;
		-- NOTICEs back on: they tell how many rows moved to other members;
		-- the functions' empty results are not worth printing
		RESET client_min_messages;
		\o /dev/null
		SELECT rdma_exchange.create_reference_table('public.nations');
		SELECT rdma_exchange.create_distributed_table('public.customers', 'c_id');
		SELECT rdma_exchange.create_distributed_table('public.orders', 'o_id');
		\o
		COMMIT;
	SQL

	# Every member plans nothing but keeps its own part: each one vacuums
	# and analyzes its part itself (VACUUM cannot run inside
	# run_on_all_nodes()' transaction), so that both sides of the
	# comparison read all-visible, analyzed tables.
	echo "  vacuum and analyze on every member" >&2
	local i
	for ((i = 0; i < nmembers; i++)); do
		demo_psql "$i" -q -c 'VACUUM ANALYZE public.customers, public.orders, public.nations'
	done
	demo_psql 0 -q -c 'VACUUM ANALYZE local.customers, local.orders, local.nations'
	echo "demo data loaded" >&2
}

# CREATE TABLE statements of the demo tables in schema $1: the same
# definitions for the distributed tables and their local copies
demo_tables_ddl() {
	local s=$1
	cat <<-SQL
		CREATE TABLE $s.nations (n_id int PRIMARY KEY, n_name text NOT NULL);
		CREATE TABLE $s.customers (c_id int PRIMARY KEY, c_nation int NOT NULL, c_name text NOT NULL);
		CREATE TABLE $s.orders (o_id int PRIMARY KEY, o_cust int, o_amount numeric(12,2) NOT NULL, o_note text);
	SQL
}

# Distributed queries with EXPLAIN ANALYZE (SHUFFLE / RECEIVE), each
# answer checked against the same query on the local copies.  The query
# text is the same both ways; only search_path differs (public: the
# distributed tables, local: the plain copies).  Answers are compared as
# the md5 of all their rows in a fixed order, so a difference in any row
# shows.  Every query ends in an ORDER BY with a unique key, or LIMIT would
# make the answer depend on the plan.
#
# 1. o_cust is not the distribution key of orders: rows must move for the
#    join, the planner shuffles orders by o_cust or broadcasts customers,
#    whichever moves fewer bytes (EXPLAIN shows which: Route: hash or
#    broadcast); few groups, so partial aggregates on the members
# 2. both sides large: orders joined with orders on o_cust = o_id (an
#    artificial join, but one where broadcasting a side would move far
#    more bytes), so one side is shuffled by its join key
# 3. nations is on every member: the join needs no exchange at all
# 4. one group per customer: each member aggregates the groups it owns,
#    its input shuffled by o_cust; where PostgreSQL planned a sorted
#    aggregate (it does for the default 1000000 rows) the members sort
#    their groups and the coordinator merges them in order
# 5. each member sends only its top 10 rows (a top-N sort), the
#    coordinator merges them and stops after 10
run_demo_queries() {
	local -a labels=(
		"join on o_cust + aggregate"
		"repartition join"
		"reference-table join"
		"many-groups aggregate"
		"ORDER BY ... LIMIT 10"
	)
	local -a queries=(
		"SELECT c_nation, count(*) AS orders, sum(o_amount) AS amount, round(avg(o_amount), 2) AS avg_amount
  FROM orders JOIN customers ON o_cust = c_id
  GROUP BY c_nation ORDER BY c_nation"
		"SELECT o.o_note, count(*) AS orders, sum(p.o_amount) AS amount
  FROM orders o JOIN orders p ON p.o_id = o.o_cust
  GROUP BY o.o_note ORDER BY o.o_note"
		"SELECT n_name, count(*) AS customers, min(c_name) AS first_name, max(c_name) AS last_name
  FROM customers JOIN nations ON c_nation = n_id
  GROUP BY n_name ORDER BY n_name"
		"SELECT o_cust, count(*) AS orders, sum(o_amount) AS amount, max(o_note) AS last_note
  FROM orders
  GROUP BY o_cust ORDER BY o_cust"
		"SELECT o_id, o_cust, o_amount, o_note
  FROM orders
  ORDER BY o_amount DESC, o_id LIMIT 10"
	)
	local -a r_rows=() r_dist=() r_local=() r_same=()
	local n=${#queries[@]} k t q out plan failed=0 timed_runs=3
	local dist_rows dist_md5 local_rows local_md5 dist_ms local_ms

	for ((k = 0; k < n; k++)); do
		q=${queries[k]}
		echo "query $((k + 1))/$n: ${labels[k]}" >&2
		printf '\n===== %d. %s =====\n%s;\n\n' "$((k + 1))" "${labels[k]}" "$q"
		plan=$(demo_psql 0 -q -c "EXPLAIN (ANALYZE, COSTS OFF) $q")
		printf '%s\n' "$plan"
		if ! grep -q 'Custom Scan (RECEIVE)' <<<"$plan"; then
			echo "warning: query $((k + 1)) was not planned as a distributed query (no RECEIVE)" >&2
		fi

		# One session for both sides: the checks run first and also warm
		# the caches and the connections to the members; then the query
		# runs $timed_runs more times each way, timed by psql, its rows
		# discarded with \o, and the fastest run counts (the machine may
		# be busy with something else).  \echo goes to stdout, not to \o:
		# it marks which Time: line is which.
		out=$(demo_psql 0 -q -At <<-SQL
			SET search_path = public;
			SELECT 'check', 'dist', count(*), coalesce(md5(string_agg(q::text, '|' ORDER BY q::text)), '-') FROM ($q) q;
			SET search_path = local;
			SELECT 'check', 'local', count(*), coalesce(md5(string_agg(q::text, '|' ORDER BY q::text)), '-') FROM ($q) q;
			\o /dev/null
			$(for ((t = 0; t < timed_runs; t++)); do
				demo_timed_sql dist public "$q"
				demo_timed_sql local local "$q"
			done)
		SQL
		)
		IFS='|' read -r _ _ dist_rows dist_md5 <<<"$(grep '^check|dist|' <<<"$out")"
		IFS='|' read -r _ _ local_rows local_md5 <<<"$(grep '^check|local|' <<<"$out")"
		dist_ms=$(demo_fastest dist <<<"$out")
		local_ms=$(demo_fastest local <<<"$out")

		r_rows+=("$dist_rows")
		r_dist+=("$dist_ms")
		r_local+=("$local_ms")
		if [ -n "$dist_md5" ] && [ "$dist_rows" = "$local_rows" ] && [ "$dist_md5" = "$local_md5" ]; then
			r_same+=(yes)
			echo "  same answer as one server: $dist_rows rows, md5 $dist_md5" >&2
		else
			r_same+=(NO)
			failed=1
			demo_show_difference "$q" "$dist_rows" "$dist_md5" "$local_rows" "$local_md5"
		fi
	done

	# the report
	printf '\n===== distributed (%d members) vs. one server, %s orders =====\n' "$nmembers" "$rows"
	printf '%-30s | %8s | %14s | %16s | %s\n' query rows "distributed ms" "single-server ms" "same answer"
	printf '%-30s-+-%8s-+-%14s-+-%16s-+-%s\n' "" "" "" "" "-----------" | tr ' ' -
	for ((k = 0; k < n; k++)); do
		printf '%-30s | %8s | %14s | %16s | %s\n' \
			"${labels[k]}" "${r_rows[k]}" "${r_dist[k]}" "${r_local[k]}" "${r_same[k]}"
	done
	echo "(fastest of $timed_runs runs after a warm-up; all members share this machine's"
	echo " cores, so the times show the cost of the exchanges, not a speed-up)"

	if [ "$failed" -ne 0 ]; then
		echo "demo.sh: a distributed query gave another answer than one server (see above)" >&2
		echo "the cluster is still running: bash $here/cluster.sh psql $dir 0" >&2
		return 1
	fi
}

# psql lines that run query $3 with search_path $2, timed, after the
# marker "timed|$1"
demo_timed_sql() {
	cat <<-SQL
		SET search_path = $2;
		\timing on
		\echo timed|$1
		$3;
		\timing off
	SQL
}

# Reads psql output on stdin; prints the fastest time in ms, rounded, of
# the statements marked "timed|$1" (psql prints "Time: 1234.567 ms
# (00:01.235)", with a decimal comma in some locales)
demo_fastest() {
	tr , . | awk -v tag="timed|$1" '
		$0 == tag { t = 1; next }
		t && /^Time:/ { if (best == "" || $2 + 0 < best) best = $2 + 0; t = 0 }
		END { if (best == "") print "?"; else printf "%.0f\n", best }'
}

# Prints to stderr how the answers of query $1 differ: both row counts and
# md5s, and up to 10 rows found only on one side
demo_show_difference() {
	local q=$1
	{
		echo "DIFFERENT ANSWER for query:"
		echo "  $q"
		echo "  distributed:  $2 rows, md5 $3"
		echo "  one server:   $4 rows, md5 $5"
		demo_psql 0 -q <<-SQL || true
			SET search_path = public;
			CREATE TEMP TABLE rx_demo_dist AS $q;
			SET search_path = local;
			CREATE TEMP TABLE rx_demo_local AS $q;
			\echo rows only in the distributed answer (at most 10):
			SELECT * FROM (TABLE rx_demo_dist EXCEPT ALL TABLE rx_demo_local) x LIMIT 10;
			\echo rows only in the answer of one server (at most 10):
			SELECT * FROM (TABLE rx_demo_local EXCEPT ALL TABLE rx_demo_dist) x LIMIT 10;
		SQL
	} >&2
}

print_connect_info() {
	local i
	cat <<EOF

The demo cluster is running: $nmembers members, database "$db", data in $dir.
EOF
	for ((i = 0; i < nmembers; i++)); do
		echo "  member $i: 127.0.0.1:$((port + i)) (transport 127.0.0.1:$((port + 100 + i)))$([ "$i" = 0 ] && echo ', the coordinator')"
	done
	cat <<EOF

Connect to member 0:
  bash $here/cluster.sh psql $dir 0
  psql -h 127.0.0.1 -p $port -U $RX_TEST_USER $db
Try:
  SELECT * FROM rdma_exchange.nodes;
Stop it / remove it:
  bash $here/cluster.sh stop $dir
  bash $here/cluster.sh destroy $dir
EOF
}

main() {
	rx_pgbin
	start_cluster
	load_demo_data
	run_demo_queries
	print_connect_info
}

main "$@"
