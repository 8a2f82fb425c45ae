/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/codec.c: every opcode round-trips with edge values; every malformed class is
 * refused with its named error. Requirement ids refer to docs/SPEC.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_fixtures.h"
#include "proto/codec.h"
#include "suites.h"

/* --- known answers: bytes built independently of this codec (docs/SPEC.md appendix A) -- */

static const uint8_t kat_write[] = {
	0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x23, 0x00, 0xff, 0xff, 0xfe, 0x11, 0x22, 0x33,
	0x44, 0x00, 0x02, 0x00, 0x04, 0x02, 0x57, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x10, 0x04, 0x00, 0x00, 0x10, 0x00, 0xa1, 0xb2, 0xc3, 0xd4, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00, 0x4d, 0x45, 0x54, 0x41,
};

static const uint8_t kat_ack[] = {
	0x01, 0x10, 0x00, 0x04, 0x00, 0x00, 0x04, 0x56, 0x00, 0x00, 0x00, 0x00, 0x55, 0x66, 0x77,
	0x88, 0x00, 0x02, 0x00, 0x00, 0x61, 0x2f, 0x00, 0x00, 0xff, 0xff, 0xff, 0xf0, 0x11, 0x22,
	0x33, 0x44, 0x00, 0x00, 0x05, 0xdc, 0x01, 0x7d, 0x78, 0x40, 0x00, 0x02, 0x00, 0x03, 0x00,
	0x00, 0x00, 0x00, 0x06, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x80,
};

static struct mrc_packet kat_write_packet(void)
{
	struct mrc_packet p;

	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_WRITE;
	p.flags = MRC_F_ACK_REQ;
	p.dst_qpn = 0x000123;
	p.psn = 0x00fffffe;
	p.tx_ts = 0x11223344;
	p.path_id = 2;
	p.u.data.msn = 7;
	p.u.data.msg_len = 4100;
	p.u.data.msg_off = 4096;
	p.u.data.rkey = 0xa1b2c3d4;
	p.u.data.raddr = 0x00007f0000001000ull;
	p.payload = (const uint8_t *)"META";
	p.payload_len = 4;
	return p;
}

static struct mrc_packet kat_ack_packet(void)
{
	struct mrc_packet p;

	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_ACK;
	p.flags = MRC_F_ECE;
	p.dst_qpn = 0x000456;
	p.tx_ts = 0x55667788;
	p.path_id = 2;
	p.u.ack.cum_psn = 0xfffffff0;
	p.u.ack.echo_ts = 0x11223344;
	p.u.ack.ack_delay_ns = 1500;
	p.u.ack.rate_hint_kbps = 25000000;
	p.u.ack.echo_path = 2;
	p.u.ack.ce_count = 3;
	/* SACK bits 1, 2, 17 and 255: LSB first within each byte. */
	p.u.ack.sack[0] = 0x06;
	p.u.ack.sack[2] = 0x02;
	p.u.ack.sack[31] = 0x80;
	return p;
}

START_TEST(mrc_encode__write_known_answer)
{
	struct mrc_packet p = kat_write_packet();
	size_t len = codec_encode_ok(&p);

	ck_assert_uint_eq(len, sizeof(kat_write));
	ck_assert_mem_eq(codec_buf, kat_write, sizeof(kat_write));
}
END_TEST

/* What the XDP fast path hands over: the headers of a packet it verified and placed. */
START_TEST(mrc_decode_placed__headers_without_payload)
{
	struct mrc_packet p = kat_write_packet(), got, full;
	size_t len = codec_encode_ok(&p), hdr = mrc_header_len(MRC_OP_WRITE);

	ck_assert_int_eq(mrc_decode(codec_buf, len, &full), MRC_WIRE_OK);
	ck_assert_int_eq(mrc_decode_placed(codec_buf, hdr, &got), MRC_WIRE_OK);
	ck_assert_ptr_null(got.payload);
	ck_assert_uint_eq(got.payload_len, full.payload_len);
	ck_assert_uint_eq(got.psn, full.psn);
	ck_assert_uint_eq(got.dst_qpn, full.dst_qpn);
	ck_assert_uint_eq(got.flags, full.flags);
	ck_assert_uint_eq(got.path_id, full.path_id);
	ck_assert_uint_eq(got.tx_ts, full.tx_ts);
	ck_assert_mem_eq(&got.u.data, &full.u.data, sizeof(got.u.data));
	/* the checksum is the fast path's business: a header whose sum no longer matches the
	 * payload it came with is still decoded */
	codec_buf[len - 1] ^= 0xff;
	ck_assert_int_eq(mrc_decode_placed(codec_buf, hdr, &got), MRC_WIRE_OK);
	ck_assert_int_eq(mrc_decode_placed(codec_buf, hdr - 1, &got), MRC_WIRE_E_TRUNCATED);
	codec_buf[0] = MRC_WIRE_VERSION + 1;
	ck_assert_int_eq(mrc_decode_placed(codec_buf, hdr, &got), MRC_WIRE_E_VERSION);

	/* only data opcodes have payloads to place */
	p = kat_ack_packet();
	len = codec_encode_ok(&p);
	ck_assert_int_eq(mrc_decode_placed(codec_buf, len, &got), MRC_WIRE_E_OPCODE);
}
END_TEST

START_TEST(mrc_encode__ack_known_answer)
{
	struct mrc_packet p = kat_ack_packet();
	size_t len = codec_encode_ok(&p);

	ck_assert_uint_eq(len, sizeof(kat_ack));
	ck_assert_mem_eq(codec_buf, kat_ack, sizeof(kat_ack));
}
END_TEST

START_TEST(mrc_decode__known_answers)
{
	struct mrc_packet want, got;

	want = kat_write_packet();
	ck_assert_int_eq(mrc_decode(kat_write, sizeof(kat_write), &got), MRC_WIRE_OK);
	codec_assert_same(&want, &got);
	/* The payload is not copied: it points into the datagram. */
	ck_assert_ptr_eq(got.payload, kat_write + 56);

	want = kat_ack_packet();
	ck_assert_int_eq(mrc_decode(kat_ack, sizeof(kat_ack), &got), MRC_WIRE_OK);
	codec_assert_same(&want, &got);
}
END_TEST

/* --- round trips -------------------------------------------------------------------- */

START_TEST(mrc_encode__round_trip_every_opcode_edge_values)
{
	for (size_t i = 0; i < CODEC_N_OPCODES; i++) {
		for (int variant = 0; variant < 3; variant++) {
			struct mrc_packet want = codec_sample(codec_opcodes[i], variant), got;
			size_t len = codec_encode_ok(&want);
			int err = mrc_decode(codec_buf, len, &got);

			ck_assert_msg(err == MRC_WIRE_OK, "%s variant %d: %s",
				      mrc_opcode_name(want.opcode), variant,
				      mrc_wire_error_name(err));
			ck_assert_uint_eq(len, mrc_header_len(want.opcode) + got.payload_len);
			codec_assert_same(&want, &got);
		}
	}
}
END_TEST

/* The largest packet the protocol allows decodes; one byte more is oversize. */
START_TEST(mrc_decode__max_packet_accepted_one_more_oversize)
{
	struct mrc_packet p = codec_sample(MRC_OP_WRITE, 1), got;
	size_t len = codec_encode_ok(&p);

	ck_assert_uint_eq(len, MRC_WIRE_MAX_PACKET);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert_int_eq(mrc_decode(codec_buf, len + 1, &got), MRC_WIRE_E_OVERSIZE);
	ck_assert_int_eq(mrc_decode(codec_buf, SIZE_MAX, &got), MRC_WIRE_E_OVERSIZE);
}
END_TEST

/* Zero-copy encoding: a payload already at its final place is left where it is. */
START_TEST(mrc_encode__payload_in_place)
{
	struct mrc_packet p = kat_write_packet(), got;
	size_t hdr = mrc_header_len(MRC_OP_WRITE), len;

	memcpy(codec_buf + hdr, "META", 4);
	p.payload = codec_buf + hdr;
	len = codec_encode_ok(&p);
	ck_assert_mem_eq(codec_buf, kat_write, len);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
}
END_TEST

/* Headers alone, the payload left where it is: headers then payload are exactly what
 * mrc_encode writes whole, for every opcode (all but data and UD ones are written whole). */
START_TEST(mrc_encode_headers__then_payload_equals_whole)
{
	static uint8_t whole[MRC_WIRE_MAX_PACKET], hdrs[MRC_WIRE_MAX_PACKET];

	for (size_t i = 0; i < CODEC_N_OPCODES; i++) {
		for (int variant = 0; variant < 3; variant++) {
			struct mrc_packet p = codec_sample(codec_opcodes[i], variant);
			size_t len, hlen;

			ck_assert_int_eq(mrc_encode(&p, whole, sizeof(whole), &len), MRC_WIRE_OK);
			ck_assert_int_eq(mrc_encode_headers(&p, hdrs, sizeof(hdrs), &hlen),
					 MRC_WIRE_OK);
			if (!mrc_opcode_is_data(p.opcode) && !mrc_opcode_is_ud(p.opcode)) {
				ck_assert_uint_eq(hlen, len);
				ck_assert_mem_eq(hdrs, whole, len);
				continue;
			}
			ck_assert_uint_eq(hlen, mrc_header_len(p.opcode));
			ck_assert_uint_eq(hlen + p.payload_len, len);
			ck_assert_mem_eq(hdrs, whole, hlen);
			ck_assert(!p.payload_len || !memcmp(whole + hlen, p.payload, p.payload_len));
			/* the headers need room only for themselves */
			ck_assert_int_eq(mrc_encode_headers(&p, hdrs, hlen, &hlen), MRC_WIRE_OK);
			ck_assert_int_eq(mrc_encode_headers(&p, hdrs, hlen - 1, &hlen),
					 MRC_WIRE_E_NOSPACE);
		}
	}
}
END_TEST

/* Reserved fields and unknown flags are ignored on receipt and written as zero. */
START_TEST(mrc_decode__reserved_fields_and_unknown_flags_ignored)
{
	uint8_t pkt[sizeof(kat_ack)];
	struct mrc_packet got;
	size_t len;

	memcpy(pkt, kat_ack, sizeof(pkt));
	pkt[2] |= 0xff; /* flags, high byte: all unknown bits */
	pkt[3] |= 0x80;
	pkt[22] = 0xab; /* mrc_hdr.reserved */
	pkt[23] = 0xcd;
	codec_reseal(pkt, sizeof(pkt));
	ck_assert_int_eq(mrc_decode(pkt, sizeof(pkt), &got), MRC_WIRE_OK);
	ck_assert_uint_eq(got.flags, MRC_F_ECE);
	ck_assert_int_eq(mrc_encode(&got, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_OK);
	ck_assert_mem_eq(codec_buf, kat_ack, sizeof(kat_ack));
}
END_TEST

/* A flag an opcode does not define, and psn where it means nothing, are ignored on receipt
 * and never sent. */
START_TEST(mrc_codec__undefined_flags_and_psn_zeroed)
{
	struct mrc_packet w = codec_sample(MRC_OP_WRITE, 2), a = codec_sample(MRC_OP_ACK, 2), got;
	size_t len;

	w.flags = MRC_F_KNOWN & ~(MRC_F_AUTH | MRC_F_SEALED); /* both need a trailer */
	len = codec_encode_ok(&w);
	ck_assert_uint_eq((unsigned)(codec_buf[2] << 8 | codec_buf[3]),
			  MRC_F_ACK_REQ | MRC_F_RETX | MRC_F_INORDER);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert_uint_eq(got.flags, MRC_F_ACK_REQ | MRC_F_RETX | MRC_F_INORDER);

	a.psn = 0x12345678;
	len = codec_encode_ok(&a);
	ck_assert_uint_eq(codec_buf[8] | codec_buf[9] | codec_buf[10] | codec_buf[11], 0);
	codec_put_be32(codec_buf + 8, 0x12345678);
	codec_buf[3] |= MRC_F_SOLICITED;
	codec_reseal(codec_buf, len);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert_uint_eq(got.psn, 0);
	ck_assert_uint_eq(got.flags, 0);
	ck_assert_uint_eq(mrc_opcode_flags(MRC_OP_SEND) & MRC_F_SOLICITED, MRC_F_SOLICITED);
	ck_assert_uint_eq(mrc_opcode_flags(0x7f), 0);
}
END_TEST

/* --- malformed classes, in the decoder's documented check order [R-7] ----------------- */

/* Shorter than the common header or the opcode's extension: e_truncated; cut inside the
 * payload: the length fields disagree with the datagram, e_length. */
START_TEST(mrc_decode__truncated_every_prefix_every_opcode)
{
	for (size_t i = 0; i < CODEC_N_OPCODES; i++) {
		struct mrc_packet p = codec_sample(codec_opcodes[i], 2), got;
		size_t len = codec_encode_ok(&p);
		size_t hdr = mrc_header_len(p.opcode);

		for (size_t cut = 0; cut < len; cut++) {
			int want = cut < hdr ? MRC_WIRE_E_TRUNCATED : MRC_WIRE_E_LENGTH;

			ck_assert_msg(mrc_decode(codec_buf, cut, &got) == want, "%s cut at %zu",
				      mrc_opcode_name(p.opcode), cut);
		}
	}
}
END_TEST

START_TEST(mrc_decode__unknown_version)
{
	struct mrc_packet p = kat_write_packet(), got;
	size_t len = codec_encode_ok(&p);
	static const uint8_t versions[] = { 0, 2, 0x11, 0xff };

	for (size_t i = 0; i < sizeof(versions); i++) {
		codec_buf[0] = versions[i];
		codec_reseal(codec_buf, len);
		ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_E_VERSION);
	}
}
END_TEST

START_TEST(mrc_decode__unknown_opcode_every_value)
{
	struct mrc_packet p = kat_write_packet(), got;
	size_t len = codec_encode_ok(&p);
	unsigned unknown = 0;

	for (unsigned op = 0; op < 256; op++) {
		if (mrc_opcode_is_known((uint8_t)op))
			continue;
		unknown++;
		codec_buf[1] = (uint8_t)op;
		codec_reseal(codec_buf, len);
		ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_E_OPCODE);
		ck_assert_str_eq(mrc_opcode_name((uint8_t)op), "unknown");
	}
	ck_assert_uint_eq(unknown, 256 - CODEC_N_OPCODES);
}
END_TEST

/* payload_len that disagrees with the datagram either way, or trailing bytes. */
START_TEST(mrc_decode__inconsistent_length)
{
	struct mrc_packet p = kat_write_packet(), got;
	size_t len = codec_encode_ok(&p);
	static const uint16_t lies[] = { 0, 3, 5, 0xffff };

	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		codec_put_be16(codec_buf + 18, lies[i]);
		codec_reseal(codec_buf, len);
		ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_E_LENGTH);
	}
	len = codec_encode_ok(&p);
	codec_buf[len] = 0;
	ck_assert_int_eq(mrc_decode(codec_buf, len + 1, &got), MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(mrc_decode(codec_buf, len + 2, &got), MRC_WIRE_E_LENGTH);
}
END_TEST

/* Opcodes that carry no payload refuse one even when the header says so honestly. */
START_TEST(mrc_decode__payload_where_none_allowed)
{
	static const uint8_t ops[] = { MRC_OP_READ_REQ, MRC_OP_ATOMIC_REQ, MRC_OP_ACK, MRC_OP_NAK,
				       MRC_OP_PROBE_REPLY, MRC_OP_CLOSE };

	for (size_t i = 0; i < sizeof(ops); i++) {
		struct mrc_packet p = codec_sample(ops[i], 2), got;
		size_t len = codec_encode_ok(&p);

		memset(codec_buf + len, 0x55, 8);
		codec_put_be16(codec_buf + 18, 8);
		codec_reseal(codec_buf, len + 8);
		ck_assert_msg(mrc_decode(codec_buf, len + 8, &got) == MRC_WIRE_E_LENGTH, "%s",
			      mrc_opcode_name(ops[i]));
		p.payload = codec_payload;
		p.payload_len = 8;
		ck_assert_int_eq(mrc_encode(&p, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_LENGTH);
	}
}
END_TEST

/*
 * Any single flipped bit is refused. Bits of the fields checked before the checksum
 * (version, opcode, payload_len, the AUTH flag that adds a trailer) report their own error;
 * every other bit reports e_checksum.
 */
START_TEST(mrc_decode__corruption_every_bit_every_opcode)
{
	for (size_t i = 0; i < CODEC_N_OPCODES; i++) {
		struct mrc_packet p = codec_sample(codec_opcodes[i], 2), got;
		size_t len = codec_encode_ok(&p);

		for (size_t bit = 0; bit < len * 8; bit++) {
			size_t byte = bit / 8;
			int early = byte < 2 || byte == 18 || byte == 19 ||
				    (byte == 3 && 1u << (bit % 8) == MRC_F_AUTH);
			int err;

			codec_buf[byte] ^= (uint8_t)(1u << (bit % 8));
			err = mrc_decode(codec_buf, len, &got);
			codec_buf[byte] ^= (uint8_t)(1u << (bit % 8));
			ck_assert_msg(err != MRC_WIRE_OK, "%s bit %zu accepted",
				      mrc_opcode_name(p.opcode), bit);
			if (!early)
				ck_assert_msg(err == MRC_WIRE_E_CHECKSUM, "%s bit %zu: %s",
					      mrc_opcode_name(p.opcode), bit,
					      mrc_wire_error_name(err));
		}
	}
}
END_TEST

/* A packet is judged on integrity before its fields: a bad QPN behind a bad checksum
 * reports the checksum. */
START_TEST(mrc_decode__checksum_checked_before_fields)
{
	struct mrc_packet got;
	uint8_t pkt[sizeof(kat_write)];

	memcpy(pkt, kat_write, sizeof(pkt));
	codec_put_be32(pkt + 4, 0); /* dst_qpn 0 is not allowed for WRITE */
	ck_assert_int_eq(mrc_decode(pkt, sizeof(pkt), &got), MRC_WIRE_E_CHECKSUM);
	codec_reseal(pkt, sizeof(pkt));
	ck_assert_int_eq(mrc_decode(pkt, sizeof(pkt), &got), MRC_WIRE_E_QPN);
}
END_TEST

/* Rewrites one big-endian field of an encoded packet, reseals it and decodes it. */
static int decode_with(const struct mrc_packet *p, size_t off, unsigned width, uint64_t value)
{
	struct mrc_packet got;
	size_t len = codec_encode_ok(p);

	for (unsigned b = 0; b < width; b++)
		codec_buf[off + b] = (uint8_t)(value >> (8 * (width - 1 - b)));
	codec_reseal(codec_buf, len);
	return mrc_decode(codec_buf, len, &got);
}

#define HDR_OFF(f) __builtin_offsetof(struct mrc_hdr, f)
#define EXT_OFF(t, f) (sizeof(struct mrc_hdr) + __builtin_offsetof(t, f))

/* QPN rules per opcode. */
START_TEST(mrc_decode__qpn_rules)
{
	struct mrc_packet w = codec_sample(MRC_OP_WRITE, 2), d = codec_sample(MRC_OP_DISCOVER, 2),
			  pr = codec_sample(MRC_OP_PROBE, 2), a = codec_sample(MRC_OP_ACK, 2);

	ck_assert_int_eq(decode_with(&w, HDR_OFF(dst_qpn), 4, 0), MRC_WIRE_E_QPN);
	ck_assert_int_eq(decode_with(&w, HDR_OFF(dst_qpn), 4, MRC_QPN_MAX + 1), MRC_WIRE_E_QPN);
	ck_assert_int_eq(decode_with(&w, HDR_OFF(dst_qpn), 4, UINT32_MAX), MRC_WIRE_E_QPN);
	ck_assert_int_eq(decode_with(&w, HDR_OFF(dst_qpn), 4, MRC_QPN_MAX), MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&a, HDR_OFF(dst_qpn), 4, 0), MRC_WIRE_E_QPN);
	ck_assert_int_eq(decode_with(&d, HDR_OFF(dst_qpn), 4, 1), MRC_WIRE_E_QPN);
	ck_assert_int_eq(decode_with(&pr, HDR_OFF(dst_qpn), 4, 0), MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&pr, HDR_OFF(dst_qpn), 4, MRC_QPN_MAX + 1), MRC_WIRE_E_QPN);

	/* The encoder refuses the same packets. */
	w.dst_qpn = 0;
	ck_assert_int_eq(mrc_encode(&w, codec_buf, sizeof(codec_buf), &(size_t){ 0 }), MRC_WIRE_E_QPN);
	d.dst_qpn = 7;
	ck_assert_int_eq(mrc_encode(&d, codec_buf, sizeof(codec_buf), &(size_t){ 0 }), MRC_WIRE_E_QPN);
}
END_TEST

/* Data extension consistency. */
START_TEST(mrc_decode__data_length_rules)
{
	/* msg_len 12293, msg_off 4096, 4096 B: last offset 8197 */
	struct mrc_packet w = codec_sample(MRC_OP_WRITE, 2);
	struct mrc_packet empty = codec_sample(MRC_OP_WRITE, 0);

	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, msg_off), 4, 8197),
			 MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, msg_off), 4, 8197 + 1),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, msg_off), 4, UINT32_MAX),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, msg_len), 4, 8191),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, msg_len), 4,
				     (uint64_t)MRC_MAX_MSG_LEN + 1),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, raddr), 8,
				     UINT64_MAX - 4095),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, raddr), 8,
				     UINT64_MAX - 4096),
			 MRC_WIRE_OK);
	/* An empty packet exists only as the one packet of an empty message. */
	ck_assert_int_eq(decode_with(&empty, EXT_OFF(struct mrc_data_ext, msg_len), 4, 1),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&empty, EXT_OFF(struct mrc_data_ext, msg_off), 4, 1),
			 MRC_WIRE_E_LENGTH);
}
END_TEST

/* Fields an opcode does not use must be zero: confusing opcodes is caught. */
START_TEST(mrc_decode__data_fields_per_opcode)
{
	struct mrc_packet s = codec_sample(MRC_OP_SEND, 2), w = codec_sample(MRC_OP_WRITE, 2),
			  r = codec_sample(MRC_OP_READ_RESP, 2), wi = codec_sample(MRC_OP_WRITE_IMM, 2);

	ck_assert_int_eq(decode_with(&s, EXT_OFF(struct mrc_data_ext, rkey), 4, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&s, EXT_OFF(struct mrc_data_ext, raddr), 8, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&s, EXT_OFF(struct mrc_data_ext, imm), 4, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, rsn), 4, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&w, EXT_OFF(struct mrc_data_ext, imm), 4, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&r, EXT_OFF(struct mrc_data_ext, rsn), 4, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&wi, EXT_OFF(struct mrc_data_ext, rsn), 4, 9), MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&wi, EXT_OFF(struct mrc_data_ext, imm), 4, 9), MRC_WIRE_OK);
}
END_TEST

/* SEND_INV: rkey names the key to invalidate, whatever it is; no address, no immediate
 * [R-520, R-521]. */
START_TEST(mrc_decode__send_inv_fields)
{
	struct mrc_packet si = codec_sample(MRC_OP_SEND_INV, 2);

	ck_assert_int_eq(decode_with(&si, EXT_OFF(struct mrc_data_ext, rkey), 4, 0), MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&si, EXT_OFF(struct mrc_data_ext, rkey), 4, 0x12345678),
			 MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&si, EXT_OFF(struct mrc_data_ext, raddr), 8, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&si, EXT_OFF(struct mrc_data_ext, imm), 4, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_uint_eq(mrc_opcode_flags(MRC_OP_SEND_INV), mrc_opcode_flags(MRC_OP_SEND));
	ck_assert(mrc_opcode_consumes_receive(MRC_OP_SEND_INV));
	ck_assert(mrc_opcode_is_sequenced(MRC_OP_SEND_INV));
}
END_TEST

/* ATOMIC_REQ: a known operation, reserved bytes zero, no compare for FETCH_ADD, 8 bytes
 * that do not wrap; alignment is left to the responder, which NAKs it. */
START_TEST(mrc_decode__atomic_req_rules)
{
	struct mrc_packet c = codec_sample(MRC_OP_ATOMIC_REQ, 0); /* CMP_SWAP */
	struct mrc_packet f = codec_sample(MRC_OP_ATOMIC_REQ, 2); /* FETCH_ADD */

	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, op), 1, 0),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, op), 1, 3),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, reserved), 1, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&f, EXT_OFF(struct mrc_atomic_ext, compare), 8, 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, compare), 8, 1),
			 MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, raddr), 8,
				     UINT64_MAX - 7),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, sink_addr), 8,
				     UINT64_MAX - 7),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, sink_addr), 8,
				     UINT64_MAX - 8),
			 MRC_WIRE_OK);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_atomic_ext, raddr), 8, 0x1004),
			 MRC_WIRE_OK);
}
END_TEST

START_TEST(mrc_decode__read_req_rules)
{
	struct mrc_packet r = codec_sample(MRC_OP_READ_REQ, 2); /* length 65536 */

	ck_assert_int_eq(decode_with(&r, EXT_OFF(struct mrc_read_req_ext, length), 4,
				     (uint64_t)MRC_MAX_MSG_LEN + 1),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&r, EXT_OFF(struct mrc_read_req_ext, raddr), 8,
				     UINT64_MAX - 65535),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&r, EXT_OFF(struct mrc_read_req_ext, sink_addr), 8,
				     UINT64_MAX - 65535),
			 MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&r, EXT_OFF(struct mrc_read_req_ext, sink_addr), 8,
				     UINT64_MAX - 65536),
			 MRC_WIRE_OK);
}
END_TEST

/* ACK bit 0 would claim cum_psn arrived, contradicting cum_psn. */
START_TEST(mrc_decode__ack_sack_bit0)
{
	struct mrc_packet a = codec_sample(MRC_OP_ACK, 0);

	ck_assert_int_eq(decode_with(&a, EXT_OFF(struct mrc_ack_ext, sack), 1, 0x01),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&a, EXT_OFF(struct mrc_ack_ext, sack), 1, 0xfe), MRC_WIRE_OK);
}
END_TEST

START_TEST(mrc_decode__nak_rules)
{
	struct mrc_packet n = codec_sample(MRC_OP_NAK, 2); /* remote access */

	ck_assert_int_eq(decode_with(&n, EXT_OFF(struct mrc_nak_ext, kind), 1, 0),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&n, EXT_OFF(struct mrc_nak_ext, kind), 1,
				     MRC_NAK_KIND_MAX + 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&n, EXT_OFF(struct mrc_nak_ext, retry_after), 2, 10),
			 MRC_WIRE_E_FIELD);
	for (unsigned k = 1; k <= MRC_NAK_KIND_MAX; k++) {
		ck_assert_int_eq(decode_with(&n, EXT_OFF(struct mrc_nak_ext, kind), 1, k),
				 MRC_WIRE_OK);
		ck_assert_str_ne(mrc_nak_kind_name((uint8_t)k), "unknown");
	}
	ck_assert_str_eq(mrc_nak_kind_name(0), "unknown");
}
END_TEST

START_TEST(mrc_decode__close_reason)
{
	struct mrc_packet c = codec_sample(MRC_OP_CLOSE, 0);

	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_close_ext, reason), 4,
				     MRC_CLOSE_REASON_MAX + 1),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&c, EXT_OFF(struct mrc_close_ext, reason), 4,
				     MRC_CLOSE_SHUTDOWN),
			 MRC_WIRE_OK);
}
END_TEST

/* Discovery: record count vs payload, count range, families, planes, port, payload floor
 * [R-90..R-93]. */
START_TEST(mrc_decode__discover_rules)
{
	struct mrc_packet d = codec_sample(MRC_OP_DISCOVER, 2); /* two records: v4 plane 0, v6 plane 1 */
	size_t rec0 = sizeof(struct mrc_hdr) + sizeof(struct mrc_discover_ext);
	size_t rec1 = rec0 + sizeof(struct mrc_plane_addr);
	size_t fam = __builtin_offsetof(struct mrc_plane_addr, family);
	size_t plane = __builtin_offsetof(struct mrc_plane_addr, plane);
	size_t addr = __builtin_offsetof(struct mrc_plane_addr, addr);
	size_t n_addrs = EXT_OFF(struct mrc_discover_ext, n_addrs);
	struct mrc_packet got;
	size_t len;

	ck_assert_int_eq(decode_with(&d, n_addrs, 1, 1), MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&d, n_addrs, 1, 3), MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&d, n_addrs, 1, 255), MRC_WIRE_E_LENGTH);
	ck_assert_int_eq(decode_with(&d, rec0 + fam, 1, 5), MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, rec0 + fam, 1, MRC_AF_INET6), MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, rec1 + fam, 1, MRC_AF_INET), MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, rec1 + plane, 1, 0), MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, rec1 + plane, 1, MRC_MAX_PLANES), MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, rec0 + addr + 10, 1, 0), MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, EXT_OFF(struct mrc_discover_ext, udp_port), 2, 0),
			 MRC_WIRE_E_FIELD);
	ck_assert_int_eq(decode_with(&d, EXT_OFF(struct mrc_discover_ext, max_payload), 2,
				     MRC_MIN_PAYLOAD - 1),
			 MRC_WIRE_E_FIELD);

	/* Zero records, or seventeen with a payload that honestly holds seventeen. */
	len = codec_encode_ok(&d);
	codec_buf[n_addrs] = 0;
	codec_put_be16(codec_buf + 18, 0);
	codec_reseal(codec_buf, rec0);
	ck_assert_int_eq(mrc_decode(codec_buf, rec0, &got), MRC_WIRE_E_FIELD);
	d = codec_sample(MRC_OP_DISCOVER, 1);
	len = codec_encode_ok(&d);
	memcpy(codec_buf + len, codec_buf + rec0, sizeof(struct mrc_plane_addr));
	codec_buf[n_addrs] = MRC_MAX_PLANES + 1;
	codec_put_be16(codec_buf + 18, (MRC_MAX_PLANES + 1) * sizeof(struct mrc_plane_addr));
	codec_reseal(codec_buf, len + sizeof(struct mrc_plane_addr));
	ck_assert_int_eq(mrc_decode(codec_buf, len + sizeof(struct mrc_plane_addr), &got),
			 MRC_WIRE_E_FIELD);

	d.u.discover.n_addrs = 0;
	ck_assert_int_eq(mrc_encode(&d, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_FIELD);
	d.u.discover.n_addrs = MRC_MAX_PLANES + 1;
	ck_assert_int_eq(mrc_encode(&d, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_FIELD);
}
END_TEST

/* The encoder never writes past cap, and says so. */
START_TEST(mrc_encode__nospace)
{
	for (size_t i = 0; i < CODEC_N_OPCODES; i++) {
		struct mrc_packet p = codec_sample(codec_opcodes[i], 2);
		size_t need = codec_encode_ok(&p), len = 0;

		for (size_t cap = 0; cap < need; cap += 1 + cap / 8) {
			memset(codec_buf, 0xee, sizeof(codec_buf));
			ck_assert_int_eq(mrc_encode(&p, codec_buf, cap, &len), MRC_WIRE_E_NOSPACE);
			ck_assert_uint_eq(codec_buf[cap], 0xee);
		}
	}
}
END_TEST

START_TEST(mrc_encode__unknown_opcode)
{
	struct mrc_packet p = kat_write_packet();
	size_t len;

	p.opcode = 0x7f;
	ck_assert_int_eq(mrc_encode(&p, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_OPCODE);
}
END_TEST

/* Names are stable API: counters and the CLI print them. */
START_TEST(mrc_wire_error_name__every_code_named_distinctly)
{
	for (int a = 0; a <= MRC_WIRE_ERROR_MAX; a++) {
		ck_assert_str_ne(mrc_wire_error_name(a), "e_unknown");
		for (int b = 0; b < a; b++)
			ck_assert_str_ne(mrc_wire_error_name(a), mrc_wire_error_name(b));
	}
	ck_assert_str_eq(mrc_wire_error_name(MRC_WIRE_E_CHECKSUM), "e_checksum");
	ck_assert_str_eq(mrc_wire_error_name(-1), "e_unknown");
	ck_assert_str_eq(mrc_wire_error_name(MRC_WIRE_ERROR_MAX + 1), "e_unknown");
}
END_TEST

START_TEST(mrc_opcode_is_sequenced__exactly_the_data_read_and_atomic_opcodes)
{
	unsigned sequenced = 0;

	for (unsigned op = 0; op < 256; op++)
		sequenced += (unsigned)mrc_opcode_is_sequenced((uint8_t)op);
	ck_assert_uint_eq(sequenced, 8); /* the six data opcodes, READ_REQ, ATOMIC_REQ */
	ck_assert(mrc_opcode_is_sequenced(MRC_OP_READ_REQ));
	ck_assert(!mrc_opcode_is_data(MRC_OP_READ_REQ));
	ck_assert(mrc_opcode_is_sequenced(MRC_OP_ATOMIC_REQ));
	ck_assert(!mrc_opcode_is_data(MRC_OP_ATOMIC_REQ));
	ck_assert(mrc_opcode_is_data(MRC_OP_READ_RESP));
	ck_assert(!mrc_opcode_is_sequenced(MRC_OP_ACK));
}
END_TEST

Suite *codec_suite(void)
{
	Suite *s = suite_create("codec");
	TCase *known = tcase_create("known_answers");
	TCase *trip = tcase_create("round_trip");
	TCase *bad = tcase_create("malformed");

	tcase_add_test(known, mrc_encode__write_known_answer);
	tcase_add_test(known, mrc_encode__ack_known_answer);
	tcase_add_test(known, mrc_decode__known_answers);
	suite_add_tcase(s, known);

	tcase_add_test(trip, mrc_encode__round_trip_every_opcode_edge_values);
	tcase_add_test(trip, mrc_decode__max_packet_accepted_one_more_oversize);
	tcase_add_test(trip, mrc_encode__payload_in_place);
	tcase_add_test(trip, mrc_encode_headers__then_payload_equals_whole);
	tcase_add_test(trip, mrc_decode__reserved_fields_and_unknown_flags_ignored);
	tcase_add_test(trip, mrc_codec__undefined_flags_and_psn_zeroed);
	tcase_add_test(trip, mrc_encode__nospace);
	tcase_add_test(trip, mrc_encode__unknown_opcode);
	tcase_add_test(trip, mrc_wire_error_name__every_code_named_distinctly);
	tcase_add_test(trip, mrc_opcode_is_sequenced__exactly_the_data_read_and_atomic_opcodes);
	suite_add_tcase(s, trip);

	tcase_add_test(bad, mrc_decode__truncated_every_prefix_every_opcode);
	tcase_add_test(bad, mrc_decode__unknown_version);
	tcase_add_test(bad, mrc_decode__unknown_opcode_every_value);
	tcase_add_test(bad, mrc_decode__inconsistent_length);
	tcase_add_test(bad, mrc_decode__payload_where_none_allowed);
	tcase_add_test(bad, mrc_decode__corruption_every_bit_every_opcode);
	tcase_add_test(bad, mrc_decode__checksum_checked_before_fields);
	tcase_add_test(bad, mrc_decode__qpn_rules);
	tcase_add_test(bad, mrc_decode__data_length_rules);
	tcase_add_test(bad, mrc_decode__data_fields_per_opcode);
	tcase_add_test(bad, mrc_decode__send_inv_fields);
	tcase_add_test(bad, mrc_decode__read_req_rules);
	tcase_add_test(bad, mrc_decode__atomic_req_rules);
	tcase_add_test(bad, mrc_decode__ack_sack_bit0);
	tcase_add_test(bad, mrc_decode__nak_rules);
	tcase_add_test(bad, mrc_decode__close_reason);
	tcase_add_test(bad, mrc_decode__discover_rules);
	tcase_add_test(bad, mrc_decode_placed__headers_without_payload);
	tcase_set_timeout(bad, 60);
	suite_add_tcase(s, bad);
	return s;
}
