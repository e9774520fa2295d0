/*
 * fi_sendloop: raw all-to-all message bandwidth of one libfabric provider
 * (udp datagrams, tcp;ofi_rxm or shm reliable endpoints), the baseline
 * for the transport benchmark.  Each of N ranks (one process each) binds
 * 127.0.0.1:BASE+rank, shakes hands with every peer, then sends M messages
 * of S bytes to every other rank while receiving (N-1)*M; the clock runs
 * from the handshake to the moment all sends completed and all data came.
 *   for r in 0 1 2; do ./fi_sendloop -p tcp -r $r -n 3 -b 56200 \
 *       -s 65536 -m 20000 & done; wait
 * -w WINDOW: messages in flight per peer (default 64).  Prints one JSON line
 * per rank; exits non-zero on any error or after 60 s.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define MAX_RANKS 3
#define GLOBAL_TIMEOUT 60		/* seconds: no run may hang */
#define RESEND_INTERVAL 0.01	/* hello/bye again: lost, or peer not up yet */
#define QUIET_TIMEOUT 1.0		/* udp: data lost for good after this silence */
#define STALL_TIMEOUT 0.05		/* udp: credit or window tail lost */
#define LINGER_TIMEOUT 1.0		/* goodbye: wait this long for the last acks */
#define CTRL_SLOTS 64

/*
 * Every message starts with this; control messages are just the header.
 * Hello and bye are announcements, repeated until the peer acks them.
 */
enum msg_type { T_DATA = 1, T_HELLO, T_BYE, T_ACK, T_CREDIT };
#define ANN(type) ((type) - T_HELLO)	/* announcement index: 0 hello, 1 bye */
struct hdr
{
	uint16_t	rank;			/* sender */
	uint16_t	type;
	uint32_t	seq;			/* data: index; credit: highest index + 1
								 * seen; ack: the type acknowledged */
};

/*
 * One posted operation.  The context comes first so the CQ's op_context is
 * the op itself; providers that want FI_CONTEXT get their own per-op space.
 */
enum op_kind { OP_RECV, OP_DATA, OP_CTRL };
struct op
{
	struct fi_context ctx;
	enum op_kind kind;
	int			peer;
	char	   *buf;
};

struct peer
{
	fi_addr_t	addr;
	/* sending to it */
	uint32_t	sent;			/* data messages posted */
	uint32_t	completed;		/* their send completions */
	uint32_t	credited;		/* udp: its cumulative credit */
	double		stall_since;	/* udp: window full since, 0 when not */
	struct op **free_data;		/* idle data send slots, a stack */
	int			nfree_data;
	/* receiving from it */
	uint32_t	received;
	uint32_t	seen;			/* highest data index + 1 */
	uint32_t	credit_sent;
	/* handshake and goodbye */
	bool		acked[2];		/* it acked our hello / bye */
	bool		ack_due[2];		/* we owe it an ack of its hello / bye */
	bool		bye_got;		/* it is done */
	bool		announce_busy;	/* one announcement in flight at most */
	double		announce_at;
};

static const char *prov = "tcp";
static int	rank = -1, nranks = 0, baseport = 0, window = 64;
static size_t msg_size = 65536;
static uint32_t msgs = 0;
static bool dgram;
static bool leaving;			/* measured: saying goodbye */
static char shm_name[64];		/* shm: our region's name, removed on abort */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_mr *mr;
static void *desc;

static struct peer peers[MAX_RANKS];
static struct op *ctrl_free[CTRL_SLOTS];
static int	nctrl_free;
static struct op **recv_idle;	/* receive slots waiting to be (re)posted */
static int	nrecv_idle;

static double t_start, t_last_data, t_last_send;
static uint64_t bytes_received, data_received;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* a killed shm rank would leave its region behind for the next run */
static void
remove_shm_region(void)
{
	if (shm_name[0] != '\0')
		shm_unlink(shm_name);
}

static void
on_signal(int sig)
{
	const char *msg = sig == SIGALRM ?
		"fi_sendloop: global timeout, giving up\n" :
		"fi_sendloop: terminated by a signal\n";
	ssize_t		ignored = write(STDERR_FILENO, msg, strlen(msg));

	(void) ignored;
	remove_shm_region();
	_exit(3);
}

static void
die(const char *what, int ret)
{
	fprintf(stderr, "fi_sendloop rank %d: %s: %s\n", rank, what,
			ret ? fi_strerror(ret < 0 ? -ret : ret) : "failed");
	remove_shm_region();
	exit(2);
}

static void
usage(void)
{
	fprintf(stderr, "usage: fi_sendloop -p udp|tcp|shm -r RANK -n NRANKS "
			"-b BASEPORT -s MSGSIZE -m MSGS [-w WINDOW]\n");
	exit(1);
}

static void
parse_args(int argc, char **argv)
{
	int			c;

	while ((c = getopt(argc, argv, "p:r:n:b:s:m:w:")) != -1)
	{
		switch (c)
		{
			case 'p':
				prov = optarg;
				break;
			case 'r':
				rank = atoi(optarg);
				break;
			case 'n':
				nranks = atoi(optarg);
				break;
			case 'b':
				baseport = atoi(optarg);
				break;
			case 's':
				msg_size = strtoul(optarg, NULL, 10);
				break;
			case 'm':
				msgs = strtoul(optarg, NULL, 10);
				break;
			case 'w':
				window = atoi(optarg);
				break;
			default:
				usage();
		}
	}
	if (strcmp(prov, "udp") != 0 && strcmp(prov, "tcp") != 0 &&
		strcmp(prov, "shm") != 0)
		usage();
	/* 2 <= window: the udp receiver credits every window/2 messages */
	if (nranks < 2 || nranks > MAX_RANKS || rank < 0 || rank >= nranks ||
		baseport <= 0 || baseport + nranks > 65536 ||
		msg_size < sizeof(struct hdr) || msgs == 0 || window < 2)
		usage();
	dgram = strcmp(prov, "udp") == 0;
}

static void
shm_rank_name(int r, char *buf, size_t len)
{
	snprintf(buf, len, "fisl_%d", baseport + r);
}

/*
 * udp and tcp bind 127.0.0.1:port through fi_getinfo's node, service and
 * FI_SOURCE.  shm addresses are FI_ADDR_STR names: fi_getinfo(node) would
 * give "fi_shm://node", which the endpoint then extends with the uid and
 * an endpoint index, a name the peers cannot guess.  A src_addr without
 * the "fi_shm://" prefix is taken as the region's name verbatim.
 */
static void
open_fabric(void)
{
	struct fi_info *hints = fi_allocinfo();
	char		service[16];
	int			ret;

	if (hints == NULL)
		die("fi_allocinfo", -FI_ENOMEM);
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;	/* we pass a struct fi_context anyway */
	hints->domain_attr->mr_mode = FI_MR_LOCAL;	/* we can register */
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->ep_attr->type = dgram ? FI_EP_DGRAM : FI_EP_RDM;
	hints->fabric_attr->prov_name =
		strdup(strcmp(prov, "tcp") == 0 ? "tcp;ofi_rxm" : prov);
	snprintf(service, sizeof(service), "%d", baseport + rank);
	if (strcmp(prov, "shm") == 0)
	{
		shm_rank_name(rank, shm_name, sizeof(shm_name));
		hints->addr_format = FI_ADDR_STR;
		hints->src_addr = strdup(shm_name);
		hints->src_addrlen = strlen(shm_name) + 1;
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	}
	else
	{
		hints->addr_format = FI_SOCKADDR_IN;
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", service, FI_SOURCE,
						 hints, &info);
	}
	if (ret != 0)
		die("fi_getinfo", ret);
	fi_freeinfo(hints);

	if (dgram && msg_size > info->ep_attr->max_msg_size)
		msg_size = info->ep_attr->max_msg_size;
	/* control messages go out from small buffers of their own */
	if (info->ep_attr->max_msg_size < sizeof(struct hdr))
		die("provider's max_msg_size below the 8-byte header", 0);

	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) != 0)
		die("fi_fabric", ret);
	if ((ret = fi_domain(fabric, info, &domain, NULL)) != 0)
		die("fi_domain", ret);
}

/*
 * shm 1.17 (smr_map_add) reserves a peer slot only when the peer's region
 * already exists: inserting two absent peers gives both the same slot
 * ("addr already in AV"), and messages for one go to the other.  So, like
 * MPI with its out-of-band barrier, insert peers only once all regions are
 * up: the file exists and carries a live owner's pid.  libfabric writes
 * the pid last, at offset 4 of the header (struct smr_region in
 * ofi_shm.h: version, resv, flags, pid); a dead owner means a stale file
 * that the peer is about to take over.
 */
static bool
shm_region_ready(const char *name)
{
	int			fd = shm_open(name, O_RDONLY, 0);
	int32_t		pid = 0;
	bool		ready;

	if (fd < 0)
		return false;
	ready = pread(fd, &pid, sizeof(pid), 4) == sizeof(pid) && pid > 0 &&
		(kill(pid, 0) == 0 || errno == EPERM);
	close(fd);
	return ready;
}

static void
wait_for_shm_peers(void)
{
	const struct timespec ms = {0, 1000000};

	for (int p = 0; p < nranks; p++)
	{
		char		name[64];

		if (p == rank)
			continue;
		shm_rank_name(p, name, sizeof(name));
		while (!shm_region_ready(name))
			nanosleep(&ms, NULL);
	}
}

static void
open_endpoint(int nrecv)
{
	struct fi_cq_attr cq_attr = {0};
	struct fi_av_attr av_attr = {0};
	int			ret;

	/* room for every completion that can be outstanding at once */
	cq_attr.format = FI_CQ_FORMAT_MSG;
	cq_attr.wait_obj = FI_WAIT_NONE;
	cq_attr.size = nrecv + (nranks - 1) * window + CTRL_SLOTS;
	if ((ret = fi_cq_open(domain, &cq_attr, &cq, NULL)) != 0)
		die("fi_cq_open", ret);
	av_attr.type = FI_AV_TABLE;
	if ((ret = fi_av_open(domain, &av_attr, &av, NULL)) != 0)
		die("fi_av_open", ret);
	if ((ret = fi_endpoint(domain, info, &ep, NULL)) != 0)
		die("fi_endpoint", ret);
	if ((ret = fi_ep_bind(ep, &av->fid, 0)) != 0)
		die("fi_ep_bind av", ret);
	if ((ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) != 0)
		die("fi_ep_bind cq", ret);
	if ((ret = fi_enable(ep)) != 0)
		die("fi_enable", ret);

	if (strcmp(prov, "shm") == 0)
		wait_for_shm_peers();
	for (int p = 0; p < nranks; p++)
	{
		char		service[16];
		char		name[64];

		if (p == rank)
			continue;
		snprintf(service, sizeof(service), "%d", baseport + p);
		if (strcmp(prov, "shm") == 0)
		{
			shm_rank_name(p, name, sizeof(name));
			ret = fi_av_insert(av, name, 1, &peers[p].addr, 0, NULL);
		}
		else
			ret = fi_av_insertsvc(av, "127.0.0.1", service, &peers[p].addr,
								  0, NULL);
		if (ret != 1)
			die("fi_av_insert of a peer", ret);
	}
}

/*
 * One buffer per operation that can be in flight: a data slot per window
 * entry and peer, 2 * window receives per peer (capped by the provider's
 * queue), CTRL_SLOTS small ones.  Separate buffers, as a real sender has
 * distinct data in each message.
 */
static int
setup_buffers(void)
{
	int			npeers = nranks - 1;
	int			ndata = npeers * window;
	int			nrecv = 2 * window * npeers;
	size_t		len;
	char	   *region;
	char	   *pos;
	struct op  *ops;
	int			ret;

	if ((size_t) nrecv > info->rx_attr->size)
		nrecv = info->rx_attr->size;
	len = (size_t) (ndata + nrecv) * msg_size + CTRL_SLOTS * sizeof(struct hdr);
	if (posix_memalign((void **) &region, 4096, len) != 0)
		die("posix_memalign", -FI_ENOMEM);
	/* touch every page now, not in the timed loop; a recognisable pattern */
	for (size_t i = 0; i < len; i++)
		region[i] = (char) (i * 131 + rank);

	/* only where the provider needs it: one registration for everything */
	if (info->domain_attr->mr_mode & FI_MR_LOCAL)
	{
		ret = fi_mr_reg(domain, region, len, FI_SEND | FI_RECV, 0, 0, 0,
						&mr, NULL);
		if (ret != 0)
			die("fi_mr_reg", ret);
		desc = fi_mr_desc(mr);
	}

	ops = calloc(ndata + nrecv + CTRL_SLOTS, sizeof(*ops));
	recv_idle = calloc(nrecv, sizeof(*recv_idle));
	if (ops == NULL || recv_idle == NULL)
		die("calloc", -FI_ENOMEM);
	pos = region;
	for (int p = 0; p < nranks; p++)
	{
		if (p == rank)
			continue;
		peers[p].free_data = calloc(window, sizeof(struct op *));
		if (peers[p].free_data == NULL)
			die("calloc", -FI_ENOMEM);
		for (int i = 0; i < window; i++, ops++, pos += msg_size)
		{
			*ops = (struct op) {.kind = OP_DATA, .peer = p, .buf = pos};
			peers[p].free_data[peers[p].nfree_data++] = ops;
		}
	}
	for (int i = 0; i < nrecv; i++, ops++, pos += msg_size)
	{
		*ops = (struct op) {.kind = OP_RECV, .peer = -1, .buf = pos};
		recv_idle[nrecv_idle++] = ops;
	}
	for (int i = 0; i < CTRL_SLOTS; i++, ops++, pos += sizeof(struct hdr))
	{
		*ops = (struct op) {.kind = OP_CTRL, .peer = -1, .buf = pos};
		ctrl_free[nctrl_free++] = ops;
	}
	return nrecv;
}

static void
post_receives(void)
{
	while (nrecv_idle > 0)
	{
		struct op  *op = recv_idle[nrecv_idle - 1];
		ssize_t		ret = fi_recv(ep, op->buf, msg_size, desc, FI_ADDR_UNSPEC,
								  &op->ctx);

		if (ret == -FI_EAGAIN)
			return;				/* the main loop progresses and comes back */
		if (ret != 0)
			die("fi_recv", (int) ret);
		nrecv_idle--;
	}
}

/* false when it has to wait: no control slot or -FI_EAGAIN */
static bool
send_ctrl(int p, enum msg_type type, uint32_t seq)
{
	struct op  *op;
	struct hdr *h;
	ssize_t		ret;

	if (nctrl_free == 0)
		return false;
	op = ctrl_free[--nctrl_free];
	op->peer = p;
	h = (struct hdr *) op->buf;
	*h = (struct hdr) {.rank = rank, .type = type, .seq = seq};
	ret = fi_send(ep, op->buf, sizeof(*h), desc, peers[p].addr, &op->ctx);
	if (ret == -FI_EAGAIN)
	{
		ctrl_free[nctrl_free++] = op;
		return false;
	}
	if (ret != 0)
		die("fi_send control", (int) ret);
	if (type == T_HELLO || type == T_BYE)
		peers[p].announce_busy = true;
	return true;
}

/* what the protocol owes each peer: hello or bye, acks, credit */
static void
send_control(void)
{
	double		t = now();
	enum msg_type announce = leaving ? T_BYE : T_HELLO;

	for (int p = 0; p < nranks; p++)
	{
		struct peer *pe = &peers[p];

		if (p == rank)
			continue;
		if (!pe->acked[ANN(announce)] && !pe->announce_busy &&
			t - pe->announce_at >= RESEND_INTERVAL)
		{
			if (!send_ctrl(p, announce, 0))
				return;
			pe->announce_at = t;
		}
		for (enum msg_type a = T_HELLO; a <= T_BYE; a++)
		{
			if (!pe->ack_due[ANN(a)])
				continue;
			if (!send_ctrl(p, T_ACK, a))
				return;
			pe->ack_due[ANN(a)] = false;
		}
		/* cumulative, so a lost credit is made good by the next one */
		if (dgram && pe->seen - pe->credit_sent >= (uint32_t) window / 2)
		{
			if (!send_ctrl(p, T_CREDIT, pe->seen))
				return;
			pe->credit_sent = pe->seen;
		}
	}
}

/* the last payload byte says which message it is: a cheap integrity check */
static char
payload_mark(int from, uint32_t seq)
{
	return (char) (seq * 7 + from);
}

static void
send_data(void)
{
	double		t = now();

	for (int p = 0; p < nranks; p++)
	{
		struct peer *pe = &peers[p];

		if (p == rank)
			continue;
		while (pe->sent < msgs && pe->nfree_data > 0)
		{
			struct op  *op;
			ssize_t		ret;

			if (dgram && pe->sent - pe->credited >= (uint32_t) window)
			{
				/*
				 * Window full.  A lost credit or a lost window tail would
				 * stall it for good: after a while take it as lost (the
				 * receiver counts it) and go on.
				 */
				if (pe->stall_since == 0)
					pe->stall_since = t;
				else if (t - pe->stall_since > STALL_TIMEOUT)
				{
					pe->credited = pe->sent;
					pe->stall_since = 0;
					continue;
				}
				break;
			}
			op = pe->free_data[pe->nfree_data - 1];
			*(struct hdr *) op->buf = (struct hdr) {
				.rank = rank, .type = T_DATA, .seq = pe->sent};
			op->buf[msg_size - 1] = payload_mark(rank, pe->sent);
			ret = fi_send(ep, op->buf, msg_size, desc, pe->addr, &op->ctx);
			if (ret == -FI_EAGAIN)
				break;
			if (ret != 0)
				die("fi_send data", (int) ret);
			pe->nfree_data--;
			pe->sent++;
		}
	}
}

static void
on_receive(struct op *op, size_t len)
{
	struct hdr	h;
	struct peer *pe;

	memcpy(&h, op->buf, sizeof(h));
	if (len < sizeof(h) || h.rank >= nranks || h.rank == rank)
		die("malformed message", 0);
	pe = &peers[h.rank];
	switch (h.type)
	{
		case T_DATA:
			if (len != msg_size ||
				op->buf[msg_size - 1] != payload_mark(h.rank, h.seq))
				die("corrupt data message", 0);
			t_last_data = now();
			/* a peer may start before our handshake ends: so do we then */
			if (t_start == 0)
				t_start = t_last_data;
			pe->received++;
			if (h.seq + 1 > pe->seen)
				pe->seen = h.seq + 1;
			data_received++;
			bytes_received += len;
			break;
		case T_BYE:
			pe->bye_got = true;
			/* fall through */
		case T_HELLO:
			pe->ack_due[ANN(h.type)] = true;
			break;
		case T_ACK:
			if (h.seq != T_HELLO && h.seq != T_BYE)
				die("malformed ack", 0);
			pe->acked[ANN(h.seq)] = true;
			break;
		case T_CREDIT:
			if (h.seq > pe->credited)
				pe->credited = h.seq;
			pe->stall_since = 0;
			break;
		default:
			die("unknown message type", 0);
	}
	recv_idle[nrecv_idle++] = op;
}

static void
on_complete(struct op *op, size_t len)
{
	switch (op->kind)
	{
		case OP_RECV:
			on_receive(op, len);
			break;
		case OP_DATA:
			peers[op->peer].completed++;
			peers[op->peer].free_data[peers[op->peer].nfree_data++] = op;
			t_last_send = now();
			break;
		case OP_CTRL:
			if (((struct hdr *) op->buf)->type == T_HELLO ||
				((struct hdr *) op->buf)->type == T_BYE)
				peers[op->peer].announce_busy = false;
			ctrl_free[nctrl_free++] = op;
			break;
	}
}

/*
 * Control messages may fail while a peer is not up yet or already gone
 * (tcp: connection refused): announcements are repeated, credits
 * superseded, acks answer repeated announcements, so only data errors
 * count.
 */
static void
on_error(void)
{
	struct fi_cq_err_entry err = {0};
	ssize_t		ret = fi_cq_readerr(cq, &err, 0);
	struct op  *op;

	if (ret < 0)
		die("fi_cq_readerr", (int) ret);
	op = err.op_context;
	if (op == NULL || op->kind != OP_CTRL)
	{
		fprintf(stderr, "fi_sendloop rank %d: %s\n", rank,
				fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		die("completion error", err.err);
	}
	on_complete(op, 0);
}

/* reap completions; returns how many */
static int
progress(void)
{
	struct fi_cq_msg_entry ent[64];
	ssize_t		n = fi_cq_read(cq, ent, 64);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
	{
		on_error();
		return 1;
	}
	if (n < 0)
		die("fi_cq_read", (int) n);
	for (ssize_t i = 0; i < n; i++)
		on_complete(ent[i].op_context, ent[i].len);
	return (int) n;
}

static void
step(void)
{
	/*
	 * Busy polling, but three busy ranks share two cores here: hand the
	 * core over when there was nothing to do, so the peers can make the
	 * progress we are waiting for.
	 */
	if (progress() == 0)
		sched_yield();
	post_receives();
	send_control();
}

static bool
all_peers(bool (*pred)(const struct peer *))
{
	for (int p = 0; p < nranks; p++)
		if (p != rank && !pred(&peers[p]))
			return false;
	return true;
}

static bool
is_hello_acked(const struct peer *pe)
{
	return pe->acked[ANN(T_HELLO)];
}

static bool
is_bye_acked(const struct peer *pe)
{
	return pe->acked[ANN(T_BYE)];
}

static bool
is_bye_got(const struct peer *pe)
{
	return pe->bye_got;
}

static bool
is_sent(const struct peer *pe)
{
	return pe->completed == msgs;
}

static void
measure(void)
{
	uint64_t	expected = (uint64_t) (nranks - 1) * msgs;

	/* barrier-like start: every peer has acked our hello */
	while (!all_peers(is_hello_acked))
		step();
	if (t_start == 0)
		t_start = now();

	for (;;)
	{
		step();
		send_data();
		if (!all_peers(is_sent))
			continue;
		if (data_received == expected)
			break;
		/* udp: what has not come after a second of silence is lost */
		if (dgram && now() - (t_last_data > t_start ? t_last_data : t_start)
			> QUIET_TIMEOUT)
			break;
	}
}

/*
 * Leave only when every peer is done (its bye came), so that we do not
 * close a connection or region a peer still reads from, and has acked our
 * bye, so that it need not wait for us.  Closing right after a send can
 * lose it (seen with tcp;ofi_rxm: a bye completed, then the endpoint was
 * closed, and the peer never got it), so our last acks may get lost: with
 * all byes in, everybody is done, so stop waiting for acks after a while.
 */
static void
say_goodbye(void)
{
	double		t_all_byes = 0;

	leaving = true;
	for (;;)
	{
		step();
		if (!all_peers(is_bye_got))
			continue;
		if (t_all_byes == 0)
			t_all_byes = now();
		if ((all_peers(is_bye_acked) && nctrl_free == CTRL_SLOTS) ||
			now() - t_all_byes > LINGER_TIMEOUT)
			break;
	}
}

static void
report(void)
{
	double		t_end = t_last_data > t_last_send ? t_last_data : t_last_send;
	double		secs = t_end - t_start;
	uint64_t	sent = 0;

	for (int p = 0; p < nranks; p++)
		if (p != rank)
			sent += peers[p].completed;
	printf("{\"provider\": \"%s\", \"ep_type\": \"%s\", \"rank\": %d, "
		   "\"nranks\": %d, \"msg_size\": %zu, \"msgs_per_peer\": %" PRIu32 ", "
		   "\"seconds\": %.6f, \"bytes_received\": %" PRIu64 ", "
		   "\"mb_per_s_received\": %.1f, \"mb_per_s_sent\": %.1f, "
		   "\"lost\": %" PRIu64 "}\n",
		   info->fabric_attr->prov_name, dgram ? "dgram" : "rdm", rank,
		   nranks, msg_size, msgs, secs, bytes_received,
		   bytes_received / secs / 1e6, sent * msg_size / secs / 1e6,
		   (uint64_t) (nranks - 1) * msgs - data_received);
	fflush(stdout);
}

static void
close_all(void)
{
	fi_close(&ep->fid);
	if (mr != NULL)
		fi_close(&mr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

int
main(int argc, char **argv)
{
	int			nrecv;

	parse_args(argc, argv);
	signal(SIGALRM, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	alarm(GLOBAL_TIMEOUT);

	open_fabric();
	nrecv = setup_buffers();
	open_endpoint(nrecv);
	post_receives();
	measure();
	report();
	say_goodbye();
	close_all();
	return 0;
}
