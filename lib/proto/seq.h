/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Serial-number arithmetic for the 32-bit PSN, MSN and RSN spaces: a is before b when
 * the signed 32-bit difference a - b is negative, so every comparison survives wrap-around as
 * long as the values compared lie within 2^31 of each other (the window is 256).
 */
#ifndef METAROCE_PROTO_SEQ_H
#define METAROCE_PROTO_SEQ_H

#include <stdbool.h>
#include <stdint.h>

static inline int32_t mrc_seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

static inline bool mrc_seq_lt(uint32_t a, uint32_t b)
{
	return mrc_seq_diff(a, b) < 0;
}

static inline bool mrc_seq_le(uint32_t a, uint32_t b)
{
	return mrc_seq_diff(a, b) <= 0;
}

#endif /* METAROCE_PROTO_SEQ_H */
