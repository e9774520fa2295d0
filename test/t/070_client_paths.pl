# test/t/070_client_paths.pl: the differential suite of the ordinary client
# paths (issue 16): cursors, PL/pgSQL loops, SQL functions, views, CTEs,
# sublinks, prepared statements, transaction time, settings, system
# columns, TABLESAMPLE, user-defined types, whole-row references, joins
# whose sides are empty on some members, reads after writes and writes
# that join.
#
# The same rows are loaded into a 3-member cluster and into one plain
# PostgreSQL server (the oracle).  Every case of test/paths/*.sql runs as
# one psql script on the plain server, on the cluster entering through
# member 0, and again through member 1; the outputs (stdout and stderr
# together, errors included) must be the same.  One TAP result per case,
# named after the case; a failing case prints a diff per member it
# failed through, and a summary at the end lists the failing cases per
# file.  A run that hangs fails its case: statement_timeout ends a hung
# statement (the case goes on), a psql run is killed at a timeout, and
# one whose output grows past ten times the plain server's (a portal that
# starts again at every batch never ends) is killed too.
#
# Case files: test/paths/*.sql hold the cases, each starting at a marker
# line
#     -- case: NAME [unordered] [needs=citext] [refused]
# and running to the next marker; text before the first marker is the
# file's comment and does not run.  NAME is unique over all files.
# "unordered": the output lines are sorted before comparing (for results
# without ORDER BY, e.g. FETCHes from an unordered cursor: their union is
# still every row exactly once), and queries are not echoed so that the
# sort compares rows only.  "needs=citext": skipped when the citext
# contrib module is not installed.  "refused": what the cluster does not
# support yet (README says so); the cluster's output may then differ from
# the plain server's only by ending in a clear error ("... is not
# supported", "cannot ..."), never by other rows.  Cases run in psql with ON_ERROR_STOP
# off, unaligned and tuples only, echoing each statement (-e), without -q
# (command tags such as INSERT 0 3 or MOVE 5 are part of the answer) and
# without CONTEXT lines.  psql variables keys_m0, keys_m1, keys_m2 (quoted
# text keys of tk_a/tk_b) and ints_m0.. (int keys of the int-distributed
# tables) list three keys stored on that member only, so that a filter on
# them leaves rows on chosen members.  A case that writes must leave the
# data as it found it (BEGIN ... ROLLBACK): each case runs three times and
# both cluster runs share the data.  Session state (SET, temporary tables
# and functions, prepared statements) ends with the case.
#
# A case runs on the plain server and through both members at once, unless
# its text names a statement that writes or locks (INSERT, UPDATE, DELETE,
# MERGE, ..., FOR UPDATE): then through member 1 after member 0, and not
# through member 1 at all when member 0 hung.
#
# test/paths/setup/*.sql load the data, in name order: a *.members.sql
# file runs as it is on the plain server and on the cluster once on every
# member through rdma_exchange.run_on_all_nodes() (types, collations,
# roles, functions, policies: objects create_distributed_table() does not
# create); the others run on the plain server and on member 0 with psql
# variable rx = 0 or 1 (placement calls under \if :rx).  Files with
# "citext" in their name are skipped when citext is not installed.
#
# Environment:
#   RX_PATHS_CASES    a Perl regex: run only the cases whose name matches
#   RX_PATHS_TIMEOUT  seconds one psql run may take (default 60; the plain
#                     server runs every case in well under a second)
#   RX_PATHS_STATEMENT_TIMEOUT  statement_timeout of every run (default
#                     10s; the join cases set 5s themselves)
#   RX_PATHS_SERIAL   1: run every case through one member at a time (to
#                     look at a failure without the other run beside it)
#   RX_PATHS_ALL      1: run member 1 even after member 0 hung
use strict;
use warnings;

use File::Basename;
use File::Temp;
use FindBin;
use lib "$FindBin::RealBin/..";
use IPC::Run;
use Time::HiRes;
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $paths        = "$FindBin::RealBin/../paths";
my $run_timeout  = $ENV{RX_PATHS_TIMEOUT} // 60;
my $stmt_timeout = $ENV{RX_PATHS_STATEMENT_TIMEOUT} // '10s';
my $case_filter  = $ENV{RX_PATHS_CASES};
my $dbname       = 'paths';
my $tmp          = PostgreSQL::Test::Utils::tempdir();

# --- the cases ------------------------------------------------------------

# parse_cases(): list of { name, file, sql, unordered, needs }
sub parse_cases
{
	my (@cases, %seen);
	for my $file (sort glob("$paths/*.sql"))
	{
		my $base = basename($file);
		my $case;
		open my $fh, '<', $file or die "$file: $!";
		while (my $line = <$fh>)
		{
			if ($line =~ /^-- case:\s*(\S+)\s*(.*?)\s*$/)
			{
				my ($name, $opts) = ($1, $2);
				die "$base:$.: case name \"$name\" has odd characters\n"
				  unless $name =~ /^[A-Za-z0-9_.-]+$/;
				die "$base:$.: case \"$name\" also in $seen{$name}\n"
				  if $seen{$name};
				$seen{$name} = $base;
				$case = { name => $name, file => $base, sql => '', line => $. };
				for my $opt (split /\s+/, $opts)
				{
					if    ($opt eq 'unordered')    { $case->{unordered} = 1; }
					elsif ($opt eq 'refused')      { $case->{refused} = 1; }
					elsif ($opt =~ /^needs=(\w+)$/) { $case->{needs} = $1; }
					else { die "$base:$.: unknown case option \"$opt\"\n"; }
				}
				push @cases, $case;
			}
			elsif ($case)
			{
				$case->{sql} .= $line;
			}
		}
		close $fh;
	}
	return @cases;
}

my @cases = parse_cases();
@cases = grep { $_->{name} =~ /$case_filter/ } @cases if defined $case_filter;
note(scalar(@cases) . " cases");

# --- the servers ----------------------------------------------------------

# the same settings on both sides where they can change an answer or a
# message; client_connection_check_interval ends the backend of a psql
# killed at the timeout instead of leaving it running the hung statement
my @common_conf = (
	"lc_messages = 'C'",
	'max_parallel_workers_per_gather = 2',
	"client_connection_check_interval = '1s'");

my $rx = RxCluster->new(
	nmembers   => 3,
	dbname     => $dbname,
	start      => 0,
	extra_conf => \@common_conf);
$rx->start_all;
# UTF8 for the ICU collation (Cluster.pm's initdb may give SQL_ASCII);
# join_members keeps a database that exists
my $create_db =
  "CREATE DATABASE $dbname TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'";
$_->safe_psql('postgres', $create_db) for $rx->members;
$rx->join_members;

# the plain server takes its port as the members do (RX_TAP_PORTS)
my $plain = PostgreSQL::Test::Cluster->new('paths_plain',
	port => RxCluster::_free_port(0));
$plain->init;
$plain->append_conf('postgresql.conf',
	join("\n", "listen_addresses = '127.0.0.1'", @common_conf, ''));
$plain->start;
$plain->safe_psql('postgres', $create_db);

my $have_citext = $plain->safe_psql($dbname,
	"SELECT count(*) FROM pg_available_extensions WHERE name = 'citext'") eq '1';
note('citext ' . ($have_citext ? 'installed' : 'not installed: its cases are skipped'));

# --- running psql ---------------------------------------------------------

# run_psqls(timeout, job...): runs psql for every job at once and waits
# for all of them.  A job is a hash: node, sql, args (more psql arguments),
# limit (a sub giving the most bytes of output allowed so far).  Each gets
# out (its output) and status: 'done', 'timeout' (killed after timeout
# seconds) or 'runaway' (killed when its output passed its limit: a
# portal that starts again at every batch never ends, and psql's
# FETCH_COUNT would print forever).  The script comes on stdin as a file
# (-f -), so messages name their line (psql:<stdin>:N:).  CONTEXT lines
# are not shown: where an error was raised is not part of the answer
# (PostgreSQL's own parallel workers add "parallel worker", the cluster
# names the member), its ERROR, DETAIL and HINT are.  stdout and
# stderr go to one pipe; psql flushes its query output before it writes a
# message, so errors stay in place.
sub run_psqls
{
	my ($timeout, @jobs) = @_;
	local $ENV{PGOPTIONS}        = "-c statement_timeout=$stmt_timeout";
	local $ENV{PGCLIENTENCODING} = 'UTF8';
	local $ENV{PGAPPNAME}        = 'rx_client_paths';
	for my $j (@jobs)
	{
		# stdin from a file: a scalar would keep the pipe open until
		# finish(), and psql would wait for more input
		my ($fh, $file) = File::Temp::tempfile('case_XXXX',
			DIR => $tmp, SUFFIX => '.sql', UNLINK => 1);
		print $fh $j->{sql};
		close $fh;
		$j->{out}    = '';
		$j->{status} = 'running';
		$j->{h}      = IPC::Run::start(
			[ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=0',
			  '-v', 'SHOW_CONTEXT=never', '-f', '-',
			  @{ $j->{args} // [] }, '-d', $j->{node}->connstr($dbname) ],
			'<', $file, '>&', \$j->{out});
	}
	my $deadline = Time::HiRes::time() + $timeout;
	while (my @running = grep { $_->{status} eq 'running' } @jobs)
	{
		for my $j (@running)
		{
			# psql may exit between pumpable() and pump_nb(), which then
			# dies; finish() collects what is left either way
			my $pumped = 0;
			if ($j->{h}->pumpable)
			{
				$pumped = eval { $j->{h}->pump_nb; 1 };
				die $@ if !$pumped && $@ !~ /process ended prematurely/;
			}
			if (!$pumped)
			{
				$j->{h}->finish;
				$j->{status} = 'done';
				next;
			}
			my $limit = $j->{limit} ? $j->{limit}->() : undef;
			my $why =
			    Time::HiRes::time() > $deadline ? 'timeout'
			  : defined $limit && length($j->{out}) > $limit ? 'runaway'
			  : undef;
			next unless $why;
			$j->{h}->kill_kill(grace => 2);
			$j->{status} = $why;
			$j->{out} .= $why eq 'timeout'
			  ? "\n<<< psql killed after $timeout s (timeout) >>>\n"
			  : "\n<<< psql killed: output past $limit bytes >>>\n";
		}
		Time::HiRes::sleep(0.005);
	}
	return @jobs;
}

# run_psql(node, sql, timeout, @psql_args): (output, timed out?)
sub run_psql
{
	my ($node, $sql, $timeout, @args) = @_;
	my ($j) = run_psqls($timeout, { node => $node, sql => $sql, args => \@args });
	return ($j->{out}, $j->{status} ne 'done');
}

# setup_file(node, file, rx, via_members): 1 when the file ran without error
sub setup_file
{
	my ($node, $file, $rx_flag, $via_members) = @_;
	my $sql = PostgreSQL::Test::Utils::slurp_file($file);
	if ($via_members)
	{
		$sql = "SELECT rdma_exchange.run_on_all_nodes(\$rx_setup\$\n$sql\n\$rx_setup\$);\n";
	}
	# loading is not what the statement timeout of the cases is for
	$sql = "SET statement_timeout = 0;\n$sql";
	my ($out, $timed_out) = run_psql($node, $sql, 300,
		'-q', '-v', 'ON_ERROR_STOP=1', '-v', "rx=$rx_flag");
	my $ok = !$timed_out && $out !~ /\b(ERROR|FATAL|PANIC):/;
	diag("setup $file:\n$out") unless $ok;
	return $ok;
}

# --- loading the data -----------------------------------------------------

for my $file (sort glob("$paths/setup/*.sql"))
{
	my $base = basename($file);
	next if $base =~ /citext/ && !$have_citext;
	my $members = $base =~ /\.members\.sql$/;
	# the oracle must load: without it no answer means anything
	setup_file($plain, $file, 0, 0)
	  or BAIL_OUT("setup $base fails on the plain server");
	ok(setup_file($rx->coordinator, $file, 1, $members),
		"setup $base on the cluster" . ($members ? ' (every member)' : ''));
}

# keys stored on one member only (member_index_of() is the placement of a
# table distributed on a column of the value's type), three per member
my %vars;
for my $kind ([ 'keys', q{'k' || i}, 'text' ], [ 'ints', 'i', 'int' ])
{
	my ($prefix, $expr, $type) = @$kind;
	my %by_member;
	for my $line (split /\n/, $rx->safe_psql(0,
		"SELECT rdma_exchange.member_index_of(($expr)::$type), $expr "
		  . 'FROM generate_series(1, 200) i ORDER BY i'))
	{
		my ($m, $v) = split /\|/, $line;
		push @{ $by_member{$m} }, $v if @{ $by_member{$m} // [] } < 3;
	}
	for my $m (0 .. 2)
	{
		BAIL_OUT("no three $type keys on member $m among 1..200")
		  unless @{ $by_member{$m} // [] } == 3;
		$vars{"${prefix}_m$m"} = join ',',
		  map { $type eq 'text' ? "'$_'" : $_ } @{ $by_member{$m} };
	}
}
note(join ', ', map { "$_ = $vars{$_}" } sort keys %vars);
my @var_args = map { ('-v', "$_=$vars{$_}") } sort keys %vars;

# --- the harness checks itself --------------------------------------------

{
	# a difference is seen: the server's own port differs on every server
	my $q = "SELECT current_setting('port');\n";
	my ($a) = run_psql($plain,           $q, 30);
	my ($b) = run_psql($rx->coordinator, $q, 30);
	isnt($a, $b, 'harness: outputs that differ are seen to differ');
	# errors come back in place
	my ($e) = run_psql($plain, "SELECT 1;\nSELECT 1/0;\nSELECT 2;\n", 30);
	like($e, qr/^1\npsql:<stdin>:2: ERROR:  division by zero\n2\n$/,
		'harness: errors are kept, in order');
	# a hang is cut at the timeout
	my ($h, $timed_out) = run_psql($plain, "SELECT pg_sleep(30);\n", 2);
	ok($timed_out, 'harness: a psql run is killed at its timeout');
	# and an endless output at its limit
	my ($j) = run_psqls(30, { node => $plain, limit => sub { 100000 },
		sql => "\\set FETCH_COUNT 100\nSELECT generate_series(1, 10000000);\n" });
	is($j->{status}, 'runaway', 'harness: a psql run is killed when its output passes its limit');
}

# --- comparing ------------------------------------------------------------

# normalize(case, output): what is compared (sorted lines when unordered)
sub normalize
{
	my ($case, $out) = @_;
	return $out unless $case->{unordered};
	return join('', map { "$_\n" } sort split /\n/, $out);
}

# diff_of(name, want, got, label): diff -u of the two outputs, cut short
sub diff_of
{
	my ($name, $want, $got, $label) = @_;
	my ($fa, $fb) = ("$tmp/$name.plain", "$tmp/$name.cluster");
	for ([ $fa, $want ], [ $fb, $got ])
	{
		open my $fh, '>', $_->[0] or die "$_->[0]: $!";
		print $fh $_->[1];
		close $fh;
	}
	my $diff = '';
	IPC::Run::run([ 'diff', '-u', '--label', 'plain server',
			'--label', $label, $fa, $fb ], '>', \$diff);
	# an endless output makes an endless diff
	my @lines = split /\n/, $diff;
	return $diff if @lines <= 150;
	return join("\n", @lines[ 0 .. 149 ], '... (' . (@lines - 150) . ' more lines)', '');
}

# statements that write or lock: such a case runs through one member at a
# time (comments count too; a false match only costs time)
my $writes_re = qr/\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|COPY|ALTER|DROP|GRANT|REVOKE|LOCK|CALL)\b/i;

# hung(oracle, run): the run was killed, or a statement the plain server
# finished did not finish within statement_timeout
sub hung
{
	my ($oracle, $run) = @_;
	my $re = qr/canceling statement due to statement timeout/;
	return $run->{status} ne 'done' || ($run->{out} =~ $re && $oracle->{out} !~ $re);
}

my (%failed, $nfailed);
for my $case (@cases)
{
	my $name = $case->{name};
	if ($case->{needs} && !($case->{needs} eq 'citext' && $have_citext))
	{
	  SKIP: { skip("$name: needs $case->{needs}", 1); }
		next;
	}
	my @args = (@var_args, $case->{unordered} ? () : ('-e'));
	my $oracle = { node => $plain, sql => $case->{sql}, args => \@args };
	# a cluster run may print at most ten times what the plain server
	# printed (while that is not known yet, 8 MB)
	my $limit = sub {
		$oracle->{status} eq 'running' ? 8 << 20 : 10 * length($oracle->{out}) + (1 << 20);
	};
	my @runs = map {
		{ node => $rx->member($_), sql => $case->{sql}, args => \@args,
		  limit => $limit, member => $_ }
	} (0, 1);
	# The plain server is another server: it always runs alongside.  A
	# case that only reads runs through both members at once (most of a
	# run's time is setting up the member connections); one that may
	# write or lock runs through member 1 after member 0, and not at all
	# when member 0 hung.
	my $serial = $ENV{RX_PATHS_SERIAL} || $case->{sql} =~ $writes_re;
	my (@problems, @notes);
	if ($serial)
	{
		run_psqls($run_timeout, $oracle, $runs[0]);
		if (hung($oracle, $runs[0]) && !$ENV{RX_PATHS_ALL})
		{
			pop @runs;
			push @notes, 'via member 1: not run (member 0 hung)';
		}
		else
		{
			run_psqls($run_timeout, $runs[1]);
		}
	}
	else
	{
		run_psqls($run_timeout, $oracle, @runs);
	}
	push @problems, "the plain server: $oracle->{status}"
	  if $oracle->{status} ne 'done';
	my $want = normalize($case, $oracle->{out});
	for my $run (@runs)
	{
		my $got = normalize($case, $run->{out});
		next if $got eq $want;
		# what the cluster refuses by design: a clear error, never rows
		next
		  if $case->{refused}
		  && $run->{status} eq 'done'
		  && $got =~ /^psql:\S+ ERROR:  .*(?:not supported|cannot)/m;
		my $what =
		    $run->{status} eq 'timeout' ? 'psql timed out (hang)'
		  : $run->{status} eq 'runaway' ? 'endless output'
		  : hung($oracle, $run) ? 'statement timeout (hang)'
		  : 'different output';
		push @problems, "via member $run->{member}: $what\n"
		  . diff_of($name, $want, $got, "cluster via member $run->{member}");
	}
	my $ok = ok(!@problems, $name);
	unless ($ok)
	{
		diag("$name ($case->{file}:$case->{line}):\n" . join("\n", @problems, @notes));
		push @{ $failed{ $case->{file} } }, $name;
		$nfailed++;
	}
}

if ($nfailed)
{
	diag("$nfailed of " . scalar(@cases) . ' cases differ from the plain server:');
	diag("  $_: " . join(' ', @{ $failed{$_} })) for sort keys %failed;
}

$plain->stop;
$rx->teardown;
done_testing();
