/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* verbs_check: a round's operations posted and their completions checked (check/check.h). */

#include "check/check.h"

/* --- ops ----------------------------------------------------------------------------- */

/* Unaligned, and different on the two peers, so a wrong or swapped address shows. */
static size_t requester_offset(const struct round *rd, unsigned int q)
{
	return 1 + (q + rd->seq) % 7;
}

static size_t target_offset(const struct round *rd, unsigned int q)
{
	return 1 + (q + rd->seq + 3) % 7;
}

static size_t responder_offset(const struct side *s, const struct round *rd, unsigned int q)
{
	return op_table[rd->op].remote_address ? target_offset(rd, q) : s->recv_offset[q];
}

/* The top byte 0x80 never equals the odd low byte, so a byte-swapped immediate fails. */
static __be32 imm_value(const struct round *rd, unsigned int q)
{
	return htonl(0x80000001u | (uint32_t)(rd->seq & 0x7fff) << 9 | q << 1);
}

static void post_op(struct side *s, const struct round *rd, unsigned int q)
{
	const struct op_info *info = &op_table[rd->op];
	struct ibv_sge sge = { .addr = s->buf_addr[q] + requester_offset(rd, q),
			       .length = (uint32_t)rd->size, .lkey = s->mrs[q]->lkey };
	struct ibv_send_wr wr = {
		.wr_id = make_wr_id(rd->seq, q, false), .opcode = info->wr_opcode,
		/* No SGE for no bytes: some devices read a zero length as 2 GiB. */
		.sg_list = &sge, .num_sge = rd->size ? 1 : 0,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = info->has_imm ? imm_value(rd, q) : 0,
		.wr.rdma = { .remote_addr = s->remote[q].addr + target_offset(rd, q),
			     .rkey = s->remote[q].rkey },
	};
	struct ibv_qp_ex *qpx = s->qpxs[q];
	struct ibv_send_wr *bad_wr;
	int ret;

	if (!opt.extended) {
		ret = ibv_post_send(s->qps[q], &wr, &bad_wr);
		if (ret)
			round_fail(rd, q, "ibv_post_send: %s", verbs_strerror(ret));
		return;
	}
	ibv_wr_start(qpx);
	qpx->wr_id = wr.wr_id;
	qpx->wr_flags = wr.send_flags;
	switch (rd->op) {
	case OP_WRITE:
		ibv_wr_rdma_write(qpx, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
		break;
	case OP_WRITE_IMM:
		ibv_wr_rdma_write_imm(qpx, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr, wr.imm_data);
		break;
	case OP_SEND:
		ibv_wr_send(qpx);
		break;
	case OP_SEND_IMM:
		ibv_wr_send_imm(qpx, wr.imm_data);
		break;
	case OP_READ:
		ibv_wr_rdma_read(qpx, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
		break;
	}
	if (rd->size)
		ibv_wr_set_sge(qpx, sge.lkey, sge.addr, sge.length);
	else
		ibv_wr_set_sge_list(qpx, 0, NULL);
	ret = ibv_wr_complete(qpx);
	if (ret)
		round_fail(rd, q, "ibv_wr_complete: %s", verbs_strerror(ret));
}

/* Returns the QP index the completion belongs to, once every field has been checked. */
static unsigned int check_completion(const struct side *s, const struct round *rd,
				     const struct ibv_wc *wc, bool receive)
{
	const struct op_info *info = &op_table[rd->op];
	const char *kind = receive ? "receive" : "send";
	unsigned int q = (unsigned int)(wc->wr_id & 0xffff);
	enum ibv_wc_opcode opcode = receive ? info->receive_opcode : info->send_opcode;
	bool with_imm = wc->wc_flags & IBV_WC_WITH_IMM;
	uint64_t wr_id;

	if (wc->status != IBV_WC_SUCCESS)
		round_fail(rd, q, "%s completion failed: %s (status %d, opcode %d, wr_id 0x%" PRIx64
			   ", qp_num 0x%x, vendor_err 0x%x)", kind, ibv_wc_status_str(wc->status),
			   wc->status, wc->opcode, wc->wr_id, wc->qp_num, wc->vendor_err);
	if (q >= opt.plan.num_qps)
		die("%s %zu B: %s completion with unknown wr_id 0x%" PRIx64 " (qp_num 0x%x)",
		    op_label(rd), rd->size, kind, wc->wr_id, wc->qp_num);
	wr_id = receive ? s->recv_wr_id[q] : make_wr_id(rd->seq, q, false);
	if (wc->wr_id != wr_id)
		round_fail(rd, q, "%s completion has wr_id 0x%" PRIx64 ", expected 0x%" PRIx64,
			   kind, wc->wr_id, wr_id);
	if (wc->qp_num != s->qps[q]->qp_num)
		round_fail(rd, q, "%s completion has qp_num 0x%x, expected 0x%x", kind,
			   wc->qp_num, s->qps[q]->qp_num);
	if (wc->opcode != opcode)
		round_fail(rd, q, "%s completion has opcode %d, expected %d", kind, wc->opcode,
			   opcode);
	if (!receive)
		return q;
	if (wc->byte_len != rd->size)
		round_fail(rd, q, "receive completion has byte_len %u", wc->byte_len);
	if (with_imm != info->has_imm)
		round_fail(rd, q, "receive completion %s IBV_WC_WITH_IMM",
			   with_imm ? "has" : "lacks");
	if (info->has_imm && wc->imm_data != imm_value(rd, q))
		round_fail(rd, q, "imm_data is htonl(0x%08x), expected htonl(0x%08x)",
			   ntohl(wc->imm_data), ntohl(imm_value(rd, q)));
	return q;
}

static void read_cq_ex(struct ibv_cq_ex *cq, struct ibv_wc *wc)
{
	*wc = (struct ibv_wc){ .wr_id = cq->wr_id, .status = cq->status,
			       .opcode = ibv_wc_read_opcode(cq), .qp_num = ibv_wc_read_qp_num(cq),
			       .vendor_err = ibv_wc_read_vendor_err(cq) };
	if (wc->status != IBV_WC_SUCCESS)
		return;
	wc->byte_len = ibv_wc_read_byte_len(cq);
	wc->wc_flags = ibv_wc_read_wc_flags(cq);
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		wc->imm_data = ibv_wc_read_imm_data(cq);
}

static int poll_cq(const struct side *s, const struct completion_queue *cq, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int n = 0, ret;

	if (!cq->cq_ex) {
		n = ibv_poll_cq(cq->cq, CQ_BATCH, wc);
		if (n < 0)
			die("%s: ibv_poll_cq failed (%d)", s->name, n);
		return n;
	}
	ret = ibv_start_poll(cq->cq_ex, &attr);
	if (ret == ENOENT)
		return 0;
	if (ret)
		die("%s: ibv_start_poll: %s", s->name, verbs_strerror(ret));
	do
		read_cq_ex(cq->cq_ex, &wc[n++]);
	while (n < CQ_BATCH && !(ret = ibv_next_poll(cq->cq_ex)));
	ibv_end_poll(cq->cq_ex);
	if (ret && ret != ENOENT)
		die("%s: ibv_next_poll: %s", s->name, verbs_strerror(ret));
	return n;
}

/*
 * Sleeps until the channel reports a CQ or the deadline passes. A call with the CQ unarmed
 * only arms it, because a completion that arrived before arming raises no event: the caller
 * polls once more before sleeping. Both CQs of a side share the channel, so an event for
 * the other one is acked and left to the next poll of that CQ.
 */
static void wait_for_event(const struct side *s, const struct completion_queue *cq,
			   bool *armed, double deadline)
{
	struct pollfd pfd = { .fd = s->channel->fd, .events = POLLIN };
	double left_ms = (deadline - now_seconds()) * 1000;
	struct ibv_cq *event_cq;
	void *event_context;
	int ret;

	if (!*armed) {
		ret = ibv_req_notify_cq(cq->cq, 0);
		if (ret)
			die("%s: ibv_req_notify_cq: %s", s->name, verbs_strerror(ret));
		*armed = true;
		return;
	}
	ret = poll(&pfd, 1, left_ms > 0 ? (int)left_ms + 1 : 0);
	if (ret < 0 && errno != EINTR)
		die("%s: poll on the completion channel: %s", s->name, strerror(errno));
	if (ret <= 0)
		return;
	if (ibv_get_cq_event(s->channel, &event_cq, &event_context))
		die("%s: ibv_get_cq_event: %s", s->name, strerror(errno));
	if (event_cq != s->send_cq.cq && event_cq != s->recv_cq.cq)
		die("%s: completion event for a CQ this side never created", s->name);
	/* Unacked events would make destroying the CQ hang. */
	ibv_ack_cq_events(event_cq, 1);
	if (event_cq == cq->cq)
		*armed = false;
}

/* Completion order across QPs is the provider's business: each QP must report exactly once. */
static void reap_completions(const struct side *s, const struct round *rd, bool receive)
{
	const struct completion_queue *cq = receive ? &s->recv_cq : &s->send_cq;
	const char *kind = receive ? "receive" : "send";
	double deadline = now_seconds() + opt.timeout_sec;
	unsigned int remaining = opt.plan.num_qps, q;
	bool reported[MAX_QPS] = { false }, armed = false;
	struct ibv_wc wc[CQ_BATCH];
	int i, n;

	while (remaining) {
		n = poll_cq(s, cq, wc);
		for (i = 0; i < n; i++) {
			q = check_completion(s, rd, &wc[i], receive);
			if (reported[q])
				round_fail(rd, q, "a second %s completion", kind);
			reported[q] = true;
			remaining--;
		}
		if (n) {
			deadline = now_seconds() + opt.timeout_sec;
			continue;
		}
		if (now_seconds() >= deadline) {
			for (q = 0; reported[q]; q++)
				;
			round_fail(rd, q, "no %s completion within %d s", kind, opt.timeout_sec);
		}
		if (opt.events)
			wait_for_event(s, cq, &armed, deadline);
	}
}

/*
 * One op at one size on every QP. Either side may be NULL: it is then the peer process, and
 * the two syncs stand in for what it does. Returns the seconds the transfer took.
 */
static double run_round(struct session *ss, const struct round *rd)
{
	struct side *requester = rd->reverse ? ss->server : ss->client;
	struct side *responder = rd->reverse ? ss->client : ss->server;
	const struct op_info *info = &op_table[rd->op];
	bool to_requester = rd->op == OP_READ;	/* which way the bytes flow */
	unsigned int q, num_qps = opt.plan.num_qps;
	double start, elapsed;

	for (q = 0; responder && q < num_qps; q++)
		prepare(responder->bufs[q] + responder_offset(responder, rd, q), rd->size,
			pattern_seed(rd, q), !to_requester);
	for (q = 0; requester && q < num_qps; q++)
		prepare(requester->bufs[q] + requester_offset(rd, q), rd->size,
			pattern_seed(rd, q), to_requester);
	sync_peer(ss, "the start of a round");
	start = now_seconds();
	if (requester) {
		for (q = 0; q < num_qps; q++)
			post_op(requester, rd, q);
		reap_completions(requester, rd, false);
		for (q = 0; to_requester && q < num_qps; q++)
			verify(ss, requester, rd, q, requester_offset(rd, q));
	}
	if (responder && info->consumes_receive)
		reap_completions(responder, rd, true);
	/* The requester's completions mean the bytes are placed at the responder. */
	sync_peer(ss, "the end of a round");
	elapsed = now_seconds() - start;
	for (q = 0; responder && !to_requester && q < num_qps; q++)
		verify(ss, responder, rd, q, responder_offset(responder, rd, q));
	/* Reposted only now: the new receive may overlap the bytes just verified. */
	for (q = 0; responder && info->consumes_receive && q < num_qps; q++)
		post_receive(responder, q);
	ss->operations += num_qps;
	if (opt.verbose)
		printf("  %-9s %10zu B x %u QPs  %.3f ms\n", op_label(rd), rd->size, num_qps,
		       elapsed * 1e3);
	return elapsed;
}

void run_op(struct session *ss, unsigned long iteration, enum op op, bool reverse)
{
	struct round rd = { .op = op, .reverse = reverse, .iteration = iteration };
	double seconds = 0;
	uint64_t bytes = 0;
	unsigned int i;

	for (i = 0; i < opt.plan.num_sizes; i++) {
		rd.size = opt.plan.sizes[i];
		rd.seq = ss->rounds++;
		seconds += run_round(ss, &rd);
		bytes += (uint64_t)rd.size * opt.plan.num_qps;
	}
	if (opt.plan.iterations != 1)
		printf("iteration %lu: ", iteration + 1);
	printf("%-9s %2u sizes x %3u QPs  OK  %9.1f MB/s\n", op_label(&rd), opt.plan.num_sizes,
	       opt.plan.num_qps, seconds > 0 ? (double)bytes / seconds / 1e6 : 0.0);
}
