# test/t/050_tpch.pl: the 22 TPC-H queries at scale factor 0.01, in both
# table layouts and with both index sets of bench/tpch/load.sh (pk: the
# primary keys; fk: also an index on every foreign key column, whose plans
# differ), give the answers of a single PostgreSQL server loaded with the
# same data and indexes.
#
# The data comes from bench/tpch/dbgen through bench/tpch/load.sh (every
# member loads a share through its own COPY), the comparison from
# bench/tpch/check.sh: rows sorted, numbers rounded as a TPC-H report
# prints them.  The single server is a plain PostgreSQL without the
# extension.  At this scale Q16's NOT IN list and the answers of Q18 and
# Q20 are empty with the validation parameters, so those three also run
# with parameters that give rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tpch = "$FindBin::RealBin/../../bench/tpch";
my $sf   = '0.01';
# RX_TPCH_SETS: the layouts and index sets to run (default all four;
# test/rdma/verbs-tests.sh runs "a:pk" under the emulated CPU of its guest)
my %sets = map { $_ => 1 } split ' ', ($ENV{RX_TPCH_SETS} // 'a:pk b:pk a:fk b:fk');
# RX_TPCH_DESIGNS: the transport designs the queries run with, one after
# the other on the same data (default: the cluster's own, which
# run-tests.sh sets per run; test/rdma/verbs-tests.sh with RX_VERBS_JOBS
# names four in each of two runs)
my @designs = split ' ', ($ENV{RX_TPCH_DESIGNS} // '');
@designs = ('') unless @designs;
# then once more with two parallel workers per member, every partial part
# of a fragment given them (the cluster's design; RX_TPCH_WORKERS=0: not)
push @designs, 'workers' if ($ENV{RX_TPCH_WORKERS} // 1);
my $workers_options = '-c rdma_exchange.workers_per_member=2 -c min_parallel_table_scan_size=0 -c parallel_setup_cost=0 -c parallel_tuple_cost=0';

my $rx = RxCluster->new(nmembers => 3, dbname => 'tpch');

my $single = PostgreSQL::Test::Cluster->new('tpch_single');
$single->init;
$single->append_conf('postgresql.conf',
	"listen_addresses = '127.0.0.1'\nmax_parallel_workers_per_gather = 2\n");
$single->start;
$single->safe_psql('postgres', 'CREATE DATABASE tpch');

# load.sh and check.sh talk to the servers through libpq's environment
sub env_of
{
	my ($node) = @_;
	return (PGHOST => '127.0.0.1', PGPORT => $node->port, PGDATABASE => 'tpch');
}

sub run_script
{
	my ($env, @cmd) = @_;
	local %ENV = (%ENV, @$env);
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr);
	return ($ok, $stdout, $stderr);
}

my @coord = env_of($rx->coordinator);
my %loads = (
	tpch_a    => [ \@coord,               'a',     'pk' ],
	tpch_b    => [ \@coord,               'b',     'pk' ],
	tpch      => [ [ env_of($single) ], 'local', 'pk' ],
	tpch_a_fk => [ \@coord,               'a',     'fk' ],
	tpch_b_fk => [ \@coord,               'b',     'fk' ],
	tpch_fk   => [ [ env_of($single) ], 'local', 'fk' ]);
# (the single server's schema of an index set when any layout uses it)
for my $schema (keys %loads)
{
	my (undef, $layout, $indexes) = @{ $loads{$schema} };
	delete $loads{$schema}
	  unless $sets{"$layout:$indexes"}
	  || ($layout eq 'local' && grep { /:$indexes$/ } keys %sets);
}
for my $schema (sort keys %loads)
{
	my ($env, $layout, $indexes) = @{ $loads{$schema} };
	my ($ok, $out, $err) = run_script([ @$env, RX_INDEX_SET => $indexes ],
		'bash', "$tpch/load.sh", $sf, $layout, $schema);
	ok($ok, "load.sh SF $sf layout $layout into $schema") or diag($err);
	like($out, qr/^lineitem 59794$/m, "$schema: lineitem has all its rows")
	  or diag($out);
}

# every member holds a part of a distributed table, and all of a reference
# table
for my $i (0 .. $rx->nmembers - 1)
{
	my ($dist) = grep { $loads{$_} } qw(tpch_a tpch_a_fk tpch_b tpch_b_fk);
	my ($li, $nation) = split /\|/, $rx->safe_psql($i,
		"SET rdma_exchange.enable = off; SELECT (SELECT count(*) FROM $dist.lineitem), "
		  . "(SELECT count(*) FROM $dist.nation)");
	ok($li > 10000 && $li < 30000, "member $i holds a third of lineitem ($li rows)");
	is($nation, 25, "member $i holds all of reference table nation");
	next unless $loads{tpch_b};
	is($rx->safe_psql($i,
		'SET rdma_exchange.enable = off; SELECT count(*) FROM tpch_b.customer'),
		1500, "member $i holds all of customer in layout b");
}

# the same query text with other substitution parameters
my $variants = PostgreSQL::Test::Utils::tempdir();
my %variant = (
	q16 => [ '%Customer%Complaints%', '%quickly%' ],
	q18 => [ '> 300', '> 250' ],
	q20 => [ "'forest%'", "'green%'" ],
	q20b => [ "'CANADA'", "'GERMANY'" ]);
for my $q (qw(q16 q18 q20))
{
	my $text = PostgreSQL::Test::Utils::slurp_file("$tpch/queries/$q.sql");
	for my $v (grep { /^$q/ } sort keys %variant)
	{
		my ($from, $to) = @{ $variant{$v} };
		my $n = ($text =~ s/\Q$from\E/$to/g);
		ok($n > 0, "$q: parameter $from replaced by $to");
	}
	open my $fh, '>', "$variants/${q}v.sql" or die $!;
	print $fh $text;
	close $fh;
}

is($rx->safe_psql(2, q{SELECT count(*) FROM pg_indexes WHERE schemaname = 'tpch_a_fk'}),
	$single->safe_psql('tpch', q{SELECT count(*) FROM pg_indexes WHERE schemaname = 'tpch_fk'}),
	'index set fk: every index on every member')
  if $loads{tpch_a_fk};

my $answers = PostgreSQL::Test::Utils::tempdir();
for my $design (@designs)
{
	# a session setting, which the shipped fragments carry
	my @design_env =
	    $design eq 'workers' ? (PGOPTIONS => $workers_options)
	  : $design ne ''        ? (PGOPTIONS => "-c rdma_exchange.transport_design=$design")
	  :                        ();
	for my $set (['', 'pk'], ['_fk', 'fk'])
	{
		my ($suffix, $indexes) = @$set;
		for my $layout (qw(a b))
		{
			next unless $sets{"$layout:$indexes"};
			my $label = "layout $layout, index set $indexes"
			  . ($design ne '' ? ", design $design" : '');
			# the single server's answers once, for every design
			my @env = (@coord, @design_env, RX_LOCAL_PORT => $single->port,
				RX_LOCAL_DB => 'tpch', RX_LOCAL_ANSWERS => "$answers/tpch$suffix");
			my ($ok, $out, $err) = run_script(\@env, 'bash', "$tpch/check.sh",
				"tpch_$layout$suffix", "tpch$suffix");
			ok($ok, "$label: check.sh passes") or diag($out . $err);
			for my $q (map { sprintf('q%02d', $_) } 1 .. 22)
			{
				like($out, qr/^$q  same /m, "$label: $q gives the single server's answer");
			}

			($ok, $out, $err) = run_script([ @env, RX_QUERY_DIR => $variants,
					RX_LOCAL_ANSWERS => "$answers/tpch${suffix}_variants" ],
				'bash', "$tpch/check.sh", "tpch_$layout$suffix", "tpch$suffix");
			ok($ok, "$label: variants pass") or diag($out . $err);
			for my $q (qw(q16v q18v q20v))
			{
				like($out, qr/^$q  same +[1-9][0-9]* rows/m,
					"$label: $q gives the single server's rows, and some");
			}
		}
	}
	$rx->check_clean("after the TPC-H queries" . ($design ne '' ? " with $design" : ''));
}
if (grep { $_ eq 'workers' } @designs)
{
	my ($set) = grep { $sets{$_} } ('a:pk', 'b:pk', 'a:fk', 'b:fk');
	my ($layout, $indexes) = split /:/, $set;
	my $schema = "tpch_$layout" . ($indexes eq 'fk' ? '_fk' : '');
	local $ENV{PGOPTIONS} = $workers_options;
	like($rx->safe_psql(0, "SET search_path = $schema; SET rdma_exchange.small_gather_rows = 0; "
		  . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT l_returnflag, count(*) FROM lineitem GROUP BY 1"),
		qr/Workers Launched: [1-9]/, 'with workers: the members scan lineitem with parallel workers');
}

$single->stop;
$rx->teardown;
done_testing();
