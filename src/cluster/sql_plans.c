/*-------------------------------------------------------------------------
 *
 * sql_plans.c
 *	  A member's plans for the directly dispatched queries that come as SQL
 *	  (planner/direct_sql.c): PostgreSQL's plan cache, kept per session.
 *
 * The same lookup comes again and again with another key, which the
 * coordinator made a parameter.  So its text is parsed and analyzed once
 * per session of the coordinator's pool, and PostgreSQL's plan cache plans
 * it: custom plans for the first executions, then a generic one when that
 * is no worse, planned again when a table, index or function it uses
 * changes (the cache's own invalidation).  The plan is made as this member
 * would make it for its own rows: the planner hook leaves it local
 * (rx_planning_sql()), since the coordinator sent it here because only
 * this member's rows can answer it.  At most MAX_SQL_PLANS texts are kept
 * per session; past that, the least recently used one goes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "nodes/nodeFuncs.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/resowner.h"

#include "cluster/sql_plans.h"

#define MAX_SQL_PLANS 64

typedef struct SqlPlan
{
	uint32		hash;			/* of the text */
	char	   *sql;			/* the query's text (in CacheMemoryContext) */
	Oid		   *types;			/* its parameters' types */
	int			ntypes;
	CachedPlanSource *source;
	uint64		used;			/* when last used */
} SqlPlan;

static SqlPlan plans[MAX_SQL_PLANS];
static int	nplans = 0;
static uint64 uses = 0;
static bool planning = false;

bool
rx_planning_sql(void)
{
	return planning;
}

static CachedPlanSource *
make_source(const char *sql, Oid *types, int ntypes)
{
	List	   *raw = pg_parse_query(sql);
	RawStmt    *rs;
	CachedPlanSource *source;
	List	   *querytrees;

	if (list_length(raw) != 1 ||
		!IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a directly dispatched query must be one SELECT")));
	rs = linitial_node(RawStmt, raw);
	source = CreateCachedPlan(rs, sql, CMDTAG_SELECT);
	querytrees = pg_analyze_and_rewrite_fixedparams(rs, sql, types, ntypes, NULL);
	CompleteCachedPlan(source, querytrees, NULL, types, ntypes, NULL, NULL,
					   CURSOR_OPT_PARALLEL_OK, true);
	SaveCachedPlan(source);
	return source;
}

/* the cache's entry for sql with parameters of these types, made if need be */
static SqlPlan *
lookup(const char *sql, Oid *types, int ntypes)
{
	uint32		hash = hash_bytes((const unsigned char *) sql, strlen(sql));
	SqlPlan    *p;
	int			oldest = 0;

	for (int i = 0; i < nplans; i++)
	{
		p = &plans[i];
		if (p->hash == hash && p->ntypes == ntypes &&
			strcmp(p->sql, sql) == 0 &&
			memcmp(p->types, types, sizeof(Oid) * ntypes) == 0)
			return p;
		if (p->used < plans[oldest].used)
			oldest = i;
	}

	if (nplans == MAX_SQL_PLANS)
	{
		p = &plans[oldest];
		DropCachedPlan(p->source);
		pfree(p->sql);
		if (p->types != NULL)
			pfree(p->types);
		plans[oldest] = plans[--nplans];
	}
	p = &plans[nplans];
	memset(p, 0, sizeof(SqlPlan));
	p->source = make_source(sql, types, ntypes);
	p->hash = hash;
	p->sql = MemoryContextStrdup(CacheMemoryContext, sql);
	if (ntypes > 0)
	{
		p->types = MemoryContextAlloc(CacheMemoryContext, sizeof(Oid) * ntypes);
		memcpy(p->types, types, sizeof(Oid) * ntypes);
	}
	p->ntypes = ntypes;
	nplans++;
	return p;
}

/*
 * The plan of sql for these parameters (Consts of their types and values),
 * held by the current resource owner: release it with ReleaseCachedPlan()
 * once the plan has run, or it goes with the transaction.
 */
CachedPlan *
rx_sql_plan(const char *sql, List *params, ParamListInfo bound)
{
	int			ntypes = list_length(params);
	Oid		   *types = palloc(sizeof(Oid) * (ntypes + 1));
	SqlPlan    *p;
	CachedPlan *plan;
	ListCell   *lc;

	foreach(lc, params)
		types[foreach_current_index(lc)] = exprType(lfirst(lc));
	planning = true;
	PG_TRY();
	{
		p = lookup(sql, types, ntypes);
		p->used = ++uses;
		plan = GetCachedPlan(p->source, bound, CurrentResourceOwner, NULL);
	}
	PG_FINALLY();
	{
		planning = false;
	}
	PG_END_TRY();
	if (list_length(plan->stmt_list) != 1 ||
		linitial_node(PlannedStmt, plan->stmt_list)->commandType != CMD_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a directly dispatched query must be one SELECT")));
	return plan;
}
