/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UD QPs and address handles (SPEC 4.8). An address handle is the destination's GID, kept
 * here and copied into each send entry; creating one asks the daemon to begin discovering
 * that peer, so the first datagram does not wait for it. The UD state machine is InfiniBand's:
 * RESET, INIT (qkey), RTR (receives), RTS (sends, from sq_psn).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <metaroce/wire.h>

#include "internal.h"

struct mrv_ah {
	struct ibv_ah ibah;
	uint8_t dgid[16];
};

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct mrv_context *ctx;
	struct mrc_ctl_resolve req;
	struct mrv_ah *ah;
	int err;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ctx = to_ctx(pd->context);
	/* RoCE addresses by GID: the GRH is required, as on any RoCE device */
	if (!attr->is_global || (attr->port_num && attr->port_num != 1) ||
	    attr->grh.sgid_index >= ctx->status.n_planes) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(req.dgid, attr->grh.dgid.raw, 16);
	err = mrv_request(ctx, MRC_CTL_RESOLVE, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL,
			  NULL);
	if (err) {
		errno = err; /* EHOSTUNREACH: not a peer the daemon admits */
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(ah->dgid, attr->grh.dgid.raw, 16);
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	return &ah->ibah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	free((struct mrv_ah *)ah);
	return 0;
}

/*
 * The answer's address from a receive's GRH, as rdma-core reads a RoCEv2 one: an IPv4 header
 * in its last 20 bytes, or a whole IPv6 header [SPEC R-424].
 */
static int addresses_of(const struct ibv_grh *grh, uint8_t src[16], uint8_t dst[16],
			uint8_t *tclass)
{
	const uint8_t *b = (const uint8_t *)grh;

	if (b[20] >> 4 == 4) {
		mrc_addr_from_v4(src, b + 32);
		mrc_addr_from_v4(dst, b + 36);
		*tclass = b[21];
		return 0;
	}
	if (b[0] >> 4 == 6) {
		memcpy(src, grh->sgid.raw, 16);
		memcpy(dst, grh->dgid.raw, 16);
		*tclass = (uint8_t)((b[0] & 0xf) << 4 | b[1] >> 4);
		return 0;
	}
	return EINVAL;
}

/* rdma-core fails this one with -1 and errno, not an errno value */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	struct mrv_context *ctx = to_ctx(context);
	uint8_t src[16], dst[16], tclass;
	int index = -1;

	if (port_num != 1 || !(wc->wc_flags & IBV_WC_GRH) || !grh ||
	    addresses_of(grh, src, dst, &tclass)) {
		errno = EINVAL; /* RoCE: no GRH, no address */
		return -1;
	}
	for (int i = 0; i < ctx->status.n_planes; i++)
		if (!memcmp(ctx->status.planes[i].addr, dst, 16))
			index = i;
	if (index < 0) {
		errno = ENOENT; /* not sent to an address of ours */
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	ah_attr->is_global = 1;
	memcpy(ah_attr->grh.dgid.raw, src, 16);
	ah_attr->grh.sgid_index = (uint8_t)index;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = tclass;
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* --- sending ------------------------------------------------------------------------------- */

int mrv_ud_address(struct mrc_sq_entry *e, struct ibv_ah *ah, uint32_t remote_qpn,
		   uint32_t remote_qkey)
{
	if (!ah || !remote_qpn || remote_qpn > 0xffffff)
		return EINVAL;
	memcpy(e->dgid, ((struct mrv_ah *)ah)->dgid, 16);
	e->remote_qpn = remote_qpn;
	e->remote_qkey = remote_qkey;
	return 0;
}

void mrv_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			uint32_t remote_qkey)
{
	struct mrv_qp *qp = (struct mrv_qp *)qpx;

	if (!qp->n_staged) {
		qp->wr_error = EINVAL; /* an address before any operation */
		return;
	}
	if (mrv_ud_address(&qp->staged[qp->n_staged - 1], ah, remote_qpn, remote_qkey))
		qp->wr_error = EINVAL;
}

/* --- the state machine --------------------------------------------------------------------- */

#define UD_ATTRS                                                                               \
	(IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |      \
	 IBV_QP_SQ_PSN)

/* What each transition of a UD QP must carry, as the IB spec's QP state table has it. */
static int ud_required_for(enum ibv_qp_state from, enum ibv_qp_state to, int *need)
{
	if (to == IBV_QPS_ERR || (to == IBV_QPS_RESET && from <= IBV_QPS_INIT))
		*need = 0;
	else if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
		*need = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	else if (from == to && (to == IBV_QPS_INIT || to == IBV_QPS_RTS))
		*need = 0;
	else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
		*need = 0;
	else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
		*need = IBV_QP_SQ_PSN;
	else
		return EINVAL; /* RTR/RTS/ERR -> RESET: QPs are not recycled yet */
	return 0;
}

int mrv_ud_modify(struct mrv_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to,
		  const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr before = qp->attr;
	struct mrc_ctl_ud_qp req;
	int need, err = ud_required_for(from, to, &need);

	if (err || (mask & need) != need || (mask & ~UD_ATTRS))
		return EINVAL;
	if (((mask & IBV_QP_PORT) && a->port_num != 1) ||
	    ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0))
		return EINVAL;
	if ((mask & IBV_QP_SQ_PSN) && !(from == IBV_QPS_RTR && to == IBV_QPS_RTS))
		return EINVAL; /* the send half's start is set once */
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = a->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = a->port_num;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn & 0xffffff;
	/* the daemon hears of RTR, of RTS, and of a new qkey once it knows the QP works */
	if (to != IBV_QPS_RTR && to != IBV_QPS_RTS)
		return 0;
	if (from == to && !(mask & IBV_QP_QKEY))
		return 0;
	req = (struct mrc_ctl_ud_qp){ .qp_num = qp->ibqpx.qp_base.qp_num, .qkey = qp->attr.qkey,
				      .sq_psn = qp->attr.sq_psn,
				      .state = to == IBV_QPS_RTS ? MRC_CTL_QP_RTS : MRC_CTL_QP_RTR };
	err = mrv_request(qp->ctx, MRC_CTL_UD_QP, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL,
			  NULL);
	if (err)
		qp->attr = before; /* what the daemon refused did not happen */
	return err;
}
