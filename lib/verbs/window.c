/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Memory windows (SPEC 4.9): ibv_alloc_mw and ibv_dealloc_mw ask the daemon for a key of its
 * key table; binds and invalidations are send queue entries (IBV_WR_BIND_MW,
 * IBV_WR_LOCAL_INV, and ibv_bind_mw for type 1, which posts one), which the daemon checks and
 * carries out in posting order. As on rdma-core's providers, ibv_bind_mw moves the window's
 * key on with ibv_inc_rkey and stores it in mw->rkey once posted; a type 2 bind uses the key
 * the application passes and leaves mw->rkey to it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct mrv_context *ctx = to_ctx(pd->context);
	struct mrc_ctl_alloc_mw req = { .pd = mrv_pd_id(pd) };
	struct mrc_ctl_mw rep;
	struct ibv_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	req.type = type == IBV_MW_TYPE_1 ? MRC_CTL_MW_TYPE_1 : MRC_CTL_MW_TYPE_2;
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = mrv_request(ctx, MRC_CTL_ALLOC_MW, &req, sizeof(req), NULL, 0, &rep, sizeof(rep),
			  NULL, NULL, NULL);
	if (err) {
		free(mw);
		errno = err == ENOSPC ? ENOMEM : err; /* the device's max_mw reached */
		return NULL;
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = rep.rkey;
	mw->handle = rep.rkey;
	mw->type = type;
	mrv_pd_use(pd, 1);
	return mw;
}

static int dealloc_mw(struct ibv_mw *mw)
{
	struct mrc_ctl_handle req = { .handle = mw->handle };
	int err = mrv_request(to_ctx(mw->context), MRC_CTL_DEALLOC_MW, &req, sizeof(req), NULL, 0,
			      NULL, 0, NULL, NULL, NULL);

	if (err && err != ENODEV)
		return err; /* a daemon gone has forgotten it with everything else */
	mrv_pd_use(mw->pd, -1);
	free(mw);
	return 0;
}

/* ibv_bind_mw, type 1 (verbs.h checked the type and the PDs): a bind on qp's send queue. */
static int bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct mrc_sq_entry e;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int err;

	if (qp->qp_type != IBV_QPT_RC || qp->pd != mw->pd ||
	    (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED))
		return EINVAL; /* a type 1 window is never zero-based */
	memset(&e, 0, sizeof(e));
	err = mrv_bind_entry(&e, mw, rkey, &bind->bind_info);
	if (err)
		return err;
	e.wr_id = bind->wr_id;
	e.flags = (bind->send_flags & IBV_SEND_SIGNALED ? MRC_SQ_F_SIGNALED : 0) |
		  (bind->send_flags & IBV_SEND_FENCE ? MRC_SQ_F_FENCE : 0);
	err = mrv_post_entry((struct mrv_qp *)qp, &e);
	if (err)
		return err;
	mw->rkey = rkey;
	return 0;
}

void mrv_window_ops(struct ibv_context_ops *ops)
{
	ops->alloc_mw = alloc_mw;
	ops->dealloc_mw = dealloc_mw;
	ops->bind_mw = bind_mw;
}
