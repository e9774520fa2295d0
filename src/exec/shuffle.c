/*-------------------------------------------------------------------------
 *
 * shuffle.c
 *	  The SHUFFLE executor node: pulls its child and routes every row.
 *
 * Routes: hash (the member owning hash(key), see cluster/hashing.h),
 * broadcast (every member), coordinator (the gather RECEIVE).  A row for
 * this member never touches the transport: SHUFFLE returns it to its
 * parent, the RECEIVE of the same exchange, which returns it as it is.
 * Rows for other members are flattened (no TOAST pointers leave the
 * server) and framed into registered pool buffers by the hub.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "cluster/dispatch.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "transport/transport.h"

static Node *shuffle_create_state(CustomScan *cscan);
static void shuffle_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *shuffle_exec(CustomScanState *node);
static void shuffle_end(CustomScanState *node);
static void shuffle_rescan(CustomScanState *node);
static void shuffle_explain(CustomScanState *node, List *ancestors,
							ExplainState *es);

CustomScanMethods rx_shuffle_plan_methods = {
	RX_SHUFFLE_NAME,
	shuffle_create_state
};

static CustomExecMethods shuffle_exec_methods = {
	.CustomName = RX_SHUFFLE_NAME,
	.BeginCustomScan = shuffle_begin,
	.ExecCustomScan = shuffle_exec,
	.EndCustomScan = shuffle_end,
	.ReScanCustomScan = shuffle_rescan,
	.ExplainCustomScan = shuffle_explain
};

static Node *
shuffle_create_state(CustomScan *cscan)
{
	RxShuffleState *s = palloc0(sizeof(RxShuffleState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &shuffle_exec_methods;
	rx_shuffle_info(cscan, &s->info);
	return (Node *) s;
}

static void
shuffle_begin(CustomScanState *node, EState *estate, int eflags)
{
	RxShuffleState *s = (RxShuffleState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	ListCell   *lc;
	int			i = 0;

	rx_exchange_slots_vary(node);

	/* the child runs once, front to back: it is never rescanned */
	outerPlanState(s) = ExecInitNode(outerPlan(cscan), estate,
									 eflags & ~(EXEC_FLAG_REWIND |
												EXEC_FLAG_BACKWARD |
												EXEC_FLAG_MARK));

	s->nkeys = list_length(cscan->custom_exprs);
	s->keys = palloc0(sizeof(ExprState *) * (s->nkeys + 1));
	s->hashfns = palloc0(sizeof(FmgrInfo) * (s->nkeys + 1));
	foreach(lc, cscan->custom_exprs)
	{
		s->keys[i] = ExecInitExpr((Expr *) lfirst(lc), &node->ss.ps);
		fmgr_info(list_nth_oid(s->info.hash_funcs, i), &s->hashfns[i]);
		i++;
	}

	/* a LIMIT above the gather: a Sort below may keep only the top rows */
	if (s->info.tuples_needed >= 0)
		ExecSetTupleBound(s->info.tuples_needed, outerPlanState(s));

	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		s->hub = rx_fragment_hub();
}

/*
 * The row as bytes another server can read: external and compressed-in-
 * another-table TOAST pointers and expanded objects are flattened.
 */
static MinimalTuple
shuffle_flat_tuple(TupleTableSlot *slot, bool *should_free)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	bool		external = false;
	Datum	   *values;

	slot_getallattrs(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attlen == -1 && !slot->tts_isnull[i] &&
			VARATT_IS_EXTERNAL(DatumGetPointer(slot->tts_values[i])))
		{
			external = true;
			break;
		}
	}
	if (!external)
		return ExecFetchSlotMinimalTuple(slot, should_free);

	values = palloc(sizeof(Datum) * desc->natts);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		values[i] = slot->tts_values[i];
		if (att->attlen == -1 && !slot->tts_isnull[i] &&
			VARATT_IS_EXTERNAL(DatumGetPointer(values[i])))
			values[i] = PointerGetDatum(detoast_external_attr((struct varlena *)
															  DatumGetPointer(values[i])));
	}
	*should_free = true;
	return heap_form_minimal_tuple(desc, values, slot->tts_isnull);
}

static int
shuffle_member_for(RxShuffleState *s, TupleTableSlot *slot, int nmembers)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	uint32		hash = 0;

	if (nmembers == 1)
		return 0;				/* the one member owns every hash */
	ResetExprContext(econtext);
	econtext->ecxt_outertuple = slot;
	for (int i = 0; i < s->nkeys; i++)
	{
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(s->keys[i], econtext, &isnull);
		uint32		h = 0;

		if (!isnull)
			h = DatumGetUInt32(FunctionCall1Coll(&s->hashfns[i],
												 list_nth_oid(s->info.collations, i),
												 value));
		/* one key (always the case for table distribution) maps as is */
		hash = (i == 0) ? h : hash_combine(hash, h);
	}
	return rx_member_for_hash(hash, nmembers);
}

static void
shuffle_send(RxShuffleState *s, TupleTableSlot *slot, int dest)
{
	bool		should_free;
	MinimalTuple tup = shuffle_flat_tuple(slot, &should_free);

	rx_hub_send_tuple(s->hub, s->info.exchange_id, dest, tup);
	if (should_free)
		pfree(tup);
}

/*
 * End this SHUFFLE's streams; early: the consumer needs no more rows.
 * The fragment's own SHUFFLE to the coordinator then finishes the rest of
 * the fragment (rx_receive_finish_fragment()) while the plan still runs:
 * once its top node returns no row, the executor shuts the plan down, and
 * a Gather of this member's parallel workers below another SHUFFLE could
 * not run on after that.
 */
static void
shuffle_finish(RxShuffleState *s, bool early)
{
	int			self = rx_hub_self(s->hub);
	int			n = rx_hub_nmembers(s->hub);

	if (s->info.route == RX_ROUTE_COORDINATOR)
		rx_hub_send_eos(s->hub, s->info.exchange_id, rx_fragment_coordinator());
	else if (s->info.route == RX_ROUTE_BROADCAST && n > 1)
		rx_hub_send_eos(s->hub, s->info.exchange_id, RX_BROADCAST);
	else
		for (int d = 0; d < n; d++)
			if (d != self)
				rx_hub_send_eos(s->hub, s->info.exchange_id, d);
	s->done = true;
	s->ended_early = early;
	if (&s->css.ss.ps == rx_fragment_planstate())
		rx_receive_finish_fragment(&s->css.ss.ps);
}

static TupleTableSlot *
shuffle_exec(CustomScanState *node)
{
	RxShuffleState *s = (RxShuffleState *) node;
	PlanState  *child = outerPlanState(s);
	int			self;
	int			n;

	if (s->done)
		return NULL;
	if (s->hub == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("SHUFFLE of exchange %d executed outside a plan fragment",
						s->info.exchange_id)));
	self = rx_hub_self(s->hub);
	n = rx_hub_nmembers(s->hub);

	/* replicated input: one member sends it, the others only end */
	if (s->info.single_sender >= 0 && self != s->info.single_sender)
	{
		shuffle_finish(s, false);
		return NULL;
	}

	for (;;)
	{
		TupleTableSlot *slot;
		int			dest;

		CHECK_FOR_INTERRUPTS();
		if (rx_hub_stopped(s->hub))
		{
			/* the consumer needs no more rows: end without reading on */
			shuffle_finish(s, true);
			return NULL;
		}
		if (s->info.tuples_needed >= 0 && s->nsent >= s->info.tuples_needed)
		{
			/* the coordinator's LIMIT is satisfied by these rows */
			shuffle_finish(s, true);
			return NULL;
		}
		slot = ExecProcNode(child);
		if (TupIsNull(slot))
		{
			shuffle_finish(s, false);
			return NULL;
		}
		switch (s->info.route)
		{
			case RX_ROUTE_COORDINATOR:
				shuffle_send(s, slot, rx_fragment_coordinator());
				s->nsent++;
				break;
			case RX_ROUTE_HASH:
				dest = shuffle_member_for(s, slot, n);
				if (dest == self)
					return slot;
				shuffle_send(s, slot, dest);
				break;
			case RX_ROUTE_BROADCAST:
				if (n > 1)
					shuffle_send(s, slot, RX_BROADCAST);
				return slot;
		}
	}
}

static void
shuffle_end(CustomScanState *node)
{
	ExecEndNode(outerPlanState(node));
}

static void
shuffle_rescan(CustomScanState *node)
{
	RxShuffleState *s = (RxShuffleState *) node;

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("SHUFFLE of exchange %d cannot be rescanned",
					s->info.exchange_id)));
}

static void
shuffle_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	RxShuffleState *s = (RxShuffleState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	StringInfoData buf;

	initStringInfo(&buf);
	switch (s->info.route)
	{
		case RX_ROUTE_HASH:
			{
				List	   *context;
				ListCell   *lc;

				context = set_deparse_context_plan(es->deparse_cxt,
												   (Plan *) cscan, ancestors);
				appendStringInfoString(&buf, "hash (");
				foreach(lc, cscan->custom_exprs)
				{
					if (lc != list_head(cscan->custom_exprs))
						appendStringInfoString(&buf, ", ");
					appendStringInfoString(&buf,
										   deparse_expression(lfirst(lc), context,
															  false, false));
				}
				appendStringInfoChar(&buf, ')');
				break;
			}
		case RX_ROUTE_BROADCAST:
			appendStringInfoString(&buf, "broadcast");
			break;
		case RX_ROUTE_COORDINATOR:
			appendStringInfoString(&buf, "coordinator");
			break;
	}
	ExplainPropertyInteger("Exchange", NULL, s->info.exchange_id, es);
	ExplainPropertyText("Route", buf.data, es);
	if (s->info.single_sender >= 0)
		ExplainPropertyInteger("Only Sender", NULL, s->info.single_sender, es);
	if (s->info.tuples_needed >= 0)
		ExplainPropertyInteger("Rows Needed", NULL, s->info.tuples_needed, es);
	if (es->analyze)
		rx_explain_member_stats(&s->stats, true, false, es);
	if (es->analyze && es->verbose)
		rx_explain_member_processes(&s->stats, es);
}

void
rx_shuffle_register(void)
{
	RegisterCustomScanMethods(&rx_shuffle_plan_methods);
}
