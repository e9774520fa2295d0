/*-------------------------------------------------------------------------
 *
 * locus.c
 *	  Placing the subtree below a Gather on the members: loci, bottom up,
 *	  and the exchanges that make every node see the rows it needs.
 *
 * A locus says where a node's output rows are:
 *	 HASHED(col, family)	partitioned by the hash of an output column
 *	 STREWN					partitioned, by no known key
 *	 REPLICATED				the complete set on every member
 *
 * Scans of distributed tables are HASHED on the distribution column,
 * scans of reference tables (and of functions or VALUES) REPLICATED.
 * Nodes that need all rows of a group together (a complete Agg, Unique,
 * Group, SetOp, WindowAgg) get their input shuffled by the group key, or
 * broadcast when there is none.  Joins keep co-located inputs; otherwise
 * one or both sides move: shuffled by a join key, or one side broadcast,
 * whichever moves fewer estimated bytes ((N-1)/N of the shuffled sides vs
 * N-1 times the broadcast side), within what the join type allows:
 *	 partitioned outer, replicated inner: inner, left, semi, anti joins;
 *	 replicated outer, partitioned inner: inner and right joins.
 * The inner side of a parameterized nested loop cannot move; its outer
 * side is shuffled by the parameter that meets the inner table's
 * distribution column, or broadcast for an inner join.
 *
 * Anything else - a node type not handled, an expression that cannot run
 * on another member, a local table - makes the whole subtree fail to
 * place, and the caller runs it serially with gathered scans instead.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_am.h"
#include "nodes/makefuncs.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/catcache.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "exec/exchange.h"
#include "planner/planner.h"

typedef enum LocusKind
{
	LOCUS_HASHED,
	LOCUS_STREWN,
	LOCUS_REPLICATED
} LocusKind;

typedef struct Locus
{
	LocusKind	kind;
	AttrNumber	col;			/* HASHED: output column */
	Oid			family;			/* HASHED: hash operator family */
	bool		nulls_strewn;	/* HASHED: but rows where col is NULL may be
								 * on any member (see join_locus()) */
} Locus;

typedef struct Placer
{
	RxPlanContext *ctx;
} Placer;

static bool place(Placer *pl, Plan **pp, Locus *out);

static Locus
locus(LocusKind kind)
{
	Locus		l = {kind, 0, InvalidOid, false};

	return l;
}

static bool
partitioned(Locus l)
{
	return l.kind != LOCUS_REPLICATED;
}

Expr *
rx_strip_relabel(Expr *e)
{
	while (e && IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	return e;
}

/* qual as a binary operator with its two sides, casts stripped; or NULL */
OpExpr *
rx_binary_op(Node *qual, Node **left, Node **right)
{
	OpExpr	   *op = (OpExpr *) qual;

	if (qual == NULL || !IsA(qual, OpExpr) || list_length(op->args) != 2)
		return NULL;
	*left = (Node *) rx_strip_relabel((Expr *) linitial(op->args));
	*right = (Node *) rx_strip_relabel((Expr *) lsecond(op->args));
	return op;
}

/*
 * A HASHED locus of a child, seen through a node's targetlist: the output
 * column that is the child's column as it is.
 */
static Locus
map_locus(Locus in, List *tlist, int varno)
{
	ListCell   *lc;

	if (in.kind != LOCUS_HASHED)
		return in;
	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Expr	   *e = rx_strip_relabel(tle->expr);

		if (IsA(e, Var) && ((Var *) e)->varno == varno &&
			((Var *) e)->varattno == in.col)
		{
			Locus		l = {LOCUS_HASHED, tle->resno, in.family, in.nulls_strewn};

			return l;
		}
	}
	return locus(LOCUS_STREWN);
}

/* is op a member of the hash family? */
static bool
op_in_hash_family(Oid opno, Oid family)
{
	/* every family here came from a hash opclass or a hash amop entry */
	return OidIsValid(family) && op_in_opfamily(opno, family);
}

/* a hash operator family of an equality operator, or InvalidOid */
static Oid
hash_family_of_op(Oid opno)
{
	CatCList   *catlist = SearchSysCacheList1(AMOPOPID, ObjectIdGetDatum(opno));
	Oid			result = InvalidOid;

	for (int i = 0; i < catlist->n_members; i++)
	{
		Form_pg_amop aform = (Form_pg_amop) GETSTRUCT(&catlist->members[i]->tuple);

		if (aform->amopmethod == HASH_AM_OID &&
			aform->amopstrategy == HTEqualStrategyNumber)
		{
			result = aform->amopfamily;
			break;
		}
	}
	ReleaseSysCacheList(catlist);
	return result;
}

/*
 * Replace Vars of varno that reference a passthrough node's output by that
 * node's targetlist entries: the expression over the node's child.
 */
typedef struct BelowCtx
{
	int			varno;
	List	   *tlist;
} BelowCtx;

static Node *
below_mutator(Node *node, BelowCtx *c)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == c->varno)
	{
		TargetEntry *tle = list_nth_node(TargetEntry, c->tlist,
										 ((Var *) node)->varattno - 1);

		return copyObject((Node *) tle->expr);
	}
	return expression_tree_mutator(node, below_mutator, (void *) c);
}

static Expr *
expr_below(Expr *expr, int varno, Plan *node)
{
	BelowCtx	c = {varno, node->targetlist};

	return (Expr *) below_mutator((Node *) expr, &c);
}

/* Vars of one varno renamed, so an inner-side key reads a SHUFFLE's child */
typedef struct RenameCtx
{
	int			from;
	int			to;
} RenameCtx;

static Node *
rename_mutator(Node *node, RenameCtx *c)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == c->from)
	{
		Var		   *v = (Var *) copyObject(node);

		v->varno = c->to;
		return (Node *) v;
	}
	return expression_tree_mutator(node, rename_mutator, (void *) c);
}

static Expr *
rename_varno(Expr *expr, int from, int to)
{
	RenameCtx	c = {from, to};

	return (Expr *) rename_mutator((Node *) expr, &c);
}

/*
 * Put RECEIVE(SHUFFLE(child)) where child was.  key: expression over the
 * child's output (OUTER_VAR), NULL to broadcast.
 */
static Plan *
insert_exchange(Placer *pl, Plan *child, Expr *key, Oid family)
{
	int			exchange_id = rx_new_node_id(pl->ctx);
	CustomScan *shuffle;
	CustomScan *receive;

	if (key != NULL)
	{
		Oid			type = exprType((Node *) key);

		shuffle = rx_make_shuffle(child, exchange_id, RX_ROUTE_HASH, -1,
								  list_make1(key),
								  list_make1_oid(rx_hash_proc_for(family, type)),
								  list_make1_oid(exprCollation((Node *) key)));
	}
	else
		shuffle = rx_make_shuffle(child, exchange_id, RX_ROUTE_BROADCAST, -1,
								  NIL, NIL, NIL);
	shuffle->scan.plan.plan_node_id = rx_new_node_id(pl->ctx);
	receive = rx_make_receive((Plan *) shuffle, exchange_id,
							  RX_RECEIVE_SHUFFLE, false, false);
	receive->scan.plan.plan_node_id = exchange_id;
	if (key == NULL)
		receive->scan.plan.plan_rows *= pl->ctx->nmembers;
	return (Plan *) receive;
}

/* the key column's locus after shuffling a child by a plain column */
static Locus
shuffled_locus(Expr *key, Oid family)
{
	Expr	   *k = rx_strip_relabel(key);

	if (IsA(k, Var) && ((Var *) k)->varno == OUTER_VAR)
	{
		Locus		l = {LOCUS_HASHED, ((Var *) k)->varattno, family};

		return l;
	}
	return locus(LOCUS_STREWN);
}

/* ---------------------------------------------------------------------
 * Scans
 * ---------------------------------------------------------------------
 */

static bool
place_scan(Placer *pl, Scan *scan, Locus *out)
{
	RangeTblEntry *rte = rt_fetch(scan->scanrelid, pl->ctx->stmt->rtable);
	RxTableDist dist;
	ListCell   *lc;

	if (rte->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(rte->relid, &dist);
	switch (dist.method)
	{
		case RX_DIST_NONE:
			/* a table of this server only */
			return false;
		case RX_DIST_REFERENCE:
			*out = locus(LOCUS_REPLICATED);
			return true;
		case RX_DIST_HASH:
			if (pl->ctx->nmembers == 1)
			{
				/*
				 * A cluster of one member stores every row of the table
				 * there: the complete set, as of a reference table.  Rows
				 * then never change members, so no exchange is placed
				 * below the one to the coordinator, and the member's part
				 * is one ordinary parallel plan with its own workers.
				 */
				*out = locus(LOCUS_REPLICATED);
				return true;
			}
			*out = locus(LOCUS_STREWN);
			foreach(lc, scan->plan.targetlist)
			{
				TargetEntry *tle = lfirst_node(TargetEntry, lc);
				Expr	   *e = rx_strip_relabel(tle->expr);

				if (IsA(e, Var) && ((Var *) e)->varno == scan->scanrelid &&
					((Var *) e)->varattno == dist.distcol)
				{
					out->kind = LOCUS_HASHED;
					out->col = tle->resno;
					out->family = dist.hash_opfamily;
					break;
				}
			}
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Nodes that need whole groups
 * ---------------------------------------------------------------------
 */

/*
 * A node whose groups are defined by columns of its child (cols/ops): keep
 * a child hashed on one of them, else shuffle the child by the first, else
 * broadcast it.
 */
static bool
place_grouping(Placer *pl, Plan *p, int ncols, AttrNumber *cols, Oid *ops,
			   Locus in, Locus *out)
{
	Oid			family;

	if (in.kind == LOCUS_REPLICATED)
	{
		*out = in;
		return true;
	}
	for (int i = 0; i < ncols; i++)
	{
		if (in.kind == LOCUS_HASHED && !in.nulls_strewn && cols[i] == in.col &&
			op_in_hash_family(ops[i], in.family))
		{
			*out = map_locus(in, p->targetlist, OUTER_VAR);
			return true;
		}
	}
	if (ncols > 0 && OidIsValid(family = hash_family_of_op(ops[0])))
	{
		TargetEntry *tle = list_nth_node(TargetEntry, p->lefttree->targetlist,
										 cols[0] - 1);
		Var		   *key = makeVar(OUTER_VAR, cols[0], exprType((Node *) tle->expr),
								  exprTypmod((Node *) tle->expr),
								  exprCollation((Node *) tle->expr), 0);

		p->lefttree = insert_exchange(pl, p->lefttree, (Expr *) key, family);
		*out = map_locus(shuffled_locus((Expr *) key, family), p->targetlist,
						 OUTER_VAR);
		return true;
	}
	p->lefttree = insert_exchange(pl, p->lefttree, NULL, InvalidOid);
	*out = locus(LOCUS_REPLICATED);
	return true;
}

static bool
place_unary(Placer *pl, Plan **pp, Locus *out)
{
	Plan	   *p = *pp;
	Locus		in;

	if (!place(pl, &p->lefttree, &in))
		return false;

	switch (nodeTag(p))
	{
		case T_Agg:
			{
				Agg		   *agg = (Agg *) p;

				if (DO_AGGSPLIT_SKIPFINAL(agg->aggsplit))
				{
					/* partial: any partitioning will do, the final step merges */
					*out = partitioned(in) ? map_locus(in, p->targetlist, OUTER_VAR) : in;
					return true;
				}
				if (agg->aggstrategy == AGG_MIXED || agg->groupingSets != NIL ||
					!place_grouping(pl, p, agg->numCols, agg->grpColIdx,
									agg->grpOperators, in, out))
					return false;
				/*
				 * co-located groups: no partial step needed (partial_agg.c),
				 * unless the member's workers take the partial step: the
				 * plan was costed for its hash tables of one participant's
				 * rows, and one complete aggregate over all of the member's
				 * rows in its fragment backend can spill where they do not
				 * (TPC-H Q18 on one member of 4 cores: 10.5 s against 3.7 s)
				 */
				if (pl->ctx->member_participants <= 1)
					*pp = rx_collapse_partial_agg(p);
				return true;
			}
		case T_Group:
			return place_grouping(pl, p, ((Group *) p)->numCols,
								  ((Group *) p)->grpColIdx,
								  ((Group *) p)->grpOperators, in, out);
		case T_Unique:
			return place_grouping(pl, p, ((Unique *) p)->numCols,
								  ((Unique *) p)->uniqColIdx,
								  ((Unique *) p)->uniqOperators, in, out);
		case T_SetOp:
			return place_grouping(pl, p, ((SetOp *) p)->numCols,
								  ((SetOp *) p)->dupColIdx,
								  ((SetOp *) p)->dupOperators, in, out);
		case T_WindowAgg:
			return place_grouping(pl, p, ((WindowAgg *) p)->partNumCols,
								  ((WindowAgg *) p)->partColIdx,
								  ((WindowAgg *) p)->partOperators, in, out);
		case T_Limit:
			/* a limit over partitioned rows would keep rows of each member */
			if (partitioned(in))
				p->lefttree = insert_exchange(pl, p->lefttree, NULL, InvalidOid);
			*out = locus(LOCUS_REPLICATED);
			return true;
		case T_Hash:
			/* skew statistics are looked up by OID, which differs per member */
			((Hash *) p)->skewTable = InvalidOid;
			*out = map_locus(in, p->targetlist, OUTER_VAR);
			return true;
		default:
			/* Sort, Material, Result, Memoize, ...: rows pass through */
			*out = map_locus(in, p->targetlist, OUTER_VAR);
			return true;
	}
}

/* ---------------------------------------------------------------------
 * Joins
 * ---------------------------------------------------------------------
 */

typedef struct KeyPair
{
	Expr	   *outer;			/* over the join's outer child (OUTER_VAR) */
	Expr	   *inner;			/* over the join's inner child (INNER_VAR) */
	Oid			family;
} KeyPair;

static bool
refs_only(Node *expr, int varno)
{
	List	   *vars = pull_var_clause(expr, PVC_RECURSE_AGGREGATES |
									   PVC_RECURSE_WINDOWFUNCS |
									   PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	if (vars == NIL)
		return false;
	foreach(lc, vars)
		if (lfirst_node(Var, lc)->varno != varno)
			return false;
	return true;
}

static List *
join_keys(Join *join)
{
	List	   *clauses;
	List	   *pairs = NIL;
	ListCell   *lc;

	if (IsA(join, HashJoin))
		clauses = ((HashJoin *) join)->hashclauses;
	else if (IsA(join, MergeJoin))
		clauses = ((MergeJoin *) join)->mergeclauses;
	else
		clauses = join->joinqual;

	foreach(lc, clauses)
	{
		OpExpr	   *op = (OpExpr *) lfirst(lc);
		Oid			family;
		Expr	   *l,
				   *r;
		KeyPair    *kp;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		family = hash_family_of_op(op->opno);
		if (!OidIsValid(family))
			continue;
		l = linitial(op->args);
		r = lsecond(op->args);
		if (refs_only((Node *) r, OUTER_VAR) && refs_only((Node *) l, INNER_VAR))
		{
			Expr	   *t = l;

			l = r;
			r = t;
		}
		if (!refs_only((Node *) l, OUTER_VAR) || !refs_only((Node *) r, INNER_VAR))
			continue;
		kp = palloc(sizeof(KeyPair));
		kp->outer = l;
		kp->inner = r;
		kp->family = family;
		pairs = lappend(pairs, kp);
	}
	return pairs;
}

static bool
is_col(Expr *e, int varno, AttrNumber col)
{
	e = rx_strip_relabel(e);
	return IsA(e, Var) && ((Var *) e)->varno == varno &&
		((Var *) e)->varattno == col;
}

static double
plan_bytes(Plan *p)
{
	return Max(p->plan_rows, 1.0) * Max(p->plan_width, 1);
}

/*
 * Where an exchange for a join side goes: below a Hash, Sort or Material
 * that sits between the join and the side (they need all of their input,
 * and a Sort must stay above the exchange to keep its order); the key is
 * rewritten to read that node's child.  A merge join side that is not a
 * Sort cannot take an exchange: its order would be lost.
 */
static bool
side_slot(Join *join, bool inner, Plan ***slot, Expr **key)
{
	Plan	  **pp = inner ? &join->plan.righttree : &join->plan.lefttree;
	int			varno = inner ? INNER_VAR : OUTER_VAR;

	if (IsA(*pp, Hash) || IsA(*pp, Sort) || IsA(*pp, Material))
	{
		if (key && *key)
			*key = expr_below(*key, varno, *pp);
		*slot = &(*pp)->lefttree;
		return true;
	}
	if (IsA(join, MergeJoin))
		return false;
	if (key && *key)
		*key = rename_varno(*key, varno, OUTER_VAR);
	*slot = pp;
	return true;
}

/* the column of the inner child a parameterized inner side is keyed on */
typedef struct ParamKeyCtx
{
	Placer	   *pl;
	List	   *nest_params;
	Expr	   *outer_key;
	Oid			family;
} ParamKeyCtx;

static Expr *
param_value(List *nest_params, Node *n)
{
	ListCell   *lc;

	n = (Node *) rx_strip_relabel((Expr *) n);
	if (!IsA(n, Param) || ((Param *) n)->paramkind != PARAM_EXEC)
		return NULL;
	foreach(lc, nest_params)
	{
		NestLoopParam *nlp = lfirst_node(NestLoopParam, lc);

		if (nlp->paramno == ((Param *) n)->paramid)
			return (Expr *) nlp->paramval;
	}
	return NULL;
}

/*
 * Find, in the pinned inner side, a scan of a hashed table with a
 * condition distribution column = nest loop parameter (directly or below
 * passthrough nodes).  The outer side shuffled by that parameter's value
 * meets the rows it can match.
 */
static bool
param_key(Placer *pl, Plan *inner, List *nest_params, Expr **outer_key,
		  Oid *family)
{
	List	   *quals;
	RangeTblEntry *rte;
	RxTableDist dist;
	ListCell   *lc;

	while (inner && (IsA(inner, Memoize) || IsA(inner, Material) ||
					 IsA(inner, Result)) && inner->lefttree)
		inner = inner->lefttree;
	if (inner == NULL)
		return false;
	switch (nodeTag(inner))
	{
		case T_IndexScan:
			quals = list_concat(list_copy(inner->qual),
								((IndexScan *) inner)->indexqualorig);
			break;
		case T_BitmapHeapScan:
			quals = list_concat(list_copy(inner->qual),
								((BitmapHeapScan *) inner)->bitmapqualorig);
			break;
		case T_SeqScan:
			quals = inner->qual;
			break;
		default:
			return false;
	}
	rte = rt_fetch(((Scan *) inner)->scanrelid, pl->ctx->stmt->rtable);
	if (rte->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(rte->relid, &dist);
	if (dist.method != RX_DIST_HASH)
		return false;
	foreach(lc, quals)
	{
		OpExpr	   *op = (OpExpr *) lfirst(lc);
		Expr	   *val;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
			!op_in_hash_family(op->opno, dist.hash_opfamily))
			continue;
		if (is_col(linitial(op->args), ((Scan *) inner)->scanrelid, dist.distcol))
			val = param_value(nest_params, lsecond(op->args));
		else if (is_col(lsecond(op->args), ((Scan *) inner)->scanrelid, dist.distcol))
			val = param_value(nest_params, linitial(op->args));
		else
			continue;
		if (val != NULL)
		{
			*outer_key = val;
			*family = dist.hash_opfamily;
			return true;
		}
	}
	return false;
}

static bool
outer_side_ok(JoinType jt)
{
	/* partitioned outer, replicated inner */
	return jt == JOIN_INNER || jt == JOIN_LEFT || jt == JOIN_SEMI ||
		jt == JOIN_ANTI;
}

static bool
inner_side_ok(JoinType jt)
{
	/* replicated outer, partitioned inner */
	return jt == JOIN_INNER || jt == JOIN_RIGHT;
}

/*
 * The join's output locus from one side's (varno OUTER_VAR or INNER_VAR).
 * An outer join keeps the rows of one side that found no partner, with
 * NULL for the other side's columns, on the member where the kept row is:
 * a column of the side that gets NULLs is still hashed where it is not
 * NULL, which a join on it may rely on (an equality never matches NULL),
 * but a grouping may not: its NULL group would be made on every member.
 */
static Locus
join_locus(Join *join, Locus l, int varno)
{
	JoinType	jt = join->jointype;

	l = map_locus(l, join->plan.targetlist, varno);
	if (l.kind == LOCUS_HASHED &&
		(jt == JOIN_FULL ||
		 (varno == OUTER_VAR && jt == JOIN_RIGHT) ||
		 (varno == INNER_VAR && jt == JOIN_LEFT)))
		l.nulls_strewn = true;
	return l;
}

static bool
place_join(Placer *pl, Plan **pp, Locus *out)
{
	Join	   *join = (Join *) *pp;
	JoinType	jt = join->jointype;
	Locus		lo,
				li;
	List	   *keys;
	ListCell   *lc;
	bool		pinned;
	int			N = pl->ctx->nmembers;
	double		bo,
				bi;
	double		best_cost;
	int			best = 0;		/* 1 shuffle, 2 broadcast inner, 3 broadcast outer, 4 both */
	KeyPair    *best_key = NULL;
	bool		move_outer = false,
				move_inner = false;

	if (!place(pl, &join->plan.lefttree, &lo) ||
		!place(pl, &join->plan.righttree, &li))
		return false;
	keys = join_keys(join);
	pinned = IsA(join, NestLoop) && ((NestLoop *) join)->nestParams != NIL;

	/* co-located on a join key */
	if (lo.kind == LOCUS_HASHED && li.kind == LOCUS_HASHED && lo.family == li.family)
	{
		foreach(lc, keys)
		{
			KeyPair    *kp = lfirst(lc);

			if (kp->family == lo.family &&
				is_col(kp->outer, OUTER_VAR, lo.col) &&
				is_col(kp->inner, INNER_VAR, li.col))
			{
				*out = join_locus(join, lo, OUTER_VAR);
				if (out->kind != LOCUS_HASHED && jt == JOIN_INNER)
					*out = join_locus(join, li, INNER_VAR);
				return true;
			}
		}
	}
	if (!partitioned(lo) && !partitioned(li))
	{
		*out = locus(LOCUS_REPLICATED);
		return true;
	}
	if (partitioned(lo) && !partitioned(li) && outer_side_ok(jt))
	{
		*out = join_locus(join, lo, OUTER_VAR);
		return true;
	}
	if (!partitioned(lo) && partitioned(li) && inner_side_ok(jt))
	{
		*out = (jt == JOIN_INNER) ? join_locus(join, li, INNER_VAR)
			: locus(LOCUS_STREWN);
		return true;
	}

	if (pinned)
	{
		Expr	   *key;
		Oid			family;
		Plan	  **slot;

		if (partitioned(li) && param_key(pl, join->plan.righttree,
										 ((NestLoop *) join)->nestParams,
										 &key, &family))
		{
			/* already where the inner rows are: co-located */
			if (!(lo.kind == LOCUS_HASHED && lo.family == family &&
				  is_col(key, OUTER_VAR, lo.col)))
				join->plan.lefttree = insert_exchange(pl, join->plan.lefttree,
													  key, family);
			*out = join_locus(join, shuffled_locus(key, family), OUTER_VAR);
			return true;
		}
		if (partitioned(li) && jt == JOIN_INNER && side_slot(join, false, &slot, NULL))
		{
			*slot = insert_exchange(pl, *slot, NULL, InvalidOid);
			*out = locus(LOCUS_STREWN);
			return true;
		}
		return false;
	}

	/* the cheapest legal move, by estimated bytes */
	bo = plan_bytes(join->plan.lefttree);
	bi = plan_bytes(join->plan.righttree);
	best_cost = -1;
	foreach(lc, keys)
	{
		KeyPair    *kp = lfirst(lc);
		bool		o_ok = (lo.kind == LOCUS_HASHED && lo.family == kp->family &&
							is_col(kp->outer, OUTER_VAR, lo.col));
		bool		i_ok = (li.kind == LOCUS_HASHED && li.family == kp->family &&
							is_col(kp->inner, INNER_VAR, li.col));
		double		cost;

		/* a replicated side cannot be shuffled: every member would send it */
		if ((!o_ok && !partitioned(lo)) || (!i_ok && !partitioned(li)))
			continue;
		cost = ((o_ok ? 0 : bo) + (i_ok ? 0 : bi)) * (N - 1) / N;
		if (best_cost < 0 || cost < best_cost)
		{
			best_cost = cost;
			best = 1;
			best_key = kp;
			move_outer = !o_ok;
			move_inner = !i_ok;
		}
	}
	if (partitioned(li) && (outer_side_ok(jt) || !partitioned(lo)) &&
		(best_cost < 0 || bi * (N - 1) < best_cost))
	{
		best_cost = bi * (N - 1);
		best = 2;
	}
	if (partitioned(lo) && (inner_side_ok(jt) || !partitioned(li)) &&
		(best_cost < 0 || bo * (N - 1) < best_cost))
	{
		best_cost = bo * (N - 1);
		best = 3;
	}
	if (best == 0 && partitioned(lo) && partitioned(li))
		best = 4;				/* full and right joins without a key */

	switch (best)
	{
		case 1:
			{
				Expr	   *okey = best_key->outer;
				Expr	   *ikey = best_key->inner;
				Plan	  **oslot,
						  **islot;

				if ((move_outer && !side_slot(join, false, &oslot, &okey)) ||
					(move_inner && !side_slot(join, true, &islot, &ikey)))
					return false;
				if (move_outer)
					*oslot = insert_exchange(pl, *oslot, okey, best_key->family);
				if (move_inner)
					*islot = insert_exchange(pl, *islot, ikey, best_key->family);
				if (!move_outer)
					*out = join_locus(join, lo, OUTER_VAR);
				else if (IsA(rx_strip_relabel(best_key->outer), Var))
				{
					Locus		l = {LOCUS_HASHED,
						((Var *) rx_strip_relabel(best_key->outer))->varattno, best_key->family};

					*out = join_locus(join, l, OUTER_VAR);
				}
				else
					*out = locus(LOCUS_STREWN);
				return true;
			}
		case 2:
		case 3:
		case 4:
			{
				Plan	  **slot;

				if (best != 3)
				{
					if (!side_slot(join, true, &slot, NULL))
						return false;
					*slot = insert_exchange(pl, *slot, NULL, InvalidOid);
					li = locus(LOCUS_REPLICATED);
				}
				if (best != 2)
				{
					if (!side_slot(join, false, &slot, NULL))
						return false;
					*slot = insert_exchange(pl, *slot, NULL, InvalidOid);
					lo = locus(LOCUS_REPLICATED);
				}
				if (!partitioned(lo) && !partitioned(li))
					*out = locus(LOCUS_REPLICATED);
				else if (partitioned(lo))
					*out = join_locus(join, lo, OUTER_VAR);
				else
					*out = locus(LOCUS_STREWN);
				return true;
			}
	}
	return false;
}

/* ---------------------------------------------------------------------
 * The walk
 * ---------------------------------------------------------------------
 */

static bool
place(Placer *pl, Plan **pp, Locus *out)
{
	Plan	   *p = *pp;

	if (p == NULL)
		return false;
	check_stack_depth();
	if (!rx_plan_node_shippable(p))
		return false;
	/* parallel_aware stays as planned: rx_local_gathers() reads it */

	switch (nodeTag(p))
	{
		case T_SeqScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
			return place_scan(pl, (Scan *) p, out);
		case T_BitmapHeapScan:
			/* the bitmap index scans below go along as they are */
			if (!rx_plan_node_shippable(p->lefttree) ||
				!(IsA(p->lefttree, BitmapIndexScan)))
				return false;
			return place_scan(pl, (Scan *) p, out);
		case T_FunctionScan:
		case T_ValuesScan:
			*out = locus(LOCUS_REPLICATED);
			return true;
		case T_Result:
			if (p->lefttree == NULL)
			{
				*out = locus(LOCUS_REPLICATED);
				return true;
			}
			return place_unary(pl, pp, out);
		case T_Hash:
		case T_Material:
		case T_Sort:
		case T_IncrementalSort:
		case T_Memoize:
		case T_ProjectSet:
		case T_Agg:
		case T_Group:
		case T_Unique:
		case T_SetOp:
		case T_WindowAgg:
		case T_Limit:
			return place_unary(pl, pp, out);
		case T_HashJoin:
		case T_MergeJoin:
		case T_NestLoop:
			return place_join(pl, pp, out);
		case T_Append:
			{
				ListCell   *lc;
				int			nrep = 0;
				int			n = 0;

				foreach(lc, ((Append *) p)->appendplans)
				{
					Locus		l;
					Plan	   *child = lfirst(lc);

					if (!place(pl, &child, &l))
						return false;
					lfirst(lc) = child;
					nrep += !partitioned(l);
					n++;
				}
				if (nrep != 0 && nrep != n)
					return false;
				*out = locus(nrep ? LOCUS_REPLICATED : LOCUS_STREWN);
				return true;
			}
		case T_SubqueryScan:
			{
				SubqueryScan *ss = (SubqueryScan *) p;
				Locus		l;

				if (!place(pl, &ss->subplan, &l))
					return false;
				*out = map_locus(l, p->targetlist, ss->scan.scanrelid);
				return true;
			}
		default:
			return false;
	}
}

/*
 * Whether the order of plan's rows, which the plan above relies on, comes
 * through an exchange: rows arrive from every member interleaved, so an
 * index scan's or a merge join's order below a RECEIVE is lost.  The order
 * comes from a Sort, or from a node's outer side (joins keep their outer
 * side's order), or from every input of a MergeAppend.
 */
bool
rx_order_crosses_exchange(Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return false;
	check_stack_depth();
	if (rx_is_receive(plan) || IsA(plan, Gather))
		return true;
	switch (nodeTag(plan))
	{
		case T_Sort:
		case T_GatherMerge:
			return false;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				if (rx_order_crosses_exchange(lfirst(lc)))
					return true;
			return false;
		case T_SubqueryScan:
			return rx_order_crosses_exchange(((SubqueryScan *) plan)->subplan);
		default:
			return rx_order_crosses_exchange(plan->lefttree);
	}
}

/*
 * A node of the placed fragment that needs its input in order (a merge
 * join, a sorted aggregate or grouping, a window, a Limit, an incremental
 * sort) whose order an exchange placed below it destroyed: the placement
 * is wrong, and the subtree runs in the serial part instead.
 */
static bool
order_lost(Plan *plan)
{
	ListCell   *lc;
	bool		needs_order;

	if (plan == NULL)
		return false;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_MergeJoin:
			if (rx_order_crosses_exchange(plan->righttree))
				return true;
			needs_order = true;
			break;
		case T_Agg:
			needs_order = ((Agg *) plan)->aggstrategy == AGG_SORTED ||
				((Agg *) plan)->aggstrategy == AGG_MIXED;
			break;
		case T_Group:
		case T_Unique:
		case T_WindowAgg:
		case T_IncrementalSort:
		case T_Limit:
			needs_order = true;
			break;
		case T_SetOp:
			needs_order = ((SetOp *) plan)->strategy == SETOP_SORTED;
			break;
		default:
			needs_order = false;
			break;
	}
	if (needs_order && rx_order_crosses_exchange(plan->lefttree))
		return true;
	foreach(lc, rx_plan_children(plan))
		if (order_lost(lfirst(lc)))
			return true;
	return false;
}

Plan *
rx_place_fragment(RxPlanContext *ctx, Plan *child, int exchange_id)
{
	Placer		pl = {ctx};
	Plan	   *fragment = copyObject(child);
	Plan	   *parallel;
	Locus		l;
	CustomScan *shuffle;

	if (!place(&pl, &fragment, &l))
		return NULL;
	/* with the members' own workers, unless their Gathers lose an order */
	parallel = rx_local_gathers(ctx, copyObject(fragment), true);
	if (!order_lost(parallel))
		fragment = parallel;
	else if (order_lost(fragment = rx_local_gathers(ctx, fragment, false)))
		return NULL;
	shuffle = rx_make_shuffle(fragment, exchange_id, RX_ROUTE_COORDINATOR,
							  partitioned(l) ? -1 : 0, NIL, NIL, NIL);
	shuffle->scan.plan.plan_node_id = rx_new_node_id(ctx);
	return (Plan *) shuffle;
}
