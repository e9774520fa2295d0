/*-------------------------------------------------------------------------
 *
 * loopback_test.c
 *	  rdma_exchange.transport_selftest(): the transport alone, between
 *	  members, without the executor: throughput and exactly-once in-order
 *	  delivery.
 *
 * Every participant calls it at the same time with the same query id, token
 * and address list.  A participant sends nmessages messages of msg_bytes
 * bytes to each member of send_to and then end of stream, and receives
 * from each member of recv_from, checking that every message arrives
 * exactly once, in order, with the content it was sent with.  Several
 * participants may run on one member (as a coordinator's query backend and
 * its own fragment do); they get one port each.  With stop_after > 0 the
 * receiver asks its sources to stop after that many messages.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"

#include "transport/selftest.h"

PG_FUNCTION_INFO_V1(rx_transport_selftest);

#define SELFTEST_HEADER		16

/*
 * The payload after the header: one byte value per message, so that filling
 * and checking run at memset/memcmp speed and the benchmark measures the
 * transport, not the test; a stale or misrouted message still shows.
 */
static inline uint8
pattern(int src, int dst, uint64 index)
{
	return (uint8) (src * 31 + dst * 17 + index * 13 + 1);
}

static int
int_array(ArrayType *a, bool *set, int nmembers)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(a, INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		int			m = DatumGetInt32(elems[i]);

		if (nulls[i] || m < 0 || m >= nmembers)
			elog(ERROR, "member index out of range");
		set[m] = true;
	}
	return n;
}

int
rx_selftest_spec(int64 query_id, int64 token, int self, ArrayType *addrs,
				 const char *design_name, RxPortSpec *spec)
{
	Datum	   *elems;
	bool	   *elemnulls;
	int			nmembers;
	int			design = -1;

	deconstruct_array(addrs, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elemnulls, &nmembers);
	if (nmembers < 1 || nmembers > RX_MAX_MEMBERS || self < 0 || self >= nmembers)
		elog(ERROR, "bad member list");
	for (int d = RX_DESIGN_AUTO + 1; d < RX_NDESIGNS; d++)
		if (strcmp(design_name, rx_design_name(d)) == 0)
			design = d;
	if (design < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown transport design \"%s\"", design_name),
				 errhint("Use sesq_sr, semq_sr, semq_rd, semq_wr, mesq_sr, memq_sr, memq_rd or memq_wr.")));

	memset(spec, 0, sizeof(*spec));
	spec->query_id = (uint64) query_id;
	spec->token = (uint64) token;
	spec->self = self;
	spec->nmembers = nmembers;
	for (int m = 0; m < nmembers; m++)
	{
		/* "host:port", or "host:port name" with the member's datagram name */
		char	   *addr = TextDatumGetCString(elems[m]);
		char	   *space = strchr(addr, ' ');

		if (space != NULL)
		{
			*space = '\0';
			strlcpy(spec->dgram_names[m], space + 1, RX_FABRIC_NAME_LEN);
		}
		strlcpy(spec->fabric_addrs[m], addr, RX_FABRIC_ADDR_LEN);
		snprintf(spec->member_names[m], NAMEDATALEN, "member%d", m);
	}
	return design;
}

Datum
rx_transport_selftest(PG_FUNCTION_ARGS)
{
	int64		query_id = PG_GETARG_INT64(0);
	int64		token = PG_GETARG_INT64(1);
	int			self = PG_GETARG_INT32(2);
	ArrayType  *addrs = PG_GETARG_ARRAYTYPE_P(3);
	int64		nmessages = PG_GETARG_INT64(4);
	int			msg_bytes = PG_GETARG_INT32(5);
	int			exchange = PG_GETARG_INT32(8);
	int64		stop_after = PG_GETARG_INT64(9);
	char	   *design_name = text_to_cstring(PG_GETARG_TEXT_PP(10));
	int			design;
	bool		to[RX_MAX_MEMBERS] = {0};
	bool		from[RX_MAX_MEMBERS] = {0};
	int			nmembers;
	RxPortSpec	spec;
	RxPort	   *port;
	int64		sent[RX_MAX_MEMBERS];
	bool		eos_sent[RX_MAX_MEMBERS];
	int64		expect[RX_MAX_MEMBERS];
	bool		eos_recv[RX_MAX_MEMBERS];
	int64		received = 0;
	int64		bytes = 0;
	int64		errors = 0;
	int64		waits = 0;
	bool		stop_sent = false;
	instr_time	start;
	instr_time	elapsed;
	RxStreamStats st[RX_MAX_MEMBERS];
	int64		retransmits = 0;
	int64		duplicates = 0;
	char	   *expected;
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8];

	design = rx_selftest_spec(query_id, token, self, addrs, design_name, &spec);
	nmembers = spec.nmembers;
	if (int_array(PG_GETARG_ARRAYTYPE_P(6), to, nmembers) > 0)
	{
		spec.send_designs[spec.nsend] = design;
		spec.send_exchange_ids[spec.nsend++] = exchange;
	}
	if (int_array(PG_GETARG_ARRAYTYPE_P(7), from, nmembers) > 0)
	{
		spec.recv_designs[spec.nrecv] = design;
		spec.recv_exchange_ids[spec.nrecv++] = exchange;
	}

	port = rx_port_open(&spec);
	if ((Size) msg_bytes > rx_max_payload(design))
		msg_bytes = rx_max_payload(design);
	if (msg_bytes < SELFTEST_HEADER)
		msg_bytes = SELFTEST_HEADER;
	expected = palloc(msg_bytes);

	for (int m = 0; m < nmembers; m++)
	{
		sent[m] = 0;
		eos_sent[m] = !to[m];
		expect[m] = 0;
		eos_recv[m] = !from[m];
	}

	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		bool		progress = false;
		bool		done = true;
		bool		stopped = rx_stop_requested(port);
		RxMessage	msg;

		for (int d = 0; d < nmembers; d++)
		{
			char	   *buf;
			Size		cap;
			uint32		hdr[4];

			/* a burst per destination, then the next one */
			for (int burst = 0; burst < 16 && !eos_sent[d]; burst++)
			{
				buf = rx_send_get_buffer(port, exchange, d, &cap);
				if (buf == NULL)
					break;
				if (sent[d] >= nmessages || stopped)
				{
					rx_send_submit(port, exchange, d, 0, RX_MSG_EOS);
					eos_sent[d] = true;
					progress = true;
					break;
				}
				hdr[0] = self;
				hdr[1] = d;
				memcpy(&hdr[2], &sent[d], sizeof(int64));
				memcpy(buf, hdr, SELFTEST_HEADER);
				memset(buf + SELFTEST_HEADER, pattern(self, d, sent[d]),
					   msg_bytes - SELFTEST_HEADER);
				rx_send_submit(port, exchange, d, msg_bytes, 0);
				sent[d]++;
				progress = true;
			}
			if (!eos_sent[d])
				done = false;
		}

		while (rx_recv(port, &msg))
		{
			uint32		hdr[4];
			int64		index;
			int			s = msg.source;

			progress = true;
			if (msg.exchange_id != exchange || s < 0 || s >= nmembers ||
				!from[s] || eos_recv[s])
				errors++;
			else if (msg.flags & RX_MSG_EOS)
			{
				if (msg.len != 0 || (expect[s] != nmessages && stop_after == 0))
					errors++;
				eos_recv[s] = true;
			}
			else
			{
				bool		ok = (msg.len == (Size) msg_bytes);

				memcpy(hdr, msg.data, SELFTEST_HEADER);
				memcpy(&index, &hdr[2], sizeof(int64));
				ok = ok && hdr[0] == (uint32) s && hdr[1] == (uint32) self &&
					index == expect[s];
				if (ok)
				{
					memset(expected, pattern(s, self, index), msg.len - SELFTEST_HEADER);
					ok = memcmp(msg.data + SELFTEST_HEADER, expected,
								msg.len - SELFTEST_HEADER) == 0;
				}
				if (!ok)
					errors++;
				expect[s]++;
				received++;
				bytes += msg.len;
			}
			rx_release(port, &msg);
		}
		if (stop_after > 0 && received >= stop_after && !stop_sent)
		{
			rx_request_stop(port, exchange);
			stop_sent = true;
		}
		for (int s = 0; s < nmembers; s++)
			if (!eos_recv[s])
				done = false;
		if (done)
			break;
		if (!progress)
		{
			waits++;
			rx_wait(port, 100, PG_WAIT_EXTENSION);
		}
	}
	rx_exchange_stats(port, exchange, false, st);
	for (int m = 0; m < nmembers; m++)
		duplicates += st[m].duplicates;
	rx_exchange_stats(port, exchange, true, st);
	for (int m = 0; m < nmembers; m++)
		retransmits += st[m].retransmits;
	rx_port_close(port);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(nulls, 0, sizeof(nulls));
	values[0] = Int64GetDatum(received);
	values[1] = Int64GetDatum(bytes);
	values[2] = Float8GetDatum(INSTR_TIME_GET_DOUBLE(elapsed));
	values[3] = Int64GetDatum(errors);
	values[4] = Int64GetDatum(retransmits);
	values[5] = Int64GetDatum(duplicates);
	values[6] = Int64GetDatum(waits);
	values[7] = Int32GetDatum(msg_bytes);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}
