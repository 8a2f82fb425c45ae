/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* verbs_check: the TCP exchange between the peers, plan and QP records (check/check.h). */

#include "check/check.h"

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
void exchange(const struct session *ss, const void *out, void *in, size_t len,
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
void sync_peer(const struct session *ss, const char *what)
{
	uint8_t out = SYNC_BYTE, in;

	if (ss->fd < 0)
		return;
	exchange(ss, &out, &in, 1, what);
	if (in != SYNC_BYTE)
		die("the peer sent 0x%02x instead of a sync byte during %s", in, what);
}

int tcp_accept(const char *port)
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

int tcp_connect(const char *host, const char *port)
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

void send_plan(const struct session *ss)
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

void receive_plan(const struct session *ss)
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

struct qp_info local_qp_info(const struct side *s, unsigned int q)
{
	return (struct qp_info){ .qpn = s->qps[q]->qp_num, .psn = s->psns[q], .gid = s->gid,
				 .rkey = s->mrs[q]->rkey, .addr = s->buf_addr[q] };
}

void exchange_qp_info(const struct session *ss, struct side *s)
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
