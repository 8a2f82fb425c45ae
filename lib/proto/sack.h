/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The receiver's 256-PSN window and the SACK vector it reports.
 *
 * The window is kept as a ring: the bit of PSN p lives at index p % 256, whatever the base.
 * Marking a PSN is then a single bit operation that never moves other bits, which is what
 * the XDP program does with an atomic test-and-set on the same layout; only the owner of the
 * window (engine or daemon) advances the base, clearing bits as it passes them. The SACK
 * vector on the wire is the same 256 bits rotated so that bit 0 is the base.
 */
#ifndef METAROCE_PROTO_SACK_H
#define METAROCE_PROTO_SACK_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/wire.h>

struct mrc_rx_window {
	uint32_t base;				/* cum_psn: lowest PSN not yet received */
	uint64_t ring[MRC_SACK_BITS / 64];	/* bit (p % 256) set: PSN p received */
};

enum mrc_rx_verdict {
	MRC_RX_NEW = 0,	     /* inside the window and not seen: place it */
	MRC_RX_DUPLICATE,    /* inside the window, already received */
	MRC_RX_BELOW,	     /* before the window: received long ago */
	MRC_RX_ABOVE,	     /* beyond the window: the sender overran it */
};

void mrc_rx_window_init(struct mrc_rx_window *w, uint32_t base);

/* What a packet with this PSN is, without changing anything. */
enum mrc_rx_verdict mrc_rx_window_classify(const struct mrc_rx_window *w, uint32_t psn);

/*
 * Records a PSN the caller has classified MRC_RX_NEW and advances the base over every
 * contiguous received PSN. Returns how far the base moved.
 */
uint32_t mrc_rx_window_mark(struct mrc_rx_window *w, uint32_t psn);

/* True when a PSN after the base has arrived while the base has not: a gap is open. */
bool mrc_rx_window_has_gap(const struct mrc_rx_window *w);

/* Writes the wire SACK vector: bit i is PSN base + i, byte i / 8, mask 1 << (i % 8). */
void mrc_rx_window_sack(const struct mrc_rx_window *w, uint8_t sack[MRC_SACK_BYTES]);

static inline bool mrc_sack_test(const uint8_t sack[MRC_SACK_BYTES], unsigned i)
{
	return (sack[i / 8] >> (i % 8)) & 1;
}

static inline void mrc_sack_set(uint8_t sack[MRC_SACK_BYTES], unsigned i)
{
	sack[i / 8] |= (uint8_t)(1u << (i % 8));
}

#endif /* METAROCE_PROTO_SACK_H */
