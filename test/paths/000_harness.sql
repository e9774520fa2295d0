-- test/paths/000_harness.sql: cases that touch no distributed table.
-- They must pass everywhere: a failure here is a fault of the harness (or
-- of the extension's hooks on plain queries), not of a client path.

-- case: harness_constants
SELECT 1 AS one, 'two' AS two, NULL::int AS nothing;
SELECT 1.5::numeric * 3, 7 / 2, 7 % 3;

-- case: harness_series_ordered
SELECT i, i * i FROM generate_series(1, 20) i ORDER BY i DESC;

-- case: harness_unordered unordered
-- the sort makes any row order compare equal
SELECT i FROM generate_series(1, 50) i ORDER BY random();

-- case: harness_error_in_the_middle
SELECT 'before';
SELECT 1 / 0;
SELECT 'after';

-- case: harness_local_cursor
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT i FROM generate_series(1, 10) i;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
MOVE ABSOLUTE 8 IN c;
FETCH ALL FROM c;
COMMIT;

-- case: harness_local_plpgsql
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT i FROM generate_series(1, 100) i LOOP
		n := n + r.i;
	END LOOP;
	RAISE NOTICE 'sum %', n;
END $$;

-- case: harness_temp_table
CREATE TEMP TABLE h (a int, b text);
INSERT INTO h SELECT i, 'x' || i FROM generate_series(1, 5) i;
SELECT * FROM h ORDER BY a;
BEGIN;
DELETE FROM h WHERE a > 2;
SELECT count(*) FROM h;
ROLLBACK;
SELECT count(*) FROM h;

-- case: harness_settings_output
SET DateStyle = 'SQL, DMY';
SELECT date '2001-02-03', timestamp '2001-02-03 04:05:06';
SET extra_float_digits = 0;
SELECT 1 / 3::float8;
SET bytea_output = 'escape';
SELECT 'ab'::bytea;

-- case: harness_member_variables
-- the placement variables expand on every server alike
SELECT ARRAY[:keys_m0] || ARRAY[:keys_m1] || ARRAY[:keys_m2] IS NOT NULL;
SELECT cardinality(ARRAY[:ints_m0, :ints_m1, :ints_m2]);

-- case: harness_user_types_local
-- the user types exist on this server (created in setup), used without a
-- table
SELECT 'happy'::mood > 'sad'::mood, 5::posint, ROW(1, 'x')::pair, floatrange(1, 2);
SELECT 'ABC' = 'abc' COLLATE nocase;

-- case: harness_reference_only
-- a query over reference tables alone runs on the member it is sent to
SELECT n_name, r_name FROM nation JOIN region ON n_regionkey = r_regionkey ORDER BY n_nationkey LIMIT 5;
