/*-------------------------------------------------------------------------
 *
 * admin.h
 *	  Helpers shared by the SQL API functions (admin.c, distribute.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_ADMIN_H
#define RX_ADMIN_H

#include "executor/spi.h"

#include "libpq-fe.h"
#include "cluster/metadata.h"

/*
 * Bracket the work of an API function: rdma_exchange.enable is off in
 * between, so the function's own queries are never planned as
 * distributed ones.  Abort undoes it too.
 */
extern int	rx_admin_begin(void);
extern void rx_admin_end(int nestlevel);

/* local queries through SPI; results palloc'd in the caller's context */
extern char ***rx_spi_strings(const char *sql, int *nrows);
extern void rx_spi_exec(const char *sql);
extern char ***rx_catalog_spi(const char *sql, int *nrows);
extern void rx_catalog_exec(const char *sql);
/* as rx_catalog_exec(), sql with parameters, planned once into *plan */
extern void rx_catalog_exec_plan(SPIPlanPtr *plan, const char *sql, int nargs,
								 Oid *types, Datum *values);

/* the installed version of the extension in this database */
extern char *rx_local_extension_version(void);
extern const char *rx_extension_version(bool refresh);

/* error unless member's rdma_exchange.node lists exactly members */
extern void rx_check_member_catalog(PGconn *conn, const RxMember *member,
									const RxMember *members, int nmembers);

/* distribute.c: give a new member every reference table */
extern void rx_replicate_reference_tables(const RxMember *target,
										  const RxMember *members,
										  int nmembers);

/* distribute.c: distribute a local table; returns the rows it sent away */
extern uint64 rx_distribute_table(Oid relid, RxDistMethod method,
								  const char *column);

/* distribute.c: true while the extension itself writes dist_table */
extern bool rx_recording_distribution;

#endif							/* RX_ADMIN_H */
