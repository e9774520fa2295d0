/*-------------------------------------------------------------------------
 *
 * lookup.c
 *	  The rows of a fallback gather, hashed by the columns the serial part
 *	  looks them up by.
 *
 * A scan of a distributed table in the serial part of a plan is gathered
 * once and kept for rescans (fallback.c).  When it was an index scan on
 * the inner side of a nested loop, each rescan asks for the rows whose
 * columns equal the outer row's values (nested loop parameters), and
 * filtering every kept row per rescan costs rows x loops: 800,000 x
 * 119,000 in TPC-H Q2 when the planner misjudged the loop count.  So the
 * RECEIVE hashes the kept rows by those columns, with the hash functions of
 * the equality operators' hash opfamilies (the same a hash join would
 * use, so cross-type comparisons hash alike), and a rescan walks one
 * bucket.  The hash only narrows the candidates: the RECEIVE's filter,
 * which still holds the equality conditions, decides.  Rows with a NULL
 * key are not kept: a strict equality never matches them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "utils/memutils.h"

#include "exec/exchange.h"
#include "exec/lookup.h"

struct RxLookup
{
	int			nkeys;
	AttrNumber *cols;			/* key columns of the kept rows */
	FmgrInfo   *col_hash;		/* their hash functions */
	FmgrInfo   *param_hash;		/* hash functions of the looked-up values */
	Oid		   *collations;
	List	   *param_states;	/* ExprStates of the looked-up values */

	MemoryContext cxt;			/* the rows and the table */
	MemoryContext scratch;		/* what a hash function allocates (detoasting) */
	MinimalTuple *rows;
	uint32	   *hashes;
	int		   *next;			/* chain within a bucket, -1 ends */
	int64		nrows;
	int64		cap;
	int		   *buckets;
	uint32		mask;

	/* the current probe */
	bool		probing;
	uint32		probe_hash;
	int			pos;
};

/*
 * h combined with the hash of key i's value d, by fn (the column's or the
 * looked-up value's hash function)
 */
static inline uint32
combine(RxLookup *lk, uint32 h, FmgrInfo *fn, int i, Datum d)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(lk->scratch);
	uint32		k = DatumGetUInt32(FunctionCall1Coll(fn, lk->collations[i], d));

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(lk->scratch);
	/* as PostgreSQL's TupleHashTable combines column hashes */
	return ((h << 1) | (h >> 31)) ^ k;
}

RxLookup *
rx_lookup_create(RxReceiveInfo *info, List *param_exprs, PlanState *ps)
{
	RxLookup   *lk;

	if (info->nlookup == 0)
		return NULL;
	lk = palloc0(sizeof(RxLookup));
	lk->nkeys = info->nlookup;
	lk->cols = info->lookup_cols;
	lk->collations = info->lookup_collations;
	lk->col_hash = palloc(sizeof(FmgrInfo) * lk->nkeys);
	lk->param_hash = palloc(sizeof(FmgrInfo) * lk->nkeys);
	for (int i = 0; i < lk->nkeys; i++)
	{
		fmgr_info(info->lookup_col_hash[i], &lk->col_hash[i]);
		fmgr_info(info->lookup_param_hash[i], &lk->param_hash[i]);
	}
	lk->param_states = ExecInitExprList(param_exprs, ps);
	lk->cxt = AllocSetContextCreate(CurrentMemoryContext, "rdma_exchange lookup",
									ALLOCSET_DEFAULT_SIZES);
	lk->scratch = AllocSetContextCreate(CurrentMemoryContext,
										"rdma_exchange lookup hashing",
										ALLOCSET_SMALL_SIZES);
	return lk;
}

/* keeps one gathered row */
void
rx_lookup_add(RxLookup *lk, TupleTableSlot *slot)
{
	MemoryContext oldcxt;
	uint32		h = 0;

	for (int i = 0; i < lk->nkeys; i++)
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, lk->cols[i], &isnull);

		if (isnull)
			return;
		h = combine(lk, h, &lk->col_hash[i], i, d);
	}
	if (lk->nrows == lk->cap)
	{
		lk->cap = Max(1024, lk->cap * 2);
		if (lk->rows == NULL)
		{
			lk->rows = MemoryContextAllocHuge(lk->cxt, sizeof(MinimalTuple) * lk->cap);
			lk->hashes = MemoryContextAllocHuge(lk->cxt, sizeof(uint32) * lk->cap);
		}
		else
		{
			lk->rows = repalloc_huge(lk->rows, sizeof(MinimalTuple) * lk->cap);
			lk->hashes = repalloc_huge(lk->hashes, sizeof(uint32) * lk->cap);
		}
	}
	oldcxt = MemoryContextSwitchTo(lk->cxt);
	lk->rows[lk->nrows] = ExecCopySlotMinimalTuple(slot);
	MemoryContextSwitchTo(oldcxt);
	lk->hashes[lk->nrows] = h;
	lk->nrows++;
}

/* every row is in: chain them into buckets */
void
rx_lookup_done(RxLookup *lk)
{
	int64		nbuckets = 1;

	while (nbuckets < lk->nrows * 2)
		nbuckets <<= 1;
	lk->mask = (uint32) (nbuckets - 1);
	lk->buckets = MemoryContextAllocHuge(lk->cxt, sizeof(int) * nbuckets);
	lk->next = MemoryContextAllocHuge(lk->cxt, sizeof(int) * Max(lk->nrows, 1));
	for (int64 b = 0; b < nbuckets; b++)
		lk->buckets[b] = -1;
	/* backwards, so that each chain keeps the rows' arrival order */
	for (int64 i = lk->nrows - 1; i >= 0; i--)
	{
		uint32		b = lk->hashes[i] & lk->mask;

		lk->next[i] = lk->buckets[b];
		lk->buckets[b] = (int) i;
	}
}

/* forget every row (the gather runs again) */
void
rx_lookup_reset(RxLookup *lk)
{
	MemoryContextReset(lk->cxt);
	lk->rows = NULL;
	lk->hashes = NULL;
	lk->next = NULL;
	lk->buckets = NULL;
	lk->nrows = lk->cap = 0;
	lk->probing = false;
}

/* a rescan: the looked-up values may have changed */
void
rx_lookup_restart(RxLookup *lk)
{
	lk->probing = false;
}

/*
 * The next kept row whose key hashes like the current values, in slot, or
 * NULL.
 */
TupleTableSlot *
rx_lookup_next(RxLookup *lk, ExprContext *econtext, TupleTableSlot *slot)
{
	if (!lk->probing)
	{
		uint32		h = 0;
		int			i = 0;
		ListCell   *lc;

		lk->probing = true;
		lk->pos = -1;
		foreach(lc, lk->param_states)
		{
			bool		isnull;
			Datum		d = ExecEvalExprSwitchContext(lfirst(lc), econtext, &isnull);

			if (isnull)
				return NULL;	/* pos -1: no row */
			h = combine(lk, h, &lk->param_hash[i], i, d);
			i++;
		}
		lk->probe_hash = h;
		lk->pos = lk->nrows > 0 ? lk->buckets[h & lk->mask] : -1;
	}
	while (lk->pos >= 0)
	{
		int			i = lk->pos;

		lk->pos = lk->next[i];
		if (lk->hashes[i] == lk->probe_hash)
			return ExecStoreMinimalTuple(lk->rows[i], slot, false);
	}
	return NULL;
}
