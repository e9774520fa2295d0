/*-------------------------------------------------------------------------
 *
 * receive.c
 *	  The RECEIVE executor node: returns the rows of one exchange from all
 *	  members.
 *
 * Inside a fragment (kind SHUFFLE) the outer child is this member's own
 * SHUFFLE of the exchange: RECEIVE alternates between rows that arrived
 * from other members and rows its SHUFFLE keeps here, preferring arrived
 * rows so that queues stay short.  On the coordinator (kind GATHER) the
 * outer child is the fragment; it is shipped at the first fetch, like a
 * Gather launching its workers, and only initialized here for EXPLAIN and
 * to receive the merged instrumentation.  An ordered gather merges the
 * members' sorted streams like Gather Merge.
 *
 * Under a member's Gather (parallel-aware, receive_shared.c) the
 * fragment's backend reads the exchange as here and hands the rows out to
 * the Gather's workers, whose RECEIVEs read them from shared memory and
 * initialize nothing below.
 *
 * Rescan: with materialize (set by the planner, or when the parent asks
 * for rewinds) every returned row is kept and replayed; a fallback gather
 * with lookup keys keeps its rows hashed instead, and a rescan returns
 * only those whose keys hash like the current parameters (lookup.c).  Otherwise a gather
 * is shipped again; an exchange inside a fragment cannot restart (the
 * planner never puts one where it would have to).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"
#include "utils/tuplestore.h"

#include "cluster/dispatch.h"
#include "cluster/metadata.h"
#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "exec/lookup.h"
#include "transport/transport.h"

static Node *receive_create_state(CustomScan *cscan);
static void receive_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *receive_exec(CustomScanState *node);
static void receive_end(CustomScanState *node);
static void receive_rescan(CustomScanState *node);
static void receive_shutdown(CustomScanState *node);
static void receive_explain(CustomScanState *node, List *ancestors,
							ExplainState *es);

CustomScanMethods rx_receive_plan_methods = {
	RX_RECEIVE_NAME,
	receive_create_state
};

static CustomExecMethods receive_exec_methods = {
	.CustomName = RX_RECEIVE_NAME,
	.BeginCustomScan = receive_begin,
	.ExecCustomScan = receive_exec,
	.EndCustomScan = receive_end,
	.ReScanCustomScan = receive_rescan,
	.ShutdownCustomScan = receive_shutdown,
	.ExplainCustomScan = receive_explain,
	.EstimateDSMCustomScan = rx_receive_share_estimate,
	.InitializeDSMCustomScan = rx_receive_share_init_dsm,
	.ReInitializeDSMCustomScan = rx_receive_share_reinit_dsm,
	.InitializeWorkerCustomScan = rx_receive_share_init_worker
};

static Node *
receive_create_state(CustomScan *cscan)
{
	RxReceiveState *r = palloc0(sizeof(RxReceiveState));

	NodeSetTag(r, T_CustomScanState);
	r->css.methods = &receive_exec_methods;
	rx_receive_info(cscan, &r->info);
	return (Node *) r;
}

static void
receive_begin(CustomScanState *node, EState *estate, int eflags)
{
	RxReceiveState *r = (RxReceiveState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;

	rx_exchange_slots_vary(node);

	r->eflags = eflags;
	if (eflags & (EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK))
		r->info.materialize = true;
	if (eflags & (EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("RECEIVE of exchange %d cannot scan backward or restore a mark",
						r->info.exchange_id)));

	if (IsParallelWorker() && rx_fragment_hub() == NULL)
	{
		/*
		 * A worker of a member's Gather that shares this RECEIVE (not a
		 * fragment run by a parallel worker, fragment_worker.c, which has
		 * its hub): its rows come from the Gather's leader, which alone
		 * has the port and runs the SHUFFLE below (receive_shared.c)
		 */
		r->gather_worker = true;
		if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
			r->recv_slot = ExecInitExtraTupleSlot(estate, desc, &TTSOpsMinimalTuple);
		return;
	}
	outerPlanState(r) = ExecInitNode(outerPlan(cscan), estate,
									 eflags & ~(EXEC_FLAG_REWIND |
												EXEC_FLAG_BACKWARD |
												EXEC_FLAG_MARK));
	r->by_query = rx_receive_by_query(r);
	rx_receive_keyed_begin(r, estate, eflags);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	/* rows come out of tuplestores as minimal tuples */
	r->recv_slot = ExecInitExtraTupleSlot(estate, desc, &TTSOpsMinimalTuple);
	r->local_virtual = ExecInitExtraTupleSlot(estate, desc, &TTSOpsVirtual);

	r->lookup = rx_lookup_create(&r->info, cscan->custom_exprs, &node->ss.ps);
	if (r->info.materialize && r->lookup == NULL)
		r->store = tuplestore_begin_heap(false, false, work_mem);

	if (r->info.kind == RX_RECEIVE_SHUFFLE)
	{
		/*
		 * On the coordinator the fragment's nodes are only initialized, for
		 * EXPLAIN and the members' instrumentation; they never run there.
		 */
		r->hub = rx_fragment_hub();
		if (r->hub != NULL)
			rx_hub_register_receive(r->hub, r->info.exchange_id, desc);
	}
}

/* a wait for data in which nothing arrived at all */
#define RECEIVE_WAIT_MS			100
#define RECEIVE_IDLE_WAIT_MS	90

static void drive_other_shuffles(void);

/*
 * Wait for data, keeping the time for EXPLAIN ANALYZE.  Inside a fragment,
 * a wait in which nothing arrived may be a wait for rows that another
 * member holds back until it gets rows this member holds back: its own
 * SHUFFLE of another exchange, not pulled yet because the plan reads that
 * exchange later (a hash join reads its outer side's first row, then its
 * whole inner side; members whose outer side is empty here and not there
 * take the two in different orders).  Then run those SHUFFLEs first.
 */
static void
receive_wait(RxReceiveState *r)
{
	instr_time	start;
	instr_time	elapsed;
	double		ms;

	INSTR_TIME_SET_CURRENT(start);
	if (r->dispatch)
		rx_dispatch_check(r->dispatch);
	rx_hub_wait(r->hub, r->info.exchange_id, false, RECEIVE_WAIT_MS);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	ms = INSTR_TIME_GET_MILLISEC(elapsed);
	r->data_wait_ms += ms;
	if (r->info.kind == RX_RECEIVE_SHUFFLE && ms >= RECEIVE_IDLE_WAIT_MS)
		drive_other_shuffles();
}

/* the SHUFFLE's next row for this member, in the SHUFFLE's slot, or NULL */
static TupleTableSlot *
receive_pull_shuffle(RxReceiveState *r)
{
	TupleTableSlot *slot;

	r->pulling = true;
	slot = ExecProcNode(outerPlanState(r));
	r->pulling = false;
	if (TupIsNull(slot))
	{
		r->child_done = true;
		return NULL;
	}
	return slot;
}

/*
 * This member's next row of the exchange from its own SHUFFLE, or NULL.
 * The row is copied into a slot of the RECEIVE's own: the SHUFFLE's slot
 * changes when another RECEIVE's wait runs the SHUFFLE on (see
 * drive_other_shuffles()), while the row returned may still be in use
 * above (a hash join's first outer row).
 *
 * A row that stays on its member should cost next to nothing (all of
 * them, on a cluster of one member), so a stored tuple (a scan's heap
 * tuple, a sort's minimal tuple) is copied as it is, one memcpy, into a
 * slot of the same kind and the same descriptor: the table's, whose
 * dropped columns and defaults of columns added later say how to read it.
 * Anything else is copied column by column.
 */
static TupleTableSlot *
receive_pull_local(RxReceiveState *r)
{
	TupleTableSlot *slot = receive_pull_shuffle(r);
	const TupleTableSlotOps *ops;

	if (TupIsNull(slot))
		return NULL;
	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
		ops = &TTSOpsHeapTuple;
	else if (TTS_IS_MINIMALTUPLE(slot))
		ops = &TTSOpsMinimalTuple;
	else
		return ExecCopySlot(r->local_virtual, slot);
	if (r->local_stored == NULL ||
		r->local_stored->tts_ops != ops ||
		r->local_stored->tts_tupleDescriptor != slot->tts_tupleDescriptor)
	{
		MemoryContext old = MemoryContextSwitchTo(r->css.ss.ps.state->es_query_cxt);

		/* the SHUFFLE returns its child's slot: this happens once */
		r->local_stored = ExecInitExtraTupleSlot(r->css.ss.ps.state,
												 slot->tts_tupleDescriptor,
												 ops);
		MemoryContextSwitchTo(old);
	}
	return ExecCopySlot(r->local_stored, slot);
}

static TupleTableSlot *receive_next_unordered(RxReceiveState *r);
static TupleTableSlot *receive_next_merged(RxReceiveState *r);

static void
receive_start_gather(RxReceiveState *r)
{
	r->dispatch = rx_dispatch_start(r);
	r->hub = rx_dispatch_hub(r->dispatch);
	rx_hub_register_receive(r->hub, r->info.exchange_id,
							r->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor);

	/*
	 * Fragments that run in this transaction (it wrote before: the
	 * members' remote transactions and a parallel worker here) hold the
	 * members' one connection of the transaction and keep this backend in
	 * parallel mode.  They cannot stay open while another gather of the
	 * plan ships its fragments (a subplan, a nested loop over two
	 * gathered tables), while a portal is suspended and other statements
	 * run, nor while the statement itself writes (INSERT ... SELECT).  So
	 * read every row now, end the exchange, and return the rows from a
	 * store (spilled to disk beyond work_mem).
	 */
	if (rx_dispatch_in_xact(r->dispatch))
	{
		Tuplestorestate *rows = tuplestore_begin_heap(false, false, work_mem);

		for (;;)
		{
			TupleTableSlot *slot = r->info.nsortkeys > 0
				? receive_next_merged(r) : receive_next_unordered(r);

			if (TupIsNull(slot))
				break;
			tuplestore_puttupleslot(rows, slot);
		}
		rx_dispatch_finish(r->dispatch, false);
		r->dispatch = NULL;
		r->prefetched = rows;
	}
}

/* next row of an unordered exchange, or NULL at the end */
static TupleTableSlot *
receive_next_unordered(RxReceiveState *r)
{
	TupleTableSlot *slot = r->recv_slot;
	bool		gather = (r->info.kind == RX_RECEIVE_GATHER);

	if (r->hub == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("RECEIVE of exchange %d executed outside a plan fragment",
						r->info.exchange_id)));
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (rx_hub_next(r->hub, r->info.exchange_id, -1, slot))
			return slot;
		if (r->local_rows &&
			tuplestore_gettupleslot(r->local_rows, true, false, slot))
			return slot;
		if (!gather && !r->child_done)
		{
			TupleTableSlot *local = receive_pull_local(r);

			if (!TupIsNull(local))
				return local;
			continue;
		}
		if (rx_hub_all_done(r->hub, r->info.exchange_id, gather))
			return NULL;
		if (!gather && rx_hub_stopped(r->hub))
			return NULL;
		if (!rx_hub_pump(r->hub))
			receive_wait(r);
	}
}

/* ---------------------------------------------------------------------
 * Ordered merge of the members' sorted streams (Gather Merge)
 * ---------------------------------------------------------------------
 */

static int
receive_heap_compare(Datum a, Datum b, void *arg)
{
	RxReceiveState *r = (RxReceiveState *) arg;
	TupleTableSlot *sa = r->merge_slots[DatumGetInt32(a)];
	TupleTableSlot *sb = r->merge_slots[DatumGetInt32(b)];

	for (int k = 0; k < r->info.nsortkeys; k++)
	{
		SortSupport sk = &r->sortkeys[k];
		bool		na,
					nb;
		Datum		da = slot_getattr(sa, sk->ssup_attno, &na);
		Datum		db = slot_getattr(sb, sk->ssup_attno, &nb);
		int			c = ApplySortComparator(da, na, db, nb, sk);

		if (c != 0)
		{
			INVERT_COMPARE_RESULT(c);	/* binaryheap is a max-heap */
			return c;
		}
	}
	return 0;
}

static int
receive_nsources(RxReceiveState *r)
{
	return r->by_query ? r->query_members : rx_hub_nmembers(r->hub);
}

/* the next row of one source into its merge slot; false at its end */
static bool
receive_fill(RxReceiveState *r, int source)
{
	if (r->by_query)
		return tuplestore_gettupleslot(r->query_rows[source], true, false,
									   r->merge_slots[source]);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (rx_hub_next(r->hub, r->info.exchange_id, source,
						r->merge_slots[source]))
			return true;
		if (rx_hub_source_done(r->hub, r->info.exchange_id, source))
			return false;
		if (!rx_hub_pump(r->hub))
			receive_wait(r);
	}
}

static void
receive_merge_init(RxReceiveState *r)
{
	TupleDesc	desc = r->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	int			n = receive_nsources(r);

	r->sortkeys = palloc0(sizeof(SortSupportData) * r->info.nsortkeys);
	for (int k = 0; k < r->info.nsortkeys; k++)
	{
		SortSupport sk = &r->sortkeys[k];

		sk->ssup_cxt = CurrentMemoryContext;
		sk->ssup_collation = r->info.sort_collations[k];
		sk->ssup_nulls_first = r->info.sort_nulls_first[k];
		sk->ssup_attno = r->info.sort_cols[k];
		sk->abbreviate = false;
		PrepareSortSupportFromOrderingOp(r->info.sort_ops[k], sk);
	}
	r->merge_slots = palloc0(sizeof(TupleTableSlot *) * n);
	for (int s = 0; s < n; s++)
		r->merge_slots[s] = ExecInitExtraTupleSlot(r->css.ss.ps.state, desc,
												   &TTSOpsMinimalTuple);
	r->heap = binaryheap_allocate(n, receive_heap_compare, r);
}

static TupleTableSlot *
receive_next_merged(RxReceiveState *r)
{
	int			n = receive_nsources(r);

	if (!r->merge_started)
	{
		receive_merge_init(r);
		for (int s = 0; s < n; s++)
			if (receive_fill(r, s))
				binaryheap_add_unordered(r->heap, Int32GetDatum(s));
		binaryheap_build(r->heap);
		r->merge_started = true;
	}
	else if (!binaryheap_empty(r->heap))
	{
		/* advance the source whose row was returned last time */
		int			top = DatumGetInt32(binaryheap_first(r->heap));

		if (receive_fill(r, top))
			binaryheap_replace_first(r->heap, Int32GetDatum(top));
		else
			(void) binaryheap_remove_first(r->heap);
	}
	if (binaryheap_empty(r->heap))
		return NULL;
	return r->merge_slots[DatumGetInt32(binaryheap_first(r->heap))];
}

/* ---------------------------------------------------------------------
 * The node
 * ---------------------------------------------------------------------
 */

static TupleTableSlot *
receive_next_live(RxReceiveState *r)
{
	if (r->finished)
		return NULL;
	if (r->by_query)
	{
		if (r->query_rows == NULL)
			rx_receive_query_run(r);
		return r->info.nsortkeys > 0 ? receive_next_merged(r)
			: rx_receive_query_next(r);
	}
	if (r->info.kind == RX_RECEIVE_GATHER && r->dispatch == NULL &&
		r->prefetched == NULL)
		receive_start_gather(r);
	if (r->prefetched)
		return tuplestore_gettupleslot(r->prefetched, true, false, r->recv_slot)
			? r->recv_slot : NULL;
	return r->info.nsortkeys > 0 ? receive_next_merged(r)
		: receive_next_unordered(r);
}

/* all rows kept, hashed; then those that hash like the parameters */
static TupleTableSlot *
receive_lookup(RxReceiveState *r)
{
	if (!r->finished)
	{
		for (;;)
		{
			/* not inside TupIsNull(), which evaluates its argument twice */
			TupleTableSlot *slot = receive_next_live(r);

			if (TupIsNull(slot))
				break;
			rx_lookup_add(r->lookup, slot);
		}
		r->finished = true;
		rx_lookup_done(r->lookup);
	}
	return rx_lookup_next(r->lookup, r->css.ss.ps.ps_ExprContext, r->recv_slot);
}

static TupleTableSlot *
receive_access(ScanState *ss)
{
	RxReceiveState *r = (RxReceiveState *) ss;
	TupleTableSlot *slot;

	if (r->gather_worker)
		return rx_receive_share_next(r);
	if (r->share)
	{
		/*
		 * The leader hands rows to the workers, keeping what they lack
		 * room for; below a Parallel Hash it keeps them all, and the
		 * workers' input ends now that it reads its own (receive_shared.c)
		 */
		if (r->info.leader_only)
			rx_receive_share_done(r, false);
		while (!r->finished)
		{
			slot = receive_next_live(r);
			if (TupIsNull(slot))
			{
				r->finished = true;
				rx_receive_share_done(r, true);
				break;
			}
			if (!rx_receive_share_hand_out(r, slot))
				return slot;
		}
		return rx_receive_share_taken_back(r);
	}
	if (rx_receive_keyed_active(r))
		return rx_receive_keyed_next(r);
	if (r->lookup)
		return receive_lookup(r);
	if (r->replaying)
	{
		/* never read past the last stored row: the pointer would stick */
		if (r->replayed < r->stored)
		{
			if (!tuplestore_gettupleslot(r->store, true, false, r->recv_slot))
				elog(ERROR, "RECEIVE of exchange %d lost a stored row",
					 r->info.exchange_id);
			r->replayed++;
			return r->recv_slot;
		}
		r->replaying = false;
	}
	slot = receive_next_live(r);
	if (TupIsNull(slot))
	{
		r->finished = true;
		return NULL;
	}
	if (r->store)
	{
		tuplestore_puttupleslot(r->store, slot);
		r->stored++;
	}
	return slot;
}

static bool
receive_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
receive_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, receive_access, receive_recheck);
}

/* end the gather's exchange: the fragments' results and instrumentation */
static void
receive_finish(RxReceiveState *r)
{
	if (r->dispatch)
	{
		/* rows not yet read are not wanted: tell the members to stop */
		if (!r->finished)
			r->stopped_early = true;
		rx_dispatch_finish(r->dispatch, !r->finished);
		r->dispatch = NULL;
	}
}

static void
receive_shutdown(CustomScanState *node)
{
	RxReceiveState *r = (RxReceiveState *) node;

	/*
	 * A portal fetched in batches shuts its plan down after every batch:
	 * the exchange stays open for the next one (portal.c).
	 */
	/* the workers' rows end here, before the Gather waits for them */
	rx_receive_share_done(r, false);
	if (r->dispatch && !r->finished &&
		rx_run_may_resume(node->ss.ps.state))
		return;
	receive_finish(r);
}

static void
receive_end(CustomScanState *node)
{
	RxReceiveState *r = (RxReceiveState *) node;

	/*
	 * A suspended portal ended by its transaction's abort: nothing may
	 * wait or fail now.  The abort cancels the fragments and closes their
	 * connections (dispatch.c) and the port (port.c).
	 */
	if (r->gather_worker)
		return;
	rx_receive_share_done(r, false);
	if (r->dispatch && !IsTransactionState())
		r->dispatch = NULL;
	receive_finish(r);
	rx_receive_query_reset(r, false);
	if (r->prefetched)
		tuplestore_end(r->prefetched);
	if (r->local_rows)
		tuplestore_end(r->local_rows);
	if (r->store)
		tuplestore_end(r->store);
	rx_receive_keyed_end(r);
	ExecEndNode(outerPlanState(node));
}

static void
receive_rescan(CustomScanState *node)
{
	RxReceiveState *r = (RxReceiveState *) node;
	Plan	   *fragment = outerPlan(node->ss.ps.plan);
	bool		params_changed = bms_overlap(node->ss.ps.chgParam,
											 fragment->extParam);

	ExecScanReScan(&node->ss);
	if (rx_receive_keyed_active(r) && rx_receive_keyed_rescan(r))
		return;
	if (r->lookup && !params_changed)
	{
		/* a fallback has no parameters of its own: its rows stay */
		rx_lookup_restart(r->lookup);
		return;
	}
	if (r->store && !params_changed && !r->stopped_early)
	{
		/* replay what was read, then go on reading where we stopped */
		tuplestore_rescan(r->store);
		r->replayed = 0;
		r->replaying = (r->stored > 0);
		return;
	}
	if (r->info.kind != RX_RECEIVE_GATHER)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("RECEIVE of exchange %d inside a fragment cannot be rescanned",
						r->info.exchange_id)));
	/* ship the fragment again, with the current parameter values */
	if (r->dispatch)
		rx_dispatch_finish(r->dispatch, true);
	r->dispatch = NULL;
	r->hub = NULL;
	if (r->prefetched)
		tuplestore_end(r->prefetched);
	r->prefetched = NULL;
	rx_receive_query_reset(r, true);
	r->finished = false;
	r->stopped_early = false;
	r->replaying = false;
	r->merge_started = false;
	r->stored = r->replayed = 0;
	if (r->store)
		tuplestore_clear(r->store);
	if (r->lookup)
		rx_lookup_reset(r->lookup);
}

/* ---------------------------------------------------------------------
 * The end of a fragment
 * ---------------------------------------------------------------------
 */

/* the fragment's RECEIVEs that did not read all their rows, into *context */
static bool
collect_unfinished(PlanState *ps, void *context)
{
	List	  **receives = (List **) context;

	if (ps == NULL)
		return false;
	if (rx_is_receive(ps->plan))
	{
		RxReceiveState *r = (RxReceiveState *) ps;

		if (r->info.kind == RX_RECEIVE_SHUFFLE && r->hub != NULL &&
			!r->finished)
			*receives = lappend(*receives, r);
	}
	return planstate_tree_walker(ps, collect_unfinished, context);
}

/*
 * Run a RECEIVE's own SHUFFLE to its end, which sends its rows for other
 * members; the rows it keeps here are kept for the RECEIVE, or dropped.
 * Straight from the SHUFFLE's slot into the store: the RECEIVE's own
 * slots may hold the row it returned last, which the plan above may
 * still use (a hash join keeps its first outer row while it builds its
 * hash table, and that build is what waits here).
 */
static void
run_local_shuffle(RxReceiveState *r, bool keep)
{
	while (!r->child_done)
	{
		TupleTableSlot *slot;

		CHECK_FOR_INTERRUPTS();
		slot = receive_pull_shuffle(r);
		if (TupIsNull(slot) || !keep)
			continue;
		if (r->local_rows == NULL)
			r->local_rows = tuplestore_begin_heap(false, false, work_mem);
		tuplestore_puttupleslot(r->local_rows, slot);
	}
}

/*
 * Run every SHUFFLE of this fragment that has not ended and is not being
 * read right now (its RECEIVE is not on the stack), keeping the rows it
 * keeps on this member for its RECEIVE, which returns them later.  Each
 * SHUFFLE's subtree runs once (exchanges inside fragments are never
 * rescanned), so running it early changes when its rows come, not which.
 */
static void
drive_other_shuffles(void)
{
	PlanState  *root = rx_fragment_planstate();
	List	   *receives = NIL;
	ListCell   *lc;

	if (root == NULL)
		return;
	(void) collect_unfinished(root, &receives);
	foreach(lc, receives)
	{
		RxReceiveState *r = lfirst(lc);

		if (!r->pulling)
			run_local_shuffle(r, true);
	}
}

/*
 * A fragment's plan can end without reading some of its exchanges: a
 * hash join whose inner side is empty never reads its outer side, a join
 * whose first outer row is missing never builds its hash table, a Limit
 * stops early.  The other members still wait for this member's rows and
 * end-of-stream on those exchanges, and they may need them to finish
 * what they send here.  So, after the plan ran: first run every SHUFFLE
 * of this member that did not end, sending its rows to their owners
 * (rows it keeps here are not wanted any more), then read every RECEIVE
 * to its end, discarding the rows.  Sending everything before waiting for
 * anything keeps to the rule that no member waits for rows while others
 * wait for its own.  After a stop request both end at once.
 */
void
rx_receive_finish_fragment(PlanState *planstate)
{
	List	   *receives = NIL;
	ListCell   *lc;

	/*
	 * Not when the fragment's output ended early: the coordinator was told
	 * to stop, or has all the rows its LIMIT needs from this member alone,
	 * and stops every member; running the rest of the plan could take as
	 * long as the whole query.
	 */
	if (rx_is_shuffle(planstate->plan) &&
		((RxShuffleState *) planstate)->ended_early)
		return;
	(void) collect_unfinished(planstate, &receives);
	foreach(lc, receives)
		run_local_shuffle(lfirst(lc), false);
	foreach(lc, receives)
	{
		RxReceiveState *r = lfirst(lc);

		while (!r->finished)
		{
			TupleTableSlot *slot = receive_next_unordered(r);

			if (TupIsNull(slot))
				r->finished = true;
		}
	}
}

static void
receive_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	RxReceiveState *r = (RxReceiveState *) node;

	ExplainPropertyInteger("Exchange", NULL, r->info.exchange_id, es);
	if (r->info.kind == RX_RECEIVE_GATHER)
	{
		RxMember   *members;
		int			n = rx_get_members(&members);

		ExplainPropertyText("Gather", r->info.nsortkeys > 0 ? "ordered merge" : "unordered", es);
		ExplainPropertyInteger("Members", NULL, n, es);
	}
	if (r->keyed != NULL)
		rx_receive_keyed_explain(r, es);
	if (r->by_query)
		rx_receive_query_explain(r, es);
	else
	{
		int			design = rx_exchange_design(&r->info);

		ExplainPropertyText("Transport", psprintf("%s over %s",
												  rx_design_name(design),
												  rx_transport_provider_name(design)), es);
	}
	if (r->info.fallback)
		ExplainPropertyText("Fallback",
							"distributed scan gathered to the coordinator for a serial plan part", es);
	if (r->info.materialize)
		ExplainPropertyBool("Materialized", true, es);
	if (r->info.leader_only && node->ss.ps.plan->parallel_aware)
		ExplainPropertyText("Read By", "the Gather's leader alone (below a Parallel Hash)", es);
	if (r->info.nlookup > 0)
		ExplainPropertyInteger("Hashed Lookup Keys", NULL, r->info.nlookup, es);
	if (es->analyze && !r->by_query)
		rx_explain_member_stats(&r->stats, false, true, es);
	if (es->analyze && es->timing && r->info.kind == RX_RECEIVE_GATHER)
		ExplainPropertyFloat("Coordinator Data Wait", "ms", r->data_wait_ms, 3, es);
}

void
rx_receive_register(void)
{
	RegisterCustomScanMethods(&rx_receive_plan_methods);
}
