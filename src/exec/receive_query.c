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
 * scans and joins of co-located or replicated rows, partial aggregates)
 * and no parallel workers on the members,
 * no parameters set by the plan above (no InitPlan values, no rescans
 * with new values), and at most rdma_exchange.small_gather_rows rows
 * expected from all members together: the planner's estimate, or the
 * LIMIT above the gather times the members.  Each member's part is
 * bounded by that LIMIT (a Limit node over the fragment).  The rows are
 * read whole into a store per member; receive.c returns them in member
 * order, or merges them when the gather is ordered.  The query's other
 * such gathers that need nothing from it go out in the same round trip
 * (send_siblings()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
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

/*
 * Does the plan contain an exchange (or any other node of ours), or a
 * Gather of the members' own parallel workers (planner/local_gather.c)?
 * A share worth workers is worth an exchange's fixed price, and by query
 * this member's part would run here, in this backend, without them.
 */
static bool
needs_exchange(Plan *plan)
{
	ListCell   *lc;

	if (IsA(plan, CustomScan) || IsA(plan, Gather) || IsA(plan, GatherMerge))
		return true;
	foreach(lc, rx_plan_children(plan))
		if (needs_exchange(lfirst(lc)))
			return true;
	return false;
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

	if (rx_small_gather_rows <= 0 || r->info.kind != RX_RECEIVE_GATHER ||
		!rx_is_shuffle(shuffle) || nmembers == 0)
		return false;
	rx_shuffle_info((CustomScan *) shuffle, &si);
	fragment = outerPlan(shuffle);
	if (si.route != RX_ROUTE_COORDINATOR || needs_exchange(fragment))
		return false;

	if (rx_takes_values(shuffle, r->css.ss.ps.state->es_plannedstmt->paramExecTypes))
		return false;

	rows = fragment->plan_rows;
	if (si.tuples_needed >= 0)
		rows = Min(rows, (double) si.tuples_needed *
				   (si.single_sender >= 0 ? 1 : nmembers));
	return rows <= rx_small_gather_rows;
}

/* the fragment, bounded by the LIMIT above the gather */
Plan *
rx_receive_query_fragment(Plan *fragment, int tuples_needed)
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

static bool
use_snapshot_walker(PlanState *ps, void *context)
{
	Snapshot	snap = (Snapshot) context;
	IndexScanDesc index_scan = NULL;

	if (ps == NULL)
		return false;
	switch (nodeTag(ps))
	{
		case T_SeqScanState:
		case T_SampleScanState:
		case T_BitmapHeapScanState:
		case T_TidRangeScanState:
			if (((ScanState *) ps)->ss_currentScanDesc != NULL)
				((ScanState *) ps)->ss_currentScanDesc->rs_snapshot = snap;
			break;
		case T_IndexScanState:
			index_scan = ((IndexScanState *) ps)->iss_ScanDesc;
			break;
		case T_IndexOnlyScanState:
			index_scan = ((IndexOnlyScanState *) ps)->ioss_ScanDesc;
			break;
		case T_BitmapIndexScanState:
			index_scan = ((BitmapIndexScanState *) ps)->biss_ScanDesc;
			break;
		default:
			break;
	}
	if (index_scan != NULL)
		index_scan->xs_snapshot = snap;
	return planstate_tree_walker(ps, use_snapshot_walker, context);
}

/*
 * Make the plan below ps read with snap.  Scans open their table and
 * index scans when they first run, with estate->es_snapshot, which the
 * caller sets; but PostgreSQL 15 opens a bitmap scan's heap and index
 * scans when the plan is initialized, with the statement's snapshot, and
 * a scan run again (a rescan, a round of gathers run again the usual
 * way) keeps the snapshot it opened with, which its run unregistered.
 * Before they read anything, they take snap too.
 */
void
rx_planstate_use_snapshot(PlanState *ps, Snapshot snap)
{
	EState	   *estate = ps->state;

	estate->es_snapshot = snap;
	(void) use_snapshot_walker(ps, (void *) snap);
}

/*
 * This member's part, in this backend, with this member's share of the
 * cluster snapshot (NIL: the statement's own), into store.
 */
uint64
rx_receive_query_here(RxReceiveState *r, List *snapshots, int self,
					  const char *name, int tuples_needed, Tuplestorestate *store)
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
		rx_planstate_use_snapshot(fragment, snap);
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
 * Send the fragment to every other member that sends; the connections
 * wait in r->query_conns for query_collect().
 */
static void
query_send(RxReceiveState *r)
{
	EState	   *estate = r->css.ss.ps.state;
	Plan	   *shuffle = outerPlan(r->css.ss.ps.plan);
	int			natts = r->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts;
	RxShuffleInfo si;
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	char	   *message;

	if (nmembers == 0 || self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of an rdma_exchange cluster")));
	rx_shuffle_info((CustomScan *) shuffle, &si);
	if (r->query_conns == NULL)
	{
		r->query_conns = palloc0(sizeof(PGconn *) * RX_MAX_MEMBERS);
		r->query_in_xact = palloc0(sizeof(bool) * RX_MAX_MEMBERS);
	}
	message = rx_direct_message(rx_receive_query_fragment(outerPlan(shuffle),
														  si.tuples_needed),
								estate,
								rx_consistent_reads ? rx_cluster_snapshot(estate) : NIL,
								NULL, NIL);

	/*
	 * After this transaction wrote, a member's part runs in its session of
	 * the transaction there (it reads its own writes), as a fragment does.
	 */
	for (int m = 0; m < nmembers; m++)
	{
		if (m == self || (si.single_sender >= 0 && m != si.single_sender))
			continue;
		r->query_conns[m] = rx_direct_conn(&members[m], estate, &r->query_in_xact[m]);
		rx_direct_send(r->query_conns[m], members[m].name, !r->query_in_xact[m],
					   message, natts);
	}
	r->query_sent = true;
}

/* done with the connections of a send; pending: results left unread */
static void
query_release(RxReceiveState *r, bool pending)
{
	for (int m = 0; r->query_conns != NULL && m < RX_MAX_MEMBERS; m++)
	{
		PGconn	   *conn = r->query_conns[m];

		if (conn == NULL)
			continue;
		if (r->query_in_xact[m])
			rx_xact_fragment_done(conn);
		else if (pending)
			rx_pool_put_pending(conn);
		else
			rx_pool_put(conn, true);
		r->query_conns[m] = NULL;
	}
	r->query_sent = false;
}

/*
 * Is it harmless to run the plan when its rows may not be needed (a
 * sibling gather sent early, a nested loop's outer rows read ahead by a
 * LOOKAHEAD)?  Our own nodes are if what they run is: gathers, lookups.
 */
bool
rx_plan_speculation_safe(Plan *plan)
{
	List	   *exprs = NIL;
	ListCell   *lc;

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_Sort:
		case T_IncrementalSort:
		case T_Material:
		case T_Hash:
		case T_Agg:
		case T_Group:
		case T_Unique:
			break;
		case T_IndexScan:
			exprs = list_make2(((IndexScan *) plan)->indexqual,
							   ((IndexScan *) plan)->indexorderby);
			break;
		case T_IndexOnlyScan:
			exprs = list_make2(((IndexOnlyScan *) plan)->indexqual,
							   ((IndexOnlyScan *) plan)->indexorderby);
			break;
		case T_BitmapHeapScan:
			exprs = list_make1(((BitmapHeapScan *) plan)->bitmapqualorig);
			break;
		case T_BitmapIndexScan:
			exprs = list_make1(((BitmapIndexScan *) plan)->indexqual);
			break;
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
			exprs = list_make1(((Join *) plan)->joinqual);
			if (IsA(plan, HashJoin))
				exprs = lappend(exprs, ((HashJoin *) plan)->hashclauses);
			if (IsA(plan, MergeJoin))
				exprs = lappend(exprs, ((MergeJoin *) plan)->mergeclauses);
			break;
		case T_Limit:
			exprs = list_make2(((Limit *) plan)->limitOffset,
							   ((Limit *) plan)->limitCount);
			break;
		case T_Result:
			exprs = list_make1(((Result *) plan)->resconstantqual);
			break;
		case T_Append:
		case T_SubqueryScan:
			break;
		case T_CustomScan:
			if (!rx_is_receive(plan) && !rx_is_shuffle(plan) && !rx_is_lookahead(plan))
				return false;
			exprs = list_make1(((CustomScan *) plan)->custom_exprs);
			break;
		default:
			return false;
	}
	exprs = lappend(lappend(exprs, plan->targetlist), plan->qual);
	if (contain_volatile_functions((Node *) exprs))
		return false;
	foreach(lc, rx_plan_children(plan))
		if (!rx_plan_speculation_safe(lfirst(lc)))
			return false;
	return true;
}

/* gathers by query of the plan that have not run, into *context */
static bool
unsent_gathers(PlanState *ps, void *context)
{
	if (ps == NULL)
		return false;
	if (rx_is_receive(ps->plan))
	{
		RxReceiveState *r = (RxReceiveState *) ps;

		/* a keyed gather reads by key; its gather may never run */
		if (r->by_query && !r->query_sent && r->query_rows == NULL &&
			r->query_prefetched == NULL && !rx_receive_keyed_active(r))
			*(List **) context = lappend(*(List **) context, r);
	}
	return planstate_tree_walker(ps, unsent_gathers, context);
}

/*
 * The other gathers by query of the query's InitPlans and SubPlans that
 * take no values from the plan above them (min and max are two such),
 * which send_siblings() (or a round, receive_round.c) sends with r, so
 * that every member runs them in the same round trip.  Their rows are
 * read, and a member's error raised, when they run; one that never runs
 * is stopped with its query.  Only plans
 * without volatile functions go early: running one whose rows are not
 * needed must change nothing.  Not after the transaction wrote: its one
 * session on each member can run one statement at a time.
 */
List *
rx_receive_query_siblings(RxReceiveState *r)
{
	EState	   *estate = r->css.ss.ps.state;
	List	   *gathers = NIL;
	List	   *siblings = NIL;
	ListCell   *lc;

	if (rx_xact_changed_before(estate->es_snapshot->curcid))
		return NIL;
	foreach(lc, estate->es_subplanstates)
		(void) unsent_gathers(lfirst(lc), &gathers);
	foreach(lc, gathers)
	{
		RxReceiveState *g = lfirst(lc);
		Plan	   *shuffle = outerPlan(g->css.ss.ps.plan);

		if (g != r && !rx_takes_values(shuffle, estate->es_plannedstmt->paramExecTypes) &&
			rx_plan_speculation_safe(outerPlan(shuffle)))
			siblings = lappend(siblings, g);
	}
	return siblings;
}

static void
send_siblings(RxReceiveState *r)
{
	ListCell   *lc;

	foreach(lc, rx_receive_query_siblings(r))
		query_send(lfirst(lc));
}

/*
 * This member's part here, then every other member's rows, into
 * r->query_rows[member].
 */
static void
query_collect(RxReceiveState *r)
{
	EState	   *estate = r->css.ss.ps.state;
	Plan	   *shuffle = outerPlan(r->css.ss.ps.plan);
	TupleDesc	desc = r->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	RxShuffleInfo si;
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	RxTextRows *text_rows;
	TupleTableSlot *slot;
	MemoryContext row_cxt;
	instr_time	start,
				elapsed;
	char	   *what;

	rx_shuffle_info((CustomScan *) shuffle, &si);
	r->query_members = nmembers;
	r->query_source = 0;
	r->query_rows = palloc0(sizeof(Tuplestorestate *) * nmembers);
	if (r->query_counts == NULL)
		r->query_counts = palloc0(sizeof(uint64) * nmembers);
	for (int m = 0; m < nmembers; m++)
		r->query_rows[m] = tuplestore_begin_heap(false, false, work_mem);

	if (si.single_sender < 0 || si.single_sender == self)
		r->query_counts[self] +=
			rx_receive_query_here(r, rx_consistent_reads ? rx_cluster_snapshot(estate) : NIL,
								  self, members[self].name, si.tuples_needed,
								  r->query_rows[self]);

	/* read already, with another gather's round (receive_round.c) */
	if (r->query_prefetched != NULL)
	{
		for (int m = 0; m < nmembers; m++)
			if (m != self)
			{
				tuplestore_end(r->query_rows[m]);
				r->query_rows[m] = r->query_prefetched[m];
				r->query_counts[m] += tuplestore_tuple_count(r->query_rows[m]);
			}
		r->query_prefetched = NULL;
		return;
	}

	/* rows are converted in a short-lived context, then copied in */
	text_rows = rx_text_rows(desc);
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange gathered row",
									ALLOCSET_SMALL_SIZES);
	what = psprintf("fragment of exchange %d failed", r->info.exchange_id);
	INSTR_TIME_SET_CURRENT(start);
	for (int m = 0; m < nmembers; m++)
	{
		PGconn	   *conn = r->query_conns[m];

		if (conn == NULL)
			continue;
		for (;;)
		{
			MemoryContext old = MemoryContextSwitchTo(row_cxt);
			char	   *report = NULL;
			bool		found = rx_direct_next_row(conn, members[m].name,
												   text_rows, slot, &report, what, NULL);

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
	}
	query_release(r, false);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	r->data_wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(row_cxt);
}

/*
 * Run the fragment on every member that sends and read all their rows
 * into r->query_rows[member]; the query's other gathers by query go out
 * with it (send_siblings()).
 */
void
rx_receive_query_run(RxReceiveState *r)
{
	if (!r->query_sent && r->query_prefetched == NULL)
	{
		if (rx_receive_query_round(r))
			return;
		query_send(r);
		send_siblings(r);
	}
	query_collect(r);
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
	/* sent early and never read (receive.c ends or rescans it) */
	if (r->query_sent)
		query_release(r, true);
	if (r->query_prefetched != NULL)
	{
		for (int m = 0; m < RX_MAX_MEMBERS; m++)
			if (r->query_prefetched[m] != NULL)
				tuplestore_end(r->query_prefetched[m]);
		r->query_prefetched = NULL;
	}
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
