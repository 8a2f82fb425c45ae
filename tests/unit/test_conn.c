/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/conn.c, driven end to end through the virtual-time network (tests/harness).
 *
 * The property tests post random mixes of WRITE, WRITE_IMM, SEND, SEND_IMM and READ of
 * 0 B to 16 MiB over lossy, reordering, duplicating, corrupting fabrics and check, for every
 * seed: each byte lands exactly right, each work request completes exactly once and in
 * order, no completion is reported before its bytes are in place, and the engine's state
 * stays bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/netsim.h"
#include "suites.h"

#define MAX_OPS 64

struct op {
	uint8_t opcode; /* enum mrc_wr_opcode */
	uint32_t len;
	uint32_t src_off;  /* WRITE*, SEND*: in a's source; READ: in b's source */
	uint32_t dst_off;  /* WRITE*: in b's target; SEND*: b's receive buffer; READ: a's sink */
	uint32_t imm;
	uint32_t rsn;	   /* receive-consuming ops: which receive they take */
	bool sent_done, recv_done;
};

struct xfer {
	struct sim *sim;
	struct sim_endpoint *a, *b;
	uint8_t *a_src, *a_sink, *b_src, *b_dst, *b_rcv;
	size_t size;
	uint32_t key_b_dst, key_b_src, key_a_sink;
	struct op ops[MAX_OPS];
	unsigned n_ops, n_recv_ops, recv_seen;
	unsigned send_done_count;
	bool failed;
	char why[256];
};

static void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static void note_failure(struct xfer *x, const char *why, unsigned i)
{
	if (!x->failed)
		snprintf(x->why, sizeof(x->why), "%s (op %u)", why, i);
	x->failed = true;
}

/* a's send completions: in posting order, once, and only after the bytes are in place. */
static void on_a_complete(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct xfer *x = ep->user;
	unsigned i = (unsigned)wc->wr_id;
	struct op *o;

	if (from_recv || i >= x->n_ops) {
		note_failure(x, "unexpected completion at the requester", i);
		return;
	}
	o = &x->ops[i];
	if (wc->status != MRC_WC_SUCCESS)
		note_failure(x, mrc_wc_status_name(wc->status), i);
	if (o->sent_done)
		note_failure(x, "send completed twice", i);
	if (i != x->send_done_count)
		note_failure(x, "send completions out of posting order", i);
	o->sent_done = true;
	x->send_done_count++;
	if (wc->byte_len != o->len)
		note_failure(x, "send completion byte_len", i);
	switch (o->opcode) {
	case MRC_WR_WRITE:
	case MRC_WR_WRITE_IMM:
		if (memcmp(x->b_dst + o->dst_off, x->a_src + o->src_off, o->len))
			note_failure(x, "WRITE completed before its bytes were placed", i);
		break;
	case MRC_WR_READ:
		if (memcmp(x->a_sink + o->dst_off, x->b_src + o->src_off, o->len))
			note_failure(x, "READ completed before its bytes were placed", i);
		break;
	default:
		if (memcmp(x->b_rcv + o->dst_off, x->a_src + o->src_off, o->len))
			note_failure(x, "SEND completed before its bytes were placed", i);
	}
}

/* b's receive completions: one per receive-consuming op, in RSN order, data in place. */
static void on_b_complete(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct xfer *x = ep->user;
	unsigned i = (unsigned)wc->wr_id;
	struct op *o;

	if (!from_recv || i >= x->n_ops) {
		note_failure(x, "unexpected completion at the responder", i);
		return;
	}
	o = &x->ops[i];
	if (wc->status != MRC_WC_SUCCESS)
		note_failure(x, mrc_wc_status_name(wc->status), i);
	if (o->recv_done)
		note_failure(x, "receive completed twice", i);
	if (o->rsn != x->recv_seen)
		note_failure(x, "receive completions out of RSN order", i);
	o->recv_done = true;
	x->recv_seen++;
	if (wc->byte_len != o->len)
		note_failure(x, "receive byte_len", i);
	if ((o->opcode == MRC_WR_SEND_IMM || o->opcode == MRC_WR_WRITE_IMM) !=
	    !!(wc->flags & MRC_WC_WITH_IMM))
		note_failure(x, "immediate flag", i);
	if ((wc->flags & MRC_WC_WITH_IMM) && wc->imm != o->imm)
		note_failure(x, "immediate value", i);
	if (o->opcode == MRC_WR_WRITE_IMM) {
		if (wc->opcode != MRC_WC_RECV_RDMA_WITH_IMM ||
		    memcmp(x->b_dst + o->dst_off, x->a_src + o->src_off, o->len))
			note_failure(x, "WRITE_IMM receive before its bytes were placed", i);
	} else if (wc->opcode != MRC_WC_RECV ||
		   memcmp(x->b_rcv + o->dst_off, x->a_src + o->src_off, o->len)) {
		note_failure(x, "SEND receive before its bytes were placed", i);
	}
}

static void xfer_init(struct xfer *x, const struct sim_config *sc, const struct mrc_conn_config *cc,
		      unsigned paths_per_plane, size_t size)
{
	memset(x, 0, sizeof(*x));
	x->sim = sim_new(sc);
	sim_connect(x->sim, 0, 1, cc, paths_per_plane, &x->a, &x->b);
	x->a->user = x->b->user = x;
	x->a->on_complete = on_a_complete;
	x->b->on_complete = on_b_complete;
	x->size = size;
	x->a_src = malloc(size);
	x->b_src = malloc(size);
	x->a_sink = calloc(1, size);
	x->b_dst = calloc(1, size);
	x->b_rcv = calloc(1, size);
	ck_assert(x->a_src && x->b_src && x->a_sink && x->b_dst && x->b_rcv);
	fill_pattern(x->a_src, size, sc->seed);
	fill_pattern(x->b_src, size, sc->seed + 99);
	x->key_b_dst = sim_register(x->b, x->b_dst, (uint32_t)size, MRC_ACCESS_REMOTE_WRITE);
	x->key_b_src = sim_register(x->b, x->b_src, (uint32_t)size, MRC_ACCESS_REMOTE_READ);
	/* the READ sink, local memory only: the key a fast path places READ responses by */
	x->key_a_sink = sim_register(x->a, x->a_sink, (uint32_t)size, 0);
}

static void xfer_free(struct xfer *x)
{
	sim_free(x->sim);
	free(x->a_src);
	free(x->b_src);
	free(x->a_sink);
	free(x->b_dst);
	free(x->b_rcv);
}

/* Posts one op; every op has its own disjoint region in each buffer. */
static void xfer_post(struct xfer *x, uint8_t opcode, uint32_t len, uint32_t imm)
{
	unsigned i = x->n_ops++;
	struct op *o = &x->ops[i];
	uint32_t off = 0;
	struct mrc_send_wr wr = { .wr_id = i, .opcode = opcode, .flags = MRC_SEND_SIGNALED };

	ck_assert_uint_lt(i, MAX_OPS);
	for (unsigned k = 0; k < i; k++)
		off += x->ops[k].len;
	ck_assert_uint_le((uint64_t)off + len, x->size);
	o->opcode = opcode;
	o->len = len;
	o->src_off = o->dst_off = off;
	o->imm = imm;
	wr.imm = imm;
	wr.num_sge = 1;
	if (opcode == MRC_WR_READ) {
		wr.sge[0] = (struct mrc_sge){ x->a_sink + off, (uintptr_t)(x->a_sink + off), len,
					      x->key_a_sink };
		wr.rkey = x->key_b_src;
		wr.raddr = (uintptr_t)(x->b_src + off);
	} else {
		wr.sge[0] = (struct mrc_sge){ x->a_src + off, (uintptr_t)(x->a_src + off), len, 0 };
		wr.rkey = x->key_b_dst;
		wr.raddr = (uintptr_t)(x->b_dst + off);
	}
	if (opcode == MRC_WR_SEND || opcode == MRC_WR_SEND_IMM || opcode == MRC_WR_WRITE_IMM) {
		struct mrc_recv_wr rwr = { .wr_id = i, .num_sge = 1 };

		/* SEND lands in its own slice of b's receive buffer, split over two SGEs */
		rwr.sge[0] = (struct mrc_sge){ x->b_rcv + off, 0, len / 3, 0 };
		rwr.sge[1] = (struct mrc_sge){ x->b_rcv + off + len / 3, 0, len - len / 3, 0 };
		rwr.num_sge = 2;
		o->rsn = x->n_recv_ops++;
		ck_assert_int_eq(mrc_conn_post_recv(x->b->conn, &rwr), 0);
	}
	ck_assert_int_eq(mrc_conn_post_send(x->a->conn, &wr), 0);
	x->a->dirty = true;
}

static bool all_done(struct sim *sim, void *arg)
{
	struct xfer *x = arg;

	(void)sim;
	return x->failed || (x->send_done_count == x->n_ops && x->recv_seen == x->n_recv_ops &&
			     mrc_conn_send_idle(x->a->conn) && mrc_conn_send_idle(x->b->conn));
}

/* Which refusals each side counted: the first thing to read when a run goes wrong. */
static void print_drops(const char *who, const struct mrc_conn *c)
{
	const struct mrc_conn_stats *st = mrc_conn_stats(c);

	fprintf(stderr, "%s: state %d, drops:", who, mrc_conn_state(c));
	for (int r = 1; r <= MRC_DROP_REASON_MAX; r++)
		if (st->rx_drops[r])
			fprintf(stderr, " %d=%llu", r, (unsigned long long)st->rx_drops[r]);
	fprintf(stderr, "\n");
}

static void xfer_run(struct xfer *x, uint64_t limit_ns)
{
	sim_run(x->sim, x->sim->now_ns + limit_ns, all_done, x);
	if (x->failed || !all_done(x->sim, x)) {
		print_drops("requester", x->a->conn);
		print_drops("responder", x->b->conn);
	}
	ck_assert_msg(!x->failed, "%s", x->why);
	ck_assert_msg(all_done(x->sim, x), "not done at %.3f ms: %u/%u sends, %u/%u receives",
		      x->sim->now_ns / 1e6, x->send_done_count, x->n_ops, x->recv_seen,
		      x->n_recv_ops);
	ck_assert_int_eq(mrc_conn_state(x->a->conn), MRC_QPS_RTS);
	ck_assert_int_eq(mrc_conn_state(x->b->conn), MRC_QPS_RTS);
	ck_assert_uint_eq(x->a->errors + x->b->errors, 0);
}

static uint32_t pick_len(struct sim *sim, uint32_t max)
{
	static const uint32_t edges[] = { 0, 1, 255, 4095, 4096, 4097, 8192, 65536 };
	uint64_t r = sim_random(sim);

	if (r % 3 == 0)
		return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))] % (max + 1);
	return (uint32_t)((r >> 16) % (max + 1));
}

static void impair_core(struct sim *sim, const struct sim_stage_params *p)
{
	for (unsigned pl = 0; pl < sim->n_planes; pl++)
		for (unsigned l = 0; l < sim->n_core; l++) {
			struct sim_stage *s = sim_core(sim, pl, l);
			uint64_t rate = s->p.rate_bps, delay = s->p.delay_ns;

			s->p = *p;
			s->p.rate_bps = rate;
			s->p.delay_ns = delay + l * 2000; /* unequal paths: reordering */
		}
}

/* One property run: a random mix of operations over an impaired two-plane fabric. */
static void property_run_placed(uint64_t seed, uint8_t mode, const struct sim_stage_params *impair,
				unsigned n_ops, uint32_t max_len, bool fast_path)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	size_t before;

	sim_config_default(&sc);
	sc.planes = 2;
	sc.seed = seed;
	sc.fast_path_placement = fast_path;
	mrc_conn_config_default(&cc);
	cc.mode = mode;
	cc.max_payload = 1024 + (uint16_t)(seed % 4) * 1000; /* odd sizes too */
	cc.sq_psn = 0xffffffffu - (uint32_t)(seed % 300);     /* PSNs wrap mid-run */
	cc.rq_psn = (uint32_t)seed * 7919u;
	cc.rto.min_rto_ns = 50000;
	xfer_init(&x, &sc, &cc, 2, (size_t)n_ops * max_len + 1);
	impair_core(x.sim, impair);
	before = mrc_conn_footprint(x.a->conn);
	for (unsigned i = 0; i < n_ops; i++) {
		static const uint8_t opcodes[] = { MRC_WR_WRITE, MRC_WR_WRITE_IMM, MRC_WR_SEND,
						   MRC_WR_SEND_IMM, MRC_WR_READ };
		uint8_t op = opcodes[sim_random(x.sim) % 5];

		xfer_post(&x, op, pick_len(x.sim, max_len), (uint32_t)sim_random(x.sim));
	}
	xfer_run(&x, 20ull * 1000000000ull);
	/* every byte of every target, sink and receive buffer, not just the op regions */
	for (unsigned i = 0; i < x.n_ops; i++) {
		const struct op *o = &x.ops[i];

		if (o->opcode == MRC_WR_READ)
			ck_assert(!memcmp(x.a_sink + o->dst_off, x.b_src + o->src_off, o->len));
		else if (o->opcode == MRC_WR_WRITE || o->opcode == MRC_WR_WRITE_IMM)
			ck_assert(!memcmp(x.b_dst + o->dst_off, x.a_src + o->src_off, o->len));
		else
			ck_assert(!memcmp(x.b_rcv + o->dst_off, x.a_src + o->src_off, o->len));
	}
	if (fast_path) {
		bool reads = false;

		for (unsigned i = 0; i < x.n_ops; i++)
			reads |= x.ops[i].opcode == MRC_WR_READ;
		ck_assert_uint_gt(x.b->fast_path_placed, 0);		/* WRITEs */
		ck_assert(!reads || x.a->fast_path_placed > 0);		/* READ responses */
	}
	/* state bounded: no growth, nothing left in flight */
	ck_assert_uint_eq(mrc_conn_footprint(x.a->conn), before);
	ck_assert_uint_eq(mrc_conn_inflight(x.a->conn), 0);
	ck_assert_uint_eq(mrc_conn_inflight(x.b->conn), 0);
	xfer_free(&x);
}

static void property_run(uint64_t seed, uint8_t mode, const struct sim_stage_params *impair,
			 unsigned n_ops, uint32_t max_len)
{
	property_run_placed(seed, mode, impair, n_ops, max_len, false);
}

/* --- property tests [R-21, R-29, R-38, R-39, R-41, R-221, R-222, R-251] ---------------- */

START_TEST(mrc_conn__property_clean_fabric)
{
	struct sim_stage_params clean = { 0 };

	property_run(1000 + (uint64_t)_i, MRC_MODE_METAROCE, &clean, 24, 70000);
}
END_TEST

START_TEST(mrc_conn__property_random_loss_reorder_duplicates)
{
	struct sim_stage_params bad = { .loss = 0.05, .duplicate = 0.02, .jitter_ns = 3000 };

	property_run(2000 + (uint64_t)_i, MRC_MODE_METAROCE, &bad, 24, 70000);
}
END_TEST

/* A fast path (XDP) places WRITE and READ_RESP payloads and hands the engine the headers:
 * every byte and completion is still right under loss, duplicates and reordering. */
START_TEST(mrc_conn__property_fast_path_placement)
{
	struct sim_stage_params bad = { .loss = 0.03, .duplicate = 0.02, .jitter_ns = 3000 };

	property_run_placed(4000 + (uint64_t)_i, MRC_MODE_METAROCE, &bad, 24, 70000, true);
}
END_TEST

/* ... and the engine copies none of what the fast path placed: poisoned bytes stay. */
START_TEST(mrc_conn__placed_payloads_are_not_copied)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	sc.fast_path_placement = true;
	sc.fast_path_poison = true;
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 1 << 16);
	xfer_post(&x, MRC_WR_WRITE, 20000, 0);
	sim_run(x.sim, x.sim->now_ns + 1000000000ull, all_done, &x);
	ck_assert(all_done(x.sim, &x));
	ck_assert(x.failed); /* the harness's own byte check saw the poison: that is the point */
	ck_assert_uint_gt(x.b->fast_path_placed, 0);
	for (unsigned i = 0; i < 20000; i++)
		ck_assert_uint_eq(x.b_dst[x.ops[0].dst_off + i],
				  (uint8_t)(x.a_src[x.ops[0].src_off + i] + 1));
	{
		/* the base a fast path's window follows is the receive window's, past every
		 * packet the sender sent */
		struct mrc_conn_info ai, bi;

		mrc_conn_get_info(x.a->conn, &ai);
		mrc_conn_get_info(x.b->conn, &bi);
		ck_assert_uint_eq(mrc_conn_rcv_base(x.b->conn), bi.rcv_cum_psn);
		ck_assert_uint_eq(mrc_conn_rcv_base(x.b->conn), ai.snd_nxt);
	}
	xfer_free(&x);
}
END_TEST

START_TEST(mrc_conn__property_burst_loss_and_corruption)
{
	struct sim_stage_params bad = { .burst_enter = 0.01, .burst_exit = 0.3, .corrupt = 0.03,
					.jitter_ns = 1000 };

	property_run(3000 + (uint64_t)_i, MRC_MODE_METAROCE, &bad, 24, 70000);
}
END_TEST

START_TEST(mrc_conn__property_rocev2_baseline_under_loss)
{
	struct sim_stage_params bad = { .loss = 0.02, .duplicate = 0.01, .corrupt = 0.01 };

	property_run(4000 + (uint64_t)_i, MRC_MODE_ROCEV2, &bad, 16, 40000);
}
END_TEST

/*
 * A small send queue of odd depth kept full with READs among the writes, on unequal paths:
 * every slot is reused many times, and ACKs of READ requests arrive after their responses.
 * Ring indexes stay right, and a late ACK never lands on the slot's next request.
 */
START_TEST(mrc_conn__small_odd_queue_reused_with_reads)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim_stage_params bad = { .loss = 0.01 };
	struct xfer x;

	sim_config_default(&sc);
	sc.seed = 500 + (uint64_t)_i;
	mrc_conn_config_default(&cc);
	cc.sq_depth = 3;
	cc.rq_depth = 5;
	cc.max_rd_atomic = cc.max_dest_rd_atomic = 3;
	cc.rto.min_rto_ns = 50000;
	xfer_init(&x, &sc, &cc, 4, MAX_OPS * 5000);
	impair_core(x.sim, &bad);
	for (unsigned round = 0; round < MAX_OPS / 2; round++) {
		/* keep three outstanding: post two, wait until at most one is left */
		for (int k = 0; k < 2; k++) {
			uint8_t op = (sim_random(x.sim) & 1) ? MRC_WR_READ : MRC_WR_WRITE;

			if (k == 1 && sim_random(x.sim) % 3 == 0)
				op = MRC_WR_SEND;
			xfer_post(&x, op, 1 + (uint32_t)(sim_random(x.sim) % 4999), 0);
		}
		while (x.n_ops - x.send_done_count > 1 && !x.failed &&
		       x.sim->now_ns < 5000000000ull)
			sim_run(x.sim, x.sim->now_ns + 5000, NULL, NULL);
	}
	xfer_run(&x, 5ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* 1 B to 16 MiB in one message, both modes, under loss. */
START_TEST(mrc_conn__sixteen_mib_write_and_read_exact)
{
	static const uint32_t sizes[] = { 1, 16u << 20 };
	struct sim_stage_params bad = { .loss = 0.01, .jitter_ns = 2000 };

	for (uint8_t mode = 0; mode <= MRC_MODE_ROCEV2; mode++) {
		for (size_t k = 0; k < 2; k++) {
			struct sim_config sc;
			struct mrc_conn_config cc;
			struct xfer x;

			sim_config_default(&sc);
			sc.seed = 77 + mode;
			mrc_conn_config_default(&cc);
			cc.mode = mode;
			cc.rto.min_rto_ns = 50000;
			xfer_init(&x, &sc, &cc, 4, 2u * sizes[k]);
			impair_core(x.sim, &bad);
			xfer_post(&x, MRC_WR_WRITE, sizes[k], 0);
			xfer_post(&x, MRC_WR_READ, sizes[k], 0);
			xfer_run(&x, 60ull * 1000000000ull);
			xfer_free(&x);
		}
	}
}
END_TEST

/* Corrupted packets are never placed or acknowledged: the corruption counter moves, the
 * data does not. */
START_TEST(mrc_conn__corruption_never_placed)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim_stage_params bad = { .corrupt = 0.2 };
	struct xfer x;
	uint64_t corrupted = 0;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.rto.min_rto_ns = 50000;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	impair_core(x.sim, &bad);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	xfer_run(&x, 10ull * 1000000000ull);
	sim_run(x.sim, x.sim->now_ns + 1000000, NULL, NULL); /* drain what is still in flight */
	ck_assert_uint_eq(x.sim->heap_len, 0);
	for (unsigned l = 0; l < x.sim->n_core; l++)
		corrupted += sim_core(x.sim, 0, l)->corrupted;
	ck_assert_uint_gt(corrupted, 10);
	ck_assert_uint_eq(x.sim->undecodable, corrupted);
	xfer_free(&x);
}
END_TEST

/* Spraying over paths of very unequal delay, no loss: reordering is not loss. */
START_TEST(mrc_conn__unequal_paths_no_spurious_retransmit)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 4, 8u << 20);
	for (unsigned l = 0; l < x.sim->n_core; l++)
		sim_core(x.sim, 0, l)->p.delay_ns = 1000 + l * 15000; /* 1 .. 46 us */
	xfer_post(&x, MRC_WR_WRITE, 8u << 20, 0);
	xfer_run(&x, 10ull * 1000000000ull);
	ck_assert_uint_eq(mrc_conn_stats(x.a->conn)->tx_retransmits, 0);
	ck_assert_uint_eq(mrc_conn_stats(x.b->conn)->rx_drops[MRC_DROP_DUPLICATE], 0);
	xfer_free(&x);
}
END_TEST

static bool writes_done(struct sim *sim, void *arg)
{
	struct xfer *x = arg;

	(void)sim;
	return x->failed || x->send_done_count >= 1;
}

/*
 * Two of four core links blackholed mid-transfer: the paths hashed onto them fail, the
 * transfer finishes on the others without an error; probes then re-draw the failed
 * paths onto live links and bring them back.
 */
START_TEST(mrc_conn__blackholed_path_fails_over)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	uint64_t failures = 0, redraws = 0, recoveries = 0;

	sim_config_default(&sc);
	sc.core_links = 4;
	mrc_conn_config_default(&cc);
	cc.rto.min_rto_ns = 50000;
	xfer_init(&x, &sc, &cc, 4, 16u << 20);
	xfer_post(&x, MRC_WR_WRITE, 16u << 20, 0);
	sim_run(x.sim, 300000, writes_done, &x); /* 0.3 ms in */
	ck_assert_uint_eq(x.send_done_count, 0);
	for (unsigned l = 0; l < sc.core_links; l++)
		sim_core(x.sim, 0, l)->p.blackhole = l == 1 || l == 2;
	xfer_run(&x, 10ull * 1000000000ull);
	for (unsigned i = 0; i < mrc_conn_n_paths(x.a->conn); i++)
		failures += mrc_conn_path(x.a->conn, i)->stats.failures;
	ck_assert_uint_gt(failures, 0);
	/* idle afterwards: probing goes on and re-drawn paths come back */
	sim_run(x.sim, x.sim->now_ns + 200000000ull, NULL, NULL);
	for (unsigned i = 0; i < mrc_conn_n_paths(x.a->conn); i++) {
		const struct mrc_path *p = mrc_conn_path(x.a->conn, i);

		redraws += p->stats.redraws;
		recoveries += p->stats.recoveries;
		ck_assert_int_eq(p->state, MRC_PATH_ACTIVE);
	}
	ck_assert_uint_gt(redraws, 0);
	ck_assert_uint_gt(recoveries, 0);
	xfer_free(&x);
}
END_TEST

/* Everything dark: the QP gives up within its retry budget and flushes. */
START_TEST(mrc_conn__total_blackout_retry_exceeded)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 2, 2u << 20);
	x.a->on_complete = NULL;
	x.sim->uplink[0][0].p.blackhole = true;
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	xfer_post(&x, MRC_WR_SEND, 100, 0);
	sim_run(x.sim, 60ull * 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(x.a->send_completions, 2);
	ck_assert_uint_eq(x.a->errors, 2);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_WR_FLUSH_ERR);
	xfer_free(&x);
}
END_TEST

/* The responder's host goes dark (both ways) on every plane, or comes back. */
static void host_dark(struct sim *sim, unsigned host, bool dark)
{
	for (unsigned p = 0; p < sim->n_planes; p++)
		sim->uplink[host][p].p.blackhole = sim->downlink[host][p].p.blackhole = dark;
}

/*
 * A responder kept off its CPU for 40 ms, well inside the retry budget (8 retries, one per
 * 67 ms timeout), costs the requester no error: retransmissions and probes go on every RTO,
 * but retries count only once per timeout, and the transfer finishes when it comes back
 * . (Counting every resend and every probe round with no usable path, as once,
 * ended it within a few milliseconds: this test fails with a 1 ns timeout.)
 */
START_TEST(mrc_conn__peer_stall_within_retry_budget)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	sc.planes = 2;
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 4, 4u << 20);
	xfer_post(&x, MRC_WR_WRITE, 2u << 20, 0);
	xfer_post(&x, MRC_WR_SEND_IMM, 4096, 7);
	sim_run(x.sim, 50000, writes_done, &x); /* 50 us in: data in flight */
	ck_assert_uint_eq(x.send_done_count, 0);
	host_dark(x.sim, 1, true);
	sim_run(x.sim, x.sim->now_ns + 40000000ull, NULL, NULL);
	ck_assert_uint_gt(mrc_conn_stats(x.a->conn)->tx_retransmits, 8);
	ck_assert_int_ne(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	host_dark(x.sim, 1, false);
	xfer_run(&x, 10ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

struct first_error {
	uint64_t at_ns;
	unsigned status;
};

static void note_first_error(struct sim_endpoint *ep, bool from_recv,
			     const struct mrc_completion *wc)
{
	struct first_error *e = ep->user;

	(void)from_recv;
	if (wc->status != MRC_WC_SUCCESS && !e->at_ns) {
		e->at_ns = ep->sim->now_ns;
		e->status = wc->status;
	}
}

/*
 * The retry budget runs on the QP's timeout: a peer gone for good ends the QP with
 * RETRY_EXC_ERR after (retry_cnt + 1) timeouts, not before, and not much later (the RTO,
 * 100 ms at most, is how often the clock is looked at).
 */
START_TEST(mrc_conn__retry_budget_runs_on_the_timeout)
{
	static const uint64_t timeout_ns[] = { 5000000, 20000000 };

	for (unsigned t = 0; t < 2; t++) {
		struct sim_config sc;
		struct mrc_conn_config cc;
		struct first_error e = { 0 };
		struct xfer x;
		uint64_t dark_at, budget;

		sim_config_default(&sc);
		mrc_conn_config_default(&cc);
		cc.retry_cnt = 3;
		cc.retry_timeout_ns = timeout_ns[t];
		budget = (cc.retry_cnt + 1) * cc.retry_timeout_ns;
		xfer_init(&x, &sc, &cc, 4, 1u << 20);
		x.a->on_complete = note_first_error;
		x.a->user = &e;
		xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
		sim_run(x.sim, 20000, NULL, NULL);
		dark_at = x.sim->now_ns;
		host_dark(x.sim, 1, true);
		sim_run(x.sim, dark_at + 10ull * 1000000000ull, NULL, NULL);
		ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
		ck_assert_uint_eq(e.status, MRC_WC_RETRY_EXC_ERR);
		ck_assert_uint_ge(e.at_ns - dark_at, budget);
		ck_assert_uint_le(e.at_ns - dark_at, budget + 2 * cc.rto.max_rto_ns);
		xfer_free(&x);
	}
}
END_TEST

/* The responder takes no data but answers probes (it drops every packet over 300 bytes). */
static void data_dark(struct sim *sim, unsigned host)
{
	for (unsigned p = 0; p < sim->n_planes; p++)
		sim->downlink[host][p].p.drop_above_bytes = 300;
}

/*
 * A peer that answers probes and takes no data: probe replies bring the paths back with fresh
 * RTOs, so only the retry clock of the resends ends the QP, after (retry_cnt + 1) timeouts; and
 * the resends of each packet back off meanwhile instead of following every fresh RTO
 * . (Counting every resend ended this QP after 0.4 ms; not backing off sent
 * some 180,000 resends a second.)
 */
START_TEST(mrc_conn__data_dark_peer_retry_budget_and_backoff)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct first_error e = { 0 };
	struct xfer x;
	uint64_t dark_at, budget, resent;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_cnt = 3;
	cc.retry_timeout_ns = 5000000;
	budget = (cc.retry_cnt + 1) * cc.retry_timeout_ns;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	x.a->on_complete = note_first_error;
	x.a->user = &e;
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	sim_run(x.sim, 20000, NULL, NULL);
	dark_at = x.sim->now_ns;
	data_dark(x.sim, 1);
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits;
	sim_run(x.sim, dark_at + 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(e.status, MRC_WC_RETRY_EXC_ERR);
	ck_assert_uint_ge(e.at_ns - dark_at, budget);
	ck_assert_uint_le(e.at_ns - dark_at, budget + 2 * cc.rto.max_rto_ns);
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits - resent;
	/* each of at most 256 outstanding packets: at once, then after 0.4, 0.8, ... 12.8 ms */
	ck_assert_uint_gt(resent, 0);
	ck_assert_uint_le(resent, 256 * 8);
	xfer_free(&x);
}
END_TEST

/*
 * A READ whose request the responder acknowledged and whose responses never arrive (here they
 * are too long for the requester's links; a responder whose daemon restarted is the real case)
 * has no packet of the requester's in flight to time out: the READ watchdog ends it with
 * RETRY_EXC_ERR after (retry_cnt + 1) timeouts. Without it the READ waited forever.
 */
START_TEST(mrc_conn__read_response_that_never_comes_retry_exceeded)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct first_error e = { 0 };
	struct xfer x;
	uint64_t start, budget;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_cnt = 3;
	cc.retry_timeout_ns = 5000000;
	budget = (cc.retry_cnt + 1) * cc.retry_timeout_ns;
	xfer_init(&x, &sc, &cc, 4, 64u << 10);
	x.a->on_complete = note_first_error;
	x.a->user = &e;
	data_dark(x.sim, 0); /* the requester's side: READ_RESP dropped, ACKs pass */
	start = x.sim->now_ns;
	xfer_post(&x, MRC_WR_READ, 64u << 10, 0);
	sim_run(x.sim, start + 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(e.status, MRC_WC_RETRY_EXC_ERR);
	ck_assert_uint_ge(e.at_ns - start, budget);
	ck_assert_uint_le(e.at_ns - start, budget + cc.retry_timeout_ns + 2 * cc.rto.max_rto_ns);
	xfer_free(&x);
}
END_TEST

/* With no retry limit (timeout 0), the same peer draws resends at a bounded pace: each lost
 * packet at most once per rto_max once it has backed off, not once per fresh RTO. */
START_TEST(mrc_conn__data_dark_peer_resends_back_off)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	uint64_t resent;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_timeout_ns = 0;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	sim_run(x.sim, 20000, NULL, NULL);
	data_dark(x.sim, 1);
	sim_run(x.sim, x.sim->now_ns + 100000000ull, NULL, NULL); /* backing off */
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits;
	sim_run(x.sim, x.sim->now_ns + 2000000000ull, NULL, NULL);
	resent = mrc_conn_stats(x.a->conn)->tx_retransmits - resent;
	ck_assert_int_ne(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	/* at most one resend per outstanding packet (256 at most) per rto_max: 20 in 2 s */
	ck_assert_uint_le(resent, 256 * 21);
	ck_assert_uint_gt(resent, 0);
	/* and when the peer takes data again, the transfer completes */
	for (unsigned p = 0; p < x.sim->n_planes; p++)
		x.sim->downlink[1][p].p.drop_above_bytes = 0;
	xfer_run(&x, 10ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* Verbs' timeout 0 is infinite: ten seconds of a dark peer end nothing, and the transfer
 * completes when it comes back. */
START_TEST(mrc_conn__retry_timeout_zero_never_gives_up)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.retry_timeout_ns = 0;
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	sim_run(x.sim, 20000, NULL, NULL);
	host_dark(x.sim, 1, true);
	sim_run(x.sim, x.sim->now_ns + 10ull * 1000000000ull, NULL, NULL);
	ck_assert_int_ne(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	host_dark(x.sim, 1, false);
	xfer_run(&x, 10ull * 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* A WRITE to a key the responder does not have: REM_ACCESS_ERR at the requester, both QPs
 * in ERR, later requests flushed. */
START_TEST(mrc_conn__bad_rkey_remote_access_error)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_send_wr wr = { .wr_id = 7, .opcode = MRC_WR_WRITE, .num_sge = 1 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 4096);
	x.a->on_complete = NULL;
	x.b->on_complete = NULL;
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 100, 0 };
	wr.rkey = x.key_b_dst ^ 0x100; /* wrong random bits */
	wr.raddr = (uintptr_t)x.b_dst;
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	wr.wr_id = 8;
	wr.rkey = x.key_b_dst;
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_ERR);
	ck_assert_uint_eq(x.a->send_completions, 2);
	ck_assert_uint_eq(x.a->last_wc.wr_id, 8);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(x.a->errors, 2);
	ck_assert_uint_eq(mrc_conn_stats(x.b->conn)->rx_drops[MRC_DROP_REMOTE_ACCESS], 1);
	/* the bad key touched no memory */
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(x.b_dst[i], 0);
	xfer_free(&x);
}
END_TEST

static void record_first(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc)
{
	struct mrc_completion *first = ep->user;

	(void)from_recv;
	if (first->wr_id == 0)
		*first = *wc;
}

/* The first failing WR carries the NAK's status; the ones after it are flushed. */
START_TEST(mrc_conn__remote_access_status_on_culprit)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;
	struct sim_endpoint *a, *b;
	struct mrc_completion first = { 0 };
	uint8_t src[64] = { 1 }, dst[64];
	struct mrc_send_wr wr = { .wr_id = 1, .opcode = MRC_WR_WRITE, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	sim = sim_new(&sc);
	sim_connect(sim, 0, 1, &cc, 1, &a, &b);
	a->user = &first;
	a->on_complete = record_first;
	sim_register(b, dst, sizeof(dst), MRC_ACCESS_REMOTE_READ); /* no write access */
	wr.sge[0] = (struct mrc_sge){ src, 0, sizeof(src), 0 };
	wr.rkey = b->mrs[0].key;
	wr.raddr = (uintptr_t)dst;
	ck_assert_int_eq(mrc_conn_post_send(a->conn, &wr), 0);
	a->dirty = true;
	sim_run(sim, 1000000000ull, NULL, NULL);
	ck_assert_uint_eq(first.wr_id, 1);
	ck_assert_uint_eq(first.status, MRC_WC_REM_ACCESS_ERR);
	sim_free(sim);
}
END_TEST

/* SEND longer than the posted receive: LOC_LEN_ERR there, REM_INV_REQ_ERR here. */
START_TEST(mrc_conn__send_longer_than_receive)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_recv_wr rwr = { .wr_id = 3, .num_sge = 1 };
	struct mrc_send_wr wr = { .wr_id = 4, .opcode = MRC_WR_SEND, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 8192);
	x.a->on_complete = x.b->on_complete = NULL;
	rwr.sge[0] = (struct mrc_sge){ x.b_rcv, 0, 100, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 5000, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 1000000000ull, NULL, NULL);
	ck_assert_uint_eq(x.b->recv_completions, 1);
	ck_assert_uint_eq(x.b->last_wc.status, MRC_WC_LOC_LEN_ERR);
	ck_assert_uint_eq(x.a->send_completions, 1);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_REM_INV_REQ_ERR);
	xfer_free(&x);
}
END_TEST

static bool nothing(struct sim *sim, void *arg)
{
	(void)sim;
	(void)arg;
	return false;
}

/* SEND before the receive is posted: RNR NAK, wait, retry, success. */
START_TEST(mrc_conn__rnr_then_success)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_recv_wr rwr = { .wr_id = 0, .num_sge = 1 };
	struct mrc_send_wr wr = { .wr_id = 0, .opcode = MRC_WR_SEND_IMM, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED, .imm = 0xfeed };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 2, 20000);
	x.ops[0] = (struct op){ .opcode = MRC_WR_SEND_IMM, .len = 10000, .imm = 0xfeed };
	x.n_ops = 1;
	x.n_recv_ops = 1;
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 10000, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, x.sim->now_ns + 300000, nothing, NULL); /* 300 us without a receive */
	ck_assert_uint_gt(mrc_conn_stats(x.b->conn)->rx_drops[MRC_DROP_RNR], 0);
	ck_assert_msg(x.a->send_completions == 0, "completed early: %s",
		      mrc_wc_status_name(x.a->last_wc.status));
	rwr.sge[0] = (struct mrc_sge){ x.b_rcv, 0, 10000, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	xfer_run(&x, 1000000000ull);
	ck_assert_uint_eq(x.b->last_wc.imm, 0xfeed);
	xfer_free(&x);
}
END_TEST

/* A receiver that posts its receive 200 ms late: with unlimited RNR retries the SEND waits
 * it out, and the idle path's timers never fail it. */
START_TEST(mrc_conn__long_rnr_wait_succeeds)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_recv_wr rwr = { .wr_id = 0, .num_sge = 1 };
	struct mrc_send_wr wr = { .wr_id = 0, .opcode = MRC_WR_SEND, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };
	uint64_t failures = 0;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	cc.rnr_retry_after = 100; /* 1 ms */
	xfer_init(&x, &sc, &cc, 2, 4096);
	x.ops[0] = (struct op){ .opcode = MRC_WR_SEND, .len = 3000 };
	x.n_ops = x.n_recv_ops = 1;
	wr.sge[0] = (struct mrc_sge){ x.a_src, 0, 3000, 0 };
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	x.a->dirty = true;
	sim_run(x.sim, 200000000ull, nothing, NULL);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_RTS);
	rwr.sge[0] = (struct mrc_sge){ x.b_rcv, 0, 3000, 0 };
	ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	xfer_run(&x, 1000000000ull);
	for (unsigned i = 0; i < mrc_conn_n_paths(x.a->conn); i++)
		failures += mrc_conn_path(x.a->conn, i)->stats.failures;
	ck_assert_uint_eq(failures, 0);
	xfer_free(&x);
}
END_TEST

/* Two SENDs refused 5 us apart both wait their own RNR time and go again. */
static void sends_then_receives_after(unsigned n, uint64_t wait_ns, uint64_t gap_ns)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, n, 8192);
	for (unsigned i = 0; i < n; i++)
		x.ops[i] = (struct op){ .opcode = MRC_WR_SEND, .len = 100, .src_off = 100 * i,
					.dst_off = 100 * i, .rsn = i };
	x.n_ops = x.n_recv_ops = n;
	for (unsigned i = 0; i < n; i++) {
		struct mrc_send_wr wr = { .wr_id = i, .opcode = MRC_WR_SEND, .num_sge = 1,
					  .flags = MRC_SEND_SIGNALED };

		wr.sge[0] = (struct mrc_sge){ x.a_src + 100 * i, 0, 100, 0 };
		ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
		x.a->dirty = true;
		if (gap_ns)
			sim_run(x.sim, x.sim->now_ns + gap_ns, nothing, NULL);
	}
	sim_run(x.sim, x.sim->now_ns + wait_ns, nothing, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct mrc_recv_wr rwr = { .wr_id = i, .num_sge = 1 };

		rwr.sge[0] = (struct mrc_sge){ x.b_rcv + 100 * i, 0, 100, 0 };
		ck_assert_int_eq(mrc_conn_post_recv(x.b->conn, &rwr), 0);
	}
	xfer_run(&x, 1000000000ull);
	xfer_free(&x);
}

START_TEST(mrc_conn__two_rnr_waits_both_resent)
{
	sends_then_receives_after(2, 100000, 5000);
}
END_TEST

/* Two, then eight SENDs posted together wait a whole second for receives: all stay under
 * the RNR budget (unlimited by default), none is retried against retry_cnt. */
START_TEST(mrc_conn__two_sends_wait_long_for_receives)
{
	sends_then_receives_after(2, 1000000000ull, 0);
	sends_then_receives_after(8, 1000000000ull, 0);
}
END_TEST

/* A WRITE whose one lost packet is repaired on another path leaves every path healthy:
 * no RTO fires on a path with nothing outstanding. */
START_TEST(mrc_conn__repaired_loss_leaves_paths_healthy)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim_stage_params bad = { .loss = 0.02 };
	struct xfer x;

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 4, 1u << 20);
	impair_core(x.sim, &bad);
	xfer_post(&x, MRC_WR_WRITE, 1u << 20, 0);
	xfer_run(&x, 1000000000ull);
	sim_run(x.sim, x.sim->now_ns + 50000000ull, NULL, NULL); /* 50 ms idle */
	for (unsigned i = 0; i < mrc_conn_n_paths(x.a->conn); i++) {
		const struct mrc_path *p = mrc_conn_path(x.a->conn, i);

		ck_assert_int_eq(p->state, MRC_PATH_ACTIVE);
		ck_assert_uint_eq(p->rto_deadline_ns, 0);
	}
	xfer_free(&x);
}
END_TEST

/* A posted work request on a QP in ERR completes at once, flushed. */
START_TEST(mrc_conn__post_after_error_flushes)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_send_wr wr = { .wr_id = 9, .opcode = MRC_WR_SEND, .num_sge = 0 };
	struct mrc_recv_wr rwr = { .wr_id = 10 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 64);
	x.a->on_complete = NULL;
	mrc_conn_set_error(x.a->conn, 0);
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	ck_assert_uint_eq(x.a->last_wc.status, MRC_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(x.a->last_wc.wr_id, 9);
	ck_assert_int_eq(mrc_conn_post_recv(x.a->conn, &rwr), 0);
	ck_assert(x.a->last_from_recv);
	ck_assert_uint_eq(x.a->last_wc.wr_id, 10);
	/* the peer learns of it through CLOSE */
	x.a->dirty = true;
	sim_run(x.sim, 1000000000ull, NULL, NULL);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_ERR);
	xfer_free(&x);
}
END_TEST

/* Each direction's first PSN comes from the node ids and QPNs, as the SPEC's examples say
 * [R-116]. */
START_TEST(mrc_conn__initial_psn_from_qpn_pair)
{
	const uint64_t a = 0x1111111111111111ull, b = 0x2222222222222222ull;

	ck_assert_uint_eq(mrc_initial_psn(a, 0x3000, b, 0x3000), 0xbebb8761u);
	ck_assert_uint_eq(mrc_initial_psn(b, 0x3000, a, 0x3000), 0xba092814u);
	ck_assert_uint_eq(mrc_initial_psn(0, 0x1000, 0, 0x2001), 0x683afb36u);
	ck_assert_uint_ne(mrc_initial_psn(a, 1, a, 2), mrc_initial_psn(a, 2, a, 1));
}
END_TEST

/* RTS's send settings apply to a connection made at RTR, never after a request went out. */
START_TEST(mrc_conn__send_settings_only_before_first_request)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_send_wr wr = { .wr_id = 9, .opcode = MRC_WR_SEND, .num_sge = 0 };

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 64);
	ck_assert_int_eq(mrc_conn_set_send(x.a->conn, 3, 1000000, 7, 4), 0);
	ck_assert_int_eq(mrc_conn_set_send(x.a->conn, 3, 1000000, 7, 0), -EBUSY); /* no READ credit */
	ck_assert_int_eq(mrc_conn_post_send(x.a->conn, &wr), 0);
	ck_assert_int_eq(mrc_conn_set_send(x.a->conn, 3, 1000000, 7, 4), -EBUSY);
	xfer_free(&x);
}
END_TEST

/* Malformed and misaddressed datagrams are counted and change nothing. */
START_TEST(mrc_conn__malformed_input_is_counted_and_harmless)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct xfer x;
	struct mrc_rx_info rx = { 0 };
	uint8_t junk[200];

	sim_config_default(&sc);
	mrc_conn_config_default(&cc);
	xfer_init(&x, &sc, &cc, 1, 1 << 16);
	for (unsigned i = 0; i < 1000; i++) {
		size_t len = sim_random(x.sim) % sizeof(junk);

		for (size_t k = 0; k < len; k++)
			junk[k] = (uint8_t)sim_random(x.sim);
		ck_assert_int_ne(mrc_conn_recv(x.b->conn, &rx, junk, len, 0), MRC_DROP_NONE);
	}
	ck_assert_uint_eq(mrc_conn_stats(x.b->conn)->rx_packets, 1000);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_RTS);
	xfer_post(&x, MRC_WR_WRITE, 1 << 16, 0);
	xfer_run(&x, 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* Incast: 8 senders into one receiver with a rate hint; all finish, each gets a fair share
 * of the receiver's capacity. */
START_TEST(mrc_conn__incast_rate_hint_shares_fairly)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;
	struct sim_endpoint *snd[8], *rcv[8];
	static uint8_t src[8][1 << 20], dst[8][1 << 20];
	uint64_t done_at[8] = { 0 }, first = UINT64_MAX, last = 0;

	sim_config_default(&sc);
	sc.hosts = 9;
	sc.rx_capacity_kbps = 95000000; /* payload share of the 100 Gbit/s downlink */
	mrc_conn_config_default(&cc);
	cc.rto.min_rto_ns = 50000;
	sim = sim_new(&sc);
	for (unsigned i = 0; i < 8; i++) {
		struct mrc_send_wr wr = { .wr_id = i, .opcode = MRC_WR_WRITE, .num_sge = 1,
					  .flags = MRC_SEND_SIGNALED };

		sim_connect(sim, 1 + i, 0, &cc, 4, &snd[i], &rcv[i]);
		memset(src[i], 0x30 + i, sizeof(src[i]));
		wr.sge[0] = (struct mrc_sge){ src[i], 0, sizeof(src[i]), 0 };
		wr.rkey = sim_register(rcv[i], dst[i], sizeof(dst[i]), MRC_ACCESS_REMOTE_WRITE);
		wr.raddr = (uintptr_t)dst[i];
		ck_assert_int_eq(mrc_conn_post_send(snd[i]->conn, &wr), 0);
		snd[i]->dirty = true;
	}
	while (last == 0 || first == UINT64_MAX) {
		bool all = true;

		sim_run(sim, sim->now_ns + 20000, NULL, NULL);
		for (unsigned i = 0; i < 8; i++) {
			if (snd[i]->send_completions && !done_at[i])
				done_at[i] = sim->now_ns;
			all &= done_at[i] != 0;
		}
		if (all) {
			for (unsigned i = 0; i < 8; i++) {
				first = done_at[i] < first ? done_at[i] : first;
				last = done_at[i] > last ? done_at[i] : last;
			}
		}
		ck_assert_uint_lt(sim->now_ns, 1000000000ull);
	}
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_uint_eq(snd[i]->errors, 0);
		ck_assert(!memcmp(src[i], dst[i], sizeof(src[i])));
	}
	/* fair: the first and the last finish close together (8 MiB at 100 Gbit/s ~ 0.7 ms) */
	ck_assert_msg(last - first < (last / 4), "first %.3f ms, last %.3f ms", first / 1e6,
		      last / 1e6);
	sim_free(sim);
}
END_TEST

Suite *conn_suite(void)
{
	Suite *s = suite_create("conn");
	TCase *prop = tcase_create("property");
	TCase *paths = tcase_create("paths");
	TCase *errors = tcase_create("errors");

	tcase_add_loop_test(prop, mrc_conn__property_clean_fabric, 0, 4);
	tcase_add_loop_test(prop, mrc_conn__property_random_loss_reorder_duplicates, 0, 8);
	tcase_add_loop_test(prop, mrc_conn__property_burst_loss_and_corruption, 0, 8);
	tcase_add_loop_test(prop, mrc_conn__property_fast_path_placement, 0, 8);
	tcase_add_test(prop, mrc_conn__placed_payloads_are_not_copied);
	tcase_add_loop_test(prop, mrc_conn__property_rocev2_baseline_under_loss, 0, 4);
	tcase_add_test(prop, mrc_conn__sixteen_mib_write_and_read_exact);
	tcase_add_loop_test(prop, mrc_conn__small_odd_queue_reused_with_reads, 0, 4);
	tcase_add_test(prop, mrc_conn__corruption_never_placed);
	tcase_set_timeout(prop, 300);
	suite_add_tcase(s, prop);

	tcase_add_test(paths, mrc_conn__unequal_paths_no_spurious_retransmit);
	tcase_add_test(paths, mrc_conn__blackholed_path_fails_over);
	tcase_add_test(paths, mrc_conn__incast_rate_hint_shares_fairly);
	tcase_set_timeout(paths, 120);
	suite_add_tcase(s, paths);

	tcase_add_test(errors, mrc_conn__total_blackout_retry_exceeded);
	tcase_add_test(errors, mrc_conn__peer_stall_within_retry_budget);
	tcase_add_test(errors, mrc_conn__retry_budget_runs_on_the_timeout);
	tcase_add_test(errors, mrc_conn__retry_timeout_zero_never_gives_up);
	tcase_add_test(errors, mrc_conn__data_dark_peer_retry_budget_and_backoff);
	tcase_add_test(errors, mrc_conn__read_response_that_never_comes_retry_exceeded);
	tcase_add_test(errors, mrc_conn__data_dark_peer_resends_back_off);
	tcase_add_test(errors, mrc_conn__bad_rkey_remote_access_error);
	tcase_add_test(errors, mrc_conn__remote_access_status_on_culprit);
	tcase_add_test(errors, mrc_conn__send_longer_than_receive);
	tcase_add_test(errors, mrc_conn__rnr_then_success);
	tcase_add_test(errors, mrc_conn__long_rnr_wait_succeeds);
	tcase_add_test(errors, mrc_conn__two_rnr_waits_both_resent);
	tcase_add_test(errors, mrc_conn__two_sends_wait_long_for_receives);
	tcase_add_test(errors, mrc_conn__repaired_loss_leaves_paths_healthy);
	tcase_add_test(errors, mrc_conn__post_after_error_flushes);
	tcase_add_test(errors, mrc_conn__malformed_input_is_counted_and_harmless);
	tcase_add_test(errors, mrc_conn__initial_psn_from_qpn_pair);
	tcase_add_test(errors, mrc_conn__send_settings_only_before_first_request);
	tcase_set_timeout(errors, 60);
	suite_add_tcase(s, errors);
	return s;
}
