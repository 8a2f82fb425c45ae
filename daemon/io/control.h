/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The daemon's end of the control socket; the protocol is lib/include/metaroce/ctl.h. */
#ifndef METAROCE_DAEMON_IO_CONTROL_H
#define METAROCE_DAEMON_IO_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/ctl.h>

struct mrcd;

/*
 * Checks one received control packet of n bytes and copies its header out. Returns 0 for a
 * request the daemon serves, -EPROTO for a malformed packet (the client is then closed),
 * -EOPNOTSUPP for a type it does not serve, -EINVAL for a payload of the wrong size.
 */
int mrcd_control_check(const void *packet, size_t n, struct mrc_ctl_hdr *req);

/* The listening socket, in the loop; message in err on failure. */
int mrcd_control_open(struct mrcd *d, char *err, size_t errlen);
/* Every client goes (with what it owned), then the socket. */
void mrcd_control_close(struct mrcd *d);
/* The STATUS reply (also HELLO's). */
void mrcd_control_status(const struct mrcd *d, struct mrc_ctl_status *s);

#endif /* METAROCE_DAEMON_IO_CONTROL_H */
