/*-------------------------------------------------------------------------
 *
 * shared.h
 *	  Shared memory of the transport: the port array, the worker's public
 *	  state and the counters.  Internal to src/transport/.
 *
 * Who writes what (everything else is read-only for the other side):
 *	- the backend owning a port: next_seq/pending/msgs/bytes of its send
 *	  streams, consumed/msgs/bytes of its receive streams, the submit list,
 *	  stop requests, events;
 *	- the worker: credit/acked/retransmits of send streams, delivered,
 *	  advertised and duplicates of receive streams, the delivery queue,
 *	  state changes OPENING -> OPEN/FAILED and CLOSING -> FREE, errors.
 * Lists and state changes are under the port's spinlock; counters are
 * atomics.  Backends wake the worker with its latch, the worker wakes
 * backends with theirs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_TRANSPORT_SHARED_H
#define RX_TRANSPORT_SHARED_H

#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/spin.h"

#include "bufpool/bufpool.h"
#include "transport/fabric.h"
#include "transport/protocol.h"
#include "transport/transport.h"

/* port states */
#define RX_PORT_FREE		0
#define RX_PORT_OPENING		1	/* backend filled the spec, worker to accept */
#define RX_PORT_OPEN		2
#define RX_PORT_FAILED		3	/* worker refused it; see error */
#define RX_PORT_CLOSING		4	/* backend is done, worker to clean up */
#define RX_PORT_RESERVED	5	/* claimed by a backend, not yet OPENING */

/* port events, backend -> worker */
#define RX_EV_STATE			0x01	/* open or close */
#define RX_EV_SUBMIT		0x02	/* submit list not empty */
#define RX_EV_CREDIT		0x04	/* a receive stream consumed enough */
#define RX_EV_STOP			0x08	/* stop requested */
#define RX_EV_WANT			0x10	/* a send stream waits for credit */
#define RX_EV_PROBE			0x20	/* closing: ask receivers owing acks */

/* send stream flags */
#define RX_SS_WANT_CREDIT	0x01	/* backend: blocked on credit */
#define RX_SS_WANT_BUFFER	0x02	/* backend: blocked on the pool */
#define RX_SS_CLOSED		0x04	/* worker: the receiver is gone */

/* errors the worker reports on a port */
#define RX_PORT_ERR_NONE		0
#define RX_PORT_ERR_RESOLVE		1	/* a member's address cannot be resolved */
#define RX_PORT_ERR_SILENT		2	/* a member stopped acknowledging */
#define RX_PORT_ERR_RESTART		3	/* the worker restarted under the port */
#define RX_PORT_ERR_RDMA		4	/* an RDMA Read or Write with a member's
									 * buffer failed */

typedef struct RxSendStream
{
	pg_atomic_uint64 credit;	/* worker: may send seq < credit */
	pg_atomic_uint64 acked;		/* worker: cumulative acknowledgement */
	pg_atomic_uint64 retransmits;	/* worker */
	pg_atomic_uint32 flags;		/* RX_SS_* */
	pg_atomic_uint32 spare;		/* worker -> backend: a buffer kept for the
								 * next message, id + 1, or 0 */
	int32		pending;		/* backend: buffer between get and submit */
	uint64		next_seq;		/* backend: messages submitted */
	uint64		peak;			/* backend: most messages unacknowledged */
	uint64		msgs;			/* backend */
	uint64		bytes;			/* backend */
	bool		eos;			/* backend: EOS submitted */
} RxSendStream;

typedef struct RxRecvStream
{
	pg_atomic_uint64 delivered; /* worker: messages put in the queue */
	pg_atomic_uint64 consumed;	/* backend: messages released */
	pg_atomic_uint64 advertised;	/* worker: consumed in the last credit */
	pg_atomic_uint64 duplicates;	/* worker */
	pg_atomic_uint64 peak;		/* worker: most messages delivered, unconsumed */
	pg_atomic_uint32 ack_every; /* worker, set at open: credit every k
								 * consumed */
	uint64		msgs;			/* backend */
	uint64		bytes;			/* backend */
} RxRecvStream;

struct RxPort
{
	slock_t		mutex;
	int			state;
	uint32		generation;		/* bumped at every open of the slot */
	int			slot;
	int			owner_pid;
	Latch	   *owner_latch;
	RxPortSpec	spec;
	int			depth;			/* rdma_exchange.buffer_depth of the query */
	int32		bcast_pending[RX_MAX_EXCHANGES];	/* backend: broadcast buffer
													 * between get and submit */
	int			recv_window[RX_MAX_EXCHANGES];	/* credit window, messages */
	int			recv_ack_every[RX_MAX_EXCHANGES];	/* credit every k messages */

	RxBufList	queue;			/* delivered messages, state WAIT */
	RxBufList	submit;			/* submitted messages, state TRANSMIT */
	uint32		stop_request;	/* receive exchange indexes to stop */

	pg_atomic_uint32 events;	/* RX_EV_*, backend -> worker */
	pg_atomic_uint32 stopped;	/* worker: a source stop arrived */
	pg_atomic_uint32 stopped_exchanges; /* bitmap of send exchange indexes */

	int			error;			/* RX_PORT_ERR_* */
	int			error_member;
	int			error_exchange;
	char		error_detail[160];

	RxSendStream send[RX_MAX_EXCHANGES * RX_MAX_MEMBERS];
	RxRecvStream recv[RX_MAX_EXCHANGES * RX_MAX_MEMBERS];
};

#define RX_STREAM(idx, member)	((idx) * RX_MAX_MEMBERS + (member))

/* counters of transport_stats(); names in stats.c, same order */
typedef enum RxCounter
{
	RXC_DATAGRAMS_SENT,
	RXC_DATAGRAMS_RECEIVED,
	RXC_BYTES_SENT,
	RXC_BYTES_RECEIVED,
	RXC_DATA_SENT,
	RXC_DATA_RECEIVED,
	RXC_CONTROL_SENT,
	RXC_CONTROL_RECEIVED,
	RXC_LOCAL_DELIVERED,
	RXC_RETRANSMISSIONS,
	RXC_DUPLICATES_DROPPED,
	RXC_OUT_OF_WINDOW_DROPPED,
	RXC_BAD_HEADER_DROPPED,
	RXC_UNKNOWN_QUERY_DROPPED,
	RXC_WRONG_TOKEN_DROPPED,
	RXC_CLOSED_PORT_DROPPED,
	RXC_EARLY_CONTROL_DROPPED,
	RXC_FAULT_DROPPED,
	RXC_FAULT_DUPLICATED,
	RXC_FAULT_REORDERED,
	RXC_SEND_QUEUE_FULL,
	RXC_CONTROL_SEND_FAILED,
	RXC_PORTS_OPENED,
	RXC_PORTS_CLOSED,
	RXC_PEERS_RECONNECTED,	/* connections reopened after a failed RDMA op */
	RX_NCOUNTERS
} RxCounter;

typedef struct RxTransportShared
{
	slock_t		mutex;			/* port allocation, worker identity */
	int			worker_pid;		/* 0 when no worker runs */
	Latch	   *worker_latch;
	bool		ready;			/* the data plane is up */
	bool		disabled;		/* the worker gave up until a restart */
	uint32		worker_generation;	/* bumped at every worker start */
	bool		ep_ready[RX_NEPS];	/* this endpoint is open */
	int			ep_sets[RX_NEPS];	/* endpoint sets open of each kind */
	char		provider[RX_NEPS][32];
	char		address[RX_NEPS][128];

	/*
	 * The datagram endpoint's raw name in hex where peers can find it by
	 * that only (verbs' UD, fabric.c), "" otherwise.  Backends report it to
	 * every client as rdma_exchange.datagram_name (GUC_REPORT): a
	 * coordinator reads its members' names off its connections to them
	 * and ships them with each query's fragments (dispatch.c).
	 */
	char		dgram_name[RX_FABRIC_NAME_LEN];

	/*
	 * The reliable endpoint's pool registration, "key:base:length" in hex
	 * (fabric.c, rx_fabric_registration), "" where it has none; reported
	 * and shipped like dgram_name, as rdma_exchange.pool_registration: a
	 * worker checks the key and address a PULL or LEND names against it
	 * before its RDMA operation, which a wrong key would fail and, on
	 * verbs, break the connection with (worker_port.c).
	 */
	char		pool_reg[RX_POOL_REG_LEN];
	char		failure[320];	/* why the data plane is not up */
	char		ep_failure[RX_NEPS][320];	/* why an endpoint is not up */
	uint32		msg_size[RX_NEPS];	/* largest message, header included */
	uint32		prefix_size;	/* provider prefix in front of a message */
	int			recv_reserve[RX_BUF_NCLASSES];	/* left for receiving */

	pg_atomic_uint32 pending;	/* RX_EV_* of all ports, or-ed together */
	pg_atomic_uint32 buffer_waiters;	/* backends waiting for the pool */
	pg_atomic_uint64 counters[RX_NCOUNTERS];

	int			nports;
	RxPort	   *ports;			/* rx_max_ports, right after this struct */
} RxTransportShared;

extern RxTransportShared *rx_shared;

extern RxPort *rx_port_slot(int i);

/* the worker is the only writer of counters: no locked instruction needed */
static inline void
rx_count(RxCounter c, uint64 n)
{
	pg_atomic_write_u64(&rx_shared->counters[c],
						pg_atomic_read_u64(&rx_shared->counters[c]) + n);
}

/* wake the worker after setting events on a port */
extern void rx_port_notify(RxPort *port, uint32 events);

/* worker.c */
extern void rx_worker_register(void);

/*
 * A design runs on one kind of endpoint and takes its buffers from one size
 * class: datagrams in small buffers, reliable connections in large ones.
 */
static inline int
rx_design_ep(int design)
{
	return rx_design_single(design) == RX_DESIGN_SESQ_SR ? RX_EP_DGRAM : RX_EP_RELIABLE;
}

/* the buffer class an endpoint receives into and sends from */
static inline int
rx_ep_class(int e)
{
	return e == RX_EP_DGRAM ? RX_BUF_SMALL : RX_BUF_LARGE;
}

static inline int
rx_design_class(int design)
{
	return rx_ep_class(rx_design_ep(design));
}

/* is any endpoint of the data plane up? */
static inline bool
rx_any_ep_ready(void)
{
	return rx_shared->ep_ready[RX_EP_DGRAM] || rx_shared->ep_ready[RX_EP_RELIABLE];
}

/*
 * header of a buffer and its payload; every buffer keeps room for the
 * datagram provider's prefix (the reliable endpoint has none)
 */
#define RX_BUF_HEADER(buf)	((buf) + rx_shared->prefix_size)
#define RX_BUF_PAYLOAD(buf) ((buf) + rx_shared->prefix_size + RX_WIRE_HEADER_SIZE)

#endif							/* RX_TRANSPORT_SHARED_H */
