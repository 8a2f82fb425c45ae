/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012) of up to two 64-bit words under a 128-bit key:
 * the keyed pseudo-random function behind every identifier an attacker must not predict
 * (QPNs, keys, request ids, probe nonces). It is written here rather than taken from
 * libsodium (crypto_shorthash_siphash24, which the unit tests check it against) because it
 * must also run where no library does: in the XDP program, which will check the same
 * function. Header-only, no libc, the same on every ABI, BPF included.
 */
#ifndef METAROCE_SIPHASH_H
#define METAROCE_SIPHASH_H

#include <linux/types.h>

#define MRC_SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static inline void mrc_sip_round(__u64 v[4])
{
	v[0] += v[1];
	v[1] = MRC_SIP_ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = MRC_SIP_ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = MRC_SIP_ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = MRC_SIP_ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = MRC_SIP_ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = MRC_SIP_ROTL(v[2], 32);
}

static inline void mrc_sip_word(__u64 v[4], __u64 m)
{
	v[3] ^= m;
	mrc_sip_round(v);
	mrc_sip_round(v);
	v[0] ^= m;
}

/* The longest message: a packet's common and largest extension headers, 80 bytes. */
#define MRC_SIP_MAX_WORDS 10

/*
 * SipHash-2-4 of the n_words (at most MRC_SIP_MAX_WORDS) little-endian 64-bit words m (an
 * 8·n_words-byte message) under the key k0 || k1 (each the little-endian reading of 8 key
 * bytes). Identifiers hash one or two words; packet tags the headers' ten at most.
 */
static inline __u64 mrc_siphash24(__u64 k0, __u64 k1, const __u64 *m, unsigned n_words)
{
	__u64 v[4] = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
		       k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull };

	for (unsigned i = 0; i < n_words && i < MRC_SIP_MAX_WORDS; i++)
		mrc_sip_word(v, m[i]);
	mrc_sip_word(v, (__u64)(n_words * 8) << 56);
	v[2] ^= 0xff;
	mrc_sip_round(v);
	mrc_sip_round(v);
	mrc_sip_round(v);
	mrc_sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

#endif /* METAROCE_SIPHASH_H */
