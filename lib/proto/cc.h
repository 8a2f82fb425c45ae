/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-path congestion control as a table of event functions, one algorithm per file
 * (cc_aimd.c). The window is counted in packets. The engine calls exactly these events;
 * nothing else changes a window.
 */
#ifndef METAROCE_PROTO_CC_H
#define METAROCE_PROTO_CC_H

#include <stdint.h>

struct mrc_cc_params {
	uint32_t init_cwnd; /* packets */
	uint32_t min_cwnd;
	uint32_t max_cwnd;
	uint32_t beta_pct;  /* multiplicative decrease: cwnd *= (100 - beta_pct) / 100 */
};

struct mrc_cc_state {
	uint32_t cwnd;		   /* packets the path may have in flight */
	uint32_t ai_credit;	   /* acknowledged packets towards the next +1 */
	uint64_t recovery_end_ns;  /* no further decrease before this time */
	uint32_t decreases;	   /* how many times the window was cut (for counters) */
};

struct mrc_cc_ops {
	const char *name;
	void (*init)(struct mrc_cc_state *s, const struct mrc_cc_params *p);
	/* acked packets on the path were newly acknowledged without a CE echo */
	void (*on_ack)(struct mrc_cc_state *s, const struct mrc_cc_params *p, uint32_t acked);
	/* an acknowledgement for the path echoed CE; srtt_ns paces decreases to once per RTT */
	void (*on_ecn)(struct mrc_cc_state *s, const struct mrc_cc_params *p, uint64_t now_ns,
		       uint64_t srtt_ns);
	/* the path's RTO expired: loss without ECN is path trouble, not congestion */
	void (*on_timeout)(struct mrc_cc_state *s, const struct mrc_cc_params *p);
	/* the path came back from failure */
	void (*on_path_restart)(struct mrc_cc_state *s, const struct mrc_cc_params *p);
};

extern const struct mrc_cc_ops mrc_cc_aimd;

#endif /* METAROCE_PROTO_CC_H */
