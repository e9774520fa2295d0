/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  planner_hook: plan a query over distributed tables as a parallel plan,
 *	  then turn the parallel plan into a distributed one.
 *
 * Planning runs with parallel query made free and every partial scan of a
 * distributed table given as many "workers" as there are members, with
 * the table's size scaled to the whole cluster, so that PostgreSQL's own
 * parallel planner decides which work happens below a Gather.  Then:
 *
 *  - each Gather / Gather Merge whose subtree can be placed (locus.c)
 *	  becomes a gather RECEIVE with the subtree as a fragment below a SHUFFLE
 *	  to the coordinator, exchanges inserted where rows must move;
 *  - first, an aggregate with many groups right above a Gather or Gather
 *	  Merge, and a hash join of two gathered inputs, move below the gather
 *	  (below_gather.c), so that the members do that work on their rows;
 *  - everything else is the serial part on the coordinator: a Gather that
 *	  cannot be placed runs its subtree serially, and every scan of a
 *	  distributed table there is gathered from all members (fallback.c);
 *  - a constant LIMIT right above a gather RECEIVE bounds what each member
 *	  sends;
 *  - a SCROLL cursor's plan gets a Material, RECEIVE cannot scan backward.
 *
 * Before planning, correlated aggregate subqueries and NOT IN become joins
 * (decorrelate.c), so that they run on the members instead of gathering
 * their tables; while planning, paths pay for the rows they would move
 * (costs.c).
 *
 * Reference tables never get partial paths: PostgreSQL then only puts them
 * where each worker reads all of them, which is what a full local copy is
 * (relstats.c, with the sizes of distributed tables scaled to the cluster).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_aggregate.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "postmaster/bgworker_internals.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "rdma_exchange.h"
#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "cluster/row_locks.h"
#include "cluster/metadata.h"
#include "cluster/sql_plans.h"
#include "exec/exchange.h"
#include "exec/direct.h"
#include "planner/planner.h"

static planner_hook_type prev_planner_hook = NULL;

/* members of the cluster while planning a distributed query, else 0 */
static int	planning_nmembers = 0;

/*
 * ... and the processes that run a partial plan part on them, members x
 * (workers per member + 1): what a partial scan is planned for
 */
static int	planning_participants = 0;

int
rx_planning_nmembers(void)
{
	return planning_nmembers;
}

int
rx_planning_participants(void)
{
	return planning_participants;
}

/* whether node reads a hash-distributed table; context: an RTE passed over */
static bool
touches_distributed_walker(Node *node, void *context)
{
	if (node == NULL || node == context)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
		{
			RxTableDist dist;

			/*
			 * Only hash-distributed tables: every member holds all of a
			 * reference table, so a query over reference tables alone (a
			 * foreign key's check among them, with FOR KEY SHARE) runs
			 * here as it is.
			 */
			rx_table_distribution(rte->relid, &dist);
			return dist.method == RX_DIST_HASH;
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, touches_distributed_walker,
								 context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, touches_distributed_walker, context);
}

int
rx_new_node_id(RxPlanContext *ctx)
{
	return ctx->next_node_id++;
}

/* the direct children of a plan node, whatever field holds them */
List *
rx_plan_children(Plan *plan)
{
	List	   *children = NIL;

	if (plan->lefttree)
		children = lappend(children, plan->lefttree);
	if (plan->righttree)
		children = lappend(children, plan->righttree);
	switch (nodeTag(plan))
	{
		case T_Append:
			children = list_concat(children, ((Append *) plan)->appendplans);
			break;
		case T_MergeAppend:
			children = list_concat(children, ((MergeAppend *) plan)->mergeplans);
			break;
		case T_BitmapAnd:
			children = list_concat(children, ((BitmapAnd *) plan)->bitmapplans);
			break;
		case T_BitmapOr:
			children = list_concat(children, ((BitmapOr *) plan)->bitmapplans);
			break;
		case T_SubqueryScan:
			children = lappend(children, ((SubqueryScan *) plan)->subplan);
			break;
		case T_CustomScan:
			children = list_concat(children, ((CustomScan *) plan)->custom_plans);
			break;
		default:
			break;
	}
	return children;
}

static void
max_node_id_walker(Plan *plan, int *max)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	*max = Max(*max, plan->plan_node_id);
	foreach(lc, rx_plan_children(plan))
		max_node_id_walker(lfirst(lc), max);
}

/*
 * LIMIT n [OFFSET m] right above a gather RECEIVE: no member needs to send
 * more than n + m rows, and a Sort in its fragment can keep only those
 * (a bounded, top-N sort), as PostgreSQL tells the Sort below a Gather
 * Merge, and the members' workers right below it are weighed against that
 * many rows.  Not when the RECEIVE filters rows (the limit counts the rows
 * that pass) or keeps them for rescans.
 */
static void
push_limits(RxPlanContext *ctx, Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, Limit))
	{
		Limit	   *limit = (Limit *) plan;
		Plan	   *child = plan->lefttree;
		Const	   *count = (Const *) limit->limitCount;
		Const	   *offset = (Const *) limit->limitOffset;

		if (limit->limitOption == LIMIT_OPTION_COUNT &&
			count && IsA(count, Const) && !count->constisnull &&
			(offset == NULL || (IsA(offset, Const) && !offset->constisnull)) &&
			rx_is_receive(child) && child->qual == NIL &&
			rx_is_shuffle(child->lefttree))
		{
			RxReceiveInfo info;
			int64		needed = DatumGetInt64(count->constvalue);

			rx_receive_info((CustomScan *) child, &info);
			if (offset)
				needed += DatumGetInt64(offset->constvalue);
			/*
			 * (a RECEIVE that keeps its rows for rescans is rescanned under
			 * this Limit, which takes the same first rows each time)
			 */
			if (info.kind == RX_RECEIVE_GATHER &&
				needed >= 0 && needed < PG_INT32_MAX)
			{
				Plan	   *shuffle = child->lefttree;

				rx_shuffle_set_bound((CustomScan *) shuffle, (int) needed);
				shuffle->lefttree = rx_bounded_member_gather(ctx, shuffle->lefttree,
															 (double) needed);
			}
		}
	}
	foreach(lc, rx_plan_children(plan))
		push_limits(ctx, lfirst(lc));
}

/* the Gather's targetlist over the RECEIVE's scan tuple */
static List *
gather_tlist_for_receive(List *tlist)
{
	List	   *result = copyObject(tlist);
	ListCell   *lc;

	foreach(lc, result)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		List	   *vars = pull_var_clause((Node *) tle->expr, 0);
		ListCell   *vc;

		foreach(vc, vars)
		{
			Var		   *var = lfirst_node(Var, vc);

			if (var->varno == OUTER_VAR)
				var->varno = INDEX_VAR;
		}
	}
	return result;
}

static Plan *rewrite_serial(RxPlanContext *ctx, Plan *plan);

static Plan *
rewrite_gather(RxPlanContext *ctx, Plan *gather)
{
	Plan	   *child = gather->lefttree;
	int			exchange_id = gather->plan_node_id;
	Plan	   *fragment = rx_place_fragment(ctx, child, exchange_id);
	CustomScan *receive;
	Result	   *serial;

	if (fragment != NULL)
	{
		receive = rx_make_receive(fragment, exchange_id, RX_RECEIVE_GATHER,
								  false, false);
		receive->scan.plan.plan_node_id = exchange_id;
		receive->scan.plan.targetlist = gather_tlist_for_receive(gather->targetlist);
		receive->scan.plan.initPlan = gather->initPlan;
		receive->scan.plan.startup_cost = gather->startup_cost;
		receive->scan.plan.total_cost = gather->total_cost;
		receive->scan.plan.plan_rows = gather->plan_rows;
		receive->scan.plan.plan_width = gather->plan_width;
		receive->scan.plan.extParam = bms_copy(gather->extParam);
		receive->scan.plan.allParam = bms_copy(gather->allParam);
		if (IsA(gather, GatherMerge))
		{
			GatherMerge *gm = (GatherMerge *) gather;

			/*
			 * Each member must send its rows in the merge's order: its
			 * workers' rows merged, or sorted again where an exchange came
			 * between them and the order PostgreSQL planned for
			 */
			fragment->lefttree = rx_ordered_member_gather(fragment->lefttree, gm);
			if (rx_order_crosses_exchange(fragment->lefttree))
				fragment->lefttree = (Plan *)
					rx_make_sort(ctx, fragment->lefttree, gm->numCols,
								 gm->sortColIdx, gm->sortOperators,
								 gm->collations, gm->nullsFirst);
			rx_receive_set_merge(receive, gm->numCols, gm->sortColIdx,
								 gm->sortOperators, gm->collations,
								 gm->nullsFirst);
		}
		return (Plan *) receive;
	}

	/*
	 * The rules cannot place this subtree: run it serially here, every
	 * distributed scan in it gathered from all members.  A parallel plan
	 * run by one process is a correct serial plan.
	 */
	serial = makeNode(Result);
	serial->plan = *gather;
	NodeSetTag(serial, T_Result);
	serial->plan.lefttree = rewrite_serial(ctx, child);
	serial->plan.righttree = NULL;
	serial->plan.parallel_aware = false;
	serial->resconstantqual = NULL;
	return (Plan *) serial;
}

bool
rx_is_relation_scan(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			return true;
		default:
			return false;
	}
}

static bool
is_distributed_scan(RxPlanContext *ctx, Plan *plan)
{
	Index		rti;
	RangeTblEntry *rte;
	RxTableDist dist;

	if (!rx_is_relation_scan(plan))
		return false;
	rti = ((Scan *) plan)->scanrelid;
	if (bms_is_member(rti, ctx->result_rtis))
		return false;
	rte = rt_fetch(rti, ctx->stmt->rtable);
	if (rte->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(rte->relid, &dist);
	return dist.method == RX_DIST_HASH;
}

List *
rx_column_tlist(List *tlist, Index varno)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		result = lappend(result,
						 makeTargetEntry((Expr *) makeVarFromTargetEntry(varno, tle),
										 tle->resno, tle->resname, tle->resjunk));
	}
	return result;
}

List *
rx_passthrough_tlist(Plan *plan)
{
	return rx_column_tlist(plan->targetlist, OUTER_VAR);
}

void
rx_map_plan_children(RxPlanContext *ctx, Plan *plan,
					 Plan *(*fn) (RxPlanContext *ctx, Plan *child))
{
	ListCell   *lc;

	switch (nodeTag(plan))
	{
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				lfirst(lc) = fn(ctx, lfirst(lc));
			break;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				lfirst(lc) = fn(ctx, lfirst(lc));
			break;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				fn(ctx, ((SubqueryScan *) plan)->subplan);
			break;
		case T_CustomScan:
			foreach(lc, ((CustomScan *) plan)->custom_plans)
				lfirst(lc) = fn(ctx, lfirst(lc));
			break;
		default:
			break;
	}
	plan->lefttree = fn(ctx, plan->lefttree);
	plan->righttree = fn(ctx, plan->righttree);
}

Expr *
rx_distcol_equality(Expr *clause, Index varno, const RxTableDist *dist)
{
	OpExpr	   *op = (OpExpr *) clause;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
		!op_in_opfamily(op->opno, dist->hash_opfamily))
		return NULL;
	for (int side = 0; side < 2; side++)
	{
		Var		   *var = (Var *) rx_strip_relabel(list_nth(op->args, side));

		if (IsA(var, Var) && var->varno == varno && var->varlevelsup == 0 &&
			var->varattno == dist->distcol)
			return list_nth(op->args, 1 - side);
	}
	return NULL;
}

bool
rx_has_exec_param(Node *node)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		return true;
	return expression_tree_walker(node, rx_has_exec_param, NULL);
}

/*
 * A key the executor can compute before the plan runs (exec/direct.c
 * key_owner(), dml_forward.c): a bound parameter, or an expression of
 * constants and bound parameters that gives one value for the whole
 * statement, through stable functions: current_setting('app.tenant')::bigint,
 * the usual key of a multi-tenant application, or a date computed from
 * now().  The member computes the same value, with the statement's
 * settings and timestamps (they travel with the plan or the statement).
 * Not volatile functions, rows' columns, values from above in the plan,
 * or subqueries.
 */
bool
rx_known_at_start(Expr *value)
{
	if (IsA(value, Param))
		return ((Param *) value)->paramkind == PARAM_EXTERN;
	return !contain_var_clause((Node *) value) &&
		!contain_volatile_functions((Node *) value) &&
		!contain_subplans((Node *) value) &&
		!rx_has_exec_param((Node *) value);
}

/*
 * Does plan take values from the plan above it (a nested loop's, an
 * InitPlan's)?  Special rescan signals (executor parameters of no type,
 * such as the one a PostgreSQL Gather leaves on its subtree) carry none.
 */
bool
rx_takes_values(Plan *plan, List *paramExecTypes)
{
	int			paramid = -1;

	while ((paramid = bms_next_member(plan->extParam, paramid)) >= 0)
		if (OidIsValid(list_nth_oid(paramExecTypes, paramid)))
			return true;
	return false;
}

Sort *
rx_make_sort(RxPlanContext *ctx, Plan *child, int nkeys, AttrNumber *cols,
			 Oid *ops, Oid *collations, bool *nulls_first)
{
	Sort	   *sort = makeNode(Sort);

	sort->plan.targetlist = rx_passthrough_tlist(child);
	sort->plan.lefttree = child;
	sort->plan.plan_rows = child->plan_rows;
	sort->plan.plan_width = child->plan_width;
	sort->plan.startup_cost = child->total_cost;
	sort->plan.total_cost = child->total_cost;
	sort->plan.plan_node_id = rx_new_node_id(ctx);
	sort->numCols = nkeys;
	sort->sortColIdx = palloc_array_copy(cols, nkeys);
	sort->sortOperators = palloc_array_copy(ops, nkeys);
	sort->collations = palloc_array_copy(collations, nkeys);
	sort->nullsFirst = palloc_array_copy(nulls_first, nkeys);
	return sort;
}

static Plan *
rewrite_serial(RxPlanContext *ctx, Plan *plan)
{
	if (plan == NULL)
		return NULL;
	check_stack_depth();
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		return rewrite_gather(ctx, plan);
	/*
	 * a cluster of one member is this server (rx_planner() checked that
	 * it is a member): its tables hold every row, so its scans stay here
	 */
	if (ctx->nmembers > 1 && is_distributed_scan(ctx, plan))
		return rx_fallback_scan(ctx, (Scan *) plan);

	plan->parallel_aware = false;
	if (IsA(plan, NestLoop))
	{
		/*
		 * the inner side runs once per outer row, and a keyed lookup there
		 * in batches when the outer rows can be read ahead (fallback.c)
		 */
		double		saved = ctx->rescans;
		bool		saved_lookahead = ctx->lookahead;

		plan->lefttree = rewrite_serial(ctx, plan->lefttree);
		ctx->rescans = saved * Max(plan->lefttree->plan_rows, 1);
		ctx->lookahead = is_distributed_scan(ctx, plan->righttree) &&
			rx_lookahead_possible((NestLoop *) plan);
		plan->righttree = rewrite_serial(ctx, plan->righttree);
		ctx->rescans = saved;
		ctx->lookahead = saved_lookahead;
		rx_fallback_lookahead(ctx, (NestLoop *) plan);
		return plan;
	}
	ctx->lookahead = false;
	rx_map_plan_children(ctx, plan, rewrite_serial);
	return plan;
}

/*
 * A Material over a finished plan: materialize_finished_plan() makes one
 * before set_plan_references(), which would point its targetlist at its
 * child's output; done after, that is left to us (a RECEIVE's own
 * targetlist, which the Material would copy, reads its scan tuple)
 */
static Plan *
material_over(Plan *child, int plan_node_id)
{
	Plan	   *material = materialize_finished_plan(child);

	material->targetlist = rx_passthrough_tlist(child);
	material->plan_node_id = plan_node_id;
	return material;
}

/*
 * Whether the executor can mark and restore a position in plan's rows, as
 * a merge join needs of its inner side: ExecSupportsMarkRestore() asks it
 * of a path, this of a finished plan.  RECEIVE cannot.
 */
static bool
supports_mark(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_Material:
		case T_Sort:
			return true;
		case T_Result:
			return plan->lefttree != NULL && supports_mark(plan->lefttree);
		case T_CustomScan:
			return (((CustomScan *) plan)->flags & CUSTOMPATH_SUPPORT_MARK_RESTORE) != 0;
		default:
			return false;
	}
}

/*
 * PostgreSQL gave a merge join's inner side a Material only where the
 * planned side could not restore a mark; the distributed plan put a
 * RECEIVE there (an ordered gather of an index scan, say): give it one now.
 */
static Plan *
materialize_merge_inners(RxPlanContext *ctx, Plan *plan)
{
	if (plan == NULL)
		return NULL;
	check_stack_depth();
	rx_map_plan_children(ctx, plan, materialize_merge_inners);
	if (IsA(plan, MergeJoin) && !((MergeJoin *) plan)->skip_mark_restore &&
		!supports_mark(plan->righttree))
		plan->righttree = material_over(plan->righttree, rx_new_node_id(ctx));
	return plan;
}

/*
 * PostgreSQL's parallel plan made the distributed plan, in place; it was
 * planned for participants processes per member.  Returns what its cost
 * misses about the members' processes (rx_member_cost_error()).
 */
static double
rx_distribute(PlannedStmt *stmt, int nmembers, int participants)
{
	RxPlanContext ctx;
	int			max_id = 0;
	ListCell   *lc;

	memset(&ctx, 0, sizeof(ctx));
	ctx.stmt = stmt;
	ctx.nmembers = nmembers;
	foreach(lc, stmt->resultRelations)
		ctx.result_rtis = bms_add_member(ctx.result_rtis, lfirst_int(lc));
	/*
	 * Row locks (FOR UPDATE/SHARE) on a distributed table would lock this
	 * member's rows only.  Other row marks (the tables an UPDATE ... FROM
	 * reads) lock nothing.
	 */
	foreach(lc, stmt->rowMarks)
	{
		PlanRowMark *rc = lfirst_node(PlanRowMark, lc);
		RxTableDist dist;

		rx_table_distribution(rt_fetch(rc->rti, stmt->rtable)->relid, &dist);
		if (RowMarkRequiresRowShareLock(rc->markType) && dist.method == RX_DIST_HASH)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("SELECT FOR UPDATE/SHARE is not supported on distributed table \"%s\" here",
							get_rel_name(rt_fetch(rc->rti, stmt->rtable)->relid)),
					 errdetail("Each member would lock only the rows it stores."),
					 errhint("Change the rows with UPDATE directly, or take LOCK TABLE, which locks the table on every member.")));
	}

	rx_system_columns(stmt);

	max_node_id_walker(stmt->planTree, &max_id);
	foreach(lc, stmt->subplans)
		max_node_id_walker(lfirst(lc), &max_id);
	ctx.next_node_id = max_id + 1;

	ctx.rescans = 1;
	ctx.lookahead = false;
	ctx.member_participants = participants;
	rx_rows_per_member(&ctx, stmt->planTree);
	foreach(lc, stmt->subplans)
		rx_rows_per_member(&ctx, lfirst(lc));
	stmt->planTree = rewrite_serial(&ctx, rx_below_gathers(&ctx, stmt->planTree));
	foreach(lc, stmt->subplans)
		lfirst(lc) = rewrite_serial(&ctx, rx_below_gathers(&ctx, lfirst(lc)));
	push_limits(&ctx, stmt->planTree);
	foreach(lc, stmt->subplans)
		push_limits(&ctx, lfirst(lc));
	/* no Gather is left: nothing needs parallel mode */
	stmt->parallelModeNeeded = false;
	rx_prune_exchange_columns(stmt);
	stmt->planTree = materialize_merge_inners(&ctx, stmt->planTree);
	foreach(lc, stmt->subplans)
		lfirst(lc) = materialize_merge_inners(&ctx, lfirst(lc));
	return rx_member_cost_error(&ctx, stmt);
}

static void
set_planning_gucs(int participants)
{
	char		workers[16];

	snprintf(workers, sizeof(workers), "%d",
			 Min(Max(participants, 1), MAX_PARALLEL_WORKER_LIMIT));
	(void) set_config_option("parallel_setup_cost", "0", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("parallel_tuple_cost", "0.01", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("min_parallel_table_scan_size", "0", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("min_parallel_index_scan_size", "0", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("max_parallel_workers_per_gather", workers,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	(void) set_config_option("parallel_leader_participation", "off",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
}

static PlannedStmt *
plan_locally(Query *parse, const char *query_string, int cursorOptions,
			 ParamListInfo boundParams)
{
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/* a function in FROM anywhere in the query: it may be inlined */
static bool
has_function_rte_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
		return ((RangeTblEntry *) node)->rtekind == RTE_FUNCTION;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, has_function_rte_walker,
								 context, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, has_function_rte_walker, context);
}

static bool
rtable_has_distributed(List *rtable)
{
	ListCell   *lc;

	foreach(lc, rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION &&
			touches_distributed_walker((Node *) rte, NULL))
			return true;
	}
	return false;
}

/*
 * standard_planner put a Material on top of a SCROLL cursor's plan only if
 * that plan could not scan backward; RECEIVE and DIRECT cannot, so check
 * again on the distributed plan.
 */
static PlannedStmt *
scrollable(PlannedStmt *stmt, int cursorOptions)
{
	if ((cursorOptions & CURSOR_OPT_SCROLL) &&
		!ExecSupportsBackwardScan(stmt->planTree))
		stmt->planTree = material_over(stmt->planTree,
									   stmt->planTree->plan_node_id);
	return stmt;
}

/*
 * PostgreSQL's parallel plan of a query over distributed tables, for
 * nmembers x participants processes (participants per member)
 */
static PlannedStmt *
plan_distributed(Query *parse, const char *query_string, int cursorOptions,
				 ParamListInfo boundParams, int nmembers, int participants)
{
	PlannedStmt *stmt;
	int			save_nestlevel;
	int			save_planning = planning_nmembers;
	int			save_participants = planning_participants;

	save_nestlevel = NewGUCNestLevel();
	PG_TRY();
	{
		planning_participants = Min(nmembers * participants,
									MAX_PARALLEL_WORKER_LIMIT);
		set_planning_gucs(planning_participants);
		planning_nmembers = nmembers;

		/*
		 * PostgreSQL plans cursors and other portals that may be fetched
		 * in batches without parallelism, since its workers cannot outlive
		 * one executor run.  Fragments can (portal.c): plan them parallel
		 * so that they run on the members instead of gathering every
		 * table.  No Gather is left in the plan, so the executor never
		 * enters parallel mode for it.
		 */
		cursorOptions |= CURSOR_OPT_PARALLEL_OK;
		if (prev_planner_hook)
			stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		planning_nmembers = save_planning;
		planning_participants = save_participants;
		AtEOXact_GUC(true, save_nestlevel);
	}
	PG_END_TRY();
	return stmt;
}

static PlannedStmt *
rx_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	RxMember   *members;
	int			nmembers;
	int			participants;
	Query	   *one_process;
	double		cost;
	double		error;
	List	   *forward;
	struct RxRowLocks *locks;

	if (!rx_enable || rx_in_fragment() || rx_planning_sql() ||
		!IsTransactionState() ||
		!rx_extension_loaded())
		return plan_locally(parse, query_string, cursorOptions, boundParams);

	/*
	 * SELECT ... FOR UPDATE/SHARE: run on the members that store the rows,
	 * reference tables' included (their rows are locked on the first
	 * member)
	 */
	locks = rx_row_locks_check(parse);
	if (locks != NULL)
	{
		stmt = plan_locally(parse, query_string, cursorOptions, boundParams);
		rx_row_locks_plan(stmt, locks);
		return stmt;
	}
	if (!touches_distributed_walker((Node *) parse, NULL))
	{
		/*
		 * The planner may still bring distributed tables in: it inlines
		 * SQL functions in FROM (a SETOF function over a distributed
		 * table).  Look at the final plan's relations; when one is
		 * distributed, plan an unscribbled copy of the query as a
		 * distributed query.
		 */
		Query	   *copy = has_function_rte_walker((Node *) parse, NULL)
			? copyObject(parse) : NULL;

		/* an upsert into a reference table (dml_insert.c) */
		forward = rx_insert_route_sql(parse);
		stmt = plan_locally(parse, query_string, cursorOptions, boundParams);
		if (forward != NIL)
			rx_dml_forward_attach(stmt, forward);
		if (copy == NULL || !rtable_has_distributed(stmt->rtable))
			return stmt;
		parse = copy;
	}

	nmembers = rx_get_members(&members);
	if (nmembers == 0 || rx_self_member_index() < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of an rdma_exchange cluster"),
				 errdetail("The query reads distributed or reference tables."),
				 errhint("Add every member, this one included, with rdma_exchange.add_node().")));

	/*
	 * A query one member answers alone runs there (direct.c): PostgreSQL's
	 * local plan, planned from a copy so that the query is still whole
	 * for the distributed plan when it is not.
	 */
	if (rx_direct_candidate(parse))
	{
		/* a lookup another member answers: sent there as SQL */
		char	   *generic_sql;

		stmt = rx_direct_sql_plan(parse, cursorOptions, boundParams, nmembers,
								  &generic_sql);
		if (stmt != NULL)
			return stmt;
		stmt = plan_locally(copyObject(parse), query_string, cursorOptions,
							boundParams);
		if (rx_direct_plan(stmt, nmembers))
		{
			if (generic_sql != NULL)
				rx_direct_add_sql(stmt, generic_sql);
			return scrollable(stmt, cursorOptions);
		}
	}

	/*
	 * An UPDATE or DELETE that every member runs on its own part (or the
	 * key's owner alone), as SQL: this one too, planned as on one server.
	 * It reads no distributed table but its target and those co-located
	 * with it; subqueries over others are computed first, as queries of
	 * their own (dml_forward.c).  Deparsed before planning: the planner
	 * scribbles on the query.
	 */
	forward = rx_dml_forward_sql(parse);
	if (forward != NIL)
	{
		stmt = plan_locally(parse, query_string, cursorOptions, boundParams);
		rx_dml_forward_attach(stmt, forward);
		return stmt;
	}
	forward = rx_insert_route_sql(parse);

	/*
	 * An INSERT whose rows come from no distributed table (VALUES, reference
	 * or local tables): planned as on one server; its rows go to their
	 * owners as they are inserted (dml_insert.c).  Not when a function in
	 * FROM may be inlined into a distributed table's scan.
	 */
	if (parse->commandType == CMD_INSERT &&
		!has_function_rte_walker((Node *) parse, NULL) &&
		!query_tree_walker(parse, touches_distributed_walker,
						   rt_fetch(parse->resultRelation, parse->rtable),
						   QTW_EXAMINE_RTES_BEFORE))
	{
		stmt = plan_locally(parse, query_string, cursorOptions, boundParams);
		if (forward != NIL)
			rx_dml_forward_attach(stmt, forward);
		return stmt;
	}
	rx_decorrelate(parse);

	/*
	 * Planned for the members' workers; where PostgreSQL's cost of that
	 * plan counted on workers for parts that run in a member's fragment
	 * backend alone (rx_member_cost_error()), planned once more for one
	 * process per member (the plan of a cluster without workers, whose
	 * partial parts still get them where they are not above a RECEIVE),
	 * and the cheaper of the two is run: the first with what its cost
	 * misses added.  Not for less than starting workers costs: a small
	 * query whose members start none is not planned twice.
	 */
	participants = rx_member_participants();
	one_process = participants > 1 ? copyObject(parse) : NULL;
	stmt = plan_distributed(parse, query_string, cursorOptions, boundParams,
							nmembers, participants);
	cost = stmt->planTree->total_cost;
	error = rx_distribute(stmt, nmembers, participants);
	if (one_process != NULL && error > parallel_setup_cost)
	{
		PlannedStmt *alt = plan_distributed(one_process, query_string,
											cursorOptions, boundParams,
											nmembers, 1);
		double		alt_cost = alt->planTree->total_cost;

		/*
		 * its cost as PostgreSQL gave it: at most what it costs, as the
		 * members' workers only take work off it (its error is negative),
		 * so that the workers' plan is left only where it is clearly worse
		 */
		(void) rx_distribute(alt, nmembers, 1);
		elog(DEBUG1, "rdma_exchange: planned for %d processes per member, cost %.0f%+.0f; for one, %.0f: %s",
			 participants, cost, error, alt_cost,
			 alt_cost < cost + error ? "one" : "workers");
		if (alt_cost < cost + error)
			stmt = alt;
	}
	if (forward != NIL)
		rx_dml_forward_attach(stmt, forward);
	return scrollable(stmt, cursorOptions);
}

void
rx_planner_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = rx_planner;
	rx_relstats_init();
	rx_costs_init();
}
