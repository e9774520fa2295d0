/*-------------------------------------------------------------------------
 *
 * rowcopy.h
 *	  Rows of a local table as lines of COPY text format, for sending them
 *	  to another member's copy of the table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_ROWCOPY_H
#define RX_ROWCOPY_H

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/relcache.h"

typedef struct RxRowEncoder
{
	Oid			relid;
	char	   *table_name;		/* schema-qualified, quoted */
	char	   *copy_command;	/* COPY table (columns) FROM STDIN */
	char	   *insert_command; /* INSERT INTO table (columns) */
	char	   *insert_params;	/* ... VALUES ($1, ..., $ncols) */
	int			ncols;			/* columns sent: not dropped, not generated */
	AttrNumber *attnums;		/* their attribute numbers */
	FmgrInfo   *out;			/* their output functions */
} RxRowEncoder;

/* built in CurrentMemoryContext */
extern RxRowEncoder *rx_row_encoder_create(Relation rel);

/* append the COPY line of a row (values/nulls of the whole tuple) */
extern void rx_row_encode(RxRowEncoder *enc, Datum *values, bool *nulls,
						  StringInfo buf);

/* INSERT of a row with its values as literals */
extern char *rx_row_insert_sql(RxRowEncoder *enc, Datum *values, bool *nulls);

/* the parameters of insert_params for a row: ncols texts (NULL: null) */
extern const char **rx_row_params(RxRowEncoder *enc, Datum *values, bool *nulls);

/*
 * Output must read back identically on the member whatever its settings:
 * ISO dates, postgres intervals, exact floats.  Returns a GUC nest level
 * to pass to rx_transmission_end(), or -1 when nothing needed changing.
 */
extern int	rx_transmission_begin(void);
extern void rx_transmission_end(int nestlevel);

#endif							/* RX_ROWCOPY_H */
