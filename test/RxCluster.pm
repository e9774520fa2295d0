# test/RxCluster.pm: an rdma_exchange cluster of several PostgreSQL servers
# for TAP tests (test/t/*.pl), built on PostgreSQL::Test::Cluster.
#
#   use RxCluster;
#   my $rx = RxCluster->new(nmembers => 3, extra_conf => ['rdma_exchange.credit_window = 8']);
#   is($rx->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.nodes'), '3');
#   $rx->kill_member(2);            # pg_ctl stop -m immediate
#   $rx->teardown;
#
# Every member gets the settings test/cluster.sh gives its members: it
# listens on 127.0.0.1 (and on the Unix socket Cluster.pm chooses), loads
# rdma_exchange with the udp fabric provider on a free loopback port, and
# shares one random rdma_exchange.cluster_key with the others.  new() starts
# the members, creates the extension in database 'postgres' on each, and
# add_node()s every member (member 0 first) on member 0, the coordinator.
#
# Ports: server and fabric ports come from
# PostgreSQL::Test::Cluster::get_free_port (a free TCP port, reserved against
# other tests), and fabric ports are also checked to be free for UDP.  Set
# RX_TAP_PORTS=LOW-HIGH to take every port from that range instead.
# RX_FABRIC_HOST (default 127.0.0.1) is the host of the members' fabric
# addresses and RX_CLUSTER_CONF holds postgresql.conf lines for every
# member, as for test/cluster.sh: test/rdma/verbs-tests.sh runs tests on
# the Soft-RoCE device that way.
#
# run-tests.sh runs the tests with PERL5LIB holding this directory and
# PostgreSQL's test modules, PATH starting with the PostgreSQL bindir, and
# PG_REGRESS set (Cluster.pm's init needs it).

package RxCluster;

use strict;
use warnings;

use File::Temp;
use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my %rx_ports_taken;

# is a loopback port free for this protocol?
sub _port_is_free
{
	my ($port, $proto) = @_;
	my $sock = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => $port,
		Proto     => $proto,
		($proto eq 'tcp' ? (Listen => 1, ReuseAddr => 1) : ()));
	return 0 unless $sock;
	close $sock;
	return 1;
}

# a free port: from RX_TAP_PORTS when set, else from Cluster.pm
sub _free_port
{
	my ($udp_too) = @_;

	if (defined $ENV{RX_TAP_PORTS} && $ENV{RX_TAP_PORTS} =~ /^(\d+)-(\d+)$/)
	{
		my ($lo, $hi) = ($1, $2);
		for my $port ($lo .. $hi)
		{
			next if $rx_ports_taken{$port};
			next unless _port_is_free($port, 'tcp');
			next if $udp_too && !_port_is_free($port, 'udp');
			$rx_ports_taken{$port} = 1;
			return $port;
		}
		BAIL_OUT("no free port left in RX_TAP_PORTS=$ENV{RX_TAP_PORTS}");
	}

	for (1 .. 100)
	{
		my $port = PostgreSQL::Test::Cluster::get_free_port();
		next if $rx_ports_taken{$port};
		next if $udp_too && !_port_is_free($port, 'udp');
		$rx_ports_taken{$port} = 1;
		return $port;
	}
	BAIL_OUT("could not find a free port");
}

sub _random_hex
{
	my ($nbytes) = @_;
	my $bytes;
	if (open(my $fh, '<:raw', '/dev/urandom'))
	{
		read($fh, $bytes, $nbytes) == $nbytes or die "short read from /dev/urandom";
		close $fh;
	}
	else
	{
		$bytes = join '', map { chr(int(rand(256))) } 1 .. $nbytes;
	}
	return unpack('H*', $bytes);
}

# RxCluster->new(%params)
#
# Creates, starts and joins a cluster.  Parameters:
#
#   nmembers    number of members (default 3)
#   extra_conf  array ref of postgresql.conf lines for every member
#   name        prefix of the node names (default 'rx'); members are
#               NAME_m0, NAME_m1, ...
#   dbname      database the extension is created in (default 'postgres')
#   start       0: only initialize the members; call start_all and
#               join_members yourself (default 1)

sub new
{
	my ($class, %params) = @_;
	my $n     = $params{nmembers}   // 3;
	my $extra = $params{extra_conf} // [];
	my $name  = $params{name}       // 'rx';
	my $fabric_host = $ENV{RX_FABRIC_HOST} // '127.0.0.1';
	my $self  = bless {
		members      => [],
		fabric_ports => [],
		dbname       => $params{dbname} // 'postgres',
		cluster_key  => _random_hex(32),
	}, $class;

	for my $i (0 .. $n - 1)
	{
		my $node = PostgreSQL::Test::Cluster->new("${name}_m$i",
			port => _free_port(0));
		my $fabric_port = _free_port(1);
		$node->init;
		$node->append_conf(
			'postgresql.conf', join("\n",
				"# rdma_exchange member $i (RxCluster.pm)",
				"listen_addresses = '127.0.0.1'",
				"shared_preload_libraries = 'rdma_exchange'",
				"rdma_exchange.fabric_provider = 'udp'",
				"rdma_exchange.fabric_address = '$fabric_host:$fabric_port'",
				"rdma_exchange.cluster_key = '$self->{cluster_key}'",
				# run-tests.sh runs some tests once per transport design
				"rdma_exchange.transport_design = '"
				  . ($ENV{RX_TEST_DESIGN} // 'auto') . "'",
				"max_connections = 100",
				"shared_buffers = 32MB",
				"max_worker_processes = 16",
				"max_prepared_transactions = 100",
				"max_parallel_workers = 8",
				"max_parallel_workers_per_gather = 2",
				"lc_messages = 'C'",
				split(/\n/, $ENV{RX_CLUSTER_CONF} // ''),
				@$extra, ''));
		push @{ $self->{members} },      $node;
		push @{ $self->{fabric_ports} }, $fabric_port;
	}

	if ($params{start} // 1)
	{
		$self->start_all;
		$self->join_members;
	}
	return $self;
}

# $rx->start_all
#
# Starts every member that is not running.
#
# $rx->join_members
#
# Creates the extension in the cluster's database on every member and, on
# member 0, add_node()s every member (member 0 first).

sub start_all
{
	my ($self) = @_;
	for my $node (@{ $self->{members} })
	{
		$node->start unless defined $node->{_pid};
	}
	return;
}

sub join_members
{
	my ($self) = @_;
	my $db = $self->{dbname};
	for my $node (@{ $self->{members} })
	{
		$node->safe_psql('postgres', "CREATE DATABASE $db")
		  unless $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_database WHERE datname = '$db'") eq '1';
		$node->safe_psql($db,
			'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS rdma_exchange CASCADE');
	}
	for my $node (@{ $self->{members} })
	{
		$self->coordinator->safe_psql($db,
			sprintf("SELECT rdma_exchange.add_node('127.0.0.1', %d)", $node->port));
	}
	return;
}

# $rx->members, $rx->member(i), $rx->coordinator, $rx->nmembers
#
# The PostgreSQL::Test::Cluster nodes; the coordinator is member 0.
#
# $rx->fabric_port(i), $rx->cluster_key, $rx->dbname

sub members     { return @{ $_[0]->{members} }; }
sub member      { return $_[0]->{members}[ $_[1] ]; }
sub coordinator { return $_[0]->{members}[0]; }
sub nmembers    { return scalar @{ $_[0]->{members} }; }
sub fabric_port { return $_[0]->{fabric_ports}[ $_[1] ]; }

# $rx->fabric_address($i): member $i's rdma_exchange.fabric_address
sub fabric_address
{
	my ($self, $i) = @_;
	return ($ENV{RX_FABRIC_HOST} // '127.0.0.1') . ':' . $self->fabric_port($i);
}
sub cluster_key { return $_[0]->{cluster_key}; }
sub dbname      { return $_[0]->{dbname}; }

# $rx->safe_psql(i, sql, %params)
#
# Runs sql on member i in the cluster's database (or $params{dbname}); dies
# on error, returns stdout.  Other %params go to Cluster.pm's safe_psql.
#
# $rx->psql(i, sql, %params)
#
# Cluster.pm's psql on member i: returns the exit code, or in list context
# (exit code, stdout, stderr).
#
# $rx->poll_query_until(i, sql [, expected])
#
# Cluster.pm's poll_query_until on member i.

sub safe_psql
{
	my ($self, $i, $sql, %params) = @_;
	my $db = delete $params{dbname} // $self->{dbname};
	return $self->member($i)->safe_psql($db, $sql, %params);
}

sub psql
{
	my ($self, $i, $sql, %params) = @_;
	my $db = delete $params{dbname} // $self->{dbname};
	return $self->member($i)->psql($db, $sql, %params);
}

sub poll_query_until
{
	my ($self, $i, $sql, $expected) = @_;
	return $self->member($i)->poll_query_until($self->{dbname}, $sql, $expected);
}

# $rx->stop_member(i [, mode])
#
# pg_ctl stop with mode fast (default), smart or immediate.
#
# $rx->kill_member(i)
#
# Stops member i the way a crash would (pg_ctl stop -m immediate): its
# backends and transport worker die without cleanup.
#
# $rx->start_member(i), $rx->restart_member(i)

sub stop_member
{
	my ($self, $i, $mode) = @_;
	return $self->member($i)->stop($mode // 'fast');
}

sub kill_member
{
	my ($self, $i) = @_;
	return $self->member($i)->stop('immediate');
}

sub start_member
{
	my ($self, $i) = @_;
	return $self->member($i)->start;
}

sub restart_member
{
	my ($self, $i) = @_;
	return $self->member($i)->restart;
}

# $rx->background_psql(i, sql, \$stdout, \$stderr)
#
# Starts psql on member i in the cluster's database running sql (from a
# file: IPC::Run would feed standard input only when the harness is pumped)
# unaligned, tuples only, stopping at the first error, and returns the
# IPC::Run harness; $h->finish waits for it.
#
# $rx->transport_counters(i)
#
# rdma_exchange.transport_stats() of member i, as a hash ref name => value.

sub background_psql
{
	my ($self, $i, $sql, $stdout, $stderr) = @_;
	my ($fh, $file) = File::Temp::tempfile(
		'rx_psql_XXXX', DIR => PostgreSQL::Test::Utils::tempdir(), UNLINK => 1);
	print $fh $sql;
	close $fh;
	return IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-f', $file, '-d',
		  $self->member($i)->connstr($self->{dbname}) ],
		'<', \undef, '>', $stdout, '2>', $stderr);
}

sub transport_counters
{
	my ($self, $i) = @_;
	my %c = split /[|\n]/,
	  $self->safe_psql($i, 'SELECT name, value FROM rdma_exchange.transport_stats()');
	return \%c;
}

# $rx->fragments_sql, $rx->check_clean(what [, skipped member index...])
#
# fragments_sql: a query giving the number of plan fragments running on a
# member.  check_clean: Test::More checks that on every member not skipped
# (a member that is down) no fragment is left running and the buffer pool
# is back to its idle state (every buffer free or posted for receiving);
# each check waits as poll_query_until does.

# (a running fragment shows its coordinator's statement, see README
# "Monitoring"; before it decoded its message, the execute_fragment() call)
my $fragments_sql = q{SELECT count(*) FROM pg_stat_activity
	WHERE application_name = 'rdma_exchange' AND state = 'active'
	AND (query LIKE '%execute_fragment%'
	     OR query LIKE '/* rdma_exchange fragment of member %')};
my $pool_busy_sql = q{SELECT sum(total_buffers - free_buffers - recv_posted_buffers)
	FROM rdma_exchange.buffer_pool_stats};

sub fragments_sql { return $fragments_sql; }

sub check_clean
{
	my ($self, $what, @skip) = @_;
	my %skip = map { $_ => 1 } @skip;
	for my $i (0 .. $self->nmembers - 1)
	{
		next if $skip{$i};
		ok($self->poll_query_until($i, "SELECT ($fragments_sql) = 0"),
			"$what: no fragment left running on member $i");
		ok($self->poll_query_until($i, "SELECT ($pool_busy_sql) = 0"),
			"$what: buffer pool of member $i back to idle");
	}
	return;
}

# $rx->teardown
#
# Stops every member still running (immediate).  Cluster.pm also does this
# when the test script ends.

sub teardown
{
	my ($self) = @_;
	for my $node (@{ $self->{members} })
	{
		$node->teardown_node if defined $node->{_pid};
	}
	return;
}

1;
