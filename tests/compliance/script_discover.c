/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wire script's words for peer discovery (SPEC 12): the plane address records of a
 * DISCOVER or DISCOVER_REPLY the suite sends as the peer's node, the address it comes from,
 * and the checks of those the IUT sends: which planes its records name, which are drained,
 * where the packet goes. With auth, the suite's node is a member of the IUT's cluster and
 * tags its DISCOVER* under the cluster key as SPEC 14.6 says (lib/proto/auth.c's primitives,
 * as any implementation may use libsodium's), and checks the IUT's tags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "compliance/script_impl.h"
#include "proto/auth.h"
#include "proto/codec.h"

static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

/* "0,2,3" (or "none") as a set of planes */
static bool plane_list(struct run *run, const char *key, const char *list, uint32_t *set)
{
	char buf[128], *tok, *save;

	*set = 0;
	if (!strcmp(list, "none"))
		return true;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long p = strtoul(tok, &end, 0);

		if (*end || p >= IUT_MAX_PLANES)
			return failf(run, "%s=%s: planes 0..%u, or none", key, list,
				     IUT_MAX_PLANES - 1);
		*set |= 1u << p;
	}
	return true;
}

bool discover_fill(struct run *run, struct mrc_packet *p)
{
	const struct iut_config *net = &run->names.iut; /* the addresses the adapter gave */
	uint32_t records = (1u << run->cfg.n_planes) - 1, drained = 0;
	struct mrc_discover *x = &p->u.discover;
	const char *s;
	unsigned n = 0;

	if ((s = arg(run, "records")) && !plane_list(run, "records", s, &records))
		return false;
	if ((s = arg(run, "drained")) && !plane_list(run, "drained", s, &drained))
		return false;
	for (unsigned plane = 0; plane < IUT_MAX_PLANES; plane++) {
		if (!(records & 1u << plane))
			continue;
		x->addrs[n].family = MRC_AF_INET;
		x->addrs[n].plane = (uint8_t)plane;
		x->addrs[n].flags = drained & 1u << plane ? MRC_PLANE_F_DRAINED : 0;
		memcpy(x->addrs[n++].addr, net->peer_addr[plane], 16);
	}
	x->n_addrs = (uint8_t)n;
	return true;
}

/* The packet's source: the peer's address on its plane, or from=stranger's or neighbour's. */
bool discover_from(struct run *run, struct iut_dgram *d)
{
	const char *s = arg(run, "from");

	if (!s || !strcmp(s, "peer")) {
		memcpy(d->addr, run->names.iut.peer_addr[d->plane % IUT_MAX_PLANES], 16);
		return true;
	}
	if (!strcmp(s, "stranger") || !strcmp(s, "neighbour")) {
		const uint8_t *a = s[0] == 's' ? run->names.iut.stranger_addr
					       : run->names.iut.neighbour_addr;

		static const uint8_t none[16];

		if (!memcmp(a, none, sizeof(none)))
			return failf(run, "from=%s: the adapter named no such address", s);
		memcpy(d->addr, a, 16);
		return true;
	}
	return failf(run, "from=%s: peer, stranger or neighbour", s);
}

/*
 * records=LIST: the packet's records name exactly these planes, once each, each the IUT's
 * address on it as the SPEC writes an IPv4 one (family 4, ::ffff:a.b.c.d);
 * drained=LIST: exactly these carry MRC_PLANE_F_DRAINED.
 */
static bool check_records(struct run *run, const struct mrc_packet *p, const char *key,
			  const char *list)
{
	const struct mrc_discover *x = &p->u.discover;
	uint32_t want, have = 0, flagged = 0;

	if (!plane_list(run, key, list, &want))
		return false;
	for (unsigned i = 0; i < x->n_addrs; i++) {
		unsigned plane = x->addrs[i].plane;

		if (plane >= IUT_MAX_PLANES || have & 1u << plane)
			return failf(run, "record %u names plane %u, %s", i, plane,
				     plane >= IUT_MAX_PLANES ? "beyond 15" : "named before");
		have |= 1u << plane;
		if (x->addrs[i].flags & MRC_PLANE_F_DRAINED)
			flagged |= 1u << plane;
		if (x->addrs[i].family != MRC_AF_INET ||
		    memcmp(x->addrs[i].addr, v4_mapped, sizeof(v4_mapped)))
			return failf(run, "record %u: family %u, not an IPv4-mapped address of "
					  "family 4", i, x->addrs[i].family);
		if (!strcmp(key, "records") &&
		    memcmp(x->addrs[i].addr, run->names.iut.addr[plane], 16))
			return failf(run, "record %u: not the IUT's address on plane %u", i, plane);
	}
	if (!strcmp(key, "records") ? have != want : flagged != want)
		return failf(run, "%s: the %s are 0x%x, expected %s", mrc_opcode_name(p->opcode),
			     !strcmp(key, "records") ? "planes its records name"
						     : "planes flagged drained",
			     !strcmp(key, "records") ? have : flagged, list);
	return true;
}

int discover_expect(struct run *run, const struct mrc_packet *p, const struct iut_dgram *d,
		    const char *key, const char *value)
{
	bool discover = p->opcode == MRC_OP_DISCOVER || p->opcode == MRC_OP_DISCOVER_REPLY;

	if (!strcmp(key, "to")) {
		const uint8_t *want = !strcmp(value, "stranger")
					      ? run->names.iut.stranger_addr
					      : run->names.iut.peer_addr[d->plane % IUT_MAX_PLANES];

		if (strcmp(value, "peer") && strcmp(value, "stranger"))
			return failf(run, "to=%s: peer or stranger", value);
		return !memcmp(d->addr, want, 16) ||
		       failf(run, "%s went to another address than %s's on plane %u",
			     mrc_opcode_name(p->opcode), value, d->plane);
	}
	if (discover && (!strcmp(key, "records") || !strcmp(key, "drained")))
		return check_records(run, p, key, value);
	return -1;
}

/*
 * A node the suite plays, by key=: "member" (the peer, in the cluster), "other" (another
 * member's key pair, the same cluster) or "outsider" (a key pair under another cluster key).
 */
static bool suite_node(struct run *run, const char *who, struct mrc_auth *a)
{
	uint8_t fill = 0x51;

	if (who && strcmp(who, "member") && strcmp(who, "other") && strcmp(who, "outsider"))
		return failf(run, "key=%s: member, other or outsider", who);
	if (who && strcmp(who, "member"))
		fill = who[0] == 'o' && who[1] == 't' ? 0x52 : 0x53;
	*a = (struct mrc_auth){ .mode = MRC_AUTH_HEADER, .has_cluster_key = true };
	memset(a->secret_key, fill, sizeof(a->secret_key));
	memcpy(a->cluster_key, run->names.iut.cluster_key, sizeof(a->cluster_key));
	if (fill == 0x53)
		a->cluster_key[0] ^= 0xff;
	if (sodium_init() < 0 || mrc_auth_public_of(a->secret_key, a->public_key) ||
	    mrc_auth_init(a))
		return failf(run, "the suite cannot make its key pair");
	return true;
}

bool discover_auth_seal(struct run *run, struct iut_dgram *d)
{
	const char *tag = arg(run, "tag");
	static const struct mrc_discover nothing_announced;
	struct mrc_peer_keys k;
	struct mrc_auth a;

	if (tag && !strcmp(tag, "omit"))
		return true;
	if (!suite_node(run, arg(run, "key"), &a))
		return false;
	if (mrc_auth_static_keys(&a, run->names.iut.public_key, d->addr, &nothing_announced, &k))
		return failf(run, "the suite holds no key towards the IUT's public key");
	if ((size_t)d->len + MRC_AUTH_PUBLIC_KEY_LEN + MRC_AUTH_DISCOVER_TAG_LEN > sizeof(d->bytes))
		return failf(run, "no room for the trailer");
	mrc_auth_seal_discover(&a, k.static_tx, d->bytes, d->len);
	d->len += MRC_AUTH_PUBLIC_KEY_LEN + MRC_AUTH_DISCOVER_TAG_LEN;
	if (tag && !strcmp(tag, "wrong"))
		d->bytes[d->len - 1] ^= 0x01;
	return true;
}

bool discover_auth_check(struct run *run, const struct mrc_packet *p)
{
	const uint8_t *key = mrc_auth_discover_key(p);
	struct mrc_peer_keys k;
	struct mrc_auth a;

	if (!(p->flags & MRC_F_AUTH) || !key)
		return failf(run, "%s: no AUTH flag, no trailer", mrc_opcode_name(p->opcode));
	if (memcmp(key, run->names.iut.public_key, MRC_AUTH_PUBLIC_KEY_LEN))
		return failf(run, "%s: under another public key than the IUT's",
			     mrc_opcode_name(p->opcode));
	if (!suite_node(run, NULL, &a) ||
	    mrc_auth_static_keys(&a, key, run->names.iut.addr[0], &p->u.discover, &k))
		return failf(run, "%s: the suite holds no key towards it",
			     mrc_opcode_name(p->opcode));
	return mrc_auth_discover_ok(p, k.static_rx) ||
	       failf(run, "%s: its tag is not right under the cluster's key from the IUT",
		     mrc_opcode_name(p->opcode));
}
