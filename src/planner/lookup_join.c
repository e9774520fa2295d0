/*-------------------------------------------------------------------------
 *
 * lookup_join.c
 *	  Turn a correlated scalar subquery that reads at most one row, by a
 *	  unique key, into a LEFT JOIN, before PostgreSQL plans a distributed
 *	  query.
 *
 * Applications look rows up from a query's select list or WHERE clause:
 *
 *	 SELECT o.id, (SELECT c.name FROM customer c WHERE c.id = o.cust)
 *	   FROM orders o WHERE ...
 *
 * PostgreSQL plans the subquery as a SubPlan run once per outer row.  In a
 * distributed plan a SubPlan belongs to the serial part, so every run is a
 * keyed lookup on the owner (receive_keyed.c): one round trip per outer
 * row, one after the other (issue 18: 20 lookups took 16 times what they
 * take on one server).  As a join, the same lookups are a nested loop
 * whose outer side LOOKAHEAD reads ahead and batches per member (one
 * message to each), or a join the members run where the rows are,
 * whichever PostgreSQL finds cheaper:
 *
 *	 SELECT ... (SELECT e FROM T WHERE c AND t.k = f(o)) ... FROM F WHERE w
 *	 =>
 *	 SELECT ... e' ... FROM F LEFT JOIN (SELECT <columns>, t.k FROM T WHERE c) s
 *	   ON s.k = f(o) WHERE w'
 *
 * It gives the same rows when the subquery returns at most one row for
 * every outer row, so that the join neither repeats an outer row nor
 * drops one, and a missing row reads as NULL either way:
 *  - T is one table (no inheritance children) with a unique index that is
 *	  valid, immediate (not deferred: no duplicates inside a statement),
 *	  without predicate or expressions, and every key column of which the
 *	  subquery compares by an equality of the index's operator family, in
 *	  the index's collation, with a value fixed for the outer row (an
 *	  expression of the outer row or a constant);
 *  - a hash-distributed T's index includes its distribution column: a
 *	  member's unique index holds on that member only, and rows that agree
 *	  on the distribution column live on one member;
 *  - the subquery has no aggregates, grouping, window functions, OFFSET,
 *	  set operations, nested subqueries, CTEs, FOR UPDATE, row security or
 *	  volatile functions; ORDER BY, DISTINCT and LIMIT n (n >= 1) change
 *	  nothing for at most one row and are dropped;
 *  - the SubLink is in the outer query's WHERE clause or select list; in a
 *	  grouped query only inside an aggregate's arguments (evaluated per
 *	  input row, as the join's rows are); the outer query has no FOR
 *	  UPDATE, set-returning or window functions.
 * The conjuncts that refer to the outer row move to the join's ON clause;
 * the others filter the derived table.  e itself stays where the SubLink
 * was, over the derived table's columns, so a CASE around it still decides
 * whether it is evaluated; where e is not a plain column it becomes
 * CASE WHEN s.k IS NULL THEN NULL ELSE e END, as s.k (compared by a strict
 * equality) is NULL exactly when no row joined.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "cluster/metadata.h"
#include "planner/planner.h"

/* an equality  t.col = value  of the subquery, value fixed per outer row */
typedef struct KeyEquality
{
	AttrNumber	attno;			/* t.col */
	Oid			opno;
	Oid			inputcollid;
} KeyEquality;

/* the SubLinks of one query level, while they are replaced */
typedef struct LookupCtx
{
	Query	   *q;
	bool		grouped;		/* SubLinks only inside aggregates */
	int			agg_depth;		/* inside an aggregate's arguments */
	List	   *joins;			/* JoinExprs to add, innermost first */
} LookupCtx;

/* can the query's SubLinks become joins at all? */
static bool
outer_query_ok(Query *q)
{
	return q->commandType == CMD_SELECT && q->setOperations == NULL &&
		q->jointree != NULL && q->jointree->fromlist != NIL &&
		q->rowMarks == NIL && !q->hasForUpdate && !q->hasTargetSRFs &&
		!q->hasWindowFuncs;
}

/* the shape of a subquery that reads one table by its key */
static bool
plain_lookup_query(Query *sub)
{
	RangeTblEntry *rte;
	int			visible = 0;
	ListCell   *lc;

	if (sub->commandType != CMD_SELECT || sub->hasAggs ||
		sub->groupClause != NIL || sub->groupingSets != NIL ||
		sub->havingQual != NULL || sub->hasWindowFuncs ||
		sub->hasTargetSRFs || sub->hasSubLinks ||
		sub->limitOffset != NULL || sub->setOperations != NULL ||
		sub->cteList != NIL || sub->rowMarks != NIL || sub->hasRecursive ||
		sub->hasModifyingCTE || sub->hasForUpdate || sub->hasRowSecurity ||
		list_length(sub->rtable) != 1 || sub->jointree == NULL ||
		list_length(sub->jointree->fromlist) != 1 ||
		!IsA(linitial(sub->jointree->fromlist), RangeTblRef) ||
		linitial_node(RangeTblRef, sub->jointree->fromlist)->rtindex != 1)
		return false;
	/* LIMIT n with a constant n >= 1, or none */
	if (sub->limitCount != NULL)
	{
		Const	   *c = (Const *) sub->limitCount;

		if (!IsA(c, Const) || c->constisnull || c->consttype != INT8OID ||
			DatumGetInt64(c->constvalue) < 1)
			return false;
	}
	rte = linitial_node(RangeTblEntry, sub->rtable);
	if (rte->rtekind != RTE_RELATION || rte->securityQuals != NIL ||
		rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW) ||
		(rte->inh && has_subclass(rte->relid)))
		return false;
	foreach(lc, sub->targetList)
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			visible++;
	return visible == 1 &&
		!contain_volatile_functions((Node *) sub->targetList) &&
		!contain_volatile_functions(sub->jointree->quals);
}

/*
 * Is the conjunct  t.col = value  (either way round), value without the
 * subquery's own columns?  Fills *key; the operator is checked against the
 * index later.
 */
static bool
key_equality(Node *qual, KeyEquality *key)
{
	OpExpr	   *op;
	Node	   *l,
			   *r;
	Var		   *var;
	Node	   *value;

	if ((op = rx_binary_op(qual, &l, &r)) == NULL)
		return false;
	if (IsA(l, Var) && ((Var *) l)->varlevelsup == 0)
	{
		var = (Var *) l;
		value = r;
	}
	else if (IsA(r, Var) && ((Var *) r)->varlevelsup == 0)
	{
		var = (Var *) r;
		value = l;
	}
	else
		return false;
	if (var->varattno <= 0 || contain_vars_of_level(value, 0) ||
		expression_returns_set(value))
		return false;
	set_opfuncid(op);
	if (!func_strict(op->opfuncid))
		return false;
	key->attno = var->varattno;
	key->opno = op->opno;
	key->inputcollid = op->inputcollid;
	return true;
}

/*
 * Does a unique index of the table pin one row with the key equalities?
 * For a hash-distributed table it must include the distribution column.
 * Returns the attno of one pinned key column (NULL exactly where no row
 * matched, as its equality is strict), or InvalidAttrNumber.
 */
static AttrNumber
unique_key_column(Oid relid, List *keys)
{
	Relation	rel;
	RxTableDist dist;
	List	   *indexes;
	AttrNumber	result = InvalidAttrNumber;
	ListCell   *lc;

	rx_table_distribution(relid, &dist);
	rel = table_open(relid, AccessShareLock);
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = ind->rd_index;
		bool		ok = form->indisunique && form->indimmediate &&
			form->indisvalid && form->indislive &&
			heap_attisnull(ind->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(ind->rd_indextuple, Anum_pg_index_indexprs, NULL);
		bool		has_distcol = dist.method != RX_DIST_HASH;
		int			i;

		for (i = 0; ok && i < form->indnkeyatts; i++)
		{
			AttrNumber	attno = form->indkey.values[i];
			Oid			opfamily = ind->rd_opfamily[i];
			Oid			collation = ind->rd_indcollation[i];
			bool		found = false;
			ListCell   *kc;

			foreach(kc, keys)
			{
				KeyEquality *k = lfirst(kc);

				if (k->attno == attno &&
					get_op_opfamily_strategy(k->opno, opfamily) == BTEqualStrategyNumber &&
					(!OidIsValid(collation) || collation == k->inputcollid))
				{
					found = true;
					break;
				}
			}
			ok = found;
			if (dist.method == RX_DIST_HASH && attno == dist.distcol)
				has_distcol = true;
		}
		index_close(ind, AccessShareLock);
		if (ok && has_distcol && form->indnkeyatts > 0)
		{
			result = form->indkey.values[0];
			break;
		}
	}
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return result;
}

/* the subquery's own columns (level 0) in an expression */
static bool
collect_columns_walker(Node *node, List **attnos)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == 0)
	{
		*attnos = list_append_unique_int(*attnos, ((Var *) node)->varattno);
		return false;
	}
	return expression_tree_walker(node, collect_columns_walker, attnos);
}

static int
list_index_of_int(List *list, int value)
{
	ListCell   *lc;

	foreach(lc, list)
		if (lfirst_int(lc) == value)
			return foreach_current_index(lc);
	return -1;
}

/* the subquery's columns as the derived table's */
typedef struct MapCtx
{
	List	   *attnos;			/* derived column i + 1 is attnos[i] */
	Index		rtindex;
} MapCtx;

static Node *
map_columns_mutator(Node *node, MapCtx *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == 0)
	{
		Var		   *var = (Var *) copyObject(node);
		int			col = list_index_of_int(ctx->attnos, var->varattno);

		Assert(col >= 0);
		var->varno = ctx->rtindex;
		var->varattno = col + 1;
		var->varnosyn = 0;
		var->varattnosyn = 0;
		return (Node *) var;
	}
	return expression_tree_mutator(node, map_columns_mutator, ctx);
}

/* an expression of the subquery as one of the outer query's */
static Node *
map_to_outer(Node *node, MapCtx *ctx)
{
	node = map_columns_mutator(node, ctx);
	IncrementVarSublevelsUp(node, -1, 1);
	return node;
}

/*
 * The SubLink as a LEFT JOIN, if the rewrite applies: returns the value
 * that replaces it and adds the join to ctx->joins; else NULL.
 */
static Node *
lookup_join(LookupCtx *ctx, SubLink *sublink)
{
	Query	   *sub = (Query *) sublink->subselect;
	RangeTblEntry *t;
	TargetEntry *value_tle = NULL;
	List	   *conjuncts;
	List	   *filters = NIL;
	List	   *join_quals = NIL;
	List	   *keys = NIL;
	List	   *attnos = NIL;
	List	   *colnames = NIL;
	AttrNumber	marker;
	Expr	   *bare;
	Query	   *derived;
	RangeTblEntry *rte;
	RangeTblEntry *join_rte;
	RangeTblRef *rtr;
	JoinExpr   *join;
	MapCtx		map;
	Node	   *value;
	ListCell   *lc;
	bool		correlated = false;

	if (sublink->subLinkType != EXPR_SUBLINK || !IsA(sub, Query) ||
		!plain_lookup_query(sub))
		return NULL;
	foreach(lc, sub->targetList)
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			value_tle = lfirst(lc);
	if (contain_aggs_of_level((Node *) value_tle->expr, 1))
		return NULL;

	/* outer conjuncts join, the others filter; keys among both */
	conjuncts = make_ands_implicit((Expr *) sub->jointree->quals);
	foreach(lc, conjuncts)
	{
		Node	   *qual = lfirst(lc);
		KeyEquality key;

		if (rx_has_outer_refs(qual))
		{
			if (contain_aggs_of_level(qual, 1))
				return NULL;
			join_quals = lappend(join_quals, qual);
			correlated = true;
		}
		else
			filters = lappend(filters, qual);
		if (key_equality(qual, &key))
		{
			KeyEquality *kp = palloc(sizeof(KeyEquality));

			*kp = key;
			keys = lappend(keys, kp);
		}
	}
	if (!correlated)
		return NULL;			/* not correlated: an InitPlan does well */
	t = linitial_node(RangeTblEntry, sub->rtable);
	marker = unique_key_column(t->relid, keys);
	if (marker == InvalidAttrNumber)
		return NULL;

	/* the derived table: the columns the join and the value read */
	attnos = list_make1_int(marker);
	collect_columns_walker((Node *) join_quals, &attnos);
	collect_columns_walker((Node *) value_tle->expr, &attnos);
	derived = copyObject(sub);
	derived->targetList = NIL;
	foreach(lc, attnos)
	{
		AttrNumber	attno = lfirst_int(lc);
		Var		   *var;
		char	   *name;

		if (attno == 0)
		{
			var = makeWholeRowVar(t, 1, 0, false);
			name = pstrdup("whole_row");
		}
		else
		{
			Oid			type;
			int32		typmod;
			Oid			collation;

			get_atttypetypmodcoll(t->relid, attno, &type, &typmod, &collation);
			var = makeVar(1, attno, type, typmod, collation, 0);
			name = get_attname(t->relid, attno, false);
		}
		derived->targetList = lappend(derived->targetList,
									  makeTargetEntry((Expr *) var,
													  foreach_current_index(lc) + 1,
													  name, false));
		colnames = lappend(colnames, makeString(pstrdup(name)));
	}
	derived->jointree->quals = (Node *) make_ands_explicit(filters);
	derived->sortClause = NIL;
	derived->distinctClause = NIL;
	derived->limitCount = NULL;
	derived->limitOption = LIMIT_OPTION_DEFAULT;
	if (rx_has_outer_refs((Node *) derived))
		return NULL;

	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = derived;
	rte->alias = makeAlias("rx_lookup", NIL);
	rte->eref = makeAlias("rx_lookup", colnames);
	rte->inFromCl = true;
	ctx->q->rtable = lappend(ctx->q->rtable, rte);
	rtr = makeNode(RangeTblRef);
	rtr->rtindex = list_length(ctx->q->rtable);

	map.attnos = attnos;
	map.rtindex = rtr->rtindex;

	/* the join's own RTE: reduce_outer_joins() records its new join type there */
	join_rte = makeNode(RangeTblEntry);
	join_rte->rtekind = RTE_JOIN;
	join_rte->jointype = JOIN_LEFT;
	join_rte->eref = makeAlias("rx_lookup_join", NIL);
	join_rte->inFromCl = true;
	ctx->q->rtable = lappend(ctx->q->rtable, join_rte);

	join = makeNode(JoinExpr);
	join->jointype = JOIN_LEFT;
	join->rarg = (Node *) rtr;
	join->quals = map_to_outer((Node *) make_ands_explicit(join_quals), &map);
	join->rtindex = list_length(ctx->q->rtable);
	ctx->joins = lappend(ctx->joins, join);

	/*
	 * the value, NULL where no row joined: a column of the derived table is
	 * that already; anything else (an expression, a column of the outer
	 * row) is NULL where the marker is
	 */
	value = map_to_outer((Node *) value_tle->expr, &map);
	bare = rx_strip_relabel((Expr *) value);
	if (!IsA(bare, Var) || ((Var *) bare)->varno != map.rtindex ||
		((Var *) bare)->varlevelsup != 0)
	{
		CaseExpr   *c = makeNode(CaseExpr);
		CaseWhen   *w = makeNode(CaseWhen);
		NullTest   *nt = makeNode(NullTest);
		Var		   *first = (Var *) linitial_node(TargetEntry, derived->targetList)->expr;

		nt->arg = (Expr *) makeVar(map.rtindex, 1, first->vartype,
								   first->vartypmod, first->varcollid, 0);
		nt->nulltesttype = IS_NULL;
		nt->location = -1;
		w->expr = (Expr *) nt;
		w->result = (Expr *) makeNullConst(exprType(value), exprTypmod(value),
										   exprCollation(value));
		w->location = -1;
		c->casetype = exprType(value);
		c->casecollid = exprCollation(value);
		c->args = list_make1(w);
		c->defresult = (Expr *) value;
		c->location = -1;
		value = (Node *) c;
	}
	return value;
}

static Node *
replace_sublinks_mutator(Node *node, LookupCtx *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, SubLink) && (!ctx->grouped || ctx->agg_depth > 0))
	{
		Node	   *value = lookup_join(ctx, (SubLink *) node);

		if (value != NULL)
			return value;
	}
	if (IsA(node, Query))
		return node;			/* its own level: decorrelate.c gets there */
	/* an ordered-set aggregate's direct arguments are evaluated per group */
	if (IsA(node, Aggref) && ((Aggref *) node)->agglevelsup == 0 &&
		((Aggref *) node)->aggdirectargs == NIL)
	{
		Node	   *result;

		ctx->agg_depth++;
		result = expression_tree_mutator(node, replace_sublinks_mutator, ctx);
		ctx->agg_depth--;
		return result;
	}
	return expression_tree_mutator(node, replace_sublinks_mutator, ctx);
}

/*
 * Rewrites the query's own lookup subqueries (not those of its subqueries)
 * as LEFT JOINs, in place.
 */
void
rx_lookup_joins(Query *q)
{
	LookupCtx	ctx;
	Node	   *left;
	ListCell   *lc;

	if (!q->hasSubLinks || !outer_query_ok(q))
		return;
	ctx.q = q;
	ctx.grouped = q->hasAggs || q->groupClause != NIL ||
		q->groupingSets != NIL || q->havingQual != NULL;
	ctx.agg_depth = 0;
	ctx.joins = NIL;

	/* WHERE runs before any grouping: every SubLink there */
	{
		bool		grouped = ctx.grouped;

		ctx.grouped = false;
		q->jointree->quals = replace_sublinks_mutator(q->jointree->quals, &ctx);
		ctx.grouped = grouped;
	}
	q->targetList = (List *) replace_sublinks_mutator((Node *) q->targetList, &ctx);
	q->havingQual = replace_sublinks_mutator(q->havingQual, &ctx);
	if (ctx.joins == NIL)
		return;

	/* FROM F  =>  FROM ((F LEFT JOIN s1 ON ..) LEFT JOIN s2 ON ..) */
	left = list_length(q->jointree->fromlist) == 1
		? linitial(q->jointree->fromlist)
		: (Node *) makeFromExpr(q->jointree->fromlist, NULL);
	foreach(lc, ctx.joins)
	{
		JoinExpr   *join = lfirst(lc);

		join->larg = left;
		left = (Node *) join;
	}
	q->jointree->fromlist = list_make1(left);
}
