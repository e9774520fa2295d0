# test/t/110_operations.pl: operating the cluster as one PostgreSQL server
# (issue 19, the parts built so far).
#
#   - VACUUM and ANALYZE of a distributed table through one member reach
#     every member's part: each member's dead tuples are gone and each
#     has statistics for its part, as on a plain server for the whole
#     table; a statement naming distributed and local tables is refused.
#   - A member restarted while a client session is idle: the session's
#     next distributed query works (its kept connections to that member
#     are replaced), and gives the same answer as before.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);
my $n = $rx->nmembers;

$rx->safe_psql(0, q{
	CREATE TABLE t (id int PRIMARY KEY, v int);
	INSERT INTO t SELECT i, i FROM generate_series(1, 3000) i;
	SELECT rdma_exchange.create_distributed_table('t', 'id');
	CREATE TABLE loc (id int);
});

# --- VACUUM and ANALYZE through member 1 --------------------------------------
$rx->safe_psql(1, 'DELETE FROM t WHERE id % 3 = 0');
$rx->safe_psql(1, 'VACUUM t');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, q{SELECT last_vacuum IS NOT NULL, n_dead_tup
		FROM pg_stat_user_tables WHERE relname = 't'}), 't|0',
		"VACUUM t through member 1: member $i vacuumed its part, no dead tuples left");
}
$rx->safe_psql(2, 'ANALYZE t');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, q{SELECT last_analyze IS NOT NULL,
		(SELECT count(*) > 0 FROM pg_stats WHERE tablename = 't')
		FROM pg_stat_user_tables WHERE relname = 't'}), 't|t',
		"ANALYZE t through member 2: member $i has statistics of its part");
}
$rx->safe_psql(0, 'VACUUM (ANALYZE, VERBOSE false) t');
is($rx->safe_psql(2, q{SELECT count(*) FROM t}), '2000', 'the rows after VACUUM');
my ($rc, $out, $err) = $rx->psql(0, 'VACUUM t, loc');
isnt($rc, 0, 'VACUUM of a distributed and a local table together is refused');
like($err, qr/names both distributed and local objects/, '... with a clear error');
is($rx->safe_psql(0, 'VACUUM loc; SELECT 1'), '1', 'VACUUM of a local table stays local');

# --- a member restarted under an idle session -------------------------------------
my ($sout, $serr) = ('', '');
my $h = $rx->background_psql(0, q{
	SELECT 'before', count(*), sum(v) FROM t;
	SELECT pg_sleep(6);
	SELECT 'after', count(*), sum(v) FROM t;
}, \$sout, \$serr);
sleep 2;
$rx->restart_member(2);
$h->finish;
is($serr, '', 'member 2 restarted while the session was idle: no error');
my ($before) = $sout =~ /^before\|(.*)$/m;
my ($after) = $sout =~ /^after\|(.*)$/m;
ok(defined $after, '... the next distributed query ran') or diag($sout);
is($after, $before, '... with the same answer');

$rx->check_clean('at the end');
done_testing();
