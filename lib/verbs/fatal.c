/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon gone (SIGKILL, a crash): what a kernel driver does on a fatal device error, done
 * here, since nobody else is left to do it. The context is marked dead, IBV_EVENT_DEVICE_FATAL
 * goes to the async fd, and every work request still outstanding, posted before or after,
 * completes with IBV_WC_WR_FLUSH_ERR in its CQ (this library becomes the producer of rings
 * whose producer died), with a completion event where the CQ was armed. So an application
 * busy-polling its CQ, or asleep in ibv_get_cq_event, sees its work fail instead of waiting
 * forever.
 *
 * The daemon's death shows as a hang-up on the control connection. Looking costs a system
 * call, so a CQ polled empty looks once per MRV_LIVENESS_POLLS empty polls and 1 ms at most,
 * and
 * ibv_get_cq_event watches the connection beside the channel while it sleeps.
 */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "internal.h"

#define LIVENESS_NS 1000000u

void mrv_qp_track(struct mrv_qp *qp)
{
	struct mrv_context *ctx = qp->ctx;

	pthread_mutex_lock(&ctx->qp_lock);
	qp->next_in_ctx = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->qp_lock);
}

void mrv_qp_untrack(struct mrv_qp *qp)
{
	struct mrv_context *ctx = qp->ctx;

	pthread_mutex_lock(&ctx->qp_lock);
	for (struct mrv_qp **p = &ctx->qps; *p; p = &(*p)->next_in_ctx)
		if (*p == qp) {
			*p = qp->next_in_ctx;
			break;
		}
	pthread_mutex_unlock(&ctx->qp_lock);
}

void mrv_mark_dead(struct mrv_context *ctx)
{
	char one = 1;
	ssize_t told;

	if (__atomic_exchange_n(&ctx->dead, true, __ATOMIC_ACQ_REL))
		return;
	/* the device is gone for good: said once on the async fd (a full queue says it too) */
	told = send(ctx->async_peer, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)told;
}

static bool daemon_hung_up(const struct mrv_context *ctx)
{
	struct pollfd p = { .fd = ctx->ctl_fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) == 1 && (p.revents & MRV_HANG_UP);
}

static uint8_t flushed_opcode(uint8_t sq_opcode)
{
	switch (sq_opcode) {
	case MRC_SQ_WRITE:
	case MRC_SQ_WRITE_IMM:
		return MRC_CQ_RDMA_WRITE;
	case MRC_SQ_READ:
		return MRC_CQ_RDMA_READ;
	case MRC_SQ_ATOMIC_CMP_SWAP:
		return MRC_CQ_COMP_SWAP;
	case MRC_SQ_ATOMIC_FETCH_ADD:
		return MRC_CQ_FETCH_ADD;
	case MRC_SQ_BIND_MW:
		return MRC_CQ_BIND_MW;
	case MRC_SQ_LOCAL_INV:
		return MRC_CQ_LOCAL_INV;
	default:
		return MRC_CQ_SEND;
	}
}

/* Fires the CQ's completion event if the application armed it, as the daemon would have. */
static void raise_event(struct mrv_cq *cq)
{
	struct mrv_channel *ch = (struct mrv_channel *)cq->ibcq.channel;
	char one = 1;
	ssize_t told;

	if (!ch || !__atomic_exchange_n(&cq->ring.consumer->aux, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_add_fetch(&cq->ring.producer->aux, 1, __ATOMIC_RELEASE);
	told = send(ch->daemon_end, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)told;
}

/*
 * Flush completions for the entries of `ring` the daemon had not given back, then the slots
 * back as the consumer it no longer is; under the QP's lock, so no post interleaves.
 */
static void flush_ring(struct mrv_qp *qp, struct mrc_ring *ring, bool send_queue)
{
	struct mrv_cq *cq = send_queue ? qp->send_cq : qp->recv_cq;
	uint32_t from = __atomic_load_n(&ring->consumer->value, __ATOMIC_ACQUIRE);
	struct mrc_ring out;
	bool produced = false;

	if (ring->mine - from > ring->entries || from == ring->mine ||
	    mrc_ring_attach(&out, cq->mem, cq->mem_len, MRC_RING_CQ, 1))
		return;
	for (uint32_t i = from; i != ring->mine; i++) {
		const uint8_t *slot = ring->entry_base + (size_t)(i & (ring->entries - 1)) *
							 ring->entry_size;
		struct mrc_cq_entry e = { .status = MRC_CQ_WR_FLUSH_ERR,
					  .qp_num = qp->ibqpx.qp_base.qp_num };

		if (send_queue) {
			const struct mrc_sq_entry *s = (const struct mrc_sq_entry *)slot;

			e.wr_id = s->wr_id;
			e.opcode = flushed_opcode(s->opcode);
		} else {
			e.wr_id = ((const struct mrc_rq_entry *)slot)->wr_id;
			e.opcode = MRC_CQ_RECV;
		}
		if (mrc_ring_produce(&out, &e))
			break; /* a full CQ: an overrun, as verbs has it */
		produced = true;
	}
	__atomic_store_n(&ring->consumer->value, ring->mine, __ATOMIC_RELEASE);
	if (produced)
		raise_event(cq);
}

void mrv_flush_dead(struct mrv_context *ctx)
{
	/* one flusher at a time: each CQ ring has a single producer */
	pthread_mutex_lock(&ctx->qp_lock);
	for (struct mrv_qp *qp = ctx->qps; qp; qp = qp->next_in_ctx) {
		pthread_spin_lock(&qp->lock);
		flush_ring(qp, &qp->sq, true);
		if (!qp->srq) /* a shared queue's receives are not the QP's to flush */
			flush_ring(qp, &qp->rq, false);
		pthread_spin_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&ctx->qp_lock);
}

bool mrv_cq_polled_empty(struct mrv_cq *cq)
{
	struct mrv_context *ctx = cq->ctx;
	struct timespec ts;
	uint64_t now, due;

	if (!__atomic_load_n(&ctx->dead, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		due = __atomic_load_n(&ctx->next_liveness_ns, __ATOMIC_RELAXED);
		if (now < due || !__atomic_compare_exchange_n(&ctx->next_liveness_ns, &due,
							      now + LIVENESS_NS, false,
							      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return false;
		if (!daemon_hung_up(ctx))
			return false;
		mrv_mark_dead(ctx);
	}
	mrv_flush_dead(ctx); /* work posted since the last look fails too */
	return true;
}
