/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "sack.h"

#include <string.h>

#include "seq.h"

static bool ring_test(const struct mrc_rx_window *w, uint32_t psn)
{
	unsigned i = psn % MRC_SACK_BITS;

	return (w->ring[i / 64] >> (i % 64)) & 1;
}

static void ring_set(struct mrc_rx_window *w, uint32_t psn)
{
	unsigned i = psn % MRC_SACK_BITS;

	w->ring[i / 64] |= 1ull << (i % 64);
}

static void ring_clear(struct mrc_rx_window *w, uint32_t psn)
{
	unsigned i = psn % MRC_SACK_BITS;

	w->ring[i / 64] &= ~(1ull << (i % 64));
}

void mrc_rx_window_init(struct mrc_rx_window *w, uint32_t base)
{
	memset(w, 0, sizeof(*w));
	w->base = base;
}

enum mrc_rx_verdict mrc_rx_window_classify(const struct mrc_rx_window *w, uint32_t psn)
{
	int32_t off = mrc_seq_diff(psn, w->base);

	if (off < 0)
		return MRC_RX_BELOW;
	if (off >= MRC_SACK_BITS)
		return MRC_RX_ABOVE;
	return ring_test(w, psn) ? MRC_RX_DUPLICATE : MRC_RX_NEW;
}

uint32_t mrc_rx_window_mark(struct mrc_rx_window *w, uint32_t psn)
{
	uint32_t moved = 0;

	ring_set(w, psn);
	while (ring_test(w, w->base)) {
		ring_clear(w, w->base);
		w->base++;
		moved++;
	}
	return moved;
}

bool mrc_rx_window_has_gap(const struct mrc_rx_window *w)
{
	/* The base's own bit is always clear, so any set bit is a PSN beyond a hole. */
	for (unsigned i = 0; i < MRC_SACK_BITS / 64; i++)
		if (w->ring[i])
			return true;
	return false;
}

void mrc_rx_window_sack(const struct mrc_rx_window *w, uint8_t sack[MRC_SACK_BYTES])
{
	memset(sack, 0, MRC_SACK_BYTES);
	for (unsigned word = 0; word < MRC_SACK_BITS / 64; word++) {
		uint64_t bits = w->ring[word];

		while (bits) {
			unsigned ring_index = word * 64 + (unsigned)__builtin_ctzll(bits);
			unsigned i = (ring_index - w->base) % MRC_SACK_BITS;

			mrc_sack_set(sack, i);
			bits &= bits - 1;
		}
	}
}
