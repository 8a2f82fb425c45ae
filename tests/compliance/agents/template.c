/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compliance-agent-template: the start of an agent for an implementation of your own (a NIC,
 * an FPGA, a DPDK stack). Fill in each operation for one QP of your implementation, build
 * this file with ../agent.c (the protocol's agent end; it needs nothing else of this project),
 * and run the suite against it:
 *
 *   cc -I tests -o my-agent tests/compliance/agents/template.c tests/compliance/agent.c
 *   build/tests/compliance/compliance remote:./my-agent results.json SCRIPT...
 *
 * Until open() is written every script is skipped, saying so. An implementation that cannot
 * be linked from C speaks agent.h's protocol on its standard input and output instead: it is
 * lines of text. tests/compliance/README.md walks through both.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "compliance/agent.h"

struct my_iut {
	struct iut_config cfg;
	/* your QP, its memory region, your sockets or queues ... */
};

/*
 * Make one QP as cfg says and connect it to the suite's peer (cfg->peer_qpn, PSNs, paths with
 * cfg->sports in cfg->n_planes equal runs from plane 0 on, only to RTR if cfg->at_rtr, a region
 * of cfg->mr_len bytes with the remote access cfg->mr_remote_* grants). Where your
 * implementation picks a value itself (its QPN, its PSNs, the region's key or address), make
 * the QP with it and write it back into cfg. Return NULL with errno EOPNOTSUPP for a QP it
 * cannot make by design (the script is skipped with err), or NULL with err saying what went
 * wrong.
 */
static void *my_open(const struct iut_ops *self, struct iut_config *cfg, uint64_t now_ns,
		     char *err, size_t errlen)
{
	(void)self;
	(void)cfg;
	(void)now_ns;
	snprintf(err, errlen, "compliance-agent-template: open() is not written yet");
	errno = EOPNOTSUPP;
	return NULL;
}

/* Destroy the QP and free what open() made. */
static void my_close(void *iut)
{
	(void)iut;
}

/* Hand the QP the datagram (its UDP payload; d->ce: ECN CE in its IP header) at now_ns. */
static void my_deliver(void *iut, const struct iut_dgram *d, uint64_t now_ns)
{
	(void)iut, (void)d, (void)now_ns;
}

/* The next datagram the QP sent the peer, with its plane and UDP source port (and d->ecn, its
 * IP header's ECN field, if you can see it: else IUT_ECN_UNKNOWN); false: none. */
static bool my_collect(void *iut, struct iut_dgram *d, uint64_t now_ns)
{
	(void)iut, (void)d, (void)now_ns;
	return false;
}

/* When the QP next wants advance(), in the suite's nanoseconds; UINT64_MAX for never, and for
 * an implementation that runs its own clock (set .settle_ns then, and wait in advance()). */
static uint64_t my_deadline(void *iut)
{
	(void)iut;
	return UINT64_MAX;
}

static void my_advance(void *iut, uint64_t now_ns)
{
	(void)iut, (void)now_ns;
}

/* Post a work request on bytes [wr->off, wr->off + wr->len) of the region: 0 or -errno. */
static int my_post(void *iut, const struct iut_wr *wr, uint64_t now_ns)
{
	(void)iut, (void)wr, (void)now_ns;
	return -EOPNOTSUPP;
}

/* The next completion (one queue for sends and receives, in the order they completed). */
static bool my_poll(void *iut, struct iut_wc *wc)
{
	(void)iut, (void)wc;
	return false;
}

/* "rts", "err", "closing" or "closed" (SPEC 11.1). */
static const char *my_state(void *iut)
{
	(void)iut;
	return "?";
}

/* A counter the scripts name (rx_dropped, tx_retransmits, dropped_e_checksum ...) if you keep
 * one that means the same; false otherwise (the line is then reported unchecked). */
static bool my_counter(void *iut, const char *name, uint64_t *value)
{
	(void)iut, (void)name, (void)value;
	return false;
}

static bool my_memory(void *iut, uint32_t off, uint32_t len, uint8_t *out)
{
	(void)iut, (void)off, (void)len, (void)out;
	return false;
}

static void my_fill(void *iut, uint32_t off, uint32_t len, uint8_t value)
{
	(void)iut, (void)off, (void)len, (void)value;
}

static const struct iut_ops my_ops = {
	.name = "template",
	.settle_ns = 0,	       /* real time: how long it may take to act, e.g. 200000000 */
	.own_defaults = true, /* its congestion window, READ limits ... are its own */
	.node = true,	       /* it matches packets to QPs by their source address too */
	.open = my_open,
	.close = my_close,
	.deliver = my_deliver,
	.collect = my_collect,
	.deadline = my_deadline,
	.advance = my_advance,
	.post = my_post,
	.poll = my_poll,
	.state = my_state,
	.counter = my_counter,
	.memory = my_memory,
	.fill = my_fill,
};

int main(void)
{
	return agent_serve(&my_ops, stdin, stdout);
}
