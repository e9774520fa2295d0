/*-------------------------------------------------------------------------
 *
 * rowcopy.c
 *	  Rows of a local table as lines of COPY text format.
 *
 * Text, not binary: binary array and record values carry type OIDs,
 * which differ between members for user-defined types.  The columns sent
 * are the ones COPY can load: generated columns are computed again by the
 * receiving member, dropped ones do not exist there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "cluster/rowcopy.h"

RxRowEncoder *
rx_row_encoder_create(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	RxRowEncoder *enc = palloc0(sizeof(RxRowEncoder));
	StringInfoData cmd;
	bool		first = true;

	enc->relid = RelationGetRelid(rel);
	enc->table_name = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												 RelationGetRelationName(rel));
	enc->attnums = palloc(sizeof(AttrNumber) * Max(desc->natts, 1));
	enc->out = palloc(sizeof(FmgrInfo) * Max(desc->natts, 1));

	initStringInfo(&cmd);
	appendStringInfo(&cmd, "COPY %s (", enc->table_name);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			outfn;
		bool		isvarlena;

		if (att->attisdropped || att->attgenerated != '\0')
			continue;
		getTypeOutputInfo(att->atttypid, &outfn, &isvarlena);
		fmgr_info(outfn, &enc->out[enc->ncols]);
		enc->attnums[enc->ncols++] = att->attnum;
		appendStringInfo(&cmd, "%s%s", first ? "" : ", ",
						 quote_identifier(NameStr(att->attname)));
		first = false;
	}
	appendStringInfoString(&cmd, ")");
	enc->insert_command = psprintf("INSERT INTO %s", cmd.data + strlen("COPY "));
	{
		StringInfoData ins;

		initStringInfo(&ins);
		appendStringInfo(&ins, "%s VALUES (", enc->insert_command);
		for (int c = 0; c < enc->ncols; c++)
			appendStringInfo(&ins, "%s$%d", c > 0 ? ", " : "", c + 1);
		appendStringInfoChar(&ins, ')');
		enc->insert_params = ins.data;
	}
	appendStringInfoString(&cmd, " FROM STDIN");
	enc->copy_command = cmd.data;
	return enc;
}

static void
append_escaped(StringInfo buf, const char *s)
{
	const char *start = s;

	for (; *s; s++)
	{
		char		c = *s;
		const char *esc;

		switch (c)
		{
			case '\\':
				esc = "\\\\";
				break;
			case '\n':
				esc = "\\n";
				break;
			case '\r':
				esc = "\\r";
				break;
			case '\t':
				esc = "\\t";
				break;
			default:
				continue;
		}
		appendBinaryStringInfo(buf, start, s - start);
		appendStringInfoString(buf, esc);
		start = s + 1;
	}
	appendBinaryStringInfo(buf, start, s - start);
}

void
rx_row_encode(RxRowEncoder *enc, Datum *values, bool *nulls, StringInfo buf)
{
	for (int c = 0; c < enc->ncols; c++)
	{
		int			i = enc->attnums[c] - 1;

		if (c > 0)
			appendStringInfoChar(buf, '\t');
		if (nulls[i])
			appendStringInfoString(buf, "\\N");
		else
		{
			char	   *s = OutputFunctionCall(&enc->out[c], values[i]);

			append_escaped(buf, s);
			pfree(s);
		}
	}
	appendStringInfoChar(buf, '\n');
}

/*
 * The row as one INSERT statement, values as literals in the members'
 * common text format: for a member that cannot take the row by COPY
 * (row-level security applies to the user there, which COPY FROM refuses).
 */
char *
rx_row_insert_sql(RxRowEncoder *enc, Datum *values, bool *nulls)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "%s VALUES (", enc->insert_command);
	for (int c = 0; c < enc->ncols; c++)
	{
		int			i = enc->attnums[c] - 1;

		if (c > 0)
			appendStringInfoString(&sql, ", ");
		if (nulls[i])
			appendStringInfoString(&sql, "NULL");
		else
		{
			char	   *s = OutputFunctionCall(&enc->out[c], values[i]);

			appendStringInfoString(&sql, quote_literal_cstr(s));
			pfree(s);
		}
	}
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

const char **
rx_row_params(RxRowEncoder *enc, Datum *values, bool *nulls)
{
	const char **params = palloc(sizeof(char *) * Max(enc->ncols, 1));

	for (int c = 0; c < enc->ncols; c++)
	{
		int			i = enc->attnums[c] - 1;

		params[c] = nulls[i] ? NULL : OutputFunctionCall(&enc->out[c], values[i]);
	}
	return params;
}

int
rx_transmission_begin(void)
{
	int			nestlevel;

	if (DateStyle == USE_ISO_DATES && IntervalStyle == INTSTYLE_POSTGRES &&
		extra_float_digits > 0)
		return -1;
	nestlevel = NewGUCNestLevel();
	if (DateStyle != USE_ISO_DATES)
		(void) set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	if (IntervalStyle != INTSTYLE_POSTGRES)
		(void) set_config_option("intervalstyle", "postgres", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (extra_float_digits <= 0)
		(void) set_config_option("extra_float_digits", "1", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

void
rx_transmission_end(int nestlevel)
{
	if (nestlevel >= 0)
		AtEOXact_GUC(true, nestlevel);
}
