#!/usr/bin/env bash
# test/demo.sh: the demo behind `make demo`.  Starts (or reuses) a local
# 3-member rdma_exchange cluster with database `demo`, loads sample data,
# runs distributed queries, and prints how to connect.
#
#   bash test/demo.sh
#
# Safe to run twice: a running cluster, its database and its members are
# kept.  The extension must already be installed (make demo does that).
#
# Environment:
#   PGBIN         PostgreSQL bindir (default: $(pg_config --bindir))
#   RX_DEMO_DIR   where the cluster lives (default /tmp/rdma_exchange_demo)
#   RX_DEMO_PORT  first port to try for member 0 (default 55432); members
#                 use PORT..PORT+2, their transport workers PORT+100..+102
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=test/common.sh
. "$here/common.sh"

dir=${RX_DEMO_DIR:-/tmp/rdma_exchange_demo}
db=demo
nmembers=3
port=

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
# compare with.  Must be safe to run twice.
load_demo_data() {
	: # to be written
}

# Distributed queries with EXPLAIN ANALYZE (SHUFFLE / RECEIVE), each
# answer checked against the same query on the local copies.
run_demo_queries() {
	: # to be written
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
