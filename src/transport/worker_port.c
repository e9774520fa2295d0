/*-------------------------------------------------------------------------
 *
 * worker_port.c
 *	  The transport worker's side of the ports: opening and closing them,
 *	  the messages backends submit and the events they signal, and the
 *	  latches set at the end of each round.
 *
 * A closed port is remembered for a while (the closed ring), so that a
 * peer still sending to it is told to stop rather than left to time out.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/latch.h"
#include "utils/memutils.h"

#include "transport/worker_int.h"

#define CLOSED_RING			1024	/* recently closed ports remembered */
#define MAX_BACKOFF			32	/* credit requests: at most every 32 timeouts */

static uint32 ports_dealt;		/* ports opened: the next one's set */
static ClosedPort closed_ring[CLOSED_RING];
static int	closed_next;
Peer	   *peers;
static int	npeers;
int			maxpeers;

/*
 * The endpoint a stream of port w sends from: set 0 of its kind, or for
 * the ME designs the set the port was dealt when it opened.  Ports are
 * dealt to the sets in turn, so each set serves a share of the backends
 * taking part in queries.
 */
static int
stream_endpoint(WPort *w, int design)
{
	int			kind = rx_design_ep(design);

	if (!rx_design_multi(design) || nsets[kind] <= 1)
		return kind;
	return RX_EP_INDEX(kind, w->turn % nsets[kind]);
}

int
find_send_index(WPort *w, int exchange_id)
{
	for (int i = 0; i < w->nsend; i++)
		if (w->sh->spec.send_exchange_ids[i] == exchange_id)
			return i;
	return -1;
}

int
find_recv_index(WPort *w, int exchange_id)
{
	for (int i = 0; i < w->nrecv; i++)
		if (w->sh->spec.recv_exchange_ids[i] == exchange_id)
			return i;
	return -1;
}

/*
 * A recently closed port of the query that received the exchange
 * (exchange_id INT_MIN: any port of the query).
 */
ClosedPort *
closed_lookup(uint64 query_id, int exchange_id)
{
	for (int i = 0; i < CLOSED_RING; i++)
	{
		ClosedPort *cp = &closed_ring[i];

		if (cp->query_id != query_id || query_id == 0)
			continue;
		if (exchange_id == INT_MIN)
			return cp;
		for (int r = 0; r < cp->nrecv; r++)
			if (cp->recv_exchange_ids[r] == exchange_id)
				return cp;
	}
	return NULL;
}

void
wake_port(WPort *w)
{
	w->wake = true;
}

/* fail port w (false: it had failed already; the first error stays) */
bool
set_port_error(WPort *w, int err, int member, int exchange_id,
			   const char *detail)
{
	RxPort	   *p = w->sh;
	bool		first = false;

	SpinLockAcquire(&p->mutex);
	if (p->error == RX_PORT_ERR_NONE)
	{
		p->error = err;
		p->error_member = member;
		p->error_exchange = exchange_id;
		strlcpy(p->error_detail, detail ? detail : "", sizeof(p->error_detail));
		first = true;
	}
	SpinLockRelease(&p->mutex);
	wake_port(w);
	return first;
}

/* a port's (or closed port's) addresses of its members: old becomes new */
static void
replace_addr(RxFabricAddr *addrs, RxFabricAddr old, RxFabricAddr new)
{
	for (int m = 0; m < RX_MAX_MEMBERS; m++)
		if (addrs[m] == old)
			addrs[m] = new;
}

/*
 * An RDMA Read or Write that member m of port w refused (a wrong key or
 * address) fails the port, and it broke the connection: on verbs the RC
 * queue pair went to the error state, which ofi_rxm never leaves, so every
 * later message between the two workers would fail too, until one of them
 * restarted.  So the peer is taken out of the address vector, which closes
 * rxm's connection (with FI_AV_REMOVE_CLEANUP, fabric.c; the disconnect
 * closes the peer's side too), and resolved again at once: the next
 * message opens a new connection.  Every port, open or recently closed,
 * that knew the old address gets the new one.  Only at the port's first
 * error: the operations the close flushes fail on the same port and must
 * not close the new connection.
 */
void
port_rdma_failed(WPort *w, int m, int exchange_id, const char *detail)
{
	RxFabricAddr old;
	RxFabricAddr new;
	const char *reason;
	int			i;

	if (!set_port_error(w, RX_PORT_ERR_RDMA, m, exchange_id, detail) ||
		m < 0 || m >= w->nmembers)
		return;
	old = w->addr[RX_EP_RELIABLE][m];
	for (i = 0; i < npeers; i++)
		if (peers[i].ep == RX_EP_RELIABLE && peers[i].addr == old)
			break;
	if (old == (RxFabricAddr) -1 || i == npeers)
		return;

	ereport(LOG,
			(errmsg("rdma_exchange: reopening the connection to the transport worker at %s after a failed RDMA operation",
					peers[i].address)));
	rx_fabric_forget(RX_EP_RELIABLE, old);
	if (!rx_fabric_resolve(RX_EP_RELIABLE, peers[i].address, &new, &reason))
		elog(ERROR, "rdma_exchange: could not resolve the transport worker at %s again: %s",
			 peers[i].address, reason);
	peers[i].addr = new;
	for (int a = 0; a < nactive; a++)
		replace_addr(wports[active[a]].addr[RX_EP_RELIABLE], old, new);
	for (int c = 0; c < CLOSED_RING; c++)
		replace_addr(closed_ring[c].addr[RX_EP_RELIABLE], old, new);
	rx_count(RXC_PEERS_RECONNECTED, 1);
}

/*
 * Before an RDMA Read or Write into member m's pool: do the key and the
 * range [addr, addr + len) a PULL or LEND of m names lie in the
 * registration m published (what is ours to read or write)?  If not, the
 * message was damaged or forged, or m runs another build: the port fails,
 * naming m and the message (what: "PULL" or "LEND"), and the operation is
 * not issued, because a refused one would break the connection between
 * the two workers (on verbs the RC queue pair goes to the error state,
 * port_rdma_failed).  True where m published no registration.
 */
bool
remote_ref_valid(WPort *w, int m, int exchange_id, const char *what,
				 uint64 seq, uint64 addr, uint64 len, uint64 key)
{
	RxPoolReg  *reg = &w->reg[m];
	char		detail[160];

	if (!reg->known ||
		(key == reg->key && addr >= reg->base && len <= reg->len &&
		 addr - reg->base <= reg->len - len))
		return true;
	snprintf(detail, sizeof(detail),
			 "The RDMA %s of message %llu was not issued: its %s names key %llx at %llx, outside the pool the member registered.",
			 strcmp(what, "PULL") == 0 ? "Read" : "Write",
			 (unsigned long long) seq, what,
			 (unsigned long long) key, (unsigned long long) addr);
	(void) set_port_error(w, RX_PORT_ERR_RDMA, m, exchange_id, detail);
	rx_count(RXC_BAD_HEADER_DROPPED, 1);
	return false;
}

/* ---------------------------------------------------------------------
 * Ports: open, close, submissions, events
 * ---------------------------------------------------------------------
 */

static bool
resolve_member(int e, const char *address, RxFabricAddr *addr,
			   const char **reason)
{
	for (int i = 0; i < npeers; i++)
		if (peers[i].ep == e && strcmp(peers[i].address, address) == 0)
		{
			*addr = peers[i].addr;
			return true;
		}
	if (!rx_fabric_resolve(e, address, addr, reason))
		return false;
	if (npeers == maxpeers)
	{
		maxpeers *= 2;
		peers = repalloc(peers, sizeof(Peer) * maxpeers);
	}
	peers[npeers].ep = e;
	strlcpy(peers[npeers].address, address, RX_FABRIC_NAME_LEN);
	peers[npeers].addr = *addr;
	npeers++;
	return true;
}

/*
 * How endpoint e finds member m: by the raw name the member published where
 * the endpoint takes names only (verbs' UD), otherwise by its host:port
 */
static const char *
peer_address(RxPortSpec *spec, int e, int m)
{
	if (rx_fabric_needs_names(e))
		return spec->dgram_names[m];
	return spec->fabric_addrs[m];
}

static void
open_port(int slot)
{
	RxPort	   *p = rx_port_slot(slot);
	WPort	   *w = &wports[slot];
	RxPortSpec *spec = &p->spec;
	int			state;

	memset(w, 0, sizeof(*w));
	w->sh = p;
	w->gen = p->generation;
	w->query_id = spec->query_id;
	w->token = spec->token;
	w->self = spec->self;
	w->nmembers = spec->nmembers;
	w->nsend = spec->nsend;
	w->nrecv = spec->nrecv;
	w->turn = ports_dealt++;
	for (int m = 0; m < w->nmembers; m++)
	{
		unsigned long long key = 0,
					base = 0,
					len = 0;

		w->reg[m].known = sscanf(spec->pool_regs[m], "%llx:%llx:%llx",
								 &key, &base, &len) == 3;
		w->reg[m].key = key;
		w->reg[m].base = base;
		w->reg[m].len = len;
	}
	for (int i = 0; i < w->nrecv; i++)
		w->uses_ep[rx_design_ep(spec->recv_designs[i])] = true;
	for (int i = 0; i < w->nsend; i++)
		w->uses_ep[rx_design_ep(spec->send_designs[i])] = true;

	for (int i = 0; i < RX_NEPS * w->nmembers; i++)
	{
		int			e = i / w->nmembers;
		int			m = i % w->nmembers;
		const char *reason;

		w->addr[e][m] = (RxFabricAddr) -1;
		if (m == w->self || !w->uses_ep[e])
			continue;
		if (!resolve_member(e, peer_address(spec, e, m), &w->addr[e][m], &reason))
		{
			char		detail[160];

			snprintf(detail, sizeof(detail), "%s", reason);
			SpinLockAcquire(&p->mutex);
			p->error = RX_PORT_ERR_RESOLVE;
			p->error_member = m;
			p->error_exchange = -1;
			strlcpy(p->error_detail, detail, sizeof(p->error_detail));
			if (p->state == RX_PORT_OPENING)
				p->state = RX_PORT_FAILED;
			SpinLockRelease(&p->mutex);
			if (p->owner_latch)
				SetLatch(p->owner_latch);
			return;
		}
	}

	w->cxt = AllocSetContextCreate(TopMemoryContext, "rdma_exchange port",
								   ALLOCSET_SMALL_SIZES);
	w->send = MemoryContextAllocZero(w->cxt,
									 sizeof(WSend) * Max(1, w->nsend * w->nmembers));
	w->recv = MemoryContextAllocZero(w->cxt,
									 sizeof(WRecv) * Max(1, w->nrecv * w->nmembers));
	w->bcast = MemoryContextAlloc(w->cxt, sizeof(RxBufList) * Max(1, w->nsend));
	for (int i = 0; i < w->nsend; i++)
		rx_buflist_init(&w->bcast[i]);
	for (int i = 0; i < w->nsend * w->nmembers; i++)
	{
		WSend	   *ws = &w->send[i];

		rx_buflist_init(&ws->unacked);
		ws->last_heard = now;
		ws->backoff = 1;
		ws->design = rx_design_single(spec->send_designs[i / w->nmembers]);
		ws->ep = stream_endpoint(w, spec->send_designs[i / w->nmembers]);
		if (ws->design == RX_DESIGN_SEMQ_WR)
		{
			/* the receiver's window, whatever our settings: at most 1024 */
			ws->ring_size = 1024;
			ws->ring = MemoryContextAllocZero(w->cxt, sizeof(RemoteBuf) * ws->ring_size);
		}
	}
	/* the initial credit goes to every source at once */
	for (int i = 0; i < w->nrecv * w->nmembers; i++)
	{
		WRecv	   *wr = &w->recv[i];
		RxRecvStream *rs = &p->recv[RX_STREAM(i / w->nmembers, i % w->nmembers)];

		wr->design = rx_design_single(spec->recv_designs[i / w->nmembers]);
		wr->ep = stream_endpoint(w, spec->recv_designs[i / w->nmembers]);
		wr->window = p->recv_window[i / w->nmembers];
		wr->k_base = p->recv_ack_every[i / w->nmembers];
		/* the adaptive pool starts small and grows while the sender waits */
		if (p->depth == 0)
			set_grant(wr, rs, grant_floor(wr));
		else
		{
			wr->grant = wr->window;
			wr->k = wr->k_base;
			pg_atomic_write_u32(&rs->ack_every, wr->k);
		}
		if (wr->design == RX_DESIGN_SEMQ_WR)
		{
			wr->lent_ring = MemoryContextAlloc(w->cxt, sizeof(int32) * wr->window);
			for (int j = 0; j < wr->window; j++)
				wr->lent_ring[j] = -1;
		}
		wr->dirty = true;
	}
	w->dirty = true;

	SpinLockAcquire(&p->mutex);
	state = p->state;
	if (state == RX_PORT_OPENING)
		p->state = RX_PORT_OPEN;
	SpinLockRelease(&p->mutex);

	/*
	 * Fixed depth: promise depth buffers to each stream with another member,
	 * both directions, as a static partition of registered memory would;
	 * what the pool cannot promise it does not (the streams then wait for
	 * buffers like any other).
	 */
	if (p->depth > 0)
	{
		int			want[RX_BUF_NCLASSES] = {0};

		for (int i = 0; i < w->nrecv; i++)
			want[rx_design_class(spec->recv_designs[i])] += p->depth * (w->nmembers - 1);
		for (int i = 0; i < w->nsend; i++)
			want[rx_design_class(spec->send_designs[i])] += p->depth * (w->nmembers - 1);
		for (int c = 0; c < RX_BUF_NCLASSES; c++)
			if (want[c] > 0)
				w->reserved[c] = bufpool_reserve(c, want[c], rx_shared->recv_reserve[c]);
	}

	w->active = true;
	active[nactive++] = slot;
	rx_count(RXC_PORTS_OPENED, 1);
	wake_port(w);
}

static void
remember_closed(WPort *w)
{
	ClosedPort *cp = &closed_ring[closed_next];

	cp->query_id = w->query_id;
	cp->token = w->token;
	cp->self = w->self;
	cp->nmembers = w->nmembers;
	cp->nrecv = w->nrecv;
	memcpy(cp->recv_exchange_ids, w->sh->spec.recv_exchange_ids,
		   sizeof(int) * w->nrecv);
	memcpy(cp->addr, w->addr, sizeof(cp->addr));
	closed_next = (closed_next + 1) % CLOSED_RING;
}

/* free everything of a port and make the slot reusable */
static void
close_port(int slot)
{
	RxPort	   *p = rx_port_slot(slot);
	WPort	   *w = &wports[slot];
	RxBufList	queue;
	RxBufList	submit;
	int			b;

	if (w->active)
	{
		for (int i = 0; i < w->nsend * w->nmembers; i++)
		{
			while ((b = rx_buflist_pop(&w->send[i].unacked)) >= 0)
				drop_unacked(&w->send[i], b);
		}
		for (int s = 0; s < w->nsend; s++)
			while ((b = rx_buflist_pop(&w->bcast[s])) >= 0)
				drop_unacked(WSEND(w, s, 0), b);
		for (int i = 0; i < w->nrecv * w->nmembers; i++)
		{
			WRecv	   *wr = &w->recv[i];

			/* the last ACK may not have gone out yet: spare the sender a wait */
			if (wr->next != wr->ack_sent)
				send_ack(w, i / w->nmembers, i % w->nmembers, 0);
			for (int s = 0; wr->held && s < wr->window; s++)
				if (wr->held[s] >= 0)
					bufpool_put(wr->held[s]);
			/* lent buffers: after end of stream nobody writes them */
			for (int s = 0; wr->lent_ring && s < wr->window; s++)
				if (wr->lent_ring[s] >= 0)
				{
					if (wr->eos_done)
					{
						wbufs[wr->lent_ring[s]].lent = false;
						bufpool_put(wr->lent_ring[s]);
					}
					else
						quarantine_buffer(wr->lent_ring[s]);
				}
		}
		for (int c = 0; c < RX_BUF_NCLASSES; c++)
			if (w->reserved[c] > 0)
				bufpool_unreserve(c, w->reserved[c]);
		MemoryContextDelete(w->cxt);
		remember_closed(w);
		for (int a = 0; a < nactive; a++)
			if (active[a] == slot)
			{
				active[a] = active[--nactive];
				break;
			}
		w->active = false;
		rx_count(RXC_PORTS_CLOSED, 1);
	}

	SpinLockAcquire(&p->mutex);
	rx_buflist_take(&p->queue, &queue);
	rx_buflist_take(&p->submit, &submit);
	SpinLockRelease(&p->mutex);
	while ((b = rx_buflist_pop(&queue)) >= 0)
		bufpool_put(b);
	while ((b = rx_buflist_pop(&submit)) >= 0)
		bufpool_put(b);
	/* what the backend still had in hand */
	(void) bufpool_free_owned(slot, p->generation,
							  RX_BUF_MASK(RX_BUF_POPULATE) | RX_BUF_MASK(RX_BUF_TRANSMIT) |
							  RX_BUF_MASK(RX_BUF_WAIT) | RX_BUF_MASK(RX_BUF_CONSUME));

	SpinLockAcquire(&p->mutex);
	p->state = RX_PORT_FREE;
	SpinLockRelease(&p->mutex);
	if (p->owner_latch)
		SetLatch(p->owner_latch);
}

static void
drain_submit(WPort *w)
{
	RxPort	   *p = w->sh;
	RxBufList	list;
	int			b;

	SpinLockAcquire(&p->mutex);
	rx_buflist_take(&p->submit, &list);
	SpinLockRelease(&p->mutex);

	while ((b = rx_buflist_pop(&list)) >= 0)
	{
		RxHeader	h;
		int			sidx;
		WSend	   *ws;

		rx_header_decode(buf_header(b), &h);
		sidx = find_send_index(w, h.exchange_id);
		if (sidx < 0 ||
			(h.dst_member >= w->nmembers && h.dst_member != RX_WIRE_ALL))
		{
			/* cannot happen: port.c checked both */
			bufpool_put(b);
			continue;
		}
		if (h.dst_member == RX_WIRE_ALL)
		{
			wbufs[b].seq = h.seq;
			wbufs[b].sent_at = 0;
			wbufs[b].inflight = 0;
			wbufs[b].tries = 0;
			wbufs[b].acked = false;
			/*
			 * The design of its streams (mesq_sr's are sesq_sr's), as for
			 * a buffer to one member: a lost datagram is sent again
			 */
			wbufs[b].design = rx_design_single(w->sh->spec.send_designs[sidx]);
			submit_broadcast(w, sidx, b);
			continue;
		}
		ws = WSEND(w, sidx, h.dst_member);
		if (ws->closed)
		{
			pg_atomic_write_u64(&p->send[RX_STREAM(sidx, h.dst_member)].acked,
								h.seq + 1);
			bufpool_put(b);
			continue;
		}
		if (h.dst_member == w->self)
		{
			deliver_local(w, sidx, b, &h);
			continue;
		}
		wbufs[b].seq = h.seq;
		wbufs[b].sent_at = 0;
		wbufs[b].inflight = 0;
		wbufs[b].tries = 0;
		wbufs[b].acked = false;
		wbufs[b].design = ws->design;
		bufpool_desc(b)->owner = p->slot;
		bufpool_desc(b)->owner_gen = w->gen;
		rx_buflist_push(&ws->unacked, b);
		if (!tx_blocked)
			transmit(w, ws, b, h.dst_member, false);
	}
}

static void
send_stops(WPort *w)
{
	RxPort	   *p = w->sh;
	uint32		mask;

	SpinLockAcquire(&p->mutex);
	mask = p->stop_request;
	p->stop_request = 0;
	SpinLockRelease(&p->mutex);

	for (int r = 0; r < w->nrecv; r++)
	{
		if (!(mask & (1U << r)) || (w->stopped_recv & (1U << r)))
			continue;
		w->stopped_recv |= 1U << r;
		for (int m = 0; m < w->nmembers; m++)
		{
			RxHeader	h;

			memset(&h, 0, sizeof(h));
			h.type = RX_WIRE_STOP;
			h.exchange_id = p->spec.recv_exchange_ids[r];
			send_control(w, m, WRECV(w, r, m)->ep, &h);
		}
	}
}

/*
 * The port's backend waits to close for acknowledgements (rx_port_close()):
 * a credit request to each receiver that owes some, which an open port
 * answers with an ACK and a closed one with CLOSED (drop_unrouted())
 */
static void
probe_unacked(WPort *w)
{
	for (int s = 0; s < w->nsend; s++)
		for (int m = 0; m < w->nmembers; m++)
		{
			WSend	   *ws = WSEND(w, s, m);

			if (!ws->closed && ws->unacked.count + ws->bcast_pending > 0)
				send_credit_request(w, s, m);
		}
}

void
request_credit(WPort *w)
{
	for (int s = 0; s < w->nsend; s++)
		for (int m = 0; m < w->nmembers; m++)
		{
			WSend	   *ws = WSEND(w, s, m);
			RxSendStream *ss = &w->sh->send[RX_STREAM(s, m)];

			if (ws->closed ||
				!(pg_atomic_read_u32(&ss->flags) & RX_SS_WANT_CREDIT))
				continue;
			if (ws->credit > *((volatile uint64 *) &ss->next_seq))
			{
				/* the credit arrived meanwhile */
				pg_atomic_fetch_and_u32(&ss->flags, ~RX_SS_WANT_CREDIT);
				wake_port(w);
				continue;
			}
			if (now < ws->next_request)
				continue;
			send_credit_request(w, s, m);
			ws->next_request = now + Min((TimestampTz) rx_retransmit_timeout * 1000 * ws->backoff,
										 (TimestampTz) rx_peer_timeout * 250);
			ws->backoff = Min(ws->backoff * 2, MAX_BACKOFF);
		}
}

static void
mark_consumed(WPort *w)
{
	for (int i = 0; i < w->nrecv * w->nmembers; i++)
	{
		WRecv	   *wr = &w->recv[i];
		int			ridx = i / w->nmembers;
		int			src = i % w->nmembers;
		uint64		c = pg_atomic_read_u64(&w->sh->recv[RX_STREAM(ridx, src)].consumed);

		if (c - wr->adv_sent >= (uint64) wr->k)
			wr->dirty = w->dirty = true;
	}
}

static void
port_events(int i)
{
	RxPort	   *p = rx_port_slot(i);
	WPort	   *w = &wports[i];
	uint32		ev = pg_atomic_exchange_u32(&p->events, 0);
	int			state;

	if (ev == 0)
		return;
	if (ev & RX_EV_STATE)
	{
		SpinLockAcquire(&p->mutex);
		state = p->state;
		SpinLockRelease(&p->mutex);
		if (state == RX_PORT_OPENING && !w->active)
			open_port(i);
		else if (state == RX_PORT_CLOSING)
		{
			close_port(i);
			return;
		}
	}
	if (!w->active || w->gen != p->generation)
		return;
	if (ev & RX_EV_SUBMIT)
		drain_submit(w);
	if (ev & RX_EV_STOP)
		send_stops(w);
	if (ev & RX_EV_CREDIT)
		mark_consumed(w);
	if (ev & RX_EV_WANT)
		request_credit(w);
	if (ev & RX_EV_PROBE)
		probe_unacked(w);
}

/* opens and closes can be on any slot; everything else on active ones */
bool
handle_port_events(void)
{
	uint32		pending = pg_atomic_exchange_u32(&rx_shared->pending, 0);

	if (pending == 0)
		return false;
	if (pending & RX_EV_STATE)
	{
		for (int i = 0; i < rx_shared->nports; i++)
			port_events(i);
	}
	else
	{
		for (int a = 0; a < nactive; a++)
			port_events(active[a]);
	}
	return true;
}

/* ACKs due this round, and latches to set */
void
flush_round(void)
{
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->dirty)
		{
			w->dirty = false;
			for (int i = 0; i < w->nrecv * w->nmembers; i++)
				if (w->recv[i].dirty)
					send_ack(w, i / w->nmembers, i % w->nmembers, 0);
		}
	}
	/* local ACKs may have woken more ports: set latches last */
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->wake)
		{
			w->wake = false;
			if (w->sh->owner_latch)
				SetLatch(w->sh->owner_latch);
		}
	}
}

/* wake the senders that wait for a free buffer */
void
wake_buffer_waiters(void)
{
	/* backends free buffers too: look at the pool, not at our own frees */
	if (pg_atomic_read_u32(&rx_shared->buffer_waiters) == 0 ||
		(bufpool_nfree(RX_BUF_SMALL) <= rx_shared->recv_reserve[RX_BUF_SMALL] &&
		 bufpool_nfree(RX_BUF_LARGE) <= rx_shared->recv_reserve[RX_BUF_LARGE]))
		return;
	pg_atomic_write_u32(&rx_shared->buffer_waiters, 0);
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		for (int i = 0; i < w->nsend * w->nmembers; i++)
		{
			RxSendStream *ss = &w->sh->send[RX_STREAM(i / w->nmembers, i % w->nmembers)];

			if (pg_atomic_read_u32(&ss->flags) & RX_SS_WANT_BUFFER)
			{
				pg_atomic_fetch_and_u32(&ss->flags, ~RX_SS_WANT_BUFFER);
				wake_port(w);
			}
		}
	}
}
