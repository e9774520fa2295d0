/*-------------------------------------------------------------------------
 *
 * sql_plans.h
 *	  A member's plans for directly dispatched queries that come as SQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_SQL_PLANS_H
#define RX_SQL_PLANS_H

#include "nodes/params.h"
#include "utils/plancache.h"

extern CachedPlan *rx_sql_plan(const char *sql, List *params,
							   ParamListInfo bound);

/* planning such a query: the planner hook plans it for this member's rows */
extern bool rx_planning_sql(void);

#endif							/* RX_SQL_PLANS_H */
