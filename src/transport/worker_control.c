/*-------------------------------------------------------------------------
 *
 * worker_control.c
 *	  Control messages of the transport worker: sending them, and handling
 *	  the ACK, CREDIT_REQUEST, LEND and STOP messages that arrive.
 *
 * A message no open port takes is counted by why; a sender that still
 * talks to a port that has closed is told so, so that it stops
 * retransmitting and waiting.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <rdma/fi_errno.h>

#include "transport/worker_int.h"

/*
 * A control message to member dst of port w over endpoint e, with ext
 * bytes after the header (PULL, LEND); local ones are handled here.
 */
bool
send_control_ext(WPort *w, int dst, int e, RxHeader *h, const void *ext,
				 Size extlen)
{
	char		wire[RX_WIRE_HEADER_SIZE + RX_WIRE_MAX_EXT];
	int			ret;

	h->magic = RX_WIRE_MAGIC;
	h->version = RX_WIRE_VERSION;
	h->query_id = w->query_id;
	h->token = w->token;
	h->src_member = w->self;
	h->dst_member = dst;
	if (h->type != RX_WIRE_PULL)
		h->payload_len = 0;
	h->reserved = 0;
	if (dst == w->self)
	{
		Assert(extlen == 0);
		handle_control(h, RX_EP_KIND(e), NULL);
		return true;
	}
	Assert(extlen <= RX_WIRE_MAX_EXT);
	rx_header_encode(h, (RxWireHeader *) wire);
	if (extlen > 0)
		memcpy(wire + RX_WIRE_HEADER_SIZE, ext, extlen);
	ret = rx_fabric_send_small(e, wire, RX_WIRE_HEADER_SIZE + extlen,
							   w->addr[RX_EP_KIND(e)][dst]);
	if (ret == -FI_EAGAIN)
	{
		/* make room and try once more; control messages are soft state */
		(void) poll_send();
		ret = rx_fabric_send_small(e, wire, RX_WIRE_HEADER_SIZE + extlen,
								   w->addr[RX_EP_KIND(e)][dst]);
	}
	if (ret != 0)
	{
		rx_count(RXC_CONTROL_SEND_FAILED, 1);
		return false;
	}
	rx_count(RXC_DATAGRAMS_SENT, 1);
	rx_count(RXC_CONTROL_SENT, 1);
	rx_count(RXC_BYTES_SENT, RX_WIRE_HEADER_SIZE + extlen);
	return true;
}

void
send_control(WPort *w, int dst, int e, RxHeader *h)
{
	(void) send_control_ext(w, dst, e, h, NULL, 0);
}

/*
 * Is there an active port of the query that sends (recv = false) or
 * receives the exchange?  FIND_OK, or why not.
 */
int
query_status(uint64 query_id, uint64 token, int exchange_id, bool recv)
{
	bool		seen = false;

	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->query_id != query_id)
			continue;
		seen = true;
		if (w->token != token)
			return FIND_TOKEN;
		if ((recv ? find_recv_index(w, exchange_id) :
			 find_send_index(w, exchange_id)) >= 0)
			return FIND_OK;
	}
	return seen ? FIND_NO_PORT : FIND_NO_QUERY;
}

/* reply to a message for a port that is gone */
static void
send_closed_ack(const RxHeader *in, int self, int e, RxFabricAddr to)
{
	RxHeader	h;
	RxWireHeader wire;

	memset(&h, 0, sizeof(h));
	h.magic = RX_WIRE_MAGIC;
	h.version = RX_WIRE_VERSION;
	h.type = RX_WIRE_ACK;
	h.flags = RX_WIRE_ACK_CLOSED;
	h.query_id = in->query_id;
	h.token = in->token;
	h.exchange_id = in->exchange_id;
	h.src_member = self;		/* not in->dst_member: it may be a broadcast */
	h.dst_member = in->src_member;
	rx_header_encode(&h, &wire);
	if (rx_fabric_send_small(e, &wire, sizeof(wire), to) == 0)
	{
		rx_count(RXC_DATAGRAMS_SENT, 1);
		rx_count(RXC_CONTROL_SENT, 1);
		rx_count(RXC_BYTES_SENT, sizeof(wire));
	}
}

/*
 * The fabric address of a member of a query, from an open port of the
 * query or from the closed port; false for this instance itself.
 */
static bool
address_of_member(uint64 query_id, int member, ClosedPort *cp, int e,
				  RxFabricAddr *to)
{
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];

		if (w->query_id == query_id && member < w->nmembers)
		{
			if (member == w->self || !w->uses_ep[e])
				return false;
			*to = w->addr[e][member];
			return true;
		}
	}
	if (member >= cp->nmembers || cp->addr[e][member] == (RxFabricAddr) -1)
		return false;
	*to = cp->addr[e][member];
	return true;
}

/*
 * A message no open port takes: count why, and tell the sender of a DATA
 * or CREDIT_REQUEST for a port that has closed, so it stops retransmitting
 * and waiting.  Messages for a port that has not opened yet are dropped
 * too: its credit (initial credit at open) makes the sender try again.
 */
void
drop_unrouted(const RxHeader *h, int status, int e)
{
	bool		for_receiver = (h->type == RX_WIRE_DATA ||
								h->type == RX_WIRE_PULL ||
								h->type == RX_WIRE_CREDIT_REQUEST);
	ClosedPort *cp;
	RxFabricAddr to;

	if (status == FIND_TOKEN)
	{
		rx_count(RXC_WRONG_TOKEN_DROPPED, 1);
		return;
	}
	cp = closed_lookup(h->query_id, for_receiver ? h->exchange_id : INT_MIN);
	if (cp != NULL && cp->token != h->token)
		rx_count(RXC_WRONG_TOKEN_DROPPED, 1);
	else if (cp != NULL)
	{
		rx_count(RXC_CLOSED_PORT_DROPPED, 1);
		if (for_receiver && address_of_member(h->query_id, h->src_member, cp, e, &to))
			send_closed_ack(h, cp->self, e, to);
	}
	else if (h->type == RX_WIRE_DATA || h->type == RX_WIRE_PULL)
		rx_count(RXC_UNKNOWN_QUERY_DROPPED, 1);
	else
		rx_count(RXC_EARLY_CONTROL_DROPPED, 1);
}

void
handle_control(const RxHeader *h, int e, const char *ext)
{
	bool		recv_side = (h->type == RX_WIRE_CREDIT_REQUEST);
	int			r;

	if (h->type == RX_WIRE_STOP && h->exchange_id < 0)
		r = query_status(h->query_id, h->token, INT_MIN, false);
	else
		r = query_status(h->query_id, h->token, h->exchange_id, recv_side);
	if (h->type == RX_WIRE_STOP && h->exchange_id < 0 && r == FIND_NO_PORT)
		r = FIND_OK;			/* every exchange of the query */
	if (r != FIND_OK)
	{
		drop_unrouted(h, r, e);
		return;
	}

	/* a query may have several ports here (coordinator and fragment) */
	for (int a = 0; a < nactive; a++)
	{
		WPort	   *w = &wports[active[a]];
		int			idx;

		if (w->query_id != h->query_id || h->dst_member != w->self ||
			h->src_member >= w->nmembers)
			continue;
		switch (h->type)
		{
			case RX_WIRE_ACK:
				if ((idx = find_send_index(w, h->exchange_id)) >= 0)
					handle_ack(w, idx, h);
				break;
			case RX_WIRE_CREDIT_REQUEST:
				if ((idx = find_recv_index(w, h->exchange_id)) >= 0)
				{
					WRecv	   *wr = WRECV(w, idx, h->src_member);

					if (wr->design == RX_DESIGN_SEMQ_WR)
						lend_again(w, wr, idx, h->src_member);
					wr->dirty = w->dirty = true;
				}
				break;
			case RX_WIRE_LEND:
				if ((idx = find_send_index(w, h->exchange_id)) >= 0)
				{
					RxWireLend	lend;

					memcpy(&lend, ext, sizeof(lend));
					handle_lend(w, idx, h, &lend);
				}
				break;
			case RX_WIRE_STOP:
				for (int s = 0; s < w->nsend; s++)
					if (h->exchange_id < 0 ||
						w->sh->spec.send_exchange_ids[s] == h->exchange_id)
						stop_send_exchange(w, s);
				break;
		}
	}
}
