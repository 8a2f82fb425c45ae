/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced logs one line per event to stderr, with the syslog priority as a "<N>" prefix
 * that journald understands when the daemon runs under systemd (SyslogLevelPrefix).
 */
#ifndef METAROCE_DAEMON_LOG_H
#define METAROCE_DAEMON_LOG_H

#include <syslog.h>

void mrcd_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Show messages up to this priority (default LOG_INFO). */
void mrcd_log_level(int priority);

#endif /* METAROCE_DAEMON_LOG_H */
