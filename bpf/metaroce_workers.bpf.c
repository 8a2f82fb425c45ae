/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The udp backend's socket selector, with `workers` > 1: each worker has a receiving socket of
 * its own on every plane, all bound to the MetaRoCE port with SO_REUSEPORT, and this program
 * (attached to the group with SO_ATTACH_REUSEPORT_EBPF) hands each datagram to the worker
 * that runs its QP: the daemon's own QPNs (DISCOVER, rdma_cm) to worker 0, the control
 * thread, any other by its slot, as mrcd_shard_of_qpn (daemon/core/shard.h) says. What is too
 * short to name a QP goes to worker 0 too, which refuses it. What the kernel merged with
 * another QP's datagrams (GRO) may still reach the wrong worker: the daemon hands that over.
 */
#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include <metaroce/wire.h>
#include <metaroce/xdp.h>

#define UDP_HEADER 8
#define MAX_WORKERS 64 /* MRCD_MAX_SHARDS */

const volatile __u32 cfg_workers = 1; /* set before loading */

struct {
	__uint(type, BPF_MAP_TYPE_REUSEPORT_SOCKARRAY);
	__uint(max_entries, MAX_WORKERS);
	__type(key, __u32);
	__type(value, __u64);
} mrc_worker_socks SEC(".maps");

int metaroce_select_worker(struct sk_reuseport_md *md); /* found by section and name */

static __always_inline __u32 worker_of(struct sk_reuseport_md *md)
{
	__be32 qpn_be;
	__u32 qpn;

	if (cfg_workers <= 1 ||
	    bpf_skb_load_bytes(md, UDP_HEADER + __builtin_offsetof(struct mrc_hdr, dst_qpn),
			       &qpn_be, sizeof(qpn_be)))
		return 0;
	qpn = bpf_ntohl(qpn_be);
	if (qpn <= MRC_QPN_CM)
		return 0;
	return MRC_QP_SLOT(qpn) % cfg_workers;
}

SEC("sk_reuseport")
int metaroce_select_worker(struct sk_reuseport_md *md)
{
	__u32 worker = worker_of(md), control = 0;

	/* a worker whose socket is not (or no longer) in the group: the control thread's */
	if (bpf_sk_select_reuseport(md, &mrc_worker_socks, &worker, 0))
		bpf_sk_select_reuseport(md, &mrc_worker_socks, &control, 0);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
