/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection engine. Section numbers in comments refer to docs/SPEC.md.
 *
 * Sender: posted work requests become outbound messages; a READ request received from the
 * peer becomes an outbound READ-response message in the same PSN space. Messages are cut
 * into packets with consecutive PSNs; each packet goes on the path the scheduler picks and
 * is tracked in a 256-slot ring (PSN % 256) until acknowledged. Loss is judged per path
 * (loss.c); lost packets are retransmitted first, with their original PSN.
 *
 * Receiver: every sequenced packet is classified against the 256-PSN window, placed at its
 * own address at once, and marked; messages complete when all their bytes are placed, and
 * receive completions are delivered in RSN order.
 *
 * This file holds the connection's life cycle, posting, completions, the error state, timers
 * and what callers read; conn_recv.c what arrives, conn_send.c what leaves.
 */
#include "conn.h"
#include "conn_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loss.h"
#include "random.h"
#include "sack.h"
#include "seq.h"

/* --- small helpers ------------------------------------------------------------------- */

static uint32_t sge_total(const struct mrc_sge *sge, unsigned n)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < n; i++)
		total += sge[i].length;
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

void conn_drop(struct mrc_conn *c, int reason)
{
	if (reason <= 0 || reason > MRC_DROP_REASON_MAX)
		return;
	c->stats.rx_dropped++;
	if (c->cfg.drop_counts)
		c->cfg.drop_counts[reason]++;
}

/*
 * While a path is out of service its window is lent, in equal shares, to the paths still
 * carrying data, so the QP keeps its aggregate window and traffic moves at once instead of
 * the survivors growing into it one packet per RTT. The loan comes back when the
 * path returns, so chance losses that make a healthy path suspect for a round trip do not
 * inflate everyone's window.
 */
static void lend_window(struct mrc_conn *c, struct mrc_path *from)
{
	unsigned n = 0;

	if (from->lent_to)
		return;
	for (unsigned i = 0; i < c->n_paths; i++)
		n += &c->paths[i] != from && mrc_path_usable(&c->paths[i]) && !c->paths[i].rto_streak;
	if (n == 0)
		return;
	from->lent = (from->cc.cwnd + n - 1) / n;
	for (unsigned i = 0; i < c->n_paths; i++) {
		struct mrc_path *p = &c->paths[i];

		if (p == from || !mrc_path_usable(p) || p->rto_streak)
			continue;
		p->cc.cwnd = p->cc.cwnd + from->lent < c->cfg.cc.max_cwnd ? p->cc.cwnd + from->lent
									  : c->cfg.cc.max_cwnd;
		from->lent_to |= 1u << i;
	}
}

void conn_reclaim_window(struct mrc_conn *c, struct mrc_path *from)
{
	for (unsigned i = 0; i < c->n_paths; i++) {
		struct mrc_cc_state *cc = &c->paths[i].cc;

		if (!(from->lent_to & (1u << i)))
			continue;
		cc->cwnd = cc->cwnd > from->lent + c->cfg.cc.min_cwnd ? cc->cwnd - from->lent
								      : c->cfg.cc.min_cwnd;
	}
	from->lent = from->lent_to = 0;
}

/* The path stops carrying data and is probed: it failed, or is suspect and on trial. */
static void start_probing(struct mrc_conn *c, struct mrc_path *p, uint64_t now_ns)
{
	p->probes_unanswered = 0;
	p->probe_backoff = 0;
	p->probe_deadline_ns = now_ns;
	lend_window(c, p);
}

void conn_fail_path(struct mrc_conn *c, struct mrc_path *p, uint64_t now_ns)
{
	p->state = MRC_PATH_FAILED;
	p->stats.failures++;
	start_probing(c, p, now_ns);
}

/*
 * A path with no sample of its own (new, or re-drawn onto another route) borrows the
 * largest estimate among the QP's other paths: same peer, same fabric, a far better guess
 * than the initial RTO, which would keep a re-drawn path's probes a millisecond apart
 * [R-286].
 */
uint64_t conn_path_rto(const struct mrc_conn *c, const struct mrc_path *p)
{
	const struct mrc_rtt *best = NULL;
	struct mrc_rtt borrowed;

	if (p->rtt.srtt_ns)
		return mrc_rtt_rto(&p->rtt, &c->cfg.rto);
	for (unsigned i = 0; i < c->n_paths; i++) {
		const struct mrc_rtt *r = &c->paths[i].rtt;

		if (r->srtt_ns && (!best || r->srtt_ns + 4 * r->rttvar_ns >
						    best->srtt_ns + 4 * best->rttvar_ns))
			best = r;
	}
	if (!best)
		return mrc_rtt_rto(&p->rtt, &c->cfg.rto);
	borrowed = *best;
	borrowed.backoff = p->rtt.backoff;
	return mrc_rtt_rto(&borrowed, &c->cfg.rto);
}

/* --- configuration and lifetime ------------------------------------------------------- */

void mrc_conn_config_default(struct mrc_conn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = MRC_MODE_METAROCE;
	cfg->max_payload = 4096;
	cfg->n_paths = 1;
	cfg->paths[0].sport = MRC_UDP_SPORT_MIN;
	cfg->sq_depth = 128;
	cfg->rq_depth = 128;
	cfg->max_rd_atomic = 16;
	cfg->max_dest_rd_atomic = 16;
	cfg->qp_access = MRC_ACCESS_REMOTE_WRITE | MRC_ACCESS_REMOTE_READ;
	cfg->retry_cnt = 7;
	cfg->retry_timeout_ns = mrc_verbs_timeout_ns(14); /* 67 ms, as ibv_rc_pingpong asks */
	cfg->rnr_retry = RNR_UNLIMITED;
	cfg->rnr_retry_after = 1;
	cfg->rto.initial_rto_ns = 1000000;  /* 1 ms before the first sample */
	cfg->rto.min_rto_ns = 200000;	    /* 200 us: above OS timer granularity */
	cfg->rto.max_rto_ns = 100000000;    /* 100 ms */
	cfg->cc.init_cwnd = 4; /* per path: 16 packets for a QP on 4 paths */
	cfg->cc.min_cwnd = 1;
	cfg->cc.max_cwnd = MRC_SACK_BITS;
	cfg->cc.beta_pct = 50;
	cfg->cc_ops = &mrc_cc_aimd;
	cfg->reorder_threshold = 3;
	/* The first RTO without ECN makes a path suspect and probes it; a second, or the probe
	 * going unanswered for an RTO, fails it. */
	cfg->fail_after_timeouts = 2;
	cfg->redraw_after_probes = 3;
	cfg->ack_coalesce_packets = 8;
	cfg->ack_delay_ns = 10000;	    /* 10 us */
	/* a destroyed QP answers for two of the peer's longest resend intervals */
	cfg->linger_quiet_ns = 2 * cfg->rto.max_rto_ns;
	cfg->linger_max_ns = 2000000000ull; /* 2 s */
	cfg->seed = 1;
}

static bool config_valid(const struct mrc_conn_config *cfg)
{
	if (cfg->mode > MRC_MODE_ROCEV2 || cfg->n_paths == 0 || cfg->n_paths > MRC_MAX_PATHS)
		return false;
	if (cfg->local_qpn == 0 || cfg->local_qpn > MRC_QPN_MAX || cfg->remote_qpn == 0 ||
	    cfg->remote_qpn > MRC_QPN_MAX)
		return false;
	if (cfg->max_payload < MRC_MIN_PAYLOAD ||
	    cfg->max_payload > MRC_WIRE_MAX_PACKET - sizeof(struct mrc_hdr) -
				       sizeof(struct mrc_data_ext))
		return false;
	/* mrc_tx_slot.msg is 16 bits: send queue plus READ responses must fit in it */
	if (cfg->sq_depth == 0 || cfg->rq_depth == 0 || cfg->sq_depth > 32768 ||
	    cfg->rq_depth > 65536 || cfg->max_dest_rd_atomic > 8192)
		return false;
	if (!cfg->cc_ops || cfg->cc.init_cwnd == 0 || cfg->cc.min_cwnd == 0 ||
	    cfg->cc.max_cwnd < cfg->cc.init_cwnd || cfg->cc.beta_pct >= 100)
		return false;
	if (cfg->rto.min_rto_ns == 0 || cfg->rto.max_rto_ns < cfg->rto.min_rto_ns)
		return false;
	/* a destroyed QP owes at least its last ACK; a minute is plenty and overflows nothing */
	if (cfg->linger_max_ns == 0 || cfg->linger_max_ns > 60000000000ull ||
	    cfg->linger_quiet_ns > cfg->linger_max_ns)
		return false;
	return true;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static void path_init(struct mrc_conn *c, struct mrc_path *p, const struct mrc_path_config *pc)
{
	memset(p, 0, sizeof(*p));
	p->plane = pc->plane;
	p->sport = pc->sport;
	p->state = MRC_PATH_ACTIVE;
	mrc_rtt_init(&p->rtt);
	c->cfg.cc_ops->init(&p->cc, &c->cfg.cc);
}

struct mrc_conn *mrc_conn_new(const struct mrc_conn_config *cfg,
			      const struct mrc_conn_callbacks *cb, void *user, uint64_t now_ns)
{
	struct mrc_conn *c;

	if (!cfg || !cb || !cb->complete || !cb->mr_lookup || !cb->may_invalidate != !cb->invalidate ||
	    !config_valid(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->last_now_ns = c->retry_clock_ns = now_ns;
	c->cfg = *cfg;
	c->cb = *cb;
	c->user = user;
	/* Twice the READs the peer may have outstanding: a slot frees only once the peer has
	 * acknowledged the whole response, a little after the peer's READ completed. */
	c->rr_depth = 2 * (cfg->max_dest_rd_atomic ? cfg->max_dest_rd_atomic : 1);
	c->sq_cap = pow2_at_least(cfg->sq_depth);
	c->rr_cap = pow2_at_least(c->rr_depth);
	c->rq_cap = pow2_at_least(cfg->rq_depth);
	c->n_paths = cfg->mode == MRC_MODE_ROCEV2 ? 1 : cfg->n_paths;
	c->msgs = calloc(c->sq_cap + c->rr_cap, sizeof(*c->msgs));
	c->rq = calloc(c->rq_cap, sizeof(*c->rq));
	c->paths = calloc(c->n_paths, sizeof(*c->paths));
	if (!c->msgs || !c->rq || !c->paths || mrc_tx_ring_init(&c->tx, MRC_TX_RING_FIRST) < 0) {
		mrc_conn_free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->state = MRC_QPS_RTS;
	c->cur_msg = -1;
	c->snd_una = c->snd_nxt = cfg->sq_psn;
	for (unsigned i = 0; i < c->n_paths; i++)
		path_init(c, &c->paths[i], &cfg->paths[i]);
	mrc_prf_seed(&c->rng, cfg->seed);
	mrc_rx_window_init(&c->rxw, cfg->rq_psn);
	c->rx_highest = cfg->rq_psn - 1;
	c->rate_entry = cfg->rate_domain ? mrc_rate_domain_join(cfg->rate_domain) : -1;
	return c;
}

void mrc_conn_free(struct mrc_conn *c)
{
	if (!c)
		return;
	if (c->cfg.rate_domain && c->rate_entry >= 0)
		mrc_rate_domain_leave(c->cfg.rate_domain, c->rate_entry);
	free(c->msgs);
	free(c->rq);
	free(c->paths);
	mrc_tx_ring_fini(&c->tx);
	free(c);
}

/* --- completions and errors ----------------------------------------------------------- */

static uint8_t wc_opcode_of(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case MRC_WR_WRITE:
	case MRC_WR_WRITE_IMM:
		return MRC_WC_RDMA_WRITE;
	case MRC_WR_READ:
		return MRC_WC_RDMA_READ;
	case MRC_WR_ATOMIC_CMP_SWAP:
		return MRC_WC_COMP_SWAP;
	case MRC_WR_ATOMIC_FETCH_ADD:
		return MRC_WC_FETCH_ADD;
	case MRC_WR_BIND_MW:
		return MRC_WC_BIND_MW;
	case MRC_WR_LOCAL_INV:
		return MRC_WC_LOCAL_INV;
	default:
		return MRC_WC_SEND;
	}
}

static void complete_send(struct mrc_conn *c, const struct msg *m, uint8_t status)
{
	struct mrc_completion wc = {
		.wr_id = m->wr.wr_id,
		.status = status,
		.opcode = wc_opcode_of(m->wr.opcode),
		.byte_len = m->len,
	};

	/* Unsignaled requests complete silently, unless they fail. */
	if (status == MRC_WC_SUCCESS && !c->cfg.sq_sig_all && !(m->wr.flags & MRC_SEND_SIGNALED))
		return;
	c->cb.complete(c->user, false, &wc);
}

void conn_complete_recv(struct mrc_conn *c, const struct rq_entry *e, uint8_t status)
{
	struct mrc_completion wc = {
		.wr_id = e->wr.wr_id,
		.status = status,
		.opcode = e->started ? e->wc_opcode : MRC_WC_RECV,
		.flags = e->wc_flags,
		.byte_len = e->started ? e->msg_len : 0,
		.imm = e->imm,
	};

	c->cb.complete(c->user, true, &wc);
}

static bool msg_done(const struct msg *m)
{
	if (mrc_wr_read_like(m->wr.opcode) && m->kind == MSG_SQ)
		return m->resp_complete;
	return m->sent_pkts == m->npkts && m->acked_pkts == m->npkts;
}

/* Completes send work requests in posting order, and frees finished READ responses. */
void conn_complete_messages(struct mrc_conn *c)
{
	while (c->sq_head != c->sq_tail) {
		struct msg *m = sq_msg(c, c->sq_head);

		if (!msg_done(m))
			break;
		if (mrc_wr_read_like(m->wr.opcode))
			c->reads_outstanding--;
		c->sq_head++;
		complete_send(c, m, MRC_WC_SUCCESS);
	}
	while (c->rr_head != c->rr_pkt) {
		if (!msg_done(rr_msg(c, c->rr_head)))
			break;
		c->rr_head++;
	}
}

/*
 * Enters the error state: the send request at fault (if any) completes with its
 * status, finished requests before it complete successfully, everything else is flushed,
 * and the peer is told with CLOSE unless it told us.
 */
void conn_enter_error(struct mrc_conn *c, const struct msg *culprit, uint8_t status,
			bool tell_peer)
{
	if (c->state != MRC_QPS_RTS)
		return; /* in error already, or destroyed: nobody to tell */
	c->state = MRC_QPS_ERR;
	for (uint32_t msn = c->sq_head; msn != c->sq_tail; msn++) {
		struct msg *m = sq_msg(c, msn);
		bool before_culprit = !culprit || mrc_seq_lt(msn, culprit->msn);
		uint8_t st = MRC_WC_WR_FLUSH_ERR;
		struct mrc_completion wc;

		if (m == culprit)
			st = status;
		else if (before_culprit && msg_done(m))
			st = MRC_WC_SUCCESS;
		if (st == MRC_WC_SUCCESS && !c->cfg.sq_sig_all && !(m->wr.flags & MRC_SEND_SIGNALED))
			continue;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = m->wr.wr_id;
		wc.status = st;
		wc.opcode = wc_opcode_of(m->wr.opcode);
		wc.byte_len = st == MRC_WC_SUCCESS ? m->len : 0;
		c->cb.complete(c->user, false, &wc);
	}
	c->sq_head = c->sq_pkt = c->sq_tail;
	c->rr_head = c->rr_pkt = c->rr_tail;
	c->cur_msg = -1;
	c->reads_outstanding = 0;
	for (uint32_t rsn = c->rq_head; rsn != c->rq_tail; rsn++) {
		struct rq_entry *e = rq_entry(c, rsn);

		conn_complete_recv(c, e, e->status != MRC_WC_SUCCESS ? e->status : MRC_WC_WR_FLUSH_ERR);
	}
	c->rq_head = c->rq_tail;
	for (unsigned i = 0; i < c->n_paths; i++) {
		c->paths[i].rto_deadline_ns = 0;
		c->paths[i].probe_deadline_ns = 0;
		c->paths[i].inflight = 0;
	}
	mrc_tx_ring_clear(&c->tx);
	c->snd_una = c->snd_nxt;
	c->lost_pending = 0;
	c->ack_pending = c->ack_now = false;
	/* An error NAK explains this state to the peer and still goes out; RNR or sequence
	 * NAKs are moot now. */
	if (c->nak.kind < MRC_NAK_REMOTE_ACCESS)
		c->nak.pending = false;
	c->n_probe_replies = 0;
	c->close_pending = tell_peer;
	c->close_reason = MRC_CLOSE_ERROR;
}

void mrc_conn_set_error(struct mrc_conn *c, uint64_t now_ns)
{
	(void)now_ns;
	conn_enter_error(c, NULL, MRC_WC_WR_FLUSH_ERR, true);
}

/* --- posting work --------------------------------------------------------------------- */

static void complete_flushed_send(struct mrc_conn *c, const struct mrc_send_wr *wr)
{
	struct mrc_completion wc = {
		.wr_id = wr->wr_id,
		.status = MRC_WC_WR_FLUSH_ERR,
		.opcode = wc_opcode_of(wr->opcode),
	};

	c->cb.complete(c->user, false, &wc);
}

int mrc_conn_post_send(struct mrc_conn *c, const struct mrc_send_wr *wr)
{
	struct msg *m;
	uint64_t len = 0;

	if (wr->opcode > MRC_WR_LOCAL_INV || wr->num_sge > MRC_MAX_SGE)
		return -EINVAL;
	if (conn_local(wr->opcode) && wr->num_sge)
		return -EINVAL;
	/* an atomic returns 8 bytes into one scatter element */
	if (conn_atomic(wr->opcode) && (wr->num_sge != 1 || wr->sge[0].length != 8))
		return -EINVAL;
	for (unsigned i = 0; i < wr->num_sge; i++) {
		if (wr->sge[i].length && !wr->sge[i].host)
			return -EINVAL;
		len += wr->sge[i].length;
	}
	if (len > MRC_MAX_MSG_LEN)
		return -EINVAL;
	if ((wr->opcode == MRC_WR_WRITE || wr->opcode == MRC_WR_WRITE_IMM ||
	     mrc_wr_read_like(wr->opcode)) &&
	    len > UINT64_MAX - wr->raddr)
		return -EINVAL;
	if (c->state == MRC_QPS_CLOSING || c->state == MRC_QPS_CLOSED)
		return -EINVAL; /* destroyed: it takes no work */
	if (c->state == MRC_QPS_ERR) {
		/* verbs: work posted to a QP in error completes at once, flushed */
		complete_flushed_send(c, wr);
		return 0;
	}
	if (c->sq_tail - c->sq_head >= c->cfg.sq_depth)
		return -ENOMEM;
	if (c->snd_una == c->snd_nxt && c->sq_head == c->sq_tail && c->rr_head == c->rr_tail)
		c->retry_clock_ns = c->last_now_ns; /* idle until now: the clock starts here */

	m = sq_msg(c, c->sq_tail);
	memset(m, 0, sizeof(*m));
	m->wr = *wr;
	m->kind = MSG_SQ;
	m->msn = c->sq_tail;
	m->len = (uint32_t)len;
	if (conn_local(wr->opcode))
		m->npkts = 0;
	else if (mrc_wr_read_like(wr->opcode))
		m->npkts = 1;
	else
		m->npkts = m->len ? (m->len + c->cfg.max_payload - 1) / c->cfg.max_payload : 1;
	if (wr->opcode == MRC_WR_SEND || wr->opcode == MRC_WR_SEND_IMM ||
	    wr->opcode == MRC_WR_SEND_INV || wr->opcode == MRC_WR_WRITE_IMM)
		m->rsn = c->next_rsn++;
	c->sq_tail++;
	if (conn_local(wr->opcode)) {
		conn_skip_local(c);
		conn_complete_messages(c); /* at once, when nothing is before it */
	}
	return 0;
}

int mrc_conn_post_recv(struct mrc_conn *c, const struct mrc_recv_wr *wr)
{
	struct rq_entry *e;

	if (wr->num_sge > MRC_MAX_SGE)
		return -EINVAL;
	for (unsigned i = 0; i < wr->num_sge; i++)
		if (wr->sge[i].length && !wr->sge[i].host)
			return -EINVAL;
	if (c->state == MRC_QPS_CLOSING || c->state == MRC_QPS_CLOSED)
		return -EINVAL;
	if (c->state == MRC_QPS_ERR) {
		struct rq_entry flushed = { .wr = *wr };

		conn_complete_recv(c, &flushed, MRC_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (c->rq_tail - c->rq_head >= c->cfg.rq_depth)
		return -ENOMEM;
	e = rq_entry(c, c->rq_tail);
	memset(e, 0, sizeof(*e));
	e->wr = *wr;
	e->capacity = sge_total(wr->sge, wr->num_sge);
	c->rq_tail++;
	return 0;
}

/* --- timers ----------------------------------------------------------------------------- */

/*
 * No usable path: each retry timeout that passes without progress costs a retry, on the same
 * clock and count as resends, and the retry budget ends the QP. Probe rounds are when
 * it is looked at.
 */
void conn_note_dead_round(struct mrc_conn *c, uint64_t now_ns)
{
	struct msg *culprit;

	if (!conn_retry_exhausted(c, now_ns))
		return;
	culprit = conn_msg_of_psn(c, c->snd_una);
	if (!culprit || culprit->kind != MSG_SQ)
		culprit = c->sq_head != c->sq_tail ? sq_msg(c, c->sq_head) : NULL;
	conn_enter_error(c, culprit, MRC_WC_RETRY_EXC_ERR, true);
}

static void path_timeout(struct mrc_conn *c, unsigned i, uint64_t now_ns)
{
	struct mrc_path *p = &c->paths[i];

	p->rto_deadline_ns = 0;
	/* Its packets were all acknowledged or declared lost some other way since the timer
	 * was armed: nothing timed out, and the path is not suspect. */
	if (p->inflight == 0)
		return;
	p->stats.rto_expiries++;
	if (rocev2(c))
		conn_go_back_n(c);
	else
		c->lost_pending += mrc_loss_detect_timeout(&c->tx, c->snd_una, c->snd_nxt, c->paths, i);
	mrc_rtt_backoff(&p->rtt);
	c->cfg.cc_ops->on_timeout(&p->cc, &c->cfg.cc);
	if (rocev2(c))
		return; /* one path, nowhere else to go: RTO and go-back-N are all there is */
	/*
	 * Timeouts with no ECN are path trouble, not congestion. The first makes
	 * the path suspect: no more data on it, a probe at once. A live path answers
	 * within a round trip and is cleared; one more timeout without an answer fails it.
	 */
	if (!p->ecn_since_rto && p->rto_streak < UINT8_MAX)
		p->rto_streak++;
	p->ecn_since_rto = false;
	if (p->state != MRC_PATH_ACTIVE)
		return;
	if (p->rto_streak >= c->cfg.fail_after_timeouts)
		conn_fail_path(c, p, now_ns);
	else if (p->rto_streak)
		start_probing(c, p, now_ns);
}

/*
 * READs whose requests were all acknowledged wait on the responder's responses, which no RTO
 * of ours covers: a responder that died (its daemon restarted) after acknowledging would leave
 * them waiting forever. Each retry timeout without a response byte or an acknowledgement
 * costs a retry, and the retry budget ends the QP.
 */
static bool read_watchdog_armed(const struct mrc_conn *c)
{
	return c->reads_outstanding && c->snd_una == c->snd_nxt && c->cfg.retry_timeout_ns;
}

static void read_watchdog(struct mrc_conn *c, uint64_t now_ns)
{
	if (read_watchdog_armed(c) && conn_retry_exhausted(c, now_ns))
		conn_enter_error(c, sq_msg(c, c->sq_head), MRC_WC_RETRY_EXC_ERR, true);
}

uint64_t mrc_conn_next_timeout(const struct mrc_conn *c)
{
	uint64_t t = UINT64_MAX;

	if (c->state == MRC_QPS_CLOSING || c->state == MRC_QPS_CLOSED)
		return conn_closing_next_timeout(c);
	if (c->state == MRC_QPS_ERR)
		return t;
	if (c->ack_pending && c->ack_deadline_ns < t)
		t = c->ack_deadline_ns;
	for (unsigned i = 0; i < c->n_paths; i++) {
		const struct mrc_path *p = &c->paths[i];

		if (p->rto_deadline_ns && p->rto_deadline_ns < t)
			t = p->rto_deadline_ns;
		if (path_probed(p) && p->probe_deadline_ns && p->probe_deadline_ns < t)
			t = p->probe_deadline_ns;
	}
	/* Waits that only hold data back matter only while they lie ahead. */
	if (c->pace_next_ns > c->last_now_ns && c->pace_next_ns < t)
		t = c->pace_next_ns;
	if (c->rnr_wakeup_ns > c->last_now_ns && c->rnr_wakeup_ns < t)
		t = c->rnr_wakeup_ns;
	if (c->lost_pending && c->retx_wakeup_ns > c->last_now_ns && c->retx_wakeup_ns < t)
		t = c->retx_wakeup_ns;
	if (read_watchdog_armed(c) && c->retry_clock_ns + c->cfg.retry_timeout_ns < t)
		t = c->retry_clock_ns + c->cfg.retry_timeout_ns;
	return t;
}

void mrc_conn_on_timeout(struct mrc_conn *c, uint64_t now_ns)
{
	c->last_now_ns = now_ns;
	if (c->state == MRC_QPS_CLOSING || c->state == MRC_QPS_CLOSED) {
		conn_closing_on_timeout(c, now_ns);
		return;
	}
	if (c->state == MRC_QPS_ERR)
		return;
	if (c->ack_pending && now_ns >= c->ack_deadline_ns)
		c->ack_now = true;
	if (c->rnr_wakeup_ns && now_ns >= c->rnr_wakeup_ns)
		conn_refresh_rnr_wakeup(c, now_ns);
	for (unsigned i = 0; i < c->n_paths && c->state == MRC_QPS_RTS; i++)
		if (c->paths[i].rto_deadline_ns && now_ns >= c->paths[i].rto_deadline_ns)
			path_timeout(c, i, now_ns);
	if (c->state == MRC_QPS_RTS)
		read_watchdog(c, now_ns);
}

/* --- operator controls and inspection ----------------------------------------------- */

void mrc_conn_drain_plane(struct mrc_conn *c, uint8_t plane, bool drained)
{
	for (unsigned i = 0; i < c->n_paths; i++) {
		struct mrc_path *p = &c->paths[i];

		if (p->plane != plane)
			continue;
		if (drained) {
			p->state = MRC_PATH_DRAINED;
			p->probe_deadline_ns = 0;
		} else if (p->state == MRC_PATH_DRAINED) {
			p->state = MRC_PATH_ACTIVE;
			p->rto_streak = 0;
			c->cfg.cc_ops->on_path_restart(&p->cc, &c->cfg.cc);
		}
	}
}

enum mrc_qp_state mrc_conn_state(const struct mrc_conn *c)
{
	return (enum mrc_qp_state)c->state;
}

const struct mrc_conn_stats *mrc_conn_stats(const struct mrc_conn *c)
{
	return &c->stats;
}

unsigned mrc_conn_n_paths(const struct mrc_conn *c)
{
	return c->n_paths;
}

enum mrc_rx_verdict mrc_conn_rx_verdict(const struct mrc_conn *c, uint32_t psn)
{
	return mrc_rx_window_classify(&c->rxw, psn);
}

const struct mrc_path *mrc_conn_path(const struct mrc_conn *c, unsigned i)
{
	return i < c->n_paths ? &c->paths[i] : NULL;
}

uint32_t mrc_conn_rcv_base(const struct mrc_conn *c)
{
	return c->rxw.base;
}

void mrc_conn_sq_msns(const struct mrc_conn *c, uint32_t *oldest, uint32_t *next)
{
	*oldest = c->sq_head;
	*next = c->sq_tail;
}

int mrc_conn_sq_read_sink(const struct mrc_conn *c, uint32_t msn, struct mrc_sge *sink)
{
	const struct msg *m = &c->msgs[msn & (c->sq_cap - 1)];

	if (!mrc_seq_le(c->sq_head, msn) || !mrc_seq_lt(msn, c->sq_tail) || m->msn != msn)
		return -ENOENT;
	if (!mrc_wr_read_like(m->wr.opcode) || m->wr.num_sge != 1 || !m->len)
		return 0;
	if (!m->sent_pkts)
		return -EAGAIN;
	*sink = m->wr.sge[0];
	return 1;
}

void mrc_conn_get_info(const struct mrc_conn *c, struct mrc_conn_info *info)
{
	info->snd_una = c->snd_una;
	info->snd_nxt = c->snd_nxt;
	info->lost_pending = c->lost_pending;
	info->rcv_cum_psn = c->rxw.base;
	info->rate_hint_kbps = c->rate_hint_kbps;
	info->sq_outstanding = c->sq_tail - c->sq_head;
	info->rq_posted = c->rq_tail - c->rq_head;
	info->rr_started = c->rr_tail;
	info->rr_finished = c->rr_head;
	info->next_timeout_ns = mrc_conn_next_timeout(c);
}

uint32_t mrc_conn_inflight(const struct mrc_conn *c)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->n_paths; i++)
		n += c->paths[i].inflight;
	return n;
}

int mrc_conn_set_send(struct mrc_conn *c, uint8_t retry_cnt, uint64_t retry_timeout_ns,
		      uint8_t rnr_retry, uint32_t max_rd_atomic)
{
	/* MSNs start at 0: a tail past it means a request was posted */
	if (!max_rd_atomic || c->sq_tail != 0)
		return -EBUSY;
	c->cfg.retry_cnt = retry_cnt;
	c->cfg.retry_timeout_ns = retry_timeout_ns;
	c->cfg.rnr_retry = rnr_retry;
	c->cfg.max_rd_atomic = max_rd_atomic;
	return 0;
}

uint32_t mrc_conn_receives_short(const struct mrc_conn *c, uint32_t rsn)
{
	if (mrc_seq_lt(rsn, c->rq_tail) || rsn - c->rq_head >= c->cfg.rq_depth)
		return 0;
	return rsn - c->rq_tail + 1;
}

void mrc_conn_modify(struct mrc_conn *c, uint8_t retry_cnt, uint64_t retry_timeout_ns,
		     uint8_t rnr_retry, uint16_t rnr_retry_after, unsigned qp_access)
{
	c->cfg.retry_cnt = retry_cnt;
	c->cfg.retry_timeout_ns = retry_timeout_ns;
	c->cfg.rnr_retry = rnr_retry;
	c->cfg.rnr_retry_after = rnr_retry_after;
	c->cfg.qp_access = qp_access;
}

uint32_t mrc_initial_psn(uint64_t from_node, uint32_t from_qpn, uint64_t to_node,
			 uint32_t to_qpn)
{
	uint64_t state = from_node;

	state = mrc_splitmix64(&state) ^ to_node;
	state = mrc_splitmix64(&state) ^ ((uint64_t)from_qpn << 32 | to_qpn);
	return (uint32_t)mrc_splitmix64(&state);
}

bool mrc_conn_send_idle(const struct mrc_conn *c)
{
	return !work_outstanding(c);
}

size_t mrc_conn_footprint(const struct mrc_conn *c)
{
	return sizeof(*c) + mrc_tx_ring_slots(&c->tx) * sizeof(struct mrc_tx_slot) +
	       (c->sq_cap + c->rr_cap) * sizeof(struct msg) +
	       c->rq_cap * sizeof(struct rq_entry) + c->n_paths * sizeof(struct mrc_path);
}

const char *mrc_wc_status_name(uint8_t status)
{
	static const char *const names[] = {
		[MRC_WC_SUCCESS] = "success",
		[MRC_WC_LOC_LEN_ERR] = "local length error",
		[MRC_WC_WR_FLUSH_ERR] = "flushed",
		[MRC_WC_REM_ACCESS_ERR] = "remote access error",
		[MRC_WC_REM_INV_REQ_ERR] = "remote invalid request",
		[MRC_WC_REM_OP_ERR] = "remote operational error",
		[MRC_WC_RETRY_EXC_ERR] = "retry exceeded",
		[MRC_WC_RNR_RETRY_EXC_ERR] = "RNR retry exceeded",
		[MRC_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[MRC_WC_LOC_PROT_ERR] = "local protection error",
	};

	return status < sizeof(names) / sizeof(names[0]) && names[status] ? names[status]
									   : "unknown";
}
