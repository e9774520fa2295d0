# test/t/125_random_queries.pl: the differential check over random
# queries (test/random_queries.py): each of a few hundred seeded queries
# runs on distributed tables and on plain copies of the same rows, and
# the answers must be the same.  Once through member 0 with one process
# per member, once through member 1 with two workers per member and every
# table big enough for them, once through member 2 read by a cursor a few
# rows at a time (a portal run in batches), once with the integers as
# parameters of prepared statements run with generic plans (the bound
# values travel with the fragments), and once as writes: UPDATE, DELETE
# and INSERT ... SELECT, compared by the rows they changed and the table
# after, each rolled back.  The tables: keys with NULLs, a skewed key
# and keys without a match (ord.o_cust), an empty table, a reference
# table, a table distributed on a column that is not its key (item).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);
$rx->safe_psql(0, q{
	SET client_min_messages = warning;
	CREATE SCHEMA d;
	CREATE SCHEMA l;
	CREATE TABLE d.cust (c_id int PRIMARY KEY, c_nation int NOT NULL, c_name text);
	CREATE TABLE d.ord (o_id int PRIMARY KEY, o_cust int, o_amount numeric(12,2), o_note text);
	CREATE TABLE d.nation (n_id int PRIMARY KEY, n_name text);
	CREATE TABLE d.empty_t (e_id int, e_val int);
	CREATE TABLE d.item (i_id int, i_ord int, i_qty int, i_price float8, i_day date, i_flag boolean);
	INSERT INTO d.cust SELECT i, i % 25, 'cust' || i FROM generate_series(1, 3000) i;
	INSERT INTO d.ord
	  SELECT i,
	         CASE WHEN i % 97 = 0 THEN NULL WHEN i % 10 = 0 THEN 42 ELSE (i * 7) % 3500 END,
	         (i % 1000) / 10.0, 'n' || (i % 13)
	  FROM generate_series(1, 20000) i;
	INSERT INTO d.nation SELECT i, 'nation' || i FROM generate_series(0, 24) i;
	INSERT INTO d.item
	  SELECT i, (i * 13) % 21000, CASE WHEN i % 51 = 0 THEN NULL ELSE i % 50 END,
	         (i % 977) * 1.25, date '2020-01-01' + (i % 400), i % 3 = 0
	  FROM generate_series(1, 60000) i;
	CREATE TABLE l.cust AS SELECT * FROM d.cust;
	CREATE TABLE l.ord AS SELECT * FROM d.ord;
	CREATE TABLE l.nation AS SELECT * FROM d.nation;
	CREATE TABLE l.empty_t AS SELECT * FROM d.empty_t;
	CREATE TABLE l.item AS SELECT * FROM d.item;
	-- the same indexes on both sides: a correlated lookup on the plain
	-- tables is then no scan per outer row
	ALTER TABLE l.cust ADD PRIMARY KEY (c_id);
	ALTER TABLE l.ord ADD PRIMARY KEY (o_id);
	ALTER TABLE l.nation ADD PRIMARY KEY (n_id);
	CREATE INDEX ON l.ord (o_cust);
	CREATE INDEX ON l.item (i_ord);
	CREATE INDEX ON l.item (i_id);
	SELECT rdma_exchange.create_distributed_table('d.cust', 'c_id');
	SELECT rdma_exchange.create_distributed_table('d.ord', 'o_id');
	SELECT rdma_exchange.create_reference_table('d.nation');
	SELECT rdma_exchange.create_distributed_table('d.empty_t', 'e_id');
	SELECT rdma_exchange.create_distributed_table('d.item', 'i_ord');
	CREATE INDEX ON d.ord (o_cust);
	CREATE INDEX ON d.item (i_ord);
	CREATE INDEX ON d.item (i_id);
	ANALYZE;
});

# psycopg2 is Debian's, for Debian's python3 (PATH may name another first)
my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
my $script = "$FindBin::RealBin/../random_queries.py";

sub dsn
{
	my ($i) = @_;
	my $node = $rx->member($i);
	return sprintf('host=%s port=%d dbname=%s', $node->host, $node->port, $rx->dbname);
}

# random_queries.py with the queries of seed, entering through member
sub run_seed
{
	my ($name, $seed, $count, $member, $settings, @more) = @_;
	my $out = '';
	my $ok = eval {
		IPC::Run::run([ $python, $script, '--seed', $seed, '--count', $count,
				'--dist', dsn($member), '--local', dsn(0), '--settings', $settings, @more ],
			'>', \$out, '2>&1', IPC::Run::timeout(1200));
	};
	my ($summary) = $out =~ /^(summary: .*)$/m;
	ok($ok, "$name: every answer the same as on the plain tables")
	  or diag($out);
	like($summary // '', qr/, [1-9][0-9]* compared, 0 different, 0 errors,/,
		"$name: the queries were compared") or diag($out);
	note($summary // 'no summary');
	# a plan slower than statement_timeout is not a wrong row, but say so
	diag($1) while $out =~ /^(timeout #.*)$/mg;
}

my %s;
run_seed('seed 1 through member 0', 1, 200, 0, '');
run_seed('seed 2 through member 1, two workers per member', 2, 200, 1,
	'SET rdma_exchange.workers_per_member = 2; SET min_parallel_table_scan_size = 0; '
	  . 'SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;');
run_seed('seed 3 through member 2, read by a cursor 7 rows a fetch', 3, 150, 2, '',
	'--fetch', 7);
run_seed('seed 4 through member 0, integers as parameters of generic plans', 4, 150, 0, '',
	'--prepared');

run_seed('seed 5 through member 1, UPDATE, DELETE and INSERT ... SELECT (rolled back)',
	5, 150, 1, '', '--writes');

# reads of one table by its distribution key: one member answers them
# (direct dispatch: a key of another member goes there as SQL, the owner
# planning it; a key computed from a parameter, as a plan), through
# every member, constants, parameters of custom and generic plans, and a
# cursor
run_seed('seed 6 through member 2, lookups by key', 6, 150, 2, '', '--lookups');
run_seed('seed 7 through member 1, lookups by key, parameters of custom plans', 7, 150, 1, '',
	'--lookups', '--prepared');
run_seed('seed 8 through member 0, lookups by key, read by a cursor 2 rows a fetch', 8, 100, 0, '',
	'--lookups', '--fetch', 2);
# generic plans: the owner chosen at execution; another member's gets the
# query's text, this member's runs the local plan
run_seed('seed 9 through member 2, lookups by key, parameters of generic plans', 9, 100, 2, '',
	'--lookups', '--prepared', '--generic');

# the shape the writes found: an IN over another distributed table whose
# output column looked like the target's distribution column (same
# position), so each member ran the subquery over its own part only
for my $schema ('d', 'l')
{
	my $q = qq{BEGIN;
		UPDATE $schema.ord SET o_cust = coalesce(o_cust, 0) + 1
		 WHERE o_cust IN (SELECT i_id FROM $schema.item WHERE i_price > 12.5);
		SELECT count(*) FROM $schema.ord WHERE o_cust IN (SELECT i_id + 1 FROM $schema.item WHERE i_price > 12.5);
		ROLLBACK;};
	# the plain copies are member 0's own tables
	$s{$schema} = $rx->safe_psql($schema eq 'd' ? 1 : 0, $q);
}
is($s{d}, $s{l}, 'UPDATE ... WHERE col IN (SELECT another distributed table\'s column): every member\'s rows');

$rx->check_clean("after the random queries");
$rx->teardown;
done_testing();
