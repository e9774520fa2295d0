/*-------------------------------------------------------------------------
 *
 * cluster_snapshot.h
 *	  The read barrier and the cluster snapshot of distributed queries
 *	  (see cluster_snapshot.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_CLUSTER_SNAPSHOT_H
#define RX_CLUSTER_SNAPSHOT_H

#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/snapshot.h"

#include "cluster/metadata.h"

/*
 * coordinator: the cluster snapshot of the query running in estate (of
 * the transaction at REPEATABLE READ and above), taken at the first call;
 * one String per member, for the fragment message
 */
extern List *rx_cluster_snapshot(EState *estate);

/*
 * coordinator: a round of gathers by query (exec/receive_round.c) that
 * takes the query's cluster snapshot with its fragments: the first
 * fragment of a member's round says RX_SNAPSHOT_TAKE for that member, the
 * others RX_SNAPSHOT_HELD; after the round the query's snapshot of other
 * members is RX_SNAPSHOT_GONE (a message with it fails there)
 */
#define RX_SNAPSHOT_TAKE "take"
#define RX_SNAPSHOT_HELD "held"
#define RX_SNAPSHOT_GONE "gone"
extern const char *rx_cluster_snapshot_round_begin(EState *estate);
extern void rx_cluster_snapshot_round_end(bool ok);

/*
 * coordinator at REPEATABLE READ and above: member's part of the
 * transaction's cluster snapshot (taken now if not yet), exported there
 * for SET TRANSACTION SNAPSHOT
 */
extern const char *rx_cluster_snapshot_export(const RxMember *member);

/* a two-phase committer: this member's barrier, until the transaction ends */
extern void rx_barrier_commit_local(void);

/* member: the snapshot a fragment reads with, from its message */
extern Snapshot rx_cluster_snapshot_restore(const char *text, const char *member);
extern Snapshot rx_barrier_snapshot(void);

extern void rx_cluster_snapshot_init(void);

#endif							/* RX_CLUSTER_SNAPSHOT_H */
