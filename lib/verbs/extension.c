/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* <metaroce/metaroce.h>: what verbs cannot say about a QP. */
#include <errno.h>
#include <string.h>

#include <metaroce/metaroce.h>

#include "internal.h"

int metaroce_qp_set_paths(struct ibv_qp *ibqp, unsigned paths_per_plane, uint32_t plane_mask)
{
	struct mrv_qp *qp = (struct mrv_qp *)ibqp;

	/* the daemon learns them at RTR, with the peer */
	if (paths_per_plane > 16 || plane_mask >> 16 ||
	    (ibqp->state != IBV_QPS_RESET && ibqp->state != IBV_QPS_INIT))
		return EINVAL;
	qp->paths_per_plane = (uint8_t)paths_per_plane;
	qp->plane_mask = (uint16_t)plane_mask;
	return 0;
}

int metaroce_query_paths(struct ibv_qp *ibqp, struct metaroce_path_stats *stats, unsigned max)
{
	struct mrv_qp *qp = (struct mrv_qp *)ibqp;
	static __thread struct mrc_ctl_path paths[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_path)];
	struct mrc_ctl_handle h = { .handle = ibqp->qp_num };
	uint32_t len = 0;
	unsigned n;
	int err = mrv_request(qp->ctx, MRC_CTL_PATHS, &h, sizeof(h), NULL, 0, paths, sizeof(paths),
			      &len, NULL, NULL);

	if (err)
		return -err;
	if (len % sizeof(paths[0]))
		return -EPROTO;
	n = (unsigned)(len / sizeof(paths[0]));
	if (n > max)
		n = max;
	for (unsigned i = 0; i < n; i++) {
		memset(&stats[i], 0, sizeof(stats[i]));
		stats[i].index = paths[i].index;
		stats[i].plane = paths[i].plane;
		stats[i].state = paths[i].state;
		stats[i].sport = paths[i].sport;
		stats[i].cwnd = paths[i].cwnd;
		stats[i].inflight = paths[i].inflight;
		stats[i].srtt_ns = paths[i].srtt_ns;
		stats[i].tx_packets = paths[i].tx_packets;
		stats[i].retransmits = paths[i].retransmits;
		stats[i].ecn_marks = paths[i].ce_marks;
	}
	return (int)n;
}
