# test/t/090_one_database.pl: the cluster is one database (issue 17).  A
# DBA who manages a 3-member cluster through one member, and users who
# enter through any member, get what one plain PostgreSQL 15 server gives:
#
#   1. columns are matched by name, never by position: dropped columns
#      before distribution, tables created differently on the members,
#      all-int tables where a wrong attribute number reads silently wrong;
#   2. ALTER TABLE after distribution (add, drop, rename column, column
#      type, default, NOT NULL, CHECK, comment, rename table) reaches every
#      member, in the caller's transaction;
#   3. what cannot be propagated (dropping or retyping the distribution
#      column, a trigger) is refused and applied nowhere;
#   4. CREATE/DROP INDEX, also CONCURRENTLY, on every member;
#   5. enums, domains and ALTER TYPE ... ADD VALUE on every member;
#   6. roles, role options, passwords, memberships, GRANT and REVOKE on
#      every member: a role reads what it may, and gets the single
#      server's "permission denied" through every member otherwise;
#   7. row level security: policies, ENABLE/FORCE, BYPASSRLS, DROP POLICY,
#      whichever member the role enters through;
#   8. a non-superuser creates, alters, distributes and drops its own
#      objects;
#   9. a role that may read two tables runs a distributed join over them
#      without any grant on rdma_exchange's internal functions;
#  10. a signed fragment captured from a member's log and replayed, by
#      the querying role or another, during or after its query, is
#      refused at once and holds nothing;
#  11. rdma_exchange.buffer_depth = 1024 does not hang a join;
#  12. serial, bigserial and identity columns give unique values
#      whichever member inserts.
#
# Every statement runs on the plain server (the oracle) too, except the
# rdma_exchange calls that place tables; answers (rows and ERROR lines)
# are compared with the plain server's, entering the cluster through more
# than one member.  The catalog of each table (columns by name, types, NOT
# NULL, defaults, constraints, indexes, policies, ACL, owner, RLS flags,
# comment) is compared on every member, each read through its own
# connection, with the plain server's; the triggers (rdma_exchange's own
# included) between the members.  Statements that may fail today run
# through psql, never safe_psql, so that a missing feature fails its
# checks and the file still runs to its end.
use strict;
use warnings;

use Digest::SHA qw(hmac_sha256 hmac_sha256_hex sha256);
use MIME::Base64 qw(decode_base64 encode_base64);
use FindBin;
use lib "$FindBin::RealBin/..";
use IPC::Run;
use Time::HiRes;
use RxCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# the same settings on both sides where they change a message;
# client_connection_check_interval ends the backend of a psql killed at
# its timeout instead of leaving its statement running
my @common_conf = (
	"lc_messages = 'C'",
	"client_connection_check_interval = '1s'");

my $rx = RxCluster->new(
	nmembers   => 3,
	name       => 'onedb',
	extra_conf => \@common_conf);
my $db = $rx->dbname;

# the plain server takes its port as the members do (RX_TAP_PORTS)
my $plain = PostgreSQL::Test::Cluster->new('onedb_plain',
	port => RxCluster::_free_port(0));
$plain->init;
$plain->append_conf('postgresql.conf',
	join("\n", "listen_addresses = '127.0.0.1'", @common_conf, ''));
$plain->start;

my @all = (0 .. $rx->nmembers - 1);

# --- running SQL ------------------------------------------------------------

# the ERROR and FATAL lines of psql's stderr, without psql's prefix: the
# part of an answer that errors are compared by (CONTEXT, HINT, DETAIL and
# NOTICEs may legitimately say where in the cluster something happened)
sub error_lines
{
	my ($err) = @_;
	return join "\n", map { /\b((?:ERROR|FATAL|PANIC):\s+.*)$/ ? $1 : () }
	  split /\n/, $err;
}

# run_sql(node, sql, %opt): runs sql through psql on node as opt user
# (default: the superuser), ON_ERROR_STOP per opt stop (default off, so
# that both sides run every statement), killed after opt timeout seconds
# (default 120).  Returns { rc, out, err, errors, secs }; rc is 'timeout'
# when psql was killed.
sub run_sql
{
	my ($node, $sql, %o) = @_;
	my $connstr = $node->connstr($db);
	$connstr .= " user=$o{user}" if defined $o{user};
	my $timeout   = $o{timeout} // 120;
	my $timed_out = 0;
	my $t0        = Time::HiRes::time();
	my ($rc, $out, $err) = $node->psql(
		$db, $sql,
		connstr       => $connstr,
		on_error_stop => $o{stop} // 0,
		timeout       => $timeout,
		timed_out     => \$timed_out);
	my $r = {
		rc   => $rc,
		out  => $out // '',
		err  => $err // '',
		secs => Time::HiRes::time() - $t0 };
	if ($timed_out)
	{
		$r->{rc} = 'timeout';
		$r->{err} .= "\nTIMEOUT: psql killed after $timeout s";
	}
	$r->{errors} = error_lines($r->{err});
	$r->{errors} .= ($r->{errors} eq '' ? '' : "\n") . 'TIMEOUT' if $timed_out;
	return $r;
}

# what an answer is compared by: the rows, then the errors
sub answer
{
	my ($r) = @_;
	return $r->{errors} eq '' ? $r->{out} : "$r->{out}\n--\n$r->{errors}";
}

sub member { return $rx->member($_[0]); }

# both(name, i, sql, %opt): a statement that works on one server, run on
# the plain server and through member i; each must give no error
sub both
{
	my ($name, $i, $sql, %o) = @_;
	my $p = run_sql($plain, $sql, %o);
	is($p->{errors}, '', "$name: no error on the plain server");
	my $c = run_sql(member($i), $sql, %o);
	is($c->{errors}, '', "$name: no error through member $i");
	return $c;
}

# cluster(name, i, sql, %opt): a statement for the cluster only (placing
# tables, rdma_exchange grants); it must give no error
sub cluster
{
	my ($name, $i, $sql, %o) = @_;
	my $c = run_sql(member($i), $sql, %o);
	is($c->{errors}, '', "$name: no error through member $i");
	return $c;
}

# same(name, sql, %opt): the answer through each member of opt via
# (default 0 and 1) is the plain server's; opt expect, when given, is
# what the plain server must answer (so that a check cannot pass on an
# answer that says nothing)
sub same
{
	my ($name, $sql, %o) = @_;
	my $via  = delete $o{via} // [ 0, 1 ];
	my $want = answer(run_sql($plain, $sql, %o));
	is($want, $o{expect}, "$name: the plain server's answer is as expected")
	  if defined $o{expect};
	for my $i (@$via)
	{
		is(answer(run_sql(member($i), $sql, %o)), $want,
			"$name (through member $i) = plain server");
	}
	return $want;
}

# refused(name, i, sql, %opt): the cluster refuses sql with an ERROR (opt
# like: a regex the stderr must match as well); psql stops at the error,
# so that its exit status says it
sub refused
{
	my ($name, $i, $sql, %o) = @_;
	my $like = delete $o{like} // qr/ERROR/;
	my $c = run_sql(member($i), $sql, stop => 1, %o);
	isnt($c->{rc}, 0, "$name: refused through member $i");
	like($c->{err}, $like, "$name: with a clear error");
	return $c;
}

# on_members(sql): the answer of sql as superuser on every member, each
# through its own connection
sub on_members
{
	my ($sql) = @_;
	return map { answer(run_sql(member($_), $sql)) } @all;
}

# members_same(name, sql, %opt): every member answers sql as the plain
# server does (opt plain => 0: as member 0 does)
sub members_same
{
	my ($name, $sql, %o) = @_;
	my @got = on_members($sql);
	my $want = ($o{plain} // 1) ? answer(run_sql($plain, $sql)) : $got[0];
	is($want, $o{expect}, "$name: expected answer") if defined $o{expect};
	for my $i (@all)
	{
		next if !($o{plain} // 1) && $i == 0;
		is($got[$i], $want,
			"$name: member $i = " . (($o{plain} // 1) ? 'plain server' : 'member 0'));
	}
	return @got;
}

# the catalog of a table, by column name (attribute numbers may differ
# between members, and legitimately): columns with type, NOT NULL and
# default, constraints, indexes (valid or not), policies, ACL, owner, RLS
# flags, comment.  Empty when the table does not exist.
sub catalog_sql
{
	my ($rel) = @_;
	return qq{SELECT concat_ws(E'\\n',
  'columns: ' || (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
      || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
      || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attname)
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
  'constraints: ' || coalesce((SELECT string_agg(conname || ' ' || pg_get_constraintdef(oid), ', ' ORDER BY conname)
    FROM pg_constraint WHERE conrelid = c.oid), ''),
  'indexes: ' || coalesce((SELECT string_agg(pg_get_indexdef(x.indexrelid)
      || CASE WHEN x.indisvalid THEN '' ELSE ' INVALID' END, ', ' ORDER BY i.relname)
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = c.oid), ''),
  'policies: ' || coalesce((SELECT string_agg(policyname || ' ' || permissive || ' ' || cmd || ' '
      || roles::text || ' ' || coalesce(qual, '') || ' ' || coalesce(with_check, ''), ', ' ORDER BY policyname)
    FROM pg_policies WHERE schemaname = 'public' AND tablename = c.relname), ''),
  'acl: ' || coalesce(c.relacl::text, ''),
  'owner: ' || c.relowner::regrole,
  'rls: ' || c.relrowsecurity || ' force: ' || c.relforcerowsecurity,
  'comment: ' || coalesce(obj_description(c.oid, 'pg_class'), ''))
FROM pg_class c WHERE c.oid = to_regclass('public.$rel')};
}

# the user triggers of a table (rdma_exchange's own included): compared
# between the members only, the plain server has none of rdma_exchange's
sub triggers_sql
{
	my ($rel) = @_;
	return qq{SELECT coalesce(string_agg(tgname || ' ' || pg_get_triggerdef(oid), ', ' ORDER BY tgname), '')
FROM pg_trigger WHERE tgrelid = to_regclass('public.$rel') AND NOT tgisinternal};
}

# catalog_same(what, rel): the table's catalog on every member is the
# plain server's, its triggers the same on every member; returns member
# 0's catalog
sub catalog_same
{
	my ($what, $rel) = @_;
	my @got = members_same("$what: catalog of $rel", catalog_sql($rel));
	members_same("$what: triggers of $rel", triggers_sql($rel), plain => 0);
	return $got[0];
}

# poll(i, sql, seconds): sql returns t on member i within seconds
sub poll
{
	my ($i, $sql, $secs) = @_;
	my $deadline = Time::HiRes::time() + ($secs // 20);
	while (1)
	{
		my $r = run_sql(member($i), $sql);
		return 1 if $r->{out} eq 't';
		return 0 if Time::HiRes::time() > $deadline;
		Time::HiRes::sleep(0.2);
	}
}

my $busy_buffers = q{SELECT coalesce(sum(lent_buffers + reserved_buffers), 0) = 0
	FROM rdma_exchange.buffer_pool_stats};
my $reserved_buffers = q{SELECT coalesce(sum(reserved_buffers), 0) = 0
	FROM rdma_exchange.buffer_pool_stats};

# an int key owned by each member (as for a table distributed on an int
# column), so that a row can be sent to a chosen member
my @key_on = split /,/, $rx->safe_psql(0, q{SELECT string_agg(k::text, ',' ORDER BY m)
	FROM (SELECT rdma_exchange.member_index_of(i) AS m, min(i) AS k
	      FROM generate_series(100001, 100100) i GROUP BY 1) s});
is(scalar(@key_on), 3, 'a key owned by every member');

# --- 1. columns by name -------------------------------------------------------

# A column dropped before distribution leaves a hole in the coordinator's
# attribute numbers that the other members' copies do not have.
both('1: table with a dropped column', 0, q{
CREATE TABLE t (a int, b text, c int, d int);
ALTER TABLE t DROP COLUMN b;
INSERT INTO t SELECT i, i * 100, i % 97 FROM generate_series(1, 3000) i;});
cluster('1: distribute t', 0, q{SELECT rdma_exchange.create_distributed_table('t', 'a')});

my $q_t = q{SELECT count(*) FROM t WHERE c = 100000;
SELECT sum(d), sum(c), count(*) FROM t;
SELECT a, c, d FROM t ORDER BY c DESC LIMIT 5;
SELECT c, d FROM t WHERE a = 1000;
SELECT d, count(*) FROM t GROUP BY d ORDER BY d LIMIT 3;};
same('1: queries over t after a column dropped before distribution', $q_t);
same('1: c = 100000 finds its one row', 'SELECT a, c, d FROM t WHERE c = 100000',
	expect => '1000|100000|30');

# all int: a fragment reading attribute 3 on a member whose third column
# is d gives numbers, only the wrong ones
both('1: all-int table with a dropped middle column', 0, q{
CREATE TABLE ti (a int, b int, c int, d int);
ALTER TABLE ti DROP COLUMN b;
INSERT INTO ti SELECT i, i * 100, -i FROM generate_series(1, 3000) i;});
cluster('1: distribute ti', 0, q{SELECT rdma_exchange.create_distributed_table('ti', 'a')});
same('1: queries over ti (same types: a wrong column is read silently)', q{
SELECT count(*) FROM ti WHERE c = 100000;
SELECT sum(c), sum(d), min(d) FROM ti;
SELECT a, c, d FROM ti WHERE d < -2990 ORDER BY a;
SELECT count(*) FROM ti t1 JOIN ti t2 ON t1.c = -t2.d * 100;});

# rows written after distribution go through routing and COPY
both('1: INSERT and COPY into t', 1, qq{
INSERT INTO t (a, c, d) VALUES ($key_on[0], 7, 70), ($key_on[1], 8, 80), ($key_on[2], 9, 90);
COPY t (d, c, a) FROM STDIN (FORMAT csv);
71,17,$key_on[0]1
81,18,$key_on[1]1
91,19,$key_on[2]1
\\.
});
same('1: rows inserted and copied through member 1',
	'SELECT a, c, d FROM t WHERE a > 100000 ORDER BY a', via => [ 0, 2 ]);

# members whose copies were made by hand with the columns in another
# order: create_distributed_table() matches them by name, or refuses
# with an error that names the column
both('1: tr on member 0', 0, q{
CREATE TABLE tr (a int, c int, d int);
INSERT INTO tr SELECT i, i * 100, i % 97 FROM generate_series(1, 300) i;});
run_sql(member(1), 'CREATE TABLE tr (d int, c int, a int)');
run_sql(member(2), 'CREATE TABLE tr (c int, a int, d int)');
{
	my $r = run_sql(member(0), q{SELECT rdma_exchange.create_distributed_table('tr', 'a')});
	if ($r->{errors} eq '')
	{
		same('1: tr whose copies have another column order',
			q{SELECT count(*) FROM tr WHERE c = 10000; SELECT sum(c), sum(d) FROM tr;
			  SELECT a, c, d FROM tr ORDER BY c DESC LIMIT 3;}, via => [ 0, 1, 2 ]);
	}
	else
	{
		like($r->{err}, qr/ERROR:.*column|DETAIL:.*column/s,
			'1: tr with another column order on the members: refused naming the column');
	}
}
catalog_same('1', 't');

# --- 2. ALTER TABLE after distribution ---------------------------------------

both('2: ADD COLUMN e int DEFAULT 5', 0, 'ALTER TABLE t ADD COLUMN e int DEFAULT 5');
both('2: insert through member 1', 1, q{
INSERT INTO t (a, c, d) SELECT i, i * 100, i % 97 FROM generate_series(3001, 3100) i;
INSERT INTO t (a, c, d, e) VALUES (3101, 310100, 1, 9);});
same('2: query e', q{SELECT e, count(*) FROM t GROUP BY e ORDER BY e;
SELECT sum(e) FROM t WHERE a > 2990; SELECT a, e FROM t WHERE a = 3101;},
	via => [ 0, 2 ], expect => "5|3106\n9|1\n589\n3101|9");
catalog_same('2: after ADD COLUMN', 't');

both('2: DROP COLUMN d', 0, 'ALTER TABLE t DROP COLUMN d');
same('2: queries after DROP COLUMN d',
	q{SELECT a, c, e FROM t ORDER BY a DESC LIMIT 3; SELECT count(*), sum(c), sum(e) FROM t;
	  SELECT * FROM t WHERE a = 1000;}, via => [ 1, 2 ]);
catalog_same('2: after DROP COLUMN', 't');

both('2: RENAME COLUMN e TO e2', 0, 'ALTER TABLE t RENAME COLUMN e TO e2');
same('2: queries after RENAME COLUMN',
	q{SELECT sum(e2) FROM t; SELECT a, e2 FROM t WHERE a = 3101;}, via => [ 1, 2 ]);

both('2: ALTER COLUMN c TYPE bigint', 0, 'ALTER TABLE t ALTER COLUMN c TYPE bigint');
same('2: queries after ALTER COLUMN TYPE',
	q{SELECT count(*) FROM t WHERE c = 100000; SELECT sum(c), pg_typeof(sum(c)) FROM t;
	  SELECT pg_typeof(c) FROM t WHERE a = 1;}, via => [ 1, 2 ]);

both('2: SET DEFAULT, SET NOT NULL, COMMENT', 0, q{
ALTER TABLE t ALTER COLUMN e2 SET DEFAULT 7;
ALTER TABLE t ALTER COLUMN e2 SET NOT NULL;
COMMENT ON TABLE t IS 'one table';});
both('2: insert taking the new default through member 2', 2,
	"INSERT INTO t (a, c) VALUES ($key_on[1]2, 11)");
same('2: the new default', "SELECT e2 FROM t WHERE a = $key_on[1]2", via => [ 0, 1 ],
	expect => '7');
{
	my $sql = "INSERT INTO t (a, c, e2) VALUES ($key_on[2]3, 12, NULL)";
	refused('2: NULL into the NOT NULL column', 1, $sql,
		like => qr/ERROR:.*not-null constraint/);
}

both('2: ADD CONSTRAINT CHECK', 0, 'ALTER TABLE t ADD CONSTRAINT c_pos CHECK (c > 0)');
# the row belongs to member 2 and enters through member 1: member 2 must
# know the constraint
refused('2: a row violating the CHECK, owned by member 2', 1,
	"INSERT INTO t (a, c) VALUES ($key_on[2]4, -1)",
	like => qr/ERROR:.*check constraint "c_pos"/);
refused('2: a row violating the CHECK, owned by member 1', 2,
	"INSERT INTO t (a, c) VALUES ($key_on[1]4, -1)",
	like => qr/ERROR:.*check constraint "c_pos"/);
same('2: the violating rows are nowhere',
	'SELECT count(*), sum(c) FROM t WHERE c < 0', via => [ 0, 1, 2 ],
	expect => '0|');

# a DDL statement is part of the caller's transaction: rolled back
# everywhere when the transaction fails
{
	my $sql = 'BEGIN; ALTER TABLE t ADD COLUMN z int; SELECT 1/0; COMMIT;';
	run_sql($plain, $sql);
	run_sql(member(0), $sql);
}
catalog_same('2: after ALTERs and a rolled back ADD COLUMN', 't');

both('2: RENAME table', 0, 'ALTER TABLE t RENAME TO t_renamed');
same('2: query the renamed table', 'SELECT count(*), sum(c) FROM t_renamed', via => [ 1, 2 ]);
catalog_same('2: renamed', 't_renamed');
both('2: RENAME table back', 0, 'ALTER TABLE t_renamed RENAME TO t');
same('2: query the table renamed back', 'SELECT count(*), sum(c) FROM t', via => [ 1, 2 ]);
my $t_catalog = catalog_same('2: renamed back', 't');
my $t_triggers = (on_members(triggers_sql('t')))[0];

# --- 3. refusals ----------------------------------------------------------------

# the distribution column cannot go or change type (its hash places the
# rows); a trigger cannot fire on one member for the rows of all.  Each
# is refused, and applied on no member.
refused('3: DROP COLUMN of the distribution column', 0, 'ALTER TABLE t DROP COLUMN a');
refused('3: ALTER COLUMN TYPE of the distribution column', 0,
	'ALTER TABLE t ALTER COLUMN a TYPE bigint');
both('3: a trigger function', 0, q{CREATE FUNCTION t_trg() RETURNS trigger LANGUAGE plpgsql
AS $$BEGIN NEW.e2 := NEW.e2 + 1; RETURN NEW; END$$;});
refused('3: CREATE TRIGGER on a distributed table', 0,
	'CREATE TRIGGER t_trg BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_trg()',
	like => qr/ERROR:.*(not supported|cannot|distributed)/i);
for my $i (@all)
{
	my @now = (answer(run_sql(member($i), catalog_sql('t'))),
		answer(run_sql(member($i), triggers_sql('t'))));
	is($now[0], $t_catalog, "3: catalog of t unchanged on member $i");
	is($now[1], $t_triggers, "3: triggers of t unchanged on member $i");
}
same('3: t still answers', 'SELECT count(*), sum(a) FROM t', via => [ 1, 2 ]);

# --- 4. indexes -----------------------------------------------------------------

my $t_indexes = q{SELECT coalesce(string_agg(indexname || ' ' || indexdef, ', ' ORDER BY indexname), '')
FROM pg_indexes WHERE schemaname = 'public' AND tablename = 't'};
both('4: CREATE INDEX', 0, 'CREATE INDEX t_c_idx ON t (c)');
members_same('4: the index is on every member', $t_indexes,
	expect => 't_c_idx CREATE INDEX t_c_idx ON public.t USING btree (c)');
same('4: a query the index serves', 'SELECT a, c FROM t WHERE c = 100000', via => [ 1, 2 ]);
both('4: DROP INDEX', 0, 'DROP INDEX t_c_idx');
members_same('4: the index is gone from every member', $t_indexes, expect => '');
both('4: CREATE INDEX CONCURRENTLY', 0, 'CREATE INDEX CONCURRENTLY t_e2_idx ON t (e2)');
members_same('4: the concurrent index is on every member', $t_indexes,
	expect => 't_e2_idx CREATE INDEX t_e2_idx ON public.t USING btree (e2)');
catalog_same('4: index built concurrently (valid)', 't');
both('4: DROP INDEX CONCURRENTLY', 0, 'DROP INDEX CONCURRENTLY t_e2_idx');
members_same('4: the concurrent index is gone from every member', $t_indexes, expect => '');

# --- 5. types ---------------------------------------------------------------------

both('5: enum and domain', 0, q{
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE m (id int, md mood, p posint);});
cluster('5: distribute m', 0, q{SELECT rdma_exchange.create_distributed_table('m', 'id')});
both('5: insert into m through member 1', 1, q{
INSERT INTO m SELECT i, (ARRAY['sad', 'ok', 'happy']::mood[])[i % 3 + 1], i FROM generate_series(1, 300) i;});
same('5: enum order', q{SELECT md, count(*), sum(p) FROM m WHERE md > 'sad' GROUP BY md ORDER BY md;
SELECT min(md), max(md) FROM m;}, via => [ 0, 1, 2 ],
	expect => "ok|100|14950\nhappy|100|15050\nsad|happy");
refused('5: a value the domain refuses', 2, "INSERT INTO m VALUES ($key_on[1], 'ok', -1)",
	like => qr/ERROR:.*domain posint violates check constraint/);
# ADD VALUE cannot run in a transaction block: psql runs it alone
both('5: ALTER TYPE ADD VALUE', 0, q{ALTER TYPE mood ADD VALUE 'ecstatic'});
members_same('5: enum labels on every member',
	q{SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum WHERE enumtypid = 'mood'::regtype},
	expect => 'sad,ok,happy,ecstatic');
members_same('5: domain on every member',
	q{SELECT typname || ' ' || format_type(typbasetype, typtypmod) || ' ' ||
	  (SELECT string_agg(pg_get_constraintdef(oid), ',') FROM pg_constraint WHERE contypid = t.oid)
	  FROM pg_type t WHERE typname = 'posint'});
both('5: insert the new label through member 2', 2,
	"INSERT INTO m VALUES ($key_on[0], 'ecstatic', 1), ($key_on[1], 'ecstatic', 2), ($key_on[2], 'ecstatic', 3)");
same('5: the new label', q{SELECT md, count(*) FROM m GROUP BY md ORDER BY md;
SELECT id FROM m WHERE md > 'happy' ORDER BY id;}, via => [ 0, 1 ]);
catalog_same('5', 'm');

# --- 6. roles and privileges ----------------------------------------------------

my $roles_sql = q{SELECT coalesce(string_agg(rolname || ' login=' || rolcanlogin || ' bypassrls=' || rolbypassrls
  || ' connlimit=' || rolconnlimit || ' config=' || coalesce(array_to_string(rolconfig, ';'), ''), E'\n' ORDER BY rolname), '')
FROM pg_roles WHERE rolname IN ('alice', 'nosel', 'readers', 'tmprole', 'bob', 'carol', 'rowner', 'bypasser', 'mallory')};
my $members_sql = q{SELECT coalesce(string_agg(r.rolname || ' > ' || m.rolname, ', ' ORDER BY r.rolname, m.rolname), '')
FROM pg_auth_members am JOIN pg_roles r ON r.oid = am.roleid JOIN pg_roles m ON m.oid = am.member
WHERE r.rolname !~ '^pg_'};

both('6: CREATE ROLE', 0, q{
CREATE ROLE alice LOGIN;
CREATE ROLE nosel LOGIN;
CREATE ROLE readers;
GRANT readers TO alice;});
members_same('6: roles on every member', $roles_sql,
	expect => "alice login=true bypassrls=false connlimit=-1 config=\n"
	  . "nosel login=true bypassrls=false connlimit=-1 config=\n"
	  . 'readers login=false bypassrls=false connlimit=-1 config=');
members_same('6: role membership on every member', $members_sql, expect => 'readers > alice');

both('6: GRANT SELECT ON t TO alice, ON m TO readers', 0,
	'GRANT SELECT ON t TO alice; GRANT SELECT ON m TO readers;');
catalog_same('6: after GRANT', 't');
my $count_t = same('6: alice counts t',
	q{SELECT count(*) FROM t; SELECT c FROM t WHERE a = 7;}, user => 'alice', via => [ 1, 2 ]);
same('6: alice reads m through her membership in readers',
	q{SELECT md, count(*) FROM m GROUP BY md ORDER BY md}, user => 'alice', via => [ 2 ]);
same('6: a role without SELECT', 'SELECT count(*) FROM t', user => 'nosel', via => \@all,
	expect => "\n--\nERROR:  permission denied for table t");
both('6: REVOKE', 0, 'REVOKE SELECT ON t FROM alice');
same('6: alice after REVOKE', 'SELECT count(*) FROM t', user => 'alice', via => \@all,
	expect => "\n--\nERROR:  permission denied for table t");
catalog_same('6: after REVOKE', 't');

# role options and passwords as the DBA set them.  The pg_hba.conf of
# these servers trusts every local connection, so a password is checked
# against the secret each member stores: a plain password must give, on
# every member, a SCRAM secret that it verifies (each member may draw its
# own salt), and a secret the DBA gives ready-made must be stored as is.
both('6: ALTER ROLE', 0, q{
ALTER ROLE alice CONNECTION LIMIT 7;
ALTER ROLE alice SET work_mem = '8MB';
ALTER ROLE alice PASSWORD 'alice-secret';});
members_same('6: role options on every member', $roles_sql);

# scram_keys(password, salt, iterations): StoredKey and ServerKey
# (RFC 5802; the password is ASCII, so SASLprep leaves it as it is)
sub scram_keys
{
	my ($password, $salt, $iter) = @_;
	my $u = hmac_sha256($salt . pack('N', 1), $password);
	my $salted = $u;
	for (2 .. $iter)
	{
		$u = hmac_sha256($u, $password);
		$salted ^= $u;
	}
	return (sha256(hmac_sha256('Client Key', $salted)), hmac_sha256('Server Key', $salted));
}

# does a stored secret verify password?
sub scram_verifies
{
	my ($secret, $password) = @_;
	my ($iter, $salt, $stored, $server) =
	  $secret =~ /^SCRAM-SHA-256\$(\d+):([^\$]+)\$([^:]+):(.+)$/ or return 0;
	my ($want_stored, $want_server) = scram_keys($password, decode_base64($salt), $iter);
	return decode_base64($stored) eq $want_stored && decode_base64($server) eq $want_server;
}

my $password_sql = q{SELECT coalesce(rolpassword, '(none)') FROM pg_authid WHERE rolname = 'alice'};
{
	my @pw = on_members($password_sql);
	ok(scram_verifies($pw[$_], 'alice-secret'),
		"6: alice's password on member $_ is the one the DBA set")
	  or diag("member $_ stores '$pw[$_]'")
	  for @all;
}
{
	my $salt = 'rdma_exchange 17';
	my ($stored, $server) = scram_keys('alice-other', $salt, 4096);
	my $secret = 'SCRAM-SHA-256$4096:' . encode_base64($salt, '') . '$'
	  . encode_base64($stored, '') . ':' . encode_base64($server, '');
	both('6: ALTER ROLE PASSWORD with a ready-made SCRAM secret', 0,
		"ALTER ROLE alice PASSWORD '$secret'");
	members_same('6: the ready-made secret, as is, on every member', $password_sql,
		expect => $secret);
}
both('6: CREATE ROLE tmprole', 0, 'CREATE ROLE tmprole; GRANT readers TO tmprole;');
members_same('6: tmprole on every member',
	q{SELECT count(*) FROM pg_roles WHERE rolname = 'tmprole'}, expect => '1');
members_same('6: its membership on every member', $members_sql);
both('6: DROP ROLE', 0, 'DROP ROLE tmprole');
members_same('6: tmprole gone from every member',
	q{SELECT count(*) FROM pg_roles WHERE rolname = 'tmprole'}, expect => '0');

# --- 7. row level security ----------------------------------------------------------

both('7: RLS and a policy for alice', 0, q{
GRANT SELECT ON t TO alice;
CREATE ROLE bypasser LOGIN BYPASSRLS;
GRANT SELECT ON t TO bypasser;
ALTER TABLE t ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON t FOR SELECT TO alice USING (a % 2 = 0);});
catalog_same('7: after ENABLE RLS and CREATE POLICY', 't');
same('7: alice sees only her rows',
	q{SELECT count(*), sum(a) FROM t; SELECT count(*) FROM t WHERE a % 2 = 1;
	  SELECT a FROM t WHERE a IN (7, 8);},
	user => 'alice', via => [ 1, 2 ], expect => "1553|3604120\n0\n8");
same('7: a BYPASSRLS role sees every row', 'SELECT count(*), sum(a) FROM t',
	user => 'bypasser', via => [ 1, 2 ]);

# FORCE applies the policies to the owner, who must not be a superuser
# (superusers bypass RLS); policies per command
both('7: a table owned by a role, FORCE ROW LEVEL SECURITY', 0, q{
CREATE ROLE rowner LOGIN;
CREATE TABLE r (a int, v int);
INSERT INTO r SELECT i, i % 100 FROM generate_series(1, 1000) i;});
cluster('7: distribute r', 0, q{SELECT rdma_exchange.create_distributed_table('r', 'a')});
both('7: owner, FORCE, per-command policies', 0, q{
ALTER TABLE r OWNER TO rowner;
ALTER TABLE r ENABLE ROW LEVEL SECURITY;
ALTER TABLE r FORCE ROW LEVEL SECURITY;
CREATE POLICY r_sel ON r FOR SELECT USING (v < 50);
CREATE POLICY r_ins ON r FOR INSERT WITH CHECK (v < 50);
GRANT SELECT ON r TO alice, bypasser;});
catalog_same('7: r', 'r');
same('7: the owner under FORCE', 'SELECT count(*), sum(v) FROM r',
	user => 'rowner', via => [ 1, 2 ], expect => '500|12250');
same('7: alice under the owner\'s policies', 'SELECT count(*), max(v) FROM r',
	user => 'alice', via => [ 1, 2 ], expect => '500|49');
same('7: BYPASSRLS on r', 'SELECT count(*), max(v) FROM r',
	user => 'bypasser', via => [ 2 ], expect => '1000|99');
same('7: an INSERT the policy refuses',
	"INSERT INTO r VALUES ($key_on[1], 99); INSERT INTO r VALUES ($key_on[2], 98);",
	user => 'rowner', via => [ 0, 2 ],
	expect => "\n--\nERROR:  new row violates row-level security policy for table \"r\"\n"
	  . 'ERROR:  new row violates row-level security policy for table "r"');

same('7: an INSERT the policies allow',
	"BEGIN; INSERT INTO r VALUES ($key_on[0], 10), ($key_on[2], 11);
	 SELECT count(*), sum(v) FROM r WHERE a > 100000; ROLLBACK;",
	user => 'rowner', via => [ 0, 2 ], expect => '2|21');

# a policy that reads the application's setting (a tenant): the rows
# routed to other members are checked there with this session's value
both('7: an INSERT policy on the application\'s tenant setting', 0,
	q{CREATE POLICY r_tenant ON r FOR INSERT WITH CHECK (current_setting('app.tenant', true) = 'acme')});
same('7: an INSERT the tenant setting allows, rows for every member',
	"SET app.tenant = 'acme'; BEGIN;
	 INSERT INTO r VALUES ($key_on[0], 99), ($key_on[1], 98), ($key_on[2], 97);
	 SELECT 'inserted'; ROLLBACK;",
	user => 'rowner', via => [ 0, 2 ], expect => 'inserted');
same('7: ... and one it refuses',
	"SET app.tenant = 'other'; INSERT INTO r VALUES ($key_on[1], 99);",
	user => 'rowner', via => [ 0, 2 ]);
both('7: DROP POLICY r_tenant', 0, 'DROP POLICY r_tenant ON r');

# INSERT ... RETURNING and ON CONFLICT run each row on its owner, which
# checks the policies; with RETURNING the SELECT policies too, so a row
# the INSERT policies let in but the SELECT policies hide is refused
same('7: INSERT ... RETURNING under the policies, rows for every member',
	"BEGIN; INSERT INTO r VALUES ($key_on[0], 10), ($key_on[1], 11), ($key_on[2], 12) RETURNING a, v;
	 INSERT INTO r VALUES ($key_on[1], 13) ON CONFLICT DO NOTHING RETURNING v; ROLLBACK;",
	user => 'rowner', via => [ 0, 2 ]);
both('7: an INSERT policy wider than the SELECT policy', 0,
	q{CREATE POLICY r_ins77 ON r FOR INSERT WITH CHECK (v = 77)});
same('7: a row the SELECT policy hides, with and without RETURNING',
	"BEGIN; INSERT INTO r VALUES ($key_on[1], 77); SELECT 'stored'; ROLLBACK;
	 BEGIN; INSERT INTO r VALUES ($key_on[2], 77) RETURNING a; ROLLBACK;
	 BEGIN; INSERT INTO r VALUES ($key_on[0], 77) ON CONFLICT DO NOTHING RETURNING a; ROLLBACK;",
	user => 'rowner', via => [ 0, 1 ]);
both('7: DROP POLICY r_ins77', 0, 'DROP POLICY r_ins77 ON r');

both('7: DROP POLICY', 0, 'DROP POLICY p ON t');
members_same('7: pg_policy count on every member', 'SELECT count(*) FROM pg_policy', expect => '2');
same('7: alice with RLS on and no policy for her', 'SELECT count(*) FROM t',
	user => 'alice', via => [ 1, 2 ], expect => '0');
both('7: DISABLE ROW LEVEL SECURITY', 0, 'ALTER TABLE t DISABLE ROW LEVEL SECURITY');
same('7: alice after DISABLE', 'SELECT count(*) FROM t', user => 'alice', via => [ 1, 2 ],
	expect => $count_t =~ s/\n.*//sr);
catalog_same('7: after DROP POLICY and DISABLE', 't');

# --- 8. a non-superuser owns its objects -----------------------------------------

both('8: role bob', 0, 'CREATE ROLE bob LOGIN; GRANT CREATE ON SCHEMA public TO bob;');
both('8: bob creates and drops a local table', 0,
	'CREATE TABLE x (a int); DROP TABLE x;', user => 'bob');
both('8: bob creates y', 0, q{CREATE TABLE y (a int, b int, c text);
INSERT INTO y SELECT i, i * 2, 'v' || i FROM generate_series(1, 200) i;}, user => 'bob');
cluster('8: bob distributes y', 0, q{SELECT rdma_exchange.create_distributed_table('y', 'a')},
	user => 'bob');
catalog_same('8: y', 'y');
both('8: bob inserts through member 1', 1, q{INSERT INTO y VALUES (201, 402, 'v201')},
	user => 'bob');
same('8: bob queries y', 'SELECT count(*), sum(b) FROM y', user => 'bob', via => [ 1, 2 ],
	expect => '201|40602');
both('8: bob creates, reads and drops a view', 0,
	'CREATE VIEW yv AS SELECT a, b FROM y; SELECT count(*) FROM yv; DROP VIEW yv;',
	user => 'bob');
both('8: bob drops a column of y', 0, 'ALTER TABLE y DROP COLUMN c', user => 'bob');
same('8: y after DROP COLUMN', 'SELECT * FROM y ORDER BY a DESC LIMIT 2',
	user => 'bob', via => [ 1, 2 ], expect => "201|402\n200|400");
catalog_same('8: y after DROP COLUMN', 'y');
both('8: bob drops y', 0, 'DROP TABLE y', user => 'bob');
members_same('8: y is gone from every member',
	q{SELECT count(*) FROM pg_class WHERE relname = 'y'}, expect => '0');

# --- 9. distributed queries need no grant on internal functions ---------------------

both('9: tables f1 and f2', 0, q{
CREATE TABLE f1 (k int, v int);
CREATE TABLE f2 (k int, w int);
INSERT INTO f1 SELECT i, i % 500 FROM generate_series(1, 2000) i;
INSERT INTO f2 SELECT i, i FROM generate_series(1, 500) i;});
cluster('9: distribute f1 and f2', 0, q{SELECT rdma_exchange.create_distributed_table('f1', 'k');
SELECT rdma_exchange.create_distributed_table('f2', 'k');});

# a join on a column f1 is not distributed by: fragments run on every
# member and exchange rows
my $join = 'SELECT count(*), sum(f1.k), sum(f2.w) FROM f1 JOIN f2 ON f1.v = f2.w';
both('9: carol may read f1 and f2', 0, 'CREATE ROLE carol LOGIN; GRANT SELECT ON f1, f2 TO carol;');
my $join_answer = same('9: carol joins f1 and f2, no grant on execute_fragment', $join,
	user => 'carol', via => [ 0, 1 ], expect => '1996|1996000|499000');
same('9: carol joins t and m', 'SELECT count(*) FROM t JOIN m ON t.c = m.id * 100',
	user => 'carol', via => [ 2 ]);

# --- 10. fragment replay ---------------------------------------------------------------

# mallory is what the issue calls "another role with EXECUTE on it":
# execute_fragment is for PUBLIC now, the signed fragment is the check
both('10: role mallory', 0, 'CREATE ROLE mallory LOGIN; GRANT SELECT ON f1, f2 TO mallory, alice;');

{
	my $r = run_sql(member(1), q{SELECT rdma_exchange.execute_fragment('deadbeef:garbage')},
		user => 'mallory', stop => 1, timeout => 30);
	isnt($r->{rc}, 0, '10: a garbage fragment is refused');
	like($r->{errors}, qr/^ERROR:/, '10: with an ERROR');
	cmp_ok($r->{secs}, '<', 5, '10: at once');
}

# capture a real fragment: member 1 logs every statement, its fragment
# sessions included (execute_fragment($1) with the fragment as parameter)
run_sql(member(1), q{ALTER SYSTEM SET log_statement = 'all'; SELECT pg_reload_conf();});
ok(poll(1, q{SELECT current_setting('log_statement') = 'all'}),
	'10: member 1 logs statements');
my $log = member(1)->logfile;

# start_slow_join(user): the join in the background through member 0,
# about 4 s a member (the sleep is in f1's scan, which each member runs
# for its rows); returns the harness, stdout and stderr
sub start_slow_join
{
	my ($user) = @_;
	my ($out, $err) = ('', '');
	my $connstr = member(0)->connstr($db) . (defined $user ? " user=$user" : '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1',
		  '-c', "SET statement_timeout = '90s'",
		  '-c', "$join WHERE pg_sleep(0.006 + 0 * f1.k) IS NOT NULL",
		  '-d', $connstr ],
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(150));
	return ($h, \$out, \$err);
}

sub finish_bg
{
	my ($h) = @_;
	eval { $h->finish; 1 } or eval { $h->kill_kill; 1 };
	return;
}

# alice's join; should it fail (alice cannot run distributed queries),
# a superuser's, which another role may replay just the same
my ($fragment, $querier, $bg, $bg_out, $bg_err, @why);
for my $user ('alice', undef)
{
	my $offset = -s $log;
	($bg, $bg_out, $bg_err) = start_slow_join($user);
	my $deadline = Time::HiRes::time() + 20;
	while (Time::HiRes::time() < $deadline)
	{
		# whether it still ran before the log was read: the log is read
		# once more after the query ended
		my $running = $bg->pumpable;
		eval { $bg->pump_nb; 1 } if $running;
		my $text = PostgreSQL::Test::Utils::slurp_file($log, $offset);
		while ($text =~ /parameters: \$1 = '([0-9a-f]{64}:(?:[^']|'')*)'/sg)
		{
			# the log doubles quotes and puts a tab after each newline
			(my $f = $1) =~ s/''/'/g;
			$f =~ s/\n\t/\n/g;
			# a fragment whose signature verifies, as it was sent: a
			# refused replay then says something about the binding
			my ($sig, $signed) = $f =~ /^([0-9a-f]{64}):(.*)$/s;
			next unless hmac_sha256_hex($signed, $rx->cluster_key) eq $sig;
			$fragment = $f;
			$querier = $user // 'the superuser';
			last;
		}
		last if defined $fragment || !$running;
		Time::HiRes::sleep(0.1);
	}
	last if defined $fragment;
	finish_bg($bg);
	push @why, ($user // 'superuser') . ': ' . (error_lines($$bg_err) || 'nothing logged');
}
note("10: captured a fragment of ${\ ($querier // 'nobody')}'s join") ;

SKIP:
{
	skip '10: no fragment in member 1\'s log (' . join('; ', @why) . ')', 11
	  unless defined $fragment;

	my $replay = "SELECT rdma_exchange.execute_fragment(\$rxfrag\$$fragment\$rxfrag\$)";
	for my $when ('during', 'after')
	{
		if ($when eq 'after')
		{
			finish_bg($bg);
			chomp(my $got = $$bg_out);
			is($got, $join_answer,
				'10: the query whose fragment was replayed gave its answer');
		}
		for my $role ('alice', 'mallory')
		{
			my $r = run_sql(member(1), $replay, user => $role, stop => 1, timeout => 40);
			like($r->{errors}, qr/^ERROR:/m,
				"10: replay by $role $when the query ($querier\'s): refused with an ERROR")
			  or diag("rc $r->{rc}, answer: $r->{out}");
			note("replay by $role $when the query: $r->{errors}");
			cmp_ok($r->{secs}, '<', 5, "10: replay by $role $when the query: at once")
			  or diag("took $r->{secs} s: $r->{errors}");
		}
	}
	ok(poll(1, $busy_buffers, 20), '10: after the replays, member 1 lends and reserves no buffer');
	ok(poll(0, $busy_buffers, 20), '10: after the replays, member 0 lends and reserves no buffer');
}
finish_bg($bg) if $bg;
run_sql(member(1), q{ALTER SYSTEM RESET log_statement; SELECT pg_reload_conf();});

# --- 11. buffer_depth -------------------------------------------------------------------

{
	my $r = run_sql(member(0), qq{SET rdma_exchange.buffer_depth = 1024;
SET statement_timeout = '60s';
$join;}, user => 'mallory', stop => 1, timeout => 100);
	unlike($r->{err}, qr/statement timeout|TIMEOUT/,
		'11: buffer_depth = 1024: the join does not run into statement_timeout');
	# an error about the role or the tables would say nothing about
	# buffer_depth
	ok(($r->{rc} eq '0' && $r->{out} eq $join_answer)
		  || ($r->{errors} =~ /^ERROR:/m && $r->{errors} !~ /permission denied|does not exist/
			&& $r->{secs} < 30),
		'11: buffer_depth = 1024: the right answer or a clear ERROR at once')
	  or diag("after $r->{secs} s: out '$r->{out}', errors '$r->{errors}'");
	ok(poll($_, $reserved_buffers, 20), "11: no reserved buffers left on member $_") for @all;
}

# --- 12. sequences --------------------------------------------------------------------

both('12: serial, bigserial and identity tables', 0, q{
CREATE TABLE s (id serial PRIMARY KEY, v int);
CREATE TABLE s2 (id int GENERATED BY DEFAULT AS IDENTITY, v int);
CREATE TABLE s3 (id bigserial, v int);});
cluster('12: distribute them', 0, q{SELECT rdma_exchange.create_distributed_table('s', 'id');
SELECT rdma_exchange.create_distributed_table('s2', 'id');
SELECT rdma_exchange.create_distributed_table('s3', 'id');});
for my $i (@all)
{
	both("12: 50 rows each through member $i", $i, q{
INSERT INTO s (v) SELECT i FROM generate_series(1, 50) i;
INSERT INTO s2 (v) SELECT i FROM generate_series(1, 50) i;
INSERT INTO s3 (v) SELECT i FROM generate_series(1, 50) i;});
}
for my $tab ('s', 's2', 's3')
{
	same("12: ids of $tab unique", "SELECT count(*), count(DISTINCT id) FROM $tab",
		via => [ 0, 2 ], expect => '150|150');
}

# --- the end ------------------------------------------------------------------------

{
	# check_clean waits as poll_query_until does; not three minutes a check
	local $PostgreSQL::Test::Utils::timeout_default = 30;
	$rx->check_clean('at the end');
}
$rx->teardown;
$plain->teardown_node;
done_testing();
