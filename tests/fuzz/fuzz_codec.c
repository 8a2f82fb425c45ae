/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the packet decoder (lib/proto/codec.c).
 *
 * Oracles, beyond "no crash, no sanitizer report":
 *  - a decoded packet re-encodes, and the re-encoding decodes to the same packet;
 *  - the re-encoding is byte-identical to the input except for what is ignored on receipt
 *    (reserved fields, undefined flags, meaningless psn);
 *  - the decoder never reports OK for a packet whose checksum fails.
 * Random bytes almost never carry a valid checksum, so when the first input byte is odd the
 * harness repairs the checksum of the rest first: both sides of the integrity check get
 * explored.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/checksum.h"
#include "proto/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t again[MRC_WIRE_MAX_PACKET];

static void reseal(uint8_t *p, size_t len)
{
	uint16_t c;

	p[20] = p[21] = 0;
	c = mrc_csum_compute(p, len);
	p[20] = (uint8_t)(c >> 8);
	p[21] = (uint8_t)c;
}

/* Clears what the decoder ignores, so the input can be compared with its re-encoding. */
static void clear_ignored(uint8_t *p, size_t len, uint8_t opcode)
{
	uint8_t *ext = p + sizeof(struct mrc_hdr);
	uint16_t defined = mrc_opcode_flags(opcode);

	p[2] &= (uint8_t)(defined >> 8);
	p[3] &= (uint8_t)defined;
	p[22] = p[23] = 0;
	if (!mrc_opcode_is_sequenced(opcode) && opcode != MRC_OP_DISCOVER &&
	    opcode != MRC_OP_DISCOVER_REPLY && !mrc_opcode_is_ud(opcode))
		memset(p + 8, 0, 4); /* psn */

	switch (opcode) {
	case MRC_OP_NAK:
		ext[__builtin_offsetof(struct mrc_nak_ext, reserved)] = 0;
		break;
	case MRC_OP_PROBE:
		/* Padding is opaque; the encoder copies it back only through pkt->payload. */
		break;
	case MRC_OP_PROBE_REPLY:
		memset(ext + __builtin_offsetof(struct mrc_probe_reply_ext, reserved), 0, 2);
		break;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY:
		memset(ext + __builtin_offsetof(struct mrc_discover_ext, reserved), 0, 3);
		break;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM:
		memset(ext + __builtin_offsetof(struct mrc_ud_ext, reserved), 0, 4);
		break;
	}
	reseal(p, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc_packet first, second;
	size_t len, len2, body;
	uint8_t *pkt;
	int err;

	if (size == 0)
		return 0;
	/* An exactly sized heap copy: ASan then sees any read past the datagram. */
	len = size - 1;
	pkt = malloc(len ? len : 1);
	if (!pkt)
		abort();
	memcpy(pkt, data + 1, len);
	if ((data[0] & 1) && len >= sizeof(struct mrc_hdr)) {
		/* the checksum stops where an authentication trailer begins */
		size_t trailer = mrc_auth_trailer_len(pkt[1], (uint16_t)(pkt[2] << 8 | pkt[3]) &
							       mrc_opcode_flags(pkt[1]));

		reseal(pkt, len > trailer + sizeof(struct mrc_hdr) ? len - trailer : len);
	}

	err = mrc_decode(pkt, len, &first);
	if (err < MRC_WIRE_OK || err > MRC_WIRE_ERROR_MAX || err == MRC_WIRE_E_NOSPACE)
		abort();
	if (err != MRC_WIRE_OK) {
		free(pkt);
		return 0;
	}
	/* an authentication trailer lies outside the checksum and the encoder's output: the
	 * caller appends it */
	body = len - mrc_auth_trailer_len(first.opcode, first.flags);
	if ((first.auth != NULL) != !!(first.flags & MRC_F_AUTH) ||
	    (first.auth && first.auth != pkt + body) || !mrc_csum_verify(pkt, body))
		abort();

	if (mrc_encode(&first, again, sizeof(again), &len2) != MRC_WIRE_OK || len2 != body)
		abort();
	memcpy(again + body, pkt + body, len - body);
	if (mrc_decode(again, len, &second) != MRC_WIRE_OK)
		abort();
	clear_ignored(pkt, body, first.opcode);
	if (memcmp(pkt, again, len) != 0)
		abort();
	if (second.opcode != first.opcode || second.psn != first.psn ||
	    second.payload_len != first.payload_len)
		abort();
	free(pkt);
	return 0;
}
