/*-------------------------------------------------------------------------
 *
 * deadlock.c
 *	  Lock cycles that run through several members.
 *
 * PostgreSQL finds a lock cycle among the backends of one server.  A
 * transaction of rdma_exchange has its backend on the coordinator and a
 * session on every member it changed (remote_xact.c), so a cycle can run
 * through several servers, each of which sees only a chain of waits: the
 * transactions would wait for ever (or until statement_timeout).
 *
 * So every member-side session says whose it is when it is opened
 * (session_origin(): the coordinator's member index and backend pid, kept
 * in shared memory per process), and rdma_exchange.lock_waits() lists the
 * lock waits of a member older than deadlock_timeout, each side with its
 * origin.  The recovery worker of the first member (two_phase.c) gathers
 * them from every member each second, names each waiter and blocker by its
 * transaction (the origin of a member session; the member and pid of any
 * other backend), and looks for cycles among the edges seen in two rounds
 * in a row that were gathered on more than one member (a cycle on one
 * server is PostgreSQL's own).  One transaction of each cycle loses: one
 * whose coordinator backend waits for a member (its wait loop in remote.c
 * raises "deadlock detected" with the cycle in the detail), the last such
 * by member and pid; if every coordinator of the cycle waits for a lock of
 * its own server, the last one's statement is cancelled.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "access/twophase.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/builtins.h"

#include "cluster/deadlock.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"

PG_FUNCTION_INFO_V1(rx_session_origin);
PG_FUNCTION_INFO_V1(rx_session_origins);
PG_FUNCTION_INFO_V1(rx_deadlock_victim);

typedef struct OriginSlot
{
	int			pid;			/* the process the origin is for */
	int			origin_member;
	int			origin_pid;
	pg_atomic_uint32 waiting_member;	/* in remote.c's wait loop */
	pg_atomic_uint32 victim;	/* lost a cycle: raise deadlock detected */
	char		detail[512];
} OriginSlot;

static OriginSlot *slots = NULL;
static int	nslots = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static int
slot_count(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static void
deadlock_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(mul_size(slot_count(), sizeof(OriginSlot)));
}

static void
deadlock_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	nslots = slot_count();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("rdma_exchange lock origins",
							mul_size(nslots, sizeof(OriginSlot)), &found);
	if (!found)
	{
		memset(slots, 0, mul_size(nslots, sizeof(OriginSlot)));
		for (int i = 0; i < nslots; i++)
		{
			pg_atomic_init_u32(&slots[i].waiting_member, 0);
			pg_atomic_init_u32(&slots[i].victim, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

static OriginSlot *
my_slot(void)
{
	if (slots == NULL || MyProc == NULL || MyProc->pgprocno >= nslots)
		return NULL;
	return &slots[MyProc->pgprocno];
}

/* ---------------------------------------------------------------------
 * The coordinator's wait loop (remote.c)
 * ---------------------------------------------------------------------
 */

void
rx_deadlock_wait_begin(void)
{
	OriginSlot *s = my_slot();

	if (s == NULL)
		return;
	pg_atomic_write_u32(&s->victim, 0);
	pg_atomic_write_u32(&s->waiting_member, 1);
}

void
rx_deadlock_wait_end(void)
{
	OriginSlot *s = my_slot();

	if (s == NULL)
		return;
	pg_atomic_write_u32(&s->waiting_member, 0);
	if (pg_atomic_exchange_u32(&s->victim, 0) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
				 errmsg("deadlock detected"),
				 errdetail_internal("%s", s->detail),
				 errhint("The lock waits ran through several members; see the member logs for the queries.")));
}

/* ---------------------------------------------------------------------
 * Member side
 * ---------------------------------------------------------------------
 */

/* rdma_exchange.session_origin(member, pid): this session serves them */
Datum
rx_session_origin(PG_FUNCTION_ARGS)
{
	OriginSlot *s = my_slot();

	if (s != NULL)
	{
		s->origin_member = PG_GETARG_INT32(0);
		s->origin_pid = PG_GETARG_INT32(1);
		s->pid = MyProcPid;
	}
	PG_RETURN_VOID();
}

/* rdma_exchange.session_origins(): live sessions and whose they are */
Datum
rx_session_origins(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; slots != NULL && i < nslots; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {0};
		PGPROC	   *proc = &ProcGlobal->allProcs[i];

		if (slots[i].pid == 0 || proc->pid != slots[i].pid)
			continue;
		values[0] = Int32GetDatum(slots[i].pid);
		values[1] = Int32GetDatum(slots[i].origin_member);
		values[2] = Int32GetDatum(slots[i].origin_pid);
		values[3] = BoolGetDatum(false);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	/* coordinator backends waiting for a member */
	for (int i = 0; slots != NULL && i < nslots; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {true, true, true, false};
		PGPROC	   *proc = &ProcGlobal->allProcs[i];

		if (proc->pid == 0 || pg_atomic_read_u32(&slots[i].waiting_member) == 0)
			continue;
		nulls[0] = false;
		values[0] = Int32GetDatum(proc->pid);
		values[3] = BoolGetDatum(true);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * rdma_exchange.deadlock_victim(pid, detail): the transaction of backend
 * pid lost a cycle.  Waiting for a member, it raises deadlock detected
 * itself; otherwise its statement is cancelled.
 */
Datum
rx_deadlock_victim(PG_FUNCTION_ARGS)
{
	int			pid = PG_GETARG_INT32(0);
	char	   *detail = text_to_cstring(PG_GETARG_TEXT_PP(1));
	PGPROC	   *proc = BackendPidGetProc(pid);
	OriginSlot *s;

	if (proc == NULL || slots == NULL || proc->pgprocno >= nslots)
		PG_RETURN_TEXT_P(cstring_to_text("gone"));
	s = &slots[proc->pgprocno];
	if (pg_atomic_read_u32(&s->waiting_member) != 0)
	{
		strlcpy(s->detail, detail, sizeof(s->detail));
		pg_write_barrier();
		pg_atomic_write_u32(&s->victim, 1);
		SetLatch(&proc->procLatch);
		PG_RETURN_TEXT_P(cstring_to_text("deadlock detected"));
	}
	(void) DirectFunctionCall1(pg_cancel_backend, Int32GetDatum(pid));
	PG_RETURN_TEXT_P(cstring_to_text("cancelled"));
}

/* ---------------------------------------------------------------------
 * The detector (run by the first member's recovery worker)
 * ---------------------------------------------------------------------
 */

typedef struct Edge
{
	int			from_member,
				from_pid,
				to_member,
				to_pid;
	int			seen_on;		/* member whose locks showed it */
} Edge;

#define MAX_EDGES 1024

static Edge prev_edges[MAX_EDGES];
static int	nprev = 0;
static PGconn *detector_conns[RX_MAX_MEMBERS];

static bool
edge_eq(const Edge *a, const Edge *b)
{
	return a->from_member == b->from_member && a->from_pid == b->from_pid &&
		a->to_member == b->to_member && a->to_pid == b->to_pid;
}

static bool
was_seen_before(const Edge *e)
{
	for (int i = 0; i < nprev; i++)
		if (edge_eq(&prev_edges[i], e))
			return true;
	return false;
}

typedef struct Waiter
{
	int			member;
	int			pid;
} Waiter;

/*
 * The lock waits of member m, older than deadlock_timeout: each side named
 * by its transaction.  Also the coordinator backends there that wait for
 * a member.
 */
static const char *waits_sql =
"WITH o AS (SELECT * FROM rdma_exchange.session_origins()),"
" w AS (SELECT l.pid AS waiter, b.pid AS blocker"
"       FROM pg_catalog.pg_locks l,"
"            LATERAL pg_catalog.unnest(pg_catalog.pg_blocking_pids(l.pid)) AS b(pid)"
"       WHERE NOT l.granted AND b.pid <> 0"
"         AND l.waitstart < pg_catalog.now() - pg_catalog.current_setting('deadlock_timeout')::pg_catalog.interval)"
" SELECT 'w', ow.origin_member, COALESCE(ow.origin_pid, w.waiter),"
"        ob.origin_member, COALESCE(ob.origin_pid, w.blocker)"
" FROM w LEFT JOIN o ow ON ow.pid = w.waiter AND NOT ow.remote_wait"
"        LEFT JOIN o ob ON ob.pid = w.blocker AND NOT ob.remote_wait"
" UNION ALL SELECT 'r', NULL, pid, NULL, NULL FROM o WHERE remote_wait";

static int
find_cycle(Edge *edges, int nedges, int start, int *path, int depth, bool *on_path)
{
	/* depth-first from start's target; a cycle returns to edges[start].from */
	Edge	   *last = &edges[path[depth - 1]];

	if (last->to_member == edges[start].from_member && last->to_pid == edges[start].from_pid)
		return depth;
	if (depth >= 64)
		return 0;
	for (int i = 0; i < nedges; i++)
	{
		int			found;

		if (on_path[i] || edges[i].from_member != last->to_member ||
			edges[i].from_pid != last->to_pid)
			continue;
		on_path[i] = true;
		path[depth] = i;
		found = find_cycle(edges, nedges, start, path, depth + 1, on_path);
		if (found)
			return found;
		on_path[i] = false;
	}
	return 0;
}

void
rx_deadlock_detect(void)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	Edge	   *edges = palloc(sizeof(Edge) * MAX_EDGES);
	int			nedges = 0;
	Waiter	   *remote_waiters = palloc(sizeof(Waiter) * MAX_EDGES);
	int			nremote = 0;

	for (int m = 0; m < nmembers; m++)
	{
		char	 ***rows;
		int			n;

		if (detector_conns[m] == NULL || !rx_idle_connection_ok(detector_conns[m]))
		{
			if (detector_conns[m] != NULL)
				rx_disconnect(detector_conns[m]);
			char	   *failure;

			detector_conns[m] = rx_connect_session(&members[m], &failure);
			if (detector_conns[m] == NULL)
				continue;
			rx_connection_keep(detector_conns[m]);
		}
		rows = rx_query_strings(detector_conns[m], members[m].name, waits_sql, &n);
		for (int i = 0; i < n && nedges < MAX_EDGES; i++)
		{
			if (rows[i][0][0] == 'r')
			{
				if (nremote == MAX_EDGES)
					continue;
				remote_waiters[nremote].member = m;
				remote_waiters[nremote++].pid = atoi(rows[i][2]);
				continue;
			}
			edges[nedges].from_member = rows[i][1] ? atoi(rows[i][1]) : m;
			edges[nedges].from_pid = atoi(rows[i][2]);
			edges[nedges].to_member = rows[i][3] ? atoi(rows[i][3]) : m;
			edges[nedges].to_pid = atoi(rows[i][4]);
			edges[nedges].seen_on = m;
			if (edges[nedges].from_member != edges[nedges].to_member ||
				edges[nedges].from_pid != edges[nedges].to_pid)
				nedges++;
		}
	}

	/* only waits seen twice in a row: the rounds are not atomic */
	{
		Edge	   *stable = palloc(sizeof(Edge) * MAX_EDGES);
		int			nstable = 0;

		for (int i = 0; i < nedges; i++)
			if (was_seen_before(&edges[i]))
				stable[nstable++] = edges[i];
		memcpy(prev_edges, edges, sizeof(Edge) * nedges);
		nprev = nedges;
		edges = stable;
		nedges = nstable;
	}

	for (int start = 0; start < nedges; start++)
	{
		int			path[64];
		bool	   *on_path = palloc0(sizeof(bool) * nedges);
		int			len;
		bool		several = false;
		int			victim = -1;
		bool		victim_remote = false;
		StringInfoData detail;

		path[0] = start;
		on_path[start] = true;
		len = find_cycle(edges, nedges, start, path, 1, on_path);
		if (len == 0)
			continue;
		for (int i = 0; i < len; i++)
			several |= edges[path[i]].seen_on != edges[path[0]].seen_on;
		if (!several)
			continue;

		/* the loser: waits for a member if any does, then the last */
		initStringInfo(&detail);
		for (int i = 0; i < len; i++)
		{
			Edge	   *e = &edges[path[i]];
			bool		remote = false;

			for (int r = 0; r < nremote; r++)
				remote |= remote_waiters[r].member == e->from_member &&
					remote_waiters[r].pid == e->from_pid;
			if (victim < 0 || (remote && !victim_remote) ||
				(remote == victim_remote &&
				 (e->from_member > edges[path[victim]].from_member ||
				  (e->from_member == edges[path[victim]].from_member &&
				   e->from_pid > edges[path[victim]].from_pid))))
			{
				victim = i;
				victim_remote = remote;
			}
			appendStringInfo(&detail, "%sProcess %d of member \"%s\" waits on member \"%s\" for the transaction of process %d of member \"%s\".",
							 i ? " " : "", e->from_pid,
							 e->from_member < nmembers ? members[e->from_member].name : "?",
							 members[e->seen_on].name, e->to_pid,
							 e->to_member < nmembers ? members[e->to_member].name : "?");
		}
		{
			Edge	   *v = &edges[path[victim]];
			char	 ***rows;
			int			n;

			if (v->from_member >= nmembers || detector_conns[v->from_member] == NULL)
				continue;
			rows = rx_query_strings(detector_conns[v->from_member],
									members[v->from_member].name,
									psprintf("SELECT rdma_exchange.deadlock_victim(%d, %s)",
											 v->from_pid, quote_literal_cstr(detail.data)),
									&n);
			ereport(LOG,
					(errmsg("rdma_exchange: lock cycle across members; process %d of member \"%s\": %s",
							v->from_pid, members[v->from_member].name,
							n == 1 && rows[0][0] ? rows[0][0] : "?"),
					 errdetail_internal("%s", detail.data)));
		}
		/* one cycle a round: the next round sees what is left */
		nprev = 0;
		break;
	}
}

void
rx_deadlock_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = deadlock_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = deadlock_shmem_startup;
}
