#!/usr/bin/python3
# test/clients/row_locks.py: SELECT ... FOR UPDATE/SHARE as applications use
# it (ORM select_for_update, queue workers, NOWAIT, SKIP LOCKED), through
# psycopg2, with several sessions at once.
#
#   row_locks.py HOST DBNAME PORT [PORT...]
#
# Session i connects to the i-th port, round robin (a cluster's members, or
# one plain server).  Prints one line per check, "name: result", where the
# result is what a user would see (rows, or the error's first line); the
# TAP test (t/112_row_locks.pl) runs it against a plain server and a
# cluster and compares the lines.  Expects the tables t/112 loads: acc
# (ids 1..20), ref (keys 1..5), jobs (ids 1..30, none done).
import sys
import threading
import time

import psycopg2

host, dbname, ports = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]
sessions = 0


def session():
    global sessions
    conn = psycopg2.connect(host=host, port=ports[sessions % len(ports)],
                            dbname=dbname, user=None)
    sessions += 1
    return conn


def run(conn, sql, args=None):
    """rows (or the row count), or ERR and the error's first line"""
    cur = conn.cursor()
    try:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else cur.rowcount
    except psycopg2.Error as e:
        conn.rollback()
        return 'ERR ' + str(e).splitlines()[0]


def show(name, result):
    print('%s: %s' % (name, result), flush=True)


def in_thread(fn):
    out = {}
    t = threading.Thread(target=lambda: out.update(result=fn()))
    t.start()
    return t, out


a, b, c = session(), session(), session()

# --- one row by its key (select_for_update) -----------------------------------
show('a locks 7', run(a, 'SELECT id, v FROM acc WHERE id = %s FOR UPDATE', (7,)))
show('b nowait 7', run(b, 'SELECT id FROM acc WHERE id = 7 FOR UPDATE NOWAIT'))
show('b share nowait over all', run(b, 'SELECT id FROM acc WHERE v > 0 FOR SHARE NOWAIT'))
run(c, "SET lock_timeout = '500ms'")
show('c update 7 under lock_timeout', run(c, 'UPDATE acc SET v = v + 1 WHERE id = 7'))
show('c update 8', run(c, 'UPDATE acc SET v = v + 1 WHERE id = 8'))
c.rollback()
show('b skip locked 6..8', run(b, 'SELECT id FROM acc WHERE id BETWEEN 6 AND 8 ORDER BY id FOR UPDATE SKIP LOCKED'))
b.rollback()

# b waits for a's lock, then sees a's committed value
started = time.time()
t, out = in_thread(lambda: run(b, 'SELECT id, v FROM acc WHERE id = 7 FOR UPDATE'))
time.sleep(1.0)
run(a, 'UPDATE acc SET v = 777 WHERE id = 7')
a.commit()
t.join()
show('b waited for a, then locks 7', out['result'])
show('b waited at least 0.8 s', time.time() - started >= 0.8)
b.rollback()

# a row updated meanwhile is checked again (EvalPlanQual)
run(a, 'UPDATE acc SET v = 111 WHERE id = 11')
t, out = in_thread(lambda: run(b, 'SELECT id, v FROM acc WHERE v = 110 FOR UPDATE'))
time.sleep(1.0)
a.commit()
t.join()
show('b after a changed the row it waited for', out['result'])
b.rollback()

# --- a transaction sees its own changes -----------------------------------------
run(a, 'UPDATE acc SET v = 999 WHERE id = 12')
run(a, "INSERT INTO acc VALUES (100, 1, 'new')")
show('own changes', run(a, 'SELECT id, v FROM acc WHERE id IN (12, 100) ORDER BY id FOR UPDATE'))
a.rollback()

# --- REPEATABLE READ: rows changed since the transaction's snapshot -------------
# one server fails the lock (and the update) of a row another transaction
# changed after this one's snapshot; so must every member-side transaction
b.set_session(isolation_level='REPEATABLE READ')
show('rr first read', run(b, 'SELECT count(*) FROM acc'))
for k in (13, 14, 15):
    run(a, 'UPDATE acc SET v = v + 1 WHERE id = %s', (k,))
a.commit()
show('rr lock of a changed row 13', run(b, 'SELECT id FROM acc WHERE id = 13 FOR UPDATE'))
b.rollback()
show('rr first read again', run(b, 'SELECT count(*) FROM acc'))
run(a, 'UPDATE acc SET v = v + 1 WHERE id IN (14, 15)')
a.commit()
show('rr update of changed rows 14 and 15', run(b, 'UPDATE acc SET v = 0 WHERE id IN (14, 15)'))
b.rollback()
show('rr write first, then read', run(b, 'UPDATE acc SET v = v WHERE v < 0'))
run(a, 'UPDATE acc SET v = v + 1 WHERE id = 17')
a.commit()
show('... the change of a later commit stays unseen', run(b, 'SELECT v FROM acc WHERE id = 17'))
show('... and its row cannot be locked', run(b, 'SELECT v FROM acc WHERE id = 17 FOR SHARE'))
b.rollback()
b.set_session(isolation_level='READ COMMITTED')

# --- queue workers: ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED -------------------
workers = [session() for _ in range(4)]
show('queue, limit 1, four workers in turn',
     [run(w, 'SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED')
      for w in workers])
for w in workers:
    w.rollback()
for w in workers:
    w.rollback()

processed = {}


def worker(conn, n):
    while True:
        rows = run(conn, 'SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED')
        if isinstance(rows, str):
            processed.setdefault('errors', []).append(rows)
            return
        if not rows:
            conn.commit()
            return
        run(conn, 'UPDATE jobs SET done = true, worker = %s WHERE id = %s', (n, rows[0][0]))
        conn.commit()
        processed.setdefault(rows[0][0], []).append(n)


threads = [threading.Thread(target=worker, args=(w, n)) for n, w in enumerate(workers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
show('four workers drain the queue, jobs taken', len([k for k in processed if k != 'errors']))
show('... each once', all(len(v) == 1 for k, v in processed.items() if k != 'errors'))
show('... errors', processed.get('errors', []))
show('... done in the table', run(a, 'SELECT count(*), count(DISTINCT worker) > 0 FROM jobs WHERE done'))
a.rollback()

# --- queue workers in one statement: UPDATE ... WHERE id = (SELECT ... FOR UPDATE
# SKIP LOCKED) RETURNING, as job queue libraries take a job ---------------------
run(a, 'UPDATE jobs SET done = false, worker = NULL')
a.commit()
TAKE = ('UPDATE jobs SET done = true, worker = %s WHERE id = '
        '(SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id')
show('queue in one statement, four workers in turn',
     [run(w, TAKE, (n,)) for n, w in enumerate(workers)])
for w in workers:
    w.rollback()
batch = run(a, TAKE.replace('id = (', 'id IN (').replace('LIMIT 1', 'LIMIT 3'), (9,))
show('... a batch of three', sorted(batch) if isinstance(batch, list) else batch)
# (which one: a member that gave some of a's batch keeps the locks on the
# rest of what it read, README "Row locks", so the cluster may skip more)
nxt = run(b, TAKE, (8,))
show('... and another session takes one of the others',
     isinstance(nxt, list) and len(nxt) == 1 and isinstance(batch, list) and
     nxt[0] not in batch)
a.rollback()
b.rollback()
taken = {}


def taker(conn, n):
    while True:
        rows = run(conn, TAKE, (n,))
        if isinstance(rows, str):
            taken.setdefault('errors', []).append(rows)
            return
        conn.commit()
        if not rows:
            return
        taken.setdefault(rows[0][0], []).append(n)


threads = [threading.Thread(target=taker, args=(w, n)) for n, w in enumerate(workers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
show('four workers drain the queue in one statement each, jobs taken',
     len([k for k in taken if k != 'errors']))
show('... each job once', all(len(v) == 1 for k, v in taken.items() if k != 'errors'))
show('... statements that failed', taken.get('errors', []))
show('... jobs done in the table', run(a, 'SELECT count(*) FROM jobs WHERE done'))
a.rollback()

# --- reference tables: one lock for every copy ------------------------------------
show('a locks ref 3', run(a, 'SELECT k, name FROM ref WHERE k = 3 FOR UPDATE'))
show('b nowait ref 3', run(b, 'SELECT k FROM ref WHERE k = 3 FOR UPDATE NOWAIT'))
run(c, "SET lock_timeout = '500ms'")
show('c update ref 3 under lock_timeout', run(c, 'UPDATE ref SET name = %s WHERE k = 3', ('x',)))
show('b skip locked ref', run(b, 'SELECT k FROM ref ORDER BY k FOR SHARE SKIP LOCKED'))
a.rollback()
b.rollback()
c.rollback()

# --- a lock cycle: one transaction gets "deadlock detected" ------------------------
run(a, 'SELECT id FROM acc WHERE id = 1 FOR UPDATE')
run(b, 'SELECT id FROM acc WHERE id = 2 FOR UPDATE')
t1, out1 = in_thread(lambda: run(a, 'SELECT id FROM acc WHERE id = 2 FOR UPDATE'))
time.sleep(0.3)
t2, out2 = in_thread(lambda: run(b, 'SELECT id FROM acc WHERE id = 1 FOR UPDATE'))
t1.join()
t2.join()
results = [out1['result'], out2['result']]
show('lock cycle, deadlocks detected',
     len([r for r in results if isinstance(r, str) and 'deadlock detected' in r]))
show('lock cycle, locks taken', len([r for r in results if not isinstance(r, str)]))
a.rollback()
b.rollback()
