/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sender's record of every sequenced packet between the oldest unacknowledged PSN (una)
 * and the next new PSN (nxt), and the per-path loss detector built on it.
 *
 * A packet is lost only on evidence from its own path: reorder_threshold packets sent later
 * on the same path were acknowledged, or that path's RTO expired. Acknowledgements of
 * packets on other paths prove nothing about it, so reordering across paths of unequal
 * delay is never taken for loss.
 */
#ifndef METAROCE_PROTO_LOSS_H
#define METAROCE_PROTO_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/wire.h>

#include "path.h"

#define MRC_TX_ACKED 0x01u   /* acknowledged (cumulatively or by SACK) */
#define MRC_TX_LOST 0x02u    /* declared lost, waiting to be retransmitted */
#define MRC_TX_INFLIGHT 0x04u /* counted in its path's inflight */
#define MRC_TX_WND_LIMITED 0x08u /* its path's window was full once it left */
#define MRC_TX_RNR 0x10u	/* lost to an RNR NAK: its resend is no transport retry */

struct mrc_tx_slot {
	uint32_t path_seq; /* the path's tx_seq when this transmission left */
	uint16_t msg;	   /* sender's message slot the packet belongs to */
	uint8_t path;	   /* path of the latest transmission */
	uint8_t flags;	   /* MRC_TX_* */
	uint8_t attempts;  /* transmissions so far */
	uint8_t stalled;   /* retransmissions since the QP last made progress */
	uint16_t epoch;	   /* the QP's acknowledgement epoch when it last left */
	uint32_t sent_kns; /* when it last left, in units of 1024 ns, modulo 2^32 (73 minutes) */
};

/*
 * The slots of the PSNs in [una, nxt), indexed by PSN modulo a power of two. It starts small
 * and doubles, up to the peer's 256-PSN window, when a window needs more: a QP's
 * memory follows the window it actually uses, and most QPs of a large job never use 256.
 */
struct mrc_tx_ring {
	struct mrc_tx_slot *slot;
	uint32_t mask; /* slots - 1 */
};

#define MRC_TX_RING_FIRST 32u /* slots at first: 8 paths at an initial window of 4 */

static inline struct mrc_tx_slot *mrc_tx_slot(const struct mrc_tx_ring *ring, uint32_t psn)
{
	return &ring->slot[psn & ring->mask];
}

static inline uint32_t mrc_tx_ring_slots(const struct mrc_tx_ring *ring)
{
	return ring->mask + 1;
}

/* Returns 0, or -ENOMEM. slots: a power of two up to MRC_SACK_BITS. */
int mrc_tx_ring_init(struct mrc_tx_ring *ring, uint32_t slots);
void mrc_tx_ring_fini(struct mrc_tx_ring *ring);

/* Every slot zeroed: nothing outstanding. */
void mrc_tx_ring_clear(struct mrc_tx_ring *ring);

/*
 * Doubles the ring, keeping the slots of [una, nxt) where the new size puts them. Returns
 * false when it is at MRC_SACK_BITS already or memory is short: the sender then waits, as
 * it would for a full window.
 */
bool mrc_tx_ring_grow(struct mrc_tx_ring *ring, uint32_t una, uint32_t nxt);

/* Takes a packet out of its path's inflight count, once. */
void mrc_tx_leave_flight(struct mrc_tx_slot *s, struct mrc_path *paths);

/* Records a transmission, new or repeated, of the slot's packet on a path. */
void mrc_tx_record_send(struct mrc_tx_slot *s, struct mrc_path *paths, unsigned path);

/*
 * Records that the slot's packet was acknowledged and updates its path's loss evidence.
 * Returns the slot's flags from before (MRC_TX_ACKED set: nothing was done).
 */
uint8_t mrc_tx_record_ack(struct mrc_tx_slot *s, struct mrc_path *paths);

/*
 * Declares lost every in-flight packet in [una, nxt) whose path has since acknowledged a
 * packet sent reorder_threshold or more transmissions later. Returns how many.
 */
unsigned mrc_loss_detect_reorder(const struct mrc_tx_ring *ring, uint32_t una, uint32_t nxt,
				 struct mrc_path *paths, uint32_t reorder_threshold);

/* Declares lost every in-flight packet in [una, nxt) last sent on path. Returns how many. */
unsigned mrc_loss_detect_timeout(const struct mrc_tx_ring *ring, uint32_t una, uint32_t nxt,
				 struct mrc_path *paths, unsigned path);

#endif /* METAROCE_PROTO_LOSS_H */
