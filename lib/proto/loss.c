/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "loss.h"

#include "seq.h"

void mrc_tx_leave_flight(struct mrc_tx_slot *s, struct mrc_path *paths)
{
	if (s->flags & MRC_TX_INFLIGHT) {
		s->flags &= (uint8_t)~MRC_TX_INFLIGHT;
		paths[s->path].inflight--;
	}
}

unsigned mrc_loss_detect_reorder(struct mrc_tx_slot *ring, uint32_t una, uint32_t nxt,
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

unsigned mrc_loss_detect_timeout(struct mrc_tx_slot *ring, uint32_t una, uint32_t nxt,
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
