/*-------------------------------------------------------------------------
 *
 * colmap.c
 *	  Columns of a plan fragment by name: the coordinator's attribute
 *	  numbers mapped to this member's.
 *
 * A table's attribute numbers differ between members as soon as a column
 * was dropped on one of them before the table was distributed (the other
 * members got the table without it), or the table was created differently
 * on each.  Positions are only meaningful on the server that planned: the
 * fragment message names every column of each relation it scans (by the
 * coordinator's attribute number, dropped ones as ""), and before the
 * executor starts, every Var of a scanned relation and the permission
 * bitmaps of its range table entry are moved to this member's attribute
 * with that name.  A column this member lacks, or has with another
 * built-in type, is an error naming the column and the member: never a
 * silent read of another column.
 *
 * Only scan nodes refer to a relation's columns (upper nodes use OUTER_VAR
 * and INNER_VAR, index quals INDEX_VAR; fragments hold no SubPlans), so
 * the scan nodes' expressions are all that is rewritten.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/transam.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "cluster/colmap.h"

/* ---------------------------------------------------------------------
 * Coordinator: the names
 * ---------------------------------------------------------------------
 */

List *
rx_column_names(Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *names = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		names = lappend(names,
						makeString(att->attisdropped ? "" : pstrdup(NameStr(att->attname))));
	}
	relation_close(rel, NoLock);
	return names;
}

/* ---------------------------------------------------------------------
 * Member: the mapping
 * ---------------------------------------------------------------------
 */

typedef struct ColumnMap
{
	Index		scanrelid;
	Oid			relid;			/* this member's relation */
	int			ncols;			/* the coordinator's attributes */
	AttrNumber *attnum;			/* this member's, 0 = not mapped yet */
	Oid		   *atttype;		/* this member's type of each */
	List	   *names;
	const char *member;
} ColumnMap;

static void
init_map(ColumnMap *cm, Index scanrelid, Oid relid, List *names,
		 const char *member)
{
	cm->scanrelid = scanrelid;
	cm->relid = relid;
	cm->names = names;
	cm->ncols = list_length(names);
	cm->attnum = palloc0(sizeof(AttrNumber) * Max(cm->ncols, 1));
	cm->atttype = palloc0(sizeof(Oid) * Max(cm->ncols, 1));
	cm->member = member;
}

/*
 * This member's attribute for the coordinator's attno; errors if none.
 * coord_type is the coordinator's type of the column (InvalidOid: not
 * checked, for permission bitmaps).
 */
static AttrNumber
map_attno(ColumnMap *cm, AttrNumber coord, Oid coord_type)
{
	const char *name;
	HeapTuple	tup;
	Form_pg_attribute att;

	if (coord < 1 || coord > cm->ncols)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment refers to column %d of relation \"%s\", which the coordinator did not name",
						coord, get_rel_name(cm->relid))));
	if (cm->attnum[coord - 1] != 0)
		return cm->attnum[coord - 1];

	name = strVal(list_nth(cm->names, coord - 1));
	tup = SearchSysCacheAttName(cm->relid, name);
	if (name[0] == '\0' || !HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist on member \"%s\"",
						name, get_rel_name(cm->relid), cm->member),
				 errdetail("The coordinator's table has this column; the members' definitions of the table differ."),
				 errhint("Change distributed tables through one member only (ALTER TABLE reaches every member); compare pg_attribute of the table on every member.")));
	att = (Form_pg_attribute) GETSTRUCT(tup);

	/*
	 * Types created by users have other OIDs on every member; the scan then
	 * takes this member's type (planner/fallback.c only lets such columns
	 * travel as text).  A built-in type must be the same.  (The
	 * coordinator's type is named only if it is built in: a user type's
	 * OID means nothing here.)
	 */
	if (OidIsValid(coord_type) && att->atttypid != coord_type &&
		(coord_type < FirstNormalObjectId || att->atttypid < FirstNormalObjectId))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" has type %s on member \"%s\" but %s on the coordinator",
						name, get_rel_name(cm->relid), format_type_be(att->atttypid),
						cm->member,
						format_type_extended(coord_type, -1, FORMAT_TYPE_ALLOW_INVALID)),
				 errhint("Change distributed tables through one member only (ALTER TABLE reaches every member).")));
	cm->attnum[coord - 1] = att->attnum;
	cm->atttype[coord - 1] = att->atttypid;
	ReleaseSysCache(tup);
	return cm->attnum[coord - 1];
}

/* a whole row is the same on both sides only with the same columns */
static bool
same_layout(ColumnMap *cm)
{
	Relation	rel = relation_open(cm->relid, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);
	bool		same = (desc->natts == cm->ncols);

	for (int i = 0; same && i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		same = strcmp(att->attisdropped ? "" : NameStr(att->attname),
					  strVal(list_nth(cm->names, i))) == 0;
	}
	relation_close(rel, NoLock);
	return same;
}

static Node *
map_vars_mutator(Node *node, ColumnMap *cm)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == cm->scanrelid && var->varlevelsup == 0 &&
			var->varattno > 0)
		{
			var = (Var *) copyObject(var);
			var->varattno = map_attno(cm, var->varattno, var->vartype);
			var->vartype = cm->atttype[((Var *) node)->varattno - 1];
			var->varattnosyn = var->varattno;
		}
		else if (var->varno == cm->scanrelid && var->varlevelsup == 0 &&
				 var->varattno == InvalidAttrNumber && !same_layout(cm))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a whole row of relation \"%s\" cannot be read on member \"%s\"",
							get_rel_name(cm->relid), cm->member),
					 errdetail("The table's columns lie in another order on this member than on the coordinator.")));
		return (Node *) var;
	}
	return expression_tree_mutator(node, map_vars_mutator, (void *) cm);
}

#define MAP(field) \
	((field) = (void *) map_vars_mutator((Node *) (field), cm))

/* a permission bitmap (attno - FirstLowInvalidHeapAttributeNumber) */
static Bitmapset *
map_columns_set(ColumnMap *cm, Bitmapset *cols)
{
	Bitmapset  *result = NULL;
	int			i = -1;

	while ((i = bms_next_member(cols, i)) >= 0)
	{
		AttrNumber	attno = i + FirstLowInvalidHeapAttributeNumber;

		if (attno > 0)
			attno = map_attno(cm, attno, InvalidOid);
		result = bms_add_member(result, attno - FirstLowInvalidHeapAttributeNumber);
	}
	return result;
}

void
rx_map_scan_columns(Scan *scan, RangeTblEntry *rte, List *names,
					const char *member)
{
	ColumnMap	mapping;
	ColumnMap  *cm = &mapping;
	Plan	   *plan = &scan->plan;

	init_map(cm, scan->scanrelid, rte->relid, names, member);

	MAP(plan->targetlist);
	MAP(plan->qual);
	switch (nodeTag(scan))
	{
		case T_IndexScan:
			MAP(((IndexScan *) scan)->indexqualorig);
			MAP(((IndexScan *) scan)->indexorderbyorig);
			break;
		case T_IndexOnlyScan:
			MAP(((IndexOnlyScan *) scan)->indextlist);
			break;
		case T_BitmapIndexScan:
			MAP(((BitmapIndexScan *) scan)->indexqualorig);
			break;
		case T_BitmapHeapScan:
			MAP(((BitmapHeapScan *) scan)->bitmapqualorig);
			break;
		case T_TidScan:
			MAP(((TidScan *) scan)->tidquals);
			break;
		case T_TidRangeScan:
			MAP(((TidRangeScan *) scan)->tidrangequals);
			break;
		default:
			break;
	}
}

/*
 * The range table entry's column sets, for the permission check: after
 * every scan of it was mapped (the types are known by then for every
 * column a scan uses; a column only checked, never read, maps by name).
 */
void
rx_map_rte_columns(RangeTblEntry *rte, List *names, const char *member)
{
	ColumnMap	mapping;
	ColumnMap  *cm = &mapping;

	init_map(cm, 0, rte->relid, names, member);
	rte->selectedCols = map_columns_set(cm, rte->selectedCols);
	rte->insertedCols = map_columns_set(cm, rte->insertedCols);
	rte->updatedCols = map_columns_set(cm, rte->updatedCols);
}
