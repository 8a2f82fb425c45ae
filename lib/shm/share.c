/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "share.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * Whole pages go into the memfd, bytes around the registered object included: that is the
 * point of the move, not an overrun. The kernel copies them (a raw pwrite), so no user-space
 * checker mistakes the neighbouring bytes for an out-of-bounds read.
 */
static int copy_pages(int fd, uintptr_t start, size_t length)
{
	size_t done = 0;

	while (done < length) {
		long n = syscall(SYS_pwrite64, fd, (const void *)(start + done), length - done,
				 (off_t)done);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* The range grown to whole pages; -EINVAL for an empty or wrapping one. */
static int page_span(void *addr, size_t len, uintptr_t *start, size_t *length)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t end;

	if (!addr || !len || (uintptr_t)addr > UINTPTR_MAX - len - page)
		return -EINVAL;
	*start = (uintptr_t)addr & ~(page - 1);
	end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	*length = end - *start;
	return 0;
}

/* fd, which holds a copy of the pages, takes their place at the same addresses. */
static int take_place(int fd, void *addr, uintptr_t start, size_t length,
		      struct mrc_shared_range *out)
{
	void *mapped = mmap((void *)start, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			    fd, 0);

	if (mapped == MAP_FAILED)
		return -errno;
	/* a child must not share these pages with us (nor the heap beside them on the same
	 * pages): it gets none of them, as with ibv_fork_init on a real device */
	if (madvise(mapped, length, MADV_DONTFORK))
		return -errno;
	out->fd = fd;
	out->base = mapped;
	out->length = length;
	out->offset = (uintptr_t)addr - start;
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
	err = copy_pages(fd, start, length);
	if (!err)
		err = take_place(fd, addr, start, length, out);
	if (err)
		close(fd);
	return err;
}

int mrc_share_range_into(int fd, void *addr, size_t len, struct mrc_shared_range *out)
{
	uintptr_t start;
	size_t length;
	struct iovec to, from;
	void *copy;
	int err;

	err = page_span(addr, len, &start, &length);
	if (err)
		return err;
	copy = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (copy == MAP_FAILED)
		return -errno;
	/* the kernel copies, as for the memfd: no user-space checker sees the bytes around the
	 * registered object read */
	to = (struct iovec){ copy, length };
	from = (struct iovec){ (void *)start, length };
	errno = 0;
	if (process_vm_readv(getpid(), &to, 1, &from, 1, 0) != (ssize_t)length)
		err = errno ? -errno : -EIO;
	munmap(copy, length);
	if (!err)
		err = take_place(fd, addr, start, length, out);
	return err;
}
