/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine report's incast cases: N:1 convergence, a victim flow beside a 16:1 incast, and
 * what a lone QP moves in its first round trips (the cost a cautious first window would pay).
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine_report.h"

#define INCAST_BYTES (2u << 20)
#define RX_CAPACITY_KBPS 95000000ull /* the receivers' rate-hint capacity: 95% of the link */
#define LINK_BPS 100000000000.0
#define MAX_STEPS 6000
#define FAIR_PACKETS 8 /* a fairness window holds this many fair-share packets per sender */

/*
 * Converged at step t when, over the window (t, t + W] that follows, the receiver's queue is
 * under the ECN threshold at every step and the bytes each sender placed are fair (Jain >=
 * 0.95). W holds FAIR_PACKETS packets of a fair share per sender: at 64 senders a share is a
 * third of a packet per RTT, and a shorter window would measure packet granularity.
 */
static double converge_step(uint64_t *placed, const uint64_t *backlog, unsigned steps, unsigned n,
			    unsigned window, uint32_t ecn_bytes)
{
	double *share = malloc(n * sizeof(*share));
	double result = -1;

	if (!share)
		abort();
	for (unsigned t = 0; t + window < steps && result < 0; t++) {
		bool low = true;

		for (unsigned s = t + 1; s <= t + window && low; s++)
			low = backlog[s] < ecn_bytes;
		if (!low)
			continue;
		for (unsigned i = 0; i < n; i++)
			share[i] = (double)(placed[(t + window) * n + i] - placed[t * n + i]);
		if (report_jain(share, (int)n) >= 0.95)
			result = t;
	}
	free(share);
	return result;
}

struct incast_result report_incast(unsigned n, uint64_t seed)
{
	struct incast_result res = { -1, 0, 0 };
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run *runs = calloc(n, sizeof(*runs));
	uint64_t *placed = calloc((size_t)MAX_STEPS * n, sizeof(*placed));
	uint64_t *backlog = calloc(MAX_STEPS, sizeof(*backlog));
	double pkts_per_rtt = RX_CAPACITY_KBPS * 1000.0 * BASE_RTT_NS / 1e9 / 8 / 4096;
	struct sim *sim;
	unsigned steps = 0;
	bool any_done = false;

	if (!runs || !placed || !backlog)
		abort();
	sim_config_default(&sc);
	sc.hosts = n + 1;
	sc.seed = seed;
	sc.rx_capacity_kbps = RX_CAPACITY_KBPS;
	report_base_config(&cc, MRC_MODE_METAROCE);
	sim = sim_new(&sc);
	for (unsigned i = 0; i < n; i++)
		report_run_start(&runs[i], sim, 1 + i, 0, &cc, 4, INCAST_BYTES);
	res.fair_window_rtts = (unsigned)(FAIR_PACKETS * n / pkts_per_rtt + 0.999);
	if (res.fair_window_rtts < 8)
		res.fair_window_rtts = 8;
	/* Recorded until the first sender is done: from then on the rest share more. */
	for (steps = 0; steps < MAX_STEPS && !any_done; steps++) {
		const struct sim_stage *q = &sim->downlink[0][0];

		sim_run(sim, (uint64_t)(steps * BASE_RTT_NS), NULL, NULL);
		backlog[steps] = sim_stage_backlog(sim, q);
		if (backlog[steps] / 1024.0 > res.peak_queue_kib)
			res.peak_queue_kib = backlog[steps] / 1024.0;
		for (unsigned i = 0; i < n; i++) {
			placed[steps * n + i] = report_placed(runs[i].b);
			any_done |= runs[i].a->send_completions > 0;
		}
	}
	res.converge_rtts = converge_step(placed, backlog, steps, n, res.fair_window_rtts,
					  sim->downlink[0][0].p.ecn_bytes);
	for (unsigned i = 0; i < n; i++) {
		sim_run(sim, sim->now_ns + 1000000000ull, report_run_sent, &runs[i]);
		if (runs[i].a->errors || !runs[i].a->send_completions) {
			fprintf(stderr, "engine-report: incast transfer %u of %u failed\n", i, n);
			exit(1);
		}
		report_run_close(&runs[i], false);
	}
	sim_free(sim);
	free(runs);
	free(placed);
	free(backlog);
	return res;
}

#define VICTIM_START_RTTS 30 /* the victim runs at full rate before the incast begins */
#define VICTIM_WINDOW_RTTS 60

/* Bytes the victim (hosts 17 -> 18) places in the window, with or without 16 incast senders
 * (hosts 1..16 -> 0) starting at its beginning. */
static uint64_t victim_bytes(uint64_t seed, bool incast)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run victim, senders[16];
	uint64_t t0 = (uint64_t)(VICTIM_START_RTTS * BASE_RTT_NS), before, bytes;
	struct sim *sim;

	sim_config_default(&sc);
	sc.hosts = 19;
	sc.seed = seed;
	sc.rx_capacity_kbps = RX_CAPACITY_KBPS;
	report_base_config(&cc, MRC_MODE_METAROCE);
	sim = sim_new(&sc);
	report_run_start(&victim, sim, 17, 18, &cc, 4, 32u << 20);
	sim_run(sim, t0, NULL, NULL);
	before = report_placed(victim.b);
	for (unsigned i = 0; incast && i < 16; i++)
		report_run_start(&senders[i], sim, 1 + i, 0, &cc, 4, INCAST_BYTES);
	sim_run(sim, t0 + (uint64_t)(VICTIM_WINDOW_RTTS * BASE_RTT_NS), NULL, NULL);
	bytes = report_placed(victim.b) - before;
	sim_run(sim, sim->now_ns + 1000000000ull, report_run_sent, &victim);
	for (unsigned i = 0; incast && i < 16; i++) {
		sim_run(sim, sim->now_ns + 1000000000ull, report_run_sent, &senders[i]);
		report_run_close(&senders[i], false);
	}
	if (victim.a->errors || !victim.a->send_completions) {
		fprintf(stderr, "engine-report: the victim's transfer failed\n");
		exit(1);
	}
	report_run_close(&victim, false);
	sim_free(sim);
	return bytes;
}

double report_victim_kept(uint64_t seed)
{
	return (double)victim_bytes(seed, true) / (double)victim_bytes(seed, false);
}

static bool arrived(struct sim *sim, void *arg)
{
	(void)sim;
	return report_placed(((struct run *)arg)->b) > 0;
}

void report_first_rtts(uint64_t seed, double *ramp, unsigned n_rtts)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run r;
	uint64_t t_first, prev = 0;

	sim_config_default(&sc);
	sc.seed = seed;
	sc.rx_capacity_kbps = RX_CAPACITY_KBPS;
	report_base_config(&cc, MRC_MODE_METAROCE);
	report_run_open(&r, &sc, &cc, 4, 32u << 20);
	sim_run(r.sim, 1000000000ull, arrived, &r);
	t_first = r.sim->now_ns;
	for (unsigned k = 0; k < n_rtts; k++) {
		uint64_t b;

		sim_run(r.sim, t_first + (uint64_t)((k + 1) * BASE_RTT_NS), NULL, NULL);
		b = report_placed(r.b);
		ramp[k] = (double)(b - prev) * 8 / (LINK_BPS * BASE_RTT_NS / 1e9);
		prev = b;
	}
	sim_run(r.sim, r.sim->now_ns + 1000000000ull, report_run_sent, &r);
	report_run_close(&r, true);
}
