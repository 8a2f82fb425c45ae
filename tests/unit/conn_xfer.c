/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The two-connection transfer the engine's tests drive (conn_xfer.h). */
#include "conn_xfer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

void note_failure(struct xfer *x, const char *why, unsigned i)
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

void xfer_init(struct xfer *x, const struct sim_config *sc, const struct mrc_conn_config *cc,
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

void xfer_free(struct xfer *x)
{
	sim_free(x->sim);
	free(x->a_src);
	free(x->b_src);
	free(x->a_sink);
	free(x->b_dst);
	free(x->b_rcv);
}

/* Posts one op; every op has its own disjoint region in each buffer. */
void xfer_post(struct xfer *x, uint8_t opcode, uint32_t len, uint32_t imm)
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

bool all_done(struct sim *sim, void *arg)
{
	struct xfer *x = arg;

	(void)sim;
	return x->failed || (x->send_done_count == x->n_ops && x->recv_seen == x->n_recv_ops &&
			     mrc_conn_send_idle(x->a->conn) && mrc_conn_send_idle(x->b->conn));
}

/* Which refusals each side counted: the first thing to read when a run goes wrong. */
void print_drops(const char *who, const struct sim_endpoint *ep)
{
	fprintf(stderr, "%s: state %d, drops:", who, mrc_conn_state(ep->conn));
	for (int r = 1; r <= MRC_DROP_REASON_MAX; r++)
		if (ep->drops[r])
			fprintf(stderr, " %d=%llu", r, (unsigned long long)ep->drops[r]);
	fprintf(stderr, "\n");
}

void xfer_run(struct xfer *x, uint64_t limit_ns)
{
	sim_run(x->sim, x->sim->now_ns + limit_ns, all_done, x);
	if (x->failed || !all_done(x->sim, x)) {
		print_drops("requester", x->a);
		print_drops("responder", x->b);
	}
	ck_assert_msg(!x->failed, "%s", x->why);
	ck_assert_msg(all_done(x->sim, x), "not done at %.3f ms: %u/%u sends, %u/%u receives",
		      x->sim->now_ns / 1e6, x->send_done_count, x->n_ops, x->recv_seen,
		      x->n_recv_ops);
	ck_assert_int_eq(mrc_conn_state(x->a->conn), MRC_QPS_RTS);
	ck_assert_int_eq(mrc_conn_state(x->b->conn), MRC_QPS_RTS);
	ck_assert_uint_eq(x->a->errors + x->b->errors, 0);
}

uint32_t pick_len(struct sim *sim, uint32_t max)
{
	static const uint32_t edges[] = { 0, 1, 255, 4095, 4096, 4097, 8192, 65536 };
	uint64_t r = sim_random(sim);

	if (r % 3 == 0)
		return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))] % (max + 1);
	return (uint32_t)((r >> 16) % (max + 1));
}

void impair_core(struct sim *sim, const struct sim_stage_params *p)
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

bool writes_done(struct sim *sim, void *arg)
{
	struct xfer *x = arg;

	(void)sim;
	return x->failed || x->send_done_count >= 1;
}

static bool midway(struct sim *sim, void *arg)
{
	struct xfer *x = arg;
	struct mrc_conn_info info;

	(void)sim;
	mrc_conn_get_info(x->a->conn, &info);
	return info.snd_nxt - info.snd_una > 8 && mrc_conn_stats(x->a->conn)->rx_packets > 16;
}

void xfer_run_to_midway(struct xfer *x)
{
	sim_run(x->sim, x->sim->now_ns + 1000000000ull, midway, x);
	ck_assert_msg(midway(x->sim, x), "no transfer in flight to attack");
}
