/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* lib/verbs/share.c: heap memory made writable by another process, pointers unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"
#include "shm/share.h"

/*
 * A malloc'd buffer, unaligned and spanning pages: after the move its bytes are unchanged,
 * and a second process (standing in for the daemon) that maps the memfd writes into it; the
 * program sees the writes through its original pointer.
 */
START_TEST(mrc_share_range__heap_buffer_written_by_another_process)
{
	size_t len = 3 * 4096 + 123;
	uint8_t *raw = malloc(len + 64), *buf = raw + 7;
	struct mrc_shared_range r;
	pid_t child;
	int status;

	ck_assert_ptr_nonnull(raw);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 13);
	ck_assert_int_eq(mrc_share_range(buf, len, &r), 0);
	for (size_t i = 0; i < len; i++)
		ck_assert_uint_eq(buf[i], (uint8_t)(i * 13));
	ck_assert_uint_eq(r.length % 4096, 0);
	ck_assert_ptr_eq((uint8_t *)r.base + r.offset, buf);
	ck_assert_int_eq(ftruncate(r.fd, 4096), -1); /* sealed: nobody shrinks it */
	ck_assert_int_eq(errno, EPERM);
	ck_assert(fcntl(r.fd, F_GET_SEALS) & F_SEAL_SHRINK);

	/* the children touch nothing but their stack: the heap beside buf, where the test
	 * framework keeps its own state, is not theirs (MADV_DONTFORK) */
	child = fork();
	if (child == 0) {
		/* a fresh mapping of the memfd, as the daemon would make from the passed fd */
		uint8_t *m = mmap(NULL, r.length, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);

		if (m == MAP_FAILED)
			_exit(2);
		for (size_t i = 0; i < len; i++)
			m[r.offset + i] = (uint8_t)(255 - i % 251);
		_exit(0);
	}
	ck_assert_int_ge(child, 0);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer child: status %#x",
		      status);
	for (size_t i = 0; i < len; i++)
		ck_assert_uint_eq(buf[i], (uint8_t)(255 - i % 251));
	/* a forked child gets none of the moved pages (MADV_DONTFORK), so it cannot share them
	 * with us: touching one is a fault in the child, not a write into our heap */
	child = fork();
	if (child == 0) {
		signal(SIGSEGV, SIG_DFL); /* not a sanitizer's report: the plain fault */
		*(volatile uint8_t *)buf = 1;
		_exit(0);
	}
	ck_assert_int_ge(child, 0);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	ck_assert_uint_eq(buf[0], (uint8_t)255);
	/* the heap around it still works */
	free(raw);
	raw = malloc(100000);
	ck_assert_ptr_nonnull(raw);
	memset(raw, 1, 100000);
	free(raw);
	close(r.fd);
}
END_TEST

START_TEST(mrc_share_range__bad_ranges)
{
	struct mrc_shared_range r;

	ck_assert_int_eq(mrc_share_range(NULL, 10, &r), -EINVAL);
	ck_assert_int_eq(mrc_share_range(&r, 0, &r), -EINVAL);
	ck_assert_int_eq(mrc_share_range((void *)(uintptr_t)-16, 64, &r), -EINVAL);
}
END_TEST

Suite *share_suite(void)
{
	Suite *s = suite_create("share");
	TCase *tc = tcase_create("share");

	tcase_add_test(tc, mrc_share_range__heap_buffer_written_by_another_process);
	tcase_add_test(tc, mrc_share_range__bad_ranges);
	suite_add_tcase(s, tc);
	return s;
}
