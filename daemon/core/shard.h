/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A shard: the part of the core one worker thread runs on its own. It owns the QPs whose
 * slots are its (slot % n_shards), their lingering successors (which keep the slot), the
 * schedule that visits them, the transmit queue their packets leave through, the rate domain
 * their receive sides share, and the counters they bump; nothing in it is touched by another
 * worker's data path. What the shards share (clients, regions, CQs, SRQs, the peer table,
 * rdma_cm) belongs to shard 0's thread, the control thread; io stops the other workers at
 * the end of a turn before the core's control functions run (docs/ARCHITECTURE.md, Threads).
 *
 * With one shard (workers = 1) this is the whole data path, as before there were workers.
 */
#ifndef METAROCE_DAEMON_CORE_SHARD_H
#define METAROCE_DAEMON_CORE_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/drop_reasons.h>
#include <metaroce/wire.h>

#include "core/core.h"

#define MRCD_MAX_SHARDS 64
/* The control thread's shard: its queues carry discovery, rdma_cm and UD, its slots UD QPs. */
#define MRCD_CONTROL_SHARD 0u

struct mrcd_shard {
	unsigned index;
	unsigned n_qps;		 /* live QPs in its slots: what placement balances */
	uint64_t now;		 /* the latest time its worker gave */
	uint64_t doorbell_mask[MRC_DOORBELL_BITS / 64]; /* its slots' bits in a doorbell page */
	struct mrcd_sched sched; /* which of its slots the pump visits (sched.h) */
	struct mrcd_linger_table lingering; /* its destroyed QPs still answering their peers */
	struct mrc_rate_domain rate; /* its QPs' receive sides: a 1/n_shards share of capacity */
	uint64_t qp_rx_drops[MRC_DROP_REASON_MAX + 1]; /* its QPs' refusals, by reason */
	struct mrcd_stats stats;  /* its data path's; the control thread's are the core's */
	uint64_t pump_turns;	  /* pumps that visited a QP: with qps_visited, its load */
	uint64_t qps_visited;
	/* CQs whose channel refused an event its QPs raised, tried again each pump */
	uint16_t notify_list[MRCD_MAX_CQS];
	unsigned n_notify_pending;
	uint64_t next_notify_ns;
	/* QPs with path state changes not yet told to monitors: told together every 100 ms,
	 * so a path that fails and recovers within that time is not an event */
	uint16_t path_report[MRCD_MAX_QPS];
	unsigned n_path_report;
	uint64_t next_path_report_ns;
	/* rdma_cm connections whose QP its transport failed, for the manager's next turn */
	uint32_t cm_failed[MRCD_MAX_QPS];
	unsigned n_cm_failed;
	bool control_due;    /* it has work for the control thread (atomic): cm_failed */
	uint8_t *tx_buf;     /* MRCD_TX_BATCH packets of mtu bytes */
	/* Datagrams the engine produced and the wire has not taken yet: a plane's local queue
	 * refused them (ENOBUFS, EAGAIN) and they wait, so back-pressure never turns into
	 * self-inflicted loss (pump.c). Their bytes are in the first tx_queued slots of tx_buf. */
	struct mrcd_dgram *tx_dgrams;
	unsigned tx_queued;
	uint64_t tx_retry_ns; /* when to try a refused datagram again */
	uint64_t tx_held_since_ns[MRC_MAX_PLANES]; /* the plane's queue took nothing since */
	uint32_t tx_refusals[MRC_MAX_PLANES];	    /* ... and refused this many tries since */
	uint64_t tx_held_logged_ns;
};

/*
 * The shard a QP number belongs to: the daemon's own QPNs (DISCOVER, rdma_cm) are the control
 * thread's, any other its slot's. The udp backend's socket selector (bpf/) says the same.
 */
static inline unsigned mrcd_shard_of_qpn(uint32_t qpn, unsigned n_shards)
{
	return qpn <= MRC_QPN_CM ? 0 : MRC_QP_SLOT(qpn) % n_shards;
}

#endif /* METAROCE_DAEMON_CORE_SHARD_H */
