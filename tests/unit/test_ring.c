/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* lib/shm/ring.c: the rings between library and daemon, and the sealed memfds under them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/ring.h"
#include "suites.h"

static uint8_t mem[MRC_RING_BYTES(16, sizeof(struct mrc_sq_entry))];

static struct mrc_sq_entry sq(uint64_t id)
{
	struct mrc_sq_entry e;

	memset(&e, 0, sizeof(e));
	e.wr_id = id;
	e.num_sge = 1;
	e.sge[0].length = (uint32_t)id;
	return e;
}

/* In order, every entry once, around the ring many times, across the 2^32 wrap. */
START_TEST(mrc_ring__fifo_across_index_wrap)
{
	struct mrc_ring prod, cons;
	struct mrc_sq_entry e;

	ck_assert_int_eq(mrc_ring_format(mem, sizeof(mem), MRC_RING_SQ, 16, 7), 0);
	/* start just before the indices wrap */
	((struct mrc_ring_index *)(mem + MRC_RING_PRODUCER_OFF))->value = 0xfffffff0u;
	((struct mrc_ring_index *)(mem + MRC_RING_CONSUMER_OFF))->value = 0xfffffff0u;
	ck_assert_int_eq(mrc_ring_attach(&prod, mem, sizeof(mem), MRC_RING_SQ, 1), 0);
	ck_assert_int_eq(mrc_ring_attach(&cons, mem, sizeof(mem), MRC_RING_SQ, 0), 0);
	for (uint64_t id = 0, next = 0; id < 1000;) {
		int n = (int)(id % 7) + 1;

		for (int k = 0; k < n; k++, id++) {
			struct mrc_sq_entry in = sq(id);

			if (mrc_ring_produce(&prod, &in) == -EAGAIN)
				break;
		}
		while (mrc_ring_consume(&cons, &e) == 1) {
			ck_assert_uint_eq(e.wr_id, next);
			ck_assert_uint_eq(e.sge[0].length, (uint32_t)next);
			next++;
		}
	}
	ck_assert_int_eq(mrc_ring_consume(&cons, &e), 0);
}
END_TEST

START_TEST(mrc_ring_produce__full_is_eagain)
{
	struct mrc_ring prod, cons;
	struct mrc_sq_entry e = sq(1);

	ck_assert_int_eq(mrc_ring_format(mem, sizeof(mem), MRC_RING_SQ, 16, 1), 0);
	ck_assert_int_eq(mrc_ring_attach(&prod, mem, sizeof(mem), MRC_RING_SQ, 1), 0);
	ck_assert_int_eq(mrc_ring_attach(&cons, mem, sizeof(mem), MRC_RING_SQ, 0), 0);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(mrc_ring_produce(&prod, &e), 0);
	ck_assert_int_eq(mrc_ring_produce(&prod, &e), -EAGAIN);
	ck_assert_int_eq(mrc_ring_consume(&cons, &e), 1);
	ck_assert_int_eq(mrc_ring_produce(&prod, &e), 0);
}
END_TEST

/* A peer that scribbles on the shared indices is detected, never followed out of the ring. */
START_TEST(mrc_ring__corrupt_indices_detected)
{
	struct mrc_ring prod, cons;
	struct mrc_sq_entry e = sq(1);
	struct mrc_ring_index *p = (struct mrc_ring_index *)(mem + MRC_RING_PRODUCER_OFF);
	struct mrc_ring_index *c = (struct mrc_ring_index *)(mem + MRC_RING_CONSUMER_OFF);

	ck_assert_int_eq(mrc_ring_format(mem, sizeof(mem), MRC_RING_SQ, 16, 1), 0);
	ck_assert_int_eq(mrc_ring_attach(&prod, mem, sizeof(mem), MRC_RING_SQ, 1), 0);
	ck_assert_int_eq(mrc_ring_attach(&cons, mem, sizeof(mem), MRC_RING_SQ, 0), 0);
	p->value = 17; /* claims 17 entries in a ring of 16 */
	ck_assert_int_eq(mrc_ring_consume(&cons, &e), -EPROTO);
	p->value = 0xffffffffu; /* "behind" the consumer */
	ck_assert_int_eq(mrc_ring_consume(&cons, &e), -EPROTO);
	c->value = 5; /* consumer claims to be ahead of everything produced */
	ck_assert_int_eq(mrc_ring_produce(&prod, &e), -EPROTO);
	/* the sides' own indices were not taken from the scribbles */
	ck_assert_uint_eq(prod.mine, 0);
	ck_assert_uint_eq(cons.mine, 0);
}
END_TEST

/* A region that is not a ring of the expected kind, version and size is refused. */
START_TEST(mrc_ring_attach__bad_headers_refused)
{
	struct mrc_ring r;
	struct mrc_ring_hdr *h = (struct mrc_ring_hdr *)mem;

	ck_assert_int_eq(mrc_ring_format(mem, sizeof(mem), MRC_RING_SQ, 16, 1), 0);
	ck_assert_int_eq(mrc_ring_attach(&r, mem, sizeof(mem), MRC_RING_CQ, 0), -EPROTO);
	ck_assert_int_eq(mrc_ring_attach(&r, mem, sizeof(mem) - 1, MRC_RING_SQ, 0), -EPROTO);
	ck_assert_int_eq(mrc_ring_attach(&r, mem, 100, MRC_RING_SQ, 0), -EPROTO);
	h->version = 2;
	ck_assert_int_eq(mrc_ring_attach(&r, mem, sizeof(mem), MRC_RING_SQ, 0), -EPROTO);
	h->version = MRC_RING_VERSION;
	h->entries = 12; /* not a power of two */
	ck_assert_int_eq(mrc_ring_attach(&r, mem, sizeof(mem), MRC_RING_SQ, 0), -EPROTO);
	h->entries = 1u << 30; /* larger than the region */
	ck_assert_int_eq(mrc_ring_attach(&r, mem, sizeof(mem), MRC_RING_SQ, 0), -EPROTO);
	h->entries = 16;
	h->magic ^= 1;
	ck_assert_int_eq(mrc_ring_attach(&r, mem, sizeof(mem), MRC_RING_SQ, 0), -EPROTO);
	ck_assert_int_eq(mrc_ring_format(mem, sizeof(mem), 9, 16, 1), -EINVAL);
	ck_assert_int_eq(mrc_ring_format(mem, sizeof(mem), MRC_RING_SQ, 32, 1), -EINVAL);
}
END_TEST

/*
 * Two processes over one sealed memfd, as library and daemon: 100000 entries cross in order,
 * and neither side can shrink the region under the other.
 */
START_TEST(mrc_ring__two_processes_over_sealed_memfd)
{
	size_t size = MRC_RING_BYTES(64, sizeof(struct mrc_cq_entry));
	int fd = mrc_shm_create("metaroce-test-cq", size);
	uint8_t *m;
	struct mrc_ring cons;
	struct mrc_cq_entry e;
	pid_t child;
	int status;
	uint64_t next = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mrc_shm_check(fd, size), 0);
	ck_assert_int_eq(mrc_shm_check(fd, size + 1), -EINVAL);
	ck_assert_int_eq(ftruncate(fd, 4096), -1); /* sealed against shrinking */
	ck_assert_int_eq(errno, EPERM);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(mrc_ring_format(m, size, MRC_RING_CQ, 64, 0), 0);
	ck_assert_int_eq(mrc_ring_attach(&cons, m, size, MRC_RING_CQ, 0), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct mrc_ring prod;
		uint8_t *cm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (cm == MAP_FAILED || mrc_ring_attach(&prod, cm, size, MRC_RING_CQ, 1))
			_exit(2);
		for (uint64_t id = 0; id < 100000;) {
			struct mrc_cq_entry out = { .wr_id = id, .byte_len = (uint32_t)(id * 3) };
			int rc = mrc_ring_produce(&prod, &out);

			if (rc == 0)
				id++;
			else if (rc != -EAGAIN)
				_exit(3);
		}
		_exit(0);
	}
	while (next < 100000) {
		int rc = mrc_ring_consume(&cons, &e);

		ck_assert_int_ge(rc, 0);
		if (rc == 1) {
			ck_assert_uint_eq(e.wr_id, next);
			ck_assert_uint_eq(e.byte_len, (uint32_t)(next * 3));
			next++;
		}
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	munmap(m, size);
	close(fd);
}
END_TEST

/* A memfd handed over unsealed is refused: its sender could shrink it under us. */
START_TEST(mrc_shm_check__unsealed_refused)
{
	int fd = memfd_create("metaroce-unsealed", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 8192), 0);
	ck_assert_int_eq(mrc_shm_check(fd, 4096), -EPERM);
	close(fd);
	ck_assert_int_eq(mrc_shm_check(-1, 1), -EBADF);
}
END_TEST

Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_add_test(tc, mrc_ring__fifo_across_index_wrap);
	tcase_add_test(tc, mrc_ring_produce__full_is_eagain);
	tcase_add_test(tc, mrc_ring__corrupt_indices_detected);
	tcase_add_test(tc, mrc_ring_attach__bad_headers_refused);
	tcase_add_test(tc, mrc_ring__two_processes_over_sealed_memfd);
	tcase_add_test(tc, mrc_shm_check__unsealed_refused);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
