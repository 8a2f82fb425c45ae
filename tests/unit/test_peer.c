/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* lib/proto/peer.c: discovery between two daemons, wired back to back in memory (SPEC 12). */
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include <metaroce/drop_reasons.h>

#include "proto/peer.h"
#include "suites.h"

#define MS 1000000ull

struct node {
	struct mrc_peer_table t;
	uint8_t addr[2][16]; /* plane 0 and plane 1 */
	int events[8];
	unsigned last_peer;
	uint64_t last_old_node;
	bool confirming_at_event; /* the peer still awaited an answer when its event came */
	bool admit_all;
	struct mrc_auth auth;
	struct mrc_auth_peer allowed[2];
};

static void v4(uint8_t out[16], uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	out[12] = a;
	out[13] = b;
	out[14] = c;
	out[15] = d;
}

static bool admit(void *user, const uint8_t addr[16])
{
	struct node *n = user;

	return n->admit_all || addr[12] == 198; /* 198.18.0.0/15 and friends */
}

static void event(void *user, unsigned peer, enum mrc_peer_event ev, uint64_t old_node_id)
{
	struct node *n = user;

	n->events[ev]++;
	n->last_peer = peer;
	n->last_old_node = old_node_id;
	n->confirming_at_event = n->t.peers[peer].confirming;
}

static void node_info(struct mrc_node_info *info, const struct node *n, uint64_t node_id,
		      uint16_t flags1)
{
	memset(info, 0, sizeof(*info));
	info->node_id = node_id;
	info->udp_port = MRC_UDP_PORT_DEFAULT;
	info->max_payload = 4096;
	info->n_addrs = 2;
	for (unsigned p = 0; p < 2; p++) {
		info->addrs[p].family = MRC_AF_INET;
		info->addrs[p].plane = (uint8_t)p;
		memcpy(info->addrs[p].addr, n->addr[p], 16);
	}
	info->addrs[1].flags = flags1;
}

static void node_init(struct node *n, uint8_t host, uint64_t node_id, unsigned cap)
{
	static const struct mrc_peer_callbacks cb = { admit, event };
	struct mrc_node_info info;

	memset(n, 0, sizeof(*n));
	v4(n->addr[0], 198, 18, 0, host);
	v4(n->addr[1], 198, 19, 0, host);
	node_info(&info, n, node_id, 0);
	ck_assert_int_eq(mrc_peer_table_init(&n->t, &info, cap, &cb, n, node_id), 0);
}

/* Moves every due packet from one node to the other; returns how many moved. `drop` packets
 * are lost on the way. */
static unsigned exchange(struct node *from, struct node *to, uint64_t now, unsigned drop)
{
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	size_t len;
	unsigned moved = 0;

	while (mrc_peer_table_send(&from->t, buf, sizeof(buf), &dest, now, &len)) {
		struct mrc_packet pkt;

		moved++;
		if (drop) {
			drop--;
			continue;
		}
		ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
		ck_assert_uint_eq(dest.port, MRC_UDP_PORT_DEFAULT);
		/* it arrives at `to` from from's address on the plane it was sent on */
		mrc_peer_table_recv(&to->t, &pkt, from->addr[dest.plane], MRC_UDP_PORT_DEFAULT,
				    dest.plane, now);
	}
	return moved;
}

/* a (host 1) named b (host 2) and both know each other, at time 0 */
static void known_pair(struct node *a, struct node *b)
{
	node_init(a, 1, 1, 4);
	node_init(b, 2, 2, 4);
	mrc_peer_table_lookup(&a->t, b->addr[0], 0, 0, 0);
	exchange(a, b, 0, 0);
	exchange(b, a, 0, 0);
}

/* One GID named; both sides end up knowing every plane of the other. */
START_TEST(mrc_peer_table__discovery_round_trip)
{
	struct node a, b;
	int peer;

	node_init(&a, 1, 0xaaaa, 4);
	node_init(&b, 2, 0xbbbb, 4);
	peer = mrc_peer_table_lookup(&a.t, b.addr[1], 1, 0, 0);
	ck_assert_int_eq(peer, 0);
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_DISCOVERING);
	ck_assert_uint_eq(exchange(&a, &b, 0, 0), 1);
	ck_assert_int_eq(b.events[MRC_PEER_EV_DISCOVERED], 1); /* b learns a from its DISCOVER */
	ck_assert_uint_eq(exchange(&b, &a, 0, 0), 1);
	ck_assert_int_eq(a.events[MRC_PEER_EV_DISCOVERED], 1);
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_KNOWN);
	ck_assert_uint_eq(a.t.peers[0].info.node_id, 0xbbbb);
	ck_assert_uint_eq(a.t.peers[0].info.n_addrs, 2);
	/* any plane address of b now finds the same peer */
	ck_assert_int_eq(mrc_peer_table_find(&a.t, b.addr[0]), 0);
	ck_assert_int_eq(mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, 0), 0);
	ck_assert_uint_eq(a.t.n_peers, 1);
	/* nothing more is due */
	ck_assert_uint_eq(exchange(&a, &b, 1 * MS, 0), 0);
	ck_assert_uint_eq(mrc_peer_table_next_timeout(&a.t), UINT64_MAX);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/* A lost DISCOVER goes again after 10 ms with the same request id. */
START_TEST(mrc_peer_table__retransmits_lost_discover)
{
	struct node a, b;
	uint32_t id;

	node_init(&a, 1, 1, 4);
	node_init(&b, 2, 2, 4);
	mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, 0);
	ck_assert_uint_eq(exchange(&a, &b, 0, 1), 1); /* lost */
	id = a.t.peers[0].request_id;
	ck_assert_uint_eq(mrc_peer_table_next_timeout(&a.t), 10 * MS);
	ck_assert_uint_eq(exchange(&a, &b, 9 * MS, 0), 0);
	mrc_peer_table_on_timeout(&a.t, 10 * MS);
	ck_assert_uint_eq(exchange(&a, &b, 10 * MS, 0), 1);
	ck_assert_uint_eq(a.t.peers[0].request_id, id);
	ck_assert_uint_eq(exchange(&b, &a, 10 * MS, 0), 1);
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_KNOWN);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/* Six transmissions, 10 ms apart and doubling, then give up. */
START_TEST(mrc_peer_table__unreachable_after_six_tries)
{
	struct node a, b;
	uint64_t now = 0;

	node_init(&a, 1, 1, 4);
	node_init(&b, 2, 2, 4);
	mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, now);
	for (int i = 0; i < 6; i++) {
		ck_assert_uint_eq(exchange(&a, &b, now, 1), 1);
		now = mrc_peer_table_next_timeout(&a.t);
		mrc_peer_table_on_timeout(&a.t, now);
	}
	/* sent at 0, 10, 30, 70, 150 and 310 ms; the last wait, 320 ms: given up at 630 ms */
	ck_assert_uint_eq(now, 630 * MS);
	ck_assert_uint_eq(mrc_peer_table_next_timeout(&a.t), UINT64_MAX);
	ck_assert_int_eq(a.events[MRC_PEER_EV_UNREACHABLE], 1);
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_UNREACHABLE);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/* A reply matching no outstanding request is dropped; so is a DISCOVER from outside
 * the admitted prefixes, which is never answered. */
START_TEST(mrc_peer_table__stale_reply_and_unadmitted_source)
{
	struct node a, b, c;
	struct mrc_packet pkt;
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	size_t len;

	node_init(&a, 1, 1, 4);
	node_init(&b, 2, 2, 4);
	node_init(&c, 3, 3, 4);
	v4(c.addr[0], 10, 0, 0, 3); /* outside b's admitted prefixes */
	mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, 0);
	ck_assert(mrc_peer_table_send(&a.t, buf, sizeof(buf), &dest, 0, &len));
	ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
	pkt.opcode = MRC_OP_DISCOVER_REPLY;
	pkt.psn ^= 1; /* not the request id */
	ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, b.addr[0], 4792, 0, 0),
			 MRC_DROP_STALE_DISCOVER);
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_DISCOVERING);

	mrc_peer_table_lookup(&c.t, b.addr[0], 0, 0, 0);
	ck_assert(mrc_peer_table_send(&c.t, buf, sizeof(buf), &dest, 0, &len));
	ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
	ck_assert_int_eq(mrc_peer_table_recv(&b.t, &pkt, c.addr[0], 4792, 0, 0),
			 MRC_DROP_NOT_ADMITTED);
	ck_assert_uint_eq(b.t.n_peers, 0);
	ck_assert(!mrc_peer_table_send(&b.t, buf, sizeof(buf), &dest, 0, &len));
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
	mrc_peer_table_fini(&c.t);
}
END_TEST

/* A peer that comes back with a new node id has restarted: the old id is reported so its
 * QPs can be failed, once the peer has answered the question its DISCOVER raised
 * [R-293]. */
START_TEST(mrc_peer_table__restart_reported)
{
	struct node a, b;

	known_pair(&a, &b);
	mrc_peer_table_fini(&b.t);
	node_init(&b, 2, 0x2222, 4); /* restarted daemon */
	mrc_peer_table_lookup(&b.t, a.addr[0], 0, 0, 5 * MS);
	exchange(&b, &a, 5 * MS, 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_RESTARTED], 0); /* not yet: asked back first */
	ck_assert_uint_eq(a.t.challenges, 1);
	ck_assert(a.t.peers[0].confirming); /* new QPs to it wait for the answer */
	ck_assert_uint_eq(exchange(&a, &b, 5 * MS, 0), 2); /* the answer, and the question */
	exchange(&b, &a, 5 * MS, 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_RESTARTED], 1);
	ck_assert_int_eq(a.events[MRC_PEER_EV_CONFIRMED], 0);
	/* settled before the event, so QPs waiting for the answer start in it */
	ck_assert(!a.confirming_at_event);
	ck_assert_uint_eq(a.last_old_node, 2);
	ck_assert_uint_eq(a.t.peers[0].info.node_id, 0x2222);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/*
 * A DISCOVER spoofed from a known peer's address with a new node id or other planes changes
 * nothing: it is asked back, a reply with a guessed request id is dropped, and the real
 * peer's answer says nothing changed.
 */
START_TEST(mrc_peer_table__spoofed_discover_does_not_rebind)
{
	struct node a, b;
	struct mrc_node_info forged;
	struct mrc_packet pkt;
	uint8_t buf[1024];
	size_t len;

	known_pair(&a, &b);
	ck_assert_int_eq(a.events[MRC_PEER_EV_DISCOVERED], 1);
	for (int restart = 1; restart >= 0; restart--) {
		const uint64_t t0 = (restart ? 10 : 30) * MS; /* each round later than the last */
		struct mrc_peer_table spoof;
		static const struct mrc_peer_callbacks cb = { admit, event };
		struct mrc_peer_dest dest;
		struct node c;

		/* the forger: b's address, a new node id, or b's id with a plane moved */
		node_init(&c, 2, restart ? 0x666 : 2, 4);
		node_info(&forged, &c, restart ? 0x666 : 2, 0);
		v4(forged.addrs[1].addr, 198, 19, 6, 6);
		ck_assert_int_eq(mrc_peer_table_init(&spoof, &forged, 4, &cb, &c, 99), 0);
		mrc_peer_table_lookup(&spoof, a.addr[0], 0, 0, t0);
		ck_assert(mrc_peer_table_send(&spoof, buf, sizeof(buf), &dest, t0, &len));
		ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
		ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, b.addr[0], MRC_UDP_PORT_DEFAULT, 0,
						     t0),
				 MRC_DROP_NONE);
		ck_assert_int_eq(a.events[MRC_PEER_EV_RESTARTED] + a.events[MRC_PEER_EV_CHANGED], 0);
		/* a reply it cannot match (the forger never saw the question) is dropped */
		pkt.opcode = MRC_OP_DISCOVER_REPLY;
		pkt.psn = a.t.peers[0].request_id ^ 0x5a5a5a5a;
		ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, b.addr[0], MRC_UDP_PORT_DEFAULT, 0,
						     t0),
				 MRC_DROP_STALE_DISCOVER);
		/* the real b answers the question: nothing changed */
		exchange(&a, &b, t0 + MS, 0);
		exchange(&b, &a, t0 + MS, 0);
		ck_assert_int_eq(a.events[MRC_PEER_EV_RESTARTED] + a.events[MRC_PEER_EV_CHANGED], 0);
		ck_assert_uint_eq(a.t.peers[0].info.node_id, 2);
		ck_assert_mem_eq(a.t.peers[0].info.addrs[1].addr, b.addr[1], 16);
		mrc_peer_table_fini(&spoof);
		mrc_peer_table_fini(&c.t);
	}
	ck_assert_uint_eq(a.t.challenges, 2);
	ck_assert_int_eq(a.events[MRC_PEER_EV_CONFIRMED], 2); /* the record stood, twice */
	ck_assert(!a.t.peers[0].confirming);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/*
 * A record older than the bound is asked back before a new QP binds to it: the peer that
 * answers the same stands (CONFIRMED), one that restarted meanwhile is reported (RESTARTED),
 * and a fresh record is used at once.
 */
START_TEST(mrc_peer_table__old_record_asked_back)
{
	struct node a, b;

	known_pair(&a, &b);
	ck_assert(!mrc_peer_table_recheck(&a.t, 0, 1000 * MS, 500 * MS)); /* fresh */
	ck_assert(mrc_peer_table_recheck(&a.t, 0, 1000 * MS, 2000 * MS));  /* old: asked */
	ck_assert(mrc_peer_table_recheck(&a.t, 0, 1000 * MS, 2000 * MS));  /* still waiting */
	ck_assert_uint_eq(a.t.rechecks, 1);
	exchange(&a, &b, 2000 * MS, 0);
	exchange(&b, &a, 2000 * MS, 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_CONFIRMED], 1);
	ck_assert(!mrc_peer_table_recheck(&a.t, 0, 1000 * MS, 2500 * MS)); /* settled again */
	/* b restarts unseen; the next old-record question finds it */
	mrc_peer_table_fini(&b.t);
	node_init(&b, 2, 0x2222, 4);
	ck_assert(mrc_peer_table_recheck(&a.t, 0, 1000 * MS, 4000 * MS));
	exchange(&a, &b, 4000 * MS, 0);
	exchange(&b, &a, 4000 * MS, 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_RESTARTED], 1);
	ck_assert_uint_eq(a.t.peers[0].info.node_id, 0x2222);
	ck_assert(!a.t.peers[0].confirming);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/* n authenticates with the cluster key ck (and the peers allowed so far). */
static void node_auth(struct node *n, uint8_t ck_byte)
{
	ck_assert_int_ge(sodium_init(), 0);
	n->auth.mode = MRC_AUTH_HEADER;
	crypto_kx_keypair(n->auth.public_key, n->auth.secret_key);
	n->auth.has_cluster_key = true;
	memset(n->auth.cluster_key, ck_byte, MRC_AUTH_KEY_LEN);
	ck_assert_int_eq(mrc_auth_init(&n->auth), 0);
	mrc_peer_table_set_auth(&n->t, &n->auth);
}

/* from's next due packet into to, as if from src; what to made of it. */
static int deliver(struct node *from, struct node *to, const uint8_t src[16], uint64_t now)
{
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	struct mrc_packet pkt;
	size_t len;

	ck_assert(mrc_peer_table_send(&from->t, buf, sizeof(buf), &dest, now, &len));
	ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
	return mrc_peer_table_recv(&to->t, &pkt, src, MRC_UDP_PORT_DEFAULT, dest.plane, now);
}

/* Two holders of the cluster key discover each other and agree on their session keys; the
 * record is bound to the key it came under. */
START_TEST(mrc_peer_table__authenticated_discovery)
{
	struct node a, b;

	node_init(&a, 1, 1, 4);
	node_init(&b, 2, 2, 4);
	node_auth(&a, 0x42);
	node_auth(&b, 0x42);
	ck_assert_int_ge(mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, 0), 0);
	ck_assert_int_eq(deliver(&a, &b, a.addr[0], 0), MRC_DROP_NONE);
	ck_assert_int_eq(deliver(&b, &a, b.addr[0], 0), MRC_DROP_NONE);
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_KNOWN);
	ck_assert_int_eq(b.t.peers[0].state, MRC_PEER_KNOWN);
	ck_assert(a.t.peers[0].keys.bound && b.t.peers[0].keys.bound);
	ck_assert_mem_eq(a.t.peers[0].keys.public_key, b.auth.public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	ck_assert_mem_eq(b.t.peers[0].keys.public_key, a.auth.public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	ck_assert_mem_eq(a.t.peers[0].keys.session_tx, b.t.peers[0].keys.session_rx,
			 MRC_AUTH_KEY_LEN);
	ck_assert_mem_eq(a.t.peers[0].keys.session_rx, b.t.peers[0].keys.session_tx,
			 MRC_AUTH_KEY_LEN);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/* A DISCOVER without a trailer, or under another cluster key, is neither answered nor
 * recorded, nor does it take a slot in the table. */
START_TEST(mrc_peer_table__unauthenticated_discover_refused)
{
	struct node a, b, plain;
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	size_t len;

	node_init(&a, 1, 1, 4);
	node_init(&b, 2, 2, 4);
	node_init(&plain, 1, 3, 4);
	node_auth(&a, 0x42);
	node_auth(&b, 0x43); /* another cluster */
	mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, 0);
	ck_assert_int_eq(deliver(&a, &b, a.addr[0], 0), MRC_DROP_UNAUTHENTICATED);
	mrc_peer_table_lookup(&plain.t, b.addr[0], 0, 0, 0);
	ck_assert_int_eq(deliver(&plain, &b, plain.addr[0], 0), MRC_DROP_UNAUTHENTICATED);
	ck_assert_uint_eq(b.t.n_peers, 0);
	ck_assert(!mrc_peer_table_send(&b.t, buf, sizeof(buf), &dest, 0, &len));
	ck_assert_int_eq(a.t.peers[0].state, MRC_PEER_DISCOVERING);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
	mrc_peer_table_fini(&plain.t);
}
END_TEST

/*
 * Another holder of the cluster key claims b's address to a: asked back, the real b answers
 * and a's record stays bound to b's key. With allowed peers, a key outside its prefixes is
 * refused outright.
 */
START_TEST(mrc_peer_table__another_key_cannot_take_a_peer)
{
	struct node a, b, c;

	node_init(&a, 1, 1, 4);
	node_init(&b, 2, 2, 4);
	node_init(&c, 2, 0x666, 4); /* b's addresses, its own key */
	node_auth(&a, 0x42);
	node_auth(&b, 0x42);
	node_auth(&c, 0x42);
	mrc_peer_table_lookup(&a.t, b.addr[0], 0, 0, 0);
	deliver(&a, &b, a.addr[0], 0);
	deliver(&b, &a, b.addr[0], 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_DISCOVERED], 1);
	mrc_peer_table_lookup(&c.t, a.addr[0], 0, 0, MS);
	ck_assert_int_eq(deliver(&c, &a, b.addr[0], MS), MRC_DROP_NONE); /* taken as a question */
	ck_assert(a.t.peers[0].confirming);
	/* a asks b back; b answers; nothing changed */
	deliver(&a, &b, a.addr[0], 2 * MS); /* a's reply to c's DISCOVER, addressed to "b" */
	exchange(&a, &b, 2 * MS, 0);
	exchange(&b, &a, 2 * MS, 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_RESTARTED], 0);
	ck_assert_int_eq(a.events[MRC_PEER_EV_CONFIRMED], 1);
	ck_assert_mem_eq(a.t.peers[0].keys.public_key, b.auth.public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	ck_assert_uint_eq(a.t.peers[0].info.node_id, 2);

	/* allowed peers: a allows b for b's addresses only, and c for nothing of b's */
	memcpy(a.allowed[0].public_key, b.auth.public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	memcpy(a.allowed[0].prefixes[0].addr, b.addr[0], 16);
	memcpy(a.allowed[0].prefixes[1].addr, b.addr[1], 16);
	a.allowed[0].prefixes[0].bits = a.allowed[0].prefixes[1].bits = 128;
	a.allowed[0].n_prefixes = 2;
	memcpy(a.allowed[1].public_key, c.auth.public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	v4(a.allowed[1].prefixes[0].addr, 198, 18, 0, 3);
	a.allowed[1].prefixes[0].bits = 128;
	a.allowed[1].n_prefixes = 1;
	a.auth.allowed = a.allowed;
	a.auth.n_allowed = 2;
	ck_assert_int_eq(mrc_auth_init(&a.auth), 0);
	mrc_peer_table_lookup(&c.t, a.addr[0], 0, 0, 100 * MS);
	c.t.peers[0].announce = true;
	c.t.peers[0].tries = 0;
	c.t.peers[0].deadline_ns = 0;
	ck_assert_int_eq(deliver(&c, &a, b.addr[0], 100 * MS), MRC_DROP_PEER_KEY);
	ck_assert(!a.t.peers[0].confirming);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
	mrc_peer_table_fini(&c.t);
}
END_TEST

/* Draining a plane is announced to every known peer. */
START_TEST(mrc_peer_table__drain_announced)
{
	struct node a, b;
	struct mrc_node_info info;

	known_pair(&a, &b);
	node_info(&info, &b, 2, MRC_PLANE_F_DRAINED);
	mrc_peer_table_set_local(&b.t, &info);
	ck_assert_uint_eq(exchange(&b, &a, 1 * MS, 0), 1);
	ck_assert_int_eq(a.events[MRC_PEER_EV_CHANGED], 0); /* asked back first */
	ck_assert_uint_eq(exchange(&a, &b, 1 * MS, 0), 2); /* a answers, and asks */
	ck_assert_uint_eq(b.t.peers[0].announce, false);
	ck_assert_uint_eq(exchange(&b, &a, 1 * MS, 0), 1); /* b answers the question */
	ck_assert_int_eq(a.events[MRC_PEER_EV_CHANGED], 1);
	ck_assert_uint_eq(a.t.peers[0].info.addrs[1].flags, MRC_PLANE_F_DRAINED);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
}
END_TEST

/* Replies to one peer are limited to one per millisecond; the table has a bound. */
START_TEST(mrc_peer_table__reply_rate_limit_and_capacity)
{
	struct node a, b, c;
	struct mrc_packet pkt;
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	size_t len;

	node_init(&a, 1, 1, 1);
	node_init(&b, 2, 2, 4);
	node_init(&c, 3, 3, 4);
	mrc_peer_table_lookup(&b.t, a.addr[0], 0, 0, 0);
	ck_assert(mrc_peer_table_send(&b.t, buf, sizeof(buf), &dest, 0, &len));
	ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, b.addr[0], 4792, 0, 100), 0);
	ck_assert(mrc_peer_table_send(&a.t, buf, sizeof(buf), &dest, 100, &len));
	ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, b.addr[0], 4792, 0, 200), 0);
	ck_assert(!mrc_peer_table_send(&a.t, buf, sizeof(buf), &dest, 200, &len));
	ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, b.addr[0], 4792, 0, 2 * MS), 0);
	ck_assert(mrc_peer_table_send(&a.t, buf, sizeof(buf), &dest, 2 * MS, &len));
	/* a has room for one peer: c is refused, and lookups fail cleanly */
	ck_assert_int_eq(mrc_peer_table_recv(&a.t, &pkt, c.addr[0], 4792, 0, 3 * MS),
			 MRC_DROP_PEERS_FULL);
	ck_assert_int_eq(mrc_peer_table_lookup(&a.t, c.addr[0], 0, 0, 3 * MS), -ENOSPC);
	mrc_peer_table_fini(&a.t);
	mrc_peer_table_fini(&b.t);
	mrc_peer_table_fini(&c.t);
}
END_TEST

Suite *peer_suite(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("peer");

	tcase_add_test(tc, mrc_peer_table__discovery_round_trip);
	tcase_add_test(tc, mrc_peer_table__retransmits_lost_discover);
	tcase_add_test(tc, mrc_peer_table__unreachable_after_six_tries);
	tcase_add_test(tc, mrc_peer_table__stale_reply_and_unadmitted_source);
	tcase_add_test(tc, mrc_peer_table__restart_reported);
	tcase_add_test(tc, mrc_peer_table__spoofed_discover_does_not_rebind);
	tcase_add_test(tc, mrc_peer_table__drain_announced);
	tcase_add_test(tc, mrc_peer_table__reply_rate_limit_and_capacity);
	tcase_add_test(tc, mrc_peer_table__old_record_asked_back);
	tcase_add_test(tc, mrc_peer_table__authenticated_discovery);
	tcase_add_test(tc, mrc_peer_table__unauthenticated_discover_refused);
	tcase_add_test(tc, mrc_peer_table__another_key_cannot_take_a_peer);
	suite_add_tcase(s, tc);
	return s;
}
