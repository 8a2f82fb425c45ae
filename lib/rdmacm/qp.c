/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An id's QP and SRQ, and the QP's transitions as InfiniBand's CM makes them for librdmacm:
 * INIT at creation with no remote access, at RTR access as the responder resources allow
 * (write always, read and atomics with resources), RTS with the retry counts the exchange
 * settled. PSNs are the transport's (SPEC R-116): the verbs values are 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "rdmacm/internal.h"

static pthread_mutex_t pd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_pd *default_pd;

/* librdmacm's device PD: what an id without one uses. */
static struct ibv_pd *device_pd(struct ibv_context *verbs)
{
	pthread_mutex_lock(&pd_lock);
	if (!default_pd)
		default_pd = ibv_alloc_pd(verbs);
	pthread_mutex_unlock(&pd_lock);
	return default_pd;
}

static int attr_for(struct mrcm_id *p, struct ibv_qp_attr *a, int *mask)
{
	struct rdma_cm_id *id = &p->id;
	uint8_t src[16];
	uint16_t port;
	int gid;

	switch (a->qp_state) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			a->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
		} else {
			/* before the exchange nothing; then write, and read and atomics as far as
			 * responder resources were offered */
			a->qp_access_flags = !p->remote_qpn ? 0
					     : IBV_ACCESS_REMOTE_WRITE |
						       (p->responder_resources
								? IBV_ACCESS_REMOTE_READ |
									  IBV_ACCESS_REMOTE_ATOMIC
								: 0);
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (id->qp_type == IBV_QPT_UD)
			return 0;
		if (!p->remote_qpn || mrcm_addr_from(&id->route.addr.src_addr, src, &port)) {
			errno = EINVAL; /* not connected yet */
			return -1;
		}
		gid = mrcm_gid_index(id->verbs, src);
		a->path_mtu = p->path.mtu ? (enum ibv_mtu)p->path.mtu
					  : mrv_active_mtu(to_ctx(id->verbs));
		a->dest_qp_num = p->remote_qpn;
		a->rq_psn = 0;
		a->max_dest_rd_atomic = p->responder_resources ? p->responder_resources : 1;
		a->min_rnr_timer = 12;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.grh.sgid_index = (uint8_t)(gid < 0 ? 0 : gid);
		a->ah_attr.grh.traffic_class = p->tos;
		memcpy(a->ah_attr.grh.dgid.raw, p->path.dgid.raw, 16);
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = 0;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (id->qp_type == IBV_QPT_UD)
			return 0;
		a->timeout = 14;
		a->retry_cnt = p->retry_count;
		a->rnr_retry = p->rnr_retry_count;
		a->max_rd_atomic = p->initiator_depth ? p->initiator_depth : 1;
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	enum ibv_qp_state state = qp_attr->qp_state;

	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = state;
	return attr_for((struct mrcm_id *)id, qp_attr, qp_attr_mask);
}

static int move(struct mrcm_id *p, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };
	int mask, err;

	if (attr_for(p, &a, &mask))
		return -1;
	err = ibv_modify_qp(p->id.qp, &a, mask);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int mrcm_qp_rtr(struct mrcm_id *p)
{
	/* INIT again first: the access the exchange allows */
	return move(p, IBV_QPS_INIT) || move(p, IBV_QPS_RTR) ? -1 : 0;
}

int mrcm_qp_rts(struct mrcm_id *p)
{
	return move(p, IBV_QPS_RTS);
}

int mrcm_qp_ud_ready(struct mrcm_id *p)
{
	struct ibv_qp_attr a;

	if (ibv_query_qp(p->id.qp, &a, IBV_QP_STATE, &(struct ibv_qp_init_attr){ 0 }) == 0 &&
	    a.qp_state == IBV_QPS_RTS)
		return 0;
	return move(p, IBV_QPS_RTR) || move(p, IBV_QPS_RTS) ? -1 : 0;
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq && id->send_cq != id->recv_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
}

/* As librdmacm: a CQ with its own completion channel for each queue the caller left out. */
static int make_cqs(struct rdma_cm_id *id, const struct ibv_qp_init_attr_ex *attr)
{
	if (!attr->recv_cq) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto fail;
		id->recv_cq = ibv_create_cq(id->verbs, attr->cap.max_recv_wr ? (int)attr->cap.max_recv_wr
									   : 1,
					    id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto fail;
	}
	if (!attr->send_cq) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto fail;
		id->send_cq = ibv_create_cq(id->verbs, attr->cap.max_send_wr ? (int)attr->cap.max_send_wr
									   : 1,
					    id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto fail;
	}
	return 0;
fail:
	destroy_cqs(id);
	errno = ENOMEM;
	return -1;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct mrcm_id *p = (struct mrcm_id *)id;
	struct ibv_qp_init_attr_ex a = *attr;
	struct ibv_qp *qp;
	bool made_cqs = !attr->send_cq || !attr->recv_cq;

	if (id->qp) {
		errno = EINVAL;
		return -1;
	}
	if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd)
		a.pd = id->pd ? id->pd : device_pd(id->verbs);
	if (!a.pd || a.pd->context != id->verbs) {
		errno = EINVAL;
		return -1;
	}
	a.comp_mask |= IBV_QP_INIT_ATTR_PD;
	if (a.qp_type != id->qp_type) {
		errno = EINVAL; /* a connection's QP type is its port space's */
		return -1;
	}
	if (made_cqs && make_cqs(id, &a))
		return -1;
	if (!a.send_cq)
		a.send_cq = id->send_cq;
	if (!a.recv_cq)
		a.recv_cq = id->recv_cq;
	if (!a.srq && id->srq)
		a.srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, &a);
	if (!qp) {
		int err = errno;

		if (made_cqs)
			destroy_cqs(id);
		errno = err;
		return -1;
	}
	id->qp = qp;
	p->own_cqs = made_cqs;
	if (!id->pd)
		id->pd = a.pd;
	/* INIT now; a UD QP is ready for datagrams at once (its peers come by address) */
	if (move(p, IBV_QPS_INIT) || (id->qp_type == IBV_QPT_UD && mrcm_qp_ud_ready(p))) {
		int err = errno;

		rdma_destroy_qp(id);
		errno = err;
		return -1;
	}
	attr->cap = a.cap;
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	int ret;

	if (!qp_init_attr) {
		errno = EINVAL;
		return -1;
	}
	a.qp_context = qp_init_attr->qp_context;
	a.send_cq = qp_init_attr->send_cq;
	a.recv_cq = qp_init_attr->recv_cq;
	a.srq = qp_init_attr->srq;
	a.cap = qp_init_attr->cap;
	a.qp_type = qp_init_attr->qp_type;
	a.sq_sig_all = qp_init_attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	ret = rdma_create_qp_ex(id, &a);
	if (!ret) {
		qp_init_attr->cap = a.cap;
		qp_init_attr->send_cq = id->qp->send_cq;
		qp_init_attr->recv_cq = id->qp->recv_cq;
	}
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct mrcm_id *p = (struct mrcm_id *)id;

	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	if (p->own_cqs)
		destroy_cqs(id);
	p->own_cqs = false;
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a = { .srq_context = attr->srq_context, .attr = attr->attr };
	struct ibv_pd *pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd
				    ? attr->pd
				    : id->pd ? id->pd : device_pd(id->verbs);

	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC) {
		errno = EOPNOTSUPP; /* XRC: not a transport here */
		return -1;
	}
	if (!pd) {
		errno = EINVAL;
		return -1;
	}
	id->srq = ibv_create_srq(pd, &a);
	if (!id->srq)
		return -1;
	attr->attr = a.attr;
	if (!id->pd)
		id->pd = pd;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a = { .srq_context = attr->srq_context, .attr = attr->attr,
					  .comp_mask = IBV_SRQ_INIT_ATTR_PD, .pd = pd };
	int ret = rdma_create_srq_ex(id, &a);

	if (!ret)
		attr->attr = a.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
