/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Handles, memory regions and completion queues: what a client creates before its QPs, and
 * what the engine reaches through them (a key to host memory, a completion to a CQ ring).
 */
#include <errno.h>
#include <string.h>

#include "core/internal.h"
#include "core/shm_map.h"
#include "proto/random.h"
#include "proto/seq.h"

/* --- handles ------------------------------------------------------------------------------- */

/* A stale handle of a reused slot never matches: a generation sits above the slot. */
uint32_t core_make_handle(struct mrcd_tables *t, unsigned slot)
{
	t->generation = (t->generation + 1) & ((1u << MRCD_HANDLE_SLOT_BITS) - 1);
	if (!t->generation)
		t->generation = 1;
	return t->generation << MRCD_HANDLE_SLOT_BITS | slot;
}

struct mrcd_qp *core_qp_by_num(struct mrcd_tables *t, uint32_t qpn)
{
	struct mrcd_qp *qp = &t->qps[mrcd_qp_slot(qpn)];

	return qp->owner >= 0 && qp->qpn == qpn ? qp : NULL;
}

struct mrcd_cq *core_cq_by_handle(struct mrcd_tables *t, int owner, uint32_t handle)
{
	struct mrcd_cq *cq = &t->cqs[handle & (MRCD_MAX_CQS - 1)];

	return cq->owner == owner && cq->handle == handle ? cq : NULL;
}

struct mrcd_srq *core_srq_by_handle(struct mrcd_tables *t, int owner, uint32_t handle)
{
	struct mrcd_srq *s = &t->srqs[handle & (MRCD_MAX_SRQS - 1)];

	return s->owner == owner && s->handle == handle && handle ? s : NULL;
}

/*
 * A key is the region's slot (14 bits) over 18 random bits drawn at each registration, so a
 * guesser has no better than a 2^-18 chance per try; never 0, a common uninitialised
 * key. The layout is the XDP program's (MRC_KEY_SLOT).
 */
struct mrcd_mr *core_mr_by_key(struct mrcd_tables *t, int owner, uint32_t key)
{
	uint32_t slot = MRC_KEY_SLOT(key);
	struct mrcd_mr *mr;

	if (slot >= MRCD_MAX_MRS)
		return NULL;
	mr = &t->mrs[slot];
	/* a window's key changes as a worker binds it: its slot is not read further */
	return !mr->mw_type && mr->owner == owner && mr->key == key && !mr->retired ? mr : NULL;
}

/* A key as a QP may use it: a region of the QP's client and protection domain. */
struct mrcd_mr *core_mr_of_qp(struct mrcd_tables *t, const struct mrcd_qp *qp, uint32_t key)
{
	struct mrcd_mr *mr = core_mr_by_key(t, qp->owner, key);

	return mr && mr->pd == qp->pd ? mr : NULL;
}

/* The XDP program's owner check, made of the same two: client slot and protection domain. */
uint32_t core_owner_token(int owner, uint32_t pd)
{
	_Static_assert(MRCD_MAX_CLIENTS < (1u << 12) && MRC_CTL_MAX_PD < (1u << 20),
		       "client slot and PD share a 32-bit token");
	return pd << 12 | (uint32_t)(owner + 1);
}

/* --- memory regions ------------------------------------------------------------------------ */

void core_mr_unmap(struct mrcd_core *c, struct mrcd_mr *mr)
{
	if (c->fast)
		c->fast->mr_clear(c->io, (uint32_t)(mr - c->t.mrs));
	c->ops->unmap(c->io, mr->span, mr->span_len);
	c->t.mapped_bytes -= mr->span_len;
	c->t.client[mr->owner].registered_bytes -= mr->span_len;
	mr->owner = -1;
	mr->key = 0;
	mr->retired = false;
}

/*
 * True when every piece of work the client's QPs had taken at its latest deregistration has
 * finished: sends and receives completed (their ring slots given back), READ responses sent.
 * Work the engine takes later cannot name a retired region: its key died with ibv_dereg_mr.
 */
static bool past_retire_marks(struct mrcd_tables *t, int owner)
{
	for (unsigned j = 0; j < t->n_qps; j++) {
		const struct mrcd_qp *qp = &t->qps[t->active[j]];
		struct mrc_conn_info info;

		if (qp->owner != owner || !qp->conn)
			continue;
		mrc_conn_get_info(qp->conn, &info);
		if (mrc_seq_lt(qp->sq.released, qp->retire_sq) ||
		    mrc_seq_lt(qp->rq.released, qp->retire_rq) ||
		    mrc_seq_lt(info.rr_finished, qp->retire_rr))
			return false;
	}
	return true;
}

/*
 * ibv_dereg_mr: the key stops working at once; the mapping stays until the work the client's
 * QPs had taken by now is done, so the engine never touches memory the daemon has unmapped,
 * or reused for another client. Until then the region still counts against the client.
 */
void core_mr_deregister(struct mrcd_core *c, struct mrcd_mr *mr)
{
	struct mrcd_tables *t = &c->t;

	for (unsigned j = 0; j < t->n_qps; j++) {
		struct mrcd_qp *qp = &t->qps[t->active[j]];
		struct mrc_conn_info info;

		if (qp->owner != mr->owner || !qp->conn)
			continue;
		mrc_conn_get_info(qp->conn, &info);
		qp->retire_sq = qp->sq.mine;
		qp->retire_rq = qp->rq.mine;
		qp->retire_rr = info.rr_started;
	}
	t->n_mrs--;
	if (past_retire_marks(t, mr->owner)) {
		t->client[mr->owner].n_mrs--;
		core_mr_unmap(c, mr);
		return;
	}
	if (c->fast) /* the key stops working in XDP at once too; core_mr_unmap does it otherwise */
		c->fast->mr_clear(c->io, (uint32_t)(mr - t->mrs));
	mr->key = 0;
	mr->retired = true;
	t->n_retired++;
	t->client[mr->owner].n_retired++;
}

void core_reap_retired(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_tables *t = &c->t;

	t->next_reap_ns = now + 1000000; /* the check walks the client's QPs */
	for (unsigned owner = 0; owner < MRCD_MAX_CLIENTS && t->n_retired; owner++) {
		if (!t->client[owner].n_retired || !past_retire_marks(t, (int)owner))
			continue;
		for (unsigned i = 0; i < MRCD_MAX_MRS && t->client[owner].n_retired; i++) {
			struct mrcd_mr *mr = &t->mrs[i];

			if (mr->retired && mr->owner == (int)owner) {
				t->n_retired--;
				t->client[owner].n_retired--;
				t->client[owner].n_mrs--;
				core_mr_unmap(c, mr);
			}
		}
	}
}

/*
 * A region in one page map is the XDP program's to place into as well; any other (memfd
 * pages, or several segments) stays on the slow path, which handles everything anyway.
 */
static void mr_hand_to_fast_path(struct mrcd_core *c, const struct mrcd_mr *mr,
				 const struct mrc_ctl_reg_mr *r, const struct mrc_ctl_mr_segment *seg,
				 const struct mrcd_region_map *map)
{
	uint32_t access = (mr->access & MRC_CTL_ACCESS_REMOTE_WRITE ? MRC_XDP_ACCESS_REMOTE_WRITE
								    : 0) |
			  (mr->access & MRC_CTL_ACCESS_LOCAL_WRITE ? MRC_XDP_ACCESS_LOCAL_WRITE : 0);
	int err;

	if (!c->fast || r->n_segments != 1 || !access || !map->page_map)
		return;
	err = c->fast->mr_set(c->io, (uint32_t)(mr - c->t.mrs), mr->key, access,
			      core_owner_token(mr->owner, mr->pd), mr->iova, mr->length,
			      seg[0].fd_offset + r->offset);
	if (err)
		core_log(c, MRCD_WARNING, "region %08x: not placed in XDP: %s", mr->key,
			 strerror(-err));
}

/*
 * A free slot of the key table for a new region or window of the client, or NULL when the
 * client holds its share or the table is full. Next fit, not first fit: a slot just freed is
 * the last to be handed out again, so an XDP run still reading the old region's slot is long
 * over by then.
 */
struct mrcd_mr *core_key_slot(struct mrcd_tables *t, unsigned owner)
{
	if (t->client[owner].n_mrs + t->client[owner].n_mws >= MRCD_CLIENT_MAX_MRS)
		return NULL;
	for (unsigned k = 0; k < MRCD_MAX_MRS - 1; k++) {
		unsigned slot = 1 + (t->next_mr_slot + k) % (MRCD_MAX_MRS - 1);

		if (t->mrs[slot].owner < 0) {
			t->next_mr_slot = slot % (MRCD_MAX_MRS - 1);
			return &t->mrs[slot];
		}
	}
	return NULL;
}

int core_reg_mr(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		unsigned n_desc, struct mrc_ctl_mr *out)
{
	struct mrcd_tables *t = &c->t;
	struct mrc_ctl_mr_segment seg[MRC_CTL_MAX_SEGMENTS];
	struct mrcd_region_map map;
	struct mrc_ctl_reg_mr r;
	struct mrcd_mr *mr = NULL;
	uint64_t span = 0;
	unsigned slot = 0;
	int err;

	if (len < sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	if (!r.n_segments || r.n_segments > MRC_CTL_MAX_SEGMENTS ||
	    len != sizeof(r) + r.n_segments * sizeof(seg[0]) || n_desc != r.n_segments ||
	    !r.length || (r.access & ~MRC_CTL_ACCESS_ALL) || r.iova > UINT64_MAX - r.length ||
	    !r.pd || r.pd > MRC_CTL_MAX_PD || r.reserved)
		return -EINVAL;
	memcpy(seg, payload + sizeof(r), r.n_segments * sizeof(seg[0]));
	for (unsigned i = 0; i < r.n_segments; i++) {
		if (!seg[i].length || seg[i].length % c->page_size ||
		    seg[i].fd_offset % c->page_size || seg[i].length > (1ull << 40) ||
		    seg[i].fd_offset > (1ull << 40))
			return -EINVAL;
		span += seg[i].length;
	}
	if (r.offset >= span || r.length > span - r.offset)
		return -EINVAL;
	err = core_user_allows(c, t->client[owner].uid, MRC_CTL_USER_MRS, 1);
	if (!err)
		err = core_user_allows(c, t->client[owner].uid, MRC_CTL_USER_REGISTERED, span);
	if (err)
		return err;
	mr = core_key_slot(t, owner);
	if (!mr)
		return -ENOSPC;
	slot = (unsigned)(mr - t->mrs);
	err = c->ops->map_region(c->io, seg, r.n_segments, &map);
	if (err)
		return err;
	mr->span = map.base;
	mr->span_len = map.len;
	mr->key = slot << MRC_XDP_KEY_SLOT_SHIFT |
		  ((uint32_t)mrc_prf_next(&t->rng) & MRC_KEY_RANDOM_MASK) | 1;
	mr->owner = (int)owner;
	mr->pd = r.pd;
	mr->iova = r.iova;
	mr->length = r.length;
	mr->access = r.access;
	mr->base = mr->span + r.offset;
	mr->n_windows = 0;
	mr->mw_type = 0;
	mr->bound = false;
	mr_hand_to_fast_path(c, mr, &r, seg, &map);
	t->mapped_bytes += mr->span_len;
	t->client[owner].registered_bytes += mr->span_len;
	t->n_mrs++;
	t->client[owner].n_mrs++;
	out->lkey = out->rkey = mr->key;
	return 0;
}

int core_local_sge(struct mrcd_core *c, const struct mrcd_qp *qp, const struct mrc_shm_sge *in,
		   bool write, struct mrc_sge *out)
{
	return core_local_sge_in(c, qp->owner, qp->pd, in, write, out);
}

int core_local_sge_in(struct mrcd_core *c, int owner, uint32_t pd, const struct mrc_shm_sge *in,
		      bool write, struct mrc_sge *out)
{
	struct mrcd_mr *mr = core_mr_by_key(&c->t, owner, in->lkey);

	if (!mr || mr->pd != pd || (write && !(mr->access & MRC_CTL_ACCESS_LOCAL_WRITE)) ||
	    in->addr < mr->iova ||
	    in->addr - mr->iova > mr->length || in->length > mr->length - (in->addr - mr->iova))
		return -1;
	out->host = mr->base + (in->addr - mr->iova);
	out->addr = in->addr;
	out->length = in->length;
	out->lkey = in->lkey;
	return 0;
}

/* --- rings --------------------------------------------------------------------------------- */

uint32_t core_ring_entries(uint32_t want)
{
	uint32_t n = 16;

	while (n < want && n < MRCD_MAX_RING_ENTRIES)
		n <<= 1;
	return n;
}

int core_ring_new(struct mrcd_core *c, uint16_t kind, uint32_t entries, uint32_t qpn,
		  void **mem, size_t *len, struct mrc_ring *ring)
{
	size_t bytes = MRC_RING_BYTES((size_t)entries, mrc_ring_entry_size(kind));
	void *m;
	int err = c->ops->new_shared_memory(c->io, bytes, &m);

	if (err)
		return err;
	mrc_ring_format(m, bytes, kind, entries, qpn);
	/* the daemon consumes SQ and RQ and produces into CQs */
	mrc_ring_attach(ring, m, bytes, kind, kind == MRC_RING_CQ);
	/* a working QP's receives wake nobody: they are read when a packet needs one, or at
	 * the QP's next visit (core_qps_idle) */
	if (kind == MRC_RING_RQ)
		mrc_ring_want_doorbell(ring, false);
	*mem = m;
	*len = bytes;
	c->t.mapped_bytes += bytes;
	return 0;
}

/* --- completion queues --------------------------------------------------------------------- */

void core_cq_free(struct mrcd_core *c, struct mrcd_cq *cq)
{
	struct mrcd_tables *t = &c->t;

	for (unsigned s = 0; cq->notify_pending && s < c->n_shards; s++) {
		struct mrcd_shard *sh = &c->shard[s];

		for (unsigned i = 0; i < sh->n_notify_pending; i++)
			if (sh->notify_list[i] == (uint16_t)(cq - t->cqs)) {
				sh->notify_list[i] = sh->notify_list[--sh->n_notify_pending];
				cq->notify_pending = false;
				break;
			}
	}
	c->ops->unmap(c->io, cq->mem, cq->mem_len);
	t->mapped_bytes -= cq->mem_len;
	if (cq->channel >= 0) {
		c->ops->close_channel(c->io, cq->channel);
		t->client[cq->owner].channels--;
	}
	t->n_cqs--;
	t->client[cq->owner].n_cqs--;
	cq->owner = -1;
	cq->handle = 0;
}

int core_ring_with_channel(struct mrcd_core *c, uint16_t kind, uint32_t want, bool channel,
			   void **mem, size_t *len, struct mrc_ring *ring, int *channel_out)
{
	int err = core_ring_new(c, kind, core_ring_entries(want), 0, mem, len, ring);

	if (err)
		return err;
	if (channel && (err = c->ops->keep_channel(c->io, 0, channel_out))) {
		c->ops->unmap(c->io, *mem, *len);
		c->t.mapped_bytes -= *len;
	}
	return err;
}

int core_create_cq(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		   unsigned n_desc, struct mrc_ctl_cq *out)
{
	struct mrcd_tables *t = &c->t;
	struct mrc_ctl_create_cq r;
	struct mrcd_cq *cq = NULL;
	unsigned slot;
	int channel = -1, err;

	if (len != sizeof(r) || n_desc > 1)
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	if (!r.entries || r.entries > MRCD_MAX_RING_ENTRIES)
		return -EINVAL;
	if (n_desc && t->client[owner].channels >= MRCD_CLIENT_MAX_CHANNELS)
		return -EMFILE;
	if (t->client[owner].n_cqs >= MRCD_CLIENT_MAX_CQS)
		return -ENOSPC;
	err = core_user_allows(c, t->client[owner].uid, MRC_CTL_USER_CQS, 1);
	if (err)
		return err;
	for (slot = 0; slot < MRCD_MAX_CQS; slot++)
		if (t->cqs[slot].owner < 0) {
			cq = &t->cqs[slot];
			break;
		}
	if (!cq)
		return -ENOSPC;
	memset(cq, 0, sizeof(*cq));
	cq->owner = -1;
	cq->channel = -1;
	/* a completion channel is the library's datagram socket: io checks it */
	err = core_ring_with_channel(c, MRC_RING_CQ, r.entries, n_desc, &cq->mem, &cq->mem_len,
				     &cq->ring, &channel);
	if (err)
		return err;
	cq->owner = (int)owner;
	cq->handle = core_make_handle(t, slot);
	cq->channel = channel;
	if (channel >= 0)
		t->client[owner].channels++;
	t->n_cqs++;
	t->client[owner].n_cqs++;
	out->handle = cq->handle;
	out->entries = cq->ring.entries;
	return 0;
}

/*
 * Wakes the client's completion channel if it armed this CQ for this completion. The channel
 * is a datagram socket and io's send never waits: a client cannot stall the daemon through it.
 */
static void cq_notify(struct mrcd_core *c, struct mrcd_shard *sh, struct mrcd_cq *cq,
		      bool solicited_or_error)
{
	uint32_t *arm = &cq->ring.consumer->aux;
	uint32_t want;

	/* the completion was published before; the arm is read after it, so the library's
	 * arm-then-poll and this produce-then-read cannot both miss (its fence pairs with it) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	want = __atomic_load_n(arm, __ATOMIC_ACQUIRE);
	if (cq->channel < 0 || !want ||
	    ((want & ~MRC_CQ_ARM_SPINNING) == MRC_CQ_ARM_SOLICITED && !solicited_or_error))
		return;
	/* a spinning library takes the event itself (shm.h: MRC_CQ_ARM_SPINNING) */
	if (want & MRC_CQ_ARM_SPINNING) {
		sh->stats.cq_events_spun++;
		return;
	}
	/* only one completion fires an arming, even if the client re-arms concurrently */
	if (!__atomic_compare_exchange_n(arm, &want, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	sh->stats.cq_events++;
	__atomic_fetch_add(&cq->ring.producer->aux, 1, __ATOMIC_RELEASE);
	if (c->ops->notify(c->io, cq->channel))
		return;
	/* the client is not reading its channel: the event is counted, the byte that wakes it
	 * is sent again from the pump of one worker */
	mrcd_lock(&cq->lock, c->n_shards > 1);
	if (!cq->notify_pending) {
		cq->notify_pending = true;
		if (!sh->n_notify_pending)
			sh->next_notify_ns = sh->now + MRCD_NOTIFY_RETRY_NS;
		sh->notify_list[sh->n_notify_pending++] = (uint16_t)(cq - c->t.cqs);
	}
	mrcd_unlock(&cq->lock, c->n_shards > 1);
}

void core_retry_notifications(struct mrcd_core *c, struct mrcd_shard *sh)
{
	for (unsigned i = 0; i < sh->n_notify_pending;) {
		struct mrcd_cq *cq = &c->t.cqs[sh->notify_list[i]];

		if (c->ops->notify(c->io, cq->channel)) {
			mrcd_lock(&cq->lock, c->n_shards > 1);
			cq->notify_pending = false;
			mrcd_unlock(&cq->lock, c->n_shards > 1);
			sh->notify_list[i] = sh->notify_list[--sh->n_notify_pending];
		} else {
			i++;
		}
	}
}

/* QPs of several workers may complete into one CQ: its ring has one producer at a time. */
static void cq_push(struct mrcd_core *c, struct mrcd_qp *qp, bool recv, struct mrc_cq_entry *e)
{
	struct mrcd_cq *cq = &c->t.cqs[recv ? qp->recv_cq : qp->send_cq];
	bool full;

	e->qp_num = qp->qpn;
	qp->completions++;
	if (e->status != MRC_CQ_SUCCESS)
		qp->error_completions++;
	mrcd_lock(&cq->lock, c->n_shards > 1);
	full = mrc_ring_produce(&cq->ring, e) != 0;
	if (full)
		cq->overruns++;
	mrcd_unlock(&cq->lock, c->n_shards > 1);
	if (full) {
		qp->cq_overrun = true; /* the pump fails the QP, outside the engine's callback */
		return;
	}
	cq_notify(c, core_shard_of(c, qp), cq,
		  (e->flags & MRC_CQ_F_SOLICITED) || e->status != MRC_CQ_SUCCESS);
}

/*
 * A ring slot goes back to the library only when the work it described has completed: the
 * SQ and RQ then hold exactly max_send_wr and max_recv_wr requests, as verbs counts them,
 * and the inline bytes the library keeps per SQ slot cannot be overwritten while the engine
 * may still send them. Work completes in ring order (RC), so a completion gives back every
 * slot up to its own; unsignaled sends are given back by the next signaled one, which is
 * also when verbs lets the application count them complete.
 */
static void release_through(struct mrc_ring *ring, uint32_t idx)
{
	if (idx + 1 - ring->released <= ring->mine - ring->released)
		mrc_ring_release(ring, idx + 1);
}

/* Engine work requests carry the ring index; the application's wr_id waits in a shadow. */
void core_on_complete(void *user, bool from_recv_queue, const struct mrc_completion *wc)
{
	struct mrcd_qp *qp = user;
	struct mrc_ring *ring = from_recv_queue ? &qp->rq : &qp->sq;
	uint64_t *shadow = from_recv_queue ? qp->rq_wr_id : qp->sq_wr_id;
	uint32_t idx = (uint32_t)wc->wr_id;
	struct mrc_cq_entry e = { 0 };

	if (from_recv_queue && qp->srq >= 0) {
		/* an SRQ's receive: its ring slot went back when it was taken (srq.c) */
		mrcd_cq_from_completion(wc, &e);
		cq_push(qp->core, qp, true, &e);
		return;
	}

	if (wc->status != MRC_WC_SUCCESS && wc->status != MRC_WC_WR_FLUSH_ERR)
		core_log(qp->core, MRCD_DEBUG, "QP %u: work request %llu completed with %s",
			 qp->qpn, (unsigned long long)shadow[idx & (ring->entries - 1)],
			 mrc_wc_status_name(wc->status));
	if (!from_recv_queue && qp->fast)
		core_fast_reads_sync(qp->core, qp, false);
	mrcd_cq_from_completion(wc, &e);
	e.wr_id = shadow[idx & (ring->entries - 1)];
	/* the slot first: an application that sees the completion may post again at once */
	release_through(ring, idx);
	cq_push(qp->core, qp, from_recv_queue, &e);
}

void core_complete_entry(struct mrcd_core *c, struct mrcd_qp *qp, bool recv, uint32_t idx,
			 struct mrc_cq_entry *e)
{
	if (!recv || qp->srq < 0)
		release_through(recv ? &qp->rq : &qp->sq, idx);
	cq_push(c, qp, recv, e);
}

void core_complete_now(struct mrcd_core *c, struct mrcd_qp *qp, bool recv, uint64_t wr_id,
		       uint32_t idx, uint8_t status, uint8_t opcode)
{
	struct mrc_cq_entry e = { .wr_id = wr_id, .status = status, .opcode = opcode };

	core_complete_entry(c, qp, recv, idx, &e);
}
