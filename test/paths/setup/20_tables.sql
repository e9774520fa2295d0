-- test/paths/setup/20_tables.sql: the tables and rows every case reads,
-- the same on the plain server and on the cluster.  psql variable rx is 1
-- on the cluster (member 0) and 0 on the plain server; only the placement
-- calls depend on it.  Every value is computed from generate_series (no
-- random()), so both sides hold exactly the same rows.

-- orders: distributed on o_orderkey; NULL customers (every 101st), one
-- heavily skewed customer (42), customers that do not exist (3001..3100),
-- NULL comments, and a column of every type whose text form depends on a
-- setting (date, timestamp, timestamptz, float8, bytea, interval)
CREATE TABLE orders (
	o_orderkey int PRIMARY KEY,
	o_custkey int,
	o_status char(1),
	o_total numeric(12,2),
	o_date date,
	o_ts timestamp,
	o_tstz timestamptz,
	o_comment text,
	o_flag bool,
	o_f8 float8,
	o_bytes bytea,
	o_iv interval
);
INSERT INTO orders
SELECT i,
	CASE WHEN i % 101 = 0 THEN NULL WHEN i % 10 = 0 THEN 42 ELSE (i * 7) % 3100 + 1 END,
	substr('FOP', i % 3 + 1, 1),
	((i * 37) % 100000) / 100.0,
	date '1995-01-01' + (i % 1500),
	timestamp '1995-01-01 00:00:00' + (i % 1500) * interval '1 day' + (i % 86400) * interval '1 second',
	timestamptz '1995-01-01 00:00:00+00' + i * interval '47 minutes',
	CASE WHEN i % 17 = 0 THEN NULL
		ELSE (ARRAY['the quick brown fox', 'jumps over', 'the lazy dog', 'ship it now', 'deposits sleep'])[i % 5 + 1] || ' ' || i END,
	i % 2 = 0,
	i / 7.0::float8,
	decode(lpad(to_hex(i), 8, '0'), 'hex'),
	(i % 1000) * interval '1 minute' + (i % 40) * interval '1 day'
FROM generate_series(1, 30000) i;

CREATE TABLE customer (
	c_custkey int PRIMARY KEY,
	c_name text NOT NULL,
	c_nation int NOT NULL,
	c_segment text,
	c_acctbal numeric(12,2)
);
INSERT INTO customer
SELECT i, 'Customer#' || lpad(i::text, 5, '0'), i % 25,
	(ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[i % 5 + 1],
	((i * 7919) % 1000000) / 100.0 - 1000
FROM generate_series(1, 3000) i;

-- lineitem: co-located with orders (distributed on l_orderkey), 1 to 7
-- lines for the first 12000 orders (about 48000 rows)
CREATE TABLE lineitem (
	l_orderkey int NOT NULL,
	l_linenumber int NOT NULL,
	l_qty int,
	l_price numeric(12,2),
	l_shipdate date,
	l_flag char(1),
	PRIMARY KEY (l_orderkey, l_linenumber)
);
INSERT INTO lineitem
SELECT o, n, (o * n) % 50 + 1, ((o * 13 + n * 101) % 10000) / 10.0,
	date '1995-01-01' + (o % 1500) + n, substr('ANR', (o + n) % 3 + 1, 1)
FROM generate_series(1, 12000) o, generate_series(1, 7) n
WHERE n <= 1 + o % 7;

-- reference tables
CREATE TABLE region (r_regionkey int PRIMARY KEY, r_name text NOT NULL);
INSERT INTO region VALUES (0, 'AFRICA'), (1, 'AMERICA'), (2, 'ASIA'), (3, 'EUROPE'), (4, 'MIDDLE EAST');
CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name text NOT NULL, n_regionkey int NOT NULL);
INSERT INTO nation SELECT i, 'NATION' || lpad(i::text, 2, '0'), i % 5 FROM generate_series(0, 24) i;

-- an empty distributed table
CREATE TABLE empty_t (k int, v text);

-- skew: 80 % of the rows on one key (one member), 10 % NULL keys
CREATE TABLE skew (k int, v int);
INSERT INTO skew
SELECT CASE WHEN i % 10 < 8 THEN 7 WHEN i % 10 = 8 THEN NULL ELSE i END, i
FROM generate_series(1, 10000) i;

-- small text-keyed tables for joins whose sides are empty on some
-- members: the harness passes psql variables keys_m0, keys_m1, keys_m2
-- listing keys stored on that member only (computed with
-- rdma_exchange.member_index_of on the cluster), so a filter on them
-- leaves rows on chosen members.  tk_b.ak points into tk_a (and past it:
-- 'k2001'..'k2200' do not exist); ak is not the distribution column, so
-- a join on it needs an exchange.
CREATE TABLE tk_a (k text PRIMARY KEY, v int);
INSERT INTO tk_a SELECT 'k' || i, i FROM generate_series(1, 2000) i;
CREATE TABLE tk_b (k text PRIMARY KEY, ak text, w int);
INSERT INTO tk_b
SELECT 'k' || i, CASE WHEN i % 50 = 0 THEN NULL ELSE 'k' || ((i * 13) % 2200 + 1) END, i % 100
FROM generate_series(1, 2000) i;

-- user types in every position
CREATE TABLE typed (
	k int PRIMARY KEY,
	m mood,
	d posint,
	p pair,
	r int4range,
	fr floatrange,
	ma mood[],
	nc text COLLATE nocase,
	arr int[]
);
INSERT INTO typed
SELECT i,
	CASE WHEN i % 11 = 0 THEN NULL ELSE (ARRAY['sad', 'ok', 'happy'])[i % 3 + 1]::mood END,
	i % 200 + 1,
	ROW(i % 50, 'b' || (i % 7))::pair,
	int4range(i % 100, i % 100 + i % 7 + 1),
	floatrange((i % 10) / 4.0, (i % 10) / 4.0 + 1),
	ARRAY[(ARRAY['sad', 'ok', 'happy'])[i % 3 + 1], (ARRAY['sad', 'ok', 'happy'])[i % 2 + 1]]::mood[],
	-- the same word in different cases: equal under nocase
	(ARRAY['Apple', 'APPLE', 'apple', 'Banana', 'BANANA', 'cherry', 'Cherry', 'date'])[i % 8 + 1] || (i % 5),
	ARRAY[i % 3, i % 5]
FROM generate_series(1, 5000) i;

-- distributed on an enum and on a column with a nondeterministic
-- collation: placement must hash the value, not its OID or bytes
CREATE TABLE by_mood (m mood, v int);
INSERT INTO by_mood SELECT (ARRAY['sad', 'ok', 'happy'])[i % 3 + 1]::mood, i FROM generate_series(1, 3000) i;
CREATE TABLE by_nc (nc text COLLATE nocase, v int);
INSERT INTO by_nc
SELECT (ARRAY['Apple', 'APPLE', 'apple', 'Banana', 'BANANA', 'cherry', 'Cherry', 'date'])[i % 8 + 1] || (i % 5), i
FROM generate_series(1, 2000) i;

-- row-level security on a setting (policies: 30_objects.members.sql)
CREATE TABLE tenant_rows (k int PRIMARY KEY, tenant text, v int);
INSERT INTO tenant_rows SELECT i, 't' || (i % 4), i FROM generate_series(1, 3000) i;

-- tables only the writing cases touch (inside BEGIN ... ROLLBACK), so a
-- write that escapes its rollback spoils those cases only
CREATE TABLE w_orders (k int PRIMARY KEY, c int, v int, note text);
INSERT INTO w_orders SELECT i, i % 300 + 1, i % 17, 'n' || (i % 9) FROM generate_series(1, 3000) i;
CREATE TABLE w_cust (c int PRIMARY KEY, flag int);
INSERT INTO w_cust SELECT i, i % 4 FROM generate_series(1, 300) i;
CREATE TABLE w_other (id int PRIMARY KEY, c int);
INSERT INTO w_other SELECT i, (i * 7) % 300 + 1 FROM generate_series(1, 500) i;
CREATE TABLE w_ref (id int PRIMARY KEY, name text);
INSERT INTO w_ref SELECT i, 'ref' || i FROM generate_series(1, 50) i;

-- a table per schema with the same name, for search_path and regclass
CREATE TABLE s1.thing (id int PRIMARY KEY, what text);
INSERT INTO s1.thing VALUES (1, 'thing in s1');
CREATE TABLE s2.thing (id int PRIMARY KEY, what text);
INSERT INTO s2.thing VALUES (1, 'thing in s2');

\if :rx
SELECT rdma_exchange.create_distributed_table('orders', 'o_orderkey');
SELECT rdma_exchange.create_distributed_table('customer', 'c_custkey');
SELECT rdma_exchange.create_distributed_table('lineitem', 'l_orderkey');
SELECT rdma_exchange.create_reference_table('region');
SELECT rdma_exchange.create_reference_table('nation');
SELECT rdma_exchange.create_distributed_table('empty_t', 'k');
SELECT rdma_exchange.create_distributed_table('skew', 'k');
SELECT rdma_exchange.create_distributed_table('tk_a', 'k');
SELECT rdma_exchange.create_distributed_table('tk_b', 'k');
SELECT rdma_exchange.create_distributed_table('typed', 'k');
SELECT rdma_exchange.create_distributed_table('by_mood', 'm');
SELECT rdma_exchange.create_distributed_table('by_nc', 'nc');
SELECT rdma_exchange.create_distributed_table('tenant_rows', 'k');
SELECT rdma_exchange.create_distributed_table('w_orders', 'k');
SELECT rdma_exchange.create_distributed_table('w_cust', 'c');
SELECT rdma_exchange.create_distributed_table('w_other', 'id');
SELECT rdma_exchange.create_reference_table('w_ref');
SELECT rdma_exchange.create_reference_table('s1.thing');
SELECT rdma_exchange.create_reference_table('s2.thing');
\endif

-- fragments run as the current user on every member: the role needs
-- rdma_exchange's execute_fragment there (cluster only)
\if :rx
SELECT rdma_exchange.run_on_all_nodes($grants$
	GRANT USAGE ON SCHEMA rdma_exchange TO rx_tenant;
	GRANT EXECUTE ON FUNCTION rdma_exchange.execute_fragment(text) TO rx_tenant
$grants$);
\endif
