/*-------------------------------------------------------------------------
 *
 * receive_query.c
 *	  A gather of a small result without an exchange: every member runs
 *	  the fragment as a query and sends its rows back on its connection.
 *
 * An exchange costs every query a fixed price before its first row: the
 * members' ports and streams, a transport message and its credit per
 * member, and the end-of-stream handshake; a millisecond or two on these
 * machines.  For a gather that brings back only a few rows (min and max
 * over an index, the first rows of ORDER BY ... LIMIT, a short range of
 * keys, an IN list over several members, an aggregate over a selective
 * index) that price is most of the query.  Such a gather sends the
 * fragment below its SHUFFLE to every member as a direct message
 * (dispatch.c, the same message a directly dispatched query sends) over
 * the pooled connection there; rdma_exchange.execute_direct() (fragment.c)
 * runs it and returns its rows as text in the same round trip.  This
 * member's part runs here, in this backend, meanwhile.  Every part reads
 * with its member's share of the query's cluster snapshot, as a shipped
 * fragment would, so the result is one consistent state of the cluster.
 *
 * Which gathers: an outer fragment with no exchange of its own (one step,
 * scans and joins of co-located or replicated rows, partial aggregates),
 * no parameters set by the plan above (no InitPlan values, no rescans
 * with new values), and at most rdma_exchange.small_gather_rows rows
 * expected from all members together: the planner's estimate, or the
 * LIMIT above the gather times the members.  Each member's part is
 * bounded by that LIMIT (a Limit node over the fragment).  The rows are
 * read whole into a store per member; receive.c returns them in member
 * order, or merges them when the gather is ordered.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_pool.h"
#include "cluster/dispatch.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "exec/direct.h"
#include "exec/exchange_state.h"
#include "planner/planner.h"
#include "rdma_exchange.h"

int			rx_small_gather_rows = 1000;

/* does the plan contain an exchange (or any other node of ours)? */
static bool
has_exchange(Plan *plan)
{
	List	   *children = NIL;
	ListCell   *lc;

	if (plan == NULL)
		return false;
	switch (nodeTag(plan))
	{
		case T_CustomScan:
			return true;
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_SubqueryScan:
			return has_exchange(((SubqueryScan *) plan)->subplan);
		default:
			break;
	}
	foreach(lc, children)
		if (has_exchange(lfirst(lc)))
			return true;
	return has_exchange(plan->lefttree) || has_exchange(plan->righttree);
}

/*
 * Whether this gather reads its rows by query: decided from the plan
 * alone, so that EXPLAIN shows what a run does.
 */
bool
rx_receive_by_query(RxReceiveState *r)
{
	Plan	   *shuffle = outerPlan(r->css.ss.ps.plan);
	Plan	   *fragment;
	RxShuffleInfo si;
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	double		rows;
	int			paramid = -1;

	if (rx_small_gather_rows <= 0 || r->info.kind != RX_RECEIVE_GATHER ||
		!rx_is_shuffle(shuffle) || nmembers == 0)
		return false;
	rx_shuffle_info((CustomScan *) shuffle, &si);
	fragment = outerPlan(shuffle);
	if (si.route != RX_ROUTE_COORDINATOR || has_exchange(fragment))
		return false;

	/* values from the plan above (special rescan signals carry none) */
	while ((paramid = bms_next_member(shuffle->extParam, paramid)) >= 0)
		if (OidIsValid(list_nth_oid(r->css.ss.ps.state->es_plannedstmt->paramExecTypes,
									paramid)))
			return false;

	rows = fragment->plan_rows;
	if (si.tuples_needed >= 0)
		rows = Min(rows, (double) si.tuples_needed *
				   (si.single_sender >= 0 ? 1 : nmembers));
	return rows <= rx_small_gather_rows;
}

/* the fragment, bounded by the LIMIT above the gather */
static Plan *
bounded_fragment(Plan *fragment, int tuples_needed)
{
	Limit	   *limit;

	if (tuples_needed < 0)
		return fragment;
	limit = makeNode(Limit);
	limit->plan.startup_cost = fragment->startup_cost;
	limit->plan.total_cost = fragment->total_cost;
	limit->plan.plan_rows = Min(fragment->plan_rows, tuples_needed);
	limit->plan.plan_width = fragment->plan_width;
	limit->plan.plan_node_id = -1;	/* not in the coordinator's plan */
	limit->plan.targetlist = rx_column_tlist(fragment->targetlist, OUTER_VAR);
	limit->plan.lefttree = fragment;
	limit->limitCount = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
										   Int64GetDatum(tuples_needed), false,
										   FLOAT8PASSBYVAL);
	limit->limitOption = LIMIT_OPTION_COUNT;
	return &limit->plan;
}

/*
 * This member's part, in this backend, with this member's share of the
 * cluster snapshot (NIL: the statement's own), into store.
 */
static uint64
run_here(RxReceiveState *r, List *snapshots, int self, const char *name,
		 int tuples_needed, Tuplestorestate *store)
{
	EState	   *estate = r->css.ss.ps.state;
	PlanState  *fragment = outerPlanState(outerPlanState(r));
	Snapshot	saved = estate->es_snapshot;
	Snapshot	snap = NULL;
	uint64		rows = 0;

	if (snapshots != NIL)
	{
		snap = RegisterSnapshot(rx_cluster_snapshot_restore(strVal(list_nth(snapshots, self)),
															name));
		estate->es_snapshot = snap;
	}
	PG_TRY();
	{
		while (tuples_needed < 0 || rows < (uint64) tuples_needed)
		{
			TupleTableSlot *slot;

			CHECK_FOR_INTERRUPTS();
			slot = ExecProcNode(fragment);
			if (TupIsNull(slot))
				break;
			tuplestore_puttupleslot(store, slot);
			rows++;
		}
	}
	PG_FINALLY();
	{
		estate->es_snapshot = saved;
	}
	PG_END_TRY();
	if (snap != NULL)
		UnregisterSnapshot(snap);
	return rows;
}

/*
 * Run the fragment on every member that sends and read all their rows
 * into r->query_rows[member].
 */
void
rx_receive_query_run(RxReceiveState *r)
{
	EState	   *estate = r->css.ss.ps.state;
	Plan	   *shuffle = outerPlan(r->css.ss.ps.plan);
	TupleDesc	desc = r->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	RxShuffleInfo si;
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	List	   *snapshots;
	char	   *message;
	PGconn	   *conns[RX_MAX_MEMBERS] = {0};
	bool		in_xact[RX_MAX_MEMBERS] = {0};
	bool		xact_wrote;
	RxTextRows *text_rows;
	TupleTableSlot *slot;
	MemoryContext row_cxt;
	instr_time	start,
				elapsed;
	char	   *what;

	if (nmembers == 0 || self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of an rdma_exchange cluster")));
	rx_shuffle_info((CustomScan *) shuffle, &si);
	r->query_members = nmembers;
	r->query_source = 0;
	r->query_rows = palloc0(sizeof(Tuplestorestate *) * nmembers);
	if (r->query_counts == NULL)
		r->query_counts = palloc0(sizeof(uint64) * nmembers);
	for (int m = 0; m < nmembers; m++)
		r->query_rows[m] = tuplestore_begin_heap(false, false, work_mem);

	snapshots = rx_consistent_reads ? rx_cluster_snapshot(estate) : NIL;
	message = rx_direct_message(bounded_fragment(outerPlan(shuffle), si.tuples_needed),
								estate, snapshots);

	/*
	 * After this transaction wrote, a member's part runs in its session of
	 * the transaction there (it reads its own writes), as a fragment does.
	 */
	xact_wrote = rx_xact_changed_before(estate->es_snapshot->curcid);
	for (int m = 0; m < nmembers; m++)
	{
		if (m == self || (si.single_sender >= 0 && m != si.single_sender))
			continue;
		conns[m] = xact_wrote ? rx_xact_fragment_connection(&members[m]) : NULL;
		in_xact[m] = (conns[m] != NULL);
		if (conns[m] == NULL)
			conns[m] = rx_pool_get(&members[m]);
		rx_direct_send(conns[m], members[m].name, !in_xact[m], message, desc->natts);
	}

	if (si.single_sender < 0 || si.single_sender == self)
		r->query_counts[self] = run_here(r, snapshots, self, members[self].name,
										 si.tuples_needed, r->query_rows[self]);

	/* rows are converted in a short-lived context, then copied in */
	text_rows = rx_text_rows(desc);
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange gathered row",
									ALLOCSET_SMALL_SIZES);
	what = psprintf("fragment of exchange %d failed", r->info.exchange_id);
	INSTR_TIME_SET_CURRENT(start);
	for (int m = 0; m < nmembers; m++)
	{
		if (conns[m] == NULL)
			continue;
		for (;;)
		{
			MemoryContext old = MemoryContextSwitchTo(row_cxt);
			char	   *report = NULL;
			bool		found = rx_direct_next_row(conns[m], members[m].name,
												   text_rows, slot, &report, what);

			MemoryContextSwitchTo(old);
			/* EXPLAIN ANALYZE: the member's counters into the fragment */
			if (report != NULL)
				rx_merge_direct_report(outerPlanState(r), m, report);
			if (!found)
				break;
			tuplestore_puttupleslot(r->query_rows[m], slot);
			MemoryContextReset(row_cxt);
			r->query_counts[m]++;
		}
		if (in_xact[m])
			rx_xact_fragment_done(conns[m]);
		else
			rx_pool_put(conns[m], true);
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	r->data_wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(row_cxt);
}

/* the next row of a run, member after member, into r->recv_slot; or NULL */
TupleTableSlot *
rx_receive_query_next(RxReceiveState *r)
{
	while (r->query_source < r->query_members)
	{
		if (tuplestore_gettupleslot(r->query_rows[r->query_source], true, false,
									r->recv_slot))
			return r->recv_slot;
		r->query_source++;
	}
	return NULL;
}

/*
 * Forget a run's rows; with rescan, also rewind this member's part for
 * the next run.
 */
void
rx_receive_query_reset(RxReceiveState *r, bool rescan)
{
	if (r->query_rows == NULL)
		return;
	for (int m = 0; m < r->query_members; m++)
		tuplestore_end(r->query_rows[m]);
	r->query_members = 0;
	r->query_rows = NULL;
	if (rescan)
		ExecReScan(outerPlanState(outerPlanState(r)));
}

void
rx_receive_query_init(void)
{
	DefineCustomIntVariable("rdma_exchange.small_gather_rows",
							"A gather expecting at most this many rows from all members runs its fragment on each member as a query, without an exchange.",
							"0 sends every gather through the transport.",
							&rx_small_gather_rows, 1000, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/* EXPLAIN: the path, and with ANALYZE the rows of each member */
void
rx_receive_query_explain(RxReceiveState *r, ExplainState *es)
{
	ExplainPropertyText("Transport",
						psprintf("none: each member runs the fragment as a query (at most %d rows expected)",
								 rx_small_gather_rows), es);
	if (es->analyze && r->query_counts != NULL)
	{
		StringInfoData s;

		initStringInfo(&s);
		for (int m = 0; m < r->query_members; m++)
			appendStringInfo(&s, "%s" UINT64_FORMAT, m > 0 ? ", " : "",
							 r->query_counts[m]);
		ExplainPropertyText("Rows per Member", s.data, es);
	}
}
