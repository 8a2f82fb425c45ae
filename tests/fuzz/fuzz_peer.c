/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for peer discovery (lib/proto/peer.c), driven by a script: each step
 * names a peer (lookup), delivers a DISCOVER or DISCOVER_REPLY whose source, node id,
 * request id and plane records the script chooses (the request id often the one outstanding,
 * so replies get matched), changes the local planes, or advances time and sends what is due.
 *
 * Oracles, beyond "no crash, no sanitizer report":
 *  - the table never holds more peers than its room, nor a peer in an unknown state;
 *  - everything it sends decodes, is a DISCOVER or a DISCOVER_REPLY with our node id, and a
 *    DISCOVER_REPLY goes only to an admitted source;
 *  - a peer is found by the address it was named by.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/peer.h"
#include "fuzz/script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 8
#define LOCAL_NODE 0x1111222233334444ull

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
		if (pkt.opcode == MRC_OP_DISCOVER_REPLY && !admit(NULL, dest.addr))
			abort(); /* an answer to a source outside the peer prefixes */
	}
}

static void deliver(struct mrc_peer_table *t, struct script *s, uint64_t now)
{
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
	mrc_peer_table_recv(t, &pkt, src, (uint16_t)take(s, 2), (uint8_t)(take(s, 1) % 3), now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script s = { data, size };
	struct mrc_peer_callbacks cb = { admit, event };
	struct mrc_peer_table t;
	struct mrc_node_info local;
	uint64_t now = 1000000000ull;

	local_info(&local, 1);
	if (mrc_peer_table_init(&t, &local, CAP, &cb, NULL, take(&s, 8)))
		return 0;
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
		for (unsigned k = 0; k < t.n_peers; k++)
			if (t.peers[k].state > MRC_PEER_UNREACHABLE)
				abort();
	}
	mrc_peer_table_fini(&t);
	return 0;
}
