/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "netsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/random.h"

#define FRAME_OVERHEAD 50 /* Ethernet + IPv4 + UDP + preamble/IFG, rounded */
#define PKT_CAP 9216

enum hop { HOP_UPLINK, HOP_CORE, HOP_DOWNLINK, HOP_DELIVER, HOP_WAKE };

struct sim_event {
	uint64_t t;
	uint64_t seq;
	uint8_t hop; /* enum hop: the stage the packet enters at t */
	uint8_t plane;
	uint8_t core;
	bool ce;
	uint16_t sport;
	uint16_t src_host, dst_host;
	uint32_t len;
	uint8_t data[];
};

/* --- randomness ------------------------------------------------------------------------ */

uint64_t sim_random(struct sim *sim)
{
	return mrc_splitmix64(&sim->rng);
}

double sim_uniform(struct sim *sim)
{
	return (double)(sim_random(sim) >> 11) * (1.0 / 9007199254740992.0);
}

/* --- event heap ---------------------------------------------------------------------- */

static bool before(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(struct sim *sim, struct sim_event *ev)
{
	unsigned i;

	if (sim->heap_len == sim->heap_cap) {
		sim->heap_cap = sim->heap_cap ? sim->heap_cap * 2 : 1024;
		sim->heap = realloc(sim->heap, sim->heap_cap * sizeof(*sim->heap));
		if (!sim->heap)
			abort();
	}
	ev->seq = sim->seq++;
	i = sim->heap_len++;
	while (i && before(ev, sim->heap[(i - 1) / 2])) {
		sim->heap[i] = sim->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	sim->heap[i] = ev;
}

static struct sim_event *heap_pop(struct sim *sim)
{
	struct sim_event *top = sim->heap[0], *last = sim->heap[--sim->heap_len];
	unsigned i = 0;

	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i;
		const struct sim_event *cand = last;

		if (l < sim->heap_len && before(sim->heap[l], cand)) {
			m = l;
			cand = sim->heap[l];
		}
		if (r < sim->heap_len && before(sim->heap[r], cand))
			m = r;
		if (m == i)
			break;
		sim->heap[i] = sim->heap[m];
		i = m;
	}
	if (sim->heap_len)
		sim->heap[i] = last;
	return top;
}

/* --- setup ---------------------------------------------------------------------------- */

void sim_config_default(struct sim_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->hosts = 2;
	cfg->planes = 1;
	cfg->core_links = 4;
	/* 100 Gbit/s host links, 400 Gbit/s core, 1 us per hop: a 6 us unloaded RTT. Switch
	 * queues (core, downlink) mark ECN above 64 KiB and drop above 1 MiB; the uplink is
	 * the sender's own NIC queue, which holds back rather than marks or drops. */
	cfg->core.rate_bps = 400000000000ull;
	cfg->core.delay_ns = 1000;
	cfg->core.buffer_bytes = 1 << 20;
	cfg->core.ecn_bytes = 64 * 1024;
	cfg->downlink = cfg->core;
	cfg->downlink.rate_bps = 100000000000ull;
	cfg->uplink.rate_bps = 100000000000ull;
	cfg->uplink.delay_ns = 1000;
	cfg->uplink.buffer_bytes = 16 << 20;
	cfg->seed = 1;
}

struct sim *sim_new(const struct sim_config *cfg)
{
	struct sim *sim = calloc(1, sizeof(*sim));

	if (!sim || cfg->hosts > SIM_MAX_HOSTS || cfg->planes > SIM_MAX_PLANES ||
	    cfg->core_links > SIM_MAX_CORE || !cfg->core_links || !cfg->planes)
		abort();
	sim->n_hosts = cfg->hosts;
	sim->n_planes = cfg->planes;
	sim->n_core = cfg->core_links;
	sim->rng = cfg->seed;
	sim->fast_path_placement = cfg->fast_path_placement;
	sim->fast_path_poison = cfg->fast_path_poison;
	for (unsigned h = 0; h < cfg->hosts; h++) {
		for (unsigned p = 0; p < cfg->planes; p++) {
			sim->uplink[h][p].p = cfg->uplink;
			sim->downlink[h][p].p = cfg->downlink;
		}
		if (mrc_rate_domain_init(&sim->rate[h], cfg->rx_capacity_kbps, SIM_MAX_ENDPOINTS))
			abort();
	}
	for (unsigned p = 0; p < cfg->planes; p++)
		for (unsigned l = 0; l < cfg->core_links; l++)
			sim->core[p][l].p = cfg->core;
	return sim;
}

void sim_free(struct sim *sim)
{
	if (!sim)
		return;
	for (unsigned i = 0; i < sim->n_eps; i++) {
		mrc_conn_free(sim->eps[i]->conn);
		free(sim->eps[i]);
	}
	for (unsigned h = 0; h < sim->n_hosts; h++)
		mrc_rate_domain_fini(&sim->rate[h]);
	while (sim->heap_len)
		free(heap_pop(sim));
	free(sim->heap);
	free(sim);
}

void sim_destroy(struct sim_endpoint *ep, bool linger)
{
	if (!ep->conn)
		return;
	if (linger) {
		mrc_conn_close(ep->conn, ep->sim->now_ns);
		ep->dirty = true;
		return;
	}
	mrc_conn_free(ep->conn);
	ep->conn = NULL;
}

struct sim_stage *sim_core(struct sim *sim, unsigned plane, unsigned link)
{
	return &sim->core[plane][link];
}

static int ep_mr_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
			uint8_t **host)
{
	struct sim_endpoint *ep = user;

	for (unsigned i = 0; i < ep->n_mrs; i++) {
		const struct sim_mr *mr = &ep->mrs[i];
		uint64_t base = (uint64_t)(uintptr_t)mr->host;

		if (!mr->key || mr->key != key)
			continue;
		if ((mr->access & access) != access || addr < base || len > mr->len ||
		    addr - base > mr->len - len)
			return -1;
		*host = mr->host + (addr - base);
		return 0;
	}
	return -1;
}

static void ep_complete(void *user, bool from_recv, const struct mrc_completion *wc)
{
	struct sim_endpoint *ep = user;

	if (from_recv)
		ep->recv_completions++;
	else
		ep->send_completions++;
	if (wc->status != MRC_WC_SUCCESS)
		ep->errors++;
	else if (!from_recv)
		ep->completed_bytes += wc->byte_len;
	ep->last_wc = *wc;
	ep->last_from_recv = from_recv;
	if (ep->on_complete)
		ep->on_complete(ep, from_recv, wc);
}

/* SEND_INV: windows of this endpoint may be invalidated; an invalidated key resolves no more */
static int ep_may_invalidate(void *user, uint32_t key)
{
	struct sim_endpoint *ep = user;

	for (unsigned i = 0; i < ep->n_mrs; i++)
		if (ep->mrs[i].key == key && key)
			return ep->mrs[i].window ? 0 : -1;
	return -1;
}

static void ep_invalidate(void *user, uint32_t key)
{
	struct sim_endpoint *ep = user;

	for (unsigned i = 0; i < ep->n_mrs; i++)
		if (ep->mrs[i].key == key && ep->mrs[i].window)
			ep->mrs[i].key = 0;
}

uint32_t sim_register_window(struct sim_endpoint *ep, void *host, uint32_t len, unsigned access)
{
	uint32_t key = sim_register(ep, host, len, access);

	ep->mrs[ep->n_mrs - 1].window = true;
	return key;
}

uint32_t sim_register(struct sim_endpoint *ep, void *host, uint32_t len, unsigned access)
{
	struct sim_mr *mr;

	if (ep->n_mrs == SIM_MAX_MRS)
		abort();
	mr = &ep->mrs[ep->n_mrs++];
	/* keys carry random bits like the real thing, and differ per endpoint */
	mr->key = (uint32_t)(sim_random(ep->sim) & 0xffffff00u) | ep->n_mrs;
	mr->host = host;
	mr->len = len;
	mr->access = access;
	return mr->key;
}

static struct sim_endpoint *new_endpoint(struct sim *sim, unsigned host, uint32_t qpn)
{
	struct sim_endpoint *ep = calloc(1, sizeof(*ep));

	if (!ep || sim->n_eps == SIM_MAX_ENDPOINTS)
		abort();
	ep->sim = sim;
	ep->index = sim->n_eps;
	ep->host = host;
	ep->qpn = qpn;
	sim->eps[sim->n_eps++] = ep;
	return ep;
}

void sim_connect(struct sim *sim, unsigned host_a, unsigned host_b,
		 const struct mrc_conn_config *base, unsigned paths_per_plane,
		 struct sim_endpoint **a, struct sim_endpoint **b)
{
	static const struct mrc_conn_callbacks cb = {
		.mr_lookup = ep_mr_lookup,
		.complete = ep_complete,
		.may_invalidate = ep_may_invalidate,
		.invalidate = ep_invalidate,
	};
	struct sim_endpoint *ep[2];
	unsigned hosts[2] = { host_a, host_b };

	ep[0] = new_endpoint(sim, host_a, 0x100 + sim->n_eps);
	ep[1] = new_endpoint(sim, host_b, 0x100 + sim->n_eps);
	for (int side = 0; side < 2; side++) {
		struct mrc_conn_config cfg = *base;
		unsigned n = 0;

		cfg.local_qpn = ep[side]->qpn;
		cfg.remote_qpn = ep[!side]->qpn;
		cfg.sq_psn = side ? base->rq_psn : base->sq_psn;
		cfg.rq_psn = side ? base->sq_psn : base->rq_psn;
		cfg.auth_tx = side ? base->auth_rx : base->auth_tx; /* one's tx is the other's rx */
		cfg.auth_rx = side ? base->auth_tx : base->auth_rx;
		cfg.seal_tx = side ? base->seal_rx : base->seal_tx;
		cfg.seal_rx = side ? base->seal_tx : base->seal_rx;
		for (unsigned p = 0; p < sim->n_planes; p++) {
			for (unsigned k = 0; k < paths_per_plane && n < MRC_MAX_PATHS; k++, n++) {
				cfg.paths[n].plane = (uint8_t)p;
				cfg.paths[n].sport =
					(uint16_t)(MRC_UDP_SPORT_MIN +
						   (sim_random(sim) % (MRC_UDP_SPORT_MAX -
								       MRC_UDP_SPORT_MIN)));
			}
		}
		cfg.n_paths = (uint8_t)n;
		cfg.seed = sim_random(sim);
		cfg.rate_domain = sim->rate[hosts[side]].capacity_kbps ? &sim->rate[hosts[side]]
								       : NULL;
		cfg.drop_counts = ep[side]->drops;
		ep[side]->conn = mrc_conn_new(&cfg, &cb, ep[side], sim->now_ns);
		if (!ep[side]->conn)
			abort();
	}
	*a = ep[0];
	*b = ep[1];
}

/* --- moving packets ------------------------------------------------------------------- */

static unsigned ecmp(uint16_t src, uint16_t dst, uint16_t sport, unsigned n)
{
	uint32_t h = (uint32_t)src * 0x9e3779b1u ^ (uint32_t)dst * 0x85ebca6bu ^
		     (uint32_t)sport * 0xc2b2ae35u;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h % n;
}

unsigned sim_core_link_of(const struct sim *sim, unsigned src_host, unsigned dst_host,
			  uint16_t sport)
{
	return ecmp((uint16_t)src_host, (uint16_t)dst_host, sport, sim->n_core);
}

static struct sim_stage *stage_of(struct sim *sim, const struct sim_event *ev)
{
	switch (ev->hop) {
	case HOP_UPLINK:
		return &sim->uplink[ev->src_host][ev->plane];
	case HOP_CORE:
		return &sim->core[ev->plane][ev->core];
	default:
		return &sim->downlink[ev->dst_host][ev->plane];
	}
}

static struct sim_event *copy_event(const struct sim_event *ev)
{
	struct sim_event *c = malloc(sizeof(*c) + ev->len);

	if (!c)
		abort();
	memcpy(c, ev, sizeof(*c) + ev->len);
	return c;
}

/* The packet enters a stage now: impairments, queueing, then on to the next hop. */
static void enter_stage(struct sim *sim, struct sim_event *ev)
{
	struct sim_stage *s = stage_of(sim, ev);
	uint64_t backlog = 0, depart;
	uint32_t wire = ev->len + FRAME_OVERHEAD;

	s->packets++;
	s->bytes += ev->len;
	if (s->p.blackhole || (s->p.drop_above_bytes && ev->len > s->p.drop_above_bytes)) {
		s->dropped_blackhole++;
		free(ev);
		return;
	}
	if (s->p.burst_enter > 0) {
		if (s->burst_bad)
			s->burst_bad = sim_uniform(sim) >= s->p.burst_exit;
		else
			s->burst_bad = sim_uniform(sim) < s->p.burst_enter;
		if (s->burst_bad) {
			s->dropped_loss++;
			free(ev);
			return;
		}
	}
	if (s->p.loss > 0 && sim_uniform(sim) < s->p.loss) {
		s->dropped_loss++;
		free(ev);
		return;
	}
	backlog = sim_stage_backlog(sim, s);
	if (s->p.buffer_bytes && backlog + wire > s->p.buffer_bytes) {
		s->dropped_full++;
		free(ev);
		return;
	}
	if (backlog > s->max_backlog_bytes)
		s->max_backlog_bytes = backlog;
	if (s->p.ecn_bytes && backlog > s->p.ecn_bytes) {
		ev->ce = true;
		s->marked++;
	}
	depart = sim->now_ns;
	if (s->p.rate_bps) {
		depart = (s->busy_until_ns > sim->now_ns ? s->busy_until_ns : sim->now_ns) +
			 (uint64_t)wire * 8000000000ull / s->p.rate_bps;
		s->busy_until_ns = depart;
	}
	ev->t = depart + s->p.delay_ns;
	if (s->p.jitter_ns)
		ev->t += sim_random(sim) % s->p.jitter_ns;
	if (s->p.corrupt > 0 && sim_uniform(sim) < s->p.corrupt && ev->len) {
		uint64_t bit = sim_random(sim) % ((uint64_t)ev->len * 8);

		ev->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		s->corrupted++;
	}
	ev->hop++;
	if (s->p.duplicate > 0 && sim_uniform(sim) < s->p.duplicate) {
		struct sim_event *dup = copy_event(ev);

		dup->t += 1 + sim_random(sim) % 1000;
		s->duplicated++;
		heap_push(sim, dup);
	}
	heap_push(sim, ev);
}

static struct sim_endpoint *endpoint_at(struct sim *sim, unsigned host, uint32_t qpn)
{
	for (unsigned i = 0; i < sim->n_eps; i++)
		if (sim->eps[i]->host == host && sim->eps[i]->qpn == qpn)
			return sim->eps[i];
	return NULL;
}

/*
 * What the XDP program does before the engine hears of a packet: a WRITE into a region that
 * allows it, or a READ response into the sink its READ named, of a PSN the window calls new,
 * lands in memory. True when it placed the packet.
 */
static bool fast_path_place(struct sim_endpoint *ep, const struct mrc_packet *pkt)
{
	const struct mrc_data *d = &pkt->u.data;
	uint8_t *host;

	/* the daemon takes a QP out of the program's maps when it is destroyed */
	if ((pkt->opcode != MRC_OP_WRITE && pkt->opcode != MRC_OP_READ_RESP) ||
	    !pkt->payload_len || mrc_conn_state(ep->conn) != MRC_QPS_RTS ||
	    mrc_conn_rx_verdict(ep->conn, pkt->psn) != MRC_RX_NEW)
		return false;
	if (ep_mr_lookup(ep, d->rkey, d->raddr, pkt->payload_len,
			 pkt->opcode == MRC_OP_WRITE ? MRC_ACCESS_REMOTE_WRITE : 0, &host))
		return false;
	memcpy(host, pkt->payload, pkt->payload_len);
	if (ep->sim->fast_path_poison)
		for (unsigned i = 0; i < pkt->payload_len; i++)
			host[i]++;
	ep->fast_path_placed++;
	return true;
}

static void deliver(struct sim *sim, struct sim_event *ev)
{
	struct mrc_packet pkt;
	struct sim_endpoint *ep;
	struct mrc_rx_info rx = { .plane = ev->plane, .sport = ev->sport, .ce = ev->ce };

	if (mrc_decode(ev->data, ev->len, &pkt) != MRC_WIRE_OK) {
		sim->undecodable++;
		free(ev);
		return;
	}
	ep = endpoint_at(sim, ev->dst_host, pkt.dst_qpn);
	if (!ep || !ep->conn) {
		sim->unroutable++;
		free(ev);
		return;
	}
	sim->delivered++;
	if (sim->fast_path_placement && fast_path_place(ep, &pkt)) {
		rx.placed = true;
		mrc_conn_recv_packet(ep->conn, &rx, &pkt, sim->now_ns);
		ep->dirty = true;
		free(ev);
		return;
	}
	/* the raw entry point, which decodes again, as a daemon without its own demux would */
	mrc_conn_recv(ep->conn, &rx, ev->data, ev->len, sim->now_ns);
	ep->dirty = true;
	free(ev);
}

static struct sim_endpoint *peer_of(struct sim *sim, const struct sim_endpoint *ep)
{
	/* sim_connect creates pairs at consecutive indexes */
	return sim->eps[ep->index ^ 1];
}

/* Bytes queued in the fullest of a host's uplinks (its NIC's transmit queues). */
uint64_t sim_stage_backlog(const struct sim *sim, const struct sim_stage *s)
{
	return s->p.rate_bps && s->busy_until_ns > sim->now_ns
		       ? (s->busy_until_ns - sim->now_ns) * s->p.rate_bps / 8000000000ull
		       : 0;
}

static uint64_t uplink_backlog(const struct sim *sim, unsigned host, uint64_t *drain_at)
{
	uint64_t worst = 0;

	*drain_at = sim->now_ns;
	for (unsigned p = 0; p < sim->n_planes; p++) {
		const struct sim_stage *s = &sim->uplink[host][p];
		uint64_t b = sim_stage_backlog(sim, s);

		if (b > worst) {
			worst = b;
			*drain_at = s->busy_until_ns;
		}
	}
	return worst;
}

/*
 * Moves an endpoint's packets into its uplink. Like a NIC whose transmit ring is full, the
 * uplink stops taking packets above SIM_TX_RING_BYTES: the endpoint is woken when it has
 * drained to half, instead of piling milliseconds of queue into its own host.
 */
static void pump(struct sim *sim, struct sim_endpoint *ep)
{
	uint8_t buf[PKT_CAP];
	struct mrc_tx_info tx;
	uint64_t drain_at;
	size_t len;

	ep->dirty = false;
	if (!ep->conn)
		return;
	for (;;) {
		if (uplink_backlog(sim, ep->host, &drain_at) >= SIM_TX_RING_BYTES) {
			struct sim_event *wake = calloc(1, sizeof(*wake));
			uint64_t half = (uint64_t)SIM_TX_RING_BYTES / 2 * 8000000000ull /
					sim->uplink[ep->host][0].p.rate_bps;

			if (!wake)
				abort();
			wake->hop = HOP_WAKE;
			wake->src_host = (uint16_t)ep->index;
			wake->t = drain_at > half ? drain_at - half : drain_at;
			if (wake->t <= sim->now_ns)
				wake->t = sim->now_ns + 1;
			ep->blocked_until_ns = wake->t;
			heap_push(sim, wake);
			return;
		}
		if (!mrc_conn_send(ep->conn, buf, sizeof(buf), &tx, sim->now_ns, &len)) {
			/* a destroyed QP done lingering and with nothing more to say is freed, as
			 * the daemon frees it */
			if (mrc_conn_state(ep->conn) == MRC_QPS_CLOSED) {
				mrc_conn_free(ep->conn);
				ep->conn = NULL;
			}
			return;
		}
		/* a payload left by reference goes right behind the headers, as a gather list
		 * would send it */
		struct sim_event *ev = malloc(sizeof(*ev) + len + tx.payload_len + tx.trailer_len);

		if (!ev)
			abort();
		memset(ev, 0, sizeof(*ev));
		ev->t = sim->now_ns;
		ev->hop = HOP_UPLINK;
		ev->plane = tx.plane < sim->n_planes ? tx.plane : 0;
		ev->sport = tx.sport;
		ev->src_host = (uint16_t)ep->host;
		ev->dst_host = (uint16_t)peer_of(sim, ep)->host;
		ev->core = (uint8_t)ecmp(ev->src_host, ev->dst_host, tx.sport, sim->n_core);
		ev->len = (uint32_t)len + tx.payload_len + tx.trailer_len;
		memcpy(ev->data, buf, len);
		if (tx.payload)
			memcpy(ev->data + len, tx.payload, tx.payload_len);
		memcpy(ev->data + len + tx.payload_len, tx.trailer, tx.trailer_len);
		enter_stage(sim, ev);
	}
}

static void wake(struct sim *sim, struct sim_event *ev)
{
	sim->eps[ev->src_host]->dirty = true;
	free(ev);
}

/* An endpoint's next deadline, held back while its uplink pushes back: like a daemon
 * waiting for its socket to become writable, it acts on timers once it can send. */
static bool blocked(const struct sim *sim, const struct sim_endpoint *ep)
{
	return ep->blocked_until_ns > sim->now_ns;
}

static uint64_t endpoint_timeout(const struct sim *sim, const struct sim_endpoint *ep)
{
	uint64_t t;

	if (!ep->conn)
		return UINT64_MAX;
	t = mrc_conn_next_timeout(ep->conn);

	return blocked(sim, ep) && t < ep->blocked_until_ns ? ep->blocked_until_ns : t;
}

void sim_run(struct sim *sim, uint64_t until_ns, bool (*stop)(struct sim *, void *), void *arg)
{
	uint64_t stuck = 0, last_now = sim->now_ns;

	for (;;) {
		uint64_t t_timer = UINT64_MAX, t_event;

		for (unsigned i = 0; i < sim->n_eps; i++)
			if (sim->eps[i]->dirty && !blocked(sim, sim->eps[i]))
				pump(sim, sim->eps[i]);
		if (stop && stop(sim, arg))
			return;
		for (unsigned i = 0; i < sim->n_eps; i++) {
			uint64_t t = endpoint_timeout(sim, sim->eps[i]);

			if (t < t_timer)
				t_timer = t;
		}
		t_event = sim->heap_len ? sim->heap[0]->t : UINT64_MAX;
		if (t_timer == UINT64_MAX && t_event == UINT64_MAX) {
			/* nothing will ever happen again: time still passes */
			if (until_ns != UINT64_MAX && until_ns > sim->now_ns)
				sim->now_ns = until_ns;
			return;
		}
		if ((t_timer < t_event ? t_timer : t_event) > until_ns) {
			sim->now_ns = until_ns;
			return;
		}
		sim->events++;
		/* An engine that keeps a deadline in the past without acting on it would spin
		 * its caller forever: fail loudly instead of hanging the test. */
		stuck = sim->now_ns == last_now ? stuck + 1 : 0;
		last_now = sim->now_ns;
		if (stuck > 10000000) {
			fprintf(stderr, "netsim: no progress in virtual time at %llu ns\n",
				(unsigned long long)sim->now_ns);
			for (unsigned i = 0; i < sim->n_eps; i++) {
				struct mrc_conn_info in;

				if (!sim->eps[i]->conn)
					continue;
				mrc_conn_get_info(sim->eps[i]->conn, &in);
				fprintf(stderr,
					"  endpoint %u: next timeout %llu, blocked until %llu, "
					"una %u nxt %u lost %u\n",
					i, (unsigned long long)in.next_timeout_ns,
					(unsigned long long)sim->eps[i]->blocked_until_ns, in.snd_una,
					in.snd_nxt, in.lost_pending);
			}
			abort();
		}
		if (t_timer <= t_event) {
			if (t_timer > sim->now_ns)
				sim->now_ns = t_timer;
			for (unsigned i = 0; i < sim->n_eps; i++) {
				struct sim_endpoint *ep = sim->eps[i];

				if (ep->conn && endpoint_timeout(sim, ep) <= sim->now_ns) {
					mrc_conn_on_timeout(ep->conn, sim->now_ns);
					ep->dirty = true;
				}
			}
		} else {
			struct sim_event *ev = heap_pop(sim);

			if (ev->t > sim->now_ns)
				sim->now_ns = ev->t;
			if (ev->hop == HOP_DELIVER)
				deliver(sim, ev);
			else if (ev->hop == HOP_WAKE)
				wake(sim, ev);
			else
				enter_stage(sim, ev);
		}
	}
}
