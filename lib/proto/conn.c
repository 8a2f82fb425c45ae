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

static uint64_t next_random(struct mrc_conn *c)
{
	return mrc_splitmix64(&c->prng);
}

static bool rocev2(const struct mrc_conn *c)
{
	return c->cfg.mode == MRC_MODE_ROCEV2;
}

static struct msg *sq_msg(struct mrc_conn *c, uint32_t msn)
{
	return &c->msgs[msn & (c->sq_cap - 1)];
}

static struct msg *rr_msg(struct mrc_conn *c, uint32_t ctr)
{
	return &c->msgs[c->sq_cap + (ctr & (c->rr_cap - 1))];
}

static struct rq_entry *rq_entry(struct mrc_conn *c, uint32_t rsn)
{
	return &c->rq[rsn & (c->rq_cap - 1)];
}

static uint32_t sge_total(const struct mrc_sge *sge, unsigned n)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < n; i++)
		total += sge[i].length;
	return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

/* Copies len bytes at offset off of a scatter list into dst, or from src into it. */
static void sge_gather(const struct mrc_sge *sge, unsigned n, uint32_t off, uint8_t *dst,
		       uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t take = sge[i].length - off < len ? sge[i].length - off : len;

		memcpy(dst, (const uint8_t *)sge[i].host + off, take);
		dst += take;
		len -= take;
		off = 0;
	}
}

static void sge_scatter(const struct mrc_sge *sge, unsigned n, uint32_t off, const uint8_t *src,
			uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t take = sge[i].length - off < len ? sge[i].length - off : len;

		memcpy((uint8_t *)sge[i].host + off, src, take);
		src += take;
		len -= take;
		off = 0;
	}
}

static void drop(struct mrc_conn *c, int reason)
{
	if (reason > 0 && reason <= MRC_DROP_REASON_MAX)
		c->stats.rx_drops[reason]++;
}

/* Failed and re-drawn paths are probed until they answer, and so is a suspect one. */
static bool path_probed(const struct mrc_path *p)
{
	return p->state == MRC_PATH_FAILED || p->state == MRC_PATH_PROBING ||
	       (p->state == MRC_PATH_ACTIVE && p->rto_streak);
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

static void reclaim_window(struct mrc_conn *c, struct mrc_path *from)
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

static void fail_path(struct mrc_conn *c, struct mrc_path *p, uint64_t now_ns)
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
static uint64_t path_rto(const struct mrc_conn *c, const struct mrc_path *p)
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

	if (!cfg || !cb || !cb->complete || !cb->mr_lookup || !config_valid(cfg)) {
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
	if (!c->msgs || !c->rq || !c->paths) {
		mrc_conn_free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->state = MRC_QPS_RTS;
	c->cur_msg = -1;
	c->snd_una = c->snd_nxt = cfg->sq_psn;
	for (unsigned i = 0; i < c->n_paths; i++)
		path_init(c, &c->paths[i], &cfg->paths[i]);
	c->prng = cfg->seed;
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

static void complete_recv(struct mrc_conn *c, const struct rq_entry *e, uint8_t status)
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
	if (m->wr.opcode == MRC_WR_READ && m->kind == MSG_SQ)
		return m->resp_complete;
	return m->sent_pkts == m->npkts && m->acked_pkts == m->npkts;
}

/* Completes send work requests in posting order, and frees finished READ responses. */
static void complete_messages(struct mrc_conn *c)
{
	while (c->sq_head != c->sq_tail) {
		struct msg *m = sq_msg(c, c->sq_head);

		if (!msg_done(m))
			break;
		if (m->wr.opcode == MRC_WR_READ)
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
static void enter_error(struct mrc_conn *c, const struct msg *culprit, uint8_t status,
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

		complete_recv(c, e, e->status != MRC_WC_SUCCESS ? e->status : MRC_WC_WR_FLUSH_ERR);
	}
	c->rq_head = c->rq_tail;
	for (unsigned i = 0; i < c->n_paths; i++) {
		c->paths[i].rto_deadline_ns = 0;
		c->paths[i].probe_deadline_ns = 0;
		c->paths[i].inflight = 0;
	}
	memset(c->tx, 0, sizeof(c->tx));
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
	enter_error(c, NULL, MRC_WC_WR_FLUSH_ERR, true);
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

	if (wr->opcode > MRC_WR_READ || wr->num_sge > MRC_MAX_SGE)
		return -EINVAL;
	for (unsigned i = 0; i < wr->num_sge; i++) {
		if (wr->sge[i].length && !wr->sge[i].host)
			return -EINVAL;
		len += wr->sge[i].length;
	}
	if (len > MRC_MAX_MSG_LEN)
		return -EINVAL;
	if ((wr->opcode == MRC_WR_WRITE || wr->opcode == MRC_WR_WRITE_IMM ||
	     wr->opcode == MRC_WR_READ) &&
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
	if (wr->opcode == MRC_WR_READ)
		m->npkts = 1;
	else
		m->npkts = m->len ? (m->len + c->cfg.max_payload - 1) / c->cfg.max_payload : 1;
	if (wr->opcode == MRC_WR_SEND || wr->opcode == MRC_WR_SEND_IMM ||
	    wr->opcode == MRC_WR_WRITE_IMM)
		m->rsn = c->next_rsn++;
	c->sq_tail++;
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

		complete_recv(c, &flushed, MRC_WC_WR_FLUSH_ERR);
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

/* --- receiving: acknowledgements (sender side) ---------------------------------------- */

static void packet_acked(struct mrc_conn *c, uint32_t psn, uint32_t *acked_on_path,
			 uint64_t now_ns)
{
	struct mrc_tx_slot *s = mrc_tx_slot(c->tx, psn);
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
	p->rto_deadline_ns = p->inflight ? now_ns + path_rto(c, p) : 0;
}

static void advance_una(struct mrc_conn *c)
{
	while (mrc_seq_lt(c->snd_una, c->snd_nxt) &&
	       (mrc_tx_slot(c->tx, c->snd_una)->flags & MRC_TX_ACKED)) {
		memset(mrc_tx_slot(c->tx, c->snd_una), 0, sizeof(struct mrc_tx_slot));
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
	s = mrc_tx_slot(c->tx, psn);
	packet_acked(c, psn, acked_on_path, now_ns);
	rearm_rto(c, &c->paths[s->path], now_ns);
	advance_una(c);
}

static int on_ack(struct mrc_conn *c, const struct mrc_packet *pkt, uint32_t cum,
		  const uint8_t *sack, uint64_t now_ns)
{
	/* [0, n): newly acknowledged per path; [n, 2n): of which sent window-limited */
	uint32_t acked_on_path[2 * MRC_MAX_PATHS] = { 0 };
	uint16_t echo_path = pkt->opcode == MRC_OP_ACK ? pkt->u.ack.echo_path : UINT16_MAX;

	/* An acknowledgement of PSNs never sent is bogus or misdirected: ignored whole. */
	if (mrc_seq_lt(c->snd_nxt, cum))
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
	}
	if (!rocev2(c))
		c->lost_pending += mrc_loss_detect_reorder(c->tx, c->snd_una, c->snd_nxt, c->paths,
							   c->cfg.reorder_threshold);
	complete_messages(c);
	return MRC_DROP_NONE;
}

/* Go-back-N: everything unacknowledged is sent again, in PSN order. */
static void go_back_n(struct mrc_conn *c)
{
	for (uint32_t psn = c->snd_una; mrc_seq_lt(psn, c->snd_nxt); psn++) {
		struct mrc_tx_slot *s = mrc_tx_slot(c->tx, psn);

		if (s->flags & (MRC_TX_ACKED | MRC_TX_LOST))
			continue;
		mrc_tx_leave_flight(s, c->paths);
		s->flags |= MRC_TX_LOST;
		c->lost_pending++;
	}
	c->stats.go_back_n++;
}

static struct msg *msg_of_psn(struct mrc_conn *c, uint32_t psn)
{
	if (mrc_seq_lt(psn, c->snd_una) || !mrc_seq_lt(psn, c->snd_nxt))
		return NULL;
	return &c->msgs[mrc_tx_slot(c->tx, psn)->msg];
}

static struct msg *sq_msg_by_msn(struct mrc_conn *c, uint32_t msn)
{
	if (!mrc_seq_le(c->sq_head, msn) || !mrc_seq_lt(msn, c->sq_tail))
		return NULL;
	return sq_msg(c, msn);
}

/* The earliest end of an RNR wait still ahead, over every waiting message. */
static void refresh_rnr_wakeup(struct mrc_conn *c, uint64_t now_ns)
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
		struct mrc_tx_slot *s = mrc_tx_slot(c->tx, psn);

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
		enter_error(c, m, MRC_WC_RNR_RETRY_EXC_ERR, true);
		return;
	}
	rnr_hold(c, m, now_ns + wait);
	for (uint32_t msn = m->msn + 1; msn != c->sq_tail; msn++) {
		struct msg *later = sq_msg(c, msn);

		if (consumes_receive(later) && later->sent_pkts && later->rnr_until_ns < now_ns + wait)
			rnr_hold(c, later, now_ns + wait);
	}
	refresh_rnr_wakeup(c, now_ns);
}

static int on_nak(struct mrc_conn *c, const struct mrc_packet *pkt, uint64_t now_ns)
{
	const struct mrc_nak *n = &pkt->u.nak;
	int err = on_ack(c, pkt, n->cum_psn, NULL, now_ns); /* a NAK is an ACK too */
	struct msg *m;

	if (err)
		return err;
	switch (n->kind) {
	case MRC_NAK_SEQ:
		/* outside baseline mode only its cum_psn counts */
		if (rocev2(c))
			go_back_n(c);
		return MRC_DROP_NONE;
	case MRC_NAK_RNR:
		m = msg_of_psn(c, n->nak_psn);
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
		m = msg_of_psn(c, n->nak_psn);
		enter_error(c, m && m->kind == MSG_RR ? NULL : sq_msg_by_msn(c, n->msn), status,
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

	if (take) {
		c->echo.path_id = pkt->path_id;
		c->echo.tx_ts = pkt->tx_ts;
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
		complete_recv(c, e, e->status);
	}
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
	case MRC_OP_SEND_IMM: {
		bool consumes = pkt->opcode != MRC_OP_WRITE;
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
			     (pkt->opcode != MRC_OP_SEND && e->imm != d->imm))) {
				/* packets of one message disagree */
				queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, d->msn, 0);
				return MRC_DROP_INVALID_REQ;
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
			e->started = true;
			e->opcode = pkt->opcode;
			e->msg_len = d->msg_len;
			e->wc_opcode = MRC_WC_RECV;
			e->status = MRC_WC_LOC_LEN_ERR;
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, d->msn, 0);
			return MRC_DROP_INVALID_REQ;
		}
		if (one_sided && pkt->payload_len && !rx->placed)
			memcpy(host, pkt->payload, pkt->payload_len);
		else if (!one_sided)
			sge_scatter(e->wr.sge, e->wr.num_sge, d->msg_off, pkt->payload,
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
				e->imm = d->imm;
				e->wc_flags |= MRC_WC_WITH_IMM;
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

		if (!(c->cfg.qp_access & MRC_ACCESS_REMOTE_READ)) {
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, r->msn, 0); /* */
			return MRC_DROP_INVALID_REQ;
		}
		if (r->length && c->cb.mr_lookup(c->user, r->rkey, r->raddr, r->length,
						 MRC_ACCESS_REMOTE_READ, &host) != 0) {
			queue_nak(c, rx, MRC_NAK_REMOTE_ACCESS, pkt->psn, r->msn, 0);
			return MRC_DROP_REMOTE_ACCESS;
		}
		if (c->rr_tail - c->rr_head >= c->rr_depth) {
			/* more READs than max_dest_rd_atomic allows */
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, r->msn, 0);
			return MRC_DROP_INVALID_REQ;
		}
		m = rr_msg(c, c->rr_tail++);
		memset(m, 0, sizeof(*m));
		m->kind = MSG_RR;
		m->msn = r->msn;
		m->req_psn = pkt->psn;
		m->len = r->length;
		m->npkts = r->length ? (r->length + c->cfg.max_payload - 1) / c->cfg.max_payload : 1;
		m->wr.opcode = MRC_WR_READ;
		m->wr.num_sge = r->length ? 1 : 0;
		m->wr.sge[0].host = r->length ? host : NULL;
		m->wr.sge[0].length = r->length;
		m->wr.rkey = r->sink_key;
		m->wr.raddr = r->sink_addr;
		return MRC_DROP_NONE;
	}
	case MRC_OP_READ_RESP: {
		struct msg *m = sq_msg(c, d->msn);

		/* The response must answer an outstanding READ of ours, byte for byte. */
		if (!mrc_seq_le(c->sq_head, d->msn) || !mrc_seq_lt(d->msn, c->sq_pkt) ||
		    m->msn != d->msn || m->wr.opcode != MRC_WR_READ || m->sent_pkts == 0 ||
		    d->msg_len != m->len || (m->len && d->rkey != m->wr.sge[0].lkey) ||
		    (m->len && d->raddr != m->wr.sge[0].addr + d->msg_off)) {
			queue_nak(c, rx, MRC_NAK_INVALID_REQ, pkt->psn, d->msn, 0); /* */
			return MRC_DROP_BAD_READ_RESP;
		}
		if (!rx->placed)
			sge_scatter(m->wr.sge, m->wr.num_sge, d->msg_off, pkt->payload,
				    pkt->payload_len);
		m->read_placed += pkt->payload_len;
		/* the responder is alive and answering: the READ watchdog starts over */
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
			enter_error(c, NULL, MRC_WC_WR_FLUSH_ERR, true);
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
		complete_messages(c);
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
		reclaim_window(c, p);
		p->rto_streak = 0;
		p->probes_unanswered = 0;
		p->probe_backoff = 0;
		p->probe_deadline_ns = 0;
		if (mrc_rtt_sample_from_echo(now_ns, pkt->u.probe.echo_ts, 0, &sample))
			mrc_rtt_update(&p->rtt, sample);
		return MRC_DROP_NONE;
	}
	/* The path answers again: back in service with a fresh window. */
	reclaim_window(c, p);
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

/* A probe is answered on the path it came by, whatever else is pending. */
void conn_queue_probe_reply(struct mrc_conn *c, const struct mrc_rx_info *rx,
			    const struct mrc_packet *pkt)
{
	conn_note_reverse_port(c, rx);
	if (c->n_probe_replies < MAX_PROBE_REPLIES) {
		struct probe_reply *r = &c->probe_replies[c->n_probe_replies++];

		r->nonce = pkt->u.probe.nonce;
		r->ce = rx->ce;
		r->echo_ts = pkt->tx_ts;
		r->echo_path = pkt->path_id;
		r->plane = rx->plane;
		r->sport = rx->sport;
	}
}

int mrc_conn_recv_packet(struct mrc_conn *c, const struct mrc_rx_info *rx,
			 const struct mrc_packet *pkt, uint64_t now_ns)
{
	int err;

	c->stats.rx_packets++;
	if (pkt->dst_qpn != c->cfg.local_qpn) {
		err = MRC_DROP_WRONG_QPN;
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
			conn_queue_probe_reply(c, rx, pkt);
			err = MRC_DROP_NONE;
			break;
		case MRC_OP_PROBE_REPLY:
			err = on_probe_reply(c, pkt, now_ns);
			break;
		case MRC_OP_CLOSE:
			enter_error(c, NULL, MRC_WC_WR_FLUSH_ERR, false);
			err = MRC_DROP_NONE;
			break;
		default:
			err = MRC_DROP_OPCODE_REFUSED;
			break;
		}
	}
	drop(c, err);
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
		drop(c, err);
		return err;
	}
	return mrc_conn_recv_packet(c, rx, &pkt, now_ns);
}

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
}

bool conn_send_ack(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		     uint64_t now_ns, size_t *len)
{
	struct mrc_packet pkt;
	uint64_t held = now_ns - c->echo.arrival_ns;

	init_packet(c, &pkt, MRC_OP_ACK, c->echo.path_id, now_ns);
	pkt.flags = c->echo.ce ? MRC_F_ECE : 0;
	pkt.u.ack.cum_psn = c->rxw.base;
	pkt.u.ack.echo_ts = c->echo.tx_ts;
	pkt.u.ack.ack_delay_ns = held > UINT32_MAX ? UINT32_MAX : (uint32_t)held;
	pkt.u.ack.rate_hint_kbps =
		mrc_rate_domain_hint(c->cfg.rate_domain, c->rate_entry, now_ns);
	pkt.u.ack.echo_path = c->echo.path_id;
	pkt.u.ack.ce_count = c->ce_count;
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
	c->stats.tx_acks++;
	return true;
}

bool conn_send_nak(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		     uint64_t now_ns, size_t *len)
{
	struct mrc_packet pkt;

	init_packet(c, &pkt, MRC_OP_NAK, 0, now_ns);
	pkt.flags = c->nak.ce ? MRC_F_ECE : 0;
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

static bool work_outstanding(const struct mrc_conn *c)
{
	return c->snd_una != c->snd_nxt || c->sq_head != c->sq_tail || c->rr_head != c->rr_tail;
}

static void note_dead_round(struct mrc_conn *c, uint64_t now_ns);

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
	interval = path_rto(c, p);
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
		note_dead_round(c, now_ns);
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
	pkt.flags = r.ce ? MRC_F_ECE : 0; /* */
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
	default:
		return MRC_OP_READ_REQ;
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
	pkt.payload_len = (uint16_t)(m->len - off < c->cfg.max_payload ? m->len - off
									 : c->cfg.max_payload);
	*payload_len = pkt.payload_len;
	if (hdr + pkt.payload_len > cap)
		return false;
	if (c->cfg.payload_by_reference && pkt.payload_len)
		piece = sge_piece(m->wr.sge, m->wr.num_sge, off, pkt.payload_len);
	if (piece) {
		pkt.payload = piece;
	} else {
		sge_gather(m->wr.sge, m->wr.num_sge, off, (uint8_t *)buf + hdr, pkt.payload_len);
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
 * next packet may leave; it may lag behind now by at most the bucket depth, which is
 * max(2 packets, 10 us at the hinted rate).
 */
static void pace(struct mrc_conn *c, size_t payload, uint64_t now_ns)
{
	uint64_t kbps = c->rate_hint_kbps;
	uint64_t gap, depth_bytes, depth_ns;

	if (!kbps || rocev2(c)) /* RoCEv2 has no rate hint */
		return;
	gap = (uint64_t)payload * 8 * 1000000 / kbps;
	depth_bytes = kbps * 10 / 8; /* 10 us worth */
	if (depth_bytes < 2u * c->cfg.max_payload)
		depth_bytes = 2u * c->cfg.max_payload;
	depth_ns = depth_bytes * 8 * 1000000 / kbps;
	if (c->pace_next_ns + depth_ns < now_ns)
		c->pace_next_ns = now_ns - depth_ns;
	c->pace_next_ns += gap;
}

/*
 * Counts a retry when a retry timeout (verbs' timeout) has passed on the QP's retry clock
 * without progress, and restarts the clock; true when that exhausts the budget. Losses are
 * repaired per path within RTOs, far faster; the budget is what a peer that stops answering
 * gets, so a peer kept off its CPU for a few RTOs does not end the QP. A timeout
 * of 0 is verbs' infinite one.
 */
static bool retry_exhausted(struct mrc_conn *c, uint64_t now_ns)
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
		p->rto_deadline_ns = now_ns + path_rto(c, p);
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
		if (m->wr.opcode == MRC_WR_READ && c->reads_outstanding >= c->cfg.max_rd_atomic)
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
		struct mrc_tx_slot *s = mrc_tx_slot(c->tx, psn);
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

static bool send_data(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		      uint64_t now_ns, size_t *len)
{
	size_t payload;
	struct mrc_tx_slot *s;
	struct msg *m;
	uint32_t psn;
	int path;

	if (c->rate_hint_kbps && !rocev2(c) && now_ns < c->pace_next_ns)
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
		else if (s->epoch == c->ack_epoch && retry_exhausted(c, now_ns)) {
			enter_error(c, m->kind == MSG_SQ ? m : NULL, MRC_WC_RETRY_EXC_ERR, true);
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
	if (!build_data(c, m, psn, (uint16_t)path, false, buf, cap, now_ns, len, tx, &payload))
		return false;
	s = mrc_tx_slot(c->tx, psn);
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
			if (m->wr.opcode == MRC_WR_READ)
				c->reads_outstanding++;
		}
	} else {
		c->cur_msg = (int32_t)(m - c->msgs);
	}
	set_tx(tx, c->paths[path].plane, c->paths[path].sport, (uint16_t)path, wire_opcode(m));
	return true;
}

bool mrc_conn_send(struct mrc_conn *c, void *buf, size_t cap, struct mrc_tx_info *tx,
		   uint64_t now_ns, size_t *len)
{
	c->last_now_ns = now_ns;
	tx->payload = NULL;
	tx->payload_len = 0;
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
				fail_path(c, p, now_ns);
			return send_probe(c, i, buf, cap, tx, now_ns, len);
		}
	}
	return send_data(c, buf, cap, tx, now_ns, len);
}

/* --- timers ----------------------------------------------------------------------------- */

/*
 * No usable path: each retry timeout that passes without progress costs a retry, on the same
 * clock and count as resends, and the retry budget ends the QP. Probe rounds are when
 * it is looked at.
 */
static void note_dead_round(struct mrc_conn *c, uint64_t now_ns)
{
	struct msg *culprit;

	if (!retry_exhausted(c, now_ns))
		return;
	culprit = msg_of_psn(c, c->snd_una);
	if (!culprit || culprit->kind != MSG_SQ)
		culprit = c->sq_head != c->sq_tail ? sq_msg(c, c->sq_head) : NULL;
	enter_error(c, culprit, MRC_WC_RETRY_EXC_ERR, true);
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
		go_back_n(c);
	else
		c->lost_pending += mrc_loss_detect_timeout(c->tx, c->snd_una, c->snd_nxt, c->paths, i);
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
		fail_path(c, p, now_ns);
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
	if (read_watchdog_armed(c) && retry_exhausted(c, now_ns))
		enter_error(c, sq_msg(c, c->sq_head), MRC_WC_RETRY_EXC_ERR, true);
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
		refresh_rnr_wakeup(c, now_ns);
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
	return sizeof(*c) + (c->sq_cap + c->rr_cap) * sizeof(struct msg) +
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
