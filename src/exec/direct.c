/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  The DIRECT plan node: run a query on the one member that can answer
 *	  it (planner/direct.c says which queries).
 *
 * Below it is PostgreSQL's local plan for the query.  At executor start
 * the node works out the owner of the key (a constant, or a bound
 * parameter's value: generic plans and PL/pgSQL choose at execution):
 *
 *	- this member: the local plan runs here, in this backend, and its rows
 *	  are returned as they come; the query costs what it costs on one
 *	  server, plus a read barrier (below);
 *	- another member: the local plan goes there whole, signed as fragments
 *	  are (dispatch.c builds the message, with the statement's settings,
 *	  timestamps and bound values), over one libpq connection; the member
 *	  runs it with rdma_exchange.execute_direct() (fragment.c) and its rows
 *	  come back in the same round trip.  Over this transaction's connection
 *	  to that member after the transaction changed rows there (it reads its
 *	  own writes; all rows are read at once then, since the transaction's
 *	  next statement may need that connection), otherwise over the
 *	  session's pool.
 *
 * Consistency: at READ COMMITTED the query reads the member with a
 * snapshot taken after its read barrier (cluster_snapshot.c), so it sees
 * every distributed transaction that another member already shows as
 * committed.  At REPEATABLE READ and above it reads with the member's part
 * of the transaction's cluster snapshot, like every other query of the
 * transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_pool.h"
#include "cluster/dispatch.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "exec/direct.h"
#include "planner/planner.h"
#include "rdma_exchange.h"

#define DIRECT_NAME "DIRECT"

bool		rx_direct_dispatch = true;
bool		rx_direct_sql = true;

typedef struct DirectState
{
	CustomScanState css;
	List	   *key_relids;
	List	   *keys;			/* ExprStates */
	int			nmembers;
	RxMember   *members;
	int			owner;			/* -1: not known (EXPLAIN of a generic plan) */
	bool		here;			/* the owner is this member */
	PlanState  *child;

	/* here: the snapshot the local plan reads with */
	Snapshot	saved_snapshot;
	Snapshot	own_snapshot;

	/* elsewhere: the connection and the rows coming back */
	PGconn	   *conn;
	bool		conn_in_xact;	/* the member's transaction of this one */
	bool		finished;		/* every result read */
	RxTextRows *text_rows;		/* how its text rows become tuples */
	uint64		rows;
	Tuplestorestate *store;		/* all of them, read at once (see next_remote) */
	TupleTableSlot *stored;		/* a row of the store */
} DirectState;

static CustomScanMethods direct_plan_methods;
static CustomExecMethods direct_exec_methods;

/* custom_private: the keys' tables; for a query that goes as SQL, ... */
#define DIRECT_KEY_RELIDS 0
#define DIRECT_SQL 1			/* its text */
#define DIRECT_SQL_KEY 2		/* 1: the constant key is its last parameter */

Plan *
rx_direct_node(Plan *local, List *keys, List *key_relids, int node_id)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *plan = &cscan->scan.plan;

	plan->startup_cost = local->startup_cost;
	plan->total_cost = local->total_cost;
	plan->plan_rows = local->plan_rows;
	plan->plan_width = local->plan_width;
	plan->parallel_safe = false;
	plan->plan_node_id = node_id;
	/* the local plan's columns, passed on as they are */
	cscan->custom_scan_tlist = rx_column_tlist(local->targetlist, OUTER_VAR);
	plan->targetlist = rx_column_tlist(local->targetlist, INDEX_VAR);
	cscan->scan.scanrelid = 0;
	cscan->custom_plans = list_make1(local);
	/* for EXPLAIN VERBOSE: the tlist's OUTER_VARs name the local plan's columns */
	plan->lefttree = local;
	cscan->custom_exprs = keys;
	cscan->custom_private = list_make1(key_relids);
	cscan->methods = &direct_plan_methods;
	return plan;
}

/*
 * A directly dispatched query that goes to the owner of key as SQL
 * (planner/direct_sql.c): no local plan below; tlist, the query's
 * columns.  key_param: the constant key is the query's last parameter.
 */
Plan *
rx_direct_sql_node(List *tlist, Expr *key, Oid key_relid, char *sql,
				   bool key_param)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *plan = &cscan->scan.plan;

	/* what a lookup by an index costs, less than any local plan for it */
	plan->startup_cost = 0;
	plan->total_cost = cpu_tuple_cost;
	plan->plan_rows = 1;
	plan->parallel_safe = false;
	plan->plan_node_id = 0;
	cscan->custom_scan_tlist = rx_column_tlist(tlist, OUTER_VAR);
	plan->targetlist = rx_column_tlist(tlist, INDEX_VAR);
	cscan->scan.scanrelid = 0;
	cscan->custom_exprs = list_make1(key);
	cscan->custom_private = list_make3(list_make1_oid(key_relid),
									   makeString(sql),
									   makeInteger(key_param ? 1 : 0));
	cscan->methods = &direct_plan_methods;
	return plan;
}

/*
 * The DIRECT node of stmt, over a local plan for a key known only at
 * execution, gets the query's text (planner/direct_sql.c): sent instead of
 * the plan when the owner is another member.  Not when the local plan
 * returns more columns than the query (resjunk ones: a member's SQL
 * returns the query's own).
 */
void
rx_direct_add_sql(PlannedStmt *stmt, char *sql)
{
	CustomScan *cscan = (CustomScan *) stmt->planTree;
	ListCell   *lc;

	foreach(lc, ((Plan *) linitial(cscan->custom_plans))->targetlist)
		if (lfirst_node(TargetEntry, lc)->resjunk)
			return;
	cscan->custom_private = lappend(cscan->custom_private, makeString(sql));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(0));
}

static Node *
direct_create_state(CustomScan *cscan)
{
	DirectState *st = palloc0(sizeof(DirectState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &direct_exec_methods;
	st->key_relids = list_nth(cscan->custom_private, DIRECT_KEY_RELIDS);
	return (Node *) st;
}

/* the member owning every key (they agree: planner/direct.c) */
static int
key_owner(DirectState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int			owner = -1;
	ListCell   *a,
			   *b;

	forboth(a, st->keys, b, st->key_relids)
	{
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(lfirst(a), econtext, &isnull);
		int			m = rx_member_of_key(lfirst_oid(b),
										 exprType((Node *) ((ExprState *) lfirst(a))->expr),
										 value, isnull, st->nmembers);

		if (owner >= 0 && m != owner)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the rows of a directly dispatched query are no longer on one member"),
					 errdetail("The cluster's members changed after the query was planned."),
					 errhint("Run the query again.")));
		owner = m;
	}
	return owner;
}

static void
direct_begin(CustomScanState *node, EState *estate, int eflags)
{
	DirectState *st = (DirectState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	bool		explain_only = (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0;
	ListCell   *lc;

	st->nmembers = rx_get_members(&st->members);
	if (st->nmembers == 0 || rx_self_member_index() < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of an rdma_exchange cluster")));
	foreach(lc, cscan->custom_exprs)
		st->keys = lappend(st->keys, ExecInitExpr(lfirst(lc), &node->ss.ps));

	/* EXPLAIN of a generic plan without values: the owner is not known */
	st->owner = explain_only && estate->es_param_list_info == NULL &&
		!IsA(linitial(cscan->custom_exprs), Const) ? -1 : key_owner(st);
	/*
	 * A query that goes as SQL has no local plan: it was planned for
	 * another member, and goes there even if that is now this one (the
	 * members changed since, and this server answers over a connection to
	 * itself).
	 */
	st->here = (st->owner == rx_self_member_index() &&
				cscan->custom_plans != NIL);

	if (st->here && !explain_only && rx_consistent_reads)
	{
		Snapshot	snap;

		if (IsolationUsesXactSnapshot())
			snap = rx_cluster_snapshot_restore(strVal(list_nth(rx_cluster_snapshot(estate),
															   st->owner)),
											   st->members[st->owner].name);
		else
			snap = rx_barrier_snapshot();
		st->own_snapshot = RegisterSnapshot(snap);
		st->saved_snapshot = estate->es_snapshot;
		estate->es_snapshot = st->own_snapshot;
	}

	/* elsewhere, the plan is set up only to be shown */
	if (cscan->custom_plans != NIL &&
		(st->here || explain_only || estate->es_instrument))
	{
		st->child = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
		node->custom_ps = list_make1(st->child);
	}
	if (!st->here)
	{
		TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;

		st->text_rows = rx_text_rows(desc);
		st->stored = ExecAllocTableSlot(&estate->es_tupleTable, desc,
										&TTSOpsMinimalTuple);
	}
}

/*
 * The call that runs the plan on the member, the message its parameter:
 * natts text columns back, and the report column (see rx_execute_direct())
 */
char *
rx_direct_call_sql(int natts)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT * FROM rdma_exchange.execute_direct($1) AS t(");
	for (int i = 0; i < natts; i++)
		appendStringInfo(&sql, "c%d pg_catalog.text, ", i + 1);
	appendStringInfoString(&sql, "report pg_catalog.text)");
	return sql.data;
}

/*
 * Send a direct message over conn: the call of execute_direct() with natts
 * text columns back, in single-row mode.  The call is prepared once per
 * session and column count, so that each query costs the member no parse
 * and plan of it: pooled says whether conn is the pool's (conn_pool.c) or
 * the transaction's session there (remote_xact.c), which keep count.
 */
void
rx_direct_send(PGconn *conn, const char *member, bool pooled,
			   const char *message, int natts)
{
	const char *values[1] = {message};
	char	   *name;

	if (natts >= 64)
	{
		if (!PQsendQueryParams(conn, rx_direct_call_sql(natts), 1, NULL, values,
							   NULL, NULL, 0))
			rx_report_remote_error(ERROR, conn, NULL, member,
								   "could not send a directly dispatched query");
	}
	else
	{
		name = psprintf("rx_direct_%d", natts);
		if (!(pooled ? rx_pool_prepared(conn, natts) : rx_xact_prepared(conn, natts)))
		{
			PGresult   *res;

			if (!PQsendPrepare(conn, name, rx_direct_call_sql(natts), 1, NULL))
				rx_report_remote_error(ERROR, conn, NULL, member,
									   "could not prepare a directly dispatched query");
			while ((res = rx_get_result(conn, member)) != NULL)
			{
				if (PQresultStatus(res) != PGRES_COMMAND_OK)
					rx_report_remote_error(ERROR, conn, res, member,
										   "could not prepare a directly dispatched query");
				PQclear(res);
			}
			if (pooled)
				rx_pool_set_prepared(conn, natts);
			else
				rx_xact_set_prepared(conn, natts);
		}
		if (!PQsendQueryPrepared(conn, name, 1, values, NULL, NULL, 0))
			rx_report_remote_error(ERROR, conn, NULL, member,
								   "could not send a directly dispatched query");
	}
	if (!PQsetSingleRowMode(conn))
		rx_report_remote_error(ERROR, conn, NULL, member,
							   "could not send a directly dispatched query");
}

/*
 * The next row of a direct message's result into slot, converted in
 * CurrentMemoryContext; false after the last (every result read).  The
 * instrumentation report, under EXPLAIN ANALYZE, goes to *report.  An
 * error of the member's says it happened in what.  With set, the message
 * was a batch of lookups (param_sets) and each row starts with the number
 * of its lookup, which goes to *set.
 */
bool
rx_direct_next_row(PGconn *conn, const char *member, RxTextRows *tr,
				   TupleTableSlot *slot, char **report, const char *what,
				   int *set)
{
	int			first = (set != NULL) ? 1 : 0;
	int			natts = first + slot->tts_tupleDescriptor->natts;

	for (;;)
	{
		PGresult   *res = rx_get_result(conn, member);

		if (res == NULL)
			return false;
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			/* the end of the rows; the NULL result follows */
			PQclear(res);
			continue;
		}
		if (PQresultStatus(res) != PGRES_SINGLE_TUPLE || PQnfields(res) != natts + 1)
		{
			PG_TRY();
			{
				rx_report_remote_error(ERROR, conn, res, member, what);
			}
			PG_FINALLY();
			{
				PQclear(res);
			}
			PG_END_TRY();
		}
		if (!PQgetisnull(res, 0, natts))
		{
			if (report != NULL)
				*report = pstrdup(PQgetvalue(res, 0, natts));
			PQclear(res);
			continue;
		}
		if (set != NULL)
			*set = PQgetisnull(res, 0, 0) ? -1 : pg_strtoint32(PQgetvalue(res, 0, 0));
		rx_text_row_store(tr, res, 0, first, slot);
		PQclear(res);
		return true;
	}
}

/*
 * The connection a direct message to member goes over: after this
 * transaction wrote there, the transaction's session there (it reads its
 * own writes; *in_xact), otherwise one of the session's pool
 */
PGconn *
rx_direct_conn(RxMember *member, EState *estate, bool *in_xact)
{
	PGconn	   *conn = rx_xact_changed_before(estate->es_snapshot->curcid)
		? rx_xact_fragment_connection(member) : NULL;

	*in_xact = (conn != NULL);
	return conn != NULL ? conn : rx_pool_get(member);
}

/* done with it, every result read: back to the transaction or the pool */
void
rx_direct_conn_done(PGconn *conn, bool in_xact)
{
	if (in_xact)
		rx_xact_fragment_done(conn);
	else
		rx_pool_put(conn, true);
}

/* send the plan to its member */
static void
send_plan(DirectState *st)
{
	EState	   *estate = st->css.ss.ps.state;
	CustomScan *cscan = (CustomScan *) st->css.ss.ps.plan;
	RxMember   *member = &st->members[st->owner];
	List	   *snapshots = IsolationUsesXactSnapshot() && rx_consistent_reads
		? rx_cluster_snapshot(estate) : NIL;
	char	   *message;

	/*
	 * its text where it has one; not for EXPLAIN ANALYZE of a local plan,
	 * whose counters come back for the plan sent
	 */
	if (list_length(cscan->custom_private) > DIRECT_SQL && st->child == NULL)
		message = rx_direct_sql_message(strVal(list_nth(cscan->custom_private, DIRECT_SQL)),
										estate, snapshots,
										intVal(list_nth(cscan->custom_private, DIRECT_SQL_KEY))
										? linitial(cscan->custom_exprs) : NULL);
	else
		message = rx_direct_message(linitial(cscan->custom_plans), estate,
									snapshots, NULL, NIL);
	st->conn = rx_direct_conn(member, estate, &st->conn_in_xact);
	rx_direct_send(st->conn, member->name, !st->conn_in_xact, message,
				   st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts);
	st->finished = false;
}

/* done with the connection: back to the pool or to the transaction */
static void
release_conn(DirectState *st)
{
	PGresult   *res;

	if (st->conn == NULL)
		return;
	/* what is left of an unread result (a cursor closed early) */
	while (!st->finished &&
		   (res = rx_get_result(st->conn, st->members[st->owner].name)) != NULL)
		PQclear(res);
	rx_direct_conn_done(st->conn, st->conn_in_xact);
	st->conn = NULL;
	st->finished = true;
}

/* the member's next row into slot (the per-tuple context); false at the end */
static bool
read_row(DirectState *st, TupleTableSlot *slot)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	bool		found;
	char	   *report = NULL;

	ResetExprContext(econtext);
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	found = rx_direct_next_row(st->conn, st->members[st->owner].name,
							   st->text_rows, slot, &report,
							   "a directly dispatched query failed", NULL);
	MemoryContextSwitchTo(old);
	/* EXPLAIN ANALYZE: the member's counters into the plan shown */
	if (report != NULL && st->child != NULL)
		rx_merge_direct_report(st->child, st->owner, report);
	if (!found)
	{
		st->finished = true;
		release_conn(st);
		return false;
	}
	st->rows++;
	return true;
}

/* the next row from the member, an empty slot at the end */
static TupleTableSlot *
next_remote(DirectState *st)
{
	TupleTableSlot *slot = st->css.ss.ss_ScanTupleSlot;

	if (st->store == NULL && !st->finished && st->conn == NULL)
	{
		send_plan(st);

		/*
		 * The transaction's own session there may be needed by the next
		 * statement of the transaction while this query's portal waits (a
		 * cursor fetched in batches, then an UPDATE): read every row now
		 * and give the session back, as a gather does (receive.c).
		 */
		if (st->conn_in_xact)
		{
			st->store = tuplestore_begin_heap(true, false, work_mem);
			while (read_row(st, slot))
				tuplestore_puttupleslot(st->store, slot);
		}
	}
	if (st->store != NULL)
	{
		if (!tuplestore_gettupleslot(st->store, true, false, st->stored))
			ExecClearTuple(st->stored);
		return st->stored;
	}
	if (st->finished || !read_row(st, slot))
		ExecClearTuple(slot);
	return slot;
}

static TupleTableSlot *
direct_exec(CustomScanState *node)
{
	DirectState *st = (DirectState *) node;

	CHECK_FOR_INTERRUPTS();
	if (st->here)
		return ExecProcNode(st->child);
	return next_remote(st);
}

static void
direct_end(CustomScanState *node)
{
	DirectState *st = (DirectState *) node;

	if (st->child != NULL)
		ExecEndNode(st->child);
	if (st->own_snapshot != NULL)
	{
		node->ss.ps.state->es_snapshot = st->saved_snapshot;
		UnregisterSnapshot(st->own_snapshot);
		st->own_snapshot = NULL;
	}
	release_conn(st);
	if (st->store != NULL)
		tuplestore_end(st->store);
	st->store = NULL;
}

static void
direct_rescan(CustomScanState *node)
{
	DirectState *st = (DirectState *) node;

	if (st->here)
	{
		ExecReScan(st->child);
		return;
	}
	if (st->store != NULL)
	{
		tuplestore_rescan(st->store);
		return;
	}
	release_conn(st);
	st->finished = false;
	st->rows = 0;
}

static void
direct_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	DirectState *st = (DirectState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	const char *why = IsA(linitial(cscan->custom_exprs), Const)
		? "the owner of the distribution key" :
		"the owner of the distribution key's value, chosen at execution";

	if (st->owner < 0)
		ExplainPropertyText("Runs On", why, es);
	else
		ExplainPropertyText("Runs On",
							psprintf("member %d (%s)%s, %s", st->owner,
									 st->members[st->owner].name,
									 st->here ? ", this one" : "", why), es);
	if (cscan->custom_plans != NIL && list_length(cscan->custom_private) > DIRECT_SQL &&
		!es->analyze)
		ExplainPropertyText("Query Sent To Another Owner",
							strVal(list_nth(cscan->custom_private, DIRECT_SQL)), es);
	else if (cscan->custom_plans == NIL)
		ExplainPropertyText("Query Sent",
							strVal(list_nth(cscan->custom_private, DIRECT_SQL)), es);
	if (es->analyze && !st->here)
		ExplainPropertyUInteger("Rows Received", NULL, st->rows, es);
}

static CustomScanMethods direct_plan_methods = {
	DIRECT_NAME,
	direct_create_state
};

static CustomExecMethods direct_exec_methods = {
	.CustomName = DIRECT_NAME,
	.BeginCustomScan = direct_begin,
	.ExecCustomScan = direct_exec,
	.EndCustomScan = direct_end,
	.ReScanCustomScan = direct_rescan,
	.ExplainCustomScan = direct_explain
};

void
rx_direct_init(void)
{
	RegisterCustomScanMethods(&direct_plan_methods);
	DefineCustomBoolVariable("rdma_exchange.direct_dispatch",
							 "Runs a query that only one member's rows can answer on that member alone.",
							 "When off, such queries run as distributed plans on every member.",
							 &rx_direct_dispatch, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("rdma_exchange.direct_sql",
							 "Sends a lookup by key of one distributed table to its owner as SQL, unplanned here.",
							 "When off, it is planned here and the plan is sent.",
							 &rx_direct_sql, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
}
