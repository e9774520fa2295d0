# test/t/080_suspended_cursors.pl: a cursor over a distributed query keeps
# its fragments between fetches, and whatever ends it (CLOSE, COMMIT,
# ROLLBACK, a failed statement, a rolled back savepoint, a cancel,
# statement_timeout, the client going away) leaves no fragment, buffer or
# connection behind on any member.  The rows it returns are every row
# once, also around other statements and for WITH HOLD cursors.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);
my $fragments = $rx->fragments_sql;

$rx->safe_psql(0, q{
	CREATE TABLE big (id int PRIMARY KEY, k int, pad text);
	INSERT INTO big SELECT i, i % 1000, repeat(md5(i::text), 20) FROM generate_series(1, 60000) i;
	SELECT rdma_exchange.create_distributed_table('big', 'id');
	ANALYZE big;
});

# a cursor over every member's rows, left suspended after its first
# batch; wide rows as stored (about 13 MB a member), so that the members
# cannot send all of them ahead, whichever plan reads them (one that
# widened them on the coordinator would send 40 bytes a row), and their
# fragments stay
my $declare = q{DECLARE c CURSOR FOR SELECT id, pad AS wide FROM big ORDER BY id;
MOVE 5 c;
FETCH 1 c;};
my $first = qr/^6\|[0-9a-f]{640}$/m;

# runs sql (which must leave a cursor suspended, then wait in pg_sleep as
# application rx_victim) in the background; returns the harness
sub start_suspended
{
	my ($sql, $stdout, $stderr) = @_;
	my $h = $rx->background_psql(0,
		"SET application_name = 'rx_victim';\n$sql", $stdout, $stderr);
	ok($rx->poll_query_until(0, q{SELECT count(*) > 0 FROM pg_stat_activity
		WHERE application_name = 'rx_victim' AND query LIKE '%pg_sleep%'
		AND state = 'active'}), 'the cursor is suspended');
	ok($rx->poll_query_until(0, "SELECT ($fragments) > 0"),
		'its fragments stay on the members while it is suspended');
	return $h;
}

my $victim = q{SELECT pid FROM pg_stat_activity WHERE application_name = 'rx_victim'};

# rows in order across batches, with other statements in between
is( $rx->safe_psql(0, qq{BEGIN;
DECLARE c CURSOR FOR SELECT id FROM big WHERE id % 1000 = 7 ORDER BY id;
FETCH 3 c;
SELECT count(*) FROM big WHERE k = 3;
FETCH 3 c;
MOVE 10 c;
FETCH ALL c;
COMMIT;}),
	join("\n", 7, 1007, 2007, 60, 3007, 4007, 5007,
		map { $_ * 1000 + 7 } 16 .. 59),
	'FETCH, another query, FETCH, MOVE, FETCH ALL: each row once, in order');
$rx->check_clean('after the cursor ran to its end');

# CLOSE, COMMIT and ROLLBACK of a suspended cursor
for my $end ('CLOSE c; COMMIT;', 'COMMIT;', 'ROLLBACK;')
{
	like($rx->safe_psql(0, "BEGIN; $declare $end SELECT 'ended';"),
		qr/$first\nended/, "suspended cursor ended by $end");
	$rx->check_clean("$end of a suspended cursor");
}

# a statement of the transaction fails while the cursor is suspended
my ($ret, $out, $err) = $rx->psql(0, "BEGIN; $declare SELECT 1/0;");
like($err, qr/division by zero/, 'a failing statement next to a suspended cursor');
$rx->check_clean('failed transaction with a suspended cursor');

# the cursor lives in a savepoint that is rolled back; the transaction
# goes on and runs distributed queries
like( $rx->safe_psql(0, qq{BEGIN; SAVEPOINT s; $declare ROLLBACK TO s;
SELECT count(*) FROM big; COMMIT;}),
	qr/$first\n60000/, 'savepoint with a suspended cursor rolled back');
$rx->check_clean('rolled back savepoint');

# cancel, statement_timeout and the client going away, each while the
# cursor is suspended (the session waits in pg_sleep)
for my $how ('cancel', 'statement_timeout', 'terminate')
{
	my ($stdout, $stderr) = ('', '');
	my $timeout = $how eq 'statement_timeout' ? "SET statement_timeout = '3s';\n" : '';
	my $h = start_suspended("BEGIN;\n$declare\n${timeout}SELECT pg_sleep(60);\n",
		\$stdout, \$stderr);
	$rx->safe_psql(0, "SELECT pg_cancel_backend(pid) FROM ($victim) v")
	  if $how eq 'cancel';
	$rx->safe_psql(0, "SELECT pg_terminate_backend(pid) FROM ($victim) v")
	  if $how eq 'terminate';
	$h->finish;
	like($stderr,
		{ cancel => qr/canceling statement due to user request/,
		  statement_timeout => qr/canceling statement due to statement timeout/,
		  terminate => qr/terminat|server closed the connection/ }->{$how},
		"$how next to a suspended cursor: the usual message");
	$rx->check_clean("$how next to a suspended cursor");
}

# cancel in the middle of a FETCH whose fragments are busy: its one row
# is gathered by query (receive_query.c), or through an exchange; member
# 1 runs its part either way
for my $path ('by query', 'exchange')
{
	my $set = $path eq 'exchange' ? 'SET rdma_exchange.small_gather_rows = 0;' : '';
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0, qq{SET application_name = 'rx_victim'; $set
BEGIN;
DECLARE c CURSOR FOR SELECT count(*) FROM big WHERE pg_sleep(0.0005) IS NOT NULL;
FETCH 1 c;
}, \$stdout, \$stderr);
	ok($rx->poll_query_until(1, "SELECT ($fragments) > 0"),
		"cancel during FETCH ($path): fragments are running");
	$rx->safe_psql(0, "SELECT pg_cancel_backend(pid) FROM ($victim) v");
	$h->finish;
	like($stderr, qr/canceling statement due to user request/,
		"cancel during FETCH ($path): the usual message");
	$rx->check_clean("cancel during FETCH ($path)");
}

# WITH HOLD: read to the end at commit, fetched on afterwards
is( $rx->safe_psql(0, q{BEGIN;
DECLARE h CURSOR WITH HOLD FOR SELECT id FROM big WHERE id % 10000 = 1 ORDER BY id;
FETCH 2 h;
COMMIT;
FETCH ALL h;
CLOSE h;}),
	join("\n", 1, 10001, 20001, 30001, 40001, 50001),
	'WITH HOLD cursor: the rest after COMMIT');
$rx->check_clean('WITH HOLD cursor');

# small gathers (a range by index, min and max) go out in one round that
# takes the query's cluster snapshot with them; a WITH HOLD cursor runs
# its plan again at commit, a SCROLL cursor when it goes back: both must
# still read every row once, from one snapshot
is( $rx->safe_psql(0, q{BEGIN;
DECLARE s CURSOR WITH HOLD FOR SELECT id FROM big WHERE id BETWEEN 100 AND 104 ORDER BY id;
FETCH 2 s;
COMMIT;
FETCH ALL s;
CLOSE s;
BEGIN;
DECLARE m CURSOR WITH HOLD FOR SELECT min(id), max(id) FROM big;
COMMIT;
FETCH ALL m;
CLOSE m;
BEGIN;
DECLARE b SCROLL CURSOR FOR SELECT id FROM big WHERE id BETWEEN 100 AND 104 ORDER BY id;
FETCH 3 b;
FETCH BACKWARD 2 b;
FETCH ABSOLUTE 5 b;
COMMIT;}),
	join("\n", 100 .. 104, '1|60000', 100, 101, 102, 101, 100, 104),
	'cursors over small gathers: WITH HOLD and SCROLL');
$rx->check_clean('cursors over small gathers');

# after a write in the transaction, the cursor's rows are read at once:
# nothing stays on the members while it is suspended
{
	my ($stdout, $stderr) = ('', '');
	my $h = $rx->background_psql(0, q{SET application_name = 'rx_victim';
BEGIN;
INSERT INTO big VALUES (-1, 0, 'new');
DECLARE c CURSOR FOR SELECT id FROM big ORDER BY id;
FETCH 2 c;
SELECT pg_sleep(60);
}, \$stdout, \$stderr);
	ok($rx->poll_query_until(0, q{SELECT count(*) > 0 FROM pg_stat_activity
		WHERE application_name = 'rx_victim' AND query LIKE '%pg_sleep%'
		AND state = 'active'}), 'cursor after a write: suspended');
	is($rx->safe_psql(0, "SELECT ($fragments)"), '0',
		'cursor after a write: no fragment stays while it is suspended');
	$rx->safe_psql(0, "SELECT pg_cancel_backend(pid) FROM ($victim) v");
	$h->finish;
	like($stdout, qr/^-1\n1$/m, 'cursor after a write: it sees the new row');
	$rx->check_clean('cursor after a write');
}
is($rx->safe_psql(0, 'SELECT count(*) FROM big'), '60000',
	'the rolled back INSERT is gone');

$rx->teardown;
done_testing();
