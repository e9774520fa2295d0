/*-------------------------------------------------------------------------
 *
 * partial_agg.c
 *	  A Finalize Aggregate directly over its Partial Aggregate, on the same
 *	  member, becomes one complete aggregate.
 *
 * PostgreSQL splits an aggregate around a Gather: each worker computes
 * partial states for its rows' groups, the leader combines them.  When the
 * groups are co-located (GROUP BY the distribution key: TPC-H Q18's
 * inner GROUP BY l_orderkey), the placement rules put the Finalize step on
 * the members too, right above the Partial step with no exchange between
 * them: every group is complete on one member, and the split only costs
 * a second hash table of as many groups (and with many groups a second
 * spill to disk).  One complete aggregate over the Partial step's input
 * computes the same values, as one server's plan does.  Not where members
 * run parallel workers (locus.c): there the workers take the Partial step
 * under the member's Gather, and the member's backend finalizes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "nodes/nodes.h"

#include "planner/planner.h"

/*
 * Rewrites the Finalize step's expressions over the Partial step's input:
 * a combining Aggref becomes the Partial step's Aggref it combined, run to
 * the end; a group column, the Partial step's expression for it.
 */
static Node *
over_partial_input(Node *node, List *partial_tlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR)
	{
		TargetEntry *tle = list_nth_node(TargetEntry, partial_tlist,
										 ((Var *) node)->varattno - 1);

		return (Node *) copyObject(tle->expr);
	}
	if (IsA(node, Aggref) && DO_AGGSPLIT_COMBINE(((Aggref *) node)->aggsplit))
	{
		Aggref	   *final = (Aggref *) node;
		Var		   *arg = (Var *) linitial_node(TargetEntry, final->args)->expr;
		Aggref	   *whole;

		whole = (Aggref *) copyObject(list_nth_node(TargetEntry, partial_tlist,
													arg->varattno - 1)->expr);
		whole->aggsplit = AGGSPLIT_SIMPLE;
		whole->aggtype = final->aggtype;
		return (Node *) whole;
	}
	return expression_tree_mutator(node, over_partial_input, (void *) partial_tlist);
}

/*
 * Anything in the Finalize step's expressions over_partial_input() cannot
 * rewrite: a combining Aggref that is not over one Partial Aggref of the
 * same function, a reference to a partial state outside one
 */
static bool
combines_partial_column(Node *node, List *partial_tlist)
{
	if (node == NULL)
		return false;
	/* a group column: not a partial state */
	if (IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR)
		return ((Var *) node)->varattno < 1 ||
			((Var *) node)->varattno > list_length(partial_tlist) ||
			IsA(list_nth_node(TargetEntry, partial_tlist,
							  ((Var *) node)->varattno - 1)->expr, Aggref);
	if (IsA(node, Aggref) && DO_AGGSPLIT_COMBINE(((Aggref *) node)->aggsplit))
	{
		Aggref	   *final = (Aggref *) node;
		Var		   *arg;
		TargetEntry *tle;

		if (list_length(final->args) != 1)
			return true;
		arg = (Var *) linitial_node(TargetEntry, final->args)->expr;
		if (!IsA(arg, Var) || arg->varno != OUTER_VAR || arg->varattno < 1 ||
			arg->varattno > list_length(partial_tlist))
			return true;
		tle = list_nth_node(TargetEntry, partial_tlist, arg->varattno - 1);
		return !IsA(tle->expr, Aggref) ||
			((Aggref *) tle->expr)->aggfnoid != final->aggfnoid;
	}
	return expression_tree_walker(node, combines_partial_column, (void *) partial_tlist);
}

Plan *
rx_collapse_partial_agg(Plan *plan)
{
	Agg		   *final = (Agg *) plan;
	Agg		   *partial = (Agg *) plan->lefttree;
	Agg		   *whole;

	if (!IsA(final, Agg) || partial == NULL || !IsA(partial, Agg) ||
		final->aggsplit != AGGSPLIT_FINAL_DESERIAL ||
		partial->aggsplit != AGGSPLIT_INITIAL_SERIAL ||
		final->groupingSets != NIL || partial->groupingSets != NIL ||
		final->numCols != partial->numCols || partial->plan.qual != NIL ||
		final->plan.initPlan != NIL || partial->plan.initPlan != NIL ||
		combines_partial_column((Node *) final->plan.targetlist, partial->plan.targetlist) ||
		combines_partial_column((Node *) final->plan.qual, partial->plan.targetlist))
		return plan;

	whole = copyObject(partial);
	whole->aggsplit = AGGSPLIT_SIMPLE;
	whole->numGroups = final->numGroups;
	whole->plan.targetlist = (List *)
		over_partial_input((Node *) final->plan.targetlist, partial->plan.targetlist);
	whole->plan.qual = (List *)
		over_partial_input((Node *) final->plan.qual, partial->plan.targetlist);
	whole->plan.lefttree = partial->plan.lefttree;
	whole->plan.plan_node_id = final->plan.plan_node_id;
	whole->plan.startup_cost = final->plan.startup_cost;
	whole->plan.total_cost = final->plan.total_cost;
	whole->plan.plan_rows = final->plan.plan_rows;
	whole->plan.plan_width = final->plan.plan_width;
	whole->plan.extParam = bms_union(final->plan.extParam, partial->plan.extParam);
	whole->plan.allParam = bms_union(final->plan.allParam, partial->plan.allParam);
	return &whole->plan;
}
