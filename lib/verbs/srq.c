/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared receive queues: a receive ring this library produces into and the daemon reads when
 * a message arrives at one of the SRQ's QPs (daemon/core/srq.c). No doorbell: the daemon
 * reads it on arrival, and a message that found it empty comes again after an RNR wait.
 * IBV_EVENT_SRQ_LIMIT_REACHED arrives as a flag in the ring and a byte on the context's
 * async event socket, whose other end the daemon holds for each SRQ.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

static struct mrv_srq *to_srq(struct ibv_srq *s)
{
	return (struct mrv_srq *)s;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct mrv_context *ctx = to_ctx(pd->context);
	struct mrc_ctl_create_srq req = { .max_wr = attr->attr.max_wr ? attr->attr.max_wr : 1,
					  .pd = mrv_pd_id(pd), .limit = attr->attr.srq_limit };
	struct mrc_ctl_srq rep;
	struct mrv_srq *s;
	int fd = -1, err;
	unsigned n_fds = 1;
	uint32_t len = 0;

	if (attr->attr.max_wr > MRC_CTL_MAX_RING_ENTRIES || attr->attr.max_sge > MRC_RING_MAX_SGE ||
	    attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	err = mrv_request(ctx, MRC_CTL_CREATE_SRQ, &req, sizeof(req), &ctx->async_peer, 1, &rep,
			  sizeof(rep), &len, &fd, &n_fds);
	if (!err && (len != sizeof(rep) || n_fds != 1))
		err = EPROTO;
	if (!err)
		err = mrv_map_ring(fd, MRC_RING_RQ, rep.entries, &s->mem, &s->mem_len, &s->ring);
	else if (fd >= 0)
		close(fd);
	if (err) {
		if (len == sizeof(rep)) {
			struct mrc_ctl_handle h = { .handle = rep.handle };

			mrv_request(ctx, MRC_CTL_DESTROY_SRQ, &h, sizeof(h), NULL, 0, NULL, 0, NULL,
				    NULL, NULL);
		}
		free(s);
		errno = err;
		return NULL;
	}
	pthread_spin_init(&s->lock, PTHREAD_PROCESS_PRIVATE);
	s->ctx = ctx;
	s->handle = rep.handle;
	s->max_sge = MRC_RING_MAX_SGE;
	s->limit = attr->attr.srq_limit;
	s->ibsrq.context = pd->context;
	s->ibsrq.srq_context = attr->srq_context;
	s->ibsrq.pd = pd;
	s->ibsrq.handle = rep.handle;
	pthread_mutex_init(&s->ibsrq.mutex, NULL);
	pthread_cond_init(&s->ibsrq.cond, NULL);
	attr->attr.max_wr = rep.entries;
	attr->attr.max_sge = s->max_sge;
	mrv_pd_use(pd, 1);
	pthread_mutex_lock(&ctx->pd_lock);
	s->next = ctx->srqs;
	ctx->srqs = s;
	pthread_mutex_unlock(&ctx->pd_lock);
	return &s->ibsrq;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct mrv_srq *s = to_srq(ibsrq);
	struct mrc_ctl_modify_srq req = { .handle = s->handle, .limit = attr->srq_limit };
	int err;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL; /* no resizing, as most providers */
	if (!(mask & IBV_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > s->ring.entries)
		return EINVAL;
	err = mrv_request(s->ctx, MRC_CTL_MODIFY_SRQ, &req, sizeof(req), NULL, 0, NULL, 0, NULL,
			  NULL, NULL);
	if (!err)
		s->limit = attr->srq_limit;
	return err;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct mrv_srq *s = to_srq(ibsrq);

	attr->max_wr = s->ring.entries;
	attr->max_sge = s->max_sge;
	attr->srq_limit = s->limit;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct mrv_srq *s = to_srq(ibsrq);
	struct mrv_context *ctx = s->ctx;
	struct mrc_ctl_handle h = { .handle = s->handle };
	int err = mrv_request(ctx, MRC_CTL_DESTROY_SRQ, &h, sizeof(h), NULL, 0, NULL, 0, NULL,
			      NULL, NULL);

	if (err && err != ENODEV)
		return err; /* EBUSY: a QP still uses it */
	pthread_mutex_lock(&ctx->pd_lock);
	for (struct mrv_srq **p = &ctx->srqs; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&ctx->pd_lock);
	mrv_pd_use(ibsrq->pd, -1);
	munmap(s->mem, s->mem_len);
	pthread_spin_destroy(&s->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(s);
	return 0;
}

int mrv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct mrv_srq *s = to_srq(ibsrq);
	bool posted = false; /* no doorbell: the daemon reads the SRQ when a message arrives */
	int err;

	pthread_spin_lock(&s->lock);
	err = mrv_produce_receives(&s->ring, s->max_sge, wr, bad, &posted);
	pthread_spin_unlock(&s->lock);
	return err;
}

/* An SRQ whose limit event is owed, its flag taken; NULL when none is. */
struct mrv_srq *mrv_srq_limit_reached(struct mrv_context *ctx)
{
	struct mrv_srq *found = NULL;

	pthread_mutex_lock(&ctx->pd_lock);
	for (struct mrv_srq *s = ctx->srqs; s && !found; s = s->next)
		if (__atomic_fetch_and(&s->ring.consumer->aux, ~MRC_SRQ_AUX_LIMIT,
				       __ATOMIC_ACQ_REL) & MRC_SRQ_AUX_LIMIT) {
			s->limit = 0; /* the daemon disarmed it */
			found = s;
		}
	pthread_mutex_unlock(&ctx->pd_lock);
	return found;
}
