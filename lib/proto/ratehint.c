/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ratehint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_WINDOW_NS 100000ull /* T of SPEC 8.2 when the RTT is unknown: 100 us */

int mrc_rate_domain_init(struct mrc_rate_domain *d, uint64_t capacity_kbps, uint32_t max_entries)
{
	memset(d, 0, sizeof(*d));
	d->entries = calloc(max_entries ? max_entries : 1, sizeof(*d->entries));
	if (!d->entries)
		return -ENOMEM;
	d->capacity_kbps = capacity_kbps;
	d->max_entries = max_entries;
	d->window_ns = DEFAULT_WINDOW_NS;
	d->level_kbps = capacity_kbps;
	return 0;
}

void mrc_rate_domain_fini(struct mrc_rate_domain *d)
{
	free(d->entries);
	d->entries = NULL;
}

int mrc_rate_domain_join(struct mrc_rate_domain *d)
{
	for (uint32_t i = 0; i < d->max_entries; i++) {
		if (!d->entries[i].in_use) {
			memset(&d->entries[i], 0, sizeof(d->entries[i]));
			d->entries[i].in_use = true;
			return (int)i;
		}
	}
	return -1;
}

void mrc_rate_domain_leave(struct mrc_rate_domain *d, int entry)
{
	if (entry >= 0 && (uint32_t)entry < d->max_entries) {
		d->entries[entry].in_use = false;
		d->stale = true;
	}
}

static bool is_active(const struct mrc_rate_domain *d, const struct mrc_rate_entry *e,
		      uint64_t now_ns)
{
	return e->in_use && e->seen && now_ns - e->last_rx_ns <= d->window_ns;
}

/*
 * Saturated: it may want more than it gets, so it takes a full share. A sender whose demand
 * no whole window has measured yet, or that uses 70% or more of the rate it was last given,
 * is saturated: one that held back to drain a queue still wants its share.
 */
static bool is_saturated(const struct mrc_rate_entry *e)
{
	return !e->measured || e->given_kbps == 0 ||
	       e->demand_kbps * 10 >= e->given_kbps * 7;
}

void mrc_rate_domain_on_rx(struct mrc_rate_domain *d, int entry, uint32_t bytes, bool ce,
			   uint64_t now_ns)
{
	struct mrc_rate_entry *e;

	if (entry < 0 || (uint32_t)entry >= d->max_entries)
		return;
	d->window_bytes += bytes;
	if (ce)
		d->window_ce_bytes += bytes;
	e = &d->entries[entry];
	if (!is_active(d, e, now_ns)) {
		/* A sender (re)appears: everyone's share changes now, not a window later. */
		d->stale = true;
		e->window_start_ns = now_ns;
		e->window_bytes = 0;
		e->demand_kbps = 0;
		e->measured = false;
	}
	e->last_rx_ns = now_ns;
	e->seen = true;
	e->window_bytes += bytes;
	if (now_ns - e->window_start_ns >= d->window_ns) {
		/* bytes * 8 / ns = Gbit/s; * 1e6 = kbit/s */
		e->demand_kbps = e->window_bytes * 8 * 1000000 / (now_ns - e->window_start_ns);
		e->measured = true;
		e->window_start_ns = now_ns;
		e->window_bytes = 0;
	}
}

/*
 * Water filling (SPEC 8.2): unsaturated senders keep their demand while it is below the
 * level, and the capacity they leave is split equally among the rest. Iterating "level =
 * remaining / k" until no further sender drops below it gives the same level as taking the
 * unsaturated senders in increasing demand.
 */
static void recompute(struct mrc_rate_domain *d, uint64_t now_ns)
{
	uint32_t n_active = 0;
	uint64_t level, capacity = d->capacity_kbps;

	/* for inspection: the senders drain a marked queue themselves */
	d->ce_permille = d->window_bytes
				 ? (uint32_t)(d->window_ce_bytes * 1000 / d->window_bytes)
				 : 0;
	d->window_bytes = d->window_ce_bytes = 0;

	for (uint32_t i = 0; i < d->max_entries; i++)
		n_active += is_active(d, &d->entries[i], now_ns);
	d->n_active = n_active;
	level = n_active ? capacity / n_active : capacity;
	for (uint32_t round = 0; round < n_active; round++) {
		uint64_t remaining = capacity;
		uint32_t k = 0;

		for (uint32_t i = 0; i < d->max_entries; i++) {
			const struct mrc_rate_entry *e = &d->entries[i];

			if (!is_active(d, e, now_ns))
				continue;
			if (!is_saturated(e) && e->demand_kbps <= level)
				remaining -= e->demand_kbps < remaining ? e->demand_kbps : remaining;
			else
				k++;
		}
		if (k == 0) {
			level = capacity; /* every sender uses less than its share */
			break;
		}
		if (remaining / k <= level)
			break;
		level = remaining / k;
	}
	d->level_kbps = level;
	d->computed_ns = now_ns;
	d->stale = false;
}

uint32_t mrc_rate_domain_hint(struct mrc_rate_domain *d, int entry, uint64_t now_ns)
{
	uint64_t hint;

	if (!d || d->capacity_kbps == 0)
		return 0;
	if (d->stale || now_ns - d->computed_ns >= d->window_ns)
		recompute(d, now_ns);
	/* positive, saturated at the field's range */
	hint = d->level_kbps ? d->level_kbps : 1;
	if (hint > UINT32_MAX)
		hint = UINT32_MAX;
	if (entry >= 0 && (uint32_t)entry < d->max_entries)
		d->entries[entry].given_kbps = hint;
	return (uint32_t)hint;
}
