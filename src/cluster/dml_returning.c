/*-------------------------------------------------------------------------
 *
 * dml_returning.c
 *	  RETURNING of an UPDATE or DELETE run on every member's part: the
 *	  other members' rows join this member's on their way to the client.
 *
 * A forwarded UPDATE or DELETE (dml_forward.c) runs here as planned, on
 * this member's part, and as SQL on the other members, RETURNING list
 * included (its expressions are built-in ones, like the rest of such a
 * statement, and see this session's settings: remote_xact.c sends the
 * statement context ahead of it).  The members' rows come back in
 * binary form when every column's type is built in (the same type, and
 * the same binary form, on every member): a text form would be written
 * with this session's settings, and with extra_float_digits at 0 or below
 * a float's loses digits (a PL/pgSQL RETURNING ... INTO would then see
 * 0.6 for 0.6000000000000001).  Other types come back as text, read here
 * in this session's text forms, which the members wrote them in.  The
 * rows are kept in a tuplestore of the query's memory.
 *
 * The executor sends this member's rows to the query's DestReceiver while
 * it runs the plan, between the receiver's startup and shutdown: this
 * member's rows cannot be sent before it starts it or after it shuts it
 * down, so the receiver is wrapped for the execution (rx_returning_dest()):
 * when the executor shuts it down, the members after this one run their
 * part (as they do without RETURNING, in member order), and every other
 * member's rows go to the receiver first.  Rows come in member order
 * within the others and after this member's; PostgreSQL promises no order
 * for RETURNING either.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "cluster/dml.h"
#include "cluster/remote.h"
#include "planner/planner.h"

struct RxReturning
{
	TupleDesc	desc;
	RxTextRows *text;			/* the input functions of its columns */
	FmgrInfo   *recv;			/* or, in binary form, their receive
								 * functions (NULL: text) */
	Oid		   *ioparams;
	TupleTableSlot *slot;
	Tuplestorestate *store;
};

/*
 * Whether a value of type has the same binary form on every member: a
 * built-in type, not a pseudo-type (an anonymous record), not an OID of
 * the member's catalog (oid, regclass and the like: in text form the
 * member writes a name, which this member reads as its own OID)
 */
static bool
same_binary_everywhere(Oid type)
{
	Oid			elem = get_element_type(type);

	if (OidIsValid(elem))
		type = elem;
	return type < FirstNormalObjectId && get_typtype(type) != TYPTYPE_PSEUDO &&
		type != OIDOID && !rx_type_names_catalog_entry(type);
}

RxReturning *
rx_returning_begin(TupleDesc desc)
{
	RxReturning *ret = palloc0(sizeof(RxReturning));

	ret->desc = desc;
	ret->text = rx_text_rows(desc);
	ret->slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	ret->store = tuplestore_begin_heap(false, false, work_mem);

	ret->recv = palloc(sizeof(FmgrInfo) * Max(desc->natts, 1));
	ret->ioparams = palloc(sizeof(Oid) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Oid			type = TupleDescAttr(desc, i)->atttypid;
		Oid			func;

		if (!same_binary_everywhere(type))
		{
			ret->recv = NULL;
			break;
		}
		getTypeBinaryInputInfo(type, &func, &ret->ioparams[i]);
		fmgr_info(func, &ret->recv[i]);
	}
	return ret;
}

bool
rx_returning_binary(RxReturning *ret)
{
	return ret->recv != NULL;
}

/* a member's row in binary form into ret's slot */
static TupleTableSlot *
binary_row(RxReturning *ret, PGresult *res, int r)
{
	TupleTableSlot *slot = ret->slot;

	ExecClearTuple(slot);
	for (int i = 0; i < ret->desc->natts; i++)
	{
		StringInfoData buf;
		StringInfo	value = NULL;

		slot->tts_isnull[i] = PQgetisnull(res, r, i);
		if (!slot->tts_isnull[i])
		{
			/*
			 * read in place, as record_recv() reads a field: libpq ends
			 * every value with a '\0', which receive functions may expect
			 */
			buf.data = PQgetvalue(res, r, i);
			buf.len = PQgetlength(res, r, i);
			buf.maxlen = buf.len + 1;
			buf.cursor = 0;
			value = &buf;
		}
		slot->tts_values[i] = ReceiveFunctionCall(&ret->recv[i], value, ret->ioparams[i],
												  TupleDescAttr(ret->desc, i)->atttypmod);
		if (value != NULL && buf.cursor != buf.len)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("a member returned a value of RETURNING column %d in a binary form of another type",
							i + 1)));
	}
	return ExecStoreVirtualTuple(slot);
}

/* the rows of a member's result */
void
rx_returning_add(RxReturning *ret, PGresult *res)
{
	if (PQnfields(res) != ret->desc->natts)
		elog(ERROR, "a member returned %d columns for a RETURNING list of %d",
			 PQnfields(res), ret->desc->natts);
	for (int r = 0; r < PQntuples(res); r++)
		tuplestore_puttupleslot(ret->store,
								ret->recv != NULL && PQnfields(res) > 0 &&
								PQfformat(res, 0) == 1
								? binary_row(ret, res, r)
								: rx_text_row_store(ret->text, res, r, 0, ret->slot));
}

typedef struct ReturningDest
{
	DestReceiver pub;
	DestReceiver *inner;
	RxForward  *forward;
	RxReturning *ret;
	uint64		after;			/* rows the members after this one changed */
} ReturningDest;

static void
returning_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	ReturningDest *d = (ReturningDest *) self;

	d->inner->rStartup(d->inner, operation, typeinfo);
}

static bool
returning_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ReturningDest *d = (ReturningDest *) self;

	return d->inner->receiveSlot(slot, d->inner);
}

/* this member's part is done: the members after it, then their rows */
static void
returning_shutdown(DestReceiver *self)
{
	ReturningDest *d = (ReturningDest *) self;
	TupleTableSlot *slot;

	d->after = rx_dml_forward_run(d->forward, false, d->ret);
	slot = MakeSingleTupleTableSlot(d->ret->desc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(d->ret->store, true, false, slot))
		if (!d->inner->receiveSlot(slot, d->inner))
			break;
	ExecDropSingleTupleTableSlot(slot);
	d->inner->rShutdown(d->inner);
}

static void
returning_destroy(DestReceiver *self)
{
}

DestReceiver *
rx_returning_dest(DestReceiver *inner, RxForward *forward, RxReturning *ret)
{
	ReturningDest *d = palloc0(sizeof(ReturningDest));

	d->pub.receiveSlot = returning_receive;
	d->pub.rStartup = returning_startup;
	d->pub.rShutdown = returning_shutdown;
	d->pub.rDestroy = returning_destroy;
	d->pub.mydest = inner->mydest;
	d->inner = inner;
	d->forward = forward;
	d->ret = ret;
	return (DestReceiver *) d;
}

uint64
rx_returning_after(DestReceiver *dest)
{
	return ((ReturningDest *) dest)->after;
}
