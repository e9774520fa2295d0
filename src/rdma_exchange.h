/*-------------------------------------------------------------------------
 *
 * rdma_exchange.h
 *	  Settings and limits shared by every layer of rdma_exchange.
 *
 * The variables are defined and registered in rdma_exchange.c; each layer
 * reads them through this header so that a reader finds every setting in
 * one place.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RDMA_EXCHANGE_H
#define RDMA_EXCHANGE_H

#include "postgres.h"

#define RX_EXTENSION_NAME	"rdma_exchange"
#define RX_EXTENSION_VERSION "0.1"
#define RX_SCHEMA_NAME		"rdma_exchange"

/* Hard limits, sized into shared memory. */
#define RX_MAX_MEMBERS		16	/* members of one cluster */
#define RX_MAX_EXCHANGES	32	/* exchanges one port (backend) takes part in */
#define RX_FABRIC_ADDR_LEN	64	/* "host:port" */
#define RX_FABRIC_NAME_LEN	161	/* an endpoint's raw name in hex (80 bytes) */
#define RX_POOL_REG_LEN		52	/* "key:base:length", each 16 hex digits */

/* rdma_exchange.fabric_provider */
typedef enum RxProvider
{
	RX_PROVIDER_AUTO,
	RX_PROVIDER_VERBS,
	RX_PROVIDER_UDP,
	RX_PROVIDER_TCP,
	RX_PROVIDER_SHM
} RxProvider;

/*
 * rdma_exchange.transport_design: the endpoint designs of Liu, Yin and
 * Blanas, named as in the paper.  SE: one endpoint set per instance shared
 * by every backend; ME: rdma_exchange.transport_endpoints sets, each
 * serving a share of the backends; SQ/MQ: one queue pair for all peers
 * (datagrams) or one per peer (reliable connections).  Each ME design is
 * its SE design on more endpoints, in the same order.
 */
typedef enum RxDesign
{
	RX_DESIGN_AUTO = 0,			/* the setting only: chosen per exchange */
	RX_DESIGN_SESQ_SR,			/* Send/Receive over datagrams (UD) */
	RX_DESIGN_SEMQ_SR,			/* Send/Receive over reliable connections */
	RX_DESIGN_SEMQ_RD,			/* RDMA Read, valid and free rings */
	RX_DESIGN_SEMQ_WR,			/* RDMA Write with immediate data */
	RX_DESIGN_MESQ_SR,
	RX_DESIGN_MEMQ_SR,
	RX_DESIGN_MEMQ_RD,
	RX_DESIGN_MEMQ_WR,
	RX_NDESIGNS
} RxDesign;

/* does the design use several endpoint sets? */
static inline bool
rx_design_multi(int design)
{
	return design >= RX_DESIGN_MESQ_SR;
}

/* the single-endpoint design a design works like */
static inline int
rx_design_single(int design)
{
	return rx_design_multi(design) ?
		design - (RX_DESIGN_MESQ_SR - RX_DESIGN_SESQ_SR) : design;
}

extern bool rx_enable;
extern int	rx_fabric_provider;
extern char *rx_fabric_address;
extern int	rx_buffer_pool_size;	/* in kB */
extern int	rx_buffer_size;			/* bytes of one small pool buffer */
extern int	rx_large_buffer_pool_size;	/* in kB */
extern int	rx_large_buffer_size;	/* bytes of one large pool buffer */
extern int	rx_max_ports;
extern int	rx_credit_window;		/* messages in flight per datagram stream */
extern int	rx_reliable_provider;
extern int	rx_transport_design;	/* RxDesign */
extern int	rx_transport_endpoints; /* endpoint sets of the ME designs */
extern int	rx_reliable_window;		/* messages in flight per reliable stream */
extern int	rx_credit_writeback;	/* reliable: credit every k receives */
extern int	rx_buffer_depth;		/* 0: adaptive pool; N: N per stream */
extern int	rx_retransmit_timeout;	/* ms */
extern char *rx_cluster_key;
extern int	rx_connect_timeout;		/* s, libpq connections to members */

/* fault injection for tests, applied by the transport worker on receive */
extern int	rx_fault_drop_percent;
extern int	rx_fault_duplicate_percent;
extern int	rx_fault_reorder_percent;
/* ... and on the keys of the buffers it offers for RDMA (fabric.c) */
extern bool rx_fault_wrong_rdma_key;

extern bool rx_consistent_reads;	/* cluster snapshots for queries */
extern int	rx_max_member_sessions;	/* conn_budget.c; -1 derived, 0 none */
extern int	rx_member_idle_timeout;	/* ms, idle_session_timeout there */
extern int	rx_peer_timeout;		/* ms without acknowledgement: member gone */

#endif							/* RDMA_EXCHANGE_H */
