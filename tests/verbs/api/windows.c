/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Memory windows over loopback QPs [SPEC 4.9, R-428, R-429, R-520..R-523]: type 1 bound by
 * ibv_bind_mw, type 2 by IBV_WR_BIND_MW and ibv_wr_bind_mw, WRITEs and READs through them
 * byte-exact; keys checked like a region's (old key after a rebind, unbound, past the window,
 * access the window does not grant, a type 2 window through another QP); invalidation by
 * IBV_WR_LOCAL_INV and by the peer's SEND_WITH_INV (the receive says IBV_WC_WITH_INV and the
 * key); refusals (no MW_BIND access, past the region, a bound type 2 window bound again, a
 * region's key invalidated, a PD mismatch, a zero-based type 1); a region with a window bound
 * cannot be deregistered. A failed remote access puts the pair in error, so each refusal gets
 * a fresh pair; the windows and the region live in the target's PD throughout.
 */
#include "api/api.h"

#define LEN 8192

struct world {
	struct ibv_pd *pd;	 /* the target's: region, windows, receive buffer */
	uint8_t *target, *local; /* the target's region; the writer's buffer */
	struct ibv_mr *mr;	 /* target, LOCAL_WRITE | MW_BIND, no remote access of its own */
	struct ibv_mr *rcv;	 /* the target's receive buffer */
	struct side w, t;
};

static void fresh_pair(struct world *x)
{
	make_pair_with(&x->w, &x->t, x->pd, x->local, LEN);
}

static enum ibv_wc_status rdma(struct world *x, enum ibv_wr_opcode op, uint32_t off,
			       uint32_t len, uint32_t rkey, uint64_t raddr)
{
	struct ibv_sge sge = { (uintptr_t)x->local + off, len, x->w.local->lkey };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED, .wr.rdma = { raddr, rkey } },
			   *bad;
	struct ibv_wc wc;

	if (ibv_post_send(x->w.qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	return poll_one(x->w.cq, &wc) ? wc.status : IBV_WC_GENERAL_ERR;
}

/* The target's next send completion: its status, or GENERAL_ERR if it is not `op`. */
static enum ibv_wc_status target_completion(struct world *x, enum ibv_wc_opcode op,
					    uint64_t wr_id)
{
	struct ibv_wc wc;

	if (!poll_one(x->t.cq, &wc))
		return IBV_WC_GENERAL_ERR;
	if (wc.status == IBV_WC_SUCCESS && (wc.opcode != op || wc.wr_id != wr_id))
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

/* ibv_bind_mw (type 1) on the target's QP: 0 and the completion's status in *st, or errno. */
static int bind1(struct world *x, struct ibv_mw *mw, struct ibv_mr *mr, uint32_t off,
		 uint64_t len, unsigned access, enum ibv_wc_status *st)
{
	struct ibv_mw_bind b = { .wr_id = 21, .send_flags = IBV_SEND_SIGNALED,
				 .bind_info = { mr, mr ? (uintptr_t)x->target + off : 0, len,
						access } };
	int err = ibv_bind_mw(x->t.qp, mw, &b);

	if (!err)
		*st = target_completion(x, IBV_WC_BIND_MW, 21);
	return err;
}

/* IBV_WR_BIND_MW (type 2) on the target's QP with the key `rkey`. */
static enum ibv_wc_status bind2(struct world *x, struct ibv_mw *mw, uint32_t rkey, uint32_t off,
				uint64_t len, unsigned access)
{
	struct ibv_send_wr wr = { .wr_id = 22, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info =
		(struct ibv_mw_bind_info){ x->mr, (uintptr_t)x->target + off, len, access };
	if (ibv_post_send(x->t.qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	return target_completion(x, IBV_WC_BIND_MW, 22);
}

static enum ibv_wc_status local_inv(struct world *x, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 23, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey },
			   *bad;

	if (ibv_post_send(x->t.qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	return target_completion(x, IBV_WC_LOCAL_INV, 23);
}

/* A SEND_WITH_INV of `rkey` from the writer into a receive of the target's: both ends. */
static enum ibv_wc_status send_inv(struct world *x, uint32_t rkey, struct ibv_wc *recv)
{
	struct ibv_sge rs = { (uintptr_t)x->target + LEN - 256, 256, x->rcv->lkey };
	struct ibv_recv_wr rw = { .wr_id = 31, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { (uintptr_t)x->local, 64, x->w.local->lkey };
	struct ibv_send_wr sw = { .wr_id = 32, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey },
			   *sbad;
	struct ibv_wc wc;

	if (ibv_post_recv(x->t.qp, &rw, &rbad) || ibv_post_send(x->w.qp, &sw, &sbad))
		return IBV_WC_GENERAL_ERR;
	if (!poll_one(x->w.cq, &wc) || !poll_one(x->t.cq, recv))
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

/* A READ through a key that must be dead now, then the pair it erred goes. */
static void refused_then_dropped(struct world *x, uint32_t key, uint64_t raddr, const char *what)
{
	enum ibv_wc_status st = rdma(x, IBV_WR_RDMA_READ, 0, 64, key, raddr);

	CHECK(st == IBV_WC_REM_ACCESS_ERR, "%s: %s", what, ibv_wc_status_str(st));
	drop_pair(&x->w, &x->t);
}

static void fill(struct world *x, uint8_t seed)
{
	for (unsigned i = 0; i < LEN; i++)
		x->local[i] = (uint8_t)(seed + i * 7);
	memset(x->target, 0, LEN - 256);
}

/* Type 1: bound, moved, unbound; its key checked like a region's. */
static void type_1(struct world *x)
{
	unsigned rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mw *mw = ibv_alloc_mw(x->pd, IBV_MW_TYPE_1);
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	uint32_t first, old;
	int err;

	CHECK(mw && mw->type == IBV_MW_TYPE_1 && mw->rkey, "type 1 window allocated");
	if (!mw)
		return;
	first = mw->rkey;
	fresh_pair(x);
	fill(x, 1);
	err = bind1(x, mw, x->mr, 1024, 2048, rw, &st);
	CHECK(!err && st == IBV_WC_SUCCESS && mw->rkey == ibv_inc_rkey(first),
	      "ibv_bind_mw: IBV_WC_BIND_MW, the key moved on to ibv_inc_rkey's");
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 2048, mw->rkey, (uintptr_t)x->target + 1024);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(x->target + 1024, x->local, 2048) &&
		      all(x->target, 1024, 0) && all(x->target + 3072, 1024, 0),
	      "WRITE of 2048 bytes through the window: exact, nothing outside it");
	memset(x->local + 4096, 0, 2048);
	st = rdma(x, IBV_WR_RDMA_READ, 4096, 2048, mw->rkey, (uintptr_t)x->target + 1024);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(x->local + 4096, x->target + 1024, 2048),
	      "READ of the window: exact");
	CHECK(ibv_dereg_mr(x->mr) == EBUSY, "ibv_dereg_mr with a window bound: EBUSY");
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 16, mw->rkey, (uintptr_t)x->target + 3072 - 8);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE past the window's end: %s",
	      ibv_wc_status_str(st));
	drop_pair(&x->w, &x->t);

	/* moved: the old key is dead, the new range works, access is the window's */
	fresh_pair(x);
	old = mw->rkey;
	err = bind1(x, mw, x->mr, 0, 512, IBV_ACCESS_REMOTE_READ, &st);
	CHECK(!err && st == IBV_WC_SUCCESS, "bound again, to [0, 512), read only");
	st = rdma(x, IBV_WR_RDMA_READ, 0, 512, mw->rkey, (uintptr_t)x->target);
	CHECK(st == IBV_WC_SUCCESS, "READ through the new binding");
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 64, mw->rkey, (uintptr_t)x->target);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE through a read-only window: %s",
	      ibv_wc_status_str(st));
	drop_pair(&x->w, &x->t);
	fresh_pair(x);
	refused_then_dropped(x, old, (uintptr_t)x->target + 1024, "the key before the rebind");

	/* unbound: nothing reaches through it; the region may go once no window is bound */
	fresh_pair(x);
	err = bind1(x, mw, NULL, 0, 0, 0, &st);
	CHECK(!err && st == IBV_WC_SUCCESS, "unbound (ibv_bind_mw with length 0)");
	refused_then_dropped(x, mw->rkey, (uintptr_t)x->target, "READ through an unbound window");

	/* refusals at the call and in the completion */
	fresh_pair(x);
	{
		struct ibv_pd *other = ibv_alloc_pd(ctx);
		struct ibv_mr *foreign = other ? ibv_reg_mr(other, x->target, 4096,
							    IBV_ACCESS_LOCAL_WRITE |
								    IBV_ACCESS_MW_BIND)
					       : NULL;

		CHECK(foreign && bind1(x, mw, foreign, 0, 64, rw, &st) == EPERM,
		      "a region of another PD: EPERM");
		CHECK(bind1(x, mw, x->mr, 0, 64, rw | IBV_ACCESS_ZERO_BASED, &st) == EINVAL,
		      "a zero-based type 1 window: EINVAL");
		if (foreign)
			ibv_dereg_mr(foreign);
		if (other)
			ibv_dealloc_pd(other);
	}
	err = bind1(x, mw, x->mr, LEN - 512, 1024, rw, &st);
	CHECK(!err && st == IBV_WC_MW_BIND_ERR, "bound past the region's end: %s",
	      ibv_wc_status_str(st));
	drop_pair(&x->w, &x->t);
	fresh_pair(x);
	{
		struct ibv_mr *plain = ibv_reg_mr(x->pd, x->target, 4096, IBV_ACCESS_LOCAL_WRITE);

		err = plain ? bind1(x, mw, plain, 0, 64, rw, &st) : ENOMEM;
		CHECK(!err && st == IBV_WC_MW_BIND_ERR,
		      "bound to a region without IBV_ACCESS_MW_BIND: %s", ibv_wc_status_str(st));
		if (plain)
			ibv_dereg_mr(plain);
	}
	drop_pair(&x->w, &x->t);
	CHECK(ibv_dealloc_mw(mw) == 0, "type 1 window deallocated");
}

/* Type 2: bound through one QP, used only through it, invalidated two ways. */
static void type_2(struct world *x)
{
	unsigned rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mw *mw = ibv_alloc_mw(x->pd, IBV_MW_TYPE_2);
	enum ibv_wc_status st;
	struct ibv_wc rwc;
	uint32_t key;

	CHECK(mw && mw->type == IBV_MW_TYPE_2, "type 2 window allocated");
	if (!mw)
		return;
	fresh_pair(x);
	fill(x, 2);
	key = ibv_inc_rkey(mw->rkey);
	st = bind2(x, mw, key, 4096, 1024, rw | IBV_ACCESS_ZERO_BASED);
	CHECK(st == IBV_WC_SUCCESS, "IBV_WR_BIND_MW, zero-based: %s", ibv_wc_status_str(st));
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 1024, key, 0);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(x->target + 4096, x->local, 1024),
	      "WRITE at window address 0 lands at its first byte");
	{
		struct ibv_mw *other = ibv_alloc_mw(x->pd, IBV_MW_TYPE_1);
		struct ibv_mw_bind b = { .bind_info = { x->mr, (uintptr_t)x->target, 64, rw } };

		CHECK(ibv_bind_mw(x->t.qp, mw, &b) == EINVAL, "ibv_bind_mw of a type 2 window: EINVAL");
		if (other)
			ibv_dealloc_mw(other);
	}
	st = bind2(x, mw, ibv_inc_rkey(key), 0, 64, rw);
	CHECK(st == IBV_WC_MW_BIND_ERR, "a bound type 2 window bound again: %s",
	      ibv_wc_status_str(st));
	drop_pair(&x->w, &x->t);

	/* the peer invalidates it with SEND_WITH_INV */
	fresh_pair(x);
	key = ibv_inc_rkey(key);
	st = bind2(x, mw, key, 0, 4096, rw);
	CHECK(st == IBV_WC_SUCCESS, "type 2 bound on a new QP (the old QP's binding died with it)");
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 4096, key, (uintptr_t)x->target);
	st = st == IBV_WC_SUCCESS ? send_inv(x, key, &rwc) : st;
	CHECK(st == IBV_WC_SUCCESS && rwc.status == IBV_WC_SUCCESS &&
		      rwc.opcode == IBV_WC_RECV && (rwc.wc_flags & IBV_WC_WITH_INV) &&
		      !(rwc.wc_flags & IBV_WC_WITH_IMM) && rwc.invalidated_rkey == key &&
		      rwc.byte_len == 64 && !memcmp(x->target, x->local, 4096),
	      "WRITE then SEND_WITH_INV: bytes exact; receive WITH_INV, invalidated_rkey the key");
	refused_then_dropped(x, key, (uintptr_t)x->target, "the invalidated key");

	/* the owner invalidates it with LOCAL_INV */
	fresh_pair(x);
	key = ibv_inc_rkey(key);
	st = bind2(x, mw, key, 0, 4096, rw);
	CHECK(st == IBV_WC_SUCCESS && local_inv(x, key) == IBV_WC_SUCCESS,
	      "bound again, then IBV_WR_LOCAL_INV: IBV_WC_LOCAL_INV");
	refused_then_dropped(x, key, (uintptr_t)x->target, "a locally invalidated key");

	/* bound through one QP, used through another of the same PD */
	fresh_pair(x);
	key = ibv_inc_rkey(key);
	st = bind2(x, mw, key, 0, 4096, rw);
	{
		struct world y = *x;

		fresh_pair(&y); /* a second pair, its target QP in the same PD */
		CHECK(st == IBV_WC_SUCCESS &&
			      rdma(&y, IBV_WR_RDMA_READ, 0, 64, key, (uintptr_t)x->target) ==
				      IBV_WC_REM_ACCESS_ERR,
		      "a type 2 window through another QP of its PD: remote access error");
		drop_pair(&y.w, &y.t);
	}
	st = rdma(x, IBV_WR_RDMA_READ, 0, 64, key, (uintptr_t)x->target);
	CHECK(st == IBV_WC_SUCCESS, "... and through its own QP: fine");
	drop_pair(&x->w, &x->t);

	/* SEND_WITH_INV of a region's key: an invalid request at both ends */
	fresh_pair(x);
	st = send_inv(x, x->mr->rkey, &rwc);
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && rwc.status == IBV_WC_REM_INV_REQ_ERR,
	      "SEND_WITH_INV of a region's key: %s, the receive %s", ibv_wc_status_str(st),
	      ibv_wc_status_str(rwc.status));
	drop_pair(&x->w, &x->t);
	CHECK(ibv_dealloc_mw(mw) == 0, "type 2 window deallocated");
}

/* The extended interface: ibv_wr_bind_mw, ibv_wr_send_inv, ibv_wr_local_inv. */
static void extended(struct world *x)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC, .pd = x->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 } };
	struct ibv_mw *mw = ibv_alloc_mw(x->pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info info = { x->mr, (uintptr_t)x->target, 4096,
					 IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	enum ibv_wc_status st;
	uint32_t key;
	int err;

	make_side(&x->w);
	x->w.local = ibv_reg_mr(x->w.pd, x->local, LEN, IBV_ACCESS_LOCAL_WRITE);
	x->t.pd = x->pd;
	x->t.cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	a.send_cq = a.recv_cq = x->t.cq;
	qp = x->t.cq && mw && x->w.local ? ibv_create_qp_ex(ctx, &a) : NULL;
	if (!qp)
		die("extended QP for windows");
	x->t.qp = qp;
	connect_to(&x->w, qp->qp_num);
	connect_to(&x->t, x->w.qp->qp_num);
	qpx = ibv_qp_to_qp_ex(qp);
	fill(x, 3);
	key = ibv_inc_rkey(mw->rkey);
	ibv_wr_start(qpx);
	qpx->wr_id = 22;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, mw, key, &info);
	err = ibv_wr_complete(qpx);
	st = err ? IBV_WC_GENERAL_ERR : target_completion(x, IBV_WC_BIND_MW, 22);
	CHECK(st == IBV_WC_SUCCESS, "ibv_wr_bind_mw: %s", ibv_wc_status_str(st));
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 4096, key, (uintptr_t)x->target);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(x->target, x->local, 4096),
	      "WRITE through it: exact");
	ibv_wr_start(qpx);
	qpx->wr_id = 23;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(qpx, key);
	err = ibv_wr_complete(qpx);
	st = err ? IBV_WC_GENERAL_ERR : target_completion(x, IBV_WC_LOCAL_INV, 23);
	CHECK(st == IBV_WC_SUCCESS, "ibv_wr_local_inv: %s", ibv_wc_status_str(st));
	st = rdma(x, IBV_WR_RDMA_WRITE, 0, 64, key, (uintptr_t)x->target);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "... and the key is dead: %s", ibv_wc_status_str(st));
	drop_pair(&x->w, &x->t);
	ibv_dealloc_mw(mw);
}

void memory_windows(void)
{
	struct world x = { 0 };

	x.pd = ibv_alloc_pd(ctx);
	x.target = aligned_alloc(4096, LEN);
	x.local = aligned_alloc(4096, LEN);
	if (!x.pd || !x.target || !x.local)
		die("windows set-up");
	memset(x.target, 0, LEN);
	x.mr = ibv_reg_mr(x.pd, x.target, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	x.rcv = ibv_reg_mr(x.pd, x.target + LEN - 256, 256, IBV_ACCESS_LOCAL_WRITE);
	if (!x.mr || !x.rcv)
		die("reg_mr with IBV_ACCESS_MW_BIND");
	CHECK(ibv_alloc_mw(x.pd, 3) == NULL && errno == EINVAL, "window type 3: EINVAL");
	type_1(&x);
	type_2(&x);
	extended(&x);
	CHECK(ibv_dereg_mr(x.rcv) == 0 && ibv_dereg_mr(x.mr) == 0 && ibv_dealloc_pd(x.pd) == 0,
	      "region and PD go once no window is bound");
	free(x.target);
	free(x.local);
}
