# test/t/020_faults.pl: the datagram transport keeps results exact on a
# lossy network.  The fault injection settings make every member's
# transport worker drop, duplicate or reorder a share of the datagrams it
# receives; retransmission, duplicate suppression and in-order delivery
# per source must hide all of it.  Each case compares the distributed
# answer with the same query on a plain local copy, checks that the
# transport counters show the faults really happened (and were repaired),
# and that nothing is left running or held afterwards.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

# the faults are injected into datagrams: every exchange takes a datagram
# design, sesq_sr or the one run-tests.sh asks for (mesq_sr)
my $design =
  ($ENV{RX_TEST_DESIGN} // '') =~ /^[sm]esq_sr$/ ? $ENV{RX_TEST_DESIGN} : 'sesq_sr';
note "transport design $design";

# a short retransmit timeout keeps the lossy runs quick
my $rx = RxCluster->new(
	nmembers   => 3,
	extra_conf => [
		"rdma_exchange.retransmit_timeout = '20ms'",
		"rdma_exchange.transport_design = '$design'"
	]);
my $n = $rx->nmembers;

# wide rows (several per datagram and some larger than one) so that
# fragmentation and reassembly are exercised too
$rx->safe_psql(0, q{
	CREATE TABLE f (id int PRIMARY KEY, k int, pad text);
	INSERT INTO f SELECT i, (i * 37) % 20000, repeat(md5(i::text), 1 + i % 5)
	  FROM generate_series(1, 20000) i;
	UPDATE f SET pad = repeat(md5(id::text), 400) WHERE id % 1000 = 0;
	CREATE TABLE f_local AS SELECT * FROM f;
	SELECT rdma_exchange.create_distributed_table('f', 'id');
	CREATE TABLE f_bc (id int PRIMARY KEY, k int);
	INSERT INTO f_bc SELECT i, (i * 61) % 20000 FROM generate_series(1, 3000) i;
	CREATE TABLE f_local_bc AS SELECT * FROM f_bc;
	SELECT rdma_exchange.create_distributed_table('f_bc', 'id');
	ANALYZE f; ANALYZE f_local; ANALYZE f_bc; ANALYZE f_local_bc;
});

# a repartition join (f.k is not the distribution key), a many-groups
# aggregate and an ordered result; each answer is reduced to a digest
my %queries = (
	'repartition join' => q{
		SELECT md5(string_agg(a.id || ':' || b.id || ':' || length(b.pad), ',' ORDER BY a.id))
		FROM %s a JOIN %s b ON a.k = b.id},
	'many groups' => q{
		SELECT md5(string_agg(k || ':' || c || ':' || s, ',' ORDER BY k))
		FROM (SELECT k, count(*) AS c, sum(length(pad)) AS s FROM %s GROUP BY k) g},
	'wide rows in order' => q{
		SELECT md5(string_agg(md5(pad), ',' ORDER BY id)) FROM (SELECT id, pad FROM %s ORDER BY id) o},
	# the small side is broadcast: one datagram to every member
	'broadcast join' => q{
		SELECT md5(string_agg(a.id || ':' || b.id, ',' ORDER BY a.id, b.id))
		FROM %s a JOIN %s_bc b ON a.k = b.k},
);
like($rx->safe_psql(0, 'EXPLAIN (COSTS OFF) ' . sprintf($queries{'broadcast join'}, 'f', 'f')),
	qr/Route: broadcast/, 'the broadcast join broadcasts');

my %expected;
for my $q (sort keys %queries)
{
	$expected{$q} =
	  $rx->safe_psql(0, sprintf($queries{$q}, 'f_local', 'f_local'));
}

sub sum_counter
{
	my ($before, $after, $name) = @_;
	my $s = 0;
	$s += $after->[$_]{$name} - $before->[$_]{$name} for 0 .. $n - 1;
	return $s;
}

sub set_faults
{
	my (%f) = @_;
	for my $i (0 .. $n - 1)
	{
		my $node = $rx->member($i);
		for my $what (qw(drop duplicate reorder))
		{
			$rx->safe_psql($i, sprintf(
				'ALTER SYSTEM SET rdma_exchange.fault_%s_percent = %d',
				$what, $f{$what} // 0));
		}
		$rx->safe_psql($i, 'SELECT pg_reload_conf()');
	}
	# the transport worker reads the settings on its next loop
	for my $i (0 .. $n - 1)
	{
		$rx->poll_query_until($i,
			sprintf("SELECT current_setting('rdma_exchange.fault_drop_percent') = '%d'",
				$f{drop} // 0));
	}
	sleep 1;
}

sub run_case
{
	my ($case, $counter, %f) = @_;
	set_faults(%f);
	my @before = map { $rx->transport_counters($_) } 0 .. $n - 1;
	for my $q (sort keys %queries)
	{
		is($rx->safe_psql(0, sprintf($queries{$q}, 'f', 'f')),
			$expected{$q}, "$case: $q gives the single-server answer");
	}
	my @after = map { $rx->transport_counters($_) } 0 .. $n - 1;
	cmp_ok(sum_counter(\@before, \@after, $counter), '>', 0,
		"$case: $counter counted");
	$rx->check_clean($case);
	return (\@before, \@after);
}

# no faults: the baseline
for my $q (sort keys %queries)
{
	is($rx->safe_psql(0, sprintf($queries{$q}, 'f', 'f')),
		$expected{$q}, "no faults: $q gives the single-server answer");
}

# 5% of datagrams lost: the senders retransmit them
my ($b, $a) = run_case('5% dropped', 'fault_dropped', drop => 5);
cmp_ok(sum_counter($b, $a, 'retransmissions'), '>', 0,
	'5% dropped: lost datagrams were retransmitted');

# 5% delivered twice and 5% delivered late: the copies are dropped, the
# late ones put back in order
($b, $a) = run_case('5% duplicated and reordered', 'fault_duplicated',
	duplicate => 5, reorder => 5);
cmp_ok(sum_counter($b, $a, 'fault_reordered'), '>', 0,
	'5% duplicated and reordered: datagrams were reordered');
cmp_ok(sum_counter($b, $a, 'duplicates_dropped'), '>', 0,
	'5% duplicated and reordered: the copies were recognized and dropped');

# all three at once
run_case('drop, duplicate and reorder together', 'fault_dropped',
	drop => 3, duplicate => 3, reorder => 3);

set_faults();
is($rx->safe_psql(0, sprintf($queries{'many groups'}, 'f', 'f')),
	$expected{'many groups'}, 'faults off again: answers still right');

$rx->teardown;
done_testing();
