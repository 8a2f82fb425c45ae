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

#include "harness/netsim.h"

#define SEEDS 7
#define BASE_RTT_NS 7000.0 /* 6 us of propagation plus serialization of one packet */

static const double loss_rates[] = { 0, 0.001, 0.01, 0.05, 0.1 };
#define N_LOSS (sizeof(loss_rates) / sizeof(loss_rates[0]))

struct run {
	struct sim *sim;
	struct sim_endpoint *a, *b;
	uint8_t *src, *dst;
	uint32_t len;
};

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static void base_config(struct mrc_conn_config *cc, uint8_t mode)
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

static void run_open(struct run *r, const struct sim_config *sc, const struct mrc_conn_config *cc,
		     unsigned paths_per_plane, uint32_t len)
{
	struct mrc_send_wr wr = { .wr_id = 1, .opcode = MRC_WR_WRITE, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED };

	r->sim = sim_new(sc);
	sim_connect(r->sim, 0, 1, cc, paths_per_plane, &r->a, &r->b);
	r->len = len;
	r->src = malloc(len);
	r->dst = calloc(1, len);
	if (!r->src || !r->dst)
		abort();
	for (uint32_t i = 0; i < len; i++)
		r->src[i] = (uint8_t)(i * 131 + 7);
	wr.sge[0] = (struct mrc_sge){ r->src, 0, len, 0 };
	wr.rkey = sim_register(r->b, r->dst, len, MRC_ACCESS_REMOTE_WRITE);
	wr.raddr = (uintptr_t)r->dst;
	if (mrc_conn_post_send(r->a->conn, &wr))
		abort();
	r->a->dirty = true;
}

static void run_close(struct run *r)
{
	if (memcmp(r->src, r->dst, r->len) != 0) {
		fprintf(stderr, "engine-report: data mismatch: the engine corrupted a transfer\n");
		exit(1);
	}
	sim_free(r->sim);
	free(r->src);
	free(r->dst);
}

static bool sent(struct sim *sim, void *arg)
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
	base_config(&cc, mode);
	run_open(&r, &sc, &cc, 4, 32u << 20);
	sim_run(r.sim, 60ull * 1000000000ull, sent, &r);
	if (r.a->errors || !r.a->send_completions) {
		fprintf(stderr, "engine-report: transfer failed (mode %u, loss %g)\n", mode, loss);
		exit(1);
	}
	gbps = r.len * 8.0 / (double)r.sim->now_ns;
	run_close(&r);
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
	base_config(&cc, MRC_MODE_METAROCE);
	run_open(&r, &sc, &cc, 8, 32u << 20);
	for (unsigned l = 0; l < sc.core_links; l++)
		sim_core(r.sim, 0, l)->p.delay_ns = 1000 + 10000 * l;
	sim_run(r.sim, 60ull * 1000000000ull, sent, &r);
	f = (double)mrc_conn_stats(r.a->conn)->tx_retransmits /
	    (double)mrc_conn_stats(r.a->conn)->tx_data_packets;
	run_close(&r);
	return f;
}

static double jain(const double *x, int n)
{
	double s = 0, s2 = 0;

	for (int i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

/*
 * 16 senders start a 2 MiB WRITE each into one receiver at the same instant. Returns the
 * time, in base RTTs, from the start until the senders' rates are fair (Jain >= 0.95 over
 * the last 8 RTTs: at 6 Gbit/s each a sender moves only about one packet per RTT, so a
 * shorter window measures packet granularity, not fairness) and the receiver's downlink
 * queue is below the ECN threshold, both holding for 4 consecutive RTTs.
 */
#define INCAST 16
static double incast_converge_rtts(uint64_t seed, double *max_queue_kib)
{
	static uint8_t src[INCAST][2 << 20], dst[INCAST][2 << 20];
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct sim *sim;
	struct sim_endpoint *s[INCAST], *r[INCAST];
	uint64_t hist[8][INCAST] = { { 0 } }, step_ns = (uint64_t)BASE_RTT_NS;
	int good = 0;
	double result = -1;

	sim_config_default(&sc);
	sc.hosts = INCAST + 1;
	sc.seed = seed;
	sc.rx_capacity_kbps = 95000000;
	base_config(&cc, MRC_MODE_METAROCE);
	sim = sim_new(&sc);
	*max_queue_kib = 0;
	for (int i = 0; i < INCAST; i++) {
		struct mrc_send_wr wr = { .wr_id = 1, .opcode = MRC_WR_WRITE, .num_sge = 1 };

		sim_connect(sim, 1 + i, 0, &cc, 4, &s[i], &r[i]);
		wr.sge[0] = (struct mrc_sge){ src[i], 0, sizeof(src[i]), 0 };
		wr.rkey = sim_register(r[i], dst[i], sizeof(dst[i]), MRC_ACCESS_REMOTE_WRITE);
		wr.raddr = (uintptr_t)dst[i];
		if (mrc_conn_post_send(s[i]->conn, &wr))
			abort();
		s[i]->dirty = true;
	}
	for (int step = 1; step < 20000 && result < 0; step++) {
		struct sim_stage *q = &sim->downlink[0][0];
		double rate[INCAST];
		uint64_t backlog;

		sim_run(sim, step * step_ns, NULL, NULL);
		backlog = q->busy_until_ns > sim->now_ns
				  ? (q->busy_until_ns - sim->now_ns) * q->p.rate_bps / 8000000000ull
				  : 0;
		if (backlog / 1024.0 > *max_queue_kib)
			*max_queue_kib = backlog / 1024.0;
		for (int i = 0; i < INCAST; i++) {
			uint64_t b = mrc_conn_stats(r[i]->conn)->rx_placed_bytes;

			rate[i] = (double)(b - hist[step % 8][i]);
			hist[step % 8][i] = b;
		}
		good = step >= 8 && jain(rate, INCAST) >= 0.95 && backlog < q->p.ecn_bytes ? good + 1
											   : 0;
		if (good == 4)
			result = step - 3;
	}
	sim_free(sim);
	return result;
}

/*
 * One 64 MiB WRITE over 4 paths; 0.2 ms in, the core link that path 0 hashes onto is
 * blackholed (taking every path that shares it). Returns the time, in base RTTs, from the
 * blackhole until goodput measured over windows of 2 base RTTs is back to 90% of what it
 * was before, for 4 windows in a row; *paths_hit says how many paths went dark.
 */
static double blackhole_recover_rtts(uint64_t seed, unsigned *paths_hit)
{
	struct sim_config sc;
	struct mrc_conn_config cc;
	struct run r;
	uint64_t window = (uint64_t)(2 * BASE_RTT_NS), t0 = 200000, prev = 0;
	double before = 0, result = -1;
	unsigned dark;
	int good = 0;

	sim_config_default(&sc);
	sc.seed = seed;
	base_config(&cc, MRC_MODE_METAROCE);
	run_open(&r, &sc, &cc, 4, 64u << 20);
	sim_run(r.sim, t0 - 100000, NULL, NULL);
	prev = mrc_conn_stats(r.b->conn)->rx_placed_bytes;
	sim_run(r.sim, t0, NULL, NULL);
	before = (double)(mrc_conn_stats(r.b->conn)->rx_placed_bytes - prev) / 100000.0;
	dark = sim_core_link_of(r.sim, 0, 1, mrc_conn_path(r.a->conn, 0)->sport);
	sim_core(r.sim, 0, dark)->p.blackhole = true;
	*paths_hit = 0;
	for (unsigned i = 0; i < mrc_conn_n_paths(r.a->conn); i++)
		*paths_hit += sim_core_link_of(r.sim, 0, 1, mrc_conn_path(r.a->conn, i)->sport) ==
			      dark;
	prev = mrc_conn_stats(r.b->conn)->rx_placed_bytes;
	for (int step = 1; step < 20000 && result < 0 && !r.a->send_completions; step++) {
		uint64_t b;

		sim_run(r.sim, t0 + step * window, NULL, NULL);
		b = mrc_conn_stats(r.b->conn)->rx_placed_bytes;
		good = (double)(b - prev) / window >= 0.9 * before ? good + 1 : 0;
		prev = b;
		if (good == 4)
			result = (step - 3) * window / BASE_RTT_NS;
	}
	sim_run(r.sim, 60ull * 1000000000ull, sent, &r);
	run_close(&r);
	return result;
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

int main(int argc, char **argv)
{
	const char *json_path = argc > 1 ? argv[1] : "build/engine-report.json";
	double gp[2][N_LOSS], kept[2][N_LOSS], v[SEEDS], spurious, incast, blackhole, qmax = 0;
	double ns4k, ns256;
	uint64_t pk4k, pk256;
	size_t footprint;
	unsigned paths_hit[SEEDS];
	FILE *json;

	for (int mode = 0; mode < 2; mode++) {
		for (size_t l = 0; l < N_LOSS; l++) {
			for (int s = 0; s < SEEDS; s++)
				v[s] = goodput_gbps((uint8_t)mode, loss_rates[l], 100 + s);
			gp[mode][l] = median(v, SEEDS);
			kept[mode][l] = gp[mode][l] / gp[mode][0];
		}
	}
	for (int s = 0; s < SEEDS; s++)
		v[s] = spurious_fraction(200 + s);
	spurious = median(v, SEEDS);
	for (int s = 0; s < SEEDS; s++) {
		double q;

		v[s] = incast_converge_rtts(300 + s, &q);
		qmax = q > qmax ? q : qmax;
	}
	incast = median(v, SEEDS);
	for (int s = 0; s < SEEDS; s++)
		v[s] = blackhole_recover_rtts(400 + s, &paths_hit[s]);
	blackhole = median(v, SEEDS);
	ns4k = ns_per_packet(4096, &pk4k);
	ns256 = ns_per_packet(256, &pk256);
	{
		struct mrc_conn_config cc;
		static const struct mrc_conn_callbacks cb = {
			.mr_lookup = cost_lookup,
			.complete = cost_complete,
		};
		struct mrc_conn *c;

		mrc_conn_config_default(&cc);
		cc.local_qpn = cc.remote_qpn = 1;
		cc.sq_depth = cc.rq_depth = 16;
		cc.max_dest_rd_atomic = 1;
		c = mrc_conn_new(&cc, &cb, NULL, 0);
		footprint = mrc_conn_footprint(c);
		mrc_conn_free(c);
	}

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
	printf("incast 16->1 with rate hints: fair (Jain >= 0.95) and queue < ECN threshold after "
	       "%.1f RTTs (peak queue %.0f KiB)\n",
	       incast, qmax);
	printf("core link under path 0 blackholed mid-transfer (paths dark per seed:");
	for (int s = 0; s < SEEDS; s++)
		printf(" %u", paths_hit[s]);
	printf(" of 4): goodput back to >= 90%% after %.1f RTTs\n", blackhole);
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
	fprintf(json,
		"}, \"spurious_retransmit_fraction\": %.6f, \"incast_converge_rtts\": %.2f, "
		"\"blackhole_recover_rtts\": %.2f, \"ns_per_packet\": %.1f, "
		"\"ns_per_packet_256\": %.1f, \"bytes_per_qp\": %zu}\n",
		spurious, incast, blackhole, ns4k, ns256, footprint);
	fclose(json);
	return 0;
}
