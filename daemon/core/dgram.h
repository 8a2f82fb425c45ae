/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One datagram, as the backends move it and the core takes and gives it. */
#ifndef METAROCE_DAEMON_CORE_DGRAM_H
#define METAROCE_DAEMON_CORE_DGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Source ports a backend offers per plane: the entropy a QP's paths choose among. */
#define MRCD_SPORTS_PER_PLANE 16

struct mrcd_dgram {
	uint8_t *data;
	uint32_t len;	    /* rx: bytes received; tx: bytes in data, before any payload */
	/* tx: more bytes that follow data on the wire, where they lie (a data packet's
	 * payload in the application's memory: a gather list, one copy less); NULL: none.
	 * Valid only within the pump turn that made it: what waits longer is copied in. */
	const uint8_t *payload;
	uint32_t payload_len;
	/* tx with a payload by reference: the authentication trailer that follows it */
	uint8_t trailer[MRC_AUTH_TAG_LEN];
	uint8_t trailer_len;
	uint32_t cap;	    /* rx: room in data */
	uint8_t plane;	    /* the local plane it arrived on / leaves from */
	uint16_t sport;	    /* rx: the sender's UDP source port; tx: ours (path entropy) */
	struct mrcd_addr peer; /* rx: source address; tx: destination */
	uint16_t peer_port;    /* rx: source port; tx: destination port */
	bool ce;	    /* rx: the IP header carried ECN CE */
	bool placed;	    /* rx: the fast path placed the payload; data holds the headers */
};

/* The bytes a datagram puts on the wire. */
static inline uint32_t mrcd_dgram_tx_len(const struct mrcd_dgram *d)
{
	return d->len + (d->payload ? d->payload_len + d->trailer_len : 0);
}

#endif /* METAROCE_DAEMON_CORE_DGRAM_H */
