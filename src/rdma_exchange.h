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

/* rdma_exchange.fabric_provider */
typedef enum RxProvider
{
	RX_PROVIDER_AUTO,
	RX_PROVIDER_VERBS,
	RX_PROVIDER_UDP,
	RX_PROVIDER_TCP,
	RX_PROVIDER_SHM
} RxProvider;

extern bool rx_enable;
extern int	rx_fabric_provider;
extern char *rx_fabric_address;
extern int	rx_buffer_pool_size;	/* in kB */
extern int	rx_buffer_size;			/* bytes of one pool buffer */
extern int	rx_max_ports;
extern int	rx_credit_window;		/* messages in flight per stream */
extern int	rx_retransmit_timeout;	/* ms */
extern char *rx_cluster_key;
extern int	rx_connect_timeout;		/* s, libpq connections to members */

/* fault injection for tests, applied by the transport worker on receive */
extern int	rx_fault_drop_percent;
extern int	rx_fault_duplicate_percent;
extern int	rx_fault_reorder_percent;

extern int	rx_peer_timeout;		/* ms without acknowledgement: member gone */

#endif							/* RDMA_EXCHANGE_H */
