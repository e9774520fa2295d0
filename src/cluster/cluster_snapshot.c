/*-------------------------------------------------------------------------
 *
 * cluster_snapshot.c
 *	  Reads that see one consistent cluster: the read barrier between
 *	  distributed commits and snapshots, and the cluster snapshot every
 *	  fragment of a query reads with.
 *
 * A transaction that changed several members commits on each at a
 * different moment (two_phase.c: the local commit, then COMMIT PREPARED
 * member after member).  A query whose fragments took their snapshots
 * independently could see it on one member and not on another.  So:
 *
 *	- Every member has a barrier, a lock of this database (an advisory
 *	  lock tag of our own, see barrier_tag()).  A two-phase committer takes
 *	  it in ROW EXCLUSIVE mode on every member it commits on, in member
 *	  order, before its first commit anywhere: remotely in the transaction
 *	  it prepares (a prepared transaction keeps its locks, also across a
 *	  restart, until COMMIT PREPARED), here in the local transaction (kept
 *	  until after COMMIT PREPARED went everywhere).  Committers do not
 *	  conflict with each other.
 *
 *	- A distributed query first takes a cluster snapshot: the barrier in
 *	  SHARE mode on every member, then a snapshot on every member (here in
 *	  this backend, elsewhere in a "holder" session that stays in its
 *	  transaction so the snapshot's rows are not vacuumed away), then the
 *	  barrier is let go.  Holding every member's barrier at once, no
 *	  distributed transaction is between its first and its last commit:
 *	  each is committed on all of its members or on none.  Fragments read
 *	  with their member's snapshot, whichever session runs them
 *	  (restored from the message, as a parallel worker restores its
 *	  leader's).
 *
 * The snapshots are first tried without waiting, on all members at once
 * (one round trip).  If a committer holds some member's barrier, the ones
 * taken are given back and the query takes them again in member order,
 * waiting: committers and readers acquiring in one order cannot deadlock.
 * A query waits for commits in flight (a few round trips; longer for a
 * transaction in doubt, until recovery resolves it); a commit waits while
 * a query takes its snapshots (one round trip).  Transactions that commit
 * on one member only take no barrier: they are visible at one instant.
 *
 * A round of small gathers by query (exec/receive_round.c) takes the
 * cluster snapshot in the same round trip as its fragments, and without
 * holders: it sends each member its fragments in one pipeline, in one
 * transaction there; the first takes the member's barrier without waiting
 * and a snapshot (RX_SNAPSHOT_TAKE in its message), the others read with
 * that snapshot (RX_SNAPSHOT_HELD).  The coordinator ends those
 * transactions (a Sync each) only after it read every member's answer, so
 * every member held its barrier while all took their snapshots, as above.
 * If a committer held some barrier, the round fails, is rolled back, and
 * the query takes its cluster snapshot the usual way.  The members' parts
 * end with the round: the round is used only where no other gather of the
 * query can need them (see rx_receive_query_round()).  That saves the
 * holders' round
 * trip and their four statements per member, a quarter of a min/max on
 * three members.
 *
 * A cluster snapshot lasts for its query (an executor run, ended at
 * ExecutorEnd), or for the whole transaction at REPEATABLE READ and
 * SERIALIZABLE: every distributed query of such a transaction reads the
 * same cluster state, so pg_dump of the cluster is consistent.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_pool.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "rdma_exchange.h"

PG_FUNCTION_INFO_V1(rx_take_snapshot);
PG_FUNCTION_INFO_V1(rx_release_barrier);
PG_FUNCTION_INFO_V1(rx_export_held_snapshot);
PG_FUNCTION_INFO_V1(rx_barrier_commit);

/*
 * The barrier's lock tag: advisory locks of this database, with a key no
 * SQL advisory function produces (their last field is 1 or 2).  In
 * pg_locks: locktype advisory, classid 1919181923, objid 1650553458
 * ("rdxc", "barr"), objsubid 3.
 */
#define BARRIER_KEY1 0x72647863
#define BARRIER_KEY2 0x62617272
#define BARRIER_FIELD4 3

static void
barrier_tag(LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, BARRIER_KEY1, BARRIER_KEY2,
						 BARRIER_FIELD4);
}

/* this backend holds the barrier in SHARE mode (a reader's) */
static bool share_held = false;

/* the snapshot rdma_exchange.take_snapshot() took here, for its holders */
static Snapshot held_snapshot = NULL;

/*
 * The reader's barrier belongs to the transaction, not to the statement
 * that took it: another statement (release_barrier()) gives it back.
 */
static bool
barrier_share(bool wait)
{
	LOCKTAG		tag;
	ResourceOwner save = CurrentResourceOwner;
	LockAcquireResult res;

	barrier_tag(&tag);
	CurrentResourceOwner = TopTransactionResourceOwner;
	PG_TRY();
	{
		res = LockAcquire(&tag, ShareLock, false, !wait);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = save;
	}
	PG_END_TRY();
	if (res == LOCKACQUIRE_NOT_AVAIL)
		return false;
	share_held = true;
	return true;
}

static void
barrier_share_release(void)
{
	LOCKTAG		tag;
	ResourceOwner save = CurrentResourceOwner;

	if (!share_held)
		return;
	share_held = false;
	barrier_tag(&tag);
	CurrentResourceOwner = TopTransactionResourceOwner;
	LockRelease(&tag, ShareLock, false);
	CurrentResourceOwner = save;
}

void
rx_barrier_commit_local(void)
{
	LOCKTAG		tag;

	barrier_tag(&tag);
	(void) LockAcquire(&tag, RowExclusiveLock, false, false);
}

/* "pid:hex of the serialized snapshot", which fragments restore */
static char *
snapshot_text(Snapshot snap)
{
	Size		len = EstimateSnapshotSpace(snap);
	char	   *buf = palloc(len);
	char	   *text = palloc(2 * len + 16);
	int			n;

	SerializeSnapshot(snap, buf);
	n = sprintf(text, "%d:", MyProcPid);
	hex_encode(buf, len, text + n);
	text[n + 2 * len] = '\0';
	pfree(buf);
	return text;
}

/*
 * A snapshot of this instant, kept (registered with the transaction) until
 * this transaction ends or takes another.
 */
static char *
snapshot_hold(void)
{
	if (held_snapshot != NULL)
		UnregisterSnapshotFromOwner(held_snapshot, TopTransactionResourceOwner);
	held_snapshot = RegisterSnapshotOnOwner(GetLatestSnapshot(),
											TopTransactionResourceOwner);
	return snapshot_text(held_snapshot);
}

/* ---------------------------------------------------------------------
 * Member side
 * ---------------------------------------------------------------------
 */

/*
 * rdma_exchange.take_snapshot(wait): the barrier in SHARE mode, then a
 * snapshot held by this session's transaction; NULL without waiting when
 * a committer holds the barrier.  The barrier stays taken until
 * release_barrier() or the transaction's end.
 */
Datum
rx_take_snapshot(PG_FUNCTION_ARGS)
{
	if (!barrier_share(PG_GETARG_BOOL(0)))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(snapshot_hold()));
}

Datum
rx_release_barrier(PG_FUNCTION_ARGS)
{
	barrier_share_release();
	PG_RETURN_VOID();
}

/*
 * rdma_exchange.export_held_snapshot(): the held snapshot for another
 * session of this member to import, while this transaction lasts
 */
Datum
rx_export_held_snapshot(PG_FUNCTION_ARGS)
{
	if (held_snapshot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this session holds no snapshot of a distributed query")));
	PG_RETURN_TEXT_P(cstring_to_text(ExportSnapshot(held_snapshot)));
}

/* rdma_exchange.barrier_commit(): a committer's, before PREPARE */
Datum
rx_barrier_commit(PG_FUNCTION_ARGS)
{
	rx_barrier_commit_local();
	PG_RETURN_VOID();
}

Snapshot
rx_cluster_snapshot_restore(const char *text, const char *member)
{
	const char *colon;
	int			pid;
	Size		len;
	char	   *buf;
	Snapshot	snap;

	/*
	 * A round of gathers (see the banner): its first fragment takes the
	 * barrier without waiting and a snapshot, which the round's other
	 * fragments read with; both last until the round's transaction ends.
	 */
	if (strcmp(text, RX_SNAPSHOT_TAKE) == 0)
	{
		if (!barrier_share(false))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("the read barrier of member \"%s\" is taken by a distributed commit",
							member),
					 errdetail("The query takes its cluster snapshot again, waiting for the commit.")));
		text = snapshot_hold();
	}
	else if (strcmp(text, RX_SNAPSHOT_HELD) == 0)
	{
		if (held_snapshot == NULL)
			elog(ERROR, "no snapshot taken by this round of gathers on member \"%s\"",
				 member);
		text = snapshot_text(held_snapshot);
	}
	else if (strcmp(text, RX_SNAPSHOT_GONE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the cluster snapshot of this query on member \"%s\" is gone",
						member),
				 errdetail("It was taken by a round of small gathers, which ended.")));
	colon = strchr(text, ':');
	pid = atoi(text);
	if (colon == NULL || pid <= 0 || strlen(colon + 1) % 2 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed snapshot in the plan fragment for member \"%s\"",
						member)));
	len = strlen(colon + 1) / 2;
	buf = palloc(len);
	hex_decode(colon + 1, 2 * len, buf);
	snap = RestoreSnapshot(buf);

	/*
	 * The holder keeps the snapshot's rows from being vacuumed while it
	 * runs; this backend advertises the same horizon before it reads, as a
	 * parallel worker does its leader's.  A backend already at or below
	 * it (the holder itself, one with an older snapshot) keeps its own.
	 */
	if (pid != MyProcPid &&
		(!TransactionIdIsValid(MyProc->xmin) ||
		 TransactionIdFollows(MyProc->xmin, snap->xmin)))
	{
		PGPROC	   *holder = BackendPidGetProc(pid);

		if (holder == NULL || !ProcArrayInstallRestoredXmin(snap->xmin, holder))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("the snapshot of this query on member \"%s\" is gone",
							member),
					 errdetail("The session holding it (process %d) ended before the fragment started.",
							   pid),
					 errhint("Run the query again.")));
	}

	/* rows this transaction wrote before the query are visible to it */
	snap->curcid = GetCurrentCommandId(false);
	return snap;
}

/*
 * A snapshot of this member for a query that reads this member only (a
 * directly dispatched query, planner/direct.c), taken between distributed
 * commits: a committer holds the barrier from before its first commit
 * anywhere until its commit here, so after waiting for the barrier this
 * snapshot sees every distributed transaction that some member already
 * shows as committed, as a cluster snapshot would.  Not registered.
 */
Snapshot
rx_barrier_snapshot(void)
{
	Snapshot	snap;

	(void) barrier_share(true);
	snap = GetLatestSnapshot();
	barrier_share_release();
	return snap;
}

/* ---------------------------------------------------------------------
 * Coordinator side
 * ---------------------------------------------------------------------
 */

typedef struct ClusterSnapshot
{
	EState	   *owner;			/* its query; NULL: the transaction's */
	SubTransactionId subid;		/* taken in this subtransaction */
	int			nmembers;
	char	   *text[RX_MAX_MEMBERS];	/* per member, for the fragments */
	PGconn	   *holder[RX_MAX_MEMBERS]; /* NULL: this member */
	bool		release_sent[RX_MAX_MEMBERS];
	char	   *exported[RX_MAX_MEMBERS];	/* see rx_cluster_snapshot_export() */
	Snapshot	local;			/* registered with the top transaction */
	bool		complete;		/* every snapshot taken, no command pending
								 * on a holder but release_barrier() */
	struct ClusterSnapshot *next;
} ClusterSnapshot;

/* live cluster snapshots of this transaction (TopTransactionContext) */
static ClusterSnapshot *snapshots = NULL;

/* the one being taken by a round of gathers, or NULL */
static ClusterSnapshot *inline_round = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;

#define HOLDER_BEGIN "BEGIN READ ONLY; "

/* the result of take_snapshot() on a holder: its text, or NULL if busy */
static char *
holder_result(PGconn *conn, const char *member)
{
	PGresult   *res = rx_query_result(conn, member);
	char	   *text = NULL;

	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		text = MemoryContextStrdup(TopTransactionContext, PQgetvalue(res, 0, 0));
	PQclear(res);
	return text;
}

static void
take_local(ClusterSnapshot *cs, int self)
{
	cs->local = RegisterSnapshotOnOwner(GetLatestSnapshot(),
										TopTransactionResourceOwner);
	cs->text[self] = MemoryContextStrdup(TopTransactionContext,
										 snapshot_text(cs->local));
}

/*
 * Every member's barrier without waiting, all at once; false (and every
 * barrier given back) if a committer held one.
 */
static bool
round_at_once(ClusterSnapshot *cs, RxMember *members, int self)
{
	bool		all = true;

	for (int m = 0; m < cs->nmembers; m++)
		if (m != self)
			rx_send_query(cs->holder[m], members[m].name,
						 HOLDER_BEGIN "SELECT rdma_exchange.take_snapshot(false)");
	if (barrier_share(false))
		take_local(cs, self);
	else
		all = false;
	for (int m = 0; m < cs->nmembers; m++)
		if (m != self &&
			(cs->text[m] = holder_result(cs->holder[m], members[m].name)) == NULL)
			all = false;
	if (all)
		return true;

	/* give back what was taken before waiting for any of it */
	barrier_share_release();
	if (cs->local != NULL)
	{
		UnregisterSnapshotFromOwner(cs->local, TopTransactionResourceOwner);
		cs->local = NULL;
	}
	for (int m = 0; m < cs->nmembers; m++)
		if (m != self)
			rx_exec_command(cs->holder[m], members[m].name, "ROLLBACK");
	return false;
}

/* member after member, waiting for each barrier */
static void
round_in_order(ClusterSnapshot *cs, RxMember *members, int self)
{
	for (int m = 0; m < cs->nmembers; m++)
	{
		if (m == self)
		{
			(void) barrier_share(true);
			take_local(cs, self);
			continue;
		}
		rx_send_query(cs->holder[m], members[m].name,
					 HOLDER_BEGIN "SELECT rdma_exchange.take_snapshot(true)");
		cs->text[m] = holder_result(cs->holder[m], members[m].name);
		if (cs->text[m] == NULL)
			elog(ERROR, "member \"%s\" gave no snapshot after waiting",
				 members[m].name);
	}
}

static ClusterSnapshot *
cluster_snapshot_take(EState *owner)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	ClusterSnapshot *cs;

	cs = MemoryContextAllocZero(TopTransactionContext, sizeof(ClusterSnapshot));
	cs->owner = owner;
	cs->subid = GetCurrentSubTransactionId();
	cs->nmembers = nmembers;
	/* linked first: an error below still ends what was taken */
	cs->next = snapshots;
	snapshots = cs;
	for (int m = 0; m < nmembers; m++)
		if (m != self)
		{
			cs->holder[m] = rx_pool_get(&members[m]);
			rx_pool_hold_for_transaction(cs->holder[m]);
		}

	if (!round_at_once(cs, members, self))
		round_in_order(cs, members, self);

	/* every snapshot taken: the barriers can go */
	barrier_share_release();
	for (int m = 0; m < nmembers; m++)
		if (m != self)
		{
			rx_send_query(cs->holder[m], members[m].name,
						 "SELECT rdma_exchange.release_barrier()");
			cs->release_sent[m] = true;
		}
	cs->complete = true;
	/* the transaction's snapshot outlives a subtransaction's abort */
	if (owner == NULL)
		cs->subid = TopSubTransactionId;
	return cs;
}

/*
 * End a cluster snapshot: holders commit (without waiting; the pool reads
 * the result before it lends the connection again).  Never throws: runs
 * at ExecutorEnd and at commit.
 */
static void
cluster_snapshot_end(ClusterSnapshot *cs)
{
	for (int m = 0; m < cs->nmembers; m++)
	{
		PGconn	   *conn = cs->holder[m];
		PGresult   *res;
		bool		ok = true;

		if (conn == NULL)
			continue;
		if (!cs->complete)
		{
			/* an error interrupted the round: whatever runs there goes */
			rx_cancel(conn);
			rx_pool_put(conn, false);
			cs->holder[m] = NULL;
			continue;
		}
		if (cs->release_sent[m])
			while ((res = PQgetResult(conn)) != NULL)
			{
				ok &= PQresultStatus(res) == PGRES_TUPLES_OK;
				PQclear(res);
			}
		if (ok && PQtransactionStatus(conn) == PQTRANS_INTRANS &&
			PQsendQuery(conn, "COMMIT"))
			rx_pool_put_pending(conn);
		else
			rx_pool_put(conn, false);
		cs->holder[m] = NULL;
	}
	if (cs->local != NULL)
		UnregisterSnapshotFromOwner(cs->local, TopTransactionResourceOwner);
	cs->local = NULL;
}

static void
end_matching(bool (*match) (ClusterSnapshot *, void *), void *arg)
{
	ClusterSnapshot **p = &snapshots;

	while (*p != NULL)
	{
		ClusterSnapshot *cs = *p;

		if (match(cs, arg))
		{
			*p = cs->next;
			cluster_snapshot_end(cs);
		}
		else
			p = &cs->next;
	}
}

static bool
match_owner(ClusterSnapshot *cs, void *arg)
{
	return cs->owner == (EState *) arg;
}

static bool
match_subxact(ClusterSnapshot *cs, void *arg)
{
	return cs->subid == *(SubTransactionId *) arg || !cs->complete;
}

static bool
match_cluster_snapshot(ClusterSnapshot *cs, void *arg)
{
	return cs == (ClusterSnapshot *) arg;
}

static bool
match_all(ClusterSnapshot *cs, void *arg)
{
	return true;
}

static void
snapshot_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			/* holdable cursors were read to their end before this */
			end_matching(match_all, NULL);
			barrier_share_release();
			if (held_snapshot != NULL)
				UnregisterSnapshotFromOwner(held_snapshot, TopTransactionResourceOwner);
			held_snapshot = NULL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/*
			 * Ended at pre-commit, or at abort by the pool (it closes busy
			 * holders) and the transaction (locks, snapshots, memory)
			 */
			snapshots = NULL;
			inline_round = NULL;
			share_held = false;
			held_snapshot = NULL;
			break;
		default:
			break;
	}
}

static void
snapshot_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	ClusterSnapshot *cs;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		/* its queries are gone without ExecutorEnd */
		end_matching(match_subxact, &mySubid);
		inline_round = NULL;
		barrier_share_release();
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		for (cs = snapshots; cs != NULL; cs = cs->next)
			if (cs->subid == mySubid)
				cs->subid = parentSubid;
}

static void
snapshot_executor_end(QueryDesc *queryDesc)
{
	EState	   *estate = queryDesc->estate;

	PG_TRY();
	{
		if (prev_executor_end)
			prev_executor_end(queryDesc);
		else
			standard_ExecutorEnd(queryDesc);
	}
	PG_FINALLY();
	{
		if (snapshots != NULL)
			end_matching(match_owner, estate);
	}
	PG_END_TRY();
}

List *
rx_cluster_snapshot(EState *estate)
{
	EState	   *owner = IsolationUsesXactSnapshot() ? NULL : estate;
	ClusterSnapshot *cs;
	List	   *result = NIL;

	for (cs = snapshots; cs != NULL; cs = cs->next)
		if (cs->owner == owner)
			break;
	if (cs == NULL)
		cs = cluster_snapshot_take(owner);
	for (int m = 0; m < cs->nmembers; m++)
		result = lappend(result, makeString(cs->text[m]));
	return result;
}

/*
 * A round of gathers by query that takes the query's cluster snapshot
 * with its fragments (see the banner): this member's part now, under its
 * barrier, kept until rx_cluster_snapshot_round_end().  Returns its text
 * for the fragments' messages; NULL where the usual way must be taken
 * (the query or transaction has its cluster snapshot already, or a
 * committer holds this member's barrier).
 */
const char *
rx_cluster_snapshot_round_begin(EState *estate)
{
	RxMember   *members;
	int			self = rx_self_member_index();
	ClusterSnapshot *cs;

	if (!rx_consistent_reads || IsolationUsesXactSnapshot() || self < 0 ||
		inline_round != NULL)
		return NULL;
	for (cs = snapshots; cs != NULL; cs = cs->next)
		if (cs->owner == estate)
			return NULL;
	if (!barrier_share(false))
		return NULL;

	/* linked now: an error before the end still ends it */
	cs = MemoryContextAllocZero(TopTransactionContext, sizeof(ClusterSnapshot));
	cs->owner = estate;
	cs->subid = GetCurrentSubTransactionId();
	cs->nmembers = rx_get_members(&members);
	for (int m = 0; m < cs->nmembers; m++)
		cs->text[m] = (char *) RX_SNAPSHOT_GONE;
	cs->next = snapshots;
	snapshots = cs;
	inline_round = cs;
	take_local(cs, self);
	return cs->text[self];
}

/*
 * Every member's answer read; ok: every member took its snapshot (no
 * error).  This member's barrier goes (the others' go with the Sync that
 * ends their round).  With ok, the query keeps its part here for the
 * round's gathers that run later; without, nothing is kept and the query
 * takes its cluster snapshot the usual way.
 */
void
rx_cluster_snapshot_round_end(bool ok)
{
	ClusterSnapshot *cs = inline_round;

	inline_round = NULL;
	barrier_share_release();
	if (ok)
		cs->complete = true;
	else
		end_matching(match_cluster_snapshot, cs);
}

/*
 * The member-side transaction of a REPEATABLE READ or SERIALIZABLE
 * transaction (remote_xact.c) reads and locks with the transaction's
 * cluster snapshot, as its distributed queries do: otherwise it would
 * take its own snapshot when the transaction first changes that member,
 * and change or lock rows in versions the transaction's snapshot does not
 * see instead of failing as one server would ("could not serialize
 * access due to concurrent update").  The holder of member m's part
 * exports it; the member-side transaction imports it with SET
 * TRANSACTION SNAPSHOT.  Taken here if no distributed query took it yet.
 */
const char *
rx_cluster_snapshot_export(const RxMember *member)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	ClusterSnapshot *cs;
	int			m;
	PGresult   *res;

	Assert(IsolationUsesXactSnapshot());
	for (m = 0; m < nmembers; m++)
		if (strcmp(members[m].name, member->name) == 0)
			break;
	for (cs = snapshots; cs != NULL; cs = cs->next)
		if (cs->owner == NULL)
			break;
	if (cs == NULL)
		cs = cluster_snapshot_take(NULL);
	if (m >= cs->nmembers || cs->holder[m] == NULL)
		elog(ERROR, "member \"%s\" has no part in this transaction's cluster snapshot",
			 member->name);
	if (cs->exported[m] != NULL)
		return cs->exported[m];

	/* release_barrier() went without waiting: its result first */
	if (cs->release_sent[m])
	{
		while ((res = rx_get_result(cs->holder[m], member->name)) != NULL)
		{
			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				rx_report_remote_error(ERROR, cs->holder[m], res, member->name,
									   "letting its read barrier go");
			PQclear(res);
		}
		cs->release_sent[m] = false;
	}
	res = rx_exec_query(cs->holder[m], member->name,
						"SELECT rdma_exchange.export_held_snapshot()");
	cs->exported[m] = MemoryContextStrdup(TopTransactionContext, PQgetvalue(res, 0, 0));
	PQclear(res);
	return cs->exported[m];
}

void
rx_cluster_snapshot_init(void)
{
	RegisterXactCallback(snapshot_xact_callback, NULL);
	RegisterSubXactCallback(snapshot_subxact_callback, NULL);
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = snapshot_executor_end;
}
