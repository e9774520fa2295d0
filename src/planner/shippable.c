/*-------------------------------------------------------------------------
 *
 * shippable.c
 *	  Which expressions and plan nodes can run on another member.
 *
 * OIDs differ between servers.  Built-in objects (OID below
 * FirstNormalObjectId) are the same everywhere and travel as they are;
 * relations and indexes are mapped by name on arrival (cluster/fragment.c).
 * Any other object - a user-defined function, operator, type or collation
 * - keeps its expression on the coordinator.  Values of user-defined types
 * do not travel either: an enum or composite datum holds OIDs.  SubPlans
 * stay on the coordinator too: their plans may read distributed tables.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "catalog/pg_type.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "planner/planner.h"

static bool
builtin(Oid oid)
{
	return oid < FirstNormalObjectId;
}

bool
rx_type_names_catalog_entry(Oid type)
{
	switch (type)
	{
		case REGCLASSOID:
		case REGTYPEOID:
		case REGPROCOID:
		case REGPROCEDUREOID:
		case REGOPEROID:
		case REGOPERATOROID:
		case REGNAMESPACEOID:
		case REGROLEOID:
		case REGCONFIGOID:
		case REGDICTIONARYOID:
		case REGCOLLATIONOID:
			return true;
		default:
			return false;
	}
}

/*
 * A value that names a catalog entry (regclass, regtype, ...) is an OID:
 * computed or printed on a member it means that member's object.  Only
 * constants naming built-in objects, the same everywhere, may travel.
 */
static bool
names_member_object(Node *node)
{
	Const	   *c = (Const *) node;

	if (!rx_type_names_catalog_entry(exprType(node)))
		return false;
	return !(IsA(c, Const) &&
			 (c->constisnull || builtin(DatumGetObjectId(c->constvalue))));
}

bool
rx_node_calls_user_routine(Node *node)
{
	switch (nodeTag(node))
	{
		case T_FuncExpr:
			return !builtin(((FuncExpr *) node)->funcid);
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			return !builtin(((OpExpr *) node)->opno);
		case T_ScalarArrayOpExpr:
			return !builtin(((ScalarArrayOpExpr *) node)->opno);
		case T_Aggref:
			return !builtin(((Aggref *) node)->aggfnoid);
		case T_WindowFunc:
			return !builtin(((WindowFunc *) node)->winfnoid);
		default:
			return false;
	}
}

/*
 * Built-in functions whose value is this backend's or this server's own,
 * not the statement's: on a member they would answer for the member's
 * session (its process id, its port, its transaction id) or take their
 * lock there, where the session that runs the statement is the
 * coordinator's.  They stay on the coordinator.
 */
static bool
answers_for_this_session(Oid funcid)
{
	switch (funcid)
	{
		case F_PG_BACKEND_PID:
		case F_INET_CLIENT_ADDR:
		case F_INET_CLIENT_PORT:
		case F_INET_SERVER_ADDR:
		case F_INET_SERVER_PORT:
		case F_PG_POSTMASTER_START_TIME:
		case F_PG_CONF_LOAD_TIME:
		case F_PG_CURRENT_LOGFILE_:
		case F_PG_CURRENT_LOGFILE_TEXT:
		case F_PG_MY_TEMP_SCHEMA:
		case F_PG_IS_OTHER_TEMP_SCHEMA:
		case F_CURRENT_QUERY:
		case F_PG_TRIGGER_DEPTH:
		case F_PG_LISTENING_CHANNELS:
		case F_PG_NOTIFICATION_QUEUE_USAGE:
		case F_PG_BLOCKING_PIDS:
		case F_PG_SAFE_SNAPSHOT_BLOCKING_PIDS:
		case F_PG_CURRENT_XACT_ID:
		case F_PG_CURRENT_XACT_ID_IF_ASSIGNED:
		case F_PG_CURRENT_SNAPSHOT:
		case F_TXID_CURRENT:
		case F_TXID_CURRENT_IF_ASSIGNED:
		case F_TXID_CURRENT_SNAPSHOT:
		case F_PG_ADVISORY_LOCK_INT8:
		case F_PG_ADVISORY_LOCK_SHARED_INT8:
		case F_PG_TRY_ADVISORY_LOCK_INT8:
		case F_PG_TRY_ADVISORY_LOCK_SHARED_INT8:
		case F_PG_ADVISORY_UNLOCK_INT8:
		case F_PG_ADVISORY_UNLOCK_SHARED_INT8:
		case F_PG_ADVISORY_LOCK_INT4_INT4:
		case F_PG_ADVISORY_LOCK_SHARED_INT4_INT4:
		case F_PG_TRY_ADVISORY_LOCK_INT4_INT4:
		case F_PG_TRY_ADVISORY_LOCK_SHARED_INT4_INT4:
		case F_PG_ADVISORY_UNLOCK_INT4_INT4:
		case F_PG_ADVISORY_UNLOCK_SHARED_INT4_INT4:
		case F_PG_ADVISORY_UNLOCK_ALL:
		case F_PG_ADVISORY_XACT_LOCK_INT8:
		case F_PG_ADVISORY_XACT_LOCK_SHARED_INT8:
		case F_PG_TRY_ADVISORY_XACT_LOCK_INT8:
		case F_PG_TRY_ADVISORY_XACT_LOCK_SHARED_INT8:
		case F_PG_ADVISORY_XACT_LOCK_INT4_INT4:
		case F_PG_ADVISORY_XACT_LOCK_SHARED_INT4_INT4:
		case F_PG_TRY_ADVISORY_XACT_LOCK_INT4_INT4:
		case F_PG_TRY_ADVISORY_XACT_LOCK_SHARED_INT4_INT4:
			return true;
		default:
			return false;
	}
}

static bool
unshippable_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (rx_node_calls_user_routine(node))
		return true;
	if (IsA(node, FuncExpr) &&
		answers_for_this_session(((FuncExpr *) node)->funcid))
		return true;
	switch (nodeTag(node))
	{
		case T_SubPlan:
		case T_AlternativeSubPlan:
			return true;
		case T_Param:
			/* executor params and bound params travel with the fragment */
			if (((Param *) node)->paramkind != PARAM_EXEC &&
				((Param *) node)->paramkind != PARAM_EXTERN)
				return true;
			break;
		case T_RowExpr:
		case T_RowCompareExpr:
			/* anonymous record values carry backend-local type ids */
			return true;
		default:
			break;
	}
	/* values of user-defined types must not travel */
	switch (nodeTag(node))
	{
		case T_Var:
		case T_Const:
		case T_Param:
		case T_FuncExpr:
		case T_OpExpr:
		case T_Aggref:
		case T_WindowFunc:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_ArrayCoerceExpr:
		case T_CoerceToDomain:
		case T_CaseExpr:
		case T_CoalesceExpr:
		case T_MinMaxExpr:
		case T_ArrayExpr:
		case T_FieldSelect:
		case T_SubscriptingRef:
			if (!builtin(exprType(node)) || exprType(node) == RECORDOID ||
				!builtin(exprCollation(node)) || names_member_object(node))
				return true;
			break;
		default:
			break;
	}
	return expression_tree_walker(node, unshippable_walker, context);
}

bool
rx_expr_shippable(Node *node)
{
	return !unshippable_walker(node, NULL);
}

/* the expressions of a plan node, other than those of its children */
bool
rx_plan_node_shippable(Plan *plan)
{
	List	   *exprs = list_make2(plan->targetlist, plan->qual);

	if (plan->initPlan != NIL)
		return false;
	switch (nodeTag(plan))
	{
		case T_IndexScan:
			exprs = lappend(exprs, ((IndexScan *) plan)->indexqual);
			exprs = lappend(exprs, ((IndexScan *) plan)->indexorderby);
			break;
		case T_IndexOnlyScan:
			exprs = lappend(exprs, ((IndexOnlyScan *) plan)->indexqual);
			break;
		case T_BitmapIndexScan:
			exprs = lappend(exprs, ((BitmapIndexScan *) plan)->indexqual);
			break;
		case T_BitmapHeapScan:
			exprs = lappend(exprs, ((BitmapHeapScan *) plan)->bitmapqualorig);
			break;
		case T_FunctionScan:
			exprs = lappend(exprs, ((FunctionScan *) plan)->functions);
			break;
		case T_ValuesScan:
			exprs = lappend(exprs, ((ValuesScan *) plan)->values_lists);
			break;
		case T_NestLoop:
			exprs = lappend(exprs, ((Join *) plan)->joinqual);
			break;
		case T_MergeJoin:
			exprs = lappend(exprs, ((Join *) plan)->joinqual);
			exprs = lappend(exprs, ((MergeJoin *) plan)->mergeclauses);
			break;
		case T_HashJoin:
			exprs = lappend(exprs, ((Join *) plan)->joinqual);
			exprs = lappend(exprs, ((HashJoin *) plan)->hashclauses);
			break;
		case T_Hash:
			exprs = lappend(exprs, ((Hash *) plan)->hashkeys);
			break;
		case T_Result:
			exprs = lappend(exprs, ((Result *) plan)->resconstantqual);
			break;
		case T_Limit:
			exprs = lappend(exprs, ((Limit *) plan)->limitOffset);
			exprs = lappend(exprs, ((Limit *) plan)->limitCount);
			break;
		case T_Memoize:
			exprs = lappend(exprs, ((Memoize *) plan)->param_exprs);
			break;
		case T_WindowAgg:
			exprs = lappend(exprs, ((WindowAgg *) plan)->startOffset);
			exprs = lappend(exprs, ((WindowAgg *) plan)->endOffset);
			break;
		default:
			break;
	}
	return rx_expr_shippable((Node *) exprs);
}
