/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* See rc_connect.h. */
#include "rc_connect.h"

int rc_connect(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid, unsigned access,
	       uint8_t rd_atomic, const char **step)
{
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				    .qp_access_flags = access };
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.rq_psn = 1, .max_dest_rd_atomic = rd_atomic, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .hop_limit = 1 } },
	};
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				   .rnr_retry = 7, .sq_psn = 1, .max_rd_atomic = rd_atomic };
	int err;

	*step = "INIT";
	err = ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	*step = "RTR";
	err = ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	*step = "RTS";
	return ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					       IBV_QP_MAX_QP_RD_ATOMIC);
}
