/*-------------------------------------------------------------------------
 *
 * fragment_worker.c
 *	  The coordinator's own fragment in a transaction that wrote: run by a
 *	  parallel worker of the coordinator's backend.
 *
 * Every member runs its fragment in a session of its own, the coordinator
 * too.  After this transaction wrote rows, the coordinator's share of them
 * is uncommitted in this backend, invisible to any other session.  A
 * PostgreSQL parallel worker is the one other process that shares a
 * backend's transaction: it restores the leader's transaction, snapshot,
 * command counter and settings, and so reads the leader's own rows.  So
 * then the coordinator's fragment runs in a parallel worker started for it
 * (PostgreSQL's parallel machinery, with a function of this library as the
 * worker's entry point), while the other members run theirs in the remote
 * transactions that hold their rows (dispatch.c).  The leader stays in
 * parallel mode while the worker runs, as under a Gather; a worker's
 * error is raised in the leader by PostgreSQL itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/shm_toc.h"

#include "cluster/dispatch.h"

/* shm_toc keys */
#define RX_KEY_MESSAGE		UINT64CONST(0xE7E0000000000001)
#define RX_KEY_REPORT		UINT64CONST(0xE7E0000000000002)
#define RX_KEY_MEMBER		UINT64CONST(0xE7E0000000000003)

/* room for the instrumentation report (about 100 bytes a plan node) */
#define RX_REPORT_SIZE		(256 * 1024)

struct RxSelfFragment
{
	ParallelContext *pcxt;
	char	   *report;			/* in the DSM segment */
};

PGDLLEXPORT void rx_fragment_worker_main(dsm_segment *seg, shm_toc *toc);

RxSelfFragment *
rx_self_fragment_start(const char *message, const char *member_name)
{
	RxSelfFragment *sf = palloc0(sizeof(RxSelfFragment));
	Size		len = strlen(message) + 1;
	char	   *space;

	EnterParallelMode();
	sf->pcxt = CreateParallelContext("rdma_exchange", "rx_fragment_worker_main", 1);
	shm_toc_estimate_chunk(&sf->pcxt->estimator, len);
	shm_toc_estimate_chunk(&sf->pcxt->estimator, RX_REPORT_SIZE);
	shm_toc_estimate_chunk(&sf->pcxt->estimator, NAMEDATALEN);
	shm_toc_estimate_keys(&sf->pcxt->estimator, 3);
	InitializeParallelDSM(sf->pcxt);
	if (sf->pcxt->seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create the shared memory for the fragment of member \"%s\"",
						member_name)));
	space = shm_toc_allocate(sf->pcxt->toc, len);
	memcpy(space, message, len);
	shm_toc_insert(sf->pcxt->toc, RX_KEY_MESSAGE, space);
	sf->report = shm_toc_allocate(sf->pcxt->toc, RX_REPORT_SIZE);
	sf->report[0] = '\0';
	shm_toc_insert(sf->pcxt->toc, RX_KEY_REPORT, sf->report);
	space = shm_toc_allocate(sf->pcxt->toc, NAMEDATALEN);
	strlcpy(space, member_name, NAMEDATALEN);
	shm_toc_insert(sf->pcxt->toc, RX_KEY_MEMBER, space);

	LaunchParallelWorkers(sf->pcxt);
	if (sf->pcxt->nworkers_launched == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a worker for the fragment of member \"%s\"",
						member_name),
				 errdetail("After writes in the same transaction, this member's part of a distributed query runs in a parallel worker, which sees the transaction's rows."),
				 errhint("Raise max_worker_processes and max_parallel_workers, or commit before the query.")));
	return sf;
}

/* wait for the worker; its report (empty without EXPLAIN ANALYZE) */
char *
rx_self_fragment_finish(RxSelfFragment *sf)
{
	char	   *report;

	WaitForParallelWorkersToFinish(sf->pcxt);
	report = pstrdup(sf->report);
	DestroyParallelContext(sf->pcxt);
	ExitParallelMode();
	pfree(sf);
	return report;
}

/* errors of the worker name the member, as those of member sessions do */
static void
worker_error_context(void *arg)
{
	errcontext("plan fragment of member \"%s\" (in a parallel worker of the coordinator)",
			   (const char *) arg);
}

void
rx_fragment_worker_main(dsm_segment *seg, shm_toc *toc)
{
	char	   *message = shm_toc_lookup(toc, RX_KEY_MESSAGE, false);
	char	   *out = shm_toc_lookup(toc, RX_KEY_REPORT, false);
	ErrorContextCallback context;
	char	   *report;

	context.callback = worker_error_context;
	context.arg = shm_toc_lookup(toc, RX_KEY_MEMBER, false);
	context.previous = error_context_stack;
	error_context_stack = &context;
	report = rx_run_fragment(message);
	error_context_stack = context.previous;
	strlcpy(out, report, RX_REPORT_SIZE);
}
