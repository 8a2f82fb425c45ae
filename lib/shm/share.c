/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "share.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Linux 6.4's uAPI; Debian 12's headers predate it. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif

/* The range grown to whole pages; -EINVAL for an empty or wrapping one. */
static int page_span(void *addr, size_t len, uintptr_t *start, size_t *length)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t end;

	if (!addr || !len || len > UINTPTR_MAX - page || (uintptr_t)addr > UINTPTR_MAX - page - len)
		return -EINVAL;
	*start = (uintptr_t)addr & ~(page - 1);
	end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	*length = end - *start;
	return 0;
}

/*
 * Other threads of the application run on while its pages move, and the pages of a small
 * registered object are shared with whatever else lives on them (a progress thread's
 * counters, mutexes, malloc's own bookkeeping). A write that lands on the old pages after
 * the copy is lost with them. So, for the window from the copy to the new mapping, the pages
 * are write-protected with userfaultfd: a thread that writes there sleeps in the kernel until
 * the window closes, then retries its write on the new mapping. Reads go on undisturbed. The
 * window lasts as long as the copy: microseconds for a few pages, some 100 ms for a GiB.
 *
 * The new mapping is made elsewhere first (staged), marked MADV_DONTFORK there, and moved into
 * place with one mremap: a fork at any moment gives the child either the old private pages
 * or none, never a mapping it shares with us. Nobody reads the userfaultfd's messages: the
 * window ends with UFFDIO_WAKE (a descriptor a concurrent fork duplicated would keep a mere
 * close from waking anyone) and the close. The window runs on a helper thread while the
 * registering thread waits with every signal blocked, so that thread may have its own stack
 * or a signal handler's data in the range: it sleeps through the window like any writer.
 *
 * Without privilege (CAP_SYS_PTRACE) the kernel gives only UFFD_USER_MODE_ONLY: a write the
 * kernel makes there for a thread during the window (read(2) into a buffer on those pages,
 * an rseq update of a thread control block on them) then fails with EFAULT instead of
 * waiting. Before Linux 6.4 pages never touched are populated first (MADV_POPULATE_READ) to
 * be protectable, and one another thread discards in between (MADV_DONTNEED) escapes the
 * protection. Where userfaultfd cannot protect the range at all (not in the kernel or the
 * sandbox, a file-backed private mapping such as a program's .data, a BPF map's pages), the
 * pages move unprotected, and out->unprotected says why.
 */
struct move {
	int fd;		     /* holds the copy, then backs the pages */
	uintptr_t start;
	size_t length;
	void *staged;	     /* fd mapped elsewhere, MADV_DONTFORK, until it moves into place */
	bool via_staged;     /* copy into the staged mapping (a page map), not with pwrite */
	int uffd;	     /* the write protection, or -1 */
	int unprotected;     /* why there is none (errno), or 0 */
	int err;
};

/* What UFFDIO_API offers in this kernel: asked once per process. */
static uint64_t uffd_features;
static pthread_once_t uffd_probe_once = PTHREAD_ONCE_INIT;

static int uffd_open(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	/* unprivileged: faults from user mode only (allowed since Linux 5.11) */
	if (fd < 0 && errno == EPERM)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	return fd;
}

static void uffd_probe(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = uffd_open();

	if (fd < 0)
		return;
	if (!ioctl(fd, UFFDIO_API, &api))
		uffd_features = api.features;
	close(fd);
}

/*
 * Readies the write protection of [start, start + length): registers the range with a new
 * userfaultfd, which it returns for the window to arm (protect_now), or -errno when the range
 * cannot be protected.
 */
static int protect_prepare(uintptr_t start, size_t length)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .range = { start, length }, .mode = UFFDIO_REGISTER_MODE_WP };
	int fd, err;

	pthread_once(&uffd_probe_once, uffd_probe);
	fd = uffd_open();
	if (fd < 0)
		return -errno;
	/* pages never touched have no page table entry to protect: the kernel protects them
	 * anyway where it can (6.4+), else they are populated (the zero page) first */
	api.features = uffd_features & UFFD_FEATURE_WP_UNPOPULATED;
	if (ioctl(fd, UFFDIO_API, &api) || ioctl(fd, UFFDIO_REGISTER, &reg)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
		close(fd);
		return -EOPNOTSUPP;
	}
	if (!(api.features & UFFD_FEATURE_WP_UNPOPULATED) &&
	    madvise((void *)start, length, MADV_POPULATE_READ)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int protect_now(int uffd, uintptr_t start, size_t length, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { start, length },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

/*
 * Whole pages go into the copy, bytes around the registered object included: that is the
 * point of the move, not an overrun. The kernel copies them (a raw pwrite, or
 * process_vm_readv into a page map), so no user-space checker mistakes the neighbouring
 * bytes for an out-of-bounds read, and nothing here writes to the pages being copied.
 */
static int copy_pages(const struct move *m)
{
	size_t done = 0;

	if (m->via_staged) {
		struct iovec to = { m->staged, m->length };
		struct iovec from = { (void *)m->start, m->length };

		errno = 0;
		if (process_vm_readv(getpid(), &to, 1, &from, 1, 0) != (ssize_t)m->length)
			return errno ? -errno : -EIO;
		return 0;
	}
	while (done < m->length) {
		long n = syscall(SYS_pwrite64, m->fd, (const void *)(m->start + done),
				 m->length - done, (off_t)done);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/*
 * The window: protect, copy, move the staged mapping into the pages' place, end the
 * protection. It works on its own copy of the move and writes the outcome back only once the
 * protection is gone: the caller's struct may sit on the very pages being moved.
 */
static void *move_window(void *arg)
{
	struct move w = *(struct move *)arg;

	if (w.uffd >= 0)
		w.err = protect_now(w.uffd, w.start, w.length, true);
	if (!w.err)
		w.err = copy_pages(&w);
	if (!w.err) {
		/*
		 * The system call itself, not libc's mremap: memory hooks that programs install
		 * over it need not pass MREMAP_FIXED's fifth argument on (UCX 1.13's do not, and
		 * the move then fails with EINVAL).
		 */
		if ((void *)syscall(SYS_mremap, w.staged, w.length, w.length,
				    MREMAP_MAYMOVE | MREMAP_FIXED, (void *)w.start) == MAP_FAILED)
			w.err = -errno;
		else
			w.staged = NULL; /* it is the pages now */
	}
	if (w.uffd >= 0) {
		struct uffdio_range all = { w.start, w.length };

		/* still the old pages if the copy or the move failed: not left protected */
		if (w.err)
			(void)protect_now(w.uffd, w.start, w.length, false);
		(void)ioctl(w.uffd, UFFDIO_WAKE, &all);
		close(w.uffd);
		w.uffd = -1;
	}
	*(struct move *)arg = w;
	return NULL;
}

/*
 * Runs the window on a helper thread; 0 or -errno. The caller keeps every signal blocked and
 * cannot be cancelled until the helper is done: a signal frame or a cancellation unwinding
 * onto pages in the window would fault or leave the helper writing into a dead frame.
 */
static int run_window(struct move *m)
{
	sigset_t all, old;
	pthread_t helper;
	int cancel, err;

	if (m->uffd >= 0) {
		sigfillset(&all);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
		pthread_sigmask(SIG_SETMASK, &all, &old); /* the helper inherits the mask */
		err = pthread_create(&helper, NULL, move_window, m);
		if (!err)
			pthread_join(helper, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_setcancelstate(cancel, NULL);
		if (!err)
			return m->err;
		/* no helper: unprotected, on this thread (nothing is protected yet) */
		close(m->uffd);
		m->uffd = -1;
		m->unprotected = err;
	}
	move_window(m);
	return m->err;
}

/* fd takes the place of the pages of [addr, addr + len), bytes unchanged. */
static int move_pages(int fd, bool via_staged, void *addr, uintptr_t start, size_t length,
		      struct mrc_shared_range *out)
{
	struct move m = { fd, start, length, NULL, via_staged, -1, 0, 0 };
	int prot;

	m.staged = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m.staged == MAP_FAILED)
		return -errno;
	/* a child must not share these pages with us (nor the heap beside them on the same
	 * pages): it gets none of them, as with ibv_fork_init on a real device */
	if (madvise(m.staged, length, MADV_DONTFORK)) {
		int err = -errno;

		munmap(m.staged, length);
		return err;
	}
	prot = protect_prepare(start, length);
	if (prot >= 0)
		m.uffd = prot;
	else
		m.unprotected = -prot;
	if (run_window(&m)) {
		if (m.staged)
			munmap(m.staged, length);
		return m.err;
	}
	out->fd = fd;
	out->base = (void *)start;
	out->length = length;
	out->offset = (uintptr_t)addr - start;
	out->unprotected = m.unprotected;
	return 0;
}

int mrc_share_range(void *addr, size_t len, struct mrc_shared_range *out)
{
	uintptr_t start;
	size_t length;
	int fd, err;

	err = page_span(addr, len, &start, &length);
	if (err)
		return err;
	fd = memfd_create("metaroce-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* the memfd first holds a copy of the pages, so the move changes no byte */
	if (ftruncate(fd, (off_t)length) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		close(fd);
		return err;
	}
	err = move_pages(fd, false, addr, start, length, out);
	if (err)
		close(fd);
	return err;
}

int mrc_share_range_into(int fd, void *addr, size_t len, struct mrc_shared_range *out)
{
	uintptr_t start;
	size_t length;
	int err;

	err = page_span(addr, len, &start, &length);
	if (err)
		return err;
	return move_pages(fd, true, addr, start, length, out);
}
