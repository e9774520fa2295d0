#!/usr/bin/env bash
# test/rdma/cluster-try.sh: runs inside the guest (test/rdma/guest.sh run
# bash test/rdma/cluster-try.sh): a first try of a local 3-member cluster
# whose transport runs on rxe0 (fabric_provider and reliable_provider
# verbs, fabric addresses on dummy0's 10.99.0.1).  It checks that every
# member's datagram endpoint opened on verbs (a UD queue pair) and its
# reliable endpoint on verbs;ofi_rxm, prints what each transport design does with one
# shuffling query and the members' log lines about the transport, and
# exits non-zero when a design's answer differs from the expected one
# (verbs-tests.sh runs it in make test).
#
#   RX_TRY_DESIGNS  designs to try (default: all eight)
#   RX_TRY_TIMEOUT  statement_timeout of each query, seconds (default 30)
#   RX_TRY_DGRAM    fabric_provider (default verbs; udp leaves the datagram
#                   endpoint on UDP over dummy0 and tries the reliable
#                   designs on verbs;ofi_rxm alone)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=/tmp/rxc
port=55432
cl=(bash "$repo/test/cluster.sh")
# (rxm sizes its CQ for FI_UNIVERSE_SIZE peers, by default more than rxe
# allows: the transport worker sets it when an RDMA device is present)

# the members' fabric addresses on rxe0's interface; the reliable
# endpoints on verbs (verbs;ofi_rxm), the datagram endpoint on
# RX_TRY_DGRAM's provider
export RX_FABRIC_HOST=10.99.0.1
export RX_CLUSTER_CONF="rdma_exchange.fabric_provider = '${RX_TRY_DGRAM:-verbs}'
rdma_exchange.reliable_provider = 'verbs'"
if ! "${cl[@]}" start "$dir" 3 "$port" rxtry; then
	"${cl[@]}" logs "$dir" 30
	exit 1
fi
grep -h '^rdma_exchange\.\(fabric\|reliable\)' "$dir"/m0/postgresql.conf
# every member's reliable endpoint opened on verbs, not on a fallback
for i in 0 1 2; do
	if [ "${RX_TRY_DGRAM:-verbs}" = verbs ] &&
		! grep -q 'datagram endpoint at fi_addr_ib_ud://.*(provider verbs,' "$dir/m$i.log"; then
		echo "cluster-try: member $i did not open its datagram endpoint on verbs (a UD queue pair):"
		grep -hiE 'endpoint|fabric|verbs' "$dir/m$i.log" | head -10
		"${cl[@]}" stop "$dir" >/dev/null 2>&1
		exit 1
	fi
	if ! grep -q 'reliable endpoint at .*(provider verbs;ofi_rxm' "$dir/m$i.log"; then
		echo "cluster-try: member $i did not open its reliable endpoint on verbs;ofi_rxm:"
		grep -hiE 'endpoint|fabric|verbs' "$dir/m$i.log" | head -10
		"${cl[@]}" stop "$dir" >/dev/null 2>&1
		exit 1
	fi
done
psql0() { "${cl[@]}" psql "$dir" 0 -d rxtry -X -At "$@"; }

echo "== members' transport log lines"
grep -hiE 'fabric|verbs|endpoint|libfabric|rxm|transport' "$dir"/m*.log | head -30
psql0 -c "SELECT * FROM rdma_exchange.nodes"

psql0 -q <<'EOF'
CREATE TABLE t (a int, b int);
SELECT rdma_exchange.create_distributed_table('t', 'a');
INSERT INTO t SELECT g, g % 97 FROM generate_series(1, 20000) g;
CREATE TABLE u (b int, c int);
SELECT rdma_exchange.create_distributed_table('u', 'b');
INSERT INTO u SELECT g, g * 3 FROM generate_series(0, 96) g;
ANALYZE t; ANALYZE u;
EOF
# a join on a column that is not t's distribution column: t is shuffled
q="SELECT count(*), sum(t.a), sum(u.c) FROM t JOIN u ON t.b = u.b"
# the same answer from plain rows, without the cluster
exp=$(psql0 -c "SELECT count(*), sum(a), sum(c) FROM generate_series(1, 20000) a
	JOIN (SELECT g AS b, g * 3 AS c FROM generate_series(0, 96) g) u ON a % 97 = u.b" | tr '\n' ' ' | sed 's/ $//')
echo "== query: $q"
fails=()
for d in ${RX_TRY_DESIGNS:-sesq_sr semq_sr semq_rd semq_wr mesq_sr memq_sr memq_rd memq_wr}; do
	t0=$SECONDS
	got=$(timeout 120 "${cl[@]}" psql "$dir" 0 -d rxtry -X -At -q \
		-c "SET statement_timeout = '${RX_TRY_TIMEOUT:-30}s'" \
		-c "SET rdma_exchange.transport_design = $d" -c "$q" 2>&1 | tail -3 | paste -sd' ' -)
	got=${got% }
	if [ "$got" = "$exp" ]; then
		printf '%-8s same   %3d s  %s\n' "$d" $((SECONDS - t0)) "$got"
	else
		printf '%-8s DIFFERENT/ERROR  %3d s  %s\n' "$d" $((SECONDS - t0)) "$got"
		fails+=("$d")
	fi
done
echo "== expected: $exp"
echo "== EXPLAIN"
psql0 -c "EXPLAIN (COSTS OFF) $q"
echo "== transport_stats() on member 0"
psql0 -x -c "SELECT * FROM rdma_exchange.transport_stats()"
echo "== members' log lines with ERROR, WARNING, FATAL, LOG about the transport"
grep -hE 'ERROR|WARNING|FATAL|PANIC|TRAP|terminated|signal|fabric|verbs|endpoint' "$dir"/m*.log | sort | uniq -c | sort -rn | head -30
"${cl[@]}" stop "$dir" >/dev/null 2>&1
if [ ${#fails[@]} -gt 0 ]; then
	echo "cluster-try: designs that failed: ${fails[*]}"
	exit 1
fi
echo "cluster-try: every design gave the expected answer on rxe0"
