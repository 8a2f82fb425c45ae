/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The udp backend: MetaRoCE on ordinary UDP sockets, anywhere (SPEC section 2).
 *
 * Per plane, one socket bound to (plane address, MetaRoCE port) receives everything, and a
 * pool of MRCD_SPORTS_PER_PLANE sockets bound to (plane address, ephemeral port) sends: their
 * ports are the ECMP entropy the engine's paths choose among (SPEC R-50). An answer the engine
 * wants sent from some other port (it rotates over the peer's ports, R-331) leaves from the
 * pool socket that port selects, which keeps the rotation's spread. Every datagram is sent
 * ECT(0) with the don't-fragment bit; the receive side reads the ECN field of
 * each datagram through IP_RECVTOS / IPV6_RECVTCLASS.
 */
#include "backend.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ECN_MASK 0x03
#define ECN_ECT0 0x02
#define ECN_CE 0x03
#define RX_BATCH 64


static socklen_t to_sockaddr(const struct mrcd_addr *a, uint16_t port,
			     struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == MRC_AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, a->addr + 12, 4);
		return sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, a->addr, 16);
		return sizeof(*in6);
	}
}

static void from_sockaddr(const struct sockaddr_storage *ss, struct mrcd_addr *a, uint16_t *port)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		a->family = MRC_AF_INET;
		mrc_addr_from_v4(a->addr, &in->sin_addr);
		*port = ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		a->family = MRC_AF_INET6;
		memcpy(a->addr, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
	}
}

static int fail(char *err, size_t errlen, const char *what, const struct mrcd_plane *p)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	if (p->addr.family == MRC_AF_INET)
		inet_ntop(AF_INET, p->addr.addr + 12, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, p->addr.addr, addr, sizeof(addr));
	snprintf(err, errlen, "plane %u (%s, %s): %s: %s", p->index, p->ifname, addr, what,
		 strerror(errno));
	return -1;
}

/* A socket on the plane's address and port, sending ECT(0), DF, non-blocking. */
static int plane_socket(const struct mrcd_plane *p, uint16_t port, bool rx, bool reuseport,
			uint16_t *bound, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len = to_sockaddr(&p->addr, port, &ss);
	int v6 = p->addr.family == MRC_AF_INET6, one = 1, tos = ECN_ECT0, buf = 4 << 20;
	int pmtu = v6 ? IPV6_PMTUDISC_DO : IP_PMTUDISC_DO;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return fail(err, errlen, "socket", p);
	if ((v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_TCLASS : IP_TOS, &tos,
		       sizeof(tos)) ||
	    setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER,
		       &pmtu, sizeof(pmtu)) ||
	    (rx && setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
			      v6 ? IPV6_RECVTCLASS : IP_RECVTOS, &one, sizeof(one))) ||
	    /* each worker's receiving socket in the plane's group (worker.c) */
	    (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    /* Without it a datagram the local qdisc drops (a full NIC queue, a rate limit) is
	     * reported as sent: loss the sender inflicted on itself, without ECN, which looks
	     * like a failing path. With it the send fails with ENOBUFS, and the datagram waits
	     * for the queue like every other back-pressured one. The price: ICMP errors are
	     * queued on the socket and fail the next send once (udp_tx_batch retries it). */
	    (!rx && setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_RECVERR : IP_RECVERR,
			       &one, sizeof(one)))) {
		fail(err, errlen, "setsockopt", p);
		close(fd);
		return -1;
	}
	/* a bigger buffer where the system allows it; the default still works */
	setsockopt(fd, SOL_SOCKET, rx ? SO_RCVBUF : SO_SNDBUF, &buf, sizeof(buf));
	if (bind(fd, (struct sockaddr *)&ss, len)) {
		fail(err, errlen, rx ? "bind to the MetaRoCE port" : "bind a source port", p);
		close(fd);
		return -1;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len)) {
		fail(err, errlen, "getsockname", p);
		close(fd);
		return -1;
	}
	*bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					       : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static void reset_plane(struct mrcd_udp_plane *u)
{
	memset(u, 0, sizeof(*u));
	u->rx_fd = -1;
	for (unsigned k = 0; k < MRCD_SPORTS_PER_PLANE; k++)
		u->tx_fd[k] = -1;
}

/* --- receive with UDP GRO ------------------------------------------------------------- */

#define GRO_MSGS 16	      /* trains one recvmmsg takes */
#define GRO_BUF 65536u	      /* a train's bytes at most */

/* Trains received and not yet handed out whole: the datagrams point into buf until the next
 * rx_batch, so a train is received into it only once the one before is handed out. */
struct mrcd_gro {
	uint8_t buf[GRO_MSGS][GRO_BUF];
	struct {
		uint32_t len, seg; /* the train's bytes and each datagram's (the last may be less) */
		uint8_t plane;
		bool ce;
		struct mrcd_addr peer;
		uint16_t port;
	} msg[GRO_MSGS];
	unsigned n, at;	     /* trains received, and the one being handed out */
	uint32_t off;	     /* where in it */
};

/* Trains off on every receiving socket: each datagram is read into a buffer of its own. */
static void gro_off(struct mrcd_backend *b)
{
	int zero = 0;

	for (unsigned i = 0; i < MRC_MAX_PLANES; i++)
		if (b->udp[i].rx_fd >= 0)
			setsockopt(b->udp[i].rx_fd, SOL_UDP, UDP_GRO, &zero, sizeof(zero));
	free(b->gro);
	b->gro = NULL;
}

/* The received trains' datagrams, up to n, pointing into the trains' buffers. */
static unsigned gro_hand_out(struct mrcd_gro *g, struct mrcd_dgram *d, unsigned n)
{
	unsigned got = 0;

	while (got < n && g->at < g->n) {
		struct mrcd_dgram *x = &d[got++];
		uint32_t left = g->msg[g->at].len - g->off, seg = g->msg[g->at].seg;

		x->data = g->buf[g->at] + g->off;
		x->len = x->cap = left < seg ? left : seg;
		x->plane = g->msg[g->at].plane;
		x->peer = g->msg[g->at].peer;
		x->peer_port = x->sport = g->msg[g->at].port;
		x->ce = g->msg[g->at].ce;
		x->placed = false;
		g->off += x->len;
		if (g->off >= g->msg[g->at].len) {
			g->at++;
			g->off = 0;
		}
	}
	return got;
}

/* The ECN field and the train's datagram size (UDP_GRO: absent for a lone datagram). */
static void read_cmsgs(struct msghdr *m, bool *ce, uint32_t *seg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		int v = 0;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			v = *(unsigned char *)CMSG_DATA(c);
			*ce = (v & ECN_MASK) == ECN_CE;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			*ce = (v & ECN_MASK) == ECN_CE;
		} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			if (v > 0)
				*seg = (uint32_t)v;
		}
	}
}

/* A receive message's room for its ECN field and, with GRO, the train's datagram size. */
union rx_ctl {
	struct cmsghdr align;
	char buf[2 * CMSG_SPACE(sizeof(int))];
};

/*
 * One recvmmsg on plane pl's socket into the buffers iov[0..want) names. A short read means
 * the socket is empty: it is read again once epoll says so. Returns what recvmmsg did.
 */
static int recv_plane(struct mrcd_backend *b, unsigned pl, struct mmsghdr *msgs,
		      struct iovec *iov, struct sockaddr_storage *from, union rx_ctl *ctl,
		      unsigned want)
{
	int r;

	for (unsigned i = 0; i < want; i++) {
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_control = ctl[i].buf;
		msgs[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
	}
	r = recvmmsg(b->udp[pl].rx_fd, msgs, want, MSG_DONTWAIT, NULL);
	if (r < (int)want)
		b->udp_ready &= ~(1u << pl);
	if (r < 0 && errno != EAGAIN)
		b->rx_errors++;
	return r;
}

/*
 * Receive with UDP GRO: a train of a path's datagrams (the peer's GSO, or the NIC's GRO)
 * comes as one message, and its datagrams are handed out in place, without a copy. What the
 * caller has no room for now goes first next time, and nothing new is read before.
 */
static int gro_rx_batch(struct mrcd_backend *b, struct mrcd_dgram *d, unsigned n)
{
	struct mrcd_gro *g = b->gro;
	unsigned got = gro_hand_out(g, d, n);

	/* what was just handed out points into the buffers a receive would fill anew: the
	 * caller takes it first, the next call receives */
	if (got || g->at < g->n)
		return (int)got;
	g->n = g->at = g->off = 0;
	for (unsigned pl = 0; pl < MRC_MAX_PLANES && got < n && g->n < GRO_MSGS; pl++) {
		struct mrcd_udp_plane *u = &b->udp[pl];
		struct mmsghdr msgs[GRO_MSGS];
		struct iovec iov[GRO_MSGS];
		struct sockaddr_storage from[GRO_MSGS];
		union rx_ctl ctl[GRO_MSGS];
		unsigned want = GRO_MSGS - g->n, base = g->n;
		int r;

		if (u->rx_fd < 0 || !(b->udp_ready >> pl & 1))
			continue;
		for (unsigned i = 0; i < want; i++)
			iov[i] = (struct iovec){ g->buf[base + i], GRO_BUF };
		r = recv_plane(b, pl, msgs, iov, from, ctl, want);
		for (int i = 0; i < r; i++) {
			unsigned k = g->n;
			bool ce = false;
			uint32_t len = msgs[i].msg_len, seg = len;

			if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
				b->rx_truncated++;
				continue;
			}
			if (!len)
				continue; /* nothing a MetaRoCE peer sends */
			read_cmsgs(&msgs[i].msg_hdr, &ce, &seg);
			/* a skipped message leaves the later ones one buffer further on */
			if (k != base + (unsigned)i)
				memmove(g->buf[k], g->buf[base + (unsigned)i], len);
			g->msg[k].len = len;
			g->msg[k].seg = seg;
			g->msg[k].plane = (uint8_t)pl;
			g->msg[k].ce = ce;
			from_sockaddr(&from[i], &g->msg[k].peer, &g->msg[k].port);
			g->n++;
		}
		got += gro_hand_out(g, d + got, n - got);
	}
	return (int)got;
}

static void udp_close(struct mrcd_backend *b)
{
	free(b->gro);
	b->gro = NULL;
	for (unsigned i = 0; i < MRC_MAX_PLANES; i++) {
		struct mrcd_udp_plane *u = &b->udp[i];

		if (u->rx_fd >= 0)
			close(u->rx_fd);
		for (unsigned k = 0; k < MRCD_SPORTS_PER_PLANE; k++)
			if (u->tx_fd[k] >= 0)
				close(u->tx_fd[k]);
		reset_plane(u);
	}
}

static int udp_open(struct mrcd_backend *b, char *err, size_t errlen)
{
	const struct mrcd_config *cfg = b->cfg;

	for (unsigned i = 0; i < MRC_MAX_PLANES; i++)
		reset_plane(&b->udp[i]);
	b->port = b->port ? b->port : cfg->port;
	b->gso = cfg->udp_gso; /* until a device says it cannot (EIO): one datagram a message */
	b->gro = cfg->udp_gso ? calloc(1, sizeof(*b->gro)) : NULL;
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		const struct mrcd_plane *p = &cfg->planes[i];
		struct mrcd_udp_plane *u = &b->udp[p->index];
		uint16_t bound;

		u->family = p->addr.family;
		/* the group's maker first binds alone: a port another daemon holds is refused as
		 * it always was, rather than shared with it (SO_REUSEPORT would let it in) */
		if (b->reuseport && !b->leader) {
			int probe = plane_socket(p, b->port, true, false, &bound, err, errlen);

			if (probe < 0)
				goto fail;
			close(probe);
			b->port = bound;
		}
		/* port 0 (tests): the first plane picks one, every other plane uses the same */
		u->rx_fd = plane_socket(p, b->port, true, b->reuseport, &bound, err, errlen);
		if (u->rx_fd < 0)
			goto fail;
		b->port = bound;
		if (b->gro) {
			int one = 1;

			if (setsockopt(u->rx_fd, SOL_UDP, UDP_GRO, &one, sizeof(one)))
				gro_off(b); /* this kernel delivers one by one: so do we, everywhere */
		}
		for (unsigned k = 0; k < MRCD_SPORTS_PER_PLANE; k++) {
			u->tx_fd[k] = plane_socket(p, 0, false, false, &u->tx_port[k], err,
						   errlen);
			if (u->tx_fd[k] < 0)
				goto fail;
		}
	}
	return 0;
fail:
	udp_close(b);
	return -1;
}

/* The pool socket a source port selects: itself if it is one of ours. */
static int tx_socket(const struct mrcd_udp_plane *u, uint16_t sport)
{
	for (unsigned k = 0; k < MRCD_SPORTS_PER_PLANE; k++)
		if (u->tx_port[k] == sport)
			return u->tx_fd[k];
	return u->tx_fd[sport % MRCD_SPORTS_PER_PLANE];
}

/* The socket's error queue (IP_RECVERR): nothing in it is acted on, it only must not fill. */
static void drain_errors(int fd)
{
	char buf[256], ctl[512];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };

	for (int i = 0; i < 64; i++) {
		m.msg_controllen = sizeof(ctl);
		if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
	}
}

/* Datagrams one sendmmsg carries at most, and segments one GSO train (the kernel's limit). */
#define TX_MSGS 128
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000 /* a UDP payload's 65,507 less room for nothing to go wrong */

/*
 * The same address and port, whatever the QP: a train may hold several QPs' datagrams. The
 * peer's kernel hands a train to one of its workers whole (as a NIC's GRO merges a flow's
 * packets, whichever QPs they are for), which passes on what is another worker's. Trains of
 * one QP each would spare that, on veth only, and cost one worker more than half its goodput
 * with two QPs sharing source ports (make bench-backend), one worker being the common case.
 */
static bool same_dest(const struct mrcd_dgram *a, const struct mrcd_dgram *b)
{
	return a->peer_port == b->peer_port && !memcmp(a->peer.addr, b->peer.addr, 16);
}

/*
 * How many datagrams from d[0] make one train: the same socket and destination, each as long
 * as the first but the last, which may be shorter (UDP GSO cuts the train into segments of
 * the first's length, and each becomes a datagram of its own on the wire).
 */
static unsigned train_length(const struct mrcd_backend *b, const struct mrcd_udp_plane *u, int fd,
			     const struct mrcd_dgram *d, unsigned n)
{
	unsigned k = 1;
	uint32_t seg = mrcd_dgram_tx_len(&d[0]);
	size_t bytes = seg;

	if (!b->gso)
		return 1;
	while (k < n && k < GSO_MAX_SEGS && d[k].plane == d[0].plane &&
	       tx_socket(u, d[k].sport) == fd && same_dest(&d[k], &d[0]) &&
	       mrcd_dgram_tx_len(&d[k]) <= seg && bytes + mrcd_dgram_tx_len(&d[k]) <= GSO_MAX_BYTES) {
		bytes += mrcd_dgram_tx_len(&d[k]);
		if (mrcd_dgram_tx_len(&d[k++]) < seg)
			break; /* a shorter one ends the train */
	}
	return k;
}

/* A datagram's pieces into iov (its headers, then its payload where that lies, then its
 * authentication trailer); how many. */
static unsigned gather(const struct mrcd_dgram *d, struct iovec *iov)
{
	iov[0] = (struct iovec){ d->data, d->len };
	if (!d->payload || !d->payload_len)
		return 1;
	iov[1] = (struct iovec){ (void *)d->payload, d->payload_len };
	if (!d->trailer_len)
		return 2;
	iov[2] = (struct iovec){ (void *)d->trailer, d->trailer_len };
	return 3;
}

static int udp_tx_batch(struct mrcd_backend *b, const struct mrcd_dgram *d, unsigned n)
{
	struct mmsghdr msgs[TX_MSGS];
	struct iovec iov[3 * TX_MSGS]; /* three pieces a datagram at most */
	struct sockaddr_storage to[TX_MSGS];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(uint16_t))];
	} seg[TX_MSGS];
	unsigned segs[TX_MSGS];
	unsigned done = 0;

	/* a socket's run of datagrams goes out in one sendmmsg, its trains each one message */
	while (done < n) {
		const struct mrcd_udp_plane *u;
		unsigned m = 0, at = done, went = 0;
		int fd, sent;

		if (d[done].plane >= MRC_MAX_PLANES || b->udp[d[done].plane].rx_fd < 0) {
			b->tx_errors++;
			done++;
			continue;
		}
		u = &b->udp[d[done].plane];
		fd = tx_socket(u, d[done].sport);
		while (at < n && at - done < TX_MSGS && d[at].plane == d[done].plane &&
		       tx_socket(u, d[at].sport) == fd) {
			unsigned room = TX_MSGS - (at - done);
			unsigned k = train_length(b, u, fd, &d[at], n - at < room ? n - at : room);
			struct iovec *v = &iov[3 * (at - done)];
			size_t pieces = 0;

			memset(&msgs[m], 0, sizeof(msgs[m]));
			msgs[m].msg_hdr.msg_name = &to[m];
			msgs[m].msg_hdr.msg_namelen = to_sockaddr(&d[at].peer, d[at].peer_port, &to[m]);
			/* the train's datagrams lie apart in the core's slots, their payloads in
			 * the application's memory: gathered */
			for (unsigned x = 0; x < k; x++)
				pieces += gather(&d[at + x], v + pieces);
			msgs[m].msg_hdr.msg_iov = v;
			msgs[m].msg_hdr.msg_iovlen = pieces;
			if (k > 1) {
				struct cmsghdr *c;

				msgs[m].msg_hdr.msg_control = seg[m].buf;
				msgs[m].msg_hdr.msg_controllen = sizeof(seg[m].buf);
				c = CMSG_FIRSTHDR(&msgs[m].msg_hdr);
				c->cmsg_level = SOL_UDP;
				c->cmsg_type = UDP_SEGMENT;
				c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
				*(uint16_t *)CMSG_DATA(c) = (uint16_t)mrcd_dgram_tx_len(&d[at]);
			}
			segs[m++] = k;
			at += k;
		}
		sent = sendmmsg(fd, msgs, m, MSG_DONTWAIT);
		if (sent < 0 && (errno == EAGAIN || errno == ENOBUFS))
			return (int)done; /* the queue is full: the rest waits */
		if (sent < 0 && errno == EIO && segs[0] > 1) {
			/* the device cannot checksum for GSO: one datagram a message from now on */
			b->gso = false;
			continue;
		}
		if (sent < 0) {
			/* IP_RECVERR reports an earlier ICMP error (a peer's port unreachable,
			 * a route gone) on this send, once: the message itself may be fine */
			drain_errors(fd);
			sent = sendmmsg(fd, msgs, 1, MSG_DONTWAIT);
			if (sent < 0 && (errno == EAGAIN || errno == ENOBUFS))
				return (int)done;
			if (sent < 0) {
				b->tx_errors += segs[0];
				sent = 1; /* skip what the kernel refused */
			}
		}
		for (int x = 0; x < sent; x++)
			went += segs[x];
		b->tx_messages += (unsigned)sent;
		done += went;
		if ((unsigned)sent < m)
			return (int)done;
	}
	return (int)done;
}

static int udp_rx_batch(struct mrcd_backend *b, struct mrcd_dgram *d, unsigned n)
{
	unsigned got = 0;

	if (b->gro)
		return gro_rx_batch(b, d, n);

	for (unsigned pl = 0; pl < MRC_MAX_PLANES && got < n; pl++) {
		struct mrcd_udp_plane *u = &b->udp[pl];
		struct mmsghdr msgs[RX_BATCH];
		struct iovec iov[RX_BATCH];
		struct sockaddr_storage from[RX_BATCH];
		union rx_ctl ctl[RX_BATCH];
		unsigned want = n - got < RX_BATCH ? n - got : RX_BATCH, base = got;
		int r;

		if (u->rx_fd < 0 || !(b->udp_ready >> pl & 1))
			continue;
		for (unsigned i = 0; i < want; i++)
			iov[i] = (struct iovec){ d[got + i].data, d[got + i].cap };
		r = recv_plane(b, pl, msgs, iov, from, ctl, want);
		for (int i = 0; i < r; i++) {
			struct mrcd_dgram *g = &d[got];
			uint32_t seg;

			if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
				b->rx_truncated++; /* larger than any MetaRoCE packet we accept */
				continue;
			}
			/* a skipped datagram leaves the later ones one buffer further on */
			if (base + (unsigned)i != got)
				memcpy(g->data, d[base + (unsigned)i].data, msgs[i].msg_len);
			g->len = msgs[i].msg_len;
			g->plane = (uint8_t)pl;
			from_sockaddr(&from[i], &g->peer, &g->peer_port);
			g->sport = g->peer_port;
			g->ce = false;
			g->placed = false;
			read_cmsgs(&msgs[i].msg_hdr, &g->ce, &seg);
			got++;
		}
	}
	return (int)got;
}

static unsigned udp_poll_fds(const struct mrcd_backend *b, int *fds, unsigned max)
{
	unsigned n = 0;

	for (unsigned pl = 0; pl < MRC_MAX_PLANES && n < max; pl++)
		if (b->udp[pl].rx_fd >= 0)
			fds[n++] = b->udp[pl].rx_fd;
	return n;
}

void mrcd_backend_udp_fd_ready(struct mrcd_backend *b, int fd)
{
	for (unsigned pl = 0; pl < MRC_MAX_PLANES; pl++)
		if (b->udp[pl].rx_fd == fd && fd >= 0)
			b->udp_ready |= 1u << pl;
}

unsigned mrcd_backend_sports(const struct mrcd_backend *b, uint8_t plane, uint16_t *ports,
			     unsigned max)
{
	unsigned n = 0;

	if (plane >= MRC_MAX_PLANES || b->udp[plane].rx_fd < 0)
		return 0;
	for (unsigned k = 0; k < MRCD_SPORTS_PER_PLANE && n < max; k++)
		ports[n++] = b->udp[plane].tx_port[k];
	return n;
}

const struct mrcd_backend_ops mrcd_backend_udp = {
	.name = "udp",
	.open = udp_open,
	.tx_batch = udp_tx_batch,
	.rx_batch = udp_rx_batch,
	.poll_fds = udp_poll_fds,
	.fd_ready = mrcd_backend_udp_fd_ready,
	.close = udp_close,
};
