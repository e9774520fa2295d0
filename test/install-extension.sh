#!/usr/bin/env bash
# test/install-extension.sh: installs the already-built extension
# (`make install`), as root or through sudo.
#
#   bash test/install-extension.sh SRCDIR
#
# Run it from the directory where the extension was built: SRCDIR itself,
# or a VPATH build directory (make -f SRCDIR/Makefile VPATH=SRCDIR).
# PG_CONFIG and DESTDIR are passed on to make when set.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 SRCDIR" >&2
	exit 2
fi
srcdir=$(cd "$1" && pwd -P)
builddir=$(pwd -P)

if [ "$(id -u)" -eq 0 ]; then
	sudo=()
else
	sudo=(sudo)
fi

args=()
if [ "$srcdir" = "$builddir" ]; then
	args+=(-f "$srcdir/Makefile")
else
	args+=(-f "$srcdir/Makefile" "VPATH=$srcdir")
fi
[ -n "${PG_CONFIG:-}" ] && args+=("PG_CONFIG=$PG_CONFIG")
[ -n "${DESTDIR:-}" ] && args+=("DESTDIR=$DESTDIR")

"${sudo[@]}" make -C "$builddir" "${args[@]}" install
