/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The control protocol (lib/include/metaroce/ctl.h) spoken directly, as a buggy or hostile
 * client would rather than through libmetaroce: for the programs that test what the daemon
 * does with such clients (tests/verbs/hostile_client.c, tests/integration/attack/hoard.c).
 */
#ifndef METAROCE_TESTS_CTL_CLIENT_H
#define METAROCE_TESTS_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* A connection to the daemon's control socket; -errno when it cannot be made. */
int ctl_connect(const char *path);

/* One request; returns the daemon's status (0 or -errno), its reply (up to cap bytes) and
 * the descriptors it passed (up to max_rfds) in the out parameters. */
int ctl_request(int fd, uint16_t type, const void *payload, uint32_t len, const int *fds,
		unsigned n_fds, void *reply, size_t cap, int *rfds, unsigned max_rfds);

#endif
