/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The XDP fast path (bpf/metaroce_xdp.bpf.c) in this kernel, through BPF_PROG_TEST_RUN, on
 * frames whose MetaRoCE part the real encoder (lib/proto/codec.c) wrote:
 *
 *  - declarative fixtures, one per path through the program: description, packet, expected
 *    verdict and outcome counter, SACK bit, bytes in the region, event;
 *  - a differential test: random PSN sequences fed to the program (with this test doing the
 *    daemon's part: moving the window base on each placement) and to the engine's receive
 *    window (lib/proto/sack.c) must agree on every verdict and end in the same SACK state;
 *  - the wakeups: while the daemon says it sleeps, the program wakes it for exactly the
 *    packets the engine acknowledges at once, and every 8th otherwise; never while it is
 *    awake (it reads the ring every turn then);
 *  - mutations: valid WRITEs with random bytes changed (checksum and tag made right again
 *    half the time) are placed only if the engine would place them, and never dropped if it
 *    would;
 *  - deregistration: a cleared slot stops placement, and its delete waits for runs in flight.
 *
 *	test_xdp METAROCE_XDP_BPF_OBJECT
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <metaroce/xdp.h>
#include "proto/auth.h"
#include "proto/bytes.h"
#include "proto/checksum.h"
#include "proto/codec.h"
#include "proto/sack.h"
#include "xdp_env.h"
#include "check.h"

#define QPN		0x1234
#define MR_SLOT		5
#define MR_KEY		((MR_SLOT << MRC_XDP_KEY_SLOT_SHIFT) | 0x2a5a5)
#define SINK_SLOT	6
#define SINK_KEY	((SINK_SLOT << MRC_XDP_KEY_SLOT_SHIFT) | 0x11111)
#define MR_PAGES	XDP_ENV_PAGES
/* the region starts 100 bytes into its first page, as heap memory does */
#define MR_ADDR		0x7f0000001064ull
#define MR_LEN		(MR_PAGES * 4096 - 100)
/* where each region's byte 0 sits in its page map: the page offset of its address, as a
 * region alone in its pages has it, or 0, as for a region whose pages were shared before */
#define MR_OFFSET	(MR_ADDR % 4096)
#define SINK_OFFSET	0
#define BASE_PSN	1000

static struct xdp_env env;
static struct ring_buffer *events;
static uint8_t *mr_mem, *sink_mem;
static struct mrc_xdp_event last_event;
static unsigned n_events;

static int on_event(void *ctx, void *data, size_t len)
{
	(void)ctx;
	if (len >= sizeof(last_event))
		memcpy(&last_event, data, sizeof(last_event));
	n_events++;
	return 0;
}

/* --- fixtures ------------------------------------------------------------------------------ */

enum mutation { NONE, CORRUPT_PAYLOAD, TRUNCATE, SEND_TWICE, BAD_TAG, OTHER_DEST };
/* the key an authenticated fixture's peer tags with, and another */
static const struct mrc_auth_key key_a = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
static const struct mrc_auth_key key_b = { 0x1122334455667788ull, 0x99aabbccddeeff00ull };
/* a frame_spec from another source address than the QP's peer */
#define STRANGER 99

struct fixture {
	const char *what;
	struct frame_spec spec;
	uint32_t base;		/* the QP's window base */
	uint32_t qp_flags;
	enum mutation mutation;
	int verdict;
	enum mrc_xdp_outcome outcome;
	bool placed;		/* bit set, bytes in the region, a PLACED event */
	uint32_t event;		/* event kind expected (0: none) */
	const struct mrc_auth_key *qp_auth; /* the QP authenticates under it (SPEC 14.6) */
	const struct mrc_xdp_read *read; /* the daemon told the program of this READ, sent as
					  * msn 0 (the msn of every frame here) */
};

/* READs sent, as the daemon writes them into the QP's reads[] */
static const struct mrc_xdp_read sink_read = { 0, 0, SINK_KEY, 700, MR_ADDR + 10 };
static const struct mrc_xdp_read long_read = { 0, 0, SINK_KEY, 1400, MR_ADDR + 10 };
static const struct mrc_xdp_read other_msn_read = { 0, 16, SINK_KEY, 700, MR_ADDR + 10 };
static const struct mrc_xdp_read write_region_read = { 0, 0, MR_KEY, 700, MR_ADDR + 10 };
static const struct mrc_xdp_read rewritten_read = { 7, 0, SINK_KEY, 700, MR_ADDR + 10 };
#define RR(psn_, key_, off_, len_, auth_) \
	{ MRC_OP_READ_RESP, QPN, psn_, key_, MR_ADDR + (off_), len_, false, 0, 0, 0, false, auth_ }
#define READ_PLACED MRC_XDP_QP_PLACE | MRC_XDP_QP_PLACE_READ

#define W(psn_, len_, off_) \
	{ MRC_OP_WRITE, QPN, psn_, MR_KEY, MR_ADDR + (off_), len_, false, 0, 0, 0, false, NULL }
/* the same tagged under key_ */
#define WA(psn_, len_, off_, key_) \
	{ MRC_OP_WRITE, QPN, psn_, MR_KEY, MR_ADDR + (off_), len_, false, 0, 0, 0, false, key_ }
static const struct fixture fixtures[] = {
	{ "in-window WRITE: placed, bit set, event", W(BASE_PSN + 3, 1000, 0), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "the same packet twice: the second is a duplicate", W(BASE_PSN, 64, 0), BASE_PSN,
	  MRC_XDP_QP_PLACE, SEND_TWICE, XDP_DROP, MRC_XDP_DUPLICATE, true, MRC_XDP_EV_DUPLICATE,
	  NULL, NULL },
	{ "below the window: dropped, the daemon told to acknowledge again",
	  W(BASE_PSN - 1, 64, 0), BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_DROP,
	  MRC_XDP_BELOW_WINDOW, false, MRC_XDP_EV_DUPLICATE, NULL, NULL },
	{ "at base + 256: above the window, dropped", W(BASE_PSN + 256, 64, 0), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_ABOVE_WINDOW, false, 0, NULL, NULL },
	{ "above the window and CE-marked: to the daemon, whose ce_count counts it [R-237]",
	  { MRC_OP_WRITE, QPN, BASE_PSN + 256, MR_KEY, MR_ADDR, 64, false, 0, 0, 0, true, NULL },
	  BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS, MRC_XDP_TO_DAEMON, false, 0, NULL, NULL },
	{ "at base + 255: the window's last PSN, placed", W(BASE_PSN + 255, 64, 0), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "PSN wrap-around: base 2^32 - 16, PSN 5", W(5, 200, 0), 0xfffffff0u, MRC_XDP_QP_PLACE,
	  NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "PSN wrap-around: base 16, PSN 2^32 - 1 is below", W(0xffffffffu, 64, 0), 16,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_BELOW_WINDOW, false, MRC_XDP_EV_DUPLICATE,
	  NULL, NULL },
	{ "a corrupted payload byte: dropped, never placed or SACKed", W(BASE_PSN + 1, 1000, 0),
	  BASE_PSN, MRC_XDP_QP_PLACE, CORRUPT_PAYLOAD, XDP_DROP, MRC_XDP_BAD_CHECKSUM, false, 0,
	  NULL, NULL },
	{ "a frame cut short: dropped", W(BASE_PSN + 1, 1000, 0), BASE_PSN, MRC_XDP_QP_PLACE,
	  TRUNCATE, XDP_DROP, MRC_XDP_TRUNCATED, false, 0, NULL, NULL },
	{ "from an address that is not the QP's peer: to the daemon", { MRC_OP_WRITE, QPN,
	  BASE_PSN, MR_KEY, MR_ADDR, 64, false, 0, STRANGER, 0, false, NULL }, BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE,
	  XDP_PASS, MRC_XDP_WRONG_PEER, false, 0, NULL, NULL },
	{ "an unknown QP: to the daemon", { MRC_OP_WRITE, 0x999, BASE_PSN, MR_KEY, MR_ADDR, 64,
	  false, 0, 0, 0, false, NULL }, BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS, MRC_XDP_UNKNOWN_QP,
	  false, 0, NULL, NULL },
	{ "a wrong key (random bits): to the daemon, which NAKs", { MRC_OP_WRITE, QPN, BASE_PSN,
	  MR_KEY ^ 1, MR_ADDR, 64, false, 0, 0, 0, false, NULL }, BASE_PSN, MRC_XDP_QP_PLACE, NONE,
	  XDP_PASS,
	  MRC_XDP_BAD_KEY, false, 0, NULL, NULL },
	{ "a key of no region: to the daemon", { MRC_OP_WRITE, QPN, BASE_PSN,
	  (9u << MRC_XDP_KEY_SLOT_SHIFT) | 1, MR_ADDR, 64, false, 0, 0, 0, false, NULL }, BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_PASS, MRC_XDP_BAD_KEY, false, 0, NULL, NULL },
	{ "one byte past the region's end: to the daemon", W(BASE_PSN, 64, MR_LEN - 63),
	  BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS, MRC_XDP_OUT_OF_BOUNDS, false, 0, NULL, NULL },
	{ "before the region's start: to the daemon", { MRC_OP_WRITE, QPN, BASE_PSN, MR_KEY,
	  MR_ADDR - 1, 64, false, 0, 0, 0, false, NULL }, BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS,
	  MRC_XDP_OUT_OF_BOUNDS, false, 0, NULL, NULL },
	{ "the region's last byte exactly: placed", W(BASE_PSN, 64, MR_LEN - 64), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "across a page boundary, odd length", W(BASE_PSN + 7, 4095, 3000), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "a jumbo payload over three pages", W(BASE_PSN + 8, 8000, 2000), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "one byte", W(BASE_PSN + 9, 1, 777), BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_DROP,
	  MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, NULL, NULL },
	{ "IPv6: placed", { MRC_OP_WRITE, QPN, BASE_PSN + 10, MR_KEY, MR_ADDR + 50, 1500, true, 0,
	  0, 0, false, NULL },
	  BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED,
	  NULL, NULL },
	{ "READ response within its READ's sink: placed", RR(BASE_PSN + 11, SINK_KEY, 10, 700,
	  NULL), BASE_PSN, READ_PLACED, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED,
	  NULL, &sink_read },
	{ "READ response while the QP places WRITEs only: to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 10, 700, NULL), BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS,
	  MRC_XDP_TO_DAEMON, false, 0, NULL, &sink_read },
	/* a READ response answers a READ the daemon said it sent, within its sink */
	{ "READ response answering no READ (or one that scatters): to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_NO_READ, false, 0, NULL, NULL },
	{ "READ response of another msn in the READ's slot: to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_NO_READ, false, 0, NULL, &other_msn_read },
	{ "READ response of another length than its READ (within its sink): to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_NO_READ, false, 0, NULL, &long_read },
	{ "READ response a byte off its sink's address plus msg_off: to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 11, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_NO_READ, false, 0, NULL, &sink_read },
	{ "READ response under another key than its READ's sink: to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_NO_READ, false, 0, NULL, &write_region_read },
	{ "READ response while its READ's entry is being rewritten: to the daemon",
	  RR(BASE_PSN + 11, SINK_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_NO_READ, false, 0, NULL, &rewritten_read },
	{ "a duplicate READ response of a finished READ: a duplicate, acknowledged again",
	  RR(BASE_PSN - 1, SINK_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_DROP,
	  MRC_XDP_BELOW_WINDOW, false, MRC_XDP_EV_DUPLICATE, NULL, NULL },
	{ "a WRITE while the QP places READ responses only: to the daemon", W(BASE_PSN, 64, 0),
	  BASE_PSN, MRC_XDP_QP_PLACE_READ, NONE, XDP_PASS, MRC_XDP_TO_DAEMON, false, 0,
	  NULL, NULL },
	{ "READ response into a region without local write: to the daemon",
	  RR(BASE_PSN + 11, MR_KEY, 10, 700, NULL), BASE_PSN, READ_PLACED, NONE, XDP_PASS,
	  MRC_XDP_BAD_KEY, false, 0, NULL, &write_region_read },
	{ "WRITE into a sink region (no remote write): to the daemon", { MRC_OP_WRITE, QPN,
	  BASE_PSN, SINK_KEY, MR_ADDR, 64, false, 0, 0, 0, false, NULL }, BASE_PSN, MRC_XDP_QP_PLACE, NONE,
	  XDP_PASS, MRC_XDP_BAD_KEY, false, 0, NULL, NULL },
	{ "SEND: to the daemon", { MRC_OP_SEND, QPN, BASE_PSN, 0, 0, 64, false, 0, 0, 0, false, NULL },
	  BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_PASS, MRC_XDP_TO_DAEMON, false, 0, NULL, NULL },
	{ "a QP not placing in XDP: to the daemon", W(BASE_PSN, 64, 0), BASE_PSN, 0, NONE,
	  XDP_PASS, MRC_XDP_TO_DAEMON, false, 0, NULL, NULL },
	{ "to another address of the host: the kernel's, where its firewall applies",
	  W(BASE_PSN, 64, 0), BASE_PSN, MRC_XDP_QP_PLACE, OTHER_DEST, XDP_PASS, MRC_XDP_NOT_OURS,
	  false, 0, NULL, NULL },
	{ "UDP to another port: not ours, untouched", { MRC_OP_WRITE, QPN, BASE_PSN, MR_KEY,
	  MR_ADDR, 64, false, 4791, 0, 0, false, NULL }, BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS,
	  MRC_XDP_NOT_OURS, false, 0, NULL, NULL },
	/* authentication: the tag is checked before anything is believed */
	{ "authenticated WRITE with its tag: placed", WA(BASE_PSN + 2, 1000, 0, &key_a), BASE_PSN,
	  MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED, &key_a, NULL },
	{ "authenticated READ response with its tag: placed", RR(BASE_PSN + 12, SINK_KEY, 10, 700,
	  &key_a), BASE_PSN, READ_PLACED, NONE, XDP_DROP, MRC_XDP_PLACED, true, MRC_XDP_EV_PLACED,
	  &key_a, &sink_read },
	{ "authenticated WRITE, one tag bit wrong: dropped", WA(BASE_PSN + 2, 1000, 0, &key_a),
	  BASE_PSN, MRC_XDP_QP_PLACE, BAD_TAG, XDP_DROP, MRC_XDP_BAD_TAG, false, 0, &key_a, NULL },
	{ "authenticated WRITE under another key: dropped", WA(BASE_PSN + 2, 1000, 0, &key_b),
	  BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_BAD_TAG, false, 0, &key_a, NULL },
	{ "an authenticated QP's WRITE without a tag: dropped", W(BASE_PSN + 2, 1000, 0),
	  BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_DROP, MRC_XDP_BAD_TAG, false, 0, &key_a, NULL },
	{ "a forged duplicate below the window: dropped, no acknowledgement asked",
	  WA(BASE_PSN - 1, 64, 0, &key_b), BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_DROP,
	  MRC_XDP_BAD_TAG, false, 0, &key_a, NULL },
	{ "the right tag over a corrupted payload: dropped by the checksum",
	  WA(BASE_PSN + 2, 1000, 0, &key_a), BASE_PSN, MRC_XDP_QP_PLACE, CORRUPT_PAYLOAD, XDP_DROP,
	  MRC_XDP_BAD_CHECKSUM, false, 0, &key_a, NULL },
	{ "a tagged WRITE to a QP that does not authenticate: to the daemon",
	  WA(BASE_PSN + 2, 1000, 0, &key_a), BASE_PSN, MRC_XDP_QP_PLACE, NONE, XDP_PASS,
	  MRC_XDP_TO_DAEMON, false, 0, NULL, NULL },
};

static void run_fixture(const struct fixture *f)
{
	const struct frame_spec *s = &f->spec;
	struct frame fr = frame_build(s);
	unsigned failed_before = failures, events_before;
	uint64_t before = xdp_env_outcome(&env, f->outcome);
	uint32_t len = fr.len, idx = s->psn % MRC_SACK_BITS;
	bool sink = s->rkey == SINK_KEY;
	uint8_t *mem = sink ? sink_mem : mr_mem;
	uint64_t pos = (sink ? SINK_OFFSET : MR_OFFSET) + (s->raddr - MR_ADDR);
	struct frame_spec usual = *s;
	uint8_t peer[16];
	struct mrc_xdp_qp q;
	int verdict;

	memset(mr_mem, 0, MR_PAGES * MRC_XDP_PAGE);
	memset(sink_mem, 0, MR_PAGES * MRC_XDP_PAGE);
	usual.src_last = 0;	/* the QP's peer is the usual source; a fixture may differ */
	frame_source(&usual, peer);
	xdp_env_set_qp(&env, QPN, f->base, f->qp_flags, peer);
	if (f->qp_auth)
		xdp_env_set_qp_auth(&env, QPN, f->qp_auth);
	if (f->read)
		xdp_env_qp(&env, QPN)->reads[0] = *f->read;
	if (f->mutation == CORRUPT_PAYLOAD) /* a payload byte, before any trailer */
		fr.b[fr.len - (s->auth ? MRC_AUTH_TAG_LEN : 0) - 10] ^= 0x40;
	if (f->mutation == BAD_TAG)
		fr.b[fr.len - 3] ^= 0x10;
	if (f->mutation == OTHER_DEST) /* the IPv4 destination's last byte: .2 becomes .3 */
		fr.b[sizeof(struct ethhdr) + offsetof(struct iphdr, daddr) + 3] ^= 1;
	xdp_env_set_plane_addr(&env, s->ipv6);
	if (f->mutation == TRUNCATE)
		len = fr.len - 100;
	if (f->mutation == SEND_TWICE)
		check(xdp_env_run(&env, &fr, len, 1, NULL) == XDP_DROP, "%s: the first copy was not placed", f->what);
	ring_buffer__consume(events);
	events_before = n_events;
	verdict = xdp_env_run(&env, &fr, len, 1, NULL);
	ring_buffer__consume(events);
	q = *xdp_env_qp(&env, QPN);
	check(verdict == f->verdict, "%s: verdict %d, %d expected", f->what, verdict, f->verdict);
	check(xdp_env_outcome(&env, f->outcome) == before + 1, "%s: outcome %d not counted once", f->what,
	      f->outcome);
	check(!!(q.ring[idx / 64] & (1ull << (idx % 64))) == f->placed, "%s: SACK bit %s",
	      f->what, f->placed ? "not set" : "set");
	for (unsigned w = 0; w < 4; w++)
		check((q.ring[w] & ~(w == idx / 64 ? 1ull << (idx % 64) : 0)) == 0,
		      "%s: another SACK bit set in word %u", f->what, w);
	if (f->placed) {
		uint32_t bad = 0;

		for (uint32_t i = 0; i < s->payload; i++)
			bad += mem[pos + i] != frame_payload_byte(s->psn, i);
		check(!bad, "%s: %u of %u bytes wrong in the region", f->what, bad, s->payload);
		check((pos == 0 || mem[pos - 1] == 0) &&
		      (pos + s->payload >= MR_PAGES * MRC_XDP_PAGE || mem[pos + s->payload] == 0),
		      "%s: a byte beside the payload was written", f->what);
	} else {
		uint32_t written = 0;

		for (uint32_t i = 0; i < MR_PAGES * MRC_XDP_PAGE; i++)
			written += mr_mem[i] != 0 || sink_mem[i] != 0;
		check(!written, "%s: %u bytes written though nothing was placed", f->what, written);
	}
	check(n_events - events_before == (f->event ? 1u : 0u), "%s: %u events", f->what,
	      n_events - events_before);
	if (f->event && n_events > events_before) {
		check(last_event.kind == f->event, "%s: event kind %u", f->what, last_event.kind);
		check(!memcmp(last_event.hdr, fr.b + fr.mrc, MRC_XDP_EVENT_HDR),
		      "%s: the event's header is not the packet's", f->what);
		check(last_event.sport == 50000 && last_event.ifindex == 1,
		      "%s: event sport %u ifindex %u", f->what, last_event.sport,
		      last_event.ifindex);
	}
	xdp_env_set_plane_addr(&env, false);
	if (failures == failed_before)
		printf("ok   %s\n", f->what);
}

/* --- the differential test ------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static void differential(unsigned sequences, unsigned packets)
{
	unsigned verdict_mismatch = 0, state_mismatch = 0, placed = 0;

	for (unsigned s = 0; s < sequences; s++) {
		/* near the wrap for some sequences */
		uint32_t base = s % 3 ? next_random() : 0xffffff00u + (next_random() & 0xff);
		struct mrc_rx_window engine, daemon;
		struct mrc_xdp_qp *q = xdp_env_qp(&env, QPN);
		struct frame_spec usual = { .opcode = MRC_OP_WRITE };
		uint8_t peer[16];

		mrc_rx_window_init(&engine, base);
		mrc_rx_window_init(&daemon, base);
		frame_source(&usual, peer);
		xdp_env_set_qp(&env, QPN, base, MRC_XDP_QP_PLACE, peer);
		for (unsigned i = 0; i < packets; i++) {
			/* mostly ahead of the window, some retransmissions and overruns */
			uint32_t psn = engine.base + (next_random() % 320) - 32;
			struct frame_spec sp = { MRC_OP_WRITE, QPN, psn, MR_KEY,
						 MR_ADDR + (next_random() % 8000), 32, false, 0, 0, 0, false, NULL };
			struct frame fr = frame_build(&sp);
			enum mrc_rx_verdict want = mrc_rx_window_classify(&engine, psn);
			uint64_t was[MRC_XDP_OUTCOMES];
			int got = -1;

			for (int o = 0; o < MRC_XDP_OUTCOMES; o++)
				was[o] = xdp_env_outcome(&env, (enum mrc_xdp_outcome)o);
			xdp_env_run(&env, &fr, fr.len, 1, NULL);
			ring_buffer__consume(events);
			if (xdp_env_outcome(&env, MRC_XDP_PLACED) > was[MRC_XDP_PLACED])
				got = MRC_RX_NEW;
			else if (xdp_env_outcome(&env, MRC_XDP_DUPLICATE) > was[MRC_XDP_DUPLICATE])
				got = MRC_RX_DUPLICATE;
			else if (xdp_env_outcome(&env, MRC_XDP_BELOW_WINDOW) > was[MRC_XDP_BELOW_WINDOW])
				got = MRC_RX_BELOW;
			else if (xdp_env_outcome(&env, MRC_XDP_ABOVE_WINDOW) > was[MRC_XDP_ABOVE_WINDOW])
				got = MRC_RX_ABOVE;
			if (got != (int)want && verdict_mismatch++ < 5)
				printf("FAIL: base %u PSN %u: XDP says %d, the engine %d\n",
				       engine.base, psn, got, want);
			if (want == MRC_RX_NEW)
				mrc_rx_window_mark(&engine, psn);
			if (got != MRC_RX_NEW)
				continue;
			placed++;
			/* the daemon's part, in place through its mapping: the event moves its
			 * window; then the map's base, and only then the bits it passed cleared */
			uint32_t old = daemon.base;

			mrc_rx_window_mark(&daemon, psn);
			__atomic_store_n(&q->base, daemon.base, __ATOMIC_RELEASE);
			for (uint32_t p = old; p != daemon.base; p++)
				__atomic_fetch_and(&q->ring[(p % MRC_SACK_BITS) / 64],
						   ~(1ull << (p % 64)), __ATOMIC_RELEASE);
		}
		if ((q->base != engine.base || memcmp(q->ring, engine.ring, sizeof(q->ring))) &&
		    state_mismatch++ < 5)
			printf("FAIL: sequence %u ends with base %u in XDP, %u in the engine\n", s,
			       q->base, engine.base);
	}
	check(!verdict_mismatch, "differential: %u verdicts differ", verdict_mismatch);
	check(!state_mismatch, "differential: %u final SACK states differ", state_mismatch);
	printf("ok   differential: %u sequences of %u packets (%u placed), same verdicts and "
	       "SACK state as the engine\n", sequences, packets, placed);
}

/* --- mutated frames against the engine's decoder ------------------------------------------ */

/* Whether the engine would place this MetaRoCE packet, received for QPN (authenticating under
 * rx when given) with the window at BASE_PSN: its decoder, its tag check, its key and bounds. */
static bool engine_would_place(const uint8_t *mrc, size_t len, const struct mrc_auth_key *rx)
{
	struct mrc_packet pkt;
	const struct mrc_data *d = &pkt.u.data;

	if (mrc_decode(mrc, len, &pkt) != MRC_WIRE_OK || pkt.opcode != MRC_OP_WRITE ||
	    pkt.dst_qpn != QPN || !pkt.payload_len)
		return false;
	if (rx ? !(pkt.flags & MRC_F_AUTH) || !mrc_auth_packet_ok(rx, &pkt)
	       : !!(pkt.flags & MRC_F_AUTH))
		return false;
	return pkt.psn - BASE_PSN < MRC_SACK_BITS && d->rkey == MR_KEY && d->raddr >= MR_ADDR &&
	       pkt.payload_len <= MR_LEN && d->raddr - MR_ADDR <= (uint64_t)MR_LEN - pkt.payload_len;
}

/*
 * Valid WRITEs, plain and authenticated, with bytes of their MetaRoCE part changed at random,
 * then (half the time) the checksum and, authenticated, the tag made right again, as a peer
 * holding the key may: the program places only what the engine would place, byte for byte,
 * and whatever the engine would place it places or hands to the daemon, never drops.
 */
static void mutations(unsigned frames)
{
	unsigned placed = 0, unsound = 0, lost = 0, wrong_bytes = 0, engine_ok = 0;

	for (unsigned i = 0; i < frames; i++) {
		const struct mrc_auth_key *key = i % 2 ? &key_a : NULL;
		struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN + next_random() % 300 - 20,
					 MR_KEY, MR_ADDR + next_random() % 9000,
					 1 + next_random() % 1400, false, 0, 0, 0, false, key };
		struct frame fr;
		uint8_t peer[16], *mrc;
		uint32_t body, pos;
		uint64_t was;
		bool want, got;
		int verdict;

		frame_source(&sp, peer);
		xdp_env_set_qp(&env, QPN, BASE_PSN, MRC_XDP_QP_PLACE, peer);
		if (key)
			xdp_env_set_qp_auth(&env, QPN, key);
		fr = frame_build(&sp);
		mrc = fr.b + fr.mrc;
		body = fr.mrc_len - (key ? MRC_AUTH_TAG_LEN : 0);
		/* one to three bytes, mostly in the 56 header bytes, sometimes anywhere */
		for (unsigned m = 1 + next_random() % 3; m; m--) {
			uint32_t at = next_random() % 4 ? next_random() % 56 : next_random() % fr.mrc_len;

			mrc[at] = next_random() % 2 ? (uint8_t)next_random()
						    : mrc[at] ^ (uint8_t)(1u << (next_random() % 8));
		}
		if (next_random() % 2) {
			mrc[20] = mrc[21] = 0;
			store_be16(mrc + 20, mrc_csum_compute(mrc, body));
			if (key)
				mrc_auth_put_tag(key, mrc, mrc_header_len(MRC_OP_WRITE), mrc + body);
		}
		memset(mr_mem, 0, MR_PAGES * MRC_XDP_PAGE);
		want = engine_would_place(mrc, fr.mrc_len, key);
		engine_ok += want;
		was = xdp_env_outcome(&env, MRC_XDP_PLACED);
		verdict = xdp_env_run(&env, &fr, fr.len, 1, NULL);
		ring_buffer__consume(events);
		got = xdp_env_outcome(&env, MRC_XDP_PLACED) > was;
		placed += got;
		if (got && !want && unsound++ < 5) {
			struct mrc_packet pk;

			printf("FAIL: mutation %u placed a packet the engine refuses (decoder: %s)\n",
			       i, mrc_wire_error_name(mrc_decode(mrc, fr.mrc_len, &pk)));
		}
		if (want && !got && verdict != XDP_PASS && lost++ < 5)
			printf("FAIL: mutation %u: a packet the engine places dropped (verdict %d)\n",
			       i, verdict);
		pos = MR_OFFSET + (uint32_t)(load_be64(mrc + 48) - MR_ADDR);
		if (got && want &&
		    memcmp(mr_mem + pos, mrc + 56, load_be16(mrc + 18)) && wrong_bytes++ < 5)
			printf("FAIL: mutation %u placed other bytes than its payload\n", i);
	}
	check(!unsound, "mutations: %u placed what the engine refuses", unsound);
	check(!lost, "mutations: %u the engine places dropped", lost);
	check(!wrong_bytes, "mutations: %u placed wrong bytes", wrong_bytes);
	check(placed > frames / 50, "mutations: only %u of %u placed: the test proves little",
	      placed, frames);
	printf("ok   mutations: %u mutated WRITEs (%u the engine would place, %u placed), the "
	       "program never placing what the engine refuses\n", frames, engine_ok, placed);
}

/* --- wakeups --------------------------------------------------------------------------------- */

struct wake_step {
	const char *what;
	int32_t psn;		/* relative to BASE_PSN */
	uint16_t flags;
	bool ce;
	bool wakes;
	bool last; /* the whole message; else the first packet of a 4 KiB one */
};

/* In order from the base, 8 packets (each the first of a longer message) and then a 9th: only
 * the 8th wakes. Then each thing that makes the engine acknowledge at once wakes by
 * itself, a message's last packet among them. */
static const struct wake_step wake_steps[] = {
	{ "in order 1 of 8", 0, 0, false, false, false },
	{ "in order 2 of 8", 1, 0, false, false, false },
	{ "in order 3 of 8", 2, 0, false, false, false },
	{ "in order 4 of 8", 3, 0, false, false, false },
	{ "in order 5 of 8", 4, 0, false, false, false },
	{ "in order 6 of 8", 5, 0, false, false, false },
	{ "in order 7 of 8", 6, 0, false, false, false },
	{ "in order 8 of 8: the coalescing count", 7, 0, false, true, false },
	{ "in order, the count starts again", 8, 0, false, false, false },
	{ "ACK_REQ (a full window)", 9, MRC_F_ACK_REQ, false, true, false },
	{ "CE-marked", 10, 0, true, true, false },
	{ "in order after a wakeup", 11, 0, false, false, false },
	{ "opens a gap (13 is missing)", 14, 0, false, true, false },
	{ "beyond the gap, in order with the last", 15, 0, false, false, false },
	{ "a duplicate", 15, 0, false, true, false },
	{ "below the window", -1, 0, false, true, false },
	{ "a message's last packet", 16, 0, false, true, true },
};

static void wakeups(void)
{
	struct frame_spec usual = { .opcode = MRC_OP_WRITE };
	struct mrc_xdp_qp *q = xdp_env_qp(&env, QPN);
	uint64_t woke, quiet;
	uint8_t peer[16];

	frame_source(&usual, peer);
	xdp_env_set_qp(&env, QPN, BASE_PSN, MRC_XDP_QP_PLACE, peer);
	for (size_t i = 0; i < sizeof(wake_steps) / sizeof(wake_steps[0]); i++) {
		const struct wake_step *w = &wake_steps[i];
		struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN + (uint32_t)w->psn, MR_KEY,
					 MR_ADDR, 64, false, 0, 0, w->flags, w->ce, NULL };
		struct frame fr = frame_build_part(&sp, w->last ? 0 : 4096);

		/* the daemon says it sleeps again each time it has read the ring */
		__atomic_store_n(&env.wake->asleep, 1, __ATOMIC_SEQ_CST);
		woke = env.wake->wakeups;
		quiet = env.wake->quiet;
		xdp_env_run(&env, &fr, fr.len, 1, NULL);
		ring_buffer__consume(events);
		check(env.wake->wakeups - woke == (w->wakes ? 1u : 0u) &&
		      env.wake->quiet - quiet == (w->wakes ? 0u : 1u),
		      "asleep, %s: %s", w->what, w->wakes ? "no wakeup" : "woken");
		check(env.wake->asleep == (w->wakes ? 0u : 1u),
		      "asleep, %s: asleep reads %llu after it", w->what,
		      (unsigned long long)env.wake->asleep);
		/* the daemon's part: the base follows what arrived in order */
		while (q->ring[(q->base % MRC_SACK_BITS) / 64] & (1ull << (q->base % 64))) {
			uint32_t b = q->base;

			__atomic_store_n(&q->base, b + 1, __ATOMIC_RELEASE);
			__atomic_fetch_and(&q->ring[(b % MRC_SACK_BITS) / 64], ~(1ull << (b % 64)),
					   __ATOMIC_RELEASE);
		}
	}
	/* a burst: the first urgent packet wakes the daemon, the rest find it woken already */
	__atomic_store_n(&env.wake->asleep, 1, __ATOMIC_SEQ_CST);
	woke = env.wake->wakeups;
	for (uint32_t k = 0; k < 4; k++) {
		struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN + 60 + 2 * k, MR_KEY,
					 MR_ADDR, 64, false, 0, 0, MRC_F_ACK_REQ, 0, NULL };
		struct frame fr = frame_build(&sp);

		xdp_env_run(&env, &fr, fr.len, 1, NULL);
	}
	ring_buffer__consume(events);
	check(env.wake->wakeups - woke == 1 && env.wake->asleep == 0,
	      "a burst of 4 urgent packets to a sleeping daemon: %llu wakeups (want 1)",
	      (unsigned long long)(env.wake->wakeups - woke));
	/* awake: the daemon reads the ring each turn, so nothing wakes it, urgent or not */
	__atomic_store_n(&env.wake->asleep, 0, __ATOMIC_SEQ_CST);
	woke = env.wake->wakeups;
	quiet = env.wake->quiet;
	for (uint32_t k = 0; k < 20; k++) {
		struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN + 100 + 2 * k, MR_KEY,
					 MR_ADDR, 64, false, 0, 0, MRC_F_ACK_REQ, k % 2, NULL };
		struct frame fr = frame_build(&sp);

		xdp_env_run(&env, &fr, fr.len, 1, NULL);
	}
	ring_buffer__consume(events);
	check(env.wake->wakeups == woke && env.wake->quiet == quiet,
	      "awake: %llu wakeups, %llu quiet events counted",
	      (unsigned long long)(env.wake->wakeups - woke),
	      (unsigned long long)(env.wake->quiet - quiet));
	printf("ok   wakeups: %zu packets to a sleeping daemon, woken for exactly the urgent ones "
	       "and every 8th, once per sleep; none while awake\n",
	       sizeof(wake_steps) / sizeof(wake_steps[0]));
}

/* --- workers' rings ---------------------------------------------------------------------- */

static int count_event(void *ctx, void *data, size_t len)
{
	(void)data;
	(void)len;
	++*(unsigned *)ctx;
	return 0;
}

/*
 * Each worker thread reads a ring of its own: a QP's events go to its worker's ring and wake
 * that worker, never another; a QP whose worker has no ring is the daemon's to handle whole
 * (nothing placed, its PSN not claimed, the packet redirected up).
 */
static void worker_rings(void)
{
	struct frame_spec usual = { .opcode = MRC_OP_WRITE };
	struct mrc_xdp_qp *q = xdp_env_qp(&env, QPN);
	struct ring_buffer *ring1;
	uint64_t woke0, woke1, lost;
	unsigned n1 = 0, n0, failed_before = failures;
	uint8_t peer[16];
	int verdict;

	ring1 = ring_buffer__new(env.events_fd[1], count_event, &n1, NULL);
	check(ring1 != NULL, "worker 1's ring: %s", strerror(errno));
	if (!ring1)
		return;
	frame_source(&usual, peer);
	xdp_env_set_qp(&env, QPN, BASE_PSN, MRC_XDP_QP_PLACE, peer);
	q->worker = 1;
	__atomic_store_n(&env.wake[0].asleep, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&env.wake[1].asleep, 1, __ATOMIC_SEQ_CST);
	woke0 = env.wake[0].wakeups;
	woke1 = env.wake[1].wakeups;
	ring_buffer__consume(events);
	n0 = n_events;
	for (uint32_t k = 0; k < 3; k++) {
		struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN + k, MR_KEY, MR_ADDR, 64,
					 false, 0, 0, MRC_F_ACK_REQ, 0, NULL };
		struct frame fr = frame_build(&sp);

		verdict = xdp_env_run(&env, &fr, fr.len, 1, NULL);
		check(verdict == XDP_DROP, "worker 1's QP, PSN +%u: verdict %d, not placed", k,
		      verdict);
	}
	ring_buffer__consume(events);
	ring_buffer__consume(ring1);
	check(n1 == 3 && n_events == n0, "worker 1's QP: %u events on its ring (want 3), %u on "
	      "worker 0's (want 0)", n1, n_events - n0);
	check(env.wake[1].wakeups - woke1 == 1 && env.wake[1].asleep == 0,
	      "worker 1 asleep: woken %llu times (want once)",
	      (unsigned long long)(env.wake[1].wakeups - woke1));
	check(env.wake[0].wakeups == woke0 && env.wake[0].asleep == 1,
	      "worker 0, asleep, was woken for worker 1's QP");
	check(q->placed_packets == 3, "worker 1's QP: %llu placed (want 3)",
	      (unsigned long long)q->placed_packets);
	/* a worker the daemon made no ring for */
	q->worker = 9;
	lost = xdp_env_outcome(&env, MRC_XDP_EVENT_LOST);
	{
		struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN + 3, MR_KEY, MR_ADDR, 64,
					 false, 0, 0, 0, 0, NULL };
		struct frame fr = frame_build(&sp);
		uint32_t idx = (BASE_PSN + 3) % MRC_SACK_BITS;

		verdict = xdp_env_run(&env, &fr, fr.len, 1, NULL);
		ring_buffer__consume(events);
		ring_buffer__consume(ring1);
		check(verdict == XDP_PASS && xdp_env_outcome(&env, MRC_XDP_EVENT_LOST) == lost + 1,
		      "a QP of a worker without a ring: verdict %d, not the daemon's", verdict);
		check(!(q->ring[idx / 64] & (1ull << (idx % 64))) && q->placed_packets == 3 &&
		      n1 == 3 && n_events == n0,
		      "a QP of a worker without a ring: its PSN claimed, or an event somewhere");
	}
	__atomic_store_n(&env.wake[0].asleep, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&env.wake[1].asleep, 0, __ATOMIC_SEQ_CST);
	ring_buffer__free(ring1);
	if (failures == failed_before)
		printf("ok   workers: a QP's events reach its worker's ring and wake that worker "
		       "alone; without a ring the packet is the daemon's, unclaimed\n");
}

/*
 * Deregistration: the daemon's order (fastpath.c mr_clear), key cleared then the page
 * map deleted from mrc_mr_pages, stops placement into the region's pages; and the pages map
 * is of the kind whose delete from user space returns only after an RCU grace period, which
 * is what makes the daemon's answer wait for program runs in flight.
 */
static void deregistration(void)
{
	enum { SLOT = 9, KEY = (SLOT << MRC_XDP_KEY_SLOT_SHIFT) | 0x3c3c3 };
	uint8_t *mem = xdp_env_add_region(&env, SLOT, KEY, MRC_XDP_ACCESS_REMOTE_WRITE, MR_ADDR,
					  MR_LEN, MR_OFFSET);
	struct frame_spec sp = { MRC_OP_WRITE, QPN, BASE_PSN, KEY, MR_ADDR, 512, false, 0, 0, 0,
				 false, NULL };
	struct mrc_xdp_mr cleared = { 0 };
	struct bpf_map_info info = { 0 };
	uint32_t info_len = sizeof(info), slot = SLOT, unchanged = 0;
	uint64_t bad_key = xdp_env_outcome(&env, MRC_XDP_BAD_KEY);
	uint8_t peer[16];
	unsigned failed_before = failures;
	struct frame fr;

	frame_source(&sp, peer);
	xdp_env_set_qp(&env, QPN, BASE_PSN, MRC_XDP_QP_PLACE, peer);
	fr = frame_build(&sp);
	check(xdp_env_run(&env, &fr, fr.len, 1, NULL) == XDP_DROP &&
	      mem[MR_OFFSET] == frame_payload_byte(BASE_PSN, 0),
	      "deregistration: the region took a WRITE before");
	check(!bpf_obj_get_info_by_fd(env.pages_fd, &info, &info_len) &&
	      info.type == BPF_MAP_TYPE_ARRAY_OF_MAPS,
	      "deregistration: mrc_mr_pages is of type %u, not an ARRAY_OF_MAPS, so deleting from "
	      "it no longer waits for program runs in flight", info.type);
	check(!bpf_map_update_elem(env.mrs_fd, &slot, &cleared, BPF_ANY) &&
	      !bpf_map_delete_elem(env.pages_fd, &slot), "deregistration: the slot cleared");
	memset(mem, 0x5a, MR_PAGES * MRC_XDP_PAGE);
	sp.psn = BASE_PSN + 1;
	fr = frame_build(&sp);
	check(xdp_env_run(&env, &fr, fr.len, 1, NULL) == XDP_PASS &&
	      xdp_env_outcome(&env, MRC_XDP_BAD_KEY) == bad_key + 1,
	      "deregistration: a WRITE after it went anywhere but to the daemon as bad_key");
	for (uint32_t i = 0; i < MR_PAGES * MRC_XDP_PAGE; i++)
		unchanged += mem[i] == 0x5a;
	check(unchanged == MR_PAGES * MRC_XDP_PAGE,
	      "deregistration: %u bytes of the old pages written after it",
	      MR_PAGES * MRC_XDP_PAGE - unchanged);
	munmap(mem, MR_PAGES * MRC_XDP_PAGE);
	if (failures == failed_before)
		printf("ok   deregistration: no placement after the slot is cleared; the pages map is "
		       "an ARRAY_OF_MAPS, whose delete the kernel makes wait for runs in flight\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_xdp METAROCE_XDP_BPF_OBJECT\n");
		return 2;
	}
	xdp_env_open(&env, argv[1], "test_xdp");
	events = ring_buffer__new(env.events_fd[0], on_event, NULL, NULL);
	if (!events) {
		fprintf(stderr, "test_xdp: ring_buffer__new: %s\n", strerror(errno));
		return 1;
	}
	mr_mem = xdp_env_add_region(&env, MR_SLOT, MR_KEY, MRC_XDP_ACCESS_REMOTE_WRITE, MR_ADDR,
				    MR_LEN, MR_OFFSET);
	sink_mem = xdp_env_add_region(&env, SINK_SLOT, SINK_KEY, MRC_XDP_ACCESS_LOCAL_WRITE,
				      MR_ADDR, MR_LEN, SINK_OFFSET);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		run_fixture(&fixtures[i]);
	differential(12, 600);
	mutations(20000);
	wakeups();
	worker_rings();
	deregistration();
	ring_buffer__free(events);
	xdp_env_close(&env);
	printf("xdp: %u checks, %u failed\n", checks, failures);
	return failures ? 1 : 0;
}
