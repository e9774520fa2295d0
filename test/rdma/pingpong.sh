#!/usr/bin/env bash
# test/rdma/pingpong.sh: runs inside the guest (test/rdma/guest.sh run bash
# test/rdma/pingpong.sh): server and client of each verbs and libfabric
# ping-pong and of perftest's bandwidth tests on rxe0, both on this guest,
# and prints one line per test (ok / FAILED, and the figure it gives).
# Exits non-zero when a test in REQUIRED failed; the others are reported
# only (they show what works on Soft-RoCE today).
#
#   RX_PP_TESTS   space-separated subset of the test names (default: all)
set -uo pipefail

addr=10.99.0.1
dev=rxe0
# the GID of dummy0's IPv4 address as RoCE v2 (what RoCE deployments use)
gid=
# (read, not cat: a process costs a lot under emulation, and there are
# 128 entries)
echo "== $dev GID table"
port=/sys/class/infiniband/$dev/ports/1
for f in "$port"/gids/*; do
	n=${f##*/}
	read -r g <"$f" || continue
	[ "$g" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
	read -r type <"$port/gid_attrs/types/$n" 2>/dev/null || type='?'
	echo "   $n $g $type"
	case $type:$g in
	"RoCE v2:0000:0000:0000:0000:0000:ffff:"*) [ -n "$gid" ] || gid=$n ;;
	esac
done
echo "   using GID index ${gid:-none} (IPv4, RoCE v2)"

REQUIRED="ibv_rc_pingpong ibv_ud_pingpong fi_pingpong_msg fi_pingpong_dgram fi_pingpong_rxm_rdm_u64"
fails=()
log=$(mktemp -d)

# pair NAME SERVER_CMD -- CLIENT_CMD: server in the background, client
# after a second, both with a time limit
pair() {
	local name=$1; shift
	local srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if [ -n "${RX_PP_TESTS:-}" ] && ! [[ " $RX_PP_TESTS " == *" $name "* ]]; then
		return 0
	fi
	timeout 60 "${srv[@]}" >"$log/$name.srv" 2>&1 &
	local spid=$! crc=0 src=0 t0=$SECONDS
	sleep 1
	timeout 60 "${cli[@]}" >"$log/$name.cli" 2>&1 || crc=$?
	wait "$spid" || src=$?
	local figure
	# ibv_*_pingpong: "... Mbit/sec", "... usec/iter"; fi_pingpong:
	# "64k 1k =1k 125m 1.23s MB/sec usec/xfer Mxfers/sec"; perftest:
	# "65536 2000 peak-MB/s average-MB/s Mpps"
	figure=$(grep -hE 'Mbit/sec|usec/iter|^ *[0-9]+[kmg]? +=?[0-9]+[kmg]? +' \
		"$log/$name.cli" | tail -2 | tr -s ' \t' ' ' | paste -sd'|' -)
	if [ "$crc" -eq 0 ] && [ "$src" -eq 0 ]; then
		printf '%-24s ok      %3d s  %s\n' "$name" $((SECONDS - t0)) "$figure"
	else
		printf '%-24s FAILED  %3d s  client exit %s, server exit %s\n' "$name" $((SECONDS - t0)) "$crc" "$src"
		echo "   -- server:"; tail -8 "$log/$name.srv" | sed 's/^/   /'
		echo "   -- client:"; tail -8 "$log/$name.cli" | sed 's/^/   /'
		[[ " $REQUIRED " == *" $name "* ]] && fails+=("$name")
	fi
}

g=(-d "$dev" -g "${gid:-0}")
echo "== ping-pong and bandwidth on $dev (server and client in this guest)"
pair ibv_rc_pingpong ibv_rc_pingpong "${g[@]}" -n 1000 -- \
	ibv_rc_pingpong "${g[@]}" -n 1000 "$addr"
pair ibv_ud_pingpong ibv_ud_pingpong "${g[@]}" -n 1000 -s 1024 -- \
	ibv_ud_pingpong "${g[@]}" -n 1000 -s 1024 "$addr"
pair fi_pingpong_msg fi_pingpong -p verbs -e msg -I 200 -S 65536 -- \
	fi_pingpong -p verbs -e msg -I 200 -S 65536 "$addr"
pair fi_pingpong_dgram fi_pingpong -p verbs -e dgram -I 200 -S 512 -- \
	fi_pingpong -p verbs -e dgram -I 200 -S 512 "$addr"
pair fi_pingpong_rxm_rdm fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 200 -S 65536 -- \
	fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 200 -S 65536 "$addr"
# rxm sizes its MSG CQ by the universe size (default 256) times its
# queue sizes: more than rxe's max_cqe (32767), so fi_enable fails with
# -22 ("Unable to create verbs CQ") unless the universe is smaller
pair fi_pingpong_rxm_rdm_u64 env FI_UNIVERSE_SIZE=64 fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 200 -S 65536 -- \
	env FI_UNIVERSE_SIZE=64 fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 200 -S 65536 "$addr"
pair fi_pingpong_rxd_rdm fi_pingpong -p "verbs;ofi_rxd" -e rdm -I 200 -S 65536 -- \
	fi_pingpong -p "verbs;ofi_rxd" -e rdm -I 200 -S 65536 "$addr"
bw=(-d "$dev" -x "${gid:-0}" -s 65536 -n 2000 -F)
pair ib_send_bw_rc ib_send_bw "${bw[@]}" -- ib_send_bw "${bw[@]}" "$addr"
pair ib_write_bw ib_write_bw "${bw[@]}" -- ib_write_bw "${bw[@]}" "$addr"
pair ib_read_bw ib_read_bw "${bw[@]}" -- ib_read_bw "${bw[@]}" "$addr"
ud=(-d "$dev" -x "${gid:-0}" -c UD -s 1024 -n 5000 -F)
pair ib_send_bw_ud ib_send_bw "${ud[@]}" -- ib_send_bw "${ud[@]}" "$addr"

rm -rf "$log"
if [ ${#fails[@]} -gt 0 ]; then
	echo "pingpong.sh: FAILED: ${fails[*]}"
	exit 1
fi
echo "pingpong.sh: the required tests ($REQUIRED) passed"
