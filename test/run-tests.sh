#!/usr/bin/env bash
# test/run-tests.sh: runs every test of rdma_exchange against the installed
# extension: the pg_regress suites (sql/*.sql with expected/*.out) on a
# local 3-member cluster, then every TAP test (test/t/*.pl).
#
#   bash test/run-tests.sh [NAME...]
#
# NAMEs restrict the run to those suites (sql/NAME.sql) and TAP tests
# (test/t/NAME.pl), and "verbs" to the tests on Soft-RoCE in a qemu guest
# (test/rdma/verbs-tests.sh, last); 00_setup runs before any suite.  The differential suite
# runs once more per transport design (20_differential[DESIGN], in a
# database of its own with rdma_exchange.transport_design set), and once
# with two parallel workers per member for every share
# (20_differential[workers]: rdma_exchange.workers_per_member = 2 and
# min_parallel_table_scan_size, parallel_setup_cost and parallel_tuple_cost
# 0, so that the suite's small tables get
# them too), the
# failure tests once more per design over reliable connections
# (010_failures[DESIGN]) and the fault tests once more per datagram design
# other than sesq_sr (020_faults[mesq_sr]).  Exits non-zero when anything
# fails; the last line is "N passed, M failed", counting each of those runs
# once.
#
# Everything runs as the test user (rdmax when started as root), from a
# copy of sql/, expected/ and test/ in a fresh directory under /tmp, since
# the source tree may be unreadable to that user.  The cluster is destroyed
# at the end; on failure the diffs and the tails of the server logs are
# printed first.
#
# Talking to other members from a suite: pg_regress connects only to member
# 0 and cannot hand psql variables to the suites, so suites reach the other
# members through rdma_exchange's own functions (add_node, run_on_all_nodes,
# the nodes view, ...).  For the rare suite that must connect to a member
# itself, the member ports are exported and psql 15 can read them:
#     \getenv p1 RX_MEMBER1_PORT
#     \c - - - :p1
# (pg_regress runs psql quietly, so \c prints nothing and the expected
# output does not depend on the ports.)
#
# Environment:
#   PGBIN         PostgreSQL bindir (default: $(pg_config --bindir))
#   RX_TEST_DESIGNS  transport designs of those extra runs (default: all
#                 eight, "sesq_sr semq_sr semq_rd semq_wr mesq_sr memq_sr
#                 memq_rd memq_wr"; empty: none)
#   RX_TEST_WORKERS_RUN  the differential run with parallel workers per
#                 member (default "workers"; empty: none)
#   RX_TEST_ONE_MEMBER_RUN  the differential run on a cluster of one
#                 member with 2 workers (default "one_member"; empty: none)
#   RX_TEST_PARALLEL  how many of those differential runs go at once, each
#                 in its own database of the one cluster (default 1;
#                 test/rdma/verbs-tests.sh runs 2: under emulation their
#                 queries wait on the members' round trips as much as on
#                 the CPU)
#   RX_TAP_RUNS   the TAP runs, TEST or TEST:DESIGN each, instead of every
#                 selected TAP test plus the per-design runs below
#                 (test/rdma/verbs-tests.sh splits them over parallel jobs)
#   RX_TEST_PORT  base port of the cluster (default: the first free one
#                 from 55632); members use PORT..PORT+2, fabric PORT+100..
#   RX_TAP_PORTS  LOW-HIGH: port range for TAP clusters (see RxCluster.pm)
#   RX_KEEP_TMP   1: keep the temporary directory (results, TAP logs)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=test/common.sh
. "$here/common.sh"

nmembers=3
rx_pgbin
rx_check_user
pkglibdir=$("$PG_CONFIG" --pkglibdir)
pg_regress="$pkglibdir/pgxs/src/test/regress/pg_regress"
perl_lib="$pkglibdir/pgxs/src/test/perl"
for f in "$pg_regress" "$perl_lib/PostgreSQL/Test/Cluster.pm"; do
	[ -e "$f" ] || { echo "run-tests.sh: $f is missing (postgresql-server-dev-15)" >&2; exit 1; }
done

# --- what to run -----------------------------------------------------------
regress_tests=()
tap_tests=()
# every transport design runs the differential suite and, the designs over
# reliable connections, the failure tests (RX_TEST_DESIGNS to narrow)
read -r -a designs <<< "${RX_TEST_DESIGNS-sesq_sr semq_sr semq_rd semq_wr mesq_sr memq_sr memq_rd memq_wr}"
parallel=${RX_TEST_PARALLEL:-1}
[[ $parallel =~ ^[1-9][0-9]*$ ]] || { echo "run-tests.sh: RX_TEST_PARALLEL must be a positive number" >&2; exit 1; }
wanted() {
	local n
	[ ${#selection[@]} -eq 0 ] && return 0
	for n in "${selection[@]}"; do [ "$n" = "$1" ] && return 0; done
	return 1
}
selection=("$@")
if [ -d "$top/sql" ]; then
	while IFS= read -r f; do
		wanted "$f" && regress_tests+=("$f")
	done < <(find "$top/sql" -maxdepth 1 -name '*.sql' -printf '%f\n' | sed 's/\.sql$//' | LC_ALL=C sort)
	# the others use what 00_setup creates
	if [ ${#regress_tests[@]} -gt 0 ] && [ "${regress_tests[0]}" != 00_setup ]; then
		regress_tests=(00_setup "${regress_tests[@]}")
	fi
fi
if [ -d "$here/t" ]; then
	while IFS= read -r f; do
		wanted "$f" && tap_tests+=("$f")
	done < <(find "$here/t" -maxdepth 1 -name '*.pl' -printf '%f\n' | sed 's/\.pl$//' | LC_ALL=C sort)
fi

# --- a private copy of the tests, readable and writable by the test user ---
work=$(mktemp -d /tmp/rdma_exchange_test.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/src"
for d in sql expected input output data; do
	[ -d "$top/$d" ] && cp -rL "$top/$d" "$work/src/"
done
cp -rL "$here" "$work/src/test"
# the TPC-H test loads data with bench/tpch (generator sources, scripts,
# queries), not the benchmark's results
mkdir -p "$work/src/bench/tpch"
(cd "$top/bench/tpch" && tar -cf - --exclude=results --exclude=dbgen/rx_dbgen .) |
	(cd "$work/src/bench/tpch" && tar -xf -)
mkdir -p "$work/regress" "$work/tap"
if [ "$(id -u)" -eq 0 ]; then
	chown -R "$RX_TEST_USER:" "$work"
fi
cluster="$work/cluster"

passed=0
failed=0
failed_names=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	local c
	for c in "$cluster" "$work/cluster1"; do
		[ -d "$c" ] || continue
		bash "$here/cluster.sh" destroy "$c" >/dev/null 2>&1 || true
	done
	# servers a TAP test left behind (a test killed before its END block)
	local d
	while IFS= read -r d; do
		rx_as_user "$PGBIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
	done < <(find "$work" -name postmaster.pid -printf '%h\n' 2>/dev/null)
	if [ "${RX_KEEP_TMP:-0}" = 1 ]; then
		echo "run-tests.sh: kept $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

section() {
	echo
	echo "======== $* ========"
}

# the result of the differential run in $work/regress/RUN, counted
count_differential() {
	local out="$work/regress/$1"
	cat "$out/pg_regress.out" 2>/dev/null || true
	if grep -Eq "^(test +|ok +[0-9]+ +[-+] +| +)20_differential +(\.\.\. ok|[0-9]+ ms)" \
		"$out/pg_regress.out" 2>/dev/null; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failed_names+=("20_differential[$1]")
		[ -s "$out/regression.diffs" ] &&
			cat "$out/regression.diffs" >> "$work/regress/regression.diffs"
	fi
}

# --- pg_regress suites ---------------------------------------------------------
if [ ${#regress_tests[@]} -gt 0 ]; then
	section "pg_regress: ${regress_tests[*]}"
	base=${RX_TEST_PORT:-$(rx_free_base "$nmembers" 55632)}
	regress_ok=1
	if ! bash "$here/cluster.sh" start "$cluster" "$nmembers" "$base" regression; then
		echo "run-tests.sh: the cluster did not start" >&2
		regress_ok=0
	fi
	# pg_regress stops at the first suite without expected output; give
	# such a suite an empty one so that it runs, fails, and its whole
	# output shows in regression.diffs
	for t in "${regress_tests[@]}"; do
		if [ ! -f "$work/src/expected/$t.out" ]; then
			echo "run-tests.sh: expected/$t.out is missing; $t will fail" >&2
			mkdir -p "$work/src/expected"
			: > "$work/src/expected/$t.out"
		fi
	done
	if [ $regress_ok = 1 ]; then
		member_env=(RX_NMEMBERS="$nmembers" RX_CLUSTER_DIR="$cluster")
		for ((i = 0; i < nmembers; i++)); do
			member_env+=("RX_MEMBER${i}_PORT=$((base + i))")
		done
		# set +e: pg_regress fails when a suite fails; we count them below
		set +e
		rx_as_user_in "$work/regress" env "${member_env[@]}" PGHOST="$cluster" PGPORT="$base" \
			"$pg_regress" --use-existing --dbname=regression \
			--host="$cluster" --port="$base" --bindir="$PGBIN" \
			--inputdir="$work/src" --outputdir="$work/regress" \
			"${regress_tests[@]}" 2>&1 | tee "$work/regress/pg_regress.out"
		set -e
	fi
	for t in "${regress_tests[@]}"; do
		# PostgreSQL 15 prints "test NAME ... ok"; later versions print TAP
		if [ $regress_ok = 1 ] &&
			grep -Eq "^(test +|ok +[0-9]+ +[-+] +| +)${t} +(\.\.\. ok|[0-9]+ ms)" "$work/regress/pg_regress.out"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			failed_names+=("$t")
		fi
	done
	# the differential suite once more with every transport design, each
	# in a database of its own, RX_TEST_PARALLEL designs at a time
	batch=()
	for design in "${designs[@]}" ${RX_TEST_WORKERS_RUN-workers} ""; do
		wanted 20_differential || break
		[ $regress_ok = 1 ] || break
		[ -n "$design" ] && batch+=("$design")
		[ ${#batch[@]} -gt 0 ] || continue
		[ -z "$design" ] || [ ${#batch[@]} -ge "$parallel" ] || continue
		pids=()
		for d in "${batch[@]}"; do
			mkdir -p "$work/regress/$d"
			[ "$(id -u)" -eq 0 ] && chown "$RX_TEST_USER:" "$work/regress/$d"
			# the databases one after the other, the suites at once
			case $d in
				workers) options="-c rdma_exchange.workers_per_member=2 -c min_parallel_table_scan_size=0 -c parallel_setup_cost=0 -c parallel_tuple_cost=0" ;;
				*) options="-c rdma_exchange.transport_design=$d" ;;
			esac
			if bash "$here/cluster.sh" start "$cluster" "$nmembers" "$base" "regression_$d" >/dev/null; then
				rx_as_user_in "$work/regress/$d" env "${member_env[@]}" PGHOST="$cluster" PGPORT="$base" \
					PGOPTIONS="$options" \
					"$pg_regress" --use-existing --dbname="regression_$d" \
					--host="$cluster" --port="$base" --bindir="$PGBIN" \
					--inputdir="$work/src" --outputdir="$work/regress/$d" \
					00_setup 20_differential > "$work/regress/$d/pg_regress.out" 2>&1 &
				pids+=($!)
			fi
		done
		for pid in "${pids[@]}"; do
			wait "$pid" || true
		done
		for d in "${batch[@]}"; do
			count_differential "$d"
		done
		batch=()
	done
	# once more on a cluster of one member, with its workers: there the
	# member's part of every query is one parallel plan, no exchange below
	# the one to the coordinator (planner/locus.c)
	if wanted 20_differential && [ $regress_ok = 1 ] && [ -n "${RX_TEST_ONE_MEMBER_RUN-one_member}" ]; then
		d=one_member
		mkdir -p "$work/regress/$d"
		[ "$(id -u)" -eq 0 ] && chown "$RX_TEST_USER:" "$work/regress/$d"
		base1=$(rx_free_base 1 $((base + 10)))
		if bash "$here/cluster.sh" start "$work/cluster1" 1 "$base1" regression >/dev/null; then
			rx_as_user_in "$work/regress/$d" env RX_NMEMBERS=1 RX_CLUSTER_DIR="$work/cluster1" \
				RX_MEMBER0_PORT="$base1" PGHOST="$work/cluster1" PGPORT="$base1" \
				PGOPTIONS="-c rdma_exchange.workers_per_member=2 -c min_parallel_table_scan_size=0 -c parallel_setup_cost=0 -c parallel_tuple_cost=0" \
				"$pg_regress" --use-existing --dbname=regression \
				--host="$work/cluster1" --port="$base1" --bindir="$PGBIN" \
				--inputdir="$work/src" --outputdir="$work/regress/$d" \
				20_differential > "$work/regress/$d/pg_regress.out" 2>&1 || true
		fi
		count_differential "$d"
		bash "$here/cluster.sh" destroy "$work/cluster1" >/dev/null 2>&1 || true
	fi
	if [ -s "$work/regress/regression.diffs" ]; then
		section "regression.diffs"
		head -n 3000 "$work/regress/regression.diffs"
	fi
	if [ ${#failed_names[@]} -gt 0 ] && [ -d "$cluster" ]; then
		section "server logs"
		bash "$here/cluster.sh" logs "$cluster" 60 || true
	fi
	# free the cores and memory for the TAP tests
	bash "$here/cluster.sh" destroy "$cluster" >/dev/null 2>&1 || true
fi

# --- TAP tests -----------------------------------------------------------------
tap_env=(
	PATH="$PGBIN:$PATH"
	PERL5LIB="$perl_lib:$work/src/test${PERL5LIB:+:$PERL5LIB}"
	PG_REGRESS="$pg_regress"
	TESTDIR="$work/tap"
)
[ -n "${RX_TAP_PORTS:-}" ] && tap_env+=(RX_TAP_PORTS="$RX_TAP_PORTS")
# the members' fabric host and settings (RxCluster.pm; test/rdma's guest)
[ -n "${RX_FABRIC_HOST:-}" ] && tap_env+=(RX_FABRIC_HOST="$RX_FABRIC_HOST")
[ -n "${RX_CLUSTER_CONF:-}" ] && tap_env+=(RX_CLUSTER_CONF="$RX_CLUSTER_CONF")
# the failure tests once more with each design over reliable connections,
# the fault tests (injected into datagrams; sesq_sr by default) once more
# with each other datagram design
tap_runs=()
for t in "${tap_tests[@]}"; do
	tap_runs+=("$t")
	for design in "${designs[@]}"; do
		case $t:$design in
			010_failures:?esq_sr | 020_faults:sesq_sr) ;;
			010_failures:* | 020_faults:?esq_sr) tap_runs+=("$t:$design") ;;
		esac
	done
done
[ -z "${RX_TAP_RUNS:-}" ] || read -r -a tap_runs <<< "$RX_TAP_RUNS"
for run in "${tap_runs[@]}"; do
	t=${run%%:*}
	design=auto
	[ "$run" = "$t" ] || design=${run#*:}
	section "TAP: $t (transport design $design)"
	if rx_as_user_in "$work/src/test" env "${tap_env[@]}" RX_TEST_DESIGN="$design" prove -v "t/$t.pl"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failed_names+=("$t[$design]")
		for f in "$work/tap/tmp_check/log/regress_log_$t" "$work/tap/tmp_check/log/${t}_"*.log; do
			[ -f "$f" ] || continue
			section "$f (last 60 lines)"
			tail -n 60 "$f"
		done
	fi
done

# --- on a real RDMA device: Soft-RoCE in a qemu guest (test/rdma) ----------------
# The guest runs this machine's own root file system, the installed
# extension included; it must start: a machine that cannot run it fails
# here, loudly, rather than skip the verbs tests.
if wanted verbs; then
	section "verbs: the reliable designs on Soft-RoCE (test/rdma/verbs-tests.sh in a qemu guest)"
	# 5G: the clusters' data directories live in the guest's memory (its
	# tmpfs root), and the per-design databases and the clusters of
	# verbs-tests.sh's parallel jobs add up.  3600 s: the emulated guest
	# ran 20 to 40 minutes on the 2-core machines so far (2400 s timed out
	# a run whose differential suites were still passing, one at a time)
	if RX_GUEST_TIMEOUT=${RX_GUEST_TIMEOUT:-3600} RX_GUEST_MEM=${RX_GUEST_MEM:-5G} \
		bash "$here/rdma/guest.sh" run bash test/rdma/verbs-tests.sh; then
		passed=$((passed + 1))
	else
		echo "run-tests.sh: the verbs tests failed, or the Soft-RoCE guest could not run (test/rdma/README.md)" >&2
		failed=$((failed + 1))
		failed_names+=("verbs")
	fi
fi

section "summary"
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
