/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The daemon's end of the control socket; the protocol is lib/include/metaroce/ctl.h. */
#ifndef METAROCE_DAEMON_CONTROL_H
#define METAROCE_DAEMON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

struct mrcd;

int mrcd_control_open(struct mrcd *d, char *err, size_t errlen);
void mrcd_control_close(struct mrcd *d);
void mrcd_control_accept(struct mrcd *d);
/* Handles readiness on fd if it is the control socket or a client; false otherwise. */
bool mrcd_control_event(struct mrcd *d, int fd);

#endif /* METAROCE_DAEMON_CONTROL_H */
