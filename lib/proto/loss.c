/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "loss.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "seq.h"

int mrc_tx_ring_init(struct mrc_tx_ring *ring, uint32_t slots)
{
	ring->slot = calloc(slots, sizeof(*ring->slot));
	ring->mask = slots - 1;
	return ring->slot ? 0 : -ENOMEM;
}

void mrc_tx_ring_fini(struct mrc_tx_ring *ring)
{
	free(ring->slot);
	ring->slot = NULL;
}

void mrc_tx_ring_clear(struct mrc_tx_ring *ring)
{
	memset(ring->slot, 0, mrc_tx_ring_slots(ring) * sizeof(*ring->slot));
}

bool mrc_tx_ring_grow(struct mrc_tx_ring *ring, uint32_t una, uint32_t nxt)
{
	struct mrc_tx_ring bigger;

	if (mrc_tx_ring_slots(ring) >= MRC_SACK_BITS ||
	    mrc_tx_ring_init(&bigger, 2 * mrc_tx_ring_slots(ring)) < 0)
		return false;
	for (uint32_t psn = una; mrc_seq_lt(psn, nxt); psn++)
		*mrc_tx_slot(&bigger, psn) = *mrc_tx_slot(ring, psn);
	free(ring->slot);
	*ring = bigger;
	return true;
}

void mrc_tx_leave_flight(struct mrc_tx_slot *s, struct mrc_path *paths)
{
	if (s->flags & MRC_TX_INFLIGHT) {
		s->flags &= (uint8_t)~MRC_TX_INFLIGHT;
		paths[s->path].inflight--;
	}
}

void mrc_tx_record_send(struct mrc_tx_slot *s, struct mrc_path *paths, unsigned path)
{
	struct mrc_path *p = &paths[path];

	s->path = (uint8_t)path;
	s->path_seq = p->tx_seq++;
	s->flags = (uint8_t)((s->flags & ~(MRC_TX_LOST | MRC_TX_WND_LIMITED)) | MRC_TX_INFLIGHT);
	if (s->attempts < UINT8_MAX)
		s->attempts++;
	p->inflight++;
}

uint8_t mrc_tx_record_ack(struct mrc_tx_slot *s, struct mrc_path *paths)
{
	uint8_t before = s->flags;
	struct mrc_path *p = &paths[s->path];

	if (before & MRC_TX_ACKED)
		return before;
	mrc_tx_leave_flight(s, paths);
	s->flags = (uint8_t)((s->flags & ~MRC_TX_LOST) | MRC_TX_ACKED);
	/* evidence for this path only: the latest transmission's place in its order */
	if (!p->any_acked || mrc_seq_lt(p->acked_seq_high, s->path_seq))
		p->acked_seq_high = s->path_seq;
	p->any_acked = true;
	return before;
}

unsigned mrc_loss_detect_reorder(const struct mrc_tx_ring *ring, uint32_t una, uint32_t nxt,
				 struct mrc_path *paths, uint32_t reorder_threshold)
{
	unsigned lost = 0;

	for (uint32_t psn = una; mrc_seq_lt(psn, nxt); psn++) {
		struct mrc_tx_slot *s = mrc_tx_slot(ring, psn);
		struct mrc_path *p = &paths[s->path];

		if (!(s->flags & MRC_TX_INFLIGHT) || !p->any_acked)
			continue;
		/* path_seq + threshold <= highest acknowledged on the same path */
		if (mrc_seq_le(s->path_seq + reorder_threshold, p->acked_seq_high)) {
			mrc_tx_leave_flight(s, paths);
			s->flags |= MRC_TX_LOST;
			p->stats.lost_reorder++;
			lost++;
		}
	}
	return lost;
}

unsigned mrc_loss_detect_timeout(const struct mrc_tx_ring *ring, uint32_t una, uint32_t nxt,
				 struct mrc_path *paths, unsigned path)
{
	unsigned lost = 0;

	for (uint32_t psn = una; mrc_seq_lt(psn, nxt); psn++) {
		struct mrc_tx_slot *s = mrc_tx_slot(ring, psn);

		if (!(s->flags & MRC_TX_INFLIGHT) || s->path != path)
			continue;
		mrc_tx_leave_flight(s, paths);
		s->flags |= MRC_TX_LOST;
		paths[path].stats.lost_timeout++;
		lost++;
	}
	return lost;
}
