/*-------------------------------------------------------------------------
 *
 * worker_stream.c
 *	  The transport worker's stream protocol, for every design: sequence
 *	  numbers, delivery in order, acknowledgements, credit, retransmission
 *	  and broadcast, and the timers that drive them.
 *
 * Datagrams (sesq_sr) are made reliable here:
 *
 *	- a stream (query, exchange, source member, destination member) numbers
 *	  its messages from 0; the receiving worker delivers them in order to
 *	  the port's queue, holds early ones (within the credit window) and
 *	  drops duplicates;
 *	- the receiver sends ACK messages carrying a cumulative ack, a selective
 *	  ack bitmap and the absolute credit (messages consumed by the backend +
 *	  credit window, which the adaptive pool adjusts, see adapt_grant()):
 *	  every window/4 messages delivered or consumed, at
 *	  end of stream, when the sender's credit is used up, on out-of-order or
 *	  duplicate arrivals, on request, and on a timer until the stream ends
 *	  (backing off while nothing changes);
 *	- the sender never sends beyond its credit and keeps every message until
 *	  acknowledged; it sends a message again after retransmit_timeout
 *	  (doubled at each further try), or sooner when later messages got
 *	  through (three deep in the selective acks, or sent half a tick later:
 *	  time-based loss detection as in TCP's RACK), or as a probe when it is
 *	  stuck without credit; and it asks for credit (CREDIT_REQUEST, with
 *	  backoff) while it waits for it;
 *	- messages between two ports of this instance move in shared memory.
 *
 * Credits make every port's memory bounded; retransmission and duplicate
 * suppression make the fault injection settings harmless to results.
 * Nothing is logged per message: everything is counted (transport_stats).
 *
 * The reliable designs run the same streams, credits and acknowledgements;
 * their provider delivers what it accepted, so retransmit_due() rarely
 * sends one of their messages again.  How a message leaves differs by
 * design only in transmit().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <rdma/fi_errno.h>

#include "transport/worker_int.h"

#define FAST_RETRANSMIT_DEPTH 3 /* later messages held before a hole is resent */
#define MAX_RTO_SHIFT		5	/* timeout doubles per retry, up to 32x */

RxBufList	quarantine;			/* by until; see quarantine_buffer() */

/* ---------------------------------------------------------------------
 * Sending
 * ---------------------------------------------------------------------
 */

/*
 * Put one data buffer on its way; it stays on the stream's unacked list.
 * How depends on the stream's design: a datagram or a message, a PULL
 * notice for the receiver to read it, or a write into a lent buffer.
 */
bool
transmit(WPort *w, WSend *ws, int b, int dst, bool retransmission)
{
	char	   *hdr = RX_BUF_HEADER(bufpool_buffer(b));
	RxWireHeader *h = (RxWireHeader *) hdr;
	Size		len = RX_WIRE_HEADER_SIZE + RX_LE32(h->payload_len);
	RxFabricAddr to = w->addr[RX_EP_KIND(ws->ep)][dst];
	int			ret;

	switch (ws->design)
	{
		case RX_DESIGN_SESQ_SR:
			ret = rx_fabric_send(ws->ep, b, bufpool_buffer(b), len, to);
			break;
		case RX_DESIGN_SEMQ_SR:
			ret = rx_fabric_send(ws->ep, b, hdr, len, to);
			break;
		case RX_DESIGN_SEMQ_RD:
			{
				RxWirePull pull;
				char		wire[RX_WIRE_HEADER_SIZE + sizeof(RxWirePull)];

				/* the notice is the message's header, typed PULL */
				memcpy(wire, hdr, RX_WIRE_HEADER_SIZE);
				((RxWireHeader *) wire)->type = RX_WIRE_PULL;
				rx_fabric_remote_ref(ws->ep, hdr, &pull.addr, &pull.key);
				pull.addr = RX_LE64(pull.addr);
				pull.key = RX_LE64(pull.key);
				memcpy(wire + RX_WIRE_HEADER_SIZE, &pull, sizeof(pull));
				ret = rx_fabric_send_small(ws->ep, wire, sizeof(wire), to);
				if (ret == 0)
				{
					/* the buffer itself is not in flight: the peer reads it */
					wbufs[b].sent_at = now;
					rx_count(RXC_DATAGRAMS_SENT, 1);
					rx_count(RXC_DATA_SENT, 1);
					rx_count(RXC_BYTES_SENT, sizeof(wire));
					return true;
				}
			}
			break;
		case RX_DESIGN_SEMQ_WR:
			{
				RemoteBuf  *rb;

				/* the credit the backend used was backed by a LEND */
				Assert(wbufs[b].seq < ws->lent_known);
				rb = &ws->ring[wbufs[b].seq % ws->ring_size];
				ret = rx_fabric_write_imm(ws->ep, b, dst, hdr, len, to,
										  rb->addr, rb->key, (uint64) rb->bufid);
			}
			break;
		default:
			elog(ERROR, "invalid transport design %d", ws->design);
	}
	if (ret == -FI_EAGAIN)
	{
		tx_blocked = true;
		rx_count(RXC_SEND_QUEUE_FULL, 1);
		return false;
	}
	if (ret != 0 && design_reliable(ws->design))
		return false;			/* not sent: the next tick tries again */
	wbufs[b].sent_at = now;
	if (retransmission && wbufs[b].tries < 255)
		wbufs[b].tries++;
	if (ret != 0)
		return true;			/* as if lost: the timer sends it again */
	wbufs[b].inflight++;
	rx_count(RXC_DATAGRAMS_SENT, 1);
	rx_count(RXC_DATA_SENT, 1);
	rx_count(RXC_BYTES_SENT, len);
	if (retransmission)
		rx_count(RXC_RETRANSMISSIONS, 1);
	return true;
}

/*
 * A sent buffer nobody needs any more (acknowledged, or its stream or port
 * is gone): free it now, or at its send completion if the NIC still reads
 * it.  Such a buffer leaves its port at once: close_port() frees what its
 * port still owns, and must not free this one under the NIC's feet (the
 * completion would then free it a second time, possibly after the pool had
 * handed it to another exchange).
 */
static void
release_sent(int b)
{
	WBuf	   *wb = &wbufs[b];

	if (wb->inflight > 0)
	{
		wb->acked = true;
		bufpool_desc(b)->owner = RX_BUF_NO_OWNER;
		bufpool_desc(b)->owner_gen = 0;
	}
	else
		bufpool_put(b);
}

/*
 * A buffer a peer may still read (semq_rd: a published message nobody
 * acknowledged) or write (semq_wr: a lent buffer nobody wrote) when its
 * stream ends early.  It must not go back to the pool while the peer can
 * reach it: another exchange would get its data, or lose its own.  It
 * waits for peer_timeout, by when the peer has seen the stream close or
 * been declared gone; late writes into it are dropped.
 */
void
quarantine_buffer(int b)
{
	WBuf	   *wb = &wbufs[b];

	bufpool_desc(b)->owner = RX_BUF_NO_OWNER;
	bufpool_desc(b)->owner_gen = 0;
	bufpool_desc(b)->state = RX_BUF_QUARANTINE;
	wb->lent = false;
	wb->acked = false;
	wb->until = now + (TimestampTz) rx_peer_timeout * 1000;
	rx_buflist_push(&quarantine, b);
}

void
release_quarantine(void)
{
	while (quarantine.head >= 0)
	{
		int			b = quarantine.head;
		WBuf	   *wb = &wbufs[b];

		if (wb->until > now || wb->inflight > 0 || wb->reading)
			break;
		(void) rx_buflist_pop(&quarantine);
		bufpool_put(b);
	}
}

/*
 * An acknowledged buffer of a live stream.  The adaptive pool of the
 * paper's section 6.2: the stream keeps one buffer waiting for its next
 * message (the backend takes it before going to the pool) and gives all
 * others back.  Only the worker fills the slot and only when it is empty;
 * the backend only empties it.
 */
static void
keep_or_release(WPort *w, RxSendStream *ss, int b)
{
	if (wbufs[b].inflight == 0 && pg_atomic_read_u32(&ss->spare) == 0 &&
		w->sh->depth == 0)
	{
		bufpool_desc(b)->state = RX_BUF_POPULATE;	/* still the port's */
		pg_atomic_write_u32(&ss->spare, (uint32) b + 1);
	}
	else
		release_sent(b);
}

/* a sent buffer its receiver did not acknowledge, of a stream that ends */
void
drop_unacked(WSend *ws, int b)
{
	if (ws->design == RX_DESIGN_SEMQ_RD)
		quarantine_buffer(b);
	else
		release_sent(b);
}

/*
 * b was acknowledged: remember when it was sent.  A message sent more than
 * once does not count: the acknowledgement may be for any of its copies
 * (Karn's rule), and taking the last would make every older message look
 * lost.
 */
static inline void
rack_update(WSend *ws, int b)
{
	if (wbufs[b].tries == 0)
		ws->rack = Max(ws->rack, wbufs[b].sent_at);
}

/* ---------------------------------------------------------------------
 * Broadcast: one buffer, sent on the stream to every other member
 *
 * A broadcast buffer has the same sequence number in all those streams.
 * It waits on its exchange's broadcast list (in sequence order) with a
 * mask of the members that have not acknowledged it yet and a mask of
 * those it has not been handed to the provider for; it is recycled when
 * the last member acknowledged it.  Acknowledgements are cumulative, so
 * the recycled ones are always a prefix of the list.
 * ---------------------------------------------------------------------
 */

/* hand b to the provider for every member it has not gone to yet */
static void
transmit_broadcast(WPort *w, int sidx, int b, bool retransmission)
{
	WBuf	   *wb = &wbufs[b];

	for (int m = 0; m < w->nmembers && !tx_blocked; m++)
	{
		uint32		bit = 1U << m;

		if (!(wb->bcast_unsent & bit) && !(retransmission && (wb->bcast_mask & bit)))
			continue;
		if (transmit(w, WSEND(w, sidx, m), b, m, retransmission && !(wb->bcast_unsent & bit)))
			wb->bcast_unsent &= ~bit;
	}
}

void
submit_broadcast(WPort *w, int sidx, int b)
{
	WBuf	   *wb = &wbufs[b];

	wb->bcast_mask = 0;
	for (int m = 0; m < w->nmembers; m++)
		if (m != w->self && !WSEND(w, sidx, m)->closed)
		{
			wb->bcast_mask |= 1U << m;
			WSEND(w, sidx, m)->bcast_pending++;
		}
	if (wb->bcast_mask == 0)
	{
		bufpool_put(b);
		return;
	}
	wb->bcast_unsent = wb->bcast_mask;
	bufpool_desc(b)->owner = w->sh->slot;
	bufpool_desc(b)->owner_gen = w->gen;
	rx_buflist_push(&w->bcast[sidx], b);
	if (!tx_blocked)
		transmit_broadcast(w, sidx, b, false);
}

/*
 * Member m no longer needs the broadcast buffers below seq (it acknowledged
 * them, or seq is UINT64_MAX: its stream closed); recycle what nobody needs
 */
static void
release_broadcast(WPort *w, int sidx, int m, uint64 seq)
{
	RxBufList  *l = &w->bcast[sidx];
	WSend	   *ws = WSEND(w, sidx, m);
	uint32		bit = 1U << m;

	for (int b = l->head; b >= 0 && wbufs[b].seq < seq; b = bufpool_desc(b)->next)
		if (wbufs[b].bcast_mask & bit)
		{
			wbufs[b].bcast_mask &= ~bit;
			wbufs[b].bcast_unsent &= ~bit;
			ws->bcast_pending--;
			rack_update(ws, b);
		}
	while (l->head >= 0 && wbufs[l->head].bcast_mask == 0)
	{
		int			b = rx_buflist_pop(l);

		if (seq == PG_UINT64_MAX && ws->design == RX_DESIGN_SEMQ_RD)
			quarantine_buffer(b);
		else
			release_sent(b);
	}
}


/* the receiver of a stream is gone: drop what we hold and stop waiting */
static void
close_send_stream(WPort *w, int sidx, int dst)
{
	WSend	   *ws = WSEND(w, sidx, dst);
	RxSendStream *ss = &w->sh->send[RX_STREAM(sidx, dst)];
	int			b;

	if (ws->closed)
		return;
	ws->closed = true;
	while ((b = rx_buflist_pop(&ws->unacked)) >= 0)
		drop_unacked(ws, b);
	release_broadcast(w, sidx, dst, PG_UINT64_MAX);
	pg_atomic_fetch_or_u32(&ss->flags, RX_SS_CLOSED);
	pg_atomic_fetch_and_u32(&ss->flags, ~RX_SS_WANT_CREDIT);
	wake_port(w);
}

/* ---------------------------------------------------------------------
 * Receiving: delivery in order
 * ---------------------------------------------------------------------
 */

static void
deliver(WPort *w, int ridx, int src, int b, uint16 flags)
{
	WRecv	   *wr = WRECV(w, ridx, src);
	RxPort	   *p = w->sh;
	RxBufDesc  *d = bufpool_desc(b);

	d->owner = p->slot;
	d->owner_gen = w->gen;
	d->state = RX_BUF_WAIT;
	SpinLockAcquire(&p->mutex);
	rx_buflist_push(&p->queue, b);
	SpinLockRelease(&p->mutex);
	wr->next++;
	pg_atomic_write_u64(&p->recv[RX_STREAM(ridx, src)].delivered, wr->next);
	{
		RxRecvStream *rs = &p->recv[RX_STREAM(ridx, src)];
		uint64		held = wr->next - pg_atomic_read_u64(&rs->consumed);

		if (held > pg_atomic_read_u64(&rs->peak))
			pg_atomic_write_u64(&rs->peak, held);
	}
	if (flags & RX_MSG_EOS)
	{
		wr->eos_done = true;
		wr->dirty = true;
	}
	/* every k messages, and when the sender has used up its credit */
	if (wr->next - wr->ack_sent >= (uint64) wr->k ||
		wr->next >= wr->credit_sent)
		wr->dirty = true;
	if (wr->dirty)
		w->dirty = true;
	wake_port(w);
}

static void
count_duplicate(WPort *w, int ridx, int src)
{
	rx_count(RXC_DUPLICATES_DROPPED, 1);
	pg_atomic_write_u64(&w->sh->recv[RX_STREAM(ridx, src)].duplicates,
						pg_atomic_read_u64(&w->sh->recv[RX_STREAM(ridx, src)].duplicates) + 1);
}

/* a DATA message for receive stream (ridx, src) of port w */
void
accept_data(WPort *w, int ridx, int src, int b, uint64 seq, uint16 flags)
{
	WRecv	   *wr = WRECV(w, ridx, src);

	if (w->stopped_recv & (1U << ridx))
		wr->dirty = w->dirty = true;	/* repeat STOPPED to the source */

	if (seq < wr->next || wr->eos_done)
	{
		count_duplicate(w, ridx, src);
		bufpool_put(b);
		wr->dirty = w->dirty = true;	/* our ACK was probably lost */
		return;
	}
	if (seq - wr->next >= (uint64) wr->window)
	{
		rx_count(RXC_OUT_OF_WINDOW_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	if (seq == wr->next)
	{
		deliver(w, ridx, src, b, flags);
		while (wr->nheld > 0 && !wr->eos_done)
		{
			int			slot = wr->next % wr->window;
			int			hb = wr->held[slot];

			if (hb < 0)
				break;
			wr->held[slot] = -1;
			wr->nheld--;
			deliver(w, ridx, src, hb,
					RX_LE16(buf_header(hb)->flags));
		}
		return;
	}

	/* early: hold it until the gap is filled */
	if (wr->held == NULL)
	{
		wr->held = MemoryContextAlloc(w->cxt, sizeof(int32) * wr->window);
		for (int i = 0; i < wr->window; i++)
			wr->held[i] = -1;
	}
	if (wr->held[seq % wr->window] >= 0)
	{
		count_duplicate(w, ridx, src);
		bufpool_put(b);
		return;
	}
	wr->held[seq % wr->window] = b;
	wr->nheld++;
	wbufs[b].seq = seq;
	bufpool_desc(b)->owner = w->sh->slot;
	bufpool_desc(b)->owner_gen = w->gen;
	bufpool_desc(b)->state = RX_BUF_WAIT;
	wr->dirty = w->dirty = true;	/* tell the sender about the hole */
}

/* hand a submitted buffer to a port of this instance */
void
deliver_local(WPort *sw, int sidx, int b, const RxHeader *h)
{
	WSend	   *ws = WSEND(sw, sidx, h->dst_member);
	RxSendStream *ss = &sw->sh->send[RX_STREAM(sidx, h->dst_member)];
	int			j = -1;
	int			ridx = -1;

	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->query_id == h->query_id && w->token == h->token &&
			(ridx = find_recv_index(w, h->exchange_id)) >= 0)
		{
			j = active[a];
			break;
		}
	}
	if (j < 0)
	{
		rx_count(RXC_CLOSED_PORT_DROPPED, 1);
		bufpool_put(b);
		close_send_stream(sw, sidx, h->dst_member);
		return;
	}
	accept_data(&wports[j], ridx, h->src_member, b, h->seq, h->flags);
	rx_count(RXC_LOCAL_DELIVERED, 1);
	ws->acked = h->seq + 1;
	pg_atomic_write_u64(&ss->acked, ws->acked);
	wake_port(sw);
}

/* ---------------------------------------------------------------------
 * Credit and acknowledgements
 * ---------------------------------------------------------------------
 */

/*
 * The adaptive pool's credit window (buffer_depth 0), adjusted at every
 * credit: messages waiting for the consumer are buffers held for nothing,
 * so when more than half the window waits, the window shrinks by an
 * eighth; when the consumer has caught up and the sender has used all its
 * credit, the sender was waiting for us, so it grows by half, up to the
 * design's window.  A gap in a datagram stream (a datagram lost, most
 * often because a burst overran a socket buffer) halves it, as TCP does.
 * A reliable design's window never goes below half the design's window:
 * below that, the time credit takes to reach the sender idles the consumer
 * as soon as it catches up (a floor of 4 messages halved the transport's
 * throughput over shm in bench/shuffle); a datagram window not below 16,
 * where losses cost more than credit round trips.  Credit every k stays
 * below half the window, so that consuming k messages always frees credit
 * while k more are on the way.  The sender keeps credit once granted: a
 * smaller window takes effect as the consumer moves on.
 */
int
grant_floor(WRecv *wr)
{
	if (wr->design == RX_DESIGN_SESQ_SR)
		return Min(wr->window, 16);
	return Max(1, wr->window / 2);
}

void
set_grant(WRecv *wr, RxRecvStream *rs, int grant)
{
	wr->grant = grant;
	wr->k = Max(1, Min(wr->k_base, grant / (wr->design == RX_DESIGN_SESQ_SR ? 4 : 2)));
	pg_atomic_write_u32(&rs->ack_every, wr->k);
}

static void
adapt_grant(WPort *w, WRecv *wr, RxRecvStream *rs, uint64 consumed)
{
	uint64		waiting = wr->next - consumed;
	int			grant = wr->grant;

	if (w->sh->depth > 0)
		return;
	if (wr->nheld > 0)
		grant = Max(grant_floor(wr), grant / 2);
	else if (waiting > (uint64) grant / 2)
		grant = Max(grant_floor(wr), grant - grant / 8);
	else if (waiting <= (uint64) wr->k && wr->next >= wr->credit_sent)
		grant = Min(wr->window, grant + Max(1, grant / 2));
	if (grant != wr->grant)
		set_grant(wr, rs, grant);
}

void
send_ack(WPort *w, int ridx, int src, uint16 extra_flags)
{
	WRecv	   *wr = WRECV(w, ridx, src);
	RxRecvStream *rs = &w->sh->recv[RX_STREAM(ridx, src)];
	RxHeader	h;
	uint64		consumed = pg_atomic_read_u64(&rs->consumed);

	adapt_grant(w, wr, rs, consumed);
	memset(&h, 0, sizeof(h));
	h.type = RX_WIRE_ACK;
	h.exchange_id = w->sh->spec.recv_exchange_ids[ridx];
	h.seq = wr->next;
	h.credit = Max(consumed + wr->grant, wr->credit_sent);
	if (wr->design == RX_DESIGN_SEMQ_WR && src != w->self)
		h.credit = lend_buffers(w, wr, ridx, src, h.credit);
	h.flags = extra_flags;
	if (w->stopped_recv & (1U << ridx))
		h.flags |= RX_WIRE_ACK_STOPPED;
	if (wr->nheld > 0)
	{
		for (int i = 0; i < RX_WIRE_SACK_BITS && i + 1 < wr->window; i++)
		{
			uint64		seq = wr->next + 1 + i;

			if (wr->held[seq % wr->window] >= 0 &&
				wbufs[wr->held[seq % wr->window]].seq == seq)
				h.sack |= UINT64CONST(1) << i;
		}
	}
	wr->ack_sent = wr->next;
	wr->adv_sent = consumed;
	wr->credit_sent = h.credit;
	wr->ack_time = now;
	wr->dirty = false;
	pg_atomic_write_u64(&rs->advertised, consumed);
	send_control(w, src, wr->ep, &h);
}

void
stop_send_exchange(WPort *w, int sidx)
{
	pg_atomic_fetch_or_u32(&w->sh->stopped_exchanges, 1U << sidx);
	pg_atomic_write_u32(&w->sh->stopped, 1);
	wake_port(w);
}


/*
 * New credit for a send stream to member dst.  semq_wr: credit is what the
 * receiver granted and backed with lent buffers (a stream to this instance
 * itself moves in shared memory and borrows nothing).
 */
void
set_credit(WPort *w, WSend *ws, RxSendStream *ss, int dst, uint64 credit)
{
	if (ws->design == RX_DESIGN_SEMQ_WR && dst != w->self)
	{
		ws->ack_credit = Max(ws->ack_credit, credit);
		credit = Min(ws->ack_credit, ws->lent_known);
	}
	if (credit <= ws->credit)
		return;
	ws->credit = credit;
	pg_atomic_write_u64(&ss->credit, ws->credit);
	ws->backoff = 1;
	ws->next_request = 0;
	if (pg_atomic_read_u32(&ss->flags) & RX_SS_WANT_CREDIT)
	{
		pg_atomic_fetch_and_u32(&ss->flags, ~RX_SS_WANT_CREDIT);
		wake_port(w);
	}
}

/* ask the receiver of send stream (sidx, dst) for credit */
void
send_credit_request(WPort *w, int sidx, int dst)
{
	RxHeader	rq;

	memset(&rq, 0, sizeof(rq));
	rq.type = RX_WIRE_CREDIT_REQUEST;
	rq.exchange_id = w->sh->spec.send_exchange_ids[sidx];
	send_control(w, dst, WSEND(w, sidx, dst)->ep, &rq);
}

void
handle_ack(WPort *w, int sidx, const RxHeader *h)
{
	int			dst = h->src_member;
	WSend	   *ws = WSEND(w, sidx, dst);
	RxSendStream *ss = &w->sh->send[RX_STREAM(sidx, dst)];
	int			b;
	int			prev;
	uint64		highest = 0;

	ws->last_heard = now;
	ws->heard = true;
	if (h->flags & RX_WIRE_ACK_STOPPED)
		stop_send_exchange(w, sidx);
	if (h->flags & RX_WIRE_ACK_CLOSED)
	{
		close_send_stream(w, sidx, dst);
		return;
	}
	if (ws->closed)
		return;

	set_credit(w, ws, ss, dst, h->credit);

	/*
	 * semq_wr: credit without lent buffers behind it means LENDs were lost:
	 * those that came before our port opened were dropped.  Ask for them
	 * at once (a CREDIT_REQUEST makes the receiver repeat them), not after
	 * the credit request backoff, at most once per retransmit timeout.
	 */
	if (ws->design == RX_DESIGN_SEMQ_WR && dst != w->self &&
		ws->ack_credit > ws->lent_known &&
		now - ws->lends_asked >= (TimestampTz) rx_retransmit_timeout * 1000)
	{
		send_credit_request(w, sidx, dst);
		ws->lends_asked = now;
	}

	if (h->seq > ws->acked)
	{
		ws->acked = h->seq;
		pg_atomic_write_u64(&ss->acked, ws->acked);
		while (ws->unacked.head >= 0 && wbufs[ws->unacked.head].seq < h->seq)
		{
			b = rx_buflist_pop(&ws->unacked);
			rack_update(ws, b);
			keep_or_release(w, ss, b);
		}
		if (ws->unacked.count == 0)
			wake_port(w);		/* a closing backend may wait for this */
	}

	if (ws->bcast_pending > 0)
		release_broadcast(w, sidx, dst, h->seq);

	if (h->sack == 0 || ws->unacked.count == 0)
		return;

	/* drop what the receiver holds; fast-retransmit deep holes */
	for (int i = RX_WIRE_SACK_BITS - 1; i >= 0; i--)
		if (h->sack & (UINT64CONST(1) << i))
		{
			highest = h->seq + 1 + i;
			break;
		}

	prev = -1;
	b = ws->unacked.head;
	while (b >= 0)
	{
		int			next = bufpool_desc(b)->next;
		uint64		seq = wbufs[b].seq;
		bool		sacked = seq > h->seq && seq - h->seq - 1 < RX_WIRE_SACK_BITS &&
			(h->sack & (UINT64CONST(1) << (seq - h->seq - 1)));

		if (seq > highest)
			break;
		if (sacked)
		{
			/* unlink b */
			if (prev < 0)
				ws->unacked.head = next;
			else
				bufpool_desc(prev)->next = next;
			if (ws->unacked.tail == b)
				ws->unacked.tail = prev;
			ws->unacked.count--;
			rack_update(ws, b);
			release_sent(b);
		}
		else
		{
			if (ws->design == RX_DESIGN_SESQ_SR &&
				highest - seq >= FAST_RETRANSMIT_DEPTH &&
				wbufs[b].tries == 0 && wbufs[b].inflight == 0 &&
				wbufs[b].sent_at != 0)
			{
				transmit(w, ws, b, dst, true);
				pg_atomic_write_u64(&ss->retransmits,
									pg_atomic_read_u64(&ss->retransmits) + 1);
			}
			prev = b;
		}
		b = next;
	}
}

/* ---------------------------------------------------------------------
 * Timers: retransmission, periodic ACKs, credit requests, dead peers
 * ---------------------------------------------------------------------
 */

/*
 * When to send a message again:
 *	- it never went out (the send queue was full);
 *	- retransmit_timeout has passed, doubled at every further try, so that
 *	  a slow or overloaded peer is not flooded;
 *	- a message sent more than half a tick later has been acknowledged:
 *	  this one was lost (time-based loss detection, as TCP's RACK; the
 *	  half tick tolerates reordering);
 *	- the sender waits for credit and this is its oldest message: probe
 *	  after a tick, with the same doubling.
 */
static bool
retransmit_due(WSend *ws, int b, bool blocked, TimestampTz tick)
{
	WBuf	   *wb = &wbufs[b];
	TimestampTz rto = (TimestampTz) rx_retransmit_timeout * 1000;
	int			shift = Min(wb->tries, MAX_RTO_SHIFT);
	TimestampTz age = now - wb->sent_at;

	if (wb->inflight > 0)
		return false;
	if (wb->sent_at == 0)
		return true;
	/*
	 * The provider delivers what it accepted; what the receiving worker
	 * could not take (a PULL whose read failed) is sent again, rarely: a
	 * copy is dropped as a duplicate.  Never a write: its lent buffer may
	 * already be in the receiver's hands.
	 */
	if (design_reliable(ws->design))
		return ws->design != RX_DESIGN_SEMQ_WR && age >= (rto << MAX_RTO_SHIFT);
	if (age >= (rto << shift))
		return true;
	if (wb->sent_at + tick / 2 < ws->rack)
		return true;
	return blocked && b == ws->unacked.head && age >= (tick << shift);
}

void
timers(TimestampTz tick)
{
	TimestampTz rto = (TimestampTz) rx_retransmit_timeout * 1000;
	TimestampTz dead = (TimestampTz) rx_peer_timeout * 1000;

	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		for (int s = 0; s < w->nsend; s++)
			for (int m = 0; m < w->nmembers; m++)
			{
				WSend	   *ws = WSEND(w, s, m);
				RxSendStream *ss = &w->sh->send[RX_STREAM(s, m)];
				bool		blocked = (pg_atomic_read_u32(&ss->flags) & RX_SS_WANT_CREDIT) != 0;

				/*
				 * Waiting for an answer from a receiver for peer_timeout
				 * (an open port always answers: ACKs, keepalives, replies
				 * to credit requests): it is gone.  A receiver never heard
				 * of since this port opened never opened its side: its
				 * fragment failed to start, or its member is down; every
				 * member gets its fragment at the same time.
				 */
				int			waiting = ws->unacked.count + ws->bcast_pending;

				if ((waiting > 0 || blocked) &&
					!ws->closed && now - ws->last_heard > dead &&
					!w->error_reported)
				{
					char		detail[160];

					if (!ws->heard)
						snprintf(detail, sizeof(detail),
								 "The member has not opened its side of the exchange within %d ms; its fragment may have failed to start.",
								 rx_peer_timeout);
					else if (waiting > 0)
						snprintf(detail, sizeof(detail),
								 "%d messages have waited for an acknowledgement for more than %d ms.",
								 waiting, rx_peer_timeout);
					else
						snprintf(detail, sizeof(detail),
								 "A sender has waited for credit for more than %d ms.",
								 rx_peer_timeout);
					set_port_error(w, RX_PORT_ERR_SILENT, m,
								   w->sh->spec.send_exchange_ids[s], detail);
					w->error_reported = true;
				}
				if (ws->unacked.count == 0)
					continue;
				for (int b = ws->unacked.head; b >= 0; b = bufpool_desc(b)->next)
				{
					WBuf	   *wb = &wbufs[b];

					if (!retransmit_due(ws, b, blocked, tick))
						continue;
					if (wb->sent_at != 0)
						pg_atomic_write_u64(&ss->retransmits,
											pg_atomic_read_u64(&ss->retransmits) + 1);
					transmit(w, ws, b, m, wb->sent_at != 0);
					if (tx_blocked)
						break;
				}
			}

		/*
		 * Broadcast buffers: what never went out, and over datagrams what
		 * was not acknowledged in time, to the members still missing it
		 */
		for (int s = 0; s < w->nsend && !tx_blocked; s++)
			for (int b = w->bcast[s].head; b >= 0 && !tx_blocked; b = bufpool_desc(b)->next)
			{
				WBuf	   *wb = &wbufs[b];
				bool		resend = wb->design == RX_DESIGN_SESQ_SR &&
					wb->inflight == 0 && wb->sent_at != 0 &&
					now - wb->sent_at >= (rto << Min(wb->tries, MAX_RTO_SHIFT));

				if (wb->bcast_unsent != 0 || resend)
					transmit_broadcast(w, s, b, resend);
			}

		for (int i = 0; i < w->nrecv * w->nmembers; i++)
		{
			WRecv	   *wr = &w->recv[i];
			RxRecvStream *rs = &w->sh->recv[RX_STREAM(i / w->nmembers, i % w->nmembers)];

			if (wr->next != wr->ack_sent ||
				pg_atomic_read_u64(&rs->consumed) != wr->adv_sent ||
				wr->nheld > 0)
			{
				wr->idle_shift = 0;
				if (now - wr->ack_time >= rto)
					wr->dirty = w->dirty = true;
			}
			else if (!wr->eos_done)
			{
				/* keepalive: a lost credit must not stall the sender */
				if (now - wr->ack_time >= Min(rto << wr->idle_shift, dead / 4))
				{
					wr->dirty = w->dirty = true;
					wr->idle_shift = Min(wr->idle_shift + 1, MAX_RTO_SHIFT);
				}
			}
		}
		request_credit(w);
	}
}

/* send what a full send queue held back */
void
retry_blocked(void)
{
	tx_blocked = false;
	for (int a = 0; a < nactive && !tx_blocked; a++)
	{
		WPort	   *w = &wports[active[a]];

		for (int i = 0; i < w->nsend * w->nmembers && !tx_blocked; i++)
			for (int b = w->send[i].unacked.head; b >= 0 && !tx_blocked;
				 b = bufpool_desc(b)->next)
				if (wbufs[b].sent_at == 0 && wbufs[b].inflight == 0)
					transmit(w, &w->send[i], b, i % w->nmembers, false);
		for (int s = 0; s < w->nsend && !tx_blocked; s++)
			for (int b = w->bcast[s].head; b >= 0 && !tx_blocked; b = bufpool_desc(b)->next)
				if (wbufs[b].bcast_unsent != 0)
					transmit_broadcast(w, s, b, false);
	}
}
