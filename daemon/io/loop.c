/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The event loop: the backend, the core, signals, systemd. Each descriptor's handler sits in
 * its epoll entry; the loop never scans for who woke it.
 */
#include "io/daemon.h"

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

#include "io/control.h"
#include "io/fastpath.h"
#include "io/metrics.h"
#include "log.h"

/* Every client may hold completion-channel sockets here: take the hard limit, not 1024. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/*
 * backend = xdp must attach or the start fails; udp is udp; auto never takes the slower of
 * the two, and since the udp backend sends with GSO, on the machines measured (make
 * bench-backend, docs/BENCHMARKS.md) that is
 * xdp: its AF_XDP transmit copies each datagram into a frame of its own where the udp
 * backend's GSO sends a path's train in one system call. So auto runs udp and says why,
 * until the xdp backend wins.
 */
static int open_backend(struct mrcd *d, char *err, size_t errlen)
{
	char why[320];

	d->backend.cfg = &d->cfg;
	d->backend_note[0] = '\0';
	d->n_workers = mrcd_workers_wanted(&d->cfg);
	d->backend.n_workers = d->n_workers;
	d->backend.reuseport = d->n_workers > 1;
	if (d->cfg.backend == MRCD_BACKEND_AUTO) {
		mrcd_log(LOG_INFO, "backend auto: udp, which outruns xdp on the machines measured; "
				   "backend = xdp asks for the XDP fast path");
		snprintf(d->backend_note, sizeof(d->backend_note), "auto: udp outruns xdp");
	}
	if (d->cfg.backend == MRCD_BACKEND_XDP) {
		d->backend.ops = &mrcd_backend_xdp;
		if (!d->backend.ops->open(&d->backend, why, sizeof(why))) {
			snprintf(d->backend_note, sizeof(d->backend_note), "%s",
				 d->backend.fast->note);
			return 0;
		}
		snprintf(err, errlen, "backend xdp: %s", why);
		return -1;
	}
	d->backend.ops = &mrcd_backend_udp;
	return d->backend.ops->open(&d->backend, err, errlen);
}

/* A backend descriptor is readable: its datagrams are read after this turn's events. */
static void backend_ready(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	(void)events;
	d->backend.ops->fd_ready(&d->backend, w->fd);
	d->rx_due = true;
}

static void handle_signals(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)events;
	while (read(w->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			mrcd_reload(d);
		} else {
			mrcd_log(LOG_INFO, "%s: stopping", strsignal((int)si.ssi_signo));
			__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
		}
	}
}

/* Whom this daemon trusts, and loudly when nobody is checked. */
static void log_auth(const struct mrcd *d)
{
	const struct mrc_auth *a = &d->keys.auth;
	char key[MRCD_KEY_B64_LEN];

	if (a->mode == MRC_AUTH_OFF) {
		mrcd_log(LOG_WARNING, "auth off: nothing is authenticated; whoever can send to "
			 "port %u from an admitted address can forge any packet (set "
			 "cluster_key_file or allowed_peer)", d->backend.port);
		return;
	}
	mrcd_key_b64(a->public_key, key);
	mrcd_log(LOG_INFO, "auth %s: public key %s%s%s, %s%s%u allowed peer%s",
		 mrc_auth_mode_name(a->mode), key,
		 d->keys.generated ? ", new in " : "", d->keys.generated ? d->cfg.key_file : "",
		 a->has_cluster_key ? "a cluster key" : "no cluster key",
		 a->n_allowed ? ", " : " and ", a->n_allowed, a->n_allowed == 1 ? "" : "s");
}

static int start_core(struct mrcd *d, char *err, size_t errlen)
{
	struct mrcd_core_params p = {
		.cfg = &d->cfg, .ops = &mrcd_core_io_ops, .io = d, .port = d->backend.port,
		.page_size = (size_t)sysconf(_SC_PAGESIZE), .now = d->started_ns,
		.auth = &d->keys.auth, .n_shards = d->n_workers,
	};
	long pages = sysconf(_SC_PHYS_PAGES);

	/* a user registers at most the host's memory unless configured (user_max_registered):
	 * more can only be sparse, and would fill the daemon's address space */
	p.registered_auto = pages > 0 ? (uint64_t)pages * p.page_size : 64ull << 30;
	p.operator_uid = (uint32_t)geteuid();
	if (d->backend.fast) {
		p.fast = &mrcd_core_io_fast_ops;
		/* page maps are the daemon's memory: a client gets at most half the machine */
		p.page_map_quota = pages > 0 ? (uint64_t)pages * p.page_size / 2 : 4ull << 30;
	}
	/* the request-id seed is drawn apart from the node id, which every DISCOVER carries;
	 * keys have a seed of their own, nothing on the wire tells it */
	if (getrandom(&p.node_id, sizeof(p.node_id), 0) != sizeof(p.node_id) ||
	    getrandom(&p.request_seed, sizeof(p.request_seed), 0) != sizeof(p.request_seed) ||
	    getrandom(p.seed, sizeof(p.seed), 0) != sizeof(p.seed)) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return -1;
	}
	if (mrcd_core_init(&d->core, &p)) {
		snprintf(err, errlen, "out of memory for the daemon's tables");
		return -1;
	}
	d->core_up = true;
	return 0;
}

int mrcd_start(struct mrcd *d, const struct mrcd_config *cfg, const char *config_path,
	       char *err, size_t errlen)
{
	static int fds[MRCD_BACKEND_MAX_FDS];
	sigset_t mask;
	unsigned n;

	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	d->config_path = config_path;
	d->epoll_fd = d->reserve_fd = -1;
	d->signals.fd = d->control.fd = d->metrics.fd = -1;
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		d->conn[i].sock.fd = d->conn[i].doorbell.fd = -1;
	raise_fd_limit();
	d->started_ns = mrcd_now_ns();
	mrc_spin_init(&d->spin, d->cfg.busy_poll_ns);
	if (mrcd_config_check(&d->cfg, err, errlen) ||
	    mrcd_keys_load(&d->keys, &d->cfg, err, errlen))
		return -1;
	if (open_backend(d, err, errlen))
		return -1;
	if (start_core(d, err, errlen))
		goto fail_backend;
	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d->signals = (struct mrcd_watch){ .ready = handle_signals,
					  .fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK) };
	if (d->epoll_fd < 0 || d->signals.fd < 0 || mrcd_watch(d, &d->signals, false)) {
		snprintf(err, errlen, "epoll/signalfd: %s", strerror(errno));
		goto fail_all;
	}
	n = d->backend.ops->poll_fds(&d->backend, fds, MRCD_BACKEND_MAX_FDS);
	for (unsigned i = 0; i < n; i++) {
		d->backend_fds[i] = (struct mrcd_watch){ backend_ready, fds[i], i, 0, true };
		if (mrcd_watch(d, &d->backend_fds[i], false)) {
			snprintf(err, errlen, "epoll: %s", strerror(errno));
			goto fail_all;
		}
	}
	d->n_backend_fds = n;
	d->control_thread = pthread_self();
	pthread_mutex_init(&d->events_lock, NULL);
	if (mrcd_workers_start(d, err, errlen) || mrcd_control_open(d, err, errlen) ||
	    mrcd_metrics_open(d, err, errlen))
		goto fail_all;
	d->systemd = getenv("NOTIFY_SOCKET") != NULL;
	if (d->systemd && sd_watchdog_enabled(0, &d->watchdog_usec) <= 0)
		d->watchdog_usec = 0;
	mrcd_log(LOG_INFO, "node %016llx: backend %s%s%s%s, port %u, %u plane%s, max payload %u, "
		 "%u worker%s", (unsigned long long)d->core.peers.local.node_id,
		 d->backend.ops->name, d->backend_note[0] ? " (" : "", d->backend_note,
		 d->backend_note[0] ? ")" : "", d->backend.port, d->cfg.n_planes,
		 d->cfg.n_planes == 1 ? "" : "s", d->core.peers.local.max_payload, d->n_workers,
		 d->n_workers == 1 ? "" : "s");
	log_auth(d);
	return 0;

fail_all:
	mrcd_metrics_close(d);
	mrcd_control_close(d);
	mrcd_workers_close(d);
	if (d->signals.fd >= 0)
		close(d->signals.fd);
	if (d->epoll_fd >= 0)
		close(d->epoll_fd);
	mrcd_core_fini(&d->core);
	d->core_up = false;
fail_backend:
	d->backend.ops->close(&d->backend);
	return -1;
}

void mrcd_stop(struct mrcd *d)
{
	mrcd_workers_join(d);
	mrcd_metrics_close(d);
	mrcd_control_close(d); /* its clients' objects go with the core's */
	mrcd_core_fini(&d->core);
	mrcd_workers_close(d);
	d->core_up = false;
	close(d->signals.fd);
	close(d->epoll_fd);
	d->backend.ops->close(&d->backend);
	mrcd_keys_wipe(&d->keys);
}

/* Monitor events other workers raised, to the subscribers. */
static void broadcast_events(struct mrcd *d)
{
	char line[256];

	for (;;) {
		bool any;

		pthread_mutex_lock(&d->events_lock);
		any = d->n_events > 0;
		if (any) {
			memcpy(line, d->events[0], sizeof(line));
			memmove(d->events[0], d->events[1], (--d->n_events) * sizeof(d->events[0]));
		}
		pthread_mutex_unlock(&d->events_lock);
		if (!any)
			return;
		mrcd_control_broadcast(d, line);
	}
}

/* The core's control work, due now: discovery, rdma_cm, regions to unmap, silent clients. */
static bool control_turn(struct mrcd *d, uint64_t now)
{
	bool worked;

	if (mrcd_core_control_timeout(&d->core) > now)
		return false;
	mrcd_workers_pause(d);
	worked = mrcd_core_control_pump(&d->core, now);
	mrcd_control_close_silent(d, now);
	mrcd_workers_resume(d);
	return worked;
}

int mrcd_run(struct mrcd *d)
{
	if (d->systemd)
		sd_notifyf(0, "READY=1\nSTATUS=backend %s, %u planes, port %u",
			   d->backend.ops->name, d->cfg.n_planes, d->backend.port);
	/* a worker whose loop failed stops the daemon too (worker.c) */
	while (!__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
		struct epoll_event ev[8];
		uint64_t now = mrcd_now_ns(), next;
		struct timespec wait = { 0, 0 };
		uint64_t http_due;
		bool tx_pending, rx_pending, sleep, worked;
		int n;

		worked = control_turn(d, now);
		worked |= mrcd_core_pump(&d->core, 0, now);
		if (d->n_workers > 1)
			broadcast_events(d);
		if (d->watchdog_usec && now >= d->next_watchdog_ns) {
			sd_notify(0, "WATCHDOG=1");
			d->next_watchdog_ns = now + d->watchdog_usec * 1000 / 2;
		}
		next = mrcd_core_next_timeout(&d->core, 0);
		if (mrcd_core_control_timeout(&d->core) < next)
			next = mrcd_core_control_timeout(&d->core);
		if (d->watchdog_usec && d->next_watchdog_ns < next)
			next = d->next_watchdog_ns;
		http_due = mrcd_metrics_next_timeout(d, now);
		if (http_due < next)
			next = http_due;
		tx_pending = d->backend.ops->tx_pending && d->backend.ops->tx_pending(&d->backend);
		if (tx_pending && next > now + MRCD_TX_KICK_NS)
			next = now + MRCD_TX_KICK_NS;
		rx_pending = d->rx_due ||
			     (d->backend.ops->rx_pending && d->backend.ops->rx_pending(&d->backend));
		if (rx_pending)
			next = now;
		/* nothing due: spin a while (busy_poll), reading the work queues each turn
		 * without doorbells, or go to sleep: the queues want their doorbells again,
		 * unless one filled meanwhile */
		sleep = next > now && !mrc_spin_idle(&d->spin, now) &&
			mrcd_core_idle(&d->core, 0) && mrcd_worker_sleep(&d->workers[0]);
		/* the engine's timers are microseconds apart: wait to the nanosecond, not the
		 * millisecond epoll_wait would round up to */
		if (sleep)
			mrc_spin_sleeping(&d->spin, now);
		if (sleep && next != UINT64_MAX)
			wait = (struct timespec){ (time_t)((next - now) / 1000000000u),
						  (long)((next - now) % 1000000000u) };
		n = epoll_pwait2(d->epoll_fd, ev, 8, sleep && next == UINT64_MAX ? NULL : &wait,
				 NULL);
		if (n < 0 && errno != EINTR) {
			mrcd_log(LOG_ERR, "epoll_pwait2: %s", strerror(errno));
			return -1;
		}
		if (sleep)
			mrcd_worker_woke(&d->workers[0]);
		for (int i = 0; i < n; i++) {
			struct mrcd_watch *w = ev[i].data.ptr;

			/* a request, a signal, a scrape: the core's control work, the other
			 * workers stopped meanwhile */
			if (!w->data_path)
				mrcd_workers_pause(d);
			w->ready(d, w, ev[i].events);
			if (!w->data_path)
				mrcd_workers_resume(d);
		}
		if (http_due != UINT64_MAX && mrcd_now_ns() >= http_due) {
			/* a scraper that went quiet is closed; one whose request waited is
			 * answered, from every shard's counters */
			mrcd_workers_pause(d);
			mrcd_metrics_on_timeout(d);
			mrcd_workers_resume(d);
		}
		/* the backend is read when one of its descriptors said so, while it has
		 * transmit rings to kick (reading kicks them), or when work waits that no
		 * descriptor announces (the XDP program's quiet events, datagrams other
		 * workers handed over) */
		if (d->rx_due || tx_pending || rx_pending || d->n_workers > 1) {
			bool more;

			worked |= mrcd_worker_receive(&d->workers[0], mrcd_now_ns(), &more) > 0;
			d->rx_due = more; /* the rest next turn, after the pump */
		}
		if (worked || n > 0)
			mrc_spin_work(&d->spin, mrcd_now_ns());
	}
	if (d->systemd)
		sd_notify(0, "STOPPING=1");
	/* clients see their outstanding work flushed with an error status, not a hang, and
	 * the peers' QPs hear CLOSE instead of waiting out their retry budget; the
	 * workers are gone by then, so this thread pumps their shards through their sockets */
	mrcd_workers_join(d);
	mrcd_core_flush_all(&d->core, mrcd_now_ns());
	mrcd_core_control_pump(&d->core, mrcd_now_ns());
	for (unsigned k = 0; k < d->n_workers; k++)
		mrcd_core_pump(&d->core, k, mrcd_now_ns());
	{
		struct mrcd_stats st;

		mrcd_core_stats(&d->core, &st);
		mrcd_log(LOG_INFO, "stopped: %llu datagrams in (%llu malformed, %llu for no QP), "
			 "%llu out", (unsigned long long)st.rx_datagrams,
			 (unsigned long long)st.rx_malformed, (unsigned long long)st.rx_no_qp,
			 (unsigned long long)st.tx_datagrams);
	}
	return 0;
}
