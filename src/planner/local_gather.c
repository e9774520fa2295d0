/*-------------------------------------------------------------------------
 *
 * local_gather.c
 *	  Parallel workers inside each member: a Gather in a fragment, over the
 *	  part of it PostgreSQL planned as partial.
 *
 * The parallel plan this planner starts from is a plan for many
 * participants already: each partial scan of a distributed table was given
 * as many workers as the members have processes for it, members x
 * (rdma_exchange.workers_per_member + 1), so that PostgreSQL costs each
 * member's share as run by that many processes and picks the plan that
 * suits it; each member runs the partial part on its own rows.  A partial
 * plan is correct for any number of participants, so a member can split
 * its part among parallel workers of its own, as PostgreSQL runs any
 * partial plan: a Gather over it, its
 * scans parallel-aware (each worker reads a share of the member's rows), a
 * Parallel Hash shared by the member's workers.  The exchanges stay the
 * member's: a Gather sits below the exchange that sends, which sends what
 * all of the member's workers produced, and a RECEIVE under a Gather is
 * read by the fragment's backend, which hands its rows out to the workers
 * (exec/receive_shared.c); the streams grow with the members, not with
 * their workers (one multiplexer per server, as in HyPer).
 *
 * Which part is partial is read from the placed plan, whose nodes keep
 * PostgreSQL's parallel_aware (locus.c): a parallel-aware scan is partial,
 * and so is a RECEIVE that brings what PostgreSQL planned as partial (its
 * SHUFFLE's part is);
 * a join is when its outer side is and its inner side is whole, or both
 * are under a Parallel Hash; a partial aggregate step, a sort, a hash, a
 * projection are when their input is; a Parallel Append is, and another
 * Append when all its inputs are.  A partial subtree whose consumer needs
 * all of the member's rows (the exchange that sends, a complete aggregate,
 * the inner side of a join) gets a Gather, below a sort or hash it starts
 * with, and the RECEIVEs in it are shared by the Gather's workers, their
 * SHUFFLEs' parts run by its leader alone (share_receives()); one with
 * any other exchange inside, with parameters from above, with anything
 * PostgreSQL marked parallel-restricted, or below a node that needs its
 * order (a merge join, a sorted aggregate, a Merge Append: a Gather mixes
 * its workers' orders) stays serial.  Whatever
 * is not under a Gather runs serially on the member and is made so
 * (parallel_aware off).
 *
 * How many workers: rdma_exchange.workers_per_member (-1, the default:
 * max_parallel_workers_per_gather), fewer for a small share as PostgreSQL
 * chooses for a table that size (none below min_parallel_table_scan_size,
 * one more for each tripling), and none where they would save less than
 * parallel_setup_cost and parallel_tuple_cost take, so small queries stay
 * serial.  The share is the size of the largest partial scan's table
 * here: this server's part of a distributed table is what each member
 * holds.
 *
 * Row estimates: a partial node's rows are one participant's; before the
 * plan is placed they are made one member's (rx_rows_per_member), as
 * placement, the exchanges' estimates and EXPLAIN read them, and as they
 * were when a member was one participant.
 *
 * Costs: PostgreSQL costed every partial node as shared by the member's
 * processes, but only the parts under a member's Gather are; a join or
 * aggregate above a RECEIVE that gets no Gather (too little work, an
 * order to keep) and the part a shared RECEIVE's SHUFFLE sends run in the
 * fragment backend alone.  After
 * placement, rx_member_cost_error() sums what that misses, and the
 * planner weighs a plan for one process per member against it
 * (planner.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "postmaster/bgworker_internals.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "exec/exchange.h"
#include "planner/planner.h"

int			rx_workers_per_member = -1;

/* workers each member may use for a query's share, as set */
static int
workers_setting(void)
{
	return Max(rx_workers_per_member >= 0 ? rx_workers_per_member
			   : max_parallel_workers_per_gather, 0);
}

/*
 * The processes of one member the planner costs a share for: its workers
 * and the fragment's own backend (a Gather's leader runs the plan too)
 */
int
rx_member_participants(void)
{
	return Min(workers_setting(), MAX_PARALLEL_WORKER_LIMIT - 1) + 1;
}

/* the largest table a parallel-aware scan below plan reads, in blocks */
static BlockNumber
largest_partial_scan(RxPlanContext *ctx, Plan *plan)
{
	BlockNumber largest = 0;
	ListCell   *lc;

	if (plan == NULL)
		return 0;
	check_stack_depth();
	/* a RECEIVE the workers may share: what it brings, in blocks */
	if (list_member_ptr(ctx->share_candidates, plan))
		return (BlockNumber) Min(plan->plan_rows * plan->plan_width / BLCKSZ,
								 (double) MaxBlockNumber);
	if (plan->parallel_aware && rx_is_relation_scan(plan))
	{
		RangeTblEntry *rte = rt_fetch(((Scan *) plan)->scanrelid, ctx->stmt->rtable);

		if (rte->rtekind == RTE_RELATION)
		{
			Relation	rel = table_open(rte->relid, NoLock);

			largest = RelationGetNumberOfBlocks(rel);
			table_close(rel, NoLock);
		}
	}
	foreach(lc, rx_plan_children(plan))
		largest = Max(largest, largest_partial_scan(ctx, lfirst(lc)));
	return largest;
}

/*
 * As PostgreSQL's compute_parallel_worker() for a table of that size, and
 * none unless they save more than they cost: partial's cost is one
 * participant's, member_participants of which make the member's; the
 * workers take their share of that, against parallel_setup_cost and
 * parallel_tuple_cost for the member's rows, as PostgreSQL weighs a
 * Gather.
 */
static int
member_workers(RxPlanContext *ctx, Plan *partial)
{
	int			max = workers_setting();
	double		pages;
	double		threshold = Max(min_parallel_table_scan_size, 1);
	int			workers = 1;

	if (max <= 0)
		return 0;
	pages = largest_partial_scan(ctx, partial);
	if (pages < min_parallel_table_scan_size)
		return 0;
	while (pages >= threshold * 3 && workers < max)
	{
		workers++;
		threshold *= 3;
	}
	workers = Min(workers, max);
	if (partial->total_cost * ctx->member_participants * workers / (workers + 1) <=
		parallel_setup_cost + parallel_tuple_cost * partial->plan_rows)
		return 0;
	return workers;
}

/*
 * Whether a parallel worker may run plan: no exchange (only the fragment
 * backend has the port) but a RECEIVE the workers may share, whose rows
 * the backend hands them, nothing PostgreSQL marked parallel-restricted
 */
static bool
worker_may_run(RxPlanContext *ctx, Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return true;
	if (list_member_ptr(ctx->share_candidates, plan))
		return true;
	if (IsA(plan, CustomScan) || !plan->parallel_safe)
		return false;
	foreach(lc, rx_plan_children(plan))
		if (!worker_may_run(ctx, lfirst(lc)))
			return false;
	return true;
}

/* plan, and all below it, run by one process: no Gather, nothing parallel */
static Plan *
serial(RxPlanContext *ctx, Plan *plan)
{
	if (plan == NULL)
		return NULL;
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		return serial(ctx, plan->lefttree);
	plan->parallel_aware = false;
	rx_map_plan_children(ctx, plan, serial);
	return plan;
}

/*
 * The RECEIVEs in partial, which a Gather's workers will run, shared by
 * them (receive_shared.c): parallel-aware, and the part their SHUFFLEs
 * send run by the Gather's leader alone, serially (no Gather may run
 * inside another's workers; the exchange's rows are the member's anyway).
 *
 * Below a Parallel Hash (build_side) the leader keeps every row: while
 * the shared hash table is built, a participant that grows it waits for
 * every other one still reading its input to join in, which a worker
 * does only when it has a row to insert.  A worker waiting for the
 * leader's rows would never come, and the leader would wait for it
 * forever.  The workers' input ends once the leader reads its own
 * (receive_shared.c); they still probe in parallel.
 */
static void
share_receives(RxPlanContext *ctx, Plan *plan, bool build_side)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (list_member_ptr(ctx->share_candidates, plan))
	{
		plan->parallel_aware = true;
		if (build_side)
			rx_receive_set_leader_only((CustomScan *) plan);
		plan->lefttree->lefttree = serial(ctx, plan->lefttree->lefttree);
		return;
	}
	if (IsA(plan, Hash) && plan->parallel_aware)
		build_side = true;
	foreach(lc, rx_plan_children(plan))
		share_receives(ctx, lfirst(lc), build_side);
}

/*
 * A Gather over partial, a subtree whose consumer needs all the member's
 * rows; below the nodes that must stay right under their parent (a Hash
 * under its join) or whose order the consumer may need (a Sort).  Without
 * one (no workers for its size, an exchange inside, parameters from the
 * plan above) partial stays as it is, to run serially.
 */
static Plan *
gather_over(RxPlanContext *ctx, Plan *partial)
{
	Gather	   *g;
	int			workers;

	if (ctx->scaling_rows)
		return partial;
	switch (nodeTag(partial))
	{
		case T_Hash:
		case T_Sort:
		case T_IncrementalSort:
		case T_Material:
		case T_Memoize:
			partial->lefttree = gather_over(ctx, partial->lefttree);
			return partial;
		default:
			break;
	}
	if (rx_takes_values(partial, ctx->stmt->paramExecTypes) ||
		!worker_may_run(ctx, partial) ||
		(workers = member_workers(ctx, partial)) <= 0)
		return partial;
	share_receives(ctx, partial, false);

	g = makeNode(Gather);
	g->plan.targetlist = rx_passthrough_tlist(partial);
	g->plan.lefttree = partial;
	g->plan.startup_cost = partial->startup_cost;
	g->plan.total_cost = partial->total_cost;
	g->plan.plan_rows = partial->plan_rows;
	g->plan.plan_width = partial->plan_width;
	g->plan.plan_node_id = rx_new_node_id(ctx);
	g->plan.allParam = bms_copy(partial->allParam);
	g->num_workers = workers;
	g->rescan_param = -1;
	return &g->plan;
}

static Plan *local_gathers(RxPlanContext *ctx, Plan *plan, bool *partial);

/*
 * A RECEIVE of an exchange between members, read in arrival order, once,
 * right above its own SHUFFLE: one whose rows the workers of a Gather
 * above could share
 */
static bool
shareable(Plan *plan)
{
	RxReceiveInfo info;

	if (!rx_is_receive(plan) || plan->lefttree == NULL ||
		!rx_is_shuffle(plan->lefttree))
		return false;
	rx_receive_info((CustomScan *) plan, &info);
	return info.kind == RX_RECEIVE_SHUFFLE && info.nsortkeys == 0 &&
		!info.materialize && !info.fallback && info.nlookup == 0 &&
		info.keyed_value == NULL;
}

/* child, all of whose rows its parent needs */
static Plan *
whole(RxPlanContext *ctx, Plan *child)
{
	bool		partial;

	child = local_gathers(ctx, child, &partial);
	return partial ? gather_over(ctx, child) : child;
}

/*
 * Gathers over plan's partial subtrees whose consumer needs whole inputs;
 * *partial: plan's own rows are one participant's share, for its parent
 * to decide.
 */
static Plan *
partial_parts(RxPlanContext *ctx, Plan *plan, bool *partial)
{
	bool		outer = false;
	bool		inner = false;

	*partial = false;
	if (plan == NULL)
		return NULL;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
			*partial = plan->parallel_aware;
			return plan;

		case T_Hash:
		case T_Sort:
		case T_IncrementalSort:
		case T_Material:
		case T_Memoize:
		case T_ProjectSet:
			plan->lefttree = local_gathers(ctx, plan->lefttree, partial);
			return plan;
		case T_Result:
			if (plan->lefttree != NULL && plan->righttree == NULL)
				plan->lefttree = local_gathers(ctx, plan->lefttree, partial);
			return plan;
		case T_SubqueryScan:
			{
				SubqueryScan *ss = (SubqueryScan *) plan;

				ss->subplan = local_gathers(ctx, ss->subplan, partial);
				return plan;
			}

		case T_Agg:
			plan->lefttree = local_gathers(ctx, plan->lefttree, &outer);
			if (outer && ((Agg *) plan)->aggsplit == AGGSPLIT_INITIAL_SERIAL)
				*partial = true;
			else if (outer)
				plan->lefttree = gather_over(ctx, plan->lefttree);
			return plan;

		case T_HashJoin:
			{
				Plan	   *hash = plan->righttree;
				bool		shared = hash->parallel_aware;

				plan->lefttree = local_gathers(ctx, plan->lefttree, &outer);
				plan->righttree = local_gathers(ctx, hash, &inner);
				/* a Parallel Hash: both sides partial, or neither */
				if (outer && inner == shared)
				{
					*partial = true;
					return plan;
				}
				if (outer)
					plan->lefttree = gather_over(ctx, plan->lefttree);
				if (inner)
					plan->righttree = gather_over(ctx, plan->righttree);
				return plan;
			}
		case T_NestLoop:
		case T_MergeJoin:
			plan->lefttree = local_gathers(ctx, plan->lefttree, &outer);
			plan->righttree = whole(ctx, plan->righttree);
			*partial = outer;
			return plan;

		case T_Append:
			{
				List	   *inputs = ((Append *) plan)->appendplans;
				bool	   *p = palloc(sizeof(bool) * (list_length(inputs) + 1));
				int			npartial = 0;
				ListCell   *lc;

				foreach(lc, inputs)
				{
					lfirst(lc) = local_gathers(ctx, lfirst(lc), &p[foreach_current_index(lc)]);
					npartial += p[foreach_current_index(lc)];
				}
				/* a Parallel Append takes partial and whole inputs */
				if (plan->parallel_aware ||
					(npartial == list_length(inputs) && npartial > 0))
					*partial = true;
				else
					foreach(lc, inputs)
						if (p[foreach_current_index(lc)])
							lfirst(lc) = gather_over(ctx, lfirst(lc));
				pfree(p);
				return plan;
			}

		case T_MergeAppend:
			{
				ListCell   *lc;

				/*
				 * its inputs' order: a Gather would mix its workers', so
				 * partial ones stay serial
				 */
				foreach(lc, ((MergeAppend *) plan)->mergeplans)
				{
					bool		p;

					lfirst(lc) = local_gathers(ctx, lfirst(lc), &p);
				}
				return plan;
			}

		case T_CustomScan:
			if (shareable(plan))
			{
				Plan	   *shuffle = plan->lefttree;
				bool		below;

				/*
				 * PostgreSQL planned a partial input here, which the
				 * exchange brought: the workers of a Gather above may share
				 * its rows (share_receives()); what the SHUFFLE sends gets
				 * workers of its own until then
				 */
				shuffle->lefttree = local_gathers(ctx, shuffle->lefttree, &below);
				if (below)
				{
					shuffle->lefttree = gather_over(ctx, shuffle->lefttree);
					ctx->share_candidates = lappend(ctx->share_candidates, plan);
					*partial = true;
				}
				return plan;
			}
			rx_map_plan_children(ctx, plan, whole);
			return plan;

		default:
			/* every other node needs whole inputs: exchanges, Limit, ... */
			rx_map_plan_children(ctx, plan, whole);
			return plan;
	}
}

/*
 * partial_parts(), and while scaling rows, a partial node's rows made one
 * member's
 */
static Plan *
local_gathers(RxPlanContext *ctx, Plan *plan, bool *partial)
{
	plan = partial_parts(ctx, plan, partial);
	if (*partial && ctx->scaling_rows)
	{
		Cost		own = plan->total_cost;
		ListCell   *lc;

		foreach(lc, rx_plan_children(plan))
			own -= ((Plan *) lfirst(lc))->total_cost;
		/*
		 * not a scan's: PostgreSQL divides only its CPU among the
		 * participants, and one that runs without workers reads a share
		 * too small for them
		 */
		if (plan->plan_node_id >= 0 && plan->plan_node_id < ctx->npartial_cost &&
			!rx_is_relation_scan(plan))
			ctx->partial_cost[plan->plan_node_id] = Max(own, 0);
		plan->plan_rows *= ctx->member_participants;
	}
	return plan;
}

/*
 * Rows of the partial parts of plan, planned per participant, made one
 * member's: the parts under PostgreSQL's Gathers, before placement.  Notes
 * each partial node's own cost for rx_member_cost_error().
 */
void
rx_rows_per_member(RxPlanContext *ctx, Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	check_stack_depth();
	if (ctx->partial_cost == NULL)
	{
		ctx->npartial_cost = ctx->next_node_id;
		ctx->partial_cost = palloc(sizeof(double) * Max(ctx->npartial_cost, 1));
		for (int i = 0; i < ctx->npartial_cost; i++)
			ctx->partial_cost[i] = -1;
	}
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
	{
		ctx->scaling_rows = true;
		(void) whole(ctx, plan->lefttree);
		ctx->scaling_rows = false;
		return;
	}
	foreach(lc, rx_plan_children(plan))
		rx_rows_per_member(ctx, lfirst(lc));
}

/*
 * What PostgreSQL's cost of the plan misses about the members' processes,
 * walking the distributed plan: a node it planned as partial, costed for
 * one of member_participants processes per member, runs on a member with
 * a Gather's workers and leader where one is above it in the fragment,
 * else in the member's fragment backend alone (above a RECEIVE, in a part
 * that got no workers).  One that the placement could not put on the
 * members (planner.c's serial fallback: above every SHUFFLE) runs once,
 * on the coordinator, over every member's rows: planned for nmembers x
 * member_participants processes.  Each such node's own cost times
 * (planned / running processes - 1), summed: positive where the plan
 * counted on processes that do not run it, negative where workers take a
 * part planned for one process.
 */
static void
cost_error_walk(RxPlanContext *ctx, Plan *plan, int processes,
				bool in_fragment, double *error, Bitmapset **seen)
{
	ListCell   *lc;
	int			id;

	if (plan == NULL)
		return;
	check_stack_depth();
	if (rx_is_shuffle(plan))
		in_fragment = true;
	if (rx_is_receive(plan) && plan->parallel_aware)
		processes = 1;			/* its SHUFFLE's part: the leader's alone */
	if (IsA(plan, Gather))
		processes = ((Gather *) plan)->num_workers + 1;
	else if (IsA(plan, GatherMerge))
		processes = ((GatherMerge *) plan)->num_workers + 1;
	id = plan->plan_node_id;
	if (id >= 0 && id < ctx->npartial_cost && ctx->partial_cost[id] >= 0 &&
		!bms_is_member(id, *seen))
	{
		double		planned = ctx->member_participants *
			(in_fragment ? 1 : Max(ctx->nmembers, 1));

		*seen = bms_add_member(*seen, id);
		*error += ctx->partial_cost[id] * (planned / processes - 1);
	}
	foreach(lc, rx_plan_children(plan))
		cost_error_walk(ctx, lfirst(lc), processes, in_fragment, error, seen);
}

double
rx_member_cost_error(RxPlanContext *ctx, PlannedStmt *stmt)
{
	double		error = 0;
	Bitmapset  *seen = NULL;
	ListCell   *lc;

	if (ctx->partial_cost == NULL)
		return 0;
	cost_error_walk(ctx, stmt->planTree, 1, false, &error, &seen);
	foreach(lc, stmt->subplans)
		cost_error_walk(ctx, lfirst(lc), 1, false, &error, &seen);
	bms_free(seen);
	return error;
}

/*
 * The member's Gather at the top of a fragment whose rows the coordinator
 * merges in order (a Gather Merge's): made a Gather Merge on the same keys
 * where its workers' rows come in that order (PostgreSQL planned the part
 * below as ordered per participant, and no exchange came in between), so
 * that the member need not sort them all again.  Anything else is
 * returned as it is.
 */
Plan *
rx_ordered_member_gather(Plan *top, GatherMerge *order)
{
	Gather	   *g = (Gather *) top;
	GatherMerge *gm;

	/*
	 * not over a shared RECEIVE: a Gather Merge waits for a row of every
	 * worker before it runs its own part, which moves the RECEIVE's rows
	 */
	if (!IsA(top, Gather) || rx_order_crosses_exchange(top->lefttree) ||
		rx_plan_shares_receive(top->lefttree))
		return top;
	gm = makeNode(GatherMerge);
	gm->plan = g->plan;
	NodeSetTag(gm, T_GatherMerge);
	gm->num_workers = g->num_workers;
	gm->rescan_param = -1;
	gm->numCols = order->numCols;
	gm->sortColIdx = palloc_array_copy(order->sortColIdx, order->numCols);
	gm->sortOperators = palloc_array_copy(order->sortOperators, order->numCols);
	gm->collations = palloc_array_copy(order->collations, order->numCols);
	gm->nullsFirst = palloc_array_copy(order->nullsFirst, order->numCols);
	return &gm->plan;
}

/* parallel_aware off everywhere but under a Gather */
static void
serial_outside_gathers(Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL || IsA(plan, Gather) || IsA(plan, GatherMerge))
		return;
	check_stack_depth();
	plan->parallel_aware = false;
	foreach(lc, rx_plan_children(plan))
		serial_outside_gathers(lfirst(lc));
}

/*
 * The member's Gather (Merge) at the top of a fragment that need send
 * only its first `needed` rows (a LIMIT on the coordinator, planner.c's
 * push_limits()): the workers stop as soon as those came, so they are
 * weighed against that part of the work, as PostgreSQL weighs a Gather
 * under a Limit.  Where they would save less than they cost (an index
 * scan's first rows in order, a top-N by the index), the part runs in the
 * fragment's backend alone.  Anything else is returned as it is.
 */
Plan *
rx_bounded_member_gather(RxPlanContext *ctx, Plan *top, double needed)
{
	Plan	   *partial = top->lefttree;
	int			workers;
	double		fraction;
	Cost		bounded;

	if (IsA(top, Gather))
		workers = ((Gather *) top)->num_workers;
	else if (IsA(top, GatherMerge))
		workers = ((GatherMerge *) top)->num_workers;
	else
		return top;
	fraction = Min(needed / Max(partial->plan_rows, 1), 1.0);
	bounded = partial->startup_cost +
		(partial->total_cost - partial->startup_cost) * fraction;
	if (bounded * ctx->member_participants * workers / (workers + 1) >
		parallel_setup_cost + parallel_tuple_cost * Min(needed, partial->plan_rows))
		return top;
	serial_outside_gathers(partial);
	return partial;
}

/*
 * The placed fragment, with Gathers over its partial parts where workers
 * are allowed (with_workers), serial everywhere else
 */
Plan *
rx_local_gathers(RxPlanContext *ctx, Plan *fragment, bool with_workers)
{
	ctx->share_candidates = NIL;
	if (with_workers)
		fragment = whole(ctx, fragment);
	serial_outside_gathers(fragment);
	return fragment;
}
