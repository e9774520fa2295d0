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

#include "executor/tuptable.h"
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

/*
 * run a query and return its rows as palloc'd strings (NULL for SQL NULL),
 * rows[i][j]; the PGresult is already cleared
 */
extern char ***rx_query_strings(PGconn *conn, const char *member_name,
								const char *sql, int *nrows);

/*
 * The two halves of rx_exec_query(), to send to several members before
 * waiting for any: send (errors name the member), then the last result
 * with rows (every failed result raised, no result with rows an error)
 */
extern void rx_send_query(PGconn *conn, const char *member_name, const char *sql);
extern PGresult *rx_query_result(PGconn *conn, const char *member_name);

/* an idle kept connection still usable (see remote.c) */
extern bool rx_idle_connection_ok(PGconn *conn);

/*
 * Unless res succeeded (rows or a command): clears it and raises its
 * error naming the member, with context (or none) after the member's.
 * res NULL: the connection's error.
 */
extern void rx_raise_if_failed(PGconn *conn, PGresult *res,
							   const char *member_name, const char *context);

/* raise elevel with the remote error of res (or of conn) naming the member */
extern void rx_report_remote_error(int elevel, PGconn *conn, PGresult *res,
								   const char *member_name,
								   const char *context);

/*
 * Ownership.  A connection made by rx_connect*() belongs to the
 * (sub)transaction that made it: if that (sub)transaction aborts, the
 * connection is closed (a command still running on it is cancelled
 * first), so an error between connecting and closing never leaks one.
 * Close it with rx_disconnect() (PQfinish() works too) when done.  A
 * connection still open when its transaction commits is left open and
 * becomes the caller's.  A connection meant to outlive errors, e.g. one
 * kept in a pool across transactions, must be handed over with
 * rx_connection_keep() right after rx_connect*(): abort then leaves it
 * alone and its owner alone closes it.
 */
extern void rx_disconnect(PGconn *conn);
extern void rx_connection_keep(PGconn *conn);

/*
 * A member session for the control plane (metadata, forwarded rows,
 * run_on_all_nodes): like rx_connect_member(), and the remote session
 * runs with rdma_exchange.enable = off (it works on the member's own
 * part), DateStyle ISO and IntervalStyle postgres (rows travel as text).
 * With failure != NULL an unreachable member returns NULL and the libpq
 * message in *failure instead of raising an error.
 */
extern PGconn *rx_connect_session(const RxMember *member, char **failure);

/* best-effort cancel of the command running on conn */
extern void rx_cancel(PGconn *conn);

/*
 * Nonblocking connections (rx_connect_session() makes them so): send
 * everything libpq holds, and COPY data, waiting interruptibly for the
 * socket instead of blocking in libpq.
 */
extern void rx_flush(PGconn *conn, const char *member_name);
extern void rx_put_copy_data(PGconn *conn, const char *member_name,
							 const char *buf, int len);
extern void rx_put_copy_end(PGconn *conn, const char *member_name,
							const char *errormsg);

/*
 * Rows a member returned in text form, as tuples of desc: rx_text_rows()
 * looks the input functions up once, rx_text_row_store() puts row r of res,
 * its columns from col on, into a virtual slot of desc (values allocated in
 * the current memory context).
 */
typedef struct RxTextRows RxTextRows;
extern RxTextRows *rx_text_rows(TupleDesc desc);
extern TupleTableSlot *rx_text_row_store(RxTextRows *tr, PGresult *res, int r,
										 int col, TupleTableSlot *slot);

/* called from rx_metadata_init() */
extern void rx_remote_init(void);

#endif							/* RX_REMOTE_H */
