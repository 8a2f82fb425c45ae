/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * librdmacm's synchronous endpoint API (rdma_getaddrinfo, rdma_create_ep, rdma_get_request),
 * built on the calls of id.c as librdmacm builds it on its own, and what does not apply here:
 * multicast (no UD multicast over the planes) and ECE (no vendor options) fail as the
 * kernel's rdma_cm fails them on a device without them.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "rdmacm/internal.h"

static struct sockaddr *copy_addr(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *c = malloc(len);

	if (c)
		memcpy(c, sa, len);
	return c;
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct addrinfo h = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_addrinfo *r;
	int err;

	if (!res || (!node && !service)) {
		errno = EINVAL;
		return -1;
	}
	if (hints) {
		if (hints->ai_family == AF_IB) {
			errno = EAFNOSUPPORT; /* no InfiniBand addressing over the planes */
			return -1;
		}
		h.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
		if (hints->ai_qp_type == IBV_QPT_UD || hints->ai_port_space == RDMA_PS_UDP)
			h.ai_socktype = SOCK_DGRAM;
	}
	err = getaddrinfo(node, service, &h, &ai);
	if (err) {
		errno = err == EAI_SYSTEM ? errno : ENOENT;
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		errno = ENOMEM;
		return -1;
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space
			   : r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP
							 : RDMA_PS_TCP;
	if (r->ai_flags & RAI_PASSIVE) {
		r->ai_src_addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
		}
	}
	freeaddrinfo(ai);
	if ((r->ai_flags & RAI_PASSIVE) ? !r->ai_src_addr : !r->ai_dst_addr) {
		rdma_freeaddrinfo(r);
		errno = ENOMEM;
		return -1;
	}
	*res = r;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	struct mrcm_id *p;

	if (!id || !res) {
		errno = EINVAL;
		return -1;
	}
	if (rdma_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	p = (struct mrcm_id *)cm;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) { /* each request's id gets a QP like this one */
			p->has_qp_attr = true;
			p->ep_pd = pd;
			p->qp_attr = (struct ibv_qp_init_attr_ex){
				.qp_context = qp_init_attr->qp_context,
				.send_cq = qp_init_attr->send_cq, .recv_cq = qp_init_attr->recv_cq,
				.srq = qp_init_attr->srq, .cap = qp_init_attr->cap,
				.qp_type = (enum ibv_qp_type)res->ai_qp_type,
				.sq_sig_all = qp_init_attr->sq_sig_all,
				.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
			};
		}
		*id = cm;
		return 0;
	}
	if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm, 2000))
		goto fail;
	if (qp_init_attr) { /* as librdmacm: the endpoint's type is its address info's */
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm, pd, qp_init_attr))
			goto fail;
	}
	*id = cm;
	return 0;
fail:
	{
		int err = errno;

		rdma_destroy_id(cm);
		errno = err;
	}
	return -1;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct mrcm_id *l = (struct mrcm_id *)listen;
	struct rdma_cm_event *ev;
	struct mrcm_id *p;

	if (!l->sync) {
		errno = EINVAL; /* librdmacm: only a synchronous listener hands requests out */
		return -1;
	}
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	/* as librdmacm: the next event, which must be a request */
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		errno = ev->status < 0 ? -ev->status
			: ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ? ENODEV : EINVAL;
		rdma_ack_cm_event(ev);
		return -1;
	}
	p = (struct mrcm_id *)ev->id;
	if (rdma_migrate_id(&p->id, NULL)) { /* a synchronous id of its own, as librdmacm's */
		int err = errno;

		rdma_reject(&p->id, NULL, 0);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(&p->id);
		errno = err;
		return -1;
	}
	if (l->has_qp_attr) {
		struct ibv_qp_init_attr_ex a = l->qp_attr;

		if (rdma_create_qp_ex(&p->id, &a)) {
			int err = errno;

			rdma_reject(&p->id, NULL, 0);
			rdma_ack_cm_event(ev);
			rdma_destroy_id(&p->id);
			errno = err;
			return -1;
		}
	}
	p->id.event = ev;
	*id = &p->id;
	return 0;
}

/* --- what does not apply -------------------------------------------------------------------- */

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id, (void)addr, (void)context;
	errno = ENOSYS; /* no UD multicast over the planes */
	return -1;
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id, (void)mc_join_attr, (void)context;
	errno = ENOSYS;
	return -1;
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id, (void)addr;
	errno = EADDRNOTAVAIL; /* joined nowhere */
	return -1;
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	errno = EOPNOTSUPP;
	return -1;
}
