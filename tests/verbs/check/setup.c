/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* verbs_check: a side's verbs objects, made, connected and torn down, and the data patterns
 * (check/check.h). */

#include "check/check.h"

/* --- verbs setup --------------------------------------------------------------------- */

void side_open(struct side *s, struct ibv_device *dev, const char *name)
{
	static const union ibv_gid no_gid;
	const char *dev_name = ibv_get_device_name(dev);
	struct ibv_port_attr port_attr;
	int ret;

	s->name = name;
	s->ctx = ibv_open_device(dev);
	if (!s->ctx)
		die("cannot open %s: %s", dev_name, strerror(errno));
	ret = ibv_query_port(s->ctx, opt.ib_port, &port_attr);
	if (ret)
		die("%s port %u: %s", dev_name, opt.ib_port, verbs_strerror(ret));
	s->max_msg_sz = port_attr.max_msg_sz;
	errno = 0;
	ret = ibv_query_gid(s->ctx, opt.ib_port, opt.gid_idx, &s->gid);
	if (ret)
		die("%s port %u GID index %u: %s", dev_name, opt.ib_port, opt.gid_idx,
		    verbs_strerror(ret));
	if (!memcmp(&s->gid, &no_gid, sizeof(s->gid)))
		die("%s port %u has no GID at index %u (RoCE needs an IP address on the netdev)",
		    dev_name, opt.ib_port, opt.gid_idx);
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		die("%s: ibv_alloc_pd: %s", name, strerror(errno));
	if (opt.events) {
		s->channel = ibv_create_comp_channel(s->ctx);
		if (!s->channel)
			die("%s: ibv_create_comp_channel: %s", name, strerror(errno));
	}
}

/* Too small a limit would otherwise show up as a failed registration or a mangled message. */
static void check_device(const struct side *s, size_t max_size)
{
	struct ibv_device_attr_ex attr;
	int ret;

	if (opt.extended)
		ret = ibv_query_device_ex(s->ctx, NULL, &attr);
	else
		ret = ibv_query_device(s->ctx, &attr.orig_attr);
	if (ret)
		die("%s: querying the device: %s", s->name, verbs_strerror(ret));
	if (attr.orig_attr.max_mr_size < s->buf_size || s->max_msg_sz < max_size)
		die("%s: the device takes MRs up to %" PRIu64 " B and messages up to %u B; the "
		    "test needs %zu B and %zu B", s->name, (uint64_t)attr.orig_attr.max_mr_size,
		    s->max_msg_sz, s->buf_size, max_size);
}

static void create_cq(struct side *s, struct completion_queue *cq)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = opt.plan.num_qps,
		.channel = s->channel,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM,
	};

	if (opt.extended) {
		cq->cq_ex = ibv_create_cq_ex(s->ctx, &attr);
		cq->cq = cq->cq_ex ? ibv_cq_ex_to_cq(cq->cq_ex) : NULL;
	} else {
		cq->cq = ibv_create_cq(s->ctx, (int)attr.cqe, NULL, s->channel, 0);
	}
	if (!cq->cq)
		die("%s: cannot create a CQ: %s", s->name, strerror(errno));
}

static void create_buffer(struct side *s, unsigned int q)
{
	uint8_t *buf = malloc(s->buf_size);
	struct ibv_mr *mr;
	uint64_t iova = (uintptr_t)buf;

	if (!buf)
		die("%s: cannot allocate %zu B for QP %u", s->name, s->buf_size, q);
	if (opt.extended) {
		/*
		 * An iova unlike the virtual address proves the provider translates through
		 * the MR, for local SGEs as well as for the peer. The low 21 bits stay, so
		 * the offset within any page up to 2 MiB is unchanged, as devices require.
		 */
		iova = (uint64_t)(q + 1) << 40 | (iova & ((1u << 21) - 1));
		mr = ibv_reg_mr_iova2(s->pd, buf, s->buf_size, iova, BUF_ACCESS);
	} else {
		mr = ibv_reg_mr(s->pd, buf, s->buf_size, BUF_ACCESS);
	}
	if (!mr)
		die("%s: cannot register %zu B for QP %u: %s", s->name, s->buf_size, q,
		    strerror(errno));
	s->bufs[q] = buf;
	s->mrs[q] = mr;
	s->buf_addr[q] = iova;
}

/* wr_id = sequence << 17 | receive << 16 | QP index: unique, and it names its QP. */
uint64_t make_wr_id(uint64_t seq, unsigned int q, bool receive)
{
	return seq << 17 | (uint64_t)receive << 16 | q;
}

/* One receive is always posted per QP, at an unaligned offset that moves each time. */
void post_receive(struct side *s, unsigned int q)
{
	size_t offset = 1 + (q + s->recvs_posted[q]) % 7;
	struct ibv_sge sge = { .addr = s->buf_addr[q] + offset, .lkey = s->mrs[q]->lkey,
			       .length = (uint32_t)(s->buf_size - offset) };
	struct ibv_recv_wr wr = { .wr_id = make_wr_id(s->recvs_posted[q], q, true),
				  .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad_wr;
	int ret;

	ret = ibv_post_recv(s->qps[q], &wr, &bad_wr);
	if (ret)
		die("%s: ibv_post_recv on QP %u: %s", s->name, q, verbs_strerror(ret));
	s->recv_offset[q] = offset;
	s->recv_wr_id[q] = wr.wr_id;
	s->recvs_posted[q]++;
}

static void create_qp(struct side *s, unsigned int q)
{
	struct ibv_qp_init_attr_ex init = {
		.send_cq = s->send_cq.cq, .recv_cq = s->recv_cq.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QUEUE_DEPTH, .max_recv_wr = QUEUE_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		/* With the PD alone, ibv_create_qp_ex is plain ibv_create_qp. */
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = s->pd,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = opt.ib_port,
				    .qp_access_flags = BUF_ACCESS };
	unsigned int op;
	uint32_t psn;
	int ret;

	if (opt.extended) {
		init.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		for (op = 0; op < OP_COUNT; op++)
			if (opt.plan.ops & 1u << op)
				init.send_ops_flags |= op_table[op].send_ops_flag;
	}
	s->qps[q] = ibv_create_qp_ex(s->ctx, &init);
	if (!s->qps[q])
		die("%s: cannot create QP %u: %s", s->name, q, strerror(errno));
	if (opt.extended) {
		s->qpxs[q] = ibv_qp_to_qp_ex(s->qps[q]);
		if (!s->qpxs[q])
			die("%s: ibv_qp_to_qp_ex gave nothing for QP %u", s->name, q);
	}
	ret = ibv_modify_qp(s->qps[q], &attr,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		die("%s: QP %u to INIT: %s", s->name, q, verbs_strerror(ret));
	if (getrandom(&psn, sizeof(psn), 0) != (ssize_t)sizeof(psn))
		die("getrandom: %s", strerror(errno));
	s->psns[q] = psn & 0xffffff;
}

void side_create(struct side *s)
{
	size_t max_size = 0;
	unsigned int i, q;

	for (i = 0; i < opt.plan.num_sizes; i++)
		if (opt.plan.sizes[i] > max_size)
			max_size = opt.plan.sizes[i];
	s->buf_size = max_size + BUF_SLACK;
	check_device(s, max_size);
	create_cq(s, &s->send_cq);
	create_cq(s, &s->recv_cq);
	for (q = 0; q < opt.plan.num_qps; q++) {
		create_buffer(s, q);
		create_qp(s, q);
		post_receive(s, q);
	}
}

void connect_qp(struct side *s, unsigned int q)
{
	const struct qp_info *peer = &s->remote[q];
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qpn, .rq_psn = peer->psn,
		.max_dest_rd_atomic = RD_ATOMIC, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = opt.ib_port,
			.grh = { .dgid = peer->gid, .sgid_index = opt.gid_idx, .hop_limit = 64 },
		},
	};
	int ret;

	ret = ibv_modify_qp(s->qps[q], &attr,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		die("%s: QP %u to RTR: %s", s->name, q, verbs_strerror(ret));
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				     .rnr_retry = 7, .sq_psn = s->psns[q],
				     .max_rd_atomic = RD_ATOMIC };
	ret = ibv_modify_qp(s->qps[q], &attr,
			    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		die("%s: QP %u to RTS: %s", s->name, q, verbs_strerror(ret));
	if (opt.verbose)
		printf("  %s QP %u: qpn 0x%06x psn 0x%06x -> qpn 0x%06x psn 0x%06x "
		       "addr 0x%" PRIx64 " rkey 0x%x\n", s->name, q, s->qps[q]->qp_num,
		       s->psns[q], peer->qpn, peer->psn, peer->addr, peer->rkey);
}

/* Every teardown call is checked: tearing down is part of what the library must get right. */
static void check_teardown(const struct side *s, int ret, const char *call)
{
	if (ret)
		die("%s: %s: %s", s->name, call, verbs_strerror(ret));
}

void side_destroy(struct side *s)
{
	unsigned int q;

	for (q = 0; q < opt.plan.num_qps; q++)
		check_teardown(s, ibv_destroy_qp(s->qps[q]), "ibv_destroy_qp");
	check_teardown(s, ibv_destroy_cq(s->send_cq.cq), "ibv_destroy_cq");
	check_teardown(s, ibv_destroy_cq(s->recv_cq.cq), "ibv_destroy_cq");
	for (q = 0; q < opt.plan.num_qps; q++) {
		check_teardown(s, ibv_dereg_mr(s->mrs[q]), "ibv_dereg_mr");
		free(s->bufs[q]);
	}
	check_teardown(s, ibv_dealloc_pd(s->pd), "ibv_dealloc_pd");
	if (s->channel)
		check_teardown(s, ibv_destroy_comp_channel(s->channel), "ibv_destroy_comp_channel");
	errno = 0;
	check_teardown(s, ibv_close_device(s->ctx), "ibv_close_device");
}

/* --- patterns and verification ------------------------------------------------------- */

/* splitmix64: neighbouring rounds and QPs get unrelated patterns. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t pattern_seed(const struct round *rd, unsigned int q)
{
	uint64_t seed = mix64(rd->iteration);

	seed = mix64(seed ^ ((uint64_t)rd->op << 1 | rd->reverse));
	seed = mix64(seed ^ rd->size);
	return mix64(seed ^ q) | 1;	/* xorshift never leaves zero */
}

struct pattern {
	uint64_t state, word;
	unsigned int left;
};

/* xorshift64, eight bytes a step, low byte first whatever the host's byte order. */
static uint8_t pattern_next(struct pattern *p)
{
	uint8_t byte;

	if (!p->left) {
		p->state ^= p->state << 13;
		p->state ^= p->state >> 7;
		p->state ^= p->state << 17;
		p->word = p->state;
		p->left = 8;
	}
	byte = (uint8_t)p->word;
	p->word >>= 8;
	p->left--;
	return byte;
}

/*
 * A source is framed by bytes that must never arrive; a destination by guards that must
 * survive, and it starts as the inverted pattern, which differs from the expected one in
 * every byte, so no byte passes unwritten.
 */
void prepare(uint8_t *msg, size_t size, uint64_t seed, bool destination)
{
	struct pattern p = { .state = seed };
	uint8_t flip = destination ? 0xff : 0;
	size_t i;

	msg[-1] = msg[size] = destination ? GUARD_BYTE : SOURCE_EDGE;
	for (i = 0; i < size; i++)
		msg[i] = pattern_next(&p) ^ flip;
}

void verify(struct session *ss, const struct side *s, const struct round *rd,
		   unsigned int q, size_t offset)
{
	const uint8_t *msg = s->bufs[q] + offset;
	struct pattern p = { .state = pattern_seed(rd, q) };
	size_t i, first = 0, wrong = 0, unwritten = 0;
	uint8_t expected, first_expected = 0;

	if (msg[-1] != GUARD_BYTE)
		round_fail(rd, q, "the byte before the message is 0x%02x, expected the guard "
			   "0x%02x", msg[-1], GUARD_BYTE);
	for (i = 0; i < rd->size; i++) {
		expected = pattern_next(&p);
		if (msg[i] == expected)
			continue;
		if (!wrong++) {
			first = i;
			first_expected = expected;
		}
		unwritten += (msg[i] ^ expected) == 0xff;
	}
	if (wrong)
		round_fail(rd, q, "byte %zu is 0x%02x, expected 0x%02x (%zu bytes wrong, %zu of "
			   "them never written)", first, msg[first], first_expected, wrong,
			   unwritten);
	if (msg[rd->size] != GUARD_BYTE)
		round_fail(rd, q, "byte %zu, just past the message, is 0x%02x, expected the guard "
			   "0x%02x", rd->size, msg[rd->size], GUARD_BYTE);
	ss->bytes_verified += rd->size;
}
