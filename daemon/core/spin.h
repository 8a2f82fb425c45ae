/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Adaptive busy polling: whether the daemon's loop, finding nothing to do, polls again at
 * once or goes to sleep. Each wakeup costs a context switch and, in a virtual machine, an
 * exit; during a conversation the next packet or doorbell is often microseconds away, so
 * the loop spins for a window after its last work, and sleeps once that passes quietly.
 *
 * The window adapts as a virtual machine's halt-polling does: work that arrives soon after
 * the loop gave up and slept (within the configured budget) means a longer spin would have
 * caught it, so the window doubles, up to the budget; a sleep longer than the budget means
 * the spin was wasted, so the window halves, down to nothing. A budget of 0 never spins;
 * MRCD_SPIN_ALWAYS never sleeps. No clock here: the loop passes `now`.
 */
#ifndef METAROCE_DAEMON_CORE_SPIN_H
#define METAROCE_DAEMON_CORE_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#define MRCD_SPIN_ALWAYS UINT64_MAX
#define MRCD_SPIN_START_NS 10000u /* the first window, and the smallest one that grows */

struct mrcd_spin {
	uint64_t budget_ns;  /* the longest window (busy_poll); 0: off */
	uint64_t window_ns;  /* how long the next quiet spell is spun */
	uint64_t idle_since; /* when the current quiet spell began; 0: not in one */
	uint64_t slept_at;   /* when the loop last went to sleep; 0: it did not */
	uint64_t spins, sleeps, grown, shrunk; /* for the statistics */
};

void mrcd_spin_init(struct mrcd_spin *s, uint64_t budget_ns);

/* The loop found nothing to do at now: true to poll again at once, false to sleep. */
bool mrcd_spin_idle(struct mrcd_spin *s, uint64_t now);

/* The loop did work at now (a packet, a doorbell, a request, a timer). */
void mrcd_spin_work(struct mrcd_spin *s, uint64_t now);

#endif /* METAROCE_DAEMON_CORE_SPIN_H */
