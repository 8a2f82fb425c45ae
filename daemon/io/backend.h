/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How metaroced moves datagrams: one ops table, one implementation per way of doing it.
 * `udp` (backend_udp.c) is the portable reference on ordinary sockets; `xdp` (backend_xdp.c)
 * adds the XDP fast path (fastpath.h) in front of the same sockets: what the program placed
 * arrives as datagrams marked `placed` that carry only their headers. The daemon's loop polls the backend's fds, pulls received datagrams in
 * batches and pushes the engine's output in batches; a backend knows planes, addresses and
 * ports, never QPs.
 */
#ifndef METAROCE_DAEMON_IO_BACKEND_H
#define METAROCE_DAEMON_IO_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "core/dgram.h"

struct mrcd_backend;
struct mrcd_fastpath;

struct mrcd_backend_ops {
	const char *name;
	/* Opens sockets or queues for every configured plane; message in err on failure. */
	int (*open)(struct mrcd_backend *b, char *err, size_t errlen);
	/* Sends up to n datagrams; returns how many left (the rest may be retried). */
	int (*tx_batch)(struct mrcd_backend *b, const struct mrcd_dgram *d, unsigned n);
	/*
	 * Receives up to n datagrams without blocking; returns how many (0: nothing more now).
	 * Sockets are read only once fd_ready said so: an empty read is a system call for
	 * nothing. A datagram's data may point into the backend's own memory (a UDP GRO train),
	 * valid until the next call: the caller sets data and cap before each call and is done
	 * with the datagrams by then. Datagrams it had no room for come first next time.
	 */
	int (*rx_batch)(struct mrcd_backend *b, struct mrcd_dgram *d, unsigned n);
	/* The fds the loop waits on for receive readiness; returns how many. */
	unsigned (*poll_fds)(const struct mrcd_backend *b, int *fds, unsigned max);
	/* The loop saw one of them readable. */
	void (*fd_ready)(struct mrcd_backend *b, int fd);
	/* Transmit work the kernel has not taken yet that needs rx_batch called again soon
	 * (AF_XDP rings to kick); NULL: never. */
	bool (*tx_pending)(struct mrcd_backend *b);
	/* Received work no descriptor announces (the XDP program's events, which wake the
	 * loop only when urgent): rx_batch is called this turn. NULL: never. */
	bool (*rx_pending)(struct mrcd_backend *b);
	/* The loop is about to sleep (true) or woke (false): wakeups its producers skip while
	 * the loop is awake are armed or disarmed. False when work came meanwhile: do not
	 * sleep. NULL: nothing to arm. */
	bool (*arm)(struct mrcd_backend *b, bool sleeping);
	void (*close)(struct mrcd_backend *b);
};

/* The most fds a backend waits on: per plane a socket, and an AF_XDP socket per queue (64),
 * and the XDP event ring. */
#define MRCD_BACKEND_MAX_FDS (MRC_MAX_PLANES * 65 + 1)

struct mrcd_udp_plane {
	int rx_fd;			      /* bound to (plane address, port) */
	int tx_fd[MRCD_SPORTS_PER_PLANE];     /* bound to (plane address, an ephemeral port) */
	uint16_t tx_port[MRCD_SPORTS_PER_PLANE];
	uint8_t family;			      /* MRC_AF_INET or MRC_AF_INET6 */
};

struct mrcd_gro;

/* xdp: a worker's AF_XDP sockets (0: none), what they moved, and what went another way */
struct mrcd_xsk_counts {
	unsigned sockets;
	uint64_t rx, tx, tx_unresolved, rx_bad;
};

struct mrcd_backend {
	const struct mrcd_backend_ops *ops;
	const struct mrcd_config *cfg;
	/* the listening port actually bound (cfg->port, or chosen when 0); set before open, the
	 * port to bind instead (another worker's, in its SO_REUSEPORT groups) */
	uint16_t port;
	bool reuseport; /* udp: the receiving sockets join SO_REUSEPORT groups (workers > 1) */
	/* the worker it is for, of how many; a worker other than 0 joins the groups worker
	 * 0's (leader) sockets made, shares its XDP program and takes the receive queues q
	 * with q % n_workers == worker; NULL: worker 0's, which makes them */
	unsigned worker, n_workers;
	struct mrcd_backend *leader;
	void *priv;	/* the backend's own state */
	struct mrcd_udp_plane udp[MRC_MAX_PLANES];
	uint32_t udp_ready; /* bit i: plane i's receiving socket may hold datagrams */
	struct mrcd_fastpath *fast; /* xdp: the program and its maps; NULL otherwise */
	bool gso;	    /* udp: trains of equal datagrams leave as one UDP_SEGMENT message */
	struct mrcd_gro *gro; /* udp: trains arrive as one message (UDP_GRO); NULL: one by one */
	uint64_t tx_messages; /* udp: messages the sockets sent (a GSO train is one) */
	uint64_t tx_errors, rx_errors, rx_truncated;
	struct mrcd_xsk_counts xsk;
};

extern const struct mrcd_backend_ops mrcd_backend_udp;
extern const struct mrcd_backend_ops mrcd_backend_xdp;

/* The udp backend's fd_ready, which the xdp backend shares for the same sockets. */
void mrcd_backend_udp_fd_ready(struct mrcd_backend *b, int fd);

/* The source ports a plane can send from: the entropy the engine's paths choose among. */
unsigned mrcd_backend_sports(const struct mrcd_backend *b, uint8_t plane, uint16_t *ports,
			     unsigned max);

#endif /* METAROCE_DAEMON_IO_BACKEND_H */
