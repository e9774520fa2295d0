-- test/paths/050_views_ctes_sublinks.sql: query shapes PostgreSQL's
-- rewriter and planner change before the extension sees the final plan:
-- views (plain, joined, aggregated, security_barrier), CTEs (inlined,
-- MATERIALIZED, recursive) and sublinks (EXISTS, IN, NOT IN, ANY, scalar
-- subqueries in SELECT, WHERE and HAVING).  Every scan of a distributed
-- table in them must read every member's rows.

-- case: view_plain
SELECT count(*), sum(o_total) FROM v_big_orders;
SELECT o_orderkey, o_total FROM v_big_orders ORDER BY o_total DESC, o_orderkey LIMIT 5;

-- case: view_join
SELECT count(*), sum(o_total) FROM v_cust_orders;
SELECT c_nation, count(*) FROM v_cust_orders GROUP BY c_nation ORDER BY c_nation LIMIT 5;

-- case: view_aggregate
SELECT count(*), sum(n), max(s) FROM v_cust_totals;
SELECT * FROM v_cust_totals WHERE o_custkey IN (1, 42, 3050) ORDER BY 1;

-- case: view_aggregate_joined
SELECT c_segment, sum(n) FROM v_cust_totals JOIN customer ON o_custkey = c_custkey GROUP BY 1 ORDER BY 1;

-- case: view_security_barrier
SELECT count(*), sum(o_total) FROM v_sb;
SELECT count(*) FROM v_sb WHERE f_leak(o_total);
SELECT o_orderkey FROM v_sb WHERE o_custkey = 42 ORDER BY 1 LIMIT 5;

-- case: view_security_barrier_join
SELECT count(*) FROM v_sb JOIN lineitem ON l_orderkey = o_orderkey WHERE l_qty > 40;

-- case: view_security_barrier_as_tenant
-- a non-superuser reading a security barrier view
SET ROLE rx_tenant;
SELECT count(*) FROM v_sb;
RESET ROLE;

-- case: view_temp_over_distributed
CREATE TEMP VIEW tv AS SELECT o_custkey, o_total FROM orders WHERE o_status = 'O';
SELECT count(*), sum(o_total) FROM tv;
SELECT count(*) FROM tv JOIN customer ON o_custkey = c_custkey;

-- case: view_nested
CREATE TEMP VIEW tv1 AS SELECT * FROM v_big_orders WHERE o_status = 'F';
CREATE TEMP VIEW tv2 AS SELECT o_custkey, count(*) AS n FROM tv1 GROUP BY o_custkey;
SELECT count(*), sum(n) FROM tv2;

-- case: cte_inlined
WITH x AS (SELECT o_orderkey, o_total FROM orders WHERE o_status = 'P')
SELECT count(*), sum(o_total) FROM x;

-- case: cte_materialized
WITH x AS MATERIALIZED (SELECT o_orderkey, o_custkey FROM orders WHERE o_orderkey < 5000)
SELECT count(*), count(DISTINCT o_custkey) FROM x;

-- case: cte_materialized_twice
WITH x AS MATERIALIZED (SELECT o_custkey, count(*) n FROM orders GROUP BY o_custkey)
SELECT (SELECT count(*) FROM x), (SELECT sum(n) FROM x), (SELECT max(n) FROM x a JOIN x b USING (o_custkey));

-- case: cte_joined
WITH big AS (SELECT o_orderkey FROM orders WHERE o_total > 990),
	lines AS (SELECT l_orderkey, sum(l_qty) q FROM lineitem GROUP BY l_orderkey)
SELECT count(*), sum(q) FROM big JOIN lines ON l_orderkey = o_orderkey;

-- case: cte_recursive_over_distributed
WITH RECURSIVE r(k, depth) AS (
	SELECT o_orderkey, 1 FROM orders WHERE o_orderkey = 1
	UNION ALL
	SELECT o.o_orderkey, r.depth + 1 FROM r JOIN orders o ON o.o_orderkey = r.k * 2 WHERE r.depth < 12
)
SELECT k, depth FROM r ORDER BY depth;

-- case: cte_recursive_count
WITH RECURSIVE r(k) AS (
	SELECT c_custkey FROM customer WHERE c_custkey <= 3
	UNION
	SELECT o_custkey FROM r JOIN orders ON o_orderkey = r.k * 7 WHERE o_custkey IS NOT NULL
)
SELECT count(*), min(k), max(k) FROM r;

-- case: cte_data_modifying_read refused
-- a writable CTE needs a transaction; rolled back
BEGIN;
WITH d AS (DELETE FROM w_orders WHERE k <= 10 RETURNING k) SELECT count(*) FROM d;
ROLLBACK;

-- case: sublink_exists
SELECT count(*) FROM customer c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.o_custkey = c.c_custkey AND o.o_total > 900);
SELECT count(*) FROM customer c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.o_custkey = c.c_custkey AND o.o_total > 900);

-- case: sublink_in_not_in
SELECT count(*) FROM customer WHERE c_custkey IN (SELECT o_custkey FROM orders WHERE o_status = 'F');
-- NOT IN with NULLs in the subquery: no row qualifies
SELECT count(*) FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders);
SELECT count(*) FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders WHERE o_custkey IS NOT NULL);

-- case: sublink_any_all
SELECT count(*) FROM orders WHERE o_custkey = ANY (SELECT c_custkey FROM customer WHERE c_nation = 3);
SELECT count(*) FROM orders WHERE o_total > ALL (SELECT l_price / 10 FROM lineitem WHERE l_orderkey = 5);

-- case: sublink_scalar_select_list
SELECT c_custkey, (SELECT count(*) FROM orders WHERE o_custkey = c_custkey),
	(SELECT max(o_total) FROM orders WHERE o_custkey = c_custkey)
FROM customer WHERE c_custkey <= 6 ORDER BY 1;

-- case: sublink_scalar_uncorrelated
SELECT count(*) FROM orders WHERE o_total > (SELECT avg(o_total) FROM orders);
SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM lineitem);

-- case: sublink_correlated_aggregate
SELECT count(*) FROM lineitem l WHERE l_qty > (SELECT avg(l2.l_qty) FROM lineitem l2 WHERE l2.l_orderkey = l.l_orderkey);

-- case: sublink_having
SELECT o_status, count(*) FROM orders GROUP BY o_status
HAVING count(*) > (SELECT count(*) / 4 FROM orders) ORDER BY 1;

-- case: sublink_in_join_condition
SELECT count(*) FROM orders o JOIN customer c ON o.o_custkey = c.c_custkey
	AND c.c_nation IN (SELECT n_nationkey FROM nation WHERE n_regionkey = 2);

-- case: sublink_array
SELECT cardinality(ARRAY(SELECT o_orderkey FROM orders WHERE o_custkey = 7 ORDER BY 1));
SELECT ARRAY(SELECT o_orderkey FROM orders WHERE o_custkey = 8 ORDER BY 1);

-- case: sublink_lateral_subquery
SELECT c.c_custkey, x.n FROM customer c,
	LATERAL (SELECT count(*) n FROM orders o WHERE o.o_custkey = c.c_custkey) x
WHERE c.c_custkey <= 5 ORDER BY 1;

-- case: sublink_lateral_limit
SELECT c.c_custkey, x.o_orderkey FROM customer c,
	LATERAL (SELECT o_orderkey FROM orders o WHERE o.o_custkey = c.c_custkey ORDER BY o_total DESC, o_orderkey LIMIT 2) x
WHERE c.c_custkey <= 5 ORDER BY 1, 2;

-- case: sublink_union_in_subquery
SELECT count(*) FROM (SELECT o_custkey FROM orders UNION SELECT c_custkey FROM customer) u;

-- case: rls_on_setting_as_tenant
-- the issue: RLS policies written on a setting return no rows
SET ROLE rx_tenant;
SET myapp.tenant = 't1';
SELECT count(*), sum(v) FROM tenant_rows;
SET myapp.tenant = 't3';
SELECT count(*), min(k), max(k) FROM tenant_rows;
RESET myapp.tenant;
SELECT count(*) FROM tenant_rows;
RESET ROLE;

-- case: rls_on_setting_rows
SET ROLE rx_tenant;
SET myapp.tenant = 't2';
SELECT k, tenant FROM tenant_rows WHERE k < 20 ORDER BY k;
RESET ROLE;

-- case: rls_on_setting_join
SET ROLE rx_tenant;
SET myapp.tenant = 't0';
SELECT count(*) FROM tenant_rows t JOIN orders o ON o.o_orderkey = t.k;
RESET ROLE;

-- case: rls_set_local_in_transaction
SET ROLE rx_tenant;
BEGIN;
SET LOCAL myapp.tenant = 't1';
SELECT count(*) FROM tenant_rows;
COMMIT;
SELECT count(*) FROM tenant_rows;
RESET ROLE;

-- case: rls_superuser_bypasses
SET myapp.tenant = 't1';
SELECT count(*) FROM tenant_rows;
