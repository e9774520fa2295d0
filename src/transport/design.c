/*-------------------------------------------------------------------------
 *
 * design.c
 *	  Which endpoint design an exchange uses, and the designs' names.
 *
 * The coordinator chooses a design for every exchange of a query when it
 * dispatches the fragments, and ships the choice, so that both ends of a
 * stream agree whatever their own settings say.  The choice is per
 * exchange, as the paper advises: an ordered stream (a merge of sorted
 * streams) must not wait for a datagram to be sent again, so it goes over
 * a reliable connection (semq_sr); an unordered shuffle goes over
 * datagrams where they are the hardware's (UD QPs of the verbs provider),
 * which scale best there.  libfabric's udp provider only emulates them
 * over a socket with 1472-byte messages: on it, every reliable design
 * moves 1.5 to 2.2 times more rows per second (bench/shuffle), so
 * unordered shuffles take the fastest of those there, RDMA Write.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "transport/shared.h"

static const char *const design_names[RX_NDESIGNS] = {
	"auto", "sesq_sr", "semq_sr", "semq_rd", "semq_wr",
	"mesq_sr", "memq_sr", "memq_rd", "memq_wr"
};

const char *
rx_design_name(int design)
{
	if (design < 0 || design >= RX_NDESIGNS)
		return "unknown";
	return design_names[design];
}

static bool
design_up(int design)
{
	return rx_shared != NULL && rx_shared->ep_ready[rx_design_ep(design)];
}

/* does the datagram endpoint run on RDMA hardware (UD QPs)? */
static bool
hardware_datagrams(void)
{
	bool		verbs;

	if (!design_up(RX_DESIGN_SESQ_SR))
		return false;
	SpinLockAcquire(&rx_shared->mutex);
	verbs = strcmp(rx_shared->provider[RX_EP_DGRAM], "verbs") == 0;
	SpinLockRelease(&rx_shared->mutex);
	return verbs;
}

int
rx_design_choose(bool ordered)
{
	int			design = rx_transport_design;

	if (design == RX_DESIGN_AUTO)
	{
		int			preferred;
		int			other;

		if (ordered)
			preferred = RX_DESIGN_SEMQ_SR, other = RX_DESIGN_SESQ_SR;
		else if (hardware_datagrams())
			preferred = RX_DESIGN_SESQ_SR, other = RX_DESIGN_SEMQ_WR;
		else
			preferred = RX_DESIGN_SEMQ_WR, other = RX_DESIGN_SESQ_SR;

		/* the other one, or the preferred one's error from the port */
		return design_up(preferred) || !design_up(other) ? preferred : other;
	}
	if (rx_shared != NULL && rx_any_ep_ready() && !design_up(design))
		rx_design_require(design, -1,
						  psprintf("Set rdma_exchange.transport_design to auto, or fix rdma_exchange.%s and restart the server.",
								   rx_design_ep(design) == RX_EP_DGRAM ?
								   "fabric_provider" : "reliable_provider"));
	return design;
}

void
rx_design_require(int design, int exchange_id, const char *hint)
{
	int			e = rx_design_ep(design);

	if (design_up(design))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 exchange_id >= 0 ?
			 errmsg("transport design \"%s\" of exchange %d is not available on this member",
					rx_design_name(design), exchange_id) :
			 errmsg("transport design \"%s\" is not available on this member",
					rx_design_name(design)),
			 errdetail("Its %s endpoint is not open: %s",
					   e == RX_EP_DGRAM ? "datagram" : "reliable",
					   rx_shared->ep_failure[e][0] ? rx_shared->ep_failure[e] :
					   "the transport worker did not open it."),
			 errhint("%s", hint)));
}

const char *
rx_transport_provider_name(int design)
{
	static char provider[32];
	int			e = rx_design_ep(design);

	if (rx_shared == NULL || !rx_shared->ep_ready[e])
		return "none";
	SpinLockAcquire(&rx_shared->mutex);
	strlcpy(provider, rx_shared->provider[e], sizeof(provider));
	SpinLockRelease(&rx_shared->mutex);
	return provider;
}
