-- test/paths/010_basics.sql: plain distributed queries through psql's
-- ordinary path (no cursor, no function, default settings).  They are the
-- control group for the other files: when these fail, the data or the
-- harness is wrong, not the client path under test.

-- case: basic_counts
SELECT count(*) FROM orders;
SELECT count(*) FROM customer;
SELECT count(*) FROM lineitem;
SELECT count(*) FROM nation;
SELECT count(*) FROM empty_t;
SELECT count(*), count(k), count(DISTINCT k) FROM skew;

-- case: basic_sums
SELECT sum(o_total), min(o_date), max(o_date), count(o_custkey), count(o_comment) FROM orders;
SELECT sum(l_qty), sum(l_price), avg(l_qty)::numeric(10,4) FROM lineitem;

-- case: basic_group_by_ordered
SELECT o_status, count(*), sum(o_total) FROM orders GROUP BY o_status ORDER BY o_status;
SELECT o_custkey, count(*) FROM orders GROUP BY o_custkey ORDER BY count(*) DESC, o_custkey NULLS FIRST LIMIT 10;

-- case: basic_rows_ordered
SELECT o_orderkey, o_custkey, o_status, o_total, o_date FROM orders WHERE o_orderkey < 40 ORDER BY o_orderkey;

-- case: basic_rows_unordered unordered
SELECT o_orderkey, o_custkey, o_total FROM orders WHERE o_orderkey % 500 = 0;

-- case: basic_colocated_join
SELECT count(*), sum(l_qty) FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_status = 'F';

-- case: basic_repartition_join
SELECT c_segment, count(*), sum(o_total) FROM orders JOIN customer ON o_custkey = c_custkey GROUP BY c_segment ORDER BY 1;

-- case: basic_reference_join
SELECT n_name, count(*) FROM customer JOIN nation ON c_nation = n_nationkey GROUP BY n_name ORDER BY n_name LIMIT 6;

-- case: basic_outer_joins
SELECT count(*), count(c_custkey) FROM orders LEFT JOIN customer ON o_custkey = c_custkey;
SELECT count(*), count(o_orderkey) FROM customer LEFT JOIN orders ON o_custkey = c_custkey;
SELECT count(*) FROM customer c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_custkey = c.c_custkey);
SELECT count(*) FROM customer c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.o_custkey = c.c_custkey);

-- case: basic_skew_and_nulls
SELECT k, count(*) FROM skew GROUP BY k ORDER BY k NULLS FIRST LIMIT 5;
SELECT count(*) FROM skew a JOIN skew b ON a.k = b.k WHERE a.v < 100;

-- case: basic_empty
SELECT * FROM empty_t;
SELECT count(*), max(k) FROM empty_t;
SELECT count(*) FROM orders JOIN empty_t ON k = o_orderkey;
SELECT count(*) FROM orders LEFT JOIN empty_t ON k = o_orderkey;

-- case: basic_limit_offset
SELECT o_orderkey FROM orders ORDER BY o_total DESC, o_orderkey LIMIT 5 OFFSET 3;

-- case: basic_distinct_window
SELECT count(DISTINCT o_custkey), count(DISTINCT o_status) FROM orders;
SELECT o_orderkey, rank() OVER (PARTITION BY o_status ORDER BY o_total DESC, o_orderkey) FROM orders WHERE o_orderkey < 30 ORDER BY 1;

-- case: basic_union
SELECT o_orderkey FROM orders WHERE o_orderkey < 5 UNION ALL SELECT l_orderkey FROM lineitem WHERE l_orderkey < 3 ORDER BY 1;
SELECT c_custkey FROM customer WHERE c_custkey < 10 INTERSECT SELECT o_custkey FROM orders ORDER BY 1;

-- case: basic_text_keys
SELECT count(*), min(k), max(k) FROM tk_a;
SELECT count(*), count(ak) FROM tk_b;
SELECT count(*) FROM tk_a a JOIN tk_b b ON a.k = b.ak;
