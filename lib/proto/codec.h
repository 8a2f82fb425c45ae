/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Encoder and strict decoder for MetaRoCE v1 packets (lib/include/metaroce/wire.h).
 *
 * The decoder turns the bytes of one UDP payload into a host-order struct mrc_packet and
 * refuses anything that is not a well-formed v1 packet with a stable enum mrc_wire_error. It
 * checks in this order, so a packet with several faults always reports the same error:
 *
 *   TRUNCATED (shorter than the common header)  ->  OVERSIZE  ->  VERSION  ->  OPCODE
 *   -> TRUNCATED (shorter than the opcode's extension)  ->  LENGTH (payload_len vs datagram)
 *   -> CHECKSUM  ->  QPN  ->  FIELD / LENGTH (per-opcode rules)
 *
 * Reserved fields, unknown flag bits, flags an opcode does not define and psn where it has no
 * meaning are ignored on receipt (decoded as zero) and written as zero. The decoder never copies the payload: mrc_packet.payload points into the
 * caller's buffer, which must outlive the struct.
 */
#ifndef METAROCE_PROTO_CODEC_H
#define METAROCE_PROTO_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include <metaroce/wire.h>

struct mrc_data {
	uint32_t msn;
	uint32_t rsn;
	uint32_t msg_len;
	uint32_t msg_off;
	uint32_t rkey;
	uint32_t imm;
	uint64_t raddr;
};

struct mrc_read_req {
	uint32_t msn;
	uint32_t length;
	uint32_t rkey;
	uint32_t sink_key;
	uint64_t raddr;
	uint64_t sink_addr;
};

struct mrc_atomic {
	uint32_t msn;
	uint8_t op;	   /* enum mrc_atomic_op */
	uint32_t reserved; /* the extension's three reserved bytes, as they arrived */
	uint32_t rkey;
	uint32_t sink_key;
	uint64_t raddr;
	uint64_t sink_addr;
	uint64_t swap_add;
	uint64_t compare;
};

struct mrc_ack {
	uint32_t cum_psn;
	uint32_t echo_ts;
	uint32_t ack_delay_ns;
	uint32_t rate_hint_kbps;
	uint16_t echo_path;
	uint16_t ce_count;
	uint32_t queue_delay_ns;
	uint8_t sack[MRC_SACK_BYTES];
};

struct mrc_nak {
	uint32_t cum_psn;
	uint32_t nak_psn;
	uint32_t msn;
	uint8_t kind; /* enum mrc_nak_kind */
	uint16_t retry_after;
};

struct mrc_probe {
	uint64_t nonce;
	uint32_t echo_ts;   /* PROBE_REPLY only */
	uint16_t echo_path; /* PROBE_REPLY only */
};

struct mrc_discover {
	uint64_t node_id;
	uint16_t udp_port;
	uint16_t max_payload;
	uint8_t n_addrs;
	struct {
		uint8_t family; /* MRC_AF_INET or MRC_AF_INET6 */
		uint8_t plane;
		uint16_t flags;
		uint8_t addr[16];
	} addrs[MRC_MAX_PLANES];
};

struct mrc_close {
	uint32_t reason; /* enum mrc_close_reason */
	uint32_t cum_psn;
};

struct mrc_ud {
	uint32_t src_qpn;
	uint32_t qkey;
	uint32_t imm;
};

struct mrc_packet {
	uint8_t opcode; /* enum mrc_opcode */
	uint16_t flags;
	uint32_t dst_qpn;
	uint32_t psn;
	uint32_t tx_ts;
	uint16_t path_id;
	union {
		struct mrc_data data;	      /* WRITE*, SEND*, READ_RESP */
		struct mrc_read_req read_req; /* READ_REQ */
		struct mrc_atomic atomic;     /* ATOMIC_REQ */
		struct mrc_ack ack;	      /* ACK */
		struct mrc_nak nak;	      /* NAK */
		struct mrc_probe probe;	      /* PROBE, PROBE_REPLY */
		struct mrc_discover discover; /* DISCOVER, DISCOVER_REPLY */
		struct mrc_close close;	      /* CLOSE */
		struct mrc_ud ud;	      /* UD_SEND, UD_SEND_IMM */
	} u;
	/* Data and UD opcodes: the bytes to place. Decoded: points into the input buffer. */
	const uint8_t *payload;
	uint16_t payload_len;
	/* Decoded only: the packet's first byte (its headers as they arrived, which an
	 * authentication tag covers) and its authentication trailer, NULL without MRC_F_AUTH
	 * (or when a fast path verified and kept it). */
	const uint8_t *wire;
	const uint8_t *auth;
};

/* True for a value of enum mrc_opcode that this version defines. */
int mrc_opcode_is_known(uint8_t opcode);

/* True for the opcodes that consume a PSN and are SACKed and retransmitted. */
int mrc_opcode_is_sequenced(uint8_t opcode);

/* True for the opcodes that carry the data extension and a payload to place. */
int mrc_opcode_is_data(uint8_t opcode);

/* True for the data opcodes that consume a posted receive (SEND*, WRITE_IMM). */
int mrc_opcode_consumes_receive(uint8_t opcode);

/* True for the unreliable datagram opcodes (UD_SEND, UD_SEND_IMM). */
int mrc_opcode_is_ud(uint8_t opcode);

/* The MRC_F_* flags an opcode defines; 0 for an unknown opcode. */
uint16_t mrc_opcode_flags(uint8_t opcode);

/* Bytes of the trailer a packet of this opcode and these flags (as defined for the opcode)
 * ends in: MRC_F_AUTH's, MRC_F_SEALED's; 0 for none or an unknown opcode. */
size_t mrc_auth_trailer_len(uint8_t opcode, uint16_t flags);

/* Bytes of the common plus extension header of an opcode; 0 for an unknown opcode. */
size_t mrc_header_len(uint8_t opcode);

/* Stable lower-case names, for logs, counters and the CLI: "write", "e_checksum", ... */
const char *mrc_opcode_name(uint8_t opcode);
const char *mrc_wire_error_name(int err);
const char *mrc_nak_kind_name(uint8_t kind);

/*
 * Decodes one MetaRoCE packet. Returns MRC_WIRE_OK and fills *pkt, or an enum mrc_wire_error
 * (and *pkt is unspecified).
 */
int mrc_decode(const void *buf, size_t len, struct mrc_packet *pkt);

/*
 * Decodes the headers of a data packet a fast path has verified (checksum included) and
 * placed: hdr holds its common and data extension headers only, and pkt->payload is NULL
 * (pkt->payload_len says how many bytes were placed). Checks what mrc_decode checks but the
 * checksum and the payload's presence.
 */
int mrc_decode_placed(const void *hdr, size_t len, struct mrc_packet *pkt);

/*
 * Encodes *pkt into buf (big-endian, reserved fields zero, checksum filled). With MRC_F_AUTH
 * in pkt->flags the caller appends the trailer behind what is written (lib/proto/auth.h).
 * For data opcodes and DISCOVER*, the payload comes from pkt->payload / pkt->payload_len or
 * pkt->u.discover.
 * pkt->payload may already sit at buf + mrc_header_len(opcode) (zero-copy). Returns
 * MRC_WIRE_OK and sets *out_len, MRC_WIRE_E_NOSPACE when cap is too small, or the error the
 * decoder would report for the packet (an encoder never emits what a decoder refuses).
 */
int mrc_encode(const struct mrc_packet *pkt, void *buf, size_t cap, size_t *out_len);

/*
 * The same, but a data or UD packet's payload stays where pkt->payload points: only its headers
 * are written (*hdr_len bytes), with the checksum over them and the payload, which must
 * follow them on the wire (a sender's gather list). Other opcodes are encoded whole.
 */
int mrc_encode_headers(const struct mrc_packet *pkt, void *buf, size_t cap, size_t *hdr_len);

#endif /* METAROCE_PROTO_CODEC_H */
