# test/t/030_bad_input.pl: bad input from outside gets a clear error or is
# dropped and counted, and breaks nothing: add_node() of a server that is
# not there, a member with another cluster_key (so fragments it receives
# are not signed the way it expects), a member with another extension
# version, a wrong RDMA key in a member's messages, datagrams crafted by a
# stranger (garbage, a wrong magic, a wrong token for a running query, an
# unknown query) and forged messages sent through a member's transport.
# After each case a distributed query still gives the right answer and
# nothing is left running or held on any member.
#
# RX_BAD_INPUT_TRANSPORT_ONLY=1 runs only the transport's cases (the RDMA
# key, the stranger, the forged messages): test/rdma's guest, where the
# others would only repeat the host's run 15 times slower.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use IO::Socket::INET;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);
my $n  = $rx->nmembers;

my $transport_only = ($ENV{RX_BAD_INPUT_TRANSPORT_ONLY} // '') eq '1';
my ($ret, $out, $err);

# ----- add_node() of a server that is not there -----
# (before any table is distributed: add_node() refuses new members then)
unless ($transport_only)
{
	my $nobody = PostgreSQL::Test::Cluster::get_free_port();
	($ret, $out, $err) = $rx->psql(0,
		"SET rdma_exchange.connect_timeout = 2; SELECT rdma_exchange.add_node('127.0.0.1', $nobody)");
	isnt($ret, 0, 'add_node of an unreachable server fails');
	like($err, qr/127\.0\.0\.1:$nobody/, 'add_node: the error names the server');
	for my $i (0 .. $n - 1)
	{
		is($rx->safe_psql($i, 'SELECT count(*) FROM rdma_exchange.nodes'), $n,
			"add_node: member $i still has $n members");
	}
}
$rx->safe_psql(0, q{
	CREATE TABLE b (id int PRIMARY KEY, k int);
	INSERT INTO b SELECT i, i % 100 FROM generate_series(1, 30000) i;
	CREATE TABLE b_local AS SELECT * FROM b;
	SELECT rdma_exchange.create_distributed_table('b', 'id');
	ANALYZE b; ANALYZE b_local;
});
# a repartition join (every member sends to every other), and its answer
# from a single server
my $query = 'SELECT count(*), sum(x.id) FROM %s x JOIN %s y ON x.k = y.id';
my $answer = $rx->safe_psql(0, sprintf($query, 'b_local', 'b_local'));
$query = sprintf($query, 'b', 'b');

sub check_healthy
{
	my ($what) = @_;
	is($rx->safe_psql(0, $query), $answer, "$what: distributed answer right");
	$rx->check_clean($what);
}

sub member_name { return '127.0.0.1:' . $rx->member($_[0])->port; }

check_healthy('to begin with');

unless ($transport_only)
{
	# ----- a member with another cluster_key -----
	$rx->safe_psql(2, "ALTER SYSTEM SET rdma_exchange.cluster_key = 'not the cluster key'");
	$rx->safe_psql(2, 'SELECT pg_reload_conf()');
	sleep 1;
	($ret, $out, $err) = $rx->psql(0, $query);
	isnt($ret, 0, 'other cluster_key: the query fails');
	like($err, qr/plan fragment signature does not match/,
		'other cluster_key: the error says the fragment signature does not match');
	like($err, qr/\Q${\ member_name(2)}\E/, 'other cluster_key: the error names the member');
	$rx->check_clean('other cluster_key');
	$rx->safe_psql(2, 'ALTER SYSTEM RESET rdma_exchange.cluster_key');
	$rx->safe_psql(2, 'SELECT pg_reload_conf()');
	sleep 1;
	check_healthy('cluster_key restored');

	# ----- a member with another extension version -----
	# (as a member with an older or newer installed version would report it)
	$rx->safe_psql(1,
		"UPDATE pg_extension SET extversion = '0.0-test' WHERE extname = 'rdma_exchange'");
	($ret, $out, $err) = $rx->psql(0, $query);
	isnt($ret, 0, 'other extension version: the query fails');
	like($err,
		qr/the coordinator has rdma_exchange version 0\.1, this member has version 0\.0-test/,
		'other extension version: the error gives both versions');
	like($err, qr/\Q${\ member_name(1)}\E/, 'other extension version: the error names the member');
	like($err, qr/ALTER EXTENSION rdma_exchange UPDATE/, 'other extension version: the hint says what to do');
	$rx->safe_psql(1,
		"UPDATE pg_extension SET extversion = '0.1' WHERE extname = 'rdma_exchange'");
	check_healthy('extension version restored');
}

# ----- a wrong RDMA key -----
# Member 1 offers its buffers under a wrong key, as a damaged or forged
# message would name them: the PULL notices it sends (semq_rd: the others
# read its buffers) and the buffers it lends (semq_wr: the others write
# into them).  The others check the key and address against the pool
# registration member 1 published (rdma_exchange.pool_registration) and do
# not issue the operation: the query must fail at once with an error
# naming member 1 and the exchange (not wait for a timeout, not retry
# forever), and leave nothing behind.  A refused RDMA operation would have
# broken the RC connection between the two workers on verbs; no
# connection is reopened (peers_reconnected), and the next query between
# them, with the right key, must work.
# connections reopened after a failed RDMA operation, on all members
sub reopened
{
	my $n = 0;
	$n += $rx->transport_counters($_)->{peers_reconnected} for 0 .. 2;
	return $n;
}
isnt($rx->safe_psql(1, 'SHOW rdma_exchange.pool_registration'), '',
	'member 1 published its pool registration');
my @key_designs = ('semq_rd', 'semq_wr');
for my $design (@key_designs)
{
	$rx->safe_psql(1, 'ALTER SYSTEM SET rdma_exchange.fault_wrong_rdma_key = on');
	$rx->safe_psql(1, 'SELECT pg_reload_conf()');
	sleep 1;
	my $reopened = reopened();
	my $t0 = time;
	($ret, $out, $err) = $rx->psql(0,
		"SET rdma_exchange.transport_design = $design; SET statement_timeout = '60s'; $query");
	isnt($ret, 0, "wrong RDMA key ($design): the query fails");
	like($err, qr/an RDMA operation with member "\Q${\ member_name(1)}\E" failed on exchange \d+/,
		"wrong RDMA key ($design): the error names member 1 and the exchange");
	like($err, qr/RDMA (Read|Write) of message \d+ was not issued: its (PULL|LEND) names key/,
		"wrong RDMA key ($design): the detail names the operation and the message");
	cmp_ok(time - $t0, '<', 30, "wrong RDMA key ($design): the error comes before any timeout");
	is(reopened(), $reopened,
		"wrong RDMA key ($design): no connection was broken");
	$rx->check_clean("wrong RDMA key ($design)");
	$rx->safe_psql(1, 'ALTER SYSTEM RESET rdma_exchange.fault_wrong_rdma_key');
	$rx->safe_psql(1, 'SELECT pg_reload_conf()');
	sleep 1;
	is($rx->safe_psql(0, "SET rdma_exchange.transport_design = $design; $query"),
		$answer, "right key again ($design): distributed answer right");
	check_healthy("right key again ($design)");
}

# ----- datagrams from a stranger -----
# (sent to the member's UDP port: where the datagram endpoint is a UD queue
# pair, in test/rdma's guest, there is no such port to send to)
if ($rx->safe_psql(0, 'SHOW rdma_exchange.datagram_name') ne '')
{
	note 'datagrams from a stranger: skipped, the datagram endpoint is a UD queue pair';
}
else
{
	# The wire header (src/transport/protocol.h): 64 bytes, little-endian.
	sub header
	{
		my (%h) = @_;
		return pack('V C C v Q< Q< l< v v Q< Q< Q< V V',
			$h{magic} // 0x474D5852, $h{version} // 1, $h{type} // 1, $h{flags} // 0,
			$h{query_id}, $h{token}, $h{exchange} // 1,
			$h{src} // 0, $h{dst} // 1, $h{seq} // 0, 0, 0,
			length($h{payload} // ''), 0) . ($h{payload} // '');
	}

	# A query with known id and token, waiting on member 1 for data from
	# member 0: transport_selftest opens a port like a fragment's.
	my $qid   = 7_654_321_987;
	my $token = 1_234_567_890_123;
	my $addrs = join(',', map { $rx->fabric_address($_) } 0 .. 1);
	my $selftest = sub {
		my ($self, $to, $from) = @_;
		return "SELECT received, errors FROM rdma_exchange.transport_selftest("
		  . "$qid, $token, $self, '{$addrs}', 50, 100, '{$to}', '{$from}')";
	};
	my $before_open = $rx->transport_counters(1)->{ports_opened};
	my ($rout, $rerr) = ('', '');
	my $receiver = $rx->background_psql(1, $selftest->(1, '', '0'), \$rout, \$rerr);
	ok($rx->poll_query_until(1,
		"SELECT value > $before_open FROM rdma_exchange.transport_stats() WHERE name = 'ports_opened'"),
		'stranger: the receiving port is open');

	my $before = $rx->transport_counters(1);
	my $sock = IO::Socket::INET->new(
		PeerAddr => '127.0.0.1',
		PeerPort => $rx->fabric_port(1),
		Proto    => 'udp') or die "udp socket: $!";
	# garbage, shorter than a header
	$sock->send('hello, is this a database?');
	# a full header with the wrong magic
	$sock->send(header(magic => 0x12345678, query_id => $qid, token => $token));
	# another wire version
	$sock->send(header(version => 9, query_id => $qid, token => $token));
	# the running query, the wrong token
	$sock->send(header(query_id => $qid, token => $token + 1, payload => 'x' x 100));
	# a query nobody runs
	$sock->send(header(query_id => $qid + 1, token => $token, payload => 'y' x 100));
	# a payload length that does not match the datagram
	$sock->send(substr(header(query_id => $qid, token => $token, payload => 'z' x 100), 0, 100));

	ok($rx->poll_query_until(1,
		"SELECT value >= $before->{bad_header_dropped} + 4 FROM rdma_exchange.transport_stats() WHERE name = 'bad_header_dropped'"),
		'stranger: malformed datagrams dropped and counted');
	ok($rx->poll_query_until(1,
		"SELECT value >= $before->{wrong_token_dropped} + 1 FROM rdma_exchange.transport_stats() WHERE name = 'wrong_token_dropped'"),
		'stranger: the datagram with a wrong token dropped and counted');
	ok($rx->poll_query_until(1,
		"SELECT value >= $before->{unknown_query_dropped} + 1 FROM rdma_exchange.transport_stats() WHERE name = 'unknown_query_dropped'"),
		'stranger: the datagram for an unknown query dropped and counted');

	# the real sender now: the receiver gets exactly its 50 messages, none of
	# the stranger's
	is($rx->safe_psql(0, $selftest->(0, '1', '')), '0|0',
		'stranger: the sender side of the query completes');
	$receiver->finish;
	is($rout, "50|0\n", 'stranger: the receiver got exactly the real messages, intact');
	is($rerr, '', 'stranger: no error on the receiver');

	check_healthy('after the stranger');
}

# ----- forged messages through a member's own transport -----
# Well-formed data messages from someone who knows the running query's id
# but not its token, or a query nobody runs, sent with member 0's
# transport: wherever the datagram endpoint is (over verbs, real datagrams
# on member 0's UD queue pair, to member 1's).  Member 1 must drop and
# count them, and its query must get exactly the real messages.
{
	my $qid   = 7_654_321_999;
	my $token = 2_345_678_901_234;
	# host:port, and the raw name where peers find the endpoint by that
	my $addrs = join(',',
		map {
			my $name = $rx->safe_psql($_, 'SHOW rdma_exchange.datagram_name');
			'"' . $rx->fabric_address($_) . ($name ne '' ? " $name" : '') . '"'
		} 0 .. 1);
	my $selftest = sub {
		my ($q, $t, $self, $to, $from) = @_;
		return "SET statement_timeout = '60s'; SELECT received, errors FROM "
		  . "rdma_exchange.transport_selftest($q, $t, $self, '{$addrs}', 50, 100, '{$to}', '{$from}')";
	};
	my $before_open = $rx->transport_counters(1)->{ports_opened};
	my ($rout, $rerr) = ('', '');
	my $receiver = $rx->background_psql(1, $selftest->($qid, $token, 1, '', '0'),
		\$rout, \$rerr);
	ok($rx->poll_query_until(1,
		"SELECT value > $before_open FROM rdma_exchange.transport_stats() WHERE name = 'ports_opened'"),
		'forged: the receiving port is open');

	# the forgers give up after member 0's peer_timeout: short, to save time
	$rx->safe_psql(0, "ALTER SYSTEM SET rdma_exchange.peer_timeout = '2s'");
	$rx->safe_psql(0, 'SELECT pg_reload_conf()');
	sleep 1;
	my $before = $rx->transport_counters(1);
	my ($fret, $fout, $ferr) = $rx->psql(0, $selftest->($qid, $token + 1, 0, '1', ''));
	isnt($fret, 0, 'forged token: the forger is never answered and gives up');
	ok($rx->poll_query_until(1,
		"SELECT value > $before->{wrong_token_dropped} FROM rdma_exchange.transport_stats() WHERE name = 'wrong_token_dropped'"),
		'forged token: member 1 dropped and counted the messages');
	($fret, $fout, $ferr) = $rx->psql(0, $selftest->($qid + 1, $token, 0, '1', ''));
	isnt($fret, 0, 'forged query: the forger is never answered and gives up');
	my $after = $rx->transport_counters(1);
	cmp_ok($after->{unknown_query_dropped} + $after->{early_control_dropped}, '>',
		$before->{unknown_query_dropped} + $before->{early_control_dropped},
		'forged query: member 1 dropped and counted the messages');
	$rx->safe_psql(0, 'ALTER SYSTEM RESET rdma_exchange.peer_timeout');
	$rx->safe_psql(0, 'SELECT pg_reload_conf()');
	sleep 1;

	is($rx->safe_psql(0, $selftest->($qid, $token, 0, '1', '')), '0|0',
		'forged: the real sender completes');
	$receiver->finish;
	is($rout, "50|0\n", 'forged: the receiver got exactly the real messages, intact');
	is($rerr, '', 'forged: no error on the receiver');
	check_healthy('after the forged messages');
}

$rx->teardown;
done_testing();
