/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What memory windows need of lib/proto/conn*.c, in virtual time: local operations (a bind,
 * a local invalidation) that send nothing yet complete in posting order among the requests
 * around them, and SEND_INV, which invalidates the receiver's key only once every
 * earlier message is in place, so WRITEs sprayed ahead of it still land [R-520..R-522].
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/netsim.h"
#include "suites.h"

#define MAX_SEEN 16

struct seen {
	struct mrc_completion wc[MAX_SEEN];
	unsigned n;
};

static void record(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct seen *s = ep->user;

	if (!from_recv && s->n < MAX_SEEN)
		s->wc[s->n++] = *wc;
}

static bool sends_seen(struct sim *sim, void *arg)
{
	const struct seen *s = sim->eps[0]->user;

	return s->n >= *(const unsigned *)arg;
}

static bool receive_seen(struct sim *sim, void *arg)
{
	(void)arg;
	return sim->eps[1]->recv_completions > 0;
}

/* Two planes of four paths each, with loss and reordering enough to spread a message. */
static struct sim *lossy_pair(struct sim_endpoint **a, struct sim_endpoint **b, struct seen *s)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;

	sim_config_default(&sc);
	sc.planes = 2;
	sc.core.loss = 0.02;
	sc.core.jitter_ns = 30000;
	mrc_conn_config_default(&cc);
	cc.sq_depth = 64;
	sim = sim_new(&sc);
	sim_connect(sim, 0, 1, &cc, 4, a, b);
	memset(s, 0, sizeof(*s));
	(*a)->user = s;
	(*a)->on_complete = record;
	return sim;
}

static void post(struct sim_endpoint *ep, uint8_t opcode, uint64_t wr_id, bool signaled,
		 void *src, uint32_t len, uint32_t lkey, uint32_t rkey, uint64_t raddr)
{
	struct mrc_send_wr wr = { .wr_id = wr_id, .opcode = opcode,
				  .flags = signaled ? MRC_SEND_SIGNALED : 0, .rkey = rkey,
				  .raddr = raddr };

	if (src) {
		wr.num_sge = 1;
		wr.sge[0] = (struct mrc_sge){ src, (uintptr_t)src, len, lkey };
	}
	ck_assert_int_eq(mrc_conn_post_send(ep->conn, &wr), 0);
	ep->dirty = true;
}

static void post_receive(struct sim_endpoint *ep, void *buf, uint32_t len, uint32_t lkey)
{
	struct mrc_recv_wr wr = { .wr_id = 77, .num_sge = 1 };

	wr.sge[0] = (struct mrc_sge){ buf, (uintptr_t)buf, len, lkey };
	ck_assert_int_eq(mrc_conn_post_recv(ep->conn, &wr), 0);
}

/*
 * A local operation behind a WRITE in flight waits for it; one with nothing before it
 * completes as it is posted; unsignaled ones complete silently; none sends a packet.
 */
START_TEST(mrc_conn__local_operations_complete_in_posting_order)
{
	enum { LEN = 96 * 1024 };
	static const uint8_t want_op[] = { MRC_WC_BIND_MW, MRC_WC_RDMA_WRITE, MRC_WC_BIND_MW,
					   MRC_WC_SEND, MRC_WC_LOCAL_INV };
	static const uint64_t want_id[] = { 10, 1, 2, 4, 5 };
	struct sim_endpoint *a, *b;
	struct seen s;
	struct sim *sim = lossy_pair(&a, &b, &s);
	uint8_t *src = malloc(LEN), *dst = calloc(1, LEN), rcv[64], msg[40] = "hello";
	uint32_t src_key = sim_register(a, src, LEN, 0);
	uint32_t msg_key = sim_register(a, msg, sizeof(msg), 0);
	uint32_t dst_key = sim_register(b, dst, LEN, MRC_ACCESS_REMOTE_WRITE);
	uint32_t rcv_key = sim_register(b, rcv, sizeof(rcv), 0);
	struct mrc_send_wr bad = { .opcode = MRC_WR_BIND_MW, .num_sge = 1 };
	unsigned want = 5;
	uint64_t packets;

	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);
	for (unsigned i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	post_receive(b, rcv, sizeof(rcv), rcv_key);

	/* nothing before it: done at once, without the network */
	post(a, MRC_WR_BIND_MW, 10, true, NULL, 0, 0, 0, 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(mrc_conn_stats(a->conn)->tx_data_packets, 0);
	bad.sge[0] = (struct mrc_sge){ src, (uintptr_t)src, 8, src_key };
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &bad), -EINVAL); /* it carries no data */

	post(a, MRC_WR_WRITE, 1, true, src, LEN, src_key, dst_key, (uintptr_t)dst);
	post(a, MRC_WR_BIND_MW, 2, true, NULL, 0, 0, 0, 0);
	post(a, MRC_WR_LOCAL_INV, 3, false, NULL, 0, 0, 0, 0);
	post(a, MRC_WR_SEND, 4, true, msg, sizeof(msg), msg_key, 0, 0);
	post(a, MRC_WR_LOCAL_INV, 5, true, NULL, 0, 0, 0, 0);
	ck_assert_uint_eq(s.n, 1); /* all behind the WRITE */
	sim_run(sim, 2000000000ull, sends_seen, &want);
	ck_assert_uint_eq(s.n, want);
	for (unsigned i = 0; i < want; i++) {
		ck_assert_uint_eq(s.wc[i].status, MRC_WC_SUCCESS);
		ck_assert_uint_eq(s.wc[i].wr_id, want_id[i]);
		ck_assert_uint_eq(s.wc[i].opcode, want_op[i]);
	}
	ck_assert_mem_eq(dst, src, LEN);
	ck_assert_mem_eq(rcv, msg, sizeof(msg));
	/* the WRITE's packets and the SEND's one, nothing for the local operations */
	packets = mrc_conn_stats(a->conn)->tx_data_packets - mrc_conn_stats(a->conn)->tx_retransmits;
	ck_assert_uint_eq(packets, LEN / 4096 + 1); /* the default max_payload */
	free(src);
	free(dst);
	sim_free(sim);
}
END_TEST

/* Behind a request that fails, a local operation is flushed like any other. */
START_TEST(mrc_conn__local_operation_behind_a_failure_is_flushed)
{
	struct sim_endpoint *a, *b;
	struct seen s;
	struct sim *sim = lossy_pair(&a, &b, &s);
	uint8_t src[256] = { 1 };
	uint32_t src_key = sim_register(a, src, sizeof(src), 0);
	unsigned want = 2;

	(void)b;
	post(a, MRC_WR_WRITE, 1, true, src, sizeof(src), src_key, 0xdead00, 0x1000);
	post(a, MRC_WR_BIND_MW, 2, true, NULL, 0, 0, 0, 0);
	sim_run(sim, 2000000000ull, sends_seen, &want);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_uint_eq(s.wc[0].status, MRC_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(s.wc[1].status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(s.wc[1].opcode, MRC_WC_BIND_MW);
	sim_free(sim);
}
END_TEST

/*
 * A WRITE into a window and a SEND_INV of it right behind: sprayed and reordered, the SEND_INV
 * often arrives before the WRITE's last packets, which still land, because the key dies only
 * when the SEND_INV is delivered. The receive says WITH_INV and the key; afterwards the key
 * is refused.
 */
START_TEST(mrc_conn__send_inv_invalidates_after_earlier_messages)
{
	enum { LEN = 256 * 1024 };
	struct sim_endpoint *a, *b;
	struct seen s;
	struct sim *sim = lossy_pair(&a, &b, &s);
	uint8_t *src = malloc(LEN), *dst = calloc(1, LEN), rcv[64], msg[24] = "done";
	uint32_t src_key = sim_register(a, src, LEN, 0);
	uint32_t msg_key = sim_register(a, msg, sizeof(msg), 0);
	uint32_t win = sim_register_window(b, dst, LEN, MRC_ACCESS_REMOTE_WRITE);
	uint32_t rcv_key = sim_register(b, rcv, sizeof(rcv), 0);
	unsigned want = 2;

	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);
	for (unsigned i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 13 + 1);
	post_receive(b, rcv, sizeof(rcv), rcv_key);
	post(a, MRC_WR_WRITE, 1, true, src, LEN, src_key, win, (uintptr_t)dst);
	post(a, MRC_WR_SEND_INV, 2, true, msg, sizeof(msg), msg_key, win, 0);
	sim_run(sim, 2000000000ull, sends_seen, &want);
	sim_run(sim, sim->now_ns + 1000000000ull, receive_seen, NULL);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_uint_eq(s.wc[0].status, MRC_WC_SUCCESS);
	ck_assert_uint_eq(s.wc[1].status, MRC_WC_SUCCESS);
	ck_assert_uint_eq(s.wc[1].opcode, MRC_WC_SEND);
	ck_assert_mem_eq(dst, src, LEN);
	ck_assert_uint_eq(b->recv_completions, 1);
	ck_assert_uint_eq(b->last_wc.status, MRC_WC_SUCCESS);
	ck_assert_uint_eq(b->last_wc.opcode, MRC_WC_RECV);
	ck_assert_uint_eq(b->last_wc.flags & (MRC_WC_WITH_INV | MRC_WC_WITH_IMM), MRC_WC_WITH_INV);
	ck_assert_uint_eq(b->last_wc.imm, win);
	ck_assert_uint_eq(b->last_wc.byte_len, sizeof(msg));
	ck_assert_mem_eq(rcv, msg, sizeof(msg));

	/* the key is dead: a WRITE through it now is refused */
	want = 3;
	post(a, MRC_WR_WRITE, 3, true, src, 64, src_key, win, (uintptr_t)dst);
	sim_run(sim, sim->now_ns + 2000000000ull, sends_seen, &want);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(s.wc[2].status, MRC_WC_REM_ACCESS_ERR);
	free(src);
	free(dst);
	sim_free(sim);
}
END_TEST

/*
 * SEND_INV of a key the receiver may not invalidate (a region's, or none at all): refused as
 * an invalid request; the requester's SEND and the receiver's receive complete in error, and
 * the region keeps working for nobody else to lose it.
 */
static void send_inv_refused(bool region_key)
{
	struct sim_endpoint *a, *b;
	struct seen s;
	struct sim *sim = lossy_pair(&a, &b, &s);
	uint8_t buf[64] = { 0 }, rcv[64], msg[8] = "x";
	uint32_t msg_key = sim_register(a, msg, sizeof(msg), 0);
	uint32_t region = sim_register(b, buf, sizeof(buf), MRC_ACCESS_REMOTE_WRITE);
	uint32_t rcv_key = sim_register(b, rcv, sizeof(rcv), 0);
	unsigned want = 1;

	post_receive(b, rcv, sizeof(rcv), rcv_key);
	post(a, MRC_WR_SEND_INV, 1, true, msg, sizeof(msg), msg_key, region_key ? region : 0, 0);
	sim_run(sim, 2000000000ull, sends_seen, &want);
	sim_run(sim, sim->now_ns + 1000000000ull, receive_seen, NULL);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.wc[0].status, MRC_WC_REM_INV_REQ_ERR);
	ck_assert_uint_eq(b->recv_completions, 1);
	ck_assert_uint_eq(b->last_wc.status, MRC_WC_REM_INV_REQ_ERR);
	ck_assert_uint_eq(b->mrs[0].key, region); /* still there */
	ck_assert_uint_gt(b->drops[MRC_DROP_INVALID_REQ], 0);
	sim_free(sim);
}

START_TEST(mrc_conn__send_inv_of_a_region_is_refused)
{
	send_inv_refused(true);
}
END_TEST

START_TEST(mrc_conn__send_inv_of_no_key_is_refused)
{
	send_inv_refused(false);
}
END_TEST

Suite *windows_suite(void)
{
	Suite *s = suite_create("windows");
	TCase *tc = tcase_create("local_and_invalidate");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mrc_conn__local_operations_complete_in_posting_order);
	tcase_add_test(tc, mrc_conn__local_operation_behind_a_failure_is_flushed);
	tcase_add_test(tc, mrc_conn__send_inv_invalidates_after_earlier_messages);
	tcase_add_test(tc, mrc_conn__send_inv_of_a_region_is_refused);
	tcase_add_test(tc, mrc_conn__send_inv_of_no_key_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
