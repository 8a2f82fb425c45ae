/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The link impairment program's maps, shared by the BPF program (impair.bpf.c), its fixture
 * tests and the testbed tool (which packs the same layout with Python's struct: "<10IQ" for
 * the configuration). Fields are only ever appended.
 *
 * One program instance runs in each router namespace, on the egress of every port. Its
 * configuration is keyed by the port's ifindex; key 0 applies to every port without its own.
 */
#ifndef METAROCE_TESTBED_IMPAIR_H
#define METAROCE_TESTBED_IMPAIR_H

#include <linux/types.h>

#define IMPAIR_PPM	1000000u
#define IMPAIR_DUP_MARK	0x6d726475u	/* skb->mark of a duplicate: passed as it is */

struct impair_config {
	__u32 loss_ppm;		/* random loss, parts per million of packets */
	__u32 burst_enter_ppm;	/* Gilbert-Elliott burst loss: good -> bad, per packet */
	__u32 burst_leave_ppm;	/* bad -> good, per packet */
	__u32 burst_loss_ppm;	/* loss while bad */
	__u32 corrupt_ppm;	/* one payload byte flipped */
	__u32 duplicate_ppm;	/* sent twice */
	__u32 blackhole;	/* nonzero: every impaired packet is dropped */
	__u32 ecn_kmin_bytes;	/* virtual queue above this: CE with rising probability */
	__u32 ecn_kmax_bytes;	/* at and above this: CE with ecn_pmax_ppm */
	__u32 ecn_pmax_ppm;
	__u64 ecn_rate_bps;	/* the virtual queue drains at this rate; 0: no marking */
};

struct impair_stats {
	__u64 packets;		/* IP packets carrying TCP or UDP: the ones impaired */
	__u64 bytes;
	__u64 lost_random;
	__u64 lost_burst;
	__u64 lost_blackhole;
	__u64 corrupted;
	__u64 duplicated;
	__u64 ce_marked;
	__u64 over_kmin_not_ect; /* would have been marked, but the sender is not ECN-capable */
	__u64 passed_other;	 /* ARP, ICMP, anything else: never impaired */
};

/* Per port: what the program keeps between packets, and its counters. */
struct impair_port {
	__u64 vq_bytes;		/* virtual queue backlog */
	__u64 vq_time_ns;	/* when vq_bytes was last drained */
	__u32 burst_bad;	/* Gilbert-Elliott state */
	__u32 reserved;
	struct impair_stats stats;
};

#endif
