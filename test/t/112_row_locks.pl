# test/t/112_row_locks.pl: SELECT ... FOR UPDATE/SHARE on distributed and
# reference tables behaves as on one server (issue 19, row_locks.c).
#
#   - Answers: locking queries of every strength, with ORDER BY, LIMIT,
#     OFFSET, a reference table joined, a subquery in the select list, a
#     view, bound parameters (a prepared statement past its generic plan,
#     PL/pgSQL), a cursor fetched in batches, a savepoint rolled back: through each member the same rows as
#     a plain server with the same data.
#   - Locks, through psycopg2 with several sessions entering through
#     different members (test/clients/row_locks.py, run against the plain
#     server and the cluster, every line compared): NOWAIT, SKIP LOCKED,
#     lock_timeout, waiting and then seeing the committed row, the re-check
#     of a row changed meanwhile, read-your-writes, REPEATABLE READ (a row
#     changed after the transaction's snapshot cannot be locked or updated
#     through any member: the member-side transactions import the cluster
#     snapshot), queue workers taking one job each with
#     ORDER BY ... LIMIT 1 FOR UPDATE SKIP LOCKED and draining a queue,
#     reference-table rows locked once for all copies, a lock cycle ending
#     in "deadlock detected".
#   - EXPLAIN shows where the rows are locked; EXPLAIN ANALYZE how many
#     rows each member locked (LIMIT 1 over three members: one).
#   - What cannot be locked where the rows are is refused with a clear
#     error: two distributed tables, reference rows locked with distributed
#     ones, a local table.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tables = q{
	CREATE TABLE acc (id int PRIMARY KEY, v int, note text);
	INSERT INTO acc SELECT g, g * 10, 'n' || (g % 7) FROM generate_series(1, 20) g;
	CREATE TABLE ref (k int PRIMARY KEY, name text);
	INSERT INTO ref SELECT g, 'r' || g FROM generate_series(1, 5) g;
	CREATE TABLE jobs (id int PRIMARY KEY, done bool NOT NULL DEFAULT false, worker int);
	INSERT INTO jobs (id) SELECT g FROM generate_series(1, 30) g;
	CREATE TABLE other (id int PRIMARY KEY, w int);
	INSERT INTO other SELECT g, g FROM generate_series(1, 20) g;
};
# functions and views are not propagated: each member gets its own
my $functions = q{
	CREATE VIEW big AS SELECT id, v FROM acc WHERE v > 50;
	CREATE FUNCTION lock_one(k int) RETURNS int LANGUAGE plpgsql AS $$
	DECLARE x int;
	BEGIN
		SELECT v INTO x FROM acc WHERE id = k FOR UPDATE;
		RETURN x;
	END $$;
	CREATE FUNCTION lock_sum(lo int) RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE r record; s bigint := 0;
	BEGIN
		FOR r IN SELECT id, v FROM acc WHERE v >= lo ORDER BY id FOR NO KEY UPDATE LOOP
			s := s + r.v;
		END LOOP;
		RETURN s;
	END $$;
};

my $rx = RxCluster->new(nmembers => 3);
my $n  = $rx->nmembers;
$rx->safe_psql(0, $tables . q{
	SELECT rdma_exchange.create_distributed_table('acc', 'id');
	SELECT rdma_exchange.create_reference_table('ref');
	SELECT rdma_exchange.create_distributed_table('jobs', 'id');
	SELECT rdma_exchange.create_distributed_table('other', 'id');
});
$rx->safe_psql($_, $functions) for 0 .. $n - 1;

my $single = PostgreSQL::Test::Cluster->new('row_locks_single');
$single->init;
$single->append_conf('postgresql.conf', "listen_addresses = '127.0.0.1'\nlc_messages = 'C'\n");
$single->start;
$single->safe_psql('postgres', $tables . $functions);

# --- answers -------------------------------------------------------------------
my @queries = (
	'SELECT id, v FROM acc WHERE id = 7 FOR UPDATE',
	'SELECT id, v FROM acc WHERE id = 7 AND v > 1000 FOR UPDATE',
	'SELECT id, v FROM acc WHERE v > 100 ORDER BY v DESC FOR SHARE',
	'SELECT id FROM acc ORDER BY note, id LIMIT 3 OFFSET 2 FOR UPDATE',
	'SELECT id FROM acc ORDER BY note DESC, id LIMIT 4 FOR NO KEY UPDATE',
	'SELECT id FROM acc ORDER BY id OFFSET 17 FOR KEY SHARE',
	'SELECT a.id, r.name FROM acc a JOIN ref r ON r.k = a.id % 5 WHERE a.id < 9 ORDER BY a.id FOR UPDATE OF a',
	'SELECT id, (SELECT name FROM ref WHERE k = acc.id) FROM acc WHERE id < 4 ORDER BY id DESC FOR UPDATE',
	'SELECT * FROM ref WHERE k = 2 FOR UPDATE',
	'SELECT k FROM ref ORDER BY k DESC LIMIT 2 FOR SHARE',
	'SELECT * FROM big WHERE id < 9 ORDER BY id FOR UPDATE',
	'SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED',
	'SELECT id, v FROM acc WHERE id = ANY (ARRAY[1, 2, 3, 19]) ORDER BY id FOR UPDATE NOWAIT',
	"PREPARE p(int) AS SELECT id, v FROM acc WHERE id = \$1 FOR UPDATE;\n"
	  . join('', map { "EXECUTE p($_);\n" } 3 .. 10),
	"PREPARE q(int, int) AS SELECT id FROM acc WHERE v > \$1 ORDER BY id LIMIT \$2 FOR UPDATE;\n"
	  . join('', map { "EXECUTE q($_, 2);\n" } 1 .. 7),
	'SELECT lock_one(9), lock_one(12), lock_sum(150)',
	"BEGIN;\nDECLARE c CURSOR FOR SELECT id FROM acc WHERE id > 14 ORDER BY id FOR UPDATE;\n"
	  . "FETCH 2 FROM c;\nFETCH 1 FROM c;\nFETCH ALL FROM c;\nCOMMIT;",
	"BEGIN;\nSELECT id FROM acc WHERE id = 5 FOR UPDATE;\nSAVEPOINT s;\n"
	  . "SELECT id FROM acc WHERE id = 6 FOR UPDATE;\nROLLBACK TO s;\n"
	  . "UPDATE acc SET v = v WHERE id = 6;\nSELECT id, v FROM acc WHERE id IN (5, 6) ORDER BY id FOR SHARE;\nCOMMIT;",
);
for my $q (@queries)
{
	my $want = $single->safe_psql('postgres', $q);
	for my $m (0 .. $n - 1)
	{
		is($rx->safe_psql($m, $q), $want, "through member $m, as on one server: $q");
	}
}

# --- EXPLAIN ------------------------------------------------------------------------
like($rx->safe_psql(1, 'EXPLAIN (COSTS OFF) SELECT * FROM acc WHERE id = 7 FOR UPDATE'),
	qr/Custom Scan \(LOCK ROWS\)\n\s+Locks Rows On: the owner of the key/,
	'EXPLAIN: one key is locked on its owner');
like($rx->safe_psql(1, 'EXPLAIN (COSTS OFF, VERBOSE) SELECT id FROM acc WHERE v > 3 FOR SHARE'),
	qr/Locks Rows On: every member\n\s+Member Query: SELECT id FROM public\.acc WHERE \(v > 3\) FOR SHARE OF acc/,
	'EXPLAIN VERBOSE: every member, and the query they run');
like($rx->safe_psql(2, 'EXPLAIN (COSTS OFF) SELECT * FROM ref FOR SHARE'),
	qr/Locks Rows On: the first member/, 'EXPLAIN: reference rows are locked on the first member');
my $analyze = $rx->safe_psql(0, q{EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT id FROM jobs ORDER BY id LIMIT 1 FOR UPDATE});
my ($per_member) = $analyze =~ /Rows Locked per Member: (.*)/;
my @locked = ($per_member // '') =~ /=(\d+)/g;
is(scalar @locked, $n, 'EXPLAIN ANALYZE: rows locked on each member') or diag($analyze);
my $sum = 0;
$sum += $_ for @locked;
is($sum, 1, '... LIMIT 1 over three members locked one row in all') or diag($analyze);

# --- refused, with a clear error -----------------------------------------------
my ($rc, $out, $err) = $rx->psql(0,
	'SELECT * FROM acc a JOIN other o ON o.id = a.id FOR UPDATE');
isnt($rc, 0, 'two distributed tables: refused');
like($err, qr/FOR UPDATE\/SHARE over table "\w+" is not supported in this query/, '... saying so');
like($err, qr/DETAIL:.*more than one distributed table/, '... with the reason');
like($err, qr/HINT:/, '... and a hint');
($rc, $out, $err) = $rx->psql(0, 'SELECT * FROM acc a JOIN ref r ON r.k = a.id FOR UPDATE');
like($err, qr/HINT:.*FOR UPDATE OF acc/, 'reference rows locked with distributed ones: refused, hint names FOR UPDATE OF');
($rc, $out, $err) = $rx->psql(0,
	"CREATE TEMP TABLE l (x int);\nSELECT * FROM acc, l WHERE l.x = acc.id FOR UPDATE OF acc");
like($err, qr/DETAIL:.*not distributed/, 'a local table: refused');

# --- locks, through psycopg2 -----------------------------------------------------
my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
my $script = "$FindBin::RealBin/../clients/row_locks.py";
ok($rx->poll_query_until(0, q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE backend_type = 'rdma_exchange recovery' OR application_name = 'rdma_exchange recovery'}),
	'the deadlock detector (member 0\'s recovery worker) runs');

sub run_script
{
	my @ports = @_;
	my $output = '';
	my $ok = eval {
		IPC::Run::run([ $python, $script, '127.0.0.1', 'postgres', @ports ],
			'<', \undef, '>&', \$output, IPC::Run::timeout(180));
	};
	return ($ok ? '' : "failed: " . ($@ // '') . "\n") . $output;
}
my $plain = run_script($single->port);
my $cluster = run_script(map { $rx->member($_)->port } 0 .. $n - 1);
like($plain, qr/^b nowait 7: ERR could not obtain lock on row in relation "acc"$/m,
	'the script locks rows (plain server: NOWAIT fails on a locked row)');
like($plain, qr/^lock cycle, deadlocks detected: 1$/m, '... and detects the lock cycle');
my %cluster_lines = map { /^([^:]+): (.*)$/ ? ($1 => $2) : () } split /\n/, $cluster;
for my $line (split /\n/, $plain)
{
	my ($name, $want) = $line =~ /^([^:]+): (.*)$/ or next;
	is($cluster_lines{$name}, $want, "locks through three members, as on one server: $name");
}
unlike($cluster, qr/^failed/m, 'the script ran to its end on the cluster') or diag($cluster);

$rx->check_clean('after the row lock tests');
done_testing();
