/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Atomics in lib/proto/conn*.c, in virtual time [R-321..R-325]: FETCH_ADD and CMP_SWAP
 * results, each operation run exactly once while requests and responses are lost,
 * duplicated and reordered over several paths, with the fast path placing the responses or
 * not; and the refusals (alignment, QP access, region access, the scatter element's size).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/netsim.h"
#include "suites.h"

struct tally {
	uint64_t ok, failed;
	struct mrc_completion last_error;
};

static void count(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct tally *t = ep->user;

	(void)from_recv;
	if (wc->status == MRC_WC_SUCCESS) {
		t->ok++;
	} else {
		if (!t->failed)
			t->last_error = *wc;
		t->failed++;
	}
}

static bool settled(struct sim *sim, void *arg)
{
	const uint64_t *want = arg;
	struct sim_endpoint *a = sim->eps[0];
	const struct tally *t = a->user;

	return t->ok + t->failed >= *want;
}

/* A pair whose responder admits atomics, on 2 planes with 4 paths each. */
static struct sim *atomic_pair(struct sim_config *sc, struct sim_endpoint **a,
			       struct sim_endpoint **b, struct tally *t)
{
	struct mrc_conn_config cc;
	struct sim *sim;

	mrc_conn_config_default(&cc);
	cc.qp_access |= MRC_ACCESS_REMOTE_ATOMIC;
	cc.sq_depth = 64;
	sim = sim_new(sc);
	sim_connect(sim, 0, 1, &cc, 4, a, b);
	memset(t, 0, sizeof(*t));
	(*a)->user = t;
	(*a)->on_complete = count;
	return sim;
}

static struct mrc_send_wr atomic_wr(uint8_t opcode, uint64_t *sink, uint32_t sink_key,
				    uint32_t rkey, uint64_t *target, uint64_t compare_add,
				    uint64_t swap)
{
	struct mrc_send_wr wr = { .wr_id = (uintptr_t)sink, .opcode = opcode,
				  .flags = MRC_SEND_SIGNALED, .num_sge = 1, .rkey = rkey,
				  .raddr = (uintptr_t)target, .compare_add = compare_add,
				  .swap = swap };

	wr.sge[0] = (struct mrc_sge){ sink, (uintptr_t)sink, 8, sink_key };
	return wr;
}

/*
 * N fetch-and-adds of 1 through loss, duplication and reordering: the counter ends at N and
 * the originals returned are 0 .. N-1, each exactly once, so no request ran twice and none
 * was lost, whichever copy of it arrived.
 */
static void fetch_add_exactly_once(bool fast_path)
{
	enum { N = 3000 };
	struct sim_config sc;
	struct sim_endpoint *a, *b;
	struct tally t;
	uint64_t *results = calloc(N, sizeof(uint64_t)), counter = 0, posted = 0;
	uint8_t *seen = calloc(N, 1);
	uint32_t sink_key, target_key;
	struct sim *sim;

	ck_assert_ptr_nonnull(results);
	ck_assert_ptr_nonnull(seen);
	sim_config_default(&sc);
	sc.planes = 2;
	sc.fast_path_placement = fast_path;
	sc.core.loss = 0.03;
	sc.core.duplicate = 0.03;
	sc.core.jitter_ns = 20000; /* reorders across the 8 paths */
	sim = atomic_pair(&sc, &a, &b, &t);
	sink_key = sim_register(a, results, N * sizeof(uint64_t), MRC_ACCESS_REMOTE_WRITE);
	target_key = sim_register(b, &counter, sizeof(counter), MRC_ACCESS_REMOTE_ATOMIC);
	while (t.ok + t.failed < N) {
		while (posted < N && posted - (t.ok + t.failed) < 64) {
			struct mrc_send_wr wr = atomic_wr(MRC_WR_ATOMIC_FETCH_ADD, &results[posted],
							  sink_key, target_key, &counter, 1, 0);

			ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
			posted++;
		}
		a->dirty = true;
		sim_run(sim, sim->now_ns + 10000000000ull, settled, &(uint64_t){ posted });
		ck_assert_msg(t.failed == 0, "%llu failed, the first %s",
			      (unsigned long long)t.failed, mrc_wc_status_name(t.last_error.status));
	}
	ck_assert_uint_eq(counter, N);
	for (unsigned i = 0; i < N; i++) {
		ck_assert_uint_lt(results[i], N);
		ck_assert_msg(!seen[results[i]], "original %llu returned twice",
			      (unsigned long long)results[i]);
		seen[results[i]] = 1;
	}
	/* the network did its part: copies arrived twice, and requests met a full room */
	ck_assert_uint_gt(b->drops[MRC_DROP_DUPLICATE], 0);
	ck_assert_uint_gt(a->drops[MRC_DROP_DUPLICATE], 0);
	ck_assert_uint_gt(b->drops[MRC_DROP_RESPONDER_BUSY], 0);
	sim_free(sim);
	free(results);
	free(seen);
}

START_TEST(mrc_conn__fetch_add_exactly_once_under_loss_and_duplication)
{
	fetch_add_exactly_once(false);
}
END_TEST

START_TEST(mrc_conn__fetch_add_exactly_once_responses_placed_by_fast_path)
{
	fetch_add_exactly_once(true);
}
END_TEST

/* CMP_SWAP swaps on a match only, and returns the original either way. */
START_TEST(mrc_conn__compare_and_swap)
{
	struct sim_config sc;
	struct sim_endpoint *a, *b;
	struct tally t;
	uint64_t word = 5, got[3] = { 99, 99, 99 };
	uint32_t sink_key, key;
	struct sim *sim;
	struct mrc_send_wr wr;

	sim_config_default(&sc);
	sim = atomic_pair(&sc, &a, &b, &t);
	sink_key = sim_register(a, got, sizeof(got), MRC_ACCESS_REMOTE_WRITE);
	key = sim_register(b, &word, sizeof(word), MRC_ACCESS_REMOTE_ATOMIC);
	wr = atomic_wr(MRC_WR_ATOMIC_CMP_SWAP, &got[0], sink_key, key, &word, 4, 40); /* miss */
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	wr = atomic_wr(MRC_WR_ATOMIC_CMP_SWAP, &got[1], sink_key, key, &word, 5, 50); /* hit */
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	wr = atomic_wr(MRC_WR_ATOMIC_FETCH_ADD, &got[2], sink_key, key, &word, 7, 0);
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	a->dirty = true;
	sim_run(sim, 1000000000ull, settled, &(uint64_t){ 3 });
	ck_assert_uint_eq(t.ok, 3);
	ck_assert_uint_eq(got[0], 5);
	ck_assert_uint_eq(got[1], 5);
	ck_assert_uint_eq(got[2], 50);
	ck_assert_uint_eq(word, 57);
	ck_assert_uint_eq(a->last_wc.opcode, MRC_WC_FETCH_ADD);
	sim_free(sim);
}
END_TEST

/* One refused atomic: the status the requester sees, and the target untouched. */
static void refused(unsigned qp_access, unsigned mr_access, unsigned misalign,
		    uint8_t want_status)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim_endpoint *a, *b;
	struct tally t = { 0 };
	uint64_t words[2] = { 11, 22 }, got = 0;
	uint32_t sink_key, key;
	struct sim *sim;
	struct mrc_send_wr wr;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.qp_access = qp_access;
	sim = sim_new(&sc);
	sim_connect(sim, 0, 1, &cc, 1, &a, &b);
	a->user = &t;
	a->on_complete = count;
	sink_key = sim_register(a, &got, sizeof(got), MRC_ACCESS_REMOTE_WRITE);
	key = sim_register(b, words, sizeof(words), mr_access);
	wr = atomic_wr(MRC_WR_ATOMIC_FETCH_ADD, &got, sink_key, key, &words[0], 1, 0);
	wr.raddr += misalign;
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	a->dirty = true;
	sim_run(sim, 1000000000ull, settled, &(uint64_t){ 1 });
	ck_assert_uint_eq(t.failed, 1);
	ck_assert_uint_eq(t.last_error.status, want_status);
	ck_assert_uint_eq(words[0], 11);
	ck_assert_uint_eq(words[1], 22);
	sim_free(sim);
}

START_TEST(mrc_conn__atomic_refusals)
{
	unsigned all = MRC_ACCESS_REMOTE_WRITE | MRC_ACCESS_REMOTE_READ | MRC_ACCESS_REMOTE_ATOMIC;

	/* the QP does not admit atomics */
	refused(MRC_ACCESS_REMOTE_WRITE | MRC_ACCESS_REMOTE_READ, MRC_ACCESS_REMOTE_ATOMIC, 0,
		MRC_WC_REM_INV_REQ_ERR);
	/* the region does not */
	refused(all, MRC_ACCESS_REMOTE_WRITE | MRC_ACCESS_REMOTE_READ, 0, MRC_WC_REM_ACCESS_ERR);
	/* not 8-byte aligned */
	refused(all, MRC_ACCESS_REMOTE_ATOMIC, 4, MRC_WC_REM_INV_REQ_ERR);
}
END_TEST

/* The requester checks what it can before anything is sent: 8 bytes in one element. */
START_TEST(mrc_conn__atomic_needs_one_8_byte_element)
{
	struct sim_config sc;
	struct sim_endpoint *a, *b;
	struct tally t;
	uint64_t word = 0, got[2];
	struct sim *sim;
	struct mrc_send_wr wr;

	sim_config_default(&sc);
	sim = atomic_pair(&sc, &a, &b, &t);
	wr = atomic_wr(MRC_WR_ATOMIC_FETCH_ADD, got, 1, 1, &word, 1, 0);
	wr.sge[0].length = 16;
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), -EINVAL);
	wr.sge[0].length = 4;
	wr.num_sge = 2;
	wr.sge[1] = wr.sge[0];
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), -EINVAL);
	sim_free(sim);
}
END_TEST

Suite *atomics_suite(void)
{
	Suite *s = suite_create("atomics");
	TCase *tc = tcase_create("atomics");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mrc_conn__fetch_add_exactly_once_under_loss_and_duplication);
	tcase_add_test(tc, mrc_conn__fetch_add_exactly_once_responses_placed_by_fast_path);
	tcase_add_test(tc, mrc_conn__compare_and_swap);
	tcase_add_test(tc, mrc_conn__atomic_refusals);
	tcase_add_test(tc, mrc_conn__atomic_needs_one_8_byte_element);
	suite_add_tcase(s, tc);
	return s;
}
