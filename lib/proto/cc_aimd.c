/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ECN-driven AIMD per path [R-100..R-104]: +1 packet per window of acknowledged packets
 * (one per RTT when the window is full), a multiplicative cut on a CE echo at most once per
 * smoothed RTT of that path, and no cut on loss alone.
 */
#include "cc.h"

#include <string.h>

static void aimd_init(struct mrc_cc_state *s, const struct mrc_cc_params *p)
{
	memset(s, 0, sizeof(*s));
	s->cwnd = p->init_cwnd;
}

static void aimd_on_ack(struct mrc_cc_state *s, const struct mrc_cc_params *p, uint32_t acked)
{
	s->ai_credit += acked;
	while (s->ai_credit >= s->cwnd && s->cwnd < p->max_cwnd) {
		s->ai_credit -= s->cwnd;
		s->cwnd++;
	}
	if (s->cwnd >= p->max_cwnd)
		s->ai_credit = 0;
}

static void aimd_on_ecn(struct mrc_cc_state *s, const struct mrc_cc_params *p, uint64_t now_ns,
			uint64_t srtt_ns)
{
	uint32_t cut;

	if (now_ns < s->recovery_end_ns)
		return;
	cut = (uint32_t)((uint64_t)s->cwnd * (100 - p->beta_pct) / 100);
	s->cwnd = cut > p->min_cwnd ? cut : p->min_cwnd;
	s->ai_credit = 0;
	s->recovery_end_ns = now_ns + srtt_ns;
	s->decreases++;
}

static void aimd_on_timeout(struct mrc_cc_state *s, const struct mrc_cc_params *p)
{
	(void)s;
	(void)p;
}

static void aimd_on_path_restart(struct mrc_cc_state *s, const struct mrc_cc_params *p)
{
	s->cwnd = p->init_cwnd;
	s->ai_credit = 0;
	s->recovery_end_ns = 0;
}

const struct mrc_cc_ops mrc_cc_aimd = {
	.name = "aimd",
	.init = aimd_init,
	.on_ack = aimd_on_ack,
	.on_ecn = aimd_on_ecn,
	.on_timeout = aimd_on_timeout,
	.on_path_restart = aimd_on_path_restart,
};
