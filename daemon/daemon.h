/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced's core: one event loop that owns the backend, the peer table and the clients' QPs.
 * Everything waits in one epoll: the backend's sockets, a signalfd (SIGTERM and SIGINT stop,
 * SIGHUP reloads), the control socket and its clients, the clients' doorbells, and the
 * engine's next deadline as the epoll timeout.
 */
#ifndef METAROCE_DAEMON_DAEMON_H
#define METAROCE_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "clients.h"
#include "config.h"
#include "proto/peer.h"

#define MRCD_MAX_HTTP 16	/* scrapers connected at once */
#define MRCD_HTTP_HEAD 2048 /* longest request head read */

struct mrcd_stats {
	uint64_t rx_datagrams;
	uint64_t rx_malformed;	   /* refused by the codec */
	uint64_t rx_no_qp;	   /* addressed to a QP this daemon does not have */
	uint64_t rx_daemon_refused; /* daemon-level packets the peer table refused */
	uint64_t tx_datagrams;
	uint64_t tx_held_dropped;   /* refused by the local queue for MRCD_TX_HOLD_NS: given up */
};

struct mrcd {
	struct mrcd_config cfg;
	const char *config_path;    /* for SIGHUP; NULL: flags only */
	struct mrcd_backend backend;
	struct mrc_peer_table peers;
	int epoll_fd;
	int signal_fd;
	int control_fd;
	int reserve_fd;		    /* /dev/null, given up to refuse a client when out of fds */
	int metrics_fd;		    /* the HTTP listener for /metrics; -1: off */
	int metrics_conn[MRCD_MAX_HTTP];
	uint64_t metrics_since[MRCD_MAX_HTTP];
	char metrics_req[MRCD_MAX_HTTP][MRCD_HTTP_HEAD]; /* request heads as they arrive */
	size_t metrics_req_len[MRCD_MAX_HTTP];
	struct mrcd_clients clients;   /* control connections and what they own */
	char backend_note[64];	       /* xdp: how it attached; auto on udp: why not xdp */
	uint64_t started_ns;
	bool stopping;
	bool systemd;		    /* NOTIFY_SOCKET is set: report READY, STATUS, WATCHDOG */
	uint64_t watchdog_usec;	    /* 0: no watchdog */
	uint64_t next_watchdog_ns;
	uint16_t drained_planes;    /* operator-drained planes (bit i = plane i) */
	struct mrcd_stats stats;    /* never reset: the metrics export them */
	struct mrcd_stats stats_base; /* as they were at the last stat reset: status shows since */
};

/*
 * Opens everything the configuration names. On failure returns -1 with a message in err and
 * nothing left open.
 */
int mrcd_start(struct mrcd *d, const struct mrcd_config *cfg, const char *config_path,
	       char *err, size_t errlen);

/* Runs until SIGTERM or SIGINT. Returns 0 on a clean stop. */
int mrcd_run(struct mrcd *d);

void mrcd_stop(struct mrcd *d);

/* Asks the peer at addr for its planes (what a QP naming that GID does; also --discover). */
int mrcd_discover(struct mrcd *d, const struct mrcd_addr *addr);

uint64_t mrcd_now_ns(void);

/* An event for `metaroce-ctl monitor` subscribers (one line), also logged at priority. */
void mrcd_event(struct mrcd *d, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Operator actions: drain a plane (or restore it), reload the configuration file. 0 or
 * -errno; the reason of a failed reload is in the log. */
int mrcd_drain_plane(struct mrcd *d, unsigned plane, bool drained);
int mrcd_reload(struct mrcd *d);

/* Adds fd to the loop's epoll for input readiness; a doorbell edge-triggered. */
int mrcd_epoll_watch(struct mrcd *d, int fd);
int mrcd_epoll_watch_doorbell(struct mrcd *d, int fd);

#endif /* METAROCE_DAEMON_DAEMON_H */
