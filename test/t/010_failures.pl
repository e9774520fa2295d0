# test/t/010_failures.pl: what a user sees when things go wrong during a
# distributed query, and that nothing is left behind afterwards: a member
# down before the query, statement_timeout, cancel, the coordinator's
# backend terminated, a member killed in the middle of a query.  After
# each case no fragment backend is running on any member and every buffer
# pool is back to its idle state.  RX_FAILURE_DESIGNS: transport designs the
# cancel and the kill run with once more, on the same cluster.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);
my $n  = $rx->nmembers;

# After an aborted query the buffers a peer may still read or write (semq_rd,
# semq_wr) wait rdma_exchange.peer_timeout before they are free again, and
# every check_clean() below waits for that.  On the host 5 s instead of the
# default 10 s; test/rdma's emulated members, 15 times slower, keep 10 s.
if ($rx->safe_psql(0, 'SHOW rdma_exchange.reliable_provider') ne 'verbs')
{
	for my $i (0 .. $n - 1)
	{
		$rx->safe_psql($i, "ALTER SYSTEM SET rdma_exchange.peer_timeout = '5s'");
		$rx->safe_psql($i, 'SELECT pg_reload_conf()');
	}
}

$rx->safe_psql(0, q{
	CREATE TABLE big (id int PRIMARY KEY, k int, pad text);
	INSERT INTO big SELECT i, i % 1000, md5(i::text) FROM generate_series(1, 60000) i;
	SELECT rdma_exchange.create_distributed_table('big', 'id');
	ANALYZE big;
});

# a query that keeps every member busy for a long time (about 10 s a member);
# its result is one row, which would be gathered by query (receive_query.c,
# tested at the end): these cases test the exchange's fragments
my $by_exchange = 'SET rdma_exchange.small_gather_rows = 0;';
my $slow_count = q{SELECT count(*) FROM big WHERE pg_sleep(0.0005) IS NOT NULL};
my $slow = "$by_exchange $slow_count";

my $fragments = $rx->fragments_sql;

# a restarted member, once its transport worker has opened its endpoints:
# before that (a moment on verbs, where the datagram endpoint publishes
# its name when it opens) exchanges with it fail with an error naming it
sub start_member_and_transport
{
	my ($i) = @_;
	$rx->start_member($i);
	ok($rx->poll_query_until($i, q{SELECT count(*) = 2 FROM rdma_exchange.transport_stats()
		WHERE name IN ('datagram_endpoints', 'reliable_endpoints') AND value > 0}),
		"member $i restarted, its transport endpoints open");
	return;
}

# the answer is right to begin with
is($rx->safe_psql(0, 'SELECT count(*), sum(k) FROM big'), '60000|29970000',
	'distributed count is right');
$rx->check_clean('after a query');

# statement_timeout stops every fragment
my ($ret, $out, $err) = $rx->psql(0, "SET statement_timeout = '1s'; $slow");
isnt($ret, 0, 'statement_timeout: query fails');
like($err, qr/canceling statement due to statement timeout/,
	'statement_timeout: the usual message');
$rx->check_clean('statement_timeout');

# a cancel on the coordinator cancels the fragments (design: the session
# sets it, as any user can; '' keeps the cluster's)
sub cancel_case
{
	my ($design) = @_;
	my $what = 'cancel' . ($design ne '' ? " ($design)" : '');
	my $set = $design ne '' ? "SET rdma_exchange.transport_design = $design; " : '';
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0,
		"SET application_name = 'rx_cancel_me'; $set$slow", \$stdout, \$stderr);
	ok($rx->poll_query_until(0, "SELECT ($fragments) > 0"),
		"$what: fragments are running");
	$rx->safe_psql(0, q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'rx_cancel_me'});
	$h->finish;
	like($stderr, qr/canceling statement due to user request/,
		"$what: the query reports the cancel");
	$rx->check_clean($what);
	return;
}
cancel_case('');

# the coordinator's own backend dies in the middle of a query (a client
# that vanished, pg_terminate_backend): the fragments on every member
# notice that their coordinator is gone and end, long before their query
# would (100 s a member at least: 20000 rows that sleep 5 ms each).  The
# bound, half of that, covers the checks of check_clean() too: each takes
# seconds in test/rdma's emulated guest when its CPUs are busy.
my $terminated_slow = 'SELECT count(*) FROM big WHERE pg_sleep(0.005) IS NOT NULL';
{
	my $slower = "$by_exchange $terminated_slow";
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0,
		"SET application_name = 'rx_terminate_me'; $slower", \$stdout, \$stderr);
	ok($rx->poll_query_until($_, "SELECT ($fragments) > 0"),
		"terminate: member $_ runs its fragment")
	  for 0 .. $n - 1;
	my $t0 = time;
	$rx->safe_psql(0, q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'rx_terminate_me'});
	$h->finish;
	like($stderr, qr/terminating connection due to administrator command/,
		'terminate: the client sees its session end');
	$rx->check_clean('coordinator terminated');
	cmp_ok(time - $t0, '<', 50,
		'terminate: the fragments ended long before their query would have');
}

# a member killed in the middle of a query: the coordinator reports it
# within seconds, naming the member, and the others stop their fragments;
# with the cluster's design (''), also a query while the member is down
sub kill_case
{
	my ($design) = @_;
	my $what = 'kill' . ($design ne '' ? " ($design)" : '');
	my $set = $design ne '' ? "SET rdma_exchange.transport_design = $design; " : '';
	my $victim = $n - 1;
	my $name = '127.0.0.1:' . $rx->member($victim)->port;
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0, "$set$slow", \$stdout, \$stderr);
	ok($rx->poll_query_until($victim, "SELECT ($fragments) > 0"),
		"$what: the victim runs its fragment");
	my $t0 = time;
	$rx->kill_member($victim);
	$h->finish;
	my $elapsed = time - $t0;
	like($stderr, qr/\Q$name\E/, "$what: the error names the member that died");
	cmp_ok($elapsed, '<', 30, "$what: the coordinator gives up within seconds");
	$rx->check_clean($what, $victim);

	if ($design eq '')
	{
		# a member down before the query: a clear error naming it
		my ($ret, $out, $err) = $rx->psql(0, 'SELECT count(*) FROM big');
		isnt($ret, 0, 'member down: query fails');
		like($err, qr/\Q$name\E/, 'member down: the error names the member');
		$rx->check_clean('member down', $victim);
	}

	start_member_and_transport($victim);
	is($rx->safe_psql(0, "$set$by_exchange SELECT count(*) FROM big"), '60000',
		"$what: the member back, queries work again");
	$rx->check_clean("$what: member back");
	return;
}
kill_case('');

# RX_FAILURE_DESIGNS: designs the cancel and the kill run with once more,
# on this cluster (test/rdma/verbs-tests.sh: every design on verbs, without
# a cluster and a load per design)
for my $design (split ' ', ($ENV{RX_FAILURE_DESIGNS} // ''))
{
	like($rx->safe_psql(0, "SET rdma_exchange.transport_design = $design; $by_exchange EXPLAIN $slow_count"),
		qr/Transport: \Q$design\E over /, "the slow count runs with $design");
	cancel_case($design);
	kill_case($design);
}

# What follows does not depend on the transport design: run-tests.sh's
# runs with a design of their own (RX_TEST_DESIGN) stop here.
if (($ENV{RX_TEST_DESIGN} // 'auto') ne 'auto')
{
	$rx->teardown;
	done_testing();
	exit 0;
}

# Members with parallel workers of their own (rdma_exchange.workers_per_member;
# min_parallel_table_scan_size, parallel_setup_cost and parallel_tuple_cost
# 0 give this table's shares workers too):
# cancel, a parallel worker killed on a member, a member killed; then no
# fragment, parallel worker or buffer is left anywhere.  (RX_FAILURE_WORKERS=0:
# not; test/rdma's guest, where they would test nothing of the transport.)
if ($ENV{RX_FAILURE_WORKERS} // 1)
{
	my $workers = 'SET rdma_exchange.workers_per_member = 2; SET min_parallel_table_scan_size = 0; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;';
	my $parallel_workers = q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'};
	my $no_workers_left = sub {
		my ($what, @skip) = @_;
		my %skip = map { $_ => 1 } @skip;
		for my $i (grep { !$skip{$_} } 0 .. $n - 1)
		{
			ok($rx->poll_query_until($i, "SELECT ($parallel_workers) = 0"),
				"$what: no parallel worker left on member $i");
		}
	};
	my $plan = $rx->safe_psql(0, "$workers $by_exchange EXPLAIN (COSTS OFF) $slow_count");
	like($plan, qr/Gather\n.*Workers Planned: 2\n.*Parallel Seq Scan on big/s,
		'workers: each member gathers its two workers\' share of the scan');
	is($rx->safe_psql(0, "$workers $by_exchange SELECT count(*), sum(k) FROM big"),
		'60000|29970000', 'workers: distributed count is right');
	like($rx->safe_psql(0, "$workers $by_exchange EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM big"),
		qr/Workers Launched: [1-9]/, 'workers: EXPLAIN ANALYZE shows the members\' workers launched');

	# cancel
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0,
		"SET application_name = 'rx_cancel_me'; $workers $slow", \$stdout, \$stderr);
	ok($rx->poll_query_until(1, "SELECT ($parallel_workers) > 0"),
		'workers, cancel: member 1 runs parallel workers');
	$rx->safe_psql(0, q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'rx_cancel_me'});
	$h->finish;
	like($stderr, qr/canceling statement due to user request/,
		'workers, cancel: the query reports the cancel');
	$rx->check_clean('workers, cancel');
	$no_workers_left->('workers, cancel');

	# a parallel worker of member 1 terminated
	my $name1 = '127.0.0.1:' . $rx->member(1)->port;
	($stdout, $stderr) = ('', '');
	$h = $rx->background_psql(0, "$workers $slow", \$stdout, \$stderr);
	ok($rx->poll_query_until(1, "SELECT ($parallel_workers) > 0"),
		'workers, worker killed: member 1 runs parallel workers');
	$rx->safe_psql(1, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE backend_type = 'parallel worker'");
	$h->finish;
	like($stderr, qr/\Q$name1\E/, 'workers, worker killed: the error names member 1');
	$rx->check_clean('workers, worker killed');
	$no_workers_left->('workers, worker killed');

	# a member killed
	my $victim = $n - 1;
	my $name = '127.0.0.1:' . $rx->member($victim)->port;
	($stdout, $stderr) = ('', '');
	$h = $rx->background_psql(0, "$workers $slow", \$stdout, \$stderr);
	ok($rx->poll_query_until($victim, "SELECT ($parallel_workers) > 0"),
		'workers, kill: the victim runs parallel workers');
	$rx->kill_member($victim);
	$h->finish;
	like($stderr, qr/\Q$name\E/, 'workers, kill: the error names the member that died');
	$rx->check_clean('workers, kill', $victim);
	$no_workers_left->('workers, kill', $victim);
	start_member_and_transport($victim);
	is($rx->safe_psql(0, "$workers $by_exchange SELECT count(*) FROM big"), '60000',
		'workers, kill: the member back, queries work again');
	$rx->check_clean('workers, kill: member back');
}

# The same failures when the small result is gathered by query: every
# other member runs its part over its connection (a fragment session, as
# above); this member's part runs in the coordinator's backend itself.
like($rx->safe_psql(0, "EXPLAIN $slow_count"), qr/Transport: none: each member runs the fragment as a query/,
	'by query: the slow count is gathered by query');
($ret, $out, $err) = $rx->psql(0, "SET statement_timeout = '1s'; $slow_count");
like($err, qr/canceling statement due to statement timeout/,
	'by query: statement_timeout stops the query');
$rx->check_clean('by query: statement_timeout');
{
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0,
		"SET application_name = 'rx_cancel_me'; $slow_count", \$stdout, \$stderr);
	ok($rx->poll_query_until($_, "SELECT ($fragments) > 0"),
		"by query, cancel: member $_ runs its part")
	  for 1 .. $n - 1;
	$rx->safe_psql(0, q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'rx_cancel_me'});
	$h->finish;
	like($stderr, qr/canceling statement due to user request/,
		'by query, cancel: the query reports the cancel');
	$rx->check_clean('by query: cancel');
}
{
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0,
		"SET application_name = 'rx_terminate_me'; $terminated_slow",
		\$stdout, \$stderr);
	ok($rx->poll_query_until($_, "SELECT ($fragments) > 0"),
		"by query, terminate: member $_ runs its part")
	  for 1 .. $n - 1;
	my $t0 = time;
	$rx->safe_psql(0, q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'rx_terminate_me'});
	$h->finish;
	$rx->check_clean('by query: coordinator terminated');
	cmp_ok(time - $t0, '<', 50,
		'by query, terminate: the members\' parts ended long before their query would have');
}
{
	my $victim = $n - 1;
	my $name = '127.0.0.1:' . $rx->member($victim)->port;
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0, $slow_count, \$stdout, \$stderr);
	ok($rx->poll_query_until($victim, "SELECT ($fragments) > 0"),
		'by query, kill: the victim runs its part');
	$rx->kill_member($victim);
	$h->finish;
	like($stderr, qr/\Q$name\E/, 'by query, kill: the error names the member that died');
	$rx->check_clean('by query: kill', $victim);
	start_member_and_transport($victim);
	# (a quick count, gathered by query as well: the slow one takes 10 s)
	like($rx->safe_psql(0, 'EXPLAIN SELECT count(*) FROM big'),
		qr/Transport: none: each member runs the fragment as a query/,
		'by query: the quick count is gathered by query too');
	is($rx->safe_psql(0, 'SELECT count(*) FROM big'), '60000',
		'by query: the member back, the query works');
	$rx->check_clean('by query: member back');
}

$rx->teardown;
done_testing();
