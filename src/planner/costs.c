/*-------------------------------------------------------------------------
 *
 * costs.c
 *	  What PostgreSQL's cost model does not know about a distributed plan:
 *	  the rows a path makes move between members.
 *
 * The planner plans a distributed query as a parallel plan (planner.c).
 * PostgreSQL costs a Gather per row and nothing else; but a scan that is
 * not partial reads a table that lies on every member, and a nested loop
 * in the serial part rescans rows that came over the network.  The hooks
 * here charge those paths while the query is planned.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"

#include "cluster/metadata.h"
#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "planner/planner.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

/* making a pair's join paths again (rx_set_join_pathlist) */
static bool rejoining = false;

static bool
is_hash_distributed_rel(PlannerInfo *root, RelOptInfo *rel)
{
	RxTableDist dist;

	if (rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION)
		return false;
	rx_table_distribution(planner_rt_fetch(rel->relid, root)->relid, &dist);
	return dist.method == RX_DIST_HASH;
}

/*
 * What a non-partial scan of a distributed table really costs.  Only a
 * partial scan reads each member's part where it lies; any other scan of
 * the table (a Hash's inner side in a fragment, or the serial part's scan)
 * needs all its rows in one place: broadcast to every member, or gathered
 * to the coordinator (fallback.c), at the price PostgreSQL charges a
 * Gather per row.
 *
 * The charge is per row.  For an index scan that the fallback runs on
 * every member in the index's order (fallback.c: plain columns, merged on
 * the coordinator) it is run cost, as PostgreSQL charges a Gather's rows:
 * the rows stream, and a consumer that needs only the first few (a LIMIT
 * over the index's order, min/max) stops the members after those.
 * Charged at startup there too, it made min(k) over a table's index cost
 * the whole table, so that it lost to a parallel aggregate of every row
 * once the plan counted the members' workers.  Any other scan is gathered
 * whole, or sorted on the members first: startup.
 *
 * Parameterized scans are left alone here: as the inner side of a nested
 * loop in a fragment (co-located, an index lookup per outer row on each
 * member) nothing moves.  Only a nested loop in the serial part gathers
 * their table, once; rx_set_join_pathlist() charges that.
 */
static bool
streams_in_order(Path *path)
{
	IndexPath  *ip = (IndexPath *) path;

	return IsA(path, IndexPath) && path->pathkeys != NIL &&
		ip->indexinfo->indexprs == NIL && ip->indexorderbys == NIL &&
		(path->pathtype == T_IndexScan || ip->indexclauses != NIL);
}

static void
rx_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	ListCell   *lc;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (rx_planning_nmembers() == 0 || !is_hash_distributed_rel(root, rel))
		return;
	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->param_info == NULL)
		{
			if (!streams_in_order(path))
				path->startup_cost += rel->rows * parallel_tuple_cost;
			path->total_cost += rel->rows * parallel_tuple_cost;
		}
	}
}

/* does the path read rows through a Gather (from the members)? */
static bool
path_gathers(Path *path)
{
	ListCell   *lc;

	if (path == NULL)
		return false;
	switch (nodeTag(path))
	{
		case T_GatherPath:
		case T_GatherMergePath:
			return true;
		case T_MaterialPath:
			return path_gathers(((MaterialPath *) path)->subpath);
		case T_MemoizePath:
			return path_gathers(((MemoizePath *) path)->subpath);
		case T_SortPath:
		case T_IncrementalSortPath:
			return path_gathers(((SortPath *) path)->subpath);
		case T_ProjectionPath:
			return path_gathers(((ProjectionPath *) path)->subpath);
		case T_UniquePath:
			return path_gathers(((UniquePath *) path)->subpath);
		case T_AggPath:
			return path_gathers(((AggPath *) path)->subpath);
		case T_SubqueryScanPath:
			return path_gathers(((SubqueryScanPath *) path)->subpath);
		case T_NestPath:
		case T_MergePath:
		case T_HashPath:
			return path_gathers(((JoinPath *) path)->outerjoinpath) ||
				path_gathers(((JoinPath *) path)->innerjoinpath);
		case T_AppendPath:
			foreach(lc, ((AppendPath *) path)->subpaths)
				if (path_gathers(lfirst(lc)))
					return true;
			return false;
		default:
			return false;
	}
}

static int
compare_total_cost(const ListCell *a, const ListCell *b)
{
	Cost		ca = ((Path *) lfirst(a))->total_cost;
	Cost		cb = ((Path *) lfirst(b))->total_cost;

	return ca < cb ? -1 : ca > cb ? 1 : 0;
}

/*
 * Does the parameterized path read its distributed table by the
 * distribution column (dist column = outer value among its parameter
 * clauses)?  Then the outer rows can be shuffled to where the inner rows
 * are (locus.c's param_key()).
 */
static bool
keyed_on_distribution(PlannerInfo *root, Path *inner)
{
	RxTableDist dist;
	ListCell   *lc;

	rx_table_distribution(planner_rt_fetch(inner->parent->relid, root)->relid, &dist);
	foreach(lc, inner->param_info->ppi_clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (rx_distcol_equality(ri->clause, inner->parent->relid, &dist) != NULL)
			return true;
	}
	return false;
}

/*
 * Nested loops in the serial part, charged for what PostgreSQL does not
 * see.  The hook runs once for each pair of input relations and join type,
 * after that pair's paths were added: only those paths are charged (a
 * list of charged paths would not do: add_path() frees the paths it
 * rejects, and a new path can get a freed one's address).  add_path()
 * compared them before the charge and may have dropped a hash or merge
 * join they beat; so when a loop was charged, the pair's paths are made
 * once more with enable_nestloop off, and what the charge made cheaper
 * gets in.  Partial nested loops (in fragments) are not touched.
 *
 *  - Over a parameterized scan of a distributed table: the scan becomes a
 *	  sequential scan on every member of every row that passes its other
 *	  filters, gathered (kept, hashed by the parameters: lookup.c).
 *	  PostgreSQL costs an index lookup per outer row; add that scan (the
 *	  table's cheapest plain path, shared by the members) and the gather,
 *	  once, at what PostgreSQL's default parallel_tuple_cost says a row sent
 *	  between processes costs (planning runs with a lower one, to make
 *	  Gathers of partial plans cheap).  Without it, a nested loop over an
 *	  index of lineitem looks cheaper than any distributed plan for TPC-H
 *	  Q17 (6 million rows gathered) and Q19 (all of lineitem scanned to
 *	  look up 465 parts).  But an index or bitmap scan by the table's
 *	  distribution column is read by key (receive_keyed.c): each outer row
 *	  looks its key up on the owner, at most a round trip each, which
 *	  costs about what gathering RX_LOOKUP_ROWS rows costs (fallback.c's
 *	  keyed_remote_max() switches to the gather at that rate); charged the
 *	  cheaper of the two.  Without it, twenty tellers joined to their
 *	  accounts by the accounts' key scanned all of accounts on every member
 *	  (165 ms) where one server looks up twenty rows (0.1 ms).
 *  - Rescanning gathered rows with the join condition as a filter: chosen
 *	  only when PostgreSQL expects a row or two on a side, and a
 *	  misestimate costs rows x rows comparisons on the coordinator where a
 *	  hash join on the members costs rows + rows (TPC-H Q21: the anti
 *	  join's 337,000 rows estimated as 1, 129 million comparisons).  Such
 *	  loops are treated like enable_nestloop = off treats every nested
 *	  loop: taken only when nothing else is possible.
 *
 * And partial nested loops (in fragments) that cannot run on the members:
 * a semi, anti or left join whose inner side is a parameterized scan of a
 * distributed table by another column than its distribution column.  The
 * inner side cannot move, the outer side can be neither shuffled to the
 * inner rows (they are not placed by that column) nor broadcast (each
 * member would emit its own unmatched rows), so locus.c gives up and the
 * whole subtree runs serially over gathered tables: TPC-H Q22 with an
 * index on orders(o_custkey) gathered all of orders for a NOT EXISTS.
 * Treated like the loops above; the hash or merge join that shuffles the
 * inner table by the join key is then what runs on the members.  An inner
 * join of that kind runs, with its outer side broadcast: every member
 * probes its part of the inner table once for every outer row of the
 * cluster, in its fragment backend (the rows a RECEIVE delivers are not
 * split among workers), where PostgreSQL costs the probes of one
 * participant's share.  Charged for the other participants' probes too:
 * with workers on the members (participants = members x processes) such a
 * loop over part, probing lineitem by l_partkey, looked 16 times cheaper
 * than it ran for TPC-H Q14 on 4 members of 4 cores (5.2 s against 0.38 s
 * for the hash join).
 */
static void
rx_set_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
					 RelOptInfo *outerrel, RelOptInfo *innerrel,
					 JoinType jointype, JoinPathExtraData *extra)
{
	JoinType	path_jointype = jointype;
	bool		charged = false;
	bool		charged_partial = false;
	ListCell   *lc;

	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel,
									jointype, extra);
	if (rx_planning_nmembers() == 0 || rejoining)
		return;
	/* the paths' own join type: unique-ified sides make inner joins */
	if (jointype == JOIN_UNIQUE_INNER || jointype == JOIN_UNIQUE_OUTER)
		path_jointype = JOIN_INNER;
	foreach(lc, joinrel->pathlist)
	{
		JoinPath   *path = lfirst(lc);
		Path	   *inner;
		Cost		charge;

		if (path->path.pathtype != T_NestLoop || path->jointype != path_jointype ||
			path->outerjoinpath->parent != outerrel ||
			path->innerjoinpath->parent != innerrel)
			continue;
		inner = path->innerjoinpath;
		if (inner->param_info != NULL && is_hash_distributed_rel(root, inner->parent))
		{
			int			n = rx_planning_nmembers();

			charge = inner->parent->cheapest_total_path->total_cost / n +
				inner->parent->rows * DEFAULT_PARALLEL_TUPLE_COST;
			if (rx_keyed_lookups &&
				(IsA(inner, IndexPath) || IsA(inner, BitmapHeapPath)) &&
				keyed_on_distribution(root, inner))
				charge = Min(charge,
							 path->outerjoinpath->rows * (n - 1) / n *
							 RX_LOOKUP_ROWS * DEFAULT_PARALLEL_TUPLE_COST);
		}
		else if (inner->param_info == NULL && path_gathers(inner))
			charge = disable_cost;
		else
			continue;
		path->path.startup_cost += charge;
		path->path.total_cost += charge;
		charged = true;
	}

	foreach(lc, joinrel->partial_pathlist)
	{
		JoinPath   *path = lfirst(lc);
		Path	   *inner;
		Cost		charge;

		if (path->path.pathtype != T_NestLoop || path->jointype != path_jointype ||
			path->outerjoinpath->parent != outerrel ||
			path->innerjoinpath->parent != innerrel)
			continue;
		inner = path->innerjoinpath;
		if (inner->param_info == NULL || !is_hash_distributed_rel(root, inner->parent) ||
			keyed_on_distribution(root, inner))
			continue;
		if (path->jointype == JOIN_INNER)
			charge = Max(path->path.parallel_workers - 1, 0) *
				(path->path.total_cost - path->outerjoinpath->total_cost);
		else
			charge = disable_cost;
		path->path.startup_cost += charge;
		path->path.total_cost += charge;
		charged = charged_partial = true;
	}

	if (charged)
	{
		bool		save_enable_nestloop = enable_nestloop;

		rejoining = true;
		enable_nestloop = false;
		PG_TRY();
		{
			add_paths_to_joinrel(root, joinrel, outerrel, innerrel, jointype,
								 extra->sjinfo, extra->restrictlist);
		}
		PG_FINALLY();
		{
			enable_nestloop = save_enable_nestloop;
			rejoining = false;
		}
		PG_END_TRY();

		/*
		 * Gather paths are made over the first partial path, which
		 * add_partial_path() keeps the cheapest only while the list is in
		 * cost order: the charges above broke that order
		 */
		if (charged_partial)
			list_sort(joinrel->partial_pathlist, compare_total_cost);
	}
}

void
rx_costs_init(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = rx_set_rel_pathlist;
	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = rx_set_join_pathlist;
}
