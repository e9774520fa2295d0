/*-------------------------------------------------------------------------
 *
 * below_gather.c
 *	  Work PostgreSQL's plan does above a Gather, on the coordinator alone,
 *	  moved below it to run on the members.
 *
 * PostgreSQL's parallel plans finish on the leader what its workers
 * cannot share: an aggregate's groups, a join of two gathered inputs.  On
 * one server that costs little; here the coordinator is one member of
 * several, and everything above a gather receives every member's rows.
 * These rewrites of the finished parallel plan move such nodes below the
 * gather before planner.c turns gathers into RECEIVEs and locus.c places
 * the subtrees on the members, with the exchanges they then need:
 *
 *  - an aggregate with many groups right above a Gather or Gather Merge
 *	  (agg_below_gather());
 *  - a hash join whose inputs are both gathered (join_below_gathers()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"

#include "planner/planner.h"

/*
 * An aggregate with many groups right above a Gather or Gather Merge: the
 * coordinator would receive every member's groups (partial states, or the
 * rows themselves) and finish all of them alone.  Moved below the gather
 * it runs on every member on the groups that member owns (locus.c shuffles
 * its input by the group key) and the coordinator receives each group
 * once.  Only when the gather only selects columns of its child (the
 * Agg's references are mapped to those), and without InitPlans of its own
 * (they would have to travel with the fragment).  With few groups it
 * stays: the coordinator finishes them at little cost, where moving them
 * costs an exchange; unless a join above can then move too (see
 * join_below_gathers()).
 */
#define RX_MANY_GROUPS	1000

/*
 * The gather's output columns as columns of its child (map[k] for output
 * column k), when it only selects columns and computes nothing.
 */
static AttrNumber *
gather_column_map(Plan *gather)
{
	AttrNumber *map = palloc0(sizeof(AttrNumber) * (list_length(gather->targetlist) + 1));
	ListCell   *lc;

	foreach(lc, gather->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (!IsA(var, Var) || var->varno != OUTER_VAR)
			return NULL;
		map[tle->resno] = var->varattno;
	}
	return map;
}

static Node *
remap_outer_vars_mutator(Node *node, AttrNumber *map)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR)
	{
		Var		   *var = (Var *) copyObject(node);

		var->varattno = map[var->varattno];
		var->varattnosyn = var->varattno;
		return (Node *) var;
	}
	return expression_tree_mutator(node, remap_outer_vars_mutator, map);
}

/* the Agg reads the gather's child instead of the gather */
static void
agg_skip_gather(Agg *agg, AttrNumber *map)
{
	Plan	   *plan = (Plan *) agg;
	AttrNumber *cols = palloc(sizeof(AttrNumber) * agg->numCols);

	plan->targetlist = (List *) remap_outer_vars_mutator((Node *) plan->targetlist, map);
	plan->qual = (List *) remap_outer_vars_mutator((Node *) plan->qual, map);
	/* a new array: a flat copy of the Agg shares the old one */
	for (int i = 0; i < agg->numCols; i++)
		cols[i] = map[agg->grpColIdx[i]];
	agg->grpColIdx = cols;
	plan->lefttree = plan->lefttree->lefttree;
}

/* aggregates over sorted or distinct input, which a hash aggregate cannot run */
static bool
has_ordered_aggs_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *aggref = (Aggref *) node;

		if (aggref->aggorder != NIL || aggref->aggdistinct != NIL ||
			aggref->aggkind != AGGKIND_NORMAL)
			return true;
	}
	return expression_tree_walker(node, has_ordered_aggs_walker, context);
}

/*
 * plan (with top, plan itself or a node above it) moves from above gather
 * to below it: it takes the gather's params, the gather its output.
 */
static void
swap_below(Plan *gather, Plan *plan, Plan *top)
{
	plan->extParam = bms_union(plan->extParam, gather->extParam);
	plan->allParam = bms_union(plan->allParam, gather->allParam);
	if (top != plan)
	{
		top->extParam = bms_copy(plan->extParam);
		top->allParam = bms_copy(plan->allParam);
	}
	gather->lefttree = top;
	gather->targetlist = rx_passthrough_tlist(plan);
	gather->extParam = bms_copy(plan->extParam);
	gather->allParam = bms_copy(plan->allParam);
	gather->plan_rows = plan->plan_rows;
	gather->plan_width = plan->plan_width;
	gather->startup_cost = plan->startup_cost;
	gather->total_cost = plan->total_cost;
}

/*
 * A hash aggregate over a Gather, moved below it on copies of the two
 * nodes (the plan is left as it was): Gather(Agg(the gather's child)).
 */
static Plan *
hashed_agg_below(Agg *agg, AttrNumber *map)
{
	Agg		   *moved = palloc(sizeof(Agg));
	Gather	   *gather = palloc(sizeof(Gather));

	memcpy(moved, agg, sizeof(Agg));
	memcpy(gather, agg->plan.lefttree, sizeof(Gather));
	agg_skip_gather(moved, map);
	swap_below(&gather->plan, &moved->plan, &moved->plan);
	return &gather->plan;
}

/*
 * A sorted aggregate over a Gather Merge sorted on the group keys (what
 * PostgreSQL plans when the groups are too many to hash in work_mem on one
 * server): on the members it becomes a hash aggregate, followed by a Sort
 * on the group keys in the Gather Merge's order, so the coordinator still
 * receives the groups in the order the plan above expects.  The group keys
 * must be output columns of the aggregate (else that order could not be
 * restored) and hashable, no aggregate may need sorted input, and
 * enable_hashagg must be on.
 */
static Plan *
sorted_agg_below_gather_merge(RxPlanContext *ctx, Agg *agg, AttrNumber *map)
{
	Plan	   *plan = (Plan *) agg;
	GatherMerge *gm = (GatherMerge *) plan->lefttree;
	AttrNumber *cols = palloc(sizeof(AttrNumber) * agg->numCols);
	Sort	   *sort;

	if (!enable_hashagg || gm->numCols < agg->numCols ||
		has_ordered_aggs_walker((Node *) plan->targetlist, NULL) ||
		has_ordered_aggs_walker((Node *) plan->qual, NULL))
		return plan;
	for (int i = 0; i < agg->numCols; i++)
	{
		TargetEntry *key = list_nth_node(TargetEntry, gm->plan.targetlist,
										 agg->grpColIdx[i] - 1);
		ListCell   *lc;

		if (gm->sortColIdx[i] != agg->grpColIdx[i] ||
			!op_hashjoinable(agg->grpOperators[i], exprType((Node *) key->expr)))
			return plan;
		cols[i] = InvalidAttrNumber;
		foreach(lc, plan->targetlist)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			Var		   *var = (Var *) tle->expr;

			if (IsA(var, Var) && var->varno == OUTER_VAR &&
				var->varattno == agg->grpColIdx[i])
			{
				cols[i] = tle->resno;
				break;
			}
		}
		if (cols[i] == InvalidAttrNumber)
			return plan;
	}

	agg->aggstrategy = AGG_HASHED;
	agg_skip_gather(agg, map);
	/* the members' own sort for the Gather Merge is no longer needed */
	if (IsA(plan->lefttree, Sort) || IsA(plan->lefttree, IncrementalSort))
		plan->lefttree = plan->lefttree->lefttree;

	sort = rx_make_sort(ctx, plan, agg->numCols, cols, gm->sortOperators,
						gm->collations, gm->nullsFirst);

	swap_below(&gm->plan, plan, (Plan *) sort);
	gm->numCols = agg->numCols;
	gm->sortColIdx = cols;
	return (Plan *) gm;
}

static Plan *
agg_below_gather(RxPlanContext *ctx, Plan *plan)
{
	Agg		   *agg = (Agg *) plan;
	AttrNumber *map;

	if (!IsA(plan, Agg) ||
		agg->groupingSets != NIL || agg->numCols == 0 ||
		DO_AGGSPLIT_SKIPFINAL(agg->aggsplit) || agg->numGroups < RX_MANY_GROUPS ||
		plan->initPlan != NIL || plan->lefttree == NULL ||
		!(IsA(plan->lefttree, Gather) || IsA(plan->lefttree, GatherMerge)) ||
		(map = gather_column_map(plan->lefttree)) == NULL)
		return plan;

	if (agg->aggstrategy == AGG_HASHED && IsA(plan->lefttree, Gather))
		return hashed_agg_below(agg, map);
	if (agg->aggstrategy == AGG_SORTED && IsA(plan->lefttree, GatherMerge))
		return sorted_agg_below_gather_merge(ctx, agg, map);
	return plan;
}

/*
 * Hash Join(Gather(A), Hash(Gather(B))) becomes Gather(Hash Join(A,
 * Hash(B))): the join runs on the members, which hold A's and B's rows,
 * co-located or with the exchanges locus.c inserts, and the coordinator
 * receives the joined rows instead of both inputs.  PostgreSQL leaves
 * such a join to the leader when an input could not be a partial path on
 * its own (a grouped subquery: TPC-H Q18's IN (SELECT l_orderkey ... GROUP
 * BY ... HAVING), which it can only finish above a Gather).  Only when:
 *
 *	- both gathers only select columns, without InitPlans or params of
 *	  their own (a Gather Merge counts as a Gather: see
 *	  unordered_gather(); a complete hash aggregate right above a gather moves
 *	  below it first: TPC-H Q17's average quantity per part, then joined
 *	  with part and lineitem on the members), and nothing in the join
 *	  refers to a PARAM_EXEC param
 *	  (a fragment gets only the query's bound parameters);
 *	- the join is expected to return no more rows than the two inputs
 *	  together (else gathering the inputs moves less);
 *	- locus.c can place the joined subtree: tried on a copy, the plan is
 *	  left as it is when it cannot.
 */
static bool
gather_is_plain(Plan *gather)
{
	Gather	   *g = (Gather *) gather;

	return IsA(gather, Gather) && !g->single_copy && gather->initPlan == NIL &&
		bms_is_empty(g->initParam);
}

/*
 * plan as an unordered Gather, a copy (the plan is left as it was): a
 * Gather Merge feeding a hash join gives an order nobody uses (a hash join
 * does not keep it; PostgreSQL took the sorted path because it had it),
 * so it becomes a Gather, without the Sort right below it that only
 * served the merge.  NULL for anything else, and for gathers with
 * InitPlans or params of their own.
 */
static Plan *
unordered_gather(Plan *plan)
{
	Gather	   *g;

	if (gather_is_plain(plan))
	{
		g = palloc(sizeof(Gather));
		memcpy(g, plan, sizeof(Gather));
		return &g->plan;
	}
	if (IsA(plan, GatherMerge) && plan->initPlan == NIL &&
		bms_is_empty(((GatherMerge *) plan)->initParam))
	{
		GatherMerge *gm = (GatherMerge *) plan;

		g = makeNode(Gather);
		g->plan = gm->plan;
		NodeSetTag(g, T_Gather);
		g->num_workers = gm->num_workers;
		g->rescan_param = gm->rescan_param;
		if (g->plan.lefttree != NULL && IsA(g->plan.lefttree, Sort) &&
			g->plan.lefttree->initPlan == NIL)
			g->plan.lefttree = g->plan.lefttree->lefttree;
		return &g->plan;
	}
	return NULL;
}

/*
 * A complete hash aggregate (PostgreSQL made no partial one) over a plain
 * gather, moved below it (on copies): its input rows, which would all
 * travel to the coordinator, are shuffled by the group key instead.  Else
 * the plan itself.
 */
static Plan *
complete_agg_below(Plan *plan)
{
	Agg		   *agg = (Agg *) plan;
	AttrNumber *map;

	if (!IsA(plan, Agg) || agg->aggstrategy != AGG_HASHED ||
		agg->aggsplit != AGGSPLIT_SIMPLE || agg->groupingSets != NIL ||
		agg->numCols == 0 || plan->initPlan != NIL ||
		!gather_is_plain(plan->lefttree) ||
		(map = gather_column_map(plan->lefttree)) == NULL)
		return plan;
	return hashed_agg_below(agg, map);
}

static Plan *
join_below_gathers(RxPlanContext *ctx, Plan *plan)
{
	HashJoin   *hj = (HashJoin *) plan;
	Plan	   *outer = plan->lefttree;
	Plan	   *hash = plan->righttree;
	Plan	   *inner;
	AttrNumber *outer_map,
			   *inner_map;
	HashJoin   *join;
	Hash	   *newhash;
	Gather	   *gather;

	if (!IsA(plan, HashJoin) || plan->initPlan != NIL || hash == NULL ||
		!IsA(hash, Hash) || hash->initPlan != NIL)
		return plan;
	/* an input aggregated above its gather moves first (TPC-H Q17) */
	outer = unordered_gather(complete_agg_below(outer));
	inner = unordered_gather(complete_agg_below(hash->lefttree));
	if (outer == NULL || inner == NULL)
		return plan;
	if (plan->plan_rows > outer->plan_rows + inner->plan_rows ||
		rx_has_exec_param((Node *) plan->targetlist) ||
		rx_has_exec_param((Node *) plan->qual) ||
		rx_has_exec_param((Node *) hj->join.joinqual) ||
		rx_has_exec_param((Node *) hj->hashclauses) ||
		(outer_map = gather_column_map(outer)) == NULL ||
		(inner_map = gather_column_map(inner)) == NULL)
		return plan;

	/* the join and its Hash read the gathers' children */
	join = palloc(sizeof(HashJoin));
	memcpy(join, hj, sizeof(HashJoin));
	join->join.plan.targetlist = (List *)
		remap_outer_vars_mutator((Node *) plan->targetlist, outer_map);
	join->join.plan.qual = (List *)
		remap_outer_vars_mutator((Node *) plan->qual, outer_map);
	join->join.joinqual = (List *)
		remap_outer_vars_mutator((Node *) hj->join.joinqual, outer_map);
	join->hashclauses = (List *)
		remap_outer_vars_mutator((Node *) hj->hashclauses, outer_map);
	join->hashkeys = (List *)
		remap_outer_vars_mutator((Node *) hj->hashkeys, outer_map);
	newhash = palloc(sizeof(Hash));
	memcpy(newhash, hash, sizeof(Hash));
	newhash->plan.targetlist = (List *)
		remap_outer_vars_mutator((Node *) hash->targetlist, inner_map);
	newhash->hashkeys = (List *)
		remap_outer_vars_mutator((Node *) ((Hash *) hash)->hashkeys, inner_map);
	newhash->plan.lefttree = inner->lefttree;
	newhash->plan.extParam = bms_union(hash->extParam, inner->extParam);
	newhash->plan.allParam = bms_union(hash->allParam, inner->allParam);
	join->join.plan.lefttree = outer->lefttree;
	join->join.plan.righttree = &newhash->plan;

	if (rx_place_fragment(ctx, &join->join.plan, outer->plan_node_id) == NULL)
		return plan;

	gather = palloc(sizeof(Gather));
	memcpy(gather, outer, sizeof(Gather));
	swap_below(&gather->plan, &join->join.plan, &join->join.plan);
	return &gather->plan;
}

/*
 * The rewrites above over the serial part of a plan, bottom up, so that a
 * node moved below its gather can let its parent move too.  Fragments
 * (below a gather) are left alone.
 */
Plan *
rx_below_gathers(RxPlanContext *ctx, Plan *plan)
{
	if (plan == NULL || IsA(plan, Gather) || IsA(plan, GatherMerge))
		return plan;
	check_stack_depth();
	rx_map_plan_children(ctx, plan, rx_below_gathers);
	plan = agg_below_gather(ctx, plan);
	return join_below_gathers(ctx, plan);
}
