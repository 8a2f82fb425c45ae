/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * daemon/io/backend_udp.c on real sockets over loopback: datagrams, source ports, the ECN field,
 * and two real engine connections moving 8 MiB byte for byte in real time.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "io/backend.h"
#include "proto/conn.h"
#include "suites.h"

struct side {
	struct mrcd_config cfg;
	struct mrcd_backend b;
};

static void side_open(struct side *s)
{
	char err[256] = "";

	mrcd_config_default(&s->cfg);
	ck_assert_int_eq(mrcd_config_set(&s->cfg, "plane", "0 lo 127.0.0.1", err, sizeof(err)), 0);
	s->cfg.port = 0; /* an ephemeral port: tests run side by side */
	memset(&s->b, 0, sizeof(s->b));
	s->b.ops = &mrcd_backend_udp;
	s->b.cfg = &s->cfg;
	ck_assert_msg(s->b.ops->open(&s->b, err, sizeof(err)) == 0, "open: %s", err);
	ck_assert_uint_ne(s->b.port, 0);
}

static struct mrcd_dgram to_peer(const struct side *to, uint8_t *data, uint32_t len,
				 uint16_t sport)
{
	struct mrcd_dgram d = { .data = data, .len = len, .plane = 0, .sport = sport,
				.peer_port = to->b.port };

	d.peer = to->cfg.planes[0].addr;
	return d;
}

static int rx_one(struct side *s, struct mrcd_dgram *d, int timeout_ms)
{
	int fd;

	ck_assert_uint_eq(s->b.ops->poll_fds(&s->b, &fd, 1), 1);
	for (int i = 0; i < timeout_ms; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n;

		/* as the loop does: the backend reads a socket only once told it is readable */
		if (poll(&pfd, 1, 1) == 1)
			s->b.ops->fd_ready(&s->b, fd);
		n = s->b.ops->rx_batch(&s->b, d, 1);
		if (n)
			return n;
	}
	return 0;
}

/* A datagram leaves from the source port asked for, arrives with it, not CE-marked. */
START_TEST(mrcd_backend_udp__datagram_and_source_ports)
{
	struct side a, b;
	uint8_t payload[100], in[2048];
	uint16_t ports[MRCD_SPORTS_PER_PLANE];
	struct mrcd_dgram out, got = { .data = in, .cap = sizeof(in) };

	side_open(&a);
	side_open(&b);
	ck_assert_uint_eq(mrcd_backend_sports(&a.b, 0, ports, MRCD_SPORTS_PER_PLANE),
			  MRCD_SPORTS_PER_PLANE);
	ck_assert_uint_eq(mrcd_backend_sports(&a.b, 5, ports, MRCD_SPORTS_PER_PLANE), 0);
	memset(payload, 0x5a, sizeof(payload));
	out = to_peer(&b, payload, sizeof(payload), ports[3]);
	ck_assert_int_eq(a.b.ops->tx_batch(&a.b, &out, 1), 1);
	ck_assert_int_eq(rx_one(&b, &got, 1000), 1);
	ck_assert_uint_eq(got.len, sizeof(payload));
	ck_assert_mem_eq(got.data, payload, sizeof(payload));
	ck_assert_uint_eq(got.sport, ports[3]);
	ck_assert_uint_eq(got.peer_port, ports[3]);
	ck_assert(!got.ce);
	/* a port that is not ours leaves from the pool socket it selects */
	out = to_peer(&b, payload, sizeof(payload), 40001);
	ck_assert_int_eq(a.b.ops->tx_batch(&a.b, &out, 1), 1);
	ck_assert_int_eq(rx_one(&b, &got, 1000), 1);
	ck_assert_uint_eq(got.sport, ports[40001 % MRCD_SPORTS_PER_PLANE]);
	a.b.ops->close(&a.b);
	b.b.ops->close(&b.b);
}
END_TEST

/* The ECN field of every datagram is read: CE from a marking hop shows as ce. */
START_TEST(mrcd_backend_udp__reads_ce)
{
	struct side b;
	uint8_t in[2048];
	struct mrcd_dgram got = { .data = in, .cap = sizeof(in) };
	struct sockaddr_in to = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), ce = 0x03;

	side_open(&b);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, IPPROTO_IP, IP_TOS, &ce, sizeof(ce)), 0);
	to.sin_port = htons(b.b.port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
	ck_assert_int_eq(rx_one(&b, &got, 1000), 1);
	ck_assert(got.ce);
	close(fd);
	b.b.ops->close(&b.b);
}
END_TEST

/*
 * Equal datagrams from one path to one peer leave as one GSO message, whichever of its QPs
 * they are for, and a shorter one ends the train; the receiving side takes each train as one
 * message (UDP GRO) and hands out the datagrams they were, in place, one call at a time when
 * the caller has room for one.
 */
START_TEST(mrcd_backend_udp__gso_trains_arrive_as_datagrams)
{
	struct side a, b;
	static uint8_t payload[8][1200];
	uint8_t in[2048];
	uint16_t ports[MRCD_SPORTS_PER_PLANE];
	struct mrcd_dgram out[8], got = { .data = in, .cap = sizeof(in) };
	unsigned seen[8] = { 0 };

	side_open(&a);
	side_open(&b);
	mrcd_backend_sports(&a.b, 0, ports, MRCD_SPORTS_PER_PLANE);
	for (unsigned i = 0; i < 8; i++) {
		/* the header's dst_qpn (bytes 4..7) one QP's, but for 3's */
		memset(payload[i], i == 3 ? 0x31 : 0x30, sizeof(payload[i]));
		payload[i][0] = (uint8_t)i;
		/* 0..5 full (3 to another QP), 6 shorter (ends the train), 7 full again */
		out[i] = to_peer(&b, payload[i], i == 6 ? 300 : 1200, ports[2]);
	}
	ck_assert(a.b.gso);
	ck_assert_ptr_nonnull(b.b.gro);
	ck_assert_int_eq(a.b.ops->tx_batch(&a.b, out, 8), 8);
	ck_assert_uint_eq(a.b.tx_messages, 2);
	for (unsigned k = 0; k < 8; k++) {
		unsigned i;

		got.data = in;
		ck_assert_int_eq(rx_one(&b, &got, 1000), 1);
		/* UDP GRO: the train came as one message, handed out in place, not copied */
		ck_assert_ptr_ne(got.data, in);
		i = got.data[0];
		ck_assert_uint_lt(i, 8);
		ck_assert_uint_eq(got.len, i == 6 ? 300 : 1200);
		ck_assert_mem_eq(got.data, payload[i], got.len);
		ck_assert_uint_eq(got.sport, ports[2]);
		seen[i]++;
	}
	for (unsigned i = 0; i < 8; i++)
		ck_assert_uint_eq(seen[i], 1);
	a.b.ops->close(&a.b);
	b.b.ops->close(&b.b);
}
END_TEST

/* Up to n datagrams, after poll said the socket is readable (or 1 s passed). */
static int rx_some(struct side *s, struct mrcd_dgram *d, unsigned n)
{
	struct pollfd pfd = { .events = POLLIN };

	ck_assert_uint_eq(s->b.ops->poll_fds(&s->b, &pfd.fd, 1), 1);
	if (poll(&pfd, 1, 1000) == 1)
		s->b.ops->fd_ready(&s->b, pfd.fd);
	return s->b.ops->rx_batch(&s->b, d, n);
}

/* Two trains of 7 datagrams (6 of 1200 bytes, one of 300 ending each), datagram i's bytes all
 * saying i, from the first index given. */
static void send_trains(struct side *a, struct side *b, uint8_t (*payload)[1200], unsigned first,
			uint16_t sport)
{
	struct mrcd_dgram out[14];

	for (unsigned k = 0; k < 14; k++) {
		unsigned i = first + k;

		memset(payload[i], (int)i, sizeof(payload[i]));
		out[k] = to_peer(b, payload[i], k % 7 == 6 ? 300 : 1200, sport);
	}
	ck_assert_int_eq(a->b.ops->tx_batch(&a->b, out, 14), 14);
}

/*
 * A caller whose batch ends inside a train gets the train's rest at its next call, in place;
 * what that call receives besides must not land in the buffers those datagrams point into
 * (it did: two QPs' UD datagrams arrived as copies of each other's, others never).
 */
START_TEST(mrcd_backend_udp__train_rest_survives_the_next_receive)
{
	struct side a, b;
	static uint8_t payload[28][1200];
	uint16_t ports[MRCD_SPORTS_PER_PLANE];
	struct mrcd_dgram got[4];
	unsigned seen[28] = { 0 }, total = 0;

	side_open(&a);
	side_open(&b);
	mrcd_backend_sports(&a.b, 0, ports, MRCD_SPORTS_PER_PLANE);
	send_trains(&a, &b, payload, 0, ports[1]);
	while (total < 12) { /* into the second train, two of it left */
		int n = rx_some(&b, got, total < 8 ? 4 : 12 - total);

		ck_assert_int_gt(n, 0);
		for (int k = 0; k < n; k++)
			seen[got[k].data[0]]++;
		total += (unsigned)n;
	}
	send_trains(&a, &b, payload, 14, ports[1]); /* two more messages wait in the socket */
	while (total < 28) {
		int n = rx_some(&b, got, 4);

		ck_assert_int_gt(n, 0);
		/* checked after the call: each datagram still holds its own bytes */
		for (int k = 0; k < n; k++) {
			unsigned i = got[k].data[0];

			ck_assert_uint_lt(i, 28);
			ck_assert_uint_eq(got[k].len, i % 7 == 6 ? 300 : 1200);
			ck_assert_mem_eq(got[k].data, payload[i], got[k].len);
			seen[i]++;
		}
		total += (unsigned)n;
	}
	for (unsigned i = 0; i < 28; i++)
		ck_assert_msg(seen[i] == 1, "datagram %u seen %u times", i, seen[i]);
	a.b.ops->close(&a.b);
	b.b.ops->close(&b.b);
}
END_TEST

START_TEST(mrcd_backend_udp__open_error_names_plane)
{
	struct mrcd_config cfg;
	struct mrcd_backend b = { .ops = &mrcd_backend_udp, .cfg = &cfg };
	char err[256] = "";

	mrcd_config_default(&cfg);
	/* an address this host does not have */
	ck_assert_int_eq(mrcd_config_set(&cfg, "plane", "3 eth9 198.18.250.250", err, sizeof(err)),
			 0);
	ck_assert_int_eq(b.ops->open(&b, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "plane 3 (eth9, 198.18.250.250): bind to the MetaRoCE port") !=
			      NULL,
		      "%s", err);
}
END_TEST

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		  uint8_t **host)
{
	uint8_t *base = user;

	(void)access;
	if (key != 0x77 || addr < (uintptr_t)base || addr - (uintptr_t)base + len > (8u << 20))
		return -1;
	*host = (uint8_t *)(uintptr_t)addr;
	return 0;
}

static int completions;

static void complete(void *user, bool from_recv, const struct mrc_completion *wc)
{
	(void)user;
	(void)from_recv;
	ck_assert_uint_eq(wc->status, MRC_WC_SUCCESS);
	completions++;
}

/* Moves everything a connection has to send out through its backend, to the other side. */
static void flush(struct mrc_conn *c, struct side *from, const struct side *to, uint64_t now)
{
	static uint8_t bufs[32][9216];
	struct mrcd_dgram d[32];
	struct mrc_tx_info tx;
	unsigned n = 0;
	size_t len;

	while (n < 32 && mrc_conn_send(c, bufs[n], sizeof(bufs[n]), &tx, now, &len)) {
		d[n] = to_peer(to, bufs[n], (uint32_t)len, tx.sport);
		n++;
	}
	if (n)
		from->b.ops->tx_batch(&from->b, d, n);
}

static void drain(struct mrc_conn *c, struct side *s, uint64_t now)
{
	static uint8_t bufs[32][9216];
	struct mrcd_dgram d[32];
	int n;

	for (unsigned i = 0; i < 32; i++) {
		d[i].data = bufs[i];
		d[i].cap = sizeof(bufs[i]);
	}
	while ((n = s->b.ops->rx_batch(&s->b, d, 32)) > 0)
		for (int i = 0; i < n; i++) {
			struct mrc_rx_info rx = { .plane = d[i].plane, .sport = d[i].sport,
						  .ce = d[i].ce };

			mrc_conn_recv(c, &rx, d[i].data, d[i].len, now);
		}
}

/* The engine over real UDP sockets and the real clock: an 8 MiB WRITE over 4 paths. */
START_TEST(mrcd_backend_udp__engine_transfer_over_loopback)
{
	static const struct mrc_conn_callbacks cb = {
		.mr_lookup = lookup,
		.complete = complete,
	};
	struct side a, b;
	struct mrc_conn_config cc;
	struct mrc_conn *ca, *cb_;
	uint8_t *src = malloc(8u << 20), *dst = calloc(1, 8u << 20);
	uint16_t ports[MRCD_SPORTS_PER_PLANE];
	struct mrc_send_wr wr = { .wr_id = 1, .opcode = MRC_WR_WRITE, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED, .rkey = 0x77 };
	struct pollfd pfd[2];
	uint64_t start = now_ns();

	ck_assert(src && dst);
	for (uint32_t i = 0; i < (8u << 20); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	side_open(&a);
	side_open(&b);
	mrc_conn_config_default(&cc);
	cc.max_payload = 8192; /* loopback's MTU is 65536 */
	cc.n_paths = 4;
	mrcd_backend_sports(&a.b, 0, ports, MRCD_SPORTS_PER_PLANE);
	for (unsigned i = 0; i < 4; i++)
		cc.paths[i] = (struct mrc_path_config){ 0, ports[i] };
	cc.local_qpn = 1;
	cc.remote_qpn = 2;
	ca = mrc_conn_new(&cc, &cb, dst, now_ns());
	mrcd_backend_sports(&b.b, 0, ports, MRCD_SPORTS_PER_PLANE);
	for (unsigned i = 0; i < 4; i++)
		cc.paths[i] = (struct mrc_path_config){ 0, ports[i] };
	cc.local_qpn = 2;
	cc.remote_qpn = 1;
	cb_ = mrc_conn_new(&cc, &cb, dst, now_ns());
	ck_assert(ca && cb_);
	wr.sge[0] = (struct mrc_sge){ src, (uintptr_t)src, 8u << 20, 0 };
	wr.raddr = (uintptr_t)dst;
	ck_assert_int_eq(mrc_conn_post_send(ca, &wr), 0);
	a.b.ops->poll_fds(&a.b, &pfd[0].fd, 1);
	b.b.ops->poll_fds(&b.b, &pfd[1].fd, 1);
	completions = 0;
	while (!completions && now_ns() - start < 20000000000ull) {
		uint64_t now = now_ns(), next;
		int wait_ms;

		if (mrc_conn_next_timeout(ca) <= now)
			mrc_conn_on_timeout(ca, now);
		if (mrc_conn_next_timeout(cb_) <= now)
			mrc_conn_on_timeout(cb_, now);
		flush(ca, &a, &b, now);
		flush(cb_, &b, &a, now);
		next = mrc_conn_next_timeout(ca) < mrc_conn_next_timeout(cb_)
			       ? mrc_conn_next_timeout(ca)
			       : mrc_conn_next_timeout(cb_);
		wait_ms = next <= now ? 0 : next - now > 10000000 ? 10 : (int)((next - now) / 1000000);
		pfd[0].events = pfd[1].events = POLLIN;
		poll(pfd, 2, wait_ms);
		for (unsigned i = 0; i < 2; i++)
			if (pfd[i].revents & POLLIN)
				(i ? &b : &a)->b.ops->fd_ready(&(i ? &b : &a)->b, pfd[i].fd);
		drain(ca, &a, now_ns());
		drain(cb_, &b, now_ns());
	}
	ck_assert_int_eq(completions, 1);
	ck_assert(!memcmp(src, dst, 8u << 20));
	mrc_conn_free(ca);
	mrc_conn_free(cb_);
	a.b.ops->close(&a.b);
	b.b.ops->close(&b.b);
	free(src);
	free(dst);
}
END_TEST

Suite *backend_udp_suite(void)
{
	Suite *s = suite_create("backend_udp");
	TCase *tc = tcase_create("backend_udp");

	tcase_add_test(tc, mrcd_backend_udp__datagram_and_source_ports);
	tcase_add_test(tc, mrcd_backend_udp__reads_ce);
	tcase_add_test(tc, mrcd_backend_udp__gso_trains_arrive_as_datagrams);
	tcase_add_test(tc, mrcd_backend_udp__train_rest_survives_the_next_receive);
	tcase_add_test(tc, mrcd_backend_udp__open_error_names_plane);
	tcase_add_test(tc, mrcd_backend_udp__engine_transfer_over_loopback);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
