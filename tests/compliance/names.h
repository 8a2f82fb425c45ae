/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A script names the IUT's QPN, PSNs, key and region address by the values of its setup; an
 * IUT that picked its own (iut.h) has them renamed on the way: the suite's packets carry the
 * IUT's values where the script wrote the setup's, and the IUT's packets are read back in the
 * script's terms before they are compared.
 */
#ifndef METAROCE_TESTS_COMPLIANCE_NAMES_H
#define METAROCE_TESTS_COMPLIANCE_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "compliance/iut.h"

struct names {
	struct iut_config script; /* what the script's setup says */
	struct iut_config iut;	  /* what the IUT made (the same, for an IUT that took them) */
};

/*
 * The value field (a wire field's name, as scripts write it) of a packet of this opcode
 * carries, for value v as the script writes it: to_iut for a packet the suite sends, else
 * for one the IUT sent (whose field is then compared with the result).
 */
uint64_t names_on_wire(const struct names *n, uint8_t opcode, const char *field, bool to_iut,
		       uint64_t v);

/* The other way: the value as the script names it, of one a packet carries on the wire. */
uint64_t names_in_script(const struct names *n, uint8_t opcode, const char *field, bool to_iut,
			 uint64_t v);

/* The first PSN of the direction from QP qa of node na to QP qb of node nb, as SPEC R-116
 * defines it: the suite's own reading of the text, not the engine's code. */
uint32_t names_r116_psn(uint64_t na, uint32_t qa, uint64_t nb, uint32_t qb);

#endif
