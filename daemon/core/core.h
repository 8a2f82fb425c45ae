/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced's logic, with no I/O and no clock: the clients and what they own (memory regions,
 * completion queues, queue pairs), the QP state machine, the pump that feeds the clients'
 * rings to the engine and the engine's packets to the transmit queue with back-pressure, the
 * peer table, destroyed QPs that still answer their peers, statistics.
 *
 *   in:   requests from clients (their descriptors stay with the caller, named by index),
 *         datagrams, `now`
 *   out:  struct mrcd_core_ops: datagrams to send, completion events, memory to map or
 *         unmap, lines for the log and for monitors, the XDP fast path's maps
 *
 * daemon/io implements the ops over sockets, memfds and BPF maps; tests/unit implements them
 * over plain memory and a simulated network. Nothing here opens, reads, writes or closes a
 * file descriptor or reads a clock.
 */
#ifndef METAROCE_DAEMON_CORE_CORE_H
#define METAROCE_DAEMON_CORE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/ctl.h>
#include <metaroce/xdp.h>

#include "config.h"
#include "core/dgram.h"
#include "core/tables.h"
#include "proto/peer.h"

/* Priorities of log lines and events, as syslog(3) numbers them. */
enum mrcd_priority {
	MRCD_ERR = 3,
	MRCD_WARNING = 4,
	MRCD_NOTICE = 5,
	MRCD_INFO = 6,
	MRCD_DEBUG = 7,
};

/* Where the segments of a region landed: one span, the segments back to back. */
struct mrcd_region_map {
	uint8_t *base;
	size_t len;
	bool page_map; /* one segment, a page map of the fast path: the program may place there */
};

#define MRCD_TX_BATCH 128 /* datagrams ops->tx is offered at once, at most */

struct mrcd_core_ops {
	/* --- the wire ---------------------------------------------------------------------- */
	/*
	 * Offers n datagrams; sent[i] says whether d[i] went, and the ones that did not come
	 * again. Those of one path (plane and source port) keep their order: once one of them
	 * is refused, no later one of that path goes. Returns how many went. Each shard sends
	 * through queues of its own (shard 0's also the control thread's packets).
	 */
	unsigned (*tx)(void *io, unsigned shard, const struct mrcd_dgram *d, unsigned n,
		       bool *sent);
	/* The UDP source ports a shard's queues send from on a plane: the entropy its QPs'
	 * paths choose among. */
	unsigned (*sports)(void *io, unsigned shard, uint8_t plane, uint16_t *ports,
			   unsigned max);

	/* --- descriptors that came with the request being handled, by index ---------------- */
	/* Descriptor i is the client's doorbell (an eventfd), watched from now on. */
	int (*keep_doorbell)(void *io, unsigned client, unsigned i);
	/* Descriptor i is a completion channel (a datagram socket), kept as *channel. */
	int (*keep_channel)(void *io, unsigned i, int *channel);
	/* Segment k lies in descriptor k: checks them and maps them back to back. */
	int (*map_region)(void *io, const struct mrc_ctl_mr_segment *seg, unsigned n,
			  struct mrcd_region_map *out);
	/* New shared memory (a ring, a doorbell page), mapped at *mem; its descriptor goes
	 * with the reply. */
	int (*new_shared_memory)(void *io, size_t bytes, void **mem);
	/* A new page map of the fast path for a region's pages; it goes with the reply. */
	int (*new_page_map)(void *io, uint64_t bytes);
	void (*unmap)(void *io, void *mem, size_t bytes);

	/* --- what the core keeps for clients ----------------------------------------------- */
	/* One event byte on a completion channel, never waiting; false when it took none. */
	bool (*notify)(void *io, int channel);
	/* One record (a CM event) on an event channel, never waiting: 1 taken, 0 full (offer it
	 * again), -1 its reader is gone (offer nothing more). */
	int (*record)(void *io, int channel, const void *data, size_t len);
	void (*close_channel)(void *io, int channel);
	void (*close_doorbell)(void *io, unsigned client);

	/* --- telling ----------------------------------------------------------------------- */
	void (*log)(void *io, int priority, const char *line);
	/* A line for `metaroce-ctl monitor` subscribers, also logged. */
	void (*event)(void *io, int priority, const char *line);
};

/* The XDP program's maps, kept in step with the QPs and regions (fastpath.h says how). */
struct mrcd_fast_ops {
	/* shard: the worker that runs the QP, which the program's events for it must reach;
	 * auth: with MRC_XDP_QP_AUTH in flags, the key the peer tags this QP's packets with */
	void (*qp_set)(void *io, uint32_t qpn, unsigned shard, uint32_t owner, uint32_t base,
		       uint32_t flags, uint32_t peer_planes, const uint8_t peer[MRC_MAX_PLANES][16],
		       const struct mrc_auth_key *auth);
	void (*qp_peer)(void *io, uint32_t qpn, uint32_t peer_planes,
			const uint8_t peer[MRC_MAX_PLANES][16]);
	void (*qp_advance)(void *io, uint32_t qpn, uint32_t old_base, uint32_t base);
	/* The READ (or atomic) msn of the QP, whose request has gone: the program may place
	 * its responses. False when it cannot (its slot is held): the engine places them. */
	bool (*qp_read)(void *io, uint32_t qpn, uint32_t msn, uint32_t key, uint64_t addr,
			uint32_t len);
	/* Send work requests before oldest completed (oldest == next: all): their READs' go. */
	void (*qp_reads_done)(void *io, uint32_t qpn, uint32_t oldest, uint32_t next);
	void (*qp_clear_flags)(void *io, uint32_t qpn, uint32_t flags);
	void (*qp_clear)(void *io, uint32_t qpn);
	/* The region at `slot` is in the page map that came as descriptor 0 of the request. */
	int (*mr_set)(void *io, uint32_t slot, uint32_t key, uint32_t access, uint32_t owner,
		      uint64_t iova, uint64_t len, uint64_t offset);
	void (*mr_clear)(void *io, uint32_t slot);
};

struct mrcd_stats {
	uint64_t rx_datagrams;
	uint64_t rx_malformed;	   /* refused by the codec */
	uint64_t rx_no_qp;	   /* addressed to a QP this daemon does not have */
	uint64_t rx_elsewhere;	   /* another shard's: io hands it to that worker */
	uint64_t rx_daemon_refused; /* daemon-level packets the peer table refused */
	uint64_t tx_datagrams;
	uint64_t tx_held_dropped;   /* refused by the local queue for MRCD_TX_HOLD_NS: given up */
	uint64_t cq_events;	    /* completion events raised on clients' channels */
	uint64_t cq_events_spun;    /* arms left to a library spinning on them (no wakeup) */
	uint64_t ud_tx, ud_rx;	    /* UD datagrams sent, delivered [SPEC 4.8] */
	uint64_t ud_unroutable;	    /* UD datagrams for a destination this daemon may not reach */
	uint64_t ud_dropped[MRC_DROP_REASON_MAX + 1]; /* UD datagrams refused, by reason */
	uint64_t user_refusals;	    /* requests a user's limit refused (users.c) */
};

struct mrcd_core_params {
	const struct mrcd_config *cfg; /* the caller's, changed by reloads (mrcd_core_reload) */
	const struct mrcd_core_ops *ops;
	const struct mrcd_fast_ops *fast; /* NULL: the backend has no XDP fast path */
	void *io;
	uint64_t node_id;      /* random per start: what peers know this daemon by */
	uint64_t seed[2];      /* the key behind QPNs' and keys' random bits */
	uint64_t request_seed; /* discovery's request ids, apart from the node id */
	uint16_t port;	       /* the MetaRoCE port the backend bound */
	size_t page_size;
	uint64_t page_map_quota; /* page-map bytes one client connection may have, and one
				  * user unless user_max_page_maps says */
	uint64_t registered_auto; /* user_max_registered = auto: the host's memory */
	uint32_t operator_uid;	  /* the daemon's own user: like root, not limited */
	/* NULL or mode off: nothing authenticated; else the keys (the caller's, for the
	 * core's life) every peer and packet is checked under */
	const struct mrc_auth *auth;
	unsigned n_shards;	  /* workers, each running the QPs of its slots (shard.h); >= 1 */
	uint64_t now;
};

struct mrcd_cm;
struct mrcd_shard;

struct mrcd_core {
	const struct mrcd_config *cfg;
	const struct mrcd_core_ops *ops;
	const struct mrcd_fast_ops *fast;
	void *io;
	uint16_t port;
	size_t page_size;
	uint64_t page_map_quota;
	uint64_t registered_auto;
	uint32_t operator_uid;
	const struct mrc_auth *auth; /* NULL: off */
	struct mrc_peer_keys self_keys; /* QPs between two of our own clients: a random key */
	uint64_t next_user_refusal_log_ns;
	uint64_t next_auth_refusal_log_ns; /* a refused peer logged once a second at most */
	uint64_t sealed; /* packets sealed (auth = full), every QP's and UD's: the next nonce */
	uint64_t started_ns;
	uint64_t now;		 /* the latest time the caller gave: the peer table's callbacks */
	uint16_t drained_planes; /* operator-drained planes (bit i = plane i) */
	uint32_t windows_lock;	 /* memory windows, bound by send queues: core/lock.h */
	struct mrc_peer_table peers;
	uint64_t peers_epoch; /* grows when a peer or a drain changes: UD routes are made anew */
	struct mrcd_tables t;	 /* clients and what they own */
	struct mrcd_cm *cm;	 /* rdma_cm ids, channels, connections (cm.h) */
	unsigned n_shards;
	struct mrcd_shard *shard; /* [n_shards]: what each worker runs alone (shard.h) */
	/* the control thread's (discovery, rdma_cm, UD, refusals); the shards count their own,
	 * and mrcd_core_stats adds them up. Never reset: the metrics export them */
	struct mrcd_stats stats;
	struct mrcd_stats stats_base; /* all of it at the last stat reset: replies show since */
};

/* Returns 0, or -ENOMEM with nothing allocated. */
int mrcd_core_init(struct mrcd_core *c, const struct mrcd_core_params *p);
void mrcd_core_fini(struct mrcd_core *c);

/* --- clients --------------------------------------------------------------------------- */

/* A control connection opened at now: its slot, or -ENOSPC (no slot), -EUSERS (its user
 * holds user_max_connections already). */
int mrcd_core_client_open(struct mrcd_core *c, int pid, uint32_t uid, uint64_t now);
/* It made a request (any: the daemon's I/O answers the operator's itself). */
void mrcd_core_client_heard(struct mrcd_core *c, unsigned slot);
/* A connection that made no request by its deadline (MRCD_FIRST_REQUEST_NS), to close,
 * one per call; -1: none. Its deadline counts in mrcd_core_control_timeout: call this first in
 * each turn, which also drops the entries of connections that spoke since. */
int mrcd_core_silent_client(struct mrcd_core *c, uint64_t now);
/* It closed (exit, kill): everything it owned is reclaimed, its QPs linger. */
void mrcd_core_client_close(struct mrcd_core *c, unsigned slot, uint64_t now);
/* What the core knows of a connection (pid, uid, whether it said HELLO). */
const struct mrcd_client *mrcd_core_client(const struct mrcd_core *c, unsigned slot);

/*
 * A library request (HELLO, REG_MR ... DESTROY_QP; the header already checked), with n_desc
 * descriptors the caller holds and the ops take by index. Returns the reply status (0 or
 * -errno) with the reply payload in out[0..*len).
 */
int mrcd_core_request(struct mrcd_core *c, unsigned slot, const struct mrc_ctl_hdr *req,
		      const uint8_t *payload, unsigned n_desc, uint8_t *out, size_t cap,
		      size_t *len, uint64_t now);

/* --- the wire and time, per shard -------------------------------------------------------- */
/*
 * Each worker calls these for its own shard only; shard 0's worker is the control thread,
 * which alone calls everything else in this header, while the other workers are stopped at
 * the end of a turn when there are any (io/daemon.h).
 */

/* The shard whose worker must take this datagram (a QP's, or the control thread's). */
unsigned mrcd_core_shard_of(const struct mrcd_core *c, const struct mrcd_dgram *g);
/* Whether taking it may change what other shards run (discovery, rdma_cm: their peers'
 * QPs): the control thread takes it with the other workers stopped. */
bool mrcd_core_rx_stops_workers(const struct mrcd_dgram *g);
/* One received datagram (DISCOVER or a QP's packet) on the shard's queue. False when it is
 * another shard's (mrcd_core_shard_of): the caller hands it over, nothing was done. */
bool mrcd_core_rx(struct mrcd_core *c, unsigned shard, const struct mrcd_dgram *g,
		  uint64_t now);
/* Timers, rings, transmit of the shard's QPs: the work due now. True when there was some. */
bool mrcd_core_pump(struct mrcd_core *c, unsigned shard, uint64_t now);
/* When mrcd_core_pump must run next for the shard at the latest (0: at once, UINT64_MAX:
 * never). */
uint64_t mrcd_core_next_timeout(const struct mrcd_core *c, unsigned shard);
/* A client's doorbell rang: its QPs of the shard it marked in its doorbell page are visited
 * at the shard's next pump (each shard takes only its own QPs' bits). */
void mrcd_core_doorbell(struct mrcd_core *c, unsigned shard, unsigned client, uint64_t now);
/*
 * The shard's worker is about to sleep until the next timeout or an event: the work queues it
 * read every turn want their doorbells again. False when work arrived meanwhile: pump first.
 */
bool mrcd_core_idle(struct mrcd_core *c, unsigned shard);
/* The shard has work for the control thread (an rdma_cm connection whose QP failed): its
 * worker wakes it; mrcd_core_control_timeout says 0 until the work is done. */
bool mrcd_core_shard_wants_control(const struct mrcd_core *c, unsigned shard);
/* What the shard has done: QPs it runs, pumps that found work, QPs visited (its load). */
void mrcd_core_shard_load(const struct mrcd_core *c, unsigned shard, uint64_t *qps,
			  uint64_t *busy_turns, uint64_t *visits);

/* --- the control thread's own work ---------------------------------------------------------- */

/* Discovery, rdma_cm, regions to unmap: the work due now. True when there was some. */
bool mrcd_core_control_pump(struct mrcd_core *c, uint64_t now);
uint64_t mrcd_core_control_timeout(const struct mrcd_core *c);

/* --- operators and the daemon ---------------------------------------------------------- */

/* Asks the peer at addr for its planes (what a QP naming that GID does; --discover).
 * Returns 0, -ENOSPC (the peer table is full) or -EACCES (no allowed key may answer there). */
int mrcd_core_discover(struct mrcd_core *c, const struct mrcd_addr *addr, uint64_t now);
/* Drains (or restores) a local plane; -ENOENT for a plane not configured. */
int mrcd_core_drain_plane(struct mrcd_core *c, unsigned plane, bool drained);
/* The configuration changed what may change at run time (peer prefixes, rx capacity). */
void mrcd_core_reload(struct mrcd_core *c);
/* What the control replies count starts from zero; the exported totals go on. */
void mrcd_core_stat_reset(struct mrcd_core *c);
/* The control thread's counters and every shard's, added up. */
void mrcd_core_stats(const struct mrcd_core *c, struct mrcd_stats *total);
/* Stopping: every QP enters ERR, clients see flushes, peers hear CLOSE at the next pump. */
void mrcd_core_flush_all(struct mrcd_core *c, uint64_t now);

/* --- reports (core/report.c) ----------------------------------------------------------- */

/* The parts of a status reply the core knows; the caller adds backend, uptime, planes. */
void mrcd_core_status(const struct mrcd_core *c, struct mrc_ctl_status *s);
/*
 * What one user may see of others: an operator (viewer NULL) everything; anyone else (*viewer
 * their uid) only their own QPs and paths, and the peers without their node ids, from which
 * with QP numbers the sequence numbers derive (SPEC R-116) [issue 20].
 */
size_t mrcd_core_peers_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			     size_t cap);
size_t mrcd_core_qps_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			   size_t cap);
/* rdma_cm ids (cm.c): listeners, connections, and those the daemon keeps for a gone client. */
size_t mrcd_core_cm_ids_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			      size_t cap);
/* Each user with a connection: what it holds, its limits (users.c). */
size_t mrcd_core_users_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			     size_t cap);
/* Every QP's paths, or only those of *qpn. */
size_t mrcd_core_paths_reply(const struct mrcd_core *c, const uint32_t *viewer,
			     const uint32_t *qpn, uint8_t *buf, size_t cap, uint64_t now);
/* The core's metric families, Prometheus text; returns the bytes written. */
size_t mrcd_core_metrics(const struct mrcd_core *c, char *buf, size_t cap);

#endif /* METAROCE_DAEMON_CORE_CORE_H */
