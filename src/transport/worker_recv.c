/*-------------------------------------------------------------------------
 *
 * worker_recv.c
 *	  The transport worker's completion queues: receives kept posted,
 *	  every message that arrives checked and routed (data to its port,
 *	  notices and control messages to their handlers), send completions,
 *	  and the fault injection settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/pg_prng.h"

#include "transport/worker_int.h"

#define POLL_BATCH			64	/* completions handled per poll */
#define MAX_DELAYED			16	/* datagrams held back by the reorder fault */

static int	nposted[RX_NEPS];
static int	delayed[MAX_DELAYED];
int			ndelayed;
static int	delayed_ready;		/* delayed entries older than this round */

bool
header_valid(const RxHeader *h, Size len)
{
	if (h->magic != RX_WIRE_MAGIC || h->version != RX_WIRE_VERSION ||
		h->reserved != 0 || h->src_member >= RX_MAX_MEMBERS ||
		(h->dst_member >= RX_MAX_MEMBERS &&
		 !(h->dst_member == RX_WIRE_ALL &&
		   (h->type == RX_WIRE_DATA || h->type == RX_WIRE_PULL))))
		return false;
	switch (h->type)
	{
		case RX_WIRE_DATA:
			return (h->flags & ~RX_WIRE_DATA_FLAGS) == 0 &&
				(Size) h->payload_len + RX_WIRE_HEADER_SIZE == len;
		case RX_WIRE_PULL:
			return (h->flags & ~RX_WIRE_DATA_FLAGS) == 0 &&
				len == RX_WIRE_HEADER_SIZE + sizeof(RxWirePull) &&
				(Size) h->payload_len + RX_WIRE_HEADER_SIZE <= msg_size[RX_EP_RELIABLE];
		case RX_WIRE_LEND:
			return h->flags == 0 && h->payload_len == 0 &&
				len == RX_WIRE_HEADER_SIZE + sizeof(RxWireLend);
		case RX_WIRE_ACK:
			return (h->flags & ~RX_WIRE_ACK_FLAGS) == 0 && h->payload_len == 0 &&
				len == RX_WIRE_HEADER_SIZE;
		case RX_WIRE_STOP:
		case RX_WIRE_CREDIT_REQUEST:
			return h->flags == 0 && h->payload_len == 0 &&
				len == RX_WIRE_HEADER_SIZE;
	}
	return false;
}

/* the open port of the query that receives the exchange, or NULL */
WPort *
receiving_port(const RxHeader *h, int *ridx)
{
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->query_id != h->query_id ||
			(*ridx = find_recv_index(w, h->exchange_id)) < 0)
			continue;
		if ((h->dst_member != w->self && h->dst_member != RX_WIRE_ALL) ||
			h->src_member >= w->nmembers || h->src_member == w->self)
			return NULL;
		return w;
	}
	return NULL;
}

void
handle_data(int b, const RxHeader *h, int e)
{
	int			r = query_status(h->query_id, h->token, h->exchange_id, true);

	if (r == FIND_OK)
	{
		int			ridx;
		WPort	   *w = receiving_port(h, &ridx);

		if (w != NULL)
		{
			accept_data(w, ridx, h->src_member, b, h->seq, h->flags);
			return;
		}
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	bufpool_put(b);
	drop_unrouted(h, r, e);
}

static bool
fault(int percent)
{
	return percent > 0 && (int) (pg_prng_uint32(&pg_global_prng_state) % 100) < percent;
}

/*
 * A message that arrived in receive buffer b of endpoint e.  The fault
 * injection settings apply to datagrams only: the reliable designs rely on
 * the provider to deliver every message once, as a real RC QP does.
 */
static void
handle_datagram(int b, Size len, int e)
{
	RxHeader	h;

	rx_count(RXC_DATAGRAMS_RECEIVED, 1);
	rx_count(RXC_BYTES_RECEIVED, len);
	if (len < RX_WIRE_HEADER_SIZE)
	{
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	rx_header_decode(buf_header(b), &h);
	if (!header_valid(&h, len))
	{
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	if (h.type == RX_WIRE_PULL)
	{
		if (e != RX_EP_RELIABLE)
		{
			rx_count(RXC_BAD_HEADER_DROPPED, 1);
			bufpool_put(b);
			return;
		}
		start_read(b, &h);
		return;
	}
	if (h.type != RX_WIRE_DATA)
	{
		char		ext[RX_WIRE_MAX_EXT];

		rx_count(RXC_CONTROL_RECEIVED, 1);
		memcpy(ext, RX_BUF_HEADER(bufpool_buffer(b)) + RX_WIRE_HEADER_SIZE,
			   len - RX_WIRE_HEADER_SIZE);
		bufpool_put(b);
		handle_control(&h, e, ext);
		return;
	}
	rx_count(RXC_DATA_RECEIVED, 1);
	if (e != RX_EP_DGRAM)
	{
		handle_data(b, &h, e);
		return;
	}

	/* fault injection, for tests: results must not change */
	if (fault(rx_fault_drop_percent))
	{
		rx_count(RXC_FAULT_DROPPED, 1);
		bufpool_put(b);
		return;
	}
	if (fault(rx_fault_duplicate_percent))
	{
		int			copy = bufpool_get(RX_BUF_SMALL, RX_BUF_WAIT, RX_BUF_NO_OWNER, 0, 0, true);

		if (copy >= 0)
		{
			memcpy(bufpool_buffer(copy), bufpool_buffer(b),
				   rx_shared->prefix_size + len);
			rx_count(RXC_FAULT_DUPLICATED, 1);
			handle_data(b, &h, e);
			handle_data(copy, &h, e);
			return;
		}
	}
	if (ndelayed < MAX_DELAYED && fault(rx_fault_reorder_percent))
	{
		rx_count(RXC_FAULT_REORDERED, 1);
		bufpool_desc(b)->state = RX_BUF_WAIT;
		delayed[ndelayed++] = b;
		return;
	}
	handle_data(b, &h, e);
}

/* the datagrams held back by the reorder fault, after later ones */
static void
release_delayed(int upto)
{
	int			n = Min(upto, ndelayed);
	int			batch[MAX_DELAYED];

	if (n == 0)
		return;
	memcpy(batch, delayed, sizeof(int) * n);
	memmove(delayed, delayed + n, sizeof(int) * (ndelayed - n));
	ndelayed -= n;
	for (int i = 0; i < n; i++)
	{
		RxHeader	h;

		rx_header_decode(buf_header(batch[i]), &h);
		handle_data(batch[i], &h, RX_EP_DGRAM);
	}
}

bool
poll_recv(void)
{
	RxCompletion c[POLL_BATCH];
	int			total = 0;

	/* set 0 of each kind: peers send and write only there */
	for (int e = 0; e < RX_NEPS; e++)
	{
		int			n;

		if (!ep_open[e])
			continue;
		n = rx_fabric_poll_recv(e, c, POLL_BATCH);
		for (int i = 0; i < n; i++)
		{
			if (c[i].has_imm)
			{
				write_done(c[i].imm);
				continue;
			}
			nposted[e]--;
			if (c[i].err != 0)
			{
				rx_count(RXC_BAD_HEADER_DROPPED, 1);
				bufpool_put(c[i].bufid);
				continue;
			}
			handle_datagram(c[i].bufid, c[i].len, e);
		}
		total += n;
	}
	/* whatever was delayed before this round now comes after later ones */
	release_delayed(delayed_ready);
	delayed_ready = ndelayed;
	return total > 0;
}

bool
poll_send(void)
{
	RxCompletion c[POLL_BATCH];
	int			total = 0;

	for (int e = 0; e < RX_MAX_ENDPOINTS; e++)
	{
		int			n;

		if (!ep_open[e])
			continue;
		n = rx_fabric_poll_send(e, c, POLL_BATCH);
		for (int i = 0; i < n; i++)
		{
			WBuf	   *wb = &wbufs[c[i].bufid];

			if (wb->reading)
			{
				read_done(c[i].bufid, c[i].err);
				continue;
			}
			if (wb->inflight > 0)
				wb->inflight--;
			/* an RDMA Write into a lent buffer cannot simply go again */
			if (c[i].err != 0 &&
				rx_design_single(wb->design) == RX_DESIGN_SEMQ_WR)
				write_failed(c[i].bufid, c[i].member, c[i].err);
			/* failed: datagrams go again after a timeout, others at once */
			else if (c[i].err != 0)
				wb->sent_at = design_reliable(wb->design) ? 0 : now;
			if (wb->inflight == 0 && wb->acked)
			{
				wb->acked = false;
				bufpool_put(c[i].bufid);
			}
		}
		total += n;
	}
	return total > 0;
}

void
post_receives(void)
{
	for (int e = 0; e < RX_NEPS; e++)
	{
		/* a datagram receive keeps room for the provider's prefix */
		int			cls = rx_ep_class(e);

		while (ep_open[e] && nposted[e] < recv_target[e])
		{
			int			b = bufpool_get(cls, RX_BUF_RECV_POSTED, RX_BUF_NO_OWNER, 0, 0, true);
			char	   *buf;
			int			ret;

			if (b < 0)
				break;
			buf = e == RX_EP_DGRAM ? bufpool_buffer(b) : RX_BUF_HEADER(bufpool_buffer(b));
			ret = rx_fabric_post_recv(e, b, buf, msg_size[e]);
			if (ret != 0)
			{
				bufpool_put(b);
				break;
			}
			nposted[e]++;
		}
	}
}
