-- test/paths/040_functions.sql: SQL functions over distributed tables.
-- An inlinable LANGUAGE sql STABLE function returning SETOF a table is
-- replaced by its query during planning, after any parse-tree check; the
-- issue saw count(*) FROM f(10) scan only the coordinator's share.
-- Non-inlinable ones (VOLATILE, SECURITY DEFINER, SET, PL/pgSQL) run
-- their query through SPI as a query of its own.

-- case: fn_inlined_count
SELECT count(*) FROM f_orders(10);
SELECT count(*) FROM f_orders(15);
SELECT count(*) FROM f_orders(20000);

-- case: fn_inlined_rows
SELECT o_orderkey, o_custkey, o_total FROM f_orders(12) ORDER BY o_orderkey;

-- case: fn_inlined_rows_unordered unordered
SELECT o_orderkey, o_status FROM f_orders(300);

-- case: fn_inlined_aggregate
SELECT o_status, count(*), sum(o_total) FROM f_orders(10000) GROUP BY o_status ORDER BY 1;

-- case: fn_inlined_filter_on_result
SELECT count(*) FROM f_orders(5000) WHERE o_custkey = 42;
SELECT count(*) FROM f_big_orders(950);

-- case: fn_inlined_join_distributed
SELECT count(*), sum(l_qty) FROM f_orders(500) o JOIN lineitem ON l_orderkey = o.o_orderkey;
SELECT count(*) FROM f_orders(3000) o JOIN customer c ON c.c_custkey = o.o_custkey;

-- case: fn_inlined_two_calls
SELECT count(*) FROM f_orders(100) a JOIN f_orders(200) b ON a.o_orderkey = b.o_orderkey;

-- case: fn_inlined_table_returning
SELECT * FROM f_lines(7) ORDER BY ln;
SELECT count(*), sum(qty) FROM f_lines(7);

-- case: fn_inlined_lateral
SELECT c.c_custkey, count(o.o_orderkey)
FROM customer c, LATERAL f_cust_orders(c.c_custkey) o
WHERE c.c_custkey <= 12 GROUP BY c.c_custkey ORDER BY 1;

-- case: fn_inlined_lateral_left
SELECT c.c_custkey, o.o_orderkey
FROM customer c LEFT JOIN LATERAL f_cust_orders(c.c_custkey) o ON true
WHERE c.c_custkey IN (1, 2, 3, 3050) ORDER BY 1, 2 LIMIT 20;

-- case: fn_inlined_lateral_table_fn
SELECT o.o_orderkey, l.ln, l.qty
FROM orders o CROSS JOIN LATERAL f_lines(o.o_orderkey) l
WHERE o.o_orderkey <= 4 ORDER BY 1, 2;

-- case: fn_inlined_lateral_count
SELECT count(*), sum(l.qty) FROM orders o CROSS JOIN LATERAL f_lines(o.o_orderkey) l WHERE o.o_orderkey <= 1000;

-- case: fn_inlined_in_subquery
SELECT count(*) FROM customer WHERE c_custkey IN (SELECT o_custkey FROM f_orders(1000));
SELECT count(*) FROM customer c WHERE EXISTS (SELECT 1 FROM f_cust_orders(c.c_custkey));

-- case: fn_inlined_in_cte
WITH x AS (SELECT * FROM f_orders(2000)) SELECT count(*), max(o_orderkey) FROM x;

-- case: fn_inlined_in_cursor
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM f_orders(100) ORDER BY 1;
FETCH 3 FROM c;
FETCH 3 FROM c;
COMMIT;

-- case: fn_volatile_not_inlined
SELECT count(*) FROM f_orders_volatile(10);
SELECT count(*) FROM f_orders_volatile(20000);

-- case: fn_secdef_not_inlined
SELECT count(*) FROM f_orders_secdef(10);
SELECT count(*), sum(o_total) FROM f_orders_secdef(5000);

-- case: fn_set_clause_not_inlined
SELECT count(*) FROM f_orders_set(10);
SELECT count(*) FROM f_orders_set(20000);

-- case: fn_plpgsql_setof
SELECT count(*) FROM f_orders_plpgsql(10);
SELECT count(*), min(o_orderkey), max(o_orderkey) FROM f_orders_plpgsql(20000);

-- case: fn_plpgsql_setof_join
SELECT count(*) FROM f_orders_plpgsql(300) o JOIN lineitem ON l_orderkey = o.o_orderkey;

-- case: fn_scalar_query_per_row
-- a scalar function that reads a distributed table, called per row
SELECT c_custkey, f_count_cust(c_custkey) FROM customer WHERE c_custkey <= 8 ORDER BY 1;
SELECT f_count_cust(42);

-- case: fn_scalar_query_in_where
SELECT count(*) FROM customer WHERE c_custkey <= 100 AND f_count_cust(c_custkey) > 8;

-- case: fn_scalar_inlined_expression
SELECT count(*), sum(f_double(o_orderkey)) FROM orders WHERE f_is_big(o_total);

-- case: fn_scalar_plpgsql_expression
SELECT count(*), sum(f_plus_one(o_orderkey)) FROM orders WHERE o_orderkey < 1000;
SELECT f_plus_one(o_custkey), count(*) FROM orders WHERE o_custkey < 5 GROUP BY 1 ORDER BY 1;

-- case: fn_temp_sql_function
CREATE FUNCTION pg_temp.recent(n int) RETURNS SETOF orders LANGUAGE sql STABLE
	AS $$ SELECT * FROM orders ORDER BY o_orderkey DESC LIMIT n $$;
SELECT o_orderkey FROM pg_temp.recent(3) ORDER BY 1;
SELECT count(*) FROM pg_temp.recent(500);

-- case: fn_returns_table_of_agg
CREATE FUNCTION pg_temp.per_status() RETURNS TABLE (st char(1), n bigint) LANGUAGE sql STABLE
	AS $$ SELECT o_status, count(*) FROM orders GROUP BY o_status $$;
SELECT * FROM pg_temp.per_status() ORDER BY 1;

-- case: fn_sql_function_with_params_inlined_prepared
PREPARE p(int) AS SELECT count(*) FROM f_orders($1);
EXECUTE p(10);
EXECUTE p(100);
SET plan_cache_mode = force_generic_plan;
EXECUTE p(10);
EXECUTE p(1000);

-- case: fn_srf_in_select_list
SELECT count(*) FROM (SELECT f_orders(50)) s;

-- case: fn_view_over_function
CREATE TEMP VIEW tv AS SELECT * FROM f_orders(400);
SELECT count(*), sum(o_total) FROM tv;
