/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * make engine-report: the engine's behaviour in virtual time, side by side with the RoCEv2
 * baseline, on the simulated fabric of tests/harness (100 Gbit/s host links, 400 Gbit/s
 * core, 6 us unloaded RTT, ECN above 64 KiB, 1 MiB buffers). Every figure is the median of
 * several seeds. Writes the table to stdout and the figures to the JSON file named on the
 * command line. Virtual-time figures do not depend on the machine; ns_per_packet does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_report.h"

#define SEEDS 7

static const double loss_rates[] = { 0, 0.001, 0.01, 0.05, 0.1 };
#define N_LOSS (sizeof(loss_rates) / sizeof(loss_rates[0]))

double report_median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

double report_jain(const double *x, int n)
{
	double s = 0, s2 = 0;

	for (int i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

uint64_t report_placed(const struct sim_endpoint *ep)
{
	return mrc_conn_stats(ep->conn)->rx_placed_bytes;
}

void report_base_config(struct mrc_conn_config *cc, uint8_t mode)
{
	mrc_conn_config_default(cc);
	cc->mode = mode;
	/* Virtual time has no timer granularity: a datacenter RTO floor of 20 us (the default,
	 * 200 us, suits an epoll daemon). */
	cc->rto.min_rto_ns = 20000;
	/* The baseline's one path starts with the whole initial window of a 4-path QP, so both
	 * modes put the same bytes in flight in the first round trip. */
	if (mode == MRC_MODE_ROCEV2)
		cc->cc.init_cwnd *= 4;
}

void report_run_start(struct run *r, struct sim *sim, unsigned host_a, unsigned host_b,
		      const struct mrc_conn_config *cc, unsigned paths_per_plane, uint32_t len)
{
	struct mrc_send_wr wr = { .wr_id = 1, .opcode = MRC_WR_WRITE, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	r->sim = sim;
	sim_connect(sim, host_a, host_b, cc, paths_per_plane, &r->a, &r->b);
	r->len = len;
	r->src = malloc(len);
	r->dst = calloc(1, len);
	if (!r->src || !r->dst)
		abort();
	for (uint32_t i = 0; i < len; i++)
		r->src[i] = (uint8_t)(i * 131 + 7 + host_a);
	wr.sge[0] = (struct mrc_sge){ r->src, 0, len, 0 };
	wr.rkey = sim_register(r->b, r->dst, len, MRC_ACCESS_REMOTE_WRITE);
	wr.raddr = (uintptr_t)r->dst;
	if (mrc_conn_post_send(r->a->conn, &wr))
		abort();
	r->a->dirty = true;
}

void report_run_open(struct run *r, const struct sim_config *sc, const struct mrc_conn_config *cc,
		     unsigned paths_per_plane, uint32_t len)
{
	report_run_start(r, sim_new(sc), 0, 1, cc, paths_per_plane, len);
}

void report_run_close(struct run *r, bool owner)
{
	if (memcmp(r->src, r->dst, r->len) != 0) {
		fprintf(stderr, "engine-report: data mismatch: the engine corrupted a transfer\n");
		exit(1);
	}
	if (owner)
		sim_free(r->sim);
	free(r->src);
	free(r->dst);
}

bool report_run_sent(struct sim *sim, void *arg)
{
	struct run *r = arg;

	(void)sim;
	return r->a->send_completions > 0;
}

/* Goodput of one 32 MiB WRITE over 4 paths with random loss on every core link. */
static double goodput_gbps(uint8_t mode, double loss, uint64_t seed)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run r;
	double gbps;

	sim_config_default(&sc);
	sc.seed = seed;
	sc.core.loss = loss;
	report_base_config(&cc, mode);
	report_run_open(&r, &sc, &cc, 4, 32u << 20);
	sim_run(r.sim, 60ull * 1000000000ull, report_run_sent, &r);
	if (r.a->errors || !r.a->send_completions) {
		fprintf(stderr, "engine-report: transfer failed (mode %u, loss %g)\n", mode, loss);
		exit(1);
	}
	gbps = r.len * 8.0 / (double)r.sim->now_ns;
	report_run_close(&r, true);
	return gbps;
}

/* Retransmissions per data packet over 4 paths of 1, 11, 21 and 31 us, no loss. */
static double spurious_fraction(uint64_t seed)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run r;
	double f;

	sim_config_default(&sc);
	sc.seed = seed;
	report_base_config(&cc, MRC_MODE_METAROCE);
	report_run_open(&r, &sc, &cc, 8, 32u << 20);
	for (unsigned l = 0; l < sc.core_links; l++)
		sim_core(r.sim, 0, l)->p.delay_ns = 1000 + 10000 * l;
	sim_run(r.sim, 60ull * 1000000000ull, report_run_sent, &r);
	f = (double)mrc_conn_stats(r.a->conn)->tx_retransmits /
	    (double)mrc_conn_stats(r.a->conn)->tx_data_packets;
	report_run_close(&r, true);
	return f;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cost_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		       uint8_t **host)
{
	(void)key;
	(void)access;
	(void)len;
	*host = (uint8_t *)user + (addr & 0xfffff);
	return 0;
}

static void cost_complete(void *user, bool from_recv, const struct mrc_completion *wc)
{
	(void)user;
	(void)from_recv;
	(void)wc;
}

/*
 * CPU cost of the engine alone: two connections wired back to back in memory, no network,
 * no simulator. Counts everything both ends do per data packet: building and checksumming
 * it, decoding and verifying it, placing its payload, and generating and processing ACKs.
 */
static double ns_per_packet(uint16_t payload, uint64_t *packets_out)
{
	static uint8_t src[1 << 20], dst[1 << 21];
	static const struct mrc_conn_callbacks cb = {
		.mr_lookup = cost_lookup,
		.complete = cost_complete,
	};
	struct mrc_conn_config cc;
	struct mrc_conn *a, *b;
	uint8_t buf[9216];
	uint64_t now = 1, t0, packets = 0;
	struct mrc_tx_info tx;
	struct mrc_rx_info rx = { 0 };
	size_t len;

	mrc_conn_config_default(&cc);
	cc.max_payload = payload;
	cc.n_paths = 4;
	cc.sq_depth = 1024;
	for (unsigned i = 0; i < 4; i++)
		cc.paths[i] = (struct mrc_path_config){ 0, (uint16_t)(50000 + i) };
	cc.local_qpn = 1;
	cc.remote_qpn = 2;
	a = mrc_conn_new(&cc, &cb, dst, 0);
	cc.local_qpn = 2;
	cc.remote_qpn = 1;
	b = mrc_conn_new(&cc, &cb, dst, 0);
	if (!a || !b)
		abort();
	t0 = mono_ns();
	for (int round = 0; round < 64; round++) {
		struct mrc_send_wr wr = { .opcode = MRC_WR_WRITE, .num_sge = 1, .rkey = 1 };

		wr.sge[0] = (struct mrc_sge){ src, 0, sizeof(src), 0 };
		if (mrc_conn_post_send(a, &wr))
			abort();
		while (!mrc_conn_send_idle(a)) {
			bool moved = false;

			now += 100;
			while (mrc_conn_send(a, buf, sizeof(buf), &tx, now, &len)) {
				mrc_conn_recv(b, &rx, buf, len, now);
				packets++;
				moved = true;
			}
			while (mrc_conn_send(b, buf, sizeof(buf), &tx, now, &len)) {
				mrc_conn_recv(a, &rx, buf, len, now);
				moved = true;
			}
			if (!moved) {
				now = mrc_conn_next_timeout(a) < mrc_conn_next_timeout(b)
					      ? mrc_conn_next_timeout(a)
					      : mrc_conn_next_timeout(b);
				mrc_conn_on_timeout(a, now);
				mrc_conn_on_timeout(b, now);
			}
		}
	}
	*packets_out = packets;
	t0 = mono_ns() - t0;
	mrc_conn_free(a);
	mrc_conn_free(b);
	return (double)t0 / (double)packets;
}

/* The median over SEEDS seeds of an incast case; peak: the highest queue any seed saw. */
static struct incast_result incast_median(unsigned n, uint64_t seed0)
{
	struct incast_result r = { 0, 0, 0 };
	double v[SEEDS];

	for (int s = 0; s < SEEDS; s++) {
		struct incast_result one = report_incast(n, seed0 + s);

		/* not converged within the run counts as the slowest */
		v[s] = one.converge_rtts < 0 ? 1e9 : one.converge_rtts;
		r.peak_queue_kib = one.peak_queue_kib > r.peak_queue_kib ? one.peak_queue_kib
									: r.peak_queue_kib;
		r.fair_window_rtts = one.fair_window_rtts;
	}
	r.converge_rtts = report_median(v, SEEDS);
	if (r.converge_rtts >= 1e9)
		r.converge_rtts = -1;
	return r;
}

static size_t footprint_at_depth_16(void)
{
	static const struct mrc_conn_callbacks cb = {
		.mr_lookup = cost_lookup,
		.complete = cost_complete,
	};
	struct mrc_conn_config cc;
	struct mrc_conn *c;
	size_t footprint;

	mrc_conn_config_default(&cc);
	cc.local_qpn = cc.remote_qpn = 1;
	cc.sq_depth = cc.rq_depth = 16;
	cc.max_dest_rd_atomic = 1;
	c = mrc_conn_new(&cc, &cb, NULL, 0);
	footprint = mrc_conn_footprint(c);
	mrc_conn_free(c);
	return footprint;
}

static void print_incast(unsigned n, const struct incast_result *r)
{
	printf("incast %u->1 with rate hints: fair (Jain >= 0.95 over %u RTTs) and queue < ECN "
	       "threshold ",
	       n, r->fair_window_rtts);
	if (r->converge_rtts < 0)
		printf("not reached in the run");
	else
		printf("from %.0f RTTs", r->converge_rtts);
	printf(" (peak queue %.0f KiB)\n", r->peak_queue_kib);
}

#define RAMP_RTTS 8
#define SLOW_RTO_NS 1000000 /* an RTO floor of 1 ms: 140 unloaded RTTs */

int main(int argc, char **argv)
{
	const char *json_path = argc > 1 ? argv[1] : "build/engine-report.json";
	double gp[2][N_LOSS], kept[2][N_LOSS], v[SEEDS], spurious, blackhole, plane, victim;
	double slow_rto_blackhole;
	double ramp[RAMP_RTTS] = { 0 }, one_ramp[SEEDS][RAMP_RTTS];
	struct incast_result in16, in64;
	double ns4k, ns256;
	uint64_t pk4k, pk256;
	size_t footprint;
	unsigned paths_hit[SEEDS];
	FILE *json;

	for (int mode = 0; mode < 2; mode++) {
		for (size_t l = 0; l < N_LOSS; l++) {
			for (int s = 0; s < SEEDS; s++)
				v[s] = goodput_gbps((uint8_t)mode, loss_rates[l], 100 + s);
			gp[mode][l] = report_median(v, SEEDS);
			kept[mode][l] = gp[mode][l] / gp[mode][0];
		}
	}
	for (int s = 0; s < SEEDS; s++)
		v[s] = spurious_fraction(200 + s);
	spurious = report_median(v, SEEDS);
	in16 = incast_median(16, 300);
	in64 = incast_median(64, 350);
	for (int s = 0; s < SEEDS; s++)
		v[s] = report_victim_kept(500 + s);
	victim = report_median(v, SEEDS);
	for (int s = 0; s < SEEDS; s++)
		report_first_rtts(600 + s, one_ramp[s], RAMP_RTTS);
	for (int k = 0; k < RAMP_RTTS; k++) {
		for (int s = 0; s < SEEDS; s++)
			v[s] = one_ramp[s][k];
		ramp[k] = report_median(v, SEEDS);
	}
	for (int s = 0; s < SEEDS; s++)
		v[s] = report_link_blackhole(400 + s, 0, &paths_hit[s]);
	blackhole = report_median(v, SEEDS);
	for (int s = 0; s < SEEDS; s++) {
		unsigned hit;

		v[s] = report_link_blackhole(400 + s, SLOW_RTO_NS, &hit);
	}
	slow_rto_blackhole = report_median(v, SEEDS);
	for (int s = 0; s < SEEDS; s++)
		v[s] = report_plane_blackhole(450 + s);
	plane = report_median(v, SEEDS);
	ns4k = ns_per_packet(4096, &pk4k);
	ns256 = ns_per_packet(256, &pk256);
	footprint = footprint_at_depth_16();

	printf("metaroce engine report (virtual time, simulated 100 Gbit/s fabric, median of %d "
	       "seeds)\n\n",
	       SEEDS);
	printf("goodput, one QP, 4 paths, random loss on every core link\n");
	printf("  %-8s %22s %22s %10s\n", "loss", "MetaRoCE Gbit/s (kept)", "RoCEv2 Gbit/s (kept)",
	       "ratio");
	for (size_t l = 0; l < N_LOSS; l++)
		printf("  %-7.1f%% %14.1f (%5.1f%%) %14.1f (%5.1f%%) %9.2fx\n", loss_rates[l] * 100,
		       gp[0][l], kept[0][l] * 100, gp[1][l], kept[1][l] * 100, gp[0][l] / gp[1][l]);
	printf("  (bottleneck: 100 Gbit/s host link; 4096-byte payloads)\n\n");
	printf("spurious retransmissions, 4 paths of 1/11/21/31 us, no loss: %.4f%% of packets\n",
	       spurious * 100);
	print_incast(16, &in16);
	print_incast(64, &in64);
	printf("victim flow beside a 16->1 incast, through the same core: %.1f%% of its goodput "
	       "kept\n",
	       victim * 100);
	printf("lone QP, share of its link per RTT from its first arrival:");
	for (int k = 0; k < RAMP_RTTS; k++)
		printf(" %.2f", ramp[k]);
	printf("\n");
	printf("core link under path 0 blackholed mid-transfer (paths dark per seed:");
	for (int s = 0; s < SEEDS; s++)
		printf(" %u", paths_hit[s]);
	printf(" of 4): goodput back to >= 90%% after %.1f RTTs\n", blackhole);
	printf("the same with every RTO at least 1 ms (a slow receiver inflated them): back after "
	       "%.1f RTTs\n",
	       slow_rto_blackhole);
	printf("one plane of 4 blackholed mid-transfer: goodput back to >= 90%% of the other 3 "
	       "planes' share after %.1f RTTs\n",
	       plane);
	printf("engine CPU cost, both ends, per data packet: %.0f ns at 4096 B, %.0f ns at 256 B "
	       "(%llu and %llu packets)\n",
	       ns4k, ns256, (unsigned long long)pk4k, (unsigned long long)pk256);
	printf("engine state per QP (sq/rq depth 16): %zu bytes\n", footprint);
	printf("(RTT = %.0f ns unloaded; RTO floor 20 us in this report)\n", BASE_RTT_NS);

	json = fopen(json_path, "w");
	if (!json) {
		perror(json_path);
		return 1;
	}
	fprintf(json, "{\"goodput_kept\": {");
	for (int mode = 0; mode < 2; mode++) {
		fprintf(json, "%s\"%s\": {", mode ? ", " : "", mode ? "rocev2" : "metaroce");
		for (size_t l = 1; l < N_LOSS; l++)
			fprintf(json, "%s\"%g\": %.4f", l > 1 ? ", " : "", loss_rates[l],
				kept[mode][l]);
		fprintf(json, "}");
	}
	fprintf(json, "}, \"goodput_gbps\": {");
	for (int mode = 0; mode < 2; mode++) {
		fprintf(json, "%s\"%s\": {", mode ? ", " : "", mode ? "rocev2" : "metaroce");
		for (size_t l = 0; l < N_LOSS; l++)
			fprintf(json, "%s\"%g\": %.3f", l ? ", " : "", loss_rates[l], gp[mode][l]);
		fprintf(json, "}");
	}
	fprintf(json, "}, \"first_rtts\": [");
	for (int k = 0; k < RAMP_RTTS; k++)
		fprintf(json, "%s%.4f", k ? ", " : "", ramp[k]);
	fprintf(json,
		"], \"spurious_retransmit_fraction\": %.6f, \"incast_converge_rtts\": %.2f, "
		"\"incast_peak_queue_kib\": %.0f, \"incast64_converge_rtts\": %.2f, "
		"\"incast64_peak_queue_kib\": %.0f, \"victim_kept\": %.4f, "
		"\"first_rtt_goodput\": %.4f, \"blackhole_recover_rtts\": %.2f, "
		"\"slow_rto_blackhole_recover_rtts\": %.2f, "
		"\"plane_blackhole_recover_rtts\": %.2f, \"ns_per_packet\": %.1f, "
		"\"ns_per_packet_256\": %.1f, \"bytes_per_qp\": %zu}\n",
		spurious, in16.converge_rtts, in16.peak_queue_kib, in64.converge_rtts,
		in64.peak_queue_kib, victim, ramp[0], blackhole, slow_rto_blackhole, plane, ns4k, ns256,
		footprint);
	fclose(json);
	return 0;
}
