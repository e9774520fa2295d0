/*-------------------------------------------------------------------------
 *
 * direct.h
 *	  Direct dispatch: a query one member answers alone (planner/direct.c
 *	  decides, exec/direct.c runs it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DIRECT_H
#define RX_DIRECT_H

#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

extern bool rx_direct_dispatch;	/* rdma_exchange.direct_dispatch */
extern bool rx_direct_sql;		/* rdma_exchange.direct_sql */

/* planner/direct.c */
extern bool rx_direct_candidate(Query *parse);
extern bool rx_direct_plan(PlannedStmt *stmt, int nmembers);

/*
 * exec/direct.c: the DIRECT node over a local plan; keys are the values
 * rows of the tables key_relids (an Oid list) equal, node_id its plan
 * node id
 */
extern Plan *rx_direct_node(Plan *local, List *keys, List *key_relids,
							int node_id);
extern Plan *rx_direct_sql_node(List *tlist, Expr *key, Oid key_relid,
								char *sql, bool key_param);
extern void rx_direct_add_sql(PlannedStmt *stmt, char *sql);
extern void rx_direct_init(void);

/* planner/direct_sql.c */
extern PlannedStmt *rx_direct_sql_plan(Query *parse, int cursorOptions,
									   ParamListInfo boundParams, int nmembers,
									   char **generic_sql);

/*
 * exec/direct.c: a direct message (dispatch.c) sent to a member over conn,
 * run there by rdma_exchange.execute_direct(), its rows read back; also
 * used by a gather of a small result (receive_query.c)
 */
struct pg_conn;
struct RxTextRows;
struct RxMember;
extern struct pg_conn *rx_direct_conn(struct RxMember *member, EState *estate,
									  bool *in_xact);
extern void rx_direct_conn_done(struct pg_conn *conn, bool in_xact);
extern char *rx_direct_call_sql(int natts);
extern void rx_direct_send(struct pg_conn *conn, const char *member,
						   bool pooled, const char *message, int natts);
extern bool rx_direct_next_row(struct pg_conn *conn, const char *member,
							   struct RxTextRows *tr, TupleTableSlot *slot,
							   char **report, const char *what, int *set);

#endif							/* RX_DIRECT_H */
