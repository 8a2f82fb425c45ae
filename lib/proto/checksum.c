/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "checksum.h"

#include <string.h>

uint32_t mrc_csum_add(uint32_t acc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t sum = acc;

	/* Eight bytes at a time into a 64-bit accumulator; carries are folded once at the end. */
	while (len >= 8) {
		uint32_t a, b;

		memcpy(&a, p, 4);
		memcpy(&b, p + 4, 4);
		sum += (uint64_t)a + b;
		p += 8;
		len -= 8;
	}
	while (len >= 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		sum += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		/* An odd trailing byte is padded with a zero byte on its right (RFC 1071). */
		uint8_t last[2] = { p[0], 0 };
		uint16_t w;

		memcpy(&w, last, 2);
		sum += w;
	}
	while (sum >> 32)
		sum = (sum & 0xffffffffu) + (sum >> 32);
	return (uint32_t)sum;
}

/*
 * The sums above are taken over native-endian 16-bit words; RFC 1071 shows the ones'-complement
 * sum is byte-order independent, so one byte swap at the end gives the big-endian value.
 */
static uint16_t to_network_value(uint16_t native)
{
	const uint8_t *b = (const uint8_t *)&native;

	return (uint16_t)(b[0] << 8 | b[1]);
}

uint16_t mrc_csum_fold(uint32_t acc)
{
	acc = (acc & 0xffffu) + (acc >> 16);
	acc = (acc & 0xffffu) + (acc >> 16);
	return to_network_value((uint16_t)acc);
}

uint16_t mrc_csum_compute(const void *pkt, size_t len)
{
	return (uint16_t)~mrc_csum_fold(mrc_csum_add(0, pkt, len));
}

int mrc_csum_verify(const void *pkt, size_t len)
{
	return mrc_csum_fold(mrc_csum_add(0, pkt, len)) == 0xffff;
}
