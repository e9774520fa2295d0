/*-------------------------------------------------------------------------
 *
 * fragment.c
 *	  Member side of a gather: rdma_exchange.execute_fragment().
 *
 * Any role may call the function; it parses nothing before the
 * fragment's signature checked out, and runs it only for the role that
 * planned it, once and in time (fragment_guard.c).  Relations and indexes
 * are found by qualified name and locked here, their columns by name
 * (colmap.c), permissions are checked as for any query of the session
 * user (ExecCheckRTPerms in ExecutorStart), the
 * snapshot is the member's part of the query's cluster snapshot
 * (cluster_snapshot.c), and only plain read-only plans run.
 * The result is a text report of the instrumentation (one line per plan
 * node, one per exchange node), empty unless the coordinator runs
 * EXPLAIN ANALYZE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "postmaster/bgworker_internals.h"
#include "storage/lmgr.h"
#include "tcop/dest.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/backend_status.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/varlena.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/colmap.h"
#include "cluster/dispatch.h"
#include "cluster/fragment_guard.h"
#include "cluster/fragment_msg.h"
#include "cluster/metadata.h"
#include "cluster/settings.h"
#include "cluster/sql_plans.h"
#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "transport/transport.h"

PG_FUNCTION_INFO_V1(rx_execute_fragment);
PG_FUNCTION_INFO_V1(rx_execute_direct);

/* the fragment this backend is running */
static RxHub *current_hub = NULL;
static int	current_coordinator = -1;
static PlanState *current_planstate = NULL;

PlanState *
rx_fragment_planstate(void)
{
	return current_planstate;
}

RxHub *
rx_fragment_hub(void)
{
	return current_hub;
}

int
rx_fragment_coordinator(void)
{
	return current_coordinator;
}

bool
rx_in_fragment(void)
{
	return current_hub != NULL;
}

static Oid
lookup_relation(const char *qualified, LOCKMODE lockmode, const char *what)
{
	List	   *names = stringToQualifiedNameList(qualified);

	return RangeVarGetRelid(makeRangeVarFromNameList(names), lockmode, false);
}

/* index OIDs of the coordinator to ours */
static Oid
map_index(RxFragmentMsg *msg, Oid old)
{
	ListCell   *a,
			   *b;

	forboth(a, msg->index_oids, b, msg->index_names)
	{
		if (strtoul(strVal(lfirst(a)), NULL, 10) == old)
			return lookup_relation(strVal(lfirst(b)), NoLock, "index");
	}
	elog(ERROR, "plan fragment refers to an index it did not name");
	return InvalidOid;
}

typedef struct FragmentWalk
{
	RxFragmentMsg *msg;
	const char *member;			/* this member's name, for messages */
	List	   *recv_ids;
	List	   *send_ids;
	int			ngathers;		/* Gathers for this member's own workers */
	bool		under_gather;
	bool		under_shared;	/* ... below a RECEIVE its workers share */
} FragmentWalk;

/* a Gather's or Gather Merge's workers */
static int
gather_workers(Plan *plan)
{
	return IsA(plan, Gather) ? ((Gather *) plan)->num_workers
		: ((GatherMerge *) plan)->num_workers;
}

/* remap indexes, check the plan is read-only, find the exchanges */
static void
walk_fragment(Plan *plan, FragmentWalk *w)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapIndexScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			{
				Scan	   *scan = (Scan *) plan;
				int			rti = scan->scanrelid - 1;
				List	   *names = list_nth(w->msg->colnames, rti);

				if (names != NIL)
					rx_map_scan_columns(scan, list_nth_node(RangeTblEntry, w->msg->stmt->rtable, rti),
										names, w->member);
				if (IsA(plan, IndexScan))
					((IndexScan *) plan)->indexid = map_index(w->msg, ((IndexScan *) plan)->indexid);
				else if (IsA(plan, IndexOnlyScan))
					((IndexOnlyScan *) plan)->indexid = map_index(w->msg, ((IndexOnlyScan *) plan)->indexid);
				else if (IsA(plan, BitmapIndexScan))
					((BitmapIndexScan *) plan)->indexid = map_index(w->msg, ((BitmapIndexScan *) plan)->indexid);
			}
			break;
		case T_BitmapAnd:
			foreach(lc, ((BitmapAnd *) plan)->bitmapplans)
				walk_fragment(lfirst(lc), w);
			break;
		case T_BitmapOr:
			foreach(lc, ((BitmapOr *) plan)->bitmapplans)
				walk_fragment(lfirst(lc), w);
			break;
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				walk_fragment(lfirst(lc), w);
			break;
		case T_SubqueryScan:
			walk_fragment(((SubqueryScan *) plan)->subplan, w);
			break;
		case T_Gather:
		case T_GatherMerge:
			/* this member's workers (planner/local_gather.c): plain nodes only */
			if (w->under_gather || w->under_shared || gather_workers(plan) < 0 ||
				gather_workers(plan) > MAX_PARALLEL_WORKER_LIMIT)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("plan fragment contains a Gather that fragments may not contain")));
			w->ngathers++;
			w->under_gather = true;
			walk_fragment(plan->lefttree, w);
			w->under_gather = false;
			return;
		case T_ModifyTable:
		case T_LockRows:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("plan fragment contains a node that fragments may not contain")));
			break;
		case T_CustomScan:
			if (w->under_gather && !(rx_is_receive(plan) && plan->parallel_aware))
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("plan fragment contains an exchange under a Gather")));
			if (rx_is_shuffle(plan))
			{
				RxShuffleInfo info;

				rx_shuffle_info((CustomScan *) plan, &info);
				w->send_ids = lappend_int(w->send_ids, info.exchange_id);
			}
			else if (rx_is_receive(plan))
			{
				RxReceiveInfo info;

				rx_receive_info((CustomScan *) plan, &info);
				w->recv_ids = lappend_int(w->recv_ids, info.exchange_id);
				if (w->under_gather)
				{
					/*
					 * shared by the Gather's workers (exec/receive_shared.c):
					 * what its SHUFFLE sends runs in this backend alone, with
					 * exchanges but no Gather of its own
					 */
					bool		was_shared = w->under_shared;

					w->under_gather = false;
					w->under_shared = true;
					walk_fragment(plan->lefttree, w);
					w->under_shared = was_shared;
					w->under_gather = true;
					return;
				}
			}
			else
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("plan fragment contains a foreign custom scan")));
			break;
		default:
			break;
	}
	walk_fragment(plan->lefttree, w);
	walk_fragment(plan->righttree, w);
}

static void
report_node(PlanState *ps, StringInfo out)
{
	Instrumentation *in = ps->instrument;

	if (in == NULL)
		return;
	InstrEndLoop(in);
	appendStringInfo(out, "N %d %.6f %.6f %.0f %.0f %.0f %.0f %.0f\n",
					 ps->plan->plan_node_id, in->startup, in->total,
					 in->ntuples, in->ntuples2, in->nloops,
					 in->nfiltered1, in->nfiltered2);
}

static void
report_exchange(PlanState *ps, RxPort *port, int nmembers, StringInfo out)
{
	RxHubCounters per[RX_MAX_MEMBERS];
	RxStreamStats tstats[RX_MAX_MEMBERS];
	RxHubCounters sent = {0},
				recv = {0};
	uint64		retransmits = 0;
	uint64		peak = 0;
	int			exchange_id;
	bool		is_shuffle = rx_is_shuffle(ps->plan);

	if (is_shuffle)
		exchange_id = ((RxShuffleState *) ps)->info.exchange_id;
	else
		exchange_id = ((RxReceiveState *) ps)->info.exchange_id;

	rx_hub_counters(current_hub, exchange_id, is_shuffle, per);
	for (int m = 0; m < nmembers; m++)
	{
		RxHubCounters *t = is_shuffle ? &sent : &recv;

		t->rows += per[m].rows;
		t->bytes += per[m].bytes;
		t->msgs += per[m].msgs;
		t->wait_ms += per[m].wait_ms;
	}
	if (!is_shuffle)
		recv.wait_ms = ((RxReceiveState *) ps)->data_wait_ms;
	/* buffers: the sum of the streams' peaks, an upper bound of the peak */
	rx_exchange_stats(port, exchange_id, is_shuffle, tstats);
	for (int m = 0; m < nmembers; m++)
	{
		retransmits += tstats[m].retransmits;
		peak += tstats[m].peak;
	}
	appendStringInfo(out, "X %d %llu %llu %llu %.3f %llu %llu %llu %.3f %llu %llu\n",
					 ps->plan->plan_node_id,
					 (unsigned long long) sent.rows, (unsigned long long) sent.bytes,
					 (unsigned long long) sent.msgs, sent.wait_ms,
					 (unsigned long long) recv.rows, (unsigned long long) recv.bytes,
					 (unsigned long long) recv.msgs, recv.wait_ms,
					 (unsigned long long) retransmits, (unsigned long long) peak);
}

typedef struct ReportContext
{
	StringInfo	out;
	RxPort	   *port;
	int			nmembers;
	PlanState  *shuffle;		/* the SHUFFLE above, NULL: none */
	bool		gather_seen;	/* its member Gather reported */
} ReportContext;

/*
 * How the member's Gather (or Gather Merge) below a SHUFFLE split its
 * part among the member's processes: the rows and time of the node under
 * it in this backend and in each worker, for EXPLAIN ANALYZE VERBOSE on
 * the SHUFFLE (PostgreSQL's own "Worker n" lines count the members
 * there).  "P shuffle process rows ms", process 0 this backend, n the
 * worker n - 1; the node's own instrumentation holds the workers'
 * together with this backend's.  (Under a rescan PostgreSQL keeps the
 * workers' figures of the last run only: this backend's then count the
 * earlier runs' workers too.)
 */
static void
report_processes(PlanState *gather, PlanState *shuffle, StringInfo out)
{
	PlanState  *child = outerPlanState(gather);
	WorkerInstrumentation *wi;
	Instrumentation own;

	if (child == NULL || child->instrument == NULL)
		return;
	InstrEndLoop(child->instrument);
	wi = child->worker_instrument;
	own = *child->instrument;
	for (int w = 0; wi != NULL && w < wi->num_workers; w++)
	{
		own.ntuples -= wi->instrument[w].ntuples;
		own.total -= wi->instrument[w].total;
		own.nloops -= wi->instrument[w].nloops;
	}
	/* a process that never ran the node (a worker not launched) is left out */
	for (int p = 0; p <= (wi != NULL ? wi->num_workers : 0); p++)
	{
		Instrumentation *in = p == 0 ? &own : &wi->instrument[p - 1];

		if (in->nloops > 0)
			appendStringInfo(out, "P %d %d %.0f %.3f\n",
							 shuffle->plan->plan_node_id, p, in->ntuples,
							 Max(1000.0 * in->total, 0.0));
	}
}

static bool
report_walker(PlanState *ps, void *context)
{
	ReportContext *rc = (ReportContext *) context;

	if (ps == NULL)
		return false;
	report_node(ps, rc->out);
	if (IsA(ps, GatherState) || IsA(ps, GatherMergeState))
	{
		appendStringInfo(rc->out, "W %d %d\n", ps->plan->plan_node_id,
						 IsA(ps, GatherState) ?
						 ((GatherState *) ps)->nworkers_launched :
						 ((GatherMergeState *) ps)->nworkers_launched);
		if (rc->shuffle != NULL && !rc->gather_seen)
		{
			report_processes(ps, rc->shuffle, rc->out);
			rc->gather_seen = true;
		}
	}
	if (rx_is_shuffle(ps->plan) || rx_is_receive(ps->plan))
		report_exchange(ps, rc->port, rc->nmembers, rc->out);
	if (rx_is_shuffle(ps->plan))
	{
		ReportContext below = *rc;

		below.shuffle = ps;
		below.gather_seen = false;
		return planstate_tree_walker(ps, report_walker, &below);
	}
	return planstate_tree_walker(ps, report_walker, context);
}

/* the transport design the coordinator chose for an exchange */
static int
shipped_design(const RxFragmentMsg *msg, int exchange_id)
{
	for (int i = 0; i + 1 < list_length(msg->designs); i += 2)
		if (list_nth_int(msg->designs, i) == exchange_id)
			return list_nth_int(msg->designs, i + 1);
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("plan fragment names no transport design for exchange %d",
					exchange_id)));
	return 0;					/* keep the compiler quiet */
}

/*
 * Executor parameters whose values the coordinator computed: InitPlan
 * results, a keyed lookup's values from the plan above
 */
static void
set_exec_values(EState *estate, List *ids, List *values)
{
	ListCell   *a,
			   *b;

	if (list_length(values) != list_length(ids))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment gives %d values for %d executor parameters",
						list_length(values), list_length(ids))));
	forboth(a, ids, b, values)
	{
		int			id = lfirst_int(a);
		ParamExecData *prm;
		Const	   *c = (Const *) lfirst(b);

		if (c == NULL || !IsA(c, Const) ||
			id < 0 || id >= list_length(estate->es_plannedstmt->paramExecTypes))
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("plan fragment sets executor parameter %d, which its plan does not have",
							id)));
		prm = &estate->es_param_exec_vals[id];
		prm->execPlan = NULL;
		prm->value = c->constvalue;
		prm->isnull = c->constisnull;
	}
}

static void
set_exec_params(EState *estate, RxFragmentMsg *msg)
{
	set_exec_values(estate, msg->param_ids, msg->param_values);
}

/* the coordinator's bound parameters ($1, ...), as the executor takes them */
static ParamListInfo
bound_params(List *values)
{
	ParamListInfo params;
	int			i = 0;
	ListCell   *lc;

	if (values == NIL)
		return NULL;
	params = makeParamList(list_length(values));
	foreach(lc, values)
	{
		Const	   *c = lfirst_node(Const, lc);
		ParamExternData *prm = &params->params[i++];

		prm->value = c->constvalue;
		prm->isnull = c->constisnull;
		prm->pflags = PARAM_FLAG_CONST;
		prm->ptype = c->consttype;
	}
	return params;
}

Datum
rx_execute_fragment(PG_FUNCTION_ARGS)
{
	char	   *message = text_to_cstring(PG_GETARG_TEXT_PP(0));

	PG_RETURN_TEXT_P(cstring_to_text(rx_run_fragment(message)));
}

/*
 * What this member published on its connections (what, e.g. its datagram
 * endpoint's name) as the coordinator shipped it, against what it
 * publishes now: its transport worker may have restarted since the
 * coordinator connected (a new queue pair, a new registration), and what
 * peers would send to the old one is lost.  Nothing shipped: no check.
 */
static void
check_published(const char *shipped, const char *now, const char *what,
				const char *none, const char *member, const char *coordinator)
{
	if (shipped[0] != '\0' && strcmp(shipped, now) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the %s of member \"%s\" changed since the coordinator \"%s\" connected to it",
						what, member, coordinator),
				 errdetail("Its transport worker restarted (now: \"%s\").",
						   now[0] ? now : none),
				 errhint("Run the query again.")));
}

/*
 * A DBA adds a query's cost up over the members by its query id: report
 * this fragment under the coordinator's statement.  pg_stat_activity
 * shows its text and query id; pg_stat_statements records the
 * execute_fragment() call that runs it (this member session's top-level
 * statement, the active portal's) under them.  The fragment's own
 * executor keeps no query id, so that pg_stat_statements.track = all
 * does not count it twice.  A parallel worker of the coordinator (its
 * own fragment) reports the leader's statement already.
 */
static void
report_statement(RxFragmentMsg *msg, PlannedStmt *stmt)
{
	uint64		queryid = stmt->queryId;
	char	   *text;

	stmt->queryId = 0;
	if (IsParallelWorker() || msg->query_text[0] == '\0')
		return;
	text = psprintf("/* rdma_exchange fragment of member %s */ %s",
					msg->member_names[msg->coordinator], msg->query_text);
	pgstat_report_activity(STATE_RUNNING, text);
	if (queryid == 0)
		return;
	pgstat_report_query_id(queryid, true);
	if (ActivePortal != NULL && ActivePortal->queryDesc != NULL)
	{
		QueryDesc  *top = ActivePortal->queryDesc;

		top->plannedstmt->queryId = queryid;
		top->plannedstmt->stmt_location = 0;
		top->plannedstmt->stmt_len = 0;
		top->sourceText = MemoryContextStrdup(ActivePortal->portalContext, text);
	}
}

/*
 * Check and take in a signed fragment message: membership, binding, the
 * statement's settings (at a new GUC nest level, *nest) and timestamps,
 * relations, indexes and columns by name.  Returns the message, its plan
 * ready to run here.
 */
static RxFragmentMsg *
fragment_open(const char *message, FragmentWalk *w, int *nest)
{
	RxFragmentMsg *msg;
	RxMember   *members;
	int			nmembers;
	int			self;
	PlannedStmt *stmt;
	ListCell   *a,
			   *b;
	int			rti;

	if (current_hub != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a plan fragment cannot start another fragment")));

	msg = rx_fragment_decode(message);
	stmt = msg->stmt;

	/* the member lists must agree, or rows would go to the wrong member */
	nmembers = rx_get_members(&members);
	self = rx_self_member_index();
	if (self < 0 || nmembers != msg->nmembers)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cluster membership differs between this member and the coordinator \"%s\"",
						msg->member_names[msg->coordinator]),
				 errdetail("The coordinator lists %d members, this member lists %d%s.",
						   msg->nmembers, nmembers,
						   self < 0 ? " and is not one of them" : ""),
				 errhint("Add and remove members on one member only; it pushes the list to all.")));
	for (int m = 0; m < nmembers; m++)
		if (strcmp(members[m].fabric_addr, msg->fabric_addrs[m]) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("member %d is \"%s\" on the coordinator but \"%s\" here",
							m, msg->fabric_addrs[m], members[m].fabric_addr)));

	/* our datagram endpoint's name and pool registration, still ours */
	check_published(msg->dgram_names[self], rx_datagram_name(),
					"datagram endpoint", "no datagram endpoint",
					members[self].name, msg->member_names[msg->coordinator]);
	check_published(msg->pool_regs[self], rx_pool_registration(),
					"buffer pool registration", "no registered pool",
					members[self].name, msg->member_names[msg->coordinator]);

	/* for this role, in time, once: before any port or buffer is taken */
	rx_fragment_check_binding(msg, members[self].name);
	if (stmt != NULL)
		report_statement(msg, stmt);

	*nest = NewGUCNestLevel();
	rx_take_settings(msg->guc_names, msg->guc_values, GUC_ACTION_SAVE);
	/* a RECEIVE shared by a Gather's workers moves with its leader only */
	if (stmt != NULL && rx_stmt_shares_receive(stmt))
		(void) set_config_option("parallel_leader_participation", "on",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);

	/*
	 * The fragment is part of the coordinator's statement: now(),
	 * current_timestamp, statement_timestamp() and the rest give the
	 * coordinator's values, as they give the leader's in a parallel worker
	 * (which sets them with this same call; it only asserts in builds with
	 * assertions that the caller is a parallel worker).  This backend's
	 * transaction is the one of execute_fragment()'s statement, so the
	 * values last until the fragment ends.
	 */
	SetParallelStartTimestamps(msg->xact_start, msg->stmt_start);

	/* relations by name, locked as the coordinator locked them */
	rti = 0;
	forboth(a, msg->relnames, b, msg->rolenames)
	{
		RangeTblEntry *rte = list_nth_node(RangeTblEntry, stmt->rtable, rti);

		rti++;
		if (lfirst(a) == NULL)
			continue;
		rte->relid = lookup_relation(strVal(lfirst(a)), rte->rellockmode, "relation");
		rte->checkAsUser = lfirst(b) ? get_role_oid(strVal(lfirst(b)), false)
			: InvalidOid;
	}
	w->msg = msg;
	w->member = members[self].name;
	if (stmt == NULL)
		return msg;				/* a query's text, planned here later */
	walk_fragment(stmt->planTree, w);

	/*
	 * Gathers start this member's parallel workers; not where this backend
	 * is a parallel worker itself (fragment_worker.c): a Gather there runs
	 * its plan alone, as with no worker to be had
	 */
	stmt->parallelModeNeeded = w->ngathers > 0 && !IsParallelWorker();
	rti = 0;
	foreach(a, msg->colnames)
	{
		if (lfirst(a) != NIL)
			rx_map_rte_columns(list_nth_node(RangeTblEntry, stmt->rtable, rti),
							   lfirst(a), members[self].name);
		rti++;
	}
	return msg;
}

/*
 * Run a signed fragment message in this backend: a member session's
 * (execute_fragment) or a parallel worker of the coordinator's backend
 * (fragment_worker.c).  Returns the instrumentation report.
 */
char *
rx_run_fragment(const char *message)
{
	RxFragmentMsg *msg;
	int			nmembers;
	int			self = rx_self_member_index();
	PlannedStmt *stmt;
	FragmentWalk w = {0};
	RxPortSpec spec;
	RxPort	   *port;
	QueryDesc  *qd;
	StringInfoData report;
	ListCell   *a;
	int			save_nestlevel;
	Snapshot	snapshot;

	msg = fragment_open(message, &w, &save_nestlevel);
	stmt = msg->stmt;
	nmembers = msg->nmembers;

	/* the query's cluster snapshot, as every member reads it */
	snapshot = msg->snapshots != NIL
		? rx_cluster_snapshot_restore(strVal(list_nth(msg->snapshots, self)),
									  w.member)
		: GetActiveSnapshot();

	memset(&spec, 0, sizeof(spec));
	spec.query_id = msg->query_id;
	spec.token = msg->token;
	spec.self = self;
	spec.nmembers = nmembers;
	for (int m = 0; m < nmembers; m++)
	{
		strlcpy(spec.fabric_addrs[m], msg->fabric_addrs[m], RX_FABRIC_ADDR_LEN);
		strlcpy(spec.member_names[m], msg->member_names[m], NAMEDATALEN);
		strlcpy(spec.dgram_names[m], msg->dgram_names[m], RX_FABRIC_NAME_LEN);
		strlcpy(spec.pool_regs[m], msg->pool_regs[m], RX_POOL_REG_LEN);
	}
	if (list_length(w.recv_ids) > RX_MAX_EXCHANGES ||
		list_length(w.send_ids) > RX_MAX_EXCHANGES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a plan fragment may take part in at most %d exchanges",
						RX_MAX_EXCHANGES)));
	foreach(a, w.recv_ids)
	{
		spec.recv_designs[spec.nrecv] = shipped_design(msg, lfirst_int(a));
		spec.recv_exchange_ids[spec.nrecv++] = lfirst_int(a);
	}
	foreach(a, w.send_ids)
	{
		spec.send_designs[spec.nsend] = shipped_design(msg, lfirst_int(a));
		spec.send_exchange_ids[spec.nsend++] = lfirst_int(a);
	}

	port = rx_port_open(&spec);
	initStringInfo(&report);
	PG_TRY();
	{
		const char **names = palloc(sizeof(char *) * nmembers);

		for (int m = 0; m < nmembers; m++)
			names[m] = pstrdup(msg->member_names[m]);
		current_hub = rx_hub_create(port, self, nmembers, names);
		current_coordinator = msg->coordinator;

		/*
		 * The snapshot is the active one while the plan runs: PostgreSQL
		 * hands the active snapshot, not the plan's, to the parallel
		 * workers of a Gather (planner/local_gather.c), and they must read
		 * what this backend reads.
		 */
		PushActiveSnapshot(snapshot);
		qd = CreateQueryDesc(stmt, "rdma_exchange fragment",
							 GetActiveSnapshot(), InvalidSnapshot,
							 None_Receiver, bound_params(msg->extern_values),
							 NULL, msg->instrument_options);
		ExecutorStart(qd, 0);
		current_planstate = qd->planstate;

		set_exec_params(qd->estate, msg);

		ExecutorRun(qd, ForwardScanDirection, 0, true);
		rx_receive_finish_fragment(qd->planstate);
		ExecutorFinish(qd);
		PopActiveSnapshot();
		if (msg->instrument_options)
		{
			ReportContext rc = {&report, port, nmembers, NULL, false};

			(void) report_walker(qd->planstate, &rc);
		}
		ExecutorEnd(qd);
		FreeQueryDesc(qd);
		rx_hub_free(current_hub);
	}
	PG_FINALLY();
	{
		current_hub = NULL;
		current_coordinator = -1;
		current_planstate = NULL;
	}
	PG_END_TRY();
	rx_port_close(port);
	AtEOXact_GUC(true, save_nestlevel);

	return report.data;
}

/* ---------------------------------------------------------------------
 * Directly dispatched queries
 * ---------------------------------------------------------------------
 */

/*
 * Rows of a directly dispatched plan, as text, into the function's result:
 * the plan's columns, then the report column, NULL in every row of the
 * plan (see rx_execute_direct()).
 */
typedef struct TextDest
{
	DestReceiver pub;
	Tuplestorestate *store;
	TupleDesc	desc;			/* the result's: every column text */
	int			natts;			/* the plan's columns */
	int			first;			/* 1: the first column is the lookup's
								 * number in a batch (param_sets), else 0 */
	int			set;			/* ... that number */
	FmgrInfo   *out;			/* ... their output functions */
	Datum	   *values;
	bool	   *nulls;
	MemoryContext cxt;
} TextDest;

static void
text_dest_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	TextDest   *td = (TextDest *) self;

	if (td->out != NULL)
		return;					/* started before: a batch runs the plan again */
	if (td->first + typeinfo->natts + 1 != td->desc->natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a directly dispatched query returns %d columns and a report, the caller expects %d columns",
						td->first + typeinfo->natts, td->desc->natts)));
	td->natts = typeinfo->natts;
	td->out = palloc(sizeof(FmgrInfo) * typeinfo->natts);
	td->values = palloc0(sizeof(Datum) * td->desc->natts);
	td->nulls = palloc(sizeof(bool) * td->desc->natts);
	for (int i = 0; i < typeinfo->natts; i++)
	{
		Oid			func;
		bool		varlena;

		getTypeOutputInfo(TupleDescAttr(typeinfo, i)->atttypid, &func, &varlena);
		fmgr_info(func, &td->out[i]);
	}
	td->nulls[td->first + td->natts] = true;
}

static bool
text_dest_receive(TupleTableSlot *slot, DestReceiver *self)
{
	TextDest   *td = (TextDest *) self;
	MemoryContext old = MemoryContextSwitchTo(td->cxt);
	int			saved_digits = extra_float_digits;

	/*
	 * Floats go out exactly whatever the session's extra_float_digits (the
	 * coordinator renders them again with its own): a gather's rows may be
	 * partial aggregates, sums the coordinator adds up.  Only here: casts
	 * inside the plan keep the setting the coordinator shipped.
	 */
	slot_getallattrs(slot);
	extra_float_digits = 3;
	PG_TRY();
	{
		if (td->first)
		{
			td->nulls[0] = false;
			td->values[0] = CStringGetTextDatum(psprintf("%d", td->set));
		}
		for (int i = 0; i < td->natts; i++)
		{
			td->nulls[td->first + i] = slot->tts_isnull[i];
			if (!slot->tts_isnull[i])
				td->values[td->first + i] =
					CStringGetTextDatum(OutputFunctionCall(&td->out[i],
														   slot->tts_values[i]));
		}
	}
	PG_FINALLY();
	{
		extra_float_digits = saved_digits;
	}
	PG_END_TRY();
	tuplestore_putvalues(td->store, td->desc, td->values, td->nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(td->cxt);
	return true;
}

static void
text_dest_nothing(DestReceiver *self)
{
}

/*
 * rdma_exchange.execute_direct(fragment text) RETURNS SETOF record: a plan
 * with no exchange, run here: the whole plan of a query that only this
 * member can answer (planner/direct.c), or this member's part of a gather
 * of a small result (exec/receive_query.c).  Its rows go back over this
 * connection, not through the transport.  Every column comes back as text
 * (the caller's column definition list says text for each), converted
 * here with the coordinator's settings in force (DateStyle,
 * extra_float_digits and the rest travel with the message), so that the
 * coordinator's input functions read the values back as they were.  One
 * more column comes last: NULL in the plan's rows; under EXPLAIN ANALYZE
 * on the coordinator, one last row holds only it, the plan's
 * instrumentation report (as execute_fragment() returns it).
 */
Datum
rx_execute_direct(PG_FUNCTION_ARGS)
{
	char	   *message = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RxFragmentMsg *msg;
	FragmentWalk w = {0};
	TextDest	dest;
	QueryDesc  *qd;
	CachedPlan *cplan = NULL;
	ParamListInfo params;
	int			nest;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	msg = fragment_open(message, &w, &nest);
	params = bound_params(msg->extern_values);
	/* a query's text: planned with the coordinator's settings (sql_plans.c) */
	if (msg->sql != NULL)
	{
		cplan = rx_sql_plan(msg->sql, msg->extern_values, params);
		msg->stmt = linitial_node(PlannedStmt, cplan->stmt_list);
	}
	if (w.recv_ids != NIL || w.send_ids != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a directly dispatched plan may not contain an exchange")));
	for (int i = 0; i < rsinfo->setDesc->natts; i++)
		if (TupleDescAttr(rsinfo->setDesc, i)->atttypid != TEXTOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("execute_direct() returns text columns only")));

	memset(&dest, 0, sizeof(dest));
	dest.natts = -1;
	dest.pub.receiveSlot = text_dest_receive;
	dest.pub.rStartup = text_dest_startup;
	dest.pub.rShutdown = text_dest_nothing;
	dest.pub.rDestroy = text_dest_nothing;
	dest.pub.mydest = DestTuplestore;
	dest.store = rsinfo->setResult;
	dest.desc = rsinfo->setDesc;
	dest.cxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange direct row",
									 ALLOCSET_SMALL_SIZES);

	/*
	 * The transaction's cluster snapshot at REPEATABLE READ; otherwise one
	 * taken now, between distributed commits.
	 */
	PushActiveSnapshot(msg->snapshots != NIL
					   ? rx_cluster_snapshot_restore(strVal(list_nth(msg->snapshots,
																	 rx_self_member_index())),
													 w.member)
					   : rx_barrier_snapshot());
	/*
	 * Every column of the plan comes back, resjunk ones too (a sort key not
	 * in the select list): the caller's rows have them all, and its own
	 * plan drops them.  Not for a query's text (the plan is the cache's):
	 * the caller expects its columns only.
	 */
	if (cplan == NULL)
		foreach(lc, msg->stmt->planTree->targetlist)
			lfirst_node(TargetEntry, lc)->resjunk = false;
	qd = CreateQueryDesc(msg->stmt, "rdma_exchange direct query",
						 GetActiveSnapshot(), InvalidSnapshot,
						 (DestReceiver *) &dest, params,
						 NULL, msg->instrument_options);
	ExecutorStart(qd, 0);
	if (msg->param_sets == NIL)
	{
		set_exec_params(qd->estate, msg);
		ExecutorRun(qd, ForwardScanDirection, 0, true);
	}
	else
	{
		/*
		 * A batch of keyed lookups (receive_keyed.c): the plan once per set
		 * of values, rescanned in between as a nested loop rescans its
		 * inner side, each row numbered with its lookup.
		 */
		Bitmapset  *ids = NULL;

		foreach(lc, msg->param_ids)
			ids = bms_add_member(ids, lfirst_int(lc));
		dest.first = 1;
		foreach(lc, msg->param_sets)
		{
			set_exec_values(qd->estate, msg->param_ids, lfirst(lc));
			if (foreach_current_index(lc) > 0)
			{
				qd->planstate->chgParam = bms_union(qd->planstate->chgParam, ids);
				ExecutorRewind(qd);
			}
			dest.set = foreach_current_index(lc);
			ExecutorRun(qd, ForwardScanDirection, 0, true);
		}
	}
	ExecutorFinish(qd);
	if (msg->instrument_options && dest.natts >= 0)
	{
		StringInfoData report;
		ReportContext rc = {&report, NULL, msg->nmembers, NULL, false};
		int			last = dest.first + dest.natts;

		initStringInfo(&report);
		(void) report_walker(qd->planstate, &rc);
		for (int i = 0; i < last; i++)
			dest.nulls[i] = true;
		dest.values[last] = CStringGetTextDatum(report.data);
		dest.nulls[last] = false;
		tuplestore_putvalues(dest.store, dest.desc, dest.values, dest.nulls);
	}
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	if (cplan != NULL)
		ReleaseCachedPlan(cplan, CurrentResourceOwner);
	PopActiveSnapshot();
	AtEOXact_GUC(true, nest);
	return (Datum) 0;
}
