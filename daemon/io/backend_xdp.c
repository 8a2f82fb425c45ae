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
 *
 * Worker 0's backend loads the program, with an event ring per worker; another worker's
 * shares it (b->fast is its leader's) and reads the ring of the QPs it runs. Each has AF_XDP
 * sockets on its own receive queues.
 */
struct mrcd_xdp_state {
	struct mrcd_fastpath fp; /* worker 0's: the program and its maps; unused by the others */
	struct mrcd_afxdp xsk;
	bool have_xsk;
};

static struct mrcd_xdp_state *state(const struct mrcd_backend *b)
{
	return b->priv;
}

static void xdp_close(struct mrcd_backend *b)
{
	struct mrcd_xdp_state *s = state(b);

	if (s) {
		if (s->have_xsk)
			mrcd_afxdp_close(&s->xsk);
		if (!b->leader)
			mrcd_fastpath_close(&s->fp);
		free(s);
		b->priv = NULL;
		b->fast = NULL;
	}
	mrcd_backend_udp.close(b);
}

/* What the worker's AF_XDP sockets cover, in the log and (worker 0's) the status note. */
static void note_sockets(struct mrcd_backend *b, int planes, const char *why)
{
	char *note = b->leader ? NULL : b->fast->note;
	size_t n = note ? strlen(note) : 0;

	if (planes > 0 && (unsigned)planes < b->cfg->n_planes) {
		mrcd_log(LOG_NOTICE, "worker %u: AF_XDP on %d of %u planes; on the others it sends "
			 "through UDP sockets (%s)", b->worker, planes, b->cfg->n_planes, why);
		if (note)
			snprintf(note + n, sizeof(b->fast->note) - n, "; AF_XDP on %d/%u", planes,
				 b->cfg->n_planes);
	} else if (planes <= 0) {
		mrcd_log(LOG_NOTICE, "worker %u: no AF_XDP sockets (%s): it sends through UDP "
			 "sockets, and takes control packets from the program's other sockets",
			 b->worker, why);
		if (note)
			snprintf(note + n, sizeof(b->fast->note) - n, "; no AF_XDP: %s", why);
	}
}

static int xdp_open(struct mrcd_backend *b, char *err, size_t errlen)
{
	unsigned n_workers = b->n_workers ? b->n_workers : 1;
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
	b->priv = s;
	/* worker 0's: the program, on the port the sockets bound (a port the kernel chose is
	 * its too); it redirects to AF_XDP sockets, and where a plane has none the redirect
	 * falls back to XDP_PASS, up to the plane's UDP socket */
	if (!b->leader &&
	    mrcd_fastpath_open(&s->fp, b->cfg, b->port, true, n_workers, err, errlen)) {
		free(s);
		b->priv = NULL;
		mrcd_backend_udp.close(b);
		return -1;
	}
	b->fast = b->leader ? b->leader->fast : &s->fp;
	planes = mrcd_afxdp_open(&s->xsk, b->cfg, b->fast->xsks_fd, b->worker, n_workers, why,
				 sizeof(why));
	if (planes > 0) {
		s->have_xsk = true;
		for (unsigned i = 0; i < MRC_MAX_PLANES; i++)
			b->xsk.sockets += s->xsk.planes[i].n_queues;
	}
	note_sockets(b, planes, why);
	return 0;
}

static int xdp_rx_batch(struct mrcd_backend *b, struct mrcd_dgram *d, unsigned n)
{
	struct mrcd_xdp_state *s = state(b);
	struct mrc_xdp_event ev[64];
	unsigned got = 0, k;
	int more;

	k = mrcd_fastpath_events(b->fast, b->worker, ev, n < 64 ? n : 64);
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
	if (s->have_xsk) {
		/* frames a kick left in a transmit ring go out now, whatever else happens */
		mrcd_afxdp_kick(&s->xsk);
		mrcd_afxdp_neigh_receive(&s->xsk, mrcd_now_ns());
	}
	if (s->have_xsk && got < n) {
		unsigned x = mrcd_afxdp_rx(&s->xsk, d + got, n - got, &b->xsk.rx_bad);

		got += x;
		b->xsk.rx += x;
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
	return mrcd_fastpath_events_pending(b->fast, b->worker);
}

static bool xdp_arm(struct mrcd_backend *b, bool sleeping)
{
	return mrcd_fastpath_arm(b->fast, b->worker, sleeping);
}

static unsigned xdp_poll_fds(const struct mrcd_backend *b, int *fds, unsigned max)
{
	const struct mrcd_xdp_state *s = state(b);
	unsigned n = mrcd_backend_udp.poll_fds(b, fds, max);

	if (n < max)
		fds[n++] = mrcd_fastpath_events_fd(b->fast, b->worker);
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
			b->xsk.tx++;
		else if (r == -1)
			b->xsk.tx_unresolved++;
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
