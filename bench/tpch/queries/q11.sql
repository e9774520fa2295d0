-- TPC-H Q11: Important Stock Identification Query, validation parameters
-- NATION = GERMANY, FRACTION = 0.0001
-- Note: the spec sets FRACTION = 0.0001 / SF. Here 0.0001 is used literally
-- (exact for SF = 1. Divide it by the scale factor for other scale factors).
select
	ps_partkey,
	sum(ps_supplycost * ps_availqty) as value
from
	partsupp,
	supplier,
	nation
where
	ps_suppkey = s_suppkey
	and s_nationkey = n_nationkey
	and n_name = 'GERMANY'
group by
	ps_partkey having
		sum(ps_supplycost * ps_availqty) > (
			select
				sum(ps_supplycost * ps_availqty) * 0.0001
			from
				partsupp,
				supplier,
				nation
			where
				ps_suppkey = s_suppkey
				and s_nationkey = n_nationkey
				and n_name = 'GERMANY'
		)
order by
	value desc;
