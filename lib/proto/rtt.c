/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "rtt.h"

#include <string.h>

#define MAX_BACKOFF 16

void mrc_rtt_init(struct mrc_rtt *r)
{
	memset(r, 0, sizeof(*r));
}

bool mrc_rtt_sample_from_echo(uint64_t now_ns, uint32_t echo_ts, uint32_t ack_delay_ns,
			      uint64_t *sample_ns)
{
	uint32_t elapsed = (uint32_t)now_ns - echo_ts;

	if (elapsed >= 0x80000000u || elapsed < ack_delay_ns)
		return false;
	*sample_ns = elapsed - ack_delay_ns;
	return true;
}

void mrc_rtt_update(struct mrc_rtt *r, uint64_t sample_ns)
{
	r->latest_ns = sample_ns;
	if (r->min_ns == 0 || sample_ns < r->min_ns)
		r->min_ns = sample_ns ? sample_ns : 1;
	if (r->srtt_ns == 0) {
		r->srtt_ns = sample_ns ? sample_ns : 1;
		r->rttvar_ns = sample_ns / 2;
	} else {
		uint64_t err = sample_ns > r->srtt_ns ? sample_ns - r->srtt_ns
						      : r->srtt_ns - sample_ns;

		/* alpha = 1/8, beta = 1/4 (RFC 6298) */
		r->rttvar_ns = r->rttvar_ns - r->rttvar_ns / 4 + err / 4;
		r->srtt_ns = r->srtt_ns - r->srtt_ns / 8 + sample_ns / 8;
		if (r->srtt_ns == 0)
			r->srtt_ns = 1;
	}
	r->backoff = 0;
}

uint64_t mrc_rtt_rto(const struct mrc_rtt *r, const struct mrc_rtt_limits *lim)
{
	uint64_t rto = r->srtt_ns ? r->srtt_ns + 4 * r->rttvar_ns : lim->initial_rto_ns;

	if (rto < lim->min_rto_ns)
		rto = lim->min_rto_ns;
	for (unsigned i = 0; i < r->backoff && rto < lim->max_rto_ns; i++)
		rto *= 2;
	return rto < lim->max_rto_ns ? rto : lim->max_rto_ns;
}

void mrc_rtt_backoff(struct mrc_rtt *r)
{
	if (r->backoff < MAX_BACKOFF)
		r->backoff++;
}
