/*-------------------------------------------------------------------------
 *
 * fragment_guard.c
 *	  A signed plan fragment is valid once, for its role, for a short time.
 *
 * The HMAC (fragment_msg.c) proves that a member's backend made the
 * fragment, not that the caller of execute_fragment() is the session it
 * was made for: whoever reads a fragment (from a member's log, from
 * pg_stat_activity of a superuser) could run it again, as another role or
 * after the query ended.  So the signed body also names the querying role,
 * an expiry and the query's random id and token, and a member refuses a
 * fragment at once, before it opens a port or takes a buffer:
 *
 *	- for another role than the session's current user: a fragment runs
 *	  with the privileges of the role that planned it, and only that role
 *	  may start it;
 *	- after its expiry (RX_FRAGMENT_LIFETIME_MS after it was made, by the
 *	  coordinator's clock: members' clocks must agree to well within that,
 *	  as NTP keeps them);
 *	- when this server already started a fragment with the same query id
 *	  and token: a table in shared memory keeps each until it expires.
 *
 * Since the signed, bound fragment is the authorization,
 * execute_fragment() is executable by PUBLIC: any role that may read the
 * tables may run distributed queries over them, with no grants on the
 * extension's functions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/timestamp.h"

#include "cluster/fragment_guard.h"

/*
 * fragments started within a lifetime; a slot is free once expired.  A
 * directly dispatched query is one fragment message, and applications send
 * thousands of them a second: 262144 slots (6 MB) remember 15 s of up to
 * about 17000 a second per member (with 64 probes, a member that starts
 * more is told to retry).
 */
#define GUARD_SLOTS 262144
#define GUARD_PROBES 64

typedef struct GuardSlot
{
	uint64		query_id;
	uint64		token;
	TimestampTz expires;
} GuardSlot;

typedef struct GuardShared
{
	LWLock	   *lock;
	GuardSlot	slots[GUARD_SLOTS];
} GuardShared;

static GuardShared *guard = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
guard_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(GuardShared));
	RequestNamedLWLockTranche("rdma_exchange fragment guard", 1);
}

static void
guard_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	guard = ShmemInitStruct("rdma_exchange fragment guard", sizeof(GuardShared), &found);
	if (!found)
	{
		memset(guard, 0, sizeof(GuardShared));
		guard->lock = &(GetNamedLWLockTranche("rdma_exchange fragment guard"))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
rx_fragment_guard_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = guard_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = guard_shmem_startup;
}

void
rx_fragment_bind(RxFragmentMsg *msg)
{
	msg->rolename = GetUserNameFromId(GetUserId(), false);
	msg->expires = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   RX_FRAGMENT_LIFETIME_MS);
	msg->coordinator_pid = MyProcPid;
}

/* record the fragment as started; false if it was before (or no room) */
static bool
guard_record(uint64 query_id, uint64 token, TimestampTz expires,
			 TimestampTz now, bool *full)
{
	uint32		start = (uint32) (query_id ^ (query_id >> 32)) % GUARD_SLOTS;
	GuardSlot  *free_slot = NULL;

	*full = false;
	LWLockAcquire(guard->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GUARD_PROBES; i++)
	{
		GuardSlot  *s = &guard->slots[(start + i) % GUARD_SLOTS];

		if (s->expires <= now)
		{
			if (free_slot == NULL)
				free_slot = s;
			continue;
		}
		if (s->query_id == query_id && s->token == token)
		{
			LWLockRelease(guard->lock);
			return false;
		}
	}
	if (free_slot != NULL)
	{
		free_slot->query_id = query_id;
		free_slot->token = token;
		free_slot->expires = expires;
	}
	else
		*full = true;
	LWLockRelease(guard->lock);
	return free_slot != NULL;
}

void
rx_fragment_check_binding(const RxFragmentMsg *msg, const char *member)
{
	const char *coordinator = msg->member_names[msg->coordinator];
	char	   *self_role = GetUserNameFromId(GetUserId(), false);
	TimestampTz now = GetCurrentTimestamp();
	bool		full;

	if (strcmp(msg->rolename, self_role) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("plan fragment of role \"%s\" cannot be run by role \"%s\" on member \"%s\"",
						msg->rolename, self_role, member),
				 errdetail("A fragment runs with the privileges of the role whose query it belongs to (query of backend %d on member \"%s\").",
						   msg->coordinator_pid, coordinator)));
	if (msg->expires <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("plan fragment of backend %d on member \"%s\" expired %ld ms ago on member \"%s\"",
						msg->coordinator_pid, coordinator,
						TimestampDifferenceMilliseconds(msg->expires, now), member),
				 errdetail("A fragment may be started up to %d s after its coordinator made it.",
						   RX_FRAGMENT_LIFETIME_MS / 1000),
				 errhint("If the query was not replayed, the members' clocks differ: keep them in step (NTP).")));
	if (!guard_record(msg->query_id, msg->token, msg->expires, now, &full))
	{
		if (full)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("member \"%s\" started too many plan fragments within %d s to remember them all",
							member, RX_FRAGMENT_LIFETIME_MS / 1000),
					 errhint("Retry the query.")));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("plan fragment of backend %d on member \"%s\" was already started on member \"%s\"",
						msg->coordinator_pid, coordinator, member),
				 errdetail("A fragment runs once; a replayed fragment is refused.")));
	}
}
