/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Loopback QP pairs and the helpers every section of verbs_api_check uses. */
#include <time.h>

#include "api/api.h"
#include "rc_connect.h"

int failures;

void die(const char *what)
{
	fprintf(stderr, "verbs_api_check: %s: %s\n", what, strerror(errno));
	exit(2);
}

struct ibv_context *ctx;
union ibv_gid gid0;

/* A side whose QP lives in pd (its own PD when pd is NULL). */
void make_side_in(struct side *s, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 16, .max_recv_wr = 16,
					       .max_send_sge = 1, .max_recv_sge = 1,
					       .max_inline_data = 64 } };

	s->local = NULL;
	s->pd = pd ? pd : ibv_alloc_pd(ctx);
	s->cq = s->pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	a.send_cq = a.recv_cq = s->cq;
	s->qp = s->cq ? ibv_create_qp(s->pd, &a) : NULL;
	if (!s->qp)
		die("create PD, CQ, QP");
}

void make_side(struct side *s)
{
	make_side_in(s, NULL);
}

void connect_to(struct side *s, uint32_t dest)
{
	const char *step;

	errno = rc_connect(s->qp, dest, &gid0,
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE,
			   1, &step);
	if (errno)
		die(step);
}

/* Waits up to ms milliseconds for one completion on cq. */
bool poll_one_within(struct ibv_cq *cq, struct ibv_wc *wc, long ms)
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
	} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 <
		 ms);
	return false;
}

/* Waits up to 10 s for one completion on cq. */
bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return poll_one_within(cq, wc, 10000);
}

enum ibv_wc_status write_to(struct side *s, struct ibv_mr *src, void *from, uint32_t len,
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
void make_pair(struct side *w, struct side *t, struct ibv_pd *target_pd)
{
	make_side(w);
	make_side_in(t, target_pd);
	connect_to(w, t->qp->qp_num);
	connect_to(t, w->qp->qp_num);
}

void make_pair_with(struct side *w, struct side *t, struct ibv_pd *target_pd, void *local,
		    size_t len)
{
	make_pair(w, t, target_pd);
	w->local = ibv_reg_mr(w->pd, local, len, IBV_ACCESS_LOCAL_WRITE);
	if (!w->local)
		die("reg_mr of the writer's buffer");
}

void drop_pair(struct side *w, struct side *t)
{
	if (w->local)
		ibv_dereg_mr(w->local);
	ibv_destroy_qp(w->qp);
	ibv_destroy_qp(t->qp);
	ibv_destroy_cq(w->cq);
	ibv_destroy_cq(t->cq);
	ibv_dealloc_pd(w->pd); /* the target's PD is the caller's */
}

/* Every byte of [p, p + n) is b. */
bool all(const uint8_t *p, size_t n, uint8_t b)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}
