/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the wire script interpreter: one run of a script, shared by script.c (the lines, the
 * IUT's clock and what it sends) and script_verbs.c (work requests, completions, counters,
 * memory, state and the operations some scripts need).
 */
#ifndef METAROCE_TESTS_COMPLIANCE_SCRIPT_IMPL_H
#define METAROCE_TESTS_COMPLIANCE_SCRIPT_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "compliance/iut.h"
#include "compliance/names.h"
#include "compliance/script.h"

#define QUEUE 64u
#define MAX_ARGS 32u
#define MAX_VARS 16u
#define START_NS 1000000000ull

struct sent {
	struct iut_dgram d;
	uint64_t at;
};

struct run {
	const struct iut_ops *iut;
	void *h;
	struct iut_config cfg; /* as the script's setup says */
	struct names names;    /* and as the IUT made it */
	bool open;
	uint64_t now;	  /* the IUT's clock */
	uint64_t line_at; /* the time of the last timed line */
	struct sent queue[QUEUE];
	unsigned q_head, q_n;
	unsigned long taken; /* packets expectations took from the queue */
	bool ignore[256]; /* opcodes the script's expectations skip */
	uint16_t peer_sport;
	bool derive_psn; /* the PSNs are the suite's own R-116 reading of the two nodes' ids */
	bool trace;
	struct script_result *r;
	unsigned line;
	char *argv[MAX_ARGS];
	unsigned argc;
	struct var {
		char name[24];
		uint64_t value; /* in the script's terms (names.h) */
	} vars[MAX_VARS];  /* $name: what an expectation took from a packet, for later lines */
	unsigned n_vars;
	struct iut_dgram scratch;
	uint8_t payload[IUT_MAX_DGRAM];
};

bool failf(struct run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The argument key=value's value, or NULL; as a number (or $name), or dflt when absent. */
const char *arg(struct run *run, const char *key);
bool arg_num(struct run *run, const char *key, uint64_t *v, uint64_t dflt);
/* Every key=value of the line from argv[first] on is one of keys (a NULL-ended list). */
bool only_keys(struct run *run, unsigned first, const char *const *keys);
/* What the IUT sent by now, queued for the expectations. */
bool collect_sent(struct run *run);
/* A real-time IUT: a millisecond more, and what it sent meanwhile. */
bool wait_a_little(struct run *run);
/* The IUT has had time to send anything more (its settle time at the end, a twentieth of it
 * within a script). */
bool quiet(struct run *run, bool at_end);

/* script_verbs.c */
bool line_post(struct run *run);
bool line_wc(struct run *run);
bool line_no_wc(struct run *run);
bool line_counter(struct run *run);
bool line_memory(struct run *run, bool write);
bool line_memory_read(struct run *run);
bool line_state(struct run *run);
bool line_operation(struct run *run, const char *verb);
bool line_keys(struct run *run);

/* script_discover.c: a DISCOVER*'s records from records= and drained=; a datagram's source
 * from from=; and an expectation's key to=, records= or drained= (-1: not one of these). */
struct mrc_packet;
bool discover_fill(struct run *run, struct mrc_packet *p);
bool discover_from(struct run *run, struct iut_dgram *d);
int discover_expect(struct run *run, const struct mrc_packet *p, const struct iut_dgram *d,
		    const char *key, const char *value);
/* With auth: a DISCOVER*'s trailer, by tag= and key=; and the check of the IUT's. */
bool discover_auth_seal(struct run *run, struct iut_dgram *d);
bool discover_auth_check(struct run *run, const struct mrc_packet *p);

#endif
