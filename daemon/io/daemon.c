/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the rooms of daemon/io share, so that none of them calls into the loop that calls
 * them: the clock, a descriptor joining the loop's epoll set, and a configuration reload
 * (SIGHUP, `metaroce-ctl config reload`).
 */
#include "io/daemon.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "log.h"

uint64_t mrcd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int mrcd_watch(struct mrcd *d, struct mrcd_watch *w, bool edge)
{
	struct epoll_event ev = { .events = EPOLLIN | (edge ? EPOLLET : 0u), .data.ptr = w };

	return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, w->fd, &ev);
}

static int reload(struct mrcd *d)
{
	struct mrcd_config next = d->cfg;
	char err[512];

	if (!d->config_path) {
		mrcd_log(LOG_INFO, "reload: no configuration file, nothing to do");
		return 0;
	}
	/* only what can change at run time: who may discover us, what users may hold (from
	 * their next request on; what they hold stays); planes and ports need a restart */
	mrcd_config_default(&next);
	if (mrcd_config_load(&next, d->config_path, err, sizeof(err)) ||
	    mrcd_config_check(&next, err, sizeof(err))) {
		mrcd_log(LOG_ERR, "reload failed, keeping the running configuration: %s", err);
		return -EINVAL;
	}
	if (next.auth != d->cfg.auth || strcmp(next.key_file, d->cfg.key_file) ||
	    strcmp(next.cluster_key_file, d->cfg.cluster_key_file) ||
	    next.n_allowed != d->cfg.n_allowed ||
	    memcmp(next.allowed, d->cfg.allowed, sizeof(next.allowed)))
		mrcd_log(LOG_NOTICE, "reload: the authentication settings changed; they apply at the "
			 "next start (the running keys stay)");
	d->cfg.n_prefixes = next.n_prefixes;
	memcpy(d->cfg.prefixes, next.prefixes, sizeof(next.prefixes));
	d->cfg.rx_capacity_bps = next.rx_capacity_bps;
	d->cfg.user = next.user;
	if (next.busy_poll_ns != d->cfg.busy_poll_ns) {
		d->cfg.busy_poll_ns = next.busy_poll_ns;
		mrc_spin_init(&d->spin, d->cfg.busy_poll_ns);
		/* the other workers are stopped while a reload runs (loop.c) */
		for (unsigned k = 1; d->workers && k < d->n_workers; k++)
			mrc_spin_init(&d->workers[k].spin, d->cfg.busy_poll_ns);
	}
	if (next.workers != d->cfg.workers || next.n_cpus != d->cfg.n_cpus ||
	    memcmp(next.cpus, d->cfg.cpus, sizeof(next.cpus)))
		mrcd_log(LOG_NOTICE, "reload: workers and cpus apply at the next start (%u workers "
			 "run)", d->n_workers);
	mrcd_core_reload(&d->core);
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
