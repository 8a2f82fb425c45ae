/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection manager's requests (SPEC 17): what a client's MRC_CTL_CM does to an id, what
 * becomes of its ids when it goes, and the manager's life. The protocol's steps are
 * cm_steps.c's, the peers' messages and the timers cm_rx.c's, the tables cm_table.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cm.h"
#include "core/internal.h"

/* --- requests ------------------------------------------------------------------------------ */

struct cm_request {
	struct mrcd_core *c;
	unsigned owner;
	const struct mrc_ctl_cm *r;
	unsigned n_desc;
	struct mrc_ctl_cm_reply *out;
	uint64_t now;
};

static int op_channel(const struct cm_request *q)
{
	struct mrcd_core *c = q->c;
	int fd, err;

	if (q->n_desc != 1)
		return -EINVAL;
	if (c->cm->client_channels[q->owner] >= MRCD_CLIENT_MAX_CM_CHANNELS)
		return -ENOSPC;
	err = c->ops->keep_channel(c->io, 0, &fd);
	if (err)
		return err;
	err = cm_channel_new(c, (int)q->owner, fd, &q->out->handle);
	if (err) {
		c->ops->close_channel(c->io, fd);
		return err;
	}
	return 0;
}

static int op_close_channel(const struct cm_request *q)
{
	struct mrcd_cm_channel *ch = cm_channel_of(q->c->cm, (int)q->owner, q->r->channel);

	if (!ch)
		return -ENOENT;
	if (ch->n_ids)
		return -EBUSY;
	cm_channel_free(q->c, ch);
	return 0;
}

static int op_create_id(const struct cm_request *q)
{
	struct mrcd_cm *m = q->c->cm;
	struct mrcd_cm_channel *ch = cm_channel_of(m, (int)q->owner, q->r->channel);
	struct mrcd_cm_id *id;

	if (!ch)
		return -ENOENT;
	if (!cm_known_ps(q->r->port_space))
		return -EPROTONOSUPPORT;
	if (m->client_ids[q->owner] >= MRCD_CLIENT_MAX_CM_IDS)
		return -ENOSPC;
	id = cm_id_new(q->c, (int)q->owner, (int)(ch - m->channels), q->r->port_space);
	if (!id)
		return -ENOSPC;
	q->out->handle = id->handle;
	return 0;
}

static int op_bind(const struct cm_request *q, struct mrcd_cm_id *id)
{
	struct mrcd_core *c = q->c;
	bool any = cm_any_addr(q->r->addr);
	uint16_t port = q->r->port;

	if (id->state != MRC_CM_IDLE)
		return -EINVAL;
	if (!any && !core_is_local_addr(c->cfg, q->r->addr))
		return -EADDRNOTAVAIL; /* not one of this daemon's planes */
	if (id->bound) { /* resolution picked the address of an id bound to all of them */
		if (!id->any_addr || any || port != id->local_port)
			return -EINVAL;
		memcpy(id->local_addr, q->r->addr, 16);
		id->any_addr = false;
		q->out->port = port;
		return 0;
	}
	if (!port) {
		unsigned span = MRCD_CM_PORT_MAX - MRCD_CM_PORT_MIN + 1;
		unsigned start = (unsigned)mrc_prf_next(&c->t.rng);

		for (unsigned k = 0; k < span && !port; k++) {
			uint16_t p = (uint16_t)(MRCD_CM_PORT_MIN + (start + k) % span);

			if (!cm_port_taken(c->cm, id->ps, p, q->r->addr, any))
				port = p;
		}
		if (!port)
			return -EADDRINUSE;
	} else if (cm_port_taken(c->cm, id->ps, port, q->r->addr, any)) {
		return -EADDRINUSE;
	}
	memcpy(id->local_addr, q->r->addr, 16);
	id->any_addr = any;
	id->local_port = port;
	id->bound = true;
	cm_port_insert(c->cm, id);
	q->out->port = port;
	return 0;
}

static int op_route(const struct cm_request *q, struct mrcd_cm_id *id)
{
	struct mrcd_core *c = q->c;
	uint32_t ms = q->r->backlog ? q->r->backlog : 2000;
	int err;

	if (!id->bound || (id->state != MRC_CM_IDLE && id->state != MRC_CM_ROUTED))
		return -EINVAL;
	memcpy(id->remote_addr, q->r->addr, 16);
	memset(&id->route, 0, sizeof(id->route));
	err = core_is_local_addr(c->cfg, q->r->addr) ? 0
						     : core_discover_addr(c, q->r->addr, q->now);
	if (err) {
		cm_tell_kind(c, id, MRC_CM_EV_ROUTE_ERROR, err); /* not a peer this daemon may reach */
		return 0;
	}
	if (cm_routed(c, q->r->addr, q->now)) {
		cm_enter(c, id, MRC_CM_ROUTED);
		cm_tell_kind(c, id, MRC_CM_EV_ROUTE_RESOLVED, 0);
		return 0;
	}
	if (id->state != MRC_CM_ROUTING)
		c->cm->n_routing++;
	id->state = MRC_CM_ROUTING;
	cm_timer_set(c->cm, id, q->now + (uint64_t)(ms < 60000 ? ms : 60000) * 1000000);
	return 0;
}

static int op_listen(const struct cm_request *q, struct mrcd_cm_id *id)
{
	if (!id->bound || (id->state != MRC_CM_IDLE && id->state != MRC_CM_LISTEN))
		return -EINVAL;
	/* as the kernel: 0 or less, or more than it allows, is its most */
	id->backlog = q->r->backlog && q->r->backlog <= 1024 ? q->r->backlog : 1024;
	cm_enter(q->c, id, MRC_CM_LISTEN);
	return 0;
}

static bool valid_qpn(uint32_t qpn)
{
	return qpn > MRC_QPN_CM && qpn <= MRC_QPN_MAX;
}

static void take_params(struct mrcd_cm_id *id, const struct mrc_ctl_cm *r)
{
	id->qpn = r->qpn;
	id->flags = r->flags & (MRC_CM_F_SRQ | MRC_CM_F_FLOW_CONTROL);
	id->resp_res = r->responder_resources;
	id->init_depth = r->initiator_depth;
	id->retry = r->retry_count > 7 ? 7 : r->retry_count;
	id->rnr = r->rnr_retry_count > 7 ? 7 : r->rnr_retry_count;
}

static int op_connect(const struct cm_request *q, struct mrcd_cm_id *id)
{
	bool ud = !cm_connected_ps(id->ps);

	if (id->state != MRC_CM_ROUTED)
		return -EINVAL;
	if (q->r->private_len > (ud ? MRC_CM_PRIVATE_SIDR_REQ : MRC_CM_PRIVATE_REQ))
		return -EINVAL;
	if (!ud && !valid_qpn(q->r->qpn))
		return -EINVAL;
	if (!q->r->port)
		return -EINVAL;
	id->remote_port = q->r->port;
	id->peer_node = cm_node_at(q->c, id->remote_addr); /* who may answer */
	take_params(id, q->r);
	if (ud)
		id->qpn = 0;
	cm_enter(q->c, id, MRC_CM_REQ_SENT);
	cm_send_retried(q->c, id, ud ? MRC_CM_SIDR_REQ : MRC_CM_REQ, q->r->private_data,
		     q->r->private_len, q->now);
	return 0;
}

static int op_accept(const struct cm_request *q, struct mrcd_cm_id *id)
{
	struct mrcd_core *c = q->c;
	bool ud = !cm_connected_ps(id->ps);

	if (id->state != MRC_CM_REQ_RCVD)
		return -EINVAL;
	if (q->r->private_len > (ud ? MRC_CM_PRIVATE_SIDR_REP : MRC_CM_PRIVATE_REP) ||
	    !valid_qpn(q->r->qpn))
		return -EINVAL;
	take_params(id, q->r);
	id->qkey = q->r->qkey;
	cm_unlist(c, id);
	if (ud) { /* one answer, no handshake: sent again only when the request comes again */
		id->msg_type = MRC_CM_SIDR_REP;
		id->reject_status = MRC_CM_SIDR_SUCCESS;
		id->private_len = q->r->private_len;
		memcpy(id->private_data, q->r->private_data, q->r->private_len);
		cm_enter(c, id, MRC_CM_ESTABLISHED);
		cm_send_kept(c, id, q->now);
		return 0;
	}
	cm_enter(c, id, MRC_CM_REP_SENT);
	cm_send_retried(c, id, MRC_CM_REP, q->r->private_data, q->r->private_len, q->now);
	return 0;
}


static int op_reject(const struct cm_request *q, struct mrcd_cm_id *id)
{
	bool ud = !cm_connected_ps(id->ps);

	if (id->state != MRC_CM_REQ_RCVD && id->state != MRC_CM_REP_RCVD)
		return -EINVAL;
	if (q->r->private_len > (ud ? MRC_CM_PRIVATE_SIDR_REP : MRC_CM_PRIVATE_REJ))
		return -EINVAL;
	cm_refuse(q->c, id, ud ? MRC_CM_SIDR_REJECT : MRC_CM_REJ_CONSUMER_DEFINED,
	       q->r->private_data, q->r->private_len, q->now);
	return 0;
}

static int op_establish(const struct cm_request *q, struct mrcd_cm_id *id)
{
	if (id->state != MRC_CM_REP_RCVD)
		return -EINVAL;
	cm_established(q->c, id);
	cm_send(q->c, id, MRC_CM_RTU, 0, NULL, 0, q->now);
	return 0;
}

static int op_disconnect(const struct cm_request *q, struct mrcd_cm_id *id)
{
	switch (id->state) {
	case MRC_CM_ESTABLISHED:
		if (!cm_connected_ps(id->ps))
			return -EINVAL;
		/* fall through */
	case MRC_CM_REP_SENT:
	case MRC_CM_REP_RCVD:
		cm_timer_stop(q->c->cm, id);
		cm_enter(q->c, id, MRC_CM_DREQ_SENT);
		cm_send_retried(q->c, id, MRC_CM_DREQ, NULL, 0, q->now);
		return 0;
	case MRC_CM_DREQ_SENT:
	case MRC_CM_TIMEWAIT:
		return 0; /* the peer went first, or a second call: DISCONNECTED comes once */
	default:
		return -EINVAL;
	}
}

static int op_addr(const struct cm_request *q, struct mrcd_cm_id *id)
{
	uint32_t err = q->r->backlog;

	if (err > 4095 || id->state != MRC_CM_IDLE)
		return -EINVAL;
	cm_tell_kind(q->c, id, err ? MRC_CM_EV_ADDR_ERROR : MRC_CM_EV_ADDR_RESOLVED,
		     -(int32_t)err);
	return 0;
}

static int op_migrate(const struct cm_request *q, struct mrcd_cm_id *id)
{
	struct mrcd_cm *m = q->c->cm;
	struct mrcd_cm_channel *ch = cm_channel_of(m, (int)q->owner, q->r->channel);

	if (!ch)
		return -ENOENT;
	/* as the kernel's: what the id's old channel had not given out yet goes with it */
	if (id->channel >= 0)
		cm_channel_move_events(q->c, id, id->channel, (int)(ch - m->channels));
	cm_id_set_channel(q->c, id, (int)(ch - m->channels));
	return 0;
}

/* The client lets go of the id: what the connection still owes its peer is done by the daemon
 * [R-540]. */
static void destroy(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now)
{
	bool ud = !cm_connected_ps(id->ps);

	switch (id->state) {
	case MRC_CM_REQ_SENT:
		if (!ud)
			cm_send(c, id, MRC_CM_REJ, MRC_CM_REJ_TIMEOUT, NULL, 0, now);
		cm_id_free(c, id);
		return;
	case MRC_CM_REQ_RCVD:
		cm_id_orphan(c, id);
		cm_refuse(c, id, ud ? MRC_CM_SIDR_REJECT : MRC_CM_REJ_CONSUMER_DEFINED, NULL, 0, now);
		return;
	case MRC_CM_REP_RCVD:
		cm_id_orphan(c, id);
		cm_refuse(c, id, MRC_CM_REJ_TIMEOUT, NULL, 0, now);
		return;
	case MRC_CM_ESTABLISHED:
	case MRC_CM_REP_SENT:
		if (ud) {
			cm_id_orphan(c, id);
			cm_end(c, id, now); /* a duplicate SIDR_REQ still hears its answer */
			return;
		}
		cm_id_orphan(c, id);
		cm_timer_stop(c->cm, id);
		cm_enter(c, id, MRC_CM_DREQ_SENT);
		cm_send_retried(c, id, MRC_CM_DREQ, NULL, 0, now);
		return;
	case MRC_CM_DREQ_SENT:
		cm_id_orphan(c, id); /* its timer runs on */
		return;
	case MRC_CM_TIMEWAIT:
		cm_id_orphan(c, id);
		cm_timer_set(c->cm, id, now + MRCD_CM_TIMEWAIT_NS);
		return;
	default:
		cm_id_free(c, id);
	}
}

int core_cm_request(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		    unsigned n_desc, struct mrc_ctl_cm_reply *out, uint64_t now)
{
	static int (*const on_id[MRC_CM_OP_MAX + 1])(const struct cm_request *,
						      struct mrcd_cm_id *) = {
		[MRC_CM_OP_BIND] = op_bind,	    [MRC_CM_OP_ROUTE] = op_route,
		[MRC_CM_OP_LISTEN] = op_listen,	    [MRC_CM_OP_CONNECT] = op_connect,
		[MRC_CM_OP_ACCEPT] = op_accept,	    [MRC_CM_OP_REJECT] = op_reject,
		[MRC_CM_OP_ESTABLISH] = op_establish, [MRC_CM_OP_DISCONNECT] = op_disconnect,
		[MRC_CM_OP_MIGRATE] = op_migrate,   [MRC_CM_OP_ADDR] = op_addr,
	};
	struct mrc_ctl_cm r;
	struct cm_request q = { c, owner, &r, n_desc, out, now };
	struct mrcd_cm_id *id;

	memset(out, 0, sizeof(*out));
	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	if (r.reserved || r.private_len > MRC_CM_PRIVATE_MAX || !r.op || r.op > MRC_CM_OP_MAX)
		return -EINVAL;
	if (r.op != MRC_CM_OP_CHANNEL && n_desc)
		return -EINVAL;
	switch (r.op) {
	case MRC_CM_OP_CHANNEL:
		return op_channel(&q);
	case MRC_CM_OP_CLOSE_CHANNEL:
		return op_close_channel(&q);
	case MRC_CM_OP_CREATE_ID:
		return op_create_id(&q);
	}
	id = cm_id_of(c->cm, (int)owner, r.id);
	if (!id)
		return -ENOENT;
	if (r.op == MRC_CM_OP_DESTROY_ID) {
		destroy(c, id, now);
		return 0;
	}
	return on_id[r.op](&q, id);
}

void core_cm_client_close(struct mrcd_core *c, unsigned slot, uint64_t now)
{
	struct mrcd_cm *m = c->cm;

	for (unsigned i = 0; i < MRCD_MAX_CM_IDS && m->client_ids[slot]; i++)
		if (m->ids[i].owner == (int)slot)
			destroy(c, &m->ids[i], now);
	for (unsigned i = 0; i < MRCD_MAX_CM_CHANNELS; i++)
		if (m->channels[i].owner == (int)slot)
			cm_channel_free(c, &m->channels[i]);
}

size_t mrcd_core_cm_ids_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			      size_t cap)
{
	const struct mrcd_cm *m = c->cm;
	size_t n = 0;

	for (unsigned i = 0; i < MRCD_MAX_CM_IDS && n + sizeof(struct mrc_ctl_cm_id) <= cap; i++) {
		const struct mrcd_cm_id *id = &m->ids[i];
		const struct mrcd_client *cl = id->owner >= 0 ? &c->t.client[id->owner] : NULL;
		struct mrc_ctl_cm_id out;

		/* the daemon's own are an operator's to see, a user's only their own [issue 20] */
		if (id->owner == -1 || (viewer && (!cl || cl->uid != *viewer)))
			continue;
		memset(&out, 0, sizeof(out));
		out.id = id->handle;
		out.pid = cl ? cl->pid : 0;
		out.uid = cl ? cl->uid : 0;
		out.state = id->state;
		out.port_space = id->ps;
		out.local_port = id->local_port;
		out.remote_port = id->remote_port;
		out.qpn = id->qpn;
		out.remote_qpn = id->remote_qpn;
		out.backlog = id->state == MRC_CM_LISTEN ? id->backlog : 0;
		out.pending = id->state == MRC_CM_LISTEN ? id->pending : 0;
		memcpy(out.local_addr, id->local_addr, 16);
		memcpy(out.remote_addr, id->remote_addr, 16);
		memcpy(buf + n, &out, sizeof(out));
		n += sizeof(out);
	}
	return n;
}

int core_cm_init(struct mrcd_core *c)
{
	c->cm = malloc(sizeof(*c->cm));
	if (!c->cm)
		return -ENOMEM;
	if (cm_table_init(c->cm)) {
		free(c->cm);
		c->cm = NULL;
		return -ENOMEM;
	}
	return 0;
}

void core_cm_fini(struct mrcd_core *c)
{
	if (!c->cm)
		return;
	for (unsigned i = 0; i < MRCD_MAX_CM_CHANNELS; i++)
		if (c->cm->channels[i].owner != -1)
			cm_channel_free(c, &c->cm->channels[i]);
	free(c->cm->ids);
	free(c->cm->channels);
	free(c->cm);
	c->cm = NULL;
}
