# test/t/118_direct.pl: direct dispatch as clients meet it (issue 18,
# planner/direct.c and exec/direct.c), entering through every member.
#
#   - psycopg2 (test/clients/direct.py, run against a plain server and
#     through each member, every line compared): key lookups with the key
#     bound by the driver, for keys on every member, keys with no rows and
#     a NULL key, a join with a reference table, a PL/pgSQL function
#     taking the key, an = ANY(array) list, a server-side prepared
#     statement past its custom plans, named cursors fetched in batches,
#     and a transaction that updates and deletes a row and reads it back
#     before rolling back.
#   - psql: a generic plan of a prepared statement reports at execution
#     which member it ran on; an UPDATE by key changes the row on its
#     owner only (EXPLAIN ANALYZE counts rows per member).
#   - A point lookup whose key is on another member, in a new session,
#     opens a connection to that member only.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tables = q{
	CREATE TABLE acct (id int PRIMARY KEY, v int, note text);
	INSERT INTO acct SELECT g, g * 3, 'n' || (g % 11) FROM generate_series(1, 3000) g;
	CREATE TABLE ref (id int PRIMARY KEY, name text);
	INSERT INTO ref SELECT g, 'r' || g FROM generate_series(0, 9) g;
};
my $functions = q{
	CREATE FUNCTION balance(k int) RETURNS int LANGUAGE plpgsql AS $$
	DECLARE x int;
	BEGIN
		SELECT v INTO x FROM acct WHERE id = k;
		RETURN x;
	END $$;
};

my $rx = RxCluster->new(nmembers => 3);
my $n  = $rx->nmembers;
$rx->safe_psql(0, $tables . q{
	SELECT rdma_exchange.create_distributed_table('acct', 'id');
	SELECT rdma_exchange.create_reference_table('ref');
	ANALYZE acct, ref;
});
$rx->safe_psql($_, $functions) for 0 .. $n - 1;

my $single = PostgreSQL::Test::Cluster->new('direct_single');
$single->init;
$single->append_conf('postgresql.conf', "listen_addresses = '127.0.0.1'\nlc_messages = 'C'\n");
$single->start;
$single->safe_psql('postgres', $tables . $functions);

# --- psycopg2, through every member ------------------------------------------------
my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
my $script = "$FindBin::RealBin/../clients/direct.py";

sub run_client
{
	my ($port) = @_;
	my $output = '';
	my $ok = eval {
		IPC::Run::run([ $python, $script, '127.0.0.1', 'postgres', $port ],
			'<', \undef, '>&', \$output, IPC::Run::timeout(120));
	};
	return $ok ? $output : "client failed: $@\n$output";
}

my $want = run_client($single->port);
like($want, qr/^point 1: \[\(1, 3, 'n1'\)\]$/m, 'the plain server answers the client');
for my $m (0 .. $n - 1)
{
	my $got = run_client($rx->member($m)->port);
	my @w = split /\n/, $want;
	my @g = split /\n/, $got;
	is(scalar @g, scalar @w, "through member $m: as many answers as the plain server");
	my @diff = grep { ($w[$_] // '') ne ($g[$_] // '') } 0 .. $#w;
	is(scalar @diff, 0, "through member $m: every answer the plain server's")
	  or diag(join("\n", map { "want: $w[$_]\ngot:  " . ($g[$_] // '') } @diff[0 .. ($#diff < 4 ? $#diff : 4)]));
}

# --- generic plans choose the member at execution ----------------------------------
my @owner = map { $rx->safe_psql(0, "SELECT rdma_exchange.member_index_of($_)") } 1 .. 12;
my ($remote_key) = grep { $owner[ $_ - 1 ] == 2 } 1 .. 12;
my ($local_key) = grep { $owner[ $_ - 1 ] == 1 } 1 .. 12;
my $explain = $rx->safe_psql(1, qq{
	SET plan_cache_mode = force_generic_plan;
	PREPARE p(int) AS SELECT v FROM acct WHERE id = \$1;
	EXPLAIN (COSTS OFF) EXECUTE p($remote_key);
	EXPLAIN (COSTS OFF) EXECUTE p($local_key);
	EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE p($remote_key);
});
like($explain, qr/Custom Scan \(DIRECT\)\n\s+Runs On: member 2 \([^)]+\), the owner of the distribution key's value, chosen at execution/,
	'generic plan: the key of member 2 runs there');
like($explain, qr/Runs On: member 1 \([^)]+\), this one, the owner of the distribution key's value, chosen at execution/,
	'generic plan: the key of member 1 runs here');
like($explain, qr/Rows Received: 1/, 'EXPLAIN ANALYZE: the row came from the member');

# --- UPDATE by key: the owner only -------------------------------------------------
my $update = $rx->safe_psql(0, qq{
	BEGIN;
	EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) UPDATE acct SET v = v + 1 WHERE id = $remote_key;
	ROLLBACK;
});
like($update, qr/Member 2: 1/, 'UPDATE by key: the owner changed the row') or diag($update);
unlike($update, qr/Member 1: \d/, 'UPDATE by key: the statement did not go to member 1')
  or diag($update);

# --- connections: only to the key's owner ------------------------------------------
# member sessions are those named rdma_exchange; count them on members 1
# and 2 while a new session through member 0 has looked a key of member 2
# up and waits
my $sessions = q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rdma_exchange'};
sleep 1;
my @before = map { $rx->safe_psql($_, $sessions) } 0 .. $n - 1;
my ($bg_out, $bg_err) = ('', '');
my $bg = $rx->background_psql(0,
	"SELECT v FROM acct WHERE id = $remote_key;\nSELECT pg_sleep(4);\n", \$bg_out, \$bg_err);
ok($rx->poll_query_until(2, "SELECT ($sessions) > $before[2]"),
	'the lookup opened a connection to member 2, the owner of its key');
is($rx->safe_psql(1, $sessions), $before[1], '... and none to member 1');
$bg->finish;
is($bg_err, '', '... and answered');

done_testing();
