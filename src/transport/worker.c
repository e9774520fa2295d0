/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The transport worker: one background worker per instance that owns
 *	  the fabric and moves messages between the ports of all members.
 *	  This file starts it (opens the endpoints), runs its main loop and
 *	  stops it.
 *
 * Every design of rdma_exchange.transport_design runs here.  The SE
 * designs send through set 0 of their kind of endpoint, shared by every
 * backend of the instance; the ME designs (mesq_sr, memq_sr, memq_rd,
 * memq_wr) work as their SE designs but send through the endpoint set
 * their port was dealt (rdma_exchange.transport_endpoints sets; set 0
 * receives for all):
 *
 *	sesq_sr  Send/Receive over unreliable datagrams (the paper's SR over
 *	         UD), made reliable in worker_stream.c;
 *	semq_sr  Send/Receive over the reliable endpoint: the same streams,
 *	         credits and acknowledgements, 64 kB messages, nothing is
 *	         retransmitted (the provider does it), credit is written back
 *	         every rdma_exchange.credit_writeback receives (Algorithm 3);
 *	semq_rd  RDMA Read (Algorithm 4): the sender keeps a filled buffer in
 *	         its registered pool and sends a PULL notice (the valid ring
 *	         entry: address and key); the receiver reads the message into
 *	         the buffer the notice arrived in and acknowledges it, which
 *	         returns the sender's buffer (the free ring);
 *	semq_wr  RDMA Write with immediate data (Algorithms 5-6): the receiver
 *	         lends empty buffers of its pool to the sender (LEND: address,
 *	         key, buffer id), one per credit, so the sender's free ring
 *	         holds exactly its credit; the sender writes a message straight
 *	         into the next lent buffer with the buffer id and length as
 *	         immediate data, which the receiver's CQ reports ("poll
 *	         completion queue").
 *
 * The notices of the one-sided designs are small messages on the same
 * reliable endpoint, not rings in remote memory the peer polls: an idle
 * worker then sleeps on its CQ instead of spinning over every ring.
 * Delivery to the backend is in sequence order for every design, so every
 * design can carry an ordered stream.
 *
 * The worker's files, by concern (worker_int.h declares what they share):
 *
 *	worker_stream.c      the stream protocol: sequence numbers, delivery in
 *	                     order, acknowledgements, credit, retransmission,
 *	                     broadcast, and the timers that drive them
 *	worker_port.c        ports: open, close, what backends submit and
 *	                     signal, the latches set at the end of a round
 *	worker_recv.c        the completion queues: receives kept posted, every
 *	                     arrival checked and routed, fault injection
 *	worker_control.c     control messages (ACK, CREDIT_REQUEST, LEND, STOP)
 *	                     sent and handled; answers for ports that closed
 *	worker_rdma_read.c   semq_rd: the receiver's RDMA Reads
 *	worker_rdma_write.c  semq_wr: lent buffers and the writes into them
 *
 * The worker spins briefly while there is traffic and otherwise sleeps on
 * its latch and the receive CQ's wait fd, so an idle instance uses no CPU.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procsignal.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "transport/fabric.h"
#include "transport/shared.h"
#include "transport/worker_int.h"

PGDLLEXPORT void rx_transport_worker_main(Datum main_arg);

#define WORKER_NAME			"rdma_exchange transport"
#define MAX_RECV_POSTED		256 /* receives kept posted (and pool / 4) */
#define IDLE_SPINS			4	/* empty polls before sleeping */
#define MAX_RECV_POSTED_RELIABLE 64 /* 64 kB receives kept posted */
#define POLL_WINDOW_US		2000	/* no wait object: poll this long after
									 * the last completion */

static RxFabricInfo finfo[RX_NEPS];
bool		ep_open[RX_MAX_ENDPOINTS];	/* by RX_EP_INDEX(kind, set) */
int			nsets[RX_NEPS];		/* endpoint sets open of each kind */
int			nbuf;
Size		msg_size[RX_NEPS];	/* header + payload */
int			recv_target[RX_NEPS];
WBuf	   *wbufs;
WPort	   *wports;
int		   *active;
int			nactive;
TimestampTz now;
bool		tx_blocked;
static WaitEventSet *wes;
static bool all_waitable = true;	/* every open endpoint has a wait fd */
static TimestampTz last_busy;	/* the last round that did something */

/* ---------------------------------------------------------------------
 * Registration
 * ---------------------------------------------------------------------
 */

void
rx_worker_register(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_ConsistentState;
	bgw.bgw_restart_time = 1;
	strlcpy(bgw.bgw_library_name, RX_EXTENSION_NAME, BGW_MAXLEN);
	strlcpy(bgw.bgw_function_name, "rx_transport_worker_main", BGW_MAXLEN);
	strlcpy(bgw.bgw_name, WORKER_NAME, BGW_MAXLEN);
	strlcpy(bgw.bgw_type, WORKER_NAME, BGW_MAXLEN);
	RegisterBackgroundWorker(&bgw);
}

/* ---------------------------------------------------------------------
 * Startup, shutdown and the main loop
 * ---------------------------------------------------------------------
 */

static void
worker_shmem_exit(int code, Datum arg)
{
	SpinLockAcquire(&rx_shared->mutex);
	rx_shared->ready = false;
	rx_shared->worker_pid = 0;
	rx_shared->worker_latch = NULL;
	memset(rx_shared->ep_ready, 0, sizeof(rx_shared->ep_ready));
	memset(rx_shared->ep_sets, 0, sizeof(rx_shared->ep_sets));
	rx_shared->dgram_name[0] = '\0';
	rx_shared->pool_reg[0] = '\0';
	SpinLockRelease(&rx_shared->mutex);
	/* sets 1.. live in set 0's domain: close them first */
	for (int e = RX_MAX_ENDPOINTS - 1; e >= 0; e--)
		rx_fabric_close(e);
}

/* what a previous incarnation of the worker left behind */
static void
recover_shared_state(void)
{
	bufpool_free_states(RX_BUF_MASK(RX_BUF_RECV_POSTED));
	bufpool_free_owned(RX_BUF_NO_OWNER, 0,
					   RX_BUF_MASK(RX_BUF_WAIT) | RX_BUF_MASK(RX_BUF_TRANSMIT));
	for (int i = 0; i < rx_shared->nports; i++)
	{
		RxPort	   *p = rx_port_slot(i);

		SpinLockAcquire(&p->mutex);
		if (p->state == RX_PORT_OPEN && p->error == RX_PORT_ERR_NONE)
		{
			p->error = RX_PORT_ERR_RESTART;
			p->error_member = p->spec.self;
			p->error_exchange = -1;
			p->error_detail[0] = '\0';
		}
		SpinLockRelease(&p->mutex);
		/* make the loop look at every slot once */
		pg_atomic_fetch_or_u32(&p->events, RX_EV_STATE);
		if (p->owner_latch && p->state != RX_PORT_FREE)
			SetLatch(p->owner_latch);
	}
	pg_atomic_write_u32(&rx_shared->pending, RX_EV_STATE);
}

static void
publish_failure(const char *why)
{
	SpinLockAcquire(&rx_shared->mutex);
	strlcpy(rx_shared->failure, why, sizeof(rx_shared->failure));
	rx_shared->ready = false;
	SpinLockRelease(&rx_shared->mutex);
}

/*
 * Configuration reloads, and process signal barriers: DROP DATABASE and
 * ALTER DATABASE SET TABLESPACE wait until every process, this one
 * included, has absorbed theirs.
 */
static void
worker_absorb_signals(void)
{
	if (ProcSignalBarrierPending)
		ProcessProcSignalBarrier();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/* the configured provider cannot work: say so once and stay idle */
static void
idle_forever(void)
{
	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (ShutdownRequestPending)
			proc_exit(1);
		worker_absorb_signals();
	}
}

/*
 * Open endpoint e, or say why not in the log and in shared memory.  The
 * datagram endpoint needs its message to hold a header and some payload.
 */
static bool
open_endpoint(int e, int provider, char *region, Size region_len, int delay_s)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	int			cls = rx_ep_class(e);
	bool		opened = false;

	PG_TRY();
	{
		rx_fabric_open(e, provider, rx_fabric_address, region, region_len,
					   nbuf, recv_target[e], &finfo[e]);
		if (bufpool_buffer_size(cls) < finfo[e].prefix_size + 2 * RX_WIRE_HEADER_SIZE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rdma_exchange.buffer_size is too small for provider \"%s\"",
							finfo[e].provider)));
		if (e == RX_EP_RELIABLE && finfo[e].prefix_size != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("reliable provider \"%s\" needs a message prefix, which rdma_exchange does not support",
							finfo[e].provider)));
		opened = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		SpinLockAcquire(&rx_shared->mutex);
		strlcpy(rx_shared->ep_failure[e], edata->message, sizeof(rx_shared->ep_failure[e]));
		SpinLockRelease(&rx_shared->mutex);
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("rdma_exchange %s endpoint not started: %s",
						e == RX_EP_DGRAM ? "datagram" : "reliable", edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 delay_s > 0 ? errhint("The transport worker tries again in %d s.", delay_s) : 0));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	if (!opened)
	{
		rx_fabric_close(e);
		return false;
	}

	/* every buffer keeps room for the datagram provider's prefix */
	if (e == RX_EP_DGRAM)
		rx_shared->prefix_size = finfo[e].prefix_size;
	msg_size[e] = Min(bufpool_buffer_size(cls) - rx_shared->prefix_size,
					  finfo[e].max_msg_size);
	recv_target[e] = Min(recv_target[e], finfo[e].recv_depth);
	ep_open[e] = true;
	ereport(LOG,
			(errmsg("rdma_exchange transport %s endpoint at %s (provider %s, %zu-byte messages, %d buffers, %d receives posted%s)",
					e == RX_EP_DGRAM ? "datagram" : "reliable",
					finfo[e].address, finfo[e].provider, msg_size[e],
					bufpool_class_nbuffers(cls), recv_target[e],
					finfo[e].registered ? ", pool registered" : "")));
	return true;
}

/*
 * The further endpoint sets of an open kind, for the ME designs.  One that
 * cannot be opened leaves the ME designs with the sets opened before it
 * (at least set 0: then they work as their SE designs), and says so.
 */
static void
open_endpoint_sets(int kind)
{
	nsets[kind] = 1;
	for (int set = 1; set < rx_transport_endpoints; set++)
	{
		int			e = RX_EP_INDEX(kind, set);
		RxFabricInfo info;
		MemoryContext oldcxt = CurrentMemoryContext;

		PG_TRY();
		{
			rx_fabric_open_set(e, nbuf, &info);
			ep_open[e] = true;
			nsets[kind]++;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			FlushErrorState();
			ereport(LOG,
					(errcode(edata->sqlerrcode),
					 errmsg("rdma_exchange %s endpoint set %d not started: %s",
							kind == RX_EP_DGRAM ? "datagram" : "reliable",
							set, edata->message),
					 edata->detail ? errdetail("%s", edata->detail) : 0,
					 errhint("The multi-endpoint designs use %d endpoint set(s) of this kind.",
							 nsets[kind])));
			FreeErrorData(edata);
		}
		PG_END_TRY();
		if (!ep_open[e])
		{
			rx_fabric_close(e);
			break;
		}
		ereport(LOG,
				(errmsg("rdma_exchange transport %s endpoint set %d at %s (provider %s)",
						kind == RX_EP_DGRAM ? "datagram" : "reliable", set,
						info.address, info.provider)));
	}
}

/*
 * Open the endpoints.  An endpoint whose provider cannot work is left
 * closed for good (the designs on it then fail with its reason); one that
 * fails otherwise (a busy address, a missing device) is tried again, less
 * and less often, until every endpoint is open, or after a few tries, at
 * least one.
 */
static void
open_data_plane(void)
{
	Size		region_len;
	char	   *region = bufpool_region(&region_len);
	int			provider[RX_NEPS] = {rx_fabric_provider, rx_reliable_provider};
	char		dgram_name[RX_FABRIC_NAME_LEN] = "";
	char		pool_reg[RX_POOL_REG_LEN] = "";
	bool		wanted[RX_NEPS];
	int			nwanted = 0;

	nbuf = bufpool_nbuffers();
	recv_target[RX_EP_DGRAM] = Min(MAX_RECV_POSTED,
								   bufpool_class_nbuffers(RX_BUF_SMALL) / 4);
	recv_target[RX_EP_RELIABLE] = Min(MAX_RECV_POSTED_RELIABLE,
									  bufpool_class_nbuffers(RX_BUF_LARGE) / 4);
	for (int e = 0; e < RX_NEPS; e++)
	{
		const char *why = rx_fabric_unsupported(e, provider[e]);

		if (e == RX_EP_RELIABLE && bufpool_class_nbuffers(RX_BUF_LARGE) == 0)
			why = "rdma_exchange.large_buffer_pool_size is 0.";
		wanted[e] = (why == NULL);
		if (why != NULL)
		{
			ereport(LOG,
					(errmsg("rdma_exchange %s endpoint not started",
							e == RX_EP_DGRAM ? "datagram" : "reliable"),
					 errdetail("%s", why)));
			strlcpy(rx_shared->ep_failure[e], why, sizeof(rx_shared->ep_failure[e]));
		}
		else
			nwanted++;
	}
	if (nwanted == 0)
	{
		publish_failure(rx_shared->ep_failure[RX_EP_DGRAM]);
		SpinLockAcquire(&rx_shared->mutex);
		rx_shared->disabled = true;
		SpinLockRelease(&rx_shared->mutex);
		idle_forever();
	}

	/* the datagram endpoint first: it knows the prefix every buffer keeps */
	for (int attempt = 0;; attempt++)
	{
		int			delay_s = 1 << Min(attempt, 6);
		int			nopen = 0;
		int			missing = 0;

		for (int e = 0; e < RX_NEPS; e++)
		{
			if (!wanted[e] || ep_open[e])
			{
				nopen += ep_open[e];
				continue;
			}
			if (e == RX_EP_RELIABLE && wanted[RX_EP_DGRAM] && !ep_open[RX_EP_DGRAM])
			{
				missing++;
				continue;
			}
			if (open_endpoint(e, provider[e], region, region_len, delay_s))
				nopen++;
			else
				missing++;
		}
		if (missing == 0 || (nopen > 0 && attempt >= 2))
			break;
		if (nopen == 0)
			publish_failure(rx_shared->ep_failure[wanted[RX_EP_DGRAM] ? RX_EP_DGRAM : RX_EP_RELIABLE]);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 delay_s * 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (ShutdownRequestPending)
			proc_exit(1);
		worker_absorb_signals();
	}

	for (int e = 0; e < RX_NEPS; e++)
		if (ep_open[e])
			open_endpoint_sets(e);

	/* where peers find the datagram endpoint by its raw name only */
	if (ep_open[RX_EP_DGRAM])
		(void) rx_fabric_name(RX_EP_DGRAM, dgram_name, sizeof(dgram_name));
	/* what the peers' RDMA operations must name (shared.h) */
	if (ep_open[RX_EP_RELIABLE])
	{
		uint64		key,
					base,
					len;

		if (rx_fabric_registration(RX_EP_RELIABLE, &key, &base, &len))
			snprintf(pool_reg, sizeof(pool_reg), "%016llx:%016llx:%016llx",
					 (unsigned long long) key, (unsigned long long) base,
					 (unsigned long long) len);
	}

	SpinLockAcquire(&rx_shared->mutex);
	strlcpy(rx_shared->dgram_name, dgram_name, sizeof(rx_shared->dgram_name));
	strlcpy(rx_shared->pool_reg, pool_reg, sizeof(rx_shared->pool_reg));
	for (int e = 0; e < RX_NEPS; e++)
	{
		rx_shared->ep_ready[e] = ep_open[e];
		rx_shared->ep_sets[e] = nsets[e];
		if (!ep_open[e])
			continue;
		strlcpy(rx_shared->provider[e], finfo[e].provider, sizeof(rx_shared->provider[e]));
		strlcpy(rx_shared->address[e], finfo[e].address, sizeof(rx_shared->address[e]));
		rx_shared->msg_size[e] = msg_size[e];
		rx_shared->ep_failure[e][0] = '\0';
	}
	rx_shared->recv_reserve[RX_BUF_SMALL] = recv_target[RX_EP_DGRAM];
	rx_shared->recv_reserve[RX_BUF_LARGE] = recv_target[RX_EP_RELIABLE];
	rx_shared->failure[0] = '\0';
	SpinLockRelease(&rx_shared->mutex);
}

void
rx_transport_worker_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	/* no database: it only needs a PGPROC and a pg_stat_activity entry */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	SpinLockAcquire(&rx_shared->mutex);
	rx_shared->worker_pid = MyProcPid;
	rx_shared->worker_latch = MyLatch;
	rx_shared->worker_generation++;
	rx_shared->disabled = false;
	strlcpy(rx_shared->failure, "The transport worker is starting.",
			sizeof(rx_shared->failure));
	SpinLockRelease(&rx_shared->mutex);
	before_shmem_exit(worker_shmem_exit, 0);

	now = GetCurrentTimestamp();
	recover_shared_state();
	open_data_plane();

	wbufs = MemoryContextAllocZero(TopMemoryContext, sizeof(WBuf) * nbuf);
	wports = MemoryContextAllocZero(TopMemoryContext,
									sizeof(WPort) * rx_shared->nports);
	active = MemoryContextAllocZero(TopMemoryContext,
									sizeof(int) * rx_shared->nports);
	maxpeers = 16;
	peers = MemoryContextAllocZero(TopMemoryContext, sizeof(Peer) * maxpeers);

	wes = CreateWaitEventSet(TopMemoryContext, 2 + RX_MAX_ENDPOINTS);
	AddWaitEventToSet(wes, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (int e = 0; e < RX_MAX_ENDPOINTS; e++)
	{
		if (!ep_open[e])
			continue;
		if (rx_fabric_wait_fd(e) >= 0)
			AddWaitEventToSet(wes, WL_SOCKET_READABLE, rx_fabric_wait_fd(e), NULL, NULL);
		else
			all_waitable = false;
	}
	rx_buflist_init(&quarantine);
	rx_buflist_init(&read_retry);

	post_receives();
	SpinLockAcquire(&rx_shared->mutex);
	rx_shared->ready = true;
	SpinLockRelease(&rx_shared->mutex);

	{
		TimestampTz next_tick = 0;
		int			idle = 0;

		for (;;)
		{
			bool		busy = false;
			TimestampTz tick = Max(1000, (TimestampTz) rx_retransmit_timeout * 125);

			if (ShutdownRequestPending)
				break;
			worker_absorb_signals();
			now = GetCurrentTimestamp();

			busy |= handle_port_events();
			busy |= poll_recv();
			busy |= poll_send();
			busy |= retry_reads();
			if (tx_blocked)
				retry_blocked();
			if (now >= next_tick)
			{
				timers(tick);
				release_quarantine();
				next_tick = now + tick;
			}
			flush_round();
			post_receives();
			wake_buffer_waiters();

			if (busy)
			{
				idle = 0;
				last_busy = now;
				continue;
			}
			if (++idle < IDLE_SPINS)
				continue;
			idle = 0;

			/*
			 * An endpoint without a wait object (shm: its peers write into
			 * our memory) cannot wake us: while queries run and traffic was
			 * recent, keep polling, yielding the core to the backends; a
			 * sleep here would add a millisecond to every round trip.
			 */
			if (!all_waitable && nactive > 0 && now - last_busy < POLL_WINDOW_US)
			{
				sched_yield();
				continue;
			}

			if (rx_fabric_trywait() || !all_waitable)
			{
				WaitEvent ev;
				long		timeout = -1;

				/* open ports have timers: retransmission, keepalive */
				if (nactive > 0 || ndelayed > 0 || tx_blocked ||
					quarantine.head >= 0)
					timeout = Max(1, (long) (tick / 1000));
				if (!all_waitable)
					timeout = timeout < 0 ? 10 : Min(timeout, 1);
				(void) WaitEventSetWait(wes, timeout, &ev, 1, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
			}
		}
	}
	/* exit code 1: a worker terminated by hand is started again */
	proc_exit(1);
}
