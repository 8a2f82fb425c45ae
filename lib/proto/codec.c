/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "codec.h"

#include <stdbool.h>
#include <string.h>

#include "bytes.h"
#include "checksum.h"

/*
 * Field access goes through offsetof() on the wire structs, never through a cast of the
 * buffer: packets sit at arbitrary alignment inside frames.
 */
#define FIELD_AT(base, type, field) ((uint8_t *)(base) + __builtin_offsetof(type, field))
#define CFIELD_AT(base, type, field) ((const uint8_t *)(base) + __builtin_offsetof(type, field))

#define GET16(b, t, f) load_be16(CFIELD_AT(b, t, f))
#define GET32(b, t, f) load_be32(CFIELD_AT(b, t, f))
#define GET64(b, t, f) load_be64(CFIELD_AT(b, t, f))
#define PUT16(b, t, f, v) store_be16(FIELD_AT(b, t, f), (v))
#define PUT32(b, t, f, v) store_be32(FIELD_AT(b, t, f), (v))
#define PUT64(b, t, f, v) store_be64(FIELD_AT(b, t, f), (v))

struct opcode_info {
	const char *name;
	uint16_t flags;	     /* MRC_F_* defined for the opcode */
	uint8_t ext_len;     /* extension header bytes; 0 marks an unknown opcode */
	uint8_t sequenced;   /* consumes a PSN */
	uint8_t data;	     /* data extension + payload to place */
	uint8_t may_payload; /* payload_len may be non-zero */
	uint8_t qpn_rule;    /* enum qpn_rule */
};

enum qpn_rule {
	QPN_QP,	     /* 1 .. MRC_QPN_MAX */
	QPN_DAEMON,  /* exactly MRC_QPN_DAEMON */
	QPN_ANY,     /* 0 .. MRC_QPN_MAX */
};

#define SEQ_FLAGS (MRC_F_ACK_REQ | MRC_F_RETX | MRC_F_INORDER)

static const struct opcode_info opcodes[256] = {
	[MRC_OP_WRITE] = { "write", SEQ_FLAGS, sizeof(struct mrc_data_ext), 1, 1, 1, QPN_QP },
	[MRC_OP_WRITE_IMM] = { "write_imm", SEQ_FLAGS | MRC_F_SOLICITED,
			       sizeof(struct mrc_data_ext), 1, 1, 1, QPN_QP },
	[MRC_OP_SEND] = { "send", SEQ_FLAGS | MRC_F_SOLICITED, sizeof(struct mrc_data_ext), 1, 1,
			  1, QPN_QP },
	[MRC_OP_SEND_IMM] = { "send_imm", SEQ_FLAGS | MRC_F_SOLICITED,
			      sizeof(struct mrc_data_ext), 1, 1, 1, QPN_QP },
	[MRC_OP_SEND_INV] = { "send_inv", SEQ_FLAGS | MRC_F_SOLICITED,
			      sizeof(struct mrc_data_ext), 1, 1, 1, QPN_QP },
	[MRC_OP_READ_REQ] = { "read_req", SEQ_FLAGS, sizeof(struct mrc_read_req_ext), 1, 0, 0,
			      QPN_QP },
	[MRC_OP_READ_RESP] = { "read_resp", SEQ_FLAGS, sizeof(struct mrc_data_ext), 1, 1, 1,
			       QPN_QP },
	[MRC_OP_ATOMIC_REQ] = { "atomic_req", SEQ_FLAGS, sizeof(struct mrc_atomic_ext), 1, 0, 0,
				QPN_QP },
	[MRC_OP_ACK] = { "ack", MRC_F_ECE, sizeof(struct mrc_ack_ext), 0, 0, 0, QPN_QP },
	[MRC_OP_NAK] = { "nak", MRC_F_ECE, sizeof(struct mrc_nak_ext), 0, 0, 0, QPN_QP },
	[MRC_OP_PROBE] = { "probe", 0, sizeof(struct mrc_probe_ext), 0, 0, 1, QPN_ANY },
	[MRC_OP_PROBE_REPLY] = { "probe_reply", MRC_F_ECE, sizeof(struct mrc_probe_reply_ext), 0,
				 0, 0, QPN_ANY },
	[MRC_OP_DISCOVER] = { "discover", 0, sizeof(struct mrc_discover_ext), 0, 0, 1,
			      QPN_DAEMON },
	[MRC_OP_DISCOVER_REPLY] = { "discover_reply", 0, sizeof(struct mrc_discover_ext), 0, 0,
				    1, QPN_DAEMON },
	[MRC_OP_CLOSE] = { "close", 0, sizeof(struct mrc_close_ext), 0, 0, 0, QPN_QP },
	[MRC_OP_UD_SEND] = { "ud_send", MRC_F_SOLICITED, sizeof(struct mrc_ud_ext), 0, 0, 1,
			     QPN_QP },
	[MRC_OP_UD_SEND_IMM] = { "ud_send_imm", MRC_F_SOLICITED, sizeof(struct mrc_ud_ext), 0, 0,
				 1, QPN_QP },
};

/* psn carries meaning in sequenced packets, as DISCOVER's request id and as a UD QP's
 * datagram count. */
static int psn_meaningful(uint8_t opcode)
{
	return opcodes[opcode].sequenced || opcode == MRC_OP_DISCOVER ||
	       opcode == MRC_OP_DISCOVER_REPLY || mrc_opcode_is_ud(opcode);
}

size_t mrc_auth_trailer_len(uint8_t opcode, uint16_t flags)
{
	if (!mrc_opcode_is_known(opcode) || !(flags & MRC_F_AUTH))
		return 0;
	if (opcode == MRC_OP_DISCOVER || opcode == MRC_OP_DISCOVER_REPLY)
		return sizeof(struct mrc_discover_auth);
	return flags & MRC_F_SEALED ? sizeof(struct mrc_seal_trailer) : sizeof(struct mrc_auth_tag);
}

int mrc_opcode_is_known(uint8_t opcode)
{
	return opcodes[opcode].ext_len != 0;
}

int mrc_opcode_is_sequenced(uint8_t opcode)
{
	return opcodes[opcode].sequenced;
}

int mrc_opcode_is_data(uint8_t opcode)
{
	return opcodes[opcode].data;
}

int mrc_opcode_consumes_receive(uint8_t opcode)
{
	return opcode == MRC_OP_SEND || opcode == MRC_OP_SEND_IMM || opcode == MRC_OP_SEND_INV ||
	       opcode == MRC_OP_WRITE_IMM;
}

int mrc_opcode_is_ud(uint8_t opcode)
{
	return opcode == MRC_OP_UD_SEND || opcode == MRC_OP_UD_SEND_IMM;
}

uint16_t mrc_opcode_flags(uint8_t opcode)
{
	if (!opcodes[opcode].ext_len)
		return 0;
	if (opcode == MRC_OP_DISCOVER || opcode == MRC_OP_DISCOVER_REPLY)
		return opcodes[opcode].flags | MRC_F_AUTH;
	return opcodes[opcode].flags | MRC_F_AUTH | MRC_F_SEALED;
}

size_t mrc_header_len(uint8_t opcode)
{
	if (!mrc_opcode_is_known(opcode))
		return 0;
	return sizeof(struct mrc_hdr) + opcodes[opcode].ext_len;
}

const char *mrc_opcode_name(uint8_t opcode)
{
	return mrc_opcode_is_known(opcode) ? opcodes[opcode].name : "unknown";
}

const char *mrc_wire_error_name(int err)
{
	static const char *const names[] = {
		[MRC_WIRE_OK] = "ok",
		[MRC_WIRE_E_TRUNCATED] = "e_truncated",
		[MRC_WIRE_E_OVERSIZE] = "e_oversize",
		[MRC_WIRE_E_VERSION] = "e_version",
		[MRC_WIRE_E_OPCODE] = "e_opcode",
		[MRC_WIRE_E_LENGTH] = "e_length",
		[MRC_WIRE_E_CHECKSUM] = "e_checksum",
		[MRC_WIRE_E_QPN] = "e_qpn",
		[MRC_WIRE_E_FIELD] = "e_field",
		[MRC_WIRE_E_NOSPACE] = "e_nospace",
	};

	if (err < 0 || err > MRC_WIRE_ERROR_MAX)
		return "e_unknown";
	return names[err];
}

const char *mrc_nak_kind_name(uint8_t kind)
{
	static const char *const names[] = {
		[MRC_NAK_SEQ] = "seq",
		[MRC_NAK_RNR] = "rnr",
		[MRC_NAK_REMOTE_ACCESS] = "remote_access",
		[MRC_NAK_INVALID_REQ] = "invalid_req",
		[MRC_NAK_REMOTE_OP] = "remote_op",
	};

	if (kind == 0 || kind > MRC_NAK_KIND_MAX)
		return "unknown";
	return names[kind];
}

/* [addr, addr + len) must not wrap the 64-bit address space. */
static int range_wraps(uint64_t addr, uint64_t len)
{
	return len > UINT64_MAX - addr;
}

static int check_qpn(const struct mrc_packet *pkt)
{
	if (pkt->dst_qpn > MRC_QPN_MAX)
		return MRC_WIRE_E_QPN;
	switch (opcodes[pkt->opcode].qpn_rule) {
	case QPN_QP:
		return pkt->dst_qpn == MRC_QPN_DAEMON ? MRC_WIRE_E_QPN : MRC_WIRE_OK;
	case QPN_DAEMON:
		return pkt->dst_qpn != MRC_QPN_DAEMON ? MRC_WIRE_E_QPN : MRC_WIRE_OK;
	default:
		return MRC_WIRE_OK;
	}
}

static int check_data(const struct mrc_packet *pkt)
{
	const struct mrc_data *d = &pkt->u.data;
	uint8_t op = pkt->opcode;
	int has_addr = op == MRC_OP_WRITE || op == MRC_OP_WRITE_IMM || op == MRC_OP_READ_RESP;
	int has_imm = op == MRC_OP_WRITE_IMM || op == MRC_OP_SEND_IMM;
	int consumes_recv = mrc_opcode_consumes_receive(op);

	if (d->msg_len > MRC_MAX_MSG_LEN)
		return MRC_WIRE_E_LENGTH;
	/* Every packet of a non-empty message carries bytes; an empty message is one packet. */
	if (pkt->payload_len == 0 && (d->msg_len != 0 || d->msg_off != 0))
		return MRC_WIRE_E_LENGTH;
	if ((uint64_t)d->msg_off + pkt->payload_len > d->msg_len)
		return MRC_WIRE_E_LENGTH;
	if (has_addr && range_wraps(d->raddr, pkt->payload_len))
		return MRC_WIRE_E_LENGTH;
	/* SEND_INV's rkey names the key to invalidate; its validity is the receiver's */
	if (!has_addr && ((d->rkey != 0 && op != MRC_OP_SEND_INV) || d->raddr != 0))
		return MRC_WIRE_E_FIELD;
	if (!has_imm && d->imm != 0)
		return MRC_WIRE_E_FIELD;
	if (!consumes_recv && d->rsn != 0)
		return MRC_WIRE_E_FIELD;
	return MRC_WIRE_OK;
}

static int check_discover(const struct mrc_packet *pkt)
{
	const struct mrc_discover *d = &pkt->u.discover;
	uint32_t planes_seen = 0;

	if (pkt->payload_len != (size_t)d->n_addrs * sizeof(struct mrc_plane_addr))
		return MRC_WIRE_E_LENGTH;
	if (d->n_addrs == 0 || d->n_addrs > MRC_MAX_PLANES)
		return MRC_WIRE_E_FIELD;
	if (d->udp_port == 0 || d->max_payload < MRC_MIN_PAYLOAD)
		return MRC_WIRE_E_FIELD;
	for (unsigned i = 0; i < d->n_addrs; i++) {
		int mapped = mrc_addr_is_v4(d->addrs[i].addr);

		if (d->addrs[i].plane >= MRC_MAX_PLANES || (planes_seen >> d->addrs[i].plane) & 1)
			return MRC_WIRE_E_FIELD;
		planes_seen |= 1u << d->addrs[i].plane;
		if (d->addrs[i].family == MRC_AF_INET) {
			if (!mapped)
				return MRC_WIRE_E_FIELD;
		} else if (d->addrs[i].family == MRC_AF_INET6) {
			if (mapped)
				return MRC_WIRE_E_FIELD;
		} else {
			return MRC_WIRE_E_FIELD;
		}
	}
	return MRC_WIRE_OK;
}

/* The per-opcode rules, shared by the decoder and the encoder. */
static int check_semantics(const struct mrc_packet *pkt)
{
	int err = check_qpn(pkt);

	if (err)
		return err;
	if ((pkt->flags & MRC_F_SEALED) && !(pkt->flags & MRC_F_AUTH))
		return MRC_WIRE_E_FIELD; /* a sealed packet's trailer is an authentication's */
	if (!opcodes[pkt->opcode].may_payload && pkt->payload_len != 0)
		return MRC_WIRE_E_LENGTH;
	switch (pkt->opcode) {
	case MRC_OP_WRITE:
	case MRC_OP_WRITE_IMM:
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
	case MRC_OP_SEND_INV:
	case MRC_OP_READ_RESP:
		return check_data(pkt);
	case MRC_OP_READ_REQ:
		if (pkt->u.read_req.length > MRC_MAX_MSG_LEN)
			return MRC_WIRE_E_LENGTH;
		if (range_wraps(pkt->u.read_req.raddr, pkt->u.read_req.length) ||
		    range_wraps(pkt->u.read_req.sink_addr, pkt->u.read_req.length))
			return MRC_WIRE_E_LENGTH;
		return MRC_WIRE_OK;
	case MRC_OP_ATOMIC_REQ: {
		const struct mrc_atomic *a = &pkt->u.atomic;

		/* alignment and access are the responder's to refuse with a NAK */
		if ((a->op != MRC_ATOMIC_CMP_SWAP && a->op != MRC_ATOMIC_FETCH_ADD) || a->reserved)
			return MRC_WIRE_E_FIELD;
		if (a->op == MRC_ATOMIC_FETCH_ADD && a->compare)
			return MRC_WIRE_E_FIELD;
		if (range_wraps(a->raddr, 8) || range_wraps(a->sink_addr, 8))
			return MRC_WIRE_E_LENGTH;
		return MRC_WIRE_OK;
	}
	case MRC_OP_ACK:
		/* Bit 0 stands for cum_psn, which by definition has not arrived. */
		return (pkt->u.ack.sack[0] & 1) ? MRC_WIRE_E_FIELD : MRC_WIRE_OK;
	case MRC_OP_NAK:
		if (pkt->u.nak.kind == 0 || pkt->u.nak.kind > MRC_NAK_KIND_MAX)
			return MRC_WIRE_E_FIELD;
		if (pkt->u.nak.kind != MRC_NAK_RNR && pkt->u.nak.retry_after != 0)
			return MRC_WIRE_E_FIELD;
		return MRC_WIRE_OK;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY:
		return check_discover(pkt);
	case MRC_OP_CLOSE:
		return pkt->u.close.reason > MRC_CLOSE_REASON_MAX ? MRC_WIRE_E_FIELD : MRC_WIRE_OK;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM:
		if (pkt->u.ud.src_qpn == MRC_QPN_DAEMON || pkt->u.ud.src_qpn > MRC_QPN_MAX)
			return MRC_WIRE_E_FIELD;
		if (pkt->opcode == MRC_OP_UD_SEND && pkt->u.ud.imm)
			return MRC_WIRE_E_FIELD;
		return MRC_WIRE_OK;
	default:
		return MRC_WIRE_OK;
	}
}

static void decode_ext(const uint8_t *ext, struct mrc_packet *pkt)
{
	switch (pkt->opcode) {
	case MRC_OP_WRITE:
	case MRC_OP_WRITE_IMM:
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
	case MRC_OP_SEND_INV:
	case MRC_OP_READ_RESP: {
		struct mrc_data *d = &pkt->u.data;

		d->msn = GET32(ext, struct mrc_data_ext, msn);
		d->rsn = GET32(ext, struct mrc_data_ext, rsn);
		d->msg_len = GET32(ext, struct mrc_data_ext, msg_len);
		d->msg_off = GET32(ext, struct mrc_data_ext, msg_off);
		d->rkey = GET32(ext, struct mrc_data_ext, rkey);
		d->imm = GET32(ext, struct mrc_data_ext, imm);
		d->raddr = GET64(ext, struct mrc_data_ext, raddr);
		break;
	}
	case MRC_OP_READ_REQ: {
		struct mrc_read_req *r = &pkt->u.read_req;

		r->msn = GET32(ext, struct mrc_read_req_ext, msn);
		r->length = GET32(ext, struct mrc_read_req_ext, length);
		r->rkey = GET32(ext, struct mrc_read_req_ext, rkey);
		r->sink_key = GET32(ext, struct mrc_read_req_ext, sink_key);
		r->raddr = GET64(ext, struct mrc_read_req_ext, raddr);
		r->sink_addr = GET64(ext, struct mrc_read_req_ext, sink_addr);
		break;
	}
	case MRC_OP_ATOMIC_REQ: {
		struct mrc_atomic *a = &pkt->u.atomic;
		const uint8_t *op = CFIELD_AT(ext, struct mrc_atomic_ext, op);

		a->msn = GET32(ext, struct mrc_atomic_ext, msn);
		a->op = op[0];
		a->reserved = (uint32_t)op[1] << 16 | (uint32_t)op[2] << 8 | op[3];
		a->rkey = GET32(ext, struct mrc_atomic_ext, rkey);
		a->sink_key = GET32(ext, struct mrc_atomic_ext, sink_key);
		a->raddr = GET64(ext, struct mrc_atomic_ext, raddr);
		a->sink_addr = GET64(ext, struct mrc_atomic_ext, sink_addr);
		a->swap_add = GET64(ext, struct mrc_atomic_ext, swap_add);
		a->compare = GET64(ext, struct mrc_atomic_ext, compare);
		break;
	}
	case MRC_OP_ACK: {
		struct mrc_ack *a = &pkt->u.ack;

		a->cum_psn = GET32(ext, struct mrc_ack_ext, cum_psn);
		a->echo_ts = GET32(ext, struct mrc_ack_ext, echo_ts);
		a->ack_delay_ns = GET32(ext, struct mrc_ack_ext, ack_delay_ns);
		a->rate_hint_kbps = GET32(ext, struct mrc_ack_ext, rate_hint);
		a->echo_path = GET16(ext, struct mrc_ack_ext, echo_path);
		a->ce_count = GET16(ext, struct mrc_ack_ext, ce_count);
		a->queue_delay_ns = GET32(ext, struct mrc_ack_ext, queue_delay);
		memcpy(a->sack, CFIELD_AT(ext, struct mrc_ack_ext, sack), MRC_SACK_BYTES);
		break;
	}
	case MRC_OP_NAK: {
		struct mrc_nak *n = &pkt->u.nak;

		n->cum_psn = GET32(ext, struct mrc_nak_ext, cum_psn);
		n->nak_psn = GET32(ext, struct mrc_nak_ext, nak_psn);
		n->msn = GET32(ext, struct mrc_nak_ext, msn);
		n->kind = *CFIELD_AT(ext, struct mrc_nak_ext, kind);
		n->retry_after = GET16(ext, struct mrc_nak_ext, retry_after);
		break;
	}
	case MRC_OP_PROBE:
		pkt->u.probe.nonce = GET64(ext, struct mrc_probe_ext, nonce);
		pkt->u.probe.echo_ts = 0;
		pkt->u.probe.echo_path = 0;
		break;
	case MRC_OP_PROBE_REPLY:
		pkt->u.probe.nonce = GET64(ext, struct mrc_probe_reply_ext, nonce);
		pkt->u.probe.echo_ts = GET32(ext, struct mrc_probe_reply_ext, echo_ts);
		pkt->u.probe.echo_path = GET16(ext, struct mrc_probe_reply_ext, echo_path);
		break;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY: {
		struct mrc_discover *d = &pkt->u.discover;

		d->node_id = GET64(ext, struct mrc_discover_ext, node_id);
		d->udp_port = GET16(ext, struct mrc_discover_ext, udp_port);
		d->max_payload = GET16(ext, struct mrc_discover_ext, max_payload);
		d->n_addrs = *CFIELD_AT(ext, struct mrc_discover_ext, n_addrs);
		break;
	}
	case MRC_OP_CLOSE:
		pkt->u.close.reason = GET32(ext, struct mrc_close_ext, reason);
		pkt->u.close.cum_psn = GET32(ext, struct mrc_close_ext, cum_psn);
		break;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM:
		pkt->u.ud.src_qpn = GET32(ext, struct mrc_ud_ext, src_qpn);
		pkt->u.ud.qkey = GET32(ext, struct mrc_ud_ext, qkey);
		pkt->u.ud.imm = GET32(ext, struct mrc_ud_ext, imm);
		break;
	}
}

/* Address records are read only when their count agrees with payload_len. */
static void decode_plane_addrs(struct mrc_packet *pkt)
{
	struct mrc_discover *d = &pkt->u.discover;
	int count_ok = d->n_addrs <= MRC_MAX_PLANES &&
		       pkt->payload_len == (size_t)d->n_addrs * sizeof(struct mrc_plane_addr);
	unsigned n = count_ok ? d->n_addrs : 0;

	for (unsigned i = 0; i < n; i++) {
		const uint8_t *rec = pkt->payload + i * sizeof(struct mrc_plane_addr);

		d->addrs[i].family = *CFIELD_AT(rec, struct mrc_plane_addr, family);
		d->addrs[i].plane = *CFIELD_AT(rec, struct mrc_plane_addr, plane);
		d->addrs[i].flags = GET16(rec, struct mrc_plane_addr, flags);
		memcpy(d->addrs[i].addr, CFIELD_AT(rec, struct mrc_plane_addr, addr), 16);
	}
}

int mrc_decode(const void *buf, size_t len, struct mrc_packet *pkt)
{
	const uint8_t *p = buf;
	size_t hdr_len, trailer;

	if (len < sizeof(struct mrc_hdr))
		return MRC_WIRE_E_TRUNCATED;
	if (len > MRC_WIRE_MAX_PACKET)
		return MRC_WIRE_E_OVERSIZE;
	if (*CFIELD_AT(p, struct mrc_hdr, version) != MRC_WIRE_VERSION)
		return MRC_WIRE_E_VERSION;
	pkt->opcode = *CFIELD_AT(p, struct mrc_hdr, opcode);
	hdr_len = mrc_header_len(pkt->opcode);
	if (hdr_len == 0)
		return MRC_WIRE_E_OPCODE;
	if (len < hdr_len)
		return MRC_WIRE_E_TRUNCATED;
	pkt->payload_len = GET16(p, struct mrc_hdr, payload_len);
	trailer = mrc_auth_trailer_len(pkt->opcode,
				       GET16(p, struct mrc_hdr, flags) & mrc_opcode_flags(pkt->opcode));
	if (len - hdr_len != (size_t)pkt->payload_len + trailer)
		return MRC_WIRE_E_LENGTH;
	/* Integrity before any field is believed: a corrupted packet is never acted on. */
	if (!mrc_csum_verify(p, len - trailer))
		return MRC_WIRE_E_CHECKSUM;

	pkt->flags = GET16(p, struct mrc_hdr, flags) & mrc_opcode_flags(pkt->opcode);
	pkt->dst_qpn = GET32(p, struct mrc_hdr, dst_qpn);
	pkt->psn = psn_meaningful(pkt->opcode) ? GET32(p, struct mrc_hdr, psn) : 0;
	pkt->tx_ts = GET32(p, struct mrc_hdr, tx_ts);
	pkt->path_id = GET16(p, struct mrc_hdr, path_id);
	pkt->payload = p + hdr_len;
	pkt->wire = p;
	pkt->auth = trailer ? p + len - trailer : NULL;
	decode_ext(p + sizeof(struct mrc_hdr), pkt);
	if (pkt->opcode == MRC_OP_DISCOVER || pkt->opcode == MRC_OP_DISCOVER_REPLY)
		decode_plane_addrs(pkt);

	return check_semantics(pkt);
}

int mrc_decode_placed(const void *hdr, size_t len, struct mrc_packet *pkt)
{
	const uint8_t *p = hdr;

	if (len < sizeof(struct mrc_hdr))
		return MRC_WIRE_E_TRUNCATED;
	if (*CFIELD_AT(p, struct mrc_hdr, version) != MRC_WIRE_VERSION)
		return MRC_WIRE_E_VERSION;
	pkt->opcode = *CFIELD_AT(p, struct mrc_hdr, opcode);
	if (!mrc_opcode_is_data(pkt->opcode))
		return MRC_WIRE_E_OPCODE;
	if (len < mrc_header_len(pkt->opcode))
		return MRC_WIRE_E_TRUNCATED;
	pkt->payload_len = GET16(p, struct mrc_hdr, payload_len);
	if (mrc_header_len(pkt->opcode) + pkt->payload_len > MRC_WIRE_MAX_PACKET)
		return MRC_WIRE_E_OVERSIZE;
	pkt->flags = GET16(p, struct mrc_hdr, flags) & mrc_opcode_flags(pkt->opcode);
	pkt->dst_qpn = GET32(p, struct mrc_hdr, dst_qpn);
	pkt->psn = GET32(p, struct mrc_hdr, psn);
	pkt->tx_ts = GET32(p, struct mrc_hdr, tx_ts);
	pkt->path_id = GET16(p, struct mrc_hdr, path_id);
	pkt->payload = NULL;
	pkt->wire = p;
	/* the fast path checked the trailer and handed on the headers only */
	pkt->auth = NULL;
	decode_ext(p + sizeof(struct mrc_hdr), pkt);
	return check_semantics(pkt);
}

static void encode_ext(const struct mrc_packet *pkt, uint8_t *ext)
{
	switch (pkt->opcode) {
	case MRC_OP_WRITE:
	case MRC_OP_WRITE_IMM:
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
	case MRC_OP_SEND_INV:
	case MRC_OP_READ_RESP: {
		const struct mrc_data *d = &pkt->u.data;

		PUT32(ext, struct mrc_data_ext, msn, d->msn);
		PUT32(ext, struct mrc_data_ext, rsn, d->rsn);
		PUT32(ext, struct mrc_data_ext, msg_len, d->msg_len);
		PUT32(ext, struct mrc_data_ext, msg_off, d->msg_off);
		PUT32(ext, struct mrc_data_ext, rkey, d->rkey);
		PUT32(ext, struct mrc_data_ext, imm, d->imm);
		PUT64(ext, struct mrc_data_ext, raddr, d->raddr);
		break;
	}
	case MRC_OP_READ_REQ: {
		const struct mrc_read_req *r = &pkt->u.read_req;

		PUT32(ext, struct mrc_read_req_ext, msn, r->msn);
		PUT32(ext, struct mrc_read_req_ext, length, r->length);
		PUT32(ext, struct mrc_read_req_ext, rkey, r->rkey);
		PUT32(ext, struct mrc_read_req_ext, sink_key, r->sink_key);
		PUT64(ext, struct mrc_read_req_ext, raddr, r->raddr);
		PUT64(ext, struct mrc_read_req_ext, sink_addr, r->sink_addr);
		break;
	}
	case MRC_OP_ATOMIC_REQ: {
		const struct mrc_atomic *a = &pkt->u.atomic;
		uint8_t *op = FIELD_AT(ext, struct mrc_atomic_ext, op);

		PUT32(ext, struct mrc_atomic_ext, msn, a->msn);
		op[0] = a->op;
		op[1] = (uint8_t)(a->reserved >> 16);
		op[2] = (uint8_t)(a->reserved >> 8);
		op[3] = (uint8_t)a->reserved;
		PUT32(ext, struct mrc_atomic_ext, rkey, a->rkey);
		PUT32(ext, struct mrc_atomic_ext, sink_key, a->sink_key);
		PUT64(ext, struct mrc_atomic_ext, raddr, a->raddr);
		PUT64(ext, struct mrc_atomic_ext, sink_addr, a->sink_addr);
		PUT64(ext, struct mrc_atomic_ext, swap_add, a->swap_add);
		PUT64(ext, struct mrc_atomic_ext, compare, a->compare);
		break;
	}
	case MRC_OP_ACK: {
		const struct mrc_ack *a = &pkt->u.ack;

		PUT32(ext, struct mrc_ack_ext, cum_psn, a->cum_psn);
		PUT32(ext, struct mrc_ack_ext, echo_ts, a->echo_ts);
		PUT32(ext, struct mrc_ack_ext, ack_delay_ns, a->ack_delay_ns);
		PUT32(ext, struct mrc_ack_ext, rate_hint, a->rate_hint_kbps);
		PUT16(ext, struct mrc_ack_ext, echo_path, a->echo_path);
		PUT16(ext, struct mrc_ack_ext, ce_count, a->ce_count);
		PUT32(ext, struct mrc_ack_ext, queue_delay, a->queue_delay_ns);
		memcpy(FIELD_AT(ext, struct mrc_ack_ext, sack), a->sack, MRC_SACK_BYTES);
		break;
	}
	case MRC_OP_NAK: {
		const struct mrc_nak *n = &pkt->u.nak;

		PUT32(ext, struct mrc_nak_ext, cum_psn, n->cum_psn);
		PUT32(ext, struct mrc_nak_ext, nak_psn, n->nak_psn);
		PUT32(ext, struct mrc_nak_ext, msn, n->msn);
		*FIELD_AT(ext, struct mrc_nak_ext, kind) = n->kind;
		PUT16(ext, struct mrc_nak_ext, retry_after, n->retry_after);
		break;
	}
	case MRC_OP_PROBE:
		PUT64(ext, struct mrc_probe_ext, nonce, pkt->u.probe.nonce);
		break;
	case MRC_OP_PROBE_REPLY:
		PUT64(ext, struct mrc_probe_reply_ext, nonce, pkt->u.probe.nonce);
		PUT32(ext, struct mrc_probe_reply_ext, echo_ts, pkt->u.probe.echo_ts);
		PUT16(ext, struct mrc_probe_reply_ext, echo_path, pkt->u.probe.echo_path);
		break;
	case MRC_OP_DISCOVER:
	case MRC_OP_DISCOVER_REPLY: {
		const struct mrc_discover *d = &pkt->u.discover;

		PUT64(ext, struct mrc_discover_ext, node_id, d->node_id);
		PUT16(ext, struct mrc_discover_ext, udp_port, d->udp_port);
		PUT16(ext, struct mrc_discover_ext, max_payload, d->max_payload);
		*FIELD_AT(ext, struct mrc_discover_ext, n_addrs) = d->n_addrs;
		break;
	}
	case MRC_OP_CLOSE:
		PUT32(ext, struct mrc_close_ext, reason, pkt->u.close.reason);
		PUT32(ext, struct mrc_close_ext, cum_psn, pkt->u.close.cum_psn);
		break;
	case MRC_OP_UD_SEND:
	case MRC_OP_UD_SEND_IMM:
		PUT32(ext, struct mrc_ud_ext, src_qpn, pkt->u.ud.src_qpn);
		PUT32(ext, struct mrc_ud_ext, qkey, pkt->u.ud.qkey);
		PUT32(ext, struct mrc_ud_ext, imm, pkt->u.ud.imm);
		break;
	}
}

static void encode_plane_addrs(const struct mrc_discover *d, uint8_t *out)
{
	for (unsigned i = 0; i < d->n_addrs; i++) {
		uint8_t *rec = out + i * sizeof(struct mrc_plane_addr);

		*FIELD_AT(rec, struct mrc_plane_addr, family) = d->addrs[i].family;
		*FIELD_AT(rec, struct mrc_plane_addr, plane) = d->addrs[i].plane;
		PUT16(rec, struct mrc_plane_addr, flags, d->addrs[i].flags);
		memcpy(FIELD_AT(rec, struct mrc_plane_addr, addr), d->addrs[i].addr, 16);
	}
}

/* Both encoders: the payload copied behind the headers, or left where it is and summed there. */
static int encode(const struct mrc_packet *pkt, void *buf, size_t cap, bool in_place,
		  size_t *out_len)
{
	uint8_t *p = buf;
	struct mrc_packet checked = *pkt;
	size_t hdr_len = mrc_header_len(pkt->opcode);
	int is_discover = pkt->opcode == MRC_OP_DISCOVER || pkt->opcode == MRC_OP_DISCOVER_REPLY;
	size_t len;
	int err;

	if (hdr_len == 0)
		return MRC_WIRE_E_OPCODE;
	if (is_discover) {
		if (pkt->u.discover.n_addrs == 0 || pkt->u.discover.n_addrs > MRC_MAX_PLANES)
			return MRC_WIRE_E_FIELD;
		checked.payload_len =
			(uint16_t)(pkt->u.discover.n_addrs * sizeof(struct mrc_plane_addr));
	}
	len = hdr_len + checked.payload_len;
	if (len > MRC_WIRE_MAX_PACKET)
		return MRC_WIRE_E_OVERSIZE;
	err = check_semantics(&checked);
	if (err)
		return err;
	if ((in_place ? hdr_len : len) > cap)
		return MRC_WIRE_E_NOSPACE;

	/* The payload first: it may overlap nothing but its own final place (zero-copy). */
	if (is_discover)
		encode_plane_addrs(&pkt->u.discover, p + hdr_len);
	else if (!in_place && checked.payload_len && pkt->payload != p + hdr_len)
		memmove(p + hdr_len, pkt->payload, checked.payload_len);

	memset(p, 0, hdr_len);
	*FIELD_AT(p, struct mrc_hdr, version) = MRC_WIRE_VERSION;
	*FIELD_AT(p, struct mrc_hdr, opcode) = pkt->opcode;
	PUT16(p, struct mrc_hdr, flags, pkt->flags & mrc_opcode_flags(pkt->opcode));
	PUT32(p, struct mrc_hdr, dst_qpn, pkt->dst_qpn);
	PUT32(p, struct mrc_hdr, psn, psn_meaningful(pkt->opcode) ? pkt->psn : 0);
	PUT32(p, struct mrc_hdr, tx_ts, pkt->tx_ts);
	PUT16(p, struct mrc_hdr, path_id, pkt->path_id);
	PUT16(p, struct mrc_hdr, payload_len, checked.payload_len);
	encode_ext(pkt, p + sizeof(struct mrc_hdr));
	if (in_place) {
		/* headers and payload are summed apart: the headers' length is even */
		uint32_t acc = mrc_csum_add(0, p, hdr_len);

		acc = mrc_csum_add(acc, pkt->payload, checked.payload_len);
		PUT16(p, struct mrc_hdr, csum, (uint16_t)~mrc_csum_fold(acc));
		*out_len = hdr_len;
	} else {
		PUT16(p, struct mrc_hdr, csum, mrc_csum_compute(p, len));
		*out_len = len;
	}
	return MRC_WIRE_OK;
}

int mrc_encode(const struct mrc_packet *pkt, void *buf, size_t cap, size_t *out_len)
{
	return encode(pkt, buf, cap, false, out_len);
}

int mrc_encode_headers(const struct mrc_packet *pkt, void *buf, size_t cap, size_t *hdr_len)
{
	if (!mrc_opcode_is_data(pkt->opcode) && !mrc_opcode_is_ud(pkt->opcode))
		return encode(pkt, buf, cap, false, hdr_len);
	return encode(pkt, buf, cap, true, hdr_len);
}
