/*-------------------------------------------------------------------------
 *
 * remote_xact.c
 *	  Remote transactions tied to the local one (see remote_xact.h).
 *
 * A row forwarded to its owner or a catalog row pushed to a member must
 * exist there exactly when the local transaction commits, including when
 * a local subtransaction rolls back (a PL/pgSQL exception block, a
 * savepoint): otherwise a failure would leave rows on a member that the
 * local transaction never committed.  So each connection carries a remote
 * transaction opened at first use and a remote savepoint for each local
 * subtransaction level that used it, released or rolled back by the
 * subtransaction callbacks, and the remote COMMIT is sent at local
 * pre-commit.  The commands that open them travel with the first command
 * that needs them (one round trip: a libpq pipeline, or one simple query
 * ahead of a COPY).  On local abort the connection is closed: the member rolls
 * back when its client goes away, and nothing here can hang an abort.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_budget.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/two_phase.h"

#define MAX_XACT_CONNS 64

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
	uint64		prepared;		/* statement slots prepared in its session */
	int			prelude;		/* commands sent ahead of the one in
								 * pipeline whose results are unread */
	List	   *stmts;			/* XactStmts prepared in its session by
								 * rx_xact_send_params() */
	struct XactStmt *preparing; /* the last of the prelude prepares it */
	int			nstmts;			/* names given there */
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

static XactConn xconns[MAX_XACT_CONNS];
static int	nxconns = 0;		/* slots ever used: those past it are free
								 * (slots are taken from the start), so that
								 * every transaction end need not go through
								 * all of them */

/* a member whose remote transaction was lost; commit must fail */
static char doomed_member[NAMEDATALEN];

/* see rx_xact_changed_before(): the command of the first change */
static bool xact_changed = false;
static CommandId xact_changed_cid;

static void
forget(XactConn *xc)
{
	if (xc->conn != NULL)
	{
		rx_cancel(xc->conn);
		rx_disconnect(xc->conn);
	}
	if (xc->copy_table)
		pfree(xc->copy_table);
	list_free_deep(xc->stmts);
	if (xc->preparing)
		pfree(xc->preparing);
	memset(xc, 0, sizeof(XactConn));
}

static void
doom(XactConn *xc)
{
	if (doomed_member[0] == '\0')
		strlcpy(doomed_member, xc->name, sizeof(doomed_member));
	forget(xc);
}

/* ---------------------------------------------------------------------
 * Non-throwing helpers for abort processing (interrupts are held there)
 * ---------------------------------------------------------------------
 */

/* until a result can be read without waiting; false: timed out or lost */
static bool
cleanup_wait(PGconn *conn, TimestampTz deadline)
{
	while (PQisBusy(conn))
	{
		long		timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
															  deadline);
		int			rc;

		if (timeout <= 0)
			return false;
		rc = WaitLatchOrSocket(MyLatch,
							   WL_LATCH_SET | WL_SOCKET_READABLE | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							   PQsocket(conn), timeout, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(conn))
			return false;
	}
	return true;
}

static bool
cleanup_drain(PGconn *conn, TimestampTz deadline, bool *ok)
{
	for (;;)
	{
		PGresult   *res;

		if (!cleanup_wait(conn, deadline))
			return false;
		res = PQgetResult(conn);
		if (res == NULL)
			return true;
		if (PQresultStatus(res) == PGRES_FATAL_ERROR)
			*ok = false;
		else if (PQresultStatus(res) == PGRES_COPY_IN ||
				 PQresultStatus(res) == PGRES_COPY_OUT ||
				 PQresultStatus(res) == PGRES_COPY_BOTH)
		{
			/*
			 * A COPY the member still expects data for or still sends: it
			 * cannot be ended cleanly from here, so the connection goes.
			 */
			PQclear(res);
			return false;
		}
		PQclear(res);
	}
}

/*
 * Commands sent in pipeline mode: libpq returns each one's results
 * followed by a NULL, and the pipeline's end as a PGRES_PIPELINE_SYNC.
 * After an error the rest of the pipeline is skipped (PIPELINE_ABORTED)
 * up to its end.  Reads to the end and leaves pipeline mode, so that the
 * connection takes ordinary commands again (a savepoint's rollback).
 */
static bool
pipeline_end(XactConn *xc, TimestampTz deadline)
{
	for (;;)
	{
		PGresult   *res;
		bool		sync;

		if (!cleanup_wait(xc->conn, deadline))
			return false;
		res = PQgetResult(xc->conn);
		if (res == NULL)
			continue;
		sync = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
		PQclear(res);
		if (sync)
			break;
	}
	xc->prelude = 0;
	return PQexitPipelineMode(xc->conn) == 1;
}

static bool
cleanup_send(PGconn *conn, const char *sql, TimestampTz deadline)
{
	if (!PQsendQuery(conn, sql))
		return false;
	while (PQflush(conn) == 1)
	{
		if (GetCurrentTimestamp() >= deadline)
			return false;
		(void) WaitLatchOrSocket(MyLatch,
								 WL_SOCKET_WRITEABLE | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 PQsocket(conn), 100, PG_WAIT_EXTENSION);
	}
	return true;
}

static bool
cleanup_exec(PGconn *conn, const char *sql)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CLEANUP_TIMEOUT_MS);
	bool		ok = true;

	return cleanup_send(conn, sql, deadline) &&
		cleanup_drain(conn, deadline, &ok) && ok;
}

/* bring a connection whose command or COPY was interrupted back to idle */
static bool
cleanup_quiesce(XactConn *xc)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CLEANUP_TIMEOUT_MS);
	bool		ok = true;

	if (PQstatus(xc->conn) != CONNECTION_OK)
		return false;
	if (PQpipelineStatus(xc->conn) != PQ_PIPELINE_OFF)
		return pipeline_end(xc, deadline);
	if (OidIsValid(xc->copy_relid))
	{
		if (PQputCopyEnd(xc->conn, "rolled back by rdma_exchange") != 1)
			return false;
		xc->copy_relid = InvalidOid;
	}
	else if (PQtransactionStatus(xc->conn) == PQTRANS_ACTIVE)
		rx_cancel(xc->conn);
	while (PQflush(xc->conn) == 1)
	{
		if (GetCurrentTimestamp() >= deadline)
			return false;
		(void) WaitLatchOrSocket(MyLatch,
								 WL_SOCKET_WRITEABLE | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 PQsocket(xc->conn), 100, PG_WAIT_EXTENSION);
	}
	return cleanup_drain(xc->conn, deadline, &ok);
}

/* ---------------------------------------------------------------------
 * Getting a connection
 * ---------------------------------------------------------------------
 */

static void
end_copy(XactConn *xc)
{
	PGresult   *res;
	char		context[NAMEDATALEN * 2 + 64];

	if (!OidIsValid(xc->copy_relid))
		return;
	snprintf(context, sizeof(context), "forwarding rows of table %s",
			 xc->copy_table ? xc->copy_table : "?");
	xc->copy_relid = InvalidOid;
	rx_put_copy_end(xc->conn, xc->name, NULL);
	while ((res = rx_get_result(xc->conn, xc->name)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			PG_TRY();
			{
				rx_report_remote_error(ERROR, xc->conn, res, xc->name, context);
			}
			PG_FINALLY();
			{
				PQclear(res);
			}
			PG_END_TRY();
		}
		PQclear(res);
	}
}

/* commands as one simple-protocol query */
static char *
joined(List *cmds)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	foreach(lc, cmds)
		appendStringInfo(&sql, "%s%s", sql.len > 0 ? "; " : "", (char *) lfirst(lc));
	return sql.data;
}

/*
 * The connection to member for this transaction, with the remote
 * transaction open there at this subtransaction level.  With prelude, the
 * commands that open it (BEGIN, SET LOCAL, SAVEPOINT) are returned there
 * for the caller to send ahead of its own; without, they are run here.
 */
static XactConn *
get_xconn(const RxMember *member, char **failure, bool change, List **prelude)
{
	Oid			userid = GetUserId();
	XactConn   *xc = NULL;
	XactConn   *freeslot = NULL;
	int			level = GetCurrentTransactionNestLevel();
	List	   *cmds = NIL;

	if (doomed_member[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_IN_FAILED_SQL_TRANSACTION),
				 errmsg("the remote transaction on member \"%s\" was lost",
						doomed_member),
				 errhint("Roll back this transaction and retry.")));

	for (int i = 0; i < MAX_XACT_CONNS; i++)
	{
		if (!xconns[i].in_use)
		{
			if (freeslot == NULL)
				freeslot = &xconns[i];
			continue;
		}
		if (xconns[i].userid == userid &&
			strcmp(xconns[i].name, member->name) == 0)
		{
			xc = &xconns[i];
			break;
		}
	}

	/* went bad between transactions (e.g. the member restarted) */
	if (xc != NULL && xc->xact_depth == 0 && !rx_idle_connection_ok(xc->conn))
	{
		forget(xc);
		freeslot = xc;
		xc = NULL;
	}

	if (xc == NULL)
	{
		PGconn	   *conn;

		if (freeslot == NULL)
		{
			/* make room: drop a connection idle between transactions */
			for (int i = 0; i < MAX_XACT_CONNS && freeslot == NULL; i++)
				if (xconns[i].xact_depth == 0)
				{
					forget(&xconns[i]);
					freeslot = &xconns[i];
				}
			if (freeslot == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
						 errmsg("too many connections to members in one transaction")));
		}
		conn = rx_connect_session(member, failure);
		if (conn == NULL)
			return NULL;
		rx_connection_keep(conn);
		/* whose the session is, for lock cycles through members */
		rx_exec_command(conn, member->name,
						psprintf("SELECT rdma_exchange.session_origin(%d, %d)",
								 rx_self_member_index(), MyProcPid));
		xc = freeslot;
		memset(xc, 0, sizeof(XactConn));
		xc->in_use = true;
		nxconns = Max(nxconns, (int) (xc - xconns) + 1);
		strlcpy(xc->name, member->name, sizeof(xc->name));
		xc->userid = userid;
		xc->conn = conn;
	}

	if (xc->fragment)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("member \"%s\" is busy with a distributed query of this transaction",
						xc->name),
				 errdetail("After this transaction changed the member, the plan fragments of its distributed queries run in the member's transaction, one at a time, and one of them still runs there."),
				 errhint("Finish that query first, or commit before it.")));
	end_copy(xc);
	if (change)
		rx_xact_note_change();

	/*
	 * Lock waits there honour this session's lock_timeout, as they would
	 * here: set with the remote transaction, again when it changed (or a
	 * savepoint rolled back took it with it).
	 */
	if (xc->xact_depth == 0)
	{
		/*
		 * At REPEATABLE READ and SERIALIZABLE, with the transaction's
		 * cluster snapshot (cluster_snapshot.c).  SERIALIZABLE's predicate
		 * locks would be per member: the member runs REPEATABLE READ.
		 */
		if (!IsolationUsesXactSnapshot())
			cmds = lappend(cmds, "BEGIN");
		else
		{
			cmds = lappend(cmds, "BEGIN ISOLATION LEVEL REPEATABLE READ");
			if (rx_consistent_reads)
				cmds = lappend(cmds,
							   psprintf("SET TRANSACTION SNAPSHOT %s",
										quote_literal_cstr(rx_cluster_snapshot_export(member))));
		}
		xc->xact_depth = 1;
		xc->lock_timeout = 0;	/* SET LOCAL ended with the last one */
	}
	if (xc->lock_timeout != LockTimeout + 1)
	{
		cmds = lappend(cmds, psprintf("SET LOCAL lock_timeout = %d", LockTimeout));
		xc->lock_timeout = LockTimeout + 1;
	}
	while (xc->xact_depth < level)
	{
		xc->xact_depth++;
		cmds = lappend(cmds, psprintf("SAVEPOINT rx_s%d", xc->xact_depth));
	}

	/*
	 * One round trip for all of it, or none when the caller sends them
	 * with its own command.  Should they fail, the connection is dropped
	 * with the transaction (its depth already counts them).
	 */
	if (prelude != NULL)
		*prelude = cmds;
	else if (cmds != NIL)
		rx_exec_command(xc->conn, xc->name, joined(cmds));
	return xc;
}

/* the transaction connection that conn is, or NULL */
static XactConn *
xconn_of(PGconn *conn)
{
	for (int i = 0; i < nxconns; i++)
		if (xconns[i].in_use && xconns[i].conn == conn)
			return &xconns[i];
	return NULL;
}

void
rx_xact_note_change(void)
{
	if (!xact_changed)
	{
		xact_changed = true;
		xact_changed_cid = GetCurrentCommandId(false);
	}
}

bool
rx_xact_changed_before(CommandId cid)
{
	return xact_changed && xact_changed_cid < cid;
}

bool
rx_xact_open_on(const RxMember *member)
{
	for (int i = 0; i < nxconns; i++)
		if (xconns[i].in_use && xconns[i].xact_depth > 0 &&
			strcmp(xconns[i].name, member->name) == 0)
			return true;
	return false;
}

PGconn *
rx_xact_fragment_connection(const RxMember *member)
{
	Oid			userid = GetUserId();

	for (int i = 0; i < nxconns; i++)
	{
		XactConn   *xc = &xconns[i];

		if (xc->in_use && xc->xact_depth > 0 && xc->userid == userid &&
			strcmp(xc->name, member->name) == 0)
		{
			xc = get_xconn(member, NULL, true, NULL);
			xc->fragment = true;
			return xc->conn;
		}
	}
	return NULL;
}

void
rx_xact_fragment_done(PGconn *conn)
{
	XactConn   *xc = xconn_of(conn);

	if (xc != NULL)
		xc->fragment = false;
}

/* as rx_pool_prepared() and rx_pool_set_prepared(), for these sessions */
bool
rx_xact_prepared(PGconn *conn, int slot)
{
	XactConn   *xc = xconn_of(conn);

	return xc != NULL && slot >= 0 && slot < 64 &&
		(xc->prepared & (UINT64CONST(1) << slot)) != 0;
}

void
rx_xact_set_prepared(PGconn *conn, int slot)
{
	XactConn   *xc = xconn_of(conn);

	if (xc != NULL && slot >= 0 && slot < 64)
		xc->prepared |= UINT64CONST(1) << slot;
}

PGconn *
rx_xact_connection(const RxMember *member)
{
	return get_xconn(member, NULL, true, NULL)->conn;
}

PGconn *
rx_xact_lock_connection(const RxMember *member)
{
	return get_xconn(member, NULL, false, NULL)->conn;
}

PGconn *
rx_xact_connection_try(const RxMember *member, char **failure)
{
	XactConn   *xc = get_xconn(member, failure, true, NULL);

	return xc ? xc->conn : NULL;
}

void
rx_xact_exec(const RxMember *member, const char *sql, bool change)
{
	List	   *prelude = NIL;
	XactConn   *xc = get_xconn(member, NULL, change, &prelude);

	rx_exec_command(xc->conn, xc->name, joined(lappend(prelude, (char *) sql)));
}

PGconn *
rx_xact_send_params(const RxMember *member, const char *sql, int nparams,
					const Oid *types, const char *const *values, bool prepare)
{
	List	   *prelude = NIL;
	XactConn   *xc = get_xconn(member, NULL, true, &prelude);
	ListCell   *lc;
	int			stmt = 0;
	char		name[32];
	bool		ok = true;

	/*
	 * The statement is prepared in the member's session the first time
	 * (parsed and planned once there, like a prepared statement of a
	 * client), with the prelude if any, in one pipeline.
	 */
	if (prepare)
		foreach(lc, xc->stmts)
			if (strcmp(((XactStmt *) lfirst(lc))->sql, sql) == 0)
			{
				stmt = ((XactStmt *) lfirst(lc))->id;
				break;
			}
	if (xc->preparing)
	{
		/* one whose pipeline failed: its number is not given again */
		pfree(xc->preparing);
		xc->preparing = NULL;
	}
	if (prepare && stmt == 0)
	{
		xc->preparing = MemoryContextAlloc(TopMemoryContext,
										   offsetof(XactStmt, sql) + strlen(sql) + 1);
		xc->preparing->id = stmt = ++xc->nstmts;
		strcpy(xc->preparing->sql, sql);
	}
	snprintf(name, sizeof(name), "rx_x%d", stmt);
	if (prelude != NIL || xc->preparing != NULL)
	{
		ok = PQenterPipelineMode(xc->conn) == 1;
		foreach(lc, prelude)
			ok = ok && PQsendQueryParams(xc->conn, lfirst(lc), 0, NULL, NULL,
										 NULL, NULL, 0);
		if (xc->preparing != NULL)
			ok = ok && PQsendPrepare(xc->conn, name, sql, nparams, types);
		xc->prelude = list_length(prelude) + (xc->preparing != NULL ? 1 : 0);
	}
	if (prepare)
		ok = ok && PQsendQueryPrepared(xc->conn, name, nparams, values, NULL, NULL, 0);
	else
		ok = ok && PQsendQueryParams(xc->conn, sql, nparams, types, values, NULL, NULL, 0);
	if (PQpipelineStatus(xc->conn) != PQ_PIPELINE_OFF)
		ok = ok && PQpipelineSync(xc->conn);
	if (!ok)
		rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
							   "could not send a command");
	return xc->conn;
}

PGresult *
rx_xact_get_result(PGconn *conn, const char *member_name)
{
	XactConn   *xc = xconn_of(conn);
	PGresult   *res;

	if (xc == NULL || PQpipelineStatus(conn) == PQ_PIPELINE_OFF)
		return rx_get_result(conn, member_name);

	/* first the prelude's commands: a result each, then a NULL */
	while (xc->prelude > 0)
	{
		res = rx_get_result(conn, member_name);
		rx_raise_if_failed(conn, res, member_name,
						   "opening the transaction or preparing the statement there");
		PQclear(res);
		res = rx_get_result(conn, member_name);
		Assert(res == NULL);
		xc->prelude--;
		/* the statement exists there from now on, whatever comes next */
		if (xc->prelude == 0 && xc->preparing != NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			xc->stmts = lappend(xc->stmts, xc->preparing);
			xc->preparing = NULL;
			MemoryContextSwitchTo(old);
		}
	}

	/* the caller's command; after its last result, the pipeline's end */
	res = rx_get_result(conn, member_name);
	if (res == NULL &&
		!pipeline_end(xc, TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  CLEANUP_TIMEOUT_MS)))
		rx_report_remote_error(ERROR, conn, NULL, member_name,
							   "could not end a pipeline");
	return res;
}

void
rx_xact_copy_row(const RxMember *member, Oid relid, const char *table_name,
				 const char *copy_command, const char *line, int len)
{
	XactConn   *xc = NULL;
	Oid			userid = GetUserId();

	for (int i = 0; i < nxconns; i++)
		if (xconns[i].in_use && xconns[i].userid == userid &&
			strcmp(xconns[i].name, member->name) == 0)
		{
			xc = &xconns[i];
			break;
		}

	/* rows of a newer subtransaction level need their own savepoint */
	if (xc == NULL || xc->copy_relid != relid ||
		xc->xact_depth != GetCurrentTransactionNestLevel())
	{
		PGresult   *res;
		List	   *prelude = NIL;

		/* BEGIN and the rest in the same round trip, ahead of the COPY */
		xc = get_xconn(member, NULL, true, &prelude);
		if (!PQsendQuery(xc->conn, joined(lappend(prelude, (char *) copy_command))))
			rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
								   "could not start COPY");
		while ((res = rx_get_result(xc->conn, xc->name)) != NULL &&
			   PQresultStatus(res) == PGRES_COMMAND_OK)
			PQclear(res);
		if (res == NULL || PQresultStatus(res) != PGRES_COPY_IN)
		{
			PG_TRY();
			{
				rx_report_remote_error(ERROR, xc->conn, res, xc->name,
									   psprintf("forwarding rows of table %s",
												table_name));
			}
			PG_FINALLY();
			{
				if (res)
					PQclear(res);
			}
			PG_END_TRY();
		}
		PQclear(res);
		xc->copy_relid = relid;
		if (xc->copy_table)
			pfree(xc->copy_table);
		xc->copy_table = MemoryContextStrdup(TopMemoryContext, table_name);
	}
	rx_put_copy_data(xc->conn, xc->name, line, len);
}

void
rx_xact_copy_end(Oid relid)
{
	for (int i = 0; i < nxconns; i++)
	{
		XactConn   *xc = &xconns[i];

		if (xc->in_use && OidIsValid(xc->copy_relid) &&
			(!OidIsValid(relid) || xc->copy_relid == relid))
			end_copy(xc);
	}
}

/* ---------------------------------------------------------------------
 * Transaction callbacks
 * ---------------------------------------------------------------------
 */

/* PREPARE TRANSACTION there, with a hint where prepared transactions are off */
static void
prepare_remote(XactConn *xc, const char *gid)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		rx_exec_command(xc->conn, xc->name,
						psprintf("SELECT rdma_exchange.barrier_commit(); PREPARE TRANSACTION '%s'",
								 gid));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->message == NULL ||
			strstr(edata->message, "prepared transactions are disabled") == NULL)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("member \"%s\" cannot take part in a two-phase commit", xc->name),
				 errdetail("Its max_prepared_transactions is 0; a transaction that changes several members prepares on each of them before it commits."),
				 errhint("Set max_prepared_transactions on every member (to max_connections, say) and restart it.")));
	}
	PG_END_TRY();
}

static void
pre_commit(void)
{
	int			nremote = 0;

	if (doomed_member[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_TRANSACTION_ROLLBACK),
				 errmsg("the remote transaction on member \"%s\" was lost",
						doomed_member),
				 errdetail("A subtransaction could not be rolled back there, so the changes of this transaction on that member are gone.")));

	/* end every COPY first: a remote error must abort us before any COMMIT */
	for (int i = 0; i < nxconns; i++)
		if (xconns[i].in_use && xconns[i].xact_depth > 0)
			end_copy(&xconns[i]);

	for (int i = 0; i < nxconns; i++)
		if (xconns[i].in_use && xconns[i].xact_depth > 0)
			nremote++;
	if (nremote == 0)
		return;

	/*
	 * More than one member changed (this one too, or two others): two
	 * phases (two_phase.c).  One other member alone commits in one, and so
	 * does a transaction that is read-only here: it cannot write its
	 * decision record (its remote parts are run_on_all_nodes() commands).
	 */
	if ((nremote > 1 || TransactionIdIsValid(GetTopTransactionIdIfAny())) &&
		!XactReadOnly)
	{
		char	   *transaction;
		bool		first = true;
		RxMember   *members;
		int			nmembers = rx_get_members(&members);
		int			self = rx_self_member_index();

		rx_two_phase_fault(RX_FAULT_COMMIT_BEFORE_PREPARE);
		transaction = rx_two_phase_decide();

		/*
		 * Member by member, in member order: the read barrier there
		 * (cluster_snapshot.c), with the PREPARE on the others, so that no
		 * distributed query takes its snapshots between our first and our
		 * last commit.  The order is the one queries wait in.  A member
		 * this transaction removed from the list (remove_node) comes last.
		 */
		for (int m = 0; m <= nmembers; m++)
		{
			if (m == self)
			{
				rx_barrier_commit_local();
				continue;
			}
			for (int i = 0; i < nxconns; i++)
			{
				XactConn   *xc = &xconns[i];
				char	   *gid;

				if (!xc->in_use || xc->xact_depth == 0 ||
					(m < nmembers && strcmp(xc->name, members[m].name) != 0))
					continue;
				gid = rx_two_phase_gid(transaction, i);
				prepare_remote(xc, gid);
				strlcpy(xc->gid, gid, sizeof(xc->gid));
				xc->xact_depth = 0;
				if (first)
					rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_FIRST_PREPARE);
				first = false;
			}
		}
		rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_PREPARE);
		return;
	}

	for (int i = 0; i < nxconns; i++)
	{
		XactConn   *xc = &xconns[i];

		if (!xc->in_use || xc->xact_depth == 0)
			continue;
		rx_exec_command(xc->conn, xc->name, "COMMIT");
		xc->xact_depth = 0;
	}
}

/*
 * After the local commit or abort: the decision to every member prepared
 * for it, to all at once, then their answers.  Nothing may fail here;
 * what does not get through is left to recovery (two_phase.c), which
 * finds the same decision.
 */
static void
finish_prepared(bool commit)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CLEANUP_TIMEOUT_MS);
	bool		sent[MAX_XACT_CONNS];

	for (int i = 0; i < nxconns; i++)
		if (commit && xconns[i].in_use && xconns[i].gid[0] != '\0')
		{
			rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_DECISION);
			break;
		}
	for (int i = 0; i < nxconns; i++)
	{
		XactConn   *xc = &xconns[i];

		sent[i] = xc->in_use && xc->gid[0] != '\0' &&
			!(commit && rx_fault_commit == RX_FAULT_COMMIT_SKIP_COMMIT_PREPARED) &&
			cleanup_send(xc->conn,
						 psprintf("%s PREPARED '%s'", commit ? "COMMIT" : "ROLLBACK", xc->gid),
						 deadline);
	}
	for (int i = 0; i < nxconns; i++)
	{
		XactConn   *xc = &xconns[i];
		bool		ok = true;

		if (!xc->in_use || xc->gid[0] == '\0')
			continue;
		if (!sent[i] || !cleanup_drain(xc->conn, deadline, &ok) || !ok)
		{
			ereport(WARNING,
					(errmsg("could not %s prepared transaction \"%s\" on member \"%s\"",
							commit ? "commit" : "roll back", xc->gid, xc->name),
					 errdetail("The transaction %s here; recovery will %s it there.",
							   commit ? "committed" : "rolled back",
							   commit ? "commit" : "roll back")));
			forget(xc);
			continue;
		}
		xc->gid[0] = '\0';
	}
}

static void
remote_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			pre_commit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			for (int i = 0; i < nxconns; i++)
				if (xconns[i].in_use && xconns[i].xact_depth > 0)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot prepare a transaction that changed other members"),
							 errdetail("The transaction has an open remote transaction on member \"%s\"; rdma_exchange commits members without two-phase commit.",
									   xconns[i].name),
							 errhint("Commit the transaction instead of preparing it.")));
			break;
		case XACT_EVENT_ABORT:
			finish_prepared(false);
			for (int i = 0; i < nxconns; i++)
			{
				XactConn   *xc = &xconns[i];

				if (xc->in_use &&
					(xc->xact_depth > 0 || OidIsValid(xc->copy_relid) ||
					 PQtransactionStatus(xc->conn) != PQTRANS_IDLE))
					forget(xc);
			}
			doomed_member[0] = '\0';
			xact_changed = false;
			break;
		case XACT_EVENT_COMMIT:
			finish_prepared(true);
			doomed_member[0] = '\0';
			xact_changed = false;
			break;
		case XACT_EVENT_PREPARE:
			doomed_member[0] = '\0';
			xact_changed = false;
			break;
		default:
			break;
	}

	/* idle connections go back to the members' budget when others need it */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		for (int i = 0; i < nxconns; i++)
		{
			XactConn   *xc = &xconns[i];

			if (xc->in_use && xc->xact_depth == 0 &&
				PQtransactionStatus(xc->conn) == PQTRANS_IDLE &&
				rx_budget_should_give_back(xc->name))
				forget(xc);
		}
}

static void
remote_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event != SUBXACT_EVENT_PRE_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;

	for (int i = 0; i < nxconns; i++)
	{
		XactConn   *xc = &xconns[i];
		char		sql[96];

		if (!xc->in_use || xc->xact_depth < level)
			continue;

		if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
		{
			end_copy(xc);
			snprintf(sql, sizeof(sql), "RELEASE SAVEPOINT rx_s%d", level);
			rx_exec_command(xc->conn, xc->name, sql);
			xc->xact_depth = level - 1;
		}
		else
		{
			snprintf(sql, sizeof(sql),
					 "ROLLBACK TO SAVEPOINT rx_s%d; RELEASE SAVEPOINT rx_s%d",
					 level, level);
			if (cleanup_quiesce(xc) && cleanup_exec(xc->conn, sql))
			{
				/* a fragment running there was cancelled with the rest */
				xc->xact_depth = level - 1;
				xc->fragment = false;
				xc->lock_timeout = 0;
			}
			else
				doom(xc);
		}
	}
}

void
rx_remote_xact_init(void)
{
	RegisterXactCallback(remote_xact_callback, NULL);
	RegisterSubXactCallback(remote_subxact_callback, NULL);
}
