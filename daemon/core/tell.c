/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Lines for the log and for monitors, through the ops: the core writes no file itself. */
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

__attribute__((format(printf, 4, 0))) static void tell(struct mrcd_core *c, bool event,
							  int priority, const char *fmt,
							  va_list ap)
{
	char line[512];

	if (vsnprintf(line, sizeof(line), fmt, ap) < 0)
		return;
	if (event)
		c->ops->event(c->io, priority, line);
	else
		c->ops->log(c->io, priority, line);
}

void core_log(struct mrcd_core *c, int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tell(c, false, priority, fmt, ap);
	va_end(ap);
}

void core_event(struct mrcd_core *c, int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tell(c, true, priority, fmt, ap);
	va_end(ap);
}
