/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Peer discovery between daemons (SPEC section 12), sans-I/O like the connection engine.
 *
 * An application names one address of its peer (the GID). The daemon asks that address for
 * the peer's planes with DISCOVER and learns every plane address, the peer's port, its largest
 * payload and its node id from DISCOVER_REPLY, so a QP to that peer sprays over all planes.
 * The table answers the DISCOVERs of admitted peers, retransmits unanswered requests,
 * re-announces when the local planes change, and reports a peer whose node id changed (it
 * restarted: every QP bound to it must fail).
 *
 * Addresses are 16 bytes, IPv4 as IPv4-mapped IPv6, as on the wire.
 */
#ifndef METAROCE_PROTO_PEER_H
#define METAROCE_PROTO_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/drop_reasons.h>

#include "auth.h"
#include "codec.h"
#include "random.h"

/* One side's announcement: what DISCOVER and DISCOVER_REPLY carry. */
struct mrc_node_info {
	uint64_t node_id;
	uint16_t udp_port;
	uint16_t max_payload;
	uint8_t n_addrs;
	struct mrc_plane_rec {
		uint8_t family; /* MRC_AF_INET or MRC_AF_INET6 */
		uint8_t plane;
		uint16_t flags; /* MRC_PLANE_F_* */
		uint8_t addr[16];
	} addrs[MRC_MAX_PLANES];
};

enum mrc_peer_state {
	MRC_PEER_DISCOVERING = 0, /* DISCOVER sent, no answer yet */
	MRC_PEER_KNOWN,		  /* its planes are known */
	MRC_PEER_UNREACHABLE,	  /* every retransmission went unanswered */
};

enum mrc_peer_event {
	MRC_PEER_EV_DISCOVERED = 1, /* first answer: its planes are known */
	MRC_PEER_EV_CHANGED,	    /* same node, new planes or drain flags */
	MRC_PEER_EV_RESTARTED,	    /* new node id: fail every QP bound to the old one */
	MRC_PEER_EV_UNREACHABLE,    /* discovery gave up: QPs keep the named plane only */
	MRC_PEER_EV_CONFIRMED,	    /* a change it announced was asked back and found none, or
				     * went unanswered: the record stands */
};

struct mrc_peer {
	enum mrc_peer_state state;
	uint8_t named[16];	    /* the address an application named */
	uint8_t via_plane;	    /* local plane that reaches it */
	uint16_t named_port;	    /* port to ask at (the default until it announces its own) */
	uint32_t request_id;	    /* of the outstanding DISCOVER */
	uint8_t tries;		    /* transmissions of that DISCOVER */
	bool announce;		    /* a DISCOVER is due (new, retry, or re-announcement) */
	bool reply_due;		    /* a DISCOVER_REPLY is due */
	bool confirming;	    /* a change it announced is being asked back: new QPs wait for
				     * the answer, so they bind to the node that gives it */
	uint32_t reply_to;	    /* request id it answers */
	uint8_t reply_addr[16];	    /* where that DISCOVER came from */
	uint16_t reply_port;
	uint8_t reply_plane;
	uint64_t deadline_ns;	    /* next retransmission */
	uint64_t last_reply_ns;	    /* rate limit of our replies to it */
	uint64_t settled_ns;	    /* when its record last stood: recorded, or confirmed */
	bool replied;		    /* last_reply_ns is valid */
	struct mrc_node_info info;  /* valid once KNOWN */
	struct mrc_peer_keys keys;  /* with authentication: bound once KNOWN */
};

struct mrc_peer_callbacks {
	/* May this source ask us (DISCOVER)? SPEC R-123: only configured peer prefixes. */
	bool (*admit)(void *user, const uint8_t addr[16]);
	void (*event)(void *user, unsigned peer, enum mrc_peer_event ev, uint64_t old_node_id);
};

struct mrc_peer_table {
	struct mrc_node_info local;
	struct mrc_peer_callbacks cb;
	void *user;
	struct mrc_peer *peers;
	unsigned n_peers, cap;
	uint64_t retry_ns;	/* first retransmission delay, doubling (default 10 ms) */
	uint8_t max_tries;	/* transmissions in all (default 3) */
	uint64_t reply_gap_ns;	/* at least this between replies to one peer (default 1 ms) */
	struct mrc_prf rng; /* request ids */
	const struct mrc_auth *auth; /* NULL or mode off: discovery unauthenticated */
	uint64_t refused[MRC_DROP_REASON_MAX + 1]; /* refused discovery packets, by enum
						    * mrc_drop_reason */
	uint64_t challenges;	/* unsolicited changes asked back before believed */
	uint64_t rechecks;	/* old records asked back before a new QP bound to them */
};

/* Allocates room for cap peers once. Returns 0 or -ENOMEM / -EINVAL. */
int mrc_peer_table_init(struct mrc_peer_table *t, const struct mrc_node_info *local,
			unsigned cap, const struct mrc_peer_callbacks *cb, void *user,
			uint64_t seed);
void mrc_peer_table_fini(struct mrc_peer_table *t);

/* From now on every DISCOVER* is authenticated under *auth (the caller's memory). */
void mrc_peer_table_set_auth(struct mrc_peer_table *t, const struct mrc_auth *auth);

/*
 * The peer an application names (any of its plane addresses), reached through a local plane.
 * Starts discovery when it is new. Returns its index, -ENOSPC when the table is full,
 * or -EACCES when authentication names no key that may answer at the address.
 */
int mrc_peer_table_lookup(struct mrc_peer_table *t, const uint8_t addr[16], uint8_t via_plane,
			  uint16_t port, uint64_t now_ns);

/*
 * A new QP is about to bind to this peer. A record that has not stood for max_age_ns is asked
 * back first, as its daemon may have restarted since: true when the caller must wait
 * for the answer (the peer is confirming; the settling event comes with it), false when the
 * record may be used now (or the peer is not known: the caller does what it did before).
 */
bool mrc_peer_table_recheck(struct mrc_peer_table *t, unsigned peer, uint64_t max_age_ns,
			    uint64_t now_ns);

/* The local planes or their drain flags changed: every known peer hears it. */
void mrc_peer_table_set_local(struct mrc_peer_table *t, const struct mrc_node_info *local);

/*
 * A decoded DISCOVER or DISCOVER_REPLY from src (the datagram's source address and port) on a
 * local plane. Returns MRC_DROP_NONE or an enum mrc_drop_reason: not admitted,
 * unmatched reply, table full.
 */
int mrc_peer_table_recv(struct mrc_peer_table *t, const struct mrc_packet *pkt,
			const uint8_t src[16], uint16_t src_port, uint8_t plane, uint64_t now_ns);

/* Where a packet written by mrc_peer_table_send goes. */
struct mrc_peer_dest {
	uint8_t addr[16];
	uint16_t port;
	uint8_t plane; /* send from the local address on this plane */
};

/* Writes the next due DISCOVER or DISCOVER_REPLY; false when nothing is due. */
bool mrc_peer_table_send(struct mrc_peer_table *t, void *buf, size_t cap,
			 struct mrc_peer_dest *dest, uint64_t now_ns, size_t *len);

uint64_t mrc_peer_table_next_timeout(const struct mrc_peer_table *t);
void mrc_peer_table_on_timeout(struct mrc_peer_table *t, uint64_t now_ns);

/* The peer that owns this address (named or announced), or -1. */
int mrc_peer_table_find(const struct mrc_peer_table *t, const uint8_t addr[16]);

#endif /* METAROCE_PROTO_PEER_H */
