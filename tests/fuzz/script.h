/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fuzzer's input read as a script: each step takes the bytes it needs, big-endian, and
 * reads zeros once the input runs out, so every input is a complete script.
 */
#ifndef METAROCE_TESTS_FUZZ_SCRIPT_H
#define METAROCE_TESTS_FUZZ_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

struct script {
	const uint8_t *p;
	size_t left;
};

static inline uint64_t take(struct script *s, unsigned n)
{
	uint64_t v = 0;

	while (n--) {
		v = v << 8 | (s->left ? *s->p : 0);
		if (s->left) {
			s->p++;
			s->left--;
		}
	}
	return v;
}

#endif /* METAROCE_TESTS_FUZZ_SCRIPT_H */
