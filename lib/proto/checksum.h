/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The MetaRoCE integrity check: the Internet checksum (RFC 1071) over the whole MetaRoCE
 * packet. Chosen because an XDP program can verify it at line rate with
 * bpf_csum_diff() and NICs' generic checksum engines can offload it; docs/SPEC.md explains
 * what it does and does not catch.
 */
#ifndef METAROCE_PROTO_CHECKSUM_H
#define METAROCE_PROTO_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Adds the bytes to a running 32-bit ones'-complement accumulator. Chunks fed one after the
 * other must each start at an even offset of the checksummed data, except the last.
 */
uint32_t mrc_csum_add(uint32_t acc, const void *data, size_t len);

/* Folds the accumulator to 16 bits (not complemented). */
uint16_t mrc_csum_fold(uint32_t acc);

/* The value to store in mrc_hdr.csum (host order) for a packet whose csum field is zero. */
uint16_t mrc_csum_compute(const void *pkt, size_t len);

/* True when the packet, csum field included, checks out. */
int mrc_csum_verify(const void *pkt, size_t len);

#endif /* METAROCE_PROTO_CHECKSUM_H */
