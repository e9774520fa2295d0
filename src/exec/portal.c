/*-------------------------------------------------------------------------
 *
 * portal.c
 *	  Which executor runs will be resumed: distributed plans in portals
 *	  fetched a batch at a time.
 *
 * A portal run with a row count (SQL FETCH and MOVE, the protocol's
 * Execute with a row limit, PL/pgSQL FOR loops and cursors, SPI cursors)
 * calls ExecutorRun once per batch with execute_once = false.  At the end
 * of every such call PostgreSQL shuts the plan's nodes down
 * (ExecShutdownNode), as if no row would be wanted again; a Gather there
 * runs without workers, so that costs it nothing.  A gather RECEIVE must
 * not end its exchange then: the fragments on the members, the port and
 * the rows already received stay with the suspended portal until the
 * next batch, and are released when the portal ends (ExecutorEnd: closed,
 * dropped, or its transaction ending) or when every row was read.  Run
 * again from the start, the plan would ship its fragments a second time
 * and return the first rows again.
 *
 * This file knows whether the running query's run may be resumed;
 * RECEIVE asks before it ends its exchange at shutdown.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"

#include "exec/exchange.h"

static ExecutorRun_hook_type prev_executor_run = NULL;

/*
 * The innermost executor run and whether it may be resumed.  A node shuts
 * down inside its own query's run (ExecutePlan's end, a Limit), which is
 * the innermost one then: runs nested in it (functions) have returned.
 */
static EState *running_estate = NULL;
static bool running_may_resume = false;

static void
portal_executor_run(QueryDesc *queryDesc, ScanDirection direction,
					uint64 count, bool execute_once)
{
	EState	   *save_estate = running_estate;
	bool		save_may_resume = running_may_resume;

	running_estate = queryDesc->estate;
	running_may_resume = !execute_once;
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(queryDesc, direction, count, execute_once);
		else
			standard_ExecutorRun(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		running_estate = save_estate;
		running_may_resume = save_may_resume;
	}
	PG_END_TRY();
}

bool
rx_run_may_resume(EState *estate)
{
	return running_estate == estate && running_may_resume;
}

void
rx_portal_init(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = portal_executor_run;
}
