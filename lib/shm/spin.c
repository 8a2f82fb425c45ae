/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "shm/spin.h"

#include <string.h>

int mrc_spin_parse_budget(const char *text, uint64_t *ns)
{
	static const char *const off[] = { "no", "off", "false", "0" };
	static const char *const on[] = { "yes", "on", "true", "1" };
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	size_t digits = strspn(text, "0123456789");
	uint64_t v = 0;

	for (size_t i = 0; i < 4; i++) {
		if (!strcmp(text, off[i]) || !strcmp(text, on[i])) {
			*ns = !strcmp(text, on[i]) ? MRC_SPIN_ALWAYS : 0;
			return 0;
		}
	}
	if (!digits || digits > 13) /* 13 digits of ns is over an hour; more can overflow */
		return -1;
	for (size_t i = 0; i < digits; i++)
		v = v * 10 + (uint64_t)(text[i] - '0');
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(text + digits, units[i].unit)) {
			if (v > 3600000000000ull / units[i].ns)
				return -1;
			*ns = v * units[i].ns;
			return 0;
		}
	return -1;
}

void mrc_spin_init(struct mrc_spin *s, uint64_t budget_ns)
{
	memset(s, 0, sizeof(*s));
	s->budget_ns = budget_ns;
	s->window_ns = budget_ns < MRC_SPIN_START_NS ? budget_ns : MRC_SPIN_START_NS;
}

bool mrc_spin_idle(struct mrc_spin *s, uint64_t now)
{
	if (!s->budget_ns)
		return false;
	if (s->budget_ns == MRC_SPIN_ALWAYS)
		return true;
	if (!s->idle_since)
		s->idle_since = now;
	return now - s->idle_since < s->window_ns;
}

void mrc_spin_sleeping(struct mrc_spin *s, uint64_t now)
{
	s->slept_at = now;
}

void mrc_spin_work(struct mrc_spin *s, uint64_t now)
{
	s->idle_since = 0;
	if (!s->slept_at)
		return; /* caught while spinning: the window is right */
	if (now - s->slept_at <= s->budget_ns) {
		/* a longer spin would have caught it */
		uint64_t w = s->window_ns < MRC_SPIN_START_NS ? MRC_SPIN_START_NS
							       : s->window_ns * 2;

		s->window_ns = w < s->budget_ns ? w : s->budget_ns;
		s->grown++;
	} else if (s->window_ns) {
		/* nothing came for longer than any spin: spinning was wasted */
		s->window_ns /= 2;
		if (s->window_ns < MRC_SPIN_START_NS / 4)
			s->window_ns = 0;
		s->shrunk++;
	}
	s->slept_at = 0;
}
