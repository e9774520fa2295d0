# test/t/110_operations.pl: operating the cluster as one PostgreSQL server
# (issue 19).
#
#   - VACUUM and ANALYZE of a distributed table through one member reach
#     every member's part: each member's dead tuples are gone and each
#     has statistics for its part, as on a plain server for the whole
#     table, also with options and local tables named with it.
#   - lock_timeout applies to a lock wait on another member.
#   - Lock cycles through two and through three members: one transaction
#     gets "deadlock detected" within seconds, the others commit.
#   - LOCK TABLE through one member holds on every member: an INSERT
#     through another member waits for it.
#   - rdma_exchange.member_idle_timeout: a member closes the connections an
#     idle session keeps there; the session's next query replaces them.
#   - 6 sessions through 3 members updating the same rows of a reference
#     table: every update done, every copy the same.
#   - EXPLAIN ANALYZE of a forwarded UPDATE or DELETE shows the rows every
#     other member changed (text and JSON).
#   - The distinct count of the distribution column the planner uses is the
#     whole table's.
#   - Fragments appear in pg_stat_statements and pg_stat_activity of the
#     members under the query id and text of their statement.
#   - 20 client sessions through member 0 with member 2 at
#     max_connections = 20: every query works, a 21st session's too, and a
#     superuser can still log in to member 2 (conn_budget.c).
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
use JSON::PP;

my $rx = RxCluster->new(nmembers => 3,
	extra_conf => [ "shared_preload_libraries = 'pg_stat_statements,rdma_exchange'" ]);
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
$rx->safe_psql(0, 'DELETE FROM t WHERE id % 5 = 0; INSERT INTO loc VALUES (1)');
$rx->safe_psql(0, 'VACUUM (FREEZE, INDEX_CLEANUP on, PARALLEL 1) t, loc');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, q{SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 't'}), '0',
		"VACUUM with options of a distributed and a local table: member $i vacuumed its part");
}
is($rx->safe_psql(1, q{SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'loc'}), '0',
	'... and the local table is this member\'s alone');
$rx->safe_psql(0, 'ANALYZE t (v)');
my ($rc, $out, $err);

# ANALYZE in a transaction that holds locks on the members (its DDL, LOCK
# TABLE) runs there in the transaction's own sessions: in sessions of its
# own it waited for those locks for ever
($rc, $out, $err) = $rx->psql(1,
	"BEGIN;\nCREATE INDEX t_v ON t (v);\nANALYZE t;\nCOMMIT;", timeout => 120);
is($rc, 0, 'ANALYZE after CREATE INDEX in one transaction does not wait for its own locks')
  or diag($err);
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, q{SELECT count(*) FROM pg_indexes WHERE indexname = 't_v'}), '1',
		"... and the index is on member $i");
}
($rc, $out, $err) = $rx->psql(0,
	"BEGIN;\nLOCK TABLE t IN ACCESS EXCLUSIVE MODE;\nANALYZE t;\nCOMMIT;", timeout => 120);
is($rc, 0, 'ANALYZE after LOCK TABLE in one transaction') or diag($err);
# VACUUM in a transaction block: PostgreSQL's error, before any member ran it
($rc, $out, $err) = $rx->psql(0,
	"BEGIN;\nDROP INDEX t_v;\nVACUUM t;\nCOMMIT;", timeout => 120);
like($err, qr/VACUUM cannot run inside a transaction block/,
	'VACUUM in a transaction block that holds locks on the members: PostgreSQL\'s error');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, q{SELECT count(*) FROM pg_indexes WHERE indexname = 't_v'}), '1',
		"... and the rolled back DROP INDEX left the index on member $i");
}

# --- lock_timeout for a row lock on another member ------------------------------------
my $key = $rx->safe_psql(0, q{SELECT i FROM generate_series(1, 3000) i
	WHERE rdma_exchange.member_index_of(i) = 1 AND i % 3 <> 0 AND i % 5 <> 0 LIMIT 1});
my ($hout, $herr) = ('', '');
my $hold = $rx->background_psql(0,
	"BEGIN;\nUPDATE t SET v = v + 1 WHERE id = $key;\nSELECT pg_sleep(5);\nCOMMIT;\n",
	\$hout, \$herr);
sleep 2;
($rc, $out, $err) = $rx->psql(2,
	"SET lock_timeout = '300ms';\nUPDATE t SET v = v + 1 WHERE id = $key;");
isnt($rc, 0, 'lock_timeout: an UPDATE waiting for a row held through another member gives up');
like($err, qr/lock timeout/, '... with PostgreSQL\'s lock timeout error');
like($err, qr/member/, '... naming the member');
$hold->finish;
is($herr, '', 'the transaction holding the row commits');
is($rx->safe_psql(1, "SELECT v - id FROM t WHERE id = $key"), '1',
	'... and only its update happened');

# --- a lock cycle through two members ------------------------------------------------
# the first member's recovery worker looks for cycles; its launcher starts
# it within 30 s of the extension's creation
ok($rx->poll_query_until(0, q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE backend_type = 'rdma_exchange recovery' OR application_name = 'rdma_exchange recovery'}),
	'the recovery worker of member 0 runs');
my @k = map {
	$rx->safe_psql(0, "SELECT i FROM generate_series(1, 3000) i
		WHERE rdma_exchange.member_index_of(i) = $_ AND i % 3 <> 0 AND i % 5 <> 0 LIMIT 1")
} 0, 1;
my $v_before = $rx->safe_psql(0, "SELECT string_agg((v - id)::text, ',' ORDER BY id) FROM t WHERE id IN ($k[0], $k[1])");
my (@dout, @derr, @dh);
for my $s (0, 1)
{
	my ($first, $second) = $s == 0 ? @k : reverse @k;
	($dout[$s], $derr[$s]) = ('', '');
	$dh[$s] = $rx->background_psql($s,
		"BEGIN;\nUPDATE t SET v = v + 10 WHERE id = $first;\nSELECT pg_sleep(1.5);\n"
		  . "UPDATE t SET v = v + 10 WHERE id = $second;\nCOMMIT;\n",
		\$dout[$s], \$derr[$s]);
}
my $t0 = time;
$_->finish for @dh;
my $took = time - $t0;
my @lost = grep { $derr[$_] =~ /deadlock detected/ } 0, 1;
is(scalar @lost, 1, 'a lock cycle through members 0 and 1: one transaction gets "deadlock detected"')
  or diag("session 0: $derr[0]\nsession 1: $derr[1]");
my $won = $lost[0] // 0 ? 0 : 1;
is($derr[$won], '', '... the other one commits') or diag($derr[$won]);
like($derr[ $lost[0] // 1 ], qr/member/, '... the detail names the members');
cmp_ok($took, '<=', 12, "... within a few seconds (took $took s)");
is($rx->safe_psql(2, "SELECT string_agg((v - id)::text, ',' ORDER BY id) FROM t WHERE id IN ($k[0], $k[1])"),
	join(',', map { $_ + 10 } split /,/, $v_before),
	'... and only the winner\'s updates are there, through every member');

# --- a lock cycle through three members ----------------------------------------------
# the session through member s updates member s's row, then member s+1's
my @k3 = map {
	$rx->safe_psql(0, "SELECT i FROM generate_series(1, 3000) i
		WHERE rdma_exchange.member_index_of(i) = $_ AND i % 3 <> 0 AND i % 5 <> 0
		ORDER BY i DESC LIMIT 1")
} 0 .. 2;
my (@cout, @cerr, @ch);
for my $s (0 .. 2)
{
	($cout[$s], $cerr[$s]) = ('', '');
	$ch[$s] = $rx->background_psql($s,
		"BEGIN;\nUPDATE t SET v = v + 100 WHERE id = $k3[$s];\nSELECT pg_sleep(1.5);\n"
		  . "UPDATE t SET v = v + 100 WHERE id = $k3[($s + 1) % 3];\nCOMMIT;\n",
		\$cout[$s], \$cerr[$s]);
}
$t0 = time;
$_->finish for @ch;
$took = time - $t0;
my @lost3 = grep { $cerr[$_] =~ /deadlock detected/ } 0 .. 2;
is(scalar @lost3, 1, 'a lock cycle through members 0, 1 and 2: one transaction gets "deadlock detected"')
  or diag(join("\n", map { "session $_: $cerr[$_]" } 0 .. 2));
is(scalar(grep { $cerr[$_] eq '' } 0 .. 2), 2, '... the other two commit');
cmp_ok($took, '<=', 12, "... within a few seconds (took $took s)");

# --- LOCK TABLE holds on every member ----------------------------------------------
my ($lout, $lerr) = ('', '');
my $locker = $rx->background_psql(0,
	"BEGIN;\nLOCK TABLE t, loc IN SHARE MODE;\nSELECT 'first', count(*) FROM t;\n"
	  . "SELECT pg_sleep(3);\nSELECT 'second', count(*) FROM t;\nCOMMIT;\n",
	\$lout, \$lerr);
sleep 1;
my $t1 = time;
$rx->safe_psql(1, 'INSERT INTO t VALUES (100001, 1), (100002, 2), (100003, 3)');
my $waited = time - $t1;
$locker->finish;
is($lerr, '', 'LOCK TABLE t, loc IN SHARE MODE through member 0: no error');
my ($c1) = $lout =~ /^first\|(\d+)$/m;
my ($c2) = $lout =~ /^second\|(\d+)$/m;
is($c2, $c1, '... the count does not change under the lock');
cmp_ok($waited, '>=', 1, "... an INSERT through member 1 waited for it ($waited s)");
is($rx->safe_psql(2, 'SELECT count(*) FROM t WHERE id > 100000'), '3', '... and went in after it');

# --- idle member connections are closed, and replaced when needed ---------------------
my $long_idle = q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rdma_exchange'
	AND state = 'idle' AND state_change < now() - interval '1500 ms'};
my ($iout, $ierr) = ('', '');
my $idle = $rx->background_psql(0,
	"SET rdma_exchange.member_idle_timeout = '500ms';\nSELECT 'first', count(*) FROM t;\n"
	  . "SELECT pg_sleep(4);\nSELECT 'second', count(*) FROM t;\n",
	\$iout, \$ierr);
sleep 3;
my $kept = $rx->safe_psql(1, $long_idle);
$idle->finish;
is($kept, '0', 'member_idle_timeout: member 1 closed the idle connections of a waiting session');
is($ierr, '', '... and its next distributed query ran');
my ($i1) = $iout =~ /^first\|(\d+)$/m;
my ($i2) = $iout =~ /^second\|(\d+)$/m;
is($i2, $i1, '... with the same answer');

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

# --- concurrent writes to the same rows of a reference table ------------------------
# 6 sessions, 2 through each member, 100 single-row updates each on 3 rows:
# on one server they queue on the row locks; here too (ref_order.c)
$rx->safe_psql(0, q{
	CREATE TABLE ref (id int PRIMARY KEY, n int NOT NULL);
	SELECT rdma_exchange.create_reference_table('ref');
	INSERT INTO ref VALUES (1, 0), (2, 0), (3, 0);
});
my $refscript = PostgreSQL::Test::Utils::tempdir() . '/ref_update.sql';
open(my $rf, '>', $refscript) or die;
print $rf "\\set id random(1, 3)\nUPDATE ref SET n = n + 1 WHERE id = :id;\n";
close $rf;
my @benches;
for my $i (0 .. $n - 1)
{
	my ($bout, $berr) = ('', '');
	local $ENV{PGOPTIONS} = '-c statement_timeout=60s';
	push @benches, [ IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-t', '100', '-f', $refscript,
		  $rx->member($i)->connstr($rx->dbname) ],
		'<', \undef, '>', \$bout, '2>', \$berr), \$bout, \$berr, $i ];
}
for my $bench (@benches)
{
	my ($bh, $bout, $berr, $i) = @$bench;
	$bh->finish;
	like($$bout, qr/number of transactions actually processed: 200\/200/,
		"reference-table updates through member $i: all 200 done");
	unlike($$berr, qr/ERROR|deadlock|timeout/, "... no error") or diag($$berr);
}
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, 'SET rdma_exchange.enable = off; SELECT sum(n), count(*) FROM ref'),
		'600|3', "member ${i}'s copy of the reference table has every update");
}
my %refn = map { split /\|/ } split /\n/,
  $rx->safe_psql(0, 'SELECT id, n FROM ref ORDER BY id');

# --- the write order of a reference table is per member ---------------------------
# while a transaction through member 1 holds a change to row 1: a writer of
# another row through member 1 goes ahead (they meet on the rows of member
# 1's copy, as on one server); a writer through member 2 queues behind it
# (ref_order.c), here until its lock_timeout
{
	my ($hout, $herr) = ('', '');
	my $hold = $rx->background_psql(1,
		"BEGIN;\nUPDATE ref SET n = n + 1 WHERE id = 1;\nSELECT pg_sleep(4);\nCOMMIT;\n",
		\$hout, \$herr);
	sleep 1.5;
	my ($rc1, $out1, $err1) = $rx->psql(1,
		"SET lock_timeout = '2s';\nUPDATE ref SET n = n + 10 WHERE id = 2;");
	is($rc1, 0, 'a write to another row of a reference table through the same member does not wait')
	  or diag($err1);
	my ($rc2, $out2, $err2) = $rx->psql(2,
		"SET lock_timeout = '300ms';\nUPDATE ref SET n = n + 100 WHERE id = 3;");
	like($err2, qr/lock timeout/, 'a write through another member queues behind it');
	$hold->finish;
	is($herr, '', 'the transaction holding row 1 commits');
	for my $i (0 .. $n - 1)
	{
		is($rx->safe_psql($i, 'SET rdma_exchange.enable = off; SELECT string_agg(id || \':\' || n, \',\' ORDER BY id) FROM ref'),
			'1:' . ($refn{1} + 1) . ',2:' . ($refn{2} + 10) . ',3:' . $refn{3},
			"member ${i}'s copy has both updates and not the one that timed out");
	}
}

# --- a forwarded write's error caught by an exception block ---------------------------
# member 1's copy of ref refuses n >= 1000 (a constraint there only): a
# transaction whose first command there fails (sent with its BEGIN, in one
# round trip) and is caught goes on and commits its other writes on every
# member; so do one-row INSERTs whose owners refuse them
$rx->safe_psql(1, q{SET rdma_exchange.propagate_ddl = off;
	ALTER TABLE ref ADD CONSTRAINT member1_only CHECK (n < 1000)});
$rx->safe_psql(0, q{
	CREATE TABLE dw (id int PRIMARY KEY, n int NOT NULL CHECK (n < 1000));
	SELECT rdma_exchange.create_distributed_table('dw', 'id');
});
my ($caught_rc, $caught_out, $caught_err) = $rx->psql(0, q{
DO $$ BEGIN
	BEGIN
		UPDATE ref SET n = 5000 WHERE id = 3;
	EXCEPTION WHEN check_violation THEN RAISE NOTICE 'caught on member 1';
	END;
	UPDATE ref SET n = n + 1 WHERE id = 3;
END $$;
DO $$ BEGIN
	FOR k IN 1 .. 30 LOOP
		BEGIN
			INSERT INTO dw VALUES (k, 5000);
		EXCEPTION WHEN check_violation THEN NULL;
		END;
		INSERT INTO dw VALUES (k, k);
	END LOOP;
END $$;
SELECT count(*), sum(n) FROM dw;});
like($caught_err, qr/caught on member 1/, 'a reference row change refused by member 1 is caught');
is($caught_out, '30|465', '... and one-row INSERTs refused by their owners too; the rest commits');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, 'SET rdma_exchange.enable = off; SELECT n FROM ref WHERE id = 3'),
		$refn{3} + 1, "member ${i}'s copy has the change made after the caught error");
}
$rx->safe_psql(1, q{SET rdma_exchange.propagate_ddl = off;
	ALTER TABLE ref DROP CONSTRAINT member1_only});

# statements changing thousands of rows of a reference table (a prepared
# statement per row on every other member): every copy gets all of them
$rx->safe_psql(0, q{
	CREATE TABLE refbig (id int PRIMARY KEY, n int NOT NULL);
	SELECT rdma_exchange.create_reference_table('refbig');
	INSERT INTO refbig SELECT i, 0 FROM generate_series(1, 3000) i;
});
$rx->safe_psql(1, 'UPDATE refbig SET n = n + id');
$rx->safe_psql(2, 'DELETE FROM refbig WHERE id > 2000');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, 'SET rdma_exchange.enable = off; SELECT count(*), sum(n) FROM refbig'),
		'2000|2001000', "member ${i}'s copy has every row of a 3000-row UPDATE and a 1000-row DELETE");
}

# --- EXPLAIN ANALYZE of a forwarded UPDATE --------------------------------------------
my $matching = $rx->safe_psql(0, 'SELECT count(*) FROM t WHERE v % 2 = 0');
my $explain = $rx->safe_psql(0, q{BEGIN;
	EXPLAIN (ANALYZE, COSTS off, TIMING off) UPDATE t SET v = v + 1 WHERE v % 2 = 0;
	ROLLBACK});
my ($local) = $explain =~ /^\s*->.*Scan on t.*rows=(\d+)/m;
my @others = $explain =~ /^\s+Member \d+: (\d+)$/mg;
is(scalar @others, $n - 1, 'EXPLAIN ANALYZE UPDATE: the rows changed on every other member')
  or diag($explain);
is($local + eval { my $s = 0; $s += $_ for @others; $s }, $matching,
	'... with this member\'s, every row the UPDATE changed');
my $json = $rx->safe_psql(0, q{BEGIN;
	EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM t WHERE v % 2 = 0;
	ROLLBACK});
my $parsed = eval { JSON::PP::decode_json($json) };
ok(defined $parsed && ref $parsed eq 'ARRAY' && @$parsed == 2
	&& scalar @{ $parsed->[1]{'Rows Changed on Other Members'} } == $n - 1,
	'EXPLAIN (ANALYZE, FORMAT JSON) DELETE: valid JSON with the other members\' rows')
  or diag($json);

# --- statistics the coordinator plans with ------------------------------------------
# 300 distinct values of the distribution column, 100 on each member: the
# planner expects 300 groups, as a plain server's statistics would say
$rx->safe_psql(0, q{
	CREATE TABLE g (k int, x int);
	SELECT rdma_exchange.create_distributed_table('g', 'k');
	INSERT INTO g SELECT i % 300, i FROM generate_series(1, 30000) i;
	ANALYZE g;
});
my ($groups) = $rx->safe_psql(1, 'EXPLAIN SELECT k, count(*) FROM g GROUP BY k') =~ /rows=(\d+)/;
cmp_ok($groups, '>=', 200, "the planner expects the whole table's groups of the distribution column ($groups)");
cmp_ok($groups, '<=', 450, '... not more');

# --- fragments under their statement's query id and text ----------------------------
for my $i (0 .. $n - 1)
{
	$rx->safe_psql($i, 'CREATE EXTENSION pg_stat_statements; SELECT pg_stat_statements_reset()');
}
$rx->safe_psql(0, 'SELECT v % 7, count(*) FROM t WHERE v > 10 GROUP BY 1 ORDER BY 1') for 1 .. 2;
my ($sh_out, $sh_err) = ('', '');
my $slow = $rx->background_psql(0,
	'SELECT count(*) FROM t WHERE pg_sleep(0.003) IS NOT NULL;', \$sh_out, \$sh_err);
$rx->poll_query_until(1, q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE application_name = 'rdma_exchange' AND query LIKE '%pg_sleep(0.003)%'})
  or diag('no fragment of the slow query in pg_stat_activity of member 1');
my $activity = $rx->safe_psql(1, q{SELECT query_id, query FROM pg_stat_activity
	WHERE application_name = 'rdma_exchange' AND query LIKE '%pg_sleep(0.003)%' LIMIT 1});
$slow->finish;
my $qid = $rx->safe_psql(0, q{SELECT queryid FROM pg_stat_statements
	WHERE query LIKE '%FROM t WHERE v > % GROUP BY%'});
like($qid, qr/^-?\d+$/, 'the coordinator has the query in pg_stat_statements');
for my $i (1 .. $n - 1)
{
	like($rx->safe_psql($i, "SELECT calls, query FROM pg_stat_statements WHERE queryid = $qid"),
		qr/^2\|\/\* rdma_exchange fragment of member .* \*\/ SELECT v % 7, count\(\*\) FROM t WHERE v > 10/,
		"member $i: the query's fragments in pg_stat_statements under its query id and text, both calls");
}
my $slow_qid = $rx->safe_psql(0, q{SELECT queryid FROM pg_stat_statements
	WHERE query LIKE '%pg_sleep%' AND query NOT LIKE '%pg_stat%'});
like($activity, qr/^\Q$slow_qid\E\|\/\* rdma_exchange fragment of member .*pg_sleep\(0\.003\)/,
	'pg_stat_activity of member 1: a running fragment under its query\'s id and text');

# --- connections: 20 client sessions through member 0, member 2 at max_connections 20 ---
# member 0 derives its budget for member 2 from member 2's limits when it
# first connects there (both restarted: the budget is remembered)
my $count_t = $rx->safe_psql(1, 'SELECT count(*) FROM t');
$rx->member(2)->append_conf('postgresql.conf', 'max_connections = 20');
$rx->restart_member(2);
$rx->restart_member(0);
my @clients;
for my $c (1 .. 20)
{
	my ($cout, $cerr) = ('', '');
	push @clients, [ $rx->background_psql(0,
		"SELECT 'q', count(*) FROM t;\nSELECT pg_sleep(8);\n", \$cout, \$cerr), \$cout, \$cerr ];
}
$rx->poll_query_until(0, q{SELECT count(*) = 20 FROM pg_stat_activity
	WHERE query = 'SELECT pg_sleep(8);'}) or diag('the 20 sessions did not all get to their sleep');
my $member_conns = $rx->safe_psql(2, q{SELECT count(*) FROM pg_stat_activity
	WHERE application_name = 'rdma_exchange'});
is($rx->safe_psql(0, 'SELECT count(*) FROM t'), $count_t,
	'20 client sessions on member 0 used member 2: a 21st session\'s query works');
is($rx->member(2)->safe_psql($rx->dbname, 'SELECT 1'), '1',
	'... and a superuser still logs in to member 2 directly');
cmp_ok($member_conns, '<=', 8, "... member 0's sessions keep a bounded number of connections there ($member_conns)");
for my $c (@clients)
{
	my ($ch, $cout, $cerr) = @$c;
	$ch->finish;
	like($$cout, qr/^q\|$count_t$/m, 'a client session\'s query through member 0');
	is($$cerr, '', '... without error');
}

$rx->check_clean('at the end');
done_testing();
