/*-------------------------------------------------------------------------
 *
 * remote.h
 *	  libpq connections from one member to another (the control plane).
 *
 * Every connection is made as the current user to the current database,
 * so pg_hba.conf and permissions apply as for any client.  All waits are
 * interruptible: a cancel or statement_timeout on this backend is never
 * stuck behind a slow member.  Every error names the member.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_REMOTE_H
#define RX_REMOTE_H

#include "libpq-fe.h"
#include "cluster/metadata.h"

/* connect to host:port (error naming it when unreachable) */
extern PGconn *rx_connect(const char *host, int port, const char *dbname);
extern PGconn *rx_connect_member(const RxMember *member);

/*
 * Wait for the next result of an asynchronous command while serving
 * interrupts; NULL at the end of the results.
 */
extern PGresult *rx_get_result(PGconn *conn, const char *member_name);

/* run a command and raise an error naming the member if it fails */
extern void rx_exec_command(PGconn *conn, const char *member_name,
							const char *sql);

/* run a query returning tuples; error naming the member if it fails */
extern PGresult *rx_exec_query(PGconn *conn, const char *member_name,
							   const char *sql);

/* raise elevel with the remote error of res (or of conn) naming the member */
extern void rx_report_remote_error(int elevel, PGconn *conn, PGresult *res,
								   const char *member_name,
								   const char *context);

#endif							/* RX_REMOTE_H */
