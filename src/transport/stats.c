/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  SQL-callable statistics of the transport and the buffer pool:
 *	  rdma_exchange.transport_stats() and rdma_exchange.buffer_pool_stats().
 *
 * Counters are cumulative since the server started; read them twice and
 * subtract to see what a query did.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "bufpool/bufpool.h"
#include "transport/shared.h"

PG_FUNCTION_INFO_V1(rx_transport_stats);
PG_FUNCTION_INFO_V1(rx_buffer_pool_stats);

/* in the order of RxCounter */
static const char *const counter_names[RX_NCOUNTERS] = {
	"datagrams_sent",
	"datagrams_received",
	"bytes_sent",
	"bytes_received",
	"data_messages_sent",
	"data_messages_received",
	"control_messages_sent",
	"control_messages_received",
	"local_messages_delivered",
	"retransmissions",
	"duplicates_dropped",
	"out_of_window_dropped",
	"bad_header_dropped",
	"unknown_query_dropped",
	"wrong_token_dropped",
	"closed_port_dropped",
	"early_control_dropped",
	"fault_dropped",
	"fault_duplicated",
	"fault_reordered",
	"send_queue_full",
	"control_send_failed",
	"ports_opened",
	"ports_closed",
	"peers_reconnected",
};

static void
check_shared(void)
{
	if (rx_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("rdma_exchange shared memory is not initialized"),
				 errhint("Add rdma_exchange to shared_preload_libraries and restart the server.")));
}

/* one (name text, value bigint) row */
static void
put_stat(ReturnSetInfo *rsinfo, const char *name, int64 value)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = CStringGetTextDatum(name);
	values[1] = Int64GetDatum(value);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* (name text, value bigint) rows */
Datum
rx_transport_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			open = 0;

	check_shared();
	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < RX_NCOUNTERS; i++)
		put_stat(rsinfo, counter_names[i],
				 (int64) pg_atomic_read_u64(&rx_shared->counters[i]));

	/* gauges */
	for (int i = 0; i < rx_shared->nports; i++)
		if (rx_port_slot(i)->state != RX_PORT_FREE)
			open++;
	put_stat(rsinfo, "ports_open", open);
	put_stat(rsinfo, "worker_pid", rx_shared->worker_pid);
	/* endpoint sets open of each kind: the ME designs spread over these */
	put_stat(rsinfo, "datagram_endpoints", rx_shared->ep_sets[RX_EP_DGRAM]);
	put_stat(rsinfo, "reliable_endpoints", rx_shared->ep_sets[RX_EP_RELIABLE]);

	return (Datum) 0;
}

/*
 * One row per size class of the pool: its size, the buffers in each state,
 * and how it was used since start-up (peak buffers in use, buffers taken
 * from and given back to the free list).
 */
Datum
rx_buffer_pool_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	static const char *const class_names[RX_BUF_NCLASSES] = {"small", "large"};

	check_shared();
	InitMaterializedSRF(fcinfo, 0);
	for (int e = 0; e < RX_NEPS; e++)
	{
		Datum		values[16];
		bool		nulls[16];
		uint64		counts[RX_BUF_NSTATES];
		RxBufClassStats st;
		int			cls = rx_ep_class(e);
		int			i = 0;

		bufpool_count_states(cls, counts, &st);
		memset(nulls, 0, sizeof(nulls));
		values[i++] = CStringGetTextDatum(class_names[cls]);
		values[i++] = Int64GetDatum(st.nbuffers);
		values[i++] = Int32GetDatum((int32) st.buffer_size);
		if (rx_shared->ep_ready[e])
			values[i] = Int32GetDatum((int32) rx_shared->msg_size[e]);
		else
			nulls[i] = true;
		i++;
		values[i++] = Int64GetDatum(counts[RX_BUF_FREE]);
		values[i++] = Int64GetDatum(counts[RX_BUF_POPULATE]);
		values[i++] = Int64GetDatum(counts[RX_BUF_TRANSMIT]);
		values[i++] = Int64GetDatum(counts[RX_BUF_RECV_POSTED]);
		values[i++] = Int64GetDatum(counts[RX_BUF_LENT]);
		values[i++] = Int64GetDatum(counts[RX_BUF_WAIT]);
		values[i++] = Int64GetDatum(counts[RX_BUF_CONSUME]);
		values[i++] = Int64GetDatum(counts[RX_BUF_QUARANTINE]);
		values[i++] = Int64GetDatum(st.reserved);
		values[i++] = Int64GetDatum(st.nbuffers - st.low_water);
		values[i++] = Int64GetDatum((int64) st.grows);
		values[i++] = Int64GetDatum((int64) st.shrinks);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
