/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "compliance/names.h"

#include <string.h>

#include "proto/codec.h"

#define PSN_MASK 0xffffffffu /* PSNs are 32 bits, serial arithmetic (5.1) */

/* a PSN of the sequence space that starts at from, moved to the one that starts at to */
static uint64_t psn_moved(uint64_t v, uint32_t from, uint32_t to)
{
	return from == to ? v : (v - from + to) & PSN_MASK;
}

uint64_t names_on_wire(const struct names *n, uint8_t opcode, const char *field, bool to_iut,
		       uint64_t v)
{
	const struct iut_config *s = &n->script, *i = &n->iut;

	if (!strcmp(field, "dst_qpn"))
		return to_iut && v == s->qpn ? i->qpn : v;
	/* a sequenced packet's PSN is of its sender's sequence space; the others carry
	 * what they carry, whatever the PSNs */
	if (!strcmp(field, "psn") && mrc_opcode_is_sequenced(opcode))
		return to_iut ? psn_moved(v, s->peer_psn, i->peer_psn)
			      : psn_moved(v, s->psn, i->psn);
	/* an ACK's, NAK's or CLOSE's cum_psn and nak_psn are of its receiver's */
	if (!strcmp(field, "cum_psn") || !strcmp(field, "nak_psn"))
		return to_iut ? psn_moved(v, s->psn, i->psn)
			      : psn_moved(v, s->peer_psn, i->peer_psn);
	if (!strcmp(field, "rkey") || !strcmp(field, "sink_key"))
		return v == s->mr_key ? i->mr_key : v;
	/* the IUT's own node id, as it picked it (DISCOVER*) */
	if (!strcmp(field, "node_id"))
		return v == s->node_id ? i->node_id : v;
	if (!strcmp(field, "raddr") || !strcmp(field, "sink_addr"))
		return v >= s->mr_addr && v - s->mr_addr <= s->mr_len ? v - s->mr_addr + i->mr_addr
								       : v;
	return v;
}

/* one SplitMix64 step from the state x, as R-116 names it */
static uint64_t step(uint64_t x)
{
	uint64_t z = x + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t names_r116_psn(uint64_t na, uint32_t qa, uint64_t nb, uint32_t qb)
{
	uint64_t s = step(na) ^ nb;

	s = step(s) ^ ((uint64_t)qa << 32 | qb);
	return (uint32_t)step(s);
}

uint64_t names_in_script(const struct names *n, uint8_t opcode, const char *field, bool to_iut,
			 uint64_t v)
{
	const struct names back = { .script = n->iut, .iut = n->script };

	return names_on_wire(&back, opcode, field, to_iut, v);
}
