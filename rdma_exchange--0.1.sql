/* rdma_exchange--0.1.sql: catalog and SQL API of rdma_exchange */

\echo Use "CREATE EXTENSION rdma_exchange" to load this file. \quit

-- ===== cluster metadata (src/cluster/) =====

-- ===== transport and buffer pool statistics (src/transport/, src/bufpool/) =====

-- ===== fragment execution (src/cluster/dispatch.c, src/cluster/fragment.c) =====

-- Runs a signed plan fragment shipped by a coordinator; returns its
-- instrumentation.  Not for PUBLIC: grant EXECUTE to the roles that run
-- distributed queries (superusers can always).
CREATE FUNCTION rdma_exchange.execute_fragment(fragment text)
RETURNS text
AS 'MODULE_PATHNAME', 'rx_execute_fragment'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION rdma_exchange.execute_fragment(text) FROM PUBLIC;
