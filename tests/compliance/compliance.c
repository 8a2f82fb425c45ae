/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compliance [--known FILE] ADAPTER RESULTS.json SCRIPT...: runs each wire script against a
 * fresh QP of the
 * implementation ADAPTER names (engine, or remote:COMMAND for the agent COMMAND starts),
 * prints a line per script and writes the results for report.py (which adds the
 * requirement matrix). Exits 1 if any script failed; a skipped one (the IUT cannot make its
 * QP by design, and says why) is not a failure. FILE lists the IUT's known deviations, a
 * line "SCRIPT:LINE WHY" each: such a script's failure at that line is reported as known (at
 * another line it is a failure: a new one), and its pass fails the run until the line goes
 * (the list stays true). A line "~SCRIPT:LINE WHY" is a deviation seen in some runs only: its
 * failure is reported as known, its pass as a pass.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compliance/agent.h"
#include "compliance/iut.h"
#include "compliance/script.h"

/* The reason FILE gives for script name, or NULL (*line: the line it fails at; *sometimes: it
 * fails in some runs only); the file's text stays for the run. */
static const char *known_why(const char *file, const char *name, unsigned *line,
			     bool *sometimes)
{
	static char *text;
	size_t n = strlen(name);

	if (!file)
		return NULL;
	if (!text) {
		FILE *f = fopen(file, "r");
		long len;

		if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
		    !(text = calloc(1, (size_t)len + 1)) ||
		    fread(text, 1, (size_t)len, f) != (size_t)len) {
			fprintf(stderr, "compliance: cannot read %s\n", file);
			exit(2);
		}
		fclose(f);
	}
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *end;

		*sometimes = *l == '~';
		if (strncmp(l + *sometimes, name, n) || l[*sometimes + n] != ':')
			continue;
		*line = (unsigned)strtoul(l + *sometimes + n + 1, &end, 10);
		if (*line && *end == ' ')
			return end + 1;
		fprintf(stderr, "compliance: %s: %s: SCRIPT:LINE WHY\n", file, name);
		exit(2);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const struct iut_ops *iut = NULL;
	unsigned failed = 0, skipped = 0, known = 0;
	char err[256] = "";
	const char *known_file = NULL;
	FILE *out;

	if (argc > 2 && !strcmp(argv[1], "--known")) {
		known_file = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: compliance [--known FILE] ADAPTER RESULTS.json SCRIPT...\n");
		return 2;
	}
	if (!(iut = iut_adapter(argv[1], err, sizeof(err)))) {
		fprintf(stderr, "compliance: %s: %s\n", argv[1], err);
		return 2;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 2;
	}
	fprintf(out, "{\"adapter\": ");
	agent_json_str(out, iut->name);
	fprintf(out, ", \"results\": [");
	for (int i = 3; i < argc; i++) {
		struct script_result r;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		const char *listed;
		char reason[300] = "";
		bool is_known = false, sometimes = false;
		unsigned known_line = 0;

		script_run(argv[i], iut, &r);
		listed = known_why(known_file, name, &known_line, &sometimes);
		if (listed)
			snprintf(reason, sizeof(reason), "%.*s", (int)strcspn(listed, "\n"), listed);
		if (listed && r.pass && !sometimes) {
			r.pass = false;
			snprintf(r.why, sizeof(r.why), "passes, but %s lists it as a known deviation "
				 "(%s): remove the line", known_file, reason);
		} else if (listed && !r.skipped && !r.pass && r.line == known_line) {
			is_known = true;
		} else if (listed && !r.skipped && !r.pass) {
			size_t at = strlen(r.why);

			snprintf(r.why + at, sizeof(r.why) - at, " (its known deviation is at line %u)",
				 known_line);
		}
		if (is_known) {
			known++;
			printf("  KNOWN    %s:%u: %s (known: %s)\n", name, r.line, r.why, reason);
		} else if (r.pass && r.unchecked[0]) {
			printf("  PASS     %s (counters it does not keep, unchecked: %s)\n", name,
			       r.unchecked);
		} else if (r.pass) {
			printf("  PASS     %s\n", name);
		} else if (r.skipped) {
			skipped++;
			printf("  SKIP     %s: %s\n", name, r.why);
		} else {
			failed++;
			printf("  FAIL     %s:%u: %s\n", name, r.line, r.why);
		}
		fprintf(out, "%s\n {\"script\": ", i > 3 ? "," : "");
		agent_json_str(out, name);
		fprintf(out, ", \"pass\": %s, \"skipped\": %s, \"line\": %u, \"why\": ",
			r.pass ? "true" : "false", r.skipped ? "true" : "false", r.line);
		agent_json_str(out, r.why);
		fprintf(out, ", \"known\": ");
		if (is_known)
			agent_json_str(out, reason);
		else
			fprintf(out, "null");
		fprintf(out, ", \"unchecked\": ");
		agent_json_str(out, r.unchecked);
		fprintf(out, ", \"requires\": [");
		for (unsigned k = 0; k < r.n_ids; k++) {
			fprintf(out, "%s", k ? ", " : "");
			agent_json_str(out, r.ids[k]);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "\n]}\n");
	fclose(out);
	printf("compliance (%s): %d scripts, %u failed, %u skipped, %u known deviations\n",
	       iut->name, argc - 3, failed, skipped, known);
	return failed ? 1 : 0;
}
