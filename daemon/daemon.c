/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "daemon.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/drop_reasons.h>

#include "control.h"
#include "fastpath.h"
#include "log.h"
#include "metrics.h"

#define RX_BATCH 32
#define PEER_CAP 1024

uint64_t mrcd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


static const char *addr_str(const uint8_t addr[16], char *buf, size_t len)
{
	if (mrc_addr_is_v4(addr))
		inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, addr, buf, (socklen_t)len);
	return buf;
}

/* IP and UDP headers before the MetaRoCE header, on the largest header of any plane. */
static uint16_t max_payload(const struct mrcd_config *cfg)
{
	unsigned ip = 20;

	for (unsigned i = 0; i < cfg->n_planes; i++)
		if (cfg->planes[i].addr.family == MRC_AF_INET6)
			ip = 40;
	return (uint16_t)(cfg->mtu - ip - 8 - sizeof(struct mrc_hdr) - sizeof(struct mrc_data_ext));
}

static void node_info(const struct mrcd *d, uint64_t node_id, struct mrc_node_info *info)
{
	memset(info, 0, sizeof(*info));
	info->node_id = node_id;
	info->udp_port = d->backend.port;
	info->max_payload = max_payload(&d->cfg);
	info->n_addrs = d->cfg.n_planes;
	for (unsigned i = 0; i < d->cfg.n_planes; i++) {
		info->addrs[i].family = d->cfg.planes[i].addr.family;
		info->addrs[i].plane = d->cfg.planes[i].index;
		memcpy(info->addrs[i].addr, d->cfg.planes[i].addr.addr, 16);
	}
}

static bool admit(void *user, const uint8_t addr[16])
{
	struct mrcd *d = user;

	return mrcd_config_admits(&d->cfg, addr);
}

static void peer_event(void *user, unsigned idx, enum mrc_peer_event ev, uint64_t old_node)
{
	struct mrcd *d = user;
	const struct mrc_peer *p = &d->peers.peers[idx];
	char a[INET6_ADDRSTRLEN], planes[512] = "";
	size_t off = 0;

	for (unsigned i = 0; i < p->info.n_addrs && off < sizeof(planes); i++) {
		char pa[INET6_ADDRSTRLEN];
		int n = snprintf(planes + off, sizeof(planes) - off, "%s%u=%s%s", i ? " " : "",
				 p->info.addrs[i].plane, addr_str(p->info.addrs[i].addr, pa, sizeof(pa)),
				 p->info.addrs[i].flags & MRC_PLANE_F_DRAINED ? "(drained)" : "");

		if (n > 0)
			off += (size_t)n;
	}
	addr_str(p->named, a, sizeof(a));
	switch (ev) {
	case MRC_PEER_EV_DISCOVERED:
		mrcd_event(d, LOG_INFO, "peer %s discovered: node %016llx, port %u, planes %s", a,
			   (unsigned long long)p->info.node_id, p->info.udp_port, planes);
		break;
	case MRC_PEER_EV_CHANGED:
		mrcd_event(d, LOG_INFO, "peer %s changed: planes %s", a, planes);
		break;
	case MRC_PEER_EV_RESTARTED:
		/* its QPs must fail: mrcd_clients_peer_event below */
		mrcd_event(d, LOG_NOTICE, "peer %s restarted: node %016llx replaces %016llx", a,
			   (unsigned long long)p->info.node_id, (unsigned long long)old_node);
		break;
	case MRC_PEER_EV_UNREACHABLE:
		mrcd_event(d, LOG_WARNING, "peer %s did not answer discovery", a);
		break;
	}
	mrcd_clients_peer_event(d, idx, (int)ev);
}

/* Every client may hold completion-channel sockets here: take the hard limit, not 1024. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static int watch(struct mrcd *d, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
}

int mrcd_epoll_watch(struct mrcd *d, int fd)
{
	return watch(d, fd, EPOLLIN);
}

/*
 * A client's doorbell eventfd: edge-triggered, so every write wakes the loop and the daemon
 * never reads it. A read could block: the client shares the file and can clear O_NONBLOCK,
 * then empty the counter between our wakeup and our read.
 */
int mrcd_epoll_watch_doorbell(struct mrcd *d, int fd)
{
	return watch(d, fd, EPOLLIN | EPOLLET);
}

static int add_fd(struct mrcd *d, int fd, char *err, size_t errlen)
{
	if (mrcd_epoll_watch(d, fd)) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * backend = xdp must attach or the start fails; auto takes xdp when it attaches and otherwise
 * runs udp, with the reason in the log and in status; udp is udp.
 */
static int open_backend(struct mrcd *d, char *err, size_t errlen)
{
	char why[320];

	d->backend.cfg = &d->cfg;
	d->backend_note[0] = '\0';
	if (d->cfg.backend != MRCD_BACKEND_UDP) {
		d->backend.ops = &mrcd_backend_xdp;
		if (!d->backend.ops->open(&d->backend, why, sizeof(why))) {
			snprintf(d->backend_note, sizeof(d->backend_note), "%s",
				 d->backend.fast->note);
			return 0;
		}
		if (d->cfg.backend == MRCD_BACKEND_XDP) {
			snprintf(err, errlen, "backend xdp: %s", why);
			return -1;
		}
		mrcd_log(LOG_NOTICE, "backend auto: xdp unavailable (%s); using udp", why);
		snprintf(d->backend_note, sizeof(d->backend_note), "auto: xdp failed: %.45s", why);
	}
	d->backend.ops = &mrcd_backend_udp;
	return d->backend.ops->open(&d->backend, err, errlen);
}

int mrcd_start(struct mrcd *d, const struct mrcd_config *cfg, const char *config_path,
	       char *err, size_t errlen)
{
	static const struct mrc_peer_callbacks peer_cb = { admit, peer_event };
	struct mrc_node_info info;
	uint64_t node_id, request_seed;
	sigset_t mask;
	static int fds[MRCD_BACKEND_MAX_FDS];
	unsigned n;

	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	d->config_path = config_path;
	d->epoll_fd = d->signal_fd = d->control_fd = d->reserve_fd = d->metrics_fd = -1;
	for (unsigned i = 0; i < MRCD_MAX_HTTP; i++)
		d->metrics_conn[i] = -1;
	raise_fd_limit();
	d->started_ns = mrcd_now_ns();
	if (mrcd_config_check(&d->cfg, err, errlen))
		return -1;
	if (open_backend(d, err, errlen))
		return -1;
	/* the request-id seed is drawn apart from the node id, which every DISCOVER carries */
	if (getrandom(&node_id, sizeof(node_id), 0) != sizeof(node_id) ||
	    getrandom(&request_seed, sizeof(request_seed), 0) != sizeof(request_seed)) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		goto fail_backend;
	}
	node_info(d, node_id, &info);
	if (mrc_peer_table_init(&d->peers, &info, PEER_CAP, &peer_cb, d, request_seed)) {
		snprintf(err, errlen, "out of memory for the peer table");
		goto fail_backend;
	}
	if (mrcd_clients_init(d)) {
		snprintf(err, errlen, "out of memory for the client tables");
		mrc_peer_table_fini(&d->peers);
		goto fail_backend;
	}
	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->epoll_fd < 0 || d->signal_fd < 0) {
		snprintf(err, errlen, "epoll/signalfd: %s", strerror(errno));
		goto fail_all;
	}
	n = d->backend.ops->poll_fds(&d->backend, fds, MRCD_BACKEND_MAX_FDS);
	for (unsigned i = 0; i < n; i++)
		if (add_fd(d, fds[i], err, errlen))
			goto fail_all;
	if (add_fd(d, d->signal_fd, err, errlen))
		goto fail_all;
	if (mrcd_control_open(d, err, errlen) || add_fd(d, d->control_fd, err, errlen))
		goto fail_all;
	if (mrcd_metrics_open(d, err, errlen))
		goto fail_all;
	d->systemd = getenv("NOTIFY_SOCKET") != NULL;
	if (d->systemd && sd_watchdog_enabled(0, &d->watchdog_usec) <= 0)
		d->watchdog_usec = 0;
	mrcd_log(LOG_INFO, "node %016llx: backend %s%s%s%s, port %u, %u plane%s, max payload %u",
		 (unsigned long long)node_id, d->backend.ops->name, d->backend_note[0] ? " (" : "",
		 d->backend_note, d->backend_note[0] ? ")" : "", d->backend.port, d->cfg.n_planes,
		 d->cfg.n_planes == 1 ? "" : "s", info.max_payload);
	return 0;

fail_all:
	mrcd_metrics_close(d);
	mrcd_control_close(d);
	mrcd_clients_fini(d);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->epoll_fd >= 0)
		close(d->epoll_fd);
	mrc_peer_table_fini(&d->peers);
fail_backend:
	d->backend.ops->close(&d->backend);
	return -1;
}

void mrcd_stop(struct mrcd *d)
{
	mrcd_metrics_close(d);
	mrcd_control_close(d);
	mrcd_clients_fini(d);
	close(d->signal_fd);
	close(d->epoll_fd);
	mrc_peer_table_fini(&d->peers);
	d->backend.ops->close(&d->backend);
}

static const struct mrcd_plane *plane_for(const struct mrcd_config *cfg, const uint8_t addr[16])
{
	/* the plane whose subnet (/24, /64) holds the address; else the first */
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		const struct mrcd_addr *a = &cfg->planes[i].addr;
		unsigned bytes = a->family == MRC_AF_INET ? 15 : 8;

		if (!memcmp(a->addr, addr, bytes))
			return &cfg->planes[i];
	}
	return &cfg->planes[0];
}

int mrcd_discover(struct mrcd *d, const struct mrcd_addr *addr)
{
	const struct mrcd_plane *p = plane_for(&d->cfg, addr->addr);

	return mrc_peer_table_lookup(&d->peers, addr->addr, p->index, d->cfg.port,
				     mrcd_now_ns()) < 0
		       ? -1
		       : 0;
}

static void send_daemon_packets(struct mrcd *d, uint64_t now)
{
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	size_t len;

	while (mrc_peer_table_send(&d->peers, buf, sizeof(buf), &dest, now, &len)) {
		struct mrcd_dgram g = { .data = buf, .len = (uint32_t)len, .plane = dest.plane,
					.peer_port = dest.port };
		uint16_t sports[1] = { 0 };

		memcpy(g.peer.addr, dest.addr, 16);
		g.peer.family = mrc_addr_family(dest.addr);
		mrcd_backend_sports(&d->backend, dest.plane, sports, 1);
		g.sport = sports[0];
		if (d->backend.ops->tx_batch(&d->backend, &g, 1) == 1)
			d->stats.tx_datagrams++;
	}
}

static void receive(struct mrcd *d, uint64_t now)
{
	static uint8_t bufs[RX_BATCH][MRC_WIRE_MAX_PACKET + 1];
	struct mrcd_dgram g[RX_BATCH];
	int n;

	for (unsigned i = 0; i < RX_BATCH; i++) {
		g[i].data = bufs[i];
		g[i].cap = sizeof(bufs[i]);
	}
	while ((n = d->backend.ops->rx_batch(&d->backend, g, RX_BATCH)) > 0) {
		for (int i = 0; i < n; i++) {
			struct mrc_packet pkt;

			d->stats.rx_datagrams++;
			if ((g[i].placed ? mrc_decode_placed(g[i].data, g[i].len, &pkt)
					 : mrc_decode(g[i].data, g[i].len, &pkt)) != MRC_WIRE_OK) {
				d->stats.rx_malformed++; /* never answered */
				continue;
			}
			if (pkt.dst_qpn != MRC_QPN_DAEMON) {
				if (!mrcd_clients_recv(d, &pkt, &g[i], now))
					d->stats.rx_no_qp++; /* dropped unanswered */
				continue;
			}
			if (mrc_peer_table_recv(&d->peers, &pkt, g[i].peer.addr, g[i].peer_port,
						g[i].plane, now) != MRC_DROP_NONE)
				d->stats.rx_daemon_refused++;
		}
	}
}

int mrcd_drain_plane(struct mrcd *d, unsigned plane, bool drained)
{
	struct mrc_node_info info = d->peers.local;
	bool known = false;

	for (unsigned i = 0; i < d->cfg.n_planes; i++)
		known |= d->cfg.planes[i].index == plane;
	if (!known)
		return -ENOENT;
	if (drained)
		d->drained_planes |= (uint16_t)(1u << plane);
	else
		d->drained_planes &= (uint16_t)~(1u << plane);
	/* our QPs stop sending there; the peers hear it and stop sending to us there */
	mrcd_clients_drain_plane(d);
	for (unsigned i = 0; i < info.n_addrs; i++)
		if (info.addrs[i].plane == plane)
			info.addrs[i].flags = drained ? info.addrs[i].flags | MRC_PLANE_F_DRAINED
						      : info.addrs[i].flags & ~MRC_PLANE_F_DRAINED;
	mrc_peer_table_set_local(&d->peers, &info);
	mrcd_event(d, LOG_NOTICE, "plane %u %s by an operator", plane,
		   drained ? "drained" : "restored");
	return 0;
}

static int reload(struct mrcd *d)
{
	struct mrcd_config next = d->cfg;
	char err[512];

	if (!d->config_path) {
		mrcd_log(LOG_INFO, "reload: no configuration file, nothing to do");
		return 0;
	}
	/* only what can change at run time: who may discover us; planes and ports need a
	 * restart */
	mrcd_config_default(&next);
	if (mrcd_config_load(&next, d->config_path, err, sizeof(err)) ||
	    mrcd_config_check(&next, err, sizeof(err))) {
		mrcd_log(LOG_ERR, "reload failed, keeping the running configuration: %s", err);
		return -EINVAL;
	}
	d->cfg.n_prefixes = next.n_prefixes;
	memcpy(d->cfg.prefixes, next.prefixes, sizeof(next.prefixes));
	d->cfg.rx_capacity_bps = next.rx_capacity_bps;
	d->clients.rate.capacity_kbps = next.rx_capacity_bps / 1000;
	d->clients.rate.stale = true; /* recompute the shares at the next hint */
	mrcd_log(LOG_INFO, "reloaded %s: %u peer prefix%s", d->config_path, next.n_prefixes,
		 next.n_prefixes == 1 ? "" : "es");
	return 0;
}

int mrcd_reload(struct mrcd *d)
{
	int rc;

	if (d->systemd)
		sd_notify(0, "RELOADING=1");
	rc = reload(d);
	if (d->systemd)
		sd_notify(0, "READY=1");
	return rc;
}

static bool handle_signals(struct mrcd *d)
{
	struct signalfd_siginfo si;

	while (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			mrcd_reload(d);
		} else {
			mrcd_log(LOG_INFO, "%s: stopping", strsignal((int)si.ssi_signo));
			return true;
		}
	}
	return false;
}

int mrcd_run(struct mrcd *d)
{
	if (d->systemd)
		sd_notifyf(0, "READY=1\nSTATUS=backend %s, %u planes, port %u",
			   d->backend.ops->name, d->cfg.n_planes, d->backend.port);
	while (!d->stopping) {
		struct epoll_event ev[8];
		uint64_t now = mrcd_now_ns(), next;
		struct timespec wait;
		int n;

		mrc_peer_table_on_timeout(&d->peers, now);
		send_daemon_packets(d, now);
		mrcd_clients_pump(d, now);
		if (d->watchdog_usec && now >= d->next_watchdog_ns) {
			sd_notify(0, "WATCHDOG=1");
			d->next_watchdog_ns = now + d->watchdog_usec * 1000 / 2;
		}
		next = mrc_peer_table_next_timeout(&d->peers);
		if (mrcd_clients_next_timeout(d) < next)
			next = mrcd_clients_next_timeout(d);
		if (d->watchdog_usec && d->next_watchdog_ns < next)
			next = d->next_watchdog_ns;
		/* the engine's timers are microseconds apart: wait to the nanosecond, not the
		 * millisecond epoll_wait would round up to */
		if (d->cfg.busy_poll || next <= now)
			wait = (struct timespec){ 0, 0 };
		else if (next != UINT64_MAX)
			wait = (struct timespec){ (time_t)((next - now) / 1000000000u),
						  (long)((next - now) % 1000000000u) };
		n = epoll_pwait2(d->epoll_fd, ev, 8, next == UINT64_MAX && !d->cfg.busy_poll
							     ? NULL
							     : &wait,
				 NULL);
		if (n < 0 && errno != EINTR) {
			mrcd_log(LOG_ERR, "epoll_pwait2: %s", strerror(errno));
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.fd == d->signal_fd) {
				if (handle_signals(d))
					d->stopping = true;
			} else if (!mrcd_control_event(d, ev[i].data.fd)) {
				/* the backend's sockets are read below, whatever woke us */
				mrcd_metrics_event(d, ev[i].data.fd);
			}
		}
		receive(d, mrcd_now_ns());
	}
	if (d->systemd)
		sd_notify(0, "STOPPING=1");
	/* clients see their outstanding work flushed with an error status, not a hang, and
	 * the peers' QPs hear CLOSE instead of waiting out their retry budget */
	mrcd_clients_flush_all(d, mrcd_now_ns());
	mrcd_clients_pump(d, mrcd_now_ns());
	mrcd_log(LOG_INFO, "stopped: %llu datagrams in (%llu malformed, %llu for no QP), %llu out",
		 (unsigned long long)d->stats.rx_datagrams,
		 (unsigned long long)d->stats.rx_malformed,
		 (unsigned long long)d->stats.rx_no_qp, (unsigned long long)d->stats.tx_datagrams);
	return 0;
}
