/*-------------------------------------------------------------------------
 *
 * worker_int.h
 *	  The transport worker's own state and the functions one of its files
 *	  calls in another.  Internal to the worker (worker.c, worker_*.c):
 *	  backends never include it.
 *
 * Everything declared here lives in the worker process; what it shares
 * with backends is in shared.h.  The declarations keep the short names
 * they had as statics, and are hidden so that they still bind inside this
 * library: the server exports symbols of some of these names (now() is
 * one), and so may a library it loaded before this one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_TRANSPORT_WORKER_INT_H
#define RX_TRANSPORT_WORKER_INT_H

#include "datatype/timestamp.h"

#include "transport/shared.h"

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

/* a member's pool registration on its reliable endpoint (shared.h) */
typedef struct RxPoolReg
{
	bool		known;			/* published: RDMA must stay inside it */
	uint64		key;
	uint64		base;
	uint64		len;
} RxPoolReg;

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
	RxPoolReg	reg[RX_MAX_MEMBERS];	/* each member's, from the spec */
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
	char		address[RX_FABRIC_NAME_LEN];	/* host:port or a raw name */
	RxFabricAddr addr;
} Peer;

#define WSEND(w, sidx, m)	(&(w)->send[(sidx) * (w)->nmembers + (m)])
#define WRECV(w, ridx, m)	(&(w)->recv[(ridx) * (w)->nmembers + (m)])

static inline bool
design_reliable(int design)
{
	return design != RX_DESIGN_SESQ_SR;
}

static inline RxWireHeader *
buf_header(int b)
{
	return (RxWireHeader *) RX_BUF_HEADER(bufpool_buffer(b));
}

/* query_status(): is there an active port of the query for the exchange? */
#define FIND_OK			0
#define FIND_NO_QUERY	1
#define FIND_TOKEN		2
#define FIND_NO_PORT	3		/* query known, no port for the exchange */

/* shared by the worker's files, exported by none: see above */
#pragma GCC visibility push(hidden)

/* worker.c: endpoints, buffers, ports and the round's clock */
extern bool ep_open[RX_MAX_ENDPOINTS];
extern int	nsets[RX_NEPS];
extern int	nbuf;
extern Size msg_size[RX_NEPS];
extern int	recv_target[RX_NEPS];
extern WBuf *wbufs;
extern WPort *wports;
extern int *active;
extern int	nactive;
extern TimestampTz now;
extern bool tx_blocked;

/* worker_port.c: ports, and the events backends signal */
extern Peer *peers;
extern int	maxpeers;
extern int	find_send_index(WPort *w, int exchange_id);
extern int	find_recv_index(WPort *w, int exchange_id);
/* a port that closed recently, for answers to late messages */
extern ClosedPort *closed_lookup(uint64 query_id, int exchange_id);
/* set the owner's latch at the end of the round */
extern void wake_port(WPort *w);
extern bool set_port_error(WPort *w, int err, int member, int exchange_id,
						   const char *detail);
extern void port_rdma_failed(WPort *w, int m, int exchange_id,
							 const char *detail);
extern bool remote_ref_valid(WPort *w, int m, int exchange_id,
							 const char *what, uint64 seq,
							 uint64 addr, uint64 len, uint64 key);
/* the timers ask for credit too */
extern void request_credit(WPort *w);
/* the main loop's round: events, then ACKs and latches, then waiters */
extern bool handle_port_events(void);
extern void flush_round(void);
extern void wake_buffer_waiters(void);

/* worker_stream.c: the stream protocol */
extern RxBufList quarantine;
extern bool transmit(WPort *w, WSend *ws, int b, int dst,
					 bool retransmission);
/* buffers a peer may still reach, and when they are free again */
extern void quarantine_buffer(int b);
extern void release_quarantine(void);
/* a port closes: what its send streams still hold */
extern void drop_unacked(WSend *ws, int b);
/* messages submitted by a backend: broadcast, and to this instance */
extern void submit_broadcast(WPort *w, int sidx, int b);
extern void deliver_local(WPort *sw, int sidx, int b, const RxHeader *h);
/* a DATA message that arrived, whatever the design */
extern void accept_data(WPort *w, int ridx, int src, int b, uint64 seq,
						uint16 flags);
/* a receive stream's credit window, set when its port opens */
extern int	grant_floor(WRecv *wr);
extern void set_grant(WRecv *wr, RxRecvStream *rs, int grant);
extern void send_ack(WPort *w, int ridx, int src, uint16 extra_flags);
/* control messages for a send stream */
extern void stop_send_exchange(WPort *w, int sidx);
extern void set_credit(WPort *w, WSend *ws, RxSendStream *ss, int dst,
					   uint64 credit);
extern void send_credit_request(WPort *w, int sidx, int dst);
extern void handle_ack(WPort *w, int sidx, const RxHeader *h);
/* the main loop's timers, and sends a full queue held back */
extern void timers(TimestampTz tick);
extern void retry_blocked(void);

/* worker_control.c: control messages */
extern bool send_control_ext(WPort *w, int dst, int e, RxHeader *h,
							 const void *ext, Size extlen);
extern void send_control(WPort *w, int dst, int e, RxHeader *h);
extern int	query_status(uint64 query_id, uint64 token, int exchange_id,
						 bool recv);
/* a message no open port takes */
extern void drop_unrouted(const RxHeader *h, int status, int e);
extern void handle_control(const RxHeader *h, int e, const char *ext);

/* worker_recv.c: the completion queues */
extern int	ndelayed;
extern bool header_valid(const RxHeader *h, Size len);
extern WPort *receiving_port(const RxHeader *h, int *ridx);
/* a DATA message for a port, however it arrived */
extern void handle_data(int b, const RxHeader *h, int e);
extern bool poll_recv(void);
extern bool poll_send(void);
extern void post_receives(void);

/* worker_rdma_read.c: semq_rd, the receiver's reads */
extern RxBufList read_retry;
extern void start_read(int b, const RxHeader *h);
extern bool retry_reads(void);
extern void read_done(int b, int err);

/* worker_rdma_write.c: semq_wr, lent buffers and writes into them */
extern uint64 lend_buffers(WPort *w, WRecv *wr, int ridx, int src,
						   uint64 credit);
extern void lend_again(WPort *w, WRecv *wr, int ridx, int src);
extern void handle_lend(WPort *w, int sidx, const RxHeader *h,
						const RxWireLend *lend);
extern void write_done(uint64 imm);
extern void write_failed(int b, int member, int err);

#pragma GCC visibility pop

#endif							/* RX_TRANSPORT_WORKER_INT_H */
