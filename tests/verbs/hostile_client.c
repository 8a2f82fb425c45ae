/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A client that breaks the rules on purpose, speaking the control protocol and the rings
 * directly (lib/include/metaroce/ctl.h, shm.h) as a buggy or hostile library would. Each
 * case states what the daemon must do: refuse the request with a named error, or complete
 * the work request with an error status and move only that QP to the error state. A valid
 * WRITE at the end proves the checks did not simply refuse everything.
 *
 *   hostile_client SOCKET     exit 0 when the daemon behaved in every case
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/ctl.h>
#include <metaroce/shm.h>

#include "ctl_client.h"
#include "shm/ring.h"

static const char *sock_path;
static int failures;
static struct mrc_ctl_status status;

#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		if (cond) {                                                                   \
			printf("ok    ");                                                     \
		} else {                                                                      \
			printf("FAIL  ");                                                     \
			failures++;                                                           \
		}                                                                             \
		printf(__VA_ARGS__);                                                          \
		putchar('\n');                                                                \
	} while (0)

static int connect_daemon(void)
{
	int fd = ctl_connect(sock_path);

	if (fd < 0) {
		fprintf(stderr, "hostile_client: connect: %s\n", strerror(-fd));
		exit(2);
	}
	return fd;
}

static int memfd(size_t size, bool sealed)
{
	int fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) ||
	    (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)))
		exit(2);
	return fd;
}

static int reg_mr(int ctl, int fd, uint64_t seg_len, uint64_t iova, uint64_t offset,
		  uint64_t length, struct mrc_ctl_mr *keys)
{
	struct {
		struct mrc_ctl_reg_mr r;
		struct mrc_ctl_mr_segment s;
	} req = { { iova, length, offset, MRC_CTL_ACCESS_ALL, 1, 1, 0 }, { 0, seg_len } };

	return ctl_request(ctl, MRC_CTL_REG_MR, &req, sizeof(req), &fd, 1, keys, sizeof(*keys), NULL,
		       0);
}

struct qp {
	uint32_t qpn;
	uint32_t doorbell_bit;
	struct mrc_ring sq, cq_unused;
	void *sq_mem;
};

static struct mrc_ring cq;
static uint32_t cq_handle;

static void connect_qp(int ctl, uint32_t qpn, uint32_t dest)
{
	struct mrc_ctl_connect_qp c = { .qp_num = qpn, .dest_qp_num = dest,
					.access = MRC_CTL_ACCESS_REMOTE_WRITE | MRC_CTL_ACCESS_REMOTE_READ,
					.max_dest_rd_atomic = 1 };
	int err;

	struct mrc_ctl_ready_qp r = { .qp_num = qpn, .retry_cnt = 7, .rnr_retry = 7,
				      .max_rd_atomic = 1 };

	memcpy(c.dgid, status.planes[0].addr, 16);
	err = ctl_request(ctl, MRC_CTL_CONNECT_QP, &c, sizeof(c), NULL, 0, NULL, 0, NULL, 0);
	if (!err)
		err = ctl_request(ctl, MRC_CTL_READY_QP, &r, sizeof(r), NULL, 0, NULL, 0, NULL, 0);
	if (err) {
		printf("FAIL  connect QP %u to %u: %s\n", qpn, dest, strerror(-err));
		exit(1);
	}
}

/* A QP of the type; an RC one connected to itself through the daemon's own plane address,
 * unless told otherwise, a UD one at RTS. */
static struct qp make_qp_of(int ctl, bool connect_self, uint32_t type)
{
	struct mrc_ctl_create_qp req = { cq_handle, cq_handle, 16, 16, 0, 1, 0, type };
	struct mrc_ctl_qp_created rep;
	int fds[2] = { -1, -1 };
	struct qp qp = { 0 };
	size_t len;
	int err = ctl_request(ctl, MRC_CTL_CREATE_QP, &req, sizeof(req), NULL, 0, &rep, sizeof(rep),
			  fds, 2);

	if (err) {
		printf("FAIL  create QP: %s\n", strerror(-err));
		exit(1);
	}
	len = MRC_RING_BYTES((size_t)rep.sq_entries, sizeof(struct mrc_sq_entry));
	qp.sq_mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (qp.sq_mem == MAP_FAILED || mrc_ring_attach(&qp.sq, qp.sq_mem, len, MRC_RING_SQ, 1))
		exit(2);
	close(fds[0]);
	close(fds[1]);
	qp.qpn = rep.qp_num;
	qp.doorbell_bit = rep.doorbell_bit % MRC_DOORBELL_BITS;
	if (type == MRC_CTL_QPT_UD) {
		struct mrc_ctl_ud_qp st = { .qp_num = qp.qpn, .qkey = 1, .state = MRC_CTL_QP_RTS };

		if (ctl_request(ctl, MRC_CTL_UD_QP, &st, sizeof(st), NULL, 0, NULL, 0, NULL, 0))
			exit(2);
	} else if (connect_self) {
		connect_qp(ctl, qp.qpn, qp.qpn);
	}
	return qp;
}

static struct qp make_qp(int ctl, bool connect_self)
{
	return make_qp_of(ctl, connect_self, MRC_CTL_QPT_RC);
}

static struct mrc_doorbell_page *doorbells;

/* Rings whether or not the daemon asked: a client may always wake it for its own QPs. */
static void ring(uint32_t bit, int doorbell)
{
	uint64_t one = 1;

	__atomic_fetch_or(&doorbells->rung[bit / 64], 1ull << (bit % 64), __ATOMIC_RELEASE);
	if (write(doorbell, &one, sizeof(one)) != sizeof(one))
		exit(2);
}

static void post(struct qp *qp, int doorbell, const struct mrc_sq_entry *e)
{
	if (mrc_ring_produce(&qp->sq, e))
		exit(2);
	ring(qp->doorbell_bit, doorbell);
}

/* The next completion within 5 s; false when none came. */
static bool next_completion(struct mrc_cq_entry *e)
{
	for (int i = 0; i < 5000; i++) {
		if (mrc_ring_consume(&cq, e) == 1)
			return true;
		usleep(1000);
	}
	return false;
}

static bool qp_in_error(struct qp *qp)
{
	for (int i = 0; i < 1000; i++) {
		if (__atomic_load_n(&qp->sq.consumer->aux, __ATOMIC_ACQUIRE) & MRC_QP_AUX_ERROR)
			return true;
		usleep(1000);
	}
	return false;
}

int main(int argc, char **argv)
{
	struct mrc_ctl_hello hello = { MRC_CTL_CLIENT_ABI, 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct mrc_ctl_mr keys;
	struct mrc_ctl_cq cqr;
	struct mrc_cq_entry wc;
	int ctl, doorbell, fd, rfd = -1, page_fd = -1, err;
	uint8_t *mem;

	if (argc != 2) {
		fprintf(stderr, "usage: hostile_client SOCKET\n");
		return 2;
	}
	sock_path = argv[1];
	ctl = connect_daemon();
	doorbell = eventfd(0, EFD_CLOEXEC);
	err = ctl_request(ctl, MRC_CTL_HELLO, &hello, sizeof(hello), &doorbell, 1, &status,
		      sizeof(status), &page_fd, 1);
	if (err || page_fd < 0) {
		printf("FAIL  hello: %s\n", err ? strerror(-err) : "no doorbell page");
		return 1;
	}
	doorbells = mmap(NULL, sizeof(*doorbells), PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
	if (doorbells == MAP_FAILED)
		return 2;
	close(page_fd);
	CHECK(doorbells->magic == MRC_DOORBELL_MAGIC && doorbells->bits == MRC_DOORBELL_BITS,
	      "HELLO hands over a doorbell page");

	{
		/* the doorbell must be an eventfd: a pipe at EOF would wake the daemon forever */
		int other = connect_daemon(), p[2];

		if (pipe(p))
			return 2;
		close(p[1]);
		err = ctl_request(other, MRC_CTL_HELLO, &hello, sizeof(hello), &p[0], 1, NULL, 0, NULL,
			      0);
		CHECK(err == -EBADF, "a pipe as the doorbell: refused with EBADF (%d)", err);
		close(p[0]);
		close(other);
	}

	err = ctl_request(ctl, MRC_CTL_CREATE_QP, &(struct mrc_ctl_create_qp){ 12345, 12345, 1, 1, 0, 1, 0, 0 },
		      sizeof(struct mrc_ctl_create_qp), NULL, 0, NULL, 0, NULL, 0);
	CHECK(err == -EINVAL, "QP on CQs that do not exist: refused with EINVAL (%d)", err);

	fd = memfd(page, false);
	err = reg_mr(ctl, fd, page, 0x1000, 0, page, &keys);
	CHECK(err == -EPERM, "memory region in an unsealed memfd: refused with EPERM (%d)", err);
	close(fd);

	fd = memfd(page, true);
	err = reg_mr(ctl, fd, 4 * page, 0x1000, 0, 4 * page, &keys);
	CHECK(err == -EINVAL, "memfd shorter than the segment it claims: refused with EINVAL (%d)",
	      err);
	err = reg_mr(ctl, fd, page, 0x1000, page - 8, 64, &keys);
	CHECK(err == -EINVAL, "region running past its segment: refused with EINVAL (%d)", err);
	err = reg_mr(ctl, fd, page, UINT64_MAX - 16, 0, 64, &keys);
	CHECK(err == -EINVAL, "region whose address wraps around: refused with EINVAL (%d)", err);
	{
		struct {
			struct mrc_ctl_reg_mr r;
			struct mrc_ctl_mr_segment s;
		} req = { { 0x1000, 64, 0, MRC_CTL_ACCESS_ALL, 1, 0, 0 }, { 0, page } };

		err = ctl_request(ctl, MRC_CTL_REG_MR, &req, sizeof(req), &fd, 1, &keys, sizeof(keys),
			      NULL, 0);
		CHECK(err == -EINVAL, "region in no protection domain: refused with EINVAL (%d)",
		      err);
		req.r.pd = MRC_CTL_MAX_PD + 1;
		err = ctl_request(ctl, MRC_CTL_REG_MR, &req, sizeof(req), &fd, 1, &keys, sizeof(keys),
			      NULL, 0);
		CHECK(err == -EINVAL, "region in PD %u, past the last: refused with EINVAL (%d)",
		      MRC_CTL_MAX_PD + 1, err);
	}
	{
		struct mrc_ctl_create_srq cs = { .max_wr = 16, .pd = 1 };

		err = ctl_request(ctl, MRC_CTL_CREATE_SRQ, &cs, sizeof(cs), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EINVAL, "SRQ without its async event socket: EINVAL (%d)", err);
		err = ctl_request(ctl, MRC_CTL_DESTROY_SRQ, &(struct mrc_ctl_handle){ 777, 0 },
			      sizeof(struct mrc_ctl_handle), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -ENOENT, "destroying an SRQ that does not exist: ENOENT (%d)", err);
	}
	{
		struct mrc_ctl_modify_qp m = { .qp_num = 12345, .retry_cnt = 9 };

		err = ctl_request(ctl, MRC_CTL_MODIFY_QP, &m, sizeof(m), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -ENOENT, "RTS to RTS of a QP that does not exist: ENOENT (%d)", err);
	}

	/* page maps for the XDP fast path (xdp backend): sizes refused, a map as a segment */
	{
		struct mrc_ctl_status st;
		struct mrc_ctl_pages pg;
		int map = -1;

		err = ctl_request(ctl, MRC_CTL_STATUS, NULL, 0, NULL, 0, &st, sizeof(st), NULL, 0);
		CHECK(err == 0, "status (%d)", err);
		pg.length = 100;
		err = ctl_request(ctl, MRC_CTL_PAGES, &pg, sizeof(pg), NULL, 0, NULL, 0, &map, 1);
		CHECK(err == (strcmp(st.backend, "xdp") ? -EOPNOTSUPP : -EINVAL),
		      "page map of 100 bytes: refused (%d, backend %s)", err, st.backend);
		pg.length = 8ull << 30;
		err = ctl_request(ctl, MRC_CTL_PAGES, &pg, sizeof(pg), NULL, 0, NULL, 0, &map, 1);
		CHECK(err == (strcmp(st.backend, "xdp") ? -EOPNOTSUPP : -EINVAL),
		      "page map of 8 GiB: refused (%d)", err);
		if (!strcmp(st.backend, "xdp")) {
			pg.length = 2 * page;
			err = ctl_request(ctl, MRC_CTL_PAGES, &pg, sizeof(pg), NULL, 0, NULL, 0, &map,
				      1);
			CHECK(err == 0 && map >= 0, "page map of 2 pages handed out (%d)", err);
			err = reg_mr(ctl, map, 4 * page, 0x1000, 0, 4 * page, &keys);
			CHECK(err == -EINVAL,
			      "page map shorter than the segment it claims: refused (%d)", err);
			err = reg_mr(ctl, map, 2 * page, 0x1000, 0, 2 * page, &keys);
			CHECK(err == 0, "region in a page map registered (%d)", err);
			if (!err) {
				struct mrc_ctl_handle h = { keys.lkey, 0 };

				err = ctl_request(ctl, MRC_CTL_DEREG_MR, &h, sizeof(h), NULL, 0, NULL,
					      0, NULL, 0);
				CHECK(err == 0, "... and deregistered (%d)", err);
			}
			close(map);
		}
	}

	/* the valid region every later case uses: iova 0x10000, one page */
	err = reg_mr(ctl, fd, page, 0x10000, 0, page, &keys);
	CHECK(err == 0, "valid region registered (%d)", err);
	mem = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);

	{
		/* a channel the daemon would write into must never block it: only its datagram
		 * socket is taken, not an eventfd the client could fill to the brim */
		int efd = eventfd(0xfffffffe, EFD_CLOEXEC);

		err = ctl_request(ctl, MRC_CTL_CREATE_CQ, &(struct mrc_ctl_create_cq){ 8, 0 },
			      sizeof(struct mrc_ctl_create_cq), &efd, 1, &cqr, sizeof(cqr), &rfd, 1);
		CHECK(err == -EBADF, "an eventfd as completion channel: refused with EBADF (%d)",
		      err);
		close(efd);
	}
	err = ctl_request(ctl, MRC_CTL_CREATE_CQ, &(struct mrc_ctl_create_cq){ 64, 0 },
		      sizeof(struct mrc_ctl_create_cq), NULL, 0, &cqr, sizeof(cqr), &rfd, 1);
	if (err || rfd < 0)
		return 1;
	{
		size_t len = MRC_RING_BYTES((size_t)cqr.entries, sizeof(struct mrc_cq_entry));
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);

		if (m == MAP_FAILED || mrc_ring_attach(&cq, m, len, MRC_RING_CQ, 0))
			return 2;
		cq_handle = cqr.handle;
		close(rfd);
	}
	{
		struct mrc_ctl_create_qp on_srq = { cq_handle, cq_handle, 1, 1, 0, 1, 777, 0 };
		struct mrc_ctl_create_srq cs = { .max_wr = 16, .pd = 1, .limit = 4 };
		struct mrc_ctl_qp_created qc;
		struct mrc_ctl_srq srq;
		int sv[2], ring = -1, qfds[2] = { -1, -1 };

		err = ctl_request(ctl, MRC_CTL_CREATE_QP, &on_srq, sizeof(on_srq), NULL, 0, NULL, 0,
			      NULL, 0);
		CHECK(err == -EINVAL, "QP on an SRQ that does not exist: EINVAL (%d)", err);
		/* an SRQ and a QP on it, left for the daemon to reclaim when this client goes */
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
			return 2;
		err = ctl_request(ctl, MRC_CTL_CREATE_SRQ, &cs, sizeof(cs), &sv[1], 1, &srq,
			      sizeof(srq), &ring, 1);
		CHECK(err == 0 && ring >= 0 && srq.entries >= 16, "an SRQ created (%d)", err);
		on_srq.srq = srq.handle;
		err = ctl_request(ctl, MRC_CTL_CREATE_QP, &on_srq, sizeof(on_srq), NULL, 0, &qc,
			      sizeof(qc), qfds, 2);
		CHECK(err == 0, "a QP on it (%d)", err);
		err = ctl_request(ctl, MRC_CTL_DESTROY_SRQ, &(struct mrc_ctl_handle){ srq.handle, 0 },
			      sizeof(struct mrc_ctl_handle), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EBUSY, "destroying an SRQ a QP uses: EBUSY (%d)", err);
		err = ctl_request(ctl, MRC_CTL_MODIFY_SRQ, &(struct mrc_ctl_modify_srq){ srq.handle, 99 },
			      sizeof(struct mrc_ctl_modify_srq), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EINVAL, "an SRQ limit past its entries: EINVAL (%d)", err);
		close(sv[0]);
		close(sv[1]);
		close(ring);
		close(qfds[0]);
		close(qfds[1]);
	}

	{
		struct qp qp = make_qp(ctl, true);
		struct mrc_sq_entry e = { .wr_id = 1, .opcode = MRC_SQ_WRITE,
					  .flags = MRC_SQ_F_SIGNALED, .num_sge = 1,
					  .rkey = keys.rkey, .raddr = 0x10000 + 512 };

		e.sge[0] = (struct mrc_shm_sge){ 0x10000, 64, keys.lkey ^ 0x5a5a00 };
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 1 && wc.status == MRC_CQ_LOC_PROT_ERR,
		      "WRITE from a wrong lkey: local protection error completion (status %u)",
		      wc.status);
		CHECK(qp_in_error(&qp), "... and only that QP is in the error state");
	}
	{
		struct qp qp = make_qp(ctl, true);
		struct mrc_sq_entry e = { .wr_id = 2, .opcode = MRC_SQ_WRITE,
					  .flags = MRC_SQ_F_SIGNALED, .num_sge = 1,
					  .rkey = keys.rkey, .raddr = 0x10000 };

		e.sge[0] = (struct mrc_shm_sge){ 0x10000 + page - 16, 64, keys.lkey };
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 2 && wc.status == MRC_CQ_LOC_PROT_ERR,
		      "WRITE from a range past its region: local protection error (status %u)",
		      wc.status);
	}
	{
		/* two QPs: a target that refuses the key answers with a NAK, and the requester's
		 * work completes with the remote error */
		struct qp qp = make_qp(ctl, false), target = make_qp(ctl, false);

		connect_qp(ctl, qp.qpn, target.qpn);
		connect_qp(ctl, target.qpn, qp.qpn);
		struct mrc_sq_entry e = { .wr_id = 3, .opcode = MRC_SQ_WRITE,
					  .flags = MRC_SQ_F_SIGNALED, .num_sge = 1,
					  .rkey = keys.rkey ^ 0x5a5a00, .raddr = 0x10000 };

		e.sge[0] = (struct mrc_shm_sge){ 0x10000, 64, keys.lkey };
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 3 && wc.status == MRC_CQ_REM_ACCESS_ERR,
		      "WRITE to a wrong rkey: remote access error from the target (status %u)",
		      wc.status);
	}
	{
		struct qp qp = make_qp(ctl, true);
		struct mrc_sq_entry e = { .wr_id = 4, .opcode = 77, .num_sge = 9 };

		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 4 && wc.status == MRC_CQ_LOC_QP_OP_ERR,
		      "descriptor with a bad opcode and SGE count: QP operation error (status %u)",
		      wc.status);
		qp = make_qp(ctl, true);
		__atomic_store_n(&qp.sq.producer->value, qp.sq.mine + 1000000, __ATOMIC_RELEASE);
		ring(qp.doorbell_bit, doorbell);
		CHECK(qp_in_error(&qp), "SQ producer index a million ahead: that QP to error");
		/* bits name slots, not this client's QPs: the daemon must only look at its own */
		for (uint32_t bit = 0; bit < MRC_DOORBELL_BITS; bit++)
			ring(bit, doorbell);
		CHECK(ctl_request(ctl, MRC_CTL_STATUS, NULL, 0, NULL, 0, &status, sizeof(status), NULL, 0) == 0,
		      "every doorbell bit rung at once: the daemon still answers");
	}
	{
		/* UD QPs: requests of the other kind refused, a WRITE failing its QP, a datagram
		 * to an address the daemon may not reach lost like any other */
		struct qp ud = make_qp_of(ctl, false, MRC_CTL_QPT_UD), rc = make_qp(ctl, false);
		struct mrc_ctl_ud_qp st = { .qp_num = rc.qpn, .state = MRC_CTL_QP_RTR };
		struct mrc_ctl_connect_qp cn = { .qp_num = ud.qpn, .dest_qp_num = 1,
						 .max_dest_rd_atomic = 1 };
		struct mrc_ctl_resolve rs = { .dgid = { [10] = 0xff, [11] = 0xff, 192, 0, 2, 1 } };
		struct mrc_sq_entry e = { .wr_id = 6, .opcode = MRC_SQ_SEND, .flags = MRC_SQ_F_SIGNALED,
					  .remote_qpn = 5, .remote_qkey = 1 };

		err = ctl_request(ctl, MRC_CTL_UD_QP, &st, sizeof(st), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EINVAL, "a UD state for an RC QP: EINVAL (%d)", err);
		err = ctl_request(ctl, MRC_CTL_CONNECT_QP, &cn, sizeof(cn), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EINVAL, "connecting a UD QP like an RC one: EINVAL (%d)", err);
		err = ctl_request(ctl, MRC_CTL_RESOLVE, &rs, sizeof(rs), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EHOSTUNREACH, "resolving 192.0.2.1, not a peer: EHOSTUNREACH (%d)", err);
		err = ctl_request(ctl, MRC_CTL_RESOLVE, &rs, 3, NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -EINVAL, "a resolve request of 3 bytes: EINVAL (%d)", err);
		memcpy(e.dgid, rs.dgid, 16);
		post(&ud, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 6 && wc.status == MRC_CQ_SUCCESS,
		      "a datagram to an address the daemon may not reach: sent into nothing (%u)",
		      wc.status);
		e = (struct mrc_sq_entry){ .wr_id = 7, .opcode = MRC_SQ_WRITE,
					   .flags = MRC_SQ_F_SIGNALED, .remote_qpn = 5 };
		post(&ud, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 7 && wc.status == MRC_CQ_LOC_QP_OP_ERR &&
			      qp_in_error(&ud),
		      "an RDMA WRITE on a UD QP: QP operation error, the QP in error (%u)",
		      wc.status);
	}
	{
		/* memory windows: malformed requests refused; binds and invalidations naming
		 * what is not a window of this client, or using a window as a local key, fail the
		 * QP that carried them and nothing else */
		struct mrc_ctl_alloc_mw am = { .pd = 1, .type = 9 };
		struct mrc_ctl_mw w;
		struct mrc_sq_entry e = { .wr_id = 8, .opcode = MRC_SQ_BIND_MW,
					  .flags = MRC_SQ_F_SIGNALED, .mr_lkey = keys.lkey,
					  .mw_addr = 0x10000, .mw_length = 64,
					  .mw_access = MRC_CTL_ACCESS_REMOTE_READ };
		struct qp qp;

		err = ctl_request(ctl, MRC_CTL_ALLOC_MW, &am, sizeof(am), NULL, 0, &w, sizeof(w), NULL, 0);
		CHECK(err == -EINVAL, "a window of type 9: EINVAL (%d)", err);
		am = (struct mrc_ctl_alloc_mw){ .pd = 0, .type = MRC_CTL_MW_TYPE_2 };
		err = ctl_request(ctl, MRC_CTL_ALLOC_MW, &am, sizeof(am), NULL, 0, &w, sizeof(w), NULL, 0);
		CHECK(err == -EINVAL, "a window in no protection domain: EINVAL (%d)", err);
		err = ctl_request(ctl, MRC_CTL_ALLOC_MW, &am, 3, NULL, 0, &w, sizeof(w), NULL, 0);
		CHECK(err == -EINVAL, "an allocation request of 3 bytes: EINVAL (%d)", err);
		err = ctl_request(ctl, MRC_CTL_DEALLOC_MW, &(struct mrc_ctl_handle){ keys.lkey, 0 },
			      sizeof(struct mrc_ctl_handle), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == -ENOENT, "deallocating a region as a window: ENOENT (%d)", err);
		am.pd = 1;
		err = ctl_request(ctl, MRC_CTL_ALLOC_MW, &am, sizeof(am), NULL, 0, &w, sizeof(w), NULL, 0);
		CHECK(err == 0 && w.rkey, "a type 2 window (%d)", err);

		qp = make_qp(ctl, true);
		e.mw_rkey = keys.rkey; /* a region's key */
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 8 && wc.status == MRC_CQ_MW_BIND_ERR &&
			      qp_in_error(&qp),
		      "binding a region's key as a window: MW_BIND_ERR, that QP in error (%u)",
		      wc.status);
		qp = make_qp(ctl, true);
		e.mw_rkey = w.rkey ^ 0x100; /* not the window's own bits */
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.status == MRC_CQ_MW_BIND_ERR,
		      "a bind whose key changes more than its low byte: MW_BIND_ERR (%u)", wc.status);
		qp = make_qp(ctl, true);
		e.mw_rkey = w.rkey;
		e.mw_length = 1ull << 40;
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.status == MRC_CQ_MW_BIND_ERR,
		      "a bind of 1 TiB over a smaller region: MW_BIND_ERR (%u)", wc.status);
		qp = make_qp(ctl, true);
		e = (struct mrc_sq_entry){ .wr_id = 9, .opcode = MRC_SQ_LOCAL_INV,
					   .flags = MRC_SQ_F_SIGNALED, .imm = keys.rkey };
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 9 && wc.status == MRC_CQ_MW_BIND_ERR,
		      "invalidating a region's key locally: MW_BIND_ERR (%u)", wc.status);
		qp = make_qp(ctl, true);
		e = (struct mrc_sq_entry){ .wr_id = 10, .opcode = MRC_SQ_WRITE,
					   .flags = MRC_SQ_F_SIGNALED, .num_sge = 1,
					   .rkey = keys.rkey, .raddr = 0x10000 };
		e.sge[0] = (struct mrc_shm_sge){ 0x10000, 8, w.rkey };
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 10 && wc.status == MRC_CQ_LOC_PROT_ERR,
		      "a window's key as a local key: LOC_PROT_ERR (%u)", wc.status);
		err = ctl_request(ctl, MRC_CTL_DEALLOC_MW, &(struct mrc_ctl_handle){ w.rkey, 0 },
			      sizeof(struct mrc_ctl_handle), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == 0, "the window deallocated (%d)", err);
	}
	{
		struct qp qp = make_qp(ctl, true);
		struct mrc_sq_entry e = { .wr_id = 5, .opcode = MRC_SQ_WRITE,
					  .flags = MRC_SQ_F_SIGNALED, .num_sge = 1,
					  .rkey = keys.rkey, .raddr = 0x10000 + 1024 };

		for (unsigned i = 0; i < 100; i++)
			mem[i] = (uint8_t)(i * 7 + 1);
		e.sge[0] = (struct mrc_shm_sge){ 0x10000, 100, keys.lkey };
		post(&qp, doorbell, &e);
		CHECK(next_completion(&wc) && wc.wr_id == 5 && wc.status == MRC_CQ_SUCCESS &&
			      !memcmp(mem, mem + 1024, 100),
		      "after all that, a valid WRITE on a new QP lands byte-exact (status %u)",
		      wc.status);
	}
	{
		/* deregister a region a posted receive points into, then send to it: the
		 * daemon keeps the mapping until the receive is done, never a dangling pointer */
		struct qp tx = make_qp(ctl, false);
		int fd2 = memfd(page, true);
		struct mrc_ctl_mr k2;
		size_t len = MRC_RING_BYTES((size_t)16, sizeof(struct mrc_rq_entry));
		int rfds[2] = { -1, -1 };
		struct mrc_ctl_create_qp cq_req = { cq_handle, cq_handle, 16, 16, 0, 1, 0, 0 };
		struct mrc_ctl_qp_created rep;
		struct mrc_ring rq;
		void *rq_mem;
		struct mrc_rq_entry re = { .wr_id = 6, .num_sge = 1 };
		struct mrc_sq_entry se = { .wr_id = 7, .opcode = MRC_SQ_SEND,
					   .flags = MRC_SQ_F_SIGNALED, .num_sge = 1 };
		bool got_send = false, got_recv = false;

		/* the receiving QP: this test needs its RQ ring */
		err = ctl_request(ctl, MRC_CTL_CREATE_QP, &cq_req, sizeof(cq_req), NULL, 0, &rep,
			      sizeof(rep), rfds, 2);
		if (err)
			return 2;
		rq_mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rfds[1], 0);
		if (rq_mem == MAP_FAILED || mrc_ring_attach(&rq, rq_mem, len, MRC_RING_RQ, 1))
			return 2;
		close(rfds[0]);
		close(rfds[1]);
		connect_qp(ctl, rep.qp_num, tx.qpn);
		connect_qp(ctl, tx.qpn, rep.qp_num);
		err = reg_mr(ctl, fd2, page, 0x40000, 0, page, &k2);
		close(fd2);
		re.sge[0] = (struct mrc_shm_sge){ 0x40000, 256, k2.lkey };
		if (err || mrc_ring_produce(&rq, &re))
			return 2;
		ring(rep.doorbell_bit % MRC_DOORBELL_BITS, doorbell);
		usleep(100000); /* the receive is in the engine now */
		err = ctl_request(ctl, MRC_CTL_DEREG_MR, &(struct mrc_ctl_handle){ k2.lkey, 0 },
			      sizeof(struct mrc_ctl_handle), NULL, 0, NULL, 0, NULL, 0);
		CHECK(err == 0, "deregistered the region a posted receive points into (%d)", err);
		se.sge[0] = (struct mrc_shm_sge){ 0x10000, 200, keys.lkey };
		post(&tx, doorbell, &se);
		for (int i = 0; i < 2 && next_completion(&wc); i++) {
			got_send |= wc.wr_id == 7 && wc.status == MRC_CQ_SUCCESS;
			got_recv |= wc.wr_id == 6;
		}
		CHECK(got_send && got_recv,
		      "a SEND into it completes on both sides, the daemon still standing");
	}
	{
		int bad = connect_daemon();
		uint8_t junk[64];
		char c;

		memset(junk, 0x41, sizeof(junk));
		if (send(bad, junk, sizeof(junk), MSG_NOSIGNAL) != sizeof(junk))
			return 2;
		/* the daemon answers with an error and closes that connection */
		while (recv(bad, &c, 1, 0) > 0)
			;
		close(bad);
		err = ctl_request(ctl, MRC_CTL_STATUS, NULL, 0, NULL, 0, &status, sizeof(status), NULL, 0);
		CHECK(err == 0, "garbage on another connection: closed, this one still served (%d)",
		      err);
	}
	{
		/* connections that never speak: more than the daemon has slots; each is closed
		 * once its deadline for a first request passes, the slots come back, and the
		 * connection that spoke is never touched */
		enum { SILENT = 300 }; /* the daemon has 256 connection slots */
		static int fds[SILENT];
		unsigned closed = 0, told = 0, refused_then_served = 0;

		for (unsigned i = 0; i < SILENT; i++)
			fds[i] = connect_daemon();
		for (unsigned i = 0; i < SILENT; i++) {
			struct pollfd p = { fds[i], POLLIN, 0 };
			struct mrc_ctl_hdr h;
			ssize_t n = -1;

			/* EOF within 10 s: refused at once (no slot: told so first) or closed at
			 * its deadline */
			if (poll(&p, 1, 10000) == 1)
				n = recv(fds[i], &h, sizeof(h), MSG_DONTWAIT);
			if (n == sizeof(h) && h.type == MRC_CTL_REFUSED && h.status == -ENOSPC) {
				told++;
				n = recv(fds[i], &h, sizeof(h), MSG_DONTWAIT);
			}
			closed += n == 0;
			close(fds[i]);
		}
		CHECK(closed == SILENT && told > 0 && told < SILENT,
		      "%u silent connections: all %u closed by the daemon, %u refused a slot "
		      "and told so (ENOSPC)", SILENT, closed, told);
		for (int tries = 0; tries < 100 && !refused_then_served; tries++) {
			int fresh = connect_daemon();

			refused_then_served = ctl_request(fresh, MRC_CTL_STATUS, NULL, 0, NULL, 0, &status,
						      sizeof(status), NULL, 0) == 0;
			close(fresh);
			if (!refused_then_served)
				usleep(100000);
		}
		err = ctl_request(ctl, MRC_CTL_STATUS, NULL, 0, NULL, 0, &status, sizeof(status), NULL, 0);
		CHECK(refused_then_served && err == 0,
		      "then a new connection is served, and the one that spoke still is (%d)", err);
	}
	printf("hostile_client: %s\n", failures ? "FAILED" : "the daemon refused or contained every case");
	return failures ? 1 : 0;
}
