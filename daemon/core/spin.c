/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "core/spin.h"

#include <string.h>

void mrcd_spin_init(struct mrcd_spin *s, uint64_t budget_ns)
{
	memset(s, 0, sizeof(*s));
	s->budget_ns = budget_ns;
	s->window_ns = budget_ns < MRCD_SPIN_START_NS ? budget_ns : MRCD_SPIN_START_NS;
}

bool mrcd_spin_idle(struct mrcd_spin *s, uint64_t now)
{
	if (!s->budget_ns)
		return false;
	if (s->budget_ns == MRCD_SPIN_ALWAYS)
		return true;
	if (!s->idle_since)
		s->idle_since = now;
	if (now - s->idle_since < s->window_ns) {
		s->spins++;
		return true;
	}
	s->slept_at = now;
	s->sleeps++;
	return false;
}

void mrcd_spin_work(struct mrcd_spin *s, uint64_t now)
{
	s->idle_since = 0;
	if (!s->slept_at)
		return; /* caught while spinning: the window is right */
	if (now - s->slept_at <= s->budget_ns) {
		/* a longer spin would have caught it */
		uint64_t w = s->window_ns < MRCD_SPIN_START_NS ? MRCD_SPIN_START_NS
							       : s->window_ns * 2;

		s->window_ns = w < s->budget_ns ? w : s->budget_ns;
		s->grown++;
	} else if (s->window_ns) {
		/* nothing came for longer than any spin: spinning was wasted */
		s->window_ns /= 2;
		if (s->window_ns < MRCD_SPIN_START_NS / 4)
			s->window_ns = 0;
		s->shrunk++;
	}
	s->slept_at = 0;
}
