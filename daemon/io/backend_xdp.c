/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The xdp backend: the XDP program (fastpath.c) places data packets before they reach any
 * socket, and what it placed comes back from its event ring as header-only datagrams marked
 * `placed`. What it does not place it redirects to AF_XDP sockets (afxdp.c), through which
 * the daemon also transmits. The udp backend's sockets stay open underneath: they take what
 * arrives where no AF_XDP socket is, and send while a next hop is being resolved, or for
 * everything when AF_XDP cannot be had (the reason is in the status note).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afxdp.h"
#include "backend.h"
#include "daemon.h"
#include "fastpath.h"
#include "log.h"

/*
 * With AF_XDP sockets on every queue the UDP sockets see almost nothing (a queue without
 * one, the moments before they opened): like the udp backend's, they are read only when the
 * loop saw them readable, so they cost no system call otherwise.
 */
struct mrcd_xdp_state {
	struct mrcd_fastpath fp;
	struct mrcd_afxdp xsk;
	bool have_xsk;
};

static struct mrcd_xdp_state *state(const struct mrcd_backend *b)
{
	return (struct mrcd_xdp_state *)b->fast; /* fp is its first member */
}

static void xdp_close(struct mrcd_backend *b)
{
	struct mrcd_xdp_state *s = state(b);

	if (s) {
		if (s->have_xsk)
			mrcd_afxdp_close(&s->xsk);
		mrcd_fastpath_close(&s->fp);
		free(s);
		b->fast = NULL;
	}
	mrcd_backend_udp.close(b);
}

static int xdp_open(struct mrcd_backend *b, char *err, size_t errlen)
{
	struct mrcd_xdp_state *s;
	char why[256];
	int planes;

	if (mrcd_backend_udp.open(b, err, errlen))
		return -1;
	s = calloc(1, sizeof(*s));
	if (!s) {
		mrcd_backend_udp.close(b);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* the port the sockets bound, so a port chosen by the kernel is the program's too; it
	 * redirects to AF_XDP sockets, and where a plane has none the redirect falls back to
	 * XDP_PASS, up to the plane's UDP socket */
	if (mrcd_fastpath_open(&s->fp, b->cfg, b->port, true, err, errlen)) {
		free(s);
		mrcd_backend_udp.close(b);
		return -1;
	}
	b->fast = &s->fp;
	planes = mrcd_afxdp_open(&s->xsk, b->cfg, s->fp.xsks_fd, why, sizeof(why));
	if (planes > 0) {
		s->have_xsk = true;
		for (unsigned i = 0; i < MRC_MAX_PLANES; i++)
			b->xsk_sockets += s->xsk.planes[i].n_queues;
	}
	if (planes > 0 && (unsigned)planes < b->cfg->n_planes) {
		size_t n = strlen(s->fp.note);

		mrcd_log(LOG_NOTICE, "AF_XDP on %d of %u planes; the others use UDP sockets for "
				     "control packets and transmit (%s)", planes, b->cfg->n_planes, why);
		snprintf(s->fp.note + n, sizeof(s->fp.note) - n, "; AF_XDP on %d/%u", planes,
			 b->cfg->n_planes);
	}
	if (!s->have_xsk) {
		size_t n = strlen(s->fp.note);

		mrcd_log(LOG_NOTICE, "xdp backend without AF_XDP sockets (%s): control packets and "
				     "transmit use UDP sockets", why);
		snprintf(s->fp.note + n, sizeof(s->fp.note) - n, "; no AF_XDP: %s", why);
	}
	return 0;
}

static int xdp_rx_batch(struct mrcd_backend *b, struct mrcd_dgram *d, unsigned n)
{
	struct mrcd_xdp_state *s = state(b);
	struct mrc_xdp_event ev[64];
	unsigned got = 0, k;
	int more;

	k = mrcd_fastpath_events(&s->fp, ev, n < 64 ? n : 64);
	for (unsigned i = 0; i < k; i++) {
		struct mrcd_dgram *g = &d[got];
		int plane = mrcd_fastpath_plane(&s->fp, ev[i].ifindex);

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
	if (s->have_xsk) {
		/* frames a kick left in a transmit ring go out now, whatever else happens */
		mrcd_afxdp_kick(&s->xsk);
		mrcd_afxdp_neigh_receive(&s->xsk, mrcd_now_ns());
	}
	if (s->have_xsk && got < n) {
		unsigned x = mrcd_afxdp_rx(&s->xsk, d + got, n - got, &b->xsk_rx_bad);

		got += x;
		b->xsk_rx += x;
	}
	more = got < n && b->udp_ready ? mrcd_backend_udp.rx_batch(b, d + got, n - got) : 0;
	return (int)got + (more > 0 ? more : 0);
}

static bool xdp_tx_pending(struct mrcd_backend *b)
{
	struct mrcd_xdp_state *s = state(b);

	return s->have_xsk && mrcd_afxdp_tx_pending(&s->xsk);
}

static bool xdp_rx_pending(struct mrcd_backend *b)
{
	return mrcd_fastpath_events_pending(&state(b)->fp);
}

static bool xdp_arm(struct mrcd_backend *b, bool sleeping)
{
	return mrcd_fastpath_arm(&state(b)->fp, sleeping);
}

static unsigned xdp_poll_fds(const struct mrcd_backend *b, int *fds, unsigned max)
{
	const struct mrcd_xdp_state *s = state(b);
	unsigned n = mrcd_backend_udp.poll_fds(b, fds, max);

	if (n < max)
		fds[n++] = s->fp.events_fd;
	if (s->have_xsk)
		n += mrcd_afxdp_poll_fds(&s->xsk, fds + n, max - n);
	return n;
}

static int xdp_tx_batch(struct mrcd_backend *b, const struct mrcd_dgram *d, unsigned n)
{
	struct mrcd_xdp_state *s = state(b);
	uint64_t now = mrcd_now_ns();
	unsigned done = 0;

	if (!s->have_xsk)
		return mrcd_backend_udp.tx_batch(b, d, n);
	while (done < n) {
		int r = mrcd_afxdp_tx(&s->xsk, &d[done], now);

		if (r == 0)
			break; /* the ring is full: the rest waits */
		if (r < 0 && mrcd_backend_udp.tx_batch(b, &d[done], 1) != 1)
			break; /* unresolved next hop, and the socket refused too */
		if (r > 0)
			b->xsk_tx++;
		else if (r == -1)
			b->xsk_tx_unresolved++;
		done++;
	}
	mrcd_afxdp_kick(&s->xsk);
	mrcd_afxdp_neigh_send(&s->xsk, now);
	return (int)done;
}

static void xdp_fd_ready(struct mrcd_backend *b, int fd)
{
	struct mrcd_xdp_state *s = state(b);

	/* the event ring and the AF_XDP rings are read anyway; rtnetlink and the UDP sockets
	 * only once they are ready */
	if (s->have_xsk)
		mrcd_afxdp_fd_ready(&s->xsk, fd);
	mrcd_backend_udp_fd_ready(b, fd);
}

const struct mrcd_backend_ops mrcd_backend_xdp = {
	.name = "xdp",
	.open = xdp_open,
	.tx_batch = xdp_tx_batch,
	.rx_batch = xdp_rx_batch,
	.poll_fds = xdp_poll_fds,
	.fd_ready = xdp_fd_ready,
	.tx_pending = xdp_tx_pending,
	.rx_pending = xdp_rx_pending,
	.arm = xdp_arm,
	.close = xdp_close,
};
