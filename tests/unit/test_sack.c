/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/sack.c: the receiver's 256-PSN window, kept as a ring indexed by PSN % 256, and
 * the wire SACK vector rotated from it. Requirement ids refer to docs/SPEC.md.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sack.h"
#include "suites.h"

/* Bases that put the window at zero, at ring boundaries, at the sign flip and across the wrap. */
static const uint32_t edge_bases[] = {
	0,	     1,		  255,	       256,	    0x12345678u, 0x7fffff80u,
	0x7fffffffu, 0x80000000u, 0xffffff00u, 0xffffff01u, 0xffffff80u, 0xffffffffu,
};
#define N_EDGE_BASES (sizeof(edge_bases) / sizeof(edge_bases[0]))

/* Deterministic whatever the libc: the sequences below must not change between machines. */
static uint32_t xorshift32(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

/* The wire vector built bit by bit from a predicate, without the module's mrc_sack_set. */
static void reference_sack(uint8_t out[MRC_SACK_BYTES], const bool received[MRC_SACK_BITS])
{
	memset(out, 0, MRC_SACK_BYTES);
	for (unsigned i = 0; i < MRC_SACK_BITS; i++)
		if (received[i])
			out[i / 8] = (uint8_t)(out[i / 8] + (1u << (i % 8)));
}

START_TEST(mrc_rx_window_init__empty_window_at_base)
{
	struct mrc_rx_window w;
	uint8_t sack[MRC_SACK_BYTES];
	static const uint8_t zero[MRC_SACK_BYTES];

	memset(&w, 0xa5, sizeof(w));
	mrc_rx_window_init(&w, 0xfffffff0u);
	ck_assert_uint_eq(w.base, 0xfffffff0u);
	ck_assert(!mrc_rx_window_has_gap(&w));
	mrc_rx_window_sack(&w, sack);
	ck_assert_mem_eq(sack, zero, MRC_SACK_BYTES);
}
END_TEST

/* cum_psn <= psn < cum_psn + 256 is in; below is old; beyond overruns. */
START_TEST(mrc_rx_window_classify__window_edges)
{
	for (size_t k = 0; k < N_EDGE_BASES; k++) {
		struct mrc_rx_window w;
		uint32_t b = edge_bases[k];

		mrc_rx_window_init(&w, b);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b - 1), MRC_RX_BELOW);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b), MRC_RX_NEW);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 1), MRC_RX_NEW);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 255), MRC_RX_NEW);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 256), MRC_RX_ABOVE);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b - 256), MRC_RX_BELOW);
		/* serial arithmetic: the far half of the space is behind, not ahead */
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 0x7fffffffu), MRC_RX_ABOVE);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 0x80000000u), MRC_RX_BELOW);
	}
}
END_TEST

/* a set bit makes a duplicate; a PSN sharing its ring index outside the window does not. */
START_TEST(mrc_rx_window_classify__duplicate_only_inside_window)
{
	for (size_t k = 0; k < N_EDGE_BASES; k++) {
		struct mrc_rx_window w;
		uint32_t b = edge_bases[k];

		mrc_rx_window_init(&w, b);
		ck_assert_uint_eq(mrc_rx_window_mark(&w, b + 1), 0);
		ck_assert_uint_eq(mrc_rx_window_mark(&w, b + 255), 0);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 1), MRC_RX_DUPLICATE);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 255), MRC_RX_DUPLICATE);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 2), MRC_RX_NEW);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 257), MRC_RX_ABOVE);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b - 1), MRC_RX_BELOW);
		ck_assert_uint_eq(w.base, b);
	}
}
END_TEST

/* the base moves over the whole contiguous run, and only when its own PSN arrives. */
START_TEST(mrc_rx_window_mark__advances_over_contiguous_run)
{
	struct mrc_rx_window w;

	mrc_rx_window_init(&w, 1000);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1002), 0);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1003), 0);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1005), 0);
	ck_assert(mrc_rx_window_has_gap(&w));
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1000), 1);
	ck_assert_uint_eq(w.base, 1001);
	ck_assert(mrc_rx_window_has_gap(&w));
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1001), 3);
	ck_assert_uint_eq(w.base, 1004);
	ck_assert(mrc_rx_window_has_gap(&w));
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1004), 2);
	ck_assert_uint_eq(w.base, 1006);
	ck_assert(!mrc_rx_window_has_gap(&w));
	/* the bits passed over are cleared, so the ring is ready for PSN + 256 */
	for (unsigned i = 0; i < MRC_SACK_BITS / 64; i++)
		ck_assert_uint_eq(w.ring[i], 0);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 1002 + 256), MRC_RX_NEW);
}
END_TEST

/* Every other PSN of the window present, then the base: the base moves the full 256. */
START_TEST(mrc_rx_window_mark__full_window_then_base_moves_256)
{
	for (size_t k = 0; k < N_EDGE_BASES; k++) {
		struct mrc_rx_window w;
		uint32_t b = edge_bases[k];

		mrc_rx_window_init(&w, b);
		for (uint32_t i = 255; i >= 1; i--)
			ck_assert_uint_eq(mrc_rx_window_mark(&w, b + i), 0);
		ck_assert(mrc_rx_window_has_gap(&w));
		ck_assert_uint_eq(mrc_rx_window_mark(&w, b), 256);
		ck_assert_uint_eq(w.base, b + 256);
		ck_assert(!mrc_rx_window_has_gap(&w));
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 255), MRC_RX_BELOW);
		ck_assert_int_eq(mrc_rx_window_classify(&w, b + 256), MRC_RX_NEW);
	}
}
END_TEST

/* cum_psn crosses 0xffffffff -> 0 like any other step; the vector follows it. */
START_TEST(mrc_rx_window_mark__psn_wrap_around)
{
	struct mrc_rx_window w;
	uint8_t sack[MRC_SACK_BYTES];

	mrc_rx_window_init(&w, 0xfffffffdu);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 0xffffffffu), 0);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 0), 0);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 2), 0);
	mrc_rx_window_sack(&w, sack);
	/* offsets 2 (0xffffffff), 3 (0) and 5 (2) */
	ck_assert_uint_eq(sack[0], 0x2c);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 0xfffffffdu), 1);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 0xfffffffeu), 3);
	ck_assert_uint_eq(w.base, 1);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 0xffffffffu), MRC_RX_BELOW);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 0), MRC_RX_BELOW);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 1), MRC_RX_NEW);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 2), MRC_RX_DUPLICATE);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 256), MRC_RX_NEW);
	ck_assert_int_eq(mrc_rx_window_classify(&w, 257), MRC_RX_ABOVE);
	mrc_rx_window_sack(&w, sack);
	ck_assert_uint_eq(sack[0], 0x02);
	ck_assert_uint_eq(mrc_rx_window_mark(&w, 1), 2);
	ck_assert_uint_eq(w.base, 3);
	ck_assert(!mrc_rx_window_has_gap(&w));
}
END_TEST

/* bit i is byte i / 8 under mask 1 << (i % 8): the layout drawn in section 5.3. */
START_TEST(mrc_sack_set__lsb_first_per_byte)
{
	for (unsigned i = 0; i < MRC_SACK_BITS; i++) {
		uint8_t sack[MRC_SACK_BYTES] = { 0 };

		mrc_sack_set(sack, i);
		for (unsigned j = 0; j < MRC_SACK_BYTES; j++)
			ck_assert_uint_eq(sack[j], j == i / 8 ? 1u << (i % 8) : 0);
		for (unsigned j = 0; j < MRC_SACK_BITS; j++)
			ck_assert(mrc_sack_test(sack, j) == (j == i));
	}
}
END_TEST

/* a known answer: bit 0 (the base) clear, bit 1 = 0x02, bit 8 = 0x01 of byte 1. */
START_TEST(mrc_rx_window_sack__known_answer)
{
	struct mrc_rx_window w;
	uint8_t sack[MRC_SACK_BYTES];
	uint8_t want[MRC_SACK_BYTES] = { 0 };
	uint32_t b = 0xffffff85u; /* ring index 0x85: the rotation is not a whole number of words */

	mrc_rx_window_init(&w, b);
	mrc_rx_window_mark(&w, b + 1);
	mrc_rx_window_mark(&w, b + 8);
	mrc_rx_window_mark(&w, b + 15);
	mrc_rx_window_mark(&w, b + 123);
	mrc_rx_window_mark(&w, b + 255);
	mrc_rx_window_sack(&w, sack);
	want[0] = 0x02;
	want[1] = 0x81;
	want[15] = 0x08;
	want[31] = 0x80;
	ck_assert_mem_eq(sack, want, MRC_SACK_BYTES);
}
END_TEST

/*
 * random mark sets on many bases, wrap included, against a bit-by-bit reference. The
 * hot loops test with if/ck_abort_msg: a passing ck_assert costs a write to libcheck's pipe.
 */
START_TEST(mrc_rx_window_sack__matches_bitwise_reference)
{
	uint32_t rng = 0x5ac0ffeeu;

	for (unsigned round = 0; round < 3000; round++) {
		struct mrc_rx_window w;
		bool received[MRC_SACK_BITS] = { false };
		uint8_t sack[MRC_SACK_BYTES], want[MRC_SACK_BYTES];
		uint32_t b = round < N_EDGE_BASES ? edge_bases[round] :
			     round % 4 == 0	   ? 0xffffff00u + (round & 0x1ff) :
						     xorshift32(&rng);
		uint32_t density = xorshift32(&rng) % 101; /* percent of offsets marked */

		mrc_rx_window_init(&w, b);
		for (unsigned i = 1; i < MRC_SACK_BITS; i++) {
			if (xorshift32(&rng) % 100 >= density)
				continue;
			if (mrc_rx_window_classify(&w, b + i) != MRC_RX_NEW ||
			    mrc_rx_window_mark(&w, b + i) != 0)
				ck_abort_msg("base 0x%08x offset %u: not a plain new PSN", b, i);
			received[i] = true;
		}
		reference_sack(want, received);
		mrc_rx_window_sack(&w, sack);
		ck_assert_msg(!memcmp(sack, want, MRC_SACK_BYTES), "base 0x%08x round %u", b,
			      round);
		for (unsigned i = 0; i < MRC_SACK_BITS; i++)
			if (mrc_sack_test(sack, i) != received[i])
				ck_abort_msg("base 0x%08x: mrc_sack_test bit %u", b, i);
	}
}
END_TEST

/*
 * 100k arrivals, reordered and duplicated, some far behind or
 * beyond the window, starting 16k PSNs before the wrap. The reference is the plain set of
 * received PSNs (one flag per PSN since the start) and a base recomputed from it.
 */
#define ARRIVALS 100000
#define START_PSN 0xffffc000u
#define SPAN (1u << 18)

START_TEST(mrc_rx_window__random_arrivals_match_reference_model)
{
	bool *seen = calloc(SPAN, sizeof(*seen));
	struct mrc_rx_window w;
	uint32_t rng = 0x1234abcdu, ref_base = START_PSN;
	unsigned counts[4] = { 0 };

	ck_assert_ptr_nonnull(seen);
	mrc_rx_window_init(&w, START_PSN);
	for (unsigned n = 0; n < ARRIVALS; n++) {
		uint32_t r = xorshift32(&rng), psn, moved;
		enum mrc_rx_verdict want, got;
		bool received[MRC_SACK_BITS], gap = false;
		uint8_t sack[MRC_SACK_BYTES], ref[MRC_SACK_BYTES];
		int32_t off;

		/* mostly just ahead of the base, sometimes from far behind to far beyond it */
		if (r % 16)
			psn = ref_base + (xorshift32(&rng) % 48);
		else
			psn = ref_base - 300 + (xorshift32(&rng) % 900);
		off = (int32_t)(psn - ref_base);
		want = off < 0 ? MRC_RX_BELOW :
		       off >= MRC_SACK_BITS ? MRC_RX_ABOVE :
		       seen[psn - START_PSN] ? MRC_RX_DUPLICATE : MRC_RX_NEW;
		got = mrc_rx_window_classify(&w, psn);
		if (got != want)
			ck_abort_msg("arrival %u psn 0x%08x: verdict %d, want %d", n, psn,
				     (int)got, (int)want);
		counts[got]++;
		if (got == MRC_RX_NEW) {
			uint32_t before = ref_base;

			seen[psn - START_PSN] = true;
			while (seen[ref_base - START_PSN])
				ref_base++;
			moved = mrc_rx_window_mark(&w, psn);
			if (moved != ref_base - before)
				ck_abort_msg("arrival %u: moved %u, want %u", n, moved,
					     ref_base - before);
		}
		if (w.base != ref_base)
			ck_abort_msg("arrival %u: base 0x%08x, want 0x%08x", n, w.base, ref_base);
		for (unsigned i = 0; i < MRC_SACK_BITS; i++) {
			received[i] = seen[ref_base + i - START_PSN];
			gap |= received[i];
		}
		if (mrc_rx_window_has_gap(&w) != gap)
			ck_abort_msg("arrival %u: has_gap %d, want %d", n, !gap, gap);
		if (n % 7 == 0 || got == MRC_RX_NEW) {
			reference_sack(ref, received);
			mrc_rx_window_sack(&w, sack);
			/* bit 0, the base itself, is never set */
			if (memcmp(sack, ref, MRC_SACK_BYTES) || mrc_sack_test(sack, 0))
				ck_abort_msg("arrival %u: SACK vector differs", n);
		}
	}
	/* the run exercised every verdict and carried the base across 0xffffffff */
	for (unsigned v = 0; v < 4; v++)
		ck_assert_uint_gt(counts[v], 1000);
	ck_assert_uint_gt(ref_base - START_PSN, 0x4000);
	ck_assert_uint_lt(ref_base - START_PSN, SPAN - 2 * MRC_SACK_BITS);
	free(seen);
}
END_TEST

Suite *sack_suite(void)
{
	Suite *s = suite_create("sack");
	TCase *tc = tcase_create("window");
	TCase *vec = tcase_create("vector");
	TCase *model = tcase_create("model");

	tcase_add_test(tc, mrc_rx_window_init__empty_window_at_base);
	tcase_add_test(tc, mrc_rx_window_classify__window_edges);
	tcase_add_test(tc, mrc_rx_window_classify__duplicate_only_inside_window);
	tcase_add_test(tc, mrc_rx_window_mark__advances_over_contiguous_run);
	tcase_add_test(tc, mrc_rx_window_mark__full_window_then_base_moves_256);
	tcase_add_test(tc, mrc_rx_window_mark__psn_wrap_around);
	suite_add_tcase(s, tc);
	tcase_add_test(vec, mrc_sack_set__lsb_first_per_byte);
	tcase_add_test(vec, mrc_rx_window_sack__known_answer);
	tcase_add_test(vec, mrc_rx_window_sack__matches_bitwise_reference);
	suite_add_tcase(s, vec);
	tcase_add_test(model, mrc_rx_window__random_arrivals_match_reference_model);
	tcase_set_timeout(model, 60);
	suite_add_tcase(s, model);
	return s;
}
