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

#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

extern bool rx_direct_dispatch;	/* rdma_exchange.direct_dispatch */

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
extern void rx_direct_init(void);

#endif							/* RX_DIRECT_H */
