/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One packet and the file descriptors that travel with it (SCM_RIGHTS) on the control
 * socket: how memfds, eventfds and channel sockets pass between libmetaroce and metaroced.
 */
#ifndef METAROCE_SHM_FDPASS_H
#define METAROCE_SHM_FDPASS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MRC_FDPASS_MAX 64 /* descriptors in one packet, at most */

/* Sends buf with n_fds descriptors (n_fds <= MRC_FDPASS_MAX). As sendmsg: bytes or -1. */
ssize_t mrc_send_with_fds(int sock, const void *buf, size_t len, const int *fds, unsigned n_fds,
			  int flags);

/*
 * Receives one packet into buf. Up to max descriptors land in fds and *n_fds says how many;
 * any beyond are closed, never leaked. *lost is set when the kernel cut descriptors off
 * (MSG_CTRUNC). As recvmsg: bytes, 0 at EOF, or -1.
 */
ssize_t mrc_recv_with_fds(int sock, void *buf, size_t cap, int *fds, unsigned max,
			  unsigned *n_fds, bool *lost, int flags);

#endif /* METAROCE_SHM_FDPASS_H */
