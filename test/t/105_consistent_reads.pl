# test/t/105_consistent_reads.pl: distributed queries see one consistent
# cluster while distributed transactions commit.
#
# Sessions move money between accounts spread over all members (each
# transfer a two-phase commit over two or three members, entering through
# different members, and writing a ledger row), while other sessions
#   - sum every balance with one distributed query, again and again,
#     through every member (through member 1 by bitmap scans, through
#     member 2 with parallel workers on every member): every sum
#     is the starting total, and every account's balance agrees with the
#     ledger in the same query;
#   - run two distributed queries in one REPEATABLE READ transaction:
#     both see the same rows (the ledger grows meanwhile);
#   - dump both tables with pg_dump (a REPEATABLE READ transaction whose
#     COPYs are distributed queries) and restore them into a plain
#     server: the restored accounts hold the total and agree with the
#     restored ledger, so the dump is one moment of the cluster.
# With rdma_exchange.consistent_reads = off the sums do go wrong (each
# member's fragment then takes its own snapshot); that is reported, not
# asserted, since it depends on timing.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $rx = RxCluster->new(nmembers => 3);
my $n = $rx->nmembers;
my $naccounts = 600;
my $total = $naccounts * 1000;

$rx->safe_psql(0, qq{
	CREATE TABLE acct (id int PRIMARY KEY, bal bigint NOT NULL);
	INSERT INTO acct SELECT i, 1000 FROM generate_series(1, $naccounts) i;
	SELECT rdma_exchange.create_distributed_table('acct', 'id');
	CREATE TABLE ledger (src int NOT NULL, dst int NOT NULL, amt int NOT NULL);
	SELECT rdma_exchange.create_distributed_table('ledger', 'src');
});

# accounts whose balance does not follow from the ledger, in one query
my $mismatch_sql = q{SELECT count(*) FROM acct a
	LEFT JOIN (SELECT id, sum(d) AS d
	           FROM (SELECT src AS id, -amt AS d FROM ledger
	                 UNION ALL SELECT dst, amt FROM ledger) x
	           GROUP BY id) l USING (id)
	WHERE a.bal <> 1000 + coalesce(l.d, 0)};

# transfers in id order (no deadlock between them), with a ledger row
my $dir = PostgreSQL::Test::Utils::tempdir();
my $script = "$dir/transfer.sql";
open(my $fh, '>', $script) or die "$script: $!";
print $fh <<"EOF";
\\set x random(1, $naccounts)
\\set y random(1, $naccounts)
\\set a least(:x, :y)
\\set b greatest(:x, :y)
\\set amt random(1, 50)
BEGIN;
UPDATE acct SET bal = bal - :amt WHERE id = :a;
UPDATE acct SET bal = bal + :amt WHERE id = :b;
INSERT INTO ledger VALUES (:a, :b, :amt);
COMMIT;
EOF
close $fh;

# writers for the given seconds, through members 1 and 2
sub start_writers
{
	my ($seconds) = @_;
	my @h;
	for my $i (1, 2)
	{
		my ($out, $err) = ('', '');
		push @h, [ IPC::Run::start(
			[ 'pgbench', '-n', '-c', '2', '-T', $seconds, '-f', $script,
			  $rx->member($i)->connstr($rx->dbname) ],
			'<', \undef, '>', \$out, '2>', \$err), \$out, \$err, $i ];
	}
	return @h;
}

sub finish_writers
{
	my (@h) = @_;
	for my $w (@h)
	{
		my ($h, $out, $err, $i) = @$w;
		$h->finish;
		like($$out, qr/number of failed transactions: 0 /,
			"writers through member $i: every transfer committed");
		unlike($$err, qr/aborted|ERROR/, "writers through member $i: no error")
		  or diag($$err);
	}
	return;
}

# --- sums while transfers commit ------------------------------------------
my @writers = start_writers(25);
my $queries = 60;
my @readers;
for my $i (0 .. $n - 1)
{
	my ($out, $err) = ('', '');
	my $sql = "SELECT 'sum', sum(bal) FROM acct;\nSELECT 'mismatch', ($mismatch_sql);\n" x $queries;
	# through member 0 also two small gathers in one query, which go out
	# in one round trip and take the cluster snapshot with them: both
	# halves must come from the same moment
	$sql .= ("SELECT 'halves', (SELECT sum(bal) FROM acct WHERE id % 2 = 0)"
		. " + (SELECT sum(bal) FROM acct WHERE id % 2 = 1);\n") x $queries
	  if $i == 0;
	# through member 1 by bitmap scans, which PostgreSQL opens with the
	# statement's snapshot when the plan starts: this member's part, run
	# in the reader's backend, must read with its share of the cluster's
	$sql = "SET enable_seqscan = off;\nSET enable_indexscan = off;\nSET enable_indexonlyscan = off;\n"
	  . "SELECT 'sum', sum(bal) FROM acct WHERE id > 0;\nSELECT 'mismatch', ($mismatch_sql);\n" x $queries
	  if $i == 1;
	# through member 2 with two parallel workers on every member, through
	# the transport, the workers reading every row (a leader would read a
	# table this small alone before they start): they must read with their
	# member's share of the cluster snapshot too
	$sql = "SET rdma_exchange.workers_per_member = 2;\nSET min_parallel_table_scan_size = 0;\nSET parallel_setup_cost = 0;\nSET parallel_tuple_cost = 0;\n"
	  . "SET parallel_leader_participation = off;\n"
	  . "SET rdma_exchange.small_gather_rows = 0;\n" . $sql
	  if $i == 2;
	push @readers, [ $rx->background_psql($i, $sql, \$out, \$err), \$out, \$err, $i ];
}

# --- one REPEATABLE READ transaction, two queries, writers in between -------
my ($rr_out, $rr_err) = ('', '');
my $rr = $rx->background_psql(1, qq{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT count(*), sum(amt) FROM ledger;
	SELECT pg_sleep(2);
	SELECT count(*), sum(amt) FROM ledger;
	SELECT sum(bal) FROM acct;
	COMMIT;
	SELECT count(*) FROM ledger;
}, \$rr_out, \$rr_err);

# --- pg_dump of both tables while transfers commit --------------------------
sleep 3;
my $dump = "$dir/bank.sql";
my ($dump_out, $dump_err) = ('', '');
my $dumped = IPC::Run::run(
	[ 'pg_dump', '--data-only', '-t', 'acct', '-t', 'ledger', '-f', $dump,
	  '-d', $rx->member(2)->connstr($rx->dbname) ],
	'<', \undef, '>', \$dump_out, '2>', \$dump_err);
ok($dumped, 'pg_dump while transfers commit') or diag($dump_err);

for my $r (@readers)
{
	my ($h, $out, $err, $i) = @$r;
	$h->finish;
	is($$err, '', "readers through member $i: no error");
	my @sums = ($$out =~ /^sum\|(\d+)$/mg);
	my @mismatches = ($$out =~ /^mismatch\|(\d+)$/mg);
	is(scalar @sums, $queries, "readers through member $i: $queries sums");
	is(scalar(grep { $_ != $total } @sums), 0,
		"through member $i: every sum while transfers commit is the total $total")
	  or diag(join(' ', @sums));
	is(scalar(grep { $_ != 0 } @mismatches), 0,
		"through member $i: every balance agrees with the ledger in the same query")
	  or diag(join(' ', @mismatches));
	next if $i != 0;
	my @halves = ($$out =~ /^halves\|(\d+)$/mg);
	is(scalar @halves, $queries, "readers through member $i: $queries sums of two halves");
	is(scalar(grep { $_ != $total } @halves), 0,
		"through member $i: two gathers of one query see the same moment")
	  or diag(join(' ', @halves));
}

$rr->finish;
is($rr_err, '', 'REPEATABLE READ transaction: no error');
my @rr = split /\n/, $rr_out;
# count|sum, (pg_sleep), count|sum, sum(bal), count after commit
is(scalar @rr, 5, 'REPEATABLE READ transaction: every result') or diag($rr_out);
is($rr[2], $rr[0], 'REPEATABLE READ: the second distributed query sees the rows the first saw');
is($rr[3], $total, 'REPEATABLE READ: the balances hold the total in the same snapshot');
my ($before) = split /\|/, $rr[0];
cmp_ok($rr[4], '>', $before, '... while the ledger did grow meanwhile');

finish_writers(@writers);

# --- the dump, restored into a plain server ---------------------------------
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', q{
	CREATE TABLE acct (id int PRIMARY KEY, bal bigint NOT NULL);
	CREATE TABLE ledger (src int NOT NULL, dst int NOT NULL, amt int NOT NULL);
});
$plain->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $dump,
	'-d', $plain->connstr('postgres') ], 'the dump restores into a plain server');
is($plain->safe_psql('postgres', 'SELECT count(*), sum(bal) FROM acct'),
	"$naccounts|$total", 'restored: every account, holding the total');
is($plain->safe_psql('postgres', $mismatch_sql), '0',
	'restored: every balance agrees with the restored ledger (one moment of the cluster)');
cmp_ok($plain->safe_psql('postgres', 'SELECT count(*) FROM ledger'), '>', 0,
	'restored: the ledger holds transfers made before the dump');
$plain->stop;

# --- a committer between its first and last commit ---------------------------
# It holds member 1's barrier (as a prepared transaction of a two-phase
# commit does).  A query of small gathers (min, max and sum, whose round
# takes the cluster snapshot with the fragments) finds it taken there: it
# must not read, but roll its round back and wait for the commit as every
# distributed query does, then answer.
$rx->safe_psql(1, q{BEGIN; SELECT rdma_exchange.barrier_commit();
	PREPARE TRANSACTION 'rx_test_barrier'});
my ($w_out, $w_err) = ('', '');
my $waiter = $rx->background_psql(0,
	"SELECT min(id), max(id), sum(bal) FROM acct;\n", \$w_out, \$w_err);
ok($rx->poll_query_until(1, q{SELECT count(*) > 0 FROM pg_locks
	WHERE locktype = 'advisory' AND objsubid = 3 AND NOT granted}),
	'a query of small gathers waits for the barrier a committer holds');
is($w_out, '', '... and has not answered meanwhile');
$rx->safe_psql(1, q{COMMIT PREPARED 'rx_test_barrier'});
$waiter->finish;
is($w_err, '', 'after the commit: no error');
is($w_out, "1|$naccounts|$total\n", 'after the commit: the answer');

# --- at the end ---------------------------------------------------------------
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i, "SELECT sum(bal), ($mismatch_sql) FROM acct"), "$total|0",
		"at the end through member $i: the total, every account agrees with the ledger");
	ok($rx->poll_query_until($i, 'SELECT count(*) = 0 FROM pg_prepared_xacts'),
		"at the end: no prepared transaction left on member $i");
}

# --- without the barrier (reported only) --------------------------------------
@writers = start_writers(8);
my $bad = 0;
{
	my ($out, $err) = ('', '');
	my $h = $rx->background_psql(0,
		"SET rdma_exchange.consistent_reads = off;\n" . "SELECT sum(bal) FROM acct;\n" x 40,
		\$out, \$err);
	$h->finish;
	$bad = grep { $_ != $total } split /\n/, $out;
}
finish_writers(@writers);
note("with consistent_reads = off, $bad of 40 sums were not the total");
is($rx->safe_psql(0, 'SELECT sum(bal) FROM acct'), $total, 'the total after all');

$rx->check_clean('at the end');
done_testing();
