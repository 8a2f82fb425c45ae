/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the core keeps for its clients: each control connection (a client), and the memory
 * regions, completion queues and QPs it created, all reclaimed when it goes. Everything a
 * client wrote (ring indices, descriptors, keys, addresses) is checked before use; a
 * client's mistake ends in an error completion or a refused request for that client, never
 * in a fault of the daemon or an effect on another client.
 */
#ifndef METAROCE_DAEMON_CORE_TABLES_H
#define METAROCE_DAEMON_CORE_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/ctl.h>
#include <metaroce/shm.h>
#include <metaroce/xdp.h>

#include "core/linger.h"
#include "core/sched.h"
#include "proto/conn.h"
#include "proto/random.h"
#include "proto/ratehint.h"
#include "shm/ring.h"

#define MRCD_MAX_CLIENTS 256
/* the XDP program's tables are indexed by the same slots (metaroce/xdp.h) */
#define MRCD_MAX_QPS MRC_XDP_MAX_QPS
#define MRCD_MAX_CQS 4096
#define MRCD_MAX_SRQS 1024
#define MRCD_MAX_MRS MRC_XDP_MAX_MRS
#define MRCD_MAX_RING_ENTRIES MRC_CTL_MAX_RING_ENTRIES

/* A QPN or a CQ handle is (generation << MRCD_HANDLE_SLOT_BITS | slot); a QPN's generation
 * and slot are drawn at random, so no QPN tells another (qp.c). */
#define MRCD_HANDLE_SLOT_BITS 12
_Static_assert(MRCD_MAX_QPS == 1u << MRCD_HANDLE_SLOT_BITS, "a QPN's slot is its low bits");
_Static_assert(MRCD_MAX_CQS == 1u << MRCD_HANDLE_SLOT_BITS, "a CQ handle's slot is its low bits");
static inline unsigned mrcd_qp_slot(uint32_t qpn)
{
	return MRC_QP_SLOT(qpn);
}

/* A control connection; a library client once it has said HELLO. */
struct mrcd_client {
	bool open;	/* the slot is a connection */
	bool library;	/* said HELLO: has a doorbell, may create objects */
	struct mrc_doorbell_page *doorbells; /* shared with it: which QPs it rang for */
	int32_t pid;
	uint32_t uid;
	unsigned channels; /* completion-channel sockets the daemon holds for it */
	unsigned n_qps, n_cqs, n_mrs; /* n_mrs counts retired regions until they are unmapped */
	unsigned n_mws;	/* memory windows: with n_mrs, at most MRCD_CLIENT_MAX_MRS */
	unsigned n_srqs;
	unsigned n_retired;
	uint64_t page_bytes; /* page maps handed to it (MRC_CTL_PAGES) since it connected */
	uint64_t registered_bytes; /* the spans of its regions, which the daemon maps */
	uint64_t silent_until; /* its first request is due by then; 0: it made one */
};

/*
 * A connection must make its first request within this (libmetaroce says HELLO, metaroce-ctl
 * asks, at once), or it is closed: connections that never speak would otherwise hold every
 * slot and lock every client out.
 */
#define MRCD_FIRST_REQUEST_NS 2000000000ull

/* Connections yet to speak, in the order they opened (so in deadline order). */
struct mrcd_silent_queue {
	uint16_t slot[MRCD_MAX_CLIENTS];
	uint64_t until[MRCD_MAX_CLIENTS]; /* the deadline it was queued with: a reused slot's
					     entry is stale when they differ */
	unsigned head, n;
};

/* What one client may hold: half of each table, so one cannot starve all the others. */
#define MRCD_CLIENT_MAX_CHANNELS 256
#define MRCD_CLIENT_MAX_QPS MRC_CTL_CLIENT_MAX_QPS
#define MRCD_CLIENT_MAX_CQS MRC_CTL_CLIENT_MAX_CQS
#define MRCD_CLIENT_MAX_MRS MRC_CTL_CLIENT_MAX_MRS
#define MRCD_CLIENT_MAX_SRQS MRC_CTL_CLIENT_MAX_SRQS
_Static_assert(MRCD_CLIENT_MAX_QPS <= MRCD_MAX_QPS / 2 && MRCD_CLIENT_MAX_CQS <= MRCD_MAX_CQS / 2 &&
		       MRCD_CLIENT_MAX_MRS <= MRCD_MAX_MRS / 2,
	       "one client cannot take the daemon's whole table");

/*
 * A slot of the key table: a memory region, or a memory window (windows.c), which maps
 * nothing of its own but opens onto part of a region while bound [SPEC 4.9].
 */
struct mrcd_mr {
	int owner;	/* client slot; -1: free */
	uint32_t pd;	/* the client's protection domain: only its QPs reach the region */
	uint32_t key;	/* lkey == rkey; a window's current key */
	uint64_t iova, length; /* a window: the range it is bound to, as peers address it */
	uint32_t access;
	uint8_t *span;	/* the segments mapped back to back */
	size_t span_len;
	uint8_t *base;	/* iova's byte 0 inside span; a window: inside its region's */
	bool retired;	/* deregistered; unmapped once the client's QPs hold no pointer */
	uint32_t n_windows; /* a region: windows bound to it, which keep it registered */
	uint8_t mw_type;    /* enum mrc_ctl_mw_type for a window; 0 for a region */
	bool bound;	    /* a window: open onto region `region` now */
	uint32_t region;    /* a bound window's region slot */
	uint32_t bound_qpn; /* a bound type 2 window: the only QP it serves */
};

struct mrcd_cq {
	int owner;
	uint32_t handle;
	void *mem;
	size_t mem_len;
	struct mrc_ring ring;
	int channel;	   /* the client's completion channel, as io keeps it; -1: none */
	uint64_t overruns; /* completions lost to a full CQ */
	bool notify_pending; /* an event its full channel did not take yet (on notify_list) */
	uint32_t lock;	   /* the producer's, when QPs of several workers complete into it */
	uint32_t n_users;  /* QPs completing into it: it cannot be destroyed before them */
};

/* A shared receive queue: a receive ring its QPs take from when a message needs a receive. */
struct mrcd_srq {
	int owner;	/* client slot; -1: free */
	uint32_t handle;
	uint32_t pd;	/* its receive buffers' protection domain */
	void *mem;
	size_t mem_len;
	struct mrc_ring ring;
	uint32_t limit;	/* IBV_EVENT_SRQ_LIMIT_REACHED below this many entries; 0: disarmed */
	int channel;	/* the client's async event socket, as io keeps it */
	uint32_t n_users; /* QPs attached: it cannot be destroyed before them */
	unsigned shard;	  /* theirs: one worker takes its receives (qp.c) */
};

/*
 * A QP's counters as they read at the last `stat reset`: the control replies show what came
 * since, while the exported totals, which monitoring takes rates of, never go back.
 */
struct mrcd_qp_base {
	uint64_t completions, error_completions;
	uint64_t tx_packets, tx_retransmits, rx_packets, rx_bytes;
	uint64_t path_tx[MRC_MAX_PATHS], path_retx[MRC_MAX_PATHS], path_ecn[MRC_MAX_PATHS];
};

/* The counts of QPs that are gone, so the exported totals do not fall when one goes. */
struct mrcd_retired {
	uint64_t completions, error_completions;
	uint64_t path_tx[MRC_MAX_PLANES], path_retx[MRC_MAX_PLANES], path_ecn[MRC_MAX_PLANES];
};

struct mrcd_core;

/* Where a UD QP's datagrams to one destination go (ud.c), kept while nothing changes. */
struct mrcd_ud_route {
	bool valid;
	bool named;	    /* discovery did not answer: the named address on the plane reaching it */
	uint8_t dgid[16];   /* the destination the application named */
	int peer;	    /* its peer table index; -1: this node */
	uint32_t planes;    /* the planes datagrams rotate over */
	uint16_t port;
	uint16_t max_payload;
	uint64_t epoch;	    /* the core's peers_epoch when it was made */
};

struct mrcd_qp {
	struct mrcd_core *core;	/* for the engine's callbacks */
	int owner;
	uint8_t type;		/* enum mrc_ctl_qp_type */
	uint32_t pd;		/* its client's protection domain */
	int srq;		/* the SRQ slot its receives come from; -1: its own RQ */
	uint32_t n_windows;	/* type 2 windows bound through it: unbound when it goes */
	uint32_t qpn;
	unsigned shard;		/* the worker that runs it: its slot's (shard.h) */
	uint8_t state;		/* enum mrc_ctl_qp_state */
	int send_cq, recv_cq;	/* CQ slots */
	bool sq_sig_all;
	void *sq_mem, *rq_mem;
	size_t sq_len, rq_len;
	struct mrc_ring sq, rq;
	uint64_t *sq_wr_id, *rq_wr_id; /* the application's wr_id per ring slot in the engine */
	struct mrc_ctl_connect_qp req;
	struct mrc_ctl_ready_qp ready;
	bool ready_pending;	/* RTS came while the peer was still being resolved */
	struct mrc_conn *conn;
	bool fast;		/* the XDP program places its data packets */
	uint32_t fast_base;	/* the receive window base the program was last told */
	bool fast_reads;	/* the program may hold READs of this QP (core_fast_reads_sync) */
	uint32_t fast_sq_oldest; /* the oldest incomplete send msn the program was last told */
	uint32_t fast_read_next; /* the first send msn not yet looked at for the program */
	uint64_t peer_node;	/* the peer daemon's node id (discovery); 0 when unknown */
	bool auth_ready;	/* auth_tx and auth_rx hold its keys with the peer QP */
	struct mrc_auth_key auth_tx, auth_rx;
	struct mrc_seal_key seal_tx, seal_rx; /* with auth = full */
	uint16_t peer_port;
	uint16_t peer_max_payload;
	uint32_t peer_planes;	/* bit i: peer_addr[i] is the peer on our plane i */
	uint32_t peer_drained;	/* bit i: the peer announced plane i drained */
	uint8_t peer_addr[MRC_MAX_PLANES][16];
	uint64_t completions, error_completions;
	struct mrcd_qp_base base; /* at the last stat reset */
	uint64_t resolve_deadline_ns;
	bool cq_overrun;	/* a completion found its CQ full */
	bool path_report_listed; /* on path_report: a path's state differs from path_seen */
	uint8_t path_seen[MRC_MAX_PATHS]; /* path states as last reported to monitors */
	unsigned active_at;	/* its place in the tables' active list */
	/* where this QP stood at its client's latest ibv_dereg_mr: work taken before it may
	 * point into the region, so the region stays mapped until all of it is done */
	uint32_t retire_sq, retire_rq, retire_rr;
	/* a UD QP's (ud.c) */
	uint32_t qkey;		/* what arriving datagrams must carry */
	uint32_t ud_seq;	/* datagrams sent, from sq_psn: the next one's psn and path */
	bool ud_waiting;	/* the send ring's head waits for discovery, until
				 * resolve_deadline_ns */
	struct mrcd_ud_route ud_route;
	uint32_t cm_id;		/* the rdma_cm connection it carries (cm.h); 0: none */
};

struct mrcd_dgram;

struct mrcd_tables {
	struct mrcd_client client[MRCD_MAX_CLIENTS];
	struct mrcd_silent_queue silent;
	struct mrcd_mr *mrs;
	struct mrcd_cq *cqs;
	struct mrcd_srq *srqs;
	struct mrcd_qp *qps;
	uint32_t generation; /* mixed into new handles so a stale one never names a new object */
	unsigned n_mrs, n_cqs, n_qps, n_mws;
	unsigned next_mr_slot; /* where the search for a free region slot starts */
	uint16_t active[MRCD_MAX_QPS]; /* slots of the n_qps live QPs (reports, operators) */
	struct mrcd_retired retired;	    /* what destroyed QPs had counted */
	unsigned n_retired;  /* deregistered MRs still mapped */
	uint64_t next_reap_ns;
	uint64_t mapped_bytes;
	struct mrc_prf rng;  /* QPNs, keys' random bits, connections' seeds */
	uint16_t qpn_generation[MRCD_MAX_QPS]; /* of each slot's latest QPN: never its next */
};

#endif /* METAROCE_DAEMON_CORE_TABLES_H */
