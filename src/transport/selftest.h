/*-------------------------------------------------------------------------
 *
 * selftest.h
 *	  What the self tests of the transport (loopback_test.c) and of the
 *	  exchange's data path (exec/shuffle_selftest.c) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_SELFTEST_H
#define RX_SELFTEST_H

#include "utils/array.h"

#include "transport/transport.h"

/*
 * The port spec of a self test: the members from an array of fabric
 * addresses in member index order, no exchanges yet.  Returns the design
 * named design_name, or raises an error naming the valid ones.
 */
extern int	rx_selftest_spec(int64 query_id, int64 token, int self,
							 ArrayType *addrs, const char *design_name,
							 RxPortSpec *spec);

#endif							/* RX_SELFTEST_H */
