/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a verbs program sees when its daemon is killed under it (lib/verbs/fatal.c): it posts
 * receives on a QP, says "ready", and busy-polls its CQ; the test kills the daemon. Every posted work request must complete with IBV_WC_WR_FLUSH_ERR, a receive
 * posted afterwards too, the async fd must give IBV_EVENT_DEVICE_FATAL, the port must read
 * down, and a new object must fail. Run through metaroce-run; exits 0 when all held.
 *
 *   fatal_check        prints "ready", then what it saw; exit 1 on the first broken promise
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define RECEIVES 5

static int fail(const char *what)
{
	fprintf(stderr, "fatal_check: %s\n", what);
	return 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Busy-polls until n completions came (each a flush of a wr_id below 100), 20 s at most. */
static int flushed(struct ibv_cq *cq, unsigned n, uint64_t *seen)
{
	double until = now_s() + 20;
	struct ibv_wc wc;

	while (n) {
		int got = ibv_poll_cq(cq, 1, &wc);

		if (got < 0)
			return fail("ibv_poll_cq failed");
		if (!got) {
			if (now_s() > until)
				return fail("no flush completion within 20 s of the daemon's death");
			continue;
		}
		if (wc.status != IBV_WC_WR_FLUSH_ERR || wc.wr_id >= 64) {
			fprintf(stderr, "fatal_check: completion wr_id %llu status %s\n",
				(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
			return 1;
		}
		*seen |= 1ull << wc.wr_id;
		n--;
	}
	return 0;
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	static char buf[4096];
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_qp_init_attr init = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 8, .max_recv_wr = 8,
						  .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = pd && cq ? ibv_create_qp(pd, &init) : NULL;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_sge sge = { (uintptr_t)buf, 64, 0 };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad_r;
	struct ibv_async_event ev;
	struct ibv_port_attr port;
	struct pollfd p;
	uint64_t seen = 0;

	if (!mr || !qp)
		return fail("could not set up a device, PD, CQ, region and QP");
	sge.lkey = mr->lkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		return fail("RESET to INIT refused");
	for (unsigned i = 0; i < RECEIVES; i++) {
		rwr.wr_id = i;
		if (ibv_post_recv(qp, &rwr, &bad_r))
			return fail("ibv_post_recv refused");
	}
	printf("ready\n");
	fflush(stdout);
	/* the test kills the daemon now: every receive flushed, seen while busy-polling */
	if (flushed(cq, RECEIVES, &seen))
		return 1;
	if (seen != (1ull << RECEIVES) - 1)
		return fail("a receive was flushed twice, another never");
	/* one posted after the death fails the same way */
	rwr.wr_id = 40;
	if (ibv_post_recv(qp, &rwr, &bad_r))
		return fail("a receive posted after the daemon's death was refused, not flushed");
	if (flushed(cq, 1, &seen))
		return 1;
	p = (struct pollfd){ .fd = ctx->async_fd, .events = POLLIN };
	if (poll(&p, 1, 5000) != 1 || ibv_get_async_event(ctx, &ev))
		return fail("no async event after the daemon's death");
	if (ev.event_type != IBV_EVENT_DEVICE_FATAL)
		return fail("the async event is not IBV_EVENT_DEVICE_FATAL");
	ibv_ack_async_event(&ev);
	if (ibv_query_port(ctx, 1, &port) || port.state != IBV_PORT_DOWN)
		return fail("the port does not read down");
	if (ibv_create_cq(ctx, 8, NULL, NULL, 0) || errno != ENODEV)
		return fail("a new CQ did not fail with ENODEV");
	printf("flushed %d receives, then one posted after; DEVICE_FATAL; port down; ENODEV\n",
	       RECEIVES);
	return 0;
}
