/*-------------------------------------------------------------------------
 *
 * fallback.c
 *	  A scan of a distributed table in the serial part of a plan: gather
 *	  the table's rows from every member.
 *
 * This is what keeps every plan correct whatever the placement rules
 * cannot handle (a correlated SubPlan over a distributed table, a Gather
 * the rules refuse, a plan PostgreSQL did not parallelize): the scan
 * becomes a gather RECEIVE over a fragment that scans each member's part,
 * with the filters that need nothing from the coordinator evaluated on
 * the members.  The rest (filters and index conditions with parameters of
 * the serial part) stays on the RECEIVE.  The rows are kept for rescans,
 * so a SubPlan runs the fragment once, not once per outer row.  An index
 * scan's rows come in index order and the plan above may rely on that (a
 * Merge Join, an ORDER BY without Sort): then each member scans the same
 * index when the members can evaluate its conditions, or sorts its rows
 * the same way and the RECEIVE merges them.  EXPLAIN shows the RECEIVE as
 * a fallback.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "access/sysattr.h"
#include "catalog/pg_index.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "cluster/hashing.h"
#include "exec/exchange.h"
#include "planner/planner.h"

static void refuse(Scan *scan, RangeTblEntry *rte, const char *why);

typedef struct ColumnMap
{
	Index		rti;
	Oid			relid;
	List	   *attnos;			/* column of the relation per scan position */
	Bitmapset  *as_text;		/* positions that travel in text form */
} ColumnMap;

static Node *map_to_index_var(Node *node, ColumnMap *map);

/* the whole row, built on the coordinator from the fetched columns */
static Node *
whole_row(Var *var, ColumnMap *map)
{
	RowExpr    *row = makeNode(RowExpr);
	Relation	rel = relation_open(map->relid, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
		{
			row->args = lappend(row->args, makeNullConst(INT4OID, -1, InvalidOid));
			row->colnames = lappend(row->colnames, makeString(""));
			continue;
		}
		row->args = lappend(row->args,
							map_to_index_var((Node *) makeVar(map->rti, att->attnum,
															  att->atttypid,
															  att->atttypmod,
															  att->attcollation, 0),
											 map));
		row->colnames = lappend(row->colnames,
								makeString(pstrdup(NameStr(att->attname))));
	}
	row->row_typeid = var->vartype == RECORDOID ? RelationGetForm(rel)->reltype
		: var->vartype;
	row->row_format = COERCE_IMPLICIT_CAST;
	row->location = -1;
	relation_close(rel, NoLock);
	return (Node *) row;
}

/*
 * Var(rti, attno) -> Var(INDEX_VAR, position of attno in the fragment),
 * back in its own type when it travelled as text; the whole row -> a
 * ROW() of the fetched columns
 */
static Node *
map_to_index_var(Node *node, ColumnMap *map)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == map->rti &&
		((Var *) node)->varlevelsup == 0)
	{
		Var		   *var = (Var *) copyObject(node);
		ListCell   *lc;
		int			pos = 1;

		if (var->varattno == InvalidAttrNumber)
			return whole_row(var, map);
		foreach(lc, map->attnos)
		{
			if (lfirst_int(lc) == var->varattno)
			{
				Oid			type = var->vartype;
				Oid			collation = var->varcollid;
				CoerceViaIO *in;

				var->varno = INDEX_VAR;
				var->varattno = pos;
				if (!bms_is_member(pos, map->as_text))
					return (Node *) var;
				var->vartype = TEXTOID;
				var->vartypmod = -1;
				var->varcollid = DEFAULT_COLLATION_OID;
				in = makeNode(CoerceViaIO);
				in->arg = (Expr *) var;
				in->resulttype = type;
				in->resultcollid = collation;
				in->coerceformat = COERCE_IMPLICIT_CAST;
				in->location = -1;
				return (Node *) in;
			}
			pos++;
		}
		elog(ERROR, "column %d of a gathered scan was not fetched", var->varattno);
	}
	return expression_tree_mutator(node, map_to_index_var, (void *) map);
}

/*
 * Column attno as the fragment fetches it.  Values of built-in types
 * travel as they are.  A value of a type created on the members (an enum,
 * a composite, a domain, a range, an array of those, an extension's type)
 * or one naming a catalog entry (regclass, ...) may hold catalog OIDs that
 * differ between members, so it travels in text form: the member turns its
 * column into text with its own type's output function (it maps the
 * column's type to its own, see cluster/fragment.c), the coordinator reads
 * the text back with its own type's input function.  A column's collation only matters for the
 * filters that stay here.
 */
static Expr *
fetch_column(Scan *scan, RangeTblEntry *rte, AttrNumber a, bool *as_text)
{
	Oid			type;
	int32		typmod;
	Oid			coll;
	Var		   *var;
	CoerceViaIO *out;

	get_atttypetypmodcoll(rte->relid, a, &type, &typmod, &coll);
	if (OidIsValid(coll) && coll >= FirstNormalObjectId)
		coll = DEFAULT_COLLATION_OID;
	var = makeVar(scan->scanrelid, a, type, typmod, coll, 0);
	*as_text = (type >= FirstNormalObjectId || rx_type_names_catalog_entry(type));
	if (!*as_text)
		return (Expr *) var;
	out = makeNode(CoerceViaIO);
	out->arg = (Expr *) var;
	out->resulttype = TEXTOID;
	out->resultcollid = DEFAULT_COLLATION_OID;
	out->coerceformat = COERCE_IMPLICIT_CAST;
	out->location = -1;
	return (Expr *) out;
}

static void
refuse(Scan *scan, RangeTblEntry *rte, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot gather distributed table \"%s\" for this plan",
					get_rel_name(rte->relid)),
			 errdetail("%s", why)));
}

/*
 * Conditions column = value, with value computed from the serial part's
 * parameters (a nested loop's outer row), and a hashable equality: the
 * RECEIVE hashes its kept rows by those columns (lookup.c), so that a
 * rescan does not filter every row.  quals are already mapped to the
 * fragment's output (INDEX_VAR).
 */
static void
set_lookup_keys(CustomScan *receive, List *quals)
{
	List	   *cols = NIL,
			   *col_hash = NIL,
			   *param_hash = NIL,
			   *collations = NIL,
			   *values = NIL;
	ListCell   *lc;

	foreach(lc, quals)
	{
		OpExpr	   *op = lfirst(lc);
		Node	   *l,
				   *r;
		Oid			lhash,
					rhash;
		bool		col_left;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		l = (Node *) rx_strip_relabel(linitial(op->args));
		r = (Node *) rx_strip_relabel(lsecond(op->args));
		if (IsA(l, Var) && ((Var *) l)->varno == INDEX_VAR &&
			!contain_var_clause(r))
			col_left = true;
		else if (IsA(r, Var) && ((Var *) r)->varno == INDEX_VAR &&
				 !contain_var_clause(l))
			col_left = false;
		else
			continue;
		if (contain_volatile_functions(col_left ? r : l) ||
			!op_hashjoinable(op->opno, exprType(linitial(op->args))) ||
			!get_op_hash_functions(op->opno, &lhash, &rhash))
			continue;
		cols = lappend_int(cols, ((Var *) (col_left ? l : r))->varattno);
		col_hash = lappend_oid(col_hash, col_left ? lhash : rhash);
		param_hash = lappend_oid(param_hash, col_left ? rhash : lhash);
		collations = lappend_oid(collations, op->inputcollid);
		values = lappend(values, col_left ? lsecond(op->args) : linitial(op->args));
	}
	if (cols != NIL)
		rx_receive_set_lookup(receive, cols, col_hash, param_hash, collations,
							  values);
}

/* the executor parameters an expression reads */
static bool
exec_params_walker(Node *node, Bitmapset **ids)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		*ids = bms_add_member(*ids, ((Param *) node)->paramid);
	return expression_tree_walker(node, exec_params_walker, (void *) ids);
}

/* rows of a distributed table on all members, as the planner would guess */
static double
table_rows(Oid relid, int nmembers)
{
	Relation	rel = relation_open(relid, NoLock);
	double		rows = rel->rd_rel->reltuples;

	/* never analyzed: as PostgreSQL's planner does, from the size */
	if (rows < 0)
		rows = (double) RelationGetNumberOfBlocks(rel) * (BLCKSZ / 100);
	relation_close(rel, NoLock);
	return rows * Max(nmembers, 1);
}

/*
 * Remote lookups a keyed gather makes before it gathers the table instead
 * (receive_keyed.c).  A lookup on another member costs a round trip (0.2
 * to 0.3 ms on loopback); gathering a table costs about a thousandth of
 * a lookup per row (80,000 short rows in 20 ms against 0.2 ms a lookup,
 * 3 members on 2 cores).  Switching once the lookups have cost what the
 * gather would keeps either path within about
 * twice the better one, whatever the number of rescans turns out to be.
 */
static int
keyed_remote_max(Oid relid, int nmembers)
{
	return (int) Min(16 + table_rows(relid, nmembers) / RX_LOOKUP_ROWS, (double) INT_MAX);
}

/*
 * The keyed fragment's nodes: new plan node ids, the executor parameters
 * each reads (its extParam: their values travel with each lookup), and
 * whether a member can run them as sent.
 */
static bool
keyed_tree(RxPlanContext *ctx, Plan *plan, Bitmapset **params)
{
	Bitmapset  *own = NULL;
	ListCell   *lc;

	if (!rx_plan_node_shippable(plan))
		return false;
	plan->plan_node_id = rx_new_node_id(ctx);
	(void) exec_params_walker((Node *) plan->targetlist, &own);
	(void) exec_params_walker((Node *) plan->qual, &own);
	switch (nodeTag(plan))
	{
		case T_IndexScan:
			(void) exec_params_walker((Node *) ((IndexScan *) plan)->indexqual, &own);
			break;
		case T_BitmapIndexScan:
			(void) exec_params_walker((Node *) ((BitmapIndexScan *) plan)->indexqual, &own);
			break;
		case T_BitmapHeapScan:
			(void) exec_params_walker((Node *) ((BitmapHeapScan *) plan)->bitmapqualorig, &own);
			break;
		case T_BitmapAnd:
		case T_BitmapOr:
			break;
		default:
			return false;
	}
	foreach(lc, rx_plan_children(plan))
	{
		Bitmapset  *child = NULL;

		if (!keyed_tree(ctx, lfirst(lc), &child))
			return false;
		own = bms_add_members(own, child);
	}
	plan->extParam = own;
	plan->allParam = bms_copy(own);
	*params = own;
	return true;
}

/*
 * An index or bitmap scan whose conditions compare the distribution
 * column with a value of the serial part's parameters (a nested loop's
 * outer row, a correlated subquery's outer value): the rows of one rescan
 * are all on that value's owner.  Give the RECEIVE a keyed fragment, the
 * same scan with its parameterized conditions, which each rescan runs on
 * the owner only, with the parameters' values, instead of gathering the
 * whole table once (receive_keyed.c).  It returns the gather fragment's
 * columns; the RECEIVE's filter still holds every condition with
 * parameters, a recheck.
 */
static void
set_keyed(RxPlanContext *ctx, CustomScan *receive, Scan *scan,
		  RangeTblEntry *rte, List *quals, Plan *frag)
{
	Plan	   *keyed;
	RxTableDist dist;
	Expr	   *value = NULL;
	Bitmapset  *params = NULL;
	int			remote_max;
	ListCell   *lc;

	if (!IsA(scan, IndexScan) && !IsA(scan, BitmapHeapScan))
		return;
	rx_table_distribution(rte->relid, &dist);
	if (dist.method != RX_DIST_HASH)
		return;
	foreach(lc, quals)
	{
		Expr	   *v = rx_distcol_equality(lfirst(lc), scan->scanrelid, &dist);

		if (v != NULL && rx_has_exec_param((Node *) v) &&
			!contain_var_clause((Node *) v) &&
			!contain_volatile_functions((Node *) v) &&
			rx_hashes_alike(dist.hash_opfamily, dist.distcol_type,
							exprType((Node *) v)) &&
			op_strict(((OpExpr *) lfirst(lc))->opno))
		{
			value = v;
			break;
		}
	}
	if (value == NULL)
		return;
	remote_max = keyed_remote_max(rte->relid, ctx->nmembers);
	/*
	 * a nested loop expected to look up more keys than that, one round
	 * trip each, or in batches (lookahead.c) a key a fraction of one:
	 * gather
	 */
	if (ctx->rescans * (ctx->nmembers - 1) / Max(ctx->nmembers, 1) /
		(ctx->lookahead ? RX_KEYS_PER_ROUND_TRIP : 1) > remote_max)
		return;

	/* the same scan (its costs and estimates too), the gather's columns */
	keyed = (Plan *) copyObject(scan);
	keyed->targetlist = copyObject(frag->targetlist);
	keyed->qual = copyObject(frag->qual);
	keyed->initPlan = NIL;		/* the RECEIVE runs them */
	keyed->parallel_aware = false;
	if (!keyed_tree(ctx, keyed, &params))
		return;
	rx_receive_set_keyed(receive, keyed, value, rte->relid, remote_max);
}

/* the index order of an index scan, as sort keys on table columns */
typedef struct IndexOrder
{
	int			nkeys;
	AttrNumber	attnos[INDEX_MAX_KEYS];
	Oid			ops[INDEX_MAX_KEYS];
	Oid			collations[INDEX_MAX_KEYS];
	bool		nulls_first[INDEX_MAX_KEYS];
} IndexOrder;

static void
index_order(IndexScan *iscan, RangeTblEntry *rte, IndexOrder *order)
{
	Relation	idx = index_open(iscan->indexid, AccessShareLock);
	bool		backward = ScanDirectionIsBackward(iscan->indexorderdir);

	order->nkeys = 0;
	if (iscan->indexorderby != NIL)
		refuse(&iscan->scan, rte, "An index scan ordered by distance cannot be gathered.");
	if (idx->rd_indam->amcanorder)
	{
		for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(idx); i++)
		{
			int16		opt = idx->rd_indoption[i];
			bool		desc = (opt & INDOPTION_DESC) != 0;

			if (idx->rd_index->indkey.values[i] == 0)
				refuse(&iscan->scan, rte, "The order of an expression index cannot be kept when its rows are gathered.");
			order->attnos[i] = idx->rd_index->indkey.values[i];
			order->ops[i] = get_opfamily_member(idx->rd_opfamily[i],
												idx->rd_opcintype[i],
												idx->rd_opcintype[i],
												desc != backward ?
												BTGreaterStrategyNumber :
												BTLessStrategyNumber);
			if (!OidIsValid(order->ops[i]))
				refuse(&iscan->scan, rte, "The index has no ordering operator.");
			order->collations[i] = idx->rd_indcollation[i];
			order->nulls_first[i] = ((opt & INDOPTION_NULLS_FIRST) != 0) != backward;
			order->nkeys++;
		}
	}
	index_close(idx, NoLock);
}

/* position of column attno in the fragment's output */
static AttrNumber
map_position(ColumnMap *map, AttrNumber attno)
{
	ListCell   *lc;

	foreach(lc, map->attnos)
		if (lfirst_int(lc) == attno)
			return foreach_current_index(lc) + 1;
	elog(ERROR, "column %d of a gathered scan was not fetched", attno);
	return InvalidAttrNumber;
}

/* the positions of the index order's columns in the fragment's output */
static void
order_columns(ColumnMap *map, IndexOrder *order, AttrNumber *cols)
{
	for (int i = 0; i < order->nkeys; i++)
	{
		cols[i] = map_position(map, order->attnos[i]);
		if (bms_is_member(cols[i], map->as_text))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot gather distributed table \"%s\" in the order of an index on a column of a user-defined type",
							get_rel_name(map->relid)),
					 errdetail("Values of such types travel between members in text form, which sorts differently.")));
	}
}

/* the index columns an index-only scan refers to, as table columns */
Node *
rx_index_vars_as_columns(Node *node, List *indextlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
		return copyObject((Node *) list_nth_node(TargetEntry, indextlist,
												 ((Var *) node)->varattno - 1)->expr);
	return expression_tree_mutator(node, rx_index_vars_as_columns, (void *) indextlist);
}

/*
 * An index-only scan (what PostgreSQL takes for count(*) over an
 * all-visible table, whatever the planner hides) as the index scan it
 * stands for: its columns and conditions in terms of the table's.
 */
static Scan *
index_only_as_index_scan(IndexOnlyScan *ios)
{
	IndexScan  *is = makeNode(IndexScan);

	is->scan = ios->scan;
	is->scan.plan.type = T_IndexScan;
	is->scan.plan.targetlist = (List *)
		rx_index_vars_as_columns((Node *) ios->scan.plan.targetlist, ios->indextlist);
	is->scan.plan.qual = (List *)
		rx_index_vars_as_columns((Node *) ios->scan.plan.qual, ios->indextlist);
	is->indexid = ios->indexid;
	/* (index columns as INDEX_VAR in both) */
	is->indexqual = ios->indexqual;
	is->indexqualorig = (List *)
		rx_index_vars_as_columns((Node *) ios->recheckqual, ios->indextlist);
	is->indexorderby = ios->indexorderby;
	is->indexorderdir = ios->indexorderdir;
	return &is->scan;
}

Plan *
rx_fallback_scan(RxPlanContext *ctx, Scan *scan)
{
	Index		rti = scan->scanrelid;
	RangeTblEntry *rte = rt_fetch(rti, ctx->stmt->rtable);
	List	   *quals = list_copy(scan->plan.qual);
	List	   *pushed = NIL;
	List	   *kept = NIL;
	Bitmapset  *attrs = NULL;
	ColumnMap	map;
	IndexOrder	order = {0};
	AttrNumber	sort_cols[INDEX_MAX_KEYS];
	Scan	   *frag;
	Plan	   *fragment;
	List	   *tlist = NIL;
	CustomScan *shuffle;
	CustomScan *receive;
	ListCell   *lc;
	int			attno;
	int			exchange_id;
	bool		index_only = IsA(scan, IndexOnlyScan);

	if (index_only)
	{
		scan = index_only_as_index_scan((IndexOnlyScan *) scan);
		quals = list_copy(scan->plan.qual);
	}
	switch (nodeTag(scan))
	{
		case T_SeqScan:
			break;
		case T_IndexScan:
			quals = list_concat(quals, ((IndexScan *) scan)->indexqualorig);
			index_order((IndexScan *) scan, rte, &order);
			break;
		case T_BitmapHeapScan:
			quals = list_concat(quals, ((BitmapHeapScan *) scan)->bitmapqualorig);
			break;
		case T_TidScan:
			/* ctid is the row's place on the member that holds it */
			{
				List	   *tidquals = ((TidScan *) scan)->tidquals;

				/* the TID conditions are ORed */
				quals = lappend(quals, list_length(tidquals) == 1
								? linitial(tidquals)
								: make_orclause(tidquals));
			}
			break;
		case T_TidRangeScan:
			quals = list_concat(quals, ((TidRangeScan *) scan)->tidrangequals);
			break;
		case T_SampleScan:
			if (!rx_expr_shippable((Node *) ((SampleScan *) scan)->tablesample))
				refuse(scan, rte, "Only the sampling methods built into PostgreSQL (BERNOULLI, SYSTEM) with built-in arguments can sample a distributed table.");
			break;
		default:
			refuse(scan, rte, "Only sequential, sample, TID, index, index-only and bitmap scans of a distributed table can be gathered.");
	}

	/* the columns the scan's output and filters read */
	pull_varattnos((Node *) scan->plan.targetlist, rti, &attrs);
	pull_varattnos((Node *) quals, rti, &attrs);
	for (int i = 0; i < order.nkeys; i++)
		attrs = bms_add_member(attrs, order.attnos[i] - FirstLowInvalidHeapAttributeNumber);
	map.rti = rti;
	map.relid = rte->relid;
	map.attnos = NIL;
	map.as_text = NULL;
	attno = -1;
	while ((attno = bms_next_member(attrs, attno)) >= 0)
	{
		AttrNumber	a = attno + FirstLowInvalidHeapAttributeNumber;

		if (a == InvalidAttrNumber)
		{
			/* the whole row: every column, put together here */
			Relation	rel = relation_open(rte->relid, NoLock);

			for (int i = 0; i < RelationGetNumberOfAttributes(rel); i++)
				if (!TupleDescAttr(RelationGetDescr(rel), i)->attisdropped)
					attrs = bms_add_member(attrs, i + 1 - FirstLowInvalidHeapAttributeNumber);
			relation_close(rel, NoLock);
			continue;
		}
		map.attnos = lappend_int(map.attnos, a);
	}

	/*
	 * filters without parameters of the serial part run on the members:
	 * those change between rescans; bound parameters ($1) are fixed for
	 * the execution and travel with the fragment
	 */
	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);

		if (!rx_has_exec_param(qual) && rx_expr_shippable(qual))
			pushed = lappend(pushed, qual);
		else
			kept = lappend(kept, qual);
	}

	if (IsA(scan, SampleScan))
	{
		/* every member samples its own part */
		SampleScan *sample = makeNode(SampleScan);

		sample->tablesample = copyObject(((SampleScan *) scan)->tablesample);
		frag = &sample->scan;
	}
	else if (order.nkeys > 0 &&
			 (((IndexScan *) scan)->indexqual != NIL || !index_only) &&
			 !rx_has_exec_param((Node *) ((IndexScan *) scan)->indexqualorig) &&
			 rx_expr_shippable((Node *) ((IndexScan *) scan)->indexqualorig))
	{
		/*
		 * An index scan whose conditions (if any) the members can
		 * evaluate: each member scans its index, in the order the plan
		 * above wants, and the first rows come at once (min/max's LIMIT 1
		 * over the index, ORDER BY k LIMIT n, a keyed lookup) instead of
		 * after a sort of the whole part; PostgreSQL chose the index for
		 * that order where reading it all costs more than a sort (not an
		 * index-only scan of the whole index: that was chosen for its
		 * reads, which the members' heap fetches would not be).  Its
		 * conditions stay as filters too (pushed), which is only a recheck.
		 */
		IndexScan  *iscan = (IndexScan *) scan;
		IndexScan  *ifrag = makeNode(IndexScan);

		ifrag->indexid = iscan->indexid;
		ifrag->indexqual = copyObject(iscan->indexqual);
		ifrag->indexqualorig = copyObject(iscan->indexqualorig);
		ifrag->indexorderdir = iscan->indexorderdir;
		frag = &ifrag->scan;
	}
	else
		frag = (Scan *) makeNode(SeqScan);
	frag->scanrelid = rti;
	foreach(lc, map.attnos)
	{
		AttrNumber	a = lfirst_int(lc);
		bool		as_text;
		Expr	   *expr = fetch_column(scan, rte, a, &as_text);

		tlist = lappend(tlist,
						makeTargetEntry(expr, list_length(tlist) + 1,
										get_attname(rte->relid, a, false), false));
		if (as_text)
			map.as_text = bms_add_member(map.as_text, list_length(tlist));
	}
	frag->plan.targetlist = tlist;
	frag->plan.qual = pushed;
	/*
	 * A scan with conditions on the serial part's parameters estimated the
	 * rows of one rescan; the fragment, without them, returns many more.
	 */
	frag->plan.plan_rows = rx_has_exec_param((Node *) kept)
		? Max(scan->plan.plan_rows, table_rows(rte->relid, ctx->nmembers))
		: scan->plan.plan_rows;
	frag->plan.plan_width = scan->plan.plan_width;
	frag->plan.startup_cost = scan->plan.startup_cost;
	frag->plan.total_cost = scan->plan.total_cost;
	frag->plan.plan_node_id = rx_new_node_id(ctx);

	fragment = (Plan *) frag;
	if (order.nkeys > 0)
	{
		order_columns(&map, &order, sort_cols);
		if (!IsA(frag, IndexScan))
			fragment = (Plan *) rx_make_sort(ctx, fragment, order.nkeys, sort_cols,
											 order.ops, order.collations,
											 order.nulls_first);
	}

	exchange_id = rx_new_node_id(ctx);
	shuffle = rx_make_shuffle(fragment, exchange_id, RX_ROUTE_COORDINATOR,
							  -1, NIL, NIL, NIL);
	shuffle->scan.plan.plan_node_id = rx_new_node_id(ctx);

	receive = rx_make_receive((Plan *) shuffle, exchange_id, RX_RECEIVE_GATHER,
							  true, true);
	receive->scan.plan.plan_node_id = exchange_id;
	if (order.nkeys > 0)
		rx_receive_set_merge(receive, order.nkeys, sort_cols, order.ops,
							 order.collations, order.nulls_first);
	receive->scan.plan.targetlist = (List *)
		map_to_index_var((Node *) scan->plan.targetlist, &map);
	receive->scan.plan.qual = (List *) map_to_index_var((Node *) kept, &map);
	set_lookup_keys(receive, receive->scan.plan.qual);
	set_keyed(ctx, receive, scan, rte, quals, &frag->plan);
	receive->scan.plan.initPlan = scan->plan.initPlan;
	receive->scan.plan.extParam = bms_copy(scan->plan.extParam);
	receive->scan.plan.allParam = bms_copy(scan->plan.allParam);
	receive->scan.plan.plan_rows = scan->plan.plan_rows;
	receive->scan.plan.plan_width = scan->plan.plan_width;
	receive->scan.plan.startup_cost = scan->plan.startup_cost;
	receive->scan.plan.total_cost = scan->plan.total_cost;
	return (Plan *) receive;
}

/*
 * Can a nested loop's lookups go in batches?  Its outer side, rewritten,
 * is read ahead by a LOOKAHEAD (lookahead.c), which sets the loop's
 * parameters for each row it reads: the loop must have parameters, and
 * reading rows it may never need must be harmless.
 */
bool
rx_lookahead_possible(NestLoop *loop)
{
	return loop->nestParams != NIL &&
		rx_plan_speculation_safe(loop->join.plan.lefttree);
}

/* a nested loop over a keyed RECEIVE looks its keys up in batches */
void
rx_fallback_lookahead(RxPlanContext *ctx, NestLoop *loop)
{
	Plan	   *inner = loop->join.plan.righttree;

	if (!rx_is_receive(inner) || ((CustomScan *) inner)->custom_plans == NIL ||
		!rx_lookahead_possible(loop))
		return;
	loop->join.plan.lefttree = rx_lookahead_node(loop->join.plan.lefttree,
												 inner->plan_node_id,
												 loop->nestParams,
												 rx_new_node_id(ctx));
}
