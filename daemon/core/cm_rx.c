/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection manager's messages in and its time (SPEC 17): what a peer's REQ, REP, RTU,
 * REJ, DREQ or DREP does to an id, what a timer does (retry, give up, end a time-wait), what
 * a peer's restart ends.
 */
#include <errno.h>
#include <string.h>

#include "core/cm.h"
#include "core/internal.h"

/* --- messages in --------------------------------------------------------------------------- */

/* Whether a message's node is the one discovery knows at its source (this daemon for its own
 * addresses); an unknown source is asked for, and its message waits for the retry. */
static bool from_known_node(struct mrcd_core *c, const struct mrcd_dgram *g, uint64_t node,
			    uint64_t now)
{
	int idx;

	if (core_is_local_addr(c->cfg, g->peer.addr))
		return node == c->peers.local.node_id;
	idx = mrc_peer_table_find(&c->peers, g->peer.addr);
	if (idx < 0 || c->peers.peers[idx].state != MRC_PEER_KNOWN) {
		core_discover_addr(c, g->peer.addr, now);
		return false;
	}
	/* another node there: its daemon restarted, asked back (once a record has stood a
	 * second, so forged node ids cost at most that) */
	if (c->peers.peers[idx].info.node_id != node) {
		mrc_peer_table_recheck(&c->peers, (unsigned)idx, MRCD_PEER_RECHECK_NS, now);
		return false;
	}
	return true;
}

/* The id a reply names, if it belongs to the connection the message is about. */
static struct mrcd_cm_id *named_conn(struct mrcd_core *c, const struct mrc_cm *msg)
{
	struct mrcd_cm_id *id = cm_id_by_handle(c->cm, msg->remote_comm_id);

	if (!id || id->ps != msg->port_space || id->peer_node != msg->node_id)
		return NULL;
	if (id->remote_id && id->remote_id != msg->local_comm_id)
		return NULL;
	return id;
}

/* A request seen before: answered as before, never a second CONNECT_REQUEST. */
static void duplicate_request(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now)
{
	if (id->state == MRC_CM_REP_SENT ||
	    (id->state == MRC_CM_ESTABLISHED && id->msg_type == MRC_CM_SIDR_REP) ||
	    (id->state == MRC_CM_TIMEWAIT &&
	     (id->msg_type == MRC_CM_REJ || id->msg_type == MRC_CM_SIDR_REP)))
		cm_send_kept(c, id, now);
}

static void on_request(struct mrcd_core *c, const struct mrc_cm *msg, const struct mrcd_dgram *g,
		       uint64_t now)
{
	struct mrcd_cm *m = c->cm;
	bool ud = msg->type == MRC_CM_SIDR_REQ;
	struct mrcd_cm_id *id = cm_conn_find(m, msg->node_id, msg->local_comm_id);
	struct mrcd_cm_id *l;

	if (id) {
		duplicate_request(c, id, now);
		return;
	}
	/* the address it names as its own must be its daemon's: answers go there */
	if (cm_node_at(c, msg->src_addr) != msg->node_id) {
		m->stats.stray++;
		return;
	}
	l = cm_listener(m, msg->port_space, msg->dst_port, msg->dst_addr);
	if (!l) { /* */
		cm_answer(c, g, msg, ud ? MRC_CM_SIDR_REP : MRC_CM_REJ,
		       ud ? MRC_CM_SIDR_UNSUPPORTED : MRC_CM_REJ_INVALID_SERVICE_ID, now);
		return;
	}
	if (l->pending >= l->backlog) {
		m->stats.backlog_drops++; /* its retry may find room */
		return;
	}
	id = m->client_ids[l->owner] < MRCD_CLIENT_MAX_CM_IDS
		     ? cm_id_new(c, l->owner, l->channel, msg->port_space)
		     : NULL;
	if (!id) {
		cm_answer(c, g, msg, ud ? MRC_CM_SIDR_REP : MRC_CM_REJ,
		       ud ? MRC_CM_SIDR_REJECT : MRC_CM_REJ_NO_RESOURCES, now);
		return;
	}
	memcpy(id->local_addr, msg->dst_addr, 16);
	id->local_port = msg->dst_port;
	memcpy(id->remote_addr, msg->src_addr, 16);
	id->remote_port = msg->src_port;
	id->peer_node = msg->node_id;
	id->remote_id = msg->local_comm_id;
	id->remote_qpn = msg->qpn;
	id->state = MRC_CM_REQ_RCVD;
	id->listener = (int)cm_slot_of(l);
	l->pending++;
	cm_conn_insert(m, id);
	cm_tell_msg(c, id, MRC_CM_EV_CONNECT_REQUEST, 0, msg, l->handle);
}

static void on_reply(struct mrcd_core *c, const struct mrc_cm *msg, const struct mrcd_dgram *g,
		     uint64_t now)
{
	struct mrcd_cm_id *id = named_conn(c, msg);

	if (!id) {
		if (msg->type == MRC_CM_REP) /* its REQ's id is gone here */
			cm_answer(c, g, msg, MRC_CM_REJ, MRC_CM_REJ_INVALID_COMM_ID, now);
		c->cm->stats.stray++;
		return;
	}
	if (id->state == MRC_CM_ESTABLISHED && msg->type == MRC_CM_REP) {
		cm_send(c, id, MRC_CM_RTU, 0, NULL, 0, now); /* the RTU was lost */
		return;
	}
	if (id->state == MRC_CM_TIMEWAIT && msg->type == MRC_CM_REP && !id->remote_id) {
		/* it came after the requester gave up: the responder hears so at once */
		cm_answer(c, g, msg, MRC_CM_REJ, MRC_CM_REJ_TIMEOUT, now);
		return;
	}
	if (id->state != MRC_CM_REQ_SENT)
		return; /* a duplicate */
	id->remote_id = msg->local_comm_id;
	id->peer_node = msg->node_id;
	id->remote_qpn = msg->qpn;
	id->remote_qkey = msg->qkey;
	cm_timer_stop(c->cm, id);
	if (msg->type == MRC_CM_SIDR_REP) {
		if (msg->status) {
			cm_tell_kind(c, id, MRC_CM_EV_UNREACHABLE, (int32_t)msg->status);
			cm_end(c, id, now);
			return;
		}
		cm_enter(c, id, MRC_CM_ESTABLISHED);
		cm_tell_msg(c, id, MRC_CM_EV_ESTABLISHED, 0, msg, 0);
		return;
	}
	cm_conn_insert(c->cm, id);
	cm_enter(c, id, MRC_CM_REP_RCVD);
	cm_tell_msg(c, id, MRC_CM_EV_CONNECT_RESPONSE, 0, msg, 0);
}

static void on_rtu(struct mrcd_core *c, const struct mrc_cm *msg)
{
	struct mrcd_cm_id *id = named_conn(c, msg);

	if (!id || id->state != MRC_CM_REP_SENT)
		return;
	cm_timer_stop(c->cm, id);
	cm_established(c, id);
	cm_tell_msg(c, id, MRC_CM_EV_ESTABLISHED, 0, msg, 0);
}

static void on_reject(struct mrcd_core *c, const struct mrc_cm *msg, uint64_t now)
{
	/* without our id, it is the REQ's sender taking its request back */
	struct mrcd_cm_id *id = msg->remote_comm_id
					? named_conn(c, msg)
					: cm_conn_find(c->cm, msg->node_id, msg->local_comm_id);

	if (!id || (id->state != MRC_CM_REQ_SENT && id->state != MRC_CM_REQ_RCVD &&
		    id->state != MRC_CM_REP_SENT && id->state != MRC_CM_REP_RCVD))
		return;
	if (id->owner == MRCD_CM_DAEMON) {
		cm_id_free(c, id);
		return;
	}
	cm_unlist(c, id);
	cm_tell_msg(c, id, MRC_CM_EV_REJECTED, (int32_t)msg->status, msg, 0);
	cm_end(c, id, now);
}

static void on_dreq(struct mrcd_core *c, const struct mrc_cm *msg, const struct mrcd_dgram *g,
		    uint64_t now)
{
	struct mrcd_cm_id *id = named_conn(c, msg);

	if (!id || !id->remote_id) { /* answered all the same: the peer's id can go */
		cm_answer(c, g, msg, MRC_CM_DREP, 0, now);
		return;
	}
	cm_send(c, id, MRC_CM_DREP, 0, NULL, 0, now);
	switch (id->state) {
	case MRC_CM_ESTABLISHED:
	case MRC_CM_REP_SENT:
	case MRC_CM_REP_RCVD:
	case MRC_CM_DREQ_SENT: /* both ends at once: each hears the other's DREQ */
		if (id->owner == MRCD_CM_DAEMON) {
			cm_id_free(c, id);
			return;
		}
		cm_tell_kind(c, id, MRC_CM_EV_DISCONNECTED, 0);
		cm_end(c, id, now);
		return;
	default:
		return;
	}
}

static void on_drep(struct mrcd_core *c, const struct mrc_cm *msg, uint64_t now)
{
	struct mrcd_cm_id *id = named_conn(c, msg);

	if (!id || id->state != MRC_CM_DREQ_SENT)
		return;
	if (id->owner == MRCD_CM_DAEMON) {
		cm_id_free(c, id);
		return;
	}
	cm_tell_kind(c, id, MRC_CM_EV_DISCONNECTED, 0);
	cm_end(c, id, now);
}

void core_cm_rx(struct mrcd_core *c, const struct mrc_packet *pkt, const struct mrcd_dgram *g,
		uint64_t now)
{
	struct mrcd_cm *m = c->cm;
	struct mrc_packet opened;
	struct mrc_cm msg;
	enum mrc_cm_error err;

	if (!mrcd_config_admits(c->cfg, g->peer.addr)) {
		m->stats.stray++;
		return;
	}
	if (c->auth && !core_ud_authentic(c, &pkt, g, &opened)) {
		c->stats.ud_dropped[MRC_DROP_UNAUTHENTICATED]++; /* before any field */
		/* a daemon that restarted knows its peers no more: it asks who sent this, and
		 * believes the sender's retry */
		if (!core_is_local_addr(c->cfg, g->peer.addr) &&
		    mrc_peer_table_find(&c->peers, g->peer.addr) < 0)
			core_discover_addr(c, g->peer.addr, now);
		return;
	}
	if (pkt->opcode != MRC_OP_UD_SEND || pkt->u.ud.src_qpn != MRC_QPN_CM ||
	    pkt->u.ud.qkey != MRC_CM_QKEY) {
		m->stats.malformed[MRC_CM_E_RESERVED]++; /* */
		return;
	}
	err = mrc_cm_decode(pkt->payload, pkt->payload_len, &msg);
	if (err != MRC_CM_OK) {
		m->stats.malformed[err]++; /* */
		return;
	}
	m->stats.rx[msg.type]++;
	if (!from_known_node(c, g, msg.node_id, now)) {
		m->stats.stray++;
		return;
	}
	switch (msg.type) {
	case MRC_CM_REQ:
	case MRC_CM_SIDR_REQ:
		on_request(c, &msg, g, now);
		break;
	case MRC_CM_REP:
	case MRC_CM_SIDR_REP:
		on_reply(c, &msg, g, now);
		break;
	case MRC_CM_RTU:
		on_rtu(c, &msg);
		break;
	case MRC_CM_REJ:
		on_reject(c, &msg, now);
		break;
	case MRC_CM_DREQ:
		on_dreq(c, &msg, g, now);
		break;
	case MRC_CM_DREP:
		on_drep(c, &msg, now);
		break;
	}
}

/* --- time and peers ------------------------------------------------------------------------ */

/* Nobody answered: the connection fails the way the kernel's does. */
static void give_up(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now)
{
	c->cm->stats.timeouts++;
	if (id->owner == MRCD_CM_DAEMON) {
		cm_id_free(c, id);
		return;
	}
	switch (id->state) {
	case MRC_CM_REQ_SENT:
		cm_tell_kind(c, id, MRC_CM_EV_UNREACHABLE, -ETIMEDOUT);
		break;
	case MRC_CM_REP_SENT: /* as the kernel's: its REP unanswered is UNREACHABLE too */
		cm_send(c, id, MRC_CM_REJ, MRC_CM_REJ_TIMEOUT, NULL, 0, now);
		cm_tell_kind(c, id, MRC_CM_EV_UNREACHABLE, -ETIMEDOUT);
		break;
	default: /* DREQ_SENT: the peer is gone, and so is the connection */
		cm_tell_kind(c, id, MRC_CM_EV_DISCONNECTED, 0);
	}
	cm_end(c, id, now);
}

static void on_timer(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now)
{
	uint64_t wait;

	switch (id->state) {
	case MRC_CM_ROUTING:
		if (cm_routed(c, id->remote_addr, now)) {
			cm_enter(c, id, MRC_CM_ROUTED);
			cm_tell_kind(c, id, MRC_CM_EV_ROUTE_RESOLVED, 0);
		} else {
			cm_enter(c, id, MRC_CM_IDLE);
			cm_tell_kind(c, id, MRC_CM_EV_ROUTE_ERROR, -ETIMEDOUT);
		}
		return;
	case MRC_CM_REQ_SENT:
	case MRC_CM_REP_SENT:
	case MRC_CM_DREQ_SENT:
		if (id->tries >= MRCD_CM_TRIES) {
			give_up(c, id, now);
			return;
		}
		wait = MRCD_CM_RETRY_NS << id->tries;
		id->tries++;
		c->cm->stats.retransmits++;
		cm_send_kept(c, id, now);
		cm_timer_set(c->cm, id, now + (wait < MRCD_CM_RETRY_MAX_NS ? wait : MRCD_CM_RETRY_MAX_NS));
		return;
	default:
		if (id->owner == MRCD_CM_DAEMON)
			cm_id_free(c, id); /* its time-wait is over */
	}
}

/* Connections whose QP failed by its transport end at once: DISCONNECTED, and the peer told
 * once (its own QP has failed or will). */
static void qps_failed(struct mrcd_core *c, struct mrcd_shard *t, uint64_t now)
{
	for (unsigned i = 0; i < t->n_cm_failed; i++) {
		struct mrcd_cm_id *id = cm_id_by_handle(c->cm, t->cm_failed[i]);

		if (!id || (id->state != MRC_CM_ESTABLISHED && id->state != MRC_CM_DREQ_SENT))
			continue;
		if (id->state == MRC_CM_ESTABLISHED)
			cm_send(c, id, MRC_CM_DREQ, 0, NULL, 0, now);
		if (id->owner == MRCD_CM_DAEMON) {
			cm_id_free(c, id);
			continue;
		}
		cm_tell_kind(c, id, MRC_CM_EV_DISCONNECTED, 0);
		cm_end(c, id, now);
	}
	t->n_cm_failed = 0;
}

void core_cm_pump(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_cm_id *id;

	/* the workers are stopped (core.h): their lists hold still */
	for (unsigned s = 0; s < c->n_shards; s++)
		if (__atomic_exchange_n(&c->shard[s].control_due, false, __ATOMIC_ACQUIRE))
			qps_failed(c, &c->shard[s], now);

	while ((id = cm_timer_due(c->cm, now)))
		on_timer(c, id, now);
	cm_flush_blocked(c, now);
}

uint64_t core_cm_next_timeout(const struct mrcd_core *c)
{
	uint64_t t = cm_timer_next(c->cm), f = cm_flush_next(c->cm);

	/* read while the workers run: only their flags */
	for (unsigned s = 0; s < c->n_shards; s++)
		if (__atomic_load_n(&c->shard[s].control_due, __ATOMIC_ACQUIRE))
			return 0;
	return t < f ? t : f;
}

void core_cm_peer_event(struct mrcd_core *c, unsigned peer, int ev, uint64_t old_node,
			uint64_t now)
{
	struct mrcd_cm *m = c->cm;
	const struct mrc_peer *p = &c->peers.peers[peer];

	/* peer events are rare: a look at every id, not one per turn */
	for (unsigned i = 0; i < MRCD_MAX_CM_IDS && (m->n_routing || ev == MRC_PEER_EV_RESTARTED);
	     i++) {
		struct mrcd_cm_id *id = &m->ids[i];

		if (id->owner == -1)
			continue;
		if (id->state == MRC_CM_ROUTING && mrc_peer_table_find(&c->peers, id->remote_addr) ==
							   (int)peer) {
			if (p->state == MRC_PEER_KNOWN && !p->confirming) {
				cm_timer_stop(m, id);
				cm_enter(c, id, MRC_CM_ROUTED);
				cm_tell_kind(c, id, MRC_CM_EV_ROUTE_RESOLVED, 0);
			} else if (ev == MRC_PEER_EV_UNREACHABLE) {
				cm_timer_stop(m, id);
				cm_enter(c, id, MRC_CM_IDLE);
				cm_tell_kind(c, id, MRC_CM_EV_ROUTE_ERROR, -ETIMEDOUT);
			}
			continue;
		}
		if (ev != MRC_PEER_EV_RESTARTED || id->peer_node != old_node ||
		    id->state == MRC_CM_TIMEWAIT)
			continue;
		if (id->state == MRC_CM_REQ_SENT) {
			id->peer_node = p->info.node_id; /* the REQ's retries go to the new one */
			continue;
		}
		/* the peer's ids died with it */
		if (id->owner == MRCD_CM_DAEMON) {
			cm_id_free(c, id);
			continue;
		}
		/* a request not yet answered, and a datagram space's resolution, end unsaid:
		 * rdma_cm has no event for them */
		if (id->state == MRC_CM_REQ_RCVD || !cm_connected_ps(id->ps)) {
			cm_unlist(c, id);
			cm_end(c, id, now);
			continue;
		}
		cm_tell_kind(c, id, id->state == MRC_CM_REP_SENT ? MRC_CM_EV_CONNECT_ERROR
							 : MRC_CM_EV_DISCONNECTED,
		     id->state == MRC_CM_REP_SENT ? -ECONNRESET : 0);
		cm_end(c, id, now);
	}
}

void core_cm_flush_all(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_cm *m = c->cm;

	/* stopping: each peer hears the end of its connections once, not waiting for an answer */
	for (unsigned i = 0; i < MRCD_MAX_CM_IDS && m->n_ids; i++) {
		struct mrcd_cm_id *id = &m->ids[i];

		if (id->owner != -1 && cm_connected_ps(id->ps) &&
		    (id->state == MRC_CM_ESTABLISHED || id->state == MRC_CM_REP_SENT ||
		     id->state == MRC_CM_REP_RCVD))
			cm_send(c, id, MRC_CM_DREQ, 0, NULL, 0, now);
	}
}
