/*-------------------------------------------------------------------------
 *
 * remote_xact.h
 *	  Remote transactions on other members that commit or roll back with
 *	  the local one.
 *
 * The metadata functions and forwarded DML change other members through
 * these connections: one per member and user, a remote transaction opened
 * at first use, a savepoint for each local subtransaction level that uses
 * it, COMMIT sent at local pre-commit, and the connection dropped (so the
 * member rolls back) when the local transaction aborts.  Like
 * postgres_fdw; a transaction that changed more than one member commits
 * in two phases (two_phase.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_REMOTE_XACT_H
#define RX_REMOTE_XACT_H

#include "libpq-fe.h"
#include "cluster/metadata.h"

/*
 * The connection to member in the current transaction, with the remote
 * transaction open at the current subtransaction level and no COPY in
 * progress.  Errors name the member.  Never close it: it belongs to this
 * module.
 */
extern PGconn *rx_xact_connection(const RxMember *member);

/*
 * The same for a statement that changes no rows there (LOCK TABLE): the
 * transaction's distributed queries go on reading as before.
 */
extern PGconn *rx_xact_lock_connection(const RxMember *member);

/*
 * For a plan fragment that must see this transaction's changes on member:
 * the connection when this transaction has a remote transaction open
 * there (at the current subtransaction level, no COPY in progress),
 * else NULL.  It is marked busy until rx_xact_fragment_done(): meanwhile
 * any other use of it in this transaction is an error naming the member.
 */
extern PGconn *rx_xact_fragment_connection(const RxMember *member);
extern void rx_xact_fragment_done(PGconn *conn);

/*
 * Whether this transaction has a remote transaction open on member (in
 * any role's session): it may hold locks there
 */
extern bool rx_xact_open_on(const RxMember *member);

/* statements prepared in a member session of the transaction (direct.c) */
extern bool rx_xact_prepared(PGconn *conn, int slot);
extern void rx_xact_set_prepared(PGconn *conn, int slot);

/* same, but NULL and the libpq message in *failure when unreachable */
extern PGconn *rx_xact_connection_try(const RxMember *member, char **failure);

/*
 * Runs sql (one command without results) in this transaction's remote
 * transaction on member, opening it in the same round trip.  change: the
 * command changes something there (see rx_xact_lock_connection()).
 */
extern void rx_xact_exec(const RxMember *member, const char *sql, bool change);

/*
 * The same for a change whose expressions run there (an INSERT under
 * row-level security): after this session's statement context
 * (settings.c, rx_statement_context_sql()) in the same round trip.
 */
extern void rx_xact_exec_in_context(const RxMember *member, const char *sql);

/*
 * Queues sql (one command, prepared there, text parameters) for this
 * transaction's remote transaction on member without waiting for it: it
 * goes with the next command sent there, at the latest at commit, and
 * an error of it says context (see "Deferred commands" in
 * remote_xact.c).  A reference table's row changes by key (dml.c).
 */
extern void rx_xact_defer_params(const RxMember *member, const char *sql,
								 int nparams, const char *const *values,
								 const char *context);

/* what is queued for member's transaction, sent now and its answers read */
extern void rx_xact_flush(const RxMember *member);

/*
 * Sends sql (extended protocol, text parameters) in this transaction's
 * remote transaction on member; when that is not open yet, its BEGIN goes
 * in the same round trip (libpq pipeline mode).  prepare: sql is one of a
 * few texts sent again and again (a row change by key); it is prepared in
 * the member's session the first time and executed by name after that.
 * in_context: the statement's expressions run there (a forwarded UPDATE),
 * so this session's statement context goes ahead of it (settings.c).
 * binary: its rows come back in binary form.
 * Read the results with rx_xact_get_result() until it returns NULL.
 */
extern PGconn *rx_xact_send_params(const RxMember *member, const char *sql,
								   int nparams, const Oid *types,
								   const char *const *values, bool prepare,
								   bool in_context, bool binary);
extern PGresult *rx_xact_get_result(PGconn *conn, const char *member_name);

/*
 * Send one COPY text line (with its newline) for relid to member.  The
 * COPY is started with copy_command ("COPY t (a, b) FROM STDIN") at the
 * first row and stays open until rx_xact_copy_end(), another use of the
 * connection, or commit.  table_name is for messages.
 */
extern void rx_xact_copy_row(const RxMember *member, Oid relid,
							 const char *table_name,
							 const char *copy_command,
							 const char *line, int len);

/* finish the COPYs of relid (InvalidOid: all); remote errors raise here */
extern void rx_xact_copy_end(Oid relid);

/*
 * Whether the current transaction changed data or catalogs of the cluster
 * in a command before cid: it wrote a distributed or reference table, or
 * opened a remote transaction on a member.  A distributed query runs its
 * fragments in sessions of their own, which cannot see those changes, so
 * dispatch refuses a query whose snapshot should see them.  Changes made
 * by the query's own command (INSERT ... SELECT) are invisible to it
 * anyway.
 */
extern void rx_xact_note_change(void);
extern bool rx_xact_changed_before(CommandId cid);

/* called from rx_metadata_init() */
extern void rx_remote_xact_init(void);

#endif							/* RX_REMOTE_XACT_H */
