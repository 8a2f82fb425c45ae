/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Event channels and their events: the daemon's records (metaroce/cm.h) read from the
 * application's end and turned into rdma_cm's events, with what librdmacm does on the way (a
 * request's new id, the active side's QP to RTS and its RTU on a CONNECT_RESPONSE); the end
 * of the file is the daemon gone: DEVICE_REMOVAL on each id of the channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmacm/internal.h"

struct mrcm_channel *mrcm_channel_new(void)
{
	struct mrcm_channel *c = calloc(1, sizeof(*c));
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CHANNEL };
	struct mrc_ctl_cm_reply out;
	int sv[2], err;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		free(c);
		return NULL;
	}
	/* the daemon's end goes to it and no copy stays: its going is our end-of-file */
	err = mrcm_request(&r, sv[1], &out) ? errno : 0;
	close(sv[1]);
	if (err) {
		close(sv[0]);
		free(c);
		errno = err;
		return NULL;
	}
	c->ch.fd = sv[0];
	c->handle = out.handle;
	return c;
}

/*
 * A thread still reading a channel another destroys stays blocked, as it would on the kernel's
 * (its read holds the file): rping's event thread does, while its main thread cleans up and
 * exits. So the end-of-file the daemon's close brings it is not the daemon gone, and the
 * struct it reads stays (a few bytes, once per channel so destroyed).
 */
void mrcm_channel_free(struct mrcm_channel *c)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CLOSE_CHANNEL, .channel = c->handle };
	struct mrc_cm_event rec;

	__atomic_store_n(&c->destroyed, true, __ATOMIC_RELEASE);
	/* requests nobody read will be accepted by nobody: their daemon ids go (a REJ) */
	while (!c->gone && recv(c->ch.fd, &rec, sizeof(rec), MSG_DONTWAIT) == sizeof(rec))
		if (rec.magic == MRC_CM_EVENT_MAGIC && rec.kind == MRC_CM_EV_CONNECT_REQUEST)
			mrcm_forget(rec.id);
	if (!c->gone)
		mrcm_request(&r, -1, NULL);
	close(c->ch.fd);
	if (!__atomic_load_n(&c->readers, __ATOMIC_ACQUIRE))
		free(c);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct mrcm_channel *c = mrcm_channel_new();

	return c ? &c->ch : NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	mrcm_channel_free((struct mrcm_channel *)channel);
}

/* --- records to events -------------------------------------------------------------------- */

static void conn_param(struct mrcm_event *e, const struct mrc_cm_event *rec, uint8_t size)
{
	struct rdma_conn_param *c = &e->ev.param.conn;

	/* private data as InfiniBand delivers it: the message's whole field, zero-padded */
	memcpy(e->private_data, rec->private_data, rec->private_len);
	c->private_data = e->private_data;
	c->private_data_len = size > rec->private_len ? size : rec->private_len;
	c->responder_resources = rec->responder_resources;
	c->initiator_depth = rec->initiator_depth;
	c->flow_control = !!(rec->flags & MRC_CM_F_FLOW_CONTROL);
	c->retry_count = rec->retry_count;
	c->rnr_retry_count = rec->rnr_retry_count;
	c->srq = !!(rec->flags & MRC_CM_F_SRQ);
	c->qp_num = rec->remote_qpn;
}

static void ud_param(struct mrcm_event *e, struct mrcm_id *p, const struct mrc_cm_event *rec,
		     uint8_t size)
{
	struct rdma_ud_param *u = &e->ev.param.ud;
	int gid = mrcm_gid_index(p->id.verbs, rec->local_addr);

	memcpy(e->private_data, rec->private_data, rec->private_len);
	u->private_data = e->private_data;
	u->private_data_len = size > rec->private_len ? size : rec->private_len;
	u->ah_attr.is_global = 1;
	u->ah_attr.port_num = 1;
	u->ah_attr.grh.hop_limit = 64;
	u->ah_attr.grh.sgid_index = (uint8_t)(gid < 0 ? 0 : gid);
	memcpy(u->ah_attr.grh.dgid.raw, rec->remote_addr, 16);
	u->qp_num = rec->remote_qpn;
	u->qkey = rec->qkey;
}

/* A CONNECT_REQUEST: the new id the application will accept or reject. */
static struct mrcm_id *request_id(const struct mrc_cm_event *rec)
{
	struct mrcm_id *l = mrcm_lookup(rec->listen_id), *p;
	bool v6;

	/* nobody here will take it (its listener is gone, or no memory): its daemon id goes
	 * too, which answers the requester with a REJ */
	p = l ? mrcm_adopt(rec->id, l->chan, l->id.ps, l->id.context) : NULL;
	if (!p) {
		mrcm_forget(rec->id);
		if (l)
			mrcm_release(l);
		return NULL;
	}
	p->listener = l;
	v6 = l->id.route.addr.src_addr.sa_family == AF_INET6;
	mrcm_addr_to(&p->id.route.addr.src_storage, rec->local_addr, rec->local_port, v6);
	mrcm_addr_to(&p->id.route.addr.dst_storage, rec->remote_addr, rec->remote_port, v6);
	p->remote_qpn = rec->remote_qpn;
	p->peer_retry = rec->retry_count;
	p->tos = l->tos;
	mrcm_fill_path(p);
	mrcm_release(l); /* the event's listen_id is the application's to keep alive */
	return p;
}

/* The active side's REP: its QP to RTS, then the RTU; ESTABLISHED, or CONNECT_ERROR. */
static void connect_response(struct mrcm_event *e, struct mrcm_id *p,
			     const struct mrc_cm_event *rec)
{
	p->remote_qpn = rec->remote_qpn;
	p->rnr_retry_count = rec->rnr_retry_count; /* the responder's, as InfiniBand's CM */
	if (!p->id.qp)
		return; /* the application moves its own QP and calls rdma_establish */
	if (mrcm_qp_rtr(p) || mrcm_qp_rts(p) || rdma_establish(&p->id)) {
		e->ev.status = -errno;
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		rdma_reject(&p->id, NULL, 0);
		return;
	}
	e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
}

static uint8_t private_size(uint32_t kind, bool ud)
{
	switch (kind) {
	case MRC_CM_EV_CONNECT_REQUEST:
		return ud ? MRC_CM_PRIVATE_SIDR_REQ : MRC_CM_PRIVATE_REQ;
	case MRC_CM_EV_CONNECT_RESPONSE:
		return MRC_CM_PRIVATE_REP;
	case MRC_CM_EV_ESTABLISHED:
		return ud ? MRC_CM_PRIVATE_SIDR_REP : MRC_CM_PRIVATE_RTU;
	case MRC_CM_EV_REJECTED:
		return MRC_CM_PRIVATE_REJ;
	default:
		return 0;
	}
}

/* The record as the event the application reads; NULL when it is for no id here. */
static struct mrcm_event *translate(const struct mrc_cm_event *rec)
{
	struct mrcm_event *e;
	struct mrcm_id *p;
	bool ud;

	p = rec->kind == MRC_CM_EV_CONNECT_REQUEST ? request_id(rec) : mrcm_lookup(rec->id);
	if (!p)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e) {
		mrcm_release(p);
		return NULL;
	}
	e->held = p; /* until it is acknowledged */
	ud = p->id.qp_type == IBV_QPT_UD;
	e->ev.id = &p->id;
	e->ev.event = (enum rdma_cm_event_type)rec->kind;
	e->ev.status = rec->status;
	if (rec->kind == MRC_CM_EV_CONNECT_REQUEST)
		e->ev.listen_id = &p->listener->id;
	if (rec->kind == MRC_CM_EV_ROUTE_RESOLVED)
		mrcm_fill_path(p);
	if (ud && (rec->kind == MRC_CM_EV_CONNECT_REQUEST || rec->kind == MRC_CM_EV_ESTABLISHED))
		ud_param(e, p, rec, private_size(rec->kind, true));
	else
		conn_param(e, rec, private_size(rec->kind, ud));
	if (rec->kind == MRC_CM_EV_CONNECT_RESPONSE)
		connect_response(e, p, rec);
	return e;
}

static struct mrcm_event *removal(struct mrcm_channel *c)
{
	struct mrcm_id *p = mrcm_next_unremoved(c);
	struct mrcm_event *e;

	if (!p)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e) {
		mrcm_release(p);
		return NULL;
	}
	e->held = p;
	e->ev.id = &p->id;
	e->ev.event = RDMA_CM_EVENT_DEVICE_REMOVAL;
	return e;
}

static int get_event(struct mrcm_channel *c, struct rdma_cm_event **event)
{
	struct mrc_cm_event rec;
	struct mrcm_event *e;
	ssize_t n;

	for (;;) {
		if (c->gone) {
			e = removal(c);
			if (!e) {
				errno = ENODEV;
				return -1;
			}
			*event = &e->ev;
			return 0;
		}
		/* blocking or not as the application set the descriptor */
		n = recv(c->ch.fd, &rec, sizeof(rec), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0 && __atomic_load_n(&c->destroyed, __ATOMIC_ACQUIRE)) {
			for (;;)
				pause(); /* see mrcm_channel_free */
		}
		if (n == 0) {
			c->gone = true; /* the daemon went */
			continue;
		}
		if ((size_t)n != sizeof(rec) || rec.magic != MRC_CM_EVENT_MAGIC)
			continue; /* not a record this library speaks */
		e = translate(&rec);
		if (e) {
			*event = &e->ev;
			return 0;
		}
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct mrcm_channel *c = (struct mrcm_channel *)channel;
	int ret;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	__atomic_add_fetch(&c->readers, 1, __ATOMIC_ACQ_REL);
	ret = get_event(c, event);
	__atomic_sub_fetch(&c->readers, 1, __ATOMIC_ACQ_REL);
	return ret;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct mrcm_event *e = (struct mrcm_event *)event;

	if (!event) {
		errno = EINVAL;
		return -1;
	}
	if (e->held)
		mrcm_release(e->held);
	free(e);
	return 0;
}

int mrcm_complete(struct mrcm_id *p)
{
	struct rdma_cm_event *ev;

	if (!p->sync)
		return 0;
	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	if (rdma_get_cm_event(&p->chan->ch, &ev))
		return -1;
	p->id.event = ev;
	if (ev->status) {
		errno = ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED
			: ev->status < 0			  ? -ev->status
								  : ev->status;
		return -1;
	}
	if (ev->event == RDMA_CM_EVENT_ADDR_ERROR || ev->event == RDMA_CM_EVENT_ROUTE_ERROR ||
	    ev->event == RDMA_CM_EVENT_UNREACHABLE || ev->event == RDMA_CM_EVENT_CONNECT_ERROR ||
	    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		errno = EIO;
		return -1;
	}
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED",	  "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED",	  "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST",  "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR",	  "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED",	  "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED",	  "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN",	  "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE",	  "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event]
								   : "UNKNOWN EVENT";
}

_Static_assert((int)MRC_CM_EV_ESTABLISHED == (int)RDMA_CM_EVENT_ESTABLISHED &&
		       (int)MRC_CM_EV_DEVICE_REMOVAL == (int)RDMA_CM_EVENT_DEVICE_REMOVAL &&
		       (int)MRC_CM_EV_TIMEWAIT_EXIT == (int)RDMA_CM_EVENT_TIMEWAIT_EXIT,
	       "the daemon's event kinds are rdma_cm's numbers");
