/*-------------------------------------------------------------------------
 *
 * dml.h
 *	  Direct DML on distributed and reference tables (see dml.c for what
 *	  is routed, what is forwarded and what is refused).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DML_H
#define RX_DML_H

/* trigger names, as create_distributed_table() installs them */
/* the routing triggers all start with this (ddl.c keeps users off them) */
#define RX_TRIGGER_PREFIX	"zzz_rdma_exchange_"
#define RX_TRIGGER_ROUTE	"zzz_rdma_exchange_route"
#define RX_TRIGGER_FLUSH	"zzz_rdma_exchange_flush"
#define RX_TRIGGER_CHANGE	"zzz_rdma_exchange_change"
#define RX_TRIGGER_TRUNCATE "zzz_rdma_exchange_truncate"

/*
 * UPDATE and DELETE forwarded to every member as SQL (dml_forward.c).
 * rx_dml_forward_sql: from the planner hook, the statement as SQL (and the
 * bound parameters it uses) when every member can run it on its own part,
 * else NIL; *colocated is set when it joins other distributed tables
 * co-located with the target (this member then plans it as a local
 * statement as well);
 * rx_dml_forward_attach: that onto the finished plan;
 * rx_dml_forward_of: what a plan carries, or NIL;
 * rx_dml_forward_begin: for one execution of such a plan, the statement
 * with its bound parameters in text form (NULL when the plan carries none);
 * rx_dml_forward_run: runs it in this transaction on the other members
 * with a lower member index than this one (below_self) or a higher one,
 * returns the rows they changed.
 */
#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

extern List *rx_dml_forward_sql(Query *parse, bool *colocated);
extern void rx_dml_forward_attach(PlannedStmt *stmt, List *forward);
extern List *rx_dml_forward_of(PlannedStmt *stmt);
typedef struct RxForward RxForward;
extern RxForward *rx_dml_forward_begin(PlannedStmt *stmt, ParamListInfo params);
extern uint64 rx_dml_forward_run(RxForward *forward, bool below_self);

/* EXPLAIN ANALYZE of forwarded statements shows the other members' rows */
extern void rx_dml_forward_init(void);

/* called from rx_metadata_init(): ExecutorStart hook, callbacks */
extern void rx_dml_init(void);

#endif							/* RX_DML_H */
