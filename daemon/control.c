/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's end of the control socket (lib/include/metaroce/ctl.h). The socket is created
 * with mode 0660: its group decides who may use the daemon. A stale socket left by a daemon
 * that died is replaced; a live one means another daemon owns the path, and that is an error.
 */
#include "control.h"
#include "fastpath.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <metaroce/ctl.h>

#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "shm/fdpass.h"

static int socket_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -1;
	memcpy(sun->sun_path, path, strlen(path) + 1);
	return 0;
}

/* Makes the socket's directory (one level, as /run/metaroce under systemd's RuntimeDirectory). */
static void make_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
}

int mrcd_control_open(struct mrcd *d, char *err, size_t errlen)
{
	const char *path = d->cfg.control_socket;
	struct sockaddr_un sun;
	struct stat st;
	int fd;

	if (socket_addr(path, &sun)) {
		snprintf(err, errlen, "control socket path too long: %s", path);
		return -1;
	}
	make_parent(path);
	if (lstat(path, &st) == 0) {
		int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			close(probe);
			return -1;
		}
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			snprintf(err, errlen, "another metaroced is listening on %s", path);
			close(probe);
			return -1;
		}
		close(probe);
		unlink(path); /* left by a daemon that did not stop cleanly */
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || chmod(path, 0660) ||
	    listen(fd, 64)) {
		snprintf(err, errlen, "control socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	d->control_fd = fd;
	d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

void mrcd_control_close(struct mrcd *d)
{
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		if (d->clients.client[i].fd >= 0) {
			close(d->clients.client[i].fd);
			d->clients.client[i].fd = -1;
		}
	if (d->control_fd >= 0) {
		close(d->control_fd);
		unlink(d->cfg.control_socket);
	}
	if (d->reserve_fd >= 0)
		close(d->reserve_fd);
	d->control_fd = d->reserve_fd = -1;
}

/*
 * Out of descriptors, a pending connection keeps the listening socket readable and the loop
 * would spin on it: a descriptor kept in reserve lets the daemon accept it and close it.
 */
static void refuse_one(struct mrcd *d)
{
	int fd;

	if (d->reserve_fd >= 0) {
		close(d->reserve_fd);
		d->reserve_fd = -1;
	}
	fd = accept4(d->control_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	mrcd_log(LOG_WARNING, "control: out of file descriptors, refusing a client");
}

void mrcd_control_accept(struct mrcd *d)
{
	int fd;

	for (;;) {
		fd = accept4(d->control_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				refuse_one(d);
			return;
		}
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
		unsigned slot = MRCD_MAX_CLIENTS;

		for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
			if (d->clients.client[i].fd < 0) {
				slot = i;
				break;
			}
		if (slot == MRCD_MAX_CLIENTS || epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
			mrcd_log(LOG_WARNING, "control: refusing a client: %s",
				 slot == MRCD_MAX_CLIENTS ? "too many clients" : strerror(errno));
			close(fd);
			continue;
		}
		/* who is asking decides nothing yet (the socket's mode does), but it is what the
		 * logs and `metaroce-ctl qp show` name a client by */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			cred.pid = -1;
			cred.uid = (uid_t)-1;
		}
		d->clients.client[slot] = (struct mrcd_client){ .fd = fd, .doorbell_fd = -1,
								.pid = cred.pid, .uid = cred.uid };
		mrcd_log(LOG_DEBUG, "control: client pid %d uid %u", cred.pid, cred.uid);
	}
}

static void fill_plane(struct mrc_ctl_plane *out, uint8_t index, uint8_t family, uint16_t flags,
		       const uint8_t addr[16], const char *ifname)
{
	memset(out, 0, sizeof(*out));
	out->index = index;
	out->family = family;
	out->flags = flags;
	memcpy(out->addr, addr, 16);
	if (ifname)
		snprintf(out->ifname, sizeof(out->ifname), "%s", ifname);
}

void mrcd_control_status(const struct mrcd *d, uint8_t *buf, size_t cap, size_t *len)
{
	struct mrc_ctl_status s;
	unsigned clients = 0;

	memset(&s, 0, sizeof(s));
	s.node_id = d->peers.local.node_id;
	s.uptime_ns = mrcd_now_ns() - d->started_ns;
	/* since the last stat reset */
	s.rx_datagrams = d->stats.rx_datagrams - d->stats_base.rx_datagrams;
	s.rx_malformed = d->stats.rx_malformed - d->stats_base.rx_malformed;
	s.rx_no_qp = d->stats.rx_no_qp - d->stats_base.rx_no_qp;
	s.tx_datagrams = d->stats.tx_datagrams - d->stats_base.tx_datagrams;
	s.n_peers = d->peers.n_peers;
	s.port = d->backend.port;
	s.n_planes = d->cfg.n_planes;
	s.paths_per_plane = d->cfg.paths_per_plane;
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		clients += d->clients.client[i].library;
	s.n_clients = clients;
	s.n_qps = d->clients.n_qps;
	s.n_cqs = d->clients.n_cqs;
	s.n_mrs = d->clients.n_mrs;
	s.mapped_bytes = d->clients.mapped_bytes;
	s.max_payload = d->peers.local.max_payload;
	s.drained_planes = d->drained_planes;
	snprintf(s.backend, sizeof(s.backend), "%s", d->backend.ops->name);
	snprintf(s.backend_note, sizeof(s.backend_note), "%s", d->backend_note);
	for (unsigned i = 0; i < d->cfg.n_planes; i++)
		fill_plane(&s.planes[i], d->cfg.planes[i].index, d->cfg.planes[i].addr.family, 0,
			   d->cfg.planes[i].addr.addr, d->cfg.planes[i].ifname);
	*len = 0;
	if (cap >= sizeof(s)) {
		memcpy(buf, &s, sizeof(s));
		*len = sizeof(s);
	}
}

static size_t peers_reply(const struct mrcd *d, uint8_t *buf, size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < d->peers.n_peers && n + sizeof(struct mrc_ctl_peer) <= cap; i++) {
		const struct mrc_peer *p = &d->peers.peers[i];
		struct mrc_ctl_peer out;

		memset(&out, 0, sizeof(out));
		out.node_id = p->info.node_id;
		memcpy(out.named, p->named, 16);
		out.state = (uint8_t)p->state;
		out.port = p->info.udp_port;
		out.n_planes = p->state == MRC_PEER_KNOWN ? p->info.n_addrs : 0;
		for (unsigned k = 0; k < out.n_planes; k++)
			fill_plane(&out.planes[k], p->info.addrs[k].plane, p->info.addrs[k].family,
				   p->info.addrs[k].flags, p->info.addrs[k].addr, NULL);
		memcpy(buf + n, &out, sizeof(out));
		n += sizeof(out);
	}
	return n;
}

static void drop_client(struct mrcd *d, unsigned slot)
{
	struct mrcd_client *cl = &d->clients.client[slot];

	epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	mrcd_clients_gone(d, slot);
	cl->fd = -1;
}

static void xdp_reply(const struct mrcd_backend *b, struct mrc_ctl_xdp *x)
{
	const struct mrcd_fastpath *fp = b->fast;
	uint64_t o[MRC_XDP_OUTCOMES];

	_Static_assert(MRC_XDP_OUTCOMES <= 32, "outcomes fit the reply");
	memset(x, 0, sizeof(*x));
	x->n_ifaces = fp->n_ifaces;
	for (unsigned i = 0; i < fp->n_ifaces && i < 16; i++) {
		x->ifaces[i].ifindex = (uint32_t)fp->ifaces[i].ifindex;
		x->ifaces[i].plane = fp->ifaces[i].plane;
		x->ifaces[i].native = fp->ifaces[i].native;
		x->ifaces[i].shared = fp->ifaces[i].shared;
	}
	mrcd_fastpath_outcomes(fp, o);
	x->n_outcomes = MRC_XDP_OUTCOMES;
	memcpy(x->outcomes, o, sizeof(o));
	x->xsk_sockets = b->xsk_sockets;
	x->xsk_rx = b->xsk_rx;
	x->xsk_tx = b->xsk_tx;
	x->xsk_tx_unresolved = b->xsk_tx_unresolved;
	x->xsk_rx_bad = b->xsk_rx_bad;
}

/* The payload a request type must carry: exactly `fixed` bytes, or any length when variable. */
static int request_shape(uint16_t type, uint32_t len)
{
	switch (type) {
	case MRC_CTL_STATUS:
	case MRC_CTL_PEERS:
	case MRC_CTL_QPS:
	case MRC_CTL_METRICS:
	case MRC_CTL_RELOAD:
	case MRC_CTL_MONITOR:
	case MRC_CTL_CONFIG:
	case MRC_CTL_STAT_RESET:
	case MRC_CTL_XDP:
		return len == 0 ? 0 : -EINVAL;
	case MRC_CTL_DRAIN_PLANE:
		return len == sizeof(struct mrc_ctl_drain) ? 0 : -EINVAL;
	case MRC_CTL_PATHS:
		return len == 0 || len == sizeof(struct mrc_ctl_handle) ? 0 : -EINVAL;
	case MRC_CTL_PAGES:
		return len == sizeof(struct mrc_ctl_pages) ? 0 : -EINVAL;
	case MRC_CTL_HELLO:
	case MRC_CTL_REG_MR:
	case MRC_CTL_DEREG_MR:
	case MRC_CTL_CREATE_CQ:
	case MRC_CTL_DESTROY_CQ:
	case MRC_CTL_CREATE_QP:
	case MRC_CTL_CONNECT_QP:
	case MRC_CTL_READY_QP:
	case MRC_CTL_ERROR_QP:
	case MRC_CTL_DESTROY_QP:
		return 0; /* the handler checks the payload's exact shape */
	default:
		return -EOPNOTSUPP;
	}
}

int mrcd_control_check(const void *packet, size_t n, struct mrc_ctl_hdr *req)
{
	if (n < sizeof(*req) || n > MRC_CTL_MAX_MSG)
		return -EPROTO;
	memcpy(req, packet, sizeof(*req));
	if (req->magic != MRC_CTL_MAGIC || req->version != MRC_CTL_VERSION ||
	    req->len != n - sizeof(*req))
		return -EPROTO;
	return request_shape(req->type, req->len);
}

#define MAX_FDS_IN (MRC_CTL_MAX_SEGMENTS)
_Static_assert(MAX_FDS_IN <= MRC_FDPASS_MAX, "a region's memfds fit one packet");
#define MAX_FDS_OUT 2

/* Receives one packet and the descriptors that came with it; -2 when some were cut off. */
static ssize_t recv_request(int fd, uint8_t *buf, size_t cap, int *fds, unsigned *n_fds)
{
	bool lost;
	ssize_t n = mrc_recv_with_fds(fd, buf, cap, fds, MAX_FDS_IN, n_fds, &lost,
				      MSG_DONTWAIT | MSG_TRUNC);

	/* descriptors cut off by a short control buffer are lost to us: make it an error */
	return n >= 0 && lost ? -2 : n;
}

/* Operator actions change the host for every client: root, or the daemon's own user. */
static bool admin_allowed(const struct mrcd *d, unsigned slot)
{
	uid_t uid = d->clients.client[slot].uid;

	return uid == 0 || uid == geteuid();
}

/* One request from a client: checked field by field, answered, or refused and closed. */
static void serve(struct mrcd *d, unsigned slot)
{
	static uint8_t in[MRC_CTL_MAX_MSG], out[MRC_CTL_MAX_MSG];
	struct mrc_ctl_hdr req, rep;
	int fds[MAX_FDS_IN], out_fds[MAX_FDS_OUT] = { -1, -1 };
	unsigned n_fds = 0, n_out_fds = 0;
	ssize_t n = recv_request(d->clients.client[slot].fd, in, sizeof(in), fds, &n_fds);
	size_t len = 0;
	bool bad = false;

	if (n == 0 || (n == -1 && errno != EAGAIN)) {
		drop_client(d, slot);
		return;
	}
	if (n == -1)
		return;
	memset(&rep, 0, sizeof(rep));
	rep.magic = MRC_CTL_MAGIC;
	rep.version = MRC_CTL_VERSION;
	rep.status = n < 0 ? -EPROTO : mrcd_control_check(in, (size_t)n, &req);
	if (n >= (ssize_t)sizeof(req)) {
		rep.type = req.type;
		rep.seq = req.seq;
	}
	bad = rep.status == -EPROTO;
	if (rep.status == 0) {
		switch (req.type) {
		case MRC_CTL_STATUS:
			mrcd_control_status(d, out + sizeof(rep), sizeof(out) - sizeof(rep), &len);
			break;
		case MRC_CTL_PEERS:
			len = peers_reply(d, out + sizeof(rep), sizeof(out) - sizeof(rep));
			break;
		case MRC_CTL_QPS:
			len = mrcd_clients_qps_reply(d, out + sizeof(rep), sizeof(out) - sizeof(rep));
			break;
		case MRC_CTL_METRICS:
			len = mrcd_metrics_render(d, (char *)out + sizeof(rep),
						  sizeof(out) - sizeof(rep));
			break;
		case MRC_CTL_DRAIN_PLANE: {
			struct mrc_ctl_drain dr;

			memcpy(&dr, in + sizeof(req), sizeof(dr));
			rep.status = admin_allowed(d, slot) ? mrcd_drain_plane(d, dr.plane,
									      dr.drained)
							    : -EPERM;
			break;
		}
		case MRC_CTL_RELOAD:
			rep.status = admin_allowed(d, slot) ? mrcd_reload(d) : -EPERM;
			break;
		case MRC_CTL_MONITOR:
			d->clients.client[slot].monitor = true;
			break;
		case MRC_CTL_CONFIG:
			len = mrcd_config_render(&d->cfg, (char *)out + sizeof(rep),
						 sizeof(out) - sizeof(rep));
			break;
		case MRC_CTL_STAT_RESET:
			if (!admin_allowed(d, slot)) {
				rep.status = -EPERM;
				break;
			}
			/* what the control replies show starts from zero; the exported counters
			 * go on, so monitoring never sees them fall */
			d->stats_base = d->stats;
			mrcd_clients_reset_counters(d);
			mrcd_event(d, LOG_NOTICE, "counters reset by an operator");
			break;
		case MRC_CTL_XDP:
			if (!d->backend.fast) {
				rep.status = -EOPNOTSUPP;
				break;
			}
		{
			struct mrc_ctl_xdp x;

			xdp_reply(&d->backend, &x);
			memcpy(out + sizeof(rep), &x, sizeof(x));
			len = sizeof(x);
			break;
		}
		case MRC_CTL_PATHS: {
			struct mrc_ctl_handle one = { 0, 0 };

			if (req.len)
				memcpy(&one, in + sizeof(req), sizeof(one));
			len = mrcd_clients_paths_reply(d, req.len ? &one.handle : NULL,
						       out + sizeof(rep), sizeof(out) - sizeof(rep));
			break;
		}
		default:
			rep.status = mrcd_clients_request(d, slot, &req, in + sizeof(req), fds,
							  n_fds, out + sizeof(rep),
							  sizeof(out) - sizeof(rep), &len, out_fds,
							  &n_out_fds);
			break;
		}
	}
	/* whatever the request brought and nothing kept is closed here */
	for (unsigned i = 0; i < n_fds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (rep.status)
		len = 0;
	rep.len = (uint32_t)len;
	memcpy(out, &rep, sizeof(rep));
	mrc_send_with_fds(d->clients.client[slot].fd, out, sizeof(rep) + len, out_fds,
			  rep.status ? 0 : n_out_fds, MSG_DONTWAIT | MSG_NOSIGNAL);
	for (unsigned i = 0; i < n_out_fds; i++)
		close(out_fds[i]); /* the daemon keeps its own mapping, not the fd */
	if (bad) {
		mrcd_log(LOG_NOTICE, "control: malformed request from pid %d, closing the client",
			 d->clients.client[slot].pid);
		drop_client(d, slot);
	}
}

void mrcd_event(struct mrcd *d, int priority, const char *fmt, ...)
{
	uint8_t packet[sizeof(struct mrc_ctl_hdr) + 512];
	struct mrc_ctl_hdr h = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				 .type = MRC_CTL_EVENT };
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf((char *)packet + sizeof(h), sizeof(packet) - sizeof(h), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(packet) - sizeof(h))
		n = (int)(sizeof(packet) - sizeof(h) - 1);
	mrcd_log(priority, "%s", (char *)packet + sizeof(h));
	h.len = (uint32_t)n;
	memcpy(packet, &h, sizeof(h));
	/* a monitor that does not keep up misses events; the daemon never waits for it */
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		if (d->clients.client[i].fd >= 0 && d->clients.client[i].monitor)
			send(d->clients.client[i].fd, packet, sizeof(h) + (size_t)n,
			     MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool mrcd_control_event(struct mrcd *d, int fd)
{
	if (fd == d->control_fd) {
		mrcd_control_accept(d);
		return true;
	}
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++) {
		if (d->clients.client[i].fd == fd) {
			serve(d, i);
			return true;
		}
		if (d->clients.client[i].doorbell_fd == fd)
			return true; /* edge-triggered, never read: the pump reads the rings */
	}
	return false;
}
