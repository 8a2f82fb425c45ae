/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef METAROCE_PROTO_RANDOM_H
#define METAROCE_PROTO_RANDOM_H

#include <stdint.h>

/*
 * splitmix64: the engine's one source of randomness (source ports, probe nonces, request
 * ids) and the simulator's. Deterministic under a seed, so a simulated run replays exactly.
 * It is not a cryptographic generator: its outputs are as hard to guess as its seed, so the
 * daemon seeds it from getrandom() and never with a value that goes on the wire.
 */
static inline uint64_t mrc_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif /* METAROCE_PROTO_RANDOM_H */
