/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Worker threads (workers = N): each runs one shard of the core (daemon/core/shard.h) over
 * sockets of its own. Worker 0 is the control thread (loop.c); this file starts the others,
 * runs their loops, stops them between turns while the control thread calls into the core
 * (mrcd_workers_pause), and hands a datagram that reached the wrong worker's socket to the
 * right one through a single-producer ring per pair of workers.
 *
 * With the udp backend every worker has a receiving socket on each plane, all in one
 * SO_REUSEPORT group per plane, and the kernel runs bpf/metaroce_workers.bpf.c to give each
 * datagram to the worker of its QP; only a train the kernel merged (GRO) from datagrams of
 * QPs on two workers, or a kernel without the program, makes a hand-over.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "io/afxdp.h"
#include "io/daemon.h"
#include "log.h"
#include "metaroce_workers.skel.h"

#define RX_BATCH 32
#define RX_TURN_BATCHES 16     /* as loop.c: a flood cannot keep the pump waiting longer */
#define HANDOVER_SLOTS 256     /* datagrams in flight from one worker to another */

struct handover_slot {
	struct mrcd_dgram g; /* data points at bytes */
	uint8_t bytes[MRC_WIRE_MAX_PACKET];
};

/* One sender, one receiver: the sender writes slots and moves head, the receiver tail. */
struct mrcd_handover {
	uint32_t head, tail;
	struct handover_slot slot[HANDOVER_SLOTS];
};

/* --- how many ----------------------------------------------------------------------------- */

unsigned mrcd_workers_wanted(const struct mrcd_config *cfg)
{
	unsigned queues[MRC_MAX_PLANES] = { 0 }, cpus = 1;
	cpu_set_t set;

	if (cfg->workers)
		return cfg->workers;
	if (!sched_getaffinity(0, sizeof(set), &set))
		cpus = (unsigned)CPU_COUNT(&set);
	for (unsigned i = 0; i < cfg->n_planes; i++)
		queues[i] = mrcd_iface_rx_queues(cfg->planes[i].ifname);
	return mrcd_workers_auto(cfg, queues, cpus);
}

/* --- stopping them between turns ---------------------------------------------------------- */

void mrcd_workers_pause(struct mrcd *d)
{
	if (d->pauses++)
		return;
	for (unsigned k = 1; k < d->n_workers; k++) {
		struct mrcd_worker *w = &d->workers[k];

		pthread_mutex_lock(&w->gate);
		__atomic_store_n(&w->pause_wanted, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&w->gate);
	}
	/* each lets go of `run` when its turn ends, or holds it not at all while it sleeps */
	for (unsigned k = 1; k < d->n_workers; k++)
		pthread_mutex_lock(&d->workers[k].run);
}

void mrcd_workers_resume(struct mrcd *d)
{
	if (--d->pauses)
		return;
	for (unsigned k = 1; k < d->n_workers; k++) {
		struct mrcd_worker *w = &d->workers[k];

		pthread_mutex_lock(&w->gate);
		__atomic_store_n(&w->pause_wanted, false, __ATOMIC_RELEASE);
		pthread_cond_signal(&w->resumed);
		pthread_mutex_unlock(&w->gate);
		pthread_mutex_unlock(&w->run);
		/* what the control thread did may be its work now (a QP ready, a new timer) */
		mrcd_worker_wake(w);
	}
}

/* Between turns: the control thread may have the worker's shard until it resumes. */
static void let_control_in(struct mrcd_worker *w)
{
	if (!__atomic_load_n(&w->pause_wanted, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_unlock(&w->run);
	pthread_mutex_lock(&w->gate);
	while (w->pause_wanted)
		pthread_cond_wait(&w->resumed, &w->gate);
	pthread_mutex_unlock(&w->gate);
	pthread_mutex_lock(&w->run);
}

void mrcd_worker_wake(struct mrcd_worker *w)
{
	uint64_t one = 1;

	if (w->wake.fd >= 0 && write(w->wake.fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		mrcd_log(LOG_WARNING, "worker %u: wakeup: %s", w->index, strerror(errno));
}

int mrcd_worker_watch(struct mrcd_worker *w, struct mrcd_watch *watch, bool edge)
{
	struct epoll_event ev = { .events = EPOLLIN | (edge ? EPOLLET : 0u), .data.ptr = watch };

	watch->worker = w->index;
	return epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, watch->fd, &ev);
}

/* --- hand-over ---------------------------------------------------------------------------- */

/* A datagram of shard `to` that reached w: a copy into w's ring to it, or lost (counted).
 * The caller wakes `to` once for the batch. */
static void hand_over(struct mrcd_worker *w, unsigned to, const struct mrcd_dgram *g)
{
	struct mrcd_worker *dest = &w->d->workers[to];
	struct mrcd_handover *h = dest->inbox[w->index];
	struct handover_slot *s;
	uint32_t head;

	if (!h) {
		/* made by its only writer, read by its only reader after the release below */
		h = calloc(1, sizeof(*h));
		if (!h) {
			w->handover_dropped++;
			return;
		}
		__atomic_store_n(&dest->inbox[w->index], h, __ATOMIC_RELEASE);
	}
	head = h->head;
	if (head - __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE) == HANDOVER_SLOTS ||
	    g->len > sizeof(s->bytes)) {
		w->handover_dropped++; /* the transport resends it, as any loss */
		return;
	}
	s = &h->slot[head % HANDOVER_SLOTS];
	memcpy(s->bytes, g->data, g->len);
	s->g = *g;
	s->g.data = s->bytes;
	s->g.cap = sizeof(s->bytes);
	__atomic_store_n(&h->head, head + 1, __ATOMIC_RELEASE);
	w->handed_over++;
}

/*
 * Datagrams into the worker's shard; those another worker must take, handed over. On the
 * control thread a batch with a DISCOVER or rdma_cm datagram in it (which reach QPs of every
 * shard) runs with the other workers stopped, once for the whole batch: a flood of them costs
 * the workers a pause a batch, not one a datagram.
 */
static void take(struct mrcd_worker *w, struct mrcd_dgram *g, unsigned n, bool handed,
		 uint64_t now)
{
	struct mrcd *d = w->d;
	uint64_t woken = 0; /* bit k: worker k has datagrams of this batch to take */
	bool control = false;

	_Static_assert(MRCD_MAX_WORKERS <= 64, "a worker is a bit of woken");
	for (unsigned i = 0; w->index == 0 && d->n_workers > 1 && i < n && !control; i++)
		control = mrcd_core_rx_stops_workers(&g[i]);
	if (control)
		mrcd_workers_pause(d);
	for (unsigned i = 0; i < n; i++) {
		unsigned to;

		if (mrcd_core_rx(&d->core, w->index, &g[i], now) || handed)
			continue;
		to = mrcd_core_shard_of(&d->core, &g[i]);
		hand_over(w, to, &g[i]);
		woken |= 1ull << to;
	}
	if (control)
		mrcd_workers_resume(d);
	if (!woken)
		return;
	/* pairs with mrcd_worker_sleep: it sees the datagrams, or this sees it asleep */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned k = 0; woken; k++, woken >>= 1)
		if ((woken & 1) && __atomic_load_n(&d->workers[k].asleep, __ATOMIC_RELAXED))
			mrcd_worker_wake(&d->workers[k]); /* once a batch, and only if asleep */
}

/* Whether another worker handed w datagrams it has not taken. */
static bool inbox_holds(const struct mrcd_worker *w)
{
	for (unsigned k = 0; k < w->d->n_workers; k++) {
		struct mrcd_handover *h = __atomic_load_n(&w->inbox[k], __ATOMIC_ACQUIRE);

		if (h && __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) != h->tail)
			return true;
	}
	return false;
}

bool mrcd_worker_sleep(struct mrcd_worker *w)
{
	struct mrcd_backend *b = w->backend;

	if (w->d->n_workers > 1) {
		__atomic_store_n(&w->asleep, true, __ATOMIC_SEQ_CST);
		/* pairs with take()'s: it sees the flag, or this sees its datagrams */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (inbox_holds(w)) {
			__atomic_store_n(&w->asleep, false, __ATOMIC_RELAXED);
			return false;
		}
	}
	if (b->ops->arm && !b->ops->arm(b, true)) {
		__atomic_store_n(&w->asleep, false, __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

void mrcd_worker_woke(struct mrcd_worker *w)
{
	if (w->d->n_workers > 1)
		__atomic_store_n(&w->asleep, false, __ATOMIC_RELAXED);
	if (w->backend->ops->arm)
		w->backend->ops->arm(w->backend, false);
}

/* What the other workers handed over, into this worker's shard. */
static unsigned take_handovers(struct mrcd_worker *w, uint64_t now)
{
	unsigned got = 0;

	for (unsigned k = 0; k < w->d->n_workers; k++) {
		struct mrcd_handover *h = __atomic_load_n(&w->inbox[k], __ATOMIC_ACQUIRE);
		uint32_t tail, head;

		if (!h)
			continue;
		tail = h->tail;
		head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
		for (; tail != head; tail++, got++)
			take(w, &h->slot[tail % HANDOVER_SLOTS].g, 1, true, now);
		__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
	}
	return got;
}

unsigned mrcd_worker_receive(struct mrcd_worker *w, uint64_t now, bool *more)
{
	static _Thread_local uint8_t bufs[RX_BATCH][MRC_WIRE_MAX_PACKET + 1];
	struct mrcd *d = w->d;
	struct mrcd_dgram g[RX_BATCH];
	unsigned got = d->n_workers > 1 ? take_handovers(w, now) : 0, batches = 0;
	int n;

	do {
		/* each time: a backend may have pointed them at trains of its own (UDP GRO) */
		for (unsigned i = 0; i < RX_BATCH; i++) {
			g[i].data = bufs[i];
			g[i].cap = sizeof(bufs[i]);
		}
		n = w->backend->ops->rx_batch(w->backend, g, RX_BATCH);
		if (n > 0)
			take(w, g, (unsigned)n, false, now);
		got += n > 0 ? (unsigned)n : 0;
	} while (n > 0 && ++batches < RX_TURN_BATCHES);
	*more = n > 0;
	return got;
}

/* --- a worker's loop ---------------------------------------------------------------------- */

static void backend_ready(struct mrcd *d, struct mrcd_watch *watch, uint32_t events)
{
	struct mrcd_worker *w = &d->workers[watch->worker];

	(void)events;
	w->backend->ops->fd_ready(w->backend, watch->fd);
	w->rx_due = true;
}

static void woken(struct mrcd *d, struct mrcd_watch *watch, uint32_t events)
{
	uint64_t n;

	(void)d, (void)events;
	while (read(watch->fd, &n, sizeof(n)) == sizeof(n))
		;
}

/* One turn: timers, rings and transmit of the shard, then what arrived. */
static bool worker_turn(struct mrcd_worker *w, uint64_t now)
{
	struct mrcd_core *c = &w->d->core;
	bool worked = mrcd_core_pump(c, w->index, now), more;

	/* without readiness the backend takes no system call: only the hand-overs are read */
	worked |= mrcd_worker_receive(w, mrcd_now_ns(), &more) > 0;
	w->rx_due = more;
	/* work for the control thread (a failed rdma_cm connection's QP), rare: it is woken
	 * every turn until it has taken it */
	if (mrcd_core_shard_wants_control(c, w->index))
		mrcd_worker_wake(&w->d->workers[0]);
	return worked;
}

static void *worker_main(void *arg)
{
	struct mrcd_worker *w = arg;
	struct mrcd_core *c = &w->d->core;
	struct mrcd_backend *b = w->backend;

	pthread_mutex_lock(&w->run);
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		struct epoll_event ev[8];
		uint64_t now = mrcd_now_ns(), next;
		struct timespec wait = { 0, 0 };
		bool worked = worker_turn(w, now), sleep;
		int n;

		let_control_in(w);
		next = mrcd_core_next_timeout(c, w->index);
		/* AF_XDP frames the kernel has not taken want kicks; the XDP program's quiet
		 * events no descriptor announces */
		if (b->ops->tx_pending && b->ops->tx_pending(b) && next > now + MRCD_TX_KICK_NS)
			next = now + MRCD_TX_KICK_NS;
		if (w->rx_due || (b->ops->rx_pending && b->ops->rx_pending(b)))
			next = now;
		sleep = next > now && !mrc_spin_idle(&w->spin, now) &&
			mrcd_core_idle(c, w->index) && mrcd_worker_sleep(w);
		if (sleep)
			mrc_spin_sleeping(&w->spin, now);
		if (sleep && next != UINT64_MAX)
			wait = (struct timespec){ (time_t)((next - now) / 1000000000u),
						  (long)((next - now) % 1000000000u) };
		/* asleep, it holds nothing the control thread could want */
		if (sleep)
			pthread_mutex_unlock(&w->run);
		n = epoll_pwait2(w->epoll_fd, ev, 8, sleep && next == UINT64_MAX ? NULL : &wait,
				 NULL);
		if (sleep) {
			pthread_mutex_lock(&w->run);
			mrcd_worker_woke(w);
		}
		if (n < 0 && errno != EINTR) {
			/* its shard would have nobody to run it: the daemon stops */
			mrcd_log(LOG_ERR, "worker %u: epoll_pwait2: %s: stopping", w->index,
				 strerror(errno));
			__atomic_store_n(&w->d->stopping, true, __ATOMIC_RELEASE);
			mrcd_worker_wake(&w->d->workers[0]);
			break;
		}
		let_control_in(w);
		for (int i = 0; i < n; i++) {
			struct mrcd_watch *watch = ev[i].data.ptr;

			watch->ready(w->d, watch, ev[i].events);
		}
		if (worked || n > 0)
			mrc_spin_work(&w->spin, mrcd_now_ns());
	}
	pthread_mutex_unlock(&w->run);
	return NULL;
}

/* --- reports ------------------------------------------------------------------------------ */

void mrcd_worker_report(const struct mrcd *d, unsigned k, struct mrc_ctl_worker *out)
{
	const struct mrcd_worker *w = &d->workers[k];
	struct timespec ts = { 0, 0 };
	uint64_t qps = 0, turns = 0, visits = 0;
	clockid_t clock;

	memset(out, 0, sizeof(*out));
	mrcd_core_shard_load(&d->core, k, &qps, &turns, &visits);
	out->qps = (uint32_t)qps;
	out->busy_turns = turns;
	out->qp_visits = visits;
	out->cpu = d->cfg.n_cpus ? d->cfg.cpus[k % d->cfg.n_cpus] : UINT32_MAX;
	if ((k == 0 || w->running) &&
	    !pthread_getcpuclockid(k ? w->thread : d->control_thread, &clock))
		clock_gettime(clock, &ts);
	out->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	out->handovers = w->handed_over;
}

/* --- starting and stopping ---------------------------------------------------------------- */

/* cpus = LIST: worker k on the k-th CPU of it (round the list again past its end). */
static void pin(const struct mrcd *d, unsigned k, pthread_t thread)
{
	cpu_set_t set;
	unsigned cpu;

	if (!d->cfg.n_cpus)
		return;
	cpu = d->cfg.cpus[k % d->cfg.n_cpus];
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(thread, sizeof(set), &set))
		mrcd_log(LOG_WARNING, "worker %u: cannot run on CPU %u (not in the daemon's "
			 "affinity?): it runs where the system puts it", k, cpu);
}

/*
 * The socket selector on every plane's group: worker k's socket is entry k of the plane's
 * map. Without it (an old kernel) the kernel spreads datagrams by hash, and every one that
 * reaches another worker is handed over: right, but slower. Says which in the log.
 */
static void attach_selectors(struct mrcd *d)
{
	struct metaroce_workers **sel = calloc(MRC_MAX_PLANES, sizeof(*sel));
	unsigned attached = 0;
	int why = 0;

	d->selectors = sel;
	for (unsigned i = 0; sel && i < d->cfg.n_planes; i++) {
		unsigned plane = d->cfg.planes[i].index;
		struct metaroce_workers *s = metaroce_workers__open();
		int prog, map, err = 0;

		if (!s) {
			why = errno;
			break;
		}
		s->rodata->cfg_workers = d->n_workers;
		sel[plane] = s;
		if (metaroce_workers__load(s)) {
			why = errno;
			break;
		}
		prog = bpf_program__fd(s->progs.metaroce_select_worker);
		map = bpf_map__fd(s->maps.mrc_worker_socks);
		for (unsigned k = 0; k < d->n_workers && !err; k++) {
			uint64_t fd = (uint64_t)d->workers[k].backend->udp[plane].rx_fd;
			uint32_t key = k;

			err = bpf_map_update_elem(map, &key, &fd, BPF_ANY);
		}
		if (err || setsockopt(d->backend.udp[plane].rx_fd, SOL_SOCKET,
				      SO_ATTACH_REUSEPORT_EBPF, &prog, sizeof(prog))) {
			why = errno;
			break;
		}
		attached++;
	}
	d->selector_on = attached == d->cfg.n_planes;
	if (d->selector_on && d->backend.fast)
		mrcd_log(LOG_INFO, "%u workers: the XDP program's events go to each QP's worker, "
			 "what it does not place to the AF_XDP socket of its receive queue "
			 "(handed over where that is another worker's), UDP datagrams steered to "
			 "their QP's worker by the kernel", d->n_workers);
	else if (d->selector_on)
		mrcd_log(LOG_INFO, "%u workers, each datagram steered to its QP's by the kernel",
			 d->n_workers);
	else
		mrcd_log(LOG_WARNING, "%u workers without the socket selector (%s%s): the kernel "
			 "spreads datagrams by hash and the workers hand them over", d->n_workers,
			 why ? strerror(why) : "out of memory",
			 why == EPERM ? "; loading it takes CAP_BPF" : "");
}

static int worker_open(struct mrcd *d, struct mrcd_worker *w, unsigned k, char *err,
		       size_t errlen)
{
	static int fds[MRCD_BACKEND_MAX_FDS];
	unsigned n;

	w->d = d;
	w->index = k;
	w->wake = (struct mrcd_watch){ woken, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), 0, k, true };
	pthread_mutex_init(&w->run, NULL);
	pthread_mutex_init(&w->gate, NULL);
	pthread_cond_init(&w->resumed, NULL);
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		w->doorbell[i].fd = -1;
	mrc_spin_init(&w->spin, d->cfg.busy_poll_ns);
	w->backend = k ? &w->own : &d->backend;
	w->epoll_fd = k ? epoll_create1(EPOLL_CLOEXEC) : d->epoll_fd;
	if (w->wake.fd < 0 || w->epoll_fd < 0 || mrcd_worker_watch(w, &w->wake, false)) {
		snprintf(err, errlen, "worker %u: epoll/eventfd: %s", k, strerror(errno));
		return -1;
	}
	if (k == 0)
		return 0; /* its sockets and the rest are the daemon's loop's */
	/* the same port as worker 0's sockets, in the same reuseport groups; worker 0's XDP
	 * program, if any, with this worker's event ring and receive queues */
	w->own = (struct mrcd_backend){ .ops = d->backend.ops, .cfg = &d->cfg,
					.port = d->backend.port, .reuseport = true, .worker = k,
					.n_workers = d->n_workers, .leader = &d->backend };
	if (w->own.ops->open(&w->own, err, errlen))
		return -1;
	n = w->own.ops->poll_fds(&w->own, fds, MRCD_BACKEND_MAX_FDS);
	for (unsigned i = 0; i < n; i++) {
		w->backend_fds[i] = (struct mrcd_watch){ backend_ready, fds[i], i, k, true };
		if (mrcd_worker_watch(w, &w->backend_fds[i], false)) {
			snprintf(err, errlen, "worker %u: epoll: %s", k, strerror(errno));
			return -1;
		}
	}
	w->n_backend_fds = n;
	return 0;
}

void mrcd_workers_xsk(const struct mrcd *d, struct mrcd_xsk_counts *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned k = 0; d->workers && k < d->n_workers; k++) {
		const struct mrcd_xsk_counts *x = &d->workers[k].backend->xsk;

		sum->sockets += x->sockets;
		sum->rx += x->rx;
		sum->tx += x->tx;
		sum->tx_unresolved += x->tx_unresolved;
		sum->rx_bad += x->rx_bad;
	}
}

int mrcd_workers_start(struct mrcd *d, char *err, size_t errlen)
{
	d->workers = calloc(d->n_workers, sizeof(*d->workers));
	if (!d->workers) {
		snprintf(err, errlen, "out of memory for %u workers", d->n_workers);
		return -1;
	}
	for (unsigned k = 0; k < d->n_workers; k++)
		d->workers[k].wake.fd = d->workers[k].epoll_fd = -1;
	for (unsigned k = 0; k < d->n_workers; k++)
		if (worker_open(d, &d->workers[k], k, err, errlen))
			return -1;
	if (d->n_workers > 1)
		attach_selectors(d);
	pin(d, 0, pthread_self());
	for (unsigned k = 1; k < d->n_workers; k++) {
		struct mrcd_worker *w = &d->workers[k];
		int e = pthread_create(&w->thread, NULL, worker_main, w);

		if (e) {
			snprintf(err, errlen, "worker %u: pthread_create: %s", k, strerror(e));
			return -1;
		}
		w->running = true;
		pin(d, k, w->thread);
	}
	return 0;
}

void mrcd_workers_join(struct mrcd *d)
{
	for (unsigned k = 1; d->workers && k < d->n_workers; k++) {
		struct mrcd_worker *w = &d->workers[k];

		if (!w->running)
			continue;
		__atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
		mrcd_worker_wake(w);
		pthread_join(w->thread, NULL);
		w->running = false;
	}
}

void mrcd_workers_close(struct mrcd *d)
{
	struct metaroce_workers **sel = d->selectors;

	mrcd_workers_join(d);
	for (unsigned k = 0; d->workers && k < d->n_workers; k++) {
		struct mrcd_worker *w = &d->workers[k];

		for (unsigned j = 0; j < d->n_workers; j++)
			free(w->inbox[j]);
		if (w->wake.fd >= 0)
			close(w->wake.fd);
		pthread_mutex_destroy(&w->run);
		pthread_mutex_destroy(&w->gate);
		pthread_cond_destroy(&w->resumed);
		if (k == 0)
			continue;
		for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
			if (w->doorbell[i].fd >= 0)
				epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, w->doorbell[i].fd, NULL);
		if (w->epoll_fd >= 0)
			close(w->epoll_fd);
		if (w->own.ops)
			w->own.ops->close(&w->own);
	}
	for (unsigned i = 0; sel && i < MRC_MAX_PLANES; i++)
		metaroce_workers__destroy(sel[i]);
	free(sel);
	d->selectors = NULL;
	free(d->workers);
	d->workers = NULL;
}
