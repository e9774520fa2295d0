/*-------------------------------------------------------------------------
 *
 * decorrelate.c
 *	  Turn a correlated scalar subquery over aggregates into a join with a
 *	  grouped derived table, before PostgreSQL plans a distributed query.
 *
 * PostgreSQL plans  WHERE x op (SELECT agg(..) FROM T WHERE c AND t.k = o.k)
 * as a SubPlan run once per outer row.  On one server, with an index on
 * t.k, that is a short index scan per row; in a distributed plan the
 * SubPlan belongs to the serial part, which can only read a distributed T
 * by gathering all of it to the coordinator (fallback.c).  The classic
 * rewrite (Kim 1982; TPC-H Q2, Q17, Q20) makes it a join the members can
 * run where the rows are:
 *
 *	 FROM F WHERE x op (SELECT e FROM T WHERE c AND t.k = o.k)
 *	 =>
 *	 FROM F, (SELECT e, t.k FROM T WHERE c GROUP BY t.k) s
 *	 WHERE x op s.e AND o.k = s.k
 *
 * It gives the same rows when
 *  - the subquery's value is NULL for an empty set of rows: every
 *	  aggregate in e is a built-in one without an initial state (min, max,
 *	  sum, avg(numeric), ..., not count), and e is strict in them.  An
 *	  outer row without a group, which the join drops, compared with NULL
 *	  before: the comparison is a strict operator directly in the WHERE
 *	  clause, where NULL drops the row too;
 *  - every correlation is t.k = o.k with the default equality of t.k's
 *	  type, the one GROUP BY groups by, so the group of o.k holds exactly
 *	  the rows the subquery saw for that outer row, and at most one group
 *	  joins it;
 *  - the subquery refers to the outer query nowhere else, and is a plain
 *	  aggregate (no GROUP BY, HAVING, LIMIT, window functions, set
 *	  operations, nested subqueries).
 * Anything else is left alone and planned as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "planner/planner.h"

/* a correlation t.k = o.k of the subquery */
typedef struct Correlation
{
	OpExpr	   *qual;			/* the conjunct, as written */
	Var		   *inner;			/* t.k, level 0 in the subquery */
	Var		   *outer;			/* o.k, level 1 in the subquery */
} Correlation;

/* does the tree refer to a query level above the one it starts in? */
static bool
has_outer_refs_walker(Node *node, int *depth)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup > *depth;
	if (IsA(node, Aggref))
	{
		if (((Aggref *) node)->agglevelsup > *depth)
			return true;
	}
	else if (IsA(node, PlaceHolderVar))
	{
		if (((PlaceHolderVar *) node)->phlevelsup > *depth)
			return true;
	}
	else if (IsA(node, GroupingFunc))
	{
		if (((GroupingFunc *) node)->agglevelsup > *depth)
			return true;
	}
	else if (IsA(node, Query))
	{
		bool		result;

		(*depth)++;
		result = query_tree_walker((Query *) node, has_outer_refs_walker,
								   (void *) depth, 0);
		(*depth)--;
		return result;
	}
	return expression_tree_walker(node, has_outer_refs_walker, (void *) depth);
}

static bool
has_outer_refs(Node *node)
{
	int			depth = 0;

	if (node != NULL && IsA(node, Query))
		return query_tree_walker((Query *) node, has_outer_refs_walker,
								 (void *) &depth, 0);
	return has_outer_refs_walker(node, &depth);
}

/* a built-in aggregate that returns NULL when it saw no rows */
static bool
agg_null_on_empty(Aggref *agg)
{
	HeapTuple	tup;
	bool		no_initval;

	if (agg->agglevelsup != 0 || agg->aggfnoid >= FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg->aggfnoid));
	if (!HeapTupleIsValid(tup))
		return false;
	no_initval = heap_attisnull(tup, Anum_pg_aggregate_agginitval, NULL);
	ReleaseSysCache(tup);
	return no_initval;
}

/* is the expression NULL whenever its aggregates saw no rows? */
static bool
null_on_empty(Node *node)
{
	List	   *args;
	Oid			funcid;
	ListCell   *lc;

	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Aggref:
			return agg_null_on_empty((Aggref *) node);
		case T_RelabelType:
			return null_on_empty((Node *) ((RelabelType *) node)->arg);
		case T_CoerceViaIO:
			return null_on_empty((Node *) ((CoerceViaIO *) node)->arg);
		case T_OpExpr:
			set_opfuncid((OpExpr *) node);
			funcid = ((OpExpr *) node)->opfuncid;
			args = ((OpExpr *) node)->args;
			break;
		case T_FuncExpr:
			funcid = ((FuncExpr *) node)->funcid;
			args = ((FuncExpr *) node)->args;
			break;
		default:
			return false;
	}
	/* a strict function of something that is NULL is NULL */
	if (!func_strict(funcid))
		return false;
	foreach(lc, args)
	{
		if (null_on_empty(lfirst(lc)))
			return true;
	}
	return false;
}

static Node *
strip_relabel(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

/*
 * Is the conjunct a correlation t.k = o.k (either way round) with the
 * default equality of t.k's type?  Fills *c.
 */
static bool
is_correlation(Node *qual, Correlation *c)
{
	OpExpr	   *op;
	Node	   *l,
			   *r;
	Var		   *inner,
			   *outer;
	TypeCacheEntry *tc;

	if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
		return false;
	op = (OpExpr *) qual;
	l = strip_relabel(linitial(op->args));
	r = strip_relabel(lsecond(op->args));
	if (!IsA(l, Var) || !IsA(r, Var))
		return false;
	if (((Var *) l)->varlevelsup == 0 && ((Var *) r)->varlevelsup == 1)
	{
		inner = (Var *) l;
		outer = (Var *) r;
	}
	else if (((Var *) l)->varlevelsup == 1 && ((Var *) r)->varlevelsup == 0)
	{
		inner = (Var *) r;
		outer = (Var *) l;
	}
	else
		return false;
	tc = lookup_type_cache(inner->vartype, TYPECACHE_EQ_OPR);
	if (!OidIsValid(tc->eq_opr) || tc->eq_opr != op->opno ||
		exprType((Node *) outer) != inner->vartype)
		return false;
	c->qual = op;
	c->inner = inner;
	c->outer = outer;
	return true;
}

/* can the subquery of a scalar SubLink become a grouped derived table? */
static bool
plain_aggregate_query(Query *sub)
{
	TargetEntry *tle;

	if (sub->commandType != CMD_SELECT || !sub->hasAggs ||
		sub->groupClause != NIL || sub->groupingSets != NIL ||
		sub->havingQual != NULL || sub->hasWindowFuncs ||
		sub->hasTargetSRFs || sub->hasSubLinks || sub->hasDistinctOn ||
		sub->distinctClause != NIL || sub->sortClause != NIL ||
		sub->limitCount != NULL || sub->limitOffset != NULL ||
		sub->setOperations != NULL || sub->cteList != NIL ||
		sub->rowMarks != NIL || sub->hasRecursive || sub->hasModifyingCTE ||
		sub->hasForUpdate || sub->hasRowSecurity ||
		list_length(sub->targetList) != 1)
		return false;
	tle = linitial_node(TargetEntry, sub->targetList);
	return !tle->resjunk && null_on_empty((Node *) tle->expr);
}

/*
 * Tries the rewrite on one conjunct of q's WHERE clause.  Returns the
 * conjuncts that replace it (the comparison with the derived table's
 * column, then the join conditions), or NIL if it does not apply; on
 * success the derived table has been added to q's FROM list.
 */
static List *
decorrelate_conjunct(Query *q, Node *qual)
{
	OpExpr	   *cmp;
	SubLink    *sublink;
	int			sublink_arg;
	Query	   *sub;
	List	   *conjuncts;
	List	   *correlations = NIL;
	List	   *rest = NIL;
	List	   *colnames;
	List	   *result;
	ListCell   *lc;
	RangeTblEntry *rte;
	RangeTblRef *rtr;
	TargetEntry *value_tle;
	Index		rtindex;
	int			i;

	/* x op (SubLink), or (SubLink) op x, with a strict op */
	if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
		return NIL;
	cmp = (OpExpr *) qual;
	if (IsA(linitial(cmp->args), SubLink))
		sublink_arg = 0;
	else if (IsA(lsecond(cmp->args), SubLink))
		sublink_arg = 1;
	else
		return NIL;
	sublink = (SubLink *) list_nth(cmp->args, sublink_arg);
	if (sublink->subLinkType != EXPR_SUBLINK)
		return NIL;
	set_opfuncid(cmp);
	if (!func_strict(cmp->opfuncid))
		return NIL;
	sub = castNode(Query, sublink->subselect);
	if (!plain_aggregate_query(sub))
		return NIL;

	/* split the subquery's WHERE clause into correlations and the rest */
	conjuncts = make_ands_implicit((Expr *) sub->jointree->quals);
	foreach(lc, conjuncts)
	{
		Correlation c;

		if (is_correlation(lfirst(lc), &c))
		{
			Correlation *cp = palloc(sizeof(Correlation));

			*cp = c;
			correlations = lappend(correlations, cp);
		}
		else
			rest = lappend(rest, lfirst(lc));
	}
	if (correlations == NIL)
		return NIL;				/* not correlated: an InitPlan does well */

	/* the derived table: no outer reference may be left in it */
	sub = copyObject(sub);
	sub->jointree->quals = (Node *) make_ands_explicit(copyObject(rest));
	if (has_outer_refs((Node *) sub))
		return NIL;

	/* SELECT e, t.k1, t.k2, ... GROUP BY t.k1, t.k2, ... */
	value_tle = linitial_node(TargetEntry, sub->targetList);
	colnames = list_make1(makeString(pstrdup("value")));
	i = 0;
	foreach(lc, correlations)
	{
		Correlation *c = lfirst(lc);
		SortGroupClause *grp = makeNode(SortGroupClause);
		TargetEntry *tle;
		char		name[32];
		Oid			sortop,
					eqop;
		bool		hashable;

		i++;
		snprintf(name, sizeof(name), "key%d", i);
		tle = makeTargetEntry((Expr *) copyObject(c->inner),
							  list_length(sub->targetList) + 1,
							  pstrdup(name), false);
		tle->ressortgroupref = i;
		sub->targetList = lappend(sub->targetList, tle);

		get_sort_group_operators(c->inner->vartype, false, true, false,
								 &sortop, &eqop, NULL, &hashable);
		grp->tleSortGroupRef = i;
		grp->eqop = eqop;
		grp->sortop = sortop;
		grp->nulls_first = false;
		grp->hashable = hashable;
		sub->groupClause = lappend(sub->groupClause, grp);
		colnames = lappend(colnames, makeString(pstrdup(name)));
	}

	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = sub;
	rte->alias = makeAlias("rx_decorrelated", NIL);
	rte->eref = makeAlias("rx_decorrelated", colnames);
	rte->lateral = false;
	rte->inh = false;
	rte->inFromCl = true;
	q->rtable = lappend(q->rtable, rte);
	rtindex = list_length(q->rtable);
	rtr = makeNode(RangeTblRef);
	rtr->rtindex = rtindex;
	q->jointree->fromlist = lappend(q->jointree->fromlist, rtr);

	/* x op s.value */
	cmp = copyObject(cmp);
	list_nth_cell(cmp->args, sublink_arg)->ptr_value =
		makeVar(rtindex, 1, exprType((Node *) value_tle->expr),
				exprTypmod((Node *) value_tle->expr),
				exprCollation((Node *) value_tle->expr), 0);
	result = list_make1(cmp);

	/* o.k = s.k, the correlation's own operator */
	i = 0;
	foreach(lc, correlations)
	{
		Correlation *c = lfirst(lc);
		Var		   *outer = copyObject(c->outer);
		Var		   *key;

		i++;
		outer->varlevelsup = 0;
		key = makeVar(rtindex, 1 + i, c->inner->vartype, c->inner->vartypmod,
					  c->inner->varcollid, 0);
		result = lappend(result,
						 make_opclause(c->qual->opno, BOOLOID, false,
									   (Expr *) outer, (Expr *) key,
									   c->qual->opcollid, c->qual->inputcollid));
	}
	return result;
}

static void decorrelate_query(Query *q);

static bool
decorrelate_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		decorrelate_query((Query *) node);
		return false;
	}
	return expression_tree_walker(node, decorrelate_walker, context);
}

static void
decorrelate_query(Query *q)
{
	if (q->commandType == CMD_SELECT && q->setOperations == NULL &&
		q->hasSubLinks && q->jointree != NULL && q->jointree->quals != NULL)
	{
		List	   *conjuncts = make_ands_implicit((Expr *) q->jointree->quals);
		List	   *result = NIL;
		bool		changed = false;
		ListCell   *lc;

		foreach(lc, conjuncts)
		{
			List	   *repl = decorrelate_conjunct(q, lfirst(lc));

			if (repl != NIL)
			{
				result = list_concat(result, repl);
				changed = true;
			}
			else
				result = lappend(result, lfirst(lc));
		}
		if (changed)
			q->jointree->quals = (Node *) make_ands_explicit(result);
	}
	/* subqueries in sublinks, in FROM and in WITH */
	query_tree_walker(q, decorrelate_walker, NULL, 0);
}

/*
 * Rewrites every correlated scalar aggregate subquery of the query (and of
 * its subqueries) that the rewrite above covers, in place.
 */
void
rx_decorrelate(Query *parse)
{
	decorrelate_query(parse);
}
