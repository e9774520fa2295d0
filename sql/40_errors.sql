--
-- 40_errors: the errors a user sees, with their DETAIL and HINT.  Errors
-- that name a member ("host:port") go through rx_try(), which replaces
-- the port of this run.
--
\set VERBOSITY default
SET client_min_messages = warning;
CREATE SCHEMA er;
SET search_path = er, public;

CREATE TABLE t (k int, v text, p point, g int GENERATED ALWAYS AS (k * 2) STORED, x xml);
INSERT INTO t (k, v) SELECT i, 'v' || i FROM generate_series(1, 100) i;

-- ===== create_distributed_table / create_reference_table =====
SELECT rdma_exchange.create_distributed_table('t', 'nope');
SELECT rdma_exchange.create_distributed_table('missing', 'k');
SELECT rdma_exchange.create_reference_table('missing');
-- types without a default hash operator class
SELECT rdma_exchange.create_distributed_table('t', 'p');
SELECT rdma_exchange.create_distributed_table('t', 'x');
SELECT rdma_exchange.create_distributed_table('t', 'g');
SELECT rdma_exchange.create_distributed_table('t', 'ctid');
-- a NULL column: the function is STRICT, so nothing happens
SELECT rdma_exchange.create_distributed_table('t', NULL);
SELECT count(*) FROM rdma_exchange.dist_table WHERE relid = 't'::regclass;
-- twice
SELECT rdma_exchange.create_distributed_table('t', 'k');
SELECT rdma_exchange.create_distributed_table('t', 'k');
SELECT rdma_exchange.create_distributed_table('t', 'v');
SELECT rdma_exchange.create_reference_table('t');
CREATE TABLE r (id int, name text);
INSERT INTO r VALUES (1, 'one'), (2, 'two');
SELECT rdma_exchange.create_reference_table('r');
SELECT rdma_exchange.create_reference_table('r');
SELECT rdma_exchange.create_distributed_table('r', 'id');
-- objects that are not plain tables
CREATE VIEW vw AS SELECT 1 AS a;
SELECT rdma_exchange.create_distributed_table('vw', 'a');
CREATE TABLE parted (a int) PARTITION BY RANGE (a);
SELECT rdma_exchange.create_distributed_table('parted', 'a');
CREATE TEMP TABLE tmp (a int);
SELECT rdma_exchange.create_distributed_table('tmp', 'a');
CREATE TABLE inh_parent (a int);
CREATE TABLE inh_child () INHERITS (inh_parent);
SELECT rdma_exchange.create_distributed_table('inh_child', 'a');
SELECT rdma_exchange.create_reference_table('inh_parent');
SELECT rdma_exchange.create_distributed_table('rdma_exchange.node', 'node_id');
-- a column of a type the other members do not have (types reach every
-- member when created; not with propagate_ddl off, as for a repair)
SET rdma_exchange.propagate_ddl = off;
CREATE TYPE local_mood AS ENUM ('sad', 'ok', 'happy');
RESET rdma_exchange.propagate_ddl;
CREATE TABLE e_local (id int, m local_mood);
SELECT rx_try($$SELECT rdma_exchange.create_distributed_table('er.e_local', 'id')$$);
SELECT count(*) FROM rdma_exchange.dist_table WHERE relid = 'e_local'::regclass;
-- the table exists on another member, but not empty
CREATE TABLE busy (id int, v text);
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('CREATE TABLE IF NOT EXISTS er.busy (id int, v text)');
\getenv p2 RX_MEMBER2_PORT
\c - - - :p2
INSERT INTO er.busy VALUES (1, 'stray row');
\getenv p0 RX_MEMBER0_PORT
\c - - - :p0
\set VERBOSITY default
SET search_path = er, public;
SELECT rx_try($$SELECT rdma_exchange.create_distributed_table('er.busy', 'id')$$);
-- ... or with other columns
CREATE TABLE other_cols (id int, v text);
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('CREATE TABLE IF NOT EXISTS er.other_cols (id int, w int)');
SELECT rx_try($$SELECT rdma_exchange.create_reference_table('er.other_cols')$$);
SELECT count(*) FROM rdma_exchange.dist_table WHERE relid::text LIKE 'er.%' AND relid::text NOT IN ('er.t', 'er.r');

CREATE FUNCTION er_one() RETURNS int LANGUAGE sql AS 'SELECT 1';

-- ===== constraints the members could not enforce alone =====
-- unique constraints and indexes without the distribution column
CREATE TABLE u1 (id int PRIMARY KEY, email text UNIQUE);
SELECT rdma_exchange.create_distributed_table('u1', 'email');
SELECT rdma_exchange.create_distributed_table('u1', 'id');
CREATE TABLE u2 (id int, code text);
CREATE UNIQUE INDEX u2_code ON u2 (code);
SELECT rdma_exchange.create_distributed_table('u2', 'id');
-- ... with it they are fine, and so are they on a reference table
CREATE TABLE u3 (id int, code text, UNIQUE (code, id));
SELECT rdma_exchange.create_distributed_table('u3', 'id');
SELECT rdma_exchange.create_reference_table('u2');
-- foreign keys: to a table that is not distributed
CREATE TABLE parent_local (id int PRIMARY KEY);
CREATE TABLE child1 (id int PRIMARY KEY, p int REFERENCES parent_local);
SELECT rdma_exchange.create_distributed_table('child1', 'id');
-- referenced by a table that is not distributed
SELECT rdma_exchange.create_distributed_table('parent_local', 'id');
DROP TABLE child1;
-- to a reference table: created on every member and enforced there
SELECT rdma_exchange.create_reference_table('parent_local');
INSERT INTO parent_local SELECT generate_series(1, 10);
CREATE TABLE child2 (id int PRIMARY KEY, p int REFERENCES parent_local);
INSERT INTO child2 SELECT i, i FROM generate_series(1, 10) i;
SELECT rdma_exchange.create_distributed_table('child2', 'id');
SELECT count(*) AS members_with_the_key FROM rdma_exchange.run_on_all_nodes($$SELECT conname FROM pg_constraint WHERE conrelid = 'er.child2'::regclass AND contype = 'f'$$);
-- rows for every member, one of them without its referenced row
SELECT rx_try($$INSERT INTO er.child2 SELECT i, CASE WHEN i = 20 THEN 99 ELSE 1 END FROM generate_series(11, 30) i$$);
SELECT count(*) FROM child2;
-- to a distributed table, and to the table itself
CREATE TABLE dparent (id int PRIMARY KEY);
SELECT rdma_exchange.create_distributed_table('dparent', 'id');
CREATE TABLE dchild (id int PRIMARY KEY, pid int REFERENCES dparent (id));
SELECT rdma_exchange.create_distributed_table('dchild', 'id');
CREATE TABLE selfref (id int PRIMARY KEY, up int REFERENCES selfref (id));
SELECT rdma_exchange.create_distributed_table('selfref', 'id');
-- (a reference table may reference itself: every member has every row)
SELECT rdma_exchange.create_reference_table('selfref');
-- dropping the reference table with CASCADE drops the key everywhere
DROP TABLE parent_local CASCADE;
SELECT sum(result::int) AS members_with_the_key FROM rdma_exchange.run_on_all_nodes($$SELECT count(*) FROM pg_constraint WHERE conrelid = 'er.child2'::regclass AND contype = 'f'$$);
INSERT INTO child2 SELECT i, 99 FROM generate_series(11, 20) i;
SELECT count(*) FROM child2;

-- ===== member_index_of =====
SELECT rdma_exchange.member_index_of(NULL);
SELECT rdma_exchange.member_index_of('(1,2)'::point);

-- ===== writing =====
-- UPDATE and DELETE that a member could not run on its own part
UPDATE t SET v = 'changed' WHERE k = (SELECT max(k) FROM t t2 WHERE t2.v = t.v);
DELETE FROM t WHERE v IN (SELECT code FROM u3);
-- (one that joins a co-located table on the distribution columns runs)
DELETE FROM t WHERE k IN (SELECT id FROM u3);
CREATE TABLE plain (id int);
DELETE FROM t WHERE k IN (SELECT id FROM plain);
DELETE FROM t WHERE k = 1 RETURNING k, er_one();
UPDATE t SET v = 'changed' WHERE k = 1 AND now() IS NOT NULL AND er_one() = 1;
BEGIN;
DECLARE cur CURSOR FOR SELECT k FROM t WHERE k = 1;
FETCH cur;
UPDATE t SET v = 'changed' WHERE CURRENT OF cur;
ROLLBACK;
CREATE TABLE trg (id int PRIMARY KEY, v int);
SELECT rdma_exchange.create_distributed_table('trg', 'id');
CREATE FUNCTION trg_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.v := NEW.v + 1; RETURN NEW; END $$;
CREATE TRIGGER trg_touch BEFORE UPDATE ON trg FOR EACH ROW EXECUTE FUNCTION trg_touch();
UPDATE trg SET v = 1;
UPDATE t SET k = k + 1;
MERGE INTO t USING (SELECT 1 AS k) s ON t.k = s.k WHEN MATCHED THEN DELETE;
-- each row of INSERT ... RETURNING and ON CONFLICT runs on its owner
-- (test/paths/140), but not a conflict action calling a function of the
-- user's
BEGIN;
INSERT INTO trg VALUES (1000, 1) RETURNING id;
ROLLBACK;
INSERT INTO trg VALUES (1000, 1) ON CONFLICT (id) DO UPDATE SET v = er_one();
WITH d AS (DELETE FROM t WHERE k = 2 RETURNING k) SELECT count(*) FROM d;
-- reference tables without a primary key
UPDATE r SET name = 'x';
DELETE FROM r;
INSERT INTO r VALUES (3, 'three') ON CONFLICT DO NOTHING;
MERGE INTO r USING (SELECT 1 AS id) s ON r.id = s.id WHEN MATCHED THEN DELETE;
-- nothing changed
SELECT count(*), sum(k) FROM t;
SELECT * FROM r ORDER BY id;
-- a session of run_on_all_nodes() stores only the rows its member owns
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('INSERT INTO er.t (k, v) SELECT i, ''x'' FROM generate_series(2001, 2010) i')$$);
-- a transaction that wrote on other members cannot be prepared
-- (VERBOSITY terse: the DETAIL names the member with its port)
\set VERBOSITY terse
BEGIN;
INSERT INTO t (k, v) SELECT i, 'prepared' FROM generate_series(3001, 3010) i;
PREPARE TRANSACTION 'rx_er';
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'rx_er';
\set VERBOSITY default
SELECT count(*) FROM t WHERE k > 3000;
-- a distributed query after a write in the same transaction sees the
-- transaction's rows: its fragments run in the transaction
BEGIN;
INSERT INTO t (k, v) VALUES (4001, 'not yet committed');
SELECT count(*) FROM t;
ROLLBACK;
BEGIN;
TRUNCATE t;
SELECT count(*) FROM t;
ROLLBACK;
-- INSERT ... SELECT from a distributed table is one statement: fine
BEGIN;
CREATE TABLE t_copy (k int, v text);
SELECT rdma_exchange.create_distributed_table('t_copy', 'k');
COMMIT;
INSERT INTO t_copy SELECT k, v FROM t WHERE k <= 50;
SELECT count(*), sum(k) FROM t_copy;
-- reading first and writing afterwards is fine too
BEGIN;
SELECT count(*) FROM t;
INSERT INTO t (k, v) VALUES (4002, 'after the read');
COMMIT;
SELECT count(*) FROM t WHERE k = 4002;

-- ===== run_on_all_nodes =====
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('SELECT 1/0')$$);
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('VACUUM er.t')$$);
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('COMMIT')$$);
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('COPY (SELECT 1) TO STDOUT')$$);
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('SELECT * FROM er.no_such_table')$$);
-- an empty command
SELECT rx_try($$SELECT * FROM rdma_exchange.run_on_all_nodes('')$$);

-- ===== execute_fragment with garbage =====
SELECT rdma_exchange.execute_fragment('garbage');
SELECT rdma_exchange.execute_fragment('');
SELECT rdma_exchange.execute_fragment(repeat('0', 64) || ':RXFRAG 0.1' || chr(10) || 'nonsense');

-- ===== queries the planner refuses =====
CREATE TABLE g (id int PRIMARY KEY, p point, t text);
CREATE INDEX g_p ON g USING gist (p);
CREATE INDEX g_lower ON g (lower(t));
INSERT INTO g SELECT i, point(i, i), 'T' || i FROM generate_series(1, 2000) i;
SELECT rdma_exchange.create_distributed_table('g', 'id');
ANALYZE g;
-- row locks the members cannot take for one query (row_locks.c)
SELECT g.id FROM g JOIN g g2 ON g2.id = g.id + 1 WHERE g.id < 5 FOR UPDATE;
SELECT * FROM (SELECT id FROM g WHERE id < 5 FOR SHARE) s;
-- a nearest-neighbour index scan in the serial part of the plan
SELECT id FROM g ORDER BY p <-> point(0, 0) LIMIT 3;
-- the order of an expression index: the plan now sorts on the members
-- (an expression index scan in the serial part cannot be gathered in order)
SELECT t FROM g ORDER BY lower(t) LIMIT 3;
-- system columns and whole-row references in the serial part: ctid is
-- the row's place on its member, a whole row is rebuilt on the coordinator
SELECT id, ctid IS NOT NULL AS has_ctid FROM g WHERE id = 1;
SELECT g FROM g WHERE id = 1;
SELECT row_to_json(g) FROM g WHERE id = 1;
-- a TID scan: each member looks at its own rows
SELECT id FROM g WHERE ctid = '(0,1)' ORDER BY id;
-- the same columns are fine in the parallel part
SELECT count(*) FROM (SELECT ctid, g FROM g) s;
SELECT id, t FROM g ORDER BY lower(t), id LIMIT 0;
-- values of a user-defined type (an enum holds OIDs, which differ between
-- members) travel in text form, with the type created on every member
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('CREATE TYPE er.mood AS ENUM (''sad'', ''ok'', ''happy'')');
CREATE TABLE e (id int, m mood);
INSERT INTO e VALUES (1, 'ok'), (2, 'happy'), (3, 'sad');
SELECT rdma_exchange.create_distributed_table('e', 'id');
SELECT * FROM e ORDER BY id;
SELECT count(*) FROM e WHERE m = 'ok';
SELECT count(*) FROM e;

-- ===== cursors =====
-- a NO SCROLL cursor cannot go back
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM g WHERE id < 5 ORDER BY id;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
ROLLBACK;
-- a SCROLL cursor can
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM g WHERE id < 5 ORDER BY id;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
ROLLBACK;
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT count(*) FROM g;
FETCH 1 FROM c;
FETCH BACKWARD 1 FROM c;
FETCH ABSOLUTE 1 FROM c;
ROLLBACK;

-- ===== cleanup =====
SET client_min_messages = warning;
DROP SCHEMA er CASCADE;
-- the schema and the plain tables created on the other members above
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('DROP SCHEMA IF EXISTS er CASCADE');
