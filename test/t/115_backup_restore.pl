# test/t/115_backup_restore.pl: pg_dump of a cluster, restored into a fresh
# cluster and into a plain PostgreSQL server (issue 19).
#
# Cluster A holds reference tables (one referencing the other), hash
# tables (one with a foreign key to a reference table, one with a
# bigserial key whose values came through several members), a local
# table, a view (member 0's own), an enum type and an index.  Its dumps:
#
#   - plain format through member 1 while transfers commit through
#     members 0 and 2, restored with psql (ON_ERROR_STOP) through member 2
#     of a fresh cluster B, then finish_restore(): no error, every table
#     distributed as in A, every row on its owner, the transfers' total
#     holds (one moment of A), new rows get keys no row has;
#   - custom format, pg_restore -j 2 into another database of B;
#   - directory format, restored section by section (pre-data, data with
#     -j 2, post-data), finish_restore() between data and post-data;
#   - custom format into a plain server, the extension's entries left out
#     of pg_restore's list (-L), with -e (stop at the first error).
#
# Every restore answers the same queries as A (after the writers
# stopped) through every member.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = RxCluster->new(nmembers => 3, name => 'src');
my $dst = RxCluster->new(nmembers => 3, name => 'dst');
my $n = $src->nmembers;
my $dir = PostgreSQL::Test::Utils::tempdir();

$src->safe_psql(0, q{
	CREATE TYPE kind AS ENUM ('cash', 'card');
	CREATE TABLE cur (code text PRIMARY KEY, name text NOT NULL);
	CREATE TABLE region (rid int PRIMARY KEY, cur text NOT NULL);
	CREATE TABLE acct (id int PRIMARY KEY, owner text NOT NULL, bal bigint NOT NULL,
		cur text NOT NULL, k kind NOT NULL DEFAULT 'cash');
	CREATE TABLE led (id bigserial PRIMARY KEY, acct int NOT NULL, amount int NOT NULL);
	CREATE TABLE loc (x serial PRIMARY KEY, note text);
	SELECT rdma_exchange.create_reference_table('cur');
	SELECT rdma_exchange.create_reference_table('region');
	SELECT rdma_exchange.create_distributed_table('acct', 'id');
	SELECT rdma_exchange.create_distributed_table('led', 'id');
	ALTER TABLE region ADD FOREIGN KEY (cur) REFERENCES cur (code);
	ALTER TABLE acct ADD FOREIGN KEY (cur) REFERENCES cur (code);
	INSERT INTO cur VALUES ('EUR', 'euro'), ('USD', 'dollar'), ('JPY', 'yen');
	INSERT INTO region VALUES (1, 'EUR'), (2, 'USD'), (3, 'JPY');
	INSERT INTO acct SELECT g, 'o' || g, 1000, (ARRAY['EUR','USD','JPY'])[g % 3 + 1],
		(ARRAY['cash','card'])[g % 2 + 1]::kind FROM generate_series(1, 2000) g;
	INSERT INTO loc (note) SELECT 'n' || g FROM generate_series(1, 10) g;
	CREATE INDEX acct_owner ON acct (owner);
	CREATE VIEW eur AS SELECT a.owner, a.bal FROM acct a JOIN cur c ON a.cur = c.code
		WHERE c.code = 'EUR';	-- a view is this member's own
});
# keys of led through every member: member 1 hands out the most
for my $i (0 .. $n - 1)
{
	$src->safe_psql($i, sprintf(q{INSERT INTO led (acct, amount)
		SELECT g, g FROM generate_series(1, %d) g}, 300 * ($i == 1 ? 4 : 1)));
}

my @queries = (
	'SELECT count(*), sum(bal), min(bal), max(bal) FROM acct',
	'SELECT cur, k, count(*), sum(bal) FROM acct GROUP BY 1, 2 ORDER BY 1, 2',
	'SELECT r.rid, c.name, count(a.id) FROM region r JOIN cur c ON c.code = r.cur
	   LEFT JOIN acct a ON a.cur = c.code GROUP BY 1, 2 ORDER BY 1',
	'SELECT count(*), sum(id), max(id), sum(amount) FROM led',
	q{SELECT a.owner, a.bal FROM acct a JOIN cur c ON a.cur = c.code
	  WHERE c.code = 'EUR' ORDER BY a.owner LIMIT 5},
	'SELECT count(*), sum(l.amount) FROM led l JOIN acct a ON a.id = l.acct',
);
my $total = 2000 * 1000;

# --- plain dump while transfers commit --------------------------------------
my $script = "$dir/transfer.sql";
open(my $fh, '>', $script) or die;
print $fh q{\set a random(1, 2000)
\set b random(1, 2000)
BEGIN;
UPDATE acct SET bal = bal - 1 WHERE id = :a;
UPDATE acct SET bal = bal + 1 WHERE id = :b;
END;
};
close $fh;
my @writers;
for my $i (0, 2)
{
	my ($out, $err) = ('', '');
	push @writers, [ IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-T', '8', '-f', $script,
		  $src->member($i)->connstr($src->dbname) ],
		'<', \undef, '>', \$out, '2>', \$err), \$out, \$err, $i ];
}
sleep 2;
command_ok([ 'pg_dump', '-f', "$dir/plain.sql", $src->member(1)->connstr($src->dbname) ],
	'pg_dump (plain format) through member 1 while transfers commit');
command_ok([ 'pg_dump', '-Fc', '-f', "$dir/live.dump", $src->member(2)->connstr($src->dbname) ],
	'pg_dump (custom format) through member 2 while transfers commit');
for my $w (@writers)
{
	my ($h, $out, $err, $i) = @$w;
	$h->finish;
	like($$out, qr/number of failed transactions: 0 /, "transfers through member $i committed");
}

# the answers of A now that the writers stopped
my @want = map { $src->safe_psql(0, $_) } @queries;
is((split /\|/, $want[0])[1], $total, 'A: the transfers kept the total');

# a database of cluster B with the extension and B's members
sub fresh_database
{
	my ($db) = @_;
	for my $node ($dst->members)
	{
		$node->safe_psql('postgres', "CREATE DATABASE $db");
		$node->safe_psql($db, 'SET client_min_messages = warning; CREATE EXTENSION rdma_exchange');
	}
	for my $node ($dst->members)
	{
		$dst->coordinator->safe_psql($db,
			sprintf("SELECT rdma_exchange.add_node('127.0.0.1', %d)", $node->port));
	}
	return;
}

# every table distributed as in A, every row on its owner, same answers
sub check_restored
{
	my ($db, $label, %opt) = @_;
	is($dst->safe_psql(0, q{SELECT relid::text, method, dist_column FROM rdma_exchange.dist_table
		ORDER BY 1}, dbname => $db),
		$src->safe_psql(0, q{SELECT relid::text, method, dist_column FROM rdma_exchange.dist_table
		ORDER BY 1}), "$label: every table distributed as in A");
	is($dst->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.pending_distribution', dbname => $db),
		'0', "$label: nothing left pending");
	for my $i (0 .. $n - 1)
	{
		# this member's own part, without distributed planning
		is($dst->safe_psql($i, qq{SET rdma_exchange.enable = off;
			SELECT (SELECT count(*) FROM acct WHERE rdma_exchange.member_index_of(id) <> $i)
			     + (SELECT count(*) FROM led WHERE rdma_exchange.member_index_of(id) <> $i),
			       (SELECT count(*) FROM cur), (SELECT count(*) FROM region)},
			dbname => $db), '0|3|3',
			"$label: member $i stores only the rows it owns and every reference row");
	}
	for my $q (0 .. $#queries)
	{
		next if $opt{live} && $queries[$q] =~ /bal/;	# balances are of the dump's moment
		for my $i (0 .. $n - 1)
		{
			is($dst->safe_psql($i, $queries[$q], dbname => $db), $want[$q],
				"$label: query $q through member $i as in A");
		}
	}
	return;
}

# --- plain dump into a fresh cluster ------------------------------------------
fresh_database('r1');
my ($out, $err) = ('', '');
IPC::Run::run([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', "$dir/plain.sql",
	'-d', $dst->member(2)->connstr('r1') ], '<', \undef, '>', \$out, '2>', \$err);
is($?, 0, 'plain dump restored with psql through member 2 of cluster B');
unlike($err, qr/ERROR|WARNING/, '... with no error or warning') or diag($err);
is($dst->safe_psql(2, 'SELECT count(*) FROM rdma_exchange.pending_distribution', dbname => 'r1'),
	'4', 'the restored distributions wait for finish_restore()');
is($dst->safe_psql(2, 'SELECT count(*), sum(bal) FROM acct', dbname => 'r1'), "2000|$total",
	'before finish_restore() the tables are member 2\'s own, with every row');
is($dst->safe_psql(2, q{SELECT string_agg(table_name || ' ' || distribution, ', ' ORDER BY 1)
	FROM rdma_exchange.finish_restore()}, dbname => 'r1'),
	'cur reference, region reference, acct hash (id), led hash (id)',
	'finish_restore(): reference tables first, then hash tables');
check_restored('r1', 'plain dump taken while writers ran', live => 1);
for my $i (0 .. $n - 1)
{
	is($dst->safe_psql($i, 'SELECT count(*), sum(bal) FROM acct', dbname => 'r1'), "2000|$total",
		"plain dump taken while writers ran: the total holds through member $i");
}
# new keys through every member: none repeats a restored one
for my $i (0 .. $n - 1)
{
	$dst->safe_psql($i, 'INSERT INTO led (acct, amount) SELECT g, -1 FROM generate_series(1, 50) g',
		dbname => 'r1');
}
is($dst->safe_psql(0, q{SELECT count(*), count(DISTINCT id),
	min(id) FILTER (WHERE amount = -1) > max(id) FILTER (WHERE amount <> -1) FROM led},
	dbname => 'r1'), '1950|1950|t',
	'new led keys through every member: unique and past every restored key');
is($dst->safe_psql(1, q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'acct'::regclass
	AND tgname LIKE 'zzz_rdma_exchange%'}, dbname => 'r1'), '3',
	'the routing triggers are there once on another member');

# --- custom format, pg_restore -j 2 -------------------------------------------------
command_ok([ 'pg_dump', '-Fc', '-f', "$dir/quiet.dump", $src->member(0)->connstr($src->dbname) ],
	'pg_dump -Fc through member 0');
fresh_database('r2');
command_ok([ 'pg_restore', '-e', '-j', '2', '-d', $dst->member(0)->connstr('r2'), "$dir/quiet.dump" ],
	'pg_restore -j 2 -e of the custom-format dump');
$dst->safe_psql(0, 'SELECT count(*) FROM rdma_exchange.finish_restore()', dbname => 'r2');
check_restored('r2', 'pg_restore -j 2');
is($dst->safe_psql(0, 'SELECT count(*), sum(bal) FROM eur', dbname => 'r2'),
	$src->safe_psql(0, 'SELECT count(*), sum(bal) FROM eur'),
	'pg_restore -j 2: member 0\'s view, restored through member 0, reads the distributed tables');
is($dst->safe_psql(0, 'SELECT x, note FROM loc ORDER BY x', dbname => 'r2'),
	$src->safe_psql(0, 'SELECT x, note FROM loc ORDER BY x'),
	'pg_restore -j 2: member 0\'s local table, restored through member 0');
is($dst->safe_psql(1, q{SELECT to_regclass('loc') IS NULL}, dbname => 'r2'), 't',
	'... stays a local table there');

# --- directory format, section by section ------------------------------------------
command_ok([ 'pg_dump', '-Fd', '-j', '2', '-f', "$dir/dirdump", $src->member(1)->connstr($src->dbname) ],
	'pg_dump -Fd -j 2 through member 1');
fresh_database('r3');
for my $section ('pre-data', 'data')
{
	command_ok([ 'pg_restore', '-e', '--section', $section, ($section eq 'data' ? ('-j', '2') : ()),
		'-d', $dst->member(1)->connstr('r3'), "$dir/dirdump" ], "pg_restore --section $section");
}
$dst->safe_psql(1, 'SELECT count(*) FROM rdma_exchange.finish_restore()', dbname => 'r3');
command_ok([ 'pg_restore', '-e', '--section', 'post-data', '-d', $dst->member(1)->connstr('r3'),
	"$dir/dirdump" ], 'pg_restore --section post-data after finish_restore()');
check_restored('r3', 'directory format, by section');
is($dst->safe_psql(2, q{SELECT count(*) FROM pg_indexes WHERE tablename = 'acct'}, dbname => 'r3'),
	'2', 'post-data after finish_restore(): the indexes reach every member');

# --- into a plain server ---------------------------------------------------------------
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->start;
my $list = "$dir/plain.list";
IPC::Run::run([ 'pg_restore', '-l', "$dir/quiet.dump" ], '|', [ 'grep', '-v', 'rdma_exchange' ],
	'>', $list);
command_ok([ 'pg_restore', '-e', '-L', $list, '-d', $plain->connstr('postgres'), "$dir/quiet.dump" ],
	'the dump restores into a plain server without the extension\'s entries, no error');
for my $q (0 .. $#queries)
{
	is($plain->safe_psql('postgres', $queries[$q]), $want[$q], "plain server: query $q as in A");
}
is($plain->safe_psql('postgres', 'SELECT x, note FROM loc ORDER BY x'),
	$src->safe_psql(0, 'SELECT x, note FROM loc ORDER BY x'),
	'plain server: member 0\'s local table');
is($plain->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal}), '0',
	'plain server: no trigger of the extension');
$plain->stop;

$src->teardown;
$dst->teardown;
done_testing();
