--
-- 00_setup: the cluster the suites run on.  run-tests.sh starts three
-- members with test/cluster.sh, creates the extension in database
-- "regression" on each and add_node()s them all on member 0, which is the
-- server pg_regress talks to.  It also creates what the other suites
-- share.
--
SELECT extname, extversion FROM pg_extension WHERE extname = 'rdma_exchange';
-- udp here, verbs in test/rdma's Soft-RoCE guest
SELECT current_setting('rdma_exchange.fabric_provider') IN ('udp', 'verbs') AS datagram_provider;
SELECT count(*) FROM rdma_exchange.nodes;

-- rx_try(command): runs a command and reports its error, if any, as text
-- (SQLSTATE, message, DETAIL, HINT) with port numbers replaced, so that
-- errors naming a member ("host:port") read the same in every run
CREATE FUNCTION public.rx_try(command text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  msg text; detail text; hint text; state text;
BEGIN
  EXECUTE command;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
                          hint = PG_EXCEPTION_HINT, state = RETURNED_SQLSTATE;
  RETURN regexp_replace(format('ERROR %s: %s%s%s', state, msg,
                               CASE WHEN detail <> '' THEN E'\nDETAIL: ' || detail ELSE '' END,
                               CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END),
                        ':[0-9]{2,5}\M', ':<port>', 'g');
END $$;
