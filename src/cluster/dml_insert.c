/*-------------------------------------------------------------------------
 *
 * dml_insert.c
 *	  INSERT ... RETURNING and INSERT ... ON CONFLICT into a distributed
 *	  table (and INSERT through a view WITH CHECK OPTION): each row runs
 *	  as one statement on the member that owns it; ON CONFLICT into a
 *	  reference table: each row on this copy, then on the others.
 *
 * An ordinary INSERT streams the rows other members own to them with COPY
 * (dml.c), which can neither return what was stored nor take a conflict
 * action.  These two forms are what applications and ORMs send most
 * (INSERT ... RETURNING id, upserts), so they run row by row instead: the
 * statement's rows are computed here as PostgreSQL computes them (its
 * source, defaults, sequences, generated columns), and each row then
 * becomes
 *
 *		INSERT INTO t (every column) OVERRIDING SYSTEM VALUE
 *			VALUES ($1, ..., $n) [ON CONFLICT <the statement's clause>]
 *			[RETURNING <the columns the statement's RETURNING reads>]
 *
 * run on its owner: in the owner's remote transaction (remote_xact.c)
 * after the session's statement context (settings.c), so that the
 * conflict action's expressions see this session's settings and now(),
 * or, for a row this member owns, here through SPI.  A unique index of a
 * distributed table includes the distribution column (distribute.c), so
 * every row a conflict can be with is on the owner, whose own speculative
 * insertion takes the action as one server would.
 *
 * The local ModifyTable still runs the statement: it computes each row,
 * fires this member's row triggers and evaluates RETURNING, but its
 * result relation gets an FDW routine for the execution (set after
 * ExecutorStart), so that ExecInsert() hands every row to
 * routed_insert_row() instead of storing it.  That returns the row as
 * stored: the row sent (an INSERT, ON CONFLICT DO NOTHING), the owner's
 * row after the conflict action (DO UPDATE, read back in this session's
 * text forms, which the owner's output used too), or nothing where the
 * owner did nothing, which PostgreSQL then neither returns nor counts.
 *
 * ON CONFLICT DO UPDATE of several rows fails, as on one server, when a
 * row conflicts with a row the statement itself left (see
 * watch_arbiters()).
 *
 * An INSERT through a view WITH CHECK OPTION runs the same way, so that
 * ExecInsert() checks every row, whichever member stores it (a row the
 * routing trigger sends to its owner is never checked here).
 *
 * INSERT ... ON CONFLICT into a reference table runs each row the same
 * way here, on this member's copy, and queues the row that copy kept
 * (inserted, or after DO UPDATE) for every other copy by primary key
 * (copy_to_others()); the routing triggers, which would send the row
 * before the conflict is known, let it through.  Writes to a reference
 * table take one order on every copy (ref_order.c), so the copies take
 * the same action.
 *
 * Where this is not done the statement is refused as before (dml.c):
 * user triggers on the table (they exist on this member only; rows this
 * member owns would fire them twice), a conflict action calling
 * user-defined functions or reading tables other than reference tables,
 * partitioned tables and writable CTEs.
 *
 * Each row costs a round trip to its owner (or a statement planned here):
 * fine for the rows of an application's INSERT, slow for bulk loads,
 * which COPY or a plain INSERT ... SELECT do in streams.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "common/hashfn.h"
#include "utils/hsearch.h"

#include "cluster/dispatch.h"
#include "cluster/dml.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/rowcopy.h"

/* first element of the fdwPrivLists entry that carries the statement */
#define ROUTE_MARKER "rdma_exchange: each row on its owner"

/* a row this member owns runs as its statement here (see insert_here()) */
static int	routing_here = 0;

bool
rx_insert_routing_here(void)
{
	return routing_here > 0;
}

/* ---------------------------------------------------------------------
 * Planning: the statement one row becomes
 * ---------------------------------------------------------------------
 */

/* renumber the statement's own parameters after the row's columns */
static bool
shift_params_walker(Node *node, int *shift)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
	{
		((Param *) node)->paramid += *shift;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, shift_params_walker, shift, 0);
	return expression_tree_walker(node, shift_params_walker, shift);
}

static Param *
column_param(int id, Form_pg_attribute att)
{
	Param	   *p = makeNode(Param);

	p->paramkind = PARAM_EXTERN;
	p->paramid = id;
	p->paramtype = att->atttypid;
	p->paramtypmod = att->atttypmod;
	p->paramcollid = att->attcollation;
	p->location = -1;
	return p;
}

/* the primary key columns of a table, or NULL */
static Bitmapset *
reference_key(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	Bitmapset  *pk = NULL;

	if (OidIsValid(RelationGetPrimaryKeyIndex(rel)))
	{
		Bitmapset  *cols = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
		int			c = -1;

		while ((c = bms_next_member(cols, c)) >= 0)
			pk = bms_add_member(pk, c + FirstLowInvalidHeapAttributeNumber);
	}
	table_close(rel, NoLock);
	return pk;
}

/* an INSERT through a view WITH CHECK OPTION */
static bool
has_view_check(Query *parse)
{
	ListCell   *lc;

	foreach(lc, parse->withCheckOptions)
		if (lfirst_node(WithCheckOption, lc)->kind == WCO_VIEW_CHECK)
			return true;
	return false;
}

/*
 * From the planner hook, before planning: for an INSERT with RETURNING or
 * ON CONFLICT into a hash-distributed table, what its rows run as on
 * their owners (see the top of the file), or NIL where that is not done.
 * The list: marker, the statement's SQL, the ids of the statement's own
 * bound parameters it uses (ascending; $id + columns in the SQL), whether
 * the owner's row is the one stored (DO UPDATE, with fields to read), and
 * a list of the attribute numbers of the fields the owner returns and
 * whether the statement has more than one row (a source other than one
 * row of VALUES).
 */
List *
rx_insert_route_sql(Query *parse)
{
	RangeTblEntry *target;
	RxTableDist dist;
	RxStatementShape shape;
	Relation	rel;
	Query	   *row;
	List	   *tlist = NIL;
	List	   *returning = NIL;
	List	   *used = NIL;
	List	   *fields = NIL;
	Bitmapset  *refs = NULL;
	bool		whole_row;
	bool		reference;
	Bitmapset  *pk = NULL;
	bool		multi_row = parse->jointree->fromlist != NIL;
	bool		routable;
	bool		returns_row;
	int			ncols = 0;
	int			id = -1;
	ListCell   *lc;

	if (parse->commandType != CMD_INSERT || parse->resultRelation == 0 ||
		(parse->returningList == NIL && parse->onConflict == NULL &&
		 !has_view_check(parse)) ||
		rx_in_member_session() || routing_here > 0)
		return NIL;
	target = rt_fetch(parse->resultRelation, parse->rtable);
	if (target->relkind != RELKIND_RELATION)
		return NIL;
	rx_table_distribution(target->relid, &dist);
	reference = dist.method == RX_DIST_REFERENCE;
	if ((dist.method != RX_DIST_HASH && !reference) ||
		rx_has_user_triggers(target->relid))
		return NIL;
	if (reference)
	{
		/* INSERT ... RETURNING alone is stored on every copy as it is */
		if (parse->onConflict == NULL)
			return NIL;
		pk = reference_key(target->relid);
		if (pk == NULL)
			return NIL;			/* dml.c says why */
	}

	/* a reference table's copies get the row this member's copy kept */
	returns_row = reference || (parse->onConflict != NULL &&
								parse->onConflict->action == ONCONFLICT_UPDATE);
	if (parse->onConflict != NULL)
	{
		OnConflictExpr *oc = parse->onConflict;

		rx_statement_shape((Node *) oc, &shape);
		if (shape.hash_tables > 0 || shape.local_tables > 0 ||
			shape.local_routines || shape.ctes)
			return NIL;
		foreach(lc, oc->onConflictSet)
		{
			AttrNumber	set = lfirst_node(TargetEntry, lc)->resno;

			if (reference && bms_is_member(set, pk))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot update primary key column \"%s\" of reference table \"%s\" in ON CONFLICT DO UPDATE",
								get_attname(target->relid, set, false),
								get_rel_name(target->relid)),
						 errdetail("The other members' copies take the row this member keeps by its primary key."),
						 errhint("Leave the primary key out of the SET list.")));
			if (!reference && set == dist.distcol)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot update distribution column \"%s\" of table \"%s\" in ON CONFLICT DO UPDATE",
								get_attname(target->relid, dist.distcol, false),
								get_rel_name(target->relid)),
						 errdetail("The new value could belong to another member."),
						 errhint("Leave the distribution column out of the SET list: a conflicting row has the same value in it.")));
		}
		while ((id = bms_next_member(shape.params, id)) >= 0)
			used = lappend_int(used, id);
	}

	/*
	 * The statement of one row: this one with its source replaced by a row
	 * of parameters, one per stored column (the columns rowcopy.c sends).
	 * What the owner returns: the columns the statement's RETURNING reads
	 * (so that the owner checks the SELECT privileges and policies one
	 * server would), and every column for DO UPDATE of several rows (the
	 * keys its rows left, see watch_arbiters()) or through a view WITH
	 * CHECK OPTION (ExecInsert() checks the row it is handed back).  The values are used for
	 * DO UPDATE, where the row stored is the owner's; an inserted row is
	 * the one sent.
	 */
	pull_varattnos((Node *) parse->returningList, parse->resultRelation, &refs);
	whole_row = bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, refs) ||
		reference || (returns_row && (multi_row || has_view_check(parse)));
	rel = table_open(target->relid, NoLock);
	for (int i = 0; i < RelationGetDescr(rel)->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

		if (att->attisdropped)
			continue;
		if (whole_row ||
			bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber, refs))
		{
			fields = lappend_int(fields, att->attnum);
			returning = lappend(returning,
								makeTargetEntry((Expr *) makeVar(parse->resultRelation,
																 att->attnum,
																 att->atttypid,
																 att->atttypmod,
																 att->attcollation, 0),
												list_length(returning) + 1,
												pstrdup(NameStr(att->attname)),
												false));
		}
		if (att->attgenerated != '\0')
			continue;
		ncols++;
		tlist = lappend(tlist,
						makeTargetEntry((Expr *) column_param(ncols, att),
										att->attnum,
										pstrdup(NameStr(att->attname)), false));
	}
	table_close(rel, NoLock);

	row = copyObject(parse);
	routable = true;
	foreach(lc, row->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		/* the source is gone: ruleutils then prints VALUES (the list) */
		if (rte->rtekind == RTE_SUBQUERY || rte->rtekind == RTE_VALUES)
		{
			rte->rtekind = RTE_RESULT;
			rte->subquery = NULL;
			rte->values_lists = NIL;
			rte->coltypes = rte->coltypmods = rte->colcollations = NIL;
		}
		else if (rte->rtekind != RTE_RELATION)
			routable = false;
	}
	if (!routable)
		return NIL;
	row->targetList = tlist;
	row->returningList = returning;
	row->jointree = makeFromExpr(NIL, NULL);
	row->cteList = NIL;
	row->hasModifyingCTE = false;
	row->hasRecursive = false;
	row->hasSubLinks = row->onConflict != NULL &&
		checkExprHasSubLink((Node *) row->onConflict);
	/* identity values were drawn here; the owner stores them as they are */
	row->override = OVERRIDING_SYSTEM_VALUE;
	(void) shift_params_walker((Node *) row->onConflict, &ncols);

	return list_make5(makeString(ROUTE_MARKER), makeString(rx_deparse_query(row)),
					  used, makeBoolean(returns_row && fields != NIL ? true : false),
					  list_make2(fields, makeBoolean(multi_row)));
}

/* what a plan's ModifyTable carries, or NIL */
static List *
routed_insert_of(ModifyTable *mt)
{
	List	   *priv;

	if (mt == NULL || !IsA(mt, ModifyTable) || mt->operation != CMD_INSERT ||
		list_length(mt->fdwPrivLists) != 1)
		return NIL;
	priv = (List *) linitial(mt->fdwPrivLists);
	if (list_length(priv) != 5 || !IsA(linitial(priv), String) ||
		strcmp(strVal(linitial(priv)), ROUTE_MARKER) != 0)
		return NIL;
	return priv;
}

bool
rx_insert_routed(Plan *plan)
{
	return routed_insert_of((ModifyTable *) plan) != NIL;
}

/* ---------------------------------------------------------------------
 * Execution: each row on its owner
 * ---------------------------------------------------------------------
 */

typedef struct RoutedInsert
{
	const char *sql;
	bool		returns_row;	/* the owner's row comes back */
	bool		reference;		/* kept here, then copied to the others */
	char	   *copy_sql;		/* a reference row, on another copy */
	char	   *context;		/* of an owner's error */
	Oid			relid;
	AttrNumber	distcol;
	Oid			distcol_type;
	int			nmembers;
	RxMember   *members;
	int			self;
	RxRowEncoder *enc;			/* the row's columns, $1 .. $ncols */
	int			nparams;		/* ncols + the statement's own */
	Oid		   *types;			/* for the owners: built-in types, else 0 */
	const char **texts;			/* the statement's own, in text form */
	Oid		   *local_types;	/* here: every parameter's type */
	Datum	   *local_values;
	char	   *local_nulls;
	FmgrInfo   *in;				/* input functions of a returned row */
	Oid		   *ioparams;
	MemoryContext cxt;			/* the execution's */
	MemoryContext rowcxt;		/* the returned row */
	uint64		sent;			/* rows that went to other members */
	List	   *fields;			/* attribute numbers of the fields returned */
	/* DO UPDATE of several rows: what the statement's rows left */
	List	   *arbiters;		/* Relation of each arbiter index */
	HTAB	   *touched;		/* their keys, as text (arbiter_key()) */
} RoutedInsert;

/*
 * The row a DO UPDATE left, as its fields (ri->fields) come back: a row of
 * SPI here, text from another member, which this session's settings read
 * as the owner's output wrote it (its statement context is this
 * session's).  Columns the owner did not return are NULL: RETURNING does
 * not read them.
 */
static void
store_returned(RoutedInsert *ri, TupleTableSlot *slot, HeapTuple local,
			   TupleDesc local_desc, PGresult *res)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	int			nfields = local != NULL ? local_desc->natts : PQnfields(res);
	Datum	   *values;
	bool	   *nulls;
	Datum	   *fields = NULL;
	bool	   *fieldnulls = NULL;
	int			field = 0;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(ri->rowcxt);

	values = palloc0(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	if (local != NULL)
	{
		fields = palloc(sizeof(Datum) * nfields);
		fieldnulls = palloc(sizeof(bool) * nfields);
		heap_deform_tuple(local, local_desc, fields, fieldnulls);
	}
	if (nfields != list_length(ri->fields))
		elog(ERROR, "a routed row came back with %d columns, not %d",
			 nfields, list_length(ri->fields));
	for (int i = 0; i < desc->natts; i++)
		nulls[i] = true;
	foreach(lc, ri->fields)
	{
		int			i = lfirst_int(lc) - 1;

		if (local != NULL)
		{
			values[i] = fields[field];
			nulls[i] = fieldnulls[field];
		}
		else if (!PQgetisnull(res, 0, field))
		{
			values[i] = InputFunctionCall(&ri->in[i], PQgetvalue(res, 0, field),
										  ri->ioparams[i],
										  TupleDescAttr(desc, i)->atttypmod);
			nulls[i] = false;
		}
		field++;
	}
	/* copied into the row's context: SPI's memory goes first */
	ExecForceStoreHeapTuple(heap_form_tuple(desc, values, nulls), slot, false);
	MemoryContextSwitchTo(old);
}

/* a row this member owns: its statement run here */
static bool
insert_here(RoutedInsert *ri, TupleTableSlot *slot)
{
	int			ncols = ri->enc->ncols;
	bool		stored;
	int			rc;

	for (int i = 0; i < ncols; i++)
	{
		AttrNumber	att = ri->enc->attnums[i];

		ri->local_values[i] = slot->tts_values[att - 1];
		ri->local_nulls[i] = slot->tts_isnull[att - 1] ? 'n' : ' ';
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	routing_here++;
	PG_TRY();
	{
		rc = SPI_execute_with_args(ri->sql, ri->nparams, ri->local_types,
								   ri->local_values, ri->local_nulls, false, 0);
	}
	PG_FINALLY();
	{
		routing_here--;
	}
	PG_END_TRY();
	if (rc != SPI_OK_INSERT && rc != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "insert of a routed row failed: %s", SPI_result_code_string(rc));
	stored = SPI_processed > 0;
	if (stored && ri->returns_row)
		store_returned(ri, slot, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, NULL);
	SPI_finish();
	return stored;
}

/* a row another member owns: its statement run there */
static bool
insert_there(RoutedInsert *ri, const RxMember *member, TupleTableSlot *slot)
{
	const char **params;
	const char **row;
	PGconn	   *conn;
	PGresult   *res;
	bool		stored = false;
	int			nest;

	nest = rx_transmission_begin();
	row = rx_row_params(ri->enc, slot->tts_values, slot->tts_isnull);
	rx_transmission_end(nest);
	params = palloc(sizeof(char *) * Max(ri->nparams, 1));
	memcpy(params, row, sizeof(char *) * ri->enc->ncols);
	memcpy(params + ri->enc->ncols, ri->texts,
		   sizeof(char *) * (ri->nparams - ri->enc->ncols));

	conn = rx_xact_send_params(member, ri->sql, ri->nparams, ri->types,
							   params, true, true, false);
	while ((res = rx_xact_get_result(conn, member->name)) != NULL)
	{
		rx_raise_if_failed(conn, res, member->name, ri->context);
		stored = strtoull(PQcmdTuples(res), NULL, 10) > 0;
		if (stored && ri->returns_row)
			store_returned(ri, slot, NULL, NULL, res);
		PQclear(res);
	}
	ri->sent++;
	return stored;
}

/*
 * ON CONFLICT DO UPDATE of several rows.  One server fails when a row of
 * the statement conflicts with a row the same statement inserted or
 * updated ("cannot affect row a second time"); statements of one row each
 * would update it again.  So the statement keeps the arbiter keys of the
 * rows its rows left, as text, and fails as PostgreSQL does when a row
 * proposes one of them.  Text tells equal keys only where equal values
 * print alike: integers, deterministic strings, uuid, dates and
 * timestamps, booleans, enums; an arbiter index with other key types
 * (numeric 1.0 = 1.00), expressions or a predicate refuses the statement.
 */
static bool
prints_alike(Oid type, Oid collation)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case UUIDOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case BOOLOID:
		case CHAROID:
		case NAMEOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			return !OidIsValid(collation) || get_collation_isdeterministic(collation);
		default:
			return type_is_enum(type);
	}
}

/* the keys with one hash */
typedef struct TouchedKeys
{
	uint32		hash;
	List	   *keys;
} TouchedKeys;

static void
watch_arbiters(RoutedInsert *ri, ModifyTable *mt, ResultRelInfo *rinfo)
{
	HASHCTL		ctl;

	/* as ExecInsert() opens them at its first row */
	if (rinfo->ri_IndexRelationDescs == NULL)
		ExecOpenIndices(rinfo, true);
	for (int i = 0; i < rinfo->ri_NumIndices; i++)
	{
		Relation	index = rinfo->ri_IndexRelationDescs[i];
		bool		fits = RelationGetIndexExpressions(index) == NIL &&
			RelationGetIndexPredicate(index) == NIL;

		if (!list_member_oid(mt->arbiterIndexes, RelationGetRelid(index)))
			continue;
		for (int k = 0; fits && k < index->rd_index->indnkeyatts; k++)
			fits = prints_alike(TupleDescAttr(RelationGetDescr(index), k)->atttypid,
								index->rd_indcollation[k]);
		if (!fits)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("INSERT ... ON CONFLICT DO UPDATE of several rows on distributed table \"%s\" is not supported with arbiter index \"%s\"",
							get_rel_name(ri->relid), RelationGetRelationName(index)),
					 errdetail("Each row runs as a statement of its own on its owner; rows of the statement that conflict with each other are told apart by the index's keys as text, which this index's expressions, predicate or key types do not allow."),
					 errhint("Insert one row per statement, or name a conflict target whose index has plain columns of integer, text, uuid, date, timestamp, boolean or enum types.")));
		ri->arbiters = lappend(ri->arbiters, index);
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(TouchedKeys);
	ctl.hcxt = CurrentMemoryContext;
	ri->touched = hash_create("rdma_exchange upsert keys", 256, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* an arbiter index's key of a row as text, or NULL where NULLs never conflict */
static char *
arbiter_key(Relation index, TupleTableSlot *slot)
{
	StringInfoData key;

	initStringInfo(&key);
	appendStringInfo(&key, "%u", RelationGetRelid(index));
	for (int k = 0; k < index->rd_index->indnkeyatts; k++)
	{
		AttrNumber	att = index->rd_index->indkey.values[k];
		Oid			out;
		bool		varlena;
		char	   *text;

		if (slot->tts_isnull[att - 1])
		{
			if (!index->rd_index->indnullsnotdistinct)
				return NULL;
			appendStringInfoString(&key, " N");
			continue;
		}
		getTypeOutputInfo(TupleDescAttr(slot->tts_tupleDescriptor, att - 1)->atttypid,
						  &out, &varlena);
		text = OidOutputFunctionCall(out, slot->tts_values[att - 1]);
		appendStringInfo(&key, " %zu:%s", strlen(text), text);
	}
	return key.data;
}

/* before a row goes: does it propose a key the statement left; after: note them */
static void
touch_once(RoutedInsert *ri, TupleTableSlot *slot, bool left)
{
	ListCell   *lc;
	int			nest = rx_transmission_begin();

	foreach(lc, ri->arbiters)
	{
		char	   *key = arbiter_key(lfirst(lc), slot);
		uint32		hash;
		TouchedKeys *entry;
		bool		found = false;
		ListCell   *k;

		if (key == NULL)
			continue;
		hash = hash_bytes((const unsigned char *) key, strlen(key));
		entry = hash_search(ri->touched, &hash, left ? HASH_ENTER : HASH_FIND, &found);
		if (left)
		{
			MemoryContext old = MemoryContextSwitchTo(ri->cxt);

			if (!found)
				entry->keys = NIL;
			entry->keys = lappend(entry->keys, pstrdup(key));
			MemoryContextSwitchTo(old);
			continue;
		}
		found = false;
		if (entry != NULL)
			foreach(k, entry->keys)
				found = found || strcmp(lfirst(k), key) == 0;
		if (found)
		{
			rx_transmission_end(nest);
			ereport(ERROR,
					(errcode(ERRCODE_CARDINALITY_VIOLATION),
					 errmsg("ON CONFLICT DO UPDATE command cannot affect row a second time"),
					 errhint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")));
		}
	}
	rx_transmission_end(nest);
}

/*
 * A reference table's row as this member's copy kept it (inserted, or
 * after DO UPDATE), queued for every other copy by primary key, as
 * dml.c queues a reference row's UPDATE: sent with the next command that
 * goes to the member, at the latest at commit.  The writes to the table
 * are in one order on every copy (ref_order.c), so the others take the
 * same action on the same row.
 */
static void
copy_to_others(RoutedInsert *ri, TupleTableSlot *slot)
{
	const char **params;
	int			nest = rx_transmission_begin();

	params = rx_row_params(ri->enc, slot->tts_values, slot->tts_isnull);
	rx_transmission_end(nest);
	for (int m = 0; m < ri->nmembers; m++)
		if (m != ri->self)
			rx_xact_defer_params(&ri->members[m], ri->copy_sql, ri->enc->ncols,
								 params, "copying a row of a reference table");
	ri->sent++;
}

static TupleTableSlot *
routed_insert_row(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
				  TupleTableSlot *planSlot)
{
	RoutedInsert *ri = (RoutedInsert *) rinfo->ri_FdwState;
	int			owner;
	bool		stored;

	MemoryContextReset(ri->rowcxt);
	slot_getallattrs(slot);
	if (ri->touched != NULL)
		touch_once(ri, slot, false);
	if (ri->reference)
	{
		stored = insert_here(ri, slot);
		if (stored)
		{
			slot_getallattrs(slot);
			copy_to_others(ri, slot);
		}
	}
	else
	{
		owner = rx_member_of_key(ri->relid, ri->distcol_type,
								 slot->tts_values[ri->distcol - 1],
								 slot->tts_isnull[ri->distcol - 1], ri->nmembers);
		if (owner == ri->self)
			stored = insert_here(ri, slot);
		else
			stored = insert_there(ri, &ri->members[owner], slot);
	}
	if (stored && ri->touched != NULL)
	{
		slot_getallattrs(slot);
		touch_once(ri, slot, true);
	}
	return stored ? slot : NULL;
}

static void
routed_insert_explain(ModifyTableState *mtstate, ResultRelInfo *rinfo,
					  List *fdw_private, int subplan_index, ExplainState *es)
{
	RoutedInsert *ri = (RoutedInsert *) rinfo->ri_FdwState;

	ExplainPropertyText("Rows Routed", "each row as one statement on its owner", es);
	if (es->verbose)
		ExplainPropertyText("Owner Statement", ri->sql, es);
	if (es->analyze)
		ExplainPropertyUInteger("Rows Sent to Other Members", NULL, ri->sent, es);
}

static FdwRoutine routed_insert_routine = {
	.type = T_FdwRoutine,
	.ExecForeignInsert = routed_insert_row,
	.ExplainForeignModify = routed_insert_explain,
};

/*
 * After ExecutorStart: a routed INSERT's result relation hands its rows
 * to routed_insert_row() for this execution.
 */
void
rx_insert_route_start(QueryDesc *queryDesc)
{
	ModifyTableState *mtstate = (ModifyTableState *) queryDesc->planstate;
	List	   *priv;
	ResultRelInfo *rinfo;
	RoutedInsert *ri;
	RxTableDist dist;
	TupleDesc	desc;
	List	   *used;
	RxForward  *own;
	ListCell   *lc;
	int			ncols;
	MemoryContext old;

	if (mtstate == NULL || !IsA(mtstate, ModifyTableState))
		return;
	priv = routed_insert_of((ModifyTable *) mtstate->ps.plan);
	if (priv == NIL)
		return;

	old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
	rinfo = mtstate->resultRelInfo;
	desc = RelationGetDescr(rinfo->ri_RelationDesc);
	ri = palloc0(sizeof(RoutedInsert));
	ri->sql = strVal(lsecond(priv));
	ri->returns_row = boolVal(lfourth(priv));
	ri->fields = (List *) linitial((List *) list_nth(priv, 4));
	ri->relid = RelationGetRelid(rinfo->ri_RelationDesc);
	rx_table_distribution(ri->relid, &dist);
	ri->reference = dist.method == RX_DIST_REFERENCE;
	if (!ri->reference)
	{
		ri->distcol = dist.distcol;
		ri->distcol_type = TupleDescAttr(desc, dist.distcol - 1)->atttypid;
	}
	ri->nmembers = rx_get_members(&ri->members);
	ri->self = rx_self_member_index();
	ri->enc = rx_row_encoder_create(rinfo->ri_RelationDesc);
	ri->context = psprintf("inserting a row of table %s on its owner",
						   ri->enc->table_name);
	if (ri->reference)
	{
		/* the other copies take the row by primary key, whatever they had */
		Bitmapset  *pk = reference_key(ri->relid);
		StringInfoData sql;
		int			c = -1;

		initStringInfo(&sql);
		appendStringInfo(&sql, "%s ON CONFLICT (", ri->enc->insert_params);
		while ((c = bms_next_member(pk, c)) >= 0)
			appendStringInfo(&sql, "%s%s", sql.data[sql.len - 1] == '(' ? "" : ", ",
							 quote_identifier(get_attname(ri->relid, c, false)));
		appendStringInfoString(&sql, ") DO UPDATE SET ");
		for (int i = 0; i < ri->enc->ncols; i++)
		{
			const char *col = quote_identifier(get_attname(ri->relid,
														   ri->enc->attnums[i], false));

			appendStringInfo(&sql, "%s%s = excluded.%s", i > 0 ? ", " : "", col, col);
		}
		ri->copy_sql = sql.data;
	}
	ri->cxt = CurrentMemoryContext;
	ri->rowcxt = AllocSetContextCreate(CurrentMemoryContext,
									   "rdma_exchange routed row",
									   ALLOCSET_SMALL_SIZES);

	/* the statement's own parameters: fixed for the execution */
	used = (List *) lthird(priv);
	own = rx_forward_prepare("", used, queryDesc->params);
	ncols = ri->enc->ncols;
	ri->nparams = ncols + own->nparams;
	ri->types = palloc0(sizeof(Oid) * Max(ri->nparams, 1));
	ri->local_types = palloc0(sizeof(Oid) * Max(ri->nparams, 1));
	ri->local_values = palloc0(sizeof(Datum) * Max(ri->nparams, 1));
	ri->local_nulls = palloc(sizeof(char) * Max(ri->nparams, 1));
	memset(ri->local_nulls, 'n', Max(ri->nparams, 1));
	for (int i = 0; i < ncols; i++)
	{
		Oid			type = TupleDescAttr(desc, ri->enc->attnums[i] - 1)->atttypid;

		ri->types[i] = type < FirstNormalObjectId ? type : InvalidOid;
		ri->local_types[i] = type;
	}
	ri->texts = own->values;
	for (int i = 0; i < own->nparams; i++)
	{
		ri->types[ncols + i] = own->types[i];
		ri->local_types[ncols + i] = TEXTOID;	/* not used by the statement */
	}
	foreach(lc, used)
	{
		int			id = lfirst_int(lc);
		ParamExternData workspace;
		ParamExternData *prm = rx_bound_param(queryDesc->params, id, &workspace);

		ri->local_types[ncols + id - 1] = prm->ptype;
		ri->local_values[ncols + id - 1] = prm->value;
		ri->local_nulls[ncols + id - 1] = prm->isnull ? 'n' : ' ';
	}

	if (ri->returns_row)
	{
		ri->in = palloc0(sizeof(FmgrInfo) * Max(desc->natts, 1));
		ri->ioparams = palloc0(sizeof(Oid) * Max(desc->natts, 1));
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);
			Oid			infn;

			if (att->attisdropped)
				continue;
			getTypeInputInfo(att->atttypid, &infn, &ri->ioparams[i]);
			fmgr_info(infn, &ri->in[i]);
		}
	}
	if (ri->returns_row && boolVal(lsecond((List *) list_nth(priv, 4))) &&
		(queryDesc->estate->es_top_eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0)
		watch_arbiters(ri, (ModifyTable *) mtstate->ps.plan, rinfo);
	MemoryContextSwitchTo(old);

	rinfo->ri_FdwRoutine = &routed_insert_routine;
	rinfo->ri_FdwState = ri;
}
