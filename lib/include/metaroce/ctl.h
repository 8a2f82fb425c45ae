/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The control socket between metaroced and its local clients (metaroce-ctl and libmetaroce):
 * a UNIX SOCK_SEQPACKET socket, default /run/metaroce/metaroced.sock, mode 0660. Every
 * message is one packet: a header, then `len` bytes of payload whose layout the type fixes.
 * Requests carry a sequence number the reply repeats. The daemon checks every field of a
 * request before acting: a request it cannot parse (bad magic, version or length) gets an
 * error reply and the connection is closed; a well-formed one it refuses gets the errno.
 * File descriptors travel as SCM_RIGHTS on the same packet (memfds, eventfds).
 *
 * A library client says HELLO first (with its doorbell eventfd) and then owns what it
 * creates: memory regions, CQs and QPs live exactly as long as its connection. When the
 * connection closes (the process exited or was killed), the daemon reclaims all of it.
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
	MRC_CTL_HELLO = 3,	/* request: mrc_ctl_hello + doorbell eventfd; reply: mrc_ctl_status +
				 * the doorbell page's memfd (shm.h) */
	MRC_CTL_REG_MR = 4,	/* request: mrc_ctl_reg_mr, segments + their memfds; reply: mrc_ctl_mr */
	MRC_CTL_DEREG_MR = 5,	/* request: mrc_ctl_handle (the lkey); reply: empty */
	MRC_CTL_CREATE_CQ = 6,	/* request: mrc_ctl_create_cq [+ channel eventfd];
				 * reply: mrc_ctl_cq + CQ ring memfd */
	MRC_CTL_DESTROY_CQ = 7, /* request: mrc_ctl_handle; reply: empty */
	MRC_CTL_CREATE_QP = 8,	/* request: mrc_ctl_create_qp;
				 * reply: mrc_ctl_qp_created + SQ and RQ ring memfds */
	MRC_CTL_CONNECT_QP = 9, /* request: mrc_ctl_connect_qp (the QP reaches RTR); reply: empty */
	MRC_CTL_ERROR_QP = 10,	/* request: mrc_ctl_handle: the QP enters ERR; reply: empty */
	MRC_CTL_DESTROY_QP = 11, /* request: mrc_ctl_handle; reply: empty */
	MRC_CTL_QPS = 12,	/* request: no payload; reply: n x struct mrc_ctl_qp */
	MRC_CTL_PATHS = 13,	/* request: none, or mrc_ctl_handle (one QP); reply: n x mrc_ctl_path */
	MRC_CTL_READY_QP = 14,	/* request: mrc_ctl_ready_qp (the QP reaches RTS); reply: empty */
	MRC_CTL_METRICS = 15,	/* request: no payload; reply: Prometheus text exposition */
	MRC_CTL_DRAIN_PLANE = 16, /* request: mrc_ctl_drain; reply: empty (operator action) */
	MRC_CTL_RELOAD = 17,	/* request: no payload; reply: empty, or -EINVAL (see the log) */
	MRC_CTL_MONITOR = 18,	/* request: no payload; reply: empty, then MRC_CTL_EVENT packets */
	MRC_CTL_EVENT = 19,	/* daemon to a monitor, unrequested (seq 0): one text line */
	MRC_CTL_CONFIG = 20,	/* request: no payload; reply: the running configuration, as a file */
	MRC_CTL_STAT_RESET = 21, /* request: no payload; reply: empty (operator action) */
	MRC_CTL_PAGES = 22,	/* request: mrc_ctl_pages; reply: empty + a page map fd for a
				 * region's pages (the XDP fast path places into them);
				 * -EOPNOTSUPP: none here, use a memfd */
	MRC_CTL_XDP = 23,	/* request: no payload; reply: struct mrc_ctl_xdp; -EOPNOTSUPP: the
				 * udp backend runs */
	MRC_CTL_MODIFY_QP = 24, /* request: mrc_ctl_modify_qp (verbs RTS to RTS); reply: empty */
	MRC_CTL_CREATE_SRQ = 25, /* request: mrc_ctl_create_srq + the context's async event socket;
				  * reply: mrc_ctl_srq + the SRQ ring's memfd */
	MRC_CTL_MODIFY_SRQ = 26, /* request: mrc_ctl_modify_srq (the limit); reply: empty */
	MRC_CTL_DESTROY_SRQ = 27, /* request: mrc_ctl_handle; reply: empty, -EBUSY while QPs use it */
	MRC_CTL_UD_QP = 28,	  /* request: mrc_ctl_ud_qp (a UD QP to RTR or RTS, or a new qkey);
				   * reply: empty */
	MRC_CTL_RESOLVE = 29,	  /* request: mrc_ctl_resolve (ibv_create_ah): discovery of the
				   * address begins; reply: empty, -EHOSTUNREACH if not a peer */
	MRC_CTL_ALLOC_MW = 30,	  /* request: mrc_ctl_alloc_mw; reply: mrc_ctl_mw (unbound) */
	MRC_CTL_DEALLOC_MW = 31,  /* request: mrc_ctl_handle (any key the window had); reply:
				   * empty */
	MRC_CTL_USERS = 32,	  /* request: no payload; reply: n x struct mrc_ctl_user (the
				   * caller's own uid only, unless an operator asks) */
	MRC_CTL_REFUSED = 33,	  /* daemon to a client it will not serve, unrequested (seq 0),
				   * then it closes the connection: the status says why (-EUSERS:
				   * the user holds user_max_connections; -ENOSPC: no slot left;
				   * -EMFILE: the daemon is out of file descriptors) */
	MRC_CTL_CM = 34,	  /* request: struct mrc_ctl_cm (metaroce/cm.h) [+ a channel's
				   * socket]; reply: struct mrc_ctl_cm_reply */
	MRC_CTL_CM_IDS = 35,	  /* request: no payload; reply: n x struct mrc_ctl_cm_id (the
				   * caller's own, unless an operator asks) */
	MRC_CTL_WORKERS = 36,	  /* request: no payload; reply: n x struct mrc_ctl_worker, one
				   * per worker thread (worker 0: the control thread) */
	MRC_CTL_TYPE_MAX = MRC_CTL_WORKERS,
};

/* The shared-memory and request layout this library speaks (bumped on any change; 2: the
 * ready request carries verbs' timeout, which a library of 1 left zero, "infinite"; 3: the
 * HELLO reply carries the doorbell page, the work queues' need-wakeup flag; 4: a CQ's arm
 * may carry MRC_CQ_ARM_SPINNING, which a daemon of 3 would fire on as an ARM_NEXT; 5: regions
 * and QPs carry their protection domain; 6: send queue entries carry atomic operands; 7: shared
 * receive queues, a QP names its SRQ; 8: UD QPs, completions carry src_qp, send entries the
 * UD destination; 9: memory windows, SEND with invalidate, UD completions carry sl; 10:
 * rdma_cm, MRC_CTL_CM and event channels). */
#define MRC_CTL_CLIENT_ABI 10

struct mrc_ctl_hello {
	__u32 abi; /* MRC_CTL_CLIENT_ABI */
	__u32 reserved;
};

/* What one client connection may hold (the daemon refuses more with -ENOSPC); the library
 * reports them as the device's limits. */
#define MRC_CTL_CLIENT_MAX_QPS 2048u
#define MRC_CTL_CLIENT_MAX_CQS 2048u
#define MRC_CTL_CLIENT_MAX_MRS 8192u /* regions and memory windows together: one key table */
#define MRC_CTL_CLIENT_MAX_SRQS 512u
#define MRC_CTL_MAX_RING_ENTRIES 16384u /* per SQ, RQ or CQ */
#define MRC_CTL_MAX_RD_ATOMIC 16u /* READs outstanding per QP, each way */
#define MRC_CTL_MAX_PD 0xfffffu /* protection domains per client: the XDP owner token's room */

/* Access a memory region grants, as IBV_ACCESS_* (same bit values). */
#define MRC_CTL_ACCESS_LOCAL_WRITE 0x1u
#define MRC_CTL_ACCESS_REMOTE_WRITE 0x2u
#define MRC_CTL_ACCESS_REMOTE_READ 0x4u
#define MRC_CTL_ACCESS_REMOTE_ATOMIC 0x8u
#define MRC_CTL_ACCESS_MW_BIND 0x10u	 /* a region: memory windows may be bound to it */
#define MRC_CTL_ACCESS_ALL 0x1fu
#define MRC_CTL_ACCESS_ZERO_BASED 0x20u /* a type 2 window's bind: addresses from its start */

/*
 * A region is backed by one or more memfd segments that lie back to back in the client's
 * address space (pages the client already shares for another region are not shared twice).
 * The request carries n_segments records and as many memfds, in order; the region starts
 * `offset` bytes into the first segment.
 */
#define MRC_CTL_MAX_SEGMENTS 64

struct mrc_ctl_reg_mr {
	__u64 iova;	  /* the address peers and work requests name the region by */
	__u64 length;	  /* bytes, > 0 */
	__u64 offset;	  /* where iova's byte 0 sits in the segments laid end to end */
	__u32 access;	  /* MRC_CTL_ACCESS_* */
	__u32 n_segments; /* 1..MRC_CTL_MAX_SEGMENTS */
	__u32 pd;	  /* the protection domain, 1..MRC_CTL_MAX_PD: only its QPs reach it */
	__u32 reserved;	  /* 0 */
};

struct mrc_ctl_mr_segment {
	__u64 fd_offset; /* where the segment starts in its memfd (page aligned) */
	__u64 length;	 /* bytes (a whole number of pages) */
};

struct mrc_ctl_mr {
	__u32 lkey;
	__u32 rkey;
};

/*
 * A memory window [SPEC 4.9]. Its key is the table slot in the high bits, random bits, and a
 * low byte that each bind may change (ibv_inc_rkey); binding and invalidating go through a
 * QP's send queue (MRC_SQ_BIND_MW, MRC_SQ_LOCAL_INV).
 */
enum mrc_ctl_mw_type {
	MRC_CTL_MW_TYPE_1 = 1, /* bound by ibv_bind_mw; any QP of its PD uses it */
	MRC_CTL_MW_TYPE_2 = 2, /* bound by IBV_WR_BIND_MW; only that QP uses it (type 2B) */
};

#define MRC_CTL_MW_KEY_TAG 0xffu /* the key bits a bind may change */

struct mrc_ctl_alloc_mw {
	__u32 pd;   /* its protection domain */
	__u8 type;  /* enum mrc_ctl_mw_type */
	__u8 reserved[3];
};

struct mrc_ctl_mw {
	__u32 rkey;
	__u32 reserved;
};

/* Take a plane out of service (drained = 1) or back: no new packets there, in flight
 * completes, peers are told [SPEC R-87]. */
struct mrc_ctl_drain {
	__u8 plane;
	__u8 drained;
	__u8 reserved[6];
};

struct mrc_ctl_pages {
	__u64 length; /* bytes, a multiple of 4096 */
};

/* The XDP fast path: where it is attached and what it did with packets. */
struct mrc_ctl_xdp {
	__u32 n_ifaces;
	__u32 n_outcomes;	/* entries of outcomes[] the daemon knows (enum mrc_xdp_outcome) */
	struct {
		__u32 ifindex;
		__u8 plane;
		__u8 native;	/* 1: driver mode; 0: generic (skb) mode */
		__u8 shared;	/* 1: behind libxdp's dispatcher, other programs may run there;
				   0: attached alone */
		__u8 reserved;
	} ifaces[16];
	__u64 outcomes[32];	/* packets per outcome code, summed over CPUs */
	__u32 xsk_sockets;	/* AF_XDP sockets (0: the program passes up to UDP sockets) */
	__u32 reserved;
	__u64 xsk_rx;		/* datagrams received through them */
	__u64 xsk_tx;		/* frames sent through them */
	__u64 xsk_tx_unresolved; /* sent by UDP socket instead: next hop not resolved yet */
	__u64 xsk_rx_bad;	/* frames that were not UDP datagrams */
};

struct mrc_ctl_handle {
	__u32 handle; /* an lkey, CQ handle or QP number */
	__u32 reserved;
};

struct mrc_ctl_create_cq {
	__u32 entries; /* at least this many; rounded up to a power of two */
	__u32 reserved;
};

struct mrc_ctl_cq {
	__u32 handle;
	__u32 entries;
};

struct mrc_ctl_create_qp {
	__u32 send_cq;	   /* CQ handles */
	__u32 recv_cq;
	__u32 max_send_wr; /* at least this many; rounded up to a power of two */
	__u32 max_recv_wr;
	__u32 sq_sig_all;  /* 0 or 1 */
	__u32 pd;	   /* the protection domain, 1..MRC_CTL_MAX_PD (as the library numbers
			    * them in the client): the regions this QP reaches [SPEC R-27] */
	__u32 srq;	   /* 0, or the handle of the SRQ its receives come from */
	__u32 type;	   /* enum mrc_ctl_qp_type */
};

enum mrc_ctl_qp_type {
	MRC_CTL_QPT_RC = 0, /* connected: MRC_CTL_CONNECT_QP, READY_QP, MODIFY_QP */
	MRC_CTL_QPT_UD = 1, /* datagrams [SPEC 4.8]: MRC_CTL_UD_QP */
};

/* A UD QP's states: RTR receives, RTS sends too; the same state again changes the qkey. */
struct mrc_ctl_ud_qp {
	__u32 qp_num;
	__u32 qkey;
	__u32 sq_psn;	 /* RTS: the first datagram's psn [SPEC R-327] */
	__u8 state;	 /* MRC_CTL_QP_RTR or MRC_CTL_QP_RTS */
	__u8 reserved[3];
};

/* ibv_create_ah: the address the application will send datagrams to. */
struct mrc_ctl_resolve {
	__u8 dgid[16];	/* IPv4-mapped for IPv4 */
};

/*
 * A shared receive queue: a receive ring the client produces into (struct mrc_rq_entry) and
 * the daemon reads when a message arrives at one of its QPs and needs a receive. When fewer
 * than `limit` entries remain (limit > 0), the daemon sets MRC_SRQ_AUX_LIMIT in the ring's
 * consumer aux word, writes a byte to the async event socket and disarms the limit.
 */
struct mrc_ctl_create_srq {
	__u32 max_wr;	/* at least this many; rounded up to a power of two */
	__u32 pd;	/* the protection domain its receive buffers' lkeys belong to */
	__u32 limit;	/* 0: disarmed */
	__u32 reserved; /* 0 */
};

struct mrc_ctl_srq {
	__u32 handle;
	__u32 entries;
};

struct mrc_ctl_modify_srq {
	__u32 handle;
	__u32 limit; /* arms the limit event (0: disarms) */
};

struct mrc_ctl_qp_created {
	__u32 qp_num;
	__u32 sq_entries;
	__u32 rq_entries;
	__u32 doorbell_bit; /* the QP's bit in the client's doorbell page (shm.h) */
};

/*
 * What RTR settled, sent when the QP reaches RTR: from then on it receives, acknowledges and
 * answers READs (SPEC R-74). Verbs' PSNs are not here: the wire's come from node ids and QPNs
 * (R-116).
 */
struct mrc_ctl_connect_qp {
	__u32 qp_num;
	__u32 dest_qp_num;
	__u8 dgid[16];		 /* the peer's address, IPv4-mapped for IPv4 */
	__u32 access;		 /* MRC_CTL_ACCESS_REMOTE_*: what the peer may do here */
	__u16 path_mtu;		 /* bytes (256..4096), a payload cap; 0: none */
	__u16 plane_mask;	 /* 0: every shared plane; else bit i = plane i */
	__u8 min_rnr_timer;	 /* IB encoding 0..31 */
	__u8 max_dest_rd_atomic; /* READs the peer may have outstanding here, >= 1 */
	__u8 paths_per_plane;	 /* 0: the daemon's; else 1..16 (metaroce_qp_set_paths) */
	__u8 reserved;
};

/* What RTS adds: the send half. */
struct mrc_ctl_ready_qp {
	__u32 qp_num;
	__u8 retry_cnt;	    /* 0..7 */
	__u8 rnr_retry;	    /* 0..7; 7 = unlimited */
	__u8 max_rd_atomic; /* >= 1 */
	__u8 timeout;	    /* verbs timeout, 0..31: the retry clock is 4.096 us << timeout, 0 never
			       runs out */
};

/* What verbs lets a QP at RTS change (RTS to RTS): every field is applied. */
struct mrc_ctl_modify_qp {
	__u32 qp_num;
	__u32 access;	    /* MRC_CTL_ACCESS_REMOTE_*: what the peer may do here */
	__u8 retry_cnt;	    /* 0..7 */
	__u8 rnr_retry;	    /* 0..7; 7 = unlimited */
	__u8 timeout;	    /* verbs timeout, 0..31 */
	__u8 min_rnr_timer; /* IB encoding 0..31 */
	__u32 reserved;	    /* 0 */
};

enum mrc_ctl_qp_state {
	MRC_CTL_QP_IDLE = 0,	  /* created, not connected (verbs RESET, INIT) */
	MRC_CTL_QP_RESOLVING = 1, /* connected, waiting for the peer's planes */
	MRC_CTL_QP_RTR = 2,	  /* receives and acknowledges */
	MRC_CTL_QP_RTS = 3,	  /* and sends */
	MRC_CTL_QP_ERR = 4,
};

struct mrc_ctl_qp {
	__u32 qp_num;
	__u32 dest_qp_num;
	__s32 pid;	/* the client process */
	__u32 uid;
	__u8 state;	/* enum mrc_ctl_qp_state */
	__u8 n_paths;
	__u16 worker;	/* the daemon's worker thread that runs it (workers = N) */
	__u8 peer[16];
	__u64 tx_packets;
	__u64 tx_retransmits;
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 completions;
	__u64 error_completions;
};

/* Path states: the engine's enum mrc_path_state, whose values the daemon ties to these. */
enum mrc_ctl_path_state {
	MRC_CTL_PATH_UP = 0,
	MRC_CTL_PATH_FAILED = 1,
	MRC_CTL_PATH_DRAINED = 2,
	MRC_CTL_PATH_PROBING = 3,
	MRC_CTL_PATH_STATES
};

/* What metaroce-ctl, the metrics and the monitor events call them. */
static inline const char *mrc_ctl_path_state_name(unsigned state)
{
	static const char *const names[MRC_CTL_PATH_STATES] = { "up", "failed", "drained",
								"probing" };

	return state < MRC_CTL_PATH_STATES ? names[state] : "unknown";
}

struct mrc_ctl_path {
	__u32 qp_num;
	__u8 index;
	__u8 plane;
	__u16 sport;
	__u8 state;	    /* enum mrc_ctl_path_state */
	__u8 congested;	    /* 1: its window was cut for ECN within the last RTT */
	__u8 reserved[2];
	__u32 cwnd;	    /* packets */
	__u32 inflight;	    /* packets */
	__u64 srtt_ns;
	__u64 tx_packets;
	__u64 retransmits;
	__u64 ce_marks;
	__u32 rate_hint_kbps; /* the QP's latest rate hint from the receiver; 0: none */
	__u32 min_rtt_us;     /* smallest RTT sample: the path's propagation delay */
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
	__u32 n_clients;	  /* library clients connected */
	__u32 n_qps;
	__u32 n_cqs;
	__u32 n_mrs;
	__u64 mapped_bytes;	  /* client memory the daemon has mapped (MRs and rings) */
	__u16 max_payload;
	__u16 drained_planes;	  /* bit i: plane i drained by an operator */
	__u16 reserved[2];
	char backend[16];	  /* "udp", "xdp" */
	char backend_note[64];	  /* why auto chose it; empty otherwise */
	struct mrc_ctl_plane planes[16];
	__u8 auth;		  /* enum mrc_ctl_auth */
	__u8 cluster_key;	  /* 1: peers holding the cluster key are trusted */
	__u16 allowed_peers;	  /* peers trusted by their public key */
	__u32 reserved2;
	__u8 public_key[32];	  /* this daemon's (auth header), what allowed_peer names */
};

/* struct mrc_ctl_status.auth: whether packets are authenticated (SPEC 14.6). */
enum mrc_ctl_auth {
	MRC_CTL_AUTH_OFF = 0,
	MRC_CTL_AUTH_HEADER = 1,
	MRC_CTL_AUTH_FULL = 2, /* and every packet sealed (payload encrypted) */
};

/* A worker thread's share of the QPs and what running them cost [MRC_CTL_WORKERS]. */
struct mrc_ctl_worker {
	__u32 qps;	  /* QPs it runs */
	__u32 cpu;	  /* the CPU it is pinned to (cpus = LIST); 0xffffffff: not pinned */
	__u64 busy_turns; /* turns of its loop that found QPs with work */
	__u64 qp_visits;
	__u64 cpu_ns;	  /* CPU time its thread used */
	__u64 handovers;  /* datagrams its sockets took for another worker's QP, passed on */
};

/* What a user (uid) holds over all its connections, against its limits [MRC_CTL_USERS]. */
enum mrc_ctl_user_resource {
	MRC_CTL_USER_CONNECTIONS = 0,
	MRC_CTL_USER_QPS = 1,
	MRC_CTL_USER_CQS = 2,
	MRC_CTL_USER_MRS = 3,	     /* memory regions and windows */
	MRC_CTL_USER_SRQS = 4,
	MRC_CTL_USER_REGISTERED = 5, /* bytes of memory regions */
	MRC_CTL_USER_PAGE_MAPS = 6,  /* bytes of XDP page maps */
	MRC_CTL_USER_RESOURCES
};

struct mrc_ctl_user {
	__u32 uid;
	__u8 limited; /* 0: root or the daemon's own user, whom no limit applies to */
	__u8 reserved[3];
	__u64 used[8];	/* by enum mrc_ctl_user_resource; the last is reserved */
	__u64 limit[8];
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
_Static_assert(sizeof(struct mrc_ctl_status) == 784, "mrc_ctl_status is 784 bytes");
_Static_assert(sizeof(struct mrc_ctl_peer) == 608, "mrc_ctl_peer is 608 bytes");
_Static_assert(sizeof(struct mrc_ctl_user) == 136, "mrc_ctl_user is 136 bytes");
_Static_assert(sizeof(struct mrc_ctl_worker) == 40, "mrc_ctl_worker is 40 bytes");
_Static_assert(MRC_CTL_USER_RESOURCES <= 8, "a user's resources fit its reply");

_Static_assert(sizeof(struct mrc_ctl_connect_qp) == 36, "mrc_ctl_connect_qp is 36 bytes");
_Static_assert(sizeof(struct mrc_ctl_ready_qp) == 8, "mrc_ctl_ready_qp is 8 bytes");
_Static_assert(sizeof(struct mrc_ctl_ud_qp) == 16, "mrc_ctl_ud_qp is 16 bytes");
_Static_assert(sizeof(struct mrc_ctl_qp) == 88, "mrc_ctl_qp is 88 bytes");
_Static_assert(sizeof(struct mrc_ctl_path) == 64, "mrc_ctl_path is 64 bytes");

#endif /* METAROCE_CTL_H */
