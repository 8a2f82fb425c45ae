/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "frame.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <string.h>

#include "core/dgram.h"
#include "proto/checksum.h"

#define ECN_ECT0 0x02
#define ECN_CE 0x03

bool mrcd_frame_parse(const uint8_t *f, uint32_t len, uint8_t plane, struct mrcd_dgram *g)
{
	struct ethhdr eth;
	struct udphdr udp;
	uint32_t off = sizeof(eth), ulen;
	uint8_t tos;

	if (len < off)
		return false;
	memcpy(&eth, f, sizeof(eth));
	memset(g->peer.addr, 0, 16);
	if (eth.h_proto == htons(ETH_P_IP)) {
		struct iphdr ip;

		if (len < off + sizeof(ip))
			return false;
		memcpy(&ip, f + off, sizeof(ip));
		/* the kernel checks nothing on a redirected frame, and the MetaRoCE checksum does
		 * not cover the addresses a peer is known by */
		if (ip.protocol != IPPROTO_UDP || ip.ihl < 5 || len < off + ip.ihl * 4u ||
		    mrc_csum_fold(mrc_csum_add(0, f + off, ip.ihl * 4u)) != 0xffff)
			return false;
		tos = ip.tos;
		mrc_addr_from_v4(g->peer.addr, &ip.saddr);
		g->peer.family = MRC_AF_INET;
		off += ip.ihl * 4u;
	} else if (eth.h_proto == htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (len < off + sizeof(ip6))
			return false;
		memcpy(&ip6, f + off, sizeof(ip6));
		if (ip6.nexthdr != IPPROTO_UDP)
			return false;
		tos = (uint8_t)((ip6.priority << 4) | (ip6.flow_lbl[0] >> 4));
		memcpy(g->peer.addr, &ip6.saddr, 16);
		g->peer.family = MRC_AF_INET6;
		off += sizeof(ip6);
	} else {
		return false;
	}
	if (len < off + sizeof(udp))
		return false;
	memcpy(&udp, f + off, sizeof(udp));
	ulen = ntohs(udp.len);
	if (ulen < sizeof(udp) || off + ulen > len || ulen - sizeof(udp) > g->cap)
		return false;
	g->len = ulen - (uint32_t)sizeof(udp);
	memcpy(g->data, f + off + sizeof(udp), g->len);
	g->plane = plane;
	g->sport = g->peer_port = ntohs(udp.source);
	g->ce = (tos & ECN_CE) == ECN_CE;
	g->placed = false;
	return true;
}

static uint16_t udp_checksum(const uint8_t *src, const uint8_t *dst, size_t alen,
			     const void *udp, size_t len)
{
	uint8_t pseudo[4] = { 0, IPPROTO_UDP, (uint8_t)(len >> 8), (uint8_t)len };
	uint32_t acc = mrc_csum_add(0, src, alen);
	uint16_t sum;

	acc = mrc_csum_add(acc, dst, alen);
	acc = mrc_csum_add(acc, pseudo, sizeof(pseudo));
	acc = mrc_csum_add(acc, udp, len);
	sum = (uint16_t)~mrc_csum_fold(acc);
	return sum ? sum : 0xffff; /* 0 would mean "no checksum" */
}

/* Headers are built aside and copied in: the IP header sits 14 bytes into the frame. */
uint32_t mrcd_frame_build(struct mrcd_frame_origin *p, const uint8_t next_hop[6],
			  const struct mrcd_dgram *g, uint8_t *f)
{
	struct ethhdr eth;
	struct udphdr udp;
	uint32_t off = sizeof(eth), ulen = (uint32_t)sizeof(udp) + mrcd_dgram_tx_len(g);
	bool v4 = p->family == MRC_AF_INET;

	memcpy(eth.h_dest, next_hop, 6);
	memcpy(eth.h_source, p->mac, 6);
	eth.h_proto = htons(v4 ? ETH_P_IP : ETH_P_IPV6);
	memcpy(f, &eth, sizeof(eth));
	if (v4) {
		struct iphdr ip;

		memset(&ip, 0, sizeof(ip));
		ip.version = 4;
		ip.ihl = 5;
		ip.tos = ECN_ECT0;
		ip.tot_len = htons((uint16_t)(sizeof(ip) + ulen));
		ip.id = htons(p->ip_id++);
		ip.frag_off = htons(0x4000); /* DF */
		ip.ttl = 64;
		ip.protocol = IPPROTO_UDP;
		memcpy(&ip.saddr, p->addr + 12, 4);
		memcpy(&ip.daddr, g->peer.addr + 12, 4);
		ip.check = htons((uint16_t)~mrc_csum_fold(mrc_csum_add(0, &ip, sizeof(ip))));
		memcpy(f + off, &ip, sizeof(ip));
		off += sizeof(ip);
	} else {
		struct ipv6hdr ip6;

		memset(&ip6, 0, sizeof(ip6));
		ip6.version = 6;
		ip6.priority = ECN_ECT0 >> 4;
		ip6.flow_lbl[0] = (uint8_t)((ECN_ECT0 & 0xf) << 4);
		ip6.payload_len = htons((uint16_t)ulen);
		ip6.nexthdr = IPPROTO_UDP;
		ip6.hop_limit = 64;
		memcpy(&ip6.saddr, p->addr, 16);
		memcpy(&ip6.daddr, g->peer.addr, 16);
		memcpy(f + off, &ip6, sizeof(ip6));
		off += sizeof(ip6);
	}
	udp.source = htons(g->sport);
	udp.dest = htons(g->peer_port);
	udp.len = htons((uint16_t)ulen);
	udp.check = 0;
	memcpy(f + off, &udp, sizeof(udp));
	memcpy(f + off + sizeof(udp), g->data, g->len);
	if (g->payload) { /* from the application's memory straight into the frame */
		memcpy(f + off + sizeof(udp) + g->len, g->payload, g->payload_len);
		memcpy(f + off + sizeof(udp) + g->len + g->payload_len, g->trailer,
		       g->trailer_len);
	}
	udp.check = htons(udp_checksum(v4 ? p->addr + 12 : p->addr,
				       v4 ? g->peer.addr + 12 : g->peer.addr, v4 ? 4 : 16,
				       f + off, ulen));
	memcpy(f + off, &udp, sizeof(udp));
	return off + ulen;
}
