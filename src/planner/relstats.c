/*-------------------------------------------------------------------------
 *
 * relstats.c
 *	  What the planner knows of a distributed table's size and values
 *	  while it plans a distributed query (planner.c): the statistics of
 *	  one member's part, scaled to the whole table.
 *
 * get_relation_info_hook and get_relation_stats_hook.  Outside the
 * planning of a distributed query (a member's own part, a query over
 * local tables) they change nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "utils/acl.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "cluster/metadata.h"
#include "planner/planner.h"

static get_relation_info_hook_type prev_get_relation_info_hook = NULL;
static get_relation_stats_hook_type prev_get_relation_stats_hook = NULL;

/*
 * Statistics of a distributed table describe one member's part: scale them
 * to the whole table, and give partial scans a worker per process the
 * members run them with (local_gather.c).
 * Reference tables get no partial paths at all.
 */
static void
rx_get_relation_info(PlannerInfo *root, Oid relid, bool inhparent,
					 RelOptInfo *rel)
{
	int			nmembers = rx_planning_nmembers();

	if (prev_get_relation_info_hook)
		prev_get_relation_info_hook(root, relid, inhparent, rel);

	if (nmembers > 0)
	{
		RxTableDist dist;
		ListCell   *lc;

		rx_table_distribution(relid, &dist);
		if (dist.method == RX_DIST_REFERENCE)
			rel->rel_parallel_workers = 0;
		else if (dist.method == RX_DIST_HASH)
		{
			rel->rel_parallel_workers = rx_planning_participants();
			rel->pages *= nmembers;
			rel->tuples *= nmembers;
			foreach(lc, rel->indexlist)
			{
				IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);

				index->pages *= nmembers;
				index->tuples *= nmembers;
				/* index-only scans: the gathered fallback needs heap columns */
				for (int i = 0; i < index->ncolumns; i++)
					index->canreturn[i] = false;
			}
		}
	}
}

/*
 * Column statistics of a distributed table are its part's, a sample of
 * the whole table hashed by the distribution column: frequencies, null
 * fractions and histograms hold for the whole table, and so does a
 * distinct count given as a fraction of the rows.  A distinct count of
 * the distribution column given as a number does not: each member sees
 * only the values it owns, so the table has about nmembers times as many.
 * (Other columns' values are spread over every member's part.)
 */
static bool
rx_get_relation_stats(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum,
					  VariableStatData *vardata)
{
	RxTableDist dist;
	HeapTuple	tuple;
	HeapTuple	copy;
	Oid			userid;

	if (prev_get_relation_stats_hook &&
		prev_get_relation_stats_hook(root, rte, attnum, vardata))
		return true;
	if (rx_planning_nmembers() <= 1 || rte->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(rte->relid, &dist);
	if (dist.method != RX_DIST_HASH || attnum != dist.distcol)
		return false;
	tuple = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(rte->relid),
							Int16GetDatum(attnum), BoolGetDatum(rte->inh));
	if (!HeapTupleIsValid(tuple))
		return false;
	if (((Form_pg_statistic) GETSTRUCT(tuple))->stadistinct <= 0)
	{
		ReleaseSysCache(tuple);
		return false;
	}
	copy = heap_copytuple(tuple);
	ReleaseSysCache(tuple);
	((Form_pg_statistic) GETSTRUCT(copy))->stadistinct *= rx_planning_nmembers();
	vardata->statsTuple = copy;
	vardata->freefunc = heap_freetuple;

	/* who may see the statistics' values, as examine_simple_variable says */
	userid = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
	vardata->acl_ok = rte->securityQuals == NIL &&
		(pg_class_aclcheck(rte->relid, userid, ACL_SELECT) == ACLCHECK_OK ||
		 pg_attribute_aclcheck(rte->relid, attnum, userid, ACL_SELECT) == ACLCHECK_OK);
	return true;
}

void
rx_relstats_init(void)
{
	prev_get_relation_info_hook = get_relation_info_hook;
	get_relation_info_hook = rx_get_relation_info;
	prev_get_relation_stats_hook = get_relation_stats_hook;
	get_relation_stats_hook = rx_get_relation_stats;
}
