/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fields of a packet as scripts name them (`psn=`, `cum_psn=`, flag bits as `ack_req=`),
 * and their values: numbers, NAK kinds and CLOSE reasons by name, opcodes by name.
 */
#ifndef METAROCE_TESTS_COMPLIANCE_FIELDS_H
#define METAROCE_TESTS_COMPLIANCE_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compliance/names.h"
#include "proto/codec.h"

struct field {
	const char *name;
	unsigned classes; /* the opcodes whose packets have it */
	size_t off;	  /* in struct mrc_packet */
	unsigned size;
	uint16_t flag; /* a bit of flags, as a field of its own (0 or 1) */
};

/* The field of that name a packet of this opcode has, or NULL. */
const struct field *field_of(const char *name, uint8_t opcode);
uint64_t field_get(const struct mrc_packet *p, const struct field *f);
void field_set(struct mrc_packet *p, const struct field *f, uint64_t v);
/* A value as a number, or the name of a NAK kind or CLOSE reason. */
bool parse_value(const char *s, uint64_t *v);
/* An opcode by its name, in any case. */
bool parse_opcode(const char *s, uint8_t *opcode);
/* Every field of p the IUT may name otherwise (names.h), renamed for it. */
void fields_rename_for_iut(struct mrc_packet *p, const struct names *n);
/* A packet one IUT sent, renamed for another that plays its peer (the scenario matrix). */
void fields_relay(struct mrc_packet *p, const struct names *from, const struct names *to);

#endif
