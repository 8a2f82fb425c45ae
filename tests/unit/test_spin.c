/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/shm/spin.c: when the loop spins and when it sleeps, in virtual time. Besides the
 * rules one by one, a conversation: the loop turns every microsecond while it spins, and the
 * peer's next message comes a fixed gap after the last; the window must learn to catch gaps
 * within the budget (no sleep, so no wakeup, per message) and to stop spinning for gaps beyond
 * it (no CPU burnt waiting for what a spin cannot catch).
 */
#include <stdint.h>

#include "shm/spin.h"
#include "suites.h"

#define US 1000ull

START_TEST(spin__off_never_spins)
{
	struct mrc_spin s;

	mrc_spin_init(&s, 0);
	ck_assert(!mrc_spin_idle(&s, 1000));
	mrc_spin_work(&s, 1001);
	ck_assert(!mrc_spin_idle(&s, 1002));
	ck_assert_uint_eq(s.window_ns, 0);
}
END_TEST

START_TEST(spin__always_never_sleeps)
{
	struct mrc_spin s;

	mrc_spin_init(&s, MRC_SPIN_ALWAYS);
	for (uint64_t t = 1; t < 10 * 1000 * US; t += 997 * US)
		ck_assert(mrc_spin_idle(&s, t));
}
END_TEST

START_TEST(spin__spins_for_the_window_after_work)
{
	struct mrc_spin s;

	mrc_spin_init(&s, 100 * US);
	ck_assert_uint_eq(s.window_ns, MRC_SPIN_START_NS);
	mrc_spin_work(&s, 1000 * US);
	ck_assert(mrc_spin_idle(&s, 1001 * US));
	ck_assert(mrc_spin_idle(&s, 1001 * US + MRC_SPIN_START_NS - 1));
	ck_assert(!mrc_spin_idle(&s, 1001 * US + MRC_SPIN_START_NS));
	/* the loop did not sleep after all (work came): that teaches the window nothing */
	mrc_spin_work(&s, 1001 * US + MRC_SPIN_START_NS + 1);
	ck_assert_uint_eq(s.window_ns, MRC_SPIN_START_NS);
	ck_assert_uint_eq(s.grown + s.shrunk, 0);
	/* work caught while spinning leaves the window as it is */
	mrc_spin_init(&s, 100 * US);
	ck_assert(mrc_spin_idle(&s, 5 * US));
	mrc_spin_work(&s, 6 * US);
	ck_assert_uint_eq(s.window_ns, MRC_SPIN_START_NS);
	ck_assert_uint_eq(s.grown + s.shrunk, 0);
}
END_TEST

START_TEST(spin__a_short_sleep_grows_the_window_to_the_budget)
{
	struct mrc_spin s;
	uint64_t t = 1000 * US;

	mrc_spin_init(&s, 100 * US);
	for (int i = 0; i < 10; i++) {
		mrc_spin_work(&s, t);
		while (mrc_spin_idle(&s, t))
			t += US;
		mrc_spin_sleeping(&s, t);
		t += 5 * US; /* woken soon after giving up */
	}
	ck_assert_uint_eq(s.window_ns, 100 * US);
	ck_assert_uint_ge(s.grown, 4);
}
END_TEST

START_TEST(spin__a_long_sleep_shrinks_the_window_to_nothing)
{
	struct mrc_spin s;
	uint64_t t = 1000 * US;

	mrc_spin_init(&s, 100 * US);
	s.window_ns = 100 * US;
	for (int i = 0; i < 10; i++) {
		mrc_spin_work(&s, t);
		while (mrc_spin_idle(&s, t))
			t += US;
		mrc_spin_sleeping(&s, t);
		t += 150 * US; /* nothing for longer than any spin */
	}
	mrc_spin_work(&s, t);
	ck_assert_uint_eq(s.window_ns, 0);
	ck_assert(!mrc_spin_idle(&s, t + 1));
}
END_TEST

/* Sleeps and spun microseconds per message over the last 100 of 1,000 messages `gap` apart. */
static void conversation(uint64_t budget, uint64_t gap, unsigned *sleeps, uint64_t *spun)
{
	struct mrc_spin s;
	uint64_t t = 1000 * US;

	mrc_spin_init(&s, budget);
	*sleeps = 0;
	*spun = 0;
	for (int msg = 0; msg < 1000; msg++) {
		uint64_t arrives = t + gap, slept = 0;

		mrc_spin_work(&s, t);
		while (t < arrives && mrc_spin_idle(&s, t)) {
			t += US;
			if (msg >= 900)
				*spun += US;
		}
		if (t < arrives) {
			slept = 1;
			mrc_spin_sleeping(&s, t);
			t = arrives; /* a wakeup */
		}
		if (msg >= 900)
			*sleeps += (unsigned)slept;
	}
}

START_TEST(spin__a_conversation_learns_its_gap)
{
	unsigned sleeps;
	uint64_t spun;

	/* 40 us gaps, 200 us budget: every message caught spinning */
	conversation(200 * US, 40 * US, &sleeps, &spun);
	ck_assert_uint_eq(sleeps, 0);
	/* 1 ms gaps, the same budget: the loop sleeps at once and spins nothing */
	conversation(200 * US, 1000 * US, &sleeps, &spun);
	ck_assert_uint_eq(sleeps, 100);
	ck_assert_uint_eq(spun, 0);
	/* off: a wakeup per message */
	conversation(0, 40 * US, &sleeps, &spun);
	ck_assert_uint_eq(sleeps, 100);
}
END_TEST

Suite *spin_suite(void)
{
	Suite *s = suite_create("spin");
	TCase *tc = tcase_create("spin");

	tcase_add_test(tc, spin__off_never_spins);
	tcase_add_test(tc, spin__always_never_sleeps);
	tcase_add_test(tc, spin__spins_for_the_window_after_work);
	tcase_add_test(tc, spin__a_short_sleep_grows_the_window_to_the_budget);
	tcase_add_test(tc, spin__a_long_sleep_shrinks_the_window_to_nothing);
	tcase_add_test(tc, spin__a_conversation_learns_its_gap);
	suite_add_tcase(s, tc);
	return s;
}
