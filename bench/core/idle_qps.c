// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * idle-qps: N connected RC QPs that carry nothing, for make bench-core. A plain verbs program
 * (run it through metaroce-run); the server waits for one client on a TCP port, the two
 * exchange GIDs and QP numbers, bring every QP to RTS, print "idle-qps: N QPs at RTS" and
 * then hold them until the client's standard input closes or either gets SIGTERM/SIGINT.
 * A device context holds at most max_qp QPs (or -c), so as many contexts are opened as N
 * needs.
 *
 *   idle-qps [-n N] [-c PER_CONTEXT] [-d DEVICE] [-x GID_INDEX] [-p PORT]            server
 *   idle-qps [-n N] [-c PER_CONTEXT] [-d DEVICE] [-x GID_INDEX] [-p PORT] SERVER     client
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MAX_CONTEXTS 16

struct context {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	unsigned int n_qps;
};

static struct context contexts[MAX_CONTEXTS];
static unsigned int n_contexts;
static struct ibv_qp **qps;
static volatile sig_atomic_t stop;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("idle-qps: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void xfer(int fd, void *buf, size_t len, int sending)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0)
			die("set-up exchange: %s", n ? strerror(errno) : "peer closed");
		p += n;
		len -= (size_t)n;
	}
}

static int tcp_setup(const char *server, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = server ? 0 : AI_PASSIVE };
	struct addrinfo *res, *ai;
	int fd = -1, one = 1, ret;

	ret = getaddrinfo(server, port, &hints, &res);
	if (ret)
		die("%s:%s: %s", server ? server : "*", port, gai_strerror(ret));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (server) {
			for (int tries = 0; tries < 300; tries++) { /* the server may start later */
				if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
					goto done;
				usleep(100000);
			}
		} else {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 1)) {
				int c = accept(fd, NULL, NULL);

				close(fd);
				fd = c;
				if (fd >= 0)
					goto done;
			}
		}
		close(fd);
		fd = -1;
	}
done:
	freeaddrinfo(res);
	if (fd < 0)
		die("cannot %s port %s: %s", server ? "connect to" : "listen on", port,
		    strerror(errno));
	return fd;
}

static void open_contexts(const char *device, unsigned int n, unsigned int per_context)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_device_attr attr;
	unsigned int per, left = n;

	if (!list || !list[0])
		die("no verbs device (run through metaroce-run)");
	for (int i = 0; list[i]; i++)
		if (!device || !strcmp(ibv_get_device_name(list[i]), device))
			dev = dev ? dev : list[i];
	if (!dev)
		die("no device %s", device);
	while (left) {
		struct context *c = &contexts[n_contexts];

		if (n_contexts == MAX_CONTEXTS)
			die("%u QPs need more than %d device contexts", n, MAX_CONTEXTS);
		c->ctx = ibv_open_device(dev);
		if (!c->ctx)
			die("ibv_open_device: %s", strerror(errno));
		if (ibv_query_device(c->ctx, &attr))
			die("ibv_query_device failed");
		per = (unsigned int)attr.max_qp;
		if (per_context && per_context < per)
			per = per_context;
		c->n_qps = left < per ? left : per;
		left -= c->n_qps;
		c->pd = ibv_alloc_pd(c->ctx);
		c->cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
		if (!c->pd || !c->cq)
			die("PD or CQ: %s", strerror(errno));
		n_contexts++;
	}
	ibv_free_device_list(list);
}

struct wire_qp {
	uint32_t qpn; /* network order */
};

int main(int argc, char **argv)
{
	const char *device = NULL, *port = "18790";
	unsigned int n = 4000, per_context = 0, gid_index = 0, q = 0;
	union ibv_gid gid, remote_gid;
	struct wire_qp *mine, *theirs;
	uint32_t n_net;
	int opt, fd;

	while ((opt = getopt(argc, argv, "n:c:d:x:p:h")) != -1) {
		switch (opt) {
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'c': per_context = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'd': device = optarg; break;
		case 'x': gid_index = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'p': port = optarg; break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: idle-qps [-n N] [-c PER_CONTEXT] [-d DEVICE] [-x GID_INDEX] [-p PORT] [SERVER]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!n || n > 65536)
		die("-n %u: between 1 and 65536", n);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	open_contexts(device, n, per_context);
	if (ibv_query_gid(contexts[0].ctx, 1, (int)gid_index, &gid))
		die("GID %u: %s", gid_index, strerror(errno));
	qps = calloc(n, sizeof(*qps));
	mine = calloc(n, sizeof(*mine));
	theirs = calloc(n, sizeof(*theirs));
	if (!qps || !mine || !theirs)
		die("out of memory");
	for (unsigned int c = 0; c < n_contexts; c++)
		for (unsigned int i = 0; i < contexts[c].n_qps; i++, q++) {
			struct ibv_qp_init_attr ia = {
				.send_cq = contexts[c].cq, .recv_cq = contexts[c].cq,
				.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					 .max_recv_sge = 1 },
				.qp_type = IBV_QPT_RC,
			};
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
						 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

			qps[q] = ibv_create_qp(contexts[c].pd, &ia);
			if (!qps[q])
				die("QP %u: %s", q, strerror(errno));
			if (ibv_modify_qp(qps[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
				die("QP %u to INIT failed", q);
			mine[q].qpn = htonl(qps[q]->qp_num);
		}

	fd = tcp_setup(optind < argc ? argv[optind] : NULL, port);
	n_net = htonl(n);
	xfer(fd, &n_net, sizeof(n_net), 1);
	xfer(fd, &n_net, sizeof(n_net), 0);
	if (ntohl(n_net) != n)
		die("the peer has %u QPs, this side %u", ntohl(n_net), n);
	xfer(fd, gid.raw, sizeof(gid.raw), 1);
	xfer(fd, remote_gid.raw, sizeof(remote_gid.raw), 0);
	xfer(fd, mine, n * sizeof(*mine), 1);
	xfer(fd, theirs, n * sizeof(*theirs), 0);

	for (q = 0; q < n; q++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.dest_qp_num = ntohl(theirs[q].qpn), .max_dest_rd_atomic = 1,
			.min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .grh = { .sgid_index = (uint8_t)gid_index, .hop_limit = 64,
					      .dgid = remote_gid } },
		};

		if (ibv_modify_qp(qps[q], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
			die("QP %u to RTR failed", q);
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
					  .rnr_retry = 7, .max_rd_atomic = 1 };
		if (ibv_modify_qp(qps[q], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			die("QP %u to RTS failed", q);
	}
	/* Both sides at RTS before either says so: the benchmark counts on the pairs. */
	xfer(fd, &n_net, sizeof(n_net), 1);
	xfer(fd, &n_net, sizeof(n_net), 0);
	printf("idle-qps: %u QPs at RTS in %u contexts\n", n, n_contexts);
	fflush(stdout);

	{
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = 0, .events = POLLIN } };

		/* The client ends on EOF of its input; either side ends when the other does. */
		while (!stop) {
			int r = poll(p, optind < argc ? 2 : 1, -1);
			char b;

			if (r < 0 && errno != EINTR)
				die("poll: %s", strerror(errno));
			if (r > 0 && (p[0].revents || (p[1].revents && read(0, &b, 1) <= 0)))
				break;
		}
	}
	close(fd);
	for (q = 0; q < n; q++)
		ibv_destroy_qp(qps[q]);
	for (unsigned int c = 0; c < n_contexts; c++) {
		ibv_destroy_cq(contexts[c].cq);
		ibv_dealloc_pd(contexts[c].pd);
		ibv_close_device(contexts[c].ctx);
	}
	free(qps);
	free(mine);
	free(theirs);
	return 0;
}
