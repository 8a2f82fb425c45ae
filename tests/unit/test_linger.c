/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/linger.c: a destroyed QP's last duty (SPEC 11.4), in virtual time. The case that
 * made it necessary: a collectives library's rank has seen the completion of its peer's last
 * message and destroys its QP, while the acknowledgement of that message is lost on the way
 * back; the peer resends, and without anyone to answer it fails work it had delivered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/netsim.h"
#include "proto/codec.h"
#include "suites.h"

#define MSG_LEN 10000 /* three packets at the default payload */
#define MS 1000000ull

struct pair {
	struct sim *sim;
	struct sim_endpoint *a, *b;
	uint8_t src[MSG_LEN], rcv[2][MSG_LEN];
	unsigned a_ok, a_err, b_ok, b_err;
	uint8_t a_status;
	uint64_t a_done_at;
	bool b_dark_on_receive; /* b's uplinks go dark as its receive completes: its ACK is lost */
};

static void b_uplinks(struct sim *sim, bool dark)
{
	for (unsigned p = 0; p < sim->n_planes; p++)
		sim->uplink[1][p].p.blackhole = dark;
}

static void on_a(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct pair *x = ep->user;

	(void)from_recv;
	if (wc->status == MRC_WC_SUCCESS) {
		x->a_ok++;
	} else {
		x->a_err++;
		x->a_status = wc->status;
	}
	x->a_done_at = ep->sim->now_ns;
}

static void on_b(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct pair *x = ep->user;

	(void)from_recv;
	if (wc->status == MRC_WC_SUCCESS)
		x->b_ok++;
	else
		x->b_err++;
	if (x->b_dark_on_receive)
		b_uplinks(ep->sim, true);
}

static void pair_init(struct pair *x)
{
	struct sim_config sc;
	struct mrc_conn_config cc;

	memset(x, 0, sizeof(*x));
	sim_config_default(&sc);
	sc.planes = 2;
	mrc_conn_config_default(&cc);
	x->sim = sim_new(&sc);
	sim_connect(x->sim, 0, 1, &cc, 2, &x->a, &x->b);
	x->a->user = x->b->user = x;
	x->a->on_complete = on_a;
	x->b->on_complete = on_b;
	for (unsigned i = 0; i < MSG_LEN; i++)
		x->src[i] = (uint8_t)(i * 7 + 3);
}

/* a SENDs the message into b's receive buffer k (posted first when post_recv). */
static void send_one(struct pair *x, unsigned k, bool post_recv)
{
	struct mrc_send_wr wr = { .wr_id = k, .opcode = MRC_WR_SEND, .flags = MRC_SEND_SIGNALED,
				  .num_sge = 1 };
	struct mrc_recv_wr rwr = { .wr_id = k, .num_sge = 1 };

	wr.sge[0] = (struct mrc_sge){ x->src, (uintptr_t)x->src, MSG_LEN, 0 };
	rwr.sge[0] = (struct mrc_sge){ x->rcv[k], 0, MSG_LEN, 0 };
	if (post_recv)
		ck_assert_int_eq(mrc_conn_post_recv(x->b->conn, &rwr), 0);
	ck_assert_int_eq(mrc_conn_post_send(x->a->conn, &wr), 0);
	x->a->dirty = true;
}

static bool b_received(struct sim *sim, void *arg)
{
	(void)sim;
	return ((struct pair *)arg)->b_ok > 0;
}

static bool a_finished(struct sim *sim, void *arg)
{
	struct pair *x = arg;

	(void)sim;
	return x->a_ok + x->a_err > 0;
}

/*
 * b receives the whole message and its application destroys the QP at once, but the ACK b
 * sends for it is lost. Returns with a's send finished one way or the other.
 */
static void deliver_then_destroy_with_ack_lost(struct pair *x, bool linger)
{
	send_one(x, 0, true);
	x->b_dark_on_receive = true;
	sim_run(x->sim, 1000 * MS, b_received, x);
	ck_assert_uint_eq(x->b_ok, 1);
	ck_assert(!memcmp(x->rcv[0], x->src, MSG_LEN));
	x->b_dark_on_receive = false;
	sim_run(x->sim, x->sim->now_ns + 20000, NULL, NULL); /* the ACK goes, into the dark */
	ck_assert_uint_eq(x->a_ok + x->a_err, 0);
	sim_destroy(x->b, linger);
	b_uplinks(x->sim, false);
	sim_run(x->sim, x->sim->now_ns + 10000 * MS, a_finished, x);
}

/*
 * What lingering is for: the peer's resend of a message the destroyed QP had received is
 * acknowledged, and the peer's work completes successfully. Afterwards the lingering
 * connection goes once the peer is quiet.
 */
START_TEST(mrc_conn_close__resend_of_delivered_message_acknowledged)
{
	struct pair x;

	pair_init(&x);
	deliver_then_destroy_with_ack_lost(&x, true);
	ck_assert_msg(x.a_ok == 1 && x.a_err == 0, "requester: %u ok, %u failed (%s)", x.a_ok,
		      x.a_err, mrc_wc_status_name(x.a_status));
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_RTS);
	ck_assert_uint_ge(mrc_conn_stats(x.a->conn)->tx_retransmits, 1);
	ck_assert_ptr_nonnull(x.b->conn);
	ck_assert_uint_ge(x.b->drops[MRC_DROP_DUPLICATE], 1);
	sim_run(x.sim, x.sim->now_ns + 1000 * MS, NULL, NULL);
	ck_assert_ptr_null(x.b->conn);
	sim_free(x.sim);
}
END_TEST

/*
 * The failure above, as it was before lingering: a QP freed at once leaves the peer resending
 * into nothing, and its delivered message fails with RETRY_EXC_ERR when its budget runs out.
 */
START_TEST(mrc_conn_close__without_linger_the_peer_fails)
{
	struct pair x;

	pair_init(&x);
	deliver_then_destroy_with_ack_lost(&x, false);
	ck_assert_uint_eq(x.a_ok, 0);
	ck_assert_uint_eq(x.a_err, 1);
	ck_assert_uint_eq(x.a_status, MRC_WC_RETRY_EXC_ERR);
	ck_assert_uint_gt(x.sim->unroutable, 0);
	sim_free(x.sim);
}
END_TEST

/*
 * Work posted to a QP whose peer is gone can never be taken: the lingering connection answers
 * it with CLOSE, and the requester fails it within a few round trips instead of resending it
 * for its whole retry budget (0.54 s here).
 */
START_TEST(mrc_conn_close__new_data_answered_with_close)
{
	struct pair x;
	uint64_t posted;

	pair_init(&x);
	send_one(&x, 0, true);
	sim_run(x.sim, 1000 * MS, a_finished, &x);
	ck_assert_uint_eq(x.a_ok, 1);
	sim_destroy(x.b, true);
	x.a_ok = 0;
	posted = x.sim->now_ns;
	send_one(&x, 1, false);
	sim_run(x.sim, posted + 10000 * MS, a_finished, &x);
	ck_assert_uint_eq(x.a_ok, 0);
	ck_assert_uint_eq(x.a_err, 1);
	ck_assert_uint_eq(x.a_status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_msg(x.a_done_at - posted < 5 * MS, "failed after %.3f ms",
		      (x.a_done_at - posted) / 1e6);
	ck_assert_ptr_nonnull(x.b->conn);
	ck_assert_uint_ge(x.b->drops[MRC_DROP_QP_CLOSED], 1);
	ck_assert_uint_eq(x.b_ok + x.b_err, 1); /* the first message only: nothing after */
	sim_free(x.sim);
}
END_TEST

/*
 * The ACK of a delivered message is lost, the QP destroyed, and the peer's next message
 * arrives before its resend of the first: the CLOSE that refuses the second follows an ACK of
 * the first on the same path, so the first completes and only the second fails.
 */
START_TEST(mrc_conn_close__close_follows_an_ack_of_what_was_delivered)
{
	struct pair x;
	uint64_t posted;

	pair_init(&x);
	send_one(&x, 0, true);
	x.b_dark_on_receive = true;
	sim_run(x.sim, 1000 * MS, b_received, &x);
	x.b_dark_on_receive = false;
	sim_run(x.sim, x.sim->now_ns + 20000, NULL, NULL); /* its ACK, into the dark */
	ck_assert_uint_eq(x.a_ok + x.a_err, 0);
	sim_destroy(x.b, true);
	b_uplinks(x.sim, false);
	posted = x.sim->now_ns;
	send_one(&x, 1, false); /* before a's RTO resends the first */
	sim_run(x.sim, posted + 10000 * MS, NULL, NULL);
	ck_assert_msg(x.a_ok == 1 && x.a_err == 1, "requester: %u ok, %u failed", x.a_ok, x.a_err);
	ck_assert_uint_eq(x.a_status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(mrc_conn_stats(x.a->conn)->tx_retransmits, 0); /* nothing resent */
	sim_free(x.sim);
}
END_TEST

static bool b_started_read(struct sim *sim, void *arg)
{
	struct pair *x = arg;
	struct mrc_conn_info in;

	(void)sim;
	mrc_conn_get_info(x->b->conn, &in);
	return in.rr_started > 0;
}

/*
 * A QP destroyed while it owes READ responses: the requester's READ, acknowledged, has no
 * timer left, and would wait for ever; it hears CLOSE and fails at once.
 */
START_TEST(mrc_conn_close__owed_read_responses_answered_with_close)
{
	static uint8_t src[1 << 20], sink[1 << 20];
	struct mrc_send_wr wr = { .wr_id = 3, .opcode = MRC_WR_READ, .flags = MRC_SEND_SIGNALED,
				  .num_sge = 1 };
	struct pair x;
	uint64_t closed;

	pair_init(&x);
	wr.sge[0] = (struct mrc_sge){ sink, (uintptr_t)sink, sizeof(sink),
				      sim_register(x.a, sink, sizeof(sink), 0) };
	wr.rkey = sim_register(x.b, src, sizeof(src), MRC_ACCESS_REMOTE_READ);
	wr.raddr = (uintptr_t)src;
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 1000 * MS, b_started_read, &x);
	ck_assert(b_started_read(x.sim, &x));
	closed = x.sim->now_ns;
	sim_destroy(x.b, true);
	sim_run(x.sim, closed + 30000 * MS, a_finished, &x);
	ck_assert_msg(x.a_err == 1, "the READ is still waiting %.0f ms after the destroy",
		      (x.sim->now_ns - closed) / 1e6);
	ck_assert_uint_eq(x.a_status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_msg(x.a_done_at - closed < 5 * MS, "failed after %.3f ms",
		      (x.a_done_at - closed) / 1e6);
	sim_free(x.sim);
}
END_TEST

/* The peer's QP goes too (its CLOSE arrives): nothing left to linger for. */
START_TEST(mrc_conn_close__peer_close_ends_lingering)
{
	struct pair x;
	uint64_t t0;

	pair_init(&x);
	send_one(&x, 0, true);
	sim_run(x.sim, 1000 * MS, a_finished, &x);
	t0 = x.sim->now_ns;
	sim_destroy(x.b, true);
	mrc_conn_set_error(x.a->conn, t0); /* sends CLOSE (error) */
	x.a->dirty = true;
	sim_run(x.sim, t0 + 10 * MS, NULL, NULL);
	ck_assert_ptr_null(x.b->conn);
	sim_free(x.sim);
}
END_TEST

/* A probe from a peer that still has packets out is answered while the QP lingers. */
START_TEST(mrc_conn_close__probe_answered_while_lingering)
{
	struct mrc_rx_info rx = { .plane = 1, .sport = 50000 };
	struct mrc_packet probe, reply;
	struct mrc_tx_info tx;
	uint8_t buf[2048];
	struct pair x;
	size_t len;

	pair_init(&x);
	sim_destroy(x.b, true);
	memset(&probe, 0, sizeof(probe));
	probe.opcode = MRC_OP_PROBE;
	probe.dst_qpn = x.b->qpn;
	probe.path_id = 2;
	probe.u.probe.nonce = 0x1234567890abcdefull;
	ck_assert_int_eq(mrc_conn_recv_packet(x.b->conn, &rx, &probe, x.sim->now_ns),
			 MRC_DROP_NONE);
	ck_assert(mrc_conn_send(x.b->conn, buf, sizeof(buf), &tx, x.sim->now_ns, &len));
	ck_assert_int_eq(mrc_decode(buf, len, &reply), MRC_WIRE_OK);
	ck_assert_uint_eq(reply.opcode, MRC_OP_PROBE_REPLY);
	ck_assert_uint_eq(reply.u.probe.nonce, probe.u.probe.nonce);
	ck_assert_uint_eq(tx.plane, 1);
	sim_free(x.sim);
}
END_TEST

/*
 * How long it lingers: until the peer has been quiet for linger_quiet_ns, every packet from
 * the peer starting that wait again, but never beyond linger_max_ns.
 */
START_TEST(mrc_conn_close__lingers_until_quiet_at_most_max)
{
	struct mrc_conn_config cc;
	struct mrc_rx_info rx = { .plane = 0 };
	struct mrc_packet dup;
	struct pair x;
	uint64_t t0;

	mrc_conn_config_default(&cc);
	pair_init(&x);
	send_one(&x, 0, true);
	sim_run(x.sim, 1000 * MS, a_finished, &x);
	ck_assert_uint_eq(x.a_ok, 1);

	/* quiet peer: CLOSED after linger_quiet_ns */
	t0 = x.sim->now_ns;
	sim_destroy(x.b, true);
	sim_run(x.sim, t0 + cc.linger_quiet_ns - MS, NULL, NULL);
	ck_assert_ptr_nonnull(x.b->conn);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_CLOSING);
	sim_run(x.sim, t0 + cc.linger_quiet_ns + MS, NULL, NULL);
	ck_assert_ptr_null(x.b->conn);
	sim_free(x.sim);

	/* a peer that never stops resending what was received: CLOSED at linger_max_ns */
	pair_init(&x);
	send_one(&x, 0, true);
	sim_run(x.sim, 1000 * MS, a_finished, &x);
	memset(&dup, 0, sizeof(dup));
	dup.opcode = MRC_OP_SEND;
	dup.dst_qpn = x.b->qpn;
	dup.psn = mrc_conn_rcv_base(x.b->conn) - 1;
	t0 = x.sim->now_ns;
	sim_destroy(x.b, true);
	for (uint64_t t = t0 + 150 * MS; t < t0 + cc.linger_max_ns + 500 * MS; t += 150 * MS) {
		sim_run(x.sim, t, NULL, NULL);
		if (t < t0 + cc.linger_max_ns) {
			ck_assert_msg(x.b->conn && mrc_conn_state(x.b->conn) == MRC_QPS_CLOSING,
				      "gone %.0f ms after destroy, resends still coming",
				      (t - t0) / 1e6);
			ck_assert_int_eq(mrc_conn_recv_packet(x.b->conn, &rx, &dup, t),
					 MRC_DROP_DUPLICATE);
			x.b->dirty = true;
		}
	}
	ck_assert_ptr_null(x.b->conn);
	sim_free(x.sim);
}
END_TEST

/*
 * Destroying discards work without completions, as verbs does: receives still posted and a
 * send still outstanding produce no callback, and no data leaves afterwards.
 */
START_TEST(mrc_conn_close__no_completions_no_data_after_destroy)
{
	struct mrc_send_wr wr = { .wr_id = 9, .opcode = MRC_WR_SEND, .flags = MRC_SEND_SIGNALED,
				  .num_sge = 1 };
	struct mrc_recv_wr rwr = { .wr_id = 5, .num_sge = 1 };
	uint64_t data_before;
	struct pair x;

	pair_init(&x);
	rwr.sge[0] = (struct mrc_sge){ x.rcv[1], 0, MSG_LEN, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	/* b sends to a, which has no receive posted: RNR, so it stays outstanding */
	wr.sge[0] = (struct mrc_sge){ x.src, (uintptr_t)x.src, MSG_LEN, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.b->conn, &wr), 0);
	x.b->dirty = true;
	sim_run(x.sim, x.sim->now_ns + 5 * MS, NULL, NULL);
	ck_assert_uint_eq(x.b_ok + x.b_err, 0);
	data_before = mrc_conn_stats(x.b->conn)->tx_data_packets;
	ck_assert_uint_gt(data_before, 0);
	sim_destroy(x.b, true);
	ck_assert_int_eq(mrc_conn_post_send(x.b->conn, &wr), -EINVAL);
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), -EINVAL);
	sim_run(x.sim, x.sim->now_ns + 100 * MS, NULL, NULL);
	ck_assert_uint_eq(x.b_ok + x.b_err, 0);
	ck_assert_uint_eq(mrc_conn_stats(x.b->conn)->tx_data_packets, data_before);
	sim_free(x.sim);
}
END_TEST

/* A QP already in error has nothing to linger for, but the CLOSE it owes still goes. */
START_TEST(mrc_conn_close__from_error_sends_its_close)
{
	uint8_t buf[2048];
	struct mrc_tx_info tx;
	struct mrc_packet pkt;
	size_t len;
	struct pair x;

	pair_init(&x);
	mrc_conn_set_error(x.b->conn, x.sim->now_ns);
	mrc_conn_close(x.b->conn, x.sim->now_ns);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_CLOSED);
	ck_assert(mrc_conn_send(x.b->conn, buf, sizeof(buf), &tx, x.sim->now_ns, &len));
	ck_assert_int_eq(mrc_decode(buf, len, &pkt), MRC_WIRE_OK);
	ck_assert_uint_eq(pkt.opcode, MRC_OP_CLOSE);
	ck_assert_uint_eq(pkt.u.close.reason, MRC_CLOSE_ERROR);
	ck_assert(!mrc_conn_send(x.b->conn, buf, sizeof(buf), &tx, x.sim->now_ns, &len));
	ck_assert_uint_eq(mrc_conn_next_timeout(x.b->conn), UINT64_MAX);
	sim_free(x.sim);
}
END_TEST

Suite *linger_suite(void)
{
	Suite *s = suite_create("linger");
	TCase *tc = tcase_create("linger");

	tcase_add_test(tc, mrc_conn_close__resend_of_delivered_message_acknowledged);
	tcase_add_test(tc, mrc_conn_close__without_linger_the_peer_fails);
	tcase_add_test(tc, mrc_conn_close__new_data_answered_with_close);
	tcase_add_test(tc, mrc_conn_close__close_follows_an_ack_of_what_was_delivered);
	tcase_add_test(tc, mrc_conn_close__owed_read_responses_answered_with_close);
	tcase_add_test(tc, mrc_conn_close__peer_close_ends_lingering);
	tcase_add_test(tc, mrc_conn_close__probe_answered_while_lingering);
	tcase_add_test(tc, mrc_conn_close__lingers_until_quiet_at_most_max);
	tcase_add_test(tc, mrc_conn_close__no_completions_no_data_after_destroy);
	tcase_add_test(tc, mrc_conn_close__from_error_sends_its_close);
	suite_add_tcase(s, tc);
	return s;
}
