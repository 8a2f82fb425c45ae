/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * daemon/io/neigh.c: the xdp backend's next-hop cache and its rtnetlink conversation, in
 * virtual time, with the kernel's answers written here as the bytes it would send.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <string.h>

#include "io/neigh.h"
#include "suites.h"

#define IFINDEX 7
#define MS 1000000ull

static const uint8_t gw_mac[6] = { 0x02, 0, 0, 0, 0, 0x99 };

static void v4(uint8_t out[16], const char *dotted)
{
	uint8_t a[4];

	ck_assert_int_eq(inet_pton(AF_INET, dotted, a), 1);
	mrc_addr_from_v4(out, a);
}

static void setup(struct mrcd_neigh_cache *c)
{
	uint8_t src[16];

	mrcd_neigh_init(c);
	v4(src, "198.18.0.1");
	mrcd_neigh_plane(c, 1, IFINDEX, MRC_AF_INET, src);
}

/* The next request, parsed: its type and seq, and the address attribute it asks about. */
struct asked {
	uint16_t type;
	uint32_t seq;
	uint8_t addr[4];
	int oif;
};

static bool next_request(struct mrcd_neigh_cache *c, uint64_t now, struct asked *q)
{
	uint8_t buf[MRCD_NEIGH_REQUEST_MAX] __attribute__((aligned(4)));
	size_t len = mrcd_neigh_request(c, buf, sizeof(buf), now);
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	size_t hdr;
	int left;

	if (!len)
		return false;
	ck_assert_uint_eq(len, n->nlmsg_len);
	ck_assert(n->nlmsg_flags & NLM_F_REQUEST);
	memset(q, 0, sizeof(*q));
	q->type = n->nlmsg_type;
	q->seq = n->nlmsg_seq;
	ck_assert_uint_ne(q->seq, 0);
	ck_assert(q->type == RTM_GETROUTE || q->type == RTM_GETNEIGH);
	hdr = q->type == RTM_GETROUTE ? sizeof(struct rtmsg) : sizeof(struct ndmsg);
	if (q->type == RTM_GETNEIGH) {
		struct ndmsg *nd = NLMSG_DATA(n);

		ck_assert_int_eq(nd->ndm_ifindex, IFINDEX);
		ck_assert_int_eq(nd->ndm_family, AF_INET);
	}
	left = (int)n->nlmsg_len - (int)NLMSG_LENGTH(hdr);
	for (struct rtattr *a = (struct rtattr *)((uint8_t *)NLMSG_DATA(n) + NLMSG_ALIGN(hdr));
	     RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		if ((q->type == RTM_GETROUTE && a->rta_type == RTA_DST) ||
		    (q->type == RTM_GETNEIGH && a->rta_type == NDA_DST)) {
			ck_assert_uint_eq(RTA_PAYLOAD(a), 4);
			memcpy(q->addr, RTA_DATA(a), 4);
		}
		if (q->type == RTM_GETROUTE && a->rta_type == RTA_OIF)
			memcpy(&q->oif, RTA_DATA(a), sizeof(int));
	}
	return true;
}

/* An answer as the kernel writes it: header, family header, attributes. */
struct answer {
	uint8_t buf[512] __attribute__((aligned(4)));
	size_t len;
};

static struct nlmsghdr *begin(struct answer *w, uint16_t type, uint32_t seq, const void *hdr,
			      size_t hdr_len)
{
	struct nlmsghdr *n = (struct nlmsghdr *)(w->buf + w->len);

	memset(n, 0, NLMSG_SPACE(hdr_len));
	n->nlmsg_type = type;
	n->nlmsg_seq = seq;
	n->nlmsg_len = NLMSG_LENGTH(hdr_len);
	memcpy(NLMSG_DATA(n), hdr, hdr_len);
	return n;
}

static void attr(struct nlmsghdr *n, uint16_t type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((uint8_t *)n + NLMSG_ALIGN(n->nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static void end(struct answer *w, struct nlmsghdr *n)
{
	w->len += NLMSG_ALIGN(n->nlmsg_len);
}

static void route_answer(struct answer *w, uint32_t seq, const char *gateway, int oif)
{
	struct rtmsg r = { .rtm_family = AF_INET, .rtm_dst_len = 32 };
	struct nlmsghdr *n = begin(w, RTM_NEWROUTE, seq, &r, sizeof(r));
	uint8_t gw[4];

	attr(n, RTA_OIF, &oif, sizeof(oif));
	if (gateway) {
		ck_assert_int_eq(inet_pton(AF_INET, gateway, gw), 1);
		attr(n, RTA_GATEWAY, gw, 4);
	}
	end(w, n);
}

static void neigh_answer(struct answer *w, uint32_t seq, uint16_t state, const uint8_t *mac)
{
	struct ndmsg nd = { .ndm_family = AF_INET, .ndm_ifindex = IFINDEX, .ndm_state = state };
	struct nlmsghdr *n = begin(w, RTM_NEWNEIGH, seq, &nd, sizeof(nd));

	if (mac)
		attr(n, NDA_LLADDR, mac, 6);
	end(w, n);
}

static void error_answer(struct answer *w, uint32_t seq, int error)
{
	struct nlmsgerr e = { .error = error };

	end(w, begin(w, NLMSG_ERROR, seq, &e, sizeof(e)));
}

static void give(struct mrcd_neigh_cache *c, struct answer *w, uint64_t now)
{
	mrcd_neigh_answer(c, w->buf, w->len, now);
	w->len = 0;
}

/* Unknown: UDP for now, one question, not one per packet; route then neighbour; then the
 * gateway's MAC, which later lookups get without a question. */
START_TEST(mrcd_neigh__resolves_through_the_gateway_without_waiting)
{
	static struct mrcd_neigh_cache c;
	struct answer w = { 0 };
	struct asked q;
	uint8_t peer[16];
	const uint8_t *mac;

	setup(&c);
	v4(peer, "198.19.5.9");
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, 0));
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, 10));
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 0, peer, 10)); /* a plane not set up */
	ck_assert(next_request(&c, 10, &q));
	ck_assert(!next_request(&c, 10, &(struct asked){ 0 }));
	ck_assert_uint_eq(q.type, RTM_GETROUTE);
	ck_assert_int_eq(q.oif, IFINDEX);
	ck_assert_mem_eq(q.addr, peer + 12, 4);
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, 20));
	ck_assert(!mrcd_neigh_want_send(&c)); /* asked already */
	route_answer(&w, q.seq, "198.18.0.254", IFINDEX);
	give(&c, &w, 30);
	ck_assert(next_request(&c, 30, &q));
	ck_assert_uint_eq(q.type, RTM_GETNEIGH);
	ck_assert_mem_eq(q.addr, ((uint8_t[]){ 198, 18, 0, 254 }), 4);
	neigh_answer(&w, q.seq, NUD_REACHABLE, gw_mac);
	give(&c, &w, 40);
	mac = mrcd_neigh_mac(&c, 1, peer, 50);
	ck_assert_ptr_nonnull(mac);
	ck_assert_mem_eq(mac, gw_mac, 6);
	ck_assert(!mrcd_neigh_want_send(&c));
	ck_assert_uint_eq(c.answers_ignored, 0);
}
END_TEST

/* After a second the MAC is asked again and used meanwhile; a stale answer sends one datagram
 * by the UDP socket; a neighbour the kernel lost sends them all there until it is back. */
START_TEST(mrcd_neigh__rechecks_and_drops_an_unconfirmed_mac)
{
	static struct mrcd_neigh_cache c;
	struct answer w = { 0 };
	struct asked q;
	uint8_t peer[16];
	uint64_t t = 0;

	setup(&c);
	v4(peer, "198.18.0.2");
	mrcd_neigh_mac(&c, 1, peer, t);
	ck_assert(next_request(&c, t, &q));
	route_answer(&w, q.seq, NULL, IFINDEX);
	give(&c, &w, t);
	ck_assert(next_request(&c, t, &q));
	ck_assert_mem_eq(q.addr, peer + 12, 4); /* on link: the peer is its own next hop */
	neigh_answer(&w, q.seq, NUD_REACHABLE, gw_mac);
	give(&c, &w, t);
	t += MRCD_NEIGH_RECHECK_NS - 1;
	ck_assert_ptr_nonnull(mrcd_neigh_mac(&c, 1, peer, t));
	ck_assert(!mrcd_neigh_want_send(&c));
	t += 1;
	ck_assert_ptr_nonnull(mrcd_neigh_mac(&c, 1, peer, t)); /* due, and still used */
	ck_assert(next_request(&c, t, &q));
	ck_assert_uint_eq(q.type, RTM_GETROUTE);
	route_answer(&w, q.seq, NULL, IFINDEX);
	give(&c, &w, t);
	ck_assert(next_request(&c, t, &q));
	neigh_answer(&w, q.seq, NUD_STALE, gw_mac);
	give(&c, &w, t);
	/* one datagram by the UDP socket, the kernel's reason to confirm it; then the MAC */
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, t));
	ck_assert_ptr_nonnull(mrcd_neigh_mac(&c, 1, peer, t));
	ck_assert(!mrcd_neigh_want_send(&c));
	/* gone from the kernel's table: UDP until it is resolved again */
	t += MRCD_NEIGH_RECHECK_NS;
	ck_assert_ptr_nonnull(mrcd_neigh_mac(&c, 1, peer, t));
	ck_assert(next_request(&c, t, &q));
	route_answer(&w, q.seq, NULL, IFINDEX);
	give(&c, &w, t);
	ck_assert(next_request(&c, t, &q));
	error_answer(&w, q.seq, -ENOENT);
	give(&c, &w, t);
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, t));
	/* asked again after a millisecond, not at every packet */
	ck_assert(!mrcd_neigh_want_send(&c));
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, t + MRCD_NEIGH_RETRY_NS));
	ck_assert(mrcd_neigh_want_send(&c));
}
END_TEST

/* No route (an error, or a route out of another interface): no question for a second. A
 * question never answered is asked again. Answers to nothing current are ignored. */
START_TEST(mrcd_neigh__no_route_lost_answers_and_strangers)
{
	static struct mrcd_neigh_cache c;
	struct answer w = { 0 };
	struct asked q, q2;
	uint8_t a[16], b[16];
	uint64_t t = 0;

	setup(&c);
	v4(a, "198.18.0.2");
	v4(b, "198.18.0.3");
	mrcd_neigh_mac(&c, 1, a, t);
	ck_assert(next_request(&c, t, &q));
	error_answer(&w, q.seq, -ENETUNREACH);
	error_answer(&w, q.seq, -ENETUNREACH); /* the same again: not a current question */
	give(&c, &w, t);
	ck_assert_uint_eq(c.answers_ignored, 1);
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, a, t + MRCD_NEIGH_NO_ROUTE_NS - 1));
	ck_assert(!mrcd_neigh_want_send(&c));
	mrcd_neigh_mac(&c, 1, a, t + MRCD_NEIGH_NO_ROUTE_NS);
	ck_assert(next_request(&c, t, &q));
	route_answer(&w, q.seq, NULL, IFINDEX + 1);
	give(&c, &w, t);
	ck_assert(!mrcd_neigh_want_send(&c));

	mrcd_neigh_mac(&c, 1, b, t);
	ck_assert(next_request(&c, t, &q));
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, b, t + MRCD_NEIGH_ANSWER_NS - 1));
	ck_assert(!mrcd_neigh_want_send(&c));
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, b, t + MRCD_NEIGH_ANSWER_NS));
	ck_assert(next_request(&c, t + MRCD_NEIGH_ANSWER_NS, &q2));
	ck_assert_uint_ne(q.seq, q2.seq);
	/* the late answer to the first question names a question no longer asked */
	route_answer(&w, q.seq, NULL, IFINDEX);
	neigh_answer(&w, 0, NUD_REACHABLE, gw_mac);		  /* not ours: seq 0 */
	neigh_answer(&w, q2.seq, NUD_REACHABLE, gw_mac); /* the wrong kind of answer */
	give(&c, &w, t);
	ck_assert_uint_eq(c.answers_ignored, 4);
	ck_assert(!mrcd_neigh_want_send(&c));
	route_answer(&w, q2.seq, NULL, IFINDEX);
	give(&c, &w, t);
	ck_assert(next_request(&c, t, &q));
	ck_assert_uint_eq(q.type, RTM_GETNEIGH);
}
END_TEST

/* More peers than a plane holds: the one looked up longest ago makes room, the others stay
 * where the hash finds them. Truncated and garbage answers are survived. */
START_TEST(mrcd_neigh__full_table_recycles_and_garbage_is_harmless)
{
	static struct mrcd_neigh_cache c;
	struct answer w = { 0 };
	struct asked q;
	uint8_t peer[16], garbage[300] __attribute__((aligned(4)));
	uint64_t x = 12345;

	setup(&c);
	for (unsigned i = 0; i <= MRCD_NEIGH_PER_PLANE; i++) {
		v4(peer, "198.18.1.0");
		peer[15] = (uint8_t)i;
		mrcd_neigh_mac(&c, 1, peer, i);
		while (next_request(&c, i, &q)) {
			if (q.type == RTM_GETROUTE)
				route_answer(&w, q.seq, NULL, IFINDEX);
			else
				neigh_answer(&w, q.seq, NUD_PERMANENT,
					     (uint8_t[]){ 2, 0, 0, 0, 1, (uint8_t)i });
			give(&c, &w, i);
		}
	}
	ck_assert_uint_eq(c.plane[1].n, MRCD_NEIGH_PER_PLANE);
	for (unsigned i = 1; i <= MRCD_NEIGH_PER_PLANE; i++) {
		const uint8_t *mac;

		peer[15] = (uint8_t)i;
		mac = mrcd_neigh_mac(&c, 1, peer, 100);
		ck_assert_ptr_nonnull(mac);
		ck_assert_uint_eq(mac[5], i);
	}
	peer[15] = 0; /* the oldest, recycled */
	ck_assert_ptr_null(mrcd_neigh_mac(&c, 1, peer, 100));
	for (unsigned round = 0; round < 2000; round++) {
		size_t len = (size_t)(x % sizeof(garbage));

		for (size_t i = 0; i < sizeof(garbage); i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			garbage[i] = (uint8_t)(x >> 56);
		}
		mrcd_neigh_answer(&c, garbage, len, 100);
	}
	while (next_request(&c, 200, &q))
		;
}
END_TEST

Suite *neigh_suite(void)
{
	Suite *s = suite_create("neigh");
	TCase *tc = tcase_create("neigh");

	tcase_add_test(tc, mrcd_neigh__resolves_through_the_gateway_without_waiting);
	tcase_add_test(tc, mrcd_neigh__rechecks_and_drops_an_unconfirmed_mac);
	tcase_add_test(tc, mrcd_neigh__no_route_lost_answers_and_strangers);
	tcase_add_test(tc, mrcd_neigh__full_table_recycles_and_garbage_is_harmless);
	suite_add_tcase(s, tc);
	return s;
}
