/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The receiver's rate hint: one domain per receiving host (or per receive
 * port) with a configured capacity; every connection that receives into it joins it. The
 * hint each sender gets is its max-min fair share of the capacity among the senders active
 * now: senders that use less than an equal share keep what they use and the rest is split
 * among the others (demand-aware water filling). Every ACK carries the current hint, so in
 * an incast each sender learns its share from its first acknowledgement.
 *
 * The hint shares out the whole capacity: a queue standing above its marking threshold, which
 * senders pacing at shares that sum to it would hold in place, is drained by the senders
 * themselves, each holding back for the queueing delay its ACKs report.
 */
#ifndef METAROCE_PROTO_RATEHINT_H
#define METAROCE_PROTO_RATEHINT_H

#include <stdbool.h>
#include <stdint.h>

struct mrc_rate_entry {
	uint64_t last_rx_ns;	 /* last sequenced packet from this sender */
	uint64_t window_bytes;	 /* payload bytes since window_start_ns */
	uint64_t window_start_ns;
	uint64_t demand_kbps;	 /* arrival rate measured over the last full window */
	uint64_t given_kbps;	 /* the hint this sender was last given */
	bool in_use;
	bool measured;		 /* demand_kbps covers a whole window since it became active */
	bool seen;		 /* last_rx_ns is valid (0 is a valid time) */
};

struct mrc_rate_domain {
	uint64_t capacity_kbps;	 /* receive capacity shared by all senders; 0: no hints */
	uint64_t window_ns;	 /* T: activity and demand window, recomputation period */
	uint32_t max_entries;
	uint32_t n_active;	 /* as of the last recomputation */
	uint64_t level_kbps;	 /* water level: the share of an unconstrained sender */
	uint64_t computed_ns;
	uint64_t window_bytes;	 /* payload bytes from all senders since computed_ns */
	uint64_t window_ce_bytes; /* of which arrived CE-marked */
	uint32_t ce_permille;	 /* CE share of the last window, for inspection */
	bool stale;		 /* membership changed since the last recomputation */
	struct mrc_rate_entry *entries;
};

/* Allocates room for max_entries senders once; no allocation afterwards. */
int mrc_rate_domain_init(struct mrc_rate_domain *d, uint64_t capacity_kbps, uint32_t max_entries);
void mrc_rate_domain_fini(struct mrc_rate_domain *d);

/* A connection joins (returns its entry, or -1 when full) and leaves the domain. */
int mrc_rate_domain_join(struct mrc_rate_domain *d);
void mrc_rate_domain_leave(struct mrc_rate_domain *d, int entry);

/* Accounts payload bytes that arrived for this sender, and whether they were CE-marked. */
void mrc_rate_domain_on_rx(struct mrc_rate_domain *d, int entry, uint32_t bytes, bool ce,
			   uint64_t now_ns);

/* The hint for this sender in kbit/s; 0 when the domain has no capacity set. */
uint32_t mrc_rate_domain_hint(struct mrc_rate_domain *d, int entry, uint64_t now_ns);

#endif /* METAROCE_PROTO_RATEHINT_H */
