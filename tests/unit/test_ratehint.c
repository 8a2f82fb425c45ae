/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* lib/proto/ratehint.c: the receiver's fair share of its capacity. */
#include <stdint.h>

#include "proto/ratehint.h"
#include "suites.h"

#define US 1000ull

/* Feeds `bytes` of payload every `gap_ns` to a sender from `from` to `to`. */
static void feed(struct mrc_rate_domain *d, int e, uint32_t bytes, uint64_t gap_ns, uint64_t from,
		 uint64_t to, bool ce)
{
	for (uint64_t t = from; t < to; t += gap_ns)
		mrc_rate_domain_on_rx(d, e, bytes, ce, t);
}

START_TEST(mrc_rate_domain_hint__no_capacity_no_hint)
{
	struct mrc_rate_domain d;

	ck_assert_int_eq(mrc_rate_domain_init(&d, 0, 4), 0);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, mrc_rate_domain_join(&d), 0), 0);
	ck_assert_uint_eq(mrc_rate_domain_hint(NULL, 0, 0), 0);
	mrc_rate_domain_fini(&d);
}
END_TEST

/* n senders arriving together each learn C / n at once: no window to wait for. */
START_TEST(mrc_rate_domain_hint__equal_split_from_first_packet)
{
	struct mrc_rate_domain d;
	int e[16];

	ck_assert_int_eq(mrc_rate_domain_init(&d, 96000000, 16), 0);
	for (int i = 0; i < 16; i++) {
		e[i] = mrc_rate_domain_join(&d);
		mrc_rate_domain_on_rx(&d, e[i], 4096, false, 1000);
	}
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(mrc_rate_domain_hint(&d, e[i], 1000), 6000000);
	mrc_rate_domain_fini(&d);
}
END_TEST

/* A sender using less than its share leaves the rest to the others (water filling). */
START_TEST(mrc_rate_domain_hint__demand_limited_sender_frees_capacity)
{
	struct mrc_rate_domain d;
	int big, small;
	uint32_t hint;

	ck_assert_int_eq(mrc_rate_domain_init(&d, 100000000, 4), 0); /* 100 Gbit/s */
	big = mrc_rate_domain_join(&d);
	small = mrc_rate_domain_join(&d);
	/* first window: both new, so both saturated: 50/50 */
	mrc_rate_domain_on_rx(&d, big, 4096, false, 0);
	mrc_rate_domain_on_rx(&d, small, 4096, false, 0);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, big, 0), 50000000);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, small, 0), 50000000);
	/* then: small sends 10 Gbit/s (4096 B every 3.2768 us), big 50 Gbit/s */
	feed(&d, small, 4096, 3277, 1, 400 * US, false);
	feed(&d, big, 4096, 655, 1, 400 * US, false);
	hint = mrc_rate_domain_hint(&d, big, 400 * US);
	/* small keeps its ~10 Gbit/s, big may take the remaining ~90 */
	ck_assert_uint_gt(hint, 85000000);
	ck_assert_uint_le(hint, 90500000);
	mrc_rate_domain_fini(&d);
}
END_TEST

/* A sender silent for longer than the window no longer holds a share. */
START_TEST(mrc_rate_domain_hint__idle_sender_leaves)
{
	struct mrc_rate_domain d;
	int a, b;

	ck_assert_int_eq(mrc_rate_domain_init(&d, 80000000, 4), 0);
	a = mrc_rate_domain_join(&d);
	b = mrc_rate_domain_join(&d);
	mrc_rate_domain_on_rx(&d, a, 4096, false, 0);
	mrc_rate_domain_on_rx(&d, b, 4096, false, 0);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, a, 0), 40000000);
	feed(&d, a, 4096, 1000, 1000, 500 * US, false);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, a, 500 * US), 80000000);
	ck_assert_uint_eq(d.n_active, 1);
	mrc_rate_domain_fini(&d);
}
END_TEST

/*
 * Arrivals all CE-marked: the share stays the whole capacity (the senders drain the queue by
 * holding back, R-302), and the marked share is kept for inspection.
 */
START_TEST(mrc_rate_domain_hint__ce_marks_leave_the_share_whole)
{
	struct mrc_rate_domain d;
	int a;

	ck_assert_int_eq(mrc_rate_domain_init(&d, 100000000, 2), 0);
	a = mrc_rate_domain_join(&d);
	feed(&d, a, 4096, 1000, 0, 200 * US, true);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, a, 200 * US), 100000000);
	ck_assert_uint_eq(d.ce_permille, 1000);
	mrc_rate_domain_fini(&d);
}
END_TEST

/*
 * A sender whose demand no whole window has measured yet keeps a full share, even once it
 * is no longer new: counting its demand as 0 handed the others its share (an incast of 16
 * saw the hint jump from C / 16 to C / 8 and the queue grow again).
 */
START_TEST(mrc_rate_domain_hint__unmeasured_sender_is_saturated)
{
	struct mrc_rate_domain d;
	int a, b;

	ck_assert_int_eq(mrc_rate_domain_init(&d, 100000000, 2), 0);
	a = mrc_rate_domain_join(&d);
	b = mrc_rate_domain_join(&d);
	mrc_rate_domain_on_rx(&d, a, 4096, false, 0);
	mrc_rate_domain_on_rx(&d, b, 4096, false, 0);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, a, 0), 50000000);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, b, 0), 50000000);
	/* both still sending, neither's window closed by an arrival yet */
	mrc_rate_domain_on_rx(&d, a, 4096, false, 99 * US);
	mrc_rate_domain_on_rx(&d, b, 4096, false, 99 * US);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, a, 101 * US), 50000000);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, b, 101 * US), 50000000);
	mrc_rate_domain_fini(&d);
}
END_TEST

/* The hint is always positive and fits its 32-bit kbit/s field. */
START_TEST(mrc_rate_domain_hint__positive_and_saturated)
{
	struct mrc_rate_domain d;
	int e[3];

	ck_assert_int_eq(mrc_rate_domain_init(&d, 2, 3), 0); /* 2 kbit/s among three */
	for (int i = 0; i < 3; i++) {
		e[i] = mrc_rate_domain_join(&d);
		mrc_rate_domain_on_rx(&d, e[i], 1, false, 0);
	}
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, e[0], 0), 1);
	mrc_rate_domain_fini(&d);

	ck_assert_int_eq(mrc_rate_domain_init(&d, 1ull << 40, 1), 0);
	e[0] = mrc_rate_domain_join(&d);
	mrc_rate_domain_on_rx(&d, e[0], 1, false, 0);
	ck_assert_uint_eq(mrc_rate_domain_hint(&d, e[0], 0), UINT32_MAX);
	mrc_rate_domain_fini(&d);
}
END_TEST

START_TEST(mrc_rate_domain_join__full_then_reuse)
{
	struct mrc_rate_domain d;

	ck_assert_int_eq(mrc_rate_domain_init(&d, 1000, 2), 0);
	ck_assert_int_eq(mrc_rate_domain_join(&d), 0);
	ck_assert_int_eq(mrc_rate_domain_join(&d), 1);
	ck_assert_int_eq(mrc_rate_domain_join(&d), -1);
	mrc_rate_domain_leave(&d, 0);
	ck_assert_int_eq(mrc_rate_domain_join(&d), 0);
	/* out-of-range entries are ignored, not written */
	mrc_rate_domain_leave(&d, 7);
	mrc_rate_domain_on_rx(&d, -1, 100, false, 0);
	mrc_rate_domain_fini(&d);
}
END_TEST

Suite *ratehint_suite(void)
{
	Suite *s = suite_create("ratehint");
	TCase *tc = tcase_create("ratehint");

	tcase_add_test(tc, mrc_rate_domain_hint__no_capacity_no_hint);
	tcase_add_test(tc, mrc_rate_domain_hint__equal_split_from_first_packet);
	tcase_add_test(tc, mrc_rate_domain_hint__demand_limited_sender_frees_capacity);
	tcase_add_test(tc, mrc_rate_domain_hint__idle_sender_leaves);
	tcase_add_test(tc, mrc_rate_domain_hint__ce_marks_leave_the_share_whole);
	tcase_add_test(tc, mrc_rate_domain_hint__unmeasured_sender_is_saturated);
	tcase_add_test(tc, mrc_rate_domain_hint__positive_and_saturated);
	tcase_add_test(tc, mrc_rate_domain_join__full_then_reuse);
	suite_add_tcase(s, tc);
	return s;
}
