-- test/paths/setup/25_citext.sql: a distributed table with a citext key
-- and column (skipped when the citext contrib module is not installed).
CREATE TABLE ci_t (k citext PRIMARY KEY, v int, tag citext);
INSERT INTO ci_t
SELECT (ARRAY['Alpha', 'beta', 'GAMMA', 'delta'])[i % 4 + 1] || i, i,
	(ARRAY['Red', 'RED', 'red', 'Green', 'GREEN'])[i % 5 + 1]
FROM generate_series(1, 3000) i;
\if :rx
SELECT rdma_exchange.create_distributed_table('ci_t', 'k');
\endif
