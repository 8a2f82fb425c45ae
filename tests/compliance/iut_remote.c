/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The suite's end of the agent protocol (agent.h): an implementation behind a process the
 * suite starts (`sh -c COMMAND`) and speaks to on its standard input and output. One agent
 * serves the whole run, a QP per script (the scenario matrix starts one per side).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compliance/agent.h"
#include "compliance/iut.h"

/* How long an agent may take to answer a request, beyond its settle time: then it is hung,
 * killed, and the run goes on without it (each script fails, saying so). */
#define ANSWER_NS 30000000000ull
#define LINE_MAX_BYTES (4 * IUT_MAX_DGRAM + 65536 * 2 + 256)

struct remote {
	struct iut_ops ops; /* first: open() finds its remote from it */
	char name[64];
	pid_t pid;
	FILE *to;
	int from;	  /* the agent's output, read a line at a time within a bound */
	char *buf;	  /* what came from it: the answer being read, and what follows */
	size_t got;
	char *line; /* the last answer, cut into words */
	size_t cap;
	char said[512]; /* and as it came */
	char *w[AGENT_MAX_WORDS];
	unsigned n;
	char fault[300]; /* why the agent cannot go on; "" while it can */
	struct iut_config cfg;
};

/* every agent started, for the exit to end them */
static struct remote *agents[24]; /* the scenario matrix's: 4 adapters, 6 QPs each */
static unsigned n_agents;


/* The agent's next line into r->line (without its newline): false when it ended, sent a line
 * too long, or said nothing for its settle time and ANSWER_NS (then it is killed). */
static bool read_answer(struct remote *r, const char *request)
{
	uint64_t until = agent_clock_ns() + r->ops.settle_ns + ANSWER_NS;
	char *nl;

	while (!(nl = memchr(r->buf, '\n', r->got))) {
		struct pollfd p = { .fd = r->from, .events = POLLIN };
		uint64_t now = agent_clock_ns();
		ssize_t n;

		if (r->got == LINE_MAX_BYTES || now >= until ||
		    poll(&p, 1, (int)((until - now) / 1000000 + 1)) < 0) {
			if (r->got < LINE_MAX_BYTES && now >= until) {
				kill(r->pid, SIGKILL);
				snprintf(r->fault, sizeof(r->fault), "the agent %s did not answer "
					 "'%.40s' in %llu s: killed", r->name, request,
					 (unsigned long long)((r->ops.settle_ns + ANSWER_NS) / 1000000000ull));
			} else {
				snprintf(r->fault, sizeof(r->fault), "the agent %s: no line in its "
					 "answer to '%.40s'", r->name, request);
			}
			return false;
		}
		if (!(p.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(r->from, r->buf + r->got, LINE_MAX_BYTES - r->got);
		if (n <= 0)
			return false;
		r->got += (size_t)n;
	}
	if ((size_t)(nl - r->buf) + 1 > r->cap) {
		char *more = realloc(r->line, (size_t)(nl - r->buf) + 1);

		if (!more)
			return false;
		r->line = more;
		r->cap = (size_t)(nl - r->buf) + 1;
	}
	memcpy(r->line, r->buf, (size_t)(nl - r->buf));
	r->line[nl - r->buf] = '\0';
	r->got -= (size_t)(nl - r->buf) + 1;
	memmove(r->buf, nl + 1, r->got);
	return true;
}

/* One request and its answer, cut into words; false (and the fault said) when the agent
 * died, or answered "error" (errors_fault: a fault; else the caller reads w[1]). */
static bool ask(struct remote *r, bool errors_fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool ask(struct remote *r, bool errors_fault, const char *fmt, ...)
{
	va_list ap;

	r->n = 0;
	if (r->fault[0])
		return false;
	va_start(ap, fmt);
	vfprintf(r->to, fmt, ap);
	va_end(ap);
	if (fputc('\n', r->to) == EOF || fflush(r->to) || !read_answer(r, fmt)) {
		if (!r->fault[0])
			snprintf(r->fault, sizeof(r->fault), "the agent %s ended (its last "
				 "request: %.*s)", r->name, (int)strcspn(fmt, " "), fmt);
		return false;
	}
	snprintf(r->said, sizeof(r->said), "%s", r->line);
	if (errors_fault && !strncmp(r->line, "error ", 6)) {
		snprintf(r->fault, sizeof(r->fault), "%.290s", r->line + 6);
		return false;
	}
	r->n = agent_words(r->line, r->w, AGENT_MAX_WORDS);
	if (!r->n) {
		snprintf(r->fault, sizeof(r->fault), "the agent %s answered an empty line", r->name);
		return false;
	}
	return true;
}

/* the answer was "ok ..." (else "none"), or the fault says what it was */
static bool answered_ok(struct remote *r)
{
	if (!r->n)
		return false;
	if (!strcmp(r->w[0], "ok"))
		return true;
	if (strcmp(r->w[0], "none"))
		snprintf(r->fault, sizeof(r->fault), "the agent %s answered '%.200s'", r->name,
			 r->w[0]);
	return false;
}

static uint64_t num(struct remote *r, const char *key)
{
	uint64_t v = 0;

	if (!agent_num(agent_arg(r->w, r->n, key), &v) && !r->fault[0])
		snprintf(r->fault, sizeof(r->fault), "the agent %s answered no %s=", r->name, key);
	return v;
}

/* Remote access as the protocol writes it: letters of "rwa", or "-" for none. */
static const char *access_letters(bool r, bool w, bool a, char out[4])
{
	char *at = out;

	if (r)
		*at++ = 'r';
	if (w)
		*at++ = 'w';
	if (a)
		*at++ = 'a';
	if (at == out)
		*at++ = '-';
	*at = '\0';
	return out;
}

static void *remote_open(const struct iut_ops *self, struct iut_config *c, uint64_t now_ns,
			 char *err, size_t errlen)
{
	char mr[4], qp[4];
	struct remote *r = (struct remote *)(uintptr_t)self;
	char ports[IUT_MAX_PATHS * 6 + 1] = "", discovery[96] = "", options[320] = "";
	size_t at = 0;

	for (unsigned i = 0; i < c->n_paths; i++)
		at += (size_t)snprintf(ports + at, sizeof(ports) - at, "%s%u", i ? "," : "",
				       c->sports[i]);
	if (c->discovery)
		snprintf(discovery, sizeof(discovery), " discovery=1 node_id=%" PRIu64
			 " peer_node_id=%" PRIu64, c->node_id, c->peer_node_id);
	if (c->auth) { /* the two QP keys, HEX */
		at = (size_t)snprintf(options, sizeof(options), " auth=1 key_to_iut=");
		for (unsigned i = 0; i < 32; i++) {
			if (i == 16)
				at += (size_t)snprintf(options + at, sizeof(options) - at,
						       " key_from_iut=");
			at += (size_t)snprintf(options + at, sizeof(options) - at, "%02x",
					       i < 16 ? c->key_to_iut[i] : c->key_from_iut[i - 16]);
		}
		at += (size_t)snprintf(options + at, sizeof(options) - at, " cluster_key=");
		for (unsigned i = 0; i < 32; i++)
			at += (size_t)snprintf(options + at, sizeof(options) - at, "%02x",
					       c->cluster_key[i]);
	}
	if (c->rx_capacity_kbps)
		snprintf(options + strlen(options), sizeof(options) - strlen(options),
			 " rx_capacity_kbps=%" PRIu64, c->rx_capacity_kbps);
	if (c->ud)
		snprintf(options + strlen(options), sizeof(options) - strlen(options),
			 " ud=1 qkey=%" PRIu32 " peer_qkey=%" PRIu32, c->qkey, c->peer_qkey);
	if (c->mw)
		snprintf(options + strlen(options), sizeof(options) - strlen(options), " mw=1");
	if (!ask(r, false, "open now=%" PRIu64 " qpn=%" PRIu32 " peer_qpn=%" PRIu32
		 " psn=%" PRIu32 " peer_psn=%" PRIu32 " max_payload=%u paths=%u planes=%u rtr=%d"
		 " sports=%s"
		 " rq_depth=%" PRIu32 " mr_key=%" PRIu32 " mr_addr=%" PRIu64 " mr_len=%" PRIu32
		 " access=%s qp_access=%s retry_cnt=%u rnr_retry=%u%s%s", now_ns, c->qpn,
		 c->peer_qpn, c->psn, c->peer_psn, c->max_payload, c->n_paths, c->n_planes,
		 c->at_rtr, ports, c->rq_depth, c->mr_key, c->mr_addr, c->mr_len,
		 access_letters(c->mr_remote_read, c->mr_remote_write, c->mr_remote_atomic, mr),
		 access_letters(c->qp_remote_read, c->qp_remote_write, c->qp_remote_atomic, qp),
		 c->retry_cnt, c->rnr_retry, discovery, options)) {
		errno = EIO;
		snprintf(err, errlen, "%s", r->fault);
		return NULL;
	}
	if (strcmp(r->w[0], "ok")) {
		const char *why = r->said + strlen(r->w[0]);

		errno = !strcmp(r->w[0], "unsupported") ? EOPNOTSUPP : EIO;
		snprintf(err, errlen, "%s", *why ? why + 1 : r->w[0]);
		return NULL;
	}
	c->qpn = (uint32_t)num(r, "qpn");
	c->psn = (uint32_t)num(r, "psn");
	c->peer_psn = (uint32_t)num(r, "peer_psn");
	c->mr_key = (uint32_t)num(r, "mr_key");
	c->mr_addr = num(r, "mr_addr");
	/* the network, which discovery needs and any agent may say */
	if (c->discovery || agent_arg(r->w, r->n, "addrs")) {
		c->node_id = num(r, "node_id");
		/* the suite's own node id where it plays the peer's node; else the agent's */
		if (agent_arg(r->w, r->n, "peer_node_id") && !c->discovery)
			c->peer_node_id = num(r, "peer_node_id");
		c->port = (uint16_t)num(r, "port");
		if (!agent_addrs_get(agent_arg(r->w, r->n, "addrs"), c->addr, c->n_planes) ||
		    !agent_addrs_get(agent_arg(r->w, r->n, "peer_addrs"), c->peer_addr,
				     c->n_planes) ||
		    !agent_addrs_get(agent_arg(r->w, r->n, "stranger"), &c->stranger_addr, 1) ||
		    (agent_arg(r->w, r->n, "neighbour") &&
		     !agent_addrs_get(agent_arg(r->w, r->n, "neighbour"), &c->neighbour_addr, 1)) ||
		    (c->auth && (agent_hex_get(agent_arg(r->w, r->n, "public_key") ?: "",
					       c->public_key, 32) != 32 ||
				 agent_hex_get(agent_arg(r->w, r->n, "cluster_key") ?: "",
					       c->cluster_key, 32) != 32 ||
				 agent_hex_get(agent_arg(r->w, r->n, "key_to_iut") ?: "",
					       c->key_to_iut, 16) != 16 ||
				 agent_hex_get(agent_arg(r->w, r->n, "key_from_iut") ?: "",
					       c->key_from_iut, 16) != 16)))
			snprintf(r->fault, sizeof(r->fault), "the agent %s said no addrs=, "
				 "peer_addrs=, stranger= (neighbour=) of %u, %u and 1 address (and "
				 "its keys)", r->name,
				 c->n_planes, c->n_planes);
	}
	if (r->fault[0]) {
		errno = EIO;
		snprintf(err, errlen, "%s", r->fault);
		return NULL;
	}
	r->cfg = *c;
	return r;
}

static void remote_close(void *iut)
{
	ask(iut, true, "close");
}

static void remote_deliver(void *iut, const struct iut_dgram *d, uint64_t now_ns)
{
	struct remote *r = iut;
	static char hex[2 * IUT_MAX_DGRAM + 1];
	char from[33];

	for (unsigned i = 0; i < d->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", d->bytes[i]);
	hex[2 * d->len] = '\0';
	for (unsigned i = 0; i < 16; i++)
		snprintf(from + 2 * i, 3, "%02x", d->addr[i]);
	if (ask(r, true, "deliver now=%" PRIu64 " plane=%u sport=%u ce=%d from=%s bytes=%s",
		now_ns, d->plane, d->sport, d->ce, from, hex))
		answered_ok(r);
}

static bool remote_collect(void *iut, struct iut_dgram *d, uint64_t now_ns)
{
	struct remote *r = iut;
	const char *hex;
	long len;

	if (!ask(r, true, "collect now=%" PRIu64, now_ns) || !answered_ok(r))
		return false;
	hex = agent_arg(r->w, r->n, "bytes");
	len = hex ? agent_hex_get(hex, d->bytes, sizeof(d->bytes)) : -1;
	if (len < 0) {
		snprintf(r->fault, sizeof(r->fault), "the agent %s collected no bytes=HEX", r->name);
		return false;
	}
	d->len = (uint16_t)len;
	d->plane = (uint8_t)num(r, "plane");
	d->sport = (uint16_t)num(r, "sport");
	d->ce = num(r, "ce") != 0;
	d->ecn = agent_arg(r->w, r->n, "ecn") ? (uint8_t)num(r, "ecn") : IUT_ECN_UNKNOWN;
	d->df = agent_arg(r->w, r->n, "df") ? (int8_t)(num(r, "df") != 0) : -1;
	/* to= and dport= came with discovery: an agent from before says none */
	memset(d->addr, 0, sizeof(d->addr));
	d->dport = 0;
	if (agent_arg(r->w, r->n, "to") &&
	    agent_hex_get(agent_arg(r->w, r->n, "to"), d->addr, 16) != 16)
		snprintf(r->fault, sizeof(r->fault), "the agent %s said to= of no address",
			 r->name);
	if (agent_arg(r->w, r->n, "dport"))
		d->dport = (uint16_t)num(r, "dport");
	return !r->fault[0];
}

static uint64_t remote_deadline(void *iut)
{
	struct remote *r = iut;
	uint64_t v;

	if (!ask(r, true, "deadline") || !answered_ok(r) || r->n < 2 || !strcmp(r->w[1], "never"))
		return UINT64_MAX;
	return agent_num(r->w[1], &v) ? v : UINT64_MAX;
}

static void remote_advance(void *iut, uint64_t now_ns)
{
	if (ask(iut, true, "advance now=%" PRIu64, now_ns))
		answered_ok(iut);
}

static int remote_post(void *iut, const struct iut_wr *wr, uint64_t now_ns)
{
	struct remote *r = iut;
	long e;

	if (!ask(r, false, "post now=%" PRIu64 " kind=%s id=%" PRIu64 " off=%" PRIu32
		 " len=%" PRIu32 " rkey=%" PRIu32 " raddr=%" PRIu64 " imm=%" PRIu32 " solicited=%d",
		 now_ns, iut_wr_kinds[wr->kind], wr->wr_id, wr->off, wr->len, wr->rkey, wr->raddr,
		 wr->imm, wr->solicited))
		return -EIO;
	if (!strcmp(r->w[0], "error") && r->n >= 2 && (e = strtol(r->w[1], NULL, 10)) < 0)
		return (int)e;
	return answered_ok(r) ? 0 : -EIO;
}

static bool remote_poll(void *iut, struct iut_wc *wc)
{
	struct remote *r = iut;
	const char *s;

	if (!ask(r, true, "poll") || !answered_ok(r))
		return false;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = num(r, "id");
	wc->recv = num(r, "recv") != 0;
	wc->byte_len = (uint32_t)num(r, "len");
	wc->imm = (uint32_t)num(r, "imm");
	wc->with_imm = num(r, "with_imm") != 0;
	if (agent_arg(r->w, r->n, "with_inv")) { /* came with memory windows: optional */
		wc->with_inv = num(r, "with_inv") != 0;
		wc->inv_rkey = (uint32_t)num(r, "inv_rkey");
	}
	snprintf(wc->status, sizeof(wc->status), "%s",
		 (s = agent_arg(r->w, r->n, "status")) ? s : "?");
	snprintf(wc->opcode, sizeof(wc->opcode), "%s",
		 (s = agent_arg(r->w, r->n, "opcode")) ? s : "?");
	return !r->fault[0];
}

static const char *remote_state(void *iut)
{
	static char state[32];
	struct remote *r = iut;

	if (!ask(r, true, "state"))
		return "?";
	if (!strcmp(r->w[0], "none"))
		return NULL;
	if (!answered_ok(r) || r->n < 2)
		return "?";
	snprintf(state, sizeof(state), "%s", r->w[1]);
	return state;
}

static bool remote_counter(void *iut, const char *name, uint64_t *value)
{
	struct remote *r = iut;

	return ask(r, true, "counter name=%s", name) && answered_ok(r) && r->n >= 2 &&
	       agent_num(r->w[1], value);
}

static bool remote_memory(void *iut, uint32_t off, uint32_t len, uint8_t *out)
{
	struct remote *r = iut;

	return ask(r, true, "memory off=%" PRIu32 " len=%" PRIu32, off, len) && answered_ok(r) &&
	       r->n >= 2 && agent_hex_get(r->w[1], out, len) == (long)len;
}

static void remote_fill(void *iut, uint32_t off, uint32_t len, uint8_t value)
{
	if (ask(iut, true, "fill off=%" PRIu32 " len=%" PRIu32 " value=%u", off, len, value))
		answered_ok(iut);
}

/* drain, destroy, ready: 0, -errno, or -EOPNOTSUPP for an IUT without the operation */
static int remote_operation(struct remote *r)
{
	long e;

	if (!r->n)
		return -EIO;
	if (!strcmp(r->w[0], "unsupported"))
		return -EOPNOTSUPP;
	if (!strcmp(r->w[0], "error") && r->n >= 2 && (e = strtol(r->w[1], NULL, 10)) < 0)
		return (int)e;
	return answered_ok(r) ? 0 : -EIO;
}

static int remote_drain(void *iut, uint8_t plane, bool drained, uint64_t now_ns)
{
	struct remote *r = iut;

	if (!ask(r, false, "drain now=%" PRIu64 " plane=%u drained=%d", now_ns, plane, drained))
		return -EIO;
	return remote_operation(r);
}

static int remote_destroy(void *iut, uint64_t now_ns)
{
	struct remote *r = iut;

	return ask(r, false, "destroy now=%" PRIu64, now_ns) ? remote_operation(r) : -EIO;
}

static int remote_register(void *iut, uint32_t *key, uint64_t now_ns)
{
	struct remote *r = iut;
	uint64_t v;
	int e;

	if (!ask(r, false, "register now=%" PRIu64, now_ns))
		return -EIO;
	if ((e = remote_operation(r)))
		return e;
	if (r->n < 2 || !agent_num(r->w[1], &v) || v > UINT32_MAX) {
		snprintf(r->fault, sizeof(r->fault), "the agent %s registered no key", r->name);
		return -EIO;
	}
	*key = (uint32_t)v;
	return 0;
}

static int remote_ready(void *iut, uint64_t now_ns)
{
	struct remote *r = iut;

	return ask(r, false, "ready now=%" PRIu64, now_ns) ? remote_operation(r) : -EIO;
}

static const char *remote_fault(void *iut)
{
	struct remote *r = iut;

	return r->fault[0] ? r->fault : NULL;
}

/* Each agent's input ends: it closes its QP and exits, or within 10 s is killed. */
static void agents_gone(void)
{
	for (unsigned i = 0; i < n_agents; i++) {
		struct remote *r = agents[i];
		uint64_t until = agent_clock_ns() + 10000000000ull;

		if (r->to)
			fclose(r->to);
		if (r->from >= 0)
			close(r->from);
		while (r->pid > 0 && waitpid(r->pid, NULL, WNOHANG) == 0) {
			struct timespec ms = { 0, 1000000 };

			if (agent_clock_ns() >= until) {
				kill(r->pid, SIGKILL);
				waitpid(r->pid, NULL, 0);
				break;
			}
			nanosleep(&ms, NULL);
		}
		free(r->buf);
		free(r->line);
		free(r);
	}
	n_agents = 0;
}

const struct iut_ops *iut_remote(const char *command, char *err, size_t errlen)
{
	struct remote *r;
	int down[2], up[2];
	uint64_t version, settle, own = 0, node = 0;
	const char *name;

	if (n_agents == sizeof(agents) / sizeof(agents[0]) || !(r = calloc(1, sizeof(*r)))) {
		snprintf(err, errlen, "too many agents");
		return NULL;
	}
	r->from = -1;
	if (!n_agents)
		atexit(agents_gone);
	agents[n_agents++] = r;
	r->buf = malloc(LINE_MAX_BYTES);
	/* close-on-exec: a second agent must not hold the first's input open past its end */
	if (!r->buf || pipe2(down, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return NULL;
	}
	if (pipe2(up, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(down[0]), close(down[1]);
		return NULL;
	}
	signal(SIGPIPE, SIG_IGN); /* a dead agent is a fault of the run, not the end of it */
	r->pid = fork();
	if (r->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(down[0]), close(down[1]), close(up[0]), close(up[1]);
		return NULL;
	}
	if (!r->pid) {
		signal(SIGPIPE, SIG_DFL); /* the agent's own, as any program starts */
		dup2(down[0], STDIN_FILENO);
		dup2(up[1], STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", command, (char *)NULL);
		_exit(127);
	}
	close(down[0]);
	close(up[1]);
	r->to = fdopen(down[1], "w");
	r->from = up[0];
	snprintf(r->name, sizeof(r->name), "%.60s", command);
	if (!r->to || !read_answer(r, "its first line")) {
		snprintf(err, errlen, "the agent said nothing (did it start?)%s%s",
			 r->fault[0] ? ": " : "", r->fault);
		return NULL;
	}
	r->n = agent_words(r->line, r->w, AGENT_MAX_WORDS);
	name = agent_arg(r->w, r->n, "name");
	if (r->n < 2 || strcmp(r->w[0], "metaroce-compliance") || !agent_num(r->w[1], &version) ||
	    version != AGENT_PROTOCOL || !name || !agent_num(agent_arg(r->w, r->n, "settle_ns"),
							    &settle)) {
		snprintf(err, errlen, "the agent's first line is not 'metaroce-compliance %d "
			 "name=NAME settle_ns=N'", AGENT_PROTOCOL);
		return NULL;
	}
	snprintf(r->name, sizeof(r->name), "agent:%.50s", name);
	agent_num(agent_arg(r->w, r->n, "own_defaults"), &own);
	agent_num(agent_arg(r->w, r->n, "node"), &node);
	r->ops = (struct iut_ops){
		.name = r->name, .settle_ns = settle, .own_defaults = own != 0, .node = node != 0,
		.open = remote_open, .close = remote_close,
		.deliver = remote_deliver, .collect = remote_collect, .deadline = remote_deadline,
		.advance = remote_advance, .post = remote_post, .poll = remote_poll,
		.state = remote_state, .counter = remote_counter, .memory = remote_memory,
		.fill = remote_fill, .fault = remote_fault, .drain = remote_drain,
		.destroy = remote_destroy, .ready = remote_ready,
		.register_region = remote_register,
	};
	return &r->ops;
}

const struct iut_ops *iut_adapter(const char *spec, char *err, size_t errlen)
{
	if (!strcmp(spec, "engine"))
		return &iut_engine;
	if (!strncmp(spec, "remote:", 7))
		return iut_remote(spec + 7, err, errlen);
	snprintf(err, errlen, "no adapter %s (engine, remote:COMMAND)", spec);
	return NULL;
}
