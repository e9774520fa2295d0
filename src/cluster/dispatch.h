/*-------------------------------------------------------------------------
 *
 * dispatch.h
 *	  Shipping plan fragments to the members and running them there.
 *
 * Coordinator side: a gather RECEIVE, at its first fetch, serializes the
 * fragment below it, signs it with the cluster key and sends it over libpq
 * to every member (this one included), then receives the rows through its
 * own transport port.  Member side: rdma_exchange.execute_fragment()
 * checks the signature, maps relations and indexes to local OIDs by name,
 * runs the fragment with the session user's rights and its member's part
 * of the query's cluster snapshot (cluster_snapshot.c), and returns the
 * instrumentation that EXPLAIN ANALYZE shows on the coordinator.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DISPATCH_H
#define RX_DISPATCH_H

#include "nodes/params.h"
#include "exec/exchange_state.h"
#include "exec/hub.h"

typedef struct RxDispatch RxDispatch;

/* coordinator side */
extern RxDispatch *rx_dispatch_start(RxReceiveState *receive);

/* bound parameter $id of a statement, fetched (PL/pgSQL) if need be */
extern ParamExternData *rx_bound_param(ParamListInfo params, int id,
									   ParamExternData *workspace);
extern RxHub *rx_dispatch_hub(RxDispatch *dispatch);

/* the fragments run in this transaction (it changed the cluster before) */
extern bool rx_dispatch_in_xact(RxDispatch *dispatch);
extern void rx_dispatch_check(RxDispatch *dispatch);
extern void rx_dispatch_finish(RxDispatch *dispatch, bool stop);

/*
 * fragment_worker.c: this member's fragment in a parallel worker of the
 * coordinator's backend, which shares its transaction
 */
typedef struct RxSelfFragment RxSelfFragment;
extern RxSelfFragment *rx_self_fragment_start(const char *message,
											  const char *member_name);
extern char *rx_self_fragment_finish(RxSelfFragment *sf);

/*
 * a directly dispatched query's whole plan, for one member (exec/direct.c);
 * with econtext, the values of the executor parameters it reads; with
 * param_sets, a batch of keyed lookups: a list of such values (each from
 * rx_exec_param_values()) for the member to run the plan with in turn
 */
extern char *rx_direct_message(Plan *plan, EState *estate, List *snapshots,
							   ExprContext *econtext, List *param_sets);
/* ... or its text, for the member to plan (planner/direct_sql.c) */
extern char *rx_direct_sql_message(char *sql, EState *estate, List *snapshots,
								   Const *key);
extern List *rx_exec_param_values(ExprContext *econtext, Plan *plan,
								  EState *estate);
extern void rx_merge_direct_report(PlanState *root, int member,
								   const char *report);

/* member side: run a fragment message here, return its report */
extern char *rx_run_fragment(const char *message);

/* member side: the fragment this backend runs, if any */
extern RxHub *rx_fragment_hub(void);
extern int	rx_fragment_coordinator(void);
extern bool rx_in_fragment(void);
extern PlanState *rx_fragment_planstate(void);

#endif							/* RX_DISPATCH_H */
