#!/usr/bin/env python3
# test/clients/stream.py: streams a query through a psycopg2 named cursor
# (DECLARE ... CURSOR, then FETCH FORWARD 500 at a time), printing every
# row as one line, columns tab-separated, NULL as \N, and nothing else, so
# that test/t/060_clients.pl can compare the lines with a single server's.
#
#   stream.py HOST PORT DB USER QUERY [WRITE]
#
# WRITE (SQL) runs first in the same transaction, before the cursor opens.
# The transaction is rolled back at the end, so a write leaves the tables
# as they were and every run sees the same data.
import sys

import psycopg2


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit("usage: stream.py HOST PORT DB USER QUERY [WRITE]")
    host, port, db, user, query = sys.argv[1:6]
    write = sys.argv[6] if len(sys.argv) == 7 else None

    conn = psycopg2.connect(host=host, port=port, dbname=db, user=user)
    try:
        if write is not None:
            with conn.cursor() as cur:
                cur.execute(write)
        # a named cursor is a server-side one; itersize is its batch size
        cur = conn.cursor(name="rx_stream")
        cur.itersize = 500
        cur.execute(query)
        out = sys.stdout
        for row in cur:
            out.write("\t".join("\\N" if v is None else str(v) for v in row))
            out.write("\n")
        cur.close()
        conn.rollback()
    finally:
        conn.close()


if __name__ == "__main__":
    main()
