/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *	  Coordinator side of a gather: ship the fragment, watch the members,
 *	  collect their instrumentation.
 *
 * Like a Gather launching parallel workers, a gather RECEIVE ships its
 * fragment at the first fetch: one libpq connection per member (this one
 * included, so the coordinator's query backend only runs the serial part
 * of the plan), each running rdma_exchange.execute_fragment().  Rows come
 * back through the transport; libpq carries only the fragment, errors and
 * the instrumentation.  An error on any member is raised here naming it;
 * an error or cancel here cancels every fragment (transaction callback).
 * Connections are kept for the next fragment of the session.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "executor/nodeSubplan.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/colmap.h"
#include "cluster/conn_pool.h"
#include "cluster/dispatch.h"
#include "cluster/fragment_guard.h"
#include "cluster/fragment_msg.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/settings.h"
#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "transport/transport.h"

struct RxDispatch
{
	RxReceiveState *receive;
	int			nmembers;
	RxMember   *members;
	const char *names[RX_MAX_MEMBERS];
	RxPort	   *port;
	RxHub	   *hub;
	PGconn	   *conns[RX_MAX_MEMBERS];
	bool		in_xact[RX_MAX_MEMBERS];	/* conns[m] is the member's
											 * remote transaction */
	RxSelfFragment *self_worker;	/* this member's, in a parallel worker */
	bool		done[RX_MAX_MEMBERS];
	char	   *reports[RX_MAX_MEMBERS];
};

/* ---------------------------------------------------------------------
 * Building the fragment message
 * ---------------------------------------------------------------------
 */

typedef struct FragmentScan
{
	Bitmapset  *rtis;
	List	   *index_oids;
	List	   *designs;		/* exchange id, design of each RECEIVE */
} FragmentScan;

static void
scan_fragment(Plan *plan, FragmentScan *fs)
{
	if (plan == NULL)
		return;
	switch (nodeTag(plan))
	{
		case T_IndexScan:
			fs->index_oids = list_append_unique_oid(fs->index_oids,
													((IndexScan *) plan)->indexid);
			break;
		case T_IndexOnlyScan:
			fs->index_oids = list_append_unique_oid(fs->index_oids,
													((IndexOnlyScan *) plan)->indexid);
			break;
		case T_BitmapIndexScan:
			fs->index_oids = list_append_unique_oid(fs->index_oids,
													((BitmapIndexScan *) plan)->indexid);
			break;
		case T_BitmapAnd:
			{
				ListCell   *lc;

				foreach(lc, ((BitmapAnd *) plan)->bitmapplans)
					scan_fragment(lfirst(lc), fs);
			}
			break;
		case T_BitmapOr:
			{
				ListCell   *lc;

				foreach(lc, ((BitmapOr *) plan)->bitmapplans)
					scan_fragment(lfirst(lc), fs);
			}
			break;
		case T_Append:
			{
				ListCell   *lc;

				foreach(lc, ((Append *) plan)->appendplans)
					scan_fragment(lfirst(lc), fs);
			}
			break;
		case T_SubqueryScan:
			scan_fragment(((SubqueryScan *) plan)->subplan, fs);
			break;
		case T_CustomScan:
			if (rx_is_receive(plan))
			{
				RxReceiveInfo info;

				rx_receive_info((CustomScan *) plan, &info);
				fs->designs = lappend_int(fs->designs, info.exchange_id);
				fs->designs = lappend_int(fs->designs, rx_exchange_design(&info));
			}
			break;
		default:
			break;
	}
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			fs->rtis = bms_add_member(fs->rtis, ((Scan *) plan)->scanrelid);
			break;
		default:
			break;
	}
	scan_fragment(plan->lefttree, fs);
	scan_fragment(plan->righttree, fs);
}

/* range table as the members see it: only the fragment's relations */
static List *
fragment_rtable(List *rtable, Bitmapset *rtis, RxFragmentMsg *msg)
{
	List	   *result = NIL;
	ListCell   *lc;
	int			rti = 0;

	foreach(lc, rtable)
	{
		RangeTblEntry *rte = copyObject(lfirst_node(RangeTblEntry, lc));
		char	   *relname = NULL;
		char	   *rolename = NULL;
		List	   *colnames = NIL;

		rti++;
		if (rte->rtekind == RTE_RELATION && bms_is_member(rti, rtis))
		{
			relname = rx_qualified_relname(rte->relid);
			if (OidIsValid(rte->checkAsUser))
				rolename = GetUserNameFromId(rte->checkAsUser, false);
			colnames = rx_column_names(rte->relid);
			rte->relid = InvalidOid;
		}
		else if (rte->rtekind == RTE_RELATION)
		{
			/* a relation of the serial part: the member need not have it */
			rte->rtekind = RTE_RESULT;
			rte->relid = InvalidOid;
			rte->requiredPerms = 0;
			rte->checkAsUser = InvalidOid;
			rte->selectedCols = rte->insertedCols = rte->updatedCols = NULL;
		}
		else
		{
			/* the executor does not look at these; do not ship stale OIDs */
			rte->subquery = NULL;
			rte->functions = NIL;
			rte->tablefunc = NULL;
			rte->values_lists = NIL;
		}
		rte->securityQuals = NIL;
		result = lappend(result, rte);
		msg->relnames = lappend(msg->relnames, relname ? makeString(relname) : NULL);
		msg->rolenames = lappend(msg->rolenames, rolename ? makeString(rolename) : NULL);
		msg->colnames = lappend(msg->colnames, colnames);
	}
	return result;
}

/* a parameter's value as a Const that travels in the fragment message */
static Const *
value_const(Oid type, Datum value, bool isnull)
{
	int16		typlen;
	bool		typbyval;

	get_typlenbyval(type, &typlen, &typbyval);
	if (!isnull && typlen == -1)
		value = PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
	else if (!isnull && !typbyval)
		value = datumCopy(value, typbyval, typlen);	/* lives with the Const */
	return makeConst(type, -1, InvalidOid, typlen, value, isnull, typbyval);
}

/*
 * The parameters the fragment uses: InitPlan results, and a keyed
 * lookup's values from the plan above (receive_keyed.c), as Consts, and
 * with ids their ids.  Special executor params (Gather's rescan_param, for
 * one) have no type and carry no value: they only signal rescans.
 */
static List *
exec_params(ExprContext *econtext, Plan *fragment, EState *estate, List **ids)
{
	List	   *values = NIL;
	int			paramid = -1;

	while ((paramid = bms_next_member(fragment->extParam, paramid)) >= 0)
	{
		ParamExecData *prm = &econtext->ecxt_param_exec_vals[paramid];
		Oid			type = list_nth_oid(estate->es_plannedstmt->paramExecTypes,
										paramid);

		if (!OidIsValid(type))
			continue;
		if (prm->execPlan != NULL)
			ExecSetParamPlan(prm->execPlan, econtext);
		if (ids != NULL)
			*ids = lappend_int(*ids, paramid);
		values = lappend(values, value_const(type, prm->value, prm->isnull));
	}
	return values;
}

static void
fragment_params(ExprContext *econtext, Plan *fragment, EState *estate,
				RxFragmentMsg *msg)
{
	msg->param_values = exec_params(econtext, fragment, estate, &msg->param_ids);
}

/* the values of the executor parameters plan reads, now (receive_keyed.c) */
List *
rx_exec_param_values(ExprContext *econtext, Plan *plan, EState *estate)
{
	return exec_params(econtext, plan, estate, NULL);
}

ParamExternData *
rx_bound_param(ParamListInfo params, int id, ParamExternData *workspace)
{
	if (params->paramFetch != NULL)
		return params->paramFetch(params, id, false, workspace);
	return &params->params[id - 1];
}

/*
 * The bound parameters of the statement ($1, ...), all of them: a generic
 * plan's fragment refers to them as Params, evaluated on the members.  The
 * planner let only built-in types travel (shippable.c).
 */
static void
extern_params(EState *estate, RxFragmentMsg *msg)
{
	ParamListInfo params = estate->es_param_list_info;

	if (params == NULL)
		return;
	for (int i = 1; i <= params->numParams; i++)
	{
		ParamExternData workspace;
		ParamExternData *prm = rx_bound_param(params, i, &workspace);

		if (!OidIsValid(prm->ptype))
		{
			/* an unused parameter of unknown type */
			msg->extern_values = lappend(msg->extern_values,
										 makeNullConst(INT4OID, -1, InvalidOid));
			continue;
		}
		msg->extern_values = lappend(msg->extern_values,
									 value_const(prm->ptype, prm->value, prm->isnull));
	}
}

/*
 * The coordinator's statement as pg_stat_statements shows it (its part of
 * a multi-statement string), clipped to the size pg_stat_activity keeps
 * by default.
 */
static char *
statement_text(EState *estate, PlannedStmt *top)
{
	const char *src = estate->es_sourceText;
	int			loc = top->stmt_location;
	int			len = top->stmt_len;

	if (src == NULL)
		return "";
	if (loc < 0 || loc > (int) strlen(src))
		loc = len = 0;
	if (len <= 0)
		len = strlen(src + loc);
	return pnstrdup(src + loc, pg_mbcliplen(src + loc, len, Min(len, 1024)));
}

/*
 * A query's id and token: a member runs a message once, and the transport
 * takes only datagrams that carry both.  They come from a backend-local
 * store of strong random bytes, drawn 64 ids at a time: one
 * pg_strong_random() call per query was a few per cent of a point
 * lookup's cost (OpenSSL's generator locks and reseeds per call).  Each
 * byte is used once, so the ids are as unpredictable as before.
 */
static void
random_ids(uint64 *query_id, uint64 *token)
{
	static uint64 store[128];
	static int	used = lengthof(store);

	if (used + 2 > lengthof(store))
	{
		if (!pg_strong_random(store, sizeof(store)))
			elog(ERROR, "could not generate a random query id");
		used = 0;
	}
	*query_id = store[used++];
	*token = store[used++];
}

/*
 * What every fragment message says: who and where the members are, the
 * statement's bound parameters, settings and timestamps; ...
 */
static void
message_statement(RxFragmentMsg *msg, EState *estate, RxMember *members,
				  int nmembers, int self)
{
	msg->coordinator = self;
	msg->nmembers = nmembers;
	for (int m = 0; m < nmembers; m++)
	{
		strlcpy(msg->fabric_addrs[m], members[m].fabric_addr, RX_FABRIC_ADDR_LEN);
		strlcpy(msg->member_names[m], members[m].name, NAMEDATALEN);
	}
	msg->instrument_options = estate->es_instrument;
	msg->query_text = statement_text(estate, estate->es_plannedstmt);
	extern_params(estate, msg);
	rx_ship_settings(msg);
	msg->xact_start = GetCurrentTransactionStartTimestamp();
	msg->stmt_start = GetCurrentStatementStartTimestamp();
}

/* ... and the fragment, with the range table entries and indexes it uses */
static void
message_body(RxFragmentMsg *msg, Plan *fragment, EState *estate,
			 RxMember *members, int nmembers, int self, FragmentScan *fs)
{
	PlannedStmt *top = estate->es_plannedstmt;
	PlannedStmt *stmt = makeNode(PlannedStmt);
	ListCell   *lc;

	message_statement(msg, estate, members, nmembers, self);

	scan_fragment(fragment, fs);
	msg->designs = fs->designs;
	stmt->commandType = CMD_SELECT;
	stmt->canSetTag = true;
	stmt->planTree = fragment;
	stmt->rtable = fragment_rtable(top->rtable, fs->rtis, msg);
	/* fragments never contain SubPlans (the planner checks); keep positions */
	foreach(lc, top->subplans)
		stmt->subplans = lappend(stmt->subplans, NULL);
	stmt->paramExecTypes = top->paramExecTypes;
	stmt->stmt_location = -1;
	stmt->queryId = top->queryId;
	msg->stmt = stmt;

	foreach(lc, fs->index_oids)
	{
		msg->index_oids = lappend(msg->index_oids,
								  makeString(psprintf("%u", lfirst_oid(lc))));
		msg->index_names = lappend(msg->index_names,
								   makeString(rx_qualified_relname(lfirst_oid(lc))));
	}
}

/*
 * What every member published of its transport as the setting guc
 * reported it to our connection to it (shared.h): where this member's own
 * value (own) is empty, nothing, as the others' are then too.  out holds
 * nmembers strings of stride bytes.
 */
static void
member_reports(RxDispatch *d, int self, const char *guc, const char *own,
			   char *out, Size stride)
{
	strlcpy(out + self * stride, own, stride);
	if (own[0] == '\0')
		return;
	for (int m = 0; m < d->nmembers; m++)
	{
		const char *value;

		if (m == self)
			continue;
		value = PQparameterStatus(d->conns[m], guc);
		strlcpy(out + m * stride, value ? value : "", stride);
	}
}

/*
 * Where this member's datagram endpoint is found by its raw name only
 * (verbs' UD), every member's name (rdma_exchange.datagram_name);
 * otherwise none, and the members find each other by their fabric
 * addresses.  Every member's pool registration on its reliable endpoint
 * (rdma_exchange.pool_registration), which the workers check RDMA
 * operations against.
 */
static void
transport_reports(RxDispatch *d, int self, RxPortSpec *spec)
{
	member_reports(d, self, "rdma_exchange.datagram_name", rx_datagram_name(),
				   spec->dgram_names[0], RX_FABRIC_NAME_LEN);
	member_reports(d, self, "rdma_exchange.pool_registration",
				   rx_pool_registration(), spec->pool_regs[0], RX_POOL_REG_LEN);
}

static char *
build_message(RxDispatch *d, RxReceiveState *r, uint64 query_id, uint64 token,
			  int self, int gather_design, List *snapshots,
			  RxPortSpec *spec)
{
	Plan	   *fragment = outerPlan(r->css.ss.ps.plan);
	RxFragmentMsg msg;
	FragmentScan fs = {0};

	memset(&msg, 0, sizeof(msg));
	msg.query_id = query_id;
	msg.token = token;
	/* every exchange's design, chosen here once for all members */
	fs.designs = list_make2_int(r->info.exchange_id, gather_design);
	message_body(&msg, fragment, r->css.ss.ps.state, d->members, d->nmembers,
				 self, &fs);
	memcpy(msg.dgram_names, spec->dgram_names, sizeof(msg.dgram_names));
	memcpy(msg.pool_regs, spec->pool_regs, sizeof(msg.pool_regs));
	fragment_params(r->css.ss.ps.ps_ExprContext, fragment, r->css.ss.ps.state,
					&msg);
	msg.snapshots = snapshots;
	rx_fragment_bind(&msg);
	return rx_fragment_encode(&msg);
}

/*
 * A directly dispatched query (exec/direct.c): the whole plan, for one
 * member, with no exchange.  snapshots as for a fragment, or NIL: the
 * member takes its own (rx_barrier_snapshot()).  With econtext, the
 * values of the executor parameters the plan reads (plan->extParam) go
 * with it.
 */
char *
rx_direct_message(Plan *plan, EState *estate, List *snapshots,
				  ExprContext *econtext, List *param_sets)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	RxFragmentMsg msg;
	FragmentScan fs = {0};

	memset(&msg, 0, sizeof(msg));
	random_ids(&msg.query_id, &msg.token);
	message_body(&msg, plan, estate, members, nmembers,
				 rx_self_member_index(), &fs);
	if (econtext != NULL)
		fragment_params(econtext, plan, estate, &msg);
	msg.param_sets = param_sets;
	msg.snapshots = snapshots;
	rx_fragment_bind(&msg);
	return rx_fragment_encode(&msg);
}

/*
 * A directly dispatched query that goes as SQL (planner/direct_sql.c): the
 * member plans it.  The statement's bound values go with it, and after
 * them key when the planner made a constant key a parameter of its own.
 */
char *
rx_direct_sql_message(char *sql, EState *estate, List *snapshots, Const *key)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	RxFragmentMsg msg;

	memset(&msg, 0, sizeof(msg));
	random_ids(&msg.query_id, &msg.token);
	message_statement(&msg, estate, members, nmembers, rx_self_member_index());
	msg.sql = sql;
	if (key != NULL)
		msg.extern_values = lappend(msg.extern_values, key);
	msg.snapshots = snapshots;
	rx_fragment_bind(&msg);
	return rx_fragment_encode(&msg);
}

/* ---------------------------------------------------------------------
 * Running
 * ---------------------------------------------------------------------
 */

RxDispatch *
rx_dispatch_start(RxReceiveState *r)
{
	RxDispatch *d = palloc0(sizeof(RxDispatch));
	RxPortSpec spec;
	int			self;
	uint64		query_id;
	uint64		token;
	char	   *message;
	bool		in_xact;

	d->receive = r;
	d->nmembers = rx_get_members(&d->members);
	self = rx_self_member_index();
	if (d->nmembers == 0 || self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of an rdma_exchange cluster"),
				 errhint("Add every member, this one included, with rdma_exchange.add_node().")));
	in_xact = rx_xact_changed_before(r->css.ss.ps.state->es_snapshot->curcid);
	random_ids(&query_id, &token);

	memset(&spec, 0, sizeof(spec));
	spec.query_id = query_id;
	spec.token = token;
	spec.self = self;
	spec.nmembers = d->nmembers;
	for (int m = 0; m < d->nmembers; m++)
	{
		strlcpy(spec.fabric_addrs[m], d->members[m].fabric_addr, RX_FABRIC_ADDR_LEN);
		strlcpy(spec.member_names[m], d->members[m].name, NAMEDATALEN);
		d->names[m] = d->members[m].name;
	}
	spec.nrecv = 1;
	spec.recv_exchange_ids[0] = r->info.exchange_id;
	spec.recv_designs[0] = rx_exchange_design(&r->info);
	spec.nsend = 0;

	/*
	 * A connection to every member first (they tell each member's datagram
	 * name).  After this transaction wrote, each member's fragment runs
	 * where those rows are visible: in the member's remote transaction of
	 * this transaction, and here in a parallel worker of this backend
	 * (fragment_worker.c).
	 */
	for (int m = 0; m < d->nmembers; m++)
	{
		if (in_xact && m == self)
			continue;
		d->conns[m] = in_xact ? rx_xact_fragment_connection(&d->members[m]) : NULL;
		d->in_xact[m] = (d->conns[m] != NULL);
		if (d->conns[m] == NULL)
			d->conns[m] = rx_pool_get(&d->members[m]);
	}
	transport_reports(d, self, &spec);

	/* one consistent cluster state for every fragment of the query */
	message = build_message(d, r, query_id, token, self, spec.recv_designs[0],
							rx_consistent_reads
							? rx_cluster_snapshot(r->css.ss.ps.state) : NIL,
							&spec);

	/* the port first: rows may arrive as soon as the first member starts */
	d->port = rx_port_open(&spec);
	d->hub = rx_hub_create(d->port, self, d->nmembers, d->names);

	for (int m = 0; m < d->nmembers; m++)
	{
		const char *values[1] = {message};

		if (in_xact && m == self)
		{
			d->self_worker = rx_self_fragment_start(message, d->members[m].name);
			continue;
		}
		if (!PQsendQueryParams(d->conns[m],
							   "SELECT rdma_exchange.execute_fragment($1)",
							   1, NULL, values, NULL, NULL, 0))
			rx_report_remote_error(ERROR, d->conns[m], NULL, d->members[m].name,
								   psprintf("could not send the fragment of exchange %d",
											r->info.exchange_id));
	}
	return d;
}

bool
rx_dispatch_in_xact(RxDispatch *d)
{
	if (d->self_worker != NULL)
		return true;
	for (int m = 0; m < d->nmembers; m++)
		if (d->in_xact[m])
			return true;
	return false;
}

RxHub *
rx_dispatch_hub(RxDispatch *d)
{
	return d->hub;
}

/* take the result of a finished fragment; errors name the member */
static void
dispatch_take_result(RxDispatch *d, int m, PGresult *res)
{
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		PG_TRY();
		{
			rx_report_remote_error(ERROR, d->conns[m], res, d->members[m].name,
								   psprintf("fragment of exchange %d failed",
											d->receive->info.exchange_id));
		}
		PG_FINALLY();
		{
			PQclear(res);
		}
		PG_END_TRY();
	}
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		d->reports[m] = pstrdup(PQgetvalue(res, 0, 0));
	PQclear(res);
}

/*
 * Non-blocking look at every member's connection: a fragment that failed
 * (or a member that went away) raises its error now, not at the end.
 */
void
rx_dispatch_check(RxDispatch *d)
{
	for (int m = 0; m < d->nmembers; m++)
	{
		PGconn	   *conn = d->conns[m];

		if (d->done[m] || conn == NULL)
			continue;
		if (!PQconsumeInput(conn))
			rx_report_remote_error(ERROR, conn, NULL, d->members[m].name,
								   psprintf("lost the connection running the fragment of exchange %d",
											d->receive->info.exchange_id));
		while (!PQisBusy(conn))
		{
			PGresult   *res = PQgetResult(conn);

			if (res == NULL)
			{
				d->done[m] = true;
				break;
			}
			dispatch_take_result(d, m, res);
		}
	}
}

static bool
collect_plan_states(PlanState *ps, void *context)
{
	List	  **l = (List **) context;

	if (ps == NULL)
		return false;
	*l = lappend(*l, ps);
	return planstate_tree_walker(ps, collect_plan_states, context);
}

/*
 * A "P" line (fragment.c's report_processes()): what one of the member's
 * processes gave its Gather below the SHUFFLE, added up over the
 * fragment's runs
 */
static void
merge_process(RxExchangeNodeStats *st, int member, const char *line,
			  MemoryContext cxt)
{
	int			process;
	double		rows,
				ms;
	ListCell   *lc;
	RxProcessStats *p;
	MemoryContext old;

	if (sscanf(line, "P %*d %d %lf %lf", &process, &rows, &ms) != 3 ||
		process < 0)
		return;
	foreach(lc, st->processes)
	{
		p = lfirst(lc);
		if (p->member == member && p->process == process)
		{
			p->rows += rows;
			p->ms += ms;
			return;
		}
	}
	old = MemoryContextSwitchTo(cxt);
	p = palloc(sizeof(RxProcessStats));
	p->member = member;
	p->process = process;
	p->rows = rows;
	p->ms = ms;
	st->processes = lappend(st->processes, p);
	MemoryContextSwitchTo(old);
}

/* the lines of one member's report into the coordinator's plan states */
static void
merge_report(const RxMember *members, int nmembers, int member,
			 const char *report, List *states)
{
	const char *line = report;

	while (line && *line)
	{
		int			id;
		char		kind;

		if (sscanf(line, "%c %d", &kind, &id) == 2)
		{
			ListCell   *lc;

			foreach(lc, states)
			{
				PlanState  *ps = lfirst(lc);

				if (ps->plan->plan_node_id != id)
					continue;
				if (kind == 'N' && ps->instrument)
				{
					Instrumentation add;
					double		startup,
								total,
								ntuples,
								ntuples2,
								nloops,
								nf1,
								nf2;

					memset(&add, 0, sizeof(add));
					if (sscanf(line, "N %*d %lf %lf %lf %lf %lf %lf %lf",
							   &startup, &total, &ntuples, &ntuples2, &nloops,
							   &nf1, &nf2) != 7)
						break;
					add.startup = startup;
					add.total = total;
					add.ntuples = ntuples;
					add.ntuples2 = ntuples2;
					add.nloops = nloops;
					add.nfiltered1 = nf1;
					add.nfiltered2 = nf2;
					InstrAggNode(ps->instrument, &add);
					if (ps->worker_instrument == NULL)
					{
						ps->worker_instrument =
							MemoryContextAllocZero(ps->state->es_query_cxt,
												   offsetof(WorkerInstrumentation, instrument) +
												   nmembers * sizeof(Instrumentation));
						ps->worker_instrument->num_workers = nmembers;
					}
					InstrAggNode(&ps->worker_instrument->instrument[member], &add);
				}
				else if (kind == 'W' &&
						 (IsA(ps, GatherState) || IsA(ps, GatherMergeState)))
				{
					int			launched;

					/* Workers Launched: the members' together */
					if (sscanf(line, "W %*d %d", &launched) != 1)
						break;
					if (IsA(ps, GatherState))
						((GatherState *) ps)->nworkers_launched += launched;
					else
						((GatherMergeState *) ps)->nworkers_launched += launched;
				}
				else if (kind == 'P' && rx_is_shuffle(ps->plan))
					merge_process(&((RxShuffleState *) ps)->stats, member, line,
								  ps->state->es_query_cxt);
				else if (kind == 'X' &&
						 (rx_is_shuffle(ps->plan) || rx_is_receive(ps->plan)))
				{
					RxExchangeNodeStats *st = rx_is_shuffle(ps->plan)
						? &((RxShuffleState *) ps)->stats
						: &((RxReceiveState *) ps)->stats;
					RxMemberStats *ms = &st->member[member];
					unsigned long long v[8];

					if (sscanf(line, "X %*d %llu %llu %llu %lf %llu %llu %llu %lf %llu %llu",
							   &v[0], &v[1], &v[2], &ms->sent.wait_ms,
							   &v[3], &v[4], &v[5], &ms->recv.wait_ms, &v[6], &v[7]) != 10)
						break;
					ms->sent.rows = v[0];
					ms->sent.bytes = v[1];
					ms->sent.msgs = v[2];
					ms->recv.rows = v[3];
					ms->recv.bytes = v[4];
					ms->recv.msgs = v[5];
					ms->retransmits = v[6];
					ms->peak_buffers = v[7];
					st->valid = true;
					st->nmembers = nmembers;
					for (int m = 0; m < nmembers; m++)
						strlcpy(st->member_names[m], members[m].name, NAMEDATALEN);
				}
				break;
			}
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
}

/*
 * A member's report of a plan run by execute_direct() into the plan states
 * under root: the same plan, so the same plan node ids
 */
void
rx_merge_direct_report(PlanState *root, int member, const char *report)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	List	   *states = NIL;

	(void) collect_plan_states(root, &states);
	merge_report(members, nmembers, member, report, states);
}

void
rx_dispatch_finish(RxDispatch *d, bool stop)
{
	RxReceiveState *r = d->receive;
	List	   *states = NIL;
	RxHubCounters counters[RX_MAX_MEMBERS];
	RxStreamStats tstats[RX_MAX_MEMBERS];

	if (stop)
		rx_request_stop(d->port, r->info.exchange_id);

	for (int m = 0; m < d->nmembers; m++)
	{
		PGresult   *res;

		if (d->done[m])
			continue;
		if (d->conns[m] == NULL)
		{
			d->reports[m] = rx_self_fragment_finish(d->self_worker);
			d->self_worker = NULL;
			d->done[m] = true;
			continue;
		}
		while ((res = rx_get_result(d->conns[m], d->members[m].name)) != NULL)
			dispatch_take_result(d, m, res);
		d->done[m] = true;
	}

	/* the coordinator's own view of the exchange, per source member */
	rx_hub_counters(d->hub, r->info.exchange_id, false, counters);
	rx_exchange_stats(d->port, r->info.exchange_id, false, tstats);
	r->stats.valid = true;
	r->stats.nmembers = d->nmembers;
	for (int m = 0; m < d->nmembers; m++)
	{
		strlcpy(r->stats.member_names[m], d->members[m].name, NAMEDATALEN);
		r->stats.member[m].recv = counters[m];
		r->stats.member[m].peak_buffers = tstats[m].peak;
	}

	/* every member's instrumentation into the fragment's plan states */
	(void) collect_plan_states(outerPlanState(r), &states);
	for (int m = 0; m < d->nmembers; m++)
		if (d->reports[m])
			merge_report(d->members, d->nmembers, m, d->reports[m], states);

	for (int m = 0; m < d->nmembers; m++)
	{
		if (d->in_xact[m])
			rx_xact_fragment_done(d->conns[m]);
		else if (d->conns[m] != NULL)
			rx_pool_put(d->conns[m], true);
	}
	rx_hub_free(d->hub);
	rx_port_close(d->port);
	d->port = NULL;
}

