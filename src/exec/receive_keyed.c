/*-------------------------------------------------------------------------
 *
 * receive_keyed.c
 *	  A fallback gather keyed by the distribution column: each rescan
 *	  reads the rows of one member, the owner of the key.
 *
 * A nested loop whose inner side is an index scan of a distributed table
 * on its distribution column (orders joined to their lineitems, a lookup
 * table joined by id), or a correlated subquery keyed on it, runs in the
 * serial part of the plan, where such a scan becomes a gather RECEIVE
 * (fallback.c).  Gathering the whole table once and hashing it (lookup.c)
 * costs the whole table even when the loop runs three times.  Here each
 * rescan evaluates the key (the outer row's value), finds its owner
 * (hashing.c), and runs the keyed fragment, the same index scan with its
 * parameterized conditions, there only: in this backend when this member
 * owns the key, otherwise as a direct message over the pooled connection
 * (the transaction's session after it wrote there), with the parameters'
 * values (dispatch.c) and the query's cluster snapshot, exactly as a
 * gather by query runs its fragment (receive_query.c).  The RECEIVE's
 * filter still holds every condition with parameters: a recheck.
 *
 * A lookup on another member costs a round trip; after
 * RxReceiveInfo.keyed_remote_max of them (the cost of gathering the
 * table, fallback.c) the RECEIVE gathers the table as before and looks
 * the remaining rescans up in its hash, so a loop that runs far more
 * often than the planner thought costs at most about twice the better
 * path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_pool.h"
#include "cluster/dispatch.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "exec/direct.h"
#include "exec/exchange_state.h"
#include "rdma_exchange.h"

bool		rx_keyed_lookups = true;

struct RxKeyed
{
	PlanState  *fragment;		/* the keyed fragment's plan state */
	ExprState  *value;			/* the key */
	Tuplestorestate *rows;		/* the current lookup's rows */
	bool		ran;			/* since the last rescan */
	bool		local_started;	/* the fragment ran here before */
	Snapshot	snapshot;		/* this member's share of the cluster's */
	bool		switch_pending; /* gather at the next rescan */
	uint64		local;			/* lookups run here */
	uint64		remote;			/* ... on other members */
	uint64		switched_after; /* remote lookups before the gather, or 0 */

	RxMember   *members;
	int			nmembers;
	int			self;

	/* reading a member's rows */
	RxTextRows *text_rows;
	TupleTableSlot *text_slot;
	MemoryContext row_cxt;
	MemoryContext lookup_cxt;	/* a remote lookup's message and the like */
	char	   *what;
};

void
rx_receive_keyed_begin(RxReceiveState *r, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) r->css.ss.ps.plan;
	TupleDesc	desc = r->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	RxKeyed    *k;

	if (cscan->custom_plans == NIL || !rx_keyed_lookups)
		return;
	k = palloc0(sizeof(RxKeyed));
	k->fragment = ExecInitNode(linitial(cscan->custom_plans), estate,
							   eflags & ~(EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD |
										  EXEC_FLAG_MARK));
	/* EXPLAIN shows it as the RECEIVE's child */
	r->css.custom_ps = list_make1(k->fragment);
	r->keyed = k;
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	k->value = ExecInitExpr(r->info.keyed_value, &r->css.ss.ps);
	k->rows = tuplestore_begin_heap(false, false, work_mem);
	k->text_rows = rx_text_rows(desc);
	k->text_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	k->row_cxt = AllocSetContextCreate(CurrentMemoryContext,
									   "rdma_exchange keyed row",
									   ALLOCSET_SMALL_SIZES);
	/* reset by every remote lookup: a rescan may run millions of times */
	k->lookup_cxt = AllocSetContextCreate(CurrentMemoryContext,
										  "rdma_exchange keyed lookup",
										  ALLOCSET_DEFAULT_SIZES);
	k->nmembers = rx_get_members(&k->members);
	k->self = rx_self_member_index();
	k->what = psprintf("keyed lookup of exchange %d failed",
					   r->info.exchange_id);
}

/* is the RECEIVE reading by key now (not gathering)? */
bool
rx_receive_keyed_active(RxReceiveState *r)
{
	return r->keyed != NULL && r->keyed->switched_after == 0;
}

/* the lookup on this member, in this backend */
static void
run_here(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;
	EState	   *estate = r->css.ss.ps.state;
	Snapshot	saved = estate->es_snapshot;

	if (k->local_started)
		ExecReScan(k->fragment);
	k->local_started = true;
	if (rx_consistent_reads && k->snapshot == NULL)
		k->snapshot = RegisterSnapshot(rx_cluster_snapshot_restore(strVal(list_nth(rx_cluster_snapshot(estate),
																				k->self)),
																   k->members[k->self].name));
	if (k->snapshot != NULL)
		rx_planstate_use_snapshot(k->fragment, k->snapshot);
	PG_TRY();
	{
		for (;;)
		{
			TupleTableSlot *slot;

			CHECK_FOR_INTERRUPTS();
			slot = ExecProcNode(k->fragment);
			if (TupIsNull(slot))
				break;
			tuplestore_puttupleslot(k->rows, slot);
		}
	}
	PG_FINALLY();
	{
		estate->es_snapshot = saved;
	}
	PG_END_TRY();
	k->local++;
}

/*
 * The lookup on member m: one round trip.  What it allocates besides the
 * rows (the message, the rows' text) goes with k->lookup_cxt, reset here.
 */
static void
run_there(RxReceiveState *r, int m)
{
	RxKeyed    *k = r->keyed;
	EState	   *estate = r->css.ss.ps.state;
	RxMember   *members = k->members;
	PGconn	   *conn;
	bool		in_xact;
	char	   *message;
	MemoryContext old_cxt;

	MemoryContextReset(k->lookup_cxt);
	old_cxt = MemoryContextSwitchTo(k->lookup_cxt);
	message = rx_direct_message(linitial(((CustomScan *) r->css.ss.ps.plan)->custom_plans),
								estate,
								rx_consistent_reads ? rx_cluster_snapshot(estate) : NIL,
								r->css.ss.ps.ps_ExprContext);
	conn = rx_xact_changed_before(estate->es_snapshot->curcid)
		? rx_xact_fragment_connection(&members[m]) : NULL;
	in_xact = (conn != NULL);
	if (conn == NULL)
		conn = rx_pool_get(&members[m]);
	rx_direct_send(conn, members[m].name, !in_xact, message,
				   k->text_slot->tts_tupleDescriptor->natts);
	for (;;)
	{
		MemoryContext old = MemoryContextSwitchTo(k->row_cxt);
		char	   *report = NULL;
		bool		found = rx_direct_next_row(conn, members[m].name, k->text_rows,
											   k->text_slot, &report, k->what);

		MemoryContextSwitchTo(old);
		if (report != NULL)
			rx_merge_direct_report(k->fragment, m, report);
		if (!found)
			break;
		tuplestore_puttupleslot(k->rows, k->text_slot);
		MemoryContextReset(k->row_cxt);
	}
	MemoryContextReset(k->row_cxt);
	if (in_xact)
		rx_xact_fragment_done(conn);
	else
		rx_pool_put(conn, true);
	MemoryContextSwitchTo(old_cxt);
	if (++k->remote >= (uint64) r->info.keyed_remote_max)
		k->switch_pending = true;
}

/* the current lookup's next row into r->recv_slot, or NULL */
TupleTableSlot *
rx_receive_keyed_next(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;

	if (!k->ran)
	{
		ExprContext *econtext = r->css.ss.ps.ps_ExprContext;
		bool		isnull;
		Datum		value;
		int			owner;

		k->ran = true;
		value = ExecEvalExprSwitchContext(k->value, econtext, &isnull);
		/* a strict equality with NULL: no row (fallback.c checks strictness) */
		if (!isnull)
		{
			owner = rx_member_of_key(r->info.keyed_relid, value, false,
									 k->nmembers);
			if (owner == k->self)
				run_here(r);
			else
				run_there(r, owner);
		}
	}
	return tuplestore_gettupleslot(k->rows, true, false, r->recv_slot)
		? r->recv_slot : NULL;
}

/*
 * A rescan: the next lookup, or, when the remote lookups have cost what
 * gathering the table costs, false: the RECEIVE gathers from now on.
 */
bool
rx_receive_keyed_rescan(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;

	if (k->switch_pending)
	{
		k->switched_after = k->remote;
		k->switch_pending = false;
		return false;
	}
	tuplestore_clear(k->rows);
	k->ran = false;
	return true;
}

void
rx_receive_keyed_end(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;

	if (k == NULL)
		return;
	if (k->snapshot != NULL)
		UnregisterSnapshot(k->snapshot);
	k->snapshot = NULL;
	if (k->rows != NULL)
		tuplestore_end(k->rows);
	k->rows = NULL;
	if (k->text_slot != NULL)
		ExecDropSingleTupleTableSlot(k->text_slot);
	k->text_slot = NULL;
	ExecEndNode(k->fragment);
}

void
rx_receive_keyed_explain(RxReceiveState *r, ExplainState *es)
{
	RxKeyed    *k = r->keyed;

	ExplainPropertyText("Keyed Lookup",
						psprintf("each rescan runs the child on the key's owner; the table is gathered after %d lookups on other members",
								 r->info.keyed_remote_max), es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Lookups Here", NULL, (int64) k->local, es);
		ExplainPropertyInteger("Lookups on Other Members", NULL, (int64) k->remote, es);
		if (k->switched_after > 0)
			ExplainPropertyText("Gathered", "after the lookups above", es);
	}
}

void
rx_receive_keyed_init(void)
{
	DefineCustomBoolVariable("rdma_exchange.keyed_lookups",
							 "A distributed table read by an index scan on its distribution column in the serial part of a plan (a nested loop's inner side, a correlated subquery) reads each rescan's rows from the key's owner.",
							 "off gathers the whole table once and looks the rescans up in it.",
							 &rx_keyed_lookups, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
}
