#!/usr/bin/env bash
# bench/shuffle/baselines/build-mpi.sh: compiles the MPI_Alltoallv baseline
# (mpi_alltoallv.c) with Open MPI's mpicc -O2 (`bash test/install-deps.sh
# openmpi-bin libopenmpi-dev` installs it).
#
#   bash bench/shuffle/baselines/build-mpi.sh OUT
#
# OUT is the executable to write.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: build-mpi.sh OUT" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
command -v mpicc >/dev/null 2>&1 \
	|| { echo "build-mpi.sh: mpicc not found; run test/install-deps.sh openmpi-bin libopenmpi-dev" >&2; exit 1; }
mpicc -O2 -Wall -Wextra -o "$1" "$here/mpi_alltoallv.c"
