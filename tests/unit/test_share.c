/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* lib/shm/share.c: heap memory made writable by another process, pointers unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
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

/*
 * Other threads keep writing to the pages while they move (a collectives library registers
 * a buffer on a heap page where its progress thread counts completions): not one write may
 * be lost. Each writer bumps its own counters on every page and keeps a private tally; the
 * main thread moves each page again and again meanwhile. Before the move was write-protected,
 * a few hundred moves lost increments every run, which hung Gloo's waits and corrupted its
 * heap.
 */
enum { RACE_PAGES = 4, RACE_WRITERS = 2, RACE_MOVES = 400 };

struct race_writer {
	volatile uint64_t *slot[RACE_PAGES]; /* one counter per page, this writer's own */
	uint64_t tally[RACE_PAGES];
	volatile int *stop;
	pthread_t thread;
};

static void *race_write(void *arg)
{
	struct race_writer *w = arg;

	while (!__atomic_load_n(w->stop, __ATOMIC_RELAXED))
		for (unsigned p = 0; p < RACE_PAGES; p++) {
			*w->slot[p] = *w->slot[p] + 1; /* a plain read-modify-write, as code does */
			w->tally[p]++;
		}
	return NULL;
}

/*
 * The race itself: writers on every page, RACE_MOVES moves meanwhile. Returns the number of
 * increments lost (0 expected) and fails the test on anything else going wrong; *why is the
 * reason the last move went unprotected (0: it was protected).
 */
static uint64_t race(int *why)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *mem = mmap(NULL, RACE_PAGES * page, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct race_writer w[RACE_WRITERS];
	volatile int stop = 0;
	uint64_t lost = 0;

	ck_assert_ptr_ne(mem, MAP_FAILED);
	for (unsigned i = 0; i < RACE_WRITERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].stop = &stop;
		for (unsigned p = 0; p < RACE_PAGES; p++)
			w[i].slot[p] = (volatile uint64_t *)(mem + p * page + 64 * (i + 1));
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, race_write, &w[i]), 0);
	}
	for (unsigned m = 0; m < RACE_MOVES; m++) {
		struct mrc_shared_range r;
		/* one page, or a small object straddling two, as registrations come */
		unsigned p = m % RACE_PAGES;
		size_t len = p + 1 < RACE_PAGES && m % 3 == 0 ? 200 : 8;
		uint8_t *obj = mem + p * page + (len == 200 ? page - 100 : 8);

		ck_assert_int_eq(mrc_share_range(obj, len, &r), 0);
		*why = r.unprotected;
		close(r.fd);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < RACE_WRITERS; i++) {
		ck_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
		for (unsigned p = 0; p < RACE_PAGES; p++)
			lost += w[i].tally[p] - *w[i].slot[p];
	}
	munmap(mem, RACE_PAGES * page);
	return lost;
}

/*
 * Whether this process may have a userfaultfd at all (a container's seccomp profile may
 * refuse it): where it may not, moves are unprotected by design, and the tests that need the
 * protection say so and skip.
 */
static bool uffd_refused(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0 && errno == EPERM)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		printf("share: skipped: userfaultfd refused here (%s)\n", strerror(errno));
		return true;
	}
	close(fd);
	return false;
}

START_TEST(mrc_share_range__concurrent_writers_lose_nothing)
{
	int why = 0;
	uint64_t lost;

	if (uffd_refused())
		return;
	lost = race(&why);

	ck_assert_msg(!why, "moved without write protection: %s", strerror(why));
	ck_assert_msg(lost == 0, "%llu increments lost in %u moves", (unsigned long long)lost,
		      RACE_MOVES);
}
END_TEST

/*
 * The same for a process without privilege, which the kernel gives only a user-mode
 * userfaultfd: its writers are held off just the same. (Run as root, the test drops to
 * nobody in a child of its own.)
 */
START_TEST(mrc_share_range__concurrent_writers_unprivileged)
{
	int status;
	pid_t child;

	if (uffd_refused())
		return;
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int why = 0;
		uint64_t lost;

		/* already unprivileged: then the drop is a no-op and the test is the one above */
		if (geteuid() == 0 &&
		    (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(3);
		lost = race(&why);
		_exit(why ? 2 : lost ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status), "child: status %#x", status);
	ck_assert_msg(WEXITSTATUS(status) != 3, "cannot drop privileges");
	ck_assert_msg(WEXITSTATUS(status) != 2, "unprivileged: moved without write protection");
	ck_assert_msg(WEXITSTATUS(status) == 0, "unprivileged: increments lost");
}
END_TEST

/*
 * A fork during a move gives the child a copy of the userfaultfd that holds the protection:
 * the window must still end for the writers that wait on it (it once ended only when the
 * child exited, as closing a duplicated descriptor wakes nobody). Children forked throughout
 * the moves wait on a pipe until the end; the writer must keep going meanwhile.
 */
struct forker {
	volatile int *stop;
	int pipe_rd, pipe_wr;
	pid_t kids[64];
	unsigned n_kids;
};

static void *fork_often(void *arg)
{
	struct forker *f = arg;

	while (!__atomic_load_n(f->stop, __ATOMIC_RELAXED) && f->n_kids < 64) {
		pid_t pid = fork();

		if (pid == 0) {
			char c;

			close(f->pipe_wr);
			(void)!read(f->pipe_rd, &c, 1); /* until the parent closes its end */
			_exit(0);
		}
		if (pid > 0)
			f->kids[f->n_kids++] = pid;
		usleep(200);
	}
	return NULL;
}

START_TEST(mrc_share_range__fork_during_move_stalls_nobody)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	volatile int stop_writer = 0, stop_forks = 0;
	struct race_writer w = { .stop = &stop_writer };
	struct forker f = { .stop = &stop_forks };
	pthread_t forker;
	int fds[2], why = 0;
	uint64_t seen;

	if (uffd_refused())
		return;
	ck_assert_ptr_ne(mem, MAP_FAILED);
	ck_assert_int_eq(pipe(fds), 0);
	f.pipe_rd = fds[0];
	f.pipe_wr = fds[1];
	for (unsigned p = 0; p < RACE_PAGES; p++)
		w.slot[p] = (volatile uint64_t *)(mem + (p % 2) * page + 64 * (p + 1));
	ck_assert_int_eq(pthread_create(&w.thread, NULL, race_write, &w), 0);
	ck_assert_int_eq(pthread_create(&forker, NULL, fork_often, &f), 0);
	for (unsigned m = 0; m < 300; m++) {
		struct mrc_shared_range r;

		ck_assert_int_eq(mrc_share_range(mem + (m % 2) * page + 8, 8, &r), 0);
		why = r.unprotected;
		close(r.fd);
	}
	__atomic_store_n(&stop_forks, 1, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_join(forker, NULL), 0);
	ck_assert_msg(!why, "moved without write protection: %s", strerror(why));
	ck_assert_uint_gt(f.n_kids, 0);
	/* the children are all still there: the writer must still be moving (5 s bound) */
	seen = *w.slot[0];
	for (unsigned i = 0; i < 500 && *w.slot[0] == seen; i++)
		usleep(10000);
	ck_assert_msg(*w.slot[0] != seen, "a writer waits while %u forked children live",
		      f.n_kids);
	close(fds[1]);
	for (unsigned i = 0; i < f.n_kids; i++)
		waitpid(f.kids[i], NULL, 0);
	close(fds[0]);
	__atomic_store_n(&stop_writer, 1, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_join(w.thread, NULL), 0);
	munmap(mem, 2 * page);
}
END_TEST

/*
 * A buffer on the registering thread's own stack: its pages move too, while the thread is
 * inside the call that moves them, and the call returns with the stack intact.
 */
static int __attribute__((noinline)) share_own_stack(uint64_t *sum)
{
	volatile uint8_t buf[6000];
	struct mrc_shared_range r;
	int err;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	err = mrc_share_range((void *)buf, sizeof(buf), &r);
	if (err)
		return err;
	*sum = 0;
	for (size_t i = 0; i < sizeof(buf); i++)
		*sum += buf[i];
	close(r.fd);
	return 0;
}

START_TEST(mrc_share_range__own_stack)
{
	uint64_t sum = 0, want = 0;

	for (size_t i = 0; i < 6000; i++)
		want += (uint8_t)i;
	ck_assert_int_eq(share_own_stack(&sum), 0);
	ck_assert_uint_eq(sum, want);
}
END_TEST

/*
 * The same with signals arriving all the time, as an unprivileged process, whose userfaultfd
 * the kernel's own writes do not wait on: a signal frame written onto the protected stack
 * pages would fault. The registering thread keeps its signals blocked until the window is
 * over (it once unblocked them while it waited, and the process died of SIGSEGV).
 */
static void on_alarm(int sig)
{
	(void)sig;
}

/* Grows the stack's mapping some 64 KiB below the caller. */
static int __attribute__((noinline)) touch_stack(unsigned depth)
{
	volatile char pad[4096];

	pad[0] = (char)depth;
	return depth ? touch_stack(depth - 1) + pad[0] : pad[0];
}

/*
 * Registers the stack just below this frame: where the frames of the call itself go, and a
 * signal's frame if one arrives while it waits.
 */
static int __attribute__((noinline)) share_below_here(void)
{
	volatile char mark = 0;
	uintptr_t here = (uintptr_t)&mark;
	struct mrc_shared_range r;
	int err = mrc_share_range((void *)(here - 40960), 32768, &r);

	if (!err)
		close(r.fd);
	return err;
}

START_TEST(mrc_share_range__own_stack_under_signals_unprivileged)
{
	int status;
	pid_t child;

	if (uffd_refused())
		return;
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct itimerval every = { { 0, 20 }, { 0, 20 } };
		uint64_t sum;

		if (geteuid() == 0 &&
		    (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(3);
		(void)touch_stack(16);
		signal(SIGALRM, on_alarm);
		setitimer(ITIMER_REAL, &every, NULL);
		for (unsigned i = 0; i < 1000; i++)
			if (share_own_stack(&sum) || share_below_here())
				_exit(2);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status), "the child died of signal %d",
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
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

	tcase_set_timeout(tc, 30); /* the fork test waits up to 5 s for a stalled writer */
	tcase_add_test(tc, mrc_share_range__heap_buffer_written_by_another_process);
	tcase_add_test(tc, mrc_share_range__concurrent_writers_lose_nothing);
	tcase_add_test(tc, mrc_share_range__concurrent_writers_unprivileged);
	tcase_add_test(tc, mrc_share_range__fork_during_move_stalls_nobody);
	tcase_add_test(tc, mrc_share_range__own_stack);
	tcase_add_test(tc, mrc_share_range__own_stack_under_signals_unprivileged);
	tcase_add_test(tc, mrc_share_range__bad_ranges);
	suite_add_tcase(s, tc);
	return s;
}
