# test/t/100_two_phase.pl: a transaction that changes several members
# commits on all of them or on none, whatever fails in between.
#
# For each kind of multi-member write (INSERT and COPY routed to their
# owners, an UPDATE run on every member's part, run_on_all_nodes()) and each step of
# the two-phase commit (rdma_exchange.fault_commit: an error before
# PREPARE, this server crashing after the first member prepared, after
# all prepared, after its own commit, and COMMIT PREPARED never sent), the
# rows afterwards are all the transaction's or none of them, the same
# through every member, and within a bounded time no prepared transaction
# is left on any member (the recovery workers resolve them).  Also: a
# member that restarts while it holds a prepared transaction gets the
# decision afterwards, one-member writes do not prepare, and a member with
# max_prepared_transactions = 0 gives a clear error.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# a crashed member restarts by itself, as a production server does
my $rx = RxCluster->new(nmembers => 3, extra_conf => ['restart_after_crash = on']);
my $n = $rx->nmembers;

$rx->safe_psql(0, q{
	CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL);
	INSERT INTO acct SELECT i, 100 FROM generate_series(1, 300) i;
	SELECT rdma_exchange.create_distributed_table('acct', 'id');
	CREATE TABLE ins (id int, v int);
	SELECT rdma_exchange.create_distributed_table('ins', 'id');
	SELECT count(*) FROM rdma_exchange.run_on_all_nodes('CREATE TABLE plain_log (v int)');
	CREATE TABLE refc (id int PRIMARY KEY, v int NOT NULL);
	INSERT INTO refc SELECT i, 0 FROM generate_series(1, 600) i;
	SELECT rdma_exchange.create_reference_table('refc');
});

my $prepared_sql = q{SELECT count(*) FROM pg_prepared_xacts};

# every member's prepared transactions resolved, within 60 s
sub resolved
{
	my ($what) = @_;
	for my $i (0 .. $n - 1)
	{
		ok($rx->poll_query_until($i, "SELECT ($prepared_sql) = 0"),
			"$what: no prepared transaction left on member $i");
	}
	return;
}

# the coordinator (member 0) after a crash: accepting connections again.
# A psql started while the server restarts may die under IPC::Run with a
# broken pipe: that is a try, not a failure.
sub wait_up
{
	local $SIG{PIPE} = 'IGNORE';
	for (1 .. 1200)
	{
		my $up = eval { $rx->safe_psql(0, 'SELECT true') eq 't' };
		return if $up;
		usleep(100_000);
	}
	die 'member 0 did not come back';
}

# the same answer through every member
sub everywhere
{
	my ($sql, $expect, $what) = @_;
	is($rx->safe_psql($_, $sql), $expect, "$what (through member $_)") for 0 .. $n - 1;
	return;
}

my %writes = (
	'routed COPY' => {
		sql => q{COPY ins (id, v) FROM PROGRAM 'seq 1 200 | awk ''{print $1 ",%d"}''' WITH (FORMAT csv)},
		check => 'SELECT count(*) FROM ins WHERE v = %d',
		done => '200',
	},
	'routed INSERT' => {
		sql => 'INSERT INTO ins SELECT i, %d FROM generate_series(1, 200) i',
		check => 'SELECT count(*) FROM ins WHERE v = %d',
		done => '200',
	},
	'UPDATE on every member' => {
		sql => 'UPDATE acct SET balance = balance + %d',
		check => 'SELECT count(*) FROM acct WHERE balance = 100 + %d',
		done => '300',
		undo => 'UPDATE acct SET balance = 100',
	},
	# more rows than a member's queue of changes holds (remote_xact.c):
	# part of them go during the statement, the rest with the PREPARE
	'reference table UPDATE' => {
		sql => 'UPDATE refc SET v = %d',
		check => 'SELECT count(*) FROM refc WHERE v = %d',
		done => '600',
	},
	'run_on_all_nodes' => {
		sql => q{SELECT count(*) FROM rdma_exchange.run_on_all_nodes('INSERT INTO plain_log SELECT %d FROM generate_series(1, 10)')},
		check => q{SELECT sum(result::int) FROM rdma_exchange.run_on_all_nodes('SELECT count(*) FROM plain_log WHERE v = %d')},
		done => '30',
	},
);

my $tag = 0;
for my $kind (sort keys %writes)
{
	my $w = $writes{$kind};
	for my $fault (qw(none before_prepare crash_after_first_prepare
		crash_after_prepare crash_after_decision skip_commit_prepared))
	{
		$tag++;
		my $sql = sprintf($w->{sql}, $tag);
		my ($rc, $out, $err) = $rx->coordinator->psql($rx->dbname,
			"SET synchronous_commit = on;\nSET rdma_exchange.fault_commit = '$fault';\n$sql");
		wait_up() if $fault =~ /^crash/;
		# committed where the coordinator's own commit happened
		my $expect = ($fault =~ /^(none|crash_after_decision|skip_commit_prepared)$/)
		  ? $w->{done} : '0';
		resolved("$kind, $fault");
		everywhere(sprintf($w->{check}, $tag), $expect,
			"$kind, $fault: all of the transaction or none of it");
		$rx->safe_psql(0, $w->{undo}) if $w->{undo};
	}
}

# a member restarts while it holds a prepared transaction
$tag++;
$rx->safe_psql(0, "SET rdma_exchange.fault_commit = 'skip_commit_prepared';
	INSERT INTO ins SELECT i, $tag FROM generate_series(1, 200) i");
$rx->kill_member(2);
$rx->start_member(2);
resolved('member restarted with a prepared transaction');
everywhere("SELECT count(*) FROM ins WHERE v = $tag", '200',
	'member restarted: the transaction committed everywhere');

# one member written: one phase, nothing prepared (pg_stat of the members
# would not show it; the member's log would: check the catalog of
# decisions, which only two-phase commits write)
my $before = $rx->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.commit_decision');
my @key_on = map {
	$rx->safe_psql(0, "SELECT i FROM generate_series(1, 1000) i
		WHERE rdma_exchange.member_index_of(i) = $_ LIMIT 1")
} 0 .. $n - 1;
$rx->safe_psql(0, "INSERT INTO ins VALUES ($key_on[1], -1)");
is($rx->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.commit_decision'), $before,
	'a write on one other member alone commits in one phase');
$rx->safe_psql(0, "INSERT INTO ins VALUES ($key_on[1], -2), ($key_on[2], -2)");
my $decisions = $rx->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.commit_decision');
cmp_ok($decisions, '>', $before, 'a write on two members records a decision');

# A reference table's row changes are queued for the other members and
# go with the next command sent there (remote_xact.c): a savepoint rolled
# back drops its own, a released one sends them, the rest go at commit.
$rx->safe_psql(0, q{
	UPDATE refc SET v = 0;
	BEGIN;
	UPDATE refc SET v = 1 WHERE id = 1;
	SAVEPOINT a;
	UPDATE refc SET v = 2 WHERE id = 2;
	DELETE FROM refc WHERE id = 6;
	ROLLBACK TO a;
	SAVEPOINT b;
	UPDATE refc SET v = 3 WHERE id = 3;
	SAVEPOINT c;
	UPDATE refc SET v = 7 WHERE id = 7;
	ROLLBACK TO c;
	RELEASE b;
	DELETE FROM refc WHERE id = 4;
	COMMIT;
});
everywhere(q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM refc WHERE id <= 7},
	'1:1,2:0,3:3,5:0,6:0,7:0', 'queued reference changes: savepoints rolled back and released');

# pgbench's TPC-B-like transaction, three times in one session, through
# member 0 with the account on member 1: that member's session reads the
# account back (a direct query, in single-row mode) before its queued
# changes go with the history row, a pipeline whose first command then
# answered in single-row mode too.
my $acct = $rx->safe_psql(0, q{SELECT i FROM generate_series(1, 1000) i
	WHERE rdma_exchange.member_index_of(i) = 1 LIMIT 1});
my $tpcb = qq{BEGIN;
	UPDATE acct SET balance = balance + 1 WHERE id = $acct;
	SELECT balance FROM acct WHERE id = $acct;
	UPDATE refc SET v = v + 1 WHERE id = 20;
	UPDATE refc SET v = v + 1 WHERE id = 21;
	INSERT INTO ins VALUES ($acct, -20);
	COMMIT;};
$rx->safe_psql(0, "UPDATE refc SET v = 0 WHERE id IN (20, 21); $tpcb $tpcb $tpcb");
everywhere(q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM refc WHERE id IN (20, 21)},
	'20:3,21:3', 'a TPC-B-like transaction three times in one session: every copy changed');
everywhere('SELECT count(*) FROM ins WHERE v = -20', '3', '... and every history row there');

# A copy that differs (a row deleted on member 1 alone, as a member's own
# session may): the change cannot be applied there, and the error comes
# where the queue is sent: at COMMIT, or at the end of the PL/pgSQL block
# that made it, whose handler sees it.
$rx->member(1)->safe_psql($rx->dbname,
	"SET application_name = 'rdma_exchange'; DELETE FROM refc WHERE id = 10");
my ($rc, $out, $err) = $rx->coordinator->psql($rx->dbname,
	"BEGIN; UPDATE refc SET v = 10 WHERE id = 10; SELECT 1; COMMIT;");
like($err, qr/reference table .*refc.* differs on member/, 'a copy that differs: COMMIT fails, naming the member');
like($err, qr/copies with the same primary key/, '... and saying why');
everywhere('SELECT count(*) FROM refc WHERE v = 10', '0', 'a copy that differs: nothing committed');
is($rx->safe_psql(0, q{
	DO $$
	BEGIN
		BEGIN
			UPDATE refc SET v = 11 WHERE id = 10;
		EXCEPTION WHEN data_corrupted THEN
			RAISE NOTICE 'caught';
			UPDATE refc SET v = 12 WHERE id = 11;
		END;
	END $$;
	SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM refc WHERE id IN (10, 11);
}), '10:0,11:12', 'a copy that differs: the PL/pgSQL block that changed it catches the error');
everywhere('SELECT v FROM refc WHERE id = 11', '12', 'after the caught error the rest committed everywhere');

# The same on member 2, prepared after member 1: its queue is sent while
# member 1 prepares (remote_xact_end.c), so member 1 is already prepared
# when the error comes back, and is rolled back.
$rx->member(2)->safe_psql($rx->dbname,
	"SET application_name = 'rdma_exchange'; DELETE FROM refc WHERE id = 12");
($rc, $out, $err) = $rx->coordinator->psql($rx->dbname,
	"BEGIN; UPDATE refc SET v = 13 WHERE id = 12; UPDATE refc SET v = 13 WHERE id = 13; COMMIT;");
like($err, qr/reference table .*refc.* differs on member/,
	'a copy that differs on the member prepared last: COMMIT fails');
everywhere('SELECT count(*) FROM refc WHERE v = 13', '0', '... nothing committed');
is($rx->member($_)->safe_psql($rx->dbname, $prepared_sql), '0',
	"... no prepared transaction left on member $_") for 1 .. $n - 1;

# what recovery reports, and that nothing is in doubt now
is($rx->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.transactions_in_doubt'), '0',
	'nothing in doubt at the end');

# a member that cannot prepare
$rx->member(1)->append_conf('postgresql.conf', 'max_prepared_transactions = 0');
$rx->stop_member(1);
$rx->start_member(1);
($rc, $out, $err) = $rx->coordinator->psql($rx->dbname,
	'INSERT INTO ins SELECT i, -3 FROM generate_series(1, 100) i');
isnt($rc, 0, 'max_prepared_transactions = 0 on a member: the write fails');
like($err, qr/cannot take part in a two-phase commit/, '... with a clear error');
like($err, qr/max_prepared_transactions/, '... naming the setting');
everywhere('SELECT count(*) FROM ins WHERE v = -3', '0', 'max_prepared_transactions = 0: nothing written');
($rc, $out, $err) = $rx->coordinator->psql($rx->dbname, 'UPDATE refc SET v = -3 WHERE id = 1');
like($err, qr/cannot take part in a two-phase commit/, 'the same after queued reference changes');

$rx->check_clean('at the end');
$rx->teardown;
done_testing();
