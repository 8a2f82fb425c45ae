/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Memory registration. The pages under a region move beneath sealed memfds (shm/share.c) that
 * the daemon maps; one-sided operations then land in the application's memory with no call
 * on its side. Pages already moved for an earlier region are not moved again (that would cut
 * the earlier region off from the pages the application sees): a page registry remembers each
 * shared segment, and a region is the run of segments that covers it, old and new.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "shm/share.h"

struct mrv_segment {
	uintptr_t start, end; /* page aligned */
	int fd;
	unsigned refs;
	ino_t ino;	      /* the memfd's inode, to recognise its mapping in /proc/self/maps */
	bool listed;	      /* in the registry (a stale segment leaves it, its MRs keep it) */
	bool idle;	      /* listed, no region uses it: on the idle list */
	struct mrv_segment *idle_prev, *idle_next;
};

/*
 * Segments no region uses any more stay listed, oldest dropped first: a program that
 * registers the same buffers again and again (a collectives library creating its buffers per
 * operation) finds their pages shared already instead of moving them again, which costs a
 * copy and, out of a page map, cannot be write-protected (share.c). Only small ones, and not
 * too many bytes of them: an idle segment's descriptor keeps its memfd alive, and a large
 * buffer the program has since unmapped would be memory nobody uses. (Large buffers have
 * their own mappings, which no other object shares.)
 */
#define MRV_IDLE_SEGMENTS 256
#define MRV_IDLE_MAX_SEGMENT (1u << 20)
#define MRV_IDLE_BYTES (32u << 20)

/* Segments sorted by address, never overlapping. */
static struct {
	pthread_mutex_t lock;
	struct mrv_segment **v;
	unsigned n, cap;
	struct mrv_segment *idle_oldest, *idle_newest;
	unsigned n_idle;
	size_t idle_bytes;
} registry = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int registry_insert(struct mrv_segment *s)
{
	unsigned at = 0;

	if (registry.n == registry.cap) {
		unsigned cap = registry.cap ? registry.cap * 2 : 64;
		struct mrv_segment **v = realloc(registry.v, cap * sizeof(*v));

		if (!v)
			return ENOMEM;
		registry.v = v;
		registry.cap = cap;
	}
	while (at < registry.n && registry.v[at]->start < s->start)
		at++;
	memmove(registry.v + at + 1, registry.v + at, (registry.n - at) * sizeof(*registry.v));
	registry.v[at] = s;
	registry.n++;
	return 0;
}

static void registry_remove(struct mrv_segment *s)
{
	for (unsigned i = 0; i < registry.n; i++)
		if (registry.v[i] == s) {
			memmove(registry.v + i, registry.v + i + 1,
				(registry.n - i - 1) * sizeof(*registry.v));
			registry.n--;
			break;
		}
	s->listed = false;
}

static void idle_unlink(struct mrv_segment *s)
{
	if (s->idle_prev)
		s->idle_prev->idle_next = s->idle_next;
	else
		registry.idle_oldest = s->idle_next;
	if (s->idle_next)
		s->idle_next->idle_prev = s->idle_prev;
	else
		registry.idle_newest = s->idle_prev;
	s->idle_prev = s->idle_next = NULL;
	s->idle = false;
	registry.n_idle--;
	registry.idle_bytes -= s->end - s->start;
}

/* The segment goes for good: the pages stay memfd-backed and keep their bytes; only the
 * registry forgets them. */
static void segment_drop(struct mrv_segment *s)
{
	if (s->listed)
		registry_remove(s);
	close(s->fd);
	free(s);
}

static void segment_put(struct mrv_segment *s)
{
	if (--s->refs)
		return;
	if (!s->listed || s->end - s->start > MRV_IDLE_MAX_SEGMENT) {
		segment_drop(s);
		return;
	}
	s->idle = true;
	s->idle_prev = registry.idle_newest;
	s->idle_next = NULL;
	if (registry.idle_newest)
		registry.idle_newest->idle_next = s;
	else
		registry.idle_oldest = s;
	registry.idle_newest = s;
	registry.n_idle++;
	registry.idle_bytes += s->end - s->start;
	while (registry.n_idle > MRV_IDLE_SEGMENTS || registry.idle_bytes > MRV_IDLE_BYTES) {
		struct mrv_segment *old = registry.idle_oldest;

		idle_unlink(old);
		segment_drop(old);
	}
}

/* A region takes a segment: an idle one leaves the idle list. */
static void segment_get(struct mrv_segment *s)
{
	if (!s->refs++ && s->idle)
		idle_unlink(s);
}

/*
 * Whether the segment's pages are still its memfd's: the application may have unmapped them
 * (legal while a region is registered) and mapped something else at the same addresses.
 * Reusing the memfd then would hand the daemon pages the application no longer sees.
 */
static bool segment_intact(const struct mrv_segment *s)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t covered = 0;

	if (!f)
		return true; /* no /proc here: trust the registry, as before the check existed */
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %lu", &lo, &hi, &off, &ino) != 4)
			continue;
		if (hi <= s->start || lo >= s->end)
			continue;
		if (lo < s->start || ino != s->ino || off != lo - s->start)
			break; /* something else lives there now */
		covered += (hi < s->end ? hi : s->end) - lo;
	}
	fclose(f);
	return covered == s->end - s->start;
}

/* The segment holding addr, or the first one after it (NULL: none). */
static struct mrv_segment *segment_at_or_after(uintptr_t addr)
{
	for (unsigned i = 0; i < registry.n; i++)
		if (registry.v[i]->end > addr)
			return registry.v[i];
	return NULL;
}

/*
 * A move that could not hold off other threads' writes is said once per process: a
 * multithreaded program may then lose a write to the pages around a region it registers.
 */
static void warn_unprotected(int why)
{
	static bool warned;

	if (!why || warned)
		return;
	warned = true;
	if (!getenv("METAROCE_QUIET"))
		fprintf(stderr,
			"libmetaroce: ibv_reg_mr moved pages without write protection "
			"(userfaultfd: %s): another thread writing to the same pages at that "
			"moment could lose its write\n",
			strerror(why));
}

/*
 * Shares [at, at + len): into a page map from the daemon when its XDP fast path places
 * packets there (the bytes never pass through the daemon), else into a memfd. Whatever goes
 * wrong on the way (the daemon's quota, a sandbox refusing process_vm_readv) ends in a memfd:
 * slower, never wrong. Even pages already moved into the page map are simply moved again,
 * bytes unchanged.
 */
static int share_pages(struct mrv_context *ctx, uintptr_t at, size_t len,
		       struct mrc_shared_range *r)
{
	int err;

	if (!strncmp(ctx->status.backend, "xdp", sizeof(ctx->status.backend))) {
		struct mrc_ctl_pages req = { .length = len };
		unsigned n_fds = 1;
		int fd = -1;

		err = mrv_request(ctx, MRC_CTL_PAGES, &req, sizeof(req), NULL, 0, NULL, 0, NULL,
				  &fd, &n_fds);
		if (!err && n_fds == 1) {
			if (!mrc_share_range_into(fd, (void *)at, len, r)) {
				warn_unprotected(r->unprotected);
				return 0;
			}
			close(fd);
		}
	}
	err = mrc_share_range((void *)at, len, r);
	if (!err)
		warn_unprotected(r->unprotected);
	return err;
}

/*
 * Forgets the idle segments wholly inside [start, end): a region over many pages that small
 * regions used before would otherwise be cut into more pieces than a registration carries.
 * Their pages are then moved again, as one piece with the rest. True when any went.
 */
static bool drop_idle_within(uintptr_t start, uintptr_t end)
{
	bool dropped = false;

	for (unsigned i = 0; i < registry.n;) {
		struct mrv_segment *s = registry.v[i];

		if (s->idle && s->start >= start && s->end <= end) {
			idle_unlink(s);
			segment_drop(s); /* leaves the registry: v[i] is the next one now */
			dropped = true;
			continue;
		}
		i++;
	}
	return dropped;
}

/* Covers [start, end) with segments, sharing the pages not yet shared. */
static int cover(struct mrv_context *ctx, uintptr_t start, uintptr_t end,
		 struct mrv_segment **out, unsigned *n_out)
{
	uintptr_t at = start;
	unsigned n = 0;
	int err = 0;

	while (at < end) {
		struct mrv_segment *s = segment_at_or_after(at);

		if (n == MRC_CTL_MAX_SEGMENTS) {
			err = E2BIG; /* too fragmented by earlier registrations */
			break;
		}
		if (s && s->start <= at && !segment_intact(s)) {
			/* stale: its regions keep it; new ones move the pages */
			if (s->idle) {
				idle_unlink(s);
				segment_drop(s);
			} else {
				registry_remove(s);
			}
			continue;
		}
		if (!s || s->start > at) {
			uintptr_t gap_end = s && s->start < end ? s->start : end;
			struct mrc_shared_range r;
			struct mrv_segment *ns = calloc(1, sizeof(*ns));

			if (!ns) {
				err = ENOMEM;
				break;
			}
			err = -share_pages(ctx, at, gap_end - at, &r);
			if (err) {
				free(ns);
				break;
			}
			*ns = (struct mrv_segment){ .start = at, .end = gap_end, .fd = r.fd,
						    .listed = true };
			{
				struct stat st;

				if (!fstat(r.fd, &st))
					ns->ino = st.st_ino;
			}
			err = registry_insert(ns);
			if (err) {
				close(ns->fd); /* the pages stay moved; only the registry lacks them */
				free(ns);
				break;
			}
			s = ns;
		}
		segment_get(s);
		out[n++] = s;
		at = s->end;
	}
	if (err)
		while (n)
			segment_put(out[--n]);
	*n_out = n;
	return err;
}

static unsigned to_ctl_access(unsigned ibv)
{
	return (ibv & IBV_ACCESS_LOCAL_WRITE ? MRC_CTL_ACCESS_LOCAL_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_WRITE ? MRC_CTL_ACCESS_REMOTE_WRITE : 0) |
	       (ibv & IBV_ACCESS_REMOTE_READ ? MRC_CTL_ACCESS_REMOTE_READ : 0) |
	       (ibv & IBV_ACCESS_REMOTE_ATOMIC ? MRC_CTL_ACCESS_REMOTE_ATOMIC : 0) |
	       (ibv & IBV_ACCESS_MW_BIND ? MRC_CTL_ACCESS_MW_BIND : 0);
}

/* What verbs asks of access flags: remote write and remote atomic need local write [IB spec
 * 10.6.3.1]. */
static int check_access(unsigned access)
{
	unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_RELAXED_ORDERING |
			 IBV_ACCESS_OPTIONAL_RANGE;

	if (access & ~known)
		return EOPNOTSUPP;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

/* Registers [addr, addr + length) in the daemon, named by iova; fills mr's keys. */
static int register_range(struct mrv_context *ctx, struct mrv_mr *mr, struct ibv_pd *pd,
			  void *addr, size_t length, uint64_t iova, unsigned access)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + length + page - 1) & ~(page - 1);
	struct mrv_segment *segs[MRC_CTL_MAX_SEGMENTS];
	struct {
		struct mrc_ctl_reg_mr r;
		struct mrc_ctl_mr_segment seg[MRC_CTL_MAX_SEGMENTS];
	} req;
	int fds[MRC_CTL_MAX_SEGMENTS];
	struct mrc_ctl_mr keys;
	uint32_t len = 0;
	unsigned n;
	int err;

	if (!addr || !length || length > UINTPTR_MAX - page ||
	    (uintptr_t)addr > UINTPTR_MAX - page - length)
		return EINVAL;
	pthread_mutex_lock(&registry.lock);
	err = cover(ctx, start, end, segs, &n);
	if (err == E2BIG && drop_idle_within(start, end))
		err = cover(ctx, start, end, segs, &n); /* the idle pieces moved as one */
	if (err) {
		pthread_mutex_unlock(&registry.lock);
		return err;
	}
	memset(&req, 0, sizeof(req));
	req.r.iova = iova;
	req.r.length = length;
	req.r.offset = (uintptr_t)addr - start;
	req.r.access = to_ctl_access(access);
	req.r.n_segments = n;
	req.r.pd = mrv_pd_id(pd);
	for (unsigned i = 0; i < n; i++) {
		/* a segment may begin before the region: send only the pages the region spans */
		uintptr_t from = segs[i]->start > start ? segs[i]->start : start;
		uintptr_t to = segs[i]->end < end ? segs[i]->end : end;

		req.seg[i].fd_offset = from - segs[i]->start;
		req.seg[i].length = to - from;
		fds[i] = segs[i]->fd;
	}
	err = mrv_request(ctx, MRC_CTL_REG_MR, &req,
			  (uint32_t)(sizeof(req.r) + n * sizeof(req.seg[0])), fds, n, &keys,
			  sizeof(keys), &len, NULL, NULL);
	if (!err && len != sizeof(keys))
		err = EPROTO;
	if (err) {
		while (n)
			segment_put(segs[--n]);
		pthread_mutex_unlock(&registry.lock);
		return err;
	}
	mr->segments = malloc(n * sizeof(*mr->segments));
	if (!mr->segments) {
		struct mrc_ctl_handle h = { .handle = keys.lkey };

		mrv_request(ctx, MRC_CTL_DEREG_MR, &h, sizeof(h), NULL, 0, NULL, 0, NULL, NULL,
			    NULL);
		while (n)
			segment_put(segs[--n]);
		pthread_mutex_unlock(&registry.lock);
		return ENOMEM;
	}
	memcpy(mr->segments, segs, n * sizeof(*segs));
	mr->n_segments = n;
	pthread_mutex_unlock(&registry.lock);
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->iova = iova;
	mr->ibmr.lkey = keys.lkey;
	mr->ibmr.rkey = keys.rkey;
	mr->ibmr.handle = keys.lkey;
	mr->access = access;
	return 0;
}

static int unregister(struct mrv_mr *mr)
{
	struct mrc_ctl_handle h = { .handle = mr->ibmr.lkey };
	int err;

	if (!mr->n_segments)
		return 0; /* a failed ibv_rereg_mr already released it */
	err = mrv_request(to_ctx(mr->ibmr.context), MRC_CTL_DEREG_MR, &h, sizeof(h), NULL, 0,
			      NULL, 0, NULL, NULL, NULL);

	/* a daemon that is gone has forgotten the region already */
	if (err && err != ENODEV)
		return err;
	pthread_mutex_lock(&registry.lock);
	for (unsigned i = 0; i < mr->n_segments; i++)
		segment_put(mr->segments[i]);
	pthread_mutex_unlock(&registry.lock);
	free(mr->segments);
	mr->segments = NULL;
	mr->n_segments = 0;
	return 0;
}

struct ibv_mr *mrv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			  unsigned access)
{
	struct mrv_mr *mr;
	int err = check_access(access);

	if (err) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	err = register_range(to_ctx(pd->context), mr, pd, addr, length, iova, access);
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mrv_pd_use(pd, 1);
	return &mr->ibmr;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return mrv_reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				 int access)
{
	return mrv_reg_mr(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return mrv_reg_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct mrv_mr *mr = (struct mrv_mr *)ibmr;
	int err = unregister(mr);

	if (err)
		return err;
	mrv_pd_use(ibmr->pd, -1);
	free(mr);
	return 0;
}

/*
 * A new translation, PD or access for an existing region: the old registration is released
 * and a new one made, so the keys change, as verbs allows. A failure after the release
 * returns IBV_REREG_MR_ERR_CMD and leaves the region unusable except for ibv_dereg_mr.
 */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	struct mrv_mr *mr = (struct mrv_mr *)ibmr;
	void *new_addr = ibmr->addr;
	size_t new_len = ibmr->length;
	unsigned new_access = mr->access;

	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED || !flags)
		return IBV_REREG_MR_ERR_INPUT;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		new_addr = addr;
		new_len = length;
		if (!addr || !length)
			return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		new_access = (unsigned)access;
		if (check_access(new_access))
			return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != ibmr->context))
		return IBV_REREG_MR_ERR_INPUT;
	if (unregister(mr))
		return IBV_REREG_MR_ERR_CMD;
	/* a new translation is named by its address; otherwise the region keeps its iova */
	if (register_range(to_ctx(ibmr->context), mr,
			   flags & IBV_REREG_MR_CHANGE_PD ? pd : ibmr->pd, new_addr, new_len,
			   flags & IBV_REREG_MR_CHANGE_TRANSLATION ? (uintptr_t)new_addr : mr->iova,
			   new_access))
		return IBV_REREG_MR_ERR_CMD;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		mrv_pd_use(ibmr->pd, -1);
		mrv_pd_use(pd, 1);
		ibmr->pd = pd;
	}
	return 0;
}
