/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/sched.c: the spraying scheduler mrc_sched_pick, and the per-path free window it
 * checks paths by (mrc_path_free_window in path.h). Requirement ids refer to docs/SPEC.md.
 */
#include <stdint.h>
#include <string.h>

#include "proto/path.h"
#include "suites.h"

/* n ACTIVE paths with the given window and nothing in flight. */
static void set_paths(struct mrc_path *p, unsigned n, uint32_t cwnd)
{
	memset(p, 0, n * sizeof(*p));
	for (unsigned i = 0; i < n; i++) {
		p[i].state = MRC_PATH_ACTIVE;
		p[i].cc.cwnd = cwnd;
	}
}

/* Picks and sends one packet on the chosen path, as the engine does; returns the pick. */
static int pick_and_send(struct mrc_path *p, unsigned n, unsigned *cursor)
{
	int i = mrc_sched_pick(p, n, cursor);

	if (i >= 0)
		p[i].inflight++;
	return i;
}

/* floor(cwnd) minus what is outstanding, never below zero. */
START_TEST(mrc_path_free_window__cwnd_minus_inflight)
{
	struct mrc_path p;

	set_paths(&p, 1, 16);
	ck_assert_uint_eq(mrc_path_free_window(&p), 16);
	p.inflight = 5;
	ck_assert_uint_eq(mrc_path_free_window(&p), 11);
	p.inflight = 16;
	ck_assert_uint_eq(mrc_path_free_window(&p), 0);
	/* an ECN cut can leave more in flight than the new window */
	p.inflight = 20;
	ck_assert_uint_eq(mrc_path_free_window(&p), 0);
}
END_TEST

/* after an RTO without ECN a path carries no data until a probe clears it. */
START_TEST(mrc_path_free_window__none_while_suspect)
{
	struct mrc_path p;

	set_paths(&p, 1, 64);
	p.rto_streak = 1;
	ck_assert_uint_eq(mrc_path_free_window(&p), 0);
	p.rto_streak = 3;
	p.inflight = 5;
	ck_assert_uint_eq(mrc_path_free_window(&p), 0);
	p.rto_streak = 0; /* heard from again: the whole window is back */
	ck_assert_uint_eq(mrc_path_free_window(&p), 59);
}
END_TEST

/* the first path with room at or after the cursor wins, however full it is. */
START_TEST(mrc_sched_pick__next_path_with_room)
{
	struct mrc_path p[3];
	unsigned cursor;

	set_paths(p, 3, 16);
	p[0].inflight = 13;
	p[1].inflight = 16; /* full */
	p[2].inflight = 9;
	cursor = 0;
	ck_assert_int_eq(mrc_sched_pick(p, 3, &cursor), 0);
	ck_assert_uint_eq(cursor, 1);
	ck_assert_int_eq(mrc_sched_pick(p, 3, &cursor), 2); /* 1 skipped: no room */
	ck_assert_uint_eq(cursor, 0);
	cursor = 1;
	ck_assert_int_eq(mrc_sched_pick(p, 3, &cursor), 2);
}
END_TEST

/*
 * the regression that made rotation the rule: a QP that is not window-bound, one
 * path grown to 36, seven left at 4. Each path gets its turn, so the small windows fill and
 * can grow; "most free window" sent every packet to the big one.
 */
START_TEST(mrc_sched_pick__small_windows_fill_beside_a_big_one)
{
	struct mrc_path p[8];
	unsigned cursor = 0, full = 0;

	set_paths(p, 8, 4);
	p[0].cc.cwnd = 36;
	for (unsigned n = 0; n < 32; n++)
		ck_assert_int_eq(pick_and_send(p, 8, &cursor), (int)(n % 8));
	for (unsigned i = 1; i < 8; i++)
		full += mrc_path_free_window(&p[i]) == 0;
	ck_assert_uint_eq(full, 7);
	ck_assert_uint_eq(p[0].inflight, 4);
	/* then only the big one has room */
	for (unsigned n = 0; n < 32; n++)
		ck_assert_int_eq(pick_and_send(p, 8, &cursor), 0);
	ck_assert_int_eq(pick_and_send(p, 8, &cursor), -1);
}
END_TEST

/* plain rotation over many calls, from wherever the cursor stands. */
START_TEST(mrc_sched_pick__ties_round_robin)
{
	struct mrc_path p[MRC_MAX_PATHS];
	unsigned cursor = 0, hits[4] = { 0 };

	set_paths(p, 4, 16);
	for (unsigned n = 0; n < 1000; n++) {
		int i = mrc_sched_pick(p, 4, &cursor);

		ck_assert_int_eq(i, (int)(n % 4));
		hits[i]++;
	}
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(hits[i], 250);

	cursor = 2;
	ck_assert_int_eq(mrc_sched_pick(p, 4, &cursor), 2);
	ck_assert_int_eq(mrc_sched_pick(p, 4, &cursor), 3);
	ck_assert_int_eq(mrc_sched_pick(p, 4, &cursor), 0);
	ck_assert_uint_eq(cursor, 1);
	cursor = 7; /* a stale cursor from a longer path list counts modulo n_paths */
	ck_assert_int_eq(mrc_sched_pick(p, 4, &cursor), 3);
	ck_assert_uint_eq(cursor, 0);

	/* paths without room drop out of the rotation; the others keep their turns */
	p[1].inflight = p[1].cc.cwnd;
	p[3].inflight = p[3].cc.cwnd;
	cursor = 0;
	for (unsigned n = 0; n < 100; n++)
		ck_assert_int_eq(mrc_sched_pick(p, 4, &cursor), n % 2 ? 2 : 0);

	/* the most paths a connection may have */
	set_paths(p, MRC_MAX_PATHS, 16);
	cursor = 5;
	for (unsigned n = 0; n < 10 * MRC_MAX_PATHS; n++)
		ck_assert_int_eq(mrc_sched_pick(p, MRC_MAX_PATHS, &cursor),
				 (int)((5 + n) % MRC_MAX_PATHS));
}
END_TEST

/* a burst fills windows in turn, each until it is full. */
START_TEST(mrc_sched_pick__burst_fills_windows)
{
	static const int uneven[] = { 0, 1, 0, 1, 1, 1, 1, 1, -1 };
	struct mrc_path p[4];
	unsigned cursor = 0;

	set_paths(p, 4, 4);
	for (unsigned n = 0; n < 16; n++)
		ck_assert_int_eq(pick_and_send(p, 4, &cursor), (int)(n % 4));
	ck_assert_int_eq(pick_and_send(p, 4, &cursor), -1);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(p[i].inflight, 4);

	set_paths(p, 2, 0);
	p[0].cc.cwnd = 2;
	p[1].cc.cwnd = 6;
	cursor = 0;
	for (size_t n = 0; n < sizeof(uneven) / sizeof(uneven[0]); n++)
		ck_assert_int_eq(pick_and_send(p, 2, &cursor), uneven[n]);
}
END_TEST

/* no sequenced packet on a FAILED, DRAINED or PROBING path, however large its window. */
START_TEST(mrc_sched_pick__skips_unusable_paths)
{
	struct mrc_path p[4];
	unsigned cursor = 0;

	set_paths(p, 4, 256);
	p[0].state = MRC_PATH_FAILED;
	p[1].state = MRC_PATH_DRAINED;
	p[2].state = MRC_PATH_PROBING;
	p[3].cc.cwnd = 2;
	ck_assert_int_eq(pick_and_send(p, 4, &cursor), 3);
	ck_assert_int_eq(pick_and_send(p, 4, &cursor), 3);
	ck_assert_int_eq(pick_and_send(p, 4, &cursor), -1);

	p[3].state = MRC_PATH_DRAINED;
	p[3].inflight = 0;
	for (cursor = 0; cursor < 4; cursor++) {
		unsigned c = cursor;

		ck_assert_int_eq(mrc_sched_pick(p, 4, &c), -1);
		ck_assert_uint_eq(c, cursor);
	}
}
END_TEST

/* -1 when no usable path has room, or there are no paths; the cursor stays where it was. */
START_TEST(mrc_sched_pick__none_with_room)
{
	struct mrc_path p[3];
	unsigned cursor = 2;

	set_paths(p, 3, 8);
	p[0].inflight = 8;
	p[1].inflight = 9;
	p[2].cc.cwnd = 0;
	ck_assert_int_eq(mrc_sched_pick(p, 3, &cursor), -1);
	ck_assert_uint_eq(cursor, 2);
	ck_assert_int_eq(mrc_sched_pick(p, 0, &cursor), -1);
	ck_assert_uint_eq(cursor, 2);
	p[1].inflight = 7;
	ck_assert_int_eq(mrc_sched_pick(p, 3, &cursor), 1);
	ck_assert_uint_eq(cursor, 2);
}
END_TEST

/* a suspect path gets nothing, however large its window; healthy paths fill up. */
START_TEST(mrc_sched_pick__suspect_path_skipped)
{
	struct mrc_path p[2];
	unsigned cursor = 0;

	set_paths(p, 2, 64);
	p[0].rto_streak = 1;
	p[1].cc.cwnd = 4;
	p[1].inflight = 2;
	ck_assert_int_eq(pick_and_send(p, 2, &cursor), 1);
	ck_assert_int_eq(pick_and_send(p, 2, &cursor), 1);
	ck_assert_int_eq(pick_and_send(p, 2, &cursor), -1);
	ck_assert_uint_eq(p[0].inflight, 0);
	ck_assert_uint_eq(p[1].inflight, 4);
}
END_TEST

Suite *sched_suite(void)
{
	Suite *s = suite_create("sched");
	TCase *tc = tcase_create("sched");

	tcase_add_test(tc, mrc_path_free_window__cwnd_minus_inflight);
	tcase_add_test(tc, mrc_path_free_window__none_while_suspect);
	tcase_add_test(tc, mrc_sched_pick__next_path_with_room);
	tcase_add_test(tc, mrc_sched_pick__small_windows_fill_beside_a_big_one);
	tcase_add_test(tc, mrc_sched_pick__ties_round_robin);
	tcase_add_test(tc, mrc_sched_pick__burst_fills_windows);
	tcase_add_test(tc, mrc_sched_pick__skips_unusable_paths);
	tcase_add_test(tc, mrc_sched_pick__none_with_room);
	tcase_add_test(tc, mrc_sched_pick__suspect_path_skipped);
	suite_add_tcase(s, tc);
	return s;
}
