/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The packet fields scripts name, by the specification's names, for each opcode's extension;
 * and the values scripts write for them.
 */
#include "compliance/fields.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum field_class {
	C_ALL = 0x01,
	C_DATA = 0x02,
	C_READ = 0x04,
	C_ATOMIC = 0x08,
	C_ACK = 0x10,
	C_NAK = 0x20,
	C_PROBE = 0x40,
	C_CLOSE = 0x80,
	C_DISCOVER = 0x100,
	C_UD = 0x200,
};

#define F(n, c, m) { n, c, offsetof(struct mrc_packet, m), sizeof(((struct mrc_packet *)0)->m), 0 }
#define FLAG(n, bit) { n, C_ALL, offsetof(struct mrc_packet, flags), 2, bit }
static const struct field fields[] = {
	F("flags", C_ALL, flags),
	F("dst_qpn", C_ALL, dst_qpn),
	F("psn", C_ALL, psn),
	F("tx_ts", C_ALL, tx_ts),
	F("path_id", C_ALL, path_id),
	FLAG("ack_req", MRC_F_ACK_REQ),
	FLAG("retx", MRC_F_RETX),
	FLAG("ece", MRC_F_ECE),
	FLAG("inorder", MRC_F_INORDER),
	FLAG("solicited", MRC_F_SOLICITED),
	F("msn", C_DATA, u.data.msn),
	F("rsn", C_DATA, u.data.rsn),
	F("msg_len", C_DATA, u.data.msg_len),
	F("msg_off", C_DATA, u.data.msg_off),
	F("rkey", C_DATA, u.data.rkey),
	F("imm", C_DATA, u.data.imm),
	F("raddr", C_DATA, u.data.raddr),
	F("msn", C_READ, u.read_req.msn),
	F("length", C_READ, u.read_req.length),
	F("rkey", C_READ, u.read_req.rkey),
	F("sink_key", C_READ, u.read_req.sink_key),
	F("raddr", C_READ, u.read_req.raddr),
	F("sink_addr", C_READ, u.read_req.sink_addr),
	F("msn", C_ATOMIC, u.atomic.msn),
	F("op", C_ATOMIC, u.atomic.op),
	F("rkey", C_ATOMIC, u.atomic.rkey),
	F("sink_key", C_ATOMIC, u.atomic.sink_key),
	F("raddr", C_ATOMIC, u.atomic.raddr),
	F("sink_addr", C_ATOMIC, u.atomic.sink_addr),
	F("swap_add", C_ATOMIC, u.atomic.swap_add),
	F("compare", C_ATOMIC, u.atomic.compare),
	F("cum_psn", C_ACK, u.ack.cum_psn),
	F("echo_ts", C_ACK, u.ack.echo_ts),
	F("ack_delay_ns", C_ACK, u.ack.ack_delay_ns),
	F("rate_hint_kbps", C_ACK, u.ack.rate_hint_kbps),
	F("echo_path", C_ACK, u.ack.echo_path),
	F("ce_count", C_ACK, u.ack.ce_count),
	F("queue_delay_ns", C_ACK, u.ack.queue_delay_ns),
	F("cum_psn", C_NAK, u.nak.cum_psn),
	F("nak_psn", C_NAK, u.nak.nak_psn),
	F("msn", C_NAK, u.nak.msn),
	F("kind", C_NAK, u.nak.kind),
	F("retry_after", C_NAK, u.nak.retry_after),
	F("nonce", C_PROBE, u.probe.nonce),
	F("echo_ts", C_PROBE, u.probe.echo_ts),
	F("echo_path", C_PROBE, u.probe.echo_path),
	F("reason", C_CLOSE, u.close.reason),
	F("cum_psn", C_CLOSE, u.close.cum_psn),
	F("node_id", C_DISCOVER, u.discover.node_id),
	F("udp_port", C_DISCOVER, u.discover.udp_port),
	F("max_payload", C_DISCOVER, u.discover.max_payload),
	F("n_addrs", C_DISCOVER, u.discover.n_addrs),
	F("src_qpn", C_UD, u.ud.src_qpn),
	F("qkey", C_UD, u.ud.qkey),
	F("imm", C_UD, u.ud.imm),
};
#undef F
#undef FLAG

static const char *const close_reasons[] = { "normal", "error", "shutdown" };

_Static_assert(IUT_MAX_PLANES == MRC_MAX_PLANES, "a plane the suite names is one the wire has");

static unsigned class_of(uint8_t opcode)
{
	if (mrc_opcode_is_data(opcode))
		return C_DATA;
	switch (opcode) {
	case MRC_OP_READ_REQ: return C_READ;
	case MRC_OP_ATOMIC_REQ: return C_ATOMIC;
	case MRC_OP_ACK: return C_ACK;
	case MRC_OP_NAK: return C_NAK;
	case MRC_OP_PROBE:
	case MRC_OP_PROBE_REPLY: return C_PROBE;
	case MRC_OP_CLOSE: return C_CLOSE;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY: return C_DISCOVER;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM: return C_UD;
	}
	return 0;
}

const struct field *field_of(const char *name, uint8_t opcode)
{
	unsigned cls = class_of(opcode) | C_ALL;

	for (unsigned i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(fields[i].name, name) && (fields[i].classes & cls))
			return &fields[i];
	return NULL;
}

uint64_t field_get(const struct mrc_packet *p, const struct field *f)
{
	const uint8_t *at = (const uint8_t *)p + f->off;
	uint64_t v = 0;

	switch (f->size) {
	case 1: v = *at; break;
	case 2: v = *(const uint16_t *)(const void *)at; break;
	case 4: v = *(const uint32_t *)(const void *)at; break;
	case 8: v = *(const uint64_t *)(const void *)at; break;
	}
	return f->flag ? !!(v & f->flag) : v;
}

void field_set(struct mrc_packet *p, const struct field *f, uint64_t v)
{
	uint8_t *at = (uint8_t *)p + f->off;

	if (f->flag) {
		p->flags = (uint16_t)(v ? p->flags | f->flag : p->flags & ~f->flag);
		return;
	}
	switch (f->size) {
	case 1: *at = (uint8_t)v; break;
	case 2: *(uint16_t *)(void *)at = (uint16_t)v; break;
	case 4: *(uint32_t *)(void *)at = (uint32_t)v; break;
	case 8: *(uint64_t *)(void *)at = v; break;
	}
}

/* A value as a number, or the name of a NAK kind or CLOSE reason. */
bool parse_value(const char *s, uint64_t *v)
{
	char *end;

	for (int k = 1; k <= MRC_NAK_KIND_MAX; k++)
		if (!strcmp(s, mrc_nak_kind_name((uint8_t)k))) {
			*v = (uint64_t)k;
			return true;
		}
	for (unsigned k = 0; k < sizeof(close_reasons) / sizeof(close_reasons[0]); k++)
		if (!strcmp(s, close_reasons[k])) {
			*v = k;
			return true;
		}
	*v = strtoull(s, &end, 0);
	return *s && !*end;
}

bool parse_opcode(const char *s, uint8_t *opcode)
{
	for (unsigned op = 0; op < 256; op++) {
		const char *name = mrc_opcode_name((uint8_t)op);

		if (mrc_opcode_is_known((uint8_t)op) && !strcasecmp(s, name)) {
			*opcode = (uint8_t)op;
			return true;
		}
	}
	return false;
}

void fields_rename_for_iut(struct mrc_packet *p, const struct names *n)
{
	unsigned cls = class_of(p->opcode) | C_ALL;

	for (unsigned i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!fields[i].flag && (fields[i].classes & cls))
			field_set(p, &fields[i],
				  names_on_wire(n, p->opcode, fields[i].name, true,
						field_get(p, &fields[i])));
}


void fields_relay(struct mrc_packet *p, const struct names *from, const struct names *to)
{
	unsigned cls = class_of(p->opcode) | C_ALL;

	for (unsigned i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!fields[i].flag && (fields[i].classes & cls))
			field_set(p, &fields[i],
				  names_on_wire(to, p->opcode, fields[i].name, true,
						names_in_script(from, p->opcode, fields[i].name,
								false, field_get(p, &fields[i]))));
}
