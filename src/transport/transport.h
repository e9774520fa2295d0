/*-------------------------------------------------------------------------
 *
 * transport.h
 *	  What a backend sees of the data plane: ports, streams, messages.
 *
 * Backends never call libfabric.  A backend that takes part in a
 * distributed query opens a *port* (one per query id in that backend) in
 * shared memory; the transport worker of the instance moves messages
 * between ports of all members over the fabric.
 *
 * A *stream* is (query id, exchange id, source member, destination member).
 * The transport makes every stream reliable, in order, and flow controlled
 * by credits, whatever the fabric below does (datagrams may be lost,
 * duplicated or reordered).  Message boundaries are preserved; the payload
 * of one message is at most rx_max_payload() bytes.  Framing tuples into
 * messages is the executor's business (src/exec/).
 *
 * Messages between two ports of the same instance (the coordinator's own
 * fragment sending to the coordinator's query backend) are handed over in
 * shared memory and never touch the network.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_TRANSPORT_H
#define RX_TRANSPORT_H

#include "rdma_exchange.h"

/* message flags, visible to the receiver */
#define RX_MSG_EOS			0x0001	/* last message of the stream */
#define RX_MSG_FRAGMENT		0x0002	/* payload continues in the next message */

typedef struct RxPort RxPort;	/* opaque, lives in shared memory */

typedef struct RxPortSpec
{
	uint64		query_id;		/* random, chosen by the coordinator */
	uint64		token;			/* random, must match on every message */
	int			self;			/* this member's index */
	int			nmembers;
	char		fabric_addrs[RX_MAX_MEMBERS][RX_FABRIC_ADDR_LEN];	/* per member index */
	char		member_names[RX_MAX_MEMBERS][NAMEDATALEN];	/* for error messages */
	/* datagram endpoints' raw names where peers need them (shared.h) */
	char		dgram_names[RX_MAX_MEMBERS][RX_FABRIC_NAME_LEN];
	/* reliable endpoints' pool registrations, where published (shared.h) */
	char		pool_regs[RX_MAX_MEMBERS][RX_POOL_REG_LEN];
	int			nrecv;			/* exchanges this port receives */
	int			recv_exchange_ids[RX_MAX_EXCHANGES];
	int			nsend;			/* exchanges this port sends on */
	int			send_exchange_ids[RX_MAX_EXCHANGES];
	/* RxDesign of each exchange, the same on every member of the query */
	uint8		recv_designs[RX_MAX_EXCHANGES];
	uint8		send_designs[RX_MAX_EXCHANGES];
} RxPortSpec;

/*
 * The design of a new exchange: rdma_exchange.transport_design, or with
 * auto semq_sr for ordered exchanges and for unordered ones sesq_sr on
 * RDMA hardware, semq_wr otherwise (see design.c), each where its endpoint
 * is up.  Raises an error when a
 * design was asked for whose endpoint is not up.  The coordinator chooses
 * and ships the choice with the fragments.
 */
extern int	rx_design_choose(bool ordered);

/*
 * This member's rdma_exchange.datagram_name: its datagram endpoint's raw
 * name in hex where peers can find it by that only (verbs' UD), else ""
 * (a static buffer).
 */
extern const char *rx_datagram_name(void);
extern const char *rx_pool_registration(void);

/*
 * An error unless design's endpoint is open on this member; it names the
 * exchange when exchange_id >= 0, and ends with hint.
 */
extern void rx_design_require(int design, int exchange_id, const char *hint);
extern const char *rx_design_name(int design);

/*
 * Open a port for one query in this backend.  The worker immediately grants
 * initial credit to every source member for every receive exchange, so data
 * for an exchange that the executor has not reached yet is buffered (up to
 * the credit window), never dropped.  Ports still open at transaction end
 * are closed by the transport itself (abort included); nothing is leaked.
 */
extern RxPort *rx_port_open(const RxPortSpec *spec);
extern void rx_port_close(RxPort *port);

/* payload bytes one message of a design can carry */
extern Size rx_max_payload(int design);

/*
 * Sending, zero copy: get the registered pool buffer for the next message
 * of a stream, fill up to *capacity bytes, then submit it.  dest
 * RX_BROADCAST sends one buffer to every other member (it needs credit
 * from all of them, and is recycled once all of them acknowledged it).  Returns NULL
 * when the stream has no credit or the pool has no free buffer right now;
 * the caller then drains its incoming messages and waits (rx_wait) before
 * trying again.  At most one buffer per stream is outstanding between get
 * and submit.
 */
#define RX_BROADCAST	(-1)

extern char *rx_send_get_buffer(RxPort *port, int exchange_id, int dest,
								Size *capacity);
extern void rx_send_submit(RxPort *port, int exchange_id, int dest,
						   Size len, uint16 flags);

/*
 * Receiving: the next in-order message of any stream of this port, or false
 * when none is ready.  The payload stays in the pool buffer until released.
 */
typedef struct RxMessage
{
	int			exchange_id;
	int			source;			/* member index */
	uint16		flags;
	Size		len;
	const char *data;
	int			bufid;			/* private to the transport */
} RxMessage;

extern bool rx_recv(RxPort *port, RxMessage *msg);
extern void rx_release(RxPort *port, RxMessage *msg);

/*
 * Ask every source of an exchange (exchange_id < 0: of every exchange of the
 * query) to stop: the senders see rx_stop_requested() and finish early.
 */
extern void rx_request_stop(RxPort *port, int exchange_id);
extern bool rx_stop_requested(RxPort *port);

/*
 * Sleep until the worker signals this backend (message, credit, stop) or
 * timeout_ms passes; handles interrupts.  A member whose worker cannot be
 * reached raises an error naming it.
 */
extern void rx_wait(RxPort *port, long timeout_ms, uint32 wait_event_info);

/* Counters of one stream direction, for EXPLAIN ANALYZE. */
typedef struct RxStreamStats
{
	uint64		msgs;
	uint64		bytes;
	uint64		retransmits;	/* sender side */
	uint64		duplicates;		/* receiver side: dropped duplicates */
	uint64		peak;			/* most buffers the stream held at once */
} RxStreamStats;

/* sums over all streams of one exchange, per peer member */
extern void rx_exchange_stats(RxPort *port, int exchange_id, bool send,
							  RxStreamStats *per_member /* [nmembers] */ );

/* called from _PG_init: shared memory request, worker registration */
extern void rx_transport_init(void);

/* the provider a design runs on, for EXPLAIN */
extern const char *rx_transport_provider_name(int design);

#endif							/* RX_TRANSPORT_H */
