/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The UDP sockets of the peer the daemon's agent plays: one per address, plane and port it
 * sends from or listens at, each reading the ECN field of what it receives.
 */
#ifndef METAROCE_TESTS_COMPLIANCE_AGENTS_PEER_SOCKETS_H
#define METAROCE_TESTS_COMPLIANCE_AGENTS_PEER_SOCKETS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct peer_socket {
	int fd;
	struct in_addr addr;
	uint16_t port;
	uint8_t plane;
};

/* The socket bound at addr:port for a plane (made the first time): its fd, or -errno. */
int peer_socket_for(struct in_addr addr, uint8_t plane, uint16_t port);
/* A datagram from addr:sport on a plane to to:dport, marked CE or else ECT(0) as a sender
 * marks; 0 or -errno. */
int peer_socket_send(struct in_addr from, uint8_t plane, uint16_t sport, struct in_addr to,
		     uint16_t dport, bool ce, const uint8_t *bytes, size_t len);
/* Closes the sockets bound at any of the n addresses; every socket with addrs NULL. */
void peer_sockets_forget(const struct in_addr *addrs, unsigned n);
unsigned peer_sockets_count(void);
const struct peer_socket *peer_socket_at(unsigned i);

static inline bool is_v4_mapped(const uint8_t a[16])
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a, prefix, sizeof(prefix));
}

/* An IPv4 address as the wire and iut.h write it, ::ffff:a.b.c.d. */
static inline void v4_mapped(struct in_addr a, uint8_t out[16])
{
	memset(out, 0, 10);
	memset(out + 10, 0xff, 2);
	memcpy(out + 12, &a, 4);
}

#endif
