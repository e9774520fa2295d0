--
-- 30_explain: the shapes of distributed plans (EXPLAIN, COSTS OFF), and
-- EXPLAIN ANALYZE of a repartition join with its per-member transport
-- counters.  Byte and message counts depend on timing and packing, and
-- member names contain the ports of this run: rx_ex_analyze() replaces
-- them; row counts are kept (rows are placed by a hash, so they are the
-- same in every run).
--
SET client_min_messages = warning;
CREATE SCHEMA ex;
CREATE TABLE ex.cust (c_id int PRIMARY KEY, c_nation int NOT NULL, c_name text);
CREATE TABLE ex.ord (o_id int PRIMARY KEY, o_cust int, o_amount numeric(12,2), o_note text);
CREATE TABLE ex.nation (n_id int PRIMARY KEY, n_name text);
INSERT INTO ex.cust SELECT i, i % 25, 'cust' || i FROM generate_series(1, 5000) i;
INSERT INTO ex.ord
  SELECT i, (i * 7) % 5000 + 1, (i % 1000) / 10.0, 'n' || (i % 13)
  FROM generate_series(1, 30000) i;
INSERT INTO ex.nation SELECT i, 'nation' || i FROM generate_series(0, 24) i;
SELECT rdma_exchange.create_distributed_table('ex.cust', 'c_id');
SELECT rdma_exchange.create_distributed_table('ex.ord', 'o_id');
SELECT rdma_exchange.create_reference_table('ex.nation');
ANALYZE ex.cust, ex.ord, ex.nation;
RESET client_min_messages;
SET search_path = ex, public;

-- EXPLAIN ANALYZE with the counters that vary from run to run replaced
CREATE FUNCTION public.rx_ex_analyze(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
    line := regexp_replace(line, '\(([^():]+):[0-9]+\)', '(\1:<port>)', 'g');
    line := regexp_replace(line, '[0-9]+ bytes', 'N bytes', 'g');
    line := regexp_replace(line, '[0-9]+ messages', 'N messages', 'g');
    line := regexp_replace(line, '[0-9]+ retransmits', 'N retransmits', 'g');
    line := regexp_replace(line, 'peak [0-9]+ buffers', 'peak N buffers', 'g');
    line := regexp_replace(line, '[0-9]+(\.[0-9]+)? ms', 'N ms', 'g');
    line := regexp_replace(line, 'Memory Usage: [0-9]+kB', 'Memory Usage: NkB', 'g');
    line := regexp_replace(line, 'Memory: [0-9]+kB', 'Memory: NkB', 'g');
    line := regexp_replace(line, 'Buckets: [0-9]+ +Batches: [0-9]+', 'Buckets: N  Batches: N', 'g');
    RETURN NEXT line;
  END LOOP;
END $$;

-- join on the distribution keys: co-located, no exchange below the gather
EXPLAIN (COSTS OFF) SELECT a.o_id, b.o_note FROM ord a JOIN ord b ON a.o_id = b.o_id;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cust c JOIN ord o ON o.o_id = c.c_id;
SELECT count(*) FROM cust c JOIN ord o ON o.o_id = c.c_id;

-- join on a column that is not the distribution key of one side: that
-- side is shuffled by the join key
EXPLAIN (COSTS OFF) SELECT a.o_id, b.o_id AS b_id FROM ord a JOIN ord b ON a.o_cust = b.o_id;
-- the smaller side is broadcast instead when that moves fewer bytes
EXPLAIN (COSTS OFF) SELECT o_id, c_name FROM ord JOIN cust ON o_cust = c_id;

-- join with a reference table: every member has all of it
EXPLAIN (COSTS OFF) SELECT c_id, n_name FROM cust JOIN nation ON c_nation = n_id;

-- many groups (5000): aggregated on the members, input shuffled by the
-- group key, each group sent to the coordinator once
EXPLAIN (COSTS OFF) SELECT o_cust, count(*), sum(o_amount) FROM ord GROUP BY o_cust;
-- the same with too little work_mem to hash all groups on one server:
-- PostgreSQL plans a sorted aggregate over a Gather Merge; the members
-- hash the groups they own and sort them, the RECEIVE merges
SET work_mem = '64kB';
EXPLAIN (COSTS OFF) SELECT o_cust, count(*), sum(o_amount) FROM ord GROUP BY o_cust ORDER BY o_cust;
RESET work_mem;
-- few groups (13): partial aggregates on the members, finalized on the
-- coordinator
EXPLAIN (COSTS OFF) SELECT o_note, count(*) FROM ord GROUP BY o_note;
-- no group
EXPLAIN (COSTS OFF) SELECT count(*), sum(o_amount), max(o_id) FROM ord;
SELECT count(*), sum(o_amount), max(o_id) FROM ord;

-- ORDER BY ... LIMIT: each member sorts, the RECEIVE merges
EXPLAIN (COSTS OFF) SELECT o_id, o_amount FROM ord ORDER BY o_amount DESC, o_id LIMIT 10;
-- the LIMIT reaches the members: each sends at most 10 + 5 rows, its Sort
-- keeping only those (top-N).  So few rows need no exchange: each member
-- runs its part as a query (small_gather_rows); the members' counters
-- still add up in the plan (3 loops)
SELECT * FROM rx_ex_analyze('SELECT o_id, o_amount FROM ord ORDER BY o_amount DESC, o_id LIMIT 10 OFFSET 5');
SELECT o_id, o_amount FROM ord ORDER BY o_amount DESC, o_id LIMIT 10;
-- the same through the transport: each member sends its 15 rows
SET rdma_exchange.small_gather_rows = 0;
SELECT * FROM rx_ex_analyze('SELECT o_id, o_amount FROM ord ORDER BY o_amount DESC, o_id LIMIT 10 OFFSET 5');
SELECT o_id, o_amount FROM ord ORDER BY o_amount DESC, o_id LIMIT 10;
RESET rdma_exchange.small_gather_rows;

-- a correlated subquery: the fallback gathers the inner table to the
-- coordinator once and keeps it for the rescans
EXPLAIN (COSTS OFF)
SELECT c_id, (SELECT count(*) FROM ord WHERE o_cust = c_id) AS n FROM cust WHERE c_id < 20;
SELECT c_id, (SELECT count(*) FROM ord WHERE o_cust = c_id) AS n FROM cust WHERE c_id < 6 ORDER BY c_id;

-- a merge join restores marks on its inner side, which a RECEIVE cannot:
-- a Material goes between them; and a SCROLL cursor's Material shows its
-- columns in VERBOSE
SET max_parallel_workers_per_gather = 0;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF)
SELECT n_id, c_id FROM nation LEFT JOIN cust ON c_id = n_id AND n_id < 20;
RESET enable_hashjoin;
RESET max_parallel_workers_per_gather;
EXPLAIN (VERBOSE, COSTS OFF) DECLARE c SCROLL CURSOR FOR SELECT o_id FROM ord ORDER BY o_id;

-- a generic plan: the bound parameters travel with the fragment, and the
-- filters on them run on the members
SET plan_cache_mode = force_generic_plan;
PREPARE q(int) AS SELECT count(*) FROM ord JOIN cust ON o_cust = c_id WHERE c_nation = $1;
EXPLAIN (COSTS OFF) EXECUTE q(3);
EXECUTE q(3);
DEALLOCATE q;
RESET plan_cache_mode;

-- EXPLAIN ANALYZE of a repartition join: SHUFFLE and RECEIVE report rows,
-- bytes, messages and retransmissions per member
SELECT * FROM rx_ex_analyze('SELECT count(*) FROM ord a JOIN ord b ON a.o_cust = b.o_id');
SELECT count(*) FROM ord a JOIN ord b ON a.o_cust = b.o_id;

-- an exchange ships only the columns read above it (prune.c): the
-- shuffled scan outputs NULL for o_amount and o_note, the join's other
-- input keeps what the join returns
EXPLAIN (VERBOSE, COSTS OFF) SELECT a.o_id, b.o_note FROM ord a JOIN ord b ON a.o_cust = b.o_id;
SELECT count(*), count(b.o_note), sum(a.o_id) FROM ord a JOIN ord b ON a.o_cust = b.o_id;
-- through a grouped join: what the aggregation reads stays, over Sort,
-- partial aggregation and Hash
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT c_nation, sum(o_amount) FROM ord JOIN cust ON o_cust = c_id GROUP BY c_nation;
SELECT c_nation, sum(o_amount) FROM ord JOIN cust ON o_cust = c_id GROUP BY c_nation
  ORDER BY c_nation LIMIT 3;

-- semi and anti joins with an index on the inner table's join column,
-- which is not its distribution column: a nested loop over that index
-- cannot run on the members, and would run on the coordinator over
-- gathered tables (costs.c); the join runs on the members instead, with
-- ord shuffled by o_cust (TPC-H Q22's shape with an index on o_custkey)
CREATE INDEX ord_cust ON ord (o_cust);
ANALYZE ord;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cust
  WHERE c_nation = 3 AND NOT EXISTS (SELECT 1 FROM ord WHERE o_cust = c_id AND o_amount > 98);
SELECT count(*) FROM cust
  WHERE c_nation = 3 AND NOT EXISTS (SELECT 1 FROM ord WHERE o_cust = c_id AND o_amount > 98);
EXPLAIN (COSTS OFF) SELECT count(*) FROM cust
  WHERE c_nation = 3 AND EXISTS (SELECT 1 FROM ord WHERE o_cust = c_id AND o_amount > 98);
SELECT count(*) FROM cust
  WHERE c_nation = 3 AND EXISTS (SELECT 1 FROM ord WHERE o_cust = c_id AND o_amount > 98);
DROP INDEX ord_cust;

-- a join whose inputs PostgreSQL could only gather (an IN over a grouped
-- subquery, finished above its gather) runs on the members
-- (below_gather.c): the groups are made where their o_cust is owned and
-- joined with cust there; the coordinator receives the joined rows
EXPLAIN (COSTS OFF) SELECT c_nation, count(*) FROM cust
  WHERE c_id IN (SELECT o_cust FROM ord WHERE o_amount > 50 GROUP BY o_cust HAVING sum(o_amount) > 400)
  GROUP BY c_nation;
SELECT c_nation, count(*) FROM cust
  WHERE c_id IN (SELECT o_cust FROM ord WHERE o_amount > 50 GROUP BY o_cust HAVING sum(o_amount) > 400)
  GROUP BY c_nation ORDER BY c_nation LIMIT 3;

-- rdma_exchange.enable = off: plans stay single-server, over this
-- member's part of the table only
SET rdma_exchange.enable = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ord;
SELECT count(*) < 30000 AS only_this_part FROM ord;
RESET rdma_exchange.enable;

-- GROUP BY the distribution key, 20 rows a group: PostgreSQL aggregates in
-- two steps around the Gather (Partial, then Finalize); every group is
-- complete on its member, so members without workers aggregate in one step
SET client_min_messages = warning;
CREATE TABLE ex.line (l_ord int, l_qty int);
INSERT INTO ex.line SELECT i % 20000 + 1, i % 50 FROM generate_series(1, 400000) i;
SELECT rdma_exchange.create_distributed_table('ex.line', 'l_ord');
ANALYZE ex.line;
RESET client_min_messages;
SET rdma_exchange.workers_per_member = 0;
EXPLAIN (COSTS OFF)
SELECT l_ord, sum(l_qty) FROM line GROUP BY l_ord HAVING sum(l_qty) > 600;
SELECT count(*), sum(s) FROM (SELECT l_ord, sum(l_qty) AS s FROM line
                               GROUP BY l_ord HAVING sum(l_qty) > 600) g;
RESET rdma_exchange.workers_per_member;

-- Parallel workers inside each member (rdma_exchange.workers_per_member):
-- a Gather over the part of a fragment PostgreSQL planned as partial,
-- below the exchange that sends it.  Shares smaller than
-- min_parallel_table_scan_size (8MB), and work that would not pay for
-- parallel_setup_cost and parallel_tuple_cost, get none: these tables'
-- queries stay serial until those are lowered.
SET rdma_exchange.workers_per_member = 2;
-- min/max and a top-N by an index stay index scans on the members with
-- workers too (the plan counts the members' processes; charged at
-- startup, the gather of an index's first rows cost a whole table and
-- lost to a parallel aggregate or sort of every row)
EXPLAIN (COSTS OFF) SELECT min(o_id), max(o_id) FROM ord;
EXPLAIN (COSTS OFF) SELECT o_id FROM ord ORDER BY o_id DESC LIMIT 10;
SET rdma_exchange.small_gather_rows = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ord;
SET min_parallel_table_scan_size = 0;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ord;
SELECT count(*), sum(o_amount) FROM ord;
-- EXPLAIN ANALYZE VERBOSE shows each member's part per process on the
-- SHUFFLE above its Gather: the member's backend (the Gather's leader)
-- and each worker (listed also when the backend took every row before
-- they started).  How the rows split is the workers' race; what they add
-- up to is the member's part, and the members' parts the table.
CREATE FUNCTION ex.member_processes(q text)
RETURNS TABLE (members int, leaders int, workers_listed boolean, all_rows numeric)
LANGUAGE plpgsql AS $$
DECLARE
  line text;
  m text[];
BEGIN
  members := 0; leaders := 0; workers_listed := false; all_rows := 0;
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, TIMING OFF, SUMMARY OFF) ' || q LOOP
    CONTINUE WHEN line !~ 'Processes: member \d+ ';
    members := members + 1;
    FOR m IN SELECT regexp_matches(line, '(leader|worker \d+) rows=(\d+)', 'g') LOOP
      leaders := leaders + (m[1] = 'leader')::int;
      workers_listed := workers_listed OR m[1] <> 'leader';
      all_rows := all_rows + m[2]::numeric;
    END LOOP;
  END LOOP;
  RETURN NEXT;
END $$;
SELECT * FROM ex.member_processes('SELECT o_id FROM ord WHERE o_amount >= 0');
SELECT count(*) FROM ord WHERE o_amount >= 0;
-- a join with a reference table below the partial aggregate, its groups
-- shuffled to their owners; the join over the broadcast customers runs in
-- the member's workers, which share the rows the RECEIVE brings (a
-- Parallel Hash built from them once)
EXPLAIN (COSTS OFF)
SELECT n_name, count(*) FROM ord JOIN cust ON o_cust = c_id JOIN nation ON n_id = c_nation
  GROUP BY n_name;
-- groups complete on their member, with workers: they take the Partial
-- step, the member's backend the Finalize step (the plan was costed for
-- hash tables of one worker's rows)
EXPLAIN (COSTS OFF)
SELECT l_ord, sum(l_qty) FROM line GROUP BY l_ord HAVING sum(l_qty) > 600;
SELECT count(*), sum(s) FROM (SELECT l_ord, sum(l_qty) AS s FROM line
                               GROUP BY l_ord HAVING sum(l_qty) > 600) g;
-- ordered: each member sorts what its workers read
EXPLAIN (COSTS OFF) SELECT o_id FROM ord ORDER BY o_amount DESC, o_id LIMIT 3;
SELECT o_id FROM ord ORDER BY o_amount DESC, o_id LIMIT 3;
-- ordered by an index: each member merges its workers' rows in that
-- order (a Gather Merge) instead of gathering and sorting them again
SET min_parallel_index_scan_size = 0;
SET enable_sort = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT o_id, c_name FROM ord JOIN cust ON c_id = o_id WHERE o_amount > 5 ORDER BY o_id;
SELECT count(*), bool_and(in_order) FROM (
  SELECT o_id >= lag(o_id) OVER () AS in_order FROM (
    SELECT o_id FROM ord JOIN cust ON c_id = o_id WHERE o_amount > 5 ORDER BY o_id) s) t
  WHERE in_order IS NOT NULL;
RESET min_parallel_index_scan_size;
RESET enable_sort;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- a RECEIVE below a Parallel Hash is read by the Gather's leader alone:
-- a participant that grows the shared hash table waits for every other
-- one still reading its input, and a worker waiting for the leader's rows
-- would never join it (the filter on cust is estimated at 0.5% of its
-- rows, so the table grows while it is built; this hung one time in two)
SET statement_timeout = '60s';
EXPLAIN (COSTS OFF)
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
SELECT count(*), sum(o_amount) FROM ord JOIN cust ON o_cust = c_id WHERE c_id + 0 = c_id * 1;
RESET statement_timeout;
-- a LIMIT the members' first rows satisfy: workers would cost more than
-- they save there, so the members run it alone; a large one keeps them
SET parallel_setup_cost = 100;
RESET parallel_tuple_cost;
EXPLAIN (COSTS OFF) SELECT l_ord FROM line WHERE l_qty = 3 LIMIT 10;
EXPLAIN (COSTS OFF) SELECT l_ord FROM line WHERE l_qty = 3 LIMIT 100000;
SELECT count(*) FROM (SELECT l_ord FROM line WHERE l_qty = 3 LIMIT 10) s;
SET rdma_exchange.workers_per_member = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ord;
RESET rdma_exchange.workers_per_member;
RESET rdma_exchange.small_gather_rows;
RESET min_parallel_table_scan_size;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;

DROP FUNCTION public.rx_ex_analyze(text);
SET client_min_messages = warning;
DROP SCHEMA ex CASCADE;
SELECT count(*) FROM rdma_exchange.run_on_all_nodes('DROP SCHEMA IF EXISTS ex CASCADE');
