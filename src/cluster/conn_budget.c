/*-------------------------------------------------------------------------
 *
 * conn_budget.c
 *	  How many of this member's sessions may hold connections to another
 *	  member at once: the pool the sessions share.
 *
 * Every session keeps libpq connections to the other members for its
 * next query (fragments and snapshot holders in conn_pool.c, remote
 * transactions in remote_xact.c): opening one costs a fork there.
 * Unbounded, client sessions here, even idle ones, would fill another
 * member's max_connections, its superuser-reserved slots too when the
 * querying role is a superuser.  A libpq connection cannot move between
 * processes, so what the sessions share is a budget: at most
 * rdma_exchange.max_member_sessions sessions of this member hold
 * connections to one member at any time (a query needs two there, a
 * writing transaction one more).
 *
 * A session about to open its first connection to a member while the
 * budget is spent waits until another session gives its connections back
 * (up to rdma_exchange.connect_timeout, then an error naming the member
 * and the setting).  Sessions give back their idle connections to a
 * member; and while more than half of the budget is in use, unless the
 * session runs transactions back to back (see session_busy()), so idle
 * sessions hold at most about half of it.  A session keeps them
 * otherwise, for its next query.  (Giving back only one session's worth
 * for each waiting session starved them: the session that gave back took
 * the slot again with its next statement before a waiter woke up.)
 *
 * The default (-1) derives the budget from the member's own limits, read
 * at the first connection to it and remembered here: half of its
 * max_connections less superuser_reserved_connections, for the other
 * members of the cluster to share, three connections a session, and at
 * least 2 sessions.
 *
 * Background workers (the recovery worker, which also looks for deadlocks)
 * are not counted and never wait.
 *
 * Shared memory holds, per backend, how many connections it has open to
 * each member (only the backend itself writes its row; it is zeroed when
 * the backend exits) and, per member, its "host:port", its derived budget
 * and the number of sessions waiting for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "rdma_exchange.h"
#include "cluster/conn_budget.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"

#define BUDGET_TARGETS 32

typedef struct BudgetTarget
{
	char		name[NAMEDATALEN];	/* "host:port"; "" unused */
	pg_atomic_uint32 derived;	/* budget from its limits; 0 unknown */
	pg_atomic_uint32 waiting;	/* sessions waiting for it */
} BudgetTarget;

typedef struct BudgetShared
{
	slock_t		mutex;			/* adding a target */
	BudgetTarget targets[BUDGET_TARGETS];
	pg_atomic_uint32 open[FLEXIBLE_ARRAY_MEMBER];	/* [proc][target] */
} BudgetShared;

static BudgetShared *shared = NULL;
static int	nprocs = 0;
static bool exit_registered = false;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
budget_size(void)
{
	return add_size(offsetof(BudgetShared, open),
					mul_size(mul_size(nprocs, BUDGET_TARGETS), sizeof(pg_atomic_uint32)));
}

static void
budget_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	nprocs = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	RequestAddinShmemSpace(budget_size());
}

static void
budget_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	nprocs = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("rdma_exchange connection budget", budget_size(), &found);
	if (!found)
	{
		SpinLockInit(&shared->mutex);
		for (int t = 0; t < BUDGET_TARGETS; t++)
		{
			shared->targets[t].name[0] = '\0';
			pg_atomic_init_u32(&shared->targets[t].derived, 0);
			pg_atomic_init_u32(&shared->targets[t].waiting, 0);
		}
		for (int i = 0; i < nprocs * BUDGET_TARGETS; i++)
			pg_atomic_init_u32(&shared->open[i], 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

static pg_atomic_uint32 *
my_row(void)
{
	if (shared == NULL || MyProc == NULL || MyProc->pgprocno >= nprocs)
		return NULL;
	return &shared->open[MyProc->pgprocno * BUDGET_TARGETS];
}

static void
budget_exit(int code, Datum arg)
{
	pg_atomic_uint32 *row = my_row();

	if (row != NULL)
		for (int t = 0; t < BUDGET_TARGETS; t++)
			pg_atomic_write_u32(&row[t], 0);
}

/* the member's slot, added when new; -1 when all are taken (no budget) */
static int
target_index(const char *name)
{
	int			found = -1;

	if (shared == NULL)
		return -1;
	for (int t = 0; t < BUDGET_TARGETS; t++)
		if (strcmp(shared->targets[t].name, name) == 0)
			return t;
	SpinLockAcquire(&shared->mutex);
	for (int t = 0; t < BUDGET_TARGETS && found < 0; t++)
		if (strcmp(shared->targets[t].name, name) == 0)
			found = t;
	for (int t = 0; t < BUDGET_TARGETS && found < 0; t++)
		if (shared->targets[t].name[0] == '\0')
		{
			strlcpy(shared->targets[t].name, name, NAMEDATALEN);
			found = t;
		}
	SpinLockRelease(&shared->mutex);
	return found;
}

/* sessions holding connections to target t */
static int
holders(int t)
{
	int			n = 0;

	for (int p = 0; p < nprocs; p++)
		if (pg_atomic_read_u32(&shared->open[p * BUDGET_TARGETS + t]) > 0)
			n++;
	return n;
}

/* the budget for target t; 0: none known yet (the first session finds out) */
static int
budget_of(int t)
{
	if (rx_max_member_sessions > 0)
		return rx_max_member_sessions;
	return (int) pg_atomic_read_u32(&shared->targets[t].derived);
}

int
rx_budget_reserve(const char *name)
{
	pg_atomic_uint32 *row = my_row();
	int			t = target_index(name);
	int			budget;
	TimestampTz deadline;

	/* client sessions share the budget; the recovery worker is not one */
	if (row == NULL || t < 0 || rx_max_member_sessions == 0 ||
		MyBackendType != B_BACKEND)
		return -1;
	if (!exit_registered)
	{
		before_shmem_exit(budget_exit, 0);
		exit_registered = true;
	}

	budget = budget_of(t);
	if (pg_atomic_read_u32(&row[t]) == 0 && budget > 0 && holders(t) >= budget)
	{
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   rx_connect_timeout * 1000);
		pg_atomic_fetch_add_u32(&shared->targets[t].waiting, 1);
		PG_TRY();
		{
			while (holders(t) >= budget_of(t))
			{
				if (GetCurrentTimestamp() >= deadline)
					ereport(ERROR,
							(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
							 errmsg("too many sessions of this member use member \"%s\"", name),
							 errdetail("%d sessions hold connections to it, the most rdma_exchange.max_member_sessions allows; none gave them back within rdma_exchange.connect_timeout (%d s).",
									   holders(t), rx_connect_timeout),
							 errhint("Retry, use fewer concurrent sessions, or raise rdma_exchange.max_member_sessions (and that member's max_connections).")));
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 10, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
		}
		PG_FINALLY();
		{
			pg_atomic_fetch_sub_u32(&shared->targets[t].waiting, 1);
		}
		PG_END_TRY();
	}
	pg_atomic_fetch_add_u32(&row[t], 1);
	return t;
}

void
rx_budget_release(int t)
{
	pg_atomic_uint32 *row = my_row();

	if (row != NULL && t >= 0 && pg_atomic_read_u32(&row[t]) > 0)
		pg_atomic_fetch_sub_u32(&row[t], 1);
}

void
rx_budget_learn(int t, PGconn *conn, const char *name)
{
	char	 ***rows;
	int			n;
	int			others;
	int			budget;
	RxMember   *members;

	if (t < 0 || rx_max_member_sessions >= 0 ||
		pg_atomic_read_u32(&shared->targets[t].derived) != 0)
		return;
	rows = rx_query_strings(conn, name,
							"SELECT pg_catalog.current_setting('max_connections')::int"
							" OPERATOR(pg_catalog.-)"
							" pg_catalog.current_setting('superuser_reserved_connections')::int",
							&n);
	others = Max(1, (IsTransactionState() ? rx_get_members(&members) : 2) - 1);
	budget = Max(2, atoi(rows[0][0]) / 2 / others / 3);
	pg_atomic_write_u32(&shared->targets[t].derived, (uint32) budget);
}

/*
 * Whether this session runs transactions back to back: the transaction
 * ending now began less than a second after the one before it ended.  An
 * application's busy session (pgbench, a connection pool under load)
 * uses its connections again at once; giving them back at the end of
 * each transaction would cost it a new connection, a fork on the member,
 * per transaction.  Called at the end of a transaction.
 */
static bool
session_busy(void)
{
	static TimestampTz decided_for = 0;
	static TimestampTz last_end = 0;
	static bool busy = false;
	TimestampTz start = GetCurrentTransactionStartTimestamp();

	if (start != decided_for)
	{
		decided_for = start;
		busy = last_end != 0 && start - last_end < USECS_PER_SEC;
		last_end = GetCurrentTimestamp();
	}
	return busy;
}

/*
 * Called at the end of a transaction for each idle connection to member
 * name; one answer per member and transaction (a session gives back all
 * its connections there, or none).
 */
bool
rx_budget_should_give_back(const char *name)
{
	static TimestampTz decided_for[BUDGET_TARGETS];
	static bool decision[BUDGET_TARGETS];
	TimestampTz xact = GetCurrentTransactionStartTimestamp();
	int			t;

	if (shared == NULL || rx_max_member_sessions == 0)
		return false;
	t = target_index(name);
	if (t < 0 || budget_of(t) == 0)
		return false;
	if (decided_for[t] != xact)
	{
		bool		busy = session_busy();

		decided_for[t] = xact;
		decision[t] = pg_atomic_read_u32(&shared->targets[t].waiting) > 0 ||
			(2 * holders(t) > budget_of(t) && !busy);
	}
	return decision[t];
}

void
rx_conn_budget_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = budget_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = budget_shmem_startup;
}
