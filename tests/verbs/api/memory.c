/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* ibv_rereg_mr in every mix, and protection domains as a boundary. */
#include "api/api.h"

/*
 * ibv_rereg_mr with each combination of new translation (T), access (A) and PD (P): the
 * region starts where a WRITE cannot land (no remote write with A, another PD with P) and is
 * re-registered to where it must; a WRITE with the new rkey lands byte-exact at the new
 * translation, and the old buffer keeps its bytes.
 */
void rereg_matrix(void)
{
	static const char *const names[8] = { "", "T", "A", "TA", "P", "TP", "AP", "TAP" };
	uint8_t *src = malloc(4096), *old_buf = aligned_alloc(4096, 8192);
	struct ibv_pd *target_pd = ibv_alloc_pd(ctx), *elsewhere = ibv_alloc_pd(ctx);

	if (!src || !old_buf || !target_pd || !elsewhere)
		die("rereg matrix set-up");
	for (unsigned combo = 1; combo < 8; combo++) {
		int flags = (combo & 1 ? IBV_REREG_MR_CHANGE_TRANSLATION : 0) |
			    (combo & 2 ? IBV_REREG_MR_CHANGE_ACCESS : 0) |
			    (combo & 4 ? IBV_REREG_MR_CHANGE_PD : 0);
		int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		uint8_t *new_buf = aligned_alloc(4096, 8192), *dst;
		struct ibv_mr *mr;
		struct side w, t;
		enum ibv_wc_status st;
		int err;

		if (!new_buf)
			die("malloc");
		memset(old_buf, 0xa0, 8192);
		memset(new_buf, 0xb0, 8192);
		make_pair_with(&w, &t, target_pd, src, 4096);
		mr = ibv_reg_mr(combo & 4 ? elsewhere : target_pd, old_buf, 8192,
				combo & 2 ? IBV_ACCESS_LOCAL_WRITE : rw);
		if (!mr)
			die("reg_mr");
		err = ibv_rereg_mr(mr, flags, target_pd, new_buf, 8192, rw);
		dst = combo & 1 ? new_buf : old_buf;
		for (unsigned k = 0; k < 4096; k++)
			src[k] = (uint8_t)(k * 7 + combo);
		st = err ? IBV_WC_GENERAL_ERR
			 : write_to(&w, w.local, src, 4096, mr->rkey, (uintptr_t)dst + 1000, 0);
		CHECK(err == 0 && st == IBV_WC_SUCCESS && !memcmp(dst + 1000, src, 4096) &&
			      all(dst, 1000, combo & 1 ? 0xb0 : 0xa0) &&
			      (!(combo & 1) || all(old_buf, 8192, 0xa0)) && mr->pd == target_pd,
		      "ibv_rereg_mr(%s): %d, then a 4 KiB WRITE with the new rkey: %s, byte-exact "
		      "at the new translation, the old buffer untouched",
		      names[combo], err, ibv_wc_status_str(st));
		ibv_dereg_mr(mr);
		drop_pair(&w, &t);
		free(new_buf);
	}
	free(src);
	free(old_buf);
	ibv_dealloc_pd(target_pd);
	ibv_dealloc_pd(elsewhere);
}

/*
 * A PD is a boundary inside one process: a QP reaches only the regions of its own PD, with
 * rkeys [SPEC R-27] and lkeys alike; access taken away by rereg or RTS to RTS is refused.
 */
void pd_boundary(void)
{
	uint8_t *buf = aligned_alloc(4096, 4096), *src = malloc(256);
	struct ibv_pd *target_pd = ibv_alloc_pd(ctx), *other = ibv_alloc_pd(ctx);
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *foreign, *src_mr, *mr;
	struct side w, t;
	enum ibv_wc_status st;

	if (!buf || !src || !target_pd || !other)
		die("PD set-up");
	memset(buf, 0, 4096);
	memset(src, 0x5a, 256);

	/* an rkey of another PD of the same process */
	make_pair_with(&w, &t, target_pd, src, 256);
	foreign = ibv_reg_mr(other, buf, 4096, rw);
	if (!foreign)
		die("reg_mr");
	st = write_to(&w, w.local, src, 64, foreign->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && all(buf, 4096, 0),
	      "WRITE with the rkey of a region in another PD of the process: %s, nothing placed",
	      ibv_wc_status_str(st));
	CHECK(ibv_dealloc_pd(other) == EBUSY, "ibv_dealloc_pd of a PD with a region: EBUSY");
	drop_pair(&w, &t);

	/* an lkey of another PD as the source */
	make_pair(&w, &t, target_pd);
	mr = ibv_reg_mr(target_pd, buf, 4096, rw);
	src_mr = ibv_reg_mr(other, src, 256, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !src_mr)
		die("reg_mr");
	st = write_to(&w, src_mr, src, 64, mr->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_LOC_PROT_ERR && all(buf, 4096, 0),
	      "WRITE from an lkey of another PD: %s, nothing sent", ibv_wc_status_str(st));
	ibv_dereg_mr(src_mr);
	drop_pair(&w, &t);

	/* remote write taken away by ibv_rereg_mr */
	make_pair_with(&w, &t, target_pd, src, 256);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == 0,
	      "ibv_rereg_mr: remote write taken away");
	st = write_to(&w, w.local, src, 64, mr->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && all(buf, 4096, 0), "... then a WRITE: %s",
	      ibv_wc_status_str(st));
	drop_pair(&w, &t);

	/* moved to another PD by ibv_rereg_mr */
	make_pair_with(&w, &t, target_pd, src, 256);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, other, NULL,
			   0, rw) == 0 && mr->pd == other,
	      "ibv_rereg_mr: moved to another PD, remote write back");
	st = write_to(&w, w.local, src, 64, mr->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && all(buf, 4096, 0),
	      "... then a WRITE from a QP of the old PD: %s", ibv_wc_status_str(st));
	drop_pair(&w, &t);

	/* the QP's own remote write taken away at RTS */
	make_pair_with(&w, &t, other, src, 256);
	st = write_to(&w, w.local, src, 64, mr->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_SUCCESS && all(buf, 64, 0x5a),
	      "a QP of the region's new PD writes into it: %s", ibv_wc_status_str(st));
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS,
					 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
					 .timeout = 16, .retry_cnt = 5 };
		struct ibv_qp_attr q;
		struct ibv_qp_init_attr qi;

		CHECK(ibv_modify_qp(t.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == 0 &&
			      ibv_modify_qp(w.qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT) == 0,
		      "RTS to RTS: the target's access flags, the writer's timeout and retry_cnt");
		CHECK(ibv_query_qp(w.qp, &q, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &qi) == 0 &&
			      q.timeout == 16 && q.retry_cnt == 5 && q.qp_state == IBV_QPS_RTS,
		      "... ibv_query_qp reads them back");
		a.sq_psn = 77;
		CHECK(ibv_modify_qp(w.qp, &a, IBV_QP_SQ_PSN) == EINVAL,
		      "... the SQ PSN cannot change at RTS: EINVAL");
	}
	memset(src, 0x6b, 256);
	st = write_to(&w, w.local, src, 64, mr->rkey, (uintptr_t)buf, 0);
	/* the QP, not the region, refuses: invalid request, as InfiniBand answers */
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && all(buf, 64, 0x5a),
	      "a WRITE into a QP whose remote write was taken away at RTS: %s",
	      ibv_wc_status_str(st));
	ibv_dereg_mr(mr);
	ibv_dereg_mr(foreign);
	drop_pair(&w, &t);
	CHECK(ibv_dealloc_pd(other) == 0 && ibv_dealloc_pd(target_pd) == 0,
	      "the PDs deallocate once empty");
	free(buf);
	free(src);
}

