/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "compliance/agents/ip_headers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* linux/virtio_net.h from Linux 6.2 on */
#endif

#define SEEN 256u
#define PREFIX 32u /* payload bytes compared: the MetaRoCE header, PSN and checksum included */

static struct seen {
	struct in_addr src, dst;
	uint16_t sport, dport, len;
	uint8_t prefix[PREFIX];
	bool df, used;
} seen[SEEN];
static unsigned next_slot;
static int fd = -1;

bool ip_headers_open(void)
{
	int one = 1;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_IP));
	/* a sender's UDP segmentation offload may cross a veth as one packet of many datagrams:
	 * the virtio header says where each begins (raw sockets only: Ethernet frames follow) */
	if (fd >= 0 && setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one))) {
		close(fd);
		fd = -1;
	}
	return fd >= 0;
}

static void record_datagram(const struct iphdr *ip, const struct udphdr *udp,
			    const uint8_t *payload, size_t len)
{
	struct seen *s = &seen[next_slot++ % SEEN];

	s->src.s_addr = ip->saddr;
	s->dst.s_addr = ip->daddr;
	s->sport = ntohs(udp->source);
	s->dport = ntohs(udp->dest);
	s->len = (uint16_t)len;
	memset(s->prefix, 0, sizeof(s->prefix));
	memcpy(s->prefix, payload, len < PREFIX ? len : PREFIX);
	s->df = ntohs(ip->frag_off) & IP_DF;
	s->used = false;
}

/* Every IPv4 UDP datagram the packet socket holds, into the ring. */
static void drain_captures(void)
{
	static uint8_t buf[sizeof(struct virtio_net_hdr) + ETH_HLEN + 65536];
	const size_t before = sizeof(struct virtio_net_hdr) + ETH_HLEN;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_TRUNC)) >= 0) {
		const struct virtio_net_hdr *vnet = (const void *)buf;
		const struct ether_header *eth = (const void *)(buf + sizeof(*vnet));
		const struct iphdr *ip = (const void *)(buf + before);
		const struct udphdr *udp;
		size_t hl, len, seg;

		if ((size_t)n > sizeof(buf) || (size_t)n < before + sizeof(*ip) ||
		    eth->ether_type != htons(ETHERTYPE_IP) || ip->version != 4 ||
		    ip->protocol != IPPROTO_UDP)
			continue;
		hl = (size_t)ip->ihl * 4;
		/* a later fragment has no UDP header: its first fragment is matched (DF clear) */
		if ((size_t)n < before + hl + sizeof(*udp) || (ntohs(ip->frag_off) & IP_OFFMASK))
			continue;
		udp = (const void *)((const uint8_t *)ip + hl);
		len = (size_t)n - before - hl - sizeof(*udp);
		seg = vnet->gso_type == VIRTIO_NET_HDR_GSO_UDP_L4 && vnet->gso_size ? vnet->gso_size
										   : len;
		/* one datagram: the UDP length, not the frame's, which padding may lengthen and a
		 * first fragment shortens (its datagram is matched whole, by its first bytes) */
		if (seg == len && ntohs(udp->len) >= sizeof(*udp) &&
		    (ntohs(udp->len) - sizeof(*udp) < len || (ntohs(ip->frag_off) & IP_MF))) {
			record_datagram(ip, udp, (const uint8_t *)(udp + 1),
					ntohs(udp->len) - sizeof(*udp));
			continue;
		}
		record_datagram(ip, udp, (const uint8_t *)(udp + 1), len < seg ? len : seg);
		for (size_t at = seg; seg && at < len; at += seg)
			record_datagram(ip, udp, (const uint8_t *)(udp + 1) + at,
					len - at < seg ? len - at : seg);
	}
}

int ip_headers_df(struct in_addr src, uint16_t sport, struct in_addr dst, uint16_t dport,
		  const uint8_t *payload, size_t len)
{
	uint8_t prefix[PREFIX] = { 0 };

	if (fd < 0)
		return -1;
	drain_captures();
	memcpy(prefix, payload, len < PREFIX ? len : PREFIX);
	for (unsigned i = 0; i < SEEN; i++) {
		struct seen *s = &seen[(next_slot - 1 - i) % SEEN];

		if (!s->used && s->src.s_addr == src.s_addr && s->dst.s_addr == dst.s_addr &&
		    s->sport == sport && s->dport == dport && s->len == len &&
		    !memcmp(s->prefix, prefix, sizeof(prefix))) {
			s->used = true;
			return s->df;
		}
	}
	return -1;
}
