/*-------------------------------------------------------------------------
 *
 * conn_pool.c
 *	  The session's pool of libpq connections to members.
 *
 * A gather ships its fragment to every member over a connection of the
 * querying role; a cluster snapshot keeps one transaction open on every
 * member for as long as a query or a transaction reads with it
 * (cluster_snapshot.c).  Opening a connection costs a fork on the member,
 * so connections are kept for the next query of the session.  Idle ones
 * wait for the next user (same role, same member); busy ones belong to
 * the (sub)transaction that took them and are cancelled and closed when
 * it aborts: whatever they ran belonged to the failed query.  libpq
 * objects are malloc'd, so they survive the transaction's memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"

#include "cluster/conn_budget.h"
#include "cluster/conn_pool.h"
#include "cluster/remote.h"

typedef struct PooledConn
{
	PGconn	   *conn;
	char		member[NAMEDATALEN];
	Oid			userid;
	bool		busy;
	bool		pending;		/* idle, but results still to read */
	SubTransactionId subid;		/* busy: the subtransaction owning it */
	uint64		prepared;		/* statement slots prepared in its session */
} PooledConn;

#define MAX_POOLED 64
static PooledConn pool[MAX_POOLED];
static int	npool = 0;
static bool callback_registered = false;

static bool pool_settle(PooledConn *pc);

static void
pool_drop(int i)
{
	PQfinish(pool[i].conn);
	pool[i] = pool[--npool];
}

/* cancel what a busy connection runs and close it */
static void
pool_abandon(int i)
{
	rx_cancel(pool[i].conn);
	pool_drop(i);
}

static void
pool_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		/* every connection still busy belongs to the failed query */
		for (int i = npool - 1; i >= 0; i--)
			if (pool[i].busy)
				pool_abandon(i);
	}
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT)
		return;

	/* idle ones go back to the members' budget when others need it */
	for (int i = npool - 1; i >= 0; i--)
		if (!pool[i].busy && rx_budget_should_give_back(pool[i].member))
		{
			(void) pool_settle(&pool[i]);
			pool_drop(i);
		}
}

/*
 * A subtransaction that aborts takes its queries and cursors with it
 * (a portal failed there never reaches ExecutorEnd): cancel their
 * fragments.  Those of committed subtransactions belong to the parent.
 */
static void
pool_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	for (int i = npool - 1; i >= 0; i--)
	{
		if (!pool[i].busy || pool[i].subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			pool_abandon(i);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			pool[i].subid = parentSubid;
	}
}

/* read what an earlier command left; false if the connection is unusable */
static bool
pool_settle(PooledConn *pc)
{
	PGresult   *res;
	bool		ok = true;

	if (!pc->pending)
		return true;
	pc->pending = false;
	if (PQpipelineStatus(pc->conn) != PQ_PIPELINE_OFF)
	{
		/* a round of gathers (exec/receive_round.c), ended by its Sync */
		res = PQgetResult(pc->conn);
		ok = (res != NULL && PQresultStatus(res) == PGRES_PIPELINE_SYNC);
		PQclear(res);
		return ok && PQexitPipelineMode(pc->conn) == 1;
	}
	while ((res = PQgetResult(pc->conn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK &&
			PQresultStatus(res) != PGRES_TUPLES_OK)
			ok = false;
		PQclear(res);
	}
	return ok;
}

PGconn *
rx_pool_get(const RxMember *member)
{
	Oid			userid = GetUserId();

	if (!callback_registered)
	{
		RegisterXactCallback(pool_xact_callback, NULL);
		RegisterSubXactCallback(pool_subxact_callback, NULL);
		callback_registered = true;
	}
	for (int i = 0; i < npool; i++)
	{
		if (!pool[i].busy && pool[i].userid == userid &&
			strcmp(pool[i].member, member->name) == 0)
		{
			/* gone bad while idle: a new connection replaces it */
			if (!pool_settle(&pool[i]) || !rx_idle_connection_ok(pool[i].conn))
			{
				pool_drop(i);
				i--;
				continue;
			}
			pool[i].busy = true;
			pool[i].subid = GetCurrentSubTransactionId();
			return pool[i].conn;
		}
	}
	if (npool == MAX_POOLED)
	{
		/* make room: close an idle connection */
		for (int i = 0; i < npool; i++)
			if (!pool[i].busy)
			{
				pool_drop(i);
				break;
			}
		if (npool == MAX_POOLED)
			ereport(ERROR,
					(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
					 errmsg("too many fragments in flight in one session")));
	}
	pool[npool].conn = rx_connect_member(member);
	/* pooled across transactions: not closed by remote.c at abort */
	rx_connection_keep(pool[npool].conn);
	strlcpy(pool[npool].member, member->name, NAMEDATALEN);
	pool[npool].userid = userid;
	pool[npool].busy = true;
	pool[npool].pending = false;
	pool[npool].prepared = 0;
	pool[npool].subid = GetCurrentSubTransactionId();
	return pool[npool++].conn;
}

static PooledConn *
pool_find(PGconn *conn)
{
	for (int i = 0; i < npool; i++)
		if (pool[i].conn == conn)
			return &pool[i];
	return NULL;
}

void
rx_pool_put(PGconn *conn, bool reusable)
{
	PooledConn *pc = pool_find(conn);

	if (pc == NULL)
		return;
	if (reusable && PQtransactionStatus(conn) == PQTRANS_IDLE)
		pc->busy = false;
	else
		pool_drop(pc - pool);
}

void
rx_pool_put_pending(PGconn *conn)
{
	PooledConn *pc = pool_find(conn);

	if (pc == NULL)
		return;
	pc->busy = false;
	pc->pending = true;
}

void
rx_pool_hold_for_transaction(PGconn *conn)
{
	PooledConn *pc = pool_find(conn);

	if (pc != NULL)
		pc->subid = TopSubTransactionId;
}

/*
 * Statements prepared once per pooled session, in slots 0..63 the caller
 * numbers (exec/direct.c: one per column count of execute_direct()'s
 * result): whether slot is prepared in conn's session, and marking it so.
 * A prepared statement lives as long as the session, whatever its
 * transactions do; a new connection starts with none.
 */
bool
rx_pool_prepared(PGconn *conn, int slot)
{
	PooledConn *pc = pool_find(conn);

	return pc != NULL && slot >= 0 && slot < 64 &&
		(pc->prepared & (UINT64CONST(1) << slot)) != 0;
}

void
rx_pool_set_prepared(PGconn *conn, int slot)
{
	PooledConn *pc = pool_find(conn);

	if (pc != NULL && slot >= 0 && slot < 64)
		pc->prepared |= UINT64CONST(1) << slot;
}
