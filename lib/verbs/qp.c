/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Queue pairs (UD's own parts in ud.c). Posting writes descriptors into the SQ or RQ ring,
 * and rings the doorbell only if the daemon asked for it (it is going to sleep); the daemon
 * validates and executes them. The verbs state machine (RESET, INIT, RTR, RTS, ERR) is kept here: the daemon learns
 * of a QP's peer at RTR, of its send settings at RTS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define MRV_SEND_OPS                                                                          \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |  \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                             \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |               \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV)

/* what a UD QP sends: datagrams, with or without immediate data [SPEC R-326] */
#define MRV_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static struct mrv_qp *to_qp(struct ibv_qp *qp)
{
	return (struct mrv_qp *)qp;
}

static bool daemon_says_error(struct mrv_qp *qp)
{
	return __atomic_load_n(&qp->sq.consumer->aux, __ATOMIC_ACQUIRE) & MRC_QP_AUX_ERROR;
}

/* --- posting ------------------------------------------------------------------------------- */

static int wr_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: *out = MRC_SQ_WRITE; return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM: *out = MRC_SQ_WRITE_IMM; return 0;
	case IBV_WR_SEND: *out = MRC_SQ_SEND; return 0;
	case IBV_WR_SEND_WITH_IMM: *out = MRC_SQ_SEND_IMM; return 0;
	case IBV_WR_RDMA_READ: *out = MRC_SQ_READ; return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP: *out = MRC_SQ_ATOMIC_CMP_SWAP; return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: *out = MRC_SQ_ATOMIC_FETCH_ADD; return 0;
	case IBV_WR_SEND_WITH_INV: *out = MRC_SQ_SEND_INV; return 0;
	case IBV_WR_BIND_MW: *out = MRC_SQ_BIND_MW; return 0;
	case IBV_WR_LOCAL_INV: *out = MRC_SQ_LOCAL_INV; return 0;
	default: return EOPNOTSUPP; /* TSO, driver-specific */
	}
}

static uint8_t send_flags(unsigned flags)
{
	return (flags & IBV_SEND_SIGNALED ? MRC_SQ_F_SIGNALED : 0) |
	       (flags & IBV_SEND_SOLICITED ? MRC_SQ_F_SOLICITED : 0) |
	       (flags & IBV_SEND_FENCE ? MRC_SQ_F_FENCE : 0);
}

/* SQ ring slots free now: the daemon gives a slot back only when its work has completed. */
static uint32_t sq_free(struct mrv_qp *qp)
{
	return qp->sq.entries -
	       (qp->sq.mine - __atomic_load_n(&qp->sq.consumer->value, __ATOMIC_ACQUIRE));
}

/*
 * Inline data is copied into the inline slot that belongs to the ring slot the entry will
 * take (ring index `at`), so the caller's buffer is free on return and the bytes live exactly
 * as long as the work: the slot is not reused before the daemon gives the ring slot back.
 */
static int copy_inline(struct mrv_qp *qp, uint32_t at, const struct ibv_data_buf *bufs, size_t n,
		       struct mrc_sq_entry *e)
{
	uint8_t *slot = qp->inline_buf + (size_t)(at & (qp->sq.entries - 1)) * MRV_MAX_INLINE;
	size_t total = 0;

	for (size_t i = 0; i < n; i++) {
		if (bufs[i].length > MRV_MAX_INLINE - total)
			return EINVAL;
		memcpy(slot + total, bufs[i].addr, bufs[i].length);
		total += bufs[i].length;
	}
	e->num_sge = total ? 1 : 0;
	e->sge[0] = (struct mrc_shm_sge){ (uintptr_t)slot, (uint32_t)total,
					  qp->inline_mr->lkey };
	return 0;
}

int mrv_bind_entry(struct mrc_sq_entry *e, struct ibv_mw *mw, uint32_t rkey,
		   const struct ibv_mw_bind_info *info)
{
	unsigned remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC;
	unsigned access = info->mw_access_flags;

	if (!mw || (access & ~(remote | IBV_ACCESS_ZERO_BASED)) ||
	    (!info->mr && (info->addr || info->length)))
		return EINVAL;
	if (info->mr && info->mr->pd != mw->pd)
		return EPERM;
	if ((rkey & ~MRC_CTL_MW_KEY_TAG) != (mw->rkey & ~MRC_CTL_MW_KEY_TAG))
		return EINVAL; /* only the low byte is the consumer's to change */
	e->opcode = MRC_SQ_BIND_MW;
	e->num_sge = 0;
	e->mw_rkey = rkey;
	e->mr_lkey = info->mr ? info->mr->lkey : 0;
	e->mw_addr = info->addr;
	e->mw_length = info->length;
	e->mw_access = (access & IBV_ACCESS_REMOTE_WRITE ? MRC_CTL_ACCESS_REMOTE_WRITE : 0) |
		       (access & IBV_ACCESS_REMOTE_READ ? MRC_CTL_ACCESS_REMOTE_READ : 0) |
		       (access & IBV_ACCESS_REMOTE_ATOMIC ? MRC_CTL_ACCESS_REMOTE_ATOMIC : 0) |
		       (access & IBV_ACCESS_ZERO_BASED ? MRC_CTL_ACCESS_ZERO_BASED : 0);
	e->mw_reserved = 0;
	return 0;
}

static int build_send(struct mrv_qp *qp, uint32_t at, const struct ibv_send_wr *wr,
		      struct mrc_sq_entry *e)
{
	int err;

	memset(e, 0, sizeof(*e));
	err = wr_opcode(wr->opcode, &e->opcode);
	if (err)
		return err;
	if (wr->num_sge < 0 || wr->num_sge > (int)qp->cap.max_send_sge)
		return EINVAL;
	e->wr_id = wr->wr_id;
	e->flags = send_flags(wr->send_flags);
	e->imm = wr->imm_data; /* or invalidate_rkey, its union twin */
	if (qp->ibqpx.qp_base.qp_type == IBV_QPT_UD) {
		/* datagrams: SEND and SEND with immediate only */
		if (e->opcode != MRC_SQ_SEND && e->opcode != MRC_SQ_SEND_IMM)
			return EINVAL;
		err = mrv_ud_address(e, wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
		if (err)
			return err;
	}
	if (e->opcode == MRC_SQ_WRITE || e->opcode == MRC_SQ_WRITE_IMM ||
	    e->opcode == MRC_SQ_READ) {
		e->rkey = wr->wr.rdma.rkey;
		e->raddr = wr->wr.rdma.remote_addr;
	}
	if (e->opcode == MRC_SQ_BIND_MW)
		return mrv_bind_entry(e, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
	if (e->opcode == MRC_SQ_LOCAL_INV)
		return 0; /* the key in imm, nothing else */
	if (e->opcode == MRC_SQ_ATOMIC_CMP_SWAP || e->opcode == MRC_SQ_ATOMIC_FETCH_ADD) {
		/* the original value comes back into one element of 8 bytes [SPEC R-325] */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return EINVAL;
		e->rkey = wr->wr.atomic.rkey;
		e->raddr = wr->wr.atomic.remote_addr;
		e->compare_add = wr->wr.atomic.compare_add;
		e->swap = wr->wr.atomic.swap;
	}
	/* inline data goes out; a READ's or an atomic's element is written into */
	if ((wr->send_flags & IBV_SEND_INLINE) && !mrc_sq_writes_locally(e->opcode)) {
		struct ibv_data_buf bufs[MRC_RING_MAX_SGE];

		for (int i = 0; i < wr->num_sge; i++)
			bufs[i] = (struct ibv_data_buf){ (void *)(uintptr_t)wr->sg_list[i].addr,
							 wr->sg_list[i].length };
		return copy_inline(qp, at, bufs, (size_t)wr->num_sge, e);
	}
	e->num_sge = (uint8_t)wr->num_sge;
	for (int i = 0; i < wr->num_sge; i++)
		e->sge[i] = (struct mrc_shm_sge){ wr->sg_list[i].addr, wr->sg_list[i].length,
						  wr->sg_list[i].lkey };
	return 0;
}

int mrv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct mrv_qp *qp = to_qp(ibqp);
	int err = 0;
	bool posted = false;

	pthread_spin_lock(&qp->lock);
	if (ibqp->state < IBV_QPS_RTS && ibqp->state != IBV_QPS_ERR) {
		err = EINVAL; /* verbs: sends are posted from RTS on */
		*bad = wr;
	}
	for (; wr && !err; wr = wr->next) {
		struct mrc_sq_entry e;

		/* room first: an inline copy must not land in a slot still in flight */
		err = sq_free(qp) ? build_send(qp, qp->sq.mine, wr, &e) : ENOMEM;
		if (!err)
			err = mrc_ring_produce(&qp->sq, &e) ? ENOMEM : 0;
		if (err)
			*bad = wr;
		else
			posted = true;
	}
	pthread_spin_unlock(&qp->lock);
	if (posted)
		mrv_ring_doorbell(qp, &qp->sq);
	return err;
}

int mrv_post_entry(struct mrv_qp *qp, const struct mrc_sq_entry *e)
{
	int err = 0;

	pthread_spin_lock(&qp->lock);
	if (qp->ibqpx.qp_base.state < IBV_QPS_RTS && qp->ibqpx.qp_base.state != IBV_QPS_ERR)
		err = EINVAL;
	else if (!sq_free(qp) || mrc_ring_produce(&qp->sq, e))
		err = ENOMEM;
	pthread_spin_unlock(&qp->lock);
	if (!err)
		mrv_ring_doorbell(qp, &qp->sq);
	return err;
}

int mrv_produce_receives(struct mrc_ring *ring, unsigned max_sge, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad, bool *posted)
{
	for (; wr; wr = wr->next) {
		struct mrc_rq_entry e;

		if (wr->num_sge < 0 || wr->num_sge > (int)max_sge) {
			*bad = wr;
			return EINVAL;
		}
		memset(&e, 0, sizeof(e));
		e.wr_id = wr->wr_id;
		e.num_sge = (uint8_t)wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++)
			e.sge[i] = (struct mrc_shm_sge){ wr->sg_list[i].addr, wr->sg_list[i].length,
							 wr->sg_list[i].lkey };
		if (mrc_ring_produce(ring, &e)) {
			*bad = wr;
			return ENOMEM;
		}
		*posted = true;
	}
	return 0;
}

int mrv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct mrv_qp *qp = to_qp(ibqp);
	int err = 0;
	bool posted = false;

	pthread_spin_lock(&qp->lock);
	if (ibqp->state == IBV_QPS_RESET || qp->srq) {
		err = EINVAL; /* a QP of an SRQ takes its receives from there */
		*bad = wr;
	} else {
		err = mrv_produce_receives(&qp->rq, qp->cap.max_recv_sge, wr, bad, &posted);
	}
	pthread_spin_unlock(&qp->lock);
	if (posted)
		mrv_ring_doorbell(qp, &qp->rq);
	return err;
}

/* --- the ibv_wr_* interface ---------------------------------------------------------------- */

static struct mrc_sq_entry *wr_begin(struct ibv_qp_ex *qpx, uint8_t opcode)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;
	struct mrc_sq_entry *e;

	if (qp->n_staged >= sq_free(qp)) {
		qp->wr_error = ENOMEM;
		return NULL;
	}
	e = &qp->staged[qp->n_staged++];
	memset(e, 0, sizeof(*e));
	e->wr_id = qpx->wr_id;
	e->opcode = opcode;
	e->flags = send_flags(qpx->wr_flags);
	return e;
}

static struct mrc_sq_entry *wr_current(struct ibv_qp_ex *qpx)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;

	if (!qp->n_staged) {
		qp->wr_error = EINVAL; /* a data setter before any operation */
		return NULL;
	}
	return &qp->staged[qp->n_staged - 1];
}

static void wr_rdma(struct ibv_qp_ex *qpx, uint8_t op, uint32_t rkey, uint64_t raddr,
		    __be32 imm)
{
	struct mrc_sq_entry *e = wr_begin(qpx, op);

	if (e) {
		e->rkey = rkey;
		e->raddr = raddr;
		e->imm = imm;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(qpx, MRC_SQ_WRITE, rkey, raddr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	wr_rdma(qpx, MRC_SQ_WRITE_IMM, rkey, raddr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(qpx, MRC_SQ_READ, rkey, raddr, 0);
}

static void wr_atomic(struct ibv_qp_ex *qpx, uint8_t op, uint32_t rkey, uint64_t raddr,
		      uint64_t compare_add, uint64_t swap)
{
	struct mrc_sq_entry *e = wr_begin(qpx, op);

	if (e) {
		e->rkey = rkey;
		e->raddr = raddr;
		e->compare_add = compare_add;
		e->swap = swap;
	}
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
			      uint64_t compare, uint64_t swap)
{
	wr_atomic(qpx, MRC_SQ_ATOMIC_CMP_SWAP, rkey, raddr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
				uint64_t add)
{
	wr_atomic(qpx, MRC_SQ_ATOMIC_FETCH_ADD, rkey, raddr, add, 0);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wr_begin(qpx, MRC_SQ_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct mrc_sq_entry *e = wr_begin(qpx, MRC_SQ_SEND_IMM);

	if (e)
		e->imm = imm;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct mrc_sq_entry *e = wr_begin(qpx, MRC_SQ_SEND_INV);

	if (e)
		e->imm = invalidate_rkey;
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct mrc_sq_entry *e = wr_begin(qpx, MRC_SQ_LOCAL_INV);

	if (e)
		e->imm = invalidate_rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct mrc_sq_entry *e = wr_begin(qpx, MRC_SQ_BIND_MW);
	int err = e ? mrv_bind_entry(e, mw, rkey, info) : 0;

	if (err)
		((struct mrv_qp *)qpx)->wr_error = err;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct mrc_sq_entry *e = wr_current(qpx);

	if (e) {
		e->num_sge = 1;
		e->sge[0] = (struct mrc_shm_sge){ addr, length, lkey };
	}
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct mrc_sq_entry *e = wr_current(qpx);

	if (!e)
		return;
	if (n > MRC_RING_MAX_SGE) {
		((struct mrv_qp *)qpx)->wr_error = EINVAL;
		return;
	}
	e->num_sge = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		e->sge[i] = (struct mrc_shm_sge){ sg[i].addr, sg[i].length, sg[i].lkey };
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n,
				    const struct ibv_data_buf *bufs)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;
	struct mrc_sq_entry *e = wr_current(qpx);

	/* the entry will take ring index mine + its place in the batch */
	if (e && (mrc_sq_writes_locally(e->opcode) || e->opcode == MRC_SQ_BIND_MW ||
		  e->opcode == MRC_SQ_LOCAL_INV ||
		  copy_inline(qp, qp->sq.mine + qp->n_staged - 1, bufs, n, e)))
		qp->wr_error = EINVAL;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf b = { addr, length };

	wr_set_inline_data_list(qpx, 1, &b);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;

	pthread_spin_lock(&qp->lock);
	qp->n_staged = 0;
	qp->wr_error = qpx->qp_base.state == IBV_QPS_RTS || qpx->qp_base.state == IBV_QPS_ERR
			       ? 0
			       : EINVAL;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;
	int err = qp->wr_error;

	/* all or nothing, as ibv_wr_complete promises */
	if (!err && sq_free(qp) < qp->n_staged)
		err = ENOMEM;
	for (uint32_t i = 0; !err && i < qp->n_staged; i++) {
		const struct mrc_sq_entry *e = &qp->staged[i];

		if ((e->opcode == MRC_SQ_ATOMIC_CMP_SWAP || e->opcode == MRC_SQ_ATOMIC_FETCH_ADD) &&
		    (e->num_sge != 1 || e->sge[0].length != 8))
			err = EINVAL; /* one element of 8 bytes [SPEC R-325] */
		if ((e->opcode == MRC_SQ_BIND_MW || e->opcode == MRC_SQ_LOCAL_INV) && e->num_sge)
			err = EINVAL; /* a local operation carries no data */
		if (qpx->qp_base.qp_type == IBV_QPT_UD &&
		    ((e->opcode != MRC_SQ_SEND && e->opcode != MRC_SQ_SEND_IMM) || !e->remote_qpn))
			err = EINVAL; /* a datagram, with its address (ibv_wr_set_ud_addr) */
	}
	for (uint32_t i = 0; !err && i < qp->n_staged; i++)
		if (mrc_ring_produce(&qp->sq, &qp->staged[i]))
			err = ENOMEM;
	qp->n_staged = 0;
	pthread_spin_unlock(&qp->lock);
	if (!err)
		mrv_ring_doorbell(qp, &qp->sq);
	return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;

	qp->n_staged = 0;
	pthread_spin_unlock(&qp->lock);
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct mrv_qp *q = to_qp(qp);

	if (!q->extended) {
		errno = EOPNOTSUPP; /* created without send_ops_flags */
		return NULL;
	}
	return &q->ibqpx;
}

/* --- create, modify, query, destroy -------------------------------------------------------- */

int mrv_map_ring(int fd, uint16_t kind, uint32_t entries, void **mem, size_t *len,
		    struct mrc_ring *ring)
{
	*len = MRC_RING_BYTES((size_t)entries, mrc_ring_entry_size(kind));
	*mem = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (*mem == MAP_FAILED) {
		*mem = NULL;
		return EPROTO;
	}
	if (mrc_ring_attach(ring, *mem, *len, kind, 1)) {
		munmap(*mem, *len);
		*mem = NULL;
		return EPROTO;
	}
	return 0;
}

static void qp_release(struct mrv_qp *qp)
{
	if (qp->sq_mem)
		munmap(qp->sq_mem, qp->sq_len);
	if (qp->rq_mem)
		munmap(qp->rq_mem, qp->rq_len);
	if (qp->inline_mr)
		ibv_dereg_mr(qp->inline_mr);
	if (qp->inline_buf)
		munmap(qp->inline_buf, (size_t)qp->sq.entries * MRV_MAX_INLINE);
	free(qp->staged);
	pthread_spin_destroy(&qp->lock);
	free(qp);
}

struct ibv_qp *mrv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct mrv_context *ctx = to_ctx(context);
	struct mrv_cq *scq = (struct mrv_cq *)attr->send_cq, *rcq = (struct mrv_cq *)attr->recv_cq;
	struct ibv_qp_cap *cap = &attr->cap;
	struct mrc_ctl_create_qp req;
	struct mrc_ctl_qp_created rep;
	struct mrv_qp *qp;
	int fds[2] = { -1, -1 };
	unsigned n_fds = 2;
	uint32_t len = 0;
	int err;

	if ((attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					   IBV_QP_INIT_ATTR_CREATE_FLAGS)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~(uint64_t)(attr->qp_type == IBV_QPT_UD ? MRV_UD_SEND_OPS
									      : MRV_SEND_OPS)))) {
		errno = EOPNOTSUPP; /* RC and UD: no UC, XRC, raw packet, special flags */
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || !scq || !rcq ||
	    cap->max_send_sge > MRC_RING_MAX_SGE || cap->max_recv_sge > MRC_RING_MAX_SGE ||
	    cap->max_inline_data > MRV_MAX_INLINE || cap->max_send_wr > (1u << 14) ||
	    cap->max_recv_wr > (1u << 14)) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_spin_init(&qp->lock, PTHREAD_PROCESS_PRIVATE);
	req = (struct mrc_ctl_create_qp){ .send_cq = scq->handle, .recv_cq = rcq->handle,
					  .max_send_wr = cap->max_send_wr ? cap->max_send_wr : 1,
					  .max_recv_wr = cap->max_recv_wr ? cap->max_recv_wr : 1,
					  .sq_sig_all = attr->sq_sig_all ? 1 : 0,
					  .pd = mrv_pd_id(attr->pd),
					  .srq = attr->srq ? ((struct mrv_srq *)attr->srq)->handle
							   : 0,
					  .type = attr->qp_type == IBV_QPT_UD ? MRC_CTL_QPT_UD
									      : MRC_CTL_QPT_RC };
	err = mrv_request(ctx, MRC_CTL_CREATE_QP, &req, sizeof(req), NULL, 0, &rep, sizeof(rep),
			  &len, fds, &n_fds);
	if (!err && (len != sizeof(rep) || n_fds != 2))
		err = EPROTO;
	if (err) {
		for (unsigned i = 0; i < n_fds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		pthread_spin_destroy(&qp->lock);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->ctx = ctx;
	qp->ibqpx.qp_base.qp_num = rep.qp_num;
	qp->doorbell_bit = rep.doorbell_bit % MRC_DOORBELL_BITS;
	err = mrv_map_ring(fds[0], MRC_RING_SQ, rep.sq_entries, &qp->sq_mem, &qp->sq_len,
			   &qp->sq);
	if (err)
		close(fds[1]);
	else
		err = mrv_map_ring(fds[1], MRC_RING_RQ, rep.rq_entries, &qp->rq_mem, &qp->rq_len,
			       &qp->rq);
	if (!err) {
		qp->staged = calloc(qp->sq.entries, sizeof(*qp->staged));
		qp->inline_buf = mmap(NULL, (size_t)qp->sq.entries * MRV_MAX_INLINE,
				      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (qp->inline_buf == MAP_FAILED)
			qp->inline_buf = NULL;
		if (!qp->staged || !qp->inline_buf)
			err = ENOMEM;
	}
	if (!err) {
		qp->inline_mr = mrv_reg_mr(attr->pd, qp->inline_buf,
					   (size_t)qp->sq.entries * MRV_MAX_INLINE,
					   (uintptr_t)qp->inline_buf, IBV_ACCESS_LOCAL_WRITE);
		if (!qp->inline_mr)
			err = errno;
	}
	if (err) {
		struct mrc_ctl_handle h = { .handle = rep.qp_num };

		mrv_request(ctx, MRC_CTL_DESTROY_QP, &h, sizeof(h), NULL, 0, NULL, 0, NULL, NULL,
			    NULL);
		qp_release(qp);
		errno = err;
		return NULL;
	}
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->srq = (struct mrv_srq *)attr->srq;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->extended = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
	cap->max_send_wr = qp->sq.entries;
	cap->max_recv_wr = qp->rq.entries;
	cap->max_send_sge = MRC_RING_MAX_SGE;
	cap->max_recv_sge = MRC_RING_MAX_SGE;
	cap->max_inline_data = MRV_MAX_INLINE;
	qp->cap = *cap;

	struct ibv_qp *b = &qp->ibqpx.qp_base;

	b->context = context;
	b->qp_context = attr->qp_context;
	b->pd = attr->pd;
	mrv_pd_use(attr->pd, 1);
	b->send_cq = attr->send_cq;
	b->recv_cq = attr->recv_cq;
	b->srq = attr->srq;
	b->handle = rep.qp_num;
	b->state = IBV_QPS_RESET;
	b->qp_type = attr->qp_type;
	pthread_mutex_init(&b->mutex, NULL);
	pthread_cond_init(&b->cond, NULL);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cap = *cap;
	qp->ibqpx.wr_rdma_write = wr_rdma_write;
	qp->ibqpx.wr_rdma_write_imm = wr_rdma_write_imm;
	qp->ibqpx.wr_rdma_read = wr_rdma_read;
	qp->ibqpx.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qp->ibqpx.wr_atomic_fetch_add = wr_atomic_fetch_add;
	qp->ibqpx.wr_send = wr_send;
	qp->ibqpx.wr_send_imm = wr_send_imm;
	qp->ibqpx.wr_send_inv = wr_send_inv;
	qp->ibqpx.wr_local_inv = wr_local_inv;
	qp->ibqpx.wr_bind_mw = wr_bind_mw;
	qp->ibqpx.wr_set_sge = wr_set_sge;
	qp->ibqpx.wr_set_sge_list = wr_set_sge_list;
	qp->ibqpx.wr_set_inline_data = wr_set_inline_data;
	qp->ibqpx.wr_set_inline_data_list = wr_set_inline_data_list;
	qp->ibqpx.wr_start = wr_start;
	qp->ibqpx.wr_complete = wr_complete;
	qp->ibqpx.wr_abort = wr_abort;
	if (attr->qp_type == IBV_QPT_UD)
		qp->ibqpx.wr_set_ud_addr = mrv_wr_set_ud_addr;
	mrv_qp_track(qp);
	return b;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = mrv_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/* What each transition must carry, as the IB spec's QP state table has it (RC). */
static int required_for(enum ibv_qp_state from, enum ibv_qp_state to, int *need)
{
	/* RESET only before RTR: after it, the daemon's connection exists; QPs are not
	 * recycled yet */
	if (to == IBV_QPS_ERR || (to == IBV_QPS_RESET && from <= IBV_QPS_INIT)) {
		*need = 0;
	} else if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
		*need = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	} else if (from == IBV_QPS_INIT && to == IBV_QPS_INIT) {
		*need = 0;
	} else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
		*need = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	} else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
		*need = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	} else if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) {
		*need = 0;
	} else {
		return EINVAL; /* includes RTR/RTS/ERR -> RESET */
	}
	return 0;
}

static void remember(struct ibv_qp_attr *cur, const struct ibv_qp_attr *a, int mask)
{
	if (mask & IBV_QP_ACCESS_FLAGS)
		cur->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		cur->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		cur->port_num = a->port_num;
	if (mask & IBV_QP_AV)
		cur->ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		cur->path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		cur->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		cur->rq_psn = a->rq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		cur->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		cur->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		cur->sq_psn = a->sq_psn;
	if (mask & IBV_QP_TIMEOUT)
		cur->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		cur->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		cur->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		cur->max_rd_atomic = a->max_rd_atomic;
}

static int check_values(const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return EOPNOTSUPP; /* memory-window binding, relaxed ordering on a QP */
	if ((mask & IBV_QP_AV) && !a->ah_attr.is_global)
		return EINVAL; /* RoCE addresses by GID: the GRH is required */
	if ((mask & IBV_QP_AV) && a->ah_attr.port_num && a->ah_attr.port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && (a->dest_qp_num == 0 || a->dest_qp_num > 0xffffff))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL; /* five bits in verbs */
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > MRV_MAX_RD_ATOM)
		return EINVAL; /* above the device's max_qp_init_rd_atom */
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > MRV_MAX_RD_ATOM)
		return EINVAL; /* above its max_qp_rd_atom */
	return 0;
}

/* What the peer may do on this QP, in the daemon's terms. */
static uint32_t ctl_qp_access(unsigned ibv)
{
	return (ibv & IBV_ACCESS_REMOTE_WRITE ? MRC_CTL_ACCESS_REMOTE_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_READ ? MRC_CTL_ACCESS_REMOTE_READ : 0) |
	       (ibv & IBV_ACCESS_REMOTE_ATOMIC ? MRC_CTL_ACCESS_REMOTE_ATOMIC : 0);
}

/* RTR: the daemon builds the connection, which receives and acknowledges from now on. */
static int connect_in_daemon(struct mrv_qp *qp)
{
	const struct ibv_qp_attr *a = &qp->attr;
	struct mrc_ctl_connect_qp req;

	memset(&req, 0, sizeof(req));
	req.qp_num = qp->ibqpx.qp_base.qp_num;
	req.dest_qp_num = a->dest_qp_num;
	/* a path MTU below the port's active one caps the payload; the active one itself (what
	 * programs pass) asks for what the planes carry, which may exceed verbs' 4096 */
	req.path_mtu = a->path_mtu < mrv_active_mtu(qp->ctx)
			       ? (uint16_t)(128u << a->path_mtu) /* IBV_MTU_256 = 1 ... 4096 = 5 */
			       : 0;
	memcpy(req.dgid, a->ah_attr.grh.dgid.raw, 16);
	req.access = ctl_qp_access(a->qp_access_flags);
	req.min_rnr_timer = a->min_rnr_timer;
	req.max_dest_rd_atomic = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : 1;
	req.paths_per_plane = qp->paths_per_plane;
	req.plane_mask = qp->plane_mask;
	return mrv_request(qp->ctx, MRC_CTL_CONNECT_QP, &req, sizeof(req), NULL, 0, NULL, 0, NULL,
			   NULL, NULL);
}

/* RTS: the send half. */
static int ready_in_daemon(struct mrv_qp *qp)
{
	const struct ibv_qp_attr *a = &qp->attr;
	struct mrc_ctl_ready_qp req = { .qp_num = qp->ibqpx.qp_base.qp_num,
					.retry_cnt = a->retry_cnt, .rnr_retry = a->rnr_retry,
					.timeout = a->timeout,
					.max_rd_atomic = a->max_rd_atomic ? a->max_rd_atomic : 1 };

	return mrv_request(qp->ctx, MRC_CTL_READY_QP, &req, sizeof(req), NULL, 0, NULL, 0, NULL,
			   NULL, NULL);
}

/*
 * RTS to RTS: what the daemon applies from its next packet on. IB allows access flags and
 * the RNR timer here; the retry limits and clock too, as providers do (timeout, retry_cnt).
 */
#define MRV_RTS_TO_RTS                                                                      \
	(IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |       \
	 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY)

static int modify_in_daemon(struct mrv_qp *qp)
{
	const struct ibv_qp_attr *a = &qp->attr;
	struct mrc_ctl_modify_qp req = {
		.qp_num = qp->ibqpx.qp_base.qp_num,
		.access = ctl_qp_access(a->qp_access_flags),
		.retry_cnt = a->retry_cnt, .rnr_retry = a->rnr_retry, .timeout = a->timeout,
		.min_rnr_timer = a->min_rnr_timer
	};

	return mrv_request(qp->ctx, MRC_CTL_MODIFY_QP, &req, sizeof(req), NULL, 0, NULL, 0, NULL,
			   NULL, NULL);
}

/* The transition's last step, for either kind of QP: the daemon fails it into ERR. */
static int enter_state(struct mrv_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to)
{
	struct ibv_qp *ibqp = &qp->ibqpx.qp_base;

	if (to == IBV_QPS_ERR && from != IBV_QPS_ERR) {
		struct mrc_ctl_handle h = { .handle = ibqp->qp_num };
		int err = mrv_request(qp->ctx, MRC_CTL_ERROR_QP, &h, sizeof(h), NULL, 0, NULL, 0,
				      NULL, NULL, NULL);

		if (err && err != ENODEV)
			return err;
	}
	pthread_mutex_lock(&ibqp->mutex);
	ibqp->state = to;
	qp->attr.qp_state = to;
	pthread_mutex_unlock(&ibqp->mutex);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct mrv_qp *qp = to_qp(ibqp);
	enum ibv_qp_state from = daemon_says_error(qp) ? IBV_QPS_ERR : ibqp->state;
	enum ibv_qp_state to = attr_mask & IBV_QP_STATE ? attr->qp_state : from;
	int need, err;

	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != from)
		return EINVAL;
	if (ibqp->qp_type == IBV_QPT_UD) {
		err = mrv_ud_modify(qp, from, to, attr, attr_mask);
		return err ? err : enter_state(qp, from, to);
	}
	err = required_for(from, to, &need);
	if (!err && (attr_mask & need) != need)
		err = EINVAL;
	if (!err && from == IBV_QPS_RTS && to == IBV_QPS_RTS && (attr_mask & ~MRV_RTS_TO_RTS))
		err = EINVAL; /* nothing else changes once sending began */
	if (!err)
		err = check_values(attr, attr_mask);
	if (err)
		return err;
	if (from == IBV_QPS_RTS && to == IBV_QPS_RTS && (attr_mask & ~IBV_QP_STATE)) {
		struct ibv_qp_attr before = qp->attr;

		remember(&qp->attr, attr, attr_mask);
		err = modify_in_daemon(qp);
		if (err) {
			qp->attr = before;
			return err;
		}
		return 0;
	}
	remember(&qp->attr, attr, attr_mask);
	if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
		err = connect_in_daemon(qp);
		if (err)
			return err;
	} else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
		err = ready_in_daemon(qp);
		if (err)
			return err;
	}
	return enter_state(qp, from, to);
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct mrv_qp *qp = to_qp(ibqp);

	(void)attr_mask; /* everything known is filled; verbs allows more than asked */
	*attr = qp->attr;
	attr->qp_state = daemon_says_error(qp) ? IBV_QPS_ERR : ibqp->state;
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->cap = qp->cap;
	init_attr->srq = ibqp->srq;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct mrv_qp *qp = to_qp(ibqp);
	struct mrc_ctl_handle h = { .handle = ibqp->qp_num };
	int err = mrv_request(qp->ctx, MRC_CTL_DESTROY_QP, &h, sizeof(h), NULL, 0, NULL, 0, NULL,
			      NULL, NULL);

	if (err && err != ENODEV)
		return err;
	mrv_qp_untrack(qp);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	mrv_pd_use(ibqp->pd, -1);
	qp_release(qp);
	return 0;
}

/* MetaRoCE places packets as they arrive, out of order: no ordering guarantee to report. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}
