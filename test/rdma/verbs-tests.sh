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
#     through run-tests.sh, with design auto (sesq_sr for unordered
#     exchanges on verbs, semq_sr for ordered ones).  The other designs
#     ran it here too until the emulated guest took 20 to 50 minutes for
#     them alone on the 2-core machines; they answer 1 and 3 here, and the
#     whole suite per design on the host.
#  3. TAP tests through run-tests.sh on such clusters (RxCluster.pm takes
#     RX_FABRIC_HOST and RX_CLUSTER_CONF), in RX_VERBS_JOBS parallel jobs,
#     each with clusters of its own (ports from 20000: below Linux's
#     ephemeral ports, 32768 and up, which the other job's client
#     connections take, and PostgreSQL's test modules pick from; a port
#     from 40400 was once taken between its choice and its server's
#     start), with design auto and one
#     design of each other verbs operation (RX_VERBS_OP_DESIGNS: memq_sr,
#     RC sends from several endpoints; semq_rd, RDMA Read; memq_wr, RDMA
#     Write): 010_failures (statement_timeout, cancel, a coordinator that
#     dies, a member killed mid-query, with design auto; then the cancel
#     and the kill once more with each of those designs on the same
#     cluster, RX_FAILURE_DESIGNS), 020_faults with sesq_sr (drop,
#     duplicate and reorder injected into the UD datagrams), 050_tpch
#     (TPC-H at SF 0.01 against a plain server with each of those
#     designs, RX_TPCH_DESIGNS, on layout a with the primary keys,
#     RX_TPCH_SETS, to keep the emulated run short); after the jobs,
#     alone, 030_bad_input (a wrong RDMA key in the messages of semq_rd
#     and semq_wr: checked against the member's published registration,
#     the operation is not issued, the query fails at once, no connection
#     breaks, and the next query is right; forged data messages, a wrong
#     token or an unknown query, sent as UD datagrams by member 0's
#     transport; its cases without the transport, another cluster key or
#     version, run on the host only: RX_BAD_INPUT_TRANSPORT_ONLY).
#
# Exits non-zero when anything fails.
#
#   RX_VERBS_DESIGNS  the designs of 1 (default: all eight)
#   RX_VERBS_DIFF_DESIGNS  the designs of 2 besides auto (default: none;
#                     they run two at a time)
#   RX_VERBS_OP_DESIGNS  the designs of 010_failures and 050_tpch in 3
#                     (default: memq_sr semq_rd memq_wr; all eight are
#                     about 40 minutes more here)
#   RX_VERBS_FAULT_DESIGNS  the datagram designs of 020_faults (default
#                     sesq_sr; mesq_sr too: add it)
#   RX_VERBS_TAP      the TAP tests of 3 (default: 010_failures 020_faults
#                     030_bad_input 050_tpch; empty: none)
#   RX_VERBS_JOBS     the parallel jobs of 3 (default 2: the guest has two
#                     CPUs); 0: the TAP tests one after the other with
#                     design auto only, for a quicker run
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
designs=${RX_VERBS_DESIGNS:-sesq_sr mesq_sr semq_sr memq_sr semq_rd memq_rd semq_wr memq_wr}
# run-tests.sh runs the differential suite with design auto first, which
# on verbs is sesq_sr for unordered exchanges (and semq_sr for ordered
# ones), then these
diff_designs=${RX_VERBS_DIFF_DESIGNS:-}
read -r -a op_designs <<< "${RX_VERBS_OP_DESIGNS-memq_sr semq_rd memq_wr}"
read -r -a fault_designs <<< "${RX_VERBS_FAULT_DESIGNS:-sesq_sr}"
read -r -a taps <<< "${RX_VERBS_TAP-010_failures 020_faults 030_bad_input 050_tpch}"
rc=0

# the members' parallel workers do not depend on the transport: their
# runs and cases (20_differential[workers], 20_differential[one_member],
# 010_failures, 050_tpch) are the host's only
export RX_TEST_WORKERS_RUN="" RX_TEST_ONE_MEMBER_RUN="" RX_FAILURE_WORKERS=0 RX_TPCH_WORKERS=0

if [ ! -d /sys/class/infiniband/rxe0 ]; then
	echo "verbs-tests: no rxe0 here: run me through test/rdma/guest.sh" >&2
	exit 1
fi
export RX_FABRIC_HOST=10.99.0.1
# jit off: LLVM's compiles do not depend on the transport (the host's runs
# have them) and, emulated, they are slow
export RX_CLUSTER_CONF="rdma_exchange.fabric_provider = 'verbs'
rdma_exchange.reliable_provider = 'verbs'
jit = off"

echo "== verbs-tests: one shuffling join per design (cluster-try.sh) $(date +%T)"
RX_TRY_DGRAM=verbs RX_TRY_DESIGNS="$designs" RX_TRY_TIMEOUT=120 \
	bash "$here/cluster-try.sh" || rc=1

echo "== verbs-tests: the differential suite per design $(date +%T)"
RX_TEST_PARALLEL=2 RX_TEST_DESIGNS="$diff_designs" \
	bash "$repo/test/run-tests.sh" 20_differential || rc=1

# The TAP runs (TEST or TEST:DESIGN, and for 050_tpch its designs), each
# with a guess at its cost in seconds here alone; longest first, each goes
# to the job with the least work so far.  010_failures runs once, with
# the operations' designs for its cancel and kill (RX_FAILURE_DESIGNS),
# 050_tpch once with all of them.  030_bad_input runs alone after the
# jobs: its reopened RC connections once took longer than a query waits
# when the jobs saturated the guest's CPUs.  RX_VERBS_JOBS=0: one after
# the other, design auto only.
jobs=${RX_VERBS_JOBS:-2}
[[ $jobs =~ ^[0-9]$ ]] || { echo "verbs-tests: RX_VERBS_JOBS must be 0 to 9" >&2; exit 1; }
runs=()
later=()
failure_designs="${op_designs[*]}"
for t in "${taps[@]}"; do
	case $jobs:$t in
		0:*) later+=("$t") ;;
		*:030_bad_input) later+=("$t") ;;
		*:050_tpch)
			runs+=("$((80 + 80 * ${#op_designs[@]})) 050_tpch $(IFS=,; echo "${op_designs[*]}")") ;;
		*:010_failures)
			runs+=("$((150 + 45 * ${#op_designs[@]})) 010_failures") ;;
		*:020_faults)
			for d in "${fault_designs[@]}"; do
				runs+=("145 020_faults:$d")
			done ;;
		*) runs+=("160 $t") ;;
	esac
done
declare -a job_runs job_names job_cost job_tpch
for ((j = 0; j < jobs; j++)); do job_cost[j]=0; job_runs[j]=""; job_names[j]=""; job_tpch[j]=""; done
while read -r cost run tpch; do
	[ -n "$run" ] || continue
	best=-1
	for ((j = 0; j < jobs; j++)); do
		[ $best -lt 0 ] || [ "${job_cost[j]}" -lt "${job_cost[best]}" ] && best=$j
	done
	job_cost[best]=$((job_cost[best] + cost))
	job_runs[best]+="$run "
	[ -z "$tpch" ] || job_tpch[best]=${tpch//,/ }
	case " ${job_names[best]} " in *" ${run%%:*} "*) ;; *) job_names[best]+="${run%%:*} " ;; esac
done < <(printf '%s\n' "${runs[@]}" | sort -rn)

if [ ${#runs[@]} -gt 0 ]; then
	echo "== verbs-tests: the TAP tests in $jobs jobs $(date +%T)"
	logs=$(mktemp -d)
	pids=()
	for ((j = 0; j < jobs; j++)); do
		[ -n "${job_runs[j]}" ] || continue
		echo "job $j: ${job_runs[j]}${job_tpch[j]:+(050_tpch with ${job_tpch[j]})}"
		# ports below the ephemeral ones (see the top of the file)
		RX_TEST_DESIGNS="" RX_TAP_RUNS="${job_runs[j]}" \
			RX_TAP_PORTS="$((20000 + 400 * j))-$((20399 + 400 * j))" \
			RX_TPCH_SETS=${RX_TPCH_SETS:-a:pk} RX_TPCH_DESIGNS="${job_tpch[j]}" \
			RX_FAILURE_DESIGNS="$failure_designs" \
			bash "$repo/test/run-tests.sh" ${job_names[j]} > "$logs/job$j" 2>&1 &
		pids[j]=$!
	done
	for ((j = 0; j < jobs; j++)); do
		[ -n "${pids[j]:-}" ] || continue
		wait "${pids[j]}" || rc=1
		echo
		echo "== verbs-tests: job $j (${job_runs[j]}), done $(date +%T)"
		cat "$logs/job$j"
	done
	rm -rf "$logs"
fi

if [ ${#later[@]} -gt 0 ]; then
	echo "== verbs-tests: ${later[*]} $(date +%T)"
	RX_TEST_DESIGNS="" RX_TPCH_SETS=${RX_TPCH_SETS:-a:pk} RX_BAD_INPUT_TRANSPORT_ONLY=1 \
		bash "$repo/test/run-tests.sh" "${later[@]}" || rc=1
fi

echo "verbs-tests: $([ $rc = 0 ] && echo passed || echo FAILED) $(date +%T)"
exit $rc
