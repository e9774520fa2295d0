/*-------------------------------------------------------------------------
 *
 * sequences.c
 *	  Cluster-wide sequences: serial and identity columns of distributed
 *	  and reference tables give unique values whichever member inserts.
 *
 * Each member has its own copy of a table's sequences, and a default is
 * computed by the member the row is written through.  When a table is
 * distributed, every sequence one of its columns owns (serial, bigserial,
 * identity) is interleaved across the members: with n members, member i
 * continues at next + i * increment and steps by n * increment, where next
 * is what the sequence would have given on the calling member.  Values
 * stay unique and increasing per member, not gap-free or in insertion
 * order across members (neither are they on one server with concurrent
 * sessions and sequence caches).  A sequence changed later by hand
 * (ALTER SEQUENCE, setval) is this member's only; adding a member does not
 * interleave again (README).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "cluster/admin.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/sequences.h"

void
rx_interleave_sequences(Oid relid, const RxMember *members, int nmembers,
						int self)
{
	char	 ***rows;
	int			n;

	rows = rx_spi_strings(psprintf("SELECT pg_catalog.format('%%I.%%I', ps.schemaname, ps.sequencename),"
								   " ps.increment_by,"
								   " COALESCE(ps.last_value OPERATOR(pg_catalog.+) ps.increment_by, ps.start_value)"
								   " FROM pg_catalog.pg_depend d"
								   " JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) d.objid"
								   "  AND s.relkind OPERATOR(pg_catalog.=) 'S'"
								   " JOIN pg_catalog.pg_namespace sn ON sn.oid OPERATOR(pg_catalog.=) s.relnamespace"
								   " JOIN pg_catalog.pg_sequences ps ON ps.schemaname OPERATOR(pg_catalog.=) sn.nspname"
								   "  AND ps.sequencename OPERATOR(pg_catalog.=) s.relname"
								   " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
								   " AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
								   " AND d.refobjid OPERATOR(pg_catalog.=) %u"
								   " AND d.deptype OPERATOR(pg_catalog.=) ANY ('{a,i}')", relid),
						  &n);
	for (int i = 0; i < n; i++)
	{
		int64		inc = strtoi64(rows[i][1], NULL, 10);
		int64		next = strtoi64(rows[i][2], NULL, 10);

		for (int m = 0; m < nmembers; m++)
		{
			char	   *sql = psprintf("ALTER SEQUENCE %s INCREMENT BY " INT64_FORMAT
									   " RESTART WITH " INT64_FORMAT,
									   rows[i][0], inc * nmembers, next + m * inc);

			if (m == self)
				rx_spi_exec(sql);
			else
				rx_exec_command(rx_xact_connection(&members[m]), members[m].name, sql);
		}
	}
}
