/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A destroyed QP's last duty (SPEC 11.4). The application that destroys a QP has usually
 * seen the completion of the last message its peer sent; the peer has not necessarily seen
 * the acknowledgement of it. On a network that loses packets that acknowledgement can be
 * lost, and a peer resending into a QP that no longer exists waits out its whole retry budget
 * and fails the work it had already delivered. So the connection outlives the QP: it sends at
 * once the acknowledgement it owed, answers every resend of what it received and every probe,
 * and answers data it never received (work the peer posted to a QP that is gone) with CLOSE,
 * so the peer fails that work at once instead of resending it. It takes and completes nothing.
 * It ends when the peer has been quiet for longer than its resends wait, or when the peer
 * says CLOSE itself.
 */
#include "conn.h"
#include "conn_impl.h"

#include <string.h>

#include "sack.h"
#include "seq.h"

void mrc_conn_close(struct mrc_conn *c, uint64_t now_ns)
{
	c->last_now_ns = now_ns;
	if (c->state != MRC_QPS_RTS) {
		/* an error QP has nothing to answer for: what it still owes (its error NAK, its
		 * CLOSE) goes out, then it is done */
		c->state = MRC_QPS_CLOSED;
		return;
	}
	/* verbs: destroying a QP discards its work without completions */
	c->sq_head = c->sq_pkt = c->sq_tail;
	c->rr_head = c->rr_pkt = c->rr_tail;
	c->cur_msg = -1;
	c->reads_outstanding = 0;
	c->rq_head = c->rq_tail;
	for (unsigned i = 0; i < c->n_paths; i++) {
		c->paths[i].rto_deadline_ns = 0;
		c->paths[i].probe_deadline_ns = 0;
		c->paths[i].inflight = 0;
	}
	memset(c->tx, 0, sizeof(c->tx));
	c->snd_una = c->snd_nxt;
	c->lost_pending = 0;
	c->nak.pending = false; /* an RNR or sequence NAK asks for a resend nobody will take */
	/* what arrived is acknowledged now, not after the delay */
	if (c->ack_pending)
		c->ack_now = true;
	c->state = MRC_QPS_CLOSING;
	c->linger_end_ns = now_ns + c->cfg.linger_max_ns;
	c->linger_quiet_until_ns = now_ns + c->cfg.linger_quiet_ns;
	if (c->linger_quiet_until_ns > c->linger_end_ns)
		c->linger_quiet_until_ns = c->linger_end_ns;
}

int conn_closing_recv(struct mrc_conn *c, const struct mrc_rx_info *rx,
		      const struct mrc_packet *pkt, uint64_t now_ns)
{
	enum mrc_rx_verdict v;

	if (c->state == MRC_QPS_CLOSED)
		return MRC_DROP_QP_STATE;
	/* the peer still speaks: it may still lack an answer */
	c->linger_quiet_until_ns = now_ns + c->cfg.linger_quiet_ns;
	if (c->linger_quiet_until_ns > c->linger_end_ns)
		c->linger_quiet_until_ns = c->linger_end_ns;
	if (mrc_opcode_is_sequenced(pkt->opcode)) {
		v = mrc_rx_window_classify(&c->rxw, pkt->psn);
		conn_note_reverse_port(c, rx);
		if (v == MRC_RX_BELOW || v == MRC_RX_DUPLICATE) {
			/* received before the QP went: acknowledged again, at once */
			conn_note_for_ack(c, rx, pkt, true, now_ns);
			return MRC_DROP_DUPLICATE;
		}
		/* nobody will ever take it: the peer's QP must fail it, not resend it */
		c->close_pending = true;
		c->close_reason = MRC_CLOSE_NORMAL;
		c->last_nak_valid = true; /* the CLOSE goes back the way the data came */
		c->last_nak_plane = rx->plane;
		c->last_nak_sport = rx->sport;
		return MRC_DROP_QP_CLOSED;
	}
	switch (pkt->opcode) {
	case MRC_OP_PROBE:
		/* a peer that probes still has packets out: its paths must not fail meanwhile */
		conn_queue_probe_reply(c, rx, pkt);
		return MRC_DROP_NONE;
	case MRC_OP_CLOSE:
		/* the peer's QP is gone too: nothing left to answer for, and no CLOSE in answer
		 * to a CLOSE */
		c->state = MRC_QPS_CLOSED;
		c->close_pending = false;
		c->ack_pending = c->ack_now = false;
		c->n_probe_replies = 0;
		return MRC_DROP_NONE;
	default:
		/* ACK, NAK, probe replies: about sends that were dropped with the QP */
		return MRC_DROP_QP_STATE;
	}
}

bool conn_closing_send(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		       uint64_t now_ns, size_t *len)
{
	if (c->state == MRC_QPS_CLOSING) {
		if (c->n_probe_replies)
			return conn_send_probe_reply(c, buf, cap, tx, now_ns, len);
		if (c->ack_now || (c->ack_pending && now_ns >= c->ack_deadline_ns))
			return conn_send_ack(c, buf, cap, tx, now_ns, len);
	}
	if (c->nak.pending)
		return conn_send_nak(c, buf, cap, tx, now_ns, len);
	if (c->close_pending)
		return conn_send_close(c, buf, cap, tx, now_ns, len);
	return false;
}

uint64_t conn_closing_next_timeout(const struct mrc_conn *c)
{
	uint64_t t;

	if (c->state != MRC_QPS_CLOSING)
		return UINT64_MAX;
	t = c->linger_quiet_until_ns;
	if (c->ack_pending && c->ack_deadline_ns < t)
		t = c->ack_deadline_ns;
	return t;
}

void conn_closing_on_timeout(struct mrc_conn *c, uint64_t now_ns)
{
	if (c->state != MRC_QPS_CLOSING)
		return;
	if (c->ack_pending && now_ns >= c->ack_deadline_ns)
		c->ack_now = true;
	if (now_ns >= c->linger_quiet_until_ns) {
		/* quiet for longer than the peer waits between resends: it heard us */
		c->state = MRC_QPS_CLOSED;
		c->ack_pending = c->ack_now = false;
		c->n_probe_replies = 0;
	}
}
