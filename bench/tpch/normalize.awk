# bench/tpch/normalize.awk: a query's answer (psql -At, '|' between
# columns) as check.sh and run.sh compare it: numbers with more decimals
# than a TPC-H report prints rounded to 2.  Sort the output afterwards.
#
#   awk -F'|' -v OFS='|' -f normalize.awk ANSWER | LC_ALL=C sort
{
	for (i = 1; i <= NF; i++)
		if ($i ~ /^-?[0-9]+\.[0-9][0-9][0-9]+$/)
			$i = sprintf("%.2f", $i)
	print
}
