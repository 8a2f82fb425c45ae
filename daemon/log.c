/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int max_priority = LOG_INFO;

void mrcd_log_level(int priority)
{
	max_priority = priority;
}

void mrcd_log(int priority, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (priority > max_priority)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one write per line, so lines from a busy daemon never interleave */
	fprintf(stderr, "<%d>metaroced: %s\n", priority, line);
}
