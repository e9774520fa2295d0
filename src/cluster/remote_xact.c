/*-------------------------------------------------------------------------
 *
 * remote_xact.c
 *	  Remote transactions tied to the local one (see remote_xact.h).
 *
 * A row forwarded to its owner or a catalog row pushed to a member must
 * exist there exactly when the local transaction commits, including when
 * a local subtransaction rolls back (a PL/pgSQL exception block, a
 * savepoint): otherwise a failure would leave rows on a member that the
 * local transaction never committed.  So each connection carries a remote
 * transaction opened at first use and a remote savepoint for each local
 * subtransaction level that used it, released or rolled back by the
 * subtransaction callbacks, and the remote COMMIT is sent at local
 * pre-commit.  The commands that open them travel with the first command
 * that needs them (one round trip: a libpq pipeline, or one simple query
 * ahead of a COPY).  On local abort the connection is closed: the member rolls
 * back when its client goes away, and nothing here can hang an abort.
 * How they end (commit, abort, subtransactions) is remote_xact_end.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cluster/cluster_snapshot.h"
#include "cluster/conn_budget.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/remote_xact_int.h"
#include "cluster/settings.h"

/*
 * A command queued for a member's transaction (rx_xact_defer_params()):
 * sent with the next command that goes there, at the latest at commit.
 */
typedef struct DeferredCmd
{
	int			level;			/* subtransaction level it belongs to */
	bool		savepoint;		/* opens the remote savepoint of level */
	const char *sql;
	int			nparams;		/* -1: a plain command of the prelude */
	char	  **values;
	const char *context;		/* what it does, for its error */
	XactStmt   *preparing;		/* a Parse for it went ahead of it */
} DeferredCmd;

/* a member's queue is sent, and its answers read, at this length */
#define MAX_DEFERRED 512

XactConn	rx_xconns[MAX_XACT_CONNS];
int			rx_nxconns = 0;		/* slots ever used: those past it are free
								 * (slots are taken from the start), so that
								 * every transaction end need not go through
								 * all of them */

/* a member whose remote transaction was lost; commit must fail */
char		rx_doomed_member[NAMEDATALEN];

/* see rx_xact_changed_before(): the command of the first change */
bool		rx_xact_changed = false;
static CommandId xact_changed_cid;

void
rx_xconn_forget(XactConn *xc)
{
	if (xc->conn != NULL)
	{
		rx_cancel(xc->conn);
		rx_disconnect(xc->conn);
	}
	if (xc->copy_table)
		pfree(xc->copy_table);
	list_free_deep(xc->stmts);
	if (xc->preparing)
		pfree(xc->preparing);
	rx_xconn_forget_inflight(xc);
	rx_xconn_forget_context(xc);
	memset(xc, 0, sizeof(XactConn));
}

/* the member's transaction ended, or a savepoint took its settings along */
void
rx_xconn_forget_context(XactConn *xc)
{
	if (xc->context)
		pfree(xc->context);
	xc->context = NULL;
}

/*
 * This statement's context (settings, transaction start: settings.c) ahead
 * of the command sent to xc, unless the member's transaction took the same
 * already: it holds it (SET LOCAL) until it ends or a savepoint rolls back.
 * Sent with every statement, its text was parsed there every time.
 */
static List *
add_statement_context(XactConn *xc, List *prelude)
{
	char	   *sql = rx_statement_context_sql();

	if (xc->context != NULL && strcmp(xc->context, sql) == 0)
	{
		pfree(sql);
		return prelude;
	}
	rx_xconn_forget_context(xc);
	xc->context = MemoryContextStrdup(TopMemoryContext, sql);
	return lappend(prelude, sql);
}

void
rx_xconn_doom(XactConn *xc)
{
	if (rx_doomed_member[0] == '\0')
		strlcpy(rx_doomed_member, xc->name, sizeof(rx_doomed_member));
	rx_xconn_forget(xc);
}

/* ---------------------------------------------------------------------
 * Getting a connection
 * ---------------------------------------------------------------------
 */

void
rx_xconn_end_copy(XactConn *xc)
{
	PGresult   *res;
	char		context[NAMEDATALEN * 2 + 64];

	if (!OidIsValid(xc->copy_relid))
		return;
	snprintf(context, sizeof(context), "forwarding rows of table %s",
			 xc->copy_table ? xc->copy_table : "?");
	xc->copy_relid = InvalidOid;
	rx_put_copy_end(xc->conn, xc->name, NULL);
	while ((res = rx_get_result(xc->conn, xc->name)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			PG_TRY();
			{
				rx_report_remote_error(ERROR, xc->conn, res, xc->name, context);
			}
			PG_FINALLY();
			{
				PQclear(res);
			}
			PG_END_TRY();
		}
		PQclear(res);
	}
}

/* commands as one simple-protocol query */
static char *
joined(List *cmds)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	foreach(lc, cmds)
		appendStringInfo(&sql, "%s%s", sql.len > 0 ? "; " : "", (char *) lfirst(lc));
	return sql.data;
}

/* ---------------------------------------------------------------------
 * Deferred commands
 *
 * A change of a reference table's row is applied on the other members by
 * its primary key (dml.c).  Waiting for each member's answer before going
 * on would cost a round trip per row and statement: an UPDATE of 5,000
 * rows made 5,000, and each statement of a short transaction (pgbench's
 * TPC-B-like updates of tellers and branches) one more.  So they are
 * queued per member and go down the connection's pipeline ahead of the
 * next command sent there, at the latest with the PREPARE (or COMMIT) at
 * commit or with the RELEASE of a savepoint, and after MAX_DEFERRED of
 * them; the first member's at the end of their statement (dml.c says
 * why, rx_xact_flush()).  Their answers are read
 * before that command's.  The copies are the same on every member and
 * writers of a reference table are ordered before they lock a row
 * (ref_order.c), so a queued change rarely fails; when it does (no row
 * matched there: the copies differ), it fails on the member, which skips
 * the rest of the pipeline, and the error is raised where its queue was
 * sent (a later statement, RELEASE SAVEPOINT or COMMIT): the transaction
 * cannot commit.  A rolled back subtransaction drops what it queued: the
 * member never sees it.
 * ---------------------------------------------------------------------
 */

/* the statement prepared as sql, in stmts (XactStmts) */
static XactStmt *
find_stmt(List *stmts, const char *sql)
{
	ListCell   *lc;

	foreach(lc, stmts)
		if (strcmp(((XactStmt *) lfirst(lc))->sql, sql) == 0)
			return lfirst(lc);
	return NULL;
}

/*
 * Sends xc's queue down its pipeline (the caller entered pipeline mode and
 * syncs after); read_deferred() reads the answers.  A statement sent
 * there for the first time is prepared on the way.
 */
static bool
send_deferred(XactConn *xc)
{
	List	   *parsing = NIL;
	ListCell   *lc;
	bool		ok = true;

	Assert(xc->inflight == NIL);
	foreach(lc, xc->deferred)
	{
		DeferredCmd *cmd = lfirst(lc);
		XactStmt   *stmt;
		char		name[32];

		if (cmd->nparams < 0)
		{
			ok = ok && PQsendQueryParams(xc->conn, cmd->sql, 0, NULL, NULL,
										 NULL, NULL, 0);
			continue;
		}
		stmt = find_stmt(xc->stmts, cmd->sql);
		if (stmt == NULL)
			stmt = find_stmt(parsing, cmd->sql);
		if (stmt == NULL)
		{
			stmt = MemoryContextAlloc(TopMemoryContext,
									  offsetof(XactStmt, sql) + strlen(cmd->sql) + 1);
			stmt->id = ++xc->nstmts;
			strcpy(stmt->sql, cmd->sql);
			parsing = lappend(parsing, stmt);
			cmd->preparing = stmt;
			snprintf(name, sizeof(name), "rx_x%d", stmt->id);
			ok = ok && PQsendPrepare(xc->conn, name, cmd->sql, cmd->nparams, NULL);
		}
		snprintf(name, sizeof(name), "rx_x%d", stmt->id);
		ok = ok && PQsendQueryPrepared(xc->conn, name, cmd->nparams,
									   (const char *const *) cmd->values,
									   NULL, NULL, 0);
	}
	list_free(parsing);
	xc->inflight = xc->deferred;
	xc->deferred = NIL;
	return ok;
}

/* the answers of the queue sent, each checked; then its memory goes */
static void
read_deferred(XactConn *xc)
{
	ListCell   *lc;

	foreach(lc, xc->inflight)
	{
		DeferredCmd *cmd = lfirst(lc);
		PGresult   *res;

		if (cmd->preparing != NULL)
		{
			MemoryContext old;

			res = rx_get_result(xc->conn, xc->name);
			rx_raise_if_failed(xc->conn, res, xc->name,
							   "preparing a statement there");
			PQclear(res);
			res = rx_get_result(xc->conn, xc->name);
			Assert(res == NULL);
			old = MemoryContextSwitchTo(TopMemoryContext);
			xc->stmts = lappend(xc->stmts, cmd->preparing);
			MemoryContextSwitchTo(old);
			cmd->preparing = NULL;
		}
		res = rx_get_result(xc->conn, xc->name);
		/* a row, of a pipeline's first command after a single-row query */
		while (res != NULL && PQresultStatus(res) == PGRES_SINGLE_TUPLE)
		{
			PQclear(res);
			res = rx_get_result(xc->conn, xc->name);
		}
		rx_raise_if_failed(xc->conn, res, xc->name, cmd->context);
		PQclear(res);
		res = rx_get_result(xc->conn, xc->name);
		Assert(res == NULL);
	}
	xc->inflight = NIL;
	MemoryContextReset(xc->cxt);
}

/* a queue sent whose answers will not be read (the pipeline was ended) */
void
rx_xconn_forget_inflight(XactConn *xc)
{
	ListCell   *lc;

	foreach(lc, xc->inflight)
	{
		DeferredCmd *cmd = lfirst(lc);

		if (cmd->preparing != NULL)
			pfree(cmd->preparing);
	}
	xc->inflight = NIL;
}

/* the queue sent by rx_xconn_flush_start(): its answers, checked */
static void
flush_finish(XactConn *xc)
{
	read_deferred(xc);
	if (!rx_xconn_pipeline_end(xc,
							   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   CLEANUP_TIMEOUT_MS)))
		rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
							   "could not end a pipeline");
}

/*
 * The queue sent now, its answers read by the next rx_xconn_flush_with():
 * at commit, the members prepared after the first run their queues while
 * the first one prepares.
 */
void
rx_xconn_flush_start(XactConn *xc)
{
	Assert(xc->inflight == NIL);
	if (xc->deferred == NIL)
		return;
	if (PQenterPipelineMode(xc->conn) != 1 || !send_deferred(xc) ||
		PQpipelineSync(xc->conn) != 1)
		rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
							   "could not send the changes of this transaction");
}

/* the queue, then cmds, in one round trip; the answers checked */
void
rx_xconn_flush_with(XactConn *xc, List *cmds)
{
	MemoryContext old;
	ListCell   *lc;

	if (xc->inflight != NIL)
		flush_finish(xc);
	if (xc->deferred == NIL)
	{
		if (cmds != NIL)
			rx_exec_command(xc->conn, xc->name, joined(cmds));
		return;
	}
	old = MemoryContextSwitchTo(xc->cxt);
	foreach(lc, cmds)
	{
		DeferredCmd *cmd = palloc0(sizeof(DeferredCmd));

		cmd->level = GetCurrentTransactionNestLevel();
		cmd->sql = pstrdup(lfirst(lc));
		cmd->nparams = -1;
		xc->deferred = lappend(xc->deferred, cmd);
	}
	MemoryContextSwitchTo(old);
	rx_xconn_flush_start(xc);
	flush_finish(xc);
}

void
rx_xconn_flush(XactConn *xc)
{
	rx_xconn_flush_with(xc, NIL);
}

/*
 * A rolled back subtransaction of this level: what it queued is dropped,
 * with the savepoints it would have opened there.
 */
void
rx_xconn_drop_deferred(XactConn *xc, int level)
{
	int			keep = 0;
	ListCell   *lc;

	/* levels only grow along the queue: the kept ones are its start */
	foreach(lc, xc->deferred)
	{
		DeferredCmd *cmd = lfirst(lc);

		if (cmd->level < level)
			keep++;
		else if (cmd->savepoint && xc->xact_depth >= cmd->level)
			xc->xact_depth = cmd->level - 1;	/* never opened there */
	}
	if (keep < list_length(xc->deferred))
	{
		xc->deferred = list_truncate(xc->deferred, keep);
		xc->lock_timeout = 0;
		rx_xconn_forget_context(xc);
	}
}

/*
 * The connection to member for this transaction, with the remote
 * transaction open there at this subtransaction level.  With prelude, the
 * commands that open it (BEGIN, SET LOCAL, SAVEPOINT) are returned there
 * for the caller to send ahead of its own; without, they are run here.
 */
static XactConn *
get_xconn(const RxMember *member, char **failure, bool change, List **prelude)
{
	Oid			userid = GetUserId();
	XactConn   *xc = NULL;
	XactConn   *freeslot = NULL;
	int			level = GetCurrentTransactionNestLevel();
	List	   *cmds = NIL;

	if (rx_doomed_member[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_IN_FAILED_SQL_TRANSACTION),
				 errmsg("the remote transaction on member \"%s\" was lost",
						rx_doomed_member),
				 errhint("Roll back this transaction and retry.")));

	for (int i = 0; i < MAX_XACT_CONNS; i++)
	{
		if (!rx_xconns[i].in_use)
		{
			if (freeslot == NULL)
				freeslot = &rx_xconns[i];
			continue;
		}
		if (rx_xconns[i].userid == userid &&
			strcmp(rx_xconns[i].name, member->name) == 0)
		{
			xc = &rx_xconns[i];
			break;
		}
	}

	/* went bad between transactions (e.g. the member restarted) */
	if (xc != NULL && xc->xact_depth == 0 && !rx_idle_connection_ok(xc->conn))
	{
		rx_xconn_forget(xc);
		freeslot = xc;
		xc = NULL;
	}

	if (xc == NULL)
	{
		PGconn	   *conn;

		if (freeslot == NULL)
		{
			/* make room: drop a connection idle between transactions */
			for (int i = 0; i < MAX_XACT_CONNS && freeslot == NULL; i++)
				if (rx_xconns[i].xact_depth == 0)
				{
					rx_xconn_forget(&rx_xconns[i]);
					freeslot = &rx_xconns[i];
				}
			if (freeslot == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
						 errmsg("too many connections to members in one transaction")));
		}
		conn = rx_connect_session(member, failure);
		if (conn == NULL)
			return NULL;
		rx_connection_keep(conn);
		/* whose the session is, for lock cycles through members */
		rx_exec_command(conn, member->name,
						psprintf("SELECT rdma_exchange.session_origin(%d, %d)",
								 rx_self_member_index(), MyProcPid));
		xc = freeslot;
		memset(xc, 0, sizeof(XactConn));
		xc->in_use = true;
		rx_nxconns = Max(rx_nxconns, (int) (xc - rx_xconns) + 1);
		strlcpy(xc->name, member->name, sizeof(xc->name));
		xc->userid = userid;
		xc->conn = conn;
	}

	if (xc->fragment)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("member \"%s\" is busy with a distributed query of this transaction",
						xc->name),
				 errdetail("After this transaction changed the member, the plan fragments of its distributed queries run in the member's transaction, one at a time, and one of them still runs there."),
				 errhint("Finish that query first, or commit before it.")));
	rx_xconn_end_copy(xc);
	if (change)
		rx_xact_note_change();

	/*
	 * Lock waits there honour this session's lock_timeout, as they would
	 * here: set with the remote transaction, again when it changed (or a
	 * savepoint rolled back took it with it).
	 */
	if (xc->xact_depth == 0)
	{
		/*
		 * At REPEATABLE READ and SERIALIZABLE, with the transaction's
		 * cluster snapshot (cluster_snapshot.c).  SERIALIZABLE's predicate
		 * locks would be per member: the member runs REPEATABLE READ.
		 */
		if (!IsolationUsesXactSnapshot())
			cmds = lappend(cmds, "BEGIN");
		else
		{
			cmds = lappend(cmds, "BEGIN ISOLATION LEVEL REPEATABLE READ");
			if (rx_consistent_reads)
				cmds = lappend(cmds,
							   psprintf("SET TRANSACTION SNAPSHOT %s",
										quote_literal_cstr(rx_cluster_snapshot_export(member))));
		}
		xc->xact_depth = 1;
		xc->lock_timeout = 0;	/* SET LOCAL ended with the last one */
		rx_xconn_forget_context(xc);
	}
	if (xc->lock_timeout != LockTimeout + 1)
	{
		cmds = lappend(cmds, psprintf("SET LOCAL lock_timeout = %d", LockTimeout));
		xc->lock_timeout = LockTimeout + 1;
	}
	while (xc->xact_depth < level)
	{
		xc->xact_depth++;
		cmds = lappend(cmds, psprintf("SAVEPOINT rx_s%d", xc->xact_depth));
	}

	/*
	 * One round trip for all of it, or none when the caller sends them
	 * with its own command.  Should they fail, the connection is dropped
	 * with the transaction (its depth already counts them).
	 */
	if (prelude != NULL)
		*prelude = cmds;
	else
	{
		rx_xconn_flush(xc);
		if (cmds != NIL)
			rx_exec_command(xc->conn, xc->name, joined(cmds));
	}
	return xc;
}

/* the transaction connection that conn is, or NULL */
static XactConn *
xconn_of(PGconn *conn)
{
	for (int i = 0; i < rx_nxconns; i++)
		if (rx_xconns[i].in_use && rx_xconns[i].conn == conn)
			return &rx_xconns[i];
	return NULL;
}

void
rx_xact_note_change(void)
{
	if (!rx_xact_changed)
	{
		rx_xact_changed = true;
		xact_changed_cid = GetCurrentCommandId(false);
	}
}

bool
rx_xact_changed_before(CommandId cid)
{
	return rx_xact_changed && xact_changed_cid < cid;
}

bool
rx_xact_open_on(const RxMember *member)
{
	for (int i = 0; i < rx_nxconns; i++)
		if (rx_xconns[i].in_use && rx_xconns[i].xact_depth > 0 &&
			strcmp(rx_xconns[i].name, member->name) == 0)
			return true;
	return false;
}

PGconn *
rx_xact_fragment_connection(const RxMember *member)
{
	Oid			userid = GetUserId();

	for (int i = 0; i < rx_nxconns; i++)
	{
		XactConn   *xc = &rx_xconns[i];

		if (xc->in_use && xc->xact_depth > 0 && xc->userid == userid &&
			strcmp(xc->name, member->name) == 0)
		{
			xc = get_xconn(member, NULL, true, NULL);
			xc->fragment = true;
			return xc->conn;
		}
	}
	return NULL;
}

void
rx_xact_fragment_done(PGconn *conn)
{
	XactConn   *xc = xconn_of(conn);

	if (xc != NULL)
		xc->fragment = false;
}

/* as rx_pool_prepared() and rx_pool_set_prepared(), for these sessions */
bool
rx_xact_prepared(PGconn *conn, int slot)
{
	XactConn   *xc = xconn_of(conn);

	return xc != NULL && slot >= 0 && slot < 64 &&
		(xc->prepared & (UINT64CONST(1) << slot)) != 0;
}

void
rx_xact_set_prepared(PGconn *conn, int slot)
{
	XactConn   *xc = xconn_of(conn);

	if (xc != NULL && slot >= 0 && slot < 64)
		xc->prepared |= UINT64CONST(1) << slot;
}

PGconn *
rx_xact_connection(const RxMember *member)
{
	return get_xconn(member, NULL, true, NULL)->conn;
}

PGconn *
rx_xact_lock_connection(const RxMember *member)
{
	return get_xconn(member, NULL, false, NULL)->conn;
}

PGconn *
rx_xact_connection_try(const RxMember *member, char **failure)
{
	XactConn   *xc = get_xconn(member, failure, true, NULL);

	return xc ? xc->conn : NULL;
}

void
rx_xact_exec(const RxMember *member, const char *sql, bool change)
{
	List	   *prelude = NIL;
	XactConn   *xc = get_xconn(member, NULL, change, &prelude);

	rx_xconn_flush_with(xc, lappend(prelude, (char *) sql));
}

void
rx_xact_exec_in_context(const RxMember *member, const char *sql)
{
	List	   *prelude = NIL;
	XactConn   *xc = get_xconn(member, NULL, true, &prelude);

	prelude = add_statement_context(xc, prelude);
	rx_xconn_flush_with(xc, lappend(prelude, (char *) sql));
}

void
rx_xact_defer_params(const RxMember *member, const char *sql, int nparams,
					 const char *const *values, const char *context)
{
	List	   *prelude = NIL;
	XactConn   *xc = get_xconn(member, NULL, true, &prelude);
	MemoryContext old;
	DeferredCmd *cmd;
	DeferredCmd *last;
	ListCell   *lc;

	if (xc->cxt == NULL)
		xc->cxt = AllocSetContextCreate(TopTransactionContext,
										"rdma_exchange deferred changes",
										ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(xc->cxt);

	/* what opens the transaction or a savepoint there goes first */
	foreach(lc, prelude)
	{
		cmd = palloc0(sizeof(DeferredCmd));
		cmd->sql = pstrdup(lfirst(lc));
		cmd->nparams = -1;
		if (sscanf(cmd->sql, "SAVEPOINT rx_s%d", &cmd->level) == 1)
			cmd->savepoint = true;
		else
			cmd->level = xc->deferred == NIL ? 1 :
				((DeferredCmd *) llast(xc->deferred))->level;
		xc->deferred = lappend(xc->deferred, cmd);
	}

	cmd = palloc0(sizeof(DeferredCmd));
	cmd->level = GetCurrentTransactionNestLevel();
	cmd->nparams = nparams;
	cmd->values = palloc(sizeof(char *) * Max(nparams, 1));
	for (int i = 0; i < nparams; i++)
		cmd->values[i] = values[i] ? pstrdup(values[i]) : NULL;
	/* the rows of one statement share its texts */
	last = xc->deferred != NIL ? llast(xc->deferred) : NULL;
	if (last != NULL && last->nparams >= 0 && strcmp(last->sql, sql) == 0 &&
		strcmp(last->context, context) == 0)
	{
		cmd->sql = last->sql;
		cmd->context = last->context;
	}
	else
	{
		cmd->sql = pstrdup(sql);
		cmd->context = pstrdup(context);
	}
	xc->deferred = lappend(xc->deferred, cmd);
	MemoryContextSwitchTo(old);

	if (list_length(xc->deferred) >= MAX_DEFERRED)
		rx_xconn_flush(xc);
}

void
rx_xact_flush(const RxMember *member)
{
	/* every role's: a SECURITY DEFINER function may have queued some */
	for (int i = 0; i < rx_nxconns; i++)
		if (rx_xconns[i].in_use && rx_xconns[i].deferred != NIL &&
			strcmp(rx_xconns[i].name, member->name) == 0)
			rx_xconn_flush(&rx_xconns[i]);
}

PGconn *
rx_xact_send_params(const RxMember *member, const char *sql, int nparams,
					const Oid *types, const char *const *values, bool prepare,
					bool in_context, bool binary)
{
	List	   *prelude = NIL;
	XactConn   *xc = get_xconn(member, NULL, true, &prelude);
	ListCell   *lc;
	XactStmt   *known;
	int			stmt = 0;
	char		name[32];
	bool		ok = true;

	/*
	 * The statement is prepared in the member's session the first time
	 * (parsed and planned once there, like a prepared statement of a
	 * client), with the prelude if any, in one pipeline.  Not past
	 * MAX_XACT_STMTS of them: a session that keeps sending new texts
	 * gets them parsed each time, as unnamed statements.
	 */
	if (in_context)
		prelude = add_statement_context(xc, prelude);
	known = prepare ? find_stmt(xc->stmts, sql) : NULL;
	if (known != NULL)
		stmt = known->id;
	else if (list_length(xc->stmts) >= MAX_XACT_STMTS)
		prepare = false;
	if (xc->preparing)
	{
		/* one whose pipeline failed: its number is not given again */
		pfree(xc->preparing);
		xc->preparing = NULL;
	}
	if (prepare && stmt == 0)
	{
		xc->preparing = MemoryContextAlloc(TopMemoryContext,
										   offsetof(XactStmt, sql) + strlen(sql) + 1);
		xc->preparing->id = stmt = ++xc->nstmts;
		strcpy(xc->preparing->sql, sql);
	}
	snprintf(name, sizeof(name), "rx_x%d", stmt);
	if (xc->deferred != NIL || prelude != NIL || xc->preparing != NULL)
	{
		ok = PQenterPipelineMode(xc->conn) == 1;
		/* the queued changes first: their answers are read first */
		ok = ok && (xc->deferred == NIL || send_deferred(xc));
		foreach(lc, prelude)
			ok = ok && PQsendQueryParams(xc->conn, lfirst(lc), 0, NULL, NULL,
										 NULL, NULL, 0);
		if (xc->preparing != NULL)
			ok = ok && PQsendPrepare(xc->conn, name, sql, nparams, types);
		xc->prelude = list_length(prelude) + (xc->preparing != NULL ? 1 : 0);
	}
	if (prepare)
		ok = ok && PQsendQueryPrepared(xc->conn, name, nparams, values, NULL, NULL,
									   binary ? 1 : 0);
	else
		ok = ok && PQsendQueryParams(xc->conn, sql, nparams, types, values, NULL, NULL,
									 binary ? 1 : 0);
	if (PQpipelineStatus(xc->conn) != PQ_PIPELINE_OFF)
		ok = ok && PQpipelineSync(xc->conn);
	if (!ok)
		rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
							   "could not send a command");
	return xc->conn;
}

PGresult *
rx_xact_get_result(PGconn *conn, const char *member_name)
{
	XactConn   *xc = xconn_of(conn);
	PGresult   *res;

	if (xc == NULL || PQpipelineStatus(conn) == PQ_PIPELINE_OFF)
		return rx_get_result(conn, member_name);

	if (xc->inflight != NIL)
		read_deferred(xc);

	/* first the prelude's commands: a result each, then a NULL */
	while (xc->prelude > 0)
	{
		res = rx_get_result(conn, member_name);
		/* a row, of a pipeline's first command after a single-row query */
		while (res != NULL && PQresultStatus(res) == PGRES_SINGLE_TUPLE)
		{
			PQclear(res);
			res = rx_get_result(conn, member_name);
		}
		rx_raise_if_failed(conn, res, member_name,
						   "opening the transaction or preparing the statement there");
		PQclear(res);
		res = rx_get_result(conn, member_name);
		Assert(res == NULL);
		xc->prelude--;
		/* the statement exists there from now on, whatever comes next */
		if (xc->prelude == 0 && xc->preparing != NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			xc->stmts = lappend(xc->stmts, xc->preparing);
			xc->preparing = NULL;
			MemoryContextSwitchTo(old);
		}
	}

	/* the caller's command; after its last result, the pipeline's end */
	res = rx_get_result(conn, member_name);
	if (res == NULL &&
		!rx_xconn_pipeline_end(xc,
							   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   CLEANUP_TIMEOUT_MS)))
		rx_report_remote_error(ERROR, conn, NULL, member_name,
							   "could not end a pipeline");
	return res;
}

void
rx_xact_copy_row(const RxMember *member, Oid relid, const char *table_name,
				 const char *copy_command, const char *line, int len)
{
	XactConn   *xc = NULL;
	Oid			userid = GetUserId();

	for (int i = 0; i < rx_nxconns; i++)
		if (rx_xconns[i].in_use && rx_xconns[i].userid == userid &&
			strcmp(rx_xconns[i].name, member->name) == 0)
		{
			xc = &rx_xconns[i];
			break;
		}

	/* rows of a newer subtransaction level need their own savepoint */
	if (xc == NULL || xc->copy_relid != relid ||
		xc->xact_depth != GetCurrentTransactionNestLevel())
	{
		PGresult   *res;
		List	   *prelude = NIL;

		/* BEGIN and the rest in the same round trip, ahead of the COPY */
		xc = get_xconn(member, NULL, true, &prelude);
		rx_xconn_flush(xc);
		if (!PQsendQuery(xc->conn, joined(lappend(prelude, (char *) copy_command))))
			rx_report_remote_error(ERROR, xc->conn, NULL, xc->name,
								   "could not start COPY");
		while ((res = rx_get_result(xc->conn, xc->name)) != NULL &&
			   PQresultStatus(res) == PGRES_COMMAND_OK)
			PQclear(res);
		if (res == NULL || PQresultStatus(res) != PGRES_COPY_IN)
		{
			PG_TRY();
			{
				rx_report_remote_error(ERROR, xc->conn, res, xc->name,
									   psprintf("forwarding rows of table %s",
												table_name));
			}
			PG_FINALLY();
			{
				if (res)
					PQclear(res);
			}
			PG_END_TRY();
		}
		PQclear(res);
		xc->copy_relid = relid;
		if (xc->copy_table)
			pfree(xc->copy_table);
		xc->copy_table = MemoryContextStrdup(TopMemoryContext, table_name);
	}
	rx_put_copy_data(xc->conn, xc->name, line, len);
}

void
rx_xact_copy_end(Oid relid)
{
	for (int i = 0; i < rx_nxconns; i++)
	{
		XactConn   *xc = &rx_xconns[i];

		if (xc->in_use && OidIsValid(xc->copy_relid) &&
			(!OidIsValid(relid) || xc->copy_relid == relid))
			rx_xconn_end_copy(xc);
	}
}
