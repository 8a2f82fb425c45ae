/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the connection engine (lib/proto/conn.c): what a hostile or broken
 * peer can do to a QP with packets that pass the codec.
 *
 * The input is a script. Two connected QPs, A and B, exchange their own packets through a
 * small in-flight queue that the script reorders, drops and duplicates, while the script
 * also posts work, advances time and injects packets it builds itself (any opcode, any field
 * values, well-formed so the codec lets them through). Oracles, beyond the sanitizers: no
 * work request completes twice or completes without having been posted, nothing is written
 * outside the registered memory (guard bytes around it), and the engine never asks the
 * caller to wait for a deadline already past while it still has something to send.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"
#include "proto/conn.h"
#include "fuzz/script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MEM 8192
#define GUARD 64
#define MAX_WR 64
#define QUEUE 32

struct side {
	struct mrc_conn *conn;
	uint8_t mem[GUARD + MEM + GUARD];
	uint32_t qpn;
	uint8_t send_done[MAX_WR], recv_done[MAX_WR];
	unsigned posted_send, posted_recv;
	uint64_t last_send_completed, sends_completed, invalidated;
};

static struct side sides[2];

static uint8_t *base(struct side *sd)
{
	return sd->mem + GUARD;
}

static int lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		  uint8_t **host)
{
	struct side *sd = user;
	uint64_t b = (uint64_t)(uintptr_t)base(sd);

	(void)access;
	if (key != 0x1234 || addr < b || len > MEM || addr - b > MEM - len)
		return -1;
	*host = base(sd) + (addr - b);
	return 0;
}

/* SEND_INV: 0x4321 is a window's key, which the peer may invalidate; nothing else is */
static int may_invalidate(void *user, uint32_t key)
{
	(void)user;
	return key == 0x4321 ? 0 : -1;
}

static void invalidate(void *user, uint32_t key)
{
	if (key != 0x4321)
		abort(); /* invalidated what it was told it may not */
	((struct side *)user)->invalidated++;
}

static void complete(void *user, bool from_recv, const struct mrc_completion *wc)
{
	struct side *sd = user;
	uint8_t *done = from_recv ? sd->recv_done : sd->send_done;
	unsigned posted = from_recv ? sd->posted_recv : sd->posted_send;

	/* wr_id == posted: the request being posted right now (an erred QP flushes it at once) */
	if (wc->wr_id > posted || wc->wr_id >= MAX_WR || done[wc->wr_id])
		abort(); /* completed twice, or never posted */
	/* sends complete in posting order, local operations among them */
	if (!from_recv && sd->sends_completed && wc->wr_id < sd->last_send_completed)
		abort();
	if (!from_recv) {
		sd->last_send_completed = wc->wr_id;
		sd->sends_completed++;
	}
	done[wc->wr_id] = 1;
}

struct inflight {
	uint8_t to;
	uint16_t len;
	uint8_t bytes[MRC_MIN_PAYLOAD * 2 + 64];
};

static struct inflight queue[QUEUE];
static unsigned queued;

static void pump(unsigned from, uint64_t now)
{
	uint8_t buf[sizeof(queue[0].bytes)];
	struct mrc_tx_info tx;
	size_t len;

	for (int k = 0; k < 64; k++) {
		if (!mrc_conn_send(sides[from].conn, buf, sizeof(buf), &tx, now, &len))
			return;
		if (queued < QUEUE) {
			queue[queued].to = (uint8_t)!from;
			queue[queued].len = (uint16_t)len;
			memcpy(queue[queued].bytes, buf, len);
			queued++;
		}
	}
}

static void deliver(unsigned i, uint64_t now)
{
	struct mrc_rx_info rx = { .plane = 0, .sport = 50000 };

	mrc_conn_recv(sides[queue[i].to].conn, &rx, queue[i].bytes, queue[i].len, now);
}

/* A PSN an acknowledgement names: mostly near the QP's send window, where the engine acts on
 * it (a blind guess almost never lands there ), sometimes any. */
static uint32_t seq_guess(struct script *s, const struct mrc_conn_info *info)
{
	uint8_t how = (uint8_t)take(s, 1);

	if (how & 0x80)
		return (uint32_t)take(s, 4);
	return info->snd_una + (uint32_t)(int32_t)(int8_t)take(s, 1);
}

/* A packet of the script's choosing, well-formed, addressed to one of the QPs. */
static void inject(struct script *s, uint64_t now)
{
	static const uint8_t ops[] = { MRC_OP_WRITE,	 MRC_OP_WRITE_IMM, MRC_OP_SEND,
				       MRC_OP_SEND_IMM, MRC_OP_READ_REQ,  MRC_OP_READ_RESP,
				       MRC_OP_ACK,	 MRC_OP_NAK,	   MRC_OP_PROBE,
				       MRC_OP_PROBE_REPLY, MRC_OP_CLOSE, MRC_OP_SEND_INV };
	static uint8_t payload[MRC_MIN_PAYLOAD];
	unsigned to = (unsigned)take(s, 1) & 1;
	struct side *sd = &sides[to];
	struct mrc_packet p;
	struct mrc_rx_info rx = { .plane = (uint8_t)take(s, 1) % 3, .sport = (uint16_t)take(s, 2),
				  .ce = take(s, 1) & 1 };
	uint8_t buf[MRC_MIN_PAYLOAD + 128];
	struct mrc_conn_info info;
	size_t len;

	mrc_conn_get_info(sd->conn, &info);
	memset(&p, 0, sizeof(p));
	p.opcode = ops[take(s, 1) % sizeof(ops)];
	p.flags = (uint16_t)take(s, 2);
	p.dst_qpn = take(s, 1) & 7 ? sd->qpn : (uint32_t)take(s, 3);
	p.psn = (uint32_t)take(s, 4);
	p.tx_ts = (uint32_t)take(s, 4);
	p.path_id = (uint16_t)take(s, 1);
	switch (p.opcode) {
	case MRC_OP_ACK:
		p.u.ack.cum_psn = seq_guess(s, &info);
		p.u.ack.echo_ts = (uint32_t)take(s, 4);
		p.u.ack.ack_delay_ns = (uint32_t)take(s, 2);
		p.u.ack.rate_hint_kbps = (uint32_t)take(s, 4);
		p.u.ack.echo_path = (uint16_t)take(s, 1);
		for (unsigned i = 0; i < MRC_SACK_BYTES; i++)
			p.u.ack.sack[i] = (uint8_t)take(s, 1);
		p.u.ack.sack[0] &= 0xfe;
		break;
	case MRC_OP_NAK:
		p.u.nak.cum_psn = seq_guess(s, &info);
		p.u.nak.nak_psn = seq_guess(s, &info);
		p.u.nak.msn = (uint32_t)take(s, 2);
		p.u.nak.kind = (uint8_t)(1 + take(s, 1) % MRC_NAK_KIND_MAX);
		p.u.nak.retry_after = p.u.nak.kind == MRC_NAK_RNR ? (uint16_t)take(s, 1) : 0;
		break;
	case MRC_OP_READ_REQ:
		p.u.read_req.msn = (uint32_t)take(s, 2);
		p.u.read_req.length = (uint32_t)take(s, 2);
		p.u.read_req.rkey = take(s, 1) & 1 ? 0x1234 : (uint32_t)take(s, 4);
		p.u.read_req.raddr = (uintptr_t)base(sd) + take(s, 2);
		p.u.read_req.sink_key = (uint32_t)take(s, 4);
		p.u.read_req.sink_addr = take(s, 4);
		break;
	case MRC_OP_PROBE:
	case MRC_OP_PROBE_REPLY:
		p.u.probe.nonce = take(s, 8);
		p.u.probe.echo_path = (uint16_t)take(s, 1);
		break;
	case MRC_OP_CLOSE:
		p.u.close.reason = (uint32_t)take(s, 1) % (MRC_CLOSE_REASON_MAX + 1);
		p.u.close.cum_psn = seq_guess(s, &info);
		break;
	default: {
		struct mrc_data *d = &p.u.data;
		bool addr = p.opcode == MRC_OP_WRITE || p.opcode == MRC_OP_WRITE_IMM ||
			    p.opcode == MRC_OP_READ_RESP;

		d->msn = (uint32_t)take(s, 2);
		d->rsn = p.opcode == MRC_OP_WRITE || p.opcode == MRC_OP_READ_RESP
				 ? 0
				 : (uint32_t)take(s, 2);
		p.payload_len = (uint16_t)(take(s, 1) % (MRC_MIN_PAYLOAD + 1));
		d->msg_off = (uint32_t)take(s, 2);
		d->msg_len = d->msg_off + p.payload_len + (uint32_t)take(s, 2);
		if (p.payload_len == 0)
			d->msg_len = d->msg_off = 0;
		d->imm = p.opcode == MRC_OP_WRITE_IMM || p.opcode == MRC_OP_SEND_IMM
				 ? (uint32_t)take(s, 4)
				 : 0;
		if (p.opcode == MRC_OP_SEND_INV)
			d->rkey = take(s, 1) & 1 ? 0x1234 : (uint32_t)take(s, 4);
		if (addr) {
			d->rkey = take(s, 1) & 1 ? 0x1234 : (uint32_t)take(s, 4);
			d->raddr = (uintptr_t)base(sd) + take(s, 2) - 64;
		}
		p.payload = payload;
	}
	}
	if (mrc_encode(&p, buf, sizeof(buf), &len) == MRC_WIRE_OK)
		mrc_conn_recv(sd->conn, &rx, buf, len, now);
}

static void post_send(struct script *s, struct side *sd)
{
	static const uint8_t ops[] = { MRC_WR_WRITE,	MRC_WR_WRITE_IMM, MRC_WR_SEND,
				       MRC_WR_SEND_IMM, MRC_WR_READ,	  MRC_WR_SEND_INV,
				       MRC_WR_BIND_MW,	MRC_WR_LOCAL_INV };
	struct mrc_send_wr wr = { .wr_id = sd->posted_send, .num_sge = 1,
				  .flags = MRC_SEND_SIGNALED, .rkey = 0x1234 };
	uint32_t off = (uint32_t)take(s, 2) % MEM, len = (uint32_t)take(s, 2) % (MEM - off + 1);

	if (sd->posted_send >= MAX_WR)
		return;
	wr.opcode = ops[take(s, 1) % sizeof(ops)];
	wr.sge[0] = (struct mrc_sge){ base(sd) + off, (uint64_t)(uintptr_t)(base(sd) + off), len,
				      0x1234 };
	wr.raddr = (uint64_t)(uintptr_t)base(&sides[sd == sides]) + off;
	if (wr.opcode == MRC_WR_SEND_INV)
		wr.rkey = take(s, 1) & 1 ? 0x4321 : 0x1234;
	if (wr.opcode == MRC_WR_BIND_MW || wr.opcode == MRC_WR_LOCAL_INV)
		wr.num_sge = 0; /* local: no data */
	/* counted first: a QP in error completes the request inside the call */
	if (mrc_conn_post_send(sd->conn, &wr) == 0)
		sd->posted_send++;
	else if (sd->send_done[sd->posted_send])
		abort(); /* refused, yet completed */
}

static void post_recv(struct script *s, struct side *sd)
{
	struct mrc_recv_wr wr = { .wr_id = sd->posted_recv, .num_sge = 1 };
	uint32_t off = (uint32_t)take(s, 2) % MEM, len = (uint32_t)take(s, 2) % (MEM - off + 1);

	if (sd->posted_recv >= MAX_WR)
		return;
	wr.sge[0] = (struct mrc_sge){ base(sd) + off, 0, len, 0 };
	if (mrc_conn_post_recv(sd->conn, &wr) == 0)
		sd->posted_recv++;
	else if (sd->recv_done[sd->posted_recv])
		abort(); /* refused, yet completed */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mrc_conn_callbacks cb = {
		.mr_lookup = lookup,
		.complete = complete,
		.may_invalidate = may_invalidate,
		.invalidate = invalidate,
	};
	struct script s = { data, size };
	uint64_t now = 1000;

	for (unsigned i = 0; i < 2; i++) {
		struct mrc_conn_config cfg;

		memset(&sides[i], 0, sizeof(sides[i]));
		memset(sides[i].mem, 0xa5, sizeof(sides[i].mem));
		sides[i].qpn = 10 + i;
		mrc_conn_config_default(&cfg);
		cfg.mode = (uint8_t)(take(&s, 1) & 1);
		cfg.local_qpn = 10 + i;
		cfg.remote_qpn = 11 - i;
		cfg.sq_psn = i ? 0xfffffff0u : 5;
		cfg.rq_psn = i ? 5 : 0xfffffff0u;
		cfg.max_payload = MRC_MIN_PAYLOAD;
		cfg.n_paths = 3;
		cfg.sq_depth = 8;
		cfg.rq_depth = 8;
		cfg.max_rd_atomic = cfg.max_dest_rd_atomic = 2;
		cfg.retry_cnt = 2;
		cfg.rnr_retry = 2;
		for (unsigned k = 0; k < 3; k++)
			cfg.paths[k] = (struct mrc_path_config){ (uint8_t)k, (uint16_t)(50000 + k) };
		sides[i].conn = mrc_conn_new(&cfg, &cb, &sides[i], now);
		if (!sides[i].conn)
			abort();
	}
	queued = 0;

	while (s.left) {
		unsigned op = (unsigned)take(&s, 1);

		switch (op % 9) {
		case 0:
			post_send(&s, &sides[op >> 7]);
			break;
		case 1:
			post_recv(&s, &sides[op >> 7]);
			break;
		case 2:
		case 3:
			pump((op >> 7) & 1, now);
			break;
		case 4: /* deliver, drop or duplicate one queued packet */
			if (queued) {
				unsigned i = (unsigned)take(&s, 1) % queued, how = op >> 6;

				deliver(i, now);
				if (how != 3) /* else it stays queued: a duplicate later */
					queue[i] = queue[--queued];
			}
			break;
		case 5: /* lose one queued packet */
			if (queued) {
				unsigned i = (unsigned)take(&s, 1) % queued;

				queue[i] = queue[--queued];
			}
			break;
		case 6:
			now += 1 + take(&s, 2) * (op >> 6 ? 1000 : 1);
			for (unsigned i = 0; i < 2; i++)
				if (mrc_conn_next_timeout(sides[i].conn) <= now)
					mrc_conn_on_timeout(sides[i].conn, now);
			break;
		case 7:
			inject(&s, now);
			break;
		case 8:
			if ((op >> 4) == 0xf)
				mrc_conn_set_error(sides[op & 1].conn, now);
			else if ((op >> 4) == 0xe)
				mrc_conn_close(sides[op & 1].conn, now); /* destroyed: it lingers */
			else
				mrc_conn_drain_plane(sides[op & 1].conn, (uint8_t)(op >> 5) % 3,
						     (op >> 4) & 1);
			break;
		}
	}
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned g = 0; g < GUARD; g++)
			if (sides[i].mem[g] != 0xa5 || sides[i].mem[GUARD + MEM + g] != 0xa5)
				abort(); /* wrote outside the registered region */
		mrc_conn_free(sides[i].conn);
	}
	return 0;
}
