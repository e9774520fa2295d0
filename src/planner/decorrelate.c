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
 * Only the groups some outer row can join are needed.  When every o.k
 * belongs to one table R, the derived table also gets
 *	 AND (t.k) IN (SELECT R.k FROM R WHERE <q's filters on R alone>)
 * (semi-join reduction, "magic sets"): TPC-H Q17 then averages the
 * lineitem rows of the 200 parts it asks about, not of all 200,000.
 *
 * Likewise  x NOT IN (SELECT y FROM T WHERE c)  becomes
 * NOT EXISTS (SELECT y FROM T WHERE c AND x = y)  when neither x nor y can
 * be NULL (columns declared NOT NULL, of tables on no outer join's
 * nullable side), where the two are the same.  PostgreSQL plans NOT IN as
 * a hashed SubPlan, which runs in the serial part and so gathers the
 * outer table to the coordinator (TPC-H Q16: all of partsupp); NOT EXISTS
 * becomes an anti join the members run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_attribute.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
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

bool
rx_has_outer_refs(Node *node)
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

	if ((op = rx_binary_op(qual, &l, &r)) == NULL ||
		!IsA(l, Var) || !IsA(r, Var))
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
		exprType((Node *) outer) != inner->vartype ||
		op->inputcollid != inner->varcollid)	/* GROUP BY's collation */
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
 * Does the conjunct refer to nothing but table rti of the query it is in
 * (uncorrelated subqueries allowed), without volatile functions?
 */
typedef struct OnlyRel
{
	Index		rti;
	int			depth;
} OnlyRel;

static bool
refers_elsewhere_walker(Node *node, OnlyRel *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varlevelsup < ctx->depth)
			return false;		/* a subquery's own column */
		return var->varlevelsup > ctx->depth || ctx->depth > 0 ||
			var->varno != ctx->rti;
	}
	if (IsA(node, Aggref) || IsA(node, GroupingFunc) ||
		IsA(node, PlaceHolderVar) || IsA(node, WindowFunc))
		return true;
	if (IsA(node, Query))
	{
		bool		result;

		ctx->depth++;
		result = query_tree_walker((Query *) node, refers_elsewhere_walker,
								   (void *) ctx, 0);
		ctx->depth--;
		return result;
	}
	return expression_tree_walker(node, refers_elsewhere_walker, (void *) ctx);
}

static bool
refers_only_to(Node *qual, Index rti)
{
	OnlyRel		ctx = {rti, 0};

	return !refers_elsewhere_walker(qual, &ctx) &&
		!contain_volatile_functions(qual);
}

/*
 * Adds  AND (t.k1, ...) IN (SELECT R.k1, ... FROM R WHERE ...)  to the
 * derived table sub, when every correlation's outer column is of one table
 * R of q; conjuncts are q's WHERE clause (the SubLink's own excluded).
 */
static void
add_key_filter(Query *q, List *conjuncts, Node *except, Query *sub,
			   List *correlations)
{
	Correlation *first = linitial(correlations);
	Index		r = first->outer->varno;
	RangeTblEntry *rte;
	Query	   *keys;
	List	   *filters = NIL;
	List	   *tests = NIL;
	SubLink    *in;
	RangeTblRef *rtr;
	ListCell   *lc;

	if (r > list_length(q->rtable))
		return;
	rte = rt_fetch(r, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		return;
	foreach(lc, correlations)
		if (((Correlation *) lfirst(lc))->outer->varno != r)
			return;
	foreach(lc, conjuncts)
		if (lfirst(lc) != except && refers_only_to(lfirst(lc), r))
			filters = lappend(filters, copyObject(lfirst(lc)));

	keys = makeNode(Query);
	keys->commandType = CMD_SELECT;
	keys->querySource = QSRC_ORIGINAL;
	keys->canSetTag = true;
	keys->rtable = list_make1(copyObject(rte));
	rtr = makeNode(RangeTblRef);
	rtr->rtindex = 1;
	ChangeVarNodes((Node *) filters, r, 1, 0);
	keys->jointree = makeFromExpr(list_make1(rtr),
								  (Node *) make_ands_explicit(filters));
	keys->hasSubLinks = checkExprHasSubLink((Node *) filters);
	foreach(lc, correlations)
	{
		Correlation *c = lfirst(lc);
		int			i = foreach_current_index(lc) + 1;
		Param	   *param = makeNode(Param);

		keys->targetList = lappend(keys->targetList,
								   makeTargetEntry((Expr *) makeVar(1, c->outer->varattno,
																	c->outer->vartype,
																	c->outer->vartypmod,
																	c->outer->varcollid, 0),
												   i, psprintf("key%d", i), false));
		param->paramkind = PARAM_SUBLINK;
		param->paramid = i;
		param->paramtype = c->outer->vartype;
		param->paramtypmod = c->outer->vartypmod;
		param->paramcollid = c->outer->varcollid;
		param->location = -1;
		tests = lappend(tests,
						make_opclause(c->qual->opno, BOOLOID, false,
									  (Expr *) copyObject(c->inner), (Expr *) param,
									  c->qual->opcollid, c->qual->inputcollid));
	}

	in = makeNode(SubLink);
	in->subLinkType = ANY_SUBLINK;
	in->subLinkId = 0;
	in->testexpr = (Node *) make_ands_explicit(tests);
	in->operName = list_make1(makeString(pstrdup("=")));
	in->subselect = (Node *) keys;
	in->location = -1;
	sub->jointree->quals = (Node *)
		make_ands_explicit(lappend(make_ands_implicit((Expr *) sub->jointree->quals),
								   in));
	sub->hasSubLinks = true;
}

/*
 * Tries the rewrite on one conjunct of q's WHERE clause.  Returns the
 * conjuncts that replace it (the comparison with the derived table's
 * column, then the join conditions), or NIL if it does not apply; on
 * success the derived table has been added to q's FROM list.
 */
static List *
decorrelate_conjunct(Query *q, List *conjuncts, Node *qual)
{
	OpExpr	   *cmp;
	SubLink    *sublink;
	int			sublink_arg;
	Query	   *sub;
	List	   *sub_conjuncts;
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
	sub_conjuncts = make_ands_implicit((Expr *) sub->jointree->quals);
	foreach(lc, sub_conjuncts)
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
	if (rx_has_outer_refs((Node *) sub))
		return NIL;
	add_key_filter(q, conjuncts, qual, sub, correlations);

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

/* does the query's FROM clause have an outer join? */
static bool
has_outer_join_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, JoinExpr) && ((JoinExpr *) node)->jointype != JOIN_INNER)
		return true;
	if (IsA(node, FromExpr) || IsA(node, JoinExpr) || IsA(node, List))
		return expression_tree_walker(node, has_outer_join_walker, context);
	return false;
}

static bool
attnotnull(Oid relid, AttrNumber attno)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
									  Int16GetDatum(attno));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull;
		ReleaseSysCache(tup);
	}
	return result;
}

/* a column declared NOT NULL of a table in q's range table (level 0) */
static bool
is_not_null_column(Query *q, Node *node)
{
	Var		   *var;
	RangeTblEntry *rte;

	node = (Node *) rx_strip_relabel((Expr *) node);
	if (node == NULL || !IsA(node, Var))
		return false;
	var = (Var *) node;
	if (var->varlevelsup != 0 || var->varattno <= 0 ||
		var->varno > list_length(q->rtable))
		return false;
	rte = rt_fetch(var->varno, q->rtable);
	return rte->rtekind == RTE_RELATION &&
		attnotnull(rte->relid, var->varattno) &&
		!has_outer_join_walker((Node *) q->jointree->fromlist, NULL);
}

/*
 * NOT (x op ANY (SELECT y ...)) with an equality op and x, y never NULL:
 * returns NOT EXISTS (SELECT y ... AND x op y), or NULL.
 */
static Node *
not_in_to_not_exists(Query *q, Node *qual)
{
	BoolExpr   *not = (BoolExpr *) qual;
	SubLink    *sublink;
	OpExpr	   *test;
	Query	   *sub;
	TargetEntry *tle;
	Node	   *x;
	OpExpr	   *corr;
	SubLink    *exists;

	if (!IsA(qual, BoolExpr) || not->boolop != NOT_EXPR ||
		!IsA(linitial(not->args), SubLink))
		return NULL;
	sublink = linitial(not->args);
	if (sublink->subLinkType != ANY_SUBLINK || sublink->testexpr == NULL ||
		!IsA(sublink->testexpr, OpExpr))
		return NULL;
	test = (OpExpr *) sublink->testexpr;
	if (list_length(test->args) != 2 || !IsA(lsecond(test->args), Param) ||
		((Param *) lsecond(test->args))->paramkind != PARAM_SUBLINK ||
		!op_hashjoinable(test->opno, exprType(linitial(test->args))))
		return NULL;
	x = linitial(test->args);
	sub = castNode(Query, sublink->subselect);
	if (sub->commandType != CMD_SELECT || sub->hasAggs ||
		sub->groupClause != NIL || sub->groupingSets != NIL ||
		sub->havingQual != NULL || sub->hasWindowFuncs ||
		sub->hasTargetSRFs || sub->hasSubLinks || sub->hasDistinctOn ||
		sub->limitCount != NULL || sub->limitOffset != NULL ||
		sub->setOperations != NULL || sub->cteList != NIL ||
		sub->rowMarks != NIL || list_length(sub->targetList) != 1)
		return NULL;
	tle = linitial_node(TargetEntry, sub->targetList);
	if (tle->resjunk || !is_not_null_column(sub, (Node *) tle->expr) ||
		!is_not_null_column(q, x))
		return NULL;

	/* x op y inside the subquery: x is one level up there */
	sub = copyObject(sub);
	x = copyObject(x);
	IncrementVarSublevelsUp(x, 1, 0);
	corr = (OpExpr *) make_opclause(test->opno, BOOLOID, false, (Expr *) x,
									(Expr *) copyObject(tle->expr),
									test->opcollid, test->inputcollid);
	sub->jointree->quals = (Node *)
		make_ands_explicit(lappend(make_ands_implicit((Expr *) sub->jointree->quals),
								   corr));
	exists = makeNode(SubLink);
	exists->subLinkType = EXISTS_SUBLINK;
	exists->subLinkId = 0;
	exists->subselect = (Node *) sub;
	exists->location = sublink->location;
	return (Node *) make_notclause((Expr *) exists);
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
			List	   *repl = decorrelate_conjunct(q, conjuncts, lfirst(lc));
			Node	   *not_exists;

			if (repl != NIL)
			{
				result = list_concat(result, repl);
				changed = true;
			}
			else if ((not_exists = not_in_to_not_exists(q, lfirst(lc))) != NULL)
			{
				result = lappend(result, not_exists);
				changed = true;
			}
			else
				result = lappend(result, lfirst(lc));
		}
		if (changed)
			q->jointree->quals = (Node *) make_ands_explicit(result);
	}
	rx_lookup_joins(q);
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
