/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's connection manager (SPEC 17), sans I/O like the rest of the core: rdma_cm ids
 * and event channels of the clients, the port spaces, and the REQ/REP/RTU/REJ/DREQ/DREP
 * exchange with the peers' managers in UD datagrams between the daemons' QP 1, each retried
 * on a timer until answered. Events go to the channels through ops->record; a channel that
 * takes none keeps them in order here until it does.
 */
#ifndef METAROCE_DAEMON_CORE_CM_H
#define METAROCE_DAEMON_CORE_CM_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/cm.h>

#include "core/tables.h"
#include "proto/cm.h"

#define MRCD_MAX_CM_IDS 4096
#define MRCD_CM_SLOT_BITS 12
_Static_assert(MRCD_MAX_CM_IDS == 1u << MRCD_CM_SLOT_BITS, "an id's slot is its low bits");
#define MRCD_MAX_CM_CHANNELS 4096
#define MRCD_CLIENT_MAX_CM_IDS (MRCD_MAX_CM_IDS / 2)
#define MRCD_CM_PORT_BUCKETS 1024
#define MRCD_CM_CONN_BUCKETS 4096
/* A message unanswered is sent again after 100 ms, doubling to 1 s, 8 times in all: the
 * last at 4.5 s, the connection failing at 5.5 s. */
#define MRCD_CM_RETRY_NS 100000000ull
#define MRCD_CM_RETRY_MAX_NS 1000000000ull
#define MRCD_CM_TRIES 8
/* How long a connection that ended answers late messages of its peer: longer than a peer
 * retries, so no retry finds the connection forgotten. */
#define MRCD_CM_TIMEWAIT_NS 6000000000ull
/* Events a client's channels keep while its readers do not read; one more is dropped, and
 * said. */
#define MRCD_CM_CLIENT_MAX_PENDING 4096
#define MRCD_CLIENT_MAX_CM_CHANNELS 512
/* The ephemeral ports of rdma_bind_addr with port 0, as Linux's ip_local_port_range. */
#define MRCD_CM_PORT_MIN 32768
#define MRCD_CM_PORT_MAX 60999
/* The owner of an id that outlived its client to finish a disconnect or a time-wait. */
#define MRCD_CM_DAEMON (-2)

struct mrcd_cm_pending {
	struct mrcd_cm_pending *next;
	struct mrc_cm_event ev;
};

struct mrcd_cm_channel {
	int owner;		/* client slot; -1: free */
	uint32_t handle;
	int fd;			/* as io keeps it */
	unsigned n_ids;
	struct mrcd_cm_pending *head, *tail; /* what it did not take yet, in order */
	unsigned n_pending;
	bool blocked_listed;	/* on the manager's blocked list */
	bool gone;		/* its reader closed it: nothing more is offered */
};

struct mrcd_cm_id {
	int owner;		/* client slot; MRCD_CM_DAEMON; -1: free */
	uint32_t handle;	/* also its communication id on the wire */
	int channel;		/* slot; -1: none (the daemon's) */
	uint8_t ps;		/* MRC_CM_PS_* */
	uint8_t state;		/* enum mrc_ctl_cm_state */
	bool bound;
	bool any_addr;		/* bound to every local address */
	uint8_t local_addr[16];
	uint16_t local_port;
	uint8_t remote_addr[16];
	uint16_t remote_port;
	uint32_t backlog, pending; /* a listener's */
	int listener;		/* a request's listener slot until accepted or rejected; -1 */
	uint64_t peer_node;	/* the peer daemon's node id */
	uint32_t remote_id;	/* the peer's communication id; 0: not known yet */
	uint32_t qpn, remote_qpn, qkey, remote_qkey;
	uint8_t resp_res, init_depth, retry, rnr, flags;
	/* what a timeout sends again (REQ, REP, DREQ, SIDR_REQ); its private data */
	uint8_t msg_type;
	uint8_t reject_status;	/* a REJ or SIDR_REP sent: what a duplicate REQ hears again */
	uint8_t private_len;
	uint8_t private_data[MRC_CM_PRIVATE_MAX];
	uint8_t tries;
	uint64_t deadline;	/* 0: no timer */
	unsigned heap_at;
	int port_next, conn_next; /* hash chains; -1 ends */
	bool in_port_hash, in_conn_hash;
	uint64_t route_deadline; /* ROUTING: when discovery has had its time */
	struct mrcd_ud_route route;
};

struct mrcd_cm_stats {
	uint64_t tx[MRC_CM_TYPE_MAX + 1], rx[MRC_CM_TYPE_MAX + 1];
	uint64_t retransmits;
	uint64_t timeouts;	   /* connections that failed for want of an answer */
	uint64_t malformed[MRC_CM_E_MAX + 1];
	uint64_t stray;		   /* well formed, naming no connection or from an unknown node */
	uint64_t backlog_drops;	   /* REQs a full listener did not take (the peer retries) */
	uint64_t events, events_dropped;
	uint64_t connections;	   /* established, both sides */
};

struct mrcd_cm {
	struct mrcd_cm_id *ids;
	uint32_t gen[MRCD_MAX_CM_IDS]; /* of each slot's latest handle: never its next */
	struct mrcd_cm_channel *channels;
	unsigned n_ids, n_channels, n_routing;
	uint16_t client_ids[MRCD_MAX_CLIENTS]; /* ids each client holds */
	uint16_t client_channels[MRCD_MAX_CLIENTS]; /* event channels each client holds */
	uint16_t client_pending[MRCD_MAX_CLIENTS]; /* events its channels hold unread */
	uint64_t next_drop_log_ns;	/* a dropped event is said once a second at most */
	int port_hash[MRCD_CM_PORT_BUCKETS];
	int conn_hash[MRCD_CM_CONN_BUCKETS];
	uint16_t heap[MRCD_MAX_CM_IDS]; /* ids with a timer, earliest deadline first */
	unsigned n_heap;
	uint16_t blocked[MRCD_MAX_CM_CHANNELS]; /* channels holding events */
	unsigned n_blocked;
	uint64_t next_flush_ns;
	uint32_t seq;		/* the psn of the next CM datagram */
	struct mrcd_cm_stats stats;
	uint8_t buf[2048];
};

struct mrcd_core;

/* --- cm_table.c: the manager's tables, its timers and its channels ----------------------- */

int cm_table_init(struct mrcd_cm *m);
/* A free id for owner (state IDLE, nothing bound), or NULL when none is left. */
struct mrcd_cm_id *cm_id_new(struct mrcd_core *c, int owner, int channel, uint8_t ps);
/* Out of every table, its timer stopped, its channel's count down, the slot free. */
void cm_id_free(struct mrcd_core *c, struct mrcd_cm_id *id);
struct mrcd_cm_id *cm_id_by_handle(struct mrcd_cm *m, uint32_t handle);
/* The client's id, or NULL. */
struct mrcd_cm_id *cm_id_of(struct mrcd_cm *m, int owner, uint32_t handle);
/* Its channel for the daemon, which keeps it from now on (no more events). */
void cm_id_orphan(struct mrcd_core *c, struct mrcd_cm_id *id);
void cm_id_set_channel(struct mrcd_core *c, struct mrcd_cm_id *id, int channel);

/* Ports: whether (ps, port) is taken for addr (any: every address); the listener that takes a
 * request for (ps, port) at addr. */
bool cm_port_taken(struct mrcd_cm *m, uint8_t ps, uint16_t port, const uint8_t addr[16],
		   bool any);
void cm_port_insert(struct mrcd_cm *m, struct mrcd_cm_id *id);
struct mrcd_cm_id *cm_listener(struct mrcd_cm *m, uint8_t ps, uint16_t port,
			       const uint8_t addr[16]);
/* Connections by the peer's node and its communication id. */
void cm_conn_insert(struct mrcd_cm *m, struct mrcd_cm_id *id);
struct mrcd_cm_id *cm_conn_find(struct mrcd_cm *m, uint64_t node, uint32_t remote_id);

/* Timers: at most one per id. */
void cm_timer_set(struct mrcd_cm *m, struct mrcd_cm_id *id, uint64_t deadline);
void cm_timer_stop(struct mrcd_cm *m, struct mrcd_cm_id *id);
/* An id whose deadline is at or before now, its timer stopped; NULL when none. */
struct mrcd_cm_id *cm_timer_due(struct mrcd_cm *m, uint64_t now);
uint64_t cm_timer_next(const struct mrcd_cm *m);

/* Channels. */
int cm_channel_new(struct mrcd_core *c, int owner, int fd, uint32_t *handle);
/* The id's events the old channel still holds follow it to its new one, in order. */
void cm_channel_move_events(struct mrcd_core *c, const struct mrcd_cm_id *id, int from, int to);
struct mrcd_cm_channel *cm_channel_of(struct mrcd_cm *m, int owner, uint32_t handle);
void cm_channel_free(struct mrcd_core *c, struct mrcd_cm_channel *ch);
/* An event on the id's channel (none: dropped): written, or kept in order until it is. */
void cm_tell(struct mrcd_core *c, const struct mrcd_cm_id *id, struct mrc_cm_event *ev);
/* Channels holding events, offered them again. */
void cm_flush_blocked(struct mrcd_core *c, uint64_t now);
uint64_t cm_flush_next(const struct mrcd_cm *m);

/* --- cm_steps.c: the protocol's steps ---------------------------------------------------- */

bool cm_connected_ps(uint8_t ps); /* TCP, IB: RC connections; else datagram (SIDR) */
bool cm_known_ps(uint8_t ps);
bool cm_any_addr(const uint8_t a[16]); /* 0.0.0.0 or :: */
unsigned cm_slot_of(const struct mrcd_cm_id *id);
/* An event of `kind` about the id; with what a peer's message carried (its private data and
 * parameters; listen_id for a CONNECT_REQUEST). */
void cm_tell_kind(struct mrcd_core *c, const struct mrcd_cm_id *id, uint32_t kind,
		  int32_t status);
struct mrc_cm;
void cm_tell_msg(struct mrcd_core *c, const struct mrcd_cm_id *id, uint32_t kind,
		 int32_t status, const struct mrc_cm *m, uint32_t listen_id);
/* The id's message of `type` to its peer, with its parameters and this private data. */
void cm_send(struct mrcd_core *c, struct mrcd_cm_id *id, uint8_t type, uint32_t status,
	     const uint8_t *private_data, uint8_t private_len, uint64_t now);
/* The message a timer sends again (msg_type, with the private data kept for it). */
void cm_send_kept(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now);
/* A message that must be answered: kept, sent, and sent again until it is. */
void cm_send_retried(struct mrcd_core *c, struct mrcd_cm_id *id, uint8_t type,
		     const uint8_t *private_data, uint8_t private_len, uint64_t now);
/* An answer to a message that names no id here (or a refusal before one is made). */
struct mrcd_dgram;
void cm_answer(struct mrcd_core *c, const struct mrcd_dgram *g, const struct mrc_cm *in,
	       uint8_t type, uint32_t status, uint64_t now);
void cm_enter(struct mrcd_core *c, struct mrcd_cm_id *id, uint8_t state);
/* A request leaves its listener's count (accepted, rejected, gone). */
void cm_unlist(struct mrcd_core *c, struct mrcd_cm_id *id);
/* Over for the client: TIMEWAIT, answering late messages while kept and 1 s after. */
void cm_end(struct mrcd_core *c, struct mrcd_cm_id *id, uint64_t now);
/* Refuses a request (passive) or a REP (active); the answer is kept for duplicates. */
void cm_refuse(struct mrcd_core *c, struct mrcd_cm_id *id, uint32_t status,
	       const uint8_t *private_data, uint8_t private_len, uint64_t now);
/* The node discovery knows at addr (this daemon's for its own); 0: none known. */
uint64_t cm_node_at(struct mrcd_core *c, const uint8_t addr[16]);
/* Whether messages can go to addr now: this daemon, or a peer whose record stands. */
bool cm_routed(struct mrcd_core *c, const uint8_t addr[16], uint64_t now);
/* An RC connection is established: counted, and tied to its QP's failure. */
void cm_established(struct mrcd_core *c, struct mrcd_cm_id *id);

#endif /* METAROCE_DAEMON_CORE_CM_H */
