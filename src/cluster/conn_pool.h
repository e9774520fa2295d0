/*-------------------------------------------------------------------------
 *
 * conn_pool.h
 *	  The session's pool of libpq connections to members, for fragments
 *	  and the snapshots they run under.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_CONN_POOL_H
#define RX_CONN_POOL_H

#include "libpq-fe.h"

#include "cluster/metadata.h"

/* a connection of the current user to the member, busy until put back */
extern PGconn *rx_pool_get(const RxMember *member);

/* back: idle for reuse when it is, closed otherwise */
extern void rx_pool_put(PGconn *conn, bool reusable);

/*
 * Back with a command still running (a COMMIT sent without waiting): its
 * results are read before the connection is used again.
 */
extern void rx_pool_put_pending(PGconn *conn);

/*
 * Owned by the top transaction, not by the subtransaction that took it:
 * a subtransaction's abort leaves it alone (it runs nothing then).
 */
extern void rx_pool_hold_for_transaction(PGconn *conn);

/* statements prepared in a pooled session, by slot (0..63) */
extern bool rx_pool_prepared(PGconn *conn, int slot);
extern void rx_pool_set_prepared(PGconn *conn, int slot);

#endif							/* RX_CONN_POOL_H */
