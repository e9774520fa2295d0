#!/usr/bin/env python3
# test/random_queries.py: random queries, each run on distributed tables
# (schema d) and on plain copies of the same rows (schema l); the two
# answers must be the same multiset of rows.
#
#   random_queries.py --seed S --count N --dist DSN --local DSN [--settings SQL]
#                     [--fetch ROWS | --prepared] [--lookups]
#
# The queries come from a seeded generator, so a seed names the same
# queries in every run: joins of every type over the tables of
# test/t/125_random_queries.pl (keys with NULLs, a skewed key, an empty
# table, a reference table), filters, subqueries (EXISTS, IN, NOT IN,
# scalar, correlated or not), grouped and global aggregates, windows,
# DISTINCT (ON), ORDER BY ... LIMIT/OFFSET over every output column (a
# deterministic multiset), set operations, CTEs, LATERAL, ROLLUP/CUBE.
# --lookups: only reads of one table pinned by its distribution key, the
# queries one member answers (direct dispatch, sent as SQL or as a plan),
# with the same variety of conditions and select lists.
# A hand-written differential suite checks the shapes we thought of; this
# finds the combinations nobody wrote down (it found a keyed lookup that
# lost rows after batching, a merge join whose inner side could not
# restore marks, a NULL group made once per member after a FULL JOIN, an
# UPDATE whose IN (SELECT ...) each member ran over its own part, and an
# ANALYZE waiting for its own transaction's locks).
#
# Prints one line per query whose answers differ or that failed only on
# the distributed side, then "summary: N queries, C compared, D
# different, E errors, T timeouts, R refused".  A query that fails or
# times out on the plain tables is not compared; one that times out only
# on the distributed tables is counted apart (a slow plan, not a wrong
# row), and so is one refused there with feature_not_supported (0A000: a
# write shape the cluster does not take, said so).
# Exit status 0 when nothing differed and nothing failed.
import argparse
import random
import sys

import psycopg2

TABLES = {
    'cust': [('c_id', 'int'), ('c_nation', 'int'), ('c_name', 'text')],
    'ord': [('o_id', 'int'), ('o_cust', 'int'), ('o_amount', 'num'), ('o_note', 'text')],
    'nation': [('n_id', 'int'), ('n_name', 'text')],
    'item': [('i_id', 'int'), ('i_ord', 'int'), ('i_qty', 'int'), ('i_price', 'float'),
             ('i_day', 'date'), ('i_flag', 'bool')],
    'empty_t': [('e_id', 'int'), ('e_val', 'int')],
}
WEIGHT = {'cust': 3, 'ord': 4, 'nation': 2, 'item': 4, 'empty_t': 1}
# the distributed tables' distribution columns (test/t/125_random_queries.pl)
DIST = {'cust': 'c_id', 'ord': 'o_id', 'item': 'i_ord', 'empty_t': 'e_id'}
INTCONST = [0, 1, 3, 7, 13, 25, 42, 100, 999, 1500, 3000, 3499, 20000]


def const(t, r):
    if t == 'int':
        return str(r.choice(INTCONST))
    if t == 'num':
        return str(r.choice([0, 5, 10.5, 50, 99.9]))
    if t == 'float':
        return str(r.choice([0, 12.5, 500, 1000.25]))
    if t == 'text':
        return "'" + r.choice(['n3', 'n7', 'cust42', 'nation3', 'x', 'n1']) + "'"
    if t == 'date':
        return "date '" + r.choice(['2020-01-01', '2020-03-15', '2020-12-31', '2021-01-01']) + "'"
    if t == 'bool':
        return r.choice(['true', 'false'])


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.n = 0
        self.params = None      # a list: integers become parameters

    def const(self, t):
        """a constant of type t; an integer as a parameter ($n) when collecting them"""
        value = const(t, self.r)
        if t != 'int' or self.params is None:
            return value
        self.params.append(value)
        return '$%d' % len(self.params)

    def alias(self):
        self.n += 1
        return 't%d' % self.n

    def pick_table(self):
        names = list(WEIGHT)
        return self.r.choices(names, [WEIGHT[n] for n in names])[0]

    def cols(self, rels, types=None):
        out = []
        for a, t in rels:
            for c, ty in TABLES[t]:
                if types is None or ty in types:
                    out.append(('%s.%s' % (a, c), ty))
        return out

    def pred(self, rels, depth):
        r = self.r
        cs = self.cols(rels)
        k = r.random()
        if k < 0.35:
            c, t = r.choice(cs)
            op = r.choice(['=', '<', '>', '<=', '<>']) if t not in ('bool',) else '='
            return '%s %s %s' % (c, op, self.const(t))
        if k < 0.45:
            c, t = r.choice(cs)
            return '%s IS %sNULL' % (c, r.choice(['', 'NOT ']))
        if k < 0.55:
            ics = self.cols(rels, ['int'])
            c, t = r.choice(ics)
            return '%s IN (%s)' % (c, ', '.join(self.const('int') for _ in range(r.randint(1, 4))))
        if k < 0.62:
            ics = self.cols(rels, ['int', 'num', 'float'])
            c, t = r.choice(ics)
            return '%s BETWEEN %s AND %s' % (c, self.const(t), self.const(t))
        if depth < 2 and k < 0.85:
            # subquery predicate, maybe correlated
            t2 = self.pick_table()
            a2 = self.alias()
            inner = [(a2, t2)]
            ics = self.cols(rels, ['int'])
            c, _ = r.choice(ics)
            ic, _ = r.choice(self.cols(inner, ['int']))
            where = ''
            if r.random() < 0.5:
                where = ' WHERE ' + self.pred(inner, depth + 1)
            kind = r.choice(['exists', 'notexists', 'in', 'notin', 'scalar'])
            if kind == 'exists' or kind == 'notexists':
                w = '%s = %s' % (ic, c)
                if where:
                    w += ' AND ' + where[7:]
                return '%sEXISTS (SELECT 1 FROM %s %s WHERE %s)' % (
                    'NOT ' if kind == 'notexists' else '', t2, a2, w)
            if kind == 'in' or kind == 'notin':
                return '%s %sIN (SELECT %s FROM %s %s%s)' % (
                    c, 'NOT ' if kind == 'notin' else '', ic, t2, a2, where)
            agg = r.choice(['count(*)', 'max(%s)' % ic, 'min(%s)' % ic, 'sum(%s)' % ic])
            w = '%s = %s' % (ic, c)
            if where:
                w += ' AND ' + where[7:]
            return '%s %s (SELECT %s FROM %s %s WHERE %s)' % (
                c, r.choice(['=', '<', '>=']), agg, t2, a2, w)
        a = self.pred(rels, depth + 1)
        b = self.pred(rels, depth + 1)
        return '(%s %s %s)' % (a, r.choice(['AND', 'OR']), b)

    def from_clause(self):
        r = self.r
        t = self.pick_table()
        a = self.alias()
        rels = [(a, t)]
        sql = '%s %s' % (t, a)
        for _ in range(r.choice([0, 1, 1, 2, 2, 3])):
            t2 = self.pick_table()
            a2 = self.alias()
            # one side a unique key: results stay the size of the inputs
            UNIQ = ('c_id', 'o_id', 'n_id', 'i_id', 'e_id')
            if r.random() < 0.5:
                lc, _ = r.choice(self.cols(rels, ['int']))
                rc = '%s.%s' % (a2, TABLES[t2][0][0])
            else:
                lc, _ = r.choice([c for c in self.cols(rels, ['int']) if c[0].split('.')[1] in UNIQ])
                rc, _ = r.choice(self.cols([(a2, t2)], ['int']))
            jt = r.choices(['JOIN', 'LEFT JOIN', 'RIGHT JOIN', 'FULL JOIN'], [6, 3, 1, 1])[0]
            on = '%s = %s' % (lc, rc)
            if r.random() < 0.2:
                on += ' AND ' + self.pred([(a2, t2)], 2)
            sql += ' %s %s %s ON %s' % (jt, t2, a2, on)
            rels.append((a2, t2))
        return sql, rels

    def agg(self, c, t):
        r = self.r
        if t == 'float':
            return r.choice(['round(sum(%s)::numeric, 2)', 'min(%s)', 'max(%s)', 'count(%s)']) % c
        if t in ('int', 'num'):
            return r.choice(['sum(%s)', 'min(%s)', 'max(%s)', 'count(%s)', 'avg(%s)',
                             'count(DISTINCT %s)']) % c
        if t == 'text':
            return r.choice(['min(%s)', 'max(%s)', 'count(DISTINCT %s)',
                             "string_agg(%s, ',' ORDER BY %s)"]).replace('%s', c)
        if t == 'date':
            return r.choice(['min(%s)', 'max(%s)']) % c
        return r.choice(['bool_and(%s)', 'bool_or(%s)', 'count(%s)']) % c

    def select(self, depth=0, pinned=None):
        r = self.r
        if pinned is None:
            frm, rels = self.from_clause()
            where = ''
            if r.random() < 0.7:
                where = ' WHERE ' + self.pred(rels, depth)
        else:
            frm, rels, where = pinned
        cs = self.cols(rels)
        shape = r.random()
        if shape < 0.45:
            # grouped
            gcols = r.sample(cs, r.randint(0, 2))
            aggs = [self.agg(*r.choice(cs)) for _ in range(r.randint(1, 3))]
            aggs.insert(0, 'count(*)')
            sel = [c for c, _ in gcols] + aggs
            sql = 'SELECT %s FROM %s%s' % (', '.join(sel), frm, where)
            if gcols:
                sql += ' GROUP BY ' + ', '.join(c for c, _ in gcols)
                if r.random() < 0.3:
                    sql += ' HAVING count(*) > %d' % r.choice([1, 2, 5])
            ncols = len(sel)
        elif shape < 0.6:
            # window
            pc, _ = r.choice(cs)
            oc = [c for c, _ in cs]
            w = r.choice(['row_number() OVER (PARTITION BY %s ORDER BY %s)' % (pc, ', '.join(oc)),
                          'count(*) OVER (PARTITION BY %s)' % pc,
                          'rank() OVER (ORDER BY %s)' % pc])
            sel = [c for c, _ in r.sample(cs, min(len(cs), 2))] + [w]
            sql = 'SELECT %s FROM %s%s' % (', '.join(sel), frm, where)
            ncols = len(sel)
        else:
            sel = [c for c, _ in r.sample(cs, r.randint(1, min(4, len(cs))))]
            sql = 'SELECT %s%s FROM %s%s' % ('DISTINCT ' if r.random() < 0.2 else '',
                                             ', '.join(sel), frm, where)
            ncols = len(sel)
        if r.random() < 0.3:
            # total order over all output columns: a deterministic multiset
            order = ', '.join('%d %s NULLS %s' % (i + 1, r.choice(['ASC', 'DESC']),
                                                  r.choice(['FIRST', 'LAST']))
                              for i in range(ncols))
            sql += ' ORDER BY %s LIMIT %d' % (order, r.choice([1, 5, 10, 100]))
            if r.random() < 0.3:
                sql += ' OFFSET %d' % r.choice([1, 3, 20])
        return sql, ncols

    def lookup(self):
        """
        one distributed table read by its distribution key (a member's
        rows only: direct dispatch), with more conditions and any select
        list, the key sometimes of another integer type
        """
        r = self.r
        t = r.choice(sorted(DIST))
        a = self.alias()
        key = '%s.%s = %s%s' % (a, DIST[t], self.const('int'),
                                r.choice(['', '', '::bigint', '::smallint']))
        if r.random() < 0.5:
            key += ' AND ' + self.pred([(a, t)], 2)
        return self.select(pinned=('%s %s' % (t, a), [(a, t)], ' WHERE ' + key))[0]

    def extra(self):
        """shapes beyond plain selects"""
        r = self.r
        frm, rels = self.from_clause()
        cs = self.cols(rels)
        where = (' WHERE ' + self.pred(rels, 1)) if r.random() < 0.5 else ''
        k = r.randint(0, 7)
        c1, t1 = r.choice(cs)
        c2, t2 = r.choice(cs)
        if k == 0:
            return 'SELECT %s, %s, count(*) FROM %s%s GROUP BY %s(%s, %s)' % (
                c1, c2, frm, where, r.choice(['ROLLUP', 'CUBE', 'GROUPING SETS']), c1, c2)
        if k == 1:
            oc = ', '.join(c for c, _ in cs)
            return 'SELECT DISTINCT ON (%s) %s, %s FROM %s%s ORDER BY %s, %s' % (c1, c1, c2, frm, where, c1, oc)
        if k == 2:
            ic, _ = r.choice(self.cols(rels, ['int']))
            return 'SELECT %s, (SELECT count(*) FROM ord x WHERE x.o_cust = %s) AS sub FROM %s%s' % (c1, ic, frm, where)
        if k == 3:
            ic, _ = r.choice(self.cols(rels, ['int']))
            return ('SELECT %s, l.* FROM %s CROSS JOIN LATERAL (SELECT max(y.i_qty) AS m, count(*) AS n FROM item y '
                    'WHERE y.i_ord = %s) l%s') % (c1, frm, ic, where)
        if k == 4:
            ic, _ = r.choice(self.cols(rels, ['int']))
            return 'SELECT count(*) FILTER (WHERE %s > 10), sum(CASE WHEN %s IS NULL THEN 1 ELSE 0 END), coalesce(max(%s), -1) FROM %s%s' % (
                ic, c1, ic, frm, where)
        if k == 5:
            ic, _ = r.choice(self.cols(rels, ['int']))
            oc = ', '.join(c for c, _ in cs)
            return 'SELECT %s, sum(%s) OVER (ORDER BY %s ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM %s%s' % (
                ic, ic, oc, frm, where)
        if k == 6:
            ic, _ = r.choice(self.cols(rels, ['int']))
            return 'SELECT %s FROM %s%s UNION %s SELECT o_cust FROM ord WHERE o_amount < %s' % (
                ic, frm, where, r.choice(['', 'ALL ']), const('num', r))
        ic, _ = r.choice(self.cols(rels, ['int']))
        return 'SELECT %s::text || \'x\', upper(%s::text), %s %% 7 FROM %s%s' % (c1, c2, ic, frm, where)

    def write(self):
        """an UPDATE, DELETE or INSERT ... SELECT of one table, and the table"""
        r = self.r
        t = self.pick_table()
        a = self.alias()
        where = (' WHERE ' + self.pred([(a, t)], 1)) if r.random() < 0.9 else ''
        k = r.random()
        if k < 0.45:
            # never a key or the distribution column (item's is i_ord)
            col, ty = r.choice([c for c in TABLES[t][1:] if c[1] != 'date' and c[0] != 'i_ord'])
            expr = {'int': 'coalesce(%s.%s, 0) + 1', 'num': '%s.%s * 2', 'float': '%s.%s + 0.5',
                    'text': "%s.%s || 'u'", 'bool': 'NOT %s.%s'}[ty] % (a, col)
            return 'UPDATE %s %s SET %s = %s%s' % (t, a, col, expr, where), t
        if k < 0.8:
            return 'DELETE FROM %s %s%s' % (t, a, where), t
        return 'INSERT INTO %s SELECT %s.* FROM %s %s%s' % (t, a, t, a, where), t

    def prepared(self, lookups=False):
        """the next query with its integers as parameters, and their values"""
        self.params = []
        q = self.lookup() if lookups else self.query()
        params, self.params = self.params, None
        return q, params

    def query(self):
        r = self.r
        if r.random() < 0.3:
            return self.extra()
        k = r.random()
        if k < 0.1:
            a, na = self.select()
            b, nb = self.select()
            # set operation needs same column count and types: wrap as counts
            a = 'SELECT count(*) FROM (%s) s1' % a
            b = 'SELECT count(*) FROM (%s) s2' % b
            return '(%s) %s (%s)' % (a, r.choice(['UNION', 'UNION ALL', 'INTERSECT', 'EXCEPT ALL']), b)
        if k < 0.2:
            s, n = self.select()
            return 'WITH w AS %s(%s) SELECT count(*), count(DISTINCT w.*) FROM w' % (
                r.choice(['', 'MATERIALIZED ', 'NOT MATERIALIZED ']), s)
        if k < 0.3:
            s, n = self.select()
            return 'SELECT * FROM (%s) sub' % s
        return self.select()[0]


def connect(dsn, schema, settings, in_transactions=False):
    """in_transactions: statements in transactions the caller ends (cursors, writes)"""
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SET search_path = %s, public; SET statement_timeout = '20s';"
                    " SET extra_float_digits = 0; %s" % (schema, settings))
    conn.autocommit = not in_transactions
    return conn


def answer(conn, query, fetch=0, params=()):
    """
    (sorted rows as text, None) or (None, (sqlstate, message)); with
    fetch, through a cursor fetched fetch rows at a time, as psycopg2's
    named cursors, JDBC's fetchSize and psql's FETCH_COUNT read; with
    params, as a prepared statement executed with their values
    """
    if params:
        with conn.cursor() as cur:
            # a cancel left over from the last statement's timeout may hit
            # either: that side's error, like the query's own
            try:
                cur.execute('DEALLOCATE ALL')
                cur.execute('PREPARE random_query(%s) AS %s'
                            % (', '.join(['int'] * len(params)), query))
            except psycopg2.Error as e:
                return None, (e.pgcode, (e.pgerror or str(e)).strip().splitlines()[0])
        query = 'EXECUTE random_query(%s)' % ', '.join(params)
    try:
        if fetch:
            with conn.cursor(name='random_query') as cur:
                cur.itersize = fetch
                cur.execute(query)
                rows = list(cur)
            conn.commit()
        else:
            with conn.cursor() as cur:
                cur.execute(query)
                rows = cur.fetchall()
        return sorted(tuple('NULL' if v is None else str(v) for v in row)
                      for row in rows), None
    except psycopg2.Error as e:
        if fetch:
            conn.rollback()
        return None, (e.pgcode, (e.pgerror or str(e)).strip().splitlines()[0])


def answer_write(conn, stmt, table):
    """
    The number of rows stmt changed and the table's rows after it, in a
    transaction rolled back after; or (None, (sqlstate, message))
    (RETURNING is refused on distributed tables)
    """
    def text(rows):
        return sorted(tuple('NULL' if v is None else str(v) for v in row) for row in rows)
    try:
        with conn.cursor() as cur:
            cur.execute(stmt)
            changed = [(str(cur.rowcount),)]
            cur.execute('SELECT * FROM %s' % table)
            after = text(cur.fetchall())
        return (changed, after), None
    except psycopg2.Error as e:
        return None, (e.pgcode, (e.pgerror or str(e)).strip().splitlines()[0])
    finally:
        conn.rollback()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, required=True)
    ap.add_argument('--dist', required=True)
    ap.add_argument('--local', required=True)
    ap.add_argument('--settings', default='')
    ap.add_argument('--prepared', action='store_true',
                    help='integers as parameters of prepared statements, generic plans on both sides')
    ap.add_argument('--fetch', type=int, default=0,
                    help='read the distributed answers through a cursor, this many rows a fetch')
    ap.add_argument('--lookups', action='store_true',
                    help='only reads of one table by its distribution key; with --prepared, custom plans')
    ap.add_argument('--generic', action='store_true',
                    help='with --lookups --prepared, generic plans (the key\'s owner chosen at execution)')
    ap.add_argument('--writes', action='store_true',
                    help='UPDATE, DELETE and INSERT ... SELECT: the rows changed and the table after, rolled back')
    a = ap.parse_args()
    if a.prepared and a.fetch:
        ap.error('--prepared and --fetch: a cursor cannot be declared for EXECUTE')
    generic = 'SET plan_cache_mode = force_generic_plan;' \
        if a.prepared and (not a.lookups or a.generic) else ''
    dist = connect(a.dist, 'd', a.settings + generic, bool(a.fetch) or a.writes)
    local = connect(a.local, 'l', generic, a.writes)
    gen = Gen(a.seed)
    compared = different = errors = timeouts = refused = 0
    for i in range(a.count):
        if a.writes:
            q, table = gen.write()
            lrows, lerr = answer_write(local, q, table)
        else:
            if a.prepared:
                q, params = gen.prepared(a.lookups)
            else:
                q, params = (gen.lookup() if a.lookups else gen.query()), []
            lrows, lerr = answer(local, q, params=params)
        if lerr is not None:
            continue
        if a.writes:
            drows, derr = answer_write(dist, q, table)
        else:
            drows, derr = answer(dist, q, a.fetch, params)
        if derr is not None and derr[0] == '57014':
            timeouts += 1
            print('timeout #%d (distributed only): %s' % (i, q), flush=True)
            continue
        if derr is not None and derr[0] == '0A000':
            # a clear "not supported" (README: what distributed writes take)
            refused += 1
            print('refused #%d: %s\n  %s' % (i, derr[1], q), flush=True)
            continue
        if derr is not None:
            errors += 1
            print('ERROR #%d: %s: %s\n  %s' % (i, derr[0], derr[1], q), flush=True)
            continue
        compared += 1
        if drows != lrows:
            different += 1
            if a.writes:
                # what differs: the count of rows changed, else the table after
                which = 0 if drows[0] != lrows[0] else 1
                drows, lrows = drows[which], lrows[which]
            extra = sorted(set(drows) - set(lrows))[:3]
            missing = sorted(set(lrows) - set(drows))[:3]
            print('DIFFERENT #%d: %d rows, plain %d; extra %s, missing %s\n  %s'
                  % (i, len(drows), len(lrows), extra, missing, q), flush=True)
    print('summary: %d queries, %d compared, %d different, %d errors, %d timeouts, %d refused'
          % (a.count, compared, different, errors, timeouts, refused))
    return 0 if different == 0 and errors == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
