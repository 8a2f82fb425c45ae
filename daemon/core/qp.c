/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Queue pairs: created with their rings, connected (RTR: the engine connection, resolved to
 * every plane the peer shares), made ready (RTS: the send half), failed, destroyed (their
 * connection lingers), and fed: ring entries checked and turned into engine work requests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/shm_map.h"
#include "proto/bytes.h"
#include "proto/random.h"
#include "proto/seq.h"

/* A QP's counts go into the totals of those gone before it. */
static void qp_retire_counts(struct mrcd_core *c, const struct mrcd_qp *qp)
{
	c->t.retired.completions += qp->completions;
	c->t.retired.error_completions += qp->error_completions;
	for (unsigned k = 0; qp->conn && k < mrc_conn_n_paths(qp->conn); k++) {
		const struct mrc_path *p = mrc_conn_path(qp->conn, k);
		unsigned plane = p->plane % MRC_MAX_PLANES;

		c->t.retired.path_tx[plane] += p->stats.tx_packets;
		c->t.retired.path_retx[plane] += p->stats.retransmits;
		c->t.retired.path_ecn[plane] += p->stats.ecn_echoes;
	}
}

/*
 * The application destroyed the QP, or its client went: the rings, the shadows and the slot
 * go at once; the engine connection lingers (SPEC 11.4) so the peer hears every
 * acknowledgement it still needs, then goes by itself (pump.c).
 */
void core_qp_free(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	unsigned slot = (unsigned)(qp - c->t.qps);
	struct mrcd_cq *scq = &c->t.cqs[qp->send_cq], *rcq = &c->t.cqs[qp->recv_cq];
	struct mrcd_shard *sh = core_shard_of(c, qp);

	qp_retire_counts(c, qp);
	if (qp->n_windows)
		core_qp_windows_gone(c, qp);
	mrcd_sched_forget(&sh->sched, slot);
	if (qp->path_report_listed)
		for (unsigned j = 0; j < sh->n_path_report; j++)
			if (sh->path_report[j] == slot) {
				sh->path_report[j] = sh->path_report[--sh->n_path_report];
				break;
			}
	scq->n_users--;
	rcq->n_users--;
	if (qp->srq >= 0)
		c->t.srqs[qp->srq].n_users--;
	if (qp->fast)
		c->fast->qp_clear(c->io, qp->qpn);
	if (qp->conn) {
		struct mrcd_lingering l = { .qpn = qp->qpn, .conn = qp->conn,
					    .peer_node = qp->peer_node, .peer_port = qp->peer_port,
					    .peer_planes = qp->peer_planes };

		memcpy(l.peer_addr, qp->peer_addr, sizeof(l.peer_addr));
		mrc_conn_close(qp->conn, now);
		mrcd_linger_add(&sh->lingering, slot, &l);
		qp->conn = NULL;
		mrcd_sched_ready(&sh->sched, slot); /* it acknowledges what it holds at once */
	}
	free(qp->sq_wr_id);
	free(qp->rq_wr_id);
	c->ops->unmap(c->io, qp->sq_mem, qp->sq_len);
	c->ops->unmap(c->io, qp->rq_mem, qp->rq_len);
	c->t.mapped_bytes -= qp->sq_len + qp->rq_len;
	/* out of the active list: the last entry takes its place */
	c->t.active[qp->active_at] = c->t.active[--c->t.n_qps];
	c->t.qps[c->t.active[qp->active_at]].active_at = qp->active_at;
	c->t.client[qp->owner].n_qps--;
	sh->n_qps--;
	memset(qp, 0, sizeof(*qp));
	qp->owner = -1;
}

/*
 * The shard a new QP runs on, for its life. A UD QP's is the control thread's (its datagrams
 * use the peer table); QPs of one SRQ share a shard, so its ring has one consumer: a UD QP
 * cannot join an SRQ whose QPs run on another (-EINVAL from the caller); any other QP goes
 * where the fewest QPs run now.
 */
static int qp_place(const struct mrcd_core *c, uint8_t type, const struct mrcd_srq *srq)
{
	unsigned best = MRCD_CONTROL_SHARD;

	if (srq && srq->n_users)
		return type != MRC_CTL_QPT_UD || srq->shard == MRCD_CONTROL_SHARD ? (int)srq->shard
										  : -1;
	if (type == MRC_CTL_QPT_UD)
		return MRCD_CONTROL_SHARD;
	for (unsigned i = 1; i < c->n_shards; i++)
		if (c->shard[i].n_qps < c->shard[best].n_qps)
			best = i;
	return (int)best;
}

/*
 * A free QP slot of the shard, the first from a random one: the QPN's low bits, as
 * unpredictable as its generation. A slot where a destroyed QP lingers (SPEC 11.4) is
 * taken only when no other is free, and that ends its lingering.
 */
static struct mrcd_qp *qp_slot_free(struct mrcd_core *c, unsigned shard, unsigned *slot_out)
{
	const unsigned per_shard = MRCD_MAX_QPS / c->n_shards;
	unsigned start = (unsigned)mrc_prf_next(&c->t.rng) % per_shard;
	struct mrcd_shard *sh = &c->shard[shard];
	int fallback = -1;

	/* the shard's slots are those of its residue: mrcd_shard_of_qpn */
	for (unsigned k = 0; k < per_shard; k++) {
		unsigned slot = ((start + k) % per_shard) * c->n_shards + shard;

		if (c->t.qps[slot].owner >= 0)
			continue;
		if (sh->lingering.by_slot[slot].conn) {
			if (fallback < 0)
				fallback = (int)slot;
			continue;
		}
		fallback = (int)slot;
		break;
	}
	if (fallback < 0)
		return NULL;
	*slot_out = (unsigned)fallback;
	return &c->t.qps[fallback];
}

/*
 * A QPN for the slot: a random non-zero generation, never the slot's last one, so a peer
 * still holding the old number reaches nothing. A destroyed QP lingering in the slot has
 * that last number (taking the slot ends it), so no new QP takes its number.
 */
static uint32_t qp_new_number(struct mrcd_core *c, unsigned slot)
{
	const unsigned gens = 1u << MRCD_HANDLE_SLOT_BITS;
	unsigned gen;

	do
		gen = (unsigned)mrc_prf_next(&c->t.rng) % gens;
	while (!gen || gen == c->t.qpn_generation[slot]);
	c->t.qpn_generation[slot] = (uint16_t)gen;
	return gen << MRCD_HANDLE_SLOT_BITS | slot;
}

int core_create_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		   struct mrc_ctl_qp_created *out)
{
	struct mrc_ctl_create_qp r;
	struct mrcd_cq *scq, *rcq;
	struct mrcd_srq *srq = NULL;
	struct mrcd_qp *qp = NULL;
	unsigned slot, shard;
	int err, placed;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	scq = core_cq_by_handle(&c->t, (int)owner, r.send_cq);
	rcq = core_cq_by_handle(&c->t, (int)owner, r.recv_cq);
	if (!scq || !rcq || !r.max_send_wr || !r.max_recv_wr ||
	    r.max_send_wr > MRCD_MAX_RING_ENTRIES || r.max_recv_wr > MRCD_MAX_RING_ENTRIES ||
	    r.sq_sig_all > 1 || !r.pd || r.pd > MRC_CTL_MAX_PD ||
	    (r.type != MRC_CTL_QPT_RC && r.type != MRC_CTL_QPT_UD))
		return -EINVAL;
	if (r.srq && !(srq = core_srq_by_handle(&c->t, (int)owner, r.srq)))
		return -EINVAL;
	if (c->t.client[owner].n_qps >= MRCD_CLIENT_MAX_QPS)
		return -ENOSPC;
	err = core_user_allows(c, c->t.client[owner].uid, MRC_CTL_USER_QPS, 1);
	if (err)
		return err;
	placed = qp_place(c, (uint8_t)r.type, srq);
	if (placed < 0) {
		core_log(c, MRCD_NOTICE, "client pid %d: a UD QP cannot share an SRQ with QPs of "
			 "worker %u (UD QPs run on worker 0)", c->t.client[owner].pid, srq->shard);
		return -EINVAL;
	}
	shard = (unsigned)placed;
	qp = qp_slot_free(c, shard, &slot);
	if (!qp)
		return -ENOSPC;
	memset(qp, 0, sizeof(*qp));
	qp->qpn = qp_new_number(c, slot);
	qp->shard = shard;
	qp->core = c;
	qp->owner = -1;
	/* the two rings' memory goes with the reply: the send queue's first */
	err = core_ring_new(c, MRC_RING_SQ, core_ring_entries(r.max_send_wr), qp->qpn,
			    &qp->sq_mem, &qp->sq_len, &qp->sq);
	if (err)
		return err;
	err = core_ring_new(c, MRC_RING_RQ, core_ring_entries(r.max_recv_wr), qp->qpn,
			    &qp->rq_mem, &qp->rq_len, &qp->rq);
	if (err) {
		c->ops->unmap(c->io, qp->sq_mem, qp->sq_len);
		c->t.mapped_bytes -= qp->sq_len;
		return err;
	}
	qp->sq_wr_id = calloc(qp->sq.entries, sizeof(*qp->sq_wr_id));
	qp->rq_wr_id = calloc(qp->rq.entries, sizeof(*qp->rq_wr_id));
	if (!qp->sq_wr_id || !qp->rq_wr_id) {
		free(qp->sq_wr_id);
		free(qp->rq_wr_id);
		c->ops->unmap(c->io, qp->sq_mem, qp->sq_len);
		c->ops->unmap(c->io, qp->rq_mem, qp->rq_len);
		c->t.mapped_bytes -= qp->sq_len + qp->rq_len;
		return -ENOMEM;
	}
	qp->owner = (int)owner;
	qp->type = (uint8_t)r.type;
	qp->pd = r.pd;
	qp->srq = srq ? (int)(srq - c->t.srqs) : -1;
	if (srq) {
		if (!srq->n_users)
			srq->shard = shard;
		srq->n_users++;
	}
	qp->send_cq = (int)(scq - c->t.cqs);
	qp->recv_cq = (int)(rcq - c->t.cqs);
	qp->sq_sig_all = r.sq_sig_all;
	qp->state = MRC_CTL_QP_IDLE;
	qp->active_at = c->t.n_qps;
	c->t.active[c->t.n_qps++] = (uint16_t)slot;
	c->t.client[owner].n_qps++;
	c->shard[shard].n_qps++;
	scq->n_users++;
	rcq->n_users++;
	out->qp_num = qp->qpn;
	out->sq_entries = qp->sq.entries;
	out->rq_entries = qp->rq.entries;
	out->doorbell_bit = slot;
	_Static_assert(MRCD_MAX_QPS <= MRC_DOORBELL_BITS, "a doorbell bit per QP slot");
	return 0;
}

bool core_is_local_addr(const struct mrcd_config *cfg, const uint8_t addr[16])
{
	for (unsigned i = 0; i < cfg->n_planes; i++)
		if (!memcmp(cfg->planes[i].addr.addr, addr, 16))
			return true;
	return false;
}

/* The peer's address on each of our planes, from what discovery learned (or ourselves), and
 * with authentication the QP's keys from the peer's (NULL or unbound: none to be had). */
static void qp_learn_peer(struct mrcd_core *c, struct mrcd_qp *qp,
			  const struct mrc_node_info *info, const struct mrc_peer_keys *keys)
{
	qp->auth_ready = c->auth && keys && keys->bound;
	if (qp->auth_ready)
		mrc_auth_qp_keys(keys, qp->qpn, qp->req.dest_qp_num, &qp->auth_tx, &qp->auth_rx);
	if (qp->auth_ready && c->auth->mode == MRC_AUTH_FULL)
		mrc_auth_qp_seal_keys(keys, qp->qpn, qp->req.dest_qp_num, &qp->seal_tx,
				      &qp->seal_rx);
	qp->peer_node = info->node_id;
	qp->peer_port = info->udp_port;
	qp->peer_max_payload = info->max_payload;
	qp->peer_planes = core_shared_planes(c, info, qp->peer_addr);
	if (qp->fast)
		c->fast->qp_peer(c->io, qp->qpn, qp->peer_planes,
				 (const uint8_t(*)[16])qp->peer_addr);
}

void core_qp_error(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	if (qp->state != MRC_CTL_QP_ERR)
		core_event(c, MRCD_INFO, "qp %u error (client pid %d)", qp->qpn,
			   c->t.client[qp->owner].pid);
	qp->state = MRC_CTL_QP_ERR;
	if (qp->fast) {
		c->fast->qp_clear(c->io, qp->qpn); /* nothing lands after an error */
		qp->fast = false;
	}
	__atomic_fetch_or(&qp->sq.consumer->aux, MRC_QP_AUX_ERROR, __ATOMIC_RELEASE);
	if (qp->conn)
		mrc_conn_set_error(qp->conn, now);
	core_qp_touch(c, qp); /* posted work completes flushed */
}

/*
 * The RNR wait a QP asks of its peer, in 10 us units, from verbs' min_rnr_timer (the
 * IB encoding: 0 is 655.36 ms, then 0.01 ms up to 491.52 ms).
 */
static uint16_t rnr_wait_units(uint8_t min_rnr_timer)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
		480,	640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
		20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};
	uint32_t units = us[min_rnr_timer & 31] / 10;

	return (uint16_t)(units > UINT16_MAX ? UINT16_MAX : units);
}

/* What the peer may do here, as the engine spells it. */
static unsigned engine_access(uint32_t ctl_access)
{
	return (ctl_access & MRC_CTL_ACCESS_REMOTE_WRITE ? MRC_ACCESS_REMOTE_WRITE : 0) |
	       (ctl_access & MRC_CTL_ACCESS_REMOTE_READ ? MRC_ACCESS_REMOTE_READ : 0) |
	       (ctl_access & MRC_CTL_ACCESS_REMOTE_ATOMIC ? MRC_ACCESS_REMOTE_ATOMIC : 0);
}

/* RTS: the send half starts. */
static void qp_ready(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	qp->ready_pending = false;
	if (mrc_conn_set_send(qp->conn, qp->ready.retry_cnt,
			      mrc_verbs_timeout_ns(qp->ready.timeout), qp->ready.rnr_retry,
			      qp->ready.max_rd_atomic)) {
		core_log(c, MRCD_WARNING, "QP %u: RTS after sending began", qp->qpn);
		core_qp_error(c, qp, now);
		return;
	}
	qp->state = MRC_CTL_QP_RTS;
	core_qp_touch(c, qp); /* sends posted before RTS go now */
}

/* The peer's planes are known: build the engine connection with a path per (plane, port). */
static void qp_start(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	static const struct mrc_conn_callbacks cb = {
		.mr_lookup = core_mr_lookup,
		.complete = core_on_complete,
		.may_invalidate = core_may_invalidate,
		.invalidate = core_invalidate,
	};
	struct mrc_conn_config cc;
	uint16_t ports[MRCD_SPORTS_PER_PLANE];
	unsigned per_plane = qp->req.paths_per_plane ? qp->req.paths_per_plane
						      : c->cfg->paths_per_plane;
	unsigned n_planes = 0;
	uint16_t payload = c->peers.local.max_payload;
	/* the application may narrow the planes it sends on (metaroce_qp_set_paths); it still
	 * hears the peer on every plane they share, whatever the peer chose */
	uint32_t send_planes = qp->peer_planes & (qp->req.plane_mask ? qp->req.plane_mask : ~0u);

	if (c->auth && !qp->auth_ready) {
		char a[48];

		core_log(c, MRCD_WARNING, "QP %u: peer %s never answered under an allowed key: "
			 "nothing to authenticate its packets with", qp->qpn,
			 core_addr_str(qp->req.dgid, a, sizeof(a)));
		core_qp_error(c, qp, now);
		return;
	}
	mrc_conn_config_default(&cc);
	cc.mode = c->cfg->rocev2 ? MRC_MODE_ROCEV2 : MRC_MODE_METAROCE;
	/* the backends send with gather lists: payloads are copied once, by the kernel */
	cc.payload_by_reference = true;
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++)
		n_planes += (send_planes >> p) & 1;
	if (!n_planes) {
		core_log(c, MRCD_WARNING, "QP %u: no plane shared with the peer%s", qp->qpn,
			 qp->req.plane_mask ? " within the QP's plane mask" : "");
		core_qp_error(c, qp, now);
		return;
	}
	/* every shared plane gets paths, within the engine's limit */
	if (per_plane * n_planes > MRC_MAX_PATHS)
		per_plane = MRC_MAX_PATHS / n_planes;
	if (per_plane > MRCD_SPORTS_PER_PLANE)
		per_plane = MRCD_SPORTS_PER_PLANE;
	cc.n_paths = 0;
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++) {
		unsigned got;

		if (!(send_planes >> p & 1))
			continue;
		got = c->ops->sports(c->io, qp->shard, (uint8_t)p, ports, per_plane);
		for (unsigned k = 0; k < got; k++)
			cc.paths[cc.n_paths++] = (struct mrc_path_config){ (uint8_t)p, ports[k] };
	}
	if (qp->peer_max_payload && qp->peer_max_payload < payload)
		payload = qp->peer_max_payload;
	if (qp->req.path_mtu && qp->req.path_mtu < payload)
		payload = qp->req.path_mtu; /* a path MTU below the port's caps it */
	cc.max_payload = payload;
	cc.rto = (struct mrc_rtt_limits){ .initial_rto_ns = c->cfg->rto_initial_ns,
					  .min_rto_ns = c->cfg->rto_min_ns,
					  .max_rto_ns = c->cfg->rto_max_ns };
	/* a destroyed QP lingers 2 x rto_max, within the engine's bound */
	cc.linger_quiet_ns = 2 * c->cfg->rto_max_ns < cc.linger_max_ns ? 2 * c->cfg->rto_max_ns
									: cc.linger_max_ns;
	cc.local_qpn = qp->qpn;
	cc.remote_qpn = qp->req.dest_qp_num;
	/* verbs' PSNs stay with the application: the wire's come from the node ids and QPNs
	 * [R-116] */
	{
		/* a peer whose node id discovery never learned: 0 for both ends, as its daemon
		 * uses when it cannot learn ours either */
		uint64_t mine = qp->peer_node ? c->peers.local.node_id : 0;

		cc.sq_psn = mrc_initial_psn(mine, qp->qpn, qp->peer_node, qp->req.dest_qp_num);
		cc.rq_psn = mrc_initial_psn(qp->peer_node, qp->req.dest_qp_num, mine, qp->qpn);
	}
	if (c->auth) {
		/* secret keys make secret PSNs: a forger cannot aim at the window either */
		cc.auth = true;
		cc.auth_tx = qp->auth_tx;
		cc.auth_rx = qp->auth_rx;
		cc.sq_psn = mrc_auth_initial_psn(&qp->auth_tx);
		cc.rq_psn = mrc_auth_initial_psn(&qp->auth_rx);
		cc.seal = c->auth->mode == MRC_AUTH_FULL;
		cc.seal_tx = qp->seal_tx;
		cc.seal_rx = qp->seal_rx;
		cc.seal_counter = &c->sealed;
	}
	cc.sq_depth = qp->sq.entries;
	/* an SRQ's QP may hold as many of its receives as the SRQ has */
	cc.rq_depth = qp->srq >= 0 ? c->t.srqs[qp->srq].ring.entries : qp->rq.entries;
	cc.max_rd_atomic = 1;
	cc.max_dest_rd_atomic = qp->req.max_dest_rd_atomic;
	cc.qp_access = engine_access(qp->req.access);
	cc.sq_sig_all = qp->sq_sig_all;
	cc.rnr_retry_after = rnr_wait_units(qp->req.min_rnr_timer);
	cc.rate_domain = &core_shard_of(c, qp)->rate;
	cc.drop_counts = core_shard_of(c, qp)->qp_rx_drops;
	cc.seed = mrc_prf_next(&c->t.rng);
	qp->conn = mrc_conn_new(&cc, &cb, qp, now);
	if (!qp->conn) {
		core_log(c, MRCD_ERR, "QP %u: engine refused the connection: %s", qp->qpn,
			 strerror(errno));
		core_qp_error(c, qp, now);
		return;
	}
	qp->state = MRC_CTL_QP_RTR;
	if (c->fast && !cc.seal) { /* a sealed payload is opened by the engine only */
		/* from here on the program places this QP's READ responses, and its WRITEs if
		 * the QP admits them (else the engine answers each with NAK invalid_req, R-220) */
		qp->fast = true;
		qp->fast_base = cc.rq_psn;
		c->fast->qp_set(c->io, qp->qpn, qp->shard, core_owner_token(qp->owner, qp->pd),
				cc.rq_psn,
				(cc.qp_access & MRC_ACCESS_REMOTE_WRITE ? MRC_XDP_QP_PLACE : 0) |
					MRC_XDP_QP_PLACE_READ | (c->auth ? MRC_XDP_QP_AUTH : 0),
				qp->peer_planes, (const uint8_t(*)[16])qp->peer_addr,
				c->auth ? &qp->auth_rx : NULL); /* it checks the tags */
	}
	core_apply_drains(c, qp);
	core_log(c, MRCD_DEBUG, "QP %u -> %u: %u paths over %u planes", qp->qpn, cc.remote_qpn,
		 cc.n_paths, n_planes);
	if (qp->ready_pending)
		qp_ready(c, qp, now);
}

/* Each request about one QP begins with qp_num (internal.h). */
struct mrcd_qp *core_requested_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload,
				  size_t len, void *r, size_t size, uint8_t type, int *err)
{
	struct mrcd_qp *qp;
	uint32_t qpn;

	_Static_assert(__builtin_offsetof(struct mrc_ctl_connect_qp, qp_num) == 0 &&
			       __builtin_offsetof(struct mrc_ctl_ready_qp, qp_num) == 0 &&
			       __builtin_offsetof(struct mrc_ctl_modify_qp, qp_num) == 0 &&
			       __builtin_offsetof(struct mrc_ctl_ud_qp, qp_num) == 0,
		       "qp_num leads each QP request");
	*err = -EINVAL;
	if (len != size)
		return NULL;
	memcpy(r, payload, size);
	memcpy(&qpn, r, sizeof(qpn));
	qp = core_qp_by_num(&c->t, qpn);
	if (!qp || qp->owner != (int)owner) {
		*err = -ENOENT;
		return NULL;
	}
	return qp->type == type ? qp : NULL; /* -EINVAL: a request of the other kind of QP */
}

int core_connect_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		    uint64_t now)
{
	struct mrc_ctl_connect_qp r;
	struct mrcd_qp *qp;
	int idx, err;

	qp = core_requested_qp(c, owner, payload, len, &r, sizeof(r), MRC_CTL_QPT_RC, &err);
	if (!qp)
		return err;
	if (qp->state != MRC_CTL_QP_IDLE)
		return -EBUSY;
	if (r.dest_qp_num > MRC_QPN_MAX || r.dest_qp_num == MRC_QPN_DAEMON ||
	    r.min_rnr_timer > 31 || !r.max_dest_rd_atomic ||
	    r.max_dest_rd_atomic > MRC_CTL_MAX_RD_ATOMIC || (r.access & ~MRC_CTL_ACCESS_ALL) ||
	    r.paths_per_plane > MRCD_SPORTS_PER_PLANE ||
	    (r.path_mtu && (r.path_mtu < 256 || r.path_mtu > 4096)))
		return -EINVAL;
	qp->req = r;
	if (core_is_local_addr(c->cfg, r.dgid)) {
		qp_learn_peer(c, qp, &c->peers.local, &c->self_keys);
		qp_start(c, qp, now);
		return 0;
	}
	err = core_discover_addr(c, r.dgid, now);
	if (err)
		return err;
	idx = mrc_peer_table_find(&c->peers, r.dgid);
	if (idx >= 0 && c->peers.peers[idx].state == MRC_PEER_KNOWN &&
	    !mrc_peer_table_recheck(&c->peers, (unsigned)idx, MRCD_PEER_RECHECK_NS, now)) {
		qp_learn_peer(c, qp, &c->peers.peers[idx].info, &c->peers.peers[idx].keys);
		qp_start(c, qp, now);
	} else {
		qp->state = MRC_CTL_QP_RESOLVING;
		qp->resolve_deadline_ns = now + MRCD_RESOLVE_TIMEOUT_NS;
	}
	return 0;
}

int core_ready_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		  uint64_t now)
{
	struct mrc_ctl_ready_qp r;
	int err;
	struct mrcd_qp *qp =
		core_requested_qp(c, owner, payload, len, &r, sizeof(r), MRC_CTL_QPT_RC, &err);

	if (!qp)
		return err;
	if (r.retry_cnt > 7 || r.rnr_retry > 7 || !r.max_rd_atomic ||
	    r.max_rd_atomic > MRC_CTL_MAX_RD_ATOMIC || r.timeout > 31)
		return -EINVAL;
	if (qp->state != MRC_CTL_QP_RTR && qp->state != MRC_CTL_QP_RESOLVING)
		return -EBUSY;
	qp->ready = r;
	qp->ready_pending = true;
	if (qp->state == MRC_CTL_QP_RTR)
		qp_ready(c, qp, now);
	return 0;
}

/*
 * Verbs' RTS to RTS: new retry limits and clock, RNR wait and access, for the engine from
 * its next packet on. A QP whose WRITEs the XDP program placed and that no longer admits
 * them stops being placed there; one that admits them anew is served by the engine.
 */
int core_modify_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len)
{
	struct mrc_ctl_modify_qp r;
	int err;
	struct mrcd_qp *qp =
		core_requested_qp(c, owner, payload, len, &r, sizeof(r), MRC_CTL_QPT_RC, &err);

	if (!qp)
		return err;
	if (r.retry_cnt > 7 || r.rnr_retry > 7 || r.timeout > 31 || r.min_rnr_timer > 31 ||
	    (r.access & ~(MRC_CTL_ACCESS_ALL & ~MRC_CTL_ACCESS_LOCAL_WRITE)) || r.reserved)
		return -EINVAL;
	if (qp->state != MRC_CTL_QP_RTS && !qp->ready_pending)
		return -EBUSY; /* not at RTS: ERR, or RTS never reached */
	qp->req.access = r.access;
	qp->req.min_rnr_timer = r.min_rnr_timer;
	qp->ready.retry_cnt = r.retry_cnt;
	qp->ready.rnr_retry = r.rnr_retry;
	qp->ready.timeout = r.timeout;
	if (qp->conn)
		mrc_conn_modify(qp->conn, r.retry_cnt, mrc_verbs_timeout_ns(r.timeout),
				r.rnr_retry, rnr_wait_units(r.min_rnr_timer),
				engine_access(r.access));
	if (qp->fast && !(r.access & MRC_CTL_ACCESS_REMOTE_WRITE))
		c->fast->qp_clear_flags(c->io, qp->qpn, MRC_XDP_QP_PLACE);
	return 0;
}

/* A plane carries nothing new while either end has drained it. */
void core_apply_drains(struct mrcd_core *c, struct mrcd_qp *qp)
{
	uint32_t drained = c->drained_planes | qp->peer_drained;

	for (unsigned p = 0; p < MRC_MAX_PLANES; p++)
		mrc_conn_drain_plane(qp->conn, (uint8_t)p, drained >> p & 1);
	core_qp_touch(c, qp); /* a new connection, or paths that moved: it may send */
}

/* The peer drained or restored planes (its announcement changed): follow it. */
static void follow_peer_drains(struct mrcd_core *c, struct mrcd_qp *qp,
			       const struct mrc_node_info *info)
{
	qp->peer_drained = 0;
	for (unsigned k = 0; k < info->n_addrs; k++)
		if (info->addrs[k].flags & MRC_PLANE_F_DRAINED)
			qp->peer_drained |= 1u << (info->addrs[k].plane % MRC_MAX_PLANES);
	core_apply_drains(c, qp);
}

void core_peers_changed(struct mrcd_core *c, unsigned peer, int event, uint64_t now)
{
	const struct mrc_peer *p = &c->peers.peers[peer];

	c->peers_epoch++; /* UD routes are made anew */
	for (unsigned j = 0; j < c->t.n_qps; j++) {
		struct mrcd_qp *qp = &c->t.qps[c->t.active[j]];

		if (qp->type == MRC_CTL_QPT_UD) {
			if (qp->ud_waiting)
				core_qp_touch(c, qp); /* its datagram may go now */
			continue;
		}
		if (memcmp(qp->req.dgid, p->named, 16))
			continue;
		if (qp->state == MRC_CTL_QP_RESOLVING && p->state == MRC_PEER_KNOWN &&
		    !p->confirming && event != MRC_PEER_EV_UNREACHABLE) {
			/* discovered, changed, restarted or confirmed: the node that answered */
			qp_learn_peer(c, qp, &p->info, &p->keys);
			qp_start(c, qp, now);
		} else if (qp->state == MRC_CTL_QP_RESOLVING && event == MRC_PEER_EV_UNREACHABLE) {
			/* the named address is all we know: one plane, the one that reaches it */
			qp->peer_planes = 1u << p->via_plane;
			memcpy(qp->peer_addr[p->via_plane], p->named, 16);
			qp->peer_port = p->named_port;
			qp->peer_max_payload = 0;
			qp->peer_node = 0; /* unknown: the peer must not know ours either */
			qp->auth_ready = false; /* nor keys: with authentication it fails */
			qp_start(c, qp, now);
		} else if ((qp->state == MRC_CTL_QP_RTS || qp->state == MRC_CTL_QP_RTR) &&
			   event == MRC_PEER_EV_CHANGED && qp->conn) {
			follow_peer_drains(c, qp, &p->info);
		} else if ((qp->state == MRC_CTL_QP_RTS || qp->state == MRC_CTL_QP_RTR) &&
			   event == MRC_PEER_EV_RESTARTED) {
			/* its QPs are gone; ours cannot continue */
			core_qp_error(c, qp, now);
		}
	}
}

/* --- rings into the engine -------------------------------------------------------------- */

/* Checks one send descriptor and turns it into an engine work request. */
static int sq_entry_to_wr(struct mrcd_core *c, struct mrcd_qp *qp,
			  const struct mrc_sq_entry *e, struct mrc_send_wr *wr)
{
	uint64_t total = 0;

	memset(wr, 0, sizeof(*wr));
	if (e->num_sge > MRC_RING_MAX_SGE ||
	    !mrcd_wr_from_sq(e->opcode, e->flags, &wr->opcode, &wr->flags))
		return MRC_CQ_LOC_QP_OP_ERR;
	wr->wr_id = e->wr_id;
	wr->num_sge = e->num_sge;
	/* a window's bind and invalidation happen now, in posting order */
	if (e->opcode == MRC_SQ_BIND_MW)
		return core_mw_bind(c, qp, e);
	if (e->opcode == MRC_SQ_LOCAL_INV)
		return core_mw_local_inv(c, qp, e);
	/* imm_data's four bytes go on the wire as the application wrote them [SPEC 4.1]; a key
	 * to invalidate is a number */
	wr->imm = e->opcode == MRC_SQ_SEND_INV ? 0 : load_be32((const uint8_t *)&e->imm);
	wr->rkey = e->opcode == MRC_SQ_SEND_INV ? e->imm : e->rkey;
	wr->raddr = e->opcode == MRC_SQ_SEND_INV ? 0 : e->raddr;
	wr->compare_add = e->compare_add;
	wr->swap = e->swap;
	for (unsigned i = 0; i < e->num_sge; i++) {
		/* a READ's and an atomic's elements are written into: local write access */
		if (core_local_sge(c, qp, &e->sge[i], mrc_sq_writes_locally(e->opcode),
				   &wr->sge[i]))
			return MRC_CQ_LOC_PROT_ERR;
		total += e->sge[i].length;
	}
	if (total > (1u << 31))
		return MRC_CQ_LOC_LEN_ERR;
	return MRC_CQ_SUCCESS;
}

static int rq_entry_to_wr(struct mrcd_core *c, struct mrcd_qp *qp,
			  const struct mrc_rq_entry *e, struct mrc_recv_wr *wr)
{
	if (e->num_sge > MRC_RING_MAX_SGE)
		return MRC_CQ_LOC_QP_OP_ERR;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = e->wr_id;
	wr->num_sge = e->num_sge;
	for (unsigned i = 0; i < e->num_sge; i++)
		if (core_local_sge(c, qp, &e->sge[i], true, &wr->sge[i]))
			return MRC_CQ_LOC_PROT_ERR;
	return MRC_CQ_SUCCESS;
}

void core_ring_corrupt(struct mrcd_core *c, struct mrcd_qp *qp, const char *which, uint64_t now)
{
	core_log(c, MRCD_NOTICE, "client pid %d: QP %u %s ring indices corrupt, QP to error",
		 c->t.client[qp->owner].pid, qp->qpn, which);
	core_qp_error(c, qp, now);
}

/*
 * A request the engine refused although the ring guarantees it room, or one that failed the
 * checks: the engine's earlier work flushes first (completions stay in order), then this one
 * completes with the status.
 */
static void fail_entry(struct mrcd_core *c, struct mrcd_qp *qp, bool recv, uint64_t wr_id,
		       uint8_t status, uint8_t opcode, uint64_t now)
{
	core_qp_error(c, qp, now);
	core_complete_now(c, qp, recv, wr_id, (recv ? qp->rq.mine : qp->sq.mine) - 1, status,
			  opcode);
}

/* Receive ring entries into the connected engine; false when one failed (the QP errs). */
static bool drain_receives(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	struct mrc_rq_entry r;
	int got;

	while ((got = mrc_ring_take(&qp->rq, &r)) == 1) {
		struct mrc_recv_wr wr;
		int status = rq_entry_to_wr(c, qp, &r, &wr);

		if (status == MRC_CQ_SUCCESS) {
			qp->rq_wr_id[(qp->rq.mine - 1) & (qp->rq.entries - 1)] = r.wr_id;
			wr.wr_id = qp->rq.mine - 1;
			if (mrc_conn_post_recv(qp->conn, &wr))
				status = MRC_CQ_LOC_QP_OP_ERR;
		}
		if (status != MRC_CQ_SUCCESS) {
			fail_entry(c, qp, true, r.wr_id, (uint8_t)status, MRC_CQ_RECV, now);
			return false;
		}
	}
	if (got < 0) {
		core_ring_corrupt(c, qp, "receive", now);
		return false;
	}
	return true;
}

void core_drain_receives(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	if (qp->conn && qp->state != MRC_CTL_QP_ERR && mrc_ring_pending(&qp->rq))
		drain_receives(c, qp, now);
}

/*
 * The program's READ entries follow the engine's send queue (xdp.h): a READ's (or an
 * atomic's) goes in once its request has gone and its slot is free, in posting order; out
 * once the engine has completed it, before the application can hear so; every one once the
 * QP fails. adding: also put in those whose requests went since.
 */
void core_fast_reads_sync(struct mrcd_core *c, struct mrcd_qp *qp, bool adding)
{
	uint32_t oldest, next;
	struct mrc_sge sink;
	int r;

	if (!qp->conn)
		return;
	mrc_conn_sq_msns(qp->conn, &oldest, &next);
	if (mrc_conn_state(qp->conn) != MRC_QPS_RTS) {
		oldest = next; /* in error (its completions come before the QP leaves the fast
				* path): every READ's sink is the application's again */
		adding = false;
	}
	if (qp->fast_reads && oldest != qp->fast_sq_oldest) {
		c->fast->qp_reads_done(c->io, qp->qpn, oldest, next);
		qp->fast_sq_oldest = oldest;
		qp->fast_reads = oldest != next;
	}
	if (mrc_seq_lt(qp->fast_read_next, oldest) || mrc_seq_lt(next, qp->fast_read_next))
		qp->fast_read_next = oldest;
	/* each request looked at once; one whose slot is held waits for the next turn */
	for (; adding && qp->fast_read_next != next; qp->fast_read_next++) {
		r = mrc_conn_sq_read_sink(qp->conn, qp->fast_read_next, &sink);
		if (r < 0 || (r > 0 && !c->fast->qp_read(c->io, qp->qpn, qp->fast_read_next,
							  sink.lkey, sink.addr, sink.length)))
			break;
		if (r > 0 && !qp->fast_reads) {
			qp->fast_reads = true;
			qp->fast_sq_oldest = oldest;
		}
	}
}

/*
 * Ring entries into the engine. A slot goes back only when its work completes, so the
 * engine (as deep as the ring) always has room for what the ring holds.
 */
void core_drain_rings(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now)
{
	struct mrc_sq_entry s;
	struct mrc_rq_entry r;
	int got;

	/* in the error state every posted request completes flushed */
	if (qp->state == MRC_CTL_QP_ERR && (!qp->conn || mrc_conn_state(qp->conn) == MRC_QPS_ERR)) {
		/* bounded: a client that keeps posting gets the rest flushed next turn */
		for (uint32_t i = 0; i < qp->sq.entries && mrc_ring_take(&qp->sq, &s) == 1; i++)
			core_complete_now(c, qp, false, s.wr_id, qp->sq.mine - 1,
					  MRC_CQ_WR_FLUSH_ERR, mrc_sq_cq_opcode(s.opcode));
		for (uint32_t i = 0; i < qp->rq.entries && mrc_ring_take(&qp->rq, &r) == 1; i++)
			core_complete_now(c, qp, true, r.wr_id, qp->rq.mine - 1,
					  MRC_CQ_WR_FLUSH_ERR, MRC_CQ_RECV);
		mrc_ring_release(&qp->sq, qp->sq.mine);
		mrc_ring_release(&qp->rq, qp->rq.mine);
		return;
	}
	if (!qp->conn)
		return; /* receives wait in the ring until the QP is connected */
	if (!drain_receives(c, qp, now))
		return;
	/* sends wait in the ring until RTS */
	while (qp->state == MRC_CTL_QP_RTS && (got = mrc_ring_take(&qp->sq, &s)) == 1) {
		struct mrc_send_wr wr;
		int status = sq_entry_to_wr(c, qp, &s, &wr);

		if (status == MRC_CQ_SUCCESS) {
			qp->sq_wr_id[(qp->sq.mine - 1) & (qp->sq.entries - 1)] = s.wr_id;
			wr.wr_id = qp->sq.mine - 1;
			if (mrc_conn_post_send(qp->conn, &wr))
				status = MRC_CQ_LOC_QP_OP_ERR;
		}
		if (status != MRC_CQ_SUCCESS) {
			fail_entry(c, qp, false, s.wr_id, (uint8_t)status, mrc_sq_cq_opcode(s.opcode),
				   now);
			return;
		}
	}
	if (got < 0)
		core_ring_corrupt(c, qp, "send", now);
}
