/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * daemon/core/sched.c: the pump's ready queue, timer heap and watched set, against a naive
 * model (arrays scanned in full) over long random operation sequences, and the orderings the
 * pump relies on spelled out one by one.
 */
#include <stdint.h>
#include <string.h>

#include "core/sched.h"
#include "suites.h"

#define SLOTS 64u

/* The model: what the structure must behave like, at O(slots) per question. */
struct model {
	unsigned queue[SLOTS], n_queue; /* the ready FIFO, front first */
	uint64_t deadline[SLOTS];	/* UINT64_MAX: no timer */
	bool watched[SLOTS];
};

static uint64_t rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	for (unsigned i = 0; i < SLOTS; i++)
		m->deadline[i] = UINT64_MAX;
}

static bool model_queued(const struct model *m, unsigned slot)
{
	for (unsigned i = 0; i < m->n_queue; i++)
		if (m->queue[i] == slot)
			return true;
	return false;
}

static void model_dequeue(struct model *m, unsigned slot)
{
	for (unsigned i = 0; i < m->n_queue; i++)
		if (m->queue[i] == slot) {
			memmove(&m->queue[i], &m->queue[i + 1],
				(m->n_queue - i - 1) * sizeof(m->queue[0]));
			m->n_queue--;
			return;
		}
}

static uint64_t model_min_deadline(const struct model *m)
{
	uint64_t min = UINT64_MAX;

	for (unsigned i = 0; i < SLOTS; i++)
		if (m->deadline[i] < min)
			min = m->deadline[i];
	return min;
}

static unsigned model_n_watched(const struct model *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SLOTS; i++)
		n += m->watched[i];
	return n;
}

/* libcheck records every assertion it passes; these speak only when one fails, so that a
 * long run stays cheap */
#define EXPECT(c) \
	do { \
		if (!(c)) \
			ck_abort_msg("seed %#llx step %u: %s", (unsigned long long)seed, step, #c); \
	} while (0)
#define EXPECT_EQ(a, b) EXPECT((uint64_t)(a) == (uint64_t)(b))
#define EXPECT_GT(a, b) EXPECT((uint64_t)(a) > (uint64_t)(b))
#define EXPECT_LT(a, b) EXPECT((uint64_t)(a) < (uint64_t)(b))
#define EXPECT_LE(a, b) EXPECT((uint64_t)(a) <= (uint64_t)(b))

/* Random operations, each checked against the model as it goes. */
static void property_run(uint64_t seed)
{
	struct mrcd_sched s;
	struct model m;
	uint64_t x = seed | 1, now = 0;

	ck_assert_int_eq(mrcd_sched_init(&s, SLOTS), 0);
	model_init(&m);
	for (unsigned step = 0; step < 20000; step++) {
		unsigned slot = (unsigned)(rng(&x) % SLOTS), got;
		uint64_t at;

		switch (rng(&x) % 9) {
		case 0:
		case 1:
			mrcd_sched_ready(&s, slot);
			if (!model_queued(&m, slot))
				m.queue[m.n_queue++] = slot;
			break;
		case 2:
			if (mrcd_sched_next_ready(&s, &got)) {
				EXPECT_GT(m.n_queue, 0);
				EXPECT_EQ(got, m.queue[0]);
				model_dequeue(&m, got);
			} else {
				EXPECT_EQ(m.n_queue, 0);
			}
			break;
		case 3:
		case 4:
			/* deadlines repeat often: ties must not confuse the heap */
			at = rng(&x) % 8 == 0 ? UINT64_MAX : now + rng(&x) % 50;
			mrcd_sched_timer(&s, slot, at);
			m.deadline[slot] = at;
			break;
		case 5:
			now += rng(&x) % 20;
			while (mrcd_sched_pop_due(&s, now, &got)) {
				EXPECT_LT(got, SLOTS);
				EXPECT_LE(m.deadline[got], now);
				/* always an earliest one: the pump never skips a deadline */
				EXPECT_EQ(m.deadline[got], model_min_deadline(&m));
				m.deadline[got] = UINT64_MAX;
			}
			EXPECT(model_min_deadline(&m) > now);
			break;
		case 6:
			EXPECT_EQ(mrcd_sched_watch(&s, slot), !m.watched[slot]);
			m.watched[slot] = true;
			break;
		case 7:
			if (mrcd_sched_unwatch_any(&s, &got)) {
				EXPECT(m.watched[got]);
				m.watched[got] = false;
			} else {
				EXPECT_EQ(model_n_watched(&m), 0);
			}
			break;
		case 8:
			mrcd_sched_forget(&s, slot);
			model_dequeue(&m, slot);
			m.deadline[slot] = UINT64_MAX;
			m.watched[slot] = false;
			break;
		}
		EXPECT_EQ(mrcd_sched_n_ready(&s), m.n_queue);
		EXPECT_EQ(mrcd_sched_next_deadline(&s), model_min_deadline(&m));
		EXPECT_EQ(mrcd_sched_n_watched(&s), model_n_watched(&m));
		for (unsigned i = 0; i < mrcd_sched_n_watched(&s); i++)
			EXPECT(m.watched[mrcd_sched_watched(&s, i)]);
	}
	mrcd_sched_fini(&s);
}

START_TEST(mrcd_sched__matches_a_naive_model)
{
	for (uint64_t seed = 1; seed <= 40; seed++)
		property_run(seed * 0x9e3779b97f4a7c15ull);
}
END_TEST

/* First come, first served, and a slot that is already waiting keeps its place. */
START_TEST(mrcd_sched__ready_is_a_fifo_without_duplicates)
{
	struct mrcd_sched s;
	unsigned got;

	ck_assert_int_eq(mrcd_sched_init(&s, 8), 0);
	mrcd_sched_ready(&s, 5);
	mrcd_sched_ready(&s, 2);
	mrcd_sched_ready(&s, 5);
	mrcd_sched_ready(&s, 7);
	mrcd_sched_ready(&s, 8); /* out of range: ignored */
	ck_assert_uint_eq(mrcd_sched_n_ready(&s), 3);
	ck_assert(mrcd_sched_next_ready(&s, &got) && got == 5);
	mrcd_sched_ready(&s, 5); /* requeued: now behind 2 and 7 */
	ck_assert(mrcd_sched_next_ready(&s, &got) && got == 2);
	ck_assert(mrcd_sched_next_ready(&s, &got) && got == 7);
	ck_assert(mrcd_sched_next_ready(&s, &got) && got == 5);
	ck_assert(!mrcd_sched_next_ready(&s, &got));
	mrcd_sched_fini(&s);
}
END_TEST

/* A timer moves when set again, disappears at UINT64_MAX, and fires only when due. */
START_TEST(mrcd_sched__timers_fire_in_deadline_order)
{
	struct mrcd_sched s;
	unsigned got;

	ck_assert_int_eq(mrcd_sched_init(&s, 8), 0);
	ck_assert_uint_eq(mrcd_sched_next_deadline(&s), UINT64_MAX);
	mrcd_sched_timer(&s, 1, 300);
	mrcd_sched_timer(&s, 2, 100);
	mrcd_sched_timer(&s, 3, 200);
	mrcd_sched_timer(&s, 2, 400); /* later now */
	mrcd_sched_timer(&s, 4, 50);
	mrcd_sched_timer(&s, 4, UINT64_MAX); /* and gone */
	ck_assert_uint_eq(mrcd_sched_next_deadline(&s), 200);
	ck_assert(!mrcd_sched_pop_due(&s, 199, &got));
	ck_assert(mrcd_sched_pop_due(&s, 300, &got) && got == 3);
	ck_assert(mrcd_sched_pop_due(&s, 300, &got) && got == 1);
	ck_assert(!mrcd_sched_pop_due(&s, 300, &got));
	ck_assert_uint_eq(mrcd_sched_next_deadline(&s), 400);
	mrcd_sched_forget(&s, 2);
	ck_assert_uint_eq(mrcd_sched_next_deadline(&s), UINT64_MAX);
	mrcd_sched_fini(&s);
}
END_TEST

/* A forgotten slot is out of all three at once: a freed QP is never visited. */
START_TEST(mrcd_sched__forget_removes_everywhere)
{
	struct mrcd_sched s;
	unsigned got;

	ck_assert_int_eq(mrcd_sched_init(&s, 4), 0);
	mrcd_sched_ready(&s, 1);
	mrcd_sched_ready(&s, 3);
	mrcd_sched_timer(&s, 3, 10);
	ck_assert(mrcd_sched_watch(&s, 3));
	ck_assert(!mrcd_sched_watch(&s, 3));
	mrcd_sched_forget(&s, 3);
	ck_assert_uint_eq(mrcd_sched_n_ready(&s), 1);
	ck_assert_uint_eq(mrcd_sched_n_watched(&s), 0);
	ck_assert(!mrcd_sched_pop_due(&s, 1000, &got));
	ck_assert(mrcd_sched_next_ready(&s, &got) && got == 1);
	ck_assert(!mrcd_sched_unwatch_any(&s, &got));
	mrcd_sched_fini(&s);
}
END_TEST

Suite *core_sched_suite(void)
{
	Suite *s = suite_create("core_sched");
	TCase *tc = tcase_create("core_sched");

	tcase_add_test(tc, mrcd_sched__matches_a_naive_model);
	tcase_add_test(tc, mrcd_sched__ready_is_a_fifo_without_duplicates);
	tcase_add_test(tc, mrcd_sched__timers_fire_in_deadline_order);
	tcase_add_test(tc, mrcd_sched__forget_removes_everywhere);
	suite_add_tcase(s, tc);
	return s;
}
