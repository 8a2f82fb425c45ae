/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The wire script lines that act on the IUT's verbs and look inside it: post, wc, no_wc,
 * counter, memory, fill, state, and the operations drain, undrain, destroy and ready.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "compliance/agent.h"
#include "compliance/fields.h"
#include "compliance/script_impl.h"

bool line_post(struct run *run)
{
	struct iut_wr wr = { 0 };
	uint64_t id, off, len, rkey, raddr, imm, solicited;
	unsigned k;
	int e;

	static const char *const keys[] = { "id", "off", "len", "rkey", "raddr", "imm",
					    "solicited", NULL };

	for (k = 0; k < IUT_WR_KINDS; k++)
		if (run->argc >= 2 && !strcmp(run->argv[1], iut_wr_kinds[k]))
			break;
	if (k == IUT_WR_KINDS)
		return failf(run, "post needs write, write_imm, send, send_imm, read, recv or "
				  "local_inv");
	if (!only_keys(run, 2, keys))
		return false;
	if (!arg_num(run, "id", &id, 0) || !arg_num(run, "off", &off, 0) ||
	    !arg_num(run, "len", &len, 0) || !arg_num(run, "rkey", &rkey, 0) ||
	    !arg_num(run, "raddr", &raddr, 0) || !arg_num(run, "imm", &imm, 0) ||
	    !arg_num(run, "solicited", &solicited, 0))
		return false;
	if (k == IUT_WR_LOCAL_INV && rkey == run->names.script.mr_key)
		rkey = run->names.iut.mr_key; /* the IUT's own key, as it named it */
	wr = (struct iut_wr){ .kind = (uint8_t)k, .wr_id = id, .off = (uint32_t)off,
			      .len = (uint32_t)len, .rkey = (uint32_t)rkey, .raddr = raddr,
			      .imm = (uint32_t)imm, .solicited = solicited != 0 };
	e = run->iut->post(run->h, &wr, run->now);
	if (e)
		return failf(run, "the IUT refused post %s: %s", iut_wr_kinds[k], strerror(-e));
	return collect_sent(run);
}

bool line_wc(struct run *run)
{
	static const char *const keys[] = { "status", "opcode", "id", "len", "imm", "inv_rkey",
					    NULL };
	struct iut_wc wc;
	const char *s;
	uint64_t v;

	uint64_t end = agent_clock_ns() + run->iut->settle_ns;
	bool got;

	if (!only_keys(run, 1, keys))
		return false;
	while (!(got = run->iut->poll(run->h, &wc)) && run->iut->settle_ns && agent_clock_ns() < end)
		if (!wait_a_little(run))
			return false;
	if (!got)
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
	/* inv_rkey=: IBV_WC_WITH_INV, the key as the script names the IUT's */
	if (arg(run, "inv_rkey") &&
	    (!arg_num(run, "inv_rkey", &v, 0) || !wc.with_inv ||
	     v != (wc.inv_rkey == run->names.iut.mr_key ? run->names.script.mr_key : wc.inv_rkey)))
		return failf(run, "completion %llu: %s 0x%x, expected 0x%llx",
			     (unsigned long long)wc.wr_id,
			     wc.with_inv ? "invalidated key" : "no WITH_INV, key", wc.inv_rkey,
			     (unsigned long long)v);
	return true;
}

bool line_no_wc(struct run *run)
{
	struct iut_wc wc;

	if (!quiet(run, false))
		return false;
	if (run->iut->poll(run->h, &wc))
		return failf(run, "expected no completion, there is %llu (%s, %s)",
			     (unsigned long long)wc.wr_id, wc.opcode, wc.status);
	return true;
}

bool line_counter(struct run *run)
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
		/* counters are the IUT's own: one it does not keep is said, not failed */
		if (!run->iut->counter(run->h, name, &have)) {
			size_t at = strlen(run->r->unchecked);

			if (!strstr(run->r->unchecked, name))
				snprintf(run->r->unchecked + at, sizeof(run->r->unchecked) - at,
					 "%s%s", at ? " " : "", name);
			continue;
		}
		if (at_least ? have < want : have != want)
			return failf(run, "counter %s is %llu, expected %s%llu", name,
				     (unsigned long long)have, at_least ? ">= " : "",
				     (unsigned long long)want);
	}
	return true;
}

bool line_memory(struct run *run, bool write)
{
	static const char *const keys[] = { "off", "len", "fill", NULL };
	uint64_t off, len, fill;
	uint8_t *m = run->payload;

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
	if (len > sizeof(run->payload))
		return failf(run, "len=%llu: memory checks up to %zu bytes at once",
			     (unsigned long long)len, sizeof(run->payload));
	if (!run->iut->memory(run->h, (uint32_t)off, (uint32_t)len, m))
		return failf(run, "the IUT's memory cannot be read");
	for (uint64_t i = 0; i < len; i++)
		if (m[i] != (uint8_t)fill)
			return failf(run, "memory byte %llu is 0x%02x, expected 0x%02llx",
				     (unsigned long long)(off + i), m[i],
				     (unsigned long long)fill);
	return true;
}

bool line_memory_read(struct run *run)
{
	return line_memory(run, false);
}

bool line_state(struct run *run)
{
	const char *have = run->iut->state(run->h);

	if (run->argc != 2)
		return failf(run, "state NAME");
	if (!have) {
		size_t at = strlen(run->r->unchecked);

		if (!strstr(run->r->unchecked, "state"))
			snprintf(run->r->unchecked + at, sizeof(run->r->unchecked) - at, "%sstate",
				 at ? " " : "");
		return true;
	}
	if (strcmp(have, run->argv[1]))
		return failf(run, "the QP is in %s, expected %s", have, run->argv[1]);
	return true;
}

/* An operation some scripts need and the IUT may not have: the script is skipped without. */
static bool optional_op(struct run *run, int e, const char *what)
{
	if (e == -EOPNOTSUPP) {
		failf(run, "the IUT cannot %s", what);
		run->r->skipped = true;
		return false;
	}
	return !e || failf(run, "the IUT refused to %s: %s", what, strerror(-e));
}

/*
 * "keys N bits>=B": the application registers N more regions; no key comes twice, and at least
 * B bit positions change between consecutive keys as a coin does, in a quarter to three
 * quarters of the N - 1 steps: a slot or a counter's bits change always, seldom or
 * never, not so. (For N = 64 a random bit falls outside that band about once in 27,000.)
 */
bool line_keys(struct run *run)
{
	uint32_t key[256], random_like = 0;
	unsigned flips[32] = { 0 }, have;
	uint64_t n = 0, bits = 0;

	if (run->argc != 3 || !agent_num(run->argv[1], &n) || n < 2 || n > 256 ||
	    strncmp(run->argv[2], "bits>=", 6) || !agent_num(run->argv[2] + 6, &bits))
		return failf(run, "keys N bits>=B, N from 2 to 256");
	if (!run->iut->register_region)
		return optional_op(run, -EOPNOTSUPP, "register another region");
	for (unsigned i = 0; i < n; i++) {
		int e = run->iut->register_region(run->h, &key[i], run->now);

		if (e)
			return optional_op(run, e, "register another region");
		for (unsigned b = 0; b < 32 && i; b++)
			flips[b] += ((key[i] ^ key[i - 1]) >> b) & 1;
		for (unsigned j = 0; j < i; j++)
			if (key[j] == key[i])
				return failf(run, "registrations %u and %u both got key 0x%x", j, i,
					     key[i]);
	}
	for (unsigned b = 0; b < 32; b++)
		if (4 * flips[b] >= n - 1 && 4 * flips[b] <= 3 * (n - 1))
			random_like |= 1u << b;
	have = (unsigned)__builtin_popcount(random_like);
	return have >= bits ||
	       failf(run, "%llu keys change as a coin in %u bits (0x%08x), expected %llu",
		     (unsigned long long)n, have, random_like, (unsigned long long)bits);
}

/* "drain plane=N", "undrain plane=N": an operator drains a plane, or restores it;
 * "destroy": the application destroys the QP (11.4); "ready": RTR to RTS. */
bool line_operation(struct run *run, const char *verb)
{
	static const char *const keys[] = { "plane", NULL };
	bool drain = !strcmp(verb, "drain");
	uint64_t plane;

	if (!strcmp(verb, "destroy") || !strcmp(verb, "ready")) {
		int (*op)(void *, uint64_t) = verb[0] == 'd' ? run->iut->destroy : run->iut->ready;

		if (run->argc != 1)
			return failf(run, "%s takes nothing", verb);
		return optional_op(run, op ? op(run->h, run->now) : -EOPNOTSUPP,
				   verb[0] == 'd' ? "destroy the QP" : "take the QP to RTS") &&
		       collect_sent(run);
	}
	if (!only_keys(run, 1, keys) || !arg(run, "plane") || !arg_num(run, "plane", &plane, 0) ||
	    plane >= 256)
		return failf(run, "%s plane=N", verb);
	return optional_op(run, run->iut->drain ? run->iut->drain(run->h, (uint8_t)plane, drain,
								  run->now)
						: -EOPNOTSUPP,
			   drain ? "drain a plane" : "restore a plane") &&
	       collect_sent(run);
}

