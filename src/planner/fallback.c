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
 * Merge Join, an ORDER BY without Sort): then each member sorts its rows
 * the same way and the RECEIVE merges them.  EXPLAIN shows the RECEIVE as
 * a fallback.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_index.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "exec/exchange.h"
#include "planner/planner.h"

typedef struct ColumnMap
{
	Index		rti;
	List	   *attnos;			/* column of the relation per scan position */
} ColumnMap;

/* Var(rti, attno) -> Var(INDEX_VAR, position of attno in the fragment) */
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

		foreach(lc, map->attnos)
		{
			if (lfirst_int(lc) == var->varattno)
			{
				var->varno = INDEX_VAR;
				var->varattno = pos;
				return (Node *) var;
			}
			pos++;
		}
		elog(ERROR, "column %d of a gathered scan was not fetched", var->varattno);
	}
	return expression_tree_mutator(node, map_to_index_var, (void *) map);
}

static bool
contains_param_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	/*
	 * Executor parameters of the serial part change between rescans; bound
	 * parameters ($1) are fixed for the execution and travel with the
	 * fragment, so filters on them run on the members.
	 */
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		return true;
	return expression_tree_walker(node, contains_param_walker, context);
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

/* Sort of the fragment's rows by the index order, every column kept */
static Plan *
sort_fragment(RxPlanContext *ctx, Plan *child, ColumnMap *map,
			  IndexOrder *order, AttrNumber *cols)
{
	for (int i = 0; i < order->nkeys; i++)
		cols[i] = map_position(map, order->attnos[i]);
	return (Plan *) rx_make_sort(ctx, child, order->nkeys, cols, order->ops,
								 order->collations, order->nulls_first);
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
	SeqScan    *frag;
	Plan	   *fragment;
	List	   *tlist = NIL;
	CustomScan *shuffle;
	CustomScan *receive;
	ListCell   *lc;
	int			attno;
	int			exchange_id;

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
		default:
			refuse(scan, rte, "Only sequential, index and bitmap scans of a distributed table can be gathered.");
	}

	/* the columns the scan's output and filters read */
	pull_varattnos((Node *) scan->plan.targetlist, rti, &attrs);
	pull_varattnos((Node *) quals, rti, &attrs);
	for (int i = 0; i < order.nkeys; i++)
		attrs = bms_add_member(attrs, order.attnos[i] - FirstLowInvalidHeapAttributeNumber);
	map.rti = rti;
	map.attnos = NIL;
	attno = -1;
	while ((attno = bms_next_member(attrs, attno)) >= 0)
	{
		AttrNumber	a = attno + FirstLowInvalidHeapAttributeNumber;

		if (a <= 0)
			refuse(scan, rte, "System columns and whole-row references of a distributed table cannot be gathered.");
		map.attnos = lappend_int(map.attnos, a);
	}

	/* filters without parameters of the serial part run on the members */
	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);

		if (!contains_param_walker(qual, NULL) && rx_expr_shippable(qual))
			pushed = lappend(pushed, qual);
		else
			kept = lappend(kept, qual);
	}

	frag = makeNode(SeqScan);
	frag->scan.scanrelid = rti;
	foreach(lc, map.attnos)
	{
		AttrNumber	a = lfirst_int(lc);
		Oid			type;
		int32		typmod;
		Oid			coll;

		get_atttypetypmodcoll(rte->relid, a, &type, &typmod, &coll);
		tlist = lappend(tlist,
						makeTargetEntry((Expr *) makeVar(rti, a, type, typmod, coll, 0),
										list_length(tlist) + 1,
										get_attname(rte->relid, a, false), false));
		if (!rx_expr_shippable((Node *) llast_node(TargetEntry, tlist)->expr))
			refuse(scan, rte,
				   psprintf("Column \"%s\" has type %s, which is not built into PostgreSQL: values of such types (enums, composites, domains) refer to catalog entries that differ between members, so they cannot cross the network.",
							get_attname(rte->relid, a, false),
							format_type_with_typemod(type, typmod)));
	}
	frag->scan.plan.targetlist = tlist;
	frag->scan.plan.qual = pushed;
	frag->scan.plan.plan_rows = scan->plan.plan_rows;
	frag->scan.plan.plan_width = scan->plan.plan_width;
	frag->scan.plan.startup_cost = scan->plan.startup_cost;
	frag->scan.plan.total_cost = scan->plan.total_cost;
	frag->scan.plan.plan_node_id = rx_new_node_id(ctx);

	fragment = (Plan *) frag;
	if (order.nkeys > 0)
		fragment = sort_fragment(ctx, fragment, &map, &order, sort_cols);

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
	receive->scan.plan.initPlan = scan->plan.initPlan;
	receive->scan.plan.extParam = bms_copy(scan->plan.extParam);
	receive->scan.plan.allParam = bms_copy(scan->plan.allParam);
	receive->scan.plan.plan_rows = scan->plan.plan_rows;
	receive->scan.plan.plan_width = scan->plan.plan_width;
	receive->scan.plan.startup_cost = scan->plan.startup_cost;
	receive->scan.plan.total_cost = scan->plan.total_cost;
	return (Plan *) receive;
}
