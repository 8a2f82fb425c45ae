/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What verbs cannot say about a MetaRoCE QP: how many paths it sprays over, on which planes,
 * and how each path is doing. For programs linked against libmetaroce (or run under
 * metaroce-run and resolving these with dlsym); exported at version METAROCE_1.0.
 *
 *     struct ibv_qp *qp = ibv_create_qp(pd, &attr);
 *     metaroce_qp_set_paths(qp, 8, 0x3);          // before RTR: 8 paths on planes 0 and 1
 *     ... ibv_modify_qp to RTR and RTS ...
 *     struct metaroce_path_stats st[64];
 *     int n = metaroce_query_paths(qp, st, 64);    // one entry per path
 */
#ifndef METAROCE_METAROCE_H
#define METAROCE_METAROCE_H

#include <infiniband/verbs.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Paths per plane (1..16; 0 keeps the daemon's paths_per_plane) and the planes the QP may
 * use (bit i = plane i; 0 means every plane the peer shares). Only before the QP reaches RTR.
 * Returns 0, or an errno value: EINVAL (out of range, or the QP is past INIT), ENODEV.
 */
int metaroce_qp_set_paths(struct ibv_qp *qp, unsigned paths_per_plane, uint32_t plane_mask);

enum metaroce_path_state {
	METAROCE_PATH_UP = 0,
	METAROCE_PATH_FAILED = 1,  /* timed out without ECN: probed until it answers */
	METAROCE_PATH_DRAINED = 2, /* taken out of service by an operator */
	METAROCE_PATH_PROBING = 3, /* re-drawn with a fresh source port, probed */
};

struct metaroce_path_stats {
	uint8_t index;	   /* the path's index within the QP */
	uint8_t plane;
	uint8_t state;	   /* enum metaroce_path_state */
	uint8_t reserved;
	uint16_t sport;	   /* its UDP source port: the ECMP entropy */
	uint16_t reserved2;
	uint32_t cwnd;	   /* packets */
	uint32_t inflight; /* packets */
	uint64_t srtt_ns;  /* 0 until the first sample */
	uint64_t tx_packets;
	uint64_t retransmits;
	uint64_t ecn_marks; /* acknowledgements that echoed CE */
};

/*
 * Fills up to max entries, one per path of the QP (none before RTR). Returns how many, or a
 * negative errno value.
 */
int metaroce_query_paths(struct ibv_qp *qp, struct metaroce_path_stats *stats, unsigned max);

#ifdef __cplusplus
}
#endif

#endif /* METAROCE_METAROCE_H */
