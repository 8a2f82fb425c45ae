/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * verbs_check: byte-exact check of every RC operation through the public verbs API.
 *
 * Like ibv_rc_pingpong, but it proves correctness rather than liveness. RDMA WRITE, WRITE with
 * immediate, SEND, SEND with immediate and RDMA READ each carry a pattern derived from
 * (iteration, op, size, QP) between unaligned offsets of malloc'ed buffers; the side the bytes
 * land on compares every one of them and the guard bytes around them, and every completion is
 * checked field by field. Only <infiniband/verbs.h> is used, so any provider, or a verbs
 * library put in front with LD_PRELOAD, can be put under it.
 *
 *	host A$ verbs_check -d DEV        server: waits for one client on TCP port 18600
 *	host B$ verbs_check -d DEV A      client: connects to A; the server follows its plan
 *	      $ verbs_check -l            both peers in this process, through the local GID
 *
 * Exit status: 0 when every completion and every byte was right, 1 on any failure, 2 on bad
 * usage.
 */


#include "check/check.h"

const struct op_info op_table[OP_COUNT] = {
	[OP_WRITE] = { "write", IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_RECV,
		       IBV_QP_EX_WITH_RDMA_WRITE, true, false, false },
	[OP_WRITE_IMM] = { "write_imm", IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE,
			   IBV_WC_RECV_RDMA_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
			   true, true, true },
	[OP_SEND] = { "send", IBV_WR_SEND, IBV_WC_SEND, IBV_WC_RECV, IBV_QP_EX_WITH_SEND,
		      false, true, false },
	[OP_SEND_IMM] = { "send_imm", IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, IBV_WC_RECV,
			  IBV_QP_EX_WITH_SEND_WITH_IMM, false, true, true },
	[OP_READ] = { "read", IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, IBV_WC_RECV,
		      IBV_QP_EX_WITH_RDMA_READ, true, false, false },
};

static struct side sides[2];

struct options opt = {
	.plan = { .num_qps = 1, .ops = ALL_OPS, .iterations = 1, .num_sizes = 8,
		  .sizes = { 1, 7, 64, 4095, 4096, 65537, (1 << 20) + 3, 16 << 20 } },
	.port = "18600", .ib_port = 1, .timeout_sec = 30,
};

static void __attribute__((noreturn, format(printf, 3, 0)))
vfail(int status, const char *context, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "verbs_check: %s", context);
	vfprintf(stderr, fmt, ap);
	fputs(status == 2 ? " (see --help)\n" : "\n", stderr);
	exit(status);
}

void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(1, "", fmt, ap);
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(2, "", fmt, ap);
}

const char *op_label(const struct round *rd)
{
	return rd->reverse ? "send back" : op_table[rd->op].name;
}

/* A failure within a round, named by op, size and QP. */
void __attribute__((noreturn, format(printf, 3, 4)))
round_fail(const struct round *rd, unsigned int q, const char *fmt, ...)
{
	char context[64];
	va_list ap;

	snprintf(context, sizeof(context), "%s %zu B on QP %u: ", op_label(rd), rd->size, q);
	va_start(ap, fmt);
	vfail(1, context, fmt, ap);
}

/* Verbs calls return an errno value, or -1 with errno set or, for some, not set at all. */
const char *verbs_strerror(int ret)
{
	if (ret > 0)
		return strerror(ret);
	return errno ? strerror(errno) : "failed";
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- options ------------------------------------------------------------------------- */

static void __attribute__((noreturn)) usage(FILE *out, int status)
{
	fputs("usage: verbs_check [options]          server: waits for one client on TCP\n"
	      "       verbs_check [options] HOST     client: connects to the server on HOST\n"
	      "       verbs_check -l [options]       loopback: both peers in this process\n"
	      "\n"
	      "Moves a known pattern with every RC operation and checks every byte and every\n"
	      "completion. The server follows the client's -q, -s, -o and -n.\n"
	      "\n"
	      "  -p, --port N        TCP port for the out-of-band exchange (default 18600)\n"
	      "  -d, --ib-dev NAME   RDMA device (default: the first)\n"
	      "  -i, --ib-port N     device port (default 1)\n"
	      "  -g, --gid-idx N     GID index, the RoCE GRH source (default 0)\n"
	      "  -q, --qps N         QPs used at once, 1..256 (default 1)\n"
	      "  -s, --sizes LIST    message sizes in bytes; K, M and + allowed\n"
	      "                      (default 1,7,64,4095,4096,65537,1M+3,16M)\n"
	      "  -o, --ops LIST      subset of write,write_imm,send,send_imm,read (default all)\n"
	      "  -x, --extended      post with ibv_wr_*, poll with ibv_start_poll, query with\n"
	      "                      ibv_query_device_ex, register with ibv_reg_mr_iova2\n"
	      "  -e, --events        sleep on a completion channel instead of busy polling\n"
	      "  -l, --loopback      no TCP: two peers in this process, joined by the local GID\n"
	      "  -n, --iterations N  run the sequence N times, 0 = until killed (default 1)\n"
	      "  -t, --timeout SEC   wait at most SEC seconds for each completion (default 30)\n"
	      "  -v, --verbose       print the QPs and every round\n"
	      "  -h, --help          print this help\n"
	      "\n"
	      "The client is the requester of every op; when send is chosen, each iteration ends\n"
	      "with sends from the server to the client (\"send back\"). Each peer allocates\n"
	      "qps x (largest size + 64) bytes. Exit status: 0 all verified, 1 failure, 2 usage.\n",
	      out);
	exit(status);
}

static unsigned long parse_number(const char *arg, unsigned long min, unsigned long max,
				  const char *what)
{
	unsigned long value;
	char *end;

	errno = 0;
	value = strtoul(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || errno || *end || value < min || value > max)
		usage_error("%s takes a number from %lu to %lu, not '%s'", what, min, max, arg);
	return value;
}

/* "65537", "4K", "1M+3": terms with an optional K or M suffix, added up. */
static void parse_size(const char *item)
{
	unsigned long long total = 0, term;
	const char *p = item;
	char *end;

	if (opt.plan.num_sizes == MAX_SIZES)
		usage_error("--sizes takes at most %d sizes", MAX_SIZES);
	while (*p >= '0' && *p <= '9') {
		errno = 0;
		term = strtoull(p, &end, 10);
		if (errno || term > MAX_MSG_SIZE)
			break;
		if (*end == 'K' || *end == 'M')
			term <<= *end++ == 'K' ? 10 : 20;
		total += term;
		if (total > MAX_MSG_SIZE)
			break;
		if (*end == '\0') {
			opt.plan.sizes[opt.plan.num_sizes++] = (size_t)total;
			return;
		}
		if (*end != '+')
			break;
		p = end + 1;
	}
	usage_error("bad size '%s': bytes up to %lu; K, M and + allowed, as in 1M+3", item,
		    MAX_MSG_SIZE);
}

static void parse_op(const char *item)
{
	unsigned int op;

	for (op = 0; op < OP_COUNT; op++) {
		if (!strcmp(item, op_table[op].name)) {
			opt.plan.ops |= 1u << op;
			return;
		}
	}
	usage_error("unknown op '%s' in --ops", item);
}

static void parse_list(const char *arg, void (*parse_item)(const char *item))
{
	char *copy = strdup(arg), *rest = copy, *item;

	if (!copy)
		die("out of memory");
	while ((item = strsep(&rest, ",")))
		parse_item(item);
	free(copy);
}

static void parse_options(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "qps", required_argument, NULL, 'q' },
		{ "sizes", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'o' },
		{ "extended", no_argument, NULL, 'x' },
		{ "events", no_argument, NULL, 'e' },
		{ "loopback", no_argument, NULL, 'l' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "p:d:i:g:q:s:o:xeln:t:vh", long_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			parse_number(optarg, 1, 65535, "--port");
			opt.port = optarg;
			break;
		case 'd':
			opt.ib_dev = optarg;
			break;
		case 'i':
			opt.ib_port = (uint8_t)parse_number(optarg, 1, 255, "--ib-port");
			break;
		case 'g':
			opt.gid_idx = (uint8_t)parse_number(optarg, 0, 255, "--gid-idx");
			break;
		case 'q':
			opt.plan.num_qps = (unsigned int)parse_number(optarg, 1, MAX_QPS, "--qps");
			break;
		case 's':
			opt.plan.num_sizes = 0;
			parse_list(optarg, parse_size);
			break;
		case 'o':
			opt.plan.ops = 0;
			parse_list(optarg, parse_op);
			break;
		case 'x':
			opt.extended = true;
			break;
		case 'e':
			opt.events = true;
			break;
		case 'l':
			opt.loopback = true;
			break;
		case 'n':
			opt.plan.iterations = parse_number(optarg, 0, ULONG_MAX, "--iterations");
			break;
		case 't':
			opt.timeout_sec = (int)parse_number(optarg, 1, 86400, "--timeout");
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage_error("bad command line");
		}
	}
	if (optind < argc)
		opt.host = argv[optind++];
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (opt.loopback && opt.host)
		usage_error("--loopback takes no HOST");
}

/* --- main ---------------------------------------------------------------------------- */

static struct ibv_device *find_device(struct ibv_device **list, int num)
{
	int i;

	if (!list || num <= 0)
		die("no RDMA device found");
	for (i = 0; i < num; i++)
		if (!opt.ib_dev || !strcmp(ibv_get_device_name(list[i]), opt.ib_dev))
			return list[i];
	die("no RDMA device named %s", opt.ib_dev);
}

static void print_setup(const struct side *s, struct ibv_device *dev)
{
	char gid[INET6_ADDRSTRLEN];
	unsigned int op;

	inet_ntop(AF_INET6, s->gid.raw, gid, sizeof(gid));
	printf("verbs_check: %s on %s port %u GID %s (index %u), %u QPs, %u sizes, ops",
	       opt.loopback ? "loopback" : s->name, ibv_get_device_name(dev), opt.ib_port, gid,
	       opt.gid_idx, opt.plan.num_qps, opt.plan.num_sizes);
	for (op = 0; op < OP_COUNT; op++)
		if (opt.plan.ops & 1u << op)
			printf(" %s", op_table[op].name);
	printf("%s%s\n", opt.extended ? ", extended verbs" : "", opt.events ? ", events" : "");
}

int main(int argc, char **argv)
{
	struct session ss = { .fd = -1 };
	struct ibv_device **list;
	struct ibv_device *dev;
	unsigned long iteration;
	uint64_t peer_bytes = 0;
	int num = 0, i, num_sides, one = 1;
	unsigned int op, q;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	parse_options(argc, argv);
	num_sides = opt.loopback ? 2 : 1;

	list = ibv_get_device_list(&num);
	dev = find_device(list, num);
	if (opt.host) {
		side_open(&sides[0], dev, "client");
		ss.client = &sides[0];
		ss.fd = tcp_connect(opt.host, opt.port);
		send_plan(&ss);
	} else {
		side_open(&sides[0], dev, "server");
		ss.server = &sides[0];
	}
	if (opt.loopback) {
		side_open(&sides[1], dev, "client");
		ss.client = &sides[1];
	} else if (!opt.host) {
		ss.fd = tcp_accept(opt.port);
		receive_plan(&ss);
	}
	/* The syncs are single bytes: Nagle would hold each back for the previous one's ACK. */
	if (ss.fd >= 0 && setsockopt(ss.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY: %s", strerror(errno));
	print_setup(&sides[0], dev);
	ibv_free_device_list(list);

	for (i = 0; i < num_sides; i++)
		side_create(&sides[i]);
	if (opt.loopback) {
		for (q = 0; q < opt.plan.num_qps; q++) {
			sides[0].remote[q] = local_qp_info(&sides[1], q);
			sides[1].remote[q] = local_qp_info(&sides[0], q);
		}
	} else {
		exchange_qp_info(&ss, &sides[0]);
	}
	for (i = 0; i < num_sides; i++)
		for (q = 0; q < opt.plan.num_qps; q++)
			connect_qp(&sides[i], q);

	for (iteration = 0; !opt.plan.iterations || iteration < opt.plan.iterations; iteration++) {
		for (op = 0; op < OP_COUNT; op++)
			if (opt.plan.ops & 1u << op)
				run_op(&ss, iteration, op, false);
		/* Everything above flows from the client: prove the other direction too. */
		if (opt.plan.ops & 1u << OP_SEND)
			run_op(&ss, iteration, OP_SEND, true);
	}

	/* Both peers print the same total: each adds what the other verified. */
	if (ss.fd >= 0) {
		uint64_t out = htobe64(ss.bytes_verified), in;

		exchange(&ss, &out, &in, sizeof(in), "the final tally");
		peer_bytes = be64toh(in);
		close(ss.fd);
	}
	for (i = 0; i < num_sides; i++)
		side_destroy(&sides[i]);
	printf("verbs_check: OK: %" PRIu64 " operations, %" PRIu64 " bytes verified\n",
	       ss.operations, ss.bytes_verified + peer_bytes);
	return 0;
}
