/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection manager's steps (SPEC 17), which its requests (cm.c) and its messages and
 * timers (cm_rx.c) are made of: events to an id's channel, messages to its peer (in UD
 * datagrams between the daemons' QP 1, which ud.c routes, authenticates and frames), the
 * states an id enters.
 */
#include <errno.h>
#include <string.h>

#include "core/cm.h"
#include "core/internal.h"
#include "proto/ud.h"

bool cm_connected_ps(uint8_t ps)
{
	return ps == MRC_CM_PS_TCP || ps == MRC_CM_PS_IB;
}

bool cm_known_ps(uint8_t ps)
{
	return cm_connected_ps(ps) || ps == MRC_CM_PS_UDP || ps == MRC_CM_PS_IPOIB;
}

bool cm_any_addr(const uint8_t a[16])
{
	static const uint8_t v4_any[16] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t v6_any[16];

	return !memcmp(a, v4_any, 16) || !memcmp(a, v6_any, 16);
}

unsigned cm_slot_of(const struct mrcd_cm_id *id)
{
	return id->handle & (MRCD_MAX_CM_IDS - 1);
}

/* --- events -------------------------------------------------------------------------------- */

static void event_for(const struct mrcd_cm_id *id, struct mrc_cm_event *ev, uint32_t kind,
		      int32_t status)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->status = status;
	ev->id = id->handle;
	ev->port_space = id->ps;
	ev->local_port = id->local_port;
	ev->remote_port = id->remote_port;
	memcpy(ev->local_addr, id->local_addr, 16);
	memcpy(ev->remote_addr, id->remote_addr, 16);
	ev->remote_qpn = id->remote_qpn;
	ev->qkey = id->remote_qkey;
}

void cm_tell_kind(struct mrcd_core *c, const struct mrcd_cm_id *id, uint32_t kind, int32_t status)
{
	struct mrc_cm_event ev;

	event_for(id, &ev, kind, status);
	cm_tell(c, id, &ev);
}

/* An event that carries what a peer's message said: its private data and parameters. */
void cm_tell_msg(struct mrcd_core *c, const struct mrcd_cm_id *id, uint32_t kind,
		     int32_t status, const struct mrc_cm *m, uint32_t listen_id)
{
	struct mrc_cm_event ev;

	event_for(id, &ev, kind, status);
	ev.listen_id = listen_id;
	ev.private_len = m->private_len;
	memcpy(ev.private_data, m->private_data, m->private_len);
	ev.responder_resources = m->responder_resources;
	ev.initiator_depth = m->initiator_depth;
	ev.retry_count = m->retry_count;
	ev.rnr_retry_count = m->rnr_retry_count;
	ev.flags = m->flags;
	cm_tell(c, id, &ev);
}

/* --- messages out -------------------------------------------------------------------------- */

/* One message along rt to dgid: false when there is no way there now (a retry may find one). */
static bool emit(struct mrcd_core *c, struct mrcd_ud_route *rt, const uint8_t dgid[16],
		 const struct mrc_cm *msg, uint64_t now)
{
	struct mrcd_cm *m = c->cm;
	const size_t hdr = sizeof(struct mrc_hdr) + sizeof(struct mrc_ud_ext);
	struct mrc_ud_datagram d;
	struct mrcd_dgram g;
	size_t len;
	bool sent;

	if (core_ud_route(c, rt, dgid, true, now) != ROUTE_READY)
		return false;
	len = mrc_cm_encode(msg, m->buf + hdr,
			    sizeof(m->buf) - hdr - sizeof(struct mrc_seal_trailer));
	if (!len)
		return false;
	d = (struct mrc_ud_datagram){ .dst_qpn = MRC_QPN_CM, .src_qpn = MRC_QPN_CM,
				      .qkey = MRC_CM_QKEY, .psn = m->seq++, .tx_ts = (uint32_t)now,
				      .payload = m->buf + hdr, .payload_len = (uint16_t)len };
	/* a connection's messages on one path, connections spread over all of them */
	core_ud_emit(c, rt, &d, mrc_ud_flow(msg->local_comm_id, msg->remote_comm_id, dgid),
		     m->buf, sizeof(m->buf), &g);
	if (c->ops->tx(c->io, MRCD_CONTROL_SHARD, &g, 1, &sent) != 1)
		return false; /* the local queue is full: lost, as on the wire */
	c->stats.tx_datagrams++;
	m->stats.tx[msg->type]++;
	return true;
}

/* The id's message of `type` to its peer, with its parameters and the private data given. */
void cm_send(struct mrcd_core *c, struct mrcd_cm_id *id, uint8_t type, uint32_t status,
		     const uint8_t *private_data, uint8_t private_len, uint64_t now)
{
	bool params = type == MRC_CM_REQ || type == MRC_CM_REP;
	struct mrc_cm msg = {
		.type = type, .port_space = id->ps, .local_comm_id = id->handle,
		.remote_comm_id = type == MRC_CM_REQ || type == MRC_CM_SIDR_REQ ? 0 : id->remote_id,
		.node_id = c->peers.local.node_id, .status = status,
		.src_port = id->local_port, .dst_port = id->remote_port,
		.private_data = private_data, .private_len = private_len,
	};

	if (params) {
		msg.qpn = id->qpn;
		msg.flags = id->flags;
		msg.responder_resources = id->resp_res;
		msg.initiator_depth = id->init_depth;
		msg.retry_count = type == MRC_CM_REQ ? id->retry : 0;
		msg.rnr_retry_count = id->rnr;
	} else if (type == MRC_CM_SIDR_REP && !status) {
		msg.qpn = id->qpn;
		msg.qkey = id->qkey;
	}
	memcpy(msg.src_addr, id->local_addr, 16);
	memcpy(msg.dst_addr, id->remote_addr, 16);
	emit(c, &id->route, id->remote_addr, &msg, now);
}

/* The message a timer sends again, with the private data kept for it. */
void cm_send_kept(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now)
{
	cm_send(c, id, id->msg_type, id->msg_type == MRC_CM_REJ || id->msg_type == MRC_CM_SIDR_REP
					       ? id->reject_status : 0,
		 id->private_data, id->private_len, now);
}

/* A message that must be answered: kept, sent, and sent again until it is. */
void cm_send_retried(struct mrcd_core *c, struct mrcd_cm_id *id, uint8_t type,
			 const uint8_t *private_data, uint8_t private_len, uint64_t now)
{
	id->msg_type = type;
	id->private_len = private_len;
	if (private_len && private_data != id->private_data)
		memcpy(id->private_data, private_data, private_len);
	id->tries = 1;
	cm_send_kept(c, id, now);
	cm_timer_set(c->cm, id, now + MRCD_CM_RETRY_NS);
}

/* An answer to a message that names no id here (or a refusal before one is made). */
void cm_answer(struct mrcd_core *c, const struct mrcd_dgram *g, const struct mrc_cm *in,
		   uint8_t type, uint32_t status, uint64_t now)
{
	struct mrcd_ud_route rt = { 0 };
	struct mrc_cm msg = {
		.type = type, .port_space = in->port_space, .local_comm_id = in->remote_comm_id,
		.remote_comm_id = in->local_comm_id, .node_id = c->peers.local.node_id,
		.status = status, .src_port = in->dst_port, .dst_port = in->src_port,
	};

	memcpy(msg.src_addr, in->dst_addr, 16);
	memcpy(msg.dst_addr, in->src_addr, 16);
	emit(c, &rt, g->peer.addr, &msg, now);
}

/* --- the state machine's common steps ------------------------------------------------------ */

void cm_enter(struct mrcd_core *c, struct mrcd_cm_id *id, uint8_t state)
{
	if (id->state == MRC_CM_ROUTING && state != MRC_CM_ROUTING)
		c->cm->n_routing--;
	id->state = state;
}

/* A request the listener had leaves its count (accepted, rejected, gone). */
void cm_unlist(struct mrcd_core *c, struct mrcd_cm_id *id)
{
	if (id->listener >= 0 && c->cm->ids[id->listener].pending)
		c->cm->ids[id->listener].pending--;
	id->listener = -1;
}

/* The connection is over for the client: it answers late messages until it is destroyed
 * (and for MRCD_CM_TIMEWAIT_NS after, as the daemon's). */
void cm_end(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now)
{
	cm_timer_stop(c->cm, id);
	cm_enter(c, id, MRC_CM_TIMEWAIT);
	if (id->owner == MRCD_CM_DAEMON)
		cm_timer_set(c->cm, id, now + MRCD_CM_TIMEWAIT_NS);
}

/* The node discovery knows at addr (this daemon's for its own); 0: none known. */
uint64_t cm_node_at(struct mrcd_core *c, const uint8_t addr[16])
{
	int idx;

	if (core_is_local_addr(c->cfg, addr))
		return c->peers.local.node_id;
	idx = mrc_peer_table_find(&c->peers, addr);
	return idx >= 0 && c->peers.peers[idx].state == MRC_PEER_KNOWN
		       ? c->peers.peers[idx].info.node_id
		       : 0;
}

bool cm_routed(struct mrcd_core *c, const uint8_t addr[16], uint64_t now)
{
	int idx;

	if (core_is_local_addr(c->cfg, addr))
		return true;
	idx = mrc_peer_table_find(&c->peers, addr);
	/* a record that has not stood a while is asked back first: its daemon may have
	 * restarted, and a REQ to the old one would go unanswered */
	return idx >= 0 && c->peers.peers[idx].state == MRC_PEER_KNOWN &&
	       !mrc_peer_table_recheck(&c->peers, (unsigned)idx, MRCD_PEER_RECHECK_NS, now);
}

/* Refuses a request (passive) or a REP (active), and remembers the answer for duplicates. */
void cm_refuse(struct mrcd_core *c, struct mrcd_cm_id *id, uint32_t status,
		   const uint8_t *private_data, uint8_t private_len, uint64_t now)
{
	bool ud = !cm_connected_ps(id->ps);

	id->msg_type = ud ? MRC_CM_SIDR_REP : MRC_CM_REJ;
	id->reject_status = (uint8_t)status;
	id->private_len = private_len;
	if (private_len && private_data != id->private_data)
		memcpy(id->private_data, private_data, private_len);
	cm_unlist(c, id);
	cm_send_kept(c, id, now);
	cm_end(c, id, now);
}

void cm_established(struct mrcd_core *c, struct mrcd_cm_id *id)
{
	struct mrcd_qp *qp = core_qp_by_num(&c->t, id->qpn);

	cm_enter(c, id, MRC_CM_ESTABLISHED);
	c->cm->stats.connections++;
	/* its QP's failure ends the connection: the application may have named any QP
	 * (conn_param.qp_num), so only its own counts */
	if (qp && qp->owner == id->owner && qp->type == MRC_CTL_QPT_RC)
		qp->cm_id = id->handle;
}
