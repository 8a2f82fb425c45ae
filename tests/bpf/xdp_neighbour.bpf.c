/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Another XDP program on a plane interface, as an operator's own firewall or counter would
 * be: it counts the MetaRoCE datagrams it sees and passes everything on. test_xdp loads it
 * with xdp-loader ahead of metaroced's program (priority 10 against libxdp's default 50) to
 * show the two share the interface through libxdp's dispatcher.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>

#include <metaroce/wire.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME); /* under xdp-loader's --pin-path, for bpftool */
} neighbour_seen SEC(".maps");

struct {
	__uint(priority, 10);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xdp_neighbour);

int xdp_neighbour(struct xdp_md *ctx);

/* Fragments-aware, as metaroced's program is: libxdp's dispatcher keeps frags only if all do. */
SEC("xdp.frags")
int xdp_neighbour(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u32 zero = 0;
	__u64 *n;

	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(MRC_UDP_PORT_DEFAULT))
		return XDP_PASS;
	n = bpf_map_lookup_elem(&neighbour_seen, &zero);
	if (n)
		(*n)++;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
