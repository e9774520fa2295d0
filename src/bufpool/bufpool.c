/*-------------------------------------------------------------------------
 *
 * bufpool.c
 *	  The shared pool of message buffers: layout, free list, accounting.
 *
 * The pool is sized in the postmaster (shmem_request_hook) from settings
 * alone; nothing here knows about the fabric.  The transport worker
 * registers bufpool_region() with the fabric when the provider needs it.
 *
 * A channel takes a buffer from the pool when it needs one and gives it
 * back as soon as the message is acknowledged or consumed, so the number of
 * buffers of a stream adapts to its traffic (the paper's query-aware buffer
 * management) with no per-channel cache to tune.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "storage/spin.h"

#include "bufpool/bufpool.h"

#define BUFPOOL_ALIGN		4096	/* registration works on whole pages */

typedef struct BufPoolShared
{
	slock_t		lock;			/* protects the free list */
	int32		free_head;
	int32		nfree;
	int32		nbuffers;
	Size		buffer_size;
	Size		data_offset;	/* from the start of this struct */
	RxBufDesc	descs[FLEXIBLE_ARRAY_MEMBER];
} BufPoolShared;

static BufPoolShared *pool = NULL;
static char *pool_data = NULL;

static int
pool_nbuffers_setting(void)
{
	Size		total = (Size) rx_buffer_pool_size * 1024;

	return (int) Max(total / (Size) rx_buffer_size, 16);
}

static Size
pool_header_size(int nbuffers)
{
	return TYPEALIGN(BUFPOOL_ALIGN,
					 add_size(offsetof(BufPoolShared, descs),
							  mul_size(nbuffers, sizeof(RxBufDesc))));
}

Size
bufpool_shmem_size(void)
{
	int			n = pool_nbuffers_setting();

	/* slack to align the start of the data on a page */
	return add_size(add_size(pool_header_size(n), BUFPOOL_ALIGN),
					mul_size(n, (Size) rx_buffer_size));
}

void
bufpool_shmem_init(void)
{
	bool		found;
	int			n = pool_nbuffers_setting();
	char	   *raw;

	raw = ShmemInitStruct("rdma_exchange buffer pool", bufpool_shmem_size(),
						  &found);
	/* align the header so that the data (header size is page rounded) is too */
	pool = (BufPoolShared *) TYPEALIGN(BUFPOOL_ALIGN, raw);
	pool_data = (char *) pool + pool_header_size(n);
	if (found)
		return;

	SpinLockInit(&pool->lock);
	pool->nbuffers = n;
	pool->buffer_size = rx_buffer_size;
	pool->data_offset = pool_header_size(n);
	for (int i = 0; i < n; i++)
	{
		pool->descs[i].state = RX_BUF_FREE;
		pool->descs[i].next = (i + 1 < n) ? i + 1 : -1;
		pool->descs[i].owner = RX_BUF_NO_OWNER;
		pool->descs[i].owner_gen = 0;
	}
	pool->free_head = 0;
	pool->nfree = n;
}

int
bufpool_nbuffers(void)
{
	return pool->nbuffers;
}

Size
bufpool_buffer_size(void)
{
	return pool->buffer_size;
}

char *
bufpool_buffer(int id)
{
	Assert(id >= 0 && id < pool->nbuffers);
	return pool_data + (Size) id * pool->buffer_size;
}

RxBufDesc *
bufpool_desc(int id)
{
	Assert(id >= 0 && id < pool->nbuffers);
	return &pool->descs[id];
}

/* the buffer that contains ptr, or -1 */
int
bufpool_id_of(const char *ptr)
{
	Size		off;

	if (ptr < pool_data)
		return -1;
	off = ptr - pool_data;
	if (off >= (Size) pool->nbuffers * pool->buffer_size)
		return -1;
	return (int) (off / pool->buffer_size);
}

char *
bufpool_region(Size *len)
{
	*len = (Size) pool->nbuffers * pool->buffer_size;
	return pool_data;
}

int
bufpool_get(RxBufState state, int owner, uint32 owner_gen, int reserve)
{
	int			id;
	RxBufDesc  *d;

	SpinLockAcquire(&pool->lock);
	if (pool->nfree <= reserve)
	{
		SpinLockRelease(&pool->lock);
		return -1;
	}
	id = pool->free_head;
	d = &pool->descs[id];
	pool->free_head = d->next;
	pool->nfree--;
	d->state = state;
	d->owner = owner;
	d->owner_gen = owner_gen;
	d->next = -1;
	SpinLockRelease(&pool->lock);
	return id;
}

static inline void
pool_put_locked(int id)
{
	RxBufDesc  *d = &pool->descs[id];

	d->state = RX_BUF_FREE;
	d->owner = RX_BUF_NO_OWNER;
	d->next = pool->free_head;
	pool->free_head = id;
	pool->nfree++;
}

void
bufpool_put(int id)
{
	SpinLockAcquire(&pool->lock);
	if (pool->descs[id].state == RX_BUF_FREE)
	{
		SpinLockRelease(&pool->lock);
		elog(ERROR, "rdma_exchange buffer %d freed twice", id);
	}
	pool_put_locked(id);
	SpinLockRelease(&pool->lock);
}

int
bufpool_nfree(void)
{
	return *((volatile int32 *) &pool->nfree);
}

int
bufpool_free_owned(int owner, uint32 owner_gen, uint32 state_mask)
{
	int			n = 0;

	SpinLockAcquire(&pool->lock);
	for (int i = 0; i < pool->nbuffers; i++)
	{
		RxBufDesc  *d = &pool->descs[i];

		if (d->owner == owner && d->owner_gen == owner_gen &&
			d->state != RX_BUF_FREE && (state_mask & RX_BUF_MASK(d->state)))
		{
			pool_put_locked(i);
			n++;
		}
	}
	SpinLockRelease(&pool->lock);
	return n;
}

int
bufpool_free_states(uint32 state_mask)
{
	int			n = 0;

	SpinLockAcquire(&pool->lock);
	for (int i = 0; i < pool->nbuffers; i++)
	{
		RxBufDesc  *d = &pool->descs[i];

		if (d->state != RX_BUF_FREE && (state_mask & RX_BUF_MASK(d->state)))
		{
			pool_put_locked(i);
			n++;
		}
	}
	SpinLockRelease(&pool->lock);
	return n;
}

/* a snapshot for statistics; states change under our feet, that is fine */
void
bufpool_count_states(uint64 *counts)
{
	memset(counts, 0, sizeof(uint64) * RX_BUF_NSTATES);
	for (int i = 0; i < pool->nbuffers; i++)
	{
		uint8		s = *((volatile uint8 *) &pool->descs[i].state);

		if (s < RX_BUF_NSTATES)
			counts[s]++;
	}
}
