/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine report's failover cases: one core link blackholed under a QP's paths, and a
 * whole plane of four. Goodput is measured over windows of 2 base RTTs for 300 base RTTs
 * after the blackhole; recovered means at the end of the last window under 90% of what the
 * surviving capacity carried before (0: none was). Looking that far catches a stall that
 * comes late: lost packets the sender never resends hold its 256-PSN window, and the QP
 * stops some 12 RTTs after the paths that took the rest had looked fine.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine_report.h"

#define BLACKHOLE_AT_NS 200000ull
#define HORIZON_WINDOWS 150 /* of 2 base RTTs */

static double recover_rtts(struct run *r, double target_per_ns)
{
	uint64_t window = (uint64_t)(2 * BASE_RTT_NS), prev = report_placed(r->b);
	int last_bad = 0;

	for (int step = 1; step <= HORIZON_WINDOWS && !r->a->send_completions; step++) {
		uint64_t b;

		sim_run(r->sim, BLACKHOLE_AT_NS + step * window, NULL, NULL);
		if (r->a->send_completions)
			break; /* the transfer's tail is no failure */
		b = report_placed(r->b);
		if ((double)(b - prev) / window < 0.9 * target_per_ns)
			last_bad = step;
		prev = b;
	}
	sim_run(r->sim, 60ull * 1000000000ull, report_run_sent, r);
	if (r->a->errors || !r->a->send_completions) {
		fprintf(stderr, "engine-report: a transfer failed over a blackhole\n");
		exit(1);
	}
	return last_bad * window / BASE_RTT_NS;
}

/* Bytes per ns placed over the 100 us before the blackhole. */
static double rate_before(struct run *r)
{
	uint64_t prev;

	sim_run(r->sim, BLACKHOLE_AT_NS - 100000, NULL, NULL);
	prev = report_placed(r->b);
	sim_run(r->sim, BLACKHOLE_AT_NS, NULL, NULL);
	return (double)(report_placed(r->b) - prev) / 100000.0;
}

/*
 * One 64 MiB WRITE over 4 paths of one plane; 0.2 ms in, the core link that path 0 hashes
 * onto goes dark, with every path that shares it. The 3 others carry the host link's rate.
 */
double report_link_blackhole(uint64_t seed, uint64_t min_rto_ns, unsigned *paths_hit)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run r;
	unsigned dark;
	double before, rtts;

	sim_config_default(&sc);
	sc.seed = seed;
	report_base_config(&cc, MRC_MODE_METAROCE);
	if (min_rto_ns)
		cc.rto.min_rto_ns = min_rto_ns;
	report_run_open(&r, &sc, &cc, 4, 64u << 20);
	before = rate_before(&r);
	dark = sim_core_link_of(r.sim, 0, 1, mrc_conn_path(r.a->conn, 0)->sport);
	sim_core(r.sim, 0, dark)->p.blackhole = true;
	*paths_hit = 0;
	for (unsigned i = 0; i < mrc_conn_n_paths(r.a->conn); i++)
		*paths_hit += sim_core_link_of(r.sim, 0, 1, mrc_conn_path(r.a->conn, i)->sport) ==
			      dark;
	rtts = recover_rtts(&r, before);
	report_run_close(&r, true);
	return rtts;
}

/*
 * One 128 MiB WRITE over 4 planes of 4 paths each; 0.2 ms in, every core link of plane 0
 * goes dark. The 3 surviving planes' host links carry three quarters of the rate before.
 */
double report_plane_blackhole(uint64_t seed)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run r;
	double before, rtts;

	sim_config_default(&sc);
	sc.seed = seed;
	sc.planes = 4;
	report_base_config(&cc, MRC_MODE_METAROCE);
	report_run_open(&r, &sc, &cc, 4, 128u << 20);
	before = rate_before(&r);
	for (unsigned l = 0; l < sc.core_links; l++)
		sim_core(r.sim, 0, l)->p.blackhole = true;
	rtts = recover_rtts(&r, before * 3 / 4);
	report_run_close(&r, true);
	return rtts;
}
