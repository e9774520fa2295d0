/*-------------------------------------------------------------------------
 *
 * colmap.h
 *	  Columns of a plan fragment by name (colmap.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_COLMAP_H
#define RX_COLMAP_H

#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

/* coordinator: the relation's column names by attno, dropped ones as "" */
extern List *rx_column_names(Oid relid);

/* member: move a scan's and a range table entry's columns to ours */
extern void rx_map_scan_columns(Scan *scan, RangeTblEntry *rte, List *names,
								const char *member);
extern void rx_map_rte_columns(RangeTblEntry *rte, List *names,
							   const char *member);

#endif							/* RX_COLMAP_H */
