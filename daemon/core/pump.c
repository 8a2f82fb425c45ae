/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pump: each turn, the clients' rings into the engine, the engines' timers, and their
 * packets out in batches, round robin over the QPs so none starves the others, with the
 * local queues' back-pressure honoured; QP-level packets in; path changes to monitors.
 */
#include <string.h>

#include "core/internal.h"

#define MRCD_PUMP_BUDGET 512  /* packets per pump before receive gets a turn */
#define MRCD_TX_RETRY_NS 20000 /* a datagram the local queue refused is tried again after */
#define MRCD_TX_HOLD_NS 2000000u /* a queue that takes nothing for this long is dead ... */
#define MRCD_TX_DEAD_TRIES 64	 /* ... if it was tried this often in that time */
#define MRCD_TX_BACKLOG 16 /* datagrams waiting on refusing queues before the engine waits */

/* Path state changes since the last scan, as monitor events. */
static void report_path_changes(struct mrcd_core *c)
{
	for (unsigned j = 0; j < c->t.n_qps; j++) {
		struct mrcd_qp *qp = &c->t.qps[c->t.active[j]];

		if (!qp->conn)
			continue;
		for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn) && k < MRC_MAX_PATHS; k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);

			if (p->state == qp->path_seen[k] || p->state > 3)
				continue;
			core_event(c, MRCD_INFO, "qp %u path %u plane %u sport %u: %s -> %s", qp->qpn,
				   k, p->plane, p->sport, mrc_ctl_path_state_name(qp->path_seen[k]),
				   mrc_ctl_path_state_name(p->state));
			qp->path_seen[k] = p->state;
		}
	}
}

/* --- packets ---------------------------------------------------------------------------- */

bool core_qp_rx(struct mrcd_core *c, const struct mrc_packet *pkt, const struct mrcd_dgram *g,
		uint64_t now)
{
	struct mrcd_qp *qp = core_qp_by_num(&c->t, pkt->dst_qpn);
	struct mrc_rx_info rx = { .plane = g->plane, .sport = g->sport, .ce = g->ce,
				  .placed = g->placed };

	if (!qp) {
		/* a destroyed QP may still owe its peer an acknowledgement (SPEC 11.4) */
		struct mrcd_lingering *l = mrcd_linger_find(&c->t.lingering,
							    mrcd_qp_slot(pkt->dst_qpn),
							    pkt->dst_qpn);

		if (!l || g->plane >= MRC_MAX_PLANES || !(l->peer_planes >> g->plane & 1) ||
		    memcmp(l->peer_addr[g->plane], g->peer.addr, 16))
			return false;
		mrc_conn_recv_packet(l->conn, &rx, pkt, now);
		return true;
	}
	/* only the peer this QP is connected to, on a plane it has there, may speak to it */
	if (!qp->conn || g->plane >= MRC_MAX_PLANES || !(qp->peer_planes >> g->plane & 1) ||
	    memcmp(qp->peer_addr[g->plane], g->peer.addr, 16))
		return false;
	int why = mrc_conn_recv_packet(qp->conn, &rx, pkt, now);

	if (mrc_conn_state(qp->conn) == MRC_QPS_ERR && qp->state != MRC_CTL_QP_ERR) {
		core_log(c, MRCD_DEBUG,
			 "QP %u: error state after a packet (opcode %u, drop reason %d)", qp->qpn,
			 pkt->opcode, why);
		core_qp_error(c, qp, now);
	}
	return true;
}

/* A datagram its plane's queue refused waits in slot *keep, or is given up to loss recovery
 * when that queue is dead: it took nothing this time, nor for MRCD_TX_HOLD_NS before. */
static void hold_or_give_up(struct mrcd_core *c, unsigned i, unsigned *keep, unsigned plane,
			    bool progressed, uint64_t now)
{
	struct mrcd_tables *t = &c->t;
	uint64_t since = t->tx_held_since_ns[plane];

	/* dead: a while without taking anything, and tried often in that while (a daemon kept
	 * off the CPU comes back to a full queue that is merely slow) */
	if (!progressed && since && now - since >= MRCD_TX_HOLD_NS &&
	    t->tx_refusals[plane] >= MRCD_TX_DEAD_TRIES) {
		c->stats.tx_held_dropped++;
		return;
	}
	if (i != *keep) {
		uint8_t *to = t->tx_buf + (size_t)*keep * c->cfg->mtu;

		memmove(to, t->tx_dgrams[i].data, t->tx_dgrams[i].len);
		t->tx_dgrams[*keep] = t->tx_dgrams[i];
		t->tx_dgrams[*keep].data = to;
	}
	(*keep)++;
}

/*
 * Sends what is queued. A plane whose queue refuses keeps its datagrams, in order, in the
 * first slots; the other planes' go on, and so does the engine until MRCD_TX_BACKLOG wait
 * (then it is back-pressure: nothing new until the queues take some). A queue that took
 * nothing for MRCD_TX_HOLD_NS is dead, not slow: what is offered to it is given up to loss
 * recovery, as a blackholed path's would be, until it takes something again, so it stalls
 * the other planes once, for that long, and not again. False when the engine must wait.
 */
static bool flush_tx(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_tables *t = &c->t;
	uint32_t blocked = 0, progressed = 0, offered = 0;
	unsigned keep = 0, i = 0;

	while (i < t->tx_queued) {
		struct mrcd_dgram *g = &t->tx_dgrams[i];
		unsigned plane = g->plane % MRC_MAX_PLANES, run = 1;
		int k;

		offered |= 1u << plane;
		if (blocked >> plane & 1) {
			hold_or_give_up(c, i++, &keep, plane, progressed >> plane & 1, now);
			continue;
		}
		while (i + run < t->tx_queued && t->tx_dgrams[i + run].plane == g->plane)
			run++;
		k = c->ops->tx(c->io, g, run);
		k = k < 0 ? 0 : k;
		c->stats.tx_datagrams += (unsigned)k;
		if (k)
			progressed |= 1u << plane;
		i += (unsigned)k;
		if ((unsigned)k < run)
			blocked |= 1u << plane; /* datagram i: held or given up next turn */
	}
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++) {
		if (!(offered >> p & 1))
			continue; /* nothing offered: a dead queue stays dead */
		if (!(blocked >> p & 1)) {
			t->tx_held_since_ns[p] = 0;
			t->tx_refusals[p] = 0;
		} else if (progressed >> p & 1 || !t->tx_held_since_ns[p]) {
			t->tx_held_since_ns[p] = now;
			t->tx_refusals[p] = 1;
		} else if (++t->tx_refusals[p] >= MRCD_TX_DEAD_TRIES &&
			   now - t->tx_held_since_ns[p] >= MRCD_TX_HOLD_NS &&
			   now - t->tx_held_logged_ns >= 1000000000ull) {
			core_log(c, MRCD_WARNING, "plane %u: the local queue took nothing for %u ms: "
				 "what is offered to it goes to loss recovery", p,
				 MRCD_TX_HOLD_NS / 1000000);
			t->tx_held_logged_ns = now;
		}
	}
	t->tx_queued = keep;
	if (keep)
		t->tx_retry_ns = now + MRCD_TX_RETRY_NS; /* a qdisc drop has no POLLOUT */
	return keep < MRCD_TX_BACKLOG;
}

/* The program's window follows the engine's: it may only set bits the engine has not passed. */
static void sync_fast_window(struct mrcd_core *c, struct mrcd_qp *qp)
{
	uint32_t base = mrc_conn_rcv_base(qp->conn);

	/* every pump turn: only the base, not mrc_conn_get_info's timers */
	if (base != qp->fast_base) {
		c->fast->qp_advance(c->io, qp->qpn, qp->fast_base, base);
		qp->fast_base = base;
	}
}

enum sent { SENT_NOTHING, SENT_SOME, SENT_BLOCKED };

/*
 * Up to 8 of a connection's packets into the transmit batch, to the peer's address on the
 * plane each goes out of. SENT_BLOCKED: the local queues push back, the pump must stop.
 */
static enum sent send_some(struct mrcd_core *c, struct mrc_conn *conn, uint32_t peer_planes,
			   const uint8_t (*peer_addr)[16], uint16_t peer_port, unsigned *budget,
			   uint64_t now)
{
	struct mrcd_tables *t = &c->t;
	enum sent sent = SENT_NOTHING;
	struct mrc_tx_info tx;
	size_t len;

	for (unsigned k = 0; k < 8 && *budget; k++) {
		uint8_t *buf = t->tx_buf + (size_t)t->tx_queued * c->cfg->mtu;
		struct mrcd_dgram *g = &t->tx_dgrams[t->tx_queued];

		if (!mrc_conn_send(conn, buf, c->cfg->mtu, &tx, now, &len))
			break;
		if (tx.plane >= MRC_MAX_PLANES || !(peer_planes >> tx.plane & 1))
			continue;
		*g = (struct mrcd_dgram){ .data = buf, .len = (uint32_t)len, .plane = tx.plane,
					  .sport = tx.sport, .peer_port = peer_port };
		g->peer.family = mrc_addr_family(peer_addr[tx.plane]);
		memcpy(g->peer.addr, peer_addr[tx.plane], 16);
		(*budget)--;
		sent = SENT_SOME;
		if (++t->tx_queued == MRCD_TX_BATCH && !flush_tx(c, now))
			return SENT_BLOCKED;
	}
	return sent;
}

/*
 * Destroyed QPs still answering their peers (SPEC 11.4): their timers, their few packets
 * (acknowledgements, probe replies, CLOSE), and their end once CLOSED with nothing left to
 * send. False when the local queues push back.
 */
static bool pump_lingering(struct mrcd_core *c, unsigned *budget, uint64_t now)
{
	struct mrcd_linger_table *t = &c->t.lingering;

	for (unsigned i = 0; i < t->n;) {
		struct mrcd_lingering *l = &t->by_slot[t->active[i]];

		if (mrc_conn_next_timeout(l->conn) <= now)
			mrc_conn_on_timeout(l->conn, now);
		if (!*budget)
			return true;
		if (send_some(c, l->conn, l->peer_planes, (const uint8_t(*)[16])l->peer_addr,
			      l->peer_port, budget, now) == SENT_BLOCKED)
			return false;
		/* budget left: send_some stopped because the connection had nothing more (a
		 * CLOSED one owes at most a NAK and a CLOSE) */
		if (mrc_conn_state(l->conn) == MRC_QPS_CLOSED && *budget) {
			mrcd_linger_remove_at(t, i);
			continue;
		}
		i++;
	}
	return true;
}

void core_qps_pump(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_tables *t = &c->t;
	unsigned budget = MRCD_PUMP_BUDGET;
	bool progress = true;

	if (t->n_retired)
		core_reap_retired(c, now);
	if (t->n_notify_pending)
		core_retry_notifications(c);
	if (now >= t->next_path_scan_ns) {
		t->next_path_scan_ns = now + 100000000; /* monitors see path changes within 0.1 s */
		report_path_changes(c);
	}
	if (!t->n_qps && !t->lingering.n)
		return;
	for (unsigned j = 0; j < t->n_qps; j++) {
		struct mrcd_qp *qp = &t->qps[t->active[j]];

		if (qp->cq_overrun && qp->state != MRC_CTL_QP_ERR) {
			/* a completion was lost: like a device, fail the QP rather than let the
			 * application wait for it forever */
			core_log(c, MRCD_WARNING, "client pid %d: QP %u to error: its CQ overran",
				 t->client[qp->owner].pid, qp->qpn);
			core_qp_error(c, qp, now);
		}
		if (qp->state == MRC_CTL_QP_RESOLVING && now >= qp->resolve_deadline_ns) {
			core_log(c, MRCD_WARNING, "QP %u: peer did not answer discovery in time",
				 qp->qpn);
			core_qp_error(c, qp, now);
		}
		core_drain_rings(c, qp, now);
		if (qp->conn && mrc_conn_next_timeout(qp->conn) <= now)
			mrc_conn_on_timeout(qp->conn, now);
		if (qp->conn && mrc_conn_state(qp->conn) == MRC_QPS_ERR &&
		    qp->state != MRC_CTL_QP_ERR)
			core_qp_error(c, qp, now);
		if (qp->fast)
			sync_fast_window(c, qp);
	}
	/* what the local queue refused last time goes first; nothing new until it is out */
	if (t->tx_queued && !flush_tx(c, now)) {
		t->more_to_send = false;
		return;
	}
	/* destroyed QPs first: a few packets each at most (their last ACK, a CLOSE), and the
	 * live QPs' traffic must not keep them from going */
	if (!pump_lingering(c, &budget, now)) {
		t->more_to_send = false;
		return;
	}
	/* round robin, a few packets per QP per turn, so no QP starves the others */
	while (progress && budget) {
		progress = false;
		for (unsigned j = 0; j < t->n_qps && budget; j++) {
			struct mrcd_qp *qp = &t->qps[t->active[j]];

			if (!qp->conn)
				continue;
			switch (send_some(c, qp->conn, qp->peer_planes,
					  (const uint8_t(*)[16])qp->peer_addr, qp->peer_port,
					  &budget, now)) {
			case SENT_BLOCKED:
				t->more_to_send = false;
				return;
			case SENT_SOME:
				progress = true;
				break;
			default:
				break;
			}
		}
	}
	if (t->tx_queued)
		flush_tx(c, now);
	t->more_to_send = !budget;
}

uint64_t core_qps_next_timeout(const struct mrcd_core *c)
{
	const struct mrcd_tables *t = &c->t;
	uint64_t next = UINT64_MAX;

	if (t->more_to_send)
		return 0;
	if (t->tx_queued)
		next = t->tx_retry_ns;
	for (unsigned j = 0; j < t->n_qps; j++) {
		const struct mrcd_qp *qp = &t->qps[t->active[j]];
		uint64_t at = UINT64_MAX;

		if (qp->conn)
			at = mrc_conn_next_timeout(qp->conn);
		else if (qp->state == MRC_CTL_QP_RESOLVING)
			at = qp->resolve_deadline_ns;
		if (at < next)
			next = at;
	}
	for (unsigned j = 0; j < t->lingering.n; j++) {
		const struct mrcd_lingering *l = &t->lingering.by_slot[t->lingering.active[j]];
		uint64_t at = mrc_conn_next_timeout(l->conn);

		if (at < next)
			next = at;
	}
	return next;
}
