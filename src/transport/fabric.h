/*-------------------------------------------------------------------------
 *
 * fabric.h
 *	  The only door to libfabric: the transport worker's endpoints (for
 *	  datagrams, and reliable with RDMA operations), their completion
 *	  queues and address vectors.
 *
 * Only the transport worker calls these.  Buffers are identified by their
 * pool buffer id, which is also how completions are reported back.
 *
 * Each kind of endpoint comes in up to RX_MAX_EP_SETS sets: set 0 is bound
 * to the member's fabric address and receives everything addressed to the
 * member; sets 1.. (the ME designs: several endpoints, each serving a share
 * of the backends) send, read and write from an address of their own, in
 * set 0's domain, so they share its address vector and the pool's one
 * registration.  An endpoint is named by its index RX_EP_INDEX(kind, set);
 * the index of set 0 is the kind itself.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_FABRIC_H
#define RX_FABRIC_H

#include "rdma_exchange.h"

/* the kinds of endpoint the worker opens */
#define RX_EP_DGRAM		0		/* FI_EP_DGRAM, FI_MSG */
#define RX_EP_RELIABLE	1		/* FI_EP_RDM, FI_MSG and FI_RMA */
#define RX_NEPS			2

/* endpoint sets: set 0 receives, every set sends (see above) */
#define RX_MAX_EP_SETS	8
#define RX_MAX_ENDPOINTS	(RX_NEPS * RX_MAX_EP_SETS)
#define RX_EP_INDEX(kind, set)	((kind) + RX_NEPS * (set))
#define RX_EP_KIND(e)	((e) % RX_NEPS)

typedef uint64 RxFabricAddr;

/* what the opened endpoint offers */
typedef struct RxFabricInfo
{
	char		provider[32];	/* core provider name, e.g. "udp" */
	char		address[128];	/* bound address, printable */
	Size		max_msg_size;	/* largest datagram, prefix excluded */
	Size		prefix_size;	/* bytes reserved at the start of a buffer */
	int			recv_depth;		/* receives that can be posted at once */
	bool		has_wait_fd;	/* the receive CQ can be waited on */
	bool		registered;		/* the pool was registered (FI_MR_LOCAL) */
} RxFabricInfo;

typedef struct RxCompletion
{
	int			bufid;			/* -1: a remote write with immediate data */
	int			member;			/* a write of ours: the member written to;
								 * -1 otherwise */
	Size		len;			/* received bytes, prefix excluded */
	int			err;			/* 0, or a positive libfabric error */
	bool		read;			/* an RDMA Read of ours completed */
	bool		has_imm;
	uint64		imm;			/* the immediate data of a remote write */
} RxCompletion;

/*
 * Is the provider one this design can run on?  Returns NULL when it is, or
 * a sentence saying why not (for the log and for backends).
 */
extern const char *rx_fabric_unsupported(int e, int provider);

/*
 * Open and bind endpoint e at address (shm: a name made of its port);
 * ereport(ERROR) on failure.
 */
extern void rx_fabric_open(int e, int provider, const char *address,
						   char *region, Size region_len, int nbuffers,
						   int recv_depth, RxFabricInfo *info);

/*
 * Open endpoint e of set 1 or later next to the open set 0 of its kind,
 * on an address of its own on the same host; ereport(ERROR) on failure.
 */
extern void rx_fabric_open_set(int e, int nbuffers, RxFabricInfo *info);
extern void rx_fabric_close(int e);
extern bool rx_fabric_is_open(int e);

/*
 * The raw name of endpoint e (set 0) in hex, when its peers can only find
 * it by that name (verbs' UD: GID, QP number, P_Key; members publish it,
 * see shared.h); false, and "", when they find it by host:port.
 */
extern bool rx_fabric_name(int e, char *hex, Size hexlen);
extern bool rx_fabric_needs_names(int e);

/* our pool's registration as peers name it: key, base address, length */
extern bool rx_fabric_registration(int e, uint64 *key, uint64 *base,
								   uint64 *len);

/*
 * resolve "host:port" of a peer's endpoint of kind e (its set 0); the
 * address serves every set of that kind; false and *reason on failure.
 * Where the endpoint finds peers by raw name only (rx_fabric_name),
 * address is the peer's name as that gave it.
 */
extern bool rx_fabric_resolve(int e, const char *address, RxFabricAddr *addr,
							  const char **reason);

/* take a peer out of kind e's address vector: closes ofi_rxm's connection */
extern void rx_fabric_forget(int e, RxFabricAddr addr);

/* 0, -FI_EAGAIN when the queue is full, or another negative error */
extern int	rx_fabric_post_recv(int e, int bufid, char *buf, Size len);
extern int	rx_fabric_send(int e, int bufid, char *buf, Size len,
						   RxFabricAddr dest);

/* RDMA on the reliable endpoint: how peers name a buffer of our pool */
extern void rx_fabric_remote_ref(int e, const char *buf, uint64 *raddr,
								 uint64 *key);
/* read len bytes of a peer's buffer into ours; completes on the send CQ */
extern int	rx_fabric_read(int e, int bufid, char *buf, Size len,
						   RxFabricAddr src, uint64 raddr, uint64 key);
/*
 * write ours into member's buffer at dest; the peer's receive CQ reports
 * imm, our send CQ the member (a broadcast buffer goes to several)
 */
extern int	rx_fabric_write_imm(int e, int bufid, int member, char *buf,
								Size len, RxFabricAddr dest, uint64 raddr,
								uint64 key, uint64 imm);

/* a completion's error (RxCompletion.err) in words */
extern const char *rx_fabric_strerror(int err);

/* a small control message, copied; may be dropped when the queue is full */
extern int	rx_fabric_send_small(int e, const void *msg, Size len,
								 RxFabricAddr dest);

/* completions; each call makes progress on the endpoint */
extern int	rx_fabric_poll_recv(int e, RxCompletion *out, int max);
extern int	rx_fabric_poll_send(int e, RxCompletion *out, int max);

/* file descriptor that is readable when the receive CQ has work, or -1 */
extern int	rx_fabric_wait_fd(int e);

/* true when it is safe to block on the wait fds of every open endpoint */
extern bool rx_fabric_trywait(void);

/* the address a member's worker listens on, split into host and service */
extern bool rx_fabric_split_address(const char *address, char *host,
									Size hostlen, char *service,
									Size servicelen);

#endif							/* RX_FABRIC_H */
