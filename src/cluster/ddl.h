/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  DDL propagation (ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DDL_H
#define RX_DDL_H

extern bool rx_propagate_ddl;

extern void rx_ddl_init(void);

/* an ALTER TABLE running here goes to the members as a whole */
extern bool rx_ddl_alter_propagating(void);

#endif							/* RX_DDL_H */
