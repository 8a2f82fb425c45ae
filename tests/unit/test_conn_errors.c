/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/conn.c when things go wrong, in virtual time: dark paths and peers against the
 * retry budget and its clock, READs whose responses never come, access and length errors,
 * RNR waits, flushes after an error, malformed input, the PSNs and settings a QP starts with.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_xfer.h"
#include "suites.h"

/* Everything dark: the QP gives up within its retry budget and flushes. */
START_TEST(mrc_conn__total_blackout_retry_exceeded)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 2, 2u << 20);
	x.a->on_complete = NULL;
	x.sim->uplink[0][0].p.blackhole = true;
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	xfer_post(&x, MRC_WR_SEND, 100, 0);
	sim_run(x.sim, 60ull * 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(x.a->send_completions, 2);
	ck_assert_uint_eq(x.a->errors, 2);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_WR_FLUSH_ERR);
	xfer_free(&x);
}
END_TEST

/* The responder's host goes dark (both ways) on every plane, or comes back. */
static void host_dark(struct sim *sim, unsigned host, bool dark)
{
	for (unsigned p = 0; p < sim->n_planes; p++)
		sim->uplink[host][p].p.blackhole = sim->downlink[host][p].p.blackhole = dark;
}

/*
 * A responder kept off its CPU for 40 ms, well inside the retry budget (8 retries, one per
 * 67 ms timeout), costs the requester no error: retransmissions and probes go on every RTO,
 * but retries count only once per timeout, and the transfer finishes when it comes back
 * . (Counting every resend and every probe round with no usable path, as once,
 * ended it within a few milliseconds: this test fails with a 1 ns timeout.)
 */
START_TEST(mrc_conn__peer_stall_within_retry_budget)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	sc.planes = 2;
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 4, 4u << 20);
	xfer_post(&x, MRC_WR_WRITE, 2u << 20, 0);
	xfer_post(&x, MRC_WR_SEND_IMM, 4096, 7);
	sim_run(x.sim, 50000, writes_done, &x); /* 50 us in: data in flight */
	ck_assert_uint_eq(x.send_done_count, 0);
	host_dark(x.sim, 1, true);
	sim_run(x.sim, x.sim->now_ns + 40000000ull, NULL, NULL);
	ck_assert_uint_gt(mrc_conn_stats(x.a->conn)->tx_retransmits, 8);
	ck_assert_int_ne(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	host_dark(x.sim, 1, false);
	xfer_run(&x, 10ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

struct first_error {
	uint64_t at_ns;
	unsigned status;
};

static void note_first_error(struct sim_endpoint *ep, bool from_recv,
			     const struct mrc_completion *wc)
{
	struct first_error *e = ep->user;

	(void)from_recv;
	if (wc->status != MRC_WC_SUCCESS && !e->at_ns) {
		e->at_ns = ep->sim->now_ns;
		e->status = wc->status;
	}
}

/*
 * The retry budget runs on the QP's timeout: a peer gone for good ends the QP with
 * RETRY_EXC_ERR after (retry_cnt + 1) timeouts, not before, and not much later (the RTO,
 * 100 ms at most, is how often the clock is looked at).
 */
START_TEST(mrc_conn__retry_budget_runs_on_the_timeout)
{
	static const uint64_t timeout_ns[] = { 5000000, 20000000 };

	for (unsigned t = 0; t < 2; t++) {
		struct sim_config sc;
		struct mrc_conn_config cc;
		struct first_error e = { 0 };
		struct xfer x;
		uint64_t dark_at, budget;

		sim_config_default(&sc);
		mrc_conn_config_default(&cc);
		cc.retry_cnt = 3;
		cc.retry_timeout_ns = timeout_ns[t];
		budget = (cc.retry_cnt + 1) * cc.retry_timeout_ns;
		xfer_init(&x, &sc, &cc, 4, 1u << 20);
		x.a->on_complete = note_first_error;
		x.a->user = &e;
		xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
		sim_run(x.sim, 20000, NULL, NULL);
		dark_at = x.sim->now_ns;
		host_dark(x.sim, 1, true);
		sim_run(x.sim, dark_at + 10ull * 1000000000ull, NULL, NULL);
		ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
		ck_assert_uint_eq(e.status, MRC_WC_RETRY_EXC_ERR);
		ck_assert_uint_ge(e.at_ns - dark_at, budget);
		ck_assert_uint_le(e.at_ns - dark_at, budget + 2 * cc.rto.max_rto_ns);
		xfer_free(&x);
	}
}
END_TEST

/* The responder takes no data but answers probes (it drops every packet over 300 bytes). */
static void data_dark(struct sim *sim, unsigned host)
{
	for (unsigned p = 0; p < sim->n_planes; p++)
		sim->downlink[host][p].p.drop_above_bytes = 300;
}

/*
 * A peer that answers probes and takes no data: probe replies bring the paths back with fresh
 * RTOs, so only the retry clock of the resends ends the QP, after (retry_cnt + 1) timeouts; and
 * the resends of each packet back off meanwhile instead of following every fresh RTO
 * . (Counting every resend ended this QP after 0.4 ms; not backing off sent
 * some 180,000 resends a second.)
 */
START_TEST(mrc_conn__data_dark_peer_retry_budget_and_backoff)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct first_error e = { 0 };
	struct xfer x;
	uint64_t dark_at, budget, resent;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_cnt = 3;
	cc.retry_timeout_ns = 5000000;
	budget = (cc.retry_cnt + 1) * cc.retry_timeout_ns;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	x.a->on_complete = note_first_error;
	x.a->user = &e;
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	sim_run(x.sim, 20000, NULL, NULL);
	dark_at = x.sim->now_ns;
	data_dark(x.sim, 1);
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits;
	sim_run(x.sim, dark_at + 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(e.status, MRC_WC_RETRY_EXC_ERR);
	ck_assert_uint_ge(e.at_ns - dark_at, budget);
	ck_assert_uint_le(e.at_ns - dark_at, budget + 2 * cc.rto.max_rto_ns);
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits - resent;
	/* each of at most 256 outstanding packets: at once, then after 0.4, 0.8, ... 12.8 ms */
	ck_assert_uint_gt(resent, 0);
	ck_assert_uint_le(resent, 256 * 8);
	xfer_free(&x);
}
END_TEST

/*
 * A READ whose request the responder acknowledged and whose responses never arrive (here they
 * are too long for the requester's links; a responder whose daemon restarted is the real case)
 * has no packet of the requester's in flight to time out: the READ watchdog ends it with
 * RETRY_EXC_ERR after (retry_cnt + 1) timeouts. Without it the READ waited forever.
 */
START_TEST(mrc_conn__read_response_that_never_comes_retry_exceeded)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct first_error e = { 0 };
	struct xfer x;
	uint64_t start, budget;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_cnt = 3;
	cc.retry_timeout_ns = 5000000;
	budget = (cc.retry_cnt + 1) * cc.retry_timeout_ns;
	xfer_init(&x, &sc, &cc, 4, 64u << 10);
	x.a->on_complete = note_first_error;
	x.a->user = &e;
	data_dark(x.sim, 0); /* the requester's side: READ_RESP dropped, ACKs pass */
	start = x.sim->now_ns;
	xfer_post(&x, MRC_WR_READ, 64u << 10, 0);
	sim_run(x.sim, start + 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(e.status, MRC_WC_RETRY_EXC_ERR);
	ck_assert_uint_ge(e.at_ns - start, budget);
	ck_assert_uint_le(e.at_ns - start, budget + cc.retry_timeout_ns + 2 * cc.rto.max_rto_ns);
	xfer_free(&x);
}
END_TEST

/* With no retry limit (timeout 0), the same peer draws resends at a bounded pace: each lost
 * packet at most once per rto_max once it has backed off, not once per fresh RTO. */
START_TEST(mrc_conn__data_dark_peer_resends_back_off)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	uint64_t resent;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_timeout_ns = 0;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	sim_run(x.sim, 20000, NULL, NULL);
	data_dark(x.sim, 1);
	sim_run(x.sim, x.sim->now_ns + 100000000ull, NULL, NULL); /* backing off */
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits;
	sim_run(x.sim, x.sim->now_ns + 2000000000ull, NULL, NULL);
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits - resent;
	ck_assert_int_ne(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	/* at most one resend per outstanding packet (256 at most) per rto_max: 20 in 2 s */
	ck_assert_uint_le(resent, 256 * 21);
	ck_assert_uint_gt(resent, 0);
	/* and when the peer takes data again, the transfer completes */
	for (unsigned p = 0; p < x.sim->n_planes; p++)
		x.sim->downlink[1][p].p.drop_above_bytes = 0;
	xfer_run(&x, 10ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* Verbs' timeout 0 is infinite: ten seconds of a dark peer end nothing, and the transfer
 * completes when it comes back. */
START_TEST(mrc_conn__retry_timeout_zero_never_gives_up)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_timeout_ns = 0;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	sim_run(x.sim, 20000, NULL, NULL);
	host_dark(x.sim, 1, true);
	sim_run(x.sim, x.sim->now_ns + 10ull * 1000000000ull, NULL, NULL);
	ck_assert_int_ne(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	host_dark(x.sim, 1, false);
	xfer_run(&x, 10ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* A WRITE to a key the responder does not have: REM_ACCESS_ERR at the requester, both QPs
 * in ERR, later requests flushed. */
START_TEST(mrc_conn__bad_rkey_remote_access_error)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_send_wr wr = { .wr_id = 7, .opcode = MRC_WR_WRITE, .num_sge = 1 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 4096);
	x.a->on_complete = NULL;
	x.b->on_complete = NULL;
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 100, 0 };
	wr.rkey = x.key_b_dst ^ 0x100; /* wrong random bits */
	wr.raddr = (uintptr_t)x.b_dst;
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	wr.wr_id = 8;
	wr.rkey = x.key_b_dst;
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(x.a->send_completions, 2);
	ck_assert_uint_eq(x.a->last_wc.wr_id, 8);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(x.a->errors, 2);
	ck_assert_uint_eq(x.b->drops[MRC_DROP_REMOTE_ACCESS], 1);
	/* the bad key touched no memory */
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(x.b_dst[i], 0);
	xfer_free(&x);
}
END_TEST

static void record_first(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct mrc_completion *first = ep->user;

	(void)from_recv;
	if (first->wr_id == 0)
		*first = *wc;
}

/* The first failing WR carries the NAK's status; the ones after it are flushed. */
START_TEST(mrc_conn__remote_access_status_on_culprit)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;
	struct sim_endpoint *a, *b;
	struct mrc_completion first = { 0 };
	uint8_t src[64] = { 1 }, dst[64];
	struct mrc_send_wr wr = { .wr_id = 1, .opcode = MRC_WR_WRITE, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	sim = sim_new(&sc);
	sim_connect(sim, 0, 1, &cc, 1, &a, &b);
	a->user = &first;
	a->on_complete = record_first;
	sim_register(b, dst, sizeof(dst), MRC_ACCESS_REMOTE_READ); /* no write access */
	wr.sge[0] = (struct mrc_sge){ src, 0, sizeof(src), 0 };
	wr.rkey = b->mrs[0].key;
	wr.raddr = (uintptr_t)dst;
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	a->dirty = true;
	sim_run(sim, 1000000000ull, NULL, NULL);
	ck_assert_uint_eq(first.wr_id, 1);
	ck_assert_uint_eq(first.status, MRC_WC_REM_ACCESS_ERR);
	sim_free(sim);
}
END_TEST

/* SEND longer than the posted receive: LOC_LEN_ERR there, REM_INV_REQ_ERR here. */
START_TEST(mrc_conn__send_longer_than_receive)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_recv_wr rwr = { .wr_id = 3, .num_sge = 1 };
	struct mrc_send_wr wr = { .wr_id = 4, .opcode = MRC_WR_SEND, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 8192);
	x.a->on_complete = x.b->on_complete = NULL;
	rwr.sge[0] = (struct mrc_sge){ x.b_rcv, 0, 100, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 5000, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 1000000000ull, NULL, NULL);
	ck_assert_uint_eq(x.b->recv_completions, 1);
	ck_assert_uint_eq(x.b->last_wc.status, MRC_WC_LOC_LEN_ERR);
	ck_assert_uint_eq(x.a->send_completions, 1);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_REM_INV_REQ_ERR);
	xfer_free(&x);
}
END_TEST

static bool nothing(struct sim *sim, void *arg)
{
	(void)sim;
	(void)arg;
	return false;
}

/* SEND before the receive is posted: RNR NAK, wait, retry, success. */
START_TEST(mrc_conn__rnr_then_success)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_recv_wr rwr = { .wr_id = 0, .num_sge = 1 };
	struct mrc_send_wr wr = { .wr_id = 0, .opcode = MRC_WR_SEND_IMM, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED, .imm = 0xfeed };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 2, 20000);
	x.ops[0] = (struct op){ .opcode = MRC_WR_SEND_IMM, .len = 10000, .imm = 0xfeed };
	x.n_ops = 1;
	x.n_recv_ops = 1;
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 10000, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, x.sim->now_ns + 300000, nothing, NULL); /* 300 us without a receive */
	ck_assert_uint_gt(x.b->drops[MRC_DROP_RNR], 0);
	ck_assert_msg(x.a->send_completions == 0, "completed early: %s",
		      mrc_wc_status_name(x.a->last_wc.status));
	rwr.sge[0] = (struct mrc_sge){ x.b_rcv, 0, 10000, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	xfer_run(&x, 1000000000ull);
	ck_assert_uint_eq(x.b->last_wc.imm, 0xfeed);
	xfer_free(&x);
}
END_TEST

/* A receiver that posts its receive 200 ms late: with unlimited RNR retries the SEND waits
 * it out, and the idle path's timers never fail it. */
START_TEST(mrc_conn__long_rnr_wait_succeeds)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_recv_wr rwr = { .wr_id = 0, .num_sge = 1 };
	struct mrc_send_wr wr = { .wr_id = 0, .opcode = MRC_WR_SEND, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };
	uint64_t failures = 0;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.rnr_retry_after = 100; /* 1 ms */
	xfer_init(&x, &sc, &cc, 2, 4096);
	x.ops[0] = (struct op){ .opcode = MRC_WR_SEND, .len = 3000 };
	x.n_ops = x.n_recv_ops = 1;
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 3000, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 200000000ull, nothing, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_RTS);
	rwr.sge[0] = (struct mrc_sge){ x.b_rcv, 0, 3000, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	xfer_run(&x, 1000000000ull);
	for (unsigned i = 0; i < mrc_conn_n_paths(x.a->conn); i++)
		failures += mrc_conn_path(x.a->conn, i)->stats.failures;
	ck_assert_uint_eq(failures, 0);
	xfer_free(&x);
}
END_TEST

/* Two SENDs refused 5 us apart both wait their own RNR time and go again. */
static void sends_then_receives_after(unsigned n, uint64_t wait_ns, uint64_t gap_ns)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, n, 8192);
	for (unsigned i = 0; i < n; i++)
		x.ops[i] = (struct op){ .opcode = MRC_WR_SEND, .len = 100, .src_off = 100 * i,
					.dst_off = 100 * i, .rsn = i };
	x.n_ops = x.n_recv_ops = n;
	for (unsigned i = 0; i < n; i++) {
		struct mrc_send_wr wr = { .wr_id = i, .opcode = MRC_WR_SEND, .num_sge = 1,
					  .flags = MRC_SEND_SIGNALED };

		wr.sge[0] = (struct mrc_sge){ x.a_src + 100 * i, 0, 100, 0 };
		ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
		x.a->dirty = true;
		if (gap_ns)
			sim_run(x.sim, x.sim->now_ns + gap_ns, nothing, NULL);
	}
	sim_run(x.sim, x.sim->now_ns + wait_ns, nothing, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct mrc_recv_wr rwr = { .wr_id = i, .num_sge = 1 };

		rwr.sge[0] = (struct mrc_sge){ x.b_rcv + 100 * i, 0, 100, 0 };
		ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	}
	xfer_run(&x, 1000000000ull);
	xfer_free(&x);
}

START_TEST(mrc_conn__two_rnr_waits_both_resent)
{
	sends_then_receives_after(2, 100000, 5000);
}
END_TEST

/* Two, then eight SENDs posted together wait a whole second for receives: all stay under
 * the RNR budget (unlimited by default), none is retried against retry_cnt. */
START_TEST(mrc_conn__two_sends_wait_long_for_receives)
{
	sends_then_receives_after(2, 1000000000ull, 0);
	sends_then_receives_after(8, 1000000000ull, 0);
}
END_TEST

/* A WRITE whose one lost packet is repaired on another path leaves every path healthy:
 * no RTO fires on a path with nothing outstanding. */
START_TEST(mrc_conn__repaired_loss_leaves_paths_healthy)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim_stage_params bad = { .loss = 0.02 };
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	impair_core(x.sim, &bad);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	xfer_run(&x, 1000000000ull);
	sim_run(x.sim, x.sim->now_ns + 50000000ull, NULL, NULL); /* 50 ms idle */
	for (unsigned i = 0; i < mrc_conn_n_paths(x.a->conn); i++) {
		const struct mrc_path *p = mrc_conn_path(x.a->conn, i);

		ck_assert_int_eq(p->state, MRC_PATH_ACTIVE);
		ck_assert_uint_eq(p->rto_deadline_ns, 0);
	}
	xfer_free(&x);
}
END_TEST

/* A posted work request on a QP in ERR completes at once, flushed. */
START_TEST(mrc_conn__post_after_error_flushes)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_send_wr wr = { .wr_id = 9, .opcode = MRC_WR_SEND, .num_sge = 0 };
	struct mrc_recv_wr rwr = { .wr_id = 10 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 64);
	x.a->on_complete = NULL;
	mrc_conn_set_error(x.a->conn, 0);
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(x.a->last_wc.wr_id, 9);
	ck_assert_int_eq(mrc_conn_post_recv(x.a->conn, &rwr), 0);
	ck_assert(x.a->last_from_recv);
	ck_assert_uint_eq(x.a->last_wc.wr_id, 10);
	/* the peer learns of it through CLOSE */
	x.a->dirty = true;
	sim_run(x.sim, 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_ERR);
	xfer_free(&x);
}
END_TEST

/* Each direction's first PSN comes from the node ids and QPNs, as the SPEC's examples say
 * [R-116]. */
START_TEST(mrc_conn__initial_psn_from_qpn_pair)
{
	const uint64_t a = 0x1111111111111111ull, b = 0x2222222222222222ull;

	ck_assert_uint_eq(mrc_initial_psn(a, 0x3000, b, 0x3000), 0xbebb8761u);
	ck_assert_uint_eq(mrc_initial_psn(b, 0x3000, a, 0x3000), 0xba092814u);
	ck_assert_uint_eq(mrc_initial_psn(0, 0x1000, 0, 0x2001), 0x683afb36u);
	ck_assert_uint_ne(mrc_initial_psn(a, 1, a, 2), mrc_initial_psn(a, 2, a, 1));
}
END_TEST

/* RTS's send settings apply to a connection made at RTR, never after a request went out. */
START_TEST(mrc_conn__send_settings_only_before_first_request)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_send_wr wr = { .wr_id = 9, .opcode = MRC_WR_SEND, .num_sge = 0 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 64);
	ck_assert_int_eq(mrc_conn_set_send(x.a->conn, 3, 1000000, 7, 4), 0);
	ck_assert_int_eq(mrc_conn_set_send(x.a->conn, 3, 1000000, 7, 0), -EBUSY); /* no READ credit */
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	ck_assert_int_eq(mrc_conn_set_send(x.a->conn, 3, 1000000, 7, 4), -EBUSY);
	xfer_free(&x);
}
END_TEST

/*
 * Verbs' RTS to RTS: remote write taken away from a working QP. A WRITE before it lands, one
 * after it is answered with NAK invalid_req and places nothing.
 */
START_TEST(mrc_conn__modify_takes_remote_write_away)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;
	struct sim_endpoint *a, *b;
	struct mrc_completion first = { 0 };
	uint8_t src[64], dst[128] = { 0 };
	struct mrc_send_wr wr = { .wr_id = 0, .opcode = MRC_WR_WRITE, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	memset(src, 0x3c, sizeof(src));
	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	sim = sim_new(&sc);
	sim_connect(sim, 0, 1, &cc, 1, &a, &b);
	sim_register(b, dst, sizeof(dst), MRC_ACCESS_REMOTE_WRITE);
	wr.sge[0] = (struct mrc_sge){ src, 0, sizeof(src), 0 };
	wr.rkey = b->mrs[0].key;
	wr.raddr = (uintptr_t)dst;
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	a->dirty = true;
	sim_run(sim, 1000000000ull, NULL, NULL);
	ck_assert_uint_eq(a->send_completions, 1);
	ck_assert_int_eq(memcmp(dst, src, sizeof(src)), 0);

	mrc_conn_modify(b->conn, 7, mrc_verbs_timeout_ns(14), 7, 1, MRC_ACCESS_REMOTE_READ);
	a->user = &first;
	a->on_complete = record_first;
	wr.wr_id = 2;
	wr.raddr = (uintptr_t)dst + 64;
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	a->dirty = true;
	sim_run(sim, 2000000000ull, NULL, NULL); /* the limit is a time, not a duration */
	ck_assert_uint_eq(first.wr_id, 2);
	ck_assert_uint_eq(first.status, MRC_WC_REM_INV_REQ_ERR);
	ck_assert_uint_eq(b->drops[MRC_DROP_INVALID_REQ], 1);
	for (unsigned i = 64; i < sizeof(dst); i++)
		ck_assert_uint_eq(dst[i], 0);
	sim_free(sim);
}
END_TEST

/* What a shared receive queue must post before a message of receive sequence number rsn
 * has its receive: nothing for one posted or passed, nothing beyond the queue's depth. */
START_TEST(mrc_conn__receives_short_for_a_shared_queue)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;
	struct sim_endpoint *a, *b;
	uint8_t buf[64];
	struct mrc_recv_wr wr = { .num_sge = 1 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.rq_depth = 16;
	sim = sim_new(&sc);
	sim_connect(sim, 0, 1, &cc, 1, &a, &b);
	wr.sge[0] = (struct mrc_sge){ buf, (uintptr_t)buf, sizeof(buf), 0 };
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, 0), 1);
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, 4), 5);
	ck_assert_int_eq(mrc_conn_post_recv(b->conn, &wr), 0);
	ck_assert_int_eq(mrc_conn_post_recv(b->conn, &wr), 0);
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, 1), 0);
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, 4), 3);
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, 15), 14);
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, 16), 0); /* past the depth */
	ck_assert_uint_eq(mrc_conn_receives_short(b->conn, UINT32_MAX), 0); /* before rq_head */
	sim_free(sim);
}
END_TEST

/* Malformed and misaddressed datagrams are counted and change nothing. */
START_TEST(mrc_conn__malformed_input_is_counted_and_harmless)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_rx_info rx = { 0 };
	uint8_t junk[200];

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 1 << 16);
	for (unsigned i = 0; i < 1000; i++) {
		size_t len = sim_random(x.sim) % sizeof(junk);

		for (size_t k = 0; k < len; k++)
			junk[k] = (uint8_t)sim_random(x.sim);
		ck_assert_int_ne(mrc_conn_recv(x.b->conn, &rx, junk, len, 0), MRC_DROP_NONE);
	}
	ck_assert_uint_eq(mrc_conn_stats(x.b->conn)->rx_packets, 1000);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_RTS);
	xfer_post(&x, MRC_WR_WRITE, 1 << 16, 0);
	xfer_run(&x, 1000000000ull);
	xfer_free(&x);
}
END_TEST

Suite *conn_errors_suite(void)
{
	Suite *s = suite_create("conn_errors");
	TCase *errors = tcase_create("errors");

	tcase_add_test(errors, mrc_conn__total_blackout_retry_exceeded);
	tcase_add_test(errors, mrc_conn__peer_stall_within_retry_budget);
	tcase_add_test(errors, mrc_conn__retry_budget_runs_on_the_timeout);
	tcase_add_test(errors, mrc_conn__retry_timeout_zero_never_gives_up);
	tcase_add_test(errors, mrc_conn__data_dark_peer_retry_budget_and_backoff);
	tcase_add_test(errors, mrc_conn__read_response_that_never_comes_retry_exceeded);
	tcase_add_test(errors, mrc_conn__data_dark_peer_resends_back_off);
	tcase_add_test(errors, mrc_conn__bad_rkey_remote_access_error);
	tcase_add_test(errors, mrc_conn__remote_access_status_on_culprit);
	tcase_add_test(errors, mrc_conn__send_longer_than_receive);
	tcase_add_test(errors, mrc_conn__rnr_then_success);
	tcase_add_test(errors, mrc_conn__long_rnr_wait_succeeds);
	tcase_add_test(errors, mrc_conn__two_rnr_waits_both_resent);
	tcase_add_test(errors, mrc_conn__two_sends_wait_long_for_receives);
	tcase_add_test(errors, mrc_conn__repaired_loss_leaves_paths_healthy);
	tcase_add_test(errors, mrc_conn__post_after_error_flushes);
	tcase_add_test(errors, mrc_conn__malformed_input_is_counted_and_harmless);
	tcase_add_test(errors, mrc_conn__initial_psn_from_qpn_pair);
	tcase_add_test(errors, mrc_conn__send_settings_only_before_first_request);
	tcase_add_test(errors, mrc_conn__modify_takes_remote_write_away);
	tcase_add_test(errors, mrc_conn__receives_short_for_a_shared_queue);
	tcase_set_timeout(errors, 60);
	suite_add_tcase(s, errors);
	return s;
}
