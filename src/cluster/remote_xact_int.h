/*-------------------------------------------------------------------------
 *
 * remote_xact_int.h
 *	  What remote_xact.c (the connections and commands of a transaction's
 *	  remote transactions) shares with remote_xact_end.c (their end:
 *	  commit in one or two phases, abort, subtransactions).  For those two
 *	  files only; everyone else uses remote_xact.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_REMOTE_XACT_INT_H
#define RX_REMOTE_XACT_INT_H

#include "datatype/timestamp.h"
#include "libpq-fe.h"
#include "nodes/pg_list.h"

#define MAX_XACT_CONNS 64

/* statements rx_xact_send_params() prepares in one member session, at most */
#define MAX_XACT_STMTS 128

/* abort-time cleanup waits at most this long for a member (ms) */
#define CLEANUP_TIMEOUT_MS 30000

typedef struct XactConn
{
	bool		in_use;
	char		name[NAMEDATALEN];
	Oid			userid;
	PGconn	   *conn;
	int			xact_depth;		/* 0: no remote transaction; 1: BEGIN sent;
								 * n > 1: savepoints up to level n */
	Oid			copy_relid;		/* COPY in progress for this relation */
	char	   *copy_table;		/* its name, in TopMemoryContext */
	bool		fragment;		/* a plan fragment runs on it */
	char		gid[128];		/* prepared there, awaiting the decision */
	int			lock_timeout;	/* lock_timeout set there + 1; 0: unknown */
	char	   *context;		/* the statement context taken there in this
								 * transaction (TopMemoryContext); NULL:
								 * none, or a savepoint rolled back */
	uint64		prepared;		/* statement slots prepared in its session */
	int			prelude;		/* commands sent ahead of the one in
								 * pipeline whose results are unread */
	List	   *stmts;			/* XactStmts prepared in its session by
								 * rx_xact_send_params() */
	struct XactStmt *preparing; /* the last of the prelude prepares it */
	int			nstmts;			/* names given there */
	List	   *deferred;		/* DeferredCmds not sent yet, in order */
	List	   *inflight;		/* DeferredCmds sent, results unread */
	MemoryContext cxt;			/* holds both; a child of the transaction's */
} XactConn;

/*
 * A statement prepared in a member's session as rx_x<id>, in
 * TopMemoryContext.  A prepare that may have happened there without its
 * result read (an error earlier in its pipeline) is not recorded: its
 * number is not given again.
 */
typedef struct XactStmt
{
	int			id;
	char		sql[FLEXIBLE_ARRAY_MEMBER];
} XactStmt;

/* the connections; slots past rx_nxconns were never used */
extern XactConn rx_xconns[MAX_XACT_CONNS];
extern int	rx_nxconns;

/* a member whose remote transaction was lost; commit must fail */
extern char rx_doomed_member[NAMEDATALEN];

/* this transaction changed a member (rx_xact_changed_before()) */
extern bool rx_xact_changed;

/* a connection closed, with its remote transaction; doom: commit fails */
extern void rx_xconn_forget(XactConn *xc);
extern void rx_xconn_forget_context(XactConn *xc);
extern void rx_xconn_doom(XactConn *xc);

/* non-throwing helpers for abort processing */
extern bool rx_xconn_cleanup_send(PGconn *conn, const char *sql,
								  TimestampTz deadline);
extern bool rx_xconn_cleanup_drain(PGconn *conn, TimestampTz deadline,
								   bool *ok);
extern bool rx_xconn_cleanup_exec(PGconn *conn, const char *sql);
extern bool rx_xconn_quiesce(XactConn *xc);
extern bool rx_xconn_pipeline_end(XactConn *xc, TimestampTz deadline);

extern void rx_xconn_end_copy(XactConn *xc);

/*
 * The queue of deferred commands (remote_xact.c): sent with cmds (single
 * commands) in one round trip, its answers checked; dropped from a
 * rolled back subtransaction level; forgotten once sent when the answers
 * will not be read.
 */
extern void rx_xconn_flush_start(XactConn *xc);
extern void rx_xconn_flush_with(XactConn *xc, List *cmds);
extern void rx_xconn_flush(XactConn *xc);
extern void rx_xconn_drop_deferred(XactConn *xc, int level);
extern void rx_xconn_forget_inflight(XactConn *xc);

#endif							/* RX_REMOTE_XACT_INT_H */
