# bench/shuffle/rows.sh: the rows the shuffle benchmark moves, shared by
# run.sh and the COPY baseline (baselines/copy_repartition.sh) so that both
# repartition the same data.  Sourced, never run.
#
# Column lists and SELECT lists over generate_series row g:
#   RX_N16_*  "16 B" rows like the paper's: (k bigint, v bigint)
#   RX_LI_*   the 16 TPC-H lineitem columns with their types and dbgen-like
#             values; l_orderkey is g, distinct, so that hashing on it
#             spreads the rows evenly

# shellcheck shell=bash

RX_N16_COLS='k bigint, v bigint'
RX_N16_SELECT='g, g * 7'

RX_LI_COLS='l_orderkey bigint, l_partkey int, l_suppkey int, l_linenumber int,
	l_quantity numeric(15,2), l_extendedprice numeric(15,2),
	l_discount numeric(15,2), l_tax numeric(15,2),
	l_returnflag char(1), l_linestatus char(1),
	l_shipdate date, l_commitdate date, l_receiptdate date,
	l_shipinstruct char(25), l_shipmode char(10), l_comment varchar(44)'
RX_LI_SELECT="g, 1 + (g * 7919) % 200000, 1 + (g * 104729) % 10000, (g - 1) % 4 + 1,
	1 + g % 50, 901 + (g % 100000) * 1.37,
	(g % 11) / 100.0, (g % 9) / 100.0,
	(ARRAY['A','N','R'])[1 + g % 3], (ARRAY['F','O'])[1 + g % 2],
	date '1992-01-02' + (g % 2500)::int, date '1992-01-31' + (g % 2500)::int,
	date '1992-01-03' + (g % 2500)::int + (g % 30)::int,
	(ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[1 + g % 4],
	(ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + g % 7],
	left(md5(g::text) || md5((g + 1)::text), 10 + (g % 34)::int)"
