#!/usr/bin/env bash
# bench/shuffle/verbs.sh: the transport on a real RDMA device (issue 12):
# every transport design's bandwidth on the Soft-RoCE device of the qemu
# guest (test/rdma/guest.sh), next to perftest's raw figures on the same
# device in the same run (DESIGN.md section 6).  Emulated speeds are slow
# in absolute terms (the guest runs under qemu's software emulation), so
# the report gives each design's ratio to the matching perftest figure.
#
#   bash bench/shuffle/verbs.sh [MESSAGES] [RUNS]     (defaults 2000, 3)
#
# On this machine it boots the guest and runs itself there (--guest); the
# guest's lines starting with "RXBENCH " are the measurements (one JSON
# object each), from which it writes bench/shuffle/results/verbs/raw.jsonl,
# report.md and verbs.png (RX_VERBS_OUT chooses the directory).
#
# In the guest, one after the other on rxe0 (server and client both in the
# guest, over dummy0's 10.99.0.1), RUNS rounds of (the report takes the
# median of each figure):
#   perftest   ib_send_bw, ib_write_bw and ib_read_bw on RC queue pairs
#              with 64 KiB messages, ib_send_bw on UD at the port's MTU
#   transport  rdma_exchange.transport_selftest() between members 0 and 1
#              of a 2-member cluster whose reliable endpoints run on verbs
#              (verbs;ofi_rxm, as cluster-try.sh checks): member 0 sends
#              MESSAGES messages of 64 KiB to member 1, which sends
#              nothing (one direction, as perftest measures), for every
#              design; the datagram designs (sesq_sr, mesq_sr), 16 times
#              as many messages of the port's MTU, run on the datagram
#              endpoint, a UD queue pair on rxe0 (found by the raw name
#              each member publishes, rdma_exchange.datagram_name).
#   shuffle    rdma_exchange.shuffle_selftest() on both members at once:
#              each repartitions its share of RX_VERBS_LI_ROWS (default
#              200000) TPC-H lineitem rows (bench/shuffle/rows.sh, hashed
#              on l_orderkey) to the other, every design, as the executor's
#              SHUFFLE and RECEIVE would (rows in, rows out)
# RX_VERBS_BENCH_DESIGNS narrows the designs.  The guest's dummy0 gets an
# MTU of 9000 (RX_GUEST_MTU, guest.sh), so rxe0's active MTU is 4096, as
# on RoCE with jumbo frames and on InfiniBand; RX_GUEST_MTU=1500 measures
# at 1024 (bench/shuffle/results/verbs_mtu1024 holds such a run).
# Ratios: the send/receive designs against ib_send_bw (RC), the RDMA Read
# designs against ib_read_bw, the RDMA Write designs against ib_write_bw,
# the datagram designs against ib_send_bw on UD.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
guest=0
nums=()
for a in "$@"; do
	case $a in
		--guest) guest=1 ;;
		*) [[ $a =~ ^[1-9][0-9]*$ ]] || { echo "verbs.sh: MESSAGES and RUNS are positive numbers, not '$a'" >&2; exit 1; }
		   nums+=("$a") ;;
	esac
done
msgs=${nums[0]:-2000}
runs=${nums[1]:-3}
designs=${RX_VERBS_BENCH_DESIGNS:-semq_sr memq_sr semq_rd memq_rd semq_wr memq_wr sesq_sr mesq_sr}

if [ "$guest" = 0 ]; then
	out=${RX_VERBS_OUT:-$here/results/verbs}
	export RX_GUEST_MTU=${RX_GUEST_MTU:-9000}
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	set +e
	bash "$top/test/rdma/guest.sh" run bash bench/shuffle/verbs.sh --guest "$msgs" "$runs" | tee "$log"
	rc=${PIPESTATUS[0]}
	set -e
	mkdir -p "$out"
	tr -d '\r' < "$log" | sed -n 's/^RXBENCH //p' > "$out/raw.jsonl"
	if [ ! -s "$out/raw.jsonl" ]; then
		echo "verbs.sh: the guest gave no measurement (exit $rc)" >&2
		exit 1
	fi
	RX_VERBS_COMMIT=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown) \
		"$py" "$here/verbs_report.py" "$out" "$msgs" "$runs"
	echo "verbs.sh: wrote $out/report.md (guest exit $rc)"
	exit "$rc"
fi

# ---- in the guest --------------------------------------------------------------
addr=10.99.0.1
dev=rxe0
dir=/tmp/rx_verbs_bench
port=55632
cl=(bash "$top/test/cluster.sh")
emit() { echo "RXBENCH {\"run\": $run, ${1#\{}"; }
run=0

# RoCE v2 GID of dummy0's IPv4 address (what pingpong.sh uses)
gid=0
pdir=/sys/class/infiniband/$dev/ports/1
for f in "$pdir"/gids/*; do
	n=${f##*/}
	read -r g <"$f" || continue
	read -r type <"$pdir/gid_attrs/types/$n" 2>/dev/null || continue
	case $type:$g in
		"RoCE v2:0000:0000:0000:0000:0000:ffff:"*) gid=$n; break ;;
	esac
done
mtu=$(ibv_devinfo -d "$dev" 2>/dev/null | awk '/active_mtu/ { print $2; exit }')
[[ $mtu =~ ^[0-9]+$ ]] || mtu=1024

# perftest NAME SIZE ARGS...: server and client on rxe0; the average MB/s
perftest() {
	local name=$1 size=$2 srv cli mbs
	shift 2
	srv=$(mktemp) cli=$(mktemp)
	timeout 300 "$@" -d "$dev" -x "$gid" -s "$size" -F >"$srv" 2>&1 &
	local spid=$!
	sleep 2
	timeout 300 "$@" -d "$dev" -x "$gid" -s "$size" -F "$addr" >"$cli" 2>&1 || true
	wait "$spid" || true
	# "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]"
	mbs=$(awk -v s="$size" '$1 == s && NF >= 4 { print $4 }' "$cli" | tail -1)
	if [ -n "$mbs" ]; then
		emit "{\"kind\": \"perftest\", \"name\": \"$name\", \"bytes\": $size, \"mb_per_s\": $mbs}"
	else
		echo "verbs.sh: $name gave no figure:"; tail -5 "$cli"
	fi
	rm -f "$srv" "$cli"
}


echo "== a 2-member cluster on $dev"
export RX_FABRIC_HOST=$addr
export RX_CLUSTER_CONF="rdma_exchange.fabric_provider = 'verbs'
rdma_exchange.reliable_provider = 'verbs'"
if ! "${cl[@]}" start "$dir" 2 "$port" rxbench >/dev/null; then
	"${cl[@]}" logs "$dir" 30
	exit 1
fi
trap '"${cl[@]}" stop "$dir" >/dev/null 2>&1 || true' EXIT
for i in 0 1; do
	grep -q 'datagram endpoint at fi_addr_ib_ud://.*(provider verbs,' "$dir/m$i.log" || {
		echo "verbs.sh: member $i's datagram endpoint is not a UD queue pair on verbs"
		grep -hiE 'endpoint|fabric|verbs' "$dir/m$i.log" | head -5
		exit 1
	}
	grep -q 'reliable endpoint at .*(provider verbs;ofi_rxm' "$dir/m$i.log" || {
		echo "verbs.sh: member $i's reliable endpoint is not on verbs;ofi_rxm"
		grep -hiE 'endpoint|fabric|verbs' "$dir/m$i.log" | head -5
		exit 1
	}
done
# each member's address and the raw name of its UD endpoint (verbs' UD
# address vector takes no host:port; rdma_exchange.datagram_name)
names=()
for i in 0 1; do
	names[i]=$("${cl[@]}" psql "$dir" "$i" -d rxbench -X -At -c "SHOW rdma_exchange.datagram_name")
	[ -n "${names[i]}" ] || { echo "verbs.sh: member $i published no datagram endpoint name"; exit 1; }
done
addrs="{\"$addr:$((port + 100)) ${names[0]}\",\"$addr:$((port + 101)) ${names[1]}\"}"

# each member's half of the lineitem rows (l_orderkey distinct)
# shellcheck source=bench/shuffle/rows.sh
. "$top/bench/shuffle/rows.sh"
li_rows=${RX_VERBS_LI_ROWS:-200000}
for i in 0 1; do
	"${cl[@]}" psql "$dir" "$i" -d rxbench -X -q -v ON_ERROR_STOP=1 \
		-c "CREATE TABLE li ($RX_LI_COLS)" \
		-c "INSERT INTO li SELECT $RX_LI_SELECT
			FROM generate_series($((i * li_rows / 2 + 1))::bigint, $(((i + 1) * li_rows / 2))::bigint) g" \
		-c "VACUUM ANALYZE li" || exit 1
done
# both SQLFN WHAT: the statement `SQLFN i` on members 0 and 1 at once, with
# a new query id and token ($qid, $token) for the pair; each one's JSON row
# in $dir/out.0 and $dir/out.1 (result i).  If either fails or gives no
# row, says WHAT failed, counts it in $fails, and fails.
both() {
	local i p rc=0 pids=()
	qid=$(((RANDOM << 45) | (RANDOM << 30) | (RANDOM << 15) | RANDOM))
	token=$(((RANDOM << 45) | (RANDOM << 30) | (RANDOM << 15) | RANDOM))
	for i in 0 1; do
		"${cl[@]}" psql "$dir" "$i" -d rxbench -X -At -q \
			-c "SET statement_timeout = '300s'" -c "$("$1" "$i")" >"$dir/out.$i" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	[ "$rc" = 0 ] && [ -n "$(result 0)" ] && [ -n "$(result 1)" ] && return 0
	echo "verbs.sh: $2 failed:"; cat "$dir/out.0" "$dir/out.1" | tail -6
	fails=$((fails + 1))
	return 1
}
result() { grep -h '^{' "$dir/out.$1" | tail -1 || true; }

# member $1's statement: design $d's transport_selftest, $n messages from
# member 0 to member 1 (one direction, as perftest measures)
transport_sql() {
	local to='{}' from='{}'
	[ "$1" = 0 ] && to='{1}'
	[ "$1" = 1 ] && from='{0}'
	echo "SELECT row_to_json(s) FROM rdma_exchange.transport_selftest($qid, $token, $1, '$addrs', $n, 65536, '$to', '$from', 1, 0, '$d') s"
}
# member $1's statement: design $d's lineitem repartition
shuffle_sql() {
	echo "SELECT row_to_json(s) FROM (SELECT $1 AS member, * FROM rdma_exchange.shuffle_selftest($qid, $token, $1, '$addrs', 'li', 'repartition', '$d')) s"
}

fails=0
for ((run = 1; run <= runs; run++)); do
echo "== round $run of $runs: perftest on $dev (GID index $gid, active MTU $mtu)"
perftest ib_send_bw_rc 65536 ib_send_bw -n "$msgs"
perftest ib_write_bw 65536 ib_write_bw -n "$msgs"
perftest ib_read_bw 65536 ib_read_bw -n "$msgs"
perftest ib_send_bw_ud "$mtu" ib_send_bw -c UD -n $((msgs * 16))
echo "== round $run of $runs: the designs"
for d in $designs; do
	n=$msgs
	# datagrams of the port's MTU: as many as perftest's UD run sends
	case $d in ?esq_sr) n=$((msgs * 16)) ;; esac
	if both transport_sql "$d"; then
		echo "$d: $(result 1)"
		emit "{\"kind\": \"transport\", \"design\": \"$d\", \"receiver\": $(result 1)}"
	fi
done
echo "== round $run of $runs: the lineitem repartition"
for d in $designs; do
	if both shuffle_sql "the lineitem repartition with $d"; then
		echo "$d: $(result 0) $(result 1)"
		emit "{\"kind\": \"shuffle\", \"design\": \"$d\", \"members\": [$(result 0), $(result 1)]}"
	fi
done
done
[ "$fails" = 0 ]
