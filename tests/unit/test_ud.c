/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto/ud.c and the UD opcodes of the codec: unreliable datagrams (SPEC 4.8).
 * Requirement ids refer to docs/SPEC.md.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "codec_fixtures.h"
#include "proto/checksum.h"
#include "proto/ud.h"
#include "suites.h"

static uint8_t wire[2048];

/* Headers by mrc_ud_encode, the payload behind them as a gather list puts it. */
static size_t encode_whole(const struct mrc_ud_datagram *d)
{
	size_t hdr = 0;

	ck_assert_int_eq(mrc_ud_encode(d, wire, sizeof(wire), &hdr), MRC_WIRE_OK);
	ck_assert_uint_eq(hdr, sizeof(struct mrc_hdr) + sizeof(struct mrc_ud_ext));
	memcpy(wire + hdr, d->payload, d->payload_len);
	return hdr + d->payload_len;
}

/* a datagram decodes to what was sent, payload byte for byte. */
START_TEST(mrc_ud_encode__round_trip_with_payload_by_reference)
{
	static uint8_t msg[1000];
	struct mrc_ud_datagram d = { .dst_qpn = 0x123456, .src_qpn = 0x000fff, .qkey = 0x11111111,
				     .psn = 0xfffffffe, .tx_ts = 77, .has_imm = true,
				     .imm = 0xcafef00d, .solicited = true, .payload = msg,
				     .payload_len = sizeof(msg) };
	struct mrc_packet pkt;
	size_t len;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	len = encode_whole(&d);
	ck_assert_int_eq(mrc_decode(wire, len, &pkt), MRC_WIRE_OK);
	ck_assert_uint_eq(pkt.opcode, MRC_OP_UD_SEND_IMM);
	ck_assert_uint_eq(pkt.flags, MRC_F_SOLICITED);
	ck_assert_uint_eq(pkt.dst_qpn, 0x123456);
	ck_assert_uint_eq(pkt.psn, 0xfffffffe);
	ck_assert_uint_eq(pkt.u.ud.src_qpn, 0xfff);
	ck_assert_uint_eq(pkt.u.ud.qkey, 0x11111111);
	ck_assert_uint_eq(pkt.u.ud.imm, 0xcafef00d);
	ck_assert_uint_eq(pkt.payload_len, sizeof(msg));
	ck_assert_mem_eq(pkt.payload, msg, sizeof(msg));

	d.has_imm = false;
	d.solicited = false;
	len = encode_whole(&d);
	ck_assert_int_eq(mrc_decode(wire, len, &pkt), MRC_WIRE_OK);
	ck_assert_uint_eq(pkt.opcode, MRC_OP_UD_SEND);
	ck_assert_uint_eq(pkt.flags, 0);
	ck_assert_uint_eq(pkt.u.ud.imm, 0);
}
END_TEST

/* the decoder's rules for UD: source QPN in range, no immediate on UD_SEND, a QP as
 * destination; ACK_REQ and RETX mean nothing here and are read as zero. */
START_TEST(mrc_decode__ud_field_rules)
{
	struct mrc_packet p = codec_sample(MRC_OP_UD_SEND_IMM, 2), got;
	size_t len;

	p.u.ud.src_qpn = 0;
	ck_assert_int_eq(mrc_encode(&p, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_FIELD);
	p.u.ud.src_qpn = MRC_QPN_MAX + 1;
	ck_assert_int_eq(mrc_encode(&p, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_FIELD);
	p = codec_sample(MRC_OP_UD_SEND, 2);
	len = codec_encode_ok(&p);
	codec_put_be32(codec_buf + sizeof(struct mrc_hdr) + offsetof(struct mrc_ud_ext, imm), 1);
	codec_reseal(codec_buf, len);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_E_FIELD);
	p = codec_sample(MRC_OP_UD_SEND, 2);
	p.dst_qpn = MRC_QPN_DAEMON;
	ck_assert_int_eq(mrc_encode(&p, codec_buf, sizeof(codec_buf), &len), MRC_WIRE_E_QPN);
	p = codec_sample(MRC_OP_UD_SEND, 2);
	len = codec_encode_ok(&p);
	codec_put_be16(codec_buf + 2, MRC_F_ACK_REQ | MRC_F_RETX | MRC_F_SOLICITED);
	codec_reseal(codec_buf, len);
	ck_assert_int_eq(mrc_decode(codec_buf, len, &got), MRC_WIRE_OK);
	ck_assert_uint_eq(got.flags, MRC_F_SOLICITED);
	ck_assert(!mrc_opcode_is_sequenced(MRC_OP_UD_SEND));
	ck_assert(!mrc_opcode_is_data(MRC_OP_UD_SEND_IMM));
}
END_TEST

/*
 * a flow (source QP, destination QP and address) keeps one path, so its datagrams
 * arrive in order; the flows of many destinations spread over every (plane, source port)
 * pair of the shared planes, and never onto a plane outside the set.
 */
START_TEST(mrc_ud_path__one_path_per_flow_flows_spread)
{
	const uint32_t planes = 0x2d; /* planes 0, 2, 3, 5 */
	const unsigned sports = 16, flows = 4 * 16 * 64;
	unsigned seen[32][16];
	uint8_t dgid[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };
	uint8_t plane, again_plane;
	unsigned port, again_port;

	memset(seen, 0, sizeof(seen));
	for (uint32_t dst = 1; dst <= flows; dst++) {
		uint32_t flow = mrc_ud_flow(0x1234, dst, dgid);

		ck_assert(mrc_ud_path(flow, planes, sports, &plane, &port));
		ck_assert(planes >> plane & 1);
		ck_assert_uint_lt(port, sports);
		ck_assert(mrc_ud_path(mrc_ud_flow(0x1234, dst, dgid), planes, sports, &again_plane,
				      &again_port));
		ck_assert_uint_eq(again_plane, plane); /* the same flow, the same path */
		ck_assert_uint_eq(again_port, port);
		seen[plane][port]++;
	}
	/* 64 flows per pair on average: each pair gets some, none more than twice its share */
	for (unsigned p = 0; p < 32; p++)
		for (unsigned k = 0; k < sports; k++) {
			if (!(planes >> p & 1)) {
				ck_assert_uint_eq(seen[p][k], 0);
				continue;
			}
			ck_assert_uint_gt(seen[p][k], 16);
			ck_assert_uint_lt(seen[p][k], 128);
		}
	/* the address and the source QP are part of the flow too */
	ck_assert_uint_ne(mrc_ud_flow(1, 2, dgid), mrc_ud_flow(2, 2, dgid));
	dgid[15] = 3;
	ck_assert_uint_ne(mrc_ud_flow(1, 2, dgid), mrc_ud_flow(1, 2, (uint8_t[16]){ 0 }));
	ck_assert(!mrc_ud_path(0, 0, sports, &plane, &port));
	ck_assert(!mrc_ud_path(0, planes, 0, &plane, &port));
	ck_assert(mrc_ud_path(UINT32_MAX, 1u << 7, 3, &plane, &port));
	ck_assert_uint_eq(plane, 7);
}
END_TEST

/* qkey first, then a receive, then its room for the GRH and the payload. */
START_TEST(mrc_ud_check__qkey_receive_room)
{
	struct mrc_packet p = codec_sample(MRC_OP_UD_SEND, 2); /* 1024 bytes, qkey 0x11111111 */

	ck_assert_int_eq(mrc_ud_check(&p, 0x11111111, true, 40 + 1024), MRC_DROP_NONE);
	ck_assert_int_eq(mrc_ud_check(&p, 0x11111112, true, 1 << 20), MRC_DROP_UD_QKEY);
	ck_assert_int_eq(mrc_ud_check(&p, 0x11111112, false, 0), MRC_DROP_UD_QKEY);
	ck_assert_int_eq(mrc_ud_check(&p, 0x11111111, false, 0), MRC_DROP_UD_NO_RECEIVE);
	ck_assert_int_eq(mrc_ud_check(&p, 0x11111111, true, 40 + 1023), MRC_DROP_UD_TOO_LONG);
	ck_assert_int_eq(mrc_ud_check(&p, 0x11111111, true, 1023), MRC_DROP_UD_TOO_LONG);
	p = codec_sample(MRC_OP_SEND, 2);
	ck_assert_int_eq(mrc_ud_check(&p, 0, true, 1 << 20), MRC_DROP_OPCODE_REFUSED);
	p = codec_sample(MRC_OP_UD_SEND, 0); /* empty: the GRH alone */
	ck_assert_int_eq(mrc_ud_check(&p, 0, true, 40), MRC_DROP_NONE);
	ck_assert_int_eq(mrc_ud_check(&p, 0, true, 39), MRC_DROP_UD_TOO_LONG);
}
END_TEST

/* bit 31 of a WR's qkey asks for the QP's own. */
START_TEST(mrc_ud_send_qkey__bit_31_takes_the_qps)
{
	ck_assert_uint_eq(mrc_ud_send_qkey(0x12345678, 0x1111), 0x12345678);
	ck_assert_uint_eq(mrc_ud_send_qkey(0x80000000, 0x1111), 0x1111);
	ck_assert_uint_eq(mrc_ud_send_qkey(0xffffffff, 0x2222), 0x2222);
}
END_TEST

/* R-424, IPv4: 20 zero bytes, then the datagram's IPv4 header with a valid checksum. */
START_TEST(mrc_ud_grh__ipv4_as_rocev2_presents_it)
{
	uint8_t src[16], dst[16], grh[40], zero[20] = { 0 };

	codec_set_v4_mapped(src, 0xc6120102); /* 198.18.1.2 */
	codec_set_v4_mapped(dst, 0xc6130304); /* 198.19.3.4 */
	memset(grh, 0xee, sizeof(grh));
	mrc_ud_grh(grh, src, dst, 0x03, 1000);
	ck_assert_mem_eq(grh, zero, 20);
	ck_assert_uint_eq(grh[20], 0x45);
	ck_assert_uint_eq(grh[21], 0x03);
	ck_assert_uint_eq(grh[22] << 8 | grh[23], 20 + 8 + 1000);
	ck_assert_uint_eq(grh[26], 0x40); /* DF */
	ck_assert_uint_eq(grh[28], 64);
	ck_assert_uint_eq(grh[29], 17);
	ck_assert_mem_eq(grh + 32, src + 12, 4);
	ck_assert_mem_eq(grh + 36, dst + 12, 4);
	ck_assert(mrc_csum_verify(grh + 20, 20));
	/* sl says so, as mlx5 reports a RoCEv2 IPv4 frame: UDP (bit 3), IPv4 (2) */
	ck_assert_uint_eq(mrc_ud_sl(src), 0xa);
	memset(src, 0x20, 16);
	ck_assert_uint_eq(mrc_ud_sl(src), 0x9);
}
END_TEST

/* R-424, IPv6: the datagram's IPv6 header. */
START_TEST(mrc_ud_grh__ipv6_header)
{
	uint8_t src[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, dst[16] = { 0xfd, [15] = 2 };
	uint8_t grh[40];

	mrc_ud_grh(grh, src, dst, 0x02, 500);
	ck_assert_uint_eq(grh[0] >> 4, 6);
	ck_assert_uint_eq((grh[0] & 0xf) << 4 | grh[1] >> 4, 0x02);
	ck_assert_uint_eq(grh[4] << 8 | grh[5], 8 + 500);
	ck_assert_uint_eq(grh[6], 17);
	ck_assert_uint_eq(grh[7], 64);
	ck_assert_mem_eq(grh + 8, src, 16);
	ck_assert_mem_eq(grh + 24, dst, 16);
}
END_TEST

Suite *ud_suite(void)
{
	Suite *s = suite_create("ud");
	TCase *tc = tcase_create("ud");

	tcase_add_test(tc, mrc_ud_encode__round_trip_with_payload_by_reference);
	tcase_add_test(tc, mrc_decode__ud_field_rules);
	tcase_add_test(tc, mrc_ud_path__one_path_per_flow_flows_spread);
	tcase_add_test(tc, mrc_ud_check__qkey_receive_room);
	tcase_add_test(tc, mrc_ud_send_qkey__bit_31_takes_the_qps);
	tcase_add_test(tc, mrc_ud_grh__ipv4_as_rocev2_presents_it);
	tcase_add_test(tc, mrc_ud_grh__ipv6_header);
	suite_add_tcase(s, tc);
	return s;
}
