/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * daemon/core in virtual time (core_world.h: two cores, their clients, a lossy network).
 * Property runs post random mixes of WRITE, WRITE_IMM, SEND, SEND_IMM and READ over several
 * QPs and check every byte and every completion; then a plane is drained, a client dies, a
 * peer daemon restarts, at a random moment. Whatever happened, every posted request
 * completes, and once the clients are gone every object is reclaimed: no QP, CQ, region or
 * shared page left, nothing lingering.
 */
#include <stdio.h>
#include <string.h>

#include "core/shard.h"
#include "core_world.h"
#include "suites.h"

/* --- the properties ------------------------------------------------------------------- */

static void transfer_on(unsigned shards, uint64_t seed, double loss, double duplicate,
			uint64_t jitter_ns, double refuse, enum mrc_auth_mode auth)
{
	static struct world w;

	world_init_shards(&w, seed, auth, shards);
	w.refuse = refuse;
	w.loss = loss;
	w.duplicate = duplicate;
	w.jitter_ns = jitter_ns;
	w.expect_success = true;
	world_post_everything(&w);
	world_run(&w, 60 * SEC, world_all_sent_completed, 0, NULL);
	ck_assert_msg(world_all_sent_completed(&w), "seed %llu: %u/%u/%u/%u of %u completed",
		      (unsigned long long)seed, w.h[0].cl.qp[0].completed,
		      w.h[0].cl.qp[1].completed, w.h[0].cl.qp[2].completed,
		      w.h[0].cl.qp[3].completed, WRS);
	/* B's receives: the last ones may still be on their way to its CQ */
	world_run(&w, SEC, NULL, 0, NULL);
	for (unsigned q = 0; q < QPS; q++) {
		unsigned expect = 0;

		for (unsigned i = 0; i < WRS; i++)
			expect += world_uses_rq(w.plan[q][i].opcode);
		ck_assert_uint_eq(w.h[0].cl.qp[q].failed, 0);
		ck_assert_uint_eq(w.h[1].cl.qp[q].received, expect);
		ck_assert_uint_eq(w.h[1].cl.qp[q].failed, 0);
	}
	if (refuse > 0)
		ck_assert_uint_gt(w.refusals, 0);
	/* the QPs spread over every worker, each of which carried their packets itself, and
	 * the metrics say so */
	for (unsigned k = 0; k < 2; k++)
		for (unsigned s = 0; s < w.h[k].core.n_shards; s++) {
			static char metrics[1 << 18];
			char line[96];

			mrcd_core_metrics(&w.h[k].core, metrics, sizeof(metrics));
			snprintf(line, sizeof(line), "\nmetaroce_worker_qps{worker=\"%u\"} %u\n", s,
				 w.h[k].core.shard[s].n_qps);
			ck_assert_msg(strstr(metrics, line), "%s", line);
			ck_assert_uint_ge(w.h[k].core.shard[s].n_qps, QPS / shards);
			ck_assert_uint_gt(w.h[k].core.shard[s].stats.tx_datagrams, 0);
			ck_assert_uint_gt(w.h[k].core.shard[s].stats.rx_datagrams, 0);
			ck_assert_uint_eq(w.h[k].core.shard[s].stats.rx_elsewhere, 0);
		}
	world_check_bytes(&w);
	world_check_reclaimed(&w);
	world_free(&w);
}

static void transfer(uint64_t seed, double loss, double duplicate, uint64_t jitter_ns,
		     double refuse, enum mrc_auth_mode auth)
{
	transfer_on(1, seed, loss, duplicate, jitter_ns, refuse, auth);
}

/*
 * The same property with B's memory reached only through a type 1 memory window that B's
 * client binds over its whole region on one QP's send queue (unsignaled): every WRITE and
 * READ of A's names the window's key, which only B's core resolves (SPEC 4.9, R-428).
 */
START_TEST(core_pair__through_a_memory_window)
{
	static struct world w;
	struct host *b;
	struct mrc_ctl_alloc_mw am = { .pd = 1, .type = MRC_CTL_MW_TYPE_1 };
	struct mrc_ctl_mw mw;
	struct mrc_sq_entry bind = { .opcode = MRC_SQ_BIND_MW,
				     .mw_access = MRC_CTL_ACCESS_REMOTE_WRITE |
						  MRC_CTL_ACCESS_REMOTE_READ };
	const struct mrcd_mr *win;

	world_init(&w, 4241);
	b = &w.h[1];
	w.loss = 0.02;
	w.duplicate = 0.02;
	w.jitter_ns = 200 * US;
	w.expect_success = true;
	ck_assert_int_eq(world_request(b, MRC_CTL_ALLOC_MW, &am, sizeof(am), NULL, &mw,
				       sizeof(mw)),
			 0);
	bind.mw_rkey = (mw.rkey & ~MRC_CTL_MW_KEY_TAG) | ((mw.rkey + 1) & MRC_CTL_MW_KEY_TAG);
	bind.mr_lkey = b->cl.keys.lkey;
	bind.mw_addr = world_slot_addr(&b->cl, 0, 0);
	bind.mw_length = REGION;
	ck_assert_int_eq(mrc_ring_produce(&b->cl.qp[0].sq, &bind), 0);
	world_ring(b, &b->cl.qp[0], &b->cl.qp[0].sq);
	world_run(&w, MS, NULL, 0, NULL);
	win = &b->core.t.mrs[MRC_KEY_SLOT(mw.rkey)];
	ck_assert(win->mw_type == MRC_CTL_MW_TYPE_1 && win->bound && win->key == bind.mw_rkey);
	ck_assert_uint_eq(b->core.t.mrs[MRC_KEY_SLOT(b->cl.keys.lkey)].n_windows, 1);
	w.target_rkey = bind.mw_rkey;
	world_post_everything(&w);
	world_run(&w, 60 * SEC, world_all_sent_completed, 0, NULL);
	ck_assert(world_all_sent_completed(&w));
	world_run(&w, SEC, NULL, 0, NULL);
	for (unsigned q = 0; q < QPS; q++)
		ck_assert_uint_eq(w.h[0].cl.qp[q].failed, 0);
	world_check_bytes(&w);
	world_check_reclaimed(&w); /* the window too, with its client */
	world_free(&w);
}
END_TEST

/*
 * Connections that make no request within MRCD_FIRST_REQUEST_NS are handed out to be closed,
 * in the order they opened; one that spoke is not; the deadline is a timeout of the core's;
 * slots reused by connections that speak at once never fill the queue.
 */
START_TEST(core_pair__silent_connections_are_closed)
{
	static struct world w;
	struct mrcd_core *c;
	uint64_t t0;
	int s1, s2, s3;

	world_init(&w, 77);
	c = &w.h[0].core;
	t0 = w.now;
	for (unsigned i = 0; i < 3 * MRCD_MAX_CLIENTS; i++) {
		int s = mrcd_core_client_open(c, 4000 + (int)i, 0, t0);

		ck_assert_int_ge(s, 0);
		mrcd_core_client_heard(c, (unsigned)s); /* a client that speaks at once */
		mrcd_core_client_close(c, (unsigned)s, t0);
	}
	s1 = mrcd_core_client_open(c, 1, 0, t0);
	s2 = mrcd_core_client_open(c, 2, 0, t0 + 10);
	s3 = mrcd_core_client_open(c, 3, 0, t0 + 20);
	ck_assert(s1 >= 0 && s2 >= 0 && s3 >= 0);
	mrcd_core_client_heard(c, (unsigned)s2);
	ck_assert_uint_le(mrcd_core_control_timeout(c), t0 + MRCD_FIRST_REQUEST_NS);
	ck_assert_int_eq(mrcd_core_silent_client(c, t0 + MRCD_FIRST_REQUEST_NS - 1), -1);
	ck_assert_int_eq(mrcd_core_silent_client(c, t0 + MRCD_FIRST_REQUEST_NS + 20), s1);
	ck_assert_int_eq(mrcd_core_silent_client(c, t0 + MRCD_FIRST_REQUEST_NS + 20), s3);
	ck_assert_int_eq(mrcd_core_silent_client(c, t0 + MRCD_FIRST_REQUEST_NS + 20), -1);
	mrcd_core_client_close(c, (unsigned)s1, w.now);
	mrcd_core_client_close(c, (unsigned)s2, w.now);
	mrcd_core_client_close(c, (unsigned)s3, w.now);
	/* the world's own clients said HELLO: never silent */
	ck_assert_int_eq(mrcd_core_silent_client(c, t0 + 100 * SEC), -1);
	world_free(&w);
}
END_TEST

/* A user sees their own QPs and paths, not another's, nor the peers' node ids; an operator
 * (no viewer) sees everything [issue 20]. */
START_TEST(core_pair__users_see_only_their_own)
{
	static struct world w;
	static uint8_t buf[MRC_CTL_MAX_MSG];
	const struct mrcd_core *c;
	const uint32_t owner = 0, stranger = 1000;
	struct mrc_ctl_peer peer;
	size_t all;

	world_init(&w, 78);
	c = &w.h[0].core;
	world_run(&w, SEC, NULL, 0, NULL); /* discovery done, paths made */
	all = mrcd_core_qps_reply(c, NULL, buf, sizeof(buf));
	ck_assert_uint_gt(all, 0);
	ck_assert_uint_eq(mrcd_core_qps_reply(c, &owner, buf, sizeof(buf)), all);
	ck_assert_uint_eq(mrcd_core_qps_reply(c, &stranger, buf, sizeof(buf)), 0);
	ck_assert_uint_gt(mrcd_core_paths_reply(c, NULL, NULL, buf, sizeof(buf), w.now), 0);
	ck_assert_uint_gt(mrcd_core_paths_reply(c, &owner, NULL, buf, sizeof(buf), w.now), 0);
	ck_assert_uint_eq(mrcd_core_paths_reply(c, &stranger, NULL, buf, sizeof(buf), w.now), 0);
	ck_assert_uint_eq(mrcd_core_peers_reply(c, NULL, buf, sizeof(buf)), sizeof(peer));
	memcpy(&peer, buf, sizeof(peer));
	ck_assert_uint_eq(peer.node_id, w.h[1].core.peers.local.node_id);
	ck_assert_uint_eq(mrcd_core_peers_reply(c, &stranger, buf, sizeof(buf)), sizeof(peer));
	memcpy(&peer, buf, sizeof(peer));
	ck_assert_uint_eq(peer.node_id, 0);
	world_free(&w);
}
END_TEST

START_TEST(core_pair__clean_network)
{
	transfer(1, 0, 0, 0, 0, MRC_AUTH_OFF);
}
END_TEST

/* The cores authenticated under a cluster key (SPEC 14.6): discovery, tags and keys from
 * end to end through the daemon's core, over a lossy, duplicating, reordering network; then
 * with every packet sealed (auth = full). */
START_TEST(core_pair__authenticated)
{
	transfer(11, 0, 0, 0, 0, MRC_AUTH_HEADER);
	transfer(13 * 7919, 0.02, 0.02, 200 * US, 0, MRC_AUTH_HEADER);
	/* and sealed: every payload encrypted, opened by the receiving engine */
	transfer(17, 0, 0, 0, 0, MRC_AUTH_FULL);
	transfer(19 * 7919, 0.02, 0.02, 200 * US, 0, MRC_AUTH_FULL);
}
END_TEST

START_TEST(core_pair__loss_duplication_reordering)
{
	for (uint64_t seed = 1; seed <= 6; seed++)
		transfer(seed * 7919, 0.02, 0.02, 200 * US, 0, MRC_AUTH_OFF);
}
END_TEST

/* The local queue pushes back at random: what it refused goes again, in its path's order, and
 * nothing is lost or duplicated on the way. */
START_TEST(core_pair__local_queue_refuses)
{
	for (uint64_t seed = 1; seed <= 4; seed++)
		transfer(seed * 6007, 0.01, 0, 50 * US, 0.05, MRC_AUTH_OFF);
}
END_TEST

/*
 * workers = 2 and 3: each shard runs the QPs of its slots, with its own queues, schedule and
 * timers, the control thread's (shard 0) discovery for all; the same bytes arrive, under
 * loss, duplication, reordering and authentication.
 */
START_TEST(core_pair__sharded_over_workers)
{
	transfer_on(2, 23, 0, 0, 0, 0, MRC_AUTH_OFF);
	transfer_on(2, 29 * 7919, 0.02, 0.02, 200 * US, 0.02, MRC_AUTH_OFF);
	transfer_on(3, 31 * 7919, 0.02, 0.02, 200 * US, 0, MRC_AUTH_FULL);
	transfer_on(4, 37, 0.01, 0, 50 * US, 0, MRC_AUTH_HEADER);
}
END_TEST

static void drain_plane_1(struct world *w)
{
	ck_assert_int_eq(mrcd_core_drain_plane(&w->h[0].core, 1, true), 0);
}

/* A plane drained mid-transfer: the rest goes by the other, nothing fails. */
START_TEST(core_pair__plane_drained_mid_transfer)
{
	static struct world w;

	for (uint64_t seed = 1; seed <= 3; seed++) {
		world_init(&w, seed * 104729);
		w.expect_success = true;
		world_post_everything(&w);
		world_run(&w, 60 * SEC, world_all_sent_completed, w.now + world_rnd(&w) % (2 * MS), drain_plane_1);
		ck_assert(world_all_sent_completed(&w));
		for (unsigned q = 0; q < QPS; q++)
			ck_assert_uint_eq(w.h[0].cl.qp[q].failed, 0);
		world_run(&w, SEC, NULL, 0, NULL);
		world_check_bytes(&w);
		world_check_reclaimed(&w);
		world_free(&w);
	}
}
END_TEST

static void kill_client_a(struct world *w)
{
	world_client_close(&w->h[0]);
}

static void kill_client_b(struct world *w)
{
	world_client_close(&w->h[1]);
}

static void restart_daemon_b(struct world *w)
{
	world_host_crash(w, 1);
	world_host_start(w, 1);
}

static bool a_done_or_gone(struct world *w)
{
	return w->disaster_done && (!w->h[0].cl.open || world_all_sent_completed(w));
}

/*
 * A client dies, or the peer's daemon restarts, at a random moment: the survivor's requests
 * all complete (the ones the dead side never took with an error), and everything is
 * reclaimed on both sides.
 */
static bool disaster(uint64_t seed, void (*what)(struct world *))
{
	static struct world w;
	bool mid;

	world_init(&w, seed);
	w.loss = 0.01;
	world_post_everything(&w);
	world_run(&w, 120 * SEC, a_done_or_gone, w.now + world_rnd(&w) % (2 * MS), what);
	ck_assert_msg(a_done_or_gone(&w), "seed %llu: A's requests neither done nor gone",
		      (unsigned long long)seed);
	mid = w.struck_mid_transfer;
	world_check_reclaimed(&w);
	world_free(&w);
	return mid;
}

/* The moments are random: most of them must fall inside the transfer, or this tests little. */
START_TEST(core_pair__a_client_dies)
{
	unsigned mid = 0;

	for (uint64_t seed = 1; seed <= 4; seed++) {
		mid += disaster(seed * 31, kill_client_a);
		mid += disaster(seed * 37, kill_client_b);
	}
	ck_assert_uint_ge(mid, 4);
}
END_TEST

START_TEST(core_pair__peer_daemon_restarts)
{
	unsigned mid = 0;

	for (uint64_t seed = 1; seed <= 4; seed++)
		mid += disaster(seed * 41, restart_daemon_b);
	ck_assert_uint_ge(mid, 2);
}
END_TEST

/*
 * A working QP's receives ring no doorbell: a SEND that needs one makes the daemon read the
 * receive ring as it arrives. Once the QP is in error its receives must complete flushed,
 * so from then on they do ring.
 */
START_TEST(core_pair__receives_ring_no_doorbell)
{
	static struct world w;
	struct host *b = &w.h[1];
	struct mrc_ctl_handle err = { 0, 0 };
	struct mrc_rq_entry re = { .wr_id = 7, .num_sge = 1 };
	unsigned sends = 0, flushed = 0;
	struct mrc_cq_entry e;

	world_init(&w, 77);
	for (unsigned q = 0; q < QPS; q++)
		for (unsigned i = 0; i < WRS; i++)
			w.plan[q][i].opcode = i % 2 ? MRC_SQ_SEND : MRC_SQ_SEND_IMM;
	w.expect_success = true;
	world_pump_host(b);
	for (unsigned q = 0; q < QPS; q++) {
		ck_assert(!mrc_ring_doorbell_wanted(&b->cl.qp[q].rq));
		ck_assert(mrc_ring_doorbell_wanted(&b->cl.qp[q].sq));
	}
	world_post_everything(&w);
	world_run(&w, 60 * SEC, world_all_sent_completed, 0, NULL);
	ck_assert(world_all_sent_completed(&w));
	world_run(&w, SEC, NULL, 0, NULL);
	for (unsigned q = 0; q < QPS; q++) {
		sends += b->cl.qp[q].received;
		ck_assert_uint_eq(b->cl.qp[q].failed, 0);
	}
	ck_assert_uint_eq(sends, QPS * WRS);
	ck_assert_uint_eq(w.doorbells[1][1], 0);
	ck_assert_uint_gt(w.doorbells[0][0], 0);
	world_check_bytes(&w);

	/* in error, a receive posted to QP 0 rings and completes flushed */
	err.handle = b->cl.qp[0].qpn;
	ck_assert_int_eq(world_request(b, MRC_CTL_ERROR_QP, &err, sizeof(err), NULL, NULL, 0), 0);
	world_pump_host(b);
	while (mrc_ring_consume(&b->cl.cq, &e) == 1)
		;
	ck_assert(mrc_ring_doorbell_wanted(&b->cl.qp[0].rq));
	re.sge[0] = (struct mrc_shm_sge){ world_slot_addr(&b->cl, 0, 0), SLOT, b->cl.keys.lkey };
	ck_assert_int_eq(mrc_ring_produce(&b->cl.qp[0].rq, &re), 0);
	world_ring(b, &b->cl.qp[0], &b->cl.qp[0].rq);
	ck_assert_uint_eq(w.doorbells[1][1], 1);
	world_pump_host(b);
	while (mrc_ring_consume(&b->cl.cq, &e) == 1)
		if (e.wr_id == 7 && e.status == MRC_CQ_WR_FLUSH_ERR)
			flushed++;
	ck_assert_uint_eq(flushed, 1);
	world_free(&w);
}
END_TEST

Suite *core_pair_suite(void)
{
	Suite *s = suite_create("core_pair");
	TCase *tc = tcase_create("core_pair");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, core_pair__users_see_only_their_own);
	tcase_add_test(tc, core_pair__clean_network);
	tcase_add_test(tc, core_pair__sharded_over_workers);
	tcase_add_test(tc, core_pair__authenticated);
	tcase_add_test(tc, core_pair__through_a_memory_window);
	tcase_add_test(tc, core_pair__silent_connections_are_closed);
	tcase_add_test(tc, core_pair__loss_duplication_reordering);
	tcase_add_test(tc, core_pair__local_queue_refuses);
	tcase_add_test(tc, core_pair__plane_drained_mid_transfer);
	tcase_add_test(tc, core_pair__a_client_dies);
	tcase_add_test(tc, core_pair__peer_daemon_restarts);
	tcase_add_test(tc, core_pair__receives_ring_no_doorbell);
	suite_add_tcase(s, tc);
	return s;
}
