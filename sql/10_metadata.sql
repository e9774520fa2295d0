--
-- 10_metadata: the metadata API on the 3-member cluster of 00_setup.
-- Port numbers change from run to run: members are shown by member index,
-- ports as offsets from member 0's port, and error messages that name a
-- member ("host:port") go through rx_try(), which replaces the port.
--
\set VERBOSITY default

-- run_on_all_nodes(), one row per member index instead of host:port
CREATE FUNCTION public.rx_md_all(command text, OUT member_index int, OUT result text)
RETURNS SETOF record LANGUAGE sql AS $$
  SELECT n.member_index, r.result
  FROM rdma_exchange.run_on_all_nodes(command) r
  JOIN rdma_exchange.nodes n ON r.member = n.host || ':' || n.port
  ORDER BY n.member_index
$$;

-- ===== members =====
SELECT node_id, host, port - min(port) OVER () AS port_offset,
       fabric_address = host || ':' || (port + 100) AS fabric_address_ok,
       member_index, is_self
FROM rdma_exchange.nodes ORDER BY node_id;
SELECT count(DISTINCT system_identifier) AS distinct_system_ids FROM rdma_exchange.nodes;
-- member_info() describes this server, as the nodes view does
SELECT i.system_identifier = n.system_identifier AS same_id,
       i.fabric_address = n.fabric_address AS same_address,
       i.extension_version
FROM rdma_exchange.member_info() i, rdma_exchange.nodes n WHERE n.is_self;

-- every member has the same member list and knows which one it is
SELECT * FROM rx_md_all($$SELECT string_agg(node_id || '/' || member_index || '/' || is_self, ' ' ORDER BY node_id) FROM rdma_exchange.nodes$$);
SELECT * FROM rx_md_all($$SELECT (SELECT member_index FROM rdma_exchange.nodes WHERE is_self) = (SELECT member_index FROM rdma_exchange.nodes n, rdma_exchange.member_info() i WHERE n.system_identifier = i.system_identifier)$$);
\getenv p1 RX_MEMBER1_PORT
\c - - - :p1
SELECT node_id, member_index, is_self FROM rdma_exchange.nodes ORDER BY node_id;
\getenv p0 RX_MEMBER0_PORT
\c - - - :p0
\set VERBOSITY default

-- adding a member that is already there is refused, under its own name
-- and under another name for the same server
SELECT rx_try(format('SELECT rdma_exchange.add_node(%L, %s)', host, port))
FROM rdma_exchange.nodes WHERE member_index = 1;
SELECT rx_try(format('SELECT rdma_exchange.add_node(%L, %s)', 'localhost', port))
FROM rdma_exchange.nodes WHERE member_index = 2;
SELECT rx_try($$SELECT rdma_exchange.add_node('127.0.0.1', 0)$$);
SELECT rx_try($$SELECT rdma_exchange.add_node('', 5432)$$);
SELECT rx_try($$SELECT rdma_exchange.remove_node('127.0.0.1', 1)$$);
-- nothing changed
SELECT count(*) AS members FROM rdma_exchange.nodes;

-- ===== member_index_of =====
SELECT rdma_exchange.member_index_of(NULL::int) AS null_owner;
SELECT count(DISTINCT rdma_exchange.member_index_of(i)) AS members_used,
       min(rdma_exchange.member_index_of(i)) AS lo, max(rdma_exchange.member_index_of(i)) AS hi
FROM generate_series(1, 1000) i;
-- the same owners on every member
SELECT count(DISTINCT result) AS distinct_answers
FROM rx_md_all($$SELECT string_agg(rdma_exchange.member_index_of(i)::text, '' ORDER BY i) || string_agg(rdma_exchange.member_index_of('k' || i)::text, '' ORDER BY i) FROM generate_series(1, 300) i$$);

-- ===== distributing tables that hold rows =====
CREATE SCHEMA md;
CREATE TABLE md.t (k int PRIMARY KEY, v text, n int DEFAULT 7);
CREATE INDEX t_v ON md.t (v);
INSERT INTO md.t SELECT i, 'v' || i FROM generate_series(1, 3000) i;
CREATE TABLE md.tk (name text, x int);
INSERT INTO md.tk SELECT 'name' || i, i FROM generate_series(1, 500) i;
CREATE TABLE md.r (id int PRIMARY KEY, label text);
INSERT INTO md.r SELECT i, 'r' || i FROM generate_series(1, 50) i;

SET client_min_messages = warning;
SELECT rdma_exchange.create_distributed_table('md.t', 'k');
SELECT rdma_exchange.create_distributed_table('md.tk', 'name');
SELECT rdma_exchange.create_reference_table('md.r');
RESET client_min_messages;
SELECT relid, method, dist_column FROM rdma_exchange.dist_table WHERE relid::text LIKE 'md.%' ORDER BY relid::text;
-- every member records the same distribution
SELECT count(DISTINCT result) AS distinct_answers, min(result) AS answer
FROM rx_md_all($$SELECT string_agg(relid::text || ' ' || method::text || ' ' || coalesce(dist_column::text, '-'), ', ' ORDER BY relid::text) FROM rdma_exchange.dist_table WHERE relid::text LIKE 'md.%'$$);
-- the tables were created on the other members with their indexes
SELECT * FROM rx_md_all($$SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'md'$$);

-- the whole table is seen from member 0
SELECT count(*), sum(k), count(DISTINCT k) FROM md.t;
SELECT count(*), sum(x) FROM md.tk;
-- each member's part is non-empty, and the parts add up to the table
SELECT count(*) FILTER (WHERE result::int > 0) AS nonempty_parts, sum(result::int) AS total
FROM rx_md_all('SELECT count(*) FROM md.t');
SELECT count(*) FILTER (WHERE result::int > 0) AS nonempty_parts, sum(result::int) AS total
FROM rx_md_all('SELECT count(*) FROM md.tk');
-- every member holds exactly the rows it owns
\set owned 'rdma_exchange.member_index_of(%s) = (SELECT member_index FROM rdma_exchange.nodes WHERE is_self)'
SELECT * FROM rx_md_all(format('SELECT count(*) FILTER (WHERE NOT ' || :'owned' || ') FROM md.t', 'k'));
SELECT * FROM rx_md_all(format('SELECT count(*) FILTER (WHERE NOT ' || :'owned' || ') FROM md.tk', 'name'));
-- and the rows each member reports are the ones member_index_of() gives it
SELECT a.member_index, a.result::int = (SELECT count(*) FROM generate_series(1, 3000) i
                                        WHERE rdma_exchange.member_index_of(i) = a.member_index) AS expected_count
FROM rx_md_all('SELECT count(*) FROM md.t') a;
-- the reference table is complete on every member
SELECT count(DISTINCT result) AS distinct_answers, min(result) AS answer
FROM rx_md_all($$SELECT count(*) || ' rows, sum ' || sum(id) || ', ' || string_agg(label, ',' ORDER BY id) FILTER (WHERE id <= 3) FROM md.r$$);

-- ===== INSERT and COPY route rows to their owners =====
-- (the command tags count every row, wherever it went: ROW_COUNT)
INSERT INTO md.t (k, v) SELECT i, 'ins' || i FROM generate_series(3001, 3300) i;
SELECT :ROW_COUNT AS inserted;
INSERT INTO md.t VALUES (3301, 'single');
SELECT :ROW_COUNT AS inserted;
COPY md.t (k, v) FROM stdin;
4001	copy1
4002	copy2
4003	copy3
4004	copy4
4005	copy5
4006	copy6
\.
SELECT :ROW_COUNT AS copied;
COPY md.tk FROM stdin (FORMAT csv);
copyname1,1
copyname2,2
copyname3,3
\.
SELECT count(*), sum(k) FROM md.t;
SELECT k, v, n FROM md.t WHERE k > 3298 ORDER BY k;
SELECT count(*) FROM md.tk WHERE name LIKE 'copy%';
-- COPY TO of a distributed table copies every member's rows (to a file
-- in the data directory, read back with pg_read_file)
DO $$ BEGIN EXECUTE format('COPY md.t TO %L', current_setting('data_directory') || '/rx_md_copy_out.txt'); END $$;
SELECT count(*) AS lines, sum(split_part(line, E'\t', 1)::int) AS sum_k
FROM regexp_split_to_table(rtrim(pg_read_file('rx_md_copy_out.txt'), E'\n'), E'\n') line;
DO $$ BEGIN EXECUTE format('COPY md.tk (x) TO %L (FORMAT csv)', current_setting('data_directory') || '/rx_md_copy_out.txt'); END $$;
SELECT count(*) AS lines, sum(line::int) AS sum_x
FROM regexp_split_to_table(rtrim(pg_read_file('rx_md_copy_out.txt'), E'\n'), E'\n') line;
SELECT * FROM rx_md_all(format('SELECT count(*) FILTER (WHERE NOT ' || :'owned' || ') FROM md.t', 'k'));
SELECT * FROM rx_md_all(format('SELECT count(*) FILTER (WHERE NOT ' || :'owned' || ') FROM md.tk', 'name'));
SELECT sum(result::int) AS total FROM rx_md_all('SELECT count(*) FROM md.t');
-- rows inserted and rolled back are gone everywhere
BEGIN;
INSERT INTO md.t (k, v) SELECT i, 'rolled back' FROM generate_series(5001, 5030) i;
ROLLBACK;
SELECT count(*) FROM md.t WHERE k > 5000;
SELECT sum(result::int) AS total FROM rx_md_all('SELECT count(*) FROM md.t WHERE k > 5000');
-- duplicate keys are caught by the owner's primary key
INSERT INTO md.t VALUES (17, 'duplicate');
SELECT count(*) FROM md.t WHERE k = 17;

-- ===== UPDATE and DELETE =====
-- run on every member's part; the command tag counts every row
UPDATE md.t SET v = 'changed ' || k WHERE k <= 10;
SELECT :ROW_COUNT AS updated;
SELECT k, v FROM md.t WHERE k <= 11 ORDER BY k;
DELETE FROM md.t WHERE k <= 3;
SELECT :ROW_COUNT AS deleted;
-- joined with a reference table
UPDATE md.t SET n = r.id * 100 FROM md.r WHERE r.id = md.t.k AND md.t.k BETWEEN 4 AND 6;
SELECT :ROW_COUNT AS updated;
-- bound parameters of a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE upd(int, text) AS UPDATE md.t SET v = $2 WHERE k = $1 OR k = $1 + 100;
EXECUTE upd(7, 'prepared');
SELECT :ROW_COUNT AS updated;
DEALLOCATE upd;
RESET plan_cache_mode;
-- PL/pgSQL variables are bound parameters too, numbered with the unused ones
CREATE FUNCTION md.bump(lim int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  unused text;
  cnt bigint;
BEGIN
  UPDATE md.t SET n = n + 1 WHERE k <= lim;
  GET DIAGNOSTICS cnt = ROW_COUNT;
  RETURN cnt;
END $$;
SELECT md.bump(5) AS bumped;
SELECT k, v, n FROM md.t WHERE k <= 11 OR k = 107 ORDER BY k;
-- what the statement's expressions read on the members is this session's:
-- its transaction's start (now()), its settings (an application's own,
-- DateStyle for a date's text form and for the text of a parameter)
BEGIN;
SELECT pg_sleep(0.05);
UPDATE md.t SET v = now()::text WHERE k <= 10;
SELECT count(*) AS rows, count(*) FILTER (WHERE v = now()::text) AS as_now FROM md.t WHERE k <= 10;
ROLLBACK;
SET app.tenant = 'acme';
SET DateStyle = 'SQL, DMY';
UPDATE md.t SET v = current_setting('app.tenant') || ' ' || '01/02/2020'::date WHERE k <= 10;
SELECT v, count(*) FROM md.t WHERE k <= 10 GROUP BY v;
PREPARE upd_date(date) AS UPDATE md.t SET v = current_setting('app.tenant') || ' ' || $1 WHERE k <= 10;
EXECUTE upd_date('03/04/2021');
SELECT v, count(*) FROM md.t WHERE k <= 10 GROUP BY v;
DEALLOCATE upd_date;
RESET DateStyle;
RESET app.tenant;
-- rolled back on every member
BEGIN;
DELETE FROM md.t;
ROLLBACK;
SELECT count(*) FROM md.t;
-- refused where a member could not do its part alone
UPDATE md.t SET k = 0 WHERE k = 4;
-- (a subquery correlated on another column; uncorrelated ones are computed
-- first, test/paths/150)
DELETE FROM md.t WHERE k = (SELECT max(k) FROM md.t t2 WHERE t2.v = t.v);
-- RETURNING and ON CONFLICT run on the owners (test/paths/140 compares
-- them with one server); a conflict action may not move a row
BEGIN;
UPDATE md.t SET v = 'x' WHERE k = 4 RETURNING k, v;
INSERT INTO md.t VALUES (9999, 'x') RETURNING k;
INSERT INTO md.t VALUES (1, 'x') ON CONFLICT DO NOTHING;
ROLLBACK;
INSERT INTO md.t VALUES (4, 'x') ON CONFLICT (k) DO UPDATE SET k = 5;
-- run_on_all_nodes() runs any statement on every member's part
SELECT sum(substring(result from '[0-9]+$')::int) AS updated
FROM rx_md_all($$UPDATE md.t SET v = 'again' WHERE k <= 10$$);
SELECT sum(substring(result from '[0-9]+$')::int) AS deleted
FROM rx_md_all($$DELETE FROM md.t WHERE k <= 10$$);
SELECT count(*), min(k) FROM md.t;
-- reference tables: changes are applied on every copy
INSERT INTO md.r VALUES (51, 'r51');
UPDATE md.r SET label = 'updated' WHERE id = 1;
DELETE FROM md.r WHERE id = 2;
SELECT count(DISTINCT result) AS distinct_answers, min(result) AS answer
FROM rx_md_all($$SELECT count(*) || ' rows, sum ' || sum(id) || ', ' || string_agg(label, ',' ORDER BY id) FILTER (WHERE id <= 3) FROM md.r$$);

-- ===== TRUNCATE =====
TRUNCATE md.t;
SELECT * FROM rx_md_all('SELECT count(*) FROM md.t');
SELECT count(*) FROM md.t;
TRUNCATE md.r;
SELECT * FROM rx_md_all('SELECT count(*) FROM md.r');
-- a TRUNCATE rolled back leaves every part as it was
INSERT INTO md.t (k, v) SELECT i, 'again' FROM generate_series(1, 100) i;
BEGIN;
TRUNCATE md.t;
ROLLBACK;
SELECT count(*) FROM md.t;
SELECT sum(result::int) AS total FROM rx_md_all('SELECT count(*) FROM md.t');

-- ===== privileges =====
-- roles, grants on schemas and tables with distributed tables reach every
-- member (ddl.c)
CREATE ROLE rx_md_user LOGIN;
SELECT * FROM rx_md_all($$SELECT count(*) FROM pg_roles WHERE rolname = 'rx_md_user'$$);
GRANT USAGE ON SCHEMA md TO rx_md_user;
CREATE TABLE md.own (a int);
ALTER TABLE md.own OWNER TO rx_md_user;
SET ROLE rx_md_user;
-- everyone may read the member list and the catalog
SELECT count(*) AS members FROM rdma_exchange.nodes;
SELECT count(*) FROM rdma_exchange.node;
SELECT count(*) FROM rdma_exchange.dist_table;
SELECT rdma_exchange.add_node('127.0.0.1', 1);
SELECT rdma_exchange.remove_node('127.0.0.1', 1);
SELECT * FROM rdma_exchange.run_on_all_nodes('SELECT 1');
SELECT rdma_exchange.member_index_of(1);
SELECT rdma_exchange.member_info();
-- anyone may call it; only a signed fragment of its own query runs
SELECT rdma_exchange.execute_fragment('x');
-- the owner distributes its table; the table is created on every member,
-- which needs CREATE on its schema there (terse: the context names the
-- member's port)
\set VERBOSITY terse
SELECT rdma_exchange.create_distributed_table('md.own', 'a');
\set VERBOSITY default
RESET ROLE;
GRANT CREATE ON SCHEMA md TO rx_md_user;
SET ROLE rx_md_user;
SELECT rdma_exchange.create_distributed_table('md.own', 'a');
INSERT INTO md.own SELECT generate_series(1, 30);
SELECT count(*), sum(a) FROM md.own;
-- ... and drops it
DROP TABLE md.own;
RESET ROLE;
SELECT * FROM rx_md_all($$SELECT count(*) FROM pg_class WHERE relname = 'own'$$);
-- a distributed query needs SELECT on the table, nothing more
SET ROLE rx_md_user;
SELECT count(*) FROM md.t;
RESET ROLE;
GRANT SELECT ON md.t TO rx_md_user;
SELECT * FROM rx_md_all($$SELECT has_table_privilege('rx_md_user', 'md.t', 'SELECT')::text$$);
SET ROLE rx_md_user;
SELECT count(*) FROM md.t;
RESET ROLE;

-- ===== dropping =====
DROP SCHEMA md CASCADE;
SELECT * FROM rx_md_all($$SELECT count(*) FROM rdma_exchange.dist_table WHERE relid::text LIKE 'md.%'$$);
-- the schema went too: create_distributed_table() had made it there
SELECT * FROM rx_md_all($$SELECT count(*) FROM pg_namespace WHERE nspname = 'md'$$);
-- ... but not where it still holds a member's own objects
CREATE SCHEMA md2;
CREATE TABLE md2.d (id int);
SELECT rdma_exchange.create_distributed_table('md2.d', 'id');
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('CREATE TABLE IF NOT EXISTS md2.own_part (x int)');
DROP SCHEMA md2 CASCADE;
SELECT * FROM rx_md_all($$SELECT string_agg(relname, ',') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'md2'$$);
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('DROP SCHEMA IF EXISTS md2 CASCADE');
DROP ROLE rx_md_user;
SELECT * FROM rx_md_all($$SELECT count(*) FROM pg_roles WHERE rolname = 'rx_md_user'$$);
DROP FUNCTION public.rx_md_all(text);
