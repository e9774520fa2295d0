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
 * interleave again (README).  A restored table's sequences are
 * interleaved again from past the largest value the table holds
 * (rx_restore_sequences, for restore.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "cluster/admin.h"
#include "cluster/metadata.h"
#include "cluster/remote.h"
#include "cluster/remote_xact.h"
#include "cluster/sequences.h"

/* a sequence one of a table's columns owns */
typedef struct OwnedSequence
{
	char	   *name;			/* qualified, quoted */
	char	   *column;			/* quoted */
	int64		increment;
	int64		next;			/* what nextval() here would give */
} OwnedSequence;

/*
 * The sequences relid's columns own.  The next value is read from the
 * sequence itself: pg_sequences.last_value is NULL after
 * setval(..., false) or ALTER SEQUENCE RESTART, whose next value is not
 * the start value.
 */
static OwnedSequence *
owned_sequences(Oid relid, int *n)
{
	char	 ***rows;
	OwnedSequence *seqs;

	rows = rx_spi_strings(psprintf("SELECT pg_catalog.format('%%I.%%I', sn.nspname, s.relname),"
								   " sq.seqincrement, pg_catalog.quote_ident(a.attname)"
								   " FROM pg_catalog.pg_depend d"
								   " JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) d.objid"
								   "  AND s.relkind OPERATOR(pg_catalog.=) 'S'"
								   " JOIN pg_catalog.pg_namespace sn ON sn.oid OPERATOR(pg_catalog.=) s.relnamespace"
								   " JOIN pg_catalog.pg_sequence sq ON sq.seqrelid OPERATOR(pg_catalog.=) s.oid"
								   " JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.refobjid"
								   "  AND a.attnum OPERATOR(pg_catalog.=) d.refobjsubid"
								   " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
								   " AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
								   " AND d.refobjid OPERATOR(pg_catalog.=) %u"
								   " AND d.deptype OPERATOR(pg_catalog.=) ANY ('{a,i}')"
								   " ORDER BY 1", relid),
						  n);
	seqs = palloc0(sizeof(OwnedSequence) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		char	 ***next;
		int			one;

		seqs[i].name = rows[i][0];
		seqs[i].increment = strtoi64(rows[i][1], NULL, 10);
		seqs[i].column = rows[i][2];
		next = rx_spi_strings(psprintf("SELECT CASE WHEN is_called THEN last_value OPERATOR(pg_catalog.+) " INT64_FORMAT
									   " ELSE last_value END FROM %s",
									   seqs[i].increment, seqs[i].name), &one);
		seqs[i].next = strtoi64(next[0][0], NULL, 10);
	}
	return seqs;
}

void
rx_interleave_sequences(Oid relid, const RxMember *members, int nmembers,
						int self)
{
	int			n;
	OwnedSequence *seqs = owned_sequences(relid, &n);

	for (int i = 0; i < n; i++)
		for (int m = 0; m < nmembers; m++)
		{
			char	   *sql = psprintf("ALTER SEQUENCE %s INCREMENT BY " INT64_FORMAT
									   " RESTART WITH " INT64_FORMAT,
									   seqs[i].name, seqs[i].increment * nmembers,
									   seqs[i].next + m * seqs[i].increment);

			if (m == self)
				rx_spi_exec(sql);
			else
				rx_xact_exec(&members[m], sql, true);
		}
}

/*
 * Before a restored table is distributed again (restore.c): its sequences
 * come back as the dumped member had them, stepping by stride times their
 * own increment and at that member's position.  Give them back their own
 * increment, and a next value past every value in the table (the other
 * members' positions were not dumped), so that interleaving them anew
 * repeats no value the table holds.
 */
void
rx_restore_sequences(Oid relid, int stride)
{
	int			n;
	OwnedSequence *seqs = owned_sequences(relid, &n);

	for (int i = 0; i < n; i++)
	{
		int64		inc = seqs[i].increment;
		int64		next = seqs[i].next;
		char	 ***used;
		int			one;

		if (stride > 1 && inc % stride == 0)
		{
			next -= inc;		/* the dumped member's last value */
			inc /= stride;
			next += inc;
		}
		used = rx_spi_strings(psprintf("SELECT %s(%s)::pg_catalog.int8 OPERATOR(pg_catalog.+) " INT64_FORMAT
									   " FROM ONLY %s",
									   inc > 0 ? "pg_catalog.max" : "pg_catalog.min",
									   seqs[i].column, inc,
									   rx_qualified_relname(relid)), &one);
		if (used[0][0])
		{
			int64		past = strtoi64(used[0][0], NULL, 10);

			if (inc > 0 ? past > next : past < next)
				next = past;
		}
		rx_spi_exec(psprintf("ALTER SEQUENCE %s INCREMENT BY " INT64_FORMAT
							 " RESTART WITH " INT64_FORMAT,
							 seqs[i].name, inc, next));
	}
}
