/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * daemon/core's UD QPs in virtual time (core_world.h): datagrams from a UD QP of host A to
 * one of host B, over a network that loses and duplicates, each checked where it lands: GRH,
 * bytes, source QP; nothing resent; every drop counted by its reason (SPEC 4.8).
 */
#include <errno.h>
#include <string.h>

#include "core/shard.h"
#include "core_world.h"
#include "proto/checksum.h"
#include "suites.h"

#define N_DG 64
#define QKEY 0x5eed
#define RECV (40 + 1024)
#define UD_AREA ((uint64_t)QPS * WRS * SLOT) /* the region's bytes the RC plan leaves free */

_Static_assert(UD_AREA + 2 * N_DG * RECV <= REGION, "the datagrams' memory fits the region");

struct ud_qp {
	struct client_qp x; /* qpn, doorbell bit, rings */
	struct mrc_ring cq;
	uint32_t cq_handle;
};

static void ud_qp_open(struct host *h, struct ud_qp *u)
{
	struct mrc_ctl_create_cq ccq = { 4 * N_DG, 0 };
	struct mrc_ctl_cq cq;
	struct mrc_ctl_qp_created rep;
	struct mrc_ctl_ud_qp st;

	memset(u, 0, sizeof(*u));
	ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_CQ, &ccq, sizeof(ccq), NULL, &cq,
				       sizeof(cq)),
			 0);
	u->cq_handle = cq.handle;
	world_attach_ring(&u->cq, h->reply_mem[0], cq.entries, MRC_RING_CQ);
	{
		struct mrc_ctl_create_qp c = { .send_cq = cq.handle, .recv_cq = cq.handle,
					       .max_send_wr = N_DG, .max_recv_wr = N_DG, .pd = 1,
					       .type = MRC_CTL_QPT_UD };

		ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_QP, &c, sizeof(c), NULL, &rep,
					       sizeof(rep)),
				 0);
	}
	u->x.qpn = rep.qp_num;
	u->x.bit = rep.doorbell_bit % MRC_DOORBELL_BITS;
	world_attach_ring(&u->x.sq, h->reply_mem[0], rep.sq_entries, MRC_RING_SQ);
	world_attach_ring(&u->x.rq, h->reply_mem[1], rep.rq_entries, MRC_RING_RQ);
	/* RTR receives; RTS sends too, the first datagram's psn 100 */
	st = (struct mrc_ctl_ud_qp){ .qp_num = u->x.qpn, .qkey = QKEY, .state = MRC_CTL_QP_RTR };
	ck_assert_int_eq(world_request(h, MRC_CTL_UD_QP, &st, sizeof(st), NULL, NULL, 0), 0);
	st.state = MRC_CTL_QP_RTS;
	st.sq_psn = 100;
	ck_assert_int_eq(world_request(h, MRC_CTL_UD_QP, &st, sizeof(st), NULL, NULL, 0), 0);
	/* back is not a state a UD QP goes to; a connected QP's request is not its */
	st.state = MRC_CTL_QP_RTR;
	ck_assert_int_eq(world_request(h, MRC_CTL_UD_QP, &st, sizeof(st), NULL, NULL, 0),
			 -EINVAL);
	{
		struct mrc_ctl_ready_qp r = { .qp_num = u->x.qpn, .retry_cnt = 7, .max_rd_atomic = 1 };

		ck_assert_int_eq(world_request(h, MRC_CTL_READY_QP, &r, sizeof(r), NULL, NULL, 0),
				 -EINVAL);
	}
}

/* Datagram i: 1 + 13 i bytes (up to 820), every byte from i. */
static uint32_t dg_len(unsigned i)
{
	return 1 + 13 * i;
}

static uint8_t dg_byte(unsigned i, uint32_t k)
{
	return (uint8_t)(i * 31 + k * 7 + 1);
}

static void post_receives(struct host *h, struct ud_qp *u, unsigned n, uint32_t room)
{
	for (unsigned i = 0; i < n; i++) {
		struct mrc_rq_entry r = { .wr_id = i, .num_sge = 1 };

		r.sge[0] = (struct mrc_shm_sge){ (uintptr_t)h->cl.mem + UD_AREA + i * RECV, room,
						 h->cl.keys.lkey };
		ck_assert_int_eq(mrc_ring_produce(&u->x.rq, &r), 0);
	}
}

/* Datagrams first..first+n-1 from A's u to B's QP dst, with qkey. */
static void send_datagrams(struct world *w, struct ud_qp *u, uint32_t dst, uint32_t qkey,
			   unsigned first, unsigned n)
{
	struct host *a = &w->h[0];

	for (unsigned i = first; i < first + n; i++) {
		uint8_t *p = a->cl.mem + UD_AREA + (N_DG + i % N_DG) * RECV;
		struct mrc_sq_entry e = { .wr_id = i, .opcode = MRC_SQ_SEND_IMM,
					  .flags = MRC_SQ_F_SIGNALED, .num_sge = 1, .imm = i,
					  .remote_qpn = dst, .remote_qkey = qkey };

		for (uint32_t k = 0; k < dg_len(i); k++)
			p[k] = dg_byte(i, k);
		memcpy(e.dgid, w->h[1].cfg.planes[0].addr.addr, 16);
		e.sge[0] = (struct mrc_shm_sge){ (uintptr_t)p, dg_len(i), a->cl.keys.lkey };
		ck_assert_int_eq(mrc_ring_produce(&u->x.sq, &e), 0);
	}
	world_ring(a, &u->x, &u->x.sq);
}

static unsigned sent_completions, sends_wanted;

static struct ud_qp *sender;

static bool sends_done_and_quiet(struct world *w)
{
	struct mrc_cq_entry e;

	while (mrc_ring_consume(&sender->cq, &e) == 1) {
		ck_assert_uint_eq(e.status, MRC_CQ_SUCCESS);
		ck_assert_uint_eq(e.opcode, MRC_CQ_SEND);
		sent_completions++;
	}
	return sent_completions == sends_wanted && w->n_heap == 0;
}

/* Datagrams first..first+n-1 sent, and the network quiet again. */
static void send_and_settle(struct world *w, struct ud_qp *u, uint32_t dst, uint32_t qkey,
			    unsigned first, unsigned n)
{
	sent_completions = 0;
	sends_wanted = n;
	send_datagrams(w, u, dst, qkey, first, n);
	world_run(w, 10 * SEC, sends_done_and_quiet, 0, NULL);
	ck_assert_uint_eq(sent_completions, n);
}

/* B's receives: each one datagram, whole and exactly once unless the network duplicated it;
 * returns how many arrived. */
static unsigned check_received(struct world *w, struct ud_qp *u, uint32_t src_qp,
			       unsigned *dup)
{
	struct host *b = &w->h[1];
	unsigned seen[N_DG] = { 0 }, n = 0;
	struct mrc_cq_entry e;

	*dup = 0;
	while (mrc_ring_consume(&u->cq, &e) == 1) {
		const uint8_t *grh = b->cl.mem + UD_AREA + e.wr_id * RECV;
		unsigned i = e.imm;

		ck_assert_uint_eq(e.status, MRC_CQ_SUCCESS);
		ck_assert_uint_eq(e.opcode, MRC_CQ_RECV);
		ck_assert_uint_eq(e.flags & (MRC_CQ_F_GRH | MRC_CQ_F_WITH_IMM),
				  MRC_CQ_F_GRH | MRC_CQ_F_WITH_IMM);
		ck_assert_uint_eq(e.src_qp, src_qp);
		ck_assert_uint_eq(e.qp_num, u->x.qpn);
		ck_assert_uint_lt(i, N_DG);
		ck_assert_uint_eq(e.byte_len, 40 + dg_len(i));
		ck_assert_uint_eq(e.wr_id, n); /* receives are taken in posting order */
		/* the GRH: A's address to B's on the plane it took, a valid IPv4 header */
		ck_assert_uint_eq(grh[20], 0x45);
		ck_assert(mrc_csum_verify(grh + 20, 20));
		ck_assert(!memcmp(grh + 32, w->h[0].cfg.planes[0].addr.addr + 12, 4) ||
			  !memcmp(grh + 32, w->h[0].cfg.planes[1].addr.addr + 12, 4));
		for (uint32_t k = 0; k < dg_len(i); k++)
			ck_assert_uint_eq(grh[40 + k], dg_byte(i, k));
		*dup += seen[i]++ > 0;
		n++;
	}
	return n;
}

static void datagrams_on(unsigned shards, uint64_t seed, double loss, double duplicate)
{
	static struct world w;
	struct ud_qp a, b;
	unsigned got, dup;
	const struct mrcd_stats *sa, *sb;

	world_init_shards(&w, seed, MRC_AUTH_OFF, shards);
	w.loss = loss;
	w.duplicate = duplicate;
	w.jitter_ns = 100 * US;
	ud_qp_open(&w.h[0], &a);
	ud_qp_open(&w.h[1], &b);
	/* UD QPs run on the control thread's shard, whatever the others run */
	ck_assert_uint_eq(mrcd_shard_of_qpn(a.x.qpn, shards), MRCD_CONTROL_SHARD);
	ck_assert_uint_eq(mrcd_shard_of_qpn(b.x.qpn, shards), MRCD_CONTROL_SHARD);
	post_receives(&w.h[1], &b, N_DG, RECV);
	sender = &a;
	send_and_settle(&w, &a, b.x.qpn, QKEY, 0, N_DG);
	got = check_received(&w, &b, a.x.qpn, &dup);
	sa = &w.h[0].core.stats;
	sb = &w.h[1].core.stats;
	ck_assert_uint_eq(sa->ud_tx, N_DG); /* unreliable: nothing is sent twice */
	ck_assert_uint_eq(sb->ud_rx, got);
	if (loss == 0 && duplicate == 0)
		ck_assert_uint_eq(got, N_DG);
	if (duplicate == 0)
		ck_assert_uint_eq(dup, 0);
	else
		ck_assert_uint_gt(dup, 0); /* a copy the network made is delivered too */
	if (loss > 0)
		ck_assert_uint_lt(got - dup, N_DG); /* what the network lost stays lost */
	world_free(&w);
}

static void datagrams(uint64_t seed, double loss, double duplicate)
{
	datagrams_on(1, seed, loss, duplicate);
}

START_TEST(core_ud__clean_network_every_datagram_once)
{
	datagrams(11, 0, 0);
	datagrams_on(3, 13, 0.02, 0.02); /* workers = 3: on worker 0, beside the others */
}
END_TEST

/* An RC QP of the client's, on an SRQ or not: its QPN. */
static uint32_t rc_qp(struct host *h, uint32_t cq, uint32_t srq, uint8_t type, int *err)
{
	struct mrc_ctl_create_qp c = { .send_cq = cq, .recv_cq = cq, .max_send_wr = 4,
				       .max_recv_wr = 4, .pd = 1, .type = type, .srq = srq };
	struct mrc_ctl_qp_created rep = { 0 };

	*err = world_request(h, MRC_CTL_CREATE_QP, &c, sizeof(c), NULL, &rep, sizeof(rep));
	return rep.qp_num;
}

/*
 * With workers, the QPs of one SRQ share the worker of its first QP (one consumer of its
 * ring), whatever the others run; a UD QP, which runs on worker 0, may join it only there.
 */
START_TEST(core_ud__srq_keeps_its_qps_on_one_worker)
{
	static struct world w;
	struct mrc_ctl_create_cq ccq = { 64, 0 };
	struct mrc_ctl_create_srq cs = { .max_wr = 16, .pd = 1 };
	struct mrc_ctl_cq cq;
	struct mrc_ctl_srq srq;
	struct host *h;
	uint32_t first, qpn;
	int err;

	world_init_shards(&w, 5, MRC_AUTH_OFF, 2);
	h = &w.h[0];
	ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_CQ, &ccq, sizeof(ccq), NULL, &cq,
				       sizeof(cq)), 0);
	ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_SRQ, &cs, sizeof(cs), world_channel_fd,
				       &srq, sizeof(srq)), 0);
	/* shard 0 takes the first plain QP, so the SRQ's first goes to shard 1, the least busy */
	rc_qp(h, cq.handle, 0, MRC_CTL_QPT_RC, &err);
	ck_assert_int_eq(err, 0);
	first = rc_qp(h, cq.handle, srq.handle, MRC_CTL_QPT_RC, &err);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(mrcd_shard_of_qpn(first, 2), 1);
	/* the next of the SRQ's follows it there, though shard 0 now runs fewer */
	rc_qp(h, cq.handle, 0, MRC_CTL_QPT_RC, &err);
	ck_assert_int_eq(err, 0);
	qpn = rc_qp(h, cq.handle, srq.handle, MRC_CTL_QPT_RC, &err);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(mrcd_shard_of_qpn(qpn, 2), 1);
	/* a UD QP cannot join it: it would take the SRQ's receives from another worker */
	rc_qp(h, cq.handle, srq.handle, MRC_CTL_QPT_UD, &err);
	ck_assert_int_eq(err, -EINVAL);
	world_free(&w);
}
END_TEST

START_TEST(core_ud__loss_and_duplicates_are_the_networks)
{
	for (uint64_t seed = 1; seed <= 3; seed++)
		datagrams(seed * 104729, 0.1, 0.1);
}
END_TEST

/* Wrong qkey, no receive, too short a receive: dropped, counted, no receive consumed
 * then a good one lands in the first receive. */
START_TEST(core_ud__drops_are_counted_and_consume_nothing)
{
	static struct world w;
	struct ud_qp a, b;
	unsigned dup;
	const struct mrcd_stats *sb;

	world_init(&w, 5);
	ud_qp_open(&w.h[0], &a);
	ud_qp_open(&w.h[1], &b);
	sender = &a;
	sb = &w.h[1].core.stats;
	send_and_settle(&w, &a, b.x.qpn, QKEY, 5, 1); /* no receive posted yet */
	ck_assert_uint_eq(sb->ud_dropped[MRC_DROP_UD_NO_RECEIVE], 1);
	post_receives(&w.h[1], &b, 1, 40 + dg_len(6) - 1);
	send_and_settle(&w, &a, b.x.qpn, QKEY, 6, 1); /* one byte too long for it */
	ck_assert_uint_eq(sb->ud_dropped[MRC_DROP_UD_TOO_LONG], 1);
	send_and_settle(&w, &a, b.x.qpn, QKEY + 1, 2, 1); /* wrong qkey */
	ck_assert_uint_eq(sb->ud_dropped[MRC_DROP_UD_QKEY], 1);
	send_and_settle(&w, &a, b.x.qpn + 1, QKEY, 2, 1); /* no such QP */
	ck_assert_uint_eq(sb->ud_dropped[MRC_DROP_WRONG_QPN], 1);
	send_and_settle(&w, &a, w.h[1].cl.qp[0].qpn, QKEY, 2, 1); /* an RC QP */
	ck_assert_uint_eq(sb->ud_dropped[MRC_DROP_QP_STATE], 1);
	ck_assert_uint_eq(sb->ud_rx, 0);
	send_and_settle(&w, &a, b.x.qpn, 0x80000000u, 0, 1); /* bit 31: A's own qkey */
	ck_assert_uint_eq(check_received(&w, &b, a.x.qpn, &dup), 1);
	world_free(&w);
}
END_TEST

/*
 * a datagram to a peer whose discovery is under way waits for it, and the datagrams
 * posted after it wait behind it, even one to a peer known already; discovery of an address
 * where nobody answers ends, and the wait with it, within the resolution bound; then both
 * go, the first to the address named (into nothing here), the second to B.
 */
START_TEST(core_ud__waits_for_discovery_in_posting_order)
{
	static struct world w;
	struct ud_qp a, b;
	unsigned dup;
	struct host *ha;
	const struct mrcd_stats *sa;
	uint8_t *p;
	struct mrc_sq_entry e = { .wr_id = 0, .opcode = MRC_SQ_SEND_IMM, .flags = MRC_SQ_F_SIGNALED,
				  .num_sge = 1, .imm = 0, .remote_qpn = 77, .remote_qkey = QKEY,
				  .dgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 99 } };

	world_init(&w, 21);
	ha = &w.h[0];
	sa = &ha->core.stats;
	ud_qp_open(&w.h[0], &a);
	ud_qp_open(&w.h[1], &b);
	post_receives(&w.h[1], &b, 1, RECV);
	sender = &a;
	p = ha->cl.mem + UD_AREA + N_DG * RECV;
	for (uint32_t k = 0; k < dg_len(0); k++)
		p[k] = dg_byte(0, k);
	e.sge[0] = (struct mrc_shm_sge){ (uintptr_t)p, dg_len(0), ha->cl.keys.lkey };
	ck_assert_int_eq(mrc_ring_produce(&a.x.sq, &e), 0); /* to 198.18.0.99: nobody */
	sent_completions = 0;
	sends_wanted = 2;
	send_datagrams(&w, &a, b.x.qpn, QKEY, 1, 1); /* to B, behind it */
	world_run(&w, 50 * MS, NULL, 0, NULL);
	ck_assert(!sends_done_and_quiet(&w));
	ck_assert_uint_eq(sent_completions, 0); /* both wait */
	ck_assert_uint_eq(sa->ud_tx, 0);
	world_run(&w, 3 * SEC, sends_done_and_quiet, 0, NULL);
	ck_assert_uint_eq(sent_completions, 2);
	ck_assert_uint_eq(sa->ud_tx, 2);
	ck_assert_uint_eq(check_received(&w, &b, a.x.qpn, &dup), 1);
	world_free(&w);
}
END_TEST

Suite *core_ud_suite(void)
{
	Suite *s = suite_create("core_ud");
	TCase *tc = tcase_create("core_ud");

	tcase_add_test(tc, core_ud__srq_keeps_its_qps_on_one_worker);
	tcase_add_test(tc, core_ud__clean_network_every_datagram_once);
	tcase_add_test(tc, core_ud__waits_for_discovery_in_posting_order);
	tcase_add_test(tc, core_ud__loss_and_duplicates_are_the_networks);
	tcase_add_test(tc, core_ud__drops_are_counted_and_consume_nothing);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
