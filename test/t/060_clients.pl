# test/t/060_clients.pl: real client libraries read a distributed table
# through a cursor, in batches, and get every row exactly once: the rows of
# a single PostgreSQL server loaded with the same data, none twice, none
# missing.
#
# The clients read a result the ways applications do, each fetching 500 or
# 1000 rows at a time from a cursor or portal that stays open between
# batches:
#   psycopg2  named cursor, itersize 500 (DECLARE CURSOR, FETCH FORWARD 500)
#   JDBC      pgJDBC, autocommit off, setFetchSize(500) (a portal executed
#             500 rows at a time)
#   node      node-postgres and pg-cursor, read(500) until empty (a portal)
#   psql      \set FETCH_COUNT 1000 (DECLARE CURSOR, FETCH FORWARD 1000)
# and, separately, psql running a SQL cursor by hand (DECLARE c CURSOR,
# FETCH 500 c until empty, COMMIT).  Each streams a plain, an ordered and a
# joining and aggregating query, entering through member 0 and through
# member 1, also in a transaction that first wrote to a temporary table.
# The subtest "write to distributed table t ..." opens the cursor after an
# INSERT into the distributed table itself in the same transaction, which
# the cluster refuses with an error by design: it checks that refusal.
#
# The answer to compare with comes from psql on the single server (a plain
# PostgreSQL without the extension); every client also runs against the
# single server first, so that a broken client shows as such and not as a
# wrong answer of the cluster.  A client that prints more than twice the
# answer's rows is stopped (the rows repeat), and one that runs longer than
# 60 s is killed: both are failures.
#
# The clients are test/clients/*; pg and pg-cursor are installed here with
# npm from the npm registry (test/clients/package.json and its lock file),
# and Stream.java is compiled once per run.  The Debian packages come from
# test/install-deps.sh.
use strict;
use warnings;

use File::Copy;
use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $clients = "$FindBin::RealBin/../clients";
my $tmp     = PostgreSQL::Test::Utils::tempdir();
my $user    = getpwuid($<);
my $db      = 'postgres';
my $client_timeout = 60;

# the rows: text and numeric columns with NULLs, 60000 of them, so that
# k < 15000 gives 14999 rows, 30 batches of 500
my $load = q{
	CREATE TABLE t (k int, g int, s text, n numeric(12,2));
	INSERT INTO t
	SELECT i, i % 97,
		CASE WHEN i % 11 = 0 THEN NULL ELSE 'row ' || i || repeat('x', i % 13) END,
		CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1.25 END
	FROM generate_series(1, 60000) i;
};
my %queries = (
	plain   => 'SELECT k, g, s, n FROM t WHERE k < 15000',
	ordered => 'SELECT k, g, s, n FROM t WHERE k < 15000 ORDER BY k',
	# a join that is not co-located (u.k = 2 t.k + 1) and 5000 groups
	join => 'SELECT t.k % 5000 AS m, count(*), sum(t.n), max(u.s) '
	  . 'FROM t JOIN t u ON u.k = t.k * 2 + 1 WHERE t.k < 15000 GROUP BY 1',);
my @query_names = qw(plain ordered join);
my $temp_write = 'CREATE TEMP TABLE scratch AS SELECT generate_series(1, 100) AS x; '
  . 'INSERT INTO scratch VALUES (0)';
# rows with negative keys, so that the plain query must return them too
my $dist_write = q{INSERT INTO t SELECT -i, i % 97, 'written ' || i, i * 0.5 }
  . q{FROM generate_series(1, 700) i};

# --- the servers ---------------------------------------------------------------
my $rx = RxCluster->new(nmembers => 3);
$rx->safe_psql(0, $load
	  . "SELECT rdma_exchange.create_distributed_table('t', 'k')");

my $single = PostgreSQL::Test::Cluster->new('clients_single');
$single->init;
$single->append_conf('postgresql.conf', "listen_addresses = '127.0.0.1'\n");
$single->start;
$single->safe_psql($db, $load);

# --- the clients ---------------------------------------------------------------
# psycopg2 is Debian's, for Debian's python3 (PATH may name another first)
my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
my $jdbc_jar = '/usr/share/java/postgresql.jar';
my $classes  = "$tmp/classes";
my $node_dir = "$tmp/node";

# runs a command (in directory $dir when given) with a timeout: (ok,
# what it printed)
sub run_cmd
{
	my ($cmd, $timeout, $dir) = @_;
	my $out = '';
	my $ok  = eval {
		IPC::Run::run($cmd,
			(defined $dir ? (init => sub { chdir $dir or die "chdir $dir: $!" }) : ()),
			'<', \undef, '>&', \$out, IPC::Run::timeout($timeout));
	};
	return ($ok ? 1 : 0, ($@ // '') . $out);
}

my ($ok, $out) = run_cmd([ $python, '-c', 'import psycopg2' ], 60);
ok($ok, "python3 has psycopg2 ($python)") or diag($out);

mkdir $classes or die "mkdir $classes: $!";
($ok, $out) = run_cmd(
	[ 'javac', '-d', $classes, '-cp', $jdbc_jar, "$clients/Stream.java" ], 120);
ok($ok, 'Stream.java compiles against pgJDBC') or diag($out);

# a missing pg or pg-cursor fails the test: the node client then fails too
mkdir $node_dir or die "mkdir $node_dir: $!";
for my $f (qw(package.json package-lock.json))
{
	File::Copy::copy("$clients/$f", "$node_dir/$f") or die "copy $f: $!";
}
{
	# npm keeps its cache under $HOME, which need not be the test user's
	local $ENV{npm_config_cache}           = "$tmp/npm-cache";
	local $ENV{npm_config_update_notifier} = 'false';
	($ok, $out) = run_cmd([ 'npm', 'install', '--no-audit', '--no-fund' ], 300, $node_dir);
	ok($ok && -d "$node_dir/node_modules/pg-cursor", 'npm installs pg and pg-cursor')
	  or diag($out);
}

# every client: the command streaming QUERY (after WRITE, when given) from
# a server
my @clients = (
	{
		name => 'psycopg2',
		cmd  => sub {
			my ($node, $query, $write) = @_;
			return [ $python, "$clients/stream.py", '127.0.0.1', $node->port,
				$db, $user, $query, defined $write ? $write : () ];
		},
	},
	{
		name => 'JDBC',
		cmd  => sub {
			my ($node, $query, $write) = @_;
			# a short-lived JVM starts faster on the C1 compiler alone
			return [ 'java', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC',
				'-cp', "$classes:$jdbc_jar", 'Stream', '127.0.0.1', $node->port,
				$db, $user, $query, defined $write ? $write : () ];
		},
	},
	{
		name => 'node pg-cursor',
		cmd  => sub {
			my ($node, $query, $write) = @_;
			return [ 'env', "NODE_PATH=$node_dir/node_modules", 'node',
				"$clients/stream.js", '127.0.0.1', $node->port, $db, $user,
				$query, defined $write ? $write : () ];
		},
	},
	{
		name => 'psql FETCH_COUNT',
		cmd  => sub {
			my ($node, $query, $write) = @_;
			return [
				psql_cmd($node), '-v', 'FETCH_COUNT=1000',
				defined $write
				? ('-c', 'BEGIN', '-c', $write, '-c', $query, '-c', 'ROLLBACK')
				: ('-c', $query) ];
		},
	},);

# psql printing rows as the other clients do: tab-separated, NULL as \N
sub psql_cmd
{
	my ($node) = @_;
	return ('psql', '-X', '-q', '-At', '-F', "\t", '-P', 'null=\\N',
		'-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', $node->port,
		'-U', $user, '-d', $db);
}

# runs a client; stops it once it printed more than max_lines lines, kills
# it after $client_timeout seconds.  Returns { lines, error, stderr } where
# error says why the run did not end well (undef when it did).
sub run_client
{
	my ($cmd, $max_lines) = @_;
	my ($out, $err) = ('', '');
	my $timer = IPC::Run::timeout($client_timeout);
	my $h = IPC::Run::start($cmd, '<', \undef, '>', \$out, '2>', \$err, $timer);
	my $error;
	eval {
		while ($h->pumpable)
		{
			$h->pump;
			if (($out =~ tr/\n//) > $max_lines)
			{
				$error = "stopped after more than $max_lines lines: the rows repeat";
				last;
			}
		}
		1;
	} or $error = "killed after ${client_timeout} s: $@";
	if (defined $error)
	{
		$h->kill_kill;
	}
	elsif (!$h->finish)
	{
		$error = 'exit code ' . ($h->full_result >> 8);
	}
	$error .= "\nstderr: " . substr($err, 0, 2000) if defined $error && $err ne '';
	my @lines = split /\n/, $out;
	return { lines => \@lines, error => $error, stderr => $err };
}

# the single server's answer, from psql (queries run with their write in
# one transaction)
my %oracle;

sub oracle
{
	my ($query, $write) = @_;
	my $key = $query . "\0" . ($write // '');
	return $oracle{$key} if $oracle{$key};
	my $script = defined $write ? "BEGIN;\n$write;\n$query;\nROLLBACK;\n" : "$query;\n";
	my $out = $single->safe_psql($db, $script,
		extra_params => [ '-F', "\t", '-P', 'null=\\N' ]);
	my @lines = split /\n/, $out;
	die "the single server's answer to $query is empty" unless @lines;
	return $oracle{$key} = \@lines;
}

# checks a client's lines against the single server's: finished in time,
# as many rows, no key (the first column) twice, the same rows, and with
# $ordered in the same order
sub check_rows
{
	my ($what, $got, $want, $ordered) = @_;
	my @got = @{ $got->{lines} };
	ok(!defined $got->{error}, "$what: finished") or diag($got->{error});
	is(scalar @got, scalar @$want, "$what: row count");
	my (%seen, @twice);
	for (@got)
	{
		my ($key) = split /\t/;
		push @twice, $key if ++$seen{$key} == 2;
	}
	is(scalar @twice, 0, "$what: no row twice")
	  or diag(scalar(@twice) . ' keys more than once, e.g. '
		  . join(', ', @twice[ 0 .. ($#twice < 4 ? $#twice : 4) ]));
	my $same = join("\n", sort @got) eq join("\n", sort @$want);
	ok($same, "$what: the single server's rows") or diag(diff_summary(\@got, $want));
	ok(join("\n", @got) eq join("\n", @$want), "$what: in the single server's order")
	  if $ordered && $same;
	return;
}

# how two sets of lines differ, in a few lines
sub diff_summary
{
	my ($got, $want) = @_;
	my (%g, %w);
	$g{$_}++ for @$got;
	$w{$_}++ for @$want;
	my @missing = grep { ($g{$_} // 0) < $w{$_} } sort keys %w;
	my @extra   = grep { ($w{$_} // 0) < $g{$_} } sort keys %g;
	my $s = sprintf("%d rows, expected %d; %d missing, %d extra or repeated",
		scalar @$got, scalar @$want, scalar @missing, scalar @extra);
	$s .= "\nmissing: $_" for @missing[ 0 .. ($#missing < 2 ? $#missing : 2) ];
	$s .= "\nextra: $_"   for @extra[ 0 .. ($#extra < 2 ? $#extra : 2) ];
	return $s;
}

# runs a client on the single server, then through each member given;
# compares every answer with the oracle's
sub check_client
{
	my ($client, $label, $query, $write, $ordered, @members) = @_;
	my $want = oracle($query, $write);
	my $max  = 2 * @$want + 1000;
	my $got  = run_client($client->{cmd}->($single, $query, $write), $max);
	check_rows("$client->{name}, $label, single server", $got, $want, $ordered);
	for my $i (@members)
	{
		$got = run_client($client->{cmd}->($rx->member($i), $query, $write), $max);
		check_rows("$client->{name}, $label, through member $i", $got, $want, $ordered);
	}
	return;
}

# --- the cases -----------------------------------------------------------------
for my $client (@clients)
{
	subtest "$client->{name}: queries streamed in batches" => sub {
		for my $q (@query_names)
		{
			check_client($client, "$q query", $queries{$q}, undef,
				$q eq 'ordered', 0, 1);
		}
	};
	subtest "$client->{name}: streamed after a write to a temporary table" => sub {
		check_client($client, 'plain query after a temp table write',
			$queries{plain}, $temp_write, 0, 0, 1);
	};
}

# a SQL cursor fetched by hand: as many FETCH 500 as the single server needs
# to come back empty
subtest 'psql: DECLARE CURSOR, FETCH 500 until empty, COMMIT' => sub {
	for my $q (qw(plain ordered))
	{
		my $want    = oracle($queries{$q});
		my $fetches = int(@$want / 500) + 1;
		my $sql = "BEGIN;\nDECLARE c CURSOR FOR $queries{$q};\n"
		  . ("FETCH 500 c;\n" x $fetches) . "COMMIT;\n";
		my $cursor_client = {
			name => 'psql SQL cursor',
			cmd  => sub { [ psql_cmd($_[0]), '-c', $sql ] },
		};
		check_client($cursor_client, "$q query", $queries{$q}, undef,
			$q eq 'ordered', 0, 1);
	}
};

# a write to the distributed table itself, then the cursor, in one
# transaction: the fragments run in the transaction (its remote
# transactions on the members, a parallel worker on the coordinator) and
# must see the written rows, every one exactly once
subtest 'write to distributed table t, then a cursor over t, in one transaction' => sub {
	for my $client (@clients)
	{
		check_client($client, 'plain query after an INSERT into t',
			$queries{plain}, $dist_write, 0, 0, 1);
		check_client($client, 'ordered query after an INSERT into t',
			$queries{ordered}, $dist_write, 1, 0, 1);
	}
	# every client rolled back
	is($rx->safe_psql(0, 'SELECT count(*) FROM t'), '60000',
		'the INSERTs rolled back left t as it was');
};

$rx->check_clean('after the clients');

$single->stop;
$rx->teardown;
done_testing();
