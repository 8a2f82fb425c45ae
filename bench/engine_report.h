/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine report's cases (bench/engine_report.c and the files beside it), all driving the
 * real engine through the simulated fabric of tests/harness in virtual time.
 */
#ifndef METAROCE_BENCH_ENGINE_REPORT_H
#define METAROCE_BENCH_ENGINE_REPORT_H

#include <stdint.h>

#include "harness/netsim.h"

#define BASE_RTT_NS 7000.0 /* 6 us of propagation plus serialization of one packet */

/* One QP's transfer: a WRITE of len bytes from a to b, checked byte for byte at the end. */
struct run {
	struct sim *sim;
	struct sim_endpoint *a, *b;
	uint8_t *src, *dst;
	uint32_t len;
};

/* Engine defaults with the report's RTO floor; the baseline gets a 4-path QP's first window. */
void report_base_config(struct mrc_conn_config *cc, uint8_t mode);
/* Connects hosts a and b of an existing simulation and posts the WRITE. */
void report_run_start(struct run *r, struct sim *sim, unsigned host_a, unsigned host_b,
		      const struct mrc_conn_config *cc, unsigned paths_per_plane, uint32_t len);
/* A fresh simulation with one transfer from host 0 to host 1. */
void report_run_open(struct run *r, const struct sim_config *sc, const struct mrc_conn_config *cc,
		     unsigned paths_per_plane, uint32_t len);
/* Checks the bytes and frees the transfer (and, owner, the simulation). */
void report_run_close(struct run *r, bool owner);
bool report_run_sent(struct sim *sim, void *arg);

double report_median(double *v, int n);
double report_jain(const double *x, int n);
/* Payload bytes the receiving end of a QP has placed so far. */
uint64_t report_placed(const struct sim_endpoint *ep);

/* --- report_incast.c --------------------------------------------------------------------- */

struct incast_result {
	double converge_rtts;	/* -1: not within the run */
	double peak_queue_kib;
	unsigned fair_window_rtts;
};

/* n senders start a WRITE into one receiver at once (SPEC 8: ). */
struct incast_result report_incast(unsigned n, uint64_t seed);
/* A flow between two other hosts, through the same core, during a 16:1 incast: its goodput
 * as a fraction of what it moves over the same interval with no incast. */
double report_victim_kept(uint64_t seed);
/* A lone QP's first round trips: payload placed in each base RTT from its first arrival, as
 * a fraction of what the receiver's link carries in one (ramp[0] is the first RTT). */
void report_first_rtts(uint64_t seed, double *ramp, unsigned n_rtts);

/* --- report_failover.c ------------------------------------------------------------------- */

/* The core link under path 0 blackholed: RTTs to 90% of the goodput before; *paths_hit the
 * paths it took. min_rto_ns: the RTO floor (0: the report's), high to play a receiver whose
 * slowness inflated every RTO. */
double report_link_blackhole(uint64_t seed, uint64_t min_rto_ns, unsigned *paths_hit);
/* One plane of four blackholed: RTTs to 90% of the surviving planes' share of it. */
double report_plane_blackhole(uint64_t seed);

#endif /* METAROCE_BENCH_ENGINE_REPORT_H */
