#!/usr/bin/env bash
# test/cluster.sh: starts, stops and connects to a local rdma_exchange
# cluster of several PostgreSQL servers on 127.0.0.1 (pg_regress suites,
# the demo and the benchmarks use it).
#
#   cluster.sh start   DIR N BASEPORT [DB]   init (once) and start N members
#   cluster.sh single  DIR PORT [DB]         init (once) and start one plain
#                                            server without rdma_exchange
#   cluster.sh stop    DIR                   stop every member
#   cluster.sh destroy DIR                   stop, then remove DIR
#   cluster.sh psql    DIR I [PSQL ARGS...]  psql to member I
#   cluster.sh ports   DIR                   server ports, one line per member
#   cluster.sh status  DIR                   pg_ctl status of every member
#   cluster.sh logs    DIR [LINES]           tail of every member's log
#
# Member i lives in DIR/m<i>, listens on 127.0.0.1:BASEPORT+i and on a
# Unix socket in DIR, logs to DIR/m<i>.log, and its transport worker uses
# the udp fabric provider on 127.0.0.1:BASEPORT+100+i.  All members share a
# random rdma_exchange.cluster_key generated once per DIR (DIR/cluster_key).
# With DB, `start` also creates database DB and the extension in it on
# every member and, on member 0, add_node()s every member in order.
# `start` is safe to repeat: running servers, databases, the extension and
# nodes already present are kept.
#
# `single` makes the single-server baseline of the demo and the benchmarks:
# the same settings, without the extension's library and settings; with
# DB it creates the database only.  The other commands treat it as a
# cluster of one member.
#
# Authentication is `trust` for local and 127.0.0.1 connections: these are
# throwaway test clusters, never reachable from another machine.
#
# Environment:
#   PGBIN           PostgreSQL bindir (default: $(pg_config --bindir))
#   RX_CLUSTER_CONF extra postgresql.conf lines, added when a member is
#                   initialized
#   RX_FABRIC_HOST  the host part of the members' fabric addresses
#                   (default 127.0.0.1; test/rdma's guest uses its rxe
#                   device's 10.99.0.1)
#   RX_TEST_USER    user the servers run as when started by root (rdmax)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=test/common.sh
. "$here/common.sh"

usage() {
	echo usage: >&2
	grep '^#   cluster.sh ' "${BASH_SOURCE[0]}" | sed 's/^#//' >&2
	exit 2
}

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

# psql as the test user to member $1 (database $2), quiet, unaligned
member_sql() {
	local i=$1 db=$2
	shift 2
	rx_as_user env PGHOST="$dir" PGPORT=$((baseport + i)) PGDATABASE="$db" \
		"$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# reads DIR/cluster.env (nmembers, baseport, db) when present
load_state() {
	nmembers='' baseport='' db=''
	[ -f "$dir/cluster.env" ] || return 0
	# parsed, not sourced: the file belongs to the test user
	local key value
	while IFS='=' read -r key value; do
		case "$key" in
			nmembers) [[ $value =~ ^[0-9]+$ ]] && nmembers=$value ;;
			baseport) [[ $value =~ ^[0-9]+$ ]] && baseport=$value ;;
			db) [[ $value =~ ^[A-Za-z0-9_]*$ ]] && db=$value ;;
		esac
	done < "$dir/cluster.env"
	return 0
}

save_state() {
	local tmp="$dir/cluster.env.tmp"
	printf 'nmembers=%s\nbaseport=%s\ndb=%s\n' "$nmembers" "$baseport" "$db" > "$tmp"
	mv "$tmp" "$dir/cluster.env"
}

is_running() {
	rx_as_user "$PGBIN/pg_ctl" -D "$dir/m$1" status >/dev/null 2>&1
}

print_logs() {
	local lines=${1:-40} f
	for f in "$dir"/m*.log; do
		[ -f "$f" ] || continue
		echo "===== $f (last $lines lines) ====="
		tail -n "$lines" "$f"
	done
}

init_member() {
	local i=$1
	local port=$((baseport + i)) pgdata="$dir/m$i"
	local key
	key=$(cat "$dir/cluster_key")
	rx_as_user "$PGBIN/initdb" -D "$pgdata" -A trust -E UTF8 --locale=C --no-sync >/dev/null \
		|| die "initdb of member $i in $pgdata failed"
	local rx_conf="shared_preload_libraries = 'rdma_exchange'
rdma_exchange.fabric_provider = 'udp'
rdma_exchange.fabric_address = '${RX_FABRIC_HOST:-127.0.0.1}:$((port + 100))'
rdma_exchange.cluster_key = '$key'"
	[ "$plain" = 0 ] || rx_conf="# plain server: no rdma_exchange"
	rx_as_user tee -a "$pgdata/postgresql.conf" >/dev/null <<EOF

# ---- rdma_exchange test cluster (test/cluster.sh), member $i ----
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
$rx_conf
max_connections = 100
shared_buffers = 128MB
work_mem = 16MB
maintenance_work_mem = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_worker_processes = 16
max_prepared_transactions = 100
max_parallel_workers = 8
max_parallel_workers_per_gather = 2
log_line_prefix = '%m [%p] m$i %q%a '
lc_messages = 'C'
${RX_CLUSTER_CONF:-}
EOF
	rx_as_user tee "$pgdata/pg_hba.conf" >/dev/null <<'EOF'
# rdma_exchange test cluster: trust on the Unix socket and on loopback only
local   all             all                     trust
host    all             all     127.0.0.1/32    trust
local   replication     all                     trust
host    replication     all     127.0.0.1/32    trust
EOF
}

cmd_start() {
	[ $# -ge 3 ] && [ $# -le 4 ] || usage
	local want_n=$2 want_port=$3 want_db=${4:-}
	[[ $want_n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number, not '$want_n'"
	[ -z "$want_db" ] || [[ $want_db =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "DB must be a plain identifier, not '$want_db'"
	[[ $want_port =~ ^[0-9]+$ ]] && [ "$want_port" -ge 1024 ] && [ $((want_port + 100 + want_n)) -lt 65536 ] \
		|| die "BASEPORT must be a port number >= 1024 with room for BASEPORT+100+N"
	rx_check_user
	rx_mkdir_for_user "$dir"
	dir=$(cd "$dir" && pwd -P)
	# Unix socket paths are limited to 107 bytes
	[ ${#dir} -le 90 ] || die "DIR is too long for a Unix socket directory: $dir"

	load_state
	if [ -n "$nmembers" ] && { [ "$nmembers" != "$want_n" ] || [ "$baseport" != "$want_port" ]; }; then
		die "$dir already holds a cluster of $nmembers members at port $baseport; use those or destroy it first"
	fi
	nmembers=$want_n
	baseport=$want_port
	[ -n "$want_db" ] && db=$want_db

	if [ ! -s "$dir/cluster_key" ]; then
		(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$dir/cluster_key")
	fi
	save_state
	if [ "$(id -u)" -eq 0 ]; then
		chown "$RX_TEST_USER:" "$dir/cluster_key" "$dir/cluster.env"
	fi

	local i
	for ((i = 0; i < nmembers; i++)); do
		if [ ! -f "$dir/m$i/PG_VERSION" ]; then
			rm -rf "$dir/m$i"
			init_member "$i"
		fi
	done
	for ((i = 0; i < nmembers; i++)); do
		if is_running "$i"; then
			echo "member $i already running on port $((baseport + i))"
			continue
		fi
		if ! rx_as_user "$PGBIN/pg_ctl" -D "$dir/m$i" -l "$dir/m$i.log" -w -t 120 start >/dev/null; then
			echo "cluster.sh: member $i did not start; its log:" >&2
			tail -n 50 "$dir/m$i.log" >&2 || true
			exit 1
		fi
		if [ "$plain" = 1 ]; then
			echo "single server started on port $baseport"
		else
			echo "member $i started on port $((baseport + i)) (fabric ${RX_FABRIC_HOST:-127.0.0.1}:$((baseport + 100 + i)))"
		fi
	done

	[ -n "$want_db" ] || return 0
	if [ "$plain" = 1 ]; then
		if [ "$(member_sql 0 postgres -c "SELECT count(*) FROM pg_database WHERE datname = '$db'")" = 0 ]; then
			rx_as_user "$PGBIN/createdb" -h "$dir" -p "$baseport" "$db" || die "createdb $db failed"
		fi
		echo "database $db ready on the single server"
		return 0
	fi
	for ((i = 0; i < nmembers; i++)); do
		if [ "$(member_sql "$i" postgres -c "SELECT count(*) FROM pg_database WHERE datname = '$db'")" = 0 ]; then
			rx_as_user "$PGBIN/createdb" -h "$dir" -p $((baseport + i)) "$db" \
				|| die "createdb $db on member $i failed"
		fi
		member_sql "$i" "$db" -c "SET client_min_messages = warning" \
			-c "CREATE EXTENSION IF NOT EXISTS rdma_exchange CASCADE" \
			|| die "CREATE EXTENSION rdma_exchange in $db on member $i failed (see $dir/m$i.log)"
	done
	# add_node on member 0, for every member, member 0 first
	local port present
	for ((i = 0; i < nmembers; i++)); do
		port=$((baseport + i))
		present=$(member_sql 0 "$db" -c "SELECT count(*) FROM rdma_exchange.nodes WHERE port = $port") \
			|| die "cannot read rdma_exchange.nodes on member 0"
		if [ "$present" = 0 ]; then
			member_sql 0 "$db" -c "SELECT rdma_exchange.add_node('127.0.0.1', $port)" >/dev/null \
				|| die "add_node('127.0.0.1', $port) on member 0 failed (see $dir/m0.log)"
		fi
	done
	echo "database $db ready on $nmembers members"
}

cmd_stop() {
	[ $# -eq 1 ] || usage
	[ -d "$dir" ] || return 0
	rx_check_user
	local m i
	for m in "$dir"/m[0-9]*; do
		[ -f "$m/PG_VERSION" ] || continue
		i=${m##*/m}
		is_running "$i" || continue
		if ! rx_as_user "$PGBIN/pg_ctl" -D "$m" -m fast -w -t 60 stop >/dev/null; then
			rx_as_user "$PGBIN/pg_ctl" -D "$m" -m immediate -w -t 60 stop >/dev/null || true
		fi
		echo "member $i stopped"
	done
}

cmd_destroy() {
	[ $# -eq 1 ] || usage
	[ -d "$dir" ] || return 0
	# refuse to remove a directory that is not a cluster made by this script
	if [ ! -f "$dir/cluster.env" ] && [ ! -f "$dir/m0/PG_VERSION" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir does not look like a cluster made by cluster.sh; not removing it"
	fi
	cmd_stop "$@"
	rm -rf "$dir"
}

cmd_psql() {
	[ $# -ge 2 ] || usage
	local i=$2
	shift 2
	load_state
	[ -n "$nmembers" ] || die "no cluster in $dir"
	[[ $i =~ ^[0-9]+$ ]] && [ "$i" -lt "$nmembers" ] || die "member index must be 0..$((nmembers - 1))"
	# stay in the caller's directory (\i, \o) when the test user may enter it
	local cwd=/
	if rx_as_user test -r "$PWD" -a -x "$PWD" 2>/dev/null; then
		cwd=$PWD
	fi
	rx_as_user_in "$cwd" env PGHOST="$dir" PGPORT=$((baseport + i)) PGDATABASE="${db:-postgres}" \
		"$PGBIN/psql" "$@"
}

cmd_ports() {
	[ $# -eq 1 ] || usage
	load_state
	[ -n "$nmembers" ] || die "no cluster in $dir"
	local i
	for ((i = 0; i < nmembers; i++)); do
		echo $((baseport + i))
	done
}

cmd_status() {
	[ $# -eq 1 ] || usage
	load_state
	[ -n "$nmembers" ] || die "no cluster in $dir"
	local i
	for ((i = 0; i < nmembers; i++)); do
		if is_running "$i"; then
			echo "member $i: running on port $((baseport + i))"
		else
			echo "member $i: stopped (port $((baseport + i)))"
		fi
	done
}

[ $# -ge 2 ] || usage
sub=$1
dir=${2%/}
[ -n "$dir" ] || usage
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
shift
rx_pgbin

plain=0
case "$sub" in
	start) cmd_start "$@" ;;
	single)
		[ $# -ge 2 ] && [ $# -le 3 ] || usage
		plain=1
		cmd_start start 1 "$2" ${3:+"$3"} ;;
	stop) cmd_stop "$@" ;;
	destroy) cmd_destroy "$@" ;;
	psql) cmd_psql "$@" ;;
	ports) cmd_ports "$@" ;;
	status) cmd_status "$@" ;;
	logs) print_logs "${2:-40}" ;;
	*) usage ;;
esac
