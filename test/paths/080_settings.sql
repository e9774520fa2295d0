-- test/paths/080_settings.sql: settings that change an answer must reach
-- the fragments.  Each case sets something in the session, then runs a
-- distributed query whose rows depend on it where the fragments compute
-- them (text forms grouped or filtered on the members, parsing of text,
-- comparisons).  The issue: current_setting('myapp.x', true) was NULL on
-- the members, SET array_nulls = off gave 0 rows.

-- case: set_custom_current_setting
SET myapp.x = '42';
SELECT count(*) FROM orders WHERE current_setting('myapp.x', true) = '42';
SELECT current_setting('myapp.x', true), count(*) FROM orders GROUP BY 1;
SELECT count(*) FROM orders WHERE current_setting('myapp.x') = '42';

-- case: set_custom_in_expression
SET myapp.limit = '100';
SELECT count(*) FROM orders WHERE o_orderkey <= current_setting('myapp.limit')::int;
SELECT count(*) FROM orders o JOIN customer c ON o.o_custkey = c.c_custkey WHERE c.c_custkey <= current_setting('myapp.limit')::int;

-- case: set_custom_unset_is_null
SELECT count(*), count(current_setting('myapp.never', true)) FROM orders;

-- case: set_custom_set_config
SELECT set_config('myapp.y', '7', false);
SELECT count(*) FROM orders WHERE o_custkey = current_setting('myapp.y')::int;

-- case: set_custom_set_local
BEGIN;
SET LOCAL myapp.z = 'inside';
SELECT count(*) FROM orders WHERE current_setting('myapp.z', true) = 'inside';
COMMIT;
SELECT count(*) FROM orders WHERE current_setting('myapp.z', true) = 'inside';

-- case: set_custom_in_cursor
SET myapp.x = '5';
BEGIN;
DECLARE c CURSOR FOR SELECT o_orderkey FROM orders WHERE o_custkey = current_setting('myapp.x')::int ORDER BY 1;
FETCH 3 FROM c;
COMMIT;

-- case: set_custom_changed_between_statements
SET myapp.x = '1';
SELECT count(*) FROM orders WHERE o_custkey = current_setting('myapp.x')::int;
SET myapp.x = '2';
SELECT count(*) FROM orders WHERE o_custkey = current_setting('myapp.x')::int;

-- case: set_array_nulls_off
SET array_nulls = off;
SELECT count(*) FROM orders WHERE ('{NULL,' || o_orderkey || '}')::text[] @> ARRAY['NULL'];
SELECT count(*) FROM orders WHERE (('{' || o_custkey || ',NULL}')::text[])[2] IS NULL;
RESET array_nulls;
SELECT count(*) FROM orders WHERE ('{NULL,' || o_orderkey || '}')::text[] @> ARRAY['NULL'];

-- case: set_datestyle_text
SET DateStyle = 'SQL, DMY';
SELECT o_date::text, count(*) FROM orders GROUP BY 1 ORDER BY min(o_date) LIMIT 3;
SELECT count(*) FROM orders WHERE o_date::text LIKE '%/03/1996';

-- case: set_datestyle_german_timestamp
SET DateStyle = 'German';
SELECT count(*) FROM orders WHERE o_ts::text LIKE '01.02.%';
SELECT min(o_ts::text) FROM orders WHERE o_orderkey < 100;

-- case: set_datestyle_parse_from_text
-- text parsed as a date on the members: 03/04 is March 4 or April 3
SET DateStyle = 'ISO, DMY';
SELECT count(*) FROM orders WHERE ('03/04/' || (1995 + o_orderkey % 3))::date = o_date;
SELECT min(('0' || (1 + o_orderkey % 9) || '/02/1996')::date) FROM orders;

-- case: set_intervalstyle
SET IntervalStyle = 'postgres_verbose';
SELECT o_iv::text, count(*) FROM orders WHERE o_orderkey < 2000 GROUP BY 1 ORDER BY min(o_iv) LIMIT 3;
SET IntervalStyle = 'iso_8601';
SELECT count(*) FROM orders WHERE o_iv::text LIKE 'P%';

-- case: set_extra_float_digits
SET extra_float_digits = 0;
SELECT o_f8::text, count(*) FROM orders WHERE o_orderkey IN (1, 2, 3) GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM orders WHERE length(o_f8::text) > 16;
SET extra_float_digits = 3;
SELECT count(*) FROM orders WHERE length(o_f8::text) > 16;

-- case: set_bytea_output
SET bytea_output = 'escape';
SELECT o_bytes::text, count(*) FROM orders WHERE o_orderkey IN (65, 66) GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM orders WHERE o_bytes::text LIKE '\\%';

-- case: set_timezone
SET TimeZone = 'America/New_York';
SELECT o_tstz::date, count(*) FROM orders WHERE o_orderkey < 200 GROUP BY 1 ORDER BY 1 LIMIT 4;
SELECT count(*) FROM orders WHERE o_tstz::text LIKE '%-05';
SELECT count(*) FROM orders WHERE extract(hour FROM o_tstz) = 3;

-- case: set_timezone_date_trunc
SET TimeZone = 'Asia/Kolkata';
SELECT date_trunc('day', o_tstz)::text, count(*) FROM orders WHERE o_orderkey < 100 GROUP BY 1 ORDER BY 1 LIMIT 3;
SELECT count(DISTINCT o_tstz::date) FROM orders;

-- case: set_timezone_timestamp_cast
SET TimeZone = 'Pacific/Auckland';
SELECT count(*) FROM orders WHERE o_ts::timestamptz < timestamptz '1996-01-01 00:00:00+00';
SELECT count(*) FROM orders WHERE o_tstz::timestamp < timestamp '1996-01-01';

-- case: set_timezone_to_char
SET TimeZone = 'Europe/Berlin';
SELECT to_char(o_tstz, 'YYYY-MM-DD HH24 TZ'), count(*) FROM orders WHERE o_orderkey < 50 GROUP BY 1 ORDER BY 1 LIMIT 3;

-- case: set_search_path_regclass
SET search_path = s2, public;
SELECT CASE WHEN o_orderkey % 2 = 0 THEN 's1.thing' ELSE 'thing' END::regclass::text, count(*)
FROM orders GROUP BY 1 ORDER BY 1;
SET search_path = s1, public;
SELECT count(*) FROM orders WHERE ('thing'::text)::regclass = 's1.thing'::regclass;
SELECT count(*) FROM orders WHERE (CASE WHEN o_orderkey > 0 THEN 'thing' END)::regclass = 's1.thing'::regclass;

-- case: set_search_path_unqualified_function
-- an unqualified function name in text evaluated on the members
SET search_path = s2, public;
SELECT count(*) FROM orders WHERE to_regclass('thing')::text = 'thing';
SELECT to_regclass('thing')::text, count(*) FROM customer GROUP BY 1;

-- case: set_regclass_output_over_exchange
-- an OID value computed on the members, printed on the coordinator
SELECT ('s1.thing'::regclass)::text, count(*) FROM orders GROUP BY 1;
SELECT (CASE WHEN o_orderkey % 2 = 0 THEN 's1.thing' ELSE 's2.thing' END)::regclass::text, count(*) FROM orders GROUP BY 1 ORDER BY 1;

-- case: set_text_search_config
-- english stems jumps and jumping to jump, simple does not
SET default_text_search_config = 'simple';
SELECT count(*) FROM orders WHERE to_tsvector(o_comment) @@ to_tsquery('jumping');
SET default_text_search_config = 'english';
SELECT count(*) FROM orders WHERE to_tsvector(o_comment) @@ to_tsquery('jumping');

-- case: set_standard_conforming_strings
-- parsed on the coordinator: nothing to ship, but the answer must agree
SET standard_conforming_strings = off;
SELECT count(*) FROM orders WHERE o_comment LIKE 'the quick%';
RESET standard_conforming_strings;

-- case: set_lc_time_to_char
SET lc_time = 'C';
SELECT to_char(o_date, 'TMMonth'), count(*) FROM orders WHERE o_orderkey < 100 GROUP BY 1 ORDER BY 1;

-- case: set_enable_settings_same_answer
-- planner settings change the plan only, never the rows
SET enable_hashjoin = off;
SELECT count(*) FROM orders JOIN customer ON o_custkey = c_custkey;
SET enable_mergejoin = off;
SELECT count(*) FROM orders JOIN customer ON o_custkey = c_custkey;
SET enable_hashagg = off;
SELECT o_status, count(*) FROM orders GROUP BY 1 ORDER BY 1;

-- case: set_work_mem_small
SET work_mem = '64kB';
SELECT count(*), count(DISTINCT o_custkey) FROM orders;
SELECT o_custkey, count(*) FROM orders GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 3;

-- case: set_transform_null_equals
SET transform_null_equals = on;
SELECT count(*) FROM orders WHERE o_custkey = NULL;

-- case: set_role_then_query
SET ROLE rx_tenant;
SELECT count(*) FROM orders;
SELECT current_user, count(*) FROM customer GROUP BY 1;
RESET ROLE;

-- case: set_session_user_function
SELECT count(*) FROM orders WHERE current_user = session_user;

-- case: set_in_function_set_clause
-- a function's SET clause changes the setting while it runs
CREATE FUNCTION pg_temp.count_with_nulls_off() RETURNS bigint LANGUAGE sql
	SET array_nulls = off
	AS $$ SELECT count(*) FROM orders WHERE ('{NULL}')::text[] = ARRAY['NULL'] AND o_orderkey > 0 $$;
SELECT pg_temp.count_with_nulls_off();

-- case: set_custom_setting_plpgsql_loop
SET myapp.x = '3';
DO $$
DECLARE n bigint;
BEGIN
	SELECT count(*) INTO n FROM orders WHERE o_custkey = current_setting('myapp.x')::int;
	RAISE NOTICE 'orders of customer 3: %', n;
END $$;

-- case: set_timezone_output_of_gathered_rows
-- converted to text on the coordinator: must already work
SET TimeZone = 'Asia/Tokyo';
SELECT o_orderkey, o_tstz FROM orders WHERE o_orderkey < 4 ORDER BY 1;
SET DateStyle = 'Postgres, MDY';
SELECT o_orderkey, o_date, o_ts FROM orders WHERE o_orderkey < 4 ORDER BY 1;
