#!/usr/bin/env bash
# test/install-deps.sh: installs what building and testing rdma_exchange
# needs on Debian 12, and nothing that is already there.
#
#   bash test/install-deps.sh [PACKAGE...]
#
# PACKAGEs are installed too, the same way (bench/shuffle/run.sh asks for
# Open MPI, which only its MPI_Alltoallv baseline needs).
# Idempotent: only missing packages are installed, and `apt-get update`
# runs only when one is missing.  As root it uses apt-get directly; as any
# other user it uses sudo.  As root it also creates the unprivileged system
# user `rdmax` (override: RX_TEST_USER) that servers and tests run as,
# because PostgreSQL refuses to run as root; as a non-root user the current
# user is the test user.
set -euo pipefail

packages=(
	# build
	make gcc libc6-dev
	postgresql-15 postgresql-server-dev-15 libpq-dev libssl-dev
	libfabric-dev libfabric-bin libibverbs-dev librdmacm-dev
	# tests: PostgreSQL::Test::Cluster needs IPC::Run; prove comes with perl
	perl libipc-run-perl
	# the cluster helper and the test user
	util-linux passwd
	# benchmarks: reports and plots
	python3 python3-matplotlib
	# test/t/060_clients.pl: cursors fetched in batches by real client
	# libraries (psycopg2, pgJDBC compiled with javac, node-postgres and
	# pg-cursor, which npm installs from the npm registry at test time)
	python3-psycopg2 libpostgresql-jdbc-java default-jdk-headless nodejs npm
	# test/rdma/guest.sh: a qemu guest (Debian's kernel, fetched with
	# apt-get download, never installed here) with a Soft-RoCE device; the
	# guest runs this machine's userspace: ip and rdma (iproute2), the rxe
	# provider of libibverbs, ibverbs-utils and perftest.  Not rdma-core:
	# only its daemons and udev rules, which the guest does not need
	qemu-system-x86 busybox-static kmod cpio
	iproute2 ibverbs-providers ibverbs-utils perftest
	"$@"
)

if [ "$(id -u)" -eq 0 ]; then
	sudo=()
	test_user=${RX_TEST_USER:-rdmax}
else
	sudo=(sudo)
	test_user=$(id -un)
fi

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

missing=()
for p in "${packages[@]}"; do
	installed "$p" && continue
	# NodeSource's nodejs package bundles npm and conflicts with Debian's
	# npm package: a working npm command is enough
	[ "$p" = npm ] && installed nodejs && command -v npm >/dev/null 2>&1 && continue
	missing+=("$p")
done

# Test::More 0.98 or later (PostgreSQL::Test::Utils); Debian's perl ships
# a recent one, libtest-simple-perl only when it is not
if ! perl -e 'use Test::More 0.98; 1' >/dev/null 2>&1 && ! installed libtest-simple-perl; then
	missing+=(libtest-simple-perl)
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps.sh: installing ${missing[*]}"
	if [ ${#sudo[@]} -gt 0 ] && ! command -v sudo >/dev/null 2>&1; then
		echo "install-deps.sh: not root and sudo is not installed; install these as root" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${missing[@]}"
else
	echo "install-deps.sh: all packages present"
fi

# test/rdma/guest.sh finds the kernel package it downloads through apt's
# package lists, which a machine that had every package may not have
if ! apt-cache depends linux-image-amd64 2>/dev/null | grep -q 'Depends: linux-image-[0-9]'; then
	echo "install-deps.sh: updating apt's package lists (test/rdma/guest.sh looks up linux-image-amd64 there)"
	"${sudo[@]}" apt-get update || echo "install-deps.sh: apt-get update failed; the verbs tests will not find their kernel" >&2
fi

if [ "$(id -u)" -eq 0 ] && ! id "$test_user" >/dev/null 2>&1; then
	echo "install-deps.sh: creating system user $test_user"
	useradd --system --user-group --create-home --home-dir "/var/lib/$test_user" \
		--shell /bin/bash --comment "rdma_exchange tests" "$test_user"
fi
echo "install-deps.sh: servers and tests run as $test_user"
