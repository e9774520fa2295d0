#!/usr/bin/env bash
# bench/pack.sh: packs this machine's PostgreSQL 15 (Debian's build, with
# the installed rdma_exchange extension) and every shared library it needs
# beyond glibc into one relocatable tarball, so that the benchmarks can run
# on a machine that has neither PostgreSQL nor libfabric (bench/device.sh
# unpacks it there and runs bench/pgbench/run.sh with it).
#
#   bash bench/pack.sh OUTDIR          writes OUTDIR/rxpg.tar.xz
#
# Layout inside the tarball (PREFIX is wherever it is unpacked):
#
#   PREFIX/usr/lib/postgresql/15/bin   postgres, initdb, pg_ctl, psql,
#                                      pgbench, createdb, ... (Debian's)
#   PREFIX/usr/lib/postgresql/15/lib   server modules, rdma_exchange.so
#                                      (no llvmjit: run with jit = off)
#   PREFIX/usr/share/postgresql/15     share/ with extension/rdma_exchange*
#   PREFIX/usr/lib/rx-libs             the libraries ldd finds for all of
#                                      the above that are not glibc's own
#                                      (libpq, libfabric, libicu, libssl...)
#   PREFIX/usr/share/zoneinfo          time zone data (Debian's postgres
#                                      reads /usr/share/zoneinfo; device.sh
#                                      copies it there when it is missing)
#   PREFIX/bin                         one wrapper per binary: sets
#                                      LD_LIBRARY_PATH to rx-libs and execs
#                                      the binary by its full path; use
#                                      PGBIN=PREFIX/bin
#   PREFIX/PACKINFO                    what was packed, from which commit,
#                                      and the newest glibc symbol version
#                                      the packed files need
#
# PostgreSQL finds share/ and lib/ relative to its binary's own path, so the
# tree works wherever it is unpacked.  LD_LIBRARY_PATH is set by the
# wrappers only, for PostgreSQL's processes: exported to everything it
# would put Debian 12's libstdc++, libz, libssl, libaudit... in front of the
# target's own for python3, runuser and pgrep too.
#
# Environment:
#   RX_PACK_EXT   installed (default): rdma_exchange.so, .control and .sql
#                 as installed under /usr/lib/postgresql and
#                 /usr/share/postgresql; tree: the ones built in this
#                 repository's root (make), e.g. when the installed ones
#                 are older than the working tree
#   RX_PACK_NAME  tarball name without extension (default rxpg)
#   PGBIN         bindir to pack (default /usr/lib/postgresql/15/bin)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

[ $# -eq 1 ] || { echo "usage: bash bench/pack.sh OUTDIR" >&2; exit 2; }
outdir=$1
name=${RX_PACK_NAME:-rxpg}
ext_from=${RX_PACK_EXT:-installed}
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
pgbin=$(cd "$pgbin" && pwd -P)
pgroot=$(dirname "$pgbin")                  # /usr/lib/postgresql/15
pglib=$pgroot/lib
pgshare=$("$pgbin/pg_config" --sharedir)    # /usr/share/postgresql/15
case "$pgroot:$pgshare" in
	/usr/lib/postgresql/15:/usr/share/postgresql/15) ;;
	*) echo "pack.sh: expected Debian's layout (/usr/lib/postgresql/15, /usr/share/postgresql/15), found $pgroot and $pgshare" >&2
	   exit 1 ;;
esac
for t in ldd tar xz sha256sum; do
	command -v "$t" >/dev/null || { echo "pack.sh: $t is missing" >&2; exit 1; }
done

# binaries the scripts call (test/cluster.sh, bench/*/run.sh), and a few
# for looking around
bins="postgres initdb pg_ctl psql pgbench createdb dropdb pg_config pg_isready pg_controldata"

stage=$(mktemp -d /tmp/rx_pack.XXXXXX)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root/usr/lib/postgresql/15/bin" "$root/usr/lib/postgresql/15/lib" \
	"$root/usr/share/postgresql" "$root/usr/lib/rx-libs" "$root/usr/share" "$root/bin"

# binaries (postmaster is a link to postgres in Debian; not needed)
for b in $bins; do
	cp -p "$pgbin/$b" "$root/usr/lib/postgresql/15/bin/$b"
done
# server modules: every .so but llvmjit (its libLLVM is 100 MB; jit = off)
for f in "$pglib"/*.so; do
	case ${f##*/} in llvmjit.so) continue ;; esac
	cp -p "$f" "$root/usr/lib/postgresql/15/lib/"
done
# share/: all but the man pages
cp -a "$pgshare" "$root/usr/share/postgresql/15"
rm -rf "$root/usr/share/postgresql/15/man"
# the extension: installed (default) or this repository's build
if [ "$ext_from" = tree ]; then
	for f in rdma_exchange.so rdma_exchange.control; do
		[ -f "$top/$f" ] || { echo "pack.sh: $top/$f is missing (make first)" >&2; exit 1; }
	done
	cp -p "$top/rdma_exchange.so" "$root/usr/lib/postgresql/15/lib/"
	rm -f "$root/usr/share/postgresql/15/extension/rdma_exchange"*
	cp -p "$top/rdma_exchange.control" "$top"/rdma_exchange--*.sql "$root/usr/share/postgresql/15/extension/"
elif [ "$ext_from" != installed ]; then
	echo "pack.sh: RX_PACK_EXT must be installed or tree, not '$ext_from'" >&2
	exit 1
fi
if [ ! -f "$root/usr/lib/postgresql/15/lib/rdma_exchange.so" ] \
	|| ! ls "$root/usr/share/postgresql/15/extension/"rdma_exchange--*.sql >/dev/null 2>&1; then
	echo "pack.sh: rdma_exchange is not installed in $pglib (RX_PACK_EXT=tree packs the repository's build)" >&2
	exit 1
fi
# time zone data: Debian builds with --with-system-tzdata=/usr/share/zoneinfo
cp -a /usr/share/zoneinfo "$root/usr/share/zoneinfo"
rm -rf "$root/usr/share/zoneinfo/right" "$root/usr/share/zoneinfo/posix"

# glibc's own libraries stay behind: the target's glibc is newer
is_glibc() {
	case $1 in
		ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*| \
		libutil.so.*|libnsl.so.*|libanl.so.*|libmvec.so.*|libBrokenLocale.so.*|libnss_*| \
		libthread_db.so.*|libc_malloc_debug.so.*|libmemusage.so|libpcprofile.so|linux-vdso.so.*)
			return 0 ;;
	esac
	return 1
}

# every library ldd resolves for the binaries and modules (ldd lists the
# whole closure), copied under its soname
elves=$(ls "$root/usr/lib/postgresql/15/bin/"* "$root/usr/lib/postgresql/15/lib/"*.so)
missing=0
while read -r soname arrow path _; do
	[ "$arrow" = "=>" ] || continue
	is_glibc "$soname" && continue
	if [ "$path" = "not" ]; then
		echo "pack.sh: $soname not found by ldd" >&2
		missing=1
		continue
	fi
	[ -e "$root/usr/lib/rx-libs/$soname" ] || cp -L "$path" "$root/usr/lib/rx-libs/$soname"
done < <(for f in $elves; do ldd "$f"; done | sort -u)
[ "$missing" = 0 ] || exit 1
# libfabric loads providers built as plugins from its provider path
fabdir=$(dirname "$(readlink -f "$(ldd "$root/usr/lib/postgresql/15/lib/rdma_exchange.so" | awk '$1 == "libfabric.so.1" { print $3 }')")")/libfabric
if [ -d "$fabdir" ] && ls "$fabdir"/*.so >/dev/null 2>&1; then
	echo "pack.sh: libfabric has provider plugins in $fabdir; they are not packed (only the built-in providers travel)" >&2
fi
chmod -R a+rX,go-w "$root"

# wrappers: LD_LIBRARY_PATH for PostgreSQL's processes only
for b in $bins; do
	cat > "$root/bin/$b" <<'EOF'
#!/bin/sh
# bench/pack.sh's wrapper: run the packed PostgreSQL binary of the same
# name with the packed libraries
p=$(cd "$(dirname "$0")/.." && pwd -P)
LD_LIBRARY_PATH="$p/usr/lib/rx-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$p/usr/lib/postgresql/15/bin/${0##*/}" "$@"
EOF
	chmod 755 "$root/bin/$b"
done

# the newest glibc symbol version anything packed asks for
glibc_need=$(for f in $elves "$root"/usr/lib/rx-libs/*; do
	objdump -T "$f" 2>/dev/null || true
done | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1)
glibc_need=${glibc_need#GLIBC_}

ext_so=$root/usr/lib/postgresql/15/lib/rdma_exchange.so
{
	echo "packed_at=$(date -u '+%Y-%m-%d %H:%M UTC')"
	# shellcheck source=/dev/null
	echo "packed_on=$(. /etc/os-release && echo "$PRETTY_NAME") glibc $(getconf GNU_LIBC_VERSION | awk '{ print $2 }')"
	echo "postgres=$("$pgbin/postgres" -V)"
	echo "extension_from=$ext_from"
	echo "extension_sha256=$(sha256sum "$ext_so" | cut -c1-16)"
	echo "extension_mtime=$(date -u -r "$ext_so" '+%Y-%m-%d %H:%M:%S UTC')"
	echo "repo_commit=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "glibc_needed=$glibc_need"
	echo "libs=$(cd "$root/usr/lib/rx-libs" && echo *)"
} > "$root/PACKINFO"
chmod 644 "$root/PACKINFO"

mkdir -p "$outdir"
tarball=$(cd "$outdir" && pwd)/$name.tar.xz
tar -C "$root" --owner=0 --group=0 --numeric-owner -cf - . | xz -T0 -9 > "$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "pack.sh: wrote $tarball ($(du -h "$tarball" | cut -f1); unpacked $(du -sh "$root" | cut -f1)); $(grep -c . <(ls "$root/usr/lib/rx-libs")) libraries, glibc >= $glibc_need needed" >&2
cat "$root/PACKINFO" >&2
