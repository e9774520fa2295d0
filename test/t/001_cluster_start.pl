# test/t/001_cluster_start.pl: a 3-member cluster starts, every member runs
# exactly one transport worker, and every member knows all three members.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);

my $workers = "SELECT count(*) FROM pg_stat_activity "
  . "WHERE backend_type = 'rdma_exchange transport'";

for my $i (0 .. $rx->nmembers - 1)
{
	# the worker starts once recovery is finished, possibly just after
	# pg_ctl returned
	ok($rx->poll_query_until($i, "SELECT ($workers) > 0"),
		"member $i: transport worker started");
	is($rx->safe_psql($i, $workers), '1',
		"member $i: exactly one transport worker");
	is($rx->safe_psql($i, 'SELECT count(*) FROM rdma_exchange.nodes'), '3',
		"member $i: rdma_exchange.nodes shows 3 members");
}

$rx->teardown;
done_testing();
