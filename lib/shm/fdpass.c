/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

union fd_control {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int) * MRC_FDPASS_MAX)];
};

ssize_t mrc_send_with_fds(int sock, const void *buf, size_t len, const int *fds, unsigned n_fds,
			  int flags)
{
	union fd_control ctrl;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds > MRC_FDPASS_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (n_fds) {
		struct cmsghdr *c;

		memset(&ctrl, 0, sizeof(ctrl));
		msg.msg_control = ctrl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	return sendmsg(sock, &msg, flags);
}

ssize_t mrc_recv_with_fds(int sock, void *buf, size_t cap, int *fds, unsigned max,
			  unsigned *n_fds, bool *lost, int flags)
{
	union fd_control ctrl;
	struct iovec iov = { buf, cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf,
			      .msg_controllen = sizeof(ctrl.buf) };
	ssize_t n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);

	*n_fds = 0;
	*lost = false;
	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		unsigned k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (unsigned i = 0; i < k; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*n_fds < max)
				fds[(*n_fds)++] = f;
			else
				close(f);
		}
	}
	*lost = (msg.msg_flags & MSG_CTRUNC) != 0;
	return n;
}
