/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ratehint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ACTIVE_NS 200000ull /* 200 us */
#define DEFAULT_WINDOW_NS 20000ull  /* 20 us */

int mrc_rate_domain_init(struct mrc_rate_domain *d, uint64_t capacity_kbps, uint32_t max_entries)
{
	memset(d, 0, sizeof(*d));
	d->entries = calloc(max_entries ? max_entries : 1, sizeof(*d->entries));
	if (!d->entries)
		return -ENOMEM;
	d->capacity_kbps = capacity_kbps;
	d->max_entries = max_entries;
	d->active_ns = DEFAULT_ACTIVE_NS;
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
	return e->in_use && e->last_rx_ns && now_ns - e->last_rx_ns <= d->active_ns;
}

void mrc_rate_domain_on_rx(struct mrc_rate_domain *d, int entry, uint32_t bytes, uint64_t now_ns)
{
	struct mrc_rate_entry *e;

	if (entry < 0 || (uint32_t)entry >= d->max_entries)
		return;
	e = &d->entries[entry];
	if (!is_active(d, e, now_ns)) {
		/* A sender (re)appears: everyone's share changes now, not a window later. */
		d->stale = true;
		e->window_start_ns = now_ns;
		e->window_bytes = 0;
		e->demand_kbps = 0;
	}
	e->last_rx_ns = now_ns;
	e->window_bytes += bytes;
	if (now_ns - e->window_start_ns >= d->window_ns) {
		/* bytes * 8 / ns = Gbit/s; * 1e6 = kbit/s */
		e->demand_kbps = e->window_bytes * 8 * 1000000 / (now_ns - e->window_start_ns);
		e->window_start_ns = now_ns;
		e->window_bytes = 0;
	}
}

/*
 * Water filling: start with an equal split; every active sender whose measured demand is
 * below the level keeps its demand, and what it leaves is shared among the rest. A sender
 * with no measurement yet counts as unconstrained.
 */
static void recompute(struct mrc_rate_domain *d, uint64_t now_ns)
{
	uint64_t remaining = d->capacity_kbps;
	uint32_t unconstrained = 0;
	bool changed = true;

	for (uint32_t i = 0; i < d->max_entries; i++)
		if (is_active(d, &d->entries[i], now_ns))
			unconstrained++;
	d->n_active = unconstrained;
	if (unconstrained == 0) {
		d->level_kbps = d->capacity_kbps;
		goto done;
	}
	d->level_kbps = remaining / unconstrained;
	while (changed && unconstrained > 1) {
		uint64_t level = d->level_kbps;

		changed = false;
		remaining = d->capacity_kbps;
		unconstrained = 0;
		for (uint32_t i = 0; i < d->max_entries; i++) {
			const struct mrc_rate_entry *e = &d->entries[i];

			if (!is_active(d, e, now_ns))
				continue;
			/* Demand well under the level: the sender is limited by itself. */
			if (e->demand_kbps && e->demand_kbps * 10 < level * 8)
				remaining -= e->demand_kbps < remaining ? e->demand_kbps : remaining;
			else
				unconstrained++;
		}
		if (unconstrained == 0)
			break;
		if (remaining / unconstrained > level) {
			d->level_kbps = remaining / unconstrained;
			changed = true;
		}
	}
done:
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
	(void)entry;
	hint = d->level_kbps ? d->level_kbps : 1;
	return hint > UINT32_MAX ? UINT32_MAX : (uint32_t)hint;
}
