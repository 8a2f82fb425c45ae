/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection engine, sending: ACKs, NAKs, probes and their replies, CLOSE, and data:
 * messages cut into packets on the path the scheduler picks, lost ones first, paced to the
 * receiver's rate hint. Section numbers refer to docs/SPEC.md.
 */
#include "conn.h"
#include "conn_impl.h"

#include <stddef.h>
#include <string.h>

#include "seq.h"

/* --- sending -------------------------------------------------------------------------- */

static bool encode(struct mrc_packet *pkt, void *buf, size_t cap, size_t *len)
{
	return mrc_encode(pkt, buf, cap, len) == MRC_WIRE_OK;
}

static void set_tx(struct mrc_tx_info *tx, uint8_t plane, uint16_t sport, uint16_t path_id,
		   uint8_t opcode)
{
	tx->plane = plane;
	tx->sport = sport;
	tx->path_id = path_id;
	tx->opcode = opcode;
}

static void init_packet(const struct mrc_conn *c, struct mrc_packet *pkt, uint8_t opcode,
			uint16_t path_id, uint64_t now_ns)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->opcode = opcode;
	pkt->dst_qpn = c->cfg.remote_qpn;
	pkt->path_id = path_id;
	pkt->tx_ts = (uint32_t)now_ns;
	pkt->flags = c->cfg.auth ? MRC_F_AUTH | (c->cfg.seal ? MRC_F_SEALED : 0) : 0;
}

bool conn_send_ack(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		     uint64_t now_ns, size_t *len)
{
	struct mrc_packet pkt;
	uint64_t held = now_ns - c->echo.arrival_ns;

	init_packet(c, &pkt, MRC_OP_ACK, c->echo.path_id, now_ns);
	pkt.flags |= c->echo.ce ? MRC_F_ECE : 0;
	pkt.u.ack.cum_psn = c->rxw.base;
	pkt.u.ack.echo_ts = c->echo.tx_ts;
	pkt.u.ack.ack_delay_ns = held > UINT32_MAX ? UINT32_MAX : (uint32_t)held;
	pkt.u.ack.rate_hint_kbps =
		mrc_rate_domain_hint(c->cfg.rate_domain, c->rate_entry, now_ns);
	pkt.u.ack.echo_path = c->echo.path_id;
	pkt.u.ack.ce_count = c->ce_count;
	pkt.u.ack.queue_delay_ns = c->echo.queue_delay_ns;
	if (!rocev2(c))
		mrc_rx_window_sack(&c->rxw, pkt.u.ack.sack);
	if (!encode(&pkt, buf, cap, len))
		return false;
	set_tx(tx, c->echo.plane, conn_reverse_port(c, c->echo.plane, c->echo.sport),
	       c->echo.path_id, MRC_OP_ACK);
	c->echoed_at[c->echo.path_id % ECHO_SLOTS] = ++c->acks_sent;
	c->ack_pending = c->ack_now = false;
	c->ack_unacked = 0;
	c->echo.ce = false;
	c->echo.queue_delay_ns = 0;
	c->stats.tx_acks++;
	return true;
}

bool conn_send_nak(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		     uint64_t now_ns, size_t *len)
{
	struct mrc_packet pkt;

	init_packet(c, &pkt, MRC_OP_NAK, 0, now_ns);
	pkt.flags |= c->nak.ce ? MRC_F_ECE : 0;
	pkt.u.nak.cum_psn = c->rxw.base;
	pkt.u.nak.nak_psn = c->nak.psn;
	pkt.u.nak.msn = c->nak.msn;
	pkt.u.nak.kind = c->nak.kind;
	pkt.u.nak.retry_after = c->nak.kind == MRC_NAK_RNR ? c->nak.retry_after : 0;
	if (!encode(&pkt, buf, cap, len))
		return false;
	set_tx(tx, c->nak.plane, conn_reverse_port(c, c->nak.plane, c->nak.sport), 0, MRC_OP_NAK);
	/* a CLOSE that follows takes the same route, so it cannot overtake the NAK */
	c->last_nak_plane = tx->plane;
	c->last_nak_sport = tx->sport;
	c->last_nak_valid = true;
	c->nak.pending = false;
	c->stats.tx_naks++;
	return true;
}

static uint16_t fresh_sport(struct mrc_conn *c, const struct mrc_path *self)
{
	for (;;) {
		uint16_t sport = (uint16_t)(MRC_UDP_SPORT_MIN +
					    next_random(c) % (MRC_UDP_SPORT_MAX - MRC_UDP_SPORT_MIN + 1));
		bool taken = false;

		for (unsigned i = 0; i < c->n_paths; i++)
			taken |= c->paths[i].plane == self->plane && c->paths[i].sport == sport;
		if (!taken)
			return sport;
	}
}

static bool any_usable_path(const struct mrc_conn *c)
{
	for (unsigned i = 0; i < c->n_paths; i++)
		if (mrc_path_usable(&c->paths[i]))
			return true;
	return false;
}

static bool send_probe(struct mrc_conn *c, unsigned i, void *buf, size_t cap,
		       struct mrc_tx_info *tx, uint64_t now_ns, size_t *len)
{
	struct mrc_path *p = &c->paths[i];
	struct mrc_packet pkt;
	uint64_t interval;

	if (p->probes_unanswered >= c->cfg.redraw_after_probes) {
		/* the route behind this source port stays dark: hash onto another */
		p->sport = fresh_sport(c, p);
		p->state = MRC_PATH_PROBING;
		p->probes_unanswered = 0;
		p->probe_backoff = 0;
		mrc_rtt_init(&p->rtt);
		p->stats.redraws++;
	}
	init_packet(c, &pkt, MRC_OP_PROBE, (uint16_t)i, now_ns);
	p->probe_nonce = next_random(c);
	pkt.u.probe.nonce = p->probe_nonce;
	if (!encode(&pkt, buf, cap, len))
		return false;
	set_tx(tx, p->plane, p->sport, (uint16_t)i, MRC_OP_PROBE);
	p->probes_unanswered++;
	/* one probe at a time, every RTO, doubling while unanswered */
	interval = conn_path_rto(c, p);
	for (unsigned k = 0; k < p->probe_backoff && interval < c->cfg.rto.max_rto_ns; k++)
		interval *= 2;
	p->probe_deadline_ns = now_ns + (interval < c->cfg.rto.max_rto_ns ? interval
									  : c->cfg.rto.max_rto_ns);
	if (p->probe_backoff < 16)
		p->probe_backoff++;
	p->stats.probes_sent++;
	c->stats.tx_probes++;
	/* With no usable path, the outstanding work's retry clock runs. */
	if (!any_usable_path(c) && work_outstanding(c))
		conn_note_dead_round(c, now_ns);
	return true;
}

bool conn_send_probe_reply(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
			     uint64_t now_ns, size_t *len)
{
	struct probe_reply r = c->probe_replies[0];
	struct mrc_packet pkt;

	memmove(&c->probe_replies[0], &c->probe_replies[1],
		(c->n_probe_replies - 1) * sizeof(c->probe_replies[0]));
	c->n_probe_replies--;
	init_packet(c, &pkt, MRC_OP_PROBE_REPLY, r.echo_path, now_ns);
	pkt.flags |= r.ce ? MRC_F_ECE : 0; /* */
	pkt.u.probe.nonce = r.nonce;
	pkt.u.probe.echo_ts = r.echo_ts;
	pkt.u.probe.echo_path = r.echo_path;
	if (!encode(&pkt, buf, cap, len))
		return false;
	set_tx(tx, r.plane, conn_reverse_port(c, r.plane, r.sport), r.echo_path,
	       MRC_OP_PROBE_REPLY);
	return true;
}

bool conn_send_close(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		       uint64_t now_ns, size_t *len)
{
	struct mrc_packet pkt;

	init_packet(c, &pkt, MRC_OP_CLOSE, 0, now_ns);
	pkt.u.close.reason = c->close_reason;
	pkt.u.close.cum_psn = c->rxw.base;
	c->close_pending = false;
	if (!encode(&pkt, buf, cap, len))
		return false;
	if (c->last_nak_valid)
		set_tx(tx, c->last_nak_plane, c->last_nak_sport, 0, MRC_OP_CLOSE);
	else
		set_tx(tx, c->paths[0].plane, c->paths[0].sport, 0, MRC_OP_CLOSE);
	return true;
}

/*
 * The scheduler's pick; a retransmission avoids the path that lost it when it can,
 * and never goes back to that path while the path is suspect after an RTO: it would
 * most likely be lost again, and it is usually the oldest packet, the one holding the window.
 */
static int pick_path(struct mrc_conn *c, int avoid)
{
	int other;

	if (avoid < 0)
		return mrc_sched_pick(c->paths, c->n_paths, &c->cursor);
	other = mrc_sched_pick_except(c->paths, c->n_paths, &c->cursor, avoid);
	if (other >= 0)
		return other;
	/* back to the losing path only if it has room, which a suspect path never has */
	return mrc_sched_pick(c->paths, c->n_paths, &c->cursor);
}

static uint8_t wire_opcode(const struct msg *m)
{
	if (m->kind == MSG_RR)
		return MRC_OP_READ_RESP;
	switch (m->wr.opcode) {
	case MRC_WR_WRITE:
		return MRC_OP_WRITE;
	case MRC_WR_WRITE_IMM:
		return MRC_OP_WRITE_IMM;
	case MRC_WR_SEND:
		return MRC_OP_SEND;
	case MRC_WR_SEND_IMM:
		return MRC_OP_SEND_IMM;
	case MRC_WR_SEND_INV:
		return MRC_OP_SEND_INV;
	case MRC_WR_READ:
		return MRC_OP_READ_REQ;
	default:
		return MRC_OP_ATOMIC_REQ;
	}
}

/*
 * Whether the packet about to leave on path is the last the sender can send before an
 * acknowledgement: it fills the path's window or the peer's 256-PSN window. It asks for an
 * ACK at once, so a receiver that coalesces by count alone (a fast path without timers)
 * never leaves a stalled sender waiting for its RTO.
 */
static bool fills_window(const struct mrc_conn *c, unsigned path)
{
	return mrc_path_free_window(&c->paths[path]) <= 1 ||
	       mrc_seq_diff(c->snd_nxt + 1, c->snd_una) >= MRC_SACK_BITS;
}

/* Where len bytes at offset off of a scatter list lie in one piece: there; else NULL. */
static const uint8_t *sge_piece(const struct mrc_sge *sge, unsigned n, uint32_t off, uint32_t len)
{
	for (unsigned i = 0; i < n; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		return sge[i].length - off >= len ? (const uint8_t *)sge[i].host + off : NULL;
	}
	return NULL;
}

/*
 * Builds the packet for psn of message m into buf; every field derives from (m, psn). Its
 * payload is copied behind the headers, or with payload_by_reference left where it is and
 * named in tx (*len then counts the headers alone); *payload_len says how long it is.
 */
static bool build_data(struct mrc_conn *c, const struct msg *m, uint32_t psn, uint16_t path_id,
		       bool retransmit, void *buf, size_t cap, uint64_t now_ns, size_t *len,
		       struct mrc_tx_info *tx, size_t *payload_len)
{
	const uint8_t *piece = NULL;
	struct mrc_packet pkt;
	uint8_t op = wire_opcode(m);
	uint32_t k = psn - m->first_psn;
	uint32_t off = k * (uint32_t)c->cfg.max_payload;
	size_t hdr = mrc_header_len(op);

	init_packet(c, &pkt, op, path_id, now_ns);
	pkt.psn = psn;
	if (retransmit)
		pkt.flags |= MRC_F_RETX;
	if (rocev2(c))
		pkt.flags |= MRC_F_INORDER;
	if (k + 1 == m->npkts || fills_window(c, path_id))
		pkt.flags |= MRC_F_ACK_REQ;
	if (m->wr.flags & MRC_SEND_SOLICITED)
		pkt.flags |= MRC_F_SOLICITED; /* on every packet of the message */
	if (op == MRC_OP_READ_REQ) {
		pkt.u.read_req.msn = m->msn;
		pkt.u.read_req.length = m->len;
		pkt.u.read_req.rkey = m->wr.rkey;
		pkt.u.read_req.raddr = m->wr.raddr;
		if (m->len) {
			pkt.u.read_req.sink_key = m->wr.sge[0].lkey;
			pkt.u.read_req.sink_addr = m->wr.sge[0].addr;
		}
		*payload_len = 0;
		return encode(&pkt, buf, cap, len);
	}
	if (op == MRC_OP_ATOMIC_REQ) {
		bool cas = m->wr.opcode == MRC_WR_ATOMIC_CMP_SWAP;

		pkt.u.atomic.msn = m->msn;
		pkt.u.atomic.op = cas ? MRC_ATOMIC_CMP_SWAP : MRC_ATOMIC_FETCH_ADD;
		pkt.u.atomic.rkey = m->wr.rkey;
		pkt.u.atomic.raddr = m->wr.raddr;
		pkt.u.atomic.sink_key = m->wr.sge[0].lkey;
		pkt.u.atomic.sink_addr = m->wr.sge[0].addr;
		pkt.u.atomic.swap_add = cas ? m->wr.swap : m->wr.compare_add;
		pkt.u.atomic.compare = cas ? m->wr.compare_add : 0;
		*payload_len = 0;
		return encode(&pkt, buf, cap, len);
	}
	pkt.payload_len = (uint16_t)(m->len - off < c->cfg.max_payload ? m->len - off
									 : c->cfg.max_payload);
	*payload_len = pkt.payload_len;
	if (hdr + pkt.payload_len > cap)
		return false;
	if (c->cfg.payload_by_reference && !c->cfg.seal && pkt.payload_len)
		piece = sge_piece(m->wr.sge, m->wr.num_sge, off, pkt.payload_len);
	if (piece) {
		pkt.payload = piece;
	} else {
		mrc_sge_copy(m->wr.sge, m->wr.num_sge, off, (uint8_t *)buf + hdr, NULL,
			      pkt.payload_len);
		pkt.payload = (const uint8_t *)buf + hdr;
	}
	pkt.u.data.msn = m->msn;
	pkt.u.data.rsn = m->rsn;
	pkt.u.data.msg_len = m->len;
	pkt.u.data.msg_off = off;
	if (op == MRC_OP_WRITE || op == MRC_OP_WRITE_IMM || op == MRC_OP_READ_RESP) {
		pkt.u.data.rkey = m->wr.rkey;
		pkt.u.data.raddr = m->wr.raddr + off;
	}
	if (op == MRC_OP_SEND_INV)
		pkt.u.data.rkey = m->wr.rkey; /* on every packet, as imm is */
	if (op == MRC_OP_WRITE_IMM || op == MRC_OP_SEND_IMM)
		pkt.u.data.imm = m->wr.imm;
	if (!piece)
		return encode(&pkt, buf, cap, len);
	if (mrc_encode_headers(&pkt, buf, cap, len) != MRC_WIRE_OK)
		return false;
	tx->payload = piece;
	tx->payload_len = pkt.payload_len;
	return true;
}

/*
 * The rate hint as a token bucket on payload bytes: pace_next_ns is when the
 * next packet may leave. A full bucket (depth max(2 packets, 10 us at the hinted rate)) lets
 * out what it holds and no more: a packet leaving at now takes its own gap out of at most
 * depth worth of credit, so pace_next lags now by at most depth less that gap.
 */
static void pace(struct mrc_conn *c, size_t payload, uint64_t now_ns)
{
	uint64_t kbps = c->rate_hint_kbps;
	uint64_t gap, depth_bytes, depth_ns;

	if (!kbps || rocev2(c)) /* RoCEv2 has no rate hint */
		return;
	gap = (uint64_t)payload * 8 * 1000000 / kbps;
	depth_bytes = kbps / 800; /* 10 us at kbps: kbps x 1000 / 8 bytes a second, x 1e-5 */
	if (depth_bytes < 2u * c->cfg.max_payload)
		depth_bytes = 2u * c->cfg.max_payload;
	depth_ns = depth_bytes * 8 * 1000000 / kbps;
	/* depth holds two packets at least, so more than this one's gap */
	if (c->pace_next_ns + depth_ns - gap < now_ns)
		c->pace_next_ns = now_ns - (depth_ns - gap);
	c->pace_next_ns += gap;
}

/*
 * Counts a retry when a retry timeout (verbs' timeout) has passed on the QP's retry clock
 * without progress, and restarts the clock; true when that exhausts the budget. Losses are
 * repaired per path within RTOs, far faster; the budget is what a peer that stops answering
 * gets, so a peer kept off its CPU for a few RTOs does not end the QP. A timeout
 * of 0 is verbs' infinite one.
 */
bool conn_retry_exhausted(struct mrc_conn *c, uint64_t now_ns)
{
	if (!c->cfg.retry_timeout_ns || now_ns - c->retry_clock_ns < c->cfg.retry_timeout_ns)
		return false;
	c->retry_clock_ns = now_ns;
	return ++c->retries > c->cfg.retry_cnt;
}

/* The unit of a packet's last transmission time: 1024 ns, so it fits 32 bits. */
static uint32_t kns(uint64_t ns)
{
	return (uint32_t)(ns >> 10);
}

static void transmitted(struct mrc_conn *c, struct mrc_tx_slot *s, unsigned path, size_t payload,
			bool retransmit, uint64_t now_ns)
{
	struct mrc_path *p = &c->paths[path];

	mrc_tx_record_send(s, c->paths, path);
	/* a first transmission, or one after progress: the back-off of its retransmissions
	 * starts over */
	if (!retransmit || s->epoch != c->ack_epoch)
		s->stalled = 0;
	else if (s->stalled < UINT8_MAX)
		s->stalled++;
	s->sent_kns = kns(now_ns);
	s->epoch = c->ack_epoch;
	if (mrc_path_free_window(p) == 0)
		s->flags |= MRC_TX_WND_LIMITED;
	p->stats.tx_packets++;
	c->stats.tx_data_packets++;
	if (retransmit) {
		p->stats.retransmits++;
		c->stats.tx_retransmits++;
	}
	if (!p->rto_deadline_ns)
		p->rto_deadline_ns = now_ns + conn_path_rto(c, p);
	pace(c, payload, now_ns);
}

/*
 * The next message to cut into packets: a READ response owed, once cum_psn has passed its
 * request; else the next request, within the READ limit and fences. A
 * message waiting out an RNR NAK holds the ones behind it.
 */
static struct msg *next_message(struct mrc_conn *c, uint64_t now_ns)
{
	struct msg *m = NULL;

	if (c->cur_msg >= 0) {
		m = &c->msgs[c->cur_msg];
	} else if (c->rr_pkt != c->rr_tail &&
		   mrc_seq_lt(rr_msg(c, c->rr_pkt)->req_psn, c->rxw.base)) {
		m = rr_msg(c, c->rr_pkt);
	} else if (c->sq_pkt != c->sq_tail) {
		m = sq_msg(c, c->sq_pkt);
		if (mrc_wr_read_like(m->wr.opcode) && c->reads_outstanding >= c->cfg.max_rd_atomic)
			return NULL;
		if ((m->wr.flags & MRC_SEND_FENCE) && c->reads_outstanding)
			return NULL;
	}
	if (m && now_ns < m->rnr_until_ns)
		return NULL;
	return m;
}

/*
 * How long from now a lost packet must still wait. Not at all, unless the QP has made no
 * progress since it last left and it has been resent so before: then rto_min doubled per such
 * resend, up to rto_max, after its last transmission. Paths come back with fresh RTOs when
 * probes answer, so a peer that answers probes but takes no data would otherwise draw resends
 * as fast as RTOs expire.
 */
static uint64_t resend_wait(const struct mrc_conn *c, const struct mrc_tx_slot *s,
			    uint64_t now_ns)
{
	uint64_t hold = c->cfg.rto.min_rto_ns, since;

	if (s->epoch != c->ack_epoch || !s->stalled)
		return 0;
	for (unsigned k = 0; k < s->stalled && hold < c->cfg.rto.max_rto_ns; k++)
		hold *= 2;
	if (hold > c->cfg.rto.max_rto_ns)
		hold = c->cfg.rto.max_rto_ns;
	since = (uint64_t)(uint32_t)(kns(now_ns) - s->sent_kns) << 10;
	return since >= hold ? 0 : hold - since;
}

/* Oldest packet declared lost whose message may go now; NULL when none (retx_wakeup_ns then
 * says when one held back may). */
static struct mrc_tx_slot *next_lost(struct mrc_conn *c, uint64_t now_ns, uint32_t *psn_out)
{
	c->retx_wakeup_ns = 0;
	for (uint32_t psn = c->snd_una; mrc_seq_lt(psn, c->snd_nxt); psn++) {
		struct mrc_tx_slot *s = mrc_tx_slot(&c->tx, psn);
		uint64_t wait;

		if (!(s->flags & MRC_TX_LOST) || now_ns < c->msgs[s->msg].rnr_until_ns)
			continue;
		wait = resend_wait(c, s, now_ns);
		if (!wait) {
			*psn_out = psn;
			return s;
		}
		if (!c->retx_wakeup_ns || now_ns + wait < c->retx_wakeup_ns)
			c->retx_wakeup_ns = now_ns + wait;
	}
	return NULL;
}

/*
 * Runs an atomic the peer asked for, once, when its response is about to leave (cum_psn has
 * passed the request ), and keeps the original value for every transmission of that
 * response. Atomic with respect to the CPUs sharing the memory, which covers other
 * atomics of this host.
 */
static void execute_atomic(struct msg *m)
{
	uint64_t *target = m->atomic_target, old;

	if (m->wr.opcode == MRC_WR_ATOMIC_CMP_SWAP) {
		old = m->wr.compare_add;
		__atomic_compare_exchange_n(target, &old, m->wr.swap, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		old = __atomic_fetch_add(target, m->wr.compare_add, __ATOMIC_SEQ_CST);
	}
	m->atomic_result = old;
	m->executed = true;
}

static bool send_data(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		      uint64_t now_ns, size_t *len)
{
	size_t payload;
	struct mrc_tx_slot *s;
	struct msg *m;
	uint32_t psn;
	int path;

	/* the bucket, which an ACK's hold also pushes (drain(): pace_next is never before it) */
	if (!rocev2(c) && now_ns < c->pace_next_ns)
		return false;

	/* Lost packets go first. */
	s = c->lost_pending ? next_lost(c, now_ns, &psn) : NULL;
	if (s) {
		path = pick_path(c, rocev2(c) ? -1 : s->path);
		if (path < 0)
			return false;
		m = &c->msgs[s->msg];
		/* A retry counts only if the QP made no progress since this packet last left,
		 * and a retry timeout after the last that counted; a resend after an RNR wait
		 * is counted by the RNR budget instead. */
		if (s->flags & MRC_TX_RNR)
			s->flags &= (uint8_t)~MRC_TX_RNR;
		else if (s->epoch == c->ack_epoch && conn_retry_exhausted(c, now_ns)) {
			conn_enter_error(c, m->kind == MSG_SQ ? m : NULL, MRC_WC_RETRY_EXC_ERR, true);
			return false;
		}
		if (!build_data(c, m, psn, (uint16_t)path, true, buf, cap, now_ns, len, tx,
				&payload))
			return false;
		c->lost_pending--;
		transmitted(c, s, (unsigned)path, payload, true, now_ns);
		set_tx(tx, c->paths[path].plane, c->paths[path].sport, (uint16_t)path,
		       wire_opcode(m));
		return true;
	}

	/* New packets stay inside the peer's 256-PSN window. */
	if (mrc_seq_diff(c->snd_nxt, c->snd_una) >= MRC_SACK_BITS)
		return false;
	if (c->snd_nxt - c->snd_una >= mrc_tx_ring_slots(&c->tx) &&
	    !mrc_tx_ring_grow(&c->tx, c->snd_una, c->snd_nxt))
		return false;
	m = next_message(c, now_ns);
	if (!m)
		return false;
	path = pick_path(c, -1);
	if (path < 0)
		return false;
	psn = c->snd_nxt;
	if (c->snd_una == psn)
		c->retry_clock_ns = now_ns; /* nothing was outstanding: the clock starts here */
	if (m->sent_pkts == 0)
		m->first_psn = psn;
	if (m->kind == MSG_RR && conn_atomic(m->wr.opcode) && !m->executed)
		execute_atomic(m);
	if (!build_data(c, m, psn, (uint16_t)path, false, buf, cap, now_ns, len, tx, &payload))
		return false;
	s = mrc_tx_slot(&c->tx, psn);
	memset(s, 0, sizeof(*s));
	s->msg = (uint16_t)(m - c->msgs);
	c->snd_nxt++;
	transmitted(c, s, (unsigned)path, payload, false, now_ns);
	if (++m->sent_pkts == m->npkts) {
		c->cur_msg = -1;
		if (m->kind == MSG_RR) {
			c->rr_pkt++;
		} else {
			c->sq_pkt++;
			if (mrc_wr_read_like(m->wr.opcode))
				c->reads_outstanding++;
			conn_skip_local(c);
		}
	} else {
		c->cur_msg = (int32_t)(m - c->msgs);
	}
	set_tx(tx, c->paths[path].plane, c->paths[path].sport, (uint16_t)path, wire_opcode(m));
	return true;
}

/* The next packet, before its authentication trailer. */
static bool next_packet(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
			uint64_t now_ns, size_t *len)
{
	if (c->state == MRC_QPS_CLOSING || c->state == MRC_QPS_CLOSED)
		return conn_closing_send(c, buf, cap, tx, now_ns, len);
	if (c->state == MRC_QPS_ERR) {
		if (c->nak.pending)
			return conn_send_nak(c, buf, cap, tx, now_ns, len);
		if (c->close_pending)
			return conn_send_close(c, buf, cap, tx, now_ns, len);
		return false;
	}
	if (c->n_probe_replies)
		return conn_send_probe_reply(c, buf, cap, tx, now_ns, len);
	if (c->nak.pending)
		return conn_send_nak(c, buf, cap, tx, now_ns, len);
	if (c->ack_now || (c->ack_pending && now_ns >= c->ack_deadline_ns))
		return conn_send_ack(c, buf, cap, tx, now_ns, len);
	for (unsigned i = 0; i < c->n_paths; i++) {
		struct mrc_path *p = &c->paths[i];

		if (path_probed(p) && p->probe_deadline_ns && now_ns >= p->probe_deadline_ns) {
			/* a suspect path whose probe went unanswered for an RTO has failed */
			if (p->state == MRC_PATH_ACTIVE && p->probes_unanswered &&
			    ++p->rto_streak >= c->cfg.fail_after_timeouts)
				conn_fail_path(c, p, now_ns);
			return send_probe(c, i, buf, cap, tx, now_ns, len);
		}
	}
	return send_data(c, buf, cap, tx, now_ns, len);
}

bool mrc_conn_send(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		   uint64_t now_ns, size_t *len)
{
	size_t hdr_len, trailer_len;

	c->last_now_ns = now_ns;
	tx->payload = NULL;
	tx->payload_len = 0;
	tx->trailer_len = 0;
	if (!c->cfg.auth)
		return next_packet(c, buf, cap, tx, now_ns, len);
	trailer_len = c->cfg.seal ? sizeof(struct mrc_seal_trailer) : MRC_AUTH_TAG_LEN;
	if (cap < trailer_len || !next_packet(c, buf, cap - trailer_len, tx, now_ns, len))
		return false;
	hdr_len = mrc_header_len(((const uint8_t *)buf)[offsetof(struct mrc_hdr, opcode)]);
	if (c->cfg.seal) { /* payload encrypted in place, headers and all of it tagged */
		uint64_t *counter = c->cfg.seal_counter ? c->cfg.seal_counter : &c->sealed;

		mrc_auth_seal(&c->cfg.seal_tx, __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED), buf,
			      hdr_len, *len - hdr_len, (uint8_t *)buf + *len);
		*len += trailer_len;
		return true;
	}
	/* the tag covers the headers as written, checksum included */
	if (tx->payload) {
		mrc_auth_put_tag(&c->cfg.auth_tx, buf, hdr_len, tx->trailer);
		tx->trailer_len = MRC_AUTH_TAG_LEN;
	} else {
		mrc_auth_put_tag(&c->cfg.auth_tx, buf, hdr_len, (uint8_t *)buf + *len);
		*len += MRC_AUTH_TAG_LEN;
	}
	return true;
}
