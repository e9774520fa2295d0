-- test/paths/030_plpgsql.sql: PL/pgSQL over distributed queries.  A FOR
-- loop over a query, OPEN/FETCH, RETURN QUERY and SPI cursors all run the
-- query's portal in batches (PL/pgSQL fetches 10, then 50 rows at a time):
-- the issue saw a FOR loop that never ended and FETCH INTO that returned
-- the first row four times.  Results are printed as RAISE NOTICE lines or
-- as the rows of a function, counted so that a repeated or missing row
-- shows.

-- case: pl_for_loop_count
DO $$
DECLARE r record; n int := 0; s bigint := 0;
BEGIN
	FOR r IN SELECT o_orderkey FROM orders WHERE o_orderkey < 20000 LOOP
		n := n + 1;
		s := s + r.o_orderkey;
	END LOOP;
	RAISE NOTICE 'rows %, sum %', n, s;
END $$;

-- case: pl_for_loop_ordered_first_rows
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT o_orderkey, o_custkey FROM orders ORDER BY o_orderkey LOOP
		n := n + 1;
		IF n <= 12 OR n % 5000 = 0 THEN
			RAISE NOTICE '% % %', n, r.o_orderkey, r.o_custkey;
		END IF;
	END LOOP;
	RAISE NOTICE 'rows %', n;
END $$;

-- case: pl_for_loop_distinct_rows
DO $$
DECLARE r record; n int := 0; d int;
BEGIN
	CREATE TEMP TABLE seen (k int);
	FOR r IN SELECT o_orderkey FROM orders WHERE o_orderkey <= 3000 LOOP
		INSERT INTO seen VALUES (r.o_orderkey);
		n := n + 1;
	END LOOP;
	SELECT count(DISTINCT k) INTO d FROM seen;
	RAISE NOTICE 'rows %, distinct %', n, d;
	DROP TABLE seen;
END $$;

-- case: pl_for_loop_join
DO $$
DECLARE r record; n int := 0; s numeric := 0;
BEGIN
	FOR r IN SELECT o_orderkey, c_acctbal FROM orders JOIN customer ON o_custkey = c_custkey WHERE o_orderkey < 5000 LOOP
		n := n + 1;
		s := s + r.c_acctbal;
	END LOOP;
	RAISE NOTICE 'rows %, sum %', n, s;
END $$;

-- case: pl_for_loop_aggregate
DO $$
DECLARE r record; n int := 0; t bigint := 0;
BEGIN
	FOR r IN SELECT o_custkey, count(*) AS c FROM orders GROUP BY o_custkey LOOP
		n := n + 1;
		t := t + r.c;
	END LOOP;
	RAISE NOTICE 'groups %, rows %', n, t;
END $$;

-- case: pl_for_loop_exit_early
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT o_orderkey FROM orders ORDER BY o_orderkey LOOP
		n := n + 1;
		EXIT WHEN n = 25;
	END LOOP;
	RAISE NOTICE 'stopped at % (key %)', n, r.o_orderkey;
	-- the next distributed query after the abandoned loop
	RAISE NOTICE 'count %', (SELECT count(*) FROM orders);
END $$;

-- case: pl_for_loop_exit_early_unordered
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT l_orderkey FROM lineitem LOOP
		n := n + 1;
		EXIT WHEN n = 77;
	END LOOP;
	RAISE NOTICE 'stopped at %', n;
	RAISE NOTICE 'lineitem %', (SELECT count(*) FROM lineitem);
END $$;

-- case: pl_for_loop_return_early
CREATE FUNCTION pg_temp.first_big(lim numeric) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT o_orderkey, o_total FROM orders ORDER BY o_orderkey LOOP
		IF r.o_total > lim THEN RETURN r.o_orderkey; END IF;
	END LOOP;
	RETURN NULL;
END $$;
SELECT pg_temp.first_big(990), pg_temp.first_big(999.5), pg_temp.first_big(5000);
SELECT count(*) FROM orders;

-- case: pl_for_loop_body_runs_distributed_query
DO $$
DECLARE r record; c bigint; n int := 0; t bigint := 0;
BEGIN
	FOR r IN SELECT c_custkey FROM customer WHERE c_custkey <= 40 ORDER BY c_custkey LOOP
		SELECT count(*) INTO c FROM orders WHERE o_custkey = r.c_custkey;
		n := n + 1;
		t := t + c;
	END LOOP;
	RAISE NOTICE 'customers %, orders %', n, t;
END $$;

-- case: pl_for_loop_body_runs_distributed_query_unordered
DO $$
DECLARE r record; c bigint; n int := 0; t bigint := 0;
BEGIN
	FOR r IN SELECT o_orderkey FROM orders WHERE o_orderkey <= 60 LOOP
		SELECT count(*) INTO c FROM lineitem WHERE l_orderkey = r.o_orderkey;
		n := n + 1;
		t := t + c;
	END LOOP;
	RAISE NOTICE 'orders %, lines %', n, t;
END $$;

-- case: pl_nested_for_loops
DO $$
DECLARE a record; b record; n int := 0; s bigint := 0;
BEGIN
	FOR a IN SELECT o_orderkey FROM orders WHERE o_orderkey <= 30 ORDER BY o_orderkey LOOP
		FOR b IN SELECT l_linenumber, l_qty FROM lineitem WHERE l_orderkey = a.o_orderkey LOOP
			n := n + 1;
			s := s + b.l_qty;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'lines %, qty %', n, s;
END $$;

-- case: pl_nested_for_loops_both_large
DO $$
DECLARE a record; b record; n int := 0;
BEGIN
	FOR a IN SELECT n_nationkey FROM nation ORDER BY 1 LOOP
		FOR b IN SELECT c_custkey FROM customer WHERE c_nation = a.n_nationkey LOOP
			n := n + 1;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'customers %', n;
END $$;

-- case: pl_function_loop_sum
SELECT f_loop_sum(100), f_loop_sum(5000);

-- case: pl_function_loop_nested
SELECT f_loop_nested(50);

-- case: pl_function_in_select_list_over_rows
-- the function runs once per row of a distributed query, and runs a
-- distributed query itself
SELECT o_orderkey, f_loop_sum(o_orderkey) FROM orders WHERE o_orderkey IN (3, 30, 300) ORDER BY 1;

-- case: pl_return_query
SELECT * FROM f_rq(1, 12) ORDER BY k;
SELECT count(*), sum(total) FROM f_rq(1, 5000);

-- case: pl_return_query_in_join
SELECT count(*), sum(l_qty) FROM f_rq(1, 500) r JOIN lineitem ON l_orderkey = r.k;

-- case: pl_return_next_loop
CREATE FUNCTION pg_temp.evens(hi int) RETURNS SETOF int LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT o_orderkey FROM orders WHERE o_orderkey <= hi LOOP
		IF r.o_orderkey % 2 = 0 THEN RETURN NEXT r.o_orderkey; END IF;
	END LOOP;
END $$;
SELECT count(*), sum(e), min(e), max(e) FROM pg_temp.evens(4000) e;

-- case: pl_open_fetch_into
-- the issue: FETCH c INTO a four times gave 1 1 1 1
DO $$
DECLARE c refcursor; a int;
BEGIN
	OPEN c FOR SELECT o_orderkey FROM orders ORDER BY o_orderkey;
	FETCH c INTO a; RAISE NOTICE '%', a;
	FETCH c INTO a; RAISE NOTICE '%', a;
	FETCH c INTO a; RAISE NOTICE '%', a;
	FETCH c INTO a; RAISE NOTICE '%', a;
	CLOSE c;
END $$;

-- case: pl_open_fetch_loop_unordered
DO $$
DECLARE c refcursor; r record; n int := 0; s bigint := 0;
BEGIN
	OPEN c FOR SELECT o_orderkey FROM orders WHERE o_orderkey <= 5000;
	LOOP
		FETCH c INTO r;
		EXIT WHEN NOT FOUND;
		n := n + 1;
		s := s + r.o_orderkey;
	END LOOP;
	CLOSE c;
	RAISE NOTICE 'rows %, sum %', n, s;
END $$;

-- case: pl_open_bound_cursor_with_args
DO $$
DECLARE c CURSOR (lo int, hi int) FOR SELECT o_orderkey FROM orders WHERE o_orderkey BETWEEN lo AND hi ORDER BY 1;
	a int; n int := 0;
BEGIN
	OPEN c(100, 130);
	LOOP
		FETCH c INTO a;
		EXIT WHEN NOT FOUND;
		n := n + 1;
		IF n <= 3 THEN RAISE NOTICE 'row %', a; END IF;
	END LOOP;
	CLOSE c;
	RAISE NOTICE 'rows %', n;
END $$;

-- case: pl_cursor_for_loop
DO $$
DECLARE c CURSOR FOR SELECT c_custkey, c_acctbal FROM customer; n int := 0; s numeric := 0;
BEGIN
	FOR r IN c LOOP
		n := n + 1;
		s := s + r.c_acctbal;
	END LOOP;
	RAISE NOTICE 'rows %, sum %', n, s;
END $$;

-- case: pl_scroll_cursor_moves
DO $$
DECLARE c SCROLL CURSOR FOR SELECT o_orderkey FROM orders WHERE o_orderkey <= 100 ORDER BY 1; a int;
BEGIN
	OPEN c;
	FETCH LAST FROM c INTO a; RAISE NOTICE 'last %', a;
	FETCH PRIOR FROM c INTO a; RAISE NOTICE 'prior %', a;
	FETCH ABSOLUTE 10 FROM c INTO a; RAISE NOTICE 'absolute 10: %', a;
	MOVE RELATIVE 5 FROM c;
	FETCH NEXT FROM c INTO a; RAISE NOTICE 'next %', a;
	FETCH FIRST FROM c INTO a; RAISE NOTICE 'first %', a;
	CLOSE c;
END $$;

-- case: pl_two_cursors_interleaved
DO $$
DECLARE a refcursor; b refcursor; x int; y int; i int;
BEGIN
	OPEN a FOR SELECT o_orderkey FROM orders ORDER BY 1;
	OPEN b FOR SELECT c_custkey FROM customer ORDER BY 1 DESC;
	FOR i IN 1..4 LOOP
		FETCH a INTO x;
		FETCH b INTO y;
		RAISE NOTICE '% %', x, y;
	END LOOP;
	CLOSE a; CLOSE b;
END $$;

-- case: pl_cursor_interleaved_with_queries
DO $$
DECLARE c refcursor; x int; n bigint; i int;
BEGIN
	OPEN c FOR SELECT o_orderkey FROM orders ORDER BY 1;
	FOR i IN 1..4 LOOP
		FETCH c INTO x;
		SELECT count(*) INTO n FROM lineitem WHERE l_orderkey <= x;
		RAISE NOTICE '% %', x, n;
	END LOOP;
	CLOSE c;
END $$;

-- case: pl_refcursor_returned_to_client
BEGIN;
SELECT f_open_cursor(40);
FETCH 3 FROM f_open_cursor_c;
FETCH 3 FROM f_open_cursor_c;
FETCH ALL FROM f_open_cursor_c;
COMMIT;

-- case: pl_refcursor_returned_unordered unordered
CREATE FUNCTION pg_temp.open_lines() RETURNS refcursor LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'lines_c';
BEGIN
	OPEN c FOR SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_orderkey < 400;
	RETURN c;
END $$;
BEGIN;
SELECT pg_temp.open_lines();
FETCH 500 FROM lines_c;
FETCH 500 FROM lines_c;
FETCH ALL FROM lines_c;
COMMIT;

-- case: pl_fetch_count_get_diagnostics
DO $$
DECLARE c refcursor; n int; total int := 0;
BEGIN
	OPEN c FOR SELECT l_orderkey FROM lineitem;
	LOOP
		MOVE FORWARD 7000 FROM c;
		GET DIAGNOSTICS n = ROW_COUNT;
		EXIT WHEN n = 0;
		total := total + n;
	END LOOP;
	RAISE NOTICE 'moved over % rows', total;
END $$;

-- case: pl_execute_dynamic_loop
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN EXECUTE 'SELECT o_orderkey FROM orders WHERE o_orderkey <= $1' USING 2500 LOOP
		n := n + 1;
	END LOOP;
	RAISE NOTICE 'rows %', n;
END $$;

-- case: pl_open_for_execute
DO $$
DECLARE c refcursor; a int; b int;
BEGIN
	OPEN c FOR EXECUTE format('SELECT o_orderkey, o_custkey FROM %I ORDER BY 1', 'orders');
	FETCH c INTO a, b; RAISE NOTICE '% %', a, b;
	FETCH c INTO a, b; RAISE NOTICE '% %', a, b;
	FETCH c INTO a, b; RAISE NOTICE '% %', a, b;
	CLOSE c;
END $$;

-- case: pl_select_into_strict
DO $$
DECLARE a int; b text;
BEGIN
	SELECT o_orderkey, o_status INTO STRICT a, b FROM orders WHERE o_orderkey = 777;
	RAISE NOTICE '% %', a, b;
	SELECT o_orderkey INTO a FROM orders WHERE o_custkey = 42 ORDER BY o_orderkey;
	RAISE NOTICE 'first of 42: %', a;
	SELECT o_orderkey INTO STRICT a FROM orders WHERE o_custkey = 42;
EXCEPTION WHEN too_many_rows THEN
	RAISE NOTICE 'too many rows';
END $$;

-- case: pl_exception_block_around_query
DO $$
DECLARE n bigint;
BEGIN
	BEGIN
		SELECT count(*) INTO n FROM orders WHERE 1 / (o_orderkey - 500) > 0;
	EXCEPTION WHEN division_by_zero THEN
		RAISE NOTICE 'caught division by zero';
	END;
	SELECT count(*) INTO n FROM orders;
	RAISE NOTICE 'then %', n;
END $$;

-- case: pl_loop_in_transaction_with_cursor_open
BEGIN;
DECLARE outer_c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM outer_c;
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT c_custkey FROM customer LOOP n := n + 1; END LOOP;
	RAISE NOTICE 'customers %', n;
END $$;
FETCH 2 FROM outer_c;
COMMIT;

-- case: pl_query_function_per_row
-- a PL/pgSQL function in the WHERE clause that reads another table
CREATE FUNCTION pg_temp.has_lines(k int) RETURNS bool LANGUAGE plpgsql STABLE AS $$
BEGIN RETURN EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = k); END $$;
SELECT count(*) FROM orders WHERE o_orderkey <= 100 AND o_orderkey >= 95 AND pg_temp.has_lines(o_orderkey);

-- case: pl_sql_function_cursor_loop_with_skew
DO $$
DECLARE r record; n int := 0; nulls int := 0;
BEGIN
	FOR r IN SELECT k FROM skew LOOP
		n := n + 1;
		IF r.k IS NULL THEN nulls := nulls + 1; END IF;
	END LOOP;
	RAISE NOTICE 'rows %, nulls %', n, nulls;
END $$;

-- case: pl_for_loop_empty_table
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT * FROM empty_t LOOP n := n + 1; END LOOP;
	FOR r IN SELECT * FROM orders WHERE o_orderkey < 0 LOOP n := n + 1; END LOOP;
	RAISE NOTICE 'rows %', n;
END $$;

-- case: pl_procedure_commit_in_loop
-- a procedure may COMMIT inside a loop over a query (the portal is
-- converted to a holdable one)
CREATE PROCEDURE pg_temp.walk() LANGUAGE plpgsql AS $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT o_orderkey FROM orders WHERE o_orderkey <= 2000 ORDER BY 1 LOOP
		n := n + 1;
		IF n % 500 = 0 THEN COMMIT; END IF;
	END LOOP;
	RAISE NOTICE 'rows %', n;
END $$;
CALL pg_temp.walk();
