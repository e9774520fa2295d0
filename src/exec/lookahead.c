/*-------------------------------------------------------------------------
 *
 * lookahead.c
 *	  The LOOKAHEAD plan node: reads a nested loop's outer rows ahead so
 *	  that the keyed RECEIVE on its inner side looks their keys up in
 *	  batches, one message per member instead of one round trip per row.
 *
 * A nested loop over a keyed RECEIVE (receive_keyed.c: the inner side is
 * an index scan of a distributed table on its distribution column) asks
 * for one key at a time: each outer row sets the loop's parameters and
 * rescans the inner side, and a key on another member costs a round trip
 * (0.2 ms on loopback).  Twenty orders joined to their customers took 20
 * round trips.  The LOOKAHEAD sits between the loop and its outer side
 * and passes the outer rows through unchanged, but reads them ahead: up
 * to a batch of rows, for each of which it sets the loop's parameters (the
 * loop's own nestParams, evaluated on the row as the loop will) and adds
 * the lookup to the RECEIVE's batch.  The batch runs (one message to each
 * member that owns some of the keys, all sent before any reply is read,
 * and this member's keys here), then the rows go up one by one; as the
 * loop takes row n and rescans the inner side, the RECEIVE returns lookup
 * n's rows from the batch.
 *
 * Batches grow from LOOKAHEAD_FIRST to LOOKAHEAD_MAX rows, so a loop under
 * a LIMIT reads little ahead; the first is as large as the planner expects
 * the outer side to be (half again, for a low estimate), up to four times
 * LOOKAHEAD_FIRST, so that a few dozen rows cost one batch, not two.  The
 * planner puts a LOOKAHEAD only over an outer side whose extra rows are
 * harmless to read (no volatile functions, no row locks: fallback.c),
 * since the loop may stop before it needs them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "utils/memutils.h"

#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "planner/planner.h"

#define LOOKAHEAD_NAME "LOOKAHEAD"
#define LOOKAHEAD_FIRST 16
#define LOOKAHEAD_MAX 1024

typedef struct LookaheadState
{
	CustomScanState css;
	PlanState  *child;
	int			receive_id;		/* the keyed RECEIVE's plan node id */
	RxReceiveState *receive;	/* found at the first row; NULL: none */
	bool		looked;			/* for it */
	List	   *param_ids;		/* the loop's parameters (int) */
	List	   *param_values;	/* ... their values on an outer row */

	MemoryContext cxt;			/* the rows read ahead */
	MinimalTuple *rows;
	int			nrows;
	int			next;			/* the next to return */
	bool		batched;		/* the rows' lookups are in a batch */
	int			batch_size;		/* rows to read ahead next time */
	bool		child_done;
	TupleTableSlot *out;		/* a row, as the loop reads it */

	uint64		batches;		/* for EXPLAIN ANALYZE */
	uint64		lookups;
} LookaheadState;

/* the first batch's size: see the banner */
static int
first_batch(Plan *plan)
{
	double		rows = ceil(plan->plan_rows * 1.5);

	return (int) Max(LOOKAHEAD_FIRST, Min(rows, LOOKAHEAD_FIRST * 4));
}

static CustomScanMethods lookahead_plan_methods;
static CustomExecMethods lookahead_exec_methods;

/*
 * The node over outer, for the RECEIVE receive_id of the nested loop
 * whose parameters (NestLoopParams) are nest_params
 */
Plan *
rx_lookahead_node(Plan *outer, int receive_id, List *nest_params, int node_id)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *plan = &cscan->scan.plan;
	List	   *ids = NIL;
	List	   *values = NIL;
	ListCell   *lc;

	plan->startup_cost = outer->startup_cost;
	plan->total_cost = outer->total_cost;
	plan->plan_rows = outer->plan_rows;
	plan->plan_width = outer->plan_width;
	plan->parallel_safe = false;
	plan->plan_node_id = node_id;
	plan->extParam = bms_copy(outer->extParam);
	plan->allParam = bms_copy(outer->allParam);
	cscan->custom_scan_tlist = rx_column_tlist(outer->targetlist, OUTER_VAR);
	plan->targetlist = rx_column_tlist(outer->targetlist, INDEX_VAR);
	cscan->scan.scanrelid = 0;
	cscan->custom_plans = list_make1(outer);
	/* for EXPLAIN VERBOSE: the tlist's OUTER_VARs name the outer side's columns */
	plan->lefttree = outer;
	foreach(lc, nest_params)
	{
		NestLoopParam *nlp = lfirst_node(NestLoopParam, lc);

		ids = lappend_int(ids, nlp->paramno);
		values = lappend(values, copyObject(nlp->paramval));
	}
	/* the values are Vars of the outer row (OUTER_VAR), as the loop has them */
	cscan->custom_exprs = values;
	cscan->custom_private = list_make2(ids, makeInteger(receive_id));
	cscan->methods = &lookahead_plan_methods;
	return plan;
}

bool
rx_is_lookahead(Plan *plan)
{
	return IsA(plan, CustomScan) &&
		((CustomScan *) plan)->methods == &lookahead_plan_methods;
}

static Node *
lookahead_create_state(CustomScan *cscan)
{
	LookaheadState *st = palloc0(sizeof(LookaheadState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &lookahead_exec_methods;
	st->param_ids = linitial(cscan->custom_private);
	st->receive_id = intVal(lsecond(cscan->custom_private));
	return (Node *) st;
}

static void
lookahead_begin(CustomScanState *node, EState *estate, int eflags)
{
	LookaheadState *st = (LookaheadState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	ListCell   *lc;

	/* rows go up in a minimal-tuple slot: see rx_exchange_slots_vary() */
	rx_exchange_slots_vary(node);
	st->child = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(st->child);
	foreach(lc, cscan->custom_exprs)
		st->param_values = lappend(st->param_values,
								   ExecInitExpr(lfirst(lc), &node->ss.ps));
	st->cxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange lookahead",
									ALLOCSET_DEFAULT_SIZES);
	st->out = ExecInitExtraTupleSlot(estate, ExecGetResultType(st->child),
									 &TTSOpsMinimalTuple);
	st->batch_size = first_batch(node->ss.ps.plan);
}

/*
 * The lookups of the rows read ahead, as a batch of the RECEIVE's: each
 * row sets the loop's parameters as the loop will set them
 */
static void
make_batch(LookaheadState *st)
{
	EState	   *estate = st->css.ss.ps.state;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	rx_receive_keyed_batch_start(st->receive, st->nrows);
	for (int n = 0; n < st->nrows; n++)
	{
		ListCell   *a,
				   *b;

		ExecStoreMinimalTuple(st->rows[n], st->out, false);
		econtext->ecxt_outertuple = st->out;
		forboth(a, st->param_ids, b, st->param_values)
		{
			ParamExecData *prm = &estate->es_param_exec_vals[lfirst_int(a)];

			prm->value = ExecEvalExprSwitchContext(lfirst(b), econtext, &prm->isnull);
		}
		rx_receive_keyed_batch_add(st->receive);
		ResetExprContext(econtext);
	}
	ExecClearTuple(st->out);
	rx_receive_keyed_batch_run(st->receive);
	st->batched = true;
	st->batches++;
	st->lookups += st->nrows;
}

/* read the next rows ahead; false at the end of the outer side */
static bool
read_ahead(LookaheadState *st)
{
	MemoryContext old;

	ExecClearTuple(st->out);
	MemoryContextReset(st->cxt);
	st->nrows = 0;
	st->next = 0;
	st->batched = false;
	if (st->child_done)
		return false;
	if (!st->looked)
	{
		st->receive = rx_receive_keyed_find(st->css.ss.ps.state, st->receive_id);
		st->looked = true;
	}
	st->rows = MemoryContextAlloc(st->cxt, sizeof(MinimalTuple) * st->batch_size);
	while (st->nrows < st->batch_size)
	{
		TupleTableSlot *slot;

		CHECK_FOR_INTERRUPTS();
		slot = ExecProcNode(st->child);
		if (TupIsNull(slot))
		{
			st->child_done = true;
			break;
		}
		old = MemoryContextSwitchTo(st->cxt);
		st->rows[st->nrows++] = ExecCopySlotMinimalTuple(slot);
		MemoryContextSwitchTo(old);
	}
	st->batch_size = Min(st->batch_size * 4, LOOKAHEAD_MAX);
	if (st->nrows > 0 && st->receive != NULL &&
		rx_receive_keyed_batching(st->receive))
		make_batch(st);
	return st->nrows > 0;
}

static TupleTableSlot *
lookahead_exec(CustomScanState *node)
{
	LookaheadState *st = (LookaheadState *) node;
	int			n;

	if (st->next >= st->nrows && !read_ahead(st))
		return ExecClearTuple(st->out);
	n = st->next++;
	if (st->batched)
		rx_receive_keyed_batch_select(st->receive, n);
	return ExecStoreMinimalTuple(st->rows[n], st->out, false);
}

static void
lookahead_end(CustomScanState *node)
{
	LookaheadState *st = (LookaheadState *) node;

	ExecEndNode(st->child);
}

static void
lookahead_rescan(CustomScanState *node)
{
	LookaheadState *st = (LookaheadState *) node;

	ExecClearTuple(st->out);
	MemoryContextReset(st->cxt);
	st->nrows = 0;
	st->next = 0;
	st->batched = false;
	st->child_done = false;
	st->batch_size = first_batch(node->ss.ps.plan);
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(st->child, node->ss.ps.chgParam);
	ExecReScan(st->child);
}

static void
lookahead_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	LookaheadState *st = (LookaheadState *) node;

	ExplainPropertyText("Reads Ahead",
						psprintf("up to %d rows, for the keyed lookups of exchange %d",
								 LOOKAHEAD_MAX, st->receive_id), es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Batches", NULL, (int64) st->batches, es);
		ExplainPropertyInteger("Batched Rows", NULL, (int64) st->lookups, es);
	}
}

static CustomScanMethods lookahead_plan_methods = {
	LOOKAHEAD_NAME,
	lookahead_create_state
};

static CustomExecMethods lookahead_exec_methods = {
	.CustomName = LOOKAHEAD_NAME,
	.BeginCustomScan = lookahead_begin,
	.ExecCustomScan = lookahead_exec,
	.EndCustomScan = lookahead_end,
	.ReScanCustomScan = lookahead_rescan,
	.ExplainCustomScan = lookahead_explain
};

void
rx_lookahead_init(void)
{
	RegisterCustomScanMethods(&lookahead_plan_methods);
}
