/*-------------------------------------------------------------------------
 *
 * hashing.h
 *	  From a value to the member that owns it.
 *
 * Table distribution and shuffles use the same two steps, so co-location
 * is real: the value is hashed with the standard hash support function of
 * a hash operator family (the family of the join operator for shuffles,
 * the column type's default family for tables; cross-type members of one
 * family hash equal values alike), and the 32-bit hash is mapped to a
 * member index by rx_member_for_hash().  NULL goes to member 0.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_HASHING_H
#define RX_HASHING_H

#include "fmgr.h"

/* fixed mapping from hash to member index */
static inline int
rx_member_for_hash(uint32 hash, int nmembers)
{
	return (int) (hash % (uint32) nmembers);
}

/* hash support function (HASHSTANDARD_PROC) of opfamily for type */
extern Oid	rx_hash_proc_for(Oid opfamily, Oid type);

/* default hash opfamily of a type, error if none */
extern Oid	rx_default_hash_opfamily(Oid type);

/* same, InvalidOid instead of an error */
extern Oid	rx_default_hash_opfamily_or_none(Oid type);

/* member index of a value, given the fmgr info of its hash function */
extern int	rx_member_for_datum(FmgrInfo *hashfn, Oid collation, Datum value,
								bool isnull, int nmembers);

/* a value of type routes like the column's values (same hash family) */
extern bool rx_hashes_alike(Oid opfamily, Oid coltype, Oid type);

/* member index of a value (of type) of a hash-distributed table's key */
extern int	rx_member_of_key(Oid relid, Oid type, Datum value, bool isnull,
							 int nmembers);

#endif							/* RX_HASHING_H */
