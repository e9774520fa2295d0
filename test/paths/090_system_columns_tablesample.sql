-- test/paths/090_system_columns_tablesample.sql: system columns and
-- TABLESAMPLE.  tableoid must be the distributed table's OID on the
-- coordinator (the issue saw members' rows carry their own OID, which
-- named another table there); ctid and xmin either mean something README
-- states or are refused clearly, so only answers that hold either way are
-- compared (NOT NULL counts).  TABLESAMPLE at 100 % must sample every
-- member's part (the issue: "cannot gather distributed table").

-- case: sys_tableoid_group
SELECT tableoid::regclass, count(*) FROM orders GROUP BY 1;

-- case: sys_tableoid_filter
SELECT count(*) FROM orders WHERE tableoid = 'orders'::regclass;
SELECT count(*) FROM orders WHERE tableoid <> 'orders'::regclass;

-- case: sys_tableoid_join
SELECT o.tableoid::regclass, l.tableoid::regclass, count(*)
FROM orders o JOIN lineitem l ON l_orderkey = o_orderkey WHERE o_orderkey < 100 GROUP BY 1, 2;

-- case: sys_tableoid_union
SELECT tableoid::regclass, count(*) FROM (
	SELECT tableoid, o_orderkey AS k FROM orders
	UNION ALL SELECT tableoid, c_custkey FROM customer) u
GROUP BY 1 ORDER BY 1;

-- case: sys_tableoid_rows
SELECT o_orderkey, tableoid::regclass FROM orders WHERE o_orderkey < 5 ORDER BY 1;

-- case: sys_tableoid_reference
SELECT tableoid::regclass, count(*) FROM nation GROUP BY 1;
SELECT c.tableoid::regclass, n.tableoid::regclass, count(*) FROM customer c JOIN nation n ON c_nation = n_nationkey GROUP BY 1, 2;

-- case: sys_tableoid_pg_class_join
SELECT relname, count(*) FROM orders JOIN pg_class ON pg_class.oid = orders.tableoid GROUP BY 1;

-- case: sys_ctid_xmin_not_null
SELECT count(*) FROM orders WHERE ctid IS NOT NULL;
SELECT count(*) FROM orders WHERE xmin IS NOT NULL;

-- case: sys_tablesample_bernoulli_100
SELECT count(*) FROM orders TABLESAMPLE BERNOULLI (100);
SELECT count(*), sum(l_qty) FROM lineitem TABLESAMPLE BERNOULLI (100);

-- case: sys_tablesample_system_100
SELECT count(*) FROM orders TABLESAMPLE SYSTEM (100);
SELECT count(*) FROM customer TABLESAMPLE SYSTEM (100);

-- case: sys_tablesample_zero
SELECT count(*) FROM orders TABLESAMPLE BERNOULLI (0);
SELECT count(*) FROM orders TABLESAMPLE SYSTEM (0);

-- case: sys_tablesample_repeatable_100
SELECT count(*) FROM orders TABLESAMPLE BERNOULLI (100) REPEATABLE (7);

-- case: sys_tablesample_join
SELECT count(*) FROM orders TABLESAMPLE BERNOULLI (100) JOIN customer ON o_custkey = c_custkey;

-- case: sys_tablesample_rows
SELECT o_orderkey FROM orders TABLESAMPLE SYSTEM (100) WHERE o_orderkey < 6 ORDER BY 1;

-- case: sys_tablesample_group
SELECT o_status, count(*) FROM orders TABLESAMPLE BERNOULLI (100) GROUP BY 1 ORDER BY 1;

-- case: sys_tablesample_empty_table
SELECT count(*) FROM empty_t TABLESAMPLE BERNOULLI (100);

-- case: sys_tablesample_reference
SELECT count(*) FROM nation TABLESAMPLE BERNOULLI (100);

-- case: sys_only_keyword
SELECT count(*) FROM ONLY orders;
SELECT count(*) FROM orders * ;
