/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Wire scripts (tests/compliance/README.md has the language): one case per file, the packets
 * the suite sends and expects written with their fields, in virtual time, run against one
 * implementation under test through its adapter (iut.h).
 */
#ifndef METAROCE_TESTS_COMPLIANCE_SCRIPT_H
#define METAROCE_TESTS_COMPLIANCE_SCRIPT_H

#include <stdbool.h>

#include "compliance/iut.h"

#define SCRIPT_MAX_IDS 32u

struct script_result {
	bool pass;
	bool skipped;	/* the IUT cannot make this script's QP by design: why says why */
	unsigned line;	/* the line that failed; 0 for a pass */
	char why[512];	/* what was expected and what came instead */
	char unchecked[256]; /* the counters it names that the IUT does not keep */
	unsigned n_ids; /* the requirement ids the script names */
	char ids[SCRIPT_MAX_IDS][12];
};

/* Runs the script at path against a fresh QP of the IUT; false if it could not be read or
 * parsed (r->why says so, and it counts as a failure). */
bool script_run(const char *path, const struct iut_ops *iut, struct script_result *r);

#endif
