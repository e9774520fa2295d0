/*-------------------------------------------------------------------------
 *
 * rdma_exchange.c
 *	  Module entry point: settings and hook registration, nothing else.
 *
 * Each layer registers what it owns through its *_init function; the
 * settings live here so that a DBA reading one file sees them all.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker_internals.h"
#include "utils/guc.h"

#include "rdma_exchange.h"
#include "cluster/conn_budget.h"
#include "cluster/deadlock.h"
#include "cluster/fragment_guard.h"
#include "cluster/metadata.h"
#include "exec/direct.h"
#include "exec/exchange.h"
#include "planner/planner.h"
#include "transport/fabric.h"
#include "transport/transport.h"

PG_MODULE_MAGIC;

bool		rx_enable = true;
int			rx_fabric_provider = RX_PROVIDER_AUTO;
char	   *rx_fabric_address = NULL;
static char *datagram_name_unused = NULL;
static char *pool_registration_unused = NULL;
int			rx_buffer_pool_size = 65536;	/* kB */
int			rx_buffer_size = 4096;
int			rx_large_buffer_pool_size = 65536;	/* kB */
int			rx_large_buffer_size = 65536;
int			rx_max_ports = 64;
int			rx_credit_window = 256;
int			rx_reliable_provider = RX_PROVIDER_AUTO;
int			rx_transport_design = RX_DESIGN_AUTO;
int			rx_transport_endpoints = 2;
int			rx_reliable_window = 16;
int			rx_credit_writeback = 2;
int			rx_buffer_depth = 0;
int			rx_retransmit_timeout = 20;
char	   *rx_cluster_key = NULL;
int			rx_connect_timeout = 10;
int			rx_fault_drop_percent = 0;
int			rx_fault_duplicate_percent = 0;
int			rx_fault_reorder_percent = 0;
bool		rx_fault_wrong_rdma_key = false;
int			rx_peer_timeout = 10000;
bool		rx_consistent_reads = true;
int			rx_member_idle_timeout = 60000;
int			rx_max_member_sessions = -1;

static const struct config_enum_entry provider_options[] = {
	{"auto", RX_PROVIDER_AUTO, false},
	{"verbs", RX_PROVIDER_VERBS, false},
	{"udp", RX_PROVIDER_UDP, false},
	{"tcp", RX_PROVIDER_TCP, false},
	{"shm", RX_PROVIDER_SHM, false},
	{NULL, 0, false}
};

static const struct config_enum_entry reliable_provider_options[] = {
	{"auto", RX_PROVIDER_AUTO, false},
	{"verbs", RX_PROVIDER_VERBS, false},
	{"tcp", RX_PROVIDER_TCP, false},
	{"shm", RX_PROVIDER_SHM, false},
	{NULL, 0, false}
};

static const struct config_enum_entry design_options[] = {
	{"auto", RX_DESIGN_AUTO, false},
	{"sesq_sr", RX_DESIGN_SESQ_SR, false},
	{"semq_sr", RX_DESIGN_SEMQ_SR, false},
	{"semq_rd", RX_DESIGN_SEMQ_RD, false},
	{"semq_wr", RX_DESIGN_SEMQ_WR, false},
	{"mesq_sr", RX_DESIGN_MESQ_SR, false},
	{"memq_sr", RX_DESIGN_MEMQ_SR, false},
	{"memq_rd", RX_DESIGN_MEMQ_RD, false},
	{"memq_wr", RX_DESIGN_MEMQ_WR, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/*
 * libfabric as Debian builds it links the PSM providers, and their
 * libinfinipath installs its own handlers for SIGINT, SIGTERM, SIGILL,
 * SIGABRT, SIGBUS and SIGSEGV when it is loaded (unless IPATH_NO_BACKTRACE
 * is set), which happens when the postmaster loads this library: they
 * print a backtrace and exit().  The postmaster would then exit at
 * pg_ctl stop -m fast or smart, without its shutdown checkpoint and with
 * its children still running (the next start is a crash recovery), and a
 * backend that crashes would exit() instead of making the postmaster
 * reinitialize shared memory.  Give the postmaster its own handlers back:
 * PostgreSQL's postmaster handles SIGINT and SIGTERM with the handler it
 * also installs for SIGQUIT, and leaves the others at their default.
 */
static void
restore_postmaster_signals(void)
{
	static const int defaults[] = {SIGILL, SIGABRT, SIGBUS, SIGSEGV};
	struct sigaction quit;
	struct sigaction act;

	setenv("IPATH_NO_BACKTRACE", "1", 0);
	if (IsUnderPostmaster || sigaction(SIGQUIT, NULL, &quit) != 0)
		return;
	if (sigaction(SIGINT, NULL, &act) == 0 && act.sa_handler != quit.sa_handler)
		(void) sigaction(SIGINT, &quit, NULL);
	if (sigaction(SIGTERM, NULL, &act) == 0 && act.sa_handler != quit.sa_handler)
		(void) sigaction(SIGTERM, &quit, NULL);
	for (int i = 0; i < lengthof(defaults); i++)
		if (sigaction(defaults[i], NULL, &act) == 0 &&
			act.sa_handler != SIG_DFL && act.sa_handler != SIG_IGN)
			(void) signal(defaults[i], SIG_DFL);
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("rdma_exchange must be loaded via shared_preload_libraries"),
				 errhint("Add rdma_exchange to shared_preload_libraries in postgresql.conf and restart the server.")));
	restore_postmaster_signals();

	DefineCustomBoolVariable("rdma_exchange.enable",
							 "Plans queries over distributed tables as distributed plans.",
							 "When off, only the local part of each distributed table is visible.",
							 &rx_enable, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("rdma_exchange.consistent_reads",
							 "Distributed queries read every member at one consistent point between distributed commits.",
							 "When off, each member's fragment takes its own snapshot: a query may see a transaction that committed on some members and not yet on others.",
							 &rx_consistent_reads, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.max_member_sessions",
							"Sessions of this member that may hold connections to one other member at once.",
							"-1 derives it from that member's max_connections; 0 sets no limit.",
							&rx_max_member_sessions, -1, -1, 10000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.member_idle_timeout",
							"Time after which a member closes a connection this server keeps there while it is idle.",
							"0 keeps them open. Sets idle_session_timeout of the member sessions opened afterwards; a closed one is replaced at its next use.",
							&rx_member_idle_timeout, 60000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("rdma_exchange.fabric_provider",
							 "libfabric provider of the data plane (auto picks verbs when an RDMA device is present, otherwise udp).",
							 NULL, &rx_fabric_provider, RX_PROVIDER_AUTO,
							 provider_options, PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);

	/*
	 * Read only, reported to every client at connection start: what a
	 * coordinator connecting here ships to the other members so that they
	 * can reach this member's datagram endpoint where it has no host:port
	 * (shared.h).  The value is the shared one, at the time it is shown.
	 */
	DefineCustomStringVariable("rdma_exchange.datagram_name",
							   "Raw name of this server's datagram endpoint where peers cannot find it by host:port (verbs' UD), in hex; empty otherwise.",
							   NULL, &datagram_name_unused, "",
							   PGC_INTERNAL,
							   GUC_REPORT | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, rx_datagram_name);

	/* the same for the reliable endpoint's pool registration (shared.h) */
	DefineCustomStringVariable("rdma_exchange.pool_registration",
							   "Key, address and length of this server's registered buffer pool on its reliable endpoint, in hex; empty where it has none.",
							   NULL, &pool_registration_unused, "",
							   PGC_INTERNAL,
							   GUC_REPORT | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, rx_pool_registration);

	DefineCustomStringVariable("rdma_exchange.fabric_address",
							   "Address (host:port) the transport worker of this server listens on.",
							   NULL, &rx_fabric_address, "127.0.0.1:7400",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.buffer_pool_size",
							"Size of the registered buffer pool in shared memory.",
							NULL, &rx_buffer_pool_size, 65536, 256, 4 * 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.buffer_size",
							"Size of one buffer of the pool; messages are at most this large or the provider's maximum, whichever is smaller.",
							NULL, &rx_buffer_size, 4096, 1024, 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_BYTE, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.large_buffer_pool_size",
							"Size of the pool of large buffers, for the designs over reliable connections (0: none).",
							NULL, &rx_large_buffer_pool_size, 65536, 0, 4 * 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_KB, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.large_buffer_size",
							"Size of one large buffer: the message size of the designs over reliable connections.",
							NULL, &rx_large_buffer_size, 65536, 4096, 16 * 1024 * 1024,
							PGC_POSTMASTER, GUC_UNIT_BYTE, NULL, NULL, NULL);

	DefineCustomEnumVariable("rdma_exchange.reliable_provider",
							 "libfabric provider of the reliable endpoint (auto picks verbs when an RDMA device is present, otherwise tcp).",
							 NULL, &rx_reliable_provider, RX_PROVIDER_AUTO,
							 reliable_provider_options, PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("rdma_exchange.transport_design",
							 "Endpoint design of the exchanges a query starts (auto: semq_sr for ordered exchanges; for unordered ones sesq_sr over RDMA hardware datagrams, semq_wr otherwise).",
							 NULL, &rx_transport_design, RX_DESIGN_AUTO,
							 design_options, PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.workers_per_member",
							"Parallel workers each member may use for its share of a query (-1: max_parallel_workers_per_gather); fewer for a small share, as PostgreSQL chooses.",
							"The coordinator plans them into the fragments it ships, so its setting holds for the query.",
							&rx_workers_per_member, -1, -1, MAX_PARALLEL_WORKER_LIMIT,
							PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.transport_endpoints",
							"Endpoints of each kind the transport worker opens for the multi-endpoint designs (mesq_sr, memq_sr, memq_rd, memq_wr); each backend's exchanges send through one of them.",
							NULL, &rx_transport_endpoints, 2, 1, RX_MAX_EP_SETS,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.reliable_credit_window",
							"Messages a sender may have in flight on one stream of a reliable design before it waits for credit.",
							NULL, &rx_reliable_window, 16, 2, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.credit_writeback",
							"Receives after which a receiver of a reliable design writes credit back to the sender.",
							NULL, &rx_credit_writeback, 2, 1, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.buffer_depth",
							"Buffers of each stream: 0 takes them from the pool as the traffic needs them (adaptive); N reserves N per stream for the query and makes N the credit window (fixed, for comparison).",
							NULL, &rx_buffer_depth, 0, 0, 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.max_ports",
							"Backends of this server that can take part in distributed queries at once.",
							NULL, &rx_max_ports, 64, 4, 1024,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.credit_window",
							"Messages a sender may have in flight on one stream before it waits for credit.",
							NULL, &rx_credit_window, 256, 2, 4096,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.retransmit_timeout",
							"Time after which an unacknowledged datagram is sent again.",
							NULL, &rx_retransmit_timeout, 20, 1, 10000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);

	DefineCustomStringVariable("rdma_exchange.cluster_key",
							   "Secret shared by the members; authenticates shipped plan fragments.",
							   NULL, &rx_cluster_key, "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY | GUC_NO_SHOW_ALL,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.connect_timeout",
							"Time to wait for a connection to another member.",
							NULL, &rx_connect_timeout, 10, 1, 3600,
							PGC_USERSET, GUC_UNIT_S, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.fault_drop_percent",
							"Test setting: percentage of received datagrams the transport drops.",
							NULL, &rx_fault_drop_percent, 0, 0, 100,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.fault_duplicate_percent",
							"Test setting: percentage of received datagrams the transport delivers twice.",
							NULL, &rx_fault_duplicate_percent, 0, 0, 100,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.fault_reorder_percent",
							"Test setting: percentage of received datagrams the transport holds back and delivers after later ones.",
							NULL, &rx_fault_reorder_percent, 0, 0, 100,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomBoolVariable("rdma_exchange.fault_wrong_rdma_key",
							 "Test setting: the transport offers its buffers for RDMA Read and Write under a wrong key, as a forged message would.",
							 NULL, &rx_fault_wrong_rdma_key, false,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("rdma_exchange.peer_timeout",
							"Time after which a member whose transport worker acknowledges nothing is considered gone.",
							NULL, &rx_peer_timeout, 10000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);

	MarkGUCPrefixReserved("rdma_exchange");

	rx_metadata_init();
	rx_fragment_guard_init();
	rx_deadlock_init();
	rx_conn_budget_init();
	rx_transport_init();
	rx_exec_init();
	rx_direct_init();
	rx_planner_init();
}
