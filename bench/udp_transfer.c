/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One MetaRoCE connection over the udp backend between two processes, for measuring goodput
 * and CPU against kernel TCP on the same link (bench/udp_vs_tcp.sh). Not a tool for users:
 * metaroce-perf over the verbs API comes with the testbed.
 *
 *   udp-transfer recv LOCAL_ADDR PEER_ADDR BYTES [verify]
 *   udp-transfer send LOCAL_ADDR PEER_ADDR BYTES
 *
 * Both ends use port 4792, QPNs 1 (sender) and 2 (receiver), 4 paths, SENDs of 1 MiB into
 * receives the receiver keeps posted. With `verify` the receiver checks every byte (a
 * correctness run; the measured runs skip it, as iperf3 checks nothing). Each side prints one
 * line: bytes, seconds, Gbit/s, CPU seconds (user + system).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "daemon/backend.h"
#include "daemon/daemon.h"
#include "proto/conn.h"

#define MSG (1u << 20)
#define RECVS 32

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static struct {
	uint64_t done_bytes, posted, completed;
	bool bad, verify;
} st;

static int no_mr(void *u, uint32_t k, uint64_t a, uint32_t l, unsigned x, uint8_t **h)
{
	(void)u, (void)k, (void)a, (void)l, (void)x, (void)h;
	return -1;
}

static uint8_t *rbuf;

static void complete(void *user, bool from_recv, const struct mrc_completion *wc)
{
	(void)user;
	if (wc->status != MRC_WC_SUCCESS) {
		fprintf(stderr, "udp-transfer: completion %s\n", mrc_wc_status_name(wc->status));
		st.bad = true;
		return;
	}
	if (from_recv && st.verify) {
		/* message id was sent from slot id % RECVS of a buffer filled with pattern() */
		const uint8_t *b = rbuf + (wc->wr_id % RECVS) * MSG;
		uint64_t base = (wc->wr_id % RECVS) * (uint64_t)MSG;

		for (uint32_t i = 0; i < wc->byte_len; i++)
			if (b[i] != pattern(base + i)) {
				fprintf(stderr, "udp-transfer: byte %u of message %llu wrong\n", i,
					(unsigned long long)wc->wr_id);
				st.bad = true;
				break;
			}
	}
	st.done_bytes += wc->byte_len;
	st.completed++;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	static const struct mrc_conn_callbacks cb = { no_mr, complete };
	bool sender = argc == 5 && !strcmp(argv[1], "send");
	uint64_t total = argc >= 5 ? strtoull(argv[4], NULL, 0) : 0, start = 0, linger = 0;
	struct mrcd_config cfg;
	struct mrcd_backend b = { .ops = &mrcd_backend_udp };
	struct mrc_conn_config cc;
	struct mrc_conn *c;
	struct mrcd_addr peer;
	uint16_t sports[MRCD_SPORTS_PER_PLANE];
	uint8_t *sbuf = NULL;
	char err[256], plane[96];
	int fd;

	if (!(sender || ((argc == 5 || argc == 6) && !strcmp(argv[1], "recv"))) || !total) {
		fprintf(stderr, "usage: udp-transfer recv LOCAL PEER BYTES [verify] | "
				"send LOCAL PEER BYTES\n");
		return 2;
	}
	st.verify = argc == 6 && !strcmp(argv[5], "verify");
	mrcd_config_default(&cfg);
	snprintf(plane, sizeof(plane), "0 x %s", argv[2]);
	if (mrcd_config_set(&cfg, "plane", plane, err, sizeof(err))) {
		fprintf(stderr, "udp-transfer: %s\n", err);
		return 2;
	}
	snprintf(plane, sizeof(plane), "1 y %s", argv[3]);
	{
		struct mrcd_config tmp = cfg;

		if (mrcd_config_set(&tmp, "plane", plane, err, sizeof(err))) {
			fprintf(stderr, "udp-transfer: %s\n", err);
			return 2;
		}
		peer = tmp.planes[1].addr;
	}
	b.cfg = &cfg;
	if (b.ops->open(&b, err, sizeof(err))) {
		fprintf(stderr, "udp-transfer: %s\n", err);
		return 1;
	}
	mrc_conn_config_default(&cc);
	cc.max_payload = (uint16_t)(cfg.mtu - 20 - 8 - 56);
	cc.local_qpn = sender ? 1 : 2;
	cc.remote_qpn = sender ? 2 : 1;
	cc.n_paths = 4;
	cc.sq_depth = RECVS;
	cc.rq_depth = RECVS;
	mrcd_backend_sports(&b, 0, sports, MRCD_SPORTS_PER_PLANE);
	for (unsigned i = 0; i < 4; i++)
		cc.paths[i] = (struct mrc_path_config){ 0, sports[i] };
	c = mrc_conn_new(&cc, &cb, NULL, mrcd_now_ns());
	if (sender) {
		sbuf = malloc((size_t)MSG * RECVS);
		for (uint64_t i = 0; i < (uint64_t)MSG * RECVS; i++)
			sbuf[i] = pattern(i);
	} else {
		rbuf = malloc((size_t)MSG * RECVS);
	}
	if (!c || !(sender ? sbuf : rbuf))
		return 1;
	b.ops->poll_fds(&b, &fd, 1);
	for (;;) {
		static uint8_t bufs[32][9216];
		struct mrcd_dgram d[32];
		struct mrc_tx_info tx;
		uint64_t now = mrcd_now_ns(), next;
		size_t len;
		unsigned n = 0;
		int got;

		/* keep work posted: the sender's SENDs, the receiver's receives */
		while (sender ? st.posted < st.completed + RECVS && st.posted * MSG < total
			      : st.posted < st.completed + RECVS) {
			uint64_t id = st.posted;

			if (sender) {
				struct mrc_send_wr wr = { .wr_id = id, .opcode = MRC_WR_SEND,
							  .num_sge = 1,
							  .flags = MRC_SEND_SIGNALED };
				uint32_t l = total - id * MSG < MSG ? (uint32_t)(total - id * MSG)
								    : MSG;

				wr.sge[0] = (struct mrc_sge){ sbuf + (id % RECVS) * MSG, 0, l, 0 };
				if (mrc_conn_post_send(c, &wr))
					break;
			} else {
				struct mrc_recv_wr wr = { .wr_id = id, .num_sge = 1 };

				wr.sge[0] = (struct mrc_sge){ rbuf + (id % RECVS) * MSG, 0, MSG, 0 };
				if (mrc_conn_post_recv(c, &wr))
					break;
			}
			st.posted++;
			if (!start)
				start = now;
		}
		if (st.bad || mrc_conn_state(c) != MRC_QPS_RTS)
			return 1;
		if (sender && st.done_bytes >= total)
			break;
		/* the receiver stays a moment after its last byte, so its last ACK goes out */
		if (!sender && st.done_bytes >= total && !linger)
			linger = now + 100000000ull;
		if (linger && now > linger)
			break;
		if (mrc_conn_next_timeout(c) <= now)
			mrc_conn_on_timeout(c, now);
		while (n < 32 && mrc_conn_send(c, bufs[n], sizeof(bufs[n]), &tx, now, &len)) {
			d[n] = (struct mrcd_dgram){ .data = bufs[n], .len = (uint32_t)len,
						    .plane = 0, .sport = tx.sport, .peer = peer,
						    .peer_port = cfg.port };
			n++;
		}
		if (n)
			b.ops->tx_batch(&b, d, n);
		next = mrc_conn_next_timeout(c);
		if (n == 32)
			continue;
		poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1,
		     next == UINT64_MAX ? 50 : next <= now ? 0 : (int)((next - now) / 1000000) + 1);
		for (unsigned i = 0; i < 32; i++)
			d[i] = (struct mrcd_dgram){ .data = bufs[i], .cap = sizeof(bufs[i]) };
		while ((got = b.ops->rx_batch(&b, d, 32)) > 0)
			for (int i = 0; i < got; i++) {
				struct mrc_rx_info rx = { .plane = 0, .sport = d[i].sport,
							  .ce = d[i].ce };

				mrc_conn_recv(c, &rx, d[i].data, d[i].len, mrcd_now_ns());
			}
		if (start && mrcd_now_ns() - start > 120000000000ull) {
			fprintf(stderr, "udp-transfer: gave up after 120 s\n");
			return 1;
		}
	}
	{
		double secs = ((linger ? linger - 100000000ull : mrcd_now_ns()) - start) / 1e9;

		printf("%s %llu bytes %.3f s %.2f Gbit/s cpu %.3f s\n", sender ? "send" : "recv",
		       (unsigned long long)st.done_bytes, secs, st.done_bytes * 8 / secs / 1e9,
		       cpu_seconds());
	}
	return 0;
}
