-- test/paths/120_joins_empty.sql: every join algorithm (hash, merge,
-- nested loop, chosen with enable_*) and join type (inner, left, full,
-- semi, anti) with the filtered side empty on one member, on all members
-- and on none: one case per algorithm and type, each with the three
-- filters.  psql variables keys_m0/m1/m2 are keys of tk_b stored on that
-- member only: "empty on one" keeps rows on members 0 and 1, so member
-- 2's part is empty; "empty on all" keeps none; "empty on none" keeps
-- rows on every member.  Each filter runs with two shapes: A joins
-- tk_b.w = customer.c_nation (neither is a distribution column, so both
-- sides cross an exchange and each member's part after it depends on the
-- hash of w), B joins tk_b.ak = tk_a.k (tk_a stays where it is, tk_b
-- moves).  A join node that stops early (its outer side, or the hash of
-- its inner side, is empty) must still finish every exchange it reads
-- from: the issue saw such joins hang until statement_timeout.  The cases
-- set statement_timeout = 5s (these joins take milliseconds), so a hang
-- costs little time and shows as a statement timeout.

-- case: join_hash_inner
SET statement_timeout = '5s';
SET enable_mergejoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m0, :keys_m1) AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN (:keys_m0, :keys_m1) ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN ('no such key') AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN ('no such key') ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) ORDER BY 1, 2;

-- case: join_hash_left
SET statement_timeout = '5s';
SET enable_mergejoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN (:keys_m0, :keys_m1) ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN (:keys_m0, :keys_m1) WHERE a.v <= 40 ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN ('no such key') ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN ('no such key') WHERE a.v <= 40 ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN (:keys_m0, :keys_m1, :keys_m2) WHERE a.v <= 40 ORDER BY 1, 2;

-- case: join_hash_full
SET statement_timeout = '5s';
SET enable_mergejoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1)) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1)) b ON a.k = b.ak ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN ('no such key')) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN ('no such key')) b ON a.k = b.ak ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1, :keys_m2)) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1, :keys_m2)) b ON a.k = b.ak ORDER BY 1, 2;

-- case: join_hash_semi
SET statement_timeout = '5s';
SET enable_mergejoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1) AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1)) ORDER BY 1;
-- empty on all
SELECT b.k FROM tk_b b WHERE b.k IN ('no such key') AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN ('no such key')) ORDER BY 1;
-- empty on none
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1, :keys_m2)) ORDER BY 1;

-- case: join_hash_anti
SET statement_timeout = '5s';
SET enable_mergejoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1) AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1));
-- empty on all
SELECT b.k FROM tk_b b WHERE b.k IN ('no such key') AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN ('no such key'));
-- empty on none
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1, :keys_m2));

-- case: join_merge_inner
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m0, :keys_m1) AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN (:keys_m0, :keys_m1) ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN ('no such key') AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN ('no such key') ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) ORDER BY 1, 2;

-- case: join_merge_left
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN (:keys_m0, :keys_m1) ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN (:keys_m0, :keys_m1) WHERE a.v <= 40 ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN ('no such key') ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN ('no such key') WHERE a.v <= 40 ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN (:keys_m0, :keys_m1, :keys_m2) WHERE a.v <= 40 ORDER BY 1, 2;

-- case: join_merge_full
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1)) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1)) b ON a.k = b.ak ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN ('no such key')) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN ('no such key')) b ON a.k = b.ak ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1, :keys_m2)) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1, :keys_m2)) b ON a.k = b.ak ORDER BY 1, 2;

-- case: join_merge_semi
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1) AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1)) ORDER BY 1;
-- empty on all
SELECT b.k FROM tk_b b WHERE b.k IN ('no such key') AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN ('no such key')) ORDER BY 1;
-- empty on none
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1, :keys_m2)) ORDER BY 1;

-- case: join_merge_anti
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_nestloop = off;
-- empty on one
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1) AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1));
-- empty on all
SELECT b.k FROM tk_b b WHERE b.k IN ('no such key') AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN ('no such key'));
-- empty on none
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1, :keys_m2));

-- case: join_nestloop_inner
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_mergejoin = off;
-- empty on one
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m0, :keys_m1) AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN (:keys_m0, :keys_m1) ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN ('no such key') AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN ('no such key') ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND c.c_custkey < 3 ORDER BY 1, 2;
SELECT b.k, a.v FROM tk_b b JOIN tk_a a ON a.k = b.ak WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) ORDER BY 1, 2;

-- case: join_nestloop_left
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_mergejoin = off;
-- empty on one
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN (:keys_m0, :keys_m1) ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN (:keys_m0, :keys_m1) WHERE a.v <= 40 ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN ('no such key') ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN ('no such key') WHERE a.v <= 40 ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM tk_b b LEFT JOIN customer c ON c.c_nation = b.w AND c.c_custkey < 3 WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) ORDER BY 1, 2;
SELECT a.k, b.k FROM tk_a a LEFT JOIN tk_b b ON a.k = b.ak AND b.k IN (:keys_m0, :keys_m1, :keys_m2) WHERE a.v <= 40 ORDER BY 1, 2;

-- case: join_nestloop_full
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_mergejoin = off;
-- empty on one
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1)) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1)) b ON a.k = b.ak ORDER BY 1, 2;
-- empty on all
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN ('no such key')) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN ('no such key')) b ON a.k = b.ak ORDER BY 1, 2;
-- empty on none
SELECT b.k, c.c_custkey FROM (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1, :keys_m2)) b FULL JOIN (SELECT * FROM customer WHERE c_custkey < 3) c ON c.c_nation = b.w ORDER BY 1, 2;
SELECT a.k, b.k FROM (SELECT * FROM tk_a WHERE v <= 30) a FULL JOIN (SELECT * FROM tk_b WHERE k IN (:keys_m0, :keys_m1, :keys_m2)) b ON a.k = b.ak ORDER BY 1, 2;

-- case: join_nestloop_semi
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_mergejoin = off;
-- empty on one
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1) AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1)) ORDER BY 1;
-- empty on all
SELECT b.k FROM tk_b b WHERE b.k IN ('no such key') AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN ('no such key')) ORDER BY 1;
-- empty on none
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT a.k FROM tk_a a WHERE a.v <= 400 AND EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1, :keys_m2)) ORDER BY 1;

-- case: join_nestloop_anti
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_mergejoin = off;
-- empty on one
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1) AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1));
-- empty on all
SELECT b.k FROM tk_b b WHERE b.k IN ('no such key') AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN ('no such key'));
-- empty on none
SELECT b.k FROM tk_b b WHERE b.k IN (:keys_m0, :keys_m1, :keys_m2) AND NOT EXISTS (SELECT 1 FROM customer c WHERE c.c_nation = b.w AND c.c_custkey < 3) ORDER BY 1;
SELECT count(*) FROM tk_a a WHERE NOT EXISTS (SELECT 1 FROM tk_b b WHERE b.ak = a.k AND b.k IN (:keys_m0, :keys_m1, :keys_m2));

-- case: join_issue_like_filter_hash
-- the issue's shape: a filter that empties some members' parts
SET statement_timeout = '5s';
SELECT a.k, a.v, b.k FROM tk_a a JOIN tk_b b ON a.k = b.ak WHERE b.k LIKE 'k12%' ORDER BY 1, 3 LIMIT 10;
SELECT count(*) FROM tk_a a JOIN tk_b b ON a.v = b.w WHERE b.k LIKE 'k19%';
SELECT count(*) FROM tk_a a JOIN tk_b b ON a.v = b.w WHERE b.k LIKE 'abc%';

-- case: join_both_sides_empty_on_some
SET statement_timeout = '5s';
SELECT b.k, c.c_custkey FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m1) AND c.c_custkey IN (1, 2, 3, 4) ORDER BY 1, 2;
SELECT count(*) FROM tk_b b JOIN customer c ON c.c_nation = b.w WHERE b.k IN (:keys_m2) AND c.c_custkey = 2;

-- case: join_with_empty_table
SET statement_timeout = '5s';
SELECT count(*) FROM orders o JOIN empty_t e ON e.v = o.o_comment;
SELECT count(*) FROM orders o LEFT JOIN empty_t e ON e.v = o.o_comment;
SELECT count(*) FROM empty_t e LEFT JOIN orders o ON e.v = o.o_comment;
SELECT count(*) FROM orders o WHERE EXISTS (SELECT 1 FROM empty_t e WHERE e.v = o.o_comment);
SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM empty_t e WHERE e.v = o.o_comment);

-- case: join_with_empty_table_merge
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_nestloop = off;
SELECT count(*) FROM orders o JOIN empty_t e ON e.v = o.o_comment;
SELECT count(*) FROM orders o FULL JOIN empty_t e ON e.v = o.o_comment;

-- case: join_with_empty_table_nestloop
SET statement_timeout = '5s';
SET enable_hashjoin = off; SET enable_mergejoin = off;
SELECT count(*) FROM customer c JOIN empty_t e ON e.k = c.c_nation;
SELECT count(*) FROM customer c LEFT JOIN empty_t e ON e.k = c.c_nation;

-- case: join_int_keys_on_one_member
-- orders filtered to keys of one member, joined on a column that is not
-- the distribution column
SET statement_timeout = '5s';
SELECT o.o_orderkey, c.c_custkey FROM orders o JOIN customer c ON c.c_nation = o.o_custkey % 25 WHERE o.o_orderkey IN (:ints_m1) AND c.c_custkey < 4 ORDER BY 1, 2;
SELECT count(*) FROM orders o JOIN lineitem l ON l.l_qty = o.o_custkey WHERE o.o_orderkey IN (:ints_m2) AND l.l_orderkey < 20;

-- case: join_limit_stops_early
-- a LIMIT satisfied early stops the join above exchanges still sending
SET statement_timeout = '5s';
SELECT o.o_orderkey FROM orders o JOIN customer c ON c.c_custkey = o.o_custkey ORDER BY 1 LIMIT 3;
SELECT count(*) FROM (SELECT 1 FROM orders o JOIN lineitem l ON l.l_qty = o.o_custkey LIMIT 5) s;
SELECT EXISTS (SELECT 1 FROM orders o JOIN customer c ON c.c_nation = o.o_custkey WHERE c.c_custkey < 3);

-- case: join_three_way_empty_middle
SET statement_timeout = '5s';
SELECT count(*) FROM tk_b b JOIN customer c ON c.c_nation = b.w JOIN orders o ON o.o_custkey = c.c_custkey WHERE b.k IN (:keys_m0);
SELECT count(*) FROM tk_b b JOIN customer c ON c.c_nation = b.w JOIN orders o ON o.o_custkey = c.c_custkey WHERE b.k IN ('no such key');
