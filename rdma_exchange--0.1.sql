/* rdma_exchange--0.1.sql: catalog and SQL API of rdma_exchange */

\echo Use "CREATE EXTENSION rdma_exchange" to load this file. \quit

-- The schema belongs to the extension (the control file names pg_catalog
-- as the extension's schema): pg_dump then dumps neither the schema nor
-- anything in it but the distribution catalog's rows (restore.c).
CREATE SCHEMA rdma_exchange;

-- ===== cluster metadata (src/cluster/) =====

-- The catalog, identical on every member: changes are made on one member
-- and pushed to all (add_node, remove_node, create_*_table).  Only the
-- extension's functions write it.  Every backend caches it; the trigger
-- catalog_changed() tells them when it changes.
CREATE TABLE rdma_exchange.node (
	node_id int PRIMARY KEY,
	host text NOT NULL,
	port int NOT NULL CHECK (port BETWEEN 1 AND 65535),
	fabric_address text NOT NULL,
	-- pg_control_system().system_identifier of the member (a uint64 stored
	-- in a bigint): how a member recognizes itself
	system_identifier bigint NOT NULL UNIQUE,
	UNIQUE (host, port)
);

CREATE TABLE rdma_exchange.dist_table (
	relid regclass PRIMARY KEY,
	method "char" NOT NULL CHECK (method IN ('h', 'r')),	-- hash, reference
	dist_column name,
	-- the number of members the table's sequences were interleaved over
	-- (sequences.c): a restore takes it out of the dumped increments
	seq_stride int NOT NULL DEFAULT 1 CHECK (seq_stride > 0),
	CHECK ((method = 'h') = (dist_column IS NOT NULL))
);

-- pg_dump dumps the distributions, not the members (a dump is restored
-- into another cluster): restore.c turns the restored rows into pending
-- distributions, which finish_restore() carries out.
SELECT pg_catalog.pg_extension_config_dump('rdma_exchange.dist_table', '');

CREATE FUNCTION rdma_exchange.catalog_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rx_catalog_changed'
LANGUAGE C;

CREATE TRIGGER catalog_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rdma_exchange.node
	FOR EACH STATEMENT EXECUTE FUNCTION rdma_exchange.catalog_changed();
CREATE TRIGGER catalog_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rdma_exchange.dist_table
	FOR EACH STATEMENT EXECUTE FUNCTION rdma_exchange.catalog_changed();

-- Internal: a writer of a reference table that entered through member
-- entry waits here, on the first member, for its turn
-- (src/cluster/ref_order.c).  PUBLIC: any role that may write the table
-- runs it; holding it only makes other writers wait.
CREATE FUNCTION rdma_exchange.order_reference_write(qualified_name text,
	entry int, members int)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_order_reference_write_sql'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.order_reference_write(text, int, int) TO PUBLIC;

-- Internal: a member applying a reference table's row change by key
-- checks here that exactly one row matched (src/cluster/dml.c).  PUBLIC:
-- the writing role runs it.
CREATE FUNCTION rdma_exchange.expect_one_row(changed bigint, table_name text, verb text)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_expect_one_row'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.expect_one_row(bigint, text, text) TO PUBLIC;

-- Internal: ahead of a statement forwarded to a member's session of the
-- transaction, the coordinator's settings and transaction start, so that
-- now() and current_setting() there give what they give on the
-- coordinator (src/cluster/settings.c).  PUBLIC: the writing role runs it;
-- it sets only what that role may SET.
CREATE FUNCTION rdma_exchange.take_statement_context(xact_start bigint, names text[], setting_values text[])
RETURNS void
AS 'MODULE_PATHNAME', 'rx_take_statement_context'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.take_statement_context(bigint, text[], text[]) TO PUBLIC;

-- ===== backup and restore (src/cluster/restore.c) =====

-- Distributions restored from a dump: rows written into dist_table by
-- anything but the extension itself (psql or pg_restore running a dump)
-- land here instead, and finish_restore() distributes those tables, then
-- forgets them.  Not dumped.
CREATE TABLE rdma_exchange.pending_distribution (
	relid regclass PRIMARY KEY,
	method "char" NOT NULL CHECK (method IN ('h', 'r')),
	dist_column name,
	seq_stride int NOT NULL DEFAULT 1 CHECK (seq_stride > 0),
	CHECK ((method = 'h') = (dist_column IS NOT NULL))
);

CREATE FUNCTION rdma_exchange.restore_distribution()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rx_restore_distribution'
LANGUAGE C;

CREATE TRIGGER restore_distribution
	BEFORE INSERT ON rdma_exchange.dist_table
	FOR EACH ROW EXECUTE FUNCTION rdma_exchange.restore_distribution();

-- Distributes every table of pending_distribution as it was when it was
-- dumped: reference tables first, then distributed ones; each table's rows
-- move from this member to their owners.  Run once after a restore, on
-- the member the dump was restored through.
CREATE FUNCTION rdma_exchange.finish_restore(
	OUT table_name regclass, OUT distribution text, OUT rows_moved bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_finish_restore'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Internal: drops the routing triggers of a table (remove_node).
CREATE FUNCTION rdma_exchange.drop_routing_triggers(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_drop_routing_triggers'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON rdma_exchange.pending_distribution FROM PUBLIC;
GRANT SELECT ON rdma_exchange.pending_distribution TO PUBLIC;
REVOKE ALL ON FUNCTION
	rdma_exchange.restore_distribution(),
	rdma_exchange.finish_restore(),
	rdma_exchange.drop_routing_triggers(regclass)
FROM PUBLIC;

-- The members as everyone may see them.  member_index is the position in
-- node_id order: what rows are hashed to and what EXPLAIN and errors call
-- a member.
CREATE VIEW rdma_exchange.nodes AS
	SELECT n.node_id, n.host, n.port, n.fabric_address, n.system_identifier,
		   (row_number() OVER (ORDER BY n.node_id) - 1)::int AS member_index,
		   n.system_identifier = s.system_identifier AS is_self
	FROM rdma_exchange.node n, pg_catalog.pg_control_system() s;

-- Adds the server at host:port (the same database name as this one) as a
-- member; call it on one member for every member, itself included.  The
-- member must have the extension in the same version; its system
-- identifier and rdma_exchange.fabric_address are read from it.  Refused
-- while hash-distributed tables exist.  The complete member list is pushed
-- to every member, and the new member gets a copy of every reference
-- table.  Returns the new node_id.
CREATE FUNCTION rdma_exchange.add_node(host text, port int)
RETURNS int
AS 'MODULE_PATHNAME', 'rx_add_node'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Removes a member; the remaining members get the new list, and the
-- removed member, if it can be reached, forgets the cluster (its copies of
-- reference tables become plain tables).  Refused while hash-distributed
-- tables exist.
CREATE FUNCTION rdma_exchange.remove_node(host text, port int)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_remove_node'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Hash-distributes a plain table by dist_column (a column of a type with a
-- default hash operator class; not generated).  The caller must own the
-- table and be a member.  The table is created on every other member with
-- the same qualified name, columns, defaults, constraints and indexes
-- (foreign keys stay local); where it exists already it must have the same
-- columns and be empty.  Every member records the distribution and gets
-- the triggers that route INSERT and COPY rows to their owners (DML rules:
-- src/cluster/dml.c).  This member's rows that belong to other members
-- are sent to them and deleted here.  All in the caller's transaction: the
-- other members commit when it commits.
CREATE FUNCTION rdma_exchange.create_distributed_table(rel regclass, dist_column name)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_create_distributed_table'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Makes a plain table a reference table: the table is created on the other
-- members as above (or must exist there empty with the same columns), and
-- every row is copied to them.  INSERT, COPY, UPDATE, DELETE (by primary
-- key) and TRUNCATE are applied on every member afterwards.
CREATE FUNCTION rdma_exchange.create_reference_table(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_create_reference_table'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Runs command on every member, this one included, in the calling
-- transaction; each member sees only its own part of distributed tables.
-- One row per member: the value when the last statement returned one row
-- of one column, else its command status (e.g. "DELETE 3").
CREATE FUNCTION rdma_exchange.run_on_all_nodes(command text,
	OUT member text, OUT result text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_run_on_all_nodes'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- The member index that owns value (NULL: member 0), as for a table
-- distributed on a column of value's type.
CREATE FUNCTION rdma_exchange.member_index_of(value anyelement)
RETURNS int
AS 'MODULE_PATHNAME', 'rx_member_index_of'
LANGUAGE C VOLATILE PARALLEL SAFE;

-- Internal: what add_node() reads from a new member.
CREATE FUNCTION rdma_exchange.member_info(
	OUT system_identifier bigint,
	OUT fabric_address text,
	OUT extension_version text)
RETURNS record
AS 'MODULE_PATHNAME', 'rx_member_info'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- Internal: records a table's distribution in this member's catalog and
-- installs the DML triggers; for the table's owner only (every member runs
-- it for create_distributed_table() and create_reference_table()).
CREATE FUNCTION rdma_exchange.record_distribution(rel regclass, method "char", dist_column name, seq_stride int)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_record_distribution'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Internal: the DML triggers of distributed and reference tables
-- (src/cluster/dml.c), installed by create_distributed_table() and
-- create_reference_table() on every member.
CREATE FUNCTION rdma_exchange.route_row()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rx_route_row'
LANGUAGE C;

CREATE FUNCTION rdma_exchange.flush_rows()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rx_flush_rows'
LANGUAGE C;

CREATE FUNCTION rdma_exchange.forward_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rx_forward_change'
LANGUAGE C;

CREATE FUNCTION rdma_exchange.forward_truncate()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rx_forward_truncate'
LANGUAGE C;

-- Internal: a dropped distributed or reference table is dropped on every
-- member, and so is a dropped schema that held one (where it is empty).
CREATE FUNCTION rdma_exchange.drop_cleanup()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'rx_drop_cleanup'
LANGUAGE C;

CREATE EVENT TRIGGER rdma_exchange_drop_cleanup ON sql_drop
	EXECUTE FUNCTION rdma_exchange.drop_cleanup();

-- DESIGN 3.6: the catalog is readable by every role (like pg_class: which
-- tables are distributed is no secret) and written only by the extension's
-- functions.  A table's owner may distribute it (the functions check
-- ownership) and drop it; run_on_all_nodes() and member_index_of() are
-- granted by the DBA to the roles that need them.
GRANT USAGE ON SCHEMA rdma_exchange TO PUBLIC;
REVOKE ALL ON rdma_exchange.node, rdma_exchange.dist_table FROM PUBLIC;
GRANT SELECT ON rdma_exchange.node, rdma_exchange.dist_table TO PUBLIC;
GRANT SELECT ON rdma_exchange.nodes TO PUBLIC;
REVOKE ALL ON FUNCTION
	rdma_exchange.catalog_changed(),
	rdma_exchange.add_node(text, int),
	rdma_exchange.remove_node(text, int),
	rdma_exchange.run_on_all_nodes(text),
	rdma_exchange.member_index_of(anyelement),
	rdma_exchange.member_info(),
	rdma_exchange.route_row(),
	rdma_exchange.flush_rows(),
	rdma_exchange.forward_change(),
	rdma_exchange.forward_truncate(),
	rdma_exchange.drop_cleanup()
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	rdma_exchange.create_distributed_table(regclass, name),
	rdma_exchange.create_reference_table(regclass),
	rdma_exchange.record_distribution(regclass, "char", name, int)
TO PUBLIC;

-- ===== two-phase commit (src/cluster/two_phase.c) =====

-- The decisions of the two-phase commits this member coordinated: a row is
-- inserted by the committing transaction itself, so it exists exactly when
-- that transaction committed.  Recovery commits a member's prepared
-- transaction of this member when its row exists, rolls it back when the
-- transaction ended without one, and deletes rows no member needs.
CREATE TABLE rdma_exchange.commit_decision (
	xid bigint NOT NULL,		-- the coordinator's transaction (xid8)
	nonce bigint PRIMARY KEY,	-- random: a crash can make an xid come again
	decided_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
REVOKE ALL ON rdma_exchange.commit_decision FROM PUBLIC;

-- The prepared transactions of this member's two-phase commits on every
-- other member, with the decision recovery takes for each (commit,
-- rollback, pending: its transaction still runs here, unknown, or
-- unreachable for a member that cannot be reached); with apply, recovery
-- acts on them (superusers only; the background worker of each database
-- does it every few seconds) and outcome says how it went.
CREATE FUNCTION rdma_exchange.recover_prepared_transactions(apply bool DEFAULT true,
	OUT member text, OUT gid text, OUT prepared timestamptz,
	OUT decision text, OUT outcome text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_recover_prepared_transactions'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION rdma_exchange.recover_prepared_transactions(bool) FROM PUBLIC;

-- The transactions in doubt: prepared on a member, not yet resolved.
CREATE VIEW rdma_exchange.transactions_in_doubt AS
	SELECT * FROM rdma_exchange.recover_prepared_transactions(false);
REVOKE ALL ON rdma_exchange.transactions_in_doubt FROM PUBLIC;

-- The read barrier (src/cluster/cluster_snapshot.c).  A distributed query
-- takes a snapshot on every member with take_snapshot() in a session of
-- its own that stays in its transaction while the query reads, and lets
-- the barrier go with release_barrier() once every member's snapshot is
-- taken; a two-phase commit takes the barrier with barrier_commit() just
-- before it prepares on a member.  Called by the sessions of the querying
-- role, so PUBLIC; a session that holds the barrier delays the others as
-- any lock would.
CREATE FUNCTION rdma_exchange.take_snapshot(wait boolean)
RETURNS text
AS 'MODULE_PATHNAME', 'rx_take_snapshot'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.take_snapshot(boolean) TO PUBLIC;

CREATE FUNCTION rdma_exchange.release_barrier()
RETURNS void
AS 'MODULE_PATHNAME', 'rx_release_barrier'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.release_barrier() TO PUBLIC;

-- The snapshot take_snapshot() holds, exported (pg_export_snapshot()) for
-- the member-side transaction of a REPEATABLE READ or SERIALIZABLE
-- transaction, which imports it with SET TRANSACTION SNAPSHOT.
CREATE FUNCTION rdma_exchange.export_held_snapshot()
RETURNS text
AS 'MODULE_PATHNAME', 'rx_export_held_snapshot'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.export_held_snapshot() TO PUBLIC;

CREATE FUNCTION rdma_exchange.barrier_commit()
RETURNS void
AS 'MODULE_PATHNAME', 'rx_barrier_commit'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.barrier_commit() TO PUBLIC;

-- Lock cycles through several members (src/cluster/deadlock.c): a
-- member-side session says whose it is (the coordinator's member index and
-- backend pid); the first member's recovery worker reads every member's
-- lock waits with session_origins() and pg_locks, and makes one
-- transaction of a cycle fail with deadlock_victim().
CREATE FUNCTION rdma_exchange.session_origin(member int, pid int)
RETURNS void
AS 'MODULE_PATHNAME', 'rx_session_origin'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.session_origin(int, int) TO PUBLIC;

CREATE FUNCTION rdma_exchange.session_origins(OUT pid int, OUT origin_member int,
	OUT origin_pid int, OUT remote_wait bool)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_session_origins'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION rdma_exchange.session_origins() FROM PUBLIC;

CREATE FUNCTION rdma_exchange.deadlock_victim(pid int, detail text)
RETURNS text
AS 'MODULE_PATHNAME', 'rx_deadlock_victim'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION rdma_exchange.deadlock_victim(int, text) FROM PUBLIC;

-- ===== transport and buffer pool statistics (src/transport/, src/bufpool/) =====

-- Cumulative counters of this server's transport worker (datagrams, bytes,
-- retransmissions, dropped messages by reason, injected faults) and a few
-- gauges (ports_open, worker_pid, and datagram_endpoints and
-- reliable_endpoints: the endpoint sets open of each kind, which the
-- multi-endpoint designs share their backends among).
CREATE FUNCTION rdma_exchange.transport_stats(OUT name text, OUT value bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_transport_stats'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- The shared buffer pool, one row per size class (small: datagram design,
-- large: designs over reliable connections): size, how many buffers are in
-- each state, how many free ones are promised to queries with a fixed
-- rdma_exchange.buffer_depth, the most ever in use and how often buffers
-- were taken from and given back to the free list since start-up.  An idle server has every
-- buffer free except recv_posted_buffers (and, for peer_timeout after a
-- query ended early, quarantined_buffers that a peer could still reach).
CREATE FUNCTION rdma_exchange.buffer_pool_stats(
	OUT class text,
	OUT total_buffers bigint,
	OUT buffer_size integer,
	OUT message_size integer,
	OUT free_buffers bigint,
	OUT populate_buffers bigint,
	OUT transmit_buffers bigint,
	OUT recv_posted_buffers bigint,
	OUT lent_buffers bigint,
	OUT wait_buffers bigint,
	OUT consume_buffers bigint,
	OUT quarantined_buffers bigint,
	OUT reserved_buffers bigint,
	OUT peak_buffers bigint,
	OUT grows bigint,
	OUT shrinks bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_buffer_pool_stats'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW rdma_exchange.buffer_pool_stats AS
	SELECT * FROM rdma_exchange.buffer_pool_stats();

-- The transport alone, without the executor (src/transport/loopback_test.c):
-- every participant calls it at the same time with the same query id, token
-- and member addresses (fabric addresses, in member index order; where the
-- datagram endpoint is found by name, "host:port NAME" with the member's
-- rdma_exchange.datagram_name); it sends
-- nmessages messages of msg_bytes bytes (at most one message's payload) to
-- each member of send_to, receives from each member of recv_from, checks
-- that each arrives exactly once, in order and intact (errors counts those
-- that do not), and reports the time taken, over one transport design
-- (sesq_sr, semq_sr, semq_rd, semq_wr or their ME variants).  With
-- stop_after > 0 it asks its sources to stop after that many messages.
-- For tests and benchmarks.
CREATE FUNCTION rdma_exchange.transport_selftest(
	query_id bigint, token bigint, self int, addrs text[],
	nmessages bigint, msg_bytes int, send_to int[], recv_from int[],
	exchange int DEFAULT 1, stop_after bigint DEFAULT 0,
	design text DEFAULT 'sesq_sr',
	OUT received bigint, OUT bytes bigint, OUT seconds float8,
	OUT errors bigint, OUT retransmits bigint, OUT duplicates bigint,
	OUT waits bigint, OUT msg_bytes_used int)
RETURNS record
AS 'MODULE_PATHNAME', 'rx_transport_selftest'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION rdma_exchange.transport_selftest(bigint, bigint, int, text[], bigint, int, int[], int[], int, bigint, text) FROM PUBLIC;

-- The exchange operator's data path without the planner
-- (src/exec/shuffle_selftest.c), for bench/shuffle: every participant calls
-- it at the same time on its own member with the same query id, token and
-- member addresses; it sends every row of its local table rel either to the
-- member the hash of the row's first column names (mode repartition; rows
-- for itself stay) or to every other member (mode broadcast), over one
-- transport design, receives the others' rows, and reports rows and bytes
-- moved, the time from its first row to its last received row, and the
-- most buffers its streams held at once.
CREATE FUNCTION rdma_exchange.shuffle_selftest(
	query_id bigint, token bigint, self int, addrs text[], rel regclass,
	mode text, design text,
	OUT rows_sent bigint, OUT rows_kept bigint, OUT rows_received bigint,
	OUT bytes_sent bigint, OUT seconds float8, OUT peak_buffers bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'rx_shuffle_selftest'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION rdma_exchange.shuffle_selftest(bigint, bigint, int, text[], regclass, text, text) FROM PUBLIC;

-- ===== fragment execution (src/cluster/dispatch.c, src/cluster/fragment.c) =====

-- Runs a signed plan fragment shipped by a coordinator; returns its
-- instrumentation.  For PUBLIC: the signed fragment is the authorization,
-- valid once, for the role whose query it belongs to and for a short time
-- (src/cluster/fragment_guard.c), so any role that may read the tables can
-- run distributed queries over them.
CREATE FUNCTION rdma_exchange.execute_fragment(fragment text)
RETURNS text
AS 'MODULE_PATHNAME', 'rx_execute_fragment'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.execute_fragment(text) TO PUBLIC;

-- A query only this member can answer, sent here whole (direct dispatch):
-- runs the signed plan, returns its rows, every column as text.  Bound to
-- its role and its query like a fragment.
CREATE FUNCTION rdma_exchange.execute_direct(fragment text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rx_execute_direct'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
GRANT EXECUTE ON FUNCTION rdma_exchange.execute_direct(text) TO PUBLIC;
