-- test/paths/100_user_types.sql: user-defined types (enum, domain,
-- composite, range, arrays of them), a column with a user-created ICU
-- collation (nondeterministic: 'APPLE' = 'apple') and citext, in keys,
-- filters, joins, GROUP BY and ORDER BY.  The types exist on every member
-- (setup/10_types.members.sql) but their OIDs differ; the issue saw
-- "cannot gather" for a plain count(*).

-- case: ut_count
SELECT count(*) FROM typed;
SELECT count(*) FROM by_mood;
SELECT count(*) FROM by_nc;

-- case: ut_enum_rows
SELECT k, m FROM typed WHERE k <= 12 ORDER BY k;

-- case: ut_enum_filter
SELECT count(*) FROM typed WHERE m = 'happy';
SELECT count(*) FROM typed WHERE m > 'sad';
SELECT count(*) FROM typed WHERE m IS NULL;
SELECT count(*) FROM typed WHERE m IN ('ok', 'happy');

-- case: ut_enum_group_order
-- enum order is the declaration order (sad < ok < happy), not the text
SELECT m, count(*) FROM typed GROUP BY m ORDER BY m NULLS FIRST;
SELECT m, count(*) FROM typed GROUP BY m ORDER BY m DESC NULLS LAST;

-- case: ut_enum_min_max
SELECT min(m), max(m) FROM typed;
SELECT (k % 4), min(m), max(m) FROM typed GROUP BY 1 ORDER BY 1;

-- case: ut_enum_order_by_rows
SELECT k, m FROM typed WHERE k <= 30 ORDER BY m, k;

-- case: ut_enum_join
SELECT a.m, count(*) FROM typed a JOIN by_mood b ON a.m = b.m WHERE a.k <= 100 AND b.v <= 30 GROUP BY 1 ORDER BY 1;

-- case: ut_enum_distribution_key
SELECT m, count(*), sum(v) FROM by_mood GROUP BY m ORDER BY m;
SELECT count(*) FROM by_mood WHERE m = 'ok';
SELECT count(*) FROM by_mood a JOIN by_mood b ON a.m = b.m WHERE a.v < 10 AND b.v < 10;

-- case: ut_enum_to_text
SELECT m::text, count(*) FROM typed GROUP BY 1 ORDER BY 1 NULLS FIRST;
SELECT count(*) FROM typed WHERE m::text LIKE 'h%';

-- case: ut_enum_function
SELECT sum(f_mood_score(m)) FROM typed;
SELECT f_mood_score(m), count(*) FROM typed GROUP BY 1 ORDER BY 1 NULLS FIRST;

-- case: ut_domain
SELECT count(*), sum(d), min(d), max(d) FROM typed;
SELECT d, count(*) FROM typed WHERE d <= 3 GROUP BY d ORDER BY d;
SELECT count(*) FROM typed WHERE d > 150;

-- case: ut_domain_join
SELECT count(*) FROM typed t JOIN orders o ON o.o_orderkey = t.d;

-- case: ut_composite_rows
SELECT k, p FROM typed WHERE k <= 5 ORDER BY k;
SELECT (p).a, (p).b FROM typed WHERE k <= 5 ORDER BY k;

-- case: ut_composite_filter
SELECT count(*) FROM typed WHERE (p).a = 7;
SELECT count(*) FROM typed WHERE p = ROW(7, 'b0')::pair;
SELECT count(*) FROM typed WHERE p > ROW(40, 'b3')::pair;

-- case: ut_composite_group_order
SELECT p, count(*) FROM typed WHERE (p).a < 3 GROUP BY p ORDER BY p;

-- case: ut_composite_join
SELECT count(*) FROM typed a JOIN typed b ON a.p = b.p WHERE a.k <= 50;

-- case: ut_range
SELECT count(*) FROM typed WHERE r @> 5;
SELECT r, count(*) FROM typed WHERE k <= 40 GROUP BY r ORDER BY r LIMIT 6;
SELECT count(*) FROM typed a JOIN typed b ON a.r && b.r WHERE a.k <= 5 AND b.k <= 200;

-- case: ut_user_range
SELECT count(*) FROM typed WHERE fr @> 1.1::float8;
SELECT fr, count(*) FROM typed GROUP BY fr ORDER BY fr LIMIT 4;
SELECT lower(fr), upper(fr) FROM typed WHERE k <= 3 ORDER BY k;

-- case: ut_enum_array
SELECT count(*) FROM typed WHERE ma @> ARRAY['happy']::mood[];
SELECT ma, count(*) FROM typed GROUP BY ma ORDER BY ma;
SELECT k, ma FROM typed WHERE k <= 4 ORDER BY k;

-- case: ut_enum_array_unnest
SELECT u, count(*) FROM typed, unnest(ma) u GROUP BY u ORDER BY u;

-- case: ut_nocase_equality
SELECT count(*) FROM typed WHERE nc = 'APPLE1';
SELECT count(*) FROM typed WHERE nc = 'apple1';
SELECT count(*) FROM typed WHERE nc LIKE 'A%' COLLATE "C";

-- case: ut_nocase_group_by
-- equal values in different cases form one group under nocase
SELECT lower(min(nc COLLATE "C")), count(*) FROM typed GROUP BY nc ORDER BY 1;
SELECT count(DISTINCT nc) FROM typed;

-- case: ut_nocase_distinct
SELECT count(*) FROM (SELECT DISTINCT nc FROM typed) s;

-- case: ut_nocase_join
SELECT count(*) FROM typed t JOIN by_nc b ON t.nc = b.nc WHERE t.k <= 40;
SELECT count(*) FROM by_nc a JOIN by_nc b ON a.nc = b.nc WHERE a.v <= 20;

-- case: ut_nocase_distribution_key
SELECT lower(min(nc COLLATE "C")), count(*), sum(v) FROM by_nc GROUP BY nc ORDER BY 1;
SELECT count(*) FROM by_nc WHERE nc = 'banana2';

-- case: ut_nocase_order_by
SELECT nc FROM typed WHERE k <= 16 ORDER BY nc, k;

-- case: ut_nocase_rows
SELECT k, nc FROM typed WHERE k <= 8 ORDER BY k;

-- case: ut_view_over_types
SELECT m, count(*) FROM v_typed GROUP BY m ORDER BY m;

-- case: ut_cursor_over_types
BEGIN;
DECLARE c CURSOR FOR SELECT k, m, p FROM typed ORDER BY k;
FETCH 2 FROM c;
FETCH 2 FROM c;
COMMIT;

-- case: ut_int_array_builtin
-- a built-in array type and a built-in range for comparison, on a table
-- without user types
SELECT ARRAY[o_orderkey % 3, o_orderkey % 5], count(*) FROM orders GROUP BY 1 ORDER BY 1 LIMIT 5;
SELECT int4range(o_orderkey % 10, o_orderkey % 10 + 3), count(*) FROM orders GROUP BY 1 ORDER BY 1 LIMIT 3;

-- case: ut_type_cast_in_query
SELECT count(*) FROM orders WHERE (CASE o_orderkey % 3 WHEN 0 THEN 'sad' WHEN 1 THEN 'ok' ELSE 'happy' END)::mood > 'sad';
SELECT (CASE o_orderkey % 3 WHEN 0 THEN 'sad' WHEN 1 THEN 'ok' ELSE 'happy' END)::mood, count(*) FROM orders GROUP BY 1 ORDER BY 1;

-- case: ut_row_constructor_over_exchange
SELECT ROW(o_orderkey, o_status)::text FROM orders WHERE o_orderkey <= 3 ORDER BY o_orderkey;
SELECT count(DISTINCT ROW(o_status, o_flag)) FROM orders;

-- case: ut_citext_filter needs=citext refused
SELECT count(*) FROM ci_t WHERE tag = 'red';
SELECT count(*) FROM ci_t WHERE k = 'ALPHA4';
SELECT count(*) FROM ci_t WHERE k LIKE 'alpha%';

-- case: ut_citext_group needs=citext
SELECT lower(tag::text), count(*) FROM ci_t GROUP BY tag ORDER BY 1;
SELECT count(DISTINCT tag) FROM ci_t;

-- case: ut_citext_join needs=citext
SELECT count(*) FROM ci_t a JOIN ci_t b ON a.tag = b.tag WHERE a.v <= 10 AND b.v <= 100;
SELECT count(*) FROM ci_t a JOIN ci_t b ON upper(a.k::text) = b.k WHERE a.v <= 50;

-- case: ut_citext_order needs=citext
SELECT k FROM ci_t WHERE v <= 12 ORDER BY k;
