#!/usr/bin/env bash
# bench/pgbench/run.sh: small queries (issue 18) with pgbench, on a plain
# server and on clusters of 1, 2 and 3 members (RX_PGB_SIZES), in one run
# on the same cores (DESIGN.md section 6).
#
#   bash bench/pgbench/run.sh [SCALE] [SECONDS] [RUNS]     (defaults: 10 5 1)
#
# Every instance gets pgbench's tables at SCALE (pgbench_accounts and
# pgbench_history hash-distributed on aid, branches and tellers reference
# tables on the clusters) and its own cores: the plain server and member 0
# on the first core, member i on the i-th (taskset on the postmaster and
# what it forked; backends inherit it).  Cores are counted in the CPUs this
# process may use (its affinity, not always 0..nproc-1).  When there are
# more than the largest cluster needs (nproc > max(RX_PGB_SIZES) + 1) every
# server has a core of its own and pgbench runs on the others ("dedicated";
# with hyperthreads, each server gets a physical core, its sibling stays
# idle, when there are enough).  Otherwise ("shared": this 2-core machine)
# member i runs on core i mod nproc, so 3 members share, and pgbench is not
# pinned.  The report's header says which cores what ran on.
# Scripts (C = RX_PGB_CLIENTS clients, default 4, entering through member
# 0 unless "spread"):
#
#   point_1c       -b select-only, 1 client: a point lookup's latency
#   select_4c      -b select-only, C clients through member 0
#   select_spread  -b select-only, C clients spread over every member
#   simple_update  -b simple-update, C clients
#   tpcb           -b tpcb-like, C clients
#   minmax         SELECT min(aid), max(aid), 1 client
#   top10          ORDER BY aid DESC LIMIT 10, 1 client
#   range100       sum(abalance) over 100 consecutive aids, 1 client
#   in3            3 random aids in an IN list (spanning members), 1 client
#   lookup20       a correlated subquery looking up 20 accounts by aid, one
#                  per teller of a random range of 20 tellers (keyed
#                  lookups from the serial part of a plan), 1 client
#   new_session    a point lookup as a new session's first statement
#                  (pgbench -C), 1 client
#
# Per script and instance: tps, mean and 99th percentile latency (from
# pgbench's per-transaction log), median over RUNS.  Writes
# bench/pgbench/results/report.md, pgbench.png and raw.jsonl.  Runs as the
# current user or, started as root, as the test user (test/common.sh).
# The extension must be installed (or PGBIN must point to a tree that has
# it, e.g. bench/pack.sh's, which bench/device.sh sets up).
#
# Environment: RX_PGB_PORT (P, default 26700, below Linux's ephemeral
# ports, where a client socket in TIME_WAIT can keep a server from
# binding after a busy test run): the plain server on P,
# N-member clusters on P+10N.. (fabric ports P+10N+100..; no clash for N up
# to 9); RX_PGB_DIR (default /tmp/rx_pgbench_bench, removed at exit);
# RX_PGB_OUT (default bench/pgbench/results); RX_PGB_SIZES (default
# "1 2 3"); RX_PGB_SCRIPTS (default: all of the above, in that order);
# RX_PGB_CLIENTS (default 4); RX_PGB_PIN (auto, the default, as above;
# shared; dedicated: pgbench on what is left even if that is one CPU);
# RX_PGB_COMMIT (what the report names as the commit; default git
# describe).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=test/common.sh
. "$top/test/common.sh"
rx_pgbin
rx_check_user

scale=${1:-10}
seconds=${2:-5}
runs=${3:-1}
base=${RX_PGB_PORT:-26700}
dir=${RX_PGB_DIR:-/tmp/rx_pgbench_bench}
out=${RX_PGB_OUT:-$here/results}
sizes=${RX_PGB_SIZES:-1 2 3}
scripts=${RX_PGB_SCRIPTS:-point_1c select_4c select_spread simple_update tpcb minmax top10 range100 in3 lookup20 new_session}
nclients=${RX_PGB_CLIENTS:-4}
ncpu=$(nproc)
db=bench

[[ $nclients =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: RX_PGB_CLIENTS must be a positive number" >&2; exit 1; }
maxn=0
for n in $sizes; do
	[[ $n =~ ^[1-9]$ ]] || { echo "run.sh: RX_PGB_SIZES takes cluster sizes 1 to 9, not '$n'" >&2; exit 1; }
	[ "$n" -gt "$maxn" ] && maxn=$n
done
for s in $scripts; do
	case $s in
		point_1c|select_4c|select_spread|simple_update|tpcb|minmax|top10|range100|in3|lookup20|new_session) ;;
		*) echo "run.sh: unknown script '$s' in RX_PGB_SCRIPTS" >&2; exit 1 ;;
	esac
done

command -v taskset >/dev/null || { echo "run.sh: taskset (util-linux) is missing" >&2; exit 1; }

cleanup() {
	bash "$top/test/cluster.sh" destroy "$dir/plain" >/dev/null 2>&1 || true
	for n in $sizes; do
		bash "$top/test/cluster.sh" destroy "$dir/n$n" >/dev/null 2>&1 || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT
rm -rf "$dir"
mkdir -p "$dir/scripts" "$dir/logs" "$out"
chmod 777 "$dir" "$dir/scripts" "$dir/logs"

# Which cores: prints the mode, the servers' cores (member i on the i-th;
# the plain server on the first), pgbench's cores ("" = not pinned) and a
# line for the report, one a line
plan=$(python3 - "$maxn" "${RX_PGB_PIN:-auto}" <<'EOF'
import os
import sys


def siblings(c):
    try:
        with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
            return f.read().strip()
    except OSError:
        return str(c)


def plan(m, want, cpus, phys):
    """(mode, server CPUs, pgbench CPUs, note) or None"""
    spare = 1 if want == "dedicated" else 2  # CPUs pgbench needs at least
    if want == "shared":
        return None
    if len(phys) >= m + 1 and sum(len(p) for p in phys[m:]) >= spare:
        idle = [c for p in phys[:m] for c in p[1:]]
        return ("dedicated", [p[0] for p in phys[:m]], sorted(c for p in phys[m:] for c in p),
                "every server on a physical core of its own" +
                (f", their hyperthread siblings {','.join(map(str, idle))} idle" if idle else ""))
    if len(cpus) >= m + spare:
        return ("dedicated", cpus[:m], cpus[m:],
                "every server on a CPU of its own; hyperthreads of a core shared")
    if want == "dedicated":
        sys.exit(f"run.sh: RX_PGB_PIN=dedicated needs {m + 1} CPUs, this process may use {len(cpus)}")
    return None


m, want = int(sys.argv[1]), sys.argv[2]
cpus = sorted(os.sched_getaffinity(0))
cores = {}  # physical core -> its allowed CPUs, in CPU order
for c in cpus:
    cores.setdefault(siblings(c), []).append(c)
phys = list(cores.values())
mode, servers, pgb, note = plan(m, want, cpus, phys) or (
    "shared", [cpus[i % len(cpus)] for i in range(max(m, 1))], [],
    "RX_PGB_PIN=shared" if want == "shared" else
    "not enough CPUs for a server each and pgbench: servers share CPUs, pgbench shares them all")
print(mode)
print(" ".join(map(str, servers)))
print(",".join(map(str, pgb)))
print(f"{mode}, the plain server and member 0 on CPU {servers[0]}" +
      "".join(f", member {i} on CPU {c}" for i, c in enumerate(servers) if i > 0) +
      (f"; pgbench on CPUs {','.join(map(str, pgb))}" if pgb else "; pgbench not pinned") +
      f" ({note}; {len(cpus)} CPUs" +
      (f", {len(phys)} physical cores)" if len(phys) < len(cpus) else ")"))
EOF
)
pin_mode=$(sed -n 1p <<< "$plan")
read -r -a server_cpus <<< "$(sed -n 2p <<< "$plan")"
pgb_cpus=$(sed -n 3p <<< "$plan")
pin_desc=$(sed -n 4p <<< "$plan")
pgb_pin=()
[ -n "$pgb_cpus" ] && pgb_pin=(taskset -c "$pgb_cpus")
echo "run.sh: cores: $pin_desc" >&2

psql_at() { rx_as_user "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -d "$db" "${@:2}"; }
pgb() { rx_as_user ${pgb_pin[@]+"${pgb_pin[@]}"} "$PGBIN/pgbench" -h 127.0.0.1 "$@"; }

# pin DATADIR CPU: the instance's postmaster and what it forked so far
pin() {
	local pm p
	pm=$(head -1 "$1/postmaster.pid")
	for p in $pm $(pgrep -P "$pm"); do
		taskset -a -p -c "$2" "$p" >/dev/null 2>&1 || true
	done
	[ "$(taskset -p -c "$pm" 2>/dev/null | sed 's/.*: //')" = "$2" ] \
		|| echo "run.sh: warning: could not pin $1's postmaster ($pm) to CPU $2" >&2
}

accounts=$((scale * 100000))
cat > "$dir/scripts/minmax.sql" <<'EOF'
SELECT min(aid), max(aid) FROM pgbench_accounts;
EOF
cat > "$dir/scripts/top10.sql" <<'EOF'
SELECT aid, abalance FROM pgbench_accounts ORDER BY aid DESC LIMIT 10;
EOF
cat > "$dir/scripts/range100.sql" <<EOF
\\set aid random(1, $accounts - 100)
SELECT sum(abalance) FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + 100;
EOF
cat > "$dir/scripts/in3.sql" <<EOF
\\set a random(1, $accounts)
\\set b random(1, $accounts)
\\set c random(1, $accounts)
SELECT aid, abalance FROM pgbench_accounts WHERE aid IN (:a, :b, :c);
EOF
cat > "$dir/scripts/lookup20.sql" <<EOF
\\set t random(1, $((scale * 10 - 19)))
SELECT sum((SELECT abalance FROM pgbench_accounts a WHERE a.aid = t.tid * 997))
  FROM pgbench_tellers t WHERE t.tid BETWEEN :t AND :t + 19;
EOF
cat > "$dir/scripts/point.sql" <<EOF
\\set aid random(1, $accounts)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
EOF
chmod 644 "$dir"/scripts/*

# instance NAME N PORT: start it (N = 0: the plain server), pin, load
instance() {
	local name=$1 n=$2 port=$3
	echo "run.sh: $name: starting and loading scale $scale" >&2
	if [ "$n" = 0 ]; then
		bash "$top/test/cluster.sh" single "$dir/$name" "$port" "$db" >/dev/null
		pin "$dir/$name/m0" "${server_cpus[0]}"
		pgb -i -q -s "$scale" -p "$port" "$db" >/dev/null 2>&1
	else
		bash "$top/test/cluster.sh" start "$dir/$name" "$n" "$port" "$db" >/dev/null
		for ((i = 0; i < n; i++)); do
			pin "$dir/$name/m$i" "${server_cpus[i]}"
		done
		pgb -i -q -s "$scale" -I dtp -p "$port" "$db" >/dev/null 2>&1
		psql_at "$port" -c "SELECT rdma_exchange.create_distributed_table('pgbench_accounts', 'aid')" \
			-c "SELECT rdma_exchange.create_distributed_table('pgbench_history', 'aid')" \
			-c "SELECT rdma_exchange.create_reference_table('pgbench_branches')" \
			-c "SELECT rdma_exchange.create_reference_table('pgbench_tellers')" >/dev/null
		pgb -i -q -s "$scale" -I g -p "$port" "$db" >/dev/null 2>&1
	fi
	psql_at "$port" -c "VACUUM ANALYZE" >/dev/null
}

# measure RUN NAME N PORT SCRIPT: one pgbench measurement into raw.jsonl
measure() {
	local r=$1 name=$2 n=$3 port=$4 script=$5 clients=1 spread=0 args=() tps=0 i pids=()
	case $script in
		point_1c) args=(-b select-only) ;;
		select_4c) args=(-b select-only); clients=$nclients ;;
		select_spread) args=(-b select-only); clients=$nclients; spread=1 ;;
		simple_update) args=(-b simple-update); clients=$nclients ;;
		tpcb) args=(-b tpcb-like); clients=$nclients ;;
		new_session) args=(-C -f "$dir/scripts/point.sql") ;;
		*) args=(-f "$dir/scripts/$script.sql") ;;
	esac
	rm -f "$dir"/logs/*
	local procs=1
	[ "$spread" = 1 ] && [ "$n" -gt 1 ] && procs=$((n < clients ? n : clients))
	for ((i = 0; i < procs; i++)); do
		local c=$((clients / procs + (i < clients % procs ? 1 : 0)))
		pgb -n "${args[@]}" -c "$c" -j "$c" -T "$seconds" -l --log-prefix="$dir/logs/p$i" \
			-p $((port + i)) "$db" > "$dir/out.$i" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || true; done
	for ((i = 0; i < procs; i++)); do
		local t
		t=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$dir/out.$i" | head -1)
		[ -n "$t" ] || { echo "run.sh: $name $script failed:" >&2; tail -3 "$dir/out.$i" >&2; t=0; }
		tps=$(python3 -c "print($tps + $t)")
	done
	# latencies (microseconds, third field of each transaction's line)
	local lat
	lat=$(cat "$dir"/logs/p* 2>/dev/null | awk '{ print $3 }' | python3 -c '
import statistics, sys
v = sorted(int(x) for x in sys.stdin if x.strip())
if not v:
    print("null null")
else:
    print(f"{statistics.mean(v) / 1000:.4f} {v[min(len(v) - 1, int(len(v) * 0.99))] / 1000:.4f}")')
	echo "{\"run\": $r, \"instance\": \"$name\", \"members\": $n, \"script\": \"$script\", \"clients\": $clients, \"spread\": $spread, \"tps\": $tps, \"mean_ms\": ${lat% *}, \"p99_ms\": ${lat#* }}" >> "$out/raw.jsonl"
	echo "run.sh: run $r $name $script: $tps tps, latency ${lat% *} ms mean, ${lat#* } ms p99" >&2
}

commit=${RX_PGB_COMMIT:-$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)}
: > "$out/raw.jsonl"
echo "{\"kind\": \"meta\", \"scale\": $scale, \"seconds\": $seconds, \"runs\": $runs, \"nproc\": $ncpu, \"sizes\": \"$sizes\", \"clients\": $nclients, \"pinning\": \"$pin_mode\", \"server_cpus\": \"${server_cpus[*]}\", \"pgbench_cpus\": \"$pgb_cpus\", \"cores\": \"$pin_desc\", \"cpu\": \"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)\", \"date\": \"$(date -u '+%Y-%m-%d %H:%M UTC')\", \"commit\": \"$commit\"}" >> "$out/raw.jsonl"

instance plain 0 "$base"
for n in $sizes; do
	instance "n$n" "$n" $((base + 10 * n))
done
for ((r = 1; r <= runs; r++)); do
	for s in $scripts; do
		measure "$r" plain 0 "$base" "$s"
		for n in $sizes; do
			measure "$r" "n$n" "$n" $((base + 10 * n)) "$s"
		done
	done
done
# Debian's python3 has matplotlib (test/install-deps.sh); another first in PATH may not
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" "$here/report.py" "$out/raw.jsonl" "$out"
echo "run.sh: wrote $out/report.md" >&2
