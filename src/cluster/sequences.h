/*-------------------------------------------------------------------------
 *
 * sequences.h
 *	  Cluster-wide sequences of distributed tables (sequences.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_SEQUENCES_H
#define RX_SEQUENCES_H

#include "cluster/metadata.h"

/* interleave the sequences relid's columns own across the members */
extern void rx_interleave_sequences(Oid relid, const RxMember *members,
									int nmembers, int self);

/* undo a dumped member's interleaving before a restored table is distributed */
extern void rx_restore_sequences(Oid relid, int stride);

#endif							/* RX_SEQUENCES_H */
