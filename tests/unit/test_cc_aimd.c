/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/cc_aimd.c: per-path ECN AIMD through the mrc_cc_aimd ops table, window in whole
 * packets. Requirement ids refer to docs/SPEC.md.
 */
#include <stdint.h>
#include <string.h>

#include "proto/cc.h"
#include "suites.h"

/* The defaults of section 16: cwnd_init 16, cwnd_min 1, cwnd_max 256, beta 1/2. */
static const struct mrc_cc_params defaults = {
	.init_cwnd = 16,
	.min_cwnd = 1,
	.max_cwnd = 256,
	.beta_pct = 50,
};

static struct mrc_cc_state fresh(const struct mrc_cc_params *p)
{
	struct mrc_cc_state s;

	memset(&s, 0x5a, sizeof(s)); /* init must not rely on a zeroed caller */
	mrc_cc_aimd.init(&s, p);
	return s;
}

/* every path starts at cwnd_init with nothing pending. */
START_TEST(mrc_cc_aimd_init__starts_at_init_cwnd)
{
	struct mrc_cc_state s = fresh(&defaults);

	ck_assert_str_eq(mrc_cc_aimd.name, "aimd");
	ck_assert_uint_eq(s.cwnd, 16);
	ck_assert_uint_eq(s.ai_credit, 0);
	ck_assert_uint_eq(s.recovery_end_ns, 0);
	ck_assert_uint_eq(s.decreases, 0);
}
END_TEST

/* 1/cwnd per acknowledged packet: the cwnd-th acknowledgement adds exactly one. */
START_TEST(mrc_cc_aimd_on_ack__one_packet_per_window_acked)
{
	struct mrc_cc_state s = fresh(&defaults);

	for (int i = 1; i < 16; i++) {
		mrc_cc_aimd.on_ack(&s, &defaults, 1);
		ck_assert_uint_eq(s.cwnd, 16);
		ck_assert_uint_eq(s.ai_credit, (uint32_t)i);
	}
	mrc_cc_aimd.on_ack(&s, &defaults, 1);
	ck_assert_uint_eq(s.cwnd, 17);
	ck_assert_uint_eq(s.ai_credit, 0);
	/* the next step needs 17, not 16 */
	mrc_cc_aimd.on_ack(&s, &defaults, 16);
	ck_assert_uint_eq(s.cwnd, 17);
	mrc_cc_aimd.on_ack(&s, &defaults, 1);
	ck_assert_uint_eq(s.cwnd, 18);
	ck_assert_uint_eq(s.ai_credit, 0);
	mrc_cc_aimd.on_ack(&s, &defaults, 0);
	ck_assert_uint_eq(s.cwnd, 18);
	ck_assert_uint_eq(s.ai_credit, 0);
}
END_TEST

/* One batch of acknowledgements worth several windows: 16 + 17 + 18 + 19 + 20 = 90, 10 left. */
START_TEST(mrc_cc_aimd_on_ack__large_batch_steps_window_by_window)
{
	struct mrc_cc_state s = fresh(&defaults);

	mrc_cc_aimd.on_ack(&s, &defaults, 100);
	ck_assert_uint_eq(s.cwnd, 21);
	ck_assert_uint_eq(s.ai_credit, 10);
	mrc_cc_aimd.on_ack(&s, &defaults, 11);
	ck_assert_uint_eq(s.cwnd, 22);
	ck_assert_uint_eq(s.ai_credit, 0);
}
END_TEST

/* a window acknowledged per RTT: +1 per RTT up to cwnd_max, and no further. */
START_TEST(mrc_cc_aimd_on_ack__linear_growth_to_max)
{
	struct mrc_cc_state s = fresh(&defaults);
	unsigned rtts = 0;

	while (s.cwnd < defaults.max_cwnd) {
		uint32_t before = s.cwnd;

		mrc_cc_aimd.on_ack(&s, &defaults, before);
		ck_assert_uint_eq(s.cwnd, before + 1);
		ck_assert_uint_eq(s.ai_credit, 0);
		rtts++;
	}
	ck_assert_uint_eq(rtts, 256 - 16);
	for (int i = 0; i < 10; i++) {
		mrc_cc_aimd.on_ack(&s, &defaults, 1000);
		ck_assert_uint_eq(s.cwnd, 256);
		ck_assert_uint_eq(s.ai_credit, 0); /* no credit hoarded for later */
	}
}
END_TEST

/* a huge batch stops at cwnd_max exactly, with a small max too. */
START_TEST(mrc_cc_aimd_on_ack__capped_at_max_cwnd)
{
	struct mrc_cc_params p = defaults;
	struct mrc_cc_state s;

	p.max_cwnd = 20;
	s = fresh(&p);
	mrc_cc_aimd.on_ack(&s, &p, UINT32_MAX - 64);
	ck_assert_uint_eq(s.cwnd, 20);
	ck_assert_uint_eq(s.ai_credit, 0);
	/* reaching the cap by the ordinary route also drops the leftover credit */
	p.max_cwnd = 17;
	s = fresh(&p);
	mrc_cc_aimd.on_ack(&s, &p, 20);
	ck_assert_uint_eq(s.cwnd, 17);
	ck_assert_uint_eq(s.ai_credit, 0);
}
END_TEST

/* cwnd = max(cwnd_min, beta * cwnd), rounded down; pending credit is dropped. */
START_TEST(mrc_cc_aimd_on_ecn__cuts_by_beta_with_floor)
{
	struct mrc_cc_params p = defaults;
	struct mrc_cc_state s = fresh(&p);

	mrc_cc_aimd.on_ack(&s, &p, 5);
	mrc_cc_aimd.on_ecn(&s, &p, 1000, 0);
	ck_assert_uint_eq(s.cwnd, 8);
	ck_assert_uint_eq(s.ai_credit, 0);
	ck_assert_uint_eq(s.decreases, 1);

	s = fresh(&p);
	s.cwnd = 17;
	mrc_cc_aimd.on_ecn(&s, &p, 0, 0);
	ck_assert_uint_eq(s.cwnd, 8); /* 8.5 */
	s.cwnd = 256;
	mrc_cc_aimd.on_ecn(&s, &p, 10, 0);
	ck_assert_uint_eq(s.cwnd, 128);
	s.cwnd = 1;
	mrc_cc_aimd.on_ecn(&s, &p, 20, 0);
	ck_assert_uint_eq(s.cwnd, 1);

	p.beta_pct = 30;
	s = fresh(&p);
	mrc_cc_aimd.on_ecn(&s, &p, 0, 0);
	ck_assert_uint_eq(s.cwnd, 11); /* 16 * 0.7 = 11.2 */

	p.beta_pct = 50;
	p.min_cwnd = 4;
	s = fresh(&p);
	s.cwnd = 6;
	mrc_cc_aimd.on_ecn(&s, &p, 0, 0);
	ck_assert_uint_eq(s.cwnd, 4);
}
END_TEST

/* at most one cut per SRTT of the path: a CE echo inside it changes nothing at all. */
START_TEST(mrc_cc_aimd_on_ecn__once_per_srtt)
{
	struct mrc_cc_state s = fresh(&defaults);

	mrc_cc_aimd.on_ecn(&s, &defaults, 1000, 500);
	ck_assert_uint_eq(s.cwnd, 8);
	ck_assert_uint_eq(s.recovery_end_ns, 1500);
	mrc_cc_aimd.on_ack(&s, &defaults, 3);
	mrc_cc_aimd.on_ecn(&s, &defaults, 1001, 500);
	mrc_cc_aimd.on_ecn(&s, &defaults, 1499, 9999);
	ck_assert_uint_eq(s.cwnd, 8);
	ck_assert_uint_eq(s.ai_credit, 3);
	ck_assert_uint_eq(s.decreases, 1);
	ck_assert_uint_eq(s.recovery_end_ns, 1500);
	/* one SRTT later the next echo cuts again and opens a new interval of the current SRTT */
	mrc_cc_aimd.on_ecn(&s, &defaults, 1500, 700);
	ck_assert_uint_eq(s.cwnd, 4);
	ck_assert_uint_eq(s.ai_credit, 0);
	ck_assert_uint_eq(s.decreases, 2);
	ck_assert_uint_eq(s.recovery_end_ns, 2200);
	mrc_cc_aimd.on_ecn(&s, &defaults, 2199, 700);
	ck_assert_uint_eq(s.cwnd, 4);
	mrc_cc_aimd.on_ecn(&s, &defaults, 2200, 700);
	ck_assert_uint_eq(s.cwnd, 2);
	ck_assert_uint_eq(s.decreases, 3);
}
END_TEST

/* an RTO is evidence about the path's health, not congestion: the state is untouched. */
START_TEST(mrc_cc_aimd_on_timeout__never_changes_window)
{
	struct mrc_cc_state s = fresh(&defaults), before;

	mrc_cc_aimd.on_ack(&s, &defaults, 40);
	mrc_cc_aimd.on_ecn(&s, &defaults, 5000, 100);
	mrc_cc_aimd.on_ack(&s, &defaults, 3);
	before = s;
	for (int i = 0; i < 50; i++)
		mrc_cc_aimd.on_timeout(&s, &defaults);
	ck_assert_uint_eq(s.cwnd, before.cwnd);
	ck_assert_uint_eq(s.cwnd, 9);
	ck_assert_uint_eq(s.ai_credit, before.ai_credit);
	ck_assert_uint_eq(s.recovery_end_ns, before.recovery_end_ns);
	ck_assert_uint_eq(s.decreases, before.decreases);
}
END_TEST

/* Section 9.1: a path entering ACTIVE again starts at cwnd_init, and may be cut at once. */
START_TEST(mrc_cc_aimd_on_path_restart__resets_to_init)
{
	struct mrc_cc_state s = fresh(&defaults);

	mrc_cc_aimd.on_ack(&s, &defaults, 100);
	mrc_cc_aimd.on_ecn(&s, &defaults, 1000000, 50000);
	mrc_cc_aimd.on_ack(&s, &defaults, 4);
	ck_assert_uint_eq(s.cwnd, 10);
	mrc_cc_aimd.on_path_restart(&s, &defaults);
	ck_assert_uint_eq(s.cwnd, 16);
	ck_assert_uint_eq(s.ai_credit, 0);
	ck_assert_uint_eq(s.recovery_end_ns, 0);
	ck_assert_uint_eq(s.decreases, 1); /* a statistic, not window state */
	mrc_cc_aimd.on_ecn(&s, &defaults, 1000001, 50000);
	ck_assert_uint_eq(s.cwnd, 8);
	ck_assert_uint_eq(s.decreases, 2);
}
END_TEST

Suite *cc_aimd_suite(void)
{
	Suite *s = suite_create("cc_aimd");
	TCase *tc = tcase_create("aimd");

	tcase_add_test(tc, mrc_cc_aimd_init__starts_at_init_cwnd);
	tcase_add_test(tc, mrc_cc_aimd_on_ack__one_packet_per_window_acked);
	tcase_add_test(tc, mrc_cc_aimd_on_ack__large_batch_steps_window_by_window);
	tcase_add_test(tc, mrc_cc_aimd_on_ack__linear_growth_to_max);
	tcase_add_test(tc, mrc_cc_aimd_on_ack__capped_at_max_cwnd);
	tcase_add_test(tc, mrc_cc_aimd_on_ecn__cuts_by_beta_with_floor);
	tcase_add_test(tc, mrc_cc_aimd_on_ecn__once_per_srtt);
	tcase_add_test(tc, mrc_cc_aimd_on_timeout__never_changes_window);
	tcase_add_test(tc, mrc_cc_aimd_on_path_restart__resets_to_init);
	suite_add_tcase(s, tc);
	return s;
}
