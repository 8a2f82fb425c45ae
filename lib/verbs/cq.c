/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Completion queues and channels. The daemon produces completions into the CQ ring; polling
 * is a read of shared memory, no system call. A completion channel is a datagram socket
 * pair: the daemon holds one end and sends a byte per event it raises on a CQ the
 * application armed (ibv_req_notify_cq), never waiting on it; ibv_get_cq_event reads one
 * and finds which CQ raised it from the per-CQ event count in the ring
 * (lib/include/metaroce/shm.h).
 *
 * With METAROCE_BUSY_POLL set (a budget as metaroced.conf's busy_poll takes it: 50us, yes,
 * no), ibv_get_cq_event first spins on its channel's armed CQs, marked MRC_CQ_ARM_SPINNING so
 * the daemon leaves them alone: a completion that satisfies an arm is taken as the event by
 * clearing the arm itself (the same compare-and-swap the daemon's firing uses, so exactly one
 * of the two raises it), and the application sleeps only when the window passes quietly; the
 * window adapts as the daemon's does (lib/shm/spin.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* --- channels ------------------------------------------------------------------------------ */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct mrv_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibch.fd = sv[0];
	ch->daemon_end = sv[1];
	ch->ibch.context = context;
	pthread_mutex_init(&ch->lock, NULL);
	return &ch->ibch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct mrv_channel *ch = (struct mrv_channel *)channel;

	if (ch->cqs) {
		errno = EBUSY; /* CQs still use it */
		return -1;
	}
	close(channel->fd);
	close(ch->daemon_end);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* METAROCE_BUSY_POLL, read once: 0 (the default) never spins. */
static uint64_t busy_poll_budget(void)
{
	static uint64_t budget = UINT64_MAX - 1; /* not read yet */
	uint64_t b = __atomic_load_n(&budget, __ATOMIC_RELAXED);
	const char *text;

	if (b != UINT64_MAX - 1)
		return b;
	text = getenv("METAROCE_BUSY_POLL");
	b = 0;
	if (text && *text && mrc_spin_parse_budget(text, &b))
		fprintf(stderr, "libmetaroce: METAROCE_BUSY_POLL must be no, yes or a duration such "
				"as 50us, not '%s': not spinning\n", text);
	__atomic_store_n(&budget, b, __ATOMIC_RELAXED);
	return b;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A completion waiting in the CQ that the arm `arm` fires for; under the CQ's lock, which
 * a thread polling it meanwhile holds to move the consumer index. */
static bool arm_satisfied(struct mrv_cq *cq, uint32_t arm)
{
	uint32_t from, armed_at = __atomic_load_n(&cq->armed_at, __ATOMIC_RELAXED);
	struct mrc_cq_entry e;
	bool found = false;

	pthread_spin_lock(&cq->lock);
	/* only completions added since the arm count, as the daemon fires for new ones only */
	from = armed_at - cq->ring.mine <= cq->ring.entries ? armed_at - cq->ring.mine : 0;
	if ((arm & ~MRC_CQ_ARM_SPINNING) == MRC_CQ_ARM_NEXT)
		found = mrc_ring_peek(&cq->ring, from, &e) == 1;
	for (uint32_t i = from; !found && i < cq->ring.entries && mrc_ring_peek(&cq->ring, i, &e) == 1;
	     i++)
		found = (e.flags & MRC_CQ_F_SOLICITED) || e.status != MRC_CQ_SUCCESS;
	pthread_spin_unlock(&cq->lock);
	return found;
}

/* Sets (or clears) the spinning bit of every armed CQ on the channel; under its lock. */
static void mark_spinning(struct mrv_channel *ch, bool spinning)
{
	for (struct mrv_cq *cq = ch->cqs; cq; cq = cq->next_on_channel) {
		uint32_t *aux = &cq->ring.consumer->aux;
		uint32_t arm = __atomic_load_n(aux, __ATOMIC_ACQUIRE), to;

		do {
			if (!arm) /* not armed, or the daemon fired it */
				break;
			to = spinning ? arm | MRC_CQ_ARM_SPINNING : arm & ~MRC_CQ_ARM_SPINNING;
			if (to == arm)
				break;
		} while (!__atomic_compare_exchange_n(aux, &arm, to, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE));
	}
	/* clearing: the daemon fences between producing and reading the arm; so do we between
	 * clearing and looking at the rings again */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* One look at the channel's CQs, under its lock: the CQ whose arm this takes (its event), or
 * NULL; *raised when the daemon fired one (its byte is in the socket), *armed when any CQ is
 * armed at all. */
static struct mrv_cq *take_event(struct mrv_channel *ch, bool *raised, bool *armed)
{
	*raised = *armed = false;
	for (struct mrv_cq *cq = ch->cqs; cq; cq = cq->next_on_channel) {
		uint32_t *aux = &cq->ring.consumer->aux;
		uint32_t arm = __atomic_load_n(aux, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&cq->ring.producer->aux, __ATOMIC_ACQUIRE) != cq->events_seen) {
			*raised = true;
			return NULL;
		}
		if (!arm)
			continue;
		*armed = true;
		if (arm_satisfied(cq, arm) &&
		    __atomic_compare_exchange_n(aux, &arm, 0, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return cq;
		/* a lost exchange: the daemon fired it, and the next look sees it raised */
	}
	return NULL;
}

/*
 * Spins for the channel's next event while the window allows (a blocking channel only: one
 * the application made non-blocking wants an answer at once). Returns the CQ whose arm it
 * took, or NULL: then the socket is read (*slept: after a quiet window, whose length and the
 * time until the socket answers teach the window).
 */
static struct mrv_cq *spin_for_event(struct mrv_channel *ch, uint64_t budget, bool *slept)
{
	struct mrv_cq *cq;
	bool raised, armed;
	int fl = fcntl(ch->ibch.fd, F_GETFL);

	*slept = false;
	if (fl < 0 || (fl & O_NONBLOCK))
		return NULL;
	pthread_mutex_lock(&ch->lock);
	if (ch->spin.budget_ns != budget)
		mrc_spin_init(&ch->spin, budget);
	mark_spinning(ch, true);
	for (;;) {
		uint64_t now = now_ns();

		cq = take_event(ch, &raised, &armed);
		if (cq) {
			mrc_spin_work(&ch->spin, now);
			break;
		}
		if (raised || !armed)
			break;
		if (!mrc_spin_idle(&ch->spin, now)) {
			/* about to sleep: the daemon fires from now on; what came meanwhile is
			 * taken here */
			mark_spinning(ch, false);
			cq = take_event(ch, &raised, &armed);
			*slept = !cq;
			if (*slept)
				mrc_spin_sleeping(&ch->spin, now);
			break;
		}
		/* another thread of the application may want the lock between looks */
		pthread_mutex_unlock(&ch->lock);
		mrc_cpu_relax();
		pthread_mutex_lock(&ch->lock);
	}
	mark_spinning(ch, false);
	pthread_mutex_unlock(&ch->lock);
	return cq;
}

/*
 * A blocking channel sleeps on its socket and on the daemon's control connection: a daemon
 * that dies fires no event, so its hang-up fails the outstanding work (fatal.c), which fires
 * the armed CQs' events. Returns 0 when the socket holds an event or a non-blocking read
 * should answer; -1 with EIO when the daemon is gone and no event is left.
 */
static int wait_event_or_hang_up(struct mrv_channel *ch)
{
	struct mrv_context *ctx = to_ctx(ch->ibch.context);
	int fl = fcntl(ch->ibch.fd, F_GETFL);

	for (;;) {
		struct pollfd p[2] = { { .fd = ch->ibch.fd, .events = POLLIN },
				       { .fd = ctx->ctl_fd, .events = POLLRDHUP } };
		bool dead = __atomic_load_n(&ctx->dead, __ATOMIC_ACQUIRE);

		if (fl < 0 || (fl & O_NONBLOCK))
			return 0;
		if (poll(p, dead ? 1 : 2, dead ? 0 : -1) < 0 && errno != EINTR)
			return -1;
		if (p[0].revents & POLLIN)
			return 0;
		if (dead) {
			errno = EIO;
			return -1;
		}
		if (p[1].revents & MRV_HANG_UP) {
			mrv_mark_dead(ctx);
			mrv_flush_dead(ctx);
		}
	}
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out, void **cq_context)
{
	struct mrv_channel *ch = (struct mrv_channel *)channel;
	uint64_t budget = busy_poll_budget();
	bool slept = false;
	char one;

	if (budget) {
		struct mrv_cq *cq = spin_for_event(ch, budget, &slept);

		if (cq) {
			*cq_out = (struct ibv_cq *)&cq->ibcq;
			*cq_context = cq->ibcq.cq_context;
			return 0;
		}
	}
	for (;;) {
		/* blocks or not as the application set the fd (O_NONBLOCK), like rdma-core's */
		if (wait_event_or_hang_up(ch) || read(channel->fd, &one, 1) != 1)
			return -1;
		pthread_mutex_lock(&ch->lock);
		if (slept) {
			mrc_spin_work(&ch->spin, now_ns()); /* how long it slept teaches the window */
			slept = false;
		}
		for (struct mrv_cq *cq = ch->cqs; cq; cq = cq->next_on_channel) {
			uint32_t raised = __atomic_load_n(&cq->ring.producer->aux, __ATOMIC_ACQUIRE);

			if (raised != cq->events_seen) {
				cq->events_seen++;
				pthread_mutex_unlock(&ch->lock);
				*cq_out = (struct ibv_cq *)&cq->ibcq;
				*cq_context = cq->ibcq.cq_context;
				return 0;
			}
		}
		if (!ch->orphaned) {
			pthread_mutex_unlock(&ch->lock);
			errno = EIO; /* an event no CQ accounts for: the daemon broke the protocol */
			return -1;
		}
		/* a destroyed CQ's event: dropped, as the kernel drops them, and read on */
		ch->orphaned--;
		pthread_mutex_unlock(&ch->lock);
	}
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* --- polling ------------------------------------------------------------------------------- */

static enum ibv_wc_status wc_status(uint8_t s)
{
	switch (s) {
	case MRC_CQ_SUCCESS: return IBV_WC_SUCCESS;
	case MRC_CQ_LOC_LEN_ERR: return IBV_WC_LOC_LEN_ERR;
	case MRC_CQ_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case MRC_CQ_REM_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case MRC_CQ_REM_INV_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
	case MRC_CQ_REM_OP_ERR: return IBV_WC_REM_OP_ERR;
	case MRC_CQ_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
	case MRC_CQ_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case MRC_CQ_LOC_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	case MRC_CQ_LOC_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case MRC_CQ_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
	default: return IBV_WC_GENERAL_ERR;
	}
}

static enum ibv_wc_opcode wc_opcode(uint8_t op)
{
	switch (op) {
	case MRC_CQ_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
	case MRC_CQ_RDMA_READ: return IBV_WC_RDMA_READ;
	case MRC_CQ_COMP_SWAP: return IBV_WC_COMP_SWAP;
	case MRC_CQ_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case MRC_CQ_RECV: return IBV_WC_RECV;
	case MRC_CQ_RECV_RDMA_WITH_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	case MRC_CQ_BIND_MW: return IBV_WC_BIND_MW;
	case MRC_CQ_LOCAL_INV: return IBV_WC_LOCAL_INV;
	default: return IBV_WC_SEND;
	}
}

static unsigned wc_flags(const struct mrc_cq_entry *e)
{
	return (e->flags & MRC_CQ_F_WITH_IMM ? IBV_WC_WITH_IMM : 0) |
	       (e->flags & MRC_CQ_F_WITH_INV ? IBV_WC_WITH_INV : 0) |
	       (e->flags & MRC_CQ_F_GRH ? IBV_WC_GRH : 0);
}

static void to_wc(const struct mrc_cq_entry *e, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	wc->status = wc_status(e->status);
	wc->opcode = wc_opcode(e->opcode);
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm; /* the bits the sender posted, untouched; or invalidated_rkey */
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->sl = e->sl;
	wc->wc_flags = wc_flags(e);
	wc->pkey_index = 0;
}

int mrv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct mrv_cq *cq = (struct mrv_cq *)ibcq;
	struct mrc_cq_entry e;
	int got = 0;
	bool flushed = false, look;

again:
	pthread_spin_lock(&cq->lock);
	while (got < n) {
		int r = mrc_ring_consume(&cq->ring, &e);

		if (r < 0) {
			pthread_spin_unlock(&cq->lock);
			return -1; /* the ring is corrupt: verbs has only "error" for that */
		}
		if (!r)
			break;
		to_wc(&e, &wc[got++]);
	}
	look = !got && !flushed && n > 0 && mrv_cq_empty_look(cq);
	pthread_spin_unlock(&cq->lock);
	if (look && mrv_cq_polled_empty(cq)) {
		flushed = true;
		goto again;
	}
	return got;
}

int mrv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct mrv_cq *cq = (struct mrv_cq *)ibcq;

	if (!ibcq->channel)
		return EINVAL;
	/* a spinning ibv_get_cq_event counts completions from here on, as the daemon does */
	__atomic_store_n(&cq->armed_at, __atomic_load_n(&cq->ring.producer->value, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&cq->ring.consumer->aux,
			 solicited_only ? MRC_CQ_ARM_SOLICITED : MRC_CQ_ARM_NEXT, __ATOMIC_RELEASE);
	/* the arm is visible before the application's next poll reads the producer index; the
	 * daemon fences between producing and reading the arm, so one of the two sees the other */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/* --- extended polling ---------------------------------------------------------------------- */

static int take(struct mrv_cq *cq)
{
	int r = mrc_ring_consume(&cq->ring, &cq->cur);

	if (r <= 0)
		return r < 0 ? EIO : ENOENT;
	cq->ibcq.wr_id = cq->cur.wr_id;
	cq->ibcq.status = wc_status(cq->cur.status);
	return 0;
}

static int start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct mrv_cq *cq = (struct mrv_cq *)ibcq;
	bool look;
	int err;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	err = take(cq);
	look = err == ENOENT && mrv_cq_empty_look(cq);
	if (err)
		pthread_spin_unlock(&cq->lock); /* verbs: no end_poll after a failed start */
	if (look && mrv_cq_polled_empty(cq)) {
		pthread_spin_lock(&cq->lock);
		err = take(cq);
		if (err)
			pthread_spin_unlock(&cq->lock);
	}
	return err;
}

static int next_poll(struct ibv_cq_ex *ibcq)
{
	return take((struct mrv_cq *)ibcq);
}

static void end_poll(struct ibv_cq_ex *ibcq)
{
	pthread_spin_unlock(&((struct mrv_cq *)ibcq)->lock);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *c)
{
	return wc_opcode(((struct mrv_cq *)c)->cur.opcode);
}

static uint32_t read_vendor_err(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

static uint32_t read_byte_len(struct ibv_cq_ex *c)
{
	return ((struct mrv_cq *)c)->cur.byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *c)
{
	return ((struct mrv_cq *)c)->cur.imm;
}

static uint8_t read_sl(struct ibv_cq_ex *c)
{
	return ((struct mrv_cq *)c)->cur.sl;
}

static uint32_t read_qp_num(struct ibv_cq_ex *c)
{
	return ((struct mrv_cq *)c)->cur.qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *c)
{
	return ((struct mrv_cq *)c)->cur.src_qp;
}

static uint32_t read_zero32(struct ibv_cq_ex *c)
{
	(void)c;
	return 0; /* source QP, SLID: meaningful for UD and IB only */
}

static unsigned int read_wc_flags(struct ibv_cq_ex *c)
{
	return wc_flags(&((struct mrv_cq *)c)->cur);
}

static uint8_t read_zero8(struct ibv_cq_ex *c)
{
	(void)c;
	return 0; /* SL, DLID path bits: IB link-layer fields, zero on RoCE */
}

/* --- create and destroy -------------------------------------------------------------------- */

static struct mrv_cq *cq_new(struct ibv_context *context, uint32_t cqe, void *cq_context,
			     struct ibv_comp_channel *channel, uint64_t flags)
{
	struct mrv_context *ctx = to_ctx(context);
	struct mrc_ctl_create_cq req = { .entries = cqe ? cqe : 1 };
	struct mrc_ctl_cq rep;
	struct mrv_cq *cq;
	int fd = -1, chfd = channel ? ((struct mrv_channel *)channel)->daemon_end : -1;
	unsigned n_fds = 1;
	uint32_t len = 0;
	int err;

	if (cqe > (1u << 14) || (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	err = mrv_request(ctx, MRC_CTL_CREATE_CQ, &req, sizeof(req), channel ? &chfd : NULL,
			  channel ? 1 : 0, &rep, sizeof(rep), &len, &fd, &n_fds);
	if (!err && (len != sizeof(rep) || n_fds != 1))
		err = EPROTO;
	if (err)
		goto fail;
	cq->mem_len = MRC_RING_BYTES((size_t)rep.entries, sizeof(struct mrc_cq_entry));
	cq->mem = mmap(NULL, cq->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (cq->mem == MAP_FAILED ||
	    mrc_ring_attach(&cq->ring, cq->mem, cq->mem_len, MRC_RING_CQ, 0)) {
		err = EPROTO;
		goto fail_daemon;
	}
	cq->ctx = ctx;
	cq->handle = rep.handle;
	cq->wc_flags = flags;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.handle = rep.handle;
	cq->ibcq.cqe = (int)rep.entries;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	cq->ibcq.start_poll = start_poll;
	cq->ibcq.next_poll = next_poll;
	cq->ibcq.end_poll = end_poll;
	cq->ibcq.read_opcode = read_opcode;
	cq->ibcq.read_vendor_err = read_vendor_err;
	cq->ibcq.read_byte_len = read_byte_len;
	cq->ibcq.read_imm_data = read_imm_data;
	cq->ibcq.read_qp_num = read_qp_num;
	cq->ibcq.read_src_qp = read_src_qp;
	cq->ibcq.read_wc_flags = read_wc_flags;
	cq->ibcq.read_slid = read_zero32;
	cq->ibcq.read_sl = read_sl;
	cq->ibcq.read_dlid_path_bits = read_zero8;
	if (channel) {
		struct mrv_channel *ch = (struct mrv_channel *)channel;

		pthread_mutex_lock(&ch->lock);
		cq->next_on_channel = ch->cqs;
		ch->cqs = cq;
		pthread_mutex_unlock(&ch->lock);
	}
	return cq;

fail_daemon: {
	struct mrc_ctl_handle h = { .handle = rep.handle };

	if (cq->mem != MAP_FAILED)
		munmap(cq->mem, cq->mem_len);
	mrv_request(ctx, MRC_CTL_DESTROY_CQ, &h, sizeof(h), NULL, 0, NULL, 0, NULL, NULL, NULL);
}
fail:
	free(cq);
	errno = err;
	return NULL;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct mrv_cq *cq;

	if (cqe < 1 || comp_vector != 0) {
		errno = EINVAL;
		return NULL;
	}
	cq = cq_new(context, (uint32_t)cqe, cq_context, channel, 0);
	return cq ? (struct ibv_cq *)&cq->ibcq : NULL;
}

struct ibv_cq_ex *mrv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct mrv_cq *cq;

	/* completion timestamps, VLANs, flow tags: nothing here fills them, so refuse them */
	if ((attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    attr->comp_vector != 0 || !attr->cqe) {
		errno = attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	cq = cq_new(context, attr->cqe, attr->cq_context, attr->channel, attr->wc_flags);
	return cq ? &cq->ibcq : NULL;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct mrv_cq *cq = (struct mrv_cq *)ibcq;
	struct mrc_ctl_handle h = { .handle = cq->handle };
	int err = mrv_request(cq->ctx, MRC_CTL_DESTROY_CQ, &h, sizeof(h), NULL, 0, NULL, 0, NULL,
			      NULL, NULL);

	if (err && err != ENODEV)
		return err; /* EBUSY: a QP still uses it */
	if (ibcq->channel) {
		struct mrv_channel *ch = (struct mrv_channel *)ibcq->channel;

		pthread_mutex_lock(&ch->lock);
		for (struct mrv_cq **p = &ch->cqs; *p; p = &(*p)->next_on_channel)
			if (*p == cq) {
				*p = cq->next_on_channel;
				break;
			}
		ch->orphaned += __atomic_load_n(&cq->ring.producer->aux, __ATOMIC_ACQUIRE) -
				cq->events_seen;
		pthread_mutex_unlock(&ch->lock);
	}
	munmap(cq->mem, cq->mem_len);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	/* the ring is sized at creation; a CQ already as large is a no-op resize */
	if (cqe >= 1 && cqe <= cq->cqe)
		return 0;
	return EOPNOTSUPP;
}
