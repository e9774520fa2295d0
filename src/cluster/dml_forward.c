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
 *	- every other hash-distributed table in the statement (the target
 *	  again in a subquery included) is co-located with the target: joined
 *	  to it on the distribution columns (see find_colocated()), so that a
 *	  member's rows of it only ever meet that member's target rows; other
 *	  tables are reference tables (a local table does not exist
 *	  elsewhere);
 *	- no WITH (RETURNING runs on every member, dml_returning.c);
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
 * form; their row counts are added to the command tag's.  A statement
 * whose WHERE clause compares the target's distribution column with a
 * constant or a bound parameter goes to that value's owner only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "catalog/pg_trigger.h"
#include "commands/explain.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "tcop/tcopprot.h"
#include "nodes/params.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/rowcopy.h"
#include "planner/planner.h"

/* first element of the fdwPrivLists entry that carries the SQL */
#define FORWARD_MARKER "rdma_exchange: forward to every member"

/*
 * What a statement reads, as far as running it on every member's part
 * goes (dml.h).  Walks into subqueries and CTEs.
 */
static bool
shape_walker(Node *node, RxStatementShape *shape)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		/* a view is expanded already: its entry is there for permissions */
		if (rte->rtekind == RTE_RELATION && rte->relkind != RELKIND_VIEW)
		{
			RxTableDist dist;

			rx_table_distribution(rte->relid, &dist);
			if (dist.method == RX_DIST_HASH)
				shape->hash_tables++;
			else if (dist.method != RX_DIST_REFERENCE)
				shape->local_tables++;
			if (rte->securityQuals != NIL)
				shape->row_security = true;
		}
		return false;
	}
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;

		if (q->cteList != NIL)
			shape->ctes = true;
		return query_tree_walker(q, shape_walker, shape,
								 QTW_EXAMINE_RTES_BEFORE);
	}
	/* the cursor of WHERE CURRENT OF exists on this member only */
	if (rx_node_calls_user_routine(node) || IsA(node, CurrentOfExpr))
		shape->local_routines = true;
	/* other params (a sublink's, PARAM_SUBLINK) belong to the query */
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
		shape->params = bms_add_member(shape->params, ((Param *) node)->paramid);
	return expression_tree_walker(node, shape_walker, shape);
}

void
rx_statement_shape(Node *node, RxStatementShape *shape)
{
	memset(shape, 0, sizeof(RxStatementShape));
	(void) shape_walker(node, shape);
}

/* something in it exists on this member only */
static bool
shape_refused(RxStatementShape *shape)
{
	return shape->local_tables > 0 || shape->row_security || shape->ctes ||
		shape->local_routines;
}

/*
 * User triggers on the table (not the triggers rdma_exchange installs):
 * they exist on this member only.
 */
bool
rx_has_user_triggers(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	bool		found = false;

	if (!RelationIsValid(rel))
		return true;
	for (int i = 0; !found && rel->trigdesc && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (!t->tgisinternal && strncmp(t->tgname, RX_TRIGGER_PREFIX,
										strlen(RX_TRIGGER_PREFIX)) != 0)
			found = true;
	}
	RelationClose(rel);
	return found;
}

/* row-level security or user triggers: they stay on this member */
static bool
has_local_rules(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	bool		rls;

	if (!RelationIsValid(rel))
		return true;
	rls = rel->rd_rel->relrowsecurity;
	RelationClose(rel);
	return rls || rx_has_user_triggers(relid);
}

/*
 * Joins a member can run on its own part.  Another hash-distributed table
 * in the statement is co-located with the target when a row of it can
 * only match target rows on the same member: its distribution column is
 * equal to the target's under an operator of their (shared) hash
 * operator family, which puts equal values on the same member.  The
 * shapes recognised, each a top-level AND of the WHERE clause:
 *
 *	UPDATE t SET ... FROM o WHERE o.d = t.d				(and DELETE ... USING)
 *	DELETE FROM t WHERE t.d IN (SELECT o.d FROM o ...)
 *	DELETE FROM t WHERE EXISTS (SELECT ... FROM o WHERE o.d = t.d ...)
 *
 * where the subqueries read no hash-distributed table but o.
 */
typedef struct Colocation
{
	Query	   *top;
	RxTableDist target;
	Bitmapset  *joined;			/* co-located tables of the top query */
	int			sublinks;		/* subqueries over one co-located table */
} Colocation;

/* a Var naming the distribution column of a hash table; its dist */
static bool
dist_column(Query *q, Node *node, int levelsup, RxTableDist *dist)
{
	Var		   *var = (Var *) rx_strip_relabel((Expr *) node);
	RangeTblEntry *rte;

	if (!IsA(var, Var) || var->varlevelsup != levelsup ||
		var->varno > list_length(q->rtable))
		return false;
	rte = rt_fetch(var->varno, q->rtable);
	if (rte->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(rte->relid, dist);
	return dist->method == RX_DIST_HASH && dist->distcol == var->varattno;
}

/*
 * a = b, a the target's distribution column, b a co-located table's in
 * query inner; b's range table index, or 0
 */
static Index
colocating_equality(Colocation *c, Node *node, Query *inner, int target_levelsup,
					Node *inner_side)
{
	OpExpr	   *op = (OpExpr *) node;
	RxTableDist other;
	RxTableDist target;
	Node	   *l,
			   *r;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return 0;
	l = linitial(op->args);
	r = lsecond(op->args);
	if (inner_side != NULL)
	{
		/* IN (SELECT ...): the left side, then the sublink's output */
		if (!IsA(rx_strip_relabel((Expr *) r), Param))
			return 0;
		r = inner_side;
	}
	/*
	 * either order, but IN's sides are fixed: the left one is the outer
	 * query's, the other the subquery's output, which can look like a
	 * column of the outer query to dist_column() (same varno, level 0)
	 */
	if (inner_side == NULL &&
		dist_column(c->top, r, target_levelsup, &target) &&
		dist_column(inner, l, 0, &other))
	{
		Node	   *swap = l;

		l = r;
		r = swap;
	}
	else if (!(dist_column(c->top, l, target_levelsup, &target) &&
			   dist_column(inner, r, 0, &other)))
		return 0;
	if (((Var *) rx_strip_relabel((Expr *) l))->varno != c->top->resultRelation ||
		other.hash_opfamily != c->target.hash_opfamily ||
		!op_in_opfamily(op->opno, c->target.hash_opfamily))
		return 0;
	return ((Var *) rx_strip_relabel((Expr *) r))->varno;
}

static int
count_hash_tables(Node *node)
{
	RxStatementShape shape;

	rx_statement_shape(node, &shape);
	return shape.hash_tables;
}

/* a subquery of the WHERE clause over one table co-located with the target */
static bool
colocated_sublink(Colocation *c, SubLink *sl)
{
	Query	   *sub = (Query *) sl->subselect;

	if (!IsA(sub, Query) || count_hash_tables((Node *) sub) != 1)
		return false;
	if (sl->subLinkType == ANY_SUBLINK)
	{
		TargetEntry *tle = linitial_node(TargetEntry, sub->targetList);

		/* each member would cut or number its own rows */
		if (sub->limitCount || sub->limitOffset || sub->hasWindowFuncs ||
			sub->groupingSets || sub->setOperations)
			return false;
		return list_length(sub->targetList) == 1 &&
			colocating_equality(c, sl->testexpr, sub, 0, (Node *) tle->expr) != 0;
	}
	if (sl->subLinkType == EXISTS_SUBLINK)
	{
		ListCell   *lc;

		foreach(lc, make_ands_implicit((Expr *) sub->jointree->quals))
			if (colocating_equality(c, lfirst(lc), sub, 1, NULL) != 0)
				return true;
	}
	return false;
}

static void
find_colocated(Colocation *c)
{
	List	   *conjuncts = make_ands_implicit((Expr *) c->top->jointree->quals);
	ListCell   *lc;

	foreach(lc, conjuncts)
	{
		Node	   *qual = lfirst(lc);
		Index		joined = colocating_equality(c, qual, c->top, 0, NULL);

		if (joined != 0 && joined != c->top->resultRelation)
			c->joined = bms_add_member(c->joined, joined);
		else if (IsA(qual, SubLink) && colocated_sublink(c, (SubLink *) qual))
			c->sublinks++;
	}
}

/*
 * Subqueries computed first.  An uncorrelated subquery of the WHERE clause
 * over distributed tables, not co-located with the target (DELETE FROM t
 * WHERE k IN (SELECT o.c FROM o ...), k = (SELECT max(..) ...), EXISTS
 * (SELECT ...)), has one result for the whole statement: it runs once, as
 * a query of its own, when the statement starts, and every member, this
 * one included, gets its result as a parameter instead of the subquery
 * (dml_subqueries.c).  That covers subqueries over the target too (the
 * job queue's UPDATE t ... WHERE id = (SELECT id FROM t ... LIMIT 1 FOR
 * UPDATE SKIP LOCKED) RETURNING ...: its row lock is the subquery's, taken
 * on the row's member in this transaction, row_locks.c), since no member
 * has changed a row yet when it runs, and subqueries with bound
 * parameters, which run with the statement's.
 */
typedef struct ShipContext
{
	Colocation *colocation;
	int			next_param;		/* id of the next parameter added */
	List	   *subqueries;		/* (kind, SQL, type, id) per parameter added */
} ShipContext;

char *
rx_deparse_query(Query *query)
{
	int			nest = NewGUCNestLevel();
	int			transmission;
	char	   *sql;

	/*
	 * every name qualified, whatever the members' search_path; constants
	 * in forms every DateStyle and IntervalStyle reads alike (the plan may
	 * run after the session changed them)
	 */
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	transmission = rx_transmission_begin();
	sql = pg_get_querydef(copyObject(query), false);
	rx_transmission_end(transmission);
	AtEOXact_GUC(true, nest);
	return sql;
}

static Param *
shipped_param(ShipContext *sc, char kind, Query *sub, Oid type)
{
	Param	   *p = makeNode(Param);

	p->paramkind = PARAM_EXTERN;
	p->paramid = sc->next_param++;
	p->paramtype = type;
	p->paramtypmod = -1;
	p->paramcollid = InvalidOid;
	p->location = -1;
	sc->subqueries = lappend(sc->subqueries,
							 list_make4(makeInteger(kind), makeString(rx_deparse_query(sub)),
										makeInteger(type), makeInteger(p->paramid)));
	return p;
}

static Node *
ship_subqueries_mutator(Node *node, ShipContext *sc)
{
	SubLink    *sl = (SubLink *) node;
	Query	   *sub;

	if (node == NULL)
		return NULL;
	if (!IsA(node, SubLink))
		return expression_tree_mutator(node, ship_subqueries_mutator, (void *) sc);
	sub = (Query *) sl->subselect;
	if (count_hash_tables((Node *) sub) == 0 ||	/* every member can run it */
		contain_vars_of_level((Node *) sub, 1) ||
		colocated_sublink(sc->colocation, sl))
		return node;
	switch (sl->subLinkType)
	{
		case EXISTS_SUBLINK:
			return (Node *) shipped_param(sc, 'e', sub, BOOLOID);
		case EXPR_SUBLINK:
			{
				Oid			type = exprType((Node *) linitial_node(TargetEntry, sub->targetList)->expr);

				if (type == UNKNOWNOID || type == RECORDOID)
					return node;
				return (Node *) shipped_param(sc, 'x', sub, type);
			}
		case ANY_SUBLINK:
		case ALL_SUBLINK:
			{
				OpExpr	   *op = (OpExpr *) sl->testexpr;
				Oid			elem = exprType((Node *) linitial_node(TargetEntry, sub->targetList)->expr);
				Oid			array = get_array_type(elem);
				ScalarArrayOpExpr *saop;

				/* lhs op (subquery's column): lhs op ANY/ALL (array) */
				if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
					!IsA(rx_strip_relabel(lsecond(op->args)), Param) ||
					!OidIsValid(array))
					return node;
				saop = makeNode(ScalarArrayOpExpr);
				saop->opno = op->opno;
				saop->opfuncid = op->opfuncid;
				saop->useOr = (sl->subLinkType == ANY_SUBLINK);
				saop->inputcollid = op->inputcollid;
				saop->args = list_make2(linitial(op->args),
										shipped_param(sc, saop->useOr ? 'a' : 'l',
													  sub, array));
				saop->location = -1;
				return (Node *) saop;
			}
		default:
			break;
	}
	return node;
}

/*
 * distribution column = a constant, a bound parameter or a stable
 * expression of them (rx_known_at_start()), of a type the column's hash
 * family hashes alike, a conjunct of the top query's WHERE clause: the
 * only member that can have rows of the table relid in the statement
 */
Expr *
rx_owner_key(Query *parse, Oid relid)
{
	RxTableDist dist;
	Index		rti = 0;
	ListCell   *lc;

	foreach(lc, parse->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION && rte->relid == relid)
			rti = foreach_current_index(lc) + 1;
	}
	if (rti == 0 || parse->jointree->quals == NULL)
		return NULL;
	rx_table_distribution(relid, &dist);
	foreach(lc, make_ands_implicit((Expr *) copyObject(parse->jointree->quals)))
	{
		Expr	   *value = rx_distcol_equality(lfirst(lc), rti, &dist);

		if (value != NULL)
			value = rx_strip_relabel(value);
		if (value != NULL &&
			(IsA(value, Const) || rx_known_at_start(value)) &&
			rx_hashes_alike(dist.hash_opfamily, dist.distcol_type,
							exprType((Node *) value)))
			return value;
	}
	return NULL;
}

/* the member owning the value of such a key, with these bound parameters */
static int
key_owner(Expr *key, Oid relid, ParamListInfo params, int nmembers)
{
	ParamExternData workspace;
	ParamExternData *prm;
	int			id;

	if (IsA(key, Const))
		return rx_member_of_key(relid, ((Const *) key)->consttype,
								((Const *) key)->constvalue,
								((Const *) key)->constisnull, nmembers);
	if (!IsA(key, Param))
	{
		/* computed now, as the member will compute it */
		EState	   *estate = CreateExecutorState();
		ExprState  *state;
		Datum		value;
		bool		isnull;
		int			owner;

		estate->es_param_list_info = params;
		state = ExecPrepareExpr(key, estate);
		value = ExecEvalExprSwitchContext(state, GetPerTupleExprContext(estate),
										  &isnull);
		owner = rx_member_of_key(relid, exprType((Node *) key), value, isnull,
								 nmembers);
		FreeExecutorState(estate);
		return owner;
	}
	id = ((Param *) key)->paramid;
	if (params == NULL || id > params->numParams)
		elog(ERROR, "parameter $%d of a forwarded statement has no value", id);
	prm = rx_bound_param(params, id, &workspace);
	return rx_member_of_key(relid, ((Param *) key)->paramtype, prm->value,
							prm->isnull, nmembers);
}

List *
rx_dml_forward_sql(Query *parse)
{
	RangeTblEntry *target;
	RxTableDist dist;
	RxStatementShape fc;
	Colocation c = {parse, {0}, NULL, 0};
	ShipContext sc = {&c, 0, NIL};
	Query	   *members;
	char	   *sql;
	List	   *params = NIL;
	int			id = -1;
	Expr	   *key;

	if ((parse->commandType != CMD_UPDATE && parse->commandType != CMD_DELETE) ||
		parse->resultRelation == 0 || parse->hasModifyingCTE || rx_in_member_session())
		return NIL;
	target = rt_fetch(parse->resultRelation, parse->rtable);
	rx_table_distribution(target->relid, &dist);
	if (dist.method != RX_DIST_HASH)
		return NIL;

	/* what the members run: subqueries computed here first */
	members = rx_with_as_subquery(parse);
	rx_statement_shape((Node *) members, &fc);
	if (shape_refused(&fc) || has_local_rules(target->relid))
		return NIL;
	c.target = dist;
	sc.next_param = bms_is_empty(fc.params) ? 1 : bms_prev_member(fc.params, -1) + 1;
	members = copyObject(members);
	members->jointree->quals = ship_subqueries_mutator(members->jointree->quals, &sc);
	rx_statement_shape((Node *) members, &fc);
	if (fc.hash_tables > 1)
	{
		/* the target, and every other one co-located with it */
		c.top = members;
		find_colocated(&c);
		if (fc.hash_tables != 1 + bms_num_members(c.joined) + c.sublinks)
			return NIL;
	}
	/* this member runs what the members run, with the same results */
	*parse = *(Query *) copyObject(members);

	sql = rx_deparse_query(members);
	while ((id = bms_next_member(fc.params, id)) >= 0)
		params = lappend_int(params, id);

	/* WHERE dist_column = value: only the value's owner has rows to change */
	key = rx_owner_key(parse, target->relid);
	return list_make5(makeString(FORWARD_MARKER), makeString(sql), params,
					  sc.subqueries, copyObject(key));
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
	if (list_length(priv) != 5 || !IsA(linitial(priv), String) ||
		strcmp(strVal(linitial(priv)), FORWARD_MARKER) != 0)
		return NIL;
	return priv;
}

/* a forwarded statement with its parameters in text form, once per execution */
/* while EXPLAIN ANALYZE runs an UPDATE or DELETE: rows per member */
static int64 *explained = NULL;	/* -1: the member got no statement */
static bool explained_ran = false;	/* some were forwarded */

RxForward *
rx_dml_forward_begin(PlannedStmt *stmt, ParamListInfo params)
{
	List	   *forward = rx_dml_forward_of(stmt);
	RxForward  *fw;
	Expr	   *key;

	if (forward == NIL)
		return NULL;
	fw = rx_forward_prepare(strVal(lsecond(forward)), (List *) lthird(forward),
							params);
	key = (Expr *) list_nth(forward, 4);
	if (key != NULL)
	{
		RxMember   *members;
		int			nmembers = rx_get_members(&members);
		ModifyTable *mt = (ModifyTable *) stmt->planTree;
		Index		rti = linitial_int(mt->resultRelations);

		fw->owner = key_owner(key, rt_fetch(rti, stmt->rtable)->relid, params,
							  nmembers);
	}
	return fw;
}

RxForward *
rx_forward_prepare(const char *sql, List *used, ParamListInfo params)
{
	RxForward  *fw;
	ListCell   *lc;
	int			transmission;

	fw = palloc0(sizeof(RxForward));
	fw->sql = sql;
	fw->owner = -1;
	fw->nparams = used != NIL ? llast_int(used) : 0;
	fw->types = palloc0(sizeof(Oid) * (fw->nparams + 1));
	fw->values = palloc0(sizeof(char *) * (fw->nparams + 1));

	/*
	 * The bound parameters the statement uses, as text, with their types
	 * where those are the same everywhere (built in); the members infer the
	 * others.  $n the statement does not use (PL/pgSQL numbers all its
	 * variables) are declared as text and stay NULL.  In forms that lose
	 * nothing and that every DateStyle and IntervalStyle reads alike (the
	 * members read them with this session's): with extra_float_digits at 0
	 * a float8 0.30000000000000004 went as 0.3.
	 */
	for (int i = 0; i < fw->nparams; i++)
		fw->types[i] = TEXTOID;
	transmission = rx_transmission_begin();
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
	rx_transmission_end(transmission);
	return fw;
}

uint64
rx_dml_forward_run(RxForward *fw, bool below_self, RxReturning *returning)
{
	RxMember   *members;
	int			nmembers = rx_get_members(&members);
	int			self = rx_self_member_index();
	uint64		total = 0;

	for (int m = 0; m < nmembers; m++)
	{
		PGconn	   *conn;
		PGresult   *res;
		uint64		rows = 0;

		if ((below_self ? m >= self : m <= self) ||
			(fw->owner >= 0 && m != fw->owner))
			continue;
		/*
		 * A statement with bound parameters (a prepared statement's, a
		 * PL/pgSQL one's) is likely to come again with other values:
		 * prepared there, it is parsed and planned there once.  Texts with
		 * the values written in are parsed each time, as a client's; so
		 * are those with RETURNING, whose row type a prepared statement
		 * must keep (an ALTER COLUMN ... TYPE later would fail it).
		 */
		conn = rx_xact_send_params(&members[m], fw->sql, fw->nparams, fw->types,
								   (const char *const *) fw->values,
								   fw->nparams > 0 && returning == NULL, true,
								   returning != NULL && rx_returning_binary(returning));
		while ((res = rx_xact_get_result(conn, members[m].name)) != NULL)
		{
			PG_TRY();
			{
				if (PQresultStatus(res) != PGRES_COMMAND_OK &&
					PQresultStatus(res) != PGRES_TUPLES_OK)
					rx_report_remote_error(ERROR, conn, res, members[m].name,
										   "running the statement on its part");
				rows += strtoull(PQcmdTuples(res), NULL, 10);
				if (returning != NULL)
					rx_returning_add(returning, res);
			}
			PG_FINALLY();
			{
				PQclear(res);
			}
			PG_END_TRY();
		}
		total += rows;
		if (explained != NULL)
		{
			explained[m] = Max(explained[m], 0) + rows;
			explained_ran = true;
		}
	}
	return total;
}

/* ---------------------------------------------------------------------
 * EXPLAIN ANALYZE
 * ---------------------------------------------------------------------
 */

/*
 * EXPLAIN ANALYZE of a forwarded UPDATE or DELETE shows the plan that ran
 * here, on this member's part; the rows the other members changed are
 * added below it, per member the statement went to (only the key's owner
 * for a statement by key).  PostgreSQL has no hook to add lines to a
 * plan's output, so this hook does what ExplainOneQuery() does for a
 * query (plan it, ExplainOnePlan()) and then adds them: in text format
 * after the plan, in the other formats as an object after the query's.
 * (The counts cover every forwarded statement the EXPLAIN ran, those of
 * functions it called included.)
 */
static ExplainOneQuery_hook_type prev_explain_one_query = NULL;

/*
 * EXPLAINs being planned: a lookup that would go to its owner as SQL is
 * planned here instead (planner/direct_sql.c), so that EXPLAIN shows the
 * plan the owner runs, and EXPLAIN ANALYZE what it did
 */
static int	explaining = 0;

bool
rx_explaining(void)
{
	return explaining > 0;
}

/* ExplainOneQuery() for a query, as PostgreSQL's explain.c does it */
static void
explain_planned(Query *query, int cursorOptions, IntoClause *into,
				ExplainState *es, const char *queryString,
				ParamListInfo params, QueryEnvironment *queryEnv)
{
	PlannedStmt *plan;
	instr_time	planstart;
	instr_time	planduration;
	BufferUsage bufusage_start;
	BufferUsage bufusage;

	if (es->buffers)
		bufusage_start = pgBufferUsage;
	INSTR_TIME_SET_CURRENT(planstart);
	plan = pg_plan_query(query, queryString, cursorOptions, params);
	INSTR_TIME_SET_CURRENT(planduration);
	INSTR_TIME_SUBTRACT(planduration, planstart);
	if (es->buffers)
	{
		memset(&bufusage, 0, sizeof(BufferUsage));
		BufferUsageAccumDiff(&bufusage, &pgBufferUsage, &bufusage_start);
	}
	ExplainOnePlan(plan, into, es, queryString, params, queryEnv,
				   &planduration, es->buffers ? &bufusage : NULL);
}

static void
rx_explain_one_query(Query *query, int cursorOptions, IntoClause *into,
					 ExplainState *es, const char *queryString,
					 ParamListInfo params, QueryEnvironment *queryEnv)
{
	RxMember   *members;
	int			nmembers = 0;
	int64	   *saved = explained;
	bool		saved_ran = explained_ran;
	int64	   *counts = NULL;
	bool		ran;

	if (es->analyze && (query->commandType == CMD_UPDATE ||
						query->commandType == CMD_DELETE) &&
		rx_extension_loaded())
		nmembers = rx_get_members(&members);
	if (nmembers > 1)
	{
		counts = palloc(sizeof(int64) * nmembers);
		for (int m = 0; m < nmembers; m++)
			counts[m] = -1;
		explained = counts;
		explained_ran = false;
	}
	explaining++;
	PG_TRY();
	{
		if (prev_explain_one_query)
			prev_explain_one_query(query, cursorOptions, into, es, queryString,
								   params, queryEnv);
		else
			explain_planned(query, cursorOptions, into, es, queryString,
							params, queryEnv);
	}
	PG_FINALLY();
	{
		explaining--;
		ran = explained_ran;
		explained = saved;
		explained_ran = saved_ran;
	}
	PG_END_TRY();
	if (counts == NULL || !ran)
		return;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoString(es->str, "Rows Changed on Other Members:\n");
		for (int m = 0; m < nmembers; m++)
			if (counts[m] >= 0)
				appendStringInfo(es->str, "  Member %d: " INT64_FORMAT "\n", m, counts[m]);
		return;
	}
	/* an object of its own after the query's */
	ExplainOpenGroup("Other Members", NULL, true, es);
	ExplainOpenGroup("Members", "Rows Changed on Other Members", false, es);
	for (int m = 0; m < nmembers; m++)
	{
		if (counts[m] < 0)
			continue;
		ExplainOpenGroup("Member", NULL, true, es);
		ExplainPropertyInteger("Member", NULL, m, es);
		ExplainPropertyInteger("Rows Changed", NULL, counts[m], es);
		ExplainCloseGroup("Member", NULL, true, es);
	}
	ExplainCloseGroup("Members", "Rows Changed on Other Members", false, es);
	ExplainCloseGroup("Other Members", NULL, true, es);
}

void
rx_dml_forward_init(void)
{
	prev_explain_one_query = ExplainOneQuery_hook;
	ExplainOneQuery_hook = rx_explain_one_query;
}
