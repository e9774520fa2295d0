#!/usr/bin/env bash
# bench/tpch/load.sh: creates the TPC-H tables in a schema and loads them
# with rx_dbgen, in parallel, on an rdma_exchange cluster or on one plain
# PostgreSQL server.
#
#   bash bench/tpch/load.sh SF LAYOUT SCHEMA
#
#   SF      scale factor, 0.01 to 100
#   LAYOUT  a      "distributed": lineitem and orders hashed on orderkey,
#                  part and partsupp on partkey, customer on custkey,
#                  supplier on suppkey, nation and region reference tables
#           b      "reference dimensions": lineitem and orders hashed on
#                  orderkey, every other table a reference table
#           local  plain tables on the server connected to (no
#                  rdma_exchange), the single-server baseline
#   SCHEMA  schema to (re)create; queries find the tables through
#           search_path
#
# RX_INDEX_SET=fk adds bench/tpch/fk_indexes.sql (an index on every
# foreign key column) to the primary keys of schema.sql (index set "pk",
# the default), after the rows are in and before the statistics.
#
# The server is the one libpq's environment names (PGHOST, PGPORT,
# PGDATABASE, PGUSER).  For layouts a and b it must be a member of a
# cluster with the extension; the tables are created and distributed there
# while empty, then every member loads a share of each table through its
# own COPY (each COPY routes its rows to their owners), so the members
# generate and route in parallel.  Reference tables are loaded the same way
# and copied to every member.  With local, RX_LOAD_JOBS (default 2) COPY
# streams load each table.  Then every member runs VACUUM ANALYZE on the
# eight tables, and the row count of every table is printed.  An existing
# SCHEMA is dropped first (on every member).
#
# A successful load records what it loaded in the comment of SCHEMA (scale
# factor, layout, and a checksum of schema.sql and the generator, so that
# data made by an older bench/tpch does not pass for current).  With
# RX_LOAD_KEEP=1 a SCHEMA whose comment says it holds exactly that is kept
# as it is: load.sh prints "kept" on stderr and exits 0 (the demo and the
# benchmark rerun without reloading).
#
# Progress goes to stderr: a line per table with rows, seconds and rows/s.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
	sed -n '4,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

[ $# -eq 3 ] || usage
sf=$1 layout=$2 schema=$3
[[ $sf =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "load.sh: SF must be a number, not '$sf'" >&2; exit 2; }
case $layout in a|b|local) ;; *) echo "load.sh: LAYOUT must be a, b or local, not '$layout'" >&2; exit 2 ;; esac
[[ $schema =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "load.sh: SCHEMA must be a lower-case identifier, not '$schema'" >&2; exit 2; }
indexes=${RX_INDEX_SET:-pk}
case $indexes in pk|fk) ;; *) echo "load.sh: RX_INDEX_SET must be pk or fk, not '$indexes'" >&2; exit 2 ;; esac

gen=$here/dbgen/rx_dbgen
# built here; a machine without make (bench/device.sh) brings it built
if command -v make >/dev/null; then
	make -s -C "$here/dbgen" >/dev/null
fi
[ -x "$gen" ] || { echo "load.sh: no $gen, and no make to build it" >&2; exit 1; }

# psql to the server of the environment (or to host $1 port $2)
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
q_at() {
	local host=$1 port=$2
	shift 2
	PGHOST=$host PGPORT=$port q "$@"
}

tables=(region nation supplier part partsupp customer orders lineitem)

tag="bench/tpch: SF $sf, layout $layout, indexes $indexes, definitions $(cat "$here/schema.sql" "$here/fk_indexes.sql" "$here/dbgen/rx_dbgen.c" | md5sum | cut -c1-12)"
if [ "${RX_LOAD_KEEP:-0}" = 1 ]; then
	have=$(q -c "SELECT obj_description(n.oid, 'pg_namespace')
		FROM pg_namespace n WHERE n.nspname = '$schema'
		AND (SELECT count(*) FROM pg_tables t WHERE t.schemaname = n.nspname
		     AND t.tablename IN ($(printf "'%s'," "${tables[@]}" | sed 's/,$//'))) = ${#tables[@]}")
	if [ "$have" = "$tag" ]; then
		echo "load.sh: schema $schema already holds TPC-H SF $sf, layout $layout: kept" >&2
		exit 0
	fi
fi

# where each share is loaded: one "host port" line per member, or the
# server itself RX_LOAD_JOBS times
targets=()
if [ "$layout" = local ]; then
	for ((j = 0; j < ${RX_LOAD_JOBS:-2}; j++)); do
		targets+=("${PGHOST:-127.0.0.1} ${PGPORT:-5432}")
	done
else
	while read -r h p; do
		targets+=("$h $p")
	done < <(q -F ' ' -c "SELECT host, port FROM rdma_exchange.nodes ORDER BY member_index")
	[ ${#targets[@]} -gt 0 ] || { echo "load.sh: the server has no rdma_exchange members (add_node first)" >&2; exit 1; }
fi
n=${#targets[@]}

echo "load.sh: TPC-H SF $sf, layout $layout, schema $schema, $n load streams" >&2

# schema and tables, empty; distributed while empty
{
	echo "SET client_min_messages = warning;"
	echo "DROP SCHEMA IF EXISTS $schema CASCADE;"
	if [ "$layout" != local ]; then
		echo "SELECT count(*) FROM rdma_exchange.run_on_all_nodes('DROP SCHEMA IF EXISTS $schema CASCADE');"
	fi
	echo "CREATE SCHEMA $schema;"
	echo "SET search_path = $schema;"
	cat "$here/schema.sql"
	dist() { echo "SELECT rdma_exchange.create_distributed_table('$schema.$1', '$2');"; }
	ref() { echo "SELECT rdma_exchange.create_reference_table('$schema.$1');"; }
	case $layout in
	a)
		ref region; ref nation
		dist supplier s_suppkey; dist part p_partkey; dist partsupp ps_partkey
		dist customer c_custkey; dist orders o_orderkey; dist lineitem l_orderkey ;;
	b)
		ref region; ref nation; ref supplier; ref part; ref partsupp; ref customer
		dist orders o_orderkey; dist lineitem l_orderkey ;;
	esac
} | q >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start_all=$(date +%s.%N)
for t in "${tables[@]}"; do
	start=$(date +%s.%N)
	# region and nation are tiny: one stream
	chunks=$n
	case $t in region|nation) chunks=1 ;; esac
	pids=()
	for ((k = 1; k <= chunks; k++)); do
		read -r h p <<<"${targets[k - 1]}"
		"$gen" -s "$sf" -T "$t" -C "$chunks" -S "$k" |
			PGHOST=$h PGPORT=$p psql -X -At -v ON_ERROR_STOP=1 \
				-c "COPY $schema.$t FROM STDIN (DELIMITER '|')" >"$tmp/$t.$k" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || { echo "load.sh: loading $t failed" >&2; exit 1; }
	done
	end=$(date +%s.%N)
	# the COPY tags count the rows each stream loaded
	rows=$(cat "$tmp/$t".* | awk '{ s += $2 } END { print s }')
	awk -v t="$t" -v r="$rows" -v s="$start" -v e="$end" \
		'BEGIN { d = e - s; printf "  %-9s %10d rows %7.1f s %9.0f rows/s\n", t, r, d, (d > 0 ? r / d : 0) }' >&2
done

if [ "$indexes" = fk ]; then
	start=$(date +%s.%N)
	{ echo "SET search_path = $schema;"; cat "$here/fk_indexes.sql"; } | q >/dev/null
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" 'BEGIN { printf "  fk indexes %.1f s\n", e - s }' >&2
fi

# statistics (and the visibility map) of these tables on every member, in
# parallel
pids=()
for tg in $(printf '%s\n' "${targets[@]}" | sort -u | tr ' ' ':'); do
	q_at "${tg%%:*}" "${tg##*:}" -c "VACUUM ANALYZE $(printf "$schema.%s," "${tables[@]}" | sed 's/,$//')" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid" || { echo "load.sh: VACUUM ANALYZE failed" >&2; exit 1; }
done
end_all=$(date +%s.%N)
awk -v s="$start_all" -v e="$end_all" 'BEGIN { printf "  loaded and analyzed in %.1f s\n", e - s }' >&2
q -c "COMMENT ON SCHEMA $schema IS '$tag'"

for t in "${tables[@]}"; do
	printf '%s %s\n' "$t" "$(q -c "SELECT count(*) FROM $schema.$t")"
done
