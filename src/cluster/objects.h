/*-------------------------------------------------------------------------
 *
 * objects.h
 *	  Roles and types a new member needs (objects.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_OBJECTS_H
#define RX_OBJECTS_H

#include "libpq-fe.h"

/* create this database's roles, memberships and user types over conn */
extern void rx_copy_cluster_objects(PGconn *conn, const char *name);

#endif							/* RX_OBJECTS_H */
