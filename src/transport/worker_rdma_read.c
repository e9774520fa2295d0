/*-------------------------------------------------------------------------
 *
 * worker_rdma_read.c
 *	  semq_rd (and memq_rd), the receiver's side: RDMA Read (the paper's
 *	  Algorithm 4).
 *
 * The sender keeps a filled buffer in its registered pool and sends a PULL
 * notice (the valid ring entry: address and key; see transmit()); the
 * receiver reads the message into the buffer the notice arrived in and
 * acknowledges it, which returns the sender's buffer (the free ring).  A
 * read is checked against its notice: a buffer the sender reused after its
 * stream ended must not pass for the message.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <rdma/fi_errno.h>

#include "transport/worker_int.h"

RxBufList	read_retry;			/* semq_rd: notices waiting for their read */

/*
 * semq_rd: read the message the notice in receive buffer b announces from
 * the sender's buffer into b itself; read_done() takes it from there.
 * False when the provider cannot take the read now: try again later.
 */
static bool
issue_read(int b)
{
	RxHeader   *h = &wbufs[b].expect;
	RxWirePull	pull;
	WPort	   *w;
	int			ridx;
	int			ret;

	w = receiving_port(h, &ridx);
	if (w == NULL)
	{
		/* the port closed meanwhile */
		rx_count(RXC_CLOSED_PORT_DROPPED, 1);
		bufpool_put(b);
		return true;
	}
	memcpy(&pull, RX_BUF_HEADER(bufpool_buffer(b)) + RX_WIRE_HEADER_SIZE,
		   sizeof(pull));
	if (!remote_ref_valid(w, h->src_member, h->exchange_id, "PULL", h->seq,
						  RX_LE64(pull.addr), RX_WIRE_HEADER_SIZE + h->payload_len,
						  RX_LE64(pull.key)))
	{
		bufpool_put(b);
		return true;
	}
	wbufs[b].reading = true;
	ret = rx_fabric_read(WRECV(w, ridx, h->src_member)->ep, b,
						 RX_BUF_HEADER(bufpool_buffer(b)),
						 RX_WIRE_HEADER_SIZE + h->payload_len,
						 w->addr[RX_EP_RELIABLE][h->src_member],
						 RX_LE64(pull.addr), RX_LE64(pull.key));
	if (ret == 0)
		return true;
	wbufs[b].reading = false;
	rx_count(RXC_SEND_QUEUE_FULL, 1);
	if (ret == -FI_EAGAIN)
		return false;
	/* the connection failed: the sender's silence ends the query */
	bufpool_put(b);
	return true;
}

/* semq_rd: a PULL notice arrived in receive buffer b */
void
start_read(int b, const RxHeader *h)
{
	int			r = query_status(h->query_id, h->token, h->exchange_id, true);
	WPort	   *w;
	int			ridx;

	if (r != FIND_OK)
	{
		bufpool_put(b);
		drop_unrouted(h, r, RX_EP_RELIABLE);
		return;
	}
	w = receiving_port(h, &ridx);
	if (w == NULL || WRECV(w, ridx, h->src_member)->design != RX_DESIGN_SEMQ_RD)
	{
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	wbufs[b].expect = *h;
	if (read_retry.head >= 0 || !issue_read(b))
		rx_buflist_push(&read_retry, b);
}

/* semq_rd: the reads the provider could not take, in order */
bool
retry_reads(void)
{
	bool		any = false;

	while (read_retry.head >= 0)
	{
		int			b = rx_buflist_pop(&read_retry);

		if (!issue_read(b))
		{
			rx_buflist_push_front(&read_retry, b);
			break;
		}
		any = true;
	}
	return any;
}

/* semq_rd: the message a PULL announced is in b; it must be that message */
void
read_done(int b, int err)
{
	WBuf	   *wb = &wbufs[b];
	RxHeader	h;

	wb->reading = false;
	if (err != 0)
	{
		/*
		 * The sender's buffer refused us (a wrong key or address: a
		 * damaged or forged PULL notice), or the connection broke.  The
		 * message cannot come another way: fail the query, naming it.
		 */
		int			ridx;
		WPort	   *w = receiving_port(&wb->expect, &ridx);

		if (w != NULL)
		{
			char		detail[160];

			snprintf(detail, sizeof(detail),
					 "The RDMA Read of message %llu from its registered buffer failed: %s.",
					 (unsigned long long) wb->expect.seq, rx_fabric_strerror(err));
			port_rdma_failed(w, wb->expect.src_member, wb->expect.exchange_id,
							 detail);
		}
		bufpool_put(b);
		return;
	}
	rx_header_decode(buf_header(b), &h);
	if (h.type != RX_WIRE_DATA ||
		h.query_id != wb->expect.query_id || h.token != wb->expect.token ||
		h.exchange_id != wb->expect.exchange_id ||
		h.src_member != wb->expect.src_member ||
		h.dst_member != wb->expect.dst_member || h.seq != wb->expect.seq ||
		h.payload_len != wb->expect.payload_len ||
		!header_valid(&h, RX_WIRE_HEADER_SIZE + h.payload_len))
	{
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	rx_count(RXC_DATA_RECEIVED, 1);
	rx_count(RXC_BYTES_RECEIVED, RX_WIRE_HEADER_SIZE + h.payload_len);
	handle_data(b, &h, RX_EP_RELIABLE);
}
