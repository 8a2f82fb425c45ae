/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* metaroce-perf: data patterns, the TCP set-up channel, verbs resources, the set-up exchange,
 * posting and progress (perf/perf.h). */

#include "perf/perf.h"

/* --- data patterns -------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t pattern_seed(unsigned int qp, uint64_t seq, uint32_t salt)
{
	return (uint64_t)qp << 40 ^ seq * 0xd6e8feb86659fd93ull ^ salt;
}

void pattern_fill(uint8_t *p, size_t len, uint64_t seed)
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

uint8_t *slot_ptr(unsigned int q, unsigned int slot)
{
	return perf.buf + q * perf.qp_stride + (size_t)slot * opt.size;
}

void check_data(unsigned int q, unsigned int slot, uint64_t seq, uint32_t salt,
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

void write_full(const void *buf, size_t len, const char *what)
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

void read_full(void *buf, size_t len, const char *what)
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

void connect_qps(void)
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

void destroy_resources(void)
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

void sync_peer(const char *what)
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

void set_up(void)
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

void post_send(unsigned int q, enum ibv_wr_opcode opcode, uint64_t wr_id,
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

void post_recv(unsigned int q, unsigned int slot, bool with_data)
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

void completion_failed(const struct ibv_wc *wc)
{
	die("QP %u: %s completion failed: %s (vendor error 0x%x)", WRID_QP(wc->wr_id),
	    WRID_KIND(wc->wr_id) == WR_RECV ? "receive" : "send",
	    ibv_wc_status_str(wc->status), wc->vendor_err);
}

/* --- progress ---------------------------------------------------------------------------- */

void progress_tick(struct progress *p, double now, uint64_t bytes, uint64_t msgs)
{
	double dt = now - p->last, sum = 0;
	size_t i;

	if (!opt.progress || now < p->next)
		return;
	if (opt.json) {
		/* for programs: the counts so far and the clock they were read at, so a reader
		 * rebuilds any window of the run without the jitter of a pipe */
		fprintf(stderr,
			"{\"progress\": {\"monotonic\": %.6f, \"elapsed\": %.6f, \"bytes\": %" PRIu64
			", \"messages\": %" PRIu64 ", \"verified\": %" PRIu64 "}}\n",
			now, now - p->start, opt.mode == MODE_BW ? bytes : 0, msgs, perf.verified);
	} else if (opt.mode == MODE_BW) {
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
	if (opt.verify && !opt.json)
		fprintf(stderr, "  verified %" PRIu64, perf.verified);
	if (!opt.json)
		fputs(isatty(STDERR_FILENO) ? "\r" : "\n", stderr);
	fflush(stderr);
	p->last = now;
	p->next = now + opt.interval;
	p->last_bytes = bytes;
	p->last_msgs = msgs;
}

void progress_end(void)
{
	if (opt.progress && !opt.json && isatty(STDERR_FILENO))
		fputs("\n", stderr);
}
