/*-------------------------------------------------------------------------
 *
 * exchange.c
 *	  Building SHUFFLE and RECEIVE plan nodes and reading them back.
 *
 * Both are CustomScans with scanrelid 0 whose scan tuple is the child's
 * output: custom_scan_tlist holds one OUTER_VAR Var per child column and
 * the node's own targetlist refers to those through INDEX_VAR.  The child
 * is the plan's lefttree (not custom_plans), so that EXPLAIN, deparsing of
 * the parents' Vars and parameter-change propagation treat it like the
 * child of any other node, and a fragment is serialized only once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pg_list.h"

#include "exec/exchange.h"
#include "transport/transport.h"
#include "exec/exchange_state.h"

extern CustomScanMethods rx_shuffle_plan_methods;
extern CustomScanMethods rx_receive_plan_methods;

/* a CustomScan passing every column of child through */
static CustomScan *
make_passthrough(Plan *child, const CustomScanMethods *methods)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	List	   *tlist = NIL;
	ListCell   *lc;

	foreach(lc, child->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Expr	   *expr = tle->expr;
		Var		   *outer;
		Var		   *index;

		outer = makeVar(OUTER_VAR, tle->resno, exprType((Node *) expr),
						exprTypmod((Node *) expr), exprCollation((Node *) expr), 0);
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) outer, tle->resno,
											 tle->resname, tle->resjunk));
		index = makeVar(INDEX_VAR, tle->resno, outer->vartype,
						outer->vartypmod, outer->varcollid, 0);
		tlist = lappend(tlist,
						makeTargetEntry((Expr *) index, tle->resno,
										tle->resname, tle->resjunk));
	}

	cscan->scan.plan.startup_cost = child->startup_cost;
	cscan->scan.plan.total_cost = child->total_cost;
	cscan->scan.plan.plan_rows = child->plan_rows;
	cscan->scan.plan.plan_width = child->plan_width;
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.lefttree = child;
	cscan->scan.plan.extParam = bms_copy(child->extParam);
	cscan->scan.plan.allParam = bms_copy(child->allParam);
	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->methods = methods;
	return cscan;
}

CustomScan *
rx_make_shuffle(Plan *child, int exchange_id, RxRoute route,
				int single_sender, List *hash_exprs, List *hash_funcs,
				List *collations)
{
	CustomScan *cscan = make_passthrough(child, &rx_shuffle_plan_methods);

	cscan->custom_private = list_make5(makeInteger(exchange_id),
									   makeInteger(route),
									   makeInteger(single_sender),
									   hash_funcs, collations);
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(-1));
	cscan->custom_exprs = hash_exprs;
	return cscan;
}

void
rx_shuffle_set_bound(CustomScan *shuffle, int tuples_needed)
{
	intVal(list_nth(shuffle->custom_private, 5)) = tuples_needed;
}

CustomScan *
rx_make_receive(Plan *child, int exchange_id, RxReceiveKind kind,
				bool materialize, bool fallback)
{
	CustomScan *cscan = make_passthrough(child, &rx_receive_plan_methods);

	cscan->custom_private = list_make4(makeInteger(exchange_id),
									   makeInteger(kind),
									   makeInteger(materialize),
									   makeInteger(fallback));
	/* 4-7: merge keys, 8-11: lookup keys, 12-14: keyed lookups */
	for (int i = 0; i < 11; i++)
		cscan->custom_private = lappend(cscan->custom_private, NIL);
	/* 15: leader only */
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(0));
	return cscan;
}

void
rx_receive_set_merge(CustomScan *receive, int nkeys, AttrNumber *cols,
					 Oid *ops, Oid *collations, bool *nulls_first)
{
	List	   *lcols = NIL,
			   *lops = NIL,
			   *lcolls = NIL,
			   *lnulls = NIL;

	for (int i = 0; i < nkeys; i++)
	{
		lcols = lappend_int(lcols, cols[i]);
		lops = lappend_oid(lops, ops[i]);
		lcolls = lappend_oid(lcolls, collations[i]);
		lnulls = lappend_int(lnulls, nulls_first[i]);
	}
	list_nth_cell(receive->custom_private, 4)->ptr_value = lcols;
	list_nth_cell(receive->custom_private, 5)->ptr_value = lops;
	list_nth_cell(receive->custom_private, 6)->ptr_value = lcolls;
	list_nth_cell(receive->custom_private, 7)->ptr_value = lnulls;
}

void
rx_receive_set_lookup(CustomScan *receive, List *cols, List *col_hash,
					  List *param_hash, List *collations, List *param_exprs)
{
	list_nth_cell(receive->custom_private, 8)->ptr_value = cols;
	list_nth_cell(receive->custom_private, 9)->ptr_value = col_hash;
	list_nth_cell(receive->custom_private, 10)->ptr_value = param_hash;
	list_nth_cell(receive->custom_private, 11)->ptr_value = collations;
	receive->custom_exprs = param_exprs;
}

void
rx_receive_set_keyed(CustomScan *receive, Plan *keyed, Expr *value, Oid relid,
					 int remote_max)
{
	receive->custom_plans = list_make1(keyed);
	list_nth_cell(receive->custom_private, 12)->ptr_value = value;
	list_nth_cell(receive->custom_private, 13)->ptr_value =
		list_make1_oid(relid);
	list_nth_cell(receive->custom_private, 14)->ptr_value =
		list_make1_int(remote_max);
}

void
rx_receive_set_leader_only(CustomScan *receive)
{
	intVal(list_nth(receive->custom_private, 15)) = 1;
}

bool
rx_is_shuffle(Plan *plan)
{
	return plan && IsA(plan, CustomScan) &&
		((CustomScan *) plan)->methods == &rx_shuffle_plan_methods;
}

bool
rx_is_receive(Plan *plan)
{
	return plan && IsA(plan, CustomScan) &&
		((CustomScan *) plan)->methods == &rx_receive_plan_methods;
}

void
rx_shuffle_info(CustomScan *cscan, RxShuffleInfo *info)
{
	List	   *p = cscan->custom_private;

	info->exchange_id = intVal(linitial(p));
	info->route = (RxRoute) intVal(lsecond(p));
	info->single_sender = intVal(lthird(p));
	info->hash_funcs = (List *) lfourth(p);
	info->collations = (List *) list_nth(p, 4);
	info->tuples_needed = intVal(list_nth(p, 5));
}

void
rx_receive_info(CustomScan *cscan, RxReceiveInfo *info)
{
	List	   *p = cscan->custom_private;
	List	   *cols = (List *) list_nth(p, 4);
	List	   *ops = (List *) list_nth(p, 5);
	List	   *colls = (List *) list_nth(p, 6);
	List	   *nulls = (List *) list_nth(p, 7);
	int			i = 0;
	ListCell   *a,
			   *b,
			   *c,
			   *d;

	info->exchange_id = intVal(linitial(p));
	info->kind = (RxReceiveKind) intVal(lsecond(p));
	info->materialize = intVal(lthird(p)) != 0;
	info->fallback = intVal(lfourth(p)) != 0;
	info->nsortkeys = list_length(cols);
	info->sort_cols = palloc(sizeof(AttrNumber) * (info->nsortkeys + 1));
	info->sort_ops = palloc(sizeof(Oid) * (info->nsortkeys + 1));
	info->sort_collations = palloc(sizeof(Oid) * (info->nsortkeys + 1));
	info->sort_nulls_first = palloc(sizeof(bool) * (info->nsortkeys + 1));
	forfour(a, cols, b, ops, c, colls, d, nulls)
	{
		info->sort_cols[i] = lfirst_int(a);
		info->sort_ops[i] = lfirst_oid(b);
		info->sort_collations[i] = lfirst_oid(c);
		info->sort_nulls_first[i] = lfirst_int(d) != 0;
		i++;
	}

	cols = (List *) list_nth(p, 8);
	info->nlookup = list_length(cols);
	info->lookup_cols = palloc(sizeof(AttrNumber) * (info->nlookup + 1));
	info->lookup_col_hash = palloc(sizeof(Oid) * (info->nlookup + 1));
	info->lookup_param_hash = palloc(sizeof(Oid) * (info->nlookup + 1));
	info->lookup_collations = palloc(sizeof(Oid) * (info->nlookup + 1));
	i = 0;
	forfour(a, cols, b, (List *) list_nth(p, 9), c, (List *) list_nth(p, 10),
			d, (List *) list_nth(p, 11))
	{
		info->lookup_cols[i] = lfirst_int(a);
		info->lookup_col_hash[i] = lfirst_oid(b);
		info->lookup_param_hash[i] = lfirst_oid(c);
		info->lookup_collations[i] = lfirst_oid(d);
		i++;
	}
	info->keyed_value = (Expr *) list_nth(p, 12);
	info->keyed_relid = info->keyed_value
		? linitial_oid((List *) list_nth(p, 13)) : InvalidOid;
	info->keyed_remote_max = info->keyed_value
		? linitial_int((List *) list_nth(p, 14)) : 0;
	info->leader_only = intVal(list_nth(p, 15)) != 0;
}

/*
 * Per-member counters in EXPLAIN ANALYZE: one line per member in text
 * format, a "Member Counters" group in the structured formats (RECEIVE
 * already has a "Members" property: the number of members).
 */
void
rx_explain_member_stats(RxExchangeNodeStats *stats, bool send, bool recv,
						ExplainState *es)
{
	if (!stats->valid)
		return;
	ExplainOpenGroup("Member Counters", "Member Counters", false, es);
	for (int m = 0; m < stats->nmembers; m++)
	{
		RxMemberStats *ms = &stats->member[m];

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			StringInfoData line;

			initStringInfo(&line);
			appendStringInfo(&line, "member %d (%s):", m, stats->member_names[m]);
			if (send)
			{
				appendStringInfo(&line, " sent %llu rows, %llu bytes, %llu messages",
								 (unsigned long long) ms->sent.rows,
								 (unsigned long long) ms->sent.bytes,
								 (unsigned long long) ms->sent.msgs);
				appendStringInfo(&line, ", %llu retransmits",
								 (unsigned long long) ms->retransmits);
				if (es->timing)
					appendStringInfo(&line, ", credit wait %.3f ms", ms->sent.wait_ms);
			}
			if (recv)
			{
				appendStringInfo(&line, "%s received %llu rows, %llu bytes, %llu messages",
								 send ? ";" : "",
								 (unsigned long long) ms->recv.rows,
								 (unsigned long long) ms->recv.bytes,
								 (unsigned long long) ms->recv.msgs);
				if (es->timing)
					appendStringInfo(&line, ", data wait %.3f ms", ms->recv.wait_ms);
			}
			appendStringInfo(&line, ", peak %llu buffers",
							 (unsigned long long) ms->peak_buffers);
			ExplainPropertyText("Member", line.data + strlen("member "), es);
			pfree(line.data);
		}
		else
		{
			ExplainOpenGroup("Member", NULL, true, es);
			ExplainPropertyInteger("Member Index", NULL, m, es);
			ExplainPropertyText("Member Name", stats->member_names[m], es);
			if (send)
			{
				ExplainPropertyUInteger("Rows Sent", NULL, ms->sent.rows, es);
				ExplainPropertyUInteger("Bytes Sent", NULL, ms->sent.bytes, es);
				ExplainPropertyUInteger("Messages Sent", NULL, ms->sent.msgs, es);
				ExplainPropertyUInteger("Retransmits", NULL, ms->retransmits, es);
				if (es->timing)
					ExplainPropertyFloat("Credit Wait", "ms", ms->sent.wait_ms, 3, es);
			}
			if (recv)
			{
				ExplainPropertyUInteger("Rows Received", NULL, ms->recv.rows, es);
				ExplainPropertyUInteger("Bytes Received", NULL, ms->recv.bytes, es);
				ExplainPropertyUInteger("Messages Received", NULL, ms->recv.msgs, es);
				if (es->timing)
					ExplainPropertyFloat("Data Wait", "ms", ms->recv.wait_ms, 3, es);
			}
			ExplainPropertyUInteger("Peak Buffers", NULL, ms->peak_buffers, es);
			ExplainCloseGroup("Member", NULL, true, es);
		}
	}
	ExplainCloseGroup("Member Counters", "Member Counters", false, es);
}

/*
 * EXPLAIN ANALYZE VERBOSE on a SHUFFLE over a member's Gather: what the
 * member's own backend (the Gather's "leader") and each of its parallel
 * workers gave that Gather, per member.  PostgreSQL's "Worker n" lines on
 * the nodes below count the members, each with its processes together.
 */
void
rx_explain_member_processes(RxExchangeNodeStats *stats, ExplainState *es)
{
	int			nmembers = 0,
				nprocesses = 0;
	ListCell   *lc;

	if (stats->processes == NIL)
		return;
	foreach(lc, stats->processes)
	{
		RxProcessStats *p = lfirst(lc);

		nmembers = Max(nmembers, p->member + 1);
		nprocesses = Max(nprocesses, p->process + 1);
	}
	ExplainOpenGroup("Member Processes", "Member Processes", false, es);
	for (int m = 0; m < nmembers; m++)
	{
		StringInfoData line;
		bool		any = false;

		initStringInfo(&line);
		appendStringInfo(&line, "member %d (%s):", m,
						 stats->valid ? stats->member_names[m] : "?");
		for (int n = 0; n < nprocesses; n++)
		{
			RxProcessStats *p = NULL;

			foreach(lc, stats->processes)
			{
				p = lfirst(lc);
				if (p->member == m && p->process == n)
					break;
				p = NULL;
			}
			if (p == NULL)
				continue;
			any = true;
			if (es->format == EXPLAIN_FORMAT_TEXT)
			{
				if (n == 0)
					appendStringInfoString(&line, " leader");
				else
					appendStringInfo(&line, ", worker %d", n - 1);
				appendStringInfo(&line, " rows=%.0f", p->rows);
				if (es->timing)
					appendStringInfo(&line, " time=%.3f ms", p->ms);
				continue;
			}
			ExplainOpenGroup("Process", NULL, true, es);
			ExplainPropertyInteger("Member Index", NULL, m, es);
			ExplainPropertyText("Process", n == 0 ? "leader" :
								psprintf("worker %d", n - 1), es);
			ExplainPropertyFloat("Rows", NULL, p->rows, 0, es);
			if (es->timing)
				ExplainPropertyFloat("Time", "ms", p->ms, 3, es);
			ExplainCloseGroup("Process", NULL, true, es);
		}
		if (es->format == EXPLAIN_FORMAT_TEXT && any)
			ExplainPropertyText("Processes", line.data, es);
		pfree(line.data);
	}
	ExplainCloseGroup("Member Processes", "Member Processes", false, es);
}

void
rx_exec_init(void)
{
	rx_shuffle_register();
	rx_receive_register();
	rx_receive_query_init();
	rx_receive_keyed_init();
	rx_lookahead_init();
	rx_portal_init();
}

/*
 * ExecInitCustomScan builds the node's scan slot as virtual and compiles
 * projection and qual for that, and parents compile their expressions for
 * the slot type we report: a virtual slot needs no deforming step, so they
 * would read stale tts_values.  Our rows come in minimal-tuple slots, or
 * straight from the child in whatever slot it uses (PostgreSQL 15 has no
 * CustomScanState.slotOps), so declare the type as varying and compile the
 * node's own expressions again.  Called at the start of BeginCustomScan.
 */
void
rx_exchange_slots_vary(CustomScanState *node)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	node->ss.ps.scanopsfixed = false;
	ExecAssignScanProjectionInfoWithVarno(&node->ss,
										  cscan->custom_scan_tlist != NIL ?
										  INDEX_VAR : cscan->scan.scanrelid);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
}

/* an ordered merge needs an ordered stream: see rx_design_choose() */
int
rx_exchange_design(const RxReceiveInfo *info)
{
	return rx_design_choose(info->nsortkeys > 0);
}
