/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "peer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <metaroce/drop_reasons.h>

#include "random.h"

#define DEFAULT_RETRY_NS 10000000ull	 /* 10 ms */
/* 10 ms doubling, 6 sends: gives up after 630 ms, past a loaded host's scheduling hiccups
 * (with 3, 70 ms, two busy daemons on two cores fell back to one plane) */
#define DEFAULT_MAX_TRIES 6
#define DEFAULT_REPLY_GAP_NS 1000000ull /* 1 ms */

static uint32_t new_request_id(struct mrc_peer_table *t)
{
	return (uint32_t)mrc_prf_next(&t->rng) | 1; /* never 0 */
}

int mrc_peer_table_init(struct mrc_peer_table *t, const struct mrc_node_info *local,
			unsigned cap, const struct mrc_peer_callbacks *cb, void *user,
			uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	if (!local || local->n_addrs == 0 || local->n_addrs > MRC_MAX_PLANES || !cb || !cb->admit ||
	    !cb->event || cap == 0)
		return -EINVAL;
	t->peers = calloc(cap, sizeof(*t->peers));
	if (!t->peers)
		return -ENOMEM;
	t->local = *local;
	t->cb = *cb;
	t->user = user;
	t->cap = cap;
	t->retry_ns = DEFAULT_RETRY_NS;
	t->max_tries = DEFAULT_MAX_TRIES;
	t->reply_gap_ns = DEFAULT_REPLY_GAP_NS;
	mrc_prf_seed(&t->rng, seed);
	return 0;
}

void mrc_peer_table_set_auth(struct mrc_peer_table *t, const struct mrc_auth *auth)
{
	t->auth = auth && auth->mode != MRC_AUTH_OFF ? auth : NULL;
}

void mrc_peer_table_fini(struct mrc_peer_table *t)
{
	free(t->peers);
	t->peers = NULL;
}

int mrc_peer_table_find(const struct mrc_peer_table *t, const uint8_t addr[16])
{
	for (unsigned i = 0; i < t->n_peers; i++) {
		const struct mrc_peer *p = &t->peers[i];

		if (!memcmp(p->named, addr, 16))
			return (int)i;
		if (p->state != MRC_PEER_KNOWN)
			continue;
		for (unsigned k = 0; k < p->info.n_addrs; k++)
			if (!memcmp(p->info.addrs[k].addr, addr, 16))
				return (int)i;
	}
	return -1;
}

static struct mrc_peer *add_peer(struct mrc_peer_table *t, const uint8_t addr[16],
				 uint8_t plane, uint16_t port)
{
	struct mrc_peer *p;

	if (t->n_peers == t->cap)
		return NULL;
	p = &t->peers[t->n_peers++];
	memset(p, 0, sizeof(*p));
	memcpy(p->named, addr, 16);
	p->via_plane = plane;
	p->named_port = port ? port : MRC_UDP_PORT_DEFAULT;
	return p;
}

static void schedule_announce(struct mrc_peer_table *t, struct mrc_peer *p, uint64_t now_ns)
{
	p->announce = true;
	p->request_id = new_request_id(t);
	p->tries = 0;
	p->deadline_ns = now_ns;
}

int mrc_peer_table_lookup(struct mrc_peer_table *t, const uint8_t addr[16], uint8_t via_plane,
			  uint16_t port, uint64_t now_ns)
{
	int i = mrc_peer_table_find(t, addr);
	struct mrc_peer_keys keys;
	struct mrc_peer *p;

	if (i >= 0)
		return i;
	/* whom we ask must be able to read the question: its key is the one allowed there */
	if (t->auth && mrc_auth_keys_for_address(t->auth, addr, &keys))
		return -EACCES;
	p = add_peer(t, addr, via_plane, port);
	if (!p)
		return -ENOSPC;
	if (t->auth)
		p->keys = keys; /* not bound: the answer binds the key it comes under */
	p->state = MRC_PEER_DISCOVERING;
	schedule_announce(t, p, now_ns); /* */
	return (int)(p - t->peers);
}

bool mrc_peer_table_recheck(struct mrc_peer_table *t, unsigned peer, uint64_t max_age_ns,
			    uint64_t now_ns)
{
	struct mrc_peer *p = &t->peers[peer];

	if (p->state != MRC_PEER_KNOWN)
		return false;
	if (p->confirming)
		return true;
	if (now_ns - p->settled_ns <= max_age_ns)
		return false;
	/* asked like a change it announced: its answer settles the record */
	if (!p->announce)
		schedule_announce(t, p, now_ns);
	p->confirming = true;
	t->rechecks++;
	return true;
}

void mrc_peer_table_set_local(struct mrc_peer_table *t, const struct mrc_node_info *local)
{
	t->local = *local;
	for (unsigned i = 0; i < t->n_peers; i++)
		if (t->peers[i].state == MRC_PEER_KNOWN)
			schedule_announce(t, &t->peers[i], 0); /* */
}

static void info_from_packet(struct mrc_node_info *info, const struct mrc_discover *d)
{
	memset(info, 0, sizeof(*info));
	info->node_id = d->node_id;
	info->udp_port = d->udp_port;
	info->max_payload = d->max_payload;
	info->n_addrs = d->n_addrs;
	for (unsigned i = 0; i < d->n_addrs && i < MRC_MAX_PLANES; i++) {
		info->addrs[i].family = d->addrs[i].family;
		info->addrs[i].plane = d->addrs[i].plane;
		info->addrs[i].flags = d->addrs[i].flags;
		memcpy(info->addrs[i].addr, d->addrs[i].addr, 16);
	}
}

static bool same_planes(const struct mrc_node_info *a, const struct mrc_node_info *b)
{
	if (a->n_addrs != b->n_addrs || a->udp_port != b->udp_port ||
	    a->max_payload != b->max_payload)
		return false;
	for (unsigned i = 0; i < a->n_addrs; i++)
		if (a->addrs[i].family != b->addrs[i].family || a->addrs[i].plane != b->addrs[i].plane ||
		    a->addrs[i].flags != b->addrs[i].flags ||
		    memcmp(a->addrs[i].addr, b->addrs[i].addr, 16))
			return false;
	return true;
}

static bool other_key(const struct mrc_peer *p, const struct mrc_peer_keys *keys)
{
	return keys && p->keys.bound &&
	       memcmp(p->keys.public_key, keys->public_key, MRC_AUTH_PUBLIC_KEY_LEN);
}

/* Whether an announcement says anything new of a known peer: another node id, planes or key. */
static bool changes(const struct mrc_peer *p, const struct mrc_discover *d,
		    const struct mrc_peer_keys *keys)
{
	struct mrc_node_info info;

	info_from_packet(&info, d);
	return info.node_id != p->info.node_id || !same_planes(&info, &p->info) ||
	       other_key(p, keys);
}

/* What a peer told us about itself: first news, a change, or a restart;
 * whether that was news. */
static bool record(struct mrc_peer_table *t, struct mrc_peer *p, const struct mrc_discover *d,
		   const struct mrc_peer_keys *keys, uint64_t now_ns)
{
	struct mrc_node_info info;
	enum mrc_peer_event ev = 0;
	uint64_t old = p->info.node_id;

	p->settled_ns = now_ns;
	info_from_packet(&info, d);
	if (p->state != MRC_PEER_KNOWN)
		ev = MRC_PEER_EV_DISCOVERED;
	else if (info.node_id != p->info.node_id || other_key(p, keys))
		ev = MRC_PEER_EV_RESTARTED; /* a new key is a new peer: its QPs' keys are gone */
	else if (!same_planes(&info, &p->info))
		ev = MRC_PEER_EV_CHANGED;
	if (keys && (!p->keys.bound || ev == MRC_PEER_EV_RESTARTED ||
		     ev == MRC_PEER_EV_DISCOVERED)) {
		/* bound to the key the announcement came under, never to an address */
		p->keys = *keys;
		p->keys.bound = true;
		mrc_auth_sessions(&p->keys, t->local.node_id, info.node_id);
	}
	p->info = info;
	p->state = MRC_PEER_KNOWN;
	if (ev)
		t->cb.event(t->user, (unsigned)(p - t->peers), ev,
			    ev == MRC_PEER_EV_RESTARTED ? old : 0);
	return ev != 0;
}

/* A change asked back is settled by the peer's answer (or its silence): recorded, whose
 * event already tells, or not news, and then the record stands. Cleared before recording, so
 * the QPs waiting for the answer see a settled peer in the event. */
static void answered(struct mrc_peer_table *t, struct mrc_peer *p, const struct mrc_discover *d,
		     const struct mrc_peer_keys *keys, uint64_t now_ns)
{
	bool was_confirming = p->confirming;
	bool news;

	p->confirming = false;
	news = d ? record(t, p, d, keys, now_ns) : false;
	if (was_confirming && !news)
		t->cb.event(t->user, (unsigned)(p - t->peers), MRC_PEER_EV_CONFIRMED, 0);
}

/* A discovery packet refused, counted by why. */
static int refuse(struct mrc_peer_table *t, int why)
{
	t->refused[why <= MRC_DROP_REASON_MAX ? why : 0]++;
	return why;
}

/*
 * Who sent a DISCOVER*: the key its trailer names, allowed for the addresses it sends from and
 * announces, whose tag is right; nothing is believed, stored or answered before.
 */
static int authenticate(const struct mrc_peer_table *t, const struct mrc_packet *pkt,
			const uint8_t src[16], struct mrc_peer_keys *keys)
{
	const uint8_t *key = mrc_auth_discover_key(pkt);

	if (!key)
		return MRC_DROP_UNAUTHENTICATED;
	if (mrc_auth_static_keys(t->auth, key, src, &pkt->u.discover, keys))
		return MRC_DROP_PEER_KEY;
	if (!mrc_auth_discover_ok(pkt, keys->static_rx))
		return MRC_DROP_UNAUTHENTICATED;
	return MRC_DROP_NONE;
}

int mrc_peer_table_recv(struct mrc_peer_table *t, const struct mrc_packet *pkt,
			const uint8_t src[16], uint16_t src_port, uint8_t plane, uint64_t now_ns)
{
	int i = mrc_peer_table_find(t, src);
	struct mrc_peer *p = i >= 0 ? &t->peers[i] : NULL;
	struct mrc_peer_keys keys;
	const struct mrc_peer_keys *authed = t->auth ? &keys : NULL;
	int why;

	if (pkt->opcode == MRC_OP_DISCOVER) {
		if (!t->cb.admit(t->user, src))
			return refuse(t, MRC_DROP_NOT_ADMITTED); /* never answered */
		if (t->auth && (why = authenticate(t, pkt, src, &keys)))
			return refuse(t, why); /* never answered: no answer to whom we cannot name */
		if (!p) {
			p = add_peer(t, src, plane, src_port);
			if (!p)
				return refuse(t, MRC_DROP_PEERS_FULL);
		}
		if (p->state == MRC_PEER_KNOWN && changes(p, &pkt->u.discover, authed)) {
			/* A known peer's new node id or planes are believed only from the answer
			 * to a question of ours, whose request id an off-path sender cannot see:
			 * one spoofed DISCOVER must not fail every QP to it nor move its planes,
			 * nor a replayed one, nor another key holder's. The real peer, restarted,
			 * replanned or rekeyed, answers within a round trip. */
			if (!p->announce)
				schedule_announce(t, p, now_ns);
			p->confirming = true;
			t->challenges++;
		} else {
			record(t, p, &pkt->u.discover, authed, now_ns);
		}
		p->reply_due = true;
		p->reply_to = pkt->psn;
		memcpy(p->reply_addr, src, 16);
		p->reply_port = pkt->u.discover.udp_port;
		p->reply_plane = plane;
		return MRC_DROP_NONE;
	}
	if (pkt->opcode == MRC_OP_DISCOVER_REPLY) {
		/* only an answer to the request we have outstanding */
		if (!p || !p->announce || p->tries == 0 || pkt->psn != p->request_id)
			return refuse(t, MRC_DROP_STALE_DISCOVER);
		if (t->auth && (why = authenticate(t, pkt, src, &keys)))
			return refuse(t, why);
		p->announce = false;
		p->deadline_ns = 0;
		answered(t, p, &pkt->u.discover, authed, now_ns);
		return MRC_DROP_NONE;
	}
	return refuse(t, MRC_DROP_OPCODE_REFUSED);
}

/* A DISCOVER* from us; authenticated, under the static key towards its receiver. */
static bool encode_discover(const struct mrc_peer_table *t, const struct mrc_peer *p,
			    uint8_t opcode, uint32_t id, void *buf, size_t cap, size_t *len)
{
	size_t trailer = t->auth ? sizeof(struct mrc_discover_auth) : 0;
	struct mrc_packet pkt;

	if (cap < trailer)
		return false;
	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = opcode;
	pkt.flags = t->auth ? MRC_F_AUTH : 0;
	pkt.dst_qpn = MRC_QPN_DAEMON;
	pkt.psn = id;
	pkt.u.discover.node_id = t->local.node_id;
	pkt.u.discover.udp_port = t->local.udp_port;
	pkt.u.discover.max_payload = t->local.max_payload;
	pkt.u.discover.n_addrs = t->local.n_addrs;
	for (unsigned i = 0; i < t->local.n_addrs; i++) {
		pkt.u.discover.addrs[i].family = t->local.addrs[i].family;
		pkt.u.discover.addrs[i].plane = t->local.addrs[i].plane;
		pkt.u.discover.addrs[i].flags = t->local.addrs[i].flags;
		memcpy(pkt.u.discover.addrs[i].addr, t->local.addrs[i].addr, 16);
	}
	if (mrc_encode(&pkt, buf, cap - trailer, len) != MRC_WIRE_OK)
		return false;
	if (t->auth) {
		mrc_auth_seal_discover(t->auth, p->keys.static_tx, buf, *len);
		*len += trailer;
	}
	return true;
}

bool mrc_peer_table_send(struct mrc_peer_table *t, void *buf, size_t cap,
			 struct mrc_peer_dest *dest, uint64_t now_ns, size_t *len)
{
	for (unsigned i = 0; i < t->n_peers; i++) {
		struct mrc_peer *p = &t->peers[i];

		if (p->reply_due) {
			p->reply_due = false;
			/* at most one answer per peer per reply_gap */
			if (p->replied && now_ns - p->last_reply_ns < t->reply_gap_ns)
				continue;
			if (!encode_discover(t, p, MRC_OP_DISCOVER_REPLY, p->reply_to, buf, cap,
					     len))
				continue;
			p->replied = true;
			p->last_reply_ns = now_ns;
			memcpy(dest->addr, p->reply_addr, 16);
			dest->port = p->reply_port;
			dest->plane = p->reply_plane;
			return true;
		}
		if (p->announce && now_ns >= p->deadline_ns && p->tries < t->max_tries) {
			if (!encode_discover(t, p, MRC_OP_DISCOVER, p->request_id, buf, cap, len))
				continue;
			p->tries++;
			p->deadline_ns = now_ns + (t->retry_ns << (p->tries - 1));
			memcpy(dest->addr, p->named, 16);
			dest->port = p->state == MRC_PEER_KNOWN ? p->info.udp_port : p->named_port;
			dest->plane = p->via_plane;
			return true;
		}
	}
	return false;
}

uint64_t mrc_peer_table_next_timeout(const struct mrc_peer_table *t)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < t->n_peers; i++) {
		const struct mrc_peer *p = &t->peers[i];

		if (p->announce && p->deadline_ns < next)
			next = p->deadline_ns;
	}
	return next;
}

void mrc_peer_table_on_timeout(struct mrc_peer_table *t, uint64_t now_ns)
{
	for (unsigned i = 0; i < t->n_peers; i++) {
		struct mrc_peer *p = &t->peers[i];

		if (!p->announce || now_ns < p->deadline_ns || p->tries < t->max_tries)
			continue;
		/* the last transmission's wait is over: give up */
		p->announce = false;
		if (p->state == MRC_PEER_DISCOVERING) {
			p->state = MRC_PEER_UNREACHABLE;
			t->cb.event(t->user, i, MRC_PEER_EV_UNREACHABLE, 0);
		}
		answered(t, p, NULL, NULL, now_ns); /* unanswered: what we knew stands */
	}
}
