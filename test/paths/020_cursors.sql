-- test/paths/020_cursors.sql: SQL cursors over distributed queries.
-- A cursor's portal runs in batches (FETCH n, MOVE): the distributed plan
-- must continue where the last batch stopped, never start again, while
-- other statements (distributed ones too) run between the fetches.  The
-- issue's rows: FETCH 2 twice gave "1 2, then 2 3"; NO SCROLL FETCH 100
-- repeated rows.  Unordered cursors are marked unordered: the union of
-- their batches must still be every row exactly once.

-- case: cur_fetch2_twice_ordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM c;
FETCH 2 FROM c;
COMMIT;

-- case: cur_fetch_next_prior_noscroll
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT o_orderkey, o_total FROM orders ORDER BY o_orderkey;
FETCH NEXT FROM c;
FETCH NEXT FROM c;
FETCH FORWARD 3 FROM c;
FETCH PRIOR FROM c;
COMMIT;

-- case: cur_noscroll_fetch100_x4_all unordered
-- the issue's lineitem case: every row of the first batches came several times
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_orderkey < 300;
FETCH 100 FROM c;
FETCH 100 FROM c;
FETCH 100 FROM c;
FETCH 100 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_noscroll_batches_count
-- the same, counted: rows fetched, distinct rows, a row fetched twice
BEGIN;
CREATE TEMP TABLE got (a int, b int) ON COMMIT DROP;
DECLARE c NO SCROLL CURSOR FOR SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_orderkey < 3000;
DO $$ DECLARE r record; BEGIN
	LOOP
		FETCH c INTO r;
		EXIT WHEN NOT FOUND;
		INSERT INTO got VALUES (r.l_orderkey, r.l_linenumber);
	END LOOP;
END $$;
SELECT count(*), count(DISTINCT (a, b)) FROM got;
COMMIT;

-- case: cur_ordered_fetch_batches
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, o_custkey FROM orders WHERE o_orderkey < 60 ORDER BY o_orderkey;
FETCH 7 FROM c;
FETCH 7 FROM c;
FETCH 7 FROM c;
FETCH ALL FROM c;
FETCH 5 FROM c;
COMMIT;

-- case: cur_unordered_batches unordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, o_custkey FROM orders WHERE o_orderkey <= 1500;
FETCH 500 FROM c;
FETCH 500 FROM c;
FETCH 499 FROM c;
FETCH 10 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_unordered_fetch_count_sum
-- FETCH prints the rows; summing them in the cursor's owner session shows
-- repeats as a wrong total
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey < 20000;
MOVE 1000 IN c;
MOVE 1000 IN c;
MOVE FORWARD ALL IN c;
FETCH 1 FROM c;
COMMIT;

-- case: cur_move_counts
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY o_orderkey;
MOVE 10 IN c;
FETCH 2 FROM c;
MOVE FORWARD 100 IN c;
FETCH 1 FROM c;
MOVE ALL IN c;
FETCH 1 FROM c;
COMMIT;

-- case: cur_move_all_unordered
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM lineitem;
MOVE ALL IN c;
COMMIT;

-- case: cur_scroll_backward
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey <= 50 ORDER BY 1;
FETCH 5 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH FORWARD 4 FROM c;
FETCH PRIOR FROM c;
FETCH FIRST FROM c;
FETCH LAST FROM c;
FETCH BACKWARD 3 FROM c;
COMMIT;

-- case: cur_scroll_absolute_relative
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT o_orderkey, o_status FROM orders WHERE o_orderkey <= 100 ORDER BY 1;
FETCH ABSOLUTE 10 FROM c;
FETCH RELATIVE 5 FROM c;
FETCH RELATIVE -3 FROM c;
FETCH ABSOLUTE -1 FROM c;
FETCH ABSOLUTE 1000 FROM c;
FETCH ABSOLUTE 2 FROM c;
MOVE ABSOLUTE 50 IN c;
FETCH RELATIVE 0 FROM c;
COMMIT;

-- case: cur_scroll_unordered_total
-- a scrollable unordered cursor read forward, backward and forward again
-- (counts only: which row comes last is not defined without ORDER BY)
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey <= 3000;
MOVE FORWARD ALL IN c;
MOVE BACKWARD ALL IN c;
MOVE FORWARD 1500 IN c;
MOVE FORWARD ALL IN c;
MOVE BACKWARD ALL IN c;
COMMIT;

-- case: cur_scroll_aggregate
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT o_status, count(*), sum(o_total) FROM orders GROUP BY o_status ORDER BY o_status;
FETCH 1 FROM c;
FETCH ALL FROM c;
FETCH BACKWARD ALL FROM c;
COMMIT;

-- case: cur_aggregate_many_groups
BEGIN;
DECLARE c CURSOR FOR SELECT o_custkey, count(*), sum(o_total) FROM orders GROUP BY o_custkey ORDER BY o_custkey NULLS LAST;
FETCH 3 FROM c;
FETCH 3 FROM c;
MOVE 2000 IN c;
FETCH 3 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_aggregate_unordered unordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_custkey, count(*) FROM orders WHERE o_custkey < 300 GROUP BY o_custkey;
FETCH 50 FROM c;
FETCH 50 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_global_aggregate
BEGIN;
DECLARE c CURSOR FOR SELECT count(*), sum(o_total) FROM orders;
FETCH 1 FROM c;
FETCH 1 FROM c;
COMMIT;

-- case: cur_join_colocated unordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, l_linenumber FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_orderkey < 200;
FETCH 100 FROM c;
FETCH 100 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_join_repartition_ordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, c_name FROM orders JOIN customer ON o_custkey = c_custkey ORDER BY o_orderkey;
FETCH 4 FROM c;
FETCH 4 FROM c;
MOVE 10000 IN c;
FETCH 4 FROM c;
COMMIT;

-- case: cur_join_repartition_unordered unordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, c_name FROM orders JOIN customer ON o_custkey = c_custkey WHERE o_orderkey < 1000;
FETCH 300 FROM c;
FETCH 300 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_interleaved_plain_queries
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY o_orderkey;
FETCH 3 FROM c;
SELECT count(*) FROM customer;
FETCH 3 FROM c;
SELECT c_custkey, c_name FROM customer WHERE c_custkey < 4 ORDER BY 1;
FETCH 3 FROM c;
SELECT sum(l_qty) FROM lineitem;
FETCH 3 FROM c;
COMMIT;

-- case: cur_interleaved_same_table
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, o_total FROM orders WHERE o_orderkey < 100 ORDER BY o_orderkey;
FETCH 5 FROM c;
SELECT count(*) FROM orders;
FETCH 5 FROM c;
SELECT o_orderkey FROM orders WHERE o_orderkey BETWEEN 90 AND 92 ORDER BY 1;
FETCH 5 FROM c;
COMMIT;

-- case: cur_interleaved_unordered unordered
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey <= 2000;
FETCH 600 FROM c;
SELECT count(*) + 100000 FROM lineitem;
FETCH 600 FROM c;
SELECT count(*) + 200000 FROM orders JOIN customer ON o_custkey = c_custkey;
FETCH ALL FROM c;
COMMIT;

-- case: cur_two_open_ordered
BEGIN;
DECLARE a CURSOR FOR SELECT o_orderkey FROM orders ORDER BY o_orderkey;
DECLARE b CURSOR FOR SELECT c_custkey FROM customer ORDER BY c_custkey DESC;
FETCH 2 FROM a;
FETCH 2 FROM b;
FETCH 2 FROM a;
FETCH 2 FROM b;
CLOSE a;
FETCH 2 FROM b;
COMMIT;

-- case: cur_two_open_unordered unordered
BEGIN;
DECLARE a CURSOR FOR SELECT 'a', o_orderkey FROM orders WHERE o_orderkey <= 1000;
DECLARE b CURSOR FOR SELECT 'b', l_orderkey, l_linenumber FROM lineitem WHERE l_orderkey <= 300;
FETCH 300 FROM a;
FETCH 300 FROM b;
FETCH 300 FROM a;
FETCH 300 FROM b;
FETCH ALL FROM a;
FETCH ALL FROM b;
COMMIT;

-- case: cur_two_on_same_table
BEGIN;
DECLARE a CURSOR FOR SELECT o_orderkey FROM orders ORDER BY o_orderkey;
DECLARE b CURSOR FOR SELECT o_orderkey FROM orders ORDER BY o_orderkey DESC;
FETCH 3 FROM a;
FETCH 3 FROM b;
FETCH 3 FROM a;
FETCH 3 FROM b;
COMMIT;

-- case: cur_close_and_reopen
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 3 FROM c;
CLOSE c;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1 DESC;
FETCH 3 FROM c;
CLOSE c;
SELECT count(*) FROM orders;
COMMIT;

-- case: cur_many_small_fetches
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey <= 20 ORDER BY 1;
FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c;
FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c;
FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c;
FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c; FETCH 1 FROM c;
FETCH 1 FROM c;
COMMIT;

-- case: cur_with_hold_ordered
DECLARE c CURSOR WITH HOLD FOR SELECT o_orderkey, o_total FROM orders ORDER BY o_orderkey;
FETCH 3 FROM c;
FETCH 3 FROM c;
SELECT count(*) FROM orders;
FETCH 3 FROM c;
CLOSE c;

-- case: cur_with_hold_after_commit
BEGIN;
DECLARE c CURSOR WITH HOLD FOR SELECT o_orderkey FROM orders WHERE o_orderkey < 50 ORDER BY 1;
FETCH 5 FROM c;
COMMIT;
FETCH 5 FROM c;
FETCH ALL FROM c;
CLOSE c;

-- case: cur_with_hold_unordered unordered
BEGIN;
DECLARE c CURSOR WITH HOLD FOR SELECT o_orderkey FROM orders WHERE o_orderkey < 2000;
FETCH 700 FROM c;
COMMIT;
FETCH 700 FROM c;
FETCH ALL FROM c;
CLOSE c;

-- case: cur_with_hold_scroll
DECLARE c SCROLL CURSOR WITH HOLD FOR SELECT c_custkey, c_name FROM customer ORDER BY c_custkey;
FETCH ABSOLUTE 100 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH LAST FROM c;
CLOSE c;

-- case: cur_with_hold_rollback
-- a holdable cursor declared in a transaction that rolls back is gone
BEGIN;
DECLARE c CURSOR WITH HOLD FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM c;
ROLLBACK;
FETCH 2 FROM c;

-- case: cur_error_aborts_transaction
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM c;
SELECT 1 / 0;
FETCH 2 FROM c;
ROLLBACK;
SELECT count(*) FROM orders;

-- case: cur_savepoint_rollback
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM c;
SAVEPOINT s;
SELECT count(*) FROM lineitem;
ROLLBACK TO SAVEPOINT s;
FETCH 2 FROM c;
SAVEPOINT s2;
DECLARE d CURSOR FOR SELECT c_custkey FROM customer ORDER BY 1;
FETCH 2 FROM d;
ROLLBACK TO SAVEPOINT s2;
FETCH 2 FROM d;
ROLLBACK;

-- case: cur_fetch_division_error
-- an error raised by the rows of an open cursor aborts the transaction,
-- and the next one works.  (When the error comes depends on the plan, on
-- one server too: a parallel plan raises it early, so it is read in one
-- FETCH ALL.)
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, 100 / (o_orderkey - 25) FROM orders WHERE o_orderkey < 40 ORDER BY o_orderkey;
FETCH ALL FROM c;
FETCH 1 FROM c;
ROLLBACK;
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, 100 / (o_orderkey - 25) FROM orders WHERE o_orderkey < 20 ORDER BY o_orderkey;
FETCH 5 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_filter_empty_result
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey < 0;
FETCH 5 FROM c;
FETCH 5 FROM c;
DECLARE e CURSOR FOR SELECT * FROM empty_t;
FETCH ALL FROM e;
COMMIT;

-- case: cur_limit_in_query
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY o_total DESC, o_orderkey LIMIT 10;
FETCH 3 FROM c;
FETCH 3 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_distinct_query
BEGIN;
DECLARE c CURSOR FOR SELECT DISTINCT o_status FROM orders ORDER BY 1;
FETCH 1 FROM c;
FETCH 1 FROM c;
FETCH 1 FROM c;
FETCH 1 FROM c;
COMMIT;

-- case: cur_window_query
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, sum(o_total) OVER (ORDER BY o_orderkey) FROM orders WHERE o_orderkey < 30 ORDER BY o_orderkey;
FETCH 5 FROM c;
FETCH 5 FROM c;
COMMIT;

-- case: cur_subquery_query
BEGIN;
DECLARE c CURSOR FOR SELECT c_custkey, (SELECT count(*) FROM orders WHERE o_custkey = c_custkey) FROM customer WHERE c_custkey < 30 ORDER BY 1;
FETCH 5 FROM c;
FETCH 5 FROM c;
COMMIT;

-- case: cur_skew unordered
BEGIN;
DECLARE c CURSOR FOR SELECT k, v FROM skew WHERE v % 10 IN (7, 8, 9) AND v < 2000;
FETCH 100 FROM c;
FETCH 100 FROM c;
FETCH ALL FROM c;
COMMIT;

-- case: cur_large_batches_count
-- all of lineitem in batches of 5000 through a PL/pgSQL counter of the
-- rows the portal delivers
BEGIN;
DECLARE c CURSOR FOR SELECT l_orderkey, l_linenumber, l_qty FROM lineitem;
CREATE TEMP TABLE got ON COMMIT DROP AS SELECT 0 AS n, 0 AS d;
DO $$ DECLARE n int; total int := 0; BEGIN
	LOOP
		MOVE FORWARD 5000 IN c;
		GET DIAGNOSTICS n = ROW_COUNT;
		EXIT WHEN n = 0;
		total := total + n;
	END LOOP;
	UPDATE got SET n = total;
END $$;
SELECT n FROM got;
COMMIT;

-- case: cur_fetch_count_psql unordered
-- psql's FETCH_COUNT runs the query through a cursor in batches
\set FETCH_COUNT 1000
SELECT o_orderkey, o_custkey FROM orders WHERE o_orderkey < 6000;

-- case: cur_fetch_count_psql_ordered
\set FETCH_COUNT 7
SELECT o_orderkey, o_status FROM orders WHERE o_orderkey < 30 ORDER BY o_orderkey;
SELECT c_custkey FROM customer WHERE c_custkey < 10 ORDER BY 1;

-- case: cur_fetch_count_psql_join unordered
\set FETCH_COUNT 300
SELECT o_orderkey, c_name FROM orders JOIN customer ON o_custkey = c_custkey WHERE o_orderkey < 2000;

-- case: cur_for_update_refused refused
-- a single server locks the rows; the cluster must do so or refuse clearly
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey < 5 ORDER BY 1 FOR UPDATE;
FETCH 2 FROM c;
ROLLBACK;

-- case: cur_binary
BEGIN;
DECLARE c BINARY CURSOR FOR SELECT count(*) > 0 FROM orders;
FETCH 1 FROM c;
COMMIT;

-- case: cur_pg_cursors_view
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM c;
SELECT name, is_holdable, is_binary, is_scrollable FROM pg_cursors ORDER BY name;
COMMIT;

-- case: cur_where_current_of refused
BEGIN;
DECLARE c CURSOR FOR SELECT k, v FROM w_orders WHERE k < 10 ORDER BY k FOR UPDATE;
FETCH 1 FROM c;
UPDATE w_orders SET v = -1 WHERE CURRENT OF c;
SELECT k, v FROM w_orders WHERE k < 4 ORDER BY k;
ROLLBACK;

-- case: cur_typed_columns
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey, o_date, o_ts, o_flag, o_iv FROM orders ORDER BY o_orderkey;
FETCH 3 FROM c;
FETCH 3 FROM c;
COMMIT;

-- case: cur_in_repeatable_read
BEGIN ISOLATION LEVEL REPEATABLE READ;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 3 FROM c;
SELECT count(*) FROM orders;
FETCH 3 FROM c;
COMMIT;

-- case: cur_reference_table
BEGIN;
DECLARE c CURSOR FOR SELECT n_nationkey, n_name FROM nation ORDER BY 1;
FETCH 5 FROM c;
FETCH 5 FROM c;
COMMIT;

-- case: cur_reference_join_distributed
BEGIN;
DECLARE c CURSOR FOR SELECT c_custkey, n_name FROM customer JOIN nation ON c_nation = n_nationkey ORDER BY c_custkey;
FETCH 3 FROM c;
FETCH 3 FROM c;
MOVE 2990 IN c;
FETCH 3 FROM c;
COMMIT;

-- case: cur_psycopg2_named_cursor unordered
-- what psycopg2's named cursor sends (itersize 500), over 5999 rows
BEGIN;
DECLARE "c_psycopg" CURSOR WITHOUT HOLD FOR SELECT o_orderkey, o_custkey FROM orders WHERE o_orderkey < 6000;
FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg";
FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg";
FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg";
FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg"; FETCH FORWARD 500 FROM "c_psycopg";
FETCH FORWARD 500 FROM "c_psycopg";
CLOSE "c_psycopg";
COMMIT;

-- case: cur_after_write_fetch_count unordered
-- a streaming read in a transaction that wrote first (what ORMs do)
BEGIN;
INSERT INTO w_orders SELECT i, 1, 1, 'stream' FROM generate_series(20001, 21500) i;
\set FETCH_COUNT 200
SELECT k, note FROM w_orders WHERE k > 2900;
ROLLBACK;

-- case: cur_after_write_declare
BEGIN;
UPDATE w_orders SET v = 100 WHERE k <= 10;
DECLARE c CURSOR FOR SELECT k, v FROM w_orders ORDER BY k;
FETCH 4 FROM c;
FETCH 4 FROM c;
MOVE 2000 IN c;
FETCH 4 FROM c;
ROLLBACK;

-- case: cur_scroll_join_backward
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT o_orderkey, l_linenumber FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_orderkey <= 20 ORDER BY 1, 2;
FETCH 6 FROM c;
FETCH BACKWARD 4 FROM c;
FETCH ABSOLUTE 30 FROM c;
FETCH RELATIVE -10 FROM c;
FETCH LAST FROM c;
COMMIT;

-- case: cur_hold_join_aggregate
DECLARE c CURSOR WITH HOLD FOR
	SELECT c_nation, count(*), sum(o_total) FROM orders JOIN customer ON o_custkey = c_custkey GROUP BY c_nation ORDER BY c_nation;
FETCH 5 FROM c;
SELECT count(*) FROM lineitem;
FETCH 5 FROM c;
CLOSE c;

-- case: cur_fetch_after_other_cursor_closed_in_loop
BEGIN;
DECLARE a CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM a;
DECLARE b CURSOR FOR SELECT c_custkey FROM customer ORDER BY 1;
FETCH 2 FROM b;
CLOSE b;
DECLARE b CURSOR FOR SELECT l_orderkey FROM lineitem ORDER BY 1 DESC;
FETCH 2 FROM b;
FETCH 2 FROM a;
COMMIT;
