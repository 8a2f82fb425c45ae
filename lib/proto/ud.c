/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Unreliable datagrams (SPEC 4.8); see ud.h. */
#include <string.h>

#include "proto/checksum.h"
#include "proto/ud.h"

int mrc_ud_encode(const struct mrc_ud_datagram *d, void *buf, size_t cap, size_t *hdr_len)
{
	struct mrc_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.opcode = d->has_imm ? MRC_OP_UD_SEND_IMM : MRC_OP_UD_SEND;
	pkt.flags = (d->solicited ? MRC_F_SOLICITED : 0) | (d->auth ? MRC_F_AUTH : 0) |
		    (d->auth && d->seal ? MRC_F_SEALED : 0);
	pkt.dst_qpn = d->dst_qpn;
	pkt.psn = d->psn;
	pkt.tx_ts = d->tx_ts;
	pkt.u.ud.src_qpn = d->src_qpn;
	pkt.u.ud.qkey = d->qkey;
	pkt.u.ud.imm = d->has_imm ? d->imm : 0;
	pkt.payload = d->payload;
	pkt.payload_len = d->payload_len;
	return mrc_encode_headers(&pkt, buf, cap, hdr_len);
}

/* murmur3's finalizer: every input bit moves every output bit */
static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

uint32_t mrc_ud_flow(uint32_t src_qpn, uint32_t dst_qpn, const uint8_t dgid[16])
{
	uint32_t h = mix32(src_qpn * 0x9e3779b9u ^ dst_qpn);

	for (unsigned i = 0; i < 16; i += 4)
		h = mix32(h ^ ((uint32_t)dgid[i] << 24 | (uint32_t)dgid[i + 1] << 16 |
			       (uint32_t)dgid[i + 2] << 8 | dgid[i + 3]));
	return h;
}

bool mrc_ud_path(uint32_t flow, uint32_t planes, unsigned sports_per_plane, uint8_t *plane,
		 unsigned *sport_index)
{
	unsigned n = (unsigned)__builtin_popcount(planes), k;

	if (!n || !sports_per_plane)
		return false;
	k = flow % n;
	for (unsigned p = 0; p < 32; p++)
		if (planes >> p & 1 && !k--) {
			*plane = (uint8_t)p;
			break;
		}
	*sport_index = (flow / n) % sports_per_plane;
	return true;
}

enum mrc_drop_reason mrc_ud_check(const struct mrc_packet *pkt, uint32_t qp_qkey,
				  bool has_receive, uint64_t room)
{
	if (!mrc_opcode_is_ud(pkt->opcode))
		return MRC_DROP_OPCODE_REFUSED;
	if (pkt->u.ud.qkey != qp_qkey)
		return MRC_DROP_UD_QKEY;
	if (!has_receive)
		return MRC_DROP_UD_NO_RECEIVE;
	if ((uint64_t)MRC_UD_GRH_LEN + pkt->payload_len > room)
		return MRC_DROP_UD_TOO_LONG;
	return MRC_DROP_NONE;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

uint8_t mrc_ud_sl(const uint8_t src[16])
{
	return mrc_addr_is_v4(src) ? 0x8 | 0x2 : 0x8 | 0x1;
}

void mrc_ud_grh(uint8_t grh[40], const uint8_t src[16], const uint8_t dst[16], uint8_t tclass,
		uint32_t packet_len)
{
	uint32_t udp_len = 8 + packet_len;

	memset(grh, 0, MRC_UD_GRH_LEN);
	if (mrc_addr_is_v4(src)) {
		uint8_t *ip = grh + 20;

		ip[0] = 0x45; /* version 4, five words */
		ip[1] = tclass;
		put16(ip + 2, (uint16_t)(20 + udp_len));
		put16(ip + 6, 0x4000); /* DF */
		ip[8] = 64;
		ip[9] = 17; /* UDP */
		memcpy(ip + 12, src + 12, 4);
		memcpy(ip + 16, dst + 12, 4);
		put16(ip + 10, (uint16_t)~mrc_csum_fold(mrc_csum_add(0, ip, 20)));
		return;
	}
	grh[0] = (uint8_t)(0x60 | tclass >> 4);
	grh[1] = (uint8_t)(tclass << 4);
	put16(grh + 4, (uint16_t)udp_len);
	grh[6] = 17; /* next header: UDP */
	grh[7] = 64;
	memcpy(grh + 8, src, 16);
	memcpy(grh + 24, dst, 16);
}
