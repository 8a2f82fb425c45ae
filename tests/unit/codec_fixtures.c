/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The codec tests' fixtures: see codec_fixtures.h. */
#include <check.h>
#include <string.h>

#include "codec_fixtures.h"
#include "proto/checksum.h"

uint8_t codec_buf[CODEC_BUF_CAP];
uint8_t codec_payload[MRC_WIRE_MAX_PACKET];

const uint8_t codec_opcodes[] = {
	MRC_OP_WRITE,	 MRC_OP_WRITE_IMM, MRC_OP_SEND,		MRC_OP_SEND_IMM, MRC_OP_READ_REQ,
	MRC_OP_READ_RESP, MRC_OP_ATOMIC_REQ, MRC_OP_ACK,	   MRC_OP_NAK,		MRC_OP_PROBE,	 MRC_OP_PROBE_REPLY,
	MRC_OP_DISCOVER, MRC_OP_DISCOVER_REPLY, MRC_OP_CLOSE, MRC_OP_UD_SEND, MRC_OP_UD_SEND_IMM,
	MRC_OP_SEND_INV,
};

void codec_reseal(uint8_t *p, size_t len)
{
	uint16_t c;

	p[20] = p[21] = 0;
	c = mrc_csum_compute(p, len);
	p[20] = (uint8_t)(c >> 8);
	p[21] = (uint8_t)c;
}

void codec_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void codec_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void codec_set_v4_mapped(uint8_t addr[16], uint32_t v4)
{
	memset(addr, 0, 16);
	addr[10] = addr[11] = 0xff;
	codec_put_be32(addr + 12, v4);
}

/*
 * A valid packet of the opcode. Variant 0 holds the smallest values the rules allow,
 * variant 1 the largest, variant 2 values that cross byte boundaries and wrap points.
 */
struct mrc_packet codec_sample(uint8_t op, int variant)
{
	struct mrc_packet p;
	int hi = variant == 1, mid = variant == 2;

	memset(&p, 0, sizeof(p));
	for (size_t i = 0; i < sizeof(codec_payload); i++)
		codec_payload[i] = (uint8_t)(i * 31 + 7);
	p.opcode = op;
	/* every flag but AUTH and SEALED, which need a trailer the caller appends (test_auth.c) */
	p.flags = hi ? mrc_opcode_flags(op) & ~(MRC_F_AUTH | MRC_F_SEALED)
		: mid ? mrc_opcode_flags(op) & MRC_F_RETX
		      : 0;
	p.dst_qpn = hi ? MRC_QPN_MAX : mid ? 0x123456 : 1;
	p.tx_ts = hi ? UINT32_MAX : mid ? 0x80000000u : 0;
	p.path_id = hi ? UINT16_MAX : mid ? 0x0100 : 0;

	if (mrc_opcode_is_sequenced(op))
		p.psn = hi ? UINT32_MAX : mid ? 0x00ffffffu : 0;

	if (mrc_opcode_is_data(op)) {
		struct mrc_data *d = &p.u.data;
		int has_addr = op == MRC_OP_WRITE || op == MRC_OP_WRITE_IMM || op == MRC_OP_READ_RESP;
		int has_imm = op == MRC_OP_WRITE_IMM || op == MRC_OP_SEND_IMM;
		int has_rsn = mrc_opcode_consumes_receive(op);
		int has_key = has_addr || op == MRC_OP_SEND_INV;

		d->msn = hi ? UINT32_MAX : mid ? 0xfffffffeu : 0;
		d->rsn = has_rsn ? (hi ? UINT32_MAX : mid ? 0x10000u : 0) : 0;
		p.payload_len = hi ? (uint16_t)(MRC_WIRE_MAX_PACKET - mrc_header_len(op)) :
			       mid ? 4096 : 0;
		d->msg_len = hi ? MRC_MAX_MSG_LEN : mid ? 3 * 4096 + 5 : 0;
		d->msg_off = hi ? MRC_MAX_MSG_LEN - p.payload_len : mid ? 4096 : 0;
		d->rkey = has_key ? (hi ? UINT32_MAX : mid ? 0xa1b2c3d4u : 0) : 0;
		d->imm = has_imm ? (hi ? UINT32_MAX : mid ? 0xdeadbeefu : 0) : 0;
		d->raddr = has_addr ? (hi ? UINT64_MAX - p.payload_len : mid ? 0x7f00ffff0000ull : 0)
				    : 0;
		p.payload = codec_payload;
	}

	switch (op) {
	case MRC_OP_READ_REQ:
		p.u.read_req.msn = hi ? UINT32_MAX : mid ? 77 : 0;
		p.u.read_req.length = hi ? MRC_MAX_MSG_LEN : mid ? 65536 : 0;
		p.u.read_req.rkey = hi ? UINT32_MAX : mid ? 0x01020304u : 0;
		p.u.read_req.sink_key = hi ? UINT32_MAX : mid ? 0x05060708u : 0;
		p.u.read_req.raddr = hi ? UINT64_MAX - MRC_MAX_MSG_LEN : mid ? 0x1000 : 0;
		p.u.read_req.sink_addr = hi ? UINT64_MAX - MRC_MAX_MSG_LEN : mid ? 0x2000 : 0;
		break;
	case MRC_OP_ATOMIC_REQ:
		p.u.atomic.msn = hi ? UINT32_MAX : mid ? 78 : 0;
		p.u.atomic.op = mid ? MRC_ATOMIC_FETCH_ADD : MRC_ATOMIC_CMP_SWAP;
		p.u.atomic.rkey = hi ? UINT32_MAX : mid ? 0x0a0b0c0du : 0;
		p.u.atomic.sink_key = hi ? UINT32_MAX : mid ? 0x0e0f1011u : 0;
		p.u.atomic.raddr = hi ? UINT64_MAX - 8 : mid ? 0x3000 : 0;
		p.u.atomic.sink_addr = hi ? UINT64_MAX - 8 : mid ? 0x4008 : 0;
		p.u.atomic.swap_add = hi ? UINT64_MAX : mid ? 1 : 0;
		p.u.atomic.compare = hi ? UINT64_MAX - 1 : 0; /* FETCH_ADD (mid): zero */
		break;
	case MRC_OP_ACK:
		p.u.ack.cum_psn = hi ? UINT32_MAX : mid ? 0xfffffff0u : 0;
		p.u.ack.echo_ts = hi ? UINT32_MAX : mid ? 0x11223344u : 0;
		p.u.ack.ack_delay_ns = hi ? UINT32_MAX : mid ? 1500 : 0;
		p.u.ack.rate_hint_kbps = hi ? UINT32_MAX : mid ? 25000000 : 0;
		p.u.ack.echo_path = hi ? UINT16_MAX : mid ? 2 : 0;
		p.u.ack.ce_count = hi ? UINT16_MAX : mid ? 3 : 0;
		p.u.ack.queue_delay_ns = hi ? UINT32_MAX : mid ? 12345 : 0;
		memset(p.u.ack.sack, hi ? 0xff : mid ? 0x5a : 0, MRC_SACK_BYTES);
		p.u.ack.sack[0] &= 0xfe;
		break;
	case MRC_OP_NAK:
		p.u.nak.cum_psn = hi ? UINT32_MAX : 0;
		p.u.nak.nak_psn = hi ? UINT32_MAX : mid ? 5 : 0;
		p.u.nak.msn = hi ? UINT32_MAX : 0;
		p.u.nak.kind = hi ? MRC_NAK_RNR : mid ? MRC_NAK_REMOTE_ACCESS : MRC_NAK_SEQ;
		p.u.nak.retry_after = hi ? UINT16_MAX : 0;
		break;
	case MRC_OP_PROBE:
	case MRC_OP_PROBE_REPLY:
		p.dst_qpn = hi ? MRC_QPN_MAX : mid ? 0x42 : MRC_QPN_DAEMON;
		p.u.probe.nonce = hi ? UINT64_MAX : mid ? 0x0102030405060708ull : 0;
		if (op == MRC_OP_PROBE_REPLY) {
			p.u.probe.echo_ts = hi ? UINT32_MAX : mid ? 9 : 0;
			p.u.probe.echo_path = hi ? UINT16_MAX : mid ? 3 : 0;
		} else {
			p.payload_len = hi ? 9000 : 0; /* path-MTU padding */
			p.payload = codec_payload;
		}
		break;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY: {
		struct mrc_discover *d = &p.u.discover;

		p.dst_qpn = MRC_QPN_DAEMON;
		p.psn = hi ? UINT32_MAX : mid ? 0x1234 : 0;
		d->node_id = hi ? UINT64_MAX : mid ? 0xfeedfacecafebeefull : 0;
		d->udp_port = hi ? UINT16_MAX : mid ? MRC_UDP_PORT_DEFAULT : 1;
		d->max_payload = hi ? UINT16_MAX : mid ? 4096 : MRC_MIN_PAYLOAD;
		d->n_addrs = hi ? MRC_MAX_PLANES : mid ? 2 : 1;
		for (unsigned i = 0; i < d->n_addrs; i++) {
			d->addrs[i].plane = (uint8_t)(hi ? MRC_MAX_PLANES - 1 - i : i);
			d->addrs[i].flags = hi ? UINT16_MAX : mid && i ? MRC_PLANE_F_DRAINED : 0;
			if (i % 2 == 0) {
				d->addrs[i].family = MRC_AF_INET;
				codec_set_v4_mapped(d->addrs[i].addr, 0xc6120001u + (i << 8));
			} else {
				d->addrs[i].family = MRC_AF_INET6;
				memset(d->addrs[i].addr, 0, 16);
				d->addrs[i].addr[0] = 0x20;
				d->addrs[i].addr[1] = 0x01;
				d->addrs[i].addr[2] = 0x0d;
				d->addrs[i].addr[3] = 0xb8;
				d->addrs[i].addr[15] = (uint8_t)i;
			}
		}
		break;
	}
	case MRC_OP_CLOSE:
		p.u.close.reason = hi ? MRC_CLOSE_REASON_MAX : mid ? MRC_CLOSE_ERROR : MRC_CLOSE_NORMAL;
		p.u.close.cum_psn = hi ? UINT32_MAX : mid ? 0x80000000u : 0;
		break;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM:
		p.psn = hi ? UINT32_MAX : mid ? 0x00ffffffu : 0;
		p.u.ud.src_qpn = hi ? MRC_QPN_MAX : mid ? 0x10203 : 1;
		p.u.ud.qkey = hi ? UINT32_MAX : mid ? 0x11111111u : 0;
		p.u.ud.imm = op == MRC_OP_UD_SEND ? 0 : hi ? UINT32_MAX : mid ? 0xdeadbeefu : 0;
		p.payload_len = hi ? (uint16_t)(MRC_WIRE_MAX_PACKET - mrc_header_len(op)) :
			       mid ? 1024 : 0;
		p.payload = codec_payload;
		break;
	}
	return p;
}

size_t codec_encode_ok(const struct mrc_packet *p)
{
	size_t len = 0;
	int err = mrc_encode(p, codec_buf, sizeof(codec_buf), &len);

	ck_assert_msg(err == MRC_WIRE_OK, "encode %s: %s", mrc_opcode_name(p->opcode),
		      mrc_wire_error_name(err));
	return len;
}

void codec_assert_same(const struct mrc_packet *a, const struct mrc_packet *b)
{
	ck_assert_uint_eq(a->opcode, b->opcode);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_uint_eq(a->dst_qpn, b->dst_qpn);
	ck_assert_uint_eq(a->psn, b->psn);
	ck_assert_uint_eq(a->tx_ts, b->tx_ts);
	ck_assert_uint_eq(a->path_id, b->path_id);
	switch (a->opcode) {
	case MRC_OP_WRITE:
	case MRC_OP_WRITE_IMM:
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
	case MRC_OP_SEND_INV:
	case MRC_OP_READ_RESP:
		ck_assert_uint_eq(a->u.data.msn, b->u.data.msn);
		ck_assert_uint_eq(a->u.data.rsn, b->u.data.rsn);
		ck_assert_uint_eq(a->u.data.msg_len, b->u.data.msg_len);
		ck_assert_uint_eq(a->u.data.msg_off, b->u.data.msg_off);
		ck_assert_uint_eq(a->u.data.rkey, b->u.data.rkey);
		ck_assert_uint_eq(a->u.data.imm, b->u.data.imm);
		ck_assert_uint_eq(a->u.data.raddr, b->u.data.raddr);
		ck_assert_uint_eq(a->payload_len, b->payload_len);
		ck_assert_mem_eq(a->payload, b->payload, a->payload_len);
		break;
	case MRC_OP_READ_REQ:
		ck_assert_uint_eq(a->u.read_req.msn, b->u.read_req.msn);
		ck_assert_uint_eq(a->u.read_req.length, b->u.read_req.length);
		ck_assert_uint_eq(a->u.read_req.rkey, b->u.read_req.rkey);
		ck_assert_uint_eq(a->u.read_req.sink_key, b->u.read_req.sink_key);
		ck_assert_uint_eq(a->u.read_req.raddr, b->u.read_req.raddr);
		ck_assert_uint_eq(a->u.read_req.sink_addr, b->u.read_req.sink_addr);
		break;
	case MRC_OP_ATOMIC_REQ:
		ck_assert_uint_eq(a->u.atomic.msn, b->u.atomic.msn);
		ck_assert_uint_eq(a->u.atomic.op, b->u.atomic.op);
		ck_assert_uint_eq(a->u.atomic.reserved, b->u.atomic.reserved);
		ck_assert_uint_eq(a->u.atomic.rkey, b->u.atomic.rkey);
		ck_assert_uint_eq(a->u.atomic.sink_key, b->u.atomic.sink_key);
		ck_assert_uint_eq(a->u.atomic.raddr, b->u.atomic.raddr);
		ck_assert_uint_eq(a->u.atomic.sink_addr, b->u.atomic.sink_addr);
		ck_assert_uint_eq(a->u.atomic.swap_add, b->u.atomic.swap_add);
		ck_assert_uint_eq(a->u.atomic.compare, b->u.atomic.compare);
		break;
	case MRC_OP_ACK:
		ck_assert_uint_eq(a->u.ack.cum_psn, b->u.ack.cum_psn);
		ck_assert_uint_eq(a->u.ack.echo_ts, b->u.ack.echo_ts);
		ck_assert_uint_eq(a->u.ack.ack_delay_ns, b->u.ack.ack_delay_ns);
		ck_assert_uint_eq(a->u.ack.rate_hint_kbps, b->u.ack.rate_hint_kbps);
		ck_assert_uint_eq(a->u.ack.echo_path, b->u.ack.echo_path);
		ck_assert_uint_eq(a->u.ack.ce_count, b->u.ack.ce_count);
		ck_assert_uint_eq(a->u.ack.queue_delay_ns, b->u.ack.queue_delay_ns);
		ck_assert_mem_eq(a->u.ack.sack, b->u.ack.sack, MRC_SACK_BYTES);
		break;
	case MRC_OP_NAK:
		ck_assert_uint_eq(a->u.nak.cum_psn, b->u.nak.cum_psn);
		ck_assert_uint_eq(a->u.nak.nak_psn, b->u.nak.nak_psn);
		ck_assert_uint_eq(a->u.nak.msn, b->u.nak.msn);
		ck_assert_uint_eq(a->u.nak.kind, b->u.nak.kind);
		ck_assert_uint_eq(a->u.nak.retry_after, b->u.nak.retry_after);
		break;
	case MRC_OP_PROBE:
	case MRC_OP_PROBE_REPLY:
		ck_assert_uint_eq(a->u.probe.nonce, b->u.probe.nonce);
		ck_assert_uint_eq(a->u.probe.echo_ts, b->u.probe.echo_ts);
		ck_assert_uint_eq(a->u.probe.echo_path, b->u.probe.echo_path);
		ck_assert_uint_eq(a->payload_len, b->payload_len);
		break;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY:
		ck_assert_uint_eq(a->u.discover.node_id, b->u.discover.node_id);
		ck_assert_uint_eq(a->u.discover.udp_port, b->u.discover.udp_port);
		ck_assert_uint_eq(a->u.discover.max_payload, b->u.discover.max_payload);
		ck_assert_uint_eq(a->u.discover.n_addrs, b->u.discover.n_addrs);
		for (unsigned i = 0; i < a->u.discover.n_addrs; i++) {
			ck_assert_uint_eq(a->u.discover.addrs[i].family, b->u.discover.addrs[i].family);
			ck_assert_uint_eq(a->u.discover.addrs[i].plane, b->u.discover.addrs[i].plane);
			ck_assert_uint_eq(a->u.discover.addrs[i].flags, b->u.discover.addrs[i].flags);
			ck_assert_mem_eq(a->u.discover.addrs[i].addr, b->u.discover.addrs[i].addr, 16);
		}
		break;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM:
		ck_assert_uint_eq(a->u.ud.src_qpn, b->u.ud.src_qpn);
		ck_assert_uint_eq(a->u.ud.qkey, b->u.ud.qkey);
		ck_assert_uint_eq(a->u.ud.imm, b->u.ud.imm);
		ck_assert_uint_eq(a->payload_len, b->payload_len);
		ck_assert_mem_eq(a->payload, b->payload, a->payload_len);
		break;
	case MRC_OP_CLOSE:
		ck_assert_uint_eq(a->u.close.reason, b->u.close.reason);
		ck_assert_uint_eq(a->u.close.cum_psn, b->u.close.cum_psn);
		break;
	}
}
