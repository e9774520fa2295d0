/*-------------------------------------------------------------------------
 *
 * conn_budget.h
 *	  The connections this member's sessions hold to each other member
 *	  (conn_budget.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_CONN_BUDGET_H
#define RX_CONN_BUDGET_H

#include "libpq-fe.h"

/*
 * Before connecting to member name ("host:port"): wait for the budget
 * when this session holds no connection there yet.  Returns the slot to
 * give back with rx_budget_release() when that connection closes (-1: not
 * counted).
 */
extern int	rx_budget_reserve(const char *name);
extern void rx_budget_release(int slot);

/* after the first connection to a member: derive its budget from its limits */
extern void rx_budget_learn(int slot, PGconn *conn, const char *name);

/* at the end of a transaction: give idle connections to name back? */
extern bool rx_budget_should_give_back(const char *name);

/* called from _PG_init */
extern void rx_conn_budget_init(void);

#endif							/* RX_CONN_BUDGET_H */
