/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "compliance/agents/more_verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>

int ud_ready(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return errno ? errno : EINVAL;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return errno ? errno : EINVAL;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = sq_psn };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return errno ? errno : EINVAL;
	return 0;
}

struct ibv_ah *ud_peer(struct ibv_pd *pd, struct in_addr peer)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };

	memset(a.grh.dgid.raw + 10, 0xff, 2);
	memcpy(a.grh.dgid.raw + 12, &peer, 4);
	return ibv_create_ah(pd, &a);
}

int ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey,
	    struct ibv_sge *sge, uint64_t wr_id, bool with_imm, uint32_t imm, bool solicited)
{
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = sge, .num_sge = 1,
				 .opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED |
					       (solicited ? IBV_SEND_SOLICITED : 0),
				 .imm_data = htonl(imm) },
			   *bad;

	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = remote_qpn;
	w.wr.ud.remote_qkey = remote_qkey;
	return ibv_post_send(qp, &w, &bad);
}

struct ibv_mw *window_bound(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_cq *cq,
			    struct ibv_mr *mr, int access)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_send_wr w = { .wr_id = 0xb1d, .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;
	int e;

	if (!mw)
		return NULL;
	w.bind_mw.mw = mw;
	w.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	w.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)mr->addr,
							 .length = mr->length,
							 .mw_access_flags = (unsigned)access };
	if ((e = ibv_post_send(qp, &w, &bad))) {
		ibv_dealloc_mw(mw);
		errno = e;
		return NULL;
	}
	for (unsigned tries = 0; tries < 5000; tries++) { /* the daemon answers in a moment */
		struct timespec ms = { 0, 1000000 };

		if (ibv_poll_cq(cq, 1, &wc) == 1)
			break;
		nanosleep(&ms, NULL);
		wc.wr_id = 0;
	}
	if (wc.wr_id != 0xb1d || wc.status != IBV_WC_SUCCESS) {
		ibv_dealloc_mw(mw);
		errno = EPROTO;
		return NULL;
	}
	mw->rkey = w.bind_mw.rkey;
	return mw;
}

int window_invalidate(struct ibv_qp *qp, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr w = { .wr_id = wr_id, .opcode = IBV_WR_LOCAL_INV,
				 .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey },
			   *bad;

	return ibv_post_send(qp, &w, &bad);
}

enum ibv_mtu verbs_mtu_of(uint16_t payload)
{
	switch (payload) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	return 0;
}

/* verbs' status names, as ibv_wc_status_str's words in the suite's spelling */
const char *verbs_status_name(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "success";
	case IBV_WC_LOC_LEN_ERR: return "loc_len_err";
	case IBV_WC_LOC_QP_OP_ERR: return "loc_qp_op_err";
	case IBV_WC_LOC_PROT_ERR: return "loc_prot_err";
	case IBV_WC_WR_FLUSH_ERR: return "wr_flush_err";
	case IBV_WC_REM_INV_REQ_ERR: return "rem_inv_req_err";
	case IBV_WC_REM_ACCESS_ERR: return "rem_access_err";
	case IBV_WC_REM_OP_ERR: return "rem_op_err";
	case IBV_WC_RETRY_EXC_ERR: return "retry_exc_err";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "rnr_retry_exc_err";
	default: return "?";
	}
}

const char *verbs_opcode_name(enum ibv_wc_opcode o)
{
	switch (o) {
	case IBV_WC_SEND: return "send";
	case IBV_WC_RDMA_WRITE: return "rdma_write";
	case IBV_WC_RDMA_READ: return "rdma_read";
	case IBV_WC_COMP_SWAP: return "comp_swap";
	case IBV_WC_FETCH_ADD: return "fetch_add";
	case IBV_WC_BIND_MW: return "bind_mw";
	case IBV_WC_LOCAL_INV: return "local_inv";
	case IBV_WC_RECV: return "recv";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "recv_rdma_with_imm";
	default: return "?";
	}
}
