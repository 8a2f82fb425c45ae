/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/rtt.c: per-path SRTT/RTTVAR and RTO as in RFC 6298, and the sample taken from an
 * echoed 32-bit timestamp. Requirement ids refer to docs/SPEC.md.
 */
#include <stdint.h>
#include <string.h>

#include "proto/rtt.h"
#include "suites.h"

/* The defaults of section 16: rto_initial 1 ms, rto_min 200 us, rto_max 100 ms. */
static const struct mrc_rtt_limits defaults = {
	.initial_rto_ns = 1000000,
	.min_rto_ns = 200000,
	.max_rto_ns = 100000000,
};

/* Marks "not written": a rejected sample must leave the caller's variable alone. */
#define UNTOUCHED 0xdeadbeefcafef00dull

START_TEST(mrc_rtt_init__no_estimate)
{
	struct mrc_rtt r;

	memset(&r, 0xff, sizeof(r));
	mrc_rtt_init(&r);
	ck_assert_uint_eq(r.srtt_ns, 0);
	ck_assert_uint_eq(r.rttvar_ns, 0);
	ck_assert_uint_eq(r.min_ns, 0);
	ck_assert_uint_eq(r.latest_ns, 0);
	ck_assert_uint_eq(r.backoff, 0);
}
END_TEST

/* first sample R: SRTT = R, RTTVAR = R / 2. */
START_TEST(mrc_rtt_update__first_sample_sets_srtt_and_half_var)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 10000);
	ck_assert_uint_eq(r.srtt_ns, 10000);
	ck_assert_uint_eq(r.rttvar_ns, 5000);
	ck_assert_uint_eq(r.min_ns, 10000);
	ck_assert_uint_eq(r.latest_ns, 10000);

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 7);
	ck_assert_uint_eq(r.srtt_ns, 7);
	ck_assert_uint_eq(r.rttvar_ns, 3);
}
END_TEST

/* SRTT 0 means "no sample yet", so a 0 ns sample is kept as 1 ns and still counts as one. */
START_TEST(mrc_rtt_update__zero_sample_still_counts)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 0);
	ck_assert_uint_eq(r.srtt_ns, 1);
	ck_assert_uint_eq(r.rttvar_ns, 0);
	ck_assert_uint_eq(r.min_ns, 1);
	ck_assert_uint_eq(r.latest_ns, 0);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), defaults.min_rto_ns);
}
END_TEST

/*
 * RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R| with the SRTT from before this sample, then
 * SRTT = 7/8 SRTT + 1/8 R, each in integer ns as x - x/4 + e/4 and x - x/8 + R/8.
 */
START_TEST(mrc_rtt_update__rfc6298_integer_steps)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 100000);
	mrc_rtt_update(&r, 120000);
	/* |100000 - 120000| / 4 = 5000; using the new SRTT would give 41875 */
	ck_assert_uint_eq(r.rttvar_ns, 42500);
	ck_assert_uint_eq(r.srtt_ns, 102500);
	mrc_rtt_update(&r, 80000);
	ck_assert_uint_eq(r.rttvar_ns, 37500);  /* 42500 - 10625 + 22500 / 4 */
	ck_assert_uint_eq(r.srtt_ns, 99688);	/* 102500 - 12812 + 10000 */
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 99688 + 4 * 37500);
	mrc_rtt_update(&r, 99688);
	ck_assert_uint_eq(r.rttvar_ns, 28125);
	ck_assert_uint_eq(r.srtt_ns, 99688);
	/* a steady path converges: the variance decays towards 0, SRTT stays put */
	for (int i = 0; i < 100; i++)
		mrc_rtt_update(&r, 99688);
	ck_assert_uint_eq(r.srtt_ns, 99688);
	ck_assert_uint_le(r.rttvar_ns, 3);
	ck_assert_uint_eq(r.latest_ns, 99688);
	ck_assert_uint_eq(r.min_ns, 80000);
}
END_TEST

START_TEST(mrc_rtt_update__tracks_min_and_latest)
{
	static const uint64_t samples[] = { 500, 300, 800, 300, 299, 100000 };
	static const uint64_t min_after[] = { 500, 300, 300, 300, 299, 299 };
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		mrc_rtt_update(&r, samples[i]);
		ck_assert_uint_eq(r.min_ns, min_after[i]);
		ck_assert_uint_eq(r.latest_ns, samples[i]);
	}
}
END_TEST

/* rto_initial before the first sample, itself kept within [rto_min, rto_max]. */
START_TEST(mrc_rtt_rto__initial_before_any_sample)
{
	struct mrc_rtt r;
	struct mrc_rtt_limits lim = defaults;

	mrc_rtt_init(&r);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &lim), 1000000);
	lim.initial_rto_ns = 1000;
	ck_assert_uint_eq(mrc_rtt_rto(&r, &lim), 200000);
	lim.initial_rto_ns = 500000000;
	ck_assert_uint_eq(mrc_rtt_rto(&r, &lim), 100000000);
}
END_TEST

/* SRTT + 4 RTTVAR clamped to [rto_min, rto_max]. */
START_TEST(mrc_rtt_rto__clamped_to_min_and_max)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 10000); /* 10 us + 4 * 5 us = 30 us */
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 200000);
	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 50000); /* 50 + 100 = 150 us: still below the floor */
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 200000);
	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 70000); /* 210 us: inside */
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 210000);
	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 60000000); /* 60 ms + 120 ms */
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 100000000);
}
END_TEST

/* each expiry doubles the RTO up to rto_max; the next sample starts afresh. */
START_TEST(mrc_rtt_backoff__doubles_to_max_and_sample_clears)
{
	struct mrc_rtt r;
	uint64_t want = 300000;

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 100000);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 300000);
	for (unsigned k = 1; k <= 12; k++) {
		mrc_rtt_backoff(&r);
		want = want * 2 < defaults.max_rto_ns ? want * 2 : defaults.max_rto_ns;
		ck_assert_uint_eq(r.backoff, k);
		ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), want);
	}
	/* 300 us << 8 = 76.8 ms is the last doubling below the cap */
	ck_assert_uint_eq(want, 100000000);
	mrc_rtt_update(&r, 100000);
	ck_assert_uint_eq(r.backoff, 0);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 100000 + 4 * 37500);
}
END_TEST

/* The doubling applies to the clamped RTO, and to rto_initial before any sample. */
START_TEST(mrc_rtt_backoff__doubles_floor_and_initial)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	mrc_rtt_backoff(&r);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 2000000);
	mrc_rtt_backoff(&r);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 4000000);

	mrc_rtt_init(&r);
	mrc_rtt_update(&r, 10000);
	mrc_rtt_backoff(&r);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), 400000);
}
END_TEST

/*
 * The step count saturates at 16 doublings. With any rto_max / rto_min below 2^16 (the
 * defaults give 500) the cap on the RTO is reached first, so the limit is never seen.
 */
START_TEST(mrc_rtt_backoff__step_count_saturates)
{
	struct mrc_rtt_limits wide = { .initial_rto_ns = 1000, .min_rto_ns = 1000,
				       .max_rto_ns = UINT64_C(1) << 50 };
	struct mrc_rtt r;

	mrc_rtt_init(&r);
	for (int i = 0; i < 300; i++)
		mrc_rtt_backoff(&r);
	ck_assert_uint_eq(r.backoff, 16);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &wide), UINT64_C(1000) << 16);
	ck_assert_uint_eq(mrc_rtt_rto(&r, &defaults), defaults.max_rto_ns);
}
END_TEST

/* [R-57] ((now - echo_ts) mod 2^32) - ack_delay_ns. */
START_TEST(mrc_rtt_sample_from_echo__subtracts_ack_delay)
{
	uint64_t s = UNTOUCHED;

	ck_assert(mrc_rtt_sample_from_echo(1000000, 900000, 30000, &s));
	ck_assert_uint_eq(s, 70000);
	ck_assert(mrc_rtt_sample_from_echo(1000000, 900000, 0, &s));
	ck_assert_uint_eq(s, 100000);
	ck_assert(mrc_rtt_sample_from_echo(42, 42, 0, &s));
	ck_assert_uint_eq(s, 0);
}
END_TEST

/* tx_ts is the clock mod 2^32: the upper half of now does not matter. */
START_TEST(mrc_rtt_sample_from_echo__wraps_mod_2_32)
{
	uint64_t s = UNTOUCHED;

	ck_assert(mrc_rtt_sample_from_echo(UINT64_C(0x100000010), 0xfffffff0u, 0, &s));
	ck_assert_uint_eq(s, 0x20);
	ck_assert(mrc_rtt_sample_from_echo(5, 0xffffff00u, 0x100, &s));
	ck_assert_uint_eq(s, 5);
	ck_assert(mrc_rtt_sample_from_echo(UINT64_C(0xabcd000000001000), 0x800, 0x10, &s));
	ck_assert_uint_eq(s, 0x7f0);
	ck_assert(mrc_rtt_sample_from_echo(UINT64_C(0xffffffffffffffff), 0xffffff00u, 0, &s));
	ck_assert_uint_eq(s, 0xff);
}
END_TEST

/*
 * an elapsed time of 2^31 or more is from the "future" or from ancient history in
 * serial arithmetic; the sample is refused and *sample_ns left alone. (R-57 says "exceeds
 * 2^31"; the module also refuses exactly 2^31, the one value serial order leaves undefined.)
 */
START_TEST(mrc_rtt_sample_from_echo__rejects_half_space)
{
	uint64_t s = UNTOUCHED;

	ck_assert(mrc_rtt_sample_from_echo(0x7fffffffu, 0, 0, &s));
	ck_assert_uint_eq(s, 0x7fffffffu);
	s = UNTOUCHED;
	ck_assert(!mrc_rtt_sample_from_echo(0x80000000u, 0, 0, &s));
	ck_assert(!mrc_rtt_sample_from_echo(0x80000005u, 5, 0, &s));
	ck_assert(!mrc_rtt_sample_from_echo(100, 101, 0, &s)); /* echo one ns in the future */
	ck_assert(!mrc_rtt_sample_from_echo(UINT64_C(0x100000000), 0x80000000u, 0, &s));
	ck_assert_uint_eq(s, UNTOUCHED);
	/* the same limit one below, reached across the wrap */
	ck_assert(mrc_rtt_sample_from_echo(UINT64_C(0x100000000), 0x80000001u, 0, &s));
	ck_assert_uint_eq(s, 0x7fffffffu);
}
END_TEST

/* an ack_delay_ns larger than the elapsed time cannot be right; equal gives 0. */
START_TEST(mrc_rtt_sample_from_echo__rejects_ack_delay_beyond_elapsed)
{
	uint64_t s = UNTOUCHED;

	ck_assert(!mrc_rtt_sample_from_echo(2000, 1000, 1001, &s));
	ck_assert(!mrc_rtt_sample_from_echo(2000, 1000, UINT32_MAX, &s));
	ck_assert_uint_eq(s, UNTOUCHED);
	ck_assert(mrc_rtt_sample_from_echo(2000, 1000, 1000, &s));
	ck_assert_uint_eq(s, 0);
	/* across the wrap: elapsed 0x20, delay 0x21 */
	s = UNTOUCHED;
	ck_assert(!mrc_rtt_sample_from_echo(0x10, 0xfffffff0u, 0x21, &s));
	ck_assert_uint_eq(s, UNTOUCHED);
}
END_TEST

Suite *rtt_suite(void)
{
	Suite *s = suite_create("rtt");
	TCase *est = tcase_create("estimate");
	TCase *echo = tcase_create("echo");

	tcase_add_test(est, mrc_rtt_init__no_estimate);
	tcase_add_test(est, mrc_rtt_update__first_sample_sets_srtt_and_half_var);
	tcase_add_test(est, mrc_rtt_update__zero_sample_still_counts);
	tcase_add_test(est, mrc_rtt_update__rfc6298_integer_steps);
	tcase_add_test(est, mrc_rtt_update__tracks_min_and_latest);
	tcase_add_test(est, mrc_rtt_rto__initial_before_any_sample);
	tcase_add_test(est, mrc_rtt_rto__clamped_to_min_and_max);
	tcase_add_test(est, mrc_rtt_backoff__doubles_to_max_and_sample_clears);
	tcase_add_test(est, mrc_rtt_backoff__doubles_floor_and_initial);
	tcase_add_test(est, mrc_rtt_backoff__step_count_saturates);
	suite_add_tcase(s, est);
	tcase_add_test(echo, mrc_rtt_sample_from_echo__subtracts_ack_delay);
	tcase_add_test(echo, mrc_rtt_sample_from_echo__wraps_mod_2_32);
	tcase_add_test(echo, mrc_rtt_sample_from_echo__rejects_half_space);
	tcase_add_test(echo, mrc_rtt_sample_from_echo__rejects_ack_delay_beyond_elapsed);
	suite_add_tcase(s, echo);
	return s;
}
