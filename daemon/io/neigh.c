/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The neighbour cache (neigh.h): a chained hash per plane, a queue of questions, and the
 * rtnetlink messages that carry them, built and parsed with libmnl.
 */
#include "neigh.h"

#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

#define QUEUE_CAP (MRC_MAX_PLANES * MRCD_NEIGH_PER_PLANE)
#define USABLE_STATES (NUD_REACHABLE | NUD_PERMANENT | NUD_NOARP)
#define UNCONFIRMED_STATES (NUD_STALE | NUD_DELAY | NUD_PROBE)

_Static_assert(MRCD_NEIGH_PER_PLANE <= 256 && MRC_MAX_PLANES <= 256,
	       "a question's seq carries (plane << 8) | index in its low 16 bits");
_Static_assert((MRCD_NEIGH_BUCKETS & (MRCD_NEIGH_BUCKETS - 1)) == 0, "buckets: a power of two");

void mrcd_neigh_init(struct mrcd_neigh_cache *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++)
		memset(c->plane[p].bucket, 0xff, sizeof(c->plane[p].bucket));
}

void mrcd_neigh_plane(struct mrcd_neigh_cache *c, unsigned plane, int ifindex, uint8_t family,
		      const uint8_t src[16])
{
	struct mrcd_neigh_plane *p;

	if (plane >= MRC_MAX_PLANES)
		return;
	p = &c->plane[plane];
	p->ifindex = ifindex;
	p->family = family;
	memcpy(p->src, src, 16);
}

static unsigned hash(const uint8_t addr[16])
{
	uint64_t a, b;

	memcpy(&a, addr, 8);
	memcpy(&b, addr + 8, 8);
	a = (a ^ (b * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	return (unsigned)(a >> 32) & (MRCD_NEIGH_BUCKETS - 1);
}

static struct mrcd_neigh *find(struct mrcd_neigh_plane *p, const uint8_t addr[16])
{
	for (uint16_t i = p->bucket[hash(addr)]; i != MRCD_NEIGH_NIL; i = p->e[i].next)
		if (!memcmp(p->e[i].addr, addr, 16))
			return &p->e[i];
	return NULL;
}

static void unchain(struct mrcd_neigh_plane *p, unsigned idx)
{
	uint16_t *link = &p->bucket[hash(p->e[idx].addr)];

	while (*link != idx)
		link = &p->e[*link].next;
	*link = p->e[idx].next;
}

/* A new entry for addr: a free one, or the one looked up longest ago (a new peer on a full
 * plane is rare: the scan is the control path's, not the packets'). */
static struct mrcd_neigh *insert(struct mrcd_neigh_plane *p, const uint8_t addr[16])
{
	unsigned idx = p->n, h = hash(addr);
	struct mrcd_neigh *e;
	bool queued = false;

	if (p->n < MRCD_NEIGH_PER_PLANE) {
		p->n++;
	} else {
		idx = 0;
		for (unsigned i = 1; i < MRCD_NEIGH_PER_PLANE; i++)
			if (p->e[i].used_ns < p->e[idx].used_ns)
				idx = i;
		unchain(p, idx);
		queued = p->e[idx].queued; /* its place in the queue is the new entry's now */
	}
	e = &p->e[idx];
	memset(e, 0, sizeof(*e));
	memcpy(e->addr, addr, 16);
	e->in_use = true;
	e->queued = queued;
	e->next = p->bucket[h];
	p->bucket[h] = (uint16_t)idx;
	return e;
}

/* The entry's next question goes into the queue (at most once there). */
static void enqueue(struct mrcd_neigh_cache *c, unsigned plane, unsigned idx)
{
	struct mrcd_neigh *e = &c->plane[plane].e[idx];

	if (e->queued)
		return;
	e->queued = true;
	c->queue[(c->q_head + c->q_len++) % QUEUE_CAP] = (uint16_t)(plane << 8 | idx);
}

const uint8_t *mrcd_neigh_mac(struct mrcd_neigh_cache *c, unsigned plane,
			      const uint8_t addr[16], uint64_t now)
{
	struct mrcd_neigh_plane *p;
	struct mrcd_neigh *e;

	if (plane >= MRC_MAX_PLANES || !c->plane[plane].ifindex)
		return NULL;
	p = &c->plane[plane];
	e = find(p, addr);
	if (!e)
		e = insert(p, addr);
	e->used_ns = now;
	if (now >= e->check_ns && !e->queued &&
	    (!e->seq || now - e->asked_ns >= MRCD_NEIGH_ANSWER_NS)) {
		/* due, and no question waiting or in flight (or that one went unanswered) */
		e->ask = MRCD_NEIGH_ASK_ROUTE;
		e->seq = 0;
		enqueue(c, plane, (unsigned)(e - p->e));
	}
	if (e->nudge) {
		e->nudge = false;
		return NULL;
	}
	return e->usable ? e->mac : NULL;
}

/* RTM_GETROUTE: the route the kernel would take to e->addr from the plane's address out of its
 * interface; or RTM_GETNEIGH: the neighbour entry of e->hop on that interface. */
static size_t build(const struct mrcd_neigh_plane *p, const struct mrcd_neigh *e, uint8_t *buf)
{
	struct nlmsghdr *n = mnl_nlmsg_put_header(buf);
	bool v4 = p->family == MRC_AF_INET;
	unsigned alen = v4 ? 4 : 16, off = v4 ? 12 : 0;

	n->nlmsg_flags = NLM_F_REQUEST;
	n->nlmsg_seq = e->seq;
	if (e->ask == MRCD_NEIGH_ASK_ROUTE) {
		struct rtmsg *r = mnl_nlmsg_put_extra_header(n, sizeof(*r));

		n->nlmsg_type = RTM_GETROUTE;
		r->rtm_family = v4 ? AF_INET : AF_INET6;
		r->rtm_dst_len = (unsigned char)(alen * 8);
		mnl_attr_put(n, RTA_DST, alen, e->addr + off);
		mnl_attr_put(n, RTA_SRC, alen, p->src + off);
		mnl_attr_put_u32(n, RTA_OIF, (uint32_t)p->ifindex);
	} else {
		struct ndmsg *nd = mnl_nlmsg_put_extra_header(n, sizeof(*nd));

		n->nlmsg_type = RTM_GETNEIGH;
		nd->ndm_family = v4 ? AF_INET : AF_INET6;
		nd->ndm_ifindex = p->ifindex;
		mnl_attr_put(n, NDA_DST, alen, e->hop + off);
	}
	return n->nlmsg_len;
}

size_t mrcd_neigh_request(struct mrcd_neigh_cache *c, void *buf, size_t cap, uint64_t now)
{
	if (cap < MRCD_NEIGH_REQUEST_MAX)
		return 0;
	memset(buf, 0, MRCD_NEIGH_REQUEST_MAX);
	while (c->q_len) {
		uint16_t v = c->queue[c->q_head];
		struct mrcd_neigh_plane *p = &c->plane[v >> 8];
		struct mrcd_neigh *e = &p->e[v & 0xff];

		c->q_head = (c->q_head + 1) % QUEUE_CAP;
		c->q_len--;
		e->queued = false;
		if (!e->in_use || e->ask == MRCD_NEIGH_ASK_NONE)
			continue;
		if (++c->generation == 0)
			c->generation = 1; /* seq 0 means no question */
		e->seq = (uint32_t)c->generation << 16 | v;
		e->asked_ns = now;
		return build(p, e, buf);
	}
	return 0;
}

/* The answer's attributes by type, up to max (the rest ignored). */
struct attrs {
	const struct nlattr **tb;
	unsigned max;
};

static int keep_attr(const struct nlattr *a, void *data)
{
	struct attrs *at = data;

	if (mnl_attr_get_type(a) <= at->max)
		at->tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

static void attrs(const struct nlmsghdr *h, size_t hdr_len, const struct nlattr **tb,
		  unsigned max)
{
	struct attrs at = { tb, max };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	mnl_attr_parse(h, (unsigned)hdr_len, keep_attr, &at);
}

static void on_route(struct mrcd_neigh_cache *c, const struct mrcd_neigh_plane *p,
		     struct mrcd_neigh *e, const struct nlmsghdr *h, uint64_t now)
{
	const struct nlattr *tb[RTA_MAX + 1];
	unsigned alen = p->family == MRC_AF_INET ? 4 : 16;

	attrs(h, sizeof(struct rtmsg), tb, RTA_MAX);
	if (tb[RTA_OIF] && mnl_attr_get_payload_len(tb[RTA_OIF]) == sizeof(uint32_t) &&
	    mnl_attr_get_u32(tb[RTA_OIF]) != (uint32_t)p->ifindex) {
		/* the kernel would send it elsewhere: not this plane's to do */
		e->usable = false;
		e->ask = MRCD_NEIGH_ASK_NONE;
		e->check_ns = now + MRCD_NEIGH_NO_ROUTE_NS;
		return;
	}
	if (tb[RTA_GATEWAY] && mnl_attr_get_payload_len(tb[RTA_GATEWAY]) == alen) {
		if (alen == 4)
			mrc_addr_from_v4(e->hop, mnl_attr_get_payload(tb[RTA_GATEWAY]));
		else
			memcpy(e->hop, mnl_attr_get_payload(tb[RTA_GATEWAY]), 16);
	} else {
		memcpy(e->hop, e->addr, 16);
	}
	e->ask = MRCD_NEIGH_ASK_LINK;
	enqueue(c, (unsigned)(p - c->plane), (unsigned)(e - p->e));
}

static void on_neighbour(struct mrcd_neigh *e, const struct nlmsghdr *h, uint64_t now)
{
	const struct nlattr *tb[NDA_MAX + 1];
	const struct ndmsg *nd = mnl_nlmsg_get_payload(h);

	attrs(h, sizeof(*nd), tb, NDA_MAX);
	e->ask = MRCD_NEIGH_ASK_NONE;
	if ((nd->ndm_state & (USABLE_STATES | UNCONFIRMED_STATES)) && tb[NDA_LLADDR] &&
	    mnl_attr_get_payload_len(tb[NDA_LLADDR]) == 6) {
		memcpy(e->mac, mnl_attr_get_payload(tb[NDA_LLADDR]), 6);
		e->usable = true;
		/* known but unconfirmed: the next datagram goes by the UDP socket, the kernel's
		 * reason to confirm it (or learn that it changed); frames carry it meanwhile */
		e->nudge = !(nd->ndm_state & USABLE_STATES);
		e->check_ns = now + MRCD_NEIGH_RECHECK_NS;
	} else {
		/* being resolved: the UDP socket's sends make the kernel resolve it */
		e->usable = false;
		e->check_ns = now + MRCD_NEIGH_RETRY_NS;
	}
}

/* Which error does not matter: no route, or no neighbour entry yet. */
static void on_error(struct mrcd_neigh *e, uint64_t now)
{
	bool no_route = e->ask == MRCD_NEIGH_ASK_ROUTE;

	e->usable = false;
	e->ask = MRCD_NEIGH_ASK_NONE;
	e->check_ns = now + (no_route ? MRCD_NEIGH_NO_ROUTE_NS : MRCD_NEIGH_RETRY_NS);
}

/* One answer: to the question in flight it names, or ignored. */
static void take(struct mrcd_neigh_cache *c, const struct nlmsghdr *h, uint64_t now)
{
	unsigned plane = (h->nlmsg_seq >> 8) & 0xff, idx = h->nlmsg_seq & 0xff;
	struct mrcd_neigh_plane *p;
	struct mrcd_neigh *e;
	size_t need;

	if (!h->nlmsg_seq || plane >= MRC_MAX_PLANES || idx >= MRCD_NEIGH_PER_PLANE) {
		c->answers_ignored++;
		return;
	}
	p = &c->plane[plane];
	e = &p->e[idx];
	need = h->nlmsg_type == NLMSG_ERROR    ? sizeof(struct nlmsgerr)
	       : h->nlmsg_type == RTM_NEWROUTE ? sizeof(struct rtmsg)
	       : h->nlmsg_type == RTM_NEWNEIGH ? sizeof(struct ndmsg)
					       : SIZE_MAX;
	if (!e->in_use || e->seq != h->nlmsg_seq || need == SIZE_MAX ||
	    mnl_nlmsg_get_payload_len(h) < need ||
	    (h->nlmsg_type == RTM_NEWROUTE && e->ask != MRCD_NEIGH_ASK_ROUTE) ||
	    (h->nlmsg_type == RTM_NEWNEIGH && e->ask != MRCD_NEIGH_ASK_LINK)) {
		c->answers_ignored++;
		return;
	}
	e->seq = 0;
	if (h->nlmsg_type == NLMSG_ERROR)
		on_error(e, now);
	else if (h->nlmsg_type == RTM_NEWROUTE)
		on_route(c, p, e, h, now);
	else
		on_neighbour(e, h, now);
}

void mrcd_neigh_answer(struct mrcd_neigh_cache *c, const void *buf, size_t len, uint64_t now)
{
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	/* mnl_nlmsg_ok compares nlmsg_len as an int: a length past 2^31 would pass it */
	for (const struct nlmsghdr *h = buf;
	     left >= (int)sizeof(*h) && h->nlmsg_len <= (unsigned)left && mnl_nlmsg_ok(h, left);
	     h = mnl_nlmsg_next(h, &left))
		take(c, h, now);
}
