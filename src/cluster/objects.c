/*-------------------------------------------------------------------------
 *
 * objects.c
 *	  The cluster-wide objects a new member needs before it holds any
 *	  table: roles, their memberships, and the types tables may use.
 *
 * Later changes reach every member as they are made (ddl.c); a member
 * added with add_node() gets what exists by then from here, before the
 * reference tables are copied to it: every role that is not built in
 * (with its attributes and, when the caller may read them, its password
 * as stored: a SCRAM or MD5 secret is taken as it is), role memberships,
 * every schema (owner and grants) and every enum, composite, domain and range type that no extension owns,
 * in creation order (a domain over an enum comes after the enum).  What
 * the new member has already is left as it is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "cluster/admin.h"
#include "cluster/objects.h"
#include "cluster/remote.h"

/* roles as CREATE ROLE statements; passwords only for a superuser */
#define ROLES_SQL \
	"SELECT r.rolname, pg_catalog.format('CREATE ROLE %%I WITH %%s %%s %%s %%s %%s %%s %%s CONNECTION LIMIT %%s%%s%%s'," \
	" r.rolname," \
	" CASE WHEN r.rolsuper THEN 'SUPERUSER' ELSE 'NOSUPERUSER' END," \
	" CASE WHEN r.rolinherit THEN 'INHERIT' ELSE 'NOINHERIT' END," \
	" CASE WHEN r.rolcreaterole THEN 'CREATEROLE' ELSE 'NOCREATEROLE' END," \
	" CASE WHEN r.rolcreatedb THEN 'CREATEDB' ELSE 'NOCREATEDB' END," \
	" CASE WHEN r.rolcanlogin THEN 'LOGIN' ELSE 'NOLOGIN' END," \
	" CASE WHEN r.rolreplication THEN 'REPLICATION' ELSE 'NOREPLICATION' END," \
	" CASE WHEN r.rolbypassrls THEN 'BYPASSRLS' ELSE 'NOBYPASSRLS' END," \
	" r.rolconnlimit," \
	" CASE WHEN %s IS NOT NULL THEN pg_catalog.format(' PASSWORD %%L', %s) ELSE '' END," \
	" CASE WHEN r.rolvaliduntil IS NOT NULL THEN pg_catalog.format(' VALID UNTIL %%L', r.rolvaliduntil) ELSE '' END)" \
	" FROM %s r WHERE r.oid OPERATOR(pg_catalog.>=) 16384" \
	" AND r.rolname OPERATOR(pg_catalog.!~) '^pg_' ORDER BY r.oid"

#define MEMBERSHIPS_SQL \
	"SELECT pg_catalog.format('GRANT %I TO %I%s', g.rolname, m.rolname," \
	"  CASE WHEN a.admin_option THEN ' WITH ADMIN OPTION' ELSE '' END)" \
	" FROM pg_catalog.pg_auth_members a" \
	" JOIN pg_catalog.pg_roles g ON g.oid OPERATOR(pg_catalog.=) a.roleid" \
	" JOIN pg_catalog.pg_roles m ON m.oid OPERATOR(pg_catalog.=) a.member" \
	" WHERE g.oid OPERATOR(pg_catalog.>=) 16384 AND m.oid OPERATOR(pg_catalog.>=) 16384" \
	" AND g.rolname OPERATOR(pg_catalog.!~) '^pg_' AND m.rolname OPERATOR(pg_catalog.!~) '^pg_'"

/* schemas with their owner, then the grants on them */
#define SCHEMAS_SQL \
	"SELECT n.nspname, pg_catalog.format('CREATE SCHEMA %I AUTHORIZATION %I', n.nspname, o.rolname)" \
	" FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles o ON o.oid OPERATOR(pg_catalog.=) n.nspowner" \
	" WHERE n.oid OPERATOR(pg_catalog.>=) 16384 AND n.nspname OPERATOR(pg_catalog.!~) '^pg_'" \
	" AND n.nspname OPERATOR(pg_catalog.<>) 'rdma_exchange'" \
	" AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d" \
	"  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass" \
	"  AND d.objid OPERATOR(pg_catalog.=) n.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')" \
	" ORDER BY n.oid"

#define SCHEMA_GRANTS_SQL \
	"SELECT pg_catalog.format('GRANT %s ON SCHEMA %I TO %s%s', a.privilege_type, n.nspname," \
	"  CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END," \
	"  CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)" \
	" FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a" \
	" LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee" \
	" WHERE n.oid OPERATOR(pg_catalog.>=) 16384 AND n.nspname OPERATOR(pg_catalog.!~) '^pg_'" \
	" AND n.nspname OPERATOR(pg_catalog.<>) 'rdma_exchange' AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner"

/*
 * User types as CREATE statements, deparsed with every name qualified
 * (the caller sets search_path to pg_catalog): the qualified name and
 * the statement.
 */
#define TYPES_SQL \
	"SELECT pg_catalog.format('%I.%I', n.nspname, t.typname)," \
	" CASE t.typtype" \
	" WHEN 'e' THEN pg_catalog.format('CREATE TYPE %I.%I AS ENUM (%s)', n.nspname, t.typname," \
	"  (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)" \
	"   FROM pg_catalog.pg_enum e WHERE e.enumtypid OPERATOR(pg_catalog.=) t.oid))" \
	" WHEN 'c' THEN pg_catalog.format('CREATE TYPE %I.%I AS (%s)', n.nspname, t.typname," \
	"  (SELECT pg_catalog.string_agg(pg_catalog.format('%I %s', a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)" \
	"   FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) t.typrelid" \
	"   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped))" \
	" WHEN 'd' THEN pg_catalog.format('CREATE DOMAIN %I.%I AS %s%s%s%s', n.nspname, t.typname," \
	"  pg_catalog.format_type(t.typbasetype, t.typtypmod)," \
	"  CASE WHEN t.typdefault IS NOT NULL THEN ' DEFAULT ' OPERATOR(pg_catalog.||) t.typdefault ELSE '' END," \
	"  CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END," \
	"  COALESCE((SELECT pg_catalog.string_agg(pg_catalog.format(' CONSTRAINT %I %s', c.conname, pg_catalog.pg_get_constraintdef(c.oid)), '' ORDER BY c.conname)" \
	"   FROM pg_catalog.pg_constraint c WHERE c.contypid OPERATOR(pg_catalog.=) t.oid), ''))" \
	" WHEN 'r' THEN pg_catalog.format('CREATE TYPE %I.%I AS RANGE (subtype = %s)', n.nspname, t.typname," \
	"  (SELECT pg_catalog.format_type(r.rngsubtype, NULL) FROM pg_catalog.pg_range r" \
	"   WHERE r.rngtypid OPERATOR(pg_catalog.=) t.oid))" \
	" END" \
	" FROM pg_catalog.pg_type t" \
	" JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace" \
	" LEFT JOIN pg_catalog.pg_class cl ON cl.oid OPERATOR(pg_catalog.=) t.typrelid" \
	" WHERE t.oid OPERATOR(pg_catalog.>=) 16384 AND t.typtype OPERATOR(pg_catalog.=) ANY ('{e,c,d,r}')" \
	" AND (t.typtype OPERATOR(pg_catalog.<>) 'c' OR cl.relkind OPERATOR(pg_catalog.=) 'c')" \
	" AND n.nspname OPERATOR(pg_catalog.<>) ALL ('{pg_catalog,information_schema,pg_toast,rdma_exchange}')" \
	" AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d" \
	"  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass" \
	"  AND d.objid OPERATOR(pg_catalog.=) t.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')" \
	" ORDER BY t.oid"

static void
exec_unless(PGconn *conn, const char *name, const char *test, const char *sql)
{
	rx_exec_command(conn, name,
					psprintf("DO $rx$BEGIN IF NOT (%s) THEN EXECUTE %s; END IF; END$rx$",
							 test, quote_literal_cstr(sql)));
}

void
rx_copy_cluster_objects(PGconn *conn, const char *name)
{
	char	 ***rows;
	int			n;
	bool		secrets = superuser();
	int			nest;

	rows = rx_spi_strings(psprintf(ROLES_SQL,
								   secrets ? "r.rolpassword" : "NULL",
								   secrets ? "r.rolpassword" : "NULL",
								   secrets ? "pg_catalog.pg_authid" : "pg_catalog.pg_roles"),
						  &n);
	for (int i = 0; i < n; i++)
		exec_unless(conn, name,
					psprintf("EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s)",
							 quote_literal_cstr(rows[i][0])),
					rows[i][1]);
	rows = rx_spi_strings(MEMBERSHIPS_SQL, &n);
	for (int i = 0; i < n; i++)
		rx_exec_command(conn, name, rows[i][0]);

	rows = rx_spi_strings(SCHEMAS_SQL, &n);
	for (int i = 0; i < n; i++)
		exec_unless(conn, name,
					psprintf("pg_catalog.to_regnamespace(%s) IS NOT NULL",
							 quote_literal_cstr(quote_identifier(rows[i][0]))),
					rows[i][1]);
	rows = rx_spi_strings(SCHEMA_GRANTS_SQL, &n);
	for (int i = 0; i < n; i++)
		rx_exec_command(conn, name, rows[i][0]);

	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	rows = rx_spi_strings(TYPES_SQL, &n);
	AtEOXact_GUC(true, nest);
	for (int i = 0; i < n; i++)
		exec_unless(conn, name,
					psprintf("pg_catalog.to_regtype(%s) IS NOT NULL",
							 quote_literal_cstr(rows[i][0])),
					rows[i][1]);
}
