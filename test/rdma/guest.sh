#!/usr/bin/env bash
# test/rdma/guest.sh: a qemu guest with a real (Soft-RoCE) RDMA device.
#
#   bash test/rdma/guest.sh probe          # boot, make rxe0, check verbs
#   bash test/rdma/guest.sh run CMD [ARG...]
#   bash test/rdma/guest.sh build          # only fill the cache
#
# Boots Debian 12's own kernel (package linux-image-amd64, fetched with
# `apt-get download` and unpacked into a cache directory, never installed
# on this machine) under qemu-system-x86_64 with software emulation (TCG).
# There is no guest image: the guest's root file system is this machine's
# own root, shared read-only over virtio-9p, under an overlay whose upper
# layer is a tmpfs (so the guest can write anywhere; nothing reaches this
# machine's disk).  The guest's userspace is thus exactly this machine's:
# PostgreSQL 15, libfabric, rdma-core's libraries, the installed extension
# and this repository, at the same paths.
#
# A small initramfs (busybox-static and the modules that mount 9p and
# overlay) builds that root and hands over to this script (`__stage2`) as
# process 1, which loads rdma_rxe, makes a dummy network interface
# (dummy0, 10.99.0.1/24, no route to anywhere) and the Soft-RoCE device
# rxe0 on it, waits for its port to be ACTIVE, and runs the command as root
# in the repository's directory.  The command's output goes to the
# guest's serial console, which is this script's standard output; its exit
# status comes back through a second, writable 9p share (a temporary
# directory on this machine) and is this script's exit status.  The guest
# has no network device: nothing outside it can be reached.
#
# `probe` prints `rdma link`, `ibv_devices`, `ibv_devinfo -d rxe0`, the
# verbs provider's entries in `fi_info` (and the details of its DGRAM
# entry), and `fi_info -p "verbs;ofi_rxm"`; it exits 0 when rxe0's port is
# ACTIVE and libfabric's verbs provider offers FI_EP_MSG and FI_EP_DGRAM
# on it.
#
# Cached between runs, keyed by the kernel package's name and version
# (plus a hash of what goes into the initramfs): the kernel's vmlinuz and
# modules, unpacked from the .deb (which is then deleted) and depmod'ed,
# and the initramfs.  Other versions' entries are removed when a new one
# is built.
#
# Environment:
#   RX_GUEST_CACHE    cache directory (default /var/cache/rdma_exchange-guest
#                     as root, ${XDG_CACHE_HOME:-~/.cache}/rdma_exchange-guest
#                     otherwise)
#   RX_GUEST_KERNEL   kernel package (default: what linux-image-amd64
#                     depends on, e.g. linux-image-6.1.0-56-amd64)
#   RX_GUEST_SMP      guest CPUs (default 2)
#   RX_GUEST_MEM      guest memory (default 2G; the tmpfs upper layer lives in it)
#   RX_GUEST_MTU      dummy0's MTU (default 1500: rxe0's active MTU 1024;
#                     9000 gives 4096)
#   RX_GUEST_TIMEOUT  seconds before qemu is killed (default 900)
#   RX_GUEST_ENV      space-separated NAME=VALUE pairs exported in the guest
#                     (the caller's RX_* and FI_* variables are passed anyway)
#   RX_GUEST_KEEP     1: keep the run directory (console log, dmesg)
#
# Needs (test/install-deps.sh installs them): qemu-system-x86,
# busybox-static, kmod, cpio, ibverbs-providers (the rxe provider),
# ibverbs-utils, libfabric-bin, iproute2 (ip, rdma), perftest.
set -euo pipefail

script=$(readlink -f "${BASH_SOURCE[0]}")
repo=$(cd "$(dirname "$script")/../.." && pwd)

die() { echo "guest.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# inside the guest: process 1 after switch_root
# ---------------------------------------------------------------------------
stage2() {
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	export HOME=/root LANG=C.UTF-8 TERM=dumb
	local io=/run/rxio rc=0 t_start t_ready
	t_start=$(cut -d' ' -f1 /proc/uptime)
	# only real trouble from the kernel on the console
	dmesg -n 3 2>/dev/null || true
	hostname rxguest
	# what udev would make: bash's process substitution needs /dev/fd
	ln -sfn /proc/self/fd /dev/fd
	ln -sfn /proc/self/fd/0 /dev/stdin
	ln -sfn /proc/self/fd/1 /dev/stdout
	ln -sfn /proc/self/fd/2 /dev/stderr
	ip link set lo up
	echo "127.0.1.1 rxguest" >>/etc/hosts 2>/dev/null || true
	# RDMA registers (pins) memory: no limit for root and whoever it starts
	ulimit -l unlimited || true

	setup() {
		modprobe -a dummy rdma_rxe ib_uverbs rdma_ucm || return 1
		ip link add dummy0 type dummy || return 1
		ip link set dummy0 mtu "${RX_GUEST_MTU:-1500}" || return 1
		ip addr add 10.99.0.1/24 dev dummy0 || return 1
		ip link set dummy0 up || return 1
		rdma link add rxe0 type rxe netdev dummy0 || return 1
		# as rdma-core's udev rules would: verbs and rdma_cm for every user
		chmod 0666 /dev/infiniband/* || return 1
		local state=''
		for _ in $(seq 1 100); do
			state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null || true)
			case $state in *ACTIVE*) return 0 ;; esac
			sleep 0.1
		done
		echo "guest: rxe0 port state after 10 s: ${state:-none}" >&2
		return 1
	}
	if ! setup; then
		echo "guest: setting up rxe0 failed; kernel messages:" >&2
		dmesg | tail -40 >&2
		rc=90
	fi
	t_ready=$(cut -d' ' -f1 /proc/uptime)
	echo "guest: kernel up to stage 2 ${t_start} s, rxe0 ready at ${t_ready} s (guest clock)"
	echo "$t_start $t_ready $(date +%s.%N)" >"$io/times"

	if [ "$rc" -eq 0 ]; then
		local kv
		for kv in ${RX_GUEST_ENV:-}; do export "${kv?}"; done
		cd "$repo"
		bash "$io/cmd" </dev/null || rc=$?
	fi
	dmesg >"$io/dmesg" 2>/dev/null || true
	echo "$rc" >"$io/rc.tmp" && mv "$io/rc.tmp" "$io/rc"
	sync
	umount "$io" 2>/dev/null || true
	echo 1 >/proc/sys/kernel/sysrq
	echo o >/proc/sysrq-trigger
	sleep 10
	exit "$rc"
}

# ---------------------------------------------------------------------------
# inside the guest: the probe
# ---------------------------------------------------------------------------
probe() {
	local fail=() out
	echo "== uname -r: $(uname -r)"
	echo "== rdma link"
	rdma link || fail+=("rdma link failed")
	echo "== ibv_devices"
	ibv_devices || fail+=("ibv_devices failed")
	echo "== ibv_devinfo -d rxe0"
	out=$(ibv_devinfo -d rxe0 2>&1) || fail+=("ibv_devinfo -d rxe0 failed")
	echo "$out"
	grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" || fail+=("rxe0 port is not ACTIVE")
	echo "== fi_info -p verbs"
	out=$(fi_info -p verbs 2>&1) || fail+=("fi_info -p verbs failed")
	echo "$out"
	grep -q 'FI_EP_MSG' <<<"$out" || fail+=("verbs provider offers no FI_EP_MSG endpoint")
	grep -q 'FI_EP_DGRAM' <<<"$out" || fail+=("verbs provider offers no FI_EP_DGRAM endpoint")
	grep -q 'rxe0' <<<"$out" || fail+=("verbs provider does not list rxe0")
	echo "== fi_info -p verbs -t FI_EP_DGRAM -v (selected fields)"
	fi_info -p verbs -t FI_EP_DGRAM -v 2>&1 |
		grep -E '^ *(domain|name|mode|mr_mode|max_msg_size|msg_prefix_size|inject_size|max_order_raw_size|tx_ctx_cnt|rx_ctx_cnt|size):' |
		sort | uniq -c | sed 's/^/   /' || true
	echo "== fi_info -p verbs -t FI_EP_MSG -v (selected fields)"
	fi_info -p verbs -t FI_EP_MSG -v 2>&1 |
		grep -E '^ *(domain|name|mode|mr_mode|max_msg_size|msg_prefix_size|inject_size|max_order_raw_size|max_order_war_size|max_order_waw_size|caps):' |
		sort | uniq -c | sed 's/^/   /' || true
	echo "== fi_info -p \"verbs;ofi_rxm\""
	if fi_info -p "verbs;ofi_rxm"; then
		echo "(verbs;ofi_rxm: offered)"
	else
		echo "(verbs;ofi_rxm: fi_info exit $?; informational, not a probe failure)"
		echo "== why: FI_LOG_LEVEL=info fi_info -p \"verbs;ofi_rxm\" (last lines, without parameter lines)"
		FI_LOG_LEVEL=info fi_info -p "verbs;ofi_rxm" 2>&1 |
			grep -vE 'fi_param_(get|define)_|registered var|variable ' | tail -25 || true
	fi
	echo "== FI_VERBS_IFACE=dummy0 fi_info -p \"verbs;ofi_rxm\""
	if FI_VERBS_IFACE=dummy0 fi_info -p "verbs;ofi_rxm"; then
		echo "(verbs;ofi_rxm with FI_VERBS_IFACE=dummy0: offered)"
	else
		echo "(verbs;ofi_rxm with FI_VERBS_IFACE=dummy0: fi_info exit $?)"
	fi
	echo "== fi_info -p \"verbs;ofi_rxd\""
	fi_info -p "verbs;ofi_rxd" || echo "(verbs;ofi_rxd: fi_info exit $?)"
	echo
	if [ ${#fail[@]} -gt 0 ]; then
		printf 'PROBE FAILED: %s\n' "${fail[@]}"
		return 1
	fi
	echo "PROBE OK: rxe0 is ACTIVE and libfabric's verbs provider offers FI_EP_MSG and FI_EP_DGRAM on it"
}

# ---------------------------------------------------------------------------
# on this machine: the cache (kernel, modules, initramfs)
# ---------------------------------------------------------------------------
cache_dir() {
	if [ -n "${RX_GUEST_CACHE:-}" ]; then
		echo "$RX_GUEST_CACHE"
	elif [ "$(id -u)" -eq 0 ]; then
		echo /var/cache/rdma_exchange-guest
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/rdma_exchange-guest"
	fi
}

# kernel package name and version: RX_GUEST_KERNEL, else the package that
# linux-image-amd64 depends on
kernel_package() {
	local pkg ver
	pkg=${RX_GUEST_KERNEL:-}
	if [ -z "$pkg" ]; then
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
			awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	fi
	[ -n "$pkg" ] || return 1
	ver=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
	echo "$pkg $ver"
}

# the modules (in load order) that the initramfs needs to mount the root
initramfs_modules=(virtio_pci virtio_rng 9pnet_virtio 9p overlay)

initramfs_init() {
	cat <<'EOF'
#!/bin/busybox sh
# /init of the rdma_exchange guest's initramfs (written by test/rdma/guest.sh)
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /lower /rw /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "initramfs: $*"; echo o >/proc/sysrq-trigger; sleep 5; exit 1; }
for m in $(cat /modules.list); do
	insmod "$m" || fail "insmod $m failed"
done
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
script=$(arg rx.script); mods=$(arg rx.mods); cache=$(arg rx.cache)
opts=trans=virtio,version=9p2000.L,msize=262144
i=0
until mount -t 9p -o "$opts,ro,cache=$cache" hostroot /lower; do
	i=$((i + 1)); [ $i -lt 20 ] || fail "cannot mount the host root over 9p"
	sleep 0.2
done
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
if ! mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot; then
	# read-only root; tmpfs on the places programs write to
	echo "initramfs: overlay over the host root failed; the root stays read-only"
	mount --move /lower /newroot || fail "cannot move the host root"
	for d in /var/tmp /var/log /var/lib/postgresql /root /home; do
		mount -t tmpfs -o mode=0755 tmpfs "/newroot$d" || true
	done
	chmod 1777 /newroot/var/tmp
fi
# the repository may live under a directory that gets a fresh tmpfs below
# (a clone in /tmp): hold it aside and put it back over that tmpfs
repo=${script%/test/rdma/guest.sh}
mkdir -p /hold
mount -o bind "/newroot$repo" /hold || fail "cannot bind the repository $repo"
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
mkdir -p /newroot/run/lock /newroot/run/postgresql /newroot/run/rxio
chmod 1777 /newroot/run/lock
mount -t 9p -o "$opts" rxio /newroot/run/rxio || fail "cannot mount the run directory over 9p"
mkdir -p /newroot/lib/modules 2>/dev/null
mount -o bind "/newroot$mods" /newroot/lib/modules || fail "cannot bind the modules"
mkdir -p "/newroot$repo" 2>/dev/null
mount --move /hold "/newroot$repo" || fail "cannot put the repository $repo back"
echo 1 >/proc/sys/kernel/sysrq
exec switch_root /newroot /bin/bash "$script" __stage2
EOF
}

# builds the cache entry if needed; sets kdir (its directory), kver
# (uname -r of the kernel)
build_cache() {
	local cache pkg ver key deb hash
	cache=$(cache_dir)
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9
	if read -r pkg ver < <(kernel_package); then
		:
	else
		# no apt lists: use what is cached
		kdir=$(find "$cache" -maxdepth 1 -name 'linux-image-*' ! -name '*.tmp' | sort | tail -1)
		[ -n "$kdir" ] || die "cannot tell which kernel package to use (apt-cache depends linux-image-amd64 gave nothing; run apt-get update or set RX_GUEST_KERNEL)"
		pkg='' ver=''
	fi
	if [ -n "$pkg" ]; then
		key="${pkg}_${ver}"
		kdir="$cache/$key"
		if [ ! -f "$kdir/vmlinuz" ]; then
			echo "guest.sh: fetching $pkg $ver into $kdir" >&2
			rm -rf "$kdir.tmp"
			mkdir -p "$kdir.tmp/deb"
			chmod 0755 "$kdir.tmp/deb"
			(cd "$kdir.tmp/deb" && apt-get download -o APT::Sandbox::User=root "$pkg=$ver" >&2) ||
				die "apt-get download $pkg=$ver failed"
			deb=$(ls "$kdir.tmp"/deb/*.deb)
			dpkg-deb -x "$deb" "$kdir.tmp/root"
			rm -rf "$kdir.tmp/root/usr/share/doc"
			local kv
			kv=$(ls "$kdir.tmp/root/lib/modules")
			# modules no guest without such hardware loads (about 250 MB)
			(cd "$kdir.tmp/root/lib/modules/$kv/kernel" &&
				rm -rf sound drivers/gpu drivers/media drivers/staging drivers/net/wireless \
					drivers/bluetooth drivers/iio drivers/usb drivers/hid drivers/input)
			depmod -b "$kdir.tmp/root" "$kv"
			cp "$kdir.tmp/root/boot/vmlinuz-$kv" "$kdir.tmp/vmlinuz"
			echo "$kv" >"$kdir.tmp/kver"
			rm -rf "$kdir.tmp/deb"
			# drop other versions
			local old
			for old in "$cache"/linux-image-*; do
				[ "$old" = "$kdir.tmp" ] || rm -rf "$old"
			done
			mv "$kdir.tmp" "$kdir"
		fi
	fi
	kver=$(cat "$kdir/kver")
	hash=$( { initramfs_init; printf '%s\n' "${initramfs_modules[@]}"; readlink -f /bin/busybox; } |
		sha256sum | cut -c1-12)
	initrd="$kdir/initrd-$hash.cpio.gz"
	if [ ! -f "$initrd" ]; then
		echo "guest.sh: building the initramfs $initrd" >&2
		local d m line
		d=$(mktemp -d)
		mkdir -p "$d/bin" "$d/mod"
		cp /bin/busybox "$d/bin/busybox"
		: >"$d/modules.list"
		for m in "${initramfs_modules[@]}"; do
			while read -r line; do
				case $line in
				insmod\ *)
					line=${line#insmod }
					line=${line%% *}
					local b
					b=$(basename "$line")
					if ! grep -qx "/mod/$b" "$d/modules.list"; then
						cp "$line" "$d/mod/$b"
						echo "/mod/$b" >>"$d/modules.list"
					fi
					;;
				esac
			done < <(modprobe -d "$kdir/root" -S "$kver" --show-depends "$m")
		done
		initramfs_init >"$d/init"
		chmod 0755 "$d/init"
		rm -f "$kdir"/initrd-*.cpio.gz
		(cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp"
		mv "$initrd.tmp" "$initrd"
		rm -rf "$d"
	fi
	exec 9>&-
}

# ---------------------------------------------------------------------------
# on this machine: boot the guest, run $io/cmd in it
# ---------------------------------------------------------------------------
boot() {
	local io=$1 t0 t1 rc qrc=0
	for c in qemu-system-x86_64 busybox modprobe depmod cpio; do
		command -v "$c" >/dev/null 2>&1 || [ -x "/bin/$c" ] || [ -x "/sbin/$c" ] ||
			die "$c is missing: run test/install-deps.sh"
	done
	[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
		ls /usr/lib/*/libibverbs/librxe-rdmav*.so >/dev/null 2>&1 ||
		die "the rxe provider of libibverbs is missing: install ibverbs-providers (test/install-deps.sh)"
	build_cache
	local cmdline
	cmdline="console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init"
	cmdline+=" rx.script=$script rx.mods=$kdir/root/lib/modules"
	cmdline+=" rx.cache=${RX_GUEST_9P_CACHE:-loose}"
	{
		printf 'repo=%q\n' "$repo"
		printf 'RX_GUEST_MTU=%q\n' "${RX_GUEST_MTU:-1500}"
		printf 'RX_GUEST_ENV=%q\n' "${RX_GUEST_ENV:-}"
		# the caller's RX_* and FI_* variables reach the command
		local v
		for v in $(compgen -e); do
			case $v in
			RX_GUEST_*) ;;
			RX_* | FI_*) printf 'export %s=%q\n' "$v" "${!v}" ;;
			esac
		done
	} >"$io/env"
	echo "guest.sh: booting $kver (qemu TCG, ${RX_GUEST_SMP:-2} CPUs, ${RX_GUEST_MEM:-2G})" >&2
	t0=$(date +%s.%N)
	# stdin from /dev/null: qemu must not take the terminal
	timeout -k 10 "${RX_GUEST_TIMEOUT:-900}" qemu-system-x86_64 \
		-nodefaults -no-user-config -nographic -no-reboot \
		-machine q35,accel=tcg -cpu max \
		-smp "${RX_GUEST_SMP:-2}" -m "${RX_GUEST_MEM:-2G}" \
		-kernel "$kdir/vmlinuz" -initrd "$initrd" -append "$cmdline" \
		-nic none -serial stdio -monitor none \
		-fw_cfg name=etc/sercon-port,string=0 \
		-device virtio-rng-pci \
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
		-fsdev local,id=rxio,path="$io",security_model=none \
		-device virtio-9p-pci,fsdev=rxio,mount_tag=rxio \
		</dev/null 2>&1 | sed -u 's/\r$//' | tee "$io/console.log" |
		sed -u -e '/sysrq: Power Off$/d' -e '/reboot: Power down$/d' -e '/externally provided fw_cfg item names/d' || qrc=$?
	t1=$(date +%s.%N)
	if [ -f "$io/times" ]; then
		local ts tready tdate
		read -r ts tready tdate <"$io/times"
		# the guest's clock starts from the host's RTC (whole seconds)
		awk -v a="$ts" -v b="$tready" -v c="$t0" -v d="$t1" -v e="$tdate" 'BEGIN {
			printf "guest.sh: guest uptime at stage 2 %.1f s, at rxe0 ACTIVE %.1f s; rxe0 ACTIVE %.0f s after qemu started (host clock, +-1 s); qemu ran %.1f s in all\n", a, b, e - c, d - c }' >&2
	fi
	if [ ! -f "$io/rc" ]; then
		echo "guest.sh: the guest gave no exit status (qemu exit $qrc; timeout ${RX_GUEST_TIMEOUT:-900} s); console log: $io/console.log" >&2
		RX_GUEST_KEEP=1
		return 99
	fi
	rc=$(cat "$io/rc")
	return "$rc"
}

main() {
	local sub=${1:-}
	[ $# -gt 0 ] && shift
	case $sub in
	__stage2)
		# shellcheck disable=SC1091
		. /run/rxio/env
		stage2
		;;
	__probe)
		probe
		;;
	build)
		build_cache
		echo "guest.sh: kernel $kver, $kdir/vmlinuz, $initrd"
		;;
	probe | run)
		local io rc=0
		if [ "$sub" = run ]; then
			[ $# -gt 0 ] || die "usage: guest.sh run CMD [ARG...]"
		fi
		io=$(mktemp -d "${TMPDIR:-/tmp}/rx-guest.XXXXXX")
		chmod 0755 "$io"
		if [ "$sub" = probe ]; then
			printf 'exec bash %q __probe\n' "$script" >"$io/cmd"
		else
			{ printf 'exec'; printf ' %q' "$@"; printf '\n'; } >"$io/cmd"
		fi
		boot "$io" || rc=$?
		if [ "${RX_GUEST_KEEP:-0}" = 1 ]; then
			echo "guest.sh: run directory kept: $io" >&2
		else
			rm -rf "$io"
		fi
		return "$rc"
		;;
	*)
		sed -n '2,/^set -euo/p' "$script" | sed '$d; s/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

main "$@"
