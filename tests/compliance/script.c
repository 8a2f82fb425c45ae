/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wire script interpreter: reads a case line by line and plays the IUT's peer, in virtual
 * time that starts at 1 s and moves only to the times the script names (and to the IUT's
 * own deadlines between them). What the IUT sends is queued as it is sent and taken, in
 * order, by the script's expectations. An IUT that runs in real time (settle_ns, iut.h) is
 * given that long to act before an expectation fails, and waited for as long before the
 * suite believes it sends nothing more.
 */
#include "compliance/script.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compliance/agent.h"
#include "compliance/fields.h"
#include "compliance/names.h"
#include "compliance/script_impl.h"
#include "proto/auth.h"
#include "proto/bytes.h"
#include "proto/checksum.h"
#include "proto/codec.h"

bool failf(struct run *run, const char *fmt, ...)
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

/* The argument key=value's value, or NULL. */
const char *arg(struct run *run, const char *key)
{
	size_t n = strlen(key);

	for (unsigned i = 1; i < run->argc; i++)
		if (!strncmp(run->argv[i], key, n) && run->argv[i][n] == '=')
			return run->argv[i] + n + 1;
	return NULL;
}

static struct var *var_of(struct run *run, const char *name)
{
	for (unsigned i = 0; i < run->n_vars; i++)
		if (!strcmp(run->vars[i].name, name))
			return &run->vars[i];
	return NULL;
}

/* A value: a number, a NAK kind or CLOSE reason by name, or $name an expectation took. */
static bool value_of(struct run *run, const char *s, uint64_t *v)
{
	const struct var *x;

	if (*s != '$')
		return parse_value(s, v);
	if (!(x = var_of(run, s + 1)))
		return failf(run, "%s: no earlier expectation took it", s);
	*v = x->value;
	return true;
}

bool arg_num(struct run *run, const char *key, uint64_t *v, uint64_t dflt)
{
	const char *s = arg(run, key);

	*v = dflt;
	if (s && !value_of(run, s, v))
		return failf(run, "%s=%s: not a number", key, s);
	return true;
}

/* Every key=value of the line is one of keys (a NULL-ended list): a misspelt key would
 * otherwise check nothing. */
bool only_keys(struct run *run, unsigned first, const char *const *keys)
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

bool collect_sent(struct run *run)
{
	struct iut_dgram *d = &run->scratch;

	for (;;) {
		/* what an adapter does not say stays unknown, not the last datagram's */
		d->ecn = IUT_ECN_UNKNOWN;
		d->df = -1;
		d->dport = 0;
		memset(d->addr, 0, sizeof(d->addr));
		if (!run->iut->collect(run->h, d, run->now))
			break;
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

		if (!collect_sent(run))
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
	if (run->iut->settle_ns) /* its clock: it waits until t comes */
		run->iut->advance(run->h, run->now);
	return collect_sent(run);
}


/* A real-time IUT acts after a while: what it sends meanwhile, a millisecond later. */
bool wait_a_little(struct run *run)
{
	struct timespec ms = { 0, 1000000 };

	nanosleep(&ms, NULL);
	return collect_sent(run);
}

/* check() holds, or has had the IUT's settle time to come to hold: only checks that take
 * nothing away are retried (the failure of the last try is the one reported). */
static bool settled(struct run *run, bool (*check)(struct run *))
{
	uint64_t end = agent_clock_ns() + run->iut->settle_ns;

	for (;;) {
		struct script_result before = *run->r;

		if (check(run))
			return true;
		if (!run->iut->settle_ns || agent_clock_ns() >= end)
			return false;
		*run->r = before;
		if (!wait_a_little(run))
			return false;
	}
}

/*
 * The IUT has had time to send anything more it was going to: at the end of a script its
 * settle time; within one ("> none", no_wc: nothing at this moment) a twentieth of it, as
 * long as a packet takes to come back, not so long that the IUT's timers run meanwhile.
 */
bool quiet(struct run *run, bool at_end)
{
	uint64_t end = agent_clock_ns() + run->iut->settle_ns / (at_end ? 1 : 20);

	while (run->iut->settle_ns && agent_clock_ns() < end)
		if (!wait_a_little(run))
			return false;
	return true;
}

/* The first queued packet sent on plane (any plane: -1), or -1. */
static int first_on(const struct run *run, int plane)
{
	for (unsigned i = 0; i < run->q_n; i++)
		if (plane < 0 || run->queue[(run->q_head + i) % QUEUE].d.plane == plane)
			return (int)i;
	return -1;
}

/*
 * A packet of the IUT's on that plane (any: -1) is queued, or it had its settle time to send
 * one. That packet goes to the head of the queue: the network keeps a plane's packets in
 * order, not one plane's against another's (an IUT with a socket a plane, as metaroced has,
 * is read plane by plane).
 */
static bool queued(struct run *run, int plane)
{
	uint64_t end = agent_clock_ns() + run->iut->settle_ns;
	int at;

	while ((at = first_on(run, plane)) < 0 && run->iut->settle_ns && agent_clock_ns() < end)
		if (!wait_a_little(run))
			return false;
	for (; at > 0; at--) {
		struct sent *a = &run->queue[(run->q_head + (unsigned)at - 1) % QUEUE];
		struct sent *b = &run->queue[(run->q_head + (unsigned)at) % QUEUE];
		struct sent t = *a;

		*a = *b;
		*b = t;
	}
	return true;
}

/* --- lines ------------------------------------------------------------------------------ */

static bool line_setup(struct run *run)
{
	static const char *const keys[] = { "qpn", "peer_qpn", "psn", "peer_psn", "max_payload",
					    "paths", "rq_depth", "mr_key", "mr_addr", "mr_len",
					    "retry_cnt", "rnr_retry", "peer_sport", "access",
					    "ignore", "planes", "rtr", "qp_access", "discovery",
					    "node_id", "peer_node_id", "derive_psn", "auth",
					    "rx_capacity_kbps", "ud", "qkey", "peer_qkey", "mw",
					    NULL };
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
	NUM("planes", c->n_planes)
	NUM("rtr", c->at_rtr)
	NUM("discovery", c->discovery)
	NUM("node_id", c->node_id)
	NUM("peer_node_id", c->peer_node_id)
	NUM("derive_psn", run->derive_psn)
	NUM("auth", c->auth)
	NUM("rx_capacity_kbps", c->rx_capacity_kbps)
	NUM("ud", c->ud)
	NUM("qkey", c->qkey)
	NUM("peer_qkey", c->peer_qkey)
	NUM("mw", c->mw)
#undef NUM
	if (!c->n_paths || c->n_paths > IUT_MAX_PATHS)
		return failf(run, "paths=%u: 1 to %u", c->n_paths, IUT_MAX_PATHS);
	if (!c->n_planes || c->n_paths % c->n_planes)
		return failf(run, "planes=%u: the paths fall into that many equal runs", c->n_planes);
	for (unsigned i = 0; i < c->n_paths; i++)
		c->sports[i] = (uint16_t)(49152 + i);
	if ((s = arg(run, "access"))) {
		c->mr_remote_write = strchr(s, 'w');
		c->mr_remote_read = strchr(s, 'r');
		c->mr_remote_atomic = strchr(s, 'a');
	}
	if ((s = arg(run, "qp_access"))) {
		c->qp_remote_write = strchr(s, 'w');
		c->qp_remote_read = strchr(s, 'r');
		c->qp_remote_atomic = strchr(s, 'a');
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
	run->names.script = run->cfg;
	run->names.iut = run->cfg;
	errno = 0;
	run->h = run->iut->open(run->iut, &run->names.iut, run->now, err, sizeof(err));
	if (!run->h && errno == EOPNOTSUPP) {
		failf(run, "%s", err);
		run->r->skipped = true;
		return false;
	}
	if (!run->h)
		return failf(run, "the IUT could not make the QP: %s", err);
	run->open = true;
	if (run->derive_psn) { /* whatever the IUT says: its packets must bear these */
		struct iut_config *i = &run->names.iut;

		i->psn = names_r116_psn(i->node_id, i->qpn, i->peer_node_id, i->peer_qpn);
		i->peer_psn = names_r116_psn(i->peer_node_id, i->peer_qpn, i->node_id, i->qpn);
	}
	return true;
}

static struct mrc_auth_key auth_key(const uint8_t bytes[16])
{
	return (struct mrc_auth_key){ load_le64(bytes), load_le64(bytes + 8) };
}

/* What a line "<" takes besides the packet's fields: its payload and how it travels. */
static const char *const extras[] = { "len", "fill", "plane", "sport", "ce", "corrupt",
				      "poke", "truncate", "sack", "records", "drained", "from",
				      "tag", "key" };

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
	char buf[1024], *tok, *save;

	memset(sack, 0, MRC_SACK_BYTES);
	if (!strcmp(list, "none"))
		return true;
	if (strlen(list) >= sizeof(buf))
		return failf(run, "sack=: a list of up to %zu characters", sizeof(buf) - 1);
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
	const char *tag;
	bool csum = false, discovery;
	size_t out;
	int e;

	if (run->argc < 2 || !parse_opcode(run->argv[1], &p.opcode))
		return failf(run, "< needs an opcode");
	discovery = p.opcode == MRC_OP_DISCOVER || p.opcode == MRC_OP_DISCOVER_REPLY;
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
	if (discovery) {
		p.dst_qpn = 0; /* the node's, and what the suite's node announces */
		p.u.discover = (struct mrc_discover){ .node_id = run->cfg.peer_node_id,
						      .udp_port = MRC_UDP_PORT_DEFAULT,
						      .max_payload = 1024 };
		if (!discover_fill(run, &p))
			return false;
	} else if (mrc_opcode_is_ud(p.opcode)) { /* from the suite's UD QP, under the IUT's qkey */
		p.u.ud.src_qpn = run->cfg.peer_qpn;
		p.u.ud.qkey = run->cfg.qkey;
	}
	if (!discovery && (arg(run, "records") || arg(run, "drained") || arg(run, "key")))
		return failf(run, "records=, drained= and key= are a DISCOVER's or a "
				  "DISCOVER_REPLY's");
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
		if (!value_of(run, eq + 1, &v))
			return failf(run, "%s: not a value", run->argv[i]);
		field_set(&p, f, v);
	}
	if (arg(run, "sack") && p.opcode != MRC_OP_ACK)
		return failf(run, "sack= is an ACK's");
	if ((tag = arg(run, "tag")) && (!run->cfg.auth || (strcmp(tag, "omit") &&
							   strcmp(tag, "wrong"))))
		return failf(run, "tag=omit or tag=wrong, with setup auth=1");
	if (arg(run, "key") && !run->cfg.auth)
		return failf(run, "key= names whose keys tag a DISCOVER*: with setup auth=1");
	if (run->cfg.auth && !(tag && !strcmp(tag, "omit")))
		p.flags |= MRC_F_AUTH;
	if (arg(run, "sack") && !sack_parse(run, arg(run, "sack"), p.u.ack.sack))
		return false;
	fields_rename_for_iut(&p, &run->names);
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
	if (!discover_from(run, d))
		return false;
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
	if ((p.flags & MRC_F_AUTH) && discovery) { /* public key and tag */
		if (!discover_auth_seal(run, d))
			return false;
	} else if (p.flags & MRC_F_AUTH) { /* the headers as sent, checksum included */
		const struct mrc_auth_key k = auth_key(run->names.iut.key_to_iut);

		if ((size_t)d->len + MRC_AUTH_TAG_LEN > sizeof(d->bytes))
			return failf(run, "no room for the tag");
		mrc_auth_put_tag(&k, d->bytes, mrc_header_len(p.opcode), d->bytes + d->len);
		if (tag && !strcmp(tag, "wrong"))
			d->bytes[d->len] ^= 0x01;
		d->len += MRC_AUTH_TAG_LEN;
	}
	if (arg(run, "corrupt")) /* the checksum no longer matches */
		d->bytes[offsetof(struct mrc_hdr, csum)] ^= 0x01;
	if (!arg_num(run, "truncate", &v, d->len))
		return false;
	if (v < d->len)
		d->len = (uint16_t)v;
	run->iut->deliver(run->h, d, run->now);
	return collect_sent(run);
}

/*
 * One key=value (or key!=value: anything else; key>=value: at least) of a packet the IUT sent:
 * a field by its name, len= and fill= its payload, sack= an ACK's bits, sport=, plane=, to=
 * and dport= how it travelled, ecn= and df= its IP header, records= and drained= a DISCOVER*'s
 * records. A value $name not yet taken takes the packet's, for the lines after.
 */
static bool expect_field(struct run *run, const struct mrc_packet *p, const struct iut_dgram *d,
			 const char *word)
{
	const char *eq = strchr(word, '='), *name = mrc_opcode_name(p->opcode);
	bool differ = eq && eq > word && eq[-1] == '!';
	bool at_least = eq && eq > word && eq[-1] == '>';
	const struct field *f = NULL;
	uint64_t v, have;
	char key[32];
	int done;

	if (!eq || (size_t)(eq - word) - differ - at_least >= sizeof(key))
		return failf(run, "%s: expected key=value, key!=value or key>=value", word);
	snprintf(key, sizeof(key), "%.*s", (int)(eq - word - differ - at_least), word);
	if (!strcmp(eq + 1, "*"))
		return true;
	if (!differ && !at_least && (done = discover_expect(run, p, d, key, eq + 1)) >= 0)
		return done;
	if (!strcmp(key, "sack") && p->opcode == MRC_OP_ACK && !differ) {
		uint8_t want[MRC_SACK_BYTES];

		if (!sack_parse(run, eq + 1, want))
			return false;
		return !memcmp(want, p->u.ack.sack, sizeof(want)) ||
		       failf(run, "ack: the SACK bits are not %s", eq + 1);
	}
	if (!strcmp(key, "fill") && !differ) {
		if (!value_of(run, eq + 1, &v))
			return false;
		for (unsigned k = 0; k < p->payload_len; k++)
			if (p->payload[k] != (uint8_t)v)
				return failf(run, "%s: payload byte %u is 0x%02x, expected 0x%02llx",
					     name, k, p->payload[k], (unsigned long long)v);
		return true;
	}
	if (!strcmp(key, "len"))
		have = p->payload_len;
	else if (!strcmp(key, "sport"))
		have = d->sport;
	else if (!strcmp(key, "plane"))
		have = d->plane;
	else if (!strcmp(key, "dport"))
		have = d->dport;
	else if ((!strcmp(key, "ecn") && d->ecn == IUT_ECN_UNKNOWN) ||
		 (!strcmp(key, "df") && d->df < 0))
		return failf(run, "%s=: the adapter did not see this packet's IP header%s", key,
			     run->iut->node ? "" : " (a script that checks it needs node)");
	else if (!strcmp(key, "ecn"))
		have = d->ecn;
	else if (!strcmp(key, "df"))
		have = (uint64_t)d->df;
	else if ((f = field_of(key, p->opcode)))
		have = names_in_script(&run->names, p->opcode, key, false, field_get(p, f));
	else
		return failf(run, "%s has no field %s", name, key);
	if (eq[1] == '$' && !var_of(run, eq + 2)) {
		if (differ || at_least || run->n_vars == MAX_VARS ||
		    strlen(eq + 2) >= sizeof(run->vars[0].name))
			return failf(run, "%s: takes a value only as key=$name, %u at most", word,
				     MAX_VARS);
		snprintf(run->vars[run->n_vars].name, sizeof(run->vars[0].name), "%s", eq + 2);
		run->vars[run->n_vars++].value = have;
		return true;
	}
	if (!value_of(run, eq + 1, &v))
		return failf(run, "%s: not a value", word);
	if (differ ? have != v : at_least ? have >= v : have == v)
		return true;
	return failf(run, "%s: %s is %llu, expected %s%llu", name, key, (unsigned long long)have,
		     differ ? "anything but " : at_least ? "at least " : "", (unsigned long long)v);
}

static bool line_expect(struct run *run)
{
	struct sent *s;
	struct mrc_packet p;
	const char *plane;
	uint8_t opcode;
	uint64_t v;
	int e;

	if (run->argc < 2)
		return failf(run, "> needs an opcode or none");
	if (!strcmp(run->argv[1], "none")) {
		if (!quiet(run, false))
			return false;
		if (!run->q_n)
			return true;
		s = &run->queue[run->q_head];
		return failf(run, "expected nothing, the IUT sent %s",
			     s->d.len >= 2 ? mrc_opcode_name(s->d.bytes[1]) : "a runt");
	}
	if (!parse_opcode(run->argv[1], &opcode))
		return failf(run, "no opcode %s", run->argv[1]);
	plane = arg(run, "plane");
	if (!queued(run, plane && parse_value(plane, &v) ? (int)v : -1))
		return false;
	if (!run->q_n)
		return failf(run, "expected %s, the IUT sent nothing", mrc_opcode_name(opcode));
	s = &run->queue[run->q_head];
	run->q_head = (run->q_head + 1) % QUEUE;
	run->taken++;
	run->q_n--;
	e = mrc_decode(s->d.bytes, s->d.len, &p);
	if (e)
		return failf(run, "expected %s, the IUT sent a malformed packet (%s)",
			     mrc_opcode_name(opcode), mrc_wire_error_name(e));
	if (p.opcode != opcode)
		return failf(run, "expected %s, the IUT sent %s (psn %u)", mrc_opcode_name(opcode),
			     mrc_opcode_name(p.opcode), p.psn);
	if (run->cfg.auth && (opcode == MRC_OP_DISCOVER || opcode == MRC_OP_DISCOVER_REPLY)) {
		if (!discover_auth_check(run, &p))
			return false;
	} else if (run->cfg.auth) { /* every packet of an authenticated QP, its key's tag */
		const struct mrc_auth_key k = auth_key(run->names.iut.key_from_iut);

		if (!(p.flags & MRC_F_AUTH) || !mrc_auth_packet_ok(&k, &p))
			return failf(run, "%s: %s", mrc_opcode_name(opcode),
				     p.flags & MRC_F_AUTH ? "its tag is not the QP key's"
							  : "no AUTH flag, no tag");
	}
	for (unsigned i = 2; i < run->argc; i++)
		if (!expect_field(run, &p, &s->d, run->argv[i]))
			return false;
	return true;
}

/*
 * ">? OPCODE field=value ...": what the IUT MAY send (a MAY of the specification). The IUT has
 * a moment to send it; its next packet, if it is this one, is taken, and anything else stays
 * for the lines after.
 */
static bool line_maybe(struct run *run)
{
	struct script_result before;
	unsigned long taken;
	unsigned vars;

	if (!quiet(run, false))
		return false;
	if (!run->q_n)
		return true;
	before = *run->r;
	vars = run->n_vars;
	taken = run->taken;
	if (line_expect(run))
		return true;
	*run->r = before;
	run->n_vars = vars; /* nor what it took from the packet it did not take */
	/* the packet it took and found another goes back where it was, and what the IUT sent
	 * meanwhile stays queued behind it (the expectation may have brought a plane's first
	 * packet ahead of other planes': they are not ordered against each other anyway) */
	if (run->taken != taken) {
		run->q_head = (run->q_head + QUEUE - 1) % QUEUE;
		run->q_n++;
		run->taken = taken;
	}
	return true;
}

/*
 * ">* OPCODE field=value ...": any number of such packets, none included: what a real-time
 * IUT may have sent meanwhile more than once (a DISCOVER retransmitted while the script was
 * reading the last one, R-96). Each is taken, as ">?" takes one.
 */
static bool line_any(struct run *run)
{
	for (unsigned i = 0; i < QUEUE; i++) {
		unsigned long before = run->taken;

		if (!line_maybe(run))
			return false;
		if (run->taken == before) /* (a failed try takes nothing back: see line_maybe) */
			return true;
	}
	return true;
}

static bool line_verb(struct run *run, const char *verb);
static bool adapter_broke(struct run *run);

/* One timed line: "+SECONDS VERB ..." (after the last) or "SECONDS VERB ..." (from the start). */
static bool line_timed(struct run *run)
{
	const char *t = run->argv[0], *verb;
	char *end;
	bool ok;
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
	ok = line_verb(run, verb);
	return !adapter_broke(run) && ok;
}

/* A broken adapter is the reason, whatever the line it broke on then found. */
static bool adapter_broke(struct run *run)
{
	const char *why = run->iut->fault ? run->iut->fault(run->h) : NULL;

	if (!why)
		return false;
	run->r->pass = false;
	run->r->line = run->line;
	snprintf(run->r->why, sizeof(run->r->why), "the adapter broke: %s", why);
	return true;
}

static bool line_verb(struct run *run, const char *verb)
{
	if (!strcmp(verb, "drain") || !strcmp(verb, "undrain") || !strcmp(verb, "destroy") ||
	    !strcmp(verb, "ready"))
		return line_operation(run, verb);
	if (!strcmp(verb, "<"))
		return line_send(run);
	if (!strcmp(verb, ">"))
		return line_expect(run);
	if (!strcmp(verb, ">?"))
		return line_maybe(run);
	if (!strcmp(verb, ">*"))
		return line_any(run);
	if (!strcmp(verb, "post"))
		return line_post(run);
	if (!strcmp(verb, "wc"))
		return line_wc(run);
	if (!strcmp(verb, "no_wc"))
		return line_no_wc(run);
	if (!strcmp(verb, "counter"))
		return settled(run, line_counter);
	if (!strcmp(verb, "memory"))
		return settled(run, line_memory_read);
	if (!strcmp(verb, "fill"))
		return line_memory(run, true);
	if (!strcmp(verb, "state"))
		return settled(run, line_state);
	if (!strcmp(verb, "keys"))
		return line_keys(run);
	return failf(run, "no verb %s", verb);
}

/*
 * "needs virtual-clock WHY": the case times the IUT more finely than real time can (an RNR
 * wait of microseconds, a 1 ms RTO, an ACK that must not come before a timer): an IUT with a
 * clock of its own skips it, with WHY. "needs engine-defaults WHY": the case relies on a
 * configuration its setup does not state (the engine's congestion window, READ limits, segment
 * size): an IUT with its own skips it. "needs node WHY": the case checks what a whole node
 * does beside its QPs' engines (addresses, IP headers, derived PSNs, UD, windows, iut.h's
 * node): a bare engine skips it.
 */
static bool line_needs(struct run *run)
{
	char why[256] = "";
	size_t at = 0;
	bool clock, node;

	if (run->argc < 3 ||
	    (strcmp(run->argv[1], "virtual-clock") && strcmp(run->argv[1], "engine-defaults") &&
	     strcmp(run->argv[1], "node")))
		return failf(run, "needs virtual-clock WHY, engine-defaults WHY or node WHY");
	clock = !strcmp(run->argv[1], "virtual-clock");
	node = !strcmp(run->argv[1], "node");
	for (unsigned i = 2; i < run->argc && at < sizeof(why); i++)
		at += (size_t)snprintf(why + at, sizeof(why) - at, "%s%s", i > 2 ? " " : "",
				       run->argv[i]);
	if (node ? run->iut->node : clock ? !run->iut->settle_ns : !run->iut->own_defaults)
		return true;
	failf(run, "needs %s: %s",
	      node ? "a whole node" : clock ? "a virtual clock" : "the engine's defaults", why);
	run->r->skipped = true;
	return false;
}

static void defaults(struct run *run)
{
	struct iut_config *c = &run->cfg;

	*c = (struct iut_config){ .qpn = 0x11, .peer_qpn = 0x22, .psn = 1000, .peer_psn = 5000,
				  .max_payload = 1024, .n_paths = 1, .n_planes = 1, .rq_depth = 16,
				  .mr_key = 0x100, .mr_addr = 0x10000, .mr_len = 65536,
				  .mr_remote_write = true, .mr_remote_read = true,
				  .mr_remote_atomic = true, .qp_remote_write = true,
				  .qp_remote_read = true, .qp_remote_atomic = true,
				  .retry_cnt = 7, .rnr_retry = 7, .node_id = 0x1001,
				  .peer_node_id = 0x2002, .qkey = 0x11111111,
				  .peer_qkey = 0x22222222 };
	c->sports[0] = 49152;
	for (unsigned i = 0; i < 16; i++) { /* two QP keys of the peer's choosing */
		c->key_to_iut[i] = (uint8_t)(0xa0 + i);
		c->key_from_iut[i] = (uint8_t)(0x50 + 3 * i);
	}
	for (unsigned i = 0; i < 32; i++) /* and the cluster's key */
		c->cluster_key[i] = (uint8_t)(0x0f ^ (7 * i));
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
		} else if (!strcmp(run->argv[0], "needs")) {
			ok = line_needs(run);
		} else if (!strcmp(run->argv[0], "setup")) {
			ok = line_setup(run);
		} else if (isdigit((unsigned char)run->argv[0][0]) || run->argv[0][0] == '+') {
			ok = line_timed(run);
		} else {
			ok = failf(run, "no directive %s", run->argv[0]);
		}
	}
	/* a case that ends with packets nobody expected has not said all the IUT did */
	if (ok && run->open)
		ok = quiet(run, true);
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
