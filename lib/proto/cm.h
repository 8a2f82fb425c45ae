/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Connection-management messages (SPEC 17) as bytes and back, without I/O: what the daemons'
 * CM agents put in the payload of a UD datagram from QP 1 to QP 1, and the checks every one
 * passes before a field of it is believed.
 */
#ifndef METAROCE_PROTO_CM_H
#define METAROCE_PROTO_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <metaroce/wire.h>

/* A message in host order; private_data points into the caller's buffer. */
struct mrc_cm {
	uint8_t type; /* enum mrc_cm_type */
	uint8_t port_space;
	uint8_t flags;
	uint8_t responder_resources, initiator_depth, retry_count, rnr_retry_count;
	uint32_t local_comm_id, remote_comm_id;
	uint64_t node_id;
	uint32_t qpn, status, qkey;
	uint16_t src_port, dst_port;
	uint8_t src_addr[16], dst_addr[16];
	const uint8_t *private_data;
	uint8_t private_len;
};

/* Why a message was refused; stable, the daemon counts them by these. */
enum mrc_cm_error {
	MRC_CM_OK = 0,
	MRC_CM_E_SHORT = 1,	  /* fewer bytes than the struct and its private data */
	MRC_CM_E_TYPE = 2,	  /* not a known type */
	MRC_CM_E_PORT_SPACE = 3,  /* not a known port space, or the wrong one for the type */
	MRC_CM_E_PRIVATE = 4,	  /* more private data than the type carries */
	MRC_CM_E_COMM_ID = 5,	  /* a communication id missing, or present where none is */
	MRC_CM_E_QPN = 6,	  /* a QPN missing, out of range, or present where none is */
	MRC_CM_E_RESERVED = 7,	  /* a field the type does not use is not zero, an unknown flag */
	MRC_CM_E_LENGTH = 8,	  /* bytes beyond the private data */
	MRC_CM_E_MAX = MRC_CM_E_LENGTH,
};

const char *mrc_cm_type_name(unsigned type);
const char *mrc_cm_error_name(unsigned err);
/* The private data the type carries at most. */
unsigned mrc_cm_private_max(unsigned type);

/* The message into buf: sizeof(struct mrc_cm_msg) + private_len bytes, or 0 if it does not
 * fit or is not one mrc_cm_decode would take. */
size_t mrc_cm_encode(const struct mrc_cm *m, uint8_t *buf, size_t cap);
/* Bytes of a datagram's payload to *m, every rule of R-534 checked: MRC_CM_OK or why not. */
enum mrc_cm_error mrc_cm_decode(const uint8_t *buf, size_t len, struct mrc_cm *m);

#endif /* METAROCE_PROTO_CM_H */
