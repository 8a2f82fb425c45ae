/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The peer's node as a member of the daemon's cluster (SPEC 14.6), for a daemon that
 * authenticates: its DISCOVER_REPLY carries its public key and the tag under the cluster's
 * key, and each QP's keys and first PSNs come from the two nodes' sessions, as the daemon
 * derives them (lib/proto/auth.c).
 */
#ifndef METAROCE_TESTS_COMPLIANCE_AGENTS_PEER_AUTH_H
#define METAROCE_TESTS_COMPLIANCE_AGENTS_PEER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compliance/iut.h"
#include "proto/codec.h"

/* A member of the cluster whose 32-byte key is in path (a key pair of its own drawn); false
 * with errno set. */
bool peer_auth_open(const char *path);
bool peer_auth_on(void);

/* The daemon's DISCOVER (ask) learnt from; the reply at buf (len bytes encoded with
 * MRC_F_AUTH, room for the trailer behind) sealed: its new length. */
size_t peer_auth_seal_reply(const struct mrc_packet *ask, const uint8_t iut_addr[16],
			    uint8_t *buf, size_t len);

/* A QP between the agent's node (peer_node, QP c->peer_qpn) and the daemon's (iut_node, QP
 * c->qpn): its two keys and first PSNs into c, with the cluster key and the daemon's public
 * key; false when the daemon has not yet shown its key. */
bool peer_auth_qp(struct iut_config *c, uint64_t peer_node, uint64_t iut_node);
/* A script that plays the peer's node itself: the cluster key, and the daemon's public key
 * its DISCOVER (ask) carries, into c; false without one. */
bool peer_auth_cluster(struct iut_config *c, const struct mrc_packet *ask);

#endif
