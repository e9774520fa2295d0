/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The transport worker: one background worker per instance that owns
 *	  the fabric and moves messages between the ports of all members.
 *
 * Every design of rdma_exchange.transport_design runs here.  The SE
 * designs send through set 0 of their kind of endpoint, shared by every
 * backend of the instance; the ME designs (mesq_sr, memq_sr, memq_rd,
 * memq_wr) work as their SE designs but send through the endpoint set
 * their port was dealt (rdma_exchange.transport_endpoints sets; set 0
 * receives for all):
 *
 *	sesq_sr  Send/Receive over unreliable datagrams (the paper's SR over
 *	         UD), made reliable here, see below;
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
 * The worker spins briefly while there is traffic and otherwise sleeps on
 * its latch and the receive CQ's wait fd, so an idle instance uses no CPU.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>

#include <rdma/fi_errno.h>

#include "common/pg_prng.h"
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

PGDLLEXPORT void rx_transport_worker_main(Datum main_arg);

#define WORKER_NAME			"rdma_exchange transport"
#define MAX_RECV_POSTED		256 /* receives kept posted (and pool / 4) */
#define POLL_BATCH			64	/* completions handled per poll */
#define IDLE_SPINS			4	/* empty polls before sleeping */
#define CLOSED_RING			1024	/* recently closed ports remembered */
#define MAX_DELAYED			16	/* datagrams held back by the reorder fault */
#define MAX_BACKOFF			32	/* credit requests: at most every 32 timeouts */
#define FAST_RETRANSMIT_DEPTH 3 /* later messages held before a hole is resent */
#define MAX_RTO_SHIFT		5	/* timeout doubles per retry, up to 32x */
#define MAX_RECV_POSTED_RELIABLE 64 /* 64 kB receives kept posted */
#define POLL_WINDOW_US		2000	/* no wait object: poll this long after
									 * the last completion */

/* worker-private state of one pool buffer */
typedef struct WBuf
{
	uint64		seq;			/* DATA: sequence number */
	TimestampTz sent_at;		/* 0: not sent yet */
	uint8		inflight;		/* sends not completed */
	uint8		tries;			/* retransmissions so far */
	bool		acked;			/* released: free at send completion */
	uint8		design;			/* sent buffers: the stream's design */
	uint32		bcast_mask;		/* broadcast: members yet to acknowledge */
	uint32		bcast_unsent;	/* broadcast: members not sent to yet */
	bool		lent;			/* semq_wr: lent to a sender, not written */
	bool		reading;		/* semq_rd: an RDMA Read into it runs */
	TimestampTz until;			/* in quarantine: free after this */
	RxHeader	expect;			/* reading: the notice it answers */
} WBuf;

/* semq_wr, sender side: a buffer the receiver lent (the free ring) */
typedef struct RemoteBuf
{
	uint64		addr;
	uint64		key;
	uint32		bufid;
} RemoteBuf;

typedef struct WSend
{
	RxBufList	unacked;		/* in seq order, chained through the pool */
	uint64		credit;
	uint64		acked;
	TimestampTz rack;			/* latest send time of an acknowledged message */
	TimestampTz last_heard;		/* last ACK from the receiver */
	bool		heard;			/* the receiver's port has answered once */
	TimestampTz next_request;	/* next CREDIT_REQUEST allowed */
	int			backoff;
	bool		closed;
	int			design;
	int			ep;
	int			bcast_pending;	/* broadcast buffers it has not acknowledged */
	uint64		lent_known;		/* semq_wr: lent buffers heard of */
	uint64		ack_credit;		/* semq_wr: credit of the latest ACK */
	TimestampTz lends_asked;	/* semq_wr: when we last asked for LENDs */
	RemoteBuf  *ring;			/* semq_wr: [ring_size], by seq */
	int			ring_size;
} WSend;

typedef struct WRecv
{
	uint64		next;			/* next seq to deliver */
	int32	   *held;			/* [window] out-of-order buffers, or NULL */
	int			nheld;
	uint64		ack_sent;		/* cumulative ack in the last ACK */
	uint64		adv_sent;		/* consumed count in the last ACK */
	TimestampTz ack_time;
	int			idle_shift;		/* keepalive ACK every timeout << idle_shift */
	bool		dirty;			/* send an ACK at the end of this round */
	bool		eos_done;
	int			design;
	int			ep;
	int			window;			/* largest credit window, messages */
	int			grant;			/* credit window in force (adaptive pool:
								 * between grant_floor() and window) */
	int			k_base;			/* credit every k messages, at most */
	int			k;				/* credit every k messages */
	uint64		credit_sent;	/* credit in the last ACK */
	uint64		lent;			/* semq_wr: buffers lent, the credit */
	int32	   *lent_ring;		/* semq_wr: [window] lent buffer by seq */
} WRecv;

typedef struct WPort
{
	bool		active;
	uint32		gen;
	RxPort	   *sh;
	MemoryContext cxt;
	uint64		query_id;
	uint64		token;
	int			self;
	int			nmembers;
	int			nsend;
	int			nrecv;
	bool		uses_ep[RX_NEPS];
	uint32		turn;			/* ME designs: endpoint set, modulo the sets */
	int			reserved[RX_BUF_NCLASSES];	/* fixed depth: promised buffers */
	RxFabricAddr addr[RX_NEPS][RX_MAX_MEMBERS];
	WSend	   *send;			/* [nsend * nmembers] */
	RxBufList  *bcast;			/* [nsend] broadcast buffers not acknowledged */
	WRecv	   *recv;			/* [nrecv * nmembers] */
	uint32		stopped_recv;	/* receive exchanges we asked to stop */
	bool		wake;			/* set the owner's latch this round */
	bool		dirty;			/* some receive stream has an ACK due */
	bool		error_reported;
} WPort;

/* a port that closed recently: late messages for it get a CLOSED answer */
typedef struct ClosedPort
{
	uint64		query_id;
	uint64		token;
	int			self;
	int			nmembers;
	int			nrecv;
	int			recv_exchange_ids[RX_MAX_EXCHANGES];
	RxFabricAddr addr[RX_NEPS][RX_MAX_MEMBERS]; /* to tell late senders */
} ClosedPort;

typedef struct Peer
{
	int			ep;
	char		address[RX_FABRIC_ADDR_LEN];
	RxFabricAddr addr;
} Peer;

static RxFabricInfo finfo[RX_NEPS];
static bool ep_open[RX_MAX_ENDPOINTS];	/* by RX_EP_INDEX(kind, set) */
static int	nsets[RX_NEPS];		/* endpoint sets open of each kind */
static uint32 ports_dealt;		/* ports opened: the next one's set */
static int	nbuf;
static Size msg_size[RX_NEPS];	/* header + payload */
static int	recv_target[RX_NEPS];
static int	nposted[RX_NEPS];
static RxBufList quarantine;	/* by until; see quarantine_buffer() */
static RxBufList read_retry;	/* semq_rd: notices waiting for their read */
static WBuf *wbufs;
static WPort *wports;
static int *active;
static int	nactive;
static TimestampTz now;
static bool tx_blocked;
static ClosedPort closed_ring[CLOSED_RING];
static int	closed_next;
static Peer *peers;
static int	npeers;
static int	maxpeers;
static int	delayed[MAX_DELAYED];
static int	ndelayed;
static int	delayed_ready;		/* delayed entries older than this round */
static WaitEventSet *wes;
static bool all_waitable = true;	/* every open endpoint has a wait fd */
static TimestampTz last_busy;	/* the last round that did something */

#define WSEND(w, sidx, m)	(&(w)->send[(sidx) * (w)->nmembers + (m)])
#define WRECV(w, ridx, m)	(&(w)->recv[(ridx) * (w)->nmembers + (m)])

static inline bool
design_reliable(int design)
{
	return design != RX_DESIGN_SESQ_SR;
}

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

/* ---------------------------------------------------------------------
 * Registration and small helpers
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

static inline RxWireHeader *
buf_header(int b)
{
	return (RxWireHeader *) RX_BUF_HEADER(bufpool_buffer(b));
}

static int
find_send_index(WPort *w, int exchange_id)
{
	for (int i = 0; i < w->nsend; i++)
		if (w->sh->spec.send_exchange_ids[i] == exchange_id)
			return i;
	return -1;
}

static int
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
static ClosedPort *
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

/*
 * Is there an active port of the query that sends (recv = false) or
 * receives the exchange?  FIND_OK, or why not.
 */
#define FIND_OK			0
#define FIND_NO_QUERY	1
#define FIND_TOKEN		2
#define FIND_NO_PORT	3		/* query known, no port for the exchange */

static int
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

static void
wake_port(WPort *w)
{
	w->wake = true;
}

static void
set_port_error(WPort *w, int err, int member, int exchange_id,
			   const char *detail)
{
	RxPort	   *p = w->sh;

	SpinLockAcquire(&p->mutex);
	if (p->error == RX_PORT_ERR_NONE)
	{
		p->error = err;
		p->error_member = member;
		p->error_exchange = exchange_id;
		strlcpy(p->error_detail, detail ? detail : "", sizeof(p->error_detail));
	}
	SpinLockRelease(&p->mutex);
	wake_port(w);
}

/* ---------------------------------------------------------------------
 * Sending
 * ---------------------------------------------------------------------
 */

static void handle_control(const RxHeader *h, int e, const char *ext);
static bool poll_send(void);

/*
 * A control message to member dst of port w over endpoint e, with ext
 * bytes after the header (PULL, LEND); local ones are handled here.
 */
static bool
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

static void
send_control(WPort *w, int dst, int e, RxHeader *h)
{
	(void) send_control_ext(w, dst, e, h, NULL, 0);
}

/*
 * Put one data buffer on its way; it stays on the stream's unacked list.
 * How depends on the stream's design: a datagram or a message, a PULL
 * notice for the receiver to read it, or a write into a lent buffer.
 */
static bool
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
				ret = rx_fabric_write_imm(ws->ep, b, hdr, len, to,
										  rb->addr, rb->key,
										  (uint64) rb->bufid | ((uint64) len << 32));
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
static void
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

static void
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
static void
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

static void
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
static void
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
static void
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
 * Control messages
 * ---------------------------------------------------------------------
 */

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
static uint64
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
static void
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
static int
grant_floor(WRecv *wr)
{
	if (wr->design == RX_DESIGN_SESQ_SR)
		return Min(wr->window, 16);
	return Max(1, wr->window / 2);
}

static void
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

static void
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
static void
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

static void
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
static void
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
static void
send_credit_request(WPort *w, int sidx, int dst)
{
	RxHeader	rq;

	memset(&rq, 0, sizeof(rq));
	rq.type = RX_WIRE_CREDIT_REQUEST;
	rq.exchange_id = w->sh->spec.send_exchange_ids[sidx];
	send_control(w, dst, WSEND(w, sidx, dst)->ep, &rq);
}

static void
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

/*
 * semq_wr: the receiver lent us buffer h->seq of the stream (again, when
 * we asked for credit); the credit it backs can be used now
 */
static void
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
	rb = &ws->ring[h->seq % ws->ring_size];
	rb->addr = RX_LE64(lend->addr);
	rb->key = RX_LE64(lend->key);
	rb->bufid = RX_LE32(lend->bufid);
	ws->lent_known++;
	set_credit(w, ws, &w->sh->send[RX_STREAM(sidx, h->src_member)],
			   h->src_member, ws->ack_credit);
}

static void
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

/* ---------------------------------------------------------------------
 * Datagrams from the fabric
 * ---------------------------------------------------------------------
 */

static bool
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
static WPort *
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

static void
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
static void
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
static bool
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
static void
read_done(int b, int err)
{
	WBuf	   *wb = &wbufs[b];
	RxHeader	h;

	wb->reading = false;
	rx_header_decode(buf_header(b), &h);
	if (err != 0 || h.type != RX_WIRE_DATA ||
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

/*
 * semq_wr: a sender wrote a message into a buffer we lent it; the
 * immediate data says which buffer and how long.  It must be one we lent
 * for that very stream and sequence number.
 */
static void
write_done(uint64 imm)
{
	int			b = (int) (imm & 0xFFFFFFFF);
	Size		len = (Size) (imm >> 32);
	RxHeader	h;
	WPort	   *w;
	WRecv	   *wr;
	int			ridx;

	if (b < 0 || b >= nbuf || bufpool_class_of(b) != RX_BUF_LARGE ||
		!wbufs[b].lent || len < RX_WIRE_HEADER_SIZE || len > msg_size[RX_EP_RELIABLE])
	{
		/* late writes into quarantined buffers end here too */
		rx_count(RXC_BAD_HEADER_DROPPED, 1);
		return;
	}
	rx_header_decode(buf_header(b), &h);
	rx_count(RXC_DATAGRAMS_RECEIVED, 1);
	rx_count(RXC_BYTES_RECEIVED, len);
	if (!header_valid(&h, len) || h.type != RX_WIRE_DATA ||
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

static bool
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

static bool
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
			/* failed: datagrams go again after a timeout, others at once */
			if (c[i].err != 0)
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

static void
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
	strlcpy(peers[npeers].address, address, RX_FABRIC_ADDR_LEN);
	peers[npeers].addr = *addr;
	npeers++;
	return true;
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
		if (!resolve_member(e, spec->fabric_addrs[m], &w->addr[e][m], &reason))
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
			wbufs[b].design = w->sh->spec.send_designs[sidx];
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

static void
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
}

/* opens and closes can be on any slot; everything else on active ones */
static bool
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
static void
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
static void
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

static void
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
static void
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

	SpinLockAcquire(&rx_shared->mutex);
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
