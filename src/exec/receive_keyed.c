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
 * A nested loop's lookups go in batches: a LOOKAHEAD node over the loop's
 * outer side (lookahead.c) reads outer rows ahead, sets the loop's
 * parameters for each in turn and adds its lookup to a batch here; the
 * batch runs as one direct message per member that owns some of its keys
 * (the member runs the keyed fragment once per lookup, rescanning it in
 * between, and numbers the rows it returns by lookup) and as local runs
 * for this member's keys, the members' messages all sent before any
 * reply is read.  Then each rescan of the loop, for the outer row the
 * LOOKAHEAD just returned, takes its rows from the batch.  Any other
 * rescan (a correlated subquery's; one whose key is not the batch's,
 * which cannot happen with the loop's own parameters, but costs nothing
 * to check) runs as a batch of one lookup.
 *
 * A lookup on another member costs a round trip; after
 * RxReceiveInfo.keyed_remote_max of them (the cost of gathering the
 * table, fallback.c) the RECEIVE gathers the table as before and looks
 * the remaining rescans up in its hash, so a loop that runs far more
 * often than the planner thought costs at most about twice the better
 * path.  A batch's message counts as one round trip plus
 * 1/RX_KEYS_PER_ROUND_TRIP of one per key it carries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/dispatch.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "exec/direct.h"
#include "exec/exchange_state.h"
#include "rdma_exchange.h"

bool		rx_keyed_lookups = true;

/* the lookups of a batch (see the file's comment) */
typedef struct KeyedBatch
{
	MemoryContext cxt;			/* all of it; reset by the next batch */
	int			nsets;			/* lookups in it */
	int			maxsets;
	Datum	   *keys;			/* each lookup's key */
	bool	   *key_nulls;
	int		   *owners;			/* its owner, -1 for a NULL key */
	List	  **values;			/* its parameters' values (Consts) */
	List	  **rows;			/* its rows, HeapTuples */
	int			current;		/* the lookup the next rescan reads, or -1 */
} KeyedBatch;

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
	uint64		batched;		/* lookups in batches (of local and remote) */
	uint64		messages;		/* batches' messages to other members */
	double		spent;			/* round trips and their worth, for the switch */
	bool		gathering;		/* switched to gathering the table (not a
								 * count of lookups: batched ones are not
								 * in remote, and all may be) */
	int16		key_len;		/* the key's type */
	bool		key_byval;
	KeyedBatch	batch;

	RxMember   *members;
	int			nmembers;
	int			self;

	/* reading a member's rows */
	RxTextRows *text_rows;
	TupleTableSlot *text_slot;
	MemoryContext row_cxt;
	char	   *what;
};

/*
 * Keyed RECEIVEs of running queries, for the LOOKAHEAD that feeds each
 * (lookahead.c) to find by plan node id: the LOOKAHEAD is initialized
 * before the RECEIVE on the loop's inner side.  An entry goes with the
 * query's memory (the executor state's), whether the query ends or fails.
 */
typedef struct KeyedEntry
{
	EState	   *estate;
	int			plan_node_id;
	RxReceiveState *receive;
	MemoryContextCallback gone;
} KeyedEntry;

static List *keyed_receives = NIL;	/* in TopMemoryContext */

static void
unregister_keyed(void *arg)
{
	keyed_receives = list_delete_ptr(keyed_receives, arg);
}

static void
register_keyed(RxReceiveState *r, EState *estate)
{
	KeyedEntry *e = MemoryContextAlloc(estate->es_query_cxt, sizeof(KeyedEntry));
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	e->estate = estate;
	e->plan_node_id = r->css.ss.ps.plan->plan_node_id;
	e->receive = r;
	e->gone.func = unregister_keyed;
	e->gone.arg = e;
	keyed_receives = lappend(keyed_receives, e);
	MemoryContextSwitchTo(old);
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &e->gone);
}

/* the keyed RECEIVE plan_node_id of the query of estate, or NULL */
RxReceiveState *
rx_receive_keyed_find(EState *estate, int plan_node_id)
{
	ListCell   *lc;

	foreach(lc, keyed_receives)
	{
		KeyedEntry *e = lfirst(lc);

		if (e->estate == estate && e->plan_node_id == plan_node_id)
			return e->receive;
	}
	return NULL;
}

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
	k->nmembers = rx_get_members(&k->members);
	k->self = rx_self_member_index();
	k->what = psprintf("keyed lookup of exchange %d failed",
					   r->info.exchange_id);
	get_typlenbyval(exprType((Node *) r->info.keyed_value), &k->key_len,
					&k->key_byval);
	/* reset by every lookup or batch: a rescan may run millions of times */
	k->batch.cxt = AllocSetContextCreate(CurrentMemoryContext,
										 "rdma_exchange keyed batch",
										 ALLOCSET_DEFAULT_SIZES);
	k->batch.current = -1;
	register_keyed(r, estate);
}

/* is the RECEIVE reading by key now (not gathering)? */
bool
rx_receive_keyed_active(RxReceiveState *r)
{
	return r->keyed != NULL && !r->keyed->gathering;
}

/*
 * A lookup on this member, in this backend, its rows into *rows (in the
 * batch's memory).  It runs in the query's memory context: the index scan
 * opens its scan descriptor there.
 */
static void
run_here(RxReceiveState *r, List **rows)
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
			MemoryContext old;

			CHECK_FOR_INTERRUPTS();
			slot = ExecProcNode(k->fragment);
			if (TupIsNull(slot))
				break;
			old = MemoryContextSwitchTo(k->batch.cxt);
			*rows = lappend(*rows, ExecCopySlotHeapTuple(slot));
			MemoryContextSwitchTo(old);
		}
	}
	PG_FINALLY();
	{
		estate->es_snapshot = saved;
	}
	PG_END_TRY();
	k->local++;
}

/* ---------------------------------------------------------------------
 * Batches of lookups (lookahead.c makes them)
 * ---------------------------------------------------------------------
 */

/* a new batch; the last one's rows go */
void
rx_receive_keyed_batch_start(RxReceiveState *r, int maxsets)
{
	KeyedBatch *b = &r->keyed->batch;

	MemoryContextReset(b->cxt);
	b->nsets = 0;
	b->maxsets = maxsets;
	b->current = -1;
	b->keys = MemoryContextAlloc(b->cxt, sizeof(Datum) * maxsets);
	b->key_nulls = MemoryContextAlloc(b->cxt, sizeof(bool) * maxsets);
	b->owners = MemoryContextAlloc(b->cxt, sizeof(int) * maxsets);
	b->values = MemoryContextAllocZero(b->cxt, sizeof(List *) * maxsets);
	b->rows = MemoryContextAllocZero(b->cxt, sizeof(List *) * maxsets);
}

/* the lookup of the parameters' values now, as the batch's next */
void
rx_receive_keyed_batch_add(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;
	KeyedBatch *b = &k->batch;
	ExprContext *econtext = r->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	Datum		key;
	bool		isnull;
	int			n = b->nsets;

	if (n >= b->maxsets)
		elog(ERROR, "keyed batch of exchange %d is full", r->info.exchange_id);
	key = ExecEvalExprSwitchContext(k->value, econtext, &isnull);
	old = MemoryContextSwitchTo(b->cxt);
	b->key_nulls[n] = isnull;
	b->keys[n] = isnull ? (Datum) 0 : datumCopy(key, k->key_byval, k->key_len);
	/* a strict equality with NULL: no row (fallback.c checks strictness) */
	b->owners[n] = isnull ? -1
		: rx_member_of_key(r->info.keyed_relid,
						   exprType((Node *) r->info.keyed_value), key, false,
						   k->nmembers);
	if (!isnull)
		b->values[n] = rx_exec_param_values(econtext,
											linitial(((CustomScan *) r->css.ss.ps.plan)->custom_plans),
											r->css.ss.ps.state);
	MemoryContextSwitchTo(old);
	ResetExprContext(econtext);
	b->nsets++;
}

/* set the keyed fragment's parameters to the values of lookup n */
static void
set_lookup_values(RxReceiveState *r, int n)
{
	RxKeyed    *k = r->keyed;
	EState	   *estate = r->css.ss.ps.state;
	Plan	   *keyed = linitial(((CustomScan *) r->css.ss.ps.plan)->custom_plans);
	ListCell   *lc = list_head(k->batch.values[n]);
	int			paramid = -1;

	while ((paramid = bms_next_member(keyed->extParam, paramid)) >= 0)
	{
		ParamExecData *prm = &estate->es_param_exec_vals[paramid];
		Const	   *c;

		if (!OidIsValid(list_nth_oid(estate->es_plannedstmt->paramExecTypes, paramid)))
			continue;
		c = lfirst_node(Const, lc);
		lc = lnext(k->batch.values[n], lc);
		prm->execPlan = NULL;
		prm->value = c->constvalue;
		prm->isnull = c->constisnull;
		k->fragment->chgParam = bms_add_member(k->fragment->chgParam, paramid);
	}
}

/*
 * Run the batch: one message to each other member that owns some of its
 * keys, all sent before this member's lookups run here, then every
 * member's rows read back and filed by lookup.  A single lookup (a rescan
 * not fed by a LOOKAHEAD) runs as a batch of one: not batched.
 */
static void
run_lookups(RxReceiveState *r, bool batched)
{
	RxKeyed    *k = r->keyed;
	KeyedBatch *b = &k->batch;
	EState	   *estate = r->css.ss.ps.state;
	Plan	   *keyed = linitial(((CustomScan *) r->css.ss.ps.plan)->custom_plans);
	int			natts = k->text_slot->tts_tupleDescriptor->natts;
	List	   *member_sets[RX_MAX_MEMBERS] = {0};	/* lookups (int) by member */
	PGconn	   *conns[RX_MAX_MEMBERS] = {0};
	bool		in_xact[RX_MAX_MEMBERS] = {0};
	List	   *snapshots = rx_consistent_reads ? rx_cluster_snapshot(estate) : NIL;
	MemoryContext old = MemoryContextSwitchTo(b->cxt);

	for (int n = 0; n < b->nsets; n++)
		if (b->owners[n] >= 0)
			member_sets[b->owners[n]] = lappend_int(member_sets[b->owners[n]], n);

	PG_TRY();
	{
		for (int m = 0; m < k->nmembers; m++)
		{
			List	   *sets = NIL;
			ListCell   *lc;

			if (m == k->self || member_sets[m] == NIL)
				continue;
			foreach(lc, member_sets[m])
				sets = lappend(sets, b->values[lfirst_int(lc)]);
			conns[m] = rx_direct_conn(&k->members[m], estate, &in_xact[m]);
			rx_direct_send(conns[m], k->members[m].name, !in_xact[m],
						   rx_direct_message(keyed, estate, snapshots,
											 r->css.ss.ps.ps_ExprContext, sets),
						   natts + 1);
			if (batched)
			{
				k->messages++;
				k->spent += 1 + (double) list_length(sets) / RX_KEYS_PER_ROUND_TRIP;
			}
			else
			{
				k->remote++;
				k->spent += 1;
			}
		}

		/*
		 * This member's lookups meanwhile, in the query's context.  They
		 * set the parameters to each lookup's values; those the plan above
		 * set (a correlated subquery's outer value) get theirs back after.
		 */
		if (member_sets[k->self] != NIL && !batched)
		{
			/* a single lookup: the parameters hold its values */
			MemoryContextSwitchTo(old);
			run_here(r, &b->rows[0]);
			MemoryContextSwitchTo(b->cxt);
		}
		else if (member_sets[k->self] != NIL)
		{
			int			nparams = list_length(estate->es_plannedstmt->paramExecTypes);
			ParamExecData *saved = palloc(sizeof(ParamExecData) * Max(nparams, 1));
			int			paramid = -1;
			ListCell   *lc;

			while ((paramid = bms_next_member(keyed->extParam, paramid)) >= 0)
				saved[paramid] = estate->es_param_exec_vals[paramid];
			MemoryContextSwitchTo(old);
			foreach(lc, member_sets[k->self])
			{
				int			n = lfirst_int(lc);

				set_lookup_values(r, n);
				run_here(r, &b->rows[n]);
			}
			MemoryContextSwitchTo(b->cxt);
			while ((paramid = bms_next_member(keyed->extParam, paramid)) >= 0)
				estate->es_param_exec_vals[paramid] = saved[paramid];
		}

		for (int m = 0; m < k->nmembers; m++)
		{
			if (conns[m] == NULL)
				continue;
			for (;;)
			{
				MemoryContext row_old = MemoryContextSwitchTo(k->row_cxt);
				char	   *report = NULL;
				int			set = -1;
				bool		found = rx_direct_next_row(conns[m], k->members[m].name,
													   k->text_rows, k->text_slot,
													   &report, k->what, &set);

				MemoryContextSwitchTo(row_old);
				if (report != NULL)
					rx_merge_direct_report(k->fragment, m, report);
				if (!found)
					break;
				if (set < 0 || set >= list_length(member_sets[m]))
					ereport(ERROR,
							(errcode(ERRCODE_PROTOCOL_VIOLATION),
							 errmsg("member \"%s\" returned a row of lookup %d of a batch of %d",
									k->members[m].name, set, list_length(member_sets[m]))));
				set = list_nth_int(member_sets[m], set);
				b->rows[set] = lappend(b->rows[set],
									   ExecCopySlotHeapTuple(k->text_slot));
				MemoryContextReset(k->row_cxt);
			}
			rx_direct_conn_done(conns[m], in_xact[m]);
			conns[m] = NULL;
		}
	}
	PG_FINALLY();
	{
		/* a failure: what was sent is cancelled and closed (remote.c) */
		MemoryContextSwitchTo(old);
	}
	PG_END_TRY();
	if (batched)
		k->batched += b->nsets;
	else if (k->spent >= r->info.keyed_remote_max)
		k->switch_pending = true;
}

void
rx_receive_keyed_batch_run(RxReceiveState *r)
{
	run_lookups(r, true);
}

/*
 * May the LOOKAHEAD make another batch?  Not once the RECEIVE gathers;
 * nor once lookups have cost what gathering costs: then the next rescan
 * switches to gathering (the batch before is read first).
 */
bool
rx_receive_keyed_batching(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;

	if (!rx_receive_keyed_active(r) || k->switch_pending)
		return false;
	if (k->spent >= r->info.keyed_remote_max)
	{
		k->switch_pending = true;
		return false;
	}
	return true;
}

/* the next rescan reads lookup n of the batch */
void
rx_receive_keyed_batch_select(RxReceiveState *r, int n)
{
	r->keyed->batch.current = n;
}

/* the rows of the batch's lookup n into k->rows */
static void
take_rows(RxReceiveState *r, int n)
{
	RxKeyed    *k = r->keyed;
	ListCell   *lc;

	foreach(lc, k->batch.rows[n])
		tuplestore_puttuple(k->rows, (HeapTuple) lfirst(lc));
}

/*
 * Is the batch's current lookup (the LOOKAHEAD's row the loop just took)
 * the one for this key?
 */
static bool
current_in_batch(RxReceiveState *r, Datum key, bool isnull)
{
	RxKeyed    *k = r->keyed;
	KeyedBatch *b = &k->batch;
	int			n = b->current;

	b->current = -1;
	return n >= 0 && n < b->nsets && b->key_nulls[n] == isnull &&
		(isnull || datumIsEqual(key, b->keys[n], k->key_byval, k->key_len));
}

/* the current lookup's next row into r->recv_slot, or NULL */
TupleTableSlot *
rx_receive_keyed_next(RxReceiveState *r)
{
	RxKeyed    *k = r->keyed;

	if (!k->ran)
	{
		ExprContext *econtext = r->css.ss.ps.ps_ExprContext;
		bool		isnull = true;
		Datum		value = (Datum) 0;
		int			n;

		k->ran = true;
		n = k->batch.current;
		if (n >= 0)
			value = ExecEvalExprSwitchContext(k->value, econtext, &isnull);
		if (n >= 0 && current_in_batch(r, value, isnull))
			take_rows(r, n);
		else
		{
			/* this key alone: a batch of one */
			rx_receive_keyed_batch_start(r, 1);
			rx_receive_keyed_batch_add(r);
			/* a strict equality with NULL: no row (fallback.c checks strictness) */
			if (k->batch.owners[0] >= 0)
			{
				run_lookups(r, false);
				take_rows(r, 0);
			}
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
		k->gathering = true;
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
		if (k->batched > 0)
		{
			ExplainPropertyInteger("Lookups in Batches", NULL, (int64) k->batched, es);
			ExplainPropertyInteger("Batch Messages", NULL, (int64) k->messages, es);
		}
		if (k->gathering)
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
