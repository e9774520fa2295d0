/*-------------------------------------------------------------------------
 *
 * worker_rdma_write.c
 *	  semq_wr (and memq_wr): RDMA Write with immediate data (the paper's
 *	  Algorithms 5-6), both sides.
 *
 * The receiver lends empty buffers of its pool to the sender (LEND:
 * address, key, buffer id), one per credit, so the sender's free ring
 * holds exactly its credit; the sender writes a message straight into the
 * next lent buffer with the buffer id as immediate data (see transmit()),
 * which the receiver's CQ reports; the message's header gives its length.  A write is checked against
 * the buffer it lands in: it must be one lent for that very stream and
 * sequence number.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "transport/worker_int.h"

/* semq_wr: tell the sender of stream (ridx, src) that b takes message seq */
static bool
send_lend(WPort *w, int ridx, int src, uint64 seq, int b)
{
	RxHeader	h;
	RxWireLend	lend;
	int			e = WRECV(w, ridx, src)->ep;

	memset(&h, 0, sizeof(h));
	h.type = RX_WIRE_LEND;
	h.exchange_id = w->sh->spec.recv_exchange_ids[ridx];
	h.seq = seq;
	rx_fabric_remote_ref(e, RX_BUF_HEADER(bufpool_buffer(b)),
						 &lend.addr, &lend.key);
	lend.addr = RX_LE64(lend.addr);
	lend.key = RX_LE64(lend.key);
	lend.bufid = RX_LE32((uint32) b);
	lend.reserved = 0;
	return send_control_ext(w, src, e, &h, &lend, sizeof(lend));
}

/*
 * semq_wr: lend the sender of stream (ridx, src) empty buffers up to
 * credit, one LEND each, before the ACK that grants the credit (the
 * reliable endpoint keeps them in order).  Returns the credit actually
 * backed by lent buffers: when the pool has none to spare, the sender
 * waits for credit, as it would for any slow receiver.
 */
uint64
lend_buffers(WPort *w, WRecv *wr, int ridx, int src, uint64 credit)
{
	while (wr->lent < credit)
	{
		int			b = bufpool_get(RX_BUF_LARGE, RX_BUF_LENT, w->sh->slot,
									w->gen, rx_shared->recv_reserve[RX_BUF_LARGE],
									w->sh->depth > 0);

		if (b < 0)
			break;
		if (!send_lend(w, ridx, src, wr->lent, b))
		{
			/* the send queue is full: lend it in a later round */
			bufpool_put(b);
			wr->dirty = w->dirty = true;
			break;
		}
		wbufs[b].lent = true;
		wr->lent_ring[wr->lent % wr->window] = b;
		wr->lent++;
	}
	return wr->lent;
}

/*
 * semq_wr: a sender asks for credit it lacks.  LENDs that reached it before
 * its port opened were dropped there, and a LEND is not repeated by
 * itself: tell it again of every buffer it has not written yet, in order.
 */
void
lend_again(WPort *w, WRecv *wr, int ridx, int src)
{
	for (uint64 seq = wr->next; seq < wr->lent; seq++)
	{
		int			b = wr->lent_ring[seq % wr->window];

		if (b >= 0 && !send_lend(w, ridx, src, seq, b))
			break;
	}
}

/*
 * semq_wr: the receiver lent us buffer h->seq of the stream (again, when
 * we asked for credit); the credit it backs can be used now
 */
void
handle_lend(WPort *w, int sidx, const RxHeader *h, const RxWireLend *lend)
{
	WSend	   *ws = WSEND(w, sidx, h->src_member);
	RemoteBuf  *rb;

	if (ws->design != RX_DESIGN_SEMQ_WR || ws->closed)
	{
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		return;
	}
	if (h->seq != ws->lent_known)
	{
		/* known already, or a repetition after a lost one: comes again */
		rx_count(RXC_DUPLICATES_DROPPED, 1);
		return;
	}
	/* the header at least must fit where we would write */
	if (!remote_ref_valid(w, h->src_member, w->sh->spec.send_exchange_ids[sidx],
						  "LEND", h->seq, RX_LE64(lend->addr),
						  RX_WIRE_HEADER_SIZE, RX_LE64(lend->key)))
		return;
	rb = &ws->ring[h->seq % ws->ring_size];
	rb->addr = RX_LE64(lend->addr);
	rb->key = RX_LE64(lend->key);
	rb->bufid = RX_LE32(lend->bufid);
	ws->lent_known++;
	set_credit(w, ws, &w->sh->send[RX_STREAM(sidx, h->src_member)],
			   h->src_member, ws->ack_credit);
}

/*
 * semq_wr: our RDMA Write of buffer b to member failed.  The receiver's
 * buffer refused it (a wrong key or address: a damaged or forged LEND),
 * or the connection broke; writing it again into the same buffer would
 * fail the same way.  The query fails, naming the receiver (the
 * completion's: a broadcast buffer's header names no one) and the
 * exchange.
 */
void
write_failed(int b, int member, int err)
{
	RxHeader	h;
	char		detail[160];

	rx_header_decode(buf_header(b), &h);
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->query_id != h.query_id || h.src_member != w->self ||
			find_send_index(w, h.exchange_id) < 0 ||
			member < 0 || member >= w->nmembers)
			continue;
		snprintf(detail, sizeof(detail),
				 "The RDMA Write of message %llu into the buffer it lent failed: %s.",
				 (unsigned long long) h.seq, rx_fabric_strerror(err));
		port_rdma_failed(w, member, h.exchange_id, detail);
		return;
	}
}

/*
 * semq_wr: a sender wrote a message into a buffer we lent it; the
 * immediate data says which buffer (32 bits: all that verbs carries), the
 * message's header how long.  It must be one we lent for that very stream
 * and sequence number.
 */
void
write_done(uint64 imm)
{
	int			b = (int) (imm & 0xFFFFFFFF);
	Size		len;
	RxHeader	h;
	WPort	   *w;
	WRecv	   *wr;
	int			ridx;

	if ((imm >> 32) != 0 || b < 0 || b >= nbuf ||
		bufpool_class_of(b) != RX_BUF_LARGE || !wbufs[b].lent)
	{
		/* late writes into quarantined buffers end here too */
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		return;
	}
	rx_header_decode(buf_header(b), &h);
	len = RX_WIRE_HEADER_SIZE + (Size) h.payload_len;
	rx_count(RXC_DATAGRAMS_RECEIVED, 1);
	rx_count(RXC_BYTES_RECEIVED, len);
	if (len > msg_size[RX_EP_RELIABLE] || !header_valid(&h, len) ||
		h.type != RX_WIRE_DATA ||
		(w = receiving_port(&h, &ridx)) == NULL ||
		bufpool_desc(b)->owner != w->sh->slot || bufpool_desc(b)->owner_gen != w->gen ||
		(wr = WRECV(w, ridx, h.src_member))->design != RX_DESIGN_SEMQ_WR ||
		h.seq >= wr->lent || wr->lent_ring[h.seq % wr->window] != b)
	{
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		return;
	}
	wbufs[b].lent = false;
	wr->lent_ring[h.seq % wr->window] = -1;
	rx_count(RXC_DATA_RECEIVED, 1);
	accept_data(w, ridx, h.src_member, b, h.seq, h.flags);
}
