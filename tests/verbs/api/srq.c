/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared receive queues behind loopback QPs. */
#include <poll.h>

#include "api/api.h"

/* A SEND of len bytes of b from writer s; its completion's status. */
static enum ibv_wc_status send_bytes(struct side *s, struct ibv_mr *mr, uint8_t *buf,
				    uint32_t len, uint8_t b)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = b, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	memset(buf, b, len);
	if (ibv_post_send(s->qp, &wr, &bad))
		return IBV_WC_GENERAL_ERR;
	return poll_one(s->cq, &wc) ? wc.status : IBV_WC_GENERAL_ERR;
}

static int post_srq(struct ibv_srq *srq, struct ibv_mr *mr, uint8_t *bufs, unsigned from,
		    unsigned n)
{
	for (unsigned i = from; i < from + n; i++) {
		struct ibv_sge sge = { (uintptr_t)(bufs + i * 256), 256, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
		int err = ibv_post_srq_recv(srq, &wr, &bad);

		if (err)
			return err;
	}
	return 0;
}

/*
 * A shared receive queue behind two QPs: receives taken in arrival order by whichever QP a
 * SEND reaches, each completion naming its QP, the bytes where that receive pointed; the
 * limit event; an empty SRQ holding a SEND back (RNR) until a receive is posted; refusals.
 */
void shared_receive_queue(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	uint8_t *bufs = aligned_alloc(4096, 64 * 256), *src = malloc(256);
	struct ibv_srq *srq = pd && rcq ? ibv_create_srq(pd, &sa) : NULL;
	struct ibv_mr *mr, *smr[2];
	struct side w[2], t[2];
	struct ibv_srq_attr q;
	unsigned got[2] = { 0, 0 }, want = 0;
	bool ok = true;

	if (!srq || !bufs || !src)
		die("SRQ set-up");
	CHECK(sa.attr.max_wr >= 16 && ibv_query_srq(srq, &q) == 0 && q.max_wr == sa.attr.max_wr &&
		      q.srq_limit == 0,
	      "ibv_create_srq: %u entries, no limit armed", sa.attr.max_wr);
	memset(bufs, 0, 64 * 256);
	mr = ibv_reg_mr(pd, bufs, 64 * 256, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("reg_mr");
	for (unsigned k = 0; k < 2; k++) {
		struct ibv_qp_init_attr a = { .send_cq = rcq, .recv_cq = rcq, .srq = srq,
					      .qp_type = IBV_QPT_RC,
					      .cap = { .max_send_wr = 16, .max_send_sge = 1 } };

		make_side(&w[k]);
		t[k].pd = pd;
		t[k].cq = rcq;
		t[k].qp = ibv_create_qp(pd, &a);
		if (!t[k].qp)
			die("QP on an SRQ");
		connect_to(&w[k], t[k].qp->qp_num);
		connect_to(&t[k], w[k].qp->qp_num);
		smr[k] = ibv_reg_mr(w[k].pd, src, 256, IBV_ACCESS_LOCAL_WRITE);
		if (!smr[k])
			die("reg_mr");
	}
	{
		struct ibv_sge sge = { (uintptr_t)bufs, 256, mr->lkey };
		struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

		CHECK(ibv_post_recv(t[0].qp, &wr, &bad) == EINVAL,
		      "ibv_post_recv on a QP of an SRQ: EINVAL");
	}
	CHECK(post_srq(srq, mr, bufs, 0, 8) == 0, "8 receives posted to the SRQ");
	/* 3 SENDs through each QP, interleaved: each takes the next receive */
	for (unsigned i = 0; i < 6; i++)
		ok = ok && send_bytes(&w[i % 2], smr[i % 2], src, 100 + i, (uint8_t)(0x10 + i)) ==
				   IBV_WC_SUCCESS;
	while (ok && want < 6) {
		struct ibv_wc wc;

		ok = poll_one(rcq, &wc) && wc.status == IBV_WC_SUCCESS &&
		     wc.opcode == IBV_WC_RECV && wc.wr_id < 8;
		if (!ok)
			break;
		/* which SEND landed here: its length and byte say, and its QP must match */
		unsigned i = wc.byte_len - 100, k = wc.qp_num == t[1].qp->qp_num;

		ok = i < 6 && i % 2 == k && all(bufs + wc.wr_id * 256, wc.byte_len,
						(uint8_t)(0x10 + i)) &&
		     (wc.qp_num == t[0].qp->qp_num || wc.qp_num == t[1].qp->qp_num);
		got[k]++;
		want++;
	}
	CHECK(ok && got[0] == 3 && got[1] == 3,
	      "6 SENDs through 2 QPs into one SRQ: each receive named its QP, bytes exact");

	/* the limit: 2 entries left, armed at 3; the next receive taken fires it */
	{
		struct ibv_srq_attr lim = { .srq_limit = 3 };
		struct ibv_async_event ev;
		struct pollfd p = { ctx->async_fd, POLLIN, 0 };

		struct ibv_wc wc;

		CHECK(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == 0, "limit armed at 3");
		ok = send_bytes(&w[0], smr[0], src, 100, 0x20) == IBV_WC_SUCCESS &&
		     poll_one(rcq, &wc) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 100;
		CHECK(ok && poll(&p, 1, 5000) == 1 && ibv_get_async_event(ctx, &ev) == 0 &&
			      ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
		      "IBV_EVENT_SRQ_LIMIT_REACHED once fewer than 3 receives remained");
		ibv_ack_async_event(&ev);
		CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == 0,
		      "... and the limit is disarmed");
		lim.max_wr = 64;
		CHECK(ibv_modify_srq(srq, &lim, IBV_SRQ_MAX_WR) == EINVAL,
		      "resizing an SRQ: EINVAL");
	}
	/* one receive left: the second SEND waits (RNR) until a receive is posted */
	{
		struct ibv_sge sge[2] = { { (uintptr_t)src, 50, smr[1]->lkey },
					  { (uintptr_t)src + 100, 60, smr[1]->lkey } };
		struct ibv_send_wr wr[2] = { { .wr_id = 1, .next = &wr[1], .sg_list = &sge[0],
					       .num_sge = 1, .opcode = IBV_WR_SEND,
					       .send_flags = IBV_SEND_SIGNALED },
					     { .wr_id = 2, .sg_list = &sge[1], .num_sge = 1,
					       .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED } },
				   *bad;
		struct ibv_wc wc;
		unsigned recvs = 0;

		memset(src, 0x31, 256);
		ok = ibv_post_send(w[1].qp, wr, &bad) == 0 && poll_one(rcq, &wc) &&
		     wc.status == IBV_WC_SUCCESS && wc.byte_len == 50;
		recvs += ok;
		ok = ok && !poll_one_within(rcq, &wc, 200) && post_srq(srq, mr, bufs, 8, 1) == 0 &&
		     poll_one(rcq, &wc) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 60 &&
		     wc.wr_id == 8;
		recvs += ok;
		CHECK(ok && recvs == 2 && poll_one(w[1].cq, &wc) && wc.status == IBV_WC_SUCCESS &&
			      poll_one(w[1].cq, &wc) && wc.status == IBV_WC_SUCCESS,
		      "an empty SRQ holds a SEND back until a receive is posted, then it lands");
	}
	CHECK(ibv_destroy_srq(srq) == EBUSY, "ibv_destroy_srq while QPs use it: EBUSY");
	for (unsigned k = 0; k < 2; k++) {
		ibv_destroy_qp(t[k].qp);
		ibv_dereg_mr(smr[k]);
		ibv_destroy_qp(w[k].qp);
		ibv_destroy_cq(w[k].cq);
		ibv_dealloc_pd(w[k].pd);
	}
	CHECK(ibv_destroy_srq(srq) == 0, "... and once they are gone: 0");
	ibv_dereg_mr(mr);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	free(bufs);
	free(src);
}

