/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  DDL propagation: a schema change made on any member reaches every
 *	  member, in the caller's transaction.
 *
 * A ProcessUtility hook looks at each statement before it runs.  Statements
 * about distributed or reference tables (ALTER TABLE, RENAME, SET SCHEMA,
 * CREATE/DROP INDEX, CREATE/ALTER/DROP POLICY, GRANT/REVOKE, COMMENT),
 * about the schemas and types tables may use (CREATE SCHEMA, CREATE TYPE,
 * enums, ranges, domains and their ALTER) and about roles (CREATE/ALTER/DROP ROLE, role
 * membership, default privileges) run here first; when they succeeded,
 * their own SQL text is sent to every other member over the member's
 * connection in this transaction (remote_xact.c), with this session's
 * search_path, so that an error on any member rolls the statement back
 * everywhere.  CREATE/DROP INDEX CONCURRENTLY and VACUUM cannot run in a
 * transaction: they run on the other members, one after the other, after
 * they finished here (and so does ANALYZE of distributed tables).
 *
 * What would give members different rules for the same rows is refused
 * before anything ran: dropping the distribution column or changing its
 * type (rows would hash elsewhere), user triggers and rules on
 * distributed tables (a row routed to its owner would fire them twice),
 * disabling the routing triggers, inheritance and partitions, and one
 * statement that names both distributed and local objects.
 *
 * Statements from other members (member sessions) are not sent on again;
 * what a member must do for its own catalog (a renamed distribution
 * column recorded in rdma_exchange.dist_table) happens in every session.
 * rdma_exchange.propagate_ddl = off (superusers) keeps a statement on this
 * member, for repairs; statements of CREATE EXTENSION scripts stay local.
 * DROP TABLE, DROP TYPE and DROP SCHEMA reach the members through the
 * sql_drop event trigger (distribute.c), which also sees what a CASCADE
 * dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "rdma_exchange.h"
#include "cluster/admin.h"
#include "cluster/ddl.h"
#include "cluster/dml.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"

bool		rx_propagate_ddl = true;

static ProcessUtility_hook_type prev_process_utility = NULL;

/* the ALTER TABLE now running is sent to the members as a whole */
static int	alter_propagating = 0;

typedef enum DdlAction
{
	DDL_LOCAL,					/* not the cluster's business */
	DDL_PROPAGATE,				/* run here, then on every member */
	DDL_PROPAGATE_CONCURRENTLY	/* run here, then on each member outside a
								 * transaction */
} DdlAction;

/* what the classification found out, for after the statement ran */
typedef struct DdlInfo
{
	Oid			renamed_distcol_rel;	/* RENAME of a distribution column */
	char	   *renamed_distcol_to;
	char	   *sql;			/* what the members run, if not the
								 * statement's own text */
} DdlInfo;

/* ---------------------------------------------------------------------
 * What a statement is about
 * ---------------------------------------------------------------------
 */

static bool
is_distributed(Oid relid)
{
	RxTableDist dist;

	if (!OidIsValid(relid))
		return false;
	rx_table_distribution(relid, &dist);
	return dist.method != RX_DIST_NONE;
}

static Oid
rangevar_relid(RangeVar *rv)
{
	return rv ? RangeVarGetRelid(rv, NoLock, true) : InvalidOid;
}

/* the table a relation is about: itself, or the table of an index */
static Oid
table_of(Oid relid)
{
	if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_INDEX)
		return IndexGetRelation(relid, true);
	return relid;
}

/* a schema that holds a distributed or reference table */
static bool
schema_is_distributed(const char *nspname)
{
	Oid			nsp = get_namespace_oid(nspname, true);
	char	 ***rows;
	int			n;

	if (!OidIsValid(nsp))
		return false;
	rows = rx_spi_strings(psprintf("SELECT 1 FROM rdma_exchange.dist_table d"
								   " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.relid"
								   " WHERE c.relnamespace OPERATOR(pg_catalog.=) %u LIMIT 1", nsp),
						  &n);
	(void) rows;
	return n > 0;
}

/* a sequence that a distributed table owns (serial, identity) */
static bool
sequence_is_distributed(Oid seqid)
{
	Oid			tableid;
	int32		colid;

	if (!OidIsValid(seqid))
		return false;
	if (sequenceIsOwned(seqid, DEPENDENCY_AUTO, &tableid, &colid) ||
		sequenceIsOwned(seqid, DEPENDENCY_INTERNAL, &tableid, &colid))
		return is_distributed(tableid);
	return false;
}

static void
refuse(const char *what, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s", what),
			 detail ? errdetail("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
}

/* all of the objects or none: a statement runs on every member or here */
static DdlAction
all_or_none(int ndist, int nobjects, const char *statement)
{
	if (ndist == 0)
		return DDL_LOCAL;
	if (ndist < nobjects)
		refuse(psprintf("%s names both distributed and local objects", statement),
			   "Statements about distributed or reference tables run on every member, others only here.",
			   "Split the statement into one for the distributed objects and one for the others.");
	return DDL_PROPAGATE;
}

static void
check_alter_table(AlterTableStmt *stmt, Oid relid)
{
	const char *distcol = rx_table_dist_column(relid);
	const char *table = get_rel_name(relid);
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		switch (cmd->subtype)
		{
			case AT_DropColumn:
			case AT_AlterColumnType:
				if (distcol && cmd->name && strcmp(cmd->name, distcol) == 0)
					refuse(psprintf("cannot %s the distribution column \"%s\" of table \"%s\"",
									cmd->subtype == AT_DropColumn ? "drop" : "change the type of",
									distcol, table),
						   "Every row is stored on the member its distribution column hashes to.",
						   "Create a new table distributed by another column and copy the rows (INSERT ... SELECT).");
				break;
			case AT_DisableTrigAll:
			case AT_DisableTrigUser:
				refuse(psprintf("cannot disable all triggers of distributed table \"%s\"", table),
					   "The triggers of rdma_exchange route each row to the member that owns it.",
					   "Disable the triggers by name.");
				break;
			case AT_DisableTrig:
			case AT_EnableTrig:
			case AT_EnableAlwaysTrig:
			case AT_EnableReplicaTrig:
				if (cmd->name && strncmp(cmd->name, RX_TRIGGER_PREFIX, strlen(RX_TRIGGER_PREFIX)) == 0)
					refuse(psprintf("cannot change trigger \"%s\" of distributed table \"%s\"",
									cmd->name, table),
						   "The triggers of rdma_exchange route each row to the member that owns it.",
						   NULL);
				break;
			case AT_AddInherit:
			case AT_DropInherit:
			case AT_AttachPartition:
			case AT_DetachPartition:
			case AT_DetachPartitionFinalize:
				refuse(psprintf("inheritance and partitions of distributed table \"%s\" are not supported", table),
					   NULL, NULL);
				break;
			default:
				break;
		}
	}
}

static void
check_trigger_name(const char *name, Oid relid)
{
	if (name && strncmp(name, RX_TRIGGER_PREFIX, strlen(RX_TRIGGER_PREFIX)) == 0)
		refuse(psprintf("cannot change trigger \"%s\" of distributed table \"%s\"",
						name, get_rel_name(relid)),
			   "The triggers of rdma_exchange route each row to the member that owns it.",
			   NULL);
}

/* the relation a name list (schema.table.object) ends with the object of */
static Oid
relation_of_object_name(List *names)
{
	List	   *relname = list_copy_head(names, list_length(names) - 1);

	if (relname == NIL)
		return InvalidOid;
	return RangeVarGetRelid(makeRangeVarFromNameList(relname), NoLock, true);
}

static DdlAction
classify_grant(GrantStmt *stmt)
{
	int			ndist = 0;
	ListCell   *lc;

	if (stmt->targtype == ACL_TARGET_DEFAULTS)
		return DDL_LOCAL;
	if (stmt->targtype == ACL_TARGET_ALL_IN_SCHEMA)
	{
		foreach(lc, stmt->objects)
			ndist += schema_is_distributed(strVal(lfirst(lc)));
		/* on the members, ALL TABLES IN SCHEMA is about their tables there */
		return ndist > 0 ? DDL_PROPAGATE : DDL_LOCAL;
	}
	switch (stmt->objtype)
	{
		case OBJECT_TABLE:
			foreach(lc, stmt->objects)
				ndist += is_distributed(rangevar_relid(lfirst_node(RangeVar, lc)));
			return all_or_none(ndist, list_length(stmt->objects),
							   stmt->is_grant ? "GRANT" : "REVOKE");
		case OBJECT_SEQUENCE:
			foreach(lc, stmt->objects)
				ndist += sequence_is_distributed(rangevar_relid(lfirst_node(RangeVar, lc)));
			return all_or_none(ndist, list_length(stmt->objects),
							   stmt->is_grant ? "GRANT" : "REVOKE");
		case OBJECT_SCHEMA:
			foreach(lc, stmt->objects)
				ndist += schema_is_distributed(strVal(lfirst(lc)));
			return all_or_none(ndist, list_length(stmt->objects),
							   stmt->is_grant ? "GRANT" : "REVOKE");
		case OBJECT_TYPE:
		case OBJECT_DOMAIN:
			return DDL_PROPAGATE;
		default:
			return DDL_LOCAL;
	}
}

static DdlAction
classify_drop(DropStmt *stmt)
{
	int			ndist = 0;
	ListCell   *lc;

	switch (stmt->removeType)
	{
		case OBJECT_INDEX:
			foreach(lc, stmt->objects)
				ndist += is_distributed(table_of(RangeVarGetRelid(makeRangeVarFromNameList(lfirst(lc)),
																  NoLock, true)));
			if (all_or_none(ndist, list_length(stmt->objects), "DROP INDEX") == DDL_LOCAL)
				return DDL_LOCAL;
			return stmt->concurrent ? DDL_PROPAGATE_CONCURRENTLY : DDL_PROPAGATE;
		case OBJECT_POLICY:
		case OBJECT_TRIGGER:
		case OBJECT_RULE:
			foreach(lc, stmt->objects)
			{
				Oid			relid = relation_of_object_name(lfirst(lc));

				if (is_distributed(relid))
				{
					if (stmt->removeType == OBJECT_TRIGGER)
						check_trigger_name(strVal(llast(lfirst(lc))), relid);
					ndist++;
				}
			}
			return all_or_none(ndist, list_length(stmt->objects), "DROP");
		default:
			/* tables, types and schemas: the sql_drop event trigger */
			return DDL_LOCAL;
	}
}

static DdlAction
classify_rename(RenameStmt *stmt, DdlInfo *info)
{
	Oid			relid;

	switch (stmt->renameType)
	{
		case OBJECT_TABLE:
		case OBJECT_INDEX:
		case OBJECT_COLUMN:
		case OBJECT_TABCONSTRAINT:
		case OBJECT_POLICY:
		case OBJECT_TRIGGER:
		case OBJECT_RULE:
			relid = table_of(rangevar_relid(stmt->relation));
			if (!is_distributed(relid))
				return DDL_LOCAL;
			if (stmt->renameType == OBJECT_TRIGGER)
				check_trigger_name(stmt->subname, relid);
			if (stmt->renameType == OBJECT_COLUMN)
			{
				const char *distcol = rx_table_dist_column(relid);

				if (distcol && strcmp(distcol, stmt->subname) == 0)
				{
					info->renamed_distcol_rel = relid;
					info->renamed_distcol_to = stmt->newname;
				}
			}
			return DDL_PROPAGATE;
		case OBJECT_SCHEMA:
			return schema_is_distributed(stmt->subname) ? DDL_PROPAGATE : DDL_LOCAL;
		case OBJECT_TYPE:
		case OBJECT_DOMAIN:
		case OBJECT_ATTRIBUTE:
		case OBJECT_DOMCONSTRAINT:
		case OBJECT_ROLE:
			return DDL_PROPAGATE;
		default:
			return DDL_LOCAL;
	}
}

static DdlAction
classify_comment(CommentStmt *stmt)
{
	Oid			relid = InvalidOid;

	switch (stmt->objtype)
	{
		case OBJECT_TABLE:
		case OBJECT_INDEX:
			relid = table_of(RangeVarGetRelid(makeRangeVarFromNameList(castNode(List, stmt->object)),
											  NoLock, true));
			break;
		case OBJECT_COLUMN:
		case OBJECT_TABCONSTRAINT:
		case OBJECT_POLICY:
		case OBJECT_TRIGGER:
			relid = relation_of_object_name(castNode(List, stmt->object));
			break;
		case OBJECT_TYPE:
		case OBJECT_DOMAIN:
		case OBJECT_ROLE:
			return DDL_PROPAGATE;
		default:
			return DDL_LOCAL;
	}
	return is_distributed(relid) ? DDL_PROPAGATE : DDL_LOCAL;
}

/*
 * VACUUM and ANALYZE of distributed or reference tables run on every
 * member's part, outside a transaction there, as VACUUM must (ANALYZE
 * inside a transaction block here commits its statistics on the members
 * at once, but in the transaction's own session on a member where it
 * already has one, whose locks it would wait for): ANALYZE after this
 * member's, VACUUM before it (see
 * rx_ddl_process_utility).  The members get the statement with
 * its options and only the distributed tables (with their column lists):
 * the local ones named with them are this member's.  Without tables it
 * stays here: each member's other tables are its own, and autovacuum runs
 * per member.
 */
static DdlAction
classify_vacuum(VacuumStmt *stmt, DdlInfo *info)
{
	StringInfoData sql;
	const char *sep = " (";
	bool		any = false;
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfoString(&sql, stmt->is_vacuumcmd ? "VACUUM" : "ANALYZE");
	foreach(lc, stmt->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		appendStringInfo(&sql, "%s%s", sep, quote_identifier(opt->defname));
		if (opt->arg != NULL && IsA(opt->arg, Integer))
			appendStringInfo(&sql, " %d", intVal(opt->arg));
		else if (opt->arg != NULL)
			appendStringInfo(&sql, " %s", quote_literal_cstr(defGetString(opt)));
		sep = ", ";
	}
	if (stmt->options != NIL)
		appendStringInfoChar(&sql, ')');
	sep = " ";
	foreach(lc, stmt->rels)
	{
		VacuumRelation *vrel = lfirst_node(VacuumRelation, lc);
		Oid			relid = rangevar_relid(vrel->relation);
		ListCell   *col;

		if (!is_distributed(relid))
			continue;
		appendStringInfo(&sql, "%s%s", sep, rx_qualified_relname(relid));
		foreach(col, vrel->va_cols)
			appendStringInfo(&sql, "%s%s", col == list_head(vrel->va_cols) ? " (" : ", ",
							 quote_identifier(strVal(lfirst(col))));
		if (vrel->va_cols != NIL)
			appendStringInfoChar(&sql, ')');
		sep = ", ";
		any = true;
	}
	if (!any)
		return DDL_LOCAL;
	info->sql = sql.data;
	return DDL_PROPAGATE_CONCURRENTLY;
}

/*
 * LOCK TABLE of distributed or reference tables locks them on every member
 * (the members get the statement with only those tables; local ones named
 * with them are this member's), in member order (rx_ddl_process_utility).
 */
static DdlAction
classify_lock(LockStmt *stmt, DdlInfo *info)
{
	static const char *const modes[] = {"", "ACCESS SHARE", "ROW SHARE",
		"ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE", "SHARE",
	"SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"};
	StringInfoData sql;
	const char *sep = "LOCK TABLE ";
	ListCell   *lc;

	if (stmt->mode < 1 || stmt->mode >= lengthof(modes))
		return DDL_LOCAL;
	initStringInfo(&sql);
	foreach(lc, stmt->relations)
	{
		RangeVar   *rv = lfirst_node(RangeVar, lc);
		Oid			relid = rangevar_relid(rv);

		if (!is_distributed(relid))
			continue;
		appendStringInfo(&sql, "%s%s%s", sep, rv->inh ? "" : "ONLY ",
						 rx_qualified_relname(relid));
		sep = ", ";
	}
	if (sql.len == 0)
		return DDL_LOCAL;
	appendStringInfo(&sql, " IN %s MODE%s", modes[stmt->mode],
					 stmt->nowait ? " NOWAIT" : "");
	info->sql = sql.data;
	return DDL_PROPAGATE;
}

/* refuses what cannot be propagated; what to do with the rest */
static DdlAction
classify(Node *stmt, DdlInfo *info)
{
	Oid			relid;

	switch (nodeTag(stmt))
	{
		case T_AlterTableStmt:
			{
				AlterTableStmt *at = (AlterTableStmt *) stmt;

				relid = table_of(rangevar_relid(at->relation));
				if (!is_distributed(relid))
					return DDL_LOCAL;
				if (at->objtype == OBJECT_TABLE)
					check_alter_table(at, relid);
				else if (at->objtype != OBJECT_INDEX)
					return DDL_LOCAL;
				return DDL_PROPAGATE;
			}
		case T_RenameStmt:
			return classify_rename((RenameStmt *) stmt, info);
		case T_AlterObjectSchemaStmt:
			{
				AlterObjectSchemaStmt *as = (AlterObjectSchemaStmt *) stmt;

				if (as->objectType == OBJECT_TYPE || as->objectType == OBJECT_DOMAIN)
					return DDL_PROPAGATE;
				if (as->objectType == OBJECT_TABLE)
					return is_distributed(rangevar_relid(as->relation)) ?
						DDL_PROPAGATE : DDL_LOCAL;
				return DDL_LOCAL;
			}
		case T_AlterOwnerStmt:
			{
				AlterOwnerStmt *ao = (AlterOwnerStmt *) stmt;

				if (ao->objectType == OBJECT_TYPE || ao->objectType == OBJECT_DOMAIN)
					return DDL_PROPAGATE;
				if (ao->objectType == OBJECT_SCHEMA)
					return schema_is_distributed(strVal(ao->object)) ?
						DDL_PROPAGATE : DDL_LOCAL;
				return DDL_LOCAL;
			}
		case T_VacuumStmt:
			return classify_vacuum((VacuumStmt *) stmt, info);
		case T_LockStmt:
			return classify_lock((LockStmt *) stmt, info);
		case T_IndexStmt:
			{
				IndexStmt  *ix = (IndexStmt *) stmt;

				if (!is_distributed(rangevar_relid(ix->relation)))
					return DDL_LOCAL;
				return ix->concurrent ? DDL_PROPAGATE_CONCURRENTLY : DDL_PROPAGATE;
			}
		case T_DropStmt:
			return classify_drop((DropStmt *) stmt);
		case T_CreatePolicyStmt:
			return is_distributed(rangevar_relid(((CreatePolicyStmt *) stmt)->table)) ?
				DDL_PROPAGATE : DDL_LOCAL;
		case T_AlterPolicyStmt:
			return is_distributed(rangevar_relid(((AlterPolicyStmt *) stmt)->table)) ?
				DDL_PROPAGATE : DDL_LOCAL;
		case T_GrantStmt:
			return classify_grant((GrantStmt *) stmt);
		case T_CommentStmt:
			return classify_comment((CommentStmt *) stmt);
		case T_CreateTrigStmt:
			{
				CreateTrigStmt *ct = (CreateTrigStmt *) stmt;
				char	   *schema;
				char	   *fn;

				relid = rangevar_relid(ct->relation);
				if (!is_distributed(relid))
					return DDL_LOCAL;
				/* the routing triggers themselves (distribute.c) */
				DeconstructQualifiedName(ct->funcname, &schema, &fn);
				if (schema && strcmp(schema, RX_SCHEMA_NAME) == 0)
					return DDL_LOCAL;
				refuse(psprintf("triggers on distributed table \"%s\" are not supported",
								get_rel_name(relid)),
					   "A row is stored by the member that owns it, after the member it was written through routed it: a trigger would fire on both.",
					   "Enforce the rule with a CHECK constraint, or use a plain table.");
				return DDL_LOCAL;
			}
		case T_RuleStmt:
			relid = rangevar_relid(((RuleStmt *) stmt)->relation);
			if (is_distributed(relid))
				refuse(psprintf("rules on distributed table \"%s\" are not supported",
								get_rel_name(relid)),
					   NULL, "Use a view over the table instead.");
			return DDL_LOCAL;
		case T_CreateSchemaStmt:
			/* with its elements (tables, views, ...) it is not one object */
			return ((CreateSchemaStmt *) stmt)->schemaElts == NIL ?
				DDL_PROPAGATE : DDL_LOCAL;
		case T_CompositeTypeStmt:
		case T_CreateEnumStmt:
		case T_CreateRangeStmt:
		case T_CreateDomainStmt:
		case T_AlterEnumStmt:
		case T_AlterDomainStmt:
		case T_AlterTypeStmt:
			return DDL_PROPAGATE;
		case T_CreateRoleStmt:
		case T_AlterRoleStmt:
		case T_AlterRoleSetStmt:
		case T_DropRoleStmt:
		case T_GrantRoleStmt:
		case T_AlterDefaultPrivilegesStmt:
			return DDL_PROPAGATE;
		default:
			return DDL_LOCAL;
	}
}

/* ---------------------------------------------------------------------
 * Sending it on
 * ---------------------------------------------------------------------
 */

static char *
statement_text(PlannedStmt *pstmt, const char *queryString)
{
	int			location = pstmt->stmt_location;
	int			len = pstmt->stmt_len;

	if (queryString == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot send a statement without its SQL text to the other members")));
	if (location < 0)
		location = 0;
	if (len <= 0)
		len = strlen(queryString + location);
	return pnstrdup(queryString + location, len);
}

static char *
search_path_sql(bool local)
{
	return psprintf("SELECT pg_catalog.set_config('search_path', %s, %s)",
					quote_literal_cstr(namespace_search_path),
					local ? "true" : "false");
}

/*
 * To the members in [from, to) of the list, this one excepted: in the
 * remote transactions, or with concurrently each in a session of its own
 * outside a transaction.  locking: the statement changes no rows there.
 */
static void
propagate(const char *sql, bool concurrently, bool locking, int from, int to)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();

	for (int m = from; m < Min(to, nmembers); m++)
	{
		PGconn	   *conn;

		if (m == self)
			continue;

		/*
		 * ANALYZE in a transaction that holds locks there (its writes,
		 * DDL or LOCK TABLE on that member) runs in that transaction: a
		 * session of its own would wait for them for ever
		 */
		if (!concurrently || rx_xact_open_on(&members[m]))
		{
			conn = locking ? rx_xact_lock_connection(&members[m])
				: rx_xact_connection(&members[m]);
			rx_exec_command(conn, members[m].name, search_path_sql(true));
			rx_exec_command(conn, members[m].name, sql);
			continue;
		}

		/* one statement, outside a transaction: it commits there at once */
		conn = rx_connect_member(&members[m]);
		PG_TRY();
		{
			rx_exec_command(conn, members[m].name, search_path_sql(false));
			rx_exec_command(conn, members[m].name, sql);
		}
		PG_CATCH();
		{
			rx_disconnect(conn);
			PG_RE_THROW();
		}
		PG_END_TRY();
		rx_disconnect(conn);
	}
}

/* a renamed distribution column, in this member's catalog */
static void
record_renamed_distcol(DdlInfo *info)
{
	int			nest = rx_admin_begin();
	int			n;

	(void) rx_catalog_spi(psprintf("UPDATE rdma_exchange.dist_table SET dist_column = %s"
							  " WHERE relid OPERATOR(pg_catalog.=) %u::pg_catalog.oid RETURNING relid",
							  quote_literal_cstr(info->renamed_distcol_to),
							  info->renamed_distcol_rel), &n);
	rx_admin_end(nest);
}

static void
rx_ddl_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	DdlAction	action = DDL_LOCAL;
	DdlInfo		info = {0};
	char	   *sql = NULL;
	bool		send;

	if (context != PROCESS_UTILITY_SUBCOMMAND && !creating_extension &&
		IsTransactionState() && rx_extension_loaded() &&
		OidIsValid(rx_dist_catalog_relid()))
		action = classify(stmt, &info);
	send = action != DDL_LOCAL && rx_propagate_ddl && !rx_in_member_session() &&
		rx_self_member_index() >= 0;
	if (send)
		sql = info.sql ? info.sql : statement_text(pstmt, queryString);

	/*
	 * VACUUM goes to the members first: at its end it holds this database's
	 * frozen-ids lock until its last transaction commits, after this hook,
	 * and the members' VACUUMs of the same tables, sent from here while
	 * it is held, could wait on sessions that wait for this one.
	 */
	if (send && IsA(stmt, VacuumStmt))
	{
		/* not from a transaction block, as here, before the members run it */
		if (((VacuumStmt *) stmt)->is_vacuumcmd)
			PreventInTransactionBlock(context == PROCESS_UTILITY_TOPLEVEL,
									  "VACUUM");
		propagate(sql, true, false, 0, RX_MAX_MEMBERS);
		send = false;
	}

	/*
	 * LOCK TABLE takes the locks member after member in member order, this
	 * one in its place: two sessions locking through different members
	 * then queue on the first member instead of deadlocking.
	 */
	if (send && IsA(stmt, LockStmt))
		propagate(sql, false, true, 0, rx_self_member_index());
	if (send && IsA(stmt, AlterTableStmt))
		alter_propagating++;
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, queryString, readOnlyTree, context,
								 params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (send && IsA(stmt, AlterTableStmt))
			alter_propagating--;
	}
	PG_END_TRY();

	if (OidIsValid(info.renamed_distcol_rel))
		record_renamed_distcol(&info);
	if (send && IsA(stmt, LockStmt))
		propagate(sql, false, true, rx_self_member_index() + 1, RX_MAX_MEMBERS);
	else if (send)
		propagate(sql, action == DDL_PROPAGATE_CONCURRENTLY, false, 0, RX_MAX_MEMBERS);
}

bool
rx_ddl_alter_propagating(void)
{
	return alter_propagating > 0;
}

void
rx_ddl_init(void)
{
	DefineCustomBoolVariable("rdma_exchange.propagate_ddl",
							 "Sends schema changes of distributed tables, types and roles to every member.",
							 "Off keeps a statement on this member, to repair one member's catalog.",
							 &rx_propagate_ddl, true, PGC_SUSET, 0,
							 NULL, NULL, NULL);
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = rx_ddl_process_utility;
}
