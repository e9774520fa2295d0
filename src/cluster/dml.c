/*-------------------------------------------------------------------------
 *
 * dml.c
 *	  Direct DML and COPY on distributed and reference tables: rows go to
 *	  their owners, and what cannot be done correctly is refused.
 *
 * A row on the wrong member is a defect (DESIGN 3.5), so every write path
 * into a distributed or reference table either routes rows or fails:
 *
 * Hash-distributed tables
 *	- INSERT and COPY FROM: a BEFORE INSERT row trigger (named
 *	  zzz_rdma_exchange_route so that it fires after the user's own BEFORE
 *	  triggers, which may still change the row) computes the owner of the
 *	  row.  This member's rows are stored here; the others are streamed to
 *	  their owners with COPY over libpq and skipped locally.  The streams end
 *	  at the end of the statement (an AFTER statement trigger), where errors
 *	  of the owners (unique violations, ...) are raised, and the owners
 *	  commit in the local transaction's pre-commit (remote_xact.c), with
 *	  savepoints following local subtransactions.  The command tag of the
 *	  INSERT or COPY adds the forwarded rows to the ones stored here (hooks
 *	  at the end of this file).  INSERT ... RETURNING and
 *	  INSERT ... ON CONFLICT run each row as one statement on its owner
 *	  instead (dml_insert.c), or are refused where that cannot be done.
 *	- UPDATE of the distribution column: refused everywhere (the row would
 *	  have to move); delete and insert the row instead.
 *	- UPDATE and DELETE of a distributed table: run on every member's part
 *	  when each member can do its part alone (dml_forward.c); otherwise
 *	  refused, like MERGE, because PostgreSQL would only see and change
 *	  this member's part.  rdma_exchange.run_on_all_nodes() runs any
 *	  statement on every member's part in one transaction.
 *	- TRUNCATE: forwarded to every member (as TRUNCATE ONLY: RESTART
 *	  IDENTITY and CASCADE apply to this member only).
 *	- COPY TO: rewritten into COPY (SELECT ...) TO, a distributed query,
 *	  since it would copy this member's part only.
 *
 * Reference tables (a full copy on every member)
 *	- INSERT and COPY FROM: stored here and streamed to every other member
 *	  the same way; with ON CONFLICT each row is kept here first and the
 *	  row this copy kept goes to the others by primary key (dml_insert.c).
 *	- UPDATE and DELETE: each changed row is applied on every other member
 *	  by its primary key, one statement per row and member, which fails
 *	  there unless exactly one row matched.  The statements are queued
 *	  and sent with the next command that goes to the member, at the
 *	  latest at commit (remote_xact.c); the first member's at the end of
 *	  the statement (its copy is where FOR UPDATE locks rows).  A
 *	  reference table without a primary key refuses UPDATE and DELETE.
 *	  MERGE is refused.
 *	- Every write first waits for the table's write order on the first
 *	  member (ref_order.c), so concurrent writes cannot deadlock.
 *	- TRUNCATE: forwarded to every member.
 *
 * Defaults (serial, identity, now()) are evaluated on the member that
 * runs the INSERT, before the row is routed; a sequence is per member, so
 * serial values drawn on different members can collide.  Forwarded rows
 * become visible to other sessions when the local transaction commits.
 *
 * Member sessions (application_name 'rdma_exchange': forwarded rows and
 * rdma_exchange.run_on_all_nodes()) work on this member's part only and
 * never forward: a forwarded row must belong to this member (anything else
 * means the members' catalogs differ, and is an error), and UPDATE and
 * DELETE are allowed there because the same statement runs on every
 * member.
 *
 * The statement-level refusals live in an ExecutorStart hook, so they
 * happen before any row is touched and also cover statements in functions
 * and writable CTEs; the row work lives in the triggers, which
 * create_distributed_table() and create_reference_table() install on every
 * member.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "cluster/dml.h"
#include "cluster/row_locks.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/ref_order.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/rowcopy.h"

PG_FUNCTION_INFO_V1(rx_route_row);
PG_FUNCTION_INFO_V1(rx_flush_rows);
PG_FUNCTION_INFO_V1(rx_forward_change);
PG_FUNCTION_INFO_V1(rx_expect_one_row);
PG_FUNCTION_INFO_V1(rx_forward_truncate);

static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorRun_hook_type prev_executor_run = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * Rows of the running INSERT or COPY FROM that went to other members: the
 * command tag counts them with the rows stored here, as a user loading a
 * table expects.  Saved and reset around every statement, so that rows
 * forwarded by statements nested in triggers or functions count for those.
 */
static uint64 forwarded_rows = 0;

/*
 * The running statement inserts one row (INSERT ... VALUES with one row):
 * a row for another member goes as an INSERT, one round trip, instead of
 * a COPY started and ended around it (two).  Saved and set around every
 * statement like forwarded_rows; COPY FROM runs with it off.
 */
static bool one_row_insert = false;

/*
 * The running statement is an INSERT whose rows dml_insert.c sends to
 * their owners itself (RETURNING, ON CONFLICT): the routing trigger lets
 * them through.  Saved and set around every statement like one_row_insert,
 * and off in utility commands (a COPY FROM in a function it calls routes
 * its rows).
 */
static bool rows_routed_by_statement = false;

/* ---------------------------------------------------------------------
 * Per-table routing state, cached per backend
 * ---------------------------------------------------------------------
 */

typedef struct RouteState
{
	Oid			relid;			/* hash key */
	bool		valid;
	MemoryContext cxt;
	RxTableDist dist;
	int			nmembers;
	RxMember   *members;
	int			self;
	FmgrInfo	hashfn;
	Oid			collation;
	RxRowEncoder *enc;
	/* reference tables: primary key and per-row statements */
	int			npk;
	AttrNumber *pk;
	char	   *delete_sql;
	char	   *update_sql;
	char	   *change_context; /* their errors' context */
	int			nupd;			/* columns set by update_sql */
	AttrNumber *upd;
	FmgrInfo   *out;			/* output function per attribute */
} RouteState;

static HTAB *route_cache = NULL;

/* contexts of replaced states, freed at transaction end (may be in use) */
static List *dead_contexts = NIL;

static void
dml_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	RouteState *rs;

	if (route_cache == NULL)
		return;
	hash_seq_init(&status, route_cache);
	while ((rs = hash_seq_search(&status)) != NULL)
	{
		if (relid == InvalidOid || rs->relid == relid ||
			relid == rx_node_catalog_relid_cached() ||
			relid == rx_dist_catalog_relid_cached())
			rs->valid = false;
	}
}

static void
dml_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, dead_contexts)
		MemoryContextDelete((MemoryContext) lfirst(lc));
	list_free(dead_contexts);
	dead_contexts = NIL;
}

/*
 * A change of one row by key, as a statement that fails on the member
 * where no row (or more than one) matched: its copy differs.  Failing
 * there, not in the coordinator that reads the count, stops the commands
 * queued behind it too (remote_xact.c), a RELEASE or PREPARE among them.
 */
static char *
one_row_checked(const char *change, const char *table, const char *verb)
{
	return psprintf("WITH c AS (%s RETURNING 1) SELECT rdma_exchange.expect_one_row(pg_catalog.count(*), %s, '%s') FROM c",
					change, quote_literal_cstr(table), verb);
}

static void
build_reference_sql(RouteState *rs, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			pkoid = RelationGetPrimaryKeyIndex(rel);
	StringInfoData where;
	StringInfoData sql;
	int			param;

	rs->out = palloc0(sizeof(FmgrInfo) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			outfn;
		bool		isvarlena;

		if (att->attisdropped)
			continue;
		getTypeOutputInfo(att->atttypid, &outfn, &isvarlena);
		fmgr_info_cxt(outfn, &rs->out[i], rs->cxt);
	}

	if (!OidIsValid(pkoid))
		return;
	{
		HeapTuple	ixtup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkoid));
		Form_pg_index ix;

		if (!HeapTupleIsValid(ixtup))
			elog(ERROR, "cache lookup failed for index %u", pkoid);
		ix = (Form_pg_index) GETSTRUCT(ixtup);
		rs->npk = ix->indnkeyatts;
		rs->pk = palloc(sizeof(AttrNumber) * rs->npk);
		for (int i = 0; i < rs->npk; i++)
			rs->pk[i] = ix->indkey.values[i];
		ReleaseSysCache(ixtup);
	}

	/* WHERE pk1 = $k AND ...; the SET list comes first in UPDATE */
	rs->upd = palloc(sizeof(AttrNumber) * Max(desc->natts, 1));
	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE ONLY %s SET ", rs->enc->table_name);
	param = 1;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->attgenerated != '\0')
			continue;
		appendStringInfo(&sql, "%s%s = $%d", param > 1 ? ", " : "",
						 quote_identifier(NameStr(att->attname)), param);
		rs->upd[rs->nupd++] = att->attnum;
		param++;
	}
	initStringInfo(&where);
	for (int i = 0; i < rs->npk; i++)
		appendStringInfo(&where, "%s%s = $%d", i > 0 ? " AND " : "",
						 quote_identifier(NameStr(TupleDescAttr(desc, rs->pk[i] - 1)->attname)),
						 param + i);
	appendStringInfo(&sql, " WHERE %s", where.data);
	rs->update_sql = one_row_checked(sql.data, rs->enc->table_name, "update");

	resetStringInfo(&where);
	for (int i = 0; i < rs->npk; i++)
		appendStringInfo(&where, "%s%s = $%d", i > 0 ? " AND " : "",
						 quote_identifier(NameStr(TupleDescAttr(desc, rs->pk[i] - 1)->attname)),
						 i + 1);
	rs->delete_sql = one_row_checked(psprintf("DELETE FROM ONLY %s WHERE %s",
											  rs->enc->table_name, where.data),
									 rs->enc->table_name, "delete");
	rs->change_context = psprintf("changing a row of reference table %s",
								  rs->enc->table_name);
}

static RouteState *
route_state(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	RouteState *rs;
	bool		found;
	MemoryContext old;

	if (route_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(RouteState);
		ctl.hcxt = TopMemoryContext;
		route_cache = hash_create("rdma_exchange routing", 32, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	rs = hash_search(route_cache, &relid, HASH_ENTER, &found);
	if (found && rs->valid)
		return rs;
	if (found && rs->cxt != NULL)
	{
		MemoryContext cold = rs->cxt;

		old = MemoryContextSwitchTo(TopMemoryContext);
		dead_contexts = lappend(dead_contexts, cold);
		MemoryContextSwitchTo(old);
	}
	rs->cxt = NULL;
	rs->valid = false;

	/* an error below leaves valid = false and cxt = NULL: rebuilt next time */
	{
		MemoryContext cxt = AllocSetContextCreate(TopMemoryContext,
												  "rdma_exchange routing state",
												  ALLOCSET_SMALL_SIZES);
		RxTableDist dist;
		RxMember   *members;
		int			nmembers;
		int			self;

		old = MemoryContextSwitchTo(cxt);
		PG_TRY();
		{
			rx_table_distribution(relid, &dist);
			nmembers = rx_get_members(&members);
			self = rx_self_member_index();
			memset(rs, 0, sizeof(RouteState));
			rs->relid = relid;
			rs->cxt = cxt;
			rs->dist = dist;
			rs->nmembers = nmembers;
			rs->members = members;
			rs->self = self;
			if (dist.method != RX_DIST_NONE)
			{
				rs->enc = rx_row_encoder_create(rel);
				if (dist.method == RX_DIST_HASH)
				{
					fmgr_info_cxt(rx_hash_proc_for(dist.hash_opfamily,
												   dist.distcol_type),
								  &rs->hashfn, cxt);
					rs->collation = TupleDescAttr(RelationGetDescr(rel),
												  dist.distcol - 1)->attcollation;
				}
				else
					build_reference_sql(rs, rel);
			}
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			memset(rs, 0, sizeof(RouteState));
			rs->relid = relid;
			MemoryContextDelete(cxt);
			PG_RE_THROW();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	rs->valid = true;
	return rs;
}

static void
require_self(RouteState *rs, Relation rel)
{
	if (rs->self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot write to table \"%s\": this server is not a member of the cluster",
						RelationGetRelationName(rel)),
				 errdetail("The table is distributed, but no row of rdma_exchange.node has this server's system identifier."),
				 errhint("Compare rdma_exchange.nodes on the members.")));
}

static TriggerData *
trigger_data(FunctionCallInfo fcinfo, const char *fname)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be called as a trigger", fname)));
	return (TriggerData *) fcinfo->context;
}

/* ---------------------------------------------------------------------
 * rdma_exchange.route_row(): BEFORE INSERT FOR EACH ROW
 * ---------------------------------------------------------------------
 */

/*
 * Send the row to another member: as a line of COPY, in the members'
 * common text format, or, where row-level security applies to the user
 * (COPY FROM refuses that), as an INSERT, so that the member checks the
 * row against the policies (the same everywhere, ddl.c) as this member
 * checks the rows it keeps.
 */
static void
forward_row(RouteState *rs, const RxMember *member, HeapTuple tuple,
			TupleDesc desc)
{
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	int			nest;

	heap_deform_tuple(tuple, desc, values, nulls);
	nest = rx_transmission_begin();
	if (check_enable_rls(rs->relid, InvalidOid, true) == RLS_ENABLED)
	{
		char	   *sql = rx_row_insert_sql(rs->enc, values, nulls);

		rx_transmission_end(nest);
		rx_xact_exec_in_context(member, sql);
	}
	else if (one_row_insert)
	{
		const char **params = rx_row_params(rs->enc, values, nulls);
		PGconn	   *conn;
		PGresult   *res;

		rx_transmission_end(nest);
		conn = rx_xact_send_params(member, rs->enc->insert_params, rs->enc->ncols,
								   NULL, params, true, false, false);
		while ((res = rx_xact_get_result(conn, member->name)) != NULL)
		{
			rx_raise_if_failed(conn, res, member->name,
							   psprintf("forwarding rows of table %s",
										rs->enc->table_name));
			PQclear(res);
		}
	}
	else
	{
		StringInfoData line;

		initStringInfo(&line);
		rx_row_encode(rs->enc, values, nulls, &line);
		rx_transmission_end(nest);
		rx_xact_copy_row(member, rs->relid, rs->enc->table_name,
						 rs->enc->copy_command, line.data, line.len);
	}
}

Datum
rx_route_row(PG_FUNCTION_ARGS)
{
	TriggerData *td = trigger_data(fcinfo, "rdma_exchange.route_row()");
	Relation	rel = td->tg_relation;
	HeapTuple	tuple = td->tg_trigtuple;
	TupleDesc	desc = RelationGetDescr(rel);
	RouteState *rs;

	if (!TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rdma_exchange.route_row() must be a BEFORE INSERT row trigger")));

	rs = route_state(rel);
	if (rs->dist.method == RX_DIST_NONE)
		return PointerGetDatum(tuple);	/* no longer distributed */
	require_self(rs, rel);

	if (rs->dist.method == RX_DIST_HASH)
	{
		bool		isnull;
		Datum		value;
		int			owner;

		if (rows_routed_by_statement)
			return PointerGetDatum(tuple);
		value = heap_getattr(tuple, rs->dist.distcol, desc, &isnull);
		owner = rx_member_for_datum(&rs->hashfn, rs->collation,
									value, isnull, rs->nmembers);

		if (owner == rs->self)
			return PointerGetDatum(tuple);
		if (rx_in_member_session())
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("row of table \"%s\" belongs to member \"%s\", not to this member \"%s\"",
							RelationGetRelationName(rel),
							rs->members[owner].name, rs->members[rs->self].name),
					 errdetail("Sessions opened by other members (application_name \"%s\") store only the rows this member owns and never forward rows.",
							   RX_APPLICATION_NAME),
					 errhint("Insert into a distributed table from an ordinary session, not through rdma_exchange.run_on_all_nodes(); if the row was forwarded by another member, the members' catalogs differ: compare rdma_exchange.nodes on every member.")));

		forward_row(rs, &rs->members[owner], tuple, desc);
		forwarded_rows++;
		return PointerGetDatum(NULL);	/* stored by its owner instead */
	}

	/*
	 * reference table: here and on every other member, unless dml_insert.c
	 * copies the row itself (ON CONFLICT: the row this copy kept)
	 */
	if (rx_in_member_session() || rows_routed_by_statement ||
		rx_insert_routing_here())
		return PointerGetDatum(tuple);
	rx_order_reference_write(RelationGetRelid(rel));	/* COPY FROM */
	for (int m = 0; m < rs->nmembers; m++)
		if (m != rs->self)
			forward_row(rs, &rs->members[m], tuple, desc);
	return PointerGetDatum(tuple);
}

/* ---------------------------------------------------------------------
 * rdma_exchange.flush_rows(): AFTER INSERT FOR EACH STATEMENT
 * ---------------------------------------------------------------------
 */

Datum
rx_flush_rows(PG_FUNCTION_ARGS)
{
	TriggerData *td = trigger_data(fcinfo, "rdma_exchange.flush_rows()");

	/* the owners' errors belong to this statement, not to COMMIT */
	rx_xact_copy_end(RelationGetRelid(td->tg_relation));
	return PointerGetDatum(NULL);
}

/* ---------------------------------------------------------------------
 * rdma_exchange.forward_change(): BEFORE UPDATE OR DELETE FOR EACH ROW,
 * reference tables only
 * ---------------------------------------------------------------------
 */

Datum
rx_forward_change(PG_FUNCTION_ARGS)
{
	TriggerData *td = trigger_data(fcinfo, "rdma_exchange.forward_change()");
	Relation	rel = td->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	bool		is_update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	HeapTuple	result = is_update ? td->tg_newtuple : td->tg_trigtuple;
	RouteState *rs;
	int			nparams;
	const char **params;
	int			p = 0;
	int			nest;

	if (!TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rdma_exchange.forward_change() must be a BEFORE row trigger")));

	/* an ON CONFLICT DO UPDATE's row: dml_insert.c copies it */
	if (rx_in_member_session() || rx_insert_routing_here())
		return PointerGetDatum(result);
	rs = route_state(rel);
	if (rs->dist.method != RX_DIST_REFERENCE)
		return PointerGetDatum(result);
	require_self(rs, rel);
	if (rs->npk == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot update or delete rows of reference table \"%s\" without a primary key",
						RelationGetRelationName(rel)),
				 errhint("Add a primary key on every member, or use rdma_exchange.run_on_all_nodes().")));

	nparams = (is_update ? rs->nupd : 0) + rs->npk;
	params = palloc0(sizeof(char *) * nparams);
	nest = rx_transmission_begin();
	if (is_update)
		for (int i = 0; i < rs->nupd; i++)
		{
			bool		isnull;
			Datum		v = heap_getattr(td->tg_newtuple, rs->upd[i], desc, &isnull);

			params[p++] = isnull ? NULL :
				OutputFunctionCall(&rs->out[rs->upd[i] - 1], v);
		}
	for (int i = 0; i < rs->npk; i++)
	{
		bool		isnull;
		Datum		v = heap_getattr(td->tg_trigtuple, rs->pk[i], desc, &isnull);

		params[p++] = isnull ? NULL :
			OutputFunctionCall(&rs->out[rs->pk[i] - 1], v);
	}
	rx_transmission_end(nest);

	/*
	 * Queued for every other copy, sent with the next command that goes to
	 * its member, at the latest at commit (remote_xact.c); the first
	 * member's at the end of this statement (rx_dml_executor_run()).
	 */
	for (int m = 0; m < rs->nmembers; m++)
		if (m != rs->self)
			rx_xact_defer_params(&rs->members[m],
								 is_update ? rs->update_sql : rs->delete_sql,
								 nparams, params, rs->change_context);
	return PointerGetDatum(result);
}

/*
 * rdma_exchange.expect_one_row(changed, table, verb): see one_row_checked()
 */
Datum
rx_expect_one_row(PG_FUNCTION_ARGS)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();

	if (PG_GETARG_INT64(0) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("reference table %s differs on member \"%s\"",
						text_to_cstring(PG_GETARG_TEXT_PP(1)),
						self >= 0 && self < nmembers ? members[self].name : "?"),
				 errdetail("The row to %s has " INT64_FORMAT " copies with the same primary key there.",
						   text_to_cstring(PG_GETARG_TEXT_PP(2)), PG_GETARG_INT64(0)),
				 errhint("Compare the table on the members, e.g. with rdma_exchange.run_on_all_nodes().")));
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * rdma_exchange.forward_truncate(): BEFORE TRUNCATE FOR EACH STATEMENT
 * ---------------------------------------------------------------------
 */

Datum
rx_forward_truncate(PG_FUNCTION_ARGS)
{
	TriggerData *td = trigger_data(fcinfo, "rdma_exchange.forward_truncate()");
	Relation	rel = td->tg_relation;
	RouteState *rs;
	char	   *sql;

	if (rx_in_member_session())
		return PointerGetDatum(NULL);
	rs = route_state(rel);
	if (rs->dist.method == RX_DIST_NONE)
		return PointerGetDatum(NULL);
	require_self(rs, rel);

	sql = psprintf("TRUNCATE ONLY %s", rs->enc->table_name);
	for (int m = 0; m < rs->nmembers; m++)
		if (m != rs->self)
			rx_xact_exec(&rs->members[m], sql, true);
	return PointerGetDatum(NULL);
}

/* ---------------------------------------------------------------------
 * Statement checks: ExecutorStart hook
 * ---------------------------------------------------------------------
 */

static void
refuse(const char *what, Oid relid, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s on distributed table \"%s\" is not supported",
					what, get_rel_name(relid)),
			 errdetail("%s", detail),
			 errhint("%s", hint)));
}

#define LOCAL_PART_ONLY "Each member stores only its own rows of the table, and this statement would see or change this member's rows only."
#define NOT_ROUTED "Such an INSERT runs each row as one statement on the member that owns it, which is done only for a table without user triggers or partitions, outside WITH, with an ON CONFLICT clause that reads reference tables only and calls only built-in functions."
#define NOT_FORWARDED "Each member stores only its own rows of the table.  A statement is run on every member's part only when every other distributed table it reads is joined to the target on both distribution columns (t.d = o.d in WHERE, t.d IN (SELECT o.d ...), EXISTS (... WHERE o.d = t.d)) or is read by an uncorrelated subquery of WHERE (computed first), it reads no local table, has no WITH, calls only built-in functions, and the table has no row-level security or user triggers."

/* the n-th result relation is written through a view WITH CHECK OPTION */
static bool
view_check(ModifyTable *mt, int n)
{
	ListCell   *lc;

	if (mt->withCheckOptionLists == NIL)
		return false;
	foreach(lc, (List *) list_nth(mt->withCheckOptionLists, n))
		if (lfirst_node(WithCheckOption, lc)->kind == WCO_VIEW_CHECK)
			return true;
	return false;
}

static void
check_modify_table(Plan *plan, PlannedStmt *ps)
{
	ModifyTable *mt;
	ListCell   *lc;
	int			i = 0;
	bool		member_session;

	if (plan == NULL || !IsA(plan, ModifyTable))
		return;
	mt = (ModifyTable *) plan;
	member_session = rx_in_member_session();

	foreach(lc, mt->resultRelations)
	{
		Index		rti = lfirst_int(lc);
		RangeTblEntry *rte = rt_fetch(rti, ps->rtable);
		RxTableDist dist;
		Oid			relid = rte->relid;

		i++;
		rx_table_distribution(relid, &dist);
		if (dist.method == RX_DIST_NONE)
			continue;
		if (!member_session)
			rx_xact_note_change();

		if (dist.method == RX_DIST_HASH)
		{
			switch (mt->operation)
			{
				case CMD_UPDATE:
					if (list_member_int(list_nth(mt->updateColnosLists, i - 1),
										dist.distcol))
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("cannot update distribution column \"%s\" of table \"%s\"",
										get_attname(relid, dist.distcol, false),
										get_rel_name(relid)),
								 errdetail("The new value could belong to another member."),
								 errhint("Delete the row and insert it with the new value instead.")));
					if (!member_session && view_check(mt, i - 1))
						refuse("UPDATE through a view WITH CHECK OPTION", relid,
							   "The other members would change their rows without the view's check.",
							   "Update the table itself, with the view's condition in WHERE.");
					if (!member_session && rx_dml_forward_of(ps) == NIL)
						refuse("UPDATE", relid, NOT_FORWARDED,
							   "Run the UPDATE on every member's part with rdma_exchange.run_on_all_nodes().");
					break;
				case CMD_DELETE:
					if (!member_session && rx_dml_forward_of(ps) == NIL)
						refuse("DELETE", relid, NOT_FORWARDED,
							   "Run the DELETE on every member's part with rdma_exchange.run_on_all_nodes(), or TRUNCATE the table.");
					break;
				case CMD_MERGE:
					if (!member_session)
						refuse("MERGE", relid, LOCAL_PART_ONLY,
							   "Use INSERT, and run UPDATE or DELETE with rdma_exchange.run_on_all_nodes().");
					break;
				case CMD_INSERT:
					if (member_session || rx_insert_routing_here())
						break;
					if ((mt->onConflictAction != ONCONFLICT_NONE ||
						 mt->returningLists != NIL || view_check(mt, i - 1)) &&
						!rx_insert_routed(plan))
						refuse(mt->onConflictAction != ONCONFLICT_NONE
							   ? "INSERT ... ON CONFLICT" : mt->returningLists != NIL
							   ? "INSERT ... RETURNING" : "INSERT through a view WITH CHECK OPTION",
							   relid, NOT_ROUTED,
							   "Keep user-defined functions and other distributed tables out of the ON CONFLICT clause, or insert without it.");
					break;
				default:
					break;
			}
		}
		else
		{
			if (member_session)
				continue;
			if (mt->operation == CMD_MERGE)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("MERGE on reference table \"%s\" is not supported",
								get_rel_name(relid)),
						 errhint("Use INSERT, UPDATE and DELETE, which are applied on every member.")));
			if (mt->operation == CMD_INSERT && mt->onConflictAction != ONCONFLICT_NONE &&
				!rx_insert_routed(plan) && !rx_insert_routing_here())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("INSERT ... ON CONFLICT on reference table \"%s\" is not supported here",
								get_rel_name(relid)),
						 errdetail("Each row is stored on this member's copy first and then copied to the others by primary key: that needs a primary key, and an ON CONFLICT clause that reads reference tables only and calls only built-in functions."),
						 errhint("Add a primary key, or insert without ON CONFLICT.")));
			if (mt->operation == CMD_UPDATE || mt->operation == CMD_DELETE)
			{
				Relation	rel = RelationIdGetRelation(relid);
				bool		has_pk = false;

				if (RelationIsValid(rel))
				{
					has_pk = OidIsValid(RelationGetPrimaryKeyIndex(rel));
					RelationClose(rel);
				}
				if (!has_pk)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot %s rows of reference table \"%s\" without a primary key",
									mt->operation == CMD_UPDATE ? "update" : "delete",
									get_rel_name(relid)),
							 errdetail("Changed rows are applied on the other members by primary key."),
							 errhint("Add a primary key on every member, or use rdma_exchange.run_on_all_nodes().")));
			}
		}
	}
}

static void
rx_dml_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *ps = queryDesc->plannedstmt;

	if ((ps->commandType != CMD_SELECT || ps->hasModifyingCTE) &&
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
		rx_extension_loaded())
	{
		ListCell   *lc;

		/* ModifyTable is the root of the plan or of a writable CTE */
		check_modify_table(ps->planTree, ps);
		foreach(lc, ps->subplans)
			check_modify_table((Plan *) lfirst(lc), ps);
	}

	/* an UPDATE or DELETE's subqueries computed first (dml_forward.c) */
	if ((ps->commandType == CMD_UPDATE || ps->commandType == CMD_DELETE) &&
		!rx_in_member_session() && rx_extension_loaded())
		queryDesc->params = rx_dml_forward_params(ps, queryDesc->params,
												  (eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0);

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	if (ps->commandType == CMD_INSERT && rx_extension_loaded())
		rx_insert_route_start(queryDesc);
}

/* a plan that inserts one row: ModifyTable over a Result of no input */
static bool
single_row_insert(Plan *plan)
{
	return IsA(plan, ModifyTable) && outerPlan(plan) != NULL &&
		IsA(outerPlan(plan), Result) && outerPlan(outerPlan(plan)) == NULL;
}

static void
rx_dml_executor_run(QueryDesc *queryDesc, ScanDirection direction,
					uint64 count, bool execute_once)
{
	volatile uint64 saved = forwarded_rows;
	volatile bool saved_one_row = one_row_insert;
	volatile bool saved_routed = rows_routed_by_statement;
	uint64		forwarded;
	RxForward  *forward = NULL;
	uint64		before = 0;
	bool		reference = false;
	RxReturning *returning = NULL;
	DestReceiver *dest = NULL;
	DestReceiver *volatile saved_dest = queryDesc->dest;

	/*
	 * An UPDATE or DELETE run on every member's part goes to the members in
	 * member index order, this one in its place, whichever member runs it:
	 * two such statements then wait for each other's row locks in one
	 * order only and cannot deadlock across members, where no deadlock
	 * detector would see it.
	 */
	if ((queryDesc->operation == CMD_UPDATE || queryDesc->operation == CMD_DELETE) &&
		!rx_in_member_session() && rx_extension_loaded())
		forward = rx_dml_forward_begin(queryDesc->plannedstmt, queryDesc->params);

	/* writes to reference tables queue on the first member (ref_order.c) */
	if (queryDesc->plannedstmt->resultRelations != NIL &&
		!rx_in_member_session() && rx_extension_loaded())
	{
		ListCell   *lc;

		foreach(lc, queryDesc->plannedstmt->resultRelations)
		{
			RangeTblEntry *rte = rt_fetch(lfirst_int(lc), queryDesc->plannedstmt->rtable);
			RxTableDist dist;

			rx_table_distribution(rte->relid, &dist);
			if (dist.method == RX_DIST_REFERENCE)
			{
				rx_order_reference_write(rte->relid);
				reference = true;
			}
		}
	}
	if (forward != NULL && queryDesc->plannedstmt->hasReturning)
	{
		/* the members' RETURNING rows go to the client with this one's */
		returning = rx_returning_begin(queryDesc->tupDesc);
		dest = rx_returning_dest(queryDesc->dest, forward, returning);
	}
	if (forward != NULL)
		before = rx_dml_forward_run(forward, true, returning);

	forwarded_rows = 0;
	one_row_insert = queryDesc->operation == CMD_INSERT &&
		single_row_insert(queryDesc->plannedstmt->planTree);
	rows_routed_by_statement = queryDesc->operation == CMD_INSERT &&
		rx_insert_routed(queryDesc->plannedstmt->planTree);
	if (dest != NULL)
		queryDesc->dest = dest;
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(queryDesc, direction, count, execute_once);
		else
			standard_ExecutorRun(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		if (dest != NULL)
			queryDesc->dest = saved_dest;
		forwarded = forwarded_rows;
		forwarded_rows = saved;
		one_row_insert = saved_one_row;
		rows_routed_by_statement = saved_routed;
	}
	PG_END_TRY();
	if (queryDesc->operation == CMD_INSERT)
		queryDesc->estate->es_processed += forwarded;
	if (forward != NULL)
		queryDesc->estate->es_processed += before +
			(dest != NULL ? rx_returning_after(dest) : rx_dml_forward_run(forward, false, NULL));

	/*
	 * The first member's copy of a reference table is where SELECT ... FOR
	 * UPDATE locks its rows (row_locks.c): the changes queued for it
	 * (rx_forward_change()) go before the statement ends, so that it waits
	 * for such a lock, under lock_timeout, and fails with it, as on one
	 * server.  The other copies see only writers ref_order.c ordered.
	 */
	if (reference && rx_self_member_index() != 0)
	{
		RxMember   *members;

		if (rx_get_members(&members) > 0)
			rx_xact_flush(&members[0]);
	}
}

/*
 * COPY of a hash-distributed table TO a file or the client would copy this
 * member's part only (pg_dump, \copy and exports use it): it becomes
 * COPY (SELECT columns FROM ONLY table) TO ..., a distributed query, as
 * PostgreSQL itself rewrites COPY of a table with row-level security.
 * Returns the statement to run: pstmt, or a rewritten copy of it.
 */
/* a SELECT list entry: the column named by field, or * */
static ResTarget *
select_target(Node *field)
{
	ColumnRef  *cr = makeNode(ColumnRef);
	ResTarget  *target = makeNode(ResTarget);

	cr->fields = list_make1(field);
	cr->location = -1;
	target->val = (Node *) cr;
	target->location = -1;
	return target;
}

static PlannedStmt *
copy_to_as_query(PlannedStmt *pstmt)
{
	CopyStmt   *copy = (CopyStmt *) pstmt->utilityStmt;
	RxTableDist dist;
	Oid			relid;
	SelectStmt *select;
	RangeVar   *from;
	List	   *targets = NIL;
	ListCell   *lc;

	if (!IsA(copy, CopyStmt) || copy->is_from || copy->relation == NULL ||
		rx_in_member_session() || !rx_extension_loaded())
		return pstmt;
	relid = RangeVarGetRelid(copy->relation, NoLock, true);
	if (!OidIsValid(relid))
		return pstmt;
	rx_table_distribution(relid, &dist);
	if (dist.method != RX_DIST_HASH)
		return pstmt;

	if (copy->attlist == NIL)
		targets = list_make1(select_target((Node *) makeNode(A_Star)));
	foreach(lc, copy->attlist)
		targets = lappend(targets,
						  select_target((Node *) makeString(pstrdup(strVal(lfirst(lc))))));
	from = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
						get_rel_name(relid), -1);
	from->inh = false;
	select = makeNode(SelectStmt);
	select->targetList = targets;
	select->fromClause = list_make1(from);

	pstmt = copyObject(pstmt);
	copy = (CopyStmt *) pstmt->utilityStmt;
	copy->relation = NULL;
	copy->attlist = NIL;
	copy->query = (Node *) select;
	return pstmt;
}

static void
rx_dml_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	volatile uint64 saved = forwarded_rows;
	volatile bool saved_routed = rows_routed_by_statement;
	uint64		forwarded;

	if (IsA(pstmt->utilityStmt, CopyStmt))
	{
		PlannedStmt *rewritten = copy_to_as_query(pstmt);

		/* the rewritten statement is ours to modify */
		if (rewritten != pstmt)
			readOnlyTree = false;
		pstmt = rewritten;
	}

	forwarded_rows = 0;
	rows_routed_by_statement = false;
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
		forwarded = forwarded_rows;
		forwarded_rows = saved;
		rows_routed_by_statement = saved_routed;
	}
	PG_END_TRY();
	if (qc != NULL && qc->commandTag == CMDTAG_COPY && IsA(pstmt->utilityStmt, CopyStmt))
		qc->nprocessed += forwarded;
}

void
rx_dml_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = rx_dml_executor_start;
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = rx_dml_executor_run;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = rx_dml_process_utility;
	CacheRegisterRelcacheCallback(dml_relcache_callback, (Datum) 0);
	RegisterXactCallback(dml_xact_callback, NULL);
	rx_dml_forward_init();
	rx_row_locks_init();
}
