/*-------------------------------------------------------------------------
 *
 * ref_order.c
 *	  Writes to a reference table queue on the first member before they
 *	  lock any row, so that concurrent writes through different members
 *	  cannot deadlock.
 *
 * A reference table is written on every member: the member a write
 * entered through changes its copy first (locking the rows there), then
 * every other copy.  Two sessions changing the same row through two
 * members would each hold the row on their own member and wait for it on
 * the other's: a deadlock, where one server would simply queue the
 * second update behind the first.  Two sessions entering through the
 * same member cannot: both lock that member's copy first, so they queue
 * on its row lock as on one server, and only the first to get it goes on
 * to the other copies.
 *
 * So before a statement writes a reference table, the writer takes that
 * table's "write order" for the member it entered through, on the first
 * member (over the transaction's connection there, or here when this is
 * the first member), held until the transaction ends: one advisory lock
 * per member, its own member's in ROW EXCLUSIVE mode and every other
 * member's in SHARE mode, in member order.  Writers through one member
 * do not conflict (they meet on the row locks of their member's copy);
 * writers through different members exclude each other, each waiting in
 * the order it got there.  The price: concurrent writes to different
 * rows through different members queue (reference tables are small and
 * rarely written; README).  Reads never take it.  Member sessions
 * (forwarded rows) do not: their coordinator took it.
 *
 * The locks' key is a hash of the table's qualified name (OIDs differ
 * between members); in pg_locks: locktype advisory, classid 1919181923
 * ("rdxc"), objid the hash, objsubid 16 + the member's index.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cluster/metadata.h"
#include "cluster/ref_order.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"

PG_FUNCTION_INFO_V1(rx_order_reference_write_sql);

#define ORDER_KEY1 0x72647863
#define ORDER_FIELD4_BASE 16

/* the write order of a table for a writer that entered through entry */
static void
lock_order(const char *qualified, int entry, int nmembers)
{
	uint32		key = hash_bytes((const unsigned char *) qualified, strlen(qualified));

	for (int m = 0; m < nmembers; m++)
	{
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, ORDER_KEY1, key,
							 ORDER_FIELD4_BASE + m);
		(void) LockAcquire(&tag, m == entry ? RowExclusiveLock : ShareLock,
						   false, false);
	}
}

/*
 * rdma_exchange.order_reference_write(qualified_name, entry, members), on
 * the first member
 */
Datum
rx_order_reference_write_sql(PG_FUNCTION_ARGS)
{
	int			entry = PG_GETARG_INT32(1);
	int			nmembers = PG_GETARG_INT32(2);

	if (entry < 0 || nmembers > RX_MAX_MEMBERS || entry >= nmembers)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("member index %d is not one of %d members", entry, nmembers)));
	lock_order(text_to_cstring(PG_GETARG_TEXT_PP(0)), entry, nmembers);
	PG_RETURN_VOID();
}

/*
 * The tables this (sub)transaction holds the order of: asking again costs
 * a round trip per statement or row otherwise.  A lock taken in a
 * subtransaction that rolled back is gone, and the next statement runs in
 * another subtransaction id, so the list starts over then.
 */
static LocalTransactionId held_lxid = InvalidLocalTransactionId;
static SubTransactionId held_subxid = InvalidSubTransactionId;
static List *held = NIL;		/* relids, in TopTransactionContext */

void
rx_order_reference_write(Oid relid)
{
	RxMember   *members;
	int			nmembers;
	int			self;
	char	   *qualified;
	MemoryContext old;

	if (held_lxid != MyProc->lxid || held_subxid != GetCurrentSubTransactionId())
	{
		held_lxid = MyProc->lxid;
		held_subxid = GetCurrentSubTransactionId();
		held = NIL;
	}
	else if (list_member_oid(held, relid))
		return;

	nmembers = rx_get_members(&members);
	self = rx_self_member_index();
	if (nmembers < 2 || self < 0)
		return;
	qualified = rx_qualified_relname(relid);
	if (self == 0)
		lock_order(qualified, self, nmembers);
	else
		rx_xact_exec(&members[0],
					 psprintf("SELECT rdma_exchange.order_reference_write(%s, %d, %d)",
							  quote_literal_cstr(qualified), self, nmembers),
					 false);

	old = MemoryContextSwitchTo(TopTransactionContext);
	held = lappend_oid(held, relid);
	MemoryContextSwitchTo(old);
}
