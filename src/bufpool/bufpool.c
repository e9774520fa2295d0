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

/* one size class: its buffers are contiguous, ids first .. first + n - 1 */
typedef struct BufClass
{
	int32		first;
	int32		nbuffers;
	Size		buffer_size;
	Size		offset;			/* of its first buffer from pool_data */
	int32		free_head;
	int32		nfree;
	int32		low_water;		/* fewest free since start-up */
	int32		reserved;		/* free buffers promised to fixed-depth ports */
	uint64		grows;			/* buffers taken from the free list */
	uint64		shrinks;		/* buffers given back */
} BufClass;

typedef struct BufPoolShared
{
	slock_t		lock;			/* protects the free lists */
	int32		nbuffers;
	BufClass	classes[RX_BUF_NCLASSES];
	RxBufDesc	descs[FLEXIBLE_ARRAY_MEMBER];
} BufPoolShared;

static BufPoolShared *pool = NULL;
static char *pool_data = NULL;

static void
class_settings(int *n, Size *size)
{
	size[RX_BUF_SMALL] = rx_buffer_size;
	size[RX_BUF_LARGE] = rx_large_buffer_size;
	n[RX_BUF_SMALL] = (int) Max((Size) rx_buffer_pool_size * 1024 / size[RX_BUF_SMALL], 16);
	n[RX_BUF_LARGE] = rx_large_buffer_pool_size == 0 ? 0 :
		(int) Max((Size) rx_large_buffer_pool_size * 1024 / size[RX_BUF_LARGE], 4);
}

static Size
pool_header_size(int nbuffers)
{
	return TYPEALIGN(BUFPOOL_ALIGN,
					 add_size(offsetof(BufPoolShared, descs),
							  mul_size(nbuffers, sizeof(RxBufDesc))));
}

/* bytes of data: the classes one after the other, each page aligned */
static Size
pool_data_size(const int *n, const Size *size)
{
	Size		total = 0;

	for (int c = 0; c < RX_BUF_NCLASSES; c++)
		total = add_size(TYPEALIGN(BUFPOOL_ALIGN, total), mul_size(n[c], size[c]));
	return TYPEALIGN(BUFPOOL_ALIGN, total);
}

Size
bufpool_shmem_size(void)
{
	int			n[RX_BUF_NCLASSES];
	Size		size[RX_BUF_NCLASSES];

	class_settings(n, size);
	/* slack to align the start of the data on a page */
	return add_size(add_size(pool_header_size(n[0] + n[1]), BUFPOOL_ALIGN),
					pool_data_size(n, size));
}

void
bufpool_shmem_init(void)
{
	bool		found;
	int			n[RX_BUF_NCLASSES];
	Size		size[RX_BUF_NCLASSES];
	int			total;
	char	   *raw;
	Size		offset = 0;
	int			first = 0;

	class_settings(n, size);
	total = n[0] + n[1];
	raw = ShmemInitStruct("rdma_exchange buffer pool", bufpool_shmem_size(),
						  &found);
	/* align the header so that the data (header size is page rounded) is too */
	pool = (BufPoolShared *) TYPEALIGN(BUFPOOL_ALIGN, raw);
	pool_data = (char *) pool + pool_header_size(total);
	if (found)
		return;

	SpinLockInit(&pool->lock);
	pool->nbuffers = total;
	for (int c = 0; c < RX_BUF_NCLASSES; c++)
	{
		BufClass   *cl = &pool->classes[c];

		offset = TYPEALIGN(BUFPOOL_ALIGN, offset);
		memset(cl, 0, sizeof(*cl));
		cl->first = first;
		cl->nbuffers = n[c];
		cl->buffer_size = size[c];
		cl->offset = offset;
		cl->free_head = n[c] > 0 ? first : -1;
		cl->nfree = cl->low_water = n[c];
		for (int i = first; i < first + n[c]; i++)
		{
			pool->descs[i].state = RX_BUF_FREE;
			pool->descs[i].next = (i + 1 < first + n[c]) ? i + 1 : -1;
			pool->descs[i].owner = RX_BUF_NO_OWNER;
			pool->descs[i].owner_gen = 0;
		}
		offset += (Size) n[c] * size[c];
		first += n[c];
	}
}

int
bufpool_nbuffers(void)
{
	return pool->nbuffers;
}

int
bufpool_class_nbuffers(int cls)
{
	return pool->classes[cls].nbuffers;
}

Size
bufpool_buffer_size(int cls)
{
	return pool->classes[cls].buffer_size;
}

static inline int
class_of(int id)
{
	return id >= pool->classes[RX_BUF_LARGE].first &&
		pool->classes[RX_BUF_LARGE].nbuffers > 0 ? RX_BUF_LARGE : RX_BUF_SMALL;
}

int
bufpool_class_of(int id)
{
	Assert(id >= 0 && id < pool->nbuffers);
	return class_of(id);
}

char *
bufpool_buffer(int id)
{
	BufClass   *cl;

	Assert(id >= 0 && id < pool->nbuffers);
	cl = &pool->classes[class_of(id)];
	return pool_data + cl->offset + (Size) (id - cl->first) * cl->buffer_size;
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
	if (ptr < pool_data)
		return -1;
	for (int c = 0; c < RX_BUF_NCLASSES; c++)
	{
		BufClass   *cl = &pool->classes[c];
		Size		off = ptr - pool_data;

		if (off >= cl->offset &&
			off < cl->offset + (Size) cl->nbuffers * cl->buffer_size)
			return cl->first + (int) ((off - cl->offset) / cl->buffer_size);
	}
	return -1;
}

char *
bufpool_region(Size *len)
{
	int			n[RX_BUF_NCLASSES];
	Size		size[RX_BUF_NCLASSES];

	n[RX_BUF_SMALL] = pool->classes[RX_BUF_SMALL].nbuffers;
	n[RX_BUF_LARGE] = pool->classes[RX_BUF_LARGE].nbuffers;
	size[RX_BUF_SMALL] = pool->classes[RX_BUF_SMALL].buffer_size;
	size[RX_BUF_LARGE] = pool->classes[RX_BUF_LARGE].buffer_size;
	*len = pool_data_size(n, size);
	return pool_data;
}

int
bufpool_get(int cls, RxBufState state, int owner, uint32 owner_gen,
			int reserve, bool reserved_ok)
{
	BufClass   *cl = &pool->classes[cls];
	int			id;
	RxBufDesc  *d;

	SpinLockAcquire(&pool->lock);
	if (cl->nfree - (reserved_ok ? 0 : cl->reserved) <= reserve)
	{
		SpinLockRelease(&pool->lock);
		return -1;
	}
	id = cl->free_head;
	d = &pool->descs[id];
	cl->free_head = d->next;
	cl->nfree--;
	cl->grows++;
	if (cl->nfree < cl->low_water)
		cl->low_water = cl->nfree;
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
	BufClass   *cl = &pool->classes[class_of(id)];

	d->state = RX_BUF_FREE;
	d->owner = RX_BUF_NO_OWNER;
	d->next = cl->free_head;
	cl->free_head = id;
	cl->nfree++;
	cl->shrinks++;
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
bufpool_nfree(int cls)
{
	return *((volatile int32 *) &pool->classes[cls].nfree);
}

int
bufpool_reserve(int cls, int n, int keep)
{
	BufClass   *cl = &pool->classes[cls];
	int			granted;

	SpinLockAcquire(&pool->lock);
	granted = Max(0, Min(n, cl->nfree - cl->reserved - keep));
	cl->reserved += granted;
	SpinLockRelease(&pool->lock);
	return granted;
}

void
bufpool_unreserve(int cls, int n)
{
	SpinLockAcquire(&pool->lock);
	pool->classes[cls].reserved -= n;
	Assert(pool->classes[cls].reserved >= 0);
	SpinLockRelease(&pool->lock);
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
bufpool_count_states(int cls, uint64 *counts, RxBufClassStats *stats)
{
	BufClass   *cl = &pool->classes[cls];

	SpinLockAcquire(&pool->lock);
	stats->nbuffers = cl->nbuffers;
	stats->buffer_size = cl->buffer_size;
	stats->nfree = cl->nfree;
	stats->reserved = cl->reserved;
	stats->low_water = cl->low_water;
	stats->grows = cl->grows;
	stats->shrinks = cl->shrinks;
	SpinLockRelease(&pool->lock);

	memset(counts, 0, sizeof(uint64) * RX_BUF_NSTATES);
	for (int i = cl->first; i < cl->first + cl->nbuffers; i++)
	{
		uint8		s = *((volatile uint8 *) &pool->descs[i].state);

		if (s < RX_BUF_NSTATES)
			counts[s]++;
	}
}
