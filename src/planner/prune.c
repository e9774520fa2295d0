/*-------------------------------------------------------------------------
 *
 * prune.c
 *	  An exchange ships only the columns its consumers read.
 *
 * A SHUFFLE passes on every column of its child's target list, and
 * PostgreSQL gives a scan below a join its physical target list (every
 * column of the table: no projection needed there on one server).  Over
 * the network every column costs bytes: orders moved with its nine
 * columns where the join above reads two (issue 11).  After the
 * distributed plan is made, this pass works out, from the top of the plan
 * down, which output positions of each node its parent reads, and below
 * each SHUFFLE replaces the child's unread columns with typed NULLs.  The
 * positions stay where they were, so nothing above needs renumbering; a
 * NULL costs one bit in the tuple's null bitmap, and a scan now projects
 * (cheap) instead of passing its heap tuple on.
 *
 * The pass knows exactly which child columns a node reads for the node
 * types below; under any other node every column counts as read (nothing
 * is pruned there, which is always correct).  It changes target lists only
 * of nodes that project (scans and joins): a Sort or Hash passes its input
 * on unchanged whatever its target list says, and an Agg must compute
 * every aggregate it was planned with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"

#include "exec/exchange.h"
#include "planner/planner.h"

/* Vars of one varno (OUTER_VAR, INNER_VAR) in an expression: their attnos */
typedef struct VarsCtx
{
	int			varno;
	Bitmapset  *attnos;
} VarsCtx;

static bool
vars_walker(Node *node, VarsCtx *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == c->varno)
	{
		c->attnos = bms_add_member(c->attnos, ((Var *) node)->varattno);
		return false;
	}
	return expression_tree_walker(node, vars_walker, (void *) c);
}

static Bitmapset *
add_vars(Bitmapset *set, void *expr, int varno)
{
	VarsCtx		c = {varno, set};

	(void) vars_walker((Node *) expr, &c);
	return c.attnos;
}

/* the child columns (of varno) that the read entries of plan's tlist use */
static Bitmapset *
tlist_vars(Plan *plan, Bitmapset *read, int varno)
{
	Bitmapset  *set = NULL;
	ListCell   *lc;

	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (bms_is_member(tle->resno, read))
			set = add_vars(set, tle->expr, varno);
	}
	return set;
}

static Bitmapset *
add_positions(Bitmapset *set, int n, AttrNumber *cols)
{
	for (int i = 0; i < n; i++)
		set = bms_add_member(set, cols[i]);
	return set;
}

static Bitmapset *
all_positions(Plan *plan)
{
	Bitmapset  *set = NULL;

	for (int i = 1; i <= list_length(plan->targetlist); i++)
		set = bms_add_member(set, i);
	return set;
}

/* replace what nobody reads of a projecting node's output with NULLs */
static void
null_unread(Plan *plan, Bitmapset *read)
{
	ListCell   *lc;

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_IndexScan:
		case T_BitmapHeapScan:
		case T_HashJoin:
		case T_NestLoop:
		case T_MergeJoin:
		case T_Result:
			break;
		default:
			return;
	}
	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;

		if (bms_is_member(tle->resno, read) || IsA(expr, Const))
			continue;
		tle->expr = (Expr *) makeNullConst(exprType(expr), exprTypmod(expr),
										   exprCollation(expr));
	}
}

/*
 * The child columns a SHUFFLE or RECEIVE reads: its output and filter read
 * its scan tuple (INDEX_VAR), the custom_scan_tlist, whose entries read
 * the child (OUTER_VAR); hash keys and parameters read either; a
 * RECEIVE's merge (4) and lookup (8) keys are child positions.
 */
static Bitmapset *
exchange_child_reads(CustomScan *cs, Bitmapset *read)
{
	Bitmapset  *scan = tlist_vars(&cs->scan.plan, read, INDEX_VAR);
	Bitmapset  *child = add_vars(NULL, cs->custom_exprs, OUTER_VAR);
	ListCell   *lc;

	scan = add_vars(scan, cs->scan.plan.qual, INDEX_VAR);
	scan = add_vars(scan, cs->custom_exprs, INDEX_VAR);
	foreach(lc, cs->custom_scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (bms_is_member(tle->resno, scan))
			child = add_vars(child, tle->expr, OUTER_VAR);
	}
	if (rx_is_receive(&cs->scan.plan))
	{
		foreach(lc, (List *) list_nth(cs->custom_private, 4))
			child = bms_add_member(child, lfirst_int(lc));
		foreach(lc, (List *) list_nth(cs->custom_private, 8))
			child = bms_add_member(child, lfirst_int(lc));
	}
	return child;
}

static void prune(Plan *plan, Bitmapset *read);

/* a join's (or any two-input node's) children */
static void
prune_join(Plan *plan, Bitmapset *read, List *exprs)
{
	Bitmapset  *outer = tlist_vars(plan, read, OUTER_VAR);
	Bitmapset  *inner = tlist_vars(plan, read, INNER_VAR);

	outer = add_vars(outer, plan->qual, OUTER_VAR);
	inner = add_vars(inner, plan->qual, INNER_VAR);
	outer = add_vars(outer, exprs, OUTER_VAR);
	inner = add_vars(inner, exprs, INNER_VAR);
	prune(plan->lefttree, outer);
	prune(plan->righttree, inner);
}

/* read: plan's output positions its parent reads */
static void
prune(Plan *plan, Bitmapset *read)
{
	Bitmapset  *own;
	Bitmapset  *child;

	if (plan == NULL)
		return;
	switch (nodeTag(plan))
	{
		case T_CustomScan:
			if (!rx_is_shuffle(plan) && !rx_is_receive(plan))
				break;
			child = exchange_child_reads((CustomScan *) plan, read);
			if (rx_is_shuffle(plan))
				null_unread(plan->lefttree, child);
			prune(plan->lefttree, child);
			return;
		case T_HashJoin:
			{
				HashJoin   *hj = (HashJoin *) plan;

				prune_join(plan, read,
						   list_make3(hj->join.joinqual, hj->hashclauses, hj->hashkeys));
				return;
			}
		case T_MergeJoin:
			{
				MergeJoin  *mj = (MergeJoin *) plan;

				prune_join(plan, read, list_make2(mj->join.joinqual, mj->mergeclauses));
				return;
			}
		case T_NestLoop:
			{
				NestLoop   *nl = (NestLoop *) plan;
				List	   *params = NIL;
				ListCell   *lc;

				foreach(lc, nl->nestParams)
					params = lappend(params, lfirst_node(NestLoopParam, lc)->paramval);
				prune_join(plan, read, list_make2(nl->join.joinqual, params));
				return;
			}
		case T_Hash:
			child = tlist_vars(plan, read, OUTER_VAR);
			child = add_vars(child, ((Hash *) plan)->hashkeys, OUTER_VAR);
			prune(plan->lefttree, add_vars(child, plan->qual, OUTER_VAR));
			return;
		case T_Agg:
			{
				Agg		   *agg = (Agg *) plan;

				if (agg->groupingSets != NIL || agg->chain != NIL)
					break;
				child = tlist_vars(plan, read, OUTER_VAR);
				child = add_vars(child, plan->qual, OUTER_VAR);
				prune(plan->lefttree, add_positions(child, agg->numCols, agg->grpColIdx));
				return;
			}
		case T_Sort:
		case T_IncrementalSort:
			{
				Sort	   *sort = (Sort *) plan;

				own = add_positions(bms_copy(read), sort->numCols, sort->sortColIdx);
				prune(plan->lefttree, tlist_vars(plan, own, OUTER_VAR));
				return;
			}
		case T_Unique:
			{
				Unique	   *u = (Unique *) plan;

				own = add_positions(bms_copy(read), u->numCols, u->uniqColIdx);
				prune(plan->lefttree, tlist_vars(plan, own, OUTER_VAR));
				return;
			}
		case T_Limit:
			{
				Limit	   *limit = (Limit *) plan;

				own = add_positions(bms_copy(read), limit->uniqNumCols, limit->uniqColIdx);
				child = tlist_vars(plan, own, OUTER_VAR);
				child = add_vars(child, limit->limitOffset, OUTER_VAR);
				prune(plan->lefttree, add_vars(child, limit->limitCount, OUTER_VAR));
				return;
			}
		case T_Material:
			child = tlist_vars(plan, read, OUTER_VAR);
			prune(plan->lefttree, add_vars(child, plan->qual, OUTER_VAR));
			return;
		case T_Result:
			child = tlist_vars(plan, read, OUTER_VAR);
			child = add_vars(child, plan->qual, OUTER_VAR);
			prune(plan->lefttree,
				  add_vars(child, ((Result *) plan)->resconstantqual, OUTER_VAR));
			return;
		default:
			break;
	}

	/* any other node: its children's every column is read */
	if (plan->lefttree)
		prune(plan->lefttree, all_positions(plan->lefttree));
	if (plan->righttree)
		prune(plan->righttree, all_positions(plan->righttree));
}

void
rx_prune_exchange_columns(PlannedStmt *stmt)
{
	ListCell   *lc;

	prune(stmt->planTree, all_positions(stmt->planTree));
	foreach(lc, stmt->subplans)
		if (lfirst(lc) != NULL)
			prune(lfirst(lc), all_positions(lfirst(lc)));
}
