/*-------------------------------------------------------------------------
 *
 * deadlock.h
 *	  Lock cycles that run through several members (see deadlock.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_DEADLOCK_H
#define RX_DEADLOCK_H

/* around the coordinator's waits for a member (remote.c) */
extern void rx_deadlock_wait_begin(void);
extern void rx_deadlock_wait_end(void);

/* one round of detection over every member (recovery worker) */
extern void rx_deadlock_detect(void);

extern void rx_deadlock_init(void);

#endif							/* RX_DEADLOCK_H */
