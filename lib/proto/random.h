/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef METAROCE_PROTO_RANDOM_H
#define METAROCE_PROTO_RANDOM_H

#include <stdint.h>

#include <metaroce/siphash.h>

/*
 * splitmix64: a fast mixer for what needs spread, not secrecy (the simulator's randomness,
 * hashing, expanding a seed). Its outputs betray its state: one whole output, inverted,
 * predicts every later one. Nothing that goes on the wire as an identifier comes from it.
 */
static inline uint64_t mrc_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * The engine's and the daemon's source of identifiers an attacker must not predict (QPNs,
 * key bits, request ids, probe nonces, source ports): the n-th output is
 * SipHash-2-4 of n under a secret 128-bit key, a pseudo-random function, so outputs seen
 * reveal neither the key nor any other output. Deterministic under its key, so a simulated
 * run still replays exactly; the daemon's key comes from getrandom().
 */
struct mrc_prf {
	uint64_t k0, k1;
	uint64_t counter;
};

static inline void mrc_prf_init(struct mrc_prf *p, uint64_t k0, uint64_t k1)
{
	p->k0 = k0;
	p->k1 = k1;
	p->counter = 0;
}

/* A stream keyed by a 64-bit seed (a simulation's, or another stream's output). */
static inline void mrc_prf_seed(struct mrc_prf *p, uint64_t seed)
{
	uint64_t k0 = mrc_splitmix64(&seed);

	mrc_prf_init(p, k0, mrc_splitmix64(&seed));
}

static inline uint64_t mrc_prf_next(struct mrc_prf *p)
{
	__u64 n = p->counter++;

	return mrc_siphash24(p->k0, p->k1, &n, 1);
}

#endif /* METAROCE_PROTO_RANDOM_H */
