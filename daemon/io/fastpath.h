/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The XDP fast path as the daemon drives it: bpf/metaroce_xdp.bpf.c attached to every plane
 * interface through libxdp, and the maps it reads (lib/include/metaroce/xdp.h) kept in step
 * with the daemon's QPs and regions. The program places WRITE and READ response payloads
 * straight into region pages the daemon created (page maps, mapped by the client over its
 * own pages) and tells the daemon what it placed through a ring buffer; backend_xdp.c turns
 * those events into datagrams with `placed` set, so the engine completes and acknowledges
 * them without copying a byte.
 *
 * Everything else (control packets, SENDs, whatever the program cannot place) goes to the
 * backend's AF_XDP sockets (afxdp.h), or up to its UDP sockets where there are none.
 */
#ifndef METAROCE_DAEMON_FASTPATH_H
#define METAROCE_DAEMON_FASTPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/xdp.h>

#include "config.h"
#include "proto/auth.h"

struct metaroce_xdp;
struct xdp_program;
struct ring_buffer;

struct mrcd_fastpath_iface {
	int ifindex;
	uint8_t plane;
	bool native; /* driver mode; else generic (skb) mode */
	bool shared; /* through libxdp's dispatcher: other XDP programs may run there too */
	int link_fd; /* alone: the BPF link that holds it there, so it goes when we do; else -1 */
};

/* A worker's share of the program's events: the ring its QPs' events go to, its wake flag.
 * Only that worker touches it, so it has cache lines of its own. */
struct __attribute__((aligned(64))) mrcd_fastpath_events {
	struct ring_buffer *ring;
	int ring_fd;		/* the ring's map, in mrc_events at the worker's index */
	int epoll_fd;		/* the ring's, for the worker's epoll */
	struct mrc_xdp_wake *wake; /* its element of mrc_wake: `asleep` is ours to write */
	void *ring_pos;		/* the ring's consumer and producer pages, mapped to read */
	const uint64_t *ring_consumer, *ring_producer; /* the positions in them */
	/* events taken from the ring and not yet handed to the engine */
	struct mrc_xdp_event *pending;
	unsigned n_pending;
};

struct mrcd_fastpath {
	struct metaroce_xdp *skel;
	struct xdp_program *prog;
	struct mrcd_fastpath_iface ifaces[MRC_MAX_PLANES];
	unsigned n_ifaces;
	int claims[MRC_MAX_PLANES]; /* one per interface this daemon's program is on (fastpath.c) */
	unsigned n_claims;
	struct mrc_xdp_qp *qps; /* mrc_qps, mapped: the daemon changes entries in place */
	struct mrc_xdp_wake *wake; /* mrc_wake, mapped: every worker's element */
	struct mrcd_fastpath_events *workers; /* [n_workers] */
	unsigned n_workers;
	int mrs_fd, pages_fd, outcomes_fd, xsks_fd;
	char note[64];		/* "eth0 native, eth1 native", for status */
};

/*
 * Loads and attaches, with an event ring for each of n_workers workers; on failure returns
 * -1, says why in err and leaves nothing attached. redirect: what the program does not place
 * goes to AF_XDP sockets in mrc_xsks (where there is one for the queue), not up the stack.
 */
int mrcd_fastpath_open(struct mrcd_fastpath *fp, const struct mrcd_config *cfg, uint16_t port,
		       bool redirect, unsigned n_workers, char *err, size_t errlen);
void mrcd_fastpath_close(struct mrcd_fastpath *fp);

/* The plane an event arrived on; -1 when the interface is not one of ours. */
int mrcd_fastpath_plane(const struct mrcd_fastpath *fp, uint32_t ifindex);

/* --- a worker's events (only that worker calls these) ----------------------------------- */

/* Takes up to max events from the worker's ring into out; returns how many. */
unsigned mrcd_fastpath_events(struct mrcd_fastpath *fp, unsigned worker,
			      struct mrc_xdp_event *out, unsigned max);

/* Events are waiting, announced or not: the program wakes a sleeping worker only for some. */
bool mrcd_fastpath_events_pending(const struct mrcd_fastpath *fp, unsigned worker);

/* The descriptor that turns readable when the program wakes the worker. */
int mrcd_fastpath_events_fd(const struct mrcd_fastpath *fp, unsigned worker);

/*
 * The worker is about to sleep (true) or woke (false). Going to sleep it tells the program so
 * (xdp.h: then urgent events wake it) and looks at its ring once more: false when events
 * came meanwhile, and it must not sleep.
 */
bool mrcd_fastpath_arm(struct mrcd_fastpath *fp, unsigned worker, bool sleeping);

/* --- regions ---------------------------------------------------------------------------- */

/* A new page map of `pages` zeroed pages for a client to put its memory in; fd or -errno. */
int mrcd_fastpath_page_map(struct mrcd_fastpath *fp, uint64_t pages);

/* True when fd is a page map (ours or one like it); *bytes says how many bytes it holds. */
bool mrcd_fastpath_is_page_map(const struct mrcd_fastpath *fp, int fd, uint64_t *bytes);

/*
 * A region the program may place into: key slot `slot`, its bytes from `offset` on in the
 * page map page_fd. Returns 0 or -errno (then the region is simply slow-path only).
 */
int mrcd_fastpath_mr_set(struct mrcd_fastpath *fp, uint32_t slot, uint32_t key, uint32_t access,
			 uint32_t owner, uint64_t iova, uint64_t len, int page_fd, uint64_t offset);
/* The region's key stops working in XDP at once. */
void mrcd_fastpath_mr_clear(struct mrcd_fastpath *fp, uint32_t slot);

/* --- QPs -------------------------------------------------------------------------------- */

/* The QP in slot MRC_QP_SLOT(qpn) starts placing, its window at base, its events to the
 * worker's ring; with MRC_XDP_QP_AUTH, only packets tagged under auth (the peer's key). */
void mrcd_fastpath_qp_set(struct mrcd_fastpath *fp, uint32_t qpn, unsigned worker,
			  uint32_t owner, uint32_t base, uint32_t flags, uint32_t peer_planes,
			  const uint8_t peer[MRC_MAX_PLANES][16], const struct mrc_auth_key *auth);
/* The peer's planes or addresses changed. */
void mrcd_fastpath_qp_peer(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t peer_planes,
			   const uint8_t peer[MRC_MAX_PLANES][16]);
/* The window moved from old_base to base: the new base first, then the passed bits clear. */
void mrcd_fastpath_qp_advance(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t old_base,
			      uint32_t base);
/*
 * The program may place the responses of the QP's READ (or atomic) msn, whose request has
 * gone: one scatter element, [addr, addr + len) under key. False when another outstanding
 * READ holds its slot (the engine then places them).
 */
bool mrcd_fastpath_qp_read(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t msn, uint32_t key,
			   uint64_t addr, uint32_t len);
/* The QP's send work requests before oldest completed (oldest == next: all of them): the
 * entries of their READs are cleared. */
void mrcd_fastpath_qp_reads_done(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t oldest,
				 uint32_t next);
void mrcd_fastpath_qp_clear_flags(struct mrcd_fastpath *fp, uint32_t qpn, uint32_t flags);
/* Nothing more is placed for it. */
void mrcd_fastpath_qp_clear(struct mrcd_fastpath *fp, uint32_t qpn);
const struct mrc_xdp_qp *mrcd_fastpath_qp(const struct mrcd_fastpath *fp, uint32_t qpn);

/* Packets per outcome, summed over CPUs, into out[MRC_XDP_OUTCOMES]. */
void mrcd_fastpath_outcomes(const struct mrcd_fastpath *fp, uint64_t *out);
/* Events the program submitted while the worker slept: with a wakeup, and unwoken. */
void mrcd_fastpath_wake_counts(const struct mrcd_fastpath *fp, unsigned worker,
			       uint64_t *woken, uint64_t *quiet);

#endif /* METAROCE_DAEMON_FASTPATH_H */
