-- test/paths/setup/10_types.members.sql: the user-defined types, the
-- collation and the role the client-path cases use.
--
-- A *.members.sql file runs as it is on the plain server and, on the
-- cluster, once on every member through rdma_exchange.run_on_all_nodes():
-- these objects are not created by create_distributed_table(), and a
-- member can only resolve a type, collation or role that exists there.
-- No psql meta-commands here (the text is sent as one string).

CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TYPE pair AS (a int, b text);
CREATE TYPE floatrange AS RANGE (subtype = float8);
-- case-insensitive comparison: equal values may have different bytes, so
-- hashing and grouping must use the collation, not the bytes
CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
-- a non-superuser, so that row-level security applies (superusers bypass
-- it even with FORCE ROW LEVEL SECURITY)
CREATE ROLE rx_tenant LOGIN;
-- schemas for search_path and regclass cases
CREATE SCHEMA s1;
CREATE SCHEMA s2;
