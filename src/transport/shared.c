/*-------------------------------------------------------------------------
 *
 * shared.c
 *	  Shared memory of the transport and its registration at startup.
 *
 * rx_transport_init() runs in the postmaster (shared_preload_libraries):
 * it asks for the shared memory of the port array and the buffer pool and
 * registers the transport worker.  Nothing here touches the fabric.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "bufpool/bufpool.h"
#include "transport/shared.h"

RxTransportShared *rx_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
transport_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(RxTransportShared)),
					mul_size(rx_max_ports, MAXALIGN(sizeof(RxPort))));
}

static void
transport_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(transport_shmem_size());
	RequestAddinShmemSpace(bufpool_shmem_size());
}

static void
transport_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bufpool_shmem_init();
	rx_shared = ShmemInitStruct("rdma_exchange transport",
								transport_shmem_size(), &found);
	if (!found)
	{
		memset(rx_shared, 0, transport_shmem_size());
		SpinLockInit(&rx_shared->mutex);
		pg_atomic_init_u32(&rx_shared->pending, 0);
		pg_atomic_init_u32(&rx_shared->buffer_waiters, 0);
		for (int i = 0; i < RX_NCOUNTERS; i++)
			pg_atomic_init_u64(&rx_shared->counters[i], 0);
		strlcpy(rx_shared->failure, "The transport worker has not started yet.",
				sizeof(rx_shared->failure));
		rx_shared->nports = rx_max_ports;
		for (int i = 0; i < rx_max_ports; i++)
		{
			RxPort	   *p = rx_port_slot(i);

			SpinLockInit(&p->mutex);
			p->state = RX_PORT_FREE;
			p->slot = i;
			pg_atomic_init_u32(&p->events, 0);
			pg_atomic_init_u32(&p->stopped, 0);
			pg_atomic_init_u32(&p->stopped_exchanges, 0);
			rx_buflist_init(&p->queue);
			rx_buflist_init(&p->submit);
			for (int s = 0; s < RX_MAX_EXCHANGES * RX_MAX_MEMBERS; s++)
			{
				pg_atomic_init_u64(&p->send[s].credit, 0);
				pg_atomic_init_u64(&p->send[s].acked, 0);
				pg_atomic_init_u64(&p->send[s].retransmits, 0);
				pg_atomic_init_u32(&p->send[s].flags, 0);
				pg_atomic_init_u32(&p->send[s].spare, 0);
				pg_atomic_init_u64(&p->recv[s].delivered, 0);
				pg_atomic_init_u64(&p->recv[s].consumed, 0);
				pg_atomic_init_u64(&p->recv[s].advertised, 0);
				pg_atomic_init_u64(&p->recv[s].duplicates, 0);
				pg_atomic_init_u64(&p->recv[s].peak, 0);
			}
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

RxPort *
rx_port_slot(int i)
{
	char	   *base = (char *) rx_shared + MAXALIGN(sizeof(RxTransportShared));

	Assert(i >= 0 && i < rx_shared->nports);
	return (RxPort *) (base + (Size) i * MAXALIGN(sizeof(RxPort)));
}

void
rx_port_notify(RxPort *port, uint32 events)
{
	Latch	   *latch;

	pg_atomic_fetch_or_u32(&port->events, events);
	/* fetch_or is a full barrier: the worker sees the port's events */
	pg_atomic_fetch_or_u32(&rx_shared->pending, events);
	latch = rx_shared->worker_latch;
	if (latch != NULL)
		SetLatch(latch);
}

void
rx_transport_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = transport_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = transport_shmem_startup;

	rx_worker_register();
}

/* a copy of a string the worker publishes in shared memory, "" before */
static const char *
published(const char *field, char *copy, Size len)
{
	copy[0] = '\0';
	if (rx_shared != NULL)
	{
		SpinLockAcquire(&rx_shared->mutex);
		strlcpy(copy, field, len);
		SpinLockRelease(&rx_shared->mutex);
	}
	return copy;
}

const char *
rx_pool_registration(void)
{
	static char reg[RX_POOL_REG_LEN];

	return published(rx_shared ? rx_shared->pool_reg : "", reg, sizeof(reg));
}

const char *
rx_datagram_name(void)
{
	static char name[RX_FABRIC_NAME_LEN];

	return published(rx_shared ? rx_shared->dgram_name : "", name, sizeof(name));
}
