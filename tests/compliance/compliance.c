/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compliance ADAPTER RESULTS.json SCRIPT...: runs each wire script against a fresh QP of the
 * implementation ADAPTER names, prints a line per script and writes the results for
 * report.py (which adds the requirement matrix). Exits 1 if any script failed.
 */
#include <stdio.h>
#include <string.h>

#include "compliance/iut.h"
#include "compliance/script.h"

static const struct iut_ops *const adapters[] = { &iut_engine };

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

int main(int argc, char **argv)
{
	const struct iut_ops *iut = NULL;
	unsigned failed = 0;
	FILE *out;

	if (argc < 4) {
		fprintf(stderr, "usage: compliance ADAPTER RESULTS.json SCRIPT...\n");
		return 2;
	}
	for (unsigned i = 0; i < sizeof(adapters) / sizeof(adapters[0]); i++)
		if (!strcmp(adapters[i]->name, argv[1]))
			iut = adapters[i];
	if (!iut) {
		fprintf(stderr, "compliance: no adapter %s (engine)\n", argv[1]);
		return 2;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 2;
	}
	fprintf(out, "{\"adapter\": ");
	json_str(out, iut->name);
	fprintf(out, ", \"results\": [");
	for (int i = 3; i < argc; i++) {
		struct script_result r;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];

		script_run(argv[i], iut, &r);
		if (r.pass) {
			printf("  PASS     %s\n", name);
		} else {
			failed++;
			printf("  FAIL     %s:%u: %s\n", name, r.line, r.why);
		}
		fprintf(out, "%s\n {\"script\": ", i > 3 ? "," : "");
		json_str(out, name);
		fprintf(out, ", \"pass\": %s, \"line\": %u, \"why\": ", r.pass ? "true" : "false",
			r.line);
		json_str(out, r.why);
		fprintf(out, ", \"requires\": [");
		for (unsigned k = 0; k < r.n_ids; k++) {
			fprintf(out, "%s", k ? ", " : "");
			json_str(out, r.ids[k]);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "\n]}\n");
	fclose(out);
	printf("compliance (%s): %d scripts, %u failed\n", iut->name, argc - 3, failed);
	return failed ? 1 : 0;
}
