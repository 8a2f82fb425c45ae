/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The core's entry points: its life, its clients' requests, what arrives on the wire, the
 * peer table's events, the operators' actions.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metaroce/drop_reasons.h>

#include "core/internal.h"
#include "proto/bytes.h"

#define PEER_CAP 1024

/* --- peers ---------------------------------------------------------------------------------- */

static void peer_event(void *user, unsigned idx, enum mrc_peer_event ev, uint64_t old_node)
{
	struct mrcd_core *c = user;
	const struct mrc_peer *p = &c->peers.peers[idx];
	char a[48], planes[512] = "";
	size_t off = 0;

	for (unsigned i = 0; i < p->info.n_addrs && off < sizeof(planes); i++) {
		char pa[48];
		int n = snprintf(planes + off, sizeof(planes) - off, "%s%u=%s%s", i ? " " : "",
				 p->info.addrs[i].plane, core_addr_str(p->info.addrs[i].addr, pa, sizeof(pa)),
				 p->info.addrs[i].flags & MRC_PLANE_F_DRAINED ? "(drained)" : "");

		if (n > 0)
			off += (size_t)n;
	}
	core_addr_str(p->named, a, sizeof(a));
	switch (ev) {
	case MRC_PEER_EV_DISCOVERED:
		core_event(c, MRCD_INFO, "peer %s discovered: node %016llx, port %u, planes %s", a,
			   (unsigned long long)p->info.node_id, p->info.udp_port, planes);
		break;
	case MRC_PEER_EV_CHANGED:
		core_event(c, MRCD_INFO, "peer %s changed: planes %s", a, planes);
		break;
	case MRC_PEER_EV_RESTARTED:
		/* its QPs must fail: core_peers_changed below */
		core_event(c, MRCD_NOTICE, "peer %s restarted: node %016llx replaces %016llx", a,
			   (unsigned long long)p->info.node_id, (unsigned long long)old_node);
		break;
	case MRC_PEER_EV_UNREACHABLE:
		core_event(c, MRCD_WARNING, "peer %s did not answer discovery", a);
		break;
	case MRC_PEER_EV_CONFIRMED:
		core_log(c, MRCD_NOTICE, "peer %s: a change announced in its name was asked back "
				       "and not confirmed: node %016llx stands", a,
			 (unsigned long long)p->info.node_id);
		break;
	}
	core_peers_changed(c, idx, (int)ev, c->now);
	core_cm_peer_event(c, idx, (int)ev, old_node, c->now);
}

/* --- life ---------------------------------------------------------------------------------- */

static void free_tables(struct mrcd_tables *t)
{
	free(t->mrs);
	free(t->cqs);
	free(t->srqs);
	free(t->qps);
	t->mrs = NULL;
	t->cqs = NULL;
	t->srqs = NULL;
	t->qps = NULL;
}

static void shard_fini(struct mrcd_shard *sh)
{
	mrc_rate_domain_fini(&sh->rate);
	mrcd_sched_fini(&sh->sched);
	mrcd_linger_fini(&sh->lingering);
	free(sh->tx_buf);
	free(sh->tx_dgrams);
}

static void free_shards(struct mrcd_core *c)
{
	for (unsigned i = 0; c->shard && i < c->n_shards; i++)
		shard_fini(&c->shard[i]);
	free(c->shard);
	c->shard = NULL;
}

/* Each its share of the receive capacity: 0 (the default) sends no hints, and a reload may
 * change it (rx_capacity). */
static uint64_t shard_capacity_kbps(const struct mrcd_core *c)
{
	return c->cfg->rx_capacity_bps / 1000 / c->n_shards;
}

/* On failure the caller finishes what was made (shard_fini). */
static int shard_init(struct mrcd_core *c, struct mrcd_shard *sh, unsigned index)
{
	sh->index = index;
	sh->now = c->now;
	for (unsigned slot = index; slot < MRCD_MAX_QPS; slot += c->n_shards)
		sh->doorbell_mask[slot / 64] |= 1ull << (slot % 64);
	sh->tx_buf = malloc((size_t)MRCD_TX_BATCH * c->cfg->mtu);
	sh->tx_dgrams = calloc(MRCD_TX_BATCH, sizeof(*sh->tx_dgrams));
	/* every QP's receive side joins its shard's rate domain */
	if (!sh->tx_buf || !sh->tx_dgrams || mrcd_linger_init(&sh->lingering, MRCD_MAX_QPS) ||
	    mrcd_sched_init(&sh->sched, MRCD_MAX_QPS) ||
	    mrc_rate_domain_init(&sh->rate, shard_capacity_kbps(c), MRCD_MAX_QPS))
		return -1;
	return 0;
}

int mrcd_core_init(struct mrcd_core *c, const struct mrcd_core_params *p)
{
	static const struct mrc_peer_callbacks peer_cb = { core_admit, peer_event };
	struct mrcd_tables *t = &c->t;
	struct mrc_node_info info;

	memset(c, 0, sizeof(*c));
	c->cfg = p->cfg;
	c->ops = p->ops;
	c->fast = p->fast;
	c->io = p->io;
	c->port = p->port;
	c->page_size = p->page_size;
	c->page_map_quota = p->page_map_quota;
	c->registered_auto = p->registered_auto;
	c->operator_uid = p->operator_uid;
	c->started_ns = c->now = p->now;
	c->auth = p->auth && p->auth->mode != MRC_AUTH_OFF ? p->auth : NULL;
	mrc_prf_init(&t->rng, p->seed[0], p->seed[1]);
	/* one key both ways: each of the two local QPs' tx is the other's rx */
	for (unsigned i = 0; i < MRC_AUTH_KEY_LEN / 8; i++) {
		uint64_t r = mrc_prf_next(&t->rng);

		memcpy(c->self_keys.session_tx + 8 * i, &r, 8);
	}
	memcpy(c->self_keys.session_rx, c->self_keys.session_tx, MRC_AUTH_KEY_LEN);
	c->self_keys.bound = true;
	mrc_auth_ud_keys(&c->self_keys);
	t->mrs = calloc(MRCD_MAX_MRS, sizeof(*t->mrs));
	t->cqs = calloc(MRCD_MAX_CQS, sizeof(*t->cqs));
	t->qps = calloc(MRCD_MAX_QPS, sizeof(*t->qps));
	t->srqs = calloc(MRCD_MAX_SRQS, sizeof(*t->srqs));
	c->n_shards = p->n_shards ? p->n_shards : 1;
	c->shard = calloc(c->n_shards, sizeof(*c->shard));
	if (!t->mrs || !t->cqs || !t->qps || !t->srqs || !c->shard ||
	    c->n_shards > MRCD_MAX_SHARDS)
		goto fail;
	for (unsigned i = 0; i < MRCD_MAX_SRQS; i++)
		t->srqs[i].owner = -1;
	for (unsigned i = 0; i < MRCD_MAX_MRS; i++)
		t->mrs[i].owner = -1;
	for (unsigned i = 0; i < MRCD_MAX_CQS; i++)
		t->cqs[i].owner = -1;
	for (unsigned i = 0; i < MRCD_MAX_QPS; i++)
		t->qps[i].owner = -1;
	for (unsigned i = 0; i < c->n_shards; i++)
		if (shard_init(c, &c->shard[i], i)) {
			shard_fini(&c->shard[i]);
			c->n_shards = i; /* free_shards: those made before */
			goto fail;
		}
	core_node_info(c, p->node_id, &info);
	if (mrc_peer_table_init(&c->peers, &info, PEER_CAP, &peer_cb, c, p->request_seed))
		goto fail;
	mrc_peer_table_set_auth(&c->peers, c->auth);
	if (core_cm_init(c)) {
		mrc_peer_table_fini(&c->peers);
		goto fail;
	}
	return 0;

fail:
	free_shards(c);
	free_tables(t);
	return -ENOMEM;
}

void mrcd_core_fini(struct mrcd_core *c)
{
	if (!c->t.qps)
		return;
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		if (c->t.client[i].open)
			mrcd_core_client_close(c, i, c->now);
	core_cm_fini(c);
	free_shards(c);
	mrc_peer_table_fini(&c->peers);
	free_tables(&c->t);
}

/* --- clients ------------------------------------------------------------------------------- */

/* An entry still waiting: its client is open, silent, and the one it was queued for. */
static bool silent_entry_live(const struct mrcd_core *c, unsigned at)
{
	const struct mrcd_silent_queue *q = &c->t.silent;
	const struct mrcd_client *cl = &c->t.client[q->slot[at]];

	return cl->open && cl->silent_until == q->until[at];
}

/* Drops the entries of clients that spoke or went (they leave the head lazily otherwise). */
static void silent_compact(struct mrcd_core *c)
{
	struct mrcd_silent_queue *q = &c->t.silent;
	unsigned kept = 0;

	for (unsigned k = 0; k < q->n; k++) {
		unsigned from = (q->head + k) % MRCD_MAX_CLIENTS;
		unsigned to = (q->head + kept) % MRCD_MAX_CLIENTS;

		if (silent_entry_live(c, from)) {
			q->slot[to] = q->slot[from];
			q->until[to] = q->until[from];
			kept++;
		}
	}
	q->n = kept;
}

int mrcd_core_client_open(struct mrcd_core *c, int pid, uint32_t uid, uint64_t now)
{
	struct mrcd_silent_queue *q = &c->t.silent;
	int err;

	c->now = now;
	err = core_user_allows(c, uid, MRC_CTL_USER_CONNECTIONS, 1);
	if (err)
		return err;
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		if (!c->t.client[i].open) {
			unsigned at;

			/* full of stale entries: live ones are fewer than the open slots, so
			 * compacting makes room */
			if (q->n == MRCD_MAX_CLIENTS)
				silent_compact(c);
			at = (q->head + q->n++) % MRCD_MAX_CLIENTS;
			c->t.client[i] = (struct mrcd_client){ .open = true, .pid = pid, .uid = uid,
							       .silent_until = now +
									       MRCD_FIRST_REQUEST_NS };
			q->slot[at] = (uint16_t)i;
			q->until[at] = c->t.client[i].silent_until;
			return (int)i;
		}
	return -ENOSPC;
}

void mrcd_core_client_heard(struct mrcd_core *c, unsigned slot)
{
	if (slot < MRCD_MAX_CLIENTS)
		c->t.client[slot].silent_until = 0;
}

/* The queue's head, less entries of clients that spoke or went since. */
static bool silent_head(struct mrcd_core *c, unsigned *slot, uint64_t *until)
{
	struct mrcd_silent_queue *q = &c->t.silent;

	while (q->n) {
		if (silent_entry_live(c, q->head)) {
			*slot = q->slot[q->head];
			*until = q->until[q->head];
			return true;
		}
		q->head = (q->head + 1) % MRCD_MAX_CLIENTS;
		q->n--;
	}
	return false;
}

int mrcd_core_silent_client(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_silent_queue *q = &c->t.silent;
	unsigned slot;
	uint64_t until;

	if (!silent_head(c, &slot, &until) || now < until)
		return -1;
	q->head = (q->head + 1) % MRCD_MAX_CLIENTS;
	q->n--;
	c->t.client[slot].silent_until = 0;
	core_event(c, MRCD_NOTICE, "client pid %d made no request within %llu ms: closed",
		   c->t.client[slot].pid, MRCD_FIRST_REQUEST_NS / 1000000);
	return (int)slot;
}

const struct mrcd_client *mrcd_core_client(const struct mrcd_core *c, unsigned slot)
{
	return slot < MRCD_MAX_CLIENTS ? &c->t.client[slot] : NULL;
}

void mrcd_core_client_close(struct mrcd_core *c, unsigned slot, uint64_t now)
{
	struct mrcd_tables *t = &c->t;
	struct mrcd_client *cl = &t->client[slot];
	unsigned qps = 0, cqs = 0, mrs = 0;

	core_cm_client_close(c, slot, now);
	for (unsigned j = 0; j < t->n_qps;) {
		struct mrcd_qp *qp = &t->qps[t->active[j]];

		if (qp->owner != (int)slot) {
			j++;
			continue;
		}
		core_qp_free(c, qp, now); /* the last active entry takes place j */
		qps++;
	}
	for (unsigned i = 0; i < MRCD_MAX_SRQS && cl->n_srqs; i++)
		if (t->srqs[i].owner == (int)slot)
			core_srq_free(c, &t->srqs[i]); /* after its QPs */
	for (unsigned i = 0; i < MRCD_MAX_CQS && cl->n_cqs; i++)
		if (t->cqs[i].owner == (int)slot) {
			core_cq_free(c, &t->cqs[i]);
			cqs++;
		}
	for (unsigned i = 0; i < MRCD_MAX_MRS && cl->n_mws; i++)
		if (t->mrs[i].owner == (int)slot && t->mrs[i].mw_type)
			core_mw_free(c, &t->mrs[i]); /* before the regions they count on */
	for (unsigned i = 0; i < MRCD_MAX_MRS && cl->n_mrs; i++)
		if (t->mrs[i].owner == (int)slot) {
			if (t->mrs[i].retired) {
				t->n_retired--;
			} else {
				t->n_mrs--;
				mrs++;
			}
			cl->n_mrs--;
			core_mr_unmap(c, &t->mrs[i]);
		}
	if (cl->library) {
		core_event(c, MRCD_INFO, "client pid %d gone: reclaimed %u QPs, %u CQs, %u MRs",
			   cl->pid, qps, cqs, mrs);
		c->ops->close_doorbell(c->io, slot);
		c->ops->unmap(c->io, cl->doorbells, sizeof(*cl->doorbells));
		c->t.mapped_bytes -= sizeof(*cl->doorbells);
	}
	memset(cl, 0, sizeof(*cl));
}

static int handle_arg(const uint8_t *payload, size_t len, uint32_t *handle)
{
	struct mrc_ctl_handle h;

	if (len != sizeof(h))
		return -EINVAL;
	memcpy(&h, payload, sizeof(h));
	*handle = h.handle;
	return 0;
}

static int hello(struct mrcd_core *c, unsigned slot, const uint8_t *payload, size_t len,
		 unsigned n_desc)
{
	struct mrcd_client *cl = &c->t.client[slot];
	struct mrc_doorbell_page *page;
	struct mrc_ctl_hello h;
	void *mem;
	int err;

	if (len != sizeof(h) || n_desc != 1 || cl->library)
		return -EINVAL;
	memcpy(&h, payload, sizeof(h));
	if (h.abi != MRC_CTL_CLIENT_ABI)
		return -EPROTONOSUPPORT;
	/* the page first: a failure leaves nothing watched */
	err = c->ops->new_shared_memory(c->io, sizeof(*page), &mem);
	if (err)
		return err;
	page = mem;
	memset(page, 0, sizeof(*page));
	page->magic = MRC_DOORBELL_MAGIC;
	page->version = MRC_DOORBELL_VERSION;
	page->bits = MRC_DOORBELL_BITS;
	err = c->ops->keep_doorbell(c->io, slot, 0);
	if (err) {
		c->ops->unmap(c->io, mem, sizeof(*page));
		return err;
	}
	cl->doorbells = page;
	c->t.mapped_bytes += sizeof(*page);
	cl->library = true;
	core_event(c, MRCD_INFO, "client pid %d uid %u connected", cl->pid, cl->uid);
	return 0;
}

/* Page maps are the daemon's memory, allocated at once: a client gets at most its quota
 * over its connection, then memfds (slower, never wrong). The program addresses 4 GiB of a
 * page map; larger regions take memfds. */
#define MRCD_PAGE_MAP_MAX (4ull << 30)

/* One library request being served: what came, and where its reply goes. */
struct request {
	unsigned slot;
	const uint8_t *payload;
	size_t len;
	unsigned n_desc;
	void *out; /* room for the handler's reply, as the table below says */
	uint64_t now;
};

static int pages(struct mrcd_core *c, const struct request *r)
{
	struct mrcd_client *cl = &c->t.client[r->slot];
	struct mrc_ctl_pages pg;
	int err;

	if (r->len != sizeof(pg))
		return -EINVAL;
	if (!c->fast)
		return -EOPNOTSUPP;
	memcpy(&pg, r->payload, sizeof(pg));
	if (!pg.length || pg.length % MRC_XDP_PAGE || pg.length > MRCD_PAGE_MAP_MAX)
		return -EINVAL;
	if (cl->page_bytes + pg.length > c->page_map_quota)
		return -EDQUOT;
	err = core_user_allows(c, cl->uid, MRC_CTL_USER_PAGE_MAPS, pg.length);
	if (err)
		return err;
	err = c->ops->new_page_map(c->io, pg.length);
	if (err)
		return err;
	cl->page_bytes += pg.length;
	return 0;
}

static int reg_mr(struct mrcd_core *c, const struct request *r)
{
	return core_reg_mr(c, r->slot, r->payload, r->len, r->n_desc, r->out);
}

static int dereg_mr(struct mrcd_core *c, const struct request *r)
{
	struct mrcd_mr *mr;
	uint32_t h;
	int err = handle_arg(r->payload, r->len, &h);

	if (err)
		return err;
	mr = core_mr_by_key(&c->t, (int)r->slot, h);
	if (!mr)
		return -ENOENT;
	if (mr->n_windows)
		return -EBUSY; /* verbs: not while memory windows are bound to it */
	core_mr_deregister(c, mr);
	return 0;
}

static int alloc_mw(struct mrcd_core *c, const struct request *r)
{
	return core_alloc_mw(c, r->slot, r->payload, r->len, r->out);
}

static int dealloc_mw(struct mrcd_core *c, const struct request *r)
{
	uint32_t h;
	int err = handle_arg(r->payload, r->len, &h);

	return err ? err : core_dealloc_mw(c, r->slot, h);
}

static int create_cq(struct mrcd_core *c, const struct request *r)
{
	return core_create_cq(c, r->slot, r->payload, r->len, r->n_desc, r->out);
}

static int destroy_cq(struct mrcd_core *c, const struct request *r)
{
	struct mrcd_cq *cq;
	uint32_t h;
	int err = handle_arg(r->payload, r->len, &h);

	if (err)
		return err;
	cq = core_cq_by_handle(&c->t, (int)r->slot, h);
	if (!cq)
		return -ENOENT;
	if (cq->n_users)
		return -EBUSY; /* verbs: a CQ in use by a QP cannot go */
	core_cq_free(c, cq);
	return 0;
}

static int create_qp(struct mrcd_core *c, const struct request *r)
{
	return core_create_qp(c, r->slot, r->payload, r->len, r->out);
}

static int connect_qp(struct mrcd_core *c, const struct request *r)
{
	return core_connect_qp(c, r->slot, r->payload, r->len, r->now);
}

static int ready_qp(struct mrcd_core *c, const struct request *r)
{
	return core_ready_qp(c, r->slot, r->payload, r->len, r->now);
}

static int modify_qp(struct mrcd_core *c, const struct request *r)
{
	return core_modify_qp(c, r->slot, r->payload, r->len);
}

static int ud_qp(struct mrcd_core *c, const struct request *r)
{
	return core_ud_qp(c, r->slot, r->payload, r->len);
}

static int resolve(struct mrcd_core *c, const struct request *r)
{
	return core_resolve(c, r->payload, r->len, r->now);
}

static int create_srq(struct mrcd_core *c, const struct request *r)
{
	return core_create_srq(c, r->slot, r->payload, r->len, r->n_desc, r->out);
}

static int modify_srq(struct mrcd_core *c, const struct request *r)
{
	return core_modify_srq(c, r->slot, r->payload, r->len);
}

static int destroy_srq(struct mrcd_core *c, const struct request *r)
{
	uint32_t h;
	int err = handle_arg(r->payload, r->len, &h);

	return err ? err : core_destroy_srq(c, r->slot, h);
}

/* The client's own QP named by the request, or NULL. */
static struct mrcd_qp *own_qp(struct mrcd_core *c, const struct request *r, int *err)
{
	struct mrcd_qp *qp;
	uint32_t h;

	if ((*err = handle_arg(r->payload, r->len, &h)))
		return NULL;
	qp = core_qp_by_num(&c->t, h);
	if (!qp || qp->owner != (int)r->slot) {
		*err = -ENOENT;
		return NULL;
	}
	return qp;
}

static int error_qp(struct mrcd_core *c, const struct request *r)
{
	int err;
	struct mrcd_qp *qp = own_qp(c, r, &err);

	if (!qp)
		return err;
	core_qp_error(c, qp, r->now);
	core_drain_rings(c, qp, r->now);
	return 0;
}

static int destroy_qp(struct mrcd_core *c, const struct request *r)
{
	int err;
	struct mrcd_qp *qp = own_qp(c, r, &err);

	if (!qp)
		return err;
	core_qp_free(c, qp, r->now);
	return 0;
}

static int cm(struct mrcd_core *c, const struct request *r)
{
	struct mrc_ctl_cm_reply reply;
	int err = core_cm_request(c, r->slot, r->payload, r->len, r->n_desc, &reply, r->now);

	memcpy(r->out, &reply, sizeof(reply));
	return err;
}

/* Library requests after HELLO: the handler, and the reply it writes on success. */
static const struct {
	int (*fn)(struct mrcd_core *c, const struct request *r);
	size_t reply;
} library_requests[MRC_CTL_TYPE_MAX + 1] = {
	[MRC_CTL_PAGES] = { pages, 0 },
	[MRC_CTL_REG_MR] = { reg_mr, sizeof(struct mrc_ctl_mr) },
	[MRC_CTL_DEREG_MR] = { dereg_mr, 0 },
	[MRC_CTL_ALLOC_MW] = { alloc_mw, sizeof(struct mrc_ctl_mw) },
	[MRC_CTL_DEALLOC_MW] = { dealloc_mw, 0 },
	[MRC_CTL_CREATE_CQ] = { create_cq, sizeof(struct mrc_ctl_cq) },
	[MRC_CTL_DESTROY_CQ] = { destroy_cq, 0 },
	[MRC_CTL_CREATE_QP] = { create_qp, sizeof(struct mrc_ctl_qp_created) },
	[MRC_CTL_CONNECT_QP] = { connect_qp, 0 },
	[MRC_CTL_READY_QP] = { ready_qp, 0 },
	[MRC_CTL_MODIFY_QP] = { modify_qp, 0 },
	[MRC_CTL_UD_QP] = { ud_qp, 0 },
	[MRC_CTL_RESOLVE] = { resolve, 0 },
	[MRC_CTL_CREATE_SRQ] = { create_srq, sizeof(struct mrc_ctl_srq) },
	[MRC_CTL_MODIFY_SRQ] = { modify_srq, 0 },
	[MRC_CTL_DESTROY_SRQ] = { destroy_srq, 0 },
	[MRC_CTL_ERROR_QP] = { error_qp, 0 },
	[MRC_CTL_DESTROY_QP] = { destroy_qp, 0 },
	[MRC_CTL_CM] = { cm, sizeof(struct mrc_ctl_cm_reply) },
};

int mrcd_core_request(struct mrcd_core *c, unsigned slot, const struct mrc_ctl_hdr *req,
		      const uint8_t *payload, unsigned n_desc, uint8_t *out, size_t cap,
		      size_t *len, uint64_t now)
{
	struct mrcd_tables *t = &c->t;
	struct request r = { slot, payload, req->len, n_desc, out, now };
	int err;

	*len = 0;
	c->now = now;
	if (slot >= MRCD_MAX_CLIENTS || !t->client[slot].open)
		return -ENOTCONN;
	mrcd_core_client_heard(c, slot);
	if (req->type == MRC_CTL_HELLO)
		return hello(c, slot, payload, req->len, n_desc);
	if (!t->client[slot].library)
		return -ENOTCONN; /* HELLO first */
	if (req->type > MRC_CTL_TYPE_MAX || !library_requests[req->type].fn)
		return -EOPNOTSUPP;
	if (cap < library_requests[req->type].reply)
		return -ENOSPC;
	err = library_requests[req->type].fn(c, &r);
	if (!err)
		*len = library_requests[req->type].reply;
	return err;
}

/* --- the wire and time --------------------------------------------------------------------- */

/*
 * A peer refused for its authentication, said once a second at most: the usual cause is a
 * configuration (another cluster key, a missing allowed_peer, a peer without keys, a copied
 * key_file), which an operator must be able to find without counting packets.
 */
static void log_discovery_refused(struct mrcd_core *c, const struct mrc_packet *pkt,
				  const struct mrcd_dgram *g, int why)
{
	const uint8_t *key = mrc_auth_discover_key(pkt);
	char a[48];

	if (c->now < c->next_auth_refusal_log_ns)
		return;
	c->next_auth_refusal_log_ns = c->now + 1000000000ull;
	core_addr_str(g->peer.addr, a, sizeof(a));
	if (!key)
		core_log(c, MRCD_NOTICE, "%s from %s refused: it is not authenticated (a peer "
			 "with auth off?)", mrc_opcode_name(pkt->opcode), a);
	else if (why == MRC_DROP_PEER_KEY && c->auth &&
		 !memcmp(key, c->auth->public_key, MRC_AUTH_PUBLIC_KEY_LEN))
		core_log(c, MRCD_WARNING, "%s from %s refused: it carries this daemon's own public "
			 "key (a key_file copied between hosts?)", mrc_opcode_name(pkt->opcode), a);
	else if (why == MRC_DROP_PEER_KEY)
		core_log(c, MRCD_NOTICE, "%s from %s refused: its key is not allowed there (no "
			 "allowed_peer names it with this address)", mrc_opcode_name(pkt->opcode), a);
	else
		core_log(c, MRCD_NOTICE, "%s from %s refused: its tag is wrong (another cluster "
			 "key?)", mrc_opcode_name(pkt->opcode), a);
}

unsigned mrcd_core_shard_of(const struct mrcd_core *c, const struct mrcd_dgram *g)
{
	if (c->n_shards == 1 || g->len < sizeof(struct mrc_hdr))
		return MRCD_CONTROL_SHARD;
	return mrcd_shard_of_qpn(load_be32(g->data + offsetof(struct mrc_hdr, dst_qpn)),
				 c->n_shards);
}

bool mrcd_core_rx_stops_workers(const struct mrcd_dgram *g)
{
	return g->len >= sizeof(struct mrc_hdr) &&
	       load_be32(g->data + offsetof(struct mrc_hdr, dst_qpn)) <= MRC_QPN_CM;
}

/* DISCOVER and its answers, a peer's connection manager, UD: the control thread's. */
static void control_rx(struct mrcd_core *c, const struct mrc_packet *pkt,
		       const struct mrcd_dgram *g, uint64_t now)
{
	int why;

	c->now = now;
	if (mrc_opcode_is_ud(pkt->opcode)) {
		if (pkt->dst_qpn == MRC_QPN_CM)
			core_cm_rx(c, pkt, g, now); /* a peer's connection manager */
		else
			core_ud_rx(c, pkt, g, now);
		return;
	}
	why = mrc_peer_table_recv(&c->peers, pkt, g->peer.addr, g->peer_port, g->plane, now);
	if (why != MRC_DROP_NONE) {
		c->stats.rx_daemon_refused++;
		if (why == MRC_DROP_UNAUTHENTICATED || why == MRC_DROP_PEER_KEY)
			log_discovery_refused(c, pkt, g, why);
	}
	core_send_daemon_packets(c, now); /* the answer it owes, at once */
}

bool mrcd_core_rx(struct mrcd_core *c, unsigned shard, const struct mrcd_dgram *g,
		  uint64_t now)
{
	struct mrcd_shard *sh = &c->shard[shard];
	struct mrc_packet pkt;

	if (mrcd_core_shard_of(c, g) != shard) {
		sh->stats.rx_elsewhere++;
		return false;
	}
	sh->now = now;
	sh->stats.rx_datagrams++;
	if ((g->placed ? mrc_decode_placed(g->data, g->len, &pkt)
		       : mrc_decode(g->data, g->len, &pkt)) != MRC_WIRE_OK) {
		sh->stats.rx_malformed++; /* never answered */
		return true;
	}
	if (!mrc_opcode_is_ud(pkt.opcode) && pkt.dst_qpn != MRC_QPN_DAEMON) {
		if (!core_qp_rx(c, sh, &pkt, g, now))
			sh->stats.rx_no_qp++; /* dropped unanswered */
	} else if (shard == MRCD_CONTROL_SHARD) {
		control_rx(c, &pkt, g, now);
	} else {
		sh->stats.rx_no_qp++; /* UD to a slot no UD QP has: UD QPs are shard 0's */
	}
	return true;
}

void mrcd_core_doorbell(struct mrcd_core *c, unsigned shard, unsigned slot, uint64_t now)
{
	struct mrcd_client *cl = slot < MRCD_MAX_CLIENTS ? &c->t.client[slot] : NULL;
	struct mrcd_shard *sh = &c->shard[shard];

	sh->now = now;
	if (!cl || !cl->library)
		return;
	for (unsigned w = 0; w < MRC_DOORBELL_BITS / 64; w++) {
		uint64_t mine = sh->doorbell_mask[w], bits;

		if (!(__atomic_load_n(&cl->doorbells->rung[w], __ATOMIC_RELAXED) & mine))
			continue;
		/* acquire: the entries published before a bit was set are visible; the other
		 * shards' bits stay for them */
		bits = mine == UINT64_MAX
			       ? __atomic_exchange_n(&cl->doorbells->rung[w], 0, __ATOMIC_ACQUIRE)
			       : __atomic_fetch_and(&cl->doorbells->rung[w], ~mine,
						    __ATOMIC_ACQUIRE) & mine;
		while (bits) {
			unsigned qp_slot = w * 64 + (unsigned)__builtin_ctzll(bits);

			bits &= bits - 1;
			/* a bit names a QP of this client or nothing */
			if (qp_slot < MRCD_MAX_QPS && c->t.qps[qp_slot].owner == (int)slot)
				mrcd_sched_ready(&sh->sched, qp_slot);
		}
	}
}

bool mrcd_core_idle(struct mrcd_core *c, unsigned shard)
{
	return core_qps_idle(c, &c->shard[shard]);
}

bool mrcd_core_pump(struct mrcd_core *c, unsigned shard, uint64_t now)
{
	return core_qps_pump(c, &c->shard[shard], now) > 0;
}

uint64_t mrcd_core_next_timeout(const struct mrcd_core *c, unsigned shard)
{
	return core_qps_next_timeout(c, &c->shard[shard]);
}

bool mrcd_core_shard_wants_control(const struct mrcd_core *c, unsigned shard)
{
	return __atomic_load_n(&c->shard[shard].control_due, __ATOMIC_ACQUIRE);
}

void mrcd_core_shard_load(const struct mrcd_core *c, unsigned shard, uint64_t *qps,
			  uint64_t *busy_turns, uint64_t *visits)
{
	const struct mrcd_shard *sh = &c->shard[shard];

	*qps = sh->n_qps;
	*busy_turns = sh->pump_turns;
	*visits = sh->qps_visited;
}

bool mrcd_core_control_pump(struct mrcd_core *c, uint64_t now)
{
	bool worked = mrc_peer_table_next_timeout(&c->peers) <= now ||
		      core_cm_next_timeout(c) <= now;

	c->now = now;
	mrc_peer_table_on_timeout(&c->peers, now);
	core_send_daemon_packets(c, now);
	core_cm_pump(c, now);
	if (c->t.n_retired && now >= c->t.next_reap_ns) {
		core_reap_retired(c, now);
		worked = true;
	}
	return worked;
}

uint64_t mrcd_core_control_timeout(const struct mrcd_core *c)
{
	uint64_t next = mrc_peer_table_next_timeout(&c->peers), cm = core_cm_next_timeout(c);
	const struct mrcd_silent_queue *q = &c->t.silent;

	if (cm < next)
		next = cm;
	if (c->t.n_retired && c->t.next_reap_ns < next)
		next = c->t.next_reap_ns;
	/* the head may be stale (its client spoke): waking for it then costs one turn */
	if (q->n && q->until[q->head] < next)
		next = q->until[q->head];
	return next;
}

/* --- operators ----------------------------------------------------------------------------- */

int mrcd_core_drain_plane(struct mrcd_core *c, unsigned plane, bool drained)
{
	struct mrc_node_info info = c->peers.local;
	bool known = false;

	for (unsigned i = 0; i < c->cfg->n_planes; i++)
		known |= c->cfg->planes[i].index == plane;
	if (!known)
		return -ENOENT;
	if (drained)
		c->drained_planes |= (uint16_t)(1u << plane);
	else
		c->drained_planes &= (uint16_t)~(1u << plane);
	c->peers_epoch++; /* UD routes leave the plane too */
	/* our QPs stop sending there; the peers hear it and stop sending to us there */
	for (unsigned j = 0; j < c->t.n_qps; j++) {
		struct mrcd_qp *qp = &c->t.qps[c->t.active[j]];

		if (qp->conn)
			core_apply_drains(c, qp);
	}
	for (unsigned i = 0; i < info.n_addrs; i++)
		if (info.addrs[i].plane == plane)
			info.addrs[i].flags = drained ? info.addrs[i].flags | MRC_PLANE_F_DRAINED
						      : info.addrs[i].flags & ~MRC_PLANE_F_DRAINED;
	mrc_peer_table_set_local(&c->peers, &info);
	core_event(c, MRCD_NOTICE, "plane %u %s by an operator", plane,
		   drained ? "drained" : "restored");
	return 0;
}

void mrcd_core_reload(struct mrcd_core *c)
{
	for (unsigned s = 0; s < c->n_shards; s++) {
		c->shard[s].rate.capacity_kbps = shard_capacity_kbps(c);
		c->shard[s].rate.stale = true; /* recompute the shares at the next hint */
	}
}

void mrcd_core_flush_all(struct mrcd_core *c, uint64_t now)
{
	core_cm_flush_all(c, now);
	for (unsigned j = 0; j < c->t.n_qps; j++) {
		struct mrcd_qp *qp = &c->t.qps[c->t.active[j]];

		core_qp_error(c, qp, now);
		core_drain_rings(c, qp, now);
	}
}
