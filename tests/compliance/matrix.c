/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compliance-matrix RESULTS.json ADAPTER...: the scenario matrix, in the shape of the QUIC
 * interop runner. Every pair of implementations (client, server), each from any adapter
 * (engine, or remote:COMMAND for an agent), runs every named scenario: the suite relays the
 * datagrams of the client's QP to the server's and back through a network it spoils as the
 * scenario says (loss, reordering, duplication, corruption, a plane blackholed or drained, the
 * server's QP destroyed, the server's node dead and back, three clients' incast through one
 * link that marks and drops), the client transfers messages, and the scenario passes
 * when every byte arrived where it should, every work request completed as it should, and
 * nothing hung. Implementations that pick their own names are renamed for each other on the
 * way (names.h), as for a script. Prints the grid per scenario and writes RESULTS.json.
 *
 * COMPLIANCE_SCENARIOS=a,b,c runs only those scenarios.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compliance/agent.h"
#include "compliance/fields.h"
#include "compliance/iut.h"
#include "compliance/names.h"
#include "proto/codec.h"
#include "proto/random.h"

#define MAX_ADAPTERS 4u
#define MAX_PAIRS 3u	/* QP pairs a scenario runs at once or one after the other */
#define N_MSG 32u
#define MSG_LEN 8192u
#define CHUNK 1024u
#define REGION (N_MSG * MSG_LEN)
#define IN_FLIGHT 4096u
#define ONE_WAY_NS 5000ull		   /* the network's delay, each way */
#define VIRTUAL_LIMIT_NS 20000000000ull    /* 20 s of virtual time */
#define REAL_LIMIT_NS 30000000000ull	   /* 30 s of real time */
/* incast: the servers' side of the network is one link of 80 Mbit/s (slower than the
 * suite relays for an agent) whose queue marks CE beyond 16 KiB and drops beyond 64 KiB */
#define LINK_BYTES_PER_US 10u
#define ECN_MARK_BYTES 16384u
#define QUEUE_CAP_BYTES 65536u

struct scenario {
	const char *name;
	const char *what;
	uint8_t wr;		/* IUT_WR_* the client posts */
	unsigned loss_ppm;	/* this share of the datagrams lost (per million) */
	unsigned dup_ppm;	/* delivered twice */
	unsigned corrupt_ppm;	/* a byte of it flipped */
	uint64_t jitter_ns;	/* up to this much more delay: packets of several paths overtake */
	int blackhole_plane;	/* from a third of the transfer on, everything on it is lost */
	bool drain;		/* plane 1 drained on both at a third, restored at two thirds */
	bool destroy;		/* the server's QP destroyed at a third: the client's must end
				 * in ERR with every work request completed, not hang */
	bool restart;		/* the server's node dies at a third (silence: nothing of its
				 * QP answers); the client's QP must end in ERR with every
				 * work request completed; then the node is back, and a new
				 * QP pair carries every message */
	unsigned incast;	/* this many clients, each with a server QP, share one link
				 * towards the servers (LINK_*): its queue marks, then drops */
};

#define NO_BLACKHOLE .blackhole_plane = -1
static const struct scenario scenarios[] = {
	{ "write", "WRITE", IUT_WR_WRITE, NO_BLACKHOLE },
	{ "write-imm", "WRITE with immediate", IUT_WR_WRITE_IMM, NO_BLACKHOLE },
	{ "send", "SEND", IUT_WR_SEND, NO_BLACKHOLE },
	{ "send-imm", "SEND with immediate", IUT_WR_SEND_IMM, NO_BLACKHOLE },
	{ "read", "READ", IUT_WR_READ, NO_BLACKHOLE },
	{ "loss-1", "WRITE at 1% loss", IUT_WR_WRITE, .loss_ppm = 10000, NO_BLACKHOLE },
	{ "loss-10", "WRITE at 10% loss", IUT_WR_WRITE, .loss_ppm = 100000, NO_BLACKHOLE },
	{ "reorder", "WRITE reordered across paths", IUT_WR_WRITE, .jitter_ns = 40000,
	  NO_BLACKHOLE },
	{ "duplicate", "SEND with 5% duplicated", IUT_WR_SEND, .dup_ppm = 50000, NO_BLACKHOLE },
	{ "corrupt", "WRITE with 2% corrupted", IUT_WR_WRITE, .corrupt_ppm = 20000,
	  NO_BLACKHOLE },
	{ "blackhole", "WRITE, plane 1 blackholed", IUT_WR_WRITE, .blackhole_plane = 1 },
	{ "drain", "WRITE, plane 1 drained and restored", IUT_WR_WRITE, .drain = true,
	  NO_BLACKHOLE },
	{ "destroyed", "WRITE, the server's QP destroyed mid-transfer", IUT_WR_WRITE,
	  .destroy = true, NO_BLACKHOLE },
	{ "restart", "WRITE, the server's node dies and comes back: a new QP pair",
	  IUT_WR_WRITE, .restart = true, NO_BLACKHOLE },
	{ "incast", "SEND, 3 clients through one 80 Mbit/s link", IUT_WR_SEND,
	  .incast = MAX_PAIRS, NO_BLACKHOLE },
};

/* Side 2p is pair p's client, 2p + 1 its server: each its own QP, its own adapter instance
 * (an agent serves one QP at a time). */
struct side {
	const struct iut_ops *ops;
	void *h;
	struct names names;
	unsigned wcs, wc_errors; /* completions seen, of which not success */
	unsigned retry_exc;	 /* of which retry_exc_err: its retry budget spent */
	uint64_t link_until;	 /* incast: when the link has sent its last datagram */
	bool done[N_MSG];	 /* a client's: work request m completed with success */
	bool dead;		 /* a server whose node died (restart): nothing reaches it */
	bool retired;		 /* a client whose QP failed with its peer (restart), closed */
};

struct packet {
	uint64_t at;
	unsigned to;  /* the side it goes to */
	unsigned seq; /* the order it was sent in, to that side */
	bool ce;      /* the bottleneck marked it */
	struct iut_dgram d;
};

struct run {
	const struct scenario *s;
	struct side side[2 * MAX_PAIRS];
	unsigned pairs;	     /* of side[] in use */
	bool started[MAX_PAIRS];
	struct packet *net;  /* in flight */
	unsigned n_net;
	bool real;	     /* either side runs on its own clock: the wall drives both */
	uint64_t start_real, now;
	struct mrc_prf rng;
	uint64_t credit[3];  /* of losses, duplicates and corruptions (spoil()) */
	unsigned relayed, lost, doubled, corrupted, marked, queue_drops;
	uint64_t link_free;  /* incast: when the servers' link has sent all it holds */
	uint64_t max_backlog;
	unsigned most_senders; /* incast: the most clients with datagrams in its queue at once */
	unsigned sent[2 * MAX_PAIRS], newest[2 * MAX_PAIRS]; /* per receiving side */
	unsigned overtaken;	       /* delivered after a packet sent later */
	bool disturbed, restored;
	char why[256];
};

static bool failf(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool failf(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->why[0])
		return false; /* the first is the one said */
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return false;
}

/*
 * Whether this datagram is the next of those the scenario spoils in one way (kind): a share of
 * ppm per million at random places, but that share exactly, near enough, so that a transfer
 * of a few hundred datagrams is always spoiled (a coin per datagram leaves some untouched).
 */
static bool spoil(struct run *r, unsigned kind, unsigned ppm)
{
	if (!ppm)
		return false;
	r->credit[kind] += mrc_prf_next(&r->rng) % (2ull * ppm);
	if (r->credit[kind] < 1000000)
		return false;
	r->credit[kind] -= 1000000;
	return true;
}

/* What chunk c of a pair's message m holds: never 0, so a chunk never placed shows, and
 * another pair's bytes do not pass for this one's. */
static uint8_t pattern(unsigned pair, unsigned m, unsigned c)
{
	return (uint8_t)(((pair * N_MSG + m) * (MSG_LEN / CHUNK) + c) * 37 % 251 + 1);
}

/* The two QPs of a pair mirror each other; their regions have names of their own, so a key or
 * address one side sends is never taken for the other's, nor for another pair's. */
static void config(struct iut_config *c, bool server, unsigned pair)
{
	*c = (struct iut_config){ .qpn = (server ? 0x22 : 0x11) + 0x100 * pair,
				  .peer_qpn = (server ? 0x11 : 0x22) + 0x100 * pair,
				  .psn = server ? 5000 : 1000, .peer_psn = server ? 1000 : 5000,
				  .max_payload = 1024, .n_paths = 4, .n_planes = 2,
				  .rq_depth = 2 * N_MSG, .mr_key = (server ? 0x200 : 0x100) + pair,
				  .mr_addr = (server ? 0x200000ull : 0x100000ull) +
					     0x1000000ull * pair,
				  .mr_len = REGION, .mr_remote_write = true, .mr_remote_read = true,
				  .qp_remote_write = true, .qp_remote_read = true,
				  .retry_cnt = 7, .rnr_retry = 7 };
	for (unsigned i = 0; i < c->n_paths; i++)
		c->sports[i] = (uint16_t)((server ? 50000 : 49152) + 16 * pair + i);
}

static const char *who_name(unsigned who)
{
	static const char *const names[2 * MAX_PAIRS] = {
		"the client", "the server", "client 2", "server 2", "client 3", "server 3"
	};

	return names[who];
}

static bool is_server(unsigned who)
{
	return who & 1;
}

static bool open_side(struct run *r, unsigned who)
{
	struct side *s = &r->side[who];
	char err[256] = "";

	config(&s->names.script, is_server(who), who / 2);
	s->names.iut = s->names.script;
	s->h = s->ops->open(s->ops, &s->names.iut, r->now, err, sizeof(err));
	return s->h || failf(r, "%s could not make its QP: %s", who_name(who), err);
}

/*
 * incast: a datagram to a server waits in the link's queue, sent when the link has sent all
 * before it; beyond QUEUE_CAP_BYTES it is dropped, beyond ECN_MARK_BYTES marked CE. False
 * when dropped; else *at is when it leaves the link.
 */
static bool through_link(struct run *r, unsigned from, const struct iut_dgram *d, uint64_t *at,
			 bool *ce)
{
	uint64_t backlog = r->link_free > r->now
				   ? (r->link_free - r->now) * LINK_BYTES_PER_US / 1000 : 0;
	unsigned senders = 1;

	r->max_backlog = backlog > r->max_backlog ? backlog : r->max_backlog;
	if (backlog + d->len > QUEUE_CAP_BYTES) {
		r->queue_drops++;
		return false;
	}
	if (backlog > ECN_MARK_BYTES) { /* (a mark already there stays) */
		*ce = true;
		r->marked++;
	}
	r->link_free = (r->link_free > r->now ? r->link_free : r->now) +
		       (uint64_t)d->len * 1000 / LINK_BYTES_PER_US;
	*at = r->side[from].link_until = r->link_free;
	for (unsigned who = 0; who < 2 * r->pairs; who += 2) /* the clients */
		senders += who != from && r->side[who].link_until > r->now;
	r->most_senders = senders > r->most_senders ? senders : r->most_senders;
	return true;
}

/* A datagram one side sent, renamed for its peer and put on the spoilt network. */
static void relay(struct run *r, unsigned from, const struct iut_dgram *d)
{
	const struct scenario *s = r->s;
	unsigned to = from ^ 1, copies = spoil(r, 1, s->dup_ppm) ? 2 : 1;
	uint64_t at = r->now;
	bool ce = d->ce;
	struct mrc_packet pkt;
	size_t len;

	r->relayed++;
	if (spoil(r, 0, s->loss_ppm) || r->side[from].dead || r->side[to].dead ||
	    (s->blackhole_plane >= 0 && r->disturbed && d->plane == s->blackhole_plane)) {
		r->lost++;
		return;
	}
	if (s->incast && is_server(to) && !through_link(r, from, d, &at, &ce))
		return;
	r->sent[to]++;
	r->doubled += copies - 1;
	for (unsigned k = 0; k < copies && r->n_net < IN_FLIGHT; k++) {
		struct packet *p = &r->net[r->n_net++];

		p->to = to;
		p->seq = r->sent[to];
		p->at = at + ONE_WAY_NS + (s->jitter_ns ? mrc_prf_next(&r->rng) % s->jitter_ns : 0);
		p->ce = ce;
		p->d = *d;
		if (mrc_decode(d->bytes, d->len, &pkt) == MRC_WIRE_OK) {
			fields_relay(&pkt, &r->side[from].names, &r->side[to].names);
			if (mrc_encode(&pkt, p->d.bytes, sizeof(p->d.bytes), &len) == MRC_WIRE_OK)
				p->d.len = (uint16_t)len;
		}
		if (spoil(r, 2, s->corrupt_ppm) && p->d.len) {
			p->d.bytes[mrc_prf_next(&r->rng) % p->d.len] ^= 0x20;
			r->corrupted++;
		}
	}
}

/* The packet in flight due first by now (by time, then sending order), or NULL; *next: the
 * earliest time of those not yet due. */
static struct packet *next_due(struct run *r, uint64_t *next)
{
	struct packet *best = NULL;

	for (unsigned i = 0; i < r->n_net; i++) {
		struct packet *p = &r->net[i];

		if (p->at > r->now)
			*next = p->at < *next ? p->at : *next;
		else if (!best || p->at < best->at ||
			 (p->at == best->at && (p->to < best->to ||
						(p->to == best->to && p->seq < best->seq))))
			best = p;
	}
	return best;
}

/* Work request m of a pair's transfer: its client's on its server's region (as the script
 * names it: the relay renames it for the server), or a receive of the server's. */
static bool post(struct run *r, unsigned who, uint8_t kind, unsigned m)
{
	struct side *s = &r->side[who];
	const struct iut_config *peer = &r->side[who ^ 1].names.script;
	struct iut_wr wr = { .kind = kind, .wr_id = m, .off = m * MSG_LEN, .len = MSG_LEN,
			     .rkey = peer->mr_key, .raddr = peer->mr_addr + m * MSG_LEN,
			     .imm = m + 1 };
	int e = s->ops->post(s->h, &wr, r->now);

	return !e || failf(r, "%s refused work request %u: %s", who_name(who), m, strerror(-e));
}

/* The first pair's client, whose server is destroyed or dies: its QP must end in error. */
static bool may_fail(const struct run *r, unsigned who)
{
	return who == 0 && (r->s->destroy || r->s->restart);
}

/* Every side's completions: a client's all success (but where its peer is destroyed or
 * dies), a server's receives in order with the message's length and immediate. */
static void poll_all(struct run *r)
{
	struct iut_wc wc;

	for (unsigned who = 0; who < 2 * r->pairs; who++) {
		struct side *s = &r->side[who];

		while (s->h && !s->dead && s->ops->poll(s->h, &wc)) {
			s->wcs++;
			if (!strcmp(wc.status, "success") && wc.wr_id < N_MSG)
				s->done[wc.wr_id] = true;
			if (strcmp(wc.status, "success")) {
				s->wc_errors++;
				s->retry_exc += !strcmp(wc.status, "retry_exc_err");
				if (!may_fail(r, who))
					failf(r, "%s: work request %llu completed %s",
					      who_name(who), (unsigned long long)wc.wr_id,
					      wc.status);
				continue;
			}
			if (is_server(who) &&
			    (wc.wr_id != s->wcs - 1 || wc.byte_len != MSG_LEN ||
			     (r->s->wr != IUT_WR_SEND && (!wc.with_imm || wc.imm != wc.wr_id + 1))))
				failf(r, "%s's receive %llu completed out of order or with len %u, "
				      "imm %u", who_name(who), (unsigned long long)wc.wr_id,
				      wc.byte_len, wc.imm);
		}
	}
}

static bool consumes_receive(uint8_t wr)
{
	return wr == IUT_WR_SEND || wr == IUT_WR_SEND_IMM || wr == IUT_WR_WRITE_IMM;
}

/* Every chunk of every message of a pair where it belongs: its server's region, or for READ
 * its client's; of the messages the client saw complete, where the server's QP was
 * destroyed; nothing where the server's node died with its memory. */
static bool verify(struct run *r, unsigned pair)
{
	unsigned sink = 2 * pair + (r->s->wr == IUT_WR_READ ? 0 : 1);
	struct side *s = &r->side[sink];
	uint8_t buf[CHUNK];

	if (r->side[2 * pair + 1].dead)
		return true;
	for (unsigned m = 0; m < N_MSG; m++)
		for (unsigned c = 0; c < MSG_LEN / CHUNK &&
				     (!r->s->destroy || r->side[2 * pair].done[m]); c++) {
			uint32_t off = m * MSG_LEN + c * CHUNK;

			if (!s->ops->memory(s->h, off, CHUNK, buf))
				return failf(r, "%s's memory cannot be read", who_name(sink));
			for (unsigned k = 0; k < CHUNK; k++)
				if (buf[k] != pattern(pair, m, c))
					return failf(r, "%s's byte %u is 0x%02x, not 0x%02x",
						     who_name(sink), off + k, buf[k],
						     pattern(pair, m, c));
		}
	return true;
}

static bool pair_finished(const struct run *r, unsigned pair)
{
	const struct side *c = &r->side[2 * pair], *srv = &r->side[2 * pair + 1];

	if (!r->started[pair])
		return false;
	if (c->retired)
		return true;
	if (may_fail(r, 2 * pair))
		return c->wcs == N_MSG && !strcmp(c->ops->state(c->h), "err");
	return c->wcs == N_MSG && (!consumes_receive(r->s->wr) || srv->wcs == N_MSG);
}

static bool finished(const struct run *r)
{
	for (unsigned p = 0; p < r->pairs; p++)
		if (!pair_finished(r, p))
			return false;
	return true;
}

/* Where a run that did not end stands: its first pair not done. */
static const char *standing(const struct run *r, char *buf, size_t len)
{
	unsigned p = 0;

	while (p + 1 < r->pairs && pair_finished(r, p))
		p++;
	snprintf(buf, len, "%s %u of %u completions, %s %u", who_name(2 * p),
		 r->side[2 * p].wcs, N_MSG, who_name(2 * p + 1), r->side[2 * p + 1].wcs);
	return buf;
}

/* A pair's messages in its source's region, its server's receives and its client's work. */
static bool start_pair(struct run *r, unsigned pair)
{
	unsigned client = 2 * pair, server = client + 1;
	unsigned src = r->s->wr == IUT_WR_READ ? server : client;

	if (!open_side(r, server) || !open_side(r, client))
		return false;
	r->started[pair] = true;
	for (unsigned m = 0; m < N_MSG && !r->why[0]; m++) {
		if (consumes_receive(r->s->wr) && !post(r, server, IUT_WR_RECV, m))
			return false;
		for (unsigned c = 0; c < MSG_LEN / CHUNK; c++)
			r->side[src].ops->fill(r->side[src].h, m * MSG_LEN + c * CHUNK, CHUNK,
					       pattern(pair, m, c));
	}
	for (unsigned m = 0; m < N_MSG && !r->why[0]; m++)
		post(r, client, r->s->wr, m);
	return !r->why[0];
}

/* A third of the transfer done: the scenario's disturbance; two thirds: its end. After a
 * restart's client has failed, the node back and a new pair. */
static void disturb(struct run *r)
{
	const struct scenario *s = r->s;
	unsigned done = r->side[0].wcs;

	if (!r->disturbed && done >= N_MSG / 3) {
		r->disturbed = true;
		for (unsigned who = 0; who < 2 && s->drain; who++) {
			struct side *d = &r->side[who];
			int e = d->ops->drain ? d->ops->drain(d->h, 1, true, r->now) : -EOPNOTSUPP;

			if (e)
				failf(r, "%s cannot drain plane 1: %s", who_name(who), strerror(-e));
		}
		if (s->destroy) {
			struct side *d = &r->side[1];
			int e = d->ops->destroy ? d->ops->destroy(d->h, r->now) : -EOPNOTSUPP;

			if (e)
				failf(r, "the server cannot destroy its QP: %s", strerror(-e));
		}
		if (s->restart) { /* gone at once: no CLOSE, no answer, its memory with it */
			r->side[1].ops->close(r->side[1].h);
			r->side[1].h = NULL;
			r->side[1].dead = true;
		}
	} else if (!r->restored && done >= 2 * N_MSG / 3 && s->drain) { /* a later turn */
		r->restored = true;
		for (unsigned who = 0; who < 2; who++)
			if (r->side[who].ops->drain)
				r->side[who].ops->drain(r->side[who].h, 1, false, r->now);
	} else if (!r->restored && s->restart && pair_finished(r, 0)) {
		/* the node back, and the client's application connecting anew: the same
		 * adapters (an agent's node, at its address, keeps its node id) */
		r->restored = true;
		r->side[0].ops->close(r->side[0].h);
		r->side[0].h = NULL;
		r->side[0].retired = true;
		start_pair(r, 1);
	}
}

/* The network and every IUT, until the transfer is over, fails or runs out of time. */
static void run_transfer(struct run *r)
{
	uint64_t limit = r->real ? REAL_LIMIT_NS : VIRTUAL_LIMIT_NS;
	struct iut_dgram *d = malloc(sizeof(*d));
	unsigned n = 2 * r->pairs;
	char where[128];

	for (unsigned p = 0; p < (r->s->restart ? 1 : r->pairs) && !r->why[0]; p++)
		start_pair(r, p);
	while (d && !r->why[0] && !finished(r)) {
		uint64_t next = UINT64_MAX;
		bool moved = false; /* something was sent or delivered: look again at this time */

		for (unsigned who = 0; who < n; who++) {
			struct side *s = &r->side[who];

			while (s->h && s->ops->collect(s->h, d, r->now)) {
				relay(r, who, d);
				moved = true;
			}
		}
		/* what is due, earliest first and in the order sent where as early: the network
		 * reorders only by the delays the scenario gives */
		for (struct packet *p; (p = next_due(r, &next));) {
			struct side *to = &r->side[p->to];

			if (to->h && !to->dead) {
				unsigned plane = p->d.plane % IUT_MAX_PLANES;

				/* from the receiver's peer, as its own network names it */
				memcpy(p->d.addr, to->names.iut.peer_addr[plane], 16);
				p->d.ce = p->ce;
				to->ops->deliver(to->h, &p->d, r->now);
			}
			if (p->seq < r->newest[p->to])
				r->overtaken++;
			else
				r->newest[p->to] = p->seq;
			*p = r->net[--r->n_net];
			moved = true;
		}
		poll_all(r);
		disturb(r);
		if (!r->real && moved)
			continue;
		for (unsigned who = 0; who < n; who++) {
			uint64_t t = r->side[who].h ? r->side[who].ops->deadline(r->side[who].h)
						    : UINT64_MAX;

			next = t < next ? t : next;
		}
		if (r->real) {
			struct timespec tick = { 0, 50000 };

			nanosleep(&tick, NULL);
			r->now = agent_clock_ns() - r->start_real + 1000000000ull;
		} else if (next == UINT64_MAX) {
			failf(r, "nothing left to happen: no packet in flight, no timer (%s)",
			      standing(r, where, sizeof(where)));
			break;
		} else if (next > r->now) {
			r->now = next;
		}
		for (unsigned who = 0; who < n; who++)
			if (r->side[who].h && r->side[who].ops->deadline(r->side[who].h) <= r->now)
				r->side[who].ops->advance(r->side[who].h, r->now);
		if (r->now - 1000000000ull > limit) {
			failf(r, "not done after %llu s: %s",
			      (unsigned long long)(limit / 1000000000ull),
			      standing(r, where, sizeof(where)));
			break;
		}
	}
	free(d);
	for (unsigned p = 0; p < r->pairs && !r->why[0]; p++)
		verify(r, p);
	/* and the scenario's spoiling happened, or the cell shows nothing */
	if (!r->why[0] && r->s->blackhole_plane >= 0 && !r->lost)
		failf(r, "nothing was sent on plane %d to be lost", r->s->blackhole_plane);
	if (!r->why[0] && r->s->loss_ppm && !r->lost)
		failf(r, "no datagram was lost");
	if (!r->why[0] && r->s->dup_ppm && !r->doubled)
		failf(r, "no datagram was duplicated");
	if (!r->why[0] && r->s->corrupt_ppm && !r->corrupted)
		failf(r, "no datagram was corrupted");
	if (!r->why[0] && r->s->jitter_ns && !r->overtaken)
		failf(r, "no datagram overtook another");
	if (!r->why[0] && r->s->incast && (!r->marked || r->most_senders < r->s->incast))
		failf(r, "no incast formed: the link's queue held at most %llu bytes (marks beyond "
		      "%u), from at most %u of %u clients at once",
		      (unsigned long long)r->max_backlog, ECN_MARK_BYTES, r->most_senders,
		      r->s->incast);
	if (!r->why[0] && (r->s->drain || r->s->destroy || r->s->restart) && !r->disturbed)
		failf(r, "the transfer ended before a third of it was done");
	if (!r->why[0] && (r->s->drain || r->s->restart) && !r->restored)
		failf(r, "the transfer ended before the scenario's second half");
	if (!r->why[0] && (r->s->destroy || r->s->restart) && !r->side[0].wc_errors)
		failf(r, "the client's QP ended in ERR with no failed work request");
	if (!r->why[0] && r->s->restart && !r->side[0].retry_exc)
		failf(r, "the client's QP failed, but not by its retry budget (no retry_exc_err)");
}

static bool run_scenario(const struct scenario *s, const struct iut_ops *const *client,
			 const struct iut_ops *const *server, struct run *r)
{
	static struct packet net[IN_FLIGHT];

	memset(r, 0, sizeof(*r));
	r->s = s;
	r->net = net;
	r->pairs = s->incast ? s->incast : s->restart ? 2 : 1;
	for (unsigned p = 0; p < r->pairs; p++) { /* a restart's second pair: the first's */
		r->side[2 * p].ops = client[s->restart ? 0 : p];
		r->side[2 * p + 1].ops = server[s->restart ? 0 : p];
		r->real = r->real || client[p]->settle_ns || server[p]->settle_ns;
	}
	r->start_real = agent_clock_ns();
	r->now = 1000000000ull;
	mrc_prf_seed(&r->rng, 0x5eed + (uint64_t)(s - scenarios));
	run_transfer(r);
	for (unsigned who = 0; who < 2 * r->pairs; who++)
		if (r->side[who].h)
			r->side[who].ops->close(r->side[who].h);
	return !r->why[0];
}

static bool wanted(const char *name)
{
	const char *list = getenv("COMPLIANCE_SCENARIOS");
	size_t n = strlen(name);

	if (!list || !*list)
		return true;
	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	/* per adapter, as client and as server, one for each pair a scenario runs at once: an
	 * agent serves one QP at a time */
	const struct iut_ops *ops[MAX_ADAPTERS][2][MAX_PAIRS];
	unsigned n = (unsigned)argc - 2, failed = 0;
	char err[256];
	FILE *out;

	if (argc < 3 || n > MAX_ADAPTERS) {
		fprintf(stderr, "usage: compliance-matrix RESULTS.json ADAPTER... (1 to %u: engine, "
				"remote:COMMAND)\n", MAX_ADAPTERS);
		return 2;
	}
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 2 * MAX_PAIRS; k++)
			if (!(ops[i][k % 2][k / 2] = iut_adapter(argv[2 + i], err, sizeof(err)))) {
				fprintf(stderr, "compliance-matrix: %s: %s\n", argv[2 + i], err);
				return 2;
			}
	out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	fprintf(out, "{\"adapters\": [");
	for (unsigned i = 0; i < n; i++) {
		fprintf(out, "%s", i ? ", " : "");
		agent_json_str(out, ops[i][0][0]->name);
	}
	fprintf(out, "], \"results\": [");
	for (unsigned k = 0, first = 1; k < sizeof(scenarios) / sizeof(scenarios[0]); k++) {
		if (!wanted(scenarios[k].name))
			continue;
		printf("  %-10s %s\n", scenarios[k].name, scenarios[k].what);
		fflush(stdout);
		for (unsigned c = 0; c < n; c++)
			for (unsigned sv = 0; sv < n; sv++) {
				struct run r;
				uint64_t t0 = agent_clock_ns();
				bool pass = run_scenario(&scenarios[k], ops[c][0], ops[sv][1], &r);
				double ms = (double)(agent_clock_ns() - t0) / 1e6;

				failed += !pass;
				printf("    %-24s -> %-24s %s %7.1f ms%s%s\n", ops[c][0][0]->name,
				       ops[sv][1][0]->name, pass ? "PASS" : "FAIL", ms,
				       pass ? "" : ": ", r.why);
				fflush(stdout);
				fprintf(out, "%s\n {\"scenario\": \"%s\", \"client\": ", first ? "" : ",",
					scenarios[k].name);
				agent_json_str(out, ops[c][0][0]->name);
				fprintf(out, ", \"server\": ");
				agent_json_str(out, ops[sv][1][0]->name);
				fprintf(out, ", \"pass\": %s, \"ms\": %.1f, \"relayed\": %u, "
					"\"lost\": %u, \"doubled\": %u, \"corrupted\": %u, "
					"\"overtaken\": %u, \"marked\": %u, \"queue_drops\": %u, "
					"\"why\": ", pass ? "true" : "false", ms, r.relayed, r.lost,
					r.doubled, r.corrupted, r.overtaken, r.marked,
					r.queue_drops);
				agent_json_str(out, r.why);
				fprintf(out, "}");
				first = 0;
			}
	}
	fprintf(out, "\n]}\n");
	fclose(out);
	printf("compliance-matrix: %u failed\n", failed);
	return failed ? 1 : 0;
}
