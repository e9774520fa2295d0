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
 * pre-commit.  On local abort the connection is closed: the member rolls
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
} XactConn;

static XactConn xconns[MAX_XACT_CONNS];

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

static bool
cleanup_drain(PGconn *conn, TimestampTz deadline, bool *ok)
{
	for (;;)
	{
		PGresult   *res;

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

static bool
cleanup_exec(PGconn *conn, const char *sql)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CLEANUP_TIMEOUT_MS);
	bool		ok = true;

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
	if (!cleanup_drain(conn, deadline, &ok))
		return false;
	return ok;
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

static XactConn *
get_xconn(const RxMember *member, char **failure, bool change)
{
	Oid			userid = GetUserId();
	XactConn   *xc = NULL;
	XactConn   *freeslot = NULL;
	int			level = GetCurrentTransactionNestLevel();

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
		const char *begin = "BEGIN";

		if (IsolationUsesXactSnapshot())
			begin = rx_consistent_reads ?
				psprintf("BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT %s",
						 quote_literal_cstr(rx_cluster_snapshot_export(member))) :
				"BEGIN ISOLATION LEVEL REPEATABLE READ";
		rx_exec_command(xc->conn, xc->name,
						psprintf("%s; SET LOCAL lock_timeout = %d", begin, LockTimeout));
		xc->xact_depth = 1;
		xc->lock_timeout = LockTimeout + 1;
	}
	else if (xc->lock_timeout != LockTimeout + 1)
	{
		rx_exec_command(xc->conn, xc->name,
						psprintf("SET LOCAL lock_timeout = %d", LockTimeout));
		xc->lock_timeout = LockTimeout + 1;
	}
	while (xc->xact_depth < level)
	{
		char		sql[64];

		snprintf(sql, sizeof(sql), "SAVEPOINT rx_s%d", xc->xact_depth + 1);
		rx_exec_command(xc->conn, xc->name, sql);
		xc->xact_depth++;
	}
	return xc;
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

PGconn *
rx_xact_fragment_connection(const RxMember *member)
{
	Oid			userid = GetUserId();

	for (int i = 0; i < MAX_XACT_CONNS; i++)
	{
		XactConn   *xc = &xconns[i];

		if (xc->in_use && xc->xact_depth > 0 && xc->userid == userid &&
			strcmp(xc->name, member->name) == 0)
		{
			xc = get_xconn(member, NULL, true);
			xc->fragment = true;
			return xc->conn;
		}
	}
	return NULL;
}

void
rx_xact_fragment_done(PGconn *conn)
{
	for (int i = 0; i < MAX_XACT_CONNS; i++)
		if (xconns[i].in_use && xconns[i].conn == conn)
			xconns[i].fragment = false;
}

/* as rx_pool_prepared() and rx_pool_set_prepared(), for these sessions */
bool
rx_xact_prepared(PGconn *conn, int slot)
{
	for (int i = 0; i < MAX_XACT_CONNS; i++)
		if (xconns[i].in_use && xconns[i].conn == conn)
			return slot >= 0 && slot < 64 &&
				(xconns[i].prepared & (UINT64CONST(1) << slot)) != 0;
	return false;
}

void
rx_xact_set_prepared(PGconn *conn, int slot)
{
	for (int i = 0; i < MAX_XACT_CONNS; i++)
		if (xconns[i].in_use && xconns[i].conn == conn && slot >= 0 && slot < 64)
			xconns[i].prepared |= UINT64CONST(1) << slot;
}

PGconn *
rx_xact_connection(const RxMember *member)
{
	return get_xconn(member, NULL, true)->conn;
}

PGconn *
rx_xact_lock_connection(const RxMember *member)
{
	return get_xconn(member, NULL, false)->conn;
}

PGconn *
rx_xact_connection_try(const RxMember *member, char **failure)
{
	XactConn   *xc = get_xconn(member, failure, true);

	return xc ? xc->conn : NULL;
}

void
rx_xact_copy_row(const RxMember *member, Oid relid, const char *table_name,
				 const char *copy_command, const char *line, int len)
{
	XactConn   *xc = NULL;
	Oid			userid = GetUserId();

	for (int i = 0; i < MAX_XACT_CONNS; i++)
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

		xc = get_xconn(member, NULL, true);
		if (!PQsendQuery(xc->conn, copy_command))
			rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
								   "could not start COPY");
		res = rx_get_result(xc->conn, xc->name);
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
	for (int i = 0; i < MAX_XACT_CONNS; i++)
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
	for (int i = 0; i < MAX_XACT_CONNS; i++)
		if (xconns[i].in_use && xconns[i].xact_depth > 0)
			end_copy(&xconns[i]);

	for (int i = 0; i < MAX_XACT_CONNS; i++)
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
			for (int i = 0; i < MAX_XACT_CONNS; i++)
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

	for (int i = 0; i < MAX_XACT_CONNS; i++)
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
 * for it.  Nothing may fail here; what does not get through is left to
 * recovery (two_phase.c), which finds the same decision.
 */
static void
finish_prepared(bool commit)
{
	for (int i = 0; i < MAX_XACT_CONNS; i++)
		if (commit && xconns[i].in_use && xconns[i].gid[0] != '\0')
		{
			rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_DECISION);
			break;
		}
	for (int i = 0; i < MAX_XACT_CONNS; i++)
	{
		XactConn   *xc = &xconns[i];
		char	   *sql;

		if (!xc->in_use || xc->gid[0] == '\0')
			continue;
		sql = psprintf("%s PREPARED '%s'", commit ? "COMMIT" : "ROLLBACK", xc->gid);
		if ((commit && rx_fault_commit == RX_FAULT_COMMIT_SKIP_COMMIT_PREPARED) ||
			!cleanup_exec(xc->conn, sql))
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
			for (int i = 0; i < MAX_XACT_CONNS; i++)
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
			for (int i = 0; i < MAX_XACT_CONNS; i++)
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
		for (int i = 0; i < MAX_XACT_CONNS; i++)
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

	for (int i = 0; i < MAX_XACT_CONNS; i++)
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
