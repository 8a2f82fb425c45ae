/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Adaptive busy polling: whether a waiter that found nothing to do polls again at once or
 * goes to sleep; the daemon's event loop (busy_poll) and libmetaroce's ibv_get_cq_event
 * (METAROCE_BUSY_POLL) both ask. Each wakeup costs a context switch and, in a virtual
 * machine, an exit; during a conversation the next packet, doorbell or completion is often
 * microseconds away, so a waiter spins for a window after its last work, and sleeps once
 * that passes quietly.
 *
 * The window adapts as a virtual machine's halt-polling does: work that arrives soon after
 * the loop gave up and slept (within the configured budget) means a longer spin would have
 * caught it, so the window doubles, up to the budget; a sleep longer than the budget means
 * the spin was wasted, so the window halves, down to nothing. A budget of 0 never spins;
 * MRC_SPIN_ALWAYS never sleeps. No clock here: the loop passes `now`.
 */
#ifndef METAROCE_SHM_SPIN_H
#define METAROCE_SHM_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#define MRC_SPIN_ALWAYS UINT64_MAX
#define MRC_SPIN_START_NS 10000u /* the first window, and the smallest one that grows */

struct mrc_spin {
	uint64_t budget_ns;  /* the longest window (busy_poll); 0: off */
	uint64_t window_ns;  /* how long the next quiet spell is spun */
	uint64_t idle_since; /* when the current quiet spell began; 0: not in one */
	uint64_t slept_at;   /* when the loop last went to sleep; 0: it did not */
	uint64_t grown, shrunk; /* how often the window changed (the tests read them) */
};

void mrc_spin_init(struct mrc_spin *s, uint64_t budget_ns);

/* The loop found nothing to do at now: true to poll again at once, false to sleep. */
bool mrc_spin_idle(struct mrc_spin *s, uint64_t now);

/* It did go to sleep at now (it may not, when work came meanwhile): how long it slept
 * until its next work teaches the window. */
void mrc_spin_sleeping(struct mrc_spin *s, uint64_t now);

/* The loop did work at now (a packet, a doorbell, a request, a timer). */
void mrc_spin_work(struct mrc_spin *s, uint64_t now);

/*
 * A budget as both sides spell it: no, off, false or 0 (never spin), yes, on, true or 1
 * (never sleep: MRC_SPIN_ALWAYS), or digits and a unit, ns, us, ms or s, up to an hour.
 * Returns 0, or -1 and leaves *ns alone.
 */
int mrc_spin_parse_budget(const char *text, uint64_t *ns);

/* Between two looks at shared memory: tells the CPU this is a spin (a sibling thread runs). */
static inline void mrc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif /* METAROCE_SHM_SPIN_H */
