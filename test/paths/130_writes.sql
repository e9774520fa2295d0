-- test/paths/130_writes.sql: reads after writes in one transaction, and
-- writes that join.  Every case rolls back (each case runs three times and
-- both cluster runs share the data) and touches only the w_* tables, so a
-- write that escapes its rollback spoils these cases only.  The issue: a
-- distributed query after an INSERT in the same transaction failed ("a
-- distributed query cannot run after changes"), UPDATE ... FROM and
-- DELETE ... WHERE k IN (subquery) failed with an internal message about
-- system columns.  MERGE is not expected to work on the cluster: it must
-- fail clearly, and the case fails until it works.

-- case: raw_insert_then_count
BEGIN;
INSERT INTO w_orders SELECT i, 1, 1, 'new' FROM generate_series(5001, 5100) i;
SELECT count(*) FROM w_orders;
SELECT count(*) FROM w_orders WHERE note = 'new';
ROLLBACK;
SELECT count(*) FROM w_orders;

-- case: raw_insert_values_then_rows
BEGIN;
INSERT INTO w_orders VALUES (9001, 5, 5, 'a'), (9002, 6, 6, 'b'), (9003, 7, 7, 'c');
SELECT k, c, v, note FROM w_orders WHERE k > 9000 ORDER BY k;
ROLLBACK;

-- case: raw_insert_then_join
BEGIN;
INSERT INTO w_cust VALUES (301, 9), (302, 9);
INSERT INTO w_orders SELECT i, 301 + i % 2, 0, 'j' FROM generate_series(6001, 6010) i;
SELECT count(*) FROM w_orders o JOIN w_cust c ON o.c = c.c WHERE c.flag = 9;
ROLLBACK;

-- case: raw_insert_then_aggregate
BEGIN;
INSERT INTO w_orders SELECT i, i % 3, 100, 'agg' FROM generate_series(7001, 7300) i;
SELECT note, count(*), sum(v) FROM w_orders GROUP BY note ORDER BY note;
ROLLBACK;

-- case: raw_update_then_read
BEGIN;
UPDATE w_orders SET v = v + 1000 WHERE k <= 100;
SELECT count(*), sum(v) FROM w_orders WHERE v >= 1000;
SELECT sum(v) FROM w_orders;
ROLLBACK;
SELECT sum(v) FROM w_orders;

-- case: raw_delete_then_read
BEGIN;
DELETE FROM w_orders WHERE k % 10 = 0;
SELECT count(*) FROM w_orders;
SELECT count(*) FROM w_orders o JOIN w_cust c ON o.c = c.c;
ROLLBACK;

-- case: raw_read_write_read
BEGIN;
SELECT count(*) FROM w_orders;
INSERT INTO w_orders VALUES (9100, 1, 1, 'x');
SELECT count(*) FROM w_orders;
DELETE FROM w_orders WHERE k = 9100;
SELECT count(*) FROM w_orders;
ROLLBACK;

-- case: raw_insert_then_cursor
BEGIN;
INSERT INTO w_orders SELECT i, 1, 1, 'cur' FROM generate_series(8001, 8050) i;
DECLARE c CURSOR FOR SELECT k FROM w_orders WHERE note = 'cur' ORDER BY k;
FETCH 3 FROM c;
FETCH 3 FROM c;
ROLLBACK;

-- case: raw_insert_then_plpgsql_loop
BEGIN;
INSERT INTO w_orders SELECT i, 1, 1, 'pl' FROM generate_series(8101, 8140) i;
DO $$
DECLARE r record; n int := 0;
BEGIN
	FOR r IN SELECT k FROM w_orders WHERE note = 'pl' LOOP n := n + 1; END LOOP;
	RAISE NOTICE 'rows %', n;
END $$;
ROLLBACK;

-- case: raw_insert_in_plpgsql_then_read
DO $$
DECLARE n bigint;
BEGIN
	INSERT INTO w_orders SELECT i, 2, 2, 'inside' FROM generate_series(8201, 8220) i;
	SELECT count(*) INTO n FROM w_orders WHERE note = 'inside';
	RAISE NOTICE 'inserted rows seen: %', n;
	RAISE EXCEPTION 'roll back';
EXCEPTION WHEN raise_exception THEN
	RAISE NOTICE 'rolled back';
END $$;
SELECT count(*) FROM w_orders WHERE note = 'inside';

-- case: raw_reference_insert_then_join
BEGIN;
INSERT INTO w_ref VALUES (51, 'ref51'), (52, 'ref52');
SELECT count(*) FROM w_ref;
SELECT count(*) FROM w_orders o JOIN w_ref r ON r.id = o.c WHERE r.id > 50;
ROLLBACK;

-- case: raw_insert_select_then_read
BEGIN;
INSERT INTO w_orders SELECT k + 10000, c, v, 'copy' FROM w_orders WHERE k <= 500;
SELECT count(*) FROM w_orders;
SELECT count(*) FROM w_orders WHERE note = 'copy';
ROLLBACK;

-- case: raw_truncate_then_read
BEGIN;
TRUNCATE w_other;
SELECT count(*) FROM w_other;
ROLLBACK;
SELECT count(*) FROM w_other;

-- case: raw_savepoint_rollback_then_read
BEGIN;
INSERT INTO w_orders VALUES (9200, 1, 1, 'kept');
SAVEPOINT s;
INSERT INTO w_orders VALUES (9201, 1, 1, 'undone');
ROLLBACK TO SAVEPOINT s;
SELECT k, note FROM w_orders WHERE k >= 9200 ORDER BY k;
ROLLBACK;

-- case: raw_serializable_read_after_write
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM w_orders;
INSERT INTO w_orders VALUES (9300, 1, 1, 'rr');
SELECT count(*) FROM w_orders;
ROLLBACK;

-- case: raw_pgbench_like_update_then_select
-- pgbench's simple-update script: UPDATE by key, SELECT by key, INSERT
BEGIN;
UPDATE w_orders SET v = v + 5 WHERE k = 17;
SELECT v FROM w_orders WHERE k = 17;
INSERT INTO w_other VALUES (1001, 17);
SELECT count(*) FROM w_other;
ROLLBACK;

-- case: raw_settings_between_writes
-- each member's transaction takes the statement's settings once and again
-- when they change; a savepoint rolled back takes them along there
BEGIN;
SET LOCAL DateStyle = 'SQL, DMY';
SET LOCAL myapp.note = E'a"b\\c, {d} ''e''';
UPDATE w_orders SET note = current_setting('myapp.note') || ' ' || DATE '2024-03-01' WHERE k <= 30;
UPDATE w_orders SET note = note || ' ' || DATE '2024-03-02' WHERE k = 17;
SET LOCAL DateStyle = 'German';
UPDATE w_orders SET note = note || ' ' || DATE '2024-03-03' WHERE k <= 30;
SAVEPOINT s;
SET LOCAL DateStyle = 'ISO';
UPDATE w_orders SET note = note || ' ' || DATE '2024-03-04' WHERE k <= 30;
ROLLBACK TO SAVEPOINT s;
UPDATE w_orders SET note = note || ' ' || DATE '2024-03-05' || ' ' || current_setting('myapp.note') WHERE k <= 30;
SELECT k, note FROM w_orders WHERE k <= 30 ORDER BY k;
ROLLBACK;

-- case: raw_settings_taken_in_rolled_back_savepoint
BEGIN;
SET LOCAL DateStyle = 'SQL, DMY';
SAVEPOINT s;
UPDATE w_orders SET note = 'undone ' || DATE '2024-03-01' WHERE k <= 30;
ROLLBACK TO SAVEPOINT s;
UPDATE w_orders SET note = 'kept ' || DATE '2024-03-02' WHERE k <= 30;
SELECT k, note FROM w_orders WHERE k <= 30 ORDER BY k;
ROLLBACK;

-- case: raw_float_parameter_exact
-- a bound float8 goes to the members in full, whatever extra_float_digits
-- (at 0 it went as 0.3 for 0.30000000000000004, and matched nothing)
BEGIN;
SET LOCAL extra_float_digits = 0;
PREPARE fu(float8) AS UPDATE w_orders SET note = 'hit' WHERE k * 0.1::float8 = $1;
EXECUTE fu(3 * 0.1::float8);
EXECUTE fu(7 * 0.1::float8);
EXECUTE fu(17 * 0.1::float8);
EXECUTE fu(19 * 0.1::float8);
EXECUTE fu(29 * 0.1::float8);
DEALLOCATE fu;
SELECT k, note FROM w_orders WHERE note = 'hit' ORDER BY k;
ROLLBACK;

-- case: raw_returning_float_exact
-- RETURNING rows from other members keep every digit of a float,
-- whatever extra_float_digits (at 0 a PL/pgSQL variable got 0.6 for
-- 0.6000000000000001 from a member that wrote it as text)
BEGIN;
SET LOCAL extra_float_digits = 0;
DO $$
DECLARE
  x float8;
  exact int := 0;
BEGIN
  FOR key IN 1..30 LOOP
    UPDATE w_orders SET v = v WHERE k = key RETURNING k * 0.1::float8 INTO x;
    IF x = key * 0.1::float8 THEN
      exact := exact + 1;
    END IF;
  END LOOP;
  RAISE NOTICE 'exact: % of 30', exact;
END $$;
ROLLBACK;

-- case: wjoin_update_from_colocated
-- w_cust is distributed on c, w_orders on k: not co-located, but the
-- target and the joined table joined on w_cust's distribution column
BEGIN;
UPDATE w_cust SET flag = 10 FROM w_other WHERE w_other.id = w_cust.c;
SELECT flag, count(*) FROM w_cust GROUP BY flag ORDER BY flag;
ROLLBACK;

-- case: wjoin_update_from_distribution_key_join
BEGIN;
UPDATE w_orders t SET v = -1 FROM w_orders s WHERE s.k = t.k AND s.note = 'n3';
SELECT count(*) FROM w_orders WHERE v = -1;
ROLLBACK;

-- case: wjoin_update_from_not_colocated refused
BEGIN;
UPDATE w_orders t SET v = c.flag FROM w_cust c WHERE c.c = t.c AND c.flag = 3;
SELECT v, count(*) FROM w_orders GROUP BY v ORDER BY v;
ROLLBACK;

-- case: wjoin_update_from_reference
BEGIN;
UPDATE w_orders t SET note = r.name FROM w_ref r WHERE r.id = t.c;
SELECT count(*) FROM w_orders WHERE note LIKE 'ref%';
ROLLBACK;

-- case: wjoin_delete_using_colocated
BEGIN;
DELETE FROM w_orders t USING w_orders s WHERE s.k = t.k AND s.v = 3;
SELECT count(*) FROM w_orders;
ROLLBACK;

-- case: wjoin_delete_using_not_colocated refused
BEGIN;
DELETE FROM w_orders t USING w_cust c WHERE c.c = t.c AND c.flag = 1;
SELECT count(*) FROM w_orders;
ROLLBACK;

-- case: wjoin_delete_in_subquery
-- the issue: DELETE FROM t WHERE k IN (SELECT ... FROM orders WHERE ...)
BEGIN;
DELETE FROM w_orders WHERE c IN (SELECT c FROM w_cust WHERE flag = 2);
SELECT count(*) FROM w_orders;
ROLLBACK;

-- case: wjoin_delete_in_subquery_same_key
BEGIN;
DELETE FROM w_cust WHERE c IN (SELECT c FROM w_other WHERE id < 100);
SELECT count(*) FROM w_cust;
ROLLBACK;

-- case: wjoin_delete_exists refused
BEGIN;
DELETE FROM w_cust c WHERE EXISTS (SELECT 1 FROM w_orders o WHERE o.c = c.c AND o.v = 16);
SELECT count(*) FROM w_cust;
ROLLBACK;

-- case: wjoin_delete_not_exists refused
BEGIN;
DELETE FROM w_cust c WHERE NOT EXISTS (SELECT 1 FROM w_other o WHERE o.c = c.c);
SELECT count(*) FROM w_cust;
ROLLBACK;

-- case: wjoin_update_in_subquery_reference
BEGIN;
UPDATE w_orders SET v = 0 WHERE c IN (SELECT id FROM w_ref WHERE id < 10);
SELECT count(*) FROM w_orders WHERE v = 0;
ROLLBACK;

-- case: wjoin_update_returning unordered
BEGIN;
UPDATE w_orders SET v = v + 1 WHERE k <= 3 RETURNING k, v;
ROLLBACK;

-- case: wjoin_delete_returning unordered
BEGIN;
DELETE FROM w_orders WHERE k <= 3 RETURNING k;
ROLLBACK;

-- case: wjoin_insert_returning
BEGIN;
INSERT INTO w_orders VALUES (9400, 1, 1, 'ret') RETURNING k, note;
ROLLBACK;

-- case: wjoin_merge refused
BEGIN;
MERGE INTO w_cust t USING w_other s ON t.c = s.id
WHEN MATCHED THEN UPDATE SET flag = 20
WHEN NOT MATCHED THEN DO NOTHING;
SELECT flag, count(*) FROM w_cust GROUP BY flag ORDER BY flag;
ROLLBACK;

-- case: wjoin_merge_insert refused
BEGIN;
MERGE INTO w_cust t USING (SELECT 400 + id AS c FROM w_other WHERE id <= 5) s ON t.c = s.c
WHEN NOT MATCHED THEN INSERT VALUES (s.c, 30);
SELECT count(*) FROM w_cust;
ROLLBACK;

-- case: wjoin_update_where_current_of refused
BEGIN;
DECLARE c CURSOR FOR SELECT c FROM w_cust WHERE c <= 5 ORDER BY c FOR UPDATE;
FETCH 2 FROM c;
UPDATE w_cust SET flag = 99 WHERE CURRENT OF c;
SELECT c, flag FROM w_cust WHERE c <= 5 ORDER BY c;
ROLLBACK;

-- case: wjoin_data_after_rollbacks
-- the w_* tables are as setup left them (every case above rolled back)
SELECT count(*), sum(v), count(DISTINCT note) FROM w_orders;
SELECT count(*), sum(flag) FROM w_cust;
SELECT count(*), sum(c) FROM w_other;
SELECT count(*) FROM w_ref;
