/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The MetaRoCE connection (QP) engine: sans-I/O, no clock, no sockets.
 *
 * The caller owns time and I/O and drives one connection with four calls:
 *
 *   mrc_conn_recv(conn, &rx, bytes, len, now)     a datagram arrived for this QP
 *   mrc_conn_send(conn, buf, cap, &tx, now, &n)   next packet to transmit, if any
 *   mrc_conn_next_timeout(conn)                   when to call on_timeout at the latest
 *   mrc_conn_on_timeout(conn, now)                timers (RTO, delayed ACK, probes, ...)
 *
 * and posts work with mrc_conn_post_send() / mrc_conn_post_recv(). Completions come back
 * through the complete callback; one-sided placement asks the mr_lookup callback to turn a
 * key and an address range into host memory the engine may copy to or from.
 *
 * Times are nanoseconds on any monotonic clock. Paths are (plane, UDP source port): the
 * caller maps a plane to a local socket and the peer's address on it. The engine allocates
 * all its memory in mrc_conn_new() and none while packets flow.
 *
 * A connection exists from RTR on and ends in ERR: RESET and INIT belong to the caller, which
 * drops packets for QPs that have no connection. A QP in RTR receives and acknowledges
 * but posts no sends: the caller creates the connection at RTR with the receive
 * settings and gives the send settings with mrc_conn_set_send() when the QP reaches RTS.
 * When the application destroys the QP, mrc_conn_close() lets the connection linger until
 * the peer has heard every acknowledgement it needs (CLOSING); the caller keeps driving it
 * and frees it once it is CLOSED and has nothing left to send.
 */
#ifndef METAROCE_PROTO_CONN_H
#define METAROCE_PROTO_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <metaroce/drop_reasons.h>
#include <metaroce/wire.h>

#include "auth.h"
#include "cc.h"
#include "codec.h"
#include "path.h"
#include "ratehint.h"
#include "rtt.h"
#include "sack.h"

#define MRC_MAX_SGE 4

enum mrc_mode {
	MRC_MODE_METAROCE = 0, /* out-of-order placement, SACK, multipath */
	MRC_MODE_ROCEV2 = 1,   /* baseline: one path, in-order, go-back-N */
};

enum mrc_qp_state {
	MRC_QPS_RTS = 0,     /* ready to send and receive */
	MRC_QPS_ERR = 1,     /* error: everything outstanding is flushed */
	MRC_QPS_CLOSING = 2, /* destroyed: acknowledges what it received, takes nothing new */
	MRC_QPS_CLOSED = 3,  /* destroyed and done: free it once mrc_conn_send has nothing */
};

enum mrc_wr_opcode {
	MRC_WR_WRITE = 0,
	MRC_WR_WRITE_IMM,
	MRC_WR_SEND,
	MRC_WR_SEND_IMM,
	MRC_WR_READ,
	MRC_WR_ATOMIC_CMP_SWAP,	 /* 8 bytes at raddr; the original lands in sge[0] */
	MRC_WR_ATOMIC_FETCH_ADD,
	MRC_WR_SEND_INV,	 /* a SEND that has the peer invalidate its key `rkey` */
	/*
	 * Local operations: no packet, no PSN; each completes in posting order once every
	 * request before it has. What they do (a memory window bound or invalidated)
	 * the caller did when it posted them.
	 */
	MRC_WR_BIND_MW,
	MRC_WR_LOCAL_INV,
};

/* Answered by READ responses into its first scatter element, and counted against
 * max_rd_atomic: a READ, or an atomic. */
static inline bool mrc_wr_read_like(uint8_t opcode)
{
	return opcode == MRC_WR_READ || opcode == MRC_WR_ATOMIC_CMP_SWAP ||
	       opcode == MRC_WR_ATOMIC_FETCH_ADD;
}

#define MRC_SEND_SIGNALED 0x01u	 /* produce a completion on success */
#define MRC_SEND_SOLICITED 0x02u /* ask the receiver for a solicited event */
#define MRC_SEND_FENCE 0x04u	 /* wait for earlier READs to complete */

/* Work-completion statuses, as verbs applications know them (ibv_wc_status). */
enum mrc_wc_status {
	MRC_WC_SUCCESS = 0,
	MRC_WC_LOC_LEN_ERR,	 /* receive too small for the incoming message */
	MRC_WC_WR_FLUSH_ERR,	 /* flushed: the QP entered the error state */
	MRC_WC_REM_ACCESS_ERR,	 /* peer refused the key, range or permission */
	MRC_WC_REM_INV_REQ_ERR,	 /* peer refused the request (e.g. longer than its receive) */
	MRC_WC_REM_OP_ERR,	 /* peer failed internally */
	MRC_WC_RETRY_EXC_ERR,	 /* no progress within the retry budget */
	MRC_WC_RNR_RETRY_EXC_ERR, /* peer had no receive posted, retries exhausted */
	MRC_WC_LOC_QP_OP_ERR,	 /* the local request was malformed */
	MRC_WC_LOC_PROT_ERR,	 /* a local key or range the caller does not own (daemon) */
};

enum mrc_wc_opcode {
	MRC_WC_SEND = 0,
	MRC_WC_RDMA_WRITE,
	MRC_WC_RDMA_READ,
	MRC_WC_RECV,		  /* a SEND or SEND with immediate arrived */
	MRC_WC_RECV_RDMA_WITH_IMM, /* a WRITE with immediate arrived */
	MRC_WC_COMP_SWAP,
	MRC_WC_FETCH_ADD,
	MRC_WC_BIND_MW,
	MRC_WC_LOCAL_INV,
};

#define MRC_WC_WITH_IMM 0x01u
#define MRC_WC_SOLICITED 0x02u
#define MRC_WC_WITH_INV 0x04u /* a SEND_INV arrived: imm holds the key it invalidated */

struct mrc_sge {
	void *host;	/* where the bytes are in this process */
	uint64_t addr;	/* the address the application knows them by (for READ sinks) */
	uint32_t length;
	uint32_t lkey;
};

/*
 * Copies len bytes at offset off of a scatter list: from `in` into the list (placing what
 * arrived) when in is given, else out of the list into `out` (gathering what leaves).
 */
static inline void mrc_sge_copy(const struct mrc_sge *sge, unsigned n, uint32_t off,
				 uint8_t *out, const uint8_t *in, uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		uint8_t *at;
		uint32_t take;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		at = (uint8_t *)sge[i].host + off;
		take = sge[i].length - off < len ? sge[i].length - off : len;
		if (in) {
			memcpy(at, in, take);
			in += take;
		} else {
			memcpy(out, at, take);
			out += take;
		}
		len -= take;
		off = 0;
	}
}

struct mrc_send_wr {
	uint64_t wr_id;
	uint8_t opcode;	 /* enum mrc_wr_opcode */
	uint8_t flags;	 /* MRC_SEND_* */
	uint8_t num_sge;
	struct mrc_sge sge[MRC_MAX_SGE];
	uint32_t imm;	 /* *_IMM */
	uint32_t rkey;	 /* WRITE*, READ, ATOMIC*; SEND_INV: the peer's key to invalidate */
	uint64_t raddr;	 /* WRITE*, READ, ATOMIC* */
	uint64_t compare_add; /* ATOMIC_CMP_SWAP: the value compared with; FETCH_ADD: the addend */
	uint64_t swap;	 /* ATOMIC_CMP_SWAP: the value stored on a match */
};

struct mrc_recv_wr {
	uint64_t wr_id;
	uint8_t num_sge;
	struct mrc_sge sge[MRC_MAX_SGE];
};

struct mrc_completion {
	uint64_t wr_id;
	uint8_t status; /* enum mrc_wc_status */
	uint8_t opcode; /* enum mrc_wc_opcode */
	uint8_t flags;	/* MRC_WC_* */
	uint32_t byte_len;
	uint32_t imm;	/* WITH_IMM: the immediate; WITH_INV: the invalidated key */
};

/* Access a one-sided operation needs from a memory region. */
#define MRC_ACCESS_REMOTE_WRITE 0x1u
#define MRC_ACCESS_REMOTE_READ 0x2u
#define MRC_ACCESS_REMOTE_ATOMIC 0x4u

struct mrc_conn_callbacks {
	/*
	 * Resolves [addr, addr + len) under key to host memory with the given access. Returns
	 * 0 and sets *host, or -1 when the key is unknown, the range falls outside the region
	 * or the access is not granted.
	 */
	int (*mr_lookup)(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
			 uint8_t **host);
	/* A work request finished; from_recv_queue tells which queue it was posted to. */
	void (*complete)(void *user, bool from_recv_queue, const struct mrc_completion *wc);
	/*
	 * SEND_INV: whether the peer may invalidate key through this QP (asked when the
	 * message's first packet arrives; -1 refuses it ), and the invalidation itself,
	 * when the message is delivered. Without them SEND_INV is refused.
	 */
	int (*may_invalidate)(void *user, uint32_t key);
	void (*invalidate)(void *user, uint32_t key);
};

struct mrc_path_config {
	uint8_t plane;
	uint16_t sport;
};

struct mrc_conn_config {
	uint8_t mode;		  /* enum mrc_mode */
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint32_t sq_psn;	  /* first PSN this side sends */
	uint32_t rq_psn;	  /* first PSN expected from the peer */
	uint16_t max_payload;	  /* payload bytes per data packet */
	uint8_t n_paths;	  /* 1..MRC_MAX_PATHS; RoCEv2 mode uses path 0 only */
	struct mrc_path_config paths[MRC_MAX_PATHS];
	uint32_t sq_depth;	  /* send work requests outstanding at most */
	uint32_t rq_depth;	  /* receive work requests posted at most */
	uint32_t max_rd_atomic;	  /* READs this side has outstanding at most */
	uint32_t max_dest_rd_atomic; /* READs the peer may have outstanding here */
	unsigned qp_access;	  /* MRC_ACCESS_* the peer may use on this QP */
	uint8_t retry_cnt;	  /* verbs retry_cnt: resends of a packet without QP progress */
	uint64_t retry_timeout_ns; /* verbs timeout: a resend counts against retry_cnt only this
				      long after the last that did; 0: never */
	uint8_t rnr_retry;	  /* verbs rnr_retry; 7 = unlimited */
	uint16_t rnr_retry_after; /* RNR NAK wait we ask of the peer, 10 us units */
	bool sq_sig_all;	  /* every send work request completes, signaled or not */
	struct mrc_rtt_limits rto;
	struct mrc_cc_params cc;
	const struct mrc_cc_ops *cc_ops;
	uint32_t reorder_threshold;    /* later packets on the same path that prove a loss */
	uint32_t fail_after_timeouts;  /* RTO expiries without ECN that fail a path */
	uint32_t redraw_after_probes;  /* unanswered probes before a new source port */
	uint32_t ack_coalesce_packets; /* acknowledge at least every this many packets */
	uint64_t ack_delay_ns;	       /* and no later than this after the first unacked one */
	uint64_t linger_quiet_ns; /* a destroyed QP lingers until the peer is quiet this long */
	uint64_t linger_max_ns;	  /* and no longer than this after it was destroyed */
	struct mrc_rate_domain *rate_domain; /* receiver capacity shared with other QPs */
	uint64_t seed;			     /* source-port redraws and probe nonces */
	/* mrc_conn_send may leave a data packet's payload in the application's memory
	 * (mrc_tx_info.payload) instead of copying it behind the headers: one copy less for a
	 * caller that sends with a gather list. Only where the payload is in one piece. */
	bool payload_by_reference;
	/* Every packet tagged under auth_tx and every packet received checked under auth_rx
	 * before any field is acted on. */
	bool auth;
	struct mrc_auth_key auth_tx, auth_rx;
	/* With auth, every packet sealed instead (auth = full): its payload encrypted under
	 * seal_tx, every packet received opened under seal_rx. The payload is then
	 * always copied behind the headers (payload_by_reference does not apply). */
	bool seal;
	struct mrc_seal_key seal_tx, seal_rx;
	/* where the next nonce comes from: a counter the caller shares among all it seals, so
	 * no nonce repeats even should two QPs come to share a key; NULL: this QP's own, from 0,
	 * safe only if no other connection ever seals under seal_tx */
	uint64_t *seal_counter;
	/* MRC_DROP_REASON_MAX + 1 counters, by enum mrc_drop_reason, that the QP adds its
	 * refused packets to: the caller's, typically one table for all its QPs, so a per-reason
	 * breakdown costs no QP any memory; NULL: counted in rx_dropped only. */
	uint64_t *drop_counts;
};

/* Fills in the defaults documented in docs/SPEC.md; the caller sets QPNs, PSNs and paths. */
void mrc_conn_config_default(struct mrc_conn_config *cfg);

struct mrc_rx_info {
	uint8_t plane;	/* the local plane the datagram arrived on */
	uint16_t sport; /* its UDP source port */
	bool ce;	/* its IP header carried ECN CE */
	/* A fast path (the XDP program) already wrote this WRITE or READ_RESP payload where it
	 * belongs: everything is checked and accounted as usual, but no byte is copied. The
	 * caller must have placed only a packet mrc_conn_rx_verdict() calls new, and with
	 * config.auth only one whose tag it verified. */
	bool placed;
};

struct mrc_tx_info {
	uint8_t plane;	  /* send from this local plane ... */
	uint16_t sport;	  /* ... with this UDP source port */
	uint16_t path_id; /* index of the path (for sequenced packets) */
	uint8_t opcode;
	/* With payload_by_reference: the packet's payload, to be sent right behind the *len
	 * bytes written into buf, where the application's memory holds it (valid until the
	 * caller returns to the engine or the application's next request); NULL: the packet
	 * is whole in buf. */
	const uint8_t *payload;
	uint32_t payload_len;
	/* With config.auth and a payload left by reference: the authentication trailer, sent
	 * behind the payload (a packet whole in buf has it at its end, in *len). */
	uint8_t trailer[MRC_AUTH_TAG_LEN];	/* (a sealed packet is always whole in buf) */
	uint8_t trailer_len;
};

struct mrc_conn_stats {
	uint64_t tx_data_packets;     /* sequenced packets, retransmissions included */
	uint64_t tx_retransmits;
	uint64_t tx_acks;
	uint64_t tx_naks;
	uint64_t tx_probes;
	uint64_t rx_packets;	      /* datagrams handed to mrc_conn_recv */
	uint64_t rx_placed_packets;   /* sequenced packets accepted and placed */
	uint64_t rx_placed_bytes;
	uint64_t rx_ce_packets;
	uint64_t rx_dropped;	      /* well-formed packets refused, whatever the reason */
	uint64_t go_back_n;	      /* RoCEv2 mode: rewinds */
	uint64_t probe_replies_limited; /* PROBEs left unanswered by the rate limit */
};

/* A snapshot of a connection's sequence state, for inspection tools and tests. */
struct mrc_conn_info {
	uint32_t snd_una;	  /* oldest PSN not yet acknowledged */
	uint32_t snd_nxt;	  /* next new PSN */
	uint32_t lost_pending;	  /* declared lost, not yet retransmitted */
	uint32_t rcv_cum_psn;	  /* receive window base */
	uint32_t rate_hint_kbps;  /* latest hint from the peer; 0: none */
	uint32_t sq_outstanding;  /* send work requests not yet completed */
	uint32_t rq_posted;	  /* receive work requests not yet completed */
	uint32_t rr_started;	  /* READ responses accepted so far (a counter that wraps) */
	uint32_t rr_finished;	  /* of which finished: their source memory is no longer read */
	uint64_t next_timeout_ns;
};

struct mrc_conn;

/* Returns NULL with errno set (EINVAL for a bad configuration, ENOMEM). */
struct mrc_conn *mrc_conn_new(const struct mrc_conn_config *cfg,
			      const struct mrc_conn_callbacks *cb, void *user, uint64_t now_ns);
void mrc_conn_free(struct mrc_conn *conn);

/*
 * The send half's settings, known only at RTS for a connection created at RTR. Allowed while
 * no request has been sent; returns 0, or -EBUSY after the first.
 */
int mrc_conn_set_send(struct mrc_conn *conn, uint8_t retry_cnt, uint64_t retry_timeout_ns,
		      uint8_t rnr_retry, uint32_t max_rd_atomic);

/*
 * Receives the caller must post before the message with receive sequence number rsn has one
 * (a shared receive queue feeds its QPs on demand): 0 when it has one, or when rsn is one
 * already delivered or beyond what the receive queue could ever hold.
 */
uint32_t mrc_conn_receives_short(const struct mrc_conn *conn, uint32_t rsn);

/*
 * What a QP at RTS may change (verbs' RTS to RTS): the retry limits and clock, the RNR wait
 * it asks of its peer and the access it grants it. Each applies from the next retry,
 * RNR NAK or request packet on; nothing already accepted is revisited.
 */
void mrc_conn_modify(struct mrc_conn *conn, uint8_t retry_cnt, uint64_t retry_timeout_ns,
		     uint8_t rnr_retry, uint16_t rnr_retry_after, unsigned qp_access);

/* Verbs' QP timeout attribute (4.096 us << timeout, 0 for infinite) in ns; 0 for never. */
static inline uint64_t mrc_verbs_timeout_ns(uint8_t timeout)
{
	return timeout && timeout < 32 ? 4096ull << timeout : 0;
}

/*
 * The first PSN of the direction (from_node, from_qpn) -> (to_node, to_qpn). Both
 * ends derive it from what both know at RTR (the daemons' node ids from discovery, and the
 * QPNs), where verbs' sq_psn is not: it comes only with RTS, and a responder that never
 * reaches RTS must still send READ responses. The node ids are random per daemon run, so an
 * off-path sender cannot compute it.
 */
uint32_t mrc_initial_psn(uint64_t from_node, uint32_t from_qpn, uint64_t to_node,
			 uint32_t to_qpn);

/* Queues work. Returns 0, -ENOMEM when the queue is full, -EINVAL for a malformed request. */
int mrc_conn_post_send(struct mrc_conn *conn, const struct mrc_send_wr *wr);
int mrc_conn_post_recv(struct mrc_conn *conn, const struct mrc_recv_wr *wr);

/*
 * One datagram addressed to this QP. Returns MRC_DROP_NONE when it was acted on, else the
 * reason it was not (also counted in stats). Never fails the connection for a malformed
 * packet.
 */
int mrc_conn_recv(struct mrc_conn *conn, const struct mrc_rx_info *rx, const void *buf,
		  size_t len, uint64_t now_ns);
/* The same for a packet the caller has already decoded (to find its QP). */
int mrc_conn_recv_packet(struct mrc_conn *conn, const struct mrc_rx_info *rx,
			 const struct mrc_packet *pkt, uint64_t now_ns);

/*
 * Writes the next packet into buf and returns true with *len and *tx set, or false when the
 * connection has nothing it may send now (then next_timeout says when to ask again).
 */
bool mrc_conn_send(struct mrc_conn *conn, void *buf, size_t cap, struct mrc_tx_info *tx,
		   uint64_t now_ns, size_t *len);

/* Earliest time mrc_conn_on_timeout must run, UINT64_MAX for never. */
uint64_t mrc_conn_next_timeout(const struct mrc_conn *conn);
void mrc_conn_on_timeout(struct mrc_conn *conn, uint64_t now_ns);

/* Moves the QP to the error state: outstanding work completes with a flush status. */
void mrc_conn_set_error(struct mrc_conn *conn, uint64_t now_ns);

/*
 * The application destroyed the QP (SPEC 11.4). Its work is dropped without completions, as
 * verbs does; no callback runs from here on. A QP that was sending and receiving lingers in
 * CLOSING: it acknowledges at once what it received, answers the peer's resends of it and
 * its probes, and answers data it never received with CLOSE, until the peer has been quiet
 * for linger_quiet_ns. Then, or at once for a QP in error, it is CLOSED.
 */
void mrc_conn_close(struct mrc_conn *conn, uint64_t now_ns);

/* Operator drain of every path on a plane: no new packets there; in flight completes. */
void mrc_conn_drain_plane(struct mrc_conn *conn, uint8_t plane, bool drained);

enum mrc_qp_state mrc_conn_state(const struct mrc_conn *conn);
const struct mrc_conn_stats *mrc_conn_stats(const struct mrc_conn *conn);
/* The receive window's base (cum_psn): what a fast path's own window must follow. */
uint32_t mrc_conn_rcv_base(const struct mrc_conn *conn);
/*
 * The msn of the oldest send work request not yet completed, and the one the next posted gets
 * (equal when none is outstanding): what a fast path's record of the READs it may answer
 * follows.
 */
void mrc_conn_sq_msns(const struct mrc_conn *conn, uint32_t *oldest, uint32_t *next);
/*
 * Send work request msn, outstanding: 1 when it is a READ or an atomic with one scatter
 * element whose request has gone, so its response may come (*sink: where it lands, R-25);
 * 0 when it is no such request; -EAGAIN when its request has not gone yet (nor has any
 * posted after it: requests go in posting order); -ENOENT when msn is not outstanding.
 */
int mrc_conn_sq_read_sink(const struct mrc_conn *conn, uint32_t msn, struct mrc_sge *sink);
/* What a sequenced packet with this PSN would be to the receive window right now. */
enum mrc_rx_verdict mrc_conn_rx_verdict(const struct mrc_conn *conn, uint32_t psn);

unsigned mrc_conn_n_paths(const struct mrc_conn *conn);
const struct mrc_path *mrc_conn_path(const struct mrc_conn *conn, unsigned i);
void mrc_conn_get_info(const struct mrc_conn *conn, struct mrc_conn_info *info);
/* Packets sent and not yet acknowledged, across all paths. */
uint32_t mrc_conn_inflight(const struct mrc_conn *conn);
/* True when no send work is queued or outstanding. */
bool mrc_conn_send_idle(const struct mrc_conn *conn);
/* Bytes of state the engine holds for this connection (queues included). */
size_t mrc_conn_footprint(const struct mrc_conn *conn);

const char *mrc_wc_status_name(uint8_t status);

#endif /* METAROCE_PROTO_CONN_H */
