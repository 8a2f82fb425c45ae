/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "linger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mrcd_linger_init(struct mrcd_linger_table *t, unsigned slots)
{
	memset(t, 0, sizeof(*t));
	t->by_slot = calloc(slots, sizeof(*t->by_slot));
	t->active = calloc(slots, sizeof(*t->active));
	if (!t->by_slot || !t->active) {
		free(t->by_slot);
		free(t->active);
		memset(t, 0, sizeof(*t));
		return -ENOMEM;
	}
	t->slots = slots;
	return 0;
}

void mrcd_linger_fini(struct mrcd_linger_table *t)
{
	while (t->n)
		mrcd_linger_remove_at(t, t->n - 1);
	free(t->by_slot);
	free(t->active);
	memset(t, 0, sizeof(*t));
}

void mrcd_linger_remove_at(struct mrcd_linger_table *t, unsigned i)
{
	struct mrcd_lingering *e = &t->by_slot[t->active[i]];

	mrc_conn_free(e->conn);
	memset(e, 0, sizeof(*e));
	t->active[i] = t->active[--t->n];
	if (i < t->n)
		t->by_slot[t->active[i]].at = i;
}

void mrcd_linger_add(struct mrcd_linger_table *t, unsigned slot, const struct mrcd_lingering *e)
{
	if (slot >= t->slots) {
		mrc_conn_free(e->conn);
		return;
	}
	if (t->by_slot[slot].conn)
		mrcd_linger_remove_at(t, t->by_slot[slot].at);
	t->by_slot[slot] = *e;
	t->by_slot[slot].at = t->n;
	t->active[t->n++] = (uint16_t)slot;
}

struct mrcd_lingering *mrcd_linger_find(struct mrcd_linger_table *t, unsigned slot,
					uint32_t qpn)
{
	struct mrcd_lingering *e;

	if (slot >= t->slots)
		return NULL;
	e = &t->by_slot[slot];
	return e->conn && e->qpn == qpn ? e : NULL;
}
