/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "compliance/agents/peer_sockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SOCKETS 96u

static struct peer_socket socks[MAX_SOCKETS];
static unsigned n_socks;

static int udp_socket(struct in_addr addr, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr = addr,
				 .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int peer_socket_for(struct in_addr addr, uint8_t plane, uint16_t port)
{
	int fd;

	for (unsigned i = 0; i < n_socks; i++)
		if (socks[i].port == port && socks[i].plane == plane &&
		    socks[i].addr.s_addr == addr.s_addr)
			return socks[i].fd;
	if (n_socks == MAX_SOCKETS)
		return -ENOSPC;
	fd = udp_socket(addr, port);
	if (fd < 0)
		return fd;
	socks[n_socks++] = (struct peer_socket){ .fd = fd, .addr = addr, .port = port,
						 .plane = plane };
	return fd;
}

int peer_socket_send(struct in_addr from, uint8_t plane, uint16_t sport, struct in_addr to,
		     uint16_t dport, bool ce, const uint8_t *bytes, size_t len)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr = to,
				   .sin_port = htons(dport) };
	struct iovec iov = { (void *)bytes, len };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr m = { .msg_name = &dst, .msg_namelen = sizeof(dst), .msg_iov = &iov,
			    .msg_iovlen = 1, .msg_control = c.buf,
			    .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	int fd = peer_socket_for(from, plane, sport), tos = ce ? 3 : 2;

	if (fd < 0)
		return fd;
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_TOS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &tos, sizeof(tos));
	return sendmsg(fd, &m, 0) < 0 ? -errno : 0;
}

void peer_sockets_forget(const struct in_addr *addrs, unsigned n)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < n_socks; i++) {
		bool gone = !addrs;

		for (unsigned k = 0; addrs && k < n; k++)
			gone |= socks[i].addr.s_addr == addrs[k].s_addr;
		if (gone)
			close(socks[i].fd);
		else
			socks[kept++] = socks[i];
	}
	n_socks = kept;
}

unsigned peer_sockets_count(void)
{
	return n_socks;
}

const struct peer_socket *peer_socket_at(unsigned i)
{
	return i < n_socks ? &socks[i] : NULL;
}
