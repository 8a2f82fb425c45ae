/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "clients.h"
#include "fastpath.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "core/shm_map.h"
#include "daemon.h"
#include "log.h"
#include "proto/random.h"
#include "proto/seq.h"

#define MRCD_TX_BATCH 32
#define MRCD_PUMP_BUDGET 512  /* packets per pump before receive gets a turn */
#define MRCD_TX_RETRY_NS 20000 /* a datagram the local queue refused is tried again after */
#define MRCD_TX_HOLD_NS 2000000u /* a queue that takes nothing for this long is dead ... */
#define MRCD_TX_DEAD_TRIES 64	 /* ... if it was tried this often in that time */
#define MRCD_TX_BACKLOG 16 /* datagrams waiting on refusing queues before the engine waits */
#define RESOLVE_TIMEOUT_NS 2000000000ull


/* the engine's path states are what the control protocol reports */
_Static_assert((int)MRC_PATH_ACTIVE == (int)MRC_CTL_PATH_UP &&
		       (int)MRC_PATH_FAILED == (int)MRC_CTL_PATH_FAILED &&
		       (int)MRC_PATH_DRAINED == (int)MRC_CTL_PATH_DRAINED &&
		       (int)MRC_PATH_PROBING == (int)MRC_CTL_PATH_PROBING,
	       "path states");

/* --- handles ---------------------------------------------------------------------------- */

/* A stale handle of a reused slot never matches: a generation sits above the slot. */
static uint32_t make_handle(struct mrcd_clients *c, unsigned slot)
{
	c->generation = (c->generation + 1) & ((1u << MRCD_HANDLE_SLOT_BITS) - 1);
	if (!c->generation)
		c->generation = 1;
	return c->generation << MRCD_HANDLE_SLOT_BITS | slot;
}

static struct mrcd_qp *qp_by_num(struct mrcd_clients *c, uint32_t qpn)
{
	struct mrcd_qp *qp = &c->qps[mrcd_qp_slot(qpn)];

	return qp->owner >= 0 && qp->qpn == qpn ? qp : NULL;
}

static struct mrcd_cq *cq_by_handle(struct mrcd_clients *c, int owner, uint32_t h)
{
	struct mrcd_cq *cq = &c->cqs[h & (MRCD_MAX_CQS - 1)];

	return cq->owner == owner && cq->handle == h ? cq : NULL;
}

/*
 * A key is the region's slot (14 bits) over 18 random bits drawn at each registration, so a
 * guesser has no better than a 2^-18 chance per try; never 0, a common uninitialised
 * key. The layout is the XDP program's (MRC_KEY_SLOT).
 */
static struct mrcd_mr *mr_by_key(struct mrcd_clients *c, int owner, uint32_t key)
{
	uint32_t slot = MRC_KEY_SLOT(key);
	struct mrcd_mr *mr;

	if (slot >= MRCD_MAX_MRS)
		return NULL;
	mr = &c->mrs[slot];
	return mr->owner == owner && mr->key == key && !mr->retired ? mr : NULL;
}

/* --- init ------------------------------------------------------------------------------- */

/* The tables and transmit buffers, whichever exist; their pointers left NULL. */
static void free_tables(struct mrcd_clients *c)
{
	free(c->mrs);
	free(c->cqs);
	free(c->qps);
	free(c->tx_buf);
	free(c->tx_dgrams);
	c->mrs = NULL;
	c->cqs = NULL;
	c->qps = NULL;
	c->tx_buf = NULL;
	c->tx_dgrams = NULL;
}

int mrcd_clients_init(struct mrcd *d)
{
	struct mrcd_clients *c = &d->clients;

	memset(c, 0, sizeof(*c));
	c->fast = d->backend.fast;
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		c->client[i] = (struct mrcd_client){ .fd = -1, .doorbell_fd = -1 };
	c->mrs = calloc(MRCD_MAX_MRS, sizeof(*c->mrs));
	c->cqs = calloc(MRCD_MAX_CQS, sizeof(*c->cqs));
	c->qps = calloc(MRCD_MAX_QPS, sizeof(*c->qps));
	c->tx_buf = malloc((size_t)MRCD_TX_BATCH * d->cfg.mtu);
	c->tx_dgrams = calloc(MRCD_TX_BATCH, sizeof(*c->tx_dgrams));
	if (!c->mrs || !c->cqs || !c->qps || !c->tx_buf || !c->tx_dgrams) {
		/* nothing is owned yet: free the tables, reclaim nothing */
		free_tables(c);
		memset(c, 0, sizeof(*c));
		return -1;
	}
	for (unsigned i = 0; i < MRCD_MAX_MRS; i++)
		c->mrs[i].owner = -1;
	for (unsigned i = 0; i < MRCD_MAX_CQS; i++)
		c->cqs[i].owner = -1;
	for (unsigned i = 0; i < MRCD_MAX_QPS; i++)
		c->qps[i].owner = -1;
	/* every QP's receive side joins it; capacity 0 (the default) sends no hints, and SIGHUP
	 * may change it (rx_capacity) */
	if (mrc_rate_domain_init(&c->rate, d->cfg.rx_capacity_bps / 1000, MRCD_MAX_QPS)) {
		free_tables(c);
		memset(c, 0, sizeof(*c));
		return -1;
	}
	if (mrcd_linger_init(&c->lingering, MRCD_MAX_QPS)) {
		mrcd_clients_fini(d);
		return -1;
	}
	/* its own seed: keys must not be predictable from anything on the wire */
	if (getrandom(&c->seed, sizeof(c->seed), 0) != sizeof(c->seed)) {
		mrcd_clients_fini(d);
		return -1;
	}
	return 0;
}

/* --- memory regions --------------------------------------------------------------------- */

static void mr_unmap(struct mrcd_clients *c, struct mrcd_mr *mr)
{
	if (c->fast)
		mrcd_fastpath_mr_clear(c->fast, (uint32_t)(mr - c->mrs));
	munmap(mr->span, mr->span_len);
	c->mapped_bytes -= mr->span_len;
	mr->owner = -1;
	mr->key = 0;
	mr->retired = false;
}

/*
 * True when every piece of work the client's QPs had taken at its latest deregistration has
 * finished: sends and receives completed (their ring slots given back), READ responses sent.
 * Work the engine takes later cannot name a retired region: its key died with ibv_dereg_mr.
 */
static bool past_retire_marks(struct mrcd_clients *c, int owner)
{
	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		const struct mrcd_qp *qp = &c->qps[i];
		struct mrc_conn_info info;

		if (qp->owner != owner || !qp->conn)
			continue;
		mrc_conn_get_info(qp->conn, &info);
		if (mrc_seq_lt(qp->sq.released, qp->retire_sq) ||
		    mrc_seq_lt(qp->rq.released, qp->retire_rq) ||
		    mrc_seq_lt(info.rr_finished, qp->retire_rr))
			return false;
	}
	return true;
}

/*
 * ibv_dereg_mr: the key stops working at once; the mapping stays until the work the client's
 * QPs had taken by now is done, so the engine never touches memory the daemon has unmapped,
 * or reused for another client. Until then the region still counts against the client.
 */
static void mr_deregister(struct mrcd_clients *c, struct mrcd_mr *mr)
{
	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		struct mrcd_qp *qp = &c->qps[i];
		struct mrc_conn_info info;

		if (qp->owner != mr->owner || !qp->conn)
			continue;
		mrc_conn_get_info(qp->conn, &info);
		qp->retire_sq = qp->sq.mine;
		qp->retire_rq = qp->rq.mine;
		qp->retire_rr = info.rr_started;
	}
	c->n_mrs--;
	if (past_retire_marks(c, mr->owner)) {
		c->client[mr->owner].n_mrs--;
		mr_unmap(c, mr);
		return;
	}
	if (c->fast) /* the key stops working in XDP at once too; mr_unmap does it otherwise */
		mrcd_fastpath_mr_clear(c->fast, (uint32_t)(mr - c->mrs));
	mr->key = 0;
	mr->retired = true;
	c->n_retired++;
	c->client[mr->owner].n_retired++;
}

/* At most once a millisecond: the check walks the client's QPs. */
static void reap_retired(struct mrcd_clients *c, uint64_t now)
{
	if (now < c->next_reap_ns)
		return;
	c->next_reap_ns = now + 1000000;
	for (unsigned owner = 0; owner < MRCD_MAX_CLIENTS && c->n_retired; owner++) {
		if (!c->client[owner].n_retired || !past_retire_marks(c, (int)owner))
			continue;
		for (unsigned i = 0; i < MRCD_MAX_MRS && c->client[owner].n_retired; i++) {
			struct mrcd_mr *mr = &c->mrs[i];

			if (mr->retired && mr->owner == (int)owner) {
				c->n_retired--;
				c->client[owner].n_retired--;
				c->client[owner].n_mrs--;
				mr_unmap(c, mr);
			}
		}
	}
}

/*
 * Maps the client's segments back to back into one reserved span, so the region is one
 * contiguous range here as it is in the client.
 */
static int mr_map(const struct mrcd_clients *c, const struct mrc_ctl_reg_mr *r,
		  const struct mrc_ctl_mr_segment *seg, const int *fds, uint8_t **span_out,
		  size_t *len_out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), span = 0, at = 0;
	uint8_t *base;

	for (unsigned i = 0; i < r->n_segments; i++) {
		if (!seg[i].length || seg[i].length % page || seg[i].fd_offset % page ||
		    seg[i].length > (1ull << 40) || seg[i].fd_offset > (1ull << 40))
			return -EINVAL;
		uint64_t bytes;
		struct statfs fs;
		int err;

		/* a page map of the fast path: its size is fixed at creation */
		if (c->fast && mrcd_fastpath_is_page_map(c->fast, fds[i], &bytes)) {
			if (seg[i].fd_offset + seg[i].length > bytes)
				return -EINVAL;
			span += seg[i].length;
			continue;
		}
		/* sealed against shrinking, as long as the segment claims, and ordinary shmem
		 * (hugetlbfs pages could be missing at fault time: SIGBUS in the daemon) */
		err = mrc_shm_check(fds[i], seg[i].fd_offset + seg[i].length);
		if (err)
			return err;
		if (fstatfs(fds[i], &fs) || fs.f_type != TMPFS_MAGIC)
			return -EINVAL;
		span += seg[i].length;
	}
	if (r->offset >= span || r->length > span - r->offset)
		return -EINVAL;
	base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	for (unsigned i = 0; i < r->n_segments; i++) {
		if (mmap(base + at, seg[i].length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 fds[i], (off_t)seg[i].fd_offset) == MAP_FAILED) {
			int err = -errno;

			munmap(base, span);
			return err;
		}
		at += seg[i].length;
	}
	*span_out = base;
	*len_out = span;
	return 0;
}

#define MRCD_PAGE_MAP_MAX (4ull << 30)

static uint64_t page_quota(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size / 2 : MRCD_PAGE_MAP_MAX;
}

/*
 * A region in one page map is the XDP program's to place into as well; any other (memfd
 * pages, or several segments) stays on the slow path, which handles everything anyway.
 */
static void mr_hand_to_fast_path(struct mrcd_clients *c, const struct mrcd_mr *mr,
				 const struct mrc_ctl_reg_mr *r, const struct mrc_ctl_mr_segment *seg,
				 const int *fds)
{
	uint32_t access = (mr->access & MRC_CTL_ACCESS_REMOTE_WRITE ? MRC_XDP_ACCESS_REMOTE_WRITE
								    : 0) |
			  (mr->access & MRC_CTL_ACCESS_LOCAL_WRITE ? MRC_XDP_ACCESS_LOCAL_WRITE : 0);
	uint64_t bytes;
	int err;

	if (!c->fast || r->n_segments != 1 || !access ||
	    !mrcd_fastpath_is_page_map(c->fast, fds[0], &bytes))
		return;
	err = mrcd_fastpath_mr_set(c->fast, (uint32_t)(mr - c->mrs), mr->key, access,
				   (uint32_t)mr->owner + 1, mr->iova, mr->length, fds[0],
				   seg[0].fd_offset + r->offset);
	if (err)
		mrcd_log(LOG_WARNING, "region %08x: not placed in XDP: %s", mr->key,
			 strerror(-err));
}

static int reg_mr(struct mrcd *d, unsigned owner, const uint8_t *payload, size_t len,
		  const int *fds, unsigned n_fds, struct mrc_ctl_mr *out)
{
	struct mrcd_clients *c = &d->clients;
	struct mrc_ctl_mr_segment seg[MRC_CTL_MAX_SEGMENTS];
	struct mrc_ctl_reg_mr r;
	struct mrcd_mr *mr = NULL;
	unsigned slot;
	int err;

	if (len < sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	if (!r.n_segments || r.n_segments > MRC_CTL_MAX_SEGMENTS ||
	    len != sizeof(r) + r.n_segments * sizeof(seg[0]) || n_fds != r.n_segments ||
	    !r.length || (r.access & ~MRC_CTL_ACCESS_ALL) || r.iova > UINT64_MAX - r.length)
		return -EINVAL;
	memcpy(seg, payload + sizeof(r), r.n_segments * sizeof(seg[0]));
	if (c->client[owner].n_mrs >= MRCD_CLIENT_MAX_MRS)
		return -ENOSPC;
	/* next fit, not first fit: a slot just freed is the last to be handed out again, so
	 * an XDP run still reading the old region's slot is long over by then */
	for (unsigned k = 0; k < MRCD_MAX_MRS - 1; k++) {
		slot = 1 + (c->next_mr_slot + k) % (MRCD_MAX_MRS - 1);
		if (c->mrs[slot].owner < 0) {
			mr = &c->mrs[slot];
			c->next_mr_slot = slot % (MRCD_MAX_MRS - 1);
			break;
		}
	}
	if (!mr)
		return -ENOSPC;
	err = mr_map(c, &r, seg, fds, &mr->span, &mr->span_len);
	if (err)
		return err;
	mr->key = slot << MRC_XDP_KEY_SLOT_SHIFT |
		  ((uint32_t)mrc_splitmix64(&c->seed) & MRC_KEY_RANDOM_MASK) | 1;
	mr->owner = (int)owner;
	mr->iova = r.iova;
	mr->length = r.length;
	mr->access = r.access;
	mr->base = mr->span + r.offset;
	mr_hand_to_fast_path(c, mr, &r, seg, fds);
	c->mapped_bytes += mr->span_len;
	c->n_mrs++;
	c->client[owner].n_mrs++;
	out->lkey = out->rkey = mr->key;
	return 0;
}

/* Engine callback: a key and a range to host memory, for the peer's one-sided operations. */
static int mr_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		     uint8_t **host)
{
	struct mrcd_qp *qp = user;
	struct mrcd *d = qp->daemon;
	struct mrcd_mr *mr = mr_by_key(&d->clients, qp->owner, key);
	uint32_t need = (access & MRC_ACCESS_REMOTE_WRITE ? MRC_CTL_ACCESS_REMOTE_WRITE : 0) |
			(access & MRC_ACCESS_REMOTE_READ ? MRC_CTL_ACCESS_REMOTE_READ : 0);

	if (!mr || (mr->access & need) != need || addr < mr->iova ||
	    addr - mr->iova > mr->length || len > mr->length - (addr - mr->iova))
		return -1;
	*host = mr->base + (addr - mr->iova);
	return 0;
}

/* A client's scatter element to host memory; `write` when the daemon will store into it. */
static int local_sge(struct mrcd *d, int owner, const struct mrc_shm_sge *in, bool write,
		     struct mrc_sge *out)
{
	struct mrcd_mr *mr = mr_by_key(&d->clients, owner, in->lkey);

	if (!mr || (write && !(mr->access & MRC_CTL_ACCESS_LOCAL_WRITE)) || in->addr < mr->iova ||
	    in->addr - mr->iova > mr->length || in->length > mr->length - (in->addr - mr->iova))
		return -1;
	out->host = mr->base + (in->addr - mr->iova);
	out->addr = in->addr;
	out->length = in->length;
	out->lkey = in->lkey;
	return 0;
}

/* --- completion queues ------------------------------------------------------------------ */

static void cq_free(struct mrcd_clients *c, struct mrcd_cq *cq)
{
	if (cq->notify_pending)
		c->n_notify_pending--;
	munmap(cq->mem, cq->mem_len);
	c->mapped_bytes -= cq->mem_len;
	if (cq->channel_fd >= 0) {
		close(cq->channel_fd);
		c->client[cq->owner].channels--;
	}
	c->n_cqs--;
	c->client[cq->owner].n_cqs--;
	cq->owner = -1;
	cq->handle = 0;
}

static bool is_unix_datagram(int fd)
{
	int type = 0, domain = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len))
		return false;
	len = sizeof(domain);
	return !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) && domain == AF_UNIX &&
	       type == SOCK_DGRAM;
}

/* The doorbell must be an eventfd: a pipe or socket could stay readable (EOF) forever. */
static bool is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

static uint32_t ring_entries(uint32_t want)
{
	uint32_t n = 16;

	while (n < want && n < MRCD_MAX_RING_ENTRIES)
		n <<= 1;
	return n;
}

/* A ring this daemon formats and maps; the fd goes to the client. */
static int ring_new(struct mrcd_clients *c, uint16_t kind, uint32_t entries, uint32_t qpn,
		    void **mem, size_t *len, struct mrc_ring *ring, int *fd_out)
{
	size_t bytes = MRC_RING_BYTES((size_t)entries, mrc_ring_entry_size(kind));
	int fd = mrc_shm_create("metaroce-ring", bytes);
	void *m;

	if (fd < 0)
		return fd;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	mrc_ring_format(m, bytes, kind, entries, qpn);
	/* the daemon consumes SQ and RQ and produces into CQs */
	mrc_ring_attach(ring, m, bytes, kind, kind == MRC_RING_CQ);
	*mem = m;
	*len = bytes;
	*fd_out = fd;
	c->mapped_bytes += bytes;
	return 0;
}

static int create_cq(struct mrcd *d, unsigned owner, const uint8_t *payload, size_t len,
		     int *fds, unsigned n_fds, struct mrc_ctl_cq *out, int *out_fd)
{
	struct mrcd_clients *c = &d->clients;
	struct mrc_ctl_create_cq r;
	struct mrcd_cq *cq = NULL;
	unsigned slot;
	int err;

	if (len != sizeof(r) || n_fds > 1)
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	if (!r.entries || r.entries > MRCD_MAX_RING_ENTRIES)
		return -EINVAL;
	if (n_fds && !is_unix_datagram(fds[0]))
		return -EBADF; /* a completion channel is the library's datagram socket */
	if (n_fds && c->client[owner].channels >= MRCD_CLIENT_MAX_CHANNEL_FDS)
		return -EMFILE;
	if (c->client[owner].n_cqs >= MRCD_CLIENT_MAX_CQS)
		return -ENOSPC;
	for (slot = 0; slot < MRCD_MAX_CQS; slot++)
		if (c->cqs[slot].owner < 0) {
			cq = &c->cqs[slot];
			break;
		}
	if (!cq)
		return -ENOSPC;
	memset(cq, 0, sizeof(*cq));
	err = ring_new(c, MRC_RING_CQ, ring_entries(r.entries), 0, &cq->mem, &cq->mem_len,
		       &cq->ring, out_fd);
	if (err) {
		cq->owner = -1;
		return err;
	}
	cq->owner = (int)owner;
	cq->handle = make_handle(c, slot);
	cq->channel_fd = n_fds ? fds[0] : -1;
	if (n_fds) {
		fds[0] = -1;
		c->client[owner].channels++;
	}
	c->n_cqs++;
	c->client[owner].n_cqs++;
	out->handle = cq->handle;
	out->entries = cq->ring.entries;
	return 0;
}

/*
 * Wakes the client's completion channel if it armed this CQ for this completion. The channel
 * is a datagram socket and the send never waits: a client cannot stall the daemon through it.
 */
static void cq_notify(struct mrcd_clients *c, struct mrcd_cq *cq, bool solicited_or_error)
{
	uint32_t *arm = &cq->ring.consumer->aux;
	uint32_t want;
	char one = 1;

	/* the completion was published before; the arm is read after it, so the library's
	 * arm-then-poll and this produce-then-read cannot both miss (its fence pairs with it) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	want = __atomic_load_n(arm, __ATOMIC_ACQUIRE);
	if (cq->channel_fd < 0 || !want ||
	    (want == MRC_CQ_ARM_SOLICITED && !solicited_or_error))
		return;
	/* only one completion fires an arming, even if the client re-arms concurrently */
	if (!__atomic_compare_exchange_n(arm, &want, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	__atomic_fetch_add(&cq->ring.producer->aux, 1, __ATOMIC_RELEASE);
	if (send(cq->channel_fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && !cq->notify_pending) {
		/* the client is not reading its channel: the event is counted, the byte that
		 * wakes it is sent again from the pump */
		cq->notify_pending = true;
		c->n_notify_pending++;
	}
}

static void retry_notifications(struct mrcd_clients *c)
{
	char one = 1;

	for (unsigned i = 0; i < MRCD_MAX_CQS && c->n_notify_pending; i++) {
		struct mrcd_cq *cq = &c->cqs[i];

		if (cq->owner >= 0 && cq->notify_pending &&
		    send(cq->channel_fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) {
			cq->notify_pending = false;
			c->n_notify_pending--;
		}
	}
}

static void cq_push(struct mrcd *d, struct mrcd_qp *qp, bool recv, struct mrc_cq_entry *e)
{
	struct mrcd_cq *cq = &d->clients.cqs[recv ? qp->recv_cq : qp->send_cq];

	e->qp_num = qp->qpn;
	qp->completions++;
	if (e->status != MRC_CQ_SUCCESS)
		qp->error_completions++;
	if (mrc_ring_produce(&cq->ring, e)) {
		cq->overruns++;
		qp->cq_overrun = true; /* the pump fails the QP, outside the engine's callback */
		return;
	}
	cq_notify(&d->clients, cq, (e->flags & MRC_CQ_F_SOLICITED) || e->status != MRC_CQ_SUCCESS);
}

/*
 * A ring slot goes back to the library only when the work it described has completed: the
 * SQ and RQ then hold exactly max_send_wr and max_recv_wr requests, as verbs counts them,
 * and the inline bytes the library keeps per SQ slot cannot be overwritten while the engine
 * may still send them. Work completes in ring order (RC), so a completion gives back every
 * slot up to its own; unsignaled sends are given back by the next signaled one, which is
 * also when verbs lets the application count them complete.
 */
static void release_through(struct mrc_ring *ring, uint32_t idx)
{
	if (idx + 1 - ring->released <= ring->mine - ring->released)
		mrc_ring_release(ring, idx + 1);
}

/* Engine work requests carry the ring index; the application's wr_id waits in a shadow. */
static void on_complete(void *user, bool from_recv_queue, const struct mrc_completion *wc)
{
	struct mrcd_qp *qp = user;
	struct mrc_ring *ring = from_recv_queue ? &qp->rq : &qp->sq;
	uint64_t *shadow = from_recv_queue ? qp->rq_wr_id : qp->sq_wr_id;
	uint32_t idx = (uint32_t)wc->wr_id;
	struct mrc_cq_entry e = { 0 };

	if (wc->status != MRC_WC_SUCCESS && wc->status != MRC_WC_WR_FLUSH_ERR)
		mrcd_log(LOG_DEBUG, "QP %u: work request %llu completed with %s", qp->qpn,
			 (unsigned long long)shadow[idx & (ring->entries - 1)],
			 mrc_wc_status_name(wc->status));
	mrcd_cq_from_completion(wc, &e);
	e.wr_id = shadow[idx & (ring->entries - 1)];
	/* the slot first: an application that sees the completion may post again at once */
	release_through(ring, idx);
	cq_push(qp->daemon, qp, from_recv_queue, &e);
}

/* --- queue pairs ------------------------------------------------------------------------ */

static void apply_drains(const struct mrcd *d, struct mrcd_qp *qp);

/*
 * The application destroyed the QP, or its client went: the rings, the shadows and the slot
 * go at once; the engine connection lingers (SPEC 11.4) so the peer hears every
 * acknowledgement it still needs, then goes by itself (mrcd_clients_pump).
 */
/* A QP's counts go into the totals of those gone before it. */
static void qp_retire_counts(struct mrcd_clients *c, const struct mrcd_qp *qp)
{
	c->retired.completions += qp->completions;
	c->retired.error_completions += qp->error_completions;
	for (unsigned k = 0; qp->conn && k < mrc_conn_n_paths(qp->conn); k++) {
		const struct mrc_path *p = mrc_conn_path(qp->conn, k);
		unsigned plane = p->plane % MRC_MAX_PLANES;

		c->retired.path_tx[plane] += p->stats.tx_packets;
		c->retired.path_retx[plane] += p->stats.retransmits;
		c->retired.path_ecn[plane] += p->stats.ecn_echoes;
	}
}

static void qp_free(struct mrcd_clients *c, struct mrcd_qp *qp)
{
	qp_retire_counts(c, qp);
	if (qp->fast)
		mrcd_fastpath_qp_clear(c->fast, qp->qpn);
	if (qp->conn) {
		struct mrcd_lingering l = { .qpn = qp->qpn, .conn = qp->conn,
					    .peer_node = qp->peer_node, .peer_port = qp->peer_port,
					    .peer_planes = qp->peer_planes };

		memcpy(l.peer_addr, qp->peer_addr, sizeof(l.peer_addr));
		mrc_conn_close(qp->conn, mrcd_now_ns());
		mrcd_linger_add(&c->lingering, mrcd_qp_slot(qp->qpn), &l);
		qp->conn = NULL;
	}
	free(qp->sq_wr_id);
	free(qp->rq_wr_id);
	munmap(qp->sq_mem, qp->sq_len);
	munmap(qp->rq_mem, qp->rq_len);
	c->mapped_bytes -= qp->sq_len + qp->rq_len;
	/* out of the active list: the last entry takes its place */
	for (unsigned j = 0; j < c->n_qps; j++)
		if (c->active[j] == (uint16_t)(qp - c->qps)) {
			c->active[j] = c->active[c->n_qps - 1];
			break;
		}
	c->n_qps--;
	c->client[qp->owner].n_qps--;
	memset(qp, 0, sizeof(*qp));
	qp->owner = -1;
}

/*
 * A free QP slot, next-fit from the last one given, so a QP destroyed a moment ago lingers
 * undisturbed (SPEC 11.4) while a client creates and destroys others: a slot where a
 * destroyed QP lingers is taken only when no other is free, and that ends its lingering.
 */
static struct mrcd_qp *qp_slot_free(struct mrcd_clients *c, unsigned *slot_out)
{
	int fallback = -1;

	for (unsigned k = 0; k < MRCD_MAX_QPS; k++) {
		unsigned slot = (c->next_qp_slot + k) % MRCD_MAX_QPS;

		if (c->qps[slot].owner >= 0)
			continue;
		if (c->lingering.by_slot[slot].conn) {
			if (fallback < 0)
				fallback = (int)slot;
			continue;
		}
		fallback = (int)slot;
		break;
	}
	if (fallback < 0)
		return NULL;
	*slot_out = (unsigned)fallback;
	c->next_qp_slot = (unsigned)(fallback + 1) % MRCD_MAX_QPS;
	return &c->qps[fallback];
}

static int create_qp(struct mrcd *d, unsigned owner, const uint8_t *payload, size_t len,
		     struct mrc_ctl_qp_created *out, int *out_fds)
{
	struct mrcd_clients *c = &d->clients;
	struct mrc_ctl_create_qp r;
	struct mrcd_cq *scq, *rcq;
	struct mrcd_qp *qp = NULL;
	unsigned slot;
	int err;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	scq = cq_by_handle(c, (int)owner, r.send_cq);
	rcq = cq_by_handle(c, (int)owner, r.recv_cq);
	if (!scq || !rcq || !r.max_send_wr || !r.max_recv_wr ||
	    r.max_send_wr > MRCD_MAX_RING_ENTRIES || r.max_recv_wr > MRCD_MAX_RING_ENTRIES ||
	    r.sq_sig_all > 1)
		return -EINVAL;
	if (c->client[owner].n_qps >= MRCD_CLIENT_MAX_QPS)
		return -ENOSPC;
	qp = qp_slot_free(c, &slot);
	if (!qp)
		return -ENOSPC;
	memset(qp, 0, sizeof(*qp));
	/* not the number of a destroyed QP of this slot that still answers its peer
	 * (one lingers per slot at most: a second draw cannot meet it) */
	qp->qpn = make_handle(c, slot);
	if (mrcd_linger_find(&c->lingering, slot, qp->qpn))
		qp->qpn = make_handle(c, slot);
	qp->daemon = d;
	err = ring_new(c, MRC_RING_SQ, ring_entries(r.max_send_wr), qp->qpn, &qp->sq_mem,
		       &qp->sq_len, &qp->sq, &out_fds[0]);
	if (!err) {
		err = ring_new(c, MRC_RING_RQ, ring_entries(r.max_recv_wr), qp->qpn, &qp->rq_mem,
			       &qp->rq_len, &qp->rq, &out_fds[1]);
		if (err) {
			munmap(qp->sq_mem, qp->sq_len);
			c->mapped_bytes -= qp->sq_len;
			close(out_fds[0]);
		}
	}
	if (err) {
		qp->owner = -1;
		return err;
	}
	qp->sq_wr_id = calloc(qp->sq.entries, sizeof(*qp->sq_wr_id));
	qp->rq_wr_id = calloc(qp->rq.entries, sizeof(*qp->rq_wr_id));
	if (!qp->sq_wr_id || !qp->rq_wr_id) {
		free(qp->sq_wr_id);
		free(qp->rq_wr_id);
		munmap(qp->sq_mem, qp->sq_len);
		munmap(qp->rq_mem, qp->rq_len);
		c->mapped_bytes -= qp->sq_len + qp->rq_len;
		close(out_fds[0]);
		close(out_fds[1]);
		qp->owner = -1;
		return -ENOMEM;
	}
	qp->owner = (int)owner;
	qp->send_cq = (int)(scq - c->cqs);
	qp->recv_cq = (int)(rcq - c->cqs);
	qp->sq_sig_all = r.sq_sig_all;
	qp->state = MRC_CTL_QP_IDLE;
	c->active[c->n_qps++] = (uint16_t)slot;
	c->client[owner].n_qps++;
	out->qp_num = qp->qpn;
	out->sq_entries = qp->sq.entries;
	out->rq_entries = qp->rq.entries;
	return 0;
}

static bool is_local_addr(const struct mrcd_config *cfg, const uint8_t addr[16])
{
	for (unsigned i = 0; i < cfg->n_planes; i++)
		if (!memcmp(cfg->planes[i].addr.addr, addr, 16))
			return true;
	return false;
}

/* The peer's address on each of our planes, from what discovery learned (or ourselves). */
static void qp_learn_peer(struct mrcd *d, struct mrcd_qp *qp, const struct mrc_node_info *info)
{
	qp->peer_planes = 0;
	qp->peer_node = info->node_id;
	qp->peer_port = info->udp_port;
	qp->peer_max_payload = info->max_payload;
	for (unsigned i = 0; i < d->cfg.n_planes; i++) {
		const struct mrcd_plane *p = &d->cfg.planes[i];

		for (unsigned k = 0; k < info->n_addrs; k++) {
			const struct mrc_plane_rec *a = &info->addrs[k];

			if (a->plane == p->index && a->family == p->addr.family &&
			    !(a->flags & MRC_PLANE_F_DRAINED)) {
				memcpy(qp->peer_addr[p->index], a->addr, 16);
				qp->peer_planes |= 1u << p->index;
			}
		}
	}
	if (qp->fast)
		mrcd_fastpath_qp_peer(d->clients.fast, qp->qpn, qp->peer_planes,
				      (const uint8_t(*)[16])qp->peer_addr);
}

static void qp_error(struct mrcd *d, struct mrcd_qp *qp, uint64_t now)
{
	if (qp->state != MRC_CTL_QP_ERR)
		mrcd_event(d, LOG_INFO, "qp %u error (client pid %d)", qp->qpn,
			   d->clients.client[qp->owner].pid);
	qp->state = MRC_CTL_QP_ERR;
	if (qp->fast) {
		mrcd_fastpath_qp_clear(d->clients.fast, qp->qpn); /* nothing lands after an error */
		qp->fast = false;
	}
	__atomic_store_n(&qp->sq.consumer->aux, MRC_QP_AUX_ERROR, __ATOMIC_RELEASE);
	if (qp->conn)
		mrc_conn_set_error(qp->conn, now);
	(void)d;
}

/*
 * The RNR wait a QP asks of its peer, in 10 us units, from verbs' min_rnr_timer (the
 * IB encoding: 0 is 655.36 ms, then 0.01 ms up to 491.52 ms).
 */
static uint16_t rnr_wait_units(uint8_t min_rnr_timer)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
		480,	640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
		20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};
	uint32_t units = us[min_rnr_timer & 31] / 10;

	return (uint16_t)(units > UINT16_MAX ? UINT16_MAX : units);
}

/* RTS: the send half starts. */
static void qp_ready(struct mrcd *d, struct mrcd_qp *qp, uint64_t now)
{
	qp->ready_pending = false;
	if (mrc_conn_set_send(qp->conn, qp->ready.retry_cnt,
			      mrc_verbs_timeout_ns(qp->ready.timeout), qp->ready.rnr_retry,
			      qp->ready.max_rd_atomic)) {
		mrcd_log(LOG_WARNING, "QP %u: RTS after sending began", qp->qpn);
		qp_error(d, qp, now);
		return;
	}
	qp->state = MRC_CTL_QP_RTS;
}

/* The peer's planes are known: build the engine connection with a path per (plane, port). */
static void qp_start(struct mrcd *d, struct mrcd_qp *qp, uint64_t now)
{
	static const struct mrc_conn_callbacks cb = { mr_lookup, on_complete };
	struct mrc_conn_config cc;
	uint16_t ports[MRCD_SPORTS_PER_PLANE];
	unsigned per_plane = qp->req.paths_per_plane ? qp->req.paths_per_plane
						      : d->cfg.paths_per_plane;
	unsigned n_planes = 0;
	uint16_t payload = d->peers.local.max_payload;
	/* the application may narrow the planes it sends on (metaroce_qp_set_paths); it still
	 * hears the peer on every plane they share, whatever the peer chose */
	uint32_t send_planes = qp->peer_planes & (qp->req.plane_mask ? qp->req.plane_mask : ~0u);

	mrc_conn_config_default(&cc);
	cc.mode = d->cfg.rocev2 ? MRC_MODE_ROCEV2 : MRC_MODE_METAROCE;
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++)
		n_planes += (send_planes >> p) & 1;
	if (!n_planes) {
		mrcd_log(LOG_WARNING, "QP %u: no plane shared with the peer%s", qp->qpn,
			 qp->req.plane_mask ? " within the QP's plane mask" : "");
		qp_error(d, qp, now);
		return;
	}
	/* every shared plane gets paths, within the engine's limit */
	if (per_plane * n_planes > MRC_MAX_PATHS)
		per_plane = MRC_MAX_PATHS / n_planes;
	if (per_plane > MRCD_SPORTS_PER_PLANE)
		per_plane = MRCD_SPORTS_PER_PLANE;
	cc.n_paths = 0;
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++) {
		unsigned got;

		if (!(send_planes >> p & 1))
			continue;
		got = mrcd_backend_sports(&d->backend, (uint8_t)p, ports, per_plane);
		for (unsigned k = 0; k < got; k++)
			cc.paths[cc.n_paths++] = (struct mrc_path_config){ (uint8_t)p, ports[k] };
	}
	if (qp->peer_max_payload && qp->peer_max_payload < payload)
		payload = qp->peer_max_payload;
	if (qp->req.path_mtu && qp->req.path_mtu < payload)
		payload = qp->req.path_mtu; /* a path MTU below the port's caps it */
	cc.max_payload = payload;
	cc.local_qpn = qp->qpn;
	cc.remote_qpn = qp->req.dest_qp_num;
	/* verbs' PSNs stay with the application: the wire's come from the node ids and QPNs
	 * [R-116] */
	{
		/* a peer whose node id discovery never learned: 0 for both ends, as its daemon
		 * uses when it cannot learn ours either */
		uint64_t mine = qp->peer_node ? d->peers.local.node_id : 0;

		cc.sq_psn = mrc_initial_psn(mine, qp->qpn, qp->peer_node, qp->req.dest_qp_num);
		cc.rq_psn = mrc_initial_psn(qp->peer_node, qp->req.dest_qp_num, mine, qp->qpn);
	}
	cc.sq_depth = qp->sq.entries;
	cc.rq_depth = qp->rq.entries;
	cc.max_rd_atomic = 1;
	cc.max_dest_rd_atomic = qp->req.max_dest_rd_atomic;
	cc.qp_access = (qp->req.access & MRC_CTL_ACCESS_REMOTE_WRITE ? MRC_ACCESS_REMOTE_WRITE : 0) |
		       (qp->req.access & MRC_CTL_ACCESS_REMOTE_READ ? MRC_ACCESS_REMOTE_READ : 0);
	cc.sq_sig_all = qp->sq_sig_all;
	cc.rnr_retry_after = rnr_wait_units(qp->req.min_rnr_timer);
	cc.rate_domain = &d->clients.rate;
	cc.seed = mrc_splitmix64(&d->clients.seed);
	qp->conn = mrc_conn_new(&cc, &cb, qp, now);
	if (!qp->conn) {
		mrcd_log(LOG_ERR, "QP %u: engine refused the connection: %s", qp->qpn,
			 strerror(errno));
		qp_error(d, qp, now);
		return;
	}
	qp->state = MRC_CTL_QP_RTR;
	if (d->clients.fast) {
		/* from here on the program places this QP's WRITEs and READ responses */
		qp->fast = true;
		qp->fast_base = cc.rq_psn;
		mrcd_fastpath_qp_set(d->clients.fast, qp->qpn, (uint32_t)qp->owner + 1, cc.rq_psn,
				     MRC_XDP_QP_PLACE | MRC_XDP_QP_PLACE_READ, qp->peer_planes,
				     (const uint8_t(*)[16])qp->peer_addr);
	}
	apply_drains(d, qp);
	mrcd_log(LOG_DEBUG, "QP %u -> %u: %u paths over %u planes", qp->qpn, cc.remote_qpn,
		 cc.n_paths, n_planes);
	if (qp->ready_pending)
		qp_ready(d, qp, now);
}

static int connect_qp(struct mrcd *d, unsigned owner, const uint8_t *payload, size_t len)
{
	struct mrc_ctl_connect_qp r;
	struct mrcd_qp *qp;
	uint64_t now = mrcd_now_ns();
	struct mrcd_addr addr;
	int idx;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	qp = qp_by_num(&d->clients, r.qp_num);
	if (!qp || qp->owner != (int)owner)
		return -ENOENT;
	if (qp->state != MRC_CTL_QP_IDLE)
		return -EBUSY;
	if (r.dest_qp_num > MRC_QPN_MAX || r.dest_qp_num == MRC_QPN_DAEMON ||
	    r.min_rnr_timer > 31 || !r.max_dest_rd_atomic || (r.access & ~MRC_CTL_ACCESS_ALL) ||
	    r.paths_per_plane > MRCD_SPORTS_PER_PLANE ||
	    (r.path_mtu && (r.path_mtu < 256 || r.path_mtu > 4096)))
		return -EINVAL;
	qp->req = r;
	if (is_local_addr(&d->cfg, r.dgid)) {
		qp_learn_peer(d, qp, &d->peers.local);
		qp_start(d, qp, now);
		return 0;
	}
	addr.family = mrc_addr_family(r.dgid);
	memcpy(addr.addr, r.dgid, 16);
	if (!mrcd_config_admits(&d->cfg, r.dgid))
		return -EHOSTUNREACH; /* not a peer this daemon may talk to */
	if (mrcd_discover(d, &addr))
		return -ENOMEM;
	idx = mrc_peer_table_find(&d->peers, r.dgid);
	if (idx >= 0 && d->peers.peers[idx].state == MRC_PEER_KNOWN) {
		qp_learn_peer(d, qp, &d->peers.peers[idx].info);
		qp_start(d, qp, now);
	} else {
		qp->state = MRC_CTL_QP_RESOLVING;
		qp->resolve_deadline_ns = now + RESOLVE_TIMEOUT_NS;
	}
	return 0;
}

static int ready_qp(struct mrcd *d, unsigned owner, const uint8_t *payload, size_t len)
{
	struct mrc_ctl_ready_qp r;
	struct mrcd_qp *qp;

	if (len != sizeof(r))
		return -EINVAL;
	memcpy(&r, payload, sizeof(r));
	qp = qp_by_num(&d->clients, r.qp_num);
	if (!qp || qp->owner != (int)owner)
		return -ENOENT;
	if (r.retry_cnt > 7 || r.rnr_retry > 7 || !r.max_rd_atomic || r.timeout > 31)
		return -EINVAL;
	if (qp->state != MRC_CTL_QP_RTR && qp->state != MRC_CTL_QP_RESOLVING)
		return -EBUSY;
	qp->ready = r;
	qp->ready_pending = true;
	if (qp->state == MRC_CTL_QP_RTR)
		qp_ready(d, qp, mrcd_now_ns());
	return 0;
}

/* A plane carries nothing new while either end has drained it. */
static void apply_drains(const struct mrcd *d, struct mrcd_qp *qp)
{
	uint32_t drained = d->drained_planes | qp->peer_drained;

	for (unsigned p = 0; p < MRC_MAX_PLANES; p++)
		mrc_conn_drain_plane(qp->conn, (uint8_t)p, drained >> p & 1);
}

/* The peer drained or restored planes (its announcement changed): follow it. */
static void follow_peer_drains(const struct mrcd *d, struct mrcd_qp *qp,
			       const struct mrc_node_info *info)
{
	qp->peer_drained = 0;
	for (unsigned k = 0; k < info->n_addrs; k++)
		if (info->addrs[k].flags & MRC_PLANE_F_DRAINED)
			qp->peer_drained |= 1u << (info->addrs[k].plane % MRC_MAX_PLANES);
	apply_drains(d, qp);
}

void mrcd_clients_peer_event(struct mrcd *d, unsigned peer, int event)
{
	const struct mrc_peer *p = &d->peers.peers[peer];
	uint64_t now = mrcd_now_ns();

	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		struct mrcd_qp *qp = &d->clients.qps[i];

		if (qp->owner < 0 || memcmp(qp->req.dgid, p->named, 16))
			continue;
		if (qp->state == MRC_CTL_QP_RESOLVING &&
		    (event == MRC_PEER_EV_DISCOVERED || event == MRC_PEER_EV_CHANGED)) {
			qp_learn_peer(d, qp, &p->info);
			qp_start(d, qp, now);
		} else if (qp->state == MRC_CTL_QP_RESOLVING && event == MRC_PEER_EV_UNREACHABLE) {
			/* the named address is all we know: one plane, the one that reaches it */
			qp->peer_planes = 1u << p->via_plane;
			memcpy(qp->peer_addr[p->via_plane], p->named, 16);
			qp->peer_port = p->named_port;
			qp->peer_max_payload = 0;
			qp->peer_node = 0; /* unknown: the peer must not know ours either */
			qp_start(d, qp, now);
		} else if ((qp->state == MRC_CTL_QP_RTS || qp->state == MRC_CTL_QP_RTR) &&
			   event == MRC_PEER_EV_CHANGED && qp->conn) {
			follow_peer_drains(d, qp, &p->info);
		} else if ((qp->state == MRC_CTL_QP_RTS || qp->state == MRC_CTL_QP_RTR) &&
			   event == MRC_PEER_EV_RESTARTED) {
			/* its QPs are gone; ours cannot continue */
			qp_error(d, qp, now);
		}
	}
}

/* --- rings into the engine -------------------------------------------------------------- */

/* A completion the daemon makes itself (MRC_CQ_*), for the entry at ring index idx. */
static void complete_now(struct mrcd *d, struct mrcd_qp *qp, bool recv, uint64_t wr_id,
			 uint32_t idx, uint8_t status, uint8_t opcode)
{
	struct mrc_cq_entry e = { .wr_id = wr_id, .status = status, .opcode = opcode };

	release_through(recv ? &qp->rq : &qp->sq, idx);
	cq_push(d, qp, recv, &e);
}

/* Checks one send descriptor and turns it into an engine work request. */
static int sq_entry_to_wr(struct mrcd *d, struct mrcd_qp *qp, const struct mrc_sq_entry *e,
			  struct mrc_send_wr *wr)
{
	uint64_t total = 0;

	memset(wr, 0, sizeof(*wr));
	if (e->num_sge > MRC_RING_MAX_SGE ||
	    !mrcd_wr_from_sq(e->opcode, e->flags, &wr->opcode, &wr->flags))
		return MRC_CQ_LOC_QP_OP_ERR;
	wr->wr_id = e->wr_id;
	wr->num_sge = e->num_sge;
	wr->imm = e->imm;
	wr->rkey = e->rkey;
	wr->raddr = e->raddr;
	for (unsigned i = 0; i < e->num_sge; i++) {
		if (local_sge(d, qp->owner, &e->sge[i], e->opcode == MRC_SQ_READ, &wr->sge[i]))
			return MRC_CQ_LOC_PROT_ERR;
		total += e->sge[i].length;
	}
	/* the program places READ responses contiguously at the first element: a READ that
	 * scatters takes the QP's READ responses off the fast path before it is ever sent */
	if (qp->fast && e->opcode == MRC_SQ_READ && e->num_sge > 1)
		mrcd_fastpath_qp_clear_flags(d->clients.fast, qp->qpn, MRC_XDP_QP_PLACE_READ);
	if (total > (1u << 31))
		return MRC_CQ_LOC_LEN_ERR;
	return MRC_CQ_SUCCESS;
}

static int rq_entry_to_wr(struct mrcd *d, struct mrcd_qp *qp, const struct mrc_rq_entry *e,
			  struct mrc_recv_wr *wr)
{
	if (e->num_sge > MRC_RING_MAX_SGE)
		return MRC_CQ_LOC_QP_OP_ERR;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = e->wr_id;
	wr->num_sge = e->num_sge;
	for (unsigned i = 0; i < e->num_sge; i++)
		if (local_sge(d, qp->owner, &e->sge[i], true, &wr->sge[i]))
			return MRC_CQ_LOC_PROT_ERR;
	return MRC_CQ_SUCCESS;
}

/* A ring whose indices the client corrupted: the QP fails, the daemon carries on. */
static void ring_corrupt(struct mrcd *d, struct mrcd_qp *qp, const char *which, uint64_t now)
{
	mrcd_log(LOG_NOTICE, "client pid %d: QP %u %s ring indices corrupt, QP to error",
		 d->clients.client[qp->owner].pid, qp->qpn, which);
	qp_error(d, qp, now);
}

/*
 * A request the engine refused although the ring guarantees it room, or one that failed the
 * checks: the engine's earlier work flushes first (completions stay in order), then this one
 * completes with the status.
 */
static void fail_entry(struct mrcd *d, struct mrcd_qp *qp, bool recv, uint64_t wr_id,
		       uint8_t status, uint8_t opcode, uint64_t now)
{
	qp_error(d, qp, now);
	complete_now(d, qp, recv, wr_id, (recv ? qp->rq.mine : qp->sq.mine) - 1, status, opcode);
}

/*
 * Ring entries into the engine. A slot goes back only when its work completes, so the
 * engine (as deep as the ring) always has room for what the ring holds.
 */
static void drain_rings(struct mrcd *d, struct mrcd_qp *qp, uint64_t now)
{
	struct mrc_sq_entry s;
	struct mrc_rq_entry r;
	int got;

	/* in the error state every posted request completes flushed */
	if (qp->state == MRC_CTL_QP_ERR && (!qp->conn || mrc_conn_state(qp->conn) == MRC_QPS_ERR)) {
		/* bounded: a client that keeps posting gets the rest flushed next turn */
		for (uint32_t i = 0; i < qp->sq.entries && mrc_ring_take(&qp->sq, &s) == 1; i++)
			complete_now(d, qp, false, s.wr_id, qp->sq.mine - 1, MRC_CQ_WR_FLUSH_ERR,
				     mrc_sq_cq_opcode(s.opcode));
		for (uint32_t i = 0; i < qp->rq.entries && mrc_ring_take(&qp->rq, &r) == 1; i++)
			complete_now(d, qp, true, r.wr_id, qp->rq.mine - 1, MRC_CQ_WR_FLUSH_ERR,
				     MRC_CQ_RECV);
		mrc_ring_release(&qp->sq, qp->sq.mine);
		mrc_ring_release(&qp->rq, qp->rq.mine);
		return;
	}
	if (!qp->conn)
		return; /* receives wait in the ring until the QP is connected */
	while ((got = mrc_ring_take(&qp->rq, &r)) == 1) {
		struct mrc_recv_wr wr;
		int status = rq_entry_to_wr(d, qp, &r, &wr);

		if (status == MRC_CQ_SUCCESS) {
			qp->rq_wr_id[(qp->rq.mine - 1) & (qp->rq.entries - 1)] = r.wr_id;
			wr.wr_id = qp->rq.mine - 1;
			if (mrc_conn_post_recv(qp->conn, &wr))
				status = MRC_CQ_LOC_QP_OP_ERR;
		}
		if (status != MRC_CQ_SUCCESS) {
			fail_entry(d, qp, true, r.wr_id, (uint8_t)status, MRC_CQ_RECV, now);
			return;
		}
	}
	if (got < 0) {
		ring_corrupt(d, qp, "receive", now);
		return;
	}
	/* sends wait in the ring until RTS */
	while (qp->state == MRC_CTL_QP_RTS && (got = mrc_ring_take(&qp->sq, &s)) == 1) {
		struct mrc_send_wr wr;
		int status = sq_entry_to_wr(d, qp, &s, &wr);

		if (status == MRC_CQ_SUCCESS) {
			qp->sq_wr_id[(qp->sq.mine - 1) & (qp->sq.entries - 1)] = s.wr_id;
			wr.wr_id = qp->sq.mine - 1;
			if (mrc_conn_post_send(qp->conn, &wr))
				status = MRC_CQ_LOC_QP_OP_ERR;
		}
		if (status != MRC_CQ_SUCCESS) {
			fail_entry(d, qp, false, s.wr_id, (uint8_t)status, mrc_sq_cq_opcode(s.opcode),
				   now);
			return;
		}
	}
	if (got < 0)
		ring_corrupt(d, qp, "send", now);
}
/* Path state changes since the last scan, as monitor events. */
static void report_path_changes(struct mrcd *d)
{
	for (unsigned j = 0; j < d->clients.n_qps; j++) {
		struct mrcd_qp *qp = &d->clients.qps[d->clients.active[j]];

		if (!qp->conn)
			continue;
		for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn) && k < MRC_MAX_PATHS; k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);

			if (p->state == qp->path_seen[k] || p->state > 3)
				continue;
			mrcd_event(d, LOG_INFO, "qp %u path %u plane %u sport %u: %s -> %s", qp->qpn,
				   k, p->plane, p->sport, mrc_ctl_path_state_name(qp->path_seen[k]),
				   mrc_ctl_path_state_name(p->state));
			qp->path_seen[k] = p->state;
		}
	}
}

/* --- packets ---------------------------------------------------------------------------- */

bool mrcd_clients_recv(struct mrcd *d, const struct mrc_packet *pkt, const struct mrcd_dgram *g,
		       uint64_t now)
{
	struct mrcd_qp *qp = qp_by_num(&d->clients, pkt->dst_qpn);
	struct mrc_rx_info rx = { .plane = g->plane, .sport = g->sport, .ce = g->ce,
				  .placed = g->placed };

	if (!qp) {
		/* a destroyed QP may still owe its peer an acknowledgement (SPEC 11.4) */
		struct mrcd_lingering *l = mrcd_linger_find(&d->clients.lingering,
							    mrcd_qp_slot(pkt->dst_qpn),
							    pkt->dst_qpn);

		if (!l || g->plane >= MRC_MAX_PLANES || !(l->peer_planes >> g->plane & 1) ||
		    memcmp(l->peer_addr[g->plane], g->peer.addr, 16))
			return false;
		mrc_conn_recv_packet(l->conn, &rx, pkt, now);
		return true;
	}
	/* only the peer this QP is connected to, on a plane it has there, may speak to it */
	if (!qp->conn || g->plane >= MRC_MAX_PLANES || !(qp->peer_planes >> g->plane & 1) ||
	    memcmp(qp->peer_addr[g->plane], g->peer.addr, 16))
		return false;
	int why = mrc_conn_recv_packet(qp->conn, &rx, pkt, now);

	if (mrc_conn_state(qp->conn) == MRC_QPS_ERR && qp->state != MRC_CTL_QP_ERR) {
		mrcd_log(LOG_DEBUG, "QP %u: error state after a packet (opcode %u, drop reason %d)",
			 qp->qpn, pkt->opcode, why);
		qp_error(d, qp, now);
	}
	return true;
}

/* A datagram its plane's queue refused waits in slot *keep, or is given up to loss recovery
 * when that queue is dead: it took nothing this time, nor for MRCD_TX_HOLD_NS before. */
static void hold_or_give_up(struct mrcd *d, unsigned i, unsigned *keep, unsigned plane,
			    bool progressed, uint64_t now)
{
	struct mrcd_clients *c = &d->clients;
	uint64_t since = c->tx_held_since_ns[plane];

	/* dead: a while without taking anything, and tried often in that while (a daemon kept
	 * off the CPU comes back to a full queue that is merely slow) */
	if (!progressed && since && now - since >= MRCD_TX_HOLD_NS &&
	    c->tx_refusals[plane] >= MRCD_TX_DEAD_TRIES) {
		d->stats.tx_held_dropped++;
		return;
	}
	if (i != *keep) {
		uint8_t *to = c->tx_buf + (size_t)*keep * d->cfg.mtu;

		memmove(to, c->tx_dgrams[i].data, c->tx_dgrams[i].len);
		c->tx_dgrams[*keep] = c->tx_dgrams[i];
		c->tx_dgrams[*keep].data = to;
	}
	(*keep)++;
}

/*
 * Sends what is queued. A plane whose queue refuses keeps its datagrams, in order, in the
 * first slots; the other planes' go on, and so does the engine until MRCD_TX_BACKLOG wait
 * (then it is back-pressure: nothing new until the queues take some). A queue that took
 * nothing for MRCD_TX_HOLD_NS is dead, not slow: what is offered to it is given up to loss
 * recovery, as a blackholed path's would be, until it takes something again, so it stalls
 * the other planes once, for that long, and not again. False when the engine must wait.
 */
static bool flush_tx(struct mrcd *d, uint64_t now)
{
	struct mrcd_clients *c = &d->clients;
	uint32_t blocked = 0, progressed = 0, offered = 0;
	unsigned keep = 0, i = 0;

	while (i < c->tx_queued) {
		struct mrcd_dgram *g = &c->tx_dgrams[i];
		unsigned plane = g->plane % MRC_MAX_PLANES, run = 1;
		int k;

		offered |= 1u << plane;
		if (blocked >> plane & 1) {
			hold_or_give_up(d, i++, &keep, plane, progressed >> plane & 1, now);
			continue;
		}
		while (i + run < c->tx_queued && c->tx_dgrams[i + run].plane == g->plane)
			run++;
		k = d->backend.ops->tx_batch(&d->backend, g, run);
		k = k < 0 ? 0 : k;
		d->stats.tx_datagrams += (unsigned)k;
		if (k)
			progressed |= 1u << plane;
		i += (unsigned)k;
		if ((unsigned)k < run)
			blocked |= 1u << plane; /* datagram i: held or given up next turn */
	}
	for (unsigned p = 0; p < MRC_MAX_PLANES; p++) {
		if (!(offered >> p & 1))
			continue; /* nothing offered: a dead queue stays dead */
		if (!(blocked >> p & 1)) {
			c->tx_held_since_ns[p] = 0;
			c->tx_refusals[p] = 0;
		} else if (progressed >> p & 1 || !c->tx_held_since_ns[p]) {
			c->tx_held_since_ns[p] = now;
			c->tx_refusals[p] = 1;
		} else if (++c->tx_refusals[p] >= MRCD_TX_DEAD_TRIES &&
			   now - c->tx_held_since_ns[p] >= MRCD_TX_HOLD_NS &&
			   now - c->tx_held_logged_ns >= 1000000000ull) {
			mrcd_log(LOG_WARNING, "plane %u: the local queue took nothing for %u ms: "
				 "what is offered to it goes to loss recovery", p,
				 MRCD_TX_HOLD_NS / 1000000);
			c->tx_held_logged_ns = now;
		}
	}
	c->tx_queued = keep;
	if (keep)
		c->tx_retry_ns = now + MRCD_TX_RETRY_NS; /* a qdisc drop has no POLLOUT */
	return keep < MRCD_TX_BACKLOG;
}

/* The program's window follows the engine's: it may only set bits the engine has not passed. */
static void sync_fast_window(struct mrcd_clients *c, struct mrcd_qp *qp)
{
	uint32_t base = mrc_conn_rcv_base(qp->conn);

	/* every pump turn: only the base, not mrc_conn_get_info's timers */
	if (base != qp->fast_base) {
		mrcd_fastpath_qp_advance(c->fast, qp->qpn, qp->fast_base, base);
		qp->fast_base = base;
	}
}

enum sent { SENT_NOTHING, SENT_SOME, SENT_BLOCKED };

/*
 * Up to 8 of a connection's packets into the transmit batch, to the peer's address on the
 * plane each goes out of. SENT_BLOCKED: the local queues push back, the pump must stop.
 */
static enum sent send_some(struct mrcd *d, struct mrc_conn *conn, uint32_t peer_planes,
			   const uint8_t (*peer_addr)[16], uint16_t peer_port, unsigned *budget,
			   uint64_t now)
{
	struct mrcd_clients *c = &d->clients;
	enum sent sent = SENT_NOTHING;
	struct mrc_tx_info tx;
	size_t len;

	for (unsigned k = 0; k < 8 && *budget; k++) {
		uint8_t *buf = c->tx_buf + (size_t)c->tx_queued * d->cfg.mtu;
		struct mrcd_dgram *g = &c->tx_dgrams[c->tx_queued];

		if (!mrc_conn_send(conn, buf, d->cfg.mtu, &tx, now, &len))
			break;
		if (tx.plane >= MRC_MAX_PLANES || !(peer_planes >> tx.plane & 1))
			continue;
		*g = (struct mrcd_dgram){ .data = buf, .len = (uint32_t)len, .plane = tx.plane,
					  .sport = tx.sport, .peer_port = peer_port };
		g->peer.family = mrc_addr_family(peer_addr[tx.plane]);
		memcpy(g->peer.addr, peer_addr[tx.plane], 16);
		(*budget)--;
		sent = SENT_SOME;
		if (++c->tx_queued == MRCD_TX_BATCH && !flush_tx(d, now))
			return SENT_BLOCKED;
	}
	return sent;
}

/*
 * Destroyed QPs still answering their peers (SPEC 11.4): their timers, their few packets
 * (acknowledgements, probe replies, CLOSE), and their end once CLOSED with nothing left to
 * send. False when the local queues push back.
 */
static bool pump_lingering(struct mrcd *d, unsigned *budget, uint64_t now)
{
	struct mrcd_linger_table *t = &d->clients.lingering;

	for (unsigned i = 0; i < t->n;) {
		struct mrcd_lingering *l = &t->by_slot[t->active[i]];

		if (mrc_conn_next_timeout(l->conn) <= now)
			mrc_conn_on_timeout(l->conn, now);
		if (!*budget)
			return true;
		if (send_some(d, l->conn, l->peer_planes, (const uint8_t(*)[16])l->peer_addr,
			      l->peer_port, budget, now) == SENT_BLOCKED)
			return false;
		/* budget left: send_some stopped because the connection had nothing more (a
		 * CLOSED one owes at most a NAK and a CLOSE) */
		if (mrc_conn_state(l->conn) == MRC_QPS_CLOSED && *budget) {
			mrcd_linger_remove_at(t, i);
			continue;
		}
		i++;
	}
	return true;
}

void mrcd_clients_pump(struct mrcd *d, uint64_t now)
{
	struct mrcd_clients *c = &d->clients;
	unsigned budget = MRCD_PUMP_BUDGET;
	bool progress = true;

	if (c->n_retired)
		reap_retired(c, now);
	if (c->n_notify_pending)
		retry_notifications(c);
	if (now >= c->next_path_scan_ns) {
		c->next_path_scan_ns = now + 100000000; /* monitors see path changes within 0.1 s */
		report_path_changes(d);
	}
	if (!c->n_qps && !c->lingering.n)
		return;
	for (unsigned j = 0; j < c->n_qps; j++) {
		struct mrcd_qp *qp = &c->qps[c->active[j]];

		if (qp->cq_overrun && qp->state != MRC_CTL_QP_ERR) {
			/* a completion was lost: like a device, fail the QP rather than let the
			 * application wait for it forever */
			mrcd_log(LOG_WARNING, "client pid %d: QP %u to error: its CQ overran",
				 c->client[qp->owner].pid, qp->qpn);
			qp_error(d, qp, now);
		}
		if (qp->state == MRC_CTL_QP_RESOLVING && now >= qp->resolve_deadline_ns) {
			mrcd_log(LOG_WARNING, "QP %u: peer did not answer discovery in time",
				 qp->qpn);
			qp_error(d, qp, now);
		}
		drain_rings(d, qp, now);
		if (qp->conn && mrc_conn_next_timeout(qp->conn) <= now)
			mrc_conn_on_timeout(qp->conn, now);
		if (qp->conn && mrc_conn_state(qp->conn) == MRC_QPS_ERR &&
		    qp->state != MRC_CTL_QP_ERR)
			qp_error(d, qp, now);
		if (qp->fast)
			sync_fast_window(c, qp);
	}
	/* what the local queue refused last time goes first; nothing new until it is out */
	if (c->tx_queued && !flush_tx(d, now)) {
		c->more_to_send = false;
		return;
	}
	/* destroyed QPs first: a few packets each at most (their last ACK, a CLOSE), and the
	 * live QPs' traffic must not keep them from going */
	if (!pump_lingering(d, &budget, now)) {
		c->more_to_send = false;
		return;
	}
	/* round robin, a few packets per QP per turn, so no QP starves the others */
	while (progress && budget) {
		progress = false;
		for (unsigned j = 0; j < c->n_qps && budget; j++) {
			struct mrcd_qp *qp = &c->qps[c->active[j]];

			if (!qp->conn)
				continue;
			switch (send_some(d, qp->conn, qp->peer_planes,
					  (const uint8_t(*)[16])qp->peer_addr, qp->peer_port,
					  &budget, now)) {
			case SENT_BLOCKED:
				c->more_to_send = false;
				return;
			case SENT_SOME:
				progress = true;
				break;
			default:
				break;
			}
		}
	}
	if (c->tx_queued)
		flush_tx(d, now);
	c->more_to_send = !budget;
}

uint64_t mrcd_clients_next_timeout(const struct mrcd *d)
{
	const struct mrcd_clients *c = &d->clients;
	uint64_t next = UINT64_MAX;

	if (c->more_to_send)
		return 0;
	if (c->tx_queued)
		next = c->tx_retry_ns;
	for (unsigned j = 0; j < c->n_qps; j++) {
		const struct mrcd_qp *qp = &c->qps[c->active[j]];
		uint64_t t = UINT64_MAX;

		if (qp->conn)
			t = mrc_conn_next_timeout(qp->conn);
		else if (qp->state == MRC_CTL_QP_RESOLVING)
			t = qp->resolve_deadline_ns;
		if (t < next)
			next = t;
	}
	for (unsigned j = 0; j < c->lingering.n; j++) {
		uint64_t t = mrc_conn_next_timeout(c->lingering.by_slot[c->lingering.active[j]].conn);

		if (t < next)
			next = t;
	}
	return next;
}

void mrcd_clients_drain_plane(struct mrcd *d)
{
	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		struct mrcd_qp *qp = &d->clients.qps[i];

		if (qp->owner >= 0 && qp->conn)
			apply_drains(d, qp);
	}
}

void mrcd_clients_reset_counters(struct mrcd *d)
{
	for (unsigned j = 0; j < d->clients.n_qps; j++) {
		struct mrcd_qp *qp = &d->clients.qps[d->clients.active[j]];
		struct mrcd_qp_base *b = &qp->base;

		memset(b, 0, sizeof(*b));
		b->completions = qp->completions;
		b->error_completions = qp->error_completions;
		if (!qp->conn)
			continue;
		b->tx_packets = mrc_conn_stats(qp->conn)->tx_data_packets;
		b->tx_retransmits = mrc_conn_stats(qp->conn)->tx_retransmits;
		b->rx_packets = mrc_conn_stats(qp->conn)->rx_packets;
		b->rx_bytes = mrc_conn_stats(qp->conn)->rx_placed_bytes;
		for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn) && k < MRC_MAX_PATHS; k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);

			b->path_tx[k] = p->stats.tx_packets;
			b->path_retx[k] = p->stats.retransmits;
			b->path_ecn[k] = p->stats.ecn_echoes;
		}
	}
}

void mrcd_clients_flush_all(struct mrcd *d, uint64_t now)
{
	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		struct mrcd_qp *qp = &d->clients.qps[i];

		if (qp->owner < 0)
			continue;
		qp_error(d, qp, now);
		drain_rings(d, qp, now);
	}
}

/* --- requests --------------------------------------------------------------------------- */

void mrcd_clients_gone(struct mrcd *d, unsigned slot)
{
	struct mrcd_clients *c = &d->clients;
	struct mrcd_client *cl = &c->client[slot];
	unsigned qps = 0, cqs = 0, mrs = 0;

	for (unsigned i = 0; i < MRCD_MAX_QPS; i++)
		if (c->qps[i].owner == (int)slot) {
			qp_free(c, &c->qps[i]);
			qps++;
		}
	for (unsigned i = 0; i < MRCD_MAX_CQS; i++)
		if (c->cqs[i].owner == (int)slot) {
			cq_free(c, &c->cqs[i]);
			cqs++;
		}
	for (unsigned i = 0; i < MRCD_MAX_MRS; i++)
		if (c->mrs[i].owner == (int)slot) {
			if (c->mrs[i].retired) {
				c->n_retired--;
			} else {
				c->n_mrs--;
				mrs++;
			}
			mr_unmap(c, &c->mrs[i]);
		}
	if (cl->library)
		mrcd_event(d, LOG_INFO, "client pid %d gone: reclaimed %u QPs, %u CQs, %u MRs",
			   cl->pid, qps, cqs, mrs);
	cl->monitor = false;
	if (cl->doorbell_fd >= 0) {
		/* the epoll entry belongs to the open file, which the client may still hold */
		epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, cl->doorbell_fd, NULL);
		close(cl->doorbell_fd);
	}
	cl->doorbell_fd = -1;
	cl->channels = 0;
	cl->n_mrs = cl->n_retired = 0;
	cl->library = false;
}

static int handle_arg(const uint8_t *payload, size_t len, uint32_t *handle)
{
	struct mrc_ctl_handle h;

	if (len != sizeof(h))
		return -EINVAL;
	memcpy(&h, payload, sizeof(h));
	*handle = h.handle;
	return 0;
}

int mrcd_clients_request(struct mrcd *d, unsigned slot, const struct mrc_ctl_hdr *req,
			 const uint8_t *payload, int *fds, unsigned n_fds, uint8_t *out,
			 size_t out_cap, size_t *out_len, int *out_fds, unsigned *n_out_fds)
{
	struct mrcd_clients *c = &d->clients;
	struct mrcd_client *cl = &c->client[slot];
	uint32_t h = 0;
	int err;

	*out_len = 0;
	*n_out_fds = 0;
	if (req->type == MRC_CTL_HELLO) {
		struct mrc_ctl_hello hello;

		if (req->len != sizeof(hello) || n_fds != 1 || cl->library)
			return -EINVAL;
		memcpy(&hello, payload, sizeof(hello));
		if (hello.abi != MRC_CTL_CLIENT_ABI)
			return -EPROTONOSUPPORT;
		if (!is_eventfd(fds[0]))
			return -EBADF;
		if (mrcd_epoll_watch_doorbell(d, fds[0]))
			return -errno;
		cl->doorbell_fd = fds[0];
		fds[0] = -1;
		cl->library = true;
		mrcd_event(d, LOG_INFO, "client pid %d uid %u connected", cl->pid, cl->uid);
		mrcd_control_status(d, out, out_cap, out_len);
		return 0;
	}
	if (!cl->library)
		return -ENOTCONN; /* HELLO first */
	switch (req->type) {
	case MRC_CTL_PAGES: {
		struct mrc_ctl_pages pg;
		int fd;

		if (!c->fast)
			return -EOPNOTSUPP;
		memcpy(&pg, payload, sizeof(pg));
		/* the program addresses 4 GiB of a page map; larger regions take memfds */
		if (!pg.length || pg.length % MRC_XDP_PAGE || pg.length > MRCD_PAGE_MAP_MAX)
			return -EINVAL;
		/* page maps are the daemon's memory, allocated at once: a client gets at most
		 * half of the machine's over its connection, then memfds (slower, never wrong) */
		if (cl->page_bytes + pg.length > page_quota())
			return -EDQUOT;
		fd = mrcd_fastpath_page_map(c->fast, pg.length / MRC_XDP_PAGE);
		if (fd < 0)
			return fd;
		cl->page_bytes += pg.length;
		out_fds[0] = fd;
		*n_out_fds = 1;
		return 0;
	}
	case MRC_CTL_REG_MR:
		if (out_cap < sizeof(struct mrc_ctl_mr))
			return -ENOSPC;
		err = reg_mr(d, slot, payload, req->len, fds, n_fds, (struct mrc_ctl_mr *)out);
		if (!err)
			*out_len = sizeof(struct mrc_ctl_mr);
		return err;
	case MRC_CTL_DEREG_MR: {
		struct mrcd_mr *mr;

		if ((err = handle_arg(payload, req->len, &h)))
			return err;
		mr = mr_by_key(c, (int)slot, h);
		if (!mr)
			return -ENOENT;
		mr_deregister(c, mr);
		return 0;
	}
	case MRC_CTL_CREATE_CQ:
		err = create_cq(d, slot, payload, req->len, fds, n_fds, (struct mrc_ctl_cq *)out,
				&out_fds[0]);
		if (!err) {
			*out_len = sizeof(struct mrc_ctl_cq);
			*n_out_fds = 1;
		}
		return err;
	case MRC_CTL_DESTROY_CQ: {
		struct mrcd_cq *cq;

		if ((err = handle_arg(payload, req->len, &h)))
			return err;
		cq = cq_by_handle(c, (int)slot, h);
		if (!cq)
			return -ENOENT;
		for (unsigned i = 0; i < MRCD_MAX_QPS; i++)
			if (c->qps[i].owner == (int)slot &&
			    (c->qps[i].send_cq == (int)(cq - c->cqs) ||
			     c->qps[i].recv_cq == (int)(cq - c->cqs)))
				return -EBUSY; /* verbs: a CQ in use by a QP cannot go */
		cq_free(c, cq);
		return 0;
	}
	case MRC_CTL_CREATE_QP:
		err = create_qp(d, slot, payload, req->len, (struct mrc_ctl_qp_created *)out,
				out_fds);
		if (!err) {
			*out_len = sizeof(struct mrc_ctl_qp_created);
			*n_out_fds = 2;
		}
		return err;
	case MRC_CTL_CONNECT_QP:
		return connect_qp(d, slot, payload, req->len);
	case MRC_CTL_READY_QP:
		return ready_qp(d, slot, payload, req->len);
	case MRC_CTL_ERROR_QP:
	case MRC_CTL_DESTROY_QP: {
		struct mrcd_qp *qp;

		if ((err = handle_arg(payload, req->len, &h)))
			return err;
		qp = qp_by_num(c, h);
		if (!qp || qp->owner != (int)slot)
			return -ENOENT;
		if (req->type == MRC_CTL_ERROR_QP) {
			qp_error(d, qp, mrcd_now_ns());
			drain_rings(d, qp, mrcd_now_ns());
		} else {
			qp_free(c, qp);
		}
		return 0;
	}
	default:
		return -EOPNOTSUPP;
	}
}

/* --- inspection ------------------------------------------------------------------------- */

size_t mrcd_clients_qps_reply(const struct mrcd *d, uint8_t *buf, size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < MRCD_MAX_QPS && n + sizeof(struct mrc_ctl_qp) <= cap; i++) {
		const struct mrcd_qp *qp = &d->clients.qps[i];
		struct mrc_ctl_qp out;

		if (qp->owner < 0)
			continue;
		memset(&out, 0, sizeof(out));
		out.qp_num = qp->qpn;
		out.dest_qp_num = qp->req.dest_qp_num;
		out.pid = d->clients.client[qp->owner].pid;
		out.uid = d->clients.client[qp->owner].uid;
		out.state = qp->state;
		memcpy(out.peer, qp->req.dgid, 16);
		/* since the last stat reset */
		out.completions = qp->completions - qp->base.completions;
		out.error_completions = qp->error_completions - qp->base.error_completions;
		if (qp->conn) {
			const struct mrc_conn_stats *s = mrc_conn_stats(qp->conn);

			out.n_paths = (uint8_t)mrc_conn_n_paths(qp->conn);
			out.tx_packets = s->tx_data_packets - qp->base.tx_packets;
			out.tx_retransmits = s->tx_retransmits - qp->base.tx_retransmits;
			out.rx_packets = s->rx_packets - qp->base.rx_packets;
			out.rx_bytes = s->rx_placed_bytes - qp->base.rx_bytes;
		}
		memcpy(buf + n, &out, sizeof(out));
		n += sizeof(out);
	}
	return n;
}

size_t mrcd_clients_paths_reply(const struct mrcd *d, const uint32_t *qpn, uint8_t *buf,
				size_t cap)
{
	uint64_t now = mrcd_now_ns();
	size_t n = 0;

	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		const struct mrcd_qp *qp = &d->clients.qps[i];

		struct mrc_conn_info info;

		if (qp->owner < 0 || !qp->conn || (qpn && qp->qpn != *qpn))
			continue;
		mrc_conn_get_info(qp->conn, &info);
		for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn); k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);
			struct mrc_ctl_path out;

			if (n + sizeof(out) > cap)
				return n;
			memset(&out, 0, sizeof(out));
			out.qp_num = qp->qpn;
			out.index = (uint8_t)k;
			out.plane = p->plane;
			out.sport = p->sport;
			out.state = p->state;
			out.cwnd = p->cc.cwnd;
			out.inflight = p->inflight;
			out.srtt_ns = p->rtt.srtt_ns;
			out.congested = p->state == MRC_PATH_ACTIVE && p->cc.recovery_end_ns > now;
			out.rate_hint_kbps = info.rate_hint_kbps;
			out.min_rtt_us = (uint32_t)(p->rtt.min_ns / 1000);
			if (k < MRC_MAX_PATHS) { /* since the last stat reset */
				out.tx_packets = p->stats.tx_packets - qp->base.path_tx[k];
				out.retransmits = p->stats.retransmits - qp->base.path_retx[k];
				out.ce_marks = p->stats.ecn_echoes - qp->base.path_ecn[k];
			}
			memcpy(buf + n, &out, sizeof(out));
			n += sizeof(out);
		}
	}
	return n;
}

void mrcd_clients_fini(struct mrcd *d)
{
	struct mrcd_clients *c = &d->clients;

	if (c->qps)
		for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
			mrcd_clients_gone(d, i);
	mrcd_linger_fini(&c->lingering);
	free_tables(c);
	mrc_rate_domain_fini(&c->rate);
	memset(&c->rate, 0, sizeof(c->rate));
}
