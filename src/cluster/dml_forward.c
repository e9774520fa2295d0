/*-------------------------------------------------------------------------
 *
 * dml_forward.c
 *	  UPDATE and DELETE of a distributed table, run on every member's part.
 *
 * Each member stores only its own rows, so an UPDATE or DELETE must run on
 * every member.  When every member can run the statement on its own part
 * and get the part of the answer that belongs to it, the statement is sent
 * to the others as SQL and runs here as usual:
 *
 *	- the target is the only hash-distributed table anywhere in the
 *	  statement, and every other table in it is a reference table (a
 *	  subquery over the target, or over another distributed table, would
 *	  see one member's rows only; a local table does not exist elsewhere);
 *	- no RETURNING (the other members' rows could not be returned), no WITH;
 *	- only built-in functions and operators (user-defined ones could differ
 *	  between members), no row-level security (policies stay on this
 *	  member) and no user triggers on the target (they are not copied to
 *	  the other members).
 *
 * Anything else is refused as before (dml.c), with the hint to use
 * rdma_exchange.run_on_all_nodes().  Volatile functions (random(), now())
 * are evaluated by each member for its rows, as PostgreSQL evaluates them
 * per row or per statement anyway.
 *
 * The planner hook deparses the query (with every name qualified) before
 * planning, and the SQL, with the ids of the bound parameters it uses,
 * rides with the plan in the ModifyTable's fdwPrivLists entry of the
 * target, which PostgreSQL reads only for foreign tables: it survives plan
 * caching and is there when the executor runs.  The statement goes to
 * every other member, in member index order with this member's own part in
 * its place (so that two such statements cannot deadlock across members,
 * where no deadlock detector would see it), over the member's connection
 * in the current transaction (remote_xact.c: the members commit or roll
 * back with this transaction), with the bound parameters ($1, ...) in text
 * form; their row counts are added to the command tag's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "planner/planner.h"

/* first element of the fdwPrivLists entry that carries the SQL */
#define FORWARD_MARKER "rdma_exchange: forward to every member"

typedef struct ForwardCheck
{
	int			hash_tables;	/* hash-distributed range table entries */
	bool		refused;
	Bitmapset  *params;			/* ids of the bound parameters used */
} ForwardCheck;

static bool
forward_check_walker(Node *node, ForwardCheck *fc)
{
	if (node == NULL || fc->refused)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
		{
			RxTableDist dist;

			rx_table_distribution(rte->relid, &dist);
			if (dist.method == RX_DIST_HASH)
				fc->hash_tables++;
			else if (dist.method != RX_DIST_REFERENCE)
				fc->refused = true;
			if (rte->securityQuals != NIL)
				fc->refused = true;
		}
		return false;
	}
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;

		if (q->cteList != NIL)
			fc->refused = true;
		return query_tree_walker(q, forward_check_walker, fc,
								 QTW_EXAMINE_RTES_BEFORE);
	}
	/* the cursor of WHERE CURRENT OF exists on this member only */
	if (rx_node_calls_user_routine(node) || IsA(node, CurrentOfExpr))
		fc->refused = true;
	/* other params (a sublink's, PARAM_SUBLINK) belong to the query */
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
		fc->params = bms_add_member(fc->params, ((Param *) node)->paramid);
	return expression_tree_walker(node, forward_check_walker, fc);
}

/*
 * Row-level security or user triggers on the table (not the triggers
 * rdma_exchange installs): they exist on this member only.
 */
static bool
has_local_rules(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	bool		found = false;

	if (!RelationIsValid(rel))
		return true;
	if (rel->rd_rel->relrowsecurity)
		found = true;
	for (int i = 0; !found && rel->trigdesc && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (!t->tgisinternal && strncmp(t->tgname, "zzz_rdma_exchange", 17) != 0)
			found = true;
	}
	RelationClose(rel);
	return found;
}

List *
rx_dml_forward_sql(Query *parse)
{
	RangeTblEntry *target;
	RxTableDist dist;
	ForwardCheck fc = {0, false, NULL};
	int			nest;
	char	   *sql;
	List	   *params = NIL;
	int			id = -1;

	if ((parse->commandType != CMD_UPDATE && parse->commandType != CMD_DELETE) ||
		parse->resultRelation == 0 || parse->returningList != NIL ||
		parse->hasModifyingCTE || rx_in_member_session())
		return NIL;
	target = rt_fetch(parse->resultRelation, parse->rtable);
	rx_table_distribution(target->relid, &dist);
	if (dist.method != RX_DIST_HASH)
		return NIL;

	(void) forward_check_walker((Node *) parse, &fc);
	if (fc.refused || fc.hash_tables != 1 || has_local_rules(target->relid))
		return NIL;

	/* every name qualified, whatever the members' search_path */
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	sql = pg_get_querydef(copyObject(parse), false);
	AtEOXact_GUC(true, nest);

	while ((id = bms_next_member(fc.params, id)) >= 0)
		params = lappend_int(params, id);
	return list_make3(makeString(FORWARD_MARKER), makeString(sql), params);
}

void
rx_dml_forward_attach(PlannedStmt *stmt, List *forward)
{
	ModifyTable *mt = (ModifyTable *) stmt->planTree;

	if (mt == NULL || !IsA(mt, ModifyTable) ||
		list_length(mt->resultRelations) != 1 ||
		list_length(mt->fdwPrivLists) != 1 || linitial(mt->fdwPrivLists) != NIL)
		return;
	linitial(mt->fdwPrivLists) = forward;
}

List *
rx_dml_forward_of(PlannedStmt *stmt)
{
	ModifyTable *mt = (ModifyTable *) stmt->planTree;
	List	   *priv;

	if (mt == NULL || !IsA(mt, ModifyTable) || list_length(mt->fdwPrivLists) != 1)
		return NIL;
	priv = (List *) linitial(mt->fdwPrivLists);
	if (list_length(priv) != 3 || !IsA(linitial(priv), String) ||
		strcmp(strVal(linitial(priv)), FORWARD_MARKER) != 0)
		return NIL;
	return priv;
}

/* a forwarded statement with its parameters in text form, once per execution */
struct RxForward
{
	const char *sql;
	int			nparams;
	Oid		   *types;
	const char **values;
};

RxForward *
rx_dml_forward_begin(PlannedStmt *stmt, ParamListInfo params)
{
	List	   *forward = rx_dml_forward_of(stmt);
	List	   *used;
	RxForward  *fw;
	ListCell   *lc;

	if (forward == NIL)
		return NULL;
	used = (List *) lthird(forward);
	fw = palloc0(sizeof(RxForward));
	fw->sql = strVal(lsecond(forward));
	fw->nparams = used != NIL ? llast_int(used) : 0;
	fw->types = palloc0(sizeof(Oid) * (fw->nparams + 1));
	fw->values = palloc0(sizeof(char *) * (fw->nparams + 1));

	/*
	 * The bound parameters the statement uses, as text, with their types
	 * where those are the same everywhere (built in); the members infer the
	 * others.  $n the statement does not use (PL/pgSQL numbers all its
	 * variables) are declared as text and stay NULL.
	 */
	for (int i = 0; i < fw->nparams; i++)
		fw->types[i] = TEXTOID;
	foreach(lc, used)
	{
		int			id = lfirst_int(lc);
		ParamExternData workspace;
		ParamExternData *prm;

		if (params == NULL || id > params->numParams)
			elog(ERROR, "parameter $%d of a forwarded statement has no value", id);
		prm = rx_bound_param(params, id, &workspace);
		fw->types[id - 1] = (OidIsValid(prm->ptype) && prm->ptype < FirstNormalObjectId) ?
			prm->ptype : InvalidOid;
		if (!prm->isnull && OidIsValid(prm->ptype))
		{
			Oid			out;
			bool		isvarlena;

			getTypeOutputInfo(prm->ptype, &out, &isvarlena);
			fw->values[id - 1] = OidOutputFunctionCall(out, prm->value);
		}
	}
	return fw;
}

uint64
rx_dml_forward_run(RxForward *fw, bool below_self)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	uint64		total = 0;

	for (int m = 0; m < nmembers; m++)
	{
		PGconn	   *conn;
		PGresult   *res;

		if (below_self ? m >= self : m <= self)
			continue;
		conn = rx_xact_connection(&members[m]);
		if (!PQsendQueryParams(conn, fw->sql, fw->nparams, fw->types, fw->values,
							   NULL, NULL, 0))
			rx_report_remote_error(ERROR, conn, NULL, members[m].name,
								   "could not send the statement");
		while ((res = rx_get_result(conn, members[m].name)) != NULL)
		{
			PG_TRY();
			{
				if (PQresultStatus(res) != PGRES_COMMAND_OK)
					rx_report_remote_error(ERROR, conn, res, members[m].name,
										   "running the statement on its part");
				total += strtoull(PQcmdTuples(res), NULL, 10);
			}
			PG_FINALLY();
			{
				PQclear(res);
			}
			PG_END_TRY();
		}
	}
	return total;
}
