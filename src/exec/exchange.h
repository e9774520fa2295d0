/*-------------------------------------------------------------------------
 *
 * exchange.h
 *	  The SHUFFLE and RECEIVE plan nodes: how the planner builds them and
 *	  what their CustomScan private lists hold.
 *
 * A tuple's way through the cluster, in one picture:
 *
 *	  child -> SHUFFLE -(route: hash | broadcast | coordinator)-> framing
 *	        -> transport port -> fabric -> transport port of the peer
 *	        -> hub (reassembly, per-source queues) -> RECEIVE -> parent
 *
 * SHUFFLE and its RECEIVE share an exchange id (the RECEIVE's plan node
 * id).  Inside a fragment the RECEIVE's outer child is the SHUFFLE itself:
 * the RECEIVE drives its own SHUFFLE, so one backend per member runs both
 * ends of every exchange of its fragment.  A *gather* RECEIVE runs on the
 * coordinator; its outer child is the fragment, shipped to every member
 * instead of being run locally (like the subtree below a Gather).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_EXCHANGE_H
#define RX_EXCHANGE_H

#include "nodes/execnodes.h"
#include "nodes/plannodes.h"

#define RX_SHUFFLE_NAME		"SHUFFLE"
#define RX_RECEIVE_NAME		"RECEIVE"

typedef enum RxRoute
{
	RX_ROUTE_HASH = 1,			/* to the member owning hash(key) */
	RX_ROUTE_BROADCAST,			/* to every member */
	RX_ROUTE_COORDINATOR		/* to the coordinator's gather RECEIVE */
} RxRoute;

typedef enum RxReceiveKind
{
	RX_RECEIVE_SHUFFLE = 1,		/* inside a fragment, child SHUFFLE run here */
	RX_RECEIVE_GATHER			/* on the coordinator, child shipped */
} RxReceiveKind;

/*
 * SHUFFLE custom_private: list of
 *	 Integer exchange_id, Integer route, Integer single_sender (-1: every
 *	 member sends; otherwise only that member sends, used when the input is
 *	 replicated), List of hash function Oids, List of collation Oids,
 *	 Integer tuples_needed (-1: all; else the consumer needs at most that
 *	 many rows from each member: a LIMIT above the gather RECEIVE).
 * custom_exprs: hash key expressions over the child's output (OUTER_VAR).
 */
typedef struct RxShuffleInfo
{
	int			exchange_id;
	RxRoute		route;
	int			single_sender;
	List	   *hash_funcs;
	List	   *collations;
	int			tuples_needed;
} RxShuffleInfo;

/*
 * RECEIVE custom_private: list of
 *	 Integer exchange_id, Integer kind, Integer materialize (keep every row
 *	 for rescans), Integer fallback (gathers a scan for a serial plan part),
 *	 and, for an ordered merge, Lists of sort column indexes, sort
 *	 operators, collations and nulls-first flags (empty when unordered).
 */
typedef struct RxReceiveInfo
{
	int			exchange_id;
	RxReceiveKind kind;
	bool		materialize;
	bool		fallback;
	int			nsortkeys;
	AttrNumber *sort_cols;
	Oid		   *sort_ops;
	Oid		   *sort_collations;
	bool	   *sort_nulls_first;
	/* fallback: kept rows looked up by these columns (lookup.c) */
	int			nlookup;
	AttrNumber *lookup_cols;
	Oid		   *lookup_col_hash;	/* hash functions of the columns */
	Oid		   *lookup_param_hash;	/* ... of the looked-up values */
	Oid		   *lookup_collations;
	/* fallback keyed by the distribution column (receive_keyed.c) */
	Expr	   *keyed_value;	/* the key's value, from the plan's params */
	Oid			keyed_relid;	/* the table it is the distribution key of */
	int			keyed_remote_max;	/* remote lookups before gathering */
	/*
	 * shared by a member's Gather (receive_shared.c) below a Parallel
	 * Hash: the leader keeps every row, the workers read none
	 */
	bool		leader_only;
} RxReceiveInfo;

extern CustomScan *rx_make_shuffle(Plan *child, int exchange_id, RxRoute route,
								   int single_sender, List *hash_exprs,
								   List *hash_funcs, List *collations);
extern void rx_shuffle_set_bound(CustomScan *shuffle, int tuples_needed);
extern CustomScan *rx_make_receive(Plan *child, int exchange_id,
								   RxReceiveKind kind, bool materialize,
								   bool fallback);
extern void rx_receive_set_merge(CustomScan *receive, int nkeys,
								 AttrNumber *cols, Oid *ops, Oid *collations,
								 bool *nulls_first);

/* the looked-up values are the receive's custom_exprs */
extern void rx_receive_set_lookup(CustomScan *receive, List *cols,
								  List *col_hash, List *param_hash,
								  List *collations, List *param_exprs);

/*
 * A fallback gather whose rows each rescan can read from one member: the
 * keyed fragment (the receive's custom_plans) returns the rows whose
 * distribution column of relid equals value, on value's owner; after
 * remote_max lookups on other members the table is gathered instead.
 */
extern void rx_receive_set_leader_only(CustomScan *receive);
extern void rx_receive_set_keyed(CustomScan *receive, Plan *keyed, Expr *value,
								 Oid relid, int remote_max);

/*
 * A round trip to a member (0.2 ms on loopback) costs about what looking
 * up this many keys there in one batch (lookahead.c) costs: an index
 * descent and the row's text, a few microseconds each.
 */
#define RX_KEYS_PER_ROUND_TRIP 64

/*
 * ... and about what gathering this many rows of a table costs (80,000
 * short rows in 20 ms, 3 members on 2 cores: fallback.c, costs.c)
 */
#define RX_LOOKUP_ROWS 1000

/*
 * lookahead.c: a LOOKAHEAD over a nested loop's outer side, reading its
 * rows ahead to look their keys up in batches on the keyed RECEIVE
 * receive_id on the loop's inner side; nest_params are the loop's
 */
extern Plan *rx_lookahead_node(Plan *outer, int receive_id, List *nest_params,
							   int node_id);
extern bool rx_is_lookahead(Plan *plan);
extern void rx_lookahead_init(void);

extern bool rx_is_shuffle(Plan *plan);
extern bool rx_is_receive(Plan *plan);
/* receive_shared.c: a RECEIVE shared by a Gather's workers, anywhere in it */
extern bool rx_plan_shares_receive(Plan *plan);
extern bool rx_stmt_shares_receive(PlannedStmt *stmt);

/* receive_query.c: may the plan run when its rows may not be needed? */
extern bool rx_plan_speculation_safe(Plan *plan);
extern void rx_shuffle_info(CustomScan *cscan, RxShuffleInfo *info);
extern void rx_receive_info(CustomScan *cscan, RxReceiveInfo *info);

/* the transport design of an exchange, chosen when the query starts */
extern int	rx_exchange_design(const RxReceiveInfo *info);

/* called from _PG_init: registers the custom scan methods */
extern void rx_exec_init(void);

/*
 * Whether the executor run of estate may be resumed for more rows (a
 * portal fetched in batches, portal.c): a gather then keeps its exchange
 * at shutdown.
 */
extern bool rx_run_may_resume(EState *estate);
extern void rx_portal_init(void);

/*
 * After a fragment's plan ran: end every exchange it did not read to the
 * end, so that no member waits for this one (receive.c)
 */
extern void rx_receive_finish_fragment(PlanState *planstate);

#endif							/* RX_EXCHANGE_H */
