/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The XDP fast path's maps, shared by the BPF program (bpf/metaroce_xdp.bpf.c), the daemon's
 * xdp backend and the tests. Layouts and codes are only ever appended to.
 *
 *   mrc_qps        ARRAY, mmapable: QP slot (MRC_QP_SLOT(QPN), as the daemon numbers
 *                         QPs) -> struct mrc_xdp_qp: which QP, its peer per plane, the receive
 *                         window (base + the 256-bit SACK ring the program test-and-sets),
 *                         counters. The daemon changes it in place, through its mapping and
 *                         with atomics, never by replacing an element (a replaced hash element
 *                         is recycled while the program may still hold it)
 *   mrc_planes     HASH   ifindex -> struct mrc_xdp_plane: the plane a packet arrived on and
 *                         our address there (a packet for another is the kernel's, where
 *                         the host's firewall applies to it)
 *   mrc_mrs        ARRAY  key slot (MRC_KEY_SLOT(rkey)) -> struct mrc_xdp_mr
 *   mrc_mr_pages   ARRAY_OF_MAPS, same index -> the region's pages: an mmapable ARRAY of
 *                         4096-byte values holding the region from byte `offset` on; the
 *                         daemon and the client map the same pages
 *   mrc_events     ARRAY_OF_MAPS worker -> that worker's RINGBUF: struct mrc_xdp_event per
 *                         packet the program acted on for a QP the worker runs (the QP's
 *                         `worker`), so the engine completes, acknowledges and counts as if
 *                         it had received it; the daemon puts in one ring per worker
 *   mrc_wake       ARRAY, mmapable, worker -> struct mrc_xdp_wake: whether that worker
 *                         sleeps, so the program wakes it only for what an acknowledgement
 *                         cannot wait for (below), and how often it did
 *   mrc_outcomes   PERCPU_ARRAY enum mrc_xdp_outcome -> packets
 *   mrc_xsks       XSKMAP plane * MRC_XDP_MAX_QUEUES + rx queue -> the AF_XDP socket that
 *                         takes whatever goes to the daemon (none: it passes up instead)
 *
 * Ownership of the window: the program only sets ring bits of PSNs in [base, base + 256);
 * only the daemon moves base, writing the new base before it clears the bits it passed. A
 * packet that raced with the move re-reads base after setting its bit and, if the window
 * has passed it, clears the bit again (at worst a retransmission, never a false SACK).
 *
 * Known limit: the payload is copied before its PSN is claimed, so two copies of one packet
 * arriving together on two CPUs both copy the same bytes (harmless), and a late duplicate
 * that passed the ring check just before the original was claimed, completed and its buffer
 * reused by the application could still be copying then. The window is one packet's copy
 * time; closing it needs a per-PSN in-flight claim before the copy. A second limit of the
 * same kind: the daemon clears a passed PSN's bit after it moved base, so a packet 256 PSNs
 * later that set the same bit in between loses it, and a late duplicate of that packet would
 * be placed again (the engine still counts it once).
 *
 * Waking the daemon: an event is submitted without a wakeup (the QP's worker reads its ring
 * every turn while it is awake), unless that worker said it sleeps (mrc_xdp_wake.asleep) and the
 * packet is one the engine acknowledges at once: ACK_REQ (the last of a message, or
 * one that filled the sender's window ), CE-marked, a duplicate, one that opens a gap
 * or fills the gap at the window's base, or every cfg_wake_every-th placed packet of its QP
 * (the engine's ACK coalescing count). The wakeup takes `asleep` back to 0 with a
 * compare-and-swap, so a burst wakes a sleeping daemon once, not once per urgent packet
 * (each wakeup is an interrupt). The program counts the packet (a locked
 * add, a full barrier) after reserving its event and before reading `asleep`; the daemon
 * sets `asleep`, fences, then looks at the ring's producer position once more before it
 * sleeps: one of the two always sees the other's write.
 *
 * READ responses are placed only for a READ (an atomic's answer is one of 8 bytes) the daemon
 * wrote into the QP's reads[] (slot msn % MRC_XDP_MAX_READS): one with one scatter element (the
 * program places contiguously), written once its request has gone (so a response can be owed)
 * and its slot is free, in posting order, a held slot holding back the READs after it until it
 * frees. A response is placed when it names that READ's msn, sink key and length, at its sink's
 * address plus msg_off: the engine's own check; anything else goes to the daemon, whose
 * engine places it (a READ that scatters, or that waits for its slot) or refuses it.
 * The daemon clears a READ's entry (its length) once the engine has completed it, before the
 * application can hear so (in the completion callback, and every turn for an unsignaled one): a
 * run that read the entry before has at most its own copy left to finish. A new entry is
 * written under the entry's sequence lock, and a run that saw it change, or odd, leaves the
 * packet to the daemon. (The program relies on its loads staying in order, as x86 keeps them;
 * on a weakly ordered CPU these reads, and the key and QP number checks below, need BPF's
 * load-acquire, newer than Debian 12's clang.)
 *
 * Regions: an ARRAY element is rewritten in place, not atomically, so the daemon clears a
 * slot's key first, then sets its page map and fields, and writes the key last: a program
 * reading a half-written slot finds no key that matches.
 *
 * Deregistration waits for the program runs in flight: the daemon clears the slot's
 * key, then deletes its page map from mrc_mr_pages, an ARRAY_OF_MAPS, whose update and delete
 * from user space return only after an RCU grace period (the kernel's
 * maybe_wait_bpf_programs), so a run that read the old key has finished its copy before the
 * client hears that the region is gone and may reuse its pages; a run that starts later finds
 * neither key nor pages.
 */
#ifndef METAROCE_XDP_H
#define METAROCE_XDP_H

#include <linux/types.h>

#include <metaroce/wire.h>

#define MRC_XDP_PAGE 4096u
/*
 * How the daemon numbers regions and QPs, which the program indexes its maps by: the one
 * definition both sides use. A key is the region's slot in the high bits over random bits
 * a QPN's slot is its low bits, a generation above them.
 */
#define MRC_XDP_KEY_SLOT_SHIFT 18
#define MRC_XDP_MAX_MRS 16384u
#define MRC_XDP_MAX_QPS 4096u
#define MRC_KEY_SLOT(key) ((key) >> MRC_XDP_KEY_SLOT_SHIFT)
#define MRC_KEY_RANDOM_MASK ((1u << MRC_XDP_KEY_SLOT_SHIFT) - 1)
#define MRC_QP_SLOT(qpn) ((qpn) & (MRC_XDP_MAX_QPS - 1))
_Static_assert(MRC_XDP_MAX_MRS <= 1u << (32 - MRC_XDP_KEY_SLOT_SHIFT), "region slots fit a key");
_Static_assert((MRC_XDP_MAX_QPS & (MRC_XDP_MAX_QPS - 1)) == 0, "a QPN's slot is its low bits");
#define MRC_XDP_MAX_QUEUES 64u	/* receive queues per plane interface with an AF_XDP socket */
#define MRC_XDP_MAX_WORKERS 64u /* daemon worker threads, each with an event ring of its own */
/* A worker's event ring: some 85,000 packets' events while the worker is busy elsewhere. */
#define MRC_XDP_EVENT_RING_BYTES (1u << 22)
/* A packet's payload spans at most this many pages of a region (9000-byte MTU, unaligned). */
#define MRC_XDP_MAX_PAGES_PER_PACKET 4

struct mrc_xdp_plane {
	__u32 index;	/* the plane */
	__u32 reserved;
	__u8 addr[16];	/* this host's address on it, IPv4-mapped for IPv4 */
};

/* struct mrc_xdp_qp.flags */
#define MRC_XDP_QP_PLACE 0x1u	   /* WRITE payloads are placed here */
#define MRC_XDP_QP_PLACE_READ 0x2u /* and READ_RESP payloads of the READs in reads[] */
#define MRC_XDP_QP_AUTH 0x4u	   /* every packet carries a tag under auth_k0/k1 (SPEC 14.6):
				    * one without, or with a wrong one, is dropped */

#define MRC_XDP_MAX_READS 16u /* READs of a QP the program can answer at once (a power of 2) */

/* A READ the QP sent whose responses the program may place (see above). */
struct mrc_xdp_read {
	__u32 seq;		/* odd while the daemon rewrites the entry (a sequence lock) */
	__u32 msn;		/* the READ's */
	__u32 key;		/* its sink key: its one scatter element's lkey */
	__u32 len;		/* its length; 0: the slot is free */
	__u64 addr;		/* its sink's first address */
};

struct mrc_xdp_qp {
	__u32 qpn;		/* the QP in this slot; 0: none */
	__u32 base;		/* receive window base (cum_psn); the daemon writes it */
	__u32 flags;		/* MRC_XDP_QP_* */
	__u32 owner;		/* its client and protection domain: their regions only */
	__u64 ring[MRC_SACK_BITS / 64]; /* bit p % 256: PSN p arrived */
	__u64 ce_packets;	/* CE-marked sequenced packets */
	__u64 placed_packets;
	__u64 placed_bytes;
	__u64 duplicates;
	__u32 peer_planes;	/* bit p: the peer speaks to this QP on plane p, from peer[p] */
	__u32 worker;		/* the daemon's worker that runs it: its events, its ring */
	__u8 peer[MRC_MAX_PLANES][16]; /* IPv4-mapped for IPv4 */
	__u64 placed_unwoken;	/* placed packets counted towards the next wakeup (the program's) */
	__u64 auth_k0, auth_k1;	/* MRC_XDP_QP_AUTH: the SipHash key the peer tags with */
	struct mrc_xdp_read reads[MRC_XDP_MAX_READS]; /* the daemon's; by msn % MRC_XDP_MAX_READS */
};

/* A worker's element of mrc_wake: a cache line of its own, apart from the other workers'. */
struct mrc_xdp_wake {
	__u64 asleep;		/* 1 while the worker sleeps (or is about to); the program's
				 * wakeup takes it back to 0 (64 bits: BPF's cmpxchg) */
	__u64 wakeups;		/* the program's: events it submitted with a wakeup */
	__u64 quiet;		/* the program's: events submitted, unwoken, while it slept */
	__u64 pad[5];
};
_Static_assert(sizeof(struct mrc_xdp_wake) == 64, "a worker's wake flag is one cache line");

/* struct mrc_xdp_mr.access */
#define MRC_XDP_ACCESS_REMOTE_WRITE 0x1u /* WRITE may land here */
#define MRC_XDP_ACCESS_LOCAL_WRITE 0x2u	 /* READ responses may land here (a sink) */

struct mrc_xdp_mr {
	__u32 key;		/* the whole rkey/lkey; 0: the slot is free */
	__u32 access;		/* MRC_XDP_ACCESS_* */
	__u32 owner;		/* the client and protection domain that registered it */
	__u32 offset;		/* the region's first byte in its page map (bytes) */
	__u64 addr;		/* the region's first address as the wire names it (iova) */
	__u64 len;
};

/* What the program did with a packet; the counters' index. Codes are never reused. */
enum mrc_xdp_outcome {
	MRC_XDP_NOT_OURS = 0,	    /* not MetaRoCE: passed untouched */
	MRC_XDP_PLACED = 1,	    /* payload in memory, bit set, event sent: dropped here */
	MRC_XDP_TO_DAEMON = 2,	    /* control, SEND, WRITE_IMM, placement off: to the daemon */
	MRC_XDP_DUPLICATE = 3,	    /* in the window, already received: dropped, event sent */
	MRC_XDP_BELOW_WINDOW = 4,   /* received long ago: dropped, event sent (it re-ACKs) */
	MRC_XDP_ABOVE_WINDOW = 5,   /* beyond base + 256: dropped */
	MRC_XDP_BAD_CHECKSUM = 6,   /* integrity check failed: dropped, never placed or SACKed */
	MRC_XDP_TRUNCATED = 7,	    /* shorter than its headers say: dropped */
	MRC_XDP_UNKNOWN_QP = 8,	    /* no such QP here: to the daemon */
	MRC_XDP_BAD_KEY = 9,	    /* key unknown, not the QP owner's, or no access: to the daemon */
	MRC_XDP_OUT_OF_BOUNDS = 10, /* outside its region: to the daemon (which NAKs) */
	MRC_XDP_EVENT_LOST = 11,    /* the event ring was full: to the daemon instead */
	MRC_XDP_BAD_VERSION = 12,   /* another wire version: to the daemon (which counts it) */
	MRC_XDP_PLACE_FAILED = 13,  /* a page of the region was missing: to the daemon */
	MRC_XDP_WRONG_PEER = 14,    /* not from the QP's peer on that plane: to the daemon */
	MRC_XDP_BAD_TAG = 15,	    /* an authenticated QP's packet without its right tag: dropped
				     * before anything in it is believed */
	MRC_XDP_NO_READ = 16,	    /* a READ_RESP of no READ in reads[], or outside its sink:
				     * to the daemon, which places or refuses it */
	MRC_XDP_OUTCOMES
};

#ifndef __bpf__
/* Stable names of the outcomes, for metrics and metaroce-ctl. */
static inline const char *mrc_xdp_outcome_name(unsigned outcome)
{
	static const char *const names[MRC_XDP_OUTCOMES] = {
		"not_ours",	"placed",	"to_daemon",  "duplicate",    "below_window",
		"above_window", "bad_checksum", "truncated",  "unknown_qp",   "bad_key",
		"out_of_bounds", "event_lost",	"bad_version", "place_failed", "wrong_peer",
		"bad_tag",	"no_read",
	};

	return outcome < MRC_XDP_OUTCOMES ? names[outcome] : "unknown";
}
#endif

/* struct mrc_xdp_event.kind */
enum mrc_xdp_event_kind {
	MRC_XDP_EV_PLACED = 1,	  /* payload placed: run the receive logic without copying */
	MRC_XDP_EV_DUPLICATE = 2, /* already had it: acknowledge again */
};

/* MetaRoCE header and data extension, as they arrived (network order). */
#define MRC_XDP_EVENT_HDR (24 + 32)

struct mrc_xdp_event {
	__u32 kind;		/* enum mrc_xdp_event_kind */
	__u32 ifindex;		/* the interface it arrived on: which plane */
	__u8 peer[16];		/* source address, IPv4-mapped for IPv4 */
	__u16 sport;		/* source UDP port (host order) */
	__u8 ce;		/* arrived CE-marked */
	__u8 reserved;
	__u32 reserved2;
	__u8 hdr[MRC_XDP_EVENT_HDR];
};

#endif /* METAROCE_XDP_H */
