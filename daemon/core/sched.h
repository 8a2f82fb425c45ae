/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which QP slots the pump visits, so that a turn costs what happened in it and not what
 * exists: a ready queue (work arrived for the slot: a doorbell, a packet, a state change, a
 * deadline that passed), a timer heap over each slot's next deadline, and the watched set
 * (slots whose rings the daemon reads every turn until it next sleeps, so their clients need
 * not ring). A slot is a live QP's or a lingering connection's (they never share one). Pure
 * bookkeeping over slot numbers: no QP is touched here.
 */
#ifndef METAROCE_DAEMON_CORE_SCHED_H
#define METAROCE_DAEMON_CORE_SCHED_H

#include <stdbool.h>
#include <stdint.h>

struct mrcd_sched {
	unsigned slots;
	/* ready: a FIFO over slots, each at most once: a circular doubly linked list through
	 * next/prev, whose element `slots` is the head */
	uint32_t *next, *prev;
	unsigned n_ready;
	/* watched: an unordered set, swap-removed */
	uint16_t *watched;
	unsigned n_watched;
	/* timers: a binary min-heap of slots by deadline */
	uint16_t *heap;
	unsigned n_heap;
	uint64_t *deadline;  /* per slot */
	uint32_t *heap_pos;  /* per slot: its index in heap + 1; 0 when it has no timer */
	uint32_t *watch_pos; /* per slot: its index in watched + 1; 0 when not watched */
};

/* Returns 0 or -ENOMEM (nothing allocated). */
int mrcd_sched_init(struct mrcd_sched *s, unsigned slots);
void mrcd_sched_fini(struct mrcd_sched *s);

/* The slot has work: it joins the back of the ready queue unless it is in it. */
void mrcd_sched_ready(struct mrcd_sched *s, unsigned slot);
/* Takes the slot at the front of the ready queue; false when it is empty. */
bool mrcd_sched_next_ready(struct mrcd_sched *s, unsigned *slot);
static inline unsigned mrcd_sched_n_ready(const struct mrcd_sched *s)
{
	return s->n_ready;
}

/* The slot's next deadline (UINT64_MAX: none). */
void mrcd_sched_timer(struct mrcd_sched *s, unsigned slot, uint64_t at);
/* The earliest deadline, UINT64_MAX when there is none. */
uint64_t mrcd_sched_next_deadline(const struct mrcd_sched *s);
/* Takes a slot whose deadline is at or before now (its timer is removed); false if none. */
bool mrcd_sched_pop_due(struct mrcd_sched *s, uint64_t now, unsigned *slot);

/* Watched slots: the pump reads their rings each turn; the set empties when the daemon
 * sleeps (mrcd_sched_unwatch_any hands them out one by one). */
bool mrcd_sched_watch(struct mrcd_sched *s, unsigned slot); /* true if it was not watched */
static inline unsigned mrcd_sched_n_watched(const struct mrcd_sched *s)
{
	return s->n_watched;
}
static inline unsigned mrcd_sched_watched(const struct mrcd_sched *s, unsigned i)
{
	return s->watched[i];
}
/* Takes one watched slot out of the set; false when it is empty. */
bool mrcd_sched_unwatch_any(struct mrcd_sched *s, unsigned *slot);

/* The slot's object is gone: out of the queue, the heap and the set. */
void mrcd_sched_forget(struct mrcd_sched *s, unsigned slot);

#endif /* METAROCE_DAEMON_CORE_SCHED_H */
