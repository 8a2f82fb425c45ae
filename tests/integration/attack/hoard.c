/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A local user who takes all the daemon will give it, speaking the control protocol
 * directly (a user needs no library to do so): run as an unprivileged user, it reads its
 * own limits (MRC_CTL_USERS), then opens connections, CQs, QPs and regions until each is
 * refused, regions of sparse 1 GiB memfds so that the daemon's address space is what it
 * goes for, and a 1 TiB one besides. Each resource must be refused exactly at its limit,
 * with EUSERS for connections and EDQUOT for the rest, whatever spread over how many
 * connections. It then holds everything until its standard input closes (the test runs a
 * transfer of another user meanwhile), lets go, and checks that a fresh connection gets
 * everything back.
 *
 *   hoard SOCKET       prints each case; exit 0 when the daemon held every limit
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <metaroce/ctl.h>

#include "verbs/ctl_client.h"

#define GIB (1ull << 30)
#define MAX_HELD 4096

static const char *sock_path;
static int failures;
static int held[MAX_HELD];
static unsigned n_held;

#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		bool ok_ = (cond);                                                            \
		printf(ok_ ? "ok    " : "FAIL  ");                                            \
		printf(__VA_ARGS__);                                                          \
		putchar('\n');                                                                \
		failures += !ok_;                                                             \
	} while (0)

/* A control connection that said HELLO, or the daemon's refusal (-errno). */
static int hello(void)
{
	struct mrc_ctl_hello h = { MRC_CTL_CLIENT_ABI, 0 };
	struct mrc_ctl_status st;
	int fd = ctl_connect(sock_path), doorbell, page = -1, err;

	if (fd < 0) {
		fprintf(stderr, "hoard: connect: %s\n", strerror(-fd));
		exit(2);
	}
	doorbell = eventfd(0, EFD_CLOEXEC);
	err = ctl_request(fd, MRC_CTL_HELLO, &h, sizeof(h), &doorbell, 1, &st, sizeof(st), &page,
			  1);
	close(doorbell);
	if (page >= 0)
		close(page);
	if (err) {
		close(fd);
		return err;
	}
	if (n_held == MAX_HELD)
		exit(2);
	held[n_held++] = fd;
	return fd;
}

static struct mrc_ctl_user own_limits(int fd)
{
	struct mrc_ctl_user u[2];
	int err = ctl_request(fd, MRC_CTL_USERS, NULL, 0, NULL, 0, u, sizeof(u), NULL, 0);

	if (err || !u[0].limited) {
		printf("FAIL  the daemon's users: %s, limited %u (run this as an unprivileged "
		       "user)\n", strerror(-err), u[0].limited);
		exit(1);
	}
	return u[0];
}

/* Asks for one more of a resource until refused, over the held connections in turn. */
static unsigned until_refused(int (*ask)(int fd), unsigned most, int *err)
{
	unsigned n = 0;

	while (n < most && !(*err = ask(held[n % n_held])))
		n++;
	return n;
}

static uint32_t a_cq;

static int ask_cq(int fd)
{
	struct mrc_ctl_cq cq;
	int ring = -1, err = ctl_request(fd, MRC_CTL_CREATE_CQ, &(struct mrc_ctl_create_cq){ 8, 0 },
					 sizeof(struct mrc_ctl_create_cq), NULL, 0, &cq,
					 sizeof(cq), &ring, 1);

	if (ring >= 0)
		close(ring);
	if (!err && fd == held[0])
		a_cq = cq.handle;
	return err;
}

/* on the connection whose CQ it uses (a handle is its connection's) */
static int ask_qp(int fd)
{
	struct mrc_ctl_create_qp req = { a_cq, a_cq, 16, 16, 0, 1, 0, MRC_CTL_QPT_RC };
	struct mrc_ctl_qp_created rep;
	int rings[2] = { -1, -1 };
	int err = ctl_request(held[0], MRC_CTL_CREATE_QP, &req, sizeof(req), NULL, 0, &rep,
			      sizeof(rep), rings, 2);

	(void)fd;
	for (int i = 0; i < 2; i++)
		if (rings[i] >= 0)
			close(rings[i]);
	return err;
}

/* A region over a sparse sealed memfd of `bytes`: nothing of it is ever touched. */
static int region(int fd, uint64_t bytes)
{
	struct {
		struct mrc_ctl_reg_mr r;
		struct mrc_ctl_mr_segment s;
	} req = { { 0x10000, bytes, 0, MRC_CTL_ACCESS_ALL, 1, 1, 0 }, { 0, bytes } };
	struct mrc_ctl_mr keys;
	int mem = memfd_create("hoard", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (mem < 0 || ftruncate(mem, (off_t)bytes) ||
	    fcntl(mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		exit(2);
	err = ctl_request(fd, MRC_CTL_REG_MR, &req, sizeof(req), &mem, 1, &keys, sizeof(keys),
			  NULL, 0);
	close(mem);
	return err;
}

static int ask_gib(int fd)
{
	return region(fd, GIB);
}

static int ask_page(int fd)
{
	return region(fd, 4096);
}

int main(int argc, char **argv)
{
	struct mrc_ctl_user lim, after;
	unsigned n;
	int err = 0, fd;
	char c;

	if (argc != 2) {
		fprintf(stderr, "usage: hoard SOCKET\n");
		return 2;
	}
	sock_path = argv[1];
	if ((fd = hello()) < 0) {
		printf("FAIL  hello: %s\n", strerror(-fd));
		return 1;
	}
	lim = own_limits(fd);
	/* connections: the first holds one already */
	n = 1;
	while (n <= lim.limit[MRC_CTL_USER_CONNECTIONS] && (err = hello()) >= 0)
		n++;
	CHECK(n == lim.limit[MRC_CTL_USER_CONNECTIONS] && err == -EUSERS,
	      "connections: %u opened, the next refused with %s (limit %llu, EUSERS expected)", n,
	      strerror(-err), (unsigned long long)lim.limit[MRC_CTL_USER_CONNECTIONS]);
	n = until_refused(ask_cq, MRC_CTL_CLIENT_MAX_CQS * n_held, &err);
	CHECK(n == lim.limit[MRC_CTL_USER_CQS] && err == -EDQUOT,
	      "CQs: %u over %u connections, the next refused with %s (limit %llu)", n, n_held,
	      strerror(-err), (unsigned long long)lim.limit[MRC_CTL_USER_CQS]);
	n = until_refused(ask_qp, MRC_CTL_CLIENT_MAX_QPS * n_held, &err);
	CHECK(n == lim.limit[MRC_CTL_USER_QPS] && err == -EDQUOT,
	      "QPs: %u, the next refused with %s (limit %llu)", n, strerror(-err),
	      (unsigned long long)lim.limit[MRC_CTL_USER_QPS]);
	/* the daemon's address space: sparse gigabytes, then one terabyte */
	n = until_refused(ask_gib, MRC_CTL_CLIENT_MAX_MRS * n_held, &err);
	CHECK(n == lim.limit[MRC_CTL_USER_REGISTERED] / GIB && err == -EDQUOT,
	      "sparse 1 GiB regions: %u, the next refused with %s (limit %llu bytes)", n,
	      strerror(-err), (unsigned long long)lim.limit[MRC_CTL_USER_REGISTERED]);
	err = region(held[0], 1024 * GIB);
	CHECK(err == -EDQUOT, "a sparse 1 TiB region: refused with %s", strerror(-err));
	/* the regions' count: pages until it, too, is reached */
	after = own_limits(held[0]);
	n = until_refused(ask_page, MRC_CTL_CLIENT_MAX_MRS * n_held, &err);
	CHECK(after.used[MRC_CTL_USER_MRS] + n == lim.limit[MRC_CTL_USER_MRS] && err == -EDQUOT,
	      "regions: %llu + %u pages, the next refused with %s (limit %llu)",
	      (unsigned long long)after.used[MRC_CTL_USER_MRS], n, strerror(-err),
	      (unsigned long long)lim.limit[MRC_CTL_USER_MRS]);
	after = own_limits(held[0]);
	CHECK(after.used[MRC_CTL_USER_REGISTERED] <= lim.limit[MRC_CTL_USER_REGISTERED],
	      "the daemon maps %llu bytes for this user, within its limit",
	      (unsigned long long)after.used[MRC_CTL_USER_REGISTERED]);
	printf("holding\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	/* let go: everything comes back with the connections */
	for (unsigned i = 0; i < n_held; i++)
		close(held[i]);
	n_held = 0;
	err = -EUSERS;
	for (int tries = 0; tries < 200 && err == -EUSERS; tries++) {
		err = hello();
		if (err == -EUSERS)
			usleep(10000); /* the daemon has yet to see the closes */
	}
	if (err >= 0) {
		after = own_limits(held[0]);
		err = ask_cq(held[0]);
	}
	CHECK(err == 0 && after.used[MRC_CTL_USER_CONNECTIONS] == 1 &&
	      after.used[MRC_CTL_USER_REGISTERED] == 0,
	      "after letting go: a fresh connection (%llu held) and a CQ again (%s)",
	      (unsigned long long)after.used[MRC_CTL_USER_CONNECTIONS], strerror(-err));
	printf("hoard: %s\n", failures ? "FAILED" : "every limit held");
	return failures ? 1 : 0;
}
