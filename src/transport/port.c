/*-------------------------------------------------------------------------
 *
 * port.c
 *	  The backend side of the transport (transport.h): ports, zero-copy
 *	  send and receive in pool buffers, stop, wait, statistics.
 *
 * A backend never calls libfabric.  It fills pool buffers in place, chains
 * them on its port's submit list and sets the worker's latch; the worker
 * chains delivered messages on the port's queue and sets the backend's
 * latch.  Credits are read from shared memory, so a sender without credit
 * finds out without asking anybody.
 *
 * Ports a backend leaves open are closed at transaction end (commit or
 * abort, subtransaction abort too) and at backend exit; the worker then
 * frees every buffer the port held.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "transport/shared.h"

/* a port this backend opened */
typedef struct LocalPort
{
	RxPort	   *port;
	uint32		generation;
	SubTransactionId subid;
} LocalPort;

static LocalPort *local_ports = NULL;
static int	nlocal = 0;
static int	maxlocal = 0;
static bool callbacks_registered = false;

static void port_release(RxPort *port, bool wait_long);

/* ---------------------------------------------------------------------
 * Bookkeeping of this backend's ports
 * ---------------------------------------------------------------------
 */

static int
local_index(RxPort *port)
{
	for (int i = 0; i < nlocal; i++)
		if (local_ports[i].port == port &&
			local_ports[i].generation == port->generation)
			return i;
	return -1;
}

static void
local_forget(int i)
{
	local_ports[i] = local_ports[--nlocal];
}

static void
close_all_local(bool at_exit)
{
	while (nlocal > 0)
	{
		RxPort	   *port = local_ports[nlocal - 1].port;

		nlocal--;
		port_release(port, !at_exit);
	}
}

static void
rx_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			close_all_local(false);
			break;
		default:
			break;
	}
}

static void
rx_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	for (int i = nlocal - 1; i >= 0; i--)
	{
		if (local_ports[i].subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
		{
			RxPort	   *port = local_ports[i].port;

			local_forget(i);
			port_release(port, true);
		}
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			local_ports[i].subid = parentSubid;
	}
}

static void
rx_backend_exit(int code, Datum arg)
{
	close_all_local(true);
}

static void
ensure_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(rx_xact_callback, NULL);
	RegisterSubXactCallback(rx_subxact_callback, NULL);
	before_shmem_exit(rx_backend_exit, 0);
	maxlocal = 8;
	local_ports = MemoryContextAlloc(TopMemoryContext,
									 sizeof(LocalPort) * maxlocal);
	callbacks_registered = true;
}

/* ---------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------
 */

static bool
worker_running(void)
{
	return rx_shared != NULL && rx_shared->worker_pid != 0 && rx_shared->ready;
}

static void
report_worker_down(void)
{
	char		failure[320];

	SpinLockAcquire(&rx_shared->mutex);
	strlcpy(failure, rx_shared->failure, sizeof(failure));
	SpinLockRelease(&rx_shared->mutex);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the rdma_exchange transport worker of this server is not running"),
			 failure[0] ? errdetail("%s", failure) : 0,
			 errhint("Check the server log for messages of the \"rdma_exchange transport\" worker.")));
}

/* raise the error the worker reported on the port, if any */
static void
check_port_error(RxPort *port)
{
	int			err;
	int			member;
	int			exchange_id;
	char		detail[160];
	const char *name;
	const char *addr;

	if (port->error == RX_PORT_ERR_NONE)
		return;
	SpinLockAcquire(&port->mutex);
	err = port->error;
	member = port->error_member;
	exchange_id = port->error_exchange;
	strlcpy(detail, port->error_detail, sizeof(detail));
	SpinLockRelease(&port->mutex);
	if (member < 0 || member >= port->spec.nmembers)
		member = port->spec.self;
	name = port->spec.member_names[member];
	addr = port->spec.fabric_addrs[member];

	switch (err)
	{
		case RX_PORT_ERR_RESOLVE:
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not resolve fabric address \"%s\" of member \"%s\"",
							addr, name),
					 errdetail("%s", detail),
					 errhint("Check the fabric address of the member in rdma_exchange.nodes.")));
			break;
		case RX_PORT_ERR_SILENT:
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("member \"%s\" stopped answering on exchange %d",
							name, exchange_id),
					 errdetail("%s Its transport worker at %s does not answer.",
							   detail, addr)));
			break;
		case RX_PORT_ERR_RDMA:
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("an RDMA operation with member \"%s\" failed on exchange %d",
							name, exchange_id),
					 errdetail("%s", detail),
					 errhint("The member's buffer was refused under the key and address its message gave: the message was damaged or forged, or the members run different builds of rdma_exchange.")));
			break;
		case RX_PORT_ERR_RESTART:
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the rdma_exchange transport worker of member \"%s\" restarted during the query",
							name)));
			break;
	}
}

static void
check_port_open(RxPort *port)
{
	if (local_index(port) < 0 || port->state != RX_PORT_OPEN)
		elog(ERROR, "rdma_exchange port is not open");
	check_port_error(port);
}

static int
send_index(RxPort *port, int exchange_id)
{
	for (int i = 0; i < port->spec.nsend; i++)
		if (port->spec.send_exchange_ids[i] == exchange_id)
			return i;
	return -1;
}

static int
recv_index(RxPort *port, int exchange_id)
{
	for (int i = 0; i < port->spec.nrecv; i++)
		if (port->spec.recv_exchange_ids[i] == exchange_id)
			return i;
	return -1;
}

static RxSendStream *
send_stream(RxPort *port, int exchange_id, int dest, int *design)
{
	int			sidx = send_index(port, exchange_id);

	if (sidx < 0)
		elog(ERROR, "exchange %d is not sent on by this rdma_exchange port",
			 exchange_id);
	if (dest < 0 || dest >= port->spec.nmembers)
		elog(ERROR, "invalid destination member %d for exchange %d",
			 dest, exchange_id);
	*design = port->spec.send_designs[sidx];
	return &port->send[RX_STREAM(sidx, dest)];
}

/* ---------------------------------------------------------------------
 * Open and close
 * ---------------------------------------------------------------------
 */

static void
validate_spec(const RxPortSpec *spec)
{
	if (spec->nmembers < 1 || spec->nmembers > RX_MAX_MEMBERS ||
		spec->self < 0 || spec->self >= spec->nmembers)
		elog(ERROR, "invalid rdma_exchange port: member %d of %d",
			 spec->self, spec->nmembers);
	if (spec->nrecv < 0 || spec->nrecv > RX_MAX_EXCHANGES ||
		spec->nsend < 0 || spec->nsend > RX_MAX_EXCHANGES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a plan fragment may take part in at most %d exchanges",
						RX_MAX_EXCHANGES)));
}

/* every design of the port runs on an endpoint the worker has opened */
static void
check_designs(const RxPortSpec *spec)
{
	for (int i = 0; i < spec->nrecv + spec->nsend; i++)
	{
		bool		recv = i < spec->nrecv;
		int			design = recv ? spec->recv_designs[i] :
			spec->send_designs[i - spec->nrecv];
		int			exchange_id = recv ? spec->recv_exchange_ids[i] :
			spec->send_exchange_ids[i - spec->nrecv];

		if (design <= RX_DESIGN_AUTO || design >= RX_NDESIGNS)
			elog(ERROR, "invalid transport design %d for exchange %d", design,
				 exchange_id);
		rx_design_require(design, exchange_id,
						  "Every member needs the endpoints of the designs the coordinator chooses; see rdma_exchange.transport_design.");
	}
}

/*
 * When this backend's sends last got a buffer from the pool; 0 while they
 * get them.  A pool that gives none for peer_timeout will not give one:
 * fail the query rather than wait for statement_timeout.
 */
static TimestampTz buffer_wait_since = 0;

/*
 * A fixed rdma_exchange.buffer_depth promises depth buffers to every stream
 * of the port, in both directions.  More than half of a class's buffers
 * for one query would leave the others (and this query's other ports)
 * waiting for buffers that never come back: refuse it at once, with the
 * depth that would fit.
 */
static void
check_depth(const RxPortSpec *spec)
{
	int			streams[RX_BUF_NCLASSES] = {0};

	if (rx_buffer_depth <= 0)
		return;
	for (int i = 0; i < spec->nrecv + spec->nsend; i++)
	{
		int			design = i < spec->nrecv ? spec->recv_designs[i] :
			spec->send_designs[i - spec->nrecv];

		streams[rx_design_class(design)] += spec->nmembers - 1;
	}
	for (int c = 0; c < RX_BUF_NCLASSES; c++)
	{
		int			share = bufpool_class_nbuffers(c) / 2;

		if (streams[c] > 0 && (int64) rx_buffer_depth * streams[c] > share)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("rdma_exchange.buffer_depth = %d is more than the buffer pool of member \"%s\" can give this query",
							rx_buffer_depth, spec->member_names[spec->self]),
					 errdetail("The query has %d streams of %s buffers here; one query may be promised at most %d of the pool's %d.",
							   streams[c], c == RX_BUF_LARGE ? "large" : "small",
							   share, bufpool_class_nbuffers(c)),
					 errhint("Set rdma_exchange.buffer_depth to at most %d, or to 0 (adaptive).",
							 Max(1, share / streams[c]))));
	}
}

/* a few seconds for a worker that is (re)starting */
static void
wait_for_worker(void)
{
	for (int i = 0; i < 50 && !worker_running() && !rx_shared->disabled; i++)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (!worker_running())
		report_worker_down();
}

static void
reset_port(RxPort *port, const RxPortSpec *spec)
{
	port->generation++;
	port->owner_pid = MyProcPid;
	port->owner_latch = MyLatch;
	memcpy(&port->spec, spec, sizeof(RxPortSpec));
	/*
	 * The credit window of each receive stream: the fixed depth, or the
	 * design's window.  Credit goes back every window/4 messages over
	 * datagrams, every k (the paper's write-back) over reliable designs.
	 */
	port->depth = rx_buffer_depth;
	for (int i = 0; i < spec->nrecv; i++)
	{
		bool		dgram = rx_design_ep(spec->recv_designs[i]) == RX_EP_DGRAM;
		int			window = port->depth > 0 ? port->depth :
			dgram ? rx_credit_window : rx_reliable_window;

		port->recv_window[i] = window;
		port->recv_ack_every[i] = dgram ? Max(1, window / 4) :
			Max(1, Min(rx_credit_writeback, window));
	}
	rx_buflist_init(&port->queue);
	rx_buflist_init(&port->submit);
	port->stop_request = 0;
	pg_atomic_write_u32(&port->events, 0);
	pg_atomic_write_u32(&port->stopped, 0);
	pg_atomic_write_u32(&port->stopped_exchanges, 0);
	port->error = RX_PORT_ERR_NONE;
	port->error_member = -1;
	port->error_exchange = -1;
	port->error_detail[0] = '\0';
	for (int s = 0; s < spec->nsend; s++)
		port->bcast_pending[s] = -1;
	for (int s = 0; s < spec->nsend; s++)
		for (int m = 0; m < spec->nmembers; m++)
		{
			RxSendStream *ss = &port->send[RX_STREAM(s, m)];

			pg_atomic_write_u64(&ss->credit, 0);
			pg_atomic_write_u64(&ss->acked, 0);
			pg_atomic_write_u64(&ss->retransmits, 0);
			pg_atomic_write_u32(&ss->flags, 0);
			pg_atomic_write_u32(&ss->spare, 0);
			ss->pending = -1;
			ss->next_seq = 0;
			ss->peak = 0;
			ss->msgs = ss->bytes = 0;
			ss->eos = false;
		}
	for (int r = 0; r < spec->nrecv; r++)
		for (int m = 0; m < spec->nmembers; m++)
		{
			RxRecvStream *rs = &port->recv[RX_STREAM(r, m)];

			pg_atomic_write_u64(&rs->delivered, 0);
			pg_atomic_write_u64(&rs->consumed, 0);
			pg_atomic_write_u64(&rs->advertised, 0);
			pg_atomic_write_u64(&rs->duplicates, 0);
			pg_atomic_write_u64(&rs->peak, 0);
			pg_atomic_write_u32(&rs->ack_every, 0);
			rs->msgs = rs->bytes = 0;
		}
}

RxPort *
rx_port_open(const RxPortSpec *spec)
{
	RxPort	   *port = NULL;
	int			state;

	validate_spec(spec);
	ensure_callbacks();
	wait_for_worker();
	check_designs(spec);
	check_depth(spec);
	buffer_wait_since = 0;
	if (nlocal == maxlocal)
	{
		maxlocal *= 2;
		local_ports = repalloc(local_ports, sizeof(LocalPort) * maxlocal);
	}

	SpinLockAcquire(&rx_shared->mutex);
	for (int i = 0; i < rx_shared->nports; i++)
	{
		RxPort	   *p = rx_port_slot(i);

		if (p->state == RX_PORT_FREE)
		{
			p->state = RX_PORT_RESERVED;
			port = p;
			break;
		}
	}
	SpinLockRelease(&rx_shared->mutex);
	if (port == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many rdma_exchange ports open on member \"%s\"",
						spec->member_names[spec->self]),
				 errdetail("All %d ports of this server are in use by running distributed queries.",
						   rx_shared->nports),
				 errhint("Raise rdma_exchange.max_ports, or run fewer distributed queries at once.")));

	reset_port(port, spec);
	local_ports[nlocal].port = port;
	local_ports[nlocal].generation = port->generation;
	local_ports[nlocal].subid = GetCurrentSubTransactionId();
	nlocal++;

	SpinLockAcquire(&port->mutex);
	port->state = RX_PORT_OPENING;
	SpinLockRelease(&port->mutex);
	rx_port_notify(port, RX_EV_STATE);

	/* the worker resolves the members' addresses and grants credit */
	for (;;)
	{
		SpinLockAcquire(&port->mutex);
		state = port->state;
		SpinLockRelease(&port->mutex);
		if (state == RX_PORT_OPEN)
			break;
		if (state == RX_PORT_FAILED)
		{
			int			i = local_index(port);

			/* the worker kept nothing of it */
			local_forget(i);
			PG_TRY();
			{
				check_port_error(port);
				elog(ERROR, "rdma_exchange port could not be opened");
			}
			PG_FINALLY();
			{
				SpinLockAcquire(&port->mutex);
				port->state = RX_PORT_FREE;
				SpinLockRelease(&port->mutex);
			}
			PG_END_TRY();
		}
		if (!worker_running())
			report_worker_down();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return port;
}

/* every submitted message acknowledged, or its receiver gone */
static bool
port_flushed(RxPort *port)
{
	for (int s = 0; s < port->spec.nsend; s++)
		for (int m = 0; m < port->spec.nmembers; m++)
		{
			RxSendStream *ss = &port->send[RX_STREAM(s, m)];

			if (ss->next_seq > pg_atomic_read_u64(&ss->acked) &&
				!(pg_atomic_read_u32(&ss->flags) & RX_SS_CLOSED))
				return false;
		}
	return true;
}

/*
 * Hand the port back to the worker and wait until it has freed the port's
 * buffers.  If the worker is gone, clean up here; a worker that starts
 * later finishes whatever is left.
 */
static void
port_release(RxPort *port, bool wait_long)
{
	int			state;
	int			waited = 0;
	int			limit = wait_long ? 5000 : 1000;

	/* buffers taken but never submitted */
	for (int s = 0; s < port->spec.nsend; s++)
	{
		if (port->bcast_pending[s] >= 0)
		{
			bufpool_put(port->bcast_pending[s]);
			port->bcast_pending[s] = -1;
		}
		for (int m = 0; m < port->spec.nmembers; m++)
		{
			RxSendStream *ss = &port->send[RX_STREAM(s, m)];

			if (ss->pending >= 0)
			{
				bufpool_put(ss->pending);
				ss->pending = -1;
			}
		}
	}

	SpinLockAcquire(&port->mutex);
	state = port->state;
	if (state == RX_PORT_OPENING || state == RX_PORT_OPEN)
		port->state = RX_PORT_CLOSING;
	else if (state == RX_PORT_FAILED || state == RX_PORT_RESERVED)
		port->state = RX_PORT_FREE;
	state = port->state;
	SpinLockRelease(&port->mutex);
	if (state != RX_PORT_CLOSING)
		return;
	rx_port_notify(port, RX_EV_STATE);

	while (waited < limit)
	{
		SpinLockAcquire(&port->mutex);
		state = port->state;
		SpinLockRelease(&port->mutex);
		if (state != RX_PORT_CLOSING)
			return;
		if (rx_shared->worker_pid == 0)
		{
			uint32		gen = port->generation;

			bufpool_free_owned(port->slot, gen,
							   RX_BUF_MASK(RX_BUF_POPULATE) | RX_BUF_MASK(RX_BUF_TRANSMIT) |
							   RX_BUF_MASK(RX_BUF_WAIT) | RX_BUF_MASK(RX_BUF_CONSUME));
			SpinLockAcquire(&port->mutex);
			rx_buflist_init(&port->queue);
			rx_buflist_init(&port->submit);
			if (port->state == RX_PORT_CLOSING && port->generation == gen)
				port->state = RX_PORT_FREE;
			SpinLockRelease(&port->mutex);
			return;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		waited += 10;
	}
}

void
rx_port_close(RxPort *port)
{
	int			i;
	int			rounds = 0;

	if (port == NULL || (i = local_index(port)) < 0)
		return;

	/*
	 * What we sent must arrive before our fragment reports success.  A
	 * peer may be closing too and wait for us the same way: what still
	 * arrives here is not wanted any more (the plan is done), so give it
	 * back at once, which lets the peer's messages be acknowledged.
	 */
	while (port->state == RX_PORT_OPEN && !port_flushed(port))
	{
		RxMessage	msg;

		while (rx_recv(port, &msg))
			rx_release(port, &msg);
		if (port_flushed(port))
			break;
		rx_wait(port, 100, PG_WAIT_EXTENSION);

		/*
		 * A receiver whose port closed while our last messages arrived may
		 * never acknowledge them (they reached its port, which then went),
		 * and a reliable design does not send them again: after a second,
		 * and every second, ask each receiver still owing acknowledgements
		 * to answer; a closed one answers CLOSED (the worker's
		 * probe_unacked()).
		 */
		if (++rounds % 10 == 0)
			rx_port_notify(port, RX_EV_PROBE);
	}

	local_forget(i);
	port_release(port, true);
}

Size
rx_max_payload(int design)
{
	if (!worker_running())
		report_worker_down();
	return rx_shared->msg_size[rx_design_ep(design)] - RX_WIRE_HEADER_SIZE;
}

/* ---------------------------------------------------------------------
 * Sending
 * ---------------------------------------------------------------------
 */

/* may the stream send its next message?  If not, ask for credit */
static bool
stream_has_credit(RxPort *port, RxSendStream *ss)
{
	uint32		flags = pg_atomic_read_u32(&ss->flags);

	if ((flags & RX_SS_CLOSED) || ss->next_seq < pg_atomic_read_u64(&ss->credit))
		return true;
	if (!(flags & RX_SS_WANT_CREDIT))
	{
		pg_atomic_fetch_or_u32(&ss->flags, RX_SS_WANT_CREDIT);
		rx_port_notify(port, RX_EV_WANT);
	}
	return false;
}

/*
 * The streams a message to dest goes on: one, or for RX_BROADCAST every
 * stream of the exchange to another member.  A broadcast message has the
 * same sequence number on all of them, so an exchange that broadcasts must
 * not send to single members before (its end of stream may go either way).
 */
static int
send_streams(RxPort *port, int exchange_id, int dest, int *design,
			 RxSendStream **streams, int32 **pending)
{
	int			n = 0;

	if (dest != RX_BROADCAST)
	{
		streams[n++] = send_stream(port, exchange_id, dest, design);
		*pending = &streams[0]->pending;
		return n;
	}
	for (int m = 0; m < port->spec.nmembers; m++)
		if (m != port->spec.self)
		{
			streams[n] = send_stream(port, exchange_id, m, design);
			if (streams[n]->next_seq != streams[0]->next_seq)
				elog(ERROR, "exchange %d broadcasts after sending to single members",
					 exchange_id);
			n++;
		}
	*pending = &port->bcast_pending[send_index(port, exchange_id)];
	return n;
}

static void
buffer_wait_check(RxPort *port)
{
	TimestampTz now = GetCurrentTimestamp();

	if (buffer_wait_since == 0)
		buffer_wait_since = now;
	else if (TimestampDifferenceExceeds(buffer_wait_since, now, rx_peer_timeout))
	{
		buffer_wait_since = 0;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("no free buffer in the rdma_exchange buffer pool of member \"%s\" for %d ms",
						port->spec.member_names[port->spec.self], rx_peer_timeout),
				 errdetail("Every buffer is held or promised to running queries (see rdma_exchange.buffer_pool_stats)."),
				 errhint("Run fewer distributed queries at once, lower rdma_exchange.buffer_depth, or raise rdma_exchange.buffer_pool_size.")));
	}
}

char *
rx_send_get_buffer(RxPort *port, int exchange_id, int dest, Size *capacity)
{
	RxSendStream *streams[RX_MAX_MEMBERS];
	int32	   *pending;
	int			nstreams;
	int			id;
	char	   *buf;
	RxHeader	h;
	int			design;
	bool		credit = true;

	check_port_open(port);
	nstreams = send_streams(port, exchange_id, dest, &design, streams, &pending);
	*capacity = rx_shared->msg_size[rx_design_ep(design)] - RX_WIRE_HEADER_SIZE;
	if (*pending >= 0)
		return RX_BUF_PAYLOAD(bufpool_buffer(*pending));
	if (nstreams == 0)
		elog(ERROR, "exchange %d has no member to broadcast to", exchange_id);

	for (int i = 0; i < nstreams; i++)
		credit &= stream_has_credit(port, streams[i]);
	if (!credit)
		return NULL;

	/* the buffer the stream kept, or one from the pool */
	id = (int) pg_atomic_exchange_u32(&streams[0]->spare, 0) - 1;
	if (id < 0)
		id = bufpool_get(rx_design_class(design), RX_BUF_POPULATE, port->slot,
						 port->generation,
						 rx_shared->recv_reserve[rx_design_class(design)],
						 port->depth > 0);
	if (id < 0)
	{
		buffer_wait_check(port);
		pg_atomic_fetch_or_u32(&streams[0]->flags, RX_SS_WANT_BUFFER);
		pg_atomic_write_u32(&rx_shared->buffer_waiters, 1);
		return NULL;
	}
	buffer_wait_since = 0;

	buf = bufpool_buffer(id);
	memset(&h, 0, sizeof(h));
	h.magic = RX_WIRE_MAGIC;
	h.version = RX_WIRE_VERSION;
	h.type = RX_WIRE_DATA;
	h.query_id = port->spec.query_id;
	h.token = port->spec.token;
	h.exchange_id = exchange_id;
	h.src_member = port->spec.self;
	h.dst_member = dest == RX_BROADCAST ? RX_WIRE_ALL : dest;
	h.seq = streams[0]->next_seq;
	rx_header_encode(&h, (RxWireHeader *) RX_BUF_HEADER(buf));
	*pending = id;
	return RX_BUF_PAYLOAD(buf);
}

void
rx_send_submit(RxPort *port, int exchange_id, int dest, Size len,
			   uint16 flags)
{
	RxSendStream *streams[RX_MAX_MEMBERS];
	int32	   *pending;
	int			nstreams;
	int			id;
	RxWireHeader *w;
	int			design;

	check_port_open(port);
	nstreams = send_streams(port, exchange_id, dest, &design, streams, &pending);
	id = *pending;
	if (id < 0)
		elog(ERROR, "no buffer to submit on exchange %d to member %d",
			 exchange_id, dest);
	if (len > rx_shared->msg_size[rx_design_ep(design)] - RX_WIRE_HEADER_SIZE)
		elog(ERROR, "message of %zu bytes exceeds the capacity of a buffer", len);

	w = (RxWireHeader *) RX_BUF_HEADER(bufpool_buffer(id));
	w->payload_len = RX_LE32((uint32) len);
	w->flags = RX_LE16(flags & (RX_MSG_EOS | RX_MSG_FRAGMENT));
	*pending = -1;
	for (int i = 0; i < nstreams; i++)
	{
		RxSendStream *ss = streams[i];

		ss->next_seq++;
		ss->peak = Max(ss->peak, ss->next_seq - pg_atomic_read_u64(&ss->acked));
		ss->msgs++;
		ss->bytes += len;
		if (flags & RX_MSG_EOS)
			ss->eos = true;
	}
	bufpool_desc(id)->state = RX_BUF_TRANSMIT;

	SpinLockAcquire(&port->mutex);
	rx_buflist_push(&port->submit, id);
	SpinLockRelease(&port->mutex);
	rx_port_notify(port, RX_EV_SUBMIT);
}

/* ---------------------------------------------------------------------
 * Receiving
 * ---------------------------------------------------------------------
 */

bool
rx_recv(RxPort *port, RxMessage *msg)
{
	int			id;
	RxHeader	h;
	int			ridx;

	check_port_open(port);
	if (port->queue.head < 0)
		return false;
	SpinLockAcquire(&port->mutex);
	id = rx_buflist_pop(&port->queue);
	SpinLockRelease(&port->mutex);
	if (id < 0)
		return false;

	bufpool_desc(id)->state = RX_BUF_CONSUME;
	rx_header_decode((RxWireHeader *) RX_BUF_HEADER(bufpool_buffer(id)), &h);
	msg->exchange_id = h.exchange_id;
	msg->source = h.src_member;
	msg->flags = h.flags;
	msg->len = h.payload_len;
	msg->data = RX_BUF_PAYLOAD(bufpool_buffer(id));
	msg->bufid = id;

	ridx = recv_index(port, h.exchange_id);
	if (ridx >= 0)
	{
		RxRecvStream *rs = &port->recv[RX_STREAM(ridx, h.src_member)];

		rs->msgs++;
		rs->bytes += h.payload_len;
	}
	return true;
}

void
rx_release(RxPort *port, RxMessage *msg)
{
	int			id = msg->bufid;
	int			ridx;
	RxBufDesc  *d;

	if (id < 0 || id >= bufpool_nbuffers())
		return;
	d = bufpool_desc(id);
	if (d->state != RX_BUF_CONSUME || d->owner != port->slot ||
		d->owner_gen != port->generation)
		elog(ERROR, "rdma_exchange message released twice or by the wrong port");

	ridx = recv_index(port, msg->exchange_id);
	bufpool_put(id);
	msg->bufid = -1;
	msg->data = NULL;
	if (ridx >= 0)
	{
		RxRecvStream *rs = &port->recv[RX_STREAM(ridx, msg->source)];
		uint64		c = pg_atomic_read_u64(&rs->consumed) + 1;

		pg_atomic_write_u64(&rs->consumed, c);
		/* credit goes back every k messages (the worker adapts k) */
		if (c - pg_atomic_read_u64(&rs->advertised) >=
			(uint64) pg_atomic_read_u32(&rs->ack_every))
			rx_port_notify(port, RX_EV_CREDIT);
	}
	if (pg_atomic_read_u32(&rx_shared->buffer_waiters) != 0 &&
		rx_shared->worker_latch != NULL)
		SetLatch(rx_shared->worker_latch);
}

/* ---------------------------------------------------------------------
 * Stop, wait, statistics
 * ---------------------------------------------------------------------
 */

void
rx_request_stop(RxPort *port, int exchange_id)
{
	uint32		mask = 0;

	if (local_index(port) < 0 || port->state != RX_PORT_OPEN)
		return;
	if (exchange_id < 0)
		mask = (port->spec.nrecv >= 32) ? ~0U : ((1U << port->spec.nrecv) - 1);
	else
	{
		int			ridx = recv_index(port, exchange_id);

		if (ridx < 0)
			elog(ERROR, "exchange %d is not received by this rdma_exchange port",
				 exchange_id);
		mask = 1U << ridx;
	}
	SpinLockAcquire(&port->mutex);
	port->stop_request |= mask;
	SpinLockRelease(&port->mutex);
	rx_port_notify(port, RX_EV_STOP);
}

bool
rx_stop_requested(RxPort *port)
{
	return pg_atomic_read_u32(&port->stopped) != 0;
}

void
rx_wait(RxPort *port, long timeout_ms, uint32 wait_event_info)
{
	if (!worker_running())
		report_worker_down();
	check_port_error(port);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout_ms, wait_event_info);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

void
rx_exchange_stats(RxPort *port, int exchange_id, bool send,
				  RxStreamStats *per_member)
{
	int			idx = send ? send_index(port, exchange_id) :
		recv_index(port, exchange_id);

	for (int m = 0; m < port->spec.nmembers; m++)
	{
		memset(&per_member[m], 0, sizeof(RxStreamStats));
		if (idx < 0)
			continue;
		if (send)
		{
			RxSendStream *ss = &port->send[RX_STREAM(idx, m)];

			per_member[m].msgs = ss->msgs;
			per_member[m].bytes = ss->bytes;
			per_member[m].retransmits = pg_atomic_read_u64(&ss->retransmits);
			per_member[m].peak = ss->peak;
		}
		else
		{
			RxRecvStream *rs = &port->recv[RX_STREAM(idx, m)];

			per_member[m].msgs = rs->msgs;
			per_member[m].bytes = rs->bytes;
			per_member[m].duplicates = pg_atomic_read_u64(&rs->duplicates);
			per_member[m].peak = pg_atomic_read_u64(&rs->peak);
		}
	}
}
