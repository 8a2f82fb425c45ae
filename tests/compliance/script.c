/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wire script interpreter: reads a case line by line and plays the IUT's peer, in virtual
 * time that starts at 1 s and moves only to the times the script names (and to the IUT's
 * own deadlines between them). What the IUT sends is queued as it is sent and taken, in
 * order, by the script's expectations.
 */
#include "compliance/script.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/checksum.h"
#include "proto/codec.h"

#define QUEUE 64u
#define MAX_ARGS 32u
#define START_NS 1000000000ull

enum field_class {
	C_ALL = 0x01,
	C_DATA = 0x02,
	C_READ = 0x04,
	C_ATOMIC = 0x08,
	C_ACK = 0x10,
	C_NAK = 0x20,
	C_PROBE = 0x40,
	C_CLOSE = 0x80,
};

struct field {
	const char *name;
	unsigned classes;
	size_t off;
	unsigned size;
	uint16_t flag; /* a bit of flags, as a field of its own (0 or 1) */
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
};
#undef F
#undef FLAG

static const char *const close_reasons[] = { "normal", "error", "shutdown" };

struct sent {
	struct iut_dgram d;
	uint64_t at;
};

struct run {
	const struct iut_ops *iut;
	void *h;
	struct iut_config cfg;
	bool open;
	uint64_t now;	  /* the IUT's clock */
	uint64_t line_at; /* the time of the last timed line */
	struct sent queue[QUEUE];
	unsigned q_head, q_n;
	bool ignore[256]; /* opcodes the script's expectations skip */
	uint16_t peer_sport;
	bool trace;
	struct script_result *r;
	unsigned line;
	char *argv[MAX_ARGS];
	unsigned argc;
	struct iut_dgram scratch;
	uint8_t payload[IUT_MAX_DGRAM];
};

static bool failf(struct run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool failf(struct run *run, const char *fmt, ...)
{
	va_list ap;

	if (!run->r->pass)
		return false; /* the first failure is the one reported */
	run->r->pass = false;
	run->r->line = run->line;
	va_start(ap, fmt);
	vsnprintf(run->r->why, sizeof(run->r->why), fmt, ap);
	va_end(ap);
	return false;
}

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
	}
	return 0;
}

static const struct field *field_of(const char *name, uint8_t opcode)
{
	unsigned cls = class_of(opcode) | C_ALL;

	for (unsigned i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(fields[i].name, name) && (fields[i].classes & cls))
			return &fields[i];
	return NULL;
}

static uint64_t field_get(const struct mrc_packet *p, const struct field *f)
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

static void field_set(struct mrc_packet *p, const struct field *f, uint64_t v)
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
static bool parse_value(const char *s, uint64_t *v)
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

static bool parse_opcode(const char *s, uint8_t *opcode)
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

/* The argument key=value's value, or NULL. */
static const char *arg(struct run *run, const char *key)
{
	size_t n = strlen(key);

	for (unsigned i = 1; i < run->argc; i++)
		if (!strncmp(run->argv[i], key, n) && run->argv[i][n] == '=')
			return run->argv[i] + n + 1;
	return NULL;
}

static bool arg_num(struct run *run, const char *key, uint64_t *v, uint64_t dflt)
{
	const char *s = arg(run, key);

	*v = dflt;
	if (s && !parse_value(s, v))
		return failf(run, "%s=%s: not a number", key, s);
	return true;
}

/* Every key=value of the line is one of keys (a NULL-ended list): a misspelt key would
 * otherwise check nothing. */
static bool only_keys(struct run *run, unsigned first, const char *const *keys)
{
	for (unsigned i = first; i < run->argc; i++) {
		const char *eq = strchr(run->argv[i], '=');
		size_t n = eq ? (size_t)(eq - run->argv[i]) : strlen(run->argv[i]);
		const char *const *k;

		for (k = keys; *k; k++)
			if (strlen(*k) == n && !strncmp(*k, run->argv[i], n))
				break;
		if (!*k)
			return failf(run, "%s: no such key here", run->argv[i]);
	}
	return true;
}

/* --- the IUT's clock and what it sends -------------------------------------------------- */

/* COMPLIANCE_TRACE=1: every datagram the IUT sends, on stderr, for whoever writes a script */
static void trace(const struct run *run, const struct iut_dgram *d)
{
	struct mrc_packet p;
	int e = mrc_decode(d->bytes, d->len, &p);

	fprintf(stderr, "%10.6f  > %-12s", (double)(run->now - START_NS) / 1e9,
		e ? mrc_wire_error_name(e) : mrc_opcode_name(p.opcode));
	if (!e)
		fprintf(stderr, " psn=%u flags=0x%x path_id=%u sport=%u len=%u", p.psn, p.flags,
			p.path_id, d->sport, p.payload_len);
	if (!e && p.opcode == MRC_OP_ACK)
		fprintf(stderr, " cum_psn=%u", p.u.ack.cum_psn);
	fputc('\n', stderr);
}

static bool drain(struct run *run)
{
	struct iut_dgram *d = &run->scratch;

	while (run->iut->collect(run->h, d, run->now)) {
		if (run->trace)
			trace(run, d);
		if (d->len >= 2 && run->ignore[d->bytes[1]])
			continue;
		if (run->q_n == QUEUE)
			return failf(run, "the IUT sent %u packets no line took", QUEUE);
		run->queue[(run->q_head + run->q_n) % QUEUE] = (struct sent){ .at = run->now };
		run->queue[(run->q_head + run->q_n) % QUEUE].d = *d;
		run->q_n++;
	}
	return true;
}

/* Runs the IUT to time t: every deadline it has before, and what it sends meanwhile. */
static bool run_to(struct run *run, uint64_t t)
{
	for (unsigned steps = 0; steps < 1000000; steps++) {
		uint64_t next;

		if (!drain(run))
			return false;
		next = run->iut->deadline(run->h);
		if (next > t)
			break;
		if (next > run->now)
			run->now = next;
		run->iut->advance(run->h, run->now);
		if (run->iut->deadline(run->h) <= run->now && steps > 1000)
			return failf(run, "the IUT's deadline stays at %llu ns",
				     (unsigned long long)run->now);
	}
	if (t > run->now)
		run->now = t;
	return drain(run);
}

/* --- lines ------------------------------------------------------------------------------ */

static bool line_setup(struct run *run)
{
	static const char *const keys[] = { "qpn", "peer_qpn", "psn", "peer_psn", "max_payload",
					    "paths", "rq_depth", "mr_key", "mr_addr", "mr_len",
					    "retry_cnt", "rnr_retry", "peer_sport", "access",
					    "ignore", NULL };
	struct iut_config *c = &run->cfg;
	uint64_t v;
	const char *s;

	if (run->open)
		return failf(run, "setup after the first timed line");
	if (!only_keys(run, 1, keys))
		return false;
#define NUM(key, field)                                                          \
	if (!arg_num(run, key, &v, (uint64_t)(field)))                           \
		return false;                                                    \
	field = (__typeof__(field))v;                                            \
	if ((uint64_t)(field) != v)                                              \
		return failf(run, "%s=%llu: too large", key, (unsigned long long)v);
	NUM("qpn", c->qpn)
	NUM("peer_qpn", c->peer_qpn)
	NUM("psn", c->psn)
	NUM("peer_psn", c->peer_psn)
	NUM("max_payload", c->max_payload)
	NUM("paths", c->n_paths)
	NUM("rq_depth", c->rq_depth)
	NUM("mr_key", c->mr_key)
	NUM("mr_addr", c->mr_addr)
	NUM("mr_len", c->mr_len)
	NUM("retry_cnt", c->retry_cnt)
	NUM("rnr_retry", c->rnr_retry)
	NUM("peer_sport", run->peer_sport)
#undef NUM
	if (!c->n_paths || c->n_paths > IUT_MAX_PATHS)
		return failf(run, "paths=%u: 1 to %u", c->n_paths, IUT_MAX_PATHS);
	for (unsigned i = 0; i < c->n_paths; i++)
		c->sports[i] = (uint16_t)(49152 + i);
	if ((s = arg(run, "access"))) {
		c->mr_remote_write = strchr(s, 'w');
		c->mr_remote_read = strchr(s, 'r');
		c->mr_remote_atomic = strchr(s, 'a');
	}
	if ((s = arg(run, "ignore"))) {
		char list[128], *tok, *save;
		uint8_t op;

		memset(run->ignore, 0, sizeof(run->ignore));
		snprintf(list, sizeof(list), "%s", s);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "none"))
				continue;
			if (!parse_opcode(tok, &op))
				return failf(run, "ignore: no opcode %s", tok);
			run->ignore[op] = true;
		}
	}
	return true;
}

static bool ensure_open(struct run *run)
{
	char err[256];

	if (run->open)
		return true;
	run->h = run->iut->open(&run->cfg, run->now, err, sizeof(err));
	if (!run->h)
		return failf(run, "the IUT could not make the QP: %s", err);
	run->open = true;
	return true;
}

/* What a line "<" takes besides the packet's fields: its payload and how it travels. */
static const char *const extras[] = { "len", "fill", "plane", "sport", "ce", "corrupt",
				      "poke", "truncate", "sack" };

static bool is_extra(const char *a)
{
	for (unsigned i = 0; i < sizeof(extras) / sizeof(extras[0]); i++) {
		size_t n = strlen(extras[i]);

		if (!strncmp(a, extras[i], n) && (a[n] == '=' || !a[n]))
			return true;
	}
	return false;
}

/* sack=1,2,5: the SACK bits set, by offset from cum_psn ("none": no bit) */
static bool sack_parse(struct run *run, const char *list, uint8_t *sack)
{
	char buf[256], *tok, *save;

	memset(sack, 0, MRC_SACK_BYTES);
	if (!strcmp(list, "none"))
		return true;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long bit = strtoul(tok, &end, 0);

		if (*end || bit >= MRC_SACK_BITS)
			return failf(run, "sack=%s: offsets 0..%u", list, MRC_SACK_BITS - 1);
		sack[bit / 8] |= (uint8_t)(1u << (bit % 8));
	}
	return true;
}

static bool line_send(struct run *run)
{
	struct mrc_packet p = { 0 };
	struct iut_dgram *d = &run->scratch;
	uint64_t len, fill, v;
	bool csum = false;
	size_t out;
	int e;

	if (run->argc < 2 || !parse_opcode(run->argv[1], &p.opcode))
		return failf(run, "< needs an opcode");
	p.dst_qpn = run->cfg.qpn;
	p.tx_ts = (uint32_t)run->now;
	if (!arg_num(run, "len", &len, 0) || !arg_num(run, "fill", &fill, 0x5a))
		return false;
	if (len > sizeof(run->payload))
		return failf(run, "len=%llu: too long", (unsigned long long)len);
	memset(run->payload, (int)fill, len);
	p.payload = run->payload;
	p.payload_len = (uint16_t)len;
	if (mrc_opcode_is_data(p.opcode))
		p.u.data.msg_len = (uint32_t)len;
	for (unsigned i = 2; i < run->argc; i++) {
		char key[32];
		const char *eq = strchr(run->argv[i], '=');
		const struct field *f;

		if (is_extra(run->argv[i]))
			continue;
		if (!eq || (size_t)(eq - run->argv[i]) >= sizeof(key))
			return failf(run, "%s: expected key=value", run->argv[i]);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - run->argv[i]), run->argv[i]);
		f = field_of(key, p.opcode);
		if (!f)
			return failf(run, "%s has no field %s", mrc_opcode_name(p.opcode), key);
		if (!parse_value(eq + 1, &v))
			return failf(run, "%s: not a value", run->argv[i]);
		field_set(&p, f, v);
	}
	if (arg(run, "sack") && p.opcode != MRC_OP_ACK)
		return failf(run, "sack= is an ACK's");
	if (arg(run, "sack") && !sack_parse(run, arg(run, "sack"), p.u.ack.sack))
		return false;
	e = mrc_encode(&p, d->bytes, sizeof(d->bytes), &out);
	if (e)
		return failf(run, "the suite cannot encode this packet (%s): poke= makes a "
				  "malformed one", mrc_wire_error_name(e));
	d->len = (uint16_t)out;
	d->ce = false;
	for (unsigned i = 2; i < run->argc; i++)
		if (!strcmp(run->argv[i], "ce") || !strcmp(run->argv[i], "ce=1"))
			d->ce = true;
	if (!arg_num(run, "plane", &v, 0))
		return false;
	d->plane = (uint8_t)v;
	if (!arg_num(run, "sport", &v, run->peer_sport))
		return false;
	d->sport = (uint16_t)v;
	/* pokes make a packet the encoder would refuse; the checksum is then computed again, so
	 * the decoder's later checks see it (corrupt= breaks the checksum itself) */
	for (unsigned i = 2; i < run->argc; i++) {
		unsigned off, val;

		if (strncmp(run->argv[i], "poke=", 5))
			continue;
		if (sscanf(run->argv[i] + 5, "%i:%i", &off, &val) != 2 || off >= d->len ||
		    off - offsetof(struct mrc_hdr, csum) < 2)
			return failf(run, "%s: poke=OFFSET:BYTE within the packet, not its checksum",
				     run->argv[i]);
		d->bytes[off] = (uint8_t)val;
		csum = true;
	}
	if (csum) {
		uint16_t c;

		memset(d->bytes + offsetof(struct mrc_hdr, csum), 0, 2);
		c = mrc_csum_compute(d->bytes, d->len);
		d->bytes[offsetof(struct mrc_hdr, csum)] = (uint8_t)(c >> 8);
		d->bytes[offsetof(struct mrc_hdr, csum) + 1] = (uint8_t)c;
	}
	if (arg(run, "corrupt")) /* the checksum no longer matches */
		d->bytes[offsetof(struct mrc_hdr, csum)] ^= 0x01;
	if (!arg_num(run, "truncate", &v, d->len))
		return false;
	if (v < d->len)
		d->len = (uint16_t)v;
	run->iut->deliver(run->h, d, run->now);
	return drain(run);
}

static bool line_expect(struct run *run)
{
	struct sent *s;
	struct mrc_packet p;
	uint8_t opcode;
	uint64_t v;
	int e;

	if (run->argc < 2)
		return failf(run, "> needs an opcode or none");
	if (!strcmp(run->argv[1], "none")) {
		if (!run->q_n)
			return true;
		s = &run->queue[run->q_head];
		return failf(run, "expected nothing, the IUT sent %s",
			     s->d.len >= 2 ? mrc_opcode_name(s->d.bytes[1]) : "a runt");
	}
	if (!parse_opcode(run->argv[1], &opcode))
		return failf(run, "no opcode %s", run->argv[1]);
	if (!run->q_n)
		return failf(run, "expected %s, the IUT sent nothing", mrc_opcode_name(opcode));
	s = &run->queue[run->q_head];
	run->q_head = (run->q_head + 1) % QUEUE;
	run->q_n--;
	e = mrc_decode(s->d.bytes, s->d.len, &p);
	if (e)
		return failf(run, "expected %s, the IUT sent a malformed packet (%s)",
			     mrc_opcode_name(opcode), mrc_wire_error_name(e));
	if (p.opcode != opcode)
		return failf(run, "expected %s, the IUT sent %s (psn %u)", mrc_opcode_name(opcode),
			     mrc_opcode_name(p.opcode), p.psn);
	for (unsigned i = 2; i < run->argc; i++) {
		char key[32];
		const char *eq = strchr(run->argv[i], '=');
		const struct field *f;

		if (!eq || (size_t)(eq - run->argv[i]) >= sizeof(key))
			return failf(run, "%s: expected key=value", run->argv[i]);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - run->argv[i]), run->argv[i]);
		if (strcmp(key, "len") && strcmp(key, "fill") &&
		    (strcmp(key, "sack") || opcode != MRC_OP_ACK) && !field_of(key, opcode))
			return failf(run, "%s has no field %s", mrc_opcode_name(opcode), key);
		if (!strcmp(eq + 1, "*"))
			continue;
		if (!strcmp(key, "sack")) {
			uint8_t want[MRC_SACK_BYTES];

			if (!sack_parse(run, eq + 1, want))
				return false;
			if (memcmp(want, p.u.ack.sack, sizeof(want)))
				return failf(run, "ack: the SACK bits are not %s", eq + 1);
			continue;
		}
		if (!parse_value(eq + 1, &v))
			return failf(run, "%s: not a value", run->argv[i]);
		if (!strcmp(key, "len")) {
			if (p.payload_len != v)
				return failf(run, "%s: len %u, expected %llu", mrc_opcode_name(opcode),
					     p.payload_len, (unsigned long long)v);
			continue;
		}
		if (!strcmp(key, "fill")) {
			for (unsigned k = 0; k < p.payload_len; k++)
				if (p.payload[k] != (uint8_t)v)
					return failf(run, "%s: payload byte %u is 0x%02x, expected "
							  "0x%02llx", mrc_opcode_name(opcode), k,
						     p.payload[k], (unsigned long long)v);
			continue;
		}
		f = field_of(key, opcode);
		if (!f)
			return failf(run, "%s has no field %s", mrc_opcode_name(opcode), key);
		if (field_get(&p, f) != v)
			return failf(run, "%s: %s is %llu, expected %llu", mrc_opcode_name(opcode), key,
				     (unsigned long long)field_get(&p, f), (unsigned long long)v);
	}
	return true;
}

static bool line_post(struct run *run)
{
	static const char *const kinds[] = { [IUT_WR_WRITE] = "write", [IUT_WR_WRITE_IMM] = "write_imm",
					     [IUT_WR_SEND] = "send",   [IUT_WR_SEND_IMM] = "send_imm",
					     [IUT_WR_READ] = "read",   [IUT_WR_RECV] = "recv" };
	struct iut_wr wr = { 0 };
	uint64_t id, off, len, rkey, raddr, imm;
	unsigned k;
	int e;

	static const char *const keys[] = { "id", "off", "len", "rkey", "raddr", "imm", NULL };

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (run->argc >= 2 && !strcmp(run->argv[1], kinds[k]))
			break;
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		return failf(run, "post needs write, write_imm, send, send_imm, read or recv");
	if (!only_keys(run, 2, keys))
		return false;
	if (!arg_num(run, "id", &id, 0) || !arg_num(run, "off", &off, 0) ||
	    !arg_num(run, "len", &len, 0) || !arg_num(run, "rkey", &rkey, 0) ||
	    !arg_num(run, "raddr", &raddr, 0) || !arg_num(run, "imm", &imm, 0))
		return false;
	wr = (struct iut_wr){ .kind = (uint8_t)k, .wr_id = id, .off = (uint32_t)off,
			      .len = (uint32_t)len, .rkey = (uint32_t)rkey, .raddr = raddr,
			      .imm = (uint32_t)imm };
	e = run->iut->post(run->h, &wr, run->now);
	if (e)
		return failf(run, "the IUT refused post %s: %s", kinds[k], strerror(-e));
	return drain(run);
}

static bool line_wc(struct run *run)
{
	static const char *const keys[] = { "status", "opcode", "id", "len", "imm", NULL };
	struct iut_wc wc;
	const char *s;
	uint64_t v;

	if (!only_keys(run, 1, keys))
		return false;
	if (!run->iut->poll(run->h, &wc))
		return failf(run, "expected a completion, there is none");
	if ((s = arg(run, "status")) && strcmp(s, wc.status))
		return failf(run, "completion %llu: status %s, expected %s",
			     (unsigned long long)wc.wr_id, wc.status, s);
	if ((s = arg(run, "opcode")) && strcmp(s, wc.opcode))
		return failf(run, "completion %llu: opcode %s, expected %s",
			     (unsigned long long)wc.wr_id, wc.opcode, s);
	if (arg(run, "id") && (!arg_num(run, "id", &v, 0) || v != wc.wr_id))
		return failf(run, "completion %llu, expected %llu", (unsigned long long)wc.wr_id,
			     (unsigned long long)v);
	if (arg(run, "len") && (!arg_num(run, "len", &v, 0) || v != wc.byte_len))
		return failf(run, "completion %llu: byte_len %u, expected %llu",
			     (unsigned long long)wc.wr_id, wc.byte_len, (unsigned long long)v);
	if (arg(run, "imm") && (!arg_num(run, "imm", &v, 0) || !wc.with_imm || v != wc.imm))
		return failf(run, "completion %llu: imm %s%u, expected %llu",
			     (unsigned long long)wc.wr_id, wc.with_imm ? "" : "none ", wc.imm,
			     (unsigned long long)v);
	return true;
}

static bool line_no_wc(struct run *run)
{
	struct iut_wc wc;

	if (run->iut->poll(run->h, &wc))
		return failf(run, "expected no completion, there is %llu (%s, %s)",
			     (unsigned long long)wc.wr_id, wc.opcode, wc.status);
	return true;
}

static bool line_counter(struct run *run)
{
	for (unsigned i = 1; i < run->argc; i++) {
		char name[64];
		const char *op = strpbrk(run->argv[i], ">=");
		bool at_least = op && op[0] == '>';
		uint64_t want, have;

		if (!op || (at_least && op[1] != '=') || (size_t)(op - run->argv[i]) >= sizeof(name))
			return failf(run, "%s: counter NAME=V or NAME>=V", run->argv[i]);
		snprintf(name, sizeof(name), "%.*s", (int)(op - run->argv[i]), run->argv[i]);
		if (!parse_value(op + (at_least ? 2 : 1), &want))
			return failf(run, "%s: not a number", run->argv[i]);
		if (!run->iut->counter(run->h, name, &have))
			return failf(run, "the IUT keeps no counter %s", name);
		if (at_least ? have < want : have != want)
			return failf(run, "counter %s is %llu, expected %s%llu", name,
				     (unsigned long long)have, at_least ? ">= " : "",
				     (unsigned long long)want);
	}
	return true;
}

static bool line_memory(struct run *run, bool write)
{
	static const char *const keys[] = { "off", "len", "fill", NULL };
	uint64_t off, len, fill;
	const uint8_t *m;

	if (!only_keys(run, 1, keys) || !arg_num(run, "off", &off, 0) ||
	    !arg_num(run, "len", &len, 0) || !arg_num(run, "fill", &fill, 0))
		return false;
	if (!len || !arg(run, "fill"))
		return failf(run, "%s needs len= (not 0) and fill=", run->argv[0]);
	if (off > run->cfg.mr_len || len > run->cfg.mr_len - off)
		return failf(run, "off=%llu len=%llu: outside the region", (unsigned long long)off,
			     (unsigned long long)len);
	if (write) {
		run->iut->fill(run->h, (uint32_t)off, (uint32_t)len, (uint8_t)fill);
		return true;
	}
	m = run->iut->memory(run->h);
	for (uint64_t i = 0; i < len; i++)
		if (m[off + i] != (uint8_t)fill)
			return failf(run, "memory byte %llu is 0x%02x, expected 0x%02llx",
				     (unsigned long long)(off + i), m[off + i],
				     (unsigned long long)fill);
	return true;
}

static bool line_state(struct run *run)
{
	const char *have = run->iut->state(run->h);

	if (run->argc != 2)
		return failf(run, "state NAME");
	if (strcmp(have, run->argv[1]))
		return failf(run, "the QP is in %s, expected %s", have, run->argv[1]);
	return true;
}

/* One timed line: "+SECONDS VERB ..." (after the last) or "SECONDS VERB ..." (from the start). */
static bool line_timed(struct run *run)
{
	const char *t = run->argv[0], *verb;
	char *end;
	double sec = strtod(t + (*t == '+'), &end);
	uint64_t at;

	if (*end || !(sec >= 0 && sec <= 3600))
		return failf(run, "%s: a time in seconds, up to an hour", t);
	at = (uint64_t)(sec * 1e9 + 0.5);
	at = *t == '+' ? run->line_at + at : START_NS + at;
	if (at < run->line_at)
		return failf(run, "%s goes back in time", t);
	run->line_at = at;
	if (!ensure_open(run) || !run_to(run, at))
		return false;
	/* the verb becomes argv[0]'s successor: shift */
	memmove(run->argv, run->argv + 1, (run->argc - 1) * sizeof(run->argv[0]));
	run->argc--;
	if (!run->argc)
		return failf(run, "a time and nothing to do");
	verb = run->argv[0];
	if (!strcmp(verb, "<"))
		return line_send(run);
	if (!strcmp(verb, ">"))
		return line_expect(run);
	if (!strcmp(verb, "post"))
		return line_post(run);
	if (!strcmp(verb, "wc"))
		return line_wc(run);
	if (!strcmp(verb, "no_wc"))
		return line_no_wc(run);
	if (!strcmp(verb, "counter"))
		return line_counter(run);
	if (!strcmp(verb, "memory"))
		return line_memory(run, false);
	if (!strcmp(verb, "fill"))
		return line_memory(run, true);
	if (!strcmp(verb, "state"))
		return line_state(run);
	return failf(run, "no verb %s", verb);
}

static void defaults(struct run *run)
{
	struct iut_config *c = &run->cfg;

	*c = (struct iut_config){ .qpn = 0x11, .peer_qpn = 0x22, .psn = 1000, .peer_psn = 5000,
				  .max_payload = 1024, .n_paths = 1, .rq_depth = 16,
				  .mr_key = 0x100, .mr_addr = 0x10000, .mr_len = 65536,
				  .mr_remote_write = true, .mr_remote_read = true,
				  .mr_remote_atomic = true, .retry_cnt = 7, .rnr_retry = 7 };
	c->sports[0] = 49152;
	run->peer_sport = 50000;
	run->ignore[MRC_OP_PROBE] = true;
	run->now = START_NS;
	run->line_at = START_NS;
}

bool script_run(const char *path, const struct iut_ops *iut, struct script_result *r)
{
	FILE *f = fopen(path, "r");
	struct run *run;
	char buf[1024];
	bool ok = true;

	memset(r, 0, sizeof(*r));
	r->pass = true;
	if (!f) {
		r->pass = false;
		snprintf(r->why, sizeof(r->why), "cannot read %s", path);
		return false;
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		fclose(f);
		r->pass = false;
		snprintf(r->why, sizeof(r->why), "out of memory");
		return false;
	}
	run->iut = iut;
	run->r = r;
	run->trace = getenv("COMPLIANCE_TRACE") && strcmp(getenv("COMPLIANCE_TRACE"), "") &&
		     strcmp(getenv("COMPLIANCE_TRACE"), "0");
	defaults(run);
	while (ok && fgets(buf, sizeof(buf), f)) {
		char *hash = strchr(buf, '#'), *tok, *save;

		run->line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			ok = failf(run, "a line longer than %zu bytes", sizeof(buf) - 2);
			break;
		}
		if (hash)
			*hash = '\0';
		run->argc = 0;
		for (tok = strtok_r(buf, " \t\r\n", &save); tok;
		     tok = strtok_r(NULL, " \t\r\n", &save)) {
			if (run->argc == MAX_ARGS) {
				ok = failf(run, "more than %u words on a line", MAX_ARGS);
				break;
			}
			run->argv[run->argc++] = tok;
		}
		if (!ok)
			break;
		if (!run->argc)
			continue;
		if (!strcmp(run->argv[0], "requires")) {
			for (unsigned i = 1; i < run->argc && r->n_ids < SCRIPT_MAX_IDS; i++)
				snprintf(r->ids[r->n_ids++], sizeof(r->ids[0]), "%s", run->argv[i]);
		} else if (!strcmp(run->argv[0], "setup")) {
			ok = line_setup(run);
		} else if (isdigit((unsigned char)run->argv[0][0]) || run->argv[0][0] == '+') {
			ok = line_timed(run);
		} else {
			ok = failf(run, "no directive %s", run->argv[0]);
		}
	}
	/* a case that ends with packets nobody expected has not said all the IUT did */
	if (ok && run->q_n)
		failf(run, "the script ended with %u packets of the IUT's unexpected (first: %s)",
		      run->q_n, mrc_opcode_name(run->queue[run->q_head].d.bytes[1]));
	if (ok && !r->n_ids)
		failf(run, "the script names no requirement (requires R-N ...)");
	if (run->open)
		iut->close(run->h);
	fclose(f);
	free(run);
	return true;
}
