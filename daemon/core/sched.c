/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pump's bookkeeping (sched.h): every operation O(1) or O(log slots).
 */
#include "core/sched.h"

#include <errno.h>
#include <stdlib.h>

#define NOT_LINKED UINT32_MAX

int mrcd_sched_init(struct mrcd_sched *s, unsigned slots)
{
	if (slots > UINT16_MAX)
		return -EINVAL;
	*s = (struct mrcd_sched){ .slots = slots };
	s->next = malloc((slots + 1) * sizeof(*s->next));
	s->prev = malloc((slots + 1) * sizeof(*s->prev));
	s->watched = malloc(slots * sizeof(*s->watched));
	s->heap = malloc(slots * sizeof(*s->heap));
	s->deadline = malloc(slots * sizeof(*s->deadline));
	s->heap_pos = calloc(slots, sizeof(*s->heap_pos));
	s->watch_pos = calloc(slots, sizeof(*s->watch_pos));
	if (!s->next || !s->prev || !s->watched || !s->heap || !s->deadline || !s->heap_pos ||
	    !s->watch_pos) {
		mrcd_sched_fini(s);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < slots; i++)
		s->next[i] = s->prev[i] = NOT_LINKED;
	s->next[slots] = s->prev[slots] = slots; /* the empty list: the head alone */
	return 0;
}

void mrcd_sched_fini(struct mrcd_sched *s)
{
	free(s->next);
	free(s->prev);
	free(s->watched);
	free(s->heap);
	free(s->deadline);
	free(s->heap_pos);
	free(s->watch_pos);
	*s = (struct mrcd_sched){ 0 };
}

/* --- the ready queue ------------------------------------------------------------------------ */

static void unlink_ready(struct mrcd_sched *s, unsigned slot)
{
	s->next[s->prev[slot]] = s->next[slot];
	s->prev[s->next[slot]] = s->prev[slot];
	s->next[slot] = s->prev[slot] = NOT_LINKED;
	s->n_ready--;
}

void mrcd_sched_ready(struct mrcd_sched *s, unsigned slot)
{
	unsigned head = s->slots;

	if (slot >= s->slots || s->next[slot] != NOT_LINKED)
		return;
	s->prev[slot] = s->prev[head];
	s->next[slot] = head;
	s->next[s->prev[head]] = slot;
	s->prev[head] = slot;
	s->n_ready++;
}

bool mrcd_sched_next_ready(struct mrcd_sched *s, unsigned *slot)
{
	unsigned first = s->next[s->slots];

	if (first == s->slots)
		return false;
	unlink_ready(s, first);
	*slot = first;
	return true;
}

/* --- the timer heap ------------------------------------------------------------------------- */

static void heap_put(struct mrcd_sched *s, unsigned i, unsigned slot)
{
	s->heap[i] = (uint16_t)slot;
	s->heap_pos[slot] = i + 1;
}

static void sift_up(struct mrcd_sched *s, unsigned i)
{
	unsigned slot = s->heap[i];

	while (i) {
		unsigned parent = (i - 1) / 2;

		if (s->deadline[s->heap[parent]] <= s->deadline[slot])
			break;
		heap_put(s, i, s->heap[parent]);
		i = parent;
	}
	heap_put(s, i, slot);
}

static void sift_down(struct mrcd_sched *s, unsigned i)
{
	unsigned slot = s->heap[i];

	for (;;) {
		unsigned child = 2 * i + 1;

		if (child >= s->n_heap)
			break;
		if (child + 1 < s->n_heap &&
		    s->deadline[s->heap[child + 1]] < s->deadline[s->heap[child]])
			child++;
		if (s->deadline[slot] <= s->deadline[s->heap[child]])
			break;
		heap_put(s, i, s->heap[child]);
		i = child;
	}
	heap_put(s, i, slot);
}

static void heap_remove(struct mrcd_sched *s, unsigned slot)
{
	unsigned i = s->heap_pos[slot] - 1, last = s->heap[--s->n_heap];

	s->heap_pos[slot] = 0;
	if (last == slot)
		return;
	heap_put(s, i, last);
	sift_down(s, i);
	sift_up(s, s->heap_pos[last] - 1);
}

void mrcd_sched_timer(struct mrcd_sched *s, unsigned slot, uint64_t at)
{
	if (slot >= s->slots)
		return;
	if (at == UINT64_MAX) {
		if (s->heap_pos[slot])
			heap_remove(s, slot);
		return;
	}
	if (!s->heap_pos[slot]) {
		s->deadline[slot] = at;
		heap_put(s, s->n_heap++, slot);
		sift_up(s, s->n_heap - 1);
	} else if (at != s->deadline[slot]) {
		bool earlier = at < s->deadline[slot];

		s->deadline[slot] = at;
		if (earlier)
			sift_up(s, s->heap_pos[slot] - 1);
		else
			sift_down(s, s->heap_pos[slot] - 1);
	}
}

uint64_t mrcd_sched_next_deadline(const struct mrcd_sched *s)
{
	return s->n_heap ? s->deadline[s->heap[0]] : UINT64_MAX;
}

bool mrcd_sched_pop_due(struct mrcd_sched *s, uint64_t now, unsigned *slot)
{
	if (!s->n_heap || s->deadline[s->heap[0]] > now)
		return false;
	*slot = s->heap[0];
	heap_remove(s, *slot);
	return true;
}

/* --- the watched set ------------------------------------------------------------------------ */

bool mrcd_sched_watch(struct mrcd_sched *s, unsigned slot)
{
	if (slot >= s->slots || s->watch_pos[slot])
		return false;
	s->watched[s->n_watched++] = (uint16_t)slot;
	s->watch_pos[slot] = s->n_watched;
	return true;
}

static void unwatch(struct mrcd_sched *s, unsigned slot)
{
	unsigned i = s->watch_pos[slot] - 1, last = s->watched[--s->n_watched];

	s->watched[i] = (uint16_t)last;
	s->watch_pos[last] = i + 1;
	s->watch_pos[slot] = 0;
}

bool mrcd_sched_unwatch_any(struct mrcd_sched *s, unsigned *slot)
{
	if (!s->n_watched)
		return false;
	*slot = s->watched[s->n_watched - 1];
	unwatch(s, *slot);
	return true;
}

void mrcd_sched_forget(struct mrcd_sched *s, unsigned slot)
{
	if (slot >= s->slots)
		return;
	if (s->next[slot] != NOT_LINKED)
		unlink_ready(s, slot);
	if (s->heap_pos[slot])
		heap_remove(s, slot);
	if (s->watch_pos[slot])
		unwatch(s, slot);
}
