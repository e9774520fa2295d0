# test/t/040_concurrency.pl: several sessions run distributed queries at
# the same time, from every member as coordinator, while another session
# cancels its own queries again and again; then two coordinators update
# the same rows at the same time.  Every answer must equal the
# single-server answer (the transport keeps the queries' streams apart by
# query id, token and exchange), the cancelled session must not disturb the
# others, and afterwards nothing is left running or held on any member.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);
my $n  = $rx->nmembers;

$rx->safe_psql(0, q{
	CREATE TABLE c (id int PRIMARY KEY, k int, v text);
	INSERT INTO c SELECT i, (i * 13) % 40000, md5(i::text) FROM generate_series(1, 40000) i;
	CREATE TABLE c_local AS SELECT * FROM c;
	SELECT rdma_exchange.create_distributed_table('c', 'id');
	ANALYZE c; ANALYZE c_local;
});
# the local copy exists on member 0 only: the other members, coordinating
# queries below, compare with answers computed there
my %queries = (
	repartition => 'SELECT count(*), sum(x.id), md5(string_agg(y.v, \',\' ORDER BY x.id)) FROM %s x JOIN %s y ON x.k = y.id',
	groups      => 'SELECT md5(string_agg(k || \':\' || n, \',\' ORDER BY k)) FROM (SELECT k, count(*) AS n FROM %s GROUP BY k) g',
	top         => 'SELECT string_agg(id::text, \',\') FROM (SELECT id FROM %s ORDER BY v DESC, id LIMIT 20) t',
);
my %expected;
$expected{$_} = $rx->safe_psql(0,
	'SELECT a::text FROM (' . sprintf($queries{$_}, 'c_local', 'c_local') . ') a')
  for keys %queries;

my $rounds = 4;
my @sessions;
for my $s (0 .. 3)
{
	my $coordinator = $s % $n;
	my $sql = '';
	for my $r (1 .. $rounds)
	{
		for my $q (sort keys %queries)
		{
			$sql .= "SELECT '$q', a::text FROM (" . sprintf($queries{$q}, 'c', 'c') . ") a;\n";
		}
	}
	my ($out, $err) = ('', '');
	my $h = $rx->background_psql($coordinator, $sql, \$out, \$err);
	push @sessions, { h => $h, out => \$out, err => \$err, coordinator => $coordinator };
}

# meanwhile: a session that starts a slow query and cancels it, repeatedly
my $slow = q{SELECT count(*) FROM c x JOIN c y ON x.k = y.id WHERE pg_sleep(0.0002) IS NOT NULL};
my $cancelled = 0;
for my $i (1 .. 3)
{
	my ($ret, $out, $err) = $rx->psql(1, "SET statement_timeout = '700ms'; $slow");
	$cancelled++ if $ret != 0 && $err =~ /canceling statement due to statement timeout/;
}
is($cancelled, 3, 'the cancelled session got the usual message every time');

for my $s (0 .. $#sessions)
{
	my $sess = $sessions[$s];
	$sess->{h}->finish;
	is(${ $sess->{err} }, '', "session $s (coordinator member $sess->{coordinator}): no error");
	my %got;
	my $wrong = 0;
	my $count = 0;
	for my $line (split /\n/, ${ $sess->{out} })
	{
		my ($q, $answer) = split /\|/, $line, 2;
		$count++;
		$wrong++ if $answer ne $expected{$q};
	}
	is($count, $rounds * scalar(keys %queries), "session $s: every query answered");
	is($wrong, 0, "session $s: every answer equals the single-server answer");
}

$rx->check_clean('after the sessions');

# UPDATEs of the same rows from two coordinators at once, one row on
# each member: every statement locks its row on each member in the same
# member order, whichever member coordinates it, so the statements take
# turns instead of deadlocking across members (which no deadlock detector
# would see; the statement_timeout would end it).  One row per member: two
# UPDATEs of many rows of one table may deadlock on a single server too.
$rx->safe_psql(0, 'CREATE TABLE w (id int PRIMARY KEY, n int);
	INSERT INTO w SELECT i, 0 FROM generate_series(1, 3000) i;
	SELECT rdma_exchange.create_distributed_table(\'w\', \'id\')');
my $rows = $rx->safe_psql(0, 'SELECT string_agg(id::text, \',\') FROM
	(SELECT min(id) AS id FROM w GROUP BY rdma_exchange.member_index_of(id)) s');
my @updaters;
for my $coordinator (0, 1)
{
	my $sql = "SET statement_timeout = '60s';\n"
	  . ("UPDATE w SET n = n + 1 WHERE id IN ($rows);\n" x 50);
	my ($out, $err) = ('', '');
	my $h = $rx->background_psql($coordinator, $sql, \$out, \$err);
	push @updaters, { h => $h, err => \$err, coordinator => $coordinator };
}
for my $u (@updaters)
{
	$u->{h}->finish;
	is(${ $u->{err} }, '', "updates from member $u->{coordinator}: no error");
}
is($rx->safe_psql(0, "SELECT count(*), min(n), max(n) FROM w WHERE id IN ($rows)"),
	"$n|100|100", 'updates from two coordinators: every row updated by every statement');
is($rx->safe_psql(0, "SELECT count(*) FROM w WHERE n <> 0"), $n,
	'updates from two coordinators: no other row changed');
$rx->check_clean('after the updates');
for my $i (0 .. $n - 1)
{
	is($rx->safe_psql($i,
		"SELECT value FROM rdma_exchange.transport_stats() WHERE name = 'ports_open'"),
		'0', "no transport port left open on member $i");
}

$rx->teardown;
done_testing();
