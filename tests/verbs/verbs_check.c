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
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MAX_QPS		256
#define MAX_SIZES	32
#define MAX_MSG_SIZE	(1UL << 31)	/* the largest message RC allows */
/* Room for the unaligned start (1..7) and the guard byte after the longest message. */
#define BUF_SLACK	64
#define GUARD_BYTE	0xa5		/* around each destination region: must survive */
#define SOURCE_EDGE	0x5a		/* around each source region: must never arrive */
/* A QP never has more than one WR outstanding each way, nor a CQ more than one per QP. */
#define QUEUE_DEPTH	1
#define CQ_BATCH	16
#define RD_ATOMIC	16
#define BUF_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)
#define PLAN_MAGIC	0x56434b31u	/* "VCK1" */
#define SYNC_BYTE	0x53

enum op { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ };
#define OP_COUNT	(OP_READ + 1)
#define ALL_OPS		((1u << OP_COUNT) - 1)

static const struct op_info {
	const char *name;
	enum ibv_wr_opcode wr_opcode;
	enum ibv_wc_opcode send_opcode;		/* the requester's completion */
	enum ibv_wc_opcode receive_opcode;	/* the responder's, when it consumes a receive */
	uint64_t send_ops_flag;
	bool remote_address;			/* names the peer's memory through its rkey */
	bool consumes_receive;
	bool has_imm;
} op_table[OP_COUNT] = {
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

/* What the client decides and the server follows, so both run the same sequence. */
struct plan {
	unsigned int num_qps;
	unsigned int ops;		/* bit (1 << enum op) per op */
	unsigned int num_sizes;
	size_t sizes[MAX_SIZES];
	unsigned long iterations;	/* 0: until killed */
};

static struct options {
	struct plan plan;
	const char *host, *port, *ib_dev;
	uint8_t ib_port, gid_idx;
	int timeout_sec;
	bool extended, events, loopback, verbose;
} opt = {
	.plan = { .num_qps = 1, .ops = ALL_OPS, .iterations = 1, .num_sizes = 8,
		  .sizes = { 1, 7, 64, 4095, 4096, 65537, (1 << 20) + 3, 16 << 20 } },
	.port = "18600", .ib_port = 1, .timeout_sec = 30,
};

/* The TCP link carries fixed-size records in network byte order. */
struct wire_plan {
	uint32_t magic, num_qps, ops, num_sizes;
	uint64_t iterations;
	uint64_t sizes[MAX_SIZES];
};

struct __attribute__((packed)) wire_qp {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	uint8_t gid[16];
};
_Static_assert(sizeof(struct wire_plan) == 280 && sizeof(struct wire_qp) == 36, "wire sizes");

/* What a peer needs to reach one QP and the buffer behind it. */
struct qp_info {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct completion_queue {
	struct ibv_cq *cq;
	struct ibv_cq_ex *cq_ex;	/* with --extended; cq is then its ibv_cq */
};

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;	/* with --events; both CQs report to it */
	struct completion_queue send_cq, recv_cq;
	union ibv_gid gid;
	uint32_t max_msg_sz;
	size_t buf_size;
	struct ibv_qp *qps[MAX_QPS];
	struct ibv_qp_ex *qpxs[MAX_QPS];
	struct ibv_mr *mrs[MAX_QPS];
	uint8_t *bufs[MAX_QPS];
	uint64_t buf_addr[MAX_QPS];		/* bufs[q] as addressed through its MR */
	uint32_t psns[MAX_QPS];
	uint64_t recvs_posted[MAX_QPS];
	uint64_t recv_wr_id[MAX_QPS];		/* of the one receive posted on each QP */
	size_t recv_offset[MAX_QPS];
	struct qp_info remote[MAX_QPS];
};

struct session {
	int fd;			/* TCP link to the peer; -1 with --loopback */
	struct side *client;	/* the requester; NULL when the peer is the client */
	struct side *server;	/* the responder; NULL when the peer is the server */
	uint64_t rounds, operations, bytes_verified;
};

struct round {
	enum op op;
	bool reverse;		/* the server is the requester */
	unsigned long iteration;
	size_t size;
	uint64_t seq;		/* rounds before this one; both peers count alike */
};

static struct side sides[2];

static void __attribute__((noreturn, format(printf, 3, 0)))
vfail(int status, const char *context, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "verbs_check: %s", context);
	vfprintf(stderr, fmt, ap);
	fputs(status == 2 ? " (see --help)\n" : "\n", stderr);
	exit(status);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
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

static const char *op_label(const struct round *rd)
{
	return rd->reverse ? "send back" : op_table[rd->op].name;
}

/* A failure within a round, named by op, size and QP. */
static void __attribute__((noreturn, format(printf, 3, 4)))
round_fail(const struct round *rd, unsigned int q, const char *fmt, ...)
{
	char context[64];
	va_list ap;

	snprintf(context, sizeof(context), "%s %zu B on QP %u: ", op_label(rd), rd->size, q);
	va_start(ap, fmt);
	vfail(1, context, fmt, ap);
}

/* Verbs calls return an errno value, or -1 with errno set or, for some, not set at all. */
static const char *verbs_strerror(int ret)
{
	if (ret > 0)
		return strerror(ret);
	return errno ? strerror(errno) : "failed";
}

static double now_seconds(void)
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

/* --- TCP exchange -------------------------------------------------------------------- */

/* A peer that exits with our bytes unread resets the connection rather than closing it. */
static void __attribute__((noreturn)) peer_gone(const char *what)
{
	die("the peer closed the TCP connection during %s: it failed or was killed", what);
}

static void write_full(int fd, const void *buf, size_t len, const char *what)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			peer_gone(what);
		if (n < 0)
			die("TCP send during %s: %s", what, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void read_full(int fd, void *buf, size_t len, const char *what)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			peer_gone(what);
		if (n < 0)
			die("TCP receive during %s: %s", what, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* The client speaks first, so neither peer ever waits with a full socket buffer. */
static void exchange(const struct session *ss, const void *out, void *in, size_t len,
		     const char *what)
{
	if (ss->client) {
		write_full(ss->fd, out, len, what);
		read_full(ss->fd, in, len, what);
	} else {
		read_full(ss->fd, in, len, what);
		write_full(ss->fd, out, len, what);
	}
}

/* One-sided ops complete silently at the target: only the peer can tell it is done. */
static void sync_peer(const struct session *ss, const char *what)
{
	uint8_t out = SYNC_BYTE, in;

	if (ss->fd < 0)
		return;
	exchange(ss, &out, &in, 1, what);
	if (in != SYNC_BYTE)
		die("the peer sent 0x%02x instead of a sync byte during %s", in, what);
}

static int tcp_accept(const char *port)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	int listener = -1, fd, ret, one = 1, last_error = 0;

	ret = getaddrinfo(NULL, port, &hints, &res);
	if (ret)
		die("TCP port %s: %s", port, gai_strerror(ret));
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
		die("cannot listen on TCP port %s: %s", port, strerror(last_error));
	printf("verbs_check: waiting for a client on TCP port %s\n", port);
	do
		fd = accept(listener, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		die("accept on TCP port %s: %s", port, strerror(errno));
	close(listener);
	return fd;
}

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	const struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
	double deadline = now_seconds() + opt.timeout_sec;
	struct addrinfo *res, *ai;
	int fd, ret, last_error = 0;

	ret = getaddrinfo(host, port, &hints, &res);
	if (ret)
		die("cannot resolve %s: %s", host, gai_strerror(ret));
	/* The server may still be starting: scripts launch both at once. */
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				freeaddrinfo(res);
				return fd;
			}
			last_error = errno;
			if (fd >= 0)
				close(fd);
		}
		if (now_seconds() >= deadline)
			die("cannot connect to %s port %s: %s", host, port, strerror(last_error));
		nanosleep(&pause, NULL);
	}
}

static void send_plan(const struct session *ss)
{
	struct wire_plan msg = {
		.magic = htonl(PLAN_MAGIC), .num_qps = htonl(opt.plan.num_qps),
		.ops = htonl(opt.plan.ops), .num_sizes = htonl(opt.plan.num_sizes),
		.iterations = htobe64(opt.plan.iterations),
	};
	unsigned int i;

	for (i = 0; i < opt.plan.num_sizes; i++)
		msg.sizes[i] = htobe64(opt.plan.sizes[i]);
	write_full(ss->fd, &msg, sizeof(msg), "the plan exchange");
}

static void receive_plan(const struct session *ss)
{
	struct wire_plan msg;
	struct plan plan;
	unsigned int i;

	read_full(ss->fd, &msg, sizeof(msg), "the plan exchange");
	if (ntohl(msg.magic) != PLAN_MAGIC)
		die("the client is not a verbs_check of this version");
	plan.num_qps = ntohl(msg.num_qps);
	plan.ops = ntohl(msg.ops);
	plan.num_sizes = ntohl(msg.num_sizes);
	plan.iterations = (unsigned long)be64toh(msg.iterations);
	if (plan.num_qps < 1 || plan.num_qps > MAX_QPS || !plan.ops || plan.ops & ~ALL_OPS ||
	    plan.num_sizes < 1 || plan.num_sizes > MAX_SIZES)
		die("the client sent a malformed plan");
	for (i = 0; i < plan.num_sizes; i++) {
		if (be64toh(msg.sizes[i]) > MAX_MSG_SIZE)
			die("the client asks for a %" PRIu64 " B message", be64toh(msg.sizes[i]));
		plan.sizes[i] = (size_t)be64toh(msg.sizes[i]);
	}
	opt.plan = plan;
}

static struct qp_info local_qp_info(const struct side *s, unsigned int q)
{
	return (struct qp_info){ .qpn = s->qps[q]->qp_num, .psn = s->psns[q], .gid = s->gid,
				 .rkey = s->mrs[q]->rkey, .addr = s->buf_addr[q] };
}

static void exchange_qp_info(const struct session *ss, struct side *s)
{
	struct wire_qp out[MAX_QPS], in[MAX_QPS];
	struct qp_info *peer;
	unsigned int q;

	for (q = 0; q < opt.plan.num_qps; q++) {
		struct qp_info info = local_qp_info(s, q);

		out[q].qpn = htonl(info.qpn);
		out[q].psn = htonl(info.psn);
		out[q].rkey = htonl(info.rkey);
		out[q].addr = htobe64(info.addr);
		memcpy(out[q].gid, info.gid.raw, sizeof(out[q].gid));
	}
	exchange(ss, out, in, opt.plan.num_qps * sizeof(out[0]), "the QP exchange");
	for (q = 0; q < opt.plan.num_qps; q++) {
		peer = &s->remote[q];
		peer->qpn = ntohl(in[q].qpn);
		peer->psn = ntohl(in[q].psn);
		peer->rkey = ntohl(in[q].rkey);
		peer->addr = be64toh(in[q].addr);
		memcpy(peer->gid.raw, in[q].gid, sizeof(peer->gid.raw));
		if (peer->qpn > 0xffffff || peer->psn > 0xffffff)
			die("the peer sent QP %u with qpn 0x%x, psn 0x%x: not 24-bit numbers", q,
			    peer->qpn, peer->psn);
	}
}

/* --- verbs setup --------------------------------------------------------------------- */

static void side_open(struct side *s, struct ibv_device *dev, const char *name)
{
	static const union ibv_gid no_gid;
	const char *dev_name = ibv_get_device_name(dev);
	struct ibv_port_attr port_attr;
	int ret;

	s->name = name;
	s->ctx = ibv_open_device(dev);
	if (!s->ctx)
		die("cannot open %s: %s", dev_name, strerror(errno));
	ret = ibv_query_port(s->ctx, opt.ib_port, &port_attr);
	if (ret)
		die("%s port %u: %s", dev_name, opt.ib_port, verbs_strerror(ret));
	s->max_msg_sz = port_attr.max_msg_sz;
	errno = 0;
	ret = ibv_query_gid(s->ctx, opt.ib_port, opt.gid_idx, &s->gid);
	if (ret)
		die("%s port %u GID index %u: %s", dev_name, opt.ib_port, opt.gid_idx,
		    verbs_strerror(ret));
	if (!memcmp(&s->gid, &no_gid, sizeof(s->gid)))
		die("%s port %u has no GID at index %u (RoCE needs an IP address on the netdev)",
		    dev_name, opt.ib_port, opt.gid_idx);
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		die("%s: ibv_alloc_pd: %s", name, strerror(errno));
	if (opt.events) {
		s->channel = ibv_create_comp_channel(s->ctx);
		if (!s->channel)
			die("%s: ibv_create_comp_channel: %s", name, strerror(errno));
	}
}

/* Too small a limit would otherwise show up as a failed registration or a mangled message. */
static void check_device(const struct side *s, size_t max_size)
{
	struct ibv_device_attr_ex attr;
	int ret;

	if (opt.extended)
		ret = ibv_query_device_ex(s->ctx, NULL, &attr);
	else
		ret = ibv_query_device(s->ctx, &attr.orig_attr);
	if (ret)
		die("%s: querying the device: %s", s->name, verbs_strerror(ret));
	if (attr.orig_attr.max_mr_size < s->buf_size || s->max_msg_sz < max_size)
		die("%s: the device takes MRs up to %" PRIu64 " B and messages up to %u B; the "
		    "test needs %zu B and %zu B", s->name, (uint64_t)attr.orig_attr.max_mr_size,
		    s->max_msg_sz, s->buf_size, max_size);
}

static void create_cq(struct side *s, struct completion_queue *cq)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = opt.plan.num_qps,
		.channel = s->channel,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM,
	};

	if (opt.extended) {
		cq->cq_ex = ibv_create_cq_ex(s->ctx, &attr);
		cq->cq = cq->cq_ex ? ibv_cq_ex_to_cq(cq->cq_ex) : NULL;
	} else {
		cq->cq = ibv_create_cq(s->ctx, (int)attr.cqe, NULL, s->channel, 0);
	}
	if (!cq->cq)
		die("%s: cannot create a CQ: %s", s->name, strerror(errno));
}

static void create_buffer(struct side *s, unsigned int q)
{
	uint8_t *buf = malloc(s->buf_size);
	struct ibv_mr *mr;
	uint64_t iova = (uintptr_t)buf;

	if (!buf)
		die("%s: cannot allocate %zu B for QP %u", s->name, s->buf_size, q);
	if (opt.extended) {
		/*
		 * An iova unlike the virtual address proves the provider translates through
		 * the MR, for local SGEs as well as for the peer. The low 21 bits stay, so
		 * the offset within any page up to 2 MiB is unchanged, as devices require.
		 */
		iova = (uint64_t)(q + 1) << 40 | (iova & ((1u << 21) - 1));
		mr = ibv_reg_mr_iova2(s->pd, buf, s->buf_size, iova, BUF_ACCESS);
	} else {
		mr = ibv_reg_mr(s->pd, buf, s->buf_size, BUF_ACCESS);
	}
	if (!mr)
		die("%s: cannot register %zu B for QP %u: %s", s->name, s->buf_size, q,
		    strerror(errno));
	s->bufs[q] = buf;
	s->mrs[q] = mr;
	s->buf_addr[q] = iova;
}

/* wr_id = sequence << 17 | receive << 16 | QP index: unique, and it names its QP. */
static uint64_t make_wr_id(uint64_t seq, unsigned int q, bool receive)
{
	return seq << 17 | (uint64_t)receive << 16 | q;
}

/* One receive is always posted per QP, at an unaligned offset that moves each time. */
static void post_receive(struct side *s, unsigned int q)
{
	size_t offset = 1 + (q + s->recvs_posted[q]) % 7;
	struct ibv_sge sge = { .addr = s->buf_addr[q] + offset, .lkey = s->mrs[q]->lkey,
			       .length = (uint32_t)(s->buf_size - offset) };
	struct ibv_recv_wr wr = { .wr_id = make_wr_id(s->recvs_posted[q], q, true),
				  .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad_wr;
	int ret;

	ret = ibv_post_recv(s->qps[q], &wr, &bad_wr);
	if (ret)
		die("%s: ibv_post_recv on QP %u: %s", s->name, q, verbs_strerror(ret));
	s->recv_offset[q] = offset;
	s->recv_wr_id[q] = wr.wr_id;
	s->recvs_posted[q]++;
}

static void create_qp(struct side *s, unsigned int q)
{
	struct ibv_qp_init_attr_ex init = {
		.send_cq = s->send_cq.cq, .recv_cq = s->recv_cq.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QUEUE_DEPTH, .max_recv_wr = QUEUE_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		/* With the PD alone, ibv_create_qp_ex is plain ibv_create_qp. */
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = s->pd,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = opt.ib_port,
				    .qp_access_flags = BUF_ACCESS };
	unsigned int op;
	uint32_t psn;
	int ret;

	if (opt.extended) {
		init.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		for (op = 0; op < OP_COUNT; op++)
			if (opt.plan.ops & 1u << op)
				init.send_ops_flags |= op_table[op].send_ops_flag;
	}
	s->qps[q] = ibv_create_qp_ex(s->ctx, &init);
	if (!s->qps[q])
		die("%s: cannot create QP %u: %s", s->name, q, strerror(errno));
	if (opt.extended) {
		s->qpxs[q] = ibv_qp_to_qp_ex(s->qps[q]);
		if (!s->qpxs[q])
			die("%s: ibv_qp_to_qp_ex gave nothing for QP %u", s->name, q);
	}
	ret = ibv_modify_qp(s->qps[q], &attr,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		die("%s: QP %u to INIT: %s", s->name, q, verbs_strerror(ret));
	if (getrandom(&psn, sizeof(psn), 0) != (ssize_t)sizeof(psn))
		die("getrandom: %s", strerror(errno));
	s->psns[q] = psn & 0xffffff;
}

static void side_create(struct side *s)
{
	size_t max_size = 0;
	unsigned int i, q;

	for (i = 0; i < opt.plan.num_sizes; i++)
		if (opt.plan.sizes[i] > max_size)
			max_size = opt.plan.sizes[i];
	s->buf_size = max_size + BUF_SLACK;
	check_device(s, max_size);
	create_cq(s, &s->send_cq);
	create_cq(s, &s->recv_cq);
	for (q = 0; q < opt.plan.num_qps; q++) {
		create_buffer(s, q);
		create_qp(s, q);
		post_receive(s, q);
	}
}

static void connect_qp(struct side *s, unsigned int q)
{
	const struct qp_info *peer = &s->remote[q];
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qpn, .rq_psn = peer->psn,
		.max_dest_rd_atomic = RD_ATOMIC, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = opt.ib_port,
			.grh = { .dgid = peer->gid, .sgid_index = opt.gid_idx, .hop_limit = 64 },
		},
	};
	int ret;

	ret = ibv_modify_qp(s->qps[q], &attr,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		die("%s: QP %u to RTR: %s", s->name, q, verbs_strerror(ret));
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				     .rnr_retry = 7, .sq_psn = s->psns[q],
				     .max_rd_atomic = RD_ATOMIC };
	ret = ibv_modify_qp(s->qps[q], &attr,
			    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		die("%s: QP %u to RTS: %s", s->name, q, verbs_strerror(ret));
	if (opt.verbose)
		printf("  %s QP %u: qpn 0x%06x psn 0x%06x -> qpn 0x%06x psn 0x%06x "
		       "addr 0x%" PRIx64 " rkey 0x%x\n", s->name, q, s->qps[q]->qp_num,
		       s->psns[q], peer->qpn, peer->psn, peer->addr, peer->rkey);
}

/* Every teardown call is checked: tearing down is part of what the library must get right. */
static void check_teardown(const struct side *s, int ret, const char *call)
{
	if (ret)
		die("%s: %s: %s", s->name, call, verbs_strerror(ret));
}

static void side_destroy(struct side *s)
{
	unsigned int q;

	for (q = 0; q < opt.plan.num_qps; q++)
		check_teardown(s, ibv_destroy_qp(s->qps[q]), "ibv_destroy_qp");
	check_teardown(s, ibv_destroy_cq(s->send_cq.cq), "ibv_destroy_cq");
	check_teardown(s, ibv_destroy_cq(s->recv_cq.cq), "ibv_destroy_cq");
	for (q = 0; q < opt.plan.num_qps; q++) {
		check_teardown(s, ibv_dereg_mr(s->mrs[q]), "ibv_dereg_mr");
		free(s->bufs[q]);
	}
	check_teardown(s, ibv_dealloc_pd(s->pd), "ibv_dealloc_pd");
	if (s->channel)
		check_teardown(s, ibv_destroy_comp_channel(s->channel), "ibv_destroy_comp_channel");
	errno = 0;
	check_teardown(s, ibv_close_device(s->ctx), "ibv_close_device");
}

/* --- patterns and verification ------------------------------------------------------- */

/* splitmix64: neighbouring rounds and QPs get unrelated patterns. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t pattern_seed(const struct round *rd, unsigned int q)
{
	uint64_t seed = mix64(rd->iteration);

	seed = mix64(seed ^ ((uint64_t)rd->op << 1 | rd->reverse));
	seed = mix64(seed ^ rd->size);
	return mix64(seed ^ q) | 1;	/* xorshift never leaves zero */
}

struct pattern {
	uint64_t state, word;
	unsigned int left;
};

/* xorshift64, eight bytes a step, low byte first whatever the host's byte order. */
static uint8_t pattern_next(struct pattern *p)
{
	uint8_t byte;

	if (!p->left) {
		p->state ^= p->state << 13;
		p->state ^= p->state >> 7;
		p->state ^= p->state << 17;
		p->word = p->state;
		p->left = 8;
	}
	byte = (uint8_t)p->word;
	p->word >>= 8;
	p->left--;
	return byte;
}

/*
 * A source is framed by bytes that must never arrive; a destination by guards that must
 * survive, and it starts as the inverted pattern, which differs from the expected one in
 * every byte, so no byte passes unwritten.
 */
static void prepare(uint8_t *msg, size_t size, uint64_t seed, bool destination)
{
	struct pattern p = { .state = seed };
	uint8_t flip = destination ? 0xff : 0;
	size_t i;

	msg[-1] = msg[size] = destination ? GUARD_BYTE : SOURCE_EDGE;
	for (i = 0; i < size; i++)
		msg[i] = pattern_next(&p) ^ flip;
}

static void verify(struct session *ss, const struct side *s, const struct round *rd,
		   unsigned int q, size_t offset)
{
	const uint8_t *msg = s->bufs[q] + offset;
	struct pattern p = { .state = pattern_seed(rd, q) };
	size_t i, first = 0, wrong = 0, unwritten = 0;
	uint8_t expected, first_expected = 0;

	if (msg[-1] != GUARD_BYTE)
		round_fail(rd, q, "the byte before the message is 0x%02x, expected the guard "
			   "0x%02x", msg[-1], GUARD_BYTE);
	for (i = 0; i < rd->size; i++) {
		expected = pattern_next(&p);
		if (msg[i] == expected)
			continue;
		if (!wrong++) {
			first = i;
			first_expected = expected;
		}
		unwritten += (msg[i] ^ expected) == 0xff;
	}
	if (wrong)
		round_fail(rd, q, "byte %zu is 0x%02x, expected 0x%02x (%zu bytes wrong, %zu of "
			   "them never written)", first, msg[first], first_expected, wrong,
			   unwritten);
	if (msg[rd->size] != GUARD_BYTE)
		round_fail(rd, q, "byte %zu, just past the message, is 0x%02x, expected the guard "
			   "0x%02x", rd->size, msg[rd->size], GUARD_BYTE);
	ss->bytes_verified += rd->size;
}

/* --- ops ----------------------------------------------------------------------------- */

/* Unaligned, and different on the two peers, so a wrong or swapped address shows. */
static size_t requester_offset(const struct round *rd, unsigned int q)
{
	return 1 + (q + rd->seq) % 7;
}

static size_t target_offset(const struct round *rd, unsigned int q)
{
	return 1 + (q + rd->seq + 3) % 7;
}

static size_t responder_offset(const struct side *s, const struct round *rd, unsigned int q)
{
	return op_table[rd->op].remote_address ? target_offset(rd, q) : s->recv_offset[q];
}

/* The top byte 0x80 never equals the odd low byte, so a byte-swapped immediate fails. */
static __be32 imm_value(const struct round *rd, unsigned int q)
{
	return htonl(0x80000001u | (uint32_t)(rd->seq & 0x7fff) << 9 | q << 1);
}

static void post_op(struct side *s, const struct round *rd, unsigned int q)
{
	const struct op_info *info = &op_table[rd->op];
	struct ibv_sge sge = { .addr = s->buf_addr[q] + requester_offset(rd, q),
			       .length = (uint32_t)rd->size, .lkey = s->mrs[q]->lkey };
	struct ibv_send_wr wr = {
		.wr_id = make_wr_id(rd->seq, q, false), .opcode = info->wr_opcode,
		/* No SGE for no bytes: some devices read a zero length as 2 GiB. */
		.sg_list = &sge, .num_sge = rd->size ? 1 : 0,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = info->has_imm ? imm_value(rd, q) : 0,
		.wr.rdma = { .remote_addr = s->remote[q].addr + target_offset(rd, q),
			     .rkey = s->remote[q].rkey },
	};
	struct ibv_qp_ex *qpx = s->qpxs[q];
	struct ibv_send_wr *bad_wr;
	int ret;

	if (!opt.extended) {
		ret = ibv_post_send(s->qps[q], &wr, &bad_wr);
		if (ret)
			round_fail(rd, q, "ibv_post_send: %s", verbs_strerror(ret));
		return;
	}
	ibv_wr_start(qpx);
	qpx->wr_id = wr.wr_id;
	qpx->wr_flags = wr.send_flags;
	switch (rd->op) {
	case OP_WRITE:
		ibv_wr_rdma_write(qpx, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
		break;
	case OP_WRITE_IMM:
		ibv_wr_rdma_write_imm(qpx, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr, wr.imm_data);
		break;
	case OP_SEND:
		ibv_wr_send(qpx);
		break;
	case OP_SEND_IMM:
		ibv_wr_send_imm(qpx, wr.imm_data);
		break;
	case OP_READ:
		ibv_wr_rdma_read(qpx, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
		break;
	}
	if (rd->size)
		ibv_wr_set_sge(qpx, sge.lkey, sge.addr, sge.length);
	else
		ibv_wr_set_sge_list(qpx, 0, NULL);
	ret = ibv_wr_complete(qpx);
	if (ret)
		round_fail(rd, q, "ibv_wr_complete: %s", verbs_strerror(ret));
}

/* Returns the QP index the completion belongs to, once every field has been checked. */
static unsigned int check_completion(const struct side *s, const struct round *rd,
				     const struct ibv_wc *wc, bool receive)
{
	const struct op_info *info = &op_table[rd->op];
	const char *kind = receive ? "receive" : "send";
	unsigned int q = (unsigned int)(wc->wr_id & 0xffff);
	enum ibv_wc_opcode opcode = receive ? info->receive_opcode : info->send_opcode;
	bool with_imm = wc->wc_flags & IBV_WC_WITH_IMM;
	uint64_t wr_id;

	if (wc->status != IBV_WC_SUCCESS)
		round_fail(rd, q, "%s completion failed: %s (status %d, opcode %d, wr_id 0x%" PRIx64
			   ", qp_num 0x%x, vendor_err 0x%x)", kind, ibv_wc_status_str(wc->status),
			   wc->status, wc->opcode, wc->wr_id, wc->qp_num, wc->vendor_err);
	if (q >= opt.plan.num_qps)
		die("%s %zu B: %s completion with unknown wr_id 0x%" PRIx64 " (qp_num 0x%x)",
		    op_label(rd), rd->size, kind, wc->wr_id, wc->qp_num);
	wr_id = receive ? s->recv_wr_id[q] : make_wr_id(rd->seq, q, false);
	if (wc->wr_id != wr_id)
		round_fail(rd, q, "%s completion has wr_id 0x%" PRIx64 ", expected 0x%" PRIx64,
			   kind, wc->wr_id, wr_id);
	if (wc->qp_num != s->qps[q]->qp_num)
		round_fail(rd, q, "%s completion has qp_num 0x%x, expected 0x%x", kind,
			   wc->qp_num, s->qps[q]->qp_num);
	if (wc->opcode != opcode)
		round_fail(rd, q, "%s completion has opcode %d, expected %d", kind, wc->opcode,
			   opcode);
	if (!receive)
		return q;
	if (wc->byte_len != rd->size)
		round_fail(rd, q, "receive completion has byte_len %u", wc->byte_len);
	if (with_imm != info->has_imm)
		round_fail(rd, q, "receive completion %s IBV_WC_WITH_IMM",
			   with_imm ? "has" : "lacks");
	if (info->has_imm && wc->imm_data != imm_value(rd, q))
		round_fail(rd, q, "imm_data is htonl(0x%08x), expected htonl(0x%08x)",
			   ntohl(wc->imm_data), ntohl(imm_value(rd, q)));
	return q;
}

static void read_cq_ex(struct ibv_cq_ex *cq, struct ibv_wc *wc)
{
	*wc = (struct ibv_wc){ .wr_id = cq->wr_id, .status = cq->status,
			       .opcode = ibv_wc_read_opcode(cq), .qp_num = ibv_wc_read_qp_num(cq),
			       .vendor_err = ibv_wc_read_vendor_err(cq) };
	if (wc->status != IBV_WC_SUCCESS)
		return;
	wc->byte_len = ibv_wc_read_byte_len(cq);
	wc->wc_flags = ibv_wc_read_wc_flags(cq);
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		wc->imm_data = ibv_wc_read_imm_data(cq);
}

static int poll_cq(const struct side *s, const struct completion_queue *cq, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int n = 0, ret;

	if (!cq->cq_ex) {
		n = ibv_poll_cq(cq->cq, CQ_BATCH, wc);
		if (n < 0)
			die("%s: ibv_poll_cq failed (%d)", s->name, n);
		return n;
	}
	ret = ibv_start_poll(cq->cq_ex, &attr);
	if (ret == ENOENT)
		return 0;
	if (ret)
		die("%s: ibv_start_poll: %s", s->name, verbs_strerror(ret));
	do
		read_cq_ex(cq->cq_ex, &wc[n++]);
	while (n < CQ_BATCH && !(ret = ibv_next_poll(cq->cq_ex)));
	ibv_end_poll(cq->cq_ex);
	if (ret && ret != ENOENT)
		die("%s: ibv_next_poll: %s", s->name, verbs_strerror(ret));
	return n;
}

/*
 * Sleeps until the channel reports a CQ or the deadline passes. A call with the CQ unarmed
 * only arms it, because a completion that arrived before arming raises no event: the caller
 * polls once more before sleeping. Both CQs of a side share the channel, so an event for
 * the other one is acked and left to the next poll of that CQ.
 */
static void wait_for_event(const struct side *s, const struct completion_queue *cq,
			   bool *armed, double deadline)
{
	struct pollfd pfd = { .fd = s->channel->fd, .events = POLLIN };
	double left_ms = (deadline - now_seconds()) * 1000;
	struct ibv_cq *event_cq;
	void *event_context;
	int ret;

	if (!*armed) {
		ret = ibv_req_notify_cq(cq->cq, 0);
		if (ret)
			die("%s: ibv_req_notify_cq: %s", s->name, verbs_strerror(ret));
		*armed = true;
		return;
	}
	ret = poll(&pfd, 1, left_ms > 0 ? (int)left_ms + 1 : 0);
	if (ret < 0 && errno != EINTR)
		die("%s: poll on the completion channel: %s", s->name, strerror(errno));
	if (ret <= 0)
		return;
	if (ibv_get_cq_event(s->channel, &event_cq, &event_context))
		die("%s: ibv_get_cq_event: %s", s->name, strerror(errno));
	if (event_cq != s->send_cq.cq && event_cq != s->recv_cq.cq)
		die("%s: completion event for a CQ this side never created", s->name);
	/* Unacked events would make destroying the CQ hang. */
	ibv_ack_cq_events(event_cq, 1);
	if (event_cq == cq->cq)
		*armed = false;
}

/* Completion order across QPs is the provider's business: each QP must report exactly once. */
static void reap_completions(const struct side *s, const struct round *rd, bool receive)
{
	const struct completion_queue *cq = receive ? &s->recv_cq : &s->send_cq;
	const char *kind = receive ? "receive" : "send";
	double deadline = now_seconds() + opt.timeout_sec;
	unsigned int remaining = opt.plan.num_qps, q;
	bool reported[MAX_QPS] = { false }, armed = false;
	struct ibv_wc wc[CQ_BATCH];
	int i, n;

	while (remaining) {
		n = poll_cq(s, cq, wc);
		for (i = 0; i < n; i++) {
			q = check_completion(s, rd, &wc[i], receive);
			if (reported[q])
				round_fail(rd, q, "a second %s completion", kind);
			reported[q] = true;
			remaining--;
		}
		if (n) {
			deadline = now_seconds() + opt.timeout_sec;
			continue;
		}
		if (now_seconds() >= deadline) {
			for (q = 0; reported[q]; q++)
				;
			round_fail(rd, q, "no %s completion within %d s", kind, opt.timeout_sec);
		}
		if (opt.events)
			wait_for_event(s, cq, &armed, deadline);
	}
}

/*
 * One op at one size on every QP. Either side may be NULL: it is then the peer process, and
 * the two syncs stand in for what it does. Returns the seconds the transfer took.
 */
static double run_round(struct session *ss, const struct round *rd)
{
	struct side *requester = rd->reverse ? ss->server : ss->client;
	struct side *responder = rd->reverse ? ss->client : ss->server;
	const struct op_info *info = &op_table[rd->op];
	bool to_requester = rd->op == OP_READ;	/* which way the bytes flow */
	unsigned int q, num_qps = opt.plan.num_qps;
	double start, elapsed;

	for (q = 0; responder && q < num_qps; q++)
		prepare(responder->bufs[q] + responder_offset(responder, rd, q), rd->size,
			pattern_seed(rd, q), !to_requester);
	for (q = 0; requester && q < num_qps; q++)
		prepare(requester->bufs[q] + requester_offset(rd, q), rd->size,
			pattern_seed(rd, q), to_requester);
	sync_peer(ss, "the start of a round");
	start = now_seconds();
	if (requester) {
		for (q = 0; q < num_qps; q++)
			post_op(requester, rd, q);
		reap_completions(requester, rd, false);
		for (q = 0; to_requester && q < num_qps; q++)
			verify(ss, requester, rd, q, requester_offset(rd, q));
	}
	if (responder && info->consumes_receive)
		reap_completions(responder, rd, true);
	/* The requester's completions mean the bytes are placed at the responder. */
	sync_peer(ss, "the end of a round");
	elapsed = now_seconds() - start;
	for (q = 0; responder && !to_requester && q < num_qps; q++)
		verify(ss, responder, rd, q, responder_offset(responder, rd, q));
	/* Reposted only now: the new receive may overlap the bytes just verified. */
	for (q = 0; responder && info->consumes_receive && q < num_qps; q++)
		post_receive(responder, q);
	ss->operations += num_qps;
	if (opt.verbose)
		printf("  %-9s %10zu B x %u QPs  %.3f ms\n", op_label(rd), rd->size, num_qps,
		       elapsed * 1e3);
	return elapsed;
}

static void run_op(struct session *ss, unsigned long iteration, enum op op, bool reverse)
{
	struct round rd = { .op = op, .reverse = reverse, .iteration = iteration };
	double seconds = 0;
	uint64_t bytes = 0;
	unsigned int i;

	for (i = 0; i < opt.plan.num_sizes; i++) {
		rd.size = opt.plan.sizes[i];
		rd.seq = ss->rounds++;
		seconds += run_round(ss, &rd);
		bytes += (uint64_t)rd.size * opt.plan.num_qps;
	}
	if (opt.plan.iterations != 1)
		printf("iteration %lu: ", iteration + 1);
	printf("%-9s %2u sizes x %3u QPs  OK  %9.1f MB/s\n", op_label(&rd), opt.plan.num_sizes,
	       opt.plan.num_qps, seconds > 0 ? (double)bytes / seconds / 1e6 : 0.0);
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
