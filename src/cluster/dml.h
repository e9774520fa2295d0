/*-------------------------------------------------------------------------
 *
 * dml.h
 *	  Direct DML on distributed and reference tables (see dml.c for what
 *	  is routed, what is forwarded and what is refused).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DML_H
#define RX_DML_H

/* trigger names, as create_distributed_table() installs them */
/* the routing triggers all start with this (ddl.c keeps users off them) */
#define RX_TRIGGER_PREFIX	"zzz_rdma_exchange_"
#define RX_TRIGGER_ROUTE	"zzz_rdma_exchange_route"
#define RX_TRIGGER_FLUSH	"zzz_rdma_exchange_flush"
#define RX_TRIGGER_CHANGE	"zzz_rdma_exchange_change"
#define RX_TRIGGER_TRUNCATE "zzz_rdma_exchange_truncate"

/*
 * UPDATE and DELETE forwarded to every member as SQL (dml_forward.c).
 * rx_dml_forward_sql: from the planner hook, the statement as SQL (and the
 * bound parameters it uses) when every member can run it on its own part,
 * else NIL (this member then plans it as a local statement as well);
 * rx_dml_forward_attach: that onto the finished plan;
 * rx_dml_forward_of: what a plan carries, or NIL;
 * rx_dml_forward_begin: for one execution of such a plan, the statement
 * with its bound parameters in text form (NULL when the plan carries none);
 * rx_dml_forward_run: runs it in this transaction on the other members
 * with a lower member index than this one (below_self) or a higher one,
 * returns the rows they changed (their RETURNING rows into returning).
 */
#include "libpq-fe.h"
#include "nodes/bitmapset.h"
#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "tcop/dest.h"

extern List *rx_dml_forward_sql(Query *parse);
extern void rx_dml_forward_attach(PlannedStmt *stmt, List *forward);
extern List *rx_dml_forward_of(PlannedStmt *stmt);

/* a statement for the members with its bound parameters in text form */
typedef struct RxForward
{
	const char *sql;
	int			nparams;
	Oid		   *types;			/* InvalidOid: the member infers it */
	const char **values;		/* NULL: SQL NULL */
	int			owner;			/* the only member with rows to change, or -1 */
} RxForward;

/*
 * The other members' RETURNING rows of such a statement (dml_returning.c):
 * rx_returning_begin: a store for rows of the statement's RETURNING list
 * (desc); rx_returning_binary: whether members send them in binary form;
 * rx_returning_add: the rows of a member's result, into it;
 * rx_returning_dest: the query's DestReceiver, wrapped so that at its
 * shutdown the members after this one run their part and every member's
 * rows go to it; rx_returning_after: the rows those members changed.
 */
typedef struct RxReturning RxReturning;

/*
 * dml_subqueries.c: the WITH form of a job queue's take as a subquery
 * (rx_with_as_subquery, in the planner hook); the values of a forwarded
 * statement's subqueries computed first, added to its bound parameters
 * (rx_dml_forward_params, at executor start; NULLs without compute)
 */
extern Query *rx_with_as_subquery(Query *parse);
extern ParamListInfo rx_dml_forward_params(PlannedStmt *stmt, ParamListInfo params,
										   bool compute);
extern RxForward *rx_dml_forward_begin(PlannedStmt *stmt, ParamListInfo params);
extern Expr *rx_owner_key(Query *parse, Oid relid);
extern uint64 rx_dml_forward_run(RxForward *forward, bool below_self,
								 RxReturning *returning);

extern RxReturning *rx_returning_begin(TupleDesc desc);
extern bool rx_returning_binary(RxReturning *ret);
extern void rx_returning_add(RxReturning *ret, PGresult *res);
extern DestReceiver *rx_returning_dest(DestReceiver *inner, RxForward *forward,
									   RxReturning *ret);
extern uint64 rx_returning_after(DestReceiver *dest);

/*
 * Shared with row_locks.c.  rx_forward_prepare: sql with the values of the
 * bound parameters it uses (used: their ids, ascending);
 * rx_deparse_query: a query as SQL with every name qualified;
 * rx_statement_shape: what a statement reads.
 */
extern RxForward *rx_forward_prepare(const char *sql, List *used,
									 ParamListInfo params);
extern char *rx_deparse_query(Query *query);

/* an EXPLAIN is planning its query (dml_forward.c's hook) */
extern bool rx_explaining(void);

typedef struct RxStatementShape
{
	int			hash_tables;	/* hash-distributed range table entries */
	int			local_tables;	/* neither: they exist on one member */
	bool		row_security;	/* policies apply to a table */
	bool		ctes;			/* WITH */
	bool		local_routines; /* user-defined functions, WHERE CURRENT OF */
	Bitmapset  *params;			/* ids of the bound parameters used */
} RxStatementShape;

extern void rx_statement_shape(Node *node, RxStatementShape *shape);

/* user triggers on the table: they exist on this member only */
extern bool rx_has_user_triggers(Oid relid);

/*
 * INSERT ... RETURNING and ON CONFLICT into a distributed table, each row
 * on its owner (dml_insert.c).  rx_insert_route_sql: from the planner
 * hook, what the plan carries (attached like rx_dml_forward_sql's), or
 * NIL; rx_insert_routed: a plan (its ModifyTable) carries it;
 * rx_insert_route_start: after ExecutorStart, the execution routes its
 * rows; rx_insert_routing_here: a row owned here runs as its statement.
 */
struct QueryDesc;
extern List *rx_insert_route_sql(Query *parse);
extern bool rx_insert_routed(Plan *plan);
extern void rx_insert_route_start(struct QueryDesc *queryDesc);
extern bool rx_insert_routing_here(void);

/* EXPLAIN ANALYZE of forwarded statements shows the other members' rows */
extern void rx_dml_forward_init(void);

/* called from rx_metadata_init(): ExecutorStart hook, callbacks */
extern void rx_dml_init(void);

#endif							/* RX_DML_H */
