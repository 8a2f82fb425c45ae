/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "shm_map.h"

#include "proto/bytes.h"

bool mrcd_wr_from_sq(uint8_t sq_opcode, uint8_t sq_flags, uint8_t *wr_opcode, uint8_t *wr_flags)
{
	switch (sq_opcode) {
	case MRC_SQ_WRITE: *wr_opcode = MRC_WR_WRITE; break;
	case MRC_SQ_WRITE_IMM: *wr_opcode = MRC_WR_WRITE_IMM; break;
	case MRC_SQ_SEND: *wr_opcode = MRC_WR_SEND; break;
	case MRC_SQ_SEND_IMM: *wr_opcode = MRC_WR_SEND_IMM; break;
	case MRC_SQ_READ: *wr_opcode = MRC_WR_READ; break;
	case MRC_SQ_ATOMIC_CMP_SWAP: *wr_opcode = MRC_WR_ATOMIC_CMP_SWAP; break;
	case MRC_SQ_ATOMIC_FETCH_ADD: *wr_opcode = MRC_WR_ATOMIC_FETCH_ADD; break;
	case MRC_SQ_SEND_INV: *wr_opcode = MRC_WR_SEND_INV; break;
	case MRC_SQ_BIND_MW: *wr_opcode = MRC_WR_BIND_MW; break;
	case MRC_SQ_LOCAL_INV: *wr_opcode = MRC_WR_LOCAL_INV; break;
	default: return false;
	}
	if (sq_flags & ~MRC_SQ_F_ALL)
		return false;
	*wr_flags = (sq_flags & MRC_SQ_F_SIGNALED ? MRC_SEND_SIGNALED : 0) |
		    (sq_flags & MRC_SQ_F_SOLICITED ? MRC_SEND_SOLICITED : 0) |
		    (sq_flags & MRC_SQ_F_FENCE ? MRC_SEND_FENCE : 0);
	return true;
}

static uint8_t cq_status(uint8_t status)
{
	switch (status) {
	case MRC_WC_SUCCESS: return MRC_CQ_SUCCESS;
	case MRC_WC_LOC_LEN_ERR: return MRC_CQ_LOC_LEN_ERR;
	case MRC_WC_WR_FLUSH_ERR: return MRC_CQ_WR_FLUSH_ERR;
	case MRC_WC_REM_ACCESS_ERR: return MRC_CQ_REM_ACCESS_ERR;
	case MRC_WC_REM_INV_REQ_ERR: return MRC_CQ_REM_INV_REQ_ERR;
	case MRC_WC_REM_OP_ERR: return MRC_CQ_REM_OP_ERR;
	case MRC_WC_RETRY_EXC_ERR: return MRC_CQ_RETRY_EXC_ERR;
	case MRC_WC_RNR_RETRY_EXC_ERR: return MRC_CQ_RNR_RETRY_EXC_ERR;
	case MRC_WC_LOC_QP_OP_ERR: return MRC_CQ_LOC_QP_OP_ERR;
	case MRC_WC_LOC_PROT_ERR: return MRC_CQ_LOC_PROT_ERR;
	default: return MRC_CQ_GENERAL_ERR;
	}
}

static uint8_t cq_opcode(uint8_t opcode)
{
	switch (opcode) {
	case MRC_WC_RDMA_WRITE: return MRC_CQ_RDMA_WRITE;
	case MRC_WC_RDMA_READ: return MRC_CQ_RDMA_READ;
	case MRC_WC_RECV: return MRC_CQ_RECV;
	case MRC_WC_RECV_RDMA_WITH_IMM: return MRC_CQ_RECV_RDMA_WITH_IMM;
	case MRC_WC_COMP_SWAP: return MRC_CQ_COMP_SWAP;
	case MRC_WC_FETCH_ADD: return MRC_CQ_FETCH_ADD;
	case MRC_WC_BIND_MW: return MRC_CQ_BIND_MW;
	case MRC_WC_LOCAL_INV: return MRC_CQ_LOCAL_INV;
	default: return MRC_CQ_SEND;
	}
}

void mrcd_cq_from_completion(const struct mrc_completion *wc, struct mrc_cq_entry *e)
{
	e->wr_id = wc->wr_id;
	e->status = cq_status(wc->status);
	e->opcode = cq_opcode(wc->opcode);
	e->flags = (wc->flags & MRC_WC_WITH_IMM ? MRC_CQ_F_WITH_IMM : 0) |
		   (wc->flags & MRC_WC_SOLICITED ? MRC_CQ_F_SOLICITED : 0) |
		   (wc->flags & MRC_WC_WITH_INV ? MRC_CQ_F_WITH_INV : 0);
	e->byte_len = wc->byte_len;
	/* imm_data as the sender wrote its bytes [SPEC 4.1]; an invalidated key as a number */
	e->imm = wc->imm;
	if (wc->flags & MRC_WC_WITH_IMM)
		store_be32((uint8_t *)&e->imm, wc->imm);
}
