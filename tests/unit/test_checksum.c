/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* lib/proto/checksum.c: the Internet checksum that guards every packet. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/checksum.h"
#include "suites.h"

/* The textbook definition, one big-endian 16-bit word at a time, for comparison. */
static uint16_t reference_sum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static void fill_random(uint8_t *p, size_t len, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rand();
}

/* RFC 1071 section 3 worked example: the words sum to 0xddf2. */
START_TEST(mrc_csum_fold__rfc1071_example)
{
	static const uint8_t bytes[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	ck_assert_uint_eq(mrc_csum_fold(mrc_csum_add(0, bytes, sizeof(bytes))), 0xddf2);
	ck_assert_uint_eq(mrc_csum_compute(bytes, sizeof(bytes)), 0x220d);
}
END_TEST

/* Every length 0..300 (odd ones padded on the right) and every start alignment 0..7. */
START_TEST(mrc_csum_add__matches_reference_at_any_length_and_alignment)
{
	uint8_t buf[320];

	fill_random(buf, sizeof(buf), 7);
	for (size_t align = 0; align < 8; align++)
		for (size_t len = 0; len <= 300; len++)
			ck_assert_uint_eq(mrc_csum_fold(mrc_csum_add(0, buf + align, len)),
					  reference_sum(buf + align, len));
}
END_TEST

START_TEST(mrc_csum_add__chunks_at_even_offsets_equal_whole)
{
	uint8_t buf[1501];
	uint32_t acc = 0;

	fill_random(buf, sizeof(buf), 11);
	for (size_t off = 0; off < sizeof(buf); off += 64) {
		size_t n = sizeof(buf) - off < 64 ? sizeof(buf) - off : 64;

		acc = mrc_csum_add(acc, buf + off, n);
	}
	ck_assert_uint_eq(mrc_csum_fold(acc), reference_sum(buf, sizeof(buf)));
}
END_TEST

/* Jumbo lengths through the vector loop, any alignment, any running accumulator. */
START_TEST(mrc_csum_add__long_buffers_and_any_accumulator)
{
	static uint8_t buf[9216 + 8];

	fill_random(buf, sizeof(buf), 13);
	srand(17);
	for (unsigned i = 0; i < 2000; i++) {
		size_t align = (size_t)rand() % 8, len = (size_t)rand() % 9217;
		uint32_t acc = (uint32_t)rand() * 2654435761u;
		uint32_t want = (uint32_t)mrc_csum_fold(acc) + reference_sum(buf + align, len);

		want = (want & 0xffff) + (want >> 16);
		ck_assert_uint_eq(mrc_csum_fold(mrc_csum_add(acc, buf + align, len)), want);
	}
}
END_TEST

/* A buffer of 0xff bytes sums to 0xffff: the carries must wrap around, not be lost. */
START_TEST(mrc_csum_add__end_around_carry)
{
	uint8_t buf[65536];

	memset(buf, 0xff, sizeof(buf));
	ck_assert_uint_eq(mrc_csum_fold(mrc_csum_add(0, buf, sizeof(buf))), 0xffff);
	memset(buf, 0x80, sizeof(buf));
	ck_assert_uint_eq(mrc_csum_fold(mrc_csum_add(0, buf, sizeof(buf))),
			  reference_sum(buf, sizeof(buf)));
}
END_TEST

/* With the checksum stored, verification passes; any single flipped bit fails it. */
START_TEST(mrc_csum_verify__detects_every_single_bit_flip)
{
	uint8_t pkt[1024 + 3];
	uint16_t c;

	fill_random(pkt, sizeof(pkt), 13);
	pkt[20] = pkt[21] = 0;
	c = mrc_csum_compute(pkt, sizeof(pkt));
	pkt[20] = (uint8_t)(c >> 8);
	pkt[21] = (uint8_t)c;
	ck_assert(mrc_csum_verify(pkt, sizeof(pkt)));
	for (size_t bit = 0; bit < sizeof(pkt) * 8; bit++) {
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ck_assert_msg(!mrc_csum_verify(pkt, sizeof(pkt)), "bit %zu flip undetected", bit);
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}
END_TEST

/* All bursts of up to 15 bits inside one aligned 32-bit word are caught. */
START_TEST(mrc_csum_verify__detects_short_bursts)
{
	uint8_t pkt[256];
	uint16_t c;

	fill_random(pkt, sizeof(pkt), 17);
	pkt[20] = pkt[21] = 0;
	c = mrc_csum_compute(pkt, sizeof(pkt));
	pkt[20] = (uint8_t)(c >> 8);
	pkt[21] = (uint8_t)c;
	for (size_t word = 0; word < sizeof(pkt) / 4; word++) {
		for (unsigned pattern = 1; pattern < (1u << 15); pattern += 97) {
			for (unsigned shift = 0; shift <= 17; shift += 17) {
				uint32_t w, flip = pattern << shift;

				memcpy(&w, pkt + word * 4, 4);
				w ^= flip;
				memcpy(pkt + word * 4, &w, 4);
				ck_assert(!mrc_csum_verify(pkt, sizeof(pkt)));
				w ^= flip;
				memcpy(pkt + word * 4, &w, 4);
			}
		}
	}
	ck_assert(mrc_csum_verify(pkt, sizeof(pkt)));
}
END_TEST

Suite *checksum_suite(void)
{
	Suite *s = suite_create("checksum");
	TCase *tc = tcase_create("checksum");

	tcase_add_test(tc, mrc_csum_fold__rfc1071_example);
	tcase_add_test(tc, mrc_csum_add__matches_reference_at_any_length_and_alignment);
	tcase_add_test(tc, mrc_csum_add__chunks_at_even_offsets_equal_whole);
	tcase_add_test(tc, mrc_csum_add__long_buffers_and_any_accumulator);
	tcase_add_test(tc, mrc_csum_add__end_around_carry);
	tcase_add_test(tc, mrc_csum_verify__detects_every_single_bit_flip);
	tcase_add_test(tc, mrc_csum_verify__detects_short_bursts);
	suite_add_tcase(s, tc);
	return s;
}
