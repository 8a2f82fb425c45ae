/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Link impairment for the testbed, in place of netem (which this kernel lacks): random and
 * burst (Gilbert-Elliott) loss, ECN CE marking from a virtual queue, payload corruption,
 * duplication and blackholing, on the tc egress hook of a router port. Only IPv4/IPv6 packets
 * carrying TCP or UDP are impaired; ARP, neighbour discovery and ICMP always pass, so the
 * fabric's own control traffic keeps working whatever a test does to the data.
 *
 * Settings live in a map the testbed tool rewrites while traffic runs (impair.h).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <stddef.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "impair.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);	/* ifindex; 0: every port */
	__type(value, struct impair_config);
} impair_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);	/* ifindex */
	__type(value, struct impair_port);
} impair_ports SEC(".maps");

static __always_inline int chance(__u32 ppm)
{
	return ppm && bpf_get_prandom_u32() % IMPAIR_PPM < ppm;
}

/* Where the packet's TCP or UDP header starts, its protocol and ECN field; 0 if not IP/L4. */
struct parsed {
	__u32 l3;		/* offset of the IP header */
	__u32 l4;		/* offset of the TCP/UDP header */
	__u8 proto;
	__u8 ipv6;
	__u8 ecn;
};

static __always_inline int parse(struct __sk_buff *skb, struct parsed *p)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return 0;
	p->l3 = sizeof(*eth);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return 0;
		p->proto = ip->protocol;
		p->ecn = ip->tos & 3;
		p->l4 = p->l3 + ip->ihl * 4;
		p->ipv6 = 0;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return 0;
		p->proto = ip6->nexthdr;	/* extension headers: not impaired */
		p->ecn = (bpf_ntohl(*(__u32 *)ip6) >> 20) & 3;
		p->l4 = p->l3 + sizeof(*ip6);
		p->ipv6 = 1;
	} else {
		return 0;
	}
	return p->proto == IPPROTO_UDP || p->proto == IPPROTO_TCP;
}

/* The virtual queue fills with every packet that passes and drains at the link's rate. */
static __always_inline int over_threshold(const struct impair_config *c, struct impair_port *port,
					  __u32 len, __u32 *ppm)
{
	__u64 now = bpf_ktime_get_ns(), drained, q;

	drained = (now - port->vq_time_ns) * (c->ecn_rate_bps / 8) / 1000000000ull;
	q = port->vq_bytes > drained ? port->vq_bytes - drained : 0;
	port->vq_time_ns = now;
	port->vq_bytes = q + len;
	if (port->vq_bytes <= c->ecn_kmin_bytes)
		return 0;
	if (port->vq_bytes >= c->ecn_kmax_bytes || c->ecn_kmax_bytes <= c->ecn_kmin_bytes) {
		*ppm = c->ecn_pmax_ppm;
	} else {
		*ppm = (__u32)((__u64)c->ecn_pmax_ppm * (port->vq_bytes - c->ecn_kmin_bytes) /
			       (c->ecn_kmax_bytes - c->ecn_kmin_bytes));
	}
	return 1;
}

static __always_inline void mark_ce(struct __sk_buff *skb, const struct parsed *p)
{
	__u16 old_word, new_word;
	__u32 first;

	if (!p->ipv6) {
		/* version/IHL and TOS form the first 16-bit word of the checksummed header */
		if (bpf_skb_load_bytes(skb, p->l3, &old_word, 2))
			return;
		new_word = old_word | bpf_htons(3);
		bpf_l3_csum_replace(skb, p->l3 + offsetof(struct iphdr, check), old_word, new_word,
				    2);
		bpf_skb_store_bytes(skb, p->l3, &new_word, 2, 0);
	} else {
		if (bpf_skb_load_bytes(skb, p->l3, &first, 4))
			return;
		first |= bpf_htonl(3 << 20);
		bpf_skb_store_bytes(skb, p->l3, &first, 4, 0);
	}
}

/*
 * One payload bit flipped. An IPv4 UDP datagram also loses its checksum (0: none). Between
 * veth namespaces the kernel's checksum is usually never computed (CHECKSUM_PARTIAL) and is
 * not checked on receipt either, so the damage reaches the receiving transport, whose own
 * integrity check is all that can catch it.
 */
static __always_inline int corrupt(struct __sk_buff *skb, const struct parsed *p)
{
	__u32 hdr = p->proto == IPPROTO_UDP ? sizeof(struct udphdr) : sizeof(struct tcphdr);
	__u32 start = p->l4 + hdr, off;
	__u16 zero = 0;
	__u8 byte;

	if (skb->len <= start)
		return 0;
	off = start + bpf_get_prandom_u32() % (skb->len - start);
	if (off > 0xffff || bpf_skb_load_bytes(skb, off, &byte, 1))
		return 0;
	byte ^= 1 << (bpf_get_prandom_u32() & 7);
	if (bpf_skb_store_bytes(skb, off, &byte, 1, 0))
		return 0;
	if (p->proto == IPPROTO_UDP && !p->ipv6)
		bpf_skb_store_bytes(skb, p->l4 + offsetof(struct udphdr, check), &zero, 2, 0);
	return 1;
}

int impair(struct __sk_buff *skb);	/* the entry point: tc finds it by section and name */

SEC("tc")
int impair(struct __sk_buff *skb)
{
	struct impair_config *c;
	struct impair_port *port, fresh = {};
	struct parsed p = {};
	__u32 key = skb->ifindex, zero = 0, ppm = 0;

	if (skb->mark == IMPAIR_DUP_MARK) {
		skb->mark = 0;	/* our own duplicate, coming round again */
		return TC_ACT_OK;
	}
	c = bpf_map_lookup_elem(&impair_config, &key);
	if (!c)
		c = bpf_map_lookup_elem(&impair_config, &zero);
	if (!c)
		return TC_ACT_OK;
	port = bpf_map_lookup_elem(&impair_ports, &key);
	if (!port) {
		bpf_map_update_elem(&impair_ports, &key, &fresh, BPF_NOEXIST);
		port = bpf_map_lookup_elem(&impair_ports, &key);
		if (!port)
			return TC_ACT_OK;
	}
	if (!parse(skb, &p)) {
		__sync_fetch_and_add(&port->stats.passed_other, 1);
		return TC_ACT_OK;
	}
	__sync_fetch_and_add(&port->stats.packets, 1);
	__sync_fetch_and_add(&port->stats.bytes, skb->len);
	if (c->blackhole) {
		__sync_fetch_and_add(&port->stats.lost_blackhole, 1);
		return TC_ACT_SHOT;
	}
	if (c->burst_enter_ppm) {
		if (port->burst_bad ? chance(c->burst_leave_ppm) : chance(c->burst_enter_ppm))
			port->burst_bad = !port->burst_bad;
		if (port->burst_bad && chance(c->burst_loss_ppm)) {
			__sync_fetch_and_add(&port->stats.lost_burst, 1);
			return TC_ACT_SHOT;
		}
	}
	if (chance(c->loss_ppm)) {
		__sync_fetch_and_add(&port->stats.lost_random, 1);
		return TC_ACT_SHOT;
	}
	if (c->ecn_rate_bps && over_threshold(c, port, skb->len, &ppm) && chance(ppm)) {
		if (p.ecn) {
			mark_ce(skb, &p);
			__sync_fetch_and_add(&port->stats.ce_marked, 1);
		} else {
			__sync_fetch_and_add(&port->stats.over_kmin_not_ect, 1);
		}
	}
	if (chance(c->corrupt_ppm) && corrupt(skb, &p))
		__sync_fetch_and_add(&port->stats.corrupted, 1);
	if (chance(c->duplicate_ppm)) {
		skb->mark = IMPAIR_DUP_MARK;
		if (!bpf_clone_redirect(skb, skb->ifindex, 0))
			__sync_fetch_and_add(&port->stats.duplicated, 1);
		skb->mark = 0;
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
