/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "auth.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <metaroce/siphash.h>

#include "bytes.h"
#include "checksum.h"
#include "codec.h"

/* Domain separation: no key of one kind is ever the key of another. */
static const char CLUSTER_STATIC[] = "metaroce-v1 cluster static";
static const char KX_STATIC[] = "metaroce-v1 kx static";
static const char SESSION[] = "metaroce-v1 session";
static const char QP[] = "metaroce-v1 qp";
static const char UD[] = "metaroce-v1 ud";
static const char SEAL[] = "metaroce-v1 seal";
static const char UD_SEAL[] = "metaroce-v1 ud seal";

/* BLAKE2b under key of label || m, out_len bytes. */
static void keyed_hash(uint8_t *out, size_t out_len, const uint8_t key[MRC_AUTH_KEY_LEN],
		       const char *label, const uint8_t *m, size_t m_len)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, MRC_AUTH_KEY_LEN, out_len);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label) + 1);
	crypto_generichash_update(&st, m, m_len);
	crypto_generichash_final(&st, out, out_len);
}

static void sip_key_from(struct mrc_auth_key *k, const uint8_t bytes[16])
{
	k->k0 = load_le64(bytes);
	k->k1 = load_le64(bytes + 8);
}

const char *mrc_auth_mode_name(enum mrc_auth_mode mode)
{
	return mode == MRC_AUTH_FULL ? "full" : mode == MRC_AUTH_HEADER ? "header" : "off";
}

int mrc_auth_public_of(const uint8_t secret_key[MRC_AUTH_KEY_LEN],
		       uint8_t public_key[MRC_AUTH_PUBLIC_KEY_LEN])
{
	return crypto_scalarmult_base(public_key, secret_key) ? -EINVAL : 0;
}

int mrc_auth_init(struct mrc_auth *a)
{
	if (a->mode == MRC_AUTH_OFF)
		return 0;
	if ((a->mode != MRC_AUTH_HEADER && a->mode != MRC_AUTH_FULL) ||
	    (!a->has_cluster_key && !a->n_allowed))
		return -EINVAL;
	for (unsigned i = 0; i < a->n_allowed; i++) {
		struct mrc_auth_peer *p = &a->allowed[i];
		int cmp = memcmp(p->public_key, a->public_key, MRC_AUTH_PUBLIC_KEY_LEN);
		int err;

		if (!cmp || p->n_prefixes == 0 || p->n_prefixes > MRC_AUTH_MAX_PREFIXES)
			return -EINVAL;
		for (unsigned k = 0; k < p->n_prefixes; k++)
			if (p->prefixes[k].bits > 128)
				return -EINVAL;
		/* crypto_kx has a client and a server: the smaller public key is the client */
		err = cmp > 0 ? crypto_kx_server_session_keys(p->kx_rx, p->kx_tx, a->public_key,
							      a->secret_key, p->public_key)
			      : crypto_kx_client_session_keys(p->kx_rx, p->kx_tx, a->public_key,
							      a->secret_key, p->public_key);
		if (err)
			return -EKEYREJECTED;
	}
	return 0;
}

/* The static key of what the holder of from_key sends to us (or we send: from_key ours). */
static void cluster_static(const struct mrc_auth *a, const uint8_t *kx,
			   const uint8_t from_key[MRC_AUTH_PUBLIC_KEY_LEN], uint8_t out[32])
{
	if (kx && !a->has_cluster_key) {
		keyed_hash(out, MRC_AUTH_KEY_LEN, kx, KX_STATIC, NULL, 0);
		return;
	}
	/* with kx too, both secrets: the cluster key and the pair's exchange */
	keyed_hash(out, MRC_AUTH_KEY_LEN, a->cluster_key, CLUSTER_STATIC,
		   kx ? kx : from_key, kx ? MRC_AUTH_KEY_LEN : MRC_AUTH_PUBLIC_KEY_LEN);
}

static void keys_with(const struct mrc_auth *a, const struct mrc_auth_peer *allowed,
		      const uint8_t peer_key[MRC_AUTH_PUBLIC_KEY_LEN], struct mrc_peer_keys *k)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->public_key, peer_key, MRC_AUTH_PUBLIC_KEY_LEN);
	cluster_static(a, allowed ? allowed->kx_tx : NULL, a->public_key, k->static_tx);
	cluster_static(a, allowed ? allowed->kx_rx : NULL, peer_key, k->static_rx);
}

static const struct mrc_auth_peer *allowed_peer(const struct mrc_auth *a,
						const uint8_t peer_key[MRC_AUTH_PUBLIC_KEY_LEN])
{
	for (unsigned i = 0; i < a->n_allowed; i++)
		if (!sodium_memcmp(a->allowed[i].public_key, peer_key, MRC_AUTH_PUBLIC_KEY_LEN))
			return &a->allowed[i];
	return NULL;
}

static bool may_claim(const struct mrc_auth_peer *p, const uint8_t addr[16])
{
	for (unsigned i = 0; i < p->n_prefixes; i++)
		if (mrc_addr_in_prefix(addr, p->prefixes[i].addr, p->prefixes[i].bits))
			return true;
	return false;
}

int mrc_auth_static_keys(const struct mrc_auth *a, const uint8_t peer_key[MRC_AUTH_PUBLIC_KEY_LEN],
			 const uint8_t src[16], const struct mrc_discover *announced,
			 struct mrc_peer_keys *k)
{
	const struct mrc_auth_peer *allowed = NULL;

	if (!memcmp(peer_key, a->public_key, MRC_AUTH_PUBLIC_KEY_LEN))
		return -EPERM;
	if (a->n_allowed) {
		allowed = allowed_peer(a, peer_key);
		if (!allowed || !may_claim(allowed, src))
			return -EPERM;
		for (unsigned i = 0; i < announced->n_addrs && i < MRC_MAX_PLANES; i++)
			if (!may_claim(allowed, announced->addrs[i].addr))
				return -EPERM;
	}
	keys_with(a, allowed, peer_key, k);
	return 0;
}

int mrc_auth_keys_for_address(const struct mrc_auth *a, const uint8_t addr[16],
			      struct mrc_peer_keys *k)
{
	static const uint8_t nobody[MRC_AUTH_PUBLIC_KEY_LEN];

	if (!a->n_allowed) {
		keys_with(a, NULL, nobody, k);
		return 0;
	}
	for (unsigned i = 0; i < a->n_allowed; i++)
		if (may_claim(&a->allowed[i], addr)) {
			keys_with(a, &a->allowed[i], a->allowed[i].public_key, k);
			return 0;
		}
	return -EACCES;
}

void mrc_auth_seal_discover(const struct mrc_auth *a, const uint8_t static_tx[MRC_AUTH_KEY_LEN],
			    uint8_t *buf, size_t len)
{
	uint8_t *trailer = buf + len;

	memcpy(trailer, a->public_key, MRC_AUTH_PUBLIC_KEY_LEN);
	crypto_generichash(trailer + MRC_AUTH_PUBLIC_KEY_LEN, MRC_AUTH_DISCOVER_TAG_LEN, buf,
			   len + MRC_AUTH_PUBLIC_KEY_LEN, static_tx, MRC_AUTH_KEY_LEN);
}

const uint8_t *mrc_auth_discover_key(const struct mrc_packet *pkt)
{
	return pkt->auth; /* the public key leads the trailer */
}

bool mrc_auth_discover_ok(const struct mrc_packet *pkt,
			  const uint8_t static_rx[MRC_AUTH_KEY_LEN])
{
	uint8_t tag[MRC_AUTH_DISCOVER_TAG_LEN];
	size_t covered;

	if (!pkt->auth || !pkt->wire)
		return false;
	covered = (size_t)(pkt->auth - pkt->wire) + MRC_AUTH_PUBLIC_KEY_LEN;
	crypto_generichash(tag, sizeof(tag), pkt->wire, covered, static_rx, MRC_AUTH_KEY_LEN);
	return !crypto_verify_16(tag, pkt->auth + MRC_AUTH_PUBLIC_KEY_LEN);
}

static void session(uint8_t out[MRC_AUTH_KEY_LEN], const uint8_t static_key[MRC_AUTH_KEY_LEN],
		    uint64_t from_node, uint64_t to_node)
{
	uint8_t m[16];

	store_be64(m, from_node);
	store_be64(m + 8, to_node);
	keyed_hash(out, MRC_AUTH_KEY_LEN, static_key, SESSION, m, sizeof(m));
}

static void derive_sip(struct mrc_auth_key *out, const uint8_t session_key[MRC_AUTH_KEY_LEN],
		       const char *label, const uint8_t *m, size_t m_len)
{
	uint8_t bytes[16];

	keyed_hash(bytes, sizeof(bytes), session_key, label, m, m_len);
	sip_key_from(out, bytes);
	sodium_memzero(bytes, sizeof(bytes));
}

void mrc_auth_sessions(struct mrc_peer_keys *k, uint64_t local_node, uint64_t peer_node)
{
	session(k->session_tx, k->static_tx, local_node, peer_node);
	session(k->session_rx, k->static_rx, peer_node, local_node);
	mrc_auth_ud_keys(k);
}

void mrc_auth_ud_keys(struct mrc_peer_keys *k)
{
	derive_sip(&k->ud_tx, k->session_tx, UD, NULL, 0);
	derive_sip(&k->ud_rx, k->session_rx, UD, NULL, 0);
	keyed_hash(k->ud_seal_tx.k, sizeof(k->ud_seal_tx.k), k->session_tx, UD_SEAL, NULL, 0);
	keyed_hash(k->ud_seal_rx.k, sizeof(k->ud_seal_rx.k), k->session_rx, UD_SEAL, NULL, 0);
}

void mrc_auth_qp_keys(const struct mrc_peer_keys *k, uint32_t local_qpn, uint32_t remote_qpn,
		      struct mrc_auth_key *tx, struct mrc_auth_key *rx)
{
	uint8_t m[8];

	store_be32(m, local_qpn);
	store_be32(m + 4, remote_qpn);
	derive_sip(tx, k->session_tx, QP, m, sizeof(m));
	store_be32(m, remote_qpn);
	store_be32(m + 4, local_qpn);
	derive_sip(rx, k->session_rx, QP, m, sizeof(m));
}

void mrc_auth_qp_seal_keys(const struct mrc_peer_keys *k, uint32_t local_qpn,
			   uint32_t remote_qpn, struct mrc_seal_key *tx, struct mrc_seal_key *rx)
{
	uint8_t m[8];

	store_be32(m, local_qpn);
	store_be32(m + 4, remote_qpn);
	keyed_hash(tx->k, sizeof(tx->k), k->session_tx, SEAL, m, sizeof(m));
	store_be32(m, remote_qpn);
	store_be32(m + 4, local_qpn);
	keyed_hash(rx->k, sizeof(rx->k), k->session_rx, SEAL, m, sizeof(m));
}

/* The associated data of a sealed packet: its headers as sent, the checksum field zero
 * (the checksum covers the ciphertext, which the tag is computed with). */
#define MAX_AD 96
_Static_assert(MAX_AD % 8 == 0 && MAX_AD >= 24 + 56, "every header fits the associated data");

static bool seal_ad(uint8_t ad[MAX_AD], const uint8_t *hdr, size_t hdr_len)
{
	if (hdr_len > MAX_AD)
		return false;
	memcpy(ad, hdr, hdr_len);
	memset(ad + offsetof(struct mrc_hdr, csum), 0, sizeof(((struct mrc_hdr *)0)->csum));
	return true;
}

void mrc_auth_seal(const struct mrc_seal_key *k, uint64_t counter, uint8_t *pkt, size_t hdr_len,
		   size_t payload_len, uint8_t trailer[sizeof(struct mrc_seal_trailer)])
{
	uint8_t ad[MAX_AD], nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES] = { 0 };
	unsigned long long tag_len;

	if (!seal_ad(ad, pkt, hdr_len))
		abort(); /* no opcode has such headers */
	store_le64(nonce, counter);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(
		pkt + hdr_len, trailer + offsetof(struct mrc_seal_trailer, tag), &tag_len,
		pkt + hdr_len, payload_len, ad, hdr_len, NULL, nonce, k->k);
	memcpy(trailer + offsetof(struct mrc_seal_trailer, counter), nonce, 8);
	memset(pkt + offsetof(struct mrc_hdr, csum), 0, 2);
	store_be16(pkt + offsetof(struct mrc_hdr, csum), mrc_csum_compute(pkt, hdr_len + payload_len));
}

bool mrc_auth_open(const struct mrc_seal_key *k, const struct mrc_packet *pkt, uint8_t *plain)
{
	uint8_t ad[MAX_AD], nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES] = { 0 };
	size_t hdr_len = mrc_header_len(pkt->opcode);

	if (!pkt->auth || !pkt->wire || !(pkt->flags & MRC_F_SEALED) ||
	    !seal_ad(ad, pkt->wire, hdr_len))
		return false;
	memcpy(nonce, pkt->auth + offsetof(struct mrc_seal_trailer, counter), 8);
	return crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		       plain, NULL, pkt->payload, pkt->payload_len,
		       pkt->auth + offsetof(struct mrc_seal_trailer, tag), ad, hdr_len, nonce,
		       k->k) == 0;
}

uint32_t mrc_auth_initial_psn(const struct mrc_auth_key *k)
{
	__u64 label = 0x6e73702d6372 /* "rc-psn" */;

	return (uint32_t)mrc_siphash24(k->k0, k->k1, &label, 1);
}

uint64_t mrc_auth_tag(const struct mrc_auth_key *k, const uint8_t *hdr, size_t hdr_len)
{
	__u64 words[MRC_SIP_MAX_WORDS];
	unsigned n = (unsigned)(hdr_len / 8);

	if (n > MRC_SIP_MAX_WORDS)
		n = MRC_SIP_MAX_WORDS;
	for (unsigned i = 0; i < n; i++)
		words[i] = load_le64(hdr + 8 * i);
	return mrc_siphash24(k->k0, k->k1, words, n);
}

void mrc_auth_put_tag(const struct mrc_auth_key *k, const uint8_t *hdr, size_t hdr_len,
		      uint8_t out[MRC_AUTH_TAG_LEN])
{
	uint64_t t = mrc_auth_tag(k, hdr, hdr_len);

	for (int i = 0; i < MRC_AUTH_TAG_LEN; i++, t >>= 8)
		out[i] = (uint8_t)t;
}

bool mrc_auth_packet_ok(const struct mrc_auth_key *k, const struct mrc_packet *pkt)
{
	if (!pkt->auth || !pkt->wire || (pkt->flags & MRC_F_SEALED))
		return false;
	/* one 64-bit comparison: no early exit that would time a tag byte by byte */
	return mrc_auth_tag(k, pkt->wire, mrc_header_len(pkt->opcode)) == load_le64(pkt->auth);
}
