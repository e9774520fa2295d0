#!/usr/bin/env bash
# bench/shuffle/baselines/install-mpi.sh: installs Open MPI from the Debian
# 12 packages for the MPI_Alltoallv baseline (mpi_alltoallv.c), and nothing
# that is already there.
#
#   bash bench/shuffle/baselines/install-mpi.sh
#
# Idempotent, like test/install-deps.sh: only missing packages are
# installed, and `apt-get update` runs only when one is missing.  As root
# it uses apt-get directly; as any other user it uses sudo.
set -euo pipefail

packages=(openmpi-bin libopenmpi-dev)

if [ "$(id -u)" -eq 0 ]; then
	sudo=()
else
	sudo=(sudo)
fi

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-mpi.sh: all packages present"
	exit 0
fi
echo "install-mpi.sh: installing ${missing[*]}"
if [ ${#sudo[@]} -gt 0 ] && ! command -v sudo >/dev/null 2>&1; then
	echo "install-mpi.sh: not root and sudo is not installed; install these as root" >&2
	exit 1
fi
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends "${missing[@]}"
