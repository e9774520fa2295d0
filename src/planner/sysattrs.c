/*-------------------------------------------------------------------------
 *
 * sysattrs.c
 *	  System columns of distributed and reference tables in a distributed
 *	  plan.
 *
 * A scan of a distributed table runs on every member, and each member's
 * rows carry that member's catalog: tableoid would be the OID of the
 * table on the member that holds the row, which on the coordinator names
 * some other relation, or none.  As on one server, tableoid is the OID
 * of the table the query names, here the coordinator's: every scan's
 * references to it become that constant before the plan is cut into
 * fragments.  The other system columns (ctid, xmin, xmax, cmin, cmax)
 * keep their meaning on the member holding the row (README, "System
 * columns").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"

#include "cluster/metadata.h"
#include "planner/planner.h"

typedef struct TableOidContext
{
	Index		scanrelid;
	Oid			relid;
} TableOidContext;

static Node *
tableoid_mutator(Node *node, TableOidContext *context)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == context->scanrelid && var->varlevelsup == 0 &&
			var->varattno == TableOidAttributeNumber)
			return (Node *) makeConst(OIDOID, -1, InvalidOid, sizeof(Oid),
									  ObjectIdGetDatum(context->relid),
									  false, true);
		return node;
	}
	return expression_tree_mutator(node, tableoid_mutator, (void *) context);
}

static void
system_columns_walker(PlannedStmt *stmt, Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	check_stack_depth();
	if (rx_is_relation_scan(plan))
	{
		Scan	   *scan = (Scan *) plan;
		RangeTblEntry *rte = rt_fetch(scan->scanrelid, stmt->rtable);
		RxTableDist dist;

		rx_table_distribution(rte->relid, &dist);
		if (rte->rtekind == RTE_RELATION && dist.method != RX_DIST_NONE)
		{
			TableOidContext context = {scan->scanrelid, rte->relid};

			plan->targetlist = (List *)
				tableoid_mutator((Node *) plan->targetlist, &context);
			plan->qual = (List *)
				tableoid_mutator((Node *) plan->qual, &context);
		}
	}
	foreach(lc, rx_plan_children(plan))
		system_columns_walker(stmt, lfirst(lc));
}

void
rx_system_columns(PlannedStmt *stmt)
{
	ListCell   *lc;

	system_columns_walker(stmt, stmt->planTree);
	foreach(lc, stmt->subplans)
		system_columns_walker(stmt, lfirst(lc));
}
