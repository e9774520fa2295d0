/*-------------------------------------------------------------------------
 *
 * fragment_msg.c
 *	  Encoding, signing, verifying and decoding fragment messages.
 *
 * A message is "<hex HMAC-SHA256>:<header>\n<body>": the header names the
 * format and the coordinator's extension version (members with another
 * version refuse the fragment with a clear error instead of misreading
 * it), the body is the nodeToString() of a list (see rx_fragment_encode).
 * The signature covers header and body.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "common/sha2.h"
#include "nodes/readfuncs.h"
#include "nodes/value.h"
#include "utils/builtins.h"

#include "cluster/admin.h"
#include "cluster/fragment_msg.h"

#define RX_FRAGMENT_MAGIC "rdma_exchange fragment v6"

static void
require_cluster_key(void)
{
	if (rx_cluster_key == NULL || rx_cluster_key[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("rdma_exchange.cluster_key is not set"),
				 errdetail("Plan fragments are signed with a key shared by the members."),
				 errhint("Set rdma_exchange.cluster_key to the same secret on every member and reload.")));
}

/*
 * The HMAC-SHA256 of the cluster key, keyed once per backend and key.
 * PostgreSQL's pg_hmac_*() looks the digest up in OpenSSL's provider
 * tables and hashes the key again for every message, which cost a point
 * lookup sent to another member about a tenth of its CPU time (sign and
 * verify together); a keyed context is copied per message instead.
 */
static EVP_MAC_CTX *keyed_hmac = NULL;
static char *keyed_hmac_key = NULL;	/* the key it was made with, malloc'd */

static void
hmac_error(const char *what)
{
	elog(ERROR, "could not compute HMAC of plan fragment: %s failed", what);
}

static EVP_MAC_CTX *
cluster_key_hmac(void)
{
	EVP_MAC    *mac;
	OSSL_PARAM	params[2];

	if (keyed_hmac != NULL && strcmp(keyed_hmac_key, rx_cluster_key) == 0)
		return keyed_hmac;
	/* a reload changed the key */
	EVP_MAC_CTX_free(keyed_hmac);
	keyed_hmac = NULL;
	free(keyed_hmac_key);
	keyed_hmac_key = NULL;

	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (mac == NULL)
		hmac_error("EVP_MAC_fetch");
	keyed_hmac = EVP_MAC_CTX_new(mac);
	EVP_MAC_free(mac);			/* the context holds its own reference */
	if (keyed_hmac == NULL)
		hmac_error("EVP_MAC_CTX_new");
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	keyed_hmac_key = strdup(rx_cluster_key);
	if (keyed_hmac_key == NULL ||
		!EVP_MAC_init(keyed_hmac, (const unsigned char *) rx_cluster_key,
					  strlen(rx_cluster_key), params))
	{
		EVP_MAC_CTX_free(keyed_hmac);
		keyed_hmac = NULL;
		free(keyed_hmac_key);
		keyed_hmac_key = NULL;
		hmac_error("EVP_MAC_init");
	}
	return keyed_hmac;
}

/* hex HMAC-SHA256 of data; buf must hold 2 * PG_SHA256_DIGEST_LENGTH + 1 */
static void
sign(const char *data, size_t len, char *buf)
{
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(cluster_key_hmac());
	unsigned char digest[PG_SHA256_DIGEST_LENGTH];
	size_t		digest_len = 0;
	bool		ok;

	if (ctx == NULL)
		hmac_error("EVP_MAC_CTX_dup");
	ok = EVP_MAC_update(ctx, (const unsigned char *) data, len) &&
		EVP_MAC_final(ctx, digest, &digest_len, sizeof(digest)) &&
		digest_len == sizeof(digest);
	EVP_MAC_CTX_free(ctx);
	if (!ok)
		hmac_error("EVP_MAC_final");
	hex_encode((const char *) digest, sizeof(digest), buf);
	buf[2 * PG_SHA256_DIGEST_LENGTH] = '\0';
}

/* n strings stored stride bytes apart, as a List of String */
static List *
string_list(const char *strings, Size stride, int n)
{
	List	   *l = NIL;

	for (int i = 0; i < n; i++)
		l = lappend(l, makeString(pstrdup(strings + i * stride)));
	return l;
}

/*
 * What members publish on their connections (datagram names, pool
 * registrations): as string_list(), or NIL where none published anything
 */
static List *
published_list(const char *strings, Size stride, int n)
{
	for (int i = 0; i < n; i++)
		if (strings[i * stride] != '\0')
			return string_list(strings, stride, n);
	return NIL;
}

/* ... and back: one string per member, stride bytes apart, or none */
static void
read_published(List *l, int nmembers, const char *what, char *strings,
			   Size stride)
{
	ListCell   *lc;

	if (l != NIL && list_length(l) != nmembers)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment names %d %s for %d members",
						list_length(l), what, nmembers)));
	foreach(lc, l)
		strlcpy(strings + foreach_current_index(lc) * stride,
				strVal(lfirst(lc)), stride);
}

char *
rx_fragment_encode(RxFragmentMsg *msg)
{
	List	   *body;
	char	   *text;
	char		sig[2 * PG_SHA256_DIGEST_LENGTH + 1];

	require_cluster_key();
	body = list_make5(makeString(RX_FRAGMENT_MAGIC),
					  makeString(psprintf(UINT64_FORMAT, msg->query_id)),
					  makeString(psprintf(UINT64_FORMAT, msg->token)),
					  makeInteger(msg->coordinator),
					  makeInteger(msg->instrument_options));
	body = lappend(body, string_list(msg->fabric_addrs[0], RX_FABRIC_ADDR_LEN, msg->nmembers));
	body = lappend(body, string_list(msg->member_names[0], NAMEDATALEN, msg->nmembers));
	/* a plan, or the text of a query that the member plans itself */
	body = lappend(body, msg->sql != NULL ? (void *) makeString(msg->sql)
				   : (void *) msg->stmt);
	body = lappend(body, msg->relnames);
	body = lappend(body, msg->rolenames);
	body = lappend(body, msg->index_oids);
	body = lappend(body, msg->index_names);
	body = lappend(body, msg->param_ids);
	body = lappend(body, msg->param_values);
	body = lappend(body, msg->guc_names);
	body = lappend(body, msg->guc_values);
	body = lappend(body, msg->extern_values);
	body = lappend(body, msg->designs);
	body = lappend(body, makeString(psprintf(INT64_FORMAT, msg->xact_start)));
	body = lappend(body, makeString(psprintf(INT64_FORMAT, msg->stmt_start)));
	body = lappend(body, msg->colnames);
	body = lappend(body, makeString(msg->rolename));
	body = lappend(body, makeString(psprintf(UINT64_FORMAT, msg->nonce)));
	body = lappend(body, makeString(psprintf(INT64_FORMAT, msg->expires)));
	body = lappend(body, makeInteger(msg->coordinator_pid));
	body = lappend(body, msg->snapshots);
	body = lappend(body, makeString(msg->query_text ? msg->query_text : ""));
	body = lappend(body, msg->param_sets);
	/* the datagram endpoints' raw names and the pool registrations */
	body = lappend(body, published_list(msg->dgram_names[0], RX_FABRIC_NAME_LEN,
										msg->nmembers));
	body = lappend(body, published_list(msg->pool_regs[0], RX_POOL_REG_LEN,
										msg->nmembers));
	text = psprintf("%s %s\n%s", RX_FRAGMENT_MAGIC,
					rx_extension_version(false), nodeToString(body));
	sign(text, strlen(text), sig);
	return psprintf("%s:%s", sig, text);
}

static uint64
parse_uint64(Node *n)
{
	return strtou64(strVal(n), NULL, 10);
}

RxFragmentMsg *
rx_fragment_decode(const char *text)
{
	const char *colon = strchr(text, ':');
	char		sig[2 * PG_SHA256_DIGEST_LENGTH + 1];
	int			diff = 0;
	const char *header;
	const char *newline;
	char	   *version;
	const char *local_version;
	List	   *body;
	RxFragmentMsg *msg;
	List	   *addrs,
			   *names;
	int			i;
	ListCell   *lc;

	require_cluster_key();
	if (colon == NULL || colon - text != 2 * PG_SHA256_DIGEST_LENGTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("malformed plan fragment"),
				 errdetail("The fragment does not start with a signature.")));
	sign(colon + 1, strlen(colon + 1), sig);
	/* compare in constant time */
	for (i = 0; i < 2 * PG_SHA256_DIGEST_LENGTH; i++)
		diff |= sig[i] ^ text[i];
	if (diff != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("plan fragment signature does not match"),
				 errdetail("The fragment was not signed with this member's rdma_exchange.cluster_key."),
				 errhint("Set the same rdma_exchange.cluster_key on every member.")));

	header = colon + 1;
	newline = strchr(header, '\n');
	if (newline == NULL || strncmp(header, RX_FRAGMENT_MAGIC " ",
								   strlen(RX_FRAGMENT_MAGIC " ")) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment of an unknown format"),
				 errhint("Every member must run the same version of rdma_exchange.")));
	version = pnstrdup(header + strlen(RX_FRAGMENT_MAGIC " "),
					   newline - header - strlen(RX_FRAGMENT_MAGIC " "));
	local_version = rx_extension_version(false);
	if (strcmp(version, local_version) != 0)
		local_version = rx_extension_version(true);
	if (strcmp(version, local_version) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the coordinator has rdma_exchange version %s, this member has version %s",
						version, local_version),
				 errhint("Install the same version on every member (ALTER EXTENSION rdma_exchange UPDATE).")));

	body = (List *) stringToNode(newline + 1);
	if (!IsA(body, List) || list_length(body) != 30 ||
		!IsA(linitial(body), String) ||
		strcmp(strVal(linitial(body)), RX_FRAGMENT_MAGIC) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment of an unknown format"),
				 errhint("Every member must run the same version of rdma_exchange.")));

	msg = palloc0(sizeof(RxFragmentMsg));
	msg->query_id = parse_uint64(list_nth(body, 1));
	msg->token = parse_uint64(list_nth(body, 2));
	msg->coordinator = intVal(list_nth(body, 3));
	msg->instrument_options = intVal(list_nth(body, 4));
	addrs = (List *) list_nth(body, 5);
	names = (List *) list_nth(body, 6);
	msg->nmembers = list_length(addrs);
	if (msg->nmembers > RX_MAX_MEMBERS || list_length(names) != msg->nmembers)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment names %d members", msg->nmembers)));
	i = 0;
	foreach(lc, addrs)
		strlcpy(msg->fabric_addrs[i++], strVal(lfirst(lc)), RX_FABRIC_ADDR_LEN);
	i = 0;
	foreach(lc, names)
		strlcpy(msg->member_names[i++], strVal(lfirst(lc)), NAMEDATALEN);
	if (IsA(list_nth(body, 7), String))
		msg->sql = strVal(list_nth(body, 7));
	else
		msg->stmt = castNode(PlannedStmt, list_nth(body, 7));
	msg->relnames = (List *) list_nth(body, 8);
	msg->rolenames = (List *) list_nth(body, 9);
	msg->index_oids = (List *) list_nth(body, 10);
	msg->index_names = (List *) list_nth(body, 11);
	msg->param_ids = (List *) list_nth(body, 12);
	msg->param_values = (List *) list_nth(body, 13);
	msg->guc_names = (List *) list_nth(body, 14);
	msg->guc_values = (List *) list_nth(body, 15);
	msg->extern_values = (List *) list_nth(body, 16);
	msg->designs = (List *) list_nth(body, 17);
	msg->xact_start = strtoi64(strVal(list_nth(body, 18)), NULL, 10);
	msg->stmt_start = strtoi64(strVal(list_nth(body, 19)), NULL, 10);
	msg->colnames = (List *) list_nth(body, 20);
	msg->rolename = strVal(list_nth(body, 21));
	msg->nonce = parse_uint64(list_nth(body, 22));
	msg->expires = strtoi64(strVal(list_nth(body, 23)), NULL, 10);
	msg->coordinator_pid = intVal(list_nth(body, 24));
	msg->snapshots = (List *) list_nth(body, 25);
	msg->query_text = strVal(list_nth(body, 26));
	msg->param_sets = (List *) list_nth(body, 27);
	read_published((List *) list_nth(body, 28), msg->nmembers,
				   "datagram endpoints", msg->dgram_names[0], RX_FABRIC_NAME_LEN);
	read_published((List *) list_nth(body, 29), msg->nmembers,
				   "pool registrations", msg->pool_regs[0], RX_POOL_REG_LEN);
	if (msg->snapshots != NIL && list_length(msg->snapshots) != msg->nmembers)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("plan fragment carries %d snapshots for %d members",
						list_length(msg->snapshots), msg->nmembers)));
	return msg;
}
