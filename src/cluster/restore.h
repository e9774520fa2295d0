/*-------------------------------------------------------------------------
 *
 * restore.h
 *	  Restoring a dump into a cluster (restore.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_RESTORE_H
#define RX_RESTORE_H

#include "cluster/metadata.h"

/*
 * While finish_restore() runs: what a restored table is about to become
 * (RX_DIST_NONE for any other table, and at any other time).
 */
extern RxDistMethod rx_restore_pending_method(Oid relid);

#endif							/* RX_RESTORE_H */
