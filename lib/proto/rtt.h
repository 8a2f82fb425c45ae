/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-path round-trip estimate and retransmission timeout, RFC 6298 style.
 *
 * A path is fed only samples that its own packets produced (the ACK's echo_path names the
 * path), so reordering across paths never disturbs an estimate, and every transmission
 * carries its own timestamp, so retransmissions yield unambiguous samples (no Karn rule).
 */
#ifndef METAROCE_PROTO_RTT_H
#define METAROCE_PROTO_RTT_H

#include <stdbool.h>
#include <stdint.h>

struct mrc_rtt {
	uint64_t srtt_ns;    /* 0 until the first sample */
	uint64_t rttvar_ns;
	uint64_t min_ns;     /* smallest sample seen: the path's propagation delay */
	uint64_t latest_ns;
	uint8_t backoff;     /* RTO doublings since the last sample */
};

struct mrc_rtt_limits {
	uint64_t initial_rto_ns; /* before any sample */
	uint64_t min_rto_ns;
	uint64_t max_rto_ns;
};

void mrc_rtt_init(struct mrc_rtt *r);

/*
 * Computes a sample from the echoed transmit timestamp (ns mod 2^32) and the receiver's
 * declared hold time. Returns false, and *sample_ns untouched, for samples that cannot be
 * right: older than 2^31 ns, or shorter than the hold time.
 */
bool mrc_rtt_sample_from_echo(uint64_t now_ns, uint32_t echo_ts, uint32_t ack_delay_ns,
			      uint64_t *sample_ns);

/* Folds a sample in and clears the backoff (the path answered). */
void mrc_rtt_update(struct mrc_rtt *r, uint64_t sample_ns);

/* SRTT + 4 RTTVAR, doubled per backoff step, clamped to the limits. */
uint64_t mrc_rtt_rto(const struct mrc_rtt *r, const struct mrc_rtt_limits *lim);

/* One more RTO expired without an answer. */
void mrc_rtt_backoff(struct mrc_rtt *r);

#endif /* METAROCE_PROTO_RTT_H */
