/*-------------------------------------------------------------------------
 *
 * fragment_msg.h
 *	  The signed message that carries a plan fragment to a member.
 *
 * Text: "<hex HMAC-SHA256 of body under rdma_exchange.cluster_key>:<body>",
 * body = nodeToString() of a List.  The member parses the body only after
 * the signature checked out (DESIGN 3.6): readfuncs are not a parser for
 * untrusted input.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_FRAGMENT_MSG_H
#define RX_FRAGMENT_MSG_H

#include "datatype/timestamp.h"
#include "nodes/plannodes.h"

#include "rdma_exchange.h"

typedef struct RxFragmentMsg
{
	uint64		query_id;
	uint64		token;
	int			coordinator;	/* member index of the coordinator */
	int			nmembers;
	char		fabric_addrs[RX_MAX_MEMBERS][RX_FABRIC_ADDR_LEN];
	char		member_names[RX_MAX_MEMBERS][NAMEDATALEN];
	/* datagram endpoints' raw names, "" where found by address (shared.h) */
	char		dgram_names[RX_MAX_MEMBERS][RX_FABRIC_NAME_LEN];
	char		pool_regs[RX_MAX_MEMBERS][RX_POOL_REG_LEN];
	int			instrument_options;
	PlannedStmt *stmt;			/* planTree: the SHUFFLE to the coordinator */
	char	   *sql;			/* or, instead of stmt, a directly dispatched
								 * query's text, planned by the member
								 * (planner/direct_sql.c, sql_plans.c) */
	List	   *relnames;		/* per range table entry: qualified name or NULL */
	List	   *rolenames;		/* per range table entry: checkAsUser name or NULL */
	List	   *colnames;		/* per range table entry: List of column names
								 * by attno ("" dropped), or NULL (colmap.c) */
	List	   *index_oids;		/* coordinator's index OIDs (as Integer of the Oid) */
	List	   *index_names;	/* their qualified names */
	List	   *param_ids;		/* PARAM_EXEC ids shipped */
	List	   *param_values;	/* Const of each */
	List	   *param_sets;		/* or NIL; a batch of keyed lookups: a List
								 * of Consts like param_values per lookup,
								 * the plan run once for each (fragment.c) */
	List	   *extern_values;	/* bound parameters $1..$n: Const of each */
	List	   *designs;		/* exchange id, RxDesign, ... (int list) */
	List	   *guc_names;		/* settings the fragment runs with */
	List	   *guc_values;
	TimestampTz xact_start;		/* the coordinator's transaction and */
	TimestampTz stmt_start;		/* statement start: now() and friends */
	List	   *snapshots;		/* per member: the cluster snapshot it reads
								 * with (String, cluster_snapshot.c) */

	/* what binds the fragment to its query (fragment_guard.c) */
	char	   *rolename;		/* the querying role: only it may run it */
	uint64		nonce;			/* runs once on each member */
	TimestampTz expires;		/* not after this */
	int			coordinator_pid;	/* the coordinator's backend, for messages */

	/*
	 * The coordinator's statement, clipped: members report their fragment
	 * under its text and query id (stmt->queryId) in pg_stat_activity and
	 * pg_stat_statements.
	 */
	char	   *query_text;
} RxFragmentMsg;

extern char *rx_fragment_encode(RxFragmentMsg *msg);
extern RxFragmentMsg *rx_fragment_decode(const char *text);

#endif							/* RX_FRAGMENT_MSG_H */
