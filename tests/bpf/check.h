/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF tests' assertion: counts every check, prints the failed ones and goes on, so one
 * run reports every wrong path at once. The caller prints the totals and exits non-zero when
 * `failures` is.
 */
#ifndef METAROCE_TESTS_BPF_CHECK_H
#define METAROCE_TESTS_BPF_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static unsigned checks, failures;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (ok)
		return;
	failures++;
	fputs("FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

#endif
