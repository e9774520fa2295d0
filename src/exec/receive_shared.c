/*-------------------------------------------------------------------------
 *
 * receive_shared.c
 *	  A RECEIVE shared by the parallel workers of a member's Gather: each
 *	  row the exchange brings to the member goes to one of the Gather's
 *	  processes.
 *
 * The member's Gather over a partial part (planner/local_gather.c) may
 * hold a RECEIVE where PostgreSQL planned a partial input: the outer side
 * of a join, the inner side of a Parallel Hash.  Its rows are the
 * member's share of the exchange, to be split among the Gather's
 * processes as a parallel scan splits a table, while the streams stay one
 * per member (HyPer's multiplexer): only the fragment's backend, the
 * Gather's leader, has the port and the RECEIVE's own SHUFFLE.  Its
 * RECEIVE reads the exchange as always and hands each row on to a worker
 * through a ring in the Gather's shared memory, one ring per worker, in
 * turn; it keeps a row itself only when every ring is full (or the row is
 * larger than a ring).  A worker's RECEIVE reads its ring; the leader
 * marks the rings done when the exchange ends (or its RECEIVE shuts down
 * early, under a Limit), and a worker's stream ends when its ring is done
 * and empty.  A worker may leave its share unread, as PostgreSQL's
 * partial plans allow (a participant that joins a Parallel Hash Join
 * after its probing ended returns at once): so a worker claims each row
 * before it copies it out, and at the end of the exchange the leader
 * takes back whatever no worker claimed and returns it itself.
 *
 * No process waits for another while it has rows:
 *	- the leader never waits for a worker: a full ring is skipped, and a
 *	  row goes only into a whole free space (shm_mq could leave half a
 *	  message in a queue, binding the row to a worker that is busy);
 *	- a row goes only to a worker that has attached to its ring (one that
 *	  never started would strand it);
 *	- a worker waits only for the leader, which moves the stream whenever
 *	  it runs its part of the plan: the Gather's leader must run it
 *	  (parallel_leader_participation, which the fragment turns on where a
 *	  RECEIVE is shared: fragment.c), and it does whenever no worker has
 *	  a row for it, which is when the workers wait;
 *	- except below a Parallel Hash, where the leader may wait for the
 *	  workers while it holds rows: one that grows the shared hash table
 *	  waits for every participant still reading its input to insert a row
 *	  (nodeHash.c), and a worker waiting for the leader's rows never
 *	  would.  There the leader keeps every row (leader_only, set by
 *	  planner/local_gather.c): the workers' input ends as soon as the
 *	  leader starts reading its own, not before, since by then the leader
 *	  has joined the build (a build that ended without it would lack its
 *	  rows: a participant that comes late skips it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

#include "exec/exchange.h"
#include "exec/exchange_state.h"
#include "planner/planner.h"

/* bytes of one worker's ring (PostgreSQL's tuple queues have 64kB) */
#define RING_SIZE	(64 * 1024)

typedef struct ShareRing
{
	slock_t		mutex;
	uint64		written;		/* bytes ever written, by the leader */
	uint64		claimed;		/* ... taken by a reader, being copied out */
	uint64		read;			/* ... copied out: free for writing again */
	bool		done;			/* the leader will write no more */
	PGPROC	   *reader;			/* the worker, once attached */
	char		data[RING_SIZE];
} ShareRing;

typedef struct RxReceiveShare
{
	/* leader */
	ShareRing  *rings;
	int			nrings;
	int			next;			/* ring to try first */
	bool		done;
	TupleTableSlot *send_slot;	/* a row in the exchange's format */
	Tuplestorestate *taken_back;	/* rows no worker read, at the end */
	/* worker */
	ShareRing  *mine;
	/* both: a row copied out of a ring */
	char	   *buf;
	Size		bufsize;
} RxReceiveShare;

static void
ring_copy_in(ShareRing *ring, uint64 pos, const char *src, Size len)
{
	Size		off = pos % RING_SIZE;
	Size		first = Min(len, RING_SIZE - off);

	memcpy(ring->data + off, src, first);
	memcpy(ring->data, src + first, len - first);
}

static void
ring_copy_out(ShareRing *ring, uint64 pos, char *dst, Size len)
{
	Size		off = pos % RING_SIZE;
	Size		first = Min(len, RING_SIZE - off);

	memcpy(dst, ring->data + off, first);
	memcpy(dst + first, ring->data, len - first);
}

/* put one row into ring, whole, if it has room; never waits */
static bool
ring_put(ShareRing *ring, MinimalTuple tuple)
{
	uint32		len = tuple->t_len;
	uint64		written;
	uint64		read;
	PGPROC	   *reader;
	bool		wake;

	SpinLockAcquire(&ring->mutex);
	written = ring->written;
	read = ring->read;
	reader = ring->reader;
	SpinLockRelease(&ring->mutex);
	if (reader == NULL || RING_SIZE - (written - read) < sizeof(uint32) + len)
		return false;
	ring_copy_in(ring, written, (char *) &len, sizeof(uint32));
	ring_copy_in(ring, written + sizeof(uint32), (char *) tuple, len);
	SpinLockAcquire(&ring->mutex);
	ring->written = written + sizeof(uint32) + len;
	/* the worker sleeps only after it found nothing to take */
	wake = (ring->claimed == written);
	SpinLockRelease(&ring->mutex);
	if (wake)
		SetLatch(&reader->procLatch);
	return true;
}

static void
ring_done(ShareRing *ring)
{
	PGPROC	   *reader;

	SpinLockAcquire(&ring->mutex);
	ring->done = true;
	reader = ring->reader;
	SpinLockRelease(&ring->mutex);
	if (reader != NULL)
		SetLatch(&reader->procLatch);
}

Size
rx_receive_share_estimate(CustomScanState *node, ParallelContext *pcxt)
{
	return mul_size(Max(pcxt->nworkers, 1), sizeof(ShareRing));
}

/* the leader: a ring per worker, none attached yet */
void
rx_receive_share_init_dsm(CustomScanState *node, ParallelContext *pcxt,
						  void *coordinate)
{
	RxReceiveState *r = (RxReceiveState *) node;
	RxReceiveShare *share;

	share = MemoryContextAllocZero(node->ss.ps.state->es_query_cxt,
								   sizeof(RxReceiveShare));
	share->rings = (ShareRing *) coordinate;
	share->nrings = pcxt->nworkers;
	share->send_slot = ExecInitExtraTupleSlot(node->ss.ps.state,
											  node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
											  &TTSOpsVirtual);
	for (int i = 0; i < share->nrings; i++)
	{
		SpinLockInit(&share->rings[i].mutex);
		share->rings[i].written = share->rings[i].claimed = 0;
		share->rings[i].read = 0;
		share->rings[i].done = false;
		share->rings[i].reader = NULL;
	}
	r->share = share;
}

void
rx_receive_share_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
							void *coordinate)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("RECEIVE of exchange %d inside a fragment cannot be rescanned",
					((RxReceiveState *) node)->info.exchange_id)));
}

/* a worker: its ring, from now on given rows */
void
rx_receive_share_init_worker(CustomScanState *node, shm_toc *toc,
							 void *coordinate)
{
	RxReceiveState *r = (RxReceiveState *) node;
	RxReceiveShare *share;
	ShareRing  *ring = (ShareRing *) coordinate + ParallelWorkerNumber;

	share = MemoryContextAllocZero(node->ss.ps.state->es_query_cxt,
								   sizeof(RxReceiveShare));
	share->mine = ring;
	SpinLockAcquire(&ring->mutex);
	ring->reader = MyProc;
	SpinLockRelease(&ring->mutex);
	r->share = share;
}

/*
 * The leader: hand the row in slot to a worker whose ring has room for
 * it, trying each in turn; false when none has (the leader keeps it).
 */
bool
rx_receive_share_hand_out(RxReceiveState *r, TupleTableSlot *slot)
{
	RxReceiveShare *share = r->share;
	MinimalTuple tuple = NULL;
	bool		should_free = false;
	bool		given = false;

	if (share->done)
		return false;
	for (int n = 0; n < share->nrings && !given; n++)
	{
		ShareRing  *ring = &share->rings[share->next];

		share->next = (share->next + 1) % share->nrings;
		if (tuple == NULL)
		{
			/* in the exchange's own row format, whatever the slot's */
			if (slot->tts_tupleDescriptor !=
				share->send_slot->tts_tupleDescriptor)
				slot = ExecCopySlot(share->send_slot, slot);
			tuple = ExecFetchSlotMinimalTuple(slot, &should_free);
		}
		given = ring_put(ring, tuple);
	}
	if (should_free)
		pfree(tuple);
	return given;
}

/*
 * Take the next row out of ring into *buf (grown as needed), or return
 * false when there is none now; *done: the leader will write no more.
 * The row is claimed under the lock and copied out after it, so that the
 * leader can take back at the end what no worker took (see
 * rx_receive_share_done()); its space is written again only once copied.
 */
static bool
ring_take(ShareRing *ring, char **buf, Size *bufsize, MemoryContext cxt,
		  bool *done)
{
	uint64		pos;
	uint32		len;

	SpinLockAcquire(&ring->mutex);
	*done = ring->done;
	if (ring->claimed == ring->written)
	{
		SpinLockRelease(&ring->mutex);
		return false;
	}
	pos = ring->claimed;
	ring_copy_out(ring, pos, (char *) &len, sizeof(uint32));
	ring->claimed = pos + sizeof(uint32) + len;
	SpinLockRelease(&ring->mutex);

	if (*bufsize < len)
	{
		*buf = *buf ? repalloc(*buf, len) : MemoryContextAlloc(cxt, len);
		*bufsize = len;
	}
	ring_copy_out(ring, pos + sizeof(uint32), *buf, len);
	SpinLockAcquire(&ring->mutex);
	ring->read = Max(ring->read, pos + sizeof(uint32) + len);
	SpinLockRelease(&ring->mutex);
	return true;
}

/*
 * The leader: no more rows for the workers.  With take_back, the rows
 * they have not taken come back to it (rx_receive_share_taken_back());
 * without (the plan stops early), they are not wanted.
 */
void
rx_receive_share_done(RxReceiveState *r, bool take_back)
{
	RxReceiveShare *share = r->share;
	MemoryContext cxt = r->css.ss.ps.state->es_query_cxt;

	if (share == NULL || share->rings == NULL || share->done)
		return;
	share->done = true;
	for (int i = 0; i < share->nrings; i++)
	{
		bool		done;

		ring_done(&share->rings[i]);
		while (take_back &&
			   ring_take(&share->rings[i], &share->buf, &share->bufsize, cxt,
						 &done))
		{
			if (share->taken_back == NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(cxt);

				share->taken_back = tuplestore_begin_heap(false, false, work_mem);
				MemoryContextSwitchTo(old);
			}
			ExecStoreMinimalTuple((MinimalTuple) share->buf, r->recv_slot, false);
			tuplestore_puttupleslot(share->taken_back, r->recv_slot);
		}
	}
}

/* a worker: its next row, or NULL once the leader is done and all taken */
TupleTableSlot *
rx_receive_share_next(RxReceiveState *r)
{
	RxReceiveShare *share = r->share;

	if (share == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("RECEIVE of exchange %d in a parallel worker is not shared by its Gather",
						r->info.exchange_id)));
	for (;;)
	{
		bool		done;

		if (ring_take(share->mine, &share->buf, &share->bufsize,
					  r->css.ss.ps.state->es_query_cxt, &done))
			return ExecStoreMinimalTuple((MinimalTuple) share->buf,
										 r->recv_slot, false);
		if (done)
			return NULL;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1,
						 WAIT_EVENT_MQ_RECEIVE);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The leader, at the end of its rows: what no worker took; NULL when
 * none is left.  A worker may leave its partial input unread (one that
 * joins a Parallel Hash after its probing ended returns at once), so the
 * rows still in the rings are the leader's to return.
 */
TupleTableSlot *
rx_receive_share_taken_back(RxReceiveState *r)
{
	RxReceiveShare *share = r->share;

	if (share->taken_back == NULL ||
		!tuplestore_gettupleslot(share->taken_back, true, false, r->recv_slot))
		return NULL;
	return r->recv_slot;
}

/* does plan share a RECEIVE among a Gather's workers anywhere? */
bool
rx_plan_shares_receive(Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return false;
	if (rx_is_receive(plan) && plan->parallel_aware)
		return true;
	foreach(lc, rx_plan_children(plan))
		if (rx_plan_shares_receive(lfirst(lc)))
			return true;
	return false;
}

bool
rx_stmt_shares_receive(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->subplans)
		if (rx_plan_shares_receive(lfirst(lc)))
			return true;
	return rx_plan_shares_receive(stmt->planTree);
}
