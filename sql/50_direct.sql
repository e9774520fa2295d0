--
-- 50_direct: direct dispatch.  A query whose distributed tables are all
-- pinned to one owner by their distribution column runs on that member
-- alone (DIRECT); every other query keeps its distributed plan.  Each
-- query runs on distributed tables (schema dd) and on plain copies (schema
-- dl); rx_direct() reports whether the distributed one was routed and
-- whether the two answers are the same multiset of rows.  Keys cover
-- every member (this one and the others), NULL keys, keys with no rows,
-- several key types, bound parameters of generic plans, cursors, and a
-- transaction that reads its own writes.
--
SET client_min_messages = warning;
CREATE SCHEMA dd;
CREATE SCHEMA dl;
CREATE TABLE dd.t_int (k int, v int, s text);
CREATE TABLE dd.t_big (k bigint, v int, s text);
CREATE TABLE dd.t_text (k text, v int, s text);
CREATE TABLE dd.t_num (k numeric, v int, s text);
CREATE TABLE dd.t_uuid (k uuid, v int, s text);
CREATE TABLE dd.t_date (k date, v int, s text);
CREATE TABLE dd.t_vc (k varchar(20), v int, s text);
CREATE TABLE dd.t_int2 (k int, w int);
CREATE TABLE dd.r (id int PRIMARY KEY, name text);
-- three rows per key, every 50th key NULL
INSERT INTO dd.t_int SELECT CASE WHEN i % 50 = 0 THEN NULL ELSE i % 200 END, i, 's' || i FROM generate_series(1, 600) i;
INSERT INTO dd.t_big SELECT k::bigint * 1000000007, v, s FROM dd.t_int;
INSERT INTO dd.t_text SELECT 'key' || k, v, s FROM dd.t_int;
INSERT INTO dd.t_num SELECT k / 4.0, v, s FROM dd.t_int;
INSERT INTO dd.t_uuid SELECT md5(k::text)::uuid, v, s FROM dd.t_int;
INSERT INTO dd.t_date SELECT date '2020-01-01' + k, v, s FROM dd.t_int;
INSERT INTO dd.t_vc SELECT k, v, s FROM dd.t_text;
INSERT INTO dd.t_int2 SELECT i % 200, i FROM generate_series(1, 400) i;
INSERT INTO dd.r SELECT i, 'name' || i FROM generate_series(1, 600) i;
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['t_int', 't_big', 't_text', 't_num', 't_uuid', 't_date', 't_vc', 't_int2', 'r'] LOOP
    EXECUTE format('CREATE TABLE dl.%I AS SELECT * FROM dd.%I', t, t);
  END LOOP;
  FOREACH t IN ARRAY ARRAY['t_int', 't_big', 't_text', 't_num', 't_uuid', 't_date', 't_vc', 't_int2'] LOOP
    EXECUTE format('CREATE INDEX ON dd.%I (k)', t);
    EXECUTE format('CREATE INDEX ON dl.%I (k)', t);
    PERFORM rdma_exchange.create_distributed_table(format('dd.%I', t)::regclass, 'k');
  END LOOP;
END $$;
SELECT rdma_exchange.create_reference_table('dd.r');
ANALYZE;
RESET client_min_messages;

-- q on dd and on dl: 'direct' or 'distributed', and the same rows or not
CREATE FUNCTION public.rx_direct(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  top text; nd bigint; nl bigint; d1 bigint; d2 bigint;
BEGIN
  PERFORM set_config('search_path', 'dd, public', true);
  EXECUTE 'EXPLAIN (COSTS OFF) ' || q INTO top;
  EXECUTE 'CREATE TEMP TABLE rd AS ' || q;
  PERFORM set_config('search_path', 'dl, public', true);
  EXECUTE 'CREATE TEMP TABLE rl AS ' || q;
  SELECT count(*) INTO nd FROM rd;
  SELECT count(*) INTO nl FROM rl;
  SELECT count(*) INTO d1 FROM (SELECT * FROM rd EXCEPT ALL SELECT * FROM rl) s;
  SELECT count(*) INTO d2 FROM (SELECT * FROM rl EXCEPT ALL SELECT * FROM rd) s;
  DROP TABLE rd;
  DROP TABLE rl;
  RETURN format('%s, %s rows, %s',
                CASE WHEN top LIKE '%DIRECT%' THEN 'direct' ELSE 'distributed' END, nd,
                CASE WHEN nd = nl AND d1 = 0 AND d2 = 0 THEN 'same'
                     ELSE format('DIFFERENT (plain server: %s rows, %s extra, %s missing)', nl, d1, d2) END);
END $$ SET search_path = public;

-- the same query for a list of keys: how many were routed, how many
-- answered as the plain server did (a difference is raised as a NOTICE)
CREATE FUNCTION public.rx_direct_keys(q text, keys text[]) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  key text; r text; routed int := 0; same int := 0;
BEGIN
  FOREACH key IN ARRAY keys LOOP
    r := public.rx_direct(replace(q, '$key', key));
    IF r LIKE 'direct%' THEN routed := routed + 1; END IF;
    IF r LIKE '%, same' THEN same := same + 1;
    ELSE RAISE NOTICE '%: %', replace(q, '$key', key), r; END IF;
  END LOOP;
  RETURN format('%s keys: %s direct, %s same', array_length(keys, 1), routed, same);
END $$;

-- ===== routed: one owner =====
-- every key 0..29 (all members; key 0 has NULL neighbours), and keys with no rows
SELECT rx_direct_keys('SELECT * FROM t_int WHERE k = $key', array(SELECT g::text FROM generate_series(0, 29) g));
SELECT rx_direct_keys('SELECT * FROM t_int WHERE k = $key', ARRAY['-1', '1000', '2147483647']);
SELECT rx_direct_keys('SELECT * FROM t_big WHERE k = $key', array(SELECT (g::bigint * 1000000007)::text FROM generate_series(0, 29) g));
SELECT rx_direct_keys('SELECT * FROM t_text WHERE k = $key', array(SELECT quote_literal('key' || g) FROM generate_series(0, 29) g));
SELECT rx_direct_keys('SELECT * FROM t_num WHERE k = $key', array(SELECT (g / 4.0)::text FROM generate_series(0, 29) g));
SELECT rx_direct_keys('SELECT * FROM t_uuid WHERE k = $key', array(SELECT quote_literal(md5(g::text)) FROM generate_series(0, 29) g));
SELECT rx_direct_keys('SELECT * FROM t_date WHERE k = $key', array(SELECT quote_literal(date '2020-01-01' + g) FROM generate_series(0, 29) g));
-- a key of another type that the column's hash family compares with it
-- (the family hashes equal values alike): integer and smallint keys of a
-- bigint column (an integer literal is an integer), bigint and smallint
-- keys of an integer column, text keys of a varchar column; an IN list
-- of integers over a bigint column
SELECT rx_direct_keys('SELECT * FROM t_big WHERE k = $key', ARRAY['0', '1000000007', '2000000014', '-7', '0::smallint', '1000000007::bigint']);
SELECT rx_direct_keys('SELECT * FROM t_int WHERE k = $key', ARRAY['3::bigint', '4::smallint', '-5::bigint', '5000000000']);
SELECT rx_direct_keys('SELECT * FROM t_vc WHERE k = $key', ARRAY['''key3''::text', '''key4''', '''key5 ''', '''nokey''']);
SELECT rx_direct_keys('SELECT * FROM t_big WHERE k IN ($key)', ARRAY['1000000007', '2000000014, 2000000014::bigint']);
SELECT rx_direct_keys('SELECT * FROM t_big WHERE k = ANY($key)', ARRAY['ARRAY[0]', '''{1000000007, null}''::int[]']);
-- aggregates, ORDER BY and LIMIT, a reference table, co-located tables
SELECT rx_direct_keys('SELECT count(*), sum(v), min(s), max(v) FROM t_int WHERE k = $key', ARRAY['3', '4', '5', '1000']);
SELECT rx_direct_keys('SELECT v, s FROM t_int WHERE k = $key ORDER BY v DESC LIMIT 2', ARRAY['3', '4', '5']);
-- a sort key not in the select list (a resjunk column of the plan)
SELECT rx_direct_keys('SELECT v FROM t_int WHERE k = $key ORDER BY s DESC', ARRAY['3', '4', '5', '6']);
SELECT rx_direct_keys('SELECT t.k, t.v, r.name FROM t_int t JOIN r ON r.id = t.v WHERE t.k = $key', ARRAY['3', '4', '5']);
SELECT rx_direct_keys('SELECT a.v, b.w FROM t_int a JOIN t_int2 b ON a.k = b.k WHERE a.k = $key', ARRAY['3', '4', '5']);
SELECT rx_direct_keys('SELECT a.v, b.w FROM t_int a LEFT JOIN t_int2 b ON a.k = b.k WHERE a.k = $key', ARRAY['3', '4', '199']);
SELECT rx_direct_keys('SELECT k, count(*) FROM t_int WHERE k = $key AND v > 100 GROUP BY k', ARRAY['3', '4', '5']);
SELECT rx_direct_keys('SELECT s FROM t_text WHERE k = $key UNION SELECT s FROM t_text WHERE k = $key', ARRAY['''key3''', '''key4''']);
-- an IN list whose keys have one owner
SELECT rx_direct(format('SELECT * FROM t_int WHERE k IN (%s)', string_agg(g::text, ', ')))
  FROM (SELECT g FROM generate_series(1, 40) g
        WHERE rdma_exchange.member_index_of(g) = rdma_exchange.member_index_of(1) LIMIT 3) s;

-- ===== not routed: rows of several members =====
SELECT rx_direct(format('SELECT * FROM t_int WHERE k IN (%s)', string_agg(g::text, ', ')))
  FROM (SELECT DISTINCT ON (rdma_exchange.member_index_of(g)) g FROM generate_series(1, 40) g) s;
SELECT rx_direct(format('SELECT a.v, b.w FROM t_int a, t_int2 b WHERE a.k = %s AND b.k = %s', x, y))
  FROM (SELECT min(g) FILTER (WHERE rdma_exchange.member_index_of(g) = 0) x,
               min(g) FILTER (WHERE rdma_exchange.member_index_of(g) = 1) y
        FROM generate_series(1, 40) g) s;
SELECT rx_direct('SELECT * FROM t_int WHERE k BETWEEN 3 AND 5');
SELECT rx_direct('SELECT * FROM t_int WHERE k = 3 OR k = 4');
SELECT rx_direct('SELECT * FROM t_int WHERE k IS NULL');
SELECT rx_direct('SELECT * FROM t_int WHERE v = 3');
SELECT rx_direct('SELECT a.v, b.w FROM t_int a JOIN t_int2 b ON a.v = b.w WHERE a.k = 3');
-- (a hash semi join whose outer rows on a member are that member's own:
-- its first outer row must survive the wait for the inner side)
SELECT rx_direct('SELECT * FROM t_int WHERE k = 3 AND v IN (SELECT w FROM t_int2)');

-- ===== bound parameters: generic plans choose the member at execution =====
SET plan_cache_mode = force_generic_plan;
PREPARE dq(int) AS SELECT v, s FROM dd.t_int WHERE k = $1 ORDER BY v;
PREPARE lq(int) AS SELECT v, s FROM dl.t_int WHERE k = $1 ORDER BY v;
CREATE FUNCTION public.sum_d(key int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN RETURN (SELECT sum(v) FROM dd.t_int WHERE k = key); END $$;
CREATE FUNCTION public.sum_l(key int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN RETURN (SELECT sum(v) FROM dl.t_int WHERE k = key); END $$;
CREATE FUNCTION public.rows_d(key int) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT v, s FROM dd.t_int WHERE k = key ORDER BY v LOOP
    RETURN NEXT r.v || ' ' || r.s;
  END LOOP;
END $$;
CREATE FUNCTION public.rows_l(key int) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT v, s FROM dl.t_int WHERE k = key ORDER BY v LOOP
    RETURN NEXT r.v || ' ' || r.s;
  END LOOP;
END $$;
SELECT count(*) AS keys,
       count(*) FILTER (WHERE sum_d(g) IS DISTINCT FROM sum_l(g)) AS different_sums,
       count(*) FILTER (WHERE array(SELECT rows_d(g)) <> array(SELECT rows_l(g))) AS different_rows
  FROM generate_series(-1, 40) g;
EXECUTE dq(3);
EXECUTE lq(3);
EXECUTE dq(4);
EXECUTE dq(NULL);
SELECT rx_try('EXPLAIN (COSTS OFF) EXECUTE dq(3)');
-- an integer parameter, a bigint column
PREPARE dqb(int) AS SELECT v, s FROM dd.t_big WHERE k = $1 ORDER BY v;
PREPARE lqb(int) AS SELECT v, s FROM dl.t_big WHERE k = $1 ORDER BY v;
EXECUTE dqb(1000000007);
EXECUTE lqb(1000000007);
EXECUTE dqb(2000000014);
DEALLOCATE dqb;
DEALLOCATE lqb;
RESET plan_cache_mode;
DEALLOCATE dq;
DEALLOCATE lq;

-- ===== EXPLAIN =====
CREATE FUNCTION public.rx_direct_explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE q LOOP
    line := regexp_replace(line, '\(([^():]+):[0-9]+\)', '(\1:<port>)', 'g');
    line := regexp_replace(line, 'member [0-9] ', 'member N ', 'g');
    line := regexp_replace(line, '[0-9]+\.[0-9]+ ms', 'N ms', 'g');
    line := regexp_replace(line, 'actual time=[0-9.]+', 'actual time=N', 'g');
    RETURN NEXT line;
  END LOOP;
END $$;
SET search_path = dd, public;
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) SELECT v FROM t_int WHERE k = 7');
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) SELECT t.v, r.name FROM t_int t JOIN r ON r.id = t.v WHERE t.k = 7 ORDER BY 1');
SELECT rx_direct_explain('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT v FROM t_int WHERE k = 7');
-- a generic plan: the local plan for a key of this member, the text for
-- another owner (EXPLAIN ANALYZE sends the plan, to count its rows)
SET plan_cache_mode = force_generic_plan;
PREPARE eq(int) AS SELECT v, s FROM t_int WHERE k = $1 ORDER BY v;
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) EXECUTE eq(7)');
SELECT rx_direct_explain('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE eq(7)');
DEALLOCATE eq;
RESET plan_cache_mode;
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) SELECT v FROM t_int WHERE k BETWEEN 7 AND 8');
-- VERBOSE names the local plan's columns
SELECT rx_direct_explain('EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM t_int WHERE k = 7 ORDER BY s');
-- this member's rows: PostgreSQL's local plan runs here
SELECT rx_direct_explain(format('EXPLAIN (COSTS OFF) SELECT v FROM t_int WHERE k = %s',
                                (SELECT min(g) FROM generate_series(1, 40) g
                                  WHERE rdma_exchange.member_index_of(g) = 0))) LIMIT 1;
SET rdma_exchange.direct_dispatch = off;
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) SELECT v FROM t_int WHERE k = 7') LIMIT 1;
RESET rdma_exchange.direct_dispatch;

-- ===== a lookup of another member's key goes there as SQL =====
-- Not planned here: its owner plans it (EXPLAIN plans it here, as above;
-- EXPLAIN EXECUTE of a custom plan shows what is sent)
SELECT min(g) AS other_key FROM generate_series(1, 40) g WHERE rdma_exchange.member_index_of(g) <> 0 \gset
PREPARE sq(int) AS SELECT v, s FROM t_int WHERE k = $1 AND v > 0 ORDER BY v DESC LIMIT 2;
SELECT rx_direct_explain(format('EXPLAIN (COSTS OFF) EXECUTE sq(%s)', :other_key));
EXECUTE sq(:other_key);
SET rdma_exchange.direct_sql = off;
SELECT rx_direct_explain(format('EXPLAIN (COSTS OFF) EXECUTE sq(%s)', :other_key)) LIMIT 3;
EXECUTE sq(:other_key);
RESET rdma_exchange.direct_sql;
DEALLOCATE sq;
-- the statement's settings, timestamps and session values are the owner's too
SET datestyle = 'SQL, DMY';
SET extra_float_digits = 0;
SET app.tag = 'tag-1';
SELECT rx_direct_keys('SELECT k, k::text AS kt, v / 3.0::float8 AS third, now()::text AS ts, statement_timestamp() = now() AS same_ts, current_setting(''app.tag'') AS tag FROM t_date WHERE k = $key', array(SELECT quote_literal(date '2020-01-01' + g) FROM generate_series(0, 29) g));
SELECT rx_direct_keys('SELECT count(*), sum(v), max(s), string_agg(s, '','' ORDER BY v) FROM t_text WHERE k = $key AND v > 100 GROUP BY k HAVING count(*) > 0', array(SELECT quote_literal('key' || g) FROM generate_series(0, 29) g));
RESET datestyle;
RESET extra_float_digits;
RESET app.tag;
-- functions that answer for the session running them stay here
SELECT pg_backend_pid() AS coordinator_pid \gset
SELECT v, pg_backend_pid() = :coordinator_pid AS here FROM dd.t_int WHERE k = :other_key ORDER BY v;
-- privileges are checked here, row-level security applied by the owner,
-- for the same role
SET client_min_messages = warning;
CREATE ROLE regress_rx_sq LOGIN;
GRANT USAGE ON SCHEMA dd TO regress_rx_sq;
GRANT SELECT (k, v) ON dd.t_int TO regress_rx_sq;
CREATE TABLE dd.t_pol (k int, v int);
INSERT INTO dd.t_pol SELECT i % 40, i FROM generate_series(1, 400) i;
SELECT rdma_exchange.create_distributed_table('dd.t_pol', 'k');
ALTER TABLE dd.t_pol ENABLE ROW LEVEL SECURITY;
CREATE POLICY low ON dd.t_pol USING (v < 200);
GRANT SELECT ON dd.t_pol TO regress_rx_sq;
RESET client_min_messages;
SET ROLE regress_rx_sq;
SELECT v FROM dd.t_int WHERE k = :other_key ORDER BY v;
SELECT s FROM dd.t_int WHERE k = :other_key;
SELECT k, v FROM dd.t_pol WHERE k = 20 ORDER BY v;
SELECT k, v FROM dd.t_pol WHERE k = :other_key ORDER BY v;
RESET ROLE;
SELECT count(*) FROM dd.t_pol WHERE k = :other_key;
DROP TABLE dd.t_pol;
REVOKE ALL ON dd.t_int FROM regress_rx_sq;
REVOKE ALL ON SCHEMA dd FROM regress_rx_sq;
DROP ROLE regress_rx_sq;

-- ===== min/max and top-N over an index: each member reads its index =====
SET client_min_messages = warning;
CREATE TABLE dd.big (id int PRIMARY KEY, v int);
INSERT INTO dd.big SELECT i, i % 7 FROM generate_series(1, 20000) i;
CREATE TABLE dl.big AS SELECT * FROM dd.big;
SELECT rdma_exchange.create_distributed_table('dd.big', 'id');
ANALYZE dd.big, dl.big;
RESET client_min_messages;
SELECT rx_direct('SELECT min(id), max(id) FROM big');
SELECT rx_direct('SELECT min(id), max(id) FROM big WHERE v = 3');
SELECT rx_direct('SELECT id FROM big ORDER BY id DESC LIMIT 5');
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) SELECT max(id) FROM big');

-- ===== cursors: fetched in batches, rewound =====
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT v FROM t_int WHERE k = 7 ORDER BY v;
FETCH 1 FROM c;
FETCH 1 FROM c;
FETCH 5 FROM c;
FETCH BACKWARD 2 FROM c;
CLOSE c;
DECLARE c2 CURSOR FOR SELECT v FROM t_int WHERE k = 8 ORDER BY v;
FETCH 1 FROM c2;
COMMIT;

-- a cursor over another member's rows in a transaction that wrote there,
-- fetched in batches around another statement to that member
SELECT min(g) FILTER (WHERE rdma_exchange.member_index_of(g) = 1) AS k1a,
       max(g) FILTER (WHERE rdma_exchange.member_index_of(g) = 1) AS k1b
  FROM generate_series(1, 30) g \gset
BEGIN;
INSERT INTO t_int VALUES (:k1a, 5000, 'cursor');
DECLARE c3 CURSOR FOR SELECT v FROM t_int WHERE k = :k1a ORDER BY v;
FETCH 2 FROM c3;
UPDATE t_int SET v = v + 1 WHERE k = :k1b;
FETCH 5 FROM c3;
SELECT count(*) FROM t_int WHERE k = :k1b AND v % 200 = :k1b + 1;
ROLLBACK;

-- ===== the statement's time and settings travel with it =====
BEGIN;
CREATE TEMP TABLE seen AS
  SELECT now() AS n, statement_timestamp() AS st, current_setting('app.tenant', true) AS tenant, k
    FROM t_int WHERE k IN (7, 8, 9) AND v < 200;
SELECT count(*), bool_and(n = now()) AS same_now, count(DISTINCT st) AS statement_times FROM seen;
ROLLBACK;
SET app.tenant = 'acme';
SELECT k, current_setting('app.tenant') FROM t_int WHERE k = 7 LIMIT 1;
SELECT k, current_setting('app.tenant') FROM t_int WHERE k = 8 LIMIT 1;
RESET app.tenant;
-- a key computed from the statement's settings or time, as a multi-tenant
-- application computes its tenant's: routed, the member chosen at execution
SET app.tenant = '7';
SELECT rx_direct('SELECT k, v FROM t_int WHERE k = current_setting(''app.tenant'')::int');
SELECT rx_direct('SELECT k, v FROM t_big WHERE k = current_setting(''app.tenant'')::bigint * 1000000007');
SET app.tenant = '8';
SELECT rx_direct('SELECT k, v FROM t_int WHERE k = current_setting(''app.tenant'')::int');
RESET app.tenant;
SELECT rx_direct('SELECT k, v FROM t_date WHERE k = date ''2020-01-01'' + (extract(year from now()) > 2000)::int * 5');
-- not a volatile one
SELECT rx_direct('SELECT count(*) FROM t_int WHERE k = (random() * 0)::int');
-- what the session's own functions say is the session's, not a member's:
-- they stay here
SELECT count(*) AS rows,
       count(*) FILTER (WHERE pid IS DISTINCT FROM (SELECT pg_backend_pid())) AS other_pids,
       count(*) FILTER (WHERE port IS DISTINCT FROM (SELECT inet_server_port())) AS other_ports
  FROM (SELECT pg_backend_pid() AS pid, inet_server_port() AS port FROM t_int WHERE k = 7
        UNION ALL SELECT pg_backend_pid(), inet_server_port() FROM t_int WHERE k = 8
        UNION ALL SELECT pg_backend_pid(), inet_server_port() FROM t_int WHERE k = 9
        UNION ALL SELECT pg_backend_pid(), inet_server_port() FROM t_int WHERE v < 50) s;
SET DateStyle = 'SQL, DMY';
SELECT k, v FROM t_date WHERE k = '03/01/2020' ORDER BY v;
SELECT k, v FROM t_date WHERE k = '04/01/2020' ORDER BY v;
RESET DateStyle;

-- ===== a transaction reads its own writes on every member =====
BEGIN;
INSERT INTO t_int SELECT g, 1000 + g, 'new' FROM generate_series(1, 6) g;
SELECT k, count(*), max(v) FROM t_int WHERE k = 1 GROUP BY k;
SELECT k, count(*), max(v) FROM t_int WHERE k = 2 GROUP BY k;
SELECT k, count(*), max(v) FROM t_int WHERE k = 3 GROUP BY k;
SELECT k, count(*), max(v) FROM t_int WHERE k = 4 GROUP BY k;
UPDATE t_int SET v = -v WHERE k = 5 AND s = 'new';
SELECT v FROM t_int WHERE k = 5 ORDER BY v LIMIT 1;
ROLLBACK;
SELECT count(*) FROM t_int WHERE k = 5 AND s = 'new';
-- UPDATE, DELETE and FOR UPDATE by an integer key of a bigint column
BEGIN;
UPDATE dd.t_big SET v = -v WHERE k = 1000000007;
UPDATE dl.t_big SET v = -v WHERE k = 1000000007;
DELETE FROM dd.t_big WHERE k = 2000000014;
DELETE FROM dl.t_big WHERE k = 2000000014;
SELECT v FROM dd.t_big WHERE k = 1000000007 ORDER BY v LIMIT 2 FOR UPDATE;
SELECT rx_direct('SELECT k, v FROM t_big WHERE k IN (0, 1000000007, 2000000014)');
SELECT rx_direct('SELECT k, v FROM t_big WHERE k = 1000000007');
-- by a key computed from the session's setting: the owner only
SET LOCAL app.tenant = '1000000007';
SELECT rx_direct_explain('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) UPDATE dd.t_big SET v = v + 1 WHERE k = current_setting(''app.tenant'')::bigint');
UPDATE dl.t_big SET v = v + 1 WHERE k = current_setting('app.tenant')::bigint;
DELETE FROM dd.t_big WHERE k = current_setting('app.tenant')::bigint AND v = -200;
DELETE FROM dl.t_big WHERE k = current_setting('app.tenant')::bigint AND v = -200;
SELECT rx_direct('SELECT k, v FROM t_big WHERE k IN (0, 1000000007, 2000000014)');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM t_int WHERE k = 6;
SELECT count(*) FROM t_int WHERE k = 7;
SELECT count(*) FROM t_int;
COMMIT;
-- ===== small results: each member runs its part as a query, no exchange =====
-- (not routed to one member: rx_direct() says 'distributed')
SELECT rx_direct('SELECT EXISTS (SELECT FROM t_int WHERE v = 77)');
SELECT rx_direct('SELECT count(*), sum(v), min(s), max(v) FROM t_int WHERE v < 100');
SELECT rx_direct('SELECT k, v, s FROM t_uuid WHERE v BETWEEN 10 AND 40');
SELECT rx_direct('SELECT k, v FROM t_date ORDER BY k DESC NULLS LAST, v LIMIT 7');
SELECT rx_direct('SELECT k, v FROM t_num WHERE k IS NULL');
SELECT rx_direct('SELECT t.k, r.name FROM t_int t JOIN r ON r.id = t.v WHERE t.v < 20');
SELECT rx_direct('SELECT g, (SELECT count(*) FROM t_int WHERE v = g) FROM generate_series(1, 5) g');
SELECT rx_direct_explain('EXPLAIN (COSTS OFF) SELECT count(*) FROM t_int WHERE v < 100');
-- min and max over an index: the two gathers go out in one round trip;
-- one sent early whose rows are never needed raises nothing
SELECT rx_direct('SELECT min(k), max(k) FROM t_int');
SELECT CASE WHEN now() < '2000-01-01' THEN (SELECT max(k) FROM t_int WHERE 1 / (v - v) > 0) END AS never,
       (SELECT min(k) FROM t_int) AS least_key;
\set VERBOSITY terse
SELECT CASE WHEN now() > '2000-01-01' THEN (SELECT max(k) FROM t_int WHERE 1 / (v - v) > 0) END AS always;
\set VERBOSITY default
SELECT min(k), max(k) FROM t_int;
-- floats come back exact whatever extra_float_digits says: the members'
-- partial sums add up as one server's sum does
SET extra_float_digits = 0;
SELECT rx_direct('SELECT sum(v / 7.0::float8), avg(v * 0.1::float8) FROM t_int WHERE v < 100');
SELECT rx_direct('SELECT k, sum(v / 7.0::float8) FROM t_int WHERE v < 100 GROUP BY k');
SELECT rx_direct_keys('SELECT v / 7.0::float8, (v / 7.0::float8)::text FROM t_int WHERE k = $key', ARRAY['3', '4', '5']);
RESET extra_float_digits;
-- the same answers through the transport
SET rdma_exchange.small_gather_rows = 0;
SELECT rx_direct('SELECT count(*), sum(v), min(s), max(v) FROM t_int WHERE v < 100');
SELECT rx_direct('SELECT k, v FROM t_date ORDER BY k DESC NULLS LAST, v LIMIT 7');
RESET rdma_exchange.small_gather_rows;
-- a transaction reads its own writes on every member
BEGIN;
INSERT INTO t_int SELECT g, 2000 + g, 'mine' FROM generate_series(1, 9) g;
SELECT count(*), sum(v) FROM t_int WHERE s = 'mine';
SELECT k, v FROM t_int WHERE s = 'mine' ORDER BY v DESC LIMIT 3;
ROLLBACK;
SELECT count(*) FROM t_int WHERE s = 'mine';
-- an error in a member's part ends the query; the next one runs
\set VERBOSITY terse
SELECT count(*) FROM t_int WHERE 100 / (v - 300) > 0;
\set VERBOSITY default
SELECT count(*) FROM t_int WHERE v < 100;

-- ===== keyed lookups: a rescan reads the rows of its key's owner only =====
-- A correlated subquery or a nested loop's inner side that reads a
-- distributed table by its distribution column, in the serial part of a
-- plan.  rx_keyed() says whether the RECEIVE read by key, whether it ran
-- lookups here and on other members, whether it went on to gather the
-- table, and rx_direct()'s comparison with the plain server.
CREATE FUNCTION public.rx_keyed(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text; keyed bool := false; gathered bool := false; here bigint := 0; there bigint := 0;
  batched bool := false;
BEGIN
  PERFORM set_config('search_path', 'dd, public', true);
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    keyed := keyed OR line LIKE '%Keyed Lookup:%';
    gathered := gathered OR line LIKE '%Gathered:%';
    IF line ~ 'Lookups Here: ' THEN here := here + substring(line from 'Lookups Here: (\d+)')::bigint; END IF;
    IF line ~ 'Lookups on Other Members: ' THEN there := there + substring(line from 'Lookups on Other Members: (\d+)')::bigint; END IF;
    IF line ~ 'Batch Messages: ' THEN there := there + substring(line from 'Batch Messages: (\d+)')::bigint; END IF;
    batched := batched OR line LIKE '%Lookups in Batches:%';
  END LOOP;
  RETURN format('%s%s%s, lookups here: %s, on other members: %s | %s',
                CASE WHEN keyed THEN 'keyed' ELSE 'not keyed' END,
                CASE WHEN batched THEN ', in batches' ELSE '' END,
                CASE WHEN gathered THEN ', then gathered' ELSE '' END,
                CASE WHEN here > 0 THEN 'some' ELSE 'none' END,
                CASE WHEN there > 0 THEN 'some' ELSE 'none' END,
                public.rx_direct(q));
END $$ SET search_path = public;
-- every key type (index and bitmap scans), a NULL key, a LATERAL join
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = r.id) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT id, (SELECT sum(v) FROM t_big t WHERE t.k = r.id::bigint * 1000000007) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT id, (SELECT max(s) FROM t_text t WHERE t.k = ''key'' || r.id) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_num t WHERE t.k = r.id / 4.0) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_uuid t WHERE t.k = md5(r.id::text)::uuid) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_date t WHERE t.k = date ''2020-01-01'' + r.id) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = NULLIF(r.id % 5, 0)) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT r.id, x.v FROM r, LATERAL (SELECT v FROM t_int t WHERE t.k = r.id ORDER BY v LIMIT 2) x WHERE r.id < 15');
-- a nested loop's lookups go in batches (a LOOKAHEAD reads its outer rows
-- ahead): joins, NULL keys, keys with no row, 600 outer rows in growing
-- batches, a LIMIT above the loop
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT rx_keyed('SELECT r.id, t.v, t.s FROM r LEFT JOIN t_int t ON t.k = r.id WHERE r.id <= 30');
SELECT rx_keyed('SELECT r.id, t.v FROM r LEFT JOIN t_text t ON t.k = ''key'' || r.id');
SELECT rx_keyed('SELECT r.id, t.v FROM r LEFT JOIN t_int t ON t.k = NULLIF(r.id % 5, 0) WHERE r.id <= 40');
SELECT rx_keyed('SELECT r.id FROM r WHERE NOT EXISTS (SELECT 1 FROM t_uuid t WHERE t.k = md5(r.id::text)::uuid AND t.v > 300)');
SELECT rx_keyed('SELECT r.id FROM r WHERE EXISTS (SELECT 1 FROM t_date t WHERE t.k = date ''2020-01-01'' + r.id AND t.v % 3 = 0)');
SELECT rx_keyed('SELECT r.id, t.v FROM r LEFT JOIN t_big t ON t.k = r.id::bigint * 1000000007 ORDER BY r.id, t.v LIMIT 7');
-- an integer key of a bigint column
SELECT rx_keyed('SELECT r.id, t.v FROM r LEFT JOIN t_big t ON t.k = (r.id % 3) * 1000000007 WHERE r.id <= 30');
EXPLAIN (COSTS OFF) SELECT r.id, t.v FROM r LEFT JOIN t_int t ON t.k = r.id WHERE r.id <= 30;
-- an error in a batch ends the query; the next one runs
\set VERBOSITY terse
SELECT r.id, t.v FROM r LEFT JOIN t_int t ON t.k = r.id AND 1 / (t.v - t.v) = 1 WHERE r.id <= 30;
\set VERBOSITY default
SELECT count(*), sum(t.v) FROM r LEFT JOIN t_int t ON t.k = r.id WHERE r.id <= 30;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- more rescans than gathering the table costs: the RECEIVE gathers it
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = r.id % 200) FROM r');
-- a transaction reads its own writes (its session on each member)
BEGIN;
UPDATE dd.t_int SET v = v + 1000 WHERE k IN (3, 4, 5, 6, 7);
UPDATE dl.t_int SET v = v + 1000 WHERE k IN (3, 4, 5, 6, 7);
SELECT rx_keyed('SELECT id, (SELECT sum(v) FROM t_int t WHERE t.k = r.id) FROM r WHERE id <= 12');
SELECT rx_keyed('SELECT r.id, x.v FROM r, LATERAL (SELECT v FROM t_int t WHERE t.k = r.id ORDER BY v LIMIT 2) x WHERE r.id < 15');
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SELECT rx_keyed('SELECT r.id, t.v FROM r LEFT JOIN t_int t ON t.k = r.id WHERE r.id <= 30');
ROLLBACK;
-- a generic plan: the key takes a bound parameter too
SET plan_cache_mode = force_generic_plan;
PREPARE keyed_p(int) AS SELECT id, (SELECT sum(v) FROM t_int t WHERE t.k = r.id + $1) FROM r WHERE id <= 12 ORDER BY id;
EXECUTE keyed_p(5);
DEALLOCATE keyed_p;
RESET plan_cache_mode;
-- a cursor fetched in batches
BEGIN;
DECLARE keyed_c CURSOR FOR SELECT id, (SELECT sum(v) FROM t_int t WHERE t.k = r.id) FROM r WHERE id <= 8 ORDER BY id;
FETCH 3 FROM keyed_c;
FETCH ALL FROM keyed_c;
COMMIT;
-- ... and a nested loop's batches, fetched row by row, with a write
-- after the first batch to rows of a later one: the cursor reads as of
-- its start, on the cluster as on the plain tables
CREATE FUNCTION public.rx_cursor_write(s text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c refcursor; rec record; n int := 0; total bigint := 0;
BEGIN
  PERFORM set_config('enable_hashjoin', 'off', true);
  PERFORM set_config('enable_mergejoin', 'off', true);
  OPEN c FOR EXECUTE format('SELECT r.id, t.v FROM %I.r LEFT JOIN %I.t_int t ON t.k = r.id WHERE r.id BETWEEN 140 AND 205 ORDER BY r.id', s, s);
  LOOP
    FETCH c INTO rec;
    EXIT WHEN NOT FOUND;
    n := n + 1;
    total := total + coalesce(rec.v, 0);
    IF n = 4 THEN
      EXECUTE format('UPDATE %I.t_int SET v = v + 1000 WHERE k = 190', s);
    END IF;
  END LOOP;
  CLOSE c;
  RETURN format('%s rows, sum %s', n, total);
END $$;
BEGIN;
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT r.id, t.v FROM dd.r LEFT JOIN dd.t_int t ON t.k = r.id WHERE r.id BETWEEN 140 AND 205 ORDER BY r.id;
SELECT rx_cursor_write('dd') AS cluster, rx_cursor_write('dl') AS plain;
ROLLBACK;
DROP FUNCTION public.rx_cursor_write(text);
-- an error in a lookup ends the query; the next one runs
\set VERBOSITY terse
SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = r.id AND 1 / (t.v - t.v) = 1) FROM r WHERE id <= 12;
\set VERBOSITY default
SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = r.id) FROM r WHERE id <= 3 ORDER BY id;
-- off: the table is gathered once, as before
SET rdma_exchange.keyed_lookups = off;
SELECT rx_keyed('SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = r.id) FROM r WHERE id <= 12');
RESET rdma_exchange.keyed_lookups;
EXPLAIN (COSTS OFF) SELECT id, (SELECT count(*) FROM t_int t WHERE t.k = r.id) FROM r WHERE id <= 12;

RESET search_path;
DROP FUNCTION public.rx_keyed(text);
DROP FUNCTION public.rx_direct_explain(text);
DROP FUNCTION public.rx_direct_keys(text, text[]);
DROP FUNCTION public.rx_direct(text);
DROP FUNCTION public.sum_d(int);
DROP FUNCTION public.sum_l(int);
DROP FUNCTION public.rows_d(int);
DROP FUNCTION public.rows_l(int);
