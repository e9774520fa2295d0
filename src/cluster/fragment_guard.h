/*-------------------------------------------------------------------------
 *
 * fragment_guard.h
 *	  Signed fragments bound to their query (fragment_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_FRAGMENT_GUARD_H
#define RX_FRAGMENT_GUARD_H

#include "cluster/fragment_msg.h"

/* how long a fragment message may be run after it was made */
#define RX_FRAGMENT_LIFETIME_MS 15000

extern void rx_fragment_guard_init(void);

/* coordinator: the binding fields of a message it makes */
extern void rx_fragment_bind(RxFragmentMsg *msg);

/* member: refuse a message that is not for this role, expired or seen */
extern void rx_fragment_check_binding(const RxFragmentMsg *msg,
									  const char *member);

#endif							/* RX_FRAGMENT_GUARD_H */
