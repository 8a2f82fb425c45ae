/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pump: each turn, the QPs that have work (sched.h: a doorbell, a packet, a deadline, a
 * state change) take their rings into the engine, run their timers and send their packets
 * in batches, round robin so none starves the others, with the local queues' back-pressure
 * honoured; QPs without work cost nothing. QP-level packets in; path changes to monitors.
 */
#include <string.h>

#include "core/internal.h"

#define MRCD_PUMP_BUDGET 512  /* packets per pump before receive gets a turn */
#define MRCD_TX_RETRY_NS 20000 /* a datagram the local queue refused is tried again after */
#define MRCD_TX_HOLD_NS 2000000u /* a queue that takes nothing for this long is dead ... */
#define MRCD_TX_DEAD_TRIES 64	 /* ... if it was tried this often in that time */
#define MRCD_TX_BACKLOG 16 /* datagrams waiting on refusing queues before the engine waits */

/* A visited QP whose paths changed state is told to monitors at the next report. */
static void note_path_changes(struct mrcd_core *c, struct mrcd_shard *sh, struct mrcd_qp *qp)
{
	if (qp->path_report_listed || !qp->conn)
		return;
	for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn) && k < MRC_MAX_PATHS; k++)
		if (mrc_conn_path(qp->conn, k)->state != qp->path_seen[k]) {
			qp->path_report_listed = true;
			sh->path_report[sh->n_path_report++] = (uint16_t)(qp - c->t.qps);
			return;
		}
}

/* Path states as they stand now, for the QPs whose paths changed since the last report. */
static void report_path_changes(struct mrcd_core *c, struct mrcd_shard *sh)
{
	for (unsigned j = 0; j < sh->n_path_report; j++) {
		struct mrcd_qp *qp = &c->t.qps[sh->path_report[j]];

		qp->path_report_listed = false;
		for (unsigned k = 0; qp->conn && k < mrc_conn_n_paths(qp->conn) && k < MRC_MAX_PATHS;
		     k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);

			if (p->state == qp->path_seen[k] || p->state > 3)
				continue;
			core_event(c, MRCD_INFO, "qp %u path %u plane %u sport %u: %s -> %s", qp->qpn,
				   k, p->plane, p->sport, mrc_ctl_path_state_name(qp->path_seen[k]),
				   mrc_ctl_path_state_name(p->state));
			qp->path_seen[k] = p->state;
		}
	}
	sh->n_path_report = 0;
}

/* --- packets ---------------------------------------------------------------------------- */

/*
 * Whether a packet is this QP's peer's, checked here for a field the core acts on before the
 * engine has seen the packet (a SEND's rsn, which moves SRQ receives into the QP): else a
 * forged SEND could take a shared receive queue's receives from every other QP.
 * The engine checks again (and opens a sealed packet for itself).
 */
static bool peer_sent(const struct mrcd_core *c, const struct mrcd_qp *qp,
		      const struct mrc_packet *pkt)
{
	static _Thread_local uint8_t plain[MRC_WIRE_MAX_PACKET];

	if (!c->auth)
		return true;
	if (c->auth->mode != MRC_AUTH_FULL)
		return mrc_auth_packet_ok(&qp->auth_rx, pkt);
	return pkt->payload_len <= sizeof(plain) && mrc_auth_open(&qp->seal_rx, pkt, plain);
}

/* The engine put the QP in error (its retries ran out, the peer's CLOSE or fatal NAK): the
 * daemon's QP follows, its work flushes, its rdma_cm connection ends. */
static void failed_by_engine(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	if (mrc_conn_state(qp->conn) == MRC_QPS_ERR && qp->state != MRC_CTL_QP_ERR) {
		core_qp_failed_by_transport(c, qp);
		core_qp_error(c, qp, now);
	}
}

bool core_qp_rx(struct mrcd_core *c, struct mrcd_shard *sh, const struct mrc_packet *pkt,
		const struct mrcd_dgram *g, uint64_t now)
{
	struct mrcd_qp *qp = core_qp_by_num(&c->t, pkt->dst_qpn);
	struct mrc_rx_info rx = { .plane = g->plane, .sport = g->sport, .ce = g->ce,
				  .placed = g->placed };

	if (!qp) {
		/* a destroyed QP may still owe its peer an acknowledgement (SPEC 11.4) */
		struct mrcd_lingering *l = mrcd_linger_find(&sh->lingering,
							    mrcd_qp_slot(pkt->dst_qpn),
							    pkt->dst_qpn);

		if (!l || g->plane >= MRC_MAX_PLANES || !(l->peer_planes >> g->plane & 1) ||
		    memcmp(l->peer_addr[g->plane], g->peer.addr, 16))
			return false;
		mrc_conn_recv_packet(l->conn, &rx, pkt, now);
		mrcd_sched_ready(&sh->sched, mrcd_qp_slot(pkt->dst_qpn));
		return true;
	}
	/* only the peer this QP is connected to, on a plane it has there, may speak to it */
	if (!qp->conn || g->plane >= MRC_MAX_PLANES || !(qp->peer_planes >> g->plane & 1) ||
	    memcmp(qp->peer_addr[g->plane], g->peer.addr, 16))
		return false;
	/* the receive ring rings no doorbell (see core_qps_idle): read it when it matters */
	if (mrc_opcode_consumes_receive(pkt->opcode)) {
		if (qp->srq >= 0) {
			/* rsn read, not yet believed: only an authentic packet feeds the QP */
			if (mrc_conn_receives_short(qp->conn, pkt->u.data.rsn) &&
			    peer_sent(c, qp, pkt))
				core_srq_feed(c, qp, pkt->u.data.rsn, now);
		}
		else
			core_drain_receives(c, qp, now);
	}
	int why = mrc_conn_recv_packet(qp->conn, &rx, pkt, now);

	mrcd_sched_ready(&sh->sched, mrcd_qp_slot(qp->qpn));

	if (mrc_conn_state(qp->conn) == MRC_QPS_ERR && qp->state != MRC_CTL_QP_ERR)
		core_log(c, MRCD_DEBUG,
			 "QP %u: error state after a packet (opcode %u, drop reason %d)", qp->qpn,
			 pkt->opcode, why);
	failed_by_engine(c, qp, now);
	return true;
}

/* A datagram its plane's queue refused waits in slot *keep, or is given up to loss recovery
 * when that queue is dead: it took nothing this time, nor for MRCD_TX_HOLD_NS before. */
static void hold_or_give_up(struct mrcd_core *c, struct mrcd_shard *t, unsigned i,
			    unsigned *keep, unsigned plane, bool progressed, uint64_t now)
{
	uint64_t since = t->tx_held_since_ns[plane];

	/* dead: a while without taking anything, and tried often in that while (a daemon kept
	 * off the CPU comes back to a full queue that is merely slow) */
	if (!progressed && since && now - since >= MRCD_TX_HOLD_NS &&
	    t->tx_refusals[plane] >= MRCD_TX_DEAD_TRIES) {
		t->stats.tx_held_dropped++;
		return;
	}
	if (i != *keep) {
		uint8_t *to = t->tx_buf + (size_t)*keep * c->cfg->mtu;

		memmove(to, t->tx_dgrams[i].data, t->tx_dgrams[i].len);
		t->tx_dgrams[*keep] = t->tx_dgrams[i];
		t->tx_dgrams[*keep].data = to;
	}
	/* it waits beyond this turn, and the application's memory may go meanwhile: the
	 * payload moves in behind the headers (the slot holds a whole datagram) */
	{
		struct mrcd_dgram *g = &t->tx_dgrams[*keep];

		if (g->payload) {
			memcpy(g->data + g->len, g->payload, g->payload_len);
			g->len += g->payload_len;
			memcpy(g->data + g->len, g->trailer, g->trailer_len);
			g->len += g->trailer_len;
			g->payload = NULL;
			g->payload_len = 0;
			g->trailer_len = 0;
		}
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
static bool flush_tx(struct mrcd_core *c, struct mrcd_shard *t, uint64_t now)
{
	uint32_t blocked = 0, progressed = 0, offered = 0;
	bool sent[MRCD_TX_BATCH];
	unsigned keep = 0, n = t->tx_queued;

	/* all planes and paths at once: the backend groups them as its sockets and rings want */
	t->stats.tx_datagrams += c->ops->tx(c->io, t->index, t->tx_dgrams, n, sent);
	for (unsigned i = 0; i < n; i++) {
		unsigned plane = t->tx_dgrams[i].plane % MRC_MAX_PLANES;

		offered |= 1u << plane;
		if (sent[i])
			progressed |= 1u << plane;
		else
			blocked |= 1u << plane;
	}
	/* the refused ones move to the front, in order (slot keep <= i is free by then) */
	for (unsigned i = 0; i < n; i++)
		if (!sent[i])
			hold_or_give_up(c, t, i, &keep, t->tx_dgrams[i].plane % MRC_MAX_PLANES,
					progressed >> (t->tx_dgrams[i].plane % MRC_MAX_PLANES) & 1,
					now);
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

enum sent { SENT_ALL, SENT_MORE, SENT_BLOCKED };

#define MRCD_SEND_PER_VISIT 8 /* packets a connection sends before the next one's turn */

/*
 * Up to MRCD_SEND_PER_VISIT of a connection's packets into the transmit batch, to the peer's
 * address on the plane each goes out of. SENT_ALL: it has nothing more now; SENT_MORE: it
 * may have (its turn or the budget ended); SENT_BLOCKED: the local queues push back.
 */
static enum sent send_some(struct mrcd_core *c, struct mrcd_shard *t, struct mrc_conn *conn,
			   uint32_t peer_planes, const uint8_t (*peer_addr)[16],
			   uint16_t peer_port, unsigned *budget, uint64_t now)
{
	struct mrc_tx_info tx;
	size_t len;

	for (unsigned k = 0; k < MRCD_SEND_PER_VISIT; k++) {
		uint8_t *buf = t->tx_buf + (size_t)t->tx_queued * c->cfg->mtu;
		struct mrcd_dgram *g = &t->tx_dgrams[t->tx_queued];

		if (!*budget)
			return SENT_MORE;
		if (!mrc_conn_send(conn, buf, c->cfg->mtu, &tx, now, &len))
			return SENT_ALL;
		if (tx.plane >= MRC_MAX_PLANES || !(peer_planes >> tx.plane & 1))
			continue;
		*g = (struct mrcd_dgram){ .data = buf, .len = (uint32_t)len, .plane = tx.plane,
					  .sport = tx.sport, .peer_port = peer_port,
					  .payload = tx.payload, .payload_len = tx.payload_len,
					  .trailer_len = tx.trailer_len };
		memcpy(g->trailer, tx.trailer, tx.trailer_len);
		g->peer.family = mrc_addr_family(peer_addr[tx.plane]);
		memcpy(g->peer.addr, peer_addr[tx.plane], 16);
		(*budget)--;
		if (++t->tx_queued == MRCD_TX_BATCH && !flush_tx(c, t, now))
			return SENT_BLOCKED;
	}
	return SENT_MORE;
}

/* A UD QP's datagrams into the transmit batch, as send_some does a connection's packets. */
static enum sent send_datagrams(struct mrcd_core *c, struct mrcd_shard *t, struct mrcd_qp *qp,
				unsigned *budget, uint64_t now)
{

	for (unsigned k = 0; k < MRCD_SEND_PER_VISIT; k++) {
		if (!*budget)
			return SENT_MORE;
		if (!core_ud_next(c, qp, t->tx_buf + (size_t)t->tx_queued * c->cfg->mtu,
				  c->cfg->mtu, &t->tx_dgrams[t->tx_queued], now))
			return SENT_ALL;
		(*budget)--;
		if (++t->tx_queued == MRCD_TX_BATCH && !flush_tx(c, t, now))
			return SENT_BLOCKED;
	}
	return SENT_MORE;
}

/*
 * A destroyed QP still answering its peer (SPEC 11.4): its timers, its few packets
 * (acknowledgements, probe replies, CLOSE), and its end once CLOSED with nothing left to
 * send.
 */
static enum sent visit_lingering(struct mrcd_core *c, struct mrcd_shard *sh,
				 struct mrcd_lingering *l, unsigned *budget, uint64_t now)
{
	struct mrcd_linger_table *t = &sh->lingering;
	enum sent sent;

	if (mrc_conn_next_timeout(l->conn) <= now)
		mrc_conn_on_timeout(l->conn, now);
	sent = send_some(c, sh, l->conn, l->peer_planes, (const uint8_t(*)[16])l->peer_addr,
			 l->peer_port, budget, now);
	/* a CLOSED one owes at most a NAK and a CLOSE, and has sent them */
	if (sent == SENT_ALL && mrc_conn_state(l->conn) == MRC_QPS_CLOSED)
		mrcd_linger_remove_at(t, l->at);
	return sent;
}

/* The rings' doorbells are off while the daemon reads them each turn (until it sleeps). */
static void watch_rings(struct mrcd_core *c, struct mrcd_shard *sh, struct mrcd_qp *qp)
{
	if (mrcd_sched_watch(&sh->sched, (unsigned)(qp - c->t.qps))) {
		mrc_ring_want_doorbell(&qp->sq, false);
		mrc_ring_want_doorbell(&qp->rq, false);
	}
}

static enum sent visit_qp(struct mrcd_core *c, struct mrcd_shard *sh, struct mrcd_qp *qp,
			  unsigned *budget, uint64_t now)
{
	enum sent sent = SENT_ALL;

	watch_rings(c, sh, qp);
	if (qp->cq_overrun && qp->state != MRC_CTL_QP_ERR) {
		/* a completion was lost: like a device, fail the QP rather than let the
		 * application wait for it forever */
		core_log(c, MRCD_WARNING, "client pid %d: QP %u to error: its CQ overran",
			 c->t.client[qp->owner].pid, qp->qpn);
		core_qp_error(c, qp, now);
	}
	if (qp->state == MRC_CTL_QP_RESOLVING && now >= qp->resolve_deadline_ns) {
		core_log(c, MRCD_WARNING, "QP %u: peer did not answer discovery in time", qp->qpn);
		core_qp_error(c, qp, now);
	}
	core_drain_rings(c, qp, now);
	if (qp->type == MRC_CTL_QPT_UD)
		return send_datagrams(c, sh, qp, budget, now);
	if (!qp->conn)
		return SENT_ALL;
	if (mrc_conn_next_timeout(qp->conn) <= now)
		mrc_conn_on_timeout(qp->conn, now);
	failed_by_engine(c, qp, now);
	if (qp->fast)
		sync_fast_window(c, qp);
	sent = send_some(c, sh, qp->conn, qp->peer_planes, (const uint8_t(*)[16])qp->peer_addr,
			 qp->peer_port, budget, now);
	/* a resend the retry budget refused ends the QP there too, with nothing left to
	 * visit it for */
	failed_by_engine(c, qp, now);
	if (qp->fast) /* the READs just requested; those done silently (unsignaled) out */
		core_fast_reads_sync(c, qp, true);
	note_path_changes(c, sh, qp);
	return sent;
}

/* When the slot must be visited again at the latest, whatever arrives meanwhile. */
static uint64_t slot_deadline(const struct mrcd_core *c, const struct mrcd_shard *sh,
			      unsigned slot)
{
	const struct mrcd_qp *qp = &c->t.qps[slot];
	const struct mrcd_lingering *l = &sh->lingering.by_slot[slot];
	uint64_t at = UINT64_MAX;

	if (qp->owner >= 0) {
		if (qp->conn)
			at = mrc_conn_next_timeout(qp->conn);
		else if (qp->state == MRC_CTL_QP_RESOLVING || qp->ud_waiting)
			at = qp->resolve_deadline_ns;
	}
	if (l->conn) {
		uint64_t at_l = mrc_conn_next_timeout(l->conn);

		at = at_l < at ? at_l : at;
	}
	return at;
}

/*
 * One slot's turn: the live QP there and the destroyed one lingering there, if any (a slot
 * holds both only when every other slot was taken). Returns what the sending came to.
 */
static enum sent visit(struct mrcd_core *c, struct mrcd_shard *sh, unsigned slot,
		       unsigned *budget, uint64_t now)
{
	struct mrcd_qp *qp = &c->t.qps[slot];
	struct mrcd_lingering *l = &sh->lingering.by_slot[slot];
	enum sent sent = SENT_ALL, s;

	/* the destroyed one first: its packets are few (a last ACK, a CLOSE) and the live
	 * QP's traffic must not keep them from going */
	if (l->conn && (sent = visit_lingering(c, sh, l, budget, now)) == SENT_BLOCKED)
		return sent;
	if (qp->owner >= 0) {
		s = visit_qp(c, sh, qp, budget, now);
		sent = s > sent ? s : sent;
	}
	return sent;
}

/*
 * Entries the QP must take now: sends from RTS on, and in error everything (to flush it).
 * Receives of a working QP wait until a packet needs one or the QP's next visit: a posted
 * receive changes nothing on the wire, and a sender that met none retries after its RNR
 * wait whatever the daemon learns meanwhile, so a receive is worth no wakeup.
 */
static bool rings_have_work(const struct mrcd_qp *qp)
{
	bool err = qp->state == MRC_CTL_QP_ERR;

	/* a UD QP whose next datagram waits for discovery is woken by it (core_peers_changed) */
	return (((qp->state == MRC_CTL_QP_RTS && !qp->ud_waiting) || err) &&
		mrc_ring_pending(&qp->sq)) ||
	       (err && mrc_ring_pending(&qp->rq));
}

/* Due deadlines, and the watched rings that have entries, make their slots ready. */
static void gather_ready(struct mrcd_core *c, struct mrcd_shard *sh, uint64_t now)
{
	struct mrcd_sched *s = &sh->sched;
	unsigned slot;

	while (mrcd_sched_pop_due(s, now, &slot))
		mrcd_sched_ready(s, slot);
	for (unsigned i = 0; i < mrcd_sched_n_watched(s); i++) {
		struct mrcd_qp *qp = &c->t.qps[mrcd_sched_watched(s, i)];

		if (rings_have_work(qp))
			mrcd_sched_ready(s, mrcd_sched_watched(s, i));
	}
}

unsigned core_qps_pump(struct mrcd_core *c, struct mrcd_shard *sh, uint64_t now)
{
	struct mrcd_sched *s = &sh->sched;
	unsigned budget = MRCD_PUMP_BUDGET, slot, visited = 0;
	bool blocked = false;

	sh->now = now;
	if (sh->n_notify_pending && now >= sh->next_notify_ns) {
		sh->next_notify_ns = now + MRCD_NOTIFY_RETRY_NS;
		core_retry_notifications(c, sh);
	}
	if (sh->n_path_report && now >= sh->next_path_report_ns) {
		sh->next_path_report_ns = now + 100000000; /* monitors hear within 0.1 s */
		report_path_changes(c, sh);
	}
	gather_ready(c, sh, now);
	/* what the local queue refused last time goes first; nothing new until it is out */
	if (sh->tx_queued && !flush_tx(c, sh, now))
		return 0;
	/* round robin, a few packets per slot per turn, so no QP starves the others: a slot
	 * that may have more goes to the back of the queue */
	while (budget && mrcd_sched_next_ready(s, &slot)) {
		enum sent sent = visit(c, sh, slot, &budget, now);

		visited++;
		if (sent != SENT_ALL &&
		    (c->t.qps[slot].owner >= 0 || sh->lingering.by_slot[slot].conn))
			mrcd_sched_ready(s, slot);
		mrcd_sched_timer(s, slot, slot_deadline(c, sh, slot));
		if (sent == SENT_BLOCKED) {
			blocked = true;
			break;
		}
	}
	if (sh->tx_queued && !blocked)
		flush_tx(c, sh, now);
	if (visited) {
		sh->pump_turns++;
		sh->qps_visited += visited;
	}
	return visited;
}

/*
 * The worker is about to sleep: the rings it was reading each turn want their doorbells
 * again. A ring that filled meanwhile makes its QP ready instead (the library's check of the
 * flag and this check of the ring cannot both miss: each side fences between its write and
 * its read). False when the worker must not sleep.
 */
bool core_qps_idle(struct mrcd_core *c, struct mrcd_shard *sh)
{
	struct mrcd_sched *s = &sh->sched;
	unsigned slot;

	while (mrcd_sched_unwatch_any(s, &slot)) {
		struct mrcd_qp *qp = &c->t.qps[slot];

		if (qp->owner < 0)
			continue;
		mrc_ring_want_doorbell(&qp->sq, true);
		mrc_ring_want_doorbell(&qp->rq, qp->state == MRC_CTL_QP_ERR);
		if (rings_have_work(qp))
			mrcd_sched_ready(s, slot);
	}
	return !mrcd_sched_n_ready(s);
}

uint64_t core_qps_next_timeout(const struct mrcd_core *c, const struct mrcd_shard *sh)
{
	uint64_t next = mrcd_sched_next_deadline(&sh->sched);

	(void)c;
	if (sh->tx_queued)
		return sh->tx_retry_ns < next ? sh->tx_retry_ns : next; /* the queue, not the QPs */
	if (mrcd_sched_n_ready(&sh->sched))
		return 0;
	if (sh->n_path_report && sh->next_path_report_ns < next)
		next = sh->next_path_report_ns;
	if (sh->n_notify_pending && sh->next_notify_ns < next)
		next = sh->next_notify_ns;
	return next;
}
