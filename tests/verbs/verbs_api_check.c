/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verbs calls verbs_check does not reach, each against what rdma-core documents, in one
 * process over loopback QPs: device, port and GID attributes as RoCE programs read them;
 * overlapping registrations on one page (each must keep receiving one-sided writes);
 * ibv_rereg_mr (new translation and keys; the old key refused), and with every combination of
 * new translation, access and PD, verified by the bytes a WRITE lands; protection domains as
 * a boundary between one process's QPs and regions; RTS to RTS; atomics and their refusals;
 * inline sends; ibv_query_qp;
 * what is refused and how (CQ timestamps, a CQ in use, UD QPs, qp_ex of a plain QP); and the
 * <metaroce/metaroce.h> extension, found with dlsym as a program run under metaroce-run would.
 *
 *   metaroce-run verbs_api_check       exit 0 when every check holds
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metaroce/metaroce.h>

static int failures;

#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		bool ok_ = (cond);                                                            \
		printf("%s  ", ok_ ? "ok  " : "FAIL");                                        \
		printf(__VA_ARGS__);                                                          \
		putchar('\n');                                                                \
		failures += !ok_;                                                             \
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "verbs_api_check: %s: %s\n", what, strerror(errno));
	exit(2);
}

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static struct ibv_context *ctx;
static union ibv_gid gid0;

/* A side whose QP lives in pd (its own PD when pd is NULL). */
static void make_side_in(struct side *s, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 16, .max_recv_wr = 16,
					       .max_send_sge = 1, .max_recv_sge = 1,
					       .max_inline_data = 64 } };

	s->pd = pd ? pd : ibv_alloc_pd(ctx);
	s->cq = s->pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	a.send_cq = a.recv_cq = s->cq;
	s->qp = s->cq ? ibv_create_qp(s->pd, &a) : NULL;
	if (!s->qp)
		die("create PD, CQ, QP");
}

static void make_side(struct side *s)
{
	make_side_in(s, NULL);
}

static void connect_to(struct side *s, uint32_t dest)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC |
						    IBV_ACCESS_LOCAL_WRITE };

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid0;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/* Waits up to 10 s for one completion on cq. */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return false;
		if (n == 1)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 10);
	return false;
}

static enum ibv_wc_status write_to(struct side *s, struct ibv_mr *src, void *from, uint32_t len,
				   uint32_t rkey, uint64_t raddr, unsigned flags)
{
	struct ibv_sge sge = { (uintptr_t)from, len, src ? src->lkey : 0 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED | flags,
				  .wr.rdma = { raddr, rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(s->qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	return poll_one(s->cq, &wc) ? wc.status : IBV_WC_GENERAL_ERR;
}

/* A writer and a target QP connected to each other, the target's QP in target_pd. */
static void make_pair(struct side *w, struct side *t, struct ibv_pd *target_pd)
{
	make_side(w);
	make_side_in(t, target_pd);
	connect_to(w, t->qp->qp_num);
	connect_to(t, w->qp->qp_num);
}

static void drop_pair(struct side *w, struct side *t)
{
	ibv_destroy_qp(w->qp);
	ibv_destroy_qp(t->qp);
	ibv_destroy_cq(w->cq);
	ibv_destroy_cq(t->cq);
	ibv_dealloc_pd(w->pd); /* the target's PD is the caller's */
}

/* Every byte of [p, p + n) is b. */
static bool all(const uint8_t *p, size_t n, uint8_t b)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

/*
 * ibv_rereg_mr with each combination of new translation (T), access (A) and PD (P): the
 * region starts where a WRITE cannot land (no remote write with A, another PD with P) and is
 * re-registered to where it must; a WRITE with the new rkey lands byte-exact at the new
 * translation, and the old buffer keeps its bytes.
 */
static void rereg_matrix(void)
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
		struct ibv_mr *mr, *src_mr;
		struct side w, t;
		enum ibv_wc_status st;
		int err;

		if (!new_buf)
			die("malloc");
		memset(old_buf, 0xa0, 8192);
		memset(new_buf, 0xb0, 8192);
		make_pair(&w, &t, target_pd);
		src_mr = ibv_reg_mr(w.pd, src, 4096, IBV_ACCESS_LOCAL_WRITE);
		mr = ibv_reg_mr(combo & 4 ? elsewhere : target_pd, old_buf, 8192,
				combo & 2 ? IBV_ACCESS_LOCAL_WRITE : rw);
		if (!src_mr || !mr)
			die("reg_mr");
		err = ibv_rereg_mr(mr, flags, target_pd, new_buf, 8192, rw);
		dst = combo & 1 ? new_buf : old_buf;
		for (unsigned k = 0; k < 4096; k++)
			src[k] = (uint8_t)(k * 7 + combo);
		st = err ? IBV_WC_GENERAL_ERR
			 : write_to(&w, src_mr, src, 4096, mr->rkey, (uintptr_t)dst + 1000, 0);
		CHECK(err == 0 && st == IBV_WC_SUCCESS && !memcmp(dst + 1000, src, 4096) &&
			      all(dst, 1000, combo & 1 ? 0xb0 : 0xa0) &&
			      (!(combo & 1) || all(old_buf, 8192, 0xa0)) && mr->pd == target_pd,
		      "ibv_rereg_mr(%s): %d, then a 4 KiB WRITE with the new rkey: %s, byte-exact "
		      "at the new translation, the old buffer untouched",
		      names[combo], err, ibv_wc_status_str(st));
		ibv_dereg_mr(src_mr);
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
static void pd_boundary(void)
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
	make_pair(&w, &t, target_pd);
	foreign = ibv_reg_mr(other, buf, 4096, rw);
	src_mr = ibv_reg_mr(w.pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
	if (!foreign || !src_mr)
		die("reg_mr");
	st = write_to(&w, src_mr, src, 64, foreign->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && all(buf, 4096, 0),
	      "WRITE with the rkey of a region in another PD of the process: %s, nothing placed",
	      ibv_wc_status_str(st));
	CHECK(ibv_dealloc_pd(other) == EBUSY, "ibv_dealloc_pd of a PD with a region: EBUSY");
	ibv_dereg_mr(src_mr);
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
	make_pair(&w, &t, target_pd);
	src_mr = ibv_reg_mr(w.pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == 0,
	      "ibv_rereg_mr: remote write taken away");
	st = write_to(&w, src_mr, src, 64, mr->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && all(buf, 4096, 0), "... then a WRITE: %s",
	      ibv_wc_status_str(st));
	ibv_dereg_mr(src_mr);
	drop_pair(&w, &t);

	/* moved to another PD by ibv_rereg_mr */
	make_pair(&w, &t, target_pd);
	src_mr = ibv_reg_mr(w.pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, other, NULL,
			   0, rw) == 0 && mr->pd == other,
	      "ibv_rereg_mr: moved to another PD, remote write back");
	st = write_to(&w, src_mr, src, 64, mr->rkey, (uintptr_t)buf, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && all(buf, 4096, 0),
	      "... then a WRITE from a QP of the old PD: %s", ibv_wc_status_str(st));
	ibv_dereg_mr(src_mr);
	drop_pair(&w, &t);

	/* the QP's own remote write taken away at RTS */
	make_pair(&w, &t, other);
	src_mr = ibv_reg_mr(w.pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
	st = write_to(&w, src_mr, src, 64, mr->rkey, (uintptr_t)buf, 0);
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
	st = write_to(&w, src_mr, src, 64, mr->rkey, (uintptr_t)buf, 0);
	/* the QP, not the region, refuses: invalid request, as InfiniBand answers */
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && all(buf, 64, 0x5a),
	      "a WRITE into a QP whose remote write was taken away at RTS: %s",
	      ibv_wc_status_str(st));
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(foreign);
	drop_pair(&w, &t);
	CHECK(ibv_dealloc_pd(other) == 0 && ibv_dealloc_pd(target_pd) == 0,
	      "the PDs deallocate once empty");
	free(buf);
	free(src);
}

/* One atomic on side s into target at raddr under rkey; the original lands in *result. */
static enum ibv_wc_status atomic_on(struct side *s, struct ibv_mr *result_mr, uint64_t *result,
				    enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
				    uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)result, 8, result_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.atomic = { raddr, compare_add, swap, rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(s->qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	if (!poll_one(s->cq, &wc))
		return IBV_WC_GENERAL_ERR;
	if (wc.status == IBV_WC_SUCCESS &&
	    (wc.opcode != (op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD) ||
	     wc.byte_len != 8))
		return IBV_WC_GENERAL_ERR;
	return wc.status;
}

/*
 * Atomics over loopback QPs [SPEC R-321..R-325]: FETCH_ADD and CMP_SWAP results and memory;
 * refusals: a misaligned word, a region without remote-atomic access, a QP without it, a
 * result element that is not 8 bytes.
 */
static void atomics(void)
{
	uint64_t *words = aligned_alloc(4096, 4096), *results = aligned_alloc(4096, 4096);
	int aw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_pd *target_pd = ibv_alloc_pd(ctx);
	struct ibv_mr *target, *plain, *res;
	enum ibv_wc_status st;
	struct side w, t;

	if (!words || !results || !target_pd)
		die("atomics set-up");
	memset(words, 0, 4096);
	words[0] = 40;
	words[1] = 7;
	make_pair(&w, &t, target_pd);
	target = ibv_reg_mr(target_pd, words, 2048, aw);
	plain = ibv_reg_mr(target_pd, (uint8_t *)words + 2048, 2048,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	res = ibv_reg_mr(w.pd, results, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!target || !plain || !res)
		die("reg_mr");
	st = atomic_on(&w, res, &results[0], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[0], 2, 0);
	CHECK(st == IBV_WC_SUCCESS && results[0] == 40 && words[0] == 42,
	      "FETCH_ADD 2 to 40: %s, returned %llu, the word now %llu", ibv_wc_status_str(st),
	      (unsigned long long)results[0], (unsigned long long)words[0]);
	st = atomic_on(&w, res, &results[1], IBV_WR_ATOMIC_CMP_AND_SWP, target->rkey,
		       (uintptr_t)&words[1], 6, 100);
	CHECK(st == IBV_WC_SUCCESS && results[1] == 7 && words[1] == 7,
	      "CMP_SWAP 6 -> 100 on 7 misses: returned %llu, the word stays %llu",
	      (unsigned long long)results[1], (unsigned long long)words[1]);
	st = atomic_on(&w, res, &results[2], IBV_WR_ATOMIC_CMP_AND_SWP, target->rkey,
		       (uintptr_t)&words[1], 7, UINT64_MAX);
	CHECK(st == IBV_WC_SUCCESS && results[2] == 7 && words[1] == UINT64_MAX,
	      "CMP_SWAP 7 -> 2^64-1 on 7 hits: returned %llu", (unsigned long long)results[2]);
	st = atomic_on(&w, res, &results[3], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[1], 3, 0);
	CHECK(st == IBV_WC_SUCCESS && words[1] == 2, "FETCH_ADD wraps modulo 2^64: %llu",
	      (unsigned long long)words[1]);
	{
		struct ibv_sge sge = { (uintptr_t)results, 16, res->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .wr.atomic = { (uintptr_t)&words[0], 1, 0, target->rkey } },
				   *bad;

		CHECK(ibv_post_send(w.qp, &wr, &bad) == EINVAL && words[0] == 42,
		      "an atomic whose result element is 16 bytes: EINVAL at post");
	}
	st = atomic_on(&w, res, &results[4], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[0] + 4, 1, 0);
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && words[0] == 42,
	      "FETCH_ADD on a misaligned word: %s, nothing changed", ibv_wc_status_str(st));
	/* each pair's writer has its own PD: the result region goes with it */
	ibv_dereg_mr(res);
	drop_pair(&w, &t);

	make_pair(&w, &t, target_pd);
	res = ibv_reg_mr(w.pd, results, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!res)
		die("reg_mr");
	st = atomic_on(&w, res, &results[5], IBV_WR_ATOMIC_FETCH_AND_ADD, plain->rkey,
		       (uintptr_t)words + 2048, 1, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && words[256] == 0,
	      "FETCH_ADD into a region without remote-atomic access: %s", ibv_wc_status_str(st));
	ibv_dereg_mr(res);
	drop_pair(&w, &t);

	make_pair(&w, &t, target_pd);
	res = ibv_reg_mr(w.pd, results, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!res)
		die("reg_mr");
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS,
					 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
							    IBV_ACCESS_REMOTE_WRITE };

		CHECK(ibv_modify_qp(t.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == 0,
		      "RTS to RTS: the target QP stops admitting atomics");
	}
	st = atomic_on(&w, res, &results[6], IBV_WR_ATOMIC_FETCH_AND_ADD, target->rkey,
		       (uintptr_t)&words[0], 1, 0);
	CHECK(st == IBV_WC_REM_INV_REQ_ERR && words[0] == 42,
	      "FETCH_ADD through a QP without remote-atomic access: %s", ibv_wc_status_str(st));
	ibv_dereg_mr(res);
	drop_pair(&w, &t);
	ibv_dereg_mr(plain);
	ibv_dereg_mr(target);
	ibv_dealloc_pd(target_pd);
	free(words);
	free(results);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct side a, b, c, d;
	uint8_t *page, *src;
	struct ibv_mr *src_mr, *lo, *hi, *mr;
	int err;

	if (!list || !list[0]) {
		fprintf(stderr, "verbs_api_check: no RDMA device found\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("open device");

	/* --- what RoCE programs read */
	CHECK(ibv_query_device(ctx, &dev) == 0 && dev.phys_port_cnt == 1 && dev.max_qp > 0 &&
		      dev.max_sge >= 1 && dev.atomic_cap == IBV_ATOMIC_HCA,
	      "device: 1 port, QPs, SGEs, atomics (IBV_ATOMIC_HCA)");
	CHECK(dev.vendor_id == 0xffffff && dev.vendor_part_id != 0 && dev.max_pd > 0 &&
		      dev.max_qp_rd_atom == 16 && dev.max_qp_init_rd_atom == 16 &&
		      !(dev.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT) && dev.max_srq == 0 &&
		      dev.max_ah == 0 && dev.max_mw == 0,
	      "device: a software vendor id (0x%x), READs 16 each way, no SRQ, AH or MW yet",
	      dev.vendor_id);
	{
		struct ibv_device_attr_ex ex;

		CHECK(ibv_query_device_ex(ctx, NULL, &ex) == 0 && ex.phys_port_cnt_ex == 1 &&
			      ex.orig_attr.vendor_id == dev.vendor_id && ex.odp_caps.general_caps == 0,
		      "ibv_query_device_ex: phys_port_cnt_ex %u, no ODP", ex.phys_port_cnt_ex);
	}
	CHECK(ibv_query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE &&
		      port.link_layer == IBV_LINK_LAYER_ETHERNET && port.gid_tbl_len >= 1 &&
		      port.lid == 0 && port.active_mtu >= IBV_MTU_1024,
	      "port 1: active, Ethernet link layer, LID 0, GIDs %d, MTU enum %d",
	      port.gid_tbl_len, port.active_mtu);
	CHECK(ibv_query_port(ctx, 2, &port) != 0, "port 2 does not exist");
	CHECK(ibv_query_gid(ctx, 1, 0, &gid0) == 0 && gid0.raw[10] == 0xff &&
		      gid0.raw[11] == 0xff && !memcmp(gid0.raw, "\0\0\0\0\0\0\0\0\0\0", 10),
	      "GID 0 is an IPv4-mapped address: %u.%u.%u.%u", gid0.raw[12], gid0.raw[13],
	      gid0.raw[14], gid0.raw[15]);
	{
		struct ibv_gid_entry e;

		CHECK(ibv_query_gid_ex(ctx, 1, 0, &e, 0) == 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
			      !memcmp(e.gid.raw, gid0.raw, 16),
		      "GID 0 is RoCE v2");
		CHECK(ibv_query_gid_ex(ctx, 1, 99, &e, 0) != 0, "GID 99 does not exist");
	}

	/* --- two regions on one page: both must keep receiving one-sided writes */
	make_side(&a);
	make_side(&b);
	connect_to(&a, b.qp->qp_num);
	connect_to(&b, a.qp->qp_num);
	page = aligned_alloc(4096, 8192);
	src = malloc(256);
	if (!page || !src)
		die("malloc");
	memset(page, 0, 8192);
	lo = ibv_reg_mr(b.pd, page + 100, 200, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	hi = ibv_reg_mr(b.pd, page + 1000, 6000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	src_mr = ibv_reg_mr(a.pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
	if (!lo || !hi || !src_mr)
		die("reg_mr");
	memset(src, 0x11, 256);
	CHECK(write_to(&a, src_mr, src, 64, lo->rkey, (uintptr_t)page + 120, 0) == IBV_WC_SUCCESS &&
		      page[120] == 0x11 && page[183] == 0x11 && page[184] == 0,
	      "WRITE into the first of two regions sharing a page lands");
	memset(src, 0x22, 256);
	CHECK(write_to(&a, src_mr, src, 64, hi->rkey, (uintptr_t)page + 1000, 0) ==
			      IBV_WC_SUCCESS &&
		      page[1000] == 0x22 && page[1063] == 0x22,
	      "WRITE into the second, registered after it, lands too");
	memset(src, 0x33, 256);
	CHECK(write_to(&a, src_mr, src, 64, lo->rkey, (uintptr_t)page + 200, 0) ==
			      IBV_WC_SUCCESS &&
		      page[200] == 0x33,
	      "... and the first still receives after the second was registered");

	/* --- rereg: a new translation gets new keys; the old key no longer reaches it */
	{
		uint32_t old_rkey = hi->rkey;
		uint8_t *other = calloc(1, 4096);

		err = ibv_rereg_mr(hi, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other, 4096,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		CHECK(err == 0 && hi->addr == other, "ibv_rereg_mr to a new buffer");
		memset(src, 0x44, 256);
		CHECK(write_to(&a, src_mr, src, 32, hi->rkey, (uintptr_t)other + 10, 0) ==
				      IBV_WC_SUCCESS &&
			      other[10] == 0x44 && other[41] == 0x44,
		      "WRITE with the new rkey lands in the new buffer");
		if (old_rkey != hi->rkey) {
			enum ibv_wc_status st = write_to(&a, src_mr, src, 32, old_rkey,
							 (uintptr_t)page + 1000, 0);

			CHECK(st == IBV_WC_REM_ACCESS_ERR,
			      "the old rkey is refused: %s", ibv_wc_status_str(st));
		} else {
			CHECK(false, "ibv_rereg_mr kept the rkey");
		}
		ibv_dereg_mr(hi);
		free(other);
	}

	rereg_matrix();
	pd_boundary();
	atomics();

	/* --- inline data: the source needs no registration and may change at once */
	make_side(&c);
	make_side(&d);
	connect_to(&c, d.qp->qp_num);
	connect_to(&d, c.qp->qp_num);
	mr = ibv_reg_mr(d.pd, page + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("reg_mr");
	{
		char msg[40] = "inline bytes, copied at post time";

		CHECK(write_to(&c, NULL, msg, sizeof(msg), mr->rkey, (uintptr_t)page + 4096,
			       IBV_SEND_INLINE) == IBV_WC_SUCCESS &&
			      !memcmp(page + 4096, "inline bytes, copied at post time",
				      sizeof(msg)),
		      "inline RDMA WRITE from an unregistered stack buffer");
	}

	/* --- the extension API: 2 paths on plane 0 only */
	{
		int (*set_paths)(struct ibv_qp *, unsigned, uint32_t) =
			(int (*)(struct ibv_qp *, unsigned, uint32_t))dlsym(RTLD_DEFAULT,
									   "metaroce_qp_set_paths");
		int (*query_paths)(struct ibv_qp *, struct metaroce_path_stats *, unsigned) =
			(int (*)(struct ibv_qp *, struct metaroce_path_stats *,
				 unsigned))dlsym(RTLD_DEFAULT, "metaroce_query_paths");
		struct metaroce_path_stats st[32];
		struct side e, f;
		struct ibv_mr *fmr;
		int n;

		CHECK(set_paths && query_paths, "metaroce_qp_set_paths and _query_paths found");
		if (!set_paths || !query_paths)
			return 1;
		make_side(&e);
		make_side(&f);
		CHECK(set_paths(e.qp, 2, 0x1) == 0, "metaroce_qp_set_paths(2 per plane, plane 0)");
		CHECK(set_paths(e.qp, 17, 0) == EINVAL, "... 17 paths per plane refused");
		connect_to(&e, f.qp->qp_num);
		connect_to(&f, e.qp->qp_num);
		CHECK(set_paths(e.qp, 4, 0) == EINVAL, "... and refused after RTR");
		/* the target QP reaches regions of its own PD only */
		fmr = ibv_reg_mr(f.pd, page + 4096, 4096,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!fmr)
			die("reg_mr");
		memset(src, 0x55, 256);
		CHECK(write_to(&e, NULL, src, 32, fmr->rkey, (uintptr_t)page + 5000,
			       IBV_SEND_INLINE) == IBV_WC_SUCCESS &&
			      page[5000] == 0x55,
		      "a WRITE on the narrowed QP lands");
		n = query_paths(e.qp, st, 32);
		CHECK(n == 2 && st[0].plane == 0 && st[1].plane == 0 &&
			      st[0].tx_packets + st[1].tx_packets >= 1 && st[0].sport != st[1].sport,
		      "metaroce_query_paths: %d paths, planes %u and %u, %llu packets", n,
		      n > 0 ? st[0].plane : 99, n > 1 ? st[1].plane : 99,
		      n > 1 ? (unsigned long long)(st[0].tx_packets + st[1].tx_packets) : 0ull);
		n = query_paths(f.qp, st, 32);
		CHECK(n >= 2, "the peer QP kept its own paths: %d", n);
		ibv_destroy_qp(e.qp);
		ibv_destroy_qp(f.qp);
		ibv_destroy_cq(e.cq);
		ibv_destroy_cq(f.cq);
		ibv_dereg_mr(fmr);
		ibv_dealloc_pd(e.pd);
		ibv_dealloc_pd(f.pd);
	}

	/* --- inline data stays the application's until completion: batches of max_send_wr
	 * inline WRITEs, each with its own pattern and target, the caller's buffer scribbled
	 * over right after each post */
	{
		enum { BATCHES = 12, PER = 16, LEN = 200 };
		uint8_t *dst = page + 4096 + 256;
		bool ok = true;

		for (unsigned round = 0; round < BATCHES && ok; round++) {
			unsigned done = 0;

			for (unsigned k = 0; k < PER && ok; k++) {
				uint8_t msg[LEN];
				struct ibv_sge sge = { (uintptr_t)msg, LEN, 0 };
				struct ibv_send_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1,
							  .opcode = IBV_WR_RDMA_WRITE,
							  .send_flags = IBV_SEND_SIGNALED |
									IBV_SEND_INLINE,
							  .wr.rdma = { (uintptr_t)dst + k * LEN,
								       mr->rkey } },
						   *bad;

				memset(msg, (int)(round * PER + k + 1), LEN);
				ok = ibv_post_send(c.qp, &wr, &bad) == 0;
				memset(msg, 0xee, LEN);
			}
			while (ok && done < PER) {
				struct ibv_wc wc;

				ok = poll_one(c.cq, &wc) && wc.status == IBV_WC_SUCCESS;
				done++;
			}
			for (unsigned k = 0; k < PER * LEN && ok; k++)
				ok = dst[k] == (uint8_t)(round * PER + k / LEN + 1);
		}
		CHECK(ok, "%u inline WRITEs in batches of max_send_wr, every target byte-exact",
		      BATCHES * PER);
	}

	/* --- query and refusals */
	CHECK(ibv_query_qp(c.qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia) == 0 &&
		      qa.qp_state == IBV_QPS_RTS && qa.cap.max_inline_data >= 64 &&
		      qa.cap.max_send_wr >= 16 && qia.qp_type == IBV_QPT_RC,
	      "ibv_query_qp: RTS, the caps granted");
	errno = 0;
	CHECK(ibv_qp_to_qp_ex(c.qp) == NULL, "ibv_qp_to_qp_ex of a QP made without send_ops_flags");
	{
		struct ibv_cq_init_attr_ex ca = { .cqe = 8,
						  .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };

		errno = 0;
		CHECK(ibv_create_cq_ex(ctx, &ca) == NULL && errno == EOPNOTSUPP,
		      "CQ with completion timestamps refused: EOPNOTSUPP");
	}
	{
		struct ibv_qp_init_attr ud = { .send_cq = c.cq, .recv_cq = c.cq, .qp_type = IBV_QPT_UD,
					       .cap = { 1, 1, 1, 1, 0 } };

		errno = 0;
		CHECK(ibv_create_qp(c.pd, &ud) == NULL && errno == EOPNOTSUPP,
		      "UD QP refused: EOPNOTSUPP");
	}
	{
		/* what this device does not offer fails as rdma-core fails without the provider's
		 * support: EOPNOTSUPP, and nothing of the caller's touched */
		struct ibv_td_init_attr tda = { 0 };
		struct ibv_parent_domain_init_attr pda = { .pd = c.pd, .alloc = NULL };
		struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
							      IBV_XRCD_INIT_ATTR_OFLAGS,
						 .fd = -1, .oflags = 0 };
		struct ibv_alloc_dm_attr dma = { .length = 4096 };
		struct ibv_qp_init_attr raw = { .send_cq = c.cq, .recv_cq = c.cq,
						.qp_type = IBV_QPT_RAW_PACKET,
						.cap = { 1, 1, 1, 1, 0 } };
		struct ibv_qp_attr big = { .qp_state = IBV_QPS_RTS, .max_rd_atomic = 17 };
		void *odp;

		errno = 0;
		CHECK(ibv_alloc_td(ctx, &tda) == NULL && errno == EOPNOTSUPP,
		      "thread domain refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_alloc_parent_domain(ctx, &pda) == NULL && errno == EOPNOTSUPP,
		      "parent domain refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_open_xrcd(ctx, &xa) == NULL && errno == EOPNOTSUPP,
		      "XRC domain refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_alloc_dm(ctx, &dma) == NULL && errno == EOPNOTSUPP,
		      "device memory refused: EOPNOTSUPP");
		errno = 0;
		CHECK(ibv_create_qp(c.pd, &raw) == NULL && errno == EOPNOTSUPP,
		      "raw packet QP refused: EOPNOTSUPP");
		errno = 0;
		odp = malloc(4096);
		CHECK(odp && ibv_reg_mr(c.pd, odp, 4096,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) == NULL &&
			      errno == EOPNOTSUPP,
		      "on-demand paging refused: EOPNOTSUPP");
		free(odp);
		errno = 0;
		CHECK(ibv_alloc_mw(c.pd, IBV_MW_TYPE_1) == NULL && errno == EOPNOTSUPP,
		      "memory window refused: EOPNOTSUPP");
		CHECK(ibv_modify_qp(c.qp, &big, IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL,
		      "max_rd_atomic 17, above max_qp_init_rd_atom: EINVAL");
	}
	CHECK(ibv_destroy_cq(c.cq) == EBUSY, "destroying a CQ a QP uses: EBUSY");

	CHECK(ibv_destroy_qp(c.qp) == 0 && ibv_destroy_qp(d.qp) == 0 && ibv_destroy_qp(a.qp) == 0 &&
		      ibv_destroy_qp(b.qp) == 0 && ibv_destroy_cq(c.cq) == 0 &&
		      ibv_destroy_cq(d.cq) == 0 && ibv_destroy_cq(a.cq) == 0 &&
		      ibv_destroy_cq(b.cq) == 0 && ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(lo) == 0 &&
		      ibv_dereg_mr(src_mr) == 0,
	      "everything destroyed cleanly");
	ibv_dealloc_pd(a.pd);
	ibv_dealloc_pd(b.pd);
	ibv_dealloc_pd(c.pd);
	ibv_dealloc_pd(d.pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(page);
	free(src);
	printf("verbs_api_check: %s\n", failures ? "FAILED" : "OK");
	return failures ? 1 : 0;
}
