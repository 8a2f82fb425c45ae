/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Two whole daemon cores in virtual time (daemon/core), each with a library client written
 * here against the shared-memory rings and the request ABI as libmetaroce speaks them, joined
 * by a datagram network that loses, duplicates and reorders: the world test_core_pair.c
 * runs its properties in. tests/harness/netsim drives engine connections directly; this
 * drives whole cores, so its network moves the datagrams the cores hand to their ops.
 */
#ifndef METAROCE_TESTS_UNIT_CORE_WORLD_H
#define METAROCE_TESTS_UNIT_CORE_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/cm.h>

#include "core/core.h"
#include "proto/auth.h"
#include "shm/ring.h"

#define PLANES 2
#define QPS 4
#define WRS 24		   /* per QP */
#define SLOT 8192u	   /* bytes of memory per work request */
#define REGION (1u << 20)  /* each client's registered memory */
#define MAX_SHM 64
#define US 1000ull
#define MS 1000000ull
#define SEC 1000000000ull

_Static_assert(QPS * WRS * SLOT <= REGION, "every request has a slot of its own");

struct world;

struct wr_plan {
	uint8_t opcode; /* MRC_SQ_* */
	uint32_t len;
	uint32_t imm;
};

struct client_qp {
	uint32_t qpn, bit;
	struct mrc_ring sq, rq;
	unsigned completed; /* send-queue completions seen, in order */
	unsigned received;  /* receive completions seen */
	unsigned failed;    /* of those, not successful */
};

struct client {
	bool open;
	int slot;
	struct mrc_doorbell_page *doorbells;
	uint8_t *mem, *original; /* the registered region, and what it held at first */
	struct mrc_ctl_mr keys;
	uint32_t cq_handle;
	struct mrc_ring cq;
	struct client_qp qp[QPS];
};

/* An rdma_cm event channel of a host's client: the records the core wrote to it. */
#define CM_CHANNELS 4
#define CM_EVENTS 512
struct cm_channel_log {
	struct mrc_cm_event ev[CM_EVENTS];
	unsigned n;
	bool deaf; /* takes no record: a reader that does not read */
	bool gone; /* its reader closed it */
};

/* What a request passes as its descriptor to be kept as an event channel. */
extern char world_channel_fd[1];

struct host {
	struct world *w;
	unsigned index;
	struct mrcd_config cfg;
	struct mrcd_core core;
	struct mrc_auth auth; /* with world.auth: its key pair, the world's cluster key */
	bool up;
	uint64_t node_id;
	/* the fake io: what the request in hand came with and what its reply takes along */
	void *req_desc;
	void *reply_mem[2];
	unsigned n_reply;
	void *shm[MAX_SHM];
	unsigned n_shm;
	unsigned regions_mapped, regions_unmapped;
	struct client cl;
	struct cm_channel_log chan[CM_CHANNELS];
	unsigned n_chan;
};

struct packet {
	uint64_t at, seq;
	unsigned to;
	struct mrcd_dgram g;
	uint8_t data[];
};

struct world {
	uint64_t now, rng, seq;
	enum mrc_auth_mode auth; /* the cores authenticate (SPEC 14.6) under one cluster key */
	unsigned shards;	 /* each core's (workers = N), all pumped in turn; 0: 1 */
	struct host h[2];
	struct wr_plan plan[QPS][WRS];
	/* the network: a min-heap of packets by (at, seq) */
	struct packet **heap;
	unsigned n_heap, cap_heap;
	double loss, duplicate;
	double refuse; /* the sender's local queue refuses a datagram (and its path's later ones) */
	uint64_t refusals;
	uint64_t jitter_ns;
	uint64_t busy_until[2][PLANES];
	unsigned doorbells[2][2]; /* per host: rung for a send queue [0], a receive queue [1] */
	bool disaster_done;
	bool struck_mid_transfer; /* A had requests outstanding when it struck */
	bool expect_success; /* every completion must be a success */
	uint32_t target_rkey; /* the key A's WRITEs and READs name; 0: B's region's */
	uint64_t delivered, lost;
};

/* A world of seed: both hosts up, the clients connected, each QP's plan drawn; and its end. */
void world_init(struct world *w, uint64_t seed);
/* ... whose cores authenticate their peers and packets (and seal them), or not */
void world_init_auth(struct world *w, uint64_t seed, enum mrc_auth_mode auth);
/* ... whose cores run their QPs in `shards` shards, as `workers = shards` would */
void world_init_shards(struct world *w, uint64_t seed, enum mrc_auth_mode auth, unsigned shards);
/* What a host's core still has going, over its shards: lingering QPs, ready slots, timers. */
unsigned world_lingering(const struct host *h);
void world_free(struct world *w);
uint64_t world_rnd(struct world *w);

/* A daemon's core comes up, or crashes (everything it held gone, its clients with it). */
void world_host_start(struct world *w, unsigned k);
void world_host_crash(struct world *w, unsigned k);
/* A control request of host h's client, as the library sends it; the reply into reply. */
int world_request(struct host *h, uint16_t type, const void *payload, uint32_t len,
		  void *desc, void *reply, size_t cap);
/* A ring the daemon's reply carried, attached as the library does (its side of it). */
void world_attach_ring(struct mrc_ring *r, void *mem, uint32_t entries, uint16_t kind);
void world_client_close(struct host *h);
/* A small RC QP of the host's client on CQ cq: 0 with its number, or the core's refusal. */
int world_create_rc_qp(struct host *h, uint32_t cq, uint32_t *qpn);
/* As the library does after producing: the doorbell only when the daemon asked for it. */
void world_ring(struct host *h, struct client_qp *x, struct mrc_ring *r);
/* The work requests that consume a receive at the peer. */
bool world_uses_rq(uint8_t opcode);
/* Where request i of QP q keeps its bytes in a client's region. */
uint64_t world_slot_addr(const struct client *cl, unsigned q, unsigned i);
/* B's receives, in the order A's SENDs and WRITE_IMMs consume them; then A's work. */
void world_post_everything(struct world *w);

/* One host's turn, as the loop takes it: pump until the core is idle. */
void world_pump_host(struct host *h);
bool world_all_sent_completed(struct world *w);
/* Virtual time runs until done(w) or for limit; at `at`, what(w) happens once on the way. */
void world_run(struct world *w, uint64_t limit, bool (*done)(struct world *), uint64_t at,
	       void (*what)(struct world *));
/* Every byte where it belongs; every object reclaimed once the clients are gone. */
void world_check_bytes(struct world *w);
void world_check_reclaimed(struct world *w);

#endif /* METAROCE_TESTS_UNIT_CORE_WORLD_H */
