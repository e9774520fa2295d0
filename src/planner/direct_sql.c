/*-------------------------------------------------------------------------
 *
 * direct_sql.c
 *	  Direct dispatch without a plan here: a lookup by key of one
 *	  distributed table whose owner is another member goes there as SQL.
 *
 * A query that reads one hash-distributed table and keeps only rows whose
 * distribution column equals one value known when it is planned (a
 * constant, or a bound parameter of a custom plan) needs the rows of that
 * value's owner only (direct.c).  When the owner is another member, a plan
 * made here only travels: turned into text, signed, and turned back into
 * a plan there.  For a point lookup that was most of its cost: planning
 * here about a sixth of the machine's time under pgbench -S, the plan into
 * text and back another sixth.  So such a query is deparsed instead, with
 * its key made a parameter of its own, and goes in the same signed message
 * as a plan would, with the statement's settings, timestamps and bound
 * values (dispatch.c); the owner plans it with PostgreSQL's plan cache,
 * once per session for every key (cluster/sql_plans.c), and runs it on its
 * rows.  The DIRECT node above (exec/direct.c) is the one of every
 * directly dispatched query: the same connection, snapshot and rows back.
 * The owner's plan is the one this member would make: the same planner on
 * the same kind of data, its indexes, its min/max and top-N shapes.
 *
 * A key known only at execution (a bound parameter of a generic plan: a
 * prepared statement run many times, PL/pgSQL) may be this member's or
 * another's: such a query is planned by direct.c with its local plan, for
 * a key of this member, and carries its text as well, sent instead of the
 * plan to any other owner (exec/direct.c).  The parameter is the
 * statement's own; the text is the same for every execution, and the
 * owner's plan cache plans it once.
 *
 * Left to the planned path of direct.c, which handles them: a key this
 * member owns (it runs here at once), EXPLAIN (which shows the local plan
 * the owner runs and what it did), SCROLL cursors, subqueries, CTEs,
 * joins, set operations, row locks, what a plan sent to a member may not
 * hold either (functions that answer for the session running them,
 * user-defined routines and types: unshippable_walker()), tables with
 * inheritance children.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"

#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "exec/direct.h"
#include "planner/planner.h"

/*
 * Something the owner would not evaluate as this member does: what
 * rx_expr_shippable() keeps from a plan sent to members (functions that
 * answer for the session that runs them, such as pg_backend_pid(); user
 * routines; bound parameters of user-defined types, whose type OIDs
 * travel).  The range table is left out: the owner applies row-level
 * security itself.
 */
static bool
unshippable_walker(Node *node, void *context)
{
	return node != NULL && !rx_expr_shippable(node);
}

/* every constant equal to the key becomes the key's parameter */
typedef struct KeyParam
{
	Const	   *key;
	Param	   *param;
} KeyParam;

static Node *
key_param_mutator(Node *node, KeyParam *kp)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Const) && equal(node, kp->key))
		return (Node *) copyObject(kp->param);
	if (IsA(node, Query))
		return (Node *) query_tree_mutator((Query *) node, key_param_mutator,
										   kp, 0);
	return expression_tree_mutator(node, key_param_mutator, kp);
}

/*
 * The key: the value the distribution column equals in one of the
 * conditions of WHERE, a constant or a bound parameter; NULL if none.
 * *value is a Const of it, or NULL for a parameter without a value fixed
 * for this plan (a generic plan's).
 */
static Expr *
find_key(Query *parse, const RxTableDist *dist, ParamListInfo boundParams,
		 Const **value)
{
	ListCell   *lc;

	foreach(lc, make_ands_implicit((Expr *) parse->jointree->quals))
	{
		Expr	   *key = rx_distcol_equality(lfirst(lc), 1, dist);
		Oid			type;

		if (key == NULL)
			continue;
		key = rx_strip_relabel(key);
		type = exprType((Node *) key);
		if (!rx_hashes_alike(dist->hash_opfamily, dist->distcol_type, type))
			continue;
		if (IsA(key, Const))
		{
			*value = (Const *) key;
			return key;
		}
		if (IsA(key, Param) && ((Param *) key)->paramkind == PARAM_EXTERN)
		{
			ParamExternData workspace;
			ParamExternData *prm = boundParams == NULL ? NULL :
				rx_bound_param(boundParams, ((Param *) key)->paramid,
							   &workspace);

			/* a custom plan's value, fixed for this plan */
			*value = NULL;
			if (prm != NULL && (prm->pflags & PARAM_FLAG_CONST) &&
				prm->ptype == type)
				*value = makeConst(type, -1, InvalidOid, get_typlen(type),
								   prm->value, prm->isnull, get_typbyval(type));
			return key;
		}
	}
	return NULL;
}

/*
 * The plan of a query that goes to its key's owner as SQL, or NULL when it
 * does not (planned as direct.c plans it).  *generic_sql: the query's text
 * when its key is known only at execution, else NULL.  Called with a
 * query rx_direct_candidate() accepted.
 */
PlannedStmt *
rx_direct_sql_plan(Query *parse, int cursorOptions, ParamListInfo boundParams,
				   int nmembers, char **generic_sql)
{
	RangeTblEntry *rte;
	RxTableDist dist;
	Expr	   *key;
	Const	   *value = NULL;
	Query	   *copy;
	List	   *tlist = NIL;
	PlannedStmt *stmt;
	ListCell   *lc;
	bool		key_param;

	*generic_sql = NULL;
	if (!rx_direct_sql || rx_explaining() ||
		(cursorOptions & CURSOR_OPT_SCROLL) ||
		parse->commandType != CMD_SELECT || parse->utilityStmt != NULL ||
		parse->hasSubLinks || parse->cteList != NIL ||
		parse->setOperations != NULL || parse->rowMarks != NIL ||
		parse->hasForUpdate || parse->hasModifyingCTE ||
		list_length(parse->rtable) != 1 ||
		list_length(parse->jointree->fromlist) != 1 ||
		!IsA(linitial(parse->jointree->fromlist), RangeTblRef))
		return NULL;
	rte = linitial_node(RangeTblEntry, parse->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION ||
		rte->tablesample != NULL || has_subclass(rte->relid))
		return NULL;
	rx_table_distribution(rte->relid, &dist);
	if (dist.method != RX_DIST_HASH ||
		query_tree_walker(parse, unshippable_walker, NULL,
						  QTW_IGNORE_RANGE_TABLE))
		return NULL;
	key = find_key(parse, &dist, boundParams, &value);
	if (key != NULL && value == NULL)
	{
		*generic_sql = rx_deparse_query(parse);
		return NULL;
	}
	if (key == NULL ||
		rx_member_of_key(rte->relid, value->consttype, value->constvalue,
						 value->constisnull, nmembers) == rx_self_member_index())
		return NULL;

	/* a constant key: a parameter after the statement's (in a copy) */
	copy = parse;
	key_param = IsA(key, Const);
	if (key_param)
	{
		KeyParam	kp;

		kp.key = (Const *) key;
		kp.param = makeNode(Param);
		kp.param->paramkind = PARAM_EXTERN;
		kp.param->paramid = (boundParams != NULL ? boundParams->numParams : 0) + 1;
		kp.param->paramtype = value->consttype;
		kp.param->paramtypmod = value->consttypmod;
		kp.param->paramcollid = value->constcollid;
		kp.param->location = -1;
		copy = (Query *) key_param_mutator((Node *) copy, &kp);
	}

	/* the columns the client gets; the member's plan drops the others */
	foreach(lc, parse->targetList)
		if (!lfirst_node(TargetEntry, lc)->resjunk)
			tlist = lappend(tlist, lfirst(lc));

	stmt = makeNode(PlannedStmt);
	stmt->commandType = CMD_SELECT;
	stmt->queryId = parse->queryId;
	stmt->canSetTag = parse->canSetTag;
	stmt->planTree = rx_direct_sql_node(tlist, key, rte->relid,
										rx_deparse_query(copy), key_param);
	/* privileges are checked here too, as for any query */
	stmt->rtable = parse->rtable;
	stmt->relationOids = list_make1_oid(rte->relid);
	stmt->stmt_location = parse->stmt_location;
	stmt->stmt_len = parse->stmt_len;
	return stmt;
}
