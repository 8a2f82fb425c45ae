/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Destroyed QPs whose engine connections still answer their peers (SPEC 11.4): the
 * application is gone from them, their rings and regions too, but the peer may still resend
 * what they received before the acknowledgement reached it. Each is found by its QPN for the
 * peer's packets, pumped with the live QPs, and freed once its connection is CLOSED and has
 * nothing left to send. They belong to nobody: a client's quota and tables are free the moment
 * it destroys the QP.
 */
#ifndef METAROCE_DAEMON_CORE_LINGER_H
#define METAROCE_DAEMON_CORE_LINGER_H

#include <stdint.h>

#include <metaroce/wire.h>

#include "proto/conn.h"

struct mrcd_lingering {
	uint32_t qpn;		/* the destroyed QP's number; 0: free entry */
	struct mrc_conn *conn;	/* in MRC_QPS_CLOSING or MRC_QPS_CLOSED */
	uint64_t peer_node;
	uint16_t peer_port;
	uint32_t peer_planes;	/* bit i: peer_addr[i] is the peer on our plane i */
	uint8_t peer_addr[MRC_MAX_PLANES][16];
	unsigned at;		/* its place in the table's active list */
};

struct mrcd_linger_table {
	struct mrcd_lingering *by_slot; /* one per QP slot (the QPN's low bits) */
	uint16_t *active;		/* the slots of the n entries in use */
	unsigned slots, n;
};

int mrcd_linger_init(struct mrcd_linger_table *t, unsigned slots);
void mrcd_linger_fini(struct mrcd_linger_table *t);

/*
 * Takes over e->conn (closed with mrc_conn_close) at the slot of e->qpn. A QP destroyed in
 * the same slot earlier and still lingering there is freed: QP slots are handed out next-fit
 * and a lingering one last, so its successor came only when every other slot was taken
 * (SPEC R-272 lets room for a later-destroyed QP end a lingering one).
 */
void mrcd_linger_add(struct mrcd_linger_table *t, unsigned slot, const struct mrcd_lingering *e);

/* The entry lingering for qpn at slot, or NULL. */
struct mrcd_lingering *mrcd_linger_find(struct mrcd_linger_table *t, unsigned slot,
					uint32_t qpn);

/* Frees the i-th entry in use (t->active[i]); the last one takes its place. */
void mrcd_linger_remove_at(struct mrcd_linger_table *t, unsigned i);

#endif /* METAROCE_DAEMON_CORE_LINGER_H */
