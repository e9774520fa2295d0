/*-------------------------------------------------------------------------
 *
 * receive_round.c
 *	  A round of small gathers by query that takes the query's cluster
 *	  snapshot in the same round trip as its fragments.
 *
 * A gather by query (receive_query.c) reads with the query's cluster
 * snapshot (cluster/cluster_snapshot.c), which holders take on every
 * member first: a round trip and four statements per member before the
 * fragments go out, about a quarter of a min/max over three members.
 * Here the first gather of a query sends its fragment and those of its
 * siblings (the other gathers by query that need nothing from it) to each
 * member in one libpq pipeline, without a Sync: the calls run in one
 * transaction there; the first takes the member's read barrier without
 * waiting and a snapshot, the others read with that snapshot.  The
 * coordinator reads every member's answer before it sends any Sync (which
 * ends the member's transaction, its barrier and its snapshot), so every
 * member held its barrier while all of them took their snapshots: the
 * argument of cluster_snapshot.c holds as it is.
 *
 * The members' parts of the snapshot end with the round, so a round is
 * used only where no other gather of the query can need them later: every
 * RECEIVE of the query is one of the round's, and runs once.  A round that
 * did not stand (a committer held some member's barrier, a fragment
 * failed) leaves nothing: the members roll it back, and the gathers run
 * the usual way, with holders, which waits for the commit in member order
 * and raises a fragment's error where it belongs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "tcop/pquery.h"
#include "utils/memutils.h"

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

/* one gather of a round: its rows per member, as they are read */
typedef struct RoundGather
{
	RxReceiveState *g;
	char	   *message;
	Tuplestorestate **rows;		/* per member */
	RxTextRows *text_rows;
	TupleTableSlot *slot;
} RoundGather;

/* a member's EXPLAIN ANALYZE report for one gather, merged if the round stands */
typedef struct RoundReport
{
	RxReceiveState *g;
	int			member;
	char	   *text;
} RoundReport;

typedef struct OnceWalk
{
	PlannedStmt *stmt;
	List	   *plans;			/* the round's RECEIVEs */
	Bitmapset  *subplans_seen;	/* plan_id of InitPlans walked */
	int			found;
	bool		ok;
} OnceWalk;

static void
once_walk(Plan *plan, bool once, OnceWalk *w)
{
	ListCell   *lc;
	bool		children_once;

	if (plan == NULL || !w->ok)
		return;
	if (rx_is_receive(plan))
	{
		if (!once || !list_member_ptr(w->plans, plan))
			w->ok = false;
		w->found++;
		return;					/* its fragment has no RECEIVE (needs_exchange()) */
	}
	/* an InitPlan runs once when its node does (a CTE's too) */
	foreach(lc, plan->initPlan)
	{
		SubPlan    *sp = lfirst_node(SubPlan, lc);

		w->subplans_seen = bms_add_member(w->subplans_seen, sp->plan_id);
		once_walk(list_nth(w->stmt->subplans, sp->plan_id - 1), once, w);
	}
	switch (nodeTag(plan))
	{
		case T_NestLoop:
			/* the outer side once, the inner once per outer row */
			once_walk(outerPlan(plan), once, w);
			once_walk(innerPlan(plan), false, w);
			return;
		case T_Result:
		case T_Limit:
		case T_Sort:
		case T_IncrementalSort:
		case T_Agg:
		case T_Group:
		case T_Unique:
		case T_WindowAgg:
		case T_Material:
		case T_SetOp:
		case T_Append:
		case T_MergeAppend:
		case T_ProjectSet:
		case T_SubqueryScan:
		case T_HashJoin:
		case T_Hash:
		case T_MergeJoin:
			children_once = once;
			break;
		default:
			children_once = false;
			break;
	}
	foreach(lc, rx_plan_children(plan))
		once_walk(lfirst(lc), children_once, w);
}

/*
 * May the round take the query's cluster snapshot for good?  The other
 * members' parts of it end with the round (its Sync), so no gather of the
 * query may need them later: every RECEIVE of the query is one of the
 * round's (gathers) and runs once: not on a nested loop's inner side, not
 * in a SubPlan run per row, not in a cursor that can go back.  Otherwise
 * the usual way is taken.
 */
static bool
round_covers_query(EState *estate, List *gathers)
{
	OnceWalk	w = {0};
	ListCell   *lc;

	/*
	 * A scrollable cursor runs its plan again when it goes back, a WITH
	 * HOLD cursor when its transaction commits (PersistHoldablePortal()).
	 */
	if ((estate->es_top_eflags & (EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK)) ||
		(ActivePortal != NULL &&
		 (ActivePortal->cursorOptions & (CURSOR_OPT_HOLD | CURSOR_OPT_SCROLL))))
		return false;
	w.stmt = estate->es_plannedstmt;
	w.ok = true;
	foreach(lc, gathers)
		w.plans = lappend(w.plans, ((RxReceiveState *) lfirst(lc))->css.ss.ps.plan);
	once_walk(w.stmt->planTree, true, &w);
	foreach(lc, w.stmt->subplans)
		if (!bms_is_member(foreach_current_index(lc) + 1, w.subplans_seen))
			once_walk(lfirst(lc), false, &w);
	return w.ok && w.found == list_length(gathers);
}

/* gather g's part of the round: its message (snapshots) and row stores */
static void
round_gather(RoundGather *rg, RxReceiveState *g, int nmembers, List *snapshots)
{
	Plan	   *shuffle = outerPlan(g->css.ss.ps.plan);
	TupleDesc	desc = g->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	RxShuffleInfo si;

	rx_shuffle_info((CustomScan *) shuffle, &si);
	rg->g = g;
	rg->message = rx_direct_message(rx_receive_query_fragment(outerPlan(shuffle),
															  si.tuples_needed),
									g->css.ss.ps.state, snapshots, NULL, NIL);
	rg->rows = palloc0(sizeof(Tuplestorestate *) * RX_MAX_MEMBERS);
	for (int m = 0; m < nmembers; m++)
		rg->rows[m] = tuplestore_begin_heap(false, false, work_mem);
	rg->text_rows = rx_text_rows(desc);
	rg->slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
}

/*
 * What member m's connection answers, in order: each gather's call,
 * after its statement's preparation when the session has not prepared it
 * yet (items: the gather, or ROUND_PREPARE(gather))
 */
#define ROUND_PREPARE(k) (-1 - (k))

/*
 * Send the round to a member in a pipeline without a Sync: the calls run
 * in one transaction there, which keeps the member's barrier and
 * snapshot (taken by the first) until rx_receive_query_round() sends the
 * Sync.
 * Returns the number of answers to expect, in items; -1 if the sending
 * failed.
 */
static int
round_send(RoundGather *rgs, int ngathers, PGconn *conn, int *items)
{
	int			n = 0;
	uint64		prepared = 0;	/* column counts prepared in this round */

	if (!PQenterPipelineMode(conn))
		return -1;
	for (int k = 0; k < ngathers; k++)
	{
		int			natts = rgs[k].slot->tts_tupleDescriptor->natts;
		const char *values[1] = {rgs[k].message};
		char	   *name = psprintf("rx_direct_%d", natts);

		/*
		 * Prepared once per session, as rx_direct_send() does, but queued
		 * in the pipeline instead of waited for
		 */
		if (natts >= 64)
		{
			if (!PQsendQueryParams(conn, rx_direct_call_sql(natts), 1, NULL,
								   values, NULL, NULL, 0))
				return -1;
		}
		else
		{
			if (!rx_pool_prepared(conn, natts) &&
				(prepared & (UINT64CONST(1) << natts)) == 0)
			{
				if (!PQsendPrepare(conn, name, rx_direct_call_sql(natts), 1, NULL))
					return -1;
				prepared |= UINT64CONST(1) << natts;
				items[n++] = ROUND_PREPARE(k);
			}
			if (!PQsendQueryPrepared(conn, name, 1, values, NULL, NULL, 0))
				return -1;
		}
		items[n++] = k;
	}
	if (!PQsendFlushRequest(conn))
		return -1;
	return n;
}

/*
 * Every answer of member m to the round (items: round_send()'s): each
 * gather's rows into its store, EXPLAIN ANALYZE's reports to *reports.  False if
 * something failed there (a committer held the barrier, a fragment
 * failed); everything is read either way.
 */
static bool
round_read(RoundGather *rgs, const int *items, int nitems, int m, PGconn *conn,
		   const char *member, MemoryContext row_cxt, List **reports)
{
	bool		ok = true;
	PGresult   *res;

	for (int i = 0; i < nitems; i++)
		while ((res = rx_get_result(conn, member)) != NULL)
		{
			ExecStatusType status = PQresultStatus(res);
			int			item = items[i];

			/*
			 * Rows one at a time are the first call's when the connection's
			 * last query ran in single-row mode (rx_direct_send()): libpq
			 * keeps the mode into a new pipeline's first command.
			 */
			if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK &&
				status != PGRES_SINGLE_TUPLE)
				ok = false;		/* an error, or aborted after one */
			else if (item < 0)	/* ROUND_PREPARE(k): k = ROUND_PREPARE(item) */
				rx_pool_set_prepared(conn, rgs[ROUND_PREPARE(item)].slot->tts_tupleDescriptor->natts);
			else if (ok)
			{
				RoundGather *rg = &rgs[item];
				int			natts = rg->slot->tts_tupleDescriptor->natts;

				if (PQnfields(res) != natts + 1)
					ok = false;
				for (int row = 0; ok && row < PQntuples(res); row++)
				{
					MemoryContext old;

					if (!PQgetisnull(res, row, natts))
					{
						RoundReport *report = palloc(sizeof(RoundReport));

						report->g = rg->g;
						report->member = m;
						report->text = pstrdup(PQgetvalue(res, row, natts));
						*reports = lappend(*reports, report);
						continue;
					}
					old = MemoryContextSwitchTo(row_cxt);
					rx_text_row_store(rg->text_rows, res, row, 0, rg->slot);
					MemoryContextSwitchTo(old);
					tuplestore_puttupleslot(rg->rows[m], rg->slot);
					MemoryContextReset(row_cxt);
				}
			}
			PQclear(res);
		}
	return ok;
}

/*
 * Run r, and its siblings (rx_receive_query_siblings()), as one round
 * that takes the query's cluster snapshot on every member in the same
 * round trip (cluster_snapshot.c): to each member, in one pipeline, each
 * gather's call, the first taking the member's barrier and snapshot, the
 * others reading with it.  This member's part of r runs here meanwhile; every
 * answer is read now, r's rows into r->query_rows, each sibling's into
 * its query_prefetched (its part here runs when it runs).  Only then do
 * the members' barriers go (the Syncs), so that every member held its
 * barrier while all took their snapshots, as with holders.
 *
 * False if the round cannot be used (no cluster snapshot to take, the
 * transaction wrote, a single sender, a volatile function, a gather of
 * the query outside the round or run more than once, a committer at work
 * here) or did not stand (a committer held a member's barrier, a
 * fragment failed there): nothing of it is kept, the members roll it
 * back, and the caller runs the gathers the usual way, which raises a
 * fragment's error where it belongs.
 */
bool
rx_receive_query_round(RxReceiveState *r)
{
	EState	   *estate = r->css.ss.ps.state;
	Plan	   *shuffle = outerPlan(r->css.ss.ps.plan);
	RxShuffleInfo si;
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	PGconn	   *conns[RX_MAX_MEMBERS] = {0};
	int		   *items[RX_MAX_MEMBERS];
	int			nitems[RX_MAX_MEMBERS];
	List	   *gathers;
	List	   *reports = NIL;
	List	   *first;
	List	   *later;
	const char *here;
	RoundGather *rgs;
	int			ngathers;
	MemoryContext row_cxt;
	instr_time	start,
				elapsed;
	bool		ok = true;
	ListCell   *lc;

	rx_shuffle_info((CustomScan *) shuffle, &si);
	if (!rx_consistent_reads || nmembers < 2 || self < 0 || si.single_sender >= 0 ||
		rx_xact_changed_before(estate->es_snapshot->curcid) ||
		!rx_plan_speculation_safe(outerPlan(shuffle)))
		return false;
	gathers = list_make1(r);
	foreach(lc, rx_receive_query_siblings(r))
	{
		RxReceiveState *g = lfirst(lc);
		RxShuffleInfo gsi;

		rx_shuffle_info((CustomScan *) outerPlan(g->css.ss.ps.plan), &gsi);
		if (gsi.single_sender < 0)
			gathers = lappend(gathers, g);
	}
	if (!round_covers_query(estate, gathers) ||
		(here = rx_cluster_snapshot_round_begin(estate)) == NULL)
		return false;

	/* the messages, the same for every member */
	first = later = NIL;
	for (int m = 0; m < nmembers; m++)
	{
		first = lappend(first, makeString(m == self ? (char *) here : RX_SNAPSHOT_TAKE));
		later = lappend(later, makeString(m == self ? (char *) here : RX_SNAPSHOT_HELD));
	}
	ngathers = list_length(gathers);
	rgs = palloc0(sizeof(RoundGather) * ngathers);
	foreach(lc, gathers)
		round_gather(&rgs[foreach_current_index(lc)], lfirst(lc), nmembers,
					 foreach_current_index(lc) == 0 ? first : later);
	for (int m = 0; m < nmembers; m++)
		if (m != self)
		{
			conns[m] = rx_pool_get(&members[m]);
			items[m] = palloc(sizeof(int) * 2 * ngathers);
			nitems[m] = round_send(rgs, ngathers, conns[m], items[m]);
			if (nitems[m] < 0)
				rx_report_remote_error(ERROR, conns[m], NULL, members[m].name,
									   psprintf("could not send the fragment of exchange %d",
												r->info.exchange_id));
			/* a pipeline sends only what fills a buffer by itself */
			rx_flush(conns[m], members[m].name);
		}

	/* this member's part of r here, while the others run theirs */
	(void) rx_receive_query_here(r, first, self, members[self].name,
								 si.tuples_needed, rgs[0].rows[self]);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange gathered row",
									ALLOCSET_SMALL_SIZES);
	INSTR_TIME_SET_CURRENT(start);
	for (int m = 0; m < nmembers; m++)
		if (m != self)
			ok &= round_read(rgs, items[m], nitems[m], m, conns[m],
							 members[m].name, row_cxt, &reports);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	r->data_wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	MemoryContextDelete(row_cxt);
	for (int k = 0; k < ngathers; k++)
		ExecDropSingleTupleTableSlot(rgs[k].slot);

	/*
	 * Every member answered: the barriers go, here and with each member's
	 * Sync, which ends (commits, or after a failure rolls back) its round;
	 * the pool reads its answer before it lends the connection again.
	 */
	rx_cluster_snapshot_round_end(ok);
	for (int m = 0; m < nmembers; m++)
		if (m != self)
		{
			if (!PQpipelineSync(conns[m]))
				rx_report_remote_error(ERROR, conns[m], NULL, members[m].name,
									   "could not end a round of gathers");
			rx_flush(conns[m], members[m].name);
			rx_pool_put_pending(conns[m]);
		}

	if (!ok)
	{
		for (int k = 0; k < ngathers; k++)
			for (int m = 0; m < nmembers; m++)
				tuplestore_end(rgs[k].rows[m]);
		/* r's part here runs again */
		ExecReScan(outerPlanState(outerPlanState(r)));
		return false;
	}

	/* EXPLAIN ANALYZE: the members' counters into each fragment */
	foreach(lc, reports)
	{
		RoundReport *report = lfirst(lc);

		rx_merge_direct_report(outerPlanState(report->g), report->member, report->text);
	}
	if (r->query_counts == NULL)
		r->query_counts = palloc0(sizeof(uint64) * nmembers);
	r->query_members = nmembers;
	r->query_source = 0;
	r->query_rows = rgs[0].rows;
	for (int m = 0; m < nmembers; m++)
		r->query_counts[m] += tuplestore_tuple_count(r->query_rows[m]);
	for (int k = 1; k < ngathers; k++)
	{
		tuplestore_end(rgs[k].rows[self]);
		rgs[k].rows[self] = NULL;
		rgs[k].g->query_prefetched = rgs[k].rows;
	}
	return true;
}

