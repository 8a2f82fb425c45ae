/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The codec tests' fixtures (codec_fixtures.c): a valid packet of every opcode in three
 * variants of edge values, the buffer they are encoded into, field-by-field comparison, and
 * the byte helpers the malformed-input tests edit packets with.
 */
#ifndef METAROCE_TESTS_UNIT_CODEC_FIXTURES_H
#define METAROCE_TESTS_UNIT_CODEC_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "proto/codec.h"

#define CODEC_BUF_CAP (MRC_WIRE_MAX_PACKET + 64)
#define CODEC_N_OPCODES 17

extern uint8_t codec_buf[CODEC_BUF_CAP];	  /* where codec_encode_ok encodes */
extern uint8_t codec_payload[MRC_WIRE_MAX_PACKET]; /* the samples' payload bytes */
extern const uint8_t codec_opcodes[CODEC_N_OPCODES]; /* every defined opcode */

/* Recomputes the checksum after a test edits bytes, so only the intended fault remains. */
void codec_reseal(uint8_t *p, size_t len);
void codec_put_be16(uint8_t *p, uint16_t v);
void codec_put_be32(uint8_t *p, uint32_t v);
void codec_set_v4_mapped(uint8_t addr[16], uint32_t v4);
/*
 * A valid packet of the opcode. Variant 0 holds the smallest values the rules allow,
 * variant 1 the largest, variant 2 values that cross byte boundaries and wrap points.
 */
struct mrc_packet codec_sample(uint8_t op, int variant);
/* Encodes p into codec_buf, failing the test if the codec refuses it; its length. */
size_t codec_encode_ok(const struct mrc_packet *p);
/* Every field of the opcode is the same in a and b. */
void codec_assert_same(const struct mrc_packet *a, const struct mrc_packet *b);

#endif
