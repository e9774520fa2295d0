-- test/paths/110_whole_row.sql: whole-row references of distributed
-- tables (t::text, row_to_json(t), t.*, a row compared or aggregated).
-- A whole row is a composite datum of the table's row type, whose OID
-- differs per member; the issue saw "cannot gather distributed table ...
-- whole-row references".

-- case: whole_text
SELECT t::text FROM customer t WHERE c_custkey <= 3 ORDER BY c_custkey;

-- case: whole_row_to_json
SELECT row_to_json(t) FROM customer t WHERE c_custkey <= 3 ORDER BY c_custkey;
SELECT row_to_json(o) FROM orders o WHERE o_orderkey = 17;

-- case: whole_to_jsonb_field
SELECT to_jsonb(t) ->> 'c_name' FROM customer t WHERE c_custkey IN (5, 6) ORDER BY 1;
SELECT count(*) FROM customer t WHERE to_jsonb(t) ->> 'c_segment' = 'BUILDING';

-- case: whole_count_distinct_rows
SELECT count(DISTINCT t) FROM customer t;
SELECT count(*) FROM orders o WHERE o IS NOT NULL;
SELECT count(*) FROM orders o WHERE o IS NULL;

-- case: whole_hash_of_text
SELECT sum(hashtext(t::text)::bigint) FROM customer t;
SELECT sum(length(o::text)) FROM orders o;

-- case: whole_select_whole_row
SELECT c FROM customer c WHERE c.c_custkey < 4 ORDER BY c.c_custkey;

-- case: whole_star_expansion
SELECT (c).* FROM (SELECT c FROM customer c WHERE c_custkey < 3) s ORDER BY 1;
SELECT o.* FROM orders o WHERE o_orderkey = 23;

-- case: whole_row_comparison
SELECT count(*) FROM customer a JOIN customer b ON a = b;
SELECT count(*) FROM customer a JOIN customer b ON a.c_custkey = b.c_custkey WHERE a IS NOT DISTINCT FROM b;

-- case: whole_array_agg_rows
SELECT array_agg(c ORDER BY c_custkey) FROM customer c WHERE c_custkey <= 3;
SELECT cardinality(array_agg(o)) FROM orders o;

-- case: whole_json_agg_join
SELECT json_agg(json_build_object('o', o.o_orderkey, 'l', l.l_linenumber) ORDER BY o.o_orderkey, l.l_linenumber)
FROM orders o JOIN lineitem l ON l_orderkey = o_orderkey WHERE o_orderkey <= 3;

-- case: whole_row_in_join_output
SELECT o.o_orderkey, c FROM orders o JOIN customer c ON o_custkey = c_custkey WHERE o_orderkey <= 3 ORDER BY 1;

-- case: whole_whole_row_in_function
CREATE FUNCTION pg_temp.describe(c customer) RETURNS text LANGUAGE sql IMMUTABLE
	AS $$ SELECT c.c_name || '/' || c.c_segment $$;
SELECT pg_temp.describe(c) FROM customer c WHERE c_custkey <= 3 ORDER BY c_custkey;
SELECT count(*) FROM customer c WHERE pg_temp.describe(c) LIKE '%BUILDING';

-- case: whole_whole_row_group_by
SELECT count(*) FROM (SELECT t FROM customer t GROUP BY t) s;

-- case: whole_whole_row_reference_table
SELECT n::text FROM nation n ORDER BY n_nationkey LIMIT 3;
SELECT c.c_custkey, n FROM customer c JOIN nation n ON c_nation = n_nationkey WHERE c_custkey <= 2 ORDER BY 1;

-- case: whole_whole_row_in_cursor
BEGIN;
DECLARE cur CURSOR FOR SELECT row_to_json(c) FROM customer c ORDER BY c_custkey;
FETCH 2 FROM cur;
FETCH 2 FROM cur;
COMMIT;

-- case: whole_whole_row_plpgsql_rowtype
DO $$
DECLARE r customer; n int := 0;
BEGIN
	FOR r IN SELECT * FROM customer WHERE c_custkey <= 500 LOOP
		n := n + 1;
	END LOOP;
	SELECT * INTO r FROM customer WHERE c_custkey = 9;
	RAISE NOTICE 'rows %, customer 9 is %', n, r;
END $$;
