/*-------------------------------------------------------------------------
 *
 * ref_order.c
 *	  Writes to a reference table queue on the first member before they
 *	  lock any row, so that concurrent writes through different members
 *	  cannot deadlock.
 *
 * A reference table is written on every member: the member a write
 * enters through changes its copy first (locking the rows there), then
 * every other copy.  Two sessions changing the same row through two
 * members would each hold the row on their own member and wait for it on
 * the other's: a deadlock, where one server would simply queue the
 * second update behind the first.  So before a statement writes a
 * reference table, the writer takes an exclusive lock on that table's
 * "write order" on the first member (an advisory lock of its own key,
 * held until the transaction ends, over the transaction's connection to
 * that member, or here when this is the first member).  Writes to one
 * reference table then run one transaction at a time, in the order they
 * got there, whichever member they came through: like writes to the same
 * rows of one server, at the price of also queueing writes to different
 * rows (reference tables are small and rarely written; README).  Reads
 * never take it.  Member sessions (forwarded rows) do not: their
 * coordinator took it.
 *
 * The lock's key is a hash of the table's qualified name (OIDs differ
 * between members); in pg_locks: locktype advisory, classid 1919181923
 * ("rdxc"), objid the hash, objsubid 5.
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
#define ORDER_FIELD4 5

static void
lock_order(const char *qualified)
{
	LOCKTAG		tag;
	uint32		key = hash_bytes((const unsigned char *) qualified, strlen(qualified));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, ORDER_KEY1, key, ORDER_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* rdma_exchange.order_reference_write(qualified_name), on the first member */
Datum
rx_order_reference_write_sql(PG_FUNCTION_ARGS)
{
	lock_order(text_to_cstring(PG_GETARG_TEXT_PP(0)));
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
		lock_order(qualified);
	else
		rx_exec_command(rx_xact_lock_connection(&members[0]), members[0].name,
						psprintf("SELECT rdma_exchange.order_reference_write(%s)",
								 quote_literal_cstr(qualified)));

	old = MemoryContextSwitchTo(TopTransactionContext);
	held = lappend_oid(held, relid);
	MemoryContextSwitchTo(old);
}
