/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for peer discovery (lib/proto/peer.c), driven by a script: each step
 * names a peer (lookup), delivers a DISCOVER or DISCOVER_REPLY whose source, node id,
 * request id and plane records the script chooses (the request id often the one outstanding,
 * so replies get matched), changes the local planes, or advances time and sends what is due.
 * The script's first byte also picks authentication (SPEC 14.6): off, a cluster key, allowed
 * peers, or both; then each packet is sealed by one of four identities (two trusted, one
 * holding the cluster key but allowed nowhere, one with another cluster key) and its trailer
 * kept, stripped or bent.
 *
 * Oracles, beyond "no crash, no sanitizer report":
 *  - the table never holds more peers than its room, nor a peer in an unknown state;
 *  - everything it sends decodes, is a DISCOVER or a DISCOVER_REPLY with our node id, and a
 *    DISCOVER_REPLY goes only to an admitted source; authenticated, it carries our
 *    public key in its trailer;
 *  - a peer is found by the address it was named by;
 *  - authenticated, a known peer is bound to a key the mode trusts, never another.
 */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/auth.h"
#include "proto/codec.h"
#include "proto/peer.h"
#include "fuzz/script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 8
#define LOCAL_NODE 0x1111222233334444ull

/* Us and four peers: 0 and 1 trusted in every mode, 2 holding the cluster key but allowed
 * nowhere, 3 with another cluster key. Fixed keys: the fuzzer replays exactly. */
#define IDS 4
static struct auth_world {
	bool ready;
	struct mrc_auth us, ids[IDS];
	struct mrc_auth_peer us_allowed[2], id_allows_us[IDS];
} worlds[4]; /* by mode, each made once: X25519 costs more than a whole input */
static struct mrc_auth *us, *ids; /* the input's mode's */

/* A handful of IPv4 addresses, half of them inside the admitted 198.18.0.0/15. */
static void address(uint8_t out[16], unsigned k)
{
	static const uint8_t v4[8][4] = { { 198, 18, 0, 1 }, { 198, 18, 0, 2 }, { 198, 19, 0, 2 },
					  { 198, 19, 7, 9 }, { 10, 0, 0, 1 },	{ 192, 0, 2, 1 },
					  { 0, 0, 0, 0 },    { 255, 255, 255, 255 } };

	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4[k % 8], 4);
}

static bool admit(void *user, const uint8_t addr[16])
{
	(void)user;
	return addr[12] == 198 && (addr[13] & 0xfe) == 18;
}

static void event(void *user, unsigned peer, enum mrc_peer_event ev, uint64_t old_node_id)
{
	(void)user;
	(void)old_node_id;
	if (peer >= CAP || ev < MRC_PEER_EV_DISCOVERED || ev > MRC_PEER_EV_CONFIRMED)
		abort();
}

static void local_info(struct mrc_node_info *info, unsigned planes)
{
	memset(info, 0, sizeof(*info));
	info->node_id = LOCAL_NODE;
	info->udp_port = MRC_UDP_PORT_DEFAULT;
	info->max_payload = 4096;
	info->n_addrs = (uint8_t)(1 + planes % 3);
	for (unsigned i = 0; i < info->n_addrs; i++) {
		info->addrs[i].family = MRC_AF_INET;
		info->addrs[i].plane = (uint8_t)i;
		info->addrs[i].flags = (planes >> 4) & 1 ? MRC_PLANE_F_DRAINED : 0;
		address(info->addrs[i].addr, i);
	}
}

/* What went out: decodable, ours, and answers only to whom we admit. */
static void drain(struct mrc_peer_table *t, uint64_t now)
{
	static uint8_t buf[MRC_WIRE_MAX_PACKET];
	struct mrc_peer_dest dest;
	struct mrc_packet pkt;
	size_t len;

	for (unsigned n = 0; n < 4 * CAP && mrc_peer_table_send(t, buf, sizeof(buf), &dest, now, &len);
	     n++) {
		if (mrc_decode(buf, len, &pkt) != MRC_WIRE_OK ||
		    (pkt.opcode != MRC_OP_DISCOVER && pkt.opcode != MRC_OP_DISCOVER_REPLY) ||
		    pkt.u.discover.node_id != LOCAL_NODE)
			abort();
		if (t->auth && (!pkt.auth || memcmp(mrc_auth_discover_key(&pkt), us->public_key,
						    MRC_AUTH_PUBLIC_KEY_LEN)))
			abort(); /* authenticated, everything we send says who we are */
		if (pkt.opcode == MRC_OP_DISCOVER_REPLY && !admit(NULL, dest.addr))
			abort(); /* an answer to a source outside the peer prefixes */
	}
}

static void identity(struct mrc_auth *a, uint8_t seed_byte, uint8_t cluster_byte)
{
	uint8_t seed[crypto_kx_SEEDBYTES];

	memset(seed, seed_byte, sizeof(seed));
	memset(a, 0, sizeof(*a));
	a->mode = MRC_AUTH_HEADER;
	crypto_kx_seed_keypair(a->public_key, a->secret_key, seed);
	a->has_cluster_key = true;
	memset(a->cluster_key, cluster_byte, sizeof(a->cluster_key));
}

/* Our auth for a mode (1 cluster key, 2 allowed peers, 3 both), and the peers' towards us. */
static void setup_auth(unsigned mode)
{
	struct auth_world *w = &worlds[mode];

	us = &w->us;
	ids = w->ids;
	if (w->ready)
		return;
	if (sodium_init() < 0)
		abort();
	identity(us, 0x51, 0xc1);
	us->has_cluster_key = mode != 2;
	for (unsigned i = 0; i < IDS; i++) {
		identity(&ids[i], (uint8_t)(0x60 + i), i == 3 ? 0xc3 : 0xc1);
		ids[i].has_cluster_key = us->has_cluster_key;
		/* each peer trusts our key from anywhere, so it can seal towards us */
		memcpy(w->id_allows_us[i].public_key, us->public_key, MRC_AUTH_PUBLIC_KEY_LEN);
		w->id_allows_us[i].n_prefixes = 1; /* ::/0 */
		if (mode != 1) {
			ids[i].allowed = &w->id_allows_us[i];
			ids[i].n_allowed = 1;
		}
		if (mrc_auth_init(&ids[i]))
			abort();
	}
	if (mode != 1) {
		for (unsigned i = 0; i < 2; i++) {
			memcpy(w->us_allowed[i].public_key, ids[i].public_key, MRC_AUTH_PUBLIC_KEY_LEN);
			address(w->us_allowed[i].prefixes[0].addr, 0); /* 198.18.0.0/15 */
			w->us_allowed[i].prefixes[0].bits = 96 + 15;
			w->us_allowed[i].n_prefixes = 1;
		}
		us->allowed = w->us_allowed;
		us->n_allowed = 2;
	}
	if (mrc_auth_init(us))
		abort();
	w->ready = true;
}

/* pkt as identity `who` sends it to us, in buf: sealed, or with its trailer bent or gone. */
static size_t seal(struct mrc_packet *pkt, unsigned who, unsigned how, const uint8_t src[16],
		   uint8_t *buf, size_t cap)
{
	struct mrc_peer_keys k;
	size_t len;

	pkt->flags = how % 4 == 3 ? 0 : MRC_F_AUTH;
	if (mrc_encode(pkt, buf, cap - sizeof(struct mrc_discover_auth), &len) != MRC_WIRE_OK)
		return 0;
	if (!pkt->flags)
		return len;
	if (mrc_auth_static_keys(&ids[who], us->public_key, src, &pkt->u.discover, &k))
		abort(); /* every identity allows us everywhere */
	mrc_auth_seal_discover(&ids[who], k.static_tx, buf, len);
	if (how % 4 == 2)
		buf[len + (how >> 2) % sizeof(struct mrc_discover_auth)] ^= 0x20;
	return len + sizeof(struct mrc_discover_auth);
}

static bool trusted(unsigned mode, const uint8_t key[MRC_AUTH_PUBLIC_KEY_LEN])
{
	for (unsigned i = 0; i < (mode == 1 ? 3u : 2u); i++)
		if (!memcmp(key, ids[i].public_key, MRC_AUTH_PUBLIC_KEY_LEN))
			return true;
	return false;
}

static void deliver(struct mrc_peer_table *t, struct script *s, uint64_t now)
{
	static uint8_t buf[2048];
	struct mrc_packet pkt;
	uint8_t src[16];
	unsigned which = (unsigned)take(s, 1);

	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = which & 1 ? MRC_OP_DISCOVER_REPLY : MRC_OP_DISCOVER;
	/* mostly the request outstanding for some peer, so the reply is matched */
	if ((which & 6) && t->n_peers)
		pkt.psn = t->peers[take(s, 1) % t->n_peers].request_id;
	else
		pkt.psn = (uint32_t)take(s, 4);
	pkt.u.discover.node_id = 0x5000 + take(s, 1) % 4;
	pkt.u.discover.udp_port = (uint16_t)(take(s, 1) & 1 ? 4792 : take(s, 2));
	pkt.u.discover.max_payload = (uint16_t)take(s, 2);
	pkt.u.discover.n_addrs = (uint8_t)(take(s, 1) % (MRC_MAX_PLANES + 1));
	for (unsigned i = 0; i < pkt.u.discover.n_addrs; i++) {
		uint8_t b = (uint8_t)take(s, 1);

		pkt.u.discover.addrs[i].family = MRC_AF_INET;
		pkt.u.discover.addrs[i].plane = (uint8_t)(b % MRC_MAX_PLANES);
		pkt.u.discover.addrs[i].flags = b & 0x80 ? MRC_PLANE_F_DRAINED : 0;
		address(pkt.u.discover.addrs[i].addr, b >> 4);
	}
	address(src, (unsigned)take(s, 1));
	if (t->auth) {
		unsigned who = (unsigned)take(s, 1), how = (unsigned)take(s, 1);
		size_t len = seal(&pkt, who % IDS, how, src, buf, sizeof(buf));

		if (!len || mrc_decode(buf, len, &pkt) != MRC_WIRE_OK)
			return;
	}
	mrc_peer_table_recv(t, &pkt, src, (uint16_t)take(s, 2), (uint8_t)(take(s, 1) % 3), now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script s = { data, size };
	struct mrc_peer_callbacks cb = { admit, event };
	struct mrc_peer_table t;
	struct mrc_node_info local;
	uint64_t now = 1000000000ull;

	unsigned mode = (unsigned)take(&s, 1) % 4; /* 0 off, 1 cluster, 2 allowed, 3 both */

	local_info(&local, 1);
	if (mrc_peer_table_init(&t, &local, CAP, &cb, NULL, take(&s, 8)))
		return 0;
	if (mode) {
		setup_auth(mode);
		mrc_peer_table_set_auth(&t, us);
	}
	for (unsigned step = 0; step < 256 && s.left; step++) {
		uint8_t addr[16];
		int i;

		switch (take(&s, 1) % 5) {
		case 0:
			address(addr, (unsigned)take(&s, 1));
			i = mrc_peer_table_lookup(&t, addr, (uint8_t)(take(&s, 1) % 3), 4792, now);
			if (i >= 0 && mrc_peer_table_find(&t, addr) != i)
				abort(); /* named, yet not found by its name */
			break;
		case 1:
		case 2:
			deliver(&t, &s, now);
			break;
		case 3:
			local_info(&local, (unsigned)take(&s, 1));
			mrc_peer_table_set_local(&t, &local);
			break;
		default:
			now += take(&s, 1) << (take(&s, 1) % 24);
			if (mrc_peer_table_next_timeout(&t) <= now)
				mrc_peer_table_on_timeout(&t, now);
			break;
		}
		drain(&t, now);
		if (t.n_peers > CAP)
			abort();
		for (unsigned k = 0; k < t.n_peers; k++) {
			const struct mrc_peer *p = &t.peers[k];

			if (p->state > MRC_PEER_UNREACHABLE)
				abort();
			/* known only under a key the mode trusts */
			if (mode && p->state == MRC_PEER_KNOWN &&
			    (!p->keys.bound || !trusted(mode, p->keys.public_key)))
				abort();
		}
	}
	mrc_peer_table_fini(&t);
	return 0;
}
