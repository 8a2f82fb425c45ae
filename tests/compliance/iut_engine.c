/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine (lib/proto) as an implementation under test: one struct mrc_conn in virtual
 * time, its memory one region the peer may use, its completions queued for poll(). With
 * discovery, also a node's peer table (lib/proto/peer.h) that has named the peer, and what a
 * daemon does with its news: a restart fails the QP, a drain is announced.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metaroce/drop_reasons.h>
#include <sodium.h>

#include "compliance/iut.h"
#include "proto/auth.h"
#include "proto/bytes.h"
#include "proto/codec.h"
#include "proto/conn.h"
#include "proto/peer.h"

#define WC_QUEUE 256u

struct engine_iut {
	struct iut_config cfg;
	struct mrc_conn *conn;
	bool at_rtr;	/* made at RTR and not yet ready(): the application may not post sends */
	bool destroyed; /* the application destroyed the QP: it lingers, and posts nothing */
	uint32_t drained; /* planes an operator drained */
	uint32_t peer_drained; /* planes the peer announced drained */
	uint64_t now;	  /* of the last call: the peer table's events come without one */
	uint8_t *mem;
	struct mrc_completion wcs[WC_QUEUE];
	bool wc_recv[WC_QUEUE];
	unsigned wc_head, wc_n;
	uint64_t drops[MRC_DROP_REASON_MAX + 1];
	struct mrc_peer_table peers; /* with cfg.discovery */
	bool has_peers;
	struct mrc_auth node_auth; /* with discovery and auth: its cluster key and key pair */
	struct mrc_rate_domain rates; /* with cfg.rx_capacity_kbps */
	bool has_rates;
};

/* The engine's network: plane p's addresses 198.18.p.1 (the IUT) and 198.18.p.2 (its
 * peer), peers admitted from 198.18.0.0/16 (a neighbour at 198.18.0.3), a stranger outside. */
static void network(struct iut_config *cfg)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	for (unsigned p = 0; p < IUT_MAX_PLANES; p++) {
		memcpy(cfg->addr[p], mapped, 12);
		memcpy(cfg->peer_addr[p], mapped, 12);
		cfg->addr[p][12] = cfg->peer_addr[p][12] = 198;
		cfg->addr[p][13] = cfg->peer_addr[p][13] = 18;
		cfg->addr[p][14] = cfg->peer_addr[p][14] = (uint8_t)p;
		cfg->addr[p][15] = 1;
		cfg->peer_addr[p][15] = 2;
	}
	memcpy(cfg->stranger_addr, mapped, 12);
	memcpy(cfg->stranger_addr + 12, (const uint8_t[]){ 198, 19, 0, 9 }, 4);
	memcpy(cfg->neighbour_addr, cfg->peer_addr[0], 16);
	cfg->neighbour_addr[15] = 3;
	cfg->port = MRC_UDP_PORT_DEFAULT;
}

static bool admit(void *user, const uint8_t addr[16])
{
	(void)user;
	return addr[12] == 198 && addr[13] == 18;
}

/* A plane carries nothing new when either end drained it (SPEC 9.4). */
static void apply_drains(struct engine_iut *e)
{
	for (unsigned p = 0; p < e->cfg.n_planes; p++)
		mrc_conn_drain_plane(e->conn, (uint8_t)p, (e->drained | e->peer_drained) & 1u << p);
}

static void peer_event(void *user, unsigned peer, enum mrc_peer_event ev, uint64_t old_node)
{
	struct engine_iut *e = user;
	const struct mrc_node_info *info = &e->peers.peers[peer].info;

	(void)old_node;
	if (ev == MRC_PEER_EV_RESTARTED) { /* its QPs are gone; ours cannot continue */
		mrc_conn_set_error(e->conn, e->now);
	} else if (ev == MRC_PEER_EV_CHANGED) { /* its drains apply */
		e->peer_drained = 0;
		for (unsigned k = 0; k < info->n_addrs; k++)
			if (info->addrs[k].flags & MRC_PLANE_F_DRAINED)
				e->peer_drained |= 1u << (info->addrs[k].plane % IUT_MAX_PLANES);
		apply_drains(e);
	}
}

/* What this node announces: every plane, drained ones flagged. */
static void node_info(const struct engine_iut *e, struct mrc_node_info *info)
{
	memset(info, 0, sizeof(*info));
	info->node_id = e->cfg.node_id;
	info->udp_port = e->cfg.port;
	info->max_payload = e->cfg.max_payload;
	info->n_addrs = e->cfg.n_planes;
	for (unsigned p = 0; p < e->cfg.n_planes; p++) {
		info->addrs[p].family = MRC_AF_INET;
		info->addrs[p].plane = (uint8_t)p;
		info->addrs[p].flags = e->drained & 1u << p ? MRC_PLANE_F_DRAINED : 0;
		memcpy(info->addrs[p].addr, e->cfg.addr[p], 16);
	}
}

/* The node's side: a peer table that has named the peer, as a QP naming it makes it. */
static int open_node(struct engine_iut *e, uint64_t now_ns)
{
	static const struct mrc_peer_callbacks cb = { .admit = admit, .event = peer_event };
	struct mrc_node_info local;
	int err;

	node_info(e, &local);
	if ((err = mrc_peer_table_init(&e->peers, &local, 4, &cb, e, 1)))
		return err;
	e->has_peers = true;
	if (e->cfg.auth) { /* a cluster member with a key pair of its own */
		struct mrc_auth *a = &e->node_auth;

		if (sodium_init() < 0)
			return -EIO;
		*a = (struct mrc_auth){ .mode = MRC_AUTH_HEADER, .has_cluster_key = true };
		memset(a->secret_key, 0x3c, sizeof(a->secret_key));
		memcpy(a->cluster_key, e->cfg.cluster_key, sizeof(a->cluster_key));
		if ((err = mrc_auth_public_of(a->secret_key, a->public_key)) ||
		    (err = mrc_auth_init(a)))
			return err < 0 ? err : -EINVAL;
		memcpy(e->cfg.public_key, a->public_key, sizeof(e->cfg.public_key));
		mrc_peer_table_set_auth(&e->peers, a);
	}
	err = mrc_peer_table_lookup(&e->peers, e->cfg.peer_addr[0], 0, MRC_UDP_PORT_DEFAULT,
				    now_ns);
	return err < 0 ? err : 0;
}

static int mr_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		     uint8_t **host)
{
	struct engine_iut *e = user;
	unsigned granted = (e->cfg.mr_remote_write ? MRC_ACCESS_REMOTE_WRITE : 0) |
			   (e->cfg.mr_remote_read ? MRC_ACCESS_REMOTE_READ : 0) |
			   (e->cfg.mr_remote_atomic ? MRC_ACCESS_REMOTE_ATOMIC : 0);

	if (key != e->cfg.mr_key || addr < e->cfg.mr_addr ||
	    addr - e->cfg.mr_addr > e->cfg.mr_len || len > e->cfg.mr_len - (addr - e->cfg.mr_addr) ||
	    (access & ~granted))
		return -1;
	*host = e->mem + (addr - e->cfg.mr_addr);
	return 0;
}

static void complete(void *user, bool from_recv_queue, const struct mrc_completion *wc)
{
	struct engine_iut *e = user;
	unsigned at;

	if (e->wc_n == WC_QUEUE)
		return; /* a script that leaves 256 completions unread checks none of them */
	at = (e->wc_head + e->wc_n++) % WC_QUEUE;
	e->wcs[at] = *wc;
	e->wc_recv[at] = from_recv_queue;
}

static void engine_close(void *iut);

static void *engine_open(const struct iut_ops *self, struct iut_config *cfg, uint64_t now_ns,
			 char *err, size_t errlen)
{
	static const struct mrc_conn_callbacks cb = { .mr_lookup = mr_lookup,
						      .complete = complete };
	struct engine_iut *e = calloc(1, sizeof(*e));
	struct mrc_conn_config cc;

	(void)self;
	if (cfg->ud || cfg->mw) {
		free(e);
		snprintf(err, errlen, "a %s is a node's (metaroced's daemon/core/%s.c), not the "
			 "connection engine's", cfg->ud ? "UD QP" : "memory window",
			 cfg->ud ? "ud" : "windows");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!e || !(e->mem = calloc(1, cfg->mr_len ? cfg->mr_len : 1))) {
		free(e);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	network(cfg);
	e->cfg = *cfg;
	e->now = now_ns;
	mrc_conn_config_default(&cc);
	cc.local_qpn = cfg->qpn;
	cc.remote_qpn = cfg->peer_qpn;
	cc.sq_psn = cfg->psn;
	cc.rq_psn = cfg->peer_psn;
	cc.max_payload = cfg->max_payload;
	cc.n_paths = cfg->n_paths;
	for (unsigned i = 0; i < cfg->n_paths; i++)
		cc.paths[i] = (struct mrc_path_config){
			.plane = (uint8_t)(i / ((cfg->n_paths + cfg->n_planes - 1) / cfg->n_planes)),
			.sport = cfg->sports[i] };
	cc.rq_depth = cfg->rq_depth;
	cc.retry_cnt = cfg->retry_cnt;
	cc.rnr_retry = cfg->rnr_retry;
	cc.qp_access = (cfg->qp_remote_write ? MRC_ACCESS_REMOTE_WRITE : 0) |
		       (cfg->qp_remote_read ? MRC_ACCESS_REMOTE_READ : 0) |
		       (cfg->qp_remote_atomic ? MRC_ACCESS_REMOTE_ATOMIC : 0);
	cc.drop_counts = e->drops;
	if (cfg->rx_capacity_kbps) { /* a receive capacity of its own, its hints' */
		if (mrc_rate_domain_init(&e->rates, cfg->rx_capacity_kbps, 4)) {
			snprintf(err, errlen, "mrc_rate_domain_init: out of memory");
			free(e->mem);
			free(e);
			return NULL;
		}
		e->has_rates = true;
		cc.rate_domain = &e->rates;
	}
	if ((cc.auth = cfg->auth)) {
		cc.auth_tx = (struct mrc_auth_key){ load_le64(cfg->key_from_iut),
						    load_le64(cfg->key_from_iut + 8) };
		cc.auth_rx = (struct mrc_auth_key){ load_le64(cfg->key_to_iut),
						    load_le64(cfg->key_to_iut + 8) };
	}
	cc.seed = 1;
	e->at_rtr = cfg->at_rtr;
	e->conn = mrc_conn_new(&cc, &cb, e, now_ns);
	if (!e->conn) {
		snprintf(err, errlen, "mrc_conn_new: %s", strerror(errno));
		if (e->has_rates)
			mrc_rate_domain_fini(&e->rates);
		free(e->mem);
		free(e);
		return NULL;
	}
	if (cfg->discovery && (errno = -open_node(e, now_ns))) {
		snprintf(err, errlen, "the peer table: %s", strerror(errno));
		engine_close(e);
		return NULL;
	}
	memcpy(cfg->public_key, e->cfg.public_key, sizeof(cfg->public_key));
	return e;
}

static void engine_close(void *iut)
{
	struct engine_iut *e = iut;

	mrc_conn_free(e->conn);
	if (e->has_peers)
		mrc_peer_table_fini(&e->peers);
	if (e->has_rates)
		mrc_rate_domain_fini(&e->rates);
	free(e->mem);
	free(e);
}

static void engine_deliver(void *iut, const struct iut_dgram *d, uint64_t now_ns)
{
	struct engine_iut *e = iut;
	struct mrc_rx_info rx = { .plane = d->plane, .sport = d->sport, .ce = d->ce };
	struct mrc_packet pkt;

	e->now = now_ns;
	/* a node's packets go to its peer table, as a daemon's do */
	if (e->has_peers && !mrc_decode(d->bytes, d->len, &pkt) &&
	    (pkt.opcode == MRC_OP_DISCOVER || pkt.opcode == MRC_OP_DISCOVER_REPLY)) {
		mrc_peer_table_recv(&e->peers, &pkt, d->addr, d->sport, d->plane, now_ns);
		return;
	}
	mrc_conn_recv(e->conn, &rx, d->bytes, d->len, now_ns);
}

static bool engine_collect(void *iut, struct iut_dgram *d, uint64_t now_ns)
{
	struct engine_iut *e = iut;
	struct mrc_tx_info tx;
	struct mrc_peer_dest dest;
	size_t len;

	e->now = now_ns;
	if (e->has_peers &&
	    mrc_peer_table_send(&e->peers, d->bytes, sizeof(d->bytes), &dest, now_ns, &len)) {
		d->plane = dest.plane;
		d->sport = e->cfg.port;
		memcpy(d->addr, dest.addr, 16);
		d->dport = dest.port;
		d->ce = false;
		d->ecn = IUT_ECN_UNKNOWN; /* the IP header is its caller's */
		d->df = -1;
		d->len = (uint16_t)len;
		return true;
	}
	if (!mrc_conn_send(e->conn, d->bytes, sizeof(d->bytes), &tx, now_ns, &len))
		return false;
	memcpy(d->addr, e->cfg.peer_addr[tx.plane < IUT_MAX_PLANES ? tx.plane : 0], 16);
	d->dport = MRC_UDP_PORT_DEFAULT;
	d->plane = tx.plane;
	d->sport = tx.sport;
	d->ce = false;
	d->ecn = IUT_ECN_UNKNOWN;
	d->df = -1;
	d->len = (uint16_t)len;
	return true;
}

static uint64_t engine_deadline(void *iut)
{
	struct engine_iut *e = iut;
	uint64_t t = mrc_conn_next_timeout(e->conn), n;

	if (e->has_peers && (n = mrc_peer_table_next_timeout(&e->peers)) < t)
		t = n;
	return t;
}

static void engine_advance(void *iut, uint64_t now_ns)
{
	struct engine_iut *e = iut;

	e->now = now_ns;
	mrc_conn_on_timeout(e->conn, now_ns);
	if (e->has_peers && mrc_peer_table_next_timeout(&e->peers) <= now_ns)
		mrc_peer_table_on_timeout(&e->peers, now_ns);
}

static int engine_post(void *iut, const struct iut_wr *wr, uint64_t now_ns)
{
	static const uint8_t opcode[] = {
		[IUT_WR_WRITE] = MRC_WR_WRITE, [IUT_WR_WRITE_IMM] = MRC_WR_WRITE_IMM,
		[IUT_WR_SEND] = MRC_WR_SEND,   [IUT_WR_SEND_IMM] = MRC_WR_SEND_IMM,
		[IUT_WR_READ] = MRC_WR_READ,
	};
	struct engine_iut *e = iut;
	struct mrc_sge sge = { .host = e->mem + wr->off, .addr = e->cfg.mr_addr + wr->off,
			       .length = wr->len, .lkey = e->cfg.mr_key };

	(void)now_ns;
	if (wr->off > e->cfg.mr_len || wr->len > e->cfg.mr_len - wr->off || e->destroyed)
		return -EINVAL;
	if (e->at_rtr && wr->kind != IUT_WR_RECV)
		return -EINVAL; /* as verbs refuses a send on a QP at RTR */
	if (wr->kind == IUT_WR_LOCAL_INV)
		return -EOPNOTSUPP; /* its windows are a node's */
	if (wr->kind == IUT_WR_RECV) {
		struct mrc_recv_wr r = { .wr_id = wr->wr_id, .num_sge = 1, .sge = { sge } };

		return mrc_conn_post_recv(e->conn, &r);
	} else {
		struct mrc_send_wr s = { .wr_id = wr->wr_id, .opcode = opcode[wr->kind],
					 .flags = MRC_SEND_SIGNALED |
						  (wr->solicited ? MRC_SEND_SOLICITED : 0),
					 .num_sge = 1, .sge = { sge },
					 .imm = wr->imm, .rkey = wr->rkey, .raddr = wr->raddr };

		return mrc_conn_post_send(e->conn, &s);
	}
}

static bool engine_poll(void *iut, struct iut_wc *wc)
{
	static const char *const opcode[] = {
		[MRC_WC_SEND] = "send",
		[MRC_WC_RDMA_WRITE] = "rdma_write",
		[MRC_WC_RDMA_READ] = "rdma_read",
		[MRC_WC_RECV] = "recv",
		[MRC_WC_RECV_RDMA_WITH_IMM] = "recv_rdma_with_imm",
		[MRC_WC_COMP_SWAP] = "comp_swap",
		[MRC_WC_FETCH_ADD] = "fetch_add",
		[MRC_WC_BIND_MW] = "bind_mw",
		[MRC_WC_LOCAL_INV] = "local_inv",
	};
	static const char *const status[] = {
		[MRC_WC_SUCCESS] = "success",
		[MRC_WC_LOC_LEN_ERR] = "loc_len_err",
		[MRC_WC_WR_FLUSH_ERR] = "wr_flush_err",
		[MRC_WC_REM_ACCESS_ERR] = "rem_access_err",
		[MRC_WC_REM_INV_REQ_ERR] = "rem_inv_req_err",
		[MRC_WC_REM_OP_ERR] = "rem_op_err",
		[MRC_WC_RETRY_EXC_ERR] = "retry_exc_err",
		[MRC_WC_RNR_RETRY_EXC_ERR] = "rnr_retry_exc_err",
		[MRC_WC_LOC_QP_OP_ERR] = "loc_qp_op_err",
		[MRC_WC_LOC_PROT_ERR] = "loc_prot_err",
	};
	struct engine_iut *e = iut;
	const struct mrc_completion *c;

	if (!e->wc_n)
		return false;
	c = &e->wcs[e->wc_head];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = c->wr_id;
	wc->recv = e->wc_recv[e->wc_head];
	snprintf(wc->status, sizeof(wc->status), "%s",
		 c->status < sizeof(status) / sizeof(status[0]) && status[c->status]
			 ? status[c->status] : "?");
	snprintf(wc->opcode, sizeof(wc->opcode), "%s",
		 c->opcode < sizeof(opcode) / sizeof(opcode[0]) && opcode[c->opcode]
			 ? opcode[c->opcode] : "?");
	wc->byte_len = c->byte_len;
	wc->imm = c->imm;
	wc->with_imm = c->flags & MRC_WC_WITH_IMM;
	e->wc_head = (e->wc_head + 1) % WC_QUEUE;
	e->wc_n--;
	return true;
}

static const char *engine_state(void *iut)
{
	struct engine_iut *e = iut;

	switch (mrc_conn_state(e->conn)) {
	case MRC_QPS_RTS: return e->at_rtr ? "rtr" : "rts"; /* RTR is the caller's (conn.h) */
	case MRC_QPS_ERR: return "err";
	case MRC_QPS_CLOSING: return "closing";
	case MRC_QPS_CLOSED: return "closed";
	}
	return "?";
}

static bool engine_counter(void *iut, const char *name, uint64_t *value)
{
	struct engine_iut *e = iut;
	const struct mrc_conn_stats *s = mrc_conn_stats(e->conn);
	static const struct {
		const char *name;
		size_t offset;
	} stats[] = {
#define STAT(f) { #f, offsetof(struct mrc_conn_stats, f) }
		STAT(tx_data_packets), STAT(tx_retransmits), STAT(tx_acks),	   STAT(tx_naks),
		STAT(tx_probes),       STAT(rx_packets),     STAT(rx_placed_packets),
		STAT(rx_placed_bytes), STAT(rx_ce_packets),  STAT(rx_dropped),
#undef STAT
	};

	for (unsigned i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		if (!strcmp(name, stats[i].name)) {
			memcpy(value, (const uint8_t *)s + stats[i].offset, sizeof(*value));
			return true;
		}
	/* discovery packets the peer table refused: not admitted, stale,
	 * unauthenticated or under a key not trusted */
	static const struct {
		const char *name;
		int reason;
	} refusals[] = { { "discover_not_admitted", MRC_DROP_NOT_ADMITTED },
			 { "discover_stale", MRC_DROP_STALE_DISCOVER },
			 { "discover_unauthenticated", MRC_DROP_UNAUTHENTICATED },
			 { "discover_peer_key", MRC_DROP_PEER_KEY } };
	for (unsigned i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		if (!strcmp(name, refusals[i].name)) {
			*value = e->has_peers ? e->peers.refused[refusals[i].reason] : 0;
			return e->has_peers;
		}
	if (!strcmp(name, "unauthenticated")) { /* no trailer, or a wrong tag */
		*value = e->drops[MRC_DROP_UNAUTHENTICATED];
		return true;
	}
	/* the decoder's refusals by error: "dropped_e_checksum", ... */
	for (int err = 1; err <= MRC_WIRE_ERROR_MAX; err++)
		if (!strncmp(name, "dropped_", 8) && !strcmp(name + 8, mrc_wire_error_name(err))) {
			*value = e->drops[err];
			return true;
		}
	return false;
}

static bool engine_memory(void *iut, uint32_t off, uint32_t len, uint8_t *out)
{
	struct engine_iut *e = iut;

	if (off > e->cfg.mr_len || len > e->cfg.mr_len - off)
		return false;
	memcpy(out, e->mem + off, len);
	return true;
}

static void engine_fill(void *iut, uint32_t off, uint32_t len, uint8_t value)
{
	struct engine_iut *e = iut;

	if (off <= e->cfg.mr_len && len <= e->cfg.mr_len - off)
		memset(e->mem + off, value, len);
}

static int engine_drain(void *iut, uint8_t plane, bool drained, uint64_t now_ns)
{
	struct engine_iut *e = iut;

	e->now = now_ns;
	if (plane >= IUT_MAX_PLANES)
		return -EINVAL;
	e->drained = drained ? e->drained | 1u << plane : e->drained & ~(1u << plane);
	apply_drains(e);
	if (e->has_peers) { /* every known peer hears it */
		struct mrc_node_info local;

		node_info(e, &local);
		mrc_peer_table_set_local(&e->peers, &local);
	}
	return 0;
}

static int engine_destroy(void *iut, uint64_t now_ns)
{
	struct engine_iut *e = iut;

	if (e->destroyed)
		return -EINVAL;
	e->destroyed = true;
	mrc_conn_close(e->conn, now_ns);
	return 0;
}

static int engine_ready(void *iut, uint64_t now_ns)
{
	struct engine_iut *e = iut;
	struct mrc_conn_config d;

	(void)now_ns;
	if (!e->at_rtr)
		return -EINVAL;
	mrc_conn_config_default(&d);
	e->at_rtr = false;
	return mrc_conn_set_send(e->conn, e->cfg.retry_cnt, d.retry_timeout_ns, e->cfg.rnr_retry,
				 d.max_rd_atomic);
}

const struct iut_ops iut_engine = {
	.name = "engine",
	.open = engine_open,
	.close = engine_close,
	.deliver = engine_deliver,
	.collect = engine_collect,
	.deadline = engine_deadline,
	.advance = engine_advance,
	.post = engine_post,
	.poll = engine_poll,
	.state = engine_state,
	.counter = engine_counter,
	.memory = engine_memory,
	.fill = engine_fill,
	.drain = engine_drain,
	.destroy = engine_destroy,
	.ready = engine_ready,
};
