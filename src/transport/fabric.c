/*-------------------------------------------------------------------------
 *
 * fabric.c
 *	  Every libfabric call of rdma_exchange: one FI_EP_DGRAM endpoint with
 *	  FI_MSG, a receive CQ that can be waited on, a send CQ, an address
 *	  vector, and, where the provider asks for it (FI_MR_LOCAL, as verbs
 *	  does), one registration of the whole buffer pool.
 *
 * Everything provider specific is in this file and small: which providers
 * offer datagrams (udp here, verbs on InfiniBand/RoCE), the message prefix
 * verbs puts in front of a UD receive (FI_MSG_PREFIX), and whether control
 * messages fit in an inject.  Only the transport worker calls this, after
 * it has forked; the postmaster never opens the fabric.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>
#include <sys/socket.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "utils/memutils.h"

#include "transport/fabric.h"

#define RX_FI_VERSION		FI_VERSION(1, 9)
#define CTRL_SLOTS			256
#define UDP_SOCKET_BUFFER	(8 * 1024 * 1024)
#define CTRL_SLOT_SIZE		128

static struct fi_info *fi = NULL;
static struct fid_fabric *fabric = NULL;
static struct fid_domain *domain = NULL;
static struct fid_ep *ep = NULL;
static struct fid_cq *rxcq = NULL;
static struct fid_cq *txcq = NULL;
static struct fid_av *av = NULL;
static struct fid_mr *pool_mr = NULL;
static struct fid_mr *ctrl_mr = NULL;
static void *pool_desc = NULL;
static void *ctrl_desc = NULL;
static int	wait_fd = -1;

/* one fi_context per operation (FI_CONTEXT mode): buffers, then ctrl slots */
static struct fi_context *contexts = NULL;
static int	ncontexts_buf = 0;

/* control messages that do not fit in an inject go from these slots */
static char *ctrl_raw = NULL;	/* allocation behind ctrl_slots */
static char *ctrl_slots = NULL;
static bool ctrl_busy[CTRL_SLOTS];
static int	ctrl_next = 0;
static Size inject_size = 0;
static Size prefix_size = 0;

static const char *
provider_core_name(int provider)
{
	switch (provider)
	{
		case RX_PROVIDER_VERBS:
			return "verbs";
		case RX_PROVIDER_UDP:
			return "udp";
		case RX_PROVIDER_TCP:
			return "tcp";
		case RX_PROVIDER_SHM:
			return "shm";
	}
	return NULL;
}

const char *
rx_fabric_unsupported(int provider)
{
	if (provider == RX_PROVIDER_TCP || provider == RX_PROVIDER_SHM)
		return "The tcp and shm providers offer only reliable endpoints, which the send/receive over datagrams design cannot use; set rdma_exchange.fabric_provider to udp, verbs or auto.";
	return NULL;
}

bool
rx_fabric_split_address(const char *address, char *host, Size hostlen,
						char *service, Size servicelen)
{
	const char *colon;
	const char *h = address;
	Size		hl;

	if (address == NULL || address[0] == '\0')
		return false;
	if (address[0] == '[')
	{
		const char *close = strchr(address, ']');

		if (close == NULL || close[1] != ':')
			return false;
		h = address + 1;
		hl = close - h;
		colon = close + 1;
	}
	else
	{
		colon = strrchr(address, ':');
		if (colon == NULL)
			return false;
		hl = colon - address;
	}
	if (hl == 0 || hl >= hostlen || strlen(colon + 1) == 0 ||
		strlen(colon + 1) >= servicelen)
		return false;
	memcpy(host, h, hl);
	host[hl] = '\0';
	strcpy(service, colon + 1);
	return true;
}

static struct fi_info *
fabric_hints(const char *prov_name, int recv_depth)
{
	struct fi_info *hints = fi_allocinfo();

	if (hints == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_DGRAM;
	/* we can live with both: every operation has its own fi_context */
	hints->mode = FI_CONTEXT | FI_MSG_PREFIX;
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->rx_attr->size = recv_depth;
	hints->fabric_attr->prov_name = strdup(prov_name);
	return hints;
}

/* fi_getinfo for one provider, bound to host:service; NULL if unavailable */
static struct fi_info *
fabric_getinfo(const char *prov_name, const char *host, const char *service,
			   int recv_depth, int *err)
{
	struct fi_info *hints = fabric_hints(prov_name, recv_depth);
	struct fi_info *info = NULL;

	*err = fi_getinfo(RX_FI_VERSION, host, service, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (*err != 0)
		return NULL;
	return info;
}

/*
 * udp provider: the kernel's default socket receive buffer (about 200 kB)
 * is smaller than a credit window from a few members, so datagrams get
 * dropped before the worker polls.  libfabric does not expose the socket;
 * find it by its bound address and enlarge its buffers (up to
 * net.core.rmem_max / wmem_max).
 */
static void
udp_enlarge_socket_buffers(const void *name, size_t namelen)
{
	for (int fd = 0; fd < 4096; fd++)
	{
		struct sockaddr_storage ss;
		socklen_t	len = sizeof(ss);
		int			type;
		socklen_t	tlen = sizeof(type);
		int			size = UDP_SOCKET_BUFFER;

		if (getsockname(fd, (struct sockaddr *) &ss, &len) != 0 ||
			len != namelen || memcmp(&ss, name, namelen) != 0 ||
			getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 ||
			type != SOCK_DGRAM)
			continue;
		(void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
		(void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
		return;
	}
}

#define FI_CHECK(call, what) \
	do { \
		int			ret_ = (call); \
		if (ret_ != 0) \
			ereport(ERROR, \
					(errcode(ERRCODE_CONNECTION_FAILURE), \
					 errmsg("could not %s for the data plane at \"%s\": %s", \
							(what), address, fi_strerror(-ret_)))); \
	} while (0)

void
rx_fabric_open(int provider, const char *address, char *region,
			   Size region_len, int nbuffers, int recv_depth,
			   RxFabricInfo *out)
{
	char		host[RX_FABRIC_ADDR_LEN];
	char		service[RX_FABRIC_ADDR_LEN];
	int			err = 0;
	struct fi_cq_attr cq_attr;
	struct fi_av_attr av_attr;
	enum fi_wait_obj rx_wait;
	char		name[128];
	size_t		namelen = sizeof(name);
	size_t		addrlen;

	if (!rx_fabric_split_address(address, host, sizeof(host),
								 service, sizeof(service)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid rdma_exchange.fabric_address \"%s\"", address),
				 errhint("Use host:port, for example 127.0.0.1:7400.")));

	if (provider == RX_PROVIDER_AUTO)
	{
		/* verbs when an RDMA device offers datagrams, otherwise udp */
		fi = fabric_getinfo("verbs", host, service, recv_depth, &err);
		if (fi == NULL)
			fi = fabric_getinfo("udp", host, service, recv_depth, &err);
	}
	else
		fi = fabric_getinfo(provider_core_name(provider), host, service,
							recv_depth, &err);
	if (fi == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("no libfabric provider offers datagram endpoints at \"%s\"",
						address),
				 errdetail("fi_getinfo for provider \"%s\" with FI_EP_DGRAM and FI_MSG failed: %s.",
						   provider == RX_PROVIDER_AUTO ? "verbs, then udp" :
						   provider_core_name(provider), fi_strerror(-err))));

	FI_CHECK(fi_fabric(fi->fabric_attr, &fabric, NULL), "open the fabric");
	FI_CHECK(fi_domain(fabric, fi, &domain, NULL), "open the domain");

	memset(&cq_attr, 0, sizeof(cq_attr));
	cq_attr.format = FI_CQ_FORMAT_MSG;
	cq_attr.size = Max(recv_depth * 2, 256);
	cq_attr.wait_obj = FI_WAIT_FD;
	if (fi_cq_open(domain, &cq_attr, &rxcq, NULL) != 0)
	{
		/* no waitable CQ: the worker polls with a short timeout instead */
		cq_attr.wait_obj = FI_WAIT_NONE;
		FI_CHECK(fi_cq_open(domain, &cq_attr, &rxcq, NULL),
				 "open the receive completion queue");
	}
	rx_wait = cq_attr.wait_obj;
	cq_attr.wait_obj = FI_WAIT_NONE;
	cq_attr.size = Max(fi->tx_attr->size * 2, 256);
	FI_CHECK(fi_cq_open(domain, &cq_attr, &txcq, NULL),
			 "open the send completion queue");

	memset(&av_attr, 0, sizeof(av_attr));
	av_attr.type = FI_AV_UNSPEC;
	FI_CHECK(fi_av_open(domain, &av_attr, &av, NULL), "open the address vector");

	FI_CHECK(fi_endpoint(domain, fi, &ep, NULL), "open the endpoint");
	FI_CHECK(fi_ep_bind(ep, &av->fid, 0), "bind the address vector");
	FI_CHECK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT), "bind the send queue");
	FI_CHECK(fi_ep_bind(ep, &rxcq->fid, FI_RECV), "bind the receive queue");
	FI_CHECK(fi_enable(ep), "enable the endpoint");

	wait_fd = -1;
	if (rx_wait == FI_WAIT_FD)
	{
		int			fd;

		if (fi_control(&rxcq->fid, FI_GETWAIT, &fd) == 0)
			wait_fd = fd;
	}

	prefix_size = (fi->mode & FI_MSG_PREFIX) ? fi->ep_attr->msg_prefix_size : 0;
	inject_size = fi->tx_attr->inject_size;

	/* one registration of the whole pool, only where the provider needs it */
	if (fi->domain_attr->mr_mode & FI_MR_LOCAL)
	{
		FI_CHECK(fi_mr_reg(domain, region, region_len, FI_SEND | FI_RECV,
						   0, 0, 0, &pool_mr, NULL),
				 "register the buffer pool");
		pool_desc = fi_mr_desc(pool_mr);
	}

	ncontexts_buf = nbuffers;
	contexts = MemoryContextAllocZero(TopMemoryContext,
									  sizeof(struct fi_context) * (nbuffers + CTRL_SLOTS));
	if (inject_size < CTRL_SLOT_SIZE)
	{
		ctrl_raw = MemoryContextAlloc(TopMemoryContext,
									  (Size) CTRL_SLOTS * (CTRL_SLOT_SIZE + prefix_size) + 4096);
		ctrl_slots = (char *) TYPEALIGN(4096, ctrl_raw);
		if (pool_mr != NULL)
		{
			FI_CHECK(fi_mr_reg(domain, ctrl_slots,
							   (Size) CTRL_SLOTS * (CTRL_SLOT_SIZE + prefix_size),
							   FI_SEND, 0, 1, 0, &ctrl_mr, NULL),
					 "register the control buffers");
			ctrl_desc = fi_mr_desc(ctrl_mr);
		}
		memset(ctrl_busy, 0, sizeof(ctrl_busy));
	}

	memset(out, 0, sizeof(*out));
	strlcpy(out->provider, fi->fabric_attr->prov_name, sizeof(out->provider));
	if (fi_getname(&ep->fid, name, &namelen) == 0)
	{
		addrlen = sizeof(out->address);
		fi_av_straddr(av, name, out->address, &addrlen);
		if (strcmp(fi->fabric_attr->prov_name, "udp") == 0)
			udp_enlarge_socket_buffers(name, namelen);
	}
	else
		strlcpy(out->address, address, sizeof(out->address));
	out->max_msg_size = fi->ep_attr->max_msg_size;
	out->prefix_size = prefix_size;
	out->recv_depth = Min((int) fi->rx_attr->size, recv_depth);
	out->has_wait_fd = (wait_fd >= 0);
	out->registered = (pool_mr != NULL);
}

void
rx_fabric_close(void)
{
	if (ep)
		fi_close(&ep->fid);
	if (pool_mr)
		fi_close(&pool_mr->fid);
	if (ctrl_mr)
		fi_close(&ctrl_mr->fid);
	if (av)
		fi_close(&av->fid);
	if (txcq)
		fi_close(&txcq->fid);
	if (rxcq)
		fi_close(&rxcq->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	if (fi)
		fi_freeinfo(fi);
	if (contexts)
		pfree(contexts);
	if (ctrl_raw)
		pfree(ctrl_raw);
	contexts = NULL;
	ctrl_raw = ctrl_slots = NULL;
	ep = NULL;
	pool_mr = ctrl_mr = NULL;
	av = NULL;
	txcq = rxcq = NULL;
	domain = NULL;
	fabric = NULL;
	fi = NULL;
	wait_fd = -1;
}

bool
rx_fabric_resolve(const char *address, RxFabricAddr *addr, const char **reason)
{
	static char why[256];
	char		host[RX_FABRIC_ADDR_LEN];
	char		service[RX_FABRIC_ADDR_LEN];
	fi_addr_t	fa = FI_ADDR_NOTAVAIL;
	int			ret;

	if (!rx_fabric_split_address(address, host, sizeof(host),
								 service, sizeof(service)))
	{
		*reason = "The address is not of the form host:port.";
		return false;
	}
	ret = fi_av_insertsvc(av, host, service, &fa, 0, NULL);
	if (ret == 1 && fa != FI_ADDR_NOTAVAIL)
	{
		*addr = (RxFabricAddr) fa;
		return true;
	}

	/* say why in words: the name lookup is the usual culprit */
	{
		struct addrinfo hints;
		struct addrinfo *res = NULL;
		int			gai;

		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_DGRAM;
		gai = getaddrinfo(host, service, &hints, &res);
		if (gai != 0)
			snprintf(why, sizeof(why), "Host \"%s\" could not be resolved: %s.",
					 host, gai_strerror(gai));
		else
			snprintf(why, sizeof(why), "The address vector of provider \"%s\" refused it: %s.",
					 fi->fabric_attr->prov_name,
					 ret < 0 ? fi_strerror(-ret) : "no address inserted");
		if (res)
			freeaddrinfo(res);
	}
	*reason = why;
	return false;
}

int
rx_fabric_post_recv(int bufid, char *buf, Size len)
{
	return (int) fi_recv(ep, buf, len + prefix_size, pool_desc,
						 FI_ADDR_UNSPEC, &contexts[bufid]);
}

int
rx_fabric_send(int bufid, char *buf, Size len, RxFabricAddr dest)
{
	return (int) fi_send(ep, buf, len + prefix_size, pool_desc,
						 (fi_addr_t) dest, &contexts[bufid]);
}

int
rx_fabric_send_small(const void *msg, Size len, RxFabricAddr dest)
{
	int			slot;
	char	   *p;
	int			ret;

	if (len <= inject_size && prefix_size == 0)
		return (int) fi_inject(ep, msg, len, (fi_addr_t) dest);

	Assert(len <= CTRL_SLOT_SIZE);
	slot = ctrl_next;
	if (ctrl_busy[slot])
		return -FI_EAGAIN;
	p = ctrl_slots + (Size) slot * (CTRL_SLOT_SIZE + prefix_size);
	memcpy(p + prefix_size, msg, len);
	ret = (int) fi_send(ep, p, len + prefix_size, ctrl_desc, (fi_addr_t) dest,
						&contexts[ncontexts_buf + slot]);
	if (ret == 0)
	{
		ctrl_busy[slot] = true;
		ctrl_next = (slot + 1) % CTRL_SLOTS;
	}
	return ret;
}

/*
 * Read completions.  Control slots are recycled here and never reported;
 * returns the number of buffer completions stored in out.
 */
static int
fabric_poll(struct fid_cq *cq, RxCompletion *out, int max, bool recv)
{
	struct fi_cq_msg_entry entries[16];
	int			n = 0;

	while (n < max)
	{
		ssize_t		got = fi_cq_read(cq, entries, Min(max - n, 16));

		if (got == -FI_EAGAIN)
			break;
		if (got == -FI_EAVAIL)
		{
			struct fi_cq_err_entry e;

			memset(&e, 0, sizeof(e));
			if (fi_cq_readerr(cq, &e, 0) != 1)
				break;
			got = 0;
			if (e.op_context != NULL)
			{
				int			id = (struct fi_context *) e.op_context - contexts;

				if (id >= ncontexts_buf)
					ctrl_busy[id - ncontexts_buf] = false;
				else
				{
					out[n].bufid = id;
					out[n].len = 0;
					out[n].err = e.err ? e.err : FI_EOTHER;
					n++;
				}
			}
			continue;
		}
		if (got < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not read the completion queue of the data plane: %s",
							fi_strerror((int) -got))));
		for (int i = 0; i < got; i++)
		{
			int			id = (struct fi_context *) entries[i].op_context - contexts;

			if (id >= ncontexts_buf)
			{
				ctrl_busy[id - ncontexts_buf] = false;
				continue;
			}
			out[n].bufid = id;
			out[n].len = recv && entries[i].len >= prefix_size ?
				entries[i].len - prefix_size : entries[i].len;
			out[n].err = 0;
			n++;
		}
		/* the udp provider reads one datagram per call: keep calling */
		if (got == 0)
			break;
	}
	return n;
}

int
rx_fabric_poll_recv(RxCompletion *out, int max)
{
	return fabric_poll(rxcq, out, max, true);
}

int
rx_fabric_poll_send(RxCompletion *out, int max)
{
	return fabric_poll(txcq, out, max, false);
}

int
rx_fabric_wait_fd(void)
{
	return wait_fd;
}

bool
rx_fabric_trywait(void)
{
	struct fid *fids[1];

	if (wait_fd < 0)
		return false;
	fids[0] = &rxcq->fid;
	return fi_trywait(fabric, fids, 1) == 0;
}
