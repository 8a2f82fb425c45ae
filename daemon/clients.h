/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What metaroced keeps for its library clients: memory regions, completion queues and QPs,
 * each owned by the control connection that created it and reclaimed when that connection
 * closes. The QPs are where the engine meets the backend: this file's loop feeds each QP's
 * send and receive rings into its mrc_conn, hands received datagrams to it, pushes its
 * packets out in batches and turns its completions into CQ entries.
 *
 * Everything a client wrote (ring indices, descriptors, keys, addresses) is checked before
 * use; a client's mistake ends in an error completion or a refused request for that client,
 * never in a fault of the daemon or an effect on another client.
 */
#ifndef METAROCE_DAEMON_CLIENTS_H
#define METAROCE_DAEMON_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <metaroce/ctl.h>
#include <metaroce/shm.h>
#include <metaroce/xdp.h>

#include "linger.h"
#include "proto/codec.h"
#include "proto/conn.h"
#include "proto/ratehint.h"
#include "shm/ring.h"

struct mrcd;
struct mrcd_dgram;

#define MRCD_MAX_CLIENTS 256
/* the XDP program's tables are indexed by the same slots (metaroce/xdp.h) */
#define MRCD_MAX_QPS MRC_XDP_MAX_QPS
#define MRCD_MAX_CQS 4096
#define MRCD_MAX_MRS MRC_XDP_MAX_MRS
#define MRCD_MAX_RING_ENTRIES 16384

/* A QPN or a CQ handle is (generation << MRCD_HANDLE_SLOT_BITS | slot). */
#define MRCD_HANDLE_SLOT_BITS 12
_Static_assert(MRCD_MAX_QPS == 1u << MRCD_HANDLE_SLOT_BITS, "a QPN's slot is its low bits");
_Static_assert(MRCD_MAX_CQS == 1u << MRCD_HANDLE_SLOT_BITS, "a CQ handle's slot is its low bits");
static inline unsigned mrcd_qp_slot(uint32_t qpn)
{
	return MRC_QP_SLOT(qpn);
}

/* A control connection; a library client once it has said HELLO. */
struct mrcd_client {
	int fd;		/* -1: free slot */
	int doorbell_fd; /* the library's eventfd, written after it posts; -1: none */
	pid_t pid;
	uid_t uid;
	bool library;
	bool monitor;	   /* subscribed to events (metaroce-ctl monitor) */
	unsigned channels; /* completion-channel sockets the daemon holds for it */
	unsigned n_qps, n_cqs, n_mrs; /* n_mrs counts retired regions until they are unmapped */
	unsigned n_retired;
	uint64_t page_bytes; /* page maps handed to it (MRC_CTL_PAGES) since it connected */
};

/* What one client may hold: half of each table, so one cannot starve all the others. */
#define MRCD_CLIENT_MAX_CHANNEL_FDS 256
#define MRCD_CLIENT_MAX_QPS (MRCD_MAX_QPS / 2)
#define MRCD_CLIENT_MAX_CQS (MRCD_MAX_CQS / 2)
#define MRCD_CLIENT_MAX_MRS (MRCD_MAX_MRS / 2)

struct mrcd_mr {
	int owner;	/* client slot; -1: free */
	uint32_t key;	/* lkey == rkey */
	uint64_t iova, length;
	uint32_t access;
	uint8_t *span;	/* the segments mapped back to back */
	size_t span_len;
	uint8_t *base;	/* iova's byte 0 inside span */
	bool retired;	/* deregistered; unmapped once the client's QPs hold no pointer */
};

struct mrcd_cq {
	int owner;
	uint32_t handle;
	void *mem;
	size_t mem_len;
	struct mrc_ring ring;
	int channel_fd;	   /* the client's completion channel socket; -1: none */
	uint64_t overruns; /* completions lost to a full CQ */
	bool notify_pending; /* an event its full channel socket did not take yet */
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

struct mrcd_qp {
	struct mrcd *daemon;	/* for the engine's callbacks */
	int owner;
	uint32_t qpn;
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
	uint64_t peer_node;	/* the peer daemon's node id (discovery); 0 when unknown */
	uint16_t peer_port;
	uint16_t peer_max_payload;
	uint32_t peer_planes;	/* bit i: peer_addr[i] is the peer on our plane i */
	uint32_t peer_drained;	/* bit i: the peer announced plane i drained */
	uint8_t peer_addr[MRC_MAX_PLANES][16];
	uint64_t completions, error_completions;
	struct mrcd_qp_base base; /* at the last stat reset */
	uint64_t resolve_deadline_ns;
	bool cq_overrun;	/* a completion found its CQ full */
	uint8_t path_seen[MRC_MAX_PATHS]; /* path states as last reported to monitors */
	/* where this QP stood at its client's latest ibv_dereg_mr: work taken before it may
	 * point into the region, so the region stays mapped until all of it is done */
	uint32_t retire_sq, retire_rq, retire_rr;
};

struct mrcd_clients {
	struct mrcd_client client[MRCD_MAX_CLIENTS];
	struct mrcd_fastpath *fast; /* the backend's XDP fast path; NULL: none */
	struct mrcd_mr *mrs;
	struct mrcd_cq *cqs;
	struct mrcd_qp *qps;
	uint32_t generation; /* mixed into new handles so a stale one never names a new object */
	unsigned n_mrs, n_cqs, n_qps;
	unsigned next_mr_slot; /* where the search for a free region slot starts */
	unsigned next_qp_slot; /* and for a free QP slot */
	uint16_t active[MRCD_MAX_QPS]; /* slots of the n_qps live QPs: the pump walks these */
	struct mrcd_linger_table lingering; /* destroyed QPs still answering their peers */
	struct mrcd_retired retired;	    /* what destroyed QPs had counted */
	struct mrc_rate_domain rate;   /* this host's receive capacity, shared by rate hints */
	unsigned n_retired;  /* deregistered MRs still mapped */
	unsigned n_notify_pending;
	uint64_t next_reap_ns;
	uint64_t next_path_scan_ns;
	uint64_t mapped_bytes;
	uint64_t seed;
	uint8_t *tx_buf;     /* MRCD_TX_BATCH packets of mtu bytes */
	/* Datagrams the engine produced and the wire has not taken yet: a plane's local queue
	 * refused them (ENOBUFS, EAGAIN) and they wait, so back-pressure never turns into
	 * self-inflicted loss (flush_tx). Their bytes are in the first tx_queued slots of tx_buf. */
	struct mrcd_dgram *tx_dgrams;
	unsigned tx_queued;
	uint64_t tx_retry_ns; /* when to try a refused datagram again */
	uint64_t tx_held_since_ns[MRC_MAX_PLANES]; /* the plane's queue took nothing since */
	uint32_t tx_refusals[MRC_MAX_PLANES];	    /* ... and refused this many tries since */
	uint64_t tx_held_logged_ns;
	bool more_to_send;   /* the last pump stopped at its budget */
};

int mrcd_clients_init(struct mrcd *d);
void mrcd_clients_fini(struct mrcd *d);

/* A control connection closed: everything it owned is reclaimed. */
void mrcd_clients_gone(struct mrcd *d, unsigned slot);

/*
 * One library request (the header already checked by mrcd_control_check). fds are what came
 * with it; the handler takes the ones it keeps and sets them to -1. Returns the reply status
 * (0 or -errno) and fills out/out_len and out_fds/n_out_fds.
 */
int mrcd_clients_request(struct mrcd *d, unsigned slot, const struct mrc_ctl_hdr *req,
			 const uint8_t *payload, int *fds, unsigned n_fds, uint8_t *out,
			 size_t out_cap, size_t *out_len, int *out_fds, unsigned *n_out_fds);

/* A sequenced or QP-addressed datagram arrived. Returns false when no QP took it. */
bool mrcd_clients_recv(struct mrcd *d, const struct mrc_packet *pkt,
		       const struct mrcd_dgram *g, uint64_t now);

/* Rings in, timers, packets out: one turn for every QP. */
void mrcd_clients_pump(struct mrcd *d, uint64_t now);

uint64_t mrcd_clients_next_timeout(const struct mrcd *d);

/* A peer's discovery finished, changed or failed: QPs waiting on it go on. */
void mrcd_clients_peer_event(struct mrcd *d, unsigned peer, int event);

/* An operator drained or restored a plane (d->drained_planes says which now): every QP
 * follows. */
void mrcd_clients_drain_plane(struct mrcd *d);

/* stat reset: every QP's counters as the control replies show them start again from zero;
 * what the metrics export goes on counting. */
void mrcd_clients_reset_counters(struct mrcd *d);

/* Stopping: every QP enters the error state, so clients see flush completions. */
void mrcd_clients_flush_all(struct mrcd *d, uint64_t now);

size_t mrcd_clients_qps_reply(const struct mrcd *d, uint8_t *buf, size_t cap);
/* Every QP's paths, or only those of *qpn. */
size_t mrcd_clients_paths_reply(const struct mrcd *d, const uint32_t *qpn, uint8_t *buf,
				size_t cap);

#endif /* METAROCE_DAEMON_CLIENTS_H */
