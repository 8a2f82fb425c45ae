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

/* A destroyed QP calls back nobody, even by mistake: its QP slot may hold another by now. */
static int closed_mr_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len,
			    unsigned access, uint8_t **host)
{
	(void)user, (void)key, (void)addr, (void)len, (void)access, (void)host;
	return -1;
}

static void closed_complete(void *user, bool from_recv_queue, const struct mrc_completion *wc)
{
	(void)user, (void)from_recv_queue, (void)wc;
}

/*
 * CLOSE goes back by (plane, sport), after an ACK of everything received on the same path:
 * the peer completes what was delivered before CLOSE flushes the rest.
 */
static void close_via(struct mrc_conn *c, uint8_t plane, uint16_t sport)
{
	c->close_pending = true;
	c->close_reason = MRC_CLOSE_NORMAL;
	c->close_ack_first = true;
	c->last_nak_valid = true; /* where the CLOSE goes (send_close) */
	c->last_nak_plane = plane;
	c->last_nak_sport = sport;
}

void mrc_conn_close(struct mrc_conn *c, uint64_t now_ns)
{
	uint64_t quiet = c->cfg.linger_quiet_ns;
	uint64_t rnr_wait = (uint64_t)c->cfg.rnr_retry_after * RETRY_UNIT_NS;
	bool owed_reads = c->rr_head != c->rr_tail;

	c->last_now_ns = now_ns;
	c->cb = (struct mrc_conn_callbacks){ .mr_lookup = closed_mr_lookup,
					     .complete = closed_complete };
	c->user = NULL;
	/* its share of the host's receive capacity goes to the QPs still working */
	if (c->cfg.rate_domain && c->rate_entry >= 0) {
		mrc_rate_domain_leave(c->cfg.rate_domain, c->rate_entry);
		c->rate_entry = -1;
	}
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
	mrc_tx_ring_clear(&c->tx);
	c->snd_una = c->snd_nxt;
	c->lost_pending = 0;
	/* an RNR or sequence NAK asks for a resend nobody will take */
	if (c->nak.kind < MRC_NAK_REMOTE_ACCESS)
		c->nak.pending = false;
	/* what arrived is acknowledged now, not after the delay */
	if (c->ack_pending)
		c->ack_now = true;
	/* READ responses the peer waits for will never come, and its READ, acknowledged, has no
	 * timer of its own left: it must hear CLOSE */
	c->reads_dropped = owed_reads;
	if (owed_reads)
		close_via(c, c->echo.plane, conn_reverse_port(c, c->echo.plane, c->echo.sport));
	c->state = MRC_QPS_CLOSING;
	/* a peer we held back with an RNR NAK waits that long before it resends */
	if (rnr_wait + c->cfg.rto.max_rto_ns > quiet)
		quiet = rnr_wait + c->cfg.rto.max_rto_ns;
	c->linger_end_ns = now_ns + c->cfg.linger_max_ns;
	c->linger_quiet_ns = quiet;
	c->linger_quiet_until_ns = now_ns + quiet;
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
	c->linger_quiet_until_ns = now_ns + c->linger_quiet_ns;
	if (c->linger_quiet_until_ns > c->linger_end_ns)
		c->linger_quiet_until_ns = c->linger_end_ns;
	if (mrc_opcode_is_sequenced(pkt->opcode)) {
		v = mrc_rx_window_classify(&c->rxw, pkt->psn);
		conn_note_reverse_port(c, rx);
		conn_note_for_ack(c, rx, pkt, true, now_ns);
		if ((v == MRC_RX_BELOW || v == MRC_RX_DUPLICATE) &&
		    !((pkt->opcode == MRC_OP_READ_REQ || pkt->opcode == MRC_OP_ATOMIC_REQ) &&
		      c->reads_dropped)) {
			/* received before the QP went: acknowledged again, at once */
			return MRC_DROP_DUPLICATE;
		}
		/* nobody will ever take it (or answer the READ): the peer's QP must fail it,
		 * not resend it */
		close_via(c, rx->plane, rx->sport);
		return MRC_DROP_QP_CLOSED;
	}
	switch (pkt->opcode) {
	case MRC_OP_PROBE:
		/* a peer that probes still has packets out: its paths must not fail meanwhile */
		conn_queue_probe_reply(c, rx, pkt, now_ns);
		return MRC_DROP_NONE;
	case MRC_OP_CLOSE:
		if (!conn_cum_plausible(c, pkt->u.close.cum_psn))
			return MRC_DROP_BAD_ACK; /* */
		/* the peer's QP is gone too: nothing left to answer for, and no CLOSE in answer
		 * to a CLOSE */
		c->state = MRC_QPS_CLOSED;
		c->close_pending = c->close_ack_first = false;
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
		if (c->close_pending && c->close_ack_first) {
			/* the ACK the CLOSE follows, on the CLOSE's own path so it arrives first */
			c->close_ack_first = false;
			if (conn_send_ack(c, buf, cap, tx, now_ns, len)) {
				tx->plane = c->last_nak_plane;
				tx->sport = c->last_nak_sport;
				return true;
			}
		}
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
		c->close_ack_first = false;
		c->n_probe_replies = 0;
	}
}
