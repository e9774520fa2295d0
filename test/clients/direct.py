#!/usr/bin/python3
# test/clients/direct.py: key lookups as applications send them, through
# psycopg2: parameters bound by the driver, server-side prepared
# statements past their generic plan, a named (server-side) cursor fetched
# in batches, a transaction that updates a row and reads it back,
# a PL/pgSQL function taking the key, and INSERT ... RETURNING and upserts
# (ON CONFLICT) as ORMs send them, rolled back.
#
#   direct.py HOST DBNAME PORT
#
# Prints one line per check, "name: result"; the TAP test (t/118_direct.pl)
# runs it against a plain server and through every member of a cluster
# and compares the lines.  Expects the tables t/118 loads: acct (ids
# 1..3000), ref (ids 0..9), and the function balance(int).
import sys

import psycopg2

host, dbname, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = psycopg2.connect(host=host, port=port, dbname=dbname)
cur = conn.cursor()


def show(name, sql, args=None):
    try:
        cur.execute(sql, args)
        rows = cur.fetchall() if cur.description else cur.rowcount
    except psycopg2.Error as e:
        conn.rollback()
        rows = 'ERR ' + str(e).splitlines()[0]
    print(f"{name}: {rows}")


keys = [1, 2, 3, 4, 5, 6, 17, 2999, 3000, 4000, -5]
for k in keys:
    show(f"point {k}", "SELECT id, v, note FROM acct WHERE id = %s", (k,))
    show(f"join {k}", "SELECT a.id, r.name FROM acct a JOIN ref r ON r.id = a.id % 10 WHERE a.id = %s", (k,))
    show(f"function {k}", "SELECT balance(%s)", (k,))
show("null key", "SELECT id FROM acct WHERE id = %s", (None,))
show("in list", "SELECT id, v FROM acct WHERE id = ANY(%s) ORDER BY id", ([3, 300, 1500, 2999],))

# server-side prepared statement, executed past PostgreSQL's custom plans
cur.execute("PREPARE lookup(int) AS SELECT v, note FROM acct WHERE id = $1")
for k in keys + keys:
    show(f"prepared {k}", "EXECUTE lookup(%s)", (k,))
cur.execute("DEALLOCATE lookup")
conn.commit()

# a named cursor, fetched in batches of 2
for k in (5, 6, 7):
    named = conn.cursor(name=f"c{k}")
    named.itersize = 2
    named.execute("SELECT id, v FROM acct WHERE id = %s OR id = %s + 0 ORDER BY v", (k, k))
    print(f"named cursor {k}: {[tuple(r) for r in named]}")
    named.close()
    conn.commit()

# read your writes, then roll back
for k in (8, 9, 10):
    show(f"update {k}", "UPDATE acct SET v = v + 1000 WHERE id = %s", (k,))
    show(f"read back {k}", "SELECT v FROM acct WHERE id = %s", (k,))
    show(f"delete {k}", "DELETE FROM acct WHERE id = %s", (k,))
    show(f"read deleted {k}", "SELECT count(*) FROM acct WHERE id = %s", (k,))
    conn.rollback()
    show(f"after rollback {k}", "SELECT v FROM acct WHERE id = %s", (k,))
# INSERT ... RETURNING and upserts with driver-bound parameters: rows on
# every member, new and existing keys, then rolled back
for k in (11, 12, 13, 3001, 3002, 3003):
    show(f"upsert {k}", "INSERT INTO acct VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE"
         " SET v = acct.v + excluded.v, note = excluded.note RETURNING id, v, note", (k, 7, 'up'))
    show(f"insert returning {k}", "INSERT INTO acct VALUES (%s, 1, 'x') ON CONFLICT DO NOTHING"
         " RETURNING id", (k + 10000,))
cur.executemany("INSERT INTO acct VALUES (%s, %s, 'many') ON CONFLICT (id) DO UPDATE SET note = 'many'",
                [(k, k) for k in (14, 15, 16, 4001, 4002, 4003)])
show("after executemany", "SELECT id, v, note FROM acct WHERE note = 'many' ORDER BY id")
show("upsert many rows", "INSERT INTO acct SELECT g, g, 'bulk' FROM generate_series(2998, 3004) g"
     " ON CONFLICT (id) DO UPDATE SET note = 'bulk' RETURNING id, v")
conn.rollback()
for k in (17, 18, 19):
    show(f"update returning {k}", "UPDATE acct SET v = v + %s WHERE id = %s RETURNING id, v", (5, k))
    show(f"delete returning {k}", "DELETE FROM acct WHERE id = %s RETURNING note", (k,))
conn.rollback()
show("after upsert rollback", "SELECT count(*) FROM acct WHERE id > 3000 OR note IN ('up', 'many', 'bulk')")
conn.close()
