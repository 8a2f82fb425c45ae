/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection engine's inside, shared by its own files (conn.c: life cycle, posting,
 * completions, errors, timers; conn_recv.c; conn_send.c; linger.c) and nobody else: callers
 * see struct mrc_conn only as the opaque type of conn.h.
 */
#ifndef METAROCE_PROTO_CONN_IMPL_H
#define METAROCE_PROTO_CONN_IMPL_H

#include <string.h>

#include "conn.h"
#include "loss.h"
#include "random.h"
#include "seq.h"

#define RNR_UNLIMITED 7
#define MAX_PROBE_REPLIES 4
#define PROBE_REPLIES_PER_MS MRC_MAX_PATHS /* */
#define RETRY_UNIT_NS 10000ull /* NAK retry_after unit: 10 us */
#define ECHO_SLOTS 32
#define REVERSE_PORTS 8
#define OWD_EPOCH_NS 1000000000ull    /* a one-way delay base lasts one to two of these */
#define OWD_IMPLAUSIBLE_NS 100000000  /* a sample this far under the base is bogus */
#define MAX_DRAIN_PAUSE_NS 1000000ull /* 1 ms, a 100 Gbit/s queue of 12 MB */

enum msg_kind { MSG_SQ = 0, MSG_RR = 1 };

/* An outbound message: a posted send work request, or a READ response owed to the peer. */
struct msg {
	struct mrc_send_wr wr; /* READ response: sge[0] is the source, rkey/raddr the sink */
	uint32_t msn;
	uint32_t rsn;
	uint32_t len;
	uint32_t first_psn;
	uint32_t npkts;
	uint32_t sent_pkts;  /* packets given a PSN so far */
	uint32_t acked_pkts;
	uint32_t read_placed; /* READ: response bytes placed here */
	uint32_t req_psn;     /* READ response: PSN of the request; runs once cum_psn passes it */
	uint64_t rnr_until_ns; /* after an RNR NAK: no packet of this message before this time */
	uint8_t rnr_rounds;   /* RNR NAK rounds without success */
	uint8_t kind;	     /* enum msg_kind */
	bool executed;	     /* an atomic's response: the operation ran, its result is kept */
	uint64_t *atomic_target; /* an atomic's response: the 8 bytes it operates on */
	uint64_t atomic_result;	 /* ... and what they held before it: the response's payload */
	bool resp_complete;  /* READ: every response byte placed (a 0-byte READ: its one
				response packet arrived) */
};

/* A posted receive and the message that consumes it. */
struct rq_entry {
	struct mrc_recv_wr wr;
	uint32_t capacity;
	uint32_t msg_len;
	uint32_t placed;
	uint32_t imm;
	uint8_t wc_opcode;
	uint8_t wc_flags;
	uint32_t last_psn;    /* PSN of the message's last packet, once it arrived */
	uint8_t opcode;	      /* wire opcode of the message that consumes it */
	bool started;
	bool done;	      /* every byte placed; delivered once cum_psn passes last_psn */
	uint8_t status;
};

struct echo {
	uint16_t path_id;
	uint32_t tx_ts;
	uint32_t queue_delay_ns; /* how long it queued, when CE-marked */
	uint64_t arrival_ns;
	uint8_t plane;
	uint16_t sport;
	bool ce;
};

struct probe_reply {
	uint64_t nonce;
	bool ce;
	uint32_t echo_ts;
	uint16_t echo_path;
	uint8_t plane;
	uint16_t sport;
};

struct mrc_conn {
	struct mrc_conn_config cfg;
	struct mrc_conn_callbacks cb;
	void *user;
	uint8_t state;

	/* sender */
	/*
	 * Rings are indexed by 32-bit counters (MSN, RSN, READ responses) modulo their
	 * capacity, a power of two so the index stays continuous when a counter wraps; the
	 * configured depths bound how many entries are live.
	 */
	struct msg *msgs; /* sq_cap send work requests, then rr_cap READ responses */
	uint32_t sq_cap, rr_cap, rq_cap;
	uint32_t rr_depth;
	uint32_t sq_head, sq_pkt, sq_tail; /* MSNs: oldest incomplete, packetizing, next */
	uint32_t rr_head, rr_pkt, rr_tail; /* READ-response counters, same roles */
	int32_t cur_msg;		   /* message being packetized, -1 none */
	uint32_t next_rsn;
	uint32_t reads_outstanding;
	uint32_t snd_una, snd_nxt;
	struct mrc_tx_ring tx;
	uint32_t lost_pending;
	struct mrc_path *paths; /* n_paths of them */
	unsigned n_paths;
	unsigned cursor;
	uint32_t rate_hint_kbps;
	uint64_t pace_next_ns;	/* the rate hint's bucket: when the next packet may go */
	uint64_t hold_until_ns;	/* an ACK's queue_delay hold: pace_next_ns is never
				 * before it; kept so a hint of 0 forgives the bucket, not the hold */
	uint16_t ack_epoch;   /* bumped whenever a PSN is newly acknowledged */
	uint32_t retries;     /* counted since the QP last made progress */
	uint64_t retry_clock_ns; /* the last progress, the first send after none was
				    outstanding, or the last retry counted */
	uint64_t rnr_wakeup_ns; /* earliest end of an RNR wait */
	uint64_t retx_wakeup_ns; /* earliest a lost packet held back may go again */
	struct mrc_prf rng; /* probe nonces, source ports */
	uint64_t last_now_ns; /* latest time the caller gave us */
	uint64_t sealed;      /* packets sealed: the next one's nonce */

	/* receiver */
	struct mrc_rx_window rxw;
	uint32_t rx_highest; /* highest PSN accepted so far (rq_psn - 1 before any) */
	struct rq_entry *rq;
	uint32_t rq_head, rq_tail; /* RSNs: oldest undelivered, next to post */
	int rate_entry;
	bool ack_pending, ack_now;
	uint32_t ack_unacked;
	uint64_t ack_deadline_ns;
	struct echo echo;
	/* One-way delay of the peer's packets, ns mod 2^32 with its clock's offset: the least
	 * this epoch and the last, the base that queueing delay is measured from */
	uint32_t owd_base, owd_next;
	bool owd_has_base, owd_has_next;
	uint64_t owd_epoch_ns;
	/* (plane, UDP source port) pairs the peer's packets came from lately: the ports our
	 * answers rotate over */
	struct {
		uint8_t plane;
		uint16_t sport;
	} rev[REVERSE_PORTS];
	uint8_t n_rev, rev_insert, rev_next;
	uint16_t acks_sent;
	uint16_t echoed_at[ECHO_SLOTS]; /* acks_sent when a path_id (mod ECHO_SLOTS) was echoed */
	uint16_t ce_count;
	struct {
		bool pending;
		bool ce;
		uint8_t kind;
		uint32_t psn, msn;
		uint16_t retry_after;
		uint8_t plane;
		uint16_t sport;
	} nak;
	uint32_t seq_nak_base; /* RoCEv2 mode: base a NAK(seq) was sent for */
	bool seq_nak_sent;
	struct probe_reply probe_replies[MAX_PROBE_REPLIES];
	unsigned n_probe_replies;
	uint64_t probe_replies_since_ns; /* the millisecond probe_replies_recent counts */
	unsigned probe_replies_recent;
	bool close_pending;
	bool last_nak_valid;	/* a NAK went out: where, for the CLOSE that follows */
	uint8_t last_nak_plane;
	uint16_t last_nak_sport;
	uint32_t close_reason;
	uint64_t linger_quiet_until_ns; /* CLOSING: CLOSED at this time unless the peer speaks */
	uint64_t linger_end_ns;		/* CLOSING: CLOSED at this time whatever happens */
	uint64_t linger_quiet_ns;	/* CLOSING: how long the peer must be quiet */
	bool close_ack_first;		/* CLOSING: an ACK on the CLOSE's path goes before it */
	bool reads_dropped;		/* CLOSING: READ responses owed were discarded */

	struct mrc_conn_stats stats;
};

/* --- small helpers every file of the engine uses ---------------------------------------- */

static inline uint64_t next_random(struct mrc_conn *c)
{
	return mrc_prf_next(&c->rng);
}

/*
 * A cumulative PSN an ACK, NAK or CLOSE may carry: never one not yet sent, nor one
 * more than a window below the oldest unacknowledged, which no ACK still on its way can
 * name. A sender has at most MRC_SACK_BITS PSNs out, so a blind guess lands in here once
 * in 2^23 tries: a forged acknowledgement cannot throttle or tear down a QP by chance.
 */
static inline bool conn_cum_plausible(const struct mrc_conn *c, uint32_t cum)
{
	return mrc_seq_le(cum, c->snd_nxt) && mrc_seq_le(c->snd_una - MRC_SACK_BITS, cum);
}

static inline bool rocev2(const struct mrc_conn *c)
{
	return c->cfg.mode == MRC_MODE_ROCEV2;
}

/* Local operations: no packet; complete in posting order. */
static inline bool conn_local(uint8_t wr_opcode)
{
	return wr_opcode == MRC_WR_BIND_MW || wr_opcode == MRC_WR_LOCAL_INV;
}

static inline bool conn_atomic(uint8_t wr_opcode)
{
	return wr_opcode == MRC_WR_ATOMIC_CMP_SWAP || wr_opcode == MRC_WR_ATOMIC_FETCH_ADD;
}

static inline struct msg *sq_msg(struct mrc_conn *c, uint32_t msn)
{
	return &c->msgs[msn & (c->sq_cap - 1)];
}

static inline struct msg *rr_msg(struct mrc_conn *c, uint32_t ctr)
{
	return &c->msgs[c->sq_cap + (ctr & (c->rr_cap - 1))];
}

/* Moves the next message to cut past local operations, which have no packets. */
static inline void conn_skip_local(struct mrc_conn *c)
{
	while (c->sq_pkt != c->sq_tail && sq_msg(c, c->sq_pkt)->npkts == 0)
		c->sq_pkt++;
}

static inline struct rq_entry *rq_entry(struct mrc_conn *c, uint32_t rsn)
{
	return &c->rq[rsn & (c->rq_cap - 1)];
}

/* Failed and re-drawn paths are probed until they answer, and so is a suspect one. */
static inline bool path_probed(const struct mrc_path *p)
{
	return p->state == MRC_PATH_FAILED || p->state == MRC_PATH_PROBING ||
	       (p->state == MRC_PATH_ACTIVE && p->rto_streak);
}

static inline bool work_outstanding(const struct mrc_conn *c)
{
	return c->snd_una != c->snd_nxt || c->sq_head != c->sq_tail || c->rr_head != c->rr_tail;
}

/* --- conn.c: paths, completions, errors, timers ----------------------------------------- */

/* Counts a packet dropped for a reason (drop_reasons.h). */
void conn_drop(struct mrc_conn *c, int reason);
/* A path back in service takes back the window it lent. */
void conn_reclaim_window(struct mrc_conn *c, struct mrc_path *from);
void conn_fail_path(struct mrc_conn *c, struct mrc_path *p, uint64_t now_ns);
/* The path's RTO, borrowed from the QP's other paths while it has no sample. */
uint64_t conn_path_rto(const struct mrc_conn *c, const struct mrc_path *p);
void conn_complete_recv(struct mrc_conn *c, const struct rq_entry *e, uint8_t status);
/* Send work requests complete in posting order. */
void conn_complete_messages(struct mrc_conn *c);
/* The error state: the culprit (if any) completes with status, the rest flushed. */
void conn_enter_error(struct mrc_conn *c, const struct msg *culprit, uint8_t status,
		      bool tell_peer);
/* A probe round with no usable path: a retry on the QP's retry clock. */
void conn_note_dead_round(struct mrc_conn *c, uint64_t now_ns);

/* --- conn_recv.c ------------------------------------------------------------------------- */

/* Go-back-N: everything unacknowledged goes again, in PSN order. */
void conn_go_back_n(struct mrc_conn *c);
/* The outbound message a PSN in flight belongs to. */
struct msg *conn_msg_of_psn(struct mrc_conn *c, uint32_t psn);
/* The earliest end of an RNR wait still ahead. */
void conn_refresh_rnr_wakeup(struct mrc_conn *c, uint64_t now_ns);

/* --- conn_send.c ------------------------------------------------------------------------- */

/* A retry counted on the QP's retry clock; true when the budget is spent. */
bool conn_retry_exhausted(struct mrc_conn *c, uint64_t now_ns);

/* Shared between the engine's files and linger.c. */
void conn_note_for_ack(struct mrc_conn *c, const struct mrc_rx_info *rx,
		       const struct mrc_packet *pkt, bool urgent, uint64_t now_ns);
void conn_note_reverse_port(struct mrc_conn *c, const struct mrc_rx_info *rx);
void conn_queue_probe_reply(struct mrc_conn *c, const struct mrc_rx_info *rx,
			    const struct mrc_packet *pkt, uint64_t now_ns);
bool conn_send_ack(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		   uint64_t now_ns, size_t *len);
bool conn_send_nak(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		   uint64_t now_ns, size_t *len);
bool conn_send_probe_reply(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
			   uint64_t now_ns, size_t *len);
bool conn_send_close(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		     uint64_t now_ns, size_t *len);
/* The next of the peer's recent source ports on a plane, or fallback (SPEC 5.5). */
uint16_t conn_reverse_port(struct mrc_conn *c, uint8_t plane, uint16_t fallback);

/* A destroyed QP's lingering (linger.c, SPEC 11.4): the engine's entry points hand a
 * connection in MRC_QPS_CLOSING or MRC_QPS_CLOSED to these. */
int conn_closing_recv(struct mrc_conn *c, const struct mrc_rx_info *rx,
		      const struct mrc_packet *pkt, uint64_t now_ns);
bool conn_closing_send(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		       uint64_t now_ns, size_t *len);
uint64_t conn_closing_next_timeout(const struct mrc_conn *c);
void conn_closing_on_timeout(struct mrc_conn *c, uint64_t now_ns);

#endif /* METAROCE_PROTO_CONN_IMPL_H */
