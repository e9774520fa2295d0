-- test/paths/setup/15_citext.members.sql: the citext extension on every
-- member (skipped with the cases that need it when the contrib module is
-- not installed).
CREATE EXTENSION citext;
