/*-------------------------------------------------------------------------
 *
 * fabric.c
 *	  Every libfabric call of rdma_exchange.  The transport worker opens two
 *	  kinds of endpoint, each with its own fabric, domain, address vector, a
 *	  receive CQ that can be waited on and a send CQ:
 *
 *	  RX_EP_DGRAM     FI_EP_DGRAM with FI_MSG (udp here, a UD QP on verbs):
 *	                  the send/receive over datagrams designs;
 *	  RX_EP_RELIABLE  FI_EP_RDM with FI_MSG and FI_RMA (tcp;ofi_rxm or shm
 *	                  here, RC QPs through verbs;ofi_rxm on InfiniBand/RoCE):
 *	                  send/receive, RDMA Read and RDMA Write with immediate
 *	                  data over reliable connections.
 *
 * Each kind may have more endpoint sets (fabric.h); they live in set 0's
 * domain.  The buffer pool is registered once per kind: where the provider
 * asks for it (FI_MR_LOCAL) on the datagram endpoint, always on the
 * reliable one, whose peers read and write it remotely.  Remote addresses
 * are virtual addresses or offsets into the pool, as the provider's mr_mode
 * says.
 *
 * Everything provider specific is in this file and small: which providers
 * offer what, the message prefix verbs puts in front of a UD receive
 * (FI_MSG_PREFIX), how shm names its endpoints, and whether control
 * messages fit in an inject.  Only the transport worker calls this, after
 * it has forked; the postmaster never opens the fabric.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>

#include <netdb.h>
#include <sys/socket.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "transport/fabric.h"

#define RX_FI_VERSION		FI_VERSION(1, 9)
#define CTRL_SLOTS			256
#define UDP_SOCKET_BUFFER	(8 * 1024 * 1024)
#define CTRL_SLOT_SIZE		128

/* everything one endpoint owns */
typedef struct FabricEp
{
	struct fi_info *fi;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *rxcq;
	struct fid_cq *txcq;
	struct fid_av *av;
	struct fid_mr *pool_mr;
	struct fid_mr *ctrl_mr;
	void	   *pool_desc;
	void	   *ctrl_desc;
	char	   *region;			/* the pool, for remote offsets */
	Size		region_len;
	bool		in_set;			/* set 1..: fabric, domain, av, pool_mr are
								 * set 0's */
	char		host[RX_FABRIC_ADDR_LEN];	/* set 0: where it is bound */
	char		service[RX_FABRIC_ADDR_LEN];
	bool		virt_addr;		/* remote addresses are virtual addresses */
	bool		string_names;	/* shm: endpoints are named, not host:port */
	bool		raw_names;		/* verbs' UD: peers only by their raw name */
	char		name_suffix[64];	/* shm: what the provider appends to a name */
	int			wait_fd;

	/* one fi_context per operation (FI_CONTEXT mode): buffers, then ctrl slots */
	struct fi_context *contexts;
	int			ncontexts_buf;

	/* control messages that do not fit in an inject go from these slots */
	char	   *ctrl_raw;		/* allocation behind ctrl_slots */
	char	   *ctrl_slots;
	bool		ctrl_busy[CTRL_SLOTS];
	int			ctrl_next;
	Size		inject_size;
	Size		prefix_size;
} FabricEp;

static FabricEp eps[RX_MAX_ENDPOINTS];

/* the libfabric provider name of a setting, for one kind of endpoint */
static const char *
provider_name(int e, int provider)
{
	switch (provider)
	{
		case RX_PROVIDER_VERBS:
			return e == RX_EP_DGRAM ? "verbs" : "verbs;ofi_rxm";
		case RX_PROVIDER_UDP:
			return "udp";
		case RX_PROVIDER_TCP:
			return "tcp;ofi_rxm";
		case RX_PROVIDER_SHM:
			return "shm";
	}
	return NULL;
}

const char *
rx_fabric_unsupported(int e, int provider)
{
	if (e == RX_EP_DGRAM && (provider == RX_PROVIDER_TCP || provider == RX_PROVIDER_SHM))
		return "The tcp and shm providers offer only reliable endpoints, which the send/receive over datagrams designs cannot use; set rdma_exchange.fabric_provider to udp, verbs or auto.";
	if (e == RX_EP_RELIABLE && provider == RX_PROVIDER_UDP)
		return "The udp provider offers no reliable endpoints with RDMA operations; set rdma_exchange.reliable_provider to tcp, shm, verbs or auto.";
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
fabric_hints(int e, const char *prov_name, int recv_depth)
{
	struct fi_info *hints = fi_allocinfo();

	if (hints == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	if (e == RX_EP_DGRAM)
	{
		hints->caps = FI_MSG;
		hints->ep_attr->type = FI_EP_DGRAM;
		/*
		 * verbs' UD endpoint asks for the same as its RC ones; with no RMA
		 * on this endpoint the address and key bits cost nothing
		 */
		hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
			FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	}
	else
	{
		hints->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE |
			FI_REMOTE_READ | FI_REMOTE_WRITE;
		hints->ep_attr->type = FI_EP_RDM;
		/* what we can do: register, use keys and addresses we are given */
		hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
			FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	}
	/* we can live with both: every operation has its own fi_context */
	hints->mode = FI_CONTEXT | FI_MSG_PREFIX;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->rx_attr->size = recv_depth;
	hints->fabric_attr->prov_name = strdup(prov_name);
	return hints;
}

/*
 * The node and service an endpoint binds to.  shm endpoints are named, not
 * bound to a port; the name is made of the port, which is unique on a host.
 * The provider completes it to "fi_shm://NAME:UID:INDEX" (the user id of
 * the process and the endpoint's index in it); peers are named the same
 * way, which assumes that every member on the host runs as the same user,
 * as cross-memory attach requires anyway.
 */
#define SHM_NAME_PREFIX		"fi_shm://rdma_exchange_"
static void
endpoint_name(const char *prov_name, const char *host, const char *service,
			  const char **node, const char **svc, char *buf, Size buflen)
{
	if (strcmp(prov_name, "shm") == 0)
	{
		snprintf(buf, buflen, "rdma_exchange_%s", service);
		*node = buf;
		*svc = NULL;
	}
	else
	{
		*node = host;
		*svc = service;
	}
}

/* fi_getinfo for one provider, bound to host:service; NULL if unavailable */
static struct fi_info *
fabric_getinfo(int e, const char *prov_name, const char *host,
			   const char *service, int recv_depth, int *err)
{
	struct fi_info *hints = fabric_hints(e, prov_name, recv_depth);
	struct fi_info *info = NULL;
	const char *node;
	const char *svc;
	char		name[RX_FABRIC_ADDR_LEN + 32];

	endpoint_name(prov_name, host, service, &node, &svc, name, sizeof(name));
	*err = fi_getinfo(RX_FI_VERSION, node, svc, FI_SOURCE, hints, &info);
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

/*
 * The queues and the endpoint itself, in the domain and with the address
 * vector f already has.
 */
static void
open_queues_and_endpoint(FabricEp *f, const char *address, int recv_depth)
{
	struct fi_cq_attr cq_attr;
	enum fi_wait_obj rx_wait;

	memset(&cq_attr, 0, sizeof(cq_attr));
	/* DATA: a write with immediate data reports its immediate */
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.size = Max(recv_depth * 2, 256);
	cq_attr.wait_obj = FI_WAIT_FD;
	if (fi_cq_open(f->domain, &cq_attr, &f->rxcq, NULL) != 0)
	{
		/* no waitable CQ: the worker polls with a short timeout instead */
		cq_attr.wait_obj = FI_WAIT_NONE;
		FI_CHECK(fi_cq_open(f->domain, &cq_attr, &f->rxcq, NULL),
				 "open the receive completion queue");
	}
	rx_wait = cq_attr.wait_obj;
	cq_attr.wait_obj = FI_WAIT_NONE;
	cq_attr.size = Max(f->fi->tx_attr->size * 2, 256);
	FI_CHECK(fi_cq_open(f->domain, &cq_attr, &f->txcq, NULL),
			 "open the send completion queue");

	FI_CHECK(fi_endpoint(f->domain, f->fi, &f->ep, NULL), "open the endpoint");
	FI_CHECK(fi_ep_bind(f->ep, &f->av->fid, 0), "bind the address vector");
	FI_CHECK(fi_ep_bind(f->ep, &f->txcq->fid, FI_TRANSMIT), "bind the send queue");
	FI_CHECK(fi_ep_bind(f->ep, &f->rxcq->fid, FI_RECV), "bind the receive queue");
	FI_CHECK(fi_enable(f->ep), "enable the endpoint");

	if (rx_wait == FI_WAIT_FD)
	{
		int			fd;

		if (fi_control(&f->rxcq->fid, FI_GETWAIT, &fd) == 0)
			f->wait_fd = fd;
	}

	f->prefix_size = (f->fi->mode & FI_MSG_PREFIX) ? f->fi->ep_attr->msg_prefix_size : 0;
	f->inject_size = f->fi->tx_attr->inject_size;
	f->string_names = (f->fi->addr_format == FI_ADDR_STR);
}

/*
 * One fi_context per buffer and per control slot, and the control slots
 * for messages that do not fit in an inject.  Where the endpoint writes
 * (RDMA), also one per buffer and member: a broadcast buffer is written
 * to several members, and a failed write must say which (context_of()).
 */
static void
alloc_contexts(FabricEp *f, const char *address, int nbuffers)
{
	Size		n = nbuffers + CTRL_SLOTS;

	if (f->fi->caps & FI_RMA)
		n += (Size) nbuffers * RX_MAX_MEMBERS;
	f->ncontexts_buf = nbuffers;
	f->contexts = MemoryContextAllocZero(TopMemoryContext,
										 sizeof(struct fi_context) * n);
	/* an inject carries no prefix: with one, control messages go from slots */
	if (f->inject_size < CTRL_SLOT_SIZE || f->prefix_size != 0)
	{
		Size		slots_len = (Size) CTRL_SLOTS * (CTRL_SLOT_SIZE + f->prefix_size);

		f->ctrl_raw = MemoryContextAlloc(TopMemoryContext, slots_len + 4096);
		f->ctrl_slots = (char *) TYPEALIGN(4096, f->ctrl_raw);
		if (f->fi->domain_attr->mr_mode & FI_MR_LOCAL)
		{
			FI_CHECK(fi_mr_reg(f->domain, f->ctrl_slots, slots_len,
							   FI_SEND, 0, 1, 0, &f->ctrl_mr, NULL),
					 "register the control buffers");
			f->ctrl_desc = fi_mr_desc(f->ctrl_mr);
		}
	}
}

/* what an open endpoint offers; address: its printable bound address */
static void
describe(FabricEp *f, const char *address, int recv_depth, RxFabricInfo *out)
{
	memset(out, 0, sizeof(*out));
	strlcpy(out->provider, f->fi->fabric_attr->prov_name, sizeof(out->provider));
	strlcpy(out->address, address, sizeof(out->address));
	out->max_msg_size = f->fi->ep_attr->max_msg_size;
	out->prefix_size = f->prefix_size;
	out->recv_depth = Min((int) f->fi->rx_attr->size, recv_depth);
	out->has_wait_fd = (f->wait_fd >= 0);
	out->registered = (f->pool_mr != NULL);
}

/* the endpoint's own name, printable, into buf; false if it has none */
static bool
bound_name(FabricEp *f, char *name, size_t *namelen, char *buf, size_t buflen)
{
	if (fi_getname(&f->ep->fid, name, namelen) != 0)
		return false;
	fi_av_straddr(f->av, name, buf, &buflen);
	return true;
}

/*
 * libfabric settings the transport needs, from the environment, set before
 * the first fi_getinfo of the process (which reads them) unless the
 * environment sets them:
 *
 * FI_AV_REMOVE_CLEANUP: fi_av_remove closes ofi_rxm's connection to the
 * peer only with it; the worker relies on that to reopen a connection that
 * a refused RDMA operation broke (worker_port.c, port_rdma_failed).
 *
 * FI_UNIVERSE_SIZE: ofi_rxm sizes its completion queues for that many
 * peers (256 by default), which is more than some RDMA devices allow
 * (Soft-RoCE's rxe: 32767 entries a CQ), and then cannot open its endpoint
 * ("Unable to create verbs CQ").  A member has at most the endpoint sets
 * of RX_MAX_MEMBERS members as peers.  Only where an RDMA device is
 * present (the verbs provider's case): the tcp path keeps libfabric's
 * default.
 */
static void
provider_environment(void)
{
	static bool done = false;
	DIR		   *dir;
	struct dirent *de;
	bool		device = false;

	if (done)
		return;
	done = true;
	setenv("FI_AV_REMOVE_CLEANUP", "1", 0);
	if (getenv("FI_UNIVERSE_SIZE") != NULL ||
		(dir = opendir("/sys/class/infiniband")) == NULL)
		return;
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			device = true;
	closedir(dir);
	if (device)
		setenv("FI_UNIVERSE_SIZE",
			   psprintf("%d", RX_MAX_MEMBERS * rx_transport_endpoints), 0);
}

/*
 * Does the address vector find a peer by host and port?  verbs' UD address
 * vector does not (fi_av_insertsvc is not implemented there): it takes
 * the raw name a peer's endpoint gives itself (GID, QP number, P_Key),
 * which members then publish (rx_fabric_name) and ship with every query.
 * Asked of the provider with our own address; the entry is removed again.
 */
static bool
takes_host_port(FabricEp *f)
{
	fi_addr_t	fa = FI_ADDR_NOTAVAIL;
	int			ret = fi_av_insertsvc(f->av, f->host, f->service, &fa, 0, NULL);

	if (ret == 1 && fa != FI_ADDR_NOTAVAIL)
		(void) fi_av_remove(f->av, &fa, 1, 0);
	return ret != -FI_ENOSYS;
}

void
rx_fabric_open(int e, int provider, const char *address, char *region,
			   Size region_len, int nbuffers, int recv_depth,
			   RxFabricInfo *out)
{
	FabricEp   *f = &eps[e];
	char		host[RX_FABRIC_ADDR_LEN];
	char		service[RX_FABRIC_ADDR_LEN];
	int			err = 0;
	struct fi_av_attr av_attr;
	char		name[128];
	size_t		namelen = sizeof(name);
	char		printable[128];
	const char *tried;

	Assert(e < RX_NEPS);
	if (!rx_fabric_split_address(address, host, sizeof(host),
								 service, sizeof(service)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid rdma_exchange.fabric_address \"%s\"", address),
				 errhint("Use host:port, for example 127.0.0.1:7400.")));

	provider_environment();
	memset(f, 0, sizeof(*f));
	f->wait_fd = -1;
	strlcpy(f->host, host, sizeof(f->host));
	strlcpy(f->service, service, sizeof(f->service));
	if (provider == RX_PROVIDER_AUTO)
	{
		/* verbs when an RDMA device has this address, otherwise udp or tcp */
		const char *fallback = e == RX_EP_DGRAM ? "udp" : "tcp;ofi_rxm";

		tried = e == RX_EP_DGRAM ? "verbs, then udp" : "verbs;ofi_rxm, then tcp;ofi_rxm";
		f->fi = fabric_getinfo(e, provider_name(e, RX_PROVIDER_VERBS), host,
							   service, recv_depth, &err);
		if (f->fi == NULL)
			f->fi = fabric_getinfo(e, fallback, host, service, recv_depth, &err);
	}
	else
	{
		tried = provider_name(e, provider);
		f->fi = fabric_getinfo(e, tried, host, service, recv_depth, &err);
	}
	if (f->fi == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("no libfabric provider offers %s endpoints at \"%s\"",
						e == RX_EP_DGRAM ? "datagram" : "reliable", address),
				 errdetail("fi_getinfo for provider \"%s\" with %s failed: %s.",
						   tried,
						   e == RX_EP_DGRAM ? "FI_EP_DGRAM and FI_MSG" :
						   "FI_EP_RDM, FI_MSG and FI_RMA",
						   fi_strerror(-err))));

	FI_CHECK(fi_fabric(f->fi->fabric_attr, &f->fabric, NULL), "open the fabric");
	FI_CHECK(fi_domain(f->fabric, f->fi, &f->domain, NULL), "open the domain");
	memset(&av_attr, 0, sizeof(av_attr));
	av_attr.type = FI_AV_UNSPEC;
	FI_CHECK(fi_av_open(f->domain, &av_attr, &f->av, NULL), "open the address vector");
	open_queues_and_endpoint(f, address, recv_depth);
	f->raw_names = (e == RX_EP_DGRAM && !f->string_names && !takes_host_port(f));

	f->region = region;
	f->region_len = region_len;
	f->virt_addr = (f->fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;

	/*
	 * One registration of the whole pool: where the provider needs it for
	 * local access, and always for RDMA, whose peers name it by key.
	 */
	if (e == RX_EP_RELIABLE || (f->fi->domain_attr->mr_mode & FI_MR_LOCAL))
	{
		uint64		access = FI_SEND | FI_RECV;

		if (e == RX_EP_RELIABLE)
			access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
		FI_CHECK(fi_mr_reg(f->domain, region, region_len, access,
						   0, 0, 0, &f->pool_mr, NULL),
				 "register the buffer pool");
		f->pool_desc = fi_mr_desc(f->pool_mr);
	}
	alloc_contexts(f, address, nbuffers);

	if (!bound_name(f, name, &namelen, printable, sizeof(printable)))
		strlcpy(printable, address, sizeof(printable));
	else
	{
		if (strcmp(f->fi->fabric_attr->prov_name, "udp") == 0)
			udp_enlarge_socket_buffers(name, namelen);
		if (f->string_names)
		{
			Size		known = strlen(SHM_NAME_PREFIX) + strlen(service);

			if (namelen > sizeof(name) - 1 || strlen(name) < known ||
				strncmp(name, SHM_NAME_PREFIX, strlen(SHM_NAME_PREFIX)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("unexpected endpoint name \"%s\" from provider \"%s\"",
								name, f->fi->fabric_attr->prov_name)));
			strlcpy(f->name_suffix, name + known, sizeof(f->name_suffix));
		}
	}
	describe(f, printable, recv_depth, out);
}

void
rx_fabric_open_set(int e, int nbuffers, RxFabricInfo *out)
{
	FabricEp   *p = &eps[RX_EP_KIND(e)];
	FabricEp   *f = &eps[e];
	int			set = e / RX_NEPS;
	char		service[RX_FABRIC_ADDR_LEN + 16];
	char		address[RX_FABRIC_ADDR_LEN * 2];
	int			err = 0;
	char		name[128];
	size_t		namelen = sizeof(name);
	char		printable[128];

	Assert(set > 0 && p->ep != NULL);
	/* a port of its own chosen by the kernel; shm: a name of its own */
	if (p->string_names)
		snprintf(service, sizeof(service), "%s_%d", p->service, set);
	else
		strlcpy(service, "0", sizeof(service));
	snprintf(address, sizeof(address), "%s:%s", p->host, service);

	provider_environment();
	memset(f, 0, sizeof(*f));
	f->wait_fd = -1;
	f->fi = fabric_getinfo(RX_EP_KIND(e), p->fi->fabric_attr->prov_name,
						   p->host, service, (int) p->fi->rx_attr->size, &err);
	if (f->fi == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not open endpoint set %d at \"%s\"", set, address),
				 errdetail("fi_getinfo for provider \"%s\" failed: %s.",
						   p->fi->fabric_attr->prov_name, fi_strerror(-err))));

	/* set 0's fabric, domain, address vector and pool registration */
	f->in_set = true;
	f->fabric = p->fabric;
	f->domain = p->domain;
	f->av = p->av;
	f->pool_mr = p->pool_mr;
	f->pool_desc = p->pool_desc;
	f->region = p->region;
	f->region_len = p->region_len;
	f->virt_addr = p->virt_addr;
	open_queues_and_endpoint(f, address, (int) p->fi->rx_attr->size);
	alloc_contexts(f, address, nbuffers);
	if (!bound_name(f, name, &namelen, printable, sizeof(printable)))
		strlcpy(printable, address, sizeof(printable));
	describe(f, printable, (int) p->fi->rx_attr->size, out);
}

void
rx_fabric_close(int e)
{
	FabricEp   *f = &eps[e];

	if (f->ep)
		fi_close(&f->ep->fid);
	if (f->ctrl_mr)
		fi_close(&f->ctrl_mr->fid);
	if (f->txcq)
		fi_close(&f->txcq->fid);
	if (f->rxcq)
		fi_close(&f->rxcq->fid);
	/* a later set shares these with set 0, which closes them */
	if (!f->in_set)
	{
		if (f->pool_mr)
			fi_close(&f->pool_mr->fid);
		if (f->av)
			fi_close(&f->av->fid);
		if (f->domain)
			fi_close(&f->domain->fid);
		if (f->fabric)
			fi_close(&f->fabric->fid);
	}
	if (f->fi)
		fi_freeinfo(f->fi);
	if (f->contexts)
		pfree(f->contexts);
	if (f->ctrl_raw)
		pfree(f->ctrl_raw);
	provider_environment();
	memset(f, 0, sizeof(*f));
	f->wait_fd = -1;
}

bool
rx_fabric_is_open(int e)
{
	return eps[e].ep != NULL;
}

const char *
rx_fabric_strerror(int err)
{
	return fi_strerror(err);
}

bool
rx_fabric_needs_names(int e)
{
	return eps[RX_EP_KIND(e)].raw_names;
}

bool
rx_fabric_name(int e, char *hex, Size hexlen)
{
	FabricEp   *f = &eps[e];
	char		name[RX_FABRIC_NAME_LEN / 2];
	size_t		namelen = sizeof(name);

	hex[0] = '\0';
	if (f->ep == NULL || !f->raw_names ||
		fi_getname(&f->ep->fid, name, &namelen) != 0 ||
		namelen * 2 + 1 > hexlen)
		return false;
	hex[hex_encode(name, namelen, hex)] = '\0';
	return true;
}

/* a peer's raw name, as its rx_fabric_name() wrote it, into the vector */
static bool
resolve_raw_name(FabricEp *f, const char *hex, RxFabricAddr *addr,
				 const char **reason)
{
	static char why[256];
	unsigned char name[RX_FABRIC_NAME_LEN / 2];
	size_t		len = strlen(hex);
	fi_addr_t	fa = FI_ADDR_NOTAVAIL;
	int			ret;

	if (len == 0)
	{
		*reason = "That member published no name for its datagram endpoint (it is not open there, or runs another provider).";
		return false;
	}
	if (len % 2 != 0 || len / 2 > sizeof(name) ||
		strspn(hex, "0123456789abcdef") != len)
	{
		*reason = "The datagram endpoint name the member published is not a name in hex.";
		return false;
	}
	for (size_t i = 0; i < len / 2; i++)
	{
		unsigned int b;

		sscanf(hex + 2 * i, "%2x", &b);
		name[i] = (unsigned char) b;
	}
	ret = fi_av_insert(f->av, name, 1, &fa, 0, NULL);
	if (ret == 1 && fa != FI_ADDR_NOTAVAIL)
	{
		*addr = (RxFabricAddr) fa;
		return true;
	}
	snprintf(why, sizeof(why), "The address vector of provider \"%s\" refused the endpoint name the member published: %s.",
			 f->fi->fabric_attr->prov_name,
			 ret < 0 ? fi_strerror(-ret) : "no address inserted");
	*reason = why;
	return false;
}

bool
rx_fabric_resolve(int e, const char *address, RxFabricAddr *addr,
				  const char **reason)
{
	static char why[256];
	FabricEp   *f = &eps[RX_EP_KIND(e)];
	char		host[RX_FABRIC_ADDR_LEN];
	char		service[RX_FABRIC_ADDR_LEN];
	fi_addr_t	fa = FI_ADDR_NOTAVAIL;
	int			ret;

	if (f->ep == NULL)
	{
		*reason = "This member has no endpoint of that kind open; see the server log of its transport worker.";
		return false;
	}
	if (f->raw_names)
		return resolve_raw_name(f, address, addr, reason);
	if (!rx_fabric_split_address(address, host, sizeof(host),
								 service, sizeof(service)))
	{
		*reason = "The address is not of the form host:port.";
		return false;
	}
	if (f->string_names)
	{
		/* a named endpoint (shm): the peer's name, made as in endpoint_name() */
		char		name[RX_FABRIC_ADDR_LEN + 96];

		snprintf(name, sizeof(name), SHM_NAME_PREFIX "%s%s", service, f->name_suffix);
		ret = fi_av_insert(f->av, name, 1, &fa, 0, NULL);
	}
	else
		ret = fi_av_insertsvc(f->av, host, service, &fa, 0, NULL);
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
					 f->fi->fabric_attr->prov_name,
					 ret < 0 ? fi_strerror(-ret) : "no address inserted");
		if (res)
			freeaddrinfo(res);
	}
	*reason = why;
	return false;
}

/*
 * Take a peer out of endpoint e's address vector.  Under ofi_rxm this
 * closes the connection to it (the peer closes its side on the
 * disconnect); resolving the peer again gives a new address, and the next
 * message a new connection.
 */
void
rx_fabric_forget(int e, RxFabricAddr addr)
{
	FabricEp   *f = &eps[RX_EP_KIND(e)];
	fi_addr_t	fa = (fi_addr_t) addr;

	if (f->av != NULL)
		(void) fi_av_remove(f->av, &fa, 1, 0);
}

int
rx_fabric_post_recv(int e, int bufid, char *buf, Size len)
{
	FabricEp   *f = &eps[e];

	return (int) fi_recv(f->ep, buf, len + f->prefix_size, f->pool_desc,
						 FI_ADDR_UNSPEC, &f->contexts[bufid]);
}

/*
 * The message starts after the prefix.  verbs' UD endpoint, the one
 * provider here with a prefix (FI_MSG_PREFIX), writes it on receive only
 * (the GRH) and sends a buffer as it is given (libfabric 1.17's
 * vrb_dgram_ep_send), so the prefix is not sent: a peer would read it as
 * the message's header.
 */
int
rx_fabric_send(int e, int bufid, char *buf, Size len, RxFabricAddr dest)
{
	FabricEp   *f = &eps[e];

	return (int) fi_send(f->ep, buf + f->prefix_size, len, f->pool_desc,
						 (fi_addr_t) dest, &f->contexts[bufid]);
}

/*
 * The registration peers name our pool by: its key and the range of
 * remote addresses in it (virtual addresses, or offsets where the
 * provider takes offsets); false where the pool is not registered.  The
 * true key, whatever rdma_exchange.fault_wrong_rdma_key makes our
 * messages say.
 */
bool
rx_fabric_registration(int e, uint64 *key, uint64 *base, uint64 *len)
{
	FabricEp   *f = &eps[e];

	if (f->pool_mr == NULL)
		return false;
	*key = fi_mr_key(f->pool_mr);
	*base = f->virt_addr ? (uint64) (uintptr_t) f->region : 0;
	*len = f->region_len;
	return true;
}

void
rx_fabric_remote_ref(int e, const char *buf, uint64 *raddr, uint64 *key)
{
	FabricEp   *f = &eps[e];

	Assert(f->pool_mr != NULL);
	*raddr = f->virt_addr ? (uint64) (uintptr_t) buf : (uint64) (buf - f->region);
	*key = fi_mr_key(f->pool_mr);
	if (rx_fault_wrong_rdma_key)
		*key = ~*key;
}

int
rx_fabric_read(int e, int bufid, char *buf, Size len, RxFabricAddr src,
			   uint64 raddr, uint64 key)
{
	FabricEp   *f = &eps[e];

	return (int) fi_read(f->ep, buf, len, f->pool_desc, (fi_addr_t) src,
						 raddr, key, &f->contexts[bufid]);
}

/*
 * The buffer (and, for a write, the member) of a completed operation's
 * context into out, which is cleared first; false for a control slot's,
 * which is free again.
 */
static bool
context_of(FabricEp *f, void *context, RxCompletion *out)
{
	Size		id = (struct fi_context *) context - f->contexts;

	memset(out, 0, sizeof(*out));
	out->member = -1;
	if (id < (Size) f->ncontexts_buf)
		out->bufid = (int) id;
	else if (id < (Size) f->ncontexts_buf + CTRL_SLOTS)
	{
		f->ctrl_busy[id - f->ncontexts_buf] = false;
		return false;
	}
	else
	{
		id -= f->ncontexts_buf + CTRL_SLOTS;
		out->bufid = (int) (id / RX_MAX_MEMBERS);
		out->member = (int) (id % RX_MAX_MEMBERS);
	}
	return true;
}

int
rx_fabric_write_imm(int e, int bufid, int member, char *buf, Size len,
					RxFabricAddr dest, uint64 raddr, uint64 key, uint64 imm)
{
	FabricEp   *f = &eps[e];
	Size		ctx = f->ncontexts_buf + CTRL_SLOTS +
		(Size) bufid * RX_MAX_MEMBERS + member;

	return (int) fi_writedata(f->ep, buf, len, f->pool_desc, imm,
							  (fi_addr_t) dest, raddr, key, &f->contexts[ctx]);
}

int
rx_fabric_send_small(int e, const void *msg, Size len, RxFabricAddr dest)
{
	FabricEp   *f = &eps[e];
	int			slot;
	char	   *p;
	int			ret;

	if (len <= f->inject_size && f->prefix_size == 0)
		return (int) fi_inject(f->ep, msg, len, (fi_addr_t) dest);

	Assert(len <= CTRL_SLOT_SIZE);
	slot = f->ctrl_next;
	if (f->ctrl_busy[slot])
		return -FI_EAGAIN;
	p = f->ctrl_slots + (Size) slot * (CTRL_SLOT_SIZE + f->prefix_size);
	memcpy(p + f->prefix_size, msg, len);
	ret = (int) fi_send(f->ep, p + f->prefix_size, len, f->ctrl_desc,
						(fi_addr_t) dest, &f->contexts[f->ncontexts_buf + slot]);
	if (ret == 0)
	{
		f->ctrl_busy[slot] = true;
		f->ctrl_next = (slot + 1) % CTRL_SLOTS;
	}
	return ret;
}

/*
 * Read completions.  Control slots are recycled here and never reported;
 * returns the number of buffer completions stored in out.  A write with
 * immediate data that landed in our memory has no context of ours: it is
 * reported with bufid -1 and its immediate.
 */
static int
fabric_poll(FabricEp *f, struct fid_cq *cq, RxCompletion *out, int max,
			bool recv)
{
	struct fi_cq_data_entry entries[16];
	int			n = 0;

	while (n < max)
	{
		ssize_t		got = fi_cq_read(cq, entries, Min(max - n, 16));

		if (got == -FI_EAGAIN)
			break;
		if (got == -FI_EAVAIL)
		{
			struct fi_cq_err_entry err;

			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) != 1)
				break;
			got = 0;
			if (err.op_context != NULL &&
				context_of(f, err.op_context, &out[n]))
			{
				out[n].err = err.err ? err.err : FI_EOTHER;
				n++;
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
			if (entries[i].flags & FI_REMOTE_CQ_DATA &&
				entries[i].flags & FI_REMOTE_WRITE)
			{
				memset(&out[n], 0, sizeof(out[n]));
				out[n].member = -1;
				out[n].bufid = -1;
				out[n].imm = entries[i].data;
				out[n].has_imm = true;
				n++;
				continue;
			}
			if (!context_of(f, entries[i].op_context, &out[n]))
				continue;
			out[n].len = recv && entries[i].len >= f->prefix_size ?
				entries[i].len - f->prefix_size : entries[i].len;
			out[n].read = (entries[i].flags & FI_READ) != 0;
			n++;
		}
		/* the udp provider reads one datagram per call: keep calling */
		if (got == 0)
			break;
	}
	return n;
}

int
rx_fabric_poll_recv(int e, RxCompletion *out, int max)
{
	return fabric_poll(&eps[e], eps[e].rxcq, out, max, true);
}

int
rx_fabric_poll_send(int e, RxCompletion *out, int max)
{
	return fabric_poll(&eps[e], eps[e].txcq, out, max, false);
}

int
rx_fabric_wait_fd(int e)
{
	return eps[e].wait_fd;
}

bool
rx_fabric_trywait(void)
{
	struct fid *fids[1];
	int			n = 0;

	/* every open endpoint must be idle */
	for (int e = 0; e < RX_MAX_ENDPOINTS; e++)
	{
		if (eps[e].ep == NULL)
			continue;
		if (eps[e].wait_fd < 0)
			return false;
		fids[0] = &eps[e].rxcq->fid;
		if (fi_trywait(eps[e].fabric, fids, 1) != 0)
			return false;
		n++;
	}
	return n > 0;
}
