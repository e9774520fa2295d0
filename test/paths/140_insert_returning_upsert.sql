-- test/paths/140_insert_returning_upsert.sql: INSERT ... RETURNING,
-- INSERT ... ON CONFLICT (upserts) and UPDATE/DELETE ... RETURNING on
-- distributed tables, the statements ORMs and applications send most after
-- lookups.  The cluster runs each inserted row as one statement on its
-- owner (src/cluster/dml_insert.c) and returns the other members' rows of
-- an UPDATE or DELETE with this member's (dml_returning.c); the rows
-- returned, the command tags and the rows left must be the plain server's,
-- whichever member owns a row and whichever member the statement enters
-- through.  Keys 9400 and up are new; 1 to 3000 exist in w_orders.  Every
-- case rolls back.

-- case: ins_returning_one_row_each_member
BEGIN;
INSERT INTO w_orders VALUES (9400, 1, 1, 'a') RETURNING k, note;
INSERT INTO w_orders VALUES (9401, 2, 2, 'b') RETURNING *;
INSERT INTO w_orders VALUES (9402, 3, 3, 'c') RETURNING k * 2 AS twice, upper(note), w_orders;
INSERT INTO w_orders (k, note) VALUES (9403, 'd') RETURNING c IS NULL AS no_c, note;
SELECT k, c, v, note FROM w_orders WHERE k >= 9400 ORDER BY k;
ROLLBACK;
SELECT count(*) FROM w_orders WHERE k >= 9400;

-- case: ins_returning_many_rows_in_order
BEGIN;
INSERT INTO w_orders VALUES (9410, 1, 1, 'x'), (9411, 1, 2, 'y'), (9412, 1, 3, 'z'),
	(9413, 1, 4, 'x'), (9414, 1, 5, 'y'), (9415, 1, 6, 'z') RETURNING k, v, note;
INSERT INTO w_orders SELECT i, i % 7, i % 3, 'gen' FROM generate_series(9420, 9440) i RETURNING k, c;
SELECT count(*), sum(v) FROM w_orders WHERE k >= 9400;
ROLLBACK;

-- case: ins_returning_from_distributed_select unordered
BEGIN;
INSERT INTO w_orders SELECT id + 10000, c, 0, 'copied' FROM w_other WHERE id <= 40 RETURNING k, c, note;
SELECT count(*) FROM w_orders WHERE note = 'copied';
ROLLBACK;

-- case: ins_returning_error_on_owner
BEGIN;
INSERT INTO w_orders VALUES (9450, 1, 1, 'ok') RETURNING k;
SAVEPOINT s;
INSERT INTO w_orders VALUES (17, 1, 1, 'dup') RETURNING k;
ROLLBACK TO s;
INSERT INTO w_orders VALUES (9451, 1, 1, 'ok') RETURNING k;
SELECT k, note FROM w_orders WHERE k IN (17, 9450, 9451) ORDER BY k;
ROLLBACK;

-- case: ins_returning_plpgsql_into
BEGIN;
DO $$
DECLARE
	r record;
	total int := 0;
BEGIN
	FOR i IN 9460 .. 9469 LOOP
		INSERT INTO w_orders VALUES (i, i % 5, i % 4, 'pl') RETURNING k, v INTO r;
		total := total + r.k + r.v;
	END LOOP;
	RAISE NOTICE 'returned total %', total;
END $$;
SELECT count(*), sum(k) FROM w_orders WHERE note = 'pl';
ROLLBACK;

-- case: upsert_do_nothing
BEGIN;
INSERT INTO w_orders VALUES (1, 9, 9, 'no'), (9470, 9, 9, 'new'), (2, 9, 9, 'no'),
	(9471, 9, 9, 'new'), (3, 9, 9, 'no') ON CONFLICT DO NOTHING;
INSERT INTO w_orders VALUES (4, 9, 9, 'no'), (9472, 9, 9, 'new'), (9472, 8, 8, 'again')
	ON CONFLICT (k) DO NOTHING RETURNING k, note;
INSERT INTO w_orders SELECT i, 0, 0, 'ranged' FROM generate_series(2990, 3010) i
	ON CONFLICT DO NOTHING RETURNING k;
SELECT k, c, v, note FROM w_orders WHERE k IN (1, 2, 3, 4) OR k >= 3000 ORDER BY k;
ROLLBACK;

-- case: upsert_do_update_one_row
BEGIN;
INSERT INTO w_orders VALUES (5, 1, 100, 'upd') ON CONFLICT (k)
	DO UPDATE SET v = w_orders.v + excluded.v, note = excluded.note || '/' || w_orders.note
	RETURNING *;
INSERT INTO w_orders VALUES (6, 1, 100, 'upd') ON CONFLICT (k)
	DO UPDATE SET v = excluded.v;
INSERT INTO w_orders VALUES (9480, 1, 100, 'ins') ON CONFLICT (k)
	DO UPDATE SET v = excluded.v RETURNING k, v, note;
INSERT INTO w_orders VALUES (7, 1, 100, 'never') ON CONFLICT (k)
	DO UPDATE SET note = excluded.note WHERE w_orders.v > 1000 RETURNING k;
INSERT INTO w_orders VALUES (8, 1, 100, 'constraint') ON CONFLICT ON CONSTRAINT w_orders_pkey
	DO UPDATE SET note = excluded.note RETURNING k, note;
INSERT INTO w_orders VALUES (9, 1, 100, 'ref') ON CONFLICT (k)
	DO UPDATE SET note = (SELECT name FROM w_ref WHERE id = excluded.c) RETURNING k, note;
SELECT k, c, v, note FROM w_orders WHERE k BETWEEN 5 AND 9 OR k = 9480 ORDER BY k;
ROLLBACK;
SELECT k, c, v, note FROM w_orders WHERE k BETWEEN 5 AND 9 ORDER BY k;

-- case: upsert_every_member
-- keys stored on each member: updated, then new keys inserted by the
-- same statements
BEGIN;
SELECT format('INSERT INTO w_orders VALUES (%s, 0, 0, %L) ON CONFLICT (k) DO UPDATE SET note = excluded.note || w_orders.note RETURNING k, note', k, 'm' || k)
FROM unnest(ARRAY[:ints_m0, :ints_m1, :ints_m2]) k ORDER BY k \gexec
SELECT format('INSERT INTO w_orders VALUES (%s, 0, 0, %L) ON CONFLICT (k) DO UPDATE SET note = excluded.note RETURNING k, note', k + 20000, 'n' || k)
FROM unnest(ARRAY[:ints_m0, :ints_m1, :ints_m2]) k ORDER BY k \gexec
SELECT k, note FROM w_orders WHERE k IN (:ints_m0, :ints_m1, :ints_m2) OR k > 20000 ORDER BY k;
ROLLBACK;

-- case: upsert_prepared_generic
BEGIN;
PREPARE up(int, text) AS INSERT INTO w_orders VALUES ($1, 1, 1, $2)
	ON CONFLICT (k) DO UPDATE SET note = $2 || '!', v = w_orders.v + 1 RETURNING k, v, note;
EXECUTE up(10, 'a');
EXECUTE up(11, 'b');
EXECUTE up(9490, 'c');
EXECUTE up(12, 'd');
EXECUTE up(9491, 'e');
EXECUTE up(10, 'f');
EXECUTE up(9490, 'g');
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE up2(int, text) AS INSERT INTO w_orders (k, note) VALUES ($1, $2)
	ON CONFLICT (k) DO UPDATE SET note = $2 || '?' RETURNING k, c, note;
EXECUTE up2(13, 'h');
EXECUTE up2(9492, 'i');
EXECUTE up2(9492, 'j');
SELECT k, v, note FROM w_orders WHERE k BETWEEN 10 AND 13 OR k >= 9490 ORDER BY k;
DEALLOCATE up;
DEALLOCATE up2;
ROLLBACK;

-- case: upsert_sees_session_settings
-- now() and settings in the conflict action are this session's
BEGIN;
SET LOCAL myapp.stamp = 'stamped';
SET LOCAL DateStyle = 'SQL, DMY';
INSERT INTO w_orders VALUES (14, 1, 1, 'x') ON CONFLICT (k)
	DO UPDATE SET note = current_setting('myapp.stamp') || ' ' || (now() = transaction_timestamp())::text
		|| ' ' || '02/03/2020'::date::text
	RETURNING k, note;
INSERT INTO w_orders VALUES (15, 1, 1, 'x') ON CONFLICT (k)
	DO UPDATE SET note = current_setting('myapp.stamp') RETURNING note;
SELECT k, note FROM w_orders WHERE k IN (14, 15) ORDER BY k;
ROLLBACK;

-- case: upsert_user_types
BEGIN;
INSERT INTO typed VALUES (1, 'happy', 7, ROW(1, 'one'), '[1,3)', '[0.5,1.5)', '{ok,sad}', 'APPLE1', '{1,2}')
	ON CONFLICT (k) DO UPDATE SET m = excluded.m, p = excluded.p, ma = excluded.ma, nc = excluded.nc
	RETURNING *;
INSERT INTO typed VALUES (2, NULL, 8, NULL, 'empty', NULL, '{}', NULL, NULL)
	ON CONFLICT (k) DO UPDATE SET m = excluded.m, p = excluded.p, arr = excluded.arr RETURNING *;
INSERT INTO typed VALUES (9500, 'sad', 9, ROW(2, 'two'), '[2,4)', '[1,2)', '{happy}', 'cherry', '{3}')
	RETURNING k, m, d, p, r, ma, nc, arr;
SELECT * FROM typed WHERE k IN (1, 2, 9500) ORDER BY k;
ROLLBACK;

-- case: upsert_many_rows_do_update
-- rows of one statement on several members; a row that conflicts with a
-- row the same statement left fails as on one server, and the statement
-- leaves nothing behind
BEGIN;
INSERT INTO w_orders VALUES (16, 1, 1, 'a'), (9510, 1, 1, 'b'), (19, 1, 1, 'c'), (9511, 1, 1, 'd')
	ON CONFLICT (k) DO UPDATE SET note = excluded.note || w_orders.note, v = w_orders.v + 10
	RETURNING k, v, note;
INSERT INTO w_orders SELECT i, 0, 0, 'bulk' FROM generate_series(2995, 3005) i
	ON CONFLICT (k) DO UPDATE SET v = w_orders.v + 1;
SELECT k, v, note FROM w_orders WHERE k IN (16, 19, 9510, 9511) OR k BETWEEN 2995 AND 3005 ORDER BY k;
SAVEPOINT s;
INSERT INTO w_orders VALUES (20, 1, 1, 'a'), (9512, 1, 1, 'b'), (20, 1, 1, 'c')
	ON CONFLICT (k) DO UPDATE SET note = excluded.note;
ROLLBACK TO s;
INSERT INTO w_orders VALUES (9513, 1, 1, 'a'), (9513, 1, 1, 'b')
	ON CONFLICT (k) DO UPDATE SET note = excluded.note RETURNING k;
ROLLBACK TO s;
INSERT INTO w_orders VALUES (9514, 1, 1, 'a'), (9514, 1, 1, 'b')
	ON CONFLICT (k) DO UPDATE SET note = excluded.note WHERE false RETURNING k;
SELECT k, note FROM w_orders WHERE k IN (20, 9512, 9513, 9514) ORDER BY k;
ROLLBACK;

-- case: upsert_sets_distribution_column refused
BEGIN;
INSERT INTO w_orders VALUES (18, 1, 1, 'a') ON CONFLICT (k) DO UPDATE SET k = 9520;
ROLLBACK;

-- case: upd_returning_by_key_each_member
BEGIN;
SELECT format('UPDATE w_orders SET v = v + 100, note = note || %L WHERE k = %s RETURNING k, v, note, v * 2 AS twice', '+' || k, k)
FROM unnest(ARRAY[:ints_m0, :ints_m1, :ints_m2]) k ORDER BY k \gexec
SELECT format('DELETE FROM w_orders WHERE k = %s RETURNING *', k)
FROM unnest(ARRAY[:ints_m0, :ints_m1, :ints_m2]) k ORDER BY k \gexec
UPDATE w_orders SET v = 0 WHERE k = 999999 RETURNING k;
SELECT count(*) FROM w_orders;
ROLLBACK;

-- case: upd_returning_every_member unordered
BEGIN;
UPDATE w_orders SET v = v + 1 WHERE k % 100 = 7 RETURNING k, v, note;
DELETE FROM w_orders WHERE k % 250 = 3 RETURNING k, c;
UPDATE w_orders o SET note = 'joined' FROM w_other x WHERE x.id = o.k AND x.c < 50 AND o.k < 200 RETURNING o.k, x.c, o.note;
UPDATE w_orders SET note = (SELECT name FROM w_ref WHERE id = w_orders.c % 50 + 1) WHERE k < 20 RETURNING k, note;
ROLLBACK;

-- case: upd_returning_settings_and_types unordered
BEGIN;
SET LOCAL myapp.stamp = 'st';
SET LOCAL DateStyle = 'SQL, DMY';
UPDATE w_orders SET note = current_setting('myapp.stamp') WHERE k IN (21, 22, 23)
	RETURNING k, note, now() = transaction_timestamp() AS same_now, '04/05/2021'::date AS d;
UPDATE typed SET m = 'sad', p = ROW(9, 'nine') WHERE k BETWEEN 1 AND 4 RETURNING k, m, p, r, ma, nc, arr;
DELETE FROM typed WHERE k BETWEEN 5 AND 7 RETURNING typed;
ROLLBACK;

-- case: upd_returning_prepared_and_plpgsql
BEGIN;
PREPARE ur(int) AS UPDATE w_orders SET v = v + 1 WHERE k = $1 RETURNING k, v;
EXECUTE ur(24); EXECUTE ur(25); EXECUTE ur(26); EXECUTE ur(27); EXECUTE ur(28); EXECUTE ur(29); EXECUTE ur(24);
DEALLOCATE ur;
DO $$
DECLARE
	r record;
	total int := 0;
BEGIN
	FOR i IN 30 .. 39 LOOP
		UPDATE w_orders SET v = v + i WHERE k = i RETURNING k, v INTO r;
		total := total + r.k * r.v;
	END LOOP;
	RAISE NOTICE 'returned total %', total;
END $$;
ROLLBACK;

-- case: upsert_through_view_with_check_option
-- the view's check applies to the row the conflict action left
BEGIN;
CREATE VIEW w_pos AS SELECT * FROM w_orders WHERE v >= 0 WITH CHECK OPTION;
INSERT INTO w_pos VALUES (41, 1, -5, 'v') ON CONFLICT (k) DO UPDATE SET v = 3 RETURNING k, v;
INSERT INTO w_pos VALUES (9530, 1, 5, 'v') RETURNING k, v;
SAVEPOINT s;
INSERT INTO w_pos VALUES (42, 1, 5, 'v') ON CONFLICT (k) DO UPDATE SET v = -1;
ROLLBACK TO s;
INSERT INTO w_pos VALUES (9531, 1, -5, 'v');
ROLLBACK;

-- case: upsert_reference_table
-- the row this member's copy kept goes to every other copy: the joins
-- below read each member's copy with that member's w_orders rows
BEGIN;
INSERT INTO w_ref VALUES (1, 'one') ON CONFLICT (id) DO UPDATE SET name = excluded.name || '/' || w_ref.name RETURNING *;
INSERT INTO w_ref VALUES (100, 'hundred'), (2, 'two') ON CONFLICT DO NOTHING RETURNING id;
INSERT INTO w_ref VALUES (3, 'x'), (101, 'y') ON CONFLICT (id) DO UPDATE SET name = excluded.name RETURNING id, name;
INSERT INTO w_ref VALUES (4, 'z') ON CONFLICT (id) DO UPDATE SET name = 'never' WHERE w_ref.id > 1000;
SELECT * FROM w_ref WHERE id IN (1, 2, 3, 4, 100, 101) ORDER BY id;
SELECT r.name, count(*) FROM w_orders o JOIN w_ref r ON r.id = o.c WHERE r.id IN (1, 2, 3, 4, 100, 101) GROUP BY r.name ORDER BY r.name;
SAVEPOINT s;
INSERT INTO w_ref VALUES (5, 'a'), (5, 'b') ON CONFLICT (id) DO UPDATE SET name = excluded.name;
ROLLBACK TO s;
SELECT r.name, count(*) FROM w_orders o JOIN w_ref r ON r.id = o.c WHERE r.id = 5 GROUP BY r.name;
ROLLBACK;
SELECT * FROM w_ref WHERE id IN (1, 2, 3, 100) ORDER BY id;

-- case: upsert_reference_primary_key refused
BEGIN;
INSERT INTO w_ref VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET id = 500;
ROLLBACK;

-- case: update_through_view_with_check_option refused
-- the other members would update their rows without the view's check
BEGIN;
CREATE VIEW w_pos2 AS SELECT * FROM w_orders WHERE v >= 0 WITH CHECK OPTION;
UPDATE w_pos2 SET v = v + 1 WHERE k = 43;
ROLLBACK;
