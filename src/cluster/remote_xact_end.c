/*-------------------------------------------------------------------------
 *
 * remote_xact_end.c
 *	  The end of a transaction's remote transactions (remote_xact.c): at
 *	  commit, in one phase on the one member it changed or in two
 *	  (two_phase.c) with the read barriers of cluster_snapshot.c; at
 *	  abort, by rolling them back and closing the connections; at a
 *	  subtransaction's end, by releasing or rolling back the member's
 *	  savepoint.  Also the helpers abort processing uses, which never
 *	  throw and never wait past CLEANUP_TIMEOUT_MS (ending a pipeline is
 *	  one of them).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_budget.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/remote_xact_int.h"
#include "cluster/two_phase.h"

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

bool
rx_xconn_cleanup_drain(PGconn *conn, TimestampTz deadline, bool *ok)
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
bool
rx_xconn_pipeline_end(XactConn *xc, TimestampTz deadline)
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
	rx_xconn_forget_inflight(xc);
	return PQexitPipelineMode(xc->conn) == 1;
}

bool
rx_xconn_cleanup_send(PGconn *conn, const char *sql, TimestampTz deadline)
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

bool
rx_xconn_cleanup_exec(PGconn *conn, const char *sql)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CLEANUP_TIMEOUT_MS);
	bool		ok = true;

	return rx_xconn_cleanup_send(conn, sql, deadline) &&
		rx_xconn_cleanup_drain(conn, deadline, &ok) && ok;
}

/* bring a connection whose command or COPY was interrupted back to idle */
bool
rx_xconn_quiesce(XactConn *xc)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CLEANUP_TIMEOUT_MS);
	bool		ok = true;

	if (PQstatus(xc->conn) != CONNECTION_OK)
		return false;
	if (PQpipelineStatus(xc->conn) != PQ_PIPELINE_OFF)
		return rx_xconn_pipeline_end(xc, deadline);
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
	return rx_xconn_cleanup_drain(xc->conn, deadline, &ok);
}

/* PREPARE TRANSACTION there, with a hint where prepared transactions are off */
static void
prepare_remote(XactConn *xc, const char *gid)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		/* after the changes still queued for it, in one round trip */
		rx_xconn_flush_with(xc, list_make2("SELECT rdma_exchange.barrier_commit()",
										   psprintf("PREPARE TRANSACTION '%s'", gid)));
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

	if (rx_doomed_member[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_TRANSACTION_ROLLBACK),
				 errmsg("the remote transaction on member \"%s\" was lost",
						rx_doomed_member),
				 errdetail("A subtransaction could not be rolled back there, so the changes of this transaction on that member are gone.")));

	/* end every COPY first: a remote error must abort us before any COMMIT */
	for (int i = 0; i < rx_nxconns; i++)
		if (rx_xconns[i].in_use && rx_xconns[i].xact_depth > 0)
			rx_xconn_end_copy(&rx_xconns[i]);

	for (int i = 0; i < rx_nxconns; i++)
		if (rx_xconns[i].in_use && rx_xconns[i].xact_depth > 0)
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
		RxMember   *members;
		int			nmembers = rx_get_members(&members);
		int			self = rx_self_member_index();
		int			order[MAX_XACT_CONNS + 1];	/* -1: this member's turn */
		int			norder = 0;
		bool		ordered[MAX_XACT_CONNS] = {0};
		int			nprepared = 0;

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
				order[norder++] = -1;
			else
				for (int i = 0; i < rx_nxconns; i++)
					if (rx_xconns[i].in_use && rx_xconns[i].xact_depth > 0 &&
						!ordered[i] &&
						(m == nmembers || strcmp(rx_xconns[i].name, members[m].name) == 0))
					{
						order[norder++] = i;
						ordered[i] = true;
					}
		}

		/*
		 * Changes still queued for the members after the first run there
		 * while the first prepares: they take no barrier, so only the
		 * PREPAREs need to wait their turn.
		 */
		for (int k = 0, seen = 0; k < norder; k++)
			if (order[k] >= 0 && seen++ > 0)
				rx_xconn_flush_start(&rx_xconns[order[k]]);

		for (int k = 0; k < norder; k++)
		{
			XactConn   *xc;
			char	   *gid;

			if (order[k] < 0)
			{
				rx_barrier_commit_local();
				continue;
			}
			xc = &rx_xconns[order[k]];
			gid = rx_two_phase_gid(transaction, order[k]);
			prepare_remote(xc, gid);
			strlcpy(xc->gid, gid, sizeof(xc->gid));
			xc->xact_depth = 0;
			if (nprepared++ == 0)
				rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_FIRST_PREPARE);
		}
		rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_PREPARE);
		return;
	}

	for (int i = 0; i < rx_nxconns; i++)
	{
		XactConn   *xc = &rx_xconns[i];

		if (!xc->in_use || xc->xact_depth == 0)
			continue;
		rx_xconn_flush_with(xc, list_make1("COMMIT"));
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

	for (int i = 0; i < rx_nxconns; i++)
		if (commit && rx_xconns[i].in_use && rx_xconns[i].gid[0] != '\0')
		{
			rx_two_phase_fault(RX_FAULT_COMMIT_CRASH_AFTER_DECISION);
			break;
		}
	for (int i = 0; i < rx_nxconns; i++)
	{
		XactConn   *xc = &rx_xconns[i];

		sent[i] = xc->in_use && xc->gid[0] != '\0' &&
			!(commit && rx_fault_commit == RX_FAULT_COMMIT_SKIP_COMMIT_PREPARED) &&
			rx_xconn_cleanup_send(xc->conn,
						 psprintf("%s PREPARED '%s'", commit ? "COMMIT" : "ROLLBACK", xc->gid),
						 deadline);
	}
	for (int i = 0; i < rx_nxconns; i++)
	{
		XactConn   *xc = &rx_xconns[i];
		bool		ok = true;

		if (!xc->in_use || xc->gid[0] == '\0')
			continue;
		if (!sent[i] || !rx_xconn_cleanup_drain(xc->conn, deadline, &ok) || !ok)
		{
			ereport(WARNING,
					(errmsg("could not %s prepared transaction \"%s\" on member \"%s\"",
							commit ? "commit" : "roll back", xc->gid, xc->name),
					 errdetail("The transaction %s here; recovery will %s it there.",
							   commit ? "committed" : "rolled back",
							   commit ? "commit" : "roll back")));
			rx_xconn_forget(xc);
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
			for (int i = 0; i < rx_nxconns; i++)
				if (rx_xconns[i].in_use && rx_xconns[i].xact_depth > 0)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot prepare a transaction that changed other members"),
							 errdetail("The transaction has an open remote transaction on member \"%s\"; rdma_exchange commits members without two-phase commit.",
									   rx_xconns[i].name),
							 errhint("Commit the transaction instead of preparing it.")));
			break;
		case XACT_EVENT_ABORT:
			finish_prepared(false);
			for (int i = 0; i < rx_nxconns; i++)
			{
				XactConn   *xc = &rx_xconns[i];

				if (!xc->in_use ||
					(xc->xact_depth == 0 && !OidIsValid(xc->copy_relid) &&
					 PQtransactionStatus(xc->conn) == PQTRANS_IDLE))
					continue;

				/*
				 * Rolled back there before ROLLBACK returns here, as on one
				 * server: its row locks go now (a SKIP LOCKED worker or a
				 * NOWAIT right after must find the rows free), not when
				 * the member notices the closed connection
				 */
				if (xc->xact_depth > 0 && PQstatus(xc->conn) == CONNECTION_OK &&
					rx_xconn_quiesce(xc))
					(void) rx_xconn_cleanup_exec(xc->conn, "ROLLBACK");
				rx_xconn_forget(xc);
			}
			rx_doomed_member[0] = '\0';
			rx_xact_changed = false;
			break;
		case XACT_EVENT_COMMIT:
			finish_prepared(true);
			rx_doomed_member[0] = '\0';
			rx_xact_changed = false;
			break;
		case XACT_EVENT_PREPARE:
			rx_doomed_member[0] = '\0';
			rx_xact_changed = false;
			break;
		default:
			break;
	}

	/* the queues' memory went with the transaction's (a COMMIT sent them) */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		for (int i = 0; i < rx_nxconns; i++)
		{
			Assert(rx_xconns[i].deferred == NIL || event == XACT_EVENT_ABORT);
			rx_xconns[i].deferred = NIL;
			rx_xconn_forget_inflight(&rx_xconns[i]);
			rx_xconns[i].cxt = NULL;
		}

	/* idle connections go back to the members' budget when others need it */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		for (int i = 0; i < rx_nxconns; i++)
		{
			XactConn   *xc = &rx_xconns[i];

			if (xc->in_use && xc->xact_depth == 0 &&
				PQtransactionStatus(xc->conn) == PQTRANS_IDLE &&
				rx_budget_should_give_back(xc->name))
				rx_xconn_forget(xc);
		}
}

static void
remote_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event != SUBXACT_EVENT_PRE_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;

	for (int i = 0; i < rx_nxconns; i++)
	{
		XactConn   *xc = &rx_xconns[i];
		char		sql[96];

		if (!xc->in_use)
			continue;
		/* what the subtransaction queued goes with it (or with RELEASE) */
		if (event == SUBXACT_EVENT_ABORT_SUB)
			rx_xconn_drop_deferred(xc, level);
		if (xc->xact_depth < level)
			continue;

		if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
		{
			rx_xconn_end_copy(xc);
			snprintf(sql, sizeof(sql), "RELEASE SAVEPOINT rx_s%d", level);
			rx_xconn_flush_with(xc, list_make1(sql));
			xc->xact_depth = level - 1;
		}
		else
		{
			snprintf(sql, sizeof(sql),
					 "ROLLBACK TO SAVEPOINT rx_s%d; RELEASE SAVEPOINT rx_s%d",
					 level, level);
			if (rx_xconn_quiesce(xc) && rx_xconn_cleanup_exec(xc->conn, sql))
			{
				/* a fragment running there was cancelled with the rest */
				xc->xact_depth = level - 1;
				xc->fragment = false;
				xc->lock_timeout = 0;
				rx_xconn_forget_context(xc);
			}
			else
				rx_xconn_doom(xc);
		}
	}
}

void
rx_remote_xact_init(void)
{
	RegisterXactCallback(remote_xact_callback, NULL);
	RegisterSubXactCallback(remote_subxact_callback, NULL);
}
