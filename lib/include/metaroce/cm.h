/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rdma_cm over metaroced (SPEC 17): what libmetaroce asks of the daemon's connection manager
 * on the control socket (MRC_CTL_CM), and the event records the daemon writes to an event
 * channel. An event channel is a SOCK_SEQPACKET socket pair: the application polls and reads
 * one end (rdma_event_channel.fd), the daemon holds the other and writes one struct
 * mrc_cm_event per event, never waiting, and the library keeps no copy of that end: when the
 * daemon goes, the application's end reads end-of-file (the library's DEVICE_REMOVAL). The
 * events of the library's own address resolution go through the daemon too (MRC_CM_OP_ADDR),
 * in order with the rest. CM ids belong to the control connection that made
 * them and go with it: connected ones end with a DREQ to the peer, listeners stop.
 *
 *     active                              passive
 *     CREATE_ID, BIND (port 0: any)       CREATE_ID, BIND, LISTEN
 *     ADDR                -> ADDR_RESOLVED
 *     ROUTE (discovery)   -> ROUTE_RESOLVED
 *     CONNECT             -> REQ ->       CONNECT_REQUEST (a new id)
 *                                          ACCEPT (QP at RTS) or REJECT
 *     CONNECT_RESPONSE    <- REP <-
 *     (QP to RTS) ESTABLISH -> RTU ->     ESTABLISHED
 *     DISCONNECT          -> DREQ ->      DISCONNECTED
 *     DISCONNECTED        <- DREP <-
 */
#ifndef METAROCE_CM_H
#define METAROCE_CM_H

#include <linux/types.h>

#include <metaroce/wire.h>

enum mrc_ctl_cm_op {
	MRC_CM_OP_CHANNEL = 1,	     /* + the channel's daemon end; reply: .handle = the channel */
	MRC_CM_OP_CLOSE_CHANNEL = 2, /* .channel; -EBUSY while ids use it */
	MRC_CM_OP_CREATE_ID = 3,     /* .channel, .port_space; reply: .handle = the id */
	MRC_CM_OP_DESTROY_ID = 4,    /* .id: its connection ends (DREQ or REJ), listening stops */
	MRC_CM_OP_BIND = 5,	     /* .id, .addr (any: all zero), .port (0: a free one);
				      * reply: .port; -EADDRINUSE, -EADDRNOTAVAIL (not a plane's);
				      * an id bound to every address, named again with its port and
				      * one address, narrows to it (address resolution) */
	MRC_CM_OP_ROUTE = 6,	     /* .id, .addr = destination, .backlog = timeout ms: the peer
				      * is discovered; event ROUTE_RESOLVED or ROUTE_ERROR */
	MRC_CM_OP_LISTEN = 7,	     /* .id (bound), .backlog */
	MRC_CM_OP_CONNECT = 8,	     /* .id (routed), .addr, .port, .qpn, the parameters, private
				      * data: a REQ (SIDR_REQ in a UD port space) */
	MRC_CM_OP_ACCEPT = 9,	     /* .id (a CONNECT_REQUEST's), .qpn (.qkey for UD), the
				      * parameters, private data: a REP (SIDR_REP) */
	MRC_CM_OP_REJECT = 10,	     /* .id (a CONNECT_REQUEST's), private data: a REJ */
	MRC_CM_OP_ESTABLISH = 11,    /* .id (after CONNECT_RESPONSE): an RTU */
	MRC_CM_OP_DISCONNECT = 12,   /* .id: a DREQ; DISCONNECTED follows */
	MRC_CM_OP_MIGRATE = 13,	     /* .id, .channel: its events go there from now on */
	MRC_CM_OP_ADDR = 14,	     /* .id, .backlog = 0 or a positive errno: the library's address
				      * resolution, told on the id's channel in order with the rest
				      * (ADDR_RESOLVED or ADDR_ERROR) */
	MRC_CM_OP_MAX = MRC_CM_OP_ADDR,
};

/* A request: the fields its op names; the others zero. */
struct mrc_ctl_cm {
	__u8 op;		  /* enum mrc_ctl_cm_op */
	__u8 port_space;	  /* CREATE_ID: MRC_CM_PS_* */
	__u8 private_len;	  /* CONNECT, ACCEPT, REJECT: bytes of private_data */
	__u8 flags;		  /* CONNECT, ACCEPT: MRC_CM_F_* */
	__u8 responder_resources; /* CONNECT, ACCEPT */
	__u8 initiator_depth;
	__u8 retry_count;	  /* CONNECT */
	__u8 rnr_retry_count;	  /* CONNECT, ACCEPT */
	__u32 id;
	__u32 channel;
	__u32 qpn;
	__u32 qkey;
	__u32 backlog;
	__u16 port;
	__u16 reserved;		  /* 0 */
	__u8 addr[16];		  /* IPv4-mapped for IPv4 */
	__u8 private_data[MRC_CM_PRIVATE_MAX];
};

struct mrc_ctl_cm_reply {
	__u32 handle;
	__u16 port;
	__u16 reserved;
};

/* Event kinds, numbered as librdmacm's enum rdma_cm_event_type. */
enum mrc_cm_event_kind {
	MRC_CM_EV_ADDR_RESOLVED = 0,
	MRC_CM_EV_ADDR_ERROR = 1,
	MRC_CM_EV_ROUTE_RESOLVED = 2,
	MRC_CM_EV_ROUTE_ERROR = 3,
	MRC_CM_EV_CONNECT_REQUEST = 4,
	MRC_CM_EV_CONNECT_RESPONSE = 5,
	MRC_CM_EV_CONNECT_ERROR = 6,
	MRC_CM_EV_UNREACHABLE = 7,
	MRC_CM_EV_REJECTED = 8,
	MRC_CM_EV_ESTABLISHED = 9,
	MRC_CM_EV_DISCONNECTED = 10,
	MRC_CM_EV_DEVICE_REMOVAL = 11,
	MRC_CM_EV_TIMEWAIT_EXIT = 15,
};

#define MRC_CM_EVENT_MAGIC 0x4d52434du /* "MRCM" */

/* One event on a channel. */
struct mrc_cm_event {
	__u32 magic;		  /* MRC_CM_EVENT_MAGIC */
	__u32 kind;		  /* enum mrc_cm_event_kind */
	__s32 status;		  /* REJECTED: enum mrc_cm_reject; errors: -errno; else 0 */
	__u32 id;		  /* the id it is for (CONNECT_REQUEST: the new one) */
	__u32 listen_id;	  /* CONNECT_REQUEST: the listener */
	__u32 remote_qpn;	  /* CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED (UD) */
	__u32 qkey;		  /* UD: the remote QP's */
	__u8 port_space;
	__u8 private_len;	  /* bytes of private_data the message carried */
	__u8 responder_resources; /* the peer's (REQ, REP) */
	__u8 initiator_depth;
	__u8 retry_count;
	__u8 rnr_retry_count;
	__u8 flags;		  /* the peer's MRC_CM_F_* */
	__u8 reserved;
	__u16 local_port;
	__u16 remote_port;
	__u8 local_addr[16];
	__u8 remote_addr[16];
	__u8 private_data[MRC_CM_PRIVATE_MAX];
};

/* What metaroce-ctl cm show lists: MRC_CTL_CM_IDS answers n of these. */
enum mrc_ctl_cm_state {
	MRC_CM_IDLE = 0,      /* created, maybe bound */
	MRC_CM_ROUTING = 1,   /* discovering the peer for ROUTE */
	MRC_CM_ROUTED = 2,
	MRC_CM_LISTEN = 3,
	MRC_CM_REQ_SENT = 4,  /* active: REQ (or SIDR_REQ) sent, waiting for REP */
	MRC_CM_REP_RCVD = 5,  /* active: REP given to the library, waiting for ESTABLISH */
	MRC_CM_REQ_RCVD = 6,  /* passive: CONNECT_REQUEST given, waiting for ACCEPT or REJECT */
	MRC_CM_REP_SENT = 7,  /* passive: REP sent, waiting for RTU */
	MRC_CM_ESTABLISHED = 8,
	MRC_CM_DREQ_SENT = 9, /* waiting for DREP */
	MRC_CM_TIMEWAIT = 10, /* disconnected or rejected: answers late messages, then goes */
	MRC_CM_STATES
};

static inline const char *mrc_ctl_cm_state_name(unsigned state)
{
	static const char *const names[MRC_CM_STATES] = {
		"idle", "routing", "routed", "listen", "req-sent", "rep-rcvd", "req-rcvd",
		"rep-sent", "established", "dreq-sent", "timewait",
	};

	return state < MRC_CM_STATES ? names[state] : "unknown";
}

struct mrc_ctl_cm_id {
	__u32 id;
	__s32 pid;	  /* the owner; 0: the daemon's own (finishing a disconnect) */
	__u32 uid;
	__u8 state;	  /* enum mrc_ctl_cm_state */
	__u8 port_space;
	__u16 local_port;
	__u16 remote_port;
	__u16 reserved;
	__u32 qpn;
	__u32 remote_qpn;
	__u32 backlog;	  /* a listener's */
	__u32 pending;	  /* a listener's requests not yet accepted or rejected */
	__u32 reserved2;
	__u8 local_addr[16];
	__u8 remote_addr[16];
};

_Static_assert(sizeof(struct mrc_ctl_cm) == 272, "mrc_ctl_cm is 272 bytes");
_Static_assert(sizeof(struct mrc_cm_event) == 296, "mrc_cm_event is 296 bytes");
_Static_assert(sizeof(struct mrc_ctl_cm_id) == 72, "mrc_ctl_cm_id is 72 bytes");

#endif /* METAROCE_CM_H */
