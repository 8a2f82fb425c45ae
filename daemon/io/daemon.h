/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced's edges: one event loop around the core (daemon/core), owning every descriptor.
 * Everything waits in one epoll, each descriptor with its handler in epoll_event.data.ptr,
 * so a wakeup goes straight to what woke it: the backend's sockets, a signalfd (SIGTERM and
 * SIGINT stop, SIGHUP reloads), the control socket and its clients, the clients' doorbells,
 * the metrics endpoint; the core's next deadline is the epoll timeout.
 */
#ifndef METAROCE_DAEMON_IO_DAEMON_H
#define METAROCE_DAEMON_IO_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/ctl.h>

#include "config.h"
#include "core/core.h"
#include "shm/spin.h"
#include "io/backend.h"
#include "io/keys.h"

struct mrcd;
struct MHD_Daemon;

/* A descriptor in the loop and what to do when it is ready (epoll_event.data.ptr). */
struct mrcd_watch {
	void (*ready)(struct mrcd *d, struct mrcd_watch *w, uint32_t events);
	int fd;		/* -1: none */
	unsigned slot;	/* the client it belongs to */
};

/* A control connection's descriptors; what it owns is the core's. */
struct mrcd_conn {
	struct mrcd_watch sock;	    /* the connection itself */
	struct mrcd_watch doorbell; /* the library's eventfd, after HELLO */
	bool monitor;		    /* subscribed to events (metaroce-ctl monitor) */
};

/* Descriptors that came with the request being served, and those that go with its reply. */
struct mrcd_request_fds {
	int in[MRC_CTL_MAX_SEGMENTS];
	unsigned n_in;
	int out[2];
	unsigned n_out;
};

struct mrcd {
	struct mrcd_config cfg;
	const char *config_path;    /* for SIGHUP; NULL: flags only */
	struct mrcd_backend backend;
	struct mrcd_keys keys;	    /* what peers and packets are authenticated with */
	struct mrcd_core core;
	bool core_up;
	int epoll_fd;
	struct mrcd_watch signals;
	struct mrcd_watch control;  /* the listening control socket */
	int reserve_fd;		    /* /dev/null, given up to refuse a client when out of fds */
	struct mrcd_watch backend_fds[MRCD_BACKEND_MAX_FDS];
	unsigned n_backend_fds;
	bool rx_due;		    /* a backend descriptor was readable: read it this turn */
	struct mrc_spin spin;	    /* busy_poll: whether an idle turn polls again or sleeps */
	struct mrcd_conn conn[MRCD_MAX_CLIENTS];
	struct mrcd_request_fds req;
	struct mrcd_watch metrics;  /* the metrics endpoint's epoll descriptor; fd -1: off */
	struct MHD_Daemon *http;    /* the endpoint (libmicrohttpd); NULL: off */
	char backend_note[64];	    /* xdp: how it attached; auto on udp: why not xdp */
	uint64_t started_ns;
	bool stopping;
	bool systemd;		    /* NOTIFY_SOCKET is set: report READY, STATUS, WATCHDOG */
	uint64_t watchdog_usec;	    /* 0: no watchdog */
	uint64_t next_watchdog_ns;
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

uint64_t mrcd_now_ns(void);

/* The configuration file again: what may change at run time. 0 or -errno (the log says why). */
int mrcd_reload(struct mrcd *d);

/* Puts w (ready, fd set) in the loop's epoll for input; edge-triggered for doorbells. */
int mrcd_watch(struct mrcd *d, struct mrcd_watch *w, bool edge);

/* The core's ops over the daemon's descriptors (io/core_io.c). */
extern const struct mrcd_core_ops mrcd_core_io_ops;
extern const struct mrcd_fast_ops mrcd_core_io_fast_ops;
/* A line to monitor subscribers (control.c). */
/* Connections that made no request in time (mrcd_core_silent_client) are closed. */
void mrcd_control_close_silent(struct mrcd *d, uint64_t now);
void mrcd_control_broadcast(struct mrcd *d, const char *line);

#endif /* METAROCE_DAEMON_IO_DAEMON_H */
