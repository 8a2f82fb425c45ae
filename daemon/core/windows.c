/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The peer's keys, and memory windows [SPEC 4.9]: keys onto part of a region, with their own
 * access, that the application binds, moves and invalidates while the region stays
 * registered. A window takes a slot of the key table the regions use, so a peer's key finds
 * either in one lookup (core_mr_lookup, the engine's callback); it maps nothing and the XDP
 * program never learns of it, so every packet that names a window comes here through the
 * engine, which checks it as it checks a region's.
 *
 * Binding and local invalidation arrive as send queue entries and take effect when the core
 * takes them from the ring, in posting order with the requests around them; the engine then
 * completes them in that order. A bound window counts on its region, which cannot be
 * deregistered (EBUSY) until every window on it is unbound, invalidated or deallocated.
 */
#include <errno.h>
#include <string.h>

#include "core/internal.h"
#include "proto/random.h"

static bool is_window(const struct mrcd_mr *w, int owner)
{
	return w->owner == owner && w->mw_type;
}

/* The client's window whose key, but for the bits a bind changes, is `key`; or NULL. */
static struct mrcd_mr *window_of(struct mrcd_tables *t, int owner, uint32_t key)
{
	uint32_t slot = MRC_KEY_SLOT(key);
	struct mrcd_mr *w;

	if (slot >= MRCD_MAX_MRS)
		return NULL;
	w = &t->mrs[slot];
	return is_window(w, owner) && (w->key & ~MRC_CTL_MW_KEY_TAG) == (key & ~MRC_CTL_MW_KEY_TAG)
		       ? w
		       : NULL;
}

static void unbind(struct mrcd_tables *t, struct mrcd_mr *w)
{
	struct mrcd_qp *qp = w->bound_qpn ? core_qp_by_num(t, w->bound_qpn) : NULL;

	if (qp)
		qp->n_windows--;
	if (w->bound)
		t->mrs[w->region].n_windows--;
	w->bound = false;
	w->iova = w->length = 0;
	w->access = 0;
	w->base = NULL;
	w->bound_qpn = 0;
}

int core_alloc_mw(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		  struct mrc_ctl_mw *out)
{
	struct mrcd_tables *t = &c->t;
	struct mrc_ctl_alloc_mw r;
	struct mrcd_mr *w;
	uint32_t slot;
	int err;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	if ((r.type != MRC_CTL_MW_TYPE_1 && r.type != MRC_CTL_MW_TYPE_2) || !r.pd ||
	    r.pd > MRC_CTL_MAX_PD || r.reserved[0] || r.reserved[1] || r.reserved[2])
		return -EINVAL;
	err = core_user_allows(c, t->client[owner].uid, MRC_CTL_USER_MRS, 1);
	if (err)
		return err;
	w = core_key_slot(t, owner);
	if (!w)
		return -ENOSPC;
	slot = (uint32_t)(w - t->mrs);
	memset(w, 0, sizeof(*w));
	w->owner = (int)owner;
	w->pd = r.pd;
	w->mw_type = r.type;
	/* slot, random bits, and a tag the binds move on (ibv_inc_rkey) */
	w->key = slot << MRC_XDP_KEY_SLOT_SHIFT |
		 ((uint32_t)mrc_prf_next(&t->rng) & MRC_KEY_RANDOM_MASK);
	t->n_mws++;
	t->client[owner].n_mws++;
	memset(out, 0, sizeof(*out));
	out->rkey = w->key;
	return 0;
}

void core_mw_free(struct mrcd_core *c, struct mrcd_mr *w)
{
	struct mrcd_tables *t = &c->t;

	unbind(t, w);
	t->n_mws--;
	t->client[w->owner].n_mws--;
	w->owner = -1;
	w->key = 0;
	w->mw_type = 0;
}

/* ibv_dealloc_mw: bound or not, the window and its key are gone. */
int core_dealloc_mw(struct mrcd_core *c, unsigned owner, uint32_t key)
{
	struct mrcd_mr *w = window_of(&c->t, (int)owner, key);

	if (!w)
		return -ENOENT;
	core_mw_free(c, w);
	return 0;
}

/*
 * A bind (IBV_WR_BIND_MW, or ibv_bind_mw for type 1) as the QP's send queue carries it, done
 * now; MRC_CQ_SUCCESS or MRC_CQ_MW_BIND_ERR. What InfiniBand asks of one: the window,
 * the QP and the region in one protection domain; the region allowing binds and covering the
 * range; remote write or atomic access only over a region the client may write itself; a
 * type 2 window free before it is bound again; type 1 not zero-based.
 */
static int bind_locked(struct mrcd_core *c, struct mrcd_qp *qp, const struct mrc_sq_entry *e)
{
	struct mrcd_tables *t = &c->t;
	struct mrcd_mr *w = window_of(t, qp->owner, e->mw_rkey), *mr;
	uint32_t remote = MRC_CTL_ACCESS_REMOTE_WRITE | MRC_CTL_ACCESS_REMOTE_READ |
			  MRC_CTL_ACCESS_REMOTE_ATOMIC;

	if (!w || w->pd != qp->pd || e->num_sge || e->mw_reserved ||
	    (e->mw_access & ~(remote | MRC_CTL_ACCESS_ZERO_BASED)))
		return MRC_CQ_MW_BIND_ERR;
	if (w->mw_type == MRC_CTL_MW_TYPE_2 && w->bound)
		return MRC_CQ_MW_BIND_ERR;
	if (!e->mw_length) {
		if (w->mw_type != MRC_CTL_MW_TYPE_1)
			return MRC_CQ_MW_BIND_ERR; /* a type 2 window is freed by invalidation */
		unbind(t, w);
		w->key = e->mw_rkey;
		return MRC_CQ_SUCCESS;
	}
	mr = core_mr_by_key(t, qp->owner, e->mr_lkey);
	if (!mr || mr->pd != w->pd || !(mr->access & MRC_CTL_ACCESS_MW_BIND) ||
	    e->mw_addr < mr->iova || e->mw_addr - mr->iova > mr->length ||
	    e->mw_length > mr->length - (e->mw_addr - mr->iova))
		return MRC_CQ_MW_BIND_ERR;
	if ((e->mw_access & (MRC_CTL_ACCESS_REMOTE_WRITE | MRC_CTL_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & MRC_CTL_ACCESS_LOCAL_WRITE))
		return MRC_CQ_MW_BIND_ERR;
	if ((e->mw_access & MRC_CTL_ACCESS_ZERO_BASED) && w->mw_type == MRC_CTL_MW_TYPE_1)
		return MRC_CQ_MW_BIND_ERR;
	unbind(t, w);
	w->bound = true;
	w->region = (uint32_t)(mr - t->mrs);
	mr->n_windows++;
	w->key = e->mw_rkey;
	w->iova = e->mw_access & MRC_CTL_ACCESS_ZERO_BASED ? 0 : e->mw_addr;
	w->length = e->mw_length;
	w->access = e->mw_access & remote;
	w->base = mr->base + (e->mw_addr - mr->iova);
	if (w->mw_type == MRC_CTL_MW_TYPE_2) {
		w->bound_qpn = qp->qpn;
		qp->n_windows++;
	}
	return MRC_CQ_SUCCESS;
}

/* Windows change as send queues bind them: under the windows' lock, where workers run. */
int core_mw_bind(struct mrcd_core *c, struct mrcd_qp *qp, const struct mrc_sq_entry *e)
{
	int status;

	mrcd_lock(&c->windows_lock, c->n_shards > 1);
	status = bind_locked(c, qp, e);
	mrcd_unlock(&c->windows_lock, c->n_shards > 1);
	return status;
}

/* A QP goes: the type 2 windows bound through it are invalidated with it. */
void core_qp_windows_gone(struct mrcd_core *c, struct mrcd_qp *qp)
{
	struct mrcd_tables *t = &c->t;

	for (unsigned i = 1; i < MRCD_MAX_MRS && qp->n_windows; i++)
		if (t->mrs[i].owner == qp->owner && t->mrs[i].mw_type && t->mrs[i].bound &&
		    t->mrs[i].bound_qpn == qp->qpn)
			unbind(t, &t->mrs[i]);
}

/* The client's type 2 window bound now under exactly `key`, or NULL. */
static struct mrcd_mr *bound_type_2(struct mrcd_tables *t, int owner, uint32_t key)
{
	struct mrcd_mr *w = window_of(t, owner, key);

	return w && w->key == key && w->bound && w->mw_type == MRC_CTL_MW_TYPE_2 ? w : NULL;
}

/* IBV_WR_LOCAL_INV: a type 2 window of the QP's protection domain, bound under that key. */
int core_mw_local_inv(struct mrcd_core *c, struct mrcd_qp *qp, const struct mrc_sq_entry *e)
{
	struct mrcd_mr *w;
	int status = MRC_CQ_MW_BIND_ERR;

	mrcd_lock(&c->windows_lock, c->n_shards > 1);
	w = bound_type_2(&c->t, qp->owner, e->imm);
	if (w && w->pd == qp->pd && !e->num_sge) {
		unbind(&c->t, w);
		status = MRC_CQ_SUCCESS;
	}
	mrcd_unlock(&c->windows_lock, c->n_shards > 1);
	return status;
}

/* A window as the peer's request through qp may use it; NULL otherwise. */
static struct mrcd_mr *window_of_qp(struct mrcd_tables *t, const struct mrcd_qp *qp,
				    uint32_t key)
{
	struct mrcd_mr *w = window_of(t, qp->owner, key);

	if (!w || w->key != key || !w->bound || w->pd != qp->pd ||
	    (w->mw_type == MRC_CTL_MW_TYPE_2 && w->bound_qpn != qp->qpn))
		return NULL;
	return w;
}

/* Engine callback: a key and a range to host memory, for the peer's one-sided operations. */
int core_mr_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		   uint8_t **host)
{
	struct mrcd_qp *qp = user;
	struct mrcd_core *c = qp->core;
	struct mrcd_mr *mr = core_mr_of_qp(&c->t, qp, key);
	uint32_t need = (access & MRC_ACCESS_REMOTE_WRITE ? MRC_CTL_ACCESS_REMOTE_WRITE : 0) |
			(access & MRC_ACCESS_REMOTE_READ ? MRC_CTL_ACCESS_REMOTE_READ : 0) |
			(access & MRC_ACCESS_REMOTE_ATOMIC ? MRC_CTL_ACCESS_REMOTE_ATOMIC : 0);
	bool window = !mr;
	int found = -1;

	/* a region changes only while the workers are stopped; a window as another worker's
	 * send queue binds it, under the windows' lock */
	if (window) {
		mrcd_lock(&c->windows_lock, c->n_shards > 1);
		mr = window_of_qp(&c->t, qp, key); /* checked alike */
	}
	if (mr && (mr->access & need) == need && addr >= mr->iova &&
	    addr - mr->iova <= mr->length && len <= mr->length - (addr - mr->iova)) {
		*host = mr->base + (addr - mr->iova);
		found = 0;
	}
	if (window)
		mrcd_unlock(&c->windows_lock, c->n_shards > 1);
	return found;
}

/* What the peer may invalidate through qp: a type 2 window bound through it. */
static struct mrcd_mr *invalidatable(struct mrcd_qp *qp, uint32_t key)
{
	struct mrcd_mr *w = bound_type_2(&qp->core->t, qp->owner, key);

	return w && w->bound_qpn == qp->qpn ? w : NULL;
}

/* Engine callbacks for SEND_INV, user = the QP: checked at the first packet, done at
 * delivery. */
int core_may_invalidate(void *user, uint32_t key)
{
	struct mrcd_qp *qp = user;
	struct mrcd_core *c = qp->core;
	bool may;

	mrcd_lock(&c->windows_lock, c->n_shards > 1);
	may = invalidatable(qp, key) != NULL;
	mrcd_unlock(&c->windows_lock, c->n_shards > 1);
	return may ? 0 : -1;
}

void core_invalidate(void *user, uint32_t key)
{
	struct mrcd_qp *qp = user;
	struct mrcd_core *c = qp->core;
	struct mrcd_mr *w;

	mrcd_lock(&c->windows_lock, c->n_shards > 1);
	w = invalidatable(qp, key);
	/* gone already if the application invalidated it meanwhile: the key is dead either way */
	if (w)
		unbind(&c->t, w);
	mrcd_unlock(&c->windows_lock, c->n_shards > 1);
}
