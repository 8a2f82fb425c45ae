/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The frames of the xdp backend's AF_XDP sockets (afxdp.c), parsed and built without I/O:
 * Ethernet, IPv4 (its header checksum checked, since nothing in the kernel checks a
 * redirected frame) or IPv6, then UDP. Received: the datagram's bytes, source address and
 * port, ECN CE. Sent: ECT(0), DF, the UDP checksum filled. Headers are copied out and in,
 * never cast in place: the IP header sits 14 bytes into a frame.
 */
#ifndef METAROCE_DAEMON_FRAME_H
#define METAROCE_DAEMON_FRAME_H

#include <stdbool.h>
#include <stdint.h>

struct mrcd_dgram;

/* What a plane's frames leave with. */
struct mrcd_frame_origin {
	uint8_t family;		/* MRC_AF_INET or MRC_AF_INET6 */
	uint8_t mac[6];		/* the interface's own */
	uint8_t addr[16];	/* the plane's address (IPv4-mapped for IPv4) */
	uint16_t ip_id;		/* the next IPv4 identification */
};

/* The datagram in a received frame of len bytes, arrived on plane; false if the frame is not
 * Ethernet, IPv4 with a right header checksum or IPv6, then UDP within the frame and whose
 * payload fits g->cap. */
bool mrcd_frame_parse(const uint8_t *f, uint32_t len, uint8_t plane, struct mrcd_dgram *g);

/* Writes the frame for g, from o to the next hop's MAC, at f (room for the headers and
 * mrcd_dgram_tx_len(g) bytes); returns its length. */
uint32_t mrcd_frame_build(struct mrcd_frame_origin *o, const uint8_t next_hop[6],
			  const struct mrcd_dgram *g, uint8_t *f);

#endif
