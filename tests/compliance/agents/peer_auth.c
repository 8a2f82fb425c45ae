/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "compliance/agents/peer_auth.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "proto/auth.h"
#include "proto/bytes.h"

static struct {
	bool on;
	struct mrc_auth me;
	struct mrc_peer_keys with_iut; /* static keys towards the daemon, once it asked */
	bool iut_known;
} a;

bool peer_auth_open(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(a.me.cluster_key, 1, sizeof(a.me.cluster_key), f) : 0;

	if (f)
		fclose(f);
	if (n != sizeof(a.me.cluster_key) || sodium_init() < 0) {
		errno = f ? EINVAL : errno;
		return false;
	}
	a.me.mode = MRC_AUTH_HEADER;
	a.me.has_cluster_key = true;
	randombytes_buf(a.me.secret_key, sizeof(a.me.secret_key));
	if (mrc_auth_public_of(a.me.secret_key, a.me.public_key) || mrc_auth_init(&a.me)) {
		errno = EINVAL;
		return false;
	}
	a.on = true;
	return true;
}

bool peer_auth_on(void)
{
	return a.on;
}

size_t peer_auth_seal_reply(const struct mrc_packet *ask, const uint8_t iut_addr[16],
			    uint8_t *buf, size_t len)
{
	const uint8_t *key = mrc_auth_discover_key(ask);
	struct mrc_peer_keys k;

	if (!key || mrc_auth_static_keys(&a.me, key, iut_addr, &ask->u.discover, &k))
		return 0; /* not a member's: no answer */
	a.with_iut = k;
	a.iut_known = true;
	mrc_auth_seal_discover(&a.me, k.static_tx, buf, len);
	return len + MRC_AUTH_PUBLIC_KEY_LEN + MRC_AUTH_DISCOVER_TAG_LEN;
}

static void key_bytes(const struct mrc_auth_key *k, uint8_t out[16])
{
	store_le64(out, k->k0);
	store_le64(out + 8, k->k1);
}

bool peer_auth_qp(struct iut_config *c, uint64_t peer_node, uint64_t iut_node)
{
	struct mrc_peer_keys k = a.with_iut;
	struct mrc_auth_key to_iut, from_iut;

	if (!a.iut_known)
		return false;
	mrc_auth_sessions(&k, peer_node, iut_node);
	mrc_auth_qp_keys(&k, c->peer_qpn, c->qpn, &to_iut, &from_iut);
	key_bytes(&to_iut, c->key_to_iut);
	key_bytes(&from_iut, c->key_from_iut);
	c->psn = mrc_auth_initial_psn(&from_iut); /* as secret as the keys */
	c->peer_psn = mrc_auth_initial_psn(&to_iut);
	memcpy(c->cluster_key, a.me.cluster_key, sizeof(c->cluster_key));
	memcpy(c->public_key, k.public_key, sizeof(c->public_key));
	return true;
}

bool peer_auth_cluster(struct iut_config *c, const struct mrc_packet *ask)
{
	const uint8_t *key = mrc_auth_discover_key(ask);

	if (!key)
		return false;
	memcpy(c->cluster_key, a.me.cluster_key, sizeof(c->cluster_key));
	memcpy(c->public_key, key, sizeof(c->public_key));
	return true;
}
