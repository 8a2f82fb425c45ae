/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "afxdp.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/rtnetlink.h>
#include <linux/udp.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <xdp/xsk.h>

#include "backend.h"
#include "frame.h"
#include "log.h"

struct mrcd_xsk_queue {
	struct xsk_socket *xsk;
	struct xsk_umem *umem;
	void *area;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	uint64_t free_tx[MRCD_XSK_TX_FRAMES]; /* transmit frames not in flight */
	unsigned n_free_tx;
};


/* --- sockets ------------------------------------------------------------------------------ */

unsigned mrcd_iface_rx_queues(const char *ifname)
{
	char path[96];
	DIR *dir;
	struct dirent *e;
	unsigned n = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	dir = opendir(path);
	if (!dir)
		return 1;
	while ((e = readdir(dir)))
		n += !strncmp(e->d_name, "rx-", 3);
	closedir(dir);
	return n ? n : 1;
}

static int iface_info(const char *ifname, uint8_t mac[6], int *mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		err = -EPFNOSUPPORT; /* the frames built here are Ethernet frames */
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (!err && ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	else if (!err)
		*mtu = ifr.ifr_mtu;
	close(fd);
	return err;
}

static void queue_close(struct mrcd_xsk_queue *q)
{
	if (q->xsk)
		xsk_socket__delete(q->xsk);
	if (q->umem)
		xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, (size_t)(MRCD_XSK_RX_FRAMES + MRCD_XSK_TX_FRAMES) * MRCD_XSK_FRAME);
	memset(q, 0, sizeof(*q));
}

static int queue_open(struct mrcd_xsk_queue *q, const char *ifname, unsigned queue)
{
	size_t size = (size_t)(MRCD_XSK_RX_FRAMES + MRCD_XSK_TX_FRAMES) * MRCD_XSK_FRAME;
	struct xsk_umem_config ucfg = {
		.fill_size = MRCD_XSK_RX_FRAMES,
		.comp_size = MRCD_XSK_TX_FRAMES,
		.frame_size = MRCD_XSK_FRAME,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = MRCD_XSK_RX_FRAMES,
		.tx_size = MRCD_XSK_TX_FRAMES,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, /* the program is ours */
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	uint32_t idx;
	int err;

	q->area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		return -ENOMEM;
	}
	err = xsk_umem__create(&q->umem, q->area, size, &q->fill, &q->comp, &ucfg);
	if (err)
		return err;
	err = xsk_socket__create(&q->xsk, ifname, queue, q->umem, &q->rx, &q->tx, &scfg);
	if (err)
		return err;
	/* the first half receives: all of it on the fill ring from the start */
	if (xsk_ring_prod__reserve(&q->fill, MRCD_XSK_RX_FRAMES, &idx) != MRCD_XSK_RX_FRAMES)
		return -ENOSPC;
	for (unsigned i = 0; i < MRCD_XSK_RX_FRAMES; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) = (uint64_t)i * MRCD_XSK_FRAME;
	xsk_ring_prod__submit(&q->fill, MRCD_XSK_RX_FRAMES);
	for (unsigned i = 0; i < MRCD_XSK_TX_FRAMES; i++)
		q->free_tx[i] = (uint64_t)(MRCD_XSK_RX_FRAMES + i) * MRCD_XSK_FRAME;
	q->n_free_tx = MRCD_XSK_TX_FRAMES;
	return 0;
}

void mrcd_afxdp_close(struct mrcd_afxdp *x)
{
	for (unsigned i = 0; i < MRC_MAX_PLANES; i++) {
		struct mrcd_xsk_plane *p = &x->planes[i];

		for (unsigned k = 0; k < p->n_queues; k++)
			queue_close(&p->queues[k]);
		free(p->queues);
	}
	if (x->nl_fd > 0)
		close(x->nl_fd);
	memset(x, 0, sizeof(*x));
}

/* A plane that cannot have AF_XDP sockets goes without; the reason joins the others in err. */
static void plane_without(struct mrcd_xsk_plane *p, char *err, size_t errlen, const char *fmt,
			  ...) __attribute__((format(printf, 4, 5)));
static void plane_without(struct mrcd_xsk_plane *p, char *err, size_t errlen, const char *fmt,
			  ...)
{
	size_t n = strlen(err);
	va_list ap;

	for (unsigned k = 0; k < p->n_queues; k++)
		queue_close(&p->queues[k]); /* which takes it out of the XSKMAP too */
	free(p->queues);
	p->queues = NULL;
	p->n_queues = 0;
	if (n && n + 2 < errlen) {
		memcpy(err + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	if (n < errlen)
		vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
}

int mrcd_afxdp_open(struct mrcd_afxdp *x, const struct mrcd_config *cfg, int xsks_fd,
		    unsigned worker, unsigned n_workers, char *err, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	err[0] = '\0';
	/* never waited on: questions go out and answers come in as the loop finds it ready */
	x->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (x->nl_fd < 0) {
		snprintf(err, errlen, "rtnetlink: %s", strerror(errno));
		return -1;
	}
	mrcd_neigh_init(&x->neigh);
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		const struct mrcd_plane *pl = &cfg->planes[i];
		struct mrcd_xsk_plane *p = &x->planes[pl->index];
		char ifname[IF_NAMESIZE];
		int mtu = 0, e;

		p->plane = pl->index;
		p->origin.family = pl->addr.family;
		memcpy(p->origin.addr, pl->addr.addr, 16);
		p->ifindex = pl->ifname[0] ? (int)if_nametoindex(pl->ifname) : 0;
		if (!pl->ifname[0]) {
			plane_without(p, err, errlen, "plane %u names no interface", pl->index);
			continue;
		}
		if (p->ifindex <= 0 || !if_indextoname((unsigned)p->ifindex, ifname)) {
			plane_without(p, err, errlen, "plane %u: no interface %s", pl->index,
				      pl->ifname);
			continue;
		}
		e = iface_info(ifname, p->origin.mac, &mtu);
		if (e) {
			plane_without(p, err, errlen, "%s: %s", ifname, strerror(-e));
			continue;
		}
		/* a frame keeps XDP_PACKET_HEADROOM in front; allow a VLAN tag too */
		if (mtu + ETH_HLEN + 4 > (int)(MRCD_XSK_FRAME - XDP_PACKET_HEADROOM)) {
			plane_without(p, err, errlen, "%s: MTU %d does not fit %u-byte frames", ifname,
				      mtu, MRCD_XSK_FRAME);
			continue;
		}
		{
			unsigned nq = mrcd_iface_rx_queues(ifname), mine;

			if (nq > MRC_XDP_MAX_QUEUES)
				nq = MRC_XDP_MAX_QUEUES;
			/* a queue is one worker's, the one that takes what arrives there */
			mine = nq > worker ? (nq - worker + n_workers - 1) / n_workers : 0;
			if (!mine) {
				plane_without(p, err, errlen, "%s has %u receive queue%s, "
					      "none of them worker %u's", ifname, nq,
					      nq == 1 ? "" : "s", worker);
				continue;
			}
			p->queues = calloc(mine, sizeof(*p->queues));
			if (!p->queues) {
				plane_without(p, err, errlen, "%s: out of memory", ifname);
				continue;
			}
			p->n_queues = mine;
		}
		for (unsigned k = 0; k < p->n_queues; k++) {
			unsigned q = worker + k * n_workers;
			uint32_t key = (uint32_t)pl->index * MRC_XDP_MAX_QUEUES + q;
			int fd;

			e = queue_open(&p->queues[k], ifname, q);
			if (e == -ENOBUFS) {
				struct rlimit rl = { 0 };

				/* the kernel counts a socket's frames against RLIMIT_MEMLOCK */
				getrlimit(RLIMIT_MEMLOCK, &rl);
				plane_without(p, err, errlen, "%s queue %u: the locked-memory limit "
					      "(%llu KiB, for all the user's processes together) is "
					      "spent, and each AF_XDP socket pins %u KiB: raise "
					      "LimitMEMLOCK or grant CAP_IPC_LOCK", ifname, q,
					      (unsigned long long)rl.rlim_cur / 1024,
					      (MRCD_XSK_RX_FRAMES + MRCD_XSK_TX_FRAMES) *
						      MRCD_XSK_FRAME / 1024);
				break;
			}
			if (e == -EPERM) {
				plane_without(p, err, errlen, "%s queue %u: an AF_XDP socket needs "
					      "CAP_NET_RAW", ifname, q);
				break;
			}
			if (e) {
				plane_without(p, err, errlen, "%s queue %u: %s", ifname, q,
					      strerror(e < 0 ? -e : e));
				break;
			}
			fd = xsk_socket__fd(p->queues[k].xsk);
			if (bpf_map_update_elem(xsks_fd, &key, &fd, BPF_ANY)) {
				plane_without(p, err, errlen, "%s: mrc_xsks: %s", ifname,
					      strerror(errno));
				break;
			}
		}
		if (p->n_queues) {
			x->n_planes++;
			mrcd_neigh_plane(&x->neigh, pl->index, p->ifindex, p->origin.family,
					 p->origin.addr);
		}
	}
	if (!x->n_planes) {
		mrcd_afxdp_close(x);
		return -1;
	}
	return (int)x->n_planes;
}

unsigned mrcd_afxdp_poll_fds(const struct mrcd_afxdp *x, int *fds, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < MRC_MAX_PLANES; i++)
		for (unsigned k = 0; k < x->planes[i].n_queues && n < max; k++)
			fds[n++] = xsk_socket__fd(x->planes[i].queues[k].xsk);
	if (n < max)
		fds[n++] = x->nl_fd;
	return n;
}

/* --- the next hops' MACs (neigh.h) --------------------------------------------------------- */

void mrcd_afxdp_fd_ready(struct mrcd_afxdp *x, int fd)
{
	if (fd == x->nl_fd)
		x->nl_ready = true;
}

void mrcd_afxdp_neigh_send(struct mrcd_afxdp *x, uint64_t now_ns)
{
	uint8_t req[MRCD_NEIGH_REQUEST_MAX];
	size_t len;

	/* a question the socket refuses is lost, and asked again when its answer is overdue */
	while ((len = mrcd_neigh_request(&x->neigh, req, sizeof(req), now_ns)))
		if (send(x->nl_fd, req, len, MSG_DONTWAIT) < 0 && errno != EINTR)
			break;
}

void mrcd_afxdp_neigh_receive(struct mrcd_afxdp *x, uint64_t now_ns)
{
	uint8_t buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));

	if (!x->nl_ready)
		return;
	for (unsigned i = 0; i < 64; i++) {
		ssize_t n = recv(x->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && errno == ENOBUFS)
			continue; /* answers overran the socket: those questions are asked again */
		if (n <= 0) {
			x->nl_ready = n < 0 && errno == EINTR;
			return;
		}
		mrcd_neigh_answer(&x->neigh, buf, (size_t)n, now_ns);
	}
}

/* --- receive ------------------------------------------------------------------------------ */

unsigned mrcd_afxdp_rx(struct mrcd_afxdp *x, struct mrcd_dgram *d, unsigned n, uint64_t *bad)
{
	unsigned got = 0;

	for (unsigned s = 0; s < MRC_MAX_PLANES && got < n; s++) {
		struct mrcd_xsk_plane *p = &x->planes[(x->rx_cursor + s) % MRC_MAX_PLANES];

		for (unsigned k = 0; k < p->n_queues && got < n; k++) {
			struct mrcd_xsk_queue *q = &p->queues[k];
			uint32_t idx_rx, idx_fill;
			unsigned r = xsk_ring_cons__peek(&q->rx, n - got, &idx_rx);

			if (!r)
				continue;
			/* every frame taken goes straight back to the fill ring, which has room
			 * for all of them (the frames only circulate); should it not, they are
			 * left on the receive ring for the next turn */
			if (xsk_ring_prod__reserve(&q->fill, r, &idx_fill) != r) {
				xsk_ring_cons__cancel(&q->rx, r);
				continue;
			}
			for (unsigned i = 0; i < r; i++) {
				const struct xdp_desc *desc = xsk_ring_cons__rx_desc(&q->rx, idx_rx + i);
				const uint8_t *f = xsk_umem__get_data(q->area, desc->addr);

				if (mrcd_frame_parse(f, desc->len, p->plane, &d[got]))
					got++;
				else
					(*bad)++;
				*xsk_ring_prod__fill_addr(&q->fill, idx_fill + i) =
					xsk_umem__extract_addr(desc->addr);
			}
			xsk_ring_prod__submit(&q->fill, r);
			xsk_ring_cons__release(&q->rx, r);
			/* zero-copy drivers sleep on an empty fill ring until told */
			if (xsk_ring_prod__needs_wakeup(&q->fill))
				recvfrom(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
		}
	}
	x->rx_cursor++;
	return got;
}

/* --- transmit ----------------------------------------------------------------------------- */

static void reclaim(struct mrcd_xsk_queue *q)
{
	uint32_t idx;
	unsigned n = xsk_ring_cons__peek(&q->comp, MRCD_XSK_TX_FRAMES, &idx);

	for (unsigned i = 0; i < n; i++)
		q->free_tx[q->n_free_tx++] = *xsk_ring_cons__comp_addr(&q->comp, idx + i);
	xsk_ring_cons__release(&q->comp, n);
}

int mrcd_afxdp_tx(struct mrcd_afxdp *x, const struct mrcd_dgram *g, uint64_t now_ns)
{
	struct mrcd_xsk_plane *p;
	struct mrcd_xsk_queue *q;
	const uint8_t *mac;
	struct xdp_desc *desc;
	uint32_t idx;
	uint64_t addr;

	if (g->plane >= MRC_MAX_PLANES || !x->planes[g->plane].n_queues)
		return -2;
	p = &x->planes[g->plane];
	q = &p->queues[0];
	if (mrcd_dgram_tx_len(g) + 14 + 40 + 8 > MRCD_XSK_FRAME)
		return -2;
	mac = mrcd_neigh_mac(&x->neigh, g->plane, g->peer.addr, now_ns);
	if (!mac)
		return -1;
	if (!q->n_free_tx)
		reclaim(q);
	if (!q->n_free_tx) {
		mrcd_afxdp_kick(x); /* a full ring is pushed along, then looked at again */
		if (!q->n_free_tx)
			return 0;
	}
	if (xsk_ring_prod__reserve(&q->tx, 1, &idx) != 1)
		return 0;
	addr = q->free_tx[--q->n_free_tx];
	desc = xsk_ring_prod__tx_desc(&q->tx, idx);
	desc->addr = addr;
	desc->len = mrcd_frame_build(&p->origin, mac, g, xsk_umem__get_data(q->area, addr));
	desc->options = 0;
	xsk_ring_prod__submit(&q->tx, 1);
	return 1;
}

bool mrcd_afxdp_tx_pending(struct mrcd_afxdp *x)
{
	for (unsigned i = 0; i < MRC_MAX_PLANES; i++) {
		struct mrcd_xsk_queue *q = x->planes[i].n_queues ? &x->planes[i].queues[0] : NULL;

		if (q && (reclaim(q), q->n_free_tx < MRCD_XSK_TX_FRAMES))
			return true;
	}
	return false;
}

/*
 * Tells the kernel to send what the transmit rings hold. In copy mode one call sends at most a
 * batch (32 today) and says EAGAIN while more is left, so it is asked again, within a bound;
 * whatever is still left goes on the next kick, which every loop turn gives (afxdp.h).
 */
void mrcd_afxdp_kick(struct mrcd_afxdp *x)
{
	for (unsigned i = 0; i < MRC_MAX_PLANES; i++) {
		struct mrcd_xsk_plane *p = &x->planes[i];
		struct mrcd_xsk_queue *q;

		if (!p->n_queues)
			continue;
		q = &p->queues[0];
		reclaim(q);
		if (q->n_free_tx == MRCD_XSK_TX_FRAMES)
			continue; /* nothing in flight */
		for (unsigned tries = 0; tries < MRCD_XSK_TX_FRAMES / 32 + 2; tries++) {
			if (!xsk_ring_prod__needs_wakeup(&q->tx))
				break;
			if (sendto(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 ||
			    errno != EAGAIN)
				break;
		}
		reclaim(q);
	}
}
