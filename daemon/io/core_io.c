/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The core's ops over real descriptors: the backend's sockets, the clients' memfds, eventfds
 * and channel sockets, the fast path's BPF maps. Descriptors that came with a request wait in
 * d->req while the core handles it; those it does not take are closed once it is answered.
 */
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "io/control.h"
#include "io/daemon.h"
#include "io/fastpath.h"
#include "log.h"
#include "shm/ring.h"

static struct mrcd *daemon_of(void *io)
{
	return io;
}

/* The shard's worker's sockets: each sends from its own. */
static struct mrcd_backend *backend_of(struct mrcd *d, unsigned shard)
{
	return d->workers && shard < d->n_workers ? d->workers[shard].backend : &d->backend;
}

/*
 * The batch a path at a time (plane and source port: one sending socket, one train for GSO),
 * each path's datagrams in their order: the engine sprays consecutive packets over its paths,
 * and sent as they come every datagram would be a system call of its own.
 */
static unsigned tx(void *io, unsigned shard, const struct mrcd_dgram *g, unsigned n, bool *sent)
{
	struct mrcd *d = daemon_of(io);
	struct mrcd_dgram run[MRCD_TX_BATCH];
	uint16_t at[MRCD_TX_BATCH];
	bool grouped[MRCD_TX_BATCH] = { false };
	struct mrcd_backend *b = backend_of(d, shard);
	unsigned total = 0;

	for (unsigned i = 0; i < n; i++)
		sent[i] = false;
	for (unsigned i = 0; i < n && i < MRCD_TX_BATCH; i++) {
		unsigned m = 0;
		int k;

		if (grouped[i])
			continue;
		for (unsigned j = i; j < n && j < MRCD_TX_BATCH; j++)
			if (!grouped[j] && g[j].plane == g[i].plane && g[j].sport == g[i].sport) {
				grouped[j] = true;
				at[m] = (uint16_t)j;
				run[m++] = g[j];
			}
		k = b->ops->tx_batch(b, run, m);
		for (int x = 0; x < k; x++)
			sent[at[x]] = true;
		total += k > 0 ? (unsigned)k : 0;
	}
	return total;
}

static unsigned sports(void *io, unsigned shard, uint8_t plane, uint16_t *ports, unsigned max)
{
	return mrcd_backend_sports(backend_of(daemon_of(io), shard), plane, ports, max);
}

/* A descriptor of the request being served, taken: it is no longer closed after the reply. */
static int take_fd(struct mrcd *d, unsigned i)
{
	int fd;

	if (i >= d->req.n_in || d->req.in[i] < 0)
		return -1;
	fd = d->req.in[i];
	d->req.in[i] = -1;
	return fd;
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

static bool is_unix_datagram(int fd)
{
	int type = 0, domain = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len))
		return false;
	len = sizeof(domain);
	/* completion channels are datagram pairs, rdma_cm event channels sequenced ones */
	return !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) && domain == AF_UNIX &&
	       (type == SOCK_DGRAM || type == SOCK_SEQPACKET);
}

/* The QPs the client marked in its doorbell page get their turn at the next pump. */
static void doorbell_rang(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	(void)events;
	mrcd_core_doorbell(&d->core, w->worker, w->slot, mrcd_now_ns());
}

/* The doorbell out of every worker's epoll (the entries belong to the open file, which the
 * client may still hold). */
static void unwatch_doorbell(struct mrcd *d, unsigned client)
{
	struct mrcd_watch *w = &d->conn[client].doorbell;

	for (unsigned k = 1; d->workers && k < d->n_workers; k++) {
		struct mrcd_watch *wk = &d->workers[k].doorbell[client];

		if (wk->fd >= 0)
			epoll_ctl(d->workers[k].epoll_fd, EPOLL_CTL_DEL, wk->fd, NULL);
		wk->fd = -1;
	}
	if (w->fd >= 0)
		epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, w->fd, NULL);
}

/*
 * A client's doorbell eventfd: edge-triggered, so every write wakes the loop and the daemon
 * never reads it. A read could block: the client shares the file and can clear O_NONBLOCK,
 * then empty the counter between our wakeup and our read.
 */
static int keep_doorbell(void *io, unsigned client, unsigned i)
{
	struct mrcd *d = daemon_of(io);
	struct mrcd_watch *w = &d->conn[client].doorbell;

	if (i >= d->req.n_in || !is_eventfd(d->req.in[i]))
		return -EBADF;
	*w = (struct mrcd_watch){ doorbell_rang, d->req.in[i], client, 0, true };
	if (mrcd_watch(d, w, true)) {
		w->fd = -1;
		return -errno;
	}
	/* every worker may run QPs of the client: each watches the eventfd in its own epoll
	 * (edge-triggered, each is woken) and takes only its QPs' bits */
	for (unsigned k = 1; d->workers && k < d->n_workers; k++) {
		struct mrcd_watch *wk = &d->workers[k].doorbell[client];

		*wk = (struct mrcd_watch){ doorbell_rang, w->fd, client, k, true };
		if (mrcd_worker_watch(&d->workers[k], wk, true)) {
			int err = -errno;

			wk->fd = -1;
			unwatch_doorbell(d, client);
			w->fd = -1; /* the descriptor stays the request's, closed after the reply */
			return err;
		}
	}
	take_fd(d, i);
	return 0;
}

static int keep_channel(void *io, unsigned i, int *channel)
{
	struct mrcd *d = daemon_of(io);

	/* a completion channel is the library's datagram socket */
	if (i >= d->req.n_in || !is_unix_datagram(d->req.in[i]))
		return -EBADF;
	*channel = take_fd(d, i);
	return 0;
}

/*
 * Maps the client's segments back to back into one reserved span, so the region is one
 * contiguous range here as it is in the client. Each segment must be ordinary shmem sealed
 * against shrinking and as long as it claims (hugetlbfs pages could be missing at fault time:
 * SIGBUS in the daemon), or a page map of the fast path, whose size is fixed at creation.
 */
static int map_region(void *io, const struct mrc_ctl_mr_segment *seg, unsigned n,
		      struct mrcd_region_map *out)
{
	struct mrcd *d = daemon_of(io);
	size_t span = 0, at = 0;
	bool page_map = false;
	uint8_t *base;

	if (n > d->req.n_in)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		int fd = d->req.in[i];
		uint64_t bytes;
		struct statfs fs;
		int err;

		if (d->backend.fast && mrcd_fastpath_is_page_map(d->backend.fast, fd, &bytes)) {
			if (seg[i].fd_offset + seg[i].length > bytes)
				return -EINVAL;
			page_map = n == 1;
			span += seg[i].length;
			continue;
		}
		err = mrc_shm_check(fd, seg[i].fd_offset + seg[i].length);
		if (err)
			return err;
		if (fstatfs(fd, &fs) || fs.f_type != TMPFS_MAGIC)
			return -EINVAL;
		span += seg[i].length;
	}
	base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if (mmap(base + at, seg[i].length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 d->req.in[i], (off_t)seg[i].fd_offset) == MAP_FAILED) {
			int err = -errno;

			munmap(base, span);
			return err;
		}
		at += seg[i].length;
	}
	*out = (struct mrcd_region_map){ base, span, page_map };
	return 0;
}

static int reply_fd(struct mrcd *d, int fd)
{
	if (d->req.n_out >= sizeof(d->req.out) / sizeof(d->req.out[0])) {
		close(fd);
		return -EOVERFLOW;
	}
	d->req.out[d->req.n_out++] = fd;
	return 0;
}

static int new_shared_memory(void *io, size_t bytes, void **mem)
{
	struct mrcd *d = daemon_of(io);
	int fd = mrc_shm_create("metaroce-ring", bytes), err;
	void *m;

	if (fd < 0)
		return fd;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	err = reply_fd(d, fd);
	if (err) {
		munmap(m, bytes);
		return err;
	}
	*mem = m;
	return 0;
}

static int new_page_map(void *io, uint64_t bytes)
{
	struct mrcd *d = daemon_of(io);
	int fd = mrcd_fastpath_page_map(d->backend.fast, bytes / MRC_XDP_PAGE);

	return fd < 0 ? fd : reply_fd(d, fd);
}

static void unmap(void *io, void *mem, size_t bytes)
{
	(void)io;
	munmap(mem, bytes);
}

/* The send never waits: a client cannot stall the daemon through its channel. */
static bool notify(void *io, int channel)
{
	char one = 1;

	(void)io;
	return send(channel, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
}

static int record(void *io, int channel, const void *data, size_t len)
{
	ssize_t n;

	(void)io;
	n = send(channel, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n == (ssize_t)len)
		return 1;
	return n < 0 && (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) ? 0 : -1;
}

static void close_channel(void *io, int channel)
{
	(void)io;
	close(channel);
}

static void close_doorbell(void *io, unsigned client)
{
	struct mrcd *d = daemon_of(io);
	struct mrcd_watch *w = &d->conn[client].doorbell;

	if (w->fd < 0)
		return;
	unwatch_doorbell(d, client);
	close(w->fd);
	w->fd = -1;
}

static void log_line(void *io, int priority, const char *line)
{
	(void)io;
	mrcd_log(priority, "%s", line);
}

/* Monitors are the control thread's: another worker's events wait for it (loop.c). */
static void event(void *io, int priority, const char *line)
{
	struct mrcd *d = daemon_of(io);

	mrcd_log(priority, "%s", line);
	if (!d->workers || pthread_equal(pthread_self(), d->control_thread)) {
		mrcd_control_broadcast(d, line);
		return;
	}
	pthread_mutex_lock(&d->events_lock);
	if (d->n_events < MRCD_PENDING_EVENTS)
		snprintf(d->events[d->n_events++], sizeof(d->events[0]), "%s", line);
	else
		d->events_dropped++;
	pthread_mutex_unlock(&d->events_lock);
	mrcd_worker_wake(&d->workers[0]);
}

const struct mrcd_core_ops mrcd_core_io_ops = {
	.tx = tx,
	.sports = sports,
	.keep_doorbell = keep_doorbell,
	.keep_channel = keep_channel,
	.map_region = map_region,
	.new_shared_memory = new_shared_memory,
	.new_page_map = new_page_map,
	.unmap = unmap,
	.notify = notify,
	.record = record,
	.close_channel = close_channel,
	.close_doorbell = close_doorbell,
	.log = log_line,
	.event = event,
};

/* --- the fast path's maps ------------------------------------------------------------------ */

static struct mrcd_fastpath *fast_of(void *io)
{
	return daemon_of(io)->backend.fast;
}

static void qp_set(void *io, uint32_t qpn, unsigned shard, uint32_t owner, uint32_t base,
		   uint32_t flags, uint32_t peer_planes, const uint8_t peer[MRC_MAX_PLANES][16],
		   const struct mrc_auth_key *auth)
{
	mrcd_fastpath_qp_set(fast_of(io), qpn, shard, owner, base, flags, peer_planes, peer,
			     auth);
}

static void qp_peer(void *io, uint32_t qpn, uint32_t peer_planes,
		    const uint8_t peer[MRC_MAX_PLANES][16])
{
	mrcd_fastpath_qp_peer(fast_of(io), qpn, peer_planes, peer);
}

static void qp_advance(void *io, uint32_t qpn, uint32_t old_base, uint32_t base)
{
	mrcd_fastpath_qp_advance(fast_of(io), qpn, old_base, base);
}

static bool qp_read(void *io, uint32_t qpn, uint32_t msn, uint32_t key, uint64_t addr,
		    uint32_t len)
{
	return mrcd_fastpath_qp_read(fast_of(io), qpn, msn, key, addr, len);
}

static void qp_reads_done(void *io, uint32_t qpn, uint32_t oldest, uint32_t next)
{
	mrcd_fastpath_qp_reads_done(fast_of(io), qpn, oldest, next);
}

static void qp_clear_flags(void *io, uint32_t qpn, uint32_t flags)
{
	mrcd_fastpath_qp_clear_flags(fast_of(io), qpn, flags);
}

static void qp_clear(void *io, uint32_t qpn)
{
	mrcd_fastpath_qp_clear(fast_of(io), qpn);
}

/* The page map is the request's descriptor 0, still open while the core handles it. */
static int mr_set(void *io, uint32_t slot, uint32_t key, uint32_t access, uint32_t owner,
		  uint64_t iova, uint64_t len, uint64_t offset)
{
	struct mrcd *d = daemon_of(io);

	if (!d->req.n_in || d->req.in[0] < 0)
		return -EBADF;
	return mrcd_fastpath_mr_set(fast_of(io), slot, key, access, owner, iova, len,
				    d->req.in[0], offset);
}

static void mr_clear(void *io, uint32_t slot)
{
	mrcd_fastpath_mr_clear(fast_of(io), slot);
}

const struct mrcd_fast_ops mrcd_core_io_fast_ops = {
	.qp_set = qp_set,
	.qp_peer = qp_peer,
	.qp_advance = qp_advance,
	.qp_read = qp_read,
	.qp_reads_done = qp_reads_done,
	.qp_clear_flags = qp_clear_flags,
	.qp_clear = qp_clear,
	.mr_set = mr_set,
	.mr_clear = mr_clear,
};
