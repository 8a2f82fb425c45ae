/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection engine, receiving: acknowledgements and NAKs at the sender (what they
 * acknowledge, RTT, loss, congestion, RNR waits), and sequenced packets at the receiver
 * (window, placement at each packet's own address, receive completions in RSN order, what
 * the next ACK echoes). Section numbers refer to docs/SPEC.md.
 */
#include "conn.h"
#include "conn_impl.h"

#include <string.h>

#include "seq.h"

/* --- receiving: acknowledgements (sender side) ---------------------------------------- */

static void packet_acked(struct mrc_conn *c, uint32_t psn, uint32_t *acked_on_path,
			 uint64_t now_ns)
{
	struct mrc_tx_slot *s = mrc_tx_slot(&c->tx, psn);
	struct mrc_path *p = &c->paths[s->path];
	struct msg *m = &c->msgs[s->msg];

	uint8_t before = mrc_tx_record_ack(s, c->paths);

	if (before & MRC_TX_ACKED)
		return;
	if (before & MRC_TX_LOST)
		c->lost_pending--; /* declared lost, then acknowledged after all */
	p->rto_streak = 0;
	p->stats.acked++;
	acked_on_path[s->path]++;
	m->acked_pkts++;
	m->rnr_rounds = 0;
	c->ack_epoch++;
	c->retries = 0;
	c->retry_clock_ns = now_ns;
	if (before & MRC_TX_WND_LIMITED)
		acked_on_path[MRC_MAX_PATHS + s->path]++;
}

static void rearm_rto(struct mrc_conn *c, struct mrc_path *p, uint64_t now_ns)
{
	p->rto_deadline_ns = p->inflight ? now_ns + conn_path_rto(c, p) : 0;
}

static void advance_una(struct mrc_conn *c)
{
	while (mrc_seq_lt(c->snd_una, c->snd_nxt) &&
	       (mrc_tx_slot(&c->tx, c->snd_una)->flags & MRC_TX_ACKED)) {
		memset(mrc_tx_slot(&c->tx, c->snd_una), 0, sizeof(struct mrc_tx_slot));
		c->snd_una++;
	}
}

/* Acknowledges one PSN on evidence other than an ACK (a READ's complete response). */
static void acknowledge_psn(struct mrc_conn *c, uint32_t psn, uint64_t now_ns)
{
	uint32_t acked_on_path[2 * MRC_MAX_PATHS] = { 0 };
	struct mrc_tx_slot *s;

	if (!mrc_seq_le(c->snd_una, psn) || !mrc_seq_lt(psn, c->snd_nxt))
		return;
	s = mrc_tx_slot(&c->tx, psn);
	packet_acked(c, psn, acked_on_path, now_ns);
	rearm_rto(c, &c->paths[s->path], now_ns);
	advance_una(c);
}

/*
 * A queue stands before the receiver: the QP sends nothing before the echoed packet's
 * queueing delay has passed again, capped at two of the path's least round trips. Every sender
 * of an incast holds back what it would add to the queue meanwhile, so together they let it
 * drain at the link's full rate; the cap bounds what a stale measurement (a packet that
 * queued before the others held back) costs. Taking the later of the two ends, not their
 * sum, lets many ACKs report one queue without piling up pauses.
 */
static void drain(struct mrc_conn *c, const struct mrc_ack *ack, uint64_t now_ns)
{
	uint64_t min_rtt = c->paths[ack->echo_path].rtt.min_ns;
	uint64_t pause = ack->queue_delay_ns;

	/* no sample yet: nothing to bound a stale report by */
	if (rocev2(c) || !pause || !min_rtt)
		return;
	if (pause > 2 * min_rtt)
		pause = 2 * min_rtt;
	if (pause > MAX_DRAIN_PAUSE_NS)
		pause = MAX_DRAIN_PAUSE_NS;
	if (c->hold_until_ns < now_ns + pause)
		c->hold_until_ns = now_ns + pause;
	/* and the rate hint's bucket earns nothing while held: the hold withholds what the
	 * sender would add to the queue, not a burst for after it */
	if (c->pace_next_ns < now_ns + pause)
		c->pace_next_ns = now_ns + pause;
}

static int on_ack(struct mrc_conn *c, const struct mrc_packet *pkt, uint32_t cum,
		  const uint8_t *sack, uint64_t now_ns)
{
	/* [0, n): newly acknowledged per path; [n, 2n): of which sent window-limited */
	uint32_t acked_on_path[2 * MRC_MAX_PATHS] = { 0 };
	uint16_t echo_path = pkt->opcode == MRC_OP_ACK ? pkt->u.ack.echo_path : UINT16_MAX;

	/* An acknowledgement of PSNs never sent, or from before the window, is bogus, forged or
	 * misdirected: ignored whole, its rate hint and ECE too. */
	if (!conn_cum_plausible(c, cum))
		return MRC_DROP_BAD_ACK;
	if (sack && !rocev2(c))
		for (unsigned i = 1; i < MRC_SACK_BITS; i++)
			if (mrc_sack_test(sack, i) && mrc_seq_le(c->snd_nxt, cum + i))
				return MRC_DROP_BAD_ACK;
	for (uint32_t psn = c->snd_una; mrc_seq_lt(psn, cum); psn++)
		packet_acked(c, psn, acked_on_path, now_ns);
	if (sack && !rocev2(c)) {
		for (unsigned i = 1; i < MRC_SACK_BITS; i++) {
			uint32_t psn = cum + i;

			if (mrc_sack_test(sack, i) && mrc_seq_le(c->snd_una, psn))
				packet_acked(c, psn, acked_on_path, now_ns);
		}
	}
	advance_una(c);

	for (unsigned i = 0; i < c->n_paths; i++) {
		struct mrc_path *p = &c->paths[i];

		if (!acked_on_path[i])
			continue;
		/* growth only for packets the window held back */
		if (acked_on_path[MRC_MAX_PATHS + i])
			c->cfg.cc_ops->on_ack(&p->cc, &c->cfg.cc, acked_on_path[MRC_MAX_PATHS + i]);
		rearm_rto(c, p, now_ns);
	}
	if (pkt->opcode == MRC_OP_ACK && echo_path < c->n_paths) {
		struct mrc_path *p = &c->paths[echo_path];
		uint64_t sample;

		if (mrc_rtt_sample_from_echo(now_ns, pkt->u.ack.echo_ts, pkt->u.ack.ack_delay_ns,
					     &sample))
			mrc_rtt_update(&p->rtt, sample);
		if (pkt->flags & MRC_F_ECE) {
			p->ecn_since_rto = true;
			p->stats.ecn_echoes++;
			c->cfg.cc_ops->on_ecn(&p->cc, &c->cfg.cc, now_ns, p->rtt.srtt_ns);
		}
		c->rate_hint_kbps = pkt->u.ack.rate_hint_kbps;
		/* a hint of 0 forgives what an earlier one left owing, for good: a later hint
		 * starts from a bucket without that debt [R-37, R-107] (a hold stays) */
		if (!c->rate_hint_kbps && c->pace_next_ns > now_ns)
			c->pace_next_ns = c->hold_until_ns > now_ns ? c->hold_until_ns : now_ns;
		drain(c, &pkt->u.ack, now_ns);
	}
	if (!rocev2(c))
		c->lost_pending += mrc_loss_detect_reorder(&c->tx, c->snd_una, c->snd_nxt, c->paths,
							   c->cfg.reorder_threshold);
	conn_complete_messages(c);
	return MRC_DROP_NONE;
}

/* Go-back-N: everything unacknowledged is sent again, in PSN order. */
void conn_go_back_n(struct mrc_conn *c)
{
	for (uint32_t psn = c->snd_una; mrc_seq_lt(psn, c->snd_nxt); psn++) {
		struct mrc_tx_slot *s = mrc_tx_slot(&c->tx, psn);

		if (s->flags & (MRC_TX_ACKED | MRC_TX_LOST))
			continue;
		mrc_tx_leave_flight(s, c->paths);
		s->flags |= MRC_TX_LOST;
		c->lost_pending++;
	}
	c->stats.go_back_n++;
}

struct msg *conn_msg_of_psn(struct mrc_conn *c, uint32_t psn)
{
	if (mrc_seq_lt(psn, c->snd_una) || !mrc_seq_lt(psn, c->snd_nxt))
		return NULL;
	return &c->msgs[mrc_tx_slot(&c->tx, psn)->msg];
}

static struct msg *sq_msg_by_msn(struct mrc_conn *c, uint32_t msn)
{
	if (!mrc_seq_le(c->sq_head, msn) || !mrc_seq_lt(msn, c->sq_tail))
		return NULL;
	return sq_msg(c, msn);
}

/* The earliest end of an RNR wait still ahead, over every waiting message. */
void conn_refresh_rnr_wakeup(struct mrc_conn *c, uint64_t now_ns)
{
	c->rnr_wakeup_ns = 0;
	for (uint32_t msn = c->sq_head; msn != c->sq_tail; msn++) {
		uint64_t until = sq_msg(c, msn)->rnr_until_ns;

		if (until > now_ns && (!c->rnr_wakeup_ns || until < c->rnr_wakeup_ns))
			c->rnr_wakeup_ns = until;
	}
}

/* Holds a message's unacknowledged packets out of flight until `until`; no loss counts them. */
static void rnr_hold(struct mrc_conn *c, struct msg *m, uint64_t until)
{
	m->rnr_until_ns = until;
	for (uint32_t psn = c->snd_una; mrc_seq_lt(psn, c->snd_nxt); psn++) {
		struct mrc_tx_slot *s = mrc_tx_slot(&c->tx, psn);

		if (&c->msgs[s->msg] != m || (s->flags & MRC_TX_ACKED))
			continue;
		s->flags |= MRC_TX_RNR;
		if (s->flags & MRC_TX_LOST)
			continue;
		mrc_tx_leave_flight(s, c->paths);
		s->flags |= MRC_TX_LOST;
		c->lost_pending++;
	}
}

static bool consumes_receive(const struct msg *m)
{
	return m->kind == MSG_SQ && (m->wr.opcode == MRC_WR_SEND || m->wr.opcode == MRC_WR_SEND_IMM ||
				     m->wr.opcode == MRC_WR_SEND_INV ||
				     m->wr.opcode == MRC_WR_WRITE_IMM);
}

/*
 * RNR: the message waits at least retry_after, then all its unacknowledged packets go
 * again; they are out of flight meanwhile, so no loss detection counts them. One round per
 * wait; rounds beyond rnr_retry fail the request. Later messages that need a receive wait
 * with it: the receiver takes receives in order, so they cannot land before it does, and
 * retrying them meanwhile would spend their retry budget on a peer that is only slow.
 */
static void on_rnr(struct mrc_conn *c, struct msg *m, uint16_t retry_after, uint64_t now_ns)
{
	uint64_t wait = (retry_after ? retry_after : 1) * RETRY_UNIT_NS;

	if (now_ns < m->rnr_until_ns)
		return; /* another packet of the same round */
	if (c->cfg.rnr_retry != RNR_UNLIMITED && ++m->rnr_rounds > c->cfg.rnr_retry) {
		conn_enter_error(c, m, MRC_WC_RNR_RETRY_EXC_ERR, true);
		return;
	}
	rnr_hold(c, m, now_ns + wait);
	for (uint32_t msn = m->msn + 1; msn != c->sq_tail; msn++) {
		struct msg *later = sq_msg(c, msn);

		if (consumes_receive(later) && later->sent_pkts && later->rnr_until_ns < now_ns + wait)
			rnr_hold(c, later, now_ns + wait);
	}
	conn_refresh_rnr_wakeup(c, now_ns);
}

static int on_nak(struct mrc_conn *c, const struct mrc_packet *pkt, uint64_t now_ns)
{
	const struct mrc_nak *n = &pkt->u.nak;
	struct msg *m;
	int err;

	/* An RNR or error NAK names a packet still unacknowledged (by cum_psn or a SACK bit), at
	 * or above its cum_psn: one that does not is ignored whole, so a forgery needs the window
	 * twice. */
	if (n->kind != MRC_NAK_SEQ &&
	    (!mrc_seq_le(n->cum_psn, n->nak_psn) || !mrc_seq_le(c->snd_una, n->nak_psn) ||
	     !mrc_seq_lt(n->nak_psn, c->snd_nxt) ||
	     (mrc_tx_slot(&c->tx, n->nak_psn)->flags & MRC_TX_ACKED)))
		return MRC_DROP_BAD_ACK;
	err = on_ack(c, pkt, n->cum_psn, NULL, now_ns); /* a NAK is an ACK too */
	if (err)
		return err;
	switch (n->kind) {
	case MRC_NAK_SEQ:
		/* outside baseline mode only its cum_psn counts */
		if (rocev2(c))
			conn_go_back_n(c);
		return MRC_DROP_NONE;
	case MRC_NAK_RNR:
		m = conn_msg_of_psn(c, n->nak_psn);
		if (!m || m->kind != MSG_SQ)
			return MRC_DROP_BAD_ACK;
		on_rnr(c, m, n->retry_after, now_ns);
		return MRC_DROP_NONE;
	default: {
		uint8_t status = n->kind == MRC_NAK_REMOTE_ACCESS ? MRC_WC_REM_ACCESS_ERR :
				 n->kind == MRC_NAK_INVALID_REQ	  ? MRC_WC_REM_INV_REQ_ERR :
								    MRC_WC_REM_OP_ERR;

		/* The WR with that msn fails; the responder already left RTS. A
		 * NAK of one of our READ responses carries the peer's msn and names no WR of
		 * ours: the QP only enters ERR. */
		m = conn_msg_of_psn(c, n->nak_psn);
		conn_enter_error(c, m && m->kind == MSG_RR ? NULL : sq_msg_by_msn(c, n->msn), status,
			    false);
		return MRC_DROP_NONE;
	}
	}
}

/* --- receiving: sequenced packets (receiver side) ------------------------------------- */

static void queue_nak(struct mrc_conn *c, const struct mrc_rx_info *rx, uint8_t kind,
		      uint32_t psn, uint32_t msn, uint16_t retry_after)
{
	/* An error NAK is never displaced by an RNR or sequence NAK. */
	if (c->nak.pending && c->nak.kind >= MRC_NAK_REMOTE_ACCESS && kind < MRC_NAK_REMOTE_ACCESS)
		return;
	/* Nor the oldest RNR by a later one: the sender must hear of the message the receive
	 * queue is stuck at, and holds the later ones with it. */
	if (c->nak.pending && c->nak.kind == MRC_NAK_RNR && kind == MRC_NAK_RNR &&
	    mrc_seq_lt(c->nak.msn, msn))
		return;
	c->nak.pending = true;
	c->nak.kind = kind;
	c->nak.psn = psn;
	c->nak.msn = msn;
	c->nak.retry_after = retry_after;
	c->nak.plane = rx->plane;
	c->nak.sport = rx->sport;
	c->nak.ce = rx->ce; /* */
}

/* How many ACKs ago a path was last echoed. */
static uint16_t echo_age(const struct mrc_conn *c, uint16_t path_id)
{
	return (uint16_t)(c->acks_sent - c->echoed_at[path_id % ECHO_SLOTS]);
}

/*
 * The queueing delay a packet met on its way: its one-way delay above the least the
 * peer's packets have shown. The hosts' clocks differ by any offset, so only differences of
 * one-way delays mean anything; both are taken mod 2^32 ns and compared signed. The base is
 * the least of this epoch and the one before: clocks drift apart by microseconds a second,
 * and an older minimum would read as queue; after two epochs without a packet both are
 * forgotten. A sample far below the base (a packet held for seconds, a stepped clock) counts
 * as none. One base for all paths: a longer path's extra length reads as queue, but only on
 * a CE-marked packet, and the pause it asks for is capped; a base per path measured
 * worse, since in an incast each path's first packet has queued and sets its base too high.
 */
static uint32_t queue_delay(struct mrc_conn *c, uint32_t tx_ts, uint64_t now_ns)
{
	uint32_t owd = (uint32_t)now_ns - tx_ts;

	if (now_ns - c->owd_epoch_ns >= OWD_EPOCH_NS) {
		c->owd_has_base = c->owd_has_next && now_ns - c->owd_epoch_ns < 2 * OWD_EPOCH_NS;
		c->owd_base = c->owd_next;
		c->owd_has_next = false;
		c->owd_epoch_ns = now_ns;
	}
	if (c->owd_has_base && (int32_t)(owd - c->owd_base) < -OWD_IMPLAUSIBLE_NS)
		return 0;
	if (!c->owd_has_base || (int32_t)(owd - c->owd_base) < 0) {
		c->owd_base = owd;
		c->owd_has_base = true;
	}
	if (!c->owd_has_next || (int32_t)(owd - c->owd_next) < 0) {
		c->owd_next = owd;
		c->owd_has_next = true;
	}
	return owd - c->owd_base;
}

/*
 * Remembers what the next ACK echoes and decides how soon it goes.
 * Among the packets an ACK covers it echoes a CE-marked one first, else the one whose path
 * was echoed longest ago: every path gets RTT samples, even when coalescing would otherwise
 * always pick the same path of a round-robin spray.
 */
void conn_note_for_ack(struct mrc_conn *c, const struct mrc_rx_info *rx,
			 const struct mrc_packet *pkt, bool urgent, uint64_t now_ns)
{
	bool take = !c->ack_pending || (rx->ce && !c->echo.ce) ||
		    (rx->ce == c->echo.ce && echo_age(c, pkt->path_id) > echo_age(c, c->echo.path_id));
	uint32_t queued = queue_delay(c, pkt->tx_ts, now_ns);

	if (take) {
		c->echo.path_id = pkt->path_id;
		c->echo.tx_ts = pkt->tx_ts;
		/* a CE mark says the queue is a switch's, not the sender's own NIC's */
		c->echo.queue_delay_ns = rx->ce && !rocev2(c) ? queued : 0;
		c->echo.arrival_ns = now_ns;
		c->echo.plane = rx->plane;
		c->echo.sport = rx->sport;
		c->echo.ce = rx->ce;
	}
	if (pkt->flags & MRC_F_ACK_REQ)
		urgent = true;
	if (rx->ce)
		urgent = true;
	if (++c->ack_unacked >= c->cfg.ack_coalesce_packets)
		urgent = true;
	if (!c->ack_pending) {
		c->ack_pending = true;
		c->ack_deadline_ns = now_ns + c->cfg.ack_delay_ns;
	}
	if (urgent)
		c->ack_now = true;
}

static bool rsn_posted(const struct mrc_conn *c, uint32_t rsn)
{
	return mrc_seq_le(c->rq_head, rsn) && mrc_seq_lt(rsn, c->rq_tail);
}

void conn_note_reverse_port(struct mrc_conn *c, const struct mrc_rx_info *rx)
{
	for (unsigned i = 0; i < c->n_rev; i++)
		if (c->rev[i].plane == rx->plane && c->rev[i].sport == rx->sport)
			return;
	c->rev[c->rev_insert].plane = rx->plane;
	c->rev[c->rev_insert].sport = rx->sport;
	c->rev_insert = (uint8_t)((c->rev_insert + 1) % REVERSE_PORTS);
	if (c->n_rev < REVERSE_PORTS)
		c->n_rev++;
}

/*
 * The source port of an answer on a plane: the next of the peer's recent ports there, so
 * answers spray over every reverse route like data does forward, and one dark link in the
 * reverse direction costs a share of the ACKs instead of every ACK of a path.
 */
uint16_t conn_reverse_port(struct mrc_conn *c, uint8_t plane, uint16_t fallback)
{
	for (unsigned k = 0; k < c->n_rev; k++) {
		unsigned i = (c->rev_next + k) % c->n_rev;

		if (c->rev[i].plane == plane) {
			c->rev_next = (uint8_t)((i + 1) % c->n_rev);
			return c->rev[i].sport;
		}
	}
	return fallback;
}

static void deliver_receives(struct mrc_conn *c)
{
	while (c->rq_head != c->rq_tail) {
		struct rq_entry *e = rq_entry(c, c->rq_head);

		/* Not before cum_psn passes its last packet: every earlier message is then in
		 * place too, so a receive completion orders after the WRITEs before it. */
		if (!e->done || !mrc_seq_lt(e->last_psn, c->rxw.base))
			break;
		c->rq_head++;
		/* after every earlier message is in place, so those still reach the key */
		if (e->status == MRC_WC_SUCCESS && (e->wc_flags & MRC_WC_WITH_INV))
			c->cb.invalidate(c->user, e->imm);
		conn_complete_recv(c, e, e->status);
	}
}

/*
 * The response a READ or atomic request is owed, len bytes back to (sink_key, sink_addr),
 * in *out; its source the caller sets. There must be room for it: responses stay
 * until acknowledged, so under loss a conforming requester can find the room taken by
 * responses already sent; then the request is not accepted and comes again. Only a requester
 * with more than max_dest_rd_atomic requests unanswered at once breaks the rule: NAK
 * invalid_req.
 */
static int owe_response(struct mrc_conn *c, const struct mrc_rx_info *rx,
			const struct mrc_packet *pkt, uint32_t msn, uint8_t wr_opcode, uint32_t len,
			uint32_t sink_key, uint64_t sink_addr, struct msg **out)
{
	struct msg *m;

	if (c->rr_tail - c->rr_pkt >= (c->cfg.max_dest_rd_atomic ? c->cfg.max_dest_rd_atomic : 1)) {
		queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, msn, 0);
		return MRC_DROP_INVALID_REQ;
	}
	if (c->rr_tail - c->rr_head >= c->rr_depth)
		return MRC_DROP_RESPONDER_BUSY;
	m = rr_msg(c, c->rr_tail++);
	memset(m, 0, sizeof(*m));
	m->kind = MSG_RR;
	m->msn = msn;
	m->req_psn = pkt->psn;
	m->len = len;
	m->npkts = len ? (len + c->cfg.max_payload - 1) / c->cfg.max_payload : 1;
	m->wr.opcode = wr_opcode;
	m->wr.num_sge = len ? 1 : 0;
	m->wr.sge[0].length = len;
	m->wr.rkey = sink_key;
	m->wr.raddr = sink_addr;
	*out = m;
	return MRC_DROP_NONE;
}

/*
 * An ATOMIC_REQ: checked now, as a READ_REQ is, and owed a response that runs the
 * operation once cum_psn has passed the request (conn_send.c) and carries the original value
 * back in a READ_RESP. A duplicate never gets here: the window answers it, and the
 * response already owed is the one it gets, so no atomic runs twice.
 */
static int accept_atomic(struct mrc_conn *c, const struct mrc_rx_info *rx,
			 const struct mrc_packet *pkt)
{
	const struct mrc_atomic *a = &pkt->u.atomic;
	uint8_t *host;
	struct msg *m;
	int err;

	if (!(c->cfg.qp_access & MRC_ACCESS_REMOTE_ATOMIC) || a->raddr % 8) {
		queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, a->msn, 0); /* */
		return MRC_DROP_INVALID_REQ;
	}
	if (c->cb.mr_lookup(c->user, a->rkey, a->raddr, 8, MRC_ACCESS_REMOTE_ATOMIC, &host) != 0) {
		queue_nak(c, rx, MRC_NAK_REMOTE_ACCESS, pkt->psn, a->msn, 0);
		return MRC_DROP_REMOTE_ACCESS;
	}
	if ((uintptr_t)host % 8) {
		/* a region named by an iova not aligned like its memory */
		queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, a->msn, 0);
		return MRC_DROP_INVALID_REQ;
	}
	err = owe_response(c, rx, pkt, a->msn,
			   a->op == MRC_ATOMIC_CMP_SWAP ? MRC_WR_ATOMIC_CMP_SWAP
							: MRC_WR_ATOMIC_FETCH_ADD,
			   8, a->sink_key, a->sink_addr, &m);
	if (err)
		return err;
	m->wr.sge[0].host = &m->atomic_result;
	m->wr.compare_add = a->op == MRC_ATOMIC_CMP_SWAP ? a->compare : a->swap_add;
	m->wr.swap = a->swap_add;
	m->atomic_target = (uint64_t *)(void *)host;
	return MRC_DROP_NONE;
}

/* A message the receive it would consume refuses: NAK invalid_req, the receive fails so. */
static int refuse_receive(struct mrc_conn *c, const struct mrc_rx_info *rx,
			  const struct mrc_packet *pkt, struct rq_entry *e, uint8_t status)
{
	e->started = true;
	e->opcode = pkt->opcode;
	e->msg_len = pkt->u.data.msg_len;
	e->wc_opcode = MRC_WC_RECV;
	e->status = status;
	queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, pkt->u.data.msn, 0);
	return MRC_DROP_INVALID_REQ;
}

/*
 * Places one new sequenced packet. Returns MRC_DROP_NONE when placed (the caller then marks
 * it received), or why not (the caller then leaves its SACK bit clear).
 */
static int place(struct mrc_conn *c, const struct mrc_rx_info *rx, const struct mrc_packet *pkt,
		 uint64_t now_ns)
{
	const struct mrc_data *d = &pkt->u.data;
	uint8_t *host;

	switch (pkt->opcode) {
	case MRC_OP_WRITE:
	case MRC_OP_WRITE_IMM:
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM:
	case MRC_OP_SEND_INV: {
		bool consumes = pkt->opcode != MRC_OP_WRITE;
		/* what the completion carries: the immediate, or the key to invalidate */
		uint32_t carried = pkt->opcode == MRC_OP_SEND_INV ? d->rkey : d->imm;
		bool one_sided = pkt->opcode == MRC_OP_WRITE || pkt->opcode == MRC_OP_WRITE_IMM;
		struct rq_entry *e = NULL;

		if (one_sided && !(c->cfg.qp_access & MRC_ACCESS_REMOTE_WRITE)) {
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, d->msn, 0); /* */
			return MRC_DROP_INVALID_REQ;
		}
		if (consumes) {
			if (mrc_seq_lt(d->rsn, c->rq_head))
				return MRC_DROP_INVALID_REQ;
			if (!rsn_posted(c, d->rsn)) {
				queue_nak(c, rx, MRC_NAK_RNR, pkt->psn, d->msn,
					  c->cfg.rnr_retry_after);
				return MRC_DROP_RNR;
			}
			e = rq_entry(c, d->rsn);
			if (e->started &&
			    (e->msg_len != d->msg_len || e->opcode != pkt->opcode ||
			     (pkt->opcode != MRC_OP_SEND && e->imm != carried))) {
				/* packets of one message disagree */
				queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, d->msn, 0);
				return MRC_DROP_INVALID_REQ;
			}
			if (!e->started && pkt->opcode == MRC_OP_SEND_INV &&
			    (!c->cb.may_invalidate || c->cb.may_invalidate(c->user, d->rkey))) {
				/* not a key the peer may invalidate here */
				return refuse_receive(c, rx, pkt, e, MRC_WC_REM_INV_REQ_ERR);
			}
		}
		if (one_sided && pkt->payload_len &&
		    c->cb.mr_lookup(c->user, d->rkey, d->raddr, pkt->payload_len,
				    MRC_ACCESS_REMOTE_WRITE, &host) != 0) {
			queue_nak(c, rx, MRC_NAK_REMOTE_ACCESS, pkt->psn, d->msn, 0);
			return MRC_DROP_REMOTE_ACCESS;
		}
		if (!one_sided && d->msg_len > e->capacity) {
			/* the receive is too small: the requester sees an invalid request,
			 * the receive completes with a local length error */
			return refuse_receive(c, rx, pkt, e, MRC_WC_LOC_LEN_ERR);
		}
		if (one_sided && pkt->payload_len && !rx->placed)
			memcpy(host, pkt->payload, pkt->payload_len);
		else if (!one_sided)
			mrc_sge_copy(e->wr.sge, e->wr.num_sge, d->msg_off, NULL, pkt->payload,
				      pkt->payload_len);
		if (e) {
			if (!e->started) {
				e->started = true;
				e->opcode = pkt->opcode;
				e->msg_len = d->msg_len;
				e->wc_opcode = pkt->opcode == MRC_OP_WRITE_IMM ? MRC_WC_RECV_RDMA_WITH_IMM
									       : MRC_WC_RECV;
			}
			if (pkt->opcode != MRC_OP_SEND) {
				e->imm = carried;
				e->wc_flags |= pkt->opcode == MRC_OP_SEND_INV ? MRC_WC_WITH_INV
									     : MRC_WC_WITH_IMM;
			}
			if (pkt->flags & MRC_F_SOLICITED)
				e->wc_flags |= MRC_WC_SOLICITED;
			e->placed += pkt->payload_len;
			if (d->msg_off + pkt->payload_len == d->msg_len)
				e->last_psn = pkt->psn;
			if (e->placed == e->msg_len)
				e->done = true;
		}
		return MRC_DROP_NONE;
	}
	case MRC_OP_READ_REQ: {
		const struct mrc_read_req *r = &pkt->u.read_req;
		struct msg *m;
		int err;

		if (!(c->cfg.qp_access & MRC_ACCESS_REMOTE_READ)) {
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, r->msn, 0); /* */
			return MRC_DROP_INVALID_REQ;
		}
		if (r->length && c->cb.mr_lookup(c->user, r->rkey, r->raddr, r->length,
						 MRC_ACCESS_REMOTE_READ, &host) != 0) {
			queue_nak(c, rx, MRC_NAK_REMOTE_ACCESS, pkt->psn, r->msn, 0);
			return MRC_DROP_REMOTE_ACCESS;
		}
		err = owe_response(c, rx, pkt, r->msn, MRC_WR_READ, r->length, r->sink_key,
				   r->sink_addr, &m);
		if (!err)
			m->wr.sge[0].host = r->length ? host : NULL;
		return err;
	}
	case MRC_OP_ATOMIC_REQ:
		return accept_atomic(c, rx, pkt);
	case MRC_OP_READ_RESP: {
		struct msg *m = sq_msg(c, d->msn);

		/* The response must answer an outstanding READ of ours, byte for byte. */
		if (!mrc_seq_le(c->sq_head, d->msn) || !mrc_seq_lt(d->msn, c->sq_pkt) ||
		    m->msn != d->msn || !mrc_wr_read_like(m->wr.opcode) || m->sent_pkts == 0 ||
		    d->msg_len != m->len || (m->len && d->rkey != m->wr.sge[0].lkey) ||
		    (m->len && d->raddr != m->wr.sge[0].addr + d->msg_off)) {
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, d->msn, 0); /* */
			return MRC_DROP_BAD_READ_RESP;
		}
		if (!rx->placed)
			mrc_sge_copy(m->wr.sge, m->wr.num_sge, d->msg_off, NULL, pkt->payload,
				      pkt->payload_len);
		m->read_placed += pkt->payload_len;
		/* the responder is alive and answering: the READ watchdog starts over, count and
		 * clock, as on an acknowledgement */
		c->retries = 0;
		c->retry_clock_ns = now_ns;
		if (m->read_placed == m->len) {
			/* The response proves the request arrived, even if its ACK did not: the
			 * request's PSN is acknowledged here, before the READ completes and its
			 * slot can be reused, so a late ACK never lands on the next request. */
			acknowledge_psn(c, m->first_psn, now_ns);
			m->resp_complete = true;
		}
		return MRC_DROP_NONE;
	}
	}
	return MRC_DROP_OPCODE_REFUSED;
}

static int on_sequenced(struct mrc_conn *c, const struct mrc_rx_info *rx,
			const struct mrc_packet *pkt, uint64_t now_ns)
{
	enum mrc_rx_verdict v = mrc_rx_window_classify(&c->rxw, pkt->psn);
	bool last = !mrc_opcode_is_data(pkt->opcode) ||
		    pkt->u.data.msg_off + pkt->payload_len == pkt->u.data.msg_len;
	bool opens_gap, fills_gap;
	int err;

	conn_note_reverse_port(c, rx);
	if (rx->ce) {
		c->ce_count++;
		c->stats.rx_ce_packets++;
	}
	if (v == MRC_RX_BELOW || v == MRC_RX_DUPLICATE) {
		/* never placed twice; acknowledged at once so the sender stops resending */
		conn_note_for_ack(c, rx, pkt, true, now_ns);
		return MRC_DROP_DUPLICATE;
	}
	if (v == MRC_RX_ABOVE) {
		conn_note_for_ack(c, rx, pkt, true, now_ns);
		return MRC_DROP_ABOVE_WINDOW;
	}
	if (rocev2(c) && pkt->psn != c->rxw.base) {
		/* in-order acceptance: one NAK per hole, then silence until it fills */
		if (!c->seq_nak_sent || c->seq_nak_base != c->rxw.base) {
			queue_nak(c, rx, MRC_NAK_SEQ, pkt->psn, 0, 0);
			c->seq_nak_sent = true;
			c->seq_nak_base = c->rxw.base;
		}
		return MRC_DROP_OUT_OF_ORDER;
	}
	err = place(c, rx, pkt, now_ns);
	if (err) {
		/* Who refuses a request leaves RTS too; its NAK, then CLOSE, still go out
		 * [R-65, R-79]. */
		if (err == MRC_DROP_REMOTE_ACCESS || err == MRC_DROP_INVALID_REQ ||
		    err == MRC_DROP_BAD_READ_RESP)
			conn_enter_error(c, NULL, MRC_WC_WR_FLUSH_ERR, true);
		return err;
	}
	opens_gap = mrc_seq_lt(c->rx_highest + 1, pkt->psn);
	if (mrc_seq_lt(c->rx_highest, pkt->psn))
		c->rx_highest = pkt->psn;
	fills_gap = mrc_rx_window_mark(&c->rxw, pkt->psn) > 1;
	c->stats.rx_placed_packets++;
	c->stats.rx_placed_bytes += pkt->payload_len;
	if (c->cfg.rate_domain)
		mrc_rate_domain_on_rx(c->cfg.rate_domain, c->rate_entry, pkt->payload_len, rx->ce,
				      now_ns);
	/* at once on a new gap, a filled gap or a message's end; else coalesced */
	conn_note_for_ack(c, rx, pkt, last || opens_gap || fills_gap, now_ns);
	if (pkt->opcode == MRC_OP_READ_RESP)
		conn_complete_messages(c);
	deliver_receives(c);
	return MRC_DROP_NONE;
}

/* --- receiving: dispatch -------------------------------------------------------------- */

static int on_probe_reply(struct mrc_conn *c, const struct mrc_packet *pkt, uint64_t now_ns)
{
	uint16_t i = pkt->u.probe.echo_path;
	struct mrc_path *p;
	uint64_t sample;

	if (i >= c->n_paths)
		return MRC_DROP_STALE_PROBE;
	p = &c->paths[i];
	if (!path_probed(p) || p->probe_nonce != pkt->u.probe.nonce) /* */
		return MRC_DROP_STALE_PROBE;
	if (p->state == MRC_PATH_ACTIVE) {
		/* a suspect path answered: its loss was chance, it keeps its window */
		conn_reclaim_window(c, p);
		p->rto_streak = 0;
		p->probes_unanswered = 0;
		p->probe_backoff = 0;
		p->probe_deadline_ns = 0;
		if (mrc_rtt_sample_from_echo(now_ns, pkt->u.probe.echo_ts, 0, &sample))
			mrc_rtt_update(&p->rtt, sample);
		return MRC_DROP_NONE;
	}
	/* The path answers again: back in service with a fresh window. */
	conn_reclaim_window(c, p);
	p->state = MRC_PATH_ACTIVE;
	p->rto_streak = 0;
	p->probes_unanswered = 0;
	p->probe_backoff = 0;
	p->probe_deadline_ns = 0;
	p->stats.recoveries++;
	c->cfg.cc_ops->on_path_restart(&p->cc, &c->cfg.cc);
	mrc_rtt_init(&p->rtt);
	if (mrc_rtt_sample_from_echo(now_ns, pkt->u.probe.echo_ts, 0, &sample))
		mrc_rtt_update(&p->rtt, sample);
	return MRC_DROP_NONE;
}

/*
 * A probe is answered on the path it came by, whatever else is pending; at most
 * PROBE_REPLIES_PER_MS a millisecond, so PROBEs forged in the peer's name cannot turn the QP
 * into a reflector aimed at it: a peer probes each failed path once per backoff.
 */
void conn_queue_probe_reply(struct mrc_conn *c, const struct mrc_rx_info *rx,
			    const struct mrc_packet *pkt, uint64_t now_ns)
{
	conn_note_reverse_port(c, rx);
	if (now_ns - c->probe_replies_since_ns >= 1000000u) {
		c->probe_replies_since_ns = now_ns;
		c->probe_replies_recent = 0;
	}
	if (c->probe_replies_recent >= PROBE_REPLIES_PER_MS) {
		c->stats.probe_replies_limited++;
		return;
	}
	if (c->n_probe_replies < MAX_PROBE_REPLIES) {
		c->probe_replies_recent++;
		struct probe_reply *r = &c->probe_replies[c->n_probe_replies++];

		r->nonce = pkt->u.probe.nonce;
		r->ce = rx->ce;
		r->echo_ts = pkt->tx_ts;
		r->echo_path = pkt->path_id;
		r->plane = rx->plane;
		r->sport = rx->sport;
	}
}

/*
 * A sealed packet opened: *pkt becomes *opened, the same with its payload decrypted
 * into this thread's scratch, which lasts until the next packet is opened (the engine keeps
 * no pointer into a packet once it returns).
 */
static bool open_sealed(const struct mrc_conn *c, const struct mrc_packet **pkt,
			struct mrc_packet *opened)
{
	static _Thread_local uint8_t plain[MRC_WIRE_MAX_PACKET];

	if ((*pkt)->payload_len > sizeof(plain) || !mrc_auth_open(&c->cfg.seal_rx, *pkt, plain))
		return false;
	*opened = **pkt;
	opened->payload = plain;
	*pkt = opened;
	return true;
}

int mrc_conn_recv_packet(struct mrc_conn *c, const struct mrc_rx_info *rx,
			 const struct mrc_packet *pkt, uint64_t now_ns)
{
	struct mrc_packet opened;
	int err;

	c->stats.rx_packets++;
	if (pkt->dst_qpn != c->cfg.local_qpn) {
		err = MRC_DROP_WRONG_QPN;
	} else if (c->cfg.auth && !rx->placed &&
		   !(c->cfg.seal ? open_sealed(c, &pkt, &opened)
				 : mrc_auth_packet_ok(&c->cfg.auth_rx, pkt))) {
		/* before any field is believed: forged, replayed from another QP, reflected, or
		 * not sealed where it must be (or the other way) */
		err = MRC_DROP_UNAUTHENTICATED;
	} else if (c->state == MRC_QPS_CLOSING || c->state == MRC_QPS_CLOSED) {
		err = conn_closing_recv(c, rx, pkt, now_ns);
	} else if (c->state != MRC_QPS_RTS) {
		err = MRC_DROP_QP_STATE;
	} else if (mrc_opcode_is_sequenced(pkt->opcode)) {
		err = on_sequenced(c, rx, pkt, now_ns);
	} else {
		switch (pkt->opcode) {
		case MRC_OP_ACK:
			err = on_ack(c, pkt, pkt->u.ack.cum_psn, pkt->u.ack.sack, now_ns);
			break;
		case MRC_OP_NAK:
			err = on_nak(c, pkt, now_ns);
			break;
		case MRC_OP_PROBE:
			conn_queue_probe_reply(c, rx, pkt, now_ns);
			err = MRC_DROP_NONE;
			break;
		case MRC_OP_PROBE_REPLY:
			err = on_probe_reply(c, pkt, now_ns);
			break;
		case MRC_OP_CLOSE:
			/* only a CLOSE that knows what we sent ends the QP */
			if (!conn_cum_plausible(c, pkt->u.close.cum_psn)) {
				err = MRC_DROP_BAD_ACK;
				break;
			}
			conn_enter_error(c, NULL, MRC_WC_WR_FLUSH_ERR, false);
			err = MRC_DROP_NONE;
			break;
		default:
			err = MRC_DROP_OPCODE_REFUSED;
			break;
		}
	}
	conn_drop(c, err);
	return err;
}

int mrc_conn_recv(struct mrc_conn *c, const struct mrc_rx_info *rx, const void *buf, size_t len,
		  uint64_t now_ns)
{
	struct mrc_packet pkt;
	int err = mrc_decode(buf, len, &pkt);

	if (err) {
		/* malformed: counted, never acted on, never answered */
		c->stats.rx_packets++;
		conn_drop(c, err);
		return err;
	}
	return mrc_conn_recv_packet(c, rx, &pkt, now_ns);
}
