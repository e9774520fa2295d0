-- test/paths/setup/40_analyze.members.sql: statistics on every member's
-- part, so that plans do not depend on autovacuum's timing.
ANALYZE;
