/*-------------------------------------------------------------------------
 *
 * lookup.h
 *	  The rows of a fallback gather, hashed by lookup columns (lookup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_LOOKUP_H
#define RX_LOOKUP_H

#include "nodes/execnodes.h"

#include "exec/exchange.h"

typedef struct RxLookup RxLookup;

/* NULL when the RECEIVE has no lookup keys */
extern RxLookup *rx_lookup_create(RxReceiveInfo *info, List *param_exprs,
								  PlanState *ps);
extern void rx_lookup_add(RxLookup *lk, TupleTableSlot *slot);
extern void rx_lookup_done(RxLookup *lk);
extern void rx_lookup_restart(RxLookup *lk);
extern void rx_lookup_reset(RxLookup *lk);
extern TupleTableSlot *rx_lookup_next(RxLookup *lk, ExprContext *econtext,
									  TupleTableSlot *slot);

#endif							/* RX_LOOKUP_H */
