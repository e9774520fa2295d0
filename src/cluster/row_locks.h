/*-------------------------------------------------------------------------
 *
 * row_locks.h
 *	  SELECT ... FOR UPDATE/SHARE over distributed or reference tables
 *	  (see row_locks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_ROW_LOCKS_H
#define RX_ROW_LOCKS_H

#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

/*
 * rx_row_locks_check: from the planner hook before planning, NULL when
 * the query locks no row of such a table, an error when it cannot lock
 * them where they are stored, else what rx_row_locks_plan needs to turn
 * the query's local plan into one that runs it on the members that store
 * the rows.  rx_row_locks_init: registers the LOCK ROWS custom scan.
 */
struct RxRowLocks;
extern struct RxRowLocks *rx_row_locks_check(Query *parse);
extern void rx_row_locks_plan(PlannedStmt *stmt, struct RxRowLocks *locks);
extern void rx_row_locks_init(void);

#endif							/* RX_ROW_LOCKS_H */
