# test/t/095_new_member.pl: a member added with add_node() gets the
# cluster's roles (attributes, passwords as stored, memberships) and user
# types before the reference tables are copied to it, and a DDL statement
# that a member cannot take (it is down) is applied on no member.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/..";
use RxCluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rx = RxCluster->new(nmembers => 3);

# member 2 leaves while the others get roles and types
$rx->safe_psql(0, q{SELECT rdma_exchange.remove_node('127.0.0.1', } . $rx->member(2)->port . ')');
$rx->safe_psql(0, q{
	CREATE ROLE nm_reader LOGIN PASSWORD 'nm-secret' CONNECTION LIMIT 7;
	CREATE ROLE nm_group NOLOGIN;
	GRANT nm_group TO nm_reader;
	CREATE SCHEMA nm;
	CREATE TYPE nm.mood AS ENUM ('sad', 'ok', 'happy');
	CREATE DOMAIN nm.posmood AS nm.mood CHECK (VALUE > 'sad');
	CREATE TYPE nm.pair AS (a int, m nm.mood);
	CREATE TYPE nm.span AS RANGE (subtype = float8);
	CREATE TABLE nm.ref (id int PRIMARY KEY, m nm.posmood, p nm.pair, s nm.span);
	INSERT INTO nm.ref VALUES (1, 'ok', ROW(1, 'happy'), '[1,2)'), (2, 'happy', NULL, NULL);
	SELECT rdma_exchange.create_reference_table('nm.ref');
	GRANT USAGE ON SCHEMA nm TO nm_group;
	GRANT SELECT ON nm.ref TO nm_group;
});
is($rx->safe_psql(2, q{SELECT count(*) FROM pg_roles WHERE rolname LIKE 'nm\_%'}), '0',
	'the member that left has none of the roles');

$rx->safe_psql(0, q{SELECT rdma_exchange.add_node('127.0.0.1', } . $rx->member(2)->port . ')');

my $role_sql = q{SELECT rolname, rolcanlogin, rolconnlimit,
	pg_has_role('nm_reader', 'nm_group', 'MEMBER'),
	(SELECT rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid a WHERE a.oid = r.oid)
	FROM pg_roles r WHERE rolname LIKE 'nm\_%' ORDER BY 1};
is($rx->safe_psql(2, $role_sql), $rx->safe_psql(0, $role_sql),
	'the new member has the roles, their attributes, passwords and memberships');
my $secret = q{SELECT rolpassword FROM pg_authid WHERE rolname = 'nm_reader'};
is($rx->safe_psql(2, $secret), $rx->safe_psql(0, $secret),
	'the password secret as stored');
my $type_sql = q{SELECT string_agg(format_type(oid, NULL) || ':' || typtype::text, ',' ORDER BY typname)
	FROM pg_type WHERE typnamespace = 'nm'::regnamespace AND typtype IN ('e', 'c', 'd', 'r')
	AND typname <> 'ref'};
is($rx->safe_psql(2, $type_sql), $rx->safe_psql(0, $type_sql), 'the new member has the types');
is($rx->safe_psql(2, q{SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum
	WHERE enumtypid = 'nm.mood'::regtype}), 'sad,ok,happy', 'enum labels in order');

# the role reads the reference table on the new member as on the others
my ($rc, $out, $err) = $rx->member(2)->psql($rx->dbname,
	q{SELECT id, m, p, s FROM nm.ref ORDER BY id},
	extra_params => [ '-U', 'nm_reader' ]);
is($out, "1|ok|(1,happy)|[1,2)\n2|happy||", 'the role reads the copied reference table there')
  or diag($err);
($rc, $out, $err) = $rx->member(2)->psql($rx->dbname,
	q{INSERT INTO nm.ref VALUES (3, 'sad')});
like($err, qr/violates check constraint/, 'the domain checks its values there');

# a DDL statement while a member is down fails, and no member has it
$rx->stop_member(1);
($rc, $out, $err) = $rx->member(0)->psql($rx->dbname,
	q{ALTER TABLE nm.ref ADD COLUMN extra int});
isnt($rc, 0, 'ALTER TABLE fails while a member is down');
like($err, qr/member/, 'naming the member');
$rx->start_member(1);
my $cols = q{SELECT string_agg(attname, ',' ORDER BY attname) FROM pg_attribute
	WHERE attrelid = 'nm.ref'::regclass AND attnum > 0 AND NOT attisdropped};
is($rx->safe_psql($_, $cols), 'id,m,p,s', "member $_ has the table as before") for 0 .. 2;
$rx->safe_psql(0, q{ALTER TABLE nm.ref ADD COLUMN extra int DEFAULT 1});
is($rx->safe_psql($_, $cols), 'extra,id,m,p,s', "then it reaches member $_") for 0 .. 2;

$rx->check_clean('at the end');
$rx->teardown;
done_testing();
