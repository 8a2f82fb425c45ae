/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Connection-management messages (SPEC 17); see cm.h. */
#include <stddef.h>
#include <string.h>

#include "proto/bytes.h"
#include "proto/cm.h"

#define FIELD(f) offsetof(struct mrc_cm_msg, f)

static const char *const type_names[MRC_CM_TYPE_MAX + 1] = {
	[MRC_CM_REQ] = "REQ",	    [MRC_CM_REP] = "REP",   [MRC_CM_RTU] = "RTU",
	[MRC_CM_REJ] = "REJ",	    [MRC_CM_DREQ] = "DREQ", [MRC_CM_DREP] = "DREP",
	[MRC_CM_SIDR_REQ] = "SIDR_REQ", [MRC_CM_SIDR_REP] = "SIDR_REP",
};

static const char *const error_names[MRC_CM_E_MAX + 1] = {
	[MRC_CM_OK] = "ok",		  [MRC_CM_E_SHORT] = "short",
	[MRC_CM_E_TYPE] = "type",	  [MRC_CM_E_PORT_SPACE] = "port_space",
	[MRC_CM_E_PRIVATE] = "private_data", [MRC_CM_E_COMM_ID] = "comm_id",
	[MRC_CM_E_QPN] = "qpn",		  [MRC_CM_E_RESERVED] = "reserved",
	[MRC_CM_E_LENGTH] = "length",
};

const char *mrc_cm_type_name(unsigned type)
{
	return type && type <= MRC_CM_TYPE_MAX ? type_names[type] : "unknown";
}

const char *mrc_cm_error_name(unsigned err)
{
	return err <= MRC_CM_E_MAX ? error_names[err] : "unknown";
}

unsigned mrc_cm_private_max(unsigned type)
{
	static const unsigned char max[MRC_CM_TYPE_MAX + 1] = {
		[MRC_CM_REQ] = MRC_CM_PRIVATE_REQ,	   [MRC_CM_REP] = MRC_CM_PRIVATE_REP,
		[MRC_CM_RTU] = MRC_CM_PRIVATE_RTU,	   [MRC_CM_REJ] = MRC_CM_PRIVATE_REJ,
		[MRC_CM_DREQ] = MRC_CM_PRIVATE_DREQ,	   [MRC_CM_DREP] = MRC_CM_PRIVATE_DREP,
		[MRC_CM_SIDR_REQ] = MRC_CM_PRIVATE_SIDR_REQ, [MRC_CM_SIDR_REP] = MRC_CM_PRIVATE_SIDR_REP,
	};

	return type <= MRC_CM_TYPE_MAX ? max[type] : 0;
}

static bool connected_space(uint8_t ps)
{
	return ps == MRC_CM_PS_TCP || ps == MRC_CM_PS_IB;
}

static bool datagram_space(uint8_t ps)
{
	return ps == MRC_CM_PS_UDP || ps == MRC_CM_PS_IPOIB;
}

/* The rules of R-534 on a message already in host order. */
static enum mrc_cm_error check(const struct mrc_cm *m)
{
	bool req = m->type == MRC_CM_REQ, rep = m->type == MRC_CM_REP;
	bool first = req || m->type == MRC_CM_SIDR_REQ;
	bool sidr = m->type == MRC_CM_SIDR_REQ || m->type == MRC_CM_SIDR_REP;

	if (!m->type || m->type > MRC_CM_TYPE_MAX)
		return MRC_CM_E_TYPE;
	if (!connected_space(m->port_space) && !datagram_space(m->port_space))
		return MRC_CM_E_PORT_SPACE;
	/* REQ to DREP are a connection's, the SIDR pair a datagram space's */
	if (sidr ? !datagram_space(m->port_space) : !connected_space(m->port_space))
		return MRC_CM_E_PORT_SPACE;
	if (m->private_len > mrc_cm_private_max(m->type))
		return MRC_CM_E_PRIVATE;
	/* a refusal may come from a side that never made an id (nobody listens) */
	if ((!m->local_comm_id && m->type != MRC_CM_REJ && m->type != MRC_CM_SIDR_REP) ||
	    (first ? m->remote_comm_id != 0
		   : !m->remote_comm_id && m->type != MRC_CM_REJ)) /* a REJ of a REQ's sender */
		return MRC_CM_E_COMM_ID;
	if (req || rep || (m->type == MRC_CM_SIDR_REP && !m->status)) {
		if (m->qpn <= MRC_QPN_CM || m->qpn > MRC_QPN_MAX)
			return MRC_CM_E_QPN;
	} else if (m->qpn) {
		return MRC_CM_E_QPN;
	}
	if (!m->node_id)
		return MRC_CM_E_RESERVED;
	if ((m->type == MRC_CM_REJ) != !!m->status && !(m->type == MRC_CM_SIDR_REP))
		return MRC_CM_E_RESERVED;
	if (m->qkey && !(m->type == MRC_CM_SIDR_REP && !m->status))
		return MRC_CM_E_RESERVED;
	if (req || rep) {
		if ((m->flags & ~(MRC_CM_F_SRQ | MRC_CM_F_FLOW_CONTROL)) || m->rnr_retry_count > 7 ||
		    m->retry_count > 7 || (rep && m->retry_count))
			return MRC_CM_E_RESERVED;
	} else if (m->flags || m->responder_resources || m->initiator_depth || m->retry_count ||
		   m->rnr_retry_count) {
		return MRC_CM_E_RESERVED;
	}
	return MRC_CM_OK;
}

size_t mrc_cm_encode(const struct mrc_cm *m, uint8_t *buf, size_t cap)
{
	size_t len = sizeof(struct mrc_cm_msg) + m->private_len;

	if (len > cap || check(m) != MRC_CM_OK)
		return 0;
	memset(buf, 0, sizeof(struct mrc_cm_msg));
	buf[FIELD(type)] = m->type;
	buf[FIELD(port_space)] = m->port_space;
	buf[FIELD(private_len)] = m->private_len;
	buf[FIELD(flags)] = m->flags;
	buf[FIELD(responder_resources)] = m->responder_resources;
	buf[FIELD(initiator_depth)] = m->initiator_depth;
	buf[FIELD(retry_count)] = m->retry_count;
	buf[FIELD(rnr_retry_count)] = m->rnr_retry_count;
	store_be32(buf + FIELD(local_comm_id), m->local_comm_id);
	store_be32(buf + FIELD(remote_comm_id), m->remote_comm_id);
	store_be64(buf + FIELD(node_id), m->node_id);
	store_be32(buf + FIELD(qpn), m->qpn);
	store_be32(buf + FIELD(status), m->status);
	store_be32(buf + FIELD(qkey), m->qkey);
	store_be16(buf + FIELD(src_port), m->src_port);
	store_be16(buf + FIELD(dst_port), m->dst_port);
	memcpy(buf + FIELD(src_addr), m->src_addr, 16);
	memcpy(buf + FIELD(dst_addr), m->dst_addr, 16);
	if (m->private_len)
		memcpy(buf + sizeof(struct mrc_cm_msg), m->private_data, m->private_len);
	return len;
}

enum mrc_cm_error mrc_cm_decode(const uint8_t *buf, size_t len, struct mrc_cm *m)
{
	enum mrc_cm_error err;

	if (len < sizeof(struct mrc_cm_msg))
		return MRC_CM_E_SHORT;
	memset(m, 0, sizeof(*m));
	m->type = buf[FIELD(type)];
	m->port_space = buf[FIELD(port_space)];
	m->private_len = buf[FIELD(private_len)];
	m->flags = buf[FIELD(flags)];
	m->responder_resources = buf[FIELD(responder_resources)];
	m->initiator_depth = buf[FIELD(initiator_depth)];
	m->retry_count = buf[FIELD(retry_count)];
	m->rnr_retry_count = buf[FIELD(rnr_retry_count)];
	m->local_comm_id = load_be32(buf + FIELD(local_comm_id));
	m->remote_comm_id = load_be32(buf + FIELD(remote_comm_id));
	m->node_id = load_be64(buf + FIELD(node_id));
	m->qpn = load_be32(buf + FIELD(qpn));
	m->status = load_be32(buf + FIELD(status));
	m->qkey = load_be32(buf + FIELD(qkey));
	m->src_port = load_be16(buf + FIELD(src_port));
	m->dst_port = load_be16(buf + FIELD(dst_port));
	memcpy(m->src_addr, buf + FIELD(src_addr), 16);
	memcpy(m->dst_addr, buf + FIELD(dst_addr), 16);
	if (len < sizeof(struct mrc_cm_msg) + m->private_len)
		return MRC_CM_E_SHORT;
	if (len > sizeof(struct mrc_cm_msg) + m->private_len)
		return MRC_CM_E_LENGTH;
	m->private_data = buf + sizeof(struct mrc_cm_msg);
	err = check(m);
	return err;
}
