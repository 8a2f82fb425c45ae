/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The two-core world of core_world.h: its network, the cores' ops, hosts, clients, time. */
#include "core_world.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_xfer.h" /* fill_pattern */
#include "core/shard.h"
#include "suites.h"

uint64_t world_rnd(struct world *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static double uniform(struct world *w)
{
	return (double)(world_rnd(w) >> 11) / (double)(1ull << 53);
}

/* --- the network ---------------------------------------------------------------------- */

static bool before(const struct packet *a, const struct packet *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(struct world *w, struct packet *p)
{
	unsigned i;

	if (w->n_heap == w->cap_heap) {
		w->cap_heap = w->cap_heap ? 2 * w->cap_heap : 256;
		w->heap = realloc(w->heap, w->cap_heap * sizeof(*w->heap));
		ck_assert_ptr_nonnull(w->heap);
	}
	for (i = w->n_heap++; i && before(p, w->heap[(i - 1) / 2]); i = (i - 1) / 2)
		w->heap[i] = w->heap[(i - 1) / 2];
	w->heap[i] = p;
}

static struct packet *heap_pop(struct world *w)
{
	struct packet *top = w->heap[0], *last = w->heap[--w->n_heap];
	unsigned i = 0;

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= w->n_heap)
			break;
		if (c + 1 < w->n_heap && before(w->heap[c + 1], w->heap[c]))
			c++;
		if (!before(w->heap[c], last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (w->n_heap)
		w->heap[i] = last;
	return top;
}

/* The host and plane an address belongs to. */
static bool where(struct world *w, const uint8_t addr[16], unsigned *host, unsigned *plane)
{
	for (unsigned k = 0; k < 2; k++)
		for (unsigned p = 0; p < w->h[k].cfg.n_planes; p++)
			if (!memcmp(w->h[k].cfg.planes[p].addr.addr, addr, 16)) {
				*host = k;
				*plane = p;
				return true;
			}
	return false;
}

static void send_one(struct host *from, const struct mrcd_dgram *d, uint64_t extra_ns)
{
	struct world *w = from->w;
	unsigned to, plane;
	struct packet *p;

	if (!where(w, d->peer.addr, &to, &plane))
		return;
	p = malloc(sizeof(*p) + mrcd_dgram_tx_len(d));
	ck_assert_ptr_nonnull(p);
	memcpy(p->data, d->data, d->len);
	if (d->payload) { /* a gather list's second piece and its tag, as the backends send it */
		memcpy(p->data + d->len, d->payload, d->payload_len);
		memcpy(p->data + d->len + d->payload_len, d->trailer, d->trailer_len);
	}
	/* each host's plane link: 1 Gbit/s, so a transfer takes milliseconds to happen to */
	{
		uint64_t *busy = &w->busy_until[from->index][d->plane % PLANES];

		*busy = (*busy > w->now ? *busy : w->now) + (uint64_t)(mrcd_dgram_tx_len(d) + 42) * 8;
		p->at = *busy + 20 * US + extra_ns + (w->jitter_ns ? world_rnd(w) % w->jitter_ns : 0);
	}
	p->seq = ++w->seq;
	p->to = to;
	p->g = (struct mrcd_dgram){ .data = p->data, .len = mrcd_dgram_tx_len(d),
				    .cap = mrcd_dgram_tx_len(d),
				    .plane = (uint8_t)plane, .sport = d->sport,
				    .peer = from->cfg.planes[d->plane].addr,
				    .peer_port = from->cfg.port };
	heap_push(w, p);
}

/* --- the core's ops over plain memory ------------------------------------------------- */

/* A local queue that refuses at random: once one datagram of a path is refused, so are that
 * path's later ones in the batch, as the contract says (core.h). */
static bool refused(struct world *w, const struct mrcd_dgram *d, uint32_t *paths_refused)
{
	unsigned path = d->plane * MRCD_SPORTS_PER_PLANE + d->sport % MRCD_SPORTS_PER_PLANE;

	if (path < 32 && (*paths_refused >> path & 1))
		return true;
	if (uniform(w) >= w->refuse)
		return false;
	if (path < 32)
		*paths_refused |= 1u << path;
	w->refusals++;
	return true;
}

/* Each shard's queues have ports of their own, as each worker's sockets do. */
static uint16_t shard_sport(unsigned shard, unsigned plane, unsigned i)
{
	return (uint16_t)(49152 + ((shard * MRC_MAX_PLANES + plane) * MRCD_SPORTS_PER_PLANE + i));
}

static unsigned op_tx(void *io, unsigned shard, const struct mrcd_dgram *d, unsigned n,
		      bool *sent)
{
	struct host *h = io;
	struct world *w = h->w;
	uint32_t paths_refused = 0;
	unsigned went = 0;

	ck_assert_uint_lt(shard, h->core.n_shards);
	for (unsigned i = 0; i < n; i++) {
		sent[i] = !refused(w, &d[i], &paths_refused);
		if (!sent[i] || !h->up)
			continue;
		went++;
		if (uniform(w) < w->loss) {
			w->lost++;
			continue;
		}
		send_one(h, &d[i], 0);
		if (uniform(w) < w->duplicate)
			send_one(h, &d[i], world_rnd(w) % (100 * US));
	}
	return went;
}

static unsigned op_sports(void *io, unsigned shard, uint8_t plane, uint16_t *ports,
			  unsigned max)
{
	unsigned n = max < MRCD_SPORTS_PER_PLANE ? max : MRCD_SPORTS_PER_PLANE;

	(void)io;
	for (unsigned i = 0; i < n; i++)
		ports[i] = shard_sport(shard, plane, i);
	return n;
}

static int op_keep_doorbell(void *io, unsigned client, unsigned i)
{
	(void)io, (void)client;
	return i == 0 ? 0 : -EBADF;
}

char world_channel_fd[1];

/* No completion channels; an rdma_cm event channel is a log of its records. */
static int op_keep_channel(void *io, unsigned i, int *channel)
{
	struct host *h = io;

	if (i != 0 || h->req_desc != world_channel_fd)
		return -EBADF;
	if (h->n_chan == CM_CHANNELS)
		return -EMFILE;
	memset(&h->chan[h->n_chan], 0, sizeof(h->chan[0]));
	*channel = (int)h->n_chan++;
	return 0;
}

static int op_record(void *io, int channel, const void *data, size_t len)
{
	struct host *h = io;
	struct cm_channel_log *log = &h->chan[channel];

	ck_assert_uint_lt((unsigned)channel, h->n_chan);
	ck_assert_uint_eq(len, sizeof(log->ev[0]));
	if (log->gone)
		return -1;
	if (log->deaf || log->n == CM_EVENTS)
		return 0;
	memcpy(&log->ev[log->n++], data, len);
	return 1;
}

/* Descriptor 0 of a registration is the client's memory itself: shared, as a memfd is. */
static int op_map_region(void *io, const struct mrc_ctl_mr_segment *seg, unsigned n,
			 struct mrcd_region_map *out)
{
	struct host *h = io;

	if (n != 1 || !h->req_desc)
		return -EINVAL;
	out->base = (uint8_t *)h->req_desc + seg[0].fd_offset;
	out->len = seg[0].length;
	out->page_map = false;
	h->regions_mapped++;
	return 0;
}

static int op_new_shared_memory(void *io, size_t bytes, void **mem)
{
	struct host *h = io;
	size_t rounded = (bytes + 4095) & ~(size_t)4095;

	if (h->n_shm == MAX_SHM || h->n_reply == 2)
		return -ENOMEM;
	*mem = aligned_alloc(4096, rounded);
	if (!*mem)
		return -ENOMEM;
	memset(*mem, 0, rounded);
	h->shm[h->n_shm++] = *mem;
	h->reply_mem[h->n_reply++] = *mem;
	return 0;
}

static int op_new_page_map(void *io, uint64_t bytes)
{
	(void)io, (void)bytes;
	return -EOPNOTSUPP;
}

static void op_unmap(void *io, void *mem, size_t bytes)
{
	struct host *h = io;

	(void)bytes;
	for (unsigned i = 0; i < h->n_shm; i++)
		if (h->shm[i] == mem) {
			free(mem);
			h->shm[i] = h->shm[--h->n_shm];
			return;
		}
	h->regions_unmapped++; /* a region: the client's memory, not ours to free */
}

static bool op_notify(void *io, int channel)
{
	(void)io, (void)channel;
	return true;
}

static void op_close(void *io, int what)
{
	(void)io, (void)what;
}

static void op_close_doorbell(void *io, unsigned client)
{
	(void)io, (void)client;
}

static void op_log(void *io, int priority, const char *line)
{
	struct host *h = io;

	if (getenv("CORE_PAIR_VERBOSE"))
		fprintf(stderr, "%10.6f host %u <%d> %s\n", (double)h->w->now / 1e9, h->index,
			priority, line);
}

static const struct mrcd_core_ops ops = {
	.tx = op_tx,
	.sports = op_sports,
	.keep_doorbell = op_keep_doorbell,
	.keep_channel = op_keep_channel,
	.map_region = op_map_region,
	.new_shared_memory = op_new_shared_memory,
	.new_page_map = op_new_page_map,
	.unmap = op_unmap,
	.notify = op_notify,
	.record = op_record,
	.close_channel = op_close,
	.close_doorbell = op_close_doorbell,
	.log = op_log,
	.event = op_log,
};

/* --- hosts ---------------------------------------------------------------------------- */

void world_host_start(struct world *w, unsigned k)
{
	struct host *h = &w->h[k];
	struct mrcd_core_params p = { .cfg = &h->cfg, .ops = &ops, .io = h, .port = 4791,
				      .page_size = 4096, .now = w->now,
				      .registered_auto = 1ull << 40, .operator_uid = 4242,
				      .n_shards = w->shards };

	p.node_id = h->node_id = world_rnd(w) | 1;
	p.seed[0] = world_rnd(w);
	p.seed[1] = world_rnd(w);
	p.request_seed = world_rnd(w);
	if (w->auth) { /* a key pair of its own at every start, as a new key_file would be */
		struct mrc_auth *a = &h->auth;

		memset(a, 0, sizeof(*a));
		a->mode = w->auth;
		for (unsigned i = 0; i < MRC_AUTH_KEY_LEN / 8; i++) {
			uint64_t r = world_rnd(w);

			memcpy(a->secret_key + 8 * i, &r, 8);
		}
		ck_assert_int_eq(mrc_auth_public_of(a->secret_key, a->public_key), 0);
		a->has_cluster_key = true;
		memset(a->cluster_key, 0x5c, sizeof(a->cluster_key));
		ck_assert_int_eq(mrc_auth_init(a), 0);
		p.auth = a;
	}
	ck_assert_int_eq(mrcd_core_init(&h->core, &p), 0);
	h->up = true;
}

static void host_init(struct world *w, unsigned k)
{
	struct host *h = &w->h[k];
	char err[256], line[64];

	h->w = w;
	h->index = k;
	mrcd_config_default(&h->cfg);
	for (unsigned p = 0; p < PLANES; p++) {
		snprintf(line, sizeof(line), "%u veth%u 198.18.%u.%u", p, p, p, k + 1);
		ck_assert_msg(mrcd_config_set(&h->cfg, "plane", line, err, sizeof(err)) == 0, "%s",
			      err);
	}
	world_host_start(w, k);
}

/* The daemon stops as a crash would: no goodbyes, its clients gone with it. */
void world_host_crash(struct world *w, unsigned k)
{
	struct host *h = &w->h[k];

	h->up = false; /* what its end would still send never leaves */
	mrcd_core_fini(&h->core);
	h->cl.open = false;
	h->n_chan = 0;
	h->regions_mapped = h->regions_unmapped = 0; /* the dead daemon's */
	while (h->n_shm)
		free(h->shm[--h->n_shm]);
}

int world_request(struct host *h, uint16_t type, const void *payload, uint32_t len,
		   void *desc, void *reply, size_t cap)
{
	struct mrc_ctl_hdr hdr = { MRC_CTL_MAGIC, MRC_CTL_VERSION, type, len, 0,
				   (uint32_t)++h->w->seq, 0 };
	uint8_t out[4096];
	size_t got = 0;
	int status;

	h->req_desc = desc;
	h->n_reply = 0;
	status = mrcd_core_request(&h->core, (unsigned)h->cl.slot, &hdr, payload, desc ? 1 : 0,
				   out, sizeof(out), &got, h->w->now);
	if (reply)
		memcpy(reply, out, got < cap ? got : cap);
	h->req_desc = NULL;
	return status;
}

void world_attach_ring(struct mrc_ring *r, void *mem, uint32_t entries, uint16_t kind)
{
	size_t bytes = MRC_RING_BYTES((size_t)entries, mrc_ring_entry_size(kind));

	/* the client produces into its work queues and consumes its CQ */
	ck_assert_int_eq(mrc_ring_attach(r, mem, bytes, kind, kind != MRC_RING_CQ), 0);
}

/* HELLO, one region, one CQ, QPS QPs. */
static void client_open(struct host *h, uint64_t seed)
{
	struct client *cl = &h->cl;
	struct mrc_ctl_hello hello = { .abi = MRC_CTL_CLIENT_ABI };
	struct {
		struct mrc_ctl_reg_mr r;
		struct mrc_ctl_mr_segment s;
	} reg = { { 0, REGION, 0, MRC_CTL_ACCESS_ALL, 1, 1, 0 }, { 0, REGION } };
	struct mrc_ctl_create_cq ccq = { 256, 0 };
	struct mrc_ctl_cq cq;
	int dummy_eventfd = 1;

	cl->slot = mrcd_core_client_open(&h->core, 1000 + (int)h->index, 0, h->w->now);
	ck_assert_int_ge(cl->slot, 0);
	cl->open = true;
	ck_assert_int_eq(world_request(h, MRC_CTL_HELLO, &hello, sizeof(hello), &dummy_eventfd, NULL, 0),
			 0);
	ck_assert_uint_eq(h->n_reply, 1);
	cl->doorbells = h->reply_mem[0];
	ck_assert_uint_eq(cl->doorbells->magic, MRC_DOORBELL_MAGIC);
	if (!cl->mem) {
		cl->mem = aligned_alloc(4096, REGION);
		cl->original = malloc(REGION);
		ck_assert(cl->mem && cl->original);
	}
	fill_pattern(cl->original, REGION, seed);
	memcpy(cl->mem, cl->original, REGION);
	reg.r.iova = (uintptr_t)cl->mem;
	ck_assert_int_eq(world_request(h, MRC_CTL_REG_MR, &reg, sizeof(reg), cl->mem, &cl->keys,
				 sizeof(cl->keys)),
			 0);
	ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_CQ, &ccq, sizeof(ccq), NULL, &cq, sizeof(cq)),
			 0);
	cl->cq_handle = cq.handle;
	world_attach_ring(&cl->cq, h->reply_mem[0], cq.entries, MRC_RING_CQ);
	for (unsigned q = 0; q < QPS; q++) {
		struct mrc_ctl_create_qp cqp = { cq.handle, cq.handle, WRS, WRS, 0, 1, 0, 0 };
		struct mrc_ctl_qp_created rep;
		struct client_qp *x = &cl->qp[q];

		memset(x, 0, sizeof(*x));
		ck_assert_int_eq(world_request(h, MRC_CTL_CREATE_QP, &cqp, sizeof(cqp), NULL, &rep,
					 sizeof(rep)),
				 0);
		ck_assert_uint_eq(h->n_reply, 2);
		x->qpn = rep.qp_num;
		x->bit = rep.doorbell_bit % MRC_DOORBELL_BITS;
		world_attach_ring(&x->sq, h->reply_mem[0], rep.sq_entries, MRC_RING_SQ);
		world_attach_ring(&x->rq, h->reply_mem[1], rep.rq_entries, MRC_RING_RQ);
	}
}

int world_create_rc_qp(struct host *h, uint32_t cq, uint32_t *qpn)
{
	struct mrc_ctl_create_qp c = { .send_cq = cq, .recv_cq = cq, .max_send_wr = 4,
				       .max_recv_wr = 4, .pd = 1, .type = MRC_CTL_QPT_RC };
	struct mrc_ctl_qp_created rep;
	int err = world_request(h, MRC_CTL_CREATE_QP, &c, sizeof(c), NULL, &rep, sizeof(rep));

	if (!err)
		*qpn = rep.qp_num;
	return err;
}

void world_client_close(struct host *h)
{
	if (!h->cl.open)
		return;
	mrcd_core_client_close(&h->core, (unsigned)h->cl.slot, h->w->now);
	h->cl.open = false;
}

/* RTR to the peer's QP through its plane-0 address, then RTS. */
static void client_connect(struct host *h, const struct host *peer)
{
	for (unsigned q = 0; q < QPS; q++) {
		struct mrc_ctl_connect_qp c = {
			.qp_num = h->cl.qp[q].qpn, .dest_qp_num = peer->cl.qp[q].qpn,
			.access = MRC_CTL_ACCESS_REMOTE_WRITE | MRC_CTL_ACCESS_REMOTE_READ,
			.min_rnr_timer = 1, .max_dest_rd_atomic = 4
		};
		struct mrc_ctl_ready_qp r = { .qp_num = h->cl.qp[q].qpn, .retry_cnt = 7,
					      .rnr_retry = 7, .max_rd_atomic = 4, .timeout = 12 };

		memcpy(c.dgid, peer->cfg.planes[0].addr.addr, 16);
		ck_assert_int_eq(world_request(h, MRC_CTL_CONNECT_QP, &c, sizeof(c), NULL, NULL, 0), 0);
		ck_assert_int_eq(world_request(h, MRC_CTL_READY_QP, &r, sizeof(r), NULL, NULL, 0), 0);
	}
}

/* As the library does after producing: the doorbell only when the daemon asked for it. */
void world_ring(struct host *h, struct client_qp *x, struct mrc_ring *r)
{
	if (!mrc_ring_doorbell_wanted(r))
		return;
	h->w->doorbells[h->index][r == &x->rq]++;
	__atomic_fetch_or(&h->cl.doorbells->rung[x->bit / 64], 1ull << (x->bit % 64),
			  __ATOMIC_RELEASE);
	for (unsigned s = 0; s < h->core.n_shards; s++) /* each worker watches the eventfd */
		mrcd_core_doorbell(&h->core, s, (unsigned)h->cl.slot, h->w->now);
}

bool world_uses_rq(uint8_t opcode)
{
	return opcode == MRC_SQ_SEND || opcode == MRC_SQ_SEND_IMM || opcode == MRC_SQ_WRITE_IMM;
}

uint64_t world_slot_addr(const struct client *cl, unsigned q, unsigned i)
{
	return (uintptr_t)cl->mem + (uint64_t)(q * WRS + i) * SLOT;
}

/* B's receives, in the order A's SENDs and WRITE_IMMs will consume them; then A's work. */
void world_post_everything(struct world *w)
{
	struct host *a = &w->h[0], *b = &w->h[1];

	for (unsigned q = 0; q < QPS; q++) {
		struct client_qp *ra = &a->cl.qp[q], *rb = &b->cl.qp[q];

		for (unsigned i = 0; i < WRS; i++) {
			const struct wr_plan *p = &w->plan[q][i];
			struct mrc_rq_entry re = { .wr_id = (uint64_t)q << 16 | i, .num_sge = 1 };
			struct mrc_sq_entry se = { .wr_id = (uint64_t)q << 16 | i,
						   .opcode = p->opcode,
						   .flags = MRC_SQ_F_SIGNALED, .num_sge = 1,
						   .imm = p->imm };

			if (world_uses_rq(p->opcode)) {
				re.sge[0] = (struct mrc_shm_sge){ world_slot_addr(&b->cl, q, i), SLOT,
								  b->cl.keys.lkey };
				ck_assert_int_eq(mrc_ring_produce(&rb->rq, &re), 0);
			}
			se.sge[0] = (struct mrc_shm_sge){ world_slot_addr(&a->cl, q, i), p->len,
							  a->cl.keys.lkey };
			if (p->opcode != MRC_SQ_SEND && p->opcode != MRC_SQ_SEND_IMM) {
				se.rkey = w->target_rkey ? w->target_rkey : b->cl.keys.rkey;
				se.raddr = world_slot_addr(&b->cl, q, i);
			}
			ck_assert_int_eq(mrc_ring_produce(&ra->sq, &se), 0);
		}
		world_ring(b, rb, &rb->rq);
		world_ring(a, ra, &ra->sq);
	}
}

/* Completions as they come: in order per QP, the receive side's lengths and immediates. */
static void poll_cq(struct world *w, struct host *h, bool expect_success)
{
	struct client *cl = &h->cl;
	struct mrc_cq_entry e;

	while (cl->open && mrc_ring_consume(&cl->cq, &e) == 1) {
		unsigned q = (unsigned)(e.wr_id >> 16), i = (unsigned)(e.wr_id & 0xffff);
		const struct wr_plan *p;
		struct client_qp *x;

		ck_assert_uint_lt(q, QPS);
		ck_assert_uint_lt(i, WRS);
		x = &cl->qp[q];
		p = &w->plan[q][i];
		ck_assert_uint_eq(e.qp_num, x->qpn);
		if (expect_success)
			ck_assert_msg(e.status == MRC_CQ_SUCCESS, "host %u QP %u wr %u: status %u",
				      h->index, q, i, e.status);
		/* A posts only sends, B only receives (an error's opcode means nothing, as in
		 * verbs) */
		if (h->index == 1) {
			if (e.status == MRC_CQ_SUCCESS)
				ck_assert(e.opcode == MRC_CQ_RECV ||
					  e.opcode == MRC_CQ_RECV_RDMA_WITH_IMM);
			x->received++;
			x->failed += e.status != MRC_CQ_SUCCESS;
			if (e.status == MRC_CQ_SUCCESS) {
				ck_assert(world_uses_rq(p->opcode));
				ck_assert_uint_eq(e.byte_len, p->len);
				if (p->opcode != MRC_SQ_SEND)
					ck_assert_uint_eq(e.imm, p->imm);
			}
			continue;
		}
		/* reliable connection: a QP's requests complete in the order they were posted */
		ck_assert_uint_eq(i, x->completed);
		x->completed++;
		x->failed += e.status != MRC_CQ_SUCCESS;
		if (e.status == MRC_CQ_SUCCESS)
			ck_assert_uint_eq(e.opcode, mrc_sq_cq_opcode(p->opcode));
	}
}

/* --- time ----------------------------------------------------------------------------- */

void world_pump_host(struct host *h)
{
	/* as the loop does, connections that never spoke go first; the world's clients speak at
	 * once, so none does (the call also takes the ones that spoke off the queue) */
	ck_assert_int_eq(mrcd_core_silent_client(&h->core, h->w->now), -1);
	/* as the loop does: pump, and before sleeping let the core turn doorbells back on;
	 * work that arrived meanwhile means another pump */
	for (unsigned turns = 0; turns < 1000; turns++) {
		bool idle = true;

		/* as the daemon's control thread: only when its work is due */
		if (mrcd_core_control_timeout(&h->core) <= h->w->now)
			mrcd_core_control_pump(&h->core, h->w->now);
		for (unsigned s = 0; s < h->core.n_shards; s++)
			mrcd_core_pump(&h->core, s, h->w->now);
		for (unsigned s = 0; s < h->core.n_shards; s++)
			idle &= mrcd_core_idle(&h->core, s);
		if (idle)
			return;
	}
	ck_abort_msg("host %u: the core never became idle", h->index);
}

bool world_all_sent_completed(struct world *w)
{
	for (unsigned q = 0; q < QPS; q++)
		if (w->h[0].cl.qp[q].completed < WRS)
			return false;
	return true;
}

static bool nothing_left(struct world *w)
{
	for (unsigned k = 0; k < 2; k++) {
		const struct mrcd_tables *t = &w->h[k].core.t;

		if (w->h[k].up && (world_lingering(&w->h[k]) || t->n_qps || t->n_retired))
			return false;
	}
	return true;
}

/* Virtual time runs until done(w) or for `limit`; `at` / `what` happens once on the way. */
void world_run(struct world *w, uint64_t limit, bool (*done)(struct world *), uint64_t at,
		void (*what)(struct world *))
{
	uint64_t end = w->now + limit;

	while (w->now < end && !(done && done(w))) {
		uint64_t next = end;

		if (what && w->now >= at) {
			w->struck_mid_transfer = !world_all_sent_completed(w);
			what(w);
			w->disaster_done = true;
			what = NULL;
		}
		while (w->n_heap && w->heap[0]->at <= w->now) {
			struct packet *p = heap_pop(w);

			if (w->h[p->to].up) {
				struct mrcd_core *c = &w->h[p->to].core;

				/* as io's socket selector does, or hands it over */
				ck_assert(mrcd_core_rx(c, mrcd_core_shard_of(c, &p->g), &p->g,
						       w->now));
				w->delivered++;
			}
			free(p);
		}
		for (unsigned k = 0; k < 2; k++)
			if (w->h[k].up)
				world_pump_host(&w->h[k]);
		for (unsigned k = 0; k < 2; k++)
			poll_cq(w, &w->h[k], w->expect_success);
		if (done && done(w))
			break;
		for (unsigned k = 0; k < 2; k++)
			if (w->h[k].up) {
				struct mrcd_core *c = &w->h[k].core;
				uint64_t t = mrcd_core_control_timeout(c);

				next = t < next ? t : next;
				for (unsigned s = 0; s < c->n_shards; s++) {
					t = mrcd_core_next_timeout(c, s);
					next = t < next ? t : next;
				}
			}
		if (w->n_heap && w->heap[0]->at < next)
			next = w->heap[0]->at;
		if (what && at < next)
			next = at;
		/* a core that wants the CPU again at once gets it a microsecond later */
		w->now = next > w->now ? next : w->now + US;
	}
}

void world_init(struct world *w, uint64_t seed)
{
	world_init_auth(w, seed, MRC_AUTH_OFF);
}

unsigned world_lingering(const struct host *h)
{
	unsigned n = 0;

	for (unsigned s = 0; s < h->core.n_shards; s++)
		n += h->core.shard[s].lingering.n;
	return n;
}

void world_init_auth(struct world *w, uint64_t seed, enum mrc_auth_mode auth)
{
	world_init_shards(w, seed, auth, 1);
}

void world_init_shards(struct world *w, uint64_t seed, enum mrc_auth_mode auth, unsigned shards)
{
	static const uint8_t opcodes[] = { MRC_SQ_WRITE, MRC_SQ_WRITE_IMM, MRC_SQ_SEND,
					   MRC_SQ_SEND_IMM, MRC_SQ_READ };

	memset(w, 0, sizeof(*w));
	w->auth = auth;
	w->shards = shards;
	w->rng = seed | 1;
	w->now = SEC;
	for (unsigned q = 0; q < QPS; q++)
		for (unsigned i = 0; i < WRS; i++) {
			struct wr_plan *p = &w->plan[q][i];

			p->opcode = opcodes[world_rnd(w) % sizeof(opcodes)];
			/* from one byte to a whole slot: one packet or several */
			p->len = world_rnd(w) % 4 == 0 ? 1 + (uint32_t)(world_rnd(w) % 64)
						 : 1 + (uint32_t)(world_rnd(w) % SLOT);
			p->imm = (uint32_t)world_rnd(w);
		}
	host_init(w, 0);
	host_init(w, 1);
	client_open(&w->h[0], seed + 1);
	client_open(&w->h[1], seed + 2);
	client_connect(&w->h[0], &w->h[1]);
	client_connect(&w->h[1], &w->h[0]);
}

void world_free(struct world *w)
{
	for (unsigned k = 0; k < 2; k++) {
		if (w->h[k].up)
			world_host_crash(w, k);
		free(w->h[k].cl.mem);
		free(w->h[k].cl.original);
	}
	while (w->n_heap)
		free(heap_pop(w));
	free(w->heap);
}

/* Every byte where it belongs: A's sends and writes in B's slots, B's bytes in A's read
 * slots, and everything else untouched on both sides. */
void world_check_bytes(struct world *w)
{
	const struct client *a = &w->h[0].cl, *b = &w->h[1].cl;

	for (unsigned q = 0; q < QPS; q++)
		for (unsigned i = 0; i < WRS; i++) {
			const struct wr_plan *p = &w->plan[q][i];
			size_t off = (size_t)(q * WRS + i) * SLOT;
			bool read = p->opcode == MRC_SQ_READ;

			if (read) {
				ck_assert_msg(!memcmp(a->mem + off, b->original + off, p->len),
					      "QP %u wr %u: READ of %u bytes", q, i, p->len);
				ck_assert(!memcmp(b->mem + off, b->original + off, SLOT));
			} else {
				ck_assert_msg(!memcmp(b->mem + off, a->original + off, p->len),
					      "QP %u wr %u: opcode %u of %u bytes", q, i,
					      p->opcode, p->len);
				ck_assert(!memcmp(b->mem + off + p->len,
						  b->original + off + p->len, SLOT - p->len));
				ck_assert(!memcmp(a->mem + off, a->original + off, SLOT));
			}
		}
}

/* Both clients close; their QPs linger until their peers are quiet, then nothing is left. */
void world_check_reclaimed(struct world *w)
{
	world_client_close(&w->h[0]);
	world_client_close(&w->h[1]);
	world_run(w, 30 * SEC, nothing_left, 0, NULL);
	for (unsigned k = 0; k < 2; k++) {
		const struct host *h = &w->h[k];
		const struct mrcd_tables *t = &h->core.t;

		if (!h->up)
			continue;
		ck_assert_uint_eq(t->n_qps, 0);
		ck_assert_uint_eq(t->n_cqs, 0);
		ck_assert_uint_eq(t->n_mrs, 0);
		ck_assert_uint_eq(t->n_mws, 0);
		ck_assert_uint_eq(world_lingering(h), 0);
		for (unsigned s = 0; s < h->core.n_shards; s++) {
			ck_assert_uint_eq(mrcd_sched_n_ready(&h->core.shard[s].sched), 0);
			ck_assert_uint_eq(mrcd_sched_next_deadline(&h->core.shard[s].sched),
					  UINT64_MAX);
		}
		ck_assert_uint_eq(h->n_shm, 0); /* rings and doorbell pages all unmapped */
		ck_assert_uint_eq(h->regions_unmapped, h->regions_mapped);
		ck_assert_uint_eq(t->mapped_bytes, 0);
	}
}
