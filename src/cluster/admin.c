/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  The member list and commands on every member: add_node(),
 *	  remove_node(), run_on_all_nodes(), member_info().
 *
 * The member list is changed on one member and pushed to all of them,
 * the new member included, so that every member's rdma_exchange.node is
 * identical; the pushes run in remote transactions that commit with the
 * local one (remote_xact.c).  Before a member's list is replaced it is
 * compared with this member's, so that two lists that drifted apart are
 * noticed instead of silently overwritten.
 *
 * Changing the member set changes the owner of most rows of every
 * hash-distributed table, and rows are not moved: add_node() and
 * remove_node() refuse while such tables exist.  Reference tables are
 * copied to a new member.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parser.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "rdma_exchange.h"
#include "cluster/admin.h"
#include "cluster/dml.h"
#include "cluster/metadata.h"
#include "cluster/objects.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"

PG_FUNCTION_INFO_V1(rx_add_node);
PG_FUNCTION_INFO_V1(rx_remove_node);
PG_FUNCTION_INFO_V1(rx_member_info);
PG_FUNCTION_INFO_V1(rx_run_on_all_nodes);

/* ---------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------
 */

int
rx_admin_begin(void)
{
	int			nestlevel;

	if (!rx_extension_loaded())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						RX_EXTENSION_NAME)));
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("rdma_exchange.enable", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

void
rx_admin_end(int nestlevel)
{
	AtEOXact_GUC(true, nestlevel);
}

char	 ***
rx_spi_strings(const char *sql, int *nrows)
{
	MemoryContext caller = CurrentMemoryContext;
	char	 ***rows;
	int			ret;
	uint64		n;

	SPI_connect();
	ret = SPI_execute(sql, false, 0);
	/* a SELECT, or a statement with RETURNING */
	if (ret < 0 || SPI_tuptable == NULL)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
	n = SPI_processed;
	rows = MemoryContextAlloc(caller, sizeof(char **) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		TupleDesc	desc = SPI_tuptable->tupdesc;

		rows[i] = MemoryContextAlloc(caller, sizeof(char *) * Max(desc->natts, 1));
		for (int j = 0; j < desc->natts; j++)
		{
			char	   *v = SPI_getvalue(SPI_tuptable->vals[i], desc, j + 1);

			rows[i][j] = v ? MemoryContextStrdup(caller, v) : NULL;
		}
	}
	SPI_finish();
	*nrows = (int) n;
	return rows;
}

/*
 * A statement run often: planned once per backend (kept; the plan cache
 * replans it when what it reads changed, e.g. the extension was created
 * again).
 */
static void
spi_exec_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types,
			  Datum *values)
{
	int			ret;

	SPI_connect();
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(sql, nargs, types);

		if (p == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(p);
		*plan = p;
	}
	ret = SPI_execute_plan(*plan, values, NULL, false, 0);
	if (ret < 0)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(ret));
	SPI_finish();
}

/*
 * SPI on the extension's catalog and its triggers as the bootstrap
 * superuser: the catalog is not writable by other roles and the routing
 * trigger functions not executable, and each caller checked first that
 * the user may make the change (owns the table it distributes or drops).
 * sql returns rows (writes use RETURNING), or rows is NULL.  With plan,
 * sql takes nargs parameters and is planned once into *plan.
 */
static char ***
catalog_spi(const char *sql, int *nrows, bool rows,
			SPIPlanPtr *plan, int nargs, Oid *types, Datum *values)
{
	Oid			save_userid;
	int			save_sec;
	char	 ***result = NULL;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		if (plan)
			spi_exec_plan(plan, sql, nargs, types, values);
		else if (rows)
			result = rx_spi_strings(sql, nrows);
		else
			rx_spi_exec(sql);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec);
	}
	PG_END_TRY();
	return result;
}

char	 ***
rx_catalog_spi(const char *sql, int *nrows)
{
	return catalog_spi(sql, nrows, true, NULL, 0, NULL, NULL);
}

void
rx_catalog_exec(const char *sql)
{
	(void) catalog_spi(sql, NULL, false, NULL, 0, NULL, NULL);
}

void
rx_catalog_exec_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types,
					 Datum *values)
{
	(void) catalog_spi(sql, NULL, false, plan, nargs, types, values);
}

void
rx_spi_exec(const char *sql)
{
	int			ret;

	SPI_connect();
	ret = SPI_execute(sql, false, 0);
	if (ret < 0)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
	SPI_finish();
}

/* read from the catalog directly: every fragment message carries it */
char *
rx_local_extension_version(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("rdma_exchange"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, Anum_pg_extension_extversion,
										 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = TextDatumGetCString(value);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version != NULL ? version : pstrdup("");
}

/*
 * The same, read once per backend (every fragment message carries it, and
 * the catalog scan was a measurable part of a point lookup).  A backend
 * keeps the library it loaded, so the version it first read is the one
 * its messages speak; a caller that finds a difference asks again with
 * refresh (ALTER EXTENSION ... UPDATE since).  An empty answer (no
 * extension yet) is not kept.
 */
const char *
rx_extension_version(bool refresh)
{
	static char *version = NULL;

	if (version == NULL || refresh)
	{
		char	   *v = rx_local_extension_version();

		if (version != NULL)
			pfree(version);
		version = v[0] != '\0' ? MemoryContextStrdup(TopMemoryContext, v) : NULL;
		return v;
	}
	return version;
}

static char *
member_name_of(const char *host, int port)
{
	return psprintf("%s:%d", host, port);
}

/*
 * How member's rdma_exchange.node differs from members: NULL when it lists
 * exactly them, else a sentence for errdetail.
 */
static char *
member_catalog_difference(PGconn *conn, const RxMember *member,
						  const RxMember *members, int nmembers)
{
	int			n;
	char	 ***rows = rx_query_strings(conn, member->name,
										"SELECT node_id, host, port, system_identifier FROM rdma_exchange.nodes ORDER BY node_id",
										&n);

	if (n != nmembers)
		return psprintf("It lists %d members, this member lists %d.", n, nmembers);
	for (int i = 0; i < n; i++)
	{
		const RxMember *m = &members[i];
		char	   *there = member_name_of(rows[i][1] ? rows[i][1] : "",
										   atoi(rows[i][2] ? rows[i][2] : "0"));

		if (atoi(rows[i][0]) != m->node_id || strcmp(there, m->name) != 0 ||
			rows[i][3] == NULL ||
			(uint64) strtoi64(rows[i][3], NULL, 10) != m->system_identifier)
			return psprintf("Its node %s is \"%s\", this member's node %d is \"%s\".",
							rows[i][0], there, m->node_id, m->name);
	}
	return NULL;
}

static void
member_catalog_error(const RxMember *member, const char *difference)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("member \"%s\" has a different member list than this member",
					member->name),
			 errdetail("%s", difference),
			 errhint("Members must share one member list: make cluster changes with rdma_exchange.add_node() and rdma_exchange.remove_node() on one member at a time.")));
}

void
rx_check_member_catalog(PGconn *conn, const RxMember *member,
						const RxMember *members, int nmembers)
{
	char	   *difference = member_catalog_difference(conn, member, members,
													   nmembers);

	if (difference != NULL)
		member_catalog_error(member, difference);
}

/* the commands that make a member's rdma_exchange.node hold list */
static char *
replace_nodes_sql(const RxMember *list, int n)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "LOCK TABLE rdma_exchange.node IN EXCLUSIVE MODE;\n"
						   "DELETE FROM rdma_exchange.node;\n");
	if (n > 0)
	{
		appendStringInfoString(&sql,
							   "INSERT INTO rdma_exchange.node (node_id, host, port, fabric_address, system_identifier) VALUES ");
		for (int i = 0; i < n; i++)
			appendStringInfo(&sql, "%s(%d, %s, %d, %s, " INT64_FORMAT ")",
							 i > 0 ? ", " : "",
							 list[i].node_id,
							 quote_literal_cstr(list[i].host),
							 list[i].port,
							 quote_literal_cstr(list[i].fabric_addr),
							 (int64) list[i].system_identifier);
		appendStringInfoString(&sql, ";\n");
	}
	return sql.data;
}

/*
 * The commands that make a member leave the cluster: its tables become
 * ordinary local tables (routing triggers dropped) and its catalog is
 * emptied.
 */
static const char *const leave_cluster_sql =
"SELECT rdma_exchange.drop_routing_triggers(relid) FROM rdma_exchange.dist_table;\n"
"DELETE FROM rdma_exchange.dist_table;\n"
"DELETE FROM rdma_exchange.node;\n";

static void
refuse_with_hash_tables(const char *action)
{
	int			n;
	char	 ***rows = rx_spi_strings("SELECT relid::pg_catalog.text FROM rdma_exchange.dist_table WHERE method = 'h' ORDER BY 1 LIMIT 1",
									  &n);

	if (n > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot %s a member while distributed tables exist", action),
				 errdetail("Table %s is hash-distributed: changing the members changes the owner of most of its rows, and rows are not moved.",
						   rows[0][0]),
				 errhint("Add every member before creating distributed tables; to change the members now, copy the rows of the distributed tables to plain tables, drop the distributed tables on every member and distribute them again afterwards.")));
}

static void
check_port(int32 port)
{
	if (port < 1 || port > 65535)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("port %d is out of range", port),
				 errhint("A port is between 1 and 65535.")));
}

/* ---------------------------------------------------------------------
 * rdma_exchange.member_info(): what add_node() asks a new member
 * ---------------------------------------------------------------------
 */

Datum
rx_member_info(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum((int64) GetSystemIdentifier());
	values[1] = CStringGetTextDatum(rx_fabric_address ? rx_fabric_address : "");
	values[2] = CStringGetTextDatum(rx_local_extension_version());
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc),
													  values, nulls)));
}

/* ---------------------------------------------------------------------
 * rdma_exchange.add_node(host text, port int) returns int
 * ---------------------------------------------------------------------
 */

Datum
rx_add_node(PG_FUNCTION_ARGS)
{
	char	   *host = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		port = PG_GETARG_INT32(1);
	char	   *name;
	int			nest;
	RxMember   *members;
	int			n;
	RxMember   *list;
	RxMember	newm;
	PGconn	   *conn;
	char	 ***rows;
	int			nrows;
	char	   *local_version;
	uint64		self_sysid = GetSystemIdentifier();
	bool		is_self;
	long		remote_nodes;
	long		remote_tables;
	char	   *sql;

	check_port(port);
	if (host[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("host must not be empty")));
	name = member_name_of(host, port);
	nest = rx_admin_begin();

	/* one change of the member list at a time on this member */
	LockRelationOid(rx_node_catalog_relid(), ExclusiveLock);
	n = rx_get_members(&members);

	for (int i = 0; i < n; i++)
		if (strcmp(members[i].host, host) == 0 && members[i].port == port)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("member \"%s\" already exists", name),
					 errdetail("It is node %d.", members[i].node_id)));
	if (n >= RX_MAX_MEMBERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot add member \"%s\": a cluster has at most %d members",
						name, RX_MAX_MEMBERS)));
	refuse_with_hash_tables("add");

	/* what the new member says about itself */
	local_version = rx_local_extension_version();
	conn = rx_connect(host, port, NULL);
	rows = rx_query_strings(conn, name,
							"SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'rdma_exchange'",
							&nrows);
	if (nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed on member \"%s\"",
						RX_EXTENSION_NAME, name),
				 errdetail("Database \"%s\" there has no extension %s.",
						   get_database_name(MyDatabaseId), RX_EXTENSION_NAME),
				 errhint("Run CREATE EXTENSION %s in that database on the member, then add it again.",
						 RX_EXTENSION_NAME)));
	if (strcmp(rows[0][0], local_version) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("member \"%s\" has %s version %s, but this member has version %s",
						name, RX_EXTENSION_NAME, rows[0][0], local_version),
				 errhint("Install the same version on every member (ALTER EXTENSION %s UPDATE).",
						 RX_EXTENSION_NAME)));
	rows = rx_query_strings(conn, name,
							"SELECT i.system_identifier, i.fabric_address,"
							" (SELECT pg_catalog.count(*) FROM rdma_exchange.node),"
							" (SELECT pg_catalog.count(*) FROM rdma_exchange.dist_table)"
							" FROM rdma_exchange.member_info() i",
							&nrows);
	rx_disconnect(conn);

	memset(&newm, 0, sizeof(newm));
	strlcpy(newm.host, host, sizeof(newm.host));
	newm.port = port;
	strlcpy(newm.fabric_addr, rows[0][1] ? rows[0][1] : "", sizeof(newm.fabric_addr));
	newm.system_identifier = (uint64) strtoi64(rows[0][0], NULL, 10);
	strlcpy(newm.name, name, sizeof(newm.name));
	newm.node_id = n > 0 ? members[n - 1].node_id + 1 : 1;
	remote_nodes = atol(rows[0][2]);
	remote_tables = atol(rows[0][3]);
	is_self = newm.system_identifier == self_sysid;

	for (int i = 0; i < n; i++)
	{
		if (members[i].system_identifier == newm.system_identifier)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("member \"%s\" has the same system identifier as member \"%s\"",
							name, members[i].name),
					 errdetail("Both addresses reach the same server, or one server was cloned from the other (pg_basebackup keeps the system identifier)."),
					 errhint("Add each server once, and use servers made by their own initdb.")));
		if (strcmp(members[i].fabric_addr, newm.fabric_addr) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("member \"%s\" has the same fabric address \"%s\" as member \"%s\"",
							name, newm.fabric_addr, members[i].name),
					 errhint("Set rdma_exchange.fabric_address to a different host:port on each member.")));
	}
	if (!is_self && remote_nodes > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("member \"%s\" already belongs to a cluster", name),
				 errdetail("Its rdma_exchange.node lists %ld members.", remote_nodes),
				 errhint("Remove it from that cluster with rdma_exchange.remove_node() first.")));
	if (!is_self && remote_tables > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("member \"%s\" already has distributed or reference tables", name),
				 errdetail("Its rdma_exchange.dist_table lists %ld tables.", remote_tables),
				 errhint("Drop those tables on that member first.")));

	/* push the whole new list to every member, the new one included */
	list = palloc(sizeof(RxMember) * (n + 1));
	memcpy(list, members, sizeof(RxMember) * n);
	list[n] = newm;
	sql = replace_nodes_sql(list, n + 1);
	for (int i = 0; i <= n; i++)
	{
		PGconn	   *mconn;

		if (list[i].system_identifier == self_sysid)
			continue;
		mconn = rx_xact_connection(&list[i]);
		if (i < n)
			rx_check_member_catalog(mconn, &list[i], members, n);
		rx_exec_command(mconn, list[i].name, sql);
	}
	rx_spi_exec(sql);
	CommandCounterIncrement();

	if (!is_self)
	{
		rx_copy_cluster_objects(rx_xact_connection(&newm), newm.name);
		rx_replicate_reference_tables(&newm, list, n + 1);
	}

	rx_admin_end(nest);
	PG_RETURN_INT32(newm.node_id);
}

/* ---------------------------------------------------------------------
 * rdma_exchange.remove_node(host text, port int) returns void
 * ---------------------------------------------------------------------
 */

Datum
rx_remove_node(PG_FUNCTION_ARGS)
{
	char	   *host = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		port = PG_GETARG_INT32(1);
	char	   *name = member_name_of(host, port);
	int			nest;
	RxMember   *members;
	int			n;
	int			idx = -1;
	int			self;
	RxMember   *list;
	int			nlist = 0;
	char	   *sql;
	char	   *failure = NULL;
	PGconn	   *conn;

	nest = rx_admin_begin();
	LockRelationOid(rx_node_catalog_relid(), ExclusiveLock);
	n = rx_get_members(&members);
	self = rx_self_member_index();
	for (int i = 0; i < n; i++)
		if (strcmp(members[i].host, host) == 0 && members[i].port == port)
			idx = i;
	if (idx < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("member \"%s\" does not exist", name),
				 errhint("The view rdma_exchange.nodes lists the members under the host and port they were added with.")));
	refuse_with_hash_tables("remove");

	list = palloc(sizeof(RxMember) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (i != idx)
			list[nlist++] = members[i];
	sql = replace_nodes_sql(list, nlist);

	for (int i = 0; i < n; i++)
	{
		PGconn	   *mconn;
		char	   *difference;

		if (i == idx || i == self)
			continue;
		mconn = rx_xact_connection(&members[i]);
		difference = member_catalog_difference(mconn, &members[i], members, n);
		if (difference != NULL)
		{
			/* removed there already (e.g. while this member was down) */
			if (member_catalog_difference(mconn, &members[i], list, nlist) == NULL)
				continue;
			member_catalog_error(&members[i], difference);
		}
		rx_exec_command(mconn, members[i].name, sql);
	}

	if (idx == self)
		rx_spi_exec(leave_cluster_sql);
	else
	{
		rx_spi_exec(sql);

		/* the removed member forgets the cluster, if it can be reached */
		conn = rx_xact_connection_try(&members[idx], &failure);
		if (conn == NULL)
			ereport(WARNING,
					(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
					 errmsg("could not connect to removed member \"%s\" to clear its catalog",
							name),
					 errdetail_internal("%s", failure),
					 errhint("Its rdma_exchange.node and rdma_exchange.dist_table still describe the cluster; when it is back, run rdma_exchange.remove_node('%s', %d) on it.",
							 host, port)));
		else
			rx_exec_command(conn, members[idx].name, leave_cluster_sql);
	}
	CommandCounterIncrement();
	rx_admin_end(nest);
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * rdma_exchange.run_on_all_nodes(command text)
 *	   returns table (member text, result text)
 * ---------------------------------------------------------------------
 */

static void
local_command_context(void *arg)
{
	errcontext("running the command on member \"%s\" (this member)",
			   (const char *) arg);
}

/*
 * The result of the last statement, as a member reports it: the value when
 * it returned one row of one column, else its command status.
 */
static char *
run_locally(const char *command, const char *name)
{
	ErrorContextCallback cb;
	MemoryContext caller = CurrentMemoryContext;
	char	   *result = NULL;

	rx_push_member_session();
	PG_TRY();
	{
		int			ret;
		List	   *raw;
		CommandTag	tag;
		uint64		processed;

		/* inside the PG_TRY: PG_END_TRY restores the stack it saw */
		cb.callback = local_command_context;
		cb.arg = (void *) name;
		cb.previous = error_context_stack;
		error_context_stack = &cb;

		SPI_connect();
		ret = SPI_execute(command, false, 0);
		if (ret < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("command cannot run on member \"%s\": %s",
							name, SPI_result_code_string(ret)),
					 errhint("The function rdma_exchange.run_on_all_nodes() runs the command inside the calling transaction; commands that cannot run in a transaction block or a function (VACUUM, COPY to the client, transaction control) must be run on each member directly.")));
		processed = SPI_processed;
		if (SPI_tuptable != NULL && processed == 1 &&
			SPI_tuptable->tupdesc->natts == 1)
		{
			char	   *v = SPI_getvalue(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1);

			result = v ? MemoryContextStrdup(caller, v) : NULL;
		}
		else
		{
			raw = raw_parser(command, RAW_PARSE_DEFAULT);
			tag = raw != NIL ? CreateCommandTag(llast_node(RawStmt, raw)->stmt) :
				CMDTAG_UNKNOWN;
			if (tag == CMDTAG_INSERT)
				result = psprintf("INSERT 0 " UINT64_FORMAT, processed);
			else if (command_tag_display_rowcount(tag))
				result = psprintf("%s " UINT64_FORMAT, GetCommandTagName(tag),
								  processed);
			else
				result = pstrdup(GetCommandTagName(tag));
			result = MemoryContextStrdup(caller, result);
		}
		SPI_finish();
		error_context_stack = cb.previous;
	}
	PG_FINALLY();
	{
		rx_pop_member_session();
	}
	PG_END_TRY();
	return result;
}

/*
 * Refuses, before any member runs anything, the statements that would
 * break the calling transaction's hold on the members: transaction control
 * would commit or roll back a member's part behind the caller's back, and
 * a COPY from or to the client has no client on a member's connection.
 * Everything else is left to the members, whose errors are clear enough
 * (VACUUM: "cannot run inside a transaction block").
 */
static void
check_command(const char *command)
{
	List	   *raw = raw_parser(command, RAW_PARSE_DEFAULT);
	ListCell   *lc;

	if (raw == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rdma_exchange.run_on_all_nodes() needs a command"),
				 errdetail("The command string is empty.")));
	foreach(lc, raw)
	{
		Node	   *stmt = lfirst_node(RawStmt, lc)->stmt;

		if (IsA(stmt, TransactionStmt))
			ereport(ERROR,
					(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
					 errmsg("transaction control cannot run through rdma_exchange.run_on_all_nodes()"),
					 errdetail("The command runs inside the calling transaction on every member; %s would end or split that transaction on some members only.",
							   GetCommandTagName(CreateCommandTag(stmt))),
					 errhint("Use BEGIN, COMMIT and ROLLBACK around the call instead.")));
		if (IsA(stmt, CopyStmt) && ((CopyStmt *) stmt)->filename == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("COPY from or to the client cannot run through rdma_exchange.run_on_all_nodes()"),
					 errhint("Use COPY on the distributed table from this member; it routes the rows to their owners.")));
	}
}

static char *
collect_remote(PGconn *conn, const char *name, bool *isnull)
{
	PGresult   *res;
	char	   *result = NULL;

	*isnull = false;
	while ((res = rx_get_result(conn, name)) != NULL)
	{
		ExecStatusType st = PQresultStatus(res);

		if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		{
			if (st == PGRES_TUPLES_OK && PQntuples(res) == 1 && PQnfields(res) == 1)
			{
				*isnull = PQgetisnull(res, 0, 0);
				result = *isnull ? NULL : pstrdup(PQgetvalue(res, 0, 0));
			}
			else
			{
				*isnull = false;
				result = pstrdup(PQcmdStatus(res));
			}
			PQclear(res);
			continue;
		}
		PG_TRY();
		{
			if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("COPY from or to the client cannot run through rdma_exchange.run_on_all_nodes()"),
						 errcontext("running the command on member \"%s\"", name)));
			rx_report_remote_error(ERROR, conn, res, name, "running the command");
		}
		PG_FINALLY();
		{
			PQclear(res);
		}
		PG_END_TRY();
	}
	return result;
}

Datum
rx_run_on_all_nodes(PG_FUNCTION_ARGS)
{
	char	   *command = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RxMember   *members;
	int			n;
	int			self;
	int			nest;
	PGconn	  **conns;
	char	  **results;
	bool	   *isnull;

	InitMaterializedSRF(fcinfo, 0);
	check_command(command);
	nest = rx_admin_begin();
	n = rx_get_members(&members);
	self = rx_self_member_index();
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the cluster has no members"),
				 errhint("Add every member, this one included, with rdma_exchange.add_node().")));

	conns = palloc0(sizeof(PGconn *) * n);
	results = palloc0(sizeof(char *) * n);
	isnull = palloc0(sizeof(bool) * n);

	/* the others start first, this member runs its part meanwhile */
	for (int m = 0; m < n; m++)
	{
		if (m == self)
			continue;
		conns[m] = rx_xact_connection(&members[m]);
		if (!PQsendQuery(conns[m], command))
			rx_report_remote_error(ERROR, conns[m], NULL, members[m].name,
								   "could not send the command");
	}
	if (self >= 0)
	{
		results[self] = run_locally(command, members[self].name);
		isnull[self] = results[self] == NULL;
	}
	for (int m = 0; m < n; m++)
		if (m != self)
			results[m] = collect_remote(conns[m], members[m].name, &isnull[m]);

	for (int m = 0; m < n; m++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, isnull[m]};

		values[0] = CStringGetTextDatum(members[m].name);
		values[1] = isnull[m] ? (Datum) 0 : CStringGetTextDatum(results[m]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	rx_admin_end(nest);
	return (Datum) 0;
}
