/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The next hop's MAC for frames the xdp backend builds itself, learnt from the kernel and never
 * guessed, without ever waiting on it: a cache per plane, looked up per packet through a hash,
 * and the rtnetlink conversation behind it (route, then neighbour) as requests to send and
 * answers to take, whenever the socket is ready. No I/O here and no clock: afxdp.c owns the
 * socket and passes `now`.
 *
 * An address with no MAC yet (being asked, unresolved) gets NULL, and its datagrams go out of
 * the plane's UDP socket, which is what makes the kernel resolve it. A MAC the kernel holds
 * unconfirmed (stale, delaying, probing) is used, but the first datagram after each answer
 * that says so goes by the UDP socket: AF_XDP traffic gives the kernel no reason to confirm a
 * neighbour, or to notice that it changed. Every MAC is asked again after a second, and used
 * meanwhile.
 */
#ifndef METAROCE_DAEMON_IO_NEIGH_H
#define METAROCE_DAEMON_IO_NEIGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/wire.h>

#define MRCD_NEIGH_PER_PLANE 64u   /* peers per plane; a full table recycles its oldest */
#define MRCD_NEIGH_BUCKETS 128u	   /* a power of two */
#define MRCD_NEIGH_RECHECK_NS 1000000000ull /* a usable MAC is asked again after */
#define MRCD_NEIGH_RETRY_NS 1000000ull	    /* an unresolved or unconfirmed one after */
#define MRCD_NEIGH_NO_ROUTE_NS 1000000000ull /* a peer with no route this way after */
#define MRCD_NEIGH_ANSWER_NS 100000000ull   /* a question unanswered this long is asked again */
#define MRCD_NEIGH_REQUEST_MAX 128u	    /* bytes of one request */

enum mrcd_neigh_ask {
	MRCD_NEIGH_ASK_NONE = 0,
	MRCD_NEIGH_ASK_ROUTE, /* RTM_GETROUTE: the next hop toward the peer */
	MRCD_NEIGH_ASK_LINK,  /* RTM_GETNEIGH: that hop's MAC */
};

struct mrcd_neigh {
	uint8_t addr[16]; /* the peer (IPv4-mapped); all zero: a free entry */
	uint8_t hop[16];  /* the gateway toward it, or itself */
	uint8_t mac[6];
	bool in_use;
	bool usable;	   /* frames may carry mac */
	bool nudge;	   /* unconfirmed: the next datagram goes by the UDP socket */
	uint8_t ask;	   /* enum mrcd_neigh_ask: the question to send or in flight */
	bool queued;	   /* waits in the request queue */
	uint32_t seq;	   /* of the question in flight, 0 if none */
	uint64_t asked_ns; /* when it went out */
	uint64_t check_ns; /* ask again from then on */
	uint64_t used_ns;  /* the last lookup: the oldest is recycled */
	uint16_t next;	   /* in its bucket's chain; MRCD_NEIGH_NIL ends it */
};

#define MRCD_NEIGH_NIL UINT16_MAX

struct mrcd_neigh_plane {
	int ifindex;	  /* 0: not set up */
	uint8_t family;	  /* MRC_AF_INET or MRC_AF_INET6 */
	uint8_t src[16];  /* the plane's own address */
	struct mrcd_neigh e[MRCD_NEIGH_PER_PLANE];
	uint16_t bucket[MRCD_NEIGH_BUCKETS];
	unsigned n;
};

struct mrcd_neigh_cache {
	struct mrcd_neigh_plane plane[MRC_MAX_PLANES];
	/* entries with a question to send, first come first asked: (plane << 8) | index */
	uint16_t queue[MRC_MAX_PLANES * MRCD_NEIGH_PER_PLANE];
	unsigned q_head, q_len;
	uint16_t generation; /* the top of each question's seq, so an old answer is known */
	uint64_t answers_ignored; /* answers to no current question (late, or not ours) */
};

void mrcd_neigh_init(struct mrcd_neigh_cache *c);
/* The plane's interface and address; lookups on a plane not set up return NULL. */
void mrcd_neigh_plane(struct mrcd_neigh_cache *c, unsigned plane, int ifindex, uint8_t family,
		      const uint8_t src[16]);

/*
 * The MAC to put in a frame to addr on the plane, or NULL: send it another way. Never waits:
 * what is unknown or due again is queued as a question (mrcd_neigh_request).
 */
const uint8_t *mrcd_neigh_mac(struct mrcd_neigh_cache *c, unsigned plane,
			      const uint8_t addr[16], uint64_t now);

static inline bool mrcd_neigh_want_send(const struct mrcd_neigh_cache *c)
{
	return c->q_len != 0;
}
/* The next question as one rtnetlink request in buf (at least MRCD_NEIGH_REQUEST_MAX bytes);
 * returns its length, or 0 when there is none. It counts as sent. */
size_t mrcd_neigh_request(struct mrcd_neigh_cache *c, void *buf, size_t cap, uint64_t now);
/* What the socket received: any number of rtnetlink messages. */
void mrcd_neigh_answer(struct mrcd_neigh_cache *c, const void *buf, size_t len, uint64_t now);

#endif /* METAROCE_DAEMON_IO_NEIGH_H */
