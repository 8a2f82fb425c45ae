/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared receive queues: a receive ring per SRQ that the client produces into, read when a
 * message arrives at one of its QPs and needs a receive there (the engine keeps receives per
 * connection, so the SRQ hands each QP exactly the ones its arriving messages consume, in
 * arrival order); entries are given back to the ring at once, their wr_id travelling with the
 * engine's request. Below the armed limit the client hears IBV_EVENT_SRQ_LIMIT_REACHED: a
 * flag in the ring, a byte on its async event socket.
 */
#include <errno.h>
#include <string.h>

#include "core/internal.h"
#include "core/shm_map.h"

void core_srq_free(struct mrcd_core *c, struct mrcd_srq *s)
{
	struct mrcd_tables *t = &c->t;

	c->ops->unmap(c->io, s->mem, s->mem_len);
	t->mapped_bytes -= s->mem_len;
	if (s->channel >= 0) {
		c->ops->close_channel(c->io, s->channel);
		t->client[s->owner].channels--;
	}
	t->client[s->owner].n_srqs--;
	memset(s, 0, sizeof(*s));
	s->owner = -1;
}

int core_create_srq(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		    unsigned n_desc, struct mrc_ctl_srq *out)
{
	struct mrcd_tables *t = &c->t;
	struct mrc_ctl_create_srq r;
	struct mrcd_srq *s = NULL;
	unsigned slot;
	int channel = -1, err;

	if (len != sizeof(r) || n_desc != 1)
		return -EINVAL; /* the async event socket comes with it */
	memcpy(&r, payload, sizeof(r));
	if (!r.max_wr || r.max_wr > MRCD_MAX_RING_ENTRIES || !r.pd || r.pd > MRC_CTL_MAX_PD ||
	    r.limit > r.max_wr || r.reserved)
		return -EINVAL;
	if (t->client[owner].channels >= MRCD_CLIENT_MAX_CHANNELS)
		return -EMFILE;
	if (t->client[owner].n_srqs >= MRCD_CLIENT_MAX_SRQS)
		return -ENOSPC;
	err = core_user_allows(c, t->client[owner].uid, MRC_CTL_USER_SRQS, 1);
	if (err)
		return err;
	for (slot = 1; slot < MRCD_MAX_SRQS; slot++)
		if (t->srqs[slot].owner < 0) {
			s = &t->srqs[slot];
			break;
		}
	if (!s)
		return -ENOSPC;
	memset(s, 0, sizeof(*s));
	s->owner = -1;
	s->channel = -1;
	err = core_ring_with_channel(c, MRC_RING_RQ, r.max_wr, true, &s->mem, &s->mem_len, &s->ring,
				     &channel);
	if (err)
		return err;
	s->owner = (int)owner;
	s->handle = core_make_handle(t, slot);
	s->pd = r.pd;
	s->limit = r.limit;
	s->channel = channel;
	t->client[owner].channels++;
	t->client[owner].n_srqs++;
	out->handle = s->handle;
	out->entries = s->ring.entries;
	return 0;
}

int core_modify_srq(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len)
{
	struct mrc_ctl_modify_srq r;
	struct mrcd_srq *s;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	s = core_srq_by_handle(&c->t, (int)owner, r.handle);
	if (!s)
		return -ENOENT;
	if (r.limit > s->ring.entries)
		return -EINVAL;
	s->limit = r.limit;
	return 0;
}

int core_destroy_srq(struct mrcd_core *c, unsigned owner, uint32_t handle)
{
	struct mrcd_srq *s = core_srq_by_handle(&c->t, (int)owner, handle);

	if (!s)
		return -ENOENT;
	if (s->n_users)
		return -EBUSY; /* verbs: an SRQ QPs still use cannot go */
	core_srq_free(c, s);
	return 0;
}

/* Below the armed limit: the flag for the library, a byte to wake its ibv_get_async_event. */
static void check_limit(struct mrcd_core *c, struct mrcd_srq *s)
{
	uint32_t left = __atomic_load_n(&s->ring.producer->value, __ATOMIC_ACQUIRE) - s->ring.mine;

	if (!s->limit || left >= s->limit)
		return;
	s->limit = 0; /* one event per arming, as verbs has it */
	__atomic_fetch_or(&s->ring.consumer->aux, MRC_SRQ_AUX_LIMIT, __ATOMIC_RELEASE);
	c->ops->notify(c->io, s->channel);
}

int core_srq_take(struct mrcd_core *c, struct mrcd_srq *s, struct mrc_rq_entry *r)
{
	int got = mrc_ring_take(&s->ring, r);

	if (got == 1)
		mrc_ring_release(&s->ring, s->ring.mine); /* the entry is copied: the slot is free */
	check_limit(c, s);
	return got;
}

/*
 * The message with receive sequence number rsn arrived at qp: the receives it and the
 * messages before it consume come from the SRQ now. An SRQ that runs dry leaves the message
 * to an RNR NAK, as a QP's own empty receive queue does.
 */
void core_srq_feed(struct mrcd_core *c, struct mrcd_qp *qp, uint32_t rsn, uint64_t now)
{
	struct mrcd_srq *s = &c->t.srqs[qp->srq];
	uint32_t want = mrc_conn_receives_short(qp->conn, rsn);

	while (want--) {
		struct mrc_rq_entry r;
		struct mrc_recv_wr wr;
		int got = core_srq_take(c, s, &r);
		bool ok = got == 1 && r.num_sge <= MRC_RING_MAX_SGE;

		if (got == 0)
			break;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = r.wr_id;
		wr.num_sge = ok ? r.num_sge : 0;
		for (unsigned i = 0; ok && i < r.num_sge; i++)
			ok = !core_local_sge_in(c, s->owner, s->pd, &r.sge[i], true, &wr.sge[i]);
		if (!ok || mrc_conn_post_recv(qp->conn, &wr)) {
			core_log(c, MRCD_NOTICE, "client pid %d: SRQ %u: %s, QP %u to error",
				 c->t.client[s->owner].pid, s->handle,
				 got < 0 ? "ring indices corrupt" : "a receive's buffer is not its",
				 qp->qpn);
			core_qp_error(c, qp, now);
			if (got == 1)
				core_complete_now(c, qp, true, r.wr_id, 0, MRC_CQ_LOC_PROT_ERR,
						  MRC_CQ_RECV);
			break;
		}
	}
}
