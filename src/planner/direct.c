/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  Direct dispatch, planning: a query that one member can answer alone
 *	  runs there whole, with no exchange.
 *
 * A query whose every scan of a hash-distributed table keeps only rows
 * whose distribution column equals one value (a constant, a bound
 * parameter, a stable expression of them such as
 * current_setting('app.tenant')::int, or an IN list whose values all have
 * one owner; of the column's type or another one its hash family compares
 * with it, see cluster/hashing.c) reads rows of
 * one member only; reference tables have a copy everywhere.  So the plan
 * one server would make for the query, run on the owner of that value,
 * gives the whole answer.  Such a query gets PostgreSQL's own local plan
 * (its index scans, its min/max and top-N shapes) under a DIRECT node
 * (exec/direct.c) that runs it here when this member owns the value, or
 * sends it to the owner and returns its rows; with a parameter the owner
 * is chosen at execution (generic plans, PL/pgSQL).  One member, one
 * round trip at most: no cluster snapshot, no fragment on every member,
 * no transport.
 *
 * The test is made on the finished local plan, not on the query text:
 * the planner has already spread the key over every equal column (a join
 * on the distribution columns of co-located tables, a = 5 AND b.a = a.a
 * gives b.a = 5 too), folded bound values of custom plans into constants,
 * and moved the conditions into each scan.  Anything the plan's scans do
 * not pin to one member (a range, an OR, a second distributed table keyed
 * on another value, a table that is not distributed) keeps the
 * distributed plan.  So do plans the members could not run as sent: a
 * SubPlan, a parallel Gather, user-defined functions or types (OIDs
 * differ between members; shippable.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "cluster/dml.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "exec/direct.h"
#include "planner/planner.h"

typedef struct DirectWalk
{
	PlannedStmt *stmt;
	int			nmembers;
	int			max_node_id;
	bool		refused;
	List	   *keys;			/* the values rows must equal */
	List	   *key_relids;		/* the table each was compared with */
	int			const_owner;	/* owner of the constant keys, -1 none yet */
	Expr	   *param_key;		/* the one key computed at execution, if any */
} DirectWalk;

/* a constant key: its owner must be the one of every other constant key */
static bool
take_const(DirectWalk *dw, Const *c, Oid relid)
{
	int			owner = rx_member_of_key(relid, c->consttype, c->constvalue,
										 c->constisnull, dw->nmembers);

	if (dw->const_owner >= 0 && dw->const_owner != owner)
		return false;
	dw->const_owner = owner;
	dw->keys = lappend(dw->keys, c);
	dw->key_relids = lappend_oid(dw->key_relids, relid);
	return true;
}

/*
 * One conjunct of a scan's conditions, over the table's columns:
 * distcol = constant or parameter, or distcol = ANY(constant array).  True
 * when it pinned the scan to a member (its keys added); false when it says
 * nothing about the distribution.
 */
static bool
take_key(DirectWalk *dw, Expr *clause, Index scanrelid, Oid relid,
		 const RxTableDist *dist)
{
	Expr	   *value = rx_distcol_equality(clause, scanrelid, dist);
	ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) clause;
	Var		   *var;
	Const	   *array;
	Oid			elemtype;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	bool		any = false;

	if (value != NULL)
	{
		value = rx_strip_relabel(value);
		if (!rx_hashes_alike(dist->hash_opfamily, dist->distcol_type,
							 exprType((Node *) value)))
			return false;
		if (IsA(value, Const))
			return take_const(dw, (Const *) value, relid);
		if (!rx_known_at_start(value))
			return false;
		/* every non-constant key must be this one value */
		if (dw->param_key != NULL && !equal(dw->param_key, value))
			return false;
		dw->param_key = value;
		dw->keys = lappend(dw->keys, value);
		dw->key_relids = lappend_oid(dw->key_relids, relid);
		return true;
	}

	if (!IsA(saop, ScalarArrayOpExpr) || !saop->useOr ||
		!op_in_opfamily(saop->opno, dist->hash_opfamily))
		return false;
	var = (Var *) rx_strip_relabel(linitial(saop->args));
	array = (Const *) rx_strip_relabel(lsecond(saop->args));
	if (!IsA(var, Var) || var->varno != scanrelid || var->varlevelsup != 0 ||
		var->varattno != dist->distcol || !IsA(array, Const) ||
		array->constisnull)
		return false;
	elemtype = get_element_type(array->consttype);
	if (!OidIsValid(elemtype) ||
		!rx_hashes_alike(dist->hash_opfamily, dist->distcol_type, elemtype))
		return false;
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(DatumGetArrayTypeP(array->constvalue),
					  elemtype, typlen, typbyval, typalign,
					  &values, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		/* a NULL element matches nothing */
		if (nulls[i])
			continue;
		if (!take_const(dw, makeConst(elemtype, -1, InvalidOid,
									  typlen, values[i], false, typbyval),
						relid))
			return false;
		any = true;
	}
	return any;
}

/* a scan of a relation: reference tables go anywhere, hash ones need a key */
static void
check_scan(DirectWalk *dw, Scan *scan)
{
	RangeTblEntry *rte = rt_fetch(scan->scanrelid, dw->stmt->rtable);
	RxTableDist dist;
	List	   *quals = scan->plan.qual;
	ListCell   *lc;

	if (rte->rtekind != RTE_RELATION)
	{
		dw->refused = true;
		return;
	}
	rx_table_distribution(rte->relid, &dist);
	if (dist.method == RX_DIST_REFERENCE)
		return;
	if (dist.method != RX_DIST_HASH)
	{
		/* a table of this member only */
		dw->refused = true;
		return;
	}
	switch (nodeTag(scan))
	{
		case T_IndexScan:
			quals = list_concat_copy(quals, ((IndexScan *) scan)->indexqualorig);
			break;
		case T_IndexOnlyScan:
			quals = (List *)
				rx_index_vars_as_columns((Node *) list_concat_copy(quals, ((IndexOnlyScan *) scan)->indexqual),
										 ((IndexOnlyScan *) scan)->indextlist);
			break;
		case T_BitmapHeapScan:
			quals = list_concat_copy(quals, ((BitmapHeapScan *) scan)->bitmapqualorig);
			break;
		default:
			break;
	}
	foreach(lc, quals)
		if (take_key(dw, lfirst(lc), scan->scanrelid, rte->relid, &dist))
			return;
	dw->refused = true;
}

static void
walk(DirectWalk *dw, Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL || dw->refused)
		return;
	dw->max_node_id = Max(dw->max_node_id, plan->plan_node_id);
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			check_scan(dw, (Scan *) plan);
			break;
		case T_BitmapIndexScan:
		case T_BitmapAnd:
		case T_BitmapOr:
		case T_Result:
		case T_ProjectSet:
		case T_Sort:
		case T_IncrementalSort:
		case T_Group:
		case T_Agg:
		case T_WindowAgg:
		case T_Unique:
		case T_SetOp:
		case T_Limit:
		case T_Material:
		case T_Memoize:
		case T_Hash:
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
		case T_Append:
		case T_SubqueryScan:
			break;
		default:
			/* what a member cannot run as sent (exec/direct.c, fragment.c) */
			dw->refused = true;
			return;
	}
	if (!rx_plan_node_shippable(plan))
	{
		dw->refused = true;
		return;
	}
	foreach(lc, rx_plan_children(plan))
		walk(dw, lfirst(lc));
}

/*
 * Called with a query's local plan: when one member answers it, put the
 * DIRECT node on top and return true.
 */
bool
rx_direct_plan(PlannedStmt *stmt, int nmembers)
{
	DirectWalk	dw = {0};

	if (!rx_direct_dispatch || stmt->commandType != CMD_SELECT ||
		stmt->subplans != NIL || stmt->rowMarks != NIL ||
		stmt->hasModifyingCTE || stmt->parallelModeNeeded)
		return false;
	dw.stmt = stmt;
	dw.nmembers = nmembers;
	dw.const_owner = -1;
	walk(&dw, stmt->planTree);
	if (dw.refused || dw.keys == NIL)
		return false;
	/* constants and a parameter together: the owners may differ */
	if (dw.param_key != NULL && dw.const_owner >= 0)
		return false;
	stmt->planTree = rx_direct_node(stmt->planTree, dw.keys, dw.key_relids,
									dw.max_node_id + 1);
	return true;
}

/* a column of the query's own range table: a hash table's distribution column */
static bool
names_distcol(Query *parse, Node *node)
{
	Var		   *var = (Var *) rx_strip_relabel((Expr *) node);
	RangeTblEntry *rte;
	RxTableDist dist;

	if (!IsA(var, Var) || var->varlevelsup != 0 || var->varno < 1 ||
		var->varno > list_length(parse->rtable))
		return false;
	rte = rt_fetch(var->varno, parse->rtable);
	if (rte->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(rte->relid, &dist);
	return dist.method == RX_DIST_HASH && dist.distcol == var->varattno;
}

/*
 * Before planning: could the query be one member's?  A cheap look for
 * "distribution column = something" among the top query's conditions, so
 * that other queries are not planned twice.
 */
bool
rx_direct_candidate(Query *parse)
{
	RxStatementShape shape;
	ListCell   *lc;

	if (!rx_direct_dispatch || parse->commandType != CMD_SELECT ||
		parse->rowMarks != NIL || parse->hasModifyingCTE ||
		parse->jointree == NULL || parse->jointree->quals == NULL)
		return false;
	rx_statement_shape((Node *) parse, &shape);
	if (shape.hash_tables == 0 || shape.local_tables > 0 || shape.local_routines)
		return false;
	foreach(lc, make_ands_implicit((Expr *) parse->jointree->quals))
	{
		Node	   *clause = lfirst(lc);

		if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2 &&
			(names_distcol(parse, linitial(((OpExpr *) clause)->args)) ||
			 names_distcol(parse, lsecond(((OpExpr *) clause)->args))))
			return true;
		if (IsA(clause, ScalarArrayOpExpr) &&
			names_distcol(parse, linitial(((ScalarArrayOpExpr *) clause)->args)))
			return true;
	}
	return false;
}
