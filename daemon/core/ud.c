/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UD QPs (SPEC 4.8): their states, the datagrams they send (one per send ring entry, to the
 * destination the entry names, each flow on its one hashed path) and the
 * datagrams they receive (checked, placed behind the GRH into the next receive, completed).
 * No engine connection: the rules are lib/proto/ud.c's, the rings and completions the core's.
 */
#include <errno.h>
#include <string.h>

#include "core/internal.h"
#include "proto/bytes.h"
#include "proto/ud.h"

int core_ud_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len)
{
	struct mrc_ctl_ud_qp r;
	int err;
	struct mrcd_qp *qp = core_requested_qp(c, owner, payload, len, &r, sizeof(r),
					       MRC_CTL_QPT_UD, &err);

	if (!qp)
		return err;
	if ((r.state != MRC_CTL_QP_RTR && r.state != MRC_CTL_QP_RTS) || r.reserved[0] ||
	    r.reserved[1] || r.reserved[2])
		return -EINVAL;
	if (qp->state == MRC_CTL_QP_ERR)
		return -EBUSY;
	if (r.state < qp->state)
		return -EINVAL; /* states go forward; back is RESET, a new QP here */
	if (r.state == MRC_CTL_QP_RTS && qp->state != MRC_CTL_QP_RTS)
		qp->ud_seq = r.sq_psn;
	qp->qkey = r.qkey;
	qp->state = r.state;
	core_qp_touch(c, qp); /* sends posted before RTS go now */
	return 0;
}

int core_resolve(struct mrcd_core *c, const uint8_t *payload, size_t len, uint64_t now)
{
	struct mrc_ctl_resolve r;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	return core_is_local_addr(c->cfg, r.dgid) ? 0 : core_discover_addr(c, r.dgid, now);
}

/* --- sending ------------------------------------------------------------------------------ */

/* The planes shared with a node, less those either side drained (all of them if that leaves
 * none: a datagram has no other way). */
static uint32_t shared_planes(const struct mrcd_core *c, const struct mrc_node_info *info)
{
	uint32_t planes = core_shared_planes(c, info, NULL);

	return planes & ~(uint32_t)c->drained_planes ? planes & ~(uint32_t)c->drained_planes
						      : planes;
}

enum core_route core_ud_route(struct mrcd_core *c, struct mrcd_ud_route *rt,
			      const uint8_t dgid[16], bool expired, uint64_t now)
{
	const struct mrc_peer *p;
	int idx;

	if (rt->valid && rt->epoch == c->peers_epoch && !memcmp(rt->dgid, dgid, 16))
		return ROUTE_READY;
	memset(rt, 0, sizeof(*rt));
	memcpy(rt->dgid, dgid, 16);
	rt->epoch = c->peers_epoch;
	if (core_is_local_addr(c->cfg, dgid)) {
		rt->peer = -1;
		rt->planes = shared_planes(c, &c->peers.local);
		rt->port = c->port;
		rt->max_payload = c->peers.local.max_payload;
		rt->valid = true;
		return ROUTE_READY;
	}
	if (!mrcd_config_admits(c->cfg, dgid))
		return ROUTE_NONE;
	idx = mrc_peer_table_find(&c->peers, dgid);
	/* the application skipped ibv_create_ah's resolution, or the table was full */
	if (idx < 0 && (core_discover_addr(c, dgid, now) ||
			(idx = mrc_peer_table_find(&c->peers, dgid)) < 0))
		return ROUTE_NONE;
	p = &c->peers.peers[idx];
	rt->peer = idx;
	if (p->state == MRC_PEER_KNOWN) {
		rt->planes = shared_planes(c, &p->info);
		rt->port = p->info.udp_port;
		rt->max_payload = p->info.max_payload < c->peers.local.max_payload
					  ? p->info.max_payload
					  : c->peers.local.max_payload;
	} else if (c->auth && (p->state == MRC_PEER_UNREACHABLE || expired)) {
		return ROUTE_NONE; /* nothing to authenticate datagrams to it with */
	} else if (p->state == MRC_PEER_UNREACHABLE || expired) {
		/* the address the application named is all there is: the plane that reaches it */
		rt->named = true;
		rt->planes = 1u << p->via_plane;
		rt->port = p->named_port;
		rt->max_payload = c->peers.local.max_payload;
	} else {
		return ROUTE_WAIT;
	}
	rt->valid = rt->planes != 0;
	return rt->valid ? ROUTE_READY : ROUTE_NONE;
}

/* The keys of a route's peer: ourselves (-1), or a peer discovery bound to its key. */
static const struct mrc_peer_keys *ud_keys(const struct mrcd_core *c, int peer)
{
	return peer < 0 ? &c->self_keys : &c->peers.peers[peer].keys;
}

/*
 * A datagram's tag is right under the key of the peer its source address belongs to; sealed
 * (auth = full), *pkt becomes *opened, its payload decrypted into a scratch that lasts until
 * the next datagram is opened.
 */
bool core_ud_authentic(const struct mrcd_core *c, const struct mrc_packet **pkt,
		       const struct mrcd_dgram *g, struct mrc_packet *opened)
{
	static _Thread_local uint8_t plain[MRC_WIRE_MAX_PACKET];
	bool local = core_is_local_addr(c->cfg, g->peer.addr);
	int peer = local ? -1 : mrc_peer_table_find(&c->peers, g->peer.addr);
	const struct mrc_peer_keys *k;

	if (!local && peer < 0)
		return false; /* nobody discovery knows */
	k = ud_keys(c, peer);
	if (!k->bound)
		return false;
	if (c->auth->mode != MRC_AUTH_FULL)
		return mrc_auth_packet_ok(&k->ud_rx, *pkt);
	if ((*pkt)->payload_len > sizeof(plain) || !mrc_auth_open(&k->ud_seal_rx, *pkt, plain))
		return false;
	*opened = **pkt;
	opened->payload = plain;
	*pkt = opened;
	return true;
}

/* The destination's address on plane `plane`, by the route. */
static const uint8_t *route_addr(const struct mrcd_core *c, const struct mrcd_ud_route *rt,
				 uint8_t plane)
{
	const struct mrc_node_info *info;

	if (rt->named)
		return rt->dgid;
	info = rt->peer < 0 ? &c->peers.local : &c->peers.peers[rt->peer].info;
	for (unsigned k = 0; k < info->n_addrs; k++)
		if (info->addrs[k].plane == plane)
			return info->addrs[k].addr;
	return rt->dgid;
}

/* A send entry's scatter list, checked: 0, or the completion status that refuses it. */
static int send_entry_sges(struct mrcd_core *c, const struct mrcd_qp *qp,
			   const struct mrc_sq_entry *e, struct mrc_sge *sge, uint32_t *total)
{
	if ((e->opcode != MRC_SQ_SEND && e->opcode != MRC_SQ_SEND_IMM) ||
	    (e->flags & ~MRC_SQ_F_ALL) || e->num_sge > MRC_RING_MAX_SGE || !e->remote_qpn ||
	    e->remote_qpn > MRC_QPN_MAX || e->ud_reserved)
		return MRC_CQ_LOC_QP_OP_ERR;
	*total = 0;
	for (unsigned i = 0; i < e->num_sge; i++) {
		if (core_local_sge(c, qp, &e->sge[i], false, &sge[i]))
			return MRC_CQ_LOC_PROT_ERR;
		*total += e->sge[i].length;
		if (*total > MRC_WIRE_MAX_PACKET)
			return MRC_CQ_LOC_LEN_ERR;
	}
	return MRC_CQ_SUCCESS;
}

/* The entry at the ring's head is done: its slot goes back, and its completion if asked. */
static void send_done(struct mrcd_core *c, struct mrcd_qp *qp, const struct mrc_sq_entry *e,
		      uint8_t status)
{
	if (status == MRC_CQ_SUCCESS && !(e->flags & MRC_SQ_F_SIGNALED) && !qp->sq_sig_all) {
		mrc_ring_release(&qp->sq, qp->sq.mine);
		return;
	}
	core_complete_now(c, qp, false, e->wr_id, qp->sq.mine - 1, status, MRC_CQ_SEND);
}

void core_ud_emit(struct mrcd_core *c, const struct mrcd_ud_route *rt,
		  struct mrc_ud_datagram *d, uint32_t flow, uint8_t *buf, size_t cap,
		  struct mrcd_dgram *g)
{
	size_t hdr = sizeof(struct mrc_hdr) + sizeof(struct mrc_ud_ext);
	uint16_t sports[MRCD_SPORTS_PER_PLANE];
	unsigned sport_index = 0, n_sports;
	uint8_t plane = 0;

	mrc_ud_path(flow, rt->planes, MRCD_SPORTS_PER_PLANE, &plane, &sport_index); /* */
	n_sports = c->ops->sports(c->io, MRCD_CONTROL_SHARD, plane, sports,
				   MRCD_SPORTS_PER_PLANE);
	d->auth = c->auth != NULL;
	d->seal = c->auth && c->auth->mode == MRC_AUTH_FULL;
	mrc_ud_encode(d, buf, cap, &hdr);
	*g = (struct mrcd_dgram){ .data = buf, .len = (uint32_t)(hdr + d->payload_len),
				  .plane = plane, .peer_port = rt->port };
	if (d->seal) { /* one counter for all this daemon seals: no nonce twice under a key */
		mrc_auth_seal(&ud_keys(c, rt->peer)->ud_seal_tx,
			      __atomic_fetch_add(&c->sealed, 1, __ATOMIC_RELAXED), buf, hdr,
			      d->payload_len, buf + g->len);
		g->len += sizeof(struct mrc_seal_trailer);
	} else if (c->auth) { /* under the peer pair's key: UD QPs talk to anyone */
		mrc_auth_put_tag(&ud_keys(c, rt->peer)->ud_tx, buf, hdr, buf + g->len);
		g->len += MRC_AUTH_TAG_LEN;
	}
	g->sport = n_sports ? sports[sport_index % n_sports] : 0;
	memcpy(g->peer.addr, route_addr(c, rt, plane), 16);
	g->peer.family = mrc_addr_family(g->peer.addr);
}

bool core_ud_next(struct mrcd_core *c, struct mrcd_qp *qp, uint8_t *buf, size_t cap,
		  struct mrcd_dgram *g, uint64_t now)
{
	struct mrc_sq_entry e;
	struct mrc_sge sge[MRC_RING_MAX_SGE];
	struct mrc_ud_datagram d;
	uint32_t total;
	size_t hdr = sizeof(struct mrc_hdr) + sizeof(struct mrc_ud_ext);
	int got, status;
	enum core_route route;

	if (qp->state != MRC_CTL_QP_RTS)
		return false;
	for (;;) {
		got = mrc_ring_peek(&qp->sq, 0, &e);
		if (got <= 0) {
			if (got < 0)
				core_ring_corrupt(c, qp, "send", now);
			return false;
		}
		status = send_entry_sges(c, qp, &e, sge, &total);
		route = status ? ROUTE_NONE
			       : core_ud_route(c, &qp->ud_route, e.dgid,
					       qp->ud_waiting && now >= qp->resolve_deadline_ns,
					       now);
		if (route == ROUTE_WAIT) {
			if (!qp->ud_waiting) {
				qp->ud_waiting = true;
				qp->resolve_deadline_ns = now + MRCD_RESOLVE_TIMEOUT_NS;
			}
			return false; /* discovery or the deadline brings it back */
		}
		qp->ud_waiting = false;
		mrc_ring_take(&qp->sq, &e);
		/* the path's payload limit, which the transmit slot always holds */
		if (route == ROUTE_READY &&
		    (total > qp->ud_route.max_payload ||
		     hdr + total + sizeof(struct mrc_seal_trailer) > cap))
			status = MRC_CQ_LOC_LEN_ERR; /* */
		if (status) {
			core_log(c, MRCD_DEBUG, "UD QP %u: send %llu refused (status %u)", qp->qpn,
				 (unsigned long long)e.wr_id, status);
			core_qp_error(c, qp, now);
			send_done(c, qp, &e, (uint8_t)status);
			return false;
		}
		if (route == ROUTE_NONE) {
			/* not a destination this daemon may reach: lost, as on any network */
			c->stats.ud_unroutable++;
			send_done(c, qp, &e, MRC_CQ_SUCCESS);
			continue;
		}
		break;
	}
	mrc_sge_copy(sge, e.num_sge, 0, buf + hdr, NULL, total);
	d = (struct mrc_ud_datagram){
		.dst_qpn = e.remote_qpn, .src_qpn = qp->qpn,
		.qkey = mrc_ud_send_qkey(e.remote_qkey, qp->qkey), .psn = qp->ud_seq,
		.tx_ts = (uint32_t)now, .has_imm = e.opcode == MRC_SQ_SEND_IMM,
		.imm = e.opcode == MRC_SQ_SEND_IMM ? load_be32((const uint8_t *)&e.imm) : 0,
		.solicited = e.flags & MRC_SQ_F_SOLICITED, .payload = buf + hdr,
		.payload_len = (uint16_t)total
	};
	qp->ud_seq++;
	core_ud_emit(c, &qp->ud_route, &d, mrc_ud_flow(qp->qpn, e.remote_qpn, e.dgid), buf, cap,
		     g);
	c->stats.ud_tx++;
	send_done(c, qp, &e, MRC_CQ_SUCCESS);
	return true;
}

/* --- receiving ---------------------------------------------------------------------------- */

/* Our address on plane `plane`, where a datagram arrived. */
static const uint8_t *local_addr(const struct mrcd_core *c, uint8_t plane)
{
	for (unsigned i = 0; i < c->cfg->n_planes; i++)
		if (c->cfg->planes[i].index == plane)
			return c->cfg->planes[i].addr.addr;
	return c->cfg->planes[0].addr.addr;
}

static void ud_drop(struct mrcd_core *c, enum mrc_drop_reason why)
{
	c->stats.ud_dropped[why <= MRC_DROP_REASON_MAX ? why : 0]++;
}

void core_ud_rx(struct mrcd_core *c, const struct mrc_packet *pkt, const struct mrcd_dgram *g,
		uint64_t now)
{
	struct mrcd_qp *qp = core_qp_by_num(&c->t, pkt->dst_qpn);
	struct mrc_packet opened;
	struct mrcd_srq *srq;
	struct mrc_ring *ring;
	struct mrc_rq_entry r;
	struct mrc_sge sge[MRC_RING_MAX_SGE];
	struct mrc_cq_entry e = { 0 };
	uint64_t room = 0;
	uint8_t grh[MRC_UD_GRH_LEN];
	enum mrc_drop_reason why;
	bool bad;
	int got;

	if (!qp || qp->type != MRC_CTL_QPT_UD ||
	    (qp->state != MRC_CTL_QP_RTR && qp->state != MRC_CTL_QP_RTS)) {
		ud_drop(c, qp ? MRC_DROP_QP_STATE : MRC_DROP_WRONG_QPN); /* */
		return;
	}
	if (!mrcd_config_admits(c->cfg, g->peer.addr)) {
		ud_drop(c, MRC_DROP_NOT_ADMITTED);
		return;
	}
	if (c->auth && !core_ud_authentic(c, &pkt, g, &opened)) {
		ud_drop(c, MRC_DROP_UNAUTHENTICATED); /* before any field is believed */
		return;
	}
	srq = qp->srq >= 0 ? &c->t.srqs[qp->srq] : NULL;
	ring = srq ? &srq->ring : &qp->rq;
	got = mrc_ring_peek(ring, 0, &r);
	if (got < 0) {
		core_ring_corrupt(c, qp, "receive", now);
		return;
	}
	for (unsigned i = 0; got && i < r.num_sge && i < MRC_RING_MAX_SGE; i++)
		room += r.sge[i].length;
	why = mrc_ud_check(pkt, qp->qkey, got == 1, room); /* */
	if (why != MRC_DROP_NONE) {
		ud_drop(c, why);
		return;
	}
	if ((srq ? core_srq_take(c, srq, &r) : mrc_ring_take(ring, &r)) != 1)
		return; /* the client moved its indices meanwhile: what it peeked is gone */
	bad = r.num_sge > MRC_RING_MAX_SGE;
	for (unsigned i = 0; !bad && i < r.num_sge; i++)
		bad = srq ? core_local_sge_in(c, srq->owner, srq->pd, &r.sge[i], true, &sge[i])
			  : core_local_sge(c, qp, &r.sge[i], true, &sge[i]);
	if (bad) {
		core_log(c, MRCD_NOTICE, "client pid %d: UD QP %u: a receive's buffer is not its, "
			 "QP to error", c->t.client[qp->owner].pid, qp->qpn);
		core_qp_error(c, qp, now);
		core_complete_now(c, qp, true, r.wr_id, ring->mine - 1, MRC_CQ_LOC_PROT_ERR,
				  MRC_CQ_RECV);
		return;
	}
	mrc_ud_grh(grh, g->peer.addr, local_addr(c, g->plane), g->ce ? 3 : 2, g->len);
	mrc_sge_copy(sge, r.num_sge, 0, NULL, grh, sizeof(grh)); /* */
	mrc_sge_copy(sge, r.num_sge, sizeof(grh), NULL, pkt->payload, pkt->payload_len);
	e.wr_id = r.wr_id;
	e.opcode = MRC_CQ_RECV;
	e.byte_len = MRC_UD_GRH_LEN + pkt->payload_len;
	e.src_qp = pkt->u.ud.src_qpn;
	e.sl = mrc_ud_sl(g->peer.addr);
	e.flags = MRC_CQ_F_GRH | (pkt->opcode == MRC_OP_UD_SEND_IMM ? MRC_CQ_F_WITH_IMM : 0) |
		  (pkt->flags & MRC_F_SOLICITED ? MRC_CQ_F_SOLICITED : 0);
	store_be32((uint8_t *)&e.imm, pkt->u.ud.imm); /* the bytes the sender wrote [SPEC 4.1] */
	c->stats.ud_rx++;
	core_complete_entry(c, qp, true, ring->mine - 1, &e); /* */
}
