/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-perf: RDMA bandwidth and latency over the verbs API, with optional data checking.
 *
 * It uses <infiniband/verbs.h> alone, so it measures any verbs device: metaroce0 through
 * `metaroce-run metaroce-perf ...`, or a hardware RNIC, with the same numbers printed the same
 * way. Like perftest, a server waits for one client on a TCP port, the two exchange QP numbers,
 * PSNs, GIDs and memory keys there, and the client drives the test:
 *
 *	host A$ metaroce-perf [OPTIONS]            server
 *	host B$ metaroce-perf [OPTIONS] A          client: the test and its size are chosen here
 *
 * Bandwidth tests keep --depth work requests outstanding on each of --qps QPs for --duration
 * seconds or --iterations messages per QP. With --verify every message carries a pattern derived
 * from (QP, sequence number) and the side it lands on compares every byte: SEND payloads as
 * each receive completes; RDMA READ results as each read completes; RDMA WRITEs in rounds of
 * --depth messages closed by a SEND with immediate, after which the target checks the round and
 * answers (one-sided writes are invisible to the target until something tells it to look).
 *
 * Latency tests ping-pong one message on one QP: SEND or RDMA WRITE with immediate each way, or
 * an RDMA READ; they report half the round trip for SEND and WRITE (as perftest and sockperf
 * do) and the whole round trip for READ.
 *
 * Exit status: 0 when the test ran and every completion (and, with --verify, every byte) was
 * right; 1 on any failure; 2 on bad usage.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#ifndef METAROCE_VERSION
#define METAROCE_VERSION "unknown"
#endif

#define HELLO_MAGIC	0x4d525046u	/* "MRPF" */
#define DONE_MAGIC	0x4d52444eu	/* "MRDN" */
#define REPORT_MAGIC	0x4d525250u	/* "MRRP" */
#define WIRE_VERSION	1
#define MAX_QPS		4096
#define MAX_DEPTH	1024
#define MAX_MSG_SIZE	(1ull << 30)
#define MAX_BUFFER	(4ull << 30)	/* per side: qps x depth x size under --verify */
#define CQ_BATCH	32
#define STALL_SECONDS	10.0		/* no completion for this long: the run has failed */
#define BUF_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)
/* The immediate of a write round's closing SEND: round number and message count. */
#define ROUND_IMM(round, count)	((uint32_t)(((round) & 0xffff) << 16 | (count)))
#define IMM_STOP	0xffffffffu	/* latency: the client's last message */
/* wr_id: what the work request was, and for which QP and buffer slot. */
#define WRID(kind, qp, slot)	((uint64_t)(kind) << 56 | (uint64_t)(qp) << 24 | (slot))
#define WRID_KIND(id)	((unsigned int)((id) >> 56))
#define WRID_QP(id)	((unsigned int)(((id) >> 24) & 0xffffffu))
#define WRID_SLOT(id)	((unsigned int)((id) & 0xffffffu))

enum test { TEST_WRITE, TEST_READ, TEST_SEND };
enum mode { MODE_BW, MODE_LAT };
enum wr_kind { WR_DATA = 1, WR_ROUND, WR_RECV };

static const char *const test_names[] = { "write", "read", "send" };
static const char *const mode_names[] = { "bw", "lat" };

static struct options {
	enum test test;
	enum mode mode;
	uint64_t size;
	unsigned int qps;
	unsigned int depth;
	double duration;
	uint64_t iterations;
	bool verify;
	bool events;		/* sleep on a completion channel instead of spinning */
	bool json;
	int progress;		/* -1: when stderr is a terminal */
	double interval;
	const char *device;
	int gid_index;
	int ib_port;
	const char *port;
	const char *host;	/* NULL: server */
	double timeout;
} opt = {
	.test = TEST_WRITE, .mode = MODE_BW, .size = 65536, .qps = 1, .depth = 0,
	.duration = 5, .progress = -1, .interval = 1, .gid_index = 0, .ib_port = 1,
	.port = "18700", .timeout = 30,
};

/* Both peers send this first; the server answers with the values it accepted. */
struct wire_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t test;
	uint32_t mode;
	uint32_t qps;
	uint32_t depth;
	uint32_t verify;
	uint32_t mtu;
	uint64_t size;
	uint64_t iterations;	/* latency: per run; bandwidth: per QP; 0 = by duration */
};

struct wire_qp {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t reserved;
	uint64_t addr;		/* this QP's region in the peer's buffer */
	uint8_t gid[16];
};

struct wire_done {
	uint32_t magic;
	uint32_t qps;
	/* followed by one big-endian uint64_t per QP: messages the client sent */
};

struct wire_report {
	uint32_t magic;
	uint32_t errors;
	uint64_t received;
	uint64_t verified;
};

/* Per QP, on either side. */
struct qp_state {
	struct ibv_qp *qp;
	uint32_t psn;
	struct wire_qp remote;
	uint64_t posted;		/* data messages posted */
	uint64_t completed;		/* data messages completed */
	uint64_t received;		/* receives completed (server: data; client: replies) */
	uint64_t expected;		/* server, send test: what the client says it sent */
	unsigned int outstanding;	/* send-queue work requests in flight */
	/* write --verify rounds */
	unsigned int round;
	unsigned int in_round;		/* writes posted in this round */
	bool round_open;		/* closing SEND posted, answer not yet here */
	bool round_send_done;		/* closing SEND completed */
	bool round_answered;
};

static struct perf {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq **cqs;		/* as many as the device's CQ size needs */
	unsigned int num_cqs;
	unsigned int qps_per_cq;
	struct ibv_comp_channel *channel;	/* --events */
	bool armed;			/* every CQ asked for an event since the last wake-up */
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	size_t qp_stride;		/* bytes between QPs' regions (0: all share one) */
	unsigned int slots;		/* message buffers per region */
	struct qp_state *qs;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	int fd;				/* TCP to the peer */
	bool client;
	uint64_t errors;
	uint64_t verified;
	double *lat;			/* latency samples, microseconds */
	size_t lat_len, lat_cap;
	volatile sig_atomic_t interrupted;
} perf = { .fd = -1 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: metaroce-perf [OPTIONS]            run a server for one client\n"
"       metaroce-perf [OPTIONS] SERVER     run the test against SERVER\n"
"\n"
"  -t, --test write|read|send   the operation (default write)\n"
"  -m, --mode bw|lat            bandwidth or ping-pong latency (default bw)\n"
"  -s, --size BYTES             message size, K/M/G suffixes (default 64K)\n"
"  -q, --qps N                  QPs, bandwidth only (default 1, at most %u)\n"
"  -Q, --depth N                work requests in flight per QP (default 16; latency 1)\n"
"  -D, --duration SECONDS       how long the test runs (default 5)\n"
"  -n, --iterations N           messages per QP instead of a duration\n"
"  -V, --verify                 check every byte that arrives\n"
"  -e, --events                 sleep on a completion channel instead of spinning\n"
"  -j, --json                   print the summary as JSON on stdout\n"
"  -P, --progress               a progress line every interval, even when not a terminal\n"
"      --no-progress            never a progress line\n"
"  -i, --interval SECONDS       progress interval (default 1)\n"
"  -d, --device NAME            verbs device (default: the first)\n"
"  -x, --gid-index N            GID index (default 0)\n"
"  -p, --port PORT              TCP port for the set-up exchange (default 18700)\n"
"  -T, --timeout SECONDS        give up connecting after this long (default 30)\n"
"  -h, --help                   this text\n"
"      --version                the version\n"
"\n"
"The client's choice of test, mode, size, QPs, depth and --verify is the server's.\n"
"Run it through metaroce-run to use metaroced: metaroce-run metaroce-perf ...\n",
		MAX_QPS);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("metaroce-perf: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("metaroce-perf: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\nTry 'metaroce-perf --help'.\n", stderr);
	va_end(ap);
	exit(2);
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static const char *verbs_strerror(int ret)
{
	return strerror(ret > 0 ? ret : errno);
}

/* --- options ------------------------------------------------------------------------ */

static uint64_t parse_size(const char *s, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		usage_error("%s: '%s' is not a number", what, s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		usage_error("%s: '%s' has trailing characters", what, s);
	return v;
}

static double parse_seconds(const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400)
		usage_error("%s: '%s' is not a number of seconds in (0, 86400]", what, s);
	return v;
}

static int parse_choice(const char *s, const char *const *names, int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	usage_error("%s: '%s' is not one of %s%s%s", what, s, names[0],
		    n > 2 ? ", " : " or ", n > 2 ? "read or send" : names[1]);
}

static void parse_options(int argc, char **argv)
{
	enum { OPT_NO_PROGRESS = 256, OPT_VERSION };
	static const struct option longopts[] = {
		{ "test", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "qps", required_argument, NULL, 'q' },
		{ "depth", required_argument, NULL, 'Q' },
		{ "duration", required_argument, NULL, 'D' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "verify", no_argument, NULL, 'V' },
		{ "events", no_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "interval", required_argument, NULL, 'i' },
		{ "device", required_argument, NULL, 'd' },
		{ "gid-index", required_argument, NULL, 'x' },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	bool have_duration = false;
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "t:m:s:q:Q:D:n:VejPi:d:x:p:T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't': opt.test = parse_choice(optarg, test_names, 3, "--test"); break;
		case 'm': opt.mode = parse_choice(optarg, mode_names, 2, "--mode"); break;
		case 's':
			opt.size = parse_size(optarg, "--size");
			if (!opt.size || opt.size > MAX_MSG_SIZE)
				usage_error("--size: %s is outside 1..1G", optarg);
			break;
		case 'q':
			v = parse_size(optarg, "--qps");
			if (!v || v > MAX_QPS)
				usage_error("--qps: %s is outside 1..%u", optarg, MAX_QPS);
			opt.qps = (unsigned int)v;
			break;
		case 'Q':
			v = parse_size(optarg, "--depth");
			if (!v || v > MAX_DEPTH)
				usage_error("--depth: %s is outside 1..%u", optarg, MAX_DEPTH);
			opt.depth = (unsigned int)v;
			break;
		case 'D':
			opt.duration = parse_seconds(optarg, "--duration");
			have_duration = true;
			break;
		case 'n':
			opt.iterations = parse_size(optarg, "--iterations");
			if (!opt.iterations)
				usage_error("--iterations must be at least 1");
			break;
		case 'V': opt.verify = true; break;
		case 'e': opt.events = true; break;
		case 'j': opt.json = true; break;
		case 'P': opt.progress = 1; break;
		case OPT_NO_PROGRESS: opt.progress = 0; break;
		case 'i': opt.interval = parse_seconds(optarg, "--interval"); break;
		case 'd': opt.device = optarg; break;
		case 'x':
			v = parse_size(optarg, "--gid-index");
			if (v > 255)
				usage_error("--gid-index: %s is outside 0..255", optarg);
			opt.gid_index = (int)v;
			break;
		case 'p': opt.port = optarg; break;
		case 'T': opt.timeout = parse_seconds(optarg, "--timeout"); break;
		case 'h': usage(stdout); exit(0);
		case OPT_VERSION: printf("metaroce-perf %s\n", METAROCE_VERSION); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		opt.host = argv[optind++];
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (have_duration && opt.iterations)
		usage_error("--duration and --iterations exclude each other");
	if (opt.mode == MODE_LAT) {
		if (opt.qps != 1)
			usage_error("latency tests ping-pong on one QP: drop --qps");
		if (opt.depth > 1)
			usage_error("latency tests keep one message in flight: drop --depth");
		opt.depth = 1;
	} else if (!opt.depth) {
		opt.depth = 16;
	}
	if (opt.progress < 0)
		opt.progress = isatty(STDERR_FILENO) && !opt.json;
}

/* --- data patterns -------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t pattern_seed(unsigned int qp, uint64_t seq, uint32_t salt)
{
	return (uint64_t)qp << 40 ^ seq * 0xd6e8feb86659fd93ull ^ salt;
}

static void pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t word;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		word = splitmix(&seed);
		memcpy(p + i, &word, 8);
	}
	if (i < len) {
		word = splitmix(&seed);
		memcpy(p + i, &word, len - i);
	}
}

/* The offset of the first wrong byte, or -1. */
static int64_t pattern_check(const uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t word;
	size_t i, j;

	for (i = 0; i < len; i += 8) {
		word = splitmix(&seed);
		if (memcmp(p + i, &word, len - i < 8 ? len - i : 8))
			for (j = 0; j < 8 && i + j < len; j++)
				if (p[i + j] != ((const uint8_t *)&word)[j])
					return (int64_t)(i + j);
	}
	return -1;
}

/* Salts keep the two directions and the tests' kinds of data apart. */
enum { SALT_CLIENT = 0x1c11e, SALT_SERVER = 0x5e77e };
/* Latency tests send from one slot and receive into the other, on both sides. */
enum { LAT_OUT = 0, LAT_IN = 1 };

static uint8_t *slot_ptr(unsigned int q, unsigned int slot)
{
	return perf.buf + q * perf.qp_stride + (size_t)slot * opt.size;
}

static void check_data(unsigned int q, unsigned int slot, uint64_t seq, uint32_t salt,
		       const char *what)
{
	int64_t bad = pattern_check(slot_ptr(q, slot), opt.size, pattern_seed(q, seq, salt));

	if (bad >= 0) {
		perf.errors++;
		fprintf(stderr, "metaroce-perf: QP %u %s message %" PRIu64 ": byte %" PRId64
			" of %" PRIu64 " is wrong\n", q, what, seq, bad, opt.size);
	} else {
		perf.verified++;
	}
}

/* --- TCP set-up channel --------------------------------------------------------------- */

static void write_full(const void *buf, size_t len, const char *what)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(perf.fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR && !perf.interrupted)
			continue;
		if (n < 0 && errno == EINTR)
			die("interrupted during %s", what);
		if (n < 0)
			die("TCP send during %s: %s", what, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void read_full(void *buf, size_t len, const char *what)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = recv(perf.fd, p, len, 0);
		if (n < 0 && errno == EINTR && !perf.interrupted)
			continue;
		if (n < 0 && errno == EINTR)
			die("interrupted during %s", what);
		if (n == 0)
			die("the peer closed the TCP connection during %s", what);
		if (n < 0)
			die("TCP receive during %s: %s", what, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void tcp_accept(void)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	int listener = -1, ret, one = 1, last_error = 0;

	ret = getaddrinfo(NULL, opt.port, &hints, &res);
	if (ret)
		die("TCP port %s: %s", opt.port, gai_strerror(ret));
	for (ai = res; ai && listener < 0; ai = ai->ai_next) {
		listener = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (listener < 0) {
			last_error = errno;
			continue;
		}
		/* Only spares waiting out TIME_WAIT between runs; harmless if refused. */
		(void)setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(listener, ai->ai_addr, ai->ai_addrlen) || listen(listener, 1)) {
			last_error = errno;
			close(listener);
			listener = -1;
		}
	}
	freeaddrinfo(res);
	if (listener < 0)
		die("cannot listen on TCP port %s: %s", opt.port, strerror(last_error));
	if (!opt.json)
		printf("metaroce-perf: waiting for a client on TCP port %s\n", opt.port);
	fflush(stdout);
	do
		perf.fd = accept(listener, NULL, NULL);
	while (perf.fd < 0 && errno == EINTR && !perf.interrupted);
	if (perf.fd < 0)
		die("accept on TCP port %s: %s", opt.port, strerror(errno));
	close(listener);
	(void)setsockopt(perf.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void tcp_connect(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	const struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
	double deadline = now_seconds() + opt.timeout;
	struct addrinfo *res, *ai;
	int ret, last_error = 0, one = 1;

	ret = getaddrinfo(opt.host, opt.port, &hints, &res);
	if (ret)
		die("cannot resolve %s: %s", opt.host, gai_strerror(ret));
	/* The server may still be starting: scripts launch both at once. */
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			perf.fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (perf.fd >= 0 && !connect(perf.fd, ai->ai_addr, ai->ai_addrlen)) {
				freeaddrinfo(res);
				(void)setsockopt(perf.fd, IPPROTO_TCP, TCP_NODELAY, &one,
						 sizeof(one));
				return;
			}
			last_error = errno;
			if (perf.fd >= 0)
				close(perf.fd);
		}
		if (now_seconds() >= deadline || perf.interrupted)
			die("cannot connect to %s port %s: %s", opt.host, opt.port,
			    strerror(last_error));
		nanosleep(&pause, NULL);
	}
}

/* --- verbs resources -------------------------------------------------------------------- */

static void open_device(void)
{
	struct ibv_device **list;
	struct ibv_port_attr port;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list)
		die("no verbs device (%s): run it through metaroce-run to use metaroced",
		    strerror(errno));
	for (i = 0; i < n; i++)
		if (!opt.device || !strcmp(ibv_get_device_name(list[i]), opt.device))
			break;
	if (i == n)
		die(opt.device ? "no verbs device named %s (is the program run through "
			"metaroce-run?)" : "no verbs device%s (run it through metaroce-run to use "
			"metaroced)", opt.device ? opt.device : "");
	perf.ctx = ibv_open_device(list[i]);
	if (!perf.ctx)
		die("cannot open %s: %s", ibv_get_device_name(list[i]), strerror(errno));
	opt.device = strdup(ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	if (ibv_query_port(perf.ctx, (uint8_t)opt.ib_port, &port))
		die("ibv_query_port: %s", strerror(errno));
	if (port.state != IBV_PORT_ACTIVE)
		die("port %d of %s is not active", opt.ib_port, opt.device);
	perf.mtu = port.active_mtu;
	if (ibv_query_gid(perf.ctx, (uint8_t)opt.ib_port, opt.gid_index, &perf.gid))
		die("GID index %d of %s: %s", opt.gid_index, opt.device, strerror(errno));
	perf.pd = ibv_alloc_pd(perf.ctx);
	if (!perf.pd)
		die("ibv_alloc_pd: %s", strerror(errno));
}

static void create_resources(void)
{
	struct ibv_device_attr dev;
	unsigned int q, c, per_qp;
	size_t regions;
	int ret;

	if (ibv_query_device(perf.ctx, &dev))
		die("ibv_query_device: %s", strerror(errno));
	if (opt.depth + 2 > (unsigned int)dev.max_qp_wr)
		die("--depth %u needs %u work requests per queue; %s allows %d", opt.depth,
		    opt.depth + 2, opt.device, dev.max_qp_wr);
	if ((unsigned int)dev.max_qp < opt.qps)
		die("--qps %u: %s allows %d QPs", opt.qps, opt.device, dev.max_qp);
	/* Without --verify every QP shares one region: no byte is read, only moved. */
	perf.slots = opt.mode == MODE_LAT ? 2 : opt.depth;
	regions = opt.verify ? opt.qps : 1;
	perf.qp_stride = opt.verify ? (size_t)perf.slots * opt.size : 0;
	if ((double)regions * perf.slots * (double)opt.size > (double)MAX_BUFFER)
		die("--qps x --depth x --size = %.0f bytes per side: more than %llu GiB",
		    (double)regions * perf.slots * (double)opt.size, MAX_BUFFER >> 30);
	perf.buf_len = regions * perf.slots * opt.size;
	if (posix_memalign((void **)&perf.buf, 4096, perf.buf_len))
		die("cannot allocate %zu bytes", perf.buf_len);
	memset(perf.buf, 0, perf.buf_len);
	perf.mr = ibv_reg_mr(perf.pd, perf.buf, perf.buf_len, BUF_ACCESS);
	if (!perf.mr)
		die("ibv_reg_mr of %zu bytes: %s", perf.buf_len, strerror(errno));
	/* A CQ can never overrun: each holds every completion its QPs can have pending. */
	per_qp = 2 * opt.depth + 4;
	if (per_qp > (unsigned int)dev.max_cqe)
		die("--depth %u needs CQs of %u entries; %s allows %d", opt.depth, per_qp,
		    opt.device, dev.max_cqe);
	perf.qps_per_cq = (unsigned int)dev.max_cqe / per_qp;
	perf.num_cqs = (opt.qps + perf.qps_per_cq - 1) / perf.qps_per_cq;
	perf.cqs = calloc(perf.num_cqs, sizeof(*perf.cqs));
	perf.qs = calloc(opt.qps, sizeof(*perf.qs));
	if (!perf.cqs || !perf.qs)
		die("out of memory");
	if (opt.events) {
		perf.channel = ibv_create_comp_channel(perf.ctx);
		if (!perf.channel)
			die("ibv_create_comp_channel: %s", strerror(errno));
	}
	for (c = 0; c < perf.num_cqs; c++) {
		unsigned int n = opt.qps - c * perf.qps_per_cq;

		n = n < perf.qps_per_cq ? n : perf.qps_per_cq;
		perf.cqs[c] = ibv_create_cq(perf.ctx, (int)(n * per_qp), NULL, perf.channel, 0);
		if (!perf.cqs[c])
			die("ibv_create_cq with %u entries: %s", n * per_qp, strerror(errno));
	}
	for (q = 0; q < opt.qps; q++) {
		struct ibv_cq *cq = perf.cqs[q / perf.qps_per_cq];
		struct ibv_qp_init_attr init = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = opt.depth + 2, .max_recv_wr = opt.depth + 2,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT,
					    .port_num = (uint8_t)opt.ib_port,
					    .qp_access_flags = BUF_ACCESS };
		struct qp_state *s = &perf.qs[q];

		s->qp = ibv_create_qp(perf.pd, &init);
		if (!s->qp)
			die("cannot create QP %u of %u: %s", q + 1, opt.qps, strerror(errno));
		ret = ibv_modify_qp(s->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		if (ret)
			die("QP %u to INIT: %s", q, verbs_strerror(ret));
		if (getrandom(&s->psn, sizeof(s->psn), 0) != (ssize_t)sizeof(s->psn))
			die("getrandom: %s", strerror(errno));
		s->psn &= 0xffffff;
	}
}

static void connect_qps(void)
{
	unsigned int q, rd_atomic = 16;
	int ret;

	for (q = 0; q < opt.qps; q++) {
		struct qp_state *s = &perf.qs[q];
		struct ibv_qp_attr attr = {
			.qp_state = IBV_QPS_RTR, .path_mtu = perf.mtu,
			.dest_qp_num = s->remote.qpn, .rq_psn = s->remote.psn,
			.max_dest_rd_atomic = (uint8_t)rd_atomic, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = (uint8_t)opt.ib_port,
				     .grh = { .sgid_index = (uint8_t)opt.gid_index,
					      .hop_limit = 64 } },
		};

		memcpy(attr.ah_attr.grh.dgid.raw, s->remote.gid, 16);
		ret = ibv_modify_qp(s->qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		if (ret)
			die("QP %u to RTR: %s", q, verbs_strerror(ret));
		attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14,
					     .retry_cnt = 7, .rnr_retry = 7, .sq_psn = s->psn,
					     .max_rd_atomic = (uint8_t)rd_atomic };
		ret = ibv_modify_qp(s->qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				    IBV_QP_MAX_QP_RD_ATOMIC);
		if (ret)
			die("QP %u to RTS: %s", q, verbs_strerror(ret));
	}
}

static void destroy_resources(void)
{
	unsigned int q;

	for (q = 0; q < opt.qps; q++)
		if (perf.qs[q].qp && ibv_destroy_qp(perf.qs[q].qp))
			die("ibv_destroy_qp: %s", strerror(errno));
	for (q = 0; q < perf.num_cqs; q++)
		if (ibv_destroy_cq(perf.cqs[q]))
			die("ibv_destroy_cq: %s", strerror(errno));
	if (perf.channel && ibv_destroy_comp_channel(perf.channel))
		die("ibv_destroy_comp_channel: %s", strerror(errno));
	if (ibv_dereg_mr(perf.mr) || ibv_dealloc_pd(perf.pd) || ibv_close_device(perf.ctx))
		die("tearing down: %s", strerror(errno));
	free(perf.cqs);
	free(perf.qs);
	free(perf.buf);
}

/* --- the set-up exchange -------------------------------------------------------------- */

static void hello_to_wire(struct wire_hello *h)
{
	*h = (struct wire_hello){
		.magic = htonl(HELLO_MAGIC), .version = htonl(WIRE_VERSION),
		.test = htonl(opt.test), .mode = htonl(opt.mode), .qps = htonl(opt.qps),
		.depth = htonl(opt.depth), .verify = htonl(opt.verify),
		.mtu = htonl(perf.mtu), .size = htobe64(opt.size),
		.iterations = htobe64(opt.iterations),
	};
}

/* The server adopts the client's test; it checks what it can before creating anything. */
static void hello_from_wire(const struct wire_hello *h)
{
	if (ntohl(h->magic) != HELLO_MAGIC)
		die("the peer is not metaroce-perf (bad magic 0x%08x)", ntohl(h->magic));
	if (ntohl(h->version) != WIRE_VERSION)
		die("the peer speaks set-up version %u, this is %u", ntohl(h->version),
		    WIRE_VERSION);
	if (ntohl(h->test) > TEST_SEND || ntohl(h->mode) > MODE_LAT ||
	    !ntohl(h->qps) || ntohl(h->qps) > MAX_QPS || !ntohl(h->depth) ||
	    ntohl(h->depth) > MAX_DEPTH || !be64toh(h->size) || be64toh(h->size) > MAX_MSG_SIZE)
		die("the client asked for a test out of range");
	opt.test = ntohl(h->test);
	opt.mode = ntohl(h->mode);
	opt.qps = ntohl(h->qps);
	opt.depth = ntohl(h->depth);
	opt.verify = ntohl(h->verify) != 0;
	opt.size = be64toh(h->size);
	opt.iterations = be64toh(h->iterations);
}

static void exchange_qps(void)
{
	struct wire_qp *out, *in;
	unsigned int q;

	out = calloc(opt.qps, sizeof(*out));
	in = calloc(opt.qps, sizeof(*in));
	if (!out || !in)
		die("out of memory");
	for (q = 0; q < opt.qps; q++) {
		out[q] = (struct wire_qp){
			.qpn = htonl(perf.qs[q].qp->qp_num), .psn = htonl(perf.qs[q].psn),
			.rkey = htonl(perf.mr->rkey),
			.addr = htobe64((uint64_t)(uintptr_t)slot_ptr(q, 0)),
		};
		memcpy(out[q].gid, perf.gid.raw, 16);
	}
	/* The client speaks first, so neither waits on a full socket buffer. */
	if (perf.client) {
		write_full(out, opt.qps * sizeof(*out), "the QP exchange");
		read_full(in, opt.qps * sizeof(*in), "the QP exchange");
	} else {
		read_full(in, opt.qps * sizeof(*in), "the QP exchange");
		write_full(out, opt.qps * sizeof(*out), "the QP exchange");
	}
	for (q = 0; q < opt.qps; q++) {
		struct wire_qp *r = &perf.qs[q].remote;

		r->qpn = ntohl(in[q].qpn);
		r->psn = ntohl(in[q].psn);
		r->rkey = ntohl(in[q].rkey);
		r->addr = be64toh(in[q].addr);
		memcpy(r->gid, in[q].gid, 16);
	}
	free(out);
	free(in);
}

static void sync_peer(const char *what)
{
	uint8_t out = 0x53, in;

	if (perf.client) {
		write_full(&out, 1, what);
		read_full(&in, 1, what);
	} else {
		read_full(&in, 1, what);
		write_full(&out, 1, what);
	}
	if (in != 0x53)
		die("the peer sent 0x%02x instead of a sync byte during %s", in, what);
}

static void set_up(void)
{
	struct wire_hello mine, theirs;
	enum ibv_mtu peer_mtu;

	/* The device first: without one there is nothing to wait for a peer with. */
	open_device();
	if (perf.client) {
		tcp_connect();
		hello_to_wire(&mine);
		write_full(&mine, sizeof(mine), "the hello");
		read_full(&theirs, sizeof(theirs), "the hello");
		if (ntohl(theirs.magic) != HELLO_MAGIC)
			die("the server is not metaroce-perf (bad magic 0x%08x)",
			    ntohl(theirs.magic));
	} else {
		tcp_accept();
		read_full(&theirs, sizeof(theirs), "the hello");
		hello_from_wire(&theirs);
		hello_to_wire(&mine);
		write_full(&mine, sizeof(mine), "the hello");
	}
	peer_mtu = (enum ibv_mtu)ntohl(theirs.mtu);
	if (peer_mtu >= IBV_MTU_256 && peer_mtu < perf.mtu)
		perf.mtu = peer_mtu;
	create_resources();
	exchange_qps();
}

/* --- posting ---------------------------------------------------------------------------- */

static void post_send(unsigned int q, enum ibv_wr_opcode opcode, uint64_t wr_id,
		      unsigned int slot, unsigned int remote_slot, bool with_data, uint32_t imm)
{
	struct qp_state *s = &perf.qs[q];
	struct ibv_sge sge = { .addr = (uintptr_t)slot_ptr(q, slot),
			       .length = (uint32_t)opt.size, .lkey = perf.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = with_data,
				  .opcode = opcode, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(imm) };
	struct ibv_send_wr *bad;
	int ret;

	if (opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    opcode == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = s->remote.addr + (uint64_t)remote_slot * opt.size;
		wr.wr.rdma.rkey = s->remote.rkey;
	}
	ret = ibv_post_send(s->qp, &wr, &bad);
	if (ret)
		die("ibv_post_send on QP %u: %s", q, verbs_strerror(ret));
	s->outstanding++;
}

static void post_recv(unsigned int q, unsigned int slot, bool with_data)
{
	struct ibv_sge sge = { .addr = (uintptr_t)slot_ptr(q, slot),
			       .length = (uint32_t)opt.size, .lkey = perf.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WRID(WR_RECV, q, slot), .sg_list = &sge,
				  .num_sge = with_data };
	struct ibv_recv_wr *bad;
	int ret;

	ret = ibv_post_recv(perf.qs[q].qp, &wr, &bad);
	if (ret)
		die("ibv_post_recv on QP %u: %s", q, verbs_strerror(ret));
}

static void completion_failed(const struct ibv_wc *wc)
{
	die("QP %u: %s completion failed: %s (vendor error 0x%x)", WRID_QP(wc->wr_id),
	    WRID_KIND(wc->wr_id) == WR_RECV ? "receive" : "send",
	    ibv_wc_status_str(wc->status), wc->vendor_err);
}

/* --- progress ---------------------------------------------------------------------------- */

struct progress {
	double start, last, next;
	uint64_t last_bytes, last_msgs;
	size_t last_lat;
};

static void progress_tick(struct progress *p, double now, uint64_t bytes, uint64_t msgs)
{
	double dt = now - p->last, sum = 0;
	size_t i;

	if (!opt.progress || now < p->next)
		return;
	if (opt.mode == MODE_BW) {
		fprintf(stderr, "[%6.1fs] %8.3f Gbit/s  %10.0f msg/s",
			now - p->start, (double)(bytes - p->last_bytes) * 8 / dt / 1e9,
			(double)(msgs - p->last_msgs) / dt);
	} else {
		for (i = p->last_lat; i < perf.lat_len; i++)
			sum += perf.lat[i];
		fprintf(stderr, "[%6.1fs] %10.0f msg/s  mean %8.2f us",
			now - p->start, (double)(msgs - p->last_msgs) / dt,
			perf.lat_len > p->last_lat ? sum / (double)(perf.lat_len - p->last_lat) : 0);
		p->last_lat = perf.lat_len;
	}
	if (opt.verify)
		fprintf(stderr, "  verified %" PRIu64, perf.verified);
	fputs(isatty(STDERR_FILENO) ? "\r" : "\n", stderr);
	fflush(stderr);
	p->last = now;
	p->next = now + opt.interval;
	p->last_bytes = bytes;
	p->last_msgs = msgs;
}

static void progress_end(void)
{
	if (opt.progress && isatty(STDERR_FILENO))
		fputs("\n", stderr);
}

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
static void idle(int timeout_ms)
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

static void report_line(const char *role, double secs, uint64_t msgs, double cpu,
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

static void client_bw(void)
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

static void server_bw(void)
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

static void client_lat(void)
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

static void server_lat(void)
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

static void on_signal(int sig)
{
	(void)sig;
	perf.interrupted = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };

	parse_options(argc, argv);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	perf.client = opt.host != NULL;
	set_up();
	connect_qps();
	if (opt.mode == MODE_BW)
		perf.client ? client_bw() : server_bw();
	else
		perf.client ? client_lat() : server_lat();
	fflush(stdout);
	destroy_resources();
	close(perf.fd);
	free(perf.lat);
	if (perf.errors) {
		fprintf(stderr, "metaroce-perf: %" PRIu64 " message%s arrived wrong\n", perf.errors,
			perf.errors == 1 ? "" : "s");
		return 1;
	}
	return 0;
}
