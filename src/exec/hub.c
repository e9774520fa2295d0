/*-------------------------------------------------------------------------
 *
 * hub.c
 *	  Tuple framing, reassembly and per-source queues of one port.
 *
 * See hub.h for the stream format and the no-deadlock rule.  The hub lives
 * in the memory context that was current when it was created (the query's
 * executor context), so an error frees it with the query; the transport
 * closes the port at transaction end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

#include "exec/hub.h"

/* reassembly and queue of one (exchange, source) stream */
typedef struct HubSource
{
	Tuplestorestate *queue;
	int64		written;
	int64		read;
	bool		eos;

	/* tuple being reassembled */
	char		lenbuf[4];
	int			lenhave;
	char	   *tuple;
	uint32		tuplelen;
	uint32		tuplehave;

	RxHubCounters counters;
} HubSource;

/* outgoing stream of one (exchange, destination) */
typedef struct HubSend
{
	char	   *buf;			/* pool buffer being filled, or NULL */
	Size		cap;
	Size		used;
	bool		eos_sent;
	bool		midtuple;		/* buf ends inside a tuple */
	RxHubCounters counters;
} HubSend;

typedef struct HubExchange
{
	int			exchange_id;
	bool		receiving;
	TupleTableSlot *slot;		/* minimal slot to move tuples into queues */
	HubSource	src[RX_MAX_MEMBERS];
	HubSend		dst[RX_MAX_MEMBERS];
	HubSend		bcast;			/* RX_BROADCAST: one stream to all others */
	int			next_source;	/* round robin for unordered reads */
} HubExchange;

struct RxHub
{
	RxPort	   *port;
	int			self;
	int			nmembers;
	const char *const *member_names;
	MemoryContext cxt;
	int			nexchanges;
	HubExchange *exchanges[RX_MAX_EXCHANGES];
};

RxHub *
rx_hub_create(RxPort *port, int self, int nmembers,
			  const char *const *member_names)
{
	RxHub	   *hub = palloc0(sizeof(RxHub));

	hub->port = port;
	hub->self = self;
	hub->nmembers = nmembers;
	hub->member_names = member_names;
	hub->cxt = CurrentMemoryContext;
	return hub;
}

/*
 * The end of the hub's queues: their temporary files go now, not at
 * transaction end with a leak warning.  Not needed after an error: the
 * resource owner closes them then.
 */
void
rx_hub_free(RxHub *hub)
{
	for (int i = 0; i < hub->nexchanges; i++)
	{
		HubExchange *x = hub->exchanges[i];

		if (!x->receiving)
			continue;
		for (int s = 0; s < hub->nmembers; s++)
			tuplestore_end(x->src[s].queue);
		ExecDropSingleTupleTableSlot(x->slot);
		x->receiving = false;
	}
}

int
rx_hub_self(RxHub *hub)
{
	return hub->self;
}

int
rx_hub_nmembers(RxHub *hub)
{
	return hub->nmembers;
}

RxPort *
rx_hub_port(RxHub *hub)
{
	return hub->port;
}

const char *
rx_hub_member_name(RxHub *hub, int member)
{
	return hub->member_names[member];
}

static HubExchange *
hub_exchange(RxHub *hub, int exchange_id, bool create)
{
	HubExchange *x;

	for (int i = 0; i < hub->nexchanges; i++)
		if (hub->exchanges[i]->exchange_id == exchange_id)
			return hub->exchanges[i];
	if (!create)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("message for exchange %d which this fragment does not have",
						exchange_id)));
	if (hub->nexchanges >= RX_MAX_EXCHANGES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a plan fragment may take part in at most %d exchanges",
						RX_MAX_EXCHANGES)));
	x = MemoryContextAllocZero(hub->cxt, sizeof(HubExchange));
	x->exchange_id = exchange_id;
	hub->exchanges[hub->nexchanges++] = x;
	return x;
}

void
rx_hub_register_receive(RxHub *hub, int exchange_id, TupleDesc tupdesc)
{
	HubExchange *x = hub_exchange(hub, exchange_id, true);
	MemoryContext old;

	if (x->receiving)
		return;
	old = MemoryContextSwitchTo(hub->cxt);
	x->receiving = true;
	x->slot = MakeSingleTupleTableSlot(CreateTupleDescCopy(tupdesc),
									   &TTSOpsMinimalTuple);
	for (int i = 0; i < hub->nmembers; i++)
	{
		/* eflags 0: rows already read can be trimmed away */
		x->src[i].queue = tuplestore_begin_heap(false, false, work_mem);
		tuplestore_set_eflags(x->src[i].queue, 0);
	}
	MemoryContextSwitchTo(old);
}

/* ---------------------------------------------------------------------
 * Sending
 * ---------------------------------------------------------------------
 */

static inline HubSend *
hub_send_of(HubExchange *x, int dest)
{
	return dest == RX_BROADCAST ? &x->bcast : &x->dst[dest];
}

/*
 * Count what went to dest; a broadcast went to every other member, and is
 * counted for each of them, as if sent to each
 */
#define FOR_EACH_DEST(hub, dest, d) \
	for (int d = ((dest) == RX_BROADCAST ? 0 : (dest)); \
		 d < ((dest) == RX_BROADCAST ? (hub)->nmembers : (dest) + 1); d++) \
		if ((dest) != RX_BROADCAST || d != (hub)->self)

/* submit the stream's current buffer, if any */
static void
hub_submit(RxHub *hub, HubExchange *x, int dest, uint16 flags)
{
	HubSend    *s = hub_send_of(x, dest);

	if (s->midtuple)
		flags |= RX_MSG_FRAGMENT;
	rx_send_submit(hub->port, x->exchange_id, dest, s->used, flags);
	FOR_EACH_DEST(hub, dest, d)
	{
		x->dst[d].counters.msgs++;
		x->dst[d].counters.bytes += s->used;
	}
	s->buf = NULL;
	s->cap = s->used = 0;
}

/*
 * Get a buffer for the stream, or return false when there is no credit or
 * no free buffer right now.
 */
static bool
hub_try_buffer(RxHub *hub, HubExchange *x, int dest)
{
	HubSend    *s = hub_send_of(x, dest);

	if (s->buf != NULL)
		return true;
	s->buf = rx_send_get_buffer(hub->port, x->exchange_id, dest, &s->cap);
	s->used = 0;
	return s->buf != NULL;
}

/*
 * Block until the stream has a buffer, draining incoming data meanwhile.
 * False when the consumers asked to stop: nobody wants the rows any more.
 */
static bool
hub_get_buffer(RxHub *hub, HubExchange *x, int dest)
{
	instr_time	start;
	instr_time	elapsed;
	bool		waited = false;

	while (!hub_try_buffer(hub, x, dest))
	{
		if (rx_stop_requested(hub->port))
			return false;
		if (!waited)
		{
			INSTR_TIME_SET_CURRENT(start);
			waited = true;
		}
		if (rx_hub_pump(hub))
			continue;
		rx_hub_wait(hub, x->exchange_id, true, 100);
	}
	if (waited)
	{
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		FOR_EACH_DEST(hub, dest, d)
			x->dst[d].counters.wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	}
	return true;
}

static void
hub_write(RxHub *hub, HubExchange *x, int dest, const char *data, Size len,
		  bool last_part)
{
	HubSend    *s = hub_send_of(x, dest);

	while (len > 0)
	{
		Size		n;

		if (!hub_get_buffer(hub, x, dest))
			return;
		n = Min(len, s->cap - s->used);
		memcpy(s->buf + s->used, data, n);
		s->used += n;
		data += n;
		len -= n;
		s->midtuple = (len > 0 || !last_part);
		if (s->used == s->cap)
			hub_submit(hub, x, dest, 0);
	}
}

void
rx_hub_send_tuple(RxHub *hub, int exchange_id, int dest, MinimalTuple tuple)
{
	static const char zeros[ALIGNOF_INT] = {0};
	HubExchange *x = hub_exchange(hub, exchange_id, true);
	uint32		len = tuple->t_len;
	uint32		pad = INTALIGN(len) - len;

	Assert(dest == RX_BROADCAST || (dest >= 0 && dest < hub->nmembers));
	hub_write(hub, x, dest, (const char *) &len, sizeof(len), false);
	hub_write(hub, x, dest, (const char *) tuple, len, pad == 0);
	if (pad > 0)
		hub_write(hub, x, dest, zeros, pad, true);
	FOR_EACH_DEST(hub, dest, d)
		x->dst[d].counters.rows++;
}

void
rx_hub_send_eos(RxHub *hub, int exchange_id, int dest)
{
	HubExchange *x = hub_exchange(hub, exchange_id, true);
	HubSend    *s = hub_send_of(x, dest);

	if (s->eos_sent)
		return;
	if (!hub_get_buffer(hub, x, dest))
		return;

	s->midtuple = false;
	hub_submit(hub, x, dest, RX_MSG_EOS);
	FOR_EACH_DEST(hub, dest, d)
		x->dst[d].eos_sent = true;
	s->eos_sent = true;
}

/* submit partly filled buffers so that no data waits behind our wait */
static void
hub_flush_partial(RxHub *hub)
{
	for (int i = 0; i < hub->nexchanges; i++)
	{
		HubExchange *x = hub->exchanges[i];

		for (int d = 0; d < hub->nmembers; d++)
			if (x->dst[d].buf != NULL && x->dst[d].used > 0)
				hub_submit(hub, x, d, 0);
		if (x->bcast.buf != NULL && x->bcast.used > 0)
			hub_submit(hub, x, RX_BROADCAST, 0);
	}
}

bool
rx_hub_stopped(RxHub *hub)
{
	return rx_stop_requested(hub->port);
}

/* ---------------------------------------------------------------------
 * Receiving
 * ---------------------------------------------------------------------
 */

/* a complete tuple goes into the queue, which keeps a copy of it */
static void
hub_enqueue(HubExchange *x, HubSource *src, MinimalTuple tup)
{
	ExecStoreMinimalTuple(tup, x->slot, false);
	tuplestore_puttupleslot(src->queue, x->slot);
	ExecClearTuple(x->slot);
	src->written++;
	src->counters.rows++;
}

/* a tuple's length as it arrived must make sense before we allocate it */
static void
hub_check_length(RxHub *hub, HubExchange *x, HubSource *src, uint32 tuplelen)
{
	if (tuplelen >= SizeofMinimalTupleHeader && INTALIGN(tuplelen) <= MaxAllocSize)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("malformed tuple of %u bytes in exchange %d from member \"%s\"",
					tuplelen, x->exchange_id, hub->member_names[src - x->src])));
}

/*
 * Consume the payload of one message: complete tuples go to the queue.  A
 * tuple that lies whole in the message goes there straight from the
 * message (the queue copies it anyway); one split between messages is
 * reassembled in memory of its own first.
 */
static void
hub_reassemble(RxHub *hub, HubExchange *x, HubSource *src,
			   const char *data, Size len)
{
	while (len > 0)
	{
		Size		n;

		if (src->lenhave == 0 && len >= 4 && (uintptr_t) data % ALIGNOF_INT == 0)
		{
			uint32		tuplelen = *(const uint32 *) data;

			hub_check_length(hub, x, src, tuplelen);
			if (len - 4 >= INTALIGN(tuplelen))
			{
				hub_enqueue(x, src, (MinimalTuple) (data + 4));
				data += 4 + INTALIGN(tuplelen);
				len -= 4 + INTALIGN(tuplelen);
				continue;
			}
		}
		if (src->lenhave < 4)
		{
			n = Min(len, (Size) (4 - src->lenhave));
			memcpy(src->lenbuf + src->lenhave, data, n);
			src->lenhave += n;
			data += n;
			len -= n;
			if (src->lenhave < 4)
				break;
			memcpy(&src->tuplelen, src->lenbuf, 4);
			hub_check_length(hub, x, src, src->tuplelen);
			src->tuple = MemoryContextAlloc(hub->cxt, INTALIGN(src->tuplelen));
			src->tuplehave = 0;
			continue;
		}
		n = Min(len, (Size) (INTALIGN(src->tuplelen) - src->tuplehave));
		memcpy(src->tuple + src->tuplehave, data, n);
		src->tuplehave += n;
		data += n;
		len -= n;
		if (src->tuplehave == INTALIGN(src->tuplelen))
		{
			hub_enqueue(x, src, (MinimalTuple) src->tuple);
			pfree(src->tuple);
			src->tuple = NULL;
			src->lenhave = 0;
		}
	}
}

bool
rx_hub_pump(RxHub *hub)
{
	RxMessage	msg;
	bool		any = false;

	while (rx_recv(hub->port, &msg))
	{
		HubExchange *x = hub_exchange(hub, msg.exchange_id, false);
		HubSource  *src;

		if (!x->receiving || msg.source < 0 || msg.source >= hub->nmembers)
		{
			rx_release(hub->port, &msg);
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unexpected message for exchange %d from member index %d",
							msg.exchange_id, msg.source)));
		}
		src = &x->src[msg.source];
		PG_TRY();
		{
			if (src->eos)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("message after end of stream in exchange %d from member \"%s\"",
								x->exchange_id, hub->member_names[msg.source])));
			hub_reassemble(hub, x, src, msg.data, msg.len);
		}
		PG_CATCH();
		{
			rx_release(hub->port, &msg);
			PG_RE_THROW();
		}
		PG_END_TRY();
		src->counters.msgs++;
		src->counters.bytes += msg.len;
		if (msg.flags & RX_MSG_EOS)
		{
			if (src->lenhave != 0)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("stream of exchange %d from member \"%s\" ended inside a tuple",
								x->exchange_id, hub->member_names[msg.source])));
			src->eos = true;
		}
		rx_release(hub->port, &msg);
		any = true;
	}
	return any;
}

bool
rx_hub_has_tuple(RxHub *hub, int exchange_id, int source)
{
	HubExchange *x = hub_exchange(hub, exchange_id, false);

	return x->src[source].read < x->src[source].written;
}

static bool
hub_pop(HubExchange *x, HubSource *src, TupleTableSlot *slot)
{
	if (src->read >= src->written)
		return false;
	/* never read past the last written row: the read pointer would stick at EOF */
	if (!tuplestore_gettupleslot(src->queue, true, true, slot))
		elog(ERROR, "exchange %d queue lost a row", x->exchange_id);
	src->read++;
	if ((src->read & 1023) == 0)
		tuplestore_trim(src->queue);
	return true;
}

/*
 * Next queued tuple of the exchange, from the given source or (source < 0)
 * from any, round robin.  Does not wait.
 */
bool
rx_hub_next(RxHub *hub, int exchange_id, int source, TupleTableSlot *slot)
{
	HubExchange *x = hub_exchange(hub, exchange_id, false);

	if (source >= 0)
		return hub_pop(x, &x->src[source], slot);
	for (int i = 0; i < hub->nmembers; i++)
	{
		int			s = (x->next_source + i) % hub->nmembers;

		if (hub_pop(x, &x->src[s], slot))
		{
			x->next_source = (s + 1) % hub->nmembers;
			return true;
		}
	}
	return false;
}

bool
rx_hub_source_done(RxHub *hub, int exchange_id, int source)
{
	HubExchange *x = hub_exchange(hub, exchange_id, false);

	return x->src[source].eos && x->src[source].read >= x->src[source].written;
}

/*
 * Every remote source has ended and every row of it was read.  Inside a
 * fragment this member's own rows never enter the queues (the SHUFFLE hands
 * them over directly), so self_is_remote is false there; the gather RECEIVE
 * on the coordinator gets its own member's rows through the transport.
 */
bool
rx_hub_all_done(RxHub *hub, int exchange_id, bool self_is_remote)
{
	for (int s = 0; s < hub->nmembers; s++)
	{
		if (s == hub->self && !self_is_remote)
			continue;
		if (!rx_hub_source_done(hub, exchange_id, s))
			return false;
	}
	return true;
}

/*
 * Wait for the worker.  Before sleeping, flush partial buffers, so no peer
 * waits for rows we hold back.
 */
void
rx_hub_wait(RxHub *hub, int exchange_id, bool sending, long timeout_ms)
{
	hub_flush_partial(hub);
	rx_wait(hub->port, timeout_ms, PG_WAIT_EXTENSION);
}

void
rx_hub_counters(RxHub *hub, int exchange_id, bool send,
				RxHubCounters *per_member)
{
	HubExchange *x = hub_exchange(hub, exchange_id, true);

	for (int m = 0; m < hub->nmembers; m++)
		per_member[m] = send ? x->dst[m].counters : x->src[m].counters;
}
