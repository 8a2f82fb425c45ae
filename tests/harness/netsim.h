/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A virtual-time network for driving real engine connections (lib/proto/conn.c) in tests,
 * property tests and the engine report. Not part of the library: the engine must not know
 * it exists.
 *
 * Topology: H hosts, P planes. A packet from host a to host b on plane p crosses three
 * stages: a's uplink on p, one of L core links of plane p chosen by an ECMP hash of the
 * flow (source host, destination host, UDP source port), and b's downlink on p. Every stage
 * is a FIFO with a rate, a buffer (tail drop), an ECN marking threshold, a propagation
 * delay with optional jitter, and impairments: random loss, Gilbert-Elliott burst loss,
 * duplication, corruption (one flipped bit) and blackholing.
 *
 * The uplink is the host's NIC: it neither marks nor drops, it pushes back. An endpoint is not
 * asked for packets while its uplink holds SIM_TX_RING_BYTES, as a daemon's send() would block.
 *
 *      host a                      plane p                        host b
 *   [conn]--uplink(a,p)--+--core(p,0)--+--downlink(b,p)--[conn]
 *                        +--core(p,1)--+
 *                        +--   ...   --+        (ECMP by source port)
 */
#ifndef METAROCE_TESTS_NETSIM_H
#define METAROCE_TESTS_NETSIM_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/conn.h"

#define SIM_MAX_HOSTS 72
#define SIM_MAX_PLANES 8
#define SIM_MAX_CORE 8
#define SIM_MAX_ENDPOINTS 256
#define SIM_MAX_MRS 8
#define SIM_TX_RING_BYTES (256 * 1024) /* a host NIC's transmit queue: above it, send() waits */

struct sim_stage_params {
	uint64_t delay_ns;     /* propagation */
	uint64_t jitter_ns;    /* extra delay, uniform in [0, jitter) (reorders) */
	uint64_t rate_bps;     /* 0: infinitely fast */
	uint32_t buffer_bytes; /* 0: unbounded */
	uint32_t ecn_bytes;    /* mark CE above this backlog; 0: never */
	double loss;	       /* independent loss probability */
	double burst_enter;    /* Gilbert-Elliott: P(good -> bad) per packet */
	double burst_exit;     /* P(bad -> good); every packet is lost while bad */
	double duplicate;
	double corrupt;
	bool blackhole;
	uint32_t drop_above_bytes; /* drop packets longer: data lost, probes and ACKs pass; 0 none */
};

struct sim_stage {
	struct sim_stage_params p;
	uint64_t busy_until_ns;
	bool burst_bad;
	/* counters */
	uint64_t packets, bytes, dropped_loss, dropped_full, dropped_blackhole, marked,
		duplicated, corrupted;
	uint64_t max_backlog_bytes;
};

struct sim_mr {
	uint32_t key;
	uint8_t *host;
	uint32_t len;
	unsigned access; /* MRC_ACCESS_* */
	bool window;	 /* a memory window's key: the peer may invalidate it (SEND_INV) */
};

struct sim;

struct sim_endpoint {
	struct sim *sim;
	unsigned index;
	unsigned host;
	uint32_t qpn;
	struct mrc_conn *conn; /* NULL once destroyed (sim_destroy) and gone */
	struct sim_mr mrs[SIM_MAX_MRS];
	unsigned n_mrs;
	/* completions seen */
	uint64_t send_completions, recv_completions, errors;
	uint64_t completed_bytes; /* send-queue completions: bytes of successful requests */
	struct mrc_completion last_wc;
	bool last_from_recv;
	void (*on_complete)(struct sim_endpoint *ep, bool from_recv, const struct mrc_completion *wc);
	void *user;
	bool dirty; /* may have something to send */
	uint64_t blocked_until_ns; /* its uplink is full: nothing to do before this */
	uint64_t fast_path_placed; /* packets sim_config.fast_path_placement wrote for it */
	uint64_t drops[MRC_DROP_REASON_MAX + 1]; /* its QP's refusals, by reason */
};

struct sim_event;

struct sim {
	uint64_t now_ns;
	uint64_t rng;
	unsigned n_hosts, n_planes, n_core;
	struct sim_stage uplink[SIM_MAX_HOSTS][SIM_MAX_PLANES];
	struct sim_stage downlink[SIM_MAX_HOSTS][SIM_MAX_PLANES];
	struct sim_stage core[SIM_MAX_PLANES][SIM_MAX_CORE];
	struct sim_endpoint *eps[SIM_MAX_ENDPOINTS];
	unsigned n_eps;
	struct mrc_rate_domain rate[SIM_MAX_HOSTS];
	/* event queue: binary min-heap on (time, seq) */
	struct sim_event **heap;
	unsigned heap_len, heap_cap;
	uint64_t seq;
	/* host-level counters */
	uint64_t delivered, undecodable, unroutable;
	uint64_t events;
	bool fast_path_placement, fast_path_poison;
};

struct sim_config {
	unsigned hosts, planes, core_links;
	struct sim_stage_params uplink, core, downlink;
	uint64_t rx_capacity_kbps; /* per host rate-hint capacity; 0: no hints */
	uint64_t seed;
	/* Play the XDP fast path: WRITE and READ_RESP payloads of new PSNs are written into
	 * memory here and handed to the engine as placed (it copies nothing). */
	bool fast_path_placement;
	bool fast_path_poison;	/* ... writing every byte plus one: proves the engine did not */
};

void sim_config_default(struct sim_config *cfg);
struct sim *sim_new(const struct sim_config *cfg);
void sim_free(struct sim *sim);

/* Bytes a stage holds queued now (0 for an infinitely fast one). */
uint64_t sim_stage_backlog(const struct sim *sim, const struct sim_stage *s);

/* Every stage of a plane (uplinks, core links, downlinks) */
struct sim_stage *sim_core(struct sim *sim, unsigned plane, unsigned link);

/*
 * Creates a connected pair of QPs between two hosts with one path per (plane, k) for
 * k < paths_per_plane, starting from base (whose QPNs, PSNs and tunables are kept).
 */
void sim_connect(struct sim *sim, unsigned host_a, unsigned host_b,
		 const struct mrc_conn_config *base, unsigned paths_per_plane,
		 struct sim_endpoint **a, struct sim_endpoint **b);

/*
 * The application destroys an endpoint's QP. linger: as a daemon does (mrc_conn_close; the
 * connection is freed once CLOSED and quiet); else its connection goes at once, and packets
 * for it are unroutable from then on.
 */
void sim_destroy(struct sim_endpoint *ep, bool linger);

/* The core link of a plane that ECMP picks for a flow. */
unsigned sim_core_link_of(const struct sim *sim, unsigned src_host, unsigned dst_host,
			  uint16_t sport);

/* Registers memory with an endpoint; returns its key. */
uint32_t sim_register(struct sim_endpoint *ep, void *host, uint32_t len, unsigned access);

/* The same for a memory window: a key the peer may invalidate with SEND_INV. */
uint32_t sim_register_window(struct sim_endpoint *ep, void *host, uint32_t len, unsigned access);

/* Advances virtual time, moving packets and firing timers, until stop(sim, arg) or until. */
void sim_run(struct sim *sim, uint64_t until_ns, bool (*stop)(struct sim *, void *), void *arg);

/* Deterministic random numbers for tests. */
uint64_t sim_random(struct sim *sim);
double sim_uniform(struct sim *sim);

#endif /* METAROCE_TESTS_NETSIM_H */
