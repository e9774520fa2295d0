/*-------------------------------------------------------------------------
 *
 * fabric.h
 *	  The only door to libfabric: one datagram endpoint of the transport
 *	  worker, its completion queues and address vector.
 *
 * Only the transport worker calls these.  Buffers are identified by their
 * pool buffer id, which is also how completions are reported back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_FABRIC_H
#define RX_FABRIC_H

#include "rdma_exchange.h"

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
	int			bufid;
	Size		len;			/* received bytes, prefix excluded */
	int			err;			/* 0, or a positive libfabric error */
} RxCompletion;

/*
 * Is the provider one this design can run on?  Returns NULL when it is, or
 * a sentence saying why not (for the log and for backends).
 */
extern const char *rx_fabric_unsupported(int provider);

/* open and bind the endpoint at address; ereport(ERROR) on failure */
extern void rx_fabric_open(int provider, const char *address,
						   char *region, Size region_len, int nbuffers,
						   int recv_depth, RxFabricInfo *info);
extern void rx_fabric_close(void);

/* resolve "host:port" of a peer; false and *reason on failure */
extern bool rx_fabric_resolve(const char *address, RxFabricAddr *addr,
							  const char **reason);

/* 0, -FI_EAGAIN when the queue is full, or another negative error */
extern int	rx_fabric_post_recv(int bufid, char *buf, Size len);
extern int	rx_fabric_send(int bufid, char *buf, Size len, RxFabricAddr dest);

/* a small control message, copied; may be dropped when the queue is full */
extern int	rx_fabric_send_small(const void *msg, Size len, RxFabricAddr dest);

/* completions; each call makes progress on the endpoint */
extern int	rx_fabric_poll_recv(RxCompletion *out, int max);
extern int	rx_fabric_poll_send(RxCompletion *out, int max);

/* file descriptor that is readable when the receive CQ has work, or -1 */
extern int	rx_fabric_wait_fd(void);

/* true when it is safe to block on the wait fd */
extern bool rx_fabric_trywait(void);

/* the address a member's worker listens on, split into host and service */
extern bool rx_fabric_split_address(const char *address, char *host,
									Size hostlen, char *service,
									Size servicelen);

#endif							/* RX_FABRIC_H */
