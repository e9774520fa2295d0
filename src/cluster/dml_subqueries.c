/*-------------------------------------------------------------------------
 *
 * dml_subqueries.c
 *	  The subqueries of a forwarded UPDATE or DELETE that run before it
 *	  (dml_forward.c): the job queue's WITH form turned into such a
 *	  subquery, and their results computed when the statement starts, for
 *	  every member.
 *
 * An uncorrelated subquery of the statement's WHERE clause over
 * distributed tables that are not co-located with the target has one
 * result for the whole statement.  The planner hook puts a parameter in
 * its place, in the SQL the members run and in the query this member
 * plans (dml_forward.c); when the statement starts (dml.c's ExecutorStart
 * hook) the subquery runs here once, as a query of its own with the
 * statement's bound parameters, and its result becomes that parameter's
 * value everywhere.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "planner/planner.h"

/*
 * The job queue's other form: WITH j AS (SELECT id FROM t ... FOR UPDATE
 * SKIP LOCKED) UPDATE t SET ... FROM j WHERE t.id = j.id RETURNING t.*
 * (DELETE FROM t USING j ...).  When the WITH query has one column and is
 * read only there, joined by that equality alone, the statement is the
 * same as ... WHERE t.id = ANY (SELECT id ...): each target row matching
 * any of its rows changes once.  Returns that copy, a subquery to compute
 * first (ship_subqueries_mutator(), dml_forward.c), or parse as it is.
 */
Query *
rx_with_as_subquery(Query *parse)
{
	RangeTblRef *ref;
	RangeTblEntry *rte;
	CommonTableExpr *cte;
	Query	   *q;
	List	   *conjuncts;
	ListCell   *lc;

	/* FROM: the target (PostgreSQL lists it there) and the WITH query */
	if (list_length(parse->cteList) != 1 || parse->hasRecursive ||
		list_length(parse->jointree->fromlist) != 2 ||
		!IsA(linitial(parse->jointree->fromlist), RangeTblRef) ||
		!IsA(lsecond(parse->jointree->fromlist), RangeTblRef))
		return parse;
	ref = linitial(parse->jointree->fromlist);
	if (ref->rtindex == parse->resultRelation)
		ref = lsecond(parse->jointree->fromlist);
	else if (((RangeTblRef *) lsecond(parse->jointree->fromlist))->rtindex !=
			 parse->resultRelation)
		return parse;
	cte = linitial_node(CommonTableExpr, parse->cteList);
	rte = rt_fetch(ref->rtindex, parse->rtable);
	if (rte->rtekind != RTE_CTE || rte->ctelevelsup != 0 ||
		strcmp(rte->ctename, cte->ctename) != 0 || cte->cterefcount != 1 ||
		!IsA(cte->ctequery, Query) ||
		((Query *) cte->ctequery)->commandType != CMD_SELECT ||
		list_length(cte->ctecolnames) != 1)
		return parse;

	q = copyObject(parse);
	conjuncts = make_ands_implicit((Expr *) q->jointree->quals);
	foreach(lc, conjuncts)
	{
		OpExpr	   *op = lfirst(lc);
		Node	   *lhs;
		Var		   *rhs;
		Oid			opno;
		OpExpr	   *test;
		SubLink    *sl;
		Param	   *p;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
			op->opresulttype != BOOLOID)
			continue;
		lhs = linitial(op->args);
		rhs = (Var *) rx_strip_relabel(lsecond(op->args));
		opno = op->opno;
		if (IsA(rx_strip_relabel((Expr *) lhs), Var) &&
			((Var *) rx_strip_relabel((Expr *) lhs))->varno == ref->rtindex)
		{
			/* j.id = t.id */
			lhs = lsecond(op->args);
			rhs = (Var *) rx_strip_relabel(linitial(op->args));
			opno = get_commutator(op->opno);
		}
		if (!IsA(rhs, Var) || rhs->varno != ref->rtindex || rhs->varattno != 1 ||
			rhs->varlevelsup != 0 || !OidIsValid(opno) ||
			rangeTableEntry_used(lhs, ref->rtindex, 0))
			continue;

		/* t.id = ANY (the WITH query), its one reference gone */
		conjuncts = foreach_delete_current(conjuncts, lc);
		q->cteList = NIL;
		q->jointree->fromlist = list_make1(makeNode(RangeTblRef));
		((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex = q->resultRelation;
		q->jointree->quals = (Node *) make_ands_explicit(conjuncts);
		if (rangeTableEntry_used((Node *) q, ref->rtindex, 0))
			return parse;
		rt_fetch(ref->rtindex, q->rtable)->rtekind = RTE_RESULT;

		p = makeNode(Param);
		p->paramkind = PARAM_SUBLINK;
		p->paramid = 1;
		p->paramtype = rhs->vartype;
		p->paramtypmod = rhs->vartypmod;
		p->paramcollid = rhs->varcollid;
		p->location = -1;
		test = (OpExpr *) make_opclause(opno, BOOLOID, false, (Expr *) lhs,
										(Expr *) p, InvalidOid, op->inputcollid);
		set_opfuncid(test);
		sl = makeNode(SubLink);
		sl->subLinkType = ANY_SUBLINK;
		sl->testexpr = (Node *) test;
		sl->subselect = copyObject(cte->ctequery);
		sl->location = -1;
		q->jointree->quals = (Node *) make_and_qual(q->jointree->quals, (Node *) sl);
		q->hasSubLinks = true;
		return q;
	}
	return parse;
}

/*
 * The result of a subquery computed first (ship_subqueries_mutator(), dml_forward.c),
 * into *prm: an array of its rows for IN/NOT IN, ANY and ALL (empty for
 * no rows, which keeps NOT IN's answer), its one value, or whether it has
 * rows.  It runs here as a query of its own, with the statement's bound
 * parameters, as written: a FOR UPDATE in it locks the rows it returns
 * on their members (row_locks.c) as it would inside the statement.
 */
static void
compute_subquery(List *sub, ParamListInfo params, ParamExternData *prm)
{
	char		kind = intVal(linitial(sub));
	Oid			type = intVal(lthird(sub));
	int			nargs = params != NULL ? params->numParams : 0;
	Oid		   *types = palloc(sizeof(Oid) * (nargs + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nargs + 1));
	char	   *nulls = palloc(sizeof(char) * (nargs + 1));
	MemoryContext caller = CurrentMemoryContext;
	SPIPlanPtr	plan;
	int			ret;

	for (int i = 0; i < nargs; i++)
	{
		ParamExternData workspace;
		ParamExternData *p = rx_bound_param(params, i + 1, &workspace);

		types[i] = OidIsValid(p->ptype) ? p->ptype : TEXTOID;
		values[i] = p->value;
		nulls[i] = (p->isnull || !OidIsValid(p->ptype)) ? 'n' : ' ';
	}
	prm->ptype = type;
	prm->pflags = PARAM_FLAG_CONST;
	prm->isnull = false;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(strVal(lsecond(sub)), nargs, types);
	if (plan == NULL)
		elog(ERROR, "could not prepare a subquery of a forwarded statement: %s",
			 SPI_result_code_string(SPI_result));
	/* as PostgreSQL evaluates them: EXISTS stops at a row, a value at two */
	ret = SPI_execute_plan(plan, values, nulls, false,
						   kind == 'e' ? 1 : kind == 'x' ? 2 : 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "subquery of a forwarded statement did not run: %s",
			 SPI_result_code_string(ret));
	switch (kind)
	{
		case 'e':
			prm->value = BoolGetDatum(SPI_processed > 0);
			break;
		case 'x':
			if (SPI_processed > 1)
				ereport(ERROR,
						(errcode(ERRCODE_CARDINALITY_VIOLATION),
						 errmsg("more than one row returned by a subquery used as an expression")));
			prm->isnull = true;
			if (SPI_processed == 1)
			{
				int16		len;
				bool		byval;
				Datum		value = SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 1,
												  &prm->isnull);

				get_typlenbyval(type, &len, &byval);
				if (!prm->isnull)
					prm->value = SPI_datumTransfer(value, byval, len);
			}
			break;
		default:
			{
				Oid			elem = get_element_type(type);
				ArrayBuildState *astate = initArrayResult(elem, caller, false);

				for (uint64 i = 0; i < SPI_processed; i++)
				{
					bool		isnull;
					Datum		value = SPI_getbinval(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc, 1,
													  &isnull);

					accumArrayResult(astate, value, isnull, elem, caller);
				}
				prm->value = makeArrayResult(astate, caller);
			}
			break;
	}
	SPI_finish();
}

/*
 * The bound parameters a forwarded UPDATE or DELETE runs with: params,
 * and the results of its subqueries computed first (compute; otherwise,
 * for EXPLAIN, NULLs) under the ids that replaced them, here and on every
 * member.  params itself when there are none.
 */
ParamListInfo
rx_dml_forward_params(PlannedStmt *stmt, ParamListInfo params, bool compute)
{
	List	   *forward = rx_dml_forward_of(stmt);
	List	   *computed = forward != NIL ? (List *) lfourth(forward) : NIL;
	int			n = params != NULL ? params->numParams : 0;
	ParamListInfo out;
	ListCell   *lc;

	if (computed == NIL)
		return params;
	foreach(lc, computed)
		n = Max(n, intVal(lfourth((List *) lfirst(lc))));
	out = makeParamList(n);
	for (int i = 0; i < n; i++)
	{
		ParamExternData workspace;

		out->params[i].isnull = true;
		out->params[i].ptype = InvalidOid;
		if (params != NULL && i < params->numParams)
			out->params[i] = *rx_bound_param(params, i + 1, &workspace);
		out->params[i].pflags = PARAM_FLAG_CONST;
	}
	foreach(lc, computed)
	{
		List	   *sub = lfirst(lc);
		ParamExternData *prm = &out->params[intVal(lfourth(sub)) - 1];

		prm->ptype = intVal(lthird(sub));
		prm->isnull = true;
		if (compute)
			compute_subquery(sub, params, prm);
	}
	return out;
}
