-- test/paths/070_time.sql: one transaction, one clock.  now(),
-- current_timestamp, transaction_timestamp(), statement_timestamp(),
-- localtimestamp and current_date are the same everywhere in a statement
-- (and now() in the whole transaction), as PostgreSQL's parallel workers
-- see the leader's.  The issue: a count of rows WHERE now() = :'now' was 0,
-- and CREATE TABLE AS SELECT now() FROM orders gave 3 distinct values.
-- pg_sleep between statements makes a fragment's own clock differ from
-- the transaction's.  No time is printed, only booleans and counts; psql
-- echoes a statement after variable interpolation, so the statements with
-- a :'t0' run under \set ECHO none.

-- case: time_now_gset_same_transaction
BEGIN;
SELECT now() AS t0 \gset
SELECT pg_sleep(0.05);
\set ECHO none
SELECT count(*) FROM orders WHERE now() = :'t0';
SELECT count(*) FROM orders WHERE now() = :'t0'::timestamptz AND o_orderkey % 2 = 0;
\set ECHO queries
COMMIT;

-- case: time_now_temp_table_distinct
BEGIN;
SELECT pg_sleep(0.05);
CREATE TEMP TABLE x AS SELECT now() t FROM orders;
SELECT count(*), count(DISTINCT t), bool_and(t = now()) FROM x;
COMMIT;

-- case: time_current_timestamp_grouped
BEGIN;
SELECT pg_sleep(0.05);
SELECT count(*), count(DISTINCT current_timestamp) FROM orders;
SELECT count(DISTINCT t) FROM (SELECT current_timestamp t, o_custkey FROM orders GROUP BY 1, 2) s;
COMMIT;

-- case: time_transaction_timestamp
BEGIN;
SELECT transaction_timestamp() AS t0 \gset
SELECT pg_sleep(0.05);
\set ECHO none
SELECT count(*) FROM orders WHERE transaction_timestamp() = :'t0';
\set ECHO queries
SELECT bool_and(transaction_timestamp() = now()) FROM lineitem;
COMMIT;

-- case: time_statement_timestamp
-- statement_timestamp() is one value in a statement, later than now()
BEGIN;
SELECT pg_sleep(0.05);
SELECT count(DISTINCT statement_timestamp()), bool_and(statement_timestamp() > now()) FROM orders;
CREATE TEMP TABLE st AS SELECT statement_timestamp() s, clock_timestamp() c FROM orders;
SELECT count(DISTINCT s), bool_and(s > now()) FROM st;
COMMIT;

-- case: time_localtimestamp_current_date
BEGIN;
SELECT localtimestamp AS lt, current_date AS cd, current_time AS ct \gset
SELECT pg_sleep(0.05);
\set ECHO none
SELECT count(*) FROM orders WHERE localtimestamp = :'lt'::timestamp;
SELECT count(*) FROM orders WHERE current_date = :'cd'::date;
\set ECHO queries
SELECT count(DISTINCT localtime), count(DISTINCT current_time) FROM orders;
COMMIT;

-- case: time_now_in_filter_against_column
-- a row comparison the fragments evaluate: o_tstz is in the past for
-- every row under any clock, the day difference must agree
BEGIN;
SELECT pg_sleep(0.05);
SELECT count(*) FROM orders WHERE o_tstz < now();
SELECT count(DISTINCT (now() - o_tstz) - (now() - o_tstz)) FROM orders;
SELECT count(DISTINCT now() - o_tstz) = count(DISTINCT o_tstz) FROM orders;
COMMIT;

-- case: time_now_in_aggregate_expression
BEGIN;
SELECT pg_sleep(0.05);
SELECT count(DISTINCT extract(epoch FROM now()) - o_orderkey) FROM orders;
SELECT min(now()) = max(now()) FROM orders JOIN customer ON o_custkey = c_custkey;
COMMIT;

-- case: time_now_in_join_condition
BEGIN;
SELECT pg_sleep(0.05);
CREATE TEMP TABLE stamp AS SELECT now() AS t;
SELECT count(*) FROM orders, stamp WHERE stamp.t = now();
COMMIT;

-- case: time_now_across_statements
-- now() stays the transaction's across statements and cursors
BEGIN;
CREATE TEMP TABLE a AS SELECT DISTINCT now() t FROM orders;
SELECT pg_sleep(0.05);
CREATE TEMP TABLE b AS SELECT DISTINCT now() t FROM lineitem;
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b), (SELECT t FROM a) = (SELECT t FROM b);
COMMIT;

-- case: time_now_in_cursor
BEGIN;
SELECT now() AS t0 \gset
\set ECHO none
DECLARE c CURSOR FOR SELECT o_orderkey, now() = :'t0' FROM orders ORDER BY o_orderkey;
\set ECHO queries
SELECT pg_sleep(0.05);
FETCH 3 FROM c;
SELECT pg_sleep(0.05);
FETCH 3 FROM c;
COMMIT;

-- case: time_now_in_plpgsql
DO $$
DECLARE t0 timestamptz := now(); n bigint;
BEGIN
	PERFORM pg_sleep(0.05);
	SELECT count(*) INTO n FROM orders WHERE now() = t0;
	RAISE NOTICE 'rows at the transaction time: %', n;
END $$;

-- case: time_now_in_prepared_generic
SET plan_cache_mode = force_generic_plan;
PREPARE p(timestamptz) AS SELECT count(*) FROM orders WHERE now() = $1;
BEGIN;
SELECT now() AS t0 \gset
SELECT pg_sleep(0.05);
\set ECHO none
EXECUTE p(:'t0');
\set ECHO queries
COMMIT;

-- case: time_date_arithmetic_current_date
SELECT count(*) FROM orders WHERE o_date < current_date;
SELECT count(*) FROM orders WHERE o_date + 10000 > current_date;

-- case: time_timeofday_is_volatile
-- clock_timestamp() and timeofday() may differ per row: only check they
-- are not NULL and not before the transaction
BEGIN;
SELECT count(*), bool_and(clock_timestamp() >= now()) FROM orders;
COMMIT;
