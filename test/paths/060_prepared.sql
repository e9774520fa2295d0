-- test/paths/060_prepared.sql: prepared statements.  A custom plan has
-- the parameter values folded in; a generic plan (plan_cache_mode =
-- force_generic_plan, or after five executions) ships $1 with the
-- fragment.  Both must give the same rows, also when the plan is reused
-- from a cursor or inside a transaction.

-- case: prep_custom_count
PREPARE p(int) AS SELECT count(*) FROM orders WHERE o_custkey = $1;
EXECUTE p(42);
EXECUTE p(7);
EXECUTE p(NULL);
EXECUTE p(3050);

-- case: prep_generic_count
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT count(*) FROM orders WHERE o_custkey = $1;
EXECUTE p(42);
EXECUTE p(7);
EXECUTE p(NULL);
EXECUTE p(3050);

-- case: prep_switch_to_generic_after_five
PREPARE p(int) AS SELECT count(*), sum(o_total) FROM orders WHERE o_orderkey <= $1;
EXECUTE p(10); EXECUTE p(20); EXECUTE p(30); EXECUTE p(40); EXECUTE p(50);
EXECUTE p(60); EXECUTE p(70); EXECUTE p(80);
EXECUTE p(25000);

-- case: prep_generic_rows
SET plan_cache_mode = force_generic_plan;
PREPARE p(int, int) AS SELECT o_orderkey, o_total FROM orders WHERE o_orderkey BETWEEN $1 AND $2 ORDER BY 1;
EXECUTE p(1, 5);
EXECUTE p(29998, 30005);

-- case: prep_generic_join
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT count(*) FROM orders JOIN customer ON o_custkey = c_custkey WHERE c_nation = $1;
EXECUTE p(3);
EXECUTE p(24);
EXECUTE p(99);

-- case: prep_generic_text_and_date_params
SET plan_cache_mode = force_generic_plan;
PREPARE p(text, date) AS SELECT count(*) FROM orders WHERE o_status = $1 AND o_date >= $2;
EXECUTE p('F', '1997-01-01');
EXECUTE p('O', '1995-06-01');

-- case: prep_generic_in_list_param
SET plan_cache_mode = force_generic_plan;
PREPARE p(int[]) AS SELECT count(*) FROM orders WHERE o_orderkey = ANY ($1);
EXECUTE p(ARRAY[1, 2, 3, 99999]);
EXECUTE p('{}');

-- case: prep_generic_aggregate_group
SET plan_cache_mode = force_generic_plan;
PREPARE p(numeric) AS SELECT o_status, count(*) FROM orders WHERE o_total > $1 GROUP BY o_status ORDER BY 1;
EXECUTE p(500);
EXECUTE p(999);

-- case: prep_custom_and_generic_same_session
PREPARE p(int) AS SELECT count(*) FROM lineitem WHERE l_orderkey <= $1;
SET plan_cache_mode = force_custom_plan;
EXECUTE p(100);
SET plan_cache_mode = force_generic_plan;
EXECUTE p(100);
EXECUTE p(200);
SET plan_cache_mode = auto;
EXECUTE p(300);

-- case: prep_generic_in_transaction_with_cursor
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT count(*) FROM orders WHERE o_custkey = $1;
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders ORDER BY 1;
FETCH 2 FROM c;
EXECUTE p(42);
FETCH 2 FROM c;
EXECUTE p(8);
COMMIT;

-- case: prep_generic_parameter_in_select_list
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT o_orderkey + $1 FROM orders WHERE o_orderkey < 4 ORDER BY 1;
EXECUTE p(1000);

-- case: prep_generic_subquery_param
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT count(*) FROM customer WHERE c_custkey IN (SELECT o_custkey FROM orders WHERE o_orderkey < $1);
EXECUTE p(100);
EXECUTE p(10000);

-- case: prep_generic_function_param
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT count(*) FROM f_orders($1);
EXECUTE p(17);
EXECUTE p(1700);

-- case: prep_generic_user_type_param
SET plan_cache_mode = force_generic_plan;
PREPARE p(mood) AS SELECT count(*) FROM typed WHERE m = $1;
EXECUTE p('happy');
EXECUTE p('sad');

-- case: prep_generic_limit_param
SET plan_cache_mode = force_generic_plan;
PREPARE p(int) AS SELECT o_orderkey FROM orders ORDER BY o_total DESC, o_orderkey LIMIT $1;
EXECUTE p(3);
EXECUTE p(5);

-- case: prep_plpgsql_cached_plan_loop
-- PL/pgSQL caches its plans: the same query with new values
DO $$
DECLARE n bigint; t bigint := 0; i int;
BEGIN
	FOR i IN 1..8 LOOP
		SELECT count(*) INTO n FROM orders WHERE o_custkey = i * 5;
		t := t + n;
	END LOOP;
	RAISE NOTICE 'total %', t;
END $$;
