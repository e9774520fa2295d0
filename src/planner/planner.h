/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  From PostgreSQL's parallel plan to a distributed plan.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_PLANNER_H
#define RX_PLANNER_H

#include "nodes/plannodes.h"

#include "cluster/metadata.h"

typedef struct RxPlanContext
{
	PlannedStmt *stmt;
	int			nmembers;
	int			next_node_id;
	Bitmapset  *result_rtis;	/* targets of DML: never rewritten */
	double		rescans;		/* expected runs of the part being rewritten */
	bool		lookahead;		/* ... in batches: it is the inner scan of a
								 * nested loop that gets a LOOKAHEAD */
	int			member_participants;	/* processes per member the plan
										 * was costed for: workers + 1 */
	bool		scaling_rows;	/* local_gather.c: rows to members', no
								 * Gathers */
	double	   *partial_cost;	/* local_gather.c: by plan_node_id, the own
								 * cost of each node PostgreSQL planned as
								 * partial, else -1 */
	int			npartial_cost;
	List	   *share_candidates;	/* local_gather.c: RECEIVEs a Gather's
									 * workers may share */
} RxPlanContext;

/*
 * fallback.c: a LOOKAHEAD for a nested loop over a keyed RECEIVE; may the
 * loop's outer side, rewritten, be read ahead?
 */
extern void rx_fallback_lookahead(RxPlanContext *ctx, NestLoop *loop);
extern bool rx_lookahead_possible(NestLoop *loop);

/*
 * local_gather.c: a placed fragment with Gathers over its partial parts,
 * for the members' own parallel workers (with_workers), serial elsewhere
 */
extern int	rx_workers_per_member;
extern int	rx_member_participants(void);
extern void rx_rows_per_member(RxPlanContext *ctx, Plan *plan);
extern double rx_member_cost_error(RxPlanContext *ctx, PlannedStmt *stmt);
/* the member's Gather atop a fragment that sends its first rows only */
extern Plan *rx_bounded_member_gather(RxPlanContext *ctx, Plan *top,
									  double needed);
/* the member's Gather atop an ordered gather's fragment, as a Gather Merge */
extern Plan *rx_ordered_member_gather(Plan *top, GatherMerge *order);
extern Plan *rx_local_gathers(RxPlanContext *ctx, Plan *fragment,
							  bool with_workers);

/* partial_agg.c: a Finalize Agg over its Partial Agg as one Agg */
extern Plan *rx_collapse_partial_agg(Plan *plan);

/* planner.c */
extern void rx_planner_init(void);
extern int	rx_new_node_id(RxPlanContext *ctx);
extern List *rx_plan_children(Plan *plan);

/* a scan of a relation's heap (sequential, sample, index, bitmap, TID) */
extern bool rx_is_relation_scan(Plan *plan);

/*
 * A target list of Vars (varno: OUTER_VAR, INDEX_VAR) over the columns
 * of tlist, each as it is there; rx_passthrough_tlist: over plan's output,
 * for a node above it that passes every column through.
 */
extern List *rx_column_tlist(List *tlist, Index varno);
extern List *rx_passthrough_tlist(Plan *plan);

/* replace each direct child of plan (any node type) by fn(ctx, child) */
extern void rx_map_plan_children(RxPlanContext *ctx, Plan *plan,
								 Plan *(*fn) (RxPlanContext *ctx, Plan *child));

/*
 * clause is "column = other" with column the distribution column of dist
 * (a Var of varno, of this query level) under an operator of its hash
 * operator family, which puts equal values on the same member: other, or
 * NULL
 */
extern Expr *rx_distcol_equality(Expr *clause, Index varno,
								 const RxTableDist *dist);

/*
 * an executor parameter (PARAM_EXEC) in node: set by the serial part
 * (nest loops, InitPlans, rescans), so it cannot travel with a fragment;
 * bound parameters ($1) can
 */
extern bool rx_has_exec_param(Node *node);
extern bool rx_known_at_start(Expr *value);

/*
 * plan takes executor parameter values from the plan above it; rescan
 * signals (parameters of no type) do not count
 */
extern bool rx_takes_values(Plan *plan, List *paramExecTypes);

/* below_gather.c: work above gathers moved below them, bottom up */
extern Plan *rx_below_gathers(RxPlanContext *ctx, Plan *plan);

/* a palloc'd copy of the n elements of array a */
#define palloc_array_copy(a, n) \
	memcpy(palloc(sizeof((a)[0]) * (n)), (a), sizeof((a)[0]) * (n))

/* a Sort over child passing all its columns through, keys copied */
extern Sort *rx_make_sort(RxPlanContext *ctx, Plan *child, int nkeys,
						  AttrNumber *cols, Oid *ops, Oid *collations,
						  bool *nulls_first);

/* members while planning a distributed query, else 0 */
extern int	rx_planning_nmembers(void);
/* ... and the processes per partial scan then (members x participants) */
extern int	rx_planning_participants(void);

/* relstats.c: a distributed table's statistics scaled to the cluster */
extern void rx_relstats_init(void);

/* costs.c: the price of moving rows, charged to paths while planning */
extern void rx_costs_init(void);

/* decorrelate.c: correlated aggregate subqueries become joins, in place */
extern void rx_decorrelate(Query *parse);
/* does the tree refer to a query level above the one it starts in? */
extern bool rx_has_outer_refs(Node *node);

/* lookup_join.c: scalar subqueries over a unique key become LEFT JOINs */
extern void rx_lookup_joins(Query *q);

/* sysattrs.c: system columns of distributed tables, before placement */
extern void rx_system_columns(PlannedStmt *stmt);

/* prune.c: below each SHUFFLE, the columns nobody reads become NULLs */
extern void rx_prune_exchange_columns(PlannedStmt *stmt);

/* fallback.c: a serial plan part reading a distributed table */
extern Plan *rx_fallback_scan(RxPlanContext *ctx, Scan *scan);
/* an index-only scan's INDEX_VAR columns as the table's (fallback.c) */
extern Node *rx_index_vars_as_columns(Node *node, List *indextlist);

/* locus.c: the subtree below a Gather as a fragment, or NULL */
/* e without the binary-compatible casts (RelabelType) on top of it */
extern Expr *rx_strip_relabel(Expr *e);
extern OpExpr *rx_binary_op(Node *qual, Node **left, Node **right);
extern Plan *rx_place_fragment(RxPlanContext *ctx, Plan *child,
							   int exchange_id);

/* the order of plan's rows comes through an exchange (and is lost) */
extern bool rx_order_crosses_exchange(Plan *plan);

/* shippable.c: can this expression run on another member? */
extern bool rx_expr_shippable(Node *node);

/* values of the type are OIDs of catalog entries (regclass, regtype, ...) */
extern bool rx_type_names_catalog_entry(Oid type);

/* the node itself (not its arguments) calls a user-defined function or operator */
extern bool rx_node_calls_user_routine(Node *node);
extern bool rx_plan_node_shippable(Plan *plan);

#endif							/* RX_PLANNER_H */
