/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection manager's tables (cm.h): ids by handle, by port and by the peer's
 * communication id; one timer per id in a binary heap; event channels and the events their
 * readers have not taken yet. No protocol here: cm.c decides, this keeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cm.h"
#include "core/internal.h"

int cm_table_init(struct mrcd_cm *m)
{
	memset(m, 0, sizeof(*m));
	m->ids = calloc(MRCD_MAX_CM_IDS, sizeof(*m->ids));
	m->channels = calloc(MRCD_MAX_CM_CHANNELS, sizeof(*m->channels));
	if (!m->ids || !m->channels) {
		free(m->ids);
		free(m->channels);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < MRCD_MAX_CM_IDS; i++)
		m->ids[i].owner = -1;
	for (unsigned i = 0; i < MRCD_MAX_CM_CHANNELS; i++)
		m->channels[i].owner = -1;
	for (unsigned i = 0; i < MRCD_CM_PORT_BUCKETS; i++)
		m->port_hash[i] = -1;
	for (unsigned i = 0; i < MRCD_CM_CONN_BUCKETS; i++)
		m->conn_hash[i] = -1;
	return 0;
}

/* --- ids ----------------------------------------------------------------------------------- */

static unsigned slot_of(uint32_t handle)
{
	return handle & (MRCD_MAX_CM_IDS - 1);
}

struct mrcd_cm_id *cm_id_new(struct mrcd_core *c, int owner, int channel, uint8_t ps)
{
	struct mrcd_cm *m = c->cm;
	const unsigned gens = 1u << (32 - MRCD_CM_SLOT_BITS);

	if (m->n_ids == MRCD_MAX_CM_IDS)
		return NULL;
	/* a random free slot and generation: no communication id tells another */
	for (unsigned start = (unsigned)mrc_prf_next(&c->t.rng), k = 0; k < MRCD_MAX_CM_IDS; k++) {
		unsigned slot = (start + k) % MRCD_MAX_CM_IDS;
		struct mrcd_cm_id *id = &m->ids[slot];
		unsigned gen;

		if (id->owner != -1)
			continue;
		do
			gen = (unsigned)mrc_prf_next(&c->t.rng) % gens;
		while (!gen || gen == m->gen[slot]);
		m->gen[slot] = gen;
		memset(id, 0, sizeof(*id));
		id->owner = owner;
		id->handle = gen << MRCD_CM_SLOT_BITS | slot;
		id->channel = -1;
		id->listener = -1;
		id->port_next = id->conn_next = -1;
		id->ps = ps;
		id->state = MRC_CM_IDLE;
		cm_id_set_channel(c, id, channel);
		m->n_ids++;
		if (owner >= 0)
			m->client_ids[owner]++;
		return id;
	}
	return NULL;
}

struct mrcd_cm_id *cm_id_by_handle(struct mrcd_cm *m, uint32_t handle)
{
	struct mrcd_cm_id *id = &m->ids[slot_of(handle)];

	return id->owner != -1 && id->handle == handle ? id : NULL;
}

struct mrcd_cm_id *cm_id_of(struct mrcd_cm *m, int owner, uint32_t handle)
{
	struct mrcd_cm_id *id = cm_id_by_handle(m, handle);

	return id && id->owner == owner ? id : NULL;
}

void cm_id_set_channel(struct mrcd_core *c, struct mrcd_cm_id *id, int channel)
{
	struct mrcd_cm *m = c->cm;

	if (id->channel >= 0)
		m->channels[id->channel].n_ids--;
	id->channel = channel;
	if (channel >= 0)
		m->channels[channel].n_ids++;
}

void cm_id_orphan(struct mrcd_core *c, struct mrcd_cm_id *id)
{
	if (id->owner >= 0)
		c->cm->client_ids[id->owner]--;
	cm_id_set_channel(c, id, -1);
	id->owner = MRCD_CM_DAEMON;
}

static unsigned port_bucket(uint8_t ps, uint16_t port)
{
	return ((unsigned)port * 0x9e37u ^ ps) % MRCD_CM_PORT_BUCKETS;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static unsigned conn_bucket(uint64_t node, uint32_t remote_id)
{
	return (unsigned)(mix64(node ^ (uint64_t)remote_id << 17) % MRCD_CM_CONN_BUCKETS);
}

/* Unlinks slot from the chain at *head. */
static void chain_remove(struct mrcd_cm *m, int *head, unsigned slot, bool port)
{
	for (int *at = head; *at >= 0;) {
		struct mrcd_cm_id *e = &m->ids[*at];
		int *next = port ? &e->port_next : &e->conn_next;

		if ((unsigned)*at == slot) {
			*at = *next;
			*next = -1;
			return;
		}
		at = next;
	}
}

void cm_id_free(struct mrcd_core *c, struct mrcd_cm_id *id)
{
	struct mrcd_cm *m = c->cm;
	unsigned slot = slot_of(id->handle);

	if (id->in_port_hash)
		chain_remove(m, &m->port_hash[port_bucket(id->ps, id->local_port)], slot, true);
	if (id->in_conn_hash)
		chain_remove(m, &m->conn_hash[conn_bucket(id->peer_node, id->remote_id)], slot,
			     false);
	if (id->listener >= 0 && m->ids[id->listener].pending)
		m->ids[id->listener].pending--;
	if (id->state == MRC_CM_ROUTING && m->n_routing)
		m->n_routing--;
	/* the requests a listener had are no one's to count */
	if (id->state == MRC_CM_LISTEN)
		for (unsigned i = 0; id->pending && i < MRCD_MAX_CM_IDS; i++)
			if (m->ids[i].owner != -1 && m->ids[i].listener == (int)slot) {
				m->ids[i].listener = -1;
				id->pending--;
			}
	cm_timer_stop(m, id);
	cm_id_set_channel(c, id, -1);
	if (id->owner >= 0)
		m->client_ids[id->owner]--;
	id->owner = -1;
	m->n_ids--;
}

/* --- ports and connections ------------------------------------------------------------------ */

static bool same_addr(const uint8_t a[16], const uint8_t b[16])
{
	return !memcmp(a, b, 16);
}

bool cm_port_taken(struct mrcd_cm *m, uint8_t ps, uint16_t port, const uint8_t addr[16],
		   bool any)
{
	for (int at = m->port_hash[port_bucket(ps, port)]; at >= 0; at = m->ids[at].port_next) {
		const struct mrcd_cm_id *e = &m->ids[at];

		if (e->ps == ps && e->local_port == port &&
		    (any || e->any_addr || same_addr(e->local_addr, addr)))
			return true;
	}
	return false;
}

void cm_port_insert(struct mrcd_cm *m, struct mrcd_cm_id *id)
{
	int *head = &m->port_hash[port_bucket(id->ps, id->local_port)];

	id->port_next = *head;
	*head = (int)slot_of(id->handle);
	id->in_port_hash = true;
}

struct mrcd_cm_id *cm_listener(struct mrcd_cm *m, uint8_t ps, uint16_t port,
			       const uint8_t addr[16])
{
	struct mrcd_cm_id *any = NULL;

	for (int at = m->port_hash[port_bucket(ps, port)]; at >= 0; at = m->ids[at].port_next) {
		struct mrcd_cm_id *e = &m->ids[at];

		if (e->ps != ps || e->local_port != port || e->state != MRC_CM_LISTEN)
			continue;
		if (!e->any_addr && same_addr(e->local_addr, addr))
			return e; /* the address's own listener before one on every address */
		if (e->any_addr)
			any = e;
	}
	return any;
}

void cm_conn_insert(struct mrcd_cm *m, struct mrcd_cm_id *id)
{
	int *head = &m->conn_hash[conn_bucket(id->peer_node, id->remote_id)];

	id->conn_next = *head;
	*head = (int)slot_of(id->handle);
	id->in_conn_hash = true;
}

struct mrcd_cm_id *cm_conn_find(struct mrcd_cm *m, uint64_t node, uint32_t remote_id)
{
	for (int at = m->conn_hash[conn_bucket(node, remote_id)]; at >= 0;
	     at = m->ids[at].conn_next) {
		struct mrcd_cm_id *e = &m->ids[at];

		if (e->peer_node == node && e->remote_id == remote_id)
			return e;
	}
	return NULL;
}

/* --- timers: a binary heap of slots by deadline, each id knowing its place ------------------ */

static bool earlier(const struct mrcd_cm *m, unsigned a, unsigned b)
{
	return m->ids[m->heap[a]].deadline < m->ids[m->heap[b]].deadline;
}

static void heap_swap(struct mrcd_cm *m, unsigned a, unsigned b)
{
	uint16_t t = m->heap[a];

	m->heap[a] = m->heap[b];
	m->heap[b] = t;
	m->ids[m->heap[a]].heap_at = a;
	m->ids[m->heap[b]].heap_at = b;
}

static void heap_fix(struct mrcd_cm *m, unsigned at)
{
	while (at && earlier(m, at, (at - 1) / 2)) {
		heap_swap(m, at, (at - 1) / 2);
		at = (at - 1) / 2;
	}
	for (;;) {
		unsigned l = 2 * at + 1, r = l + 1, least = at;

		if (l < m->n_heap && earlier(m, l, least))
			least = l;
		if (r < m->n_heap && earlier(m, r, least))
			least = r;
		if (least == at)
			return;
		heap_swap(m, at, least);
		at = least;
	}
}

void cm_timer_stop(struct mrcd_cm *m, struct mrcd_cm_id *id)
{
	unsigned at = id->heap_at;

	if (!id->deadline)
		return;
	id->deadline = 0;
	m->n_heap--;
	if (at != m->n_heap) {
		heap_swap(m, at, m->n_heap);
		heap_fix(m, at);
	}
}

void cm_timer_set(struct mrcd_cm *m, struct mrcd_cm_id *id, uint64_t deadline)
{
	cm_timer_stop(m, id);
	id->deadline = deadline ? deadline : 1;
	id->heap_at = m->n_heap;
	m->heap[m->n_heap++] = (uint16_t)slot_of(id->handle);
	heap_fix(m, id->heap_at);
}

struct mrcd_cm_id *cm_timer_due(struct mrcd_cm *m, uint64_t now)
{
	struct mrcd_cm_id *id;

	if (!m->n_heap || m->ids[m->heap[0]].deadline > now)
		return NULL;
	id = &m->ids[m->heap[0]];
	cm_timer_stop(m, id);
	return id;
}

uint64_t cm_timer_next(const struct mrcd_cm *m)
{
	return m->n_heap ? m->ids[m->heap[0]].deadline : UINT64_MAX;
}

/* --- channels and their events -------------------------------------------------------------- */

int cm_channel_new(struct mrcd_core *c, int owner, int fd, uint32_t *handle)
{
	struct mrcd_cm *m = c->cm;

	for (unsigned i = 0; i < MRCD_MAX_CM_CHANNELS; i++) {
		struct mrcd_cm_channel *ch = &m->channels[i];

		if (ch->owner != -1)
			continue;
		memset(ch, 0, sizeof(*ch));
		ch->owner = owner;
		ch->fd = fd;
		ch->handle = (uint32_t)(mrc_prf_next(&c->t.rng) & 0xfffff) << 12 | i;
		m->n_channels++;
		m->client_channels[owner]++;
		*handle = ch->handle;
		return 0;
	}
	return -ENOSPC;
}

struct mrcd_cm_channel *cm_channel_of(struct mrcd_cm *m, int owner, uint32_t handle)
{
	struct mrcd_cm_channel *ch = &m->channels[handle & (MRCD_MAX_CM_CHANNELS - 1)];

	return ch->owner == owner && ch->handle == handle ? ch : NULL;
}

/* What the channel holds goes unread. */
static void drop_pending(struct mrcd_cm *m, struct mrcd_cm_channel *ch)
{
	while (ch->head) {
		struct mrcd_cm_pending *p = ch->head;

		ch->head = p->next;
		free(p);
	}
	ch->tail = NULL;
	m->client_pending[ch->owner] -= (uint16_t)ch->n_pending;
	ch->n_pending = 0;
}

void cm_channel_free(struct mrcd_core *c, struct mrcd_cm_channel *ch)
{
	struct mrcd_cm *m = c->cm;

	drop_pending(m, ch);
	m->client_channels[ch->owner]--;
	if (ch->blocked_listed)
		for (unsigned i = 0; i < m->n_blocked; i++)
			if (&m->channels[m->blocked[i]] == ch) {
				m->blocked[i] = m->blocked[--m->n_blocked];
				break;
			}
	c->ops->close_channel(c->io, ch->fd);
	memset(ch, 0, sizeof(*ch));
	ch->owner = -1;
	m->n_channels--;
}

/* What the channel holds, offered in order until it takes no more; a reader gone takes
 * nothing more, and what it held is dropped. */
static void flush(struct mrcd_core *c, struct mrcd_cm_channel *ch)
{
	while (ch->head) {
		int took = c->ops->record(c->io, ch->fd, &ch->head->ev, sizeof(ch->head->ev));
		struct mrcd_cm_pending *p = ch->head;

		if (took < 0) {
			ch->gone = true;
			drop_pending(c->cm, ch);
			return;
		}
		if (!took)
			return;
		ch->head = p->next;
		if (!ch->head)
			ch->tail = NULL;
		ch->n_pending--;
		c->cm->client_pending[ch->owner]--;
		free(p);
	}
}

/* One more event kept on the channel, at its tail. */
static void keep(struct mrcd_cm *m, struct mrcd_cm_channel *ch, struct mrcd_cm_pending *p)
{
	p->next = NULL;
	if (ch->tail)
		ch->tail->next = p;
	else
		ch->head = p;
	ch->tail = p;
	ch->n_pending++;
	m->client_pending[ch->owner]++;
	if (!ch->blocked_listed) {
		ch->blocked_listed = true;
		m->blocked[m->n_blocked++] = (uint16_t)(ch - m->channels);
	}
}

void cm_channel_move_events(struct mrcd_core *c, const struct mrcd_cm_id *id, int from, int to)
{
	struct mrcd_cm *m = c->cm;
	struct mrcd_cm_channel *src = &m->channels[from], *dst = &m->channels[to];
	struct mrcd_cm_pending **at = &src->head, *p;

	if (from == to || dst->gone)
		return;
	src->tail = NULL;
	while ((p = *at)) {
		if (p->ev.id != id->handle) {
			src->tail = p;
			at = &p->next;
			continue;
		}
		*at = p->next;
		src->n_pending--;
		m->client_pending[src->owner]--;
		keep(m, dst, p);
	}
	if (!m->next_flush_ns && dst->head)
		m->next_flush_ns = c->now; /* offered at the next turn */
}

void cm_tell(struct mrcd_core *c, const struct mrcd_cm_id *id, struct mrc_cm_event *ev)
{
	struct mrcd_cm *m = c->cm;
	struct mrcd_cm_channel *ch;
	struct mrcd_cm_pending *p;

	if (id->channel < 0)
		return; /* the daemon's own: its client is gone */
	ch = &m->channels[id->channel];
	if (ch->gone)
		return; /* its reader closed it */
	ev->magic = MRC_CM_EVENT_MAGIC;
	m->stats.events++;
	if (!ch->head) {
		int took = c->ops->record(c->io, ch->fd, ev, sizeof(*ev));

		if (took > 0)
			return;
		if (took < 0) {
			ch->gone = true;
			return;
		}
	}
	p = m->client_pending[ch->owner] < MRCD_CM_CLIENT_MAX_PENDING ? malloc(sizeof(*p)) : NULL;
	if (!p) {
		m->stats.events_dropped++;
		if (c->now >= m->next_drop_log_ns) {
			m->next_drop_log_ns = c->now + 1000000000ull;
			core_log(c, MRCD_WARNING, "client pid %d: its rdma_cm event channels hold %u "
				 "events it does not read: an event for id %u dropped",
				 c->t.client[ch->owner].pid, m->client_pending[ch->owner],
				 id->handle);
		}
		return;
	}
	p->ev = *ev;
	keep(m, ch, p);
	if (!m->next_flush_ns)
		m->next_flush_ns = c->now + MRCD_NOTIFY_RETRY_NS;
}

void cm_flush_blocked(struct mrcd_core *c, uint64_t now)
{
	struct mrcd_cm *m = c->cm;

	if (!m->n_blocked || now < m->next_flush_ns)
		return;
	for (unsigned i = 0; i < m->n_blocked;) {
		struct mrcd_cm_channel *ch = &m->channels[m->blocked[i]];

		flush(c, ch);
		if (ch->head) {
			i++;
			continue;
		}
		ch->blocked_listed = false;
		m->blocked[i] = m->blocked[--m->n_blocked];
	}
	m->next_flush_ns = m->n_blocked ? now + MRCD_NOTIFY_RETRY_NS : 0;
}

uint64_t cm_flush_next(const struct mrcd_cm *m)
{
	return m->n_blocked ? m->next_flush_ns : UINT64_MAX;
}
