/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <metaroce/ctl.h>

#include "ctl_client.h"
#include "shm/fdpass.h"

int ctl_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ctl_request(int fd, uint16_t type, const void *payload, uint32_t len, const int *fds,
		unsigned n_fds, void *reply, size_t cap, int *rfds, unsigned max_rfds)
{
	static uint32_t seq;
	static uint8_t buf[1u << 20]; /* a reply as long as the metrics or a QP list */
	struct mrc_ctl_hdr h = { MRC_CTL_MAGIC, MRC_CTL_VERSION, type, len, 0, ++seq, 0 };
	unsigned n_got;
	bool lost;
	ssize_t n;

	if (sizeof(h) + len > sizeof(buf))
		return -EMSGSIZE;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	if (mrc_send_with_fds(fd, buf, sizeof(h) + len, fds, n_fds, MSG_NOSIGNAL) < 0 &&
	    errno != EPIPE && errno != ECONNRESET)
		return -errno;
	/* a refused connection holds why (MRC_CTL_REFUSED), read even after a failed send, and
	 * after the reset, which is reported once ahead of it */
	n = mrc_recv_with_fds(fd, buf, sizeof(buf), rfds, max_rfds, &n_got, &lost, 0);
	if (n < 0 && errno == ECONNRESET)
		n = mrc_recv_with_fds(fd, buf, sizeof(buf), rfds, max_rfds, &n_got, &lost, 0);
	if (n < (ssize_t)sizeof(h))
		return -ECONNRESET;
	memcpy(&h, buf, sizeof(h));
	if (h.status == 0 && reply) {
		size_t got = (size_t)n - sizeof(h) < h.len ? (size_t)n - sizeof(h) : h.len;

		memcpy(reply, buf + sizeof(h), got < cap ? got : cap);
	}
	return h.status;
}
