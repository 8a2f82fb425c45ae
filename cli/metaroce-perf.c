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



#include "perf/perf.h"

struct options opt = {
	.test = TEST_WRITE, .mode = MODE_BW, .size = 65536, .qps = 1, .depth = 0,
	.duration = 5, .progress = -1, .interval = 1, .gid_index = 0, .ib_port = 1,
	.port = "18700", .timeout = 30,
};
struct perf perf = { .fd = -1 };
const char *const test_names[] = { "write", "read", "send" };
const char *const mode_names[] = { "bw", "lat" };

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

void die(const char *fmt, ...)
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

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

const char *verbs_strerror(int ret)
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
