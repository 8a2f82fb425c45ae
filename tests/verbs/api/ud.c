/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* UD QPs and address handles over loopback (SPEC 4.8). */
#include <arpa/inet.h>
#include <endian.h>

#include "api/api.h"

#define QKEY 0x11111111u
#define MSG 256
#define SLOT (40 + MSG) /* a receive: the GRH, then the message */

struct ud_side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* 8 receive slots, then 8 send slots */
};

static int ud_to(struct ibv_qp *qp, enum ibv_qp_state state, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = state, .port_num = 1, .qkey = qkey, .sq_psn = 7 };

	switch (state) {
	case IBV_QPS_INIT:
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						     IBV_QP_QKEY);
	case IBV_QPS_RTS:
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	default:
		return ibv_modify_qp(qp, &a, IBV_QP_STATE);
	}
}

static void ud_side(struct ud_side *s, struct ibv_srq *srq, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_UD, .srq = srq,
				      .cap = { .max_send_wr = 16, .max_recv_wr = 16,
					       .max_send_sge = 2, .max_recv_sge = 2,
					       .max_inline_data = 64 } };

	memset(s, 0, sizeof(*s));
	s->pd = pd ? pd : ibv_alloc_pd(ctx);
	s->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, 16 * SLOT);
	if (!s->pd || !s->cq || !s->buf)
		die("UD side");
	memset(s->buf, 0, 16 * SLOT);
	s->mr = ibv_reg_mr(s->pd, s->buf, 16 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	a.send_cq = a.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &a);
	if (!s->mr || !s->qp || ud_to(s->qp, IBV_QPS_INIT, QKEY) || ud_to(s->qp, IBV_QPS_RTR, 0) ||
	    ud_to(s->qp, IBV_QPS_RTS, 0))
		die("UD QP to RTS");
}

static void ud_drop_side(struct ud_side *s, bool own_pd)
{
	ibv_destroy_qp(s->qp);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	if (own_pd)
		ibv_dealloc_pd(s->pd);
	free(s->buf);
}

/* Receive slot i, `len` bytes of it posted. */
static int post_slot(struct ud_side *s, unsigned i, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + i * SLOT), len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

/* A datagram of len bytes of b (from send slot 8 + k) to qpn through ah; 0 or an errno. */
static int send_dg(struct ud_side *s, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey,
		   uint32_t len, uint8_t b, bool imm)
{
	uint8_t *p = s->buf + 8 * SLOT;
	struct ibv_sge sge = { (uintptr_t)p, len, s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = b, .sg_list = &sge, .num_sge = 1,
				  .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | (imm ? IBV_SEND_SOLICITED : 0),
				  .imm_data = htobe32(0xabc00000u | b),
				  .wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey } },
			   *bad;
	struct ibv_wc wc;
	int err;

	memset(p, b, len);
	err = ibv_post_send(s->qp, &wr, &bad);
	if (err)
		return err;
	if (!poll_one(s->cq, &wc) || wc.wr_id != b)
		return EIO;
	return wc.status == IBV_WC_SUCCESS ? 0 : 1000 + (int)wc.status;
}

/* The next receive completion of s is slot `slot`, holding len bytes of b from src_qp. */
static bool received(struct ud_side *s, unsigned slot, uint32_t len, uint8_t b, uint32_t src_qp,
		     bool imm, struct ibv_wc *wc)
{
	const uint8_t *grh = s->buf + slot * SLOT;

	if (!poll_one(s->cq, wc))
		return false;
	return wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV && wc->wr_id == slot &&
	       wc->byte_len == 40 + len && wc->src_qp == src_qp && wc->qp_num == s->qp->qp_num &&
	       wc->sl == 0xa && /* a RoCEv2 IPv4 frame, as mlx5 reports it [SPEC R-425] */
	       (wc->wc_flags & IBV_WC_GRH) && !!(wc->wc_flags & IBV_WC_WITH_IMM) == imm &&
	       (!imm || wc->imm_data == htobe32(0xabc00000u | b)) && all(grh + 40, len, b) &&
	       /* the GRH as RoCEv2 gives it for IPv4: the IPv4 header, from our own address
		* to it on the plane it took */
	       all(grh, 20, 0) && grh[20] == 0x45 && grh[29] == 17 && !memcmp(grh + 32, grh + 36, 4);
}

void unreliable_datagrams(void)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .dgid = gid0 } };
	struct ud_side a, b;
	struct ibv_ah *to_b, *back;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	int err;

	ud_side(&a, NULL, NULL);
	ud_side(&b, NULL, NULL);
	to_b = ibv_create_ah(a.pd, &aa);
	CHECK(to_b != NULL, "ibv_create_ah to our own GID");
	if (!to_b)
		die("ibv_create_ah");
	CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_QKEY | IBV_QP_STATE, &qia) == 0 &&
		      qia.qp_type == IBV_QPT_UD && qa.qkey == QKEY && qa.qp_state == IBV_QPS_RTS &&
		      qa.sq_psn == 7,
	      "ibv_query_qp: a UD QP at RTS, qkey 0x%x, sq_psn %u", qa.qkey, qa.sq_psn);

	/* datagrams land behind the GRH, each naming its sender */
	for (unsigned i = 0; i < 8; i++)
		post_slot(&b, i, SLOT);
	err = send_dg(&a, to_b, b.qp->qp_num, QKEY, MSG, 0x31, false);
	CHECK(err == 0 && received(&b, 0, MSG, 0x31, a.qp->qp_num, false, &wc),
	      "UD SEND: %u bytes behind a 40-byte IPv4 GRH, src_qp, IBV_WC_GRH (send %d)", MSG,
	      err);
	err = send_dg(&a, to_b, b.qp->qp_num, QKEY, 1, 0x32, true);
	CHECK(err == 0 && received(&b, 1, 1, 0x32, a.qp->qp_num, true, &wc),
	      "UD SEND with immediate, 1 byte");
	/* the answer goes back where the GRH says it came from */
	back = ibv_create_ah_from_wc(b.pd, &wc, (struct ibv_grh *)b.buf + 0, 1);
	CHECK(back != NULL, "ibv_create_ah_from_wc on the received GRH");
	post_slot(&a, 0, SLOT);
	err = back ? send_dg(&b, back, wc.src_qp, QKEY, 17, 0x33, false) : -1;
	CHECK(err == 0 && received(&a, 0, 17, 0x33, b.qp->qp_num, false, &wc),
	      "the reply through that address handle reaches the sender");
	{
		struct ibv_ah_attr from;

		union ibv_gid ours;

		CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)a.buf, &from) == 0 &&
			      from.is_global &&
			      ibv_query_gid(ctx, 1, from.grh.sgid_index, &ours) == 0 &&
			      !memcmp(from.grh.dgid.raw, ours.raw, 16),
		      "ibv_init_ah_from_wc: the sender's GID, on the plane it came by (GID %u)",
		      from.grh.sgid_index);
		wc.wc_flags &= ~IBV_WC_GRH;
		errno = 0;
		CHECK(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)a.buf, &from) == -1 &&
			      errno == EINVAL,
		      "ibv_init_ah_from_wc without a GRH: -1, EINVAL");
	}

	/* refused datagrams consume no receive: the next good one takes slot 2 */
	err = send_dg(&a, to_b, b.qp->qp_num, QKEY + 1, MSG, 0x34, false);
	CHECK(err == 0, "a datagram with the wrong qkey completes at its sender (unreliable)");
	err = send_dg(&a, to_b, b.qp->qp_num, 0x80000000u, 5, 0x35, false);
	CHECK(err == 0 && received(&b, 2, 5, 0x35, a.qp->qp_num, false, &wc),
	      "wrong qkey dropped; remote qkey bit 31 sends the QP's own [R-426]");
	ibv_destroy_ah(back);

	/* a receive too short for GRH and message stays posted for the next datagram */
	{
		struct ud_side c;

		ud_side(&c, NULL, NULL);
		post_slot(&c, 0, 40 + 100);
		err = send_dg(&a, to_b, c.qp->qp_num, QKEY, 101, 0x36, false);
		err |= send_dg(&a, to_b, c.qp->qp_num, QKEY, 100, 0x37, false);
		CHECK(err == 0 && received(&c, 0, 100, 0x37, a.qp->qp_num, false, &wc),
		      "101 bytes dropped at a 140-byte receive, which the next 100 bytes take");
		ud_drop_side(&c, true);
	}

	/* a UD QP whose receives come from a shared receive queue */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(b.pd, &sa);
		struct ibv_sge sge = { (uintptr_t)(b.buf + 7 * SLOT), SLOT, b.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *badr;
		struct ud_side s;

		if (!srq)
			die("SRQ for a UD QP");
		ud_side(&s, srq, b.pd);
		err = ibv_post_srq_recv(srq, &rw, &badr) ? -1 : 0;
		err = err ? err : send_dg(&a, to_b, s.qp->qp_num, QKEY, 99, 0x3a, false);
		CHECK(err == 0 && poll_one(s.cq, &wc) && wc.wr_id == 7 && wc.byte_len == 40 + 99 &&
			      wc.src_qp == a.qp->qp_num && wc.qp_num == s.qp->qp_num &&
			      all(b.buf + 7 * SLOT + 40, 99, 0x3a),
		      "a UD QP on an SRQ: the datagram lands in the SRQ's receive");
		ud_drop_side(&s, false);
		ibv_destroy_srq(srq);
	}

	/* the extended API: ibv_wr_send with ibv_wr_set_ud_addr, inline data */
	{
		struct ibv_qp_init_attr_ex x = {
			.qp_type = IBV_QPT_UD, .send_cq = a.cq, .recv_cq = a.cq, .pd = a.pd,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1, .max_inline_data = 64 },
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM
		};
		struct ibv_qp *q = ibv_create_qp_ex(ctx, &x);
		struct ibv_qp_ex *qx = q ? ibv_qp_to_qp_ex(q) : NULL;
		char text[] = "through ibv_wr_set_ud_addr";

		if (!qx || ud_to(q, IBV_QPS_INIT, QKEY) || ud_to(q, IBV_QPS_RTR, 0) ||
		    ud_to(q, IBV_QPS_RTS, 0))
			die("extended UD QP");
		ibv_wr_start(qx);
		qx->wr_id = 0x38;
		qx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		ibv_wr_send(qx);
		ibv_wr_set_ud_addr(qx, to_b, b.qp->qp_num, QKEY);
		ibv_wr_set_inline_data(qx, text, sizeof(text));
		err = ibv_wr_complete(qx);
		CHECK(err == 0 && poll_one(a.cq, &wc) && wc.wr_id == 0x38 &&
			      wc.status == IBV_WC_SUCCESS && poll_one(b.cq, &wc) && wc.wr_id == 3 &&
			      wc.byte_len == 40 + sizeof(text) && wc.src_qp == q->qp_num &&
			      !memcmp(b.buf + 3 * SLOT + 40, text, sizeof(text)),
		      "ibv_wr_send + ibv_wr_set_ud_addr + inline data");
		ibv_wr_start(qx);
		ibv_wr_send(qx); /* no address */
		ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 8);
		CHECK(ibv_wr_complete(qx) == EINVAL, "ibv_wr_send without ibv_wr_set_ud_addr: EINVAL");
		errno = 0;
		x.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
		CHECK(ibv_create_qp_ex(ctx, &x) == NULL && errno == EOPNOTSUPP,
		      "a UD QP with RDMA WRITE among its send_ops_flags: EOPNOTSUPP");
		ibv_destroy_qp(q);
	}

	/* refusals at the verbs boundary */
	{
		struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD, .send_cq = a.cq, .recv_cq = a.cq,
					       .cap = { 1, 1, 1, 1, 0 } };
		struct ibv_qp *q = ibv_create_qp(a.pd, &ia);
		struct ibv_qp_attr bad = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
		struct ibv_sge sge = { (uintptr_t)a.buf, 8, a.mr->lkey };
		struct ibv_send_wr w = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .wr.ud = { .ah = to_b, .remote_qpn = 1, .remote_qkey = 0 } },
				   *badw;
		struct ibv_ah_attr local = { .is_global = 0, .port_num = 1 };

		CHECK(q && ibv_modify_qp(q, &bad, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) ==
				   EINVAL,
		      "UD RESET to INIT without a qkey: EINVAL");
		CHECK(q && ibv_modify_qp(q, &bad, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							  IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS) == EINVAL,
		      "UD with RC attributes (access flags): EINVAL");
		CHECK(q && ibv_post_send(q, &w, &badw) == EINVAL, "UD send before RTS: EINVAL");
		w.opcode = IBV_WR_RDMA_WRITE;
		CHECK(ibv_post_send(a.qp, &w, &badw) == EINVAL && badw == &w,
		      "RDMA WRITE on a UD QP: EINVAL");
		w.opcode = IBV_WR_SEND;
		w.wr.ud.ah = NULL;
		CHECK(ibv_post_send(a.qp, &w, &badw) == EINVAL, "UD send without an AH: EINVAL");
		errno = 0;
		CHECK(ibv_create_ah(a.pd, &local) == NULL && errno == EINVAL,
		      "ibv_create_ah without a GRH (RoCE addresses by GID): EINVAL");
		local.is_global = 1;
		inet_pton(AF_INET6, "::ffff:192.0.2.1", local.grh.dgid.raw);
		errno = 0;
		CHECK(ibv_create_ah(a.pd, &local) == NULL && errno == EHOSTUNREACH,
		      "ibv_create_ah to an address outside the daemon's peers: EHOSTUNREACH");
		if (q)
			ibv_destroy_qp(q);
	}

	/* a message longer than the path takes: LOC_LEN_ERR, the QP in error */
	{
		uint8_t *big = malloc(65536);
		struct ibv_mr *bmr = big ? ibv_reg_mr(a.pd, big, 65536, IBV_ACCESS_LOCAL_WRITE) : NULL;
		struct ibv_sge sge = { (uintptr_t)big, 16384, bmr ? bmr->lkey : 0 };
		struct ibv_send_wr w = { .wr_id = 0x39, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					 .wr.ud = { .ah = to_b, .remote_qpn = b.qp->qp_num,
						    .remote_qkey = QKEY } },
				   *badw;

		if (!bmr)
			die("big buffer");
		CHECK(ibv_post_send(a.qp, &w, &badw) == 0 && poll_one(a.cq, &wc) &&
			      wc.wr_id == 0x39 && wc.status == IBV_WC_LOC_LEN_ERR,
		      "16 KiB datagram: IBV_WC_LOC_LEN_ERR (%s)", ibv_wc_status_str(wc.status));
		CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_ERR,
		      "and the QP is in ERR");
		ibv_dereg_mr(bmr);
		free(big);
	}
	ibv_destroy_ah(to_b);
	ud_drop_side(&a, true);
	ud_drop_side(&b, true);
}
