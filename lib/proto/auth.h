/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Peer authentication and packet tags (SPEC section 14.6), sans-I/O: keys in, keys and
 * verdicts out. The daemon reads the key files; discovery (peer.h) and the connection engine
 * (conn.h) call these.
 *
 * Only libsodium's pure functions are called here (hashes, X25519, comparisons); the caller
 * initialises it (sodium_init) and draws key pairs, which need the system's randomness.
 *
 * Keys, from the long-lived to the per-packet:
 *
 *   static key pair       X25519, one per daemon, kept in its state directory
 *   static keys (a -> b)  allowed peers: libsodium's crypto_kx between the two static key
 *                         pairs (only a and b can compute them); with a cluster key, also
 *                         keyed by it; cluster key alone: BLAKE2b(cluster key, a's public key)
 *                         DISCOVER and DISCOVER_REPLY carry a BLAKE2b-128 tag under them
 *   session keys (a -> b) BLAKE2b(static key a -> b, both node ids): new at every daemon
 *                         start, as the node ids are
 *   QP key (a -> b)       BLAKE2b-128(session key, both QPNs); UD: BLAKE2b-128(session, "ud")
 *                         every other packet carries a SipHash-2-4 tag under one
 *
 * Every key is directional, so a packet reflected to its sender fails its tag.
 */
#ifndef METAROCE_PROTO_AUTH_H
#define METAROCE_PROTO_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

#define MRC_AUTH_KEY_LEN 32	   /* static, session and cluster keys, secret keys */
#define MRC_AUTH_MAX_PREFIXES 8	   /* address prefixes one allowed peer may announce */

enum mrc_auth_mode {
	MRC_AUTH_OFF = 0,    /* nothing authenticated: a lab only, said loudly */
	MRC_AUTH_HEADER = 1, /* authenticated discovery, every packet's headers tagged */
	MRC_AUTH_FULL = 2,   /* and every packet sealed: payload encrypted, all of it tagged */
};

/* A 128-bit SipHash key: the two little-endian halves of 16 key bytes. */
struct mrc_auth_key {
	uint64_t k0, k1;
};

/* A 256-bit ChaCha20-Poly1305 key: one direction of a QP (or a peer pair's UD) sealed. */
struct mrc_seal_key {
	uint8_t k[MRC_AUTH_KEY_LEN];
};

struct mrc_auth_prefix {
	uint8_t addr[16]; /* IPv6, or IPv4-mapped */
	uint8_t bits;	  /* of the 128 (an IPv4 /24 is 96 + 24) */
};

/* A peer allowed by its public key, and the addresses it may send from and announce. */
struct mrc_auth_peer {
	uint8_t public_key[MRC_AUTH_PUBLIC_KEY_LEN];
	struct mrc_auth_prefix prefixes[MRC_AUTH_MAX_PREFIXES];
	uint8_t n_prefixes;
	/* filled by mrc_auth_init: the crypto_kx keys with it */
	uint8_t kx_tx[MRC_AUTH_KEY_LEN], kx_rx[MRC_AUTH_KEY_LEN];
};

struct mrc_auth {
	enum mrc_auth_mode mode;
	uint8_t public_key[MRC_AUTH_PUBLIC_KEY_LEN];
	uint8_t secret_key[MRC_AUTH_KEY_LEN];
	bool has_cluster_key;
	uint8_t cluster_key[MRC_AUTH_KEY_LEN];
	/* NULL / 0: any holder of the cluster key, from any admitted address */
	struct mrc_auth_peer *allowed;
	unsigned n_allowed;
};

/* What discovery learnt of one peer's keys. */
struct mrc_peer_keys {
	bool bound; /* the peer is known by public_key; nothing else may speak for it */
	uint8_t public_key[MRC_AUTH_PUBLIC_KEY_LEN];
	uint8_t static_tx[MRC_AUTH_KEY_LEN], static_rx[MRC_AUTH_KEY_LEN];
	uint8_t session_tx[MRC_AUTH_KEY_LEN], session_rx[MRC_AUTH_KEY_LEN];
	struct mrc_auth_key ud_tx, ud_rx;
	struct mrc_seal_key ud_seal_tx, ud_seal_rx; /* auth = full's UD keys */
};

/*
 * Checks and completes *a (mode, own key pair, cluster key, allowed peers: the caller's
 * memory, which must outlive it): derives the crypto_kx keys with every allowed peer.
 * Returns 0, -EINVAL (header mode with neither a cluster key nor allowed peers, our own
 * public key among the allowed, a prefix longer than 128 bits) or -EKEYREJECTED (a public
 * key crypto_kx refuses).
 */
int mrc_auth_init(struct mrc_auth *a);

/* The public key of a secret key (a new pair comes from the caller: crypto_kx_keypair). */
int mrc_auth_public_of(const uint8_t secret_key[MRC_AUTH_KEY_LEN],
		       uint8_t public_key[MRC_AUTH_PUBLIC_KEY_LEN]);

/*
 * The static keys with the holder of peer_key, who sends from src and announces addrs, or
 * -EPERM: not allowed (unknown key, or an address outside its prefixes; our own key, which
 * only a reflected packet carries).
 */
int mrc_auth_static_keys(const struct mrc_auth *a, const uint8_t peer_key[MRC_AUTH_PUBLIC_KEY_LEN],
			 const uint8_t src[16], const struct mrc_discover *announced,
			 struct mrc_peer_keys *k);

/*
 * Who answers at an address we ask first: the static keys of the allowed peer whose prefixes
 * hold it (*k not yet bound), with a cluster key alone any peer's; -EACCES when none may.
 */
int mrc_auth_keys_for_address(const struct mrc_auth *a, const uint8_t addr[16],
			      struct mrc_peer_keys *k);

/* Writes the DISCOVER* trailer behind the len bytes encoded at buf (room for it checked). */
void mrc_auth_seal_discover(const struct mrc_auth *a, const uint8_t static_tx[MRC_AUTH_KEY_LEN],
			    uint8_t *buf, size_t len);
/* The public key a decoded DISCOVER* claims (NULL without a trailer). */
const uint8_t *mrc_auth_discover_key(const struct mrc_packet *pkt);
/* Whether a decoded DISCOVER*'s tag is right under static_rx. */
bool mrc_auth_discover_ok(const struct mrc_packet *pkt,
			  const uint8_t static_rx[MRC_AUTH_KEY_LEN]);

/* The session keys with a peer of known node id (both node ids fresh at every start). */
void mrc_auth_sessions(struct mrc_peer_keys *k, uint64_t local_node, uint64_t peer_node);

/* A QP's tag keys: ours from local_qpn to remote_qpn, and the peer's the other way. */
void mrc_auth_qp_keys(const struct mrc_peer_keys *k, uint32_t local_qpn, uint32_t remote_qpn,
		      struct mrc_auth_key *tx, struct mrc_auth_key *rx);

/* A QP's seal keys (auth = full), ours and the peer's, as mrc_auth_qp_keys (a peer pair's
 * UD seal keys come with its sessions). */
void mrc_auth_qp_seal_keys(const struct mrc_peer_keys *k, uint32_t local_qpn,
			   uint32_t remote_qpn, struct mrc_seal_key *tx, struct mrc_seal_key *rx);
/* The UD keys of k, SipHash and seal, from its session keys. */
void mrc_auth_ud_keys(struct mrc_peer_keys *k);

/*
 * Seals the packet at pkt (hdr_len header bytes, then payload_len payload bytes, encoded with
 * MRC_F_AUTH | MRC_F_SEALED) in place: encrypts the payload under k with the nonce
 * `counter` (never twice under one key), recomputes the checksum over the ciphertext and
 * writes the trailer (struct mrc_seal_trailer) into trailer.
 */
void mrc_auth_seal(const struct mrc_seal_key *k, uint64_t counter, uint8_t *pkt, size_t hdr_len,
		   size_t payload_len, uint8_t trailer[sizeof(struct mrc_seal_trailer)]);
/* Whether a decoded sealed packet's tag is right under k, and then its payload, decrypted,
 * in plain (pkt->payload_len bytes; it may not overlap the packet). */
bool mrc_auth_open(const struct mrc_seal_key *k, const struct mrc_packet *pkt, uint8_t *plain);

/* The first PSN of the direction whose packets key k tags: as secret as the key. */
uint32_t mrc_auth_initial_psn(const struct mrc_auth_key *k);

/* The tag of the hdr_len header bytes at hdr (a multiple of 8, at most 80). */
uint64_t mrc_auth_tag(const struct mrc_auth_key *k, const uint8_t *hdr, size_t hdr_len);
/* Writes the 8-byte trailer for the headers at hdr into out. */
void mrc_auth_put_tag(const struct mrc_auth_key *k, const uint8_t *hdr, size_t hdr_len,
		      uint8_t out[MRC_AUTH_TAG_LEN]);
/* Whether a decoded packet (not DISCOVER*) carries the right tag under k. */
bool mrc_auth_packet_ok(const struct mrc_auth_key *k, const struct mrc_packet *pkt);

const char *mrc_auth_mode_name(enum mrc_auth_mode mode);

#endif /* METAROCE_PROTO_AUTH_H */
