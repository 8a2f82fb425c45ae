/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rsockets (rcopy, riostream, rstream, and programs built on <rdma/rsocket.h>) are not offered
 * over metaroced. librdmacm's own implementation reaches past the rdma_cm API into its private
 * id and device structs (cma_id_private, cma_device) and the kernel's rdma_cm files, so over
 * any other rdma_cm it reads garbage and crashes; these take its symbols so that such a
 * program is told at its first call instead: rsocket() fails with ENOSYS, and every other call
 * names a descriptor no rsocket can be (EBADF).
 */
#include <errno.h>
#include <poll.h>
#include <rdma/rsocket.h>

static int no_rsockets(void)
{
	errno = ENOSYS;
	return -1;
}

static int not_an_rsocket(void)
{
	errno = EBADF;
	return -1;
}

int rsocket(int domain, int type, int protocol)
{
	(void)domain, (void)type, (void)protocol;
	return no_rsockets();
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return not_an_rsocket();
}

int rlisten(int socket, int backlog)
{
	(void)socket, (void)backlog;
	return not_an_rsocket();
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return not_an_rsocket();
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return not_an_rsocket();
}

int rshutdown(int socket, int how)
{
	(void)socket, (void)how;
	return not_an_rsocket();
}

int rclose(int socket)
{
	(void)socket;
	return not_an_rsocket();
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket, (void)buf, (void)len, (void)flags;
	return not_an_rsocket();
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	(void)socket, (void)buf, (void)len, (void)flags, (void)src_addr, (void)addrlen;
	return not_an_rsocket();
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket, (void)msg, (void)flags;
	return not_an_rsocket();
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket, (void)buf, (void)len, (void)flags;
	return not_an_rsocket();
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket, (void)buf, (void)len, (void)flags, (void)dest_addr, (void)addrlen;
	return not_an_rsocket();
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket, (void)msg, (void)flags;
	return not_an_rsocket();
}

ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket, (void)buf, (void)count;
	return not_an_rsocket();
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket, (void)iov, (void)iovcnt;
	return not_an_rsocket();
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket, (void)buf, (void)count;
	return not_an_rsocket();
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket, (void)iov, (void)iovcnt;
	return not_an_rsocket();
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds, (void)nfds, (void)timeout;
	return not_an_rsocket();
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	(void)nfds, (void)readfds, (void)writefds, (void)exceptfds, (void)timeout;
	return not_an_rsocket();
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return not_an_rsocket();
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket, (void)addr, (void)addrlen;
	return not_an_rsocket();
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
	return not_an_rsocket();
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
	return not_an_rsocket();
}

int rfcntl(int socket, int cmd, ...)
{
	(void)socket, (void)cmd;
	return not_an_rsocket();
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket, (void)buf, (void)len, (void)prot, (void)flags, (void)offset;
	return not_an_rsocket();
}

int riounmap(int socket, void *buf, size_t len)
{
	(void)socket, (void)buf, (void)len;
	return not_an_rsocket();
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket, (void)buf, (void)count, (void)offset, (void)flags;
	errno = EBADF;
	return 0;
}
