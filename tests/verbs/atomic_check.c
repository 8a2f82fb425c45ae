/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Atomics between two hosts, checked exactly: a generic verbs program, run through
 * metaroce-run (or against any RDMA device).
 *
 *   atomic_check -s [-p PORT]                                   the server: a counter, a lock,
 *                                                               a holder count
 *   atomic_check [-p PORT] [-q QPS] [-n OPS] [-d DEPTH] [-l ROUNDS] SERVER
 *
 * The client's QPS QPs each add 1 to the server's counter OPS times (DEPTH in flight per QP,
 * through ibv_wr_atomic_fetch_add): the counter must end at QPS x OPS, and the originals the
 * client got back must be 0 .. QPS x OPS - 1, each exactly once, so no add ran twice and none
 * was lost. Then each QP takes a lock built on compare-and-swap ROUNDS times (through
 * ibv_post_send): inside, it adds 1 to a holder count and must get 0 back, then takes it
 * away again; a second holder would see 1. The server checks its words at the end. Prints
 * the adds per second and the round trip of one add; exit 0 when everything holds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rc_connect.h"

#define MAX_QPS 64
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		IBV_ACCESS_REMOTE_ATOMIC)

enum { COUNTER, LOCK, HOLDERS, N_WORDS };

/* What each side tells the other over TCP, in host order (both ends are this program). */
struct hello {
	uint32_t qps;
	uint32_t qpn[MAX_QPS];
	uint8_t gid[16];
	uint64_t words_addr;	/* server: its COUNTER, LOCK, HOLDERS */
	uint32_t words_rkey;
};

struct verdict {
	uint64_t expected_count;
	uint64_t counter, lock, holders;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qps[MAX_QPS];
static unsigned n_qps = 4;

static void die(const char *what)
{
	fprintf(stderr, "atomic_check: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void full(int fd, void *buf, size_t len, bool out)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = out ? write(fd, (char *)buf + done, len - done)
				: read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			die(out ? "TCP write" : "TCP read");
		done += (size_t)n;
	}
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void open_device(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr_ex a = { .qp_type = IBV_QPT_RC,
					 .comp_mask = IBV_QP_INIT_ATTR_PD |
						      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					 .send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
							   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
					 .cap = { 256, 1, 1, 1, 0 } };

	if (!list || !list[0])
		die("no RDMA device");
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 4096, NULL, NULL, 0) : NULL;
	if (!cq)
		die("device, PD, CQ");
	a.pd = pd;
	a.send_cq = a.recv_cq = cq;
	for (unsigned i = 0; i < n_qps; i++)
		if (!(qps[i] = ibv_create_qp_ex(ctx, &a)))
			die("ibv_create_qp_ex");
	ibv_free_device_list(list);
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest, const uint8_t gid[16])
{
	union ibv_gid g;
	const char *step;

	memcpy(g.raw, gid, 16);
	errno = rc_connect(qp, dest, &g, ACCESS, 16, &step);
	if (errno)
		die(step);
}

static void local_hello(struct hello *h)
{
	memset(h, 0, sizeof(*h));
	h->qps = n_qps;
	for (unsigned i = 0; i < n_qps; i++)
		h->qpn[i] = qps[i]->qp_num;
	if (ibv_query_gid(ctx, 1, 0, (union ibv_gid *)h->gid))
		die("ibv_query_gid");
}

static int serve(int fd)
{
	uint64_t *words = aligned_alloc(64, 64);
	struct hello mine, theirs;
	struct verdict v;
	struct ibv_mr *mr;

	if (!words)
		die("malloc");
	memset(words, 0, 64);
	full(fd, &theirs, sizeof(theirs), false);
	n_qps = theirs.qps;
	open_device();
	mr = ibv_reg_mr(pd, words, 64, ACCESS);
	if (!mr)
		die("ibv_reg_mr");
	local_hello(&mine);
	mine.words_addr = (uintptr_t)words;
	mine.words_rkey = mr->rkey;
	for (unsigned i = 0; i < n_qps; i++)
		connect_qp(qps[i], theirs.qpn[i], theirs.gid);
	full(fd, &mine, sizeof(mine), true);
	full(fd, &v, sizeof(v), false); /* the client is done */
	v.counter = __atomic_load_n(&words[COUNTER], __ATOMIC_SEQ_CST);
	v.lock = words[LOCK];
	v.holders = words[HOLDERS];
	full(fd, &v, sizeof(v), true);
	printf("server: counter %llu (expected %llu), lock %llu, holders %llu\n",
	       (unsigned long long)v.counter, (unsigned long long)v.expected_count,
	       (unsigned long long)v.lock, (unsigned long long)v.holders);
	return v.counter == v.expected_count && !v.lock && !v.holders ? 0 : 1;
}

static struct ibv_wc poll_one(void)
{
	struct ibv_wc wc;
	double start = seconds();
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (seconds() - start > 60) {
			errno = ETIMEDOUT;
			die("no completion in 60 s");
		}
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "atomic_check: completion %s (wr_id %llu)\n",
			n < 0 ? "poll failed" : ibv_wc_status_str(wc.status),
			(unsigned long long)wc.wr_id);
		exit(1);
	}
	return wc;
}

static void post_add(const struct hello *srv, unsigned q, uint64_t slot, uint64_t *results,
		     uint32_t lkey)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qps[q]);

	ibv_wr_start(x);
	x->wr_id = slot;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(x, srv->words_rkey, srv->words_addr + COUNTER * 8, 1);
	ibv_wr_set_sge(x, lkey, (uintptr_t)&results[slot], 8);
	if (ibv_wr_complete(x))
		die("ibv_wr_complete");
}

/* Phase 1: OPS fetch-and-adds per QP, DEPTH in flight on each; originals into results. */
static void adds(const struct hello *srv, uint64_t ops, unsigned depth, uint64_t *results,
		 uint32_t lkey)
{
	uint64_t posted[MAX_QPS] = { 0 }, total = ops * n_qps;

	for (unsigned q = 0; q < n_qps; q++)
		while (posted[q] < ops && posted[q] < depth) {
			post_add(srv, q, q * ops + posted[q], results, lkey);
			posted[q]++;
		}
	for (uint64_t done = 0; done < total; done++) {
		struct ibv_wc wc = poll_one();
		unsigned q = (unsigned)(wc.wr_id / ops);

		if (wc.opcode != IBV_WC_FETCH_ADD || wc.byte_len != 8) {
			fprintf(stderr, "atomic_check: completion opcode %d, byte_len %u\n",
				wc.opcode, wc.byte_len);
			exit(1);
		}
		if (posted[q] < ops) {
			post_add(srv, q, q * ops + posted[q], results, lkey);
			posted[q]++;
		}
	}
}

/* One compare-and-swap or fetch-and-add on the server's word, the original into *into. */
static void post_word(const struct hello *srv, unsigned q, unsigned word, bool cas,
		      uint64_t compare_add, uint64_t swap, uint64_t *into, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)into, 8, lkey };
	struct ibv_send_wr wr = { .wr_id = q, .sg_list = &sge, .num_sge = 1,
				  .opcode = cas ? IBV_WR_ATOMIC_CMP_AND_SWP
						: IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.atomic = { srv->words_addr + word * 8, compare_add, swap,
						 srv->words_rkey } },
			   *bad;

	if (ibv_post_send(qps[q], &wr, &bad))
		die("ibv_post_send");
}

enum step { TRY, ENTER, LEAVE, RELEASE };

/*
 * Phase 2: every QP takes the lock (CAS 0 -> its id) ROUNDS times; holding it, it adds 1 to
 * the holder count and must see 0, takes it away and must see 1, releases and must see its
 * id. Returns how many times a QP found the lock taken.
 */
static uint64_t lock_rounds(const struct hello *srv, unsigned rounds, uint64_t *got,
			    uint32_t lkey)
{
	enum step step[MAX_QPS];
	unsigned done[MAX_QPS] = { 0 }, finished = 0;
	uint64_t contended = 0;

	for (unsigned q = 0; q < n_qps; q++) {
		step[q] = TRY;
		post_word(srv, q, LOCK, true, 0, q + 1, &got[q], lkey);
	}
	while (finished < n_qps) {
		struct ibv_wc wc = poll_one();
		unsigned q = (unsigned)wc.wr_id;
		uint64_t v = got[q];

		switch (step[q]) {
		case TRY:
			if (v != 0) {
				contended++;
				post_word(srv, q, LOCK, true, 0, q + 1, &got[q], lkey);
				break;
			}
			step[q] = ENTER;
			post_word(srv, q, HOLDERS, false, 1, 0, &got[q], lkey);
			break;
		case ENTER:
			if (v != 0) {
				fprintf(stderr, "atomic_check: QP %u holds the lock beside %llu "
						"other holder(s)\n", q, (unsigned long long)v);
				exit(1);
			}
			step[q] = LEAVE;
			post_word(srv, q, HOLDERS, false, UINT64_MAX, 0, &got[q], lkey); /* -1 */
			break;
		case LEAVE:
			if (v != 1) {
				fprintf(stderr, "atomic_check: QP %u left with %llu holders\n", q,
					(unsigned long long)v);
				exit(1);
			}
			step[q] = RELEASE;
			post_word(srv, q, LOCK, true, q + 1, 0, &got[q], lkey);
			break;
		case RELEASE:
			if (v != q + 1) {
				fprintf(stderr, "atomic_check: QP %u released a lock held by %llu\n",
					q, (unsigned long long)v);
				exit(1);
			}
			if (++done[q] == rounds) {
				finished++;
				break;
			}
			step[q] = TRY;
			post_word(srv, q, LOCK, true, 0, q + 1, &got[q], lkey);
			break;
		}
	}
	return contended;
}

static int run_client(int fd, uint64_t ops, unsigned depth, unsigned rounds)
{
	uint64_t total = ops * n_qps, *results = calloc(total + MAX_QPS + 1, sizeof(uint64_t));
	uint8_t *seen = calloc(total, 1);
	struct hello mine, srv;
	struct verdict v = { 0 };
	struct ibv_mr *mr;
	double t0, t1, lat_us;
	uint64_t contended;

	if (!results || !seen)
		die("calloc");
	open_device();
	mr = ibv_reg_mr(pd, results, (total + MAX_QPS + 1) * sizeof(uint64_t), ACCESS);
	if (!mr)
		die("ibv_reg_mr");
	local_hello(&mine);
	full(fd, &mine, sizeof(mine), true);
	full(fd, &srv, sizeof(srv), false);
	for (unsigned i = 0; i < n_qps; i++)
		connect_qp(qps[i], srv.qpn[i], srv.gid);

	t0 = seconds();
	adds(&srv, ops, depth, results, mr->lkey);
	t1 = seconds();
	for (uint64_t i = 0; i < total; i++) {
		if (results[i] >= total || seen[results[i]]) {
			fprintf(stderr, "atomic_check: original %llu %s\n",
				(unsigned long long)results[i],
				results[i] >= total ? "out of range" : "returned twice");
			return 1;
		}
		seen[results[i]] = 1;
	}
	/* one add at a time on one QP: the round trip */
	lat_us = seconds();
	for (unsigned i = 0; i < 1000; i++) {
		post_word(&srv, 0, HOLDERS, false, 0, 0, &results[total], mr->lkey);
		poll_one();
	}
	lat_us = (seconds() - lat_us) * 1e6 / 1000;
	contended = lock_rounds(&srv, rounds, &results[total + 1], mr->lkey);

	v.expected_count = total;
	full(fd, &v, sizeof(v), true);
	full(fd, &v, sizeof(v), false);
	printf("{\"qps\": %u, \"adds\": %llu, \"adds_per_s\": %.0f, \"add_round_trip_us\": %.1f, "
	       "\"lock_rounds\": %u, \"lock_contended\": %llu, \"counter\": %llu, "
	       "\"holders\": %llu, \"lock\": %llu}\n",
	       n_qps, (unsigned long long)total, (double)total / (t1 - t0), lat_us, rounds,
	       (unsigned long long)contended, (unsigned long long)v.counter,
	       (unsigned long long)v.holders, (unsigned long long)v.lock);
	return v.counter == total && !v.holders && !v.lock ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *port = "18799";
	uint64_t ops = 10000;
	unsigned depth = 16, rounds = 100;
	bool server = false;
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	int opt, fd, one = 1;

	while ((opt = getopt(argc, argv, "sp:q:n:d:l:")) != -1) {
		switch (opt) {
		case 's': server = true; break;
		case 'p': port = optarg; break;
		case 'q': n_qps = (unsigned)atoi(optarg); break;
		case 'n': ops = strtoull(optarg, NULL, 0); break;
		case 'd': depth = (unsigned)atoi(optarg); break;
		case 'l': rounds = (unsigned)atoi(optarg); break;
		default: goto usage;
		}
	}
	if (server != (optind == argc) || !n_qps || n_qps > MAX_QPS || !ops || !depth ||
	    depth > 16 || !rounds)
		goto usage;
	hints.ai_flags = server ? AI_PASSIVE : 0; /* the server listens on every address */
	if (getaddrinfo(server ? NULL : argv[optind], port, &hints, &ai))
		die("getaddrinfo");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (server) {
		int c;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
			die("bind/listen");
		c = accept(fd, NULL, NULL);
		if (c < 0)
			die("accept");
		return serve(c);
	}
	for (int tries = 0; connect(fd, ai->ai_addr, ai->ai_addrlen); tries++) {
		if (tries == 100)
			die("connect");
		close(fd);
		usleep(100000); /* the server may not listen yet */
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
	}
	return run_client(fd, ops, depth, rounds);
usage:
	fprintf(stderr, "usage: atomic_check -s [-p PORT]\n"
			"       atomic_check [-p PORT] [-q QPS (<= 64)] [-n OPS] [-d DEPTH (<= 16)] "
			"[-l ROUNDS] SERVER\n");
	return 2;
}
