/*-------------------------------------------------------------------------
 *
 * dml.h
 *	  Direct DML on distributed and reference tables (see dml.c for what
 *	  is routed, what is forwarded and what is refused).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DML_H
#define RX_DML_H

/* trigger names, as create_distributed_table() installs them */
#define RX_TRIGGER_ROUTE	"zzz_rdma_exchange_route"
#define RX_TRIGGER_FLUSH	"zzz_rdma_exchange_flush"
#define RX_TRIGGER_CHANGE	"zzz_rdma_exchange_change"
#define RX_TRIGGER_TRUNCATE "zzz_rdma_exchange_truncate"

/* called from rx_metadata_init(): ExecutorStart hook, callbacks */
extern void rx_dml_init(void);

#endif							/* RX_DML_H */
