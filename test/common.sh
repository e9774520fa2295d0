# test/common.sh: shell functions shared by the test scripts (cluster.sh,
# run-tests.sh, demo.sh).  Sourced, never run.
#
# PostgreSQL refuses to run as root.  When a script runs as root, every
# command that touches a server runs as the unprivileged test user (rdmax,
# created by test/install-deps.sh); otherwise the current user is the test
# user.
#
# Environment:
#   PGBIN         bindir of the PostgreSQL installation to use
#                 (default: $(pg_config --bindir))
#   RX_TEST_USER  test user when running as root (default: rdmax)

# shellcheck shell=bash

# the user servers and tests run as
if [ "$(id -u)" -eq 0 ]; then
	RX_TEST_USER=${RX_TEST_USER:-rdmax}
else
	RX_TEST_USER=$(id -un)
fi

# rx_pgbin: sets PGBIN (and PG_CONFIG, the pg_config next to it)
rx_pgbin() {
	if [ -z "${PGBIN:-}" ]; then
		if ! command -v pg_config >/dev/null 2>&1; then
			echo "pg_config not found: install postgresql-server-dev-15 (test/install-deps.sh) or set PGBIN" >&2
			return 1
		fi
		PGBIN=$(pg_config --bindir)
	fi
	if [ ! -x "$PGBIN/postgres" ]; then
		echo "PGBIN=$PGBIN holds no postgres binary" >&2
		return 1
	fi
	if [ -x "$PGBIN/pg_config" ]; then
		PG_CONFIG="$PGBIN/pg_config"
	else
		PG_CONFIG=$(command -v pg_config)
	fi
	export PGBIN PG_CONFIG
}

# rx_check_user: fails with a hint when the test user does not exist
rx_check_user() {
	if ! id "$RX_TEST_USER" >/dev/null 2>&1; then
		echo "test user $RX_TEST_USER does not exist; run test/install-deps.sh as root first" >&2
		return 1
	fi
}

# rx_as_user CMD...: runs CMD as the test user, from directory / (tools such
# as initdb fail when they cannot read the current directory, e.g. /root)
rx_as_user() {
	rx_as_user_in / "$@"
}

# rx_as_user_in DIR CMD...: runs CMD as the test user from directory DIR
rx_as_user_in() {
	local dir=$1
	shift
	if [ "$(id -u)" -eq 0 ] && [ "$RX_TEST_USER" != root ]; then
		(cd "$dir" && runuser -u "$RX_TEST_USER" -- "$@")
	else
		(cd "$dir" && "$@")
	fi
}

# rx_mkdir_for_user DIR: creates DIR (and parents) writable by the test user
rx_mkdir_for_user() {
	local dir=$1
	mkdir -p "$dir"
	if [ "$(id -u)" -eq 0 ] && [ "$RX_TEST_USER" != root ]; then
		chown "$RX_TEST_USER:" "$dir"
	fi
	if ! rx_as_user test -w "$dir" -a -x "$dir"; then
		echo "$dir is not writable by the test user $RX_TEST_USER (is a parent directory private?)" >&2
		return 1
	fi
}

# rx_free_base N [START]: prints the first base port P >= START (default
# 55432, steps of 10) such that the server ports P..P+N-1 (TCP) and the
# fabric ports P+100..P+100+N-1 (TCP and UDP) are all free on 127.0.0.1
rx_free_base() {
	perl -MIO::Socket::INET -e '
		my ($n, $p) = @ARGV;
		sub free {
			my ($port, $proto) = @_;
			my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $port,
				Proto => $proto, ($proto eq "tcp" ? (Listen => 1, ReuseAddr => 1) : ()));
			return 0 unless $s;
			close $s;
			return 1;
		}
		for (; $p + 100 + $n < 65536; $p += 10) {
			my $ok = 1;
			for my $i (0 .. $n - 1) {
				$ok &&= free($p + $i, "tcp") && free($p + 100 + $i, "tcp")
				  && free($p + 100 + $i, "udp");
			}
			if ($ok) { print "$p\n"; exit 0; }
		}
		exit 1;
	' "$1" "${2:-55432}"
}
