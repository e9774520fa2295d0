/*-------------------------------------------------------------------------
 *
 * remote.c
 *	  libpq connections from one member to another: connecting, waiting
 *	  for results, reporting remote errors, and never leaking a connection.
 *
 * Waits follow postgres_fdw (pgfdw_get_result): the backend sleeps on its
 * latch and the connection's socket, serves interrupts and consumes input
 * as it arrives, so a cancel or statement_timeout here is never stuck
 * behind a slow member; an error or interrupt while a remote command runs
 * cancels that command before the error propagates.
 *
 * Every connection is tracked from the moment it exists.  A libpq event
 * procedure forgets it when anyone calls PQfinish(), and the transaction
 * callbacks close the ones whose (sub)transaction aborted, unless their
 * owner took them over with rx_connection_keep() (see remote.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "libpq-events.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "rdma_exchange.h"
#include "cluster/conn_budget.h"
#include "cluster/deadlock.h"
#include "cluster/remote.h"

typedef struct TrackedConn
{
	PGconn	   *conn;
	char		name[NAMEDATALEN];	/* "host:port", for messages */
	bool		kept;			/* owner closes it, abort leaves it */
	SubTransactionId subid;		/* (sub)transaction that owns it */
	int			budget;			/* conn_budget.c slot, -1 none */
	WaitEventSet *waits;		/* see wait_socket() */
	pgsocket	waits_sock;		/* the socket in it */
	int			waits_io;		/* WL_SOCKET_WRITEABLE: waits for that too */
} TrackedConn;

/* malloc'd like the PGconn, so both live as long as each other */
static TrackedConn **tracked = NULL;
static int	ntracked = 0;
static int	maxtracked = 0;

static TrackedConn *
find_tracked(PGconn *conn)
{
	for (int i = 0; i < ntracked; i++)
		if (tracked[i]->conn == conn)
			return tracked[i];
	return NULL;
}

static int
conn_event(PGEventId evtId, void *evtInfo, void *passThrough)
{
	TrackedConn *tc = (TrackedConn *) passThrough;

	if (evtId == PGEVT_CONNDESTROY && tc != NULL)
	{
		for (int i = 0; i < ntracked; i++)
			if (tracked[i] == tc)
			{
				tracked[i] = tracked[--ntracked];
				break;
			}
		rx_budget_release(tc->budget);
		if (tc->waits != NULL)
			FreeWaitEventSet(tc->waits);
		free(tc);
	}
	return 1;
}

/*
 * Remote notices and warnings: a WARNING from a member is worth the
 * user's attention, the rest (e.g. "already exists, skipping") is not.
 */
static void
conn_notice(void *arg, const PGresult *res)
{
	TrackedConn *tc = (TrackedConn *) arg;
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	if (primary == NULL)
		return;
	ereport((severity && strcmp(severity, "WARNING") == 0) ? WARNING : DEBUG1,
			(errmsg_internal("%s", primary),
			 errcontext("on member \"%s\"", tc->name)));
}

static void
track(PGconn *conn, const char *name, int budget)
{
	TrackedConn *tc = malloc(sizeof(TrackedConn));

	if (tc == NULL)
	{
		PQfinish(conn);
		rx_budget_release(budget);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	tc->conn = conn;
	strlcpy(tc->name, name, sizeof(tc->name));
	tc->kept = false;
	tc->subid = GetCurrentSubTransactionId();
	tc->budget = budget;
	tc->waits = NULL;
	tc->waits_sock = PGINVALID_SOCKET;
	tc->waits_io = 0;

	if (ntracked == maxtracked)
	{
		int			newmax = Max(16, maxtracked * 2);

		if (tracked == NULL)
			tracked = MemoryContextAlloc(TopMemoryContext,
										 sizeof(TrackedConn *) * newmax);
		else
			tracked = repalloc(tracked, sizeof(TrackedConn *) * newmax);
		maxtracked = newmax;
	}
	if (!PQregisterEventProc(conn, conn_event, "rdma_exchange", tc))
	{
		free(tc);
		PQfinish(conn);
		rx_budget_release(budget);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not register a libpq event procedure")));
	}
	tracked[ntracked++] = tc;
	PQsetNoticeReceiver(conn, conn_notice, tc);
}

void
rx_disconnect(PGconn *conn)
{
	if (conn != NULL)
		PQfinish(conn);			/* conn_event() forgets it */
}

void
rx_connection_keep(PGconn *conn)
{
	TrackedConn *tc = find_tracked(conn);

	if (tc != NULL)
		tc->kept = true;
}

void
rx_cancel(PGconn *conn)
{
	PGcancel   *cancel;
	char		errbuf[256];

	if (conn == NULL || PQstatus(conn) != CONNECTION_OK ||
		PQtransactionStatus(conn) != PQTRANS_ACTIVE)
		return;
	cancel = PQgetCancel(conn);
	if (cancel == NULL)
		return;
	if (!PQcancel(cancel, errbuf, sizeof(errbuf)))
		ereport(DEBUG1,
				(errmsg_internal("could not send a cancel request: %s", errbuf)));
	PQfreeCancel(cancel);
}

static void
close_if(bool (*pred) (TrackedConn *tc, SubTransactionId subid),
		 SubTransactionId subid)
{
	/* backwards: PQfinish() removes the entry from the array */
	for (int i = ntracked - 1; i >= 0; i--)
	{
		TrackedConn *tc;

		if (i >= ntracked)
			continue;
		tc = tracked[i];
		if (pred(tc, subid))
		{
			rx_cancel(tc->conn);
			PQfinish(tc->conn);
		}
	}
}

static bool
pred_unkept(TrackedConn *tc, SubTransactionId subid)
{
	return !tc->kept;
}

static bool
pred_unkept_of_subxact(TrackedConn *tc, SubTransactionId subid)
{
	return !tc->kept && tc->subid == subid;
}

static void
remote_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
			close_if(pred_unkept, InvalidSubTransactionId);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			/* still open: the caller keeps it, abort must not close it */
			for (int i = 0; i < ntracked; i++)
				tracked[i]->kept = true;
			break;
		default:
			break;
	}
}

static void
remote_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			close_if(pred_unkept_of_subxact, mySubid);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (int i = 0; i < ntracked; i++)
				if (tracked[i]->subid == mySubid)
					tracked[i]->subid = parentSubid;
			break;
		default:
			break;
	}
}

void
rx_remote_init(void)
{
	RegisterXactCallback(remote_xact_callback, NULL);
	RegisterSubXactCallback(remote_subxact_callback, NULL);
}

/* ---------------------------------------------------------------------
 * Connecting
 * ---------------------------------------------------------------------
 */

/*
 * Asynchronous connect, so that the wait serves interrupts; libpq does
 * not apply connect_timeout to PQconnectPoll(), so the deadline is ours.
 */
static PGconn *
connect_internal(const char *host, int port, const char *dbname,
				 const char *options, const char *name, char **failure)
{
	const char *keywords[10];
	const char *values[10];
	char		portstr[16];
	char		timeoutstr[16];
	int			n = 0;
	PGconn	   *volatile conn;
	char	   *user = GetUserNameFromId(GetUserId(), false);
	char	   *failmsg = NULL;
	int			budget;

	if (dbname == NULL)
		dbname = get_database_name(MyDatabaseId);
	snprintf(portstr, sizeof(portstr), "%d", port);
	snprintf(timeoutstr, sizeof(timeoutstr), "%d", rx_connect_timeout);
	keywords[n] = "host";
	values[n++] = host;
	keywords[n] = "port";
	values[n++] = portstr;
	keywords[n] = "dbname";
	values[n++] = dbname;
	keywords[n] = "user";
	values[n++] = user;
	keywords[n] = "application_name";
	values[n++] = RX_APPLICATION_NAME;
	keywords[n] = "connect_timeout";
	values[n++] = timeoutstr;
	keywords[n] = "client_encoding";
	values[n++] = GetDatabaseEncodingName();
	if (options != NULL)
	{
		keywords[n] = "options";
		values[n++] = options;
	}
	keywords[n] = NULL;
	values[n] = NULL;

	budget = rx_budget_reserve(name);
	conn = PQconnectStartParams(keywords, values, false);
	if (conn == NULL)
	{
		rx_budget_release(budget);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory connecting to member \"%s\"", name)));
	}

	PG_TRY();
	{
		PostgresPollingStatusType status = PGRES_POLLING_WRITING;
		TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   rx_connect_timeout * 1000);

		if (PQstatus(conn) == CONNECTION_BAD)
			status = PGRES_POLLING_FAILED;
		while (status != PGRES_POLLING_OK && status != PGRES_POLLING_FAILED)
		{
			long		timeout;
			int			io = (status == PGRES_POLLING_READING) ?
				WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
			int			rc;

			timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (timeout <= 0)
			{
				failmsg = psprintf("No answer within rdma_exchange.connect_timeout (%d s).",
								   rx_connect_timeout);
				break;
			}
			rc = WaitLatchOrSocket(MyLatch,
								   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | io,
								   PQsocket(conn), timeout, PG_WAIT_EXTENSION);
			if (rc & WL_LATCH_SET)
			{
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
			if (rc & io)
				status = PQconnectPoll(conn);
		}
		if (failmsg == NULL && status != PGRES_POLLING_OK)
			failmsg = pchomp(PQerrorMessage(conn));
	}
	PG_CATCH();
	{
		PQfinish(conn);
		rx_budget_release(budget);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (failmsg != NULL)
	{
		PQfinish(conn);
		rx_budget_release(budget);
		if (failure != NULL)
		{
			*failure = failmsg;
			return NULL;
		}
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to member \"%s\"", name),
				 errdetail_internal("%s", failmsg),
				 errhint("Check that the member is up and accepts connections on that address, and that its pg_hba.conf lets user \"%s\" connect to database \"%s\".",
						 user, dbname)));
	}
	track(conn, name, budget);
	rx_budget_learn(budget, conn, name);
	return conn;
}

PGconn *
rx_connect(const char *host, int port, const char *dbname)
{
	char		name[NAMEDATALEN];

	snprintf(name, sizeof(name), "%s:%d", host, port);
	return connect_internal(host, port, dbname, NULL, name, NULL);
}

/*
 * Sessions on members notice within a second that their coordinator has
 * gone (client_connection_check_interval): a coordinator that aborts
 * closes the connections of fragments still running, and a cancel that
 * reached a fragment before its query started would be lost otherwise.
 * The member closes them when they were idle (outside a transaction) for
 * rdma_exchange.member_idle_timeout, so idle client sessions elsewhere do
 * not hold its connection slots; the pools here replace a closed one at
 * its next use.
 */
static char *
member_session_options(const char *more)
{
	return psprintf("-c client_connection_check_interval=1000 -c idle_session_timeout=%d%s%s",
					rx_member_idle_timeout, more ? " " : "", more ? more : "");
}

PGconn *
rx_connect_member(const RxMember *member)
{
	return connect_internal(member->host, member->port, NULL,
							member_session_options(NULL), member->name, NULL);
}

PGconn *
rx_connect_session(const RxMember *member, char **failure)
{
	PGconn	   *conn;

	conn = connect_internal(member->host, member->port, NULL,
							member_session_options("-c rdma_exchange.enable=off -c datestyle=ISO -c intervalstyle=postgres"),
							member->name, failure);
	if (conn != NULL && PQsetnonblocking(conn, 1) != 0)
	{
		PQfinish(conn);
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not make the connection to member \"%s\" nonblocking",
						member->name)));
	}
	return conn;
}

/* ---------------------------------------------------------------------
 * Waiting
 * ---------------------------------------------------------------------
 */

/*
 * The wait set of a tracked connection: its socket, this backend's latch,
 * the postmaster's death.  Made once per connection, not per wait: a set
 * is an epoll instance, and making and closing one per wait was a tenth
 * of the CPU time of a point lookup sent to another member.  Freed with
 * the connection (conn_event()).  NULL for a connection not tracked.
 */
#define WAIT_SOCKET_POS 2

static WaitEventSet *
conn_waits(PGconn *conn, int io)
{
	TrackedConn *tc = find_tracked(conn);
	pgsocket	sock = PQsocket(conn);

	if (tc == NULL || sock == PGINVALID_SOCKET)
		return NULL;
	if (tc->waits == NULL || tc->waits_sock != sock)
	{
		if (tc->waits != NULL)
			FreeWaitEventSet(tc->waits);
		tc->waits = NULL;
		tc->waits = CreateWaitEventSet(TopMemoryContext, 3);
		AddWaitEventToSet(tc->waits, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(tc->waits, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		if (AddWaitEventToSet(tc->waits, WL_SOCKET_READABLE, sock, NULL, NULL) !=
			WAIT_SOCKET_POS)
			elog(ERROR, "unexpected position of a socket in its wait set");
		tc->waits_sock = sock;
		tc->waits_io = 0;
	}
	if (tc->waits_io != io)
	{
		ModifyWaitEvent(tc->waits, WAIT_SOCKET_POS, WL_SOCKET_READABLE | io, NULL);
		tc->waits_io = io;
	}
	return tc->waits;
}

/* wait for the socket; consume what arrives so the member never stalls */
static void
wait_socket(PGconn *conn, const char *member_name, int io)
{
	WaitEventSet *waits = conn_waits(conn, io);
	int			rc = 0;

	/* a lock cycle through members may pick this transaction (deadlock.c) */
	rx_deadlock_wait_begin();
	if (waits != NULL)
	{
		WaitEvent	event;

		if (WaitEventSetWait(waits, -1L, &event, 1, PG_WAIT_EXTENSION) > 0)
			rc = event.events;
	}
	else
		rc = WaitLatchOrSocket(MyLatch,
							   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | WL_SOCKET_READABLE | io,
							   PQsocket(conn), -1L, PG_WAIT_EXTENSION);
	rx_deadlock_wait_end();
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(conn))
		rx_report_remote_error(ERROR, conn, NULL, member_name,
							   "lost the connection");
}

void
rx_flush(PGconn *conn, const char *member_name)
{
	int			r;

	while ((r = PQflush(conn)) != 0)
	{
		if (r < 0)
			rx_report_remote_error(ERROR, conn, NULL, member_name,
								   "could not send data");
		wait_socket(conn, member_name, WL_SOCKET_WRITEABLE);
	}
}

void
rx_put_copy_data(PGconn *conn, const char *member_name, const char *buf,
				 int len)
{
	int			r;

	while ((r = PQputCopyData(conn, buf, len)) != 1)
	{
		if (r < 0)
		{
			/* the member ended the COPY with an error: report that one */
			PGresult   *res = PQgetResult(conn);

			PG_TRY();
			{
				rx_report_remote_error(ERROR, conn, res, member_name,
									   "could not send COPY data");
			}
			PG_FINALLY();
			{
				if (res)
					PQclear(res);
			}
			PG_END_TRY();
		}
		wait_socket(conn, member_name, WL_SOCKET_WRITEABLE);
	}
}

void
rx_put_copy_end(PGconn *conn, const char *member_name, const char *errormsg)
{
	int			r;

	while ((r = PQputCopyEnd(conn, errormsg)) != 1)
	{
		if (r < 0)
			rx_report_remote_error(ERROR, conn, NULL, member_name,
								   "could not end COPY");
		wait_socket(conn, member_name, WL_SOCKET_WRITEABLE);
	}
	rx_flush(conn, member_name);
}

PGresult *
rx_get_result(PGconn *conn, const char *member_name)
{
	PGresult   *volatile res = NULL;

	PG_TRY();
	{
		rx_flush(conn, member_name);
		while (PQisBusy(conn))
			wait_socket(conn, member_name, 0);
		res = PQgetResult(conn);
	}
	PG_CATCH();
	{
		/* interrupted or lost: the member must not go on alone */
		rx_cancel(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return res;
}

/* ---------------------------------------------------------------------
 * Commands
 * ---------------------------------------------------------------------
 */

/*
 * A connection kept idle between uses may have gone bad meanwhile (the
 * member restarted, its backend was terminated or timed out): reading
 * what is pending marks it bad without an error.  Twice: the first read
 * may return the member's farewell message, the second the end of file.
 */
bool
rx_idle_connection_ok(PGconn *conn)
{
	return PQconsumeInput(conn) && PQconsumeInput(conn) &&
		PQstatus(conn) == CONNECTION_OK &&
		PQtransactionStatus(conn) == PQTRANS_IDLE;
}

void
rx_send_query(PGconn *conn, const char *member_name, const char *sql)
{
	if (!PQsendQuery(conn, sql))
		rx_report_remote_error(ERROR, conn, NULL, member_name,
							   "could not send a command");
}

/* raise the member's error carried by a failed result, which is cleared */
void
rx_raise_if_failed(PGconn *conn, PGresult *res, const char *member_name,
				   const char *context)
{
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return;
	PG_TRY();
	{
		rx_report_remote_error(ERROR, conn, res, member_name, context);
	}
	PG_FINALLY();
	{
		PQclear(res);
	}
	PG_END_TRY();
}

void
rx_exec_command(PGconn *conn, const char *member_name, const char *sql)
{
	PGresult   *res;

	rx_send_query(conn, member_name, sql);
	while ((res = rx_get_result(conn, member_name)) != NULL)
	{
		rx_raise_if_failed(conn, res, member_name, NULL);
		PQclear(res);
	}
}

PGresult *
rx_exec_query(PGconn *conn, const char *member_name, const char *sql)
{
	rx_send_query(conn, member_name, sql);
	return rx_query_result(conn, member_name);
}

PGresult *
rx_query_result(PGconn *conn, const char *member_name)
{
	PGresult   *res;
	PGresult   *volatile last = NULL;

	PG_TRY();
	{
		while ((res = rx_get_result(conn, member_name)) != NULL)
		{
			if (PQresultStatus(res) == PGRES_TUPLES_OK)
			{
				if (last != NULL)
					PQclear(last);
				last = res;
				continue;
			}
			rx_raise_if_failed(conn, res, member_name, NULL);
			PQclear(res);
		}
		if (last == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("member \"%s\" returned no rows for a query",
							member_name)));
	}
	PG_CATCH();
	{
		if (last != NULL)
			PQclear(last);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return last;
}

char	 ***
rx_query_strings(PGconn *conn, const char *member_name, const char *sql,
				 int *nrows)
{
	PGresult   *res = rx_exec_query(conn, member_name, sql);
	int			n = PQntuples(res);
	int			ncols = PQnfields(res);
	char	 ***rows = palloc(sizeof(char **) * Max(n, 1));

	/* palloc cannot fail softly: copy first, clear after */
	PG_TRY();
	{
		for (int i = 0; i < n; i++)
		{
			rows[i] = palloc(sizeof(char *) * Max(ncols, 1));
			for (int j = 0; j < ncols; j++)
				rows[i][j] = PQgetisnull(res, i, j) ? NULL :
					pstrdup(PQgetvalue(res, i, j));
		}
	}
	PG_FINALLY();
	{
		PQclear(res);
	}
	PG_END_TRY();
	*nrows = n;
	return rows;
}

void
rx_report_remote_error(int elevel, PGconn *conn, PGresult *res,
					   const char *member_name, const char *context)
{
	const char *sqlstate = NULL;
	const char *primary = NULL;
	const char *detail = NULL;
	const char *hint = NULL;
	const char *remote_context = NULL;
	int			code = ERRCODE_CONNECTION_FAILURE;
	char	   *connmsg = NULL;
	char	   *ctx;

	if (res != NULL)
	{
		sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
		remote_context = PQresultErrorField(res, PG_DIAG_CONTEXT);
	}
	if (sqlstate != NULL && strlen(sqlstate) == 5)
		code = MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2],
							 sqlstate[3], sqlstate[4]);
	if (primary == NULL && conn != NULL)
		connmsg = pchomp(PQerrorMessage(conn));

	ctx = psprintf("%s on member \"%s\"", context ? context : "remote command",
				   member_name);
	if (primary != NULL)
		ereport(elevel,
				(errcode(code),
				 errmsg_internal("%s", primary),
				 detail ? errdetail_internal("%s", detail) : 0,
				 hint ? errhint("%s", hint) : 0,
				 remote_context ? errcontext("%s", remote_context) : 0,
				 errcontext("%s", ctx)));
	else
		ereport(elevel,
				(errcode(code),
				 errmsg("could not communicate with member \"%s\"", member_name),
				 (connmsg && connmsg[0]) ? errdetail_internal("%s", connmsg) : 0,
				 errcontext("%s", ctx)));
}

/* ---------------------------------------------------------------------
 * Rows in text form
 * ---------------------------------------------------------------------
 */

struct RxTextRows
{
	TupleDesc	desc;
	FmgrInfo   *in;
	Oid		   *ioparams;
};

RxTextRows *
rx_text_rows(TupleDesc desc)
{
	RxTextRows *tr = palloc(sizeof(RxTextRows));

	tr->desc = desc;
	tr->in = palloc(sizeof(FmgrInfo) * Max(desc->natts, 1));
	tr->ioparams = palloc(sizeof(Oid) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Oid			func;

		getTypeInputInfo(TupleDescAttr(desc, i)->atttypid, &func, &tr->ioparams[i]);
		fmgr_info(func, &tr->in[i]);
	}
	return tr;
}

TupleTableSlot *
rx_text_row_store(RxTextRows *tr, PGresult *res, int r, int col,
				  TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	for (int i = 0; i < tr->desc->natts; i++)
	{
		bool		isnull = PQgetisnull(res, r, col + i);

		slot->tts_isnull[i] = isnull;
		slot->tts_values[i] =
			InputFunctionCall(&tr->in[i], isnull ? NULL : PQgetvalue(res, r, col + i),
							  tr->ioparams[i], TupleDescAttr(tr->desc, i)->atttypmod);
	}
	return ExecStoreVirtualTuple(slot);
}
