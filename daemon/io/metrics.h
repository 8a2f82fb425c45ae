/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Prometheus metrics: the text exposition format (version 0.0.4), rendered from the daemon's
 * state on demand, served over HTTP at GET /metrics when metrics_listen is set and through the
 * control socket for `metaroce-ctl metrics`. Names follow Prometheus conventions (base units,
 * _total for counters); no label names a QP, so a host with thousands of QPs stays cheap to
 * scrape: per-path figures are summed or averaged per plane.
 */
#ifndef METAROCE_DAEMON_IO_METRICS_H
#define METAROCE_DAEMON_IO_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mrcd;

/* Writes the exposition into buf; returns its length (truncated at cap, never overflowing). */
size_t mrcd_metrics_render(const struct mrcd *d, char *buf, size_t cap);

/* The HTTP endpoint (libmicrohttpd in the loop), when configured. Message in err on failure. */
int mrcd_metrics_open(struct mrcd *d, char *err, size_t errlen);
void mrcd_metrics_close(struct mrcd *d);
/* When the endpoint must run at the latest (its connections' timeouts); UINT64_MAX: never. */
uint64_t mrcd_metrics_next_timeout(const struct mrcd *d, uint64_t now_ns);
void mrcd_metrics_on_timeout(struct mrcd *d);

#endif /* METAROCE_DAEMON_IO_METRICS_H */
