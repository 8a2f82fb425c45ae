/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cm_check: an rdma_cm program for the connection failures the rdmacm-utils examples do not
 * show (tests/integration/test_rdma_cm.sh), written against librdmacm alone, so it runs
 * unchanged over the kernel's rdma_cm or metaroced's.
 *
 *   cm_check serve PORT [-r] [-n N]   listen on every address; accept each request with a
 *                                     QP and a SEND of the request's private data back (-r:
 *                                     reject it, private data "cm_check says no"); after N
 *                                     connections have come and gone, exit (0: never)
 *   cm_check connect ADDR PORT WANT   one connection; WANT is the event it must end in:
 *                                     established (the echo checked, then a disconnect),
 *                                     rejected:STATUS[:PRIVATE], unreachable, addr_error,
 *                                     route_error
 *   cm_check loop ADDR PORT N         N connections one after another, each established,
 *                                     echoed, disconnected and destroyed
 *   cm_check hold ADDR PORT           one connection with a SEND outstanding, then the
 *                                     next event: prints DISCONNECTED or DEVICE_REMOVAL
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rdma/rdma_cma.h>

#define MSG 56 /* all the private data a REQ carries */
#define NO "cm_check says no"

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char (*buf)[MSG]; /* two messages: ours, and what came */

static void die(const char *what)
{
	fprintf(stderr, "cm_check: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The verbs objects every QP of this process shares, on the first id's device. */
static void objects(struct ibv_context *verbs)
{
	if (pd)
		return;
	/* shared memory already: registering it moves no page */
	buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	pd = ibv_alloc_pd(verbs);
	cq = pd ? ibv_create_cq(verbs, 256, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, 2 * MSG, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		die("verbs objects");
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4,
					       .max_send_sge = 1, .max_recv_sge = 1 } };

	objects(id->verbs);
	a.send_cq = a.recv_cq = cq;
	if (rdma_create_qp(id, pd, &a))
		die("rdma_create_qp");
}

static void post(struct rdma_cm_id *id, int which, bool send)
{
	struct ibv_sge sge = { (uintptr_t)buf[which], MSG, mr->lkey };
	struct ibv_send_wr s = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bs;
	struct ibv_recv_wr r = { .sg_list = &sge, .num_sge = 1 }, *br;

	if (send ? ibv_post_send(id->qp, &s, &bs) : ibv_post_recv(id->qp, &r, &br))
		die(send ? "ibv_post_send" : "ibv_post_recv");
}

static void complete(int n)
{
	struct ibv_wc wc;

	while (n) {
		int got = ibv_poll_cq(cq, 1, &wc);

		if (got < 0)
			die("ibv_poll_cq");
		if (got && wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "cm_check: completion %s\n", ibv_wc_status_str(wc.status));
			exit(1);
		}
		n -= got;
	}
}

static struct rdma_cm_event *next(void)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

/* --- the passive side ------------------------------------------------------------------------ */

static int serve(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *listener;
	bool reject = false;
	long want = 0, done = 0;

	sin.sin_port = htons((uint16_t)atoi(argv[2]));
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "-r"))
			reject = true;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			want = atol(argv[++i]);
	}
	if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listener, (struct sockaddr *)&sin) || rdma_listen(listener, 16))
		die("listen");
	objects(listener->verbs);
	printf("listening on port %u\n", ntohs(rdma_get_src_port(listener)));
	fflush(stdout);
	while (!want || done < want) {
		struct rdma_cm_event *ev = next();
		struct rdma_cm_id *id = ev->id;
		struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
					     .rnr_retry_count = 7 };

		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (ev->listen_id != listener || ev->param.conn.private_data_len < MSG)
				die("a request without its private data");
			if (reject) {
				rdma_ack_cm_event(ev);
				if (rdma_reject(id, NO, sizeof(NO)))
					die("rdma_reject");
				rdma_destroy_id(id);
				done++;
				continue;
			}
			memcpy(buf[1], ev->param.conn.private_data, MSG);
			rdma_ack_cm_event(ev);
			make_qp(id);
			if (rdma_accept(id, &p))
				die("rdma_accept");
			continue;
		case RDMA_CM_EVENT_ESTABLISHED:
			rdma_ack_cm_event(ev);
			post(id, 1, true); /* the request's private data, back */
			complete(1);
			continue;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(ev);
			rdma_disconnect(id);
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			done++;
			continue;
		default:
			fprintf(stderr, "cm_check: server: %s status %d\n", rdma_event_str(ev->event),
				ev->status);
			return 1;
		}
	}
	printf("served %ld\n", done);
	rdma_destroy_id(listener);
	return 0;
}

/* --- the active side ------------------------------------------------------------------------- */

static void dest(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo h = { .ai_family = AF_INET }, *ai;

	if (getaddrinfo(host, port, &h, &ai)) {
		fprintf(stderr, "cm_check: %s: no such address\n", host);
		exit(2);
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
}

/* Through address and route resolution and the connect, to the event the connect ends in. */
static struct rdma_cm_event *connect_to(struct sockaddr_storage *ss, struct rdma_cm_id **out,
					int serial)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7,
				     .private_data_len = MSG };

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	*out = id;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)ss, 2000))
		die("rdma_resolve_addr");
	ev = next();
	if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return ev;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	ev = next();
	if (ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return ev;
	rdma_ack_cm_event(ev);
	make_qp(id);
	snprintf(buf[0], MSG, "cm_check connection %d", serial);
	p.private_data = buf[0];
	post(id, 1, false);
	if (rdma_connect(id, &p))
		die("rdma_connect");
	return next();
}

/* An established connection: the server's echo of our private data, then both ends go. */
static void echo_and_close(struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;

	complete(1);
	if (memcmp(buf[0], buf[1], MSG)) {
		fprintf(stderr, "cm_check: the echo differs: '%.64s'\n", buf[1]);
		exit(1);
	}
	if (rdma_disconnect(id))
		die("rdma_disconnect");
	ev = next();
	if (ev->event != RDMA_CM_EVENT_DISCONNECTED) {
		fprintf(stderr, "cm_check: %s, not DISCONNECTED\n", rdma_event_str(ev->event));
		exit(1);
	}
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static const char *const names[] = {
	[RDMA_CM_EVENT_ESTABLISHED] = "established", [RDMA_CM_EVENT_REJECTED] = "rejected",
	[RDMA_CM_EVENT_UNREACHABLE] = "unreachable", [RDMA_CM_EVENT_ADDR_ERROR] = "addr_error",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "route_error",
};

static int connect_one(char **argv)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	char want[128], *status, *priv;
	const char *got;

	snprintf(want, sizeof(want), "%s", argv[4]);
	status = strchr(want, ':');
	if (status)
		*status++ = 0;
	priv = status ? strchr(status, ':') : NULL;
	if (priv)
		*priv++ = 0;
	dest(argv[2], argv[3], &ss);
	ev = connect_to(&ss, &id, 0);
	got = (unsigned)ev->event < sizeof(names) / sizeof(names[0]) && names[ev->event]
		      ? names[ev->event]
		      : rdma_event_str(ev->event);
	printf("%s status %d\n", got, ev->status);
	if (strcmp(got, want) || (status && ev->status != atoi(status))) {
		fprintf(stderr, "cm_check: wanted %s\n", argv[4]);
		return 1;
	}
	if (priv && (ev->param.conn.private_data_len < strlen(priv) + 1 ||
		     memcmp(ev->param.conn.private_data, priv, strlen(priv) + 1))) {
		fprintf(stderr, "cm_check: the private data is not '%s'\n", priv);
		return 1;
	}
	rdma_ack_cm_event(ev);
	if (!strcmp(got, "established"))
		echo_and_close(id);
	return 0;
}

static int loop(char **argv)
{
	struct sockaddr_storage ss;
	long n = atol(argv[4]);

	dest(argv[2], argv[3], &ss);
	for (long i = 0; i < n; i++) {
		struct rdma_cm_id *id;
		struct rdma_cm_event *ev = connect_to(&ss, &id, (int)i);

		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			fprintf(stderr, "cm_check: connection %ld: %s status %d\n", i,
				rdma_event_str(ev->event), ev->status);
			return 1;
		}
		rdma_ack_cm_event(ev);
		echo_and_close(id);
	}
	printf("%ld connections opened, used and closed\n", n);
	return 0;
}

static int hold(char **argv)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	dest(argv[2], argv[3], &ss);
	ev = connect_to(&ss, &id, 0);
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		fprintf(stderr, "cm_check: hold: %s status %d, not ESTABLISHED\n",
			rdma_event_str(ev->event), ev->status);
		return 1;
	}
	rdma_ack_cm_event(ev);
	complete(1);
	/* a SEND the server never posts a receive for: retried while its daemon answers (RNR),
	 * failing the QP once nothing does */
	post(id, 0, true);
	printf("established\n");
	fflush(stdout);
	ev = next();
	printf("%s\n", ev->event == RDMA_CM_EVENT_DISCONNECTED	 ? "DISCONNECTED"
		       : ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ? "DEVICE_REMOVAL"
								   : rdma_event_str(ev->event));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: cm_check serve PORT [-r] [-n N] | connect ADDR PORT WANT | "
				"loop ADDR PORT N | hold ADDR PORT\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (!strcmp(argv[1], "serve"))
		return serve(argc, argv);
	if (!strcmp(argv[1], "connect") && argc == 5)
		return connect_one(argv);
	if (!strcmp(argv[1], "loop") && argc == 5)
		return loop(argv);
	if (!strcmp(argv[1], "hold") && argc == 4)
		return hold(argv);
	fprintf(stderr, "cm_check: unknown command\n");
	return 2;
}
