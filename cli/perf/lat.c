/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* metaroce-perf: the latency tests, ping-pong or READ round trips (perf/perf.h). */

#include "perf/perf.h"

/* --- latency ---------------------------------------------------------------------------- */

static void lat_record(double usec)
{
	if (perf.lat_len == perf.lat_cap) {
		perf.lat_cap = perf.lat_cap ? perf.lat_cap * 2 : 65536;
		perf.lat = realloc(perf.lat, perf.lat_cap * sizeof(*perf.lat));
		if (!perf.lat)
			die("out of memory for %zu latency samples", perf.lat_cap);
	}
	perf.lat[perf.lat_len++] = usec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double percentile(double p)
{
	size_t i = (size_t)ceil(p / 100 * (double)perf.lat_len);

	return perf.lat[i ? i - 1 : 0];
}

/*
 * Wait for this side's receive, and for its own last send to complete so the buffer can be
 * refilled. Returns the receive's immediate.
 */
static uint32_t lat_wait(bool want_recv, bool *send_done)
{
	struct ibv_wc wc[4];
	bool got_recv = !want_recv;
	uint32_t imm = 0;
	double activity = now_seconds();
	int n, i;

	while (!got_recv || !*send_done) {
		if (perf.interrupted)
			die("interrupted");
		n = ibv_poll_cq(perf.cqs[0], 4, wc);
		if (n < 0)
			die("ibv_poll_cq: %s", strerror(errno));
		if (!n)
			idle(100);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				completion_failed(&wc[i]);
			if (WRID_KIND(wc[i].wr_id) == WR_RECV) {
				got_recv = true;
				imm = ntohl(wc[i].imm_data);
				if (opt.test == TEST_SEND && wc[i].byte_len != opt.size)
					die("a SEND of %u bytes arrived, %" PRIu64 " expected",
					    wc[i].byte_len, opt.size);
			} else {
				*send_done = true;
				perf.qs[0].outstanding--;
			}
		}
		if (n)
			activity = now_seconds();
		else if (now_seconds() - activity > STALL_SECONDS)
			die("no completion for %.0f s: is the peer (and its metaroced) still up?",
			    STALL_SECONDS);
	}
	return imm;
}

/* One ping or pong: a SEND with the sequence as immediate, or a WRITE with immediate. */
static void lat_post(uint64_t seq, uint32_t salt, uint32_t imm)
{
	if (opt.verify)
		pattern_fill(slot_ptr(0, LAT_OUT), opt.size, pattern_seed(0, seq, salt));
	post_send(0, opt.test == TEST_SEND ? IBV_WR_SEND_WITH_IMM : IBV_WR_RDMA_WRITE_WITH_IMM,
		  WRID(WR_DATA, 0, LAT_OUT), LAT_OUT, LAT_IN, true, imm);
}

void client_lat(void)
{
	struct progress prog;
	double start, t0, t1, cpu0, sum = 0;
	bool send_done = true;
	uint64_t seq;

	if (opt.test != TEST_READ)
		post_recv(0, LAT_IN, opt.test == TEST_SEND);
	sync_peer("the start");
	cpu0 = cpu_seconds();
	start = now_seconds();
	prog = (struct progress){ .start = start, .last = start, .next = start + opt.interval };
	for (seq = 0;; seq++) {
		t0 = now_seconds();
		if ((opt.iterations && seq >= opt.iterations) ||
		    (!opt.iterations && t0 - start >= opt.duration) || perf.interrupted)
			break;
		if (opt.test == TEST_READ) {
			if (opt.verify)
				memset(slot_ptr(0, LAT_IN), 0xee, opt.size);
			send_done = false;
			post_send(0, IBV_WR_RDMA_READ, WRID(WR_DATA, 0, LAT_IN), LAT_IN, LAT_OUT,
				  true, 0);
			lat_wait(false, &send_done);
			t1 = now_seconds();
			if (opt.verify)
				check_data(0, LAT_IN, 0, SALT_SERVER, "read");
			lat_record((t1 - t0) * 1e6);
		} else {
			send_done = false;
			lat_post(seq, SALT_CLIENT, (uint32_t)seq & 0x7fffffff);
			if (lat_wait(true, &send_done) != ((uint32_t)seq & 0x7fffffff))
				die("the server's answer carries the wrong sequence");
			t1 = now_seconds();
			if (opt.verify)
				check_data(0, LAT_IN, seq, SALT_SERVER, "answer");
			post_recv(0, LAT_IN, opt.test == TEST_SEND);
			lat_record((t1 - t0) * 1e6 / 2);
		}
		progress_tick(&prog, t1, 0, seq + 1);
	}
	double secs = now_seconds() - start;

	progress_end();
	if (opt.test != TEST_READ) {
		/* The last ping tells the server to stop; it answers that too. */
		send_done = false;
		lat_post(seq, SALT_CLIENT, IMM_STOP);
		lat_wait(true, &send_done);
	}
	/* the server's word on what it checked */
	struct wire_report report;

	write_full(&(uint8_t){ 0x53 }, 1, "the end");
	read_full(&report, sizeof(report), "the server's report");
	if (ntohl(report.magic) != REPORT_MAGIC)
		die("the server's report has a bad magic");
	perf.errors += ntohl(report.errors);
	if (opt.verify && opt.test != TEST_READ && be64toh(report.verified) != perf.lat_len)
		die("the server verified %llu of %zu pings", (unsigned long long)be64toh(report.verified),
		    perf.lat_len);
	if (!perf.lat_len)
		die("no round trip completed");
	for (size_t i = 0; i < perf.lat_len; i++)
		sum += perf.lat[i];
	qsort(perf.lat, perf.lat_len, sizeof(*perf.lat), cmp_double);
	report_line("client", secs, perf.lat_len, cpu_seconds() - cpu0, &report);
	if (opt.json)
		printf(",\"latency_us\":{\"definition\":\"%s\",\"min\":%.3f,\"p50\":%.3f,"
		       "\"p99\":%.3f,\"p99_9\":%.3f,\"max\":%.3f,\"mean\":%.3f}}\n",
		       opt.test == TEST_READ ? "round trip" : "half round trip", perf.lat[0],
		       percentile(50), percentile(99), percentile(99.9),
		       perf.lat[perf.lat_len - 1], sum / (double)perf.lat_len);
	else
		printf("  latency   %s, us: min %.2f  p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f"
		       "  mean %.2f\n", opt.test == TEST_READ ? "round trip" : "half round trip",
		       perf.lat[0], percentile(50), percentile(99), percentile(99.9),
		       perf.lat[perf.lat_len - 1], sum / (double)perf.lat_len);
}

/* The end of a latency run: the client's sync byte, then what this side checked. */
static void server_lat_report(uint64_t received)
{
	struct wire_report report = { .magic = htonl(REPORT_MAGIC),
				      .errors = htonl((uint32_t)perf.errors),
				      .received = htobe64(received),
				      .verified = htobe64(perf.verified) };
	uint8_t sync;

	read_full(&sync, 1, "the end");
	write_full(&report, sizeof(report), "the report");
}

void server_lat(void)
{
	bool send_done = true;
	double cpu0, start;
	uint64_t seq = 0;
	uint32_t imm;

	if (opt.test == TEST_READ) {
		if (opt.verify)
			pattern_fill(slot_ptr(0, LAT_OUT), opt.size,
				     pattern_seed(0, 0, SALT_SERVER));
		sync_peer("the start");
		cpu0 = cpu_seconds();
		start = now_seconds();
		server_lat_report(0);
		report_line("server", now_seconds() - start, 0, cpu_seconds() - cpu0, NULL);
		if (opt.json)
			printf("}\n");
		return;
	}
	post_recv(0, LAT_IN, opt.test == TEST_SEND);
	sync_peer("the start");
	cpu0 = cpu_seconds();
	start = now_seconds();
	for (;; seq++) {
		imm = lat_wait(true, &send_done);
		if (imm != IMM_STOP && imm != ((uint32_t)seq & 0x7fffffff))
			die("ping %" PRIu64 " carries sequence %u", seq, imm);
		if (opt.verify && imm != IMM_STOP)
			check_data(0, LAT_IN, seq, SALT_CLIENT, "ping");
		post_recv(0, LAT_IN, opt.test == TEST_SEND);
		send_done = false;
		lat_post(seq, SALT_SERVER, imm);
		if (imm == IMM_STOP)
			break;
	}
	lat_wait(false, &send_done);
	server_lat_report(seq);
	report_line("server", now_seconds() - start, seq, cpu_seconds() - cpu0, NULL);
	if (opt.json)
		printf("}\n");
}
