/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * MetaRoCE wire protocol, version 1: the one definition of every byte on the wire.
 *
 * Included unchanged by the XDP programs (clang -target bpf), the sans-I/O engine, the codec,
 * the dissector and the compliance suite. docs/SPEC.md is the normative text; requirement ids
 * in comments ([R-n]) point into it.
 *
 * Rules for this file:
 *  - fixed-width fields only, all multi-byte fields big-endian (network order);
 *  - every struct is a multiple of 8 bytes with naturally aligned fields, so no packing
 *    attributes are needed and layouts are identical on every ABI, BPF included;
 *  - _Static_assert pins every size and the offsets that other code depends on;
 *  - append-only: a value once given a meaning never changes meaning.
 *
 * A MetaRoCE packet is one UDP datagram whose payload is
 *
 *     +-------------+------------------------+-------------------+
 *     | mrc_hdr     | extension header       | payload           |
 *     | (24 bytes)  | (fixed size per opcode)| (payload_len)     |
 *     +-------------+------------------------+-------------------+
 *
 * The checksum in mrc_hdr covers all three parts. A packet whose header carries
 * MRC_F_AUTH ends in an authentication trailer after the payload, outside the checksum and
 * outside payload_len:
 *
 *     | mrc_hdr | extension | payload | mrc_auth_tag (8) or, DISCOVER*, mrc_discover_auth (48) |
 */
#ifndef METAROCE_WIRE_H
#define METAROCE_WIRE_H

#include <linux/types.h>

#ifndef __cplusplus
#define MRC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
#define MRC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#endif

/* Protocol version carried in every packet. */
#define MRC_WIRE_VERSION 1

/* Default UDP destination port of a MetaRoCE endpoint (not IANA-assigned; configurable). */
#define MRC_UDP_PORT_DEFAULT 4792

/* Source ports used as per-path ECMP entropy are drawn from the dynamic range. */
#define MRC_UDP_SPORT_MIN 49152
#define MRC_UDP_SPORT_MAX 65535

/* Largest MetaRoCE packet (UDP payload) a receiver accepts: the IPv4 UDP limit. */
#define MRC_WIRE_MAX_PACKET 65507

/* Longest message, as verbs' max_msg_sz; msg_len and READ length never exceed it. */
#define MRC_MAX_MSG_LEN 0x80000000u

/* Every endpoint accepts payloads of at least this many bytes; max_payload is never less. */
#define MRC_MIN_PAYLOAD 256

/* QPNs are 24 bits as in verbs; QPN 0 addresses the peer daemon itself. */
#define MRC_QPN_DAEMON 0u
#define MRC_QPN_MAX 0x00ffffffu

/* Receive window and SACK vector: 256 consecutive PSNs starting at the cumulative PSN. */
#define MRC_SACK_BITS 256
#define MRC_SACK_BYTES (MRC_SACK_BITS / 8)

/* Peer discovery announces at most this many plane addresses. */
#define MRC_MAX_PLANES 16

/*
 * Opcodes. Values are grouped: 0x01-0x0f sequenced requests and responses (they consume
 * a PSN, are SACKed and retransmitted), 0x10-0x1f acknowledgements, 0x20-0x2f path probes,
 * 0x30-0x3f daemon-to-daemon control, 0x40-0x4f QP control, 0x50-0x5f unreliable datagrams.
 * Unlisted values are unknown.
 */
enum mrc_opcode {
	MRC_OP_WRITE = 0x01,	      /* RDMA WRITE, data extension */
	MRC_OP_WRITE_IMM = 0x02,      /* RDMA WRITE with immediate, data extension */
	MRC_OP_SEND = 0x03,	      /* SEND into a posted receive, data extension */
	MRC_OP_SEND_IMM = 0x04,	      /* SEND with immediate, data extension */
	MRC_OP_READ_REQ = 0x05,	      /* RDMA READ request, read_req extension, no payload */
	MRC_OP_READ_RESP = 0x06,      /* RDMA READ response data, data extension */
	MRC_OP_ATOMIC_REQ = 0x07,     /* atomic request, atomic extension, no payload; answered
				       * by a READ_RESP of the original 8 bytes */
	MRC_OP_SEND_INV = 0x08,	      /* SEND that invalidates the receiver's key in rkey
				       * data extension */
	MRC_OP_ACK = 0x10,	      /* cumulative PSN + SACK + echoes + rate hint */
	MRC_OP_NAK = 0x11,	      /* negative acknowledgement with an error kind */
	MRC_OP_PROBE = 0x20,	      /* path liveness probe */
	MRC_OP_PROBE_REPLY = 0x21,    /* answer to a probe, on the reverse path */
	MRC_OP_DISCOVER = 0x30,	      /* daemon announces its planes and asks for the peer's */
	MRC_OP_DISCOVER_REPLY = 0x31, /* the peer's planes, in answer */
	MRC_OP_CLOSE = 0x40,	      /* the sending QP left RTR/RTS; the peer QP must stop */
	MRC_OP_UD_SEND = 0x50,	      /* one whole message between UD QPs, ud extension */
	MRC_OP_UD_SEND_IMM = 0x51,    /* the same with immediate data */
};

/*
 * Common header flags. Bits not listed are reserved: sent as zero, ignored on receipt.
 * A flag is defined only for the opcodes named beside it; elsewhere it is sent as zero and
 * ignored.
 */
#define MRC_F_ACK_REQ 0x0001u	/* sequenced: acknowledge this packet at once */
#define MRC_F_RETX 0x0002u	/* sequenced: this is a retransmission */
#define MRC_F_ECE 0x0004u	/* ACK/NAK/PROBE_REPLY: the echoed packet arrived CE-marked */
#define MRC_F_INORDER 0x0008u	/* sequenced: sender runs the RoCEv2-like in-order mode */
#define MRC_F_SOLICITED 0x0010u /* SEND*, WRITE_IMM, UD_SEND*: raise a solicited event */
#define MRC_F_AUTH 0x0020u	/* every opcode: an authentication trailer follows the payload
				 * (struct mrc_auth_tag, DISCOVER*: struct mrc_discover_auth) */
#define MRC_F_SEALED 0x0040u	/* every opcode but DISCOVER*, with AUTH: the payload is
				 * encrypted, the trailer is struct mrc_seal_trailer */
#define MRC_F_KNOWN                                                                            \
	(MRC_F_ACK_REQ | MRC_F_RETX | MRC_F_ECE | MRC_F_INORDER | MRC_F_SOLICITED | MRC_F_AUTH |  \
	 MRC_F_SEALED)

/* Common header, first in every packet. */
struct mrc_hdr {
	__u8 version;	     /* MRC_WIRE_VERSION */
	__u8 opcode;	     /* enum mrc_opcode */
	__be16 flags;	     /* MRC_F_* */
	__be32 dst_qpn;	     /* receiving QP (< 2^24); MRC_QPN_DAEMON for daemon-level packets */
	__be32 psn;	     /* sequenced: packet sequence number; DISCOVER*: request id; else 0 */
	__be32 tx_ts;	     /* sender clock in ns modulo 2^32, echoed for per-path RTT */
	__be16 path_id;	     /* sequenced, PROBE: sender's path index; ACK, NAK, PROBE_REPLY: the
				path_id of the packet answered; else 0 */
	__be16 payload_len;  /* bytes after the extension header */
	__be16 csum;	     /* Internet checksum of the whole MetaRoCE packet */
	__be16 reserved;     /* zero */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_hdr) == 24, "mrc_hdr is 24 bytes");

/*
 * Data extension: WRITE, WRITE_IMM, SEND, SEND_IMM, SEND_INV, READ_RESP. Every data
 * packet says where its own bytes go, so a receiver places it the moment it arrives.
 */
struct mrc_data_ext {
	__be32 msn;	/* message sequence number (READ_RESP: the READ_REQ's msn) */
	__be32 rsn;	/* SEND*, WRITE_IMM: receive sequence number, else 0 */
	__be32 msg_len; /* total bytes of the message */
	__be32 msg_off; /* offset of this packet's first payload byte in the message */
	__be32 rkey;	/* WRITE*: target key; READ_RESP: requester's sink key; SEND_INV: the
			 * receiver's key to invalidate; SEND, SEND_IMM: 0 */
	__be32 imm;	/* *_IMM: immediate data, opaque; else 0 */
	__be64 raddr;	/* WRITE*, READ_RESP: address of this packet's first byte; SEND*: 0 */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_data_ext) == 32, "mrc_data_ext is 32 bytes");

/* READ request extension. */
struct mrc_read_req_ext {
	__be32 msn;	  /* message sequence number of this READ */
	__be32 length;	  /* bytes to read */
	__be32 rkey;	  /* responder's key for [raddr, raddr + length) */
	__be32 sink_key;  /* requester's key the responses carry back */
	__be64 raddr;	  /* responder address to read from */
	__be64 sink_addr; /* requester address where byte 0 of the response lands */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_read_req_ext) == 32, "mrc_read_req_ext is 32 bytes");

/* ATOMIC_REQ extension: struct mrc_atomic_ext.op */
enum mrc_atomic_op {
	MRC_ATOMIC_CMP_SWAP = 1,  /* if *raddr == compare: *raddr = swap_add */
	MRC_ATOMIC_FETCH_ADD = 2, /* *raddr += swap_add */
};

/* Atomic request extension. */
struct mrc_atomic_ext {
	__be32 msn;	  /* message sequence number of this atomic */
	__u8 op;	  /* enum mrc_atomic_op */
	__u8 reserved[3]; /* zero */
	__be32 rkey;	  /* responder's key for the 8 bytes at raddr */
	__be32 sink_key;  /* requester's key the READ_RESP carries back */
	__be64 raddr;	  /* responder address of the 64-bit target, 8-byte aligned */
	__be64 sink_addr; /* requester address where the original value lands */
	__be64 swap_add;  /* CMP_SWAP: the value stored on a match; FETCH_ADD: the addend */
	__be64 compare;	  /* CMP_SWAP: the value compared with; FETCH_ADD: zero */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_atomic_ext) == 48, "mrc_atomic_ext is 48 bytes");

/*
 * Unreliable datagram extension: UD_SEND, UD_SEND_IMM. The payload is the whole
 * message; nothing acknowledges it and nothing resends it.
 */
struct mrc_ud_ext {
	__be32 src_qpn;	 /* the sending UD QP (1 .. 2^24 - 1), the receiver's wc.src_qp */
	__be32 qkey;	 /* must equal the receiving QP's qkey */
	__be32 imm;	 /* UD_SEND_IMM: immediate data, opaque; else 0 */
	__be32 reserved; /* zero */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_ud_ext) == 16, "mrc_ud_ext is 16 bytes");

/* Bytes at the head of every UD receive buffer before the payload, as RoCEv2's GRH. */
#define MRC_UD_GRH_LEN 40

/*
 * Connection management [SPEC 17]: the daemons' CM agents talk in UD datagrams from QP 1 to
 * QP 1 under one well-known qkey, as RoCE carries the InfiniBand CM on QP1. A client
 * QPN never has a zero generation (>= 4096), so QP 1 is never a client's. The payload is a
 * struct mrc_cm_msg and then private_len bytes of the applications' private data.
 */
#define MRC_QPN_CM 1u
#define MRC_CM_QKEY 0x80010000u

enum mrc_cm_type {
	MRC_CM_REQ = 1,	     /* active side: connect to the listener at dst_port */
	MRC_CM_REP = 2,	     /* passive side: accepted; qpn is the passive QP */
	MRC_CM_RTU = 3,	     /* active side: its QP is ready, the connection is established */
	MRC_CM_REJ = 4,	     /* either side: refused; status says why (enum mrc_cm_reject) */
	MRC_CM_DREQ = 5,     /* either side: the connection ends */
	MRC_CM_DREP = 6,     /* answer to a DREQ */
	MRC_CM_SIDR_REQ = 7, /* UD port space: which QP serves dst_port? */
	MRC_CM_SIDR_REP = 8, /* its QP number and qkey, or status */
	MRC_CM_TYPE_MAX = MRC_CM_SIDR_REP,
};

/* REJ and SIDR_REP status: InfiniBand's CM reject reasons, which rdma_cm reports as the
 * REJECTED event's status. */
enum mrc_cm_reject {
	MRC_CM_REJ_NO_RESOURCES = 3,	 /* no room for another connection */
	MRC_CM_REJ_TIMEOUT = 4,		 /* the active side gave up, or went away */
	MRC_CM_REJ_INVALID_COMM_ID = 6,	 /* the message names no connection here */
	MRC_CM_REJ_INVALID_SERVICE_ID = 8, /* nobody listens on dst_port */
	MRC_CM_REJ_STALE_CONN = 10,	 /* an older connection with the same ids */
	MRC_CM_REJ_CONSUMER_DEFINED = 28, /* the application rejected it (rdma_reject) */
};

/* SIDR_REP status, as InfiniBand's SIDR numbers it (the UNREACHABLE event's status). */
enum mrc_cm_sidr_status {
	MRC_CM_SIDR_SUCCESS = 0,
	MRC_CM_SIDR_UNSUPPORTED = 1, /* nobody listens on dst_port */
	MRC_CM_SIDR_REJECT = 2,	     /* the application rejected it */
};

/* Private data a message carries at most, by type: InfiniBand's sizes less the 36 bytes
 * rdma_cm takes of a REQ and a SIDR_REQ for its own header. */
#define MRC_CM_PRIVATE_REQ 56
#define MRC_CM_PRIVATE_REP 196
#define MRC_CM_PRIVATE_REJ 148
#define MRC_CM_PRIVATE_RTU 224
#define MRC_CM_PRIVATE_DREQ 220
#define MRC_CM_PRIVATE_DREP 224
#define MRC_CM_PRIVATE_SIDR_REQ 180
#define MRC_CM_PRIVATE_SIDR_REP 136
#define MRC_CM_PRIVATE_MAX 224

/* Port spaces as rdma_cm numbers them, less the 0x0100 they share (RDMA_PS_TCP = 0x0106). */
#define MRC_CM_PS_IPOIB 0x02
#define MRC_CM_PS_TCP 0x06
#define MRC_CM_PS_UDP 0x11
#define MRC_CM_PS_IB 0x3f

#define MRC_CM_F_SRQ 0x01	   /* REQ, REP: the sender's QP takes receives from an SRQ */
#define MRC_CM_F_FLOW_CONTROL 0x02 /* REQ, REP: rdma_conn_param.flow_control */

struct mrc_cm_msg {
	__u8 type;		  /* enum mrc_cm_type */
	__u8 port_space;	  /* MRC_CM_PS_* */
	__u8 private_len;	  /* private data bytes after this struct, <= the type's size */
	__u8 flags;		  /* MRC_CM_F_* */
	__u8 responder_resources; /* REQ, REP: READs the sender lets its peer have outstanding */
	__u8 initiator_depth;	  /* REQ, REP: READs the sender will have outstanding */
	__u8 retry_count;	  /* REQ: the requester's transport retries, 0..7 */
	__u8 rnr_retry_count;	  /* REQ, REP: 0..7, 7 = unlimited */
	__be32 local_comm_id;	  /* the sender's name for the connection, never 0 */
	__be32 remote_comm_id;	  /* the receiver's; 0 in a REQ and SIDR_REQ */
	__be64 node_id;		  /* the sending daemon's (SPEC 12): another value is a restart */
	__be32 qpn;		  /* REQ, REP, SIDR_REP: the sender's QP; else 0 */
	__be32 status;		  /* REJ: enum mrc_cm_reject; SIDR_REP: enum mrc_cm_sidr_status */
	__be32 qkey;		  /* SIDR_REP: the UD QP's qkey; else 0 */
	__be16 src_port;	  /* the sender's rdma_cm port */
	__be16 dst_port;	  /* the receiver's */
	__u8 src_addr[16];	  /* the sender's address as its application sees it */
	__u8 dst_addr[16];	  /* the receiver's (IPv4-mapped for IPv4) */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_cm_msg) == 72, "mrc_cm_msg is 72 bytes");

/*
 * ACK extension. SACK bit i stands for PSN cum_psn + i, bit i lives in sack[i / 8] under
 * mask 1 << (i % 8); bit 0 is always clear because cum_psn itself has not arrived.
 */
struct mrc_ack_ext {
	__be32 cum_psn;	      /* every PSN before this one (serial arithmetic) has arrived */
	__be32 echo_ts;	      /* tx_ts of the packet that triggered this ACK */
	__be32 ack_delay_ns;  /* time the receiver held that packet's acknowledgement */
	__be32 rate_hint;     /* receiver's fair share for this sender, kbit/s; 0 = none */
	__be16 echo_path;     /* path_id of the packet that triggered this ACK */
	__be16 ce_count;      /* CE-marked sequenced packets received on this QP, mod 2^16 */
	__be32 queue_delay;   /* ns the echoed packet queued before the receiver, if CE-marked;
				 0 = none */
	__u8 sack[MRC_SACK_BYTES];
};
MRC_STATIC_ASSERT(sizeof(struct mrc_ack_ext) == 56, "mrc_ack_ext is 56 bytes");

/* NAK kinds. */
enum mrc_nak_kind {
	MRC_NAK_SEQ = 1,	   /* in-order mode only: gap; resend from cum_psn */
	MRC_NAK_RNR = 2,	   /* SEND* or WRITE_IMM with no receive posted; retry later */
	MRC_NAK_REMOTE_ACCESS = 3, /* bad key, out of bounds or access not granted */
	MRC_NAK_INVALID_REQ = 4,   /* opcode not allowed, or message longer than the receive */
	MRC_NAK_REMOTE_OP = 5,	   /* responder failed internally */
};
#define MRC_NAK_KIND_MAX MRC_NAK_REMOTE_OP

/* NAK extension. */
struct mrc_nak_ext {
	__be32 cum_psn;	    /* as in ACK */
	__be32 nak_psn;	    /* the offending packet */
	__be32 msn;	    /* the message it belongs to */
	__u8 kind;	    /* enum mrc_nak_kind */
	__u8 reserved;	    /* zero */
	__be16 retry_after; /* RNR: minimum wait in units of 10 us; else 0 */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_nak_ext) == 16, "mrc_nak_ext is 16 bytes");

/* PROBE extension. */
struct mrc_probe_ext {
	__be64 nonce; /* chosen by the prober, echoed in the reply */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_probe_ext) == 8, "mrc_probe_ext is 8 bytes");

/* PROBE_REPLY extension. */
struct mrc_probe_reply_ext {
	__be64 nonce;	  /* the probe's nonce */
	__be32 echo_ts;	  /* the probe's tx_ts */
	__be16 echo_path; /* the probe's path_id */
	__be16 reserved;  /* zero */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_probe_reply_ext) == 16, "mrc_probe_reply_ext is 16 bytes");

/* DISCOVER and DISCOVER_REPLY extension; n_addrs address records follow as payload. */
struct mrc_discover_ext {
	__be64 node_id;	     /* random per daemon start; a new value means the peer restarted */
	__be16 udp_port;     /* the sender's MetaRoCE listening port */
	__be16 max_payload;  /* largest payload_len the sender accepts */
	__u8 n_addrs;	     /* 1..MRC_MAX_PLANES records follow */
	__u8 reserved[3];    /* zero */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_discover_ext) == 16, "mrc_discover_ext is 16 bytes");

#define MRC_AF_INET 4
#define MRC_AF_INET6 6

/* The first 12 bytes of an IPv4-mapped IPv6 address (::ffff:0:0/96): how IPv4 is carried. */
#define MRC_V4_MAPPED_PREFIX { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff }

/* Whether a 16-byte address is IPv4 (IPv4-mapped, ::ffff:a.b.c.d). */
static inline int mrc_addr_is_v4(const __u8 addr[16])
{
	static const __u8 prefix[12] = MRC_V4_MAPPED_PREFIX;

	for (int i = 0; i < 12; i++)
		if (addr[i] != prefix[i])
			return 0;
	return 1;
}

/* The family field of a plane address record, for a 16-byte address. */
static inline __u8 mrc_addr_family(const __u8 addr[16])
{
	return mrc_addr_is_v4(addr) ? MRC_AF_INET : MRC_AF_INET6;
}

/* Whether a 16-byte address lies in the prefix of `bits` leading bits of net (an IPv4 /24
 * is 96 + 24 bits of its IPv4-mapped form). */
static inline int mrc_addr_in_prefix(const __u8 addr[16], const __u8 net[16], unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	for (unsigned i = 0; i < whole && i < 16; i++)
		if (addr[i] != net[i])
			return 0;
	return !rest || whole >= 16 || !((addr[whole] ^ net[whole]) & (__u8)(0xff00u >> rest));
}

/* addr becomes the IPv4-mapped form of the 4 bytes at v4 (network order). */
static inline void mrc_addr_from_v4(__u8 addr[16], const void *v4)
{
	static const __u8 prefix[12] = MRC_V4_MAPPED_PREFIX;

	for (int i = 0; i < 12; i++)
		addr[i] = prefix[i];
	for (int i = 0; i < 4; i++)
		addr[12 + i] = ((const __u8 *)v4)[i];
}

/* One plane address in a DISCOVER payload. IPv4 is stored IPv4-mapped (::ffff:a.b.c.d). */
struct mrc_plane_addr {
	__u8 family;   /* MRC_AF_INET or MRC_AF_INET6 */
	__u8 plane;    /* the sender's plane index, < MRC_MAX_PLANES */
	__be16 flags;  /* MRC_PLANE_F_* */
	__u8 addr[16]; /* IPv6 address, or IPv4-mapped IPv6 address */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_plane_addr) == 20, "mrc_plane_addr is 20 bytes");

#define MRC_PLANE_F_DRAINED 0x0001u /* operator drained this plane: send nothing new on it */

/*
 * Authentication trailer of every packet but DISCOVER* [R-341]: SipHash-2-4 under the QP's
 * (UD: the peer pair's) 128-bit key of the common and extension headers exactly as sent, the
 * checksum included; the tag's 8 bytes are the 64-bit result little-endian, as SipHash's
 * reference writes it. The payload is covered only through the checksum.
 */
#define MRC_AUTH_TAG_LEN 8
struct mrc_auth_tag {
	__u8 tag[MRC_AUTH_TAG_LEN];
};
MRC_STATIC_ASSERT(sizeof(struct mrc_auth_tag) == 8, "mrc_auth_tag is 8 bytes");

/*
 * Trailer of a sealed packet (auth = full): the 64-bit packet counter its nonce is
 * made of, little-endian, then the ChaCha20-Poly1305 (IETF) tag under the QP's (UD: the peer
 * pair's) 256-bit seal key over the headers as associated data (the checksum field zero)
 * and the payload, which travels encrypted. The checksum covers the ciphertext.
 */
#define MRC_SEAL_TAG_LEN 16
struct mrc_seal_trailer {
	__u8 counter[8];
	__u8 tag[MRC_SEAL_TAG_LEN];
};
MRC_STATIC_ASSERT(sizeof(struct mrc_seal_trailer) == 24, "mrc_seal_trailer is 24 bytes");

/*
 * Authentication trailer of DISCOVER and DISCOVER_REPLY: the sender's static X25519
 * public key and a keyed BLAKE2b-128 under the sender-to-receiver static key of every byte
 * before the tag (headers, address records, public key).
 */
#define MRC_AUTH_PUBLIC_KEY_LEN 32
#define MRC_AUTH_DISCOVER_TAG_LEN 16
struct mrc_discover_auth {
	__u8 public_key[MRC_AUTH_PUBLIC_KEY_LEN];
	__u8 tag[MRC_AUTH_DISCOVER_TAG_LEN];
};
MRC_STATIC_ASSERT(sizeof(struct mrc_discover_auth) == 48, "mrc_discover_auth is 48 bytes");

/* CLOSE reasons. */
enum mrc_close_reason {
	MRC_CLOSE_NORMAL = 0,	 /* the QP was destroyed or reset */
	MRC_CLOSE_ERROR = 1,	 /* the QP entered the error state */
	MRC_CLOSE_SHUTDOWN = 2,	 /* the daemon is stopping */
};
#define MRC_CLOSE_REASON_MAX MRC_CLOSE_SHUTDOWN

/* CLOSE extension. */
struct mrc_close_ext {
	__be32 reason;	/* enum mrc_close_reason */
	__be32 cum_psn; /* the sender's receive cum_psn: checked like an ACK's */
};
MRC_STATIC_ASSERT(sizeof(struct mrc_close_ext) == 8, "mrc_close_ext is 8 bytes");

/*
 * Why a packet was refused. Stable and append-only: shared by the codec, the XDP programs
 * (as drop reasons), the daemon's counters and metaroce-ctl.
 */
enum mrc_wire_error {
	MRC_WIRE_OK = 0,
	MRC_WIRE_E_TRUNCATED = 1, /* shorter than its headers */
	MRC_WIRE_E_OVERSIZE = 2,  /* longer than MRC_WIRE_MAX_PACKET */
	MRC_WIRE_E_VERSION = 3,	  /* version is not MRC_WIRE_VERSION */
	MRC_WIRE_E_OPCODE = 4,	  /* opcode unknown */
	MRC_WIRE_E_LENGTH = 5,	  /* lengths disagree with each other or with the datagram */
	MRC_WIRE_E_CHECKSUM = 6,  /* integrity check failed */
	MRC_WIRE_E_QPN = 7,	  /* dst_qpn not allowed for this opcode */
	MRC_WIRE_E_FIELD = 8,	  /* a field holds a value the opcode does not allow */
	MRC_WIRE_E_NOSPACE = 9,	  /* encoder: output buffer too small */
};
#define MRC_WIRE_ERROR_MAX MRC_WIRE_E_NOSPACE

/* Offsets other code depends on (the BPF verifier walks exactly these). */
MRC_STATIC_ASSERT(__builtin_offsetof(struct mrc_hdr, csum) == 20, "csum offset");
MRC_STATIC_ASSERT(__builtin_offsetof(struct mrc_data_ext, raddr) == 24, "raddr offset");
MRC_STATIC_ASSERT(__builtin_offsetof(struct mrc_ack_ext, sack) == 24, "sack offset");

#endif /* METAROCE_WIRE_H */
