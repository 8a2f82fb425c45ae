/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the core tells operators: the control protocol's replies (status, peers, QPs, paths)
 * and its metric families. Counters shown in replies start from the last stat reset; the
 * exported ones only ever grow.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/cm.h"
#include "core/internal.h"

/* --- control replies ----------------------------------------------------------------------- */

static void fill_plane(struct mrc_ctl_plane *out, uint8_t index, uint8_t family, uint16_t flags,
		       const uint8_t addr[16], const char *ifname)
{
	memset(out, 0, sizeof(*out));
	out->index = index;
	out->family = family;
	out->flags = flags;
	memcpy(out->addr, addr, 16);
	if (ifname)
		snprintf(out->ifname, sizeof(out->ifname), "%s", ifname);
}

void mrcd_core_stats(const struct mrcd_core *c, struct mrcd_stats *total)
{
	_Static_assert(sizeof(struct mrcd_stats) % sizeof(uint64_t) == 0, "counters only");
	enum { N = sizeof(struct mrcd_stats) / sizeof(uint64_t) };
	uint64_t sum[N];

	memcpy(sum, &c->stats, sizeof(sum));
	for (unsigned s = 0; s < c->n_shards; s++) {
		uint64_t part[N];

		memcpy(part, &c->shard[s].stats, sizeof(part));
		for (unsigned i = 0; i < N; i++)
			sum[i] += part[i];
	}
	memcpy(total, sum, sizeof(sum));
}

void mrcd_core_status(const struct mrcd_core *c, struct mrc_ctl_status *s)
{
	struct mrcd_stats st;
	unsigned clients = 0;

	mrcd_core_stats(c, &st);
	s->node_id = c->peers.local.node_id;
	/* since the last stat reset */
	s->rx_datagrams = st.rx_datagrams - c->stats_base.rx_datagrams;
	s->rx_malformed = st.rx_malformed - c->stats_base.rx_malformed;
	s->rx_no_qp = st.rx_no_qp - c->stats_base.rx_no_qp;
	s->tx_datagrams = st.tx_datagrams - c->stats_base.tx_datagrams;
	s->n_peers = c->peers.n_peers;
	s->port = c->port;
	s->n_planes = c->cfg->n_planes;
	s->paths_per_plane = c->cfg->paths_per_plane;
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		clients += c->t.client[i].library;
	s->n_clients = clients;
	s->n_qps = c->t.n_qps;
	s->n_cqs = c->t.n_cqs;
	s->n_mrs = c->t.n_mrs;
	s->mapped_bytes = c->t.mapped_bytes;
	s->max_payload = c->peers.local.max_payload;
	s->drained_planes = c->drained_planes;
	if (c->auth) {
		s->auth = c->auth->mode == MRC_AUTH_FULL ? MRC_CTL_AUTH_FULL : MRC_CTL_AUTH_HEADER;
		s->cluster_key = c->auth->has_cluster_key;
		s->allowed_peers = (uint16_t)c->auth->n_allowed;
		memcpy(s->public_key, c->auth->public_key, sizeof(s->public_key));
	}
	for (unsigned i = 0; i < c->cfg->n_planes; i++)
		fill_plane(&s->planes[i], c->cfg->planes[i].index, c->cfg->planes[i].addr.family, 0,
			   c->cfg->planes[i].addr.addr, c->cfg->planes[i].ifname);
}

size_t mrcd_core_peers_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			     size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < c->peers.n_peers && n + sizeof(struct mrc_ctl_peer) <= cap; i++) {
		const struct mrc_peer *p = &c->peers.peers[i];
		struct mrc_ctl_peer out;

		memset(&out, 0, sizeof(out));
		out.node_id = viewer ? 0 : p->info.node_id;
		memcpy(out.named, p->named, 16);
		out.state = (uint8_t)p->state;
		out.port = p->info.udp_port;
		out.n_planes = p->state == MRC_PEER_KNOWN ? p->info.n_addrs : 0;
		for (unsigned k = 0; k < out.n_planes; k++)
			fill_plane(&out.planes[k], p->info.addrs[k].plane, p->info.addrs[k].family,
				   p->info.addrs[k].flags, p->info.addrs[k].addr, NULL);
		memcpy(buf + n, &out, sizeof(out));
		n += sizeof(out);
	}
	return n;
}

/* Whether the viewer may see the QP (an operator: every one). */
static bool visible(const struct mrcd_tables *t, const uint32_t *viewer, const struct mrcd_qp *qp)
{
	return qp->owner >= 0 && (!viewer || t->client[qp->owner].uid == *viewer);
}

size_t mrcd_core_qps_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			   size_t cap)
{
	const struct mrcd_tables *t = &c->t;
	size_t n = 0;

	for (unsigned i = 0; i < MRCD_MAX_QPS && n + sizeof(struct mrc_ctl_qp) <= cap; i++) {
		const struct mrcd_qp *qp = &t->qps[i];
		struct mrc_ctl_qp out;

		if (!visible(t, viewer, qp))
			continue;
		memset(&out, 0, sizeof(out));
		out.qp_num = qp->qpn;
		out.dest_qp_num = qp->req.dest_qp_num;
		out.pid = t->client[qp->owner].pid;
		out.uid = t->client[qp->owner].uid;
		out.state = qp->state;
		out.worker = (uint16_t)qp->shard;
		memcpy(out.peer, qp->req.dgid, 16);
		/* since the last stat reset */
		out.completions = qp->completions - qp->base.completions;
		out.error_completions = qp->error_completions - qp->base.error_completions;
		if (qp->conn) {
			const struct mrc_conn_stats *s = mrc_conn_stats(qp->conn);

			out.n_paths = (uint8_t)mrc_conn_n_paths(qp->conn);
			out.tx_packets = s->tx_data_packets - qp->base.tx_packets;
			out.tx_retransmits = s->tx_retransmits - qp->base.tx_retransmits;
			out.rx_packets = s->rx_packets - qp->base.rx_packets;
			out.rx_bytes = s->rx_placed_bytes - qp->base.rx_bytes;
		}
		memcpy(buf + n, &out, sizeof(out));
		n += sizeof(out);
	}
	return n;
}

size_t mrcd_core_paths_reply(const struct mrcd_core *c, const uint32_t *viewer,
			     const uint32_t *qpn, uint8_t *buf, size_t cap, uint64_t now)
{
	size_t n = 0;

	for (unsigned i = 0; i < MRCD_MAX_QPS; i++) {
		const struct mrcd_qp *qp = &c->t.qps[i];
		struct mrc_conn_info info;

		if (!visible(&c->t, viewer, qp) || !qp->conn || (qpn && qp->qpn != *qpn))
			continue;
		mrc_conn_get_info(qp->conn, &info);
		for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn); k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);
			struct mrc_ctl_path out;

			if (n + sizeof(out) > cap)
				return n;
			memset(&out, 0, sizeof(out));
			out.qp_num = qp->qpn;
			out.index = (uint8_t)k;
			out.plane = p->plane;
			out.sport = p->sport;
			out.state = p->state;
			out.cwnd = p->cc.cwnd;
			out.inflight = p->inflight;
			out.srtt_ns = p->rtt.srtt_ns;
			out.congested = p->state == MRC_PATH_ACTIVE && p->cc.recovery_end_ns > now;
			out.rate_hint_kbps = info.rate_hint_kbps;
			out.min_rtt_us = (uint32_t)(p->rtt.min_ns / 1000);
			if (k < MRC_MAX_PATHS) { /* since the last stat reset */
				out.tx_packets = p->stats.tx_packets - qp->base.path_tx[k];
				out.retransmits = p->stats.retransmits - qp->base.path_retx[k];
				out.ce_marks = p->stats.ecn_echoes - qp->base.path_ecn[k];
			}
			memcpy(buf + n, &out, sizeof(out));
			n += sizeof(out);
		}
	}
	return n;
}

void mrcd_core_stat_reset(struct mrcd_core *c)
{
	mrcd_core_stats(c, &c->stats_base);
	for (unsigned j = 0; j < c->t.n_qps; j++) {
		struct mrcd_qp *qp = &c->t.qps[c->t.active[j]];
		struct mrcd_qp_base *b = &qp->base;

		memset(b, 0, sizeof(*b));
		b->completions = qp->completions;
		b->error_completions = qp->error_completions;
		if (!qp->conn)
			continue;
		b->tx_packets = mrc_conn_stats(qp->conn)->tx_data_packets;
		b->tx_retransmits = mrc_conn_stats(qp->conn)->tx_retransmits;
		b->rx_packets = mrc_conn_stats(qp->conn)->rx_packets;
		b->rx_bytes = mrc_conn_stats(qp->conn)->rx_placed_bytes;
		for (unsigned k = 0; k < mrc_conn_n_paths(qp->conn) && k < MRC_MAX_PATHS; k++) {
			const struct mrc_path *p = mrc_conn_path(qp->conn, k);

			b->path_tx[k] = p->stats.tx_packets;
			b->path_retx[k] = p->stats.retransmits;
			b->path_ecn[k] = p->stats.ecn_echoes;
		}
	}
	core_event(c, MRCD_NOTICE, "counters reset by an operator");
}

/* --- metrics ------------------------------------------------------------------------------- */

struct out {
	char *buf;
	size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= o->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct plane_sums {
	unsigned paths[MRC_CTL_PATH_STATES];
	uint64_t tx_packets, retransmits, ecn;
	double srtt_sum;
	unsigned srtt_n;
};

/* One counter family with a sample per configured plane; `field` is a uint64_t of plane_sums. */
static void plane_counter(struct out *o, const struct mrcd_config *cfg,
			  const struct plane_sums *p, const char *name, const char *help,
			  size_t field)
{
	family(o, name, "counter", help);
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)&p[cfg->planes[i].index] + field, sizeof(v));
		put(o, "%s{plane=\"%u\"} %llu\n", name, cfg->planes[i].index,
		    (unsigned long long)v);
	}
}

/* The reasons a UD datagram is dropped, as the metrics label them. */
static const struct {
	enum mrc_drop_reason reason;
	const char *name;
} ud_drops[] = {
	{ MRC_DROP_WRONG_QPN, "no_qp" },	{ MRC_DROP_QP_STATE, "qp_state" },
	{ MRC_DROP_NOT_ADMITTED, "not_admitted" }, { MRC_DROP_UD_QKEY, "qkey" },
	{ MRC_DROP_UD_NO_RECEIVE, "no_receive" }, { MRC_DROP_UD_TOO_LONG, "too_long" },
	{ MRC_DROP_UNAUTHENTICATED, "unauthenticated" },
};

/* The reasons discovery refuses a DISCOVER*, as the metrics label them. */
static const struct {
	enum mrc_drop_reason reason;
	const char *name;
} discovery_drops[] = {
	{ MRC_DROP_NOT_ADMITTED, "not_admitted" },
	{ MRC_DROP_STALE_DISCOVER, "stale" },
	{ MRC_DROP_PEERS_FULL, "peers_full" },
	{ MRC_DROP_OPCODE_REFUSED, "opcode_refused" },
	{ MRC_DROP_UNAUTHENTICATED, "unauthenticated" },
	{ MRC_DROP_PEER_KEY, "peer_key" },
};

/* The reasons a connected QP refuses a well-formed packet, as the metrics label them. */
static const char *const qp_drop_names[MRC_DROP_REASON_MAX + 1] = {
	[MRC_DROP_WRONG_QPN] = "wrong_qpn",
	[MRC_DROP_QP_STATE] = "qp_state",
	[MRC_DROP_DUPLICATE] = "duplicate",
	[MRC_DROP_ABOVE_WINDOW] = "above_window",
	[MRC_DROP_OUT_OF_ORDER] = "out_of_order",
	[MRC_DROP_REMOTE_ACCESS] = "remote_access",
	[MRC_DROP_RNR] = "rnr",
	[MRC_DROP_INVALID_REQ] = "invalid_req",
	[MRC_DROP_BAD_READ_RESP] = "bad_read_resp",
	[MRC_DROP_BAD_ACK] = "bad_ack",
	[MRC_DROP_STALE_PROBE] = "stale_probe",
	[MRC_DROP_OPCODE_REFUSED] = "opcode_refused",
	[MRC_DROP_QP_CLOSED] = "qp_closed",
	[MRC_DROP_RESPONDER_BUSY] = "responder_busy",
	[MRC_DROP_UNAUTHENTICATED] = "unauthenticated",
};

/* The connection manager's (SPEC 17): ids by state, messages, retries, what it refused. */
static void cm_metrics(const struct mrcd_core *c, struct out *o)
{
	const struct mrcd_cm *m = c->cm;
	const struct mrcd_cm_stats *st = &m->stats;
	unsigned by_state[MRC_CM_STATES] = { 0 };

	for (unsigned i = 0; i < MRCD_MAX_CM_IDS && m->n_ids; i++)
		if (m->ids[i].owner != -1)
			by_state[m->ids[i].state < MRC_CM_STATES ? m->ids[i].state : 0]++;
	family(o, "metaroce_cm_ids", "gauge",
	       "rdma_cm ids, by state (timewait: ended, still answering the peer).");
	for (unsigned s = 0; s < MRC_CM_STATES; s++)
		put(o, "metaroce_cm_ids{state=\"%s\"} %u\n", mrc_ctl_cm_state_name(s), by_state[s]);
	family(o, "metaroce_cm_messages_total", "counter",
	       "Connection-management messages between daemons, by type and direction.");
	for (unsigned t = 1; t <= MRC_CM_TYPE_MAX; t++) {
		put(o, "metaroce_cm_messages_total{type=\"%s\",direction=\"tx\"} %llu\n",
		    mrc_cm_type_name(t), (unsigned long long)st->tx[t]);
		put(o, "metaroce_cm_messages_total{type=\"%s\",direction=\"rx\"} %llu\n",
		    mrc_cm_type_name(t), (unsigned long long)st->rx[t]);
	}
	family(o, "metaroce_cm_malformed_total", "counter",
	       "Connection-management messages refused by their checks, by reason (R-534).");
	for (unsigned r = 1; r <= MRC_CM_E_MAX; r++)
		put(o, "metaroce_cm_malformed_total{reason=\"%s\"} %llu\n", mrc_cm_error_name(r),
		    (unsigned long long)st->malformed[r]);
	family(o, "metaroce_cm_retransmits_total", "counter",
	       "REQ, REP and DREQ sent again for want of an answer.");
	put(o, "metaroce_cm_retransmits_total %llu\n", (unsigned long long)st->retransmits);
	family(o, "metaroce_cm_timeouts_total", "counter",
	       "Connections that failed because the peer never answered.");
	put(o, "metaroce_cm_timeouts_total %llu\n", (unsigned long long)st->timeouts);
	family(o, "metaroce_cm_connections_total", "counter", "Connections established.");
	put(o, "metaroce_cm_connections_total %llu\n", (unsigned long long)st->connections);
	family(o, "metaroce_cm_stray_total", "counter",
	       "Well-formed messages naming no connection here, or from a node not known there.");
	put(o, "metaroce_cm_stray_total %llu\n", (unsigned long long)st->stray);
	family(o, "metaroce_cm_backlog_drops_total", "counter",
	       "Requests a full listener did not take (the peer's retry may find room).");
	put(o, "metaroce_cm_backlog_drops_total %llu\n", (unsigned long long)st->backlog_drops);
	family(o, "metaroce_cm_events_total", "counter", "Events told to clients' channels.");
	put(o, "metaroce_cm_events_total %llu\n", (unsigned long long)st->events);
	family(o, "metaroce_cm_events_dropped_total", "counter",
	       "Events dropped: a channel held 4096 its reader had not taken.");
	put(o, "metaroce_cm_events_dropped_total %llu\n", (unsigned long long)st->events_dropped);
}

/* Each worker's share: the QPs it runs and how busy running them kept it. */
static void worker_metrics(const struct mrcd_core *c, struct out *o)
{
	family(o, "metaroce_worker_qps", "gauge", "Queue pairs each worker thread runs.");
	for (unsigned s = 0; s < c->n_shards; s++)
		put(o, "metaroce_worker_qps{worker=\"%u\"} %u\n", s, c->shard[s].n_qps);
	family(o, "metaroce_worker_busy_turns_total", "counter",
	       "Turns of each worker's loop that found queue pairs with work.");
	for (unsigned s = 0; s < c->n_shards; s++)
		put(o, "metaroce_worker_busy_turns_total{worker=\"%u\"} %llu\n", s,
		    (unsigned long long)c->shard[s].pump_turns);
	family(o, "metaroce_worker_qp_visits_total", "counter",
	       "Queue pair visits each worker made (a visit sends, receives or times a QP).");
	for (unsigned s = 0; s < c->n_shards; s++)
		put(o, "metaroce_worker_qp_visits_total{worker=\"%u\"} %llu\n", s,
		    (unsigned long long)c->shard[s].qps_visited);
}

size_t mrcd_core_metrics(const struct mrcd_core *c, char *buf, size_t cap)
{
	static const char *qp_states[5] = { "idle", "resolving", "rtr", "rts", "error" };
	const struct mrcd_tables *t = &c->t;
	const struct mrcd_config *cfg = c->cfg;
	struct plane_sums p[MRC_MAX_PLANES];
	struct out o = { buf, cap, 0 };
	unsigned clients = 0, qp_state[5] = { 0 }, lingering = 0;
	uint64_t completions = t->retired.completions, errors = t->retired.error_completions;
	uint64_t qp_rx_drops[MRC_DROP_REASON_MAX + 1] = { 0 };
	struct mrcd_stats st;

	mrcd_core_stats(c, &st);
	for (unsigned s = 0; s < c->n_shards; s++) {
		lingering += c->shard[s].lingering.n;
		for (unsigned r = 0; r <= MRC_DROP_REASON_MAX; r++)
			qp_rx_drops[r] += c->shard[s].qp_rx_drops[r];
	}
	memset(p, 0, sizeof(p));
	/* the counts of QPs that are gone: the totals never fall */
	for (unsigned i = 0; i < MRC_MAX_PLANES; i++) {
		p[i].tx_packets = t->retired.path_tx[i];
		p[i].retransmits = t->retired.path_retx[i];
		p[i].ecn = t->retired.path_ecn[i];
	}
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		clients += t->client[i].library;
	for (unsigned j = 0; j < t->n_qps; j++) {
		const struct mrcd_qp *qp = &t->qps[t->active[j]];

		qp_state[qp->state < 5 ? qp->state : 4]++;
		completions += qp->completions;
		errors += qp->error_completions;
		for (unsigned k = 0; qp->conn && k < mrc_conn_n_paths(qp->conn); k++) {
			const struct mrc_path *path = mrc_conn_path(qp->conn, k);
			struct plane_sums *s = &p[path->plane % MRC_MAX_PLANES];

			s->paths[path->state < MRC_CTL_PATH_STATES ? path->state : 0]++;
			s->tx_packets += path->stats.tx_packets;
			s->retransmits += path->stats.retransmits;
			s->ecn += path->stats.ecn_echoes;
			if (path->rtt.srtt_ns) {
				s->srtt_sum += path->rtt.srtt_ns / 1e9;
				s->srtt_n++;
			}
		}
	}

	family(&o, "metaroce_clients", "gauge", "Library clients connected.");
	put(&o, "metaroce_clients %u\n", clients);
	family(&o, "metaroce_qps", "gauge", "Queue pairs of all clients, by state.");
	for (unsigned i = 0; i < 5; i++)
		put(&o, "metaroce_qps{state=\"%s\"} %u\n", qp_states[i], qp_state[i]);
	family(&o, "metaroce_qps_lingering", "gauge",
	       "Destroyed queue pairs still answering their peers' resends.");
	put(&o, "metaroce_qps_lingering %u\n", lingering);
	worker_metrics(c, &o);
	family(&o, "metaroce_memory_regions", "gauge", "Memory regions registered.");
	put(&o, "metaroce_memory_regions %u\n", t->n_mrs);
	family(&o, "metaroce_memory_windows", "gauge", "Memory windows allocated, bound or not.");
	put(&o, "metaroce_memory_windows %u\n", t->n_mws);
	family(&o, "metaroce_mapped_bytes", "gauge", "Client memory the daemon maps.");
	put(&o, "metaroce_mapped_bytes %llu\n", (unsigned long long)t->mapped_bytes);
	family(&o, "metaroce_peers", "gauge", "Peer daemons known or being discovered.");
	put(&o, "metaroce_peers %u\n", c->peers.n_peers);
	family(&o, "metaroce_auth", "gauge",
	       "Packet authentication in force (SPEC 14.6): 1 on the mode's sample; off is a lab's.");
	put(&o, "metaroce_auth{mode=\"off\"} %u\n", c->auth ? 0 : 1);
	put(&o, "metaroce_auth{mode=\"header\"} %u\n",
	    c->auth && c->auth->mode == MRC_AUTH_HEADER ? 1 : 0);
	put(&o, "metaroce_auth{mode=\"full\"} %u\n", c->auth && c->auth->mode == MRC_AUTH_FULL ? 1 : 0);
	family(&o, "metaroce_discovery_refused_total", "counter",
	       "DISCOVER and DISCOVER_REPLY packets refused, by reason (SPEC 12, 14.6).");
	for (unsigned i = 0; i < sizeof(discovery_drops) / sizeof(discovery_drops[0]); i++)
		put(&o, "metaroce_discovery_refused_total{reason=\"%s\"} %llu\n",
		    discovery_drops[i].name,
		    (unsigned long long)c->peers.refused[discovery_drops[i].reason]);
	family(&o, "metaroce_rx_datagrams_total", "counter", "Datagrams received.");
	put(&o, "metaroce_rx_datagrams_total %llu\n", (unsigned long long)st.rx_datagrams);
	family(&o, "metaroce_rx_malformed_total", "counter",
	       "Datagrams the decoder refused (never answered).");
	put(&o, "metaroce_rx_malformed_total %llu\n", (unsigned long long)st.rx_malformed);
	family(&o, "metaroce_rx_no_qp_total", "counter",
	       "Datagrams for a QP this daemon does not have, or from an address not its peer's.");
	put(&o, "metaroce_rx_no_qp_total %llu\n", (unsigned long long)st.rx_no_qp);
	family(&o, "metaroce_qp_rx_dropped_total", "counter",
	       "Well-formed packets a connected QP refused, by reason (SPEC R-121): guessed keys "
	       "show as remote_access, forged ACKs, NAKs and CLOSEs as bad_ack (R-334), any "
	       "packet without the right tag as unauthenticated (R-343).");
	for (unsigned r = 0; r <= MRC_DROP_REASON_MAX; r++)
		if (qp_drop_names[r])
			put(&o, "metaroce_qp_rx_dropped_total{reason=\"%s\"} %llu\n", qp_drop_names[r],
			    (unsigned long long)qp_rx_drops[r]);
	family(&o, "metaroce_user_refusals_total", "counter",
	       "Requests and connections refused because their user holds a user_max_* limit.");
	put(&o, "metaroce_user_refusals_total %llu\n", (unsigned long long)st.user_refusals);
	family(&o, "metaroce_tx_datagrams_total", "counter", "Datagrams sent.");
	put(&o, "metaroce_tx_datagrams_total %llu\n", (unsigned long long)st.tx_datagrams);
	family(&o, "metaroce_tx_held_dropped_total", "counter",
	       "Datagrams given up to loss recovery after the local queue took nothing for 2 ms.");
	put(&o, "metaroce_tx_held_dropped_total %llu\n",
	    (unsigned long long)st.tx_held_dropped);
	family(&o, "metaroce_ud_datagrams_total", "counter",
	       "UD datagrams sent and delivered into a receive (SPEC 4.8).");
	put(&o, "metaroce_ud_datagrams_total{direction=\"tx\"} %llu\n",
	    (unsigned long long)st.ud_tx);
	put(&o, "metaroce_ud_datagrams_total{direction=\"rx\"} %llu\n",
	    (unsigned long long)st.ud_rx);
	family(&o, "metaroce_ud_dropped_total", "counter",
	       "UD datagrams dropped, by reason (SPEC R-422, R-423; qp_state: not a UD QP at "
	       "RTR or RTS; unroutable: sent to an address this daemon may not reach).");
	for (unsigned i = 0; i < sizeof(ud_drops) / sizeof(ud_drops[0]); i++)
		put(&o, "metaroce_ud_dropped_total{reason=\"%s\"} %llu\n", ud_drops[i].name,
		    (unsigned long long)st.ud_dropped[ud_drops[i].reason]);
	put(&o, "metaroce_ud_dropped_total{reason=\"unroutable\"} %llu\n",
	    (unsigned long long)st.ud_unroutable);
	family(&o, "metaroce_cq_events_total", "counter",
	       "Completion events raised on clients' completion channels (each a wakeup).");
	put(&o, "metaroce_cq_events_total %llu\n", (unsigned long long)st.cq_events);
	family(&o, "metaroce_cq_events_spun_total", "counter",
	       "Completions an armed CQ's library took itself while spinning (METAROCE_BUSY_POLL).");
	put(&o, "metaroce_cq_events_spun_total %llu\n", (unsigned long long)st.cq_events_spun);
	family(&o, "metaroce_completions_total", "counter", "Work completions delivered.");
	put(&o, "metaroce_completions_total %llu\n", (unsigned long long)completions);
	family(&o, "metaroce_error_completions_total", "counter",
	       "Work completions with an error status.");
	put(&o, "metaroce_error_completions_total %llu\n", (unsigned long long)errors);

	family(&o, "metaroce_path_up", "gauge", "Paths of all QPs on the plane, by state.");
	for (unsigned i = 0; i < cfg->n_planes; i++)
		for (unsigned s = 0; s < MRC_CTL_PATH_STATES; s++)
			put(&o, "metaroce_path_up{plane=\"%u\",state=\"%s\"} %u\n",
			    cfg->planes[i].index, mrc_ctl_path_state_name(s),
			    p[cfg->planes[i].index].paths[s]);
	plane_counter(&o, cfg, p, "metaroce_path_tx_packets_total",
		      "Sequenced packets sent on the plane's paths, retransmissions included.",
		      offsetof(struct plane_sums, tx_packets));
	plane_counter(&o, cfg, p, "metaroce_path_retransmits_total",
		      "Retransmissions on the plane's paths.", offsetof(struct plane_sums, retransmits));
	plane_counter(&o, cfg, p, "metaroce_path_ecn_marks_total",
		      "Acknowledgements that echoed ECN CE, on the plane's paths.",
		      offsetof(struct plane_sums, ecn));
	family(&o, "metaroce_path_rtt_seconds", "gauge",
	       "Mean smoothed RTT of the plane's paths that have one.");
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		const struct plane_sums *s = &p[cfg->planes[i].index];

		put(&o, "metaroce_path_rtt_seconds{plane=\"%u\"} %.9f\n", cfg->planes[i].index,
		    s->srtt_n ? s->srtt_sum / s->srtt_n : 0.0);
	}
	cm_metrics(c, &o);
	return o.len;
}
