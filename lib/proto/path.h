/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A path is a first-class object of a connection: (local plane, the peer's address on
 * that plane, UDP source port). The engine knows a path by its index (path_id on the wire)
 * and its plane and source port; the caller maps the plane to sockets and addresses.
 */
#ifndef METAROCE_PROTO_PATH_H
#define METAROCE_PROTO_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "cc.h"
#include "rtt.h"

#define MRC_MAX_PATHS 32

enum mrc_path_state {
	MRC_PATH_ACTIVE = 0, /* carries data */
	MRC_PATH_FAILED,     /* timed out without ECN: no data, probed until it answers */
	MRC_PATH_DRAINED,    /* taken out of service by an operator: no new data */
	MRC_PATH_PROBING,    /* re-drawn with a fresh source port, probed until it answers */
};

struct mrc_path_counters {
	uint64_t tx_packets;	  /* sequenced packets sent, retransmissions included */
	uint64_t retransmits;	  /* of which retransmissions */
	uint64_t acked;		  /* packets newly acknowledged */
	uint64_t lost_reorder;	  /* declared lost by later packets of this path */
	uint64_t lost_timeout;	  /* declared lost by this path's RTO */
	uint64_t ecn_echoes;	  /* acknowledgements echoing CE */
	uint64_t rto_expiries;
	uint64_t failures;	  /* ACTIVE -> FAILED transitions */
	uint64_t recoveries;	  /* FAILED -> ACTIVE transitions */
	uint64_t redraws;	  /* new source port after a failed probe series */
	uint64_t probes_sent;
};

struct mrc_path {
	uint8_t plane;
	uint8_t state;		  /* enum mrc_path_state */
	uint16_t sport;		  /* UDP source port: the path's ECMP entropy */
	uint32_t inflight;	  /* packets sent here, neither acknowledged nor declared lost */
	uint32_t tx_seq;	  /* transmissions on this path so far (path-local order) */
	uint32_t acked_seq_high;  /* highest tx_seq acknowledged, valid once any_acked */
	bool any_acked;
	bool ecn_since_rto;	  /* a CE echo arrived since the last RTO expiry */
	uint8_t rto_streak;	  /* consecutive RTO expiries without ECN or acknowledgement */
	uint8_t probes_unanswered;
	uint8_t probe_backoff;	  /* probe interval doublings since the path failed */
	uint32_t lent;		  /* packets of window lent to each path in lent_to */
	uint32_t lent_to;	  /* bitmask of the paths holding that loan */
	struct mrc_rtt rtt;
	struct mrc_cc_state cc;
	uint64_t rto_deadline_ns; /* 0: not armed */
	uint64_t probe_deadline_ns;
	uint64_t probe_nonce;	  /* nonce of the outstanding probe */
	struct mrc_path_counters stats;
};

_Static_assert(MRC_MAX_PATHS <= 32, "mrc_path.lent_to holds one bit per path");

static inline bool mrc_path_usable(const struct mrc_path *p)
{
	return p->state == MRC_PATH_ACTIVE;
}

/*
 * Packets the path may still take. After an RTO expiry without ECN the path is suspect and
 * carries no data until a probe shows it alive: data sent there as a canary would
 * hold the receive window for a whole RTO if the path is dark.
 */
static inline uint32_t mrc_path_free_window(const struct mrc_path *p)
{
	if (p->rto_streak)
		return 0;
	return p->cc.cwnd > p->inflight ? p->cc.cwnd - p->inflight : 0;
}

/*
 * The spraying scheduler: the first usable path with room at or after *cursor,
 * which then moves past it (round robin). Returns -1 when no usable path has room.
 */
int mrc_sched_pick(const struct mrc_path *paths, unsigned n_paths, unsigned *cursor);

/* The same, never choosing path `except` (a retransmission avoiding where it was lost). */
int mrc_sched_pick_except(const struct mrc_path *paths, unsigned n_paths, unsigned *cursor,
			  int except);

#endif /* METAROCE_PROTO_PATH_H */
