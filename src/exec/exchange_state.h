/*-------------------------------------------------------------------------
 *
 * exchange_state.h
 *	  Execution state of SHUFFLE and RECEIVE, shared by the two node files,
 *	  the dispatcher (which fills in the counters every member reported)
 *	  and EXPLAIN.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_EXCHANGE_STATE_H
#define RX_EXCHANGE_STATE_H

#include "commands/explain.h"
#include "lib/binaryheap.h"
#include "nodes/execnodes.h"
#include "utils/sortsupport.h"
#include "utils/tuplestore.h"

#include "exec/exchange.h"
#include "exec/hub.h"

/* what one member did in one exchange node */
typedef struct RxMemberStats
{
	RxHubCounters sent;
	RxHubCounters recv;
	uint64		retransmits;
	uint64		peak_buffers;	/* most buffers its streams held at once */
} RxMemberStats;

/*
 * What one process of a member (its backend, or one of its parallel
 * workers) gave the member's Gather below a SHUFFLE: EXPLAIN ANALYZE
 * VERBOSE shows a member's part per worker with these
 */
typedef struct RxProcessStats
{
	int			member;
	int			process;		/* 0: the member's backend, n: worker n - 1 */
	double		rows;
	double		ms;
} RxProcessStats;

typedef struct RxExchangeNodeStats
{
	bool		valid;
	int			nmembers;
	char		member_names[RX_MAX_MEMBERS][NAMEDATALEN];
	RxMemberStats member[RX_MAX_MEMBERS];
	List	   *processes;		/* RxProcessStats *, SHUFFLE only */
} RxExchangeNodeStats;

typedef struct RxShuffleState
{
	CustomScanState css;
	RxShuffleInfo info;
	RxHub	   *hub;
	ExprState **keys;
	FmgrInfo   *hashfns;
	int			nkeys;
	int64		nsent;			/* rows sent to the coordinator */
	bool		done;
	bool		ended_early;	/* stopped, or the coordinator's LIMIT met */
	RxExchangeNodeStats stats;
} RxShuffleState;

struct RxDispatch;

typedef struct RxReceiveState
{
	CustomScanState css;
	RxReceiveInfo info;
	RxHub	   *hub;
	struct RxDispatch *dispatch;	/* gather: the shipped fragment */
	TupleTableSlot *recv_slot;	/* rows from queues and the rescan store */
	TupleTableSlot *local_stored;	/* rows from this member's own SHUFFLE: */
	TupleTableSlot *local_virtual;	/* stored tuples, the others */
	bool		child_done;		/* inside a fragment: local SHUFFLE exhausted */
	bool		pulling;		/* ... and being pulled right now */
	Tuplestorestate *local_rows;	/* its rows for this member, run early */
	bool		finished;		/* every source ended */
	Tuplestorestate *prefetched;	/* gather read to the end at once */

	/* ordered merge (a Gather Merge on the coordinator) */
	binaryheap *heap;
	TupleTableSlot **merge_slots;
	bool	   *merge_have;
	bool		merge_started;
	SortSupport sortkeys;

	/* rows kept for rescans */
	Tuplestorestate *store;
	int64		stored;
	int64		replayed;
	bool		replaying;
	bool		stopped_early;	/* shut down before the end of the rows */
	struct RxLookup *lookup;	/* fallback: kept rows hashed (lookup.c) */
	int			eflags;
	double		data_wait_ms;

	/* a small result gathered by query, without an exchange */
	bool		by_query;
	int			query_members;	/* 0: not run (yet, or since a rescan) */
	int			query_source;	/* unordered: the member read now */
	Tuplestorestate **query_rows;	/* per member */
	uint64	   *query_counts;	/* per member, over every run */
	bool		query_sent;		/* sent, rows not read yet */
	struct pg_conn **query_conns;	/* ... on these, per member */
	bool	   *query_in_xact;	/* ... the transaction's session there */
	Tuplestorestate **query_prefetched; /* the other members' rows, read
										 * with another gather's round */

	/* a fallback keyed by the distribution column, or NULL */
	struct RxKeyed *keyed;

	/* shared by the workers of a Gather above (receive_shared.c), or NULL */
	struct RxReceiveShare *share;
	bool		gather_worker;	/* ... and this is one of those workers */

	RxExchangeNodeStats stats;
} RxReceiveState;

/* receive_query.c: a gather of a small result by query (see there) */
extern int	rx_small_gather_rows;
extern bool rx_receive_by_query(RxReceiveState *r);
extern void rx_receive_query_run(RxReceiveState *r);
extern TupleTableSlot *rx_receive_query_next(RxReceiveState *r);
extern void rx_receive_query_reset(RxReceiveState *r, bool rescan);
extern void rx_receive_query_explain(RxReceiveState *r, ExplainState *es);
extern void rx_receive_query_init(void);
extern Plan *rx_receive_query_fragment(Plan *fragment, int tuples_needed);
extern uint64 rx_receive_query_here(RxReceiveState *r, List *snapshots, int self,
									const char *name, int tuples_needed,
									Tuplestorestate *store);
extern List *rx_receive_query_siblings(RxReceiveState *r);

/* receive_round.c: a round of gathers by query taking the snapshot (see there) */
extern bool rx_receive_query_round(RxReceiveState *r);

/* receive_shared.c: a RECEIVE shared by a Gather's workers (see there) */
struct ParallelContext;
struct shm_toc;
extern Size rx_receive_share_estimate(CustomScanState *node,
									  struct ParallelContext *pcxt);
extern void rx_receive_share_init_dsm(CustomScanState *node,
									  struct ParallelContext *pcxt,
									  void *coordinate);
extern void rx_receive_share_reinit_dsm(CustomScanState *node,
										struct ParallelContext *pcxt,
										void *coordinate);
extern void rx_receive_share_init_worker(CustomScanState *node,
										 struct shm_toc *toc,
										 void *coordinate);
extern bool rx_receive_share_hand_out(RxReceiveState *r, TupleTableSlot *slot);
extern void rx_receive_share_done(RxReceiveState *r, bool take_back);
extern TupleTableSlot *rx_receive_share_taken_back(RxReceiveState *r);
extern TupleTableSlot *rx_receive_share_next(RxReceiveState *r);

/* the plan below ps reads with snap from now on (bitmap scans too) */
extern void rx_planstate_use_snapshot(PlanState *ps, Snapshot snap);

/* receive_keyed.c: a fallback gather read by key, per rescan (see there) */
typedef struct RxKeyed RxKeyed;
extern bool rx_keyed_lookups;
extern void rx_receive_keyed_begin(RxReceiveState *r, EState *estate, int eflags);
extern bool rx_receive_keyed_active(RxReceiveState *r);
extern TupleTableSlot *rx_receive_keyed_next(RxReceiveState *r);
extern bool rx_receive_keyed_rescan(RxReceiveState *r);
extern void rx_receive_keyed_end(RxReceiveState *r);
extern void rx_receive_keyed_explain(RxReceiveState *r, ExplainState *es);
/* ... and its batches of lookups, made by a LOOKAHEAD (lookahead.c) */
extern RxReceiveState *rx_receive_keyed_find(EState *estate, int plan_node_id);
extern bool rx_receive_keyed_batching(RxReceiveState *r);
extern void rx_receive_keyed_batch_start(RxReceiveState *r, int maxsets);
extern void rx_receive_keyed_batch_add(RxReceiveState *r);
extern void rx_receive_keyed_batch_run(RxReceiveState *r);
extern void rx_receive_keyed_batch_select(RxReceiveState *r, int n);
extern void rx_receive_keyed_init(void);

/* EXPLAIN ANALYZE lines for one exchange node */
extern void rx_explain_member_processes(RxExchangeNodeStats *stats,
										ExplainState *es);
extern void rx_explain_member_stats(RxExchangeNodeStats *stats, bool send,
									bool recv, ExplainState *es);

/* declare the node's output slot type as varying (see exchange.c) */
extern void rx_exchange_slots_vary(CustomScanState *node);

/* registration of the two nodes' methods */
extern void rx_shuffle_register(void);
extern void rx_receive_register(void);

#endif							/* RX_EXCHANGE_STATE_H */
