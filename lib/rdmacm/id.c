/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rdma_cm ids: the process's device context, the table from the daemon's handles to ids, and
 * the calls that move an id through its life (internal.h draws it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmacm/internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context *verbs;
static struct mrcm_id *ids[MRCM_MAX_IDS];

struct ibv_context *mrcm_verbs(void)
{
	struct ibv_device **list;

	pthread_mutex_lock(&lock);
	if (!verbs) {
		list = ibv_get_device_list(NULL);
		if (list && list[0])
			verbs = ibv_open_device(list[0]);
		else
			errno = ENODEV;
		ibv_free_device_list(list);
	}
	pthread_mutex_unlock(&lock);
	return verbs;
}

int mrcm_request(struct mrc_ctl_cm *r, int fd, struct mrc_ctl_cm_reply *out)
{
	struct ibv_context *v = mrcm_verbs();
	struct mrc_ctl_cm_reply ignored;
	uint32_t len = 0;
	int err;

	if (!v)
		return -1;
	err = mrv_request(to_ctx(v), MRC_CTL_CM, r, sizeof(*r), fd >= 0 ? &fd : NULL,
			  fd >= 0 ? 1 : 0, out ? out : &ignored, sizeof(*out), &len, NULL, NULL);
	if (!err && len != sizeof(*out))
		err = EPROTO;
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

static unsigned slot(uint32_t handle)
{
	return handle % MRCM_MAX_IDS;
}

struct mrcm_id *mrcm_lookup(uint32_t handle)
{
	struct mrcm_id *p;

	pthread_mutex_lock(&lock);
	p = ids[slot(handle)];
	if (p && p->handle != handle)
		p = NULL;
	if (p)
		p->refs++; /* an event thread's, while another may destroy the id */
	pthread_mutex_unlock(&lock);
	return p;
}

void mrcm_release(struct mrcm_id *p)
{
	bool last;

	pthread_mutex_lock(&lock);
	last = !--p->refs && p->destroyed;
	pthread_mutex_unlock(&lock);
	if (last) {
		free(p->id.route.path_rec);
		free(p);
	}
}

int mrcm_forget(uint32_t handle)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_DESTROY_ID, .id = handle };

	return mrcm_request(&r, -1, NULL);
}

static void enter(struct mrcm_id *p)
{
	pthread_mutex_lock(&lock);
	ids[slot(p->handle)] = p;
	pthread_mutex_unlock(&lock);
}

struct mrcm_id *mrcm_next_unremoved(struct mrcm_channel *chan)
{
	struct mrcm_id *found = NULL;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MRCM_MAX_IDS && !found; i++)
		if (ids[i] && ids[i]->chan == chan && !ids[i]->removed)
			found = ids[i];
	if (found) {
		found->removed = true;
		found->refs++; /* the DEVICE_REMOVAL event's */
	}
	pthread_mutex_unlock(&lock);
	return found;
}

static struct mrcm_id *id_alloc(struct mrcm_channel *chan, enum rdma_port_space ps,
				void *context)
{
	struct mrcm_id *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->id.verbs = mrcm_verbs();
	p->id.channel = &chan->ch;
	p->id.context = context;
	p->id.ps = ps;
	p->id.port_num = 1;
	p->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
	p->chan = chan;
	return p;
}

struct mrcm_id *mrcm_adopt(uint32_t handle, struct mrcm_channel *chan, enum rdma_port_space ps,
			   void *context)
{
	struct mrcm_id *p = id_alloc(chan, ps, context);

	if (!p)
		return NULL;
	p->handle = handle;
	p->bound = true;
	p->refs = 1; /* the CONNECT_REQUEST's, as a lookup's */
	enter(p);
	return p;
}

/* --- creating and destroying ---------------------------------------------------------------- */

static uint8_t ps_byte(enum rdma_port_space ps)
{
	return (uint8_t)(ps & 0xff);
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct mrcm_channel *chan = (struct mrcm_channel *)channel;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CREATE_ID, .port_space = ps_byte(ps) };
	struct mrc_ctl_cm_reply out;
	struct mrcm_id *p;
	bool sync = !chan;

	if (!id || (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB &&
		    ps != RDMA_PS_IPOIB)) {
		errno = EINVAL;
		return -1;
	}
	if (sync && !(chan = mrcm_channel_new()))
		return -1;
	p = id_alloc(chan, ps, context);
	if (!p || !p->id.verbs) {
		free(p);
		if (sync)
			mrcm_channel_free(chan);
		return -1;
	}
	r.channel = chan->handle;
	if (mrcm_request(&r, -1, &out)) {
		int err = errno;

		free(p);
		if (sync)
			mrcm_channel_free(chan);
		errno = err;
		return -1;
	}
	p->handle = out.handle;
	p->sync = sync;
	enter(p);
	*id = &p->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	bool last;

	/* the daemon finishes what the connection owes its peer; a daemon gone has
	 * nothing to finish */
	if (mrcm_forget(p->handle) && errno != ENODEV)
		return -1;
	if (id->event)
		rdma_ack_cm_event(id->event);
	if (p->sync)
		mrcm_channel_free(p->chan);
	/* events the application has not acknowledged keep it until they are */
	pthread_mutex_lock(&lock);
	if (ids[slot(p->handle)] == p)
		ids[slot(p->handle)] = NULL;
	p->destroyed = true;
	last = !p->refs;
	pthread_mutex_unlock(&lock);
	if (last) {
		free(id->route.path_rec);
		free(p);
	}
	return 0;
}

/* --- addresses ------------------------------------------------------------------------------ */

static int bind_to(struct mrcm_id *p, const uint8_t addr[16], uint16_t port)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_BIND, .id = p->handle, .port = port };
	struct mrc_ctl_cm_reply out;
	bool v6 = !mrc_addr_is_v4(addr);

	memcpy(r.addr, addr, 16);
	if (mrcm_request(&r, -1, &out))
		return -1;
	p->bound = true;
	mrcm_addr_to(&p->id.route.addr.src_storage, addr, out.port, v6);
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	uint8_t a[16];
	uint16_t port;

	if (!addr || mrcm_addr_from(addr, a, &port))
		return -1;
	if (p->bound) {
		errno = EINVAL;
		return -1;
	}
	return bind_to(p, a, port);
}

/* The address the host's routes send to dst from, as the kernel's rdma_cm picks it. */
static int source_for(const struct sockaddr *dst, uint8_t src[16])
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint16_t port;
	int fd, err = 0;

	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	memcpy(&ss, dst, dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_in));
	if (ss.ss_family == AF_INET && !((struct sockaddr_in *)&ss)->sin_port)
		((struct sockaddr_in *)&ss)->sin_port = htons(9); /* connect() needs one */
	if (ss.ss_family == AF_INET6 && !((struct sockaddr_in6 *)&ss)->sin6_port)
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(9);
	if (connect(fd, (struct sockaddr *)&ss, dst->sa_family == AF_INET6
						    ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_in)) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len))
		err = errno;
	close(fd);
	if (!err && mrcm_addr_from((struct sockaddr *)&ss, src, &port))
		err = errno;
	return err;
}

static int tell_addr(struct mrcm_id *p, int err)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_ADDR, .id = p->handle, .backlog = (uint32_t)err };

	if (mrcm_request(&r, -1, NULL))
		return -1;
	return mrcm_complete(p);
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	uint8_t dst[16], src[16];
	uint16_t dport, sport;
	int err;

	(void)timeout_ms; /* the answer is at hand: the host's routes */
	if (!dst_addr || mrcm_addr_from(dst_addr, dst, &dport))
		return -1;
	if (src_addr && src_addr->sa_family && !p->bound && rdma_bind_addr(id, src_addr))
		return -1;
	mrcm_addr_to(&id->route.addr.dst_storage, dst, dport, dst_addr->sa_family == AF_INET6);
	if (p->bound && mrcm_addr_from(&id->route.addr.src_addr, src, &sport))
		return -1;
	if (!p->bound || mrcm_addr_any(src)) { /* the source is the routes' to pick */
		err = source_for(dst_addr, src);
		if (!err && mrcm_gid_index(id->verbs, src) < 0)
			err = ENODEV; /* the route leaves by an interface no plane is on */
		if (!err && bind_to(p, src, p->bound ? sport : 0))
			err = errno;
		if (err)
			return tell_addr(p, err);
	}
	return tell_addr(p, 0);
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_ROUTE, .id = p->handle,
				.backlog = timeout_ms > 0 ? (uint32_t)timeout_ms : 2000 };
	uint16_t port;

	if (mrcm_addr_from(&id->route.addr.dst_addr, r.addr, &port))
		return -1;
	mrcm_fill_path(p);
	if (mrcm_request(&r, -1, NULL))
		return -1;
	return mrcm_complete(p);
}

/* --- connections ---------------------------------------------------------------------------- */

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_LISTEN, .id = p->handle,
				.backlog = backlog > 0 ? (uint32_t)backlog : 0 };

	if (!p->bound) { /* as the kernel: every address, a port of its choice */
		uint8_t any[16] = { [10] = 0xff, [11] = 0xff };

		if (bind_to(p, any, 0))
			return -1;
	}
	return mrcm_request(&r, -1, NULL);
}

static void take_param(struct mrcm_id *p, const struct rdma_conn_param *c)
{
	uint8_t max = MRV_MAX_RD_ATOM;

	p->responder_resources = c && c->responder_resources < max ? c->responder_resources : max;
	p->initiator_depth = c && c->initiator_depth < max ? c->initiator_depth : max;
	if (c && !c->responder_resources)
		p->responder_resources = 0;
	if (c && !c->initiator_depth)
		p->initiator_depth = 0;
	p->retry_count = c ? (c->retry_count > 7 ? 7 : c->retry_count) : 7;
	p->rnr_retry_count = c ? (c->rnr_retry_count > 7 ? 7 : c->rnr_retry_count) : 7;
}

static void put_param(struct mrc_ctl_cm *r, const struct mrcm_id *p,
		      const struct rdma_conn_param *c)
{
	r->responder_resources = p->responder_resources;
	r->initiator_depth = p->initiator_depth;
	r->retry_count = p->retry_count;
	r->rnr_retry_count = p->rnr_retry_count;
	if (c) {
		r->flags = (uint8_t)((c->flow_control ? MRC_CM_F_FLOW_CONTROL : 0) |
				     (c->srq || (p->id.qp && p->id.qp->srq) ? MRC_CM_F_SRQ : 0));
		r->private_len = c->private_data ? c->private_data_len : 0;
		if (r->private_len)
			memcpy(r->private_data, c->private_data, r->private_len);
	}
	r->qpn = p->id.qp ? p->id.qp->qp_num : c ? c->qp_num : 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CONNECT, .id = p->handle };
	bool ud = id->qp_type == IBV_QPT_UD;

	if (conn_param && conn_param->private_data_len >
				  (ud ? MRC_CM_PRIVATE_SIDR_REQ : MRC_CM_PRIVATE_REQ)) {
		errno = EINVAL;
		return -1;
	}
	take_param(p, conn_param);
	put_param(&r, p, conn_param);
	if (mrcm_addr_from(&id->route.addr.dst_addr, r.addr, &r.port))
		return -1;
	if (mrcm_request(&r, -1, NULL))
		return -1;
	return mrcm_complete(p);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_ACCEPT, .id = p->handle };
	bool ud = id->qp_type == IBV_QPT_UD;

	if (conn_param && conn_param->private_data_len >
				  (ud ? MRC_CM_PRIVATE_SIDR_REP : MRC_CM_PRIVATE_REP)) {
		errno = EINVAL;
		return -1;
	}
	take_param(p, conn_param);
	if (!ud && p->peer_retry <= 7)
		p->retry_count = p->peer_retry; /* the requester's, as InfiniBand's CM gives it */
	put_param(&r, p, conn_param);
	if (ud) {
		r.qkey = RDMA_UDP_QKEY;
		if (id->qp && mrcm_qp_ud_ready(p))
			return -1;
	} else if (id->qp && (mrcm_qp_rtr(p) || mrcm_qp_rts(p))) {
		/* the QP cannot take the connection: the requester hears a REJ */
		int err = errno;

		rdma_reject(id, NULL, 0);
		errno = err;
		return -1;
	}
	if (mrcm_request(&r, -1, NULL))
		return -1;
	if (p->sync && !ud)
		return mrcm_complete(p); /* ESTABLISHED */
	return 0;
}

static int reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_REJECT, .id = p->handle,
				.private_len = private_data ? private_data_len : 0 };

	if (r.private_len > MRC_CM_PRIVATE_REJ) {
		errno = EINVAL;
		return -1;
	}
	if (r.private_len)
		memcpy(r.private_data, private_data, r.private_len);
	return mrcm_request(&r, -1, NULL);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_ESTABLISH, .id = p->handle };

	return mrcm_request(&r, -1, NULL);
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_DISCONNECT, .id = p->handle };

	if (id->qp) { /* as librdmacm: the QP stops first, its work flushed */
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
	}
	if (mrcm_request(&r, -1, NULL))
		return -1;
	return mrcm_complete(p);
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct mrcm_channel *chan = (struct mrcm_channel *)channel;
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_MIGRATE, .id = p->handle };
	bool sync = !chan;

	if (sync && !(chan = mrcm_channel_new()))
		return -1;
	r.channel = chan->handle;
	if (mrcm_request(&r, -1, NULL)) {
		int err = errno;

		if (sync)
			mrcm_channel_free(chan);
		errno = err;
		return -1;
	}
	if (p->sync)
		mrcm_channel_free(p->chan);
	p->chan = chan;
	p->sync = sync;
	id->channel = &chan->ch;
	return 0;
}

/* --- the rest of the API --------------------------------------------------------------------- */

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	struct mrcm_id *p = (struct mrcm_id *)id;

	if (!optval) {
		errno = EINVAL;
		return -1;
	}
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == 1) {
		p->tos = *(uint8_t *)optval; /* recorded; the planes' ECN field is the transport's */
		return 0;
	}
	if (level == RDMA_OPTION_ID &&
	    (optname == RDMA_OPTION_ID_REUSEADDR || optname == RDMA_OPTION_ID_AFONLY) &&
	    optlen == sizeof(int))
		return 0; /* ports are the daemon's, per address family's mapped form */
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT && optlen == 1)
		return 0; /* the transport's retry clock is its own (SPEC 7.3) */
	errno = level == RDMA_OPTION_IB ? ENOSYS : EINVAL; /* InfiniBand paths: not here */
	return -1;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.src_addr;

	return sa->sa_family == AF_INET6 ? id->route.addr.src_sin6.sin6_port
					 : id->route.addr.src_sin.sin_port;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.dst_addr;

	return sa->sa_family == AF_INET6 ? id->route.addr.dst_sin6.sin6_port
					 : id->route.addr.dst_sin.sin_port;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = mrcm_verbs();
	if (num_devices)
		*num_devices = list[0] ? 1 : 0;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id;
	(void)event;
	return 0; /* the daemon knows the connection is in use from its own traffic */
}
