/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How ibv_reg_mr on ordinary heap memory becomes memory the daemon can write: the pages that
 * hold the range are moved, contents and addresses unchanged, under a sealed memfd mapped
 * MAP_SHARED | MAP_FIXED at the same place. The application keeps using its pointers; the
 * daemon maps the memfd it is handed and places one-sided data into it directly.
 *
 * The range grows to whole pages, so neighbouring bytes in those pages become shared too; the
 * daemon only ever writes inside the registered range. Other threads may go on writing to
 * those pages meanwhile: the move write-protects them with userfaultfd while it copies and
 * remaps, so a writer waits a moment instead of losing its write (share.c says where that
 * protection is weaker or missing). The moved pages are MADV_DONTFORK: a child process gets
 * none of them (what ibv_fork_init gives on a real device), rather than sharing them, and
 * the heap data beside a registered object on the same pages, with its parent.
 */
#ifndef METAROCE_SHM_SHARE_H
#define METAROCE_SHM_SHARE_H

#include <stddef.h>

struct mrc_shared_range {
	int fd;		   /* the sealed memfd (or page map) now behind the pages */
	void *base;	   /* first page */
	size_t length;	   /* whole pages */
	size_t offset;	   /* where the registered range starts inside the memfd */
	int unprotected;   /* 0, or why other threads' writes were not held off (errno) */
};

/* Moves the pages of [addr, addr + len) under a sealed memfd. Returns 0 or -errno. */
int mrc_share_range(void *addr, size_t len, struct mrc_shared_range *out);

/*
 * The same into pages someone else made: fd (the daemon's page map for its XDP fast path,
 * which places packets into them) must hold at least the whole pages of the range. On
 * success out->fd is fd; on failure the caller still owns fd and the pages are as they were.
 */
int mrc_share_range_into(int fd, void *addr, size_t len, struct mrc_shared_range *out);

#endif /* METAROCE_SHM_SHARE_H */
