#!/usr/bin/env bash
# bench/device.sh: runs bench/pgbench/run.sh or bench/scaleout/run.sh on a
# machine without PostgreSQL, with the tarball bench/pack.sh made
# (PostgreSQL 15, the rdma_exchange extension, libfabric and the other
# libraries they need).
# Run it from the repository root, as root (or as the user the servers
# should run as); it needs bash, coreutils, util-linux (taskset, runuser),
# procps (pgrep), tar with xz or python3, and python3 (matplotlib for the
# figure); no network, no packages.  TPC-H (scaleout) also needs
# bench/tpch/dbgen/rx_dbgen built here, where make and cc are (carry it).
#
#   bash bench/device.sh TARBALL [ARGUMENTS of the benchmark's run.sh]
#
# RX_DEVICE_BENCH picks the benchmark: pgbench (default; arguments SCALE
# SECONDS RUNS) or scaleout (SF RUNS), e.g.
#      RX_PGB_SIZES="1 2 3 4" RX_PGB_CLIENTS=16 \
#        RX_PGB_SCRIPTS="point_1c select_4c select_spread" \
#        RX_PGB_OUT=/tmp/report bash bench/device.sh .device/rxpg.tar.xz 10 10 1
#      RX_DEVICE_BENCH=scaleout RX_SCALE_N="4 1 2" RX_SCALE_CORES=4 \
#        bash bench/device.sh .device/rxpg.tar.xz 1 3
#
# It unpacks TARBALL into RX_DEVICE_PREFIX (default /tmp/rxpg, replaced),
# copies the packed time zone data to /usr/share/zoneinfo when the machine
# has none (Debian's postgres reads it there), creates the test user
# (test/common.sh's RX_TEST_USER, default rdmax) when run as root, sets
# PGBIN to the packed wrappers (PREFIX/bin; they set LD_LIBRARY_PATH for
# PostgreSQL's processes only) and runs the benchmark's run.sh with the
# remaining arguments; every RX_PGB_* and RX_SCALE_* variable goes through.
# Servers get
# jit = off (llvmjit is not packed) and, where /dev/shm is small (a
# container's 64 MB), dynamic_shared_memory_type = mmap, through
# RX_CLUSTER_CONF.  The report's directory (RX_PGB_OUT, or RX_SCALE_RESULTS
# under which scaleout makes sf<SF>_c<C>/) defaults to $OUT when that is
# set, else to the benchmark's results/; PACKINFO (what was packed, from
# which commit) and env.txt (the machine) are copied into it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

[ $# -ge 1 ] || { echo "usage: bash bench/device.sh TARBALL [ARGUMENTS of the benchmark's run.sh]" >&2; exit 2; }
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -f "$tarball" ] || { echo "device.sh: no tarball $tarball" >&2; exit 1; }
prefix=${RX_DEVICE_PREFIX:-/tmp/rxpg}
case $prefix in /tmp/?*|/var/tmp/?*|/dev/shm/?*) ;; *) echo "device.sh: RX_DEVICE_PREFIX must be under /tmp, /var/tmp or /dev/shm (it is replaced)" >&2; exit 1 ;; esac
bench=${RX_DEVICE_BENCH:-pgbench}
case $bench in
	pgbench)
		export RX_PGB_OUT=${RX_PGB_OUT:-${OUT:-$top/bench/pgbench/results}}
		report_dir=$RX_PGB_OUT ;;
	scaleout)
		export RX_SCALE_RESULTS=${RX_SCALE_RESULTS:-${OUT:-$top/bench/scaleout/results}}
		report_dir=$RX_SCALE_RESULTS ;;
	*) echo "device.sh: RX_DEVICE_BENCH is pgbench or scaleout, not '$bench'" >&2; exit 2 ;;
esac

for t in taskset runuser pgrep python3 od awk sed; do
	command -v "$t" >/dev/null || { echo "device.sh: $t is missing on this machine" >&2; exit 1; }
done

# unpack (xz through tar, or python3's tarfile where xz is missing)
echo "device.sh: unpacking $tarball into $prefix" >&2
rm -rf "$prefix"
mkdir -p "$prefix"
if ! { [ "${tarball%.tar.xz}" != "$tarball" ] && command -v xz >/dev/null && tar -xJf "$tarball" -C "$prefix"; }; then
	python3 -c '
import sys, tarfile
kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' "$tarball" "$prefix"
fi
chmod 755 "$prefix"
[ -x "$prefix/bin/postgres" ] || { echo "device.sh: $tarball holds no bin/postgres (made by bench/pack.sh?)" >&2; exit 1; }
info() { sed -n "s/^$1=//p" "$prefix/PACKINFO"; }

# glibc: the packed files were built against Debian 12's
need=$(info glibc_needed)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
if [ -n "$need" ] && [ -n "$have" ] && \
	[ "$(printf '%s\n%s\n' "$need" "$have" | sort -t. -k1,1n -k2,2n | head -1)" != "$need" ]; then
	echo "device.sh: this machine's glibc is $have; the packed PostgreSQL needs $need or newer" >&2
	exit 1
fi

# time zone data where Debian's postgres looks for it
if [ ! -e /usr/share/zoneinfo/UTC ] && [ "$(id -u)" -eq 0 ]; then
	echo "device.sh: no /usr/share/zoneinfo here; copying the packed one" >&2
	mkdir -p /usr/share/zoneinfo
	cp -a "$prefix/usr/share/zoneinfo/." /usr/share/zoneinfo/
fi

# the test user (test/common.sh)
# shellcheck source=test/common.sh
. "$top/test/common.sh"
if [ "$(id -u)" -eq 0 ] && ! id "$RX_TEST_USER" >/dev/null 2>&1; then
	echo "device.sh: creating the test user $RX_TEST_USER" >&2
	if command -v useradd >/dev/null; then
		useradd -r -M -d / -s /bin/sh "$RX_TEST_USER"
	else
		uid=990
		while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null; do uid=$((uid - 1)); done
		echo "$RX_TEST_USER:x:$uid:" >> /etc/group
		echo "$RX_TEST_USER:x:$uid:$uid::/:/bin/sh" >> /etc/passwd
	fi
fi
# the servers and pgbench run as the test user: the tree must be readable
chmod -R a+rX "$prefix"
p=$prefix
while [ "$p" != / ]; do
	p=$(dirname "$p")
	[ "$p" = / ] || chmod a+x "$p"
done

export PGBIN=$prefix/bin
export PATH=$prefix/bin:$PATH
unset PG_CONFIG
if ! rx_as_user "$PGBIN/postgres" -V >/dev/null; then
	echo "device.sh: the packed postgres does not run as $RX_TEST_USER:" >&2
	rx_as_user "$PGBIN/postgres" -V >&2 || true
	exit 1
fi

# settings: no llvmjit in the tarball; a container's /dev/shm is small
conf="jit = off"
shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -z "$shm_kb" ] || [ "$shm_kb" -lt 1048576 ]; then
	conf="$conf
dynamic_shared_memory_type = mmap"
	echo "device.sh: /dev/shm has ${shm_kb:-no} kB free; dynamic_shared_memory_type = mmap" >&2
fi
export RX_CLUSTER_CONF="${RX_CLUSTER_CONF:+$RX_CLUSTER_CONF
}$conf"
# the commit: git may be missing here, or the tree may have no .git
c=$(git -C "$top" describe --always --dirty 2>/dev/null || true)
commit="${c:-tree unknown}; packed extension from $(info repo_commit) ($(info extension_from), sha256 $(info extension_sha256))"
export RX_PGB_COMMIT=${RX_PGB_COMMIT:-$commit} RX_SCALE_COMMIT=${RX_SCALE_COMMIT:-$commit}

mkdir -p "$report_dir"
cp "$prefix/PACKINFO" "$report_dir/PACKINFO"
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "kernel: $(uname -r)"
	# shellcheck source=/dev/null
	echo "os: $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo unknown)"
	echo "glibc: $have"
	echo "nproc: $(nproc); $(grep Cpus_allowed_list /proc/self/status | tr -s '\t' ' ')"
	echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "memory: $(awk '/^MemTotal/ { print $2, $3 }' /proc/meminfo)"
	echo "/dev/shm free: ${shm_kb:-none} kB"
	echo "PGBIN: $PGBIN ($("$PGBIN/postgres" -V))"
	echo "RX_CLUSTER_CONF: $(echo "$RX_CLUSTER_CONF" | tr '\n' ';')"
	env | grep -E '^RX_(PGB|SCALE)_' | sort
	echo "run.sh arguments: $*"
	if command -v lscpu >/dev/null; then lscpu; fi
} > "$report_dir/env.txt" 2>&1
echo "device.sh: PGBIN=$PGBIN; running bench/$bench/run.sh $*; report in $report_dir" >&2
start=$(date +%s)
rc=0
bash "$top/bench/$bench/run.sh" "$@" || rc=$?
echo "device.sh: run.sh exited $rc after $(($(date +%s) - start)) s" >&2
# a pgbench run that stopped half way: the report of what was measured
if [ "$bench" = pgbench ] && [ "$rc" != 0 ] &&
	grep -q '"instance"' "$RX_PGB_OUT/raw.jsonl" 2>/dev/null; then
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	"$py" "$top/bench/pgbench/report.py" "$RX_PGB_OUT/raw.jsonl" "$RX_PGB_OUT" || true
fi
exit "$rc"
