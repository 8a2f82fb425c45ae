/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Two engine connections over the virtual-time network moving a list of operations, each byte
 * and completion checked as it comes: what test_conn.c and test_conn_errors.c drive.
 */
#ifndef METAROCE_TESTS_UNIT_CONN_XFER_H
#define METAROCE_TESTS_UNIT_CONN_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/netsim.h"

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

void fill_pattern(uint8_t *p, size_t n, uint64_t seed);
void note_failure(struct xfer *x, const char *why, unsigned i);
/* a and b connected with paths_per_plane paths on each plane, size bytes of memory each */
void xfer_init(struct xfer *x, const struct sim_config *sc, const struct mrc_conn_config *cc,
	       unsigned paths_per_plane, size_t size);
void xfer_free(struct xfer *x);
void xfer_post(struct xfer *x, uint8_t opcode, uint32_t len, uint32_t imm);
/* sim_run stop conditions: every operation done (or failed); a first send completion */
bool all_done(struct sim *sim, void *arg);
bool writes_done(struct sim *sim, void *arg);
void print_drops(const char *who, const struct sim_endpoint *ep);
/* Runs until the requester has packets in flight and some acknowledged: a transfer to
 * attack. Fails the test if that never comes. */
void xfer_run_to_midway(struct xfer *x);
/* Runs until all_done or limit_ns; fails the test on a failure or a timeout. */
void xfer_run(struct xfer *x, uint64_t limit_ns);
uint32_t pick_len(struct sim *sim, uint32_t max);
/* Every core link of every plane impaired as p says, each a little longer than the last. */
void impair_core(struct sim *sim, const struct sim_stage_params *p);

#endif
