--
-- 00_setup: the cluster the suites run on.  run-tests.sh starts three
-- members with test/cluster.sh, creates the extension in database
-- "regression" on each and add_node()s them all on member 0, which is the
-- server pg_regress talks to.
--
SELECT extname, extversion FROM pg_extension WHERE extname = 'rdma_exchange';
SHOW rdma_exchange.fabric_provider;
SELECT count(*) FROM rdma_exchange.nodes;
