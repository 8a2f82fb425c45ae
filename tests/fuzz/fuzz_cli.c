/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for metaroce-ctl's command line (cli/metaroce-ctl.c, built with its main
 * renamed): any argument vector ends in exit status 0, 1 or 2, never a crash, an endless
 * loop or a read past an argument. The input is the arguments separated by NUL bytes; the
 * control socket is always one that does not exist, so every daemon request fails cleanly.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int metaroce_ctl_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 12

/* A socket option would point the CLI somewhere real, and -w repeats forever on success. */
static int refused(const char *arg)
{
	if (arg[0] != '-')
		return 0;
	if (arg[1] == '-')
		return !strncmp(arg, "--s", 3) || !strncmp(arg, "--w", 3);
	return strchr(arg, 'S') != NULL || strchr(arg, 'w') != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[MAX_ARGS + 4];
	int argc = 0, rc;
	size_t at = 0;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	copy[size] = '\0';
	argv[argc++] = "metaroce-ctl";
	argv[argc++] = "-S";
	argv[argc++] = "/nonexistent/metaroce-fuzz.sock";
	while (at <= size && argc < MAX_ARGS + 3) {
		char *arg = copy + at;

		at += strlen(arg) + 1;
		if (refused(arg)) {
			free(copy);
			return -1; /* not added to the corpus */
		}
		argv[argc++] = arg;
	}
	argv[argc] = NULL;
	optind = 0; /* getopt starts over for every input */
	rc = metaroce_ctl_main(argc, argv);
	if (rc < 0 || rc > 2)
		abort();
	free(copy);
	return 0;
}
