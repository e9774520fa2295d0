/*-------------------------------------------------------------------------
 *
 * metadata.h
 *	  The cluster catalog as the planner, executor and dispatcher see it.
 *
 * Members are numbered by their *member index*: the position in the list
 * of members ordered by node_id.  The index is what hashing maps rows to
 * and what the transport calls a member; it is the same on every member
 * because the catalog is.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_METADATA_H
#define RX_METADATA_H

#include "access/attnum.h"

#include "rdma_exchange.h"

typedef struct RxMember
{
	int32		node_id;
	char		host[256];
	int32		port;
	char		fabric_addr[RX_FABRIC_ADDR_LEN];
	uint64		system_identifier;
	char		name[NAMEDATALEN];	/* "host:port", for messages */
} RxMember;

typedef enum RxDistMethod
{
	RX_DIST_NONE = 0,			/* an ordinary local table */
	RX_DIST_HASH = 'h',
	RX_DIST_REFERENCE = 'r'
} RxDistMethod;

typedef struct RxTableDist
{
	RxDistMethod method;
	AttrNumber	distcol;		/* hash: distribution column */
	Oid			distcol_type;
	Oid			hash_opfamily;	/* default hash opfamily of the column type */
} RxTableDist;

/* false when the extension is not installed in this database */
extern bool rx_extension_loaded(void);

/* all members in member-index order; count returned, array palloc'd */
extern int	rx_get_members(RxMember **members);

/* this server's member index, or -1 when it is not a member */
extern int	rx_self_member_index(void);

/* distribution of a relation; RX_DIST_NONE for plain tables */
extern void rx_table_distribution(Oid relid, RxTableDist *dist);

/* called from _PG_init */
extern void rx_metadata_init(void);

/* OIDs of rdma_exchange.node and rdma_exchange.dist_table, or InvalidOid */
extern Oid	rx_node_catalog_relid(void);
extern Oid	rx_dist_catalog_relid(void);

/* the same, without catalog access, for relcache callbacks */
extern Oid	rx_node_catalog_relid_cached(void);
extern Oid	rx_dist_catalog_relid_cached(void);

/* name of the distribution column of a hash-distributed table, else NULL */
extern const char *rx_table_dist_column(Oid relid);

/* schema.name of a relation, quoted for SQL */
extern char *rx_qualified_relname(Oid relid);

/*
 * Member sessions.  Every libpq connection that one member opens to
 * another (remote.c) sets application_name to RX_APPLICATION_NAME; the
 * fragments of distributed queries, rows forwarded by DML and the commands
 * of rdma_exchange.run_on_all_nodes() all run in such sessions.  In a
 * member session DML on a distributed table applies to this member's part
 * only and is never forwarded again (dml.c); the planner should plan it
 * locally (those sessions also set rdma_exchange.enable = off, except the
 * fragment connections of dispatch.c).  rx_push_member_session() makes the
 * current backend act as one while run_on_all_nodes() runs its command
 * locally.
 */
#define RX_APPLICATION_NAME "rdma_exchange"
extern bool rx_in_member_session(void);
extern void rx_push_member_session(void);
extern void rx_pop_member_session(void);

#endif							/* RX_METADATA_H */
