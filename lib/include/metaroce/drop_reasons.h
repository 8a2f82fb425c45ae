/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Why a received packet was not acted on. Stable and append-only, shared by the engine, the
 * XDP programs, the daemon's counters and metaroce-ctl. Values 1..31 are the decoder's
 * enum mrc_wire_error (a malformed packet); values from 32 are the transport's own reasons
 * for refusing a well-formed packet.
 */
#ifndef METAROCE_DROP_REASONS_H
#define METAROCE_DROP_REASONS_H

#include <metaroce/wire.h>

enum mrc_drop_reason {
	MRC_DROP_NONE = 0,
	/* 1..31: enum mrc_wire_error */
	MRC_DROP_WRONG_QPN = 32,      /* addressed to another QP */
	MRC_DROP_QP_STATE = 33,	      /* the QP is not in a state that accepts this packet */
	MRC_DROP_DUPLICATE = 34,      /* PSN already received (in window or below it) */
	MRC_DROP_ABOVE_WINDOW = 35,   /* PSN at or beyond cum_psn + 256 */
	MRC_DROP_OUT_OF_ORDER = 36,   /* in-order mode: PSN is not the expected one */
	MRC_DROP_REMOTE_ACCESS = 37,  /* bad key, range or permission: NAKed */
	MRC_DROP_RNR = 38,	      /* no receive posted: NAKed, not acknowledged */
	MRC_DROP_INVALID_REQ = 39,    /* message longer than the receive, or opcode refused */
	MRC_DROP_BAD_READ_RESP = 40,  /* READ response matching no outstanding READ */
	MRC_DROP_BAD_ACK = 41,	      /* ACK, NAK or CLOSE naming PSNs out of the send window */
	MRC_DROP_STALE_PROBE = 42,    /* probe reply matching no outstanding probe */
	MRC_DROP_OPCODE_REFUSED = 43, /* opcode a connection does not accept (e.g. DISCOVER) */
	MRC_DROP_NOT_ADMITTED = 44,   /* DISCOVER from outside the configured peer prefixes */
	MRC_DROP_STALE_DISCOVER = 45, /* DISCOVER_REPLY matching no outstanding request */
	MRC_DROP_PEERS_FULL = 46,     /* no room for another peer */
	MRC_DROP_QP_CLOSED = 47,      /* data for a destroyed QP it never received: CLOSE */
	MRC_DROP_RESPONDER_BUSY = 48, /* READ or atomic beyond the room for responses: not
				       * accepted, so the requester sends it again */
	MRC_DROP_UD_QKEY = 49,	      /* UD datagram whose qkey is not the QP's */
	MRC_DROP_UD_NO_RECEIVE = 50,  /* UD datagram while no receive is posted */
	MRC_DROP_UD_TOO_LONG = 51,    /* UD datagram longer than the receive (GRH included) */
	MRC_DROP_UNAUTHENTICATED = 52, /* no authentication trailer, or its tag is wrong */
	MRC_DROP_PEER_KEY = 53,	      /* DISCOVER* under a key not allowed for its addresses, or
				       * not the key the peer is known by */
};
#define MRC_DROP_REASON_MAX MRC_DROP_PEER_KEY

#endif /* METAROCE_DROP_REASONS_H */
