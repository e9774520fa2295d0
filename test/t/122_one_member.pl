# test/t/122_one_member.pl: a cluster of one member (planner/locus.c,
# planner.c rewrite_serial).  Its tables hold every row, so rows never
# change members: a join over what would be repartitioned inputs and a
# grouping by another column than the distribution column run as one
# parallel plan on the member, with no exchange but the one that brings
# the fragment's rows to the coordinator; a plan the rules cannot place
# on the members (a join with a table of this server only) reads the
# distributed table here instead of gathering it through the transport.
# Every answer is compared with the same query over plain copies.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 1);
$rx->safe_psql(0, q{
	CREATE TABLE ord (o_id int PRIMARY KEY, o_cust int, o_amount numeric(12,2));
	CREATE TABLE cust (c_id int PRIMARY KEY, c_region int, c_name text);
	INSERT INTO ord SELECT i, (i * 7) % 5000, (i % 1000) / 10.0 FROM generate_series(1, 60000) i;
	INSERT INTO cust SELECT i, i % 9, 'c' || i FROM generate_series(1, 4000) i;
	CREATE TABLE l_ord AS SELECT * FROM ord;
	CREATE TABLE l_cust AS SELECT * FROM cust;
	CREATE TABLE region_names (r int, name text);
	INSERT INTO region_names SELECT i, 'region ' || i FROM generate_series(0, 8) i;
	SELECT rdma_exchange.create_distributed_table('ord', 'o_id');
	SELECT rdma_exchange.create_distributed_table('cust', 'c_id');
	ANALYZE ord, cust, l_ord, l_cust, region_names;
});

# every part big enough for the member's two workers
my $settings = q{SET rdma_exchange.workers_per_member = 2;
	SET min_parallel_table_scan_size = 0; SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0;};

sub count_of { my ($re, $text) = @_; my @m = $text =~ /$re/g; return scalar @m; }

sub same_answer
{
	my ($label, $query) = @_;
	(my $local = $query) =~ s/\b(ord|cust)\b/l_$1/g;
	my $dist  = $rx->safe_psql(0, $settings . $query);
	my $plain = $rx->safe_psql(0, 'SET rdma_exchange.enable = off;' . $local);
	isnt($dist, '', "$label: rows returned");
	is($dist, $plain, "$label: same answer as the plain copies");
}

# a join on a column that is no table's distribution column, grouped by a
# third one: on two members both inputs and the groups would move
my $join = q{SELECT c_region, count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id
	GROUP BY c_region ORDER BY 1};
my $plan = $rx->safe_psql(0, $settings . "EXPLAIN (COSTS OFF) $join");
is(count_of(qr/Custom Scan \(SHUFFLE\)/, $plan), 1,
	'repartitioning join: one SHUFFLE, to the coordinator')
  or diag($plan);
is(count_of(qr/Custom Scan \(RECEIVE\)/, $plan), 1,
	'repartitioning join: one RECEIVE, on the coordinator');
like($plan, qr/Workers Planned: 2/, 'the member runs it with its workers');
same_answer('repartitioning join', $join);

same_answer('distinct values of another column',
	q{SELECT DISTINCT o_cust % 97 FROM ord ORDER BY 1});
same_answer('window over another column',
	q{SELECT o_cust, o_id, rank() OVER (PARTITION BY o_cust ORDER BY o_amount DESC, o_id)
	  FROM ord WHERE o_cust < 40 ORDER BY 1, 2});

# a table of this server only: the rules place nothing; the distributed
# table is read here, not gathered
my $with_local = q{SELECT name, count(*) FROM ord JOIN region_names ON o_cust % 9 = r
	GROUP BY name ORDER BY 1};
$plan = $rx->safe_psql(0, $settings . "EXPLAIN (COSTS OFF) $with_local");
unlike($plan, qr/RECEIVE|SHUFFLE/, 'join with a local table: no exchange')
  or diag($plan);
same_answer('join with a local table', $with_local);

$rx->teardown;
done_testing();
