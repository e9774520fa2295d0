/*-------------------------------------------------------------------------
 *
 * shuffle_selftest.c
 *	  rdma_exchange.shuffle_selftest(): the exchange operator's data path
 *	  alone, for bench/shuffle: rows of a local table repartitioned or
 *	  broadcast among members and received, without the planner.
 *
 * Every participant calls it at the same time with the same query id, token
 * and address list, each on its own member.  A participant scans its local
 * table, sends every row through the same hub as SHUFFLE does (framing into
 * pool buffers, one transport design for the exchange) either to the member
 * the hash of its first column names (rows for itself stay, as SHUFFLE
 * keeps them) or to every other member, then end of stream, while it
 * receives every other member's rows the way RECEIVE does (per-source
 * queues, read every 64 rows sent).  It reports the rows and bytes it
 * moved and the time from its first row to its last received row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "funcapi.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "exec/hub.h"
#include "transport/selftest.h"

PG_FUNCTION_INFO_V1(rx_shuffle_selftest);

#define SELFTEST_EXCHANGE	1

Datum
rx_shuffle_selftest(PG_FUNCTION_ARGS)
{
	int64		query_id = PG_GETARG_INT64(0);
	int64		token = PG_GETARG_INT64(1);
	int			self = PG_GETARG_INT32(2);
	ArrayType  *addrs = PG_GETARG_ARRAYTYPE_P(3);
	Oid			relid = PG_GETARG_OID(4);
	char	   *mode = text_to_cstring(PG_GETARG_TEXT_PP(5));
	char	   *design_name = text_to_cstring(PG_GETARG_TEXT_PP(6));
	bool		broadcast;
	int			design;
	int			nmembers;
	RxPortSpec	spec;
	RxPort	   *port;
	RxHub	   *hub;
	const char *names[RX_MAX_MEMBERS];
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	TupleTableSlot *recv_slot;
	TypeCacheEntry *tc;
	RxHubCounters sent[RX_MAX_MEMBERS];
	RxStreamStats st[RX_MAX_MEMBERS];
	int64		rows_sent = 0;
	int64		rows_kept = 0;
	int64		rows_received = 0;
	int64		nscanned = 0;
	int64		bytes_sent = 0;
	int64		peak = 0;
	instr_time	start;
	instr_time	elapsed;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {0};

	if (strcmp(mode, "repartition") == 0)
		broadcast = false;
	else if (strcmp(mode, "broadcast") == 0)
		broadcast = true;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown shuffle mode \"%s\"", mode),
				 errhint("Use repartition or broadcast.")));
	design = rx_selftest_spec(query_id, token, self, addrs, design_name, &spec);
	nmembers = spec.nmembers;
	for (int m = 0; m < nmembers; m++)
		names[m] = spec.member_names[m];
	spec.nsend = spec.nrecv = 1;
	spec.send_exchange_ids[0] = spec.recv_exchange_ids[0] = SELFTEST_EXCHANGE;
	spec.send_designs[0] = spec.recv_designs[0] = design;

	rel = relation_open(relid, AccessShareLock);
	tc = lookup_type_cache(TupleDescAttr(RelationGetDescr(rel), 0)->atttypid,
						   TYPECACHE_HASH_PROC_FINFO);
	if (!OidIsValid(tc->hash_proc))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("the first column of \"%s\" has no hash function",
						RelationGetRelationName(rel))));

	port = rx_port_open(&spec);
	hub = rx_hub_create(port, self, nmembers, names);
	rx_hub_register_receive(hub, SELFTEST_EXCHANGE, RelationGetDescr(rel));
	slot = table_slot_create(rel, NULL);
	recv_slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);

	INSTR_TIME_SET_CURRENT(start);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		key = slot_getattr(slot, 1, &isnull);
		bool		free_tuple;
		MinimalTuple tuple;

		CHECK_FOR_INTERRUPTS();
		tuple = ExecFetchSlotMinimalTuple(slot, &free_tuple);
		if (broadcast)
		{
			rx_hub_send_tuple(hub, SELFTEST_EXCHANGE, RX_BROADCAST, tuple);
			rows_kept++;
		}
		else
		{
			uint32		h = isnull ? 0 :
				DatumGetUInt32(FunctionCall1Coll(&tc->hash_proc_finfo,
												 TupleDescAttr(RelationGetDescr(rel), 0)->attcollation,
												 key));
			int			d = (int) (h % (uint32) nmembers);

			if (d == self)
				rows_kept++;
			else
				rx_hub_send_tuple(hub, SELFTEST_EXCHANGE, d, tuple);
		}
		if (free_tuple)
			pfree(tuple);

		/*
		 * Consume what arrived meanwhile, as a RECEIVE above its SHUFFLE
		 * does: otherwise the queues would hold (and spill) every row
		 */
		if ((++nscanned & 63) == 0 && rx_hub_pump(hub))
			while (rx_hub_next(hub, SELFTEST_EXCHANGE, -1, recv_slot))
				rows_received++;
	}
	table_endscan(scan);
	if (broadcast)
		rx_hub_send_eos(hub, SELFTEST_EXCHANGE, RX_BROADCAST);
	else
		for (int d = 0; d < nmembers; d++)
			if (d != self)
				rx_hub_send_eos(hub, SELFTEST_EXCHANGE, d);

	/* what the others send: the senders drained it into queues meanwhile */
	for (;;)
	{
		while (rx_hub_next(hub, SELFTEST_EXCHANGE, -1, recv_slot))
			rows_received++;
		if (rx_hub_all_done(hub, SELFTEST_EXCHANGE, false))
			break;
		if (!rx_hub_pump(hub))
			rx_hub_wait(hub, SELFTEST_EXCHANGE, false, 100);
		CHECK_FOR_INTERRUPTS();
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);

	rx_hub_counters(hub, SELFTEST_EXCHANGE, true, sent);
	rx_exchange_stats(port, SELFTEST_EXCHANGE, true, st);
	for (int m = 0; m < nmembers; m++)
	{
		rows_sent += sent[m].rows;
		bytes_sent += sent[m].bytes;
		peak += st[m].peak;
	}
	rx_exchange_stats(port, SELFTEST_EXCHANGE, false, st);
	for (int m = 0; m < nmembers; m++)
		peak += st[m].peak;

	ExecDropSingleTupleTableSlot(slot);
	ExecDropSingleTupleTableSlot(recv_slot);
	rx_hub_free(hub);
	rx_port_close(port);
	relation_close(rel, AccessShareLock);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(rows_sent);
	values[1] = Int64GetDatum(rows_kept);
	values[2] = Int64GetDatum(rows_received);
	values[3] = Int64GetDatum(bytes_sent);
	values[4] = Float8GetDatum(INSTR_TIME_GET_DOUBLE(elapsed));
	values[5] = Int64GetDatum(peak);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}
