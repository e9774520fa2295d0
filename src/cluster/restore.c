/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  A dump of the cluster restored into another cluster gets every table
 *	  distributed as it was, with every row on its owner.
 *
 * pg_dump through any member dumps every table's definition and all its
 * rows (the COPY TO of a distributed table is a distributed query, dml.c)
 * and, as the extension's only data, the rows of rdma_exchange.dist_table
 * (pg_extension_config_dump); not the members, which belong to the old
 * cluster, and not the routing triggers, which are internal triggers
 * (distribute.c).  Restored through a member of a fresh cluster, every
 * table is created there only and every row is written there.
 *
 * The restored dist_table rows cannot take effect as they arrive: where
 * they come relative to the tables' rows, indexes, foreign keys and
 * sequence values differs between pg_dump's formats and pg_restore runs
 * (-j, --section, -L).  So restore_distribution(), a trigger on
 * dist_table, turns each row the extension did not write itself into a
 * row of pending_distribution, and finish_restore(), run once the restore
 * is complete, distributes those tables as create_reference_table() and
 * create_distributed_table() would: reference tables first, a referenced
 * one before those referencing it, then hash tables; each table's rows
 * move from here to their owners, and its sequences continue past every
 * value it holds (sequences.c).  All in one transaction: a failure leaves
 * every table as the restore left it.  Until then the restored tables are
 * ordinary tables of this member, and queries over them give their rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "cluster/admin.h"
#include "cluster/metadata.h"
#include "cluster/restore.h"
#include "cluster/sequences.h"

PG_FUNCTION_INFO_V1(rx_restore_distribution);
PG_FUNCTION_INFO_V1(rx_finish_restore);

/* a row of pending_distribution */
typedef struct PendingTable
{
	Oid			relid;
	RxDistMethod method;
	char	   *column;
	int			stride;
	bool		exists;
	bool		done;
} PendingTable;

/* finish_restore()'s tables while it runs */
static PendingTable *pending = NULL;
static int	npending = 0;

RxDistMethod
rx_restore_pending_method(Oid relid)
{
	for (int i = 0; i < npending; i++)
		if (pending[i].relid == relid && !pending[i].done)
			return pending[i].method;
	return RX_DIST_NONE;
}

/*
 * rdma_exchange.restore_distribution(): BEFORE INSERT row trigger on
 * dist_table.  The extension's own rows go in; a restored one is kept for
 * finish_restore() instead.
 */
Datum
rx_restore_distribution(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	desc;
	Datum		d;
	bool		isnull;
	Oid			relid;
	char		method;
	char	   *column = NULL;
	int			stride = 1;
	int			n;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "restore_distribution() must be a BEFORE INSERT row trigger");
	tuple = trigdata->tg_trigtuple;
	if (rx_recording_distribution)
		return PointerGetDatum(tuple);

	desc = RelationGetDescr(trigdata->tg_relation);
	relid = DatumGetObjectId(heap_getattr(tuple, 1, desc, &isnull));
	method = DatumGetChar(heap_getattr(tuple, 2, desc, &isnull));
	d = heap_getattr(tuple, 3, desc, &isnull);
	if (!isnull)
		column = NameStr(*DatumGetName(d));
	d = heap_getattr(tuple, 4, desc, &isnull);
	if (!isnull)
		stride = DatumGetInt32(d);

	(void) rx_catalog_spi(psprintf("INSERT INTO rdma_exchange.pending_distribution"
								   " (relid, method, dist_column, seq_stride)"
								   " VALUES (%u, '%c', %s, %d)"
								   " ON CONFLICT (relid) DO UPDATE SET method = EXCLUDED.method,"
								   " dist_column = EXCLUDED.dist_column, seq_stride = EXCLUDED.seq_stride"
								   " RETURNING relid",
								   relid, method,
								   column ? quote_literal_cstr(column) : "NULL",
								   stride), &n);
	ereport(NOTICE,
			(errmsg("table %s is %s once rdma_exchange.finish_restore() runs",
					rx_qualified_relname(relid),
					method == RX_DIST_HASH ? "distributed" : "a reference table"),
			 errhint("Run SELECT * FROM rdma_exchange.finish_restore(); when the restore is complete.")));
	return PointerGetDatum(NULL);
}

/* does a pending reference table wait for another one it references? */
static bool
waits_for_parent(PendingTable *t)
{
	char	 ***rows;
	int			n;

	rows = rx_spi_strings(psprintf("SELECT confrelid FROM pg_catalog.pg_constraint"
								   " WHERE conrelid OPERATOR(pg_catalog.=) %u"
								   " AND confrelid OPERATOR(pg_catalog.<>) %u"
								   " AND contype OPERATOR(pg_catalog.=) 'f'",
								   t->relid, t->relid), &n);
	for (int i = 0; i < n; i++)
		if (rx_restore_pending_method((Oid) strtoul(rows[i][0], NULL, 10)) == RX_DIST_REFERENCE)
			return true;
	return false;
}

static void
finish_one(PendingTable *t, Tuplestorestate *store, TupleDesc desc)
{
	RxTableDist dist;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	uint64		moved = 0;
	int			n;

	if (t->exists)
	{
		rx_table_distribution(t->relid, &dist);
		if (dist.method == RX_DIST_NONE)
		{
			rx_restore_sequences(t->relid, t->stride);
			moved = rx_distribute_table(t->relid, t->method, t->column);
		}
		else if (dist.method != t->method ||
				 (t->method == RX_DIST_HASH &&
				  strcmp(rx_table_dist_column(t->relid), t->column) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table %s is already distributed otherwise than the restored catalog says",
							rx_qualified_relname(t->relid)),
					 errdetail("The dump has it as %s.",
							   t->method == RX_DIST_HASH ?
							   psprintf("distributed by column \"%s\"", t->column) :
							   "a reference table"),
					 errhint("Drop the table and restore it again, or delete its row from rdma_exchange.pending_distribution.")));
		/* else distributed as the dump says: its rows were routed as they came */

		values[0] = ObjectIdGetDatum(t->relid);
		values[1] = CStringGetTextDatum(t->method == RX_DIST_HASH ?
										psprintf("hash (%s)", quote_identifier(t->column)) :
										"reference");
		values[2] = Int64GetDatum((int64) moved);
		tuplestore_putvalues(store, desc, values, nulls);
	}
	(void) rx_catalog_spi(psprintf("DELETE FROM rdma_exchange.pending_distribution"
								   " WHERE relid OPERATOR(pg_catalog.=) %u RETURNING relid",
								   t->relid), &n);
	t->done = true;
}

/* rdma_exchange.finish_restore() */
Datum
rx_finish_restore(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	 ***rows;
	int			n;

	InitMaterializedSRF(fcinfo, 0);

	/* one finish_restore() at a time */
	rx_spi_exec("LOCK TABLE rdma_exchange.pending_distribution IN EXCLUSIVE MODE");
	rows = rx_spi_strings("SELECT p.relid::pg_catalog.oid, p.method, p.dist_column, p.seq_stride,"
						  " c.oid IS NOT NULL"
						  " FROM rdma_exchange.pending_distribution p"
						  " LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.relid"
						  " ORDER BY p.method OPERATOR(pg_catalog.<>) 'r', p.relid::pg_catalog.text",
						  &n);
	pending = palloc0(sizeof(PendingTable) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		pending[i].relid = (Oid) strtoul(rows[i][0], NULL, 10);
		pending[i].method = (RxDistMethod) rows[i][1][0];
		pending[i].column = rows[i][2];
		pending[i].stride = atoi(rows[i][3]);
		pending[i].exists = strcmp(rows[i][4], "t") == 0;
	}
	npending = n;

	PG_TRY();
	{
		bool		progress = true;

		/* reference tables, each after the pending ones it references */
		while (progress)
		{
			progress = false;
			for (int i = 0; i < npending; i++)
				if (!pending[i].done && pending[i].method == RX_DIST_REFERENCE &&
					(!pending[i].exists || !waits_for_parent(&pending[i])))
				{
					finish_one(&pending[i], rsinfo->setResult, rsinfo->setDesc);
					progress = true;
				}
		}
		/* then the rest (a cycle of references fails in there) */
		for (int i = 0; i < npending; i++)
			if (!pending[i].done)
				finish_one(&pending[i], rsinfo->setResult, rsinfo->setDesc);
	}
	PG_FINALLY();
	{
		pending = NULL;
		npending = 0;
	}
	PG_END_TRY();
	return (Datum) 0;
}
