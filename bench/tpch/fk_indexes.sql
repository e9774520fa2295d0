-- bench/tpch/fk_indexes.sql: the index set "fk" of load.sh (RX_INDEX_SET=fk):
-- besides the primary keys and lineitem (l_partkey, l_suppkey) of
-- schema.sql, an index on every foreign key column, as DBAs usually
-- create them.  Their plans differ (nested loops over these indexes,
-- issue 11), so the benchmarks and make test run both sets.
CREATE INDEX lineitem_orderkey ON lineitem (l_orderkey);
CREATE INDEX lineitem_partkey ON lineitem (l_partkey);
CREATE INDEX lineitem_suppkey ON lineitem (l_suppkey);
CREATE INDEX orders_custkey ON orders (o_custkey);
CREATE INDEX partsupp_partkey ON partsupp (ps_partkey);
CREATE INDEX partsupp_suppkey ON partsupp (ps_suppkey);
CREATE INDEX customer_nationkey ON customer (c_nationkey);
CREATE INDEX supplier_nationkey ON supplier (s_nationkey);
CREATE INDEX nation_regionkey ON nation (n_regionkey);
