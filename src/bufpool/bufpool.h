/*-------------------------------------------------------------------------
 *
 * bufpool.h
 *	  The shared pool of message buffers of one instance.
 *
 * Two size classes in one page-aligned region of shared memory, which the
 * transport worker registers with the fabric once:
 *	- small: rdma_exchange.buffer_pool_size kB cut into buffers of
 *	  rdma_exchange.buffer_size bytes, for the datagram design, whose
 *	  messages are at most one MTU;
 *	- large: rdma_exchange.large_buffer_pool_size kB of
 *	  rdma_exchange.large_buffer_size buffers (64 kB), for the designs over
 *	  reliable connections.
 * Each class has its own free list; a buffer's id tells its class.  The
 * pool counts how often buffers were taken and given back, and its low
 * water mark, for the statistics view.  Every buffer has a
 * descriptor with its state (the paper's Wait / Populate / Transmit /
 * Consume, plus posted-for-receive) and its owner, the port it belongs to.
 * Owners chain the buffers they hold into lists through the descriptors.
 *
 * A buffer is owned by exactly one party at a time; whoever owns it may
 * change its state without a lock.  Only the free list is shared, under a
 * spinlock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_BUFPOOL_H
#define RX_BUFPOOL_H

#include "rdma_exchange.h"

typedef enum RxBufState
{
	RX_BUF_FREE = 0,			/* on the free list */
	RX_BUF_POPULATE,			/* a backend fills it */
	RX_BUF_TRANSMIT,			/* submitted; kept until acknowledged */
	RX_BUF_RECV_POSTED,			/* posted by the worker for receiving */
	RX_BUF_WAIT,				/* holds a received message for a backend */
	RX_BUF_CONSUME,				/* a backend reads it */
	RX_BUF_LENT,				/* semq_wr: lent to a remote sender */
	RX_BUF_QUARANTINE,			/* a peer may still reach it; see worker_stream.c */
	RX_BUF_NSTATES
} RxBufState;

#define RX_BUF_NO_OWNER		(-1)

/* size classes */
#define RX_BUF_SMALL		0
#define RX_BUF_LARGE		1
#define RX_BUF_NCLASSES		2

typedef struct RxBufClassStats
{
	int			nbuffers;
	Size		buffer_size;
	int			nfree;
	int			low_water;		/* fewest free buffers since start-up */
	int			reserved;		/* promised to fixed-depth ports */
	uint64		grows;			/* buffers taken */
	uint64		shrinks;		/* buffers given back */
} RxBufClassStats;

typedef struct RxBufDesc
{
	uint8		state;			/* RxBufState */
	int32		next;			/* list link, -1 ends a list */
	int32		owner;			/* port slot, or RX_BUF_NO_OWNER */
	uint32		owner_gen;		/* generation of that port slot */
} RxBufDesc;

/* a FIFO of buffers chained through RxBufDesc.next; the owner locks it */
typedef struct RxBufList
{
	int32		head;
	int32		tail;
	uint32		count;
} RxBufList;

extern Size bufpool_shmem_size(void);
extern void bufpool_shmem_init(void);

extern int	bufpool_nbuffers(void);
extern int	bufpool_class_nbuffers(int cls);
extern Size bufpool_buffer_size(int cls);
extern int	bufpool_class_of(int id);
extern char *bufpool_buffer(int id);
extern RxBufDesc *bufpool_desc(int id);
extern int	bufpool_id_of(const char *ptr);
extern char *bufpool_region(Size *len);

/*
 * Take a free buffer of a class, or -1 when no more than `reserve` are free
 * (so that senders cannot take the buffers the worker needs to keep
 * receiving).
 */
extern int	bufpool_get(int cls, RxBufState state, int owner, uint32 owner_gen,
						int reserve, bool reserved_ok);
extern void bufpool_put(int id);
extern int	bufpool_nfree(int cls);

/*
 * Fixed depth (rdma_exchange.buffer_depth): promise up to n free buffers of
 * a class to a port, leaving at least keep; returns how many were
 * promised.  Only gets with reserved_ok may take promised buffers.
 */
extern int	bufpool_reserve(int cls, int n, int keep);
extern void bufpool_unreserve(int cls, int n);

/* free every buffer of a port in one of the given states; returns count */
extern int	bufpool_free_owned(int owner, uint32 owner_gen, uint32 state_mask);

/* free every buffer in one of the given states, whatever its owner */
extern int	bufpool_free_states(uint32 state_mask);

#define RX_BUF_MASK(s)		(1U << (s))

extern void bufpool_count_states(int cls, uint64 *counts /* [RX_BUF_NSTATES] */ ,
								 RxBufClassStats *stats);

static inline void
rx_buflist_init(RxBufList *l)
{
	l->head = l->tail = -1;
	l->count = 0;
}

static inline void
rx_buflist_push(RxBufList *l, int id)
{
	bufpool_desc(id)->next = -1;
	if (l->tail < 0)
		l->head = id;
	else
		bufpool_desc(l->tail)->next = id;
	l->tail = id;
	l->count++;
}

static inline void
rx_buflist_push_front(RxBufList *l, int id)
{
	bufpool_desc(id)->next = l->head;
	if (l->head < 0)
		l->tail = id;
	l->head = id;
	l->count++;
}

static inline int
rx_buflist_pop(RxBufList *l)
{
	int			id = l->head;

	if (id < 0)
		return -1;
	l->head = bufpool_desc(id)->next;
	if (l->head < 0)
		l->tail = -1;
	l->count--;
	return id;
}

/* move the whole list to *dst (which must be empty) */
static inline void
rx_buflist_take(RxBufList *src, RxBufList *dst)
{
	*dst = *src;
	rx_buflist_init(src);
}

#endif							/* RX_BUFPOOL_H */
