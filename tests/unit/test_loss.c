/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/loss.c: per-path loss detection over the sender's 256-slot tx ring, and the
 * inflight accounting it shares with the acknowledgement path. Requirement ids refer to
 * docs/SPEC.md.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto/loss.h"
#include "proto/seq.h"
#include "suites.h"

#define N_PATHS 4
#define THRESHOLD 3 /* reorder_threshold default, section 16 */

struct sim {
	struct mrc_tx_slot slots[MRC_SACK_BITS];
	struct mrc_tx_ring ring;
	struct mrc_path paths[N_PATHS];
};

static void sim_init(struct sim *s)
{
	memset(s, 0, sizeof(*s));
	s->ring.slot = s->slots;
	s->ring.mask = MRC_SACK_BITS - 1;
	for (unsigned i = 0; i < N_PATHS; i++) {
		s->paths[i].state = MRC_PATH_ACTIVE;
		s->paths[i].cc.cwnd = 256;
	}
}

/* A transmission, new or repeated, through the bookkeeping the engine uses. */
static void send_on(struct sim *s, uint32_t psn, unsigned path)
{
	mrc_tx_record_send(mrc_tx_slot(&s->ring, psn), s->paths, path);
}

/* An acknowledgement of one PSN, likewise. */
static void ack(struct sim *s, uint32_t psn)
{
	mrc_tx_record_ack(mrc_tx_slot(&s->ring, psn), s->paths);
}

static unsigned count_flag(struct sim *s, uint32_t una, uint32_t nxt, int path, uint8_t flag)
{
	unsigned n = 0;

	for (uint32_t psn = una; psn != nxt; psn++) {
		struct mrc_tx_slot *t = mrc_tx_slot(&s->ring, psn);

		if ((t->flags & flag) && (path < 0 || t->path == path))
			n++;
	}
	return n;
}

static void assert_inflight_consistent(struct sim *s, uint32_t una, uint32_t nxt)
{
	for (int i = 0; i < N_PATHS; i++)
		ck_assert_uint_eq(s->paths[i].inflight,
				  count_flag(s, una, nxt, i, MRC_TX_INFLIGHT));
}

START_TEST(mrc_tx_slot__psn_modulo_256)
{
	struct mrc_tx_slot slots[MRC_SACK_BITS];
	struct mrc_tx_ring ring = { slots, MRC_SACK_BITS - 1 };

	ck_assert_ptr_eq(mrc_tx_slot(&ring, 0), &slots[0]);
	ck_assert_ptr_eq(mrc_tx_slot(&ring, 256), &slots[0]);
	ck_assert_ptr_eq(mrc_tx_slot(&ring, 0x1ff), &slots[255]);
	ck_assert_ptr_eq(mrc_tx_slot(&ring, 0xffffffffu), &slots[255]);
	ck_assert_ptr_eq(mrc_tx_slot(&ring, 0x12345678u), &slots[0x78]);
}
END_TEST

/* Growing keeps every outstanding PSN's record, across a PSN wrap, and stops at 256. */
START_TEST(mrc_tx_ring_grow__keeps_outstanding_slots)
{
	const uint32_t una = 0xfffffff0u;
	struct mrc_tx_ring ring;
	uint32_t nxt = una;

	ck_assert_int_eq(mrc_tx_ring_init(&ring, MRC_TX_RING_FIRST), 0);
	for (uint32_t slots = MRC_TX_RING_FIRST; slots < MRC_SACK_BITS; slots *= 2) {
		ck_assert_uint_eq(mrc_tx_ring_slots(&ring), slots);
		for (; nxt != una + slots; nxt++)
			mrc_tx_slot(&ring, nxt)->path_seq = nxt ^ 0x5a5a5a5au;
		ck_assert(mrc_tx_ring_grow(&ring, una, nxt));
	}
	ck_assert_uint_eq(mrc_tx_ring_slots(&ring), MRC_SACK_BITS);
	ck_assert(!mrc_tx_ring_grow(&ring, una, nxt));
	for (uint32_t psn = una; psn != nxt; psn++)
		ck_assert_uint_eq(mrc_tx_slot(&ring, psn)->path_seq, psn ^ 0x5a5a5a5au);
	mrc_tx_ring_fini(&ring);
}
END_TEST

/* A packet leaves its path's inflight once, whatever the number of calls; other flags stay. */
START_TEST(mrc_tx_leave_flight__exactly_once)
{
	struct sim s;
	struct mrc_tx_slot *t;

	sim_init(&s);
	t = mrc_tx_slot(&s.ring, 7);
	send_on(&s, 6, 1);
	send_on(&s, 7, 1);
	t->flags |= MRC_TX_WND_LIMITED;
	mrc_tx_leave_flight(t, s.paths);
	ck_assert_uint_eq(s.paths[1].inflight, 1);
	ck_assert_uint_eq(t->flags, MRC_TX_WND_LIMITED);
	mrc_tx_leave_flight(t, s.paths);
	mrc_tx_leave_flight(t, s.paths);
	ck_assert_uint_eq(s.paths[1].inflight, 1);
	for (int i = 0; i < N_PATHS; i++)
		ck_assert_uint_eq(s.paths[i].inflight, i == 1);
}
END_TEST

/*
 * lost once a packet sent THRESHOLD or more transmissions later on its path is acked.
 * The module reads R-59 by distance (as RACK/FACK do): at the ack of seq 3 only seqs 2 and 3
 * are acknowledged, two packets, yet seq 0 is declared lost, because seq 3 left 3 later.
 */
START_TEST(mrc_loss_detect_reorder__threshold_on_same_path)
{
	struct sim s;

	sim_init(&s);
	for (uint32_t psn = 100; psn < 110; psn++)
		send_on(&s, psn, 2); /* path_seq 0..9 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 100, 110, s.paths, THRESHOLD), 0);
	ack(&s, 102); /* seq 2: only 2 later, not enough for seq 0 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 100, 110, s.paths, THRESHOLD), 0);
	ack(&s, 103); /* seq 3 proves seq 0 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 100, 110, s.paths, THRESHOLD), 1);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 100)->flags, MRC_TX_LOST);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 101)->flags, MRC_TX_INFLIGHT);
	ack(&s, 105); /* seq 5 proves seqs 1 and 2, but seq 2 is acknowledged already */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 100, 110, s.paths, THRESHOLD), 1);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 101)->flags, MRC_TX_LOST);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 102)->flags, MRC_TX_ACKED);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 104)->flags, MRC_TX_INFLIGHT);
	/* declared once: a second pass finds nothing new and the counters stay */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 100, 110, s.paths, THRESHOLD), 0);
	ck_assert_uint_eq(s.paths[2].stats.lost_reorder, 2);
	ck_assert_uint_eq(s.paths[2].stats.lost_timeout, 0);
	ck_assert_uint_eq(s.paths[2].inflight, 10 - 3 - 2);
	assert_inflight_consistent(&s, 100, 110);
	/* a threshold of 1 takes every in-flight packet sent before the highest acknowledged */
	ack(&s, 109);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 100, 110, s.paths, 1), 4);
	ck_assert_uint_eq(s.paths[2].inflight, 0);
	ck_assert_uint_eq(s.paths[2].stats.lost_reorder, 6);
}
END_TEST

/* path B acknowledging 100 later packets says nothing about path A's old one. */
START_TEST(mrc_loss_detect_reorder__other_paths_never_evidence)
{
	struct sim s;

	sim_init(&s);
	send_on(&s, 0, 0);
	for (uint32_t psn = 1; psn <= 100; psn++)
		send_on(&s, psn, 1);
	for (uint32_t psn = 1; psn <= 100; psn++)
		ack(&s, psn);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 101, s.paths, THRESHOLD), 0);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 0)->flags, MRC_TX_INFLIGHT);
	ck_assert_uint_eq(s.paths[0].inflight, 1);
	ck_assert_uint_eq(s.paths[1].inflight, 0);

	/* A's own later packets count, and only from the THRESHOLD-th on */
	send_on(&s, 101, 0);
	send_on(&s, 102, 0);
	send_on(&s, 103, 0);
	ack(&s, 101);
	ack(&s, 102);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 104, s.paths, THRESHOLD), 0);
	ack(&s, 103);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 104, s.paths, THRESHOLD), 1);
	ck_assert_uint_eq(s.paths[0].stats.lost_reorder, 1);
	ck_assert_uint_eq(s.paths[1].stats.lost_reorder, 0);
}
END_TEST

/* sprayed round robin over 3 paths: only path 0's own acknowledgement counts. */
START_TEST(mrc_loss_detect_reorder__sprayed_paths_judged_separately)
{
	struct sim s;

	sim_init(&s);
	for (uint32_t psn = 0; psn < 30; psn++)
		send_on(&s, psn, psn % 3); /* path psn % 3, path_seq psn / 3 */
	for (uint32_t psn = 0; psn < 30; psn++)
		if (psn % 3)
			ack(&s, psn);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 30, s.paths, THRESHOLD), 0);
	ck_assert_uint_eq(s.paths[0].inflight, 10);
	ack(&s, 27); /* path 0 seq 9: seqs 0..6 (PSN 0..18) are lost, 21 and 24 are not */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 30, s.paths, THRESHOLD), 7);
	for (uint32_t psn = 0; psn < 27; psn += 3)
		ck_assert_uint_eq(mrc_tx_slot(&s.ring, psn)->flags,
				  psn <= 18 ? MRC_TX_LOST : MRC_TX_INFLIGHT);
	ck_assert_uint_eq(s.paths[0].inflight, 2);
	assert_inflight_consistent(&s, 0, 30);
}
END_TEST

/* an acknowledged PSN counts for its latest transmission, on the path that carried it. */
START_TEST(mrc_loss_detect_reorder__latest_transmission_only)
{
	struct sim s;

	sim_init(&s);
	send_on(&s, 0, 0);
	ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, 0, 1, s.paths, 0), 1);
	send_on(&s, 0, 1); /* the retransmission: path 1, its path_seq 0 */
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 0)->attempts, 2);
	for (uint32_t psn = 1; psn <= 5; psn++) {
		send_on(&s, psn, 0);
		ack(&s, psn);
	}
	/* path 0 has acked 5 transmissions after its copy of PSN 0, but that copy is gone */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 6, s.paths, THRESHOLD), 0);
	for (uint32_t psn = 6; psn <= 8; psn++)
		send_on(&s, psn, 1);
	ack(&s, 8); /* path 1 seq 3 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0, 9, s.paths, THRESHOLD), 1);
	ck_assert_uint_eq(s.paths[1].stats.lost_reorder, 1);
	ck_assert_uint_eq(s.paths[0].stats.lost_reorder, 0);
	ck_assert_uint_eq(s.paths[0].stats.lost_timeout, 1);
	assert_inflight_consistent(&s, 0, 9);
}
END_TEST

/*
 * a path's transmission counter crossing 2^32 compares in serial order. Before the
 * path's first acknowledgement acked_seq_high (0) is no evidence, though seq + 3 <= 0 holds
 * in serial order for the seqs just below the wrap.
 */
START_TEST(mrc_loss_detect_reorder__path_seq_wraps)
{
	struct sim s;

	sim_init(&s);
	s.paths[3].tx_seq = 0xfffffffau;
	for (uint32_t psn = 50; psn < 60; psn++)
		send_on(&s, psn, 3); /* seqs fffffffa..ffffffff at PSN 50..55, 0..3 at 56..59 */
	ck_assert(!s.paths[3].any_acked);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 50, 60, s.paths, THRESHOLD), 0);
	ack(&s, 57); /* seq 1 = 0xfffffffe + 3 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 50, 60, s.paths, THRESHOLD), 5);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 54)->flags, MRC_TX_LOST);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 55)->flags, MRC_TX_INFLIGHT);
	ack(&s, 59); /* seq 3 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 50, 60, s.paths, THRESHOLD), 2);
	ck_assert_uint_eq(s.paths[3].inflight, 1); /* seq 2, PSN 58 */
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 58)->flags, MRC_TX_INFLIGHT);
	ck_assert_uint_eq(s.paths[3].stats.lost_reorder, 7);
}
END_TEST

/* [R-33] [una, nxt) crossing 0xffffffff: exactly the PSNs inside the range are examined. */
START_TEST(mrc_loss_detect_reorder__psn_range_wraps)
{
	struct sim s;
	const uint32_t una = 0xfffffff0u, nxt = 0x10;

	sim_init(&s);
	for (uint32_t psn = una; psn != nxt; psn++)
		send_on(&s, psn, psn & 1); /* path 0: even PSNs, seq 0..15 */
	ack(&s, 0xe); /* path 0 seq 15: seqs 0..12 are lost, PSN 0xa and 0xc are not */
	/* an inner range first: PSN 0xfffffff8..0x7 holds path 0 seqs 4..11 */
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, 0xfffffff8u, 0x8, s.paths, THRESHOLD), 8);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 0xfffffff6u)->flags, MRC_TX_INFLIGHT);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 0x8)->flags, MRC_TX_INFLIGHT);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, una, nxt, s.paths, THRESHOLD), 5);
	ck_assert_uint_eq(count_flag(&s, una, nxt, 0, MRC_TX_LOST), 13);
	ck_assert_uint_eq(count_flag(&s, una, nxt, 1, MRC_TX_LOST), 0);
	ck_assert_uint_eq(s.paths[0].inflight, 2);
	ck_assert_uint_eq(s.paths[1].inflight, 16);
	ck_assert_uint_eq(s.paths[0].stats.lost_reorder, 13);
	/* an empty range examines nothing */
	ack(&s, 0xf);
	ck_assert_uint_eq(mrc_loss_detect_reorder(&s.ring, nxt, nxt, s.paths, THRESHOLD), 0);
}
END_TEST

/* an RTO declares lost every packet outstanding on that path, and nothing else. */
START_TEST(mrc_loss_detect_timeout__only_that_paths_inflight)
{
	struct sim s;

	sim_init(&s);
	for (uint32_t psn = 1000; psn < 1030; psn++)
		send_on(&s, psn, psn % 3);
	ack(&s, 1000); /* path 1 */
	ack(&s, 1001); /* path 2 */
	ack(&s, 1002); /* path 0 */
	ack(&s, 1004); /* path 2 */
	/* path 2 (PSN = 2 mod 3): 10 sent, 2 acknowledged */
	ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, 1000, 1030, s.paths, 2), 8);
	ck_assert_uint_eq(s.paths[2].inflight, 0);
	ck_assert_uint_eq(s.paths[2].stats.lost_timeout, 8);
	ck_assert_uint_eq(s.paths[2].stats.lost_reorder, 0);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 1004)->flags, MRC_TX_ACKED);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 1007)->flags, MRC_TX_LOST);
	ck_assert_uint_eq(mrc_tx_slot(&s.ring, 1009)->flags, MRC_TX_INFLIGHT);
	ck_assert_uint_eq(s.paths[0].inflight, 9);
	ck_assert_uint_eq(s.paths[1].inflight, 9);
	ck_assert_uint_eq(count_flag(&s, 1000, 1030, -1, MRC_TX_LOST), 8);
	ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, 1000, 1030, s.paths, 2), 0);
	ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, 1000, 1030, s.paths, 3), 0);
	ck_assert_uint_eq(s.paths[2].stats.lost_timeout, 8);
	assert_inflight_consistent(&s, 1000, 1030);
}
END_TEST

/* A full ring of 256 PSNs across the wrap. */
START_TEST(mrc_loss_detect_timeout__full_ring_across_psn_wrap)
{
	struct sim s;
	const uint32_t una = 0xffffff80u, nxt = 0x80;

	sim_init(&s);
	for (uint32_t psn = una; psn != nxt; psn++)
		send_on(&s, psn, psn & 1);
	for (uint32_t i = 0; i < MRC_SACK_BITS; i += 10)
		ack(&s, una + i); /* 26 PSNs, all even: all on path 0 */
	ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, una, nxt, s.paths, 0), 128 - 26);
	ck_assert_uint_eq(s.paths[0].inflight, 0);
	ck_assert_uint_eq(s.paths[1].inflight, 128);
	ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, una, nxt, s.paths, 1), 128);
	ck_assert_uint_eq(count_flag(&s, una, nxt, -1, MRC_TX_INFLIGHT), 0);
	ck_assert_uint_eq(s.paths[1].stats.lost_timeout, 128);
}
END_TEST

static uint32_t xorshift32(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

/*
 * random traffic over 4 paths: sends, retransmissions, acknowledgements in any
 * order, reorder passes and RTOs, with PSNs and per-path counters crossing 2^32. After every
 * step each path's inflight equals its in-flight slots; every reorder pass declares exactly
 * the in-flight packets whose own path acknowledged one sent THRESHOLD or more later.
 */
START_TEST(mrc_loss__random_traffic_keeps_accounting)
{
	struct sim s;
	uint32_t rng = 0x9e3779b9u, una = 0xffffff00u, nxt = una;
	uint64_t reorder_total = 0, timeout_total = 0;

	sim_init(&s);
	for (unsigned i = 0; i < N_PATHS; i++)
		s.paths[i].tx_seq = 0xfffffc00u + 0x100 * i;
	for (unsigned step = 0; step < 40000; step++) {
		uint32_t r = xorshift32(&rng) % 16, span = nxt - una;

		if (r < 6 && span < MRC_SACK_BITS) {
			send_on(&s, nxt++, xorshift32(&rng) % N_PATHS);
		} else if (r < 8) {
			for (uint32_t psn = una; psn != nxt; psn++) {
				if (mrc_tx_slot(&s.ring, psn)->flags & MRC_TX_LOST) {
					send_on(&s, psn, xorshift32(&rng) % N_PATHS);
					break;
				}
			}
		} else if (r < 14 && span) {
			bool want[MRC_SACK_BITS] = { false };
			unsigned n_want = 0, got;

			ack(&s, una + xorshift32(&rng) % span);
			while (una != nxt && (mrc_tx_slot(&s.ring, una)->flags & MRC_TX_ACKED))
				memset(mrc_tx_slot(&s.ring, una++), 0, sizeof(struct mrc_tx_slot));
			for (uint32_t psn = una; psn != nxt; psn++) {
				struct mrc_tx_slot *t = mrc_tx_slot(&s.ring, psn);
				struct mrc_path *p = &s.paths[t->path];

				if ((t->flags & MRC_TX_INFLIGHT) && p->any_acked &&
				    mrc_seq_le(t->path_seq + THRESHOLD, p->acked_seq_high)) {
					want[psn % MRC_SACK_BITS] = true;
					n_want++;
				}
			}
			got = mrc_loss_detect_reorder(&s.ring, una, nxt, s.paths, THRESHOLD);
			ck_assert_uint_eq(got, n_want);
			reorder_total += got;
			for (uint32_t psn = una; psn != nxt; psn++) {
				struct mrc_tx_slot *t = mrc_tx_slot(&s.ring, psn);

				if (want[psn % MRC_SACK_BITS])
					ck_assert_uint_eq(t->flags, MRC_TX_LOST);
			}
		} else if (r == 15) {
			unsigned path = xorshift32(&rng) % N_PATHS;
			unsigned before = s.paths[path].inflight;

			ck_assert_uint_eq(mrc_loss_detect_timeout(&s.ring, una, nxt, s.paths, path),
					  before);
			ck_assert_uint_eq(s.paths[path].inflight, 0);
			timeout_total += before;
		}
		assert_inflight_consistent(&s, una, nxt);
	}
	/* the run crossed both wraps and exercised both detectors */
	ck_assert_uint_lt(una, 0x80000000u);
	for (unsigned i = 0; i < N_PATHS; i++)
		ck_assert_uint_lt(s.paths[i].tx_seq, 0x80000000u);
	ck_assert_uint_gt(reorder_total, 500);
	ck_assert_uint_gt(timeout_total, 500);
	for (unsigned i = 0; i < N_PATHS; i++) {
		reorder_total -= s.paths[i].stats.lost_reorder;
		timeout_total -= s.paths[i].stats.lost_timeout;
	}
	ck_assert_uint_eq(reorder_total, 0);
	ck_assert_uint_eq(timeout_total, 0);
}
END_TEST

Suite *loss_suite(void)
{
	Suite *s = suite_create("loss");
	TCase *tc = tcase_create("loss");
	TCase *model = tcase_create("model");

	tcase_add_test(tc, mrc_tx_slot__psn_modulo_256);
	tcase_add_test(tc, mrc_tx_ring_grow__keeps_outstanding_slots);
	tcase_add_test(tc, mrc_tx_leave_flight__exactly_once);
	tcase_add_test(tc, mrc_loss_detect_reorder__threshold_on_same_path);
	tcase_add_test(tc, mrc_loss_detect_reorder__other_paths_never_evidence);
	tcase_add_test(tc, mrc_loss_detect_reorder__sprayed_paths_judged_separately);
	tcase_add_test(tc, mrc_loss_detect_reorder__latest_transmission_only);
	tcase_add_test(tc, mrc_loss_detect_reorder__path_seq_wraps);
	tcase_add_test(tc, mrc_loss_detect_reorder__psn_range_wraps);
	tcase_add_test(tc, mrc_loss_detect_timeout__only_that_paths_inflight);
	tcase_add_test(tc, mrc_loss_detect_timeout__full_ring_across_psn_wrap);
	suite_add_tcase(s, tc);
	tcase_add_test(model, mrc_loss__random_traffic_keeps_accounting);
	tcase_set_timeout(model, 60);
	suite_add_tcase(s, model);
	return s;
}
