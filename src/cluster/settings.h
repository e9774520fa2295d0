/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The settings a plan fragment or a forwarded statement runs with
 *	  (settings.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_SETTINGS_H
#define RX_SETTINGS_H

#include "cluster/fragment_msg.h"
#include "utils/guc.h"

extern void rx_ship_settings(RxFragmentMsg *msg);
extern void rx_take_settings(List *names, List *values, GucAction action);
extern char *rx_statement_context_sql(void);

#endif
