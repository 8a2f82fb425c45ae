/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* metaroce-perf: the bandwidth tests, client and server (perf/perf.h). */

#include "perf/perf.h"

/* --- bandwidth ----------------------------------------------------------------------------- */

/* One batch from the next CQ in turn that has any, so no group of QPs waits on another;
 * 0 only when every CQ is empty. */
static int poll_cqs(struct ibv_wc *wc)
{
	static unsigned int next;
	unsigned int tried;
	int n = 0;

	for (tried = 0; tried < perf.num_cqs && !n; tried++) {
		next = next + 1 < perf.num_cqs ? next + 1 : 0;
		n = ibv_poll_cq(perf.cqs[next], CQ_BATCH, wc);
		if (n < 0)
			die("ibv_poll_cq: %s", strerror(errno));
	}
	return n;
}

/*
 * Nothing to poll. Spinning, return at once. With --events: the first time, ask every CQ for
 * an event and return, so the caller polls once more (a completion may have slipped in before
 * the request); the next time, sleep until an event, the TCP peer speaks, or timeout_ms.
 */
void idle(int timeout_ms)
{
	struct pollfd pfd[2] = { { .fd = -1, .events = POLLIN }, { .fd = perf.fd, .events = POLLIN } };
	struct ibv_cq *cq;
	void *cq_ctx;
	unsigned int c;

	if (!opt.events)
		return;
	if (!perf.armed) {
		for (c = 0; c < perf.num_cqs; c++)
			if (ibv_req_notify_cq(perf.cqs[c], 0))
				die("ibv_req_notify_cq: %s", strerror(errno));
		perf.armed = true;
		return;
	}
	pfd[0].fd = perf.channel->fd;
	if (poll(pfd, 2, timeout_ms) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	if (pfd[0].revents & POLLIN) {
		if (ibv_get_cq_event(perf.channel, &cq, &cq_ctx))
			die("ibv_get_cq_event: %s", strerror(errno));
		ibv_ack_cq_events(cq, 1);
	}
	perf.armed = false;
}

static bool qp_may_post(const struct qp_state *s, bool stopping)
{
	if (stopping || (opt.iterations && s->posted >= opt.iterations))
		return false;
	if (opt.test == TEST_WRITE && opt.verify)
		return !s->round_open && s->in_round < opt.depth;
	return s->outstanding < opt.depth;
}

static void post_data(unsigned int q)
{
	struct qp_state *s = &perf.qs[q];
	unsigned int slot = (unsigned int)(s->posted % opt.depth);

	if (opt.verify && opt.test != TEST_READ)
		pattern_fill(slot_ptr(q, slot), opt.size,
			     pattern_seed(q, s->posted, SALT_CLIENT));
	else if (opt.verify)
		memset(slot_ptr(q, slot), 0xee, opt.size);	/* a read that lands nothing fails */
	switch (opt.test) {
	case TEST_WRITE:
		post_send(q, IBV_WR_RDMA_WRITE, WRID(WR_DATA, q, slot), slot, slot, true, 0);
		s->in_round += opt.verify;
		break;
	case TEST_READ:
		post_send(q, IBV_WR_RDMA_READ, WRID(WR_DATA, q, slot), slot, slot, true, 0);
		break;
	case TEST_SEND:
		post_send(q, IBV_WR_SEND, WRID(WR_DATA, q, slot), slot, 0, true, 0);
		break;
	}
	s->posted++;
}

/* A verified write round ends with a SEND whose immediate says which writes to check. */
static void close_round(unsigned int q)
{
	struct qp_state *s = &perf.qs[q];

	post_send(q, IBV_WR_SEND_WITH_IMM, WRID(WR_ROUND, q, 0), 0, 0, false,
		  ROUND_IMM(s->round, s->in_round));
	s->round_open = true;
	s->round_send_done = false;
	s->round_answered = false;
}

static void client_completion(const struct ibv_wc *wc)
{
	unsigned int q = WRID_QP(wc->wr_id);
	struct qp_state *s = &perf.qs[q];

	if (wc->status != IBV_WC_SUCCESS)
		completion_failed(wc);
	switch (WRID_KIND(wc->wr_id)) {
	case WR_DATA:
		s->outstanding--;
		if (opt.test == TEST_READ && opt.verify)
			check_data(q, WRID_SLOT(wc->wr_id), WRID_SLOT(wc->wr_id), SALT_SERVER,
				   "read");
		s->completed++;
		break;
	case WR_ROUND:
		s->outstanding--;
		s->round_send_done = true;
		break;
	case WR_RECV:
		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != (s->round & 0xffff))
			die("QP %u: the server answered round %u with 0x%x", q, s->round,
			    ntohl(wc->imm_data));
		s->round_answered = true;
		post_recv(q, 0, false);
		break;
	default:
		die("a completion with an unknown wr_id 0x%" PRIx64, wc->wr_id);
	}
	/* Every write of the round completed before its closing SEND did: RC orders them. */
	if (s->round_open && s->round_send_done && s->round_answered) {
		s->round_open = false;
		s->round++;
		s->in_round = 0;
	}
}

void report_line(const char *role, double secs, uint64_t msgs, double cpu,
			const struct wire_report *peer)
{
	double bytes = (double)msgs * (double)opt.size;

	if (opt.json) {
		printf("{\"tool\":\"metaroce-perf\",\"version\":\"%s\",\"role\":\"%s\","
		       "\"device\":\"%s\",\"test\":\"%s\",\"mode\":\"%s\",\"size\":%" PRIu64 ","
		       "\"qps\":%u,\"depth\":%u,\"verify\":%s,\"seconds\":%.6f,"
		       "\"messages\":%" PRIu64 ",\"bytes\":%.0f,\"gbps\":%.6f,"
		       "\"msg_per_s\":%.1f,\"cpu_seconds\":%.6f,\"verified\":%" PRIu64 ","
		       "\"errors\":%" PRIu64, METAROCE_VERSION, role, opt.device,
		       test_names[opt.test], mode_names[opt.mode], opt.size, opt.qps, opt.depth,
		       opt.verify ? "true" : "false", secs, msgs, bytes,
		       secs > 0 ? bytes * 8 / secs / 1e9 : 0, secs > 0 ? (double)msgs / secs : 0,
		       cpu, perf.verified, perf.errors);
		if (peer)
			printf(",\"peer\":{\"received\":%" PRIu64 ",\"verified\":%" PRIu64
			       ",\"errors\":%u}", be64toh(peer->received),
			       be64toh(peer->verified), ntohl(peer->errors));
	} else {
		printf("%s %s %s: %" PRIu64 " B x %" PRIu64 " messages on %u QP%s in %.3f s\n",
		       role, test_names[opt.test], mode_names[opt.mode], opt.size, msgs, opt.qps,
		       opt.qps == 1 ? "" : "s", secs);
		if (opt.mode == MODE_BW)
			printf("  goodput   %.3f Gbit/s, %.0f msg/s\n",
			       secs > 0 ? bytes * 8 / secs / 1e9 : 0,
			       secs > 0 ? (double)msgs / secs : 0);
		printf("  cpu       %.3f s (this process)\n", cpu);
		if (opt.verify || perf.errors)
			printf("  verified  %" PRIu64 " messages here, %" PRIu64 " wrong\n",
			       perf.verified, perf.errors);
		if (peer && (opt.verify || ntohl(peer->errors)))
			printf("  server    %" PRIu64 " received, %" PRIu64 " verified, %u wrong\n",
			       be64toh(peer->received), be64toh(peer->verified),
			       ntohl(peer->errors));
	}
}

static void stall_check(double now, double *last_activity)
{
	if (now - *last_activity > STALL_SECONDS)
		die("no completion for %.0f s: is the peer (and its metaroced) still up?",
		    STALL_SECONDS);
}

static bool client_bw_done(bool stopping)
{
	unsigned int q;

	for (q = 0; q < opt.qps; q++) {
		const struct qp_state *s = &perf.qs[q];

		if (s->outstanding || s->round_open)
			return false;
		if (!stopping && (!opt.iterations || s->posted < opt.iterations))
			return false;
		if (opt.test == TEST_WRITE && opt.verify && s->in_round)
			return false;
	}
	return true;
}

void client_bw(void)
{
	struct ibv_wc wc[CQ_BATCH];
	struct progress prog;
	double start, end, now, activity, cpu0;
	uint64_t done_msgs = 0;
	bool stopping = false;
	unsigned int q;
	int n, i;

	if (opt.test == TEST_WRITE && opt.verify)
		for (q = 0; q < opt.qps; q++)
			post_recv(q, 0, false);
	sync_peer("the start");
	cpu0 = cpu_seconds();
	start = activity = now_seconds();
	prog = (struct progress){ .start = start, .last = start, .next = start + opt.interval };
	for (;;) {
		for (q = 0; q < opt.qps; q++) {
			struct qp_state *s = &perf.qs[q];

			while (qp_may_post(s, stopping))
				post_data(q);
			/* A round closes when full, when the run ends, or at the last message. */
			if (opt.test == TEST_WRITE && opt.verify && !s->round_open && s->in_round &&
			    (s->in_round == opt.depth || stopping ||
			     (opt.iterations && s->posted >= opt.iterations)))
				close_round(q);
		}
		n = poll_cqs(wc);
		if (!n)
			idle(20);
		for (i = 0; i < n; i++) {
			client_completion(&wc[i]);
			if (WRID_KIND(wc[i].wr_id) == WR_DATA)
				done_msgs++;
		}
		now = now_seconds();
		if (n)
			activity = now;
		stall_check(now, &activity);
		if (!stopping && ((!opt.iterations && now - start >= opt.duration) ||
				  perf.interrupted))
			stopping = true;
		if (client_bw_done(stopping))
			break;
		progress_tick(&prog, now, done_msgs * opt.size, done_msgs);
	}
	end = now_seconds();
	progress_end();

	struct wire_done done = { .magic = htonl(DONE_MAGIC), .qps = htonl(opt.qps) };
	struct wire_report report;
	uint64_t *sent = calloc(opt.qps, sizeof(*sent));

	if (!sent)
		die("out of memory");
	for (q = 0; q < opt.qps; q++)
		sent[q] = htobe64(perf.qs[q].completed);
	write_full(&done, sizeof(done), "the end of the test");
	write_full(sent, opt.qps * sizeof(*sent), "the end of the test");
	free(sent);
	read_full(&report, sizeof(report), "the server's report");
	if (ntohl(report.magic) != REPORT_MAGIC)
		die("the server's report has a bad magic");
	report_line("client", end - start, done_msgs, cpu_seconds() - cpu0, &report);
	if (opt.json)
		printf("}\n");
	if (ntohl(report.errors))
		perf.errors += ntohl(report.errors);
}

/* The client's word that it is done arrives on TCP while the server polls its CQ. */
static bool server_read_done(void)
{
	struct pollfd pfd = { .fd = perf.fd, .events = POLLIN };
	struct wire_done done;
	uint64_t *sent;
	unsigned int q;

	if (poll(&pfd, 1, 0) <= 0)
		return false;
	read_full(&done, sizeof(done), "the end of the test");
	if (ntohl(done.magic) != DONE_MAGIC || ntohl(done.qps) != opt.qps)
		die("the client's end-of-test message is malformed");
	sent = calloc(opt.qps, sizeof(*sent));
	if (!sent)
		die("out of memory");
	read_full(sent, opt.qps * sizeof(*sent), "the end of the test");
	for (q = 0; q < opt.qps; q++)
		perf.qs[q].expected = be64toh(sent[q]);
	free(sent);
	return true;
}

static void server_completion(const struct ibv_wc *wc)
{
	unsigned int q = WRID_QP(wc->wr_id), slot = WRID_SLOT(wc->wr_id), k, count, round;
	struct qp_state *s = &perf.qs[q];
	uint32_t imm;

	if (wc->status != IBV_WC_SUCCESS)
		completion_failed(wc);
	switch (WRID_KIND(wc->wr_id)) {
	case WR_RECV:
		if (opt.test == TEST_SEND) {
			if (wc->byte_len != opt.size)
				die("QP %u: a SEND of %u bytes arrived, %" PRIu64 " expected", q,
				    wc->byte_len, opt.size);
			if (opt.verify)
				check_data(q, slot, s->received, SALT_CLIENT, "send");
			s->received++;
			post_recv(q, slot, true);
			break;
		}
		/* write --verify: check the round the SEND closes, then answer it */
		imm = ntohl(wc->imm_data);
		round = imm >> 16;
		count = imm & 0xffff;
		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || round != (s->round & 0xffff) ||
		    count > opt.depth)
			die("QP %u: a round closed with immediate 0x%x, round %u expected", q, imm,
			    s->round);
		for (k = 0; k < count; k++)
			check_data(q, k, s->received + k, SALT_CLIENT, "write");
		s->received += count;
		post_recv(q, 0, false);
		post_send(q, IBV_WR_SEND_WITH_IMM, WRID(WR_ROUND, q, 0), 0, 0, false,
			  s->round & 0xffff);
		s->round++;
		break;
	case WR_ROUND:
		s->outstanding--;
		break;
	default:
		die("a completion with an unknown wr_id 0x%" PRIx64, wc->wr_id);
	}
}

void server_bw(void)
{
	struct ibv_wc wc[CQ_BATCH];
	bool client_done = false;
	uint64_t received = 0;
	double cpu0, start, activity = 0, now;
	unsigned int q, k;
	int n, i;

	if (opt.test == TEST_READ && opt.verify)
		for (q = 0; q < opt.qps; q++)
			for (k = 0; k < opt.depth; k++)
				pattern_fill(slot_ptr(q, k), opt.size,
					     pattern_seed(q, k, SALT_SERVER));
	for (q = 0; q < opt.qps; q++) {
		if (opt.test == TEST_SEND)
			for (k = 0; k < opt.depth; k++)
				post_recv(q, opt.verify ? k : 0, true);
		else if (opt.test == TEST_WRITE && opt.verify)
			post_recv(q, 0, false);
	}
	sync_peer("the start");
	cpu0 = cpu_seconds();
	start = now_seconds();
	for (unsigned long spin = 0;; spin++) {
		if (perf.interrupted)
			die("interrupted");
		n = poll_cqs(wc);
		if (!n)
			idle(20);
		for (i = 0; i < n; i++)
			server_completion(&wc[i]);
		if (n || !(spin & 1023) || opt.events) {
			now = now_seconds();
			if (n)
				activity = now;
			if (!client_done && (!(spin & 1023) || opt.events)) {
				client_done = server_read_done();
				if (client_done)
					activity = now;
			}
		}
		if (client_done) {
			bool all = true;

			for (q = 0; q < opt.qps && all; q++)
				all = opt.test != TEST_SEND ||
				      perf.qs[q].received >= perf.qs[q].expected;
			for (q = 0; q < opt.qps && all; q++)
				all = !perf.qs[q].outstanding;
			if (all)
				break;
			stall_check(now_seconds(), &activity);
		}
	}
	/* The server sees SENDs arrive; of one-sided work only the client's count tells. */
	for (q = 0; q < opt.qps; q++)
		received += opt.test == TEST_SEND ? perf.qs[q].received : perf.qs[q].expected;

	struct wire_report report = { .magic = htonl(REPORT_MAGIC),
				      .errors = htonl((uint32_t)perf.errors),
				      .received = htobe64(received),
				      .verified = htobe64(perf.verified) };

	write_full(&report, sizeof(report), "the report");
	report_line("server", now_seconds() - start, received, cpu_seconds() - cpu0, NULL);
	if (opt.json)
		printf("}\n");
}
