/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's end of the agent protocol (agent.h): one request line in, one answer line out,
 * each request an operation of the iut_ops it serves.
 */
#include "compliance/agent.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t agent_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void agent_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

unsigned agent_words(char *line, char **words, unsigned max)
{
	unsigned n = 0;
	char *save, *tok;

	for (tok = strtok_r(line, " \t\r\n", &save); tok && n < max;
	     tok = strtok_r(NULL, " \t\r\n", &save))
		words[n++] = tok;
	return n;
}

const char *agent_arg(char *const *words, unsigned n, const char *key)
{
	size_t k = strlen(key);

	for (unsigned i = 0; i < n; i++)
		if (!strncmp(words[i], key, k) && words[i][k] == '=')
			return words[i] + k + 1;
	return NULL;
}

bool agent_num(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
	return end != s && !*end && !errno;
}

void agent_hex_put(FILE *out, const uint8_t *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++)
		fprintf(out, "%02x", bytes[i]);
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

long agent_hex_get(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

void agent_addrs_put(FILE *out, const uint8_t (*addrs)[16], unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		agent_hex_put(out, addrs[i], 16);
	}
}

bool agent_addrs_get(const char *list, uint8_t (*addrs)[16], unsigned n)
{
	char one[33];

	for (unsigned i = 0; i < n; i++) {
		size_t len = list ? strcspn(list, ",") : 0;

		if (len != 32)
			return false;
		memcpy(one, list, 32);
		one[32] = '\0';
		if (agent_hex_get(one, addrs[i], 16) != 16)
			return false;
		list += 32;
		if (*list == ',')
			list++;
		else if (i + 1 < n)
			return false;
	}
	return !list || !*list;
}

struct served {
	const struct iut_ops *ops;
	void *iut;
	FILE *out;
	char **w;
	unsigned n;
	uint8_t buf[IUT_MAX_DGRAM > 65536 ? IUT_MAX_DGRAM : 65536];
};

/* key=number among the request's words; false (and the answer said) when it is missing */
static bool need(struct served *s, const char *key, uint64_t *v)
{
	if (agent_num(agent_arg(s->w, s->n, key), v))
		return true;
	fprintf(s->out, "error %s: no %s=NUMBER\n", s->w[0], key);
	return false;
}

/* An optional key=0|1 of the request: absent is 0; false (and the answer said) when it is
 * not a number. Such keys came with the setups after the protocol's first form. */
static bool flag(struct served *s, const char *key, bool *on)
{
	uint64_t v = 0;

	if (agent_arg(s->w, s->n, key) && !need(s, key, &v))
		return false;
	*on = v != 0;
	return true;
}

static void serve_open(struct served *s)
{
	struct iut_config c = { 0 };
	uint64_t now, v[11], planes = 1, rtr = 0;
	static const char *const keys[] = { "qpn", "peer_qpn", "psn", "peer_psn", "max_payload",
					    "paths", "rq_depth", "mr_key", "mr_addr", "mr_len",
					    "retry_cnt" };
	const char *access = agent_arg(s->w, s->n, "access"), *ports;
	const char *qp_access = agent_arg(s->w, s->n, "qp_access");
	char err[256] = "", *save, *tok, list[128];
	uint64_t rnr;

	if (s->iut) {
		fprintf(s->out, "error open: a QP is open (close it first)\n");
		return;
	}
	if (!need(s, "now", &now) || !need(s, "rnr_retry", &rnr))
		return;
	for (unsigned i = 0; i < 11; i++)
		if (!need(s, keys[i], &v[i]))
			return;
	c = (struct iut_config){ .qpn = (uint32_t)v[0], .peer_qpn = (uint32_t)v[1],
				 .psn = (uint32_t)v[2], .peer_psn = (uint32_t)v[3],
				 .max_payload = (uint16_t)v[4], .n_paths = (uint8_t)v[5],
				 .rq_depth = (uint32_t)v[6], .mr_key = (uint32_t)v[7],
				 .mr_addr = v[8], .mr_len = (uint32_t)v[9],
				 .retry_cnt = (uint8_t)v[10], .rnr_retry = (uint8_t)rnr };
	/* planes= and rtr= came with the protocol's operations drain and ready: absent, 1 and 0 */
	if (agent_arg(s->w, s->n, "planes") && !need(s, "planes", &planes))
		return;
	if (agent_arg(s->w, s->n, "rtr") && !need(s, "rtr", &rtr))
		return;
	c.n_planes = (uint8_t)planes;
	c.at_rtr = rtr != 0;
	if (!flag(s, "discovery", &c.discovery) ||
	    (c.discovery && (!need(s, "node_id", &c.node_id) ||
			     !need(s, "peer_node_id", &c.peer_node_id))))
		return;
	if (!flag(s, "auth", &c.auth))
		return;
	if (c.auth &&
	    (agent_hex_get(agent_arg(s->w, s->n, "key_to_iut") ?: "", c.key_to_iut, 16) != 16 ||
	     agent_hex_get(agent_arg(s->w, s->n, "key_from_iut") ?: "", c.key_from_iut, 16) != 16 ||
	     agent_hex_get(agent_arg(s->w, s->n, "cluster_key") ?: "", c.cluster_key, 32) != 32)) {
		fprintf(s->out, "error open: auth= needs key_to_iut=, key_from_iut= (16 bytes "
			"each) and cluster_key= (32), HEX\n");
		return;
	}
	if (agent_arg(s->w, s->n, "rx_capacity_kbps") &&
	    !need(s, "rx_capacity_kbps", &c.rx_capacity_kbps))
		return;
	if (!flag(s, "mw", &c.mw) || !flag(s, "ud", &c.ud))
		return;
	if (c.ud) {
		uint64_t qkey, peer_qkey;

		if (!need(s, "qkey", &qkey) || !need(s, "peer_qkey", &peer_qkey))
			return;
		c.qkey = (uint32_t)qkey;
		c.peer_qkey = (uint32_t)peer_qkey;
	}
	c.mr_remote_write = access && strchr(access, 'w');
	c.mr_remote_read = access && strchr(access, 'r');
	c.mr_remote_atomic = access && strchr(access, 'a');
	/* qp_access= came with R-220's scripts: absent, the QP permits every remote access */
	c.qp_remote_write = !qp_access || strchr(qp_access, 'w');
	c.qp_remote_read = !qp_access || strchr(qp_access, 'r');
	c.qp_remote_atomic = !qp_access || strchr(qp_access, 'a');
	ports = agent_arg(s->w, s->n, "sports");
	if (!c.n_paths || c.n_paths > IUT_MAX_PATHS || !ports || !c.n_planes ||
	    c.n_paths % c.n_planes) {
		fprintf(s->out, "error open: paths=1..%u in planes= equal runs, and sports=PORT,... "
			"needed\n", IUT_MAX_PATHS);
		return;
	}
	snprintf(list, sizeof(list), "%s", ports);
	tok = strtok_r(list, ",", &save);
	for (unsigned i = 0; i < c.n_paths; i++, tok = strtok_r(NULL, ",", &save)) {
		uint64_t p;

		if (!agent_num(tok, &p) || p > 65535) {
			fprintf(s->out, "error open: sports= has fewer than %u ports\n", c.n_paths);
			return;
		}
		c.sports[i] = (uint16_t)p;
	}
	errno = 0;
	s->iut = s->ops->open(s->ops, &c, now, err, sizeof(err));
	if (!s->iut) {
		fprintf(s->out, "%s %s\n", errno == EOPNOTSUPP ? "unsupported" : "error", err);
		return;
	}
	fprintf(s->out, "ok qpn=%" PRIu32 " psn=%" PRIu32 " peer_psn=%" PRIu32 " mr_key=%" PRIu32
		" mr_addr=%" PRIu64, c.qpn, c.psn, c.peer_psn, c.mr_key, c.mr_addr);
	if (c.port) { /* the adapter said its network */
		fprintf(s->out, " node_id=%" PRIu64 " peer_node_id=%" PRIu64 " port=%u addrs=",
			c.node_id, c.peer_node_id, c.port);
		agent_addrs_put(s->out, (const uint8_t(*)[16])c.addr, c.n_planes);
		fputs(" peer_addrs=", s->out);
		agent_addrs_put(s->out, (const uint8_t(*)[16])c.peer_addr, c.n_planes);
		fputs(" stranger=", s->out);
		agent_hex_put(s->out, c.stranger_addr, 16);
		fputs(" neighbour=", s->out);
		agent_hex_put(s->out, c.neighbour_addr, 16);
		if (c.auth) { /* the keys it holds: the script's, or its own */
			fputs(" public_key=", s->out);
			agent_hex_put(s->out, c.public_key, 32);
			fputs(" cluster_key=", s->out);
			agent_hex_put(s->out, c.cluster_key, 32);
			fputs(" key_to_iut=", s->out);
			agent_hex_put(s->out, c.key_to_iut, 16);
			fputs(" key_from_iut=", s->out);
			agent_hex_put(s->out, c.key_from_iut, 16);
		}
	}
	fputc('\n', s->out);
}

static void serve_dgram(struct served *s, bool deliver)
{
	struct iut_dgram *d = (struct iut_dgram *)s->buf;
	uint64_t now, plane, sport, ce;
	long len;

	if (!need(s, "now", &now))
		return;
	if (!deliver) {
		/* what the adapter does not say stays unknown, not the buffer's last contents */
		d->ecn = IUT_ECN_UNKNOWN;
		d->df = -1;
		d->dport = 0;
		memset(d->addr, 0, sizeof(d->addr));
		if (!s->ops->collect(s->iut, d, now)) {
			fprintf(s->out, "none\n");
			return;
		}
		fprintf(s->out, "ok plane=%u sport=%u ce=%d", d->plane, d->sport, d->ce);
		if (d->ecn != IUT_ECN_UNKNOWN)
			fprintf(s->out, " ecn=%u", d->ecn);
		if (d->df >= 0)
			fprintf(s->out, " df=%d", d->df);
		fputs(" to=", s->out);
		agent_hex_put(s->out, d->addr, 16);
		fprintf(s->out, " dport=%u bytes=", d->dport);
		agent_hex_put(s->out, d->bytes, d->len);
		fputc('\n', s->out);
		return;
	}
	if (!need(s, "plane", &plane) || !need(s, "sport", &sport) || !need(s, "ce", &ce))
		return;
	len = agent_hex_get(agent_arg(s->w, s->n, "bytes") ? agent_arg(s->w, s->n, "bytes") : "-",
			    d->bytes, sizeof(d->bytes));
	if (len < 0) {
		fprintf(s->out, "error deliver: bytes= is not HEX of up to %u bytes\n",
			IUT_MAX_DGRAM);
		return;
	}
	d->len = (uint16_t)len;
	d->plane = (uint8_t)plane;
	d->sport = (uint16_t)sport;
	d->ce = ce != 0;
	memset(d->addr, 0, sizeof(d->addr));
	if (agent_arg(s->w, s->n, "from") &&
	    agent_hex_get(agent_arg(s->w, s->n, "from"), d->addr, 16) != 16) {
		fprintf(s->out, "error deliver: from= is not an address (32 HEX digits)\n");
		return;
	}
	s->ops->deliver(s->iut, d, now);
	fprintf(s->out, "ok\n");
}

static void serve_post(struct served *s)
{
	const char *kind = agent_arg(s->w, s->n, "kind");
	uint64_t now, id, off, len, rkey, raddr, imm, solicited = 0;
	struct iut_wr wr;
	unsigned k;
	int e;

	for (k = 0; k < IUT_WR_KINDS; k++)
		if (kind && !strcmp(kind, iut_wr_kinds[k]))
			break;
	if (k == IUT_WR_KINDS) {
		fprintf(s->out, "error post: no kind=%s\n", kind ? kind : "");
		return;
	}
	if (!need(s, "now", &now) || !need(s, "id", &id) || !need(s, "off", &off) ||
	    !need(s, "len", &len) || !need(s, "rkey", &rkey) || !need(s, "raddr", &raddr) ||
	    !need(s, "imm", &imm))
		return;
	if (agent_arg(s->w, s->n, "solicited") && !need(s, "solicited", &solicited))
		return;
	wr = (struct iut_wr){ .kind = (uint8_t)k, .wr_id = id, .off = (uint32_t)off,
			      .len = (uint32_t)len, .rkey = (uint32_t)rkey, .raddr = raddr,
			      .imm = (uint32_t)imm, .solicited = solicited != 0 };
	e = s->ops->post(s->iut, &wr, now);
	if (e)
		fprintf(s->out, "error %d\n", e);
	else
		fprintf(s->out, "ok\n");
}

static void serve_memory(struct served *s, bool fill)
{
	uint64_t off, len, value;

	if (!need(s, "off", &off) || !need(s, "len", &len))
		return;
	if (off > UINT32_MAX) {
		fprintf(s->out, "error %s: off beyond 32 bits\n", s->w[0]);
		return;
	}
	if (len > sizeof(s->buf)) {
		fprintf(s->out, "error %s: up to %zu bytes at once\n", s->w[0], sizeof(s->buf));
		return;
	}
	if (fill) {
		if (!need(s, "value", &value))
			return;
		s->ops->fill(s->iut, (uint32_t)off, (uint32_t)len, (uint8_t)value);
		fprintf(s->out, "ok\n");
		return;
	}
	if (!s->ops->memory(s->iut, (uint32_t)off, (uint32_t)len, s->buf)) {
		fprintf(s->out, "none\n");
		return;
	}
	fprintf(s->out, "ok ");
	agent_hex_put(s->out, s->buf, len);
	fputc('\n', s->out);
}

/* drain, destroy, ready, register: operations an IUT may not have */
static void serve_operation(struct served *s, const char *op)
{
	uint64_t now, plane = 0, drained = 0;
	int e;

	if (!need(s, "now", &now))
		return;
	if (!strcmp(op, "drain")) {
		if (!need(s, "plane", &plane) || !need(s, "drained", &drained))
			return;
		e = s->ops->drain ? s->ops->drain(s->iut, (uint8_t)plane, drained != 0, now)
				  : -EOPNOTSUPP;
	} else if (!strcmp(op, "destroy")) {
		e = s->ops->destroy ? s->ops->destroy(s->iut, now) : -EOPNOTSUPP;
	} else if (!strcmp(op, "register")) {
		uint32_t key = 0;

		e = s->ops->register_region ? s->ops->register_region(s->iut, &key, now)
					    : -EOPNOTSUPP;
		if (!e) {
			fprintf(s->out, "ok %" PRIu32 "\n", key);
			return;
		}
	} else {
		e = s->ops->ready ? s->ops->ready(s->iut, now) : -EOPNOTSUPP;
	}
	if (e == -EOPNOTSUPP)
		fprintf(s->out, "unsupported %s\n", op);
	else if (e)
		fprintf(s->out, "error %d\n", e);
	else
		fprintf(s->out, "ok\n");
}

static void serve_line(struct served *s)
{
	const char *op = s->w[0];
	struct iut_wc wc;
	uint64_t v;

	if (!strcmp(op, "open"))
		return serve_open(s);
	if (!s->iut) {
		fprintf(s->out, "error %s: no QP is open\n", op);
		return;
	}
	if (!strcmp(op, "close")) {
		s->ops->close(s->iut);
		s->iut = NULL;
		fprintf(s->out, "ok\n");
	} else if (!strcmp(op, "deliver") || !strcmp(op, "collect")) {
		serve_dgram(s, !strcmp(op, "deliver"));
	} else if (!strcmp(op, "deadline")) {
		v = s->ops->deadline(s->iut);
		if (v == UINT64_MAX)
			fprintf(s->out, "ok never\n");
		else
			fprintf(s->out, "ok %" PRIu64 "\n", v);
	} else if (!strcmp(op, "advance")) {
		if (need(s, "now", &v)) {
			s->ops->advance(s->iut, v);
			fprintf(s->out, "ok\n");
		}
	} else if (!strcmp(op, "post")) {
		serve_post(s);
	} else if (!strcmp(op, "poll")) {
		if (!s->ops->poll(s->iut, &wc))
			fprintf(s->out, "none\n");
		else
			fprintf(s->out, "ok id=%" PRIu64 " recv=%d status=%s opcode=%s len=%" PRIu32
				" imm=%" PRIu32 " with_imm=%d with_inv=%d inv_rkey=%" PRIu32 "\n",
				wc.wr_id, wc.recv, wc.status, wc.opcode, wc.byte_len, wc.imm,
				wc.with_imm, wc.with_inv, wc.inv_rkey);
	} else if (!strcmp(op, "state")) {
		const char *state = s->ops->state(s->iut);

		if (state)
			fprintf(s->out, "ok %s\n", state);
		else
			fprintf(s->out, "none\n");
	} else if (!strcmp(op, "counter")) {
		const char *name = agent_arg(s->w, s->n, "name");

		if (name && s->ops->counter(s->iut, name, &v))
			fprintf(s->out, "ok %" PRIu64 "\n", v);
		else
			fprintf(s->out, "none\n");
	} else if (!strcmp(op, "memory") || !strcmp(op, "fill")) {
		serve_memory(s, !strcmp(op, "fill"));
	} else if (!strcmp(op, "drain") || !strcmp(op, "destroy") || !strcmp(op, "ready") ||
		   !strcmp(op, "register")) {
		serve_operation(s, op);
	} else {
		fprintf(s->out, "error no request %s\n", op);
	}
}

int agent_serve(const struct iut_ops *ops, FILE *in, FILE *out)
{
	struct served *s = calloc(1, sizeof(*s));
	char *line = NULL, *words[AGENT_MAX_WORDS];
	size_t cap = 0;

	if (!s)
		return 1;
	s->ops = ops;
	s->out = out;
	s->w = words;
	fprintf(out, "metaroce-compliance %d name=%s settle_ns=%" PRIu64
		" own_defaults=%d node=%d\n", AGENT_PROTOCOL, ops->name, ops->settle_ns,
		ops->own_defaults, ops->node);
	fflush(out);
	while (getline(&line, &cap, in) > 0) {
		s->n = agent_words(line, words, AGENT_MAX_WORDS);
		if (!s->n)
			fprintf(out, "error an empty line\n");
		else
			serve_line(s);
		fflush(out);
	}
	if (s->iut)
		ops->close(s->iut);
	free(line);
	free(s);
	return 0;
}
