/*-------------------------------------------------------------------------
 *
 * ref_order.h
 *	  Write order of reference tables (ref_order.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_REF_ORDER_H
#define RX_REF_ORDER_H

/*
 * Before this (sub)transaction first writes reference table relid: wait
 * for its turn on the first member.
 */
extern void rx_order_reference_write(Oid relid);

#endif							/* RX_REF_ORDER_H */
