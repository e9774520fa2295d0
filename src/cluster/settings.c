/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The settings a plan fragment runs with: which the coordinator ships
 *	  with every fragment, and how a member takes them; the same, with the
 *	  transaction's start time, for statements forwarded to a member's
 *	  session of the transaction (rx_statement_context_sql()).
 *
 * Both ends of a point lookup sent to another member pay for them on
 * every statement (two dozen settings, each looked up by name and
 * formatted with its units), so both keep the text they last showed of
 * each setting and show it again only when the setting's variable
 * changed: the coordinator to ship it, the member to see whether the
 * coordinator's value differs from its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"

#include "cluster/settings.h"

/*
 * Settings a fragment must see as the coordinator sees them, as parallel
 * workers see the leader's: those that change how values are parsed,
 * printed or compared on the members (README lists them and why the
 * others need not travel), and the resources its plan nodes may use.
 * Custom settings (prefix.name) travel too, see rx_ship_settings().
 */
static const char *const shipped_gucs[] = {
	/* text forms of values, in and out */
	"DateStyle", "IntervalStyle", "TimeZone", "timezone_abbreviations",
	"extra_float_digits", "bytea_output", "lc_monetary", "lc_numeric",
	"lc_time", "standard_conforming_strings", "array_nulls", "xmlbinary",
	"xmloption", "quote_all_identifiers",
	/* name lookups at run time (to_regclass(), to_tsvector(text)) */
	"search_path", "default_text_search_config",
	/* results of index scans, waits */
	"gin_fuzzy_search_limit", "lock_timeout",
	/* resources */
	"work_mem", "hash_mem_multiplier", "enable_hashagg", "jit",
	"parallel_leader_participation", "rdma_exchange.buffer_depth"
};

/*
 * A shipped setting's text, and the value it was shown from.  Showing a
 * setting (GetConfigOptionByName()) looks it up by name and formats it
 * with its units, for every setting of every message: a few per cent of
 * the cost of a point lookup sent to another member.  Settings change
 * rarely, so the text is kept and shown again only when the variable's
 * value changed; a setting with a show hook (TimeZone) is shown every
 * time, since its text may depend on more than its variable.
 */
typedef struct ShownSetting
{
	bool		valid;
	struct config_generic *conf;	/* the setting shown (a placeholder is
									 * replaced by its extension's) */
	union
	{
		bool		b;
		int			i;
		double		r;
	}			raw;
	char	   *raw_string;		/* a string setting's value, malloc'd */
	char	   *text;			/* as shown, malloc'd */
} ShownSetting;

/*
 * The setting's variable into v (a string's pointer, not a copy); false
 * for a setting shown by a hook, or a string not set: shown every time
 */
static bool
read_variable(struct config_generic *conf, ShownSetting *v)
{
	memset(&v->raw, 0, sizeof(v->raw));
	v->raw_string = NULL;
	switch (conf->vartype)
	{
		case PGC_BOOL:
			v->raw.b = *((struct config_bool *) conf)->variable;
			return ((struct config_bool *) conf)->show_hook == NULL;
		case PGC_INT:
			v->raw.i = *((struct config_int *) conf)->variable;
			return ((struct config_int *) conf)->show_hook == NULL;
		case PGC_REAL:
			v->raw.r = *((struct config_real *) conf)->variable;
			return ((struct config_real *) conf)->show_hook == NULL;
		case PGC_ENUM:
			v->raw.i = *((struct config_enum *) conf)->variable;
			return ((struct config_enum *) conf)->show_hook == NULL;
		case PGC_STRING:
			v->raw_string = *((struct config_string *) conf)->variable;
			return ((struct config_string *) conf)->show_hook == NULL &&
				v->raw_string != NULL;
	}
	return false;
}

/*
 * The setting's text now: shown again only when its variable changed
 * since it was last shown into *shown (or it cannot be kept, see
 * read_variable()).  The result is shown->text or, for a setting not
 * kept, a palloc'd string.
 */
static const char *
setting_text(struct config_generic *conf, ShownSetting *shown)
{
	ShownSetting now;
	bool		cacheable = read_variable(conf, &now);
	char	   *text;

	if (cacheable && shown->valid && shown->conf == conf &&
		(conf->vartype == PGC_STRING
		 ? strcmp(now.raw_string, shown->raw_string) == 0
		 : memcmp(&now.raw, &shown->raw, sizeof(now.raw)) == 0))
		return shown->text;

	text = GetConfigOptionByName(conf->name, NULL, false);
	free(shown->text);
	free(shown->raw_string);
	shown->conf = conf;
	shown->raw = now.raw;
	shown->raw_string = now.raw_string ? strdup(now.raw_string) : NULL;
	shown->text = strdup(text);
	shown->valid = cacheable && shown->text != NULL &&
		(now.raw_string == NULL || shown->raw_string != NULL);
	return shown->valid ? shown->text : text;
}

static void
ship_setting(List **names, List **values, struct config_generic *conf,
			 ShownSetting *shown)
{
	*names = lappend(*names, makeString((char *) conf->name));
	*values = lappend(*values, makeString((char *) setting_text(conf, shown)));
}

/*
 * The list above, then every custom setting (an extension's or a
 * placeholder's, "prefix.name") given a value in this session, for the
 * database or role, or on the command line: applications keep tenant ids
 * and the like there, and row-level security policies read them with
 * current_setting().  Superuser-only ones go only with a superuser's
 * fragments (the member would refuse them otherwise), rdma_exchange's
 * own stay here.
 *
 * Their positions in PostgreSQL's array of settings are kept (custom
 * ones are few among several hundred), and found again when the array
 * changes length or place: a placeholder added or removed, an
 * extension's settings defined (one that replaces its placeholder takes
 * its place).  Going through every setting per message was a few per
 * cent of a point lookup's cost.
 */
typedef struct ShippedSetting
{
	int			pos;			/* in PostgreSQL's array */
	ShownSetting shown;
} ShippedSetting;

static void
shipped_settings(List **names, List **values)
{
	static ShippedSetting *shipped = NULL;	/* malloc'd: the list, custom */
	static int	nshipped = 0;
	static struct config_generic **shipped_of = NULL;	/* the array and */
	static int	shipped_of_n = -1;	/* length they were found in */
	struct config_generic **vars = get_guc_variables();
	int			nvars = GetNumConfigOptions();
	bool		super = superuser();

	if (vars != shipped_of || nvars != shipped_of_n)
	{
		for (int i = 0; i < nshipped; i++)
		{
			free(shipped[i].shown.text);
			free(shipped[i].shown.raw_string);
		}
		free(shipped);
		nshipped = 0;
		shipped_of_n = -1;
		shipped = calloc(lengthof(shipped_gucs) + nvars, sizeof(ShippedSetting));
		if (shipped == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		for (int i = 0; i < lengthof(shipped_gucs); i++)
		{
			int			pos = -1;

			for (int v = 0; v < nvars && pos < 0; v++)
				if (pg_strcasecmp(vars[v]->name, shipped_gucs[i]) == 0)
					pos = v;
			if (pos < 0)
				elog(ERROR, "setting \"%s\" not found", shipped_gucs[i]);
			shipped[nshipped++].pos = pos;
		}
		for (int v = 0; v < nvars; v++)
			if (strchr(vars[v]->name, GUC_QUALIFIER_SEPARATOR) != NULL &&
				strncmp(vars[v]->name, "rdma_exchange.", strlen("rdma_exchange.")) != 0)
				shipped[nshipped++].pos = v;
		shipped_of = vars;
		shipped_of_n = nvars;
	}
	for (int i = 0; i < nshipped; i++)
	{
		struct config_generic *conf = vars[shipped[i].pos];

		if (i >= lengthof(shipped_gucs) &&
			(conf->source < PGC_S_GLOBAL ||
			 (conf->context != PGC_USERSET &&
			  !(conf->context == PGC_SUSET && super))))
			continue;
		ship_setting(names, values, conf, &shipped[i].shown);
	}
}

void
rx_ship_settings(RxFragmentMsg *msg)
{
	shipped_settings(&msg->guc_names, &msg->guc_values);
}

/*
 * Where the member looks up the settings of a message: by position, as
 * the coordinator ships the same list in the same order every time; a
 * position whose name differs, or a changed array of settings, is looked
 * up again.  pos is -1 for a setting this member does not have (a custom
 * one that set_config_option() will create as a placeholder).  The
 * position, not the setting, is kept: an extension that defines its
 * settings replaces (and frees) their placeholders in place.
 */
typedef struct TakenSetting
{
	char	   *name;			/* malloc'd */
	int			pos;			/* in PostgreSQL's array */
	ShownSetting shown;
} TakenSetting;

static int
find_setting(struct config_generic **vars, int nvars, const char *name)
{
	for (int v = 0; v < nvars; v++)
		if (pg_strcasecmp(vars[v]->name, name) == 0)
			return v;
	return -1;
}

/*
 * Take the coordinator's settings (names and values, as
 * rx_ship_settings() made them) with action (GUC_ACTION_SAVE: until the
 * current GUC nest level ends; GUC_ACTION_LOCAL: until the transaction
 * does), the ones that differ from this session's: setting some is not
 * cheap (timezone_abbreviations reads its file, on the way in and out).
 */
void
rx_take_settings(List *names, List *values, GucAction action)
{
	static TakenSetting *taken = NULL;	/* malloc'd */
	static int	ntaken = 0;
	static struct config_generic **taken_of = NULL; /* the array and */
	static int	taken_of_n = -1;	/* length they were found in */
	struct config_generic **vars = get_guc_variables();
	int			nvars = GetNumConfigOptions();
	int			n = list_length(names);
	ListCell   *a,
			   *b;
	int			i = 0;
	bool		moved = false;

	if (vars != taken_of || nvars != taken_of_n || n > ntaken)
	{
		TakenSetting *grown = calloc(Max(Max(n, ntaken), 1), sizeof(TakenSetting));

		if (grown == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		for (int t = 0; t < ntaken; t++)
		{
			free(taken[t].name);
			free(taken[t].shown.text);
			free(taken[t].shown.raw_string);
		}
		free(taken);
		taken = grown;
		ntaken = Max(n, ntaken);
		taken_of = vars;
		taken_of_n = nvars;
	}

	forboth(a, names, b, values)
	{
		const char *name = strVal(lfirst(a));
		const char *value = strVal(lfirst(b));
		TakenSetting *t = &taken[i++];
		const char *current;

		if (t->name == NULL || strcmp(t->name, name) != 0)
		{
			free(t->name);
			t->name = strdup(name);
			if (t->name == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
			t->pos = -1;
		}
		if (t->pos < 0 || moved)
		{
			/* new here, or not defined the last time (a placeholder now?) */
			t->pos = find_setting(vars, nvars, name);
			t->shown.valid = false;
		}
		current = t->pos >= 0 ? setting_text(vars[t->pos], &t->shown) : NULL;
		if (current != NULL && strcmp(current, value) == 0)
			continue;
		(void) set_config_option(name, value,
								 superuser() ? PGC_SUSET : PGC_USERSET,
								 PGC_S_SESSION, action, true, 0, false);

		/* a placeholder made: the array moved, positions are found again */
		if (get_guc_variables() != vars || GetNumConfigOptions() != nvars)
		{
			vars = get_guc_variables();
			nvars = GetNumConfigOptions();
			moved = true;
			taken_of = NULL;
		}
	}
}

/* ---------------------------------------------------------------------
 * Statements forwarded to a member's session
 *
 * An UPDATE or DELETE run on the members' parts (dml_forward.c), or a row
 * inserted there under row-level security, evaluates its expressions in
 * the member's session of the transaction: now(), current_setting() of an
 * application's setting, a date's text form under DateStyle, a policy's
 * condition.  They must give what they give here, as they do in a plan
 * fragment.  So such a statement goes after a command, in the same
 * pipeline, that makes the member's transaction take this session's
 * shipped settings, as SET LOCAL would (so until the member's transaction
 * ends, or a savepoint rolled back takes them with it; the command goes
 * with every such statement), and this transaction's start time, which
 * now() and CURRENT_TIMESTAMP give.
 * ---------------------------------------------------------------------
 */

/*
 * strings as one text[] literal: one token for the member's parser, where
 * an ARRAY[...] of them was a constant each to parse and transform (most
 * of that command's cost there)
 */
static void
append_text_array(StringInfo sql, List *strings)
{
	StringInfoData array;
	ListCell   *lc;

	initStringInfo(&array);
	appendStringInfoChar(&array, '{');
	foreach(lc, strings)
	{
		const char *str = strVal(lfirst(lc));

		if (foreach_current_index(lc) > 0)
			appendStringInfoChar(&array, ',');
		appendStringInfoChar(&array, '"');
		for (const char *c = str != NULL ? str : ""; *c; c++)
		{
			if (*c == '"' || *c == '\\')
				appendStringInfoChar(&array, '\\');
			appendStringInfoChar(&array, *c);
		}
		appendStringInfoChar(&array, '"');
	}
	appendStringInfoChar(&array, '}');
	appendStringInfo(sql, "%s::pg_catalog.text[]", quote_literal_cstr(array.data));
	pfree(array.data);
}

/* the command that goes ahead of a forwarded statement */
char *
rx_statement_context_sql(void)
{
	List	   *names = NIL;
	List	   *values = NIL;
	StringInfoData sql;

	shipped_settings(&names, &values);
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT rdma_exchange.take_statement_context(" INT64_FORMAT ", ",
					 (int64) GetCurrentTransactionStartTimestamp());
	append_text_array(&sql, names);
	appendStringInfoString(&sql, ", ");
	append_text_array(&sql, values);
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

static List *
string_list(ArrayType *array)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *l = NIL;

	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		l = lappend(l, makeString(nulls[i] ? "" : TextDatumGetCString(elems[i])));
	return l;
}

/*
 * rdma_exchange.take_statement_context(xact_start, names, values), on the
 * member: the coordinator's transaction start (microseconds since 2000,
 * a timestamptz's value) and settings, for the rest of this transaction
 */
PG_FUNCTION_INFO_V1(rx_take_statement_context);

Datum
rx_take_statement_context(PG_FUNCTION_ARGS)
{
	List	   *names = string_list(PG_GETARG_ARRAYTYPE_P(1));
	List	   *values = string_list(PG_GETARG_ARRAYTYPE_P(2));

	if (list_length(names) != list_length(values))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("take_statement_context() needs as many values as names")));
	rx_take_settings(names, values, GUC_ACTION_LOCAL);

	/* as fragment.c does: now() gives the coordinator's value */
	SetParallelStartTimestamps((TimestampTz) PG_GETARG_INT64(0),
							   GetCurrentStatementStartTimestamp());
	PG_RETURN_VOID();
}
