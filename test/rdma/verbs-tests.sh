#!/usr/bin/env bash
# test/rdma/verbs-tests.sh: the tests that make test runs on a real RDMA
# device, inside the Soft-RoCE guest (run-tests.sh starts it as
# `bash test/rdma/guest.sh run bash test/rdma/verbs-tests.sh`).  Every
# member's datagram endpoint is a UD queue pair and its reliable endpoints
# RC queue pairs (verbs;ofi_rxm through rdma_cm), all on rxe0:
#
#  1. cluster-try.sh: a 3-member cluster; every member must have opened
#     both endpoints on verbs, and every design (UD sends, RC sends, RDMA
#     Read, RDMA Write with immediate data; SE and ME) must answer a
#     shuffling join as plain rows do.
#  2. The differential suite (sql/20_differential.sql) on such a cluster,
#     once per design, through run-tests.sh (design auto, which is
#     sesq_sr for unordered exchanges on verbs, and the seven others).
#  3. TAP tests through run-tests.sh on such clusters (RxCluster.pm takes
#     RX_FABRIC_HOST and RX_CLUSTER_CONF): 010_failures (a member killed
#     mid-query, cancel, statement_timeout, a coordinator that dies;
#     transport design auto, which takes sesq_sr on verbs for unordered
#     exchanges), 020_faults (drop, duplicate and reorder injected into the
#     UD datagrams; sesq_sr), 030_bad_input (a wrong RDMA key in the
#     messages of semq_rd and semq_wr: the query fails at once, the two
#     workers reopen the RC connection the refused operation broke, and
#     the next query is right; forged data messages, a wrong token or an
#     unknown query, sent as UD datagrams by member 0's transport; its
#     cases without the transport, another cluster key or version, run on
#     the host only: RX_BAD_INPUT_TRANSPORT_ONLY) and 050_tpch (TPC-H at SF 0.01 against a plain server;
#     layout a with the primary keys, RX_TPCH_SETS, to keep the emulated
#     run short).
#
# Exits non-zero when anything fails.
#
#   RX_VERBS_DESIGNS  the designs of 1 (default: all eight)
#   RX_VERBS_DIFF_DESIGNS  the designs of 2 besides auto (default: all
#                     but sesq_sr, which auto is on verbs)
#   RX_VERBS_TAP      the TAP tests of 3 (default: 010_failures 020_faults
#                     030_bad_input 050_tpch; empty: none)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
designs=${RX_VERBS_DESIGNS:-sesq_sr mesq_sr semq_sr memq_sr semq_rd memq_rd semq_wr memq_wr}
# run-tests.sh runs the differential suite with design auto first, which
# on verbs is sesq_sr for unordered exchanges (and semq_sr for ordered
# ones): the explicit sesq_sr run would repeat it
diff_designs=${RX_VERBS_DIFF_DESIGNS:-mesq_sr semq_sr memq_sr semq_rd memq_rd semq_wr memq_wr}
read -r -a taps <<< "${RX_VERBS_TAP-010_failures 020_faults 030_bad_input 050_tpch}"
rc=0

if [ ! -d /sys/class/infiniband/rxe0 ]; then
	echo "verbs-tests: no rxe0 here: run me through test/rdma/guest.sh" >&2
	exit 1
fi
export RX_FABRIC_HOST=10.99.0.1
export RX_CLUSTER_CONF="rdma_exchange.fabric_provider = 'verbs'
rdma_exchange.reliable_provider = 'verbs'"

echo "== verbs-tests: one shuffling join per design (cluster-try.sh) $(date +%T)"
RX_TRY_DGRAM=verbs RX_TRY_DESIGNS="$designs" RX_TRY_TIMEOUT=120 \
	bash "$here/cluster-try.sh" || rc=1

echo "== verbs-tests: the differential suite per design $(date +%T)"
RX_TEST_DESIGNS="$diff_designs" bash "$repo/test/run-tests.sh" 20_differential || rc=1

if [ ${#taps[@]} -gt 0 ]; then
	echo "== verbs-tests: ${taps[*]} $(date +%T)"
	RX_TEST_DESIGNS="" RX_TPCH_SETS=${RX_TPCH_SETS:-a:pk} RX_BAD_INPUT_TRANSPORT_ONLY=1 \
		bash "$repo/test/run-tests.sh" "${taps[@]}" || rc=1
fi

echo "verbs-tests: $([ $rc = 0 ] && echo passed || echo FAILED) $(date +%T)"
exit $rc
