/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced's edges: an event loop per worker thread around its shard of the core
 * (daemon/core/shard.h), owning every descriptor. Each waits in an epoll of its own, each
 * descriptor with its handler in epoll_event.data.ptr, so a wakeup goes straight to what woke
 * it. Worker 0 is the control thread: besides its shard's sockets and the clients' doorbells
 * it waits on a signalfd (SIGTERM and SIGINT stop, SIGHUP reloads), the control socket and
 * its clients and the metrics endpoint, and runs the core's control work; the other workers
 * (worker.c) wait on their shards' sockets, the doorbells and a wakeup eventfd. The control
 * thread stops them between turns before it calls into the core (mrcd_workers_pause).
 */
#ifndef METAROCE_DAEMON_IO_DAEMON_H
#define METAROCE_DAEMON_IO_DAEMON_H

#include <pthread.h>
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
	unsigned worker; /* the worker whose epoll holds it */
	bool data_path;	/* its handler runs the worker's shard only: no other worker stops */
};

struct mrcd_handover;

#define MRCD_PENDING_EVENTS 64 /* monitor events other workers raised, for the control thread */
#define MRCD_TX_KICK_NS 20000  /* transmit rings the kernel has not taken are kicked again after */

/*
 * A worker thread: its shard's sockets (the backend), its epoll, its view of the clients'
 * doorbells. Worker 0's is the daemon's own loop (loop.c); the others run worker.c's.
 */
struct mrcd_worker {
	struct mrcd *d;
	unsigned index;
	struct mrcd_backend *backend; /* worker 0: &d->backend; else &own */
	struct mrcd_backend own;
	int epoll_fd;		      /* worker 0: d->epoll_fd */
	struct mrcd_watch wake;	      /* an eventfd: the control thread or a worker wakes it */
	struct mrcd_watch backend_fds[MRCD_BACKEND_MAX_FDS];
	unsigned n_backend_fds;
	struct mrcd_watch doorbell[MRCD_MAX_CLIENTS]; /* workers 1..: the clients' eventfds */
	bool rx_due;		      /* a backend descriptor was readable: read it this turn */
	struct mrc_spin spin;	      /* busy_poll, as the control thread's */
	pthread_t thread;
	bool running;		      /* its thread was started (and not joined) */
	/* Stopping it between turns (mrcd_workers_pause): it holds `run` while it runs a turn
	 * and lets go of it when it sleeps or a pause is wanted */
	pthread_mutex_t run, gate;
	pthread_cond_t resumed;
	bool pause_wanted;	      /* under gate, read without it between turns */
	bool stop;		      /* atomic: leave the loop */
	/* datagrams of its shard that reached another worker's socket, one ring per sender */
	struct mrcd_handover *inbox[MRCD_MAX_WORKERS];
	uint64_t handed_over, handover_dropped; /* sent to other workers, lost for want of room */
	bool asleep;		      /* atomic: in epoll or on its way; a hand-over wakes it */
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
	struct mrcd_worker *workers; /* [n_workers]; [0] is this thread's */
	unsigned n_workers;
	unsigned pauses;	    /* mrcd_workers_pause depth (the control thread's own) */
	void *selectors;	    /* the socket selector per plane (worker.c) */
	bool selector_on;	    /* the kernel steers datagrams to their workers */
	pthread_t control_thread;   /* worker 0's */
	/* monitor events raised on other workers, broadcast by the control thread */
	pthread_mutex_t events_lock;
	char events[MRCD_PENDING_EVENTS][256];
	unsigned n_events, events_dropped;
	struct MHD_Daemon *http;    /* the endpoint (libmicrohttpd); NULL: off */
	char backend_note[64];	    /* xdp: how it attached; auto on udp: why not xdp */
	uint64_t started_ns;
	bool stopping;		    /* atomic: a signal, or a worker whose loop failed */
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

/* --- worker threads (worker.c) -------------------------------------------------------- */

/* How many workers this configuration asks for here (workers = auto: planes' queues, CPUs). */
unsigned mrcd_workers_wanted(const struct mrcd_config *cfg);
/* Workers 1..n_workers-1: their sockets, epolls and threads; worker 0 is set up too. */
int mrcd_workers_start(struct mrcd *d, char *err, size_t errlen);
/* Their threads leave their loops and are joined; what they own stays for mrcd_stop. */
void mrcd_workers_join(struct mrcd *d);
void mrcd_workers_close(struct mrcd *d);
/* The other workers stop at the end of their turns (nested calls count); then run again. */
void mrcd_workers_pause(struct mrcd *d);
void mrcd_workers_resume(struct mrcd *d);
/* A worker's loop turn's receiving: its backend's datagrams into its shard, another's handed
 * over. Returns how many; *more when the backend may have more. */
unsigned mrcd_worker_receive(struct mrcd_worker *w, uint64_t now, bool *more);
/* What worker k runs and what it cost (the workers stopped: the control thread reads). */
void mrcd_worker_report(const struct mrcd *d, unsigned k, struct mrc_ctl_worker *out);
/* The workers' AF_XDP sockets and what they moved, summed (the workers stopped). */
void mrcd_workers_xsk(const struct mrcd *d, struct mrcd_xsk_counts *sum);
/*
 * The worker is about to sleep: it tells those who would wake it (the workers that hand it
 * datagrams, its backend's XDP program) and looks once more; false when work came meanwhile
 * and it must not. Awake, it reads that work at its next turn and nobody pays a system call
 * to wake it. mrcd_worker_woke: it is back from its sleep.
 */
bool mrcd_worker_sleep(struct mrcd_worker *w);
void mrcd_worker_woke(struct mrcd_worker *w);
/* Wakes a worker sleeping in its epoll. */
void mrcd_worker_wake(struct mrcd_worker *w);
/* A descriptor into the worker's epoll (as mrcd_watch does for worker 0's). */
int mrcd_worker_watch(struct mrcd_worker *w, struct mrcd_watch *watch, bool edge);

#endif /* METAROCE_DAEMON_IO_DAEMON_H */
