/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's end of the control socket (lib/include/metaroce/ctl.h). The socket is created
 * with mode 0660: its group decides who may use the daemon. A stale socket left by a daemon
 * that died is replaced; a live one means another daemon owns the path, and that is an error.
 *
 * One request per packet, checked, then handed to its handler by type (one table): the
 * library's requests go to the core, with the descriptors that came along kept here for the
 * core's ops to take by index; inspection and operator requests are answered from the core's
 * reports and the backend.
 */
#include "io/control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <metaroce/cm.h>

#include "io/daemon.h"
#include "io/fastpath.h"
#include "io/metrics.h"
#include "log.h"
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

static void accept_clients(struct mrcd *d, struct mrcd_watch *w, uint32_t events);

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
	d->control = (struct mrcd_watch){ .ready = accept_clients, .fd = fd };
	if (mrcd_watch(d, &d->control, false)) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		close(fd);
		d->control.fd = -1;
		return -1;
	}
	d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

/* The connection's descriptors go; what it owned goes with the core's tables. */
static void drop_client(struct mrcd *d, unsigned slot)
{
	struct mrcd_conn *cn = &d->conn[slot];

	if (d->core_up)
		mrcd_core_client_close(&d->core, slot, mrcd_now_ns()); /* closes the doorbell */
	epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, cn->sock.fd, NULL);
	close(cn->sock.fd);
	cn->sock.fd = -1;
	cn->monitor = false;
}

void mrcd_control_close(struct mrcd *d)
{
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		if (d->conn[i].sock.fd >= 0)
			drop_client(d, i);
	if (d->control.fd >= 0) {
		close(d->control.fd);
		unlink(d->cfg.control_socket);
	}
	if (d->reserve_fd >= 0)
		close(d->reserve_fd);
	d->control.fd = d->reserve_fd = -1;
}

/* Why, before the close, so the client's first request fails with that errno rather than
 * a bare reset (MRC_CTL_REFUSED). What the client sent already is read first: a socket
 * closed with unread data resets its peer, whose reads then fail before they reach the
 * message. */
static void tell_refused(int fd, int status)
{
	struct mrc_ctl_hdr h = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				 .type = MRC_CTL_REFUSED, .status = status };
	uint8_t sink[64];

	(void)!send(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
	/* descriptors passed with it are closed by the kernel with the socket */
	for (int i = 0; i < 8 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT | MSG_TRUNC) >= 0; i++)
		;
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
	fd = accept4(d->control.fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		tell_refused(fd, -EMFILE);
		close(fd);
	}
	d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	mrcd_log(LOG_WARNING, "control: out of file descriptors, refusing a client");
}

static void serve(struct mrcd *d, struct mrcd_watch *w, uint32_t events);

static void accept_clients(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	(void)events;
	for (;;) {
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot;
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				refuse_one(d);
			return;
		}
		/* who is asking decides nothing yet (the socket's mode does), but it is what the
		 * logs and `metaroce-ctl qp show` name a client by */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			cred.pid = -1;
			cred.uid = (uid_t)-1;
		}
		slot = mrcd_core_client_open(&d->core, cred.pid, cred.uid, mrcd_now_ns());
		if (slot >= 0) {
			d->conn[slot].sock = (struct mrcd_watch){ .ready = serve, .fd = fd,
								 .slot = (unsigned)slot };
			if (mrcd_watch(d, &d->conn[slot].sock, false)) {
				mrcd_core_client_close(&d->core, (unsigned)slot, mrcd_now_ns());
				d->conn[slot].sock.fd = -1;
				slot = -1;
			}
		}
		if (slot < 0) {
			mrcd_log(LOG_WARNING, "control: refusing a client (pid %d uid %u): %s",
				 (int)cred.pid, (unsigned)cred.uid,
				 slot == -ENOSPC ? "too many clients"
				 : slot == -EUSERS ? "its user holds user_max_connections"
						   : strerror(slot < 0 ? -slot : errno));
			tell_refused(fd, slot == -ENOSPC || slot == -EUSERS ? slot : -EAGAIN);
			close(fd);
			continue;
		}
		mrcd_log(LOG_DEBUG, "control: client pid %d uid %u", cred.pid, cred.uid);
	}
}

/* --- requests -------------------------------------------------------------------------------- */

/* Operator actions change the host for every client: root, or the daemon's own user. */
static bool admin_allowed(const struct mrcd *d, unsigned slot)
{
	uint32_t uid = mrcd_core_client(&d->core, slot)->uid;

	return uid == 0 || uid == (uint32_t)geteuid();
}

void mrcd_control_status(const struct mrcd *d, struct mrc_ctl_status *s)
{
	memset(s, 0, sizeof(*s));
	mrcd_core_status(&d->core, s);
	s->uptime_ns = mrcd_now_ns() - d->started_ns;
	s->port = d->backend.port;
	snprintf(s->backend, sizeof(s->backend), "%s", d->backend.ops->name);
	snprintf(s->backend_note, sizeof(s->backend_note), "%s", d->backend_note);
}

static void xdp_reply(const struct mrcd *d, struct mrc_ctl_xdp *x)
{
	const struct mrcd_fastpath *fp = d->backend.fast;
	uint64_t o[MRC_XDP_OUTCOMES];
	struct mrcd_xsk_counts xsk;

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
	mrcd_workers_xsk(d, &xsk);
	x->xsk_sockets = xsk.sockets;
	x->xsk_rx = xsk.rx;
	x->xsk_tx = xsk.tx;
	x->xsk_tx_unresolved = xsk.tx_unresolved;
	x->xsk_rx_bad = xsk.rx_bad;
}

/* One request being answered: what came, and room for what goes back. */
struct call {
	unsigned slot;
	const struct mrc_ctl_hdr *req;
	const uint8_t *payload;
	uint8_t *out;
	size_t cap, len;
};

typedef int (*handler_fn)(struct mrcd *d, struct call *k);

static int do_status(struct mrcd *d, struct call *k)
{
	if (k->cap < sizeof(struct mrc_ctl_status))
		return -ENOSPC;
	mrcd_control_status(d, (struct mrc_ctl_status *)k->out);
	k->len = sizeof(struct mrc_ctl_status);
	return 0;
}

static int do_workers(struct mrcd *d, struct call *k)
{
	struct mrc_ctl_worker *out = (struct mrc_ctl_worker *)k->out;

	if (k->cap < d->n_workers * sizeof(*out))
		return -ENOSPC;
	for (unsigned i = 0; i < d->n_workers; i++)
		mrcd_worker_report(d, i, &out[i]);
	k->len = d->n_workers * sizeof(*out);
	return 0;
}

/* NULL for an operator, who sees everything; else the uid whose objects the caller sees. */
static const uint32_t *viewer(const struct mrcd *d, unsigned slot)
{
	return admin_allowed(d, slot) ? NULL : &mrcd_core_client(&d->core, slot)->uid;
}

static int do_peers(struct mrcd *d, struct call *k)
{
	k->len = mrcd_core_peers_reply(&d->core, viewer(d, k->slot), k->out, k->cap);
	return 0;
}

static int do_users(struct mrcd *d, struct call *k)
{
	k->len = mrcd_core_users_reply(&d->core, viewer(d, k->slot), k->out, k->cap);
	return 0;
}

static int do_qps(struct mrcd *d, struct call *k)
{
	k->len = mrcd_core_qps_reply(&d->core, viewer(d, k->slot), k->out, k->cap);
	return 0;
}

static int do_cm_ids(struct mrcd *d, struct call *k)
{
	k->len = mrcd_core_cm_ids_reply(&d->core, viewer(d, k->slot), k->out, k->cap);
	return 0;
}

static int do_paths(struct mrcd *d, struct call *k)
{
	struct mrc_ctl_handle one = { 0, 0 };

	if (k->req->len)
		memcpy(&one, k->payload, sizeof(one));
	k->len = mrcd_core_paths_reply(&d->core, viewer(d, k->slot), k->req->len ? &one.handle : NULL,
				       k->out, k->cap, mrcd_now_ns());
	return 0;
}

static int do_metrics(struct mrcd *d, struct call *k)
{
	k->len = mrcd_metrics_render(d, (char *)k->out, k->cap);
	return 0;
}

static int do_config(struct mrcd *d, struct call *k)
{
	k->len = mrcd_config_render(&d->cfg, (char *)k->out, k->cap);
	return 0;
}

static int do_monitor(struct mrcd *d, struct call *k)
{
	d->conn[k->slot].monitor = true;
	return 0;
}

static int do_drain(struct mrcd *d, struct call *k)
{
	struct mrc_ctl_drain dr;

	memcpy(&dr, k->payload, sizeof(dr));
	return mrcd_core_drain_plane(&d->core, dr.plane, dr.drained);
}

static int do_reload(struct mrcd *d, struct call *k)
{
	(void)k;
	return mrcd_reload(d);
}

static int do_stat_reset(struct mrcd *d, struct call *k)
{
	(void)k;
	/* what the control replies show starts from zero; the exported counters go on, so
	 * monitoring never sees them fall */
	mrcd_core_stat_reset(&d->core);
	return 0;
}

static int do_xdp(struct mrcd *d, struct call *k)
{
	if (!d->backend.fast)
		return -EOPNOTSUPP;
	if (k->cap < sizeof(struct mrc_ctl_xdp))
		return -ENOSPC;
	xdp_reply(d, (struct mrc_ctl_xdp *)k->out);
	k->len = sizeof(struct mrc_ctl_xdp);
	return 0;
}

/* The library's requests: the core's, with the descriptors that came kept in d->req. */
static int do_library(struct mrcd *d, struct call *k)
{
	int err = mrcd_core_request(&d->core, k->slot, k->req, k->payload, d->req.n_in, k->out,
				    k->cap, &k->len, mrcd_now_ns());

	if (!err && k->req->type == MRC_CTL_HELLO)
		return do_status(d, k); /* HELLO is answered with the status */
	return err;
}

/*
 * Per request type: its handler, the payload it takes (exactly `len`, or any length for the
 * library's requests, whose handlers check the shape), whether a second size is allowed
 * (PATHS: none or one handle), and whether only an operator may ask.
 */
static const struct {
	handler_fn fn;
	int32_t len;	  /* -1: the handler checks it */
	int32_t or_len;	  /* another length also taken, -1: none */
	bool admin;
} handlers[MRC_CTL_TYPE_MAX + 1] = {
	[MRC_CTL_STATUS] = { do_status, 0, -1, false },
	[MRC_CTL_PEERS] = { do_peers, 0, -1, false },
	[MRC_CTL_QPS] = { do_qps, 0, -1, false },
	[MRC_CTL_USERS] = { do_users, 0, -1, false },
	[MRC_CTL_WORKERS] = { do_workers, 0, -1, false },
	[MRC_CTL_PATHS] = { do_paths, 0, sizeof(struct mrc_ctl_handle), false },
	[MRC_CTL_METRICS] = { do_metrics, 0, -1, false },
	[MRC_CTL_CONFIG] = { do_config, 0, -1, false },
	[MRC_CTL_MONITOR] = { do_monitor, 0, -1, true }, /* events name every user's QPs */
	[MRC_CTL_XDP] = { do_xdp, 0, -1, false },
	[MRC_CTL_DRAIN_PLANE] = { do_drain, sizeof(struct mrc_ctl_drain), -1, true },
	[MRC_CTL_RELOAD] = { do_reload, 0, -1, true },
	[MRC_CTL_STAT_RESET] = { do_stat_reset, 0, -1, true },
	[MRC_CTL_PAGES] = { do_library, sizeof(struct mrc_ctl_pages), -1, false },
	[MRC_CTL_HELLO] = { do_library, -1, -1, false },
	[MRC_CTL_REG_MR] = { do_library, -1, -1, false },
	[MRC_CTL_DEREG_MR] = { do_library, -1, -1, false },
	[MRC_CTL_ALLOC_MW] = { do_library, -1, -1, false },
	[MRC_CTL_DEALLOC_MW] = { do_library, -1, -1, false },
	[MRC_CTL_CREATE_CQ] = { do_library, -1, -1, false },
	[MRC_CTL_DESTROY_CQ] = { do_library, -1, -1, false },
	[MRC_CTL_CREATE_QP] = { do_library, -1, -1, false },
	[MRC_CTL_CONNECT_QP] = { do_library, -1, -1, false },
	[MRC_CTL_READY_QP] = { do_library, -1, -1, false },
	[MRC_CTL_MODIFY_QP] = { do_library, -1, -1, false },
	[MRC_CTL_CREATE_SRQ] = { do_library, -1, -1, false },
	[MRC_CTL_MODIFY_SRQ] = { do_library, -1, -1, false },
	[MRC_CTL_DESTROY_SRQ] = { do_library, -1, -1, false },
	[MRC_CTL_UD_QP] = { do_library, -1, -1, false },
	[MRC_CTL_RESOLVE] = { do_library, -1, -1, false },
	[MRC_CTL_ERROR_QP] = { do_library, -1, -1, false },
	[MRC_CTL_DESTROY_QP] = { do_library, -1, -1, false },
	[MRC_CTL_CM] = { do_library, sizeof(struct mrc_ctl_cm), -1, false },
	[MRC_CTL_CM_IDS] = { do_cm_ids, 0, -1, false },
};

int mrcd_control_check(const void *packet, size_t n, struct mrc_ctl_hdr *req)
{
	if (n < sizeof(*req) || n > MRC_CTL_MAX_MSG)
		return -EPROTO;
	memcpy(req, packet, sizeof(*req));
	if (req->magic != MRC_CTL_MAGIC || req->version != MRC_CTL_VERSION ||
	    req->len != n - sizeof(*req))
		return -EPROTO;
	if (req->type > MRC_CTL_TYPE_MAX || !handlers[req->type].fn)
		return -EOPNOTSUPP;
	if (handlers[req->type].len >= 0 && req->len != (uint32_t)handlers[req->type].len &&
	    (handlers[req->type].or_len < 0 || req->len != (uint32_t)handlers[req->type].or_len))
		return -EINVAL;
	return 0;
}

#define MAX_FDS_IN (MRC_CTL_MAX_SEGMENTS)
_Static_assert(MAX_FDS_IN <= MRC_FDPASS_MAX, "a region's memfds fit one packet");

/* Receives one packet and the descriptors that came with it; -2 when some were cut off. */
static ssize_t recv_request(int fd, uint8_t *buf, size_t cap, int *fds, unsigned *n_fds)
{
	bool lost;
	ssize_t n = mrc_recv_with_fds(fd, buf, cap, fds, MAX_FDS_IN, n_fds, &lost,
				      MSG_DONTWAIT | MSG_TRUNC);

	/* descriptors cut off by a short control buffer are lost to us: make it an error */
	return n >= 0 && lost ? -2 : n;
}

/* One request from a client: checked field by field, answered, or refused and closed. */
static void serve(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	static uint8_t in[MRC_CTL_MAX_MSG], out[MRC_CTL_MAX_MSG];
	unsigned slot = w->slot;
	struct mrc_ctl_hdr req, rep;
	struct mrcd_request_fds *rf = &d->req;
	ssize_t n;
	bool bad;

	(void)events;
	memset(rf, 0, sizeof(*rf));
	n = recv_request(w->fd, in, sizeof(in), rf->in, &rf->n_in);
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
	if (!bad)
		mrcd_core_client_heard(&d->core, slot);
	{
		struct call k = { slot, &req, in + sizeof(req), out + sizeof(rep),
				  sizeof(out) - sizeof(rep), 0 };

		if (rep.status == 0)
			rep.status = handlers[req.type].admin && !admin_allowed(d, slot)
					     ? -EPERM
					     : handlers[req.type].fn(d, &k);
		rep.len = rep.status ? 0 : (uint32_t)k.len;
	}
	/* whatever the request brought and nothing kept is closed here */
	for (unsigned i = 0; i < rf->n_in; i++)
		if (rf->in[i] >= 0)
			close(rf->in[i]);
	memcpy(out, &rep, sizeof(rep));
	mrc_send_with_fds(w->fd, out, sizeof(rep) + rep.len, rf->out,
			  rep.status ? 0 : rf->n_out, MSG_DONTWAIT | MSG_NOSIGNAL);
	for (unsigned i = 0; i < rf->n_out; i++)
		close(rf->out[i]); /* the daemon keeps its own mapping, not the fd */
	rf->n_in = rf->n_out = 0;
	if (bad) {
		mrcd_log(LOG_NOTICE, "control: malformed request from pid %d, closing the client",
			 mrcd_core_client(&d->core, slot)->pid);
		drop_client(d, slot);
	}
}

void mrcd_control_close_silent(struct mrcd *d, uint64_t now)
{
	int slot;

	while ((slot = mrcd_core_silent_client(&d->core, now)) >= 0)
		if (d->conn[slot].sock.fd >= 0)
			drop_client(d, (unsigned)slot);
}

void mrcd_control_broadcast(struct mrcd *d, const char *line)
{
	uint8_t packet[sizeof(struct mrc_ctl_hdr) + 512];
	struct mrc_ctl_hdr h = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				 .type = MRC_CTL_EVENT };
	size_t n = strlen(line);

	if (n > sizeof(packet) - sizeof(h) - 1)
		n = sizeof(packet) - sizeof(h) - 1;
	memcpy(packet + sizeof(h), line, n);
	h.len = (uint32_t)n;
	memcpy(packet, &h, sizeof(h));
	/* a monitor that does not keep up misses events; the daemon never waits for it */
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		if (d->conn[i].sock.fd >= 0 && d->conn[i].monitor)
			send(d->conn[i].sock.fd, packet, sizeof(h) + n, MSG_DONTWAIT | MSG_NOSIGNAL);
}
