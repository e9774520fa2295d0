-- test/paths/setup/30_objects.members.sql: functions, views and
-- row-level security policies the cases use, on every member (a member
-- that evaluates a user function or checks a policy needs its own copy;
-- today policies are not forwarded).  Runs after the tables exist: SQL
-- function bodies are checked at creation.

-- inlinable: LANGUAGE sql, STABLE, a single SELECT, returning SETOF a
-- table; PostgreSQL's planner replaces the call with the query, so the
-- scan of orders appears only after inlining
CREATE FUNCTION f_orders(n int) RETURNS SETOF orders
	LANGUAGE sql STABLE AS $$ SELECT * FROM orders WHERE o_orderkey <= n $$;
CREATE FUNCTION f_cust_orders(c int) RETURNS SETOF orders
	LANGUAGE sql STABLE AS $$ SELECT * FROM orders WHERE o_custkey = c $$;
CREATE FUNCTION f_lines(ok int) RETURNS TABLE (ln int, qty int)
	LANGUAGE sql STABLE AS $$ SELECT l_linenumber, l_qty FROM lineitem WHERE l_orderkey = ok $$;
CREATE FUNCTION f_big_orders(minimum numeric) RETURNS SETOF orders
	LANGUAGE sql STABLE AS $$ SELECT * FROM orders WHERE o_total >= minimum $$;
-- not inlinable: VOLATILE, SECURITY DEFINER, a SET clause, PL/pgSQL
CREATE FUNCTION f_orders_volatile(n int) RETURNS SETOF orders
	LANGUAGE sql VOLATILE AS $$ SELECT * FROM orders WHERE o_orderkey <= n $$;
CREATE FUNCTION f_orders_secdef(n int) RETURNS SETOF orders
	LANGUAGE sql STABLE SECURITY DEFINER AS $$ SELECT * FROM orders WHERE o_orderkey <= n $$;
CREATE FUNCTION f_orders_set(n int) RETURNS SETOF orders
	LANGUAGE sql STABLE SET work_mem = '8MB' AS $$ SELECT * FROM orders WHERE o_orderkey <= n $$;
CREATE FUNCTION f_orders_plpgsql(n int) RETURNS SETOF orders
	LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN QUERY SELECT * FROM orders WHERE o_orderkey <= n; END $$;
-- a scalar SQL function that reads a distributed table: evaluated per
-- call (never inlined), wherever the expression is evaluated
CREATE FUNCTION f_count_cust(c int) RETURNS bigint
	LANGUAGE sql STABLE AS $$ SELECT count(*) FROM orders WHERE o_custkey = c $$;
-- inlinable scalar functions (become plain expressions)
CREATE FUNCTION f_double(x int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT x * 2 $$;
CREATE FUNCTION f_is_big(x numeric) RETURNS bool LANGUAGE sql IMMUTABLE AS $$ SELECT x > 900 $$;
-- a user function in an expression that is not inlined
CREATE FUNCTION f_plus_one(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN x + 1; END $$;
-- a user function over a user type
CREATE FUNCTION f_mood_score(m mood) RETURNS int LANGUAGE sql IMMUTABLE
	AS $$ SELECT CASE m WHEN 'sad' THEN -1 WHEN 'ok' THEN 0 WHEN 'happy' THEN 1 END $$;

-- PL/pgSQL: RETURN QUERY, a loop body that runs another distributed
-- query, a function returning a refcursor
CREATE FUNCTION f_rq(lo int, hi int) RETURNS TABLE (k int, total numeric)
	LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY SELECT o_orderkey, o_total FROM orders WHERE o_orderkey BETWEEN lo AND hi;
	RETURN QUERY SELECT o_orderkey, o_total FROM orders WHERE o_orderkey BETWEEN hi + 1000 AND hi + 1010;
END $$;
CREATE FUNCTION f_loop_sum(hi int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE r record; s numeric := 0;
BEGIN
	FOR r IN SELECT o_orderkey, o_total FROM orders WHERE o_orderkey <= hi LOOP
		s := s + r.o_total;
	END LOOP;
	RETURN s;
END $$;
CREATE FUNCTION f_loop_nested(hi int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r record; n bigint := 0; c bigint;
BEGIN
	FOR r IN SELECT o_orderkey FROM orders WHERE o_orderkey <= hi ORDER BY o_orderkey LOOP
		SELECT count(*) INTO c FROM lineitem WHERE l_orderkey = r.o_orderkey;
		n := n + c;
	END LOOP;
	RETURN n;
END $$;
CREATE FUNCTION f_open_cursor(hi int) RETURNS refcursor LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'f_open_cursor_c';
BEGIN
	OPEN c FOR SELECT o_orderkey, o_custkey FROM orders WHERE o_orderkey <= hi ORDER BY o_orderkey;
	RETURN c;
END $$;

-- views: plain, joined, aggregated, security_barrier with a leaky
-- function (the barrier keeps the function above the view's quals)
CREATE VIEW v_big_orders AS SELECT * FROM orders WHERE o_total > 900;
CREATE VIEW v_cust_orders AS
	SELECT c_custkey, c_name, c_nation, o_orderkey, o_total
	FROM customer JOIN orders ON o_custkey = c_custkey;
CREATE VIEW v_cust_totals AS
	SELECT o_custkey, count(*) AS n, sum(o_total) AS s FROM orders GROUP BY o_custkey;
CREATE VIEW v_sb WITH (security_barrier) AS
	SELECT o_orderkey, o_custkey, o_total, o_status FROM orders WHERE o_status = 'F';
CREATE FUNCTION f_leak(x numeric) RETURNS bool LANGUAGE plpgsql COST 0.0000001
	AS $$ BEGIN RETURN x > 500; END $$;
CREATE VIEW v_typed AS SELECT k, m, nc, p FROM typed WHERE m IS NOT NULL;

-- row-level security on a custom setting, the usual multi-tenant pattern
ALTER TABLE tenant_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY p_tenant ON tenant_rows
	USING (tenant = current_setting('myapp.tenant', true));
GRANT SELECT ON tenant_rows, orders, customer TO rx_tenant;
GRANT USAGE ON SCHEMA s1, s2 TO rx_tenant;
