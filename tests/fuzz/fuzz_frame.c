/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the AF_XDP frame parser and builder (daemon/io/frame.c). The first
 * byte picks the mode:
 *
 *  - even: the rest is a received frame (in an exactly sized copy, so ASan sees any
 *    over-read), parsed into a datagram of a capacity the second byte sets; what the parser
 *    accepts must be what the frame says, read here independently: IPv4 with a right header
 *    checksum or IPv6, UDP, the source address and port, ECN CE, and the UDP payload byte for
 *    byte within the capacity;
 *  - odd: the rest describes a datagram to send (family, addresses, ports, bytes, a payload
 *    by reference and its trailer); the frame built must parse back to the same datagram, its
 *    UDP checksum right over the pseudo-header, ECT(0) and not CE.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/dgram.h"
#include "io/frame.h"
#include "proto/bytes.h"
#include "proto/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ETH 14
#define MAX_FRAME 4096

static void parse_received(const uint8_t *data, size_t size)
{
	static uint8_t out[MAX_FRAME];
	uint8_t *f = malloc(size > 1 ? size - 1 : 1);
	struct mrcd_dgram g = { .data = out, .cap = data[0] * 16u };
	uint32_t off, ulen;
	uint8_t tos;

	if (!f)
		abort();
	memcpy(f, data + 1, size - 1);
	if (!mrcd_frame_parse(f, (uint32_t)(size - 1), 3, &g)) {
		free(f);
		return;
	}
	/* accepted: the frame says all of it */
	if (load_be16(f + 12) == 0x0800) {
		uint32_t ihl = (f[ETH] & 0xf) * 4u;
		uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff };

		memcpy(mapped + 12, f + ETH + 12, 4);
		if (ihl < 20 || f[ETH + 9] != 17 ||
		    mrc_csum_fold(mrc_csum_add(0, f + ETH, ihl)) != 0xffff ||
		    g.peer.family != 4 || memcmp(g.peer.addr, mapped, 16))
			abort();
		tos = f[ETH + 1];
		off = ETH + ihl;
	} else if (load_be16(f + 12) == 0x86dd) {
		if (f[ETH + 6] != 17 || g.peer.family != 6 || memcmp(g.peer.addr, f + ETH + 8, 16))
			abort();
		tos = (uint8_t)(load_be16(f + ETH) >> 4);
		off = ETH + 40;
	} else {
		abort();
	}
	ulen = load_be16(f + off + 4);
	if (ulen < 8 || off + ulen > size - 1 || g.len != ulen - 8 || g.len > g.cap ||
	    memcmp(g.data, f + off + 8, g.len) || g.sport != load_be16(f + off) ||
	    g.peer_port != g.sport || g.plane != 3 || g.ce != ((tos & 3) == 3) || g.placed)
		abort();
	free(f);
}

static void build_and_parse(const uint8_t *data, size_t size)
{
	static uint8_t frame[MAX_FRAME + 64], bytes[MAX_FRAME], back[MAX_FRAME];
	struct mrcd_frame_origin o = { .family = data[0] & 2 ? 6 : 4, .ip_id = 7 };
	struct mrcd_dgram g = { .data = bytes, .plane = 1 };
	struct mrcd_dgram r = { .data = back, .cap = sizeof(back) };
	static const uint8_t hop[6] = { 2, 0, 0, 0, 0, 1 };
	uint32_t alen = o.family == 4 ? 4 : 16, n, off, ulen;
	size_t at = 1, rest;

	if (size < 1 + 16 + 16 + 4 + 2)
		return;
	memcpy(o.addr, data + at, 16);
	memcpy(g.peer.addr, data + at + 16, 16);
	at += 32;
	if (o.family == 4) { /* IPv4-mapped, as the daemon keeps them */
		memset(o.addr, 0, 10);
		memset(g.peer.addr, 0, 10);
		o.addr[10] = o.addr[11] = g.peer.addr[10] = g.peer.addr[11] = 0xff;
	}
	g.peer.family = o.family;
	g.sport = load_be16(data + at);
	g.peer_port = load_be16(data + at + 2);
	at += 4;
	rest = size - at - 2;
	rest = rest > 2000 ? 2000 : rest;
	/* the headers' bytes, then (when asked) a payload by reference and its trailer */
	g.len = (uint32_t)(rest * data[at] / 256);
	memcpy(bytes, data + at + 2, g.len);
	if (data[at + 1] & 1) {
		g.payload = data + at + 2 + g.len;
		g.payload_len = (uint32_t)(rest - g.len);
		g.trailer_len = data[at + 1] & 2 ? 8 : 0;
		memset(g.trailer, 0xa5, g.trailer_len);
	}
	n = mrcd_frame_build(&o, hop, &g, frame);
	if (!mrcd_frame_parse(frame, n, 1, &r))
		abort();
	off = ETH + (o.family == 4 ? 20 : 40);
	ulen = load_be16(frame + off + 4);
	if (n != off + ulen || r.len != mrcd_dgram_tx_len(&g) || memcmp(back, bytes, g.len) ||
	    (g.payload && (memcmp(back + g.len, g.payload, g.payload_len) ||
			   memcmp(back + g.len + g.payload_len, g.trailer, g.trailer_len))) ||
	    r.sport != g.sport || r.peer.family != o.family || memcmp(r.peer.addr, o.addr, 16) ||
	    r.ce || memcmp(frame, hop, 6) || memcmp(frame + 6, o.mac, 6))
		abort();
	/* the UDP checksum over the pseudo-header sums to all ones */
	{
		uint8_t pseudo[4] = { 0, 17, (uint8_t)(ulen >> 8), (uint8_t)ulen };
		const uint8_t *src = o.family == 4 ? o.addr + 12 : o.addr;
		const uint8_t *dst = o.family == 4 ? g.peer.addr + 12 : g.peer.addr;
		uint32_t acc = mrc_csum_add(mrc_csum_add(0, src, alen), dst, alen);

		acc = mrc_csum_add(mrc_csum_add(acc, pseudo, 4), frame + off, ulen);
		if (mrc_csum_fold(acc) != 0xffff || load_be16(frame + off + 2) != g.peer_port)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (data[0] & 1)
		build_and_parse(data, size);
	else
		parse_received(data + 1, size - 1);
	return 0;
}
