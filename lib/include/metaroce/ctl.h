/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The control socket between metaroced and its local clients (metaroce-ctl now, libmetaroce
 * next): a UNIX SOCK_SEQPACKET socket, default /run/metaroce/metaroced.sock, mode 0660. Every
 * message is one packet: a header, then `len` bytes of payload whose layout the type fixes.
 * Requests carry a sequence number the reply repeats. The daemon checks every field of a
 * request before acting; a malformed one gets an error reply and the connection is closed.
 *
 *     +------------------------------------------------------------+
 *     | struct mrc_ctl_hdr (24 bytes) | payload (len bytes)        |
 *     +------------------------------------------------------------+
 */
#ifndef METAROCE_CTL_H
#define METAROCE_CTL_H

#include <linux/types.h>

#define MRC_CTL_MAGIC 0x4d524354u /* "MRCT" */
#define MRC_CTL_VERSION 1
#define MRC_CTL_MAX_MSG 65536

enum mrc_ctl_type {
	MRC_CTL_STATUS = 1,	/* request: no payload; reply: struct mrc_ctl_status */
	MRC_CTL_PEERS = 2,	/* request: no payload; reply: n x struct mrc_ctl_peer */
};

struct mrc_ctl_hdr {
	__u32 magic;   /* MRC_CTL_MAGIC */
	__u16 version; /* MRC_CTL_VERSION */
	__u16 type;    /* enum mrc_ctl_type */
	__u32 len;     /* payload bytes that follow */
	__s32 status;  /* replies: 0 or -errno; requests: 0 */
	__u32 seq;     /* chosen by the client, repeated in the reply */
	__u32 reserved;
};

struct mrc_ctl_plane {
	__u8 index;
	__u8 family;	/* MRC_AF_INET or MRC_AF_INET6 */
	__u16 flags;	/* MRC_PLANE_F_* */
	__u8 addr[16];
	char ifname[16];
};

struct mrc_ctl_status {
	__u64 node_id;
	__u64 uptime_ns;
	__u64 rx_datagrams;
	__u64 rx_malformed;
	__u64 rx_no_qp;
	__u64 tx_datagrams;
	__u32 n_peers;
	__u16 port;
	__u8 n_planes;
	__u8 paths_per_plane;
	char backend[16];	  /* "udp", "xdp" */
	char backend_note[64];	  /* why auto chose it; empty otherwise */
	struct mrc_ctl_plane planes[16];
};

struct mrc_ctl_peer {
	__u64 node_id;
	__u8 named[16];	     /* the address it was first known by */
	__u8 state;	     /* enum mrc_peer_state (lib/proto/peer.h) */
	__u8 n_planes;
	__u16 port;
	__u32 reserved;
	struct mrc_ctl_plane planes[16];
};

_Static_assert(sizeof(struct mrc_ctl_hdr) == 24, "mrc_ctl_hdr is 24 bytes");
_Static_assert(sizeof(struct mrc_ctl_plane) == 36, "mrc_ctl_plane is 36 bytes");
_Static_assert(sizeof(struct mrc_ctl_status) == 712, "mrc_ctl_status is 712 bytes");
_Static_assert(sizeof(struct mrc_ctl_peer) == 608, "mrc_ctl_peer is 608 bytes");

#endif /* METAROCE_CTL_H */
