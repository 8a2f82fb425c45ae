/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The library's end of the control socket (lib/include/metaroce/ctl.h): one SOCK_SEQPACKET
 * connection per open device context, requests answered in order, descriptors as SCM_RIGHTS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "shm/fdpass.h"
#include "shm/ring.h"

#define MAX_REPLY_FDS 2

const char *mrv_socket_path(void)
{
	const char *p = getenv("METAROCE_SOCKET");

	return p && *p ? p : MRV_DEFAULT_SOCKET;
}

static int send_request(int fd, const void *buf, size_t len, const int *fds, unsigned n_fds)
{
	while (mrc_send_with_fds(fd, buf, len, fds, n_fds, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return errno;
	return 0;
}

/* Receives one reply; fds beyond what the caller takes are closed, never leaked. A reset is
 * reported once, ahead of what the socket still holds (a refusal the daemon sent before it
 * closed, MRC_CTL_REFUSED): read once more after it. */
static ssize_t recv_reply(int fd, void *buf, size_t cap, int *fds, unsigned *n_fds)
{
	unsigned want = *n_fds;
	bool lost, reset = false;
	ssize_t n;

	for (;;) {
		n = mrc_recv_with_fds(fd, buf, cap, fds, want, n_fds, &lost, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNRESET && !reset) {
			reset = true;
			continue;
		}
		return n;
	}
}

static int transact(int fd, uint32_t seq, uint16_t type, const void *payload, uint32_t len,
		    const int *fds, unsigned n_fds, void *reply, uint32_t reply_cap,
		    uint32_t *reply_len, int *rfds, unsigned *n_rfds)
{
	static __thread uint8_t buf[MRC_CTL_MAX_MSG];
	struct mrc_ctl_hdr h = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				 .type = type, .len = len, .seq = seq };
	unsigned got_fds = n_rfds ? *n_rfds : 0;
	int fdbuf[MAX_REPLY_FDS];
	ssize_t n;
	int err;

	if (len > sizeof(buf) - sizeof(h) || got_fds > MAX_REPLY_FDS)
		return EINVAL;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	err = send_request(fd, buf, sizeof(h) + len, fds, n_fds);
	if (err && err != EPIPE && err != ECONNRESET)
		return err;
	/* a connection the daemon refused holds why (MRC_CTL_REFUSED) even once closed */
	n = recv_reply(fd, buf, sizeof(buf), fdbuf, &got_fds);
	if (n < 0)
		return err ? err : errno;
	if (n == 0)
		return err ? err : ECONNRESET; /* the daemon went away */
	memcpy(&h, buf, sizeof(h));
	if ((size_t)n >= sizeof(h) && h.magic == MRC_CTL_MAGIC && h.type == MRC_CTL_REFUSED &&
	    h.seq == 0 && h.status < 0) {
		err = -h.status;
	} else if (err) {
		/* the send's error stands */
	} else if ((size_t)n < sizeof(h) || h.magic != MRC_CTL_MAGIC || h.seq != seq ||
	    h.len != (size_t)n - sizeof(h) || h.status > 0) {
		err = EPROTO;
	} else if (h.status < 0) {
		err = -h.status;
	} else if (h.len > reply_cap) {
		err = EPROTO;
	} else {
		if (h.len)
			memcpy(reply, buf + sizeof(h), h.len);
		if (reply_len)
			*reply_len = h.len;
		for (unsigned i = 0; i < got_fds; i++)
			rfds[i] = fdbuf[i];
		if (n_rfds)
			*n_rfds = got_fds;
		return 0;
	}
	for (unsigned i = 0; i < got_fds; i++)
		close(fdbuf[i]);
	return err;
}

/* The doorbell page the daemon handed over, mapped and checked. */
static int map_doorbells(int fd, struct mrc_doorbell_page **out)
{
	struct mrc_doorbell_page *page;
	int err = mrc_shm_check(fd, sizeof(*page));

	if (err) {
		close(fd);
		return -err;
	}
	page = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (page == MAP_FAILED)
		return errno;
	if (page->magic != MRC_DOORBELL_MAGIC || page->version != MRC_DOORBELL_VERSION ||
	    page->bits != MRC_DOORBELL_BITS) {
		munmap(page, sizeof(*page));
		return EPROTO;
	}
	*out = page;
	return 0;
}

int mrv_link_open(struct mrc_ctl_status *status, int doorbell_fd,
		  struct mrc_doorbell_page **doorbells, int *fd_out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = mrv_socket_path();
	struct mrc_ctl_hello hello = { .abi = MRC_CTL_CLIENT_ABI };
	uint32_t len = 0;
	unsigned n_page = 1;
	int fd, err, page_fd = -1;

	if (strlen(path) >= sizeof(sun.sun_path))
		return ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = errno;
		close(fd);
		return err;
	}
	if (doorbell_fd >= 0) {
		err = transact(fd, 1, MRC_CTL_HELLO, &hello, sizeof(hello), &doorbell_fd, 1, status,
			       sizeof(*status), &len, &page_fd, &n_page);
		if (!err && len == sizeof(*status))
			err = n_page == 1 ? map_doorbells(page_fd, doorbells) : EPROTO;
		else if (!err && n_page == 1)
			close(page_fd);
	} else {
		err = transact(fd, 1, MRC_CTL_STATUS, NULL, 0, NULL, 0, status, sizeof(*status),
			       &len, NULL, NULL);
	}
	if (!err && len != sizeof(*status))
		err = EPROTO; /* a daemon of another version */
	if (err) {
		close(fd);
		return err;
	}
	*fd_out = fd;
	return 0;
}

int mrv_request(struct mrv_context *ctx, uint16_t type, const void *payload, uint32_t len,
		const int *fds, unsigned n_fds, void *reply, uint32_t reply_cap,
		uint32_t *reply_len, int *rfds, unsigned *n_rfds)
{
	int err;

	pthread_mutex_lock(&ctx->ctl_lock);
	if (__atomic_load_n(&ctx->dead, __ATOMIC_ACQUIRE)) {
		err = ENODEV;
	} else {
		err = transact(ctx->ctl_fd, ++ctx->seq, type, payload, len, fds, n_fds, reply,
			       reply_cap, reply_len, rfds, n_rfds);
		if (err == ECONNRESET || err == EPIPE || err == EPROTO) {
			mrv_mark_dead(ctx); /* its work is flushed at the next empty poll */
			err = ENODEV;
		}
	}
	pthread_mutex_unlock(&ctx->ctl_lock);
	return err;
}

void mrv_ring_doorbell(struct mrv_qp *qp, const struct mrc_ring *ring)
{
	struct mrv_context *ctx = qp->ctx;
	uint64_t one = 1, mask = 1ull << (qp->doorbell_bit % 64);

	/* the daemon reads the ring every turn until it sleeps, and says when it does */
	if (!mrc_ring_doorbell_wanted(ring))
		return;
	/* release: what was produced is visible to the daemon that takes the bit; a bit
	 * already set has its wakeup on the way */
	if (__atomic_fetch_or(&ctx->doorbells->rung[qp->doorbell_bit / 64], mask,
			      __ATOMIC_RELEASE) & mask)
		return;
	/* a full eventfd counter still wakes the daemon: nothing to retry */
	if (write(ctx->doorbell_fd, &one, sizeof(one)) < 0)
		return;
}
