#!/usr/bin/env bash
# test/rdma/verbs-tests.sh: the tests that make test runs on a real RDMA
# device, inside the Soft-RoCE guest (run-tests.sh starts it as
# `bash test/rdma/guest.sh run bash test/rdma/verbs-tests.sh`).
#
#  1. cluster-try.sh: a 3-member cluster with its reliable endpoints on
#     rxe0 (verbs;ofi_rxm, RC queue pairs through rdma_cm); every member
#     must have opened them on verbs, and every reliable design (sends,
#     RDMA Read, RDMA Write with immediate data) must answer a shuffling
#     join as plain rows do.
#  2. The differential suite (sql/20_differential.sql) on such a cluster,
#     once per reliable design, through run-tests.sh.
#
# The datagram endpoint stays on UDP over rxe0's interface: the UD designs
# do not run on verbs yet (README, "Transport designs").  Exits non-zero
# when anything fails.
#
#   RX_VERBS_DESIGNS  the designs (default: the six reliable ones)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
designs=${RX_VERBS_DESIGNS:-semq_sr memq_sr semq_rd memq_rd semq_wr memq_wr}
rc=0

if [ ! -d /sys/class/infiniband/rxe0 ]; then
	echo "verbs-tests: no rxe0 here: run me through test/rdma/guest.sh" >&2
	exit 1
fi

echo "== verbs-tests: one shuffling join per design (cluster-try.sh)"
RX_TRY_DGRAM=udp RX_TRY_DESIGNS="$designs" RX_TRY_TIMEOUT=120 \
	bash "$here/cluster-try.sh" || rc=1

echo "== verbs-tests: the differential suite per design"
RX_FABRIC_HOST=10.99.0.1 \
	RX_CLUSTER_CONF="rdma_exchange.reliable_provider = 'verbs'" \
	RX_TEST_DESIGNS="$designs" \
	bash "$repo/test/run-tests.sh" 20_differential || rc=1

echo "verbs-tests: $([ $rc = 0 ] && echo passed || echo FAILED)"
exit $rc
