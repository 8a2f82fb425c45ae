/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unreliable datagrams (SPEC 4.8): the rules a UD QP follows, without I/O and without a
 * clock. A UD QP keeps no connection state: each datagram is encoded whole, sprayed over the
 * planes it shares with its destination, checked once on arrival and placed behind a GRH.
 */
#ifndef METAROCE_PROTO_UD_H
#define METAROCE_PROTO_UD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/drop_reasons.h>

#include "proto/codec.h"

/* One datagram a UD QP sends. */
struct mrc_ud_datagram {
	uint32_t dst_qpn;
	uint32_t src_qpn;
	uint32_t qkey;	  /* as mrc_ud_send_qkey chose it */
	uint32_t psn;	  /* the sending QP's datagram count */
	uint32_t tx_ts;
	bool has_imm;
	uint32_t imm;
	bool solicited;
	bool auth;	  /* MRC_F_AUTH: the caller appends the trailer behind the payload */
	bool seal;	  /* and MRC_F_SEALED: the caller seals it (mrc_auth_seal) */
	const uint8_t *payload; /* stays where it is: a gather list sends it behind the headers */
	uint16_t payload_len;
};

/* Its headers into buf (*hdr_len bytes), the checksum covering the payload too. Returns an
 * enum mrc_wire_error. */
int mrc_ud_encode(const struct mrc_ud_datagram *d, void *buf, size_t cap, size_t *hdr_len);

/* A send WR's remote qkey with bit 31 set asks for the QP's own qkey, as in InfiniBand. */
static inline uint32_t mrc_ud_send_qkey(uint32_t wr_qkey, uint32_t qp_qkey)
{
	return wr_qkey & 0x80000000u ? qp_qkey : wr_qkey;
}

/*
 * The flow of a QP's datagrams to one destination (its address and QPN): a hash that
 * picks the one path they all take, as ECMP hashes a RoCEv2 QP's one 5-tuple.
 */
uint32_t mrc_ud_flow(uint32_t src_qpn, uint32_t dst_qpn, const uint8_t dgid[16]);

/*
 * The path of a flow: one of the planes set in `planes` and, on it, one of the
 * sender's source ports, the same for every datagram of the flow while the planes stay the
 * same, so they arrive in order; different flows spread over every (plane, port) pair.
 * False when planes is empty.
 */
bool mrc_ud_path(uint32_t flow, uint32_t planes, unsigned sports_per_plane, uint8_t *plane,
		 unsigned *sport_index);

/*
 * The receiver's checks of a decoded UD datagram for a UD QP that can receive [R-422,
 * MRC_DROP_NONE, or why it is dropped. room: the posted receive's bytes (0 and
 * has_receive false: none posted).
 */
enum mrc_drop_reason mrc_ud_check(const struct mrc_packet *pkt, uint32_t qp_qkey,
				  bool has_receive, uint64_t room);

/*
 * The 40 bytes a receive buffer holds before the payload, as RoCEv2 presents its
 * GRH: for IPv4, 20 zero bytes and the IPv4 header the datagram came with; for IPv6, its IPv6
 * header. src and dst are 16-byte addresses (IPv4-mapped for IPv4), tclass the IP traffic
 * class as received, packet_len the MetaRoCE packet's length.
 */
void mrc_ud_grh(uint8_t grh[40], const uint8_t src[16], const uint8_t dst[16], uint8_t tclass,
		uint32_t packet_len);

/*
 * A UD receive's `sl`: the RoCEv2 packet type as mlx5 devices report it there (bit 3: the
 * frame had a UDP header; bits 2..0: 2 IPv4, 1 IPv6), which tells a reader such as UCX's
 * ud_verbs where the GRH holds the destination address.
 */
uint8_t mrc_ud_sl(const uint8_t src[16]);

#endif /* METAROCE_PROTO_UD_H */
