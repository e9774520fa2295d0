-- test/paths/150_subqueries_first.sql: UPDATE and DELETE whose WHERE
-- clause holds an uncorrelated subquery over distributed tables that are
-- not co-located with the target, the target itself included: the job
-- queue's one-statement take (UPDATE ... WHERE id = (SELECT ... FOR UPDATE
-- SKIP LOCKED) RETURNING), a batch of jobs (id IN (... LIMIT n)), a
-- maximum, EXISTS, NOT IN, subqueries with bound parameters (prepared
-- statements, PL/pgSQL), and the WITH form of the take (WITH j AS
-- (SELECT id ... SKIP LOCKED) UPDATE t ... FROM j WHERE t.id = j.id), which
-- is the same statement.  The cluster computes such a subquery once when
-- the statement starts and runs the statement with its result as a
-- parameter on every member (src/cluster/dml_forward.c); the rows
-- changed, returned and left must be the plain server's, entering
-- through any member.  (Two sessions taking jobs at once:
-- test/clients/row_locks.py.)  Every case rolls back.

-- case: take_one_job_at_a_time
BEGIN;
UPDATE w_orders SET note = 'taken' WHERE k = (SELECT k FROM w_orders WHERE note = 'n3' ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING k, c, note;
UPDATE w_orders SET note = 'taken' WHERE k = (SELECT k FROM w_orders WHERE note = 'n3' ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING k, c, note;
UPDATE w_orders SET note = 'taken' WHERE k = (SELECT k FROM w_orders WHERE note = 'n3' ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING k, c, note;
SELECT k, note FROM w_orders WHERE note = 'taken' ORDER BY k;
ROLLBACK;

-- case: take_a_batch unordered
BEGIN;
UPDATE w_orders SET note = 'batch' WHERE k IN (SELECT k FROM w_orders WHERE note = 'n5' ORDER BY k DESC LIMIT 5 FOR UPDATE SKIP LOCKED) RETURNING k, note;
SELECT count(*), min(k), max(k) FROM w_orders WHERE note = 'batch';
ROLLBACK;

-- case: take_and_delete
BEGIN;
DELETE FROM w_orders WHERE k = (SELECT k FROM w_orders WHERE v = 16 ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING *;
DELETE FROM w_orders WHERE k = (SELECT k FROM w_orders WHERE v = 16 ORDER BY k LIMIT 1 FOR NO KEY UPDATE) RETURNING k;
SELECT count(*) FROM w_orders WHERE v = 16;
ROLLBACK;

-- case: nothing_to_take
BEGIN;
UPDATE w_orders SET note = 'none' WHERE k = (SELECT k FROM w_orders WHERE note = 'no such' LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING k;
DELETE FROM w_orders WHERE k IN (SELECT k FROM w_orders WHERE note = 'no such');
SELECT count(*) FROM w_orders WHERE note = 'none';
ROLLBACK;

-- case: maximum_of_the_target
BEGIN;
UPDATE w_orders SET v = v + 100 WHERE k = (SELECT max(k) FROM w_orders WHERE c = 7) RETURNING k, v;
DELETE FROM w_orders WHERE k = (SELECT min(k) FROM w_orders);
SELECT count(*), min(k), sum(v) FROM w_orders;
ROLLBACK;

-- case: top_rows_of_the_target
BEGIN;
UPDATE w_orders SET note = 'top' WHERE k IN (SELECT k FROM w_orders ORDER BY v DESC, k LIMIT 4);
SELECT k, v, note FROM w_orders WHERE note = 'top' ORDER BY k;
ROLLBACK;

-- case: exists_and_not_in
BEGIN;
UPDATE w_orders SET v = 0 WHERE k < 20 AND EXISTS (SELECT 1 FROM w_orders WHERE note = 'n3' AND v = 16);
UPDATE w_orders SET v = -1 WHERE k < 40 AND NOT EXISTS (SELECT 1 FROM w_orders WHERE note = 'no such');
DELETE FROM w_orders WHERE k < 60 AND c NOT IN (SELECT c FROM w_orders WHERE k BETWEEN 1 AND 5);
SELECT count(*), sum(v) FROM w_orders WHERE k < 60;
ROLLBACK;

-- case: not_in_with_a_null
BEGIN;
UPDATE w_orders SET c = NULL WHERE k = 3;
DELETE FROM w_orders WHERE k < 30 AND c NOT IN (SELECT c FROM w_orders WHERE k BETWEEN 1 AND 5);
SELECT count(*) FROM w_orders WHERE k < 30;
ROLLBACK;

-- case: any_and_all
BEGIN;
UPDATE w_orders SET note = 'any' WHERE k < 100 AND v = ANY (SELECT v FROM w_orders WHERE k BETWEEN 10 AND 12);
UPDATE w_orders SET note = 'all' WHERE k < 100 AND v > ALL (SELECT v FROM w_orders WHERE k BETWEEN 10 AND 14);
SELECT note, count(*) FROM w_orders WHERE note IN ('any', 'all') GROUP BY note ORDER BY note;
ROLLBACK;

-- case: two_rows_for_one_value
BEGIN;
SAVEPOINT s;
UPDATE w_orders SET v = 0 WHERE k = (SELECT k FROM w_orders WHERE note = 'n3');
ROLLBACK TO s;
SELECT count(*) FROM w_orders WHERE v = 0;
ROLLBACK;

-- case: another_table_not_colocated unordered
BEGIN;
DELETE FROM w_orders WHERE k IN (SELECT c FROM w_cust WHERE flag = 2) RETURNING k;
UPDATE w_orders SET v = v * 2 WHERE c = (SELECT max(c) FROM w_cust WHERE flag = 1);
SELECT count(*), sum(v) FROM w_orders;
ROLLBACK;

-- case: colocated_and_computed_first
BEGIN;
UPDATE w_orders SET v = -5 WHERE k IN (SELECT k FROM w_orders WHERE note = 'n1') AND k < (SELECT max(c) FROM w_cust WHERE flag = 3);
SELECT count(*), min(k), max(k) FROM w_orders WHERE v = -5;
ROLLBACK;

-- case: prepared_with_parameters_in_the_subquery
BEGIN;
PREPARE take(text, text) AS
	UPDATE w_orders SET note = $2 WHERE k = (SELECT k FROM w_orders WHERE note = $1 ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING k, note;
EXECUTE take('n2', 'p1');
EXECUTE take('n2', 'p2');
EXECUTE take('n4', 'p3');
EXECUTE take('n2', 'p4');
EXECUTE take('n2', 'p5');
EXECUTE take('n2', 'p6');
EXECUTE take('n2', 'p7');
EXECUTE take('no such', 'p8');
PREPARE drop_flagged(int) AS DELETE FROM w_orders WHERE k IN (SELECT c FROM w_cust WHERE flag = $1);
EXECUTE drop_flagged(0);
EXECUTE drop_flagged(1);
EXECUTE drop_flagged(2);
EXECUTE drop_flagged(3);
EXECUTE drop_flagged(0);
EXECUTE drop_flagged(1);
SELECT count(*) FROM w_orders;
SELECT k, note FROM w_orders WHERE note LIKE 'p_' ORDER BY k;
DEALLOCATE take;
DEALLOCATE drop_flagged;
ROLLBACK;

-- case: plpgsql_worker_loop
BEGIN;
DO $$
DECLARE
	wanted text := 'n6';
	got int;
	total int := 0;
BEGIN
	FOR i IN 1 .. 6 LOOP
		UPDATE w_orders SET note = 'done' || i
		 WHERE k = (SELECT k FROM w_orders WHERE note = wanted ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED)
		 RETURNING k INTO got;
		total := total + got;
	END LOOP;
	RAISE NOTICE 'took jobs summing to %', total;
END $$;
SELECT k, note FROM w_orders WHERE note LIKE 'done%' ORDER BY k;
ROLLBACK;

-- case: take_with_a_with_query
-- the form of many queue libraries: the WITH query, joined on the key,
-- runs as a subquery computed first
BEGIN;
WITH j AS (SELECT k FROM w_orders WHERE note = 'n7' ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE w_orders o SET note = 'cte' FROM j WHERE o.k = j.k RETURNING o.k, o.note;
WITH j AS (SELECT k FROM w_orders WHERE note = 'n7' ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE w_orders o SET note = 'cte' FROM j WHERE j.k = o.k RETURNING o.*;
WITH j AS (SELECT k FROM w_orders WHERE note = 'n7' ORDER BY k LIMIT 1 FOR UPDATE SKIP LOCKED)
DELETE FROM w_orders USING j WHERE w_orders.k = j.k AND w_orders.v < 100 RETURNING w_orders.k;
SELECT k, note FROM w_orders WHERE note = 'cte' ORDER BY k;
SELECT count(*) FROM w_orders WHERE note = 'n7';
ROLLBACK;

-- case: take_a_batch_with_a_with_query unordered
BEGIN;
WITH j AS (SELECT k FROM w_orders WHERE note = 'n7' ORDER BY k LIMIT 3 FOR UPDATE SKIP LOCKED)
DELETE FROM w_orders USING j WHERE w_orders.k = j.k AND w_orders.v < 100 RETURNING w_orders.k;
SELECT count(*) FROM w_orders WHERE note = 'n7';
ROLLBACK;

-- case: with_query_of_another_table unordered
BEGIN;
WITH j AS (SELECT c FROM w_cust WHERE flag = 1)
DELETE FROM w_orders USING j WHERE w_orders.k = j.c RETURNING w_orders.k;
WITH j AS (SELECT c FROM w_cust WHERE flag = 3)
UPDATE w_orders SET v = -7 FROM j WHERE w_orders.c = j.c;
SELECT count(*), sum(v) FROM w_orders;
ROLLBACK;

-- case: with_query_columns_in_set refused
BEGIN;
WITH j AS (SELECT k, v FROM w_orders WHERE note = 'n7' ORDER BY k LIMIT 1)
UPDATE w_orders o SET v = j.v + 1 FROM j WHERE o.k = j.k RETURNING o.k, o.v;
ROLLBACK;

-- case: with_query_of_a_reference_table
-- (every member can run it: it stays a subquery there)
BEGIN;
WITH j AS (SELECT id FROM w_ref WHERE id < 3)
UPDATE w_orders SET note = 'ref' FROM j WHERE w_orders.c = j.id;
SELECT count(*) FROM w_orders WHERE note = 'ref';
ROLLBACK;
