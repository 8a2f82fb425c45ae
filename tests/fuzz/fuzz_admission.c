/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the daemon's receive admission (daemon/core: mrcd_core_rx, then
 * discovery, the QP lookup and the engine): two daemon cores that authenticate under one
 * cluster key (sealing every packet or not, as the first byte says) run a transfer in
 * virtual time (tests/unit/core_world.c), and the input's
 * datagrams reach them on the way, from the peer's own address, a stranger's or their own,
 * as raw bytes or as a real packet of the transfer with bytes changed (its checksum made
 * right again or not). Whatever arrives, the transfer completes with every byte where it
 * belongs and every completion a success: an injected datagram may be refused, never
 * believed (SPEC 14.6). A failed check exits the process, which libFuzzer reports.
 *
 * Input: a byte choosing the world's seed and auth mode, then records of
 *   gap (1 byte, x 50 µs), how (1 byte: bit 0 host, bit 1 plane, bits 2-3 source: the
 *   peer's plane address, a stranger's, the host's own; bit 4 reseal the checksum; bit 5 a
 *   real packet in flight with the bytes XORed in, its payload left alone in header mode,
 *   else the bytes alone), length (1 byte), bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/core_world.h"
#include "proto/bytes.h"
#include "proto/checksum.h"
#include "proto/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inject(struct world *w, uint8_t how, const uint8_t *bytes, size_t len)
{
	static uint8_t buf[MRC_WIRE_MAX_PACKET];
	unsigned k = how & 1, plane = how >> 1 & 1, source = how >> 2 & 3;
	struct host *h = &w->h[k];
	struct mrcd_dgram g = { .data = buf, .plane = (uint8_t)plane, .sport = 49152,
				.peer_port = h->cfg.port };
	size_t n = len;

	if (!h->up)
		return;
	if (how & 0x20 && w->n_heap) { /* the next real packet, changed */
		const struct packet *p = w->heap[0];
		size_t hdr = n = p->g.len, tail = n;

		memcpy(buf, p->g.data, n);
		/* header mode tags the headers only: its payload bytes, changed with the checksum
		 * kept right, are what SPEC 14.1 leaves an on-path attacker, so leave them be */
		if (w->auth == MRC_AUTH_HEADER && n >= 24) {
			uint16_t flags = load_be16(buf + 2) & mrc_opcode_flags(buf[1]);

			hdr = mrc_header_len(buf[1]);
			tail = n - mrc_auth_trailer_len(buf[1], flags);
		}
		for (size_t i = 0; i < len && i < n; i++)
			if (i < hdr || i >= tail)
				buf[i] ^= bytes[i];
		g.sport = p->g.sport;
	} else {
		memcpy(buf, bytes, len);
	}
	if (how & 0x10 && n >= 24) { /* the checksum right again, the trailer outside it */
		size_t trailer = mrc_auth_trailer_len(buf[1], load_be16(buf + 2) &
							       mrc_opcode_flags(buf[1]));
		size_t body = n > trailer + 24 ? n - trailer : n;

		buf[20] = buf[21] = 0;
		store_be16(buf + 20, mrc_csum_compute(buf, body));
	}
	g.len = g.cap = (uint32_t)n;
	g.peer = source == 0 ? w->h[!k].cfg.planes[plane].addr
		 : source == 2 ? h->cfg.planes[plane].addr
			       : (struct mrcd_addr){ .family = MRC_AF_INET,
						     .addr = { [10] = 0xff, [11] = 0xff, 198,
							       (uint8_t)(18 + plane), 0, 9 } };
	/* whichever worker's queue it reaches, the one it is for takes it */
	if (!mrcd_core_rx(&h->core, h->core.n_shards - 1, &g, w->now))
		mrcd_core_rx(&h->core, mrcd_core_shard_of(&h->core, &g), &g, w->now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct world w;
	size_t at = 1;

	if (size < 1)
		return 0;
	/* one worker or two (workers = 2): the same admission, whichever runs the QP */
	world_init_shards(&w, 1 + data[0] % 4, data[0] & 4 ? MRC_AUTH_FULL : MRC_AUTH_HEADER,
			  1 + (data[0] >> 3 & 1));
	w.expect_success = true;
	world_post_everything(&w);
	while (at + 3 <= size) {
		uint8_t gap = data[at], how = data[at + 1];
		size_t len = data[at + 2];

		at += 3;
		len = len < size - at ? len : size - at;
		world_run(&w, gap * 50 * US, NULL, 0, NULL);
		inject(&w, how, data + at, len);
		at += len;
	}
	world_run(&w, 60 * SEC, world_all_sent_completed, 0, NULL);
	if (!world_all_sent_completed(&w))
		abort();
	world_run(&w, SEC, NULL, 0, NULL);
	for (unsigned q = 0; q < QPS; q++) {
		unsigned expect = 0;

		for (unsigned i = 0; i < WRS; i++)
			expect += world_uses_rq(w.plan[q][i].opcode);
		if (w.h[0].cl.qp[q].failed || w.h[1].cl.qp[q].failed ||
		    w.h[1].cl.qp[q].received != expect)
			abort();
	}
	world_check_bytes(&w);
	world_free(&w);
	return 0;
}
