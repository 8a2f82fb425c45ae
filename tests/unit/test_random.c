/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The identifiers an attacker must not predict: metaroce/siphash.h against
 * libsodium's SipHash-2-4, the keyed stream lib/proto/random.h makes of it, and the QPNs the
 * daemon core draws from it.
 */
#include <sodium.h>
#include <string.h>

#include <metaroce/ctl.h>
#include <metaroce/siphash.h>

#include "core_world.h"
#include "proto/random.h"
#include "suites.h"

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The published vector (key 00..0f, empty message), then random keys and messages of
 * every length it takes (identifiers' 0-2 words, packet headers' up to 10), against
 * libsodium's implementation. */
START_TEST(siphash__matches_libsodium)
{
	uint8_t key[crypto_shorthash_siphash24_KEYBYTES], msg[8 * MRC_SIP_MAX_WORDS], out[8];
	__u64 words[MRC_SIP_MAX_WORDS];

	ck_assert_int_ge(sodium_init(), 0);
	for (unsigned i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	ck_assert_uint_eq(mrc_siphash24(le64(key), le64(key + 8), NULL, 0), 0x726fdb47dd0e0e31ull);
	for (unsigned round = 0; round < 3000; round++) {
		unsigned n = round % (MRC_SIP_MAX_WORDS + 1);

		randombytes_buf(key, sizeof(key));
		randombytes_buf(msg, sizeof(msg));
		crypto_shorthash_siphash24(out, msg, 8 * n, key);
		for (unsigned w = 0; w < MRC_SIP_MAX_WORDS; w++)
			words[w] = le64(msg + 8 * w);
		ck_assert_uint_eq(mrc_siphash24(le64(key), le64(key + 8), words, n), le64(out));
	}
}
END_TEST

/* The stream replays under its key, differs under another, and repeats nothing. */
START_TEST(prf__keyed_deterministic_and_distinct)
{
	struct mrc_prf a, b, c;
	static uint64_t seen[1 << 16];

	mrc_prf_seed(&a, 42);
	mrc_prf_seed(&b, 42);
	mrc_prf_seed(&c, 43);
	for (unsigned i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		uint64_t v = mrc_prf_next(&a);

		ck_assert_uint_eq(v, mrc_prf_next(&b));
		ck_assert_uint_ne(v, mrc_prf_next(&c));
		seen[i] = v;
	}
	for (unsigned i = 1; i < sizeof(seen) / sizeof(seen[0]); i++)
		for (unsigned j = i - 1; j + 8 >= i && j < i; j--)
			ck_assert_uint_ne(seen[i], seen[j]);
}
END_TEST

/*
 * QPNs use all 24 bits, slot and generation both drawn: a client that creates QPs learns
 * nothing of the next one's number, and a slot's next QPN is never its last.
 */
START_TEST(core__qpns_are_drawn_not_counted)
{
	static struct world w;
	static uint32_t last_in_slot[MRCD_MAX_QPS];
	struct host *h;
	struct mrc_ctl_create_cq ccq = { .entries = 16 };
	struct mrc_ctl_cq cq;
	uint32_t prev = 0;
	unsigned successive = 0, gens_seen = 0, reused_slots = 0;
	static bool gen_seen[1u << MRCD_HANDLE_SLOT_BITS];

	world_init(&w, 5);
	h = &w.h[0];
	ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_CQ, &ccq, sizeof(ccq), NULL, &cq,
				       sizeof(cq)),
			 0);
	for (unsigned i = 0; i < 20000; i++) {
		uint32_t qpn = 0;
		struct mrc_ctl_handle d;
		unsigned slot, gen;

		ck_assert_int_eq(world_create_rc_qp(h, cq.handle, &qpn), 0);
		d = (struct mrc_ctl_handle){ .handle = qpn };
		slot = mrcd_qp_slot(qpn);
		gen = qpn >> MRCD_HANDLE_SLOT_BITS;

		ck_assert_uint_lt(qpn, 1u << 24);
		ck_assert_uint_ne(gen, 0);
		ck_assert_uint_ne(qpn, last_in_slot[slot]);
		if (last_in_slot[slot])
			reused_slots++;
		last_in_slot[slot] = qpn;
		successive += prev && (qpn == prev + 1 || slot == mrcd_qp_slot(prev) + 1);
		if (!gen_seen[gen]) {
			gen_seen[gen] = true;
			gens_seen++;
		}
		prev = qpn;
		ck_assert_int_eq(world_request(h, MRC_CTL_DESTROY_QP, &d, sizeof(d), NULL, NULL, 0),
				 0);
	}
	ck_assert_uint_lt(successive, 20);	/* a counter would make all 20000 successive */
	ck_assert_uint_gt(gens_seen, 4000);	/* of 4095: every generation drawn */
	ck_assert_uint_gt(reused_slots, 10000); /* slots came back, never with their last QPN */
	world_free(&w);
}
END_TEST

Suite *random_suite(void)
{
	Suite *s = suite_create("random");
	TCase *t = tcase_create("random");

	tcase_add_test(t, siphash__matches_libsodium);
	tcase_add_test(t, prf__keyed_deterministic_and_distinct);
	tcase_add_test(t, core__qpns_are_drawn_not_counted);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	return s;
}
