/*-------------------------------------------------------------------------
 *
 * row_locks.c
 *	  SELECT ... FOR UPDATE/SHARE over distributed and reference tables:
 *	  the rows are locked where they are stored, in this transaction.
 *
 * A row lock is a mark on the row in the heap of the server that stores
 * it, so a member can only lock its own rows.  A locking query whose
 * answer every member can give for its own part (one hash-distributed
 * table, with any reference tables; see rx_row_locks_check() for what is
 * refused) runs as SQL on those members, over the connection that carries
 * this transaction there (remote_xact.c: the locks last until this
 * transaction ends, and later statements of the transaction that change
 * the rows run in the same remote transaction), and here through SPI.
 * The coordinator puts the rows together: a LOCK ROWS custom scan under
 * the query's own Sort and Limit.
 *
 *	- Which members: the owner of the key when the WHERE clause compares
 *	  the distribution column with a constant or a parameter (the
 *	  single-row SELECT ... WHERE id = $1 FOR UPDATE of ORMs); every member
 *	  otherwise, in member index order (two such queries lock a member's
 *	  rows before the next member's, so they queue instead of deadlocking
 *	  across members); the first member for a query over reference tables
 *	  only: every writer of a reference table changes the first member's
 *	  copy too (ref_order.c), so that copy is where its rows are locked.
 *	- LIMIT: one server locks only the rows the Limit takes (LockRows sits
 *	  below it).  Each member gets LIMIT count + offset and locks at most
 *	  that many of its rows, inside a savepoint; the coordinator merges the
 *	  members' (sorted) rows, and the savepoint of a member none of whose
 *	  rows are among the first count + offset is rolled back, which
 *	  releases its locks.  So ORDER BY ... LIMIT 1 FOR UPDATE SKIP LOCKED,
 *	  the queue worker's query, locks exactly one row; with a larger
 *	  LIMIT a member that gives some of its rows keeps the locks on the
 *	  rest of them until the transaction ends (README).
 *	- NOWAIT, SKIP LOCKED, lock_timeout, deadlock detection and the
 *	  re-check of a row updated meanwhile (EvalPlanQual) are the members'
 *	  own: each runs the query as a local query on its part.
 *
 * The members' SQL is the query deparsed before planning (every name
 * qualified), with ORDER BY columns that are not selected added to the
 * select list and OFFSET folded into LIMIT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/planmain.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/sortsupport.h"
#include "utils/tuplestore.h"

#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/row_locks.h"
#include "planner/planner.h"

#define LOCK_ROWS_NAME "LOCK ROWS"
#define LOCK_SAVEPOINT "rx_lock_rows"

/* where the rows are locked */
#define ON_EVERY_MEMBER 'a'
#define ON_OWNER		'o'
#define ON_FIRST_MEMBER 'f'

/* from the check before planning to rx_row_locks_plan() */
struct RxRowLocks
{
	char	   *sql;			/* what the members run */
	List	   *params;			/* ids of the bound parameters it uses */
	char		where;
	Oid			relid;			/* ON_OWNER: the table and the key */
	Expr	   *key;
	List	   *tlist;			/* the query's, ORDER BY columns included */
	List	   *sort;			/* its ORDER BY */
	Node	   *limit_count;
	Node	   *limit_offset;
};

/* ---------------------------------------------------------------------
 * Planning
 * ---------------------------------------------------------------------
 */

typedef struct Locked
{
	Query	   *top;
	Oid			hash;			/* a hash table whose rows are locked */
	Oid			reference;		/* a reference table whose rows are locked */
	bool		in_subquery;	/* a locking clause below the top query */
} Locked;

static bool
locked_walker(Node *node, Locked *lk)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;
		ListCell   *lc;

		foreach(lc, q->rowMarks)
		{
			RowMarkClause *rc = lfirst_node(RowMarkClause, lc);
			RangeTblEntry *rte = rt_fetch(rc->rti, q->rtable);
			RxTableDist dist;

			if (q != lk->top && !rc->pushedDown)
				lk->in_subquery = true;
			if (rte->rtekind != RTE_RELATION)
				continue;
			rx_table_distribution(rte->relid, &dist);
			if (dist.method == RX_DIST_HASH)
				lk->hash = rte->relid;
			else if (dist.method == RX_DIST_REFERENCE)
				lk->reference = rte->relid;
		}
		return query_tree_walker(q, locked_walker, lk, 0);
	}
	return expression_tree_walker(node, locked_walker, lk);
}

static void
refuse(Oid relid, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("SELECT FOR UPDATE/SHARE over table \"%s\" is not supported in this query",
					get_rel_name(relid)),
			 errdetail("%s", detail),
			 errhint("%s", hint ? hint :
					 "Lock the rows with a query over that one table (SELECT ... FROM t WHERE ... FOR UPDATE) and read the rest in another query, or take LOCK TABLE, which locks the table on every member.")));
}

struct RxRowLocks *
rx_row_locks_check(Query *parse)
{
	Locked		lk = {parse, InvalidOid, InvalidOid, false};
	RxStatementShape shape;
	struct RxRowLocks *rl;
	Query	   *members;
	Oid			relid;
	ListCell   *lc;

	/*
	 * Member sessions run their part as it is; referential integrity checks
	 * (the only statements run with SECURITY_NOFORCE_RLS) lock the copy
	 * they check, as before.
	 */
	if (parse->commandType != CMD_SELECT || rx_in_member_session() ||
		InNoForceRLSOperation())
		return NULL;
	(void) locked_walker((Node *) parse, &lk);
	if (!OidIsValid(lk.hash) && !OidIsValid(lk.reference))
		return NULL;
	relid = OidIsValid(lk.hash) ? lk.hash : lk.reference;

	rx_statement_shape((Node *) parse, &shape);
	if (lk.in_subquery)
		refuse(relid, "The rows are locked in a subquery.", NULL);
	if (shape.hash_tables > 1)
		refuse(relid, "The query reads more than one distributed table (or one twice): rows are locked by a query that each member answers for its own part of one distributed table.", NULL);
	if (OidIsValid(lk.hash) && OidIsValid(lk.reference))
		refuse(relid, "It locks rows of a reference table as well: the query runs on every member, which would lock every copy of those rows instead of one.",
			   psprintf("Name only the distributed table: FOR UPDATE OF %s.",
						quote_identifier(get_rel_name(lk.hash))));
	if (shape.local_tables > 0)
		refuse(relid, "The query reads a table that is not distributed, which exists on this member only.", NULL);
	if (shape.row_security)
		refuse(relid, "Row-level security applies to a table of the query.", NULL);
	if (shape.ctes)
		refuse(relid, "The query has a WITH clause.", NULL);
	if (shape.local_routines)
		refuse(relid, "The query calls a user-defined function or operator, which may not exist on every member.",
			   "Compute the function's result in another query and pass it in as a parameter.");
	if (parse->limitOption == LIMIT_OPTION_WITH_TIES)
		refuse(relid, "The query uses FETCH FIRST ... WITH TIES.", NULL);
	if (contain_subplans(parse->limitCount) || contain_subplans(parse->limitOffset))
		refuse(relid, "LIMIT or OFFSET is a subquery.", NULL);

	rl = palloc0(sizeof(struct RxRowLocks));
	rl->tlist = copyObject(parse->targetList);
	rl->sort = copyObject(parse->sortClause);
	rl->limit_count = copyObject(parse->limitCount);
	rl->limit_offset = copyObject(parse->limitOffset);
	if (!OidIsValid(lk.hash))
		rl->where = ON_FIRST_MEMBER;
	else if ((rl->key = rx_owner_key(parse, lk.hash)) != NULL)
	{
		rl->where = ON_OWNER;
		rl->relid = lk.hash;
		rl->key = copyObject(rl->key);
	}
	else
		rl->where = ON_EVERY_MEMBER;

	/* the members return the ORDER BY columns, and count + offset rows */
	members = copyObject(parse);
	foreach(lc, members->targetList)
		lfirst_node(TargetEntry, lc)->resjunk = false;
	if (members->limitOffset != NULL)
	{
		if (members->limitCount != NULL)
		{
			CoalesceExpr *offset = makeNode(CoalesceExpr);

			offset->coalescetype = INT8OID;
			offset->args = list_make2(members->limitOffset,
									  makeConst(INT8OID, -1, InvalidOid, 8,
												Int64GetDatum(0), false, true));
			offset->location = -1;
			members->limitCount = (Node *)
				makeFuncExpr(F_INT8PL, INT8OID,
							 list_make2(members->limitCount, offset),
							 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		}
		members->limitOffset = NULL;
	}
	rl->sql = rx_deparse_query(members);
	for (int id = -1; (id = bms_next_member(shape.params, id)) >= 0;)
		rl->params = lappend_int(rl->params, id);
	return rl;
}

/* a plan node's estimates: the local plan's */
static void
copy_costs(Plan *to, Plan *from)
{
	to->startup_cost = from->startup_cost;
	to->total_cost = from->total_cost;
	to->plan_rows = from->plan_rows;
	to->plan_width = from->plan_width;
}

static CustomScanMethods lock_rows_plan_methods;

/*
 * The query's local plan, Limit -> LockRows -> Sort -> scans, becomes
 * Limit -> Sort -> LOCK ROWS: the members (this one too) run the query.
 */
void
rx_row_locks_plan(PlannedStmt *stmt, struct RxRowLocks *rl)
{
	Plan	   *local = stmt->planTree;
	RxPlanContext ctx = {stmt};
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *top = &cscan->scan.plan;
	int			nkeys = list_length(rl->sort);
	AttrNumber *cols = palloc(sizeof(AttrNumber) * (nkeys + 1));
	Oid		   *ops = palloc(sizeof(Oid) * (nkeys + 1));
	Oid		   *colls = palloc(sizeof(Oid) * (nkeys + 1));
	bool	   *nulls = palloc(sizeof(bool) * (nkeys + 1));
	List	   *keys[4] = {NIL, NIL, NIL, NIL};
	List	   *scan_tlist = NIL;
	ListCell   *lc;

	foreach(lc, rl->tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(tle->expr, tle->resno, tle->resname, false));
	}
	foreach(lc, rl->sort)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, rl->tlist);
		int			k = foreach_current_index(lc);

		cols[k] = tle->resno;
		ops[k] = sgc->sortop;
		colls[k] = exprCollation((Node *) tle->expr);
		nulls[k] = sgc->nulls_first;
		keys[0] = lappend_int(keys[0], cols[k]);
		keys[1] = lappend_oid(keys[1], ops[k]);
		keys[2] = lappend_oid(keys[2], colls[k]);
		keys[3] = lappend_int(keys[3], nulls[k]);
	}

	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = scan_tlist;
	top->targetlist = rx_column_tlist(rl->tlist, INDEX_VAR);
	top->plan_node_id = rx_new_node_id(&ctx);
	cscan->methods = &lock_rows_plan_methods;
	cscan->custom_private = list_make5(makeString(rl->sql), rl->params,
									   makeInteger(rl->where),
									   makeInteger((int) rl->relid),
									   list_make4(keys[0], keys[1], keys[2], keys[3]));
	cscan->custom_exprs = list_make3(rl->key,
									 rl->limit_count ? expression_planner((Expr *) rl->limit_count) : NULL,
									 rl->limit_offset ? expression_planner((Expr *) rl->limit_offset) : NULL);
	copy_costs(top, local);

	if (nkeys > 0)
		top = (Plan *) rx_make_sort(&ctx, top, nkeys, cols, ops, colls, nulls);
	if (rl->limit_count != NULL || rl->limit_offset != NULL)
	{
		Limit	   *limit = makeNode(Limit);

		limit->limitCount = (Node *) lsecond(cscan->custom_exprs);
		limit->limitOffset = (Node *) lthird(cscan->custom_exprs);
		limit->limitOption = LIMIT_OPTION_COUNT;
		limit->plan.targetlist = rx_passthrough_tlist(top);
		limit->plan.lefttree = top;
		limit->plan.plan_node_id = rx_new_node_id(&ctx);
		copy_costs(&limit->plan, local);
		top = &limit->plan;
	}

	stmt->planTree = top;
	/* nothing is locked here through the executor; its subplans are gone */
	stmt->rowMarks = NIL;
	foreach(lc, stmt->subplans)
		lfirst(lc) = NULL;
	/* (PostgreSQL allows no SCROLL cursor FOR UPDATE: no backward scans) */
}

/* ---------------------------------------------------------------------
 * Execution
 * ---------------------------------------------------------------------
 */

typedef struct RxLockRowsState
{
	CustomScanState css;
	const char *sql;
	List	   *params;
	char		where;
	Oid			relid;
	int			nkeys;
	AttrNumber *key_cols;
	SortSupport keys;
	ExprState  *key;
	ExprState  *count;
	ExprState  *offset;

	bool		done;
	Tuplestorestate *out;		/* the rows, in member order or merged */
	TupleTableSlot *row;		/* the current one (the scan slot is virtual) */
	int			nmembers;
	RxMember   *members;
	uint64	   *locked;			/* rows locked per member */
	ResourceOwner local_owner;	/* this member's part's subtransaction */
} RxLockRowsState;

static Node *lock_rows_create_state(CustomScan *cscan);
static void lock_rows_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *lock_rows_exec(CustomScanState *node);
static void lock_rows_end(CustomScanState *node);
static void lock_rows_rescan(CustomScanState *node);
static void lock_rows_explain(CustomScanState *node, List *ancestors,
							  ExplainState *es);

static CustomScanMethods lock_rows_plan_methods = {
	LOCK_ROWS_NAME,
	lock_rows_create_state
};

static CustomExecMethods lock_rows_exec_methods = {
	.CustomName = LOCK_ROWS_NAME,
	.BeginCustomScan = lock_rows_begin,
	.ExecCustomScan = lock_rows_exec,
	.EndCustomScan = lock_rows_end,
	.ReScanCustomScan = lock_rows_rescan,
	.ExplainCustomScan = lock_rows_explain
};

static Node *
lock_rows_create_state(CustomScan *cscan)
{
	RxLockRowsState *st = palloc0(sizeof(RxLockRowsState));
	List	   *sort = (List *) list_nth(cscan->custom_private, 4);

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &lock_rows_exec_methods;
	st->sql = strVal(linitial(cscan->custom_private));
	st->params = (List *) lsecond(cscan->custom_private);
	st->where = (char) intVal(lthird(cscan->custom_private));
	st->relid = (Oid) intVal(lfourth(cscan->custom_private));
	st->nkeys = list_length(linitial(sort));
	st->key_cols = palloc(sizeof(AttrNumber) * (st->nkeys + 1));
	st->keys = palloc0(sizeof(SortSupportData) * (st->nkeys + 1));
	for (int k = 0; k < st->nkeys; k++)
	{
		SortSupport ssup = &st->keys[k];

		st->key_cols[k] = list_nth_int(linitial(sort), k);
		ssup->ssup_cxt = CurrentMemoryContext;
		ssup->ssup_collation = list_nth_oid(lthird(sort), k);
		ssup->ssup_nulls_first = list_nth_int(lfourth(sort), k);
		ssup->ssup_attno = st->key_cols[k];
		PrepareSortSupportFromOrderingOp(list_nth_oid(lsecond(sort), k), ssup);
	}
	return (Node *) st;
}

static void
lock_rows_begin(CustomScanState *node, EState *estate, int eflags)
{
	RxLockRowsState *st = (RxLockRowsState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	st->key = ExecInitExpr(linitial(cscan->custom_exprs), &node->ss.ps);
	st->count = ExecInitExpr(lsecond(cscan->custom_exprs), &node->ss.ps);
	st->offset = ExecInitExpr(lthird(cscan->custom_exprs), &node->ss.ps);
	st->row = ExecAllocTableSlot(&estate->es_tupleTable,
								 node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
								 &TTSOpsMinimalTuple);
	st->nmembers = rx_get_members(&st->members);
	st->locked = palloc0(sizeof(uint64) * Max(st->nmembers, 1));
}

/* the value of an int8 expression, -1 for NULL (no limit) */
static int64
eval_limit(RxLockRowsState *st, ExprState *expr)
{
	bool		isnull;
	Datum		value;

	if (expr == NULL)
		return -1;
	value = ExecEvalExprSwitchContext(expr, st->css.ss.ps.ps_ExprContext, &isnull);
	return isnull ? -1 : DatumGetInt64(value);
}

/* the member that owns the key's value */
static int
owner_member(RxLockRowsState *st)
{
	bool		isnull;
	Datum		value = ExecEvalExprSwitchContext(st->key,
												  st->css.ss.ps.ps_ExprContext,
												  &isnull);

	return rx_member_of_key(st->relid, exprType((Node *) st->key->expr),
							value, isnull, st->nmembers);
}

/*
 * This member's part, through SPI as a local query.  With a savepoint, in
 * a subtransaction left open until the rows are merged.
 */
static void
run_local(RxLockRowsState *st, Tuplestorestate *store, bool savepoint)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ParamListInfo params = st->css.ss.ps.state->es_param_list_info;
	int			nargs = st->params != NIL ? llast_int(st->params) : 0;
	Oid		   *types = palloc(sizeof(Oid) * (nargs + 1));
	Datum	   *values = palloc0(sizeof(Datum) * (nargs + 1));
	char	   *nulls = palloc(nargs + 1);
	int			nest;
	ListCell   *lc;

	for (int i = 0; i < nargs; i++)
	{
		types[i] = TEXTOID;		/* not used by the query */
		nulls[i] = 'n';
	}
	foreach(lc, st->params)
	{
		int			id = lfirst_int(lc);
		ParamExternData workspace;
		ParamExternData *prm;

		if (params == NULL || id > params->numParams)
			elog(ERROR, "parameter $%d of a locking query has no value", id);
		prm = rx_bound_param(params, id, &workspace);
		if (OidIsValid(prm->ptype))
			types[id - 1] = prm->ptype;
		values[id - 1] = prm->value;
		nulls[id - 1] = prm->isnull ? 'n' : ' ';
	}

	if (savepoint)
	{
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
	}
	nest = NewGUCNestLevel();
	(void) set_config_option("rdma_exchange.enable", "off", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(st->sql, nargs, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "locking query did not return rows");

	/* the rows outlive the subtransaction: keep them under the caller's owner */
	st->local_owner = CurrentResourceOwner;
	CurrentResourceOwner = owner;
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(store, SPI_tuptable->vals[i]);
	st->locked[rx_self_member_index()] = SPI_processed;
	CurrentResourceOwner = st->local_owner;

	SPI_finish();
	AtEOXact_GUC(true, nest);
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/* after the merge: keep this member's locks or give them back */
static void
end_local(RxLockRowsState *st, bool keep)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	CurrentResourceOwner = st->local_owner;
	if (keep)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/* another member's part, in this transaction there */
static void
run_remote(RxLockRowsState *st, int m, PGconn *conn, RxForward *fw,
		   Tuplestorestate *store, bool savepoint)
{
	const char *name = st->members[m].name;
	TupleDesc	desc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	RxTextRows *rows = rx_text_rows(desc);
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext,
												 "rdma_exchange locked row",
												 ALLOCSET_SMALL_SIZES);
	PGresult   *res;

	if (savepoint)
		rx_exec_command(conn, name, "SAVEPOINT " LOCK_SAVEPOINT);
	if (!PQsendQueryParams(conn, fw->sql, fw->nparams, fw->types, fw->values,
						   NULL, NULL, 0))
		rx_report_remote_error(ERROR, conn, NULL, name, "could not send the locking query");
	while ((res = rx_get_result(conn, name)) != NULL)
	{
		PG_TRY();
		{
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				rx_report_remote_error(ERROR, conn, res, name, "locking rows of its part");
			if (PQnfields(res) != desc->natts)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("member \"%s\" returned %d columns for a locking query of %d",
								name, PQnfields(res), desc->natts)));
			for (int r = 0; r < PQntuples(res); r++)
			{
				MemoryContext old = MemoryContextSwitchTo(rowcxt);

				rx_text_row_store(rows, res, r, 0, slot);
				MemoryContextSwitchTo(old);
				tuplestore_puttupleslot(store, slot);
				MemoryContextReset(rowcxt);
			}
			st->locked[m] += PQntuples(res);
		}
		PG_FINALLY();
		{
			PQclear(res);
		}
		PG_END_TRY();
	}
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(rowcxt);
}

static int
compare_rows(RxLockRowsState *st, TupleTableSlot *a, TupleTableSlot *b)
{
	for (int k = 0; k < st->nkeys; k++)
	{
		bool		null1,
					null2;
		Datum		d1 = slot_getattr(a, st->key_cols[k], &null1);
		Datum		d2 = slot_getattr(b, st->key_cols[k], &null2);
		int			c = ApplySortComparator(d1, null1, d2, null2, &st->keys[k]);

		if (c != 0)
			return c;
	}
	return 0;
}

/*
 * The first take rows over every member, in ORDER BY order (each member's
 * rows come sorted) or member order, into st->out; how many each member
 * gave, in taken.
 */
static void
merge(RxLockRowsState *st, Tuplestorestate **stores, int64 take, uint64 *taken)
{
	TupleDesc	desc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	TupleTableSlot **heads = palloc0(sizeof(TupleTableSlot *) * st->nmembers);

	for (int m = 0; m < st->nmembers; m++)
		if (stores[m] != NULL)
		{
			heads[m] = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
			if (!tuplestore_gettupleslot(stores[m], true, false, heads[m]))
				ExecClearTuple(heads[m]);
		}
	for (int64 n = 0; n < take; n++)
	{
		int			best = -1;

		for (int m = 0; m < st->nmembers; m++)
			if (heads[m] != NULL && !TTS_EMPTY(heads[m]) &&
				(best < 0 || compare_rows(st, heads[m], heads[best]) < 0))
				best = m;
		if (best < 0)
			break;
		tuplestore_puttupleslot(st->out, heads[best]);
		taken[best]++;
		if (!tuplestore_gettupleslot(stores[best], true, false, heads[best]))
			ExecClearTuple(heads[best]);
	}
	for (int m = 0; m < st->nmembers; m++)
		if (heads[m] != NULL)
			ExecDropSingleTupleTableSlot(heads[m]);
}

static void
run(RxLockRowsState *st)
{
	int			self = rx_self_member_index();
	bool	   *targets = palloc0(sizeof(bool) * st->nmembers);
	PGconn	  **conns = palloc0(sizeof(PGconn *) * st->nmembers);
	Tuplestorestate **stores = palloc0(sizeof(Tuplestorestate *) * st->nmembers);
	uint64	   *taken = palloc0(sizeof(uint64) * st->nmembers);
	int			ntargets = 0;
	int64		take = eval_limit(st, st->count);
	bool		savepoints;
	RxForward  *fw;

	if (st->nmembers == 0 || self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of an rdma_exchange cluster")));
	if (st->where == ON_FIRST_MEMBER)
		targets[0] = true;
	else if (st->where == ON_OWNER)
		targets[owner_member(st)] = true;
	else
		memset(targets, true, sizeof(bool) * st->nmembers);
	for (int m = 0; m < st->nmembers; m++)
		ntargets += targets[m];

	/* LIMIT count + offset, per member and in all */
	if (take >= 0)
	{
		int64		offset = eval_limit(st, st->offset);

		take += Max(offset, 0);
	}
	savepoints = take >= 0 && ntargets > 1;

	st->out = tuplestore_begin_heap(true, false, work_mem);
	fw = rx_forward_prepare(st->sql, st->params,
							st->css.ss.ps.state->es_param_list_info);
	/* the connections first: in this transaction's level, not the part's */
	for (int m = 0; m < st->nmembers; m++)
	{
		if (targets[m] && m != self)
			conns[m] = rx_xact_lock_connection(&st->members[m]);
		if (targets[m])
			stores[m] = savepoints ? tuplestore_begin_heap(false, false, work_mem) : st->out;
	}

	for (int m = 0; m < st->nmembers; m++)
	{
		CHECK_FOR_INTERRUPTS();
		if (!targets[m])
			continue;
		if (m == self)
			run_local(st, stores[m], savepoints);
		else
			run_remote(st, m, conns[m], fw, stores[m], savepoints);
	}
	if (!savepoints)
		return;

	merge(st, stores, take, taken);
	for (int m = 0; m < st->nmembers; m++)
	{
		if (!targets[m])
			continue;
		st->locked[m] = taken[m];
		if (m == self)
			end_local(st, taken[m] > 0);
		else
			rx_exec_command(conns[m], st->members[m].name,
							taken[m] > 0 ? "RELEASE SAVEPOINT " LOCK_SAVEPOINT :
							"ROLLBACK TO SAVEPOINT " LOCK_SAVEPOINT
							"; RELEASE SAVEPOINT " LOCK_SAVEPOINT);
		tuplestore_end(stores[m]);
	}
}

static TupleTableSlot *
lock_rows_next(ScanState *node)
{
	RxLockRowsState *st = (RxLockRowsState *) node;
	TupleTableSlot *slot = st->row;

	if (!st->done)
	{
		run(st);
		st->done = true;
	}
	if (!tuplestore_gettupleslot(st->out, true, false, slot))
		ExecClearTuple(slot);
	return slot;
}

static bool
lock_rows_recheck(ScanState *node, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
lock_rows_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, lock_rows_next, lock_rows_recheck);
}

static void
lock_rows_end(CustomScanState *node)
{
	RxLockRowsState *st = (RxLockRowsState *) node;

	if (st->out != NULL)
		tuplestore_end(st->out);
	st->out = NULL;
}

/* the rows are locked once; a rescan (a rewound cursor) reads them again */
static void
lock_rows_rescan(CustomScanState *node)
{
	RxLockRowsState *st = (RxLockRowsState *) node;

	if (st->out != NULL)
		tuplestore_rescan(st->out);
	ExecScanReScan(&node->ss);
}

static void
lock_rows_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	RxLockRowsState *st = (RxLockRowsState *) node;

	ExplainPropertyText("Locks Rows On",
						st->where == ON_OWNER ? "the owner of the key" :
						st->where == ON_FIRST_MEMBER ? "the first member" :
						"every member", es);
	if (es->verbose)
	{
		StringInfoData sql;
		bool		space = false;

		/* deparsed SQL is indented over lines: one line here */
		initStringInfo(&sql);
		for (const char *c = st->sql; *c; c++)
		{
			if (isspace((unsigned char) *c))
				space = sql.len > 0;
			else
			{
				if (space)
					appendStringInfoChar(&sql, ' ');
				appendStringInfoChar(&sql, *c);
				space = false;
			}
		}
		ExplainPropertyText("Member Query", sql.data, es);
	}
	if (es->analyze && st->done)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		for (int m = 0; m < st->nmembers; m++)
			appendStringInfo(&buf, "%s%s=" UINT64_FORMAT, m > 0 ? " " : "",
							 st->members[m].name, st->locked[m]);
		ExplainPropertyText("Rows Locked per Member", buf.data, es);
	}
}

void
rx_row_locks_init(void)
{
	RegisterCustomScanMethods(&lock_rows_plan_methods);
}
