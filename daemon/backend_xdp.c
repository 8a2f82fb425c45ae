/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The xdp backend: the udp backend's sockets for everything the XDP program passes up, plus
 * the program itself (fastpath.c) placing data packets before they reach any socket. What it
 * placed comes back here from its event ring as header-only datagrams marked `placed`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fastpath.h"

static void xdp_close(struct mrcd_backend *b)
{
	if (b->fast) {
		mrcd_fastpath_close(b->fast);
		free(b->fast);
		b->fast = NULL;
	}
	mrcd_backend_udp.close(b);
}

static int xdp_open(struct mrcd_backend *b, char *err, size_t errlen)
{
	if (mrcd_backend_udp.open(b, err, errlen))
		return -1;
	b->fast = calloc(1, sizeof(*b->fast));
	if (!b->fast) {
		mrcd_backend_udp.close(b);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* the port the sockets bound, so a port chosen by the kernel is the program's too */
	if (mrcd_fastpath_open(b->fast, b->cfg, b->port, err, errlen)) {
		free(b->fast);
		b->fast = NULL;
		mrcd_backend_udp.close(b);
		return -1;
	}
	return 0;
}

static int xdp_rx_batch(struct mrcd_backend *b, struct mrcd_dgram *d, unsigned n)
{
	struct mrc_xdp_event ev[64];
	unsigned got = 0, k;
	int more;

	k = mrcd_fastpath_events(b->fast, ev, n < 64 ? n : 64);
	for (unsigned i = 0; i < k; i++) {
		struct mrcd_dgram *g = &d[got];
		int plane = mrcd_fastpath_plane(b->fast, ev[i].ifindex);

		if (plane < 0 || g->cap < MRC_XDP_EVENT_HDR)
			continue;
		memcpy(g->data, ev[i].hdr, MRC_XDP_EVENT_HDR);
		g->len = MRC_XDP_EVENT_HDR;
		g->plane = (uint8_t)plane;
		g->sport = g->peer_port = ev[i].sport;
		memcpy(g->peer.addr, ev[i].peer, 16);
		g->peer.family = b->udp[plane].family;
		g->ce = ev[i].ce;
		g->placed = true;
		got++;
	}
	more = mrcd_backend_udp.rx_batch(b, d + got, n - got);
	return (int)got + (more > 0 ? more : 0);
}

static unsigned xdp_poll_fds(const struct mrcd_backend *b, int *fds, unsigned max)
{
	unsigned n = mrcd_backend_udp.poll_fds(b, fds, max);

	if (n < max)
		fds[n++] = b->fast->events_fd;
	return n;
}

static int xdp_tx_batch(struct mrcd_backend *b, const struct mrcd_dgram *d, unsigned n)
{
	return mrcd_backend_udp.tx_batch(b, d, n);
}

const struct mrcd_backend_ops mrcd_backend_xdp = {
	.name = "xdp",
	.open = xdp_open,
	.tx_batch = xdp_tx_batch,
	.rx_batch = xdp_rx_batch,
	.poll_fds = xdp_poll_fds,
	.close = xdp_close,
};
