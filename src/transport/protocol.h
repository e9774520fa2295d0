/*-------------------------------------------------------------------------
 *
 * protocol.h
 *	  Wire format of the data plane: the header of every datagram.
 *
 * Every message starts with a fixed 64-byte header, little-endian, no
 * padding, followed by payload_len bytes of payload (DATA only).  Byte by
 * byte:
 *
 *	offset size field        meaning
 *	   0    4   magic        bytes 'R' 'X' 'M' 'G' (uint32 0x474D5852)
 *	   4    1   version      RX_WIRE_VERSION (1)
 *	   5    1   type         1 DATA, 2 ACK (ack + credit), 3 STOP,
 *	                         4 CREDIT_REQUEST, 5 PULL, 6 LEND
 *	   6    2   flags        DATA: 0x0001 EOS (last message of the stream),
 *	                               0x0002 FRAGMENT (payload continues in the
 *	                               next message);
 *	                         ACK:  0x0100 CLOSED (the receiving port is gone,
 *	                               stop sending and waiting),
 *	                               0x0200 STOPPED (the receiver asked the
 *	                               sources of this exchange to stop);
 *	                         other bits must be zero
 *	   8    8   query_id     random id of the query (its coordinator's
 *	                         dispatch), uint64
 *	  16    8   token        random secret of the query, uint64; a message
 *	                         whose token differs from the port's is dropped
 *	  24    4   exchange_id  int32, plan node id of the exchange; in STOP,
 *	                         -1 means every exchange of the query
 *	  28    2   src_member   uint16, member index of the sender of this
 *	                         datagram
 *	  30    2   dst_member   uint16, member index it is addressed to;
 *	                         0xFFFF in a DATA or PULL sent to every member
 *	                         but its sender (broadcast: the same message has
 *	                         the same seq in each of those streams)
 *	  32    8   seq          DATA: sequence number of the message in its
 *	                         stream, from 0;
 *	                         ACK: cumulative acknowledgement: every message
 *	                         with a smaller sequence number was delivered
 *	  40    8   credit       ACK: absolute credit, the sender may send the
 *	                         messages with seq < credit (messages consumed
 *	                         by the receiving backend + credit window)
 *	  48    8   sack         ACK: bit i set: message seq + 1 + i is held by
 *	                         the receiver (arrived out of order)
 *	  56    4   payload_len  uint32, bytes after the header; the datagram is
 *	                         exactly 64 + payload_len bytes long
 *	  60    4   reserved     zero
 *
 * The stream of a DATA message is (query_id, exchange_id, src_member,
 * dst_member); an ACK or CREDIT_REQUEST names the stream from the other
 * end (src_member is the receiver of the stream for an ACK, the sender for
 * a CREDIT_REQUEST).  Fields that a type does not use are zero.
 *
 * The one-sided designs add two messages, each the header followed by a
 * fixed extension, on the reliable endpoint only:
 *
 *	PULL (semq_rd, sender -> receiver): the header of a DATA message the
 *	sender keeps in its registered pool (every field as in that message,
 *	type 5), then 16 bytes: uint64 remote address and uint64 key of the
 *	message (header included, 64 + payload_len bytes).  The receiver reads
 *	it with RDMA Read; its ACK returns the buffer.  80 bytes.
 *	LEND (semq_wr, receiver -> sender): seq is the index of the lent buffer
 *	in the stream (0, 1, ...: message seq goes into lent buffer seq), then
 *	24 bytes: uint64 remote address, uint64 key, uint32 buffer id, uint32
 *	zero.  The sender writes message seq there with RDMA Write with
 *	immediate data; the immediate is the buffer id, 32 bits (verbs
 *	carries 4 bytes of immediate data, no more); the message's length is
 *	its header's payload_len.  88 bytes.  An ACK's credit never exceeds
 *	the buffers lent before it.
 *
 * Buffers hold messages in wire format; the worker and the backends read
 * and write the header through the RX_LE* accessors only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RX_PROTOCOL_H
#define RX_PROTOCOL_H

#include "port/pg_bswap.h"

#define RX_WIRE_MAGIC		0x474D5852	/* "RXMG" on the wire */
#define RX_WIRE_VERSION		1

#define RX_WIRE_DATA			1
#define RX_WIRE_ACK				2
#define RX_WIRE_STOP			3
#define RX_WIRE_CREDIT_REQUEST	4
#define RX_WIRE_PULL			5
#define RX_WIRE_LEND			6

/* DATA flags are transport.h's RX_MSG_EOS and RX_MSG_FRAGMENT */
#define RX_WIRE_DATA_FLAGS		0x0003
#define RX_WIRE_ACK_CLOSED		0x0100
#define RX_WIRE_ACK_STOPPED		0x0200
#define RX_WIRE_ACK_FLAGS		0x0300

#define RX_WIRE_SACK_BITS		64
#define RX_WIRE_ALL				0xFFFF	/* dst_member of a broadcast DATA/PULL */

typedef struct RxWireHeader
{
	uint32		magic;
	uint8		version;
	uint8		type;
	uint16		flags;
	uint64		query_id;
	uint64		token;
	int32		exchange_id;
	uint16		src_member;
	uint16		dst_member;
	uint64		seq;
	uint64		credit;
	uint64		sack;
	uint32		payload_len;
	uint32		reserved;
} RxWireHeader;

#define RX_WIRE_HEADER_SIZE		64

typedef struct RxWirePull
{
	uint64		addr;
	uint64		key;
} RxWirePull;

typedef struct RxWireLend
{
	uint64		addr;
	uint64		key;
	uint32		bufid;
	uint32		reserved;
} RxWireLend;

#define RX_WIRE_MAX_EXT			32	/* longest extension after a header */

StaticAssertDecl(sizeof(RxWirePull) == 16 && sizeof(RxWireLend) == 24,
				 "wire extensions");

StaticAssertDecl(sizeof(RxWireHeader) == RX_WIRE_HEADER_SIZE,
				 "wire header must be 64 bytes");
StaticAssertDecl(offsetof(RxWireHeader, exchange_id) == 24 &&
				 offsetof(RxWireHeader, seq) == 32 &&
				 offsetof(RxWireHeader, payload_len) == 56,
				 "wire header layout");

/* host <-> little-endian; no-ops on little-endian hosts */
#ifdef WORDS_BIGENDIAN
#define RX_LE16(x)	pg_bswap16(x)
#define RX_LE32(x)	pg_bswap32(x)
#define RX_LE64(x)	pg_bswap64(x)
#else
#define RX_LE16(x)	((uint16) (x))
#define RX_LE32(x)	((uint32) (x))
#define RX_LE64(x)	((uint64) (x))
#endif

/* a header in host order, as the worker handles it */
typedef RxWireHeader RxHeader;

static inline void
rx_header_encode(const RxHeader *h, RxWireHeader *w)
{
	w->magic = RX_LE32(h->magic);
	w->version = h->version;
	w->type = h->type;
	w->flags = RX_LE16(h->flags);
	w->query_id = RX_LE64(h->query_id);
	w->token = RX_LE64(h->token);
	w->exchange_id = (int32) RX_LE32((uint32) h->exchange_id);
	w->src_member = RX_LE16(h->src_member);
	w->dst_member = RX_LE16(h->dst_member);
	w->seq = RX_LE64(h->seq);
	w->credit = RX_LE64(h->credit);
	w->sack = RX_LE64(h->sack);
	w->payload_len = RX_LE32(h->payload_len);
	w->reserved = 0;
}

static inline void
rx_header_decode(const RxWireHeader *w, RxHeader *h)
{
	/* the encoding is its own inverse */
	rx_header_encode(w, h);
	h->reserved = RX_LE32(w->reserved);
}

#endif							/* RX_PROTOCOL_H */
