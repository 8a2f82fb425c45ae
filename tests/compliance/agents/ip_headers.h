/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a UDP socket does not tell of a datagram it received: its IP header's Don't Fragment
 * bit (SPEC R-12). A packet socket sees every IPv4 packet that reaches the namespace; each
 * UDP datagram a socket then reads is matched with the header it came under.
 */
#ifndef METAROCE_TESTS_COMPLIANCE_AGENTS_IP_HEADERS_H
#define METAROCE_TESTS_COMPLIANCE_AGENTS_IP_HEADERS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Starts watching; false (errno set) where no packet socket can be had. */
bool ip_headers_open(void);

/*
 * The Don't Fragment bit of the IPv4 packet that carried this UDP payload from src:sport to
 * dst:dport: 1 or 0, or -1 when no such packet was seen.
 */
int ip_headers_df(struct in_addr src, uint16_t sport, struct in_addr dst, uint16_t dport,
		  const uint8_t *payload, size_t len);

#endif
