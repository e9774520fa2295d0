/*-------------------------------------------------------------------------
 *
 * hub.h
 *	  One backend's side of all exchanges on one transport port: tuple
 *	  framing on the way out, reassembly and per-source queues on the way in.
 *
 * Tuples travel as a byte stream per (exchange, source, destination):
 * a 4-byte length and the MinimalTuple bytes, padded to a multiple of 4,
 * cut into messages of the transport's size, so a tuple larger than one
 * message simply continues in the next ones.  The transport keeps each
 * stream in order.  The padding keeps every length and tuple aligned in
 * the message (payloads start aligned and hold a multiple of 4 bytes), so
 * the receiver can queue a tuple that lies whole in one message straight
 * from the message.
 *
 * No distributed deadlock: whenever this backend would block (no credit to
 * send, or no data to return), it first drains *every* message addressed to
 * it, for every exchange of the port, into that exchange's queues
 * (tuplestores, spilling to disk past work_mem), and flushes its partly
 * filled send buffers.  A member therefore never stops accepting data while
 * it waits, and no data sits in a half-filled buffer while its sender waits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_HUB_H
#define RX_HUB_H

#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "transport/transport.h"

typedef struct RxHub RxHub;

/* per peer member counters of one exchange direction, for EXPLAIN */
typedef struct RxHubCounters
{
	uint64		rows;
	uint64		bytes;
	uint64		msgs;
	double		wait_ms;		/* credit (send) or data (receive) */
} RxHubCounters;

extern RxHub *rx_hub_create(RxPort *port, int self, int nmembers,
							const char *const *member_names);
extern void rx_hub_free(RxHub *hub);
extern void rx_hub_register_receive(RxHub *hub, int exchange_id,
									TupleDesc tupdesc);
extern int	rx_hub_self(RxHub *hub);
extern int	rx_hub_nmembers(RxHub *hub);
extern RxPort *rx_hub_port(RxHub *hub);
extern const char *rx_hub_member_name(RxHub *hub, int member);

/* sending; dest RX_BROADCAST: to every other member, in one buffer */
extern void rx_hub_send_tuple(RxHub *hub, int exchange_id, int dest,
							  MinimalTuple tuple);
extern void rx_hub_send_eos(RxHub *hub, int exchange_id, int dest);
extern bool rx_hub_stopped(RxHub *hub);

/* receiving */
extern bool rx_hub_pump(RxHub *hub);
extern bool rx_hub_next(RxHub *hub, int exchange_id, int source,
						TupleTableSlot *slot);
extern bool rx_hub_has_tuple(RxHub *hub, int exchange_id, int source);
extern bool rx_hub_source_done(RxHub *hub, int exchange_id, int source);
extern bool rx_hub_all_done(RxHub *hub, int exchange_id, bool self_is_remote);
extern void rx_hub_wait(RxHub *hub, int exchange_id, bool sending,
						long timeout_ms);

extern void rx_hub_counters(RxHub *hub, int exchange_id, bool send,
							RxHubCounters *per_member);

#endif							/* RX_HUB_H */
