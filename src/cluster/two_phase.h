/*-------------------------------------------------------------------------
 *
 * two_phase.h
 *	  Two-phase commit of transactions that changed several members, and
 *	  the recovery of prepared transactions left in doubt (two_phase.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_TWO_PHASE_H
#define RX_TWO_PHASE_H

/* test setting: where the coordinator stops in a two-phase commit */
typedef enum RxCommitFault
{
	RX_FAULT_COMMIT_NONE = 0,
	RX_FAULT_COMMIT_BEFORE_PREPARE,		/* error before any PREPARE */
	RX_FAULT_COMMIT_CRASH_AFTER_FIRST_PREPARE,	/* one member prepared */
	RX_FAULT_COMMIT_CRASH_AFTER_PREPARE,	/* all prepared, not decided */
	RX_FAULT_COMMIT_CRASH_AFTER_DECISION,	/* committed here, nothing sent */
	RX_FAULT_COMMIT_SKIP_COMMIT_PREPARED	/* as if the connections dropped */
} RxCommitFault;

extern int	rx_fault_commit;

extern void rx_two_phase_init(void);

/* the decision record of this transaction, written in it; returns its id */
extern char *rx_two_phase_decide(void);

/* the global id of a remote transaction (connection slot) of transaction */
extern char *rx_two_phase_gid(const char *transaction, int slot);

/* the test setting's stop at this step, if it is the chosen one */
extern void rx_two_phase_fault(RxCommitFault step);

#endif							/* RX_TWO_PHASE_H */
