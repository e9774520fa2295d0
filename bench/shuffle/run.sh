#!/usr/bin/env bash
# bench/shuffle/run.sh: the paper's shuffle experiment on this machine, with
# its baselines measured in the same run (DESIGN.md section 6).
#
#   bash bench/shuffle/run.sh [ROWS] [RUNS]        (defaults: 1000000 5)
#
# Two local 3-member clusters (test/cluster.sh), one whose reliable
# endpoints use libfabric's tcp provider and one using shm (both also have
# the udp datagram endpoint), hold the same tables, made on each member from
# generate_series: "16 B" rows (k bigint, v bigint) and "lineitem" rows (the
# 16 TPC-H lineitem columns with dbgen-like values, l_orderkey distinct),
# ROWS rows in all split evenly over the n participants (n = 2: members 0
# and 1; n = 3), and ROWS/10 rows for broadcast.  Measured, interleaved in
# a random order within each run r = 1..RUNS (medians in the report):
#
#   shuffle     rdma_exchange.shuffle_selftest() on all n members at once
#               (started together with pg_sleep_until): modes repartition
#               and broadcast, designs sesq_sr (udp datagrams), semq_sr,
#               semq_rd, semq_wr on tcp and on shm, and with n = 3 their
#               ME variants (mesq_sr, memq_*), adaptive buffer pool;
#               the 3-member lineitem repartition with semq_sr on tcp and
#               with sesq_sr also with fixed rdma_exchange.buffer_depth
#               2, 4, 8, 16, 32, 64, and once more adaptive and depth 8
#               while a session on member 0 samples the buffers in use
#               every 5 ms (pool.png)
#   transport   rdma_exchange.transport_selftest(): the transport alone,
#               all-to-all 64 KiB messages (1408 B payloads for sesq_sr),
#               every design and provider, n = 2 and 3; SE against ME
#               (semq_sr/memq_sr, semq_wr/memq_wr, tcp and shm) also with
#               two backends a member at once
#   fi_sendloop raw libfabric all-to-all bandwidth (baselines/fi_sendloop.c),
#               providers udp (1472 B), tcp and shm (64 KiB), n = 2 and 3
#   mpi         MPI_Alltoallv (baselines/mpi_alltoallv.c, Open MPI) over
#               btl tcp and vader, rows of 16 B and of the lineitem width
#               measured by shuffle_selftest, n = 2 and 3
#   copy        libpq COPY repartition among n plain servers
#               (baselines/copy_repartition.sh, 3 timed runs per call)
#   gather      PostgreSQL's Gather on member 0 of the tcp cluster: a local
#               table of all ROWS rows, 2 workers, EXPLAIN ANALYZE of
#               SELECT * (and once more with parallel_leader_participation
#               off, so that every row crosses between processes)
#
# Writes bench/shuffle/results/report.md, shuffle.png, pool.png and
# raw.jsonl (every raw number, one JSON object a line; report.py makes the
# rest from it).  Progress goes to stderr.
#
# Runs as the current user or, when started as root, the servers and
# mpirun run as the test user (rdmax, test/common.sh).  The extension must
# be installed.  Everything it starts is stopped and removed on exit.
#
# Environment: RX_SHUFFLE_JOBS (an extended regular expression: only the
# measurements whose line in the job list matches, e.g. "shuffle tcp 3 li
# repartition (semq|memq)_sr", for a quick look; the report then has gaps),
# RX_SHUFFLE_OUT (directory of the results, default
# bench/shuffle/results), RX_SHUFFLE_DIR (work directory, default
# /tmp/rx_shuffle_bench; removed at exit), RX_SHUFFLE_PORT (P, default
# 26700, below Linux's ephemeral ports 32768-60999): the tcp cluster's members listen on P..P+2, the shm cluster's on
# P+10..P+12 (fabric endpoints at +100), COPY's plain servers on 3 free
# ports of P+20..P+29, fi_sendloop on 3 free ports of P+30..P+39, Open MPI
# on P+40..P+90.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

rows=${1:-1000000}
runs=${2:-5}
[[ $rows =~ ^[1-9][0-9]*$ && $runs =~ ^[1-9][0-9]*$ ]] \
	|| { echo "usage: bash bench/shuffle/run.sh [ROWS] [RUNS]" >&2; exit 2; }
[ "$rows" -ge 1000 ] || { echo "run.sh: ROWS must be at least 1000" >&2; exit 2; }
P=${RX_SHUFFLE_PORT:-26700}
dir=${RX_SHUFFLE_DIR:-/tmp/rx_shuffle_bench}
dir=${dir%/}
out=${RX_SHUFFLE_OUT:-$here/results}
baselines="$here/baselines"
cluster=(bash "$top/test/cluster.sh")
db=sb
t_begin=$(date +%s)

rx_pgbin
rx_check_user
mkdir -p "$out"

log() { echo "$(date +%H:%M:%S) $*" >&2; }
die() { log "run.sh: $*"; exit 1; }

# one benchmark at a time (they would share the ports)
exec 9<"$here/run.sh"
flock -n 9 || die "another bench/shuffle/run.sh is running"

# ---------------------------------------------------------------- clean up

declare -A base=([tcp]=$P [shm]=$((P + 10)))

destroy_all() {
	local c
	for c in tcp shm; do
		[ -d "$dir/$c" ] && "${cluster[@]}" destroy "$dir/$c" >/dev/null 2>&1
	done
	[ -d "$dir/copy" ] && for c in "$dir"/copy/m[0-9]*; do
		[ -d "$c" ] && "${cluster[@]}" destroy "$c" >/dev/null 2>&1
	done
	rm -rf "$dir"
}

cleanup() {
	local rc=$? running
	trap - EXIT INT TERM HUP
	mapfile -t running < <(jobs -p)
	[ ${#running[@]} -eq 0 ] || kill "${running[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	destroy_all || true
	for ((try = 30; try < 40; try++)); do
		[ ! -O "/dev/shm/fisl_$((P + try))" ] || rm -f "/dev/shm/fisl_$((P + try))"
	done
	[ $rc -eq 0 ] || log "run.sh: failed (exit $rc); clusters destroyed"
	exit $rc
}

if [ -e "$dir" ] && [ ! -f "$dir/.rx_shuffle_bench" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
	die "$dir exists and was not made by this script; set RX_SHUFFLE_DIR"
fi
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
destroy_all
rx_mkdir_for_user "$dir"
dir=$(cd "$dir" && pwd -P)
touch "$dir/.rx_shuffle_bench"
tmp="$dir/tmp"
bin="$dir/bin"
mkdir -p "$tmp" "$bin"
chmod 755 "$dir" "$bin"

# ports_free PORT...: fails, printing the first busy one, unless every
# PORT can be bound on 127.0.0.1 for TCP (listening) and for UDP
ports_free() {
	perl -MIO::Socket::INET -e '
		for my $port (@ARGV) {
			for my $proto ("tcp", "udp") {
				my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $port,
					Proto => $proto, ($proto eq "tcp" ? (Listen => 1, ReuseAddr => 1) : ()));
				unless ($s) { print "$port/$proto\n"; exit 1; }
				close $s;
			}
		}' "$@"
}

# free_run N LO HI: prints the first port p of LO..HI such that p..p+N-1
# are free; waits (up to 90 s) when none is.  These ports lie in the
# kernel's ephemeral range, so a client connection of any process can hold
# one for a while (60 s in TIME_WAIT).
free_run() {
	local n=$1 lo=$2 hi=$3 p tries
	for ((tries = 0; tries < 45; tries++)); do
		for ((p = lo; p + n - 1 <= hi; p++)); do
			# shellcheck disable=SC2046
			ports_free $(seq "$p" $((p + n - 1))) >/dev/null && { echo "$p"; return 0; }
		done
		sleep 2
	done
	return 1
}

# the clusters' ports (server and fabric) must be free now
for ((try = 1; ; try++)); do
	# shellcheck disable=SC2046
	busy=$(ports_free $(for o in 0 10 100 110; do seq $((P + o)) $((P + o + 2)); done)) && break
	[ "$try" -lt 45 ] || die "port $busy is in use; is another benchmark running? (RX_SHUFFLE_PORT=$P)"
	[ "$try" -gt 1 ] || log "waiting for port $busy to be free"
	sleep 2
done

# raw numbers go to raw.jsonl.partial, renamed raw.jsonl when complete
raw="$out/raw.jsonl.partial"
: > "$raw"
emit() { "$py" "$here/jsonline.py" "$@" >> "$raw"; }

# ---------------------------------------------------------------- machine

fi_version=$( (fi_info --version 2>/dev/null || echo "fi_info: not found") | paste -sd' ')
pg_version=$("$PGBIN/postgres" --version)
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
mpi_version=$( (mpirun --version 2>/dev/null || true) | head -1)
log "shuffle benchmark: $rows rows, $runs runs, $(nproc) cores, work dir $dir, ports $P.."

# ---------------------------------------------------------------- baselines: build

notes="$tmp/notes"
: > "$notes"
note() { echo "$*" >> "$notes"; log "note: $*"; }

have_fi=0
if [ -f "$baselines/fi_sendloop.c" ] && [ -f "$baselines/build.sh" ]; then
	if sh "$baselines/build.sh" "$bin/fi_sendloop" >"$tmp/build_fi.log" 2>&1; then
		have_fi=1
	else
		note "fi_sendloop did not build: $(tail -3 "$tmp/build_fi.log" | paste -sd' ')"
	fi
else
	note "baselines/fi_sendloop.c is missing: no raw libfabric baseline"
fi

have_mpi=0
if [ -f "$baselines/mpi_alltoallv.c" ] && [ -f "$baselines/build-mpi.sh" ]; then
	if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
		log "Open MPI is not installed: installing it with test/install-deps.sh"
		if bash "$top/test/install-deps.sh" openmpi-bin libopenmpi-dev >"$tmp/install_mpi.log" 2>&1; then
			note "Open MPI was installed by test/install-deps.sh"
			mpi_version=$( (mpirun --version 2>/dev/null || true) | head -1)
		else
			note "Open MPI is not installed and installing it failed: $(tail -2 "$tmp/install_mpi.log" | paste -sd' ')"
		fi
	fi
	if command -v mpicc >/dev/null 2>&1; then
		if bash "$baselines/build-mpi.sh" "$bin/mpi_alltoallv" >"$tmp/build_mpi.log" 2>&1; then
			chmod 755 "$bin/mpi_alltoallv"
			have_mpi=1
		else
			note "mpi_alltoallv did not build: $(tail -3 "$tmp/build_mpi.log" | paste -sd' ')"
		fi
	fi
else
	note "baselines/mpi_alltoallv.c is missing: no MPI baseline"
fi

have_copy=0
if [ -f "$baselines/copy_repartition.sh" ]; then
	have_copy=1
else
	note "baselines/copy_repartition.sh is missing: no COPY baseline"
fi

# ---------------------------------------------------------------- clusters

start_cluster() {
	local c=$1
	RX_CLUSTER_CONF="rdma_exchange.reliable_provider = '$c'" \
		"${cluster[@]}" start "$dir/$c" 3 "${base[$c]}" "$db" >/dev/null
}

restart_cluster() {
	local c=$1
	log "restarting the $c cluster"
	"${cluster[@]}" stop "$dir/$c" >/dev/null 2>&1 || true
	start_cluster "$c"
}

# psql to member $2 of cluster $1 (tcp or shm)
psqlx() {
	local c=$1 i=$2
	shift 2
	rx_as_user env PGHOST="$dir/$c" PGPORT=$((${base[$c]} + i)) PGDATABASE=$db \
		"$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"
}

log "starting two 3-member clusters (reliable provider tcp at $P, shm at $((P + 10)))"
start_cluster tcp
start_cluster shm

# dbgen-like lineitem values from g (l_orderkey = g: distinct, bigint)
# shellcheck source=bench/shuffle/rows.sh
. "$here/rows.sh"

bcast_rows=$((rows / 10))

# table NAME for row kind $1, with rows $3..$4 of generate_series
table_sql() {
	local kind=$1 name=$2 lo=$3 hi=$4 cols sel
	if [ "$kind" = li ]; then cols=$RX_LI_COLS sel=$RX_LI_SELECT; else cols=$RX_N16_COLS sel=$RX_N16_SELECT; fi
	cat <<SQL
DROP TABLE IF EXISTS $name;
CREATE TABLE $name ($cols);
INSERT INTO $name SELECT $sel FROM generate_series(${lo}::bigint, ${hi}::bigint) g;
VACUUM ANALYZE $name;
SQL
}

# member $3's share of $2 rows among $1 members: "lo hi" (two words)
share() { echo $(($3 * $2 / $1 + 1)) $((($3 + 1) * $2 / $1)); }

log "loading tables: $rows rows ($bcast_rows for broadcast) per row kind and member count, on both clusters"
t0=$(date +%s.%N)
pids=()
for c in tcp shm; do
	for i in 0 1 2; do
		{
			echo "SET client_min_messages = warning;"
			for kind in n16 li; do
				for n in 2 3; do
					[ "$i" -lt "$n" ] || continue
					# shellcheck disable=SC2046
					table_sql "$kind" "${kind}_$n" $(share "$n" "$rows" "$i")
					# shellcheck disable=SC2046
					table_sql "$kind" "${kind}_${n}_b" $(share "$n" "$bcast_rows" "$i")
				done
			done
		} | psqlx "$c" "$i" >/dev/null &
		pids+=($!)
	done
done
# the Gather baseline: all rows in one local table on member 0 of tcp
{
	echo "SET client_min_messages = warning;"
	table_sql n16 n16_full 1 "$rows"
	table_sql li li_full 1 "$rows"
	echo "DROP TABLE IF EXISTS rx_bench_stop; CREATE TABLE rx_bench_stop (tag text);"
} | psqlx tcp 0 >/dev/null &
pids+=($!)
for pid in "${pids[@]}"; do
	wait "$pid" || die "loading the tables failed (see $dir/*/m*.log)"
done
log "loaded in $(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"

# ---------------------------------------------------------------- jobs

addrs_of() {
	local c=$1 n=$2 i a=""
	for ((i = 0; i < n; i++)); do a="$a,127.0.0.1:$((${base[$c]} + 100 + i))"; done
	echo "{${a#,}}"
}
rand64() { echo $(((RANDOM << 45) | (RANDOM << 30) | (RANDOM << 15) | RANDOM)); }
now() { date +%s.%N; }
# start time for sessions being launched now
start_at() { awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 0.4 }'; }

# waits for every job given; fails when one failed
wait_pids() {
	local p rc=0
	for p in "$@"; do
		wait "$p" || rc=1
	done
	return "$rc"
}

# participants C N SQLFN [COMMAND...]: runs at the same moment (each in its
# own psql, after the COMMANDs) the statement `SQLFN i` on members
# 0..N-1 of cluster C; their JSON rows go to $tmp/job.out, the start time
# to $tmp/job.start.  Fails unless every member answered.
participants() {
	local c=$1 n=$2 k=$3 sqlfn=$4 t i j pids=() rc=0 cmds=()
	shift 4
	for i in "$@"; do cmds+=(-c "$i"); done
	t=$(start_at)
	for ((i = 0; i < n; i++)); do
		for ((j = 0; j < k; j++)); do
			psqlx "$c" "$i" -c "SET statement_timeout = '150s'" "${cmds[@]}" \
				-c "SELECT pg_sleep_until(to_timestamp($t))" -c "$("$sqlfn" "$i" "$j")" \
				> "$tmp/job.$i.$j" 2> "$tmp/job.err.$i.$j" &
			pids+=($!)
		done
	done
	wait_pids "${pids[@]}" || rc=1
	cat "$tmp"/job.[0-9]*.[0-9]* 2>/dev/null | grep '^{' > "$tmp/job.out" || true
	echo "$t" > "$tmp/job.start"
	[ "$rc" = 0 ] && [ "$(wc -l < "$tmp/job.out")" = "$((n * k))" ]
}

# one shuffle_selftest on every participant at once; writes one JSON line
# per member to $tmp/job.out; $? non-zero on any failure
shuffle_once() {
	local c=$1 n=$2 kind=$3 mode=$4 design=$5 depth=$6 sample=$7
	local tbl="${kind}_$n" qid token addrs rc=0 spid=
	[ "$mode" = broadcast ] && tbl="${kind}_${n}_b"
	qid=$(rand64) token=$(rand64) addrs=$(addrs_of "$c" "$n")
	rm -f "$tmp"/job.* "$tmp"/sample.*
	if [ "$sample" = 1 ]; then
		local cls=large tag="s$qid"
		is_datagram "$design" && cls=small
		psqlx "$c" 0 -c "SET statement_timeout = '150s'" -c "
CREATE TEMP TABLE s (t float8, inuse bigint, reserved bigint);
DO \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() < t0 + interval '120 s'
		AND NOT EXISTS (SELECT 1 FROM rx_bench_stop WHERE tag = '$tag') LOOP
		INSERT INTO s SELECT extract(epoch FROM clock_timestamp()),
			total_buffers - free_buffers - recv_posted_buffers, reserved_buffers
			FROM rdma_exchange.buffer_pool_stats WHERE class = '$cls';
		PERFORM pg_sleep(0.005);
	END LOOP;
END \$\$;" -c "SELECT coalesce(json_agg(json_build_array(round(t::numeric, 4), inuse, reserved) ORDER BY t), '[]') FROM s" \
			> "$tmp/sample.out" 2> "$tmp/sample.err" &
		spid=$!
	fi
	shuffle_sql() {
		echo "SELECT row_to_json(s) FROM (SELECT $1 AS member, * FROM rdma_exchange.shuffle_selftest($qid, $token, $1, '$addrs', '$tbl', '$mode', '$design')) s"
	}
	participants "$c" "$n" 1 shuffle_sql "SET rdma_exchange.buffer_depth = $depth" || rc=1
	if [ -n "$spid" ]; then
		sleep 0.2
		psqlx "$c" 0 -c "INSERT INTO rx_bench_stop VALUES ('s$qid')" >/dev/null || rc=1
		wait "$spid" || rc=1
	fi
	return "$rc"
}

# one transport_selftest all-to-all on every participant at once; with
# k > 1, k of them at once on every participant (k backends a member, each
# its own query)
transport_once() {
	local c=$1 n=$2 design=$3 msgs=$4 k=${5:-1}
	local qids=() tokens=() addrs j
	for ((j = 0; j < k; j++)); do qids+=("$(rand64)") tokens+=("$(rand64)"); done
	addrs=$(addrs_of "$c" "$n")
	rm -f "$tmp"/job.*
	transport_sql() {
		local others
		others=$(seq 0 $((n - 1)) | grep -vx "$1" | paste -sd,)
		echo "SELECT row_to_json(s) FROM (SELECT $1 AS member, $2 AS session, * FROM rdma_exchange.transport_selftest(${qids[$2]}, ${tokens[$2]}, $1, '$addrs', $msgs, 65536, '{$others}', '{$others}', 1, 0, '$design')) s"
	}
	participants "$c" "$n" "$k" transport_sql
}

# the error output of the last job, on one line
job_errors() { cat "$tmp"/job.err.* "$tmp"/sample.err 2>/dev/null | grep -v '^$' | sort -u | head -5 | paste -sd' ' | cut -c1-400; }

# max seconds and rows/s of $tmp/job.out (rows received / max seconds)
job_summary() {
	"$py" -c '
import json, sys
ms = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
s = max(m["seconds"] for m in ms)
key = "rows_received" if "rows_received" in ms[0] else "received"
print("%.3f s, %.0f %s/s" % (s, sum(m[key] for m in ms) / s, "rows" if key == "rows_received" else "msgs"))' "$tmp/job.out"
}

# the designs over datagrams (udp provider, small buffers)
is_datagram() { case $1 in ?esq_sr) return 0 ;; esac; return 1; }

# run a measurement ("$@") on cluster c; after a failure restart the
# cluster and try once more
with_retry() {
	local c=$1 try
	shift
	for try in 1 2; do
		"$@" && return 0
		log "  failed (try $try): $(job_errors)"
		[ "$try" = 1 ] && restart_cluster "$c"
	done
	return 1
}

job_shuffle() {
	local r=$1 c=$2 n=$3 kind=$4 mode=$5 design=$6 depth=$7 sample=${8:-0}
	local provider=$c what
	is_datagram "$design" && provider=udp
	what=(kind=shuffle run="$r" cluster="$c" provider="$provider" design="$design" n="$n"
		row="$kind" mode="$mode" depth="$depth" sampled="$sample")
	if with_retry "$c" shuffle_once "$c" "$n" "$kind" "$mode" "$design" "$depth" "$sample"; then
		local extra=()
		[ "$sample" = 1 ] && extra=("samples=%$tmp/sample.out")
		emit "${what[@]}" rows_total="$([ "$mode" = broadcast ] && echo "$bcast_rows" || echo "$rows")" \
			start="$(cat "$tmp/job.start")" members="@$tmp/job.out" "${extra[@]}"
		job_summary
	else
		emit "${what[@]}" error="$(job_errors)"
		echo "FAILED"
	fi
}

job_transport() {
	local r=$1 c=$2 n=$3 design=$4 k=${5:-1} provider=$2 msgs=2000 what
	is_datagram "$design" && { provider=udp; msgs=20000; }
	what=(kind=transport run="$r" cluster="$c" provider="$provider" design="$design" n="$n"
		sessions="$k")
	if with_retry "$c" transport_once "$c" "$n" "$design" "$msgs" "$k"; then
		emit "${what[@]}" messages="$msgs" members="@$tmp/job.out"
		job_summary
	else
		emit "${what[@]}" error="$(job_errors)"
		echo "FAILED"
	fi
}

job_fi() {
	local r=$1 provider=$2 n=$3 try
	for try in 1 2; do
		fi_once "$@" && return 0
		sleep 1
	done
	emit kind=fi_sendloop run="$r" provider="$provider" n="$n" error="$(job_errors)"
	echo "FAILED: $(job_errors)"
}

# one fi_sendloop all-to-all; fails when a rank failed
fi_once() {
	local r=$1 provider=$2 n=$3 msgs=2000 i pids=() rc=0
	[ "$provider" = udp ] && msgs=20000
	rm -f "$tmp"/job.*
	local port
	port=$(free_run "$n" $((P + 30)) $((P + 39))) || { echo "no free ports" > "$tmp/job.err.0"; return 1; }
	for ((i = 0; i < n; i++)); do rm -f "/dev/shm/fisl_$((port + i))" 2>/dev/null || true; done
	for ((i = 0; i < n; i++)); do
		timeout 90 "$bin/fi_sendloop" -p "$provider" -r "$i" -n "$n" -b "$port" -s 65536 -m "$msgs" \
			> "$tmp/job.$i" 2> "$tmp/job.err.$i" &
		pids+=($!)
	done
	wait_pids "${pids[@]}" || rc=1
	for ((i = 0; i < n; i++)); do grep -h '^{' "$tmp/job.$i" || true; done > "$tmp/job.out"
	if [ "$rc" = 0 ] && [ "$(wc -l < "$tmp/job.out")" = "$n" ]; then
		emit kind=fi_sendloop run="$r" provider="$provider" n="$n" messages="$msgs" ranks="@$tmp/job.out"
		"$py" -c 'import json,sys; rs=[json.loads(l) for l in open(sys.argv[1])]; print("%.0f MB/s per rank" % (sum(x["mb_per_s_received"] for x in rs)/len(rs)))' "$tmp/job.out"
		return 0
	fi
	log "  fi_sendloop failed: $(job_errors)"
	return 1
}

# prints the first port p of [$2, $3] such that p..p+$1-1 are bindable
# without SO_REUSEADDR (Open MPI's TCP btl binds so); waits for TIME_WAIT
mpi_ports() {
	local n=$1 lo=$2 hi=$3 tries
	for ((tries = 0; tries < 20; tries++)); do
		perl -MIO::Socket::INET -e '
			my ($n, $lo, $hi) = @ARGV;
			PORT: for my $p ($lo .. $hi - $n + 1) {
				for my $q ($p .. $p + $n - 1) {
					my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1",
						LocalPort => $q, Proto => "tcp", Listen => 1, ReuseAddr => 0);
					next PORT unless $s;
					close $s;
				}
				print "$p\n";
				exit 0;
			}
			exit 1;' "$n" "$lo" "$hi" && return 0
		sleep 5
	done
	return 1
}

job_mpi() {
	local r=$1 btl=$2 n=$3 kind=$4 width first
	width=16
	[ "$kind" = li ] && width=$li_width
	rm -f "$tmp"/job.*
	if ! first=$(mpi_ports "$n" $((P + 40)) $((P + 59))); then
		emit kind=mpi run="$r" btl="$btl" n="$n" row="$kind" error="no free ports for the tcp btl"
		echo "FAILED: no free ports"
		return 0
	fi
	if rx_as_user timeout 300 env PMIX_MCA_ptl_tcp_if_include=lo PMIX_MCA_ptl_tcp_ipv4_port=$((P + 90)) \
		mpirun --oversubscribe -np "$n" --mca pml ob1 --mca btl "self,$btl" \
		--mca btl_tcp_if_include lo \
		--mca btl_tcp_port_min_v4 "$first" --mca btl_tcp_port_range_v4 "$n" \
		--mca btl_tcp_port_min_v6 $((P + 60)) --mca btl_tcp_port_range_v6 10 \
		--mca oob_tcp_if_include lo \
		--mca oob_tcp_static_ipv4_ports $((P + 80)) --mca oob_tcp_static_ipv6_ports $((P + 81)) \
		"$bin/mpi_alltoallv" "$width" $((rows / n)) 5 > "$tmp/job.0" 2> "$tmp/job.err.0" &&
		grep -h '^{' "$tmp/job.0" > "$tmp/job.out"; then
		emit kind=mpi run="$r" btl="$btl" n="$n" row="$kind" row_bytes="$width" result="%$tmp/job.out"
		"$py" -c 'import json,sys; x=json.load(open(sys.argv[1])); print("%.0f rows/s" % x["rows_per_s"])' "$tmp/job.out"
	else
		emit kind=mpi run="$r" btl="$btl" n="$n" row="$kind" row_bytes="$width" error="$(job_errors)"
		echo "FAILED: $(job_errors)"
	fi
}

job_copy() {
	local r=$1 n=$2 kind=$3 row=narrow
	[ "$kind" = li ] && row=lineitem
	rm -f "$tmp"/job.*
	local port
	if ! port=$(free_run "$n" $((P + 20)) $((P + 29))); then
		emit kind=copy run="$r" n="$n" row="$kind" error="no free ports in $((P + 20))-$((P + 29))"
		echo "FAILED: no free ports"
		return 0
	fi
	if timeout 900 bash "$baselines/copy_repartition.sh" "$n" "$rows" "$row" "$dir/copy" "$port" \
		> "$tmp/job.out" 2> "$tmp/job.err.0"; then
		emit kind=copy run="$r" n="$n" row="$kind" results="@$tmp/job.out"
		"$py" -c 'import json,sys; xs=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print(", ".join("%.0f" % x["rows_per_s"] for x in xs), "rows/s")' "$tmp/job.out"
	else
		emit kind=copy run="$r" n="$n" row="$kind" error="$(tail -3 "$tmp/job.err.0" | paste -sd' ' | cut -c1-400)"
		echo "FAILED: $(tail -1 "$tmp/job.err.0")"
	fi
}

job_gather() {
	local r=$1 kind=$2 leader=$3
	rm -f "$tmp"/job.*
	if psqlx tcp 0 -c "SET max_parallel_workers_per_gather = 2" \
		-c "SET parallel_setup_cost = 0" -c "SET parallel_tuple_cost = 0" \
		-c "SET min_parallel_table_scan_size = 0" \
		-c "SET parallel_leader_participation = $leader" \
		-c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT * FROM ${kind}_full" \
		> "$tmp/job.out" 2> "$tmp/job.err.0"; then
		emit kind=gather run="$r" row="$kind" leader="$leader" rows_total="$rows" plan="%$tmp/job.out"
		"$py" -c 'import json,sys; p=json.load(open(sys.argv[1]))[0]; print("%.0f rows/s, %s workers" % (int(sys.argv[2]) / p["Execution Time"] * 1000, p["Plan"].get("Workers Launched")))' "$tmp/job.out" "$rows"
	else
		emit kind=gather run="$r" row="$kind" leader="$leader" error="$(job_errors)"
		echo "FAILED: $(job_errors)"
	fi
}

# ---------------------------------------------------------------- warm-up

# "cluster design" of every configuration: the SE designs, and the ME
# designs (rdma_exchange.transport_endpoints = 2, the default)
se_designs=("tcp sesq_sr" "tcp semq_sr" "tcp semq_rd" "tcp semq_wr" "shm semq_sr" "shm semq_rd" "shm semq_wr")
me_designs=("tcp mesq_sr" "tcp memq_sr" "tcp memq_rd" "tcp memq_wr" "shm memq_sr" "shm memq_rd" "shm memq_wr")

# one untimed run per design (connections, caches), and the lineitem row
# width on the wire for the MPI baseline
log "warm-up"
li_width=
for cd in "${se_designs[@]}" "${me_designs[@]}"; do
	read -r c d <<<"$cd"
	if shuffle_once "$c" 3 li repartition "$d" 0 0 || { restart_cluster "$c" && shuffle_once "$c" 3 li repartition "$d" 0 0; }; then
		emit kind=warmup cluster="$c" design="$d" members="@$tmp/job.out"
		if [ -z "$li_width" ]; then
			li_width=$("$py" -c 'import json,sys; ms=[json.loads(l) for l in open(sys.argv[1])]; print(round(sum(m["bytes_sent"] for m in ms) / max(1, sum(m["rows_sent"] for m in ms))))' "$tmp/job.out")
		fi
	else
		note "warm-up of $d on $c failed: $(job_errors)"
	fi
done
[ -n "$li_width" ] || { li_width=150; note "lineitem width not measured; MPI uses 150 B rows"; }
log "lineitem rows: $li_width bytes on the wire"

emit kind=meta rows="$rows" runs="$runs" command="bash bench/shuffle/run.sh $rows $runs" \
	nproc="$(nproc)" kernel="$(uname -r)" cpu="$cpu" libfabric="$fi_version" \
	postgres="$pg_version" mpi="$mpi_version" li_width="$li_width" bcast_rows="$bcast_rows" \
	user="$(id -un)" test_user="$RX_TEST_USER" git="$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')" \
	date="$(date -u +%Y-%m-%dT%H:%M:%SZ)" notes="@$notes"

# ---------------------------------------------------------------- the runs

joblist="$tmp/joblist"
{
	for n in 2 3; do
		# the ME designs with 3 members only: with one backend a member
		# they differ from SE only in the endpoint they send from
		designs=("${se_designs[@]}")
		[ "$n" = 3 ] && designs+=("${me_designs[@]}")
		for kind in n16 li; do
			for mode in repartition broadcast; do
				for cd in "${designs[@]}"; do
					read -r c d <<<"$cd"
					echo "shuffle $c $n $kind $mode $d 0"
				done
			done
		done
		for cd in "${designs[@]}"; do
			echo "transport ${cd% *} $n ${cd#* }"
		done
		if [ "$have_fi" = 1 ]; then
			for p in udp tcp shm; do echo "fi $p $n"; done
		fi
		if [ "$have_mpi" = 1 ]; then
			for btl in tcp vader; do for kind in n16 li; do echo "mpi $btl $n $kind"; done; done
		fi
		if [ "$have_copy" = 1 ]; then
			for kind in n16 li; do echo "copy $n $kind"; done
		fi
	done
	# SE against ME where they can differ: two backends a member at once
	for cd in "tcp semq_sr" "tcp memq_sr" "tcp semq_wr" "tcp memq_wr" "shm semq_sr" "shm memq_sr" "shm semq_wr" "shm memq_wr"; do
		echo "transport ${cd% *} 3 ${cd#* } 2"
	done
	for d in semq_sr sesq_sr; do
		for depth in 2 4 8 16 32 64; do echo "shuffle tcp 3 li repartition $d $depth"; done
		echo "shuffle tcp 3 li repartition $d 0 1"
		echo "shuffle tcp 3 li repartition $d 8 1"
	done
	for kind in n16 li; do
		echo "gather $kind on"
		echo "gather $kind off"
	done
} > "$joblist"
if [ -n "${RX_SHUFFLE_JOBS:-}" ]; then
	grep -E -- "$RX_SHUFFLE_JOBS" "$joblist" > "$joblist.sel" || true
	mv "$joblist.sel" "$joblist"
fi
njobs=$(wc -l < "$joblist")

for ((r = 1; r <= runs; r++)); do
	log "run $r/$runs: $njobs measurements in a random order"
	k=0
	while read -r what args <&3; do
		k=$((k + 1))
		# shellcheck disable=SC2086
		case $what in
			shuffle) res=$(job_shuffle "$r" $args </dev/null) || res="FAILED (exit $?)" ;;
			transport) res=$(job_transport "$r" $args </dev/null) || res="FAILED (exit $?)" ;;
			fi) res=$(job_fi "$r" $args </dev/null) || res="FAILED (exit $?)" ;;
			mpi) res=$(job_mpi "$r" $args </dev/null) || res="FAILED (exit $?)" ;;
			copy) res=$(job_copy "$r" $args </dev/null) || res="FAILED (exit $?)" ;;
			gather) res=$(job_gather "$r" $args </dev/null) || res="FAILED (exit $?)" ;;
		esac
		log "  [$r/$runs $k/$njobs] $what $args: $res"
	done 3< <(shuf --random-source=<(yes "$r") "$joblist")
done

emit kind=end seconds=$(($(date +%s) - t_begin)) date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
mv "$raw" "$out/raw.jsonl"
raw="$out/raw.jsonl"
log "report"
"$py" "$here/report.py" "$raw" "$out"
log "done in $(($(date +%s) - t_begin)) s: $out/report.md"
