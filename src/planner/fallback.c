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
 * so a SubPlan runs the fragment once, not once per outer row.  EXPLAIN
 * shows the RECEIVE as a fallback.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

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
	/* executor parameters of the serial part, or bound parameters */
	if (IsA(node, Param))
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

Plan *
rx_fallback_scan(RxPlanContext *ctx, Scan *scan)
{
	Index		rti = scan->scanrelid;
	RangeTblEntry *rte = rt_fetch(rti, ctx->stmt->rtable);
	List	   *quals = list_copy(scan->plan.qual);
	List	   *pushed = NIL;
	List	   *kept = NIL;
	Bitmapset  *attrs = NULL;
	ColumnMap		map;
	SeqScan    *frag;
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
			refuse(scan, rte, "A column's type exists only on this server, so its values cannot cross the network.");
	}
	frag->scan.plan.targetlist = tlist;
	frag->scan.plan.qual = pushed;
	frag->scan.plan.plan_rows = scan->plan.plan_rows;
	frag->scan.plan.plan_width = scan->plan.plan_width;
	frag->scan.plan.startup_cost = scan->plan.startup_cost;
	frag->scan.plan.total_cost = scan->plan.total_cost;
	frag->scan.plan.plan_node_id = rx_new_node_id(ctx);

	exchange_id = rx_new_node_id(ctx);
	shuffle = rx_make_shuffle((Plan *) frag, exchange_id, RX_ROUTE_COORDINATOR,
							  -1, NIL, NIL, NIL);
	shuffle->scan.plan.plan_node_id = rx_new_node_id(ctx);

	receive = rx_make_receive((Plan *) shuffle, exchange_id, RX_RECEIVE_GATHER,
							  true, true);
	receive->scan.plan.plan_node_id = exchange_id;
	receive->scan.plan.targetlist = (List *)
		map_to_index_var((Node *) scan->plan.targetlist, &map);
	receive->scan.plan.qual = (List *) map_to_index_var((Node *) kept, &map);
	receive->scan.plan.initPlan = scan->plan.initPlan;
	receive->scan.plan.extParam = bms_copy(scan->plan.extParam);
	receive->scan.plan.allParam = bms_copy(scan->plan.allParam);
	receive->scan.plan.plan_rows = scan->plan.plan_rows;
	receive->scan.plan.plan_width = scan->plan.plan_width;
	receive->scan.plan.startup_cost = scan->plan.startup_cost;
	receive->scan.plan.total_cost = scan->plan.total_cost;
	return (Plan *) receive;
}
