/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The daemon's end of the control socket; the protocol is lib/include/metaroce/ctl.h. */
#ifndef METAROCE_DAEMON_CONTROL_H
#define METAROCE_DAEMON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/ctl.h>

struct mrcd;

/*
 * Checks one received control packet of n bytes and copies its header out. Returns 0 for a
 * request the daemon serves, -EPROTO for a malformed packet (the client is then closed), or
 * -EOPNOTSUPP for a well-formed request of a type or shape it does not serve.
 */
int mrcd_control_check(const void *packet, size_t n, struct mrc_ctl_hdr *req);

int mrcd_control_open(struct mrcd *d, char *err, size_t errlen);
void mrcd_control_close(struct mrcd *d);
void mrcd_control_accept(struct mrcd *d);
/* The STATUS reply payload (also HELLO's). */
void mrcd_control_status(const struct mrcd *d, uint8_t *buf, size_t cap, size_t *len);
/* Handles readiness on fd if it is the control socket or a client; false otherwise. */
bool mrcd_control_event(struct mrcd *d, int fd);

#endif /* METAROCE_DAEMON_CONTROL_H */
