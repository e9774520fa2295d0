/*-------------------------------------------------------------------------
 *
 * distribute.c
 *	  create_distributed_table(), create_reference_table(): make a local
 *	  table a distributed or reference table on every member, and put each
 *	  existing row where it belongs.
 *
 * The table need only exist on the calling member: it is created on the
 * others with the same qualified name, columns, defaults, constraints and
 * indexes.  Where it already exists, its columns must match and it must be
 * empty, so that after the call every member holds exactly its own rows
 * (a hash table) or all rows (a reference table).  The distribution is
 * recorded in rdma_exchange.dist_table on every member and the DML
 * triggers (dml.c) are installed everywhere.  Rows of this member that
 * belong elsewhere are streamed to their owners with COPY and deleted
 * here.  Everything happens in the caller's transaction; the other
 * members commit at its pre-commit (remote_xact.c), so an error anywhere
 * leaves no half-distributed table and no row on the wrong member.
 *
 * Also here: the sql_drop event trigger that forgets dropped tables and
 * drops them on the other members, and
 * rdma_exchange.member_index_of(), the owner of a value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "rdma_exchange.h"
#include "cluster/admin.h"
#include "cluster/ddl.h"
#include "cluster/dml.h"
#include "cluster/hashing.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/restore.h"
#include "cluster/rowcopy.h"
#include "cluster/sequences.h"

PG_FUNCTION_INFO_V1(rx_create_distributed_table);
PG_FUNCTION_INFO_V1(rx_create_reference_table);
PG_FUNCTION_INFO_V1(rx_drop_cleanup);
PG_FUNCTION_INFO_V1(rx_record_distribution);
PG_FUNCTION_INFO_V1(rx_drop_routing_triggers);
PG_FUNCTION_INFO_V1(rx_member_index_of);

/* what other members need to know of a local table */
typedef struct TableDef
{
	Oid			relid;
	char	   *nspname;
	char	   *relname;
	char	   *qualified;		/* quoted, schema-qualified */
	char	   *create_sql;		/* creates it where it does not exist */
	char	  **sig;			/* per column: name, type schema, type, typmod */
	char	  **sig_shown;		/* per column: "name type", for messages */
	int			ncols;
} TableDef;

/*
 * Columns as both sides can compare them: type by schema and name, not by
 * OID, which differs between members.
 */
#define SIGNATURE_SQL \
	"SELECT a.attname, tn.nspname, t.typname, a.atttypmod," \
	" pg_catalog.format_type(a.atttypid, a.atttypmod)" \
	" FROM pg_catalog.pg_attribute a" \
	" JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) a.atttypid" \
	" JOIN pg_catalog.pg_namespace tn ON tn.oid OPERATOR(pg_catalog.=) t.typnamespace" \
	" WHERE a.attrelid OPERATOR(pg_catalog.=) %s::pg_catalog.regclass" \
	" AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped" \
	" ORDER BY a.attnum"

/* ---------------------------------------------------------------------
 * The table's definition as SQL
 * ---------------------------------------------------------------------
 */

static void
build_create_sql(TableDef *td, Relation rel)
{
	StringInfoData sql;
	char	 ***rows;
	int			n;
	char	   *q;
	int			nest;
	Oid			owner = rel->rd_rel->relowner;

	/* deparse with every name qualified, as pg_dump does */
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);

	initStringInfo(&sql);
	/* CREATE SCHEMA IF NOT EXISTS wants CREATE on the database even then */
	appendStringInfo(&sql, "DO $rx$BEGIN IF pg_catalog.to_regnamespace(%s) IS NULL THEN CREATE SCHEMA %s; END IF; END$rx$;\n",
					 quote_literal_cstr(quote_identifier(td->nspname)),
					 quote_identifier(td->nspname));

	/* sequences used by defaults (serial columns) */
	q = psprintf("SELECT DISTINCT pg_catalog.quote_ident(sn.nspname) || '.' || pg_catalog.quote_ident(s.relname)"
				 " FROM pg_catalog.pg_attrdef ad"
				 " JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass"
				 "  AND d.objid = ad.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
				 " JOIN pg_catalog.pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'"
				 " JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace"
				 " WHERE ad.adrelid = %u", td->relid);
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
		appendStringInfo(&sql, "CREATE SEQUENCE IF NOT EXISTS %s;\n", rows[i][0]);

	appendStringInfo(&sql, "CREATE %sTABLE %s (",
					 rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED ? "UNLOGGED " : "",
					 td->qualified);
	q = psprintf("SELECT pg_catalog.quote_ident(a.attname),"
				 " pg_catalog.format_type(a.atttypid, a.atttypmod),"
				 " a.attnotnull,"
				 " CASE WHEN a.attgenerated = '' THEN pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) END,"
				 " CASE WHEN a.attgenerated = 's' THEN pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) END,"
				 " a.attidentity,"
				 " CASE WHEN a.attcollation <> t.typcollation AND a.attcollation <> 0 THEN"
				 "  pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname) END"
				 " FROM pg_catalog.pg_attribute a"
				 " JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
				 " LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum"
				 " LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation"
				 " LEFT JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace"
				 " WHERE a.attrelid = %u AND a.attnum > 0 AND NOT a.attisdropped"
				 " ORDER BY a.attnum", td->relid);
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
	{
		appendStringInfo(&sql, "%s\n    %s %s", i > 0 ? "," : "", rows[i][0], rows[i][1]);
		if (rows[i][6])
			appendStringInfo(&sql, " COLLATE %s", rows[i][6]);
		if (rows[i][5] && rows[i][5][0] == 'a')
			appendStringInfoString(&sql, " GENERATED ALWAYS AS IDENTITY");
		else if (rows[i][5] && rows[i][5][0] == 'd')
			appendStringInfoString(&sql, " GENERATED BY DEFAULT AS IDENTITY");
		if (rows[i][4])
			appendStringInfo(&sql, " GENERATED ALWAYS AS (%s) STORED", rows[i][4]);
		else if (rows[i][3])
			appendStringInfo(&sql, " DEFAULT %s", rows[i][3]);
		if (strcmp(rows[i][2], "t") == 0)
			appendStringInfoString(&sql, " NOT NULL");
	}
	appendStringInfoString(&sql, "\n)");
	q = psprintf("SELECT pg_catalog.array_to_string(reloptions, ', ') FROM pg_catalog.pg_class"
				 " WHERE oid = %u AND reloptions IS NOT NULL", td->relid);
	rows = rx_spi_strings(q, &n);
	if (n > 0 && rows[0][0] && rows[0][0][0])
		appendStringInfo(&sql, " WITH (%s)", rows[0][0]);
	appendStringInfoString(&sql, ";\n");

	/* serial sequences belong to their column there too */
	q = psprintf("SELECT pg_catalog.quote_ident(sn.nspname) || '.' || pg_catalog.quote_ident(s.relname),"
				 " pg_catalog.quote_ident(a.attname)"
				 " FROM pg_catalog.pg_depend d"
				 " JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'"
				 " JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace"
				 " JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid"
				 " WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
				 " AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
				 " AND d.refobjid = %u AND d.deptype = 'a'", td->relid);
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
		appendStringInfo(&sql, "ALTER SEQUENCE %s OWNED BY %s.%s;\n",
						 rows[i][0], td->qualified, rows[i][1]);

	/* constraints; foreign keys passed check_constraints() */
	q = psprintf("SELECT pg_catalog.quote_ident(conname), pg_catalog.pg_get_constraintdef(oid), contype"
				 " FROM pg_catalog.pg_constraint WHERE conrelid = %u"
				 " ORDER BY contype = 'f', contype <> 'p', conname", td->relid);
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
	{
		if (strcmp(rows[i][2], "p") != 0 && strcmp(rows[i][2], "u") != 0 &&
			strcmp(rows[i][2], "x") != 0 && strcmp(rows[i][2], "c") != 0 &&
			strcmp(rows[i][2], "f") != 0)
			continue;
		appendStringInfo(&sql, "ALTER TABLE %s ADD CONSTRAINT %s %s;\n",
						 td->qualified, rows[i][0], rows[i][1]);
	}

	/* indexes that no constraint made */
	q = psprintf("SELECT pg_catalog.pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index i"
				 " WHERE i.indrelid = %u AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c"
				 "  WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)"
				 " ORDER BY i.indexrelid", td->relid);
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
		appendStringInfo(&sql, "%s;\n", rows[i][0]);

	if (owner != GetUserId())
		appendStringInfo(&sql, "ALTER TABLE %s OWNER TO %s;\n", td->qualified,
						 quote_identifier(GetUserNameFromId(owner, false)));

	/*
	 * Privileges, row-level security and policies as they are here: later
	 * GRANTs and policies reach the members as they are made (ddl.c), the
	 * roles too.
	 */
	q = psprintf("SELECT pg_catalog.format('GRANT %%s ON %%s TO %%s%%s', a.privilege_type, %s,"
				 " CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END,"
				 " CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)"
				 " FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a"
				 " LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee"
				 " WHERE c.oid = %u AND a.grantee <> c.relowner",
				 quote_literal_cstr(td->qualified), td->relid);
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
		appendStringInfo(&sql, "%s;\n", rows[i][0]);
	if (rel->rd_rel->relrowsecurity)
		appendStringInfo(&sql, "ALTER TABLE %s ENABLE ROW LEVEL SECURITY;\n", td->qualified);
	if (rel->rd_rel->relforcerowsecurity)
		appendStringInfo(&sql, "ALTER TABLE %s FORCE ROW LEVEL SECURITY;\n", td->qualified);
	q = psprintf("SELECT pg_catalog.format('CREATE POLICY %%I ON %%s AS %%s FOR %%s TO %%s%%s%%s',"
				 " p.policyname, %s, p.permissive, p.cmd,"
				 " (SELECT pg_catalog.string_agg(CASE WHEN r = 'public' THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r) END, ', ')"
				 "  FROM pg_catalog.unnest(p.roles) r),"
				 " ' USING (' || p.qual || ')', ' WITH CHECK (' || p.with_check || ')')"
				 " FROM pg_catalog.pg_policies p"
				 " WHERE p.schemaname = %s AND p.tablename = %s",
				 quote_literal_cstr(td->qualified),
				 quote_literal_cstr(td->nspname), quote_literal_cstr(td->relname));
	rows = rx_spi_strings(q, &n);
	for (int i = 0; i < n; i++)
		appendStringInfo(&sql, "%s;\n", rows[i][0]);

	AtEOXact_GUC(true, nest);
	td->create_sql = sql.data;
}

static void
build_signature(TableDef *td)
{
	char	 ***rows;
	int			n;

	rows = rx_spi_strings(psprintf(SIGNATURE_SQL, quote_literal_cstr(td->qualified)), &n);
	td->ncols = n;
	td->sig = palloc(sizeof(char *) * Max(n, 1));
	td->sig_shown = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		td->sig[i] = psprintf("%s|%s|%s|%s", rows[i][0], rows[i][1], rows[i][2], rows[i][3]);
		td->sig_shown[i] = psprintf("%s %s", quote_identifier(rows[i][0]), rows[i][4]);
	}
}

/*
 * The routing triggers (dml.c) are internal triggers, as those of foreign
 * keys are: pg_dump leaves them out (a restored table gets them when it is
 * distributed again, restore.c), psql's \d does not list them, and only a
 * superuser may disable one.  PostgreSQL appends the trigger's OID to an
 * internal trigger's name; the prefix keeps them last in firing order.
 */
static void
create_trigger(Oid relid, const char *name, const char *function,
			   int16 timing, int16 events, bool row)
{
	CreateTrigStmt *stmt = makeNode(CreateTrigStmt);

	stmt->trigname = (char *) name;
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->funcname = list_make2(makeString(RX_SCHEMA_NAME), makeString((char *) function));
	stmt->row = row;
	stmt->timing = timing;
	stmt->events = events;
	(void) CreateTrigger(stmt, NULL, relid, InvalidOid, InvalidOid, InvalidOid,
						 InvalidOid, InvalidOid, NULL, true, false);
}

static void
create_routing_triggers(Oid relid, RxDistMethod method)
{
	create_trigger(relid, RX_TRIGGER_ROUTE, "route_row",
				   TRIGGER_TYPE_BEFORE, TRIGGER_TYPE_INSERT, true);
	create_trigger(relid, RX_TRIGGER_FLUSH, "flush_rows",
				   TRIGGER_TYPE_AFTER, TRIGGER_TYPE_INSERT, false);
	create_trigger(relid, RX_TRIGGER_TRUNCATE, "forward_truncate",
				   TRIGGER_TYPE_BEFORE, TRIGGER_TYPE_TRUNCATE, false);
	if (method == RX_DIST_REFERENCE)
		create_trigger(relid, RX_TRIGGER_CHANGE, "forward_change",
					   TRIGGER_TYPE_BEFORE, TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE, true);
	CommandCounterIncrement();
}

/* rdma_exchange.drop_routing_triggers(rel), internal: a member leaves */
Datum
rx_drop_routing_triggers(PG_FUNCTION_ARGS)
{
	Relation	rel = table_open(PG_GETARG_OID(0), AccessExclusiveLock);
	List	   *doomed = NIL;
	ListCell   *lc;

	for (int i = 0; rel->trigdesc && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (t->tgisinternal &&
			strncmp(t->tgname, RX_TRIGGER_PREFIX, strlen(RX_TRIGGER_PREFIX)) == 0)
			doomed = lappend_oid(doomed, t->tgoid);
	}
	table_close(rel, NoLock);

	foreach(lc, doomed)
	{
		ObjectAddress obj;

		ObjectAddressSet(obj, TriggerRelationId, lfirst_oid(lc));
		performDeletion(&obj, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
	PG_RETURN_VOID();
}

/* what each member runs to record the distribution (record_distribution) */
static char *
record_sql(TableDef *td, RxDistMethod method, const char *column, int stride)
{
	return psprintf("SELECT rdma_exchange.record_distribution(%s::pg_catalog.regclass, '%c', %s, %d)",
					quote_literal_cstr(td->qualified), (char) method,
					column ? quote_literal_cstr(column) : "NULL", stride);
}

/* set while the extension writes dist_table (restore.c tells dumps apart) */
bool		rx_recording_distribution = false;

/*
 * Record a table's distribution in this member's catalog and give it the
 * routing triggers.  The catalog is written as the bootstrap superuser
 * (rx_catalog_spi), for the table's owner only: any owner may distribute
 * its table, and only its own.
 */
static void
record_distribution(Oid relid, RxDistMethod method, const char *column,
					int stride)
{
	int			n;

	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	rx_recording_distribution = true;
	PG_TRY();
	{
		(void) rx_catalog_spi(psprintf("INSERT INTO rdma_exchange.dist_table (relid, method, dist_column, seq_stride)"
									   " VALUES (%u, '%c', %s, %d) RETURNING relid",
									   relid, (char) method,
									   column ? quote_literal_cstr(column) : "NULL",
									   stride), &n);
	}
	PG_FINALLY();
	{
		rx_recording_distribution = false;
	}
	PG_END_TRY();
	create_routing_triggers(relid, method);
}

/* rdma_exchange.record_distribution(rel, method, dist_column, seq_stride), internal */
Datum
rx_record_distribution(PG_FUNCTION_ARGS)
{
	int			nest = rx_admin_begin();
	Oid			relid = PG_GETARG_OID(0);
	char		method = PG_GETARG_CHAR(1);

	if (method != RX_DIST_HASH && method != RX_DIST_REFERENCE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown distribution method \"%c\"", method)));
	record_distribution(relid, (RxDistMethod) method,
						PG_ARGISNULL(2) ? NULL : NameStr(*PG_GETARG_NAME(2)),
						PG_ARGISNULL(3) ? 1 : PG_GETARG_INT32(3));
	rx_admin_end(nest);
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * The table on another member
 * ---------------------------------------------------------------------
 */

static void
setup_on_member(TableDef *td, const RxMember *m, const RxMember *members,
				int nmembers, RxDistMethod method, const char *column,
				int stride)
{
	PGconn	   *conn = rx_xact_connection(m);
	char	 ***rows;
	int			n;

	rx_check_member_catalog(conn, m, members, nmembers);

	rows = rx_query_strings(conn, m->name,
							psprintf("SELECT c.relkind,"
									 " EXISTS (SELECT 1 FROM rdma_exchange.dist_table d WHERE d.relid OPERATOR(pg_catalog.=) c.oid)"
									 " FROM pg_catalog.pg_class c"
									 " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"
									 " WHERE n.nspname OPERATOR(pg_catalog.=) %s AND c.relname OPERATOR(pg_catalog.=) %s",
									 quote_literal_cstr(td->nspname),
									 quote_literal_cstr(td->relname)),
							&n);
	if (n == 0)
		rx_exec_command(conn, m->name, td->create_sql);
	else
	{
		char	 ***cols;
		int			ncols;

		if (strcmp(rows[0][0], "r") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("%s on member \"%s\" is not a plain table",
							td->qualified, m->name),
					 errhint("Drop or rename it on that member, then retry.")));
		if (strcmp(rows[0][1], "t") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table %s is already distributed on member \"%s\"",
							td->qualified, m->name),
					 errdetail("The catalog rdma_exchange.dist_table differs between this member and that one."),
					 errhint("Drop the table on that member, then retry.")));

		cols = rx_query_strings(conn, m->name,
								psprintf(SIGNATURE_SQL, quote_literal_cstr(td->qualified)),
								&ncols);
		for (int i = 0; i < Max(ncols, td->ncols); i++)
		{
			char	   *there = i < ncols ?
				psprintf("%s|%s|%s|%s", cols[i][0], cols[i][1], cols[i][2], cols[i][3]) : NULL;

			if (i >= ncols || i >= td->ncols || strcmp(there, td->sig[i]) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("table %s on member \"%s\" does not have the same columns as on this member",
								td->qualified, m->name),
						 i >= ncols ?
						 errdetail("Column %d is %s here but missing there.", i + 1, td->sig_shown[i]) :
						 i >= td->ncols ?
						 errdetail("Column %d is \"%s %s\" there but missing here.", i + 1,
								   cols[i][0], cols[i][4]) :
						 errdetail("Column %d is %s here but \"%s %s\" there.", i + 1,
								   td->sig_shown[i], cols[i][0], cols[i][4]),
						 errhint("Drop the table on that member (it is created from this member's definition), or give it the same columns, then retry.")));
		}

		rows = rx_query_strings(conn, m->name,
								psprintf("SELECT EXISTS (SELECT 1 FROM ONLY %s)", td->qualified),
								&n);
		if (strcmp(rows[0][0], "t") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table %s on member \"%s\" is not empty",
							td->qualified, m->name),
					 errdetail("Only the rows of the calling member are distributed; rows stored on other members are not moved."),
					 errhint("Move those rows into the table on this member, or empty it there, then retry.")));
	}
	rx_exec_command(conn, m->name, record_sql(td, method, column, stride));
}

/* ---------------------------------------------------------------------
 * Moving rows
 * ---------------------------------------------------------------------
 */

/*
 * Send this member's rows to where they belong: for a hash table each
 * foreign row to its owner (and delete it here), for a reference table
 * every row to every member in targets.  Returns the rows sent.
 */
static uint64
send_rows(Relation rel, RxDistMethod method, const RxMember *members,
		  int nmembers, int self, const RxMember *targets, int ntargets)
{
	RxRowEncoder *enc = rx_row_encoder_create(rel);
	Snapshot	snapshot;
	TableScanDesc scan;
	TupleTableSlot *slot;
	MemoryContext rowcxt;
	MemoryContext old;
	FmgrInfo	hashfn;
	Oid			collation = InvalidOid;
	AttrNumber	distcol = InvalidAttrNumber;
	uint64		sent = 0;
	int			nest;

	if (method == RX_DIST_HASH)
	{
		RxTableDist dist;

		rx_table_distribution(RelationGetRelid(rel), &dist);
		Assert(dist.method == RX_DIST_HASH);
		distcol = dist.distcol;
		fmgr_info(rx_hash_proc_for(dist.hash_opfamily, dist.distcol_type), &hashfn);
		collation = TupleDescAttr(RelationGetDescr(rel), distcol - 1)->attcollation;
	}

	/*
	 * A fresh snapshot, taken after the table lock: rows committed between
	 * the statement's snapshot and the lock must move too.
	 */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	slot = table_slot_create(rel, NULL);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange row",
								   ALLOCSET_DEFAULT_SIZES);
	nest = rx_transmission_begin();

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		StringInfoData line;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(rowcxt);
		old = MemoryContextSwitchTo(rowcxt);
		slot_getallattrs(slot);
		if (method == RX_DIST_HASH)
		{
			int			owner = rx_member_for_datum(&hashfn, collation,
													slot->tts_values[distcol - 1],
													slot->tts_isnull[distcol - 1],
													nmembers);

			if (owner != self)
			{
				initStringInfo(&line);
				rx_row_encode(enc, slot->tts_values, slot->tts_isnull, &line);
				rx_xact_copy_row(&members[owner], RelationGetRelid(rel),
								 enc->table_name, enc->copy_command,
								 line.data, line.len);
				simple_table_tuple_delete(rel, &slot->tts_tid, snapshot);
				sent++;
			}
		}
		else
		{
			initStringInfo(&line);
			rx_row_encode(enc, slot->tts_values, slot->tts_isnull, &line);
			for (int t = 0; t < ntargets; t++)
				rx_xact_copy_row(&targets[t], RelationGetRelid(rel),
								 enc->table_name, enc->copy_command,
								 line.data, line.len);
			sent++;
		}
		MemoryContextSwitchTo(old);
	}

	rx_transmission_end(nest);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	MemoryContextDelete(rowcxt);

	/* the owners' errors (constraints, ...) surface here */
	rx_xact_copy_end(RelationGetRelid(rel));
	return sent;
}

/* ---------------------------------------------------------------------
 * create_distributed_table(), create_reference_table()
 * ---------------------------------------------------------------------
 */

static void
check_table(Relation rel)
{
	const char *relname = RelationGetRelationName(rel);
	Oid			relid = RelationGetRelid(rel);
	RxTableDist dist;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a plain table", relname),
				 errdetail("Only ordinary tables can be distributed; partitioned tables, views, materialized views and foreign tables cannot.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("temporary table \"%s\" cannot be distributed", relname)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);
	if (has_superclass(relid) || has_subclass(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" takes part in inheritance", relname),
				 errdetail("Tables with parents or children cannot be distributed.")));
	if (strcmp(get_namespace_name(RelationGetNamespace(rel)), RX_SCHEMA_NAME) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("table \"%s\" belongs to extension %s and cannot be distributed",
						relname, RX_EXTENSION_NAME)));
	rx_table_distribution(relid, &dist);
	if (dist.method != RX_DIST_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already a %s table", relname,
						dist.method == RX_DIST_HASH ? "distributed" : "reference")));
}

static void
check_column(Relation rel, const char *column)
{
	const char *relname = RelationGetRelationName(rel);
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), column);
	Form_pg_attribute att;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, relname)));
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("system column \"%s\" cannot be the distribution column",
						column)));
	att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	if (att->attgenerated != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("generated column \"%s\" of table \"%s\" cannot be the distribution column",
						column, relname),
				 errdetail("A generated value is not known when the row is routed to its member.")));
	if (!OidIsValid(rx_default_hash_opfamily_or_none(att->atttypid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" of table \"%s\" cannot be the distribution column",
						column, relname),
				 errdetail("Type %s has no default hash operator class, and rows are placed on members by a hash of that column.",
						   format_type_be(att->atttypid)),
				 errhint("Choose a column of a hashable type.")));
}

/*
 * Constraints the members could not enforce on their own are refused: a
 * wrong answer to "is this value unique / does the referenced row exist"
 * would let rows in that the constraint forbids.
 *
 *	- Unique, primary key and exclusion constraints and unique indexes of a
 *	  distributed table must include the distribution column: rows that
 *	  agree on it are on the same member, which then sees every row that
 *	  could conflict.
 *	- Foreign keys are created on every member (build_create_sql) when the
 *	  referenced table is a reference table: every member holds every row
 *	  a check needs, and the check (a query over that reference table
 *	  alone) runs locally.  Others are refused, and so are foreign keys of
 *	  other tables that reference this one (they would have to be checked
 *	  against rows of every member); make the referenced table a reference
 *	  table first.  (Between tables co-located on the key every member
 *	  would hold the rows too, but PostgreSQL's check locks them with FOR
 *	  KEY SHARE, which a distributed query cannot do.)
 */
static void
check_constraints(Relation rel, RxDistMethod method, AttrNumber distcol)
{
	Oid			relid = RelationGetRelid(rel);
	const char *relname = RelationGetRelationName(rel);
	char	 ***rows;
	int			n;

	if (method == RX_DIST_HASH)
	{
		rows = rx_spi_strings(psprintf("SELECT pg_catalog.quote_ident(ic.relname)"
									   " FROM pg_catalog.pg_index i"
									   " JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid"
									   " WHERE i.indrelid OPERATOR(pg_catalog.=) %u AND i.indisunique"
									   " AND NOT (%d OPERATOR(pg_catalog.=) ANY (i.indkey::pg_catalog.int2[]))"
									   " UNION ALL"
									   " SELECT pg_catalog.quote_ident(conname) FROM pg_catalog.pg_constraint"
									   " WHERE conrelid OPERATOR(pg_catalog.=) %u AND contype OPERATOR(pg_catalog.=) 'x'"
									   " AND NOT (%d OPERATOR(pg_catalog.=) ANY (conkey))",
									   relid, distcol, relid, distcol), &n);
		if (n > 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("constraint or unique index %s of table \"%s\" cannot be enforced on a distributed table",
							rows[0][0], relname),
					 errdetail("It does not include the distribution column \"%s\": each member would check it only among the rows it stores.",
							   get_attname(relid, distcol, false)),
					 errhint("Include the distribution column in it, or make the table a reference table.")));
	}

	/* foreign keys of this table */
	rows = rx_spi_strings(psprintf("SELECT pg_catalog.quote_ident(c.conname),"
								   " c.confrelid::pg_catalog.regclass::pg_catalog.text, c.confrelid"
								   " FROM pg_catalog.pg_constraint c"
								   " WHERE c.conrelid OPERATOR(pg_catalog.=) %u"
								   " AND c.contype OPERATOR(pg_catalog.=) 'f'", relid), &n);
	for (int i = 0; i < n; i++)
	{
		Oid			parent = (Oid) strtoul(rows[i][2], NULL, 10);
		RxTableDist pd;

		/* the table itself is what it is about to become */
		if (parent == relid)
			pd.method = method;
		else
			rx_table_distribution(parent, &pd);
		if (pd.method == RX_DIST_REFERENCE)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("foreign key %s of table \"%s\" cannot be enforced once the table is %s",
						rows[i][0], relname,
						method == RX_DIST_HASH ? "distributed" : "a reference table"),
				 errdetail(parent == relid ? "It references the table itself, whose rows would be spread over the members." :
						   pd.method == RX_DIST_NONE ?
						   "The referenced table %s is not distributed: other members could not check their rows against it." :
						   "The referenced table %s is distributed: the referenced row may be on another member.",
						   rows[i][1]),
				 errhint("Make the referenced table a reference table first, or drop the foreign key.")));
	}

	/*
	 * Foreign keys of other tables that reference this one; finish_restore()
	 * distributes the referencing tables it restored right after this one.
	 */
	rows = rx_spi_strings(psprintf("SELECT pg_catalog.quote_ident(conname),"
								   " conrelid::pg_catalog.regclass::pg_catalog.text, conrelid"
								   " FROM pg_catalog.pg_constraint"
								   " WHERE confrelid OPERATOR(pg_catalog.=) %u"
								   " AND conrelid OPERATOR(pg_catalog.<>) %u"
								   " AND contype OPERATOR(pg_catalog.=) 'f'", relid, relid), &n);
	for (int i = 0; i < n; i++)
	{
		if (rx_restore_pending_method((Oid) strtoul(rows[i][2], NULL, 10)) != RX_DIST_NONE)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is referenced by foreign key %s of table %s",
						relname, rows[i][0], rows[i][1]),
				 errdetail("A table that is not distributed cannot check its rows against a table spread over the members."),
				 errhint("Drop the foreign key, distribute this table first and then the referencing one, or make it a reference table first.")));
	}
}

static void
require_membership(RxMember **members, int *nmembers, int *self)
{
	*nmembers = rx_get_members(members);
	*self = rx_self_member_index();
	if (*nmembers == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the cluster has no members"),
				 errhint("Add every member, this one included, with rdma_exchange.add_node().")));
	if (*self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not a member of the cluster"),
				 errhint("Add it with rdma_exchange.add_node(), or call this function on a member.")));
}

static TableDef *
describe_table(Relation rel)
{
	TableDef   *td = palloc0(sizeof(TableDef));

	td->relid = RelationGetRelid(rel);
	td->nspname = get_namespace_name(RelationGetNamespace(rel));
	td->relname = pstrdup(RelationGetRelationName(rel));
	td->qualified = quote_qualified_identifier(td->nspname, td->relname);
	build_create_sql(td, rel);
	build_signature(td);
	return td;
}

/*
 * Distribute a local table (create_distributed_table(),
 * create_reference_table(), finish_restore()); returns the rows sent to
 * other members.
 */
uint64
rx_distribute_table(Oid relid, RxDistMethod method, const char *column)
{
	int			nest = rx_admin_begin();
	Relation	rel;
	RxMember   *members;
	int			nmembers;
	int			self;
	TableDef   *td;
	RxMember   *others;
	int			nothers = 0;
	uint64		sent;

	/* writers wait until we commit; readers go on seeing the old state */
	rel = table_open(relid, ExclusiveLock);
	check_table(rel);
	if (method == RX_DIST_HASH)
		check_column(rel, column);
	check_constraints(rel, method,
					  method == RX_DIST_HASH ? get_attnum(relid, column) : InvalidAttrNumber);

	/* no member list change on this member until we commit */
	LockRelationOid(rx_node_catalog_relid(), ShareLock);
	require_membership(&members, &nmembers, &self);

	td = describe_table(rel);
	others = palloc(sizeof(RxMember) * nmembers);
	for (int m = 0; m < nmembers; m++)
		if (m != self)
		{
			setup_on_member(td, &members[m], members, nmembers, method, column,
							nmembers);
			others[nothers++] = members[m];
		}

	record_distribution(relid, method, column, nmembers);
	rx_interleave_sequences(relid, members, nmembers, self);
	CommandCounterIncrement();

	sent = send_rows(rel, method, members, nmembers, self, others, nothers);
	if (sent > 0)
	{
		if (method == RX_DIST_HASH)
			ereport(NOTICE,
					(errmsg("moved " UINT64_FORMAT " rows of table %s to the members that own them",
							sent, td->qualified)));
		else
			ereport(NOTICE,
					(errmsg("copied " UINT64_FORMAT " rows of table %s to %d other members",
							sent, td->qualified, nothers)));
	}

	table_close(rel, NoLock);
	rx_admin_end(nest);
	return sent;
}

Datum
rx_create_distributed_table(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Name		column = PG_GETARG_NAME(1);

	(void) rx_distribute_table(relid, RX_DIST_HASH, NameStr(*column));
	PG_RETURN_VOID();
}

Datum
rx_create_reference_table(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);

	(void) rx_distribute_table(relid, RX_DIST_REFERENCE, NULL);
	PG_RETURN_VOID();
}

/* add_node(): a new member gets every reference table, rows included */
void
rx_replicate_reference_tables(const RxMember *target, const RxMember *members,
							  int nmembers)
{
	char	 ***rows;
	int			n;
	int			self = rx_self_member_index();

	rows = rx_spi_strings("SELECT relid::pg_catalog.oid FROM rdma_exchange.dist_table WHERE method = 'r' ORDER BY 1",
						  &n);
	if (n > 0 && self < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot copy the reference tables to member \"%s\": this server is not a member",
						target->name),
				 errhint("Add the new member from a member that has the reference tables.")));
	for (int i = 0; i < n; i++)
	{
		Oid			relid = (Oid) strtoul(rows[i][0], NULL, 10);
		Relation	rel = table_open(relid, ExclusiveLock);
		TableDef   *td = describe_table(rel);

		/* its sequences stay as they are there (README) */
		setup_on_member(td, target, members, nmembers, RX_DIST_REFERENCE, NULL, 1);
		(void) send_rows(rel, RX_DIST_REFERENCE, members, nmembers, self,
						 target, 1);
		table_close(rel, NoLock);
	}
}

/* ---------------------------------------------------------------------
 * rdma_exchange.drop_cleanup(): sql_drop event trigger
 * ---------------------------------------------------------------------
 */

Datum
rx_drop_cleanup(PG_FUNCTION_ARGS)
{
	char	 ***rows;
	char	 ***constraints;
	char	 ***schemas;
	char	 ***types;
	int			n;
	int			nconstraints;
	int			nschemas;
	int			ntypes;
	StringInfoData drop;
	RxMember   *members;
	int			nmembers;
	int			self;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rdma_exchange.drop_cleanup() must be called as an event trigger")));

	/* the extension itself may be what is being dropped */
	if (!rx_extension_loaded() || !OidIsValid(rx_dist_catalog_relid()))
		PG_RETURN_VOID();

	/*
	 * A distributed or reference table dropped here is dropped on every
	 * member too, in this transaction (remote_xact.c commits the members at
	 * pre-commit): its rows must not stay behind on the others.  Without
	 * CASCADE there: whatever depends on the table on another member makes
	 * the whole DROP fail, with that member's error.
	 */
	rows = rx_catalog_spi("DELETE FROM rdma_exchange.dist_table d"
						  " USING pg_catalog.pg_event_trigger_dropped_objects() o"
						  " WHERE o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
						  " AND o.objsubid OPERATOR(pg_catalog.=) 0"
						  " AND d.relid::pg_catalog.oid OPERATOR(pg_catalog.=) o.objid"
						  " RETURNING pg_catalog.format('%I.%I', o.schema_name, o.object_name),"
						  " o.schema_name", &n);
	if (rx_in_member_session() || !rx_propagate_ddl)
		PG_RETURN_VOID();

	/*
	 * Constraints dropped here (ALTER TABLE ... DROP CONSTRAINT, a foreign
	 * key going with DROP ... CASCADE) from distributed or reference tables
	 * that stay: they were created on every member too (build_create_sql).
	 * Not when an ALTER TABLE dropped them: the whole statement goes to the
	 * members (ddl.c).
	 * Then one DROP for all the tables, so that foreign keys among them do
	 * not stand in the way.
	 */
	constraints = NULL;
	nconstraints = 0;
	if (!rx_ddl_alter_propagating())
		constraints = rx_spi_strings("SELECT pg_catalog.format('ALTER TABLE IF EXISTS %I.%I DROP CONSTRAINT IF EXISTS %I',"
									 " o.address_names[1], o.address_names[2], o.address_names[3])"
									 " FROM pg_catalog.pg_event_trigger_dropped_objects() o"
									 " JOIN rdma_exchange.dist_table d ON d.relid OPERATOR(pg_catalog.=)"
									 "  pg_catalog.to_regclass(pg_catalog.format('%I.%I', o.address_names[1], o.address_names[2]))"
									 " WHERE o.object_type OPERATOR(pg_catalog.=) 'table constraint'",
									 &nconstraints);
	initStringInfo(&drop);
	appendStringInfoString(&drop, "DROP TABLE IF EXISTS ");
	for (int i = 0; i < n; i++)
		appendStringInfo(&drop, "%s%s", i > 0 ? ", " : "", rows[i][0]);

	/*
	 * Types and domains reach every member when created (ddl.c), so they
	 * go everywhere when dropped, by DROP TYPE or with their schema; not
	 * the row and array types that go with a table or type (neither named
	 * nor dropped by a normal dependency).  Without CASCADE: what depends
	 * on one on another member makes the whole DROP fail there.
	 */
	types = rx_spi_strings("SELECT pg_catalog.format('DROP TYPE IF EXISTS %s', o.object_identity)"
						   " FROM pg_catalog.pg_event_trigger_dropped_objects() o"
						   " WHERE o.object_type OPERATOR(pg_catalog.=) ANY ('{type,domain}')"
						   " AND (o.original OR o.normal)", &ntypes);

	/*
	 * A dropped schema goes on the other members too (CREATE SCHEMA and
	 * create_distributed_table() made it there), but only where it is
	 * empty by then: objects of that member's own stay, and so does the
	 * schema that holds them.
	 */
	schemas = rx_spi_strings("SELECT pg_catalog.format('DO $rx$ BEGIN DROP SCHEMA IF EXISTS %I;"
							 " EXCEPTION WHEN dependent_objects_still_exist THEN NULL; END $rx$',"
							 " o.object_name)"
							 " FROM pg_catalog.pg_event_trigger_dropped_objects() o"
							 " WHERE o.object_type OPERATOR(pg_catalog.=) 'schema'", &nschemas);
	if (n == 0 && nconstraints == 0 && ntypes == 0 && nschemas == 0)
		PG_RETURN_VOID();

	nmembers = rx_get_members(&members);
	self = rx_self_member_index();
	for (int m = 0; self >= 0 && m < nmembers; m++)
	{
		PGconn	   *conn;

		if (m == self)
			continue;
		conn = rx_xact_connection(&members[m]);
		for (int c = 0; c < nconstraints; c++)
			rx_exec_command(conn, members[m].name, constraints[c][0]);
		if (n > 0)
			rx_exec_command(conn, members[m].name, drop.data);
		for (int i = 0; i < ntypes; i++)
			rx_exec_command(conn, members[m].name, types[i][0]);
		for (int j = 0; j < nschemas; j++)
			rx_exec_command(conn, members[m].name, schemas[j][0]);
	}
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * rdma_exchange.member_index_of(value anyelement) returns int
 * ---------------------------------------------------------------------
 */

typedef struct MemberOfCache
{
	Oid			type;
	FmgrInfo	hashfn;
} MemberOfCache;

Datum
rx_member_index_of(PG_FUNCTION_ARGS)
{
	MemberOfCache *cache = (MemberOfCache *) fcinfo->flinfo->fn_extra;
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	RxMember   *members;
	int			n = rx_get_members(&members);

	if (n == 0)
		PG_RETURN_NULL();
	if (PG_ARGISNULL(0))
		PG_RETURN_INT32(0);
	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine the type of the value")));
	if (cache == NULL || cache->type != type)
	{
		cache = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(MemberOfCache));
		cache->type = type;
		fmgr_info_cxt(rx_hash_proc_for(rx_default_hash_opfamily(type), type),
					  &cache->hashfn, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = cache;
	}
	PG_RETURN_INT32(rx_member_for_datum(&cache->hashfn, PG_GET_COLLATION(),
										PG_GETARG_DATUM(0), false, n));
}
