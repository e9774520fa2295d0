/*-------------------------------------------------------------------------
 *
 * two_phase.c
 *	  Two-phase commit across members, and the recovery of prepared
 *	  transactions a failure left in doubt.
 *
 * A transaction that changed more than one member (this one and at least
 * one other, or two others) commits in two phases (remote_xact.c): at
 * pre-commit every other member's remote transaction is prepared with a
 * global id naming this server, this transaction and the connection
 * ("rx_<system identifier>_<xid>_<nonce>_<slot>"), and a decision record (the
 * transaction's id) is inserted into rdma_exchange.commit_decision in the
 * local transaction itself; the local commit makes the decision durable
 * with the transaction, then COMMIT PREPARED goes to every member.  A
 * failure before the local commit rolls the prepared transactions back; a
 * failure after it (this server crashed, a member went away, a connection
 * dropped) leaves them prepared: in doubt.
 *
 * Recovery resolves them from the coordinator's side, where the decision
 * is: rdma_exchange.recover_prepared_transactions() lists every member's
 * prepared transactions of this server and commits those whose decision
 * record exists, rolls back those whose transaction ended without one,
 * and leaves those whose transaction still runs (between PREPARE and the
 * local commit) or still sends its decision (a lock on its nonce, held
 * until after the last COMMIT PREPARED).  The global id carries a random nonce next to the
 * transaction id, which a crash can make this server hand out again.  Decision records nobody needs any more (no member holds
 * their transactions, all members reached) are deleted after a minute.
 * A background process does it on every server: a launcher started with
 * the server starts one worker per database, which runs recovery every
 * few seconds where the extension is installed and the server is a
 * member, and exits elsewhere (the launcher tries again later).  On the
 * first member the same worker looks for lock cycles through members
 * every second (deadlock.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "rdma_exchange.h"
#include "cluster/admin.h"
#include "cluster/deadlock.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/two_phase.h"

PG_FUNCTION_INFO_V1(rx_recover_prepared_transactions);

PGDLLEXPORT void rx_recovery_launcher_main(Datum arg);
PGDLLEXPORT void rx_recovery_worker_main(Datum arg);

int			rx_fault_commit = RX_FAULT_COMMIT_NONE;

static const struct config_enum_entry fault_commit_options[] = {
	{"none", RX_FAULT_COMMIT_NONE, false},
	{"before_prepare", RX_FAULT_COMMIT_BEFORE_PREPARE, false},
	{"crash_after_first_prepare", RX_FAULT_COMMIT_CRASH_AFTER_FIRST_PREPARE, false},
	{"crash_after_prepare", RX_FAULT_COMMIT_CRASH_AFTER_PREPARE, false},
	{"crash_after_decision", RX_FAULT_COMMIT_CRASH_AFTER_DECISION, false},
	{"skip_commit_prepared", RX_FAULT_COMMIT_SKIP_COMMIT_PREPARED, false},
	{NULL, 0, false}
};

/*
 * How often a worker looks for lock cycles (the first member's, deadlock.c)
 * and resolves, and how often the launcher looks (ms)
 */
#define DEADLOCK_INTERVAL_MS 1000
#define RECOVERY_INTERVAL_MS 5000
#define LAUNCHER_INTERVAL_MS 30000
#define MAX_DATABASES 64

/* ---------------------------------------------------------------------
 * Committing
 * ---------------------------------------------------------------------
 */

/*
 * A lock of the committing transaction on its nonce, held from before its
 * first PREPARE until its locks go after the local commit, that is after
 * COMMIT PREPARED went to every member: recovery leaves a transaction
 * alone while it is taken (advisory lock tag with last field 4).
 */
static void
finishing_tag(LOCKTAG *tag, uint64 nonce)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (nonce >> 32),
						 (uint32) nonce, 4);
}

static bool
still_finishing(uint64 nonce)
{
	LOCKTAG		tag;

	finishing_tag(&tag, nonce);
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ShareLock, false);
	return false;
}

char *
rx_two_phase_decide(void)
{
	LOCKTAG		tag;
	uint64		xid = U64FromFullTransactionId(GetTopFullTransactionId());
	uint64		nonce;

	/*
	 * The transaction id alone would not do: after a crash this server
	 * may give a lost transaction's id to another one.
	 */
	if (!pg_strong_random(&nonce, sizeof(nonce)))
		elog(ERROR, "could not generate a random transaction nonce");
	nonce &= INT64CONST(0x7fffffffffffffff);
	finishing_tag(&tag, nonce);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);

	/* pre-commit runs with no snapshot of its own */
	PushActiveSnapshot(GetTransactionSnapshot());
	{
		static SPIPlanPtr plan = NULL;
		Oid			types[2] = {INT8OID, INT8OID};
		Datum		values[2] = {Int64GetDatum((int64) xid), Int64GetDatum((int64) nonce)};

		rx_catalog_exec_plan(&plan, "INSERT INTO rdma_exchange.commit_decision (xid, nonce)"
							 " VALUES ($1, $2)", 2, types, values);
	}
	PopActiveSnapshot();
	return psprintf(UINT64_FORMAT "_" UINT64_FORMAT, xid, nonce);
}

char *
rx_two_phase_gid(const char *transaction, int slot)
{
	return psprintf("rx_" UINT64_FORMAT "_%s_%d", GetSystemIdentifier(),
					transaction, slot);
}

void
rx_two_phase_fault(RxCommitFault step)
{
	if (rx_fault_commit != (int) step || step == RX_FAULT_COMMIT_SKIP_COMMIT_PREPARED)
		return;
	if (step == RX_FAULT_COMMIT_BEFORE_PREPARE)
		ereport(ERROR,
				(errcode(ERRCODE_TRANSACTION_ROLLBACK),
				 errmsg("rdma_exchange.fault_commit: failing before PREPARE")));

	/*
	 * A crash of this server at this step, as the tests need it: no abort
	 * processing, no farewell to the members; the postmaster restarts the
	 * server as after any crashed backend.
	 */
	ereport(LOG,
			(errmsg("rdma_exchange.fault_commit: crashing at %s",
					fault_commit_options[step].name)));
	_exit(2);
}

/* ---------------------------------------------------------------------
 * Recovery
 * ---------------------------------------------------------------------
 */

typedef struct Resolution
{
	const char *member;
	const char *gid;
	const char *prepared;
	const char *decision;		/* commit, rollback, pending, unreachable */
	const char *outcome;		/* done, failed: ..., or NULL (not acted) */
} Resolution;

/* what the coordinator decided for its transaction xid (with nonce) */
static const char *
decision_of(uint64 xid, uint64 nonce)
{
	char	 ***rows;
	int			n;

	/* an id this server has not given out again since a crash lost it */
	if (xid >= U64FromFullTransactionId(ReadNextFullTransactionId()))
		return "rollback";
	/* ended first, then the record: a commit's record is visible by then */
	rows = rx_spi_strings(psprintf("SELECT pg_catalog.pg_xact_status('" UINT64_FORMAT "'::pg_catalog.xid8)",
								   xid), &n);
	if (n == 1 && rows[0][0] && strcmp(rows[0][0], "in progress") == 0)
		return "pending";
	/* committed or not, its backend may still be telling the members */
	if (still_finishing(nonce))
		return "pending";
	(void) rx_catalog_spi(psprintf("SELECT 1 FROM rdma_exchange.commit_decision"
								   " WHERE xid = " UINT64_FORMAT " AND nonce = " UINT64_FORMAT,
								   xid, nonce), &n);
	return n > 0 ? "commit" : "rollback";
}

static List *
resolve(bool apply)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	char	   *prefix = psprintf("rx\\_" UINT64_FORMAT "\\_", GetSystemIdentifier());
	List	   *result = NIL;
	StringInfoData seen;
	bool		all_reached = true;
	int			n;

	initStringInfo(&seen);
	appendStringInfoString(&seen, "0");
	for (int m = 0; m < nmembers; m++)
	{
		PGconn	   *conn;
		char	   *failure = NULL;
		char	 ***rows;
		int			nrows;

		if (m == self)
			continue;
		conn = rx_connect_session(&members[m], &failure);
		if (conn == NULL)
		{
			Resolution *r = palloc0(sizeof(Resolution));

			r->member = members[m].name;
			r->decision = "unreachable";
			r->outcome = failure;
			result = lappend(result, r);
			all_reached = false;
			continue;
		}
		PG_TRY();
		{
			rows = rx_query_strings(conn, members[m].name,
									psprintf("SELECT gid, prepared FROM pg_catalog.pg_prepared_xacts"
											 " WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database()"
											 " AND gid LIKE %s ORDER BY prepared",
											 quote_literal_cstr(psprintf("%s%%", prefix))),
									&nrows);
			for (int i = 0; i < nrows; i++)
			{
				Resolution *r = palloc0(sizeof(Resolution));
				uint64		sysid,
							xid,
							nonce;
				int			slot;

				r->member = members[m].name;
				r->gid = rows[i][0];
				r->prepared = rows[i][1];
				if (sscanf(r->gid, "rx_" UINT64_FORMAT "_" UINT64_FORMAT "_" UINT64_FORMAT "_%d",
						   &sysid, &xid, &nonce, &slot) != 4)
					continue;
				appendStringInfo(&seen, ", " UINT64_FORMAT, nonce);
				r->decision = decision_of(xid, nonce);
				if (apply && (strcmp(r->decision, "commit") == 0 ||
							  strcmp(r->decision, "rollback") == 0))
				{
					PGresult   *res = PQexec(conn, psprintf("%s PREPARED %s",
															strcmp(r->decision, "commit") == 0 ?
															"COMMIT" : "ROLLBACK",
															quote_literal_cstr(r->gid)));

					r->outcome = PQresultStatus(res) == PGRES_COMMAND_OK ? "done" :
						psprintf("failed: %s", pchomp(PQerrorMessage(conn)));
					PQclear(res);
				}
				result = lappend(result, r);
			}
		}
		PG_FINALLY();
		{
			rx_disconnect(conn);
		}
		PG_END_TRY();
	}

	/* records no member needs: every member reached, a minute old */
	if (apply && all_reached)
		(void) rx_catalog_spi(psprintf("DELETE FROM rdma_exchange.commit_decision"
									   " WHERE nonce <> ALL ('{%s}'::bigint[])"
									   " AND decided_at < pg_catalog.now() - interval '1 minute'"
									   " RETURNING xid", seen.data), &n);
	return result;
}

/* rdma_exchange.recover_prepared_transactions(apply bool) */
Datum
rx_recover_prepared_transactions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		apply = PG_GETARG_BOOL(0);
	int			nest = rx_admin_begin();
	ListCell   *lc;

	if (apply && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only superusers may resolve prepared transactions")));
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, resolve(apply))
	{
		Resolution *r = lfirst(lc);
		Datum		values[5];
		bool		nulls[5] = {0};

		values[0] = CStringGetTextDatum(r->member);
		nulls[1] = r->gid == NULL;
		values[1] = r->gid ? CStringGetTextDatum(r->gid) : 0;
		nulls[2] = r->prepared == NULL;
		values[2] = r->prepared ? DirectFunctionCall3(timestamptz_in,
													  CStringGetDatum(r->prepared),
													  ObjectIdGetDatum(InvalidOid),
													  Int32GetDatum(-1)) : 0;
		values[3] = CStringGetTextDatum(r->decision);
		nulls[4] = r->outcome == NULL;
		values[4] = r->outcome ? CStringGetTextDatum(r->outcome) : 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	rx_admin_end(nest);
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * The background processes
 * ---------------------------------------------------------------------
 */

static void
fill_worker(BackgroundWorker *bgw, const char *function, const char *name)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	strlcpy(bgw->bgw_library_name, RX_EXTENSION_NAME, BGW_MAXLEN);
	strlcpy(bgw->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(bgw->bgw_name, name, BGW_MAXLEN);
	strlcpy(bgw->bgw_type, name, BGW_MAXLEN);
}

static void
wait_or_exit(long ms)
{
	int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							   ms, PG_WAIT_EXTENSION);

	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	if (ShutdownRequestPending)
		proc_exit(0);
	CHECK_FOR_INTERRUPTS();
}

/* one worker per database that allows connections */
void
rx_recovery_launcher_main(Datum arg)
{
	Oid			dbs[MAX_DATABASES];
	BackgroundWorkerHandle *handles[MAX_DATABASES] = {0};
	TimestampTz started[MAX_DATABASES] = {0};
	int			ndbs = 0;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	for (;;)
	{
		Relation	rel;
		TableScanDesc scan;
		HeapTuple	tup;
		Oid			found[MAX_DATABASES];
		int			nfound = 0;

		StartTransactionCommand();
		rel = table_open(DatabaseRelationId, AccessShareLock);
		scan = table_beginscan_catalog(rel, 0, NULL);
		while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL &&
			   nfound < MAX_DATABASES)
		{
			Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

			if (db->datallowconn && !db->datistemplate)
				found[nfound++] = db->oid;
		}
		table_endscan(scan);
		table_close(rel, AccessShareLock);
		CommitTransactionCommand();

		for (int i = 0; i < nfound; i++)
		{
			int			slot = -1;
			pid_t		pid;
			BackgroundWorker bgw;

			for (int j = 0; j < ndbs; j++)
				if (dbs[j] == found[i])
					slot = j;
			if (slot < 0)
			{
				if (ndbs == MAX_DATABASES)
					continue;
				slot = ndbs++;
				dbs[slot] = found[i];
				handles[slot] = NULL;
			}
			if (handles[slot] != NULL &&
				GetBackgroundWorkerPid(handles[slot], &pid) != BGWH_STOPPED)
				continue;
			/* a worker that exits (no extension there) waits a round */
			if (!TimestampDifferenceExceeds(started[slot], GetCurrentTimestamp(),
											LAUNCHER_INTERVAL_MS))
				continue;
			started[slot] = GetCurrentTimestamp();
			fill_worker(&bgw, "rx_recovery_worker_main", "rdma_exchange recovery");
			bgw.bgw_restart_time = BGW_NEVER_RESTART;
			bgw.bgw_main_arg = ObjectIdGetDatum(found[i]);
			bgw.bgw_notify_pid = MyProcPid;
			if (!RegisterDynamicBackgroundWorker(&bgw, &handles[slot]))
				handles[slot] = NULL;	/* no slot now: next round */
		}
		wait_or_exit(LAUNCHER_INTERVAL_MS);
	}
}

void
rx_recovery_worker_main(Datum arg)
{
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	pgstat_report_appname("rdma_exchange recovery");

	for (int round = 0;; round++)
	{
		bool		member;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		member = rx_extension_loaded() && OidIsValid(rx_dist_catalog_relid()) &&
			rx_self_member_index() >= 0;
		if (member)
		{
			MemoryContext cxt = CurrentMemoryContext;

			PG_TRY();
			{
				int			nest = rx_admin_begin();

				if (round % (RECOVERY_INTERVAL_MS / DEADLOCK_INTERVAL_MS) == 0)
					(void) resolve(true);
				if (rx_self_member_index() == 0)
					rx_deadlock_detect();
				rx_admin_end(nest);
			}
			PG_CATCH();
			{
				/* say why, and try again next round */
				MemoryContextSwitchTo(cxt);
				EmitErrorReport();
				FlushErrorState();
				AbortCurrentTransaction();
				StartTransactionCommand();
				PushActiveSnapshot(GetTransactionSnapshot());
			}
			PG_END_TRY();
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
		if (!member)
			proc_exit(0);		/* the launcher looks again later */
		wait_or_exit(DEADLOCK_INTERVAL_MS);
	}
}

void
rx_two_phase_init(void)
{
	BackgroundWorker bgw;

	DefineCustomEnumVariable("rdma_exchange.fault_commit",
							 "Test setting: where the coordinator of a two-phase commit fails (crash_* crash this server).",
							 NULL, &rx_fault_commit, RX_FAULT_COMMIT_NONE,
							 fault_commit_options, PGC_SUSET, 0,
							 NULL, NULL, NULL);

	fill_worker(&bgw, "rx_recovery_launcher_main", "rdma_exchange recovery launcher");
	bgw.bgw_restart_time = 10;
	RegisterBackgroundWorker(&bgw);
}
