/*-------------------------------------------------------------------------
 *
 * metadata.c
 *	  Backend-local caches of the cluster catalog: is the extension
 *	  installed here, who are the members, how is a table distributed.
 *
 * The planner asks rx_extension_loaded() and rx_table_distribution() for
 * every relation of every query, so both answer from memory.  The caches
 * are built by direct scans of the catalog tables, never through SPI: SPI
 * would plan a query and so re-enter the planner hook that asked.
 *
 * They are dropped by a relcache callback.  Changes to the catalog tables
 * do not produce relcache invalidations by themselves (they are ordinary
 * tables), so a statement-level trigger on both tables
 * (rdma_exchange.catalog_changed) invalidates the catalog table's own
 * relcache entry; that message reaches every backend at commit and this
 * backend at the next command, and is undone locally on abort.  Creating
 * or dropping the extension creates or drops the catalog tables, which
 * invalidates their relcache entries as well, so the "is it installed"
 * answer follows without a syscache on pg_extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "cluster/ddl.h"
#include "cluster/dml.h"
#include "cluster/two_phase.h"
#include "cluster/hashing.h"
#include "cluster/cluster_snapshot.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"

PG_FUNCTION_INFO_V1(rx_catalog_changed);

/* column numbers of rdma_exchange.node and rdma_exchange.dist_table */
#define Anum_node_node_id			1
#define Anum_node_host				2
#define Anum_node_port				3
#define Anum_node_fabric_address	4
#define Anum_node_system_identifier 5
#define Natts_node					5

#define Anum_dist_relid				1
#define Anum_dist_method			2
#define Anum_dist_column			3
#define Natts_dist					4	/* 4: seq_stride, for restore.c */

typedef enum ExtensionState
{
	EXT_UNKNOWN,
	EXT_NOT_LOADED,
	EXT_LOADED
} ExtensionState;

static ExtensionState ext_state = EXT_UNKNOWN;
static Oid	node_relid = InvalidOid;
static Oid	dist_relid = InvalidOid;

/* members, in member-index order */
static bool members_valid = false;
static int	nmembers_cached = 0;
static RxMember *members_cached = NULL;
static int	self_index_cached = -1;

/* relid -> distribution */
typedef struct DistEntry
{
	Oid			relid;			/* hash key */
	RxDistMethod method;
	NameData	column;
	bool		resolved;		/* distcol and friends looked up */
	AttrNumber	distcol;
	Oid			distcol_type;
	Oid			hash_opfamily;
} DistEntry;

static bool dist_valid = false;
static HTAB *dist_cache = NULL;

static void
metadata_relcache_callback(Datum arg, Oid relid)
{
	/*
	 * Only flags change here: the callback may run while a cache is being
	 * built (opening a relation accepts invalidation messages), so the
	 * builder must not find its structures freed under it.
	 */
	if (relid == InvalidOid)
	{
		ext_state = EXT_UNKNOWN;
		members_valid = false;
		dist_valid = false;
		return;
	}
	if (ext_state == EXT_NOT_LOADED)
		ext_state = EXT_UNKNOWN;	/* perhaps CREATE EXTENSION */
	if (relid == node_relid)
	{
		ext_state = EXT_UNKNOWN;	/* perhaps DROP EXTENSION */
		members_valid = false;
	}
	if (relid == dist_relid)
	{
		ext_state = EXT_UNKNOWN;
		dist_valid = false;
	}
	else if (dist_valid && dist_cache != NULL &&
			 hash_search(dist_cache, &relid, HASH_FIND, NULL) != NULL)
	{
		/* a distributed table changed: its column may have moved */
		dist_valid = false;
	}
}

void
rx_metadata_init(void)
{
	CacheRegisterRelcacheCallback(metadata_relcache_callback, (Datum) 0);
	rx_remote_init();
	rx_remote_xact_init();
	rx_dml_init();
	rx_ddl_init();
	rx_two_phase_init();
	rx_cluster_snapshot_init();
}

/* ---------------------------------------------------------------------
 * Is the extension installed in this database?
 * ---------------------------------------------------------------------
 */

bool
rx_extension_loaded(void)
{
	Oid			extoid;
	Oid			nspoid;

	if (ext_state == EXT_LOADED)
		return true;
	if (ext_state == EXT_NOT_LOADED)
		return false;
	if (!IsTransactionState() || !OidIsValid(MyDatabaseId))
		return false;

	extoid = get_extension_oid(RX_EXTENSION_NAME, true);
	if (!OidIsValid(extoid))
	{
		ext_state = EXT_NOT_LOADED;
		return false;
	}

	/*
	 * While CREATE EXTENSION runs our script the catalog tables may not
	 * exist yet: answer "no" without caching it.
	 */
	if (creating_extension && CurrentExtensionObject == extoid)
		return false;

	nspoid = get_namespace_oid(RX_SCHEMA_NAME, true);
	node_relid = OidIsValid(nspoid) ? get_relname_relid("node", nspoid) : InvalidOid;
	dist_relid = OidIsValid(nspoid) ? get_relname_relid("dist_table", nspoid) : InvalidOid;
	if (!OidIsValid(node_relid) || !OidIsValid(dist_relid))
	{
		/* e.g. in the middle of DROP EXTENSION; ask again later */
		return false;
	}
	ext_state = EXT_LOADED;
	members_valid = false;
	dist_valid = false;
	return true;
}

Oid
rx_node_catalog_relid(void)
{
	return rx_extension_loaded() ? node_relid : InvalidOid;
}

Oid
rx_dist_catalog_relid(void)
{
	return rx_extension_loaded() ? dist_relid : InvalidOid;
}

Oid
rx_node_catalog_relid_cached(void)
{
	return node_relid;
}

Oid
rx_dist_catalog_relid_cached(void)
{
	return dist_relid;
}

/* ---------------------------------------------------------------------
 * Members
 * ---------------------------------------------------------------------
 */

static int
member_cmp(const void *a, const void *b)
{
	const RxMember *ma = (const RxMember *) a;
	const RxMember *mb = (const RxMember *) b;

	return (ma->node_id > mb->node_id) - (ma->node_id < mb->node_id);
}

static void
build_members(void)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			n = 0;
	bool		too_many = false;
	RxMember   *m;
	uint64		sysid = GetSystemIdentifier();

	rel = try_table_open(node_relid, AccessShareLock);
	if (rel == NULL)
	{
		nmembers_cached = 0;
		self_index_cached = -1;
		return;
	}

	if (members_cached == NULL)
		members_cached = MemoryContextAllocZero(TopMemoryContext,
												sizeof(RxMember) * RX_MAX_MEMBERS);
	m = members_cached;

	/*
	 * Valid before the scan (see the callback), and not after an error in
	 * it: a cancel or a timeout that interrupts the scan must not leave a
	 * half-read list that says "valid" (this member then said it was none
	 * of the members for the rest of the session).
	 */
	members_valid = true;
	PG_TRY();
	{
		scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			Datum		values[Natts_node];
			bool		nulls[Natts_node];
			RxMember   *mb;

			if (n >= RX_MAX_MEMBERS)
			{
				too_many = true;
				break;
			}
			heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
			mb = &m[n++];
			memset(mb, 0, sizeof(RxMember));
			mb->node_id = DatumGetInt32(values[Anum_node_node_id - 1]);
			if (!nulls[Anum_node_host - 1])
				text_to_cstring_buffer(DatumGetTextPP(values[Anum_node_host - 1]),
									   mb->host, sizeof(mb->host));
			mb->port = nulls[Anum_node_port - 1] ? 0 :
				DatumGetInt32(values[Anum_node_port - 1]);
			if (!nulls[Anum_node_fabric_address - 1])
				text_to_cstring_buffer(DatumGetTextPP(values[Anum_node_fabric_address - 1]),
									   mb->fabric_addr, sizeof(mb->fabric_addr));
			mb->system_identifier = nulls[Anum_node_system_identifier - 1] ? 0 :
				(uint64) DatumGetInt64(values[Anum_node_system_identifier - 1]);
			snprintf(mb->name, sizeof(mb->name), "%s:%d", mb->host, mb->port);
		}
		systable_endscan(scan);
	}
	PG_CATCH();
	{
		members_valid = false;
		nmembers_cached = 0;
		self_index_cached = -1;
		PG_RE_THROW();
	}
	PG_END_TRY();
	table_close(rel, AccessShareLock);
	if (too_many)
	{
		members_valid = false;
		nmembers_cached = 0;
		self_index_cached = -1;
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rdma_exchange.node lists more than %d members",
						RX_MAX_MEMBERS)));
	}

	qsort(m, n, sizeof(RxMember), member_cmp);
	nmembers_cached = n;
	self_index_cached = -1;
	for (int i = 0; i < n; i++)
		if (m[i].system_identifier == sysid)
			self_index_cached = i;
}

int
rx_get_members(RxMember **members)
{
	if (!rx_extension_loaded())
	{
		*members = NULL;
		return 0;
	}
	if (!members_valid)
		build_members();
	*members = palloc(sizeof(RxMember) * Max(nmembers_cached, 1));
	memcpy(*members, members_cached, sizeof(RxMember) * nmembers_cached);
	return nmembers_cached;
}

int
rx_self_member_index(void)
{
	if (!rx_extension_loaded())
		return -1;
	if (!members_valid)
		build_members();
	return self_index_cached;
}

/* ---------------------------------------------------------------------
 * Distributed tables
 * ---------------------------------------------------------------------
 */

char *
rx_qualified_relname(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void
build_dist_cache(void)
{
	HASHCTL		ctl;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (dist_cache != NULL)
	{
		hash_destroy(dist_cache);
		dist_cache = NULL;
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(DistEntry);
	ctl.hcxt = TopMemoryContext;
	dist_cache = hash_create("rdma_exchange distributed tables", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	rel = try_table_open(dist_relid, AccessShareLock);
	if (rel == NULL)
		return;

	/* valid before the scan, not after an error in it (build_members()) */
	dist_valid = true;
	PG_TRY();
	{
		scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			Datum		values[Natts_dist];
			bool		nulls[Natts_dist];
			Oid			relid;
			DistEntry  *e;
			bool		found;

			heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
			if (nulls[Anum_dist_relid - 1] || nulls[Anum_dist_method - 1])
				continue;
			relid = DatumGetObjectId(values[Anum_dist_relid - 1]);
			e = hash_search(dist_cache, &relid, HASH_ENTER, &found);
			e->method = (RxDistMethod) DatumGetChar(values[Anum_dist_method - 1]);
			if (nulls[Anum_dist_column - 1])
				memset(&e->column, 0, sizeof(NameData));
			else
				namestrcpy(&e->column,
						   NameStr(*DatumGetName(values[Anum_dist_column - 1])));
			e->resolved = false;
		}
		systable_endscan(scan);
	}
	PG_CATCH();
	{
		/* a table missing from the cache would be read as a local one */
		dist_valid = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	table_close(rel, AccessShareLock);
}

/*
 * Column, type and hash family of a hash-distributed table, looked up at
 * the first use after each invalidation (ALTER TABLE invalidates it).
 */
static void
resolve_entry(DistEntry *e)
{
	AttrNumber	attnum;
	Oid			type;

	if (e->method != RX_DIST_HASH)
	{
		e->distcol = InvalidAttrNumber;
		e->distcol_type = InvalidOid;
		e->hash_opfamily = InvalidOid;
		e->resolved = true;
		return;
	}
	attnum = get_attnum(e->relid, NameStr(e->column));
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("distribution column \"%s\" of table \"%s\" does not exist",
						NameStr(e->column), get_rel_name(e->relid)),
				 errdetail("The catalog rdma_exchange.dist_table names a column the table does not have."),
				 errhint("The distribution column of a table cannot be renamed or dropped; rename it back.")));
	type = get_atttype(e->relid, attnum);
	e->distcol = attnum;
	e->distcol_type = type;
	e->hash_opfamily = rx_default_hash_opfamily(type);
	e->resolved = true;
}

void
rx_table_distribution(Oid relid, RxTableDist *dist)
{
	DistEntry  *e;

	memset(dist, 0, sizeof(RxTableDist));
	dist->method = RX_DIST_NONE;

	if (!rx_extension_loaded())
		return;
	if (!dist_valid || dist_cache == NULL)
		build_dist_cache();
	if (dist_cache == NULL || hash_get_num_entries(dist_cache) == 0)
		return;
	e = hash_search(dist_cache, &relid, HASH_FIND, NULL);
	if (e == NULL)
		return;
	if (!e->resolved)
		resolve_entry(e);
	dist->method = e->method;
	dist->distcol = e->distcol;
	dist->distcol_type = e->distcol_type;
	dist->hash_opfamily = e->hash_opfamily;
}

const char *
rx_table_dist_column(Oid relid)
{
	DistEntry  *e;

	if (!rx_extension_loaded())
		return NULL;
	if (!dist_valid || dist_cache == NULL)
		build_dist_cache();
	e = hash_search(dist_cache, &relid, HASH_FIND, NULL);
	if (e == NULL || e->method != RX_DIST_HASH)
		return NULL;
	return pstrdup(NameStr(e->column));
}

/* ---------------------------------------------------------------------
 * Who is asking: an ordinary client, or another member?
 * ---------------------------------------------------------------------
 */

static int	member_session_depth = 0;

bool
rx_in_member_session(void)
{
	return member_session_depth > 0 ||
		(application_name != NULL &&
		 strcmp(application_name, RX_APPLICATION_NAME) == 0);
}

void
rx_push_member_session(void)
{
	member_session_depth++;
}

void
rx_pop_member_session(void)
{
	Assert(member_session_depth > 0);
	member_session_depth--;
}

/* ---------------------------------------------------------------------
 * rdma_exchange.catalog_changed(): statement trigger on the catalog
 * ---------------------------------------------------------------------
 */

Datum
rx_catalog_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rdma_exchange.catalog_changed() must be called as a trigger")));

	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	PG_RETURN_POINTER(NULL);
}
